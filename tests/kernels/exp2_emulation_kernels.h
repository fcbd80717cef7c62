// Launchers of the softmax-numerics test kernels (tests/kernels/exp2_emulation_kernels.cu): the
// degree-3 exp2 emulation, the retained-reference recurrence and the E4M3FN encoder
// (docs/PROTOCOLS.md, "The FA4 roles" and "FP8 layouts") evaluated on the device by the same
// __host__ __device__ code the host oracle runs. Each launcher returns the launch's error
// (cudaGetLastError); the caller synchronises and checks. All pointers are device pointers.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

namespace flashptx_test::numerics {

// bits[i] = bits of flashptx::exp2emu::exp2_degree3(x[i]), i < n.
cudaError_t launch_exp2_degree3(const float* x, uint32_t* bits, int n);

// One thread per row runs flashptx::softmax::row_init / row_update / row_finalize / row_lse over
// `blocks` blocks of `block_len` scores.
constexpr int kDV = 4;
// s: rows * blocks * block_len floats (row-major: row, block, element);
// v: rows * blocks * block_len * kDV floats (row, block, element, d);
// state_out: rows * (3 + kDV) words: bits of a, D, N[0..kDV), then rescale count;
// out: rows * kDV floats; lse: rows floats; gamma: rows * blocks floats.
cudaError_t launch_rescale_rows(const float* s, const float* v, int rows, int blocks, int block_len,
                                float lambda, float tau, float omega, uint32_t* state_out,
                                float* out, float* lse, float* gamma);

// ours[i] = flashptx::e4m3::encode(x[i]); hw[i] = the hardware cvt.rn.satfinite.e4m3x2.f32 code.
cudaError_t launch_e4m3_encode(const float* x, uint8_t* ours, uint8_t* hw, int n);

}  // namespace flashptx_test::numerics
