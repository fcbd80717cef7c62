// The C ABI (include/flashptx.h): validation, the device check, dispatch.
//
// Every rejection names its reason in a message kept per host thread (flashptx_last_error) and
// launches nothing. Validation is pure host code (no CUDA call) so that it is testable anywhere;
// the device check and the launch come after it.
#include "flashptx.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "src/sm90/fa3_fwd.h"

namespace {

thread_local std::string g_last_error;

flashptx_status fail(flashptx_status s, std::string msg) {
  g_last_error = std::string(flashptx_status_name(s)) + ": " + std::move(msg);
  return s;
}
flashptx_status ok() {
  g_last_error.clear();
  return FLASHPTX_OK;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The strides of one [batch, seqlen, heads, d] tensor: non-negative, non-zero where the extent is
// above one, every row 16-byte aligned (a multiple of 8 two-byte elements).
flashptx_status check_strides(const char* name, int64_t batch, int64_t seqlen, int64_t heads, int64_t d,
                              int64_t sb, int64_t ss, int64_t sh, bool must_not_overlap) {
  const int64_t extent[3] = {batch, seqlen, heads};
  const int64_t stride[3] = {sb, ss, sh};
  const char* what[3] = {"batch", "row", "head"};
  for (int i = 0; i < 3; ++i) {
    if (stride[i] < 0)
      return fail(FLASHPTX_ERR_BAD_STRIDES, std::string(name) + " " + what[i] + " stride is negative");
    if (extent[i] > 1 && stride[i] == 0)
      return fail(FLASHPTX_ERR_BAD_STRIDES, std::string(name) + " " + what[i] + " stride is 0 (broadcast is not supported)");
    if (extent[i] > 1 && stride[i] % 8 != 0)
      return fail(FLASHPTX_ERR_MISALIGNED, std::string(name) + " " + what[i] + " stride " + std::to_string(stride[i]) +
                                               " is not a multiple of 8 elements (16 bytes)");
    if (extent[i] > 1 && stride[i] >= (int64_t(1) << 39))
      return fail(FLASHPTX_ERR_BAD_STRIDES, std::string(name) + " " + what[i] + " stride is 2^39 elements or more");
  }
  if (must_not_overlap) {
    // Sufficient condition for distinct (b, s, h) rows never to share an element: sorted by stride,
    // each stride covers the previous stride times its extent (the innermost row is d elements).
    struct Dim { int64_t stride, extent; };
    Dim dims[3] = {{sb, batch}, {ss, seqlen}, {sh, heads}};
    std::sort(dims, dims + 3, [](const Dim& a, const Dim& b) { return a.stride < b.stride; });
    int64_t covered = d;
    for (const Dim& x : dims) {
      if (x.extent <= 1) continue;
      if (x.stride < covered)
        return fail(FLASHPTX_ERR_BAD_STRIDES, std::string(name) + " strides make rows overlap (a stride of " +
                                                  std::to_string(x.stride) + " inside a span of " +
                                                  std::to_string(covered) + " elements)");
      covered = x.stride * x.extent;
    }
  }
  return FLASHPTX_OK;
}

}  // namespace

extern "C" {

const char* flashptx_last_error(void) { return g_last_error.c_str(); }

const char* flashptx_status_name(flashptx_status s) {
  switch (s) {
    case FLASHPTX_OK: return "FLASHPTX_OK";
    case FLASHPTX_ERR_NULL_POINTER: return "FLASHPTX_ERR_NULL_POINTER";
    case FLASHPTX_ERR_MISALIGNED: return "FLASHPTX_ERR_MISALIGNED";
    case FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM: return "FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM";
    case FLASHPTX_ERR_UNSUPPORTED_DTYPE: return "FLASHPTX_ERR_UNSUPPORTED_DTYPE";
    case FLASHPTX_ERR_DTYPE_MISMATCH: return "FLASHPTX_ERR_DTYPE_MISMATCH";
    case FLASHPTX_ERR_BAD_STRIDES: return "FLASHPTX_ERR_BAD_STRIDES";
    case FLASHPTX_ERR_BAD_HEADS: return "FLASHPTX_ERR_BAD_HEADS";
    case FLASHPTX_ERR_BAD_SHAPE: return "FLASHPTX_ERR_BAD_SHAPE";
    case FLASHPTX_ERR_UNSUPPORTED_DEVICE: return "FLASHPTX_ERR_UNSUPPORTED_DEVICE";
    case FLASHPTX_ERR_CUDA: return "FLASHPTX_ERR_CUDA";
    case FLASHPTX_ERR_NULL_PARAMS: return "FLASHPTX_ERR_NULL_PARAMS";
  }
  return "FLASHPTX_ERR_UNKNOWN";
}

void flashptx_fwd_params_contiguous(flashptx_fwd_params* p, const void* q, const void* k, const void* v, void* o,
                                    float* lse, int64_t batch, int64_t seqlen_q, int64_t seqlen_k, int64_t heads_q,
                                    int64_t heads_kv, int64_t head_dim, flashptx_dtype dtype, int causal) {
  *p = flashptx_fwd_params{};
  p->q = q; p->k = k; p->v = v; p->o = o; p->lse = lse;
  p->batch = batch; p->seqlen_q = seqlen_q; p->seqlen_k = seqlen_k;
  p->heads_q = heads_q; p->heads_kv = heads_kv; p->head_dim = head_dim;
  p->q_row_stride = p->o_row_stride = heads_q * head_dim;
  p->q_head_stride = p->o_head_stride = head_dim;
  p->q_batch_stride = p->o_batch_stride = seqlen_q * heads_q * head_dim;
  p->k_row_stride = p->v_row_stride = heads_kv * head_dim;
  p->k_head_stride = p->v_head_stride = head_dim;
  p->k_batch_stride = p->v_batch_stride = seqlen_k * heads_kv * head_dim;
  p->q_dtype = p->k_dtype = p->v_dtype = p->o_dtype = dtype;
  p->causal = causal;
  p->softmax_scale = 0.f;
}

flashptx_status flashptx_fwd_check(const flashptx_fwd_params* p) {
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  if (p->batch < 0 || p->seqlen_q < 0 || p->seqlen_k < 0 || p->heads_q < 0 || p->heads_kv < 0 || p->head_dim < 0)
    return fail(FLASHPTX_ERR_BAD_SHAPE, "a size is negative");
  if (!std::isfinite(p->softmax_scale) || p->softmax_scale < 0.f)
    return fail(FLASHPTX_ERR_BAD_SHAPE, "softmax_scale must be finite and positive (0 selects 1/sqrt(d))");
  if (p->batch == 0 || p->seqlen_q == 0) return ok();  // nothing to compute

  if (p->q_dtype != FLASHPTX_BF16 && p->q_dtype != FLASHPTX_FP16)
    return fail(FLASHPTX_ERR_UNSUPPORTED_DTYPE, "q dtype must be FLASHPTX_BF16 or FLASHPTX_FP16");
  if (p->k_dtype != p->q_dtype || p->v_dtype != p->q_dtype || p->o_dtype != p->q_dtype)
    return fail(FLASHPTX_ERR_DTYPE_MISMATCH, "q, k, v and o must share one dtype");
  if (p->head_dim != 64 && p->head_dim != 128 && p->head_dim != 256)
    return fail(FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM,
                "head_dim " + std::to_string(p->head_dim) + " is not one of 64, 128, 256");
  if (p->heads_q <= 0 || p->heads_kv <= 0 || p->heads_q % p->heads_kv != 0)
    return fail(FLASHPTX_ERR_BAD_HEADS, "heads_q (" + std::to_string(p->heads_q) +
                                            ") must be a positive multiple of heads_kv (" +
                                            std::to_string(p->heads_kv) + ")");
  if (p->q == nullptr || p->k == nullptr || p->v == nullptr || p->o == nullptr)
    return fail(FLASHPTX_ERR_NULL_POINTER, "q, k, v and o must be non-NULL");
  if (!aligned16(p->q) || !aligned16(p->k) || !aligned16(p->v) || !aligned16(p->o))
    return fail(FLASHPTX_ERR_MISALIGNED, "q, k, v and o must be 16-byte aligned");
  if (p->lse != nullptr && reinterpret_cast<uintptr_t>(p->lse) % 4 != 0)
    return fail(FLASHPTX_ERR_MISALIGNED, "lse must be 4-byte aligned");
  const int64_t kMaxInt = 0x7fffffff;
  if (p->seqlen_q > kMaxInt - 256 || p->seqlen_k > kMaxInt - 256 || p->heads_q > 65535 || p->batch > kMaxInt)
    return fail(FLASHPTX_ERR_BAD_SHAPE, "seqlen must stay below 2^31 - 256, heads_q below 65536");
  if ((p->seqlen_q + 63) / 64 * p->heads_q * p->batch > kMaxInt)
    return fail(FLASHPTX_ERR_BAD_SHAPE, "too many output tiles for one grid (2^31 - 1)");

  flashptx_status s;
  const int64_t d = p->head_dim;
  if ((s = check_strides("q", p->batch, p->seqlen_q, p->heads_q, d, p->q_batch_stride, p->q_row_stride,
                         p->q_head_stride, false)) != FLASHPTX_OK) return s;
  if ((s = check_strides("k", p->batch, p->seqlen_k, p->heads_kv, d, p->k_batch_stride, p->k_row_stride,
                         p->k_head_stride, false)) != FLASHPTX_OK) return s;
  if ((s = check_strides("v", p->batch, p->seqlen_k, p->heads_kv, d, p->v_batch_stride, p->v_row_stride,
                         p->v_head_stride, false)) != FLASHPTX_OK) return s;
  if ((s = check_strides("o", p->batch, p->seqlen_q, p->heads_q, d, p->o_batch_stride, p->o_row_stride,
                         p->o_head_stride, true)) != FLASHPTX_OK) return s;
  return ok();
}

static flashptx_status check_device() {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return fail(FLASHPTX_ERR_UNSUPPORTED_DEVICE, std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")");
  }
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
    cudaGetLastError();
    return fail(FLASHPTX_ERR_UNSUPPORTED_DEVICE, "cannot read the device's compute capability");
  }
  if (major != 9 || minor != 0)
    return fail(FLASHPTX_ERR_UNSUPPORTED_DEVICE, "device " + std::to_string(dev) + " is sm_" + std::to_string(major) +
                                                     std::to_string(minor) + "; the forward kernels are sm_90a (Hopper)");
  return FLASHPTX_OK;
}

static flashptx_status fwd_impl(const flashptx_fwd_params* p, cudaStream_t stream, uint64_t* trace, bool traced) {
  flashptx_status s = flashptx_fwd_check(p);
  if (s != FLASHPTX_OK) return s;
  if (p->batch == 0 || p->seqlen_q == 0) return ok();
  if ((s = check_device()) != FLASHPTX_OK) return s;
  std::string err;
  s = flashptx::fa3::launch_fwd(*p, stream, trace, traced, &err);
  if (s != FLASHPTX_OK) return fail(s, err);
  return ok();
}

flashptx_status flashptx_fwd(const flashptx_fwd_params* p, cudaStream_t stream) {
  return fwd_impl(p, stream, nullptr, false);
}

// The instrumented forward behind `flashptx trace` (src/trace_api.h): bf16, head dim 128 only.
flashptx_status flashptx_fwd_traced(const flashptx_fwd_params* p, uint64_t* device_trace_buffer, cudaStream_t stream) {
  if (p != nullptr && (p->head_dim != 128 || p->q_dtype != FLASHPTX_BF16))
    return fail(FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, "the traced build exists for bf16, head_dim 128 only");
  if (device_trace_buffer == nullptr) return fail(FLASHPTX_ERR_NULL_POINTER, "trace buffer is NULL");
  return fwd_impl(p, stream, device_trace_buffer, true);
}

flashptx_status flashptx_fwd_kernel_info(const flashptx_fwd_params* p, flashptx_kernel_info* info) {
  flashptx_status s = flashptx_fwd_check(p);
  if (s != FLASHPTX_OK) return s;
  if (info == nullptr) return fail(FLASHPTX_ERR_NULL_POINTER, "info is NULL");
  const flashptx::fa3::KernelDesc* k = flashptx::fa3::find_kernel(*p);
  if (!k) return fail(FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, "no kernel for this head dim and dtype");
  info->symbol = k->symbol;
  info->threads = k->threads;
  info->shared_bytes = k->smem_bytes;
  info->registers = 0;
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, k->fn) == cudaSuccess) {
    info->registers = attr.numRegs;
    info->shared_bytes = k->smem_bytes + static_cast<int>(attr.sharedSizeBytes);
  } else {
    cudaGetLastError();
  }
  info->ctas = static_cast<int>((p->seqlen_q + k->block_m - 1) / k->block_m * p->heads_q * p->batch);
  return ok();
}

}  // extern "C"
