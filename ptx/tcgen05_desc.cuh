// tcgen05 descriptors (sm_100a): the 32-bit instruction descriptor and the 64-bit shared-memory
// matrix descriptor of tcgen05.mma (PTX ISA: "Tensorcore 5th Generation Family Instructions" ->
// "Matrix Descriptors": "Instruction descriptor" for .kind::tf32/f16/f8f6f4, and "Shared memory
// descriptor"), plus the TMEM address packing ("Tensor Memory" -> "Tensor Memory Addressing").
//
// Plain constexpr C++ with no CUDA dependency, so the host test suite (g++) checks the bit packing
// (tests/host/test_descriptors.cpp) and device code folds them to immediates (nvcc builds with
// --expt-relaxed-constexpr). What these builders certify: the fields land in the bit ranges the ISA
// assigns them. What they do not certify: that the smem layout described matches the bytes actually
// stored (that is the kernel's job and the GPU tests'), nor shape legality beyond the checks below.
#pragma once
#include <cstdint>

#include "ptx/arch.cuh"  // FLASHPTX_HD

namespace flashptx::ptx {

// ---- TMEM addresses -----------------------------------------------------------------------------
// A TMEM address is lane in bits 31-16 and column in bits 15-0 (the allocation base returned by
// tcgen05.alloc has lane 0). Per CTA: 128 lanes x 512 columns of 32-bit cells.
FLASHPTX_HD constexpr uint32_t tmem_addr(uint32_t lane, uint32_t column) { return (lane << 16) | column; }
FLASHPTX_HD constexpr uint32_t tmem_addr_lane(uint32_t a) { return a >> 16; }
FLASHPTX_HD constexpr uint32_t tmem_addr_column(uint32_t a) { return a & 0xFFFFu; }
// Legal tcgen05.alloc sizes: a power of two in [32, 512] columns.
FLASHPTX_HD constexpr bool tmem_alloc_cols_ok(uint32_t n) { return n >= 32 && n <= 512 && (n & (n - 1)) == 0; }

// ---- instruction descriptor (32 bits; .kind::f16 and .kind::f8f6f4, dense) ----------------------

// D (accumulator) format, bits 4-5.
enum class UmmaDType : uint32_t { kF16 = 0, kF32 = 1 };
// A/B formats for .kind::f16, bits 7-9 / 10-12.
enum class UmmaF16Type : uint32_t { kF16 = 0, kBF16 = 1 };
// A/B formats for .kind::f8f6f4, bits 7-9 / 10-12.
enum class UmmaF8F6F4Type : uint32_t { kE4M3 = 0, kE5M2 = 1, kE2M3 = 3, kE3M2 = 4, kE2M1 = 5 };
// Operand major-ness ("transpose A/B" bits 15/16): 0 = K-major, 1 = MN-major.
enum class UmmaMajor : uint32_t { kK = 0, kMN = 1 };

// The raw packing, every field of the dense layout. No legality checks: see make_umma_idesc_*.
FLASHPTX_HD constexpr uint32_t umma_idesc_pack(uint32_t d_fmt, uint32_t a_fmt, uint32_t b_fmt, uint32_t m,
                                               uint32_t n, uint32_t a_major, uint32_t b_major,
                                               uint32_t negate_a = 0, uint32_t negate_b = 0) {
  return (0u << 0)                         // bits  0-1 : sparsity selector (dense: 0)
       | (0u << 2)                         // bit   2   : sparsity enable (0 = dense)
       | (0u << 3)                         // bit   3   : saturate (integer kinds only; 0)
       | ((d_fmt & 0x3u) << 4)             // bits  4-5 : D format (0 F16, 1 F32)
       | (0u << 6)                         // bit   6   : reserved
       | ((a_fmt & 0x7u) << 7)             // bits  7-9 : A format (kind-specific code)
       | ((b_fmt & 0x7u) << 10)            // bits 10-12: B format (kind-specific code)
       | ((negate_a & 0x1u) << 13)         // bit  13   : negate A
       | ((negate_b & 0x1u) << 14)         // bit  14   : negate B
       | ((a_major & 0x1u) << 15)          // bit  15   : transpose A (0 K-major, 1 MN-major)
       | ((b_major & 0x1u) << 16)          // bit  16   : transpose B (0 K-major, 1 MN-major)
       | (((n >> 3) & 0x3Fu) << 17)        // bits 17-22: N >> 3
       | (0u << 23)                        // bit  23   : reserved
       | (((m >> 4) & 0x1Fu) << 24)        // bits 24-28: M >> 4
       | (0u << 29)                        // bit  29   : reserved
       | (0u << 30);                       // bits 30-31: max shift (.ws only; 0)
}

// Dense MMA shape legality, per CTA group, from the ISA's "Matrix Shape" table ("Various
// combinations of .kind and shapes"), rows .kind::f16 and .kind::f8f6f4, no .ws, dense:
//   cta_group::1: M = 64 or 128, N = 8, 16, 24, ... 256 (steps of 8), K = 16 (f16) / 32 (f8f6f4)
//   cta_group::2: M = 128 or 256, N = 16, 32, ... 256 (steps of 16)
// M is the instruction's M: for cta_group::2 it spans the CTA pair (M = 256 is 128 rows per CTA).
// The table makes no distinction between A in shared memory (SS) and A in Tensor Memory (TS); the
// TS-only limit on the operand itself is umma_a_tmem_ok() below.
FLASHPTX_HD constexpr bool umma_shape_ok(int cta_group, int m, int n) {
  if (cta_group == 1) return (m == 64 || m == 128) && n >= 8 && n <= 256 && n % 8 == 0;
  if (cta_group == 2) return (m == 128 || m == 256) && n >= 16 && n <= 256 && n % 16 == 0;
  return false;
}

// Where tcgen05.mma reads A from: a shared-memory descriptor (SS form) or a TMEM address (TS form).
enum class UmmaASource : uint32_t { kSmem = 0, kTmem = 1 };

// TS form: A read from Tensor Memory has no layout choice: it must be K-major (the "transpose A"
// bit 15 of the instruction descriptor clear). Stated by CUTLASS's SM100 TS atoms ("A from TMEM
// can't be transposed"); the ISA's shape table does not list it, so this rests on that reading.
FLASHPTX_HD constexpr bool umma_a_tmem_ok(uint32_t idesc) { return ((idesc >> 15) & 1u) == 0u; }

// .kind::f16: A/B f16 or bf16 (both the same), D f16 or f32. K per instruction: 16.
template <UmmaF16Type AB, UmmaDType D, int M, int N, UmmaMajor AMajor = UmmaMajor::kK,
          UmmaMajor BMajor = UmmaMajor::kK, int CtaGroup = 1>
FLASHPTX_HD constexpr uint32_t make_umma_idesc_f16() {
  static_assert(CtaGroup == 1 || CtaGroup == 2, "cta_group is 1 or 2");
  static_assert(umma_shape_ok(CtaGroup, M, N), "tcgen05.mma kind::f16: illegal M x N for this cta_group");
  static_assert(!(AB == UmmaF16Type::kBF16 && D == UmmaDType::kF16), "bf16 inputs accumulate in f32 only");
  return umma_idesc_pack(static_cast<uint32_t>(D), static_cast<uint32_t>(AB), static_cast<uint32_t>(AB), M, N,
                         static_cast<uint32_t>(AMajor), static_cast<uint32_t>(BMajor));
}

// .kind::f8f6f4: A/B any of e4m3/e5m2/e2m3/e3m2/e2m1 (may differ), D f16 or f32. K per instruction:
// 32. MN-major operands are allowed only for the 8-bit formats (e4m3, e5m2).
template <UmmaF8F6F4Type A, UmmaF8F6F4Type B, UmmaDType D, int M, int N, UmmaMajor AMajor = UmmaMajor::kK,
          UmmaMajor BMajor = UmmaMajor::kK, int CtaGroup = 1>
FLASHPTX_HD constexpr uint32_t make_umma_idesc_f8f6f4() {
  static_assert(CtaGroup == 1 || CtaGroup == 2, "cta_group is 1 or 2");
  static_assert(umma_shape_ok(CtaGroup, M, N), "tcgen05.mma kind::f8f6f4: illegal M x N for this cta_group");
  static_assert(AMajor == UmmaMajor::kK || A == UmmaF8F6F4Type::kE4M3 || A == UmmaF8F6F4Type::kE5M2,
                "MN-major A only for 8-bit formats");
  static_assert(BMajor == UmmaMajor::kK || B == UmmaF8F6F4Type::kE4M3 || B == UmmaF8F6F4Type::kE5M2,
                "MN-major B only for 8-bit formats");
  return umma_idesc_pack(static_cast<uint32_t>(D), static_cast<uint32_t>(A), static_cast<uint32_t>(B), M, N,
                         static_cast<uint32_t>(AMajor), static_cast<uint32_t>(BMajor));
}

// ---- shared-memory matrix descriptor (64 bits) --------------------------------------------------
// Swizzle codes of bits 61-63 (note: not the wgmma encoding of bits 62-63 in ptx/wgmma.cuh).
enum class UmmaSwizzle : uint32_t {
  kNone = 0,            // no swizzle (8x16-byte core matrices, "interleave")
  k128BBase32B = 1,     // 128-byte swizzle with 32-byte atomicity
  k128B = 2,            // 128-byte swizzle
  k64B = 4,             // 64-byte swizzle
  k32B = 6,             // 32-byte swizzle
};

// LBO / SBO, in bytes, as the ISA's "Leading Dimension Stride" and "Stride Dimension Byte Offset"
// tables define them (128-bit-normalised rows; "Canonical Layouts" gives the same as CuTe layouts):
//   K-major, no swizzle:  LBO = distance between the two core matrices of an 8x2 tile along K
//                         (adjacent 16-byte K chunks); SBO = distance between 8-row groups (M/N).
//   K-major, swizzled:    LBO unused (write 16 B, encoded 1); SBO = distance between 8-row groups.
//   MN-major, no swizzle: LBO = distance between groups of 8 K rows; SBO = distance between
//                         adjacent 16-byte chunks along M/N.
//   MN-major, swizzled:   LBO = distance between swizzle-width chunks along M/N; SBO = distance
//                         between groups of 8 K rows.
// base_offset: 0 when the swizzle pattern starts on its repeat boundary (1024 B for 128B swizzle,
// 512 B for 64B, 256 B for 32B); otherwise (pattern start >> 7) & 7. Unused without swizzle.
// Bit 52 (leading-dimension stride mode, LBO as an absolute address) is an sm_103a feature (the
// ISA's "Target ISA Note" of "Shared Memory Descriptor"): on sm_100a it must stay 0, so the builder
// the sm_100a kernels use has no parameter for it. umma_smem_desc_pack() writes every field.
FLASHPTX_HD constexpr uint64_t umma_smem_desc_pack(uint32_t smem_addr, uint32_t lbo_bytes, uint32_t sbo_bytes,
                                                   uint32_t swizzle_code, uint32_t base_offset,
                                                   uint32_t lbo_mode) {
  return (static_cast<uint64_t>((smem_addr & 0x3FFFFu) >> 4) << 0)           // bits  0-13: start address >> 4
       | (static_cast<uint64_t>(0) << 14)                                     // bits 14-15: reserved
       | (static_cast<uint64_t>((lbo_bytes & 0x3FFFFu) >> 4) << 16)           // bits 16-29: LBO >> 4
       | (static_cast<uint64_t>(0) << 30)                                     // bits 30-31: reserved
       | (static_cast<uint64_t>((sbo_bytes & 0x3FFFFu) >> 4) << 32)           // bits 32-45: SBO >> 4
       | (static_cast<uint64_t>(1) << 46)                                     // bits 46-48: fixed 0b001 (version)
       | (static_cast<uint64_t>(base_offset & 0x7u) << 49)                    // bits 49-51: matrix base offset
       | (static_cast<uint64_t>(lbo_mode & 0x1u) << 52)                       // bit  52   : LBO mode (sm_103a)
       | (static_cast<uint64_t>(0) << 53)                                     // bits 53-60: fixed 0
       | (static_cast<uint64_t>(swizzle_code & 0x7u) << 61);                  // bits 61-63: swizzle mode
}

// The sm_100a descriptor: LBO relative (bit 52 clear).
FLASHPTX_HD constexpr uint64_t make_umma_smem_desc(uint32_t smem_addr, uint32_t lbo_bytes, uint32_t sbo_bytes,
                                                   UmmaSwizzle swizzle, uint32_t base_offset = 0) {
  return umma_smem_desc_pack(smem_addr, lbo_bytes, sbo_bytes, static_cast<uint32_t>(swizzle), base_offset, 0);
}

// Adds `bytes` (a multiple of 16) to the start-address field; nothing else changes. Valid while the
// address does not carry out of bits 0-13 (shared memory < 256 KiB: it cannot).
// How many bytes one K step is depends on the layout, and only the layout's owner knows it:
//   K-major, swizzled (32B/64B/128B):  K bytes (32 per tcgen05.mma of kind::f16 / f8f6f4) while the
//                                      step stays inside the swizzle width (the hardware swizzles
//                                      the advanced address itself);
//   K-major, no swizzle:               (K bytes / 16) x LBO: 32 bytes of K span two core matrices,
//                                      so one step is 2 x LBO, NOT 32;
//   MN-major:                          (K elements / 8) x (SBO swizzled, LBO not swizzled).
// flashptx::umma::kstep_offset() (src/protocol/umma_plan.h) computes it from the layout; use
// that, not a literal.
FLASHPTX_HD constexpr uint64_t umma_smem_desc_advance(uint64_t desc, uint32_t bytes) {
  return desc + static_cast<uint64_t>(bytes >> 4);
}

}  // namespace flashptx::ptx
