// The attention ladder on the GPU (tests/kernels/ladder.h): every rung against the fp64 reference.
// Every rung's TFLOP/s is measured by `flashptx ladder --bench` (a benchmark, not a test).
//
// The rule (FlashAttention's, as tests/gpu/test_fa3_fwd.cpp): max|out - ref| <= 2 * max|same_dtype_ref
// - ref| + 1e-5 over the compared rows, ref the fp64 reference and same_dtype_ref the reference that
// rounds inputs, P and O to bf16 (tools/support/reference.h). Fresh random inputs per case, O poisoned
// with NaN before every run and a guard after it that must stay poisoned. The rungs' restriction:
// bf16, d128, non-causal, heads_q == heads_kv, seqlen_q % 64 == 0 (rung 4: % 128), seqlen_k % 128 == 0. The last row
// of the ladder, the library's FA3 forward, runs the same problems through flashptx_fwd.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "tests/gpu/test_util.h"
#include "tests/kernels/ladder.h"

namespace {

using namespace flashptx_test;
namespace ld = flashptx_test::ladder;

struct Shape {
  int batch, sq, sk, heads;
  std::string str() const {
    return "B=" + std::to_string(batch) + " Sq=" + std::to_string(sq) + " Sk=" + std::to_string(sk) +
           " H=" + std::to_string(heads) + " d=128 bf16";
  }
};

struct Tensors {
  Shape s;
  size_t nq, nk;  // elements of Q (= O) and of K (= V)
  std::vector<uint16_t> q, k, v;
  DeviceBuf dq, dk, dv, dout;
  Tensors(const Shape& sh, uint64_t seed)
      : s(sh), nq(static_cast<size_t>(sh.batch) * sh.sq * sh.heads * 128),
        nk(static_cast<size_t>(sh.batch) * sh.sk * sh.heads * 128), dq(nq * 2), dk(nk * 2), dv(nk * 2),
        dout((nq + kGuard) * 2) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    q.resize(nq);
    k.resize(nk);
    v.resize(nk);
    for (auto* x : {&q, &k, &v})
      for (auto& e : *x) e = to_storage(FLASHPTX_BF16, nd(rng));
    CUDA_REQUIRE(cudaMemcpy(dq.p, q.data(), nq * 2, cudaMemcpyHostToDevice));
    CUDA_REQUIRE(cudaMemcpy(dk.p, k.data(), nk * 2, cudaMemcpyHostToDevice));
    CUDA_REQUIRE(cudaMemcpy(dv.p, v.data(), nk * 2, cudaMemcpyHostToDevice));
  }
  ld::Problem problem() const {
    ld::Problem p;
    p.q = dq.p; p.k = dk.p; p.v = dv.p; p.o = dout.p;
    p.batch = s.batch; p.seqlen_q = s.sq; p.seqlen_k = s.sk; p.heads = s.heads;
    return p;
  }
  flashptx_fwd_params fwd_params() const {
    flashptx_fwd_params p;
    flashptx_fwd_params_contiguous(&p, dq.p, dk.p, dv.p, dout.p, nullptr, s.batch, s.sq, s.sk, s.heads, s.heads, 128,
                                   FLASHPTX_BF16, 0);
    return p;
  }
  void poison() { CUDA_REQUIRE(cudaMemset(dout.p, 0xFF, dout.bytes)); }  // 0xFFFF: NaN
  std::vector<uint16_t> out() const {
    std::vector<uint16_t> o(dout.bytes / 2);
    CUDA_REQUIRE(cudaMemcpy(o.data(), dout.p, dout.bytes, cudaMemcpyDeviceToHost));
    return o;
  }
};

// Runs rung `rung` (ld::kRungs + 1: the library's FA3 forward) on t and checks it.
void check_rung(int rung, Tensors& t, uint64_t seed) {
  const std::string what = (rung <= ld::kRungs ? "rung " + std::to_string(rung) : std::string("fa3")) + " " + t.s.str();
  INFO(what);
  t.poison();
  if (rung <= ld::kRungs) {
    CUDA_REQUIRE(ld::launch(rung, t.problem()));
  } else {
    const flashptx_fwd_params p = t.fwd_params();
    REQUIRE_MESSAGE(flashptx_fwd(&p, nullptr) == FLASHPTX_OK, flashptx_last_error());
  }
  CUDA_REQUIRE(cudaDeviceSynchronize());
  const std::vector<uint16_t> o = t.out();
  int64_t non_finite = 0, clobbered = 0;
  for (size_t i = 0; i < t.nq; ++i)
    if (!std::isfinite(from_storage(FLASHPTX_BF16, o[i]))) ++non_finite;
  for (size_t i = t.nq; i < o.size(); ++i)
    if (o[i] != kPoison) ++clobbered;
  CHECK_MESSAGE(non_finite == 0, what << ": " << non_finite << " output elements not written or not finite");
  CHECK_MESSAGE(clobbered == 0, what << ": " << clobbered << " guard elements after O were written");

  const Shape& s = t.s;
  const auto rp = ref_problem(s.batch, s.sq, s.sk, s.heads, s.heads, 128, false, 0.f);
  const Strides sq = make_strides(Layout::kContiguous, s.batch, s.sq, s.heads, 128);
  const Strides sk = make_strides(Layout::kContiguous, s.batch, s.sk, s.heads, 128);
  const auto qv = ref_view(t.q, FLASHPTX_BF16, sq), kv = ref_view(t.k, FLASHPTX_BF16, sk),
             vv = ref_view(t.v, FLASHPTX_BF16, sk);
  // Rows: all of them for small problems; else every row of the first and last 64-row block of two
  // heads and 64 random rows (every CTA's code path is the same; the sample covers both tile edges).
  std::vector<std::array<int, 3>> rows;
  if (static_cast<int64_t>(s.batch) * s.sq * s.heads <= 2048) {
    for (int b = 0; b < s.batch; ++b)
      for (int i = 0; i < s.sq; ++i)
        for (int h = 0; h < s.heads; ++h) rows.push_back({b, i, h});
  } else {
    for (int i = 0; i < 64; ++i) {
      rows.push_back({0, i, 0});
      rows.push_back({s.batch - 1, s.sq - 64 + i, s.heads - 1});
    }
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 64; ++i)
      rows.push_back({static_cast<int>(rng() % s.batch), static_cast<int>(rng() % s.sq), static_cast<int>(rng() % s.heads)});
  }
  std::vector<double> ref(128), refs(128);
  double err = 0, err_same = 0;
  for (const auto& r : rows) {
    flashptx::ref::forward_row(rp, qv, kv, vv, r[0], r[1], r[2], ref.data());
    flashptx::ref::forward_row(rp, qv, kv, vv, r[0], r[1], r[2], refs.data(), flashptx::Round::kBF16);
    for (int x = 0; x < 128; ++x) {
      const double out = from_storage(FLASHPTX_BF16, o[static_cast<size_t>(r[0] * sq.b + r[1] * sq.s + r[2] * sq.h + x)]);
      err = std::max(err, std::fabs(out - ref[x]));
      err_same = std::max(err_same, std::fabs(refs[x] - ref[x]));
    }
  }
  const double tol = 2 * err_same + 1e-5;
  CHECK_MESSAGE(err <= tol, what << ": max|O - ref| = " << err << " > " << tol << " (same-dtype " << err_same << ", "
                                 << rows.size() << " rows)");
}

}  // namespace

TEST_SUITE("gpu_sm90 ladder") {

TEST_CASE("every rung and the library's FA3 forward against the fp64 reference") {
  // One key block; five key blocks (the 2-stage rings wrap twice); several heads and batches; a
  // longer sequence with sampled rows. 64 and 192 query rows are not rung 4's (128 rows per CTA).
  const Shape shapes[] = {{1, 64, 128, 1}, {1, 128, 128, 1}, {2, 192, 640, 3}, {2, 256, 640, 3},
                          {1, 128, 1024, 2}, {2, 1024, 2048, 4}};
  // On the simulator: one key block (64 rows: not rung 4's), and five key blocks (the rings wrap
  // twice) over two heads and two batches.
  const Shape sim_shapes[] = {{1, 64, 128, 1}, {2, 128, 640, 2}};
  uint64_t seed = 0x1add;
  for (const Shape& s : on_simulator() ? std::vector<Shape>(std::begin(sim_shapes), std::end(sim_shapes))
                                       : std::vector<Shape>(std::begin(shapes), std::end(shapes))) {
    Tensors t(s, ++seed);
    for (int rung = 1; rung <= ld::kRungs + 1; ++rung)
      if (rung > ld::kRungs || ld::supported(t.problem(), rung)) check_rung(rung, t, seed * 31 + rung);
  }
}

TEST_CASE("the rungs refuse what they do not take: partial tiles, a bad rung") {
  Tensors t({1, 64, 128, 1}, 7);
  ld::Problem p = t.problem();
  p.seqlen_q = 96;
  CHECK(ld::launch(1, p) == cudaErrorInvalidValue);
  p = t.problem();
  p.seqlen_k = 200;
  CHECK(ld::launch(3, p) == cudaErrorInvalidValue);
  CHECK(ld::launch(4, t.problem()) == cudaErrorInvalidValue);  // 64 query rows: not rung 4's
  CHECK(ld::launch(0, t.problem()) == cudaErrorInvalidValue);
  CHECK(ld::launch(ld::kRungs + 1, t.problem()) == cudaErrorInvalidValue);
}

}  // TEST_SUITE
