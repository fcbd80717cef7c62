// Launchers of the TMA / bulk-copy test kernels (tests/kernels/prim_tma.cu). Each returns the
// launch's error (cudaGetLastError); the caller synchronises and checks. Device pointers.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace flashptx_test::prim {

struct TmaCoords { int32_t c[5]; };  // element coordinates, innermost first (unused ranks ignored)

// Largest box (bytes) the TMA kernels accept (dynamic shared memory is box + 1024 for alignment).
constexpr uint32_t kTmaMaxBoxBytes = 32 * 1024;

// One tensor-tile load (rank 2..5) of `box_bytes` into a 1024-byte-aligned shared tile; the raw tile
// (swizzled as it landed) is copied to `out_raw`.
cudaError_t launch_tma_load(const CUtensorMap& map, int rank, TmaCoords coords, uint32_t box_bytes,
                            void* out_raw);

// `image` (box_bytes, already in the swizzled shared-memory layout) is copied into a 1024-byte-
// aligned shared tile, then stored to the tensor (rank 2..4), or, with reduce_add (rank 2 only),
// added to it (global += tile).
cudaError_t launch_tma_store(const CUtensorMap& map, int rank, TmaCoords coords, uint32_t box_bytes,
                             const void* image, bool reduce_add);

// Non-tensor bulk copies: kBulkCtas CTAs, kBulkFloats floats each. CTA c: copy1[c] = src[c] by
// cp.async.bulk store, acc += src[c] by cp.reduce.async.bulk add.f32 (all CTAs onto the same acc),
// then after wait_group.read overwrites its shared source with -src[c] and stores it to copy2[c].
constexpr int kBulkCtas = 8;
constexpr int kBulkFloats = 1024;
cudaError_t launch_bulk(const float* src, float* copy1, float* copy2, float* acc);

}  // namespace flashptx_test::prim
