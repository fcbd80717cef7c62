// flashptx_quantize_fp8 on the host: the validation statuses, the e4m3 encoder against every code,
// the Hadamard transform's properties, and the quantization reference's own invariants. The kernel
// against the reference: tests/gpu/test_fp8_quantize.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "tools/support/dtype.h"
#include "tools/support/fp8_quant_ref.h"

using flashptx::ref::e4m3_decode;
using flashptx::ref::e4m3_encode;
using flashptx::bf16_to_float;
using flashptx::float_to_bf16;

TEST_SUITE("fp8 quantize") {

TEST_CASE("e4m3: every code decodes and encodes back to itself; 448 is the largest") {
  int finite = 0;
  double largest = 0;
  for (int c = 0; c < 256; ++c) {
    const double v = e4m3_decode(static_cast<uint8_t>(c));
    if ((c & 0x7F) == 0x7F) {
      CHECK(std::isnan(v));
      continue;
    }
    ++finite;
    largest = std::max(largest, v);
    CHECK_MESSAGE(e4m3_encode(v) == c, "code " << c << " value " << v);
  }
  CHECK(finite == 254);
  CHECK(largest == 448.0);
  CHECK(e4m3_decode(0x01) == std::ldexp(1.0, -9));   // smallest subnormal
  CHECK(e4m3_decode(0x08) == std::ldexp(1.0, -6));   // smallest normal
  CHECK(e4m3_decode(0x7E) == 448.0);
  CHECK(e4m3_encode(std::numeric_limits<double>::quiet_NaN()) == 0x7F);
}

TEST_CASE("e4m3: nearest, ties to even, saturation, checked against all codes by brute force") {
  // Every finite code's value, sorted by value (positive codes; the negative side mirrors them).
  std::vector<std::pair<double, int>> pos;
  for (int c = 0; c < 0x7F; ++c) pos.push_back({e4m3_decode(static_cast<uint8_t>(c)), c});
  auto brute = [&](double a) {  // a >= 0: the nearest code, ties to the even code, saturating
    if (a >= 448.0) return 0x7E;
    int best = 0;
    double bd = std::fabs(a - pos[0].first);
    for (const auto& [v, c] : pos) {
      const double dd = std::fabs(a - v);
      if (dd < bd || (dd == bd && (c & 1) == 0)) { bd = dd; best = c; }
    }
    return best;
  };
  std::vector<double> probes;
  for (size_t i = 0; i + 1 < pos.size(); ++i) {
    const double lo = pos[i].first, hi = pos[i + 1].first, mid = 0.5 * (lo + hi);
    for (double t : {lo, mid, std::nextafter(mid, lo), std::nextafter(mid, hi), 0.25 * lo + 0.75 * hi, hi}) probes.push_back(t);
  }
  for (double t : {448.0, 449.0, 463.99, 464.0, 1e6, std::numeric_limits<double>::infinity(), 1e-30, 0.0}) probes.push_back(t);
  for (double a : probes) {
    const int want = brute(a);
    CHECK_MESSAGE(e4m3_encode(a) == want, "a = " << a);
    if (a > 0) CHECK_MESSAGE(e4m3_encode(-a) == (want | 0x80), "a = -" << a);
  }
  CHECK(e4m3_encode(-0.0) == 0x80);
  CHECK(e4m3_encode(-std::numeric_limits<double>::infinity()) == 0xFE);
}

TEST_CASE("Hadamard: orthonormal (H H^T = I), Q K^T preserved, fp32 order close to fp64") {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> N(0.0, 1.0);
  for (int n : {64, 128, 256}) {
    CAPTURE(n);
    // The columns of H: the transform of the unit vectors.
    std::vector<double> H(static_cast<size_t>(n) * n);
    for (int j = 0; j < n; ++j) {
      std::vector<double> e(n, 0.0);
      e[j] = 1.0;
      flashptx::ref::hadamard_fp64(e.data(), n);
      for (int i = 0; i < n; ++i) H[static_cast<size_t>(i) * n + j] = e[i];
    }
    double worst = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int k = 0; k < n; ++k) s += H[static_cast<size_t>(i) * n + k] * H[static_cast<size_t>(j) * n + k];
        worst = std::max(worst, std::fabs(s - (i == j ? 1.0 : 0.0)));
      }
    CHECK(worst < 1e-13);
    // Q K^T over rows of head_dim 256 rotated in blocks of n: the dot products are preserved.
    const int d = 256;
    for (int t = 0; t < 20; ++t) {
      std::vector<double> q(d), k(d);
      for (int i = 0; i < d; ++i) { q[i] = N(rng) * (i % 37 == 0 ? 50 : 1); k[i] = N(rng); }
      double dot0 = 0, norm = 0;
      for (int i = 0; i < d; ++i) { dot0 += q[i] * k[i]; norm += std::fabs(q[i] * k[i]); }
      for (int c = 0; c < d; c += n) { flashptx::ref::hadamard_fp64(q.data() + c, n); flashptx::ref::hadamard_fp64(k.data() + c, n); }
      double dot1 = 0;
      for (int i = 0; i < d; ++i) dot1 += q[i] * k[i];
      CHECK(std::fabs(dot1 - dot0) <= 1e-13 * norm);
    }
    // The kernel's fp32 order against fp64: within a few fp32 ulps of the row's scale.
    std::vector<float> xf(n);
    std::vector<double> xd(n);
    for (int i = 0; i < n; ++i) { xf[i] = static_cast<float>(N(rng)); xd[i] = xf[i]; }
    flashptx::ref::hadamard_fp32(xf.data(), n);
    flashptx::ref::hadamard_fp64(xd.data(), n);
    double err = 0, scale = 0;
    for (int i = 0; i < n; ++i) { err = std::max(err, std::fabs(xf[i] - xd[i])); scale = std::max(scale, std::fabs(xd[i])); }
    CHECK(err <= 1e-5 * scale * std::log2(n));
  }
}

namespace {
struct HostProblem {
  int64_t B, S, H, D;
  std::vector<uint16_t> in;
  std::vector<uint8_t> out;
  std::vector<float> descale;
};
HostProblem make_problem(int64_t B, int64_t S, int64_t H, int64_t D, uint64_t seed) {
  HostProblem p{B, S, H, D, {}, {}, {}};
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> N(0.f, 1.f);
  p.in.resize(static_cast<size_t>(B * S * H * D));
  for (size_t i = 0; i < p.in.size(); ++i) {
    const int64_t ch = static_cast<int64_t>(i) % D;
    p.in[i] = float_to_bf16(N(rng) * (ch == 3 || ch == D - 7 ? 40.f : 1.f));  // outlier channels
  }
  p.out.assign(p.in.size(), 0xAB);
  return p;
}
flashptx::ref::QuantizeFp8Host host_args(HostProblem& p, flashptx_fp8_scale_granularity g, int hb) {
  const int64_t nblk = (p.S + 127) / 128;
  p.descale.assign(g == FLASHPTX_FP8_SCALE_PER_TENSOR ? 1 : g == FLASHPTX_FP8_SCALE_PER_HEAD ? p.B * p.H : p.B * p.H * nblk,
                   -1.f);
  return {p.in.data(), p.out.data(), p.descale.data(), p.B, p.S, p.H, p.D, p.S * p.H * p.D, p.H * p.D, p.D,
          p.S * p.H * p.D, p.H * p.D, p.D, true, g, hb};
}
}  // namespace

TEST_CASE("reference: descale = amax / 448 per group, codes within half an e4m3 step, 448 reached") {
  for (auto g : {FLASHPTX_FP8_SCALE_PER_TENSOR, FLASHPTX_FP8_SCALE_PER_HEAD, FLASHPTX_FP8_SCALE_PER_BLOCK})
    for (int hb : {0, 128}) {
      CAPTURE(static_cast<int>(g));
      CAPTURE(hb);
      HostProblem p = make_problem(2, 300, 3, 128, 5);
      flashptx::ref::quantize_fp8(host_args(p, g, hb));
      for (float s : p.descale) CHECK(s > 0.f);
      // Every group holds the code 448 (its amax element) and nothing NaN; dequantized values are
      // within half a step of the (rotated) input, relative 2^-4 for normals.
      const int64_t nblk = (p.S + 127) / 128;
      std::vector<int> has_max(p.descale.size(), 0);
      for (int64_t b = 0; b < p.B; ++b)
        for (int64_t s = 0; s < p.S; ++s)
          for (int64_t h = 0; h < p.H; ++h) {
            const int64_t gi = g == FLASHPTX_FP8_SCALE_PER_TENSOR ? 0
                               : g == FLASHPTX_FP8_SCALE_PER_HEAD ? b * p.H + h
                                                                  : (b * p.H + h) * nblk + s / 128;
            std::vector<float> r(p.D);
            const size_t base = static_cast<size_t>(((b * p.S + s) * p.H + h) * p.D);
            for (int64_t i = 0; i < p.D; ++i) r[i] = bf16_to_float(p.in[base + i]);
            if (hb) flashptx::ref::hadamard_fp32(r.data(), hb);
            for (int64_t i = 0; i < p.D; ++i) {
              const uint8_t c = p.out[base + i];
              REQUIRE((c & 0x7F) != 0x7F);
              if ((c & 0x7F) == 0x7E) has_max[gi] = 1;
              const double v = e4m3_decode(c) * p.descale[gi];
              const double x = r[i];
              CHECK(std::fabs(v - x) <= std::fabs(x) * 0.0625 + std::ldexp(1.0, -10) * p.descale[gi] * 1.0001);
            }
          }
      for (int m : has_max) CHECK(m == 1);
    }
}

TEST_CASE("reference: the rotation spreads an outlier channel (smaller per-tensor descale)") {
  HostProblem a = make_problem(1, 256, 2, 128, 9), b = make_problem(1, 256, 2, 128, 9);
  flashptx::ref::quantize_fp8(host_args(a, FLASHPTX_FP8_SCALE_PER_TENSOR, 0));
  flashptx::ref::quantize_fp8(host_args(b, FLASHPTX_FP8_SCALE_PER_TENSOR, 128));
  CHECK(b.descale[0] < 0.5f * a.descale[0]);
}

TEST_CASE("validation: every bad input is its own status, with a message") {
  alignas(16) static uint16_t in[64];
  alignas(16) static uint8_t out[64];
  alignas(16) static float ds[4];
  flashptx_quantize_fp8_params good;
  flashptx_quantize_fp8_params_contiguous(&good, in, out, ds, 2, 256, 4, 128, FLASHPTX_BF16, FLASHPTX_FP8_SCALE_PER_BLOCK);
  REQUIRE(flashptx_quantize_fp8_check(&good) == FLASHPTX_OK);
  CHECK(std::string(flashptx_last_error()).empty());
  CHECK(flashptx_quantize_fp8_check(nullptr) == FLASHPTX_ERR_NULL_PARAMS);
  struct Case { const char* name; flashptx_status want; void (*edit)(flashptx_quantize_fp8_params&); };
  const Case cases[] = {
      {"in NULL", FLASHPTX_ERR_NULL_POINTER, [](flashptx_quantize_fp8_params& p) { p.in = nullptr; }},
      {"out NULL", FLASHPTX_ERR_NULL_POINTER, [](flashptx_quantize_fp8_params& p) { p.out = nullptr; }},
      {"descale NULL", FLASHPTX_ERR_NULL_POINTER, [](flashptx_quantize_fp8_params& p) { p.descale = nullptr; }},
      {"in misaligned", FLASHPTX_ERR_MISALIGNED, [](flashptx_quantize_fp8_params& p) { p.in = static_cast<const char*>(p.in) + 2; }},
      {"out misaligned", FLASHPTX_ERR_MISALIGNED, [](flashptx_quantize_fp8_params& p) { p.out = static_cast<char*>(p.out) + 8; }},
      {"descale misaligned", FLASHPTX_ERR_MISALIGNED,
       [](flashptx_quantize_fp8_params& p) { p.descale = reinterpret_cast<float*>(reinterpret_cast<char*>(p.descale) + 2); }},
      {"in row stride not 8", FLASHPTX_ERR_MISALIGNED, [](flashptx_quantize_fp8_params& p) { p.in_row_stride += 4; }},
      {"out row stride not 16", FLASHPTX_ERR_MISALIGNED, [](flashptx_quantize_fp8_params& p) { p.out_row_stride += 8; }},
      {"head dim 96", FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, [](flashptx_quantize_fp8_params& p) { p.head_dim = 96; }},
      {"granularity 3", FLASHPTX_ERR_BAD_GRANULARITY,
       [](flashptx_quantize_fp8_params& p) { p.granularity = static_cast<flashptx_fp8_scale_granularity>(3); }},
      {"granularity -1", FLASHPTX_ERR_BAD_GRANULARITY,
       [](flashptx_quantize_fp8_params& p) { p.granularity = static_cast<flashptx_fp8_scale_granularity>(-1); }},
      {"hadamard 64 at d128", FLASHPTX_ERR_BAD_HADAMARD, [](flashptx_quantize_fp8_params& p) { p.hadamard_block = 64; }},
      {"hadamard 256 at d128", FLASHPTX_ERR_BAD_HADAMARD, [](flashptx_quantize_fp8_params& p) { p.hadamard_block = 256; }},
      {"hadamard 128 at d64", FLASHPTX_ERR_BAD_HADAMARD,
       [](flashptx_quantize_fp8_params& p) { p.head_dim = 64; p.hadamard_block = 128; }},
      {"in dtype fp32", FLASHPTX_ERR_UNSUPPORTED_DTYPE, [](flashptx_quantize_fp8_params& p) { p.in_dtype = FLASHPTX_FP32; }},
      {"out dtype bf16", FLASHPTX_ERR_UNSUPPORTED_DTYPE, [](flashptx_quantize_fp8_params& p) { p.out_dtype = FLASHPTX_BF16; }},
      {"negative stride", FLASHPTX_ERR_BAD_STRIDES, [](flashptx_quantize_fp8_params& p) { p.in_head_stride = -128; }},
      {"zero row stride", FLASHPTX_ERR_BAD_STRIDES, [](flashptx_quantize_fp8_params& p) { p.in_row_stride = 0; }},
      {"out rows overlap", FLASHPTX_ERR_BAD_STRIDES, [](flashptx_quantize_fp8_params& p) { p.out_head_stride = 64; }},
      {"negative size", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_quantize_fp8_params& p) { p.seqlen = -1; }},
      {"heads 65536", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_quantize_fp8_params& p) { p.heads = 65536; }},
  };
  for (const Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    flashptx_quantize_fp8_params p = good;
    c.edit(p);
    CHECK(flashptx_quantize_fp8_check(&p) == c.want);
    CHECK(std::string(flashptx_last_error()).rfind(flashptx_status_name(c.want), 0) == 0);
    // The launching entry refuses the same input with the same status before any device work.
    CHECK(flashptx_quantize_fp8(&p, nullptr) == c.want);
  }
  // Accepted variants: fp16, hadamard = head_dim, 128 at d256, empty problems with NULL pointers.
  flashptx_quantize_fp8_params p = good;
  p.in_dtype = FLASHPTX_FP16; p.hadamard_block = 128;
  CHECK(flashptx_quantize_fp8_check(&p) == FLASHPTX_OK);
  p = good; p.head_dim = 256; p.hadamard_block = 128;
  p.in_head_stride = p.out_head_stride = 256; p.in_row_stride = p.out_row_stride = 1024;
  p.in_batch_stride = p.out_batch_stride = 256 * 1024;
  CHECK(flashptx_quantize_fp8_check(&p) == FLASHPTX_OK);
  p.hadamard_block = 256;
  CHECK(flashptx_quantize_fp8_check(&p) == FLASHPTX_OK);
  p = good; p.seqlen = 0; p.in = nullptr; p.out = nullptr; p.descale = nullptr;
  CHECK(flashptx_quantize_fp8_check(&p) == FLASHPTX_OK);
  CHECK(flashptx_quantize_fp8(&p, nullptr) == FLASHPTX_OK);  // nothing to do: no device needed
  CHECK(std::string(flashptx_status_name(FLASHPTX_ERR_BAD_GRANULARITY)) == "FLASHPTX_ERR_BAD_GRANULARITY");
  CHECK(std::string(flashptx_status_name(FLASHPTX_ERR_BAD_HADAMARD)) == "FLASHPTX_ERR_BAD_HADAMARD");
}

TEST_CASE("descale count per granularity") {
  flashptx_quantize_fp8_params p;
  flashptx_quantize_fp8_params_contiguous(&p, nullptr, nullptr, nullptr, 3, 300, 5, 64, FLASHPTX_BF16,
                                          FLASHPTX_FP8_SCALE_PER_TENSOR);
  int64_t n = -1;
  CHECK(flashptx_quantize_fp8_descale_count(&p, &n) == FLASHPTX_OK);
  CHECK(n == 1);
  p.granularity = FLASHPTX_FP8_SCALE_PER_HEAD;
  CHECK(flashptx_quantize_fp8_descale_count(&p, &n) == FLASHPTX_OK);
  CHECK(n == 15);
  p.granularity = FLASHPTX_FP8_SCALE_PER_BLOCK;
  CHECK(flashptx_quantize_fp8_descale_count(&p, &n) == FLASHPTX_OK);
  CHECK(n == 15 * 3);
  p.granularity = static_cast<flashptx_fp8_scale_granularity>(7);
  CHECK(flashptx_quantize_fp8_descale_count(&p, &n) == FLASHPTX_ERR_BAD_GRANULARITY);
  CHECK(flashptx_quantize_fp8_descale_count(&p, nullptr) == FLASHPTX_ERR_NULL_POINTER);
}

}  // TEST_SUITE
