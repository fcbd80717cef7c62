// FA3 forward over a KV cache: the list of specializations (src/sm90/fa3_fwd_kvcache.cuh) and their
// kernel-table rows. Launched by src/kvcache.cpp (flashptx_fwd_kvcache), not by a launch plan of
// src/plan.cpp, which picks the row of the call's head dim and cache form.
//
//   kernel                                 cache        tile (packed rows x keys)  stages
//   fa3_fwd_kvcache_sm90_bf16_d64_paged    pages        64 x 64                    4
//   fa3_fwd_kvcache_sm90_bf16_d64          contiguous   64 x 64                    4
//   fa3_fwd_kvcache_sm90_bf16_d128_paged   pages        64 x 64                    3
//   fa3_fwd_kvcache_sm90_bf16_d128         contiguous   64 x 64                    3
//   fa3_fwd_kvcache_sm90_bf16_d256_paged   pages        64 x 64                    2
//   fa3_fwd_kvcache_sm90_bf16_d256         contiguous   64 x 64                    2
//   fa3_fwd_kvcache_combine_sm90_bf16_d{64,128,256}   the split-KV combine (one CTA per output row;
//                                          one per head dim: the partial rows are d floats apart)
//   fa3_fwd_kvcache_append_sm90_bf16       new keys/values into the cache, rotary on k and q (any d:
//                                          head_dim is a run-time field of KvAppendParams)
// Split-KV is a run-time count (KvcacheParams::num_splits) of the same kernels: the epilogue writes
// the output (one split) or the workspace's partial rows (several).
#include "src/kernels.h"
#include "src/sm90/fa3_fwd_kvcache.cuh"

#define FLASHPTX_FA3_FWD_KVCACHE_KERNEL(name, config)                                                \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::KvLayout<config>::kThreads, 1)         \
      name(const __grid_constant__ flashptx::fa3::KvcacheParams p) {                                \
    flashptx::fa3::kv::fwd_kvcache_body<config>(p);                                                  \
  }

FLASHPTX_FA3_FWD_KVCACHE_KERNEL(fa3_fwd_kvcache_sm90_bf16_d64_paged, flashptx::fa3::kKvD64Paged)
FLASHPTX_FA3_FWD_KVCACHE_KERNEL(fa3_fwd_kvcache_sm90_bf16_d64, flashptx::fa3::kKvD64Contig)
FLASHPTX_FA3_FWD_KVCACHE_KERNEL(fa3_fwd_kvcache_sm90_bf16_d128_paged, flashptx::fa3::kKvD128Paged)
FLASHPTX_FA3_FWD_KVCACHE_KERNEL(fa3_fwd_kvcache_sm90_bf16_d128, flashptx::fa3::kKvD128Contig)
FLASHPTX_FA3_FWD_KVCACHE_KERNEL(fa3_fwd_kvcache_sm90_bf16_d256_paged, flashptx::fa3::kKvD256Paged)
FLASHPTX_FA3_FWD_KVCACHE_KERNEL(fa3_fwd_kvcache_sm90_bf16_d256, flashptx::fa3::kKvD256Contig)

#define FLASHPTX_FA3_FWD_KVCACHE_COMBINE(name, head_dim)                                               \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::kv_combine_threads(head_dim))           \
      name(const __grid_constant__ flashptx::fa3::KvCombineParams p) {                                \
    flashptx::fa3::kv::kv_combine_body<true, head_dim>(p);                                            \
  }

FLASHPTX_FA3_FWD_KVCACHE_COMBINE(fa3_fwd_kvcache_combine_sm90_bf16_d64, 64)
FLASHPTX_FA3_FWD_KVCACHE_COMBINE(fa3_fwd_kvcache_combine_sm90_bf16_d128, 128)
FLASHPTX_FA3_FWD_KVCACHE_COMBINE(fa3_fwd_kvcache_combine_sm90_bf16_d256, 256)

extern "C" __global__ void __launch_bounds__(flashptx::fa3::kKvAppendThreads)
    fa3_fwd_kvcache_append_sm90_bf16(const __grid_constant__ flashptx::fa3::KvAppendParams p) {
  flashptx::fa3::kv::kv_append_body(p);
}

namespace flashptx {

template <fa3::KvConfig C>
inline constexpr KernelSwitch kKvSwitches[] = {{"paged", C.paged}};

template <fa3::KvConfig C>
static KernelEntry kv_row(const char* name, const void* fn) {
  using L = fa3::KvLayout<C>;
  KernelEntry e{name,  Family::kFa3FwdKvcache, FLASHPTX_BF16, C.head_dim, L::kBlockM, C.block_n, C.stages,
                /*consumer_wgs*/ 1, /*pingpong*/ false, /*persistent*/ false, L::kThreads, L::kSmemBytes, fn};
  e.switches = kKvSwitches<C>;
  return e;
}

template <int D>
static KernelEntry combine_row(const char* name, const void* fn) {
  return KernelEntry{name, Family::kFa3FwdKvcacheCombine, FLASHPTX_BF16, D, /*block_m*/ 1, /*block_n*/ 0,
                     /*stages*/ 0, /*consumer_wgs*/ 0, false, false, fa3::kv_combine_threads(D), /*smem*/ 0, fn};
}

std::span<const KernelEntry> fa3_fwd_kvcache_kernels() {
  using namespace fa3;
  static const KernelEntry rows[] = {
      kv_row<kKvD64Paged>("fa3_fwd_kvcache_sm90_bf16_d64_paged",
                          reinterpret_cast<const void*>(&fa3_fwd_kvcache_sm90_bf16_d64_paged)),
      kv_row<kKvD64Contig>("fa3_fwd_kvcache_sm90_bf16_d64", reinterpret_cast<const void*>(&fa3_fwd_kvcache_sm90_bf16_d64)),
      kv_row<kKvD128Paged>("fa3_fwd_kvcache_sm90_bf16_d128_paged",
                           reinterpret_cast<const void*>(&fa3_fwd_kvcache_sm90_bf16_d128_paged)),
      kv_row<kKvD128Contig>("fa3_fwd_kvcache_sm90_bf16_d128",
                            reinterpret_cast<const void*>(&fa3_fwd_kvcache_sm90_bf16_d128)),
      kv_row<kKvD256Paged>("fa3_fwd_kvcache_sm90_bf16_d256_paged",
                           reinterpret_cast<const void*>(&fa3_fwd_kvcache_sm90_bf16_d256_paged)),
      kv_row<kKvD256Contig>("fa3_fwd_kvcache_sm90_bf16_d256",
                            reinterpret_cast<const void*>(&fa3_fwd_kvcache_sm90_bf16_d256)),
      combine_row<64>("fa3_fwd_kvcache_combine_sm90_bf16_d64",
                      reinterpret_cast<const void*>(&fa3_fwd_kvcache_combine_sm90_bf16_d64)),
      combine_row<128>("fa3_fwd_kvcache_combine_sm90_bf16_d128",
                       reinterpret_cast<const void*>(&fa3_fwd_kvcache_combine_sm90_bf16_d128)),
      combine_row<256>("fa3_fwd_kvcache_combine_sm90_bf16_d256",
                       reinterpret_cast<const void*>(&fa3_fwd_kvcache_combine_sm90_bf16_d256)),
      KernelEntry{"fa3_fwd_kvcache_append_sm90_bf16", Family::kFa3FwdKvcacheAppend, FLASHPTX_BF16, 0,
                  /*block_m*/ 1, /*block_n*/ 0, /*stages*/ 0, /*consumer_wgs*/ 0, false, false, kKvAppendThreads,
                  /*smem*/ 0, reinterpret_cast<const void*>(&fa3_fwd_kvcache_append_sm90_bf16)},
  };
  return rows;
}

}  // namespace flashptx
