// cuTensorMapEncodeTiled for the simulated device: the entry point cudaGetDriverEntryPointByVersion
// hands out (tools/sim/cudart/runtime.cpp).
//
// It takes the driver's arguments, refuses what the driver documents as invalid (the rules are
// isa::TensorMapDesc::validate's, plus the map's own 64-byte alignment and the enumerations the
// simulator does not model) with CUDA_ERROR_INVALID_VALUE and the rule on stderr, and otherwise
// registers the logical description and writes its handle into the 128-byte map: the kernel's
// cp.async.bulk.tensor reads the description back from the handle (tools/sim/sim.h, TensorMaps).
#include <cuda.h>

#include <cstdio>
#include <string>

#include "tools/sim/cudart/device.h"
#include "tools/sim/isa/tensormap.h"

namespace ptxsim::cudart {

static CUresult refuse(const std::string& why) {
  std::fprintf(stderr, "flashptx sim: cuTensorMapEncodeTiled: %s\n", why.c_str());
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult encode_tiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* base, const cuuint64_t* dims,
                      const cuuint64_t* strides, const cuuint32_t* box, const cuuint32_t* element_strides,
                      CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion,
                      CUtensorMapFloatOOBfill oob_fill) {
  if (map == nullptr || dims == nullptr || box == nullptr || element_strides == nullptr || (rank > 1 && strides == nullptr))
    return refuse("a NULL argument");
  if (reinterpret_cast<uintptr_t>(map) % 64 != 0) return refuse("tensorMap is not 64-byte aligned");
  if (rank < 1 || rank > 5) return refuse("tensorRank " + std::to_string(rank) + " is not 1..5");
  if (static_cast<int>(type) > static_cast<int>(CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ))
    return refuse("tensorDataType " + std::to_string(static_cast<int>(type)) + " is not modelled by the simulator");
  if (static_cast<int>(swizzle) > static_cast<int>(CU_TENSOR_MAP_SWIZZLE_128B))
    return refuse("swizzle " + std::to_string(static_cast<int>(swizzle)) + " (an atom variant) is not modelled by the simulator");
  if (static_cast<int>(interleave) > static_cast<int>(CU_TENSOR_MAP_INTERLEAVE_32B))
    return refuse("interleave " + std::to_string(static_cast<int>(interleave)) + " is not an interleave");
  if (static_cast<int>(oob_fill) > static_cast<int>(CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA))
    return refuse("oobFill " + std::to_string(static_cast<int>(oob_fill)) + " is not a fill mode");
  isa::TensorMapDesc d;
  d.type = static_cast<isa::ElemType>(type);  // the same enumeration order
  d.rank = static_cast<int>(rank);
  d.base = reinterpret_cast<uint64_t>(base);
  d.strides_bytes[0] = isa::elem_bytes(d.type);
  for (int i = 0; i < d.rank; ++i) {
    d.dims[i] = dims[i];
    d.box[i] = box[i];
    d.elem_strides[i] = element_strides[i];
    if (i > 0) d.strides_bytes[i] = strides[i - 1];
  }
  d.interleave = static_cast<isa::Interleave>(interleave);
  d.swizzle = static_cast<isa::Swizzle>(swizzle);
  d.oob_fill = static_cast<isa::OobFill>(oob_fill);
  if (const std::string why = d.validate(); !why.empty()) return refuse(why);
  Device& dev = device();
  std::lock_guard<std::recursive_mutex> lock(dev.mu);
  TensorMaps::encode(map, dev.maps.add(d));
  return CUDA_SUCCESS;
}

}  // namespace ptxsim::cudart
