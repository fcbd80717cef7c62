// FA3 forward on the GPU: against the CPU fp64 reference, against the GPU reference on
// large shapes, determinism, a race stress, and bad input through the C ABI.
//
// The rule (FlashAttention's): max|out - ref| <= 2 * max|same_dtype_ref - ref| + 1e-5, where ref is
// the fp64 reference and same_dtype_ref the reference that rounds inputs, P and O to the dtype as a
// plain kernel would (tools/support/reference.h). LSE is fp32 and its reference rounds nothing; it
// is held to 2 * (the same-dtype LSE error) + 1e-5 + 2^-20 |lse|: the last term is the fp32
// envelope of a value computed from fp32 tensor-core scores (a few ulps of |lse|), stated here so
// the rule is visible.
//
// Inputs are fresh random values (never zeros); O and LSE are poisoned with NaN before every run,
// padded layouts keep their pads poisoned, and a guard region after each output must stay poisoned.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <memory>
#include <span>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "src/internal.h"
#include "tools/support/dtype.h"
#include "tools/support/gpu_reference.h"
#include "tools/support/reference.h"
#include "tests/gpu/release_lib.h"
#include "tests/gpu/test_util.h"

namespace {

using namespace flashptx_test;

struct Case {
  int64_t batch, sq, sk, hq, hkv, d;
  bool causal;
  flashptx_dtype dtype;
  Layout layout = Layout::kContiguous;
  float input_scale = 1.f;  // multiplies Q: larger -> large-magnitude scores
  float softmax_scale = 0.f;
  bool tile_counter = false;  // pass a zeroed tile counter (the dynamic schedule where the plan has it)
  // Nonzero: Q's element 0 is 1 and K row j's element 0 is key_ramp * (1 - j / sk), so every row's
  // scores grow towards key 0, the last block the kernels' right-to-left walk visits: the running
  // maximum moves in most blocks, by less or more than the lazy rescale's threshold, and the largest
  // weights sit in the last blocks (src/sm90/fa3_fwd.cuh, FwdConfig::lazy_rescale).
  float key_ramp = 0.f;
  // The score modifiers (flashptx_fwd_params::window, ::softcap): a window of (wl, wr) where window.
  bool window = false;
  int64_t wl = -1, wr = -1;
  float softcap = 0.f;
  // Nonzero: K and V rows [0, nan_keys) of every batch and head are NaN: keys no query's window sees,
  // in blocks wholly outside every tile's window. A kernel that loaded such a block would multiply
  // its NaN V by P = 0 (NaN) into O; the reference never reads them.
  int64_t nan_keys = 0;
  // V's and O's head dim (flashptx_fwd_params::head_dim_v): 0 passes 0 (meaning d); else passed as is.
  int64_t dv = 0;
  int64_t d_v() const { return dv != 0 ? dv : d; }
  // The learnable sinks (flashptx_fwd_params::sinks): one fp32 logit per query head, N(0, 1) plus
  // sink_shift (+: the sink dominates the denominator, -: faint), head 0's -inf where no_sink_head0.
  bool sinks = false;
  float sink_shift = 0.f;
  bool no_sink_head0 = false;
  std::string str() const {
    return "B=" + std::to_string(batch) + " Sq=" + std::to_string(sq) + " Sk=" + std::to_string(sk) +
           " Hq=" + std::to_string(hq) + " Hkv=" + std::to_string(hkv) + " d=" + std::to_string(d) +
           (causal ? " causal" : "") + (dtype == FLASHPTX_BF16 ? " bf16" : " fp16") +
           layout_name(layout) +
           (input_scale != 1.f ? " qscale=" + std::to_string(input_scale) : "") +
           (tile_counter ? " tile_counter" : "") + (key_ramp != 0.f ? " key_ramp=" + std::to_string(key_ramp) : "") +
           (window ? " window=(" + std::to_string(wl) + "," + std::to_string(wr) + ")" : "") +
           (softcap != 0.f ? " softcap=" + std::to_string(softcap) : "") +
           (nan_keys != 0 ? " nan_keys=" + std::to_string(nan_keys) : "") +
           (dv != 0 ? " dv=" + std::to_string(dv) : "") +
           (sinks ? " sinks" + (sink_shift != 0.f ? "+" + std::to_string(sink_shift) : std::string()) +
                        (no_sink_head0 ? " head0-no-sink" : "")
                  : "");
  }
};

// Host copies of one problem's tensors (16-bit storage) and the device buffers behind them.
struct Problem {
  Case c;
  Strides sq_, sk_, sv_, so_;  // Q; K; V and O (head dim d_v)
  std::vector<uint16_t> q, k, v;
  std::vector<float> sink;  // c.sinks: the heads' sink logits
  std::unique_ptr<DeviceBuf> dq, dk, dv, dout, dlse, dctr, dsink;
  flashptx_fwd_params params{};

  explicit Problem(const Case& cs, uint64_t seed) : c(cs) {
    sq_ = make_strides(c.layout, c.batch, c.sq, c.hq, c.d);
    sk_ = make_strides(c.layout, c.batch, c.sk, c.hkv, c.d);
    sv_ = make_strides(c.layout, c.batch, c.sk, c.hkv, c.d_v());
    so_ = make_strides(c.layout, c.batch, c.sq, c.hq, c.d_v());
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    auto fill = [&](std::vector<uint16_t>& x, const Strides& st, int64_t seq, int64_t heads, int64_t cols, float scale) {
      x.assign(static_cast<size_t>(std::max<int64_t>(st.total, 1)), to_storage(c.dtype, 0.5f));
      for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t s = 0; s < seq; ++s)
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t e = 0; e < cols; ++e)
              x[b * st.b + s * st.s + h * st.h + e] = to_storage(c.dtype, scale * nd(rng));
    };
    fill(q, sq_, c.sq, c.hq, c.d, c.input_scale);
    fill(k, sk_, c.sk, c.hkv, c.d, 1.f);
    fill(v, sv_, c.sk, c.hkv, c.d_v(), 1.f);
    if (c.key_ramp != 0.f) {
      for (int64_t b = 0; b < c.batch; ++b) {
        for (int64_t s = 0; s < c.sq; ++s)
          for (int64_t h = 0; h < c.hq; ++h) q[b * sq_.b + s * sq_.s + h * sq_.h] = to_storage(c.dtype, 1.f);
        for (int64_t j = 0; j < c.sk; ++j)
          for (int64_t h = 0; h < c.hkv; ++h)
            k[b * sk_.b + j * sk_.s + h * sk_.h] =
                to_storage(c.dtype, c.key_ramp * (1.f - static_cast<float>(j) / static_cast<float>(c.sk)));
      }
    }
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t j = 0; j < std::min(c.nan_keys, c.sk); ++j)
        for (int64_t h = 0; h < c.hkv; ++h)
          for (int64_t e = 0; e < c.d; ++e) {
            k[b * sk_.b + j * sk_.s + h * sk_.h + e] = 0x7FFFu;
            if (e < c.d_v()) v[b * sv_.b + j * sv_.s + h * sv_.h + e] = 0x7FFFu;
          }
    if (c.sinks) {  // (drawn after Q, K and V: the other cases' inputs stay as they were)
      sink.resize(static_cast<size_t>(c.hq));
      for (float& x : sink) x = nd(rng) + c.sink_shift;
      if (c.no_sink_head0) sink[0] = -INFINITY;
      dsink.reset(new DeviceBuf(sink.size() * 4));
      CUDA_REQUIRE(cudaMemcpy(dsink->p, sink.data(), sink.size() * 4, cudaMemcpyHostToDevice));
    }
    dq.reset(new DeviceBuf(q.size() * 2));
    dk.reset(new DeviceBuf(k.size() * 2));
    dv.reset(new DeviceBuf(v.size() * 2));
    dout.reset(new DeviceBuf((static_cast<size_t>(std::max<int64_t>(so_.total, 1)) + kGuard) * 2));
    dlse.reset(new DeviceBuf((static_cast<size_t>(c.batch * c.hq * c.sq) + kGuard) * 4));
    CUDA_REQUIRE(cudaMemcpy(dq->p, q.data(), q.size() * 2, cudaMemcpyHostToDevice));
    CUDA_REQUIRE(cudaMemcpy(dk->p, k.data(), k.size() * 2, cudaMemcpyHostToDevice));
    CUDA_REQUIRE(cudaMemcpy(dv->p, v.data(), v.size() * 2, cudaMemcpyHostToDevice));
    params = flashptx_fwd_params{};
    params.q = dq->p; params.k = dk->p; params.v = dv->p; params.o = dout->p;
    params.lse = static_cast<float*>(dlse->p);
    params.batch = c.batch; params.seqlen_q = c.sq; params.seqlen_k = c.sk;
    params.heads_q = c.hq; params.heads_kv = c.hkv; params.head_dim = c.d;
    params.q_batch_stride = sq_.b; params.q_row_stride = sq_.s; params.q_head_stride = sq_.h;
    params.k_batch_stride = sk_.b; params.k_row_stride = sk_.s; params.k_head_stride = sk_.h;
    params.v_batch_stride = sv_.b; params.v_row_stride = sv_.s; params.v_head_stride = sv_.h;
    params.head_dim_v = c.dv;
    params.o_batch_stride = so_.b; params.o_row_stride = so_.s; params.o_head_stride = so_.h;
    params.q_dtype = params.k_dtype = params.v_dtype = params.o_dtype = c.dtype;
    params.causal = c.causal ? 1 : 0;
    params.softmax_scale = c.softmax_scale;
    params.window = c.window ? 1 : 0;
    params.window_left = c.wl;
    params.window_right = c.wr;
    params.softcap = c.softcap;
    if (c.sinks) params.sinks = static_cast<const float*>(dsink->p);
    if (c.tile_counter) {
      dctr.reset(new DeviceBuf(8));
      CUDA_REQUIRE(cudaMemset(dctr->p, 0, 8));
      params.tile_counter = static_cast<unsigned int*>(dctr->p);
    }
  }
  // The tile counter after a call: every call must leave it zero (include/flashptx.h).
  std::array<unsigned, 2> counter() const {
    std::array<unsigned, 2> w{~0u, ~0u};
    if (dctr) CUDA_REQUIRE(cudaMemcpy(w.data(), dctr->p, 8, cudaMemcpyDeviceToHost));
    return w;
  }

  void poison() {
    CUDA_REQUIRE(cudaMemset(dout->p, 0xFF, dout->bytes));  // 0xFFFF: NaN
    CUDA_REQUIRE(cudaMemset(dlse->p, 0xFF, dlse->bytes));  // 0xFFFFFFFF: NaN
  }
  void run() {
    flashptx_status s = flashptx_fwd(&params, nullptr);
    REQUIRE_MESSAGE(s == FLASHPTX_OK, flashptx_last_error());
    CUDA_REQUIRE(cudaGetLastError());
    CUDA_REQUIRE(cudaDeviceSynchronize());
  }
  // The same problem through the release libflashptx.so (tests/gpu/release_lib.h).
  void run_release() {
    const auto& rel = flashptx_test::release_lib();
    REQUIRE_MESSAGE(rel.loaded(), rel.why);
    flashptx_status s = rel.fwd(&params, nullptr);
    REQUIRE_MESSAGE(s == FLASHPTX_OK, rel.last_error());
    CUDA_REQUIRE(cudaGetLastError());
    CUDA_REQUIRE(cudaDeviceSynchronize());
  }
  std::vector<uint16_t> out() const {
    std::vector<uint16_t> o(dout->bytes / 2);
    cudaError_t e = cudaMemcpy(o.data(), dout->p, dout->bytes, cudaMemcpyDeviceToHost);
    REQUIRE(e == cudaSuccess);
    return o;
  }
  std::vector<float> lse() const {
    std::vector<float> l(dlse->bytes / 4);
    cudaError_t e = cudaMemcpy(l.data(), dlse->p, dlse->bytes, cudaMemcpyDeviceToHost);
    REQUIRE(e == cudaSuccess);
    return l;
  }

  flashptx::ref::Problem ref_problem() const {
    auto rp = flashptx_test::ref_problem(c.batch, c.sq, c.sk, c.hq, c.hkv, c.d, c.causal, c.softmax_scale);
    if (c.window) {
      rp.window_left = c.wl;
      rp.window_right = c.wr;
    }
    rp.softcap = c.softcap;
    rp.sinks.assign(sink.begin(), sink.end());
    return rp;
  }
  flashptx::ref::TensorView view(const std::vector<uint16_t>& x, const Strides& st) const {
    return ref_view(x, c.dtype, st);
  }
  // V for the reference, which has one head dim: where d_v < d, a contiguous copy of V whose
  // columns [d_v, d) are 0, so that the reference's O columns [0, d_v) are exactly the (d, d_v)
  // problem's (a zero column of V adds nothing to the others) and the rest are ignored.
  std::vector<uint16_t> v_for_ref(Strides* st) const {
    if (c.d_v() == c.d) {
      *st = sv_;
      return v;
    }
    *st = make_strides(Layout::kContiguous, c.batch, c.sk, c.hkv, c.d);
    std::vector<uint16_t> x(static_cast<size_t>(std::max<int64_t>(st->total, 1)), to_storage(c.dtype, 0.f));
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t j = 0; j < c.sk; ++j)
        for (int64_t h = 0; h < c.hkv; ++h)
          for (int64_t e = 0; e < c.d_v(); ++e)
            x[b * st->b + j * st->s + h * st->h + e] = v[b * sv_.b + j * sv_.s + h * sv_.h + e];
    return x;
  }
};

// Every element that is not an output element must still hold the poison; every output element of
// a row must be finite.
void check_writes(const Problem& pb, const std::vector<uint16_t>& o, const std::vector<float>& lse) {
  const Case& c = pb.c;
  std::vector<char> is_out(o.size(), 0);
  int64_t non_finite = 0;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t s = 0; s < c.sq; ++s)
      for (int64_t h = 0; h < c.hq; ++h)
        for (int64_t e = 0; e < c.d_v(); ++e) {
          const int64_t idx = b * pb.so_.b + s * pb.so_.s + h * pb.so_.h + e;
          is_out[idx] = 1;
          if (!std::isfinite(from_storage(c.dtype, o[idx]))) ++non_finite;
        }
  int64_t clobbered = 0;
  for (size_t i = 0; i < o.size(); ++i)
    if (!is_out[i] && o[i] != kPoison) ++clobbered;
  CHECK_MESSAGE(non_finite == 0, c.str() << ": " << non_finite << " output elements not written or not finite");
  CHECK_MESSAGE(clobbered == 0, c.str() << ": " << clobbered << " elements outside O were written");
  check_lse_writes(lse, c.batch * c.hq * c.sq, c.str());
}

// o_env, lse_env: the softcap's tanh envelope (ref::forward_row's tanh_env), 0 without a softcap.
struct Errors { double o = 0, o_same = 0, lse = 0, lse_same = 0, lse_mag = 0, o_env = 0, lse_env = 0; int rows = 0; };

// Compares the rows (b, i, h) in `rows` against the fp64 and same-dtype references. The rows are
// independent (ref::forward_row is pure): threads take interleaved rows and the maxima are merged,
// so the result does not depend on the thread count.
Errors compare_rows(const Problem& pb, const std::vector<uint16_t>& o, const std::vector<float>& lse,
                    const std::vector<std::array<int64_t, 3>>& rows) {
  const Case& c = pb.c;
  const auto rp = pb.ref_problem();
  Strides sv_ref;
  const std::vector<uint16_t> v_ref = pb.v_for_ref(&sv_ref);
  const auto qv = pb.view(pb.q, pb.sq_), kv = pb.view(pb.k, pb.sk_), vv = pb.view(v_ref, sv_ref);
  const auto same = c.dtype == FLASHPTX_BF16 ? flashptx::Round::kBF16 : flashptx::Round::kFP16;
  std::vector<Errors> part(16);
  on_host_threads([&](size_t t, size_t n) {
    std::vector<double> ref(c.d), refs(c.d), env(c.d);
    Errors& e = part[t];
    for (size_t r_i = t; r_i < rows.size(); r_i += n) {
      const auto& r = rows[r_i];
      const int64_t b = r[0], i = r[1], h = r[2];
      double lse_env = 0;
      const double l_ref =
          flashptx::ref::forward_row(rp, qv, kv, vv, b, i, h, ref.data(), flashptx::Round::kNone, env.data(), &lse_env);
      for (int64_t x = 0; x < c.d_v(); ++x) e.o_env = std::max(e.o_env, env[x]);
      e.lse_env = std::max(e.lse_env, lse_env);
      const double l_same = flashptx::ref::forward_row(rp, qv, kv, vv, b, i, h, refs.data(), same);
      for (int64_t x = 0; x < c.d_v(); ++x) {
        const double out = from_storage(c.dtype, o[b * pb.so_.b + i * pb.so_.s + h * pb.so_.h + x]);
        e.o = std::max(e.o, std::fabs(out - ref[x]));
        e.o_same = std::max(e.o_same, std::fabs(refs[x] - ref[x]));
      }
      const double l_out = lse[(b * c.hq + h) * c.sq + i];
      if (std::isinf(l_ref)) {
        if (!(std::isinf(l_out) && l_out < 0)) e.lse = INFINITY;
      } else {
        e.lse = std::max(e.lse, std::fabs(l_out - l_ref));
        e.lse_same = std::max(e.lse_same, std::fabs(l_same - l_ref));
        e.lse_mag = std::max(e.lse_mag, std::fabs(l_ref));
      }
      ++e.rows;
    }
  });
  Errors e;
  for (const Errors& x : part) {
    e.o = std::max(e.o, x.o);
    e.o_same = std::max(e.o_same, x.o_same);
    e.lse = std::max(e.lse, x.lse);
    e.lse_same = std::max(e.lse_same, x.lse_same);
    e.lse_mag = std::max(e.lse_mag, x.lse_mag);
    e.o_env = std::max(e.o_env, x.o_env);
    e.lse_env = std::max(e.lse_env, x.lse_env);
    e.rows += x.rows;
  }
  return e;
}

std::vector<std::array<int64_t, 3>> pick_rows(const Case& c, int64_t max_rows, uint64_t seed) {
  std::vector<std::array<int64_t, 3>> rows;
  if (c.batch * c.sq * c.hq <= max_rows) {
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t i = 0; i < c.sq; ++i)
        for (int64_t h = 0; h < c.hq; ++h) rows.push_back({b, i, h});
    return rows;
  }
  std::mt19937_64 rng(seed);
  const int64_t fixed[] = {0, 1, c.sq / 2, c.sq - 2, c.sq - 1};
  for (int64_t b : {int64_t(0), c.batch - 1})
    for (int64_t h : {int64_t(0), c.hq - 1}) {
      for (int64_t i : fixed)
        if (i >= 0 && i < c.sq) rows.push_back({b, i, h});
      for (int t = 0; t < 8; ++t) rows.push_back({b, static_cast<int64_t>(rng() % c.sq), h});
    }
  for (int t = 0; t < 16; ++t)
    rows.push_back({static_cast<int64_t>(rng() % c.batch), static_cast<int64_t>(rng() % c.sq),
                    static_cast<int64_t>(rng() % c.hq)});
  return rows;
}

void check_case(const Case& c, uint64_t seed, int64_t max_rows = 4096) {
  INFO(c.str());
  Problem pb(c, seed);
  pb.poison();
  pb.run();
  const auto o = pb.out();
  const auto l = pb.lse();
  check_writes(pb, o, l);
  const Errors e = compare_rows(pb, o, l, pick_rows(c, max_rows, seed ^ 0x9e37));
  // (+ the softcap's tanh.approx envelope, 0 without one: ref::forward_row, tanh_env.)
  const double o_tol = 2 * e.o_same + 1e-5 + e.o_env;
  const double lse_tol = 2 * e.lse_same + 1e-5 + std::ldexp(e.lse_mag, -20) + e.lse_env;
  CHECK_MESSAGE(e.o <= o_tol, c.str() << ": max|O - ref| = " << e.o << " > " << o_tol << " (same-dtype "
                                      << e.o_same << ", " << e.rows << " rows)");
  CHECK_MESSAGE(e.lse <= lse_tol, c.str() << ": max|LSE - ref| = " << e.lse << " > " << lse_tol);
  // The kernels users link (release flavour) compute the same bits: the wait loop is the only
  // difference between the flavours.
  if (flashptx_test::release_lib().loaded()) {
    pb.poison();
    pb.run_release();
    CHECK_MESSAGE(pb.out() == o, c.str() << ": the release library's O differs from the test build's");
    const auto lr = pb.lse();
    CHECK_MESSAGE(std::memcmp(lr.data(), l.data(), l.size() * 4) == 0,
                  c.str() << ": the release library's LSE differs from the test build's");
  }
}

// Launches `launch` n times on st's buffers (in rounds of up to 100), copying each O aside, and counts
// the launches whose O differs, bit for bit, from the O st holds before the first of them.
template <class Launch>
int launches_differing(Problem& st, int n, Launch launch) {
  const auto ref = st.out();
  const size_t bytes = st.dout->bytes;
  DeviceBuf all(bytes * static_cast<size_t>(std::min(n, 100)));
  int mismatches = 0;
  for (int done = 0; done < n; done += 100) {
    const int round = std::min(100, n - done);
    for (int i = 0; i < round; ++i) {
      const flashptx_status s = launch();
      REQUIRE_MESSAGE(s == FLASHPTX_OK, flashptx_status_name(s));
      CUDA_REQUIRE(cudaMemcpyAsync(static_cast<char*>(all.p) + i * bytes, st.dout->p, bytes,
                                   cudaMemcpyDeviceToDevice, nullptr));
    }
    CUDA_REQUIRE(cudaDeviceSynchronize());
    std::vector<uint16_t> h(bytes / 2 * round);
    CUDA_REQUIRE(cudaMemcpy(h.data(), all.p, bytes * round, cudaMemcpyDeviceToHost));
    for (int i = 0; i < round; ++i)
      if (std::memcmp(h.data() + i * (bytes / 2), ref.data(), bytes) != 0) ++mismatches;
  }
  return mismatches;
}

}  // namespace

TEST_SUITE("gpu_sm90 fa3 forward") {

TEST_CASE("small shapes: every head dim, causal and not, head ratios 1/4/8, bf16 and fp16") {
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {1, 239}, {239, 1}, {17, 17}, {113, 203}, {128, 128}};
  uint64_t seed = 1;
  if (flashptx_test::on_simulator()) {
    // On the simulator: every head dim, causal and not, both dtypes, on the ragged shape (a partial
    // query tile, two key blocks with a ragged tail), GQA 4.
    for (int64_t d : {64, 128, 256})
      for (bool causal : {false, true})
        for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16}) check_case(Case{1, 113, 203, 4, 1, d, causal, t}, seed++);
    return;
  }
  for (auto [sq, sk] : shapes)
    for (int64_t d : {64, 128, 256})
      for (bool causal : {false, true})
        for (int64_t ratio : {1, 4, 8})
          for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16})
            check_case(Case{2, sq, sk, ratio * 1, 1, d, causal, t}, seed++);
}

TEST_CASE("medium and long shapes: (1000,1000), (4097,4097), sampled rows") {
  uint64_t seed = 1000;
  if (flashptx_test::on_simulator()) {
    // On the simulator: 400 x 400 (four query tiles, a ragged last one; the K/V ring wraps in the
    // longest tiles), sampled rows; every head dim, causal and not, both dtypes, GQA 2.
    check_case(Case{1, 400, 400, 2, 1, 64, false, FLASHPTX_BF16}, seed++, 0);
    check_case(Case{1, 400, 400, 2, 1, 128, true, FLASHPTX_FP16}, seed++, 0);
    check_case(Case{1, 400, 400, 1, 1, 256, true, FLASHPTX_BF16}, seed++, 0);
    return;
  }
  for (int64_t s : {1000, 4097})
    for (int64_t d : {64, 128, 256})
      for (bool causal : {false, true})
        for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16})
          for (int64_t ratio : {1, 8})
            check_case(Case{1, s, s, 2 * ratio, 2, d, causal, t}, seed++, 0);
}

TEST_CASE("unequal lengths with causal bottom-right alignment, several tiles") {
  uint64_t seed = 2000;
  const std::pair<int64_t, int64_t> shapes[] = {{300, 1000}, {1000, 300}, {129, 129}, {64, 500}, {500, 64}};
  if (flashptx_test::on_simulator()) {
    // On the simulator: a shorter Q than K (bottom-right: every row sees the first keys), a longer Q
    // than K (the first rows see no key), a one-key ragged tail (129 x 129); one head dim each, GQA 2.
    check_case(Case{1, 130, 400, 2, 1, 64, true, FLASHPTX_BF16}, seed++, 2048);
    check_case(Case{1, 400, 130, 2, 1, 128, true, FLASHPTX_BF16}, seed++, 2048);
    check_case(Case{1, 129, 129, 2, 1, 256, true, FLASHPTX_BF16}, seed++, 2048);
    return;
  }
  for (auto [sq, sk] : shapes)
    for (int64_t d : {64, 128, 256})
      check_case(Case{2, sq, sk, 4, 2, d, true, FLASHPTX_BF16}, seed++, 2048);
}

TEST_CASE("strided layouts: padded rows and head-major") {
  uint64_t seed = 3000;
  if (flashptx_test::on_simulator()) {
    // On the simulator: 130 x 200 (two query tiles, ragged tails in both lengths), both layouts
    // (head-major with two query heads on one K/V head), every head dim, causal and not.
    check_case(Case{1, 130, 200, 1, 1, 64, false, FLASHPTX_FP16, Layout::kPadded}, seed++, 2048);
    check_case(Case{1, 130, 200, 2, 1, 128, true, FLASHPTX_FP16, Layout::kHeadMajor}, seed++, 2048);
    check_case(Case{1, 130, 200, 1, 1, 256, true, FLASHPTX_FP16, Layout::kPadded}, seed++, 2048);
    check_case(Case{1, 130, 200, 2, 1, 256, false, FLASHPTX_FP16, Layout::kHeadMajor}, seed++, 2048);
    return;
  }
  for (Layout l : {Layout::kPadded, Layout::kHeadMajor})
    for (int64_t d : {64, 128, 256})
      for (bool causal : {false, true})
        check_case(Case{2, 333, 517, 4, 2, d, causal, FLASHPTX_FP16, l}, seed++, 2048);
}

TEST_CASE("large-magnitude scores and a custom softmax scale") {
  uint64_t seed = 4000;
  // On the simulator: 130 x 200 (two query tiles, ragged tails in both lengths), one head.
  const bool sim = flashptx_test::on_simulator();
  for (int64_t d : {64, 128, 256}) {
    Case c = sim ? Case{1, 130, 200, 1, 1, d, false, FLASHPTX_BF16} : Case{1, 257, 384, 2, 1, d, false, FLASHPTX_BF16};
    c.input_scale = 12.f;  // scores of a few hundred: the running max must carry the range
    check_case(c, seed++);
    c.causal = true;
    check_case(c, seed++);
    Case s = sim ? Case{1, 130, 200, 1, 1, d, false, FLASHPTX_FP16} : Case{1, 200, 300, 2, 2, d, false, FLASHPTX_FP16};
    s.softmax_scale = 0.37f;
    check_case(s, seed++);
  }
}

TEST_CASE("scores that grow along the walk (the lazy rescale at d256): the fp64 rule") {
  // Ramps of about 1.7 and 7 log2 units per 64-key block at d256 over 1000 keys (after the scale
  // 1/16): a maximum that grows below the threshold of 8 for several blocks (P up to 2^8 before its
  // rounding) and one that crosses it every block or two, with the weights concentrated on the last
  // blocks visited. The other head dims run the same inputs through their eager rescale. (Seeds as
  // in the run on the H200 recorded in docs/DECISIONS.md, "Lazy rescale at d256", which also had a ramp
  // of 5000: its d256 fp16 causal case missed the LSE rule by 3%, scores near 310 after the scale.)
  const int64_t dims[] = {64, 128, 256};
  const float ramps[] = {300.f, 1200.f};
  if (flashptx_test::on_simulator()) {
    // On the simulator: 400 keys (seven 64-key blocks at d256) with the ramps scaled by 400 / 1000, so
    // that each block sees the same growth as above (about 1.7 and 7 log2 units); d256 causal and not,
    // one query tile; the other head dims once each; the bottom-right causal case with GQA.
    uint64_t seed = 4500;
    for (int ri = 0; ri < 2; ++ri)
      for (int ci = 0; ci < 2; ++ci) {
        Case c{1, 64, 400, 1, 1, 256, ci == 1, ri == ci ? FLASHPTX_BF16 : FLASHPTX_FP16};
        c.key_ramp = ramps[ri] * 0.4f;
        check_case(c, seed++, 64);
      }
    for (int64_t d : {64, 128}) {
      Case c{1, 64, 400, 1, 1, d, d == 64, FLASHPTX_BF16};
      c.key_ramp = ramps[1] * 0.4f;
      check_case(c, seed++, 64);
    }
    Case r{1, 130, 400, 2, 1, 256, true, FLASHPTX_BF16};
    r.key_ramp = ramps[1] * 0.4f;
    check_case(r, seed++, 64);
    return;
  }
  for (int di = 0; di < 3; ++di)
    for (int ri = 0; ri < 2; ++ri)
      for (int ci = 0; ci < 2; ++ci)
        for (int ti = 0; ti < 2; ++ti) {
          Case c{1, 1000, 1000, 2, 1, dims[di], ci == 1, ti == 0 ? FLASHPTX_BF16 : FLASHPTX_FP16};
          c.key_ramp = ramps[ri];
          check_case(c, 4500 + ((di * 3 + ri) * 2 + ci) * 2 + ti, 64);  // sampled rows
        }
  Case r{2, 300, 777, 4, 2, 256, true, FLASHPTX_BF16};  // bottom-right causal, several tiles, GQA
  r.key_ramp = 1200.f;
  check_case(r, 4536, 64);
}

TEST_CASE("seqlen_k = 0 and fully masked rows give O = 0 and LSE = -inf") {
  Case c{1, 300, 100, 2, 2, 128, true, FLASHPTX_BF16};  // rows 0..199 see no key
  check_case(c, 5000);
  Problem pb(Case{1, 70, 0, 2, 2, 64, false, FLASHPTX_BF16}, 5001);
  pb.poison();
  pb.run();
  const auto o = pb.out();
  const auto l = pb.lse();
  for (int64_t i = 0; i < 70 * 2 * 64; ++i) CHECK(from_storage(FLASHPTX_BF16, o[i]) == 0.f);
  for (int64_t i = 0; i < 70 * 2; ++i) CHECK((std::isinf(l[i]) && l[i] < 0));
}

TEST_CASE("large shapes (8k-16k) against the GPU reference kernel") {
  struct L { int64_t s, h, d; bool causal; };
  const L shapes[] = {{8192, 4, 128, false}, {8192, 4, 128, true}, {16384, 2, 128, true},
                      {8192, 2, 64, false}, {8192, 2, 256, true}, {16384, 1, 256, false}};
  // On the simulator: the same comparison with the GPU reference kernel (which it runs too) at a few
  // hundred rows (ragged tiles), every head dim, causal and not.
  const L sim_shapes[] = {{192, 1, 128, false}, {130, 1, 256, true}, {160, 1, 64, true}};
  uint64_t seed = 6000;
  for (const L& x : flashptx_test::on_simulator() ? std::span<const L>(sim_shapes) : std::span<const L>(shapes)) {
    Case c{1, x.s, x.s, x.h, x.h, x.d, x.causal, FLASHPTX_BF16};
    INFO(c.str());
    Problem pb(c, seed++);
    pb.poison();
    pb.run();
    const auto o = pb.out();
    const auto l = pb.lse();
    check_writes(pb, o, l);
    DeviceBuf ref_o(static_cast<size_t>(c.sq * c.hq * c.d) * 4), ref_l(static_cast<size_t>(c.sq * c.hq) * 4);
    CUDA_REQUIRE(flashptx::gpuref::attention_fwd(pb.params, static_cast<float*>(ref_o.p),
                                                 static_cast<float*>(ref_l.p), nullptr));
    CUDA_REQUIRE(cudaDeviceSynchronize());
    std::vector<float> ro(static_cast<size_t>(c.sq * c.hq * c.d)), rl(static_cast<size_t>(c.sq * c.hq));
    CUDA_REQUIRE(cudaMemcpy(ro.data(), ref_o.p, ro.size() * 4, cudaMemcpyDeviceToHost));
    CUDA_REQUIRE(cudaMemcpy(rl.data(), ref_l.p, rl.size() * 4, cudaMemcpyDeviceToHost));
    double err = 0, mag = 0, lerr = 0;
    for (size_t i = 0; i < ro.size(); ++i) {
      err = std::max(err, std::fabs(static_cast<double>(from_storage(c.dtype, o[i])) - ro[i]));
      mag = std::max(mag, std::fabs(static_cast<double>(ro[i])));
    }
    for (size_t i = 0; i < rl.size(); ++i) lerr = std::max(lerr, std::fabs(static_cast<double>(l[i]) - rl[i]));
    // bf16 output rounding is 2^-9 relative; P in bf16 adds a similar term: 2^-6 of max|O| is a
    // loose bound that a wrong block, mask or rescale still breaks by orders of magnitude.
    CHECK_MESSAGE(err <= std::ldexp(mag, -6) + 1e-4, c.str() << ": max|O - gpuref| = " << err << ", max|O| " << mag);
    CHECK_MESSAGE(lerr <= 1e-3, c.str() << ": max|LSE - gpuref| = " << lerr);
    // And the full fp64 rule on a sample of rows.
    const Errors e = compare_rows(pb, o, l, pick_rows(c, 0, seed));
    CHECK_MESSAGE(e.o <= 2 * e.o_same + 1e-5, c.str() << ": sampled max|O - ref| = " << e.o << " same-dtype " << e.o_same);
  }
}

TEST_CASE("determinism: repeated runs are bitwise equal; 1000-launch race stress") {
  // On the simulator: smaller shapes (several query tiles, ragged tails, GQA) and 3 launches of the
  // stress instead of 1000 (each under the same scheduler policy and seed: what differs between GPU
  // launches, the interleaving, the simulator varies across policies in the other suites).
  const bool sim = flashptx_test::on_simulator();
  const int launches = sim ? 3 : 1000;
  Problem pb(sim ? Case{1, 300, 300, 4, 2, 128, true, FLASHPTX_BF16} : Case{2, 1000, 1000, 8, 2, 128, true, FLASHPTX_BF16}, 7000);
  pb.poison();
  pb.run();
  const auto first = pb.out();
  const auto first_l = pb.lse();
  pb.poison();
  pb.run();
  CHECK(pb.out() == first);
  const auto second_l = pb.lse();  // compared as bytes: the poisoned guard after LSE holds NaNs
  CHECK(std::memcmp(second_l.data(), first_l.data(), first_l.size() * 4) == 0);

  Problem st(sim ? Case{1, 200, 333, 2, 2, 64, false, FLASHPTX_BF16} : Case{1, 777, 1333, 4, 4, 64, false, FLASHPTX_BF16}, 7001);
  st.poison();
  st.run();
  const int mismatches = launches_differing(st, launches, [&] { return flashptx_fwd(&st.params, nullptr); });
  CHECK_MESSAGE(mismatches == 0, mismatches << " of " << launches << " launches differed from the first");
}

// The looping kernels' test (the paired kernels, the persistent d256 kernel): each case against fp64
// (and the release library bit for bit), the plan's choice (a kernel whose name holds `kernel`,
// persistent, one CTA per SM: more work units than SMs), then 1000 launches bitwise equal to the
// first.
static void check_looping_cases(const Case* cases, int n, uint64_t seed, const char* kernel) {
  for (int i = 0; i < n; ++i) {
    const Case& c = cases[i];
    INFO(c.str());
    check_case(c, seed);  // the suite's fp64 rule on sampled rows, and the release library bit for bit
    Problem st(c, seed++);
    flashptx_kernel_info info{};
    REQUIRE(flashptx_fwd_kernel_info(&st.params, &info) == FLASHPTX_OK);
    if (flashptx_test::sim_shapes_on_gpu()) {
      MESSAGE("the simulator's shape on a GPU: its SM count gives another schedule (" << info.symbol << "): not checked");
      continue;
    }
    CHECK(std::string(info.symbol).find(kernel) != std::string::npos);
    CHECK(std::string(info.schedule) == "persistent");
    int sms = 0;
    CUDA_REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(info.tiles > sms);
    CHECK(info.ctas == sms);  // more work units than SMs
    if (flashptx_test::on_simulator()) continue;  // its release comparison ran another schedule instead
    st.poison();
    st.run();
    const int mismatches = launches_differing(st, 1000, [&] { return flashptx_fwd(&st.params, nullptr); });
    CHECK_MESSAGE(mismatches == 0, mismatches << " of 1000 launches differed from the first");
  }
}

TEST_CASE("the paired causal schedule: checked against fp64, then 1000 launches bitwise equal") {
  // More units than SMs, so that CTAs walk several units; d64 with an odd number of query blocks
  // (830 rows: 7 of 128, an empty slot in the middle pair), d128 with GQA, d256 (128 x 64 tiles,
  // 1100 rows: 9 query blocks, the per-warpgroup skip; the tile feed hands over every tile; batch 3,
  // where the plan's makespan estimates choose the paired kernel: src/plan.cpp,
  // fwd_causal_paired).
  const Case cases[] = {{2, 830, 830, 32, 32, 64, true, FLASHPTX_BF16},
                        {2, 1000, 1000, 32, 8, 128, true, FLASHPTX_FP16},
                        {3, 1100, 1100, 16, 16, 256, true, FLASHPTX_BF16}};
  // On the simulator (4 SMs): 3 query blocks (an odd count) x 4 heads, d128 with GQA.
  const Case sim_cases[] = {{1, 330, 330, 4, 2, 128, true, FLASHPTX_FP16}};
  if (flashptx_test::on_simulator()) return check_looping_cases(sim_cases, 1, 7100, "_paired");
  check_looping_cases(cases, 3, 7100, "_paired");
}

TEST_CASE("the paired 192-row kernel (d64): checked against fp64, then 1000 launches bitwise equal") {
  // 1500 rows: 8 tiles of 192 (the last ragged), 4 units per (head, batch), 256 units; the plan's
  // makespan estimates choose this kernel here (src/plan.cpp, fwd_d64_causal_choice).
  const Case cases[] = {{2, 1500, 1500, 32, 32, 64, true, FLASHPTX_BF16},
                        {2, 1500, 1500, 32, 32, 64, true, FLASHPTX_FP16}};
  // On the simulator (4 SMs): 2 tiles of 192 (the last ragged) x 4 heads, where the plan's estimates
  // choose this kernel too.
  const Case sim_cases[] = {{1, 330, 330, 4, 4, 64, true, FLASHPTX_BF16}};
  if (flashptx_test::on_simulator()) return check_looping_cases(sim_cases, 1, 7200, "_m192_paired");
  check_looping_cases(cases, 2, 7200, "_paired");
}

TEST_CASE("the persistent d256 kernel (O staged in halves): checked against fp64, then 1000 launches bitwise equal") {
  // Non-causal d256 up to 4k keys loops over tiles with O staged half at a time beside Q
  // (FwdLayout::kOHalves). More tiles than SMs, so CTAs run several tiles and the next tile's Q
  // loads under the previous tile's epilogue; a ragged last tile (1000 and 777 rows), GQA, and a
  // shorter Q than K.
  const Case cases[] = {{2, 1000, 1000, 16, 4, 256, false, FLASHPTX_BF16},
                        {3, 777, 1333, 16, 16, 256, false, FLASHPTX_FP16}};
  // On the simulator (4 SMs): 3 ragged tiles x 4 heads, GQA 2, a shorter Q than K.
  const Case sim_cases[] = {{1, 300, 333, 4, 2, 256, false, FLASHPTX_BF16}};
  if (flashptx_test::on_simulator()) return check_looping_cases(sim_cases, 1, 7400, "_d256_persistent");
  check_looping_cases(cases, 2, 7400, "_d256_persistent");
}

TEST_CASE("the dynamic schedule (d64 causal, a tile counter): fp64, equal to the static schedule, counter left zero, 1000 launches") {
  // The 128-row d64 paired kernel with tile_counter: tiles longest-first inside L2 sections, taken
  // from the counter by the CTA that frees first. Each tile is computed the same way whichever CTA
  // takes it, so O and LSE equal the static schedule's bit for bit. 830 rows: 7 query blocks (the
  // longest-first order over an odd count); 512 x 4 with fp16; a shorter Q than K (bottom-right) with
  // GQA; a longer Q than K, whose first four query blocks see no key (n_max = 0: O = 0, LSE = -inf,
  // and the deferred epilogue's store taken where there is no QK(0) to hide it under).
  // (tests/host/test_plan.cpp holds that the plan runs the dynamic kernel on each.)
  const Case cases[] = {{2, 830, 830, 32, 32, 64, true, FLASHPTX_BF16},
                        {4, 512, 512, 32, 32, 64, true, FLASHPTX_FP16},
                        {4, 512, 1024, 32, 8, 64, true, FLASHPTX_BF16},
                        {2, 1024, 512, 32, 32, 64, true, FLASHPTX_BF16}};
  // On the simulator (4 SMs): more tiles than SMs, a shorter Q than K with GQA, a longer Q than K
  // whose first query blocks see no key; 3 launches instead of 1000 (as in the determinism case).
  const Case sim_cases[] = {{1, 256, 384, 4, 2, 64, true, FLASHPTX_BF16},
                            {1, 384, 256, 2, 2, 64, true, FLASHPTX_FP16}};
  const bool sim = flashptx_test::on_simulator();
  const int launches = sim ? 3 : 1000;
  int sms = 0;
  CUDA_REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  uint64_t seed = 7300;
  for (Case c : sim ? std::span<const Case>(sim_cases) : std::span<const Case>(cases)) {
    c.tile_counter = true;
    INFO(c.str());
    check_case(c, seed);  // the fp64 rule on sampled rows, the release library bit for bit
    Problem dyn(c, seed);
    Case plain = c;
    plain.tile_counter = false;
    Problem st(plain, seed++);
    flashptx_kernel_info info{};
    REQUIRE(flashptx_fwd_kernel_info(&dyn.params, &info) == FLASHPTX_OK);
    if (flashptx_test::sim_shapes_on_gpu()) {
      MESSAGE("the simulator's shape on a GPU: its SM count gives another plan (" << info.symbol << "): not checked");
    } else {
      CHECK(std::string(info.symbol).find("d64_m128_paired") != std::string::npos);
      const int64_t tiles = (c.sq + 127) / 128 * c.hq * c.batch;
      CHECK(info.ctas == std::min<int64_t>(tiles, sms));  // one CTA per SM, tiles taken one at a time
    }
    dyn.poison();
    dyn.run();
    CHECK(dyn.counter() == std::array<unsigned, 2>{0u, 0u});
    st.poison();
    st.run();
    CHECK_MESSAGE(dyn.out() == st.out(), "the dynamic schedule's O differs from the static schedule's");
    const auto ld = dyn.lse(), ls = st.lse();
    CHECK(std::memcmp(ld.data(), ls.data(), ld.size() * 4) == 0);
    const int mismatches = launches_differing(dyn, launches, [&] { return flashptx_fwd(&dyn.params, nullptr); });
    CHECK_MESSAGE(mismatches == 0, mismatches << " of " << launches << " launches differed from the first");
    CHECK(dyn.counter() == std::array<unsigned, 2>{0u, 0u});
  }
}

// ---- the score modifiers: the sliding window and the softcap (the local kernels) ------------------
// Each case: the suite's fp64 rule (all rows, or sampled ones), O's pads and guard poisoned, the
// release library bit for bit, and the plan's kernel: a local one where the window is a real window
// or there is a softcap.
static void check_local_case(const Case& c, uint64_t seed, int64_t max_rows = 4096) {
  INFO(c.str());
  check_case(c, seed, max_rows);
  Problem pb(c, seed);
  flashptx_kernel_info info{};
  REQUIRE(flashptx_fwd_kernel_info(&pb.params, &info) == FLASHPTX_OK);
  CHECK(std::string(info.symbol).find("fa3_fwd_local_sm90_") == 0);
  CHECK(std::string(info.schedule) == "one-per-tile");
}

TEST_CASE("sliding window: head dims 64/128/256, bf16 and fp16, windows inside a block, past the sequence, asymmetric, with causal") {
  struct W { int64_t sq, sk, hq, hkv, wl, wr; bool causal; };
  // Every window shape: one inside a block with Sk > Sq (Mistral's sliding window, GQA 4); an
  // asymmetric one with Sq > Sk (the first rows see no key); a left bound past the sequence (made
  // unbounded) with a right bound of 5; causal with a right bound (causal wins: (70, 0)); the
  // diagonal alone (0, 0) with Sk = 2 Sq; a right bound alone (-1, 40) (tiles in ascending cost).
  const W sim_windows[] = {{200, 333, 4, 1, 50, 0, false}, {257, 200, 2, 2, 30, 17, false},
                           {150, 150, 2, 1, 1000, 5, false}, {190, 190, 2, 2, 70, 300, true},
                           {130, 260, 2, 1, 0, 0, false},   {100, 100, 2, 2, -1, 40, false}};
  const W gpu_windows[] = {{1000, 1000, 8, 2, 256, 0, false}, {777, 1333, 4, 4, 100, 33, false},
                           {2049, 2049, 4, 1, 127, 129, true}, {1500, 700, 2, 2, 64, 64, false},
                           {513, 513, 2, 1, 0, 0, false},     {333, 4097, 4, 2, 5000, 1, false},
                           {1000, 1000, 2, 2, -1, 300, false}, {64, 1000, 2, 1, 1, 0, false}};
  uint64_t seed = 10000;
  const bool sim = flashptx_test::on_simulator();
  const std::span<const W> windows = sim ? std::span<const W>(sim_windows) : std::span<const W>(gpu_windows);
  int pair = 0;  // (head dim, dtype) pairs: on the simulator pair p takes windows p and p + 3 (each window twice)
  for (int64_t d : {64, 128, 256})
    for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16}) {
      for (size_t wi = 0; wi < windows.size(); ++wi) {
        if (sim && wi != static_cast<size_t>(pair) && wi != static_cast<size_t>(pair + 3) % windows.size()) continue;
        const W& w = windows[wi];
        Case c{1, w.sq, w.sk, w.hq, w.hkv, d, w.causal, t};
        c.window = true;
        c.wl = w.wl;
        c.wr = w.wr;
        check_local_case(c, seed++, sim ? 4096 : 2048);
      }
      ++pair;
    }
}

TEST_CASE("sliding window: blocks wholly outside every tile's window are never loaded (their K and V are NaN)") {
  // 128 query rows (one tile) against 1000 keys, window (10, 0): the rows see keys [862, 999], so K/V
  // blocks 0-5 of 128 keys (0-11 of 64 at d256) lie outside the window; their rows [0, 768) are NaN.
  // Loaded and multiplied by P = 0 they would make O NaN. GQA 2, batch 2 on the GPU.
  uint64_t seed = 10500;
  const bool sim = flashptx_test::on_simulator();
  for (int64_t d : {64, 128, 256}) {
    Case c{sim ? 1 : 2, 128, 1000, 2, 1, d, false, d == 128 ? FLASHPTX_FP16 : FLASHPTX_BF16};
    c.window = true;
    c.wl = 10;
    c.wr = 0;
    c.nan_keys = 768;
    check_local_case(c, seed++);
  }
}

TEST_CASE("softcap: with and without a window, every head dim, large scores") {
  struct S { int64_t sq, sk, hq, hkv, d; bool causal; flashptx_dtype t; float cap, qscale; bool window; int64_t wl, wr; };
  // The cap alone (non-causal and causal), on scores large enough to saturate tanh (Q scaled by 4
  // and 8: scores of tens against caps of 5 to 30), and with windows (Gemma 2's local layers:
  // a softcap and a sliding window together); GQA; a custom softmax scale on the GPU list.
  const S sim_cases[] = {{113, 203, 4, 1, 64, false, FLASHPTX_BF16, 30.f, 4.f, false, -1, -1},
                         {190, 150, 2, 2, 128, true, FLASHPTX_FP16, 5.f, 8.f, false, -1, -1},
                         {200, 200, 2, 1, 256, false, FLASHPTX_BF16, 20.f, 4.f, true, 64, 0},
                         {150, 260, 2, 2, 128, false, FLASHPTX_BF16, 50.f, 1.f, true, 33, 77}};
  const S gpu_cases[] = {{1000, 1000, 8, 2, 64, false, FLASHPTX_BF16, 30.f, 4.f, false, -1, -1},
                         {1000, 1000, 8, 2, 64, true, FLASHPTX_FP16, 30.f, 4.f, false, -1, -1},
                         {777, 1333, 4, 4, 128, true, FLASHPTX_FP16, 5.f, 8.f, false, -1, -1},
                         {777, 1333, 4, 4, 128, false, FLASHPTX_BF16, 50.f, 1.f, true, 100, 100},
                         {2049, 2049, 4, 1, 256, false, FLASHPTX_BF16, 20.f, 4.f, true, 4096 / 4, 0},
                         {1000, 700, 2, 2, 256, true, FLASHPTX_FP16, 10.f, 2.f, true, 300, 0}};
  uint64_t seed = 11000;
  const bool sim = flashptx_test::on_simulator();
  const std::span<const S> cases = sim ? std::span<const S>(sim_cases) : std::span<const S>(gpu_cases);
  for (const S& x : cases) {
    Case c{1, x.sq, x.sk, x.hq, x.hkv, x.d, x.causal, x.t};
    c.softcap = x.cap;
    c.input_scale = x.qscale;
    c.window = x.window;
    c.wl = x.wl;
    c.wr = x.wr;
    check_local_case(c, seed++, sim ? 4096 : 2048);
  }
}

TEST_CASE("bad window and softcap values are statuses; a window equal to the causal mask runs the causal kernel") {
  Problem pb(Case{1, 64, 64, 2, 2, 128, false, FLASHPTX_BF16}, 12000);
  pb.poison();
  flashptx_fwd_params p = pb.params;
  p.window = 1;
  p.window_left = -2;
  CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_ERR_BAD_WINDOW);
  p.window_left = 3;
  p.window_right = -7;
  CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_ERR_BAD_WINDOW);
  p = pb.params;
  p.softcap = -1.f;
  CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_ERR_BAD_SOFTCAP);
  p.softcap = NAN;
  CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_ERR_BAD_SOFTCAP);
  p.softcap = INFINITY;
  CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_ERR_BAD_SOFTCAP);
  CUDA_REQUIRE(cudaDeviceSynchronize());
  for (uint16_t x : pb.out()) REQUIRE(x == kPoison);
  // (-1, 0) is the causal mask, (-1, -1) none: today's kernels, the same bits as causal / non-causal.
  for (bool causal : {false, true}) {
    Problem a(Case{1, 300, 300, 2, 2, 64, causal, FLASHPTX_BF16}, 12001);
    Problem w(Case{1, 300, 300, 2, 2, 64, false, FLASHPTX_BF16}, 12001);
    w.params.window = 1;
    w.params.window_left = -1;
    w.params.window_right = causal ? 0 : -1;
    flashptx_kernel_info ia{}, iw{};
    REQUIRE(flashptx_fwd_kernel_info(&a.params, &ia) == FLASHPTX_OK);
    REQUIRE(flashptx_fwd_kernel_info(&w.params, &iw) == FLASHPTX_OK);
    CHECK(std::string(ia.symbol) == iw.symbol);
    a.poison();
    a.run();
    w.poison();
    w.run();
    CHECK(a.out() == w.out());
  }
}

// Head dims 96 and 192, and d_qk 192 with d_v 128 (src/sm90/fa3_fwd_hdim.cu): the plan's kernel for
// each (head_dim, head_dim_v) and dtype, then the fp64 rule. d96 loads a half chunk past the tensor's
// last column (TMA's zero fill) and stores O through a box clipped there: check_writes holds every
// element beside O (the padded layout's pads included) poisoned. d192: 112-key blocks (ragged in
// every shape below). (192, 128): V and O with their own strides (the padded and head-major layouts
// lay out Q/K and V/O with different row and head strides).
TEST_CASE("head dims 96 and 192, and d_v 128 beside d_qk 192: the plan's kernel, the fp64 rule") {
  struct K { int64_t d, dv; flashptx_dtype t; const char* symbol; };
  const K kernels[] = {{96, 0, FLASHPTX_BF16, "fa3_fwd_sm90_bf16_d96"},
                       {96, 96, FLASHPTX_FP16, "fa3_fwd_sm90_fp16_d96"},
                       {192, 0, FLASHPTX_FP16, "fa3_fwd_sm90_fp16_d192"},
                       {192, 192, FLASHPTX_BF16, "fa3_fwd_sm90_bf16_d192"},
                       {192, 128, FLASHPTX_BF16, "fa3_fwd_sm90_bf16_d192_v128"},
                       {192, 128, FLASHPTX_FP16, "fa3_fwd_sm90_fp16_d192_v128"}};
  for (const K& x : kernels)
    for (int causal : {0, 1}) {
      Case c{1, 100, 100, 2, 1, x.d, causal != 0, x.t};
      c.dv = x.dv;
      Problem pb(c, 9000);
      flashptx_kernel_info info{};
      REQUIRE_MESSAGE(flashptx_fwd_kernel_info(&pb.params, &info) == FLASHPTX_OK, flashptx_last_error());
      CHECK_MESSAGE(std::string(info.symbol) == x.symbol, c.str());
      CHECK(std::string(info.schedule) == "one-per-tile");
    }
  uint64_t seed = 9100;
  if (flashptx_test::on_simulator()) {
    // On the simulator: each kernel, both masks, both dtypes across the cases; ragged tiles (113 and
    // 130 rows, 200-250 keys), GQA 2 and 4, Q shorter than K (bottom-right: every row sees the first
    // keys) and longer (the first rows see no key), a padded and a head-major layout.
    auto with_dv = [](Case c, int64_t dv) { c.dv = dv; return c; };
    check_case(Case{1, 113, 203, 4, 1, 96, false, FLASHPTX_BF16}, seed++);
    check_case(with_dv(Case{1, 130, 200, 2, 1, 96, true, FLASHPTX_FP16, Layout::kPadded}, 96), seed++, 2048);
    check_case(Case{1, 113, 203, 4, 1, 192, true, FLASHPTX_BF16}, seed++);
    check_case(Case{1, 130, 250, 2, 1, 192, false, FLASHPTX_FP16, Layout::kHeadMajor}, seed++, 2048);
    check_case(with_dv(Case{1, 113, 203, 4, 1, 192, true, FLASHPTX_BF16}, 128), seed++);
    check_case(with_dv(Case{1, 200, 130, 2, 1, 192, true, FLASHPTX_FP16, Layout::kPadded}, 128), seed++, 2048);
    check_case(with_dv(Case{1, 130, 200, 2, 2, 192, false, FLASHPTX_BF16, Layout::kHeadMajor}, 128), seed++, 2048);
    return;
  }
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {17, 17}, {113, 203}, {239, 1}, {128, 128}, {1000, 1000},
                                                {300, 1000}, {1000, 300}};
  for (auto [sq, sk] : shapes)
    for (const K& x : kernels)
      for (bool causal : {false, true})
        for (int64_t ratio : {1, 4})
          for (Layout l : {Layout::kContiguous, Layout::kPadded}) {
            Case c{2, sq, sk, 2 * ratio, 2, x.d, causal, x.t, l};
            c.dv = x.dv;
            check_case(c, seed++, 2048);
          }
}

// The score modifiers at head dims 96 and 192 and (192, 128) (src/sm90/fa3_fwd_hdim_local.cu: the
// window, the softcap and the sinks in one kernel per shape and dtype, the sinks optional): every
// case is the suite's fp64 rule on every row (the softcap's tanh envelope added), O's pads and
// guard poisoned (d96's clipped store), the release library bit for bit, and the plan's kernel.
TEST_CASE("head dims 96 and 192: window, softcap and sinks against fp64, every kernel, bf16 and fp16, GQA") {
  struct M {
    int64_t sq, sk, hq, hkv, d, dv;
    bool causal;
    flashptx_dtype t;
    bool window;
    int64_t wl, wr;
    float cap, qscale;
    bool sinks;
    float sink_shift;
    bool no_sink_head0;
    Layout layout;
    int64_t nan_keys;
  };
  const auto B = FLASHPTX_BF16, H = FLASHPTX_FP16;
  const auto C = Layout::kContiguous, P = Layout::kPadded;
  // Windows smaller than a block with Sk > Sq (GQA 4), asymmetric with Sq > Sk (the first rows see no
  // key, with sinks: LSE = the sink), a left bound past the sequence (unbounded) with right 5,
  // causal with a window (causal wins on the right), the diagonal alone with Sk = 2 Sq, a right
  // bound alone (tiles in ascending cost); the softcap alone (causal, large scores) and with a
  // window; sinks alone (no mask: the sink kernel path without a window), dominant, faint, a head
  // without one; K/V NaN in the blocks no tile's window sees (never loaded); padded layouts.
  const M sim_cases[] = {
      {200, 333, 4, 1, 96, 0, false, B, true, 50, 0, 0.f, 1.f, false, 0.f, false, C, 0},
      {130, 150, 2, 2, 96, 0, true, H, false, -1, -1, 20.f, 4.f, true, -4.f, false, P, 0},
      {150, 150, 2, 1, 96, 96, false, B, false, -1, -1, 0.f, 1.f, true, 0.f, true, C, 0},
      {257, 200, 2, 1, 192, 0, false, B, true, 30, 17, 0.f, 1.f, true, 0.f, true, C, 0},
      {150, 150, 2, 2, 192, 0, false, H, true, 1000, 5, 30.f, 4.f, false, 0.f, false, P, 0},
      {128, 1000, 2, 1, 192, 0, false, B, true, 10, 0, 0.f, 1.f, false, 0.f, false, C, 768},
      {190, 190, 4, 2, 192, 128, true, B, true, 70, 300, 0.f, 1.f, true, 6.f, false, C, 0},
      {130, 260, 2, 1, 192, 128, false, H, true, 0, 0, 10.f, 2.f, true, 0.f, false, P, 0},
      {100, 100, 2, 2, 192, 128, false, H, true, -1, 40, 0.f, 1.f, false, 0.f, false, C, 0},
  };
  const M gpu_cases[] = {
      {1000, 1000, 8, 2, 96, 0, false, B, true, 256, 0, 0.f, 1.f, false, 0.f, false, C, 0},
      {777, 1333, 4, 4, 96, 0, true, H, false, -1, -1, 30.f, 4.f, true, 0.f, true, P, 0},
      {1500, 700, 2, 2, 96, 96, false, B, true, 64, 64, 0.f, 1.f, true, 3.f, false, C, 0},
      {2049, 2049, 4, 1, 192, 0, true, B, true, 127, 129, 0.f, 1.f, false, 0.f, false, C, 0},
      {1000, 1000, 8, 2, 192, 0, false, H, true, -1, 300, 20.f, 4.f, true, -4.f, false, C, 0},
      {128, 4000, 2, 1, 192, 0, false, H, true, 10, 0, 0.f, 1.f, false, 0.f, false, C, 3072},
      {1000, 1000, 8, 1, 192, 128, true, B, false, -1, -1, 0.f, 1.f, true, 0.f, true, P, 0},
      {513, 1026, 4, 2, 192, 128, false, H, true, 0, 0, 10.f, 2.f, false, 0.f, false, C, 0},
      {333, 4097, 4, 2, 192, 128, false, B, true, 5000, 1, 50.f, 1.f, true, 6.f, false, C, 0},
  };
  const bool sim = flashptx_test::on_simulator();
  uint64_t seed = 9600;
  for (const M& x : sim ? std::span<const M>(sim_cases) : std::span<const M>(gpu_cases)) {
    Case c{1, x.sq, x.sk, x.hq, x.hkv, x.d, x.causal, x.t, x.layout};
    c.dv = x.dv;
    c.window = x.window;
    c.wl = x.wl;
    c.wr = x.wr;
    c.softcap = x.cap;
    c.input_scale = x.qscale;
    c.sinks = x.sinks;
    c.sink_shift = x.sink_shift;
    c.no_sink_head0 = x.no_sink_head0;
    c.nan_keys = x.nan_keys;
    if (!sim) c.batch = 2;
    INFO(c.str());
    Problem pb(c, seed);
    flashptx_kernel_info info{};
    REQUIRE_MESSAGE(flashptx_fwd_kernel_info(&pb.params, &info) == FLASHPTX_OK, flashptx_last_error());
    const std::string want = std::string("fa3_fwd_local_sm90_") + (x.t == FLASHPTX_BF16 ? "bf16" : "fp16") + "_d" +
                             std::to_string(x.d) + (c.d_v() != x.d ? "_v" + std::to_string(c.d_v()) : "");
    CHECK(std::string(info.symbol) == want);
    CHECK(std::string(info.schedule) == "one-per-tile");
    check_case(c, seed++, sim ? 4096 : 2048);
  }
}

TEST_CASE("head dims 96 and 192: the local kernel without modifiers equals the plain kernel; unsupported pairs are statuses") {
  // The local kernel forced onto a problem without a window, softcap or sinks (its sinks are
  // optional: a null array is no sink): the plain kernel's O, and LSE within fp32 rounding.
  uint64_t seed = 9500;
  for (const auto& [d, dv, sym] : {std::tuple<int64_t, int64_t, const char*>{96, 0, "fa3_fwd_local_sm90_bf16_d96"},
                                   {192, 0, "fa3_fwd_local_sm90_bf16_d192"},
                                   {192, 128, "fa3_fwd_local_sm90_bf16_d192_v128"}}) {
    Case c{1, 150, 200, 2, 1, d, true, FLASHPTX_BF16};
    c.dv = dv;
    INFO(c.str());
    Problem plain(c, seed), local(c, seed);
    ++seed;
    plain.poison();
    plain.run();
    flashptx::FwdOptions opt;
    opt.kernel = sym;
    local.poison();
    REQUIRE_MESSAGE(flashptx::fwd(&local.params, opt, nullptr) == FLASHPTX_OK, flashptx_last_error());
    CUDA_REQUIRE(cudaDeviceSynchronize());
    const auto lo = local.out(), po = plain.out();
    check_writes(local, lo, local.lse());
    const auto ll = local.lse(), pl = plain.lse();
    int64_t o_diff = 0;
    double lse_diff = 0;
    for (size_t i = 0; i < lo.size(); ++i) o_diff += lo[i] != po[i];
    for (int64_t i = 0; i < c.batch * c.hq * c.sq; ++i) {
      const double a = ll[i], b = pl[i];
      const double rel = a == b ? 0.0 : std::fabs(a - b) / std::max(1.0, std::fabs(b));
      lse_diff = std::isnan(rel) ? INFINITY : std::max(lse_diff, rel);  // (NaN or a lone infinity: fails)
    }
    // O: the same loop and the same normalisation (1 / l, the sink term 2^-inf = 0), bit for bit
    // unless ex2.approx(0) is not exactly 1; LSE: ln 2 (ref + log2 l) against scale max + ln l.
    CHECK_MESSAGE(o_diff == 0, o_diff << " elements of O differ from the plain kernel's");
    CHECK(lse_diff <= std::ldexp(1.0, -20));
    check_case(c, seed++);  // and the plain kernel itself against fp64
  }
  Problem pb(Case{1, 64, 64, 2, 2, 96, false, FLASHPTX_BF16}, 9550);
  pb.poison();
  const auto before = pb.out();
  flashptx_fwd_params p = pb.params;
  p.head_dim_v = 64;  // (96, 64): no such pair
  CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
  CHECK(std::string(flashptx_last_error()).find("(192, 128)") != std::string::npos);
  p.window = 1;  // with a window too
  p.window_left = 16;
  CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
  // A forced kernel of another V head dim is refused (a (192, 128) problem on pb's buffers, which
  // nothing reads: kernel_info launches nothing).
  flashptx_fwd_params_contiguous(&p, pb.dq->p, pb.dk->p, pb.dv->p, pb.dout->p, nullptr, 1, 16, 16, 1, 1, 192,
                                 FLASHPTX_BF16, 0);
  p.head_dim_v = 128;
  p.v_row_stride = p.v_head_stride = p.o_row_stride = p.o_head_stride = 128;
  p.v_batch_stride = p.o_batch_stride = 16 * 128;
  flashptx::FwdOptions opt;
  opt.kernel = "fa3_fwd_sm90_bf16_d192";
  flashptx_kernel_info info{};
  CHECK(flashptx::fwd_kernel_info(&p, opt, &info) == FLASHPTX_ERR_BAD_OPTION);
  CHECK(std::string(flashptx_last_error()).find("fa3_fwd_sm90_bf16_d192 is for head_dim 192") != std::string::npos);
  opt.kernel = "fa3_fwd_local_sm90_bf16_d192";
  p.softcap = 10.f;
  CHECK(flashptx::fwd_kernel_info(&p, opt, &info) == FLASHPTX_ERR_BAD_OPTION);
  opt.kernel = "fa3_fwd_local_sm90_bf16_d192_v128";
  CHECK(flashptx::fwd_kernel_info(&p, opt, &info) == FLASHPTX_OK);
  p.softcap = 0.f;
  opt.kernel = "fa3_fwd_sm90_bf16_d192_v128";
  CHECK(flashptx::fwd_kernel_info(&p, opt, &info) == FLASHPTX_OK);
  CUDA_REQUIRE(cudaDeviceSynchronize());
  CHECK(pb.out() == before);
}

TEST_CASE("bad input on the device path: nothing launched, O untouched") {
  Problem pb(Case{1, 64, 64, 2, 2, 128, false, FLASHPTX_BF16}, 8000);
  pb.poison();
  flashptx_fwd_params p = pb.params;
  p.head_dim = 80;
  CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
  p = pb.params;
  p.head_dim_v = 64;  // (128, 64): no such pair
  CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
  p = pb.params;
  p.o = static_cast<char*>(pb.dout->p) + 2;
  CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_ERR_MISALIGNED);
  p = pb.params;
  p.heads_q = 3;
  CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_ERR_BAD_HEADS);
  p = pb.params;
  p.tile_counter = reinterpret_cast<unsigned int*>(static_cast<char*>(pb.dlse->p) + 4);
  CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_ERR_MISALIGNED);
  p = pb.params;
  p.batch = 0;
  CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_OK);
  CUDA_REQUIRE(cudaDeviceSynchronize());
  const auto o = pb.out();
  for (uint16_t x : o) REQUIRE(x == kPoison);
}

}  // TEST_SUITE

// The kernels users link: the release libflashptx.so (tests/gpu/release_lib.h). Every correctness
// case above already compares it bit for bit with the test build; here the shapes whose K/V ring
// wraps many times (where racecheck reported trouble on the release build only) and a race stress
// through the release library itself. The runner skips this suite, with the reason, when the
// library cannot be found.
TEST_SUITE("gpu_sm90 release flavour") {

TEST_CASE("release library: ring-wrapping shapes equal the test build bit for bit and the fp64 rule holds") {
  uint64_t seed = 9000;
  const Case cases[] = {
      {1, 1, 4096, 2, 2, 64, false, FLASHPTX_BF16},   {1, 4096, 4096, 2, 2, 64, false, FLASHPTX_BF16},
      {1, 1000, 1000, 8, 4, 128, false, FLASHPTX_BF16}, {1, 1024, 1024, 2, 2, 128, false, FLASHPTX_FP16},
      {1, 1000, 1000, 2, 2, 256, false, FLASHPTX_BF16, Layout::kHeadMajor},
      {2, 2049, 63, 2, 2, 128, true, FLASHPTX_BF16},
  };
  // On the simulator: the ring wraps at a few hundred keys (one query row against 600 keys, 300 x 300
  // with GQA, head-major d256, a causal shape with one ragged key block).
  const Case sim_cases[] = {
      {1, 1, 600, 2, 2, 64, false, FLASHPTX_BF16},      {1, 300, 300, 2, 1, 128, false, FLASHPTX_FP16},
      {1, 130, 400, 1, 1, 256, false, FLASHPTX_BF16, Layout::kHeadMajor},
      {1, 200, 63, 2, 2, 128, true, FLASHPTX_BF16},
  };
  for (const Case& c : flashptx_test::on_simulator() ? std::span<const Case>(sim_cases) : std::span<const Case>(cases))
    check_case(c, seed++, 512);
}

TEST_CASE("release library: 1000 launches of a ring-wrapping shape are bitwise identical") {
  const auto& rel = flashptx_test::release_lib();
  REQUIRE_MESSAGE(rel.loaded(), rel.why);
  // On the simulator: 300 x 300 (the ring wraps in every tile), 3 launches instead of 1000.
  const bool sim = flashptx_test::on_simulator();
  const int launches = sim ? 3 : 1000;
  for (bool causal : {false, true}) {
    Problem st(sim ? Case{1, 300, 300, 2, 1, 128, causal, FLASHPTX_BF16} : Case{2, 1500, 1500, 4, 2, 128, causal, FLASHPTX_BF16},
               9100 + causal);
    st.poison();
    st.run_release();
    const int mismatches = launches_differing(st, launches, [&] { return rel.fwd(&st.params, nullptr); });
    CHECK_MESSAGE(mismatches == 0, mismatches << " of " << launches << " release launches differed (causal " << causal << ")");
  }
}

}  // TEST_SUITE
