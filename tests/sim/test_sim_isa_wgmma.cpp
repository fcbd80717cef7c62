// Conformance tests for tools/sim/isa/wgmma.h: the matrix-descriptor bit fields, the register
// fragment figures (every D element owned once), and wgmma.mma_async products with operands laid
// out in shared memory the way a tile-mode tensor copy writes them (row-major rows, swizzled by
// address bits), compared against an fp64 matmul and against each other (K-major vs MN-major,
// SS vs RS, swizzled vs interleaved: bitwise equal, as the same products are summed in the same
// order).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "tools/sim/isa/numeric.h"
#include "tools/sim/isa/swizzle.h"
#include "tools/sim/isa/wgmma.h"

using namespace ptxsim::isa;

namespace {

struct Smem {
  std::vector<uint8_t> b = std::vector<uint8_t>(1 << 18, 0);
  void put16(uint32_t a, uint16_t v) { std::memcpy(b.data() + a, &v, 2); }
  void put8(uint32_t a, uint8_t v) { b[a] = v; }
  SmemRead reader() {
    return [this](uint32_t a, void* dst, uint32_t n) {
      REQUIRE(a + n <= b.size());
      std::memcpy(dst, b.data() + a, n);
    };
  }
};

// Random 16-bit inputs (never zero) and their values.
struct Mat {
  uint32_t rows, cols;
  std::vector<uint16_t> bits;
  std::vector<double> val;
  Mat(uint32_t r, uint32_t c, MmaType t, uint32_t seed) : rows(r), cols(c), bits(r * c), val(r * c) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(0.25f, 2.0f);
    for (uint32_t i = 0; i < r * c; ++i) {
      const float x = (rng() & 1) ? u(rng) : -u(rng);
      if (t == MmaType::bf16) { bits[i] = f32_to_bf16(x); val[i] = bf16_to_f32(bits[i]); }
      else if (t == MmaType::f16) { bits[i] = f32_to_f16(x); val[i] = f16_to_f32(bits[i]); }
      else { bits[i] = f32_to_e4m3_satfinite(x); val[i] = e4m3_to_f32(uint8_t(bits[i])); }
    }
  }
  double at(uint32_t r, uint32_t c) const { return val[r * cols + c]; }
  uint16_t bit(uint32_t r, uint32_t c) const { return bits[r * cols + c]; }
};

uint64_t desc(uint32_t start, uint32_t lbo, uint32_t sbo, Swizzle s) {
  MatrixDesc m;
  m.start_addr = start;
  m.lbo = lbo;
  m.sbo = sbo;
  m.swizzle = s;
  return matrix_desc_encode(m);
}

// Stores a rows x cols matrix row-major with row pitch `pitch` bytes at base, every byte address
// passed through the swizzle: what a tile-mode copy of a (cols, rows) box writes.
void store_rows(Smem& s, const Mat& m, uint32_t base, uint32_t pitch, uint32_t esize, Swizzle sw) {
  for (uint32_t r = 0; r < m.rows; ++r)
    for (uint32_t c = 0; c < m.cols; ++c) {
      const uint32_t a = swizzle_address(sw, base + r * pitch + c * esize);
      if (esize == 2) s.put16(a, m.bit(r, c)); else s.put8(a, uint8_t(m.bit(r, c)));
    }
}

// D (64 x N) from the 128 threads' registers through the fragment layout.
std::vector<double> gather_d(const std::vector<uint32_t>& regs, uint32_t n, bool f16) {
  std::vector<double> d(64 * n);
  const uint32_t nregs = f16 ? n / 4 : n / 2;
  for (uint32_t r = 0; r < 64; ++r)
    for (uint32_t c = 0; c < n; ++c) {
      const FragSlot s = wgmma_d_owner(r, c, f16);
      const uint32_t v = regs[s.thread * nregs + s.reg];
      d[r * n + c] = f16 ? f16_to_f32(uint16_t(v >> (16 * s.half))) : f32_from_bits(v);
    }
  return d;
}

// A = 64 x K, B = K x N (B given as Bt, N x K: B[k][n] = Bt[n][k]); checks D against fp64.
void check_against_fp64(const std::vector<double>& d, const Mat& a, const Mat& bt, uint32_t n, double rel,
                        double sign = 1.0) {
  const uint32_t K = a.cols;
  int bad = 0;
  for (uint32_t r = 0; r < 64; ++r)
    for (uint32_t c = 0; c < n; ++c) {
      double ref = 0, mag = 0;
      for (uint32_t k = 0; k < K; ++k) { ref += a.at(r, k) * bt.at(c, k); mag += std::fabs(a.at(r, k) * bt.at(c, k)); }
      ref *= sign;
      if (std::fabs(d[r * n + c] - ref) > rel * mag + 1e-30) ++bad;
    }
  CHECK(bad == 0);
}

}  // namespace

TEST_SUITE("sim isa wgmma") {

TEST_CASE("matrix descriptor: bit positions 13-0, 29-16, 45-32, 51-49, 63-62") {
  const uint64_t raw = 0x123ull | (4ull << 16) | (64ull << 32) | (3ull << 49) | (1ull << 62);
  const MatrixDesc m = matrix_desc_decode(raw);
  CHECK(m.start_addr == 0x1230);
  CHECK(m.lbo == 64);
  CHECK(m.sbo == 1024);
  CHECK(m.base_offset == 3);
  CHECK(m.swizzle == Swizzle::b128);
  CHECK(matrix_desc_encode(m) == raw);
  CHECK(matrix_desc_decode(2ull << 62).swizzle == Swizzle::b64);
  CHECK(matrix_desc_decode(3ull << 62).swizzle == Swizzle::b32);
  CHECK(matrix_desc_decode(0).swizzle == Swizzle::none);
  CHECK(matrix_desc_decode(0x3fffull | (0x3ull << 14)).start_addr == 0x3fff0);  // bits 15-14 ignored
  MatrixDesc big;
  big.start_addr = 0x41230;  // encode keeps address bits 17..4
  CHECK((matrix_desc_encode(big) & 0x3fff) == 0x123);
}

TEST_CASE("accumulator fragment: every D(row, col) owned exactly once, for every N") {
  for (uint32_t n = 8; n <= 256; n += 8) {
    std::set<uint64_t> seen;
    for (uint32_t t = 0; t < 128; ++t)
      for (uint32_t i = 0; i < n / 2; ++i) {
        const RowCol rc = wgmma_d_position(t, i);
        REQUIRE(rc.row < 64);
        REQUIRE(rc.col < n);
        seen.insert(uint64_t(rc.row) * 1000 + rc.col);
        const FragSlot s = wgmma_d_owner(rc.row, rc.col, false);
        CHECK(s.thread == t);
        CHECK(s.reg == i);
        const FragSlot h = wgmma_d_owner(rc.row, rc.col, true);
        CHECK(h.thread == t);
        CHECK(h.reg * 2 + h.half == i);
      }
    CHECK(seen.size() == 64u * n);
  }
  // The figure: thread 0 holds d0,d1 at row 0 cols 0,1; d2,d3 at row 8; d4 at row 0 col 8.
  CHECK(wgmma_d_position(0, 0).row == 0); CHECK(wgmma_d_position(0, 0).col == 0);
  CHECK(wgmma_d_position(0, 1).col == 1);
  CHECK(wgmma_d_position(0, 2).row == 8); CHECK(wgmma_d_position(0, 3).col == 1);
  CHECK(wgmma_d_position(0, 4).row == 0); CHECK(wgmma_d_position(0, 4).col == 8);
  CHECK(wgmma_d_position(5, 0).row == 1); CHECK(wgmma_d_position(5, 0).col == 2);   // lane 5: g 1, q 1
  CHECK(wgmma_d_position(32, 0).row == 16);                                         // warp 1
  CHECK(wgmma_d_position(127, 127).row == 63); CHECK(wgmma_d_position(127, 127).col == 255);
}

TEST_CASE("A register fragment: 16-bit and 8-bit layouts are bijections; figure spot checks") {
  for (uint32_t eb : {2u, 1u, 4u}) {
    const uint32_t K = 32 / eb, per_thread = 64 * K / 128;
    std::set<uint32_t> seen;
    for (uint32_t t = 0; t < 128; ++t)
      for (uint32_t j = 0; j < per_thread; ++j) {
        const RowCol rc = wgmma_a_position(t, j, eb);
        REQUIRE(rc.row < 64);
        REQUIRE(rc.col < K);
        seen.insert(rc.row * 64 + rc.col);
        const FragSlot s = wgmma_a_owner(rc.row, rc.col, eb);
        CHECK(s.thread == t);
        CHECK(s.reg * (4 / eb) + s.half == j);
      }
    CHECK(seen.size() == 64u * K);
  }
  // 16-bit: a0,a1 row g cols 2q,2q+1; a2,a3 row g+8; a4..a7 cols +8.
  CHECK(wgmma_a_position(1, 0, 2).col == 2);
  CHECK(wgmma_a_position(1, 2, 2).row == 8);
  CHECK(wgmma_a_position(1, 4, 2).col == 10);
  // 8-bit: a0..a3 row g cols 4q..4q+3; a4..a7 row g+8; a8..a15 cols +16.
  CHECK(wgmma_a_position(1, 0, 1).col == 4);
  CHECK(wgmma_a_position(1, 4, 1).row == 8);
  CHECK(wgmma_a_position(1, 8, 1).col == 20);
  CHECK(wgmma_a_position(37, 0, 1).row == 17);  // warp 1, lane 5: g 1
  // tf32: a0 row g col q; a1 row g+8; a2 col q+4.
  CHECK(wgmma_a_position(1, 0, 4).col == 1);
  CHECK(wgmma_a_position(1, 1, 4).row == 8);
  CHECK(wgmma_a_position(1, 2, 4).col == 5);
}

TEST_CASE("wgmma tf32 64x16x8, K-major 128B (K = 32 in four steps): SS and RS against fp64") {
  const uint32_t n = 16, Ktot = 32;
  Smem s;
  std::mt19937 rng(77);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<uint32_t> ab(64 * Ktot), bb(n * Ktot);  // tf32 patterns with nonzero low bits
  for (uint32_t& v : ab) v = f32_bits(u(rng)) | 0x1fffu;
  for (uint32_t& v : bb) v = f32_bits(u(rng)) | 0x0abcu;
  auto tf = [](uint32_t b) { return double(f32_from_bits(b & 0xffffe000u)); };
  for (uint32_t r = 0; r < 64; ++r)
    for (uint32_t k = 0; k < Ktot; ++k)
      std::memcpy(s.b.data() + swizzle_address(Swizzle::b128, r * 128 + k * 4), &ab[r * Ktot + k], 4);
  for (uint32_t c = 0; c < n; ++c)
    for (uint32_t k = 0; k < Ktot; ++k)
      std::memcpy(s.b.data() + swizzle_address(Swizzle::b128, 16384 + c * 128 + k * 4), &bb[c * Ktot + k], 4);
  WgmmaOp op;
  op.atype = op.btype = MmaType::tf32;
  op.n = n;
  REQUIRE(wgmma_validate(op).empty());
  std::vector<uint32_t> ss(128 * wgmma_d_regs(op)), rs(ss.size());
  for (uint32_t kk = 0; kk < Ktot / 8; ++kk) {
    op.scale_d = kk > 0;
    op.desc_b = desc(16384 + kk * 32, 16, 1024, Swizzle::b128);
    op.a_in_regs = false;
    op.desc_a = desc(kk * 32, 16, 1024, Swizzle::b128);
    wgmma_compute(op, s.reader(), nullptr, ss.data());
    std::vector<uint32_t> regs(128 * 4);
    for (uint32_t r = 0; r < 64; ++r)
      for (uint32_t k = 0; k < 8; ++k) {
        const FragSlot f = wgmma_a_owner(r, k, 4);
        regs[f.thread * 4 + f.reg] = ab[r * Ktot + kk * 8 + k];
      }
    op.a_in_regs = true;
    wgmma_compute(op, s.reader(), regs.data(), rs.data());
  }
  CHECK(ss == rs);
  const std::vector<double> d = gather_d(ss, n, false);
  int bad = 0;
  for (uint32_t r = 0; r < 64; ++r)
    for (uint32_t c = 0; c < n; ++c) {
      double ref = 0, mag = 0;
      for (uint32_t k = 0; k < Ktot; ++k) {
        const double p = tf(ab[r * Ktot + k]) * tf(bb[c * Ktot + k]);
        ref += p;
        mag += std::fabs(p);
      }
      bad += std::fabs(d[r * n + c] - ref) > 1e-5 * mag;
    }
  CHECK(bad == 0);
}

TEST_CASE("wgmma bf16 64xNx16, K-major 128B swizzle, four K steps, against fp64") {
  const uint32_t Ktot = 64;
  for (uint32_t n : {8u, 64u, 136u, 256u}) {
    Smem s;
    const Mat a(64, Ktot, MmaType::bf16, 100 + n), bt(n, Ktot, MmaType::bf16, 200 + n);
    const uint32_t abase = 0, bbase = 16384;
    store_rows(s, a, abase, 128, 2, Swizzle::b128);   // 64 rows of 64 K values = 128 bytes
    store_rows(s, bt, bbase, 128, 2, Swizzle::b128);  // N rows of 64 K values
    WgmmaOp op;
    op.n = n;
    REQUIRE(wgmma_validate(op).empty());
    std::vector<uint32_t> d(128 * wgmma_d_regs(op), 0x7fc00000u);  // garbage: scale_d = 0 first
    for (uint32_t kk = 0; kk < Ktot / 16; ++kk) {
      op.desc_a = desc(abase + kk * 32, 16, 1024, Swizzle::b128);
      op.desc_b = desc(bbase + kk * 32, 16, 1024, Swizzle::b128);
      op.scale_d = kk > 0;
      wgmma_compute(op, s.reader(), nullptr, d.data());
    }
    check_against_fp64(gather_d(d, n, false), a, bt, n, 1e-5);
    if (n == 64) {  // the other summation orders stay within the same tolerance (inputs of this
                    // range even sum exactly in f32, so every order gives the same bits here)
      for (AccumMode m : {AccumMode::f32_reverse, AccumMode::f64}) {
        WgmmaOp o = op;
        o.accum = m;
        std::vector<uint32_t> e(d.size());
        for (uint32_t kk = 0; kk < Ktot / 16; ++kk) {
          o.desc_a = desc(abase + kk * 32, 16, 1024, Swizzle::b128);
          o.desc_b = desc(bbase + kk * 32, 16, 1024, Swizzle::b128);
          o.scale_d = kk > 0;
          wgmma_compute(o, s.reader(), nullptr, e.data());
        }
        check_against_fp64(gather_d(e, n, false), a, bt, n, 1e-5);
      }
    }
  }
}

TEST_CASE("wgmma: MN-major B, interleaved (no-swizzle) A, 64B MN-major A and RS A equal K-major SS bitwise") {
  const uint32_t n = 128;
  Smem s;
  const Mat a(64, 16, MmaType::f16, 7), bt(n, 16, MmaType::f16, 8);
  // Reference: K-major 128B (rows of 16 K values = 32 bytes, kept in 128-byte rows).
  store_rows(s, a, 0, 128, 2, Swizzle::b128);
  store_rows(s, bt, 16384, 128, 2, Swizzle::b128);
  WgmmaOp op;
  op.atype = op.btype = MmaType::f16;
  op.n = n;
  op.scale_d = false;
  op.desc_a = desc(0, 16, 1024, Swizzle::b128);
  op.desc_b = desc(16384, 16, 1024, Swizzle::b128);
  std::vector<uint32_t> ref(128 * wgmma_d_regs(op));
  wgmma_compute(op, s.reader(), nullptr, ref.data());
  check_against_fp64(gather_d(ref, n, false), a, bt, n, 1e-5);

  SUBCASE("B N-major, 128B swizzle: rows of 64 N values per K, blocks of 64 N at LBO") {
    const uint32_t base = 65536;
    for (uint32_t k = 0; k < 16; ++k)
      for (uint32_t c = 0; c < n; ++c)
        s.put16(swizzle_address(Swizzle::b128, base + (c / 64) * 2048 + k * 128 + (c % 64) * 2), bt.bit(c, k));
    WgmmaOp t = op;
    t.trans_b = true;
    t.desc_b = desc(base, 2048, 1024, Swizzle::b128);
    REQUIRE(wgmma_validate(t).empty());
    std::vector<uint32_t> d(ref.size());
    wgmma_compute(t, s.reader(), nullptr, d.data());
    CHECK(d == ref);
  }
  SUBCASE("A K-major, no swizzle: 8x16-byte core matrices at LBO (K) and SBO (M)") {
    const uint32_t base = 98304, lbo = 128, sbo = 256;
    for (uint32_t r = 0; r < 64; ++r)
      for (uint32_t k = 0; k < 16; ++k)
        s.put16(base + (r / 8) * sbo + (k / 8) * lbo + (r % 8) * 16 + (k % 8) * 2, a.bit(r, k));
    WgmmaOp t = op;
    t.desc_a = desc(base, lbo, sbo, Swizzle::none);
    std::vector<uint32_t> d(ref.size());
    wgmma_compute(t, s.reader(), nullptr, d.data());
    CHECK(d == ref);
  }
  SUBCASE("A M-major, 64B swizzle: rows of 32 M values per K, two M blocks at LBO, K groups at SBO") {
    const uint32_t base = 131072;
    for (uint32_t k = 0; k < 16; ++k)
      for (uint32_t r = 0; r < 64; ++r)
        s.put16(swizzle_address(Swizzle::b64, base + (r / 32) * 1024 + k * 64 + (r % 32) * 2), a.bit(r, k));
    WgmmaOp t = op;
    t.trans_a = true;
    t.desc_a = desc(base, 1024, 512, Swizzle::b64);
    std::vector<uint32_t> d(ref.size());
    wgmma_compute(t, s.reader(), nullptr, d.data());
    CHECK(d == ref);
  }
  SUBCASE("A from registers (RS) through the A fragment layout") {
    std::vector<uint32_t> regs(128 * 4, 0);
    for (uint32_t r = 0; r < 64; ++r)
      for (uint32_t k = 0; k < 16; ++k) {
        const FragSlot f = wgmma_a_owner(r, k, 2);
        regs[f.thread * 4 + f.reg] |= uint32_t(a.bit(r, k)) << (16 * f.half);
      }
    WgmmaOp t = op;
    t.a_in_regs = true;
    t.desc_a = 0;
    std::vector<uint32_t> d(ref.size());
    wgmma_compute(t, s.reader(), regs.data(), d.data());
    CHECK(d == ref);
  }
  SUBCASE("B K-major, 32B swizzle: rows of 32 bytes") {
    const uint32_t base = 163840;
    store_rows(s, bt, base, 32, 2, Swizzle::b32);
    WgmmaOp t = op;
    t.desc_b = desc(base, 16, 256, Swizzle::b32);
    std::vector<uint32_t> d(ref.size());
    wgmma_compute(t, s.reader(), nullptr, d.data());
    CHECK(d == ref);
  }
}

TEST_CASE("wgmma e4m3 64x32x32 (K = 128 in four steps), f16 accumulators, negation, overwrite") {
  SUBCASE("e4m3 with f32 accumulators against fp64") {
    const uint32_t n = 32, Ktot = 128;
    Smem s;
    const Mat a(64, Ktot, MmaType::e4m3, 31), bt(n, Ktot, MmaType::e4m3, 32);
    store_rows(s, a, 0, 128, 1, Swizzle::b128);
    store_rows(s, bt, 16384, 128, 1, Swizzle::b128);
    WgmmaOp op;
    op.atype = op.btype = MmaType::e4m3;
    op.n = n;
    REQUIRE(wgmma_validate(op).empty());
    std::vector<uint32_t> d(128 * wgmma_d_regs(op));
    for (uint32_t kk = 0; kk < Ktot / 32; ++kk) {
      op.desc_a = desc(kk * 32, 16, 1024, Swizzle::b128);
      op.desc_b = desc(16384 + kk * 32, 16, 1024, Swizzle::b128);
      op.scale_d = kk > 0;
      wgmma_compute(op, s.reader(), nullptr, d.data());
    }
    check_against_fp64(gather_d(d, n, false), a, bt, n, 1e-5);
  }
  SUBCASE("f16 inputs, f16 accumulators, imm-scale-a = -1, scale-d = 0 ignores old D") {
    const uint32_t n = 16;
    Smem s;
    const Mat a(64, 16, MmaType::f16, 41), bt(n, 16, MmaType::f16, 42);
    store_rows(s, a, 0, 128, 2, Swizzle::b128);
    store_rows(s, bt, 16384, 128, 2, Swizzle::b128);
    WgmmaOp op;
    op.atype = op.btype = MmaType::f16;
    op.d_f16 = true;
    op.n = n;
    op.scale_a = -1;
    op.scale_d = false;
    op.desc_a = desc(0, 16, 1024, Swizzle::b128);
    op.desc_b = desc(16384, 16, 1024, Swizzle::b128);
    REQUIRE(wgmma_validate(op).empty());
    CHECK(wgmma_d_regs(op) == 4);
    std::vector<uint32_t> d(128 * 4, 0x3c003c00u);
    wgmma_compute(op, s.reader(), nullptr, d.data());
    check_against_fp64(gather_d(d, n, true), a, bt, n, 1e-3, -1.0);  // f16 rounding of the result
  }
}

TEST_CASE("wgmma_smem_footprint: the chunks a K-step of a 128B K-major tile reads") {
  WgmmaOp op;
  op.n = 64;
  op.desc_a = desc(32, 16, 1024, Swizzle::b128);          // K-step 1 of a 64 x 64 bf16 tile at 0
  op.desc_b = desc(16384 + 32, 16, 1024, Swizzle::b128);
  const std::vector<SmemSpan> f = wgmma_smem_footprint(op);
  uint32_t bytes = 0;
  for (const SmemSpan& s : f) { bytes += s.last - s.first; CHECK(s.first % 16 == 0); }
  CHECK(bytes == 64 * 32 + 64 * 32);  // 32 bytes of each of 64 rows, for A and for B
  CHECK(f.front().first == 32);       // row 0: chunks 2, 3 (no XOR on row 0)
  // B's last row (63: group 7, row 7) reads chunks 2, 3, placed at 2 ^ 7 = 5 and 3 ^ 7 = 4
  CHECK(f.back().first == 16384 + 7 * 1024 + 7 * 128 + 4 * 16);
  CHECK(f.back().last == 16384 + 7 * 1024 + 7 * 128 + 6 * 16);
  op.a_in_regs = true;
  uint32_t b_only = 0;
  for (const SmemSpan& s : wgmma_smem_footprint(op)) b_only += s.last - s.first;
  CHECK(b_only == 64 * 32);
}

TEST_CASE("wgmma_validate: the forms the ISA does not have") {
  WgmmaOp op;
  op.n = 12;
  CHECK(!wgmma_validate(op).empty());
  op.n = 264;
  CHECK(!wgmma_validate(op).empty());
  op.n = 64;
  CHECK(wgmma_validate(op).empty());
  op.d_f16 = true;  // bf16 needs f32 accumulators
  CHECK(!wgmma_validate(op).empty());
  op.d_f16 = false;
  op.atype = op.btype = MmaType::e4m3;
  op.trans_b = true;  // no transpose for 8-bit types
  CHECK(!wgmma_validate(op).empty());
  op.trans_b = false;
  op.btype = MmaType::e5m2;  // mixed fp8 is a form
  CHECK(wgmma_validate(op).empty());
  op.btype = MmaType::bf16;
  CHECK(!wgmma_validate(op).empty());
  op.atype = op.btype = MmaType::bf16;
  op.scale_b = 2;
  CHECK(!wgmma_validate(op).empty());
  op.scale_b = 1;
  op.a_in_regs = true;
  op.trans_a = true;
  CHECK(!wgmma_validate(op).empty());
}

TEST_CASE("canonical_address: base offset shifts the row phase of the pattern") {
  // ISA reading (READINGS.md): a 128B-swizzled K-major tile whose pattern starts at 1024 + 384
  // (row phase 3) is described by base offset 3; element (mn, k) is then where a copy to that
  // pattern start would have put it if the pattern were aligned.
  MatrixDesc m;
  m.start_addr = 1024 + 384;
  m.sbo = 1024;
  m.swizzle = Swizzle::b128;
  m.base_offset = 3;
  for (uint32_t r = 0; r < 8; ++r)
    for (uint32_t k = 0; k < 16; ++k) {
      const uint32_t lin = r * 128 + k * 2;
      const uint32_t want = 1024 + 384 + (lin ^ (((lin >> 7) & 7) << 4));
      CHECK(canonical_address(m, Major::k, 2, r, k) == want);
    }
}

}  // TEST_SUITE
