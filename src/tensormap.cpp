// cuTensorMapEncodeTiled through cudaGetDriverEntryPointByVersion (no -lcuda link).
#include "src/tensormap.h"

#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include <mutex>

namespace flashptx {

static PFN_cuTensorMapEncodeTiled_v12000 encode_fn(std::string* err) {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static std::once_flag once;
  static std::string why;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || p == nullptr) {
      why = std::string("cuTensorMapEncodeTiled entry point not found (") + cudaGetErrorString(e) + ")";
      cudaGetLastError();
      return;
    }
    fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  });
  if (!fn && err) *err = why;
  return fn;
}

bool encode_tensor_map(CUtensorMap* map, CUtensorMapDataType dtype, int rank, const void* base,
                       const uint64_t* dims, const uint64_t* strides_bytes, const uint32_t* box,
                       CUtensorMapSwizzle swizzle, std::string* err) {
  if (rank < 1 || rank > 5) { if (err) *err = "tensor map rank must be 1..5"; return false; }
  if (reinterpret_cast<uintptr_t>(base) % 16 != 0) { if (err) *err = "tensor map base not 16-byte aligned"; return false; }
  for (int i = 0; i + 1 < rank; ++i) {
    if (strides_bytes[i] % 16 != 0 || strides_bytes[i] >= (uint64_t(1) << 40)) {
      if (err) *err = "tensor map stride " + std::to_string(i + 1) + " (" + std::to_string(strides_bytes[i]) +
                      " bytes) is not a multiple of 16 below 2^40";
      return false;
    }
  }
  PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn(err);
  if (!fn) return false;
  cuuint64_t d[5];
  cuuint64_t s[4];
  cuuint32_t b[5];
  cuuint32_t es[5];
  for (int i = 0; i < rank; ++i) { d[i] = dims[i]; b[i] = box[i]; es[i] = 1; }
  for (int i = 0; i + 1 < rank; ++i) s[i] = strides_bytes[i];
  auto encode = [&] {
    return fn(map, dtype, static_cast<cuuint32_t>(rank), const_cast<void*>(base), d, s, b, es,
              CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  };
  CUresult r = encode();
  if (r == CUDA_ERROR_INVALID_CONTEXT) {
    // A driver call, and no context is current on this thread: a thread that has made no CUDA
    // runtime call yet (PyTorch's autograd worker thread, when its allocations came from the
    // caching allocator's pool). The runtime binds its device's primary context to the calling
    // thread on cudaSetDevice (CUDA Runtime API, "Device Management"): bind it, encode again.
    int dev = 0;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaSetDevice(dev) == cudaSuccess) r = encode();
    cudaGetLastError();
  }
  if (r != CUDA_SUCCESS) {
    if (err) *err = "cuTensorMapEncodeTiled failed with CUresult " + std::to_string(static_cast<int>(r));
    return false;
  }
  return true;
}

bool encode_bshd(CUtensorMap* map, CUtensorMapDataType dtype, const void* ptr, int64_t batch, int64_t seqlen,
                 int64_t heads, int64_t d, int64_t sb, int64_t ss, int64_t sh, uint32_t box_rows, std::string* err) {
  const uint64_t esz = 2;
  uint64_t dims[4] = {static_cast<uint64_t>(d), static_cast<uint64_t>(seqlen), static_cast<uint64_t>(heads),
                      static_cast<uint64_t>(batch)};
  uint64_t strides[3] = {static_cast<uint64_t>(ss) * esz, static_cast<uint64_t>(sh) * esz,
                         static_cast<uint64_t>(sb) * esz};
  if (seqlen == 1) strides[0] = static_cast<uint64_t>(d) * esz;
  if (heads == 1) strides[1] = strides[0] * static_cast<uint64_t>(seqlen);
  if (batch == 1) strides[2] = strides[1] * static_cast<uint64_t>(heads);
  uint32_t box[4] = {64, box_rows, 1, 1};
  return encode_tensor_map(map, dtype, 4, ptr, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B, err);
}

}  // namespace flashptx
