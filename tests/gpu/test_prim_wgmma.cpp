// GPU tests of ptx/wgmma.cuh + ptx/wgmma_mma.cuh: each shape and dtype the kernels use, SS and RS,
// against an fp64 GEMM of the same (already rounded) inputs, on fresh random inputs per case; and
// wait_group depth semantics. Tolerance: |D - ref| <= tol * sum_k |a_k b_k| + 1e-6, tol = 1e-3 for
// 16-bit inputs (f32 accumulation of exact products), 2e-3 for e4m3 (Hopper's FP8 MMA accumulates
// with fewer mantissa bits than f32).
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tools/support/dtype.h"
#include "tests/kernels/prim_host_util.h"
#include "tests/kernels/prim_wgmma.h"

using namespace flashptx_test::prim;

namespace {

// e4m3: 1 sign, 4 exponent (bias 7), 3 mantissa bits; 0x7f / 0xff are NaN (never generated).
double e4m3_value(uint8_t b) {
  const int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
  const double mag = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
  return s ? -mag : mag;
}

// A random operand of `elems` elements of `type`: raw bytes for the device and the exact values.
struct Operand {
  std::vector<uint8_t> bytes;
  std::vector<double> val;
};

Operand random_operand(MmaType type, size_t elems, std::mt19937& g) {
  Operand o;
  o.val.resize(elems);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  if (type == MmaType::kE4M3) {
    o.bytes.resize(elems);
    for (size_t i = 0; i < elems; ++i) {
      // exponent 4..10: magnitudes 2^-3 .. 2^3 x (1 + m/8); no NaN, no subnormals
      const uint8_t b = static_cast<uint8_t>(((g() & 1u) << 7) | ((4u + g() % 7u) << 3) | (g() & 7u));
      o.bytes[i] = b;
      o.val[i] = e4m3_value(b);
    }
  } else {
    o.bytes.resize(elems * 2);
    for (size_t i = 0; i < elems; ++i) {
      const float f = U(g);
      const uint16_t h = type == MmaType::kBF16 ? flashptx::float_to_bf16(f) : flashptx::float_to_fp16(f);
      o.bytes[2 * i] = static_cast<uint8_t>(h);
      o.bytes[2 * i + 1] = static_cast<uint8_t>(h >> 8);
      o.val[i] = type == MmaType::kBF16 ? flashptx::bf16_to_float(h) : flashptx::fp16_to_float(h);
    }
  }
  return o;
}

const char* type_name(MmaType t) {
  return t == MmaType::kBF16 ? "bf16" : t == MmaType::kF16 ? "f16" : "e4m3";
}

// D (64 x n, row-major) against sum_k A[m][k] * B(k, n); b_at(k, n) gives B's element.
template <typename BAt>
int count_bad(const std::vector<float>& d, const std::vector<double>& a, int k_ext, int n, BAt b_at, double tol) {
  int bad = 0;
  for (int m = 0; m < kMmaM; ++m)
    for (int j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (int k = 0; k < k_ext; ++k) {
        const double p = a[static_cast<size_t>(m) * k_ext + k] * b_at(k, j);
        ref += p;
        mag += std::fabs(p);
      }
      const double got = d[static_cast<size_t>(m) * n + j];
      if (!(std::fabs(got - ref) <= tol * mag + 1e-6) && ++bad <= 4)
        MESSAGE("D(" << m << ", " << j << ") = " << got << ", reference " << ref);
    }
  return bad;
}

// One SS or RS case on fresh inputs.
void run_case(MmaType type, int n, bool rs, int trans_b, uint32_t seed) {
  INFO(type_name(type) << (rs ? " RS" : " SS") << " m64n" << n << (trans_b ? " B MN-major" : " B K-major"));
  std::mt19937 g(seed);
  const int elem = type == MmaType::kE4M3 ? 1 : 2;
  const int k_ext = kMmaRowBytes / elem;  // 64 (16-bit) or 128 (e4m3)
  const Operand a = random_operand(type, static_cast<size_t>(kMmaM) * k_ext, g);
  const Operand b = random_operand(type, static_cast<size_t>(n) * k_ext, g);  // K-major: n x K; MN-major: K x n
  DevBuf<uint8_t> da(a.bytes.size()), db(b.bytes.size());
  DevBuf<float> d(static_cast<size_t>(kMmaM) * n);
  da.upload(a.bytes);
  db.upload(b.bytes);
  d.poison();
  if (rs) PRIM_LAUNCH_REQUIRE(launch_wgmma_rs(type, n, da.p, db.p, d.p));
  else PRIM_LAUNCH_REQUIRE(launch_wgmma_ss(type, n, trans_b, da.p, db.p, d.p));
  const auto got = d.download();
  const double tol = type == MmaType::kE4M3 ? 2e-3 : 1e-3;
  const bool mn_major = rs || trans_b;
  const int bad = count_bad(got, a.val, k_ext, n, [&](int k, int j) {
    return mn_major ? b.val[static_cast<size_t>(k) * n + j] : b.val[static_cast<size_t>(j) * k_ext + k];
  }, tol);
  CHECK_MESSAGE(bad == 0, bad << " of " << kMmaM * n << " outputs off");
}

}  // namespace

TEST_SUITE("gpu_sm90 primitives wgmma") {

TEST_CASE("wgmma SS bf16, K-major A and B, 128B swizzle, every N") {
  uint32_t seed = 3000;
  for (int n : {64, 80, 96, 128, 160, 176, 192, 256}) run_case(MmaType::kBF16, n, false, 0, ++seed);
}

TEST_CASE("wgmma SS f16, K-major A and B, 128B swizzle, every N") {
  uint32_t seed = 3100;
  for (int n : {64, 80, 96, 128, 160, 176, 192, 256}) run_case(MmaType::kF16, n, false, 0, ++seed);
}

TEST_CASE("wgmma SS bf16, MN-major B (TransB = 1), 128B swizzle") {
  uint32_t seed = 3200;
  for (int n : {64, 128, 256}) run_case(MmaType::kBF16, n, false, 1, ++seed);
}

TEST_CASE("wgmma SS e4m3 x e4m3, K-major, 128B swizzle") {
  uint32_t seed = 3300;
  for (int n : {64, 128, 256}) run_case(MmaType::kE4M3, n, false, 0, ++seed);
}

TEST_CASE("wgmma RS bf16 and f16: A from registers, MN-major B") {
  uint32_t seed = 3400;
  for (MmaType t : {MmaType::kBF16, MmaType::kF16})
    for (int n : {64, 128, 256}) run_case(t, n, true, 1, ++seed);
}

TEST_CASE("wgmma wait_group depth: wait_group<1> retires the older of two groups") {
  std::mt19937 g(3500);
  const Operand a1 = random_operand(MmaType::kBF16, 64 * 64, g);
  const Operand a2 = random_operand(MmaType::kBF16, 64 * 64, g);
  const Operand b = random_operand(MmaType::kBF16, 64 * 64, g);
  DevBuf<uint8_t> d_a1(a1.bytes.size()), d_a2(a2.bytes.size()), d_b(b.bytes.size());
  DevBuf<float> d1(64 * 64), d2(64 * 64);
  d_a1.upload(a1.bytes);
  d_a2.upload(a2.bytes);
  d_b.upload(b.bytes);
  d1.poison();
  d2.poison();
  PRIM_LAUNCH_REQUIRE(launch_wgmma_wait_depth(d_a1.p, d_a2.p, d_b.p, d1.p, d2.p));
  auto b_at = [&](int k, int j) { return b.val[static_cast<size_t>(j) * 64 + k]; };
  const int bad1 = count_bad(d1.download(), a1.val, 64, 64, b_at, 1e-3);
  const int bad2 = count_bad(d2.download(), a2.val, 64, 64, b_at, 1e-3);
  CHECK_MESSAGE(bad1 == 0, bad1 << " outputs of the first group, read after wait_group<1>, are off");
  CHECK_MESSAGE(bad2 == 0, bad2 << " outputs of the second group, read after wait_group<0>, are off");
}

}  // TEST_SUITE
