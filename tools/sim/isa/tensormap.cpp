// ptxsim ISA semantics: the logical tensor map and tile-mode bulk tensor copies (see tensormap.h).
#include "tools/sim/isa/tensormap.h"

#include <cstring>
#include <vector>

#include "tools/sim/isa/numeric.h"

namespace ptxsim::isa {

uint32_t elem_bytes(ElemType t) {
  switch (t) {
    case ElemType::u8: return 1;
    case ElemType::u16: case ElemType::f16: case ElemType::bf16: return 2;
    case ElemType::u32: case ElemType::s32: case ElemType::f32: case ElemType::f32_ftz:
    case ElemType::tf32: case ElemType::tf32_ftz: return 4;
    case ElemType::u64: case ElemType::s64: case ElemType::f64: return 8;
  }
  return 1;
}

bool elem_is_float(ElemType t) {
  switch (t) {
    case ElemType::f16: case ElemType::f32: case ElemType::f64: case ElemType::bf16:
    case ElemType::f32_ftz: case ElemType::tf32: case ElemType::tf32_ftz: return true;
    default: return false;
  }
}

const char* elem_name(ElemType t) {
  static const char* const kNames[] = {"UINT8", "UINT16", "UINT32", "INT32", "UINT64", "INT64", "FLOAT16",
                                       "FLOAT32", "FLOAT64", "BFLOAT16", "FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ"};
  return kNames[unsigned(t)];
}

// The rules cuTensorMapEncodeTiled documents for its parameters, in the order it lists them.
// ISA reading: no rule ties a stride to the previous dimension's extent (none is documented), and
// interleaved maps are validated but copied as the plain dense box (no kernel uses interleave).
std::string TensorMapDesc::validate() const {
  const uint32_t es = elem_bytes(type);
  auto dim = [](int i) { return "[" + std::to_string(i) + "]"; };
  if (rank < 1 || rank > 5) return "tensorRank must be 1..5 (is " + std::to_string(rank) + ")";
  if (interleave != Interleave::none && rank < 3)
    return "tensorRank must be >= 3 when interleave is not NONE";
  const uint64_t base_align = interleave == Interleave::b32 ? 32 : 16;
  if (base % base_align != 0)
    return "globalAddress must be aligned to " + std::to_string(base_align) + " bytes";
  for (int i = 0; i < rank; ++i)
    if (dims[i] == 0 || dims[i] > (uint64_t(1) << 32)) return "globalDim" + dim(i) + " must be in 1..2^32";
  if (strides_bytes[0] != es) return "strides_bytes[0] must be the element size " + std::to_string(es);
  const uint64_t stride_mult = interleave == Interleave::b32 ? 32 : 16;
  for (int i = 1; i < rank; ++i) {
    if (strides_bytes[i] % stride_mult != 0)
      return "globalStrides" + dim(i - 1) + " must be a multiple of " + std::to_string(stride_mult);
    if (strides_bytes[i] >= (uint64_t(1) << 40)) return "globalStrides" + dim(i - 1) + " must be < 2^40";
  }
  for (int i = 0; i < rank; ++i)
    if (box[i] == 0 || box[i] > 256) return "boxDim" + dim(i) + " must be in 1..256";
  if (interleave == Interleave::none && (uint64_t(box[0]) * es) % 16 != 0)
    return "boxDim[0] * elementSize must be a multiple of 16 bytes when interleave is NONE";
  for (int i = 0; i < rank; ++i)
    if (elem_strides[i] == 0 || elem_strides[i] > 8) return "elementStrides" + dim(i) + " must be in 1..8";
  if (interleave == Interleave::none && swizzle != Swizzle::none &&
      uint64_t(box[0]) * es > swizzle_span_bytes(swizzle))
    return "boxDim[0] * elementSize must be <= the swizzle span (" + std::to_string(swizzle_span_bytes(swizzle)) +
           " bytes) when interleave is NONE";
  if (oob_fill == OobFill::nan_request_zero_fma && !elem_is_float(type))
    return "OOB fill NAN_REQUEST_ZERO_FMA requires a floating-point data type";
  return {};
}

// ISA reading: element strides apply to every dimension alike, dimension 0 included.
uint32_t TensorMapDesc::box_elems(int i) const { return (box[i] + elem_strides[i] - 1) / elem_strides[i]; }

uint32_t TensorMapDesc::box_bytes() const {
  uint64_t n = elem_bytes(type);
  for (int i = 0; i < rank; ++i) n *= box_elems(i);
  return uint32_t(n);
}

// ISA reading: a box narrower than the swizzle span is not padded to it: rows are dense.
uint32_t box_smem_address(const TensorMapDesc& d, uint32_t smem_addr, const uint32_t e[5]) {
  uint64_t lin = 0;
  for (int i = d.rank - 1; i >= 0; --i) lin = lin * d.box_elems(i) + e[i];
  return swizzle_address(d.swizzle, smem_addr + uint32_t(lin * elem_bytes(d.type)));
}

std::string tile_smem_check(const TensorMapDesc& d, uint32_t smem_addr, bool* mid_pattern) {
  if (mid_pattern) *mid_pattern = d.swizzle != Swizzle::none && !swizzle_aligned(d.swizzle, smem_addr);
  if (smem_addr % 128 != 0) return "the shared-memory address of a tensor copy must be 128-byte aligned";
  return {};
}

SmemRange tile_smem_footprint(const TensorMapDesc& d, uint32_t smem_addr) {
  const uint32_t span = swizzle_span_bytes(d.swizzle);
  const uint32_t first = smem_addr / span * span;
  const uint32_t end = smem_addr + d.box_bytes();
  return {first, (end + span - 1) / span * span};
}

namespace {

// The canonical NaN written for out-of-bound elements under NAN_REQUEST_ZERO_FMA.
// ISA reading: the fill pattern is the all-ones-fraction positive NaN of the element type.
void nan_pattern(ElemType t, uint8_t* out) {
  const uint32_t es = elem_bytes(t);
  if (es == 2) { const uint16_t v = 0x7fff; std::memcpy(out, &v, 2); }
  else if (es == 4) { const uint32_t v = 0x7fffffffu; std::memcpy(out, &v, 4); }
  else { const uint64_t v = 0x7fffffffffffffffull; std::memcpy(out, &v, 8); }
}

// Walks the box row by row (a row is the run along dimension 0). For each row: the box indices of
// the outer dimensions, the tensor coordinates and whether the row's outer coordinates are inside.
struct Row {
  uint32_t e[5];
  int64_t x[5];
  bool outer_in;
};
template <class F>
void for_each_row(const TensorMapDesc& d, const int32_t* coords, F f) {
  uint32_t n[5] = {1, 1, 1, 1, 1};
  for (int i = 0; i < d.rank; ++i) n[i] = d.box_elems(i);
  Row r{};
  for (uint32_t e4 = 0; e4 < n[4]; ++e4)
    for (uint32_t e3 = 0; e3 < n[3]; ++e3)
      for (uint32_t e2 = 0; e2 < n[2]; ++e2)
        for (uint32_t e1 = 0; e1 < n[1]; ++e1) {
          const uint32_t e[5] = {0, e1, e2, e3, e4};
          r.outer_in = true;
          for (int i = 0; i < 5; ++i) {
            r.e[i] = e[i];
            r.x[i] = i < d.rank ? int64_t(coords[i]) + int64_t(e[i]) * d.elem_strides[i] : 0;
            if (i >= 1 && i < d.rank && (r.x[i] < 0 || r.x[i] >= int64_t(d.dims[i]))) r.outer_in = false;
          }
          f(r);
        }
}

// Global address of the element at tensor coordinates x (inside the tensor).
uint64_t global_address(const TensorMapDesc& d, const int64_t x[5]) {
  uint64_t a = d.base;
  for (int i = 0; i < d.rank; ++i) a += uint64_t(x[i]) * d.strides_bytes[i];
  return a;
}

// Element i of the row is inside along dimension 0.
bool inner_in(const TensorMapDesc& d, const int32_t* coords, uint32_t i) {
  const int64_t x0 = int64_t(coords[0]) + int64_t(i) * d.elem_strides[0];
  return x0 >= 0 && x0 < int64_t(d.dims[0]);
}

// Reads the in-bound elements of a row from global memory into buf (the row's box order); the
// out-of-bound ones are left as they are. Contiguous in-bound runs are read in one call.
void read_row(const TensorMapDesc& d, const int32_t* coords, const Row& r, const ReadGlobal& rd, uint8_t* buf) {
  const uint32_t es = elem_bytes(d.type), n0 = d.box_elems(0);
  int64_t x[5];
  std::memcpy(x, r.x, sizeof x);
  if (d.elem_strides[0] == 1) {
    uint32_t i = 0;
    while (i < n0 && !inner_in(d, coords, i)) ++i;
    uint32_t j = i;
    while (j < n0 && inner_in(d, coords, j)) ++j;
    if (j > i) {
      x[0] = int64_t(coords[0]) + i;
      rd(global_address(d, x), buf + size_t(i) * es, (j - i) * es);
    }
    return;
  }
  for (uint32_t i = 0; i < n0; ++i) {
    if (!inner_in(d, coords, i)) continue;
    x[0] = int64_t(coords[0]) + int64_t(i) * d.elem_strides[0];
    rd(global_address(d, x), buf + size_t(i) * es, es);
  }
}

// The shared-memory address of element 0 of the row, before the swizzle.
uint32_t row_smem_linear(const TensorMapDesc& d, uint32_t smem_addr, const Row& r) {
  uint64_t lin = 0;
  for (int i = d.rank - 1; i >= 1; --i) lin = lin * d.box_elems(i) + r.e[i];
  lin *= d.box_elems(0);
  return smem_addr + uint32_t(lin * elem_bytes(d.type));
}

// Moves a row between a linear buffer and shared memory, 16-byte chunk by chunk (the swizzle
// permutes 16-byte chunks, and rows start 16-byte aligned: box[0] * elementSize is a multiple of
// 16 and the destination is 128-byte aligned). A partial last chunk is moved as it is.
void write_row_smem(const TensorMapDesc& d, uint32_t row_addr, const uint8_t* buf, uint32_t bytes, const WriteSmem& wr) {
  for (uint32_t off = 0; off < bytes; off += 16) {
    const uint32_t n = bytes - off < 16 ? bytes - off : 16;
    wr(swizzle_address(d.swizzle, row_addr + off), buf + off, n);
  }
}
void read_row_smem(const TensorMapDesc& d, uint32_t row_addr, uint8_t* buf, uint32_t bytes, const ReadSmem& rd) {
  for (uint32_t off = 0; off < bytes; off += 16) {
    const uint32_t n = bytes - off < 16 ? bytes - off : 16;
    rd(swizzle_address(d.swizzle, row_addr + off), buf + off, n);
  }
}

}  // namespace

uint32_t tile_load(const TensorMapDesc& d, const int32_t* coords, uint32_t smem_addr,
                   const ReadGlobal& read_global, const WriteSmem& write_smem) {
  const uint32_t es = elem_bytes(d.type), n0 = d.box_elems(0), row_bytes = n0 * es;
  std::vector<uint8_t> buf(row_bytes), fill(row_bytes, 0);
  if (d.oob_fill == OobFill::nan_request_zero_fma && elem_is_float(d.type))
    for (uint32_t i = 0; i < n0; ++i) nan_pattern(d.type, fill.data() + size_t(i) * es);
  for_each_row(d, coords, [&](const Row& r) {
    std::memcpy(buf.data(), fill.data(), row_bytes);
    if (r.outer_in) read_row(d, coords, r, read_global, buf.data());
    write_row_smem(d, row_smem_linear(d, smem_addr, r), buf.data(), row_bytes, write_smem);
  });
  // ISA reading: the complete-tx count is the whole box: filled elements are written too.
  return d.box_bytes();
}

uint32_t tile_store(const TensorMapDesc& d, const int32_t* coords, uint32_t smem_addr,
                    const ReadSmem& read_smem, const WriteGlobal& write_global) {
  const uint32_t es = elem_bytes(d.type), n0 = d.box_elems(0), row_bytes = n0 * es;
  std::vector<uint8_t> buf(row_bytes);
  uint32_t written = 0;
  for_each_row(d, coords, [&](const Row& r) {
    if (!r.outer_in) return;
    read_row_smem(d, row_smem_linear(d, smem_addr, r), buf.data(), row_bytes, read_smem);
    int64_t x[5];
    std::memcpy(x, r.x, sizeof x);
    for (uint32_t i = 0; i < n0;) {
      if (!inner_in(d, coords, i)) { ++i; continue; }
      uint32_t j = i + 1;
      if (d.elem_strides[0] == 1) while (j < n0 && inner_in(d, coords, j)) ++j;
      x[0] = int64_t(coords[0]) + int64_t(i) * d.elem_strides[0];
      write_global(global_address(d, x), buf.data() + size_t(i) * es, (j - i) * es);
      written += (j - i) * es;
      i = j;
    }
  });
  return written;
}

namespace {
// global + smem for one element of the type; false when .add does not support the type.
// ISA reading: .f16/.bf16 round the exact sum once (.rn) without flushing (the .noftz form).
bool add_elem(ElemType t, uint8_t* g, const uint8_t* s) {
  switch (t) {
    case ElemType::f32: case ElemType::f32_ftz: {
      float a, b; std::memcpy(&a, g, 4); std::memcpy(&b, s, 4);
      const float r = add_f32(a, b, Rnd::rn, t == ElemType::f32_ftz);
      std::memcpy(g, &r, 4); return true;
    }
    case ElemType::f16: {
      uint16_t a, b; std::memcpy(&a, g, 2); std::memcpy(&b, s, 2);
      const uint16_t r = add_f16(a, b); std::memcpy(g, &r, 2); return true;
    }
    case ElemType::bf16: {
      uint16_t a, b; std::memcpy(&a, g, 2); std::memcpy(&b, s, 2);
      const uint16_t r = add_bf16(a, b); std::memcpy(g, &r, 2); return true;
    }
    case ElemType::u32: case ElemType::s32: {
      uint32_t a, b; std::memcpy(&a, g, 4); std::memcpy(&b, s, 4);
      a += b; std::memcpy(g, &a, 4); return true;
    }
    case ElemType::u64: {
      uint64_t a, b; std::memcpy(&a, g, 8); std::memcpy(&b, s, 8);
      a += b; std::memcpy(g, &a, 8); return true;
    }
    default: return false;
  }
}
}  // namespace

uint32_t tile_reduce_add(const TensorMapDesc& d, const int32_t* coords, uint32_t smem_addr,
                         const ReadSmem& read_smem, const ReadGlobal& read_global,
                         const WriteGlobal& write_global) {
  const uint32_t es = elem_bytes(d.type), n0 = d.box_elems(0), row_bytes = n0 * es;
  {
    uint8_t probe[8] = {}, other[8] = {};
    if (!add_elem(d.type, probe, other)) return ~0u;
  }
  std::vector<uint8_t> buf(row_bytes), gbuf(8);
  uint32_t updated = 0;
  for_each_row(d, coords, [&](const Row& r) {
    if (!r.outer_in) return;
    read_row_smem(d, row_smem_linear(d, smem_addr, r), buf.data(), row_bytes, read_smem);
    int64_t x[5];
    std::memcpy(x, r.x, sizeof x);
    for (uint32_t i = 0; i < n0; ++i) {
      if (!inner_in(d, coords, i)) continue;
      x[0] = int64_t(coords[0]) + int64_t(i) * d.elem_strides[0];
      const uint64_t ga = global_address(d, x);
      read_global(ga, gbuf.data(), es);
      add_elem(d.type, gbuf.data(), buf.data() + size_t(i) * es);
      write_global(ga, gbuf.data(), es);
      updated += es;
    }
  });
  return updated;
}

}  // namespace ptxsim::isa
