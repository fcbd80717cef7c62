// The CPU fp64 reference (tools/support/reference.h) and the dtype conversions
// (tools/support/dtype.h), against direct formulas. These prove the reference computes what
// FlashAttention defines; they say nothing about any kernel.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "tools/support/dtype.h"
#include "tools/support/reference.h"

using namespace flashptx;
using namespace flashptx::ref;

namespace {

std::vector<double> randn(size_t n, uint32_t seed, double sigma = 1.0) {
  std::mt19937 g(seed);
  std::normal_distribution<double> N(0.0, sigma);
  std::vector<double> x(n);
  for (auto& e : x) e = N(g);
  return x;
}

size_t q_elems(const Problem& p) { return p.batch * p.seqlen_q * p.heads_q * p.head_dim; }
size_t kv_elems(const Problem& p) { return p.batch * p.seqlen_k * p.heads_kv * p.head_dim; }

struct Inputs {
  std::vector<double> q, k, v;
  TensorView Q(const Problem& p) const { return contiguous_q(q.data(), Elem::kF64, p); }
  TensorView K(const Problem& p) const { return contiguous_kv(k.data(), Elem::kF64, p); }
  TensorView V(const Problem& p) const { return contiguous_kv(v.data(), Elem::kF64, p); }
};

Inputs random_inputs(const Problem& p, uint32_t seed) {
  return {randn(q_elems(p), seed), randn(kv_elems(p), seed + 1), randn(kv_elems(p), seed + 2)};
}

}  // namespace

TEST_SUITE("host reference") {

TEST_CASE("bf16 conversions round to nearest even") {
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  CHECK(bf16_to_float(0x3f80) == 1.0f);
  CHECK(float_to_bf16(-2.0f) == 0xc000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even (1.0).
  CHECK(float_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
  // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even): goes up.
  CHECK(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
  // just above the tie goes up
  CHECK(float_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) == 0x3f81);
  CHECK(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isinf(bf16_to_float(float_to_bf16(3.4e38f))));  // rounds past the largest bf16
  // double rounding: a double just above a bf16 tie must round up even though float(d) is the tie
  const double d = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  CHECK(double_to_bf16(d) == 0x3f81);
}

TEST_CASE("fp16 conversions round to nearest even, with subnormals and overflow") {
  CHECK(float_to_fp16(1.0f) == 0x3c00);
  CHECK(fp16_to_float(0x3c00) == 1.0f);
  CHECK(float_to_fp16(-2.5f) == 0xc100);
  CHECK(float_to_fp16(65504.0f) == 0x7bff);
  CHECK(float_to_fp16(65519.0f) == 0x7bff);
  CHECK(float_to_fp16(65520.0f) == 0x7c00);  // the tie above the max goes to inf
  CHECK(float_to_fp16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);       // tie -> even
  CHECK(float_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);   // tie -> even (up)
  CHECK(float_to_fp16(std::ldexp(1.0f, -24)) == 0x0001);              // smallest subnormal
  CHECK(float_to_fp16(std::ldexp(1.0f, -25)) == 0x0000);              // tie -> 0
  CHECK(float_to_fp16(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(float_to_fp16(std::ldexp(3.0f, -25)) == 0x0002);              // 1.5 units: tie -> 2 (even)
  CHECK(float_to_fp16(std::ldexp(1.0f, -14)) == 0x0400);              // smallest normal
  CHECK(fp16_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(fp16_to_float(0x03ff) == std::ldexp(1023.0f, -24));
  CHECK(std::isinf(fp16_to_float(0x7c00)));
  CHECK(std::isnan(fp16_to_float(float_to_fp16(std::numeric_limits<float>::quiet_NaN()))));
  // every finite fp16 survives a round trip
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if (((h >> 10) & 0x1f) == 0x1f) continue;
    REQUIRE(float_to_fp16(fp16_to_float(static_cast<uint16_t>(h))) == h);
  }
}

TEST_CASE("1x1: O = v and LSE = scale * q.k") {
  Problem p;
  p.head_dim = 4;
  const std::vector<double> q = {1, 2, 3, 4}, k = {0.5, -1, 2, 0}, v = {7, -3, 0.25, 9};
  const Forward f = forward(p, contiguous_q(q.data(), Elem::kF64, p),
                            contiguous_kv(k.data(), Elem::kF64, p), contiguous_kv(v.data(), Elem::kF64, p));
  for (int d = 0; d < 4; ++d) CHECK(f.o[d] == doctest::Approx(v[d]).epsilon(1e-15));
  CHECK(f.lse[0] == doctest::Approx((0.5 - 2 + 6) * 0.5).epsilon(1e-15));  // scale 1/sqrt(4)
}

TEST_CASE("hand-computable two keys") {
  // scale 1, q = 1, keys 0 and ln 3: P = (1/4, 3/4); v = (1, 5): O = 4; LSE = ln 4.
  Problem p;
  p.seqlen_k = 2;
  p.softmax_scale = 1.0;
  const std::vector<double> q = {1}, k = {0, std::log(3.0)}, v = {1, 5};
  const Forward f = forward(p, contiguous_q(q.data(), Elem::kF64, p),
                            contiguous_kv(k.data(), Elem::kF64, p), contiguous_kv(v.data(), Elem::kF64, p));
  CHECK(f.o[0] == doctest::Approx(4.0).epsilon(1e-14));
  CHECK(f.lse[0] == doctest::Approx(std::log(4.0)).epsilon(1e-14));
  // float inputs give the same answer through the float path
  const std::vector<float> qf = {1}, kf = {0, static_cast<float>(std::log(3.0))}, vf = {1, 5};
  const Forward g = forward(p, contiguous_q(qf.data(), Elem::kF32, p),
                            contiguous_kv(kf.data(), Elem::kF32, p), contiguous_kv(vf.data(), Elem::kF32, p));
  CHECK(g.o[0] == doctest::Approx(4.0).epsilon(1e-6));
}

TEST_CASE("causal mask is aligned to the bottom-right") {
  // V is one-hot on the key index (head_dim = seqlen_k), so O[i][j] > 0 exactly when i sees j.
  for (auto [sq, sk] : {std::pair<int64_t, int64_t>{3, 5}, {5, 3}, {4, 4}, {1, 7}, {7, 1}}) {
    Problem p;
    p.seqlen_q = sq;
    p.seqlen_k = sk;
    p.head_dim = sk;
    p.causal = true;
    std::vector<double> q(q_elems(p), 0.0), k(kv_elems(p), 0.0), v(kv_elems(p), 0.0);
    for (int64_t j = 0; j < sk; ++j) v[j * sk + j] = 1.0;
    const Forward f = forward(p, contiguous_q(q.data(), Elem::kF64, p),
                              contiguous_kv(k.data(), Elem::kF64, p), contiguous_kv(v.data(), Elem::kF64, p));
    int64_t pairs = 0;
    for (int64_t i = 0; i < sq; ++i) {
      const int64_t visible = std::max<int64_t>(0, std::min(sk, i + sk - sq + 1));
      pairs += visible;
      for (int64_t j = 0; j < sk; ++j) {
        const bool sees = j <= i + sk - sq;
        CHECK_MESSAGE((f.o[i * sk + j] > 0) == sees, "sq=" << sq << " sk=" << sk << " i=" << i << " j=" << j);
        if (sees) CHECK(f.o[i * sk + j] == doctest::Approx(1.0 / visible));
      }
      if (visible == 0) {
        CHECK(std::isinf(f.lse[i]));
        CHECK(f.lse[i] < 0);
      } else {
        CHECK(f.lse[i] == doctest::Approx(std::log(static_cast<double>(visible))));  // all scores 0
      }
    }
    CHECK(p.valid_pairs() == pairs);
  }
  Problem p;
  p.seqlen_q = 5;
  p.seqlen_k = 3;
  p.causal = true;
  CHECK(p.last_key(0) == -2);
  CHECK(p.last_key(2) == 0);
  CHECK(p.last_key(4) == 2);
  CHECK(p.valid_pairs() == 6);
}

TEST_CASE("LSE is the log-sum-exp of the scaled scores and O the softmax-weighted V") {
  const Problem p = problem(2, 5, 7, 2, 2, 8, false, 0.3);
  const Inputs in = random_inputs(p, 11);
  const Forward f = forward(p, in.Q(p), in.K(p), in.V(p));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads_q; ++h)
      for (int64_t i = 0; i < p.seqlen_q; ++i) {
        std::vector<double> e(p.seqlen_k);
        double sum = 0;
        for (int64_t j = 0; j < p.seqlen_k; ++j) {
          double s = 0;
          for (int64_t d = 0; d < p.head_dim; ++d) s += in.Q(p).at(b, i, h, d) * in.K(p).at(b, j, h, d);
          e[j] = std::exp(0.3 * s);
          sum += e[j];
        }
        CHECK(f.lse_at(p, b, h, i) == doctest::Approx(std::log(sum)).epsilon(1e-13));
        for (int64_t d = 0; d < p.head_dim; ++d) {
          double o = 0;
          for (int64_t j = 0; j < p.seqlen_k; ++j) o += e[j] / sum * in.V(p).at(b, j, h, d);
          CHECK(f.o_at(p, b, i, h, d) == doctest::Approx(o).epsilon(1e-12));
        }
      }
}

TEST_CASE("GQA equals MHA with the kv heads repeated") {
  const Problem p = problem(2, 6, 9, 8, 2, 4, true);
  const Inputs in = random_inputs(p, 21);
  Problem r = p;
  r.heads_kv = 8;
  std::vector<double> k2(kv_elems(r)), v2(kv_elems(r));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t j = 0; j < p.seqlen_k; ++j)
      for (int64_t h = 0; h < 8; ++h)
        for (int64_t d = 0; d < 4; ++d) {
          const size_t dst = ((b * p.seqlen_k + j) * 8 + h) * 4 + d;
          k2[dst] = in.K(p).at(b, j, h / 4, d);
          v2[dst] = in.V(p).at(b, j, h / 4, d);
        }
  const Forward a = forward(p, in.Q(p), in.K(p), in.V(p));
  const Forward c = forward(r, in.Q(r), contiguous_kv(k2.data(), Elem::kF64, r), contiguous_kv(v2.data(), Elem::kF64, r));
  CHECK(max_abs_diff_o(p, contiguous_q(a.o.data(), Elem::kF64, p), c.o) == 0.0);
  for (size_t i = 0; i < a.lse.size(); ++i) CHECK(a.lse[i] == c.lse[i]);
}

TEST_CASE("strided views equal contiguous ones") {
  // Q stored as [batch, heads, seqlen, d] (a transposed layout) through strides.
  const Problem p = problem(2, 4, 5, 3, 3, 6);
  const Inputs in = random_inputs(p, 31);
  std::vector<double> qt(q_elems(p));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t d = 0; d < 6; ++d) qt[((b * 3 + h) * 4 + i) * 6 + d] = in.Q(p).at(b, i, h, d);
  TensorView qv;
  qv.data = qt.data();
  qv.type = Elem::kF64;
  qv.batch_stride = 3 * 4 * 6;
  qv.head_stride = 4 * 6;
  qv.row_stride = 6;
  const Forward a = forward(p, in.Q(p), in.K(p), in.V(p));
  const Forward c = forward(p, qv, in.K(p), in.V(p));
  CHECK(a.o == c.o);
  CHECK(a.lse == c.lse);
}

TEST_CASE("large-magnitude scores neither overflow nor lose the maximum") {
  Problem p;
  p.seqlen_k = 3;
  p.head_dim = 2;
  p.softmax_scale = 1.0;
  // scores 1e4, 2e4 and 2e4 - 1: exp would overflow without the max subtraction.
  const std::vector<double> q = {100, 100}, k = {50, 50, 100, 100, 99.995, 100}, v = {1, 1, 2, 3, 4, 5};
  const Forward f = forward(p, contiguous_q(q.data(), Elem::kF64, p),
                            contiguous_kv(k.data(), Elem::kF64, p), contiguous_kv(v.data(), Elem::kF64, p));
  const double w = std::exp(-0.5);  // the third score is 0.5 below the max
  CHECK(f.o[0] == doctest::Approx((2 + 4 * w) / (1 + w)));
  CHECK(f.o[1] == doctest::Approx((3 + 5 * w) / (1 + w)));
  CHECK(f.lse[0] == doctest::Approx(20000 + std::log1p(w)).epsilon(1e-15));
}

TEST_CASE("backward matches central finite differences of sum(O * dO)") {
  for (int variant = 0; variant < 3; ++variant) {
    // variant 2: seqlen_q > seqlen_k, rows 0 and 1 fully masked
    const Problem p = problem(1, variant == 2 ? 5 : 3, variant == 2 ? 3 : 4, 2, 1, 3, variant >= 1, 0.7);
    Inputs in = random_inputs(p, 41 + variant);
    const std::vector<double> dout = randn(q_elems(p), 99 + variant);
    const TensorView dO = contiguous_q(dout.data(), Elem::kF64, p);
    const Backward g = backward(p, in.Q(p), in.K(p), in.V(p), dO);
    auto loss = [&]() {
      const Forward f = forward(p, in.Q(p), in.K(p), in.V(p));
      double l = 0;
      for (size_t i = 0; i < f.o.size(); ++i) l += f.o[i] * dout[i];
      return l;
    };
    const double h = 1e-5;
    auto check = [&](std::vector<double>& x, const std::vector<double>& grad, const char* name) {
      for (size_t i = 0; i < x.size(); ++i) {
        const double keep = x[i];
        x[i] = keep + h;
        const double lp = loss();
        x[i] = keep - h;
        const double lm = loss();
        x[i] = keep;
        const double fd = (lp - lm) / (2 * h);
        CHECK_MESSAGE(std::fabs(fd - grad[i]) <= 1e-7 + 1e-6 * std::fabs(fd),
                      name << "[" << i << "] fd=" << fd << " analytic=" << grad[i] << " variant=" << variant);
      }
    };
    check(in.q, g.dq, "dq");
    check(in.k, g.dk, "dk");
    check(in.v, g.dv, "dv");
  }
}

TEST_CASE("same-dtype reference: inputs, P and O rounded; error ordered bf16 > fp16 > 0") {
  const Problem p = problem(1, 16, 24, 2, 1, 16, true);
  const Inputs in = random_inputs(p, 51);
  const Forward r = forward(p, in.Q(p), in.K(p), in.V(p));
  const Forward b = forward(p, in.Q(p), in.K(p), in.V(p), Round::kBF16);
  const Forward h = forward(p, in.Q(p), in.K(p), in.V(p), Round::kFP16);
  const double eb = max_abs_diff_o(p, contiguous_q(b.o.data(), Elem::kF64, p), r.o);
  const double eh = max_abs_diff_o(p, contiguous_q(h.o.data(), Elem::kF64, p), r.o);
  CHECK(eb > 0);
  CHECK(eh > 0);
  CHECK(eb > eh);
  CHECK(eb < 0.05);
  for (double x : b.o) CHECK(round_to(Round::kBF16, x) == x);  // O is representable in bf16
  // bf16 storage read through the view equals the rounded doubles
  std::vector<uint16_t> qb(in.q.size()), kb(in.k.size()), vb(in.v.size());
  for (size_t i = 0; i < qb.size(); ++i) qb[i] = double_to_bf16(in.q[i]);
  for (size_t i = 0; i < kb.size(); ++i) kb[i] = double_to_bf16(in.k[i]), vb[i] = double_to_bf16(in.v[i]);
  const Forward b2 = forward(p, contiguous_q(qb.data(), Elem::kBF16, p), contiguous_kv(kb.data(), Elem::kBF16, p),
                             contiguous_kv(vb.data(), Elem::kBF16, p), Round::kBF16);
  CHECK(b2.o == b.o);
}

}  // TEST_SUITE
