// Semantic tests of the sm_100a primitives (ptx/tcgen05.cuh, ptx/clc.cuh) through the kernels of
// tests/kernels_sm100/. Never run on a Blackwell GPU (none was available). On a machine without a
// GPU every case (the TMEM round trip, the four cta_group::1 tcgen05.mma variants, the two
// cta_group::2 pair cases and cluster launch control) is executed in the PTX simulator
// (tools/sim/exec_sm100.inc: the kernels' own PTX; tests/main.cpp kSimulatorRuns).
// Inputs are fresh random values on every run (the seed is printed on failure); every element is
// compared.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tests/gpu/test_util.h"
#include "tests/kernels_sm100/sm100_launchers.h"

using namespace flashptx_test;

namespace {

uint32_t fresh_seed() {
  static bool said = false;  // once per run
  if (on_simulator() && !said) MESSAGE("sm_100a: executed in the PTX simulator; never run on a Blackwell GPU");
  said = true;
  return std::random_device{}();
}

// bf16 values k/8, |k| <= 16: exact in bf16, so the CPU GEMM sees exactly what the GPU sees.
void random_bf16_rows(std::mt19937& rng, int rows, std::vector<uint8_t>& bytes, std::vector<double>& values) {
  const int per_row = kUmmaRowBytes / 2;
  bytes.assign(size_t(rows) * kUmmaRowBytes, 0);
  values.assign(size_t(rows) * per_row, 0.0);
  std::uniform_int_distribution<int> k(-16, 16);
  for (int i = 0; i < rows * per_row; ++i) {
    const float f = static_cast<float>(k(rng)) / 8.0f;
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    const uint16_t h = static_cast<uint16_t>(bits >> 16);  // exact: the low 16 bits are zero
    std::memcpy(&bytes[size_t(i) * 2], &h, 2);
    values[i] = f;
  }
}

// e4m3 (bias 7): sign | 4-bit exponent | 3-bit mantissa. Exponent fields 5..9 only (|x| in
// [0.25, 7.5]), so no NaN encodings and no subnormals.
double e4m3_value(uint8_t b) {
  const int s = b >> 7, e = (b >> 3) & 0xF, m = b & 7;
  const double v = std::ldexp(1.0 + m / 8.0, e - 7);
  return s ? -v : v;
}

void random_e4m3_rows(std::mt19937& rng, int rows, std::vector<uint8_t>& bytes, std::vector<double>& values) {
  bytes.assign(size_t(rows) * kUmmaRowBytes, 0);
  values.assign(bytes.size(), 0.0);
  std::uniform_int_distribution<int> sign(0, 1), expo(5, 9), mant(0, 7);
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<uint8_t>((sign(rng) << 7) | (expo(rng) << 3) | mant(rng));
    values[i] = e4m3_value(bytes[i]);
  }
}

// D[i][j] = sum_k A[i][k] * B[j][k], in double.
std::vector<double> cpu_gemm_nt(const std::vector<double>& a, const std::vector<double>& b, int m, int n, int k) {
  std::vector<double> d(size_t(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int t = 0; t < k; ++t) s += a[size_t(i) * k + t] * b[size_t(j) * k + t];
      d[size_t(i) * n + j] = s;
    }
  return d;
}

// Counts the elements outside tolerance, reporting the first. The products are exact and the sums
// fit an f32 mantissa, so bf16 must match to rounding; fp8 tensor-core accumulation is allowed a
// looser bound (its internal accumulator precision is not specified as full f32).
int compare(const std::vector<float>& got, const std::vector<double>& ref, int n_cols, double rel) {
  int bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double tol = rel * (1.0 + std::fabs(ref[i]));
    if (!(std::fabs(double(got[i]) - ref[i]) <= tol)) {
      if (bad == 0) MESSAGE("first mismatch at row " << i / n_cols << " col " << i % n_cols << ": got " << got[i]
                                                      << ", expected " << ref[i]);
      ++bad;
    }
  }
  return bad;
}

void check_umma_1cta(UmmaVariant v, bool fp8) {
  const uint32_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  std::vector<uint8_t> a, b;
  std::vector<double> av, bv;
  if (fp8) {
    random_e4m3_rows(rng, kUmmaM, a, av);
    random_e4m3_rows(rng, kUmmaN, b, bv);
  } else {
    random_bf16_rows(rng, kUmmaM, a, av);
    random_bf16_rows(rng, kUmmaN, b, bv);
  }
  const int k = fp8 ? kUmmaRowBytes : kUmmaRowBytes / 2;
  std::vector<float> d(size_t(kUmmaM) * kUmmaN);
  REQUIRE(sm100_launch_umma(v, a.data(), b.data(), d.data()) == cudaSuccess);
  CHECK(compare(d, cpu_gemm_nt(av, bv, kUmmaM, kUmmaN, k), kUmmaN, fp8 ? 1e-3 : 1e-5) == 0);
}

void check_umma_2cta(bool ts) {
  const uint32_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  std::vector<uint8_t> a, b;
  std::vector<double> av, bv;
  random_bf16_rows(rng, kUmma2M, a, av);
  random_bf16_rows(rng, kUmmaN, b, bv);
  std::vector<float> d(size_t(kUmma2M) * kUmmaN);
  REQUIRE(sm100_launch_umma_2cta(ts, a.data(), b.data(), d.data()) == cudaSuccess);
  CHECK(compare(d, cpu_gemm_nt(av, bv, kUmma2M, kUmmaN, kUmmaRowBytes / 2), kUmmaN, 1e-5) == 0);
}

}  // namespace

TEST_SUITE("gpu_sm100 primitives") {

TEST_CASE("TMEM alloc -> tcgen05.st -> tcgen05.ld -> dealloc round trip, 32x32b .x1 .. .x128") {
  const uint32_t seed = fresh_seed();
  INFO("seed " << seed);
  std::vector<uint32_t> direct(128 * kTmemRoundtripCols), x128(128 * kTmemRoundtripCols);
  REQUIRE(sm100_launch_tmem_roundtrip(seed, direct.data(), x128.data()) == cudaSuccess);
  int bad_direct = 0, bad_x128 = 0;
  for (uint32_t lane = 0; lane < 128; ++lane)
    for (uint32_t col = 0; col + 1 < kTmemRoundtripCols; ++col) {  // column 255 is never written
      const uint32_t want = tmem_pattern(lane, col, seed);
      bad_direct += direct[lane * kTmemRoundtripCols + col] != want;
      bad_x128 += x128[lane * kTmemRoundtripCols + col] != want;
    }
  CHECK(bad_direct == 0);  // each shape reads back what the same shape wrote
  CHECK(bad_x128 == 0);    // .x128 reads what the narrower shapes wrote: the column mapping agrees
}

TEST_CASE("tcgen05.mma kind::f16 (bf16 -> f32), SS, cta_group::1, commit to mbarrier") {
  check_umma_1cta(UmmaVariant::kF16SS, false);
}
TEST_CASE("tcgen05.mma kind::f16 (bf16 -> f32), TS (A in TMEM), cta_group::1") {
  check_umma_1cta(UmmaVariant::kF16TS, false);
}
TEST_CASE("tcgen05.mma kind::f8f6f4 (e4m3 -> f32), SS, cta_group::1") {
  check_umma_1cta(UmmaVariant::kF8SS, true);
}
TEST_CASE("tcgen05.mma kind::f8f6f4 (e4m3 -> f32), TS (A in TMEM), cta_group::1") {
  check_umma_1cta(UmmaVariant::kF8TS, true);
}
TEST_CASE("tcgen05.mma kind::f16 cta_group::2, SS, 2-CTA cluster, multicast commit") {
  check_umma_2cta(false);
}
TEST_CASE("tcgen05.mma kind::f16 cta_group::2, TS, 2-CTA cluster, multicast commit") {
  check_umma_2cta(true);
}

TEST_CASE("clusterlaunchcontrol.try_cancel work stealing visits every block exactly once") {
  const int grid = on_simulator() ? 1024 : 8192;  // the simulator: 4 SMs, so still mostly stolen
  fresh_seed();  // (says where it runs)
  std::vector<uint32_t> visits(grid, 0);
  uint32_t started = 0;
  REQUIRE(sm100_launch_clc(grid, visits.data(), &started) == cudaSuccess);
  int wrong = 0;
  for (int i = 0; i < grid; ++i) wrong += visits[i] != 1u;
  CHECK(wrong == 0);
  CHECK(started >= 1u);
  CHECK(started <= static_cast<uint32_t>(grid));
  // How many launches were stolen depends on the machine's load; informative only.
  MESSAGE("CTAs started: " << started << " of " << grid << " (" << grid - int(started) << " stolen)");
}

}  // TEST_SUITE
