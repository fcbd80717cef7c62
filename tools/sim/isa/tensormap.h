// ptxsim ISA semantics: the logical tensor map and tile-mode bulk tensor copies.
//
// Written from the CUDA driver API's cuTensorMapEncodeTiled documentation (the rules validate()
// checks) and the PTX ISA 5.5 "Tensors" (tile mode, bounding box, out-of-bound access, swizzling
// modes) and the 9.7.9.25 sections "cp.async.bulk.tensor" / "cp.reduce.async.bulk.tensor" (what a
// copy moves and what it counts toward mbarrier complete-tx).
//
// Dimension 0 is the innermost (contiguous) one. strides_bytes[i] for i >= 1 is the byte stride of
// dimension i; strides_bytes[0] is the element size (the driver takes only rank-1 strides).
// Memory is reached only through the callbacks, so the interpreter does its own bounds checking.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "tools/sim/isa/swizzle.h"

namespace ptxsim::isa {

// CUtensorMapDataType, in the driver's order.
enum class ElemType : uint8_t {
  u8, u16, u32, s32, u64, s64, f16, f32, f64, bf16, f32_ftz, tf32, tf32_ftz
};
uint32_t elem_bytes(ElemType t);
bool elem_is_float(ElemType t);
const char* elem_name(ElemType t);

enum class Interleave : uint8_t { none, b16, b32 };   // CU_TENSOR_MAP_INTERLEAVE_NONE/16B/32B
enum class OobFill : uint8_t { none, nan_request_zero_fma };  // CU_TENSOR_MAP_FLOAT_OOB_FILL_*

struct TensorMapDesc {
  ElemType type = ElemType::u8;
  int rank = 1;                   // 1..5
  uint64_t base = 0;              // global address of element (0, .., 0)
  uint64_t dims[5] = {1, 1, 1, 1, 1};
  uint64_t strides_bytes[5] = {1, 0, 0, 0, 0};  // [0] = element size; [i] = stride of dim i
  uint32_t box[5] = {1, 1, 1, 1, 1};
  uint32_t elem_strides[5] = {1, 1, 1, 1, 1};
  Interleave interleave = Interleave::none;
  Swizzle swizzle = Swizzle::none;
  OobFill oob_fill = OobFill::none;

  // Empty when the map satisfies every rule cuTensorMapEncodeTiled documents; otherwise the
  // first broken rule, in words.
  std::string validate() const;
  // Elements the box holds along dimension i: ceil(box[i] / elem_strides[i]).
  uint32_t box_elems(int i) const;
  // Bytes the box occupies in shared memory (and what a load counts toward complete-tx).
  uint32_t box_bytes() const;
};

using ReadGlobal = std::function<void(uint64_t addr, void* dst, uint32_t n)>;
using WriteGlobal = std::function<void(uint64_t addr, const void* src, uint32_t n)>;
using ReadSmem = std::function<void(uint32_t addr, void* dst, uint32_t n)>;
using WriteSmem = std::function<void(uint32_t addr, const void* src, uint32_t n)>;

// Shared-memory byte address of box element (e0, .., e4) (indices in box elements, i.e. after the
// element stride) for a box whose destination starts at smem_addr: the box laid out innermost
// first, densely, then the swizzle applied to the address bits.
uint32_t box_smem_address(const TensorMapDesc& d, uint32_t smem_addr, const uint32_t e[5]);

// The shared-memory destination/source of a tile copy must be 128-byte aligned (PTX ISA
// cp.async.bulk.tensor). Empty when smem_addr is acceptable, else why not. mid_pattern (optional)
// is set when a swizzled box does not start on its pattern's repeat boundary (legal, see
// READINGS.md 14: the pattern then starts mid-way, which a wgmma descriptor must match).
std::string tile_smem_check(const TensorMapDesc& d, uint32_t smem_addr, bool* mid_pattern = nullptr);
// The shared-memory bytes a tile copy writes (load) or reads (store, reduce): [first, last), the
// box's dense range widened to whole swizzle spans (the XOR stays inside an aligned span).
struct SmemRange { uint32_t first, last; };
SmemRange tile_smem_footprint(const TensorMapDesc& d, uint32_t smem_addr);

// cp.async.bulk.tensor.Nd.shared::cluster.global.tile: loads the box whose first element is at
// tensor coordinates coords[0..rank-1] (signed: negative is outside). Elements outside the tensor
// are filled with zero (OobFill::none) or with the canonical NaN of the type
// (nan_request_zero_fma, float types only). Returns the bytes counted toward complete-tx: the whole
// box, out-of-bound fill included.
uint32_t tile_load(const TensorMapDesc& d, const int32_t* coords, uint32_t smem_addr,
                   const ReadGlobal& read_global, const WriteSmem& write_smem);

// cp.async.bulk.tensor.Nd.global.shared::cta.tile: stores the box; elements outside the tensor are
// not written. Returns the bytes actually written to global memory.
uint32_t tile_store(const TensorMapDesc& d, const int32_t* coords, uint32_t smem_addr,
                    const ReadSmem& read_smem, const WriteGlobal& write_global);

// cp.reduce.async.bulk.tensor.Nd.global.shared::cta.add.tile: global[e] = global[e] + smem[e] for
// the elements inside the tensor. f32: add.rn.f32; f16/bf16: the exact sum rounded once, .rn;
// u32/s32/u64: wrapping integer add. Other types: returns ~0u (not supported by .add).
// Returns the bytes updated.
uint32_t tile_reduce_add(const TensorMapDesc& d, const int32_t* coords, uint32_t smem_addr,
                         const ReadSmem& read_smem, const ReadGlobal& read_global,
                         const WriteGlobal& write_global);

}  // namespace ptxsim::isa
