// A simple GPU attention reference for shapes too large for the CPU fp64 reference (used by
// `flashptx bench` and the GPU tests on large shapes).
//
// What it is: one warp per (batch, query row, query head); lane l holds dims l, l+32, ...
// (d <= 256); scores by a warp-shuffle dot product in fp32, online softmax in fp32 (natural base,
// expf), fp32 accumulation of PV, O written in fp32. Same semantics as tools/support/reference.h
// (bottom-right causal, GQA, strides from flashptx_fwd_params, fully masked rows O = 0 and
// LSE = -inf).
// What it is not: fast (it does no tiling; about a second at 16k x 16k, 16 heads), or more accurate
// than fp32 (its error against fp64 grows like sqrt(seqlen_k) * 2^-24 relative; far below bf16's).
// It shares no code with the flashptx kernels.
#pragma once
#include <cstdint>
#include <cuda_runtime_api.h>

#include "include/flashptx.h"

namespace flashptx::gpuref {

// o: fp32 [batch, seqlen_q, heads_q, head_dim] contiguous; lse: fp32 [batch, heads_q, seqlen_q] or
// nullptr. Reads p.q/p.k/p.v with p's strides and dtype (bf16 or fp16); ignores p.o and p.lse.
// Returns cudaErrorInvalidValue for a head_dim above 256 or another dtype; otherwise the launch status.
cudaError_t attention_fwd(const flashptx_fwd_params& p, float* o, float* lse, cudaStream_t stream);

// Backward reference, fp32, two passes (per query row: LSE, O, delta and dQ; per key row: dK and dV
// over the query heads of its group), from p's q, k, v, dout (its dtype and strides); ignores p's o,
// lse and outputs. dq [batch, seqlen_q, heads_q, d], dk and dv [batch, seqlen_k, heads_kv, d], fp32,
// contiguous; scratch: 2 * batch * heads_q * seqlen_q floats (its LSE and delta).
cudaError_t attention_bwd(const flashptx_bwd_params& p, float* dq, float* dk, float* dv, float* scratch,
                          cudaStream_t stream);

// Fills n elements of a bf16 or fp16 (or fp32) buffer with reproducible pseudo-random values,
// uniform in [-scale, scale] from a counter-based hash of (seed, index) (never all zeros).
cudaError_t fill_random(void* ptr, int64_t n, flashptx_dtype dtype, uint64_t seed, float scale,
                        cudaStream_t stream);

}  // namespace flashptx::gpuref
