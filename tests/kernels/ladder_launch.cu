// The attention ladder's launch(): checks the rungs' restriction, builds the kernels' arguments
// (tensor maps for rungs 2 and 3: src/tensormap.h encode_bshd, 128B swizzle, box 64 x rows) and
// calls the rung's launcher (tests/kernels/ladder_{1,2,3,4}.cu). Host code only.
#include <cmath>
#include <string>

#include "src/tensormap.h"
#include "tests/kernels/ladder_common.cuh"

namespace flashptx_test::ladder {

cudaError_t launch(int rung, const Problem& p, cudaStream_t stream) {
  if (!supported(p, rung)) return cudaErrorInvalidValue;
  const float scale = p.softmax_scale != 0.f ? p.softmax_scale : 1.f / std::sqrt(static_cast<float>(kHeadDim));
  LadderArgs a{static_cast<const uint16_t*>(p.q), static_cast<const uint16_t*>(p.k), static_cast<const uint16_t*>(p.v),
               static_cast<uint16_t*>(p.o), p.seqlen_q, p.seqlen_k, p.heads, scale * 1.4426950408889634f};
  const dim3 grid(p.seqlen_q / (rung == 4 ? 2 * kBlockM : kBlockM), p.heads, p.batch);
  if (rung == 1) return launch_rung1(a, grid, stream);
  LadderTmaArgs t{};
  t.a = a;
  const int64_t rs = static_cast<int64_t>(p.heads) * kHeadDim;  // contiguous [b, s, h, d]
  std::string err;
  const bool ok =
      flashptx::encode_bshd(&t.tma_q, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, p.q, p.batch, p.seqlen_q, p.heads, kHeadDim,
                            rs * p.seqlen_q, rs, kHeadDim, kBlockM, &err) &&
      flashptx::encode_bshd(&t.tma_k, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, p.k, p.batch, p.seqlen_k, p.heads, kHeadDim,
                            rs * p.seqlen_k, rs, kHeadDim, kBlockN, &err) &&
      flashptx::encode_bshd(&t.tma_v, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, p.v, p.batch, p.seqlen_k, p.heads, kHeadDim,
                            rs * p.seqlen_k, rs, kHeadDim, kBlockN, &err);
  if (!ok) return cudaErrorUnknown;
  return rung == 2 ? launch_rung2(t, grid, stream) : rung == 3 ? launch_rung3(t, grid, stream) : launch_rung4(t, grid, stream);
}

}  // namespace flashptx_test::ladder
