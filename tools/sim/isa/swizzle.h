// ptxsim ISA semantics: the shared-memory swizzle modes.
//
// One definition used by the tensor-copy engine (PTX ISA 5.5.x "Tensor" / "Swizzling modes" of the
// tensor-map section, cuTensorMapEncodeTiled's CU_TENSOR_MAP_SWIZZLE_*) and by wgmma's matrix
// descriptors (PTX ISA 9.7.15.5.1.2 "Shared Memory Matrix Layout", canonical layouts
// "Swizzle<B,4,3>"): the 16-byte chunk index, address bits [4, 4+B), is XORed with address bits
// [7, 7+B), where B = 1, 2, 3 for 32B, 64B, 128B. The pattern therefore repeats every 256, 512,
// 1024 bytes, and rows of the swizzle span (32/64/128 bytes) are what the XOR permutes within.
//
// ISA reading: the XOR is taken on the shared-memory address bits themselves, so a region whose
// start is not aligned to the repeat size starts mid-pattern. The tensor copy requires the
// destination aligned to 128 bytes only; the ISA's matrix descriptor has a "base offset" for
// patterns that do not start on the repeat boundary. Both are modelled on absolute addresses.
#pragma once
#include <cstdint>

namespace ptxsim::isa {

// Tensor-map enumeration order (CU_TENSOR_MAP_SWIZZLE_NONE/32B/64B/128B = 0..3).
enum class Swizzle : uint8_t { none = 0, b32 = 1, b64 = 2, b128 = 3 };

// The number of XORed bits: 0, 1, 2, 3.
inline uint32_t swizzle_bits(Swizzle s) { return uint32_t(s); }
// The span: the row width the pattern permutes, in bytes (16 for none: one chunk).
inline uint32_t swizzle_span_bytes(Swizzle s) { return 16u << swizzle_bits(s); }
// The repeat: bytes after which the pattern starts again (128 for none: one 8-row core matrix).
inline uint32_t swizzle_repeat_bytes(Swizzle s) { return 128u << swizzle_bits(s); }

// Physical byte address of logical byte address `addr` (the XOR on the address bits).
inline uint32_t swizzle_address(Swizzle s, uint32_t addr) {
  const uint32_t b = swizzle_bits(s);
  if (b == 0) return addr;
  const uint32_t mask = (1u << b) - 1;
  return addr ^ (((addr >> 7) & mask) << 4);
}

// The same pattern by (row, 16-byte chunk) for rows of the span width, with the region starting
// at a repeat boundary: row r, chunk c -> byte offset r*span + 16*(c ^ f(r)) where f(r) is the row's
// address bits [7, 7+B) (r for 128B; r/2 for 64B; r/4 for 32B, each modulo 2^B).
inline uint32_t swizzle_row_chunk(Swizzle s, uint32_t row, uint32_t chunk) {
  const uint32_t span = swizzle_span_bytes(s);
  return swizzle_address(s, row * span + chunk * 16);
}

// True when `addr` is aligned to the repeat of the pattern (so it starts a pattern).
inline bool swizzle_aligned(Swizzle s, uint32_t addr) {
  return s == Swizzle::none ? (addr % 16) == 0 : (addr % swizzle_repeat_bytes(s)) == 0;
}

}  // namespace ptxsim::isa
