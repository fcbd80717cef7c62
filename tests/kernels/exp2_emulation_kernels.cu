// Device side of the host/device bit-equality tests of the exp2 emulation and retained-reference
// rescaling (docs/PROTOCOLS.md, "The FA4 roles") and the E4M3FN encoding ("FP8 layouts").
// The kernels contain no arithmetic of their own: they call the __host__ __device__ functions of
// src/protocol/ that the CPU oracle calls.
#include "tests/kernels/exp2_emulation_kernels.h"

#include <cuda_fp8.h>

#include "src/protocol/e4m3.h"
#include "src/protocol/exp2_emulation.h"
#include "src/protocol/online_softmax.h"

namespace flashptx_test::numerics {
// A named namespace, not an anonymous one: an anonymous namespace puts a hash of the build path into
// the kernels' mangled names, and the golden-SASS audit would see other kernels in another clone.
namespace kernels {

__global__ void exp2_degree3_kernel(const float* __restrict__ x, uint32_t* __restrict__ bits, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) bits[i] = flashptx::exp2emu::f2u(flashptx::exp2emu::exp2_degree3(x[i]));
}

__global__ void rescale_rows_kernel(const float* __restrict__ s, const float* __restrict__ v,
                                    int rows, int blocks, int block_len, float lambda, float tau,
                                    float omega, uint32_t* __restrict__ state_out,
                                    float* __restrict__ out, float* __restrict__ lse,
                                    float* __restrict__ gamma) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  using namespace flashptx::softmax;
  RowState<kDV> st;
  row_init(st);
  const size_t L = static_cast<size_t>(blocks) * block_len;
  for (int j = 0; j < blocks; ++j) {
    const size_t e0 = row * L + static_cast<size_t>(j) * block_len;
    gamma[static_cast<size_t>(row) * blocks + j] =
        row_update(st, s + e0, v + e0 * kDV, block_len, lambda, tau, omega);
  }
  uint32_t* so = state_out + static_cast<size_t>(row) * (3 + kDV);
  so[0] = flashptx::exp2emu::f2u(st.a);
  so[1] = flashptx::exp2emu::f2u(st.D);
  for (int d = 0; d < kDV; ++d) so[2 + d] = flashptx::exp2emu::f2u(st.N[d]);
  so[2 + kDV] = static_cast<uint32_t>(st.rescales);
  row_finalize(st, out + static_cast<size_t>(row) * kDV);
  lse[row] = row_lse(st, lambda, omega);
}

__global__ void e4m3_encode_kernel(const float* __restrict__ x, uint8_t* __restrict__ ours,
                                   uint8_t* __restrict__ hw, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  ours[i] = flashptx::e4m3::encode(x[i]);
  hw[i] = static_cast<uint8_t>(__nv_cvt_float_to_fp8(x[i], __NV_SATFINITE, __NV_E4M3));
}

int grid_for(int n, int threads) { return (n + threads - 1) / threads; }

}  // namespace kernels
using namespace kernels;

cudaError_t launch_exp2_degree3(const float* x, uint32_t* bits, int n) {
  if (n > 0) exp2_degree3_kernel<<<grid_for(n, 256), 256>>>(x, bits, n);
  return cudaGetLastError();
}

cudaError_t launch_rescale_rows(const float* s, const float* v, int rows, int blocks, int block_len,
                                float lambda, float tau, float omega, uint32_t* state_out,
                                float* out, float* lse, float* gamma) {
  if (rows > 0)
    rescale_rows_kernel<<<grid_for(rows, 64), 64>>>(s, v, rows, blocks, block_len, lambda, tau,
                                                    omega, state_out, out, lse, gamma);
  return cudaGetLastError();
}

cudaError_t launch_e4m3_encode(const float* x, uint8_t* ours, uint8_t* hw, int n) {
  if (n > 0) e4m3_encode_kernel<<<grid_for(n, 256), 256>>>(x, ours, hw, n);
  return cudaGetLastError();
}

}  // namespace flashptx_test::numerics
