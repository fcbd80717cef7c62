// Host-side tensor-map encoding for TMA (cuTensorMapEncodeTiled), reached through the runtime's
// driver entry point, so that nothing links -lcuda.
#pragma once
#include <cuda.h>
#include <cstdint>
#include <string>

namespace flashptx {

// Encodes a tiled tensor map of rank 1..5.
//   dims[i]          extent of dimension i in elements, innermost first
//   strides_bytes[i] byte stride of dimension i+1 (rank-1 values; each a multiple of 16, < 2^40)
//   box[i]           box extent in elements (<= 256; box[0]*elemsize <= the swizzle span when swizzled)
// Out-of-bounds boxes read as zeros (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) and are clipped on store.
// Returns false and fills *err (naming the failing argument or the driver's result) on failure.
bool encode_tensor_map(CUtensorMap* map, CUtensorMapDataType dtype, int rank, const void* base,
                       const uint64_t* dims, const uint64_t* strides_bytes, const uint32_t* box,
                       CUtensorMapSwizzle swizzle, std::string* err);

}  // namespace flashptx
