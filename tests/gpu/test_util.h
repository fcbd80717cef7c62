// Helpers the GPU suites share: CUDA checks, poisoned device buffers, tensor layouts, 16-bit storage.
#pragma once
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <vector>

#include "include/flashptx.h"
#include "tools/support/dtype.h"
#include "tools/sim/cudart/flashptx_sim.h"
#include "tools/support/reference.h"

#define CUDA_REQUIRE(x)                                                                   \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    REQUIRE_MESSAGE(e_ == cudaSuccess, #x " failed: " << cudaGetErrorString(e_));         \
  } while (0)

namespace flashptx_test {

// True when the CUDA device is the PTX simulator (tools/sim/cudart/, build/run_tests_sim): a case
// whose shape a CPU cannot afford takes a smaller one there, and says so. Also true on a GPU run with
// FLASHPTX_TEST_SIM_SHAPES=1, which runs the simulator's cases at the simulator's shapes so that the
// two can be compared copy by copy (tests/gpu/capture.cpp): a case must not call the simulator's own
// API (flashptx_sim_*) on the strength of this alone.
inline bool device_is_simulator() {
  static const bool sim = [] {
    cudaDeviceProp p{};
    const bool ok = cudaGetDeviceProperties(&p, 0) == cudaSuccess && std::strcmp(p.name, FLASHPTX_SIM_DEVICE_NAME) == 0;
    cudaGetLastError();
    return ok;
  }();
  return sim;
}
inline bool on_simulator() {
  const char* e = std::getenv("FLASHPTX_TEST_SIM_SHAPES");
  return (e && std::strcmp(e, "1") == 0) || device_is_simulator();
}

// True on a GPU run at the simulator's shapes (FLASHPTX_TEST_SIM_SHAPES=1): what depends on the SM
// count (the plan's schedule for those shapes) is not the simulator's there.
inline bool sim_shapes_on_gpu() { return on_simulator() && !device_is_simulator(); }

// The fp64 references are the suites' host cost (one thread does about 10^8 multiply-adds a second):
// fn(t, n) runs on n threads (the host's cores, at most 16), t = 0 .. n - 1, the calling thread
// taking t = 0; each takes the items t, t + n, ... of its work, so that the result does not depend on n.
template <class Fn>
void on_host_threads(Fn fn) {
  const size_t n = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 16);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; ++t) pool.emplace_back(fn, t, n);
  fn(size_t{0}, n);
  for (std::thread& th : pool) th.join();
}

constexpr uint16_t kPoison = 0xFFFF;  // NaN in both bf16 and fp16
constexpr int64_t kGuard = 4096;      // elements after each output that must stay poisoned

// [batch, seqlen, heads, d] with: contiguous rows; rows padded by 8 elements and batches by 64
// (strides that are not the dense ones); head-major [batch, heads, seqlen, d].
enum class Layout { kContiguous, kPadded, kHeadMajor };

struct Strides { int64_t b, s, h, total; };
inline Strides make_strides(Layout l, int64_t batch, int64_t seq, int64_t heads, int64_t d) {
  switch (l) {
    case Layout::kPadded: {
      const int64_t hs = d + 8, rs = heads * hs, bs = seq * rs + 64;
      return {bs, rs, hs, batch * bs};
    }
    case Layout::kHeadMajor: {
      const int64_t rs = d, hs = seq * d, bs = heads * seq * d;
      return {bs, rs, hs, batch * bs};
    }
    default: {
      const int64_t rs = heads * d, bs = seq * rs;
      return {bs, rs, d, batch * bs};
    }
  }
}
inline const char* layout_name(Layout l) {
  return l == Layout::kPadded ? " padded" : l == Layout::kHeadMajor ? " head-major" : "";
}

inline uint16_t to_storage(flashptx_dtype t, float x) {
  return t == FLASHPTX_BF16 ? flashptx::float_to_bf16(x) : flashptx::float_to_fp16(x);
}
inline float from_storage(flashptx_dtype t, uint16_t x) {
  return t == FLASHPTX_BF16 ? flashptx::bf16_to_float(x) : flashptx::fp16_to_float(x);
}

// The fp64 reference's description of a problem, and its view of a host copy of a 16-bit tensor.
inline flashptx::ref::Problem ref_problem(int64_t batch, int64_t sq, int64_t sk, int64_t hq, int64_t hkv,
                                          int64_t d, bool causal, float softmax_scale) {
  return flashptx::ref::problem(batch, sq, sk, hq, hkv, d, causal, softmax_scale);
}
inline flashptx::ref::TensorView ref_view(const std::vector<uint16_t>& x, flashptx_dtype t, const Strides& st) {
  flashptx::ref::TensorView v;
  v.data = x.data();
  v.type = t == FLASHPTX_BF16 ? flashptx::ref::Elem::kBF16 : flashptx::ref::Elem::kFP16;
  v.batch_stride = st.b; v.row_stride = st.s; v.head_stride = st.h;
  return v;
}

struct DeviceBuf {
  void* p = nullptr;
  size_t bytes = 0;
  explicit DeviceBuf(size_t n) : bytes(n) {
    cudaError_t e = cudaMalloc(&p, n > 0 ? n : 16);
    REQUIRE_MESSAGE(e == cudaSuccess, "cudaMalloc(" << n << "): " << cudaGetErrorString(e));
  }
  ~DeviceBuf() { if (p) cudaFree(p); }
  DeviceBuf(const DeviceBuf&) = delete;
  DeviceBuf& operator=(const DeviceBuf&) = delete;
};

// The LSE output of a forward: its first `written` floats set (none NaN), and the poisoned guard after
// them (all bits set) untouched. `what` names the case in the messages.
inline void check_lse_writes(const std::vector<float>& lse, int64_t written, const std::string& what) {
  int64_t lse_bad = 0, lse_clobbered = 0;
  for (int64_t i = 0; i < written; ++i)
    if (std::isnan(lse[i])) ++lse_bad;
  for (size_t i = static_cast<size_t>(written); i < lse.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &lse[i], 4);
    if (u != 0xFFFFFFFFu) ++lse_clobbered;
  }
  CHECK_MESSAGE(lse_bad == 0, what << ": " << lse_bad << " LSE values not written");
  CHECK_MESSAGE(lse_clobbered == 0, what << ": " << lse_clobbered << " elements after LSE were written");
}

}  // namespace flashptx_test
