// The attention ladder (issue 15, README "Attention ladder"): small, complete sm_90a forward
// kernels, one protocol added per rung, from a plain-load single-warpgroup kernel towards the
// library's FA3 forward (the last rung, run through flashptx_fwd). Host side: the launchers.
//
//   rung 1  tests/kernels/ladder_1.cu  one warpgroup, plain 16-byte loads + __syncthreads, wgmma SS/RS
//   rung 2  tests/kernels/ladder_2.cu  + TMA loads completing on an mbarrier (expect_tx, parity wait)
//   rung 3  tests/kernels/ladder_3.cu  + a producer warpgroup (setmaxnreg) and a 2-stage K/V ring
//   rung 4  tests/kernels/ladder_4.cu  + two consumer warpgroups (128 rows) and the pingpong token ring
//   last    fa3_fwd_sm90_bf16_d128_n128 through flashptx_fwd (src/sm90/fa3_fwd.cuh)
//
// The rungs' restriction (they teach protocols, not tails): bf16, head dim 128, non-causal,
// heads_q == heads_kv, contiguous [batch, seqlen, heads, 128] tensors, seqlen_q a multiple of 64 and
// seqlen_k a multiple of 128 (no masking, no partial tiles), and for rung 4 seqlen_q a multiple of
// 128. They write O only (no LSE). One CTA per 64 query rows (rung 4: 128) of one (batch, head):
// grid (seqlen_q / 64, heads, batch) (rung 4: seqlen_q / 128).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace flashptx_test::ladder {

constexpr int kHeadDim = 128, kBlockM = 64, kBlockN = 128;
constexpr int kRungs = 4;  // hand-written rungs; the table's last row is the library's FA3 forward

struct Problem {
  const void* q = nullptr;  // bf16 [batch, seqlen_q, heads, 128], contiguous
  const void* k = nullptr;  // bf16 [batch, seqlen_k, heads, 128]
  const void* v = nullptr;
  void* o = nullptr;        // bf16 [batch, seqlen_q, heads, 128]
  int batch = 0, seqlen_q = 0, seqlen_k = 0, heads = 0;
  float softmax_scale = 0.f;  // 0: 1/sqrt(128)
};

// Whether rung `rung` takes this problem (the restriction above).
inline bool supported(const Problem& p, int rung) {
  return rung >= 1 && rung <= kRungs && p.batch > 0 && p.heads > 0 && p.seqlen_q > 0 && p.seqlen_k > 0 &&
         p.seqlen_q % (rung == 4 ? 2 * kBlockM : kBlockM) == 0 && p.seqlen_k % kBlockN == 0;
}

// Launches rung `rung` (1..kRungs) on `stream`; returns the launch's error (cudaGetLastError), or
// cudaErrorInvalidValue for an unsupported problem or rung, or cudaErrorUnknown when a tensor map
// cannot be encoded.
cudaError_t launch(int rung, const Problem& p, cudaStream_t stream = nullptr);

}  // namespace flashptx_test::ladder
