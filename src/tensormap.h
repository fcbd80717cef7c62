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

// One [batch, seqlen, heads, d] tensor of 2-byte elements (strides in elements) as a 4-D tensor
// map, d innermost, box (64, box_rows, 1, 1), 128B swizzle: the layout every FA3 kernel loads and
// stores. A dimension of extent 1 gets a harmless stride (TMA wants each a multiple of 16 bytes).
bool encode_bshd(CUtensorMap* map, CUtensorMapDataType dtype, const void* ptr, int64_t batch, int64_t seqlen,
                 int64_t heads, int64_t d, int64_t batch_stride, int64_t row_stride, int64_t head_stride,
                 uint32_t box_rows, std::string* err);

}  // namespace flashptx
