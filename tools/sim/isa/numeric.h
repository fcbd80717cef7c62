// ptxsim ISA semantics: number formats and floating-point instruction semantics.
//
// Pure functions over bit patterns, written from the PTX ISA: 5.2 (Types: the floating-point types
// and the alternate formats bf16, tf32, e4m3, e5m2), 9.7.9.21 (Data Movement and Conversion
// Instructions: cvt; rounding modifiers, .satfinite, .relu, packed operand order), 9.7.3
// (Floating Point Instructions: add/mul/fma/min/max/rcp/rsqrt/lg2/ex2/tanh, e.g. 9.7.3.21 ex2) and
// 9.7.4 (Half Precision Floating Point Instructions on .f16/.f16x2/.bf16/.bf16x2). Section numbers
// are those of PTX ISA 9.x; they move between releases, the titles do not.
//
// Conventions: a 16-bit value is a uint16_t bit pattern, packed pairs are a uint32_t whose
// upper half is element 1 ("hi") and lower half element 0 ("lo").
#pragma once
#include <cstdint>

namespace ptxsim::isa {

// Floating-point rounding modifiers (PTX ISA "Rounding Modifiers"): .rn nearest-even, .rz toward
// zero, .rm toward -inf, .rp toward +inf.
enum class Rnd : uint8_t { rn, rz, rm, rp };
// Integer rounding modifiers for float->int and float->integral-float cvt: .rni nearest-even,
// .rzi toward zero, .rmi toward -inf, .rpi toward +inf.
enum class IRnd : uint8_t { rni, rzi, rmi, rpi };

float f32_from_bits(uint32_t b);
uint32_t f32_bits(float f);
double f64_from_bits(uint64_t b);
uint64_t f64_bits(double d);

// ---- f32 <-> f64 -------------------------------------------------------------------------------
// cvt.f64.f32 is exact. cvt.rnd{.ftz}{.sat}.f32.f64 rounds once.
double cvt_f64_f32(float a);
float cvt_f32_f64(double a, Rnd rnd = Rnd::rn, bool ftz = false, bool sat = false);

// ---- bf16 (8-bit exponent, 7-bit fraction) ------------------------------------------------------
float bf16_to_f32(uint16_t h);                    // exact
uint16_t f32_to_bf16(float a, Rnd rnd = Rnd::rn, bool satfinite = false, bool relu = false);
uint16_t f64_to_bf16(double a, Rnd rnd = Rnd::rn);

// ---- f16 (IEEE binary16) ------------------------------------------------------------------------
float f16_to_f32(uint16_t h);                     // exact
uint16_t f32_to_f16(float a, Rnd rnd = Rnd::rn, bool satfinite = false, bool relu = false);
uint16_t f64_to_f16(double a, Rnd rnd = Rnd::rn);

// ---- e4m3 (e4m3fn: bias 7, no infinity, S.1111.111 is NaN, max 448) -----------------------------
// ---- e5m2 (bias 15, IEEE-like: infinities and NaNs, max 57344) -------------------------------------
float e4m3_to_f32(uint8_t v);                     // exact
float e5m2_to_f32(uint8_t v);                     // exact
// cvt.rn.satfinite.{e4m3,e5m2}: nearest-even; finite overflow and +-inf clamp to +-max; NaN -> NaN.
uint8_t f32_to_e4m3_satfinite(float a);
uint8_t f32_to_e5m2_satfinite(float a);
// cvt.rn.e5m2 without .satfinite is not a PTX form for f32 sources (the ISA requires .satfinite
// for f32 -> e4m3x2/e5m2x2); this helper rounds with IEEE overflow to inf, for e5m2 only.
uint8_t f32_to_e5m2_rn(float a);

// ---- packed cvt (PTX ISA 9.7.9.21 cvt) ----------------------------------------------------------
// "cvt.rn.{f16x2,bf16x2}.f32 d, a, b": a goes to the UPPER half of d, b to the lower half.
uint32_t cvt_rn_f16x2_f32(float a, float b, bool relu = false, bool satfinite = false);
uint32_t cvt_rn_bf16x2_f32(float a, float b, bool relu = false, bool satfinite = false);
// "cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 d, a, b": a -> upper byte d[15:8], b -> lower byte d[7:0].
// .relu: negative results become +0, NaN stays NaN.
uint16_t cvt_rn_satfinite_e4m3x2_f32(float a, float b, bool relu = false);
uint16_t cvt_rn_satfinite_e5m2x2_f32(float a, float b, bool relu = false);
// "cvt.rn.f16x2.e4m3x2 d, a": byte i of a becomes half i of d (exact; every e4m3 is an f16).
uint32_t cvt_rn_f16x2_e4m3x2(uint16_t a);
uint32_t cvt_rn_f16x2_e5m2x2(uint16_t a);
// "cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f16x2 d, a": half i of a -> byte i of d.
uint16_t cvt_rn_satfinite_e4m3x2_f16x2(uint32_t a, bool relu = false);
uint16_t cvt_rn_satfinite_e5m2x2_f16x2(uint32_t a, bool relu = false);

// "cvt.rna{.satfinite}.tf32.f32" (nearest, ties away from zero) and "cvt.{rn,rz}{.satfinite}{.relu}
// .tf32.f32": the f32 pattern rounded to 10 fraction bits, the low 13 bits zero.
enum class Tf32Rnd : uint8_t { rna, rn, rz };
uint32_t cvt_tf32_f32(float a, Tf32Rnd rnd, bool satfinite = false, bool relu = false);

// ---- float <-> integer ----------------------------------------------------------------------------
// cvt.irnd{.ftz}{.sat}.{s,u}{8,16,32,64}.{f16,f32,f64}: float to integer saturates to the
// destination range (the ISA: saturation is the default for float->int), NaN -> 0. The result is
// returned in the low `bits` bits (sign-extended in the int64_t for signed types).
int64_t cvt_int_from_float(double a, IRnd rnd, int bits, bool is_signed);
// cvt.rnd.{f16,f32,f64}.{s,u}{..}: integer to float rounded with rnd.
float cvt_f32_from_s64(int64_t a, Rnd rnd);
float cvt_f32_from_u64(uint64_t a, Rnd rnd);
double cvt_f64_from_s64(int64_t a, Rnd rnd);
double cvt_f64_from_u64(uint64_t a, Rnd rnd);
// cvt.irnd{.ftz}.f32.f32: round to an integral value in floating point.
float cvt_f32_round_integral(float a, IRnd rnd, bool ftz = false);
double cvt_f64_round_integral(double a, IRnd rnd);

// ---- f32 arithmetic (9.7.3 Floating-Point Instructions) ------------------------------------------
// .ftz flushes subnormal inputs and results to sign-preserving zero.
float ftz_f32(float a);
float add_f32(float a, float b, Rnd rnd = Rnd::rn, bool ftz = false, bool sat = false);
float sub_f32(float a, float b, Rnd rnd = Rnd::rn, bool ftz = false, bool sat = false);
float mul_f32(float a, float b, Rnd rnd = Rnd::rn, bool ftz = false, bool sat = false);
float fma_f32(float a, float b, float c, Rnd rnd = Rnd::rn, bool ftz = false, bool sat = false);
double fma_f64(double a, double b, double c, Rnd rnd = Rnd::rn);
double add_f64(double a, double b, Rnd rnd = Rnd::rn);
double mul_f64(double a, double b, Rnd rnd = Rnd::rn);
float div_rn_f32(float a, float b, bool ftz = false);      // div.rn.f32 (IEEE)
float sqrt_rn_f32(float a, bool ftz = false);              // sqrt.rn.f32 (IEEE)
float div_f32(float a, float b, Rnd rnd, bool ftz = false);  // div.{rn,rz,rm,rp}.f32
float sqrt_f32(float a, Rnd rnd, bool ftz = false);          // sqrt.{rn,rz,rm,rp}.f32
float rcp_rn_f32(float a, Rnd rnd = Rnd::rn, bool ftz = false);  // rcp.rnd.f32 (IEEE)
// min/max: without .NaN, if one input is NaN the other is returned (NaN only if both are);
// with .NaN any NaN input gives the canonical NaN 0x7fffffff. -0.0 < +0.0.
float min_f32(float a, float b, bool nan_mode = false, bool ftz = false);
float max_f32(float a, float b, bool nan_mode = false, bool ftz = false);
inline constexpr uint32_t kCanonicalNaN32 = 0x7fffffffu;
inline constexpr uint16_t kCanonicalNaN16 = 0x7fffu;   // f16 and bf16 canonical NaN

// ---- comparisons and classification (9.7.3 testp, 9.7.7 Comparison and Selection: setp) ---------
// Floating-point setp/set compare operators: eq ne lt le gt ge are ordered (false if either input
// is NaN; note ne too); equ neu ltu leu gtu geu are unordered (true if either is NaN); num is
// "neither is NaN", nan "either is NaN". -0.0 == +0.0.
enum class FCmp : uint8_t { eq, ne, lt, le, gt, ge, equ, neu, ltu, leu, gtu, geu, num, nan };
bool setp_f32(FCmp op, float a, float b, bool ftz = false);
bool setp_f64(FCmp op, double a, double b);
// testp.{finite,infinite,number,notanumber,normal,subnormal}.f32
enum class TestP : uint8_t { finite, infinite, number, notanumber, normal, subnormal };
bool testp_f32(TestP op, float a);

// ---- approximate functions ---------------------------------------------------------------------
// Exact mode: the result correctly rounded (rn) from an fp64 evaluation. Perturbed mode: a
// deterministic pseudo-random error (a hash of the seed, the function and the input bits) that
// stays within the ISA's stated maximum error, so a test can show whether a kernel depends on
// exactness. ISA reading: the bounds used are listed in READINGS.md (kEx2MaxUlp etc. below).
enum class ApproxMode : uint8_t { exact, perturbed };
struct ApproxConfig {
  ApproxMode mode = ApproxMode::exact;
  uint64_t seed = 0;
};
// The ISA's stated bounds (PTX ISA 9.7.3 "Floating Point Instructions", per instruction):
inline constexpr int kEx2MaxUlp = 2;   // ex2.approx.f32: 2 ulp from the correctly rounded result
inline constexpr int kRcpMaxUlp = 1;   // rcp.approx.f32: 1 ulp (ISA reading: from the correctly rounded result)
inline constexpr double kRsqrtMaxRel = 0x1p-23 * 1.0717734625362931;  // rsqrt.approx.f32: 2^-22.9 relative
inline constexpr double kTanhMaxRel = 0x1p-11;                        // tanh.approx.f32: 2^-11 relative
// lg2.approx.f32, ISA reading: 2^-22 absolute for inputs in (0.5, 2), 2^-22 relative elsewhere,
// and never below 1 ulp of the result (the correctly rounded value itself may be that far).
double lg2_approx_bound(float input, double exact);
float ex2_approx_f32(float a, bool ftz, const ApproxConfig& cfg = {});
float rcp_approx_f32(float a, bool ftz, const ApproxConfig& cfg = {});
float rsqrt_approx_f32(float a, bool ftz, const ApproxConfig& cfg = {});
float lg2_approx_f32(float a, bool ftz, const ApproxConfig& cfg = {});
float tanh_approx_f32(float a, const ApproxConfig& cfg = {});   // tanh has no .ftz form
float sqrt_approx_f32(float a, bool ftz, const ApproxConfig& cfg = {});
// ex2.approx.{f16,f16x2} / ex2.approx.ftz.{bf16,bf16x2}: evaluated exactly, rounded once.
uint16_t ex2_approx_f16(uint16_t a);
uint16_t ex2_approx_bf16(uint16_t a);

// ---- half-precision arithmetic (f16/bf16 and packed x2) ------------------------------------------
// Each is computed exactly and rounded once to the 16-bit format (.rn). f16 forms honour .ftz
// (flush subnormal inputs and results); bf16 forms have no .ftz in the ISA.
uint16_t add_f16(uint16_t a, uint16_t b, bool ftz = false, bool sat = false);
uint16_t sub_f16(uint16_t a, uint16_t b, bool ftz = false, bool sat = false);
uint16_t mul_f16(uint16_t a, uint16_t b, bool ftz = false, bool sat = false);
uint16_t fma_f16(uint16_t a, uint16_t b, uint16_t c, bool ftz = false, bool sat = false, bool relu = false);
uint16_t add_bf16(uint16_t a, uint16_t b);
uint16_t sub_bf16(uint16_t a, uint16_t b);
uint16_t mul_bf16(uint16_t a, uint16_t b);
uint16_t fma_bf16(uint16_t a, uint16_t b, uint16_t c, bool relu = false);
uint16_t min_f16(uint16_t a, uint16_t b, bool nan_mode = false);
uint16_t max_f16(uint16_t a, uint16_t b, bool nan_mode = false);
uint16_t min_bf16(uint16_t a, uint16_t b, bool nan_mode = false);
uint16_t max_bf16(uint16_t a, uint16_t b, bool nan_mode = false);
// Packed forms apply the scalar form to each half independently (lo with lo, hi with hi).
uint32_t add_f16x2(uint32_t a, uint32_t b, bool ftz = false, bool sat = false);
uint32_t sub_f16x2(uint32_t a, uint32_t b, bool ftz = false, bool sat = false);
uint32_t mul_f16x2(uint32_t a, uint32_t b, bool ftz = false, bool sat = false);
uint32_t fma_f16x2(uint32_t a, uint32_t b, uint32_t c, bool ftz = false, bool sat = false, bool relu = false);
uint32_t add_bf16x2(uint32_t a, uint32_t b);
uint32_t sub_bf16x2(uint32_t a, uint32_t b);
uint32_t mul_bf16x2(uint32_t a, uint32_t b);
uint32_t fma_bf16x2(uint32_t a, uint32_t b, uint32_t c, bool relu = false);
uint32_t min_f16x2(uint32_t a, uint32_t b, bool nan_mode = false);
uint32_t max_f16x2(uint32_t a, uint32_t b, bool nan_mode = false);
uint32_t min_bf16x2(uint32_t a, uint32_t b, bool nan_mode = false);
uint32_t max_bf16x2(uint32_t a, uint32_t b, bool nan_mode = false);

}  // namespace ptxsim::isa
