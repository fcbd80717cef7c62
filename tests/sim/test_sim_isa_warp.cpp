// Conformance tests for tools/sim/isa/ldmatrix.h and shfl.h: ldmatrix/stmatrix fragments as the
// ISA's figure for .m8n8 .b16 draws them, and shfl.sync's source-lane pseudo-code (including the
// ISA's own scan and butterfly examples), vote, redux and match.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tools/sim/isa/ldmatrix.h"
#include "tools/sim/isa/shfl.h"

using namespace ptxsim::isa;

namespace {
struct Smem {
  std::vector<uint8_t> b = std::vector<uint8_t>(8192, 0);
  uint16_t get(uint32_t a) const { uint16_t v; std::memcpy(&v, b.data() + a, 2); return v; }
  MatRead reader() { return [this](uint32_t a, void* d, uint32_t n) { REQUIRE(a % 16 == 0); REQUIRE(a + n <= b.size()); std::memcpy(d, b.data() + a, n); }; }
  MatWrite writer() { return [this](uint32_t a, const void* s, uint32_t n) { REQUIRE(a % 16 == 0); std::memcpy(b.data() + a, s, n); }; }
};
// Four 8x8 matrices whose rows sit at scattered 16-byte-aligned addresses.
void setup(Smem& s, uint32_t addrs[32], uint16_t m[4][8][8], uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> slots(512);
  for (uint32_t i = 0; i < 512; ++i) slots[i] = i * 16;
  std::shuffle(slots.begin(), slots.end(), rng);
  for (uint32_t lane = 0; lane < 32; ++lane) addrs[lane] = slots[lane];
  for (uint32_t i = 0; i < 4; ++i)
    for (uint32_t r = 0; r < 8; ++r)
      for (uint32_t c = 0; c < 8; ++c) {
        m[i][r][c] = uint16_t(1 + (rng() & 0xfffe));
        std::memcpy(s.b.data() + addrs[8 * i + r] + 2 * c, &m[i][r][c], 2);
      }
}
}  // namespace

TEST_SUITE("sim isa warp") {

TEST_CASE("ldmatrix m8n8 x1/x2/x4: lane l, register i holds row l/4, columns 2(l%4), 2(l%4)+1 of matrix i") {
  Smem s;
  uint32_t addrs[32];
  uint16_t m[4][8][8];
  setup(s, addrs, m, 1);
  for (uint32_t num : {1u, 2u, 4u}) {
    std::vector<uint32_t> out(32 * num);
    uint32_t used[32];
    for (uint32_t l = 0; l < 32; ++l) used[l] = ldmatrix_lane_used(l, num) ? addrs[l] : 0xfffff0u;  // never read
    ldmatrix_m8n8(num, false, used, s.reader(), out.data());
    for (uint32_t l = 0; l < 32; ++l)
      for (uint32_t i = 0; i < num; ++i) {
        const uint32_t r = out[l * num + i];
        CHECK(uint16_t(r) == m[i][l / 4][2 * (l % 4)]);
        CHECK(uint16_t(r >> 16) == m[i][l / 4][2 * (l % 4) + 1]);
      }
  }
}

TEST_CASE("ldmatrix .trans gives the transpose: register i of lane l holds M_i[2(l%4)][l/4], M_i[2(l%4)+1][l/4]") {
  Smem s;
  uint32_t addrs[32];
  uint16_t m[4][8][8];
  setup(s, addrs, m, 2);
  std::vector<uint32_t> t(128), n(128);
  ldmatrix_m8n8(4, true, addrs, s.reader(), t.data());
  for (uint32_t l = 0; l < 32; ++l)
    for (uint32_t i = 0; i < 4; ++i) {
      CHECK(uint16_t(t[l * 4 + i]) == m[i][2 * (l % 4)][l / 4]);
      CHECK(uint16_t(t[l * 4 + i] >> 16) == m[i][2 * (l % 4) + 1][l / 4]);
    }
  // Relation: .trans of M equals the non-transposed load of M^T stored the same way.
  Smem s2;
  for (uint32_t i = 0; i < 4; ++i)
    for (uint32_t r = 0; r < 8; ++r)
      for (uint32_t c = 0; c < 8; ++c) std::memcpy(s2.b.data() + addrs[8 * i + r] + 2 * c, &m[i][c][r], 2);
  ldmatrix_m8n8(4, false, addrs, s2.reader(), n.data());
  CHECK(n == t);
}

TEST_CASE("movmatrix .trans equals ldmatrix .trans of the same matrix") {
  Smem s;
  uint32_t addrs[32];
  uint16_t m[4][8][8];
  setup(s, addrs, m, 9);
  uint32_t plain[32], trans[32], moved[32];
  ldmatrix_m8n8(1, false, addrs, s.reader(), plain);
  ldmatrix_m8n8(1, true, addrs, s.reader(), trans);
  movmatrix_m8n8_trans(plain, moved);
  for (uint32_t l = 0; l < 32; ++l) CHECK(moved[l] == trans[l]);
}

TEST_CASE("stmatrix is the inverse of ldmatrix, with and without .trans") {
  for (bool trans : {false, true})
    for (uint32_t num : {1u, 2u, 4u}) {
      Smem s, back;
      uint32_t addrs[32];
      uint16_t m[4][8][8];
      setup(s, addrs, m, 3 + num);
      std::vector<uint32_t> regs(32 * num);
      ldmatrix_m8n8(num, trans, addrs, s.reader(), regs.data());
      stmatrix_m8n8(num, trans, addrs, regs.data(), back.writer());
      for (uint32_t i = 0; i < num; ++i)
        for (uint32_t r = 0; r < 8; ++r)
          for (uint32_t c = 0; c < 8; ++c) CHECK(back.get(addrs[8 * i + r] + 2 * c) == m[i][r][c]);
    }
}

TEST_CASE("shfl.sync: the ISA's scan and butterfly examples") {
  uint32_t x[32], b[32], c[32];
  for (uint32_t l = 0; l < 32; ++l) x[l] = l + 1;
  // inclusive plus scan: shfl.up by 1, 2, 4, 8, 16 with c = 0, add where p
  for (uint32_t step = 1; step < 32; step *= 2) {
    ShflLaneResult r[32];
    for (uint32_t l = 0; l < 32; ++l) { b[l] = step; c[l] = 0; }
    shfl_sync(ShflMode::up, 0xffffffffu, x, b, c, r);
    for (uint32_t l = 0; l < 32; ++l) {
      CHECK(r[l].pred == (l >= step));
      CHECK(!r[l].undefined);
      if (r[l].pred) x[l] += r[l].d;
    }
  }
  for (uint32_t l = 0; l < 32; ++l) CHECK(x[l] == (l + 1) * (l + 2) / 2);
  // butterfly reduction: shfl.bfly by 16, 8, 4, 2, 1 with c = 0x1f: every lane gets the sum
  for (uint32_t l = 0; l < 32; ++l) x[l] = 3 * l + 1;
  for (uint32_t step = 16; step >= 1; step /= 2) {
    ShflLaneResult r[32];
    for (uint32_t l = 0; l < 32; ++l) { b[l] = step; c[l] = 0x1f; }
    shfl_sync(ShflMode::bfly, 0xffffffffu, x, b, c, r);
    for (uint32_t l = 0; l < 32; ++l) x[l] += r[l].d;
  }
  for (uint32_t l = 0; l < 32; ++l) CHECK(x[l] == 3 * 31 * 32 / 2 + 32);
  // reverse scan: shfl.down with c = 0x1f
  ShflSource d = shfl_source(ShflMode::down, 30, 4, 0x1f);
  CHECK(!d.pred);
  CHECK(d.lane == 30);
  d = shfl_source(ShflMode::down, 27, 4, 0x1f);
  CHECK(d.pred);
  CHECK(d.lane == 31);
}

TEST_CASE("shfl.sync: segments (c = ((32 - width) << 8) | clamp), out-of-range b, undefined sources") {
  const uint32_t w8_idx = (24u << 8) | 0x1f, w8_up = 24u << 8;
  ShflSource s = shfl_source(ShflMode::idx, 13, 3, w8_idx);  // lane 13 in segment 8..15 reads 8 + 3
  CHECK(s.lane == 11);
  CHECK(s.pred);
  s = shfl_source(ShflMode::idx, 13, 35, w8_idx);  // b[4:0] = 3: still lane 11
  CHECK(s.lane == 11);
  s = shfl_source(ShflMode::up, 9, 2, w8_up);  // 9 - 2 = 7 is below the segment: own value
  CHECK(!s.pred);
  CHECK(s.lane == 9);
  s = shfl_source(ShflMode::up, 11, 2, w8_up);
  CHECK(s.pred);
  CHECK(s.lane == 9);
  s = shfl_source(ShflMode::bfly, 5, 8, (24u << 8) | 0x1f);  // 5 ^ 8 = 13 > max lane 7
  CHECK(!s.pred);
  CHECK(s.lane == 5);
  s = shfl_source(ShflMode::idx, 4, 40, 0x1f);  // idx b = 40: b[4:0] = 8
  CHECK(s.lane == 8);
  CHECK(s.pred);
  // membermask without lane 3: lane 2 reading lane 3 (bfly 1) is undefined; lanes outside skip.
  uint32_t a[32], b[32], c[32];
  for (uint32_t l = 0; l < 32; ++l) { a[l] = 100 + l; b[l] = 1; c[l] = 0x1f; }
  ShflLaneResult r[32];
  r[3].d = 0xdead;
  shfl_sync(ShflMode::bfly, ~(1u << 3), a, b, c, r);
  CHECK(r[2].undefined);
  CHECK(!r[0].undefined);
  CHECK(r[0].d == 101);
  CHECK(r[3].d == 0xdead);
}

TEST_CASE("vote, redux, match") {
  const uint32_t member = 0x0000ffffu;
  CHECK(vote_all(member, 0xffff0000u | member));
  CHECK(!vote_all(member, 0xfffffff7u));
  CHECK(vote_any(member, 0x00000100u));
  CHECK(!vote_any(member, 0xffff0000u));  // only non-members true
  CHECK(vote_uni(member, 0x0000ffffu));
  CHECK(vote_uni(member, 0xffff0000u));
  CHECK(!vote_uni(member, 0x00000001u));
  CHECK(vote_ballot(member, 0x12345678u) == 0x5678u);
  uint32_t a[32];
  for (uint32_t l = 0; l < 32; ++l) a[l] = (l % 2) ? 0x80000000u + l : l + 1;
  CHECK(redux_sync(ReduxOp::add, 0x3u, a) == 1 + 0x80000001u);
  CHECK(redux_sync(ReduxOp::max_u, 0xfu, a) == 0x80000003u);
  CHECK(redux_sync(ReduxOp::max_s, 0xfu, a) == 3u);
  CHECK(redux_sync(ReduxOp::min_s, 0xfu, a) == 0x80000001u);
  CHECK(redux_sync(ReduxOp::min_u, 0xfu, a) == 1u);
  CHECK(redux_sync(ReduxOp::or_, 0x5u, a) == (1u | 3u));
  CHECK(redux_sync(ReduxOp::xor_, 0x7u, a) == (1u ^ 0x80000001u ^ 3u));
  CHECK(redux_sync(ReduxOp::and_, 0x5u, a) == (1u & 3u));
  uint64_t v[32];
  for (uint32_t l = 0; l < 32; ++l) v[l] = l % 3;
  CHECK(match_any(0xffffffffu, v, 4) == 0x92492492u);   // lanes 1, 4, 7, ... (l % 3 == 1)
  CHECK(match_any(0x000000f0u, v, 4) == 0x00000090u);   // members 4..7: 4 and 7
  bool p = true;
  CHECK(match_all(0xffffffffu, v, &p) == 0);
  CHECK(!p);
  CHECK(match_all(0x00000249u, v, &p) == 0x249u);      // lanes 0, 3, 6, 9: all 0
  CHECK(p);
  CHECK(elect_sync(0xffff0000u) == 16);
  CHECK(elect_sync(0x80000000u) == 31);
}

}  // TEST_SUITE
