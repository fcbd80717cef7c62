// FA3 attention sinks on the GPU (include/flashptx.h, flashptx_fwd_params::sinks and
// flashptx_bwd_params::sinks/dsinks): the sink kernels' forward and the backward with the sinks'
// gradient, against the CPU fp64 reference (tools/support/reference.h, Problem::sinks).
//
// The rules are the suites' own (tests/gpu/test_fa3_fwd.cpp, test_fa3_bwd.cpp): FlashAttention's
// max|out - ref| <= 2 * max|same_dtype_ref - ref| + 1e-5 for O, dQ, dK, dV; LSE as in the forward
// suite (+ 2^-20 |lse|, + the softcap's tanh.approx envelope where there is a softcap); dQ and dK
// with the reference's fp32 envelope of dS. The sinks' gradient (fp32, one per head) is held to
// 2 * max|dsinks_same - dsinks_ref| + 1e-5 + its fp32 envelope (ref::Backward::dsinks_env: the
// kernel's delta and its reduction are fp32 sums) + six standard deviations of the spread that O's
// 16-bit storage causes (ref::Backward::dsinks_o_sd), per head; and, within fp32 sums, to the same
// sum taken on the host from the kernel's own O and LSE. Every row of every case is compared.
//
// Inputs are fresh random values, the sinks random per head (some cases shift them up, so that the
// sink dominates the denominator, or down, or set one head's to -inf: no sink); O, LSE, the
// gradients and dsinks are poisoned with NaN before every run, with guards after them.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "tests/gpu/test_util.h"
#include "tools/support/reference.h"

namespace {

using namespace flashptx_test;

struct SCase {
  int64_t batch, sq, sk, hq, hkv, d;
  bool causal;
  flashptx_dtype dtype;
  float sink_shift = 0.f;      // added to every sink (N(0, 1) before): + dominant, - faint
  bool no_sink_head0 = false;  // head 0's sink is -inf: the path of a head without one
  bool window = false;
  int64_t wl = -1, wr = -1;
  float softcap = 0.f;
  float input_scale = 1.f;     // multiplies Q
  bool deterministic = false;  // backward
  int64_t dv = 0;              // V's, O's, dO's and dV's head dim (head_dim_v; 0: d): the backward's cases
  int64_t d_v() const { return dv != 0 ? dv : d; }
  std::string str() const {
    return "B=" + std::to_string(batch) + " Sq=" + std::to_string(sq) + " Sk=" + std::to_string(sk) +
           " Hq=" + std::to_string(hq) + " Hkv=" + std::to_string(hkv) + " d=" + std::to_string(d) +
           (causal ? " causal" : "") + (dtype == FLASHPTX_BF16 ? " bf16" : " fp16") +
           (sink_shift != 0.f ? " sink_shift=" + std::to_string(sink_shift) : "") +
           (no_sink_head0 ? " head0-no-sink" : "") +
           (window ? " window=(" + std::to_string(wl) + "," + std::to_string(wr) + ")" : "") +
           (softcap != 0.f ? " softcap=" + std::to_string(softcap) : "") +
           (input_scale != 1.f ? " qscale=" + std::to_string(input_scale) : "") +
           (deterministic ? " deterministic" : "") + (dv != 0 ? " dv=" + std::to_string(dv) : "");
  }
};

// One contiguous problem: inputs, sinks, the forward's outputs (with guards), the backward's.
struct SProblem {
  SCase c;
  Strides sq_, sk_, so_, sv_;  // Q, dQ; K, dK; O, dO; V, dV (head dim d_v)
  std::vector<uint16_t> q, k, v, dout;
  std::vector<float> sinks;
  std::unique_ptr<DeviceBuf> dq_in, dk_in, dv_in, ddo, dsink, o, lse, dq, dk, dv, dds, ws;
  flashptx_fwd_params fwd{};
  flashptx_bwd_params bwd{};

  SProblem(const SCase& cs, uint64_t seed) : c(cs) {
    sq_ = make_strides(Layout::kContiguous, c.batch, c.sq, c.hq, c.d);
    sk_ = make_strides(Layout::kContiguous, c.batch, c.sk, c.hkv, c.d);
    so_ = make_strides(Layout::kContiguous, c.batch, c.sq, c.hq, c.d_v());
    sv_ = make_strides(Layout::kContiguous, c.batch, c.sk, c.hkv, c.d_v());
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    auto fill = [&](std::vector<uint16_t>& x, const Strides& st, float scale) {
      x.resize(static_cast<size_t>(std::max<int64_t>(st.total, 1)));
      for (uint16_t& e : x) e = to_storage(c.dtype, scale * nd(rng));
    };
    fill(q, sq_, c.input_scale);
    fill(k, sk_, 1.f);
    fill(v, sv_, 1.f);
    fill(dout, so_, 1.f);
    sinks.resize(static_cast<size_t>(c.hq));
    for (float& s : sinks) s = nd(rng) + c.sink_shift;
    if (c.no_sink_head0) sinks[0] = -INFINITY;
    auto upload = [](std::unique_ptr<DeviceBuf>& d, const void* h, size_t bytes) {
      d.reset(new DeviceBuf(bytes));
      CUDA_REQUIRE(cudaMemcpy(d->p, h, bytes, cudaMemcpyHostToDevice));
    };
    upload(dq_in, q.data(), q.size() * 2);
    upload(dk_in, k.data(), k.size() * 2);
    upload(dv_in, v.data(), v.size() * 2);
    upload(ddo, dout.data(), dout.size() * 2);
    upload(dsink, sinks.data(), sinks.size() * 4);
    o.reset(new DeviceBuf((dout.size() + kGuard) * 2));
    lse.reset(new DeviceBuf((static_cast<size_t>(c.batch * c.hq * c.sq) + kGuard) * 4));
    dq.reset(new DeviceBuf((q.size() + kGuard) * 2));
    dk.reset(new DeviceBuf((k.size() + kGuard) * 2));
    dv.reset(new DeviceBuf((v.size() + kGuard) * 2));
    dds.reset(new DeviceBuf((sinks.size() + kGuard) * 4));

    flashptx_fwd_params_contiguous(&fwd, dq_in->p, dk_in->p, dv_in->p, o->p, static_cast<float*>(lse->p), c.batch,
                                   c.sq, c.sk, c.hq, c.hkv, c.d, c.dtype, c.causal ? 1 : 0);
    fwd.sinks = static_cast<const float*>(dsink->p);
    fwd.window = c.window ? 1 : 0;
    fwd.window_left = c.wl;
    fwd.window_right = c.wr;
    fwd.softcap = c.softcap;
    if (c.dv != 0) {  // V and O at their own head dim (contiguous)
      fwd.head_dim_v = c.dv;
      fwd.v_batch_stride = sv_.b; fwd.v_row_stride = sv_.s; fwd.v_head_stride = sv_.h;
      fwd.o_batch_stride = so_.b; fwd.o_row_stride = so_.s; fwd.o_head_stride = so_.h;
    }
    flashptx_bwd_params_contiguous(&bwd, dq_in->p, dk_in->p, dv_in->p, o->p, static_cast<const float*>(lse->p),
                                   ddo->p, dq->p, dk->p, dv->p, c.batch, c.sq, c.sk, c.hq, c.hkv, c.d, c.dtype,
                                   c.causal ? 1 : 0);
    bwd.deterministic = c.deterministic ? 1 : 0;
    bwd.window = fwd.window;  // the forward's window and softcap (the local backward kernels)
    bwd.window_left = c.wl;
    bwd.window_right = c.wr;
    bwd.softcap = c.softcap;
    bwd.sinks = fwd.sinks;
    bwd.dsinks = static_cast<float*>(dds->p);
    if (c.dv != 0) {
      bwd.head_dim_v = c.dv;
      bwd.v_batch_stride = bwd.dv_batch_stride = sv_.b;
      bwd.v_row_stride = bwd.dv_row_stride = sv_.s;
      bwd.v_head_stride = bwd.dv_head_stride = sv_.h;
      bwd.o_batch_stride = bwd.do_batch_stride = so_.b;
      bwd.o_row_stride = bwd.do_row_stride = so_.s;
      bwd.o_head_stride = bwd.do_head_stride = so_.h;
    }
  }
  // x [batch, seq, heads, d_v] contiguous, widened to d columns with zeros (the reference has one head
  // dim: a zero column of V or dO adds nothing to S, dP, delta, dQ, dK, nor to dV's first d_v columns).
  std::vector<uint16_t> widened(const std::vector<uint16_t>& x, int64_t seq, int64_t heads) const {
    if (c.d_v() == c.d) return x;
    std::vector<uint16_t> y(static_cast<size_t>(c.batch * seq * heads * c.d), to_storage(c.dtype, 0.f));
    for (int64_t r = 0; r < c.batch * seq * heads; ++r)
      for (int64_t e = 0; e < c.d_v(); ++e) y[static_cast<size_t>(r * c.d + e)] = x[static_cast<size_t>(r * c.d_v() + e)];
    return y;
  }
  // The first d_v of every d-column row of a contiguous reference gradient (dV).
  std::vector<double> narrowed(const std::vector<double>& x) const {
    if (c.d_v() == c.d || x.empty()) return x;
    const size_t rows = x.size() / static_cast<size_t>(c.d);
    std::vector<double> y(rows * static_cast<size_t>(c.d_v()));
    for (size_t r = 0; r < rows; ++r)
      for (int64_t e = 0; e < c.d_v(); ++e) y[r * c.d_v() + e] = x[r * c.d + e];
    return y;
  }
  void run_fwd() {
    CUDA_REQUIRE(cudaMemset(o->p, 0xFF, o->bytes));  // NaN
    CUDA_REQUIRE(cudaMemset(lse->p, 0xFF, lse->bytes));
    const flashptx_status s = flashptx_fwd(&fwd, nullptr);
    REQUIRE_MESSAGE(s == FLASHPTX_OK, flashptx_last_error());
    CUDA_REQUIRE(cudaDeviceSynchronize());
  }
  void run_bwd() {
    if (!ws) {
      int64_t bytes = 0;
      REQUIRE_MESSAGE(flashptx_bwd_workspace_size(&bwd, &bytes) == FLASHPTX_OK, flashptx_last_error());
      ws.reset(new DeviceBuf(static_cast<size_t>(std::max<int64_t>(bytes, 256))));
      bwd.workspace = ws->p;
      bwd.workspace_bytes = bytes;
    }
    CUDA_REQUIRE(cudaMemset(ws->p, 0xAB, ws->bytes));  // stale garbage
    for (DeviceBuf* b : {dq.get(), dk.get(), dv.get(), dds.get()}) CUDA_REQUIRE(cudaMemset(b->p, 0xFF, b->bytes));
    const flashptx_status s = flashptx_bwd(&bwd, nullptr);
    REQUIRE_MESSAGE(s == FLASHPTX_OK, flashptx_last_error());
    CUDA_REQUIRE(cudaDeviceSynchronize());
  }
  template <class T>
  static std::vector<T> fetch(const DeviceBuf& b) {
    std::vector<T> h(b.bytes / sizeof(T));
    CUDA_REQUIRE(cudaMemcpy(h.data(), b.p, b.bytes, cudaMemcpyDeviceToHost));
    return h;
  }
  flashptx::ref::Problem ref_problem() const {
    auto rp = flashptx_test::ref_problem(c.batch, c.sq, c.sk, c.hq, c.hkv, c.d, c.causal, 0.f);
    if (c.window) {
      rp.window_left = c.wl;
      rp.window_right = c.wr;
    }
    rp.softcap = c.softcap;
    rp.sinks.assign(sinks.begin(), sinks.end());
    return rp;
  }
  flashptx::ref::TensorView view(const std::vector<uint16_t>& x, const Strides& st) const {
    return ref_view(x, c.dtype, st);
  }
  flashptx::Round same() const { return c.dtype == FLASHPTX_BF16 ? flashptx::Round::kBF16 : flashptx::Round::kFP16; }
};

// The forward: every row of O and LSE against fp64, the guards untouched, the sink kernel planned.
void check_forward(const SCase& c, uint64_t seed) {
  INFO(c.str());
  SProblem pb(c, seed);
  flashptx_kernel_info info{};
  REQUIRE_MESSAGE(flashptx_fwd_kernel_info(&pb.fwd, &info) == FLASHPTX_OK, flashptx_last_error());
  CHECK(std::string(info.symbol).find("fa3_fwd_sink_sm90_") == 0);
  pb.run_fwd();
  const auto o = SProblem::fetch<uint16_t>(*pb.o);
  const auto l = SProblem::fetch<float>(*pb.lse);
  const int64_t n_o = c.batch * c.sq * c.hq * c.d;
  int64_t non_finite = 0, clobbered = 0;
  for (int64_t i = 0; i < n_o; ++i)
    if (!std::isfinite(from_storage(c.dtype, o[static_cast<size_t>(i)]))) ++non_finite;
  for (size_t i = static_cast<size_t>(n_o); i < o.size(); ++i)
    if (o[i] != kPoison) ++clobbered;
  CHECK_MESSAGE(non_finite == 0, c.str() << ": " << non_finite << " O elements not written or not finite");
  CHECK_MESSAGE(clobbered == 0, c.str() << ": " << clobbered << " elements after O were written");
  check_lse_writes(l, c.batch * c.hq * c.sq, c.str());

  const auto rp = pb.ref_problem();
  const auto qv = pb.view(pb.q, pb.sq_), kv = pb.view(pb.k, pb.sk_), vv = pb.view(pb.v, pb.sk_);
  std::vector<double> ref(c.d), refs(c.d), env(c.d);
  double e_o = 0, e_o_same = 0, e_lse = 0, e_lse_same = 0, lse_mag = 0, o_env = 0, lse_env_max = 0;
  int64_t empty_rows = 0;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t i = 0; i < c.sq; ++i)
      for (int64_t h = 0; h < c.hq; ++h) {
        double lse_env = 0;
        const double l_ref = flashptx::ref::forward_row(rp, qv, kv, vv, b, i, h, ref.data(), flashptx::Round::kNone,
                                                        env.data(), &lse_env);
        const double l_same = flashptx::ref::forward_row(rp, qv, kv, vv, b, i, h, refs.data(), pb.same());
        for (int64_t x = 0; x < c.d; ++x) {
          const double out = from_storage(c.dtype, o[static_cast<size_t>(((b * c.sq + i) * c.hq + h) * c.d + x)]);
          e_o = std::max(e_o, std::isnan(out) ? INFINITY : std::fabs(out - ref[x]));
          e_o_same = std::max(e_o_same, std::fabs(refs[x] - ref[x]));
          o_env = std::max(o_env, env[x]);
        }
        lse_env_max = std::max(lse_env_max, lse_env);
        if (rp.last_key(i) < rp.first_key(i)) ++empty_rows;
        const double l_out = l[static_cast<size_t>((b * c.hq + h) * c.sq + i)];
        if (std::isinf(l_ref)) {
          if (!(std::isinf(l_out) && l_out < 0)) e_lse = INFINITY;
        } else {
          e_lse = std::max(e_lse, std::isnan(l_out) ? INFINITY : std::fabs(l_out - l_ref));
          e_lse_same = std::max(e_lse_same, std::fabs(l_same - l_ref));
          lse_mag = std::max(lse_mag, std::fabs(l_ref));
        }
      }
  const double o_tol = 2 * e_o_same + 1e-5 + o_env;
  const double lse_tol = 2 * e_lse_same + 1e-5 + std::ldexp(lse_mag, -20) + lse_env_max;
  CHECK_MESSAGE(e_o <= o_tol, c.str() << ": max|O - ref| = " << e_o << " > " << o_tol << " (same-dtype " << e_o_same
                                      << ")");
  CHECK_MESSAGE(e_lse <= lse_tol, c.str() << ": max|LSE - ref| = " << e_lse << " > " << lse_tol << " (" << empty_rows
                                          << " rows without a key)");
}

double max_err(const std::vector<uint16_t>& g, flashptx_dtype t, const std::vector<double>& ref) {
  double m = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = std::fabs(from_storage(t, g[i]) - ref[i]);
    if (!(d <= m)) m = std::isnan(d) ? INFINITY : d;
  }
  return m;
}
double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

// The backward: the forward with sinks, then dQ, dK, dV and dsinks against fp64 (every element), the
// guards untouched; deterministic mode: a second run bit for bit.
void check_backward(const SCase& c, uint64_t seed) {
  INFO(c.str());
  SProblem pb(c, seed);
  pb.run_fwd();
  pb.run_bwd();
  const auto gq = SProblem::fetch<uint16_t>(*pb.dq), gk = SProblem::fetch<uint16_t>(*pb.dk),
             gv = SProblem::fetch<uint16_t>(*pb.dv);
  const auto gs = SProblem::fetch<float>(*pb.dds);
  const auto rp = pb.ref_problem();
  const std::vector<uint16_t> v_ref = pb.widened(pb.v, c.sk, c.hkv), do_ref = pb.widened(pb.dout, c.sq, c.hq);
  const auto qv = pb.view(pb.q, pb.sq_), kv = pb.view(pb.k, pb.sk_), vv = pb.view(v_ref, pb.sk_),
             dov = pb.view(do_ref, pb.sq_);
  const auto ref = flashptx::ref::backward(rp, qv, kv, vv, dov);
  const auto same = flashptx::ref::backward(rp, qv, kv, vv, dov, pb.same());
  REQUIRE(ref.dsinks.size() == static_cast<size_t>(c.hq));
  // dV's reference at its own head dim (the widened problem's first d_v columns).
  const std::vector<double> ref_dv = pb.narrowed(ref.dv), same_dv = pb.narrowed(same.dv),
                            env_dv = pb.narrowed(ref.dv_env);
  struct G { const char* name; const std::vector<uint16_t>& x; const std::vector<double>& r, &s, &env; };
  for (const G& g : {G{"dQ", gq, ref.dq, same.dq, ref.dq_env}, G{"dK", gk, ref.dk, same.dk, ref.dk_env},
                     G{"dV", gv, ref_dv, same_dv, env_dv}}) {
    const double err = max_err(g.x, c.dtype, g.r);
    double env = 0;
    for (double e : g.env) env = std::max(env, e);
    const double tol = 2 * max_diff(g.s, g.r) + 1e-5 + env;
    CHECK_MESSAGE(err <= tol, c.str() << ": max|" << std::string(g.name) << " - ref| = " << err << " > " << tol);
    int64_t clobbered = 0;
    for (size_t i = g.r.size(); i < g.x.size(); ++i)
      if (g.x[i] != kPoison) ++clobbered;
    CHECK_MESSAGE(clobbered == 0, c.str() << ": " << clobbered << " elements after " << std::string(g.name) << " were written");
  }
  // dsinks against fp64, per head: FlashAttention's rule plus the fp32 envelope plus six standard
  // deviations of the spread that O's 16-bit storage causes (ref::Backward::dsinks_o_sd): dsinks_h
  // is a single sum over every row, so the same-dtype reference's error is one draw of that spread,
  // not a bound on the kernel's (docs/DECISIONS.md, "Attention sinks").
  const double u = c.dtype == FLASHPTX_BF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  double same_err = 0, mag = 0;
  for (int64_t h = 0; h < c.hq; ++h) {
    same_err = std::max(same_err, std::fabs(same.dsinks[static_cast<size_t>(h)] - ref.dsinks[static_cast<size_t>(h)]));
    mag = std::max(mag, std::fabs(ref.dsinks[static_cast<size_t>(h)]));
  }
  // And against the same sum taken on the host from the kernel's own O and LSE (the formula of
  // include/flashptx.h: dsinks_h = -sum_i exp(s_h - LSE_i) (dO_i . O_i)): that isolates the
  // gradient kernel from the forward's rounding. It agrees within fp32 arithmetic: per row, p_sink
  // |dO_i| . |O_i| times 2^-19 (delta's d products and the reduction over the rows, ex2.approx's
  // 2^-22) plus 2^-22 (|s_h| + |LSE_i|) (the exponent s_h log2(e) - LSE_i log2(e) formed in fp32).
  const auto go = SProblem::fetch<uint16_t>(*pb.o);
  const auto gl = SProblem::fetch<float>(*pb.lse);
  for (int64_t h = 0; h < c.hq; ++h) {
    const size_t hs = static_cast<size_t>(h);
    const double x = gs[hs], r = ref.dsinks[hs];
    const double tol = 2 * same_err + 1e-5 + ref.dsinks_env[hs] + 6 * u * ref.dsinks_o_sd[hs];
    CHECK_MESSAGE((std::isfinite(x) && std::fabs(x - r) <= tol),
                  c.str() << ": head " << h << ": |dsinks - ref| = " << std::fabs(x - r) << " > " << tol << " (same-dtype "
                          << same_err << ", fp32 envelope " << ref.dsinks_env[hs] << ", O's spread "
                          << u * ref.dsinks_o_sd[hs] << ", dsinks " << x << ", ref " << r << ")");
    double own = 0, own_abs = 0;
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t i = 0; i < c.sq; ++i) {
        const double lse = gl[static_cast<size_t>((b * c.hq + h) * c.sq + i)];
        if (pb.sinks[hs] == -INFINITY) continue;  // a head without a sink: p_sink = 0 (also where LSE = -inf)
        const double ps = std::exp(static_cast<double>(pb.sinks[hs]) - lse);
        const size_t qo = static_cast<size_t>(((b * c.sq + i) * c.hq + h) * c.d_v());  // O, dO rows
        double delta = 0, delta_abs = 0;
        for (int64_t e = 0; e < c.d_v(); ++e) {
          const double t = static_cast<double>(from_storage(c.dtype, pb.dout[qo + e])) * from_storage(c.dtype, go[qo + e]);
          delta += t;
          delta_abs += std::fabs(t);
        }
        own -= ps * delta;
        own_abs += ps * delta_abs * (std::ldexp(1.0, -19) +
                                     std::ldexp(std::fabs(static_cast<double>(pb.sinks[hs])) + std::fabs(lse), -22));
      }
    const double own_tol = own_abs + 1e-12;
    CHECK_MESSAGE(std::fabs(x - own) <= own_tol, c.str() << ": head " << h << ": dsinks " << x
                                                         << " against its own O and LSE's " << own << " (bound " << own_tol << ")");
  }
  // The gradient is not vacuous: some head's sink carries weight (unless every sink is -inf).
  CHECK(mag > 1e-3);
  if (c.no_sink_head0) CHECK(gs[0] == 0.f);  // p_sink = 0 on every row of head 0
  int64_t clobbered = 0;
  for (size_t i = static_cast<size_t>(c.hq); i < gs.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &gs[i], 4);
    if (bits != 0xFFFFFFFFu) ++clobbered;
  }
  CHECK_MESSAGE(clobbered == 0, c.str() << ": " << clobbered << " floats after dsinks were written");
  if (c.deterministic) {
    pb.run_bwd();
    CHECK_MESSAGE(SProblem::fetch<uint16_t>(*pb.dq) == gq, c.str() << ": a second deterministic run's dQ differs");
    CHECK_MESSAGE(SProblem::fetch<uint16_t>(*pb.dk) == gk, c.str() << ": a second deterministic run's dK differs");
    CHECK_MESSAGE(SProblem::fetch<uint16_t>(*pb.dv) == gv, c.str() << ": a second deterministic run's dV differs");
    const auto gs2 = SProblem::fetch<float>(*pb.dds);
    CHECK_MESSAGE(std::memcmp(gs2.data(), gs.data(), gs.size() * 4) == 0,
                  c.str() << ": a second deterministic run's dsinks differ");
  }
}

}  // namespace

TEST_SUITE("gpu_sm90 fa3 sinks") {

TEST_CASE("forward with sinks: every head dim, bf16 and fp16, GQA, causal and not, window and softcap") {
  // Rows without a key (causal with Sq > Sk: LSE = the sink), a dominant sink (+6) and a faint one
  // (-4), a head without a sink (-inf), a window smaller than a block with the sink (gpt-oss's
  // sliding layers), and the softcap with it.
  const SCase sim_cases[] = {
      {2, 130, 200, 4, 1, 64, false, FLASHPTX_BF16},
      {1, 200, 150, 2, 2, 128, true, FLASHPTX_FP16, 0.f, true},
      {1, 150, 150, 2, 1, 256, false, FLASHPTX_BF16, 6.f, false, true, 40, 0, 20.f, 4.f},
      {1, 100, 260, 2, 2, 64, true, FLASHPTX_FP16, -4.f, false, true, 100, 0},
  };
  const SCase gpu_cases[] = {
      {2, 1000, 1000, 8, 1, 64, false, FLASHPTX_BF16},
      {2, 1000, 1000, 8, 2, 64, true, FLASHPTX_BF16, 3.f, true, true, 128, 0},
      {1, 1500, 700, 4, 4, 128, true, FLASHPTX_FP16, 0.f, true},
      {1, 777, 1333, 4, 2, 128, false, FLASHPTX_BF16, -4.f, false, false, -1, -1, 30.f, 4.f},
      {1, 1000, 1000, 2, 1, 256, false, FLASHPTX_FP16, 6.f},
      {1, 700, 1000, 2, 2, 256, true, FLASHPTX_BF16, 0.f, false, true, 300, 0},
  };
  const bool sim = on_simulator();
  const std::span<const SCase> cases = sim ? std::span<const SCase>(sim_cases) : std::span<const SCase>(gpu_cases);
  uint64_t seed = 33000;
  for (const SCase& c : cases) check_forward(c, seed++);
}

TEST_CASE("backward with sinks: dQ, dK, dV and dsinks against fp64; deterministic mode bit for bit") {
  const SCase sim_cases[] = {
      {2, 130, 150, 4, 2, 64, true, FLASHPTX_BF16, 1.f, false, false, -1, -1, 0.f, 1.f, true},
      {1, 100, 200, 2, 2, 128, false, FLASHPTX_FP16, 0.f, true},
      {1, 70, 64, 2, 1, 256, true, FLASHPTX_BF16, 2.f, false, false, -1, -1, 0.f, 1.f, true},
      // With a window (smaller than a block: gpt-oss's sliding layers) and a softcap.
      {1, 150, 130, 2, 1, 64, false, FLASHPTX_FP16, 1.f, false, true, 20, 0, 0.f, 1.f, true},
      {1, 90, 140, 4, 2, 128, true, FLASHPTX_BF16, 0.f, true, true, 30, -1, 3.f, 2.f, false},
  };
  const SCase gpu_cases[] = {
      {2, 1000, 1000, 8, 2, 64, true, FLASHPTX_BF16, 1.f, false, false, -1, -1, 0.f, 1.f, true},
      {2, 1000, 1000, 8, 2, 64, false, FLASHPTX_BF16, 0.f, true},
      {1, 777, 1333, 4, 4, 128, true, FLASHPTX_FP16, 2.f, false, false, -1, -1, 0.f, 1.f, true},
      {1, 700, 500, 4, 1, 256, true, FLASHPTX_BF16, 0.f, true},
      {2, 1000, 1000, 8, 2, 64, false, FLASHPTX_FP16, 1.f, false, true, 128, 0, 0.f, 1.f, true},
      {1, 900, 1100, 4, 2, 128, true, FLASHPTX_BF16, 0.f, true, true, 200, -1, 5.f, 2.f, false},
      {1, 700, 500, 4, 1, 256, false, FLASHPTX_FP16, 1.f, false, true, 64, 64, 3.f, 1.f, true},
  };
  const bool sim = on_simulator();
  const std::span<const SCase> cases = sim ? std::span<const SCase>(sim_cases) : std::span<const SCase>(gpu_cases);
  uint64_t seed = 34000;
  for (const SCase& c : cases) check_backward(c, seed++);
}

// Head dims 96 and 192: the backward on the d128 and d256 kernels over zero columns (docs/DECISIONS.md,
// "Backward head dims 96 and 192"), the sinks' gradient from the preprocess's scratch as above.
TEST_CASE("backward with sinks at head dims 96 and 192: dQ, dK, dV and dsinks against fp64") {
  const SCase sim_cases[] = {
      {1, 100, 200, 2, 1, 96, true, FLASHPTX_BF16, 1.f, false, false, -1, -1, 0.f, 1.f, true},
      {1, 70, 130, 2, 2, 192, false, FLASHPTX_FP16, 0.f, true},
  };
  const SCase gpu_cases[] = {
      {2, 1000, 1000, 8, 2, 96, true, FLASHPTX_BF16, 1.f, false, false, -1, -1, 0.f, 1.f, true},
      {1, 777, 1333, 4, 4, 192, false, FLASHPTX_FP16, 0.f, true},
  };
  const bool sim = on_simulator();
  const std::span<const SCase> cases = sim ? std::span<const SCase>(sim_cases) : std::span<const SCase>(gpu_cases);
  uint64_t seed = 34500;
  for (const SCase& c : cases) check_backward(c, seed++);
}

// (head_dim, head_dim_v) = (192, 128): the d256 kernels with V, O, dO, dV at 128 columns
// (docs/DECISIONS.md, "The backward at (192, 128)"); with a window and the softcap (the local kernel).
TEST_CASE("backward with sinks at head dims (192, 128): dQ, dK, dV and dsinks against fp64") {
  SCase sim_cases[] = {
      {1, 90, 150, 4, 2, 192, true, FLASHPTX_BF16, 1.f, false, false, -1, -1, 0.f, 1.f, true},
      {1, 130, 100, 2, 1, 192, false, FLASHPTX_FP16, 0.f, true, true, 40, 10, 3.f, 2.f, false},
  };
  SCase gpu_cases[] = {
      {2, 1000, 1000, 8, 2, 192, true, FLASHPTX_BF16, 1.f, false, false, -1, -1, 0.f, 1.f, true},
      {1, 777, 1333, 4, 1, 192, false, FLASHPTX_FP16, 0.f, true, true, 200, 50, 5.f, 2.f, false},
  };
  const bool sim = on_simulator();
  const std::span<SCase> cases = sim ? std::span<SCase>(sim_cases) : std::span<SCase>(gpu_cases);
  uint64_t seed = 34600;
  for (SCase& c : cases) {
    c.dv = 128;
    check_backward(c, seed++);
  }
}

}  // TEST_SUITE
