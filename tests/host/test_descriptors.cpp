// Bit packing of the tcgen05 descriptors (ptx/tcgen05_desc.cuh) against values computed by hand
// from the PTX ISA's "Instruction descriptor" and "Shared memory descriptor" tables. The arithmetic
// for each literal is written beside it.
#include <doctest/doctest.h>

#include <cstdint>
#include <initializer_list>

#include "ptx/tcgen05_desc.cuh"

namespace ptx = flashptx::ptx;
using ptx::UmmaDType;
using ptx::UmmaF16Type;
using ptx::UmmaF8F6F4Type;
using ptx::UmmaMajor;
using ptx::UmmaSwizzle;

TEST_SUITE("host ptx descriptors") {

TEST_CASE("tcgen05 instruction descriptor, kind::f16") {
  // bf16 x bf16 -> f32, M=128, N=64, K-major: D=1<<4 (0x10), A=1<<7 (0x80), B=1<<10 (0x400),
  // N>>3=8 at bit 17 (0x100000), M>>4=8 at bit 24 (0x08000000).
  constexpr uint32_t a = ptx::make_umma_idesc_f16<UmmaF16Type::kBF16, UmmaDType::kF32, 128, 64>();
  static_assert(a == 0x08100490u);
  CHECK(a == 0x08100490u);
  // f16 x f16 -> f16, M=64, N=8: only N>>3=1 (0x20000) and M>>4=4 (0x04000000).
  CHECK(ptx::make_umma_idesc_f16<UmmaF16Type::kF16, UmmaDType::kF16, 64, 8>() == 0x04020000u);
  // f16 -> f32, M=128, N=256, A and B MN-major: 0x10 | 1<<15 | 1<<16 | 32<<17 | 8<<24.
  CHECK(ptx::make_umma_idesc_f16<UmmaF16Type::kF16, UmmaDType::kF32, 128, 256, UmmaMajor::kMN, UmmaMajor::kMN>() ==
        0x08418010u);
  // cta_group::2, M=256 (128 rows per CTA): M>>4=16 at bit 24 (0x10000000).
  CHECK(ptx::make_umma_idesc_f16<UmmaF16Type::kBF16, UmmaDType::kF32, 256, 64, UmmaMajor::kK, UmmaMajor::kK, 2>() ==
        0x10100490u);
}

TEST_CASE("tcgen05 instruction descriptor, kind::f8f6f4") {
  // e4m3 x e5m2 -> f32, M=128, N=256, B MN-major: 0x10 | B=1<<10 (0x400) | 1<<16 | 32<<17 (0x400000) | 8<<24.
  CHECK(ptx::make_umma_idesc_f8f6f4<UmmaF8F6F4Type::kE4M3, UmmaF8F6F4Type::kE5M2, UmmaDType::kF32, 128, 256,
                                    UmmaMajor::kK, UmmaMajor::kMN>() == 0x08410410u);
  // e2m1 x e3m2 -> f16, M=64, N=16: A=5<<7 (0x280), B=4<<10 (0x1000), N>>3=2<<17 (0x40000), M>>4=4<<24.
  CHECK(ptx::make_umma_idesc_f8f6f4<UmmaF8F6F4Type::kE2M1, UmmaF8F6F4Type::kE3M2, UmmaDType::kF16, 64, 16>() ==
        0x04041280u);
  // e4m3 x e4m3 -> f32, M=128, N=64 (the test kernel's descriptor): 0x10 | 0x100000 | 0x08000000.
  CHECK(ptx::make_umma_idesc_f8f6f4<UmmaF8F6F4Type::kE4M3, UmmaF8F6F4Type::kE4M3, UmmaDType::kF32, 128, 64>() ==
        0x08100010u);
  // e2m3 (3) as A: 3<<7 = 0x180.
  CHECK(ptx::make_umma_idesc_f8f6f4<UmmaF8F6F4Type::kE2M3, UmmaF8F6F4Type::kE4M3, UmmaDType::kF32, 128, 64>() ==
        0x08100190u);
}

TEST_CASE("tcgen05 instruction descriptor: every field in its own bits, reserved bits clear") {
  // All fields at their maximum: D 0x30, A 0x380, B 0x1C00, negate 0x6000, majors 0x18000,
  // N>>3=63 -> 0x7E0000, M>>4=31 -> 0x1F000000. Bits 0-3, 6, 23, 29-31 stay zero.
  CHECK(ptx::umma_idesc_pack(3, 7, 7, 31 << 4, 63 << 3, 1, 1, 1, 1) == 0x1F7FFFB0u);
  // Negate A and B alone: 1<<13 | 1<<14.
  CHECK(ptx::umma_idesc_pack(0, 0, 0, 0, 0, 0, 0, 1, 1) == 0x6000u);
  // The low 3 bits of N and 4 bits of M are dropped, not carried into neighbours.
  CHECK(ptx::umma_idesc_pack(0, 0, 0, 15, 7, 0, 0) == 0u);
}

TEST_CASE("tcgen05 MMA shape legality, from the ISA's Matrix Shape table") {
  // Rows .kind::f16 / .kind::f8f6f4, no .ws, dense. cta_group::1: M in {64, 128}, N = 8..256 in
  // steps of 8. cta_group::2: M in {128, 256}, N = 16..256 in steps of 16.
  struct Row { int cta_group, m, n; bool legal; const char* why; };
  const Row rows[] = {
      {1, 64, 8, true, "smallest N"},          {1, 64, 256, true, "largest N"},
      {1, 128, 8, true, "M=128 also steps by 8"}, {1, 128, 24, true, "M=128, N=24"},
      {1, 128, 200, true, "M=128, N=200"},     {1, 128, 256, true, "largest"},
      {1, 64, 12, false, "N not a multiple of 8"}, {1, 128, 0, false, "N=0"},
      {1, 64, 264, false, "N > 256"},          {1, 256, 64, false, "M=256 is cta_group::2 only"},
      {1, 32, 64, false, "M=32 is .ws only"},  {2, 128, 16, true, "pair M=128, N=16"},
      {2, 128, 48, true, "pair M=128, N=48"},  {2, 256, 16, true, "pair M=256, smallest N"},
      {2, 256, 256, true, "pair, largest"},    {2, 256, 8, false, "pair N must step by 16"},
      {2, 256, 24, false, "pair N=24"},        {2, 128, 272, false, "N > 256"},
      {2, 64, 64, false, "M=64 is cta_group::1 only"}, {3, 128, 64, false, "no cta_group::3"},
  };
  for (const Row& r : rows) {
    INFO(r.why << ": cta_group " << r.cta_group << " M " << r.m << " N " << r.n);
    CHECK(ptx::umma_shape_ok(r.cta_group, r.m, r.n) == r.legal);
  }
  // Every N the table allows, and no other, for each (cta_group, M).
  for (int g = 1; g <= 2; ++g)
    for (int m : {64, 128, 256})
      for (int n = 0; n <= 320; ++n) {
        const bool m_ok = g == 1 ? (m == 64 || m == 128) : (m == 128 || m == 256);
        const int step = g == 1 ? 8 : 16;
        INFO("cta_group " << g << " M " << m << " N " << n);
        CHECK(ptx::umma_shape_ok(g, m, n) == (m_ok && n >= step && n <= 256 && n % step == 0));
      }
}

TEST_CASE("tcgen05 TS form: A from TMEM must be K-major") {
  constexpr uint32_t k_major = ptx::make_umma_idesc_f16<UmmaF16Type::kBF16, UmmaDType::kF32, 128, 64>();
  constexpr uint32_t a_mn_major =
      ptx::make_umma_idesc_f16<UmmaF16Type::kBF16, UmmaDType::kF32, 128, 64, UmmaMajor::kMN, UmmaMajor::kK>();
  constexpr uint32_t b_mn_major =
      ptx::make_umma_idesc_f16<UmmaF16Type::kBF16, UmmaDType::kF32, 128, 64, UmmaMajor::kK, UmmaMajor::kMN>();
  CHECK(ptx::umma_a_tmem_ok(k_major));
  CHECK_FALSE(ptx::umma_a_tmem_ok(a_mn_major));  // transpose-A (bit 15) set
  CHECK(ptx::umma_a_tmem_ok(b_mn_major));        // B's major-ness is free in the TS form
}

TEST_CASE("tcgen05 shared-memory descriptor") {
  // 0x1000, LBO 128, SBO 1024, no swizzle: 0x1000>>4=0x100; 128>>4=8 at bit 16 (0x80000);
  // 1024>>4=64 at bit 32; version 1 at bit 46 (0x4000 in the high word).
  constexpr uint64_t d0 = ptx::make_umma_smem_desc(0x1000, 128, 1024, UmmaSwizzle::kNone);
  static_assert(d0 == 0x0000404000080100ull);
  CHECK(d0 == 0x0000404000080100ull);
  // 0x2400, LBO 16, SBO 1024, 128B swizzle (2 at bit 61): low 0x240 | 1<<16; high 0x4040 | 0x40000000.
  CHECK(ptx::make_umma_smem_desc(0x2400, 16, 1024, UmmaSwizzle::k128B) == 0x4000404000010240ull);
  // 64B swizzle (4 at bit 61), 32B swizzle (6), 128B with 32B atoms (1).
  CHECK(ptx::make_umma_smem_desc(0, 0, 0, UmmaSwizzle::k64B) == 0x8000400000000000ull);
  CHECK(ptx::make_umma_smem_desc(0, 0, 0, UmmaSwizzle::k32B) == 0xC000400000000000ull);
  CHECK(ptx::make_umma_smem_desc(0, 0, 0, UmmaSwizzle::k128BBase32B) == 0x2000400000000000ull);
  // Highest address, base offset 3 (bits 49-51), LBO absolute mode (bit 52, sm_103a only: the raw
  // packer writes it, the sm_100a builder cannot), 32B swizzle:
  // low 0x3FFF0>>4 = 0x3FFF; high 0x4000 | 3<<17 | 1<<20 | 6<<29 = 0xC0164000.
  CHECK(ptx::umma_smem_desc_pack(0x3FFF0, 0, 0, 6, 3, 1) == 0xC016400000003FFFull);
  CHECK(ptx::make_umma_smem_desc(0x3FFF0, 0, 0, UmmaSwizzle::k32B, 3) == 0xC006400000003FFFull);
  // The address is taken modulo 256 KiB and its low 4 bits are dropped.
  CHECK(ptx::make_umma_smem_desc(0x4001F, 0, 0, UmmaSwizzle::kNone) == 0x0000400000000001ull);
  // Advancing by 256 bytes adds 16 to the start-address field only.
  CHECK(ptx::umma_smem_desc_advance(d0, 256) == 0x0000404000080110ull);
}

TEST_CASE("TMEM addresses and allocation sizes") {
  CHECK(ptx::tmem_addr(37, 384) == 2425216u);  // (37 << 16) | 384
  CHECK(ptx::tmem_addr_lane(2425216u) == 37u);
  CHECK(ptx::tmem_addr_column(2425216u) == 384u);
  for (uint32_t n : {32u, 64u, 128u, 256u, 512u}) CHECK(ptx::tmem_alloc_cols_ok(n));
  for (uint32_t n : {0u, 16u, 96u, 1024u, 33u}) CHECK_FALSE(ptx::tmem_alloc_cols_ok(n));
}

}  // TEST_SUITE
