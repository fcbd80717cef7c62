// FA3 FP8 forward: the list of specializations (every FP8 forward kernel, named once) and the launch
// of flashptx_fwd_fp8 (include/flashptx.h). Rows of the kernel table (src/kernels.h, family
// kFa3FwdFp8) that no launch plan reads: one CTA shape per head dim and descale kind, persistent or
// one CTA per tile by a rule of launch_fp8. Each kernel has its golden
// sass_golden/sm_90a/<name>.sass and hand-written <name>.check.
//
//   kernel                       block_m x block_n  stages (K, raw V, Vt)  smem (bytes)  registers (producer/consumer)
//   fa3_fwd_fp8_sm90_d64         128 x 128          2                      66,672        56 / 224
//   fa3_fwd_fp8_sm90_d128        128 x 128          2                      132,208       56 / 224
//   fa3_fwd_fp8_sm90_d256        128 x 64           2                      164,976       56 / 224
//   fa3_fwd_fp8_sm90_d64_p, _d128_p, _d256_p: the same, the consumers looping over tiles (persistent)
//   fa3_fwd_fp8_sm90_d64_paired, _d128_paired, _d256_paired, _d64_n256_paired: the same, walking the
//                                paired causal schedule (Fp8Config::paired; d128's wide kernel has no
//                                paired twin: the walk's registers make it spill)
//   fa3_fwd_fp8_sm90_d64_n256_p  128 x 256          2                      115,824       56 / 224
//   fa3_fwd_fp8_sm90_d128_n192_p 128 x 192          2                      181,360       56 / 224
// (the wide kernels exist only in the loop flavour; launch_fwd_fp8 says why)
// (smem: Fp8Layout<C>::kSmemBytes, two Q slots and alignment slack included; 168 registers at
// launch, 384 threads.)
// d256 takes 64-key blocks: O alone is 128 fp32 registers per consumer thread there. The _nNNN
// kernels (wide K/V blocks: the per-block fixed costs, O's rescale, the row-max shuffles, the
// barrier round trips, spread over more keys) run when the K and V descales are uniform along the
// keys and V is row-major (wide_blocks_apply); per-block K/V descales need blocks inside one
// 128-row descale block.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "include/flashptx.h"
#include "src/kernels.h"
#include "src/sm90/fa3_fwd_fp8.cuh"
#include "src/sm90/fa3_fwd_fp8.h"
#include "src/tensormap.h"

#define FLASHPTX_FA3_FWD_FP8_KERNEL(name, config)                                                    \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::Fp8Layout<config>::kThreads, 1)       \
      name(const __grid_constant__ flashptx::fa3::FwdFp8Params p) {                                 \
    flashptx::fa3::fp8::fwd_fp8_kernel_body<config>(p);                                              \
  }

FLASHPTX_FA3_FWD_FP8_KERNEL(fa3_fwd_fp8_sm90_d64, flashptx::fa3::kFp8D64)
FLASHPTX_FA3_FWD_FP8_KERNEL(fa3_fwd_fp8_sm90_d128, flashptx::fa3::kFp8D128)
FLASHPTX_FA3_FWD_FP8_KERNEL(fa3_fwd_fp8_sm90_d256, flashptx::fa3::kFp8D256)
FLASHPTX_FA3_FWD_FP8_KERNEL(fa3_fwd_fp8_sm90_d64_p, flashptx::fa3::persistent(flashptx::fa3::kFp8D64))
FLASHPTX_FA3_FWD_FP8_KERNEL(fa3_fwd_fp8_sm90_d128_p, flashptx::fa3::persistent(flashptx::fa3::kFp8D128))
FLASHPTX_FA3_FWD_FP8_KERNEL(fa3_fwd_fp8_sm90_d256_p, flashptx::fa3::persistent(flashptx::fa3::kFp8D256))
FLASHPTX_FA3_FWD_FP8_KERNEL(fa3_fwd_fp8_sm90_d64_n256_p, flashptx::fa3::persistent(flashptx::fa3::kFp8D64N256))
FLASHPTX_FA3_FWD_FP8_KERNEL(fa3_fwd_fp8_sm90_d128_n192_p, flashptx::fa3::persistent(flashptx::fa3::kFp8D128N192))
FLASHPTX_FA3_FWD_FP8_KERNEL(fa3_fwd_fp8_sm90_d64_paired, flashptx::fa3::paired(flashptx::fa3::kFp8D64))
FLASHPTX_FA3_FWD_FP8_KERNEL(fa3_fwd_fp8_sm90_d128_paired, flashptx::fa3::paired(flashptx::fa3::kFp8D128))
FLASHPTX_FA3_FWD_FP8_KERNEL(fa3_fwd_fp8_sm90_d256_paired, flashptx::fa3::paired(flashptx::fa3::kFp8D256))
FLASHPTX_FA3_FWD_FP8_KERNEL(fa3_fwd_fp8_sm90_d64_n256_paired, flashptx::fa3::paired(flashptx::fa3::kFp8D64N256))

namespace flashptx {

namespace {

fa3::DescaleIndex descale_index(flashptx_fp8_scale_granularity g, int64_t heads, int64_t seqlen) {
  fa3::DescaleIndex ix;
  const int64_t nblk = (seqlen + fa3::kFp8ScaleRows - 1) / fa3::kFp8ScaleRows;
  switch (g) {
    case FLASHPTX_FP8_SCALE_PER_TENSOR: break;
    case FLASHPTX_FP8_SCALE_PER_HEAD: ix.sb = static_cast<int>(heads); ix.sh = 1; break;
    case FLASHPTX_FP8_SCALE_PER_BLOCK:
      ix.sb = static_cast<int>(heads * nblk); ix.sh = static_cast<int>(nblk); ix.sblk = 1; break;
  }
  return ix;
}

// e4m3 [batch, seqlen, heads, d] (1-byte elements, strides in bytes = elements).
bool encode_e4m3_rows(CUtensorMap* map, const void* ptr, int64_t batch, int64_t seqlen, int64_t heads, int64_t d,
                      int64_t sb, int64_t ss, int64_t sh, uint32_t box_inner, uint32_t box_rows, CUtensorMapSwizzle swz,
                      std::string* err) {
  uint64_t dims[4] = {static_cast<uint64_t>(d), static_cast<uint64_t>(seqlen), static_cast<uint64_t>(heads),
                      static_cast<uint64_t>(batch)};
  uint64_t strides[3] = {static_cast<uint64_t>(ss), static_cast<uint64_t>(sh), static_cast<uint64_t>(sb)};
  // Extents of 1 have no stride of their own (the caller may pass any): keep them dense and aligned.
  if (seqlen == 1) strides[0] = static_cast<uint64_t>((d + 15) / 16 * 16);
  if (heads == 1) strides[1] = strides[0] * static_cast<uint64_t>(seqlen);
  if (batch == 1) strides[2] = strides[1] * static_cast<uint64_t>(heads);
  uint32_t box[4] = {box_inner, box_rows, 1, 1};
  return encode_tensor_map(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 4, ptr, dims, strides, box, swz, err);
}

}  // namespace

template <fa3::Fp8Config C>
static flashptx_status launch_fp8(const flashptx_fwd_fp8_params& a, const void* fn, bool one_cta_per_sm,
                                  int sm_count, cudaStream_t stream, std::string* msg) {
  using L = fa3::Fp8Layout<C>;
  if (L::kUniformKVDescalesOnly &&
      (a.k_granularity == FLASHPTX_FP8_SCALE_PER_BLOCK || a.v_granularity == FLASHPTX_FP8_SCALE_PER_BLOCK ||
       a.v_layout != FLASHPTX_FP8_V_ROW_MAJOR)) {
    *msg = "internal: a wide-block FP8 kernel chosen for per-block K/V descales or V^T";
    return FLASHPTX_ERR_BAD_OPTION;
  }
  fa3::FwdFp8Params p{};
  const CUtensorMapSwizzle qk_swz = L::kQKChunkBytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
  // V^T given: one TMA box per Vt stage, so one chunk (block_n <= 128; wider kernels are not
  // launched for this layout, launch_fwd_fp8).
  const CUtensorMapSwizzle vt_swz = C.block_n == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
  std::string err;
  bool ok = encode_e4m3_rows(&p.tma_q, a.q, a.batch, a.seqlen_q, a.heads_q, a.head_dim, a.q_batch_stride,
                             a.q_row_stride, a.q_head_stride, L::kQKChunkBytes, L::kBlockM, qk_swz, &err);
  // seqlen_k 0: no tile loads K or V (n_max = 0), but a map needs an extent >= 1 and valid strides:
  // one row, dense strides (the caller's may be zero then), as the bf16 forward's plan does.
  const bool no_keys = a.seqlen_k == 0;
  const int64_t sk = no_keys ? 1 : a.seqlen_k;
  const int64_t row = a.heads_kv * a.head_dim;  // one dense row of all kv heads
  ok = ok && encode_e4m3_rows(&p.tma_k, a.k, a.batch, sk, a.heads_kv, a.head_dim, no_keys ? row : a.k_batch_stride,
                              no_keys ? row : a.k_row_stride, no_keys ? a.head_dim : a.k_head_stride, L::kQKChunkBytes,
                              C.block_n, qk_swz, &err);
  if (a.v_layout == FLASHPTX_FP8_V_ROW_MAJOR) {
    // K's map for V's rows (chunks of min(d, 128) bytes, K's swizzle): the raw stage is laid out
    // as a K stage (fa3_fwd_fp8_config.h raw_v_offset), which the producer warpgroup transposes.
    ok = ok && encode_e4m3_rows(&p.tma_v, a.v, a.batch, sk, a.heads_kv, a.head_dim, no_keys ? row : a.v_batch_stride,
                                no_keys ? row : a.v_row_stride, no_keys ? a.head_dim : a.v_head_stride,
                                L::kQKChunkBytes, C.block_n, qk_swz, &err);
  } else {
    // V^T [batch, heads_kv, d, seqlen_k]: dims (key, dim, head, batch); box (block_n keys, d rows),
    // the Vt stage's swizzle. Keys past seqlen_k are TMA's zero fill.
    uint64_t dims[4] = {static_cast<uint64_t>(sk), static_cast<uint64_t>(a.head_dim), static_cast<uint64_t>(a.heads_kv),
                        static_cast<uint64_t>(a.batch)};
    uint64_t strides[3] = {static_cast<uint64_t>(no_keys ? 16 : a.v_dim_stride),
                           static_cast<uint64_t>(no_keys ? 16 * a.head_dim : a.v_head_stride),
                           static_cast<uint64_t>(no_keys ? 16 * a.head_dim * a.heads_kv : a.v_batch_stride)};
    if (a.heads_kv == 1) strides[1] = strides[0] * static_cast<uint64_t>(a.head_dim);
    if (a.batch == 1) strides[2] = strides[1] * static_cast<uint64_t>(a.heads_kv);
    uint32_t box[4] = {static_cast<uint32_t>(C.block_n), static_cast<uint32_t>(C.head_dim), 1, 1};
    ok = ok && encode_tensor_map(&p.tma_v, CU_TENSOR_MAP_DATA_TYPE_UINT8, 4, a.v, dims, strides, box, vt_swz, &err);
  }
  if (!ok) {
    *msg = "tensor map: " + err;
    return FLASHPTX_ERR_CUDA;
  }
  p.o = static_cast<uint16_t*>(a.o);
  p.o_sb = a.o_batch_stride;
  p.o_ss = a.o_row_stride;
  p.o_sh = a.o_head_stride;
  p.lse = a.lse;
  p.descale_q = a.descale_q;
  p.descale_k = a.descale_k;
  p.descale_v = a.descale_v;
  p.iq = descale_index(a.q_granularity, a.heads_q, a.seqlen_q);
  p.ik = descale_index(a.k_granularity, a.heads_kv, a.seqlen_k);
  p.iv = descale_index(a.v_granularity, a.heads_kv, a.seqlen_k);
  p.seqlen_q = static_cast<int>(a.seqlen_q);
  p.seqlen_k = static_cast<int>(a.seqlen_k);
  p.heads_q = static_cast<int>(a.heads_q);
  p.heads_kv = static_cast<int>(a.heads_kv);
  p.batch = static_cast<int>(a.batch);
  p.num_m_blocks = static_cast<int>((a.seqlen_q + L::kBlockM - 1) / L::kBlockM);
  p.causal = a.causal != 0;
  p.v_keys_contiguous = a.v_layout == FLASHPTX_FP8_V_KEYS_CONTIGUOUS;
  const double scale = a.softmax_scale > 0.f ? a.softmax_scale : 1.0 / std::sqrt(static_cast<double>(a.head_dim));
  p.softmax_scale = static_cast<float>(scale);
  p.softmax_scale_log2 = static_cast<float>(scale * 1.4426950408889634);

  cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, L::kSmemBytes);
  if (e != cudaSuccess) {
    *msg = std::string("cudaFuncSetAttribute(max dynamic shared memory): ") + cudaGetErrorString(e);
    return FLASHPTX_ERR_CUDA;
  }
  // The kernel walks tiles blockIdx.x, + gridDim.x, ... (the linear order: longest first under a
  // causal mask): one CTA per SM (registers and shared memory allow no second) or one per tile
  // (persistent_applies below says which); only the persistent flavour loops over tiles.
  const int64_t tiles = static_cast<int64_t>(p.num_m_blocks) * a.heads_q * a.batch;
  p.num_tiles = static_cast<int>(tiles);
  if (!C.persistent && one_cta_per_sm) {
    *msg = "internal: a one-tile-per-CTA FP8 kernel launched one CTA per SM";
    return FLASHPTX_ERR_BAD_OPTION;
  }
  if (C.paired && !one_cta_per_sm) {
    *msg = "internal: a paired FP8 kernel launched one CTA per tile";
    return FLASHPTX_ERR_BAD_OPTION;
  }
  // The paired walk deals units of two tiles (paired_units); the others deal tiles.
  const int64_t work = C.paired ? static_cast<int64_t>(paired_units(p.num_m_blocks, p.heads_q, p.batch)) : tiles;
  const int64_t ctas = one_cta_per_sm ? std::min<int64_t>(work, std::max(sm_count, 1)) : tiles;
  void* args[] = {&p};
  e = cudaLaunchKernel(fn, dim3(static_cast<unsigned>(ctas)), dim3(L::kThreads), args, L::kSmemBytes, stream);
  if (e != cudaSuccess) {
    *msg = std::string("launch of the FP8 forward: ") + cudaGetErrorString(e);
    return FLASHPTX_ERR_CUDA;
  }
  return FLASHPTX_OK;
}

// The wide-block kernels (block_n > 128) read one K and one V descale per block, so they run only
// when those are uniform along the keys (per tensor or per head) and V is row-major (their Vt stage
// is two chunks, which one TMA box of V^T cannot fill); and from 2k keys, where the last, partly
// full wide block weighs less (docs/DECISIONS.md, "FP8: wide K/V blocks").
static bool wide_blocks_apply(const flashptx_fwd_fp8_params& a) {
  const auto uniform = [](flashptx_fp8_scale_granularity g) { return g != FLASHPTX_FP8_SCALE_PER_BLOCK; };
  return uniform(a.k_granularity) && uniform(a.v_granularity) && a.v_layout == FLASHPTX_FP8_V_ROW_MAJOR &&
         a.seqlen_k >= 2048;
}

// Persistent (one CTA per SM) for non-causal calls up to 4k keys (the next tile's loads under this
// tile's drain, one prologue per SM); one CTA per tile otherwise, where the hardware's block
// scheduler balances a causal mask better than a static round robin (docs/DECISIONS.md, "FP8: when
// the tile loop runs").
static bool persistent_applies(const flashptx_fwd_fp8_params& a) { return a.causal == 0 && a.seqlen_k <= 4096; }
// Causal calls: the paired walk, one CTA per SM (units of tiles m and M-1-m have equal key counts,
// so the static round robin balances, and each tile's start passes under the previous one's end),
// where it measured at least one CTA per tile's rate (docs/DECISIONS.md, "FP8: the paired causal
// walk"): up to 8k keys with 128-key (d256: 64-key) blocks; at d64 with the wide blocks at every
// length; at d128 where the wide blocks apply only up to 2k keys (its wide kernel has no paired twin,
// and past 2k the 192-key blocks one CTA per tile win).
static bool paired_applies(const flashptx_fwd_fp8_params& a) {
  if (a.causal == 0) return false;
  if (wide_blocks_apply(a) && a.head_dim == 64) return true;
  if (wide_blocks_apply(a) && a.head_dim == 128) return a.seqlen_k <= 2048;
  return a.seqlen_k <= 8192;
}

// Every launchable FP8 forward kernel, its symbol and its launch, named once: launch_fwd_fp8 and
// fwd_fp8_kernel_name take the same entry from select_fp8_kernel.
using Fp8Launch = flashptx_status (*)(const flashptx_fwd_fp8_params&, bool, int, cudaStream_t, std::string*);
template <fa3::Fp8Config C, auto Kernel>
static flashptx_status launch_entry(const flashptx_fwd_fp8_params& a, bool one_cta_per_sm, int sm_count,
                                    cudaStream_t stream, std::string* msg) {
  return launch_fp8<C>(a, reinterpret_cast<const void*>(Kernel), one_cta_per_sm, sm_count, stream, msg);
}
struct Fp8Kernel {
  const char* name;
  Fp8Launch launch;
};
#define FLASHPTX_FP8_ENTRY(kernel, config) Fp8Kernel{#kernel, &launch_entry<config, &kernel>}

// Which code runs: the 128-key and d256 kernels in their plain flavour (no tile loop) when one CTA
// per tile runs (Fp8Config::persistent says why); the wide kernels only in the loop flavour
// (docs/DECISIONS.md, "FP8: wide K/V blocks"). nullptr for a head dim without a kernel.
static const Fp8Kernel* select_fp8_kernel(const flashptx_fwd_fp8_params& a) {
  using fa3::persistent;
  static const Fp8Kernel d64 = FLASHPTX_FP8_ENTRY(fa3_fwd_fp8_sm90_d64, fa3::kFp8D64);
  static const Fp8Kernel d64_p = FLASHPTX_FP8_ENTRY(fa3_fwd_fp8_sm90_d64_p, persistent(fa3::kFp8D64));
  static const Fp8Kernel d64_n256_p = FLASHPTX_FP8_ENTRY(fa3_fwd_fp8_sm90_d64_n256_p, persistent(fa3::kFp8D64N256));
  static const Fp8Kernel d128 = FLASHPTX_FP8_ENTRY(fa3_fwd_fp8_sm90_d128, fa3::kFp8D128);
  static const Fp8Kernel d128_p = FLASHPTX_FP8_ENTRY(fa3_fwd_fp8_sm90_d128_p, persistent(fa3::kFp8D128));
  static const Fp8Kernel d128_n192_p =
      FLASHPTX_FP8_ENTRY(fa3_fwd_fp8_sm90_d128_n192_p, persistent(fa3::kFp8D128N192));
  static const Fp8Kernel d256 = FLASHPTX_FP8_ENTRY(fa3_fwd_fp8_sm90_d256, fa3::kFp8D256);
  static const Fp8Kernel d256_p = FLASHPTX_FP8_ENTRY(fa3_fwd_fp8_sm90_d256_p, persistent(fa3::kFp8D256));
  static const Fp8Kernel d64_paired = FLASHPTX_FP8_ENTRY(fa3_fwd_fp8_sm90_d64_paired, fa3::paired(fa3::kFp8D64));
  static const Fp8Kernel d128_paired = FLASHPTX_FP8_ENTRY(fa3_fwd_fp8_sm90_d128_paired, fa3::paired(fa3::kFp8D128));
  static const Fp8Kernel d256_paired = FLASHPTX_FP8_ENTRY(fa3_fwd_fp8_sm90_d256_paired, fa3::paired(fa3::kFp8D256));
  static const Fp8Kernel d64_n256_paired =
      FLASHPTX_FP8_ENTRY(fa3_fwd_fp8_sm90_d64_n256_paired, fa3::paired(fa3::kFp8D64N256));
  const bool wide = wide_blocks_apply(a), pers = persistent_applies(a), pair = paired_applies(a);
  switch (a.head_dim) {
    case 64: return wide ? (pair ? &d64_n256_paired : &d64_n256_p) : pair ? &d64_paired : pers ? &d64_p : &d64;
    case 128: return pair ? &d128_paired : wide ? &d128_n192_p : pers ? &d128_p : &d128;
    case 256: return pair ? &d256_paired : pers ? &d256_p : &d256;
  }
  return nullptr;
}
#undef FLASHPTX_FP8_ENTRY

flashptx_status launch_fwd_fp8(const flashptx_fwd_fp8_params& a, int sm_count, cudaStream_t stream, std::string* msg) {
  const Fp8Kernel* k = select_fp8_kernel(a);
  if (k == nullptr) {
    *msg = "head_dim " + std::to_string(a.head_dim) + " has no FP8 kernel";
    return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
  }
  return k->launch(a, persistent_applies(a) || paired_applies(a), sm_count, stream, msg);
}

const char* fwd_fp8_kernel_name(const flashptx_fwd_fp8_params& a) {
  const Fp8Kernel* k = select_fp8_kernel(a);
  return k != nullptr ? k->name : nullptr;
}

// The kernel table's rows (src/kernels.h): the description `flashptx kernels` prints; the launch
// above does not read them.
template <fa3::Fp8Config C>
inline constexpr KernelSwitch kFa3FwdFp8Switches[] = {
    {"skip_unit_rescale", C.skip_unit_rescale},
    {"paired", C.paired},
    {"uniform_kv_descales_only", fa3::Fp8Layout<C>::kUniformKVDescalesOnly},
    {"q_slots", fa3::Fp8Layout<C>::kQSlots},
    {"producer_regs", fa3::Fp8Layout<C>::kProducerRegs},
    {"consumer_regs", fa3::Fp8Layout<C>::kConsumerRegs},
};
template <fa3::Fp8Config C>
static KernelEntry fp8_row(const char* name, const void* fn) {
  using L = fa3::Fp8Layout<C>;
  KernelEntry e{name,         Family::kFa3FwdFp8, FLASHPTX_FP8_E4M3, C.head_dim, L::kBlockM,
                C.block_n,    C.stages,           L::kConsumerWGs,   /*pingpong*/ true,
                C.persistent, L::kThreads,        L::kSmemBytes,     fn};
  e.switches = kFa3FwdFp8Switches<C>;
  return e;
}
#define FLASHPTX_FP8_ROW(name, config) fp8_row<config>(#name, reinterpret_cast<const void*>(&name))

std::span<const KernelEntry> fa3_fwd_fp8_kernels() {
  using namespace fa3;
  static const KernelEntry rows[] = {
      FLASHPTX_FP8_ROW(fa3_fwd_fp8_sm90_d64, kFp8D64),
      FLASHPTX_FP8_ROW(fa3_fwd_fp8_sm90_d128, kFp8D128),
      FLASHPTX_FP8_ROW(fa3_fwd_fp8_sm90_d256, kFp8D256),
      FLASHPTX_FP8_ROW(fa3_fwd_fp8_sm90_d64_p, persistent(kFp8D64)),
      FLASHPTX_FP8_ROW(fa3_fwd_fp8_sm90_d128_p, persistent(kFp8D128)),
      FLASHPTX_FP8_ROW(fa3_fwd_fp8_sm90_d256_p, persistent(kFp8D256)),
      FLASHPTX_FP8_ROW(fa3_fwd_fp8_sm90_d64_n256_p, persistent(kFp8D64N256)),
      FLASHPTX_FP8_ROW(fa3_fwd_fp8_sm90_d128_n192_p, persistent(kFp8D128N192)),
      FLASHPTX_FP8_ROW(fa3_fwd_fp8_sm90_d64_paired, paired(kFp8D64)),
      FLASHPTX_FP8_ROW(fa3_fwd_fp8_sm90_d128_paired, paired(kFp8D128)),
      FLASHPTX_FP8_ROW(fa3_fwd_fp8_sm90_d256_paired, paired(kFp8D256)),
      FLASHPTX_FP8_ROW(fa3_fwd_fp8_sm90_d64_n256_paired, paired(kFp8D64N256)),
  };
  return rows;
}
#undef FLASHPTX_FP8_ROW

}  // namespace flashptx
