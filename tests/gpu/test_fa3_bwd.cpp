// FA3 backward on the GPU (tools/guide/PROTOCOLS.md, "The backward relay"): gradients against the
// fp64 reference (CPU) on small and medium shapes and against an fp32 GPU reference on large ones,
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
#include <vector>

#include "include/flashptx.h"
#include "src/internal.h"
#include "src/plan.h"
#include "tests/gpu/release_lib.h"
#include "tests/gpu/test_util.h"
#include "tools/support/gpu_reference.h"
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
  std::string str() const {
    return "B=" + std::to_string(batch) + " Sq=" + std::to_string(sq) + " Sk=" + std::to_string(sk) +
           " Hq=" + std::to_string(hq) + " Hkv=" + std::to_string(hkv) + " d=" + std::to_string(d) +
           (causal ? " causal" : "") + (dtype == FLASHPTX_BF16 ? " bf16" : " fp16") + layout_name(layout) +
           (deterministic ? " deterministic" : "") +
           (dq_order == flashptx::DqOrder::kAscending ? " ascending-dQ"
            : dq_order == flashptx::DqOrder::kRotated ? " rotated-dQ"
                                                      : "") +
           (softmax_scale != 0.f ? " scale=" + std::to_string(softmax_scale) : "") +
           (input_scale != 1.f ? " qscale=" + std::to_string(input_scale) : "");
  }
};

// One problem: inputs on host and device, the forward run once (O, LSE), outputs with guards.
struct BProblem {
  BCase c;
  Strides sq_, sk_;
  std::vector<uint16_t> q, k, v, dout;
  std::unique_ptr<DeviceBuf> dq_in, dk_in, dv_in, ddo, dout_o, dlse, ddq, ddk, ddv, dws;
  flashptx_fwd_params fwd{};
  flashptx_bwd_params bwd{};

  BProblem(const BCase& cs, uint64_t seed) : c(cs) {
    sq_ = make_strides(c.layout, c.batch, c.sq, c.hq, c.d);
    sk_ = make_strides(c.layout, c.batch, c.sk, c.hkv, c.d);
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    auto fill = [&](std::vector<uint16_t>& x, const Strides& st, int64_t seq, int64_t heads, float scale) {
      x.assign(static_cast<size_t>(std::max<int64_t>(st.total, 1)), to_storage(c.dtype, 0.5f));
      for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t s = 0; s < seq; ++s)
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t e = 0; e < c.d; ++e) x[b * st.b + s * st.s + h * st.h + e] = to_storage(c.dtype, scale * nd(rng));
    };
    fill(q, sq_, c.sq, c.hq, c.input_scale);
    fill(k, sk_, c.sk, c.hkv, 1.f);
    fill(v, sk_, c.sk, c.hkv, 1.f);
    fill(dout, sq_, c.sq, c.hq, 1.f);
    auto upload = [&](std::unique_ptr<DeviceBuf>& d, const std::vector<uint16_t>& h) {
      d.reset(new DeviceBuf(h.size() * 2));
      CUDA_REQUIRE(cudaMemcpy(d->p, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
    };
    upload(dq_in, q);
    upload(dk_in, k);
    upload(dv_in, v);
    upload(ddo, dout);
    const size_t nq = static_cast<size_t>(std::max<int64_t>(sq_.total, 1)), nk = static_cast<size_t>(std::max<int64_t>(sk_.total, 1));
    dout_o.reset(new DeviceBuf(nq * 2));
    dlse.reset(new DeviceBuf(static_cast<size_t>(std::max<int64_t>(c.batch * c.hq * c.sq, 1)) * 4));
    ddq.reset(new DeviceBuf((nq + kGuard) * 2));
    ddk.reset(new DeviceBuf((nk + kGuard) * 2));
    ddv.reset(new DeviceBuf((nk + kGuard) * 2));

    // The forward, as training runs it: O and LSE from flashptx_fwd.
    fwd = flashptx_fwd_params{};
    fwd.q = dq_in->p; fwd.k = dk_in->p; fwd.v = dv_in->p; fwd.o = dout_o->p;
    fwd.lse = static_cast<float*>(dlse->p);
    fwd.batch = c.batch; fwd.seqlen_q = c.sq; fwd.seqlen_k = c.sk;
    fwd.heads_q = c.hq; fwd.heads_kv = c.hkv; fwd.head_dim = c.d;
    fwd.q_batch_stride = sq_.b; fwd.q_row_stride = sq_.s; fwd.q_head_stride = sq_.h;
    fwd.k_batch_stride = sk_.b; fwd.k_row_stride = sk_.s; fwd.k_head_stride = sk_.h;
    fwd.v_batch_stride = sk_.b; fwd.v_row_stride = sk_.s; fwd.v_head_stride = sk_.h;
    fwd.o_batch_stride = sq_.b; fwd.o_row_stride = sq_.s; fwd.o_head_stride = sq_.h;
    fwd.q_dtype = fwd.k_dtype = fwd.v_dtype = fwd.o_dtype = c.dtype;
    fwd.causal = c.causal;
    fwd.softmax_scale = c.softmax_scale;
    if (c.sq > 0) {
      CUDA_REQUIRE(cudaMemset(dout_o->p, 0, dout_o->bytes));
      const flashptx_status s = flashptx_fwd(&fwd, nullptr);
      REQUIRE_MESSAGE(s == FLASHPTX_OK, flashptx_last_error());
      CUDA_REQUIRE(cudaDeviceSynchronize());
    }

    bwd = flashptx_bwd_params{};
    bwd.q = dq_in->p; bwd.k = dk_in->p; bwd.v = dv_in->p; bwd.o = dout_o->p; bwd.lse = fwd.lse; bwd.dout = ddo->p;
    bwd.dq = ddq->p; bwd.dk = ddk->p; bwd.dv = ddv->p;
    bwd.batch = c.batch; bwd.seqlen_q = c.sq; bwd.seqlen_k = c.sk;
    bwd.heads_q = c.hq; bwd.heads_kv = c.hkv; bwd.head_dim = c.d;
    bwd.q_batch_stride = bwd.o_batch_stride = bwd.do_batch_stride = bwd.dq_batch_stride = sq_.b;
    bwd.q_row_stride = bwd.o_row_stride = bwd.do_row_stride = bwd.dq_row_stride = sq_.s;
    bwd.q_head_stride = bwd.o_head_stride = bwd.do_head_stride = bwd.dq_head_stride = sq_.h;
    bwd.k_batch_stride = bwd.v_batch_stride = bwd.dk_batch_stride = bwd.dv_batch_stride = sk_.b;
    bwd.k_row_stride = bwd.v_row_stride = bwd.dk_row_stride = bwd.dv_row_stride = sk_.s;
    bwd.k_head_stride = bwd.v_head_stride = bwd.dk_head_stride = bwd.dv_head_stride = sk_.h;
    bwd.dtype = c.dtype;
    bwd.causal = c.causal;
    bwd.softmax_scale = c.softmax_scale;
    bwd.deterministic = c.deterministic;
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
    return flashptx_test::ref_problem(c.batch, c.sq, c.sk, c.hq, c.hkv, c.d, c.causal, c.softmax_scale);
  }
  flashptx::ref::TensorView view(const std::vector<uint16_t>& x, const Strides& st) const {
    return ref_view(x, c.dtype, st);
  }
};

// Every gradient element is finite; nothing outside the gradients (pads, guards) was written.
void check_writes(const BProblem& pb, const BProblem::Grads& g) {
  const BCase& c = pb.c;
  struct T { const char* name; const std::vector<uint16_t>& x; const Strides& st; int64_t seq, heads; };
  const T ts[] = {{"dQ", g.dq, pb.sq_, c.sq, c.hq}, {"dK", g.dk, pb.sk_, c.sk, c.hkv}, {"dV", g.dv, pb.sk_, c.sk, c.hkv}};
  for (const T& t : ts) {
    std::vector<char> is_out(t.x.size(), 0);
    int64_t bad = 0, clobbered = 0;
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t s = 0; s < t.seq; ++s)
        for (int64_t h = 0; h < t.heads; ++h)
          for (int64_t e = 0; e < c.d; ++e) {
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

// max|g - ref| over a gradient tensor (g through its strides, ref contiguous).
double max_err(const BProblem& pb, const std::vector<uint16_t>& g, const Strides& st, int64_t seq, int64_t heads,
               const std::vector<double>& ref) {
  double m = 0;
  const BCase& c = pb.c;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t s = 0; s < seq; ++s)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t e = 0; e < c.d; ++e) {
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

// The full check against the CPU fp64 reference (small and medium shapes).
void check_case(const BCase& c, uint64_t seed) {
  INFO(c.str());
  BProblem pb(c, seed);
  pb.poison();
  pb.run();
  const auto g = pb.grads();
  check_writes(pb, g);
  const auto rp = pb.ref_problem();
  const auto qv = pb.view(pb.q, pb.sq_), kv = pb.view(pb.k, pb.sk_), vv = pb.view(pb.v, pb.sk_),
             dov = pb.view(pb.dout, pb.sq_);
  const auto ref = flashptx::ref::backward(rp, qv, kv, vv, dov);
  const auto same = flashptx::ref::backward(rp, qv, kv, vv, dov,
                                            c.dtype == FLASHPTX_BF16 ? flashptx::Round::kBF16 : flashptx::Round::kFP16);
  static const std::vector<double> kNoEnvelope;
  struct G { std::string name; const std::vector<uint16_t>& x; const Strides& st; int64_t seq, heads;
             const std::vector<double>& r; const std::vector<double>& s; const std::vector<double>& env; };
  const G gs[] = {{"dQ", g.dq, pb.sq_, c.sq, c.hq, ref.dq, same.dq, ref.dq_env},
                  {"dK", g.dk, pb.sk_, c.sk, c.hkv, ref.dk, same.dk, ref.dk_env},
                  {"dV", g.dv, pb.sk_, c.sk, c.hkv, ref.dv, same.dv, kNoEnvelope}};
  for (const G& x : gs) {
    const double err = max_err(pb, x.x, x.st, x.seq, x.heads, x.r);
    double env = 0;
    for (double e : x.env) env = std::max(env, e);
    // FlashAttention's rule, plus the fp32 envelope of dS's cancellation (reference.h Backward).
    const double tol = 2 * max_diff(x.s, x.r) + 1e-5 + env;
    CHECK_MESSAGE(err <= tol, c.str() << ": max|" << x.name << " - ref| = " << err << " > " << tol << " (same-dtype "
                                      << max_diff(x.s, x.r) << ", fp32 envelope " << env << ")");
  }
  // The release library: in deterministic mode it must give the test build's bits (its C ABI takes
  // the plan's order: compared only when this case did too).
  if (c.deterministic && c.dq_order == flashptx::DqOrder::kAuto && release_lib().loaded()) {
    pb.poison();
    pb.run_release();
    const auto r = pb.grads();
    CHECK_MESSAGE(r.dq == g.dq, c.str() << ": the release library's dQ differs from the test build's");
    CHECK_MESSAGE(r.dk == g.dk, c.str() << ": the release library's dK differs from the test build's");
    CHECK_MESSAGE(r.dv == g.dv, c.str() << ": the release library's dV differs from the test build's");
  }
}

// Large shapes: against the fp32 GPU reference, every element.
void check_large(const BCase& c, uint64_t seed) {
  INFO(c.str());
  BProblem pb(c, seed);
  pb.poison();
  pb.run();
  const auto g = pb.grads();
  check_writes(pb, g);
  const int64_t nq = c.batch * c.sq * c.hq * c.d, nk = c.batch * c.sk * c.hkv * c.d;
  DeviceBuf rq(nq * 4), rk(nk * 4), rv(nk * 4), scratch(2 * c.batch * c.hq * c.sq * 4);
  CUDA_REQUIRE(flashptx::gpuref::attention_bwd(pb.bwd, static_cast<float*>(rq.p), static_cast<float*>(rk.p),
                                               static_cast<float*>(rv.p), static_cast<float*>(scratch.p), nullptr));
  CUDA_REQUIRE(cudaDeviceSynchronize());
  auto fetch = [](const DeviceBuf& b, int64_t n) {
    std::vector<float> h(static_cast<size_t>(n));
    REQUIRE(cudaMemcpy(h.data(), b.p, n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    return std::vector<double>(h.begin(), h.end());
  };
  struct G { std::string name; const std::vector<uint16_t>& x; const Strides& st; int64_t seq, heads; std::vector<double> r; };
  const G gs[] = {{"dQ", g.dq, pb.sq_, c.sq, c.hq, fetch(rq, nq)},
                  {"dK", g.dk, pb.sk_, c.sk, c.hkv, fetch(rk, nk)},
                  {"dV", g.dv, pb.sk_, c.sk, c.hkv, fetch(rv, nk)}};
  for (const G& x : gs) {
    double mag = 0;
    for (double r : x.r) mag = std::max(mag, std::fabs(r));
    const double err = max_err(pb, x.x, x.st, x.seq, x.heads, x.r);
    // bf16 gradients: 2^-8 relative rounding of P, dS and the output; 2^-5 of the largest magnitude
    // is a loose bound that a wrong block, mask, scale or missing contribution breaks by far.
    CHECK_MESSAGE(err <= std::ldexp(mag, -5) + 1e-4,
                  c.str() << ": max|" << x.name << " - gpuref| = " << err << ", max|ref| " << mag);
  }
}

// The cases, each over a list of head dims: the d64/d128 test cases run them as they always did
// (same seeds), the d256 ones (named "d256: ...", so that `-tc='*d256*'` selects them alone:
// tools/gpu_d256_check.sh) run the same cases at d256 with their own seeds.
using Dims = std::initializer_list<int64_t>;

void small_shapes(Dims dims, uint64_t seed) {
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {1, 239}, {239, 1}, {17, 17}, {113, 203}, {128, 128}};
  for (auto [sq, sk] : shapes)
    for (int64_t d : dims)
      for (bool causal : {false, true})
        for (int64_t ratio : {1, 4, 8})
          for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16}) {
            BCase c{2, sq, sk, ratio, 1, d, causal, t};
            c.deterministic = (seed % 2) == 0;
            check_case(c, seed++);
          }
}

void medium_shapes(Dims dims, uint64_t seed) {
  const std::pair<int64_t, int64_t> shapes[] = {{300, 517}, {517, 300}, {129, 384}, {384, 129}, {64, 500}};
  for (auto [sq, sk] : shapes)
    for (int64_t d : dims)
      for (bool causal : {false, true}) {
        BCase c{1, sq, sk, 4, 2, d, causal, FLASHPTX_BF16};
        c.deterministic = causal;
        check_case(c, seed++);
      }
}

void strided_layouts(Dims dims, uint64_t seed) {
  for (Layout l : {Layout::kPadded, Layout::kHeadMajor})
    for (int64_t d : dims)
      for (bool causal : {false, true}) {
        BCase c{2, 233, 317, 4, 2, d, causal, FLASHPTX_FP16, l};
        c.deterministic = true;
        check_case(c, seed++);
      }
}

void scale_and_mqa(Dims dims, uint64_t seed) {
  for (int64_t d : dims) {
    BCase a{1, 200, 300, 8, 1, d, true, FLASHPTX_BF16};
    a.softmax_scale = 0.37f;
    check_case(a, seed++);
    BCase b{1, 257, 384, 2, 1, d, false, FLASHPTX_BF16};
    b.input_scale = 6.f;
    b.deterministic = true;
    check_case(b, seed++);
  }
}

void edge_sizes(Dims dims, uint64_t seed) {
  for (int64_t d : dims) {
    check_case(BCase{1, 300, 100, 2, 2, d, true, FLASHPTX_BF16}, seed++);  // rows 0..199 see no key
    BProblem a(BCase{2, 0, 77, 4, 2, d, false, FLASHPTX_BF16}, seed++);
    a.poison();
    a.run();
    const auto ga = a.grads();
    for (int64_t i = 0; i < 2 * 77 * 2 * d; ++i) {
      REQUIRE(from_storage(FLASHPTX_BF16, ga.dk[i]) == 0.f);
      REQUIRE(from_storage(FLASHPTX_BF16, ga.dv[i]) == 0.f);
    }
    BProblem b(BCase{2, 55, 0, 4, 2, d, true, FLASHPTX_FP16}, seed++);
    b.poison();
    b.run();
    const auto gb = b.grads();
    for (int64_t i = 0; i < 2 * 55 * 4 * d; ++i) REQUIRE(from_storage(FLASHPTX_FP16, gb.dq[i]) == 0.f);
  }
}

void deterministic_100(Dims dims, uint64_t seed) {
  for (int64_t d : dims)
    for (bool causal : {false, true}) {
      BCase c{2, 1000, 1000, 8, 2, d, causal, FLASHPTX_BF16};
      c.deterministic = true;
      INFO(c.str());
      BProblem pb(c, seed++);
      pb.poison();
      pb.run();
      const auto first = pb.grads();
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
void deterministic_orders(Dims dims, uint64_t seed) {
  for (int64_t d : dims) {
    struct Shape { BCase c; bool rotated; };
    const Shape shapes[] = {{{1, 1000, 1000, 4, 2, d, false, FLASHPTX_BF16}, true},
                            {{1, 1500, 333, 4, 1, d, false, FLASHPTX_BF16}, true},
                            {{1, 300, 1400, 2, 2, d, false, FLASHPTX_FP16}, false}};
    for (const Shape& sh : shapes) {
      BCase c = sh.c;
      c.deterministic = true;
      {
        INFO(c.str());
        BProblem pb(c, seed);
        flashptx::BwdPlan plan;
        std::string msg;
        flashptx::Device dev;
        REQUIRE(flashptx::current_device(&dev, &msg) == FLASHPTX_OK);
        REQUIRE_MESSAGE(flashptx::plan_bwd(pb.bwd, flashptx::BwdOptions{}, dev, &plan, &msg) == FLASHPTX_OK, msg);
        CHECK_MESSAGE(plan.dq_rotated == sh.rotated, c.str() << ": the plan's dQ order");
        flashptx::BwdOptions rot;
        rot.dq_order = flashptx::DqOrder::kRotated;
        if (!sh.rotated) CHECK(flashptx::bwd(&pb.bwd, rot, nullptr) == FLASHPTX_ERR_BAD_OPTION);
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

TEST_CASE("strided layouts: padded rows and head-major") { strided_layouts({64, 128}, 2000); }

TEST_CASE("a custom softmax scale, large-magnitude scores, MQA") { scale_and_mqa({64, 128}, 3000); }

TEST_CASE("edge sizes: fully masked rows, seqlen_q 0 (dK = dV = 0), seqlen_k 0 (dQ = 0)") {
  check_case(BCase{1, 300, 100, 2, 2, 128, true, FLASHPTX_BF16}, 4000);  // rows 0..199 see no key
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

TEST_CASE("large shapes (1k-8k) against the GPU reference") {
  uint64_t seed = 5000;
  const BCase cases[] = {
      {1, 1000, 1000, 4, 4, 128, false, FLASHPTX_BF16}, {1, 1000, 1000, 4, 4, 64, true, FLASHPTX_BF16},
      {1, 4097, 4097, 2, 2, 128, true, FLASHPTX_BF16},  {1, 4097, 4097, 2, 1, 64, false, FLASHPTX_FP16},
      {1, 8192, 8192, 2, 2, 128, true, FLASHPTX_BF16},
  };
  for (const BCase& c : cases) check_large(c, seed++);
}

TEST_CASE("deterministic mode: 100 launches bitwise equal, every head dim, causal and not, with GQA") {
  deterministic_100({64, 128}, 6000);
}

TEST_CASE("deterministic mode: the ascending and the rotated dQ orders, fp64 rule and bitwise stable") {
  deterministic_orders({64, 128}, 6500);
}

// ---- d256 (kSplitHeadDim: 64 x 64 tiles, the head dim split between the MMA warpgroups) ----------
TEST_CASE("d256: small shapes, causal and not, head ratios 1/4/8, bf16 and fp16") { small_shapes({256}, 7000); }
TEST_CASE("d256: medium shapes, several key and query blocks, unequal lengths, GQA") { medium_shapes({256}, 7500); }
TEST_CASE("d256: strided layouts, padded rows and head-major") { strided_layouts({256}, 7600); }
TEST_CASE("d256: a custom softmax scale, large-magnitude scores, MQA") { scale_and_mqa({256}, 7700); }
TEST_CASE("d256: edge sizes, fully masked rows, seqlen_q 0, seqlen_k 0") { edge_sizes({256}, 7800); }
TEST_CASE("d256: large shapes (1k-8k) against the GPU reference") {
  uint64_t seed = 7900;
  const BCase cases[] = {
      {1, 1000, 1000, 4, 4, 256, false, FLASHPTX_BF16},
      {1, 1000, 1000, 4, 4, 256, true, FLASHPTX_FP16},
      {1, 4097, 4097, 2, 2, 256, true, FLASHPTX_BF16},
      {1, 4097, 4097, 2, 1, 256, false, FLASHPTX_FP16},
      {1, 8192, 8192, 2, 2, 256, true, FLASHPTX_BF16},
  };
  for (const BCase& c : cases) check_large(c, seed++);
}
TEST_CASE("d256: deterministic mode, 100 launches bitwise equal, causal and not, with GQA") {
  deterministic_100({256}, 8000);
}
TEST_CASE("d256: deterministic mode, the ascending and the rotated dQ orders") { deterministic_orders({256}, 8500); }

}  // TEST_SUITE
