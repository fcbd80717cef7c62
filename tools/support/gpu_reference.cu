// Simple GPU attention reference and random fill: see tools/support/gpu_reference.h.
#include "tools/support/gpu_reference.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace flashptx::gpuref {
// A named namespace (not an anonymous one) so the kernel symbols, and so their golden-SASS file
// names, do not depend on the build path.
namespace detail {

constexpr int kMaxChunks = 8;  // 8 x 32 lanes: head_dim <= 256
constexpr int kWarpsPerBlock = 4;

template <class T> __device__ __forceinline__ float load(const T* p);
template <> __device__ __forceinline__ float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }
template <> __device__ __forceinline__ float load(const __half* p) { return __half2float(*p); }

struct Args {
  const void* q; const void* k; const void* v;
  float* o; float* lse;
  int64_t batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim;
  int64_t qb, qr, qh, kb, kr, kh, vb, vr, vh;
  int causal;
  float scale;
};

// The sum over the warp's 32 lanes, in every lane (butterfly).
__device__ __forceinline__ float warp_sum(float s) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
  return s;
}

template <class T>
__global__ void __launch_bounds__(32 * kWarpsPerBlock) attention_fwd_kernel(Args a) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  const int64_t rows = a.batch * a.seqlen_q * a.heads_q;
  const int64_t group = a.heads_q / a.heads_kv;
  for (int64_t w = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); w < rows; w += warps) {
    const int64_t h = w % a.heads_q;
    const int64_t i = (w / a.heads_q) % a.seqlen_q;
    const int64_t b = w / (a.heads_q * a.seqlen_q);
    const int64_t hk = h / group;
    int64_t last = a.seqlen_k - 1;
    if (a.causal) last = min(last, i + a.seqlen_k - a.seqlen_q);

    const T* q = static_cast<const T*>(a.q) + b * a.qb + i * a.qr + h * a.qh;
    const T* kbase = static_cast<const T*>(a.k) + b * a.kb + hk * a.kh;
    const T* vbase = static_cast<const T*>(a.v) + b * a.vb + hk * a.vh;
    float qv[kMaxChunks], acc[kMaxChunks];
#pragma unroll
    for (int t = 0; t < kMaxChunks; ++t) {
      const int d = lane + 32 * t;
      qv[t] = d < a.head_dim ? load(q + d) : 0.f;
      acc[t] = 0.f;
    }
    float m = -INFINITY, l = 0.f;
    for (int64_t j = 0; j <= last; ++j) {
      const T* kr = kbase + j * a.kr;
      const T* vr = vbase + j * a.vr;
      float s = 0.f;
#pragma unroll
      for (int t = 0; t < kMaxChunks; ++t) {
        const int d = lane + 32 * t;
        if (d < a.head_dim) s += qv[t] * load(kr + d);
      }
      s = warp_sum(s) * a.scale;
      const float m_new = fmaxf(m, s);
      const float corr = expf(m - m_new);  // m = -inf on the first key: corr = 0
      const float p = expf(s - m_new);
      l = l * corr + p;
#pragma unroll
      for (int t = 0; t < kMaxChunks; ++t) {
        const int d = lane + 32 * t;
        acc[t] = acc[t] * corr + (d < a.head_dim ? p * load(vr + d) : 0.f);
      }
      m = m_new;
    }
    float* o = a.o + ((b * a.seqlen_q + i) * a.heads_q + h) * a.head_dim;
    const float inv = last >= 0 ? 1.f / l : 0.f;
#pragma unroll
    for (int t = 0; t < kMaxChunks; ++t) {
      const int d = lane + 32 * t;
      if (d < a.head_dim) o[d] = acc[t] * inv;
    }
    if (a.lse != nullptr && lane == 0)
      a.lse[(b * a.heads_q + h) * a.seqlen_q + i] = last >= 0 ? m + logf(l) : -INFINITY;
  }
}

// Backward, pass 1 (one warp per query row): recompute the row's scores against every visible key
// with the forward's own online softmax (LSE, O in fp32), delta = dO . O, then
// dQ = scale * sum_j P_ij (dP_ij - delta) K_j with P_ij = exp(s_ij - LSE).
struct BwdArgs {
  const void *q, *k, *v, *dout;
  float *dq, *dk, *dv, *lse, *delta;  // dq/dk/dv fp32 contiguous [b, s, h, d]; lse/delta [b, hq, sq]
  int64_t batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim;
  int64_t qb, qr, qh, kb, kr, kh, vb, vr, vh, db, dr, dh;
  int causal;
  float scale;
};

template <class T>
__global__ void __launch_bounds__(32 * kWarpsPerBlock) attention_bwd_rows_kernel(BwdArgs a) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  const int64_t rows = a.batch * a.seqlen_q * a.heads_q;
  const int64_t group = a.heads_q / a.heads_kv;
  for (int64_t w = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); w < rows; w += warps) {
    const int64_t h = w % a.heads_q, i = (w / a.heads_q) % a.seqlen_q, b = w / (a.heads_q * a.seqlen_q);
    const int64_t hk = h / group;
    int64_t last = a.seqlen_k - 1;
    if (a.causal) last = min(last, i + a.seqlen_k - a.seqlen_q);
    const T* q = static_cast<const T*>(a.q) + b * a.qb + i * a.qr + h * a.qh;
    const T* dout = static_cast<const T*>(a.dout) + b * a.db + i * a.dr + h * a.dh;
    const T* kbase = static_cast<const T*>(a.k) + b * a.kb + hk * a.kh;
    const T* vbase = static_cast<const T*>(a.v) + b * a.vb + hk * a.vh;
    float qv[kMaxChunks], dov[kMaxChunks], acc[kMaxChunks];
#pragma unroll
    for (int t = 0; t < kMaxChunks; ++t) {
      const int d = lane + 32 * t;
      qv[t] = d < a.head_dim ? load(q + d) : 0.f;
      dov[t] = d < a.head_dim ? load(dout + d) : 0.f;
      acc[t] = 0.f;
    }
    float m = -INFINITY, l = 0.f;
    for (int64_t j = 0; j <= last; ++j) {
      float s = 0.f;
#pragma unroll
      for (int t = 0; t < kMaxChunks; ++t) {
        const int d = lane + 32 * t;
        if (d < a.head_dim) s += qv[t] * load(kbase + j * a.kr + d);
      }
      s = warp_sum(s) * a.scale;
      const float m_new = fmaxf(m, s), corr = expf(m - m_new), pj = expf(s - m_new);
      l = l * corr + pj;
#pragma unroll
      for (int t = 0; t < kMaxChunks; ++t) {
        const int d = lane + 32 * t;
        acc[t] = acc[t] * corr + (d < a.head_dim ? pj * load(vbase + j * a.vr + d) : 0.f);
      }
      m = m_new;
    }
    const float lse = last >= 0 ? m + logf(l) : -INFINITY;
    float delta = 0.f;
#pragma unroll
    for (int t = 0; t < kMaxChunks; ++t) delta += dov[t] * (last >= 0 ? acc[t] / l : 0.f);
    delta = warp_sum(delta);
#pragma unroll
    for (int t = 0; t < kMaxChunks; ++t) acc[t] = 0.f;  // now dQ
    for (int64_t j = 0; j <= last; ++j) {
      float s = 0.f, dp = 0.f;
#pragma unroll
      for (int t = 0; t < kMaxChunks; ++t) {
        const int d = lane + 32 * t;
        if (d < a.head_dim) {
          s += qv[t] * load(kbase + j * a.kr + d);
          dp += dov[t] * load(vbase + j * a.vr + d);
        }
      }
      s = warp_sum(s) * a.scale;
      dp = warp_sum(dp);
      const float ds = expf(s - lse) * (dp - delta);
#pragma unroll
      for (int t = 0; t < kMaxChunks; ++t) {
        const int d = lane + 32 * t;
        if (d < a.head_dim) acc[t] += a.scale * ds * load(kbase + j * a.kr + d);
      }
    }
    float* dq = a.dq + ((b * a.seqlen_q + i) * a.heads_q + h) * a.head_dim;
#pragma unroll
    for (int t = 0; t < kMaxChunks; ++t) {
      const int d = lane + 32 * t;
      if (d < a.head_dim) dq[d] = acc[t];
    }
    if (lane == 0) {
      a.lse[(b * a.heads_q + h) * a.seqlen_q + i] = lse;
      a.delta[(b * a.heads_q + h) * a.seqlen_q + i] = delta;
    }
  }
}

// Backward, pass 2 (one warp per key row of a kv head): over the query heads of its group and every
// query row that sees the key, dV_j = sum_i P_ij dO_i, dK_j = scale sum_i dS_ij Q_i.
template <class T>
__global__ void __launch_bounds__(32 * kWarpsPerBlock) attention_bwd_keys_kernel(BwdArgs a) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  const int64_t rows = a.batch * a.seqlen_k * a.heads_kv;
  const int64_t group = a.heads_q / a.heads_kv;
  for (int64_t w = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); w < rows; w += warps) {
    const int64_t hk = w % a.heads_kv, j = (w / a.heads_kv) % a.seqlen_k, b = w / (a.heads_kv * a.seqlen_k);
    const T* kr = static_cast<const T*>(a.k) + b * a.kb + j * a.kr + hk * a.kh;
    const T* vr = static_cast<const T*>(a.v) + b * a.vb + j * a.vr + hk * a.vh;
    float kv[kMaxChunks], vv[kMaxChunks], dk[kMaxChunks], dv[kMaxChunks];
#pragma unroll
    for (int t = 0; t < kMaxChunks; ++t) {
      const int d = lane + 32 * t;
      kv[t] = d < a.head_dim ? load(kr + d) : 0.f;
      vv[t] = d < a.head_dim ? load(vr + d) : 0.f;
      dk[t] = dv[t] = 0.f;
    }
    // Rows that see key j: i >= j - (seqlen_k - seqlen_q) under the causal mask.
    const int64_t i0 = a.causal ? max(int64_t(0), j - (a.seqlen_k - a.seqlen_q)) : 0;
    for (int64_t h = hk * group; h < (hk + 1) * group; ++h)
      for (int64_t i = i0; i < a.seqlen_q; ++i) {
        const T* q = static_cast<const T*>(a.q) + b * a.qb + i * a.qr + h * a.qh;
        const T* dout = static_cast<const T*>(a.dout) + b * a.db + i * a.dr + h * a.dh;
        float s = 0.f, dp = 0.f;
#pragma unroll
        for (int t = 0; t < kMaxChunks; ++t) {
          const int d = lane + 32 * t;
          if (d < a.head_dim) {
            s += load(q + d) * kv[t];
            dp += load(dout + d) * vv[t];
          }
        }
        s = warp_sum(s) * a.scale;
        dp = warp_sum(dp);
        const int64_t r = (b * a.heads_q + h) * a.seqlen_q + i;
        const float pij = expf(s - a.lse[r]);
        const float ds = pij * (dp - a.delta[r]);
#pragma unroll
        for (int t = 0; t < kMaxChunks; ++t) {
          const int d = lane + 32 * t;
          if (d < a.head_dim) {
            dv[t] += pij * load(dout + d);
            dk[t] += a.scale * ds * load(q + d);
          }
        }
      }
    float* dko = a.dk + ((b * a.seqlen_k + j) * a.heads_kv + hk) * a.head_dim;
    float* dvo = a.dv + ((b * a.seqlen_k + j) * a.heads_kv + hk) * a.head_dim;
#pragma unroll
    for (int t = 0; t < kMaxChunks; ++t) {
      const int d = lane + 32 * t;
      if (d < a.head_dim) {
        dko[d] = dk[t];
        dvo[d] = dv[t];
      }
    }
  }
}

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__global__ void fill_random_kernel(void* ptr, int64_t n, int dtype, uint64_t seed, float scale) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < n; idx += stride) {
    const uint64_t r = splitmix64(seed * 0x100000001b3ull + static_cast<uint64_t>(idx));
    const float u = static_cast<float>(r >> 40) * (1.0f / 16777216.0f);  // [0, 1), 24 bits
    const float x = (2.f * u - 1.f) * scale;
    if (dtype == FLASHPTX_BF16) static_cast<__nv_bfloat16*>(ptr)[idx] = __float2bfloat16_rn(x);
    else if (dtype == FLASHPTX_FP16) static_cast<__half*>(ptr)[idx] = __float2half_rn(x);
    else static_cast<float*>(ptr)[idx] = x;
  }
}

}  // namespace detail

using namespace detail;

cudaError_t attention_fwd(const flashptx_fwd_params& p, float* o, float* lse, cudaStream_t stream) {
  if (p.head_dim < 1 || p.head_dim > 32 * kMaxChunks) return cudaErrorInvalidValue;
  if (p.heads_kv < 1 || p.heads_q % p.heads_kv != 0) return cudaErrorInvalidValue;
  if (p.q_dtype != p.k_dtype || p.q_dtype != p.v_dtype) return cudaErrorInvalidValue;
  const int64_t rows = p.batch * p.seqlen_q * p.heads_q;
  if (rows == 0) return cudaSuccess;
  Args a{p.q, p.k, p.v, o, lse, p.batch, p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv, p.head_dim,
         p.q_batch_stride, p.q_row_stride, p.q_head_stride, p.k_batch_stride, p.k_row_stride,
         p.k_head_stride, p.v_batch_stride, p.v_row_stride, p.v_head_stride, p.causal,
         p.softmax_scale != 0.f ? p.softmax_scale : 1.0f / sqrtf(static_cast<float>(p.head_dim))};
  const int64_t blocks64 = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const unsigned blocks = static_cast<unsigned>(blocks64 < (1 << 20) ? blocks64 : (1 << 20));
  if (p.q_dtype == FLASHPTX_BF16)
    attention_fwd_kernel<__nv_bfloat16><<<blocks, 32 * kWarpsPerBlock, 0, stream>>>(a);
  else if (p.q_dtype == FLASHPTX_FP16)
    attention_fwd_kernel<__half><<<blocks, 32 * kWarpsPerBlock, 0, stream>>>(a);
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t attention_bwd(const flashptx_bwd_params& p, float* dq, float* dk, float* dv, float* scratch,
                          cudaStream_t stream) {
  if (p.head_dim < 1 || p.head_dim > 32 * kMaxChunks) return cudaErrorInvalidValue;
  if (p.heads_kv < 1 || p.heads_q % p.heads_kv != 0) return cudaErrorInvalidValue;
  if (p.dtype != FLASHPTX_BF16 && p.dtype != FLASHPTX_FP16) return cudaErrorInvalidValue;
  const int64_t nq = p.batch * p.heads_q * p.seqlen_q;
  BwdArgs a{p.q, p.k, p.v, p.dout, dq, dk, dv, scratch, scratch + nq,
            p.batch, p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv, p.head_dim,
            p.q_batch_stride, p.q_row_stride, p.q_head_stride, p.k_batch_stride, p.k_row_stride, p.k_head_stride,
            p.v_batch_stride, p.v_row_stride, p.v_head_stride, p.do_batch_stride, p.do_row_stride, p.do_head_stride,
            p.causal, p.softmax_scale != 0.f ? p.softmax_scale : 1.0f / sqrtf(static_cast<float>(p.head_dim))};
  auto blocks_for = [](int64_t rows) {
    const int64_t b = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
    return static_cast<unsigned>(b < (1 << 20) ? b : (1 << 20));
  };
  const int64_t nk = p.batch * p.seqlen_k * p.heads_kv;
  if (nq > 0) {
    if (p.dtype == FLASHPTX_BF16)
      attention_bwd_rows_kernel<__nv_bfloat16><<<blocks_for(nq), 32 * kWarpsPerBlock, 0, stream>>>(a);
    else
      attention_bwd_rows_kernel<__half><<<blocks_for(nq), 32 * kWarpsPerBlock, 0, stream>>>(a);
  }
  if (nk > 0) {
    if (p.dtype == FLASHPTX_BF16)
      attention_bwd_keys_kernel<__nv_bfloat16><<<blocks_for(nk), 32 * kWarpsPerBlock, 0, stream>>>(a);
    else
      attention_bwd_keys_kernel<__half><<<blocks_for(nk), 32 * kWarpsPerBlock, 0, stream>>>(a);
  }
  return cudaGetLastError();
}

cudaError_t fill_random(void* ptr, int64_t n, flashptx_dtype dtype, uint64_t seed, float scale,
                        cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (dtype != FLASHPTX_BF16 && dtype != FLASHPTX_FP16 && dtype != FLASHPTX_FP32) return cudaErrorInvalidValue;
  const int64_t blocks64 = (n + 255) / 256;
  const unsigned blocks = static_cast<unsigned>(blocks64 < 65536 ? blocks64 : 65536);
  fill_random_kernel<<<blocks, 256, 0, stream>>>(ptr, n, static_cast<int>(dtype), seed, scale);
  return cudaGetLastError();
}

}  // namespace flashptx::gpuref
