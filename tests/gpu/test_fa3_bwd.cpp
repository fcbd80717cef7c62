// FA3 backward on the GPU (docs/PROTOCOLS.md, "The backward relay"): gradients against the
// fp64 reference (CPU) on every row of small and medium shapes and on sampled rows of large ones,
// fresh random inputs and dO, outputs poisoned; strides; GQA/MQA; edge sizes; the deterministic
// mode (100 launches bitwise equal); the release library bit for bit; bad input.
//
// The rule (FlashAttention's): for each of dQ, dK, dV,
//   max|g - g_ref| <= 2 * max|g_same - g_ref| + 1e-5,
// g_ref the fp64 backward, g_same a plain backward in the dtype (tools/support/reference.h: O, P and
// dS rounded to the dtype, the gradients rounded). O and LSE come from flashptx_fwd, as in training.
// To dQ and dK's tolerance we add the fp32 envelope of dS = P (dP - delta) (reference.h, Backward):
// the kernel forms dP and delta as fp32 sums in different orders, and where they cancel (a query row
// that sees one key: exactly) the gradient is fp32 noise the double-precision references lack.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "include/flashptx.h"
#include "src/internal.h"
#include "src/plan.h"
#include "tests/gpu/release_lib.h"
#include "tests/gpu/test_util.h"
#include "tests/sim/sim_schedule.h"
#include "tools/support/reference.h"

namespace {

using namespace flashptx_test;

struct BCase {
  int64_t batch, sq, sk, hq, hkv, d;
  bool causal;
  flashptx_dtype dtype;
  Layout layout = Layout::kContiguous;
  bool deterministic = false;
  float softmax_scale = 0.f;
  float input_scale = 1.f;  // multiplies Q
  // Deterministic mode: the dQ writers' order (src/plan.h); kAuto goes through the C ABI.
  flashptx::DqOrder dq_order = flashptx::DqOrder::kAuto;
  // The score modifiers (both calls): a sliding window (window_left/right, -1 unbounded; set when
  // either is >= 0) and a softcap (0: none).
  int64_t window_left = -1, window_right = -1;
  float softcap = 0.f;
  // V's, O's, dO's and dV's head dim (flashptx_bwd_params::head_dim_v): 0 passes 0 (meaning d).
  int64_t dv = 0;
  // Nonzero: every tensor's head row is row_width elements wide (its head stride in the layout), of
  // which the first d (V, O, dO, dV: d_v()) are the tensor's: the columns past them are input pads
  // (0.5, 0x3C3C in O) no kernel may read and output pads (poisoned) none may write.
  int64_t row_width = 0;
  int64_t d_v() const { return dv != 0 ? dv : d; }
  bool windowed() const { return window_left >= 0 || window_right >= 0; }
  std::string str() const {
    return "B=" + std::to_string(batch) + " Sq=" + std::to_string(sq) + " Sk=" + std::to_string(sk) +
           " Hq=" + std::to_string(hq) + " Hkv=" + std::to_string(hkv) + " d=" + std::to_string(d) +
           (causal ? " causal" : "") + (dtype == FLASHPTX_BF16 ? " bf16" : " fp16") + layout_name(layout) +
           (deterministic ? " deterministic" : "") +
           (dq_order == flashptx::DqOrder::kAscending ? " ascending-dQ"
            : dq_order == flashptx::DqOrder::kRotated ? " rotated-dQ"
                                                      : "") +
           (softmax_scale != 0.f ? " scale=" + std::to_string(softmax_scale) : "") +
           (input_scale != 1.f ? " qscale=" + std::to_string(input_scale) : "") +
           (windowed() ? " window=(" + std::to_string(window_left) + "," + std::to_string(window_right) + ")" : "") +
           (softcap != 0.f ? " softcap=" + std::to_string(softcap) : "") +
           (dv != 0 ? " dv=" + std::to_string(dv) : "") + (row_width != 0 ? " rows=" + std::to_string(row_width) : "");
  }
};

// One problem: inputs on host and device, the forward run once (O, LSE), outputs with guards.
struct BProblem {
  BCase c;
  Strides sq_, sk_, so_, sv_;  // Q and dQ; K and dK; O and dO; V and dV (head dim d_v)
  std::vector<uint16_t> q, k, v, dout;
  std::unique_ptr<DeviceBuf> dq_in, dk_in, dv_in, ddo, dout_o, dlse, ddq, ddk, ddv, dws;
  flashptx_fwd_params fwd{};
  flashptx_bwd_params bwd{};

  BProblem(const BCase& cs, uint64_t seed) : c(cs) {
    const int64_t wd = std::max(c.d, c.row_width), wv = std::max(c.d_v(), c.row_width);  // head rows
    sq_ = make_strides(c.layout, c.batch, c.sq, c.hq, wd);
    sk_ = make_strides(c.layout, c.batch, c.sk, c.hkv, wd);
    so_ = make_strides(c.layout, c.batch, c.sq, c.hq, wv);
    sv_ = make_strides(c.layout, c.batch, c.sk, c.hkv, wv);
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    auto fill = [&](std::vector<uint16_t>& x, const Strides& st, int64_t seq, int64_t heads, int64_t cols, float scale) {
      x.assign(static_cast<size_t>(std::max<int64_t>(st.total, 1)), to_storage(c.dtype, 0.5f));
      for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t s = 0; s < seq; ++s)
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t e = 0; e < cols; ++e) x[b * st.b + s * st.s + h * st.h + e] = to_storage(c.dtype, scale * nd(rng));
    };
    fill(q, sq_, c.sq, c.hq, c.d, c.input_scale);
    fill(k, sk_, c.sk, c.hkv, c.d, 1.f);
    fill(v, sv_, c.sk, c.hkv, c.d_v(), 1.f);
    fill(dout, so_, c.sq, c.hq, c.d_v(), 1.f);
    auto upload = [&](std::unique_ptr<DeviceBuf>& d, const std::vector<uint16_t>& h) {
      d.reset(new DeviceBuf(h.size() * 2));
      CUDA_REQUIRE(cudaMemcpy(d->p, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
    };
    upload(dq_in, q);
    upload(dk_in, k);
    upload(dv_in, v);
    upload(ddo, dout);
    const size_t nq = static_cast<size_t>(std::max<int64_t>(sq_.total, 1)), nk = static_cast<size_t>(std::max<int64_t>(sk_.total, 1));
    const size_t no = static_cast<size_t>(std::max<int64_t>(so_.total, 1)), nv = static_cast<size_t>(std::max<int64_t>(sv_.total, 1));
    dout_o.reset(new DeviceBuf(no * 2));
    dlse.reset(new DeviceBuf(static_cast<size_t>(std::max<int64_t>(c.batch * c.hq * c.sq, 1)) * 4));
    ddq.reset(new DeviceBuf((nq + kGuard) * 2));
    ddk.reset(new DeviceBuf((nk + kGuard) * 2));
    ddv.reset(new DeviceBuf((nv + kGuard) * 2));

    // The forward, as training runs it: O and LSE from flashptx_fwd.
    fwd = flashptx_fwd_params{};
    fwd.q = dq_in->p; fwd.k = dk_in->p; fwd.v = dv_in->p; fwd.o = dout_o->p;
    fwd.lse = static_cast<float*>(dlse->p);
    fwd.batch = c.batch; fwd.seqlen_q = c.sq; fwd.seqlen_k = c.sk;
    fwd.heads_q = c.hq; fwd.heads_kv = c.hkv; fwd.head_dim = c.d;
    fwd.q_batch_stride = sq_.b; fwd.q_row_stride = sq_.s; fwd.q_head_stride = sq_.h;
    fwd.k_batch_stride = sk_.b; fwd.k_row_stride = sk_.s; fwd.k_head_stride = sk_.h;
    fwd.v_batch_stride = sv_.b; fwd.v_row_stride = sv_.s; fwd.v_head_stride = sv_.h;
    fwd.o_batch_stride = so_.b; fwd.o_row_stride = so_.s; fwd.o_head_stride = so_.h;
    fwd.head_dim_v = c.dv;
    fwd.q_dtype = fwd.k_dtype = fwd.v_dtype = fwd.o_dtype = c.dtype;
    fwd.causal = c.causal;
    fwd.softmax_scale = c.softmax_scale;
    fwd.window = c.windowed();
    fwd.window_left = c.window_left;
    fwd.window_right = c.window_right;
    fwd.softcap = c.softcap;
    if (c.sq > 0) {
      // O's pads (the padded layouts', row_width's) nonzero: a preprocess that read past O's head dim
      // would add them (times dO's pads, 0.5) into delta.
      CUDA_REQUIRE(cudaMemset(dout_o->p, 0x3C, dout_o->bytes));
      const flashptx_status s = flashptx_fwd(&fwd, nullptr);
      REQUIRE_MESSAGE(s == FLASHPTX_OK, flashptx_last_error());
      CUDA_REQUIRE(cudaDeviceSynchronize());
    }

    bwd = flashptx_bwd_params{};
    bwd.q = dq_in->p; bwd.k = dk_in->p; bwd.v = dv_in->p; bwd.o = dout_o->p; bwd.lse = fwd.lse; bwd.dout = ddo->p;
    bwd.dq = ddq->p; bwd.dk = ddk->p; bwd.dv = ddv->p;
    bwd.batch = c.batch; bwd.seqlen_q = c.sq; bwd.seqlen_k = c.sk;
    bwd.heads_q = c.hq; bwd.heads_kv = c.hkv; bwd.head_dim = c.d;
    bwd.q_batch_stride = bwd.dq_batch_stride = sq_.b;
    bwd.q_row_stride = bwd.dq_row_stride = sq_.s;
    bwd.q_head_stride = bwd.dq_head_stride = sq_.h;
    bwd.o_batch_stride = bwd.do_batch_stride = so_.b;
    bwd.o_row_stride = bwd.do_row_stride = so_.s;
    bwd.o_head_stride = bwd.do_head_stride = so_.h;
    bwd.k_batch_stride = bwd.dk_batch_stride = sk_.b;
    bwd.k_row_stride = bwd.dk_row_stride = sk_.s;
    bwd.k_head_stride = bwd.dk_head_stride = sk_.h;
    bwd.v_batch_stride = bwd.dv_batch_stride = sv_.b;
    bwd.v_row_stride = bwd.dv_row_stride = sv_.s;
    bwd.v_head_stride = bwd.dv_head_stride = sv_.h;
    bwd.head_dim_v = c.dv;
    bwd.dtype = c.dtype;
    bwd.causal = c.causal;
    bwd.softmax_scale = c.softmax_scale;
    bwd.deterministic = c.deterministic;
    bwd.window = fwd.window;
    bwd.window_left = c.window_left;
    bwd.window_right = c.window_right;
    bwd.softcap = c.softcap;
    int64_t ws = 0;
    REQUIRE_MESSAGE(flashptx_bwd_workspace_size(&bwd, &ws) == FLASHPTX_OK, flashptx_last_error());
    dws.reset(new DeviceBuf(static_cast<size_t>(std::max<int64_t>(ws, 256))));
    CUDA_REQUIRE(cudaMemset(dws->p, 0xAB, dws->bytes));  // stale garbage: the library must zero what it needs
    bwd.workspace = dws->p;
    bwd.workspace_bytes = ws;
  }

  void poison() {
    for (auto* b : {ddq.get(), ddk.get(), ddv.get()}) CUDA_REQUIRE(cudaMemset(b->p, 0xFF, b->bytes));
  }
  void run() {
    flashptx::BwdOptions opt;
    opt.dq_order = c.dq_order;
    const flashptx_status s =
        c.dq_order == flashptx::DqOrder::kAuto ? flashptx_bwd(&bwd, nullptr) : flashptx::bwd(&bwd, opt, nullptr);
    REQUIRE_MESSAGE(s == FLASHPTX_OK, flashptx_last_error());
    CUDA_REQUIRE(cudaGetLastError());
    CUDA_REQUIRE(cudaDeviceSynchronize());
  }
  void run_release() {
    const auto& rel = release_lib();
    REQUIRE_MESSAGE(rel.loaded(), rel.why);
    const flashptx_status s = rel.bwd(&bwd, nullptr);
    REQUIRE_MESSAGE(s == FLASHPTX_OK, rel.last_error());
    CUDA_REQUIRE(cudaGetLastError());
    CUDA_REQUIRE(cudaDeviceSynchronize());
  }
  static std::vector<uint16_t> fetch(const DeviceBuf& b) {
    std::vector<uint16_t> h(b.bytes / 2);
    const cudaError_t e = cudaMemcpy(h.data(), b.p, b.bytes, cudaMemcpyDeviceToHost);
    REQUIRE(e == cudaSuccess);
    return h;
  }
  struct Grads { std::vector<uint16_t> dq, dk, dv; };
  Grads grads() const { return Grads{fetch(*ddq), fetch(*ddk), fetch(*ddv)}; }

  flashptx::ref::Problem ref_problem() const {
    auto p = flashptx_test::ref_problem(c.batch, c.sq, c.sk, c.hq, c.hkv, c.d, c.causal, c.softmax_scale);
    p.window_left = c.window_left;
    p.window_right = c.window_right;
    p.softcap = c.softcap;
    return p;
  }
  flashptx::ref::TensorView view(const std::vector<uint16_t>& x, const Strides& st) const {
    return ref_view(x, c.dtype, st);
  }
  // V and dO for the reference, which has one head dim: where d_v < d, contiguous copies whose
  // columns [d_v, d) are 0, so that the reference's S, dP and delta are the (d, d_v) problem's, its
  // dQ and dK exactly theirs and its dV's columns [0, d_v) too (a zero column of V or dO adds
  // nothing to the others; the rest is 0 and ignored). Where d_v = d, the tensors as they are.
  struct RefInputs { std::vector<uint16_t> v, dout; Strides sv, so; };
  RefInputs ref_inputs() const {
    RefInputs r;
    if (c.d_v() == c.d) {
      r.v = v; r.dout = dout; r.sv = sv_; r.so = so_;
      return r;
    }
    auto widen = [&](const std::vector<uint16_t>& x, const Strides& st, int64_t seq, int64_t heads, Strides* out) {
      *out = make_strides(Layout::kContiguous, c.batch, seq, heads, c.d);
      std::vector<uint16_t> y(static_cast<size_t>(std::max<int64_t>(out->total, 1)), to_storage(c.dtype, 0.f));
      for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t s = 0; s < seq; ++s)
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t e = 0; e < c.d_v(); ++e) y[b * out->b + s * out->s + h * out->h + e] = x[b * st.b + s * st.s + h * st.h + e];
      return y;
    };
    r.v = widen(v, sv_, c.sk, c.hkv, &r.sv);
    r.dout = widen(dout, so_, c.sq, c.hq, &r.so);
    return r;
  }
};

// Every gradient element is finite; nothing outside the gradients (pads, guards) was written.
void check_writes(const BProblem& pb, const BProblem::Grads& g) {
  const BCase& c = pb.c;
  struct T { const char* name; const std::vector<uint16_t>& x; const Strides& st; int64_t seq, heads, cols; };
  const T ts[] = {{"dQ", g.dq, pb.sq_, c.sq, c.hq, c.d}, {"dK", g.dk, pb.sk_, c.sk, c.hkv, c.d},
                  {"dV", g.dv, pb.sv_, c.sk, c.hkv, c.d_v()}};
  for (const T& t : ts) {
    std::vector<char> is_out(t.x.size(), 0);
    int64_t bad = 0, clobbered = 0;
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t s = 0; s < t.seq; ++s)
        for (int64_t h = 0; h < t.heads; ++h)
          for (int64_t e = 0; e < t.cols; ++e) {
            const int64_t idx = b * t.st.b + s * t.st.s + h * t.st.h + e;
            is_out[idx] = 1;
            if (!std::isfinite(from_storage(c.dtype, t.x[idx]))) ++bad;
          }
    for (size_t i = 0; i < t.x.size(); ++i)
      if (!is_out[i] && t.x[i] != kPoison) ++clobbered;
    CHECK_MESSAGE(bad == 0, c.str() << ": " << bad << " " << t.name << " elements not written or not finite");
    CHECK_MESSAGE(clobbered == 0, c.str() << ": " << clobbered << " elements outside " << t.name << " were written");
  }
}

// max|g - ref| over a gradient tensor's `cols` columns (g through its strides, ref contiguous with
// rows of d: the reference's head dim).
double max_err(const BProblem& pb, const std::vector<uint16_t>& g, const Strides& st, int64_t seq, int64_t heads,
               int64_t cols, const std::vector<double>& ref) {
  double m = 0;
  const BCase& c = pb.c;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t s = 0; s < seq; ++s)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t e = 0; e < cols; ++e) {
          const double x = from_storage(c.dtype, g[b * st.b + s * st.s + h * st.h + e]);
          const double r = ref[static_cast<size_t>(((b * seq + s) * heads + h) * c.d + e)];
          const double d = std::fabs(x - r);
          if (!(d <= m)) m = std::isnan(d) ? INFINITY : d;
        }
  return m;
}
double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

// FlashAttention's rule against the CPU fp64 reference, every element of dQ, dK, dV (`who` names
// the library that computed g in the messages).
void check_rule(const BProblem& pb, const BProblem::Grads& g, const char* who) {
  const BCase& c = pb.c;
  const auto rp = pb.ref_problem();
  const BProblem::RefInputs ri = pb.ref_inputs();
  const auto qv = pb.view(pb.q, pb.sq_), kv = pb.view(pb.k, pb.sk_), vv = pb.view(ri.v, ri.sv),
             dov = pb.view(ri.dout, ri.so);
  const auto ref = flashptx::ref::backward(rp, qv, kv, vv, dov);
  const auto same = flashptx::ref::backward(rp, qv, kv, vv, dov,
                                            c.dtype == FLASHPTX_BF16 ? flashptx::Round::kBF16 : flashptx::Round::kFP16);
  static const std::vector<double> kNoEnvelope;
  struct G { std::string name; const std::vector<uint16_t>& x; const Strides& st; int64_t seq, heads, cols;
             const std::vector<double>& r; const std::vector<double>& s; const std::vector<double>& env; };
  const G gs[] = {{"dQ", g.dq, pb.sq_, c.sq, c.hq, c.d, ref.dq, same.dq, ref.dq_env},
                  {"dK", g.dk, pb.sk_, c.sk, c.hkv, c.d, ref.dk, same.dk, ref.dk_env},
                  {"dV", g.dv, pb.sv_, c.sk, c.hkv, c.d_v(), ref.dv, same.dv,
                   ref.dv_env.empty() ? kNoEnvelope : ref.dv_env}};
  for (const G& x : gs) {
    const double err = max_err(pb, x.x, x.st, x.seq, x.heads, x.cols, x.r);
    double env = 0;
    for (double e : x.env) env = std::max(env, e);
    // FlashAttention's rule, plus the fp32 envelope of dS's cancellation (reference.h Backward; with
    // a softcap also tanh.approx's, Backward::dv_env).
    const double tol = 2 * max_diff(x.s, x.r) + 1e-5 + env;
    CHECK_MESSAGE(err <= tol, c.str() << ", " << who << ": max|" << x.name << " - ref| = " << err << " > " << tol
                                      << " (same-dtype " << max_diff(x.s, x.r) << ", fp32 envelope " << env << ")");
  }
}

// The release library's gradients r and the test build's g, bit for bit.
void check_same_bits(const BCase& c, const BProblem::Grads& r, const BProblem::Grads& g) {
  CHECK_MESSAGE(r.dq == g.dq, c.str() << ": the release library's dQ differs from the test build's");
  CHECK_MESSAGE(r.dk == g.dk, c.str() << ": the release library's dK differs from the test build's");
  CHECK_MESSAGE(r.dv == g.dv, c.str() << ": the release library's dV differs from the test build's");
}

// The full check against the CPU fp64 reference (small and medium shapes).
void check_case(const BCase& c, uint64_t seed) {
  INFO(c.str());
  BProblem pb(c, seed);
  pb.poison();
  pb.run();
  const auto g = pb.grads();
  check_writes(pb, g);
  check_rule(pb, g, "test build");
  // The release library: in deterministic mode it must give the test build's bits (its C ABI takes
  // the plan's order: compared only when this case did too).
  if (c.deterministic && c.dq_order == flashptx::DqOrder::kAuto && release_lib().loaded()) {
    pb.poison();
    pb.run_release();
    const auto r = pb.grads();
    check_same_bits(c, r, g);
  }
}

// The release libflashptx.so against the test flavour on the same inputs: its fast (atomic)
// backward under the fp64 rule (atomics reorder the dQ sums, so not bitwise), its deterministic
// backward bit for bit.
void check_release(const BCase& c, uint64_t seed) {
  INFO(c.str());
  const auto& rel = release_lib();
  REQUIRE_MESSAGE(rel.loaded(), rel.why);
  BProblem pb(c, seed);
  pb.poison();
  pb.run();
  const auto test = pb.grads();
  pb.poison();
  pb.run_release();
  const auto release = pb.grads();
  check_writes(pb, release);
  if (c.deterministic) {
    check_same_bits(c, release, test);
    return;
  }
  check_rule(pb, release, "release library");
}

// Gradients on sampled rows, batch 0, in fp64 (Round::kNone) or as a plain backward in the dtype
// (reference.h's same-dtype rules: O from the same-dtype forward, P and dS rounded before their
// products, the gradients rounded): dQ on the query rows `rq` (every query head), dK and dV on the
// key rows `rk` (every kv head, summed over its query heads). The per-row LSE and delta = dO . O of
// every query row are computed first, on every host core; then each sampled row is one pass over
// the other side. Layout [row][head][d]; dq_env / dk_env: reference.h's fp32 envelope of dS.
struct RowGrads { std::vector<double> dq, dk, dv, dq_env, dk_env; };

RowGrads sampled_backward(const BProblem& pb, const std::vector<int64_t>& rq, const std::vector<int64_t>& rk,
                          flashptx::Round round) {
  const BCase& c = pb.c;
  const auto rp = pb.ref_problem();
  const BProblem::RefInputs ri = pb.ref_inputs();  // V and dO at d columns (zeros past d_v)
  const auto qv = pb.view(pb.q, pb.sq_), kv = pb.view(pb.k, pb.sk_), vv = pb.view(ri.v, ri.sv),
             dov = pb.view(ri.dout, ri.so);
  const int64_t D = c.d, G = rp.group();
  const double scale = rp.scale();
  auto R = [&](double x) { return flashptx::round_to(round, x); };
  std::vector<double> lse(static_cast<size_t>(c.hq * c.sq)), delta(static_cast<size_t>(c.hq * c.sq));
  {
    const int64_t rows = c.hq * c.sq;
    on_host_threads([&](size_t t, size_t n) {
      std::vector<double> o(static_cast<size_t>(D));
      for (int64_t x = static_cast<int64_t>(t); x < rows; x += static_cast<int64_t>(n)) {
        const int64_t h = x / c.sq, i = x % c.sq;
        lse[x] = flashptx::ref::forward_row(rp, qv, kv, vv, 0, i, h, o.data(), round);
        double dsum = 0;
        for (int64_t e = 0; e < D; ++e) dsum += dov.at(0, i, h, e) * o[e];
        delta[x] = dsum;
      }
    });
  }
  // P_ij, dS_ij and the fp32 envelope weight of one (head, query row, key row) pair.
  struct Pair { double p, ds, env; bool seen; };
  auto pair = [&](int64_t h, int64_t i, int64_t j) {
    Pair r{0, 0, 0, false};
    if (j > rp.last_key(i) || !std::isfinite(lse[h * c.sq + i])) return r;
    const int64_t hk = h / G;
    double dot = 0, dp = 0, mag = 0;
    for (int64_t e = 0; e < D; ++e) {
      dot += qv.at(0, i, h, e) * kv.at(0, j, hk, e);
      dp += dov.at(0, i, h, e) * vv.at(0, j, hk, e);
      mag += std::fabs(dov.at(0, i, h, e) * vv.at(0, j, hk, e));
    }
    const double d = delta[h * c.sq + i];
    r.p = R(std::exp(scale * dot - lse[h * c.sq + i]));
    r.ds = R(r.p * (dp - d));
    r.env = std::ldexp(mag + std::fabs(d), -20) * r.p * scale;
    r.seen = true;
    return r;
  };
  RowGrads g;
  g.dq.assign(rq.size() * c.hq * D, 0);
  g.dq_env.assign(g.dq.size(), 0);
  for (size_t n = 0; n < rq.size(); ++n)
    for (int64_t h = 0; h < c.hq; ++h) {
      double* out = &g.dq[(n * c.hq + h) * D];
      double* env = &g.dq_env[(n * c.hq + h) * D];
      for (int64_t j = 0; j < c.sk; ++j) {
        const Pair x = pair(h, rq[n], j);
        if (!x.seen) continue;
        for (int64_t e = 0; e < D; ++e) {
          out[e] += scale * x.ds * kv.at(0, j, h / G, e);
          env[e] += x.env * std::fabs(kv.at(0, j, h / G, e));
        }
      }
      for (int64_t e = 0; e < D; ++e) out[e] = R(out[e]);
    }
  g.dk.assign(rk.size() * c.hkv * D, 0);
  g.dv.assign(g.dk.size(), 0);
  g.dk_env.assign(g.dk.size(), 0);
  for (size_t n = 0; n < rk.size(); ++n)
    for (int64_t hk = 0; hk < c.hkv; ++hk) {
      double *dk = &g.dk[(n * c.hkv + hk) * D], *dv = &g.dv[(n * c.hkv + hk) * D], *env = &g.dk_env[(n * c.hkv + hk) * D];
      for (int64_t h = hk * G; h < (hk + 1) * G; ++h)
        for (int64_t i = 0; i < c.sq; ++i) {
          const Pair x = pair(h, i, rk[n]);
          if (!x.seen) continue;
          for (int64_t e = 0; e < D; ++e) {
            dv[e] += x.p * dov.at(0, i, h, e);
            dk[e] += scale * x.ds * qv.at(0, i, h, e);
            env[e] += x.env * std::fabs(qv.at(0, i, h, e));
          }
        }
      for (int64_t e = 0; e < D; ++e) {
        dk[e] = R(dk[e]);
        dv[e] = R(dv[e]);
      }
    }
  return g;
}

// Rows to sample: the first and last two, a block edge each side of 64 and 128, and random ones.
std::vector<int64_t> sample_rows(int64_t n, int count, std::mt19937_64& rng) {
  std::vector<int64_t> r;
  for (int64_t x : {int64_t{0}, int64_t{1}, int64_t{63}, int64_t{64}, int64_t{127}, int64_t{128}, n - 2, n - 1})
    if (x >= 0 && x < n && std::find(r.begin(), r.end(), x) == r.end()) r.push_back(x);
  while (static_cast<int>(r.size()) < count && static_cast<int64_t>(r.size()) < n) {
    const int64_t x = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
    if (std::find(r.begin(), r.end(), x) == r.end()) r.push_back(x);
  }
  return r;
}

// Large shapes (batch 1): FlashAttention's rule against the fp64 reference on sampled rows (dQ on
// query rows, dK and dV on key rows), as the forward's large test does:
//   max|g - g_ref| <= 2 * max|g_same - g_ref| + 1e-5 + the fp32 envelope of dS (reference.h),
// over the sampled rows of every head. Every element is also checked written and finite.
void check_large(const BCase& c, uint64_t seed) {
  INFO(c.str());
  REQUIRE(c.batch == 1);
  BProblem pb(c, seed);
  pb.poison();
  pb.run();
  const auto g = pb.grads();
  check_writes(pb, g);
  std::mt19937_64 rng(seed);
  const std::vector<int64_t> rq = sample_rows(c.sq, 24, rng), rk = sample_rows(c.sk, 24, rng);
  const RowGrads ref = sampled_backward(pb, rq, rk, flashptx::Round::kNone);
  const RowGrads same = sampled_backward(
      pb, rq, rk, c.dtype == FLASHPTX_BF16 ? flashptx::Round::kBF16 : flashptx::Round::kFP16);
  struct G { const char* name; const std::vector<uint16_t>& x; const Strides& st; const std::vector<int64_t>& rows;
             int64_t heads, cols; const std::vector<double>& r; const std::vector<double>& s; const std::vector<double>* env; };
  const G gs[] = {{"dQ", g.dq, pb.sq_, rq, c.hq, c.d, ref.dq, same.dq, &ref.dq_env},
                  {"dK", g.dk, pb.sk_, rk, c.hkv, c.d, ref.dk, same.dk, &ref.dk_env},
                  {"dV", g.dv, pb.sv_, rk, c.hkv, c.d_v(), ref.dv, same.dv, nullptr}};
  for (const G& x : gs) {
    double err = 0, env = 0;
    for (size_t n = 0; n < x.rows.size(); ++n)
      for (int64_t h = 0; h < x.heads; ++h)
        for (int64_t e = 0; e < x.cols; ++e) {
          const size_t at = (n * x.heads + h) * c.d + e;
          const double got = from_storage(c.dtype, x.x[x.rows[n] * x.st.s + h * x.st.h + e]);
          const double d = std::fabs(got - x.r[at]);
          err = std::isnan(d) ? INFINITY : std::max(err, d);
          if (x.env) env = std::max(env, (*x.env)[at]);
        }
    const double tol = 2 * max_diff(x.s, x.r) + 1e-5 + env;
    CHECK_MESSAGE(err <= tol, c.str() << ": sampled max|" << x.name << " - ref| = " << err << " > " << tol
                                      << " (same-dtype " << max_diff(x.s, x.r) << ", fp32 envelope " << env << ")");
  }
}


// On the simulator: pb's gradients again under `n` other scheduler policies and seeds
// (tests/sim/sim_schedule.h), each bit for bit equal to `first`, the default schedule's (on a GPU,
// repeated launches vary the schedule instead).
void check_same_under_policies(BProblem& pb, const BProblem::Grads& first, int n) {
  for (int i = 0; i < n; ++i) {
    const SimPolicy& sp = kSimPolicies[i];
    SimSchedule schedule(sp);
    pb.poison();
    pb.run();
    const auto g = pb.grads();
    CHECK_MESSAGE((g.dq == first.dq && g.dk == first.dk && g.dv == first.dv),
                  pb.c.str() << ": under " << SimSchedule::name(sp) << " not bitwise equal to round-robin's");
  }
}

// The cases, each over a list of head dims: the d64/d128 test cases run them as they always did
// (same seeds), the d256 ones (named "d256: ...", so that `-tc='*d256*'` selects them alone:
// tools/gpu_d256_check.sh) run the same cases at d256 with their own seeds.
using Dims = std::initializer_list<int64_t>;
// Each case function's dv (0: V's head dim is d) is BCase::dv of every case it runs: (192, 128).

void small_shapes(Dims dims, uint64_t seed, int64_t dv = 0) {
  if (on_simulator()) {
    // On the simulator: ragged tails in both lengths (a partial query and a partial key block, and
    // with d128/d256 several query blocks through the two-stage ring), causal and not, GQA 4 and
    // MHA, both dtypes, batch 2, the deterministic mode (checked bit for bit against the release
    // library, which the simulator schedules with the random policy) and the atomic one.
    const std::pair<int64_t, int64_t> sim_shapes[] = {{113, 203}, {203, 113}};
    for (int64_t d : dims)
      for (bool causal : {false, true}) {
        const auto [sq, sk] = sim_shapes[causal];
        BCase c{2, sq, sk, causal ? 4 : 1, 1, d, causal, causal ? FLASHPTX_FP16 : FLASHPTX_BF16};
        c.deterministic = causal == (d == 128);
        c.dv = dv;
        check_case(c, seed++);
      }
    return;
  }
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {1, 239}, {239, 1}, {17, 17}, {113, 203}, {128, 128}};
  for (auto [sq, sk] : shapes)
    for (int64_t d : dims)
      for (bool causal : {false, true})
        for (int64_t ratio : {1, 4, 8})
          for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16}) {
            BCase c{2, sq, sk, ratio, 1, d, causal, t};
            c.deterministic = (seed % 2) == 0;
            c.dv = dv;
            check_case(c, seed++);
          }
}

void medium_shapes(Dims dims, uint64_t seed, int64_t dv = 0) {
  if (on_simulator()) {
    // On the simulator: one unequal shape per head dim (several key and query blocks, ragged in
    // both), GQA 2, causal (deterministic) at d128, not (atomic) at d64 and d256.
    for (int64_t d : dims) {
      BCase c{1, 257, 390, 4, 2, d, d == 128, FLASHPTX_BF16};
      c.deterministic = c.causal;
      c.dv = dv;
      check_case(c, seed++);
    }
    return;
  }
  const std::pair<int64_t, int64_t> shapes[] = {{300, 517}, {517, 300}, {129, 384}, {384, 129}, {64, 500}};
  for (auto [sq, sk] : shapes)
    for (int64_t d : dims)
      for (bool causal : {false, true}) {
        BCase c{1, sq, sk, 4, 2, d, causal, FLASHPTX_BF16};
        c.deterministic = causal;
        c.dv = dv;
        check_case(c, seed++);
      }
}

void strided_layouts(Dims dims, uint64_t seed, int64_t dv = 0) {
  for (Layout l : {Layout::kPadded, Layout::kHeadMajor})
    for (int64_t d : dims)
      for (bool causal : {false, true}) {
        // On the simulator: one shape per layout (causal with padded rows, not with head-major).
        if (on_simulator() && causal != (l == Layout::kPadded)) continue;
        BCase c = on_simulator() ? BCase{2, 100, 150, 2, 1, d, causal, FLASHPTX_FP16, l}
                                 : BCase{2, 233, 317, 4, 2, d, causal, FLASHPTX_FP16, l};
        c.deterministic = true;
        c.dv = dv;
        check_case(c, seed++);
      }
}

void scale_and_mqa(Dims dims, uint64_t seed) {
  const bool sim = on_simulator();  // smaller shapes there, the same masks and head ratios
  for (int64_t d : dims) {
    BCase a = sim ? BCase{1, 100, 150, 8, 1, d, true, FLASHPTX_BF16} : BCase{1, 200, 300, 8, 1, d, true, FLASHPTX_BF16};
    a.softmax_scale = 0.37f;
    check_case(a, seed++);
    BCase b = sim ? BCase{1, 130, 200, 2, 1, d, false, FLASHPTX_BF16} : BCase{1, 257, 384, 2, 1, d, false, FLASHPTX_BF16};
    b.input_scale = 6.f;
    b.deterministic = true;
    check_case(b, seed++);
  }
}

// The causal shape with more queries than keys: rows 0 .. sq - sk - 1 see no key (on the
// simulator 150 x 50, its 100 leading rows; on a GPU 300 x 100).
BCase masked_rows_case(int64_t d) {
  return flashptx_test::on_simulator() ? BCase{1, 150, 50, 2, 2, d, true, FLASHPTX_BF16}
                                       : BCase{1, 300, 100, 2, 2, d, true, FLASHPTX_BF16};
}

void edge_sizes(Dims dims, uint64_t seed, int64_t dv = 0) {
  for (int64_t d : dims) {
    BCase m = masked_rows_case(d);
    m.dv = dv;
    check_case(m, seed++);
    BCase ca{2, 0, 77, 4, 2, d, false, FLASHPTX_BF16};
    ca.dv = dv;
    BProblem a(ca, seed++);
    a.poison();
    a.run();
    const auto ga = a.grads();
    for (int64_t i = 0; i < 2 * 77 * 2 * d; ++i) REQUIRE(from_storage(FLASHPTX_BF16, ga.dk[i]) == 0.f);
    for (int64_t i = 0; i < 2 * 77 * 2 * ca.d_v(); ++i) REQUIRE(from_storage(FLASHPTX_BF16, ga.dv[i]) == 0.f);
    for (size_t i = static_cast<size_t>(2 * 77 * 2 * ca.d_v()); i < ga.dv.size(); ++i) REQUIRE(ga.dv[i] == kPoison);
    BCase cb{2, 55, 0, 4, 2, d, true, FLASHPTX_FP16};
    cb.dv = dv;
    BProblem b(cb, seed++);
    b.poison();
    b.run();
    const auto gb = b.grads();
    for (int64_t i = 0; i < 2 * 55 * 4 * d; ++i) REQUIRE(from_storage(FLASHPTX_FP16, gb.dq[i]) == 0.f);
  }
}

void deterministic_100(Dims dims, uint64_t seed, int64_t dv = 0) {
  for (int64_t d : dims)
    for (bool causal : {false, true}) {
      BCase c{2, 1000, 1000, 8, 2, d, causal, FLASHPTX_BF16};
      // On the simulator: several query and key blocks with ragged tails, GQA 2, and instead of 100
      // launches under one schedule, the same launch under three (policies and seeds).
      if (on_simulator()) c = BCase{1, 140, 203, 2, 1, d, causal, FLASHPTX_BF16};
      c.deterministic = true;
      c.dv = dv;
      INFO(c.str());
      BProblem pb(c, seed++);
      pb.poison();
      pb.run();
      const auto first = pb.grads();
      if (on_simulator()) {
        check_same_under_policies(pb, first, 2);
        continue;
      }
      int mismatches = 0;
      for (int i = 0; i < 100; ++i) {
        REQUIRE_MESSAGE(flashptx_bwd(&pb.bwd, nullptr) == FLASHPTX_OK, flashptx_last_error());
        if (i % 10 == 9 || i == 0) {  // every launch writes the same buffers: compare a sample of them
          CUDA_REQUIRE(cudaDeviceSynchronize());
          const auto g = pb.grads();
          if (g.dq != first.dq || g.dk != first.dk || g.dv != first.dv) ++mismatches;
        }
      }
      CUDA_REQUIRE(cudaDeviceSynchronize());
      const auto last = pb.grads();
      CHECK_MESSAGE(mismatches == 0, c.str() << ": " << mismatches << " sampled launches differed");
      CHECK(last.dq == first.dq);
      CHECK(last.dk == first.dk);
      CHECK(last.dv == first.dv);
    }
}

// The deterministic mode's dQ orders on mask-free shapes, GQA, ragged tails: as many key blocks as
// query blocks and fewer (both orders; the plan picks the rotated one), and more (the plan keeps the
// ascending one; rotated is refused). Each within the fp64 rule and 20 launches bitwise equal.
struct OrderShape { BCase c; bool rotated; };

// The plan's order for pb, and the rotated order refused where it must be.
void check_plan_order(const BProblem& pb, bool rotated) {
  flashptx::BwdPlan plan;
  std::string msg;
  flashptx::Device dev;
  REQUIRE(flashptx::current_device(&dev, &msg) == FLASHPTX_OK);
  REQUIRE_MESSAGE(flashptx::plan_bwd(pb.bwd, flashptx::BwdOptions{}, dev, &plan, &msg) == FLASHPTX_OK, msg);
  CHECK_MESSAGE(plan.dq_rotated == rotated, pb.c.str() << ": the plan's dQ order");
  flashptx::BwdOptions rot;
  rot.dq_order = flashptx::DqOrder::kRotated;
  if (!rotated) CHECK(flashptx::bwd(&pb.bwd, rot, nullptr) == FLASHPTX_ERR_BAD_OPTION);
}

// On the simulator (4 SMs; a rotated walk needs a head's key blocks resident together, src/plan.cpp
// dq_order_rotated_ok): in blocks of the head dim's kernel (src/sm90/fa3_bwd.cu: d64 128 x 128, d128
// 64 x 128, d256 64 x 64), 2 query and 2 key blocks, 3 and 1 (MQA), 1 and 3 (ascending only), every
// length ragged. One forward per shape; each order's gradients under the fp64 rule, then bit for bit
// the same under a second scheduler policy and seed.
void deterministic_orders_sim(int64_t d, uint64_t seed, int64_t dv) {
  const int64_t kd = flashptx::fa3::bwd_kernel_head_dim(static_cast<int>(d));  // 96 -> 128, 192 -> 256
  const int64_t bm = kd == 64 ? 128 : 64, bn = kd == 256 ? 64 : 128;
  const OrderShape shapes[] = {{{1, 2 * bm - 11, 2 * bn - 11, 4, 2, d, false, FLASHPTX_BF16}, true},
                               {{1, 3 * bm - 5, bn - 30, 4, 1, d, false, FLASHPTX_BF16}, true},
                               {{1, bm - 20, 3 * bn - 7, 2, 2, d, false, FLASHPTX_FP16}, false}};
  for (const OrderShape& sh : shapes) {
    BCase c = sh.c;
    c.deterministic = true;
    c.dv = dv;
    INFO(c.str());
    BProblem pb(c, seed++);
    check_plan_order(pb, sh.rotated);
    for (flashptx::DqOrder order : {flashptx::DqOrder::kAscending, flashptx::DqOrder::kRotated}) {
      if (order == flashptx::DqOrder::kRotated && !sh.rotated) continue;
      pb.c.dq_order = order;
      INFO(pb.c.str());
      pb.poison();
      pb.run();
      const auto g = pb.grads();
      check_writes(pb, g);
      check_rule(pb, g, "test build");
      check_same_under_policies(pb, g, 1);
    }
  }
}

void deterministic_orders(Dims dims, uint64_t seed, int64_t dv = 0) {
  for (int64_t d : dims) {
    if (on_simulator()) {
      deterministic_orders_sim(d, seed, dv);
      seed += 8;
      continue;
    }
    const OrderShape shapes[] = {{{1, 1000, 1000, 4, 2, d, false, FLASHPTX_BF16}, true},
                                 {{1, 1500, 333, 4, 1, d, false, FLASHPTX_BF16}, true},
                                 {{1, 300, 1400, 2, 2, d, false, FLASHPTX_FP16}, false}};
    for (const OrderShape& sh : shapes) {
      BCase c = sh.c;
      c.deterministic = true;
      c.dv = dv;
      {
        INFO(c.str());
        BProblem pb(c, seed);
        check_plan_order(pb, sh.rotated);
      }
      for (flashptx::DqOrder order : {flashptx::DqOrder::kAscending, flashptx::DqOrder::kRotated}) {
        if (order == flashptx::DqOrder::kRotated && !sh.rotated) continue;
        c.dq_order = order;
        check_case(c, seed);
        INFO(c.str());
        BProblem pb(c, seed++);
        pb.poison();
        pb.run();
        const auto first = pb.grads();
        for (int i = 0; i < 20; ++i) pb.run();
        const auto last = pb.grads();
        CHECK_MESSAGE((last.dq == first.dq && last.dk == first.dk && last.dv == first.dv),
                      c.str() << ": 20 launches not bitwise equal");
      }
    }
  }
}

}  // namespace

TEST_SUITE("gpu_sm90 fa3 backward") {

TEST_CASE("small shapes: every head dim, causal and not, head ratios 1/4/8, bf16 and fp16") {
  small_shapes({64, 128}, 1);
}

TEST_CASE("medium shapes: several key and query blocks, unequal lengths, GQA") { medium_shapes({64, 128}, 1000); }

TEST_CASE("strided layouts: padded rows and head-major, the gradients through them") { strided_layouts({64, 128}, 2000); }

TEST_CASE("a custom softmax scale, large-magnitude scores, MQA") { scale_and_mqa({64, 128}, 3000); }

TEST_CASE("edge sizes: fully masked rows, seqlen_q 0 (dK = dV = 0), seqlen_k 0 (dQ = 0)") {
  check_case(masked_rows_case(128), 4000);
  for (int64_t d : {64, 128}) {
    BProblem a(BCase{2, 0, 77, 4, 2, d, false, FLASHPTX_BF16}, 4001);
    a.poison();
    a.run();
    const auto ga = a.grads();
    for (int64_t i = 0; i < 2 * 77 * 2 * d; ++i) {
      REQUIRE(from_storage(FLASHPTX_BF16, ga.dk[i]) == 0.f);
      REQUIRE(from_storage(FLASHPTX_BF16, ga.dv[i]) == 0.f);
    }
    BProblem b(BCase{2, 55, 0, 4, 2, d, true, FLASHPTX_FP16}, 4002);
    b.poison();
    b.run();
    const auto gb = b.grads();
    for (int64_t i = 0; i < 2 * 55 * 4 * d; ++i) REQUIRE(from_storage(FLASHPTX_FP16, gb.dq[i]) == 0.f);
  }
}

TEST_CASE("large shapes (1k-8k): the fp64 rule on sampled rows") {
  uint64_t seed = 5000;
  const BCase cases[] = {
      {1, 1000, 1000, 4, 4, 128, false, FLASHPTX_BF16}, {1, 1000, 1000, 4, 4, 64, true, FLASHPTX_BF16},
      {1, 4097, 4097, 2, 2, 128, true, FLASHPTX_BF16},  {1, 4097, 4097, 2, 1, 64, false, FLASHPTX_FP16},
      {1, 8192, 8192, 2, 2, 128, true, FLASHPTX_BF16},
  };
  if (on_simulator()) {
    // On the simulator: the same sampled-row check at 260 x 260 (three blocks of 128, the last of
    // four rows), causal and not, GQA 2.
    check_large(BCase{1, 260, 260, 1, 1, 128, false, FLASHPTX_BF16}, seed++);
    check_large(BCase{1, 260, 260, 2, 1, 64, true, FLASHPTX_FP16}, seed++);
    return;
  }
  for (const BCase& c : cases) check_large(c, seed++);
}

TEST_CASE("the release library: the fast backward under the fp64 rule, the deterministic one bit for bit") {
  uint64_t seed = 5500;
  if (on_simulator()) {
    // On the simulator (where the release library runs under the random policy): each head dim once,
    // the atomic backward under the fp64 rule at d64 and d256, the deterministic one bit for bit at d128.
    for (int64_t d : {64, 128, 256}) {
      BCase c{1, 130, 203, 2, 1, d, d != 64, d == 128 ? FLASHPTX_FP16 : FLASHPTX_BF16};
      c.deterministic = d == 128;
      check_release(c, seed++);
    }
    return;
  }
  for (int64_t d : {64, 128, 256})
    for (bool causal : {false, true})
      for (bool deterministic : {false, true}) {
        BCase c{2, 300, 517, 4, 2, d, causal, d == 128 ? FLASHPTX_FP16 : FLASHPTX_BF16};
        c.deterministic = deterministic;
        check_release(c, seed++);
      }
}

TEST_CASE("deterministic mode: 100 launches bitwise equal, every head dim, causal and not, with GQA") {
  deterministic_100({64, 128}, 6000);
}

TEST_CASE("deterministic mode: the ascending and the rotated dQ orders, fp64 rule and bitwise stable") {
  deterministic_orders({64, 128}, 6500);
}

// ---- d256 (kSplitHeadDim: 64 x 64 tiles, the head dim split between the MMA warpgroups) ----------
// A thread that has made no CUDA call has no current context: the library's driver calls (the tensor
// maps' encoding) must still find the runtime's, as its runtime calls do (PyTorch runs the backward
// on such a thread: its autograd worker, when every allocation there came from the cached pool).
TEST_CASE("a call from a thread that has made no CUDA call: the forward and the backward as on the main thread") {
  BCase c{1, 200, 300, 4, 2, 128, true, FLASHPTX_BF16};
  c.deterministic = true;
  INFO(c.str());
  BProblem pb(c, 9100);
  pb.poison();
  pb.run();
  const auto first = pb.grads();
  pb.poison();
  flashptx_status fwd_status = FLASHPTX_ERR_CUDA, bwd_status = FLASHPTX_ERR_CUDA;
  std::string why;
  std::thread fresh([&] {
    fwd_status = flashptx_fwd(&pb.fwd, nullptr);
    bwd_status = fwd_status == FLASHPTX_OK ? flashptx_bwd(&pb.bwd, nullptr) : fwd_status;
    why = flashptx_last_error();
  });
  fresh.join();
  REQUIRE_MESSAGE(fwd_status == FLASHPTX_OK, why);
  REQUIRE_MESSAGE(bwd_status == FLASHPTX_OK, why);
  CUDA_REQUIRE(cudaDeviceSynchronize());
  const auto again = pb.grads();
  CHECK(again.dq == first.dq);
  CHECK(again.dk == first.dk);
  CHECK(again.dv == first.dv);
}

TEST_CASE("d256: small shapes, causal and not, head ratios 1/4/8, bf16 and fp16") { small_shapes({256}, 7000); }
TEST_CASE("d256: medium shapes, several key and query blocks, unequal lengths, GQA") { medium_shapes({256}, 7500); }
TEST_CASE("d256: strided layouts, padded rows and head-major") { strided_layouts({256}, 7600); }
TEST_CASE("d256: a custom softmax scale, large-magnitude scores, MQA") { scale_and_mqa({256}, 7700); }
TEST_CASE("d256: edge sizes, fully masked rows, seqlen_q 0, seqlen_k 0") { edge_sizes({256}, 7800); }
TEST_CASE("d256: large shapes (1k-8k), the fp64 rule on sampled rows") {
  uint64_t seed = 7900;
  const BCase cases[] = {
      {1, 1000, 1000, 4, 4, 256, false, FLASHPTX_BF16},
      {1, 1000, 1000, 4, 4, 256, true, FLASHPTX_FP16},
      {1, 4097, 4097, 2, 2, 256, true, FLASHPTX_BF16},
      {1, 4097, 4097, 2, 1, 256, false, FLASHPTX_FP16},
      {1, 8192, 8192, 2, 2, 256, true, FLASHPTX_BF16},
  };
  if (on_simulator()) {
    // On the simulator: the same sampled-row check at 260 x 260 (several 64-row blocks, ragged), causal.
    check_large(BCase{1, 260, 260, 1, 1, 256, true, FLASHPTX_BF16}, seed++);
    return;
  }
  for (const BCase& c : cases) check_large(c, seed++);
}
TEST_CASE("d256: deterministic mode, 100 launches bitwise equal, causal and not, with GQA") {
  deterministic_100({256}, 8000);
}
TEST_CASE("d256: deterministic mode, the ascending and the rotated dQ orders") { deterministic_orders({256}, 8500); }

// Head dims 96 and 192 (docs/DECISIONS.md, "Backward head dims 96 and 192"): the d128 and d256
// kernels over zero columns past the caller's head dim. The same cases as above with their own
// seeds; the strided layouts' padded rows (poisoned, checked untouched by check_writes) are where a
// write past a row's last real column would land.
TEST_CASE("head dims 96 and 192: small shapes, causal and not, GQA, bf16 and fp16") { small_shapes({96, 192}, 9000); }
TEST_CASE("head dims 96 and 192: medium shapes, unequal lengths, GQA") { medium_shapes({96, 192}, 9100); }
TEST_CASE("head dims 96 and 192: strided layouts, padded rows and head-major") { strided_layouts({96, 192}, 9200); }
TEST_CASE("head dims 96 and 192: edge sizes, fully masked rows, seqlen_q 0, seqlen_k 0") { edge_sizes({96, 192}, 9300); }
TEST_CASE("head dims 96 and 192: deterministic mode, bitwise equal, causal and not, with GQA") {
  deterministic_100({96, 192}, 9400);
}
TEST_CASE("head dims 96 and 192: deterministic mode, the ascending and the rotated dQ orders") {
  deterministic_orders({96, 192}, 9500);
}

// (head_dim, head_dim_v) = (192, 128) (docs/DECISIONS.md, "The backward at (192, 128)"): the d256
// kernels with Q and K at 192 columns and V, O, dO, dV at 128, the reference on V and dO widened with
// zero columns (BProblem::ref_inputs). The cases above with their own seeds, and the wide rows.
TEST_CASE("head dims (192, 128): small shapes, causal and not, GQA, bf16 and fp16") { small_shapes({192}, 9600, 128); }
TEST_CASE("head dims (192, 128): medium shapes, unequal lengths, GQA") { medium_shapes({192}, 9610, 128); }
TEST_CASE("head dims (192, 128): strided layouts, padded rows and head-major") { strided_layouts({192}, 9620, 128); }
TEST_CASE("head dims (192, 128): edge sizes, fully masked rows, seqlen_q 0, seqlen_k 0") { edge_sizes({192}, 9630, 128); }
TEST_CASE("head dims (192, 128): deterministic mode, bitwise equal, causal and not, with GQA") {
  deterministic_100({192}, 9640, 128);
}
TEST_CASE("head dims (192, 128): deterministic mode, the ascending and the rotated dQ orders") {
  deterministic_orders({192}, 9650, 128);
}
// Every tensor's head row 256 elements wide (the kernel's head dim): dV's columns 128..255 and dQ's
// and dK's 192..255, where a store of the kernel's zero columns would land (the dV map's clip
// without GQA; the dK/dV postprocess's bound under GQA; the dQ postprocess's bound), are poisoned and
// checked untouched (check_writes); the inputs' pads (V, dO past 128, Q, K past 192: 0.5; O past 128:
// 0x3C3C) are where a read past the tensors' own columns would land, and the fp64 rule would see them.
TEST_CASE("head dims (192, 128): wide rows, every column past the tensors' own untouched and unread") {
  const BCase cases[] = {
      {2, 113, 203, 4, 2, 192, true, FLASHPTX_BF16},   // GQA 2: the fp32 accumulators and the postprocess
      {1, 150, 130, 2, 2, 192, false, FLASHPTX_FP16},  // MHA: the TMA stores from the epilogue
  };
  uint64_t seed = 9660;
  for (BCase c : cases) {
    c.dv = 128;
    c.row_width = 256;
    c.deterministic = c.causal;
    check_case(c, seed++);
  }
}

}  // TEST_SUITE

// ---- the sliding window and the softcap (the fa3_bwd_local kernels, src/sm90/fa3_bwd_local.cu) ----
namespace {

// The plan picks the local kernel for a bounded window or a softcap, else the plain one.
void check_local_plan(const BProblem& pb) {
  flashptx::BwdPlan plan;
  std::string err;
  const flashptx::Device dev{0, 90, 132};
  REQUIRE_MESSAGE(flashptx::plan_bwd(pb.bwd, flashptx::BwdOptions{}, dev, &plan, &err) == FLASHPTX_OK, err);
  const std::string name = plan.main.kernel->name;
  const auto mod = flashptx::fwd_modifiers(pb.bwd.window, pb.bwd.window_left, pb.bwd.window_right, pb.bwd.causal != 0,
                                           pb.bwd.softcap, pb.bwd.seqlen_q, pb.bwd.seqlen_k);
  CHECK_MESSAGE((name.find("fa3_bwd_local_") == 0) == mod.local, pb.c.str() << ": planned " << name);
}

// Window and softcap shapes (sq, sk, left, right, causal, softcap, heads): a window narrower than a
// block, one as wide as the sequence, asymmetric bounds, causal + window, the softcap alone and
// with a window, GQA, seqlen_q > seqlen_k and < seqlen_k, ragged tails everywhere.
struct LocalShape {
  int64_t sq, sk, left, right;
  bool causal;
  float softcap;
  int64_t hq, hkv;
};
void window_softcap(Dims dims, uint64_t seed, int64_t dv = 0) {
  const bool sim = on_simulator();
  const LocalShape sim_shapes[] = {
      {150, 203, 20, 10, false, 0.f, 2, 1},   // narrower than a block, both sides
      {203, 150, 200, 0, false, 0.f, 2, 2},   // wider than the sequence on the left, right 0
      {150, 203, 0, 70, false, 0.f, 4, 1},    // asymmetric, GQA 4
      {203, 203, 60, -1, true, 0.f, 2, 1},    // causal + window
      {150, 203, -1, -1, false, 4.f, 2, 1},   // the softcap alone
      {203, 150, 40, 5, false, 2.5f, 4, 2},   // softcap + window, GQA 2, seqlen_q > seqlen_k
  };
  const LocalShape gpu_shapes[] = {
      {1000, 1100, 30, 10, false, 0.f, 4, 1},  {1100, 1000, 300, 0, false, 0.f, 2, 2},
      {513, 1000, 0, 200, false, 0.f, 4, 2},   {1000, 1000, 256, -1, true, 0.f, 4, 1},
      {777, 999, -1, -1, false, 5.f, 4, 1},    {999, 777, 100, 20, false, 3.f, 4, 2},
      {1000, 1000, 998, 998, false, 0.f, 2, 1}, {333, 2000, 1, 1, true, 1.f, 2, 1},
  };
  const LocalShape* shapes = sim ? sim_shapes : gpu_shapes;
  const int n = sim ? 6 : 8;
  for (int64_t d : dims)
    for (int i = 0; i < n; ++i) {
      // On the simulator each head dim runs two of the shapes (every shape over the three dims).
      if (sim && i % 3 != (d == 64 ? 0 : d == 128 ? 1 : 2)) continue;
      const LocalShape& x = shapes[i];
      BCase c{1, x.sq, x.sk, x.hq, x.hkv, d, x.causal, (i + d / 64) % 2 ? FLASHPTX_FP16 : FLASHPTX_BF16};
      c.window_left = x.left;
      c.window_right = x.right;
      c.softcap = x.softcap;
      if (x.softcap != 0.f) c.input_scale = 2.f;  // scores large enough that the cap bends them
      c.deterministic = (i % 2) == 1;
      c.dv = dv;
      INFO(c.str());
      BProblem pb(c, seed++);
      check_local_plan(pb);
      pb.poison();
      pb.run();
      const auto g = pb.grads();
      check_writes(pb, g);
      check_rule(pb, g, "test build");
      if (c.deterministic && release_lib().loaded()) {  // the release library: the same bits
        pb.poison();
        pb.run_release();
        check_same_bits(c, pb.grads(), g);
      }
    }
}

// Deterministic mode with a window: repeated launches bitwise equal (the simulator: under other
// schedules), GQA, causal + window.
void window_deterministic(Dims dims, uint64_t seed) {
  for (int64_t d : dims)
    for (bool causal : {false, true}) {
      BCase c{2, 1000, 1000, 4, 2, d, causal, FLASHPTX_BF16};
      if (on_simulator()) c = BCase{1, 140, 203, 2, 1, d, causal, FLASHPTX_FP16};
      c.window_left = causal ? 70 : 30;
      c.window_right = causal ? -1 : 60;
      c.softcap = causal ? 0.f : 3.f;
      c.deterministic = true;
      INFO(c.str());
      BProblem pb(c, seed++);
      pb.poison();
      pb.run();
      const auto first = pb.grads();
      check_rule(pb, first, "test build");
      if (on_simulator()) {
        check_same_under_policies(pb, first, 2);
        continue;
      }
      for (int i = 0; i < 20; ++i) {
        pb.poison();
        pb.run();
        const auto g = pb.grads();
        CHECK_MESSAGE((g.dq == first.dq && g.dk == first.dk && g.dv == first.dv), c.str() << ": launch " << i << " differs");
      }
    }
}

}  // namespace

TEST_SUITE("gpu_sm90 fa3 backward") {
TEST_CASE("window and softcap: every head dim, both dtypes, GQA, unequal lengths, deterministic and not") {
  window_softcap({64, 128, 256}, 9000);
}
TEST_CASE("window and softcap: deterministic mode, bitwise equal launches, causal + window, GQA") {
  window_deterministic({64, 128, 256}, 9500);
}
TEST_CASE("window and softcap: head dims 96 and 192, the d128 and d256 local kernels over zero columns") {
  window_softcap({96, 192}, 9700);
}
TEST_CASE("window and softcap: head dims (192, 128), the d256 local kernels with V at 128 columns") {
  window_softcap({192}, 9760, 128);
}
}
