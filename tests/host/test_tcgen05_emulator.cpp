// The tcgen05 functional emulator (tools/models/tcgen05_emulator.h), tested from the PTX ISA's tables
// and layout figures written out here (descriptor bit fields, the canonical layouts as CuTe layouts,
// the Matrix Shape table, the .32x32b fragment), then used to replay the sm_100a test kernels' MMA
// issue sequences (tests/kernels_sm100/umma_issue.h, the code the kernels run) against an fp64
// GEMM. Inputs are fresh random values on every run (the seed is printed on failure).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "src/protocol/umma_plan.h"
#include "ptx/tcgen05_desc.cuh"
#include "tools/models/tcgen05_emulator.h"
#include "tests/kernels_sm100/umma_issue.h"
#include "tests/host/replay_util.h"

namespace emu = flashptx::models::tcgen05;
namespace ptx = flashptx::ptx;
namespace plan = flashptx_test::umma_plan;
using emu::EmuError;

namespace {

using flashptx_test::fresh_seed;  // FLASHPTX_TEST_SEED=N replays a run

// ---- the ISA's bit tables, written out independently of ptx/tcgen05_desc.cuh ---------------------
// "Shared Memory Descriptor": 0-13 start>>4, 16-29 LBO>>4, 32-45 SBO>>4, 46-48 0b001, 49-51 base
// offset, 52 LBO mode, 61-63 swizzle; encode(x) = (x & 0x3FFFF) >> 4.
uint64_t isa_smem_desc(uint32_t start, uint32_t lbo, uint32_t sbo, uint32_t swizzle_code, uint32_t base_offset = 0,
                       uint32_t lbo_mode = 0) {
  auto enc = [](uint32_t x) { return uint64_t((x & 0x3FFFFu) >> 4); };
  return enc(start) | enc(lbo) << 16 | enc(sbo) << 32 | uint64_t(1) << 46 | uint64_t(base_offset & 7) << 49 |
         uint64_t(lbo_mode & 1) << 52 | uint64_t(swizzle_code & 7) << 61;
}
// "Instruction descriptor" (.kind::f16 / .kind::f8f6f4): 4-5 dtype, 7-9 atype, 10-12 btype,
// 13/14 negate A/B, 15/16 transpose A/B, 17-22 N>>3, 24-28 M>>4.
uint32_t isa_idesc(uint32_t dtype, uint32_t atype, uint32_t btype, uint32_t m, uint32_t n, uint32_t ta = 0,
                   uint32_t tb = 0, uint32_t na = 0, uint32_t nb = 0) {
  return dtype << 4 | atype << 7 | btype << 10 | na << 13 | nb << 14 | ta << 15 | tb << 16 | (n >> 3) << 17 |
         (m >> 4) << 24;
}
constexpr uint32_t kSwNone = 0, kSw128 = 2, kSw64 = 4, kSw32 = 6;  // swizzle codes

// ---- CuTe layouts, evaluated here (the "Canonical Layouts" table is written in them) --------------
// A mode is up to three (shape, stride) pairs, colexicographic: coordinate c maps to
// sum_i ((c / prod_{j<i} shape_j) % shape_i) * stride_i, the last shape unbounded.
struct Mode {
  uint32_t shape[3];
  uint64_t stride[3];
  int n;
};
uint64_t eval(const Mode& m, uint32_t c) {
  uint64_t off = 0;
  for (int i = 0; i < m.n; ++i) {
    const uint32_t s = (i == m.n - 1) ? 0xFFFFFFFFu : m.shape[i];
    off += (c % s) * m.stride[i];
    c /= s;
  }
  return off;
}
// Swizzle<B,4,3> on a byte address: bits [4, 4+B) ^= bits [7, 7+B).
uint32_t swizzle(uint32_t b, uint32_t addr) { return addr ^ (((addr >> 7) & ((1u << b) - 1u)) << 4); }

// One row of the table: (MN mode, K mode) in elements, the swizzle's B, for T = 16 / element bytes,
// S = swizzle width / 16, LBO / SBO in elements.
struct Canonical {
  Mode mn, k;
  uint32_t swizzle_b;
};
Canonical canonical(bool mn_major, uint32_t swizzle_code, uint32_t eb, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  const uint32_t t = 16 / eb, lbo = lbo_bytes / eb, sbo = sbo_bytes / eb;
  const uint32_t s = swizzle_code == kSw128 ? 8 : swizzle_code == kSw64 ? 4 : swizzle_code == kSw32 ? 2 : 1;
  const uint32_t b = s == 8 ? 3 : s == 4 ? 2 : s == 2 ? 1 : 0;
  if (!mn_major) {
    if (s == 1)  // K-major, none: ((8,m),(T,2k)):((1T,SBO),(1,LBO))
      return {{{8, 0, 0}, {t, sbo, 0}, 2}, {{t, 0, 0}, {1, lbo, 0}, 2}, 0};
    // K-major, swizzled: ((8,m),(T,2k)):((S*T,SBO),(1,T))
    return {{{8, 0, 0}, {s * t, sbo, 0}, 2}, {{t, 0, 0}, {1, t, 0}, 2}, b};
  }
  if (s == 1)  // MN-major, none: ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
    return {{{t, 1, 0}, {1, t, sbo}, 3}, {{8, 0, 0}, {t, lbo, 0}, 2}, 0};
  // MN-major, swizzled: ((T,S,m),(8,k)):((1,T,LBO),(S*T,SBO))
  return {{{t, s, 0}, {1, t, lbo}, 3}, {{8, 0, 0}, {s * t, sbo, 0}, 2}, b};
}
uint32_t canonical_address(const Canonical& c, uint32_t start, uint32_t eb, uint32_t mn, uint32_t k) {
  return swizzle(c.swizzle_b, start + uint32_t((eval(c.mn, mn) + eval(c.k, k)) * eb));
}

// ---- random exact inputs ---------------------------------------------------------------------------
// bf16 k/8 with |k| <= 16 (exact), e4m3 with exponent fields 5..9 (no NaN, no subnormal), f16 k/16.
uint16_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t(u >> 16);
}
struct Operand {
  std::vector<uint32_t> bits;  // element encodings, row-major [rows][k]
  std::vector<double> value;
};
Operand random_operand(std::mt19937& rng, emu::ElemType t, uint32_t rows, uint32_t k) {
  Operand o;
  o.bits.resize(size_t(rows) * k);
  o.value.resize(o.bits.size());
  std::uniform_int_distribution<int> small(-16, 16), sign(0, 1), expo(5, 9), mant(0, 7);
  for (size_t i = 0; i < o.bits.size(); ++i) {
    switch (t) {
      case emu::ElemType::kBF16: {
        const float f = float(small(rng)) / 8.0f;
        o.bits[i] = bf16_bits(f);
        o.value[i] = f;
        break;
      }
      case emu::ElemType::kF16: {  // k/16 = (k) * 2^-4: exact in binary16
        const int v = small(rng);
        const double f = v / 16.0;
        uint32_t b = 0;
        if (v != 0) {
          const int a = std::abs(v);
          int e = 0;
          while ((a >> e) > 1) ++e;              // a = 1.xxx * 2^e
          const uint32_t m = uint32_t((a << (10 - e)) & 0x3FF);
          b = (v < 0 ? 0x8000u : 0u) | uint32_t(e - 4 + 15) << 10 | m;
        }
        o.bits[i] = b;
        o.value[i] = f;
        break;
      }
      case emu::ElemType::kE4M3: {  // 1 | 4 (bias 7) | 3: (8 + m) * 2^(e - 10)
        const uint32_t b = uint32_t(sign(rng) << 7 | expo(rng) << 3 | mant(rng));
        o.bits[i] = b;
        o.value[i] = std::ldexp(8.0 + (b & 7), int((b >> 3) & 15) - 10) * ((b >> 7) ? -1.0 : 1.0);
        break;
      }
      case emu::ElemType::kE5M2: {  // 1 | 5 (bias 15) | 2: (4 + m) * 2^(e - 17), e in 13..17
        const uint32_t b = uint32_t(sign(rng) << 7 | (expo(rng) + 8) << 2 | (mant(rng) & 3));
        o.bits[i] = b;
        o.value[i] = std::ldexp(4.0 + (b & 3), int((b >> 2) & 31) - 17) * ((b >> 7) ? -1.0 : 1.0);
        break;
      }
    }
  }
  return o;
}

// D[i][j] = sum_k A[i][k] * B[j][k], in double.
std::vector<double> gemm_nt(const std::vector<double>& a, const std::vector<double>& b, uint32_t m, uint32_t n,
                            uint32_t k) {
  std::vector<double> d(size_t(m) * n, 0.0);
  for (uint32_t i = 0; i < m; ++i)
    for (uint32_t j = 0; j < n; ++j) {
      double s = 0;
      for (uint32_t t = 0; t < k; ++t) s += a[size_t(i) * k + t] * b[size_t(j) * k + t];
      d[size_t(i) * n + j] = s;
    }
  return d;
}

int count_mismatches(const std::vector<float>& got, const std::vector<double>& ref, uint32_t cols,
                     bool report = true) {
  int bad = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    if (!(std::fabs(double(got[i]) - ref[i]) <= 1e-6 * (1.0 + std::fabs(ref[i])))) {
      if (bad == 0 && report) MESSAGE("first mismatch at row " << i / cols << " col " << i % cols << ": got " << got[i]
                                                      << ", expected " << ref[i]);
      ++bad;
    }
  return bad;
}

void put(emu::Smem& s, uint32_t addr, uint32_t bits, uint32_t eb) {
  for (uint32_t b = 0; b < eb; ++b) s.bytes[addr + b] = uint8_t(bits >> (8 * b));
}

float as_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// D rows [0, 128) of one CTA, read as the kernels read them: warp w, tcgen05.ld.32x32b.x<n> at lane
// 32w, column d_col.
std::vector<float> read_d(const emu::Tmem& tmem, uint32_t d_taddr, uint32_t n) {
  std::vector<float> d(size_t(128) * n);
  for (uint32_t w = 0; w < 4; ++w) {
    std::vector<uint32_t> r;
    REQUIRE(emu::ld_32x32b(tmem, w, d_taddr + (32u * w << 16), n, &r) == EmuError::kOk);
    for (uint32_t t = 0; t < 32; ++t)
      for (uint32_t j = 0; j < n; ++j) d[size_t(32 * w + t) * n + j] = as_float(r[size_t(t) * n + j]);
  }
  return d;
}

}  // namespace

TEST_SUITE("host tcgen05 emulator") {

TEST_CASE("shared-memory descriptor: every field decodes from its ISA bit range") {
  const uint32_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  for (int i = 0; i < 2000; ++i) {
    const uint32_t start = (rng() & 0x3FFF) << 4, lbo = (rng() & 0x3FFF) << 4, sbo = (rng() & 0x3FFF) << 4;
    const uint32_t sw = rng() & 7, base = rng() & 7, mode = rng() & 1;
    const emu::SmemDesc d = emu::decode_smem_desc(isa_smem_desc(start, lbo, sbo, sw, base, mode));
    CHECK(d.start == start);
    CHECK(d.lbo == lbo);
    CHECK(d.sbo == sbo);
    CHECK(d.swizzle_code == sw);
    CHECK(d.base_offset == base);
    CHECK(d.lbo_mode == mode);
    CHECK(d.fixed_46_48 == 1u);
    CHECK(d.reserved_clear);
    // The kernels' builder (ptx/tcgen05_desc.cuh) writes the same bits as the ISA table.
    CHECK(ptx::umma_smem_desc_pack(start, lbo, sbo, sw, base, mode) == isa_smem_desc(start, lbo, sbo, sw, base, mode));
  }
}

TEST_CASE("shared-memory descriptor: sm_100a legality") {
  const uint64_t ok = isa_smem_desc(0x400, 128, 1024, kSwNone);
  CHECK(emu::check_smem_desc(emu::decode_smem_desc(ok)) == EmuError::kOk);
  CHECK(emu::check_smem_desc(emu::decode_smem_desc(ok & ~(uint64_t(7) << 46))) == EmuError::kDescVersion);
  CHECK(emu::check_smem_desc(emu::decode_smem_desc(ok | uint64_t(1) << 14)) == EmuError::kDescReserved);
  CHECK(emu::check_smem_desc(emu::decode_smem_desc(ok | uint64_t(1) << 31)) == EmuError::kDescReserved);
  CHECK(emu::check_smem_desc(emu::decode_smem_desc(ok | uint64_t(1) << 57)) == EmuError::kDescReserved);
  for (uint32_t bad : {3u, 5u, 7u})
    CHECK(emu::check_smem_desc(emu::decode_smem_desc(isa_smem_desc(0, 16, 1024, bad))) == EmuError::kDescSwizzleCode);
  // Bit 52 (LBO as an absolute address) is sm_103a only ("Target ISA Note").
  CHECK(emu::check_smem_desc(emu::decode_smem_desc(isa_smem_desc(0, 16, 1024, kSw128, 0, 1))) ==
        EmuError::kDescLboAbsolute);
}

TEST_CASE("canonical layouts: the ISA's worked examples (exact CuTe layouts and LBO/SBO)") {
  // Each row: the example's major-ness, swizzle, element size, LBO and SBO in bytes, and its
  // "Exact layout" (in elements), evaluated here, against the emulator's address for every element.
  struct Example {
    const char* name;
    bool mn_major;
    uint32_t sw, eb, lbo, sbo;
    Mode mn, k;
    uint32_t swizzle_b, mn_extent, k_extent;
  };
  const Example ex[] = {
      // K-major, no swizzle, tf32: ((8,2),(4,4)):((4,32),(1,64)), LBO 64*4 B, SBO 32*4 B.
      {"K-major none tf32", false, kSwNone, 4, 256, 128, {{8, 2, 0}, {4, 32, 0}, 2}, {{4, 4, 0}, {1, 64, 0}, 2}, 0, 16, 16},
      // MN-major, no swizzle, bf16: ((8,1,2),(8,2)):((1,8,64),(8,128)), LBO 128*2 B, SBO 64*2 B.
      {"MN-major none bf16", true, kSwNone, 2, 256, 128, {{8, 1, 2}, {1, 8, 64}, 3}, {{8, 2, 0}, {8, 128, 0}, 2}, 0, 16, 16},
      // MN-major, 32B swizzle, bf16: Swizzle<1,4,3> o ((8,2,2),(8,2)):((1,8,128),(16,256)), LBO 256 B, SBO 512 B.
      {"MN-major 32B bf16", true, kSw32, 2, 256, 512, {{8, 2, 2}, {1, 8, 128}, 3}, {{8, 2, 0}, {16, 256, 0}, 2}, 1, 32, 16},
      // MN-major, 64B swizzle, bf16: Swizzle<2,4,3> o ((8,4,2),(8,2)):((1,8,256),(32,512)), LBO 512 B, SBO 1024 B.
      {"MN-major 64B bf16", true, kSw64, 2, 512, 1024, {{8, 4, 2}, {1, 8, 256}, 3}, {{8, 2, 0}, {32, 512, 0}, 2}, 2, 64, 16},
  };
  const uint32_t start = 0x2000;  // on every pattern's repeat boundary
  for (const Example& e : ex) {
    INFO(e.name);
    const emu::SmemDesc d = emu::decode_smem_desc(isa_smem_desc(start, e.lbo, e.sbo, e.sw));
    int bad = 0;
    for (uint32_t mn = 0; mn < e.mn_extent; ++mn)
      for (uint32_t k = 0; k < e.k_extent; ++k) {
        uint32_t got = 0;
        REQUIRE(emu::operand_address(d, e.mn_major, e.eb, mn, k, &got) == EmuError::kOk);
        const uint32_t want = swizzle(e.swizzle_b, start + uint32_t((eval(e.mn, mn) + eval(e.k, k)) * e.eb));
        bad += got != want;
      }
    CHECK(bad == 0);
  }
}

TEST_CASE("canonical layouts: every row of the table, for 1- and 2-byte elements") {
  // Rows of "Canonical Layouts" (canonical() above) with their LBO/SBO, against the emulator.
  struct Row {
    bool mn_major;
    uint32_t sw, lbo, sbo, mn_extent;
  };
  const Row rows[] = {
      {false, kSwNone, 128, 1024, 24},  {false, kSwNone, 2048, 256, 32}, {false, kSw32, 16, 256, 24},
      {false, kSw64, 16, 512, 24},      {false, kSw128, 16, 1024, 32},   {true, kSwNone, 1024, 128, 0},
      {true, kSw32, 1024, 256, 0},      {true, kSw64, 2048, 512, 0},     {true, kSw128, 4096, 1024, 0},
  };
  const uint32_t start = 0x4000;
  for (uint32_t eb : {1u, 2u})
    for (const Row& r : rows) {
      INFO((r.mn_major ? "MN" : "K") << "-major swizzle code " << r.sw << " element bytes " << eb);
      const Canonical c = canonical(r.mn_major, r.sw, eb, r.lbo, r.sbo);
      const emu::SmemDesc d = emu::decode_smem_desc(isa_smem_desc(start, r.lbo, r.sbo, r.sw));
      const uint32_t k_extent = 32 / eb;              // one instruction's K
      const uint32_t mn_extent = r.mn_extent ? r.mn_extent : 3 * (128 / eb);  // MN-major: 3 swizzle rows wide
      int bad = 0;
      for (uint32_t mn = 0; mn < mn_extent; ++mn)
        for (uint32_t k = 0; k < k_extent; ++k) {
          uint32_t got = 0;
          REQUIRE(emu::operand_address(d, r.mn_major, eb, mn, k, &got) == EmuError::kOk);
          bad += got != canonical_address(c, start, eb, mn, k);
        }
      CHECK(bad == 0);
    }
}

TEST_CASE("canonical layouts: K-major 128B swizzle stores chunk c of row r at chunk c ^ (r % 8)") {
  // The ISA's "K major 128B swizzling" figure: in each 8 x 128-byte atom, row r's 16-byte chunk c
  // sits at chunk position c XOR r.
  const uint32_t start = 0x6000;
  const emu::SmemDesc d = emu::decode_smem_desc(isa_smem_desc(start, 16, 1024, kSw128));
  for (uint32_t r = 0; r < 16; ++r)
    for (uint32_t kstep = 0; kstep < 4; ++kstep) {  // the four 32-byte K steps inside the row
      const emu::SmemDesc dk = emu::decode_smem_desc(isa_smem_desc(start + 32 * kstep, 16, 1024, kSw128));
      for (uint32_t k = 0; k < 16; ++k) {  // bf16 elements of the step
        uint32_t got = 0;
        REQUIRE(emu::operand_address(dk, false, 2, r, k, &got) == EmuError::kOk);
        const uint32_t logical_chunk = (32 * kstep + 2 * k) / 16;
        const uint32_t want = start + (r / 8) * 1024 + (r % 8) * 128 + ((logical_chunk ^ (r % 8)) * 16) + (2 * k) % 16;
        CHECK(got == want);
      }
    }
  (void)d;
}

TEST_CASE("instruction descriptor: fields, and the kernels' builders against the ISA table") {
  const emu::InstrDesc d = emu::decode_instr_desc(isa_idesc(1, 1, 1, 128, 64, 0, 1, 1, 0));
  CHECK(d.dtype == 1u);
  CHECK(d.atype == 1u);
  CHECK(d.btype == 1u);
  CHECK(d.m == 128u);
  CHECK(d.n == 64u);
  CHECK(d.transpose_a == 0u);
  CHECK(d.transpose_b == 1u);
  CHECK(d.negate_a == 1u);
  CHECK(d.negate_b == 0u);
  CHECK(d.reserved_clear);
  CHECK_FALSE(emu::decode_instr_desc(isa_idesc(1, 1, 1, 128, 64) | 1u << 23).reserved_clear);
  CHECK(emu::decode_instr_desc(isa_idesc(1, 0, 0, 256, 248)).n == 248u);
  CHECK(emu::decode_instr_desc(isa_idesc(1, 0, 0, 256, 248)).m == 256u);
  // The builders the kernels use produce the ISA's bits.
  CHECK(ptx::make_umma_idesc_f16<ptx::UmmaF16Type::kBF16, ptx::UmmaDType::kF32, 128, 64>() == isa_idesc(1, 1, 1, 128, 64));
  CHECK(ptx::make_umma_idesc_f16<ptx::UmmaF16Type::kF16, ptx::UmmaDType::kF32, 64, 200, ptx::UmmaMajor::kMN,
                                 ptx::UmmaMajor::kMN>() == isa_idesc(1, 0, 0, 64, 200, 1, 1));
  CHECK(ptx::make_umma_idesc_f8f6f4<ptx::UmmaF8F6F4Type::kE4M3, ptx::UmmaF8F6F4Type::kE5M2, ptx::UmmaDType::kF32, 128,
                                    24>() == isa_idesc(1, 0, 1, 128, 24));
  CHECK(plan::kIdescF16Pair == isa_idesc(1, 1, 1, 256, 64));
}

TEST_CASE("Matrix Shape table: the emulator's reading and ptx::umma_shape_ok agree on every shape") {
  int disagree = 0;
  for (int g = 0; g <= 3; ++g)
    for (uint32_t m = 0; m <= 512; m += 16)
      for (uint32_t n = 0; n <= 512; ++n) disagree += emu::shape_in_isa_table(g, m, n) != ptx::umma_shape_ok(g, int(m), int(n));
  CHECK(disagree == 0);
  CHECK(emu::shape_in_isa_table(1, 128, 8));   // rejected by the old table
  CHECK(emu::shape_in_isa_table(2, 128, 16));  // rejected by the old table
  CHECK_FALSE(emu::shape_in_isa_table(2, 256, 8));
}

TEST_CASE("element encodings") {
  struct Row { emu::ElemType t; uint32_t bits; double value; };
  const Row rows[] = {
      {emu::ElemType::kBF16, 0x3F80, 1.0},     {emu::ElemType::kBF16, 0xC040, -3.0},
      {emu::ElemType::kF16, 0x3C00, 1.0},      {emu::ElemType::kF16, 0x0001, std::ldexp(1.0, -24)},
      {emu::ElemType::kF16, 0x7BFF, 65504.0},  {emu::ElemType::kF16, 0xB800, -0.5},
      {emu::ElemType::kE4M3, 0x38, 1.0},       {emu::ElemType::kE4M3, 0x7E, 448.0},
      {emu::ElemType::kE4M3, 0x01, std::ldexp(1.0, -9)}, {emu::ElemType::kE4M3, 0xC4, -3.0},
      {emu::ElemType::kE5M2, 0x3C, 1.0},       {emu::ElemType::kE5M2, 0x7B, 57344.0},
      {emu::ElemType::kE5M2, 0x01, std::ldexp(1.0, -16)},
  };
  for (const Row& r : rows) {
    INFO("bits " << r.bits);
    CHECK(emu::decode_element(r.t, r.bits) == r.value);
  }
  CHECK(std::isnan(emu::decode_element(emu::ElemType::kE4M3, 0x7F)));
  CHECK(std::isinf(emu::decode_element(emu::ElemType::kE5M2, 0x7C)));
}

TEST_CASE("TMEM allocation rules") {
  emu::Tmem t;
  uint32_t a = 0, b = 0, c = 0;
  CHECK(t.alloc(96, &a) == EmuError::kAllocSize);
  CHECK(t.alloc(16, &a) == EmuError::kAllocSize);
  CHECK(t.alloc(1024, &a) == EmuError::kAllocSize);
  REQUIRE(t.alloc(128, &a) == EmuError::kOk);
  REQUIRE(t.alloc(256, &b) == EmuError::kOk);
  REQUIRE(t.alloc(64, &c) == EmuError::kOk);
  CHECK(a % 128 == 0u);
  CHECK(b % 256 == 0u);
  CHECK(t.alloc(256, &c) == EmuError::kAllocFull);
  // A dealloc frees exactly one allocation: not a part of one, not two at once.
  CHECK(t.dealloc(a + 64, 64) == EmuError::kDeallocMismatch);
  CHECK(t.dealloc(a, 64) == EmuError::kDeallocMismatch);
  CHECK(t.dealloc(a, 512) == EmuError::kDeallocMismatch);
  CHECK(t.dealloc(a | (32u << 16), 128) == EmuError::kDeallocMismatch);  // lane must be 0
  CHECK(t.at_exit() == EmuError::kNotFreedAtExit);
  t.relinquish();
  CHECK(t.alloc(32, &c) == EmuError::kAllocPermit);
  CHECK(t.live(b, b + 256));  // relinquish frees nothing
  CHECK(t.dealloc(a, 128) == EmuError::kOk);
  CHECK(t.dealloc(a, 128) == EmuError::kDeallocMismatch);
  CHECK(t.dealloc(b, 256) == EmuError::kOk);
  uint32_t last = 0;
  for (uint32_t col = 0; col < 512; col += 64) last = t.live(col, col + 64) ? col : last;
  CHECK(t.dealloc(last, 64) == EmuError::kOk);
  CHECK(t.at_exit() == EmuError::kOk);
}

TEST_CASE("tcgen05.ld / st .32x32b: thread t, register j <-> lane 32w + t, column c + j") {
  const uint32_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  emu::Tmem t;
  uint32_t base = 0;
  REQUIRE(t.alloc(256, &base) == EmuError::kOk);
  // The fragment figure, as a table: (address lane, column, thread, register) -> (lane, column).
  struct Row { uint32_t lane0, col0, thread, reg, lane, col; };
  const Row rows[] = {{0, 0, 0, 0, 0, 0}, {0, 5, 31, 3, 31, 8}, {32, 0, 1, 127, 33, 127}, {96, 128, 31, 127, 127, 255}};
  for (const Row& r : rows) {
    const emu::LaneColumn lc = emu::map_32x32b(base + (r.lane0 << 16 | r.col0), r.thread, r.reg);
    CHECK(lc.lane == r.lane);
    CHECK(lc.column == base + r.col);
  }
  // Round trip through the four warps with every .num, against a direct cell read.
  for (uint32_t num = 1; num <= 128; num *= 2)
    for (uint32_t w = 0; w < 4; ++w) {
      std::vector<uint32_t> regs(32 * num), back;
      for (auto& v : regs) v = rng();
      const uint32_t taddr = base + (32 * w << 16) + (num - 1);
      REQUIRE(emu::st_32x32b(t, w, taddr, num, regs) == EmuError::kOk);
      REQUIRE(emu::ld_32x32b(t, w, taddr, num, &back) == EmuError::kOk);
      CHECK(back == regs);
      int bad = 0;
      for (uint32_t th = 0; th < 32; ++th)
        for (uint32_t j = 0; j < num; ++j) bad += t.cell(32 * w + th, base + num - 1 + j) != regs[th * num + j];
      CHECK(bad == 0);
    }
  std::vector<uint32_t> r;
  CHECK(emu::ld_32x32b(t, 0, base + (32u << 16), 4, &r) == EmuError::kLaneQuarter);  // warp 0 at lane 32
  CHECK(emu::ld_32x32b(t, 5, base + (32u << 16), 4, &r) == EmuError::kOk);           // warp 5 = quarter 1
  CHECK(emu::ld_32x32b(t, 0, base, 3, &r) == EmuError::kLdStShape);
  CHECK(emu::ld_32x32b(t, 0, base + 250, 8, &r) == EmuError::kTmemAddress);  // past the allocation
}

TEST_CASE("tcgen05.mma kind::f16 / f8f6f4 against fp64, every major-ness and swizzle, accumulate and overwrite") {
  const uint32_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  struct Layout { bool mn_major; uint32_t sw, lbo, sbo; };
  // LBO/SBO of tiles of 128 (A) or 64 (B) MN rows and one instruction's 32 bytes of K.
  const Layout kmajor[] = {{false, kSwNone, 128, 256}, {false, kSw32, 16, 256}, {false, kSw64, 16, 512},
                           {false, kSw128, 16, 1024}};
  // MN-major: SBO one atom (8 K rows x the swizzle width) and LBO four (room for fp8's 32 K rows).
  const Layout mnmajor[] = {{true, kSwNone, 2048, 128}, {true, kSw32, 1024, 256}, {true, kSw64, 2048, 512},
                            {true, kSw128, 4096, 1024}};
  struct Types { emu::Kind kind; emu::ElemType t; uint32_t code; };
  const Types types[] = {{emu::Kind::kF16, emu::ElemType::kBF16, 1}, {emu::Kind::kF16, emu::ElemType::kF16, 0},
                         {emu::Kind::kF8F6F4, emu::ElemType::kE4M3, 0}, {emu::Kind::kF8F6F4, emu::ElemType::kE5M2, 1}};
  const uint32_t m = 128, n = 64;
  for (const Types& ty : types)
    for (int ai = 0; ai < 8; ++ai)
      for (int bi = 0; bi < 8; ++bi) {
        const Layout la = ai < 4 ? kmajor[ai] : mnmajor[ai - 4], lb = bi < 4 ? kmajor[bi] : mnmajor[bi - 4];
        const uint32_t eb = emu::elem_bytes(ty.t), k = 32 / eb;
        INFO("type " << int(ty.t) << " A " << (la.mn_major ? "MN" : "K") << " sw " << la.sw << ", B "
                     << (lb.mn_major ? "MN" : "K") << " sw " << lb.sw);
        auto cta = std::make_unique<emu::Cta>();
        uint32_t tmem = 0;
        REQUIRE(cta->tmem.alloc(128, &tmem) == EmuError::kOk);
        const uint32_t a_addr = 0x1000, b_addr = 0x9000;
        const Canonical ca = canonical(la.mn_major, la.sw, eb, la.lbo, la.sbo);
        const Canonical cb = canonical(lb.mn_major, lb.sw, eb, lb.lbo, lb.sbo);
        // Two instructions: overwrite with (A0, B0), accumulate (A1, B1).
        std::vector<double> ref(size_t(m) * n, 0.0);
        for (int step = 0; step < 2; ++step) {
          const Operand a = random_operand(rng, ty.t, m, k), b = random_operand(rng, ty.t, n, k);
          for (uint32_t i = 0; i < m; ++i)
            for (uint32_t kk = 0; kk < k; ++kk)
              put(cta->smem, canonical_address(ca, a_addr, eb, i, kk), a.bits[i * k + kk], eb);
          for (uint32_t j = 0; j < n; ++j)
            for (uint32_t kk = 0; kk < k; ++kk)
              put(cta->smem, canonical_address(cb, b_addr, eb, j, kk), b.bits[j * k + kk], eb);
          const std::vector<double> part = gemm_nt(a.value, b.value, m, n, k);
          for (size_t i = 0; i < ref.size(); ++i) ref[i] = (step ? ref[i] : 0.0) + part[i];
          emu::MmaOp op;
          op.kind = ty.kind;
          op.d_tmem = tmem;
          op.a_desc = isa_smem_desc(a_addr, la.lbo, la.sbo, la.sw);
          op.b_desc = isa_smem_desc(b_addr, lb.lbo, lb.sbo, lb.sw);
          op.idesc = isa_idesc(1, ty.code, ty.code, m, n, la.mn_major, lb.mn_major);
          op.enable_input_d = step > 0;
          REQUIRE(emu::mma({cta.get()}, op) == EmuError::kOk);
        }
        CHECK(count_mismatches(read_d(cta->tmem, tmem, n), ref, n) == 0);
      }
}

TEST_CASE("tcgen05.mma: negation, TS form, and what the model refuses") {
  const uint32_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  const uint32_t m = 128, n = 32, k = 16;
  auto cta = std::make_unique<emu::Cta>();
  uint32_t tmem = 0;
  REQUIRE(cta->tmem.alloc(64, &tmem) == EmuError::kOk);
  const Operand a = random_operand(rng, emu::ElemType::kBF16, m, k), b = random_operand(rng, emu::ElemType::kBF16, n, k);
  const Canonical c = canonical(false, kSwNone, 2, 128, 256);
  for (uint32_t i = 0; i < m; ++i)
    for (uint32_t kk = 0; kk < k; ++kk) put(cta->smem, canonical_address(c, 0x0, 2, i, kk), a.bits[i * k + kk], 2);
  for (uint32_t j = 0; j < n; ++j)
    for (uint32_t kk = 0; kk < k; ++kk) put(cta->smem, canonical_address(c, 0x8000, 2, j, kk), b.bits[j * k + kk], 2);
  const std::vector<double> ref = gemm_nt(a.value, b.value, m, n, k);
  emu::MmaOp op;
  op.d_tmem = tmem;
  op.a_desc = isa_smem_desc(0x0, 128, 256, kSwNone);
  op.b_desc = isa_smem_desc(0x8000, 128, 256, kSwNone);
  op.idesc = isa_idesc(1, 1, 1, m, n, 0, 0, /*negate A*/ 1, 0);
  REQUIRE(emu::mma({cta.get()}, op) == EmuError::kOk);
  std::vector<double> neg(ref);
  for (double& v : neg) v = -v;
  CHECK(count_mismatches(read_d(cta->tmem, tmem, n), neg, n) == 0);
  op.idesc = isa_idesc(1, 1, 1, m, n, 0, 0, 1, 1);  // both negated: the plain product
  REQUIRE(emu::mma({cta.get()}, op) == EmuError::kOk);
  CHECK(count_mismatches(read_d(cta->tmem, tmem, n), ref, n) == 0);

  // TS: A in TMEM columns [32, 40), row i in lane i, two bf16 per column (low half = even k).
  for (uint32_t i = 0; i < m; ++i)
    for (uint32_t col = 0; col < 8; ++col)
      cta->tmem.set_cell(i, tmem + 32 + col, a.bits[i * k + 2 * col] | a.bits[i * k + 2 * col + 1] << 16);
  op.a_from_tmem = true;
  op.a_tmem = tmem + 32;
  op.idesc = isa_idesc(1, 1, 1, m, n);
  REQUIRE(emu::mma({cta.get()}, op) == EmuError::kOk);
  CHECK(count_mismatches(read_d(cta->tmem, tmem, n), ref, n) == 0);

  // Refusals.
  op.idesc = isa_idesc(1, 1, 1, m, n, /*transpose A*/ 1, 0);
  CHECK(emu::mma({cta.get()}, op) == EmuError::kTmemATransposed);
  op.a_from_tmem = false;
  op.idesc = isa_idesc(1, 1, 1, 192, 32);  // M = 192 is encodable (M >> 4 = 12), not in the table
  CHECK(emu::mma({cta.get()}, op) == EmuError::kIllegalShape);
  op.idesc = isa_idesc(1, 1, 1, 128, 0);
  CHECK(emu::mma({cta.get()}, op) == EmuError::kIllegalShape);
  op.idesc = isa_idesc(1, 1, 1, 64, 32);
  CHECK(emu::mma({cta.get()}, op) == EmuError::kNotModelled);  // M = 64 TMEM layout
  op.idesc = isa_idesc(0, 0, 0, 128, 32);
  CHECK(emu::mma({cta.get()}, op) == EmuError::kNotModelled);  // f16 accumulator
  op.idesc = isa_idesc(1, 1, 1, 128, 128);
  CHECK(emu::mma({cta.get()}, op) == EmuError::kTmemAddress);  // D past the 64-column allocation
  op.idesc = isa_idesc(1, 1, 1, 128, 32);
  op.a_desc = isa_smem_desc(0x0, 128, 256, kSwNone, 0, 1);
  CHECK(emu::mma({cta.get()}, op) == EmuError::kDescLboAbsolute);
}

// cta_group::2 with M = 128 (the ISA's data-path Layout B), from the ISA's description alone: the
// pair computes D[128 x N] = A[128 x K] B^T; CTA r supplies A rows [64 r, 64 r + 64) and B (N) columns
// [N/2 r, N/2 r + N/2) from its own shared memory at the descriptors' offsets, and holds D rows
// [64 r, 64 r + 64); its row i, column n sits in lane i (n < N/2) or lane 64 + i (n >= N/2), at
// column n mod N/2 of the D address. Hand-computed case: A selects one K index per row (A_r[i][k] = 1
// iff k == i mod 16), B_c[j][k] = 100 c + j + 2 k, so D_r[i][n] = B_{n / 16}[n mod 16][i mod 16] with
// N = 32, every value an integer exact in bf16 and f32.
TEST_CASE("tcgen05.mma cta_group::2 M = 128: Layout B, hand-computed cells and fp64") {
  auto c0 = std::make_unique<emu::Cta>(), c1 = std::make_unique<emu::Cta>();
  emu::Cta* ctas[2] = {c0.get(), c1.get()};
  uint32_t tmem = 0;
  REQUIRE(emu::alloc_pair(c0->tmem, c1->tmem, 32, &tmem) == EmuError::kOk);
  const uint32_t n = 32, k = 16, a_at = 0x0, b_at = 0x4000;
  const Canonical c = canonical(false, kSwNone, 2, 128, 256);  // K-major, no swizzle, LBO 128, SBO 256
  for (uint32_t r = 0; r < 2; ++r) {
    for (uint32_t i = 0; i < 64; ++i)
      for (uint32_t kk = 0; kk < k; ++kk)
        put(ctas[r]->smem, canonical_address(c, a_at, 2, i, kk), bf16_bits(kk == i % 16 ? 1.0f : 0.0f), 2);
    for (uint32_t j = 0; j < n / 2; ++j)
      for (uint32_t kk = 0; kk < k; ++kk)
        put(ctas[r]->smem, canonical_address(c, b_at, 2, j, kk), bf16_bits(float(100 * r + j + 2 * kk)), 2);
  }
  emu::MmaOp op;
  op.cta_group = 2;
  op.d_tmem = tmem;
  op.a_desc = isa_smem_desc(a_at, 128, 256, kSwNone);
  op.b_desc = isa_smem_desc(b_at, 128, 256, kSwNone);
  op.idesc = isa_idesc(1, 1, 1, 128, n);
  REQUIRE(emu::mma({c0.get(), c1.get()}, op) == EmuError::kOk);
  auto cell = [&](int r, uint32_t lane, uint32_t col) { return as_float(ctas[r]->tmem.cell(lane, tmem + col)); };
  // CTA 0 row 3 (logical row 3): n = 5 -> lane 3, column 5: B_0[5][3] = 5 + 6 = 11.
  CHECK(cell(0, 3, 5) == 11.0f);
  // CTA 0 row 3, n = 20 -> lane 67, column 4: B_1[4][3] = 100 + 4 + 6 = 110.
  CHECK(cell(0, 67, 4) == 110.0f);
  // CTA 1 row 37 (logical row 101): i mod 16 = 5; n = 15 -> lane 37, column 15: B_0[15][5] = 25.
  CHECK(cell(1, 37, 15) == 25.0f);
  // CTA 1 row 63, n = 31 -> lane 127, column 15: B_1[15][15] = 100 + 15 + 30 = 145.
  CHECK(cell(1, 127, 15) == 145.0f);
  // D is 16 columns wide in each CTA: column 16 is never written (the allocation is 32 wide).
  CHECK(cell(0, 0, 16) == 0.0f);
  CHECK(cell(1, 64, 16) == 0.0f);
  // Every cell, through d_location, against the formula.
  int bad = 0;
  for (uint32_t r = 0; r < 2; ++r)
    for (uint32_t i = 0; i < 64; ++i)
      for (uint32_t nn = 0; nn < n; ++nn) {
        uint32_t lane = 0, col = 0;
        REQUIRE(emu::d_location(2, 128, n, i, nn, &lane, &col) == EmuError::kOk);
        CHECK(lane == i + (nn >= 16 ? 64u : 0u));
        CHECK(col == nn % 16);
        bad += cell(int(r), lane, col) != float(100 * (nn / 16) + nn % 16 + 2 * (i % 16));
      }
  CHECK(bad == 0);
  // Layouts A and D are the identity; M = 64 is not modelled.
  uint32_t lane = 0, col = 0;
  REQUIRE(emu::d_location(2, 256, 64, 100, 40, &lane, &col) == EmuError::kOk);
  CHECK((lane == 100u && col == 40u));
  REQUIRE(emu::d_location(1, 128, 64, 7, 63, &lane, &col) == EmuError::kOk);
  CHECK((lane == 7u && col == 63u));
  CHECK(emu::d_location(1, 64, 64, 0, 0, &lane, &col) == EmuError::kNotModelled);
  CHECK(emu::d_location(2, 128, 64, 64, 0, &lane, &col) == EmuError::kTmemAddress);  // 64 rows per CTA
  // The TS form of M = 128 pair is not modelled; a D past the allocation is refused (N / 2 columns).
  op.a_from_tmem = true;
  CHECK(emu::mma({c0.get(), c1.get()}, op) == EmuError::kNotModelled);
  op.a_from_tmem = false;
  op.idesc = isa_idesc(1, 1, 1, 128, 128);  // 64 columns from column 0: past the 32-column allocation
  CHECK(emu::mma({c0.get(), c1.get()}, op) == EmuError::kTmemAddress);
  op.idesc = isa_idesc(1, 1, 1, 128, 24);  // N = 24: not a multiple of 16 for cta_group::2
  CHECK(emu::mma({c0.get(), c1.get()}, op) == EmuError::kIllegalShape);
  // The same operands read as M = 256 (Layout A): each CTA supplies 128 A rows (its rows 64-127 are
  // zero here, so D rows 64-127 are 0), D in lanes = rows, N columns from column 0; B still split by N.
  op.idesc = isa_idesc(1, 1, 1, 256, n);
  REQUIRE(emu::mma({c0.get(), c1.get()}, op) == EmuError::kOk);
  CHECK(cell(1, 5, 20) == 100.0f + 4 + 10);  // CTA 1 row 5, n = 20: B_1[4][5]
  CHECK(cell(0, 63, 31) == 145.0f);         // CTA 0 row 63, n = 31: B_1[15][15]
  CHECK(cell(0, 64, 0) == 0.0f);            // a zero A row
  REQUIRE(c0->tmem.dealloc(tmem, 32) == EmuError::kOk);
  REQUIRE(c1->tmem.dealloc(tmem, 32) == EmuError::kOk);
}

// The same form with random bf16 and fp16 inputs, 128B-swizzled MN-major operands (the shape the FA4
// 2-CTA backward's dQ MMA uses: A MN-major, B MN-major), accumulating over K steps, against fp64.
TEST_CASE("tcgen05.mma cta_group::2 M = 128: random MN-major SW128 operands over K steps against fp64") {
  const uint32_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  for (const emu::ElemType t : {emu::ElemType::kBF16, emu::ElemType::kF16}) {
    auto c0 = std::make_unique<emu::Cta>(), c1 = std::make_unique<emu::Cta>();
    emu::Cta* ctas[2] = {c0.get(), c1.get()};
    uint32_t tmem = 0;
    REQUIRE(emu::alloc_pair(c0->tmem, c1->tmem, 128, &tmem) == EmuError::kOk);
    const uint32_t n = 128, k = 64, a_at = 0x2000, b_at = 0x8000;
    // Logical A [128 x k], B [n x k]; CTA r's share: A rows [64 r, +64), B rows [64 r, +64).
    const Operand a = random_operand(rng, t, 128, k), b = random_operand(rng, t, n, k);
    // MN-major, 128B swizzle: ((8,8,m),(8,k)) : ((1,8,LBO),(64,SBO)), LBO unused for 64 MN elements, SBO 1024.
    const Canonical c = canonical(true, kSw128, 2, 8192, 1024);
    for (uint32_t r = 0; r < 2; ++r)
      for (uint32_t i = 0; i < 64; ++i)
        for (uint32_t kk = 0; kk < k; ++kk) {
          put(ctas[r]->smem, canonical_address(c, a_at, 2, i, kk), a.bits[(64 * r + i) * k + kk], 2);
          put(ctas[r]->smem, canonical_address(c, b_at, 2, i, kk), b.bits[(64 * r + i) * k + kk], 2);
        }
    const uint32_t idesc = isa_idesc(1, t == emu::ElemType::kBF16 ? 1 : 0, t == emu::ElemType::kBF16 ? 1 : 0, 128, n,
                                     /*transpose A, B: MN-major*/ 1, 1);
    for (uint32_t s = 0; s < k / 16; ++s) {  // K step s: 16 K rows = 2 core matrices = 2 SBO further
      emu::MmaOp op;
      op.cta_group = 2;
      op.d_tmem = tmem;
      op.a_desc = isa_smem_desc(a_at + s * 2048, 8192, 1024, kSw128);
      op.b_desc = isa_smem_desc(b_at + s * 2048, 8192, 1024, kSw128);
      op.idesc = idesc;
      op.enable_input_d = s > 0;
      REQUIRE(emu::mma({c0.get(), c1.get()}, op) == EmuError::kOk);
    }
    const std::vector<double> ref = gemm_nt(a.value, b.value, 128, n, k);
    std::vector<float> got(size_t(128) * n);
    for (uint32_t r = 0; r < 2; ++r)
      for (uint32_t i = 0; i < 64; ++i)
        for (uint32_t nn = 0; nn < n; ++nn) {
          // Hand-written Layout B here (not d_location): lanes [0, 64) hold the first 64 columns.
          const uint32_t lane = nn < 64 ? i : 64 + i, col = nn % 64;
          got[size_t(64 * r + i) * n + nn] = as_float(ctas[r]->tmem.cell(lane, tmem + col));
        }
    CHECK(count_mismatches(got, ref, n) == 0);
    REQUIRE(c0->tmem.dealloc(tmem, 128) == EmuError::kOk);
    REQUIRE(c1->tmem.dealloc(tmem, 128) == EmuError::kOk);
  }
}

TEST_CASE("K steps through a swizzled K-major tile: +32 bytes per step is right there") {
  // 128 rows x 128 bytes (64 bf16 of K), 128B swizzle as a TMA box writes it (row r's chunk c at
  // chunk c ^ (r % 8) of its 128-byte line, 8-row atoms 1024 B apart), four steps at +32 B.
  const uint32_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  const uint32_t m = 128, n = 64, k = 64, base_a = 0x0400 * 4, base_b = 0x8000;
  auto cta = std::make_unique<emu::Cta>();
  uint32_t tmem = 0;
  REQUIRE(cta->tmem.alloc(64, &tmem) == EmuError::kOk);
  const Operand a = random_operand(rng, emu::ElemType::kBF16, m, k), b = random_operand(rng, emu::ElemType::kBF16, n, k);
  auto place = [&](uint32_t base, const Operand& o, uint32_t rows) {
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t kk = 0; kk < k; ++kk) {
        const uint32_t byte = 2 * kk, chunk = byte / 16;
        put(cta->smem, base + (r / 8) * 1024 + (r % 8) * 128 + ((chunk ^ (r % 8)) * 16) + byte % 16, o.bits[r * k + kk], 2);
      }
  };
  place(base_a, a, m);
  place(base_b, b, n);
  const flashptx::umma::SmemTile tile{ptx::UmmaMajor::kK, ptx::UmmaSwizzle::k128B, 16, 1024, 2, 0};
  for (uint32_t s = 0; s < 4; ++s) {
    CHECK(tile.kstep_offset(s) == 32 * s);
    emu::MmaOp op;
    op.d_tmem = tmem;
    op.a_desc = tile.desc(base_a, s);
    op.b_desc = tile.desc(base_b, s);
    op.idesc = isa_idesc(1, 1, 1, m, n);
    op.enable_input_d = s > 0;
    REQUIRE(emu::mma({cta.get()}, op) == EmuError::kOk);
  }
  CHECK(count_mismatches(read_d(cta->tmem, tmem, n), gemm_nt(a.value, b.value, m, n, k), n) == 0);
}

// ---- the sm_100a test kernels, replayed ---------------------------------------------------------------
namespace {

// Operand rows as the kernels receive them: [rows x 128 bytes], K contiguous.
struct KernelInputs {
  std::vector<uint8_t> a, b;  // bytes
  std::vector<double> av, bv;
  uint32_t k;
};
KernelInputs kernel_inputs(std::mt19937& rng, bool fp8, uint32_t m) {
  const emu::ElemType t = fp8 ? emu::ElemType::kE4M3 : emu::ElemType::kBF16;
  const uint32_t eb = fp8 ? 1 : 2, k = plan::kRowBytes / eb;
  KernelInputs in;
  in.k = k;
  const Operand a = random_operand(rng, t, m, k), b = random_operand(rng, t, plan::kN, k);
  in.av = a.value;
  in.bv = b.value;
  auto bytes = [&](const Operand& o) {
    std::vector<uint8_t> v(o.bits.size() * eb);
    for (size_t i = 0; i < o.bits.size(); ++i)
      for (uint32_t x = 0; x < eb; ++x) v[i * eb + x] = uint8_t(o.bits[i] >> (8 * x));
    return v;
  };
  in.a = bytes(a);
  in.b = bytes(b);
  return in;
}

// The kernel's tile_to_smem: 16-byte chunk kb of row i at tile.byte_offset (umma_issue.h).
void kernel_tile_to_smem(emu::Smem& s, uint32_t addr, const uint8_t* rows, uint32_t n_rows, bool fp8) {
  for (uint32_t i = 0; i < n_rows; ++i)
    for (uint32_t kb = 0; kb < uint32_t(plan::kRowBytes); kb += 16)
      std::memcpy(&s.bytes[addr + plan::chunk_offset(fp8, i, kb)], rows + i * plan::kRowBytes + kb, 16);
}

// The kernel's a_to_tmem: warp w stores its 32 rows with tcgen05.st.32x32b.x32 at lane 32w, column kACol.
void kernel_a_to_tmem(emu::Tmem& t, uint32_t tmem_base, const uint8_t* rows) {
  for (uint32_t w = 0; w < 4; ++w) {
    std::vector<uint32_t> regs(32 * 32);
    for (uint32_t th = 0; th < 32; ++th)
      std::memcpy(&regs[th * 32], rows + (32 * w + th) * plan::kRowBytes, plan::kRowBytes);
    REQUIRE(emu::st_32x32b(t, w, tmem_base + (32 * w << 16) + plan::kACol, 32, regs) == EmuError::kOk);
  }
}

emu::MmaOp to_op(const plan::Issue& is, bool fp8, int cta_group) { return flashptx_test::mma_op(is, cta_group, fp8); }

// Replays umma_cta1_body<fp8, ts> (tests/kernels_sm100/umma.cu): stores, the issue plan's K steps,
// the D read. `advance_override` replaces the plan's descriptors with start + s * bytes (the old
// kernels' literal), for the test that shows what the old advance computed.
std::vector<float> replay_cta1(const KernelInputs& in, bool fp8, bool ts, uint32_t a_smem, uint32_t b_smem,
                               int advance_override = -1) {
  auto cta = std::make_unique<emu::Cta>();
  uint32_t tmem = 0;
  REQUIRE(cta->tmem.alloc(plan::kTmemCols, &tmem) == EmuError::kOk);
  if (!ts) kernel_tile_to_smem(cta->smem, a_smem, in.a.data(), plan::kM, fp8);
  kernel_tile_to_smem(cta->smem, b_smem, in.b.data(), plan::kN, fp8);
  if (ts) kernel_a_to_tmem(cta->tmem, tmem, in.a.data());
  for (uint32_t s = 0; s < plan::kKSteps; ++s) {
    plan::Issue is = plan::issue(fp8, ts, 1, tmem, a_smem, b_smem, s);
    if (advance_override >= 0) {
      const flashptx::umma::SmemTile t = plan::operand_tile(fp8);
      is.a_desc = ts ? 0 : ptx::make_umma_smem_desc(a_smem + s * uint32_t(advance_override), t.lbo, t.sbo, t.swizzle);
      is.b_desc = ptx::make_umma_smem_desc(b_smem + s * uint32_t(advance_override), t.lbo, t.sbo, t.swizzle);
    }
    REQUIRE(emu::mma({cta.get()}, to_op(is, fp8, 1)) == EmuError::kOk);
  }
  std::vector<float> d = read_d(cta->tmem, tmem + plan::kDCol, plan::kN);
  REQUIRE(cta->tmem.dealloc(tmem, plan::kTmemCols) == EmuError::kOk);
  cta->tmem.relinquish();
  CHECK(cta->tmem.at_exit() == EmuError::kOk);
  return d;
}

// Replays umma_cta2_body<ts>: CTA r holds A rows [128r, +128) and B rows [32r, +32) at the same
// offsets; rank 0 issues; each CTA reads its D rows.
std::vector<float> replay_pair(const KernelInputs& in, bool ts, uint32_t a_smem, uint32_t b_smem) {
  auto c0 = std::make_unique<emu::Cta>(), c1 = std::make_unique<emu::Cta>();
  emu::Cta* ctas[2] = {c0.get(), c1.get()};
  uint32_t tmem = 0;
  REQUIRE(emu::alloc_pair(c0->tmem, c1->tmem, plan::kTmemCols, &tmem) == EmuError::kOk);
  for (uint32_t r = 0; r < 2; ++r) {
    const uint8_t* a_mine = in.a.data() + r * 128 * plan::kRowBytes;
    if (!ts) kernel_tile_to_smem(ctas[r]->smem, a_smem, a_mine, 128, false);
    kernel_tile_to_smem(ctas[r]->smem, b_smem, in.b.data() + r * (plan::kN / 2) * plan::kRowBytes, plan::kN / 2, false);
    if (ts) kernel_a_to_tmem(ctas[r]->tmem, tmem, a_mine);
  }
  for (uint32_t s = 0; s < plan::kKSteps; ++s)
    REQUIRE(emu::mma({c0.get(), c1.get()}, to_op(plan::issue(false, ts, 2, tmem, a_smem, b_smem, s), false, 2)) ==
            EmuError::kOk);
  std::vector<float> d;
  for (uint32_t r = 0; r < 2; ++r) {
    const std::vector<float> dr = read_d(ctas[r]->tmem, tmem + plan::kDCol, plan::kN);
    d.insert(d.end(), dr.begin(), dr.end());
    REQUIRE(ctas[r]->tmem.dealloc(tmem, plan::kTmemCols) == EmuError::kOk);
  }
  return d;
}

// A shared-memory placement like the kernels' static arrays: 1024-aligned, A then B.
void random_smem_placement(std::mt19937& rng, uint32_t a_bytes, uint32_t* a_smem, uint32_t* b_smem) {
  *a_smem = 1024u * std::uniform_int_distribution<uint32_t>(0, 64)(rng);
  *b_smem = *a_smem + a_bytes + 1024u * std::uniform_int_distribution<uint32_t>(0, 8)(rng);
}

}  // namespace

TEST_CASE("replay: the cta_group::1 UMMA test kernels (bf16/e4m3, SS/TS) compute A * B^T") {
  const uint32_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  for (int fp8 = 0; fp8 < 2; ++fp8)
    for (int ts = 0; ts < 2; ++ts) {
      INFO((fp8 ? "e4m3" : "bf16") << (ts ? " TS" : " SS"));
      const KernelInputs in = kernel_inputs(rng, fp8, plan::kM);
      uint32_t a_smem = 0, b_smem = 0;
      random_smem_placement(rng, plan::kM * plan::kRowBytes, &a_smem, &b_smem);
      const std::vector<float> d = replay_cta1(in, fp8, ts, a_smem, b_smem);
      CHECK(count_mismatches(d, gemm_nt(in.av, in.bv, plan::kM, plan::kN, in.k), plan::kN) == 0);
    }
}

TEST_CASE("replay: the cta_group::2 UMMA test kernels (bf16, SS/TS, M = 256 over the pair)") {
  const uint32_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  for (int ts = 0; ts < 2; ++ts) {
    INFO((ts ? "TS" : "SS"));
    const KernelInputs in = kernel_inputs(rng, false, plan::kPairM);
    uint32_t a_smem = 0, b_smem = 0;
    random_smem_placement(rng, 128 * plan::kRowBytes, &a_smem, &b_smem);
    const std::vector<float> d = replay_pair(in, ts, a_smem, b_smem);
    CHECK(count_mismatches(d, gemm_nt(in.av, in.bv, plan::kPairM, plan::kN, in.k), plan::kN) == 0);
  }
}

TEST_CASE("replay: the old +32-byte K advance over the no-swizzle tile computes the wrong product") {
  // The kernels used to advance both descriptors by 32 bytes per K step over a no-swizzle K-major
  // tile with LBO 128: step 1 then starts inside the second 8x16-byte core matrix of K column 0
  // (rows 2..9 of K bytes 0..15), not at K bytes 32..47. The same replay with that advance fails.
  const uint32_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  CHECK(plan::operand_tile(false).kstep_offset(1) == 256u);  // what the plan does instead: 2 x LBO
  for (int fp8 = 0; fp8 < 2; ++fp8) {
    INFO((fp8 ? "e4m3" : "bf16"));
    const KernelInputs in = kernel_inputs(rng, fp8, plan::kM);
    const std::vector<double> ref = gemm_nt(in.av, in.bv, plan::kM, plan::kN, in.k);
    const std::vector<float> wrong = replay_cta1(in, fp8, false, 0x0, 0x4000, /*old advance*/ 32);
    const int bad = count_mismatches(wrong, ref, plan::kN, /*report*/ false);
    CHECK(bad > int(ref.size()) / 2);  // nearly every element differs
    CHECK(count_mismatches(replay_cta1(in, fp8, false, 0x0, 0x4000), ref, plan::kN) == 0);
  }
}

}  // TEST_SUITE
