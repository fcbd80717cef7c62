// Host-side helpers of the primitive tests (tests/gpu/test_prim_*.cpp only: it includes doctest,
// which never enters a .cu file). A device buffer that frees itself, and checked copies.
#pragma once
#include <doctest/doctest.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace flashptx_test::prim {

#define PRIM_CUDA_REQUIRE(call)                                                             \
  do {                                                                                      \
    const cudaError_t prim_err_ = (call);                                                   \
    INFO(#call);                                                                            \
    REQUIRE_MESSAGE(prim_err_ == cudaSuccess, cudaGetErrorString(prim_err_));               \
  } while (0)

// Runs a launcher (which returns cudaGetLastError) and then synchronises; both must succeed.
#define PRIM_LAUNCH_REQUIRE(call)                                                           \
  do {                                                                                      \
    PRIM_CUDA_REQUIRE(call);                                                                \
    PRIM_CUDA_REQUIRE(cudaDeviceSynchronize());                                             \
  } while (0)

template <typename T>
struct DevBuf {
  T* p = nullptr;
  size_t n = 0;
  explicit DevBuf(size_t count) : n(count) {
    PRIM_CUDA_REQUIRE(cudaMalloc(&p, count * sizeof(T)));
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  ~DevBuf() { if (p) cudaFree(p); }
  size_t bytes() const { return n * sizeof(T); }
  void upload(const std::vector<T>& h) {
    REQUIRE(h.size() == n);
    PRIM_CUDA_REQUIRE(cudaMemcpy(p, h.data(), bytes(), cudaMemcpyHostToDevice));
  }
  // Fills every byte with `byte` (the poison of an output before a run).
  void poison(int byte = 0xA5) { PRIM_CUDA_REQUIRE(cudaMemset(p, byte, bytes())); }
  std::vector<T> download() const {
    std::vector<T> h(n);
    PRIM_CUDA_REQUIRE(cudaMemcpy(h.data(), p, bytes(), cudaMemcpyDeviceToHost));
    return h;
  }
};

inline float f32_from_bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t bits_from_f32(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

}  // namespace flashptx_test::prim
