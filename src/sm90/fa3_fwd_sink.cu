// FA3 forward, the sink kernels: the learnable attention sinks (FwdConfig::sinks, gpt-oss's
// per-head sink logits, read from FwdParams::sinks) on the local kernels' shapes, so that the
// window and the softcap (run-time values there) come with them: one kernel per head dim and dtype
// covers a sink with no mask, the causal mask, any window and any softcap. Fixed-length only; the
// plan refuses a sink elsewhere (varlen, sm_100). The sink enters only the epilogue
// (Consumer::sink_epilogue): the main loop is the local kernels' own. A problem without sinks never
// runs them (src/plan.cpp); why these and no more: docs/DECISIONS.md, "Attention sinks: the
// epilogue's denominator". Their own translation unit, beside the others in the build.
//
//   kernel                        block_m x block_n  stages  O staging
//   fa3_fwd_sink_sm90_*_d64       128 x 128          3       own
//   fa3_fwd_sink_sm90_*_d128      128 x 128          2       own
//   fa3_fwd_sink_sm90_*_d256      128 x 64           2       in Q
#include "src/kernels.h"
#include "src/sm90/fa3_fwd.cuh"
#include "src/sm90/fa3_fwd_entry.h"

#define FLASHPTX_FA3_FWD_SINK_KERNEL(name, config)                                                   \
  extern "C" __global__ void __launch_bounds__(flashptx::fa3::FwdLayout<config>::kThreads, 1)        \
      name(const __grid_constant__ flashptx::fa3::FwdParams p) {                                    \
    flashptx::fa3::fwd_kernel_body<config>(p);                                                       \
  }

FLASHPTX_FA3_FWD_SINK_KERNEL(fa3_fwd_sink_sm90_bf16_d64, flashptx::fa3::with_sinks(flashptx::fa3::kD64M128Local))
FLASHPTX_FA3_FWD_SINK_KERNEL(fa3_fwd_sink_sm90_fp16_d64,
                             flashptx::fa3::fp16(flashptx::fa3::with_sinks(flashptx::fa3::kD64M128Local)))
FLASHPTX_FA3_FWD_SINK_KERNEL(fa3_fwd_sink_sm90_bf16_d128, flashptx::fa3::with_sinks(flashptx::fa3::kD128N128Local))
FLASHPTX_FA3_FWD_SINK_KERNEL(fa3_fwd_sink_sm90_fp16_d128,
                             flashptx::fa3::fp16(flashptx::fa3::with_sinks(flashptx::fa3::kD128N128Local)))
FLASHPTX_FA3_FWD_SINK_KERNEL(fa3_fwd_sink_sm90_bf16_d256, flashptx::fa3::with_sinks(flashptx::fa3::kD256Local))
FLASHPTX_FA3_FWD_SINK_KERNEL(fa3_fwd_sink_sm90_fp16_d256,
                             flashptx::fa3::fp16(flashptx::fa3::with_sinks(flashptx::fa3::kD256Local)))

namespace flashptx {

#define FLASHPTX_FA3_FWD_SINK_ROW(name, config) \
  fa3_fwd_entry<config>(#name, reinterpret_cast<const void*>(&name), Family::kFa3Fwd)

std::span<const KernelEntry> fa3_fwd_sink_kernels() {
  using namespace fa3;
  static const KernelEntry rows[] = {
      FLASHPTX_FA3_FWD_SINK_ROW(fa3_fwd_sink_sm90_bf16_d64, with_sinks(kD64M128Local)),
      FLASHPTX_FA3_FWD_SINK_ROW(fa3_fwd_sink_sm90_fp16_d64, fp16(with_sinks(kD64M128Local))),
      FLASHPTX_FA3_FWD_SINK_ROW(fa3_fwd_sink_sm90_bf16_d128, with_sinks(kD128N128Local)),
      FLASHPTX_FA3_FWD_SINK_ROW(fa3_fwd_sink_sm90_fp16_d128, fp16(with_sinks(kD128N128Local))),
      FLASHPTX_FA3_FWD_SINK_ROW(fa3_fwd_sink_sm90_bf16_d256, with_sinks(kD256Local)),
      FLASHPTX_FA3_FWD_SINK_ROW(fa3_fwd_sink_sm90_fp16_d256, fp16(with_sinks(kD256Local))),
  };
  return rows;
}

}  // namespace flashptx
