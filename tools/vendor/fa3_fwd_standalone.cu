// Vendoring one kernel: the FA3 forward (bf16, head dim 128) launched with nothing of flashptx but
// the files the README's "Vendoring one kernel" section lists. A host test (tests/host/test_vendoring.cpp)
// copies exactly those files and this one into an empty folder and compiles them there:
//
//   nvcc -std=c++20 -gencode arch=compute_90a,code=sm_90a -I. -c fa3_fwd_standalone.cu
//
// (-gencode, not -arch=sm_90a: with nvcc 13.0 the latter also runs a plain compute_90 pass, where
// wgmma and setmaxnreg do not exist, and the kernel header stops the build with #error.)
#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "src/sm90/fa3_fwd.cuh"
#include "src/tensormap.h"

namespace example {

// The configuration flashptx ships as fa3_fwd_sm90_bf16_d128_n128 (every protocol switch named:
// src/sm90/fa3_fwd_config.h, "the shipped configurations").
constexpr flashptx::fa3::FwdConfig kD128 = flashptx::fa3::kD128N128;
using Layout = flashptx::fa3::FwdLayout<kD128>;

__global__ void __launch_bounds__(Layout::kThreads, 1) fa3_fwd_bf16_d128(const __grid_constant__ flashptx::fa3::FwdParams p) {
  flashptx::fa3::fwd_kernel_body<kD128>(p);
}

// Contiguous [batch, seqlen, heads, 128] bf16 tensors; non-causal; one CTA per SM looping over the
// tiles (the kernel is persistent). Returns an error message, or "" on success.
std::string launch(const void* q, const void* k, const void* v, void* o, float* lse, int batch, int seqlen_q,
                   int seqlen_k, int heads_q, int heads_kv, int sm_count, cudaStream_t stream) {
  using flashptx::encode_bshd;
  flashptx::fa3::FwdParams p{};
  const int64_t d = 128;
  std::string err;
  const bool ok =
      encode_bshd(&p.tma_q, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, q, batch, seqlen_q, heads_q, d, int64_t(seqlen_q) * heads_q * d,
                  heads_q * d, d, Layout::kBlockM, &err) &&
      encode_bshd(&p.tma_k, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, k, batch, seqlen_k, heads_kv, d,
                  int64_t(seqlen_k) * heads_kv * d, heads_kv * d, d, Layout::kBlockN, &err) &&
      encode_bshd(&p.tma_v, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, v, batch, seqlen_k, heads_kv, d,
                  int64_t(seqlen_k) * heads_kv * d, heads_kv * d, d, Layout::kBlockN, &err) &&
      encode_bshd(&p.tma_o, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, o, batch, seqlen_q, heads_q, d, int64_t(seqlen_q) * heads_q * d,
                  heads_q * d, d, 64, &err);
  if (!ok) return err;
  p.lse = lse;
  p.seqlen_q = seqlen_q;
  p.seqlen_k = seqlen_k;
  p.heads_q = heads_q;
  p.heads_kv = heads_kv;
  p.batch = batch;
  p.num_m_blocks = (seqlen_q + Layout::kBlockM - 1) / Layout::kBlockM;
  p.causal = 0;
  p.softmax_scale = 1.f / std::sqrt(128.f);
  p.softmax_scale_log2 = p.softmax_scale * 1.4426950408889634f;
  const int tiles = p.num_m_blocks * heads_q * batch;
  cudaError_t e = cudaFuncSetAttribute(fa3_fwd_bf16_d128, cudaFuncAttributeMaxDynamicSharedMemorySize, Layout::kSmemBytes);
  if (e == cudaSuccess) {
    fa3_fwd_bf16_d128<<<tiles < sm_count ? tiles : sm_count, Layout::kThreads, Layout::kSmemBytes, stream>>>(p);
    e = cudaGetLastError();
  }
  return e == cudaSuccess ? std::string() : std::string(cudaGetErrorString(e));
}

}  // namespace example
