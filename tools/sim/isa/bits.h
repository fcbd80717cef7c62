// ptxsim ISA semantics: integer and bit-manipulation instructions.
//
// Header-only pure functions, written from the PTX ISA 9.7.1 (Integer Arithmetic Instructions:
// add/sub/mul/mad, mul.hi/.wide, sad, popc, clz, bfind, brev, bfe, bfi, szext, bmsk, dp4a, dp2a),
// 9.7.2 (Extended-Precision Integer Arithmetic: add.cc, addc, sub.cc, subc, mad.cc, madc),
// 9.7.8 (Logic and Shift Instructions: lop3, shf, shl, shr) and 9.7.9 (Data Movement and
// Conversion Instructions: prmt).
#pragma once
#include <cstdint>

namespace ptxsim::isa {

// ---- prmt.b32{.mode} d, a, b, c --------------------------------------------------------------
// The eight source bytes are {b, a} = {b7 b6 b5 b4, b3 b2 b1 b0} (a is the low word).
// Default mode: nibble i of c (c[4i+3:4i]) selects the byte for d byte i; its low 3 bits pick
// the source byte, its msb replicates that byte's sign bit over the 8 bits instead of copying.
// Other modes use only c[1:0]; the ISA's table gives, for d bytes 3..0 (listed msb first):
//   .f4e (forward 4 extract)   0: 3 2 1 0   1: 4 3 2 1   2: 5 4 3 2   3: 6 5 4 3
//   .b4e (backward 4 extract)  0: 5 6 7 0   1: 6 7 0 1   2: 7 0 1 2   3: 0 1 2 3
//   .rc8 (replicate 8)         0: 0 0 0 0   1: 1 1 1 1   2: 2 2 2 2   3: 3 3 3 3
//   .ecl (edge clamp left)     0: 3 2 1 0   1: 3 2 1 1   2: 3 2 2 2   3: 3 3 3 3
//   .ecr (edge clamp right)    0: 0 0 0 0   1: 1 1 1 0   2: 2 2 1 0   3: 3 2 1 0
//   .rc16 (replicate 16)       0: 1 0 1 0   1: 3 2 3 2   2: 1 0 1 0   3: 3 2 3 2
// ISA reading: the page's table is the only definition of the modes; sign replication is
// "only performed as part of the generic form" (quoted meaning), so modes copy bytes.
enum class PrmtMode : uint8_t { none, f4e, b4e, rc8, ecl, ecr, rc16 };

inline uint32_t prmt(uint32_t a, uint32_t b, uint32_t c, PrmtMode mode = PrmtMode::none) {
  const uint64_t src = (uint64_t(b) << 32) | a;
  auto byte_of = [&](unsigned i) { return uint32_t((src >> (8 * (i & 7))) & 0xff); };
  uint32_t d = 0;
  if (mode == PrmtMode::none) {
    for (unsigned i = 0; i < 4; ++i) {
      const unsigned sel = (c >> (4 * i)) & 0xf;
      uint32_t v = byte_of(sel & 7);
      if (sel & 8) v = (v & 0x80) ? 0xff : 0x00;
      d |= v << (8 * i);
    }
    return d;
  }
  static const uint8_t kTable[6][4][4] = {
      // [mode][c&3][d byte 0..3]  (the table above, read right to left)
      {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},  // f4e
      {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},  // b4e
      {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},  // rc8
      {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},  // ecl
      {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},  // ecr
      {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}},  // rc16
  };
  const auto& row = kTable[unsigned(mode) - 1][c & 3];
  for (unsigned i = 0; i < 4; ++i) d |= byte_of(row[i]) << (8 * i);
  return d;
}

// ---- lop3.b32 d, a, b, c, immLut --------------------------------------------------------------
// immLut is the truth table evaluated on ta = 0xF0, tb = 0xCC, tc = 0xAA: for each bit position,
// the result bit is immLut[(a<<2)|(b<<1)|c].
inline uint32_t lop3(uint32_t a, uint32_t b, uint32_t c, uint8_t lut) {
  uint32_t d = 0;
  for (unsigned k = 0; k < 8; ++k) {
    if (!((lut >> k) & 1)) continue;
    const uint32_t ma = (k & 4) ? a : ~a, mb = (k & 2) ? b : ~b, mc = (k & 1) ? c : ~c;
    d |= ma & mb & mc;
  }
  return d;
}

// ---- bfe.{u32,s32,u64,s64} d, a, b, c ----------------------------------------------------------
// pos = b[7:0], len = c[7:0]; d[i] = a[pos+i] for i < len and pos+i <= msb, else the sign bit
// sbit (0 for unsigned or len == 0; a[min(pos+len-1, msb)] for signed).
inline uint64_t bfe(uint64_t a, uint32_t b, uint32_t c, int width, bool is_signed) {
  const unsigned msb = unsigned(width) - 1, pos = b & 0xff, len = c & 0xff;
  unsigned sbit = 0;
  if (is_signed && len != 0) {
    const unsigned top = (pos + len - 1 > msb) ? msb : pos + len - 1;
    sbit = unsigned((a >> top) & 1);
  }
  uint64_t d = 0;
  for (unsigned i = 0; i <= msb; ++i) {
    const unsigned bit = (i < len && pos + i <= msb) ? unsigned((a >> (pos + i)) & 1) : sbit;
    d |= uint64_t(bit) << i;
  }
  return d;
}

// ---- bfi.{b32,b64} f, a, b, c, d ---------------------------------------------------------------
// Insert the low len bits of a into b at pos: pos = c[7:0], len = d[7:0]; bits past msb dropped.
inline uint64_t bfi(uint64_t a, uint64_t b, uint32_t c, uint32_t d, int width) {
  const unsigned msb = unsigned(width) - 1, pos = c & 0xff, len = d & 0xff;
  uint64_t f = b;
  for (unsigned i = 0; i < len && pos + i <= msb; ++i) {
    f &= ~(uint64_t(1) << (pos + i));
    f |= ((a >> i) & 1) << (pos + i);
  }
  if (width == 32) f &= 0xffffffffu;
  return f;
}

inline uint32_t brev32(uint32_t a) {
  uint32_t d = 0;
  for (int i = 0; i < 32; ++i) d |= ((a >> i) & 1u) << (31 - i);
  return d;
}
inline uint64_t brev64(uint64_t a) {
  return (uint64_t(brev32(uint32_t(a))) << 32) | brev32(uint32_t(a >> 32));
}
// clz: number of leading zeros (32 or 64 for a zero input). popc: number of one bits.
inline uint32_t clz32(uint32_t a) { return a ? uint32_t(__builtin_clz(a)) : 32u; }
inline uint32_t clz64(uint64_t a) { return a ? uint32_t(__builtin_clzll(a)) : 64u; }
inline uint32_t popc32(uint32_t a) { return uint32_t(__builtin_popcount(a)); }
inline uint32_t popc64(uint64_t a) { return uint32_t(__builtin_popcountll(a)); }
// bfind.{u32,s32}{.shiftamt}: position of the most significant non-sign bit; 0xffffffff if none.
inline uint32_t bfind(uint64_t a, int width, bool is_signed, bool shiftamt) {
  const int msb = width - 1;
  uint64_t v = (width == 32) ? (a & 0xffffffffu) : a;
  if (is_signed && ((v >> msb) & 1)) v = ~v & ((width == 32) ? 0xffffffffull : ~0ull);
  for (int i = msb; i >= 0; --i)
    if ((v >> i) & 1) return shiftamt ? uint32_t(msb - i) : uint32_t(i);
  return 0xffffffffu;
}

// ---- shf.{l,r}.{clamp,wrap}.b32 d, a, b, c --------------------------------------------------
// Funnel shift of the 64-bit {b, a} (b is the high word). n = clamp ? min(c, 32) : c & 0x1f.
// shf.l: d = upper 32 bits of ({b,a} << n); shf.r: d = lower 32 bits of ({b,a} >> n).
inline uint32_t shf_l(uint32_t a, uint32_t b, uint32_t c, bool clamp) {
  const uint32_t n = clamp ? (c > 32 ? 32 : c) : (c & 0x1f);
  const uint64_t v = (uint64_t(b) << 32) | a;
  return uint32_t((n == 0 ? v : (v << n)) >> 32);
}
inline uint32_t shf_r(uint32_t a, uint32_t b, uint32_t c, bool clamp) {
  const uint32_t n = clamp ? (c > 32 ? 32 : c) : (c & 0x1f);
  const uint64_t v = (uint64_t(b) << 32) | a;
  return uint32_t(v >> n);
}
// shl/shr: shift amounts larger than the register width give 0 (shr.s: sign fill).
inline uint64_t shl(uint64_t a, uint32_t n, int width) {
  if (n >= unsigned(width)) return 0;
  const uint64_t r = a << n;
  return width == 64 ? r : (r & ((uint64_t(1) << width) - 1));
}
inline uint64_t shr_u(uint64_t a, uint32_t n, int width) {
  if (width < 64) a &= (uint64_t(1) << width) - 1;
  return n >= unsigned(width) ? 0 : (a >> n);
}
inline int64_t shr_s(int64_t a, uint32_t n, int width) {
  if (width < 64) a = int64_t(uint64_t(a) << (64 - width)) >> (64 - width);
  const unsigned k = n >= unsigned(width) ? unsigned(width) - 1 : n;
  return a >> k;  // sign-extended; the caller keeps the low `width` bits
}

// ---- mul.{hi,wide} and mad.{lo,hi} -----------------------------------------------------------
inline uint32_t mul_hi_u32(uint32_t a, uint32_t b) { return uint32_t((uint64_t(a) * b) >> 32); }
inline int32_t mul_hi_s32(int32_t a, int32_t b) { return int32_t((int64_t(a) * b) >> 32); }
inline uint64_t mul_hi_u64(uint64_t a, uint64_t b) { return uint64_t((unsigned __int128)a * b >> 64); }
inline int64_t mul_hi_s64(int64_t a, int64_t b) { return int64_t((__int128)a * b >> 64); }
inline uint64_t mul_wide_u32(uint32_t a, uint32_t b) { return uint64_t(a) * b; }
inline int64_t mul_wide_s32(int32_t a, int32_t b) { return int64_t(a) * b; }
inline uint32_t mul_wide_u16(uint16_t a, uint16_t b) { return uint32_t(a) * b; }
inline int32_t mul_wide_s16(int16_t a, int16_t b) { return int32_t(a) * b; }

// mul24.{lo,hi}.{u32,s32}: the 48-bit product of the low 24 bits of a and b (sign-extended from
// bit 23 for .s32); .lo gives bits 31..0, .hi bits 47..16.
inline uint32_t mul24(uint32_t a, uint32_t b, bool hi, bool is_signed) {
  const int64_t x = is_signed ? int64_t(int32_t(a << 8) >> 8) : int64_t(a & 0xffffff);
  const int64_t y = is_signed ? int64_t(int32_t(b << 8) >> 8) : int64_t(b & 0xffffff);
  const uint64_t p = uint64_t(x * y);
  return hi ? uint32_t(p >> 16) : uint32_t(p);
}

// ---- integer comparisons (setp.cmp.{u,s}{16,32,64}, .b types: eq/ne only) ---------------------------
// lo/ls/hi/hs are the unsigned spellings of lt/le/gt/ge.
enum class ICmp : uint8_t { eq, ne, lt, le, gt, ge };
inline bool setp_int(ICmp op, uint64_t a, uint64_t b, int width, bool is_signed) {
  const uint64_t m = width == 64 ? ~0ull : ((uint64_t(1) << width) - 1);
  a &= m; b &= m;
  if (is_signed && width < 64) {
    a = uint64_t(int64_t(a << (64 - width)) >> (64 - width));
    b = uint64_t(int64_t(b << (64 - width)) >> (64 - width));
  }
  const bool lt = is_signed ? int64_t(a) < int64_t(b) : a < b;
  switch (op) {
    case ICmp::eq: return a == b;
    case ICmp::ne: return a != b;
    case ICmp::lt: return lt;
    case ICmp::le: return lt || a == b;
    case ICmp::gt: return !lt && a != b;
    case ICmp::ge: return !lt;
  }
  return false;
}

// ---- extended precision: the carry flag CC.CF --------------------------------------------------
// add.cc: d = a + b, CF = carry out. addc{.cc}: d = a + b + CF. sub.cc: d = a - b, CF = borrow
// out. subc{.cc}: d = a - (b + CF), CF = borrow out. ISA reading: the subc semantics line uses CF
// as a borrow, so sub.cc leaves CF = borrow (not the inverted carry of some other ISAs).
// mad{c}.{lo,hi}.cc: d = (lo or hi half of a*b) + c (+ CF), CF = carry out of that addition.
struct Carry32 { uint32_t d; bool cf; };
struct Carry64 { uint64_t d; bool cf; };
inline Carry32 addc32(uint32_t a, uint32_t b, bool cf_in) {
  const uint64_t s = uint64_t(a) + b + (cf_in ? 1 : 0);
  return {uint32_t(s), (s >> 32) != 0};
}
inline Carry64 addc64(uint64_t a, uint64_t b, bool cf_in) {
  const unsigned __int128 s = (unsigned __int128)a + b + (cf_in ? 1 : 0);
  return {uint64_t(s), (s >> 64) != 0};
}
inline Carry32 add_cc32(uint32_t a, uint32_t b) { return addc32(a, b, false); }
inline Carry64 add_cc64(uint64_t a, uint64_t b) { return addc64(a, b, false); }
inline Carry32 subc32(uint32_t a, uint32_t b, bool cf_in) {
  const uint64_t sub = uint64_t(b) + (cf_in ? 1 : 0);
  return {uint32_t(uint64_t(a) - sub), uint64_t(a) < sub};
}
inline Carry64 subc64(uint64_t a, uint64_t b, bool cf_in) {
  const unsigned __int128 sub = (unsigned __int128)b + (cf_in ? 1 : 0);
  return {uint64_t((unsigned __int128)a - sub), (unsigned __int128)a < sub};
}
inline Carry32 sub_cc32(uint32_t a, uint32_t b) { return subc32(a, b, false); }
inline Carry64 sub_cc64(uint64_t a, uint64_t b) { return subc64(a, b, false); }
inline Carry32 madc32(uint32_t a, uint32_t b, uint32_t c, bool hi, bool is_signed, bool cf_in) {
  const uint64_t p = is_signed ? uint64_t(int64_t(int32_t(a)) * int32_t(b)) : uint64_t(a) * b;
  return addc32(hi ? uint32_t(p >> 32) : uint32_t(p), c, cf_in);
}
inline Carry64 madc64(uint64_t a, uint64_t b, uint64_t c, bool hi, bool is_signed, bool cf_in) {
  const unsigned __int128 p = is_signed ? (unsigned __int128)((__int128)int64_t(a) * int64_t(b))
                                        : (unsigned __int128)a * b;
  return addc64(hi ? uint64_t(p >> 64) : uint64_t(p), c, cf_in);
}

// ---- sad, dp4a, dp2a -----------------------------------------------------------------------------
// sad: d = c + |a - b|.
inline uint32_t sad_u32(uint32_t a, uint32_t b, uint32_t c) { return c + (a > b ? a - b : b - a); }
inline int32_t sad_s32(int32_t a, int32_t b, int32_t c) {
  const int64_t diff = int64_t(a) - b;
  return int32_t(uint32_t(c) + uint32_t(diff < 0 ? -diff : diff));
}
// dp4a.atype.btype d, a, b, c: d = c + sum over the four byte pairs (signed per type).
inline uint32_t dp4a(uint32_t a, uint32_t b, uint32_t c, bool a_signed, bool b_signed) {
  int64_t acc = int32_t(c);
  for (int i = 0; i < 4; ++i) {
    const uint32_t ua = (a >> (8 * i)) & 0xff, ub = (b >> (8 * i)) & 0xff;
    const int64_t va = a_signed ? int8_t(ua) : int64_t(ua), vb = b_signed ? int8_t(ub) : int64_t(ub);
    acc += va * vb;
  }
  return uint32_t(acc);
}
// dp2a.{lo,hi}.atype.btype d, a, b, c: the two 16-bit halves of a times two bytes of b (the low
// two bytes for .lo, the high two for .hi), plus c.
inline uint32_t dp2a(uint32_t a, uint32_t b, uint32_t c, bool hi, bool a_signed, bool b_signed) {
  int64_t acc = int32_t(c);
  for (int i = 0; i < 2; ++i) {
    const uint32_t ua = (a >> (16 * i)) & 0xffff, ub = (b >> (8 * (i + (hi ? 2 : 0)))) & 0xff;
    const int64_t va = a_signed ? int16_t(ua) : int64_t(ua), vb = b_signed ? int8_t(ub) : int64_t(ub);
    acc += va * vb;
  }
  return uint32_t(acc);
}

// ---- bmsk.{clamp,wrap}.b32 d, a, b ---------------------------------------------------------------
// A mask of b one bits starting at bit a. .wrap uses a & 0x1f and b & 0x1f; .clamp uses
// min(a, 32) and min(b, 32); bits at or past position 32 do not exist. ISA reading: .wrap with
// b = 32 therefore gives an empty mask.
inline uint32_t bmsk(uint32_t a, uint32_t b, bool clamp) {
  const uint32_t pos = clamp ? (a > 32 ? 32 : a) : (a & 0x1f);
  const uint32_t len = clamp ? (b > 32 ? 32 : b) : (b & 0x1f);
  if (pos >= 32) return 0;
  const uint64_t m = ((uint64_t(1) << len) - 1) << pos;
  return uint32_t(m);
}

// ---- szext.{clamp,wrap}.{u32,s32} d, a, b --------------------------------------------------------
// Sign- (s32) or zero- (u32) extend the low b bits of a. .wrap uses b & 0x1f, .clamp min(b, 32);
// a width of 0 gives 0. ISA reading: with .wrap a width of 32 wraps to 0 (result 0).
inline uint32_t szext(uint32_t a, uint32_t b, bool clamp, bool is_signed) {
  const uint32_t n = clamp ? (b > 32 ? 32 : b) : (b & 0x1f);
  if (n == 0) return 0;
  if (n == 32) return a;
  const uint32_t low = a & ((1u << n) - 1);
  if (is_signed && ((low >> (n - 1)) & 1)) return low | ~((1u << n) - 1);
  return low;
}

}  // namespace ptxsim::isa
