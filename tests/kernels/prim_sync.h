// Launchers of the synchronisation-primitive test kernels (tests/kernels/prim_sync.cu): mbarrier,
// named barriers, setmaxnreg. Each returns the launch's error (cudaGetLastError); the caller
// synchronises and checks the result. All pointers are device pointers.
#pragma once
#include <cuda_runtime.h>

namespace flashptx_test::prim {

// mbarrier ping-pong between a producer warp and a consumer warp over kPingGens generations.
constexpr int kPingGens = 10;
// seen/parity/flags: kPingGens * 32 ints each; in: kPingGens * 32 ints.
cudaError_t launch_mbar_pingpong(const int* in, int* seen, int* parity, int* flags);

// mbarrier arrival counting over 3 generations, then inval, reuse as plain memory and re-init.
constexpr int kCountFlags = 32;
cudaError_t launch_mbar_count(int* flags);

// expect_tx: phases that complete only after the announced bytes of bulk copies have landed.
constexpr int kTxChunkBytes = 4096;
constexpr int kTxChunks = 4;
constexpr int kTxFlags = 8;
// src/dst: kTxChunks * kTxChunkBytes bytes, 16-byte aligned.
cudaError_t launch_mbar_expect_tx(const void* src, void* dst, int* flags);

// Named barriers: a producer warpgroup and a consumer warpgroup, kNamedGens generations.
constexpr int kNamedGens = 8;
// in/out: kNamedGens * 128 ints.
cudaError_t launch_named_barrier(const int* in, int* out);

// setmaxnreg producer/consumer: 384 threads; each of the 256 consumer threads reduces 160 values.
constexpr int kRegValues = 160;
// values: 256 * kRegValues floats; scale: 8 floats; out: 256 floats.
cudaError_t launch_setmaxnreg(const float* values, const float* scale, float* out);

}  // namespace flashptx_test::prim
