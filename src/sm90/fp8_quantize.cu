// flashptx_quantize_fp8 (include/flashptx.h): bf16/fp16 -> e4m3 with fp32 descales, optionally after
// a block Walsh-Hadamard rotation over head_dim. Memory-bound; two kernels (one per input dtype),
// every granularity and head dim a run-time value.
//
// Work: a CTA of 256 threads owns 128 rows of one (batch, head); grid (blocks per head, heads,
// batch). Each thread owns 16 contiguous elements of a row (two 16-byte loads, one 16-byte store of
// e4m3), so head_dim / 16 adjacent lanes hold a row and a warp covers 2 (d256) to 8 (d64) rows at
// once; the row loops are unrolled by two, so a thread has four 16-byte loads in flight.
//
// The rotation: an in-place fast Walsh-Hadamard transform, strides 1, 2, 4, 8 inside the thread,
// 16 .. n/2 across lanes (shfl.bfly, partner lane ^ stride/16); at every stride the lower element
// becomes a + b and the upper a - b; then a multiply by 1/sqrt(n) (rounded to fp32 on the host). fp32
// throughout, the intrinsics _rn so that nothing contracts: the host reference repeats the same steps.
//
// Modes (the launch's `mode`):
//   kAmaxAtomic  per tensor and per head, first launch: the CTA's amax / 448 into its group's descale
//                slot (descale[0], or descale[batch * heads + head]) by atomicMax on the float bits
//                (the slots zeroed before; non-negative floats order as their bits).
//   kQuantize    per tensor and per head, second launch: quantize with the slot's descale.
//   kGroup       per block: the CTA reads its block once for amax (block reduction), writes its
//                descale, then reads it again (from L2) and quantizes.
// Why these passes and not others: docs/DECISIONS.md, "FP8 quantize: streaming passes".
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ptx/cvt.cuh"
#include "src/sm90/fp8_quantize.h"

namespace flashptx::fp8q {

constexpr int kThreads = 256;
constexpr float kE4m3Max = 448.0f;
enum Mode : int { kAmaxAtomic = 0, kQuantize = 1, kGroup = 2 };

struct Params {
  const uint16_t* in;
  uint8_t* out;
  float* descale;
  int64_t in_sb, in_ss, in_sh;
  int64_t out_sb, out_ss, out_sh;
  int seqlen, heads, head_dim;
  int hadamard_block;    // 0: none
  float hadamard_scale;  // fp32(1 / sqrt(hadamard_block))
  int slot_per_head;     // kAmaxAtomic / kQuantize: the descale slot is batch * heads + head (else 0)
  int mode;
};

constexpr int kGroupRows = 128;  // FLASHPTX_FP8_SCALE_BLOCK_ROWS: the rows of one CTA

template <bool kBf16>
__device__ __forceinline__ float to_float(uint32_t bits16) {
  if constexpr (kBf16) return __uint_as_float(bits16 << 16);
  else return __half2float(__ushort_as_half(static_cast<unsigned short>(bits16)));
}

// Loads the thread's 16 elements of row `row` (zeros past the group: the lanes still take part in the
// shuffles) and applies the rotation.
template <bool kBf16>
__device__ __forceinline__ void load_rotated(const Params& p, int b, int h, int row, bool valid, int col,
                                             float (&y)[16]) {
  uint4 v[2] = {make_uint4(0, 0, 0, 0), make_uint4(0, 0, 0, 0)};
  if (valid) {
    const uint4* src = reinterpret_cast<const uint4*>(p.in + b * p.in_sb + row * p.in_ss + h * p.in_sh + col);
    v[0] = src[0];
    v[1] = src[1];
  }
  const uint32_t w[8] = {v[0].x, v[0].y, v[0].z, v[0].w, v[1].x, v[1].y, v[1].z, v[1].w};
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    y[2 * i] = to_float<kBf16>(w[i] & 0xFFFFu);
    y[2 * i + 1] = to_float<kBf16>(w[i] >> 16);
  }
  const int n = p.hadamard_block;
  if (n == 0) return;
#pragma unroll
  for (int s = 1; s < 16; s <<= 1) {
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      if (i & s) continue;
      const float a = y[i], c = y[i + s];
      y[i] = __fadd_rn(a, c);
      y[i + s] = __fsub_rn(a, c);
    }
  }
  for (int s = 16; s < n; s <<= 1) {
    const bool upper = (col & s) != 0;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const float other = __shfl_xor_sync(0xFFFFFFFFu, y[i], s >> 4);
      y[i] = upper ? __fsub_rn(other, y[i]) : __fadd_rn(y[i], other);
    }
  }
#pragma unroll
  for (int i = 0; i < 16; ++i) y[i] = __fmul_rn(y[i], p.hadamard_scale);
}

__device__ __forceinline__ float block_max(float m, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) red[warp] = m;
  __syncthreads();
  m = red[0];
#pragma unroll
  for (int w = 1; w < kThreads / 32; ++w) m = fmaxf(m, red[w]);
  return m;
}

template <bool kBf16>
__device__ __forceinline__ void quantize_body(const Params& p) {
  __shared__ float red[kThreads / 32];
  const int b = blockIdx.z, h = blockIdx.y;
  const int threads_per_row = p.head_dim >> 4;
  const int rows_per_iter = kThreads / threads_per_row;
  const int row_in = threadIdx.x / threads_per_row;
  const int col = (threadIdx.x % threads_per_row) * 16;
  const int row_begin = blockIdx.x * kGroupRows;
  const int row_end = min(row_begin + kGroupRows, p.seqlen);
  const int64_t slot = p.slot_per_head ? static_cast<int64_t>(b) * p.heads + h : 0;
  float y[16];

  float descale = 0.f;
  if (p.mode != kQuantize) {
    float amax = 0.f;
#pragma unroll 2
    for (int r0 = row_begin; r0 < row_end; r0 += rows_per_iter) {
      const int row = r0 + row_in;
      load_rotated<kBf16>(p, b, h, row, row < row_end, col, y);
#pragma unroll
      for (int i = 0; i < 16; ++i) amax = fmaxf(amax, fabsf(y[i]));
    }
    amax = block_max(amax, red);
    descale = __fdiv_rn(amax, kE4m3Max);
    if (p.mode == kAmaxAtomic) {
      if (threadIdx.x == 0) atomicMax(reinterpret_cast<unsigned int*>(p.descale + slot), __float_as_uint(descale));
      return;
    }
    if (threadIdx.x == 0) p.descale[(static_cast<int64_t>(b) * p.heads + h) * gridDim.x + blockIdx.x] = descale;
  } else {
    descale = p.descale[slot];
  }

  // One correctly rounded reciprocal per CTA (capped at FLT_MAX: a zero element of a group with a
  // tiny amax stays 0, not 0 * inf), then one multiply per element; the host reference
  // (tools/support/fp8_quant_ref.cpp) does the same. An IEEE division per element (a reciprocal,
  // two Newton steps, a range check) left the per-block and rotated modes issue-bound.
  const float scale = descale > 0.f ? fminf(__frcp_rn(descale), 3.40282347e38f) : 0.f;
#pragma unroll 2
  for (int r0 = row_begin; r0 < row_end; r0 += rows_per_iter) {
    const int row = r0 + row_in;
    const bool valid = row < row_end;
    load_rotated<kBf16>(p, b, h, row, valid, col, y);
    uint32_t packed[8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
      packed[i] = ptx::cvt_rn_satfinite_e4m3x2_f32(__fmul_rn(y[2 * i], scale), __fmul_rn(y[2 * i + 1], scale));
    if (valid) {
      uint4* dst = reinterpret_cast<uint4*>(p.out + b * p.out_sb + row * p.out_ss + h * p.out_sh + col);
      dst[0] = make_uint4(packed[0] | (packed[1] << 16), packed[2] | (packed[3] << 16),
                          packed[4] | (packed[5] << 16), packed[6] | (packed[7] << 16));
    }
  }
}

}  // namespace flashptx::fp8q

extern "C" __global__ void __launch_bounds__(flashptx::fp8q::kThreads)
    fp8_quantize_sm90_bf16(const __grid_constant__ flashptx::fp8q::Params p) {
  flashptx::fp8q::quantize_body<true>(p);
}
extern "C" __global__ void __launch_bounds__(flashptx::fp8q::kThreads)
    fp8_quantize_sm90_fp16(const __grid_constant__ flashptx::fp8q::Params p) {
  flashptx::fp8q::quantize_body<false>(p);
}

namespace flashptx {

flashptx_status launch_quantize_fp8(const flashptx_quantize_fp8_params& q, cudaStream_t stream, std::string* msg) {
  fp8q::Params p{};
  p.in = static_cast<const uint16_t*>(q.in);
  p.out = static_cast<uint8_t*>(q.out);
  p.descale = q.descale;
  p.in_sb = q.in_batch_stride; p.in_ss = q.in_row_stride; p.in_sh = q.in_head_stride;
  p.out_sb = q.out_batch_stride; p.out_ss = q.out_row_stride; p.out_sh = q.out_head_stride;
  p.seqlen = static_cast<int>(q.seqlen);
  p.heads = static_cast<int>(q.heads);
  p.head_dim = static_cast<int>(q.head_dim);
  p.hadamard_block = q.hadamard_block;
  p.hadamard_scale = q.hadamard_block > 0 ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(q.hadamard_block))) : 1.f;
  static_assert(fp8q::kGroupRows == FLASHPTX_FP8_SCALE_BLOCK_ROWS, "a per-block descale is one CTA's rows");
  const bool per_head = q.granularity == FLASHPTX_FP8_SCALE_PER_HEAD;
  p.slot_per_head = per_head ? 1 : 0;
  const dim3 grid(static_cast<unsigned>((q.seqlen + fp8q::kGroupRows - 1) / fp8q::kGroupRows),
                  static_cast<unsigned>(q.heads), static_cast<unsigned>(q.batch));
  auto kernel = q.in_dtype == FLASHPTX_BF16 ? fp8_quantize_sm90_bf16 : fp8_quantize_sm90_fp16;
  cudaError_t e = cudaSuccess;
  if (q.granularity == FLASHPTX_FP8_SCALE_PER_TENSOR || per_head) {
    const size_t slots = per_head ? static_cast<size_t>(q.batch * q.heads) : 1;
    if ((e = cudaMemsetAsync(q.descale, 0, slots * sizeof(float), stream)) != cudaSuccess) {
      *msg = std::string("cudaMemsetAsync(descale): ") + cudaGetErrorString(e);
      return FLASHPTX_ERR_CUDA;
    }
    p.mode = fp8q::kAmaxAtomic;
    kernel<<<grid, fp8q::kThreads, 0, stream>>>(p);
    if ((e = cudaGetLastError()) != cudaSuccess) {
      *msg = std::string("launch of the amax pass: ") + cudaGetErrorString(e);
      return FLASHPTX_ERR_CUDA;
    }
    p.mode = fp8q::kQuantize;
  } else {
    p.mode = fp8q::kGroup;
  }
  kernel<<<grid, fp8q::kThreads, 0, stream>>>(p);
  if ((e = cudaGetLastError()) != cudaSuccess) {
    *msg = std::string("launch of the quantize pass: ") + cudaGetErrorString(e);
    return FLASHPTX_ERR_CUDA;
  }
  return FLASHPTX_OK;
}

}  // namespace flashptx
