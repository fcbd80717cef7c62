// Conformance tests for tools/sim/isa/swizzle.h and tensormap.h: the swizzle patterns as the
// PTX ISA's tensor-copy swizzle figures draw them, cuTensorMapEncodeTiled's documented rules, and
// tile-mode copies checked element by element against hand-computed positions.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "tools/sim/isa/numeric.h"
#include "tools/sim/isa/swizzle.h"
#include "tools/sim/isa/tensormap.h"

using namespace ptxsim::isa;

TEST_SUITE("sim isa swizzle") {

TEST_CASE("128B swizzle: the first 8 rows of 16-byte chunks") {
  // Row r holds, at physical chunk positions 0..7, logical chunks:
  static const uint32_t kTable[8][8] = {
      {0, 1, 2, 3, 4, 5, 6, 7}, {1, 0, 3, 2, 5, 4, 7, 6}, {2, 3, 0, 1, 6, 7, 4, 5}, {3, 2, 1, 0, 7, 6, 5, 4},
      {4, 5, 6, 7, 0, 1, 2, 3}, {5, 4, 7, 6, 1, 0, 3, 2}, {6, 7, 4, 5, 2, 3, 0, 1}, {7, 6, 5, 4, 3, 2, 1, 0}};
  for (uint32_t r = 0; r < 8; ++r)
    for (uint32_t p = 0; p < 8; ++p) {
      const uint32_t logical = kTable[r][p];
      CHECK(swizzle_row_chunk(Swizzle::b128, r, logical) == r * 128 + p * 16);
      CHECK(swizzle_address(Swizzle::b128, 1024 * 3 + r * 128 + logical * 16 + 5) == 1024 * 3 + r * 128 + p * 16 + 5);
    }
  CHECK(swizzle_row_chunk(Swizzle::b128, 8, 3) == 8 * 128 + 3 * 16);  // repeats after 1024 bytes
}

TEST_CASE("64B and 32B swizzles: rows of the span, XOR by address bits 7.. and their repeats") {
  for (uint32_t r = 0; r < 16; ++r)
    for (uint32_t c = 0; c < 4; ++c)  // 64B rows: rows 2j and 2j+1 share the XOR value j % 4
      CHECK(swizzle_row_chunk(Swizzle::b64, r, c) == r * 64 + ((c ^ ((r / 2) % 4)) * 16));
  for (uint32_t r = 0; r < 16; ++r)
    for (uint32_t c = 0; c < 2; ++c)  // 32B rows: rows 4j..4j+3 share j % 2
      CHECK(swizzle_row_chunk(Swizzle::b32, r, c) == r * 32 + ((c ^ ((r / 4) % 2)) * 16));
  CHECK(swizzle_repeat_bytes(Swizzle::b128) == 1024);
  CHECK(swizzle_repeat_bytes(Swizzle::b64) == 512);
  CHECK(swizzle_repeat_bytes(Swizzle::b32) == 256);
  CHECK(swizzle_address(Swizzle::none, 1234) == 1234);
  for (Swizzle s : {Swizzle::b32, Swizzle::b64, Swizzle::b128}) {  // a bijection on each repeat
    const uint32_t rep = swizzle_repeat_bytes(s);
    std::vector<int> seen(rep, 0);
    for (uint32_t a = 0; a < rep; ++a) {
      const uint32_t p = swizzle_address(s, 4096 + a);
      REQUIRE(p >= 4096);
      REQUIRE(p < 4096 + rep);
      seen[p - 4096]++;
      CHECK((p & 0xf) == (a & 0xf));  // bytes inside a chunk stay
    }
    for (int n : seen) CHECK(n == 1);
  }
  CHECK(swizzle_aligned(Swizzle::b128, 2048));
  CHECK(!swizzle_aligned(Swizzle::b128, 2048 + 512));
}

}  // TEST_SUITE

namespace {

// A global memory of one allocation, bounds-checked by the test (the simulator's job in reality).
struct Global {
  uint64_t base;
  std::vector<uint8_t> bytes;
  int bad = 0;
  void read(uint64_t a, void* dst, uint32_t n) {
    if (a < base || a + n > base + bytes.size()) { ++bad; std::memset(dst, 0xee, n); return; }
    std::memcpy(dst, bytes.data() + (a - base), n);
  }
  void write(uint64_t a, const void* src, uint32_t n) {
    if (a < base || a + n > base + bytes.size()) { ++bad; return; }
    std::memcpy(bytes.data() + (a - base), src, n);
  }
};
struct Smem {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(16384, 0xcd);
  void read(uint32_t a, void* dst, uint32_t n) { REQUIRE(a + n <= bytes.size()); std::memcpy(dst, bytes.data() + a, n); }
  void write(uint32_t a, const void* src, uint32_t n) { REQUIRE(a + n <= bytes.size()); std::memcpy(bytes.data() + a, src, n); }
};

uint16_t value_at(uint64_t x0, uint64_t x1, uint64_t x2) { return uint16_t(1 + x0 + 64 * x1 + 1024 * x2); }

// A 3-D u16 tensor 40 x 7 x 3 (innermost first), rows padded to 96 bytes, planes to 8 rows.
TensorMapDesc make_3d(Global& g) {
  TensorMapDesc d;
  d.type = ElemType::u16;
  d.rank = 3;
  d.base = g.base;
  d.dims[0] = 40; d.dims[1] = 7; d.dims[2] = 3;
  d.strides_bytes[0] = 2; d.strides_bytes[1] = 96; d.strides_bytes[2] = 768;
  d.box[0] = 16; d.box[1] = 4; d.box[2] = 2;
  g.bytes.assign(768 * 3, 0);
  for (uint64_t z = 0; z < 3; ++z)
    for (uint64_t y = 0; y < 7; ++y)
      for (uint64_t x = 0; x < 40; ++x) {
        const uint16_t v = value_at(x, y, z);
        std::memcpy(g.bytes.data() + z * 768 + y * 96 + x * 2, &v, 2);
      }
  return d;
}

}  // namespace

TEST_SUITE("sim isa tensormap") {

TEST_CASE("validate: every documented rule is enforced") {
  Global g{0x10000, {}};
  const TensorMapDesc ok = make_3d(g);
  CHECK(ok.validate().empty());
  auto broken = [&](auto edit) { TensorMapDesc d = ok; edit(d); return d.validate(); };
  CHECK(!broken([](TensorMapDesc& d) { d.rank = 0; }).empty());
  CHECK(!broken([](TensorMapDesc& d) { d.rank = 6; }).empty());
  CHECK(!broken([](TensorMapDesc& d) { d.base += 8; }).empty());                 // 16-byte base
  CHECK(!broken([](TensorMapDesc& d) { d.dims[1] = 0; }).empty());
  CHECK(!broken([](TensorMapDesc& d) { d.dims[2] = (1ull << 32) + 1; }).empty());
  CHECK(!broken([](TensorMapDesc& d) { d.strides_bytes[1] = 88; }).empty());     // multiple of 16
  CHECK(!broken([](TensorMapDesc& d) { d.strides_bytes[2] = 1ull << 40; }).empty());  // < 2^40
  CHECK(!broken([](TensorMapDesc& d) { d.box[1] = 257; }).empty());
  CHECK(!broken([](TensorMapDesc& d) { d.box[2] = 0; }).empty());
  CHECK(!broken([](TensorMapDesc& d) { d.box[0] = 12; }).empty());               // 24 bytes
  CHECK(!broken([](TensorMapDesc& d) { d.elem_strides[1] = 9; }).empty());
  CHECK(!broken([](TensorMapDesc& d) { d.elem_strides[0] = 0; }).empty());
  CHECK(!broken([](TensorMapDesc& d) { d.swizzle = Swizzle::b32; d.box[0] = 32; }).empty());  // 64 B > 32
  CHECK(broken([](TensorMapDesc& d) { d.swizzle = Swizzle::b32; d.box[0] = 16; }).empty());
  CHECK(broken([](TensorMapDesc& d) { d.swizzle = Swizzle::b128; d.box[0] = 64; }).empty());
  CHECK(!broken([](TensorMapDesc& d) { d.swizzle = Swizzle::b128; d.box[0] = 72; }).empty());
  CHECK(!broken([](TensorMapDesc& d) { d.oob_fill = OobFill::nan_request_zero_fma; }).empty());  // u16
  CHECK(broken([](TensorMapDesc& d) { d.type = ElemType::bf16; d.oob_fill = OobFill::nan_request_zero_fma; }).empty());
  CHECK(!broken([](TensorMapDesc& d) { d.interleave = Interleave::b16; d.rank = 2; }).empty());
  CHECK(!broken([](TensorMapDesc& d) { d.strides_bytes[0] = 4; }).empty());
}

TEST_CASE("tile load of a 3-D box straddling the edges, negative coordinate, 32B swizzle") {
  Global g{0x7f0000001000ull, {}};
  TensorMapDesc d = make_3d(g);
  d.swizzle = Swizzle::b32;   // box[0] * 2 = 32 bytes = the span
  REQUIRE(d.validate().empty());
  Smem s;
  const uint32_t dst = 1024;
  const int32_t coords[3] = {32, 5, -1};  // x0 32..47 (40.. outside), x1 5..8 (7, 8 outside), x2 -1..0
  const uint32_t tx = tile_load(d, coords, dst, [&](uint64_t a, void* p, uint32_t n) { g.read(a, p, n); },
                                [&](uint32_t a, const void* p, uint32_t n) { s.write(a, p, n); });
  CHECK(tx == 16 * 4 * 2 * 2);  // the whole box counts, filled elements included
  CHECK(g.bad == 0);             // nothing outside the tensor was read
  int inside = 0;
  for (uint32_t e2 = 0; e2 < 2; ++e2)
    for (uint32_t e1 = 0; e1 < 4; ++e1)
      for (uint32_t e0 = 0; e0 < 16; ++e0) {
        const int64_t x0 = 32 + e0, x1 = 5 + e1, x2 = -1 + int64_t(e2);
        const bool in = x0 < 40 && x1 < 7 && x2 >= 0;
        // dense box offset, then 32B swizzle: chunk bit 4 ^= address bit 7
        const uint32_t lin = dst + ((e2 * 4 + e1) * 16 + e0) * 2;
        const uint32_t phys = lin ^ (((lin >> 7) & 1) << 4);
        uint16_t got;
        std::memcpy(&got, s.bytes.data() + phys, 2);
        CHECK_MESSAGE(got == (in ? value_at(x0, x1, x2) : 0), e0, " ", e1, " ", e2);
        inside += in;
      }
  CHECK(inside == 8 * 2 * 1);
  // Hand-checked positions: box (0,0,1) = tensor (32,5,0) is at byte 1024 + 4*32 = 1152, whose bit 7
  // is set, so its chunk moves by 16: 1168. Box (8,0,1) = tensor (40,5,0) is outside: zero.
  uint16_t v;
  std::memcpy(&v, s.bytes.data() + 1168, 2);
  CHECK(v == value_at(32, 5, 0));
  std::memcpy(&v, s.bytes.data() + 1152, 2);  // logical 1152 + 16 -> physical 1152
  CHECK(v == 0);
  std::memcpy(&v, s.bytes.data() + 1024 + 1024, 2);  // past the 256-byte box: untouched
  CHECK(v == 0xcdcd);
}

TEST_CASE("tile copies: shared-memory alignment and footprint; a 5-D box") {
  Global g{0x100000, {}};
  TensorMapDesc d = make_3d(g);
  d.swizzle = Swizzle::b32;
  bool mid = true;
  CHECK(tile_smem_check(d, 1024, &mid).empty());
  CHECK(!mid);
  CHECK(tile_smem_check(d, 1024 + 128, &mid).empty());
  CHECK(mid);                                  // 32B pattern repeats every 256 bytes
  CHECK(!tile_smem_check(d, 1024 + 64).empty());
  const SmemRange r = tile_smem_footprint(d, 1024);
  CHECK(r.first == 1024);
  CHECK(r.last == 1024 + 256);

  // 5-D: dims 3 x 2 x 2 x 3 x 2 of f32 (strides padded), box 4 x 1 x 2 x 2 x 1 at (-1, 1, 0, 2, 1).
  Global h{0x200000, {}};
  TensorMapDesc e;
  e.type = ElemType::f32;
  e.rank = 5;
  e.base = h.base;
  const uint64_t dims[5] = {3, 2, 2, 3, 2};
  const uint64_t strides[5] = {4, 16, 32, 64, 192};
  const uint32_t box[5] = {4, 1, 2, 2, 1};
  for (int i = 0; i < 5; ++i) { e.dims[i] = dims[i]; e.strides_bytes[i] = strides[i]; e.box[i] = box[i]; }
  REQUIRE(e.validate().empty());
  h.bytes.assign(384, 0);
  auto val = [](int64_t x0, int64_t x1, int64_t x2, int64_t x3, int64_t x4) {
    return float(1 + x0 + 10 * x1 + 100 * x2 + 1000 * x3 + 10000 * x4);
  };
  for (int64_t a4 = 0; a4 < 2; ++a4) for (int64_t a3 = 0; a3 < 3; ++a3) for (int64_t a2 = 0; a2 < 2; ++a2)
    for (int64_t a1 = 0; a1 < 2; ++a1) for (int64_t a0 = 0; a0 < 3; ++a0) {
      const float v = val(a0, a1, a2, a3, a4);
      std::memcpy(h.bytes.data() + a0 * 4 + a1 * 16 + a2 * 32 + a3 * 64 + a4 * 192, &v, 4);
    }
  Smem s;
  const int32_t c[5] = {-1, 1, 0, 2, 1};
  CHECK(tile_load(e, c, 0, [&](uint64_t a, void* p, uint32_t n) { h.read(a, p, n); },
                  [&](uint32_t a, const void* p, uint32_t n) { s.write(a, p, n); }) == 4 * 2 * 2 * 4);
  CHECK(h.bad == 0);
  for (uint32_t e3 = 0; e3 < 2; ++e3)
    for (uint32_t e2 = 0; e2 < 2; ++e2)
      for (uint32_t e0 = 0; e0 < 4; ++e0) {
        const int64_t x0 = -1 + int64_t(e0), x2 = e2, x3 = 2 + e3;
        const bool in = x0 >= 0 && x0 < 3 && x3 < 3;
        float got;
        std::memcpy(&got, s.bytes.data() + ((e3 * 2 + e2) * 4 + e0) * 4, 4);
        CHECK(got == (in ? val(x0, 1, x2, x3, 1) : 0.0f));
      }
}

TEST_CASE("tile load: NaN-request fill, element strides, no swizzle") {
  Global g{0x20000, {}};
  TensorMapDesc d;
  d.type = ElemType::bf16;
  d.rank = 2;
  d.base = g.base;
  d.dims[0] = 24; d.dims[1] = 5;
  d.strides_bytes[0] = 2; d.strides_bytes[1] = 64;
  d.box[0] = 16; d.box[1] = 6;
  d.elem_strides[1] = 2;  // rows 0, 2, 4 of the box's 6: 3 rows loaded
  d.oob_fill = OobFill::nan_request_zero_fma;
  REQUIRE(d.validate().empty());
  g.bytes.resize(64 * 5);
  for (uint32_t y = 0; y < 5; ++y)
    for (uint32_t x = 0; x < 32; ++x) {
      const uint16_t v = f32_to_bf16(float(1 + x + 100 * y));
      std::memcpy(g.bytes.data() + y * 64 + x * 2, &v, 2);
    }
  Smem s;
  const int32_t coords[2] = {16, 1};  // x 16..31 (24.. outside), y 1, 3, 5 (5 outside)
  const uint32_t tx = tile_load(d, coords, 0, [&](uint64_t a, void* p, uint32_t n) { g.read(a, p, n); },
                                [&](uint32_t a, const void* p, uint32_t n) { s.write(a, p, n); });
  CHECK(d.box_elems(1) == 3);
  CHECK(tx == 16 * 3 * 2);
  for (uint32_t e1 = 0; e1 < 3; ++e1)
    for (uint32_t e0 = 0; e0 < 16; ++e0) {
      const uint32_t x = 16 + e0, y = 1 + 2 * e1;
      uint16_t got;
      std::memcpy(&got, s.bytes.data() + (e1 * 16 + e0) * 2, 2);
      if (x < 24 && y < 5) CHECK(got == f32_to_bf16(float(1 + x + 100 * y)));
      else CHECK(got == 0x7fff);
    }
}

TEST_CASE("tile store is clipped; reduce-add rounds per type") {
  Global g{0x40000, {}};
  TensorMapDesc d = make_3d(g);
  d.swizzle = Swizzle::b32;
  const std::vector<uint8_t> before = g.bytes;
  Smem s;
  for (uint32_t i = 0; i < 256; ++i) { const uint16_t v = uint16_t(0xa000 + i); std::memcpy(s.bytes.data() + 512 + 2 * i, &v, 2); }
  const int32_t coords[3] = {32, 5, -1};
  const uint32_t wrote = tile_store(d, coords, 512, [&](uint32_t a, void* p, uint32_t n) { s.read(a, p, n); },
                                    [&](uint64_t a, const void* p, uint32_t n) { g.write(a, p, n); });
  CHECK(wrote == 8 * 2 * 2);
  CHECK(g.bad == 0);
  int changed = 0;
  for (uint64_t z = 0; z < 3; ++z)
    for (uint64_t y = 0; y < 7; ++y)
      for (uint64_t x = 0; x < 40; ++x) {
        uint16_t got, old;
        std::memcpy(&got, g.bytes.data() + z * 768 + y * 96 + x * 2, 2);
        std::memcpy(&old, before.data() + z * 768 + y * 96 + x * 2, 2);
        const bool in_box = x >= 32 && y >= 5 && z == 0;
        if (!in_box) { CHECK(got == old); continue; }
        const uint32_t e0 = uint32_t(x - 32), e1 = uint32_t(y - 5), e2 = 1;
        const uint32_t lin = 512 + ((e2 * 4 + e1) * 16 + e0) * 2;
        const uint32_t phys = lin ^ (((lin >> 7) & 1) << 4);
        CHECK(got == uint16_t(0xa000 + (phys - 512) / 2));
        ++changed;
      }
  CHECK(changed == 16);

  // reduce-add: f32 and bf16, a 1-D row of 16 elements with 4 outside.
  for (ElemType t : {ElemType::f32, ElemType::bf16}) {
    Global h{0x80000, std::vector<uint8_t>(64 * 4, 0)};
    TensorMapDesc r;
    r.type = t;
    r.rank = 1;
    r.base = h.base;
    r.dims[0] = 12;
    r.strides_bytes[0] = elem_bytes(t);
    r.box[0] = 16;
    REQUIRE(r.validate().empty());
    Smem sm;
    const uint32_t es = elem_bytes(t);
    for (uint32_t i = 0; i < 16; ++i) {
      const float gv = 1.0f, sv = i == 0 ? std::ldexp(1.0f, -8) : float(i);
      if (t == ElemType::f32) { std::memcpy(h.bytes.data() + 4 * i, &gv, 4); std::memcpy(sm.bytes.data() + 4 * i, &sv, 4); }
      else {
        const uint16_t a = f32_to_bf16(gv), b = f32_to_bf16(sv);
        std::memcpy(h.bytes.data() + 2 * i, &a, 2); std::memcpy(sm.bytes.data() + 2 * i, &b, 2);
      }
    }
    const int32_t c0[1] = {0};
    const uint32_t n = tile_reduce_add(r, c0, 0, [&](uint32_t a, void* p, uint32_t k) { sm.read(a, p, k); },
                                       [&](uint64_t a, void* p, uint32_t k) { h.read(a, p, k); },
                                       [&](uint64_t a, const void* p, uint32_t k) { h.write(a, p, k); });
    CHECK(n == 12 * es);
    for (uint32_t i = 0; i < 16; ++i) {
      float v;
      if (t == ElemType::f32) std::memcpy(&v, h.bytes.data() + 4 * i, 4);
      else { uint16_t b; std::memcpy(&b, h.bytes.data() + 2 * i, 2); v = bf16_to_f32(b); }
      if (i >= 12) { CHECK(v == 1.0f); continue; }  // outside: untouched
      if (i == 0) CHECK(v == (t == ElemType::f32 ? 1.0f + std::ldexp(1.0f, -8) : 1.0f));  // bf16: tie to even
      else CHECK(v == 1.0f + float(i));
    }
  }
}

}  // TEST_SUITE
