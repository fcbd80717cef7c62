// FA3 forward: the list of specializations. Every forward kernel that exists is named here, once.
//
// Each is an extern "C" __global__ wrapper around fa3::fwd_kernel_body<config> (src/sm90/fa3_fwd.cuh),
// so its SASS golden is named plainly (sass_golden/sm_90a/fa3_fwd_sm90_bf16_d128_n128.sass), and a
// row of the kernel table (src/kernels.h). Which row a problem uses is the launch plan's rule
// (src/plan.cpp). Candidates that lost a measurement are removed from this list; docs/DECISIONS.md
// keeps their numbers ("Forward (FA3)").
//
//   kernel     block_m x block_n  stages  consumers  pingpong  persistent  O staging  smem
//   d64_m128   128 x 128          3       2          yes       yes         own        129 KiB
//   d64_m192   192 x 128          3       3          yes (3)   yes         own        145 KiB  (160 regs/consumer)
//   *_paired   the d64_m128, d64_m192, d128_n128 and d256 shapes, persistent over the paired causal
//              schedule (two consumers: 40 regs producer / 232 consumer, d64_m128 56 / 224;
//              d64_m192: 32 / 160): the plan's causal launches at every length (d128), up to 8k
//              rows (d256), and d64 where the makespan estimates put them first (src/plan.cpp,
//              fwd_d64_causal_choice). d64_m128_paired also has the dynamic schedule (an atomic
//              tile counter, longest-first in L2 sections), run when the caller passes a counter,
//              and two Q slots, as d128_n128 (FwdLayout::kQSlots).
//   d128_n128  128 x 128          2       2          yes       yes         own        225 KiB  (two Q slots)
//   d256       128 x 64           2       2          yes       no          in Q       193 KiB
//   d256_persistent  the d256 shape, persistent (non-causal up to 4k keys)  in halves  225 KiB
// The two-consumer persistent and paired kernels take their tiles from the producer through shared
// memory (the tile feed, FwdLayout::kTileFeed), and their warpgroup 0 computes the diagonal block 64
// columns wide (Consumer::half_first): docs/DECISIONS.md, "The half-width diagonal".
// Their producer walks one tile ahead (FwdLayout::kWalkAhead; not in d64_m128's non-causal loop):
// docs/DECISIONS.md, "Walking ahead".
// Every d256 kernel rescales O lazily (Consumer::kLazyRescale: +2-4% at 512, +4-10% from 1k on the
// H200; docs/DECISIONS.md, "Lazy rescale at d256").
// d256 non-causal: the persistent kernel up to 4k keys, one tile per CTA from 8k. With O in the Q
// buffer a persistent d256 kernel had measured 2-5% slower than one tile per CTA from 2k (+2% at
// 512); staging O in halves beside Q (FwdLayout::kOHalves) freed Q at the last QK: +10% at 512,
// +6% at 1k, and +2-11% for the paired causal twin (docs/DECISIONS.md, "O in halves at d256").
// The token ring is on although
// FA3's admission table disables it above head dim 128: measured faster (src/sm90/fa3_fwd_config.h).
//
// Variable-length batches (flashptx_fwd_varlen): the varlen twin of d64_m128, d128_n128 and d256
// (fa3::varlen(config): the same shape, packed tensors, the sequence table in the parameter block,
// one tile per CTA in longest-first order). d64 takes the 128-row tile: packed batches are mostly
// short sequences, where the 192-row tile wastes more of each sequence's last block. Their own
// kernels, so the fixed-length kernels' SASS is unchanged by varlen.
#include "src/kernels.h"
#include "src/sm90/fa3_fwd.cuh"
#include "src/sm90/fa3_fwd_entry.h"

// The configurations (kD64M128, ...) are named in src/sm90/fa3_fwd_config.h.

#define FLASHPTX_FA3_FWD_KERNEL(name, config)                                                        \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::FwdLayout<config>::kThreads, 1)        \
      name(const __grid_constant__ flashptx::fa3::FwdParams p) {                                    \
    flashptx::fa3::fwd_kernel_body<config>(p);                                                       \
  }

FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d64_m128, flashptx::fa3::kD64M128)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d64_m128, flashptx::fa3::fp16(flashptx::fa3::kD64M128))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d64_m192, flashptx::fa3::kD64M192)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d64_m192, flashptx::fa3::fp16(flashptx::fa3::kD64M192))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d128_n128, flashptx::fa3::kD128N128)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d128_n128, flashptx::fa3::fp16(flashptx::fa3::kD128N128))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d64_m128_paired, flashptx::fa3::paired(flashptx::fa3::kD64M128))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d64_m128_paired, flashptx::fa3::paired(flashptx::fa3::fp16(flashptx::fa3::kD64M128)))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d128_n128_paired, flashptx::fa3::paired(flashptx::fa3::kD128N128))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d128_n128_paired, flashptx::fa3::paired(flashptx::fa3::fp16(flashptx::fa3::kD128N128)))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d256, flashptx::fa3::kD256)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d256, flashptx::fa3::fp16(flashptx::fa3::kD256))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d256_paired, flashptx::fa3::paired(flashptx::fa3::kD256))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d64_m192_paired, flashptx::fa3::paired(flashptx::fa3::kD64M192))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d64_m192_paired, flashptx::fa3::paired(flashptx::fa3::fp16(flashptx::fa3::kD64M192)))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d256_paired, flashptx::fa3::paired(flashptx::fa3::fp16(flashptx::fa3::kD256)))
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_bf16_d256_persistent, flashptx::fa3::kD256Persistent)
FLASHPTX_FA3_FWD_KERNEL(fa3_fwd_sm90_fp16_d256_persistent, flashptx::fa3::fp16(flashptx::fa3::kD256Persistent))

#define FLASHPTX_FA3_FWD_VARLEN_KERNEL(name, config)                                                 \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::FwdLayout<config>::kThreads, 1)        \
      name(const __grid_constant__ flashptx::fa3::FwdVarlenParams p) {                              \
    flashptx::fa3::fwd_kernel_body<config>(p.fwd, &p.table);                                         \
  }

FLASHPTX_FA3_FWD_VARLEN_KERNEL(fa3_fwd_varlen_sm90_bf16_d64_m128, flashptx::fa3::varlen(flashptx::fa3::kD64M128))
FLASHPTX_FA3_FWD_VARLEN_KERNEL(fa3_fwd_varlen_sm90_fp16_d64_m128,
                               flashptx::fa3::varlen(flashptx::fa3::fp16(flashptx::fa3::kD64M128)))
FLASHPTX_FA3_FWD_VARLEN_KERNEL(fa3_fwd_varlen_sm90_bf16_d128_n128, flashptx::fa3::varlen(flashptx::fa3::kD128N128))
FLASHPTX_FA3_FWD_VARLEN_KERNEL(fa3_fwd_varlen_sm90_fp16_d128_n128,
                               flashptx::fa3::varlen(flashptx::fa3::fp16(flashptx::fa3::kD128N128)))
FLASHPTX_FA3_FWD_VARLEN_KERNEL(fa3_fwd_varlen_sm90_bf16_d256, flashptx::fa3::varlen(flashptx::fa3::kD256))
FLASHPTX_FA3_FWD_VARLEN_KERNEL(fa3_fwd_varlen_sm90_fp16_d256,
                               flashptx::fa3::varlen(flashptx::fa3::fp16(flashptx::fa3::kD256)))

namespace flashptx {

#define FLASHPTX_FA3_FWD_ROW(name, config) \
  fa3_fwd_entry<config>(#name, reinterpret_cast<const void*>(&name), Family::kFa3Fwd)
#define FLASHPTX_FA3_FWD_VARLEN_ROW(name, config) \
  fa3_fwd_entry<config>(#name, reinterpret_cast<const void*>(&name), Family::kFa3FwdVarlen)

std::span<const KernelEntry> fa3_fwd_kernels() {
  using namespace fa3;
  static const KernelEntry rows[] = {
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d64_m128, kD64M128),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d64_m128, fp16(kD64M128)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d64_m192, kD64M192),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d64_m192, fp16(kD64M192)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d128_n128, kD128N128),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d128_n128, fp16(kD128N128)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d64_m128_paired, paired(kD64M128)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d64_m128_paired, paired(fp16(kD64M128))),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d128_n128_paired, paired(kD128N128)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d128_n128_paired, paired(fp16(kD128N128))),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d256, kD256),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d256, fp16(kD256)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d256_paired, paired(kD256)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d64_m192_paired, paired(kD64M192)),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d64_m192_paired, paired(fp16(kD64M192))),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d256_paired, paired(fp16(kD256))),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_bf16_d256_persistent, kD256Persistent),
      FLASHPTX_FA3_FWD_ROW(fa3_fwd_sm90_fp16_d256_persistent, fp16(kD256Persistent)),
  };
  return rows;
}

std::span<const KernelEntry> fa3_fwd_varlen_kernels() {
  using namespace fa3;
  static const KernelEntry rows[] = {
      FLASHPTX_FA3_FWD_VARLEN_ROW(fa3_fwd_varlen_sm90_bf16_d64_m128, varlen(kD64M128)),
      FLASHPTX_FA3_FWD_VARLEN_ROW(fa3_fwd_varlen_sm90_fp16_d64_m128, varlen(fp16(kD64M128))),
      FLASHPTX_FA3_FWD_VARLEN_ROW(fa3_fwd_varlen_sm90_bf16_d128_n128, varlen(kD128N128)),
      FLASHPTX_FA3_FWD_VARLEN_ROW(fa3_fwd_varlen_sm90_fp16_d128_n128, varlen(fp16(kD128N128))),
      FLASHPTX_FA3_FWD_VARLEN_ROW(fa3_fwd_varlen_sm90_bf16_d256, varlen(kD256)),
      FLASHPTX_FA3_FWD_VARLEN_ROW(fa3_fwd_varlen_sm90_fp16_d256, varlen(fp16(kD256))),
  };
  return rows;
}

}  // namespace flashptx
