// FA3 backward, the attention sinks' gradient (src/sm90/fa3_bwd_sink.h says what it computes and
// why the rest of the backward is unchanged by the sinks): dsinks[h] = -sum_i 2^(s_h log2(e) -
// LSE2_i) delta_i over the rows of head h in every batch, from the preprocess's scratch. Launched
// after the preprocess (src/plan.cpp launch_bwd) when the call has sinks. Plain CUDA (no wgmma, no
// mbarrier); one kernel for every dtype and head dim (it reads fp32 scratch only).
#include "ptx/cvt.cuh"
#include "src/kernels.h"
#include "src/sm90/fa3_bwd_sink.h"

namespace flashptx::fa3::bwd {

// Grid (heads_q), kSinkThreads threads. Deterministic by construction: each thread's rows in a
// fixed order, then butterflies inside each warp and the warps' sums added in warp order by thread
// 0 (the order depends on nothing but the shape).
__device__ __forceinline__ void sink_grad_body(const BwdSinkParams& p) {
  __shared__ float warp_sum[kSinkThreads / 32];
  const int h = blockIdx.x;
  const float s2 = p.sinks[h] * 1.4426950408889634f;
  float acc = 0.f;
  for (int b = 0; b < p.batch; ++b) {
    const int64_t base = (static_cast<int64_t>(b) * p.heads_q + h) * p.rows_pad;
    for (int row = threadIdx.x; row < p.seqlen_q; row += kSinkThreads) {
      // p_sink = 2^(s2 - LSE2) <= 1 (the LSE counts the sink); a row the forward gave LSE = -inf
      // (sink -inf, no key) has LSE2 = +inf and delta 0: its term is 0.
      acc = fmaf(ptx::ex2_approx_ftz_f32(s2 - p.lse2[base + row]), p.delta[base + row], acc);
    }
  }
#pragma unroll
  for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (threadIdx.x % 32 == 0) warp_sum[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.f;
#pragma unroll
    for (int w = 0; w < kSinkThreads / 32; ++w) total += warp_sum[w];
    p.dsinks[h] = -total;
  }
}

}  // namespace flashptx::fa3::bwd

extern "C" __global__ void __launch_bounds__(flashptx::fa3::kSinkThreads)
    fa3_bwd_sink_sm90(const __grid_constant__ flashptx::fa3::BwdSinkParams p) {
  flashptx::fa3::bwd::sink_grad_body(p);
}

namespace flashptx {

std::span<const KernelEntry> fa3_bwd_sink_kernels() {
  // One row for both dtypes (it reads fp32 scratch only): dtype bf16 by convention, head dim 0 (any).
  static const KernelEntry rows[] = {KernelEntry{.name = "fa3_bwd_sink_sm90",
                                                 .family = Family::kFa3BwdSink,
                                                 .dtype = FLASHPTX_BF16,
                                                 .threads = fa3::kSinkThreads,
                                                 .fn = reinterpret_cast<const void*>(&fa3_bwd_sink_sm90)}};
  return rows;
}

}  // namespace flashptx
