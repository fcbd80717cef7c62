// The FA3 varlen forward on the GPU (flashptx_fwd_varlen): packed [total, heads, d] tensors with
// cu_seqlens, against the CPU fp64 reference run per sequence, under FlashAttention's rule
// max|out - ref| <= 2 * max|same_dtype_ref - ref| + 1e-5 (tests/gpu/test_fa3_fwd.cpp states it and
// the LSE's fp32 term), over every checked row of every sequence of a batch.
//
// What a varlen kernel can get wrong beyond the fixed-length one, and where each is caught:
//   - a tail tile's O store writing past its sequence's end into the next sequence (another CTA's
//     rows): the first 64 rows of every sequence (where a 64-row box from the previous sequence's
//     last rows would land) are compared with the reference, for the first head and the last;
//   - writes past the packed tensor, or into pads: O and LSE are poisoned (NaN) before each run,
//     with a guard region after each; every element that is not an output must keep the poison,
//     every output element must be written and finite;
//   - keys of the next sequence leaking into a row (the ragged K bound per sequence): the last rows
//     of every sequence and sequences whose key length is not a multiple of the block;
//   - the LSE layout [heads_q, total_q];
//   - bad cu_seqlens: a status, nothing launched, O untouched.
// Every checked case also runs through the release libflashptx.so and must give the same bits.
// Inputs are fresh random values. Reference rows are sampled on long sequences (all rows of short
// ones) and computed on every host core, so that the suite stays within seconds.
// Timing is not tested here: tools/bench/varlen_time.py times varlen against the padded batch.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "include/flashptx.h"
#include "tools/support/dtype.h"
#include "tools/support/reference.h"
#include "tests/gpu/release_lib.h"
#include "tests/gpu/test_util.h"
#include "tests/sim/sim_schedule.h"

namespace {

using namespace flashptx_test;

struct VCase {
  std::vector<int> lq, lk;  // per sequence
  int64_t hq, hkv, d;
  bool causal;
  flashptx_dtype dtype;
  bool padded = false;  // head stride d + 8, row stride heads * (d + 8) + 16: pads stay poisoned
  bool window = false;  // the sliding window (wl, wr), per sequence (the local varlen kernels)
  int64_t wl = -1, wr = -1;
  std::vector<int> uq = {}, uk = {};  // seqused_q / seqused_k, per sequence (empty: NULL, every row used)
  int64_t dv = 0;        // V's and O's head dim (flashptx_fwd_varlen_params::head_dim_v): 0 passes 0 (d)
  float softcap = 0.f;   // the softcap (flashptx_fwd_varlen_params::softcap), 0: none
  float qscale = 1.f;    // Q's values scaled (large scores: the softcap's saturation)
  int64_t d_v() const { return dv != 0 ? dv : d; }
  // The plan's kernel family: the local varlen kernels for a window, a softcap, or head dims 96, 192
  // and (192, 128) (one kernel per shape serves every call there).
  bool local() const { return window || softcap != 0.f || d == 96 || d == 192 || d_v() != d; }
  int used_q(size_t b) const { return uq.empty() ? lq[b] : uq[b]; }
  int used_k(size_t b) const { return uk.empty() ? lk[b] : uk[b]; }
  std::string str() const {
    std::string s = "seqs=" + std::to_string(lq.size()) + " lq=[";
    auto list = [&s](const std::vector<int>& l) {
      for (size_t i = 0; i < l.size() && i < 12; ++i) {
        if (i) s += ',';
        s += std::to_string(l[i]);
      }
      s += l.size() > 12 ? ",...]" : "]";
    };
    list(lq);
    s += " lk=[";
    list(lk);
    if (!uq.empty()) {
      s += " seqused_q=[";
      list(uq);
    }
    if (!uk.empty()) {
      s += " seqused_k=[";
      list(uk);
    }
    return s + " Hq=" + std::to_string(hq) + " Hkv=" + std::to_string(hkv) + " d=" + std::to_string(d) +
           (causal ? " causal" : "") + (dtype == FLASHPTX_BF16 ? " bf16" : " fp16") + (padded ? " padded" : "") +
           (window ? " window=(" + std::to_string(wl) + "," + std::to_string(wr) + ")" : "") +
           (dv != 0 ? " dv=" + std::to_string(dv) : "") + (softcap != 0.f ? " softcap=" + std::to_string(softcap) : "") +
           (qscale != 1.f ? " qscale=" + std::to_string(qscale) : "");
  }
};

std::vector<int32_t> prefix(const std::vector<int>& lens) {
  std::vector<int32_t> cu(lens.size() + 1, 0);
  for (size_t i = 0; i < lens.size(); ++i) cu[i + 1] = cu[i] + lens[i];
  return cu;
}

struct Packed {
  int64_t rs, hs;  // row and head strides in elements
  int64_t elems;   // storage of `rows` rows
};
Packed packed(int64_t rows, int64_t heads, int64_t d, bool padded) {
  const int64_t hs = padded ? d + 8 : d, rs = padded ? heads * hs + 16 : heads * d;
  return {rs, hs, std::max<int64_t>(rows * rs, 1)};
}

struct VProblem {
  VCase c;
  std::vector<int32_t> cu_q, cu_k;
  int64_t total_q = 0, total_k = 0;
  Packed pq{}, pk{}, pv{}, po{}, pvr{};
  std::vector<uint16_t> q, k, v;
  // V for the reference, which has one head dim: where d_v < d, a contiguous [total_k, hkv, d] copy
  // whose columns [d_v, d) are 0 (a zero column of V adds nothing to O's first d_v columns), else v.
  std::vector<uint16_t> v_ref;
  std::unique_ptr<DeviceBuf> dq, dk, dv, dout, dlse;
  flashptx_fwd_varlen_params params{};

  VProblem(const VCase& cs, uint64_t seed) : c(cs) {
    REQUIRE(c.lq.size() == c.lk.size());
    cu_q = prefix(c.lq);
    cu_k = prefix(c.lk);
    total_q = cu_q.back();
    total_k = cu_k.back();
    pq = packed(total_q, c.hq, c.d, c.padded);
    pk = packed(total_k, c.hkv, c.d, c.padded);
    pv = packed(total_k, c.hkv, c.d_v(), c.padded);
    po = packed(total_q, c.hq, c.d_v(), c.padded);
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    auto fill = [&](std::vector<uint16_t>& x, const Packed& p, int64_t rows, int64_t heads, int64_t cols, float scale) {
      x.assign(static_cast<size_t>(p.elems), to_storage(c.dtype, 0.5f));  // pads: finite, never read
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t e = 0; e < cols; ++e) x[r * p.rs + h * p.hs + e] = to_storage(c.dtype, scale * nd(rng));
    };
    fill(q, pq, total_q, c.hq, c.d, c.qscale);
    fill(k, pk, total_k, c.hkv, c.d, 1.f);
    fill(v, pv, total_k, c.hkv, c.d_v(), 1.f);
    if (c.d_v() == c.d) {
      v_ref = v;
      pvr = pv;
    } else {
      pvr = packed(total_k, c.hkv, c.d, false);
      v_ref.assign(static_cast<size_t>(pvr.elems), to_storage(c.dtype, 0.f));
      for (int64_t r = 0; r < total_k; ++r)
        for (int64_t h = 0; h < c.hkv; ++h)
          for (int64_t e = 0; e < c.d_v(); ++e) v_ref[r * pvr.rs + h * pvr.hs + e] = v[r * pv.rs + h * pv.hs + e];
    }
    dq.reset(new DeviceBuf(q.size() * 2));
    dk.reset(new DeviceBuf(k.size() * 2));
    dv.reset(new DeviceBuf(v.size() * 2));
    dout.reset(new DeviceBuf((static_cast<size_t>(po.elems) + kGuard) * 2));
    dlse.reset(new DeviceBuf((static_cast<size_t>(c.hq * total_q) + kGuard) * 4));
    CUDA_REQUIRE(cudaMemcpy(dq->p, q.data(), q.size() * 2, cudaMemcpyHostToDevice));
    CUDA_REQUIRE(cudaMemcpy(dk->p, k.data(), k.size() * 2, cudaMemcpyHostToDevice));
    CUDA_REQUIRE(cudaMemcpy(dv->p, v.data(), v.size() * 2, cudaMemcpyHostToDevice));
    flashptx_fwd_varlen_params_contiguous(&params, dq->p, dk->p, dv->p, dout->p, static_cast<float*>(dlse->p),
                                          cu_q.data(), cu_k.data(), static_cast<int64_t>(c.lq.size()), c.hq, c.hkv,
                                          c.d, c.dtype, c.causal ? 1 : 0);
    params.q_row_stride = pq.rs;
    params.q_head_stride = pq.hs;
    params.o_row_stride = po.rs;
    params.o_head_stride = po.hs;
    params.k_row_stride = pk.rs;
    params.k_head_stride = pk.hs;
    params.v_row_stride = pv.rs;
    params.v_head_stride = pv.hs;
    params.head_dim_v = c.dv;
    params.window = c.window ? 1 : 0;
    params.window_left = c.wl;
    params.window_right = c.wr;
    params.softcap = c.softcap;
    if (!c.uq.empty()) params.seqused_q = c.uq.data();  // (c is this problem's own copy: the pointers stay valid)
    if (!c.uk.empty()) params.seqused_k = c.uk.data();
  }

  void poison() {
    CUDA_REQUIRE(cudaMemset(dout->p, 0xFF, dout->bytes));  // 0xFFFF: NaN
    CUDA_REQUIRE(cudaMemset(dlse->p, 0xFF, dlse->bytes));  // 0xFFFFFFFF: NaN
  }
  void run() {
    const flashptx_status s = flashptx_fwd_varlen(&params, nullptr);
    REQUIRE_MESSAGE(s == FLASHPTX_OK, flashptx_last_error());
    CUDA_REQUIRE(cudaGetLastError());
    CUDA_REQUIRE(cudaDeviceSynchronize());
  }
  std::vector<uint16_t> out() const {
    std::vector<uint16_t> o(dout->bytes / 2);
    CUDA_REQUIRE(cudaMemcpy(o.data(), dout->p, dout->bytes, cudaMemcpyDeviceToHost));
    return o;
  }
  std::vector<float> lse() const {
    std::vector<float> l(dlse->bytes / 4);
    CUDA_REQUIRE(cudaMemcpy(l.data(), dlse->p, dlse->bytes, cudaMemcpyDeviceToHost));
    return l;
  }

  // Sequence b as a fixed-length problem of batch 1 for the reference (its used lengths: the rows and
  // keys past them are not part of the problem), and views into the packed host copies at its first row.
  flashptx::ref::Problem seq_problem(size_t b) const {
    auto rp = ref_problem(1, c.used_q(b), c.used_k(b), c.hq, c.hkv, c.d, c.causal, 0.f);
    if (c.window) {
      rp.window_left = c.wl;
      rp.window_right = c.wr;
    }
    rp.softcap = c.softcap;
    return rp;
  }
  flashptx::ref::TensorView seq_view(const std::vector<uint16_t>& x, const Packed& p, int64_t row0) const {
    flashptx::ref::TensorView t;
    t.data = x.data() + row0 * p.rs;
    t.type = c.dtype == FLASHPTX_BF16 ? flashptx::ref::Elem::kBF16 : flashptx::ref::Elem::kFP16;
    t.batch_stride = 0;
    t.row_stride = p.rs;
    t.head_stride = p.hs;
    return t;
  }
};

// The packed rows that are outputs: every row of every sequence, or with seqused_q its used rows.
std::vector<char> used_rows(const std::vector<int32_t>& cu, const std::vector<int>& used) {
  std::vector<char> u(static_cast<size_t>(cu.back()), 1);
  if (used.empty()) return u;
  for (size_t b = 0; b + 1 < cu.size(); ++b)
    for (int32_t r = cu[b] + used[b]; r < cu[b + 1]; ++r) u[static_cast<size_t>(r)] = 0;
  return u;
}

// Every element that is not an output element keeps the poison (the rows past seqused_q included);
// every output element is finite.
void check_writes(const VProblem& pb, const std::vector<uint16_t>& o, const std::vector<float>& lse) {
  const VCase& c = pb.c;
  const std::vector<char> row_out = used_rows(pb.cu_q, c.uq);
  std::vector<char> is_out(o.size(), 0);
  int64_t non_finite = 0, clobbered = 0;
  for (int64_t r = 0; r < pb.total_q; ++r)
    if (row_out[static_cast<size_t>(r)])
    for (int64_t h = 0; h < c.hq; ++h)
      for (int64_t e = 0; e < c.d_v(); ++e) {
        const int64_t idx = r * pb.po.rs + h * pb.po.hs + e;
        is_out[idx] = 1;
        if (!std::isfinite(from_storage(c.dtype, o[idx]))) ++non_finite;
      }
  for (size_t i = 0; i < o.size(); ++i)
    if (!is_out[i] && o[i] != kPoison) ++clobbered;
  CHECK_MESSAGE(non_finite == 0, c.str() << ": " << non_finite << " output elements not written or not finite");
  CHECK_MESSAGE(clobbered == 0, c.str() << ": " << clobbered << " elements outside O (pads, guard, rows past seqused_q) were written");
  if (c.uq.empty()) {
    check_lse_writes(lse, c.hq * pb.total_q, c.str());
    return;
  }
  // LSE [heads_q, total_q]: the used rows written (not NaN), every other value and the guard poisoned.
  int64_t lse_bad = 0, lse_clobbered = 0;
  for (size_t i = 0; i < lse.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &lse[i], 4);
    const bool out = i < static_cast<size_t>(c.hq * pb.total_q) && row_out[i % static_cast<size_t>(pb.total_q)];
    if (out && std::isnan(lse[i])) ++lse_bad;
    if (!out && u != 0xFFFFFFFFu) ++lse_clobbered;
  }
  CHECK_MESSAGE(lse_bad == 0, c.str() << ": " << lse_bad << " LSE values of used rows not written");
  CHECK_MESSAGE(lse_clobbered == 0, c.str() << ": " << lse_clobbered << " LSE values past seqused_q or LSE were written");
}

struct Row { int64_t seq, i, h; };

// Rows to compare: every row of a sequence of at most 256 rows (all heads up to 2, else the first
// and last heads); on longer ones the first 64 rows and the last 8 of the first head, rows at the
// sequence's ends and its first block edge of the last head, and 4 random rows of random heads.
std::vector<Row> pick_rows(const VCase& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Row> rows;
  for (size_t b = 0; b < c.lq.size(); ++b) {
    const int64_t n = c.used_q(b);
    if (n == 0) continue;
    std::vector<int64_t> heads = {0};
    if (c.hq > 1) heads.push_back(c.hq - 1);
    if (n <= 256) {
      if (c.hq <= 2) {
        heads.clear();
        for (int64_t h = 0; h < c.hq; ++h) heads.push_back(h);
      }
      for (int64_t h : heads)
        for (int64_t i = 0; i < n; ++i) rows.push_back({static_cast<int64_t>(b), i, h});
      continue;
    }
    for (int64_t i = 0; i < 64; ++i) rows.push_back({static_cast<int64_t>(b), i, 0});
    for (int64_t i = n - 8; i < n; ++i) rows.push_back({static_cast<int64_t>(b), i, 0});
    for (int64_t i : {int64_t(0), int64_t(63), int64_t(64), n - 65, n - 64, n - 1})
      rows.push_back({static_cast<int64_t>(b), i, c.hq - 1});
    for (int t = 0; t < 4; ++t)
      rows.push_back({static_cast<int64_t>(b), static_cast<int64_t>(rng() % n), static_cast<int64_t>(rng() % c.hq)});
  }
  return rows;
}

// o_env, lse_env: the softcap's tanh.approx envelope (ref::forward_row's tanh_env), 0 without one.
struct Errors { double o = 0, o_same = 0, lse = 0, lse_same = 0, lse_mag = 0, o_env = 0, lse_env = 0; int64_t rows = 0; };

// The rows [begin, end) of `rows`.
Errors compare_part(const VProblem& pb, const std::vector<uint16_t>& o, const std::vector<float>& lse,
                    const std::vector<Row>& rows, size_t begin, size_t end) {
  const VCase& c = pb.c;
  const auto same = c.dtype == FLASHPTX_BF16 ? flashptx::Round::kBF16 : flashptx::Round::kFP16;
  std::vector<double> ref(c.d), refs(c.d), env(c.d);
  Errors e;
  for (size_t x = begin; x < end; ++x) {
    const Row& r = rows[x];
    const size_t b = static_cast<size_t>(r.seq);
    const auto rp = pb.seq_problem(b);
    const auto qv = pb.seq_view(pb.q, pb.pq, pb.cu_q[b]);
    const auto kv = pb.seq_view(pb.k, pb.pk, pb.cu_k[b]);
    const auto vv = pb.seq_view(pb.v_ref, pb.pvr, pb.cu_k[b]);
    double lse_env = 0;
    const double l_ref =
        flashptx::ref::forward_row(rp, qv, kv, vv, 0, r.i, r.h, ref.data(), flashptx::Round::kNone, env.data(), &lse_env);
    for (int64_t x = 0; x < c.d_v(); ++x) e.o_env = std::max(e.o_env, env[x]);
    e.lse_env = std::max(e.lse_env, lse_env);
    const double l_same = flashptx::ref::forward_row(rp, qv, kv, vv, 0, r.i, r.h, refs.data(), same);
    const int64_t packed_row = pb.cu_q[b] + r.i;
    for (int64_t x = 0; x < c.d_v(); ++x) {
      const double out = from_storage(c.dtype, o[packed_row * pb.po.rs + r.h * pb.po.hs + x]);
      e.o = std::max(e.o, std::fabs(out - ref[x]));
      e.o_same = std::max(e.o_same, std::fabs(refs[x] - ref[x]));
    }
    const double l_out = lse[r.h * pb.total_q + packed_row];  // [heads_q, total_q]
    if (std::isinf(l_ref)) {
      if (!(std::isinf(l_out) && l_out < 0)) e.lse = INFINITY;
    } else {
      e.lse = std::max(e.lse, std::fabs(l_out - l_ref));
      e.lse_same = std::max(e.lse_same, std::fabs(l_same - l_ref));
      e.lse_mag = std::max(e.lse_mag, std::fabs(l_ref));
    }
    ++e.rows;
  }
  return e;
}

// All of `rows`, split over the host's cores (on_host_threads).
Errors compare(const VProblem& pb, const std::vector<uint16_t>& o, const std::vector<float>& lse,
               const std::vector<Row>& rows) {
  std::vector<Errors> part(16);
  on_host_threads([&](size_t t, size_t n) {
    // interleaved, so that long and short sequences spread over the threads
    std::vector<Row> mine;
    for (size_t x = t; x < rows.size(); x += n) mine.push_back(rows[x]);
    part[t] = compare_part(pb, o, lse, mine, 0, mine.size());
  });
  Errors e;
  for (const Errors& p : part) {
    e.o = std::max(e.o, p.o);
    e.o_same = std::max(e.o_same, p.o_same);
    e.lse = std::max(e.lse, p.lse);
    e.lse_same = std::max(e.lse_same, p.lse_same);
    e.lse_mag = std::max(e.lse_mag, p.lse_mag);
    e.o_env = std::max(e.o_env, p.o_env);
    e.lse_env = std::max(e.lse_env, p.lse_env);
    e.rows += p.rows;
  }
  return e;
}

void check_varlen(const VCase& c, uint64_t seed) {
  INFO(c.str());
  VProblem pb(c, seed);
  pb.poison();
  pb.run();
  const auto o = pb.out();
  const auto l = pb.lse();
  check_writes(pb, o, l);
  const Errors e = compare(pb, o, l, pick_rows(c, seed ^ 0x51ed));
  // (+ the softcap's tanh.approx envelope, 0 without one, as tests/gpu/test_fa3_fwd.cpp.)
  const double o_tol = 2 * e.o_same + 1e-5 + e.o_env;
  const double lse_tol = 2 * e.lse_same + 1e-5 + std::ldexp(e.lse_mag, -20) + e.lse_env;
  CHECK_MESSAGE(e.o <= o_tol, c.str() << ": max|O - ref| = " << e.o << " > " << o_tol << " (same-dtype " << e.o_same
                                      << ", " << e.rows << " rows)");
  CHECK_MESSAGE(e.lse <= lse_tol, c.str() << ": max|LSE - ref| = " << e.lse << " > " << lse_tol);
  // kernel_info describes what launched.
  flashptx_kernel_info info{};
  REQUIRE(flashptx_fwd_varlen_kernel_info(&pb.params, &info) == FLASHPTX_OK);
  CHECK(std::string(info.symbol).rfind(c.local() ? "fa3_fwd_varlen_local_sm90_" : "fa3_fwd_varlen_sm90_", 0) == 0);
  CHECK(info.ctas == info.tiles);
  CHECK(std::string(info.schedule) == "one-per-tile");
  // The kernels users link (the release libflashptx.so, tests/gpu/release_lib.h) compute the same
  // bits: the wait loop is the only difference between the flavours.
  const auto& rel = flashptx_test::release_lib();
  if (rel.loaded()) {
    pb.poison();
    REQUIRE_MESSAGE(rel.fwd_varlen(&pb.params, nullptr) == FLASHPTX_OK, rel.last_error());
    CUDA_REQUIRE(cudaDeviceSynchronize());
    CHECK_MESSAGE(pb.out() == o, c.str() << ": the release library's O differs from the test build's");
    const auto lr = pb.lse();
    CHECK_MESSAGE(std::memcmp(lr.data(), l.data(), l.size() * 4) == 0,
                  c.str() << ": the release library's LSE differs from the test build's");
  }
}

std::vector<int> random_lengths(std::mt19937_64& rng, int n, int max_len, double zero_fraction) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<int> lens(static_cast<size_t>(n));
  for (int& l : lens) l = u(rng) < zero_fraction ? 0 : static_cast<int>(rng() % (max_len + 1));
  return lens;
}


// ---- the varlen backward (flashptx_bwd_varlen) ------------------------------------------------------
// O and LSE from flashptx_fwd_varlen (as in training), then the backward over the same packed
// tensors; per sequence against the fp64 reference backward of that sequence as a batch of one,
// under the fixed-length backward's rule (tests/gpu/test_fa3_bwd.cpp states it):
//   max|g - g_ref| <= 2 * max|g_same - g_ref| + 1e-5 + the fp32 envelope of dS (dQ and dK),
// the maxima over every element of every sequence. What a varlen backward can get wrong beyond the
// fixed-length one: a key block's dK/dV tail store landing on the next sequence's first keys (every
// key row of every sequence is compared, and a sequence's first rows follow another's tail); keys or
// query rows of the next sequence leaking into a sequence's sums (ragged lengths, block edges); the
// padded scratch of one sequence read by another (lengths not multiples of the block); an empty
// sequence (no query rows: dK = dV = 0; no keys: dQ = 0); writes past the packed tensors (guards
// poisoned, every gradient element written and finite).
struct VBCase {
  std::vector<int> lq, lk;
  int64_t hq, hkv, d;
  bool causal;
  flashptx_dtype dtype;
  bool deterministic = false;
  std::vector<int> uq = {}, uk = {};  // seqused_q / seqused_k for the forward and the backward (empty: NULL)
  bool window = false;  // the sliding window and the softcap, both calls (the local kernels)
  int64_t wl = -1, wr = -1;
  float softcap = 0.f;
  // Every tensor, forward and backward (Q, K, V, O, dO, dQ, dK, dV), at VCase::padded's strides (head
  // stride d + 8, row stride heads (d + 8) + 16): the pads between heads and rows are poisoned in the
  // gradients and must stay so (a store of columns past d lands there first).
  bool padded = false;
  int64_t dv = 0;  // V's, O's, dO's and dV's head dim (flashptx_bwd_varlen_params::head_dim_v): 0 passes 0 (d)
  int64_t d_v() const { return dv != 0 ? dv : d; }
  bool local() const { return (window && (wl >= 0 || wr >= 0)) || softcap != 0.f; }
  VCase fwd() const {
    VCase f{lq, lk, hq, hkv, d, causal, dtype};
    f.padded = padded;
    f.dv = dv;
    f.uq = uq;
    f.uk = uk;
    f.window = window;
    f.wl = wl;
    f.wr = wr;
    f.softcap = softcap;
    return f;
  }
  std::string str() const { return fwd().str() + " backward" + (deterministic ? " deterministic" : ""); }
};

struct VBProblem {
  VBCase c;
  VProblem f;  // Q, K, V and the forward's O and LSE
  std::vector<uint16_t> dout;  // at O's layout (f.po: d_v columns)
  // dO for the reference, which has one head dim: where d_v < d, a contiguous [total_q, hq, d] copy
  // whose columns [d_v, d) are 0 (as VProblem::v_ref), else dout.
  Packed pdr{};
  std::vector<uint16_t> dout_ref;
  std::unique_ptr<DeviceBuf> ddo, ddq, ddk, ddv, dws;
  flashptx_bwd_varlen_params params{};

  VBProblem(const VBCase& cs, uint64_t seed) : c(cs), f(cs.fwd(), seed) {
    f.poison();
    f.run();
    std::mt19937_64 rng(seed ^ 0xd0);
    std::normal_distribution<float> nd(0.f, 1.f);
    dout.assign(static_cast<size_t>(f.po.elems), to_storage(c.dtype, 0.5f));
    for (int64_t r = 0; r < f.total_q; ++r)
      for (int64_t h = 0; h < c.hq; ++h)
        for (int64_t e = 0; e < c.d_v(); ++e) dout[r * f.po.rs + h * f.po.hs + e] = to_storage(c.dtype, nd(rng));
    if (c.d_v() == c.d) {
      dout_ref = dout;
      pdr = f.po;
    } else {
      pdr = packed(f.total_q, c.hq, c.d, false);
      dout_ref.assign(static_cast<size_t>(pdr.elems), to_storage(c.dtype, 0.f));
      for (int64_t r = 0; r < f.total_q; ++r)
        for (int64_t h = 0; h < c.hq; ++h)
          for (int64_t e = 0; e < c.d_v(); ++e)
            dout_ref[r * pdr.rs + h * pdr.hs + e] = dout[r * f.po.rs + h * f.po.hs + e];
    }
    ddo.reset(new DeviceBuf(dout.size() * 2));
    CUDA_REQUIRE(cudaMemcpy(ddo->p, dout.data(), dout.size() * 2, cudaMemcpyHostToDevice));
    ddq.reset(new DeviceBuf((static_cast<size_t>(f.pq.elems) + kGuard) * 2));
    ddk.reset(new DeviceBuf((static_cast<size_t>(f.pk.elems) + kGuard) * 2));
    ddv.reset(new DeviceBuf((static_cast<size_t>(f.pv.elems) + kGuard) * 2));
    flashptx_bwd_varlen_params_contiguous(&params, f.dq->p, f.dk->p, f.dv->p, f.dout->p, static_cast<float*>(f.dlse->p),
                                          ddo->p, ddq->p, ddk->p, ddv->p, f.cu_q.data(), f.cu_k.data(),
                                          static_cast<int64_t>(c.lq.size()), c.hq, c.hkv, c.d, c.dtype,
                                          c.causal ? 1 : 0);
    // The forward's layouts (contiguous unless padded); dQ as Q, dO as O, dK as K, dV as V.
    params.q_row_stride = params.dq_row_stride = f.pq.rs;
    params.q_head_stride = params.dq_head_stride = f.pq.hs;
    params.do_row_stride = f.po.rs;
    params.do_head_stride = f.po.hs;
    params.head_dim_v = c.dv;
    params.k_row_stride = params.dk_row_stride = f.pk.rs;
    params.k_head_stride = params.dk_head_stride = f.pk.hs;
    params.v_row_stride = params.dv_row_stride = f.pv.rs;
    params.v_head_stride = params.dv_head_stride = f.pv.hs;
    params.o_row_stride = f.po.rs;
    params.o_head_stride = f.po.hs;
    params.deterministic = c.deterministic ? 1 : 0;
    params.window = c.window ? 1 : 0;
    params.window_left = c.wl;
    params.window_right = c.wr;
    params.softcap = c.softcap;
    params.seqused_q = f.params.seqused_q;  // the forward's (f.c's arrays)
    params.seqused_k = f.params.seqused_k;
    int64_t ws = 0;
    REQUIRE_MESSAGE(flashptx_bwd_varlen_workspace_size(&params, &ws) == FLASHPTX_OK, flashptx_last_error());
    dws.reset(new DeviceBuf(static_cast<size_t>(std::max<int64_t>(ws, 256))));
    CUDA_REQUIRE(cudaMemset(dws->p, 0xAB, dws->bytes));  // stale garbage: the library must zero what it needs
    params.workspace = dws->p;
    params.workspace_bytes = ws;
  }
  void poison() {
    for (auto* b : {ddq.get(), ddk.get(), ddv.get()}) CUDA_REQUIRE(cudaMemset(b->p, 0xFF, b->bytes));
  }
  void run() {
    const flashptx_status s = flashptx_bwd_varlen(&params, nullptr);
    REQUIRE_MESSAGE(s == FLASHPTX_OK, flashptx_last_error());
    CUDA_REQUIRE(cudaGetLastError());
    CUDA_REQUIRE(cudaDeviceSynchronize());
  }
  static std::vector<uint16_t> fetch(const DeviceBuf& b) {
    std::vector<uint16_t> h(b.bytes / 2);
    CUDA_REQUIRE(cudaMemcpy(h.data(), b.p, b.bytes, cudaMemcpyDeviceToHost));
    return h;
  }
  struct Grads { std::vector<uint16_t> dq, dk, dv; };
  Grads grads() const { return Grads{fetch(*ddq), fetch(*ddk), fetch(*ddv)}; }
};

// Every gradient element written and finite; every other element of the buffers (the guard after
// each tensor, and with padded strides the columns past d of each head and the pad after each row)
// still poisoned. With seqused_q/_k, the dQ rows past a sequence's used query rows and the dK/dV rows
// past its used keys are not written either: they keep the poison (include/flashptx.h,
// flashptx_bwd_varlen_params).
void check_bwd_writes(const VBProblem& pb, const VBProblem::Grads& g) {
  const VBCase& c = pb.c;
  const std::vector<char> rows_q = used_rows(pb.f.cu_q, c.uq), rows_k = used_rows(pb.f.cu_k, c.uk);
  struct T { const char* name; const std::vector<uint16_t>& x; const Packed& p; int64_t rows, heads, cols;
             const std::vector<char>& used; };
  const T ts[] = {{"dQ", g.dq, pb.f.pq, pb.f.total_q, c.hq, c.d, rows_q},
                  {"dK", g.dk, pb.f.pk, pb.f.total_k, c.hkv, c.d, rows_k},
                  {"dV", g.dv, pb.f.pv, pb.f.total_k, c.hkv, c.d_v(), rows_k}};
  for (const T& t : ts) {
    std::vector<char> is_out(t.x.size(), 0);
    int64_t bad = 0, clobbered = 0;
    for (int64_t r = 0; r < t.rows; ++r)
      if (t.used[static_cast<size_t>(r)])
        for (int64_t h = 0; h < t.heads; ++h)
          for (int64_t e = 0; e < t.cols; ++e) {
            const size_t at = static_cast<size_t>(r * t.p.rs + h * t.p.hs + e);
            is_out[at] = 1;
            if (!std::isfinite(from_storage(c.dtype, t.x[at]))) ++bad;
          }
    for (size_t i = 0; i < t.x.size(); ++i)
      if (!is_out[i] && t.x[i] != kPoison) ++clobbered;
    CHECK_MESSAGE(bad == 0, c.str() << ": " << bad << " " << std::string(t.name) << " elements not written or not finite");
    CHECK_MESSAGE(clobbered == 0, c.str() << ": " << clobbered << " elements of " << std::string(t.name)
                                          << "'s buffer outside it (its pads, the guard after it, rows past seqused)"
                                          << " were written");
  }
}

// The rule above, every element of every sequence.
void check_bwd_rule(const VBProblem& pb, const VBProblem::Grads& g) {
  const VBCase& c = pb.c;
  const VProblem& f = pb.f;
  const auto same_round = c.dtype == FLASHPTX_BF16 ? flashptx::Round::kBF16 : flashptx::Round::kFP16;
  struct Acc { double err = 0, same = 0, env = 0; };
  Acc acc[3];  // dQ, dK, dV
  for (size_t b = 0; b < c.lq.size(); ++b) {
    const auto rp = f.seq_problem(b);
    const auto qv = f.seq_view(f.q, f.pq, f.cu_q[b]), kv = f.seq_view(f.k, f.pk, f.cu_k[b]),
               vv = f.seq_view(f.v_ref, f.pvr, f.cu_k[b]), dov = f.seq_view(pb.dout_ref, pb.pdr, f.cu_q[b]);
    const auto ref = flashptx::ref::backward(rp, qv, kv, vv, dov);
    const auto same = flashptx::ref::backward(rp, qv, kv, vv, dov, same_round);
    struct G { const std::vector<uint16_t>& x; const Packed& p; int64_t row0, rows, heads, cols;
               const std::vector<double>& r; const std::vector<double>& s; const std::vector<double>* env; };
    // (The used rows and keys: seq_problem's lengths. dV's first d_v columns of the reference's d.)
    const G gs[3] = {{g.dq, f.pq, f.cu_q[b], f.c.used_q(b), c.hq, c.d, ref.dq, same.dq, &ref.dq_env},
                     {g.dk, f.pk, f.cu_k[b], f.c.used_k(b), c.hkv, c.d, ref.dk, same.dk, &ref.dk_env},
                     {g.dv, f.pv, f.cu_k[b], f.c.used_k(b), c.hkv, c.d_v(), ref.dv, same.dv,
                      &ref.dv_env}};  // dv_env: softcap only
    for (int t = 0; t < 3; ++t) {
      const G& x = gs[t];
      for (int64_t i = 0; i < x.rows; ++i)
        for (int64_t h = 0; h < x.heads; ++h)
          for (int64_t e = 0; e < x.cols; ++e) {
            const size_t at = static_cast<size_t>((i * x.heads + h) * c.d + e);
            // The reference's gradients are contiguous [rows, heads, d]; the packed tensor at its strides.
            const double out = from_storage(c.dtype, x.x[static_cast<size_t>((x.row0 + i) * x.p.rs + h * x.p.hs + e)]);
            const double d = std::fabs(out - x.r[at]);
            acc[t].err = std::isnan(d) ? INFINITY : std::max(acc[t].err, d);
            acc[t].same = std::max(acc[t].same, std::fabs(x.s[at] - x.r[at]));
            if (x.env != nullptr && !x.env->empty()) acc[t].env = std::max(acc[t].env, (*x.env)[at]);
          }
      if (std::isinf(acc[t].err)) break;
    }
  }
  const char* names[3] = {"dQ", "dK", "dV"};
  for (int t = 0; t < 3; ++t) {
    const double tol = 2 * acc[t].same + 1e-5 + acc[t].env;
    CHECK_MESSAGE(acc[t].err <= tol, c.str() << ": max|" << std::string(names[t]) << " - ref| = " << acc[t].err << " > " << tol
                                             << " (same-dtype " << acc[t].same << ", fp32 envelope " << acc[t].env << ")");
  }
}

// kernel_info names the kernel of the case's family (local or not), dtype and head dim.
void check_bwd_kernel(const VBProblem& pb) {
  const VBCase& c = pb.c;
  flashptx_kernel_info info{};
  REQUIRE_MESSAGE(flashptx_bwd_varlen_kernel_info(&pb.params, &info) == FLASHPTX_OK, flashptx_last_error());
  const std::string want = std::string(c.local() ? "fa3_bwd_varlen_local_sm90_" : "fa3_bwd_varlen_sm90_") +
                           (c.dtype == FLASHPTX_BF16 ? "bf16_d" : "fp16_d") + std::to_string(c.d) +
                           (c.d_v() != c.d ? "_v" + std::to_string(c.d_v()) : "");
  CHECK(std::string(info.symbol) == want);
  CHECK(info.ctas == info.tiles);
}

void check_varlen_bwd(const VBCase& c, uint64_t seed) {
  INFO(c.str());
  VBProblem pb(c, seed);
  pb.poison();
  pb.run();
  const auto g = pb.grads();
  check_bwd_writes(pb, g);
  check_bwd_rule(pb, g);
  check_bwd_kernel(pb);
}

}  // namespace

TEST_SUITE("gpu_sm90 fa3 varlen") {

TEST_CASE("every head dim and dtype, causal and not, GQA: short ragged sequences, lengths 0 and 1") {
  // Sequences: empty queries with keys, one row, a block edge (63, 64, 65), a key length of 0 with
  // queries (O = 0, LSE = -inf), more queries than keys (causal: leading rows see nothing), more
  // keys than queries.
  const std::vector<int> lq = {0, 1, 63, 64, 65, 200, 129, 7};
  const std::vector<int> lk = {5, 1, 300, 0, 65, 128, 400, 7};
  uint64_t seed = 1;
  if (on_simulator()) {
    // On the simulator: the same kinds of sequence, fewer and shorter (an empty one, one row, a
    // block edge, no keys, more queries than keys, more keys than queries, several key blocks),
    // every head dim, each dtype and mask once per head dim; the release library's run (scheduled
    // with the random policy there) must give the same bits.
    const std::vector<int> sim_lq = {0, 1, 65, 64, 130, 7}, sim_lk = {5, 1, 65, 0, 40, 300};
    for (int64_t d : {64, 128, 256})
      for (bool causal : {false, true})
        check_varlen(VCase{sim_lq, sim_lk, 2, 1, d, causal, causal ? FLASHPTX_FP16 : FLASHPTX_BF16}, seed++);
    return;
  }
  for (int64_t d : {64, 128, 256})
    for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16})
      for (bool causal : {false, true}) check_varlen(VCase{lq, lk, 2, 1, d, causal, t}, seed++);
}

TEST_CASE("batches of 1 to 64 sequences, lengths 0 to 8k: one sequence, all equal, one long among many short") {
  uint64_t seed = 100;
  if (on_simulator()) {
    // On the simulator, the same kinds of batch at a few hundred rows: one sequence; all equal (MQA);
    // one long among seven short (in the middle); random lengths, some empty, independent key
    // lengths (GQA); every head dim.
    check_varlen(VCase{{300}, {300}, 1, 1, 128, false, FLASHPTX_BF16}, seed++);
    check_varlen(VCase{std::vector<int>(3, 130), std::vector<int>(3, 130), 2, 1, 128, true, FLASHPTX_FP16}, seed++);
    std::vector<int> l(7, 20);
    l.insert(l.begin() + 4, 260);
    check_varlen(VCase{l, l, 2, 1, 64, true, FLASHPTX_BF16}, seed++);
    std::mt19937_64 rng(seed);
    const auto lq = random_lengths(rng, 8, 160, 0.2), lk = random_lengths(rng, 8, 160, 0.2);
    check_varlen(VCase{lq, lk, 2, 1, 64, false, FLASHPTX_BF16}, seed++);
    const auto l3 = random_lengths(rng, 3, 160, 0.2);
    check_varlen(VCase{l3, l3, 1, 1, 256, true, FLASHPTX_FP16}, seed++);
    return;
  }
  // One sequence of 8k (the fixed-length kernel's problem, packed).
  check_varlen(VCase{{8192}, {8192}, 2, 2, 128, false, FLASHPTX_BF16}, seed++);
  check_varlen(VCase{{8192}, {8192}, 2, 1, 128, true, FLASHPTX_FP16}, seed++);
  // All equal: 16 x 512, MQA.
  check_varlen(VCase{std::vector<int>(16, 512), std::vector<int>(16, 512), 4, 1, 128, true, FLASHPTX_FP16}, seed++);
  // One long sequence among 63 short ones (the long one in the middle of the batch), d64, GQA.
  {
    std::vector<int> l(63, 100);
    l.insert(l.begin() + 40, 8000);
    check_varlen(VCase{l, l, 4, 2, 64, true, FLASHPTX_BF16}, seed++);
    check_varlen(VCase{l, l, 4, 2, 64, false, FLASHPTX_BF16}, seed++);
  }
  // 64 random sequences up to 768 (some empty), independent key lengths, GQA 4.
  std::mt19937_64 rng(seed);
  {
    const auto lq = random_lengths(rng, 64, 768, 0.1), lk = random_lengths(rng, 64, 768, 0.1);
    check_varlen(VCase{lq, lk, 8, 2, 64, false, FLASHPTX_BF16}, seed++);
    check_varlen(VCase{lq, lq, 8, 2, 128, true, FLASHPTX_FP16}, seed++);
  }
  // 4 random sequences up to 8k, head dim 256 and 64.
  {
    const auto l = random_lengths(rng, 4, 8192, 0.15);
    check_varlen(VCase{l, l, 2, 1, 256, true, FLASHPTX_FP16}, seed++);
    const auto lk = random_lengths(rng, 4, 8192, 0.15);
    check_varlen(VCase{l, lk, 2, 2, 64, false, FLASHPTX_BF16}, seed++);
  }
}

TEST_CASE("padded strides: pads stay poisoned") {
  const std::vector<int> lq = {130, 0, 64, 257}, lk = {300, 17, 64, 100};
  uint64_t seed = 200;
  for (int64_t d : {64, 128, 256}) {
    if (on_simulator() && d != 128) continue;  // on the simulator: d128 alone
    VCase c{lq, lk, 4, 2, d, true, FLASHPTX_BF16};
    c.padded = true;
    check_varlen(c, seed++);
  }
}

TEST_CASE("repeated launches are bitwise identical") {
  std::mt19937_64 rng(300);
  const auto l = random_lengths(rng, 24, 1500, 0.1);
  if (on_simulator()) {
    // On the simulator: 6 random sequences up to 300 rows (some empty), the same launch under the
    // default schedule and two other policies and seeds, bit for bit.
    std::mt19937_64 srng(300);
    const auto sl = random_lengths(srng, 6, 300, 0.2);
    VProblem pb(VCase{sl, sl, 2, 1, 128, true, FLASHPTX_BF16}, 301);
    pb.poison();
    pb.run();
    const auto first = pb.out();
    const auto first_l = pb.lse();
    for (int i = 0; i < 2; ++i) {
      SimSchedule schedule(kSimPolicies[i]);
      pb.poison();
      pb.run();
      CHECK_MESSAGE(pb.out() == first, "O under " << SimSchedule::name(kSimPolicies[i]) << " differs from round-robin's");
      const auto l2 = pb.lse();
      CHECK_MESSAGE(std::memcmp(l2.data(), first_l.data(), first_l.size() * 4) == 0,
                    "LSE under " << SimSchedule::name(kSimPolicies[i]) << " differs from round-robin's");
    }
    return;
  }
  VProblem pb(VCase{l, l, 4, 2, 128, true, FLASHPTX_BF16}, 301);
  pb.poison();
  pb.run();
  const auto first = pb.out();
  const auto first_l = pb.lse();
  int mismatches = 0;
  for (int i = 0; i < 100; ++i) {
    REQUIRE(flashptx_fwd_varlen(&pb.params, nullptr) == FLASHPTX_OK);
    if (i % 10 == 9) {
      CUDA_REQUIRE(cudaDeviceSynchronize());
      if (pb.out() != first) ++mismatches;
      const auto l2 = pb.lse();
      if (std::memcmp(l2.data(), first_l.data(), first_l.size() * 4) != 0) ++mismatches;
    }
  }
  CHECK_MESSAGE(mismatches == 0, mismatches << " of 20 samples differed from the first launch");
}

TEST_CASE("sliding window over packed sequences: every head dim, both dtypes, per-sequence alignment") {
  // The window aligned to each sequence's own bottom-right corner: ragged sequences, empty ones, more
  // queries than keys (leading rows see no key), a window inside a block, an asymmetric one, one
  // combined with causal, one bounded on the right only. (A window equal to none or to the causal
  // mask for every sequence plans onto the plain varlen kernels: the local ones need a real window.)
  struct W { int64_t wl, wr; bool causal; };
  const W windows[] = {{40, 0, false}, {17, 33, false}, {100, 64, true}, {-1, 20, false}};
  const std::vector<int> sim_lq = {0, 70, 150, 9}, sim_lk = {30, 200, 90, 0};
  const std::vector<int> lq = {0, 1, 63, 200, 129, 700, 1500, 7}, lk = {5, 1, 300, 128, 400, 700, 1000, 0};
  const bool sim = flashptx_test::on_simulator();
  uint64_t seed = 500;
  int n = 0;
  for (int64_t d : {64, 128, 256})
    for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16}) {
      const W& w = windows[n++ % 4];
      VCase c{sim ? sim_lq : lq, sim ? sim_lk : lk, sim ? 2 : 4, sim ? 1 : 2, d, w.causal, t};
      c.window = true;
      c.wl = w.wl;
      c.wr = w.wr;
      check_varlen(c, seed++);
    }
}

TEST_CASE("bad cu_seqlens on the device path: a status, nothing launched, O untouched") {
  VProblem pb(VCase{{100, 50, 7}, {100, 60, 9}, 2, 2, 128, false, FLASHPTX_BF16}, 400);
  pb.poison();
  std::vector<int32_t> bad = pb.cu_q;
  bad[2] = 90;  // decreasing
  flashptx_fwd_varlen_params p = pb.params;
  p.cu_seqlens_q = bad.data();
  CHECK(flashptx_fwd_varlen(&p, nullptr) == FLASHPTX_ERR_BAD_CU_SEQLENS);
  CHECK(std::string(flashptx_last_error()).find("decreases at entry 2") != std::string::npos);
  bad = pb.cu_q;
  bad.back() += 1;  // last != total_q
  p.cu_seqlens_q = bad.data();
  CHECK(flashptx_fwd_varlen(&p, nullptr) == FLASHPTX_ERR_BAD_CU_SEQLENS);
  // A device copy of the prefix sums where the host copy belongs is refused, not dereferenced.
  DeviceBuf dcu(pb.cu_q.size() * 4);
  CUDA_REQUIRE(cudaMemcpy(dcu.p, pb.cu_q.data(), dcu.bytes, cudaMemcpyHostToDevice));
  p = pb.params;
  p.cu_seqlens_k = static_cast<const int32_t*>(dcu.p);
  CHECK(flashptx_fwd_varlen(&p, nullptr) == FLASHPTX_ERR_BAD_CU_SEQLENS);
  CHECK(std::string(flashptx_last_error()).find("device memory") != std::string::npos);
  p = pb.params;
  p.num_seqs = FLASHPTX_VARLEN_MAX_SEQS + 1;
  CHECK(flashptx_fwd_varlen(&p, nullptr) == FLASHPTX_ERR_TOO_MANY_SEQS);
  CUDA_REQUIRE(cudaDeviceSynchronize());
  const auto o = pb.out();
  for (uint16_t x : o) REQUIRE(x == kPoison);
}


TEST_CASE("backward: every head dim and dtype, causal and not, GQA: ragged lengths 0, 1 and block edges") {
  // Sequences: one row against one key; no query rows but keys (dK = dV = 0); queries without keys
  // (dQ = 0); lengths that are no multiple of any block (70, 150); more keys than queries and more
  // queries than keys (causal: leading rows see nothing). Key length 150 gives d64/d128 (128-key
  // blocks) a full first block stored by TMA and a tail block stored from registers, and d256
  // (64-key blocks) two full blocks and a tail. MHA (the TMA and register stores of dK/dV) where
  // not causal, GQA (the fp32 accumulators and their postprocess) where causal.
  const std::vector<int> lq = {1, 0, 70, 130, 9}, lk = {1, 40, 0, 150, 100};
  uint64_t seed = 600;
  for (int64_t d : {64, 128, 256})
    for (bool causal : {false, true}) {
      if (!on_simulator())
        for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16})
          check_varlen_bwd(VBCase{lq, lk, 2, causal ? 1 : 2, d, causal, t}, seed++);
      else
        check_varlen_bwd(VBCase{lq, lk, 2, causal ? 1 : 2, d, causal, causal ? FLASHPTX_FP16 : FLASHPTX_BF16}, seed++);
    }
}

// Launches 2.. of a deterministic case (20 on a GPU; on the simulator 2, under other scheduling
// policies), each bitwise equal to the first's gradients.
void check_launches_bitwise(VBProblem& pb, const VBCase& c, const VBProblem::Grads& first) {
  for (int i = 0; i < (on_simulator() ? 2 : 20); ++i) {
    std::unique_ptr<SimSchedule> schedule;
    if (on_simulator()) schedule.reset(new SimSchedule(kSimPolicies[i]));
    pb.poison();
    pb.run();
    const auto g = pb.grads();
    CHECK_MESSAGE(g.dq == first.dq, c.str() << ": dQ of launch " << i + 2 << " differs from the first");
    CHECK_MESSAGE(g.dk == first.dk, c.str() << ": dK of launch " << i + 2 << " differs from the first");
    CHECK_MESSAGE(g.dv == first.dv, c.str() << ": dV of launch " << i + 2 << " differs from the first");
  }
}

// A deterministic case: the writes, the rule and the kernel as check_varlen_bwd, then bitwise across
// launches (check_launches_bitwise) and against the kernels users link (the release libflashptx.so;
// on the simulator under the random policy).
void check_varlen_bwd_deterministic(const VBCase& c, uint64_t seed) {
  INFO(c.str());
  VBProblem pb(c, seed);
  pb.poison();
  pb.run();
  const auto first = pb.grads();
  check_bwd_writes(pb, first);
  check_bwd_rule(pb, first);
  check_bwd_kernel(pb);
  check_launches_bitwise(pb, c, first);
  const auto& rel = flashptx_test::release_lib();
  if (rel.loaded()) {
    pb.poison();
    REQUIRE_MESSAGE(rel.bwd_varlen(&pb.params, nullptr) == FLASHPTX_OK, rel.last_error());
    CUDA_REQUIRE(cudaDeviceSynchronize());
    const auto r = pb.grads();
    CHECK_MESSAGE(r.dq == first.dq, c.str() << ": the release library's dQ differs from the test build's");
    CHECK_MESSAGE(r.dk == first.dk, c.str() << ": the release library's dK differs from the test build's");
    CHECK_MESSAGE(r.dv == first.dv, c.str() << ": the release library's dV differs from the test build's");
  }
}

TEST_CASE("backward: deterministic mode, bitwise across launches and schedules") {
  // Causal (the dQ writers shortest-first within each sequence) and not (ascending), GQA (the
  // query heads of a group add dK/dV in order); on the simulator the second and third launches run
  // under other scheduling policies.
  const std::vector<int> lq = {130, 1, 0, 70}, lk = {200, 3, 60, 70};
  uint64_t seed = 700;
  for (bool causal : {false, true}) {
    check_varlen_bwd_deterministic(VBCase{lq, lk, 2, 1, 64, causal, FLASHPTX_BF16, true}, seed++);
  }
}

TEST_CASE("backward: window and softcap, every head dim, both dtypes, ragged lengths, GQA, deterministic") {
  // The window per sequence (diag = len_k - len_q of each): narrower than a block, asymmetric,
  // causal + window, the softcap alone and with a window; sequences with no query rows, no keys,
  // one row, ragged tails, more queries than keys and fewer. Deterministic: bitwise across launches
  // (on the simulator under other scheduling policies).
  struct W { int64_t wl, wr; bool causal; float softcap; };
  const W ws[] = {{20, 10, false, 0.f}, {0, 70, false, 0.f}, {60, -1, true, 0.f}, {-1, -1, false, 3.f},
                  {40, 5, false, 2.f}, {100, 0, false, 4.f}};
  const std::vector<int> lq = {1, 0, 70, 150, 9}, lk = {1, 40, 0, 130, 100};
  const std::vector<int> big_lq = {1, 0, 700, 1500, 90, 333}, big_lk = {1, 400, 0, 1300, 1000, 333};
  uint64_t seed = 7700;
  int i = 0;
  for (int64_t d : {64, 128, 256})
    for (const W& w : ws) {
      const int k = i++;
      if (on_simulator() && k % 3 != (d == 64 ? 0 : d == 128 ? 1 : 2)) continue;  // each shape once over the dims
      VBCase c{on_simulator() ? lq : big_lq, on_simulator() ? lk : big_lk, 4, k % 2 ? 2 : 4, d, w.causal,
               k % 2 ? FLASHPTX_FP16 : FLASHPTX_BF16};
      c.window = w.wl >= 0 || w.wr >= 0;
      c.wl = w.wl;
      c.wr = w.wr;
      c.softcap = w.softcap;
      c.deterministic = k % 2 == 0;
      if (!c.deterministic) {
        check_varlen_bwd(c, seed++);
        continue;
      }
      INFO(c.str());
      VBProblem pb(c, seed++);
      pb.poison();
      pb.run();
      const auto first = pb.grads();
      check_bwd_writes(pb, first);
      check_bwd_rule(pb, first);
      check_launches_bitwise(pb, c, first);
    }
}

TEST_CASE("backward: bad input is a status, nothing launched, the gradients untouched") {
  VBProblem pb(VBCase{{100, 50, 7}, {100, 60, 9}, 2, 2, 64, false, FLASHPTX_BF16}, 800);
  pb.poison();
  auto expect = [&](const flashptx_bwd_varlen_params& p, flashptx_status want, const char* says) {
    CHECK_MESSAGE(flashptx_bwd_varlen(&p, nullptr) == want, flashptx_last_error());
    CHECK_MESSAGE(std::string(flashptx_last_error()).find(says) != std::string::npos, flashptx_last_error());
    CHECK(flashptx_bwd_varlen_check(&p) == want);
  };
  std::vector<int32_t> bad = pb.f.cu_q;
  bad[2] = 90;  // decreasing
  flashptx_bwd_varlen_params p = pb.params;
  p.cu_seqlens_q = bad.data();
  expect(p, FLASHPTX_ERR_BAD_CU_SEQLENS, "decreases at entry 2");
  bad = pb.f.cu_k;
  bad.back() += 1;  // last != total_k
  p = pb.params;
  p.cu_seqlens_k = bad.data();
  expect(p, FLASHPTX_ERR_BAD_CU_SEQLENS, "not total_k");
  p = pb.params;
  p.max_seqlen_q = 60;  // below the longest sequence (100)
  expect(p, FLASHPTX_ERR_BAD_CU_SEQLENS, "below the longest");
  // A device copy of the prefix sums where the host copy belongs is refused, not dereferenced.
  DeviceBuf dcu(pb.f.cu_q.size() * 4);
  CUDA_REQUIRE(cudaMemcpy(dcu.p, pb.f.cu_q.data(), dcu.bytes, cudaMemcpyHostToDevice));
  p = pb.params;
  p.cu_seqlens_q = static_cast<const int32_t*>(dcu.p);
  expect(p, FLASHPTX_ERR_BAD_CU_SEQLENS, "device memory");
  p = pb.params;
  p.cu_seqlens_k = nullptr;
  expect(p, FLASHPTX_ERR_NULL_POINTER, "cu_seqlens_k is NULL");
  p = pb.params;
  p.dk = nullptr;
  expect(p, FLASHPTX_ERR_NULL_POINTER, "dk is NULL");
  p = pb.params;
  p.lse = nullptr;
  expect(p, FLASHPTX_ERR_NULL_POINTER, "lse is NULL");
  p = pb.params;
  p.num_seqs = FLASHPTX_VARLEN_MAX_SEQS + 1;
  expect(p, FLASHPTX_ERR_TOO_MANY_SEQS, "FLASHPTX_VARLEN_MAX_SEQS");
  p = pb.params;
  p.head_dim = 80;
  expect(p, FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, "head_dim 80 is not one of the backward's 64, 96, 128, 192, 256");
  p = pb.params;
  p.heads_kv = 3;
  expect(p, FLASHPTX_ERR_BAD_HEADS, "multiple of heads_kv");
  p = pb.params;
  p.total_q = -1;
  expect(p, FLASHPTX_ERR_BAD_SHAPE, "total_q is -1");
  p = pb.params;
  p.workspace_bytes -= 256;
  expect(p, FLASHPTX_ERR_WORKSPACE, "workspace_bytes");
  p = pb.params;
  p.workspace = static_cast<char*>(p.workspace) + 16;
  expect(p, FLASHPTX_ERR_WORKSPACE, "256-byte aligned");
  p = pb.params;
  p.dq_row_stride = 100;  // not a multiple of 8 elements
  expect(p, FLASHPTX_ERR_MISALIGNED, "dq row stride");
  CHECK(flashptx_bwd_varlen(nullptr, nullptr) == FLASHPTX_ERR_NULL_PARAMS);
  CUDA_REQUIRE(cudaDeviceSynchronize());
  const auto g = pb.grads();
  for (const auto* x : {&g.dq, &g.dk, &g.dv})
    for (uint16_t v : *x) REQUIRE(v == kPoison);
  // The workspace depends on the totals, not on how the rows split into sequences.
  std::vector<int32_t> cq = {0, 10, 20, 157}, ck = {0, 169, 169, 169};
  p = pb.params;
  p.cu_seqlens_q = cq.data();
  p.cu_seqlens_k = ck.data();
  p.max_seqlen_q = 137;
  p.max_seqlen_k = 169;
  int64_t a = 0, b = 0;
  REQUIRE(flashptx_bwd_varlen_workspace_size(&pb.params, &a) == FLASHPTX_OK);
  REQUIRE(flashptx_bwd_varlen_workspace_size(&p, &b) == FLASHPTX_OK);
  CHECK(a == b);
  CHECK(flashptx_bwd_varlen_check(&p) == FLASHPTX_OK);  // the same workspace serves the other split
  // Nothing to compute is a success that launches nothing.
  p = pb.params;
  p.num_seqs = 0;
  p.total_q = p.total_k = 0;
  CHECK(flashptx_bwd_varlen(&p, nullptr) == FLASHPTX_OK);
}

// ---- the varlen backward at head dims 96 and 192 --------------------------------------------------
// The d96 and d192 varlen kernels (the d128 and d256 shapes over zero columns, BwdConfig::real_head_dim:
// src/sm90/fa3_bwd_varlen.cu, fa3_bwd_local.cu). What they can get wrong beyond the d128/d256 kernels:
// the tail key block's dK/dV rows stored from registers writing the zero columns past d, which land
// on the pad after each head (padded strides: poisoned, check_bwd_writes) or on the next head's first
// columns (contiguous: the rule catches a value a later write clobbered, the guard the last head's);
// the accumulators' rows at the kernel's width (dQ, and dK/dV under GQA) read back at d columns.
// Key lengths: 150 gives d96 (128-key blocks) a full block stored by TMA and a tail whose second
// warpgroup stores from registers, d192 (64-key blocks, columns split between the warpgroups) two
// full blocks and a tail both warpgroups store from registers (warpgroup 1 holds columns 128..255,
// 192..255 of them zero); 100 and 40 a tail in the first block.
namespace {
const std::vector<int> kHdimBwdLq = {1, 0, 70, 130, 9}, kHdimBwdLk = {1, 40, 0, 150, 100};
const std::vector<int> kHdimBwdBigLq = {1, 0, 700, 1500, 90, 333, 129}, kHdimBwdBigLk = {1, 400, 0, 1300, 1000, 333, 150};

// A deterministic case: the rule, the writes, bitwise equal across launches (on the simulator under
// other scheduling policies) and to the release library's.
}  // namespace

TEST_CASE("backward: head dims 96 and 192, both dtypes, causal and not, MHA and GQA, ragged and empty, pads untouched") {
  const bool sim = on_simulator();
  uint64_t seed = 8600;
  for (int64_t d : {96, 192})
    for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16}) {
      // MHA (the register and TMA stores of dK/dV), padded strides at bf16 and contiguous at fp16,
      // causal at one dtype of each dim; GQA 2:1 (the fp32 accumulators at the kernel's width),
      // causal at the other.
      const bool bf16 = t == FLASHPTX_BF16;
      VBCase mha{sim ? kHdimBwdLq : kHdimBwdBigLq, sim ? kHdimBwdLk : kHdimBwdBigLk, 2, 2, d, (d == 96) == bf16, t};
      mha.padded = bf16;
      check_varlen_bwd(mha, seed++);
      VBCase gqa{sim ? kHdimBwdLq : kHdimBwdBigLq, sim ? kHdimBwdLk : kHdimBwdBigLk, 4, 2, d, (d == 96) != bf16, t};
      gqa.padded = !bf16;
      check_varlen_bwd(gqa, seed++);
    }
  if (sim) return;
  // On the GPU: 48 random sequences up to 768 rows (some empty), MQA and MHA.
  std::mt19937_64 rng(8690);
  for (int64_t d : {96, 192}) {
    const auto lq = random_lengths(rng, 48, 768, 0.1), lk = random_lengths(rng, 48, 768, 0.1);
    check_varlen_bwd(VBCase{lq, lk, 8, 1, d, true, FLASHPTX_BF16}, seed++);
    VBCase mha{lq, lk, 4, 4, d, false, FLASHPTX_FP16};
    mha.padded = true;
    check_varlen_bwd(mha, seed++);
  }
}

TEST_CASE("backward: head dims 96 and 192, deterministic mode, bitwise across launches, schedules and the release library") {
  // Causal GQA (the dQ writers shortest-first, the query heads of a group adding dK/dV in order) at
  // d96, and MHA not causal (ascending writers; the register stores) with padded strides at d192.
  const bool sim = on_simulator();
  VBCase causal_gqa{sim ? kHdimBwdLq : kHdimBwdBigLq, sim ? kHdimBwdLk : kHdimBwdBigLk, 4, 2, 96, true,
                    FLASHPTX_BF16, true};
  check_varlen_bwd_deterministic(causal_gqa, 8700);
  VBCase mha{sim ? kHdimBwdLq : kHdimBwdBigLq, sim ? kHdimBwdLk : kHdimBwdBigLk, 2, 2, 192, false, FLASHPTX_FP16, true};
  mha.padded = true;
  check_varlen_bwd_deterministic(mha, 8701);
  if (sim) return;
  VBCase d96_mha = mha;
  d96_mha.d = 96;
  check_varlen_bwd_deterministic(d96_mha, 8702);
  VBCase d192_gqa = causal_gqa;
  d192_gqa.d = 192;
  check_varlen_bwd_deterministic(d192_gqa, 8703);
}

TEST_CASE("backward: head dims 96 and 192, window and softcap: the local varlen kernels, MHA, padded, deterministic") {
  // At each dim a window narrower than a block (d96: (20, 10), bf16, padded) and the softcap with a
  // window (d192: (40, 5) and 2, fp16, deterministic), MHA (the register stores); on the GPU also
  // the other pairing, GQA.
  const bool sim = on_simulator();
  const auto& lq = sim ? kHdimBwdLq : kHdimBwdBigLq;
  const auto& lk = sim ? kHdimBwdLk : kHdimBwdBigLk;
  VBCase w{lq, lk, 2, 2, 96, false, FLASHPTX_BF16};
  w.window = true;
  w.wl = 20;
  w.wr = 10;
  w.padded = true;
  check_varlen_bwd(w, 8800);
  VBCase cap{lq, lk, 2, 2, 192, false, FLASHPTX_FP16, true};
  cap.window = true;
  cap.wl = 40;
  cap.wr = 5;
  cap.softcap = 2.f;
  check_varlen_bwd_deterministic(cap, 8801);
  if (sim) return;
  VBCase w192 = w;
  w192.d = 192;
  w192.hkv = 1;
  check_varlen_bwd(w192, 8803);
  VBCase cap96 = cap;
  cap96.d = 96;
  cap96.hkv = 1;
  cap96.causal = true;
  check_varlen_bwd_deterministic(cap96, 8804);
}

TEST_CASE("backward: (192, 128), both dtypes, causal and not, MHA and GQA, ragged and empty, pads untouched") {
  // DeepSeek's (head_dim, head_dim_v) = (192, 128): the d192_v128 varlen kernels (the d256 shape, the
  // register-stored dV rows bounded at V's 128 columns: BwdConfig::real_head_dim_v). MHA (the register
  // and TMA stores of dK/dV) with padded strides, whose pads after each head's 128 dV columns are
  // poisoned and must stay so; GQA 2:1 (dV through the fp32 accumulator and the postprocess, at 128
  // columns); both dtypes, causal at one of each.
  const bool sim = on_simulator();
  const auto& lq = sim ? kHdimBwdLq : kHdimBwdBigLq;
  const auto& lk = sim ? kHdimBwdLk : kHdimBwdBigLk;
  uint64_t seed = 9600;
  for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16}) {
    const bool bf16 = t == FLASHPTX_BF16;
    VBCase mha{lq, lk, 2, 2, 192, bf16, t};
    mha.dv = 128;
    mha.padded = bf16;
    check_varlen_bwd(mha, seed++);
    VBCase gqa{lq, lk, 4, 2, 192, !bf16, t};
    gqa.dv = 128;
    gqa.padded = !bf16;
    check_varlen_bwd(gqa, seed++);
  }
  if (sim) return;
  // On the GPU: 48 random sequences up to 768 rows (some empty), MQA causal and MHA padded.
  std::mt19937_64 rng(9690);
  const auto rq = random_lengths(rng, 48, 768, 0.1), rk = random_lengths(rng, 48, 768, 0.1);
  VBCase mqa{rq, rk, 8, 1, 192, true, FLASHPTX_BF16};
  mqa.dv = 128;
  check_varlen_bwd(mqa, seed++);
  VBCase mha{rq, rk, 4, 4, 192, false, FLASHPTX_FP16};
  mha.dv = 128;
  mha.padded = true;
  check_varlen_bwd(mha, seed++);
}

TEST_CASE("backward: (192, 128), deterministic, window and softcap: bitwise across launches and the release library") {
  // The deterministic mode at causal GQA (the plain d192_v128 kernel) and, through the local kernel,
  // a window narrower than a block with the softcap, MHA padded (the register stores), each bitwise
  // across launches, scheduling policies and the release library.
  const bool sim = on_simulator();
  const auto& lq = sim ? kHdimBwdLq : kHdimBwdBigLq;
  const auto& lk = sim ? kHdimBwdLk : kHdimBwdBigLk;
  VBCase gqa{lq, lk, 4, 2, 192, true, FLASHPTX_BF16, true};
  gqa.dv = 128;
  check_varlen_bwd_deterministic(gqa, 9700);
  VBCase cap{lq, lk, 2, 2, 192, false, FLASHPTX_FP16, true};
  cap.dv = 128;
  cap.padded = true;
  cap.window = true;
  cap.wl = 40;
  cap.wr = 5;
  cap.softcap = 2.f;
  check_varlen_bwd_deterministic(cap, 9701);
}

TEST_CASE("backward: head dims 96 and 192 run; 80, 160 and 32 are statuses, nothing launched, the gradients untouched") {
  // Head dims and (head_dim, head_dim_v) pairs without a kernel are refused before anything launches.
  VBProblem pb(VBCase{{100, 50, 7}, {100, 60, 9}, 2, 2, 96, false, FLASHPTX_BF16}, 8900);
  pb.poison();
  for (int64_t d : {80, 160, 32}) {
    flashptx_bwd_varlen_params p = pb.params;
    p.head_dim = d;
    CHECK(flashptx_bwd_varlen(&p, nullptr) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
    CHECK_MESSAGE(std::string(flashptx_last_error()).find("head_dim " + std::to_string(d) + " is not one of") !=
                      std::string::npos,
                  flashptx_last_error());
  }
  for (auto [d, dv] : {std::pair<int64_t, int64_t>{192, 64}, {96, 64}}) {
    flashptx_bwd_varlen_params p = pb.params;
    p.head_dim = d;
    p.head_dim_v = dv;
    CHECK(flashptx_bwd_varlen(&p, nullptr) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
    CHECK_MESSAGE(std::string(flashptx_last_error()).find("(head_dim, head_dim_v) = (" + std::to_string(d) + ", " +
                                                          std::to_string(dv) + ")") != std::string::npos,
                  flashptx_last_error());
  }
  CUDA_REQUIRE(cudaDeviceSynchronize());
  const auto g = pb.grads();
  for (const auto* x : {&g.dq, &g.dk, &g.dv})
    for (uint16_t v : *x) REQUIRE(v == kPoison);
  // The valid problem runs.
  check_varlen_bwd(pb.c, 8901);
}

// ---- seqused_q / seqused_k ------------------------------------------------------------------------
// Sequence b uses its first seqused_q[b] query rows and seqused_k[b] keys of the rows cu_seqlens gives
// it (FlashAttention-3's seqused). The reference is the fp64 one over the used rows only (seq_problem);
// the rows past the used lengths hold fresh random values (Q, K, V, dO), so a row or key leaking in
// changes the result; the outputs past them (O, LSE, dQ, dK, dV) are poisoned and must stay so.
// Lengths: a used length 0 with rows (nothing written; with used keys 0: O = 0, LSE = -inf), equal to
// the full length, one row, partial inside a block and across a block edge, used keys inside the
// first block with unused keys after them in the same block.
namespace {
struct Used { std::vector<int> lq, lk, uq, uk; };
Used seqused_lengths(bool sim) {
  if (sim) return {{70, 130, 9, 64, 40, 0}, {100, 150, 0, 64, 200, 20}, {33, 130, 0, 1, 40, 0}, {65, 7, 0, 64, 0, 20}};
  return {{70, 600, 9, 64, 300, 0, 1000}, {100, 650, 0, 64, 700, 20, 900},
          {33, 600, 0, 1, 300, 0, 517}, {65, 7, 0, 64, 0, 20, 129}};
}
}  // namespace

TEST_CASE("seqused: forward over used lengths 0, partial and full, rows past them untouched") {
  const bool sim = on_simulator();
  const Used u = seqused_lengths(sim);
  uint64_t seed = 900;
  int n = 0;
  for (int64_t d : {64, 128, 256})
    for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16})
      for (bool causal : {false, true}) {
        if (sim && (n++ % 4 != 0 && !(d == 128 && causal))) continue;  // the simulator: d64, d128 x2, d256
        VCase c{u.lq, u.lk, 2, causal ? 1 : 2, d, causal, t};
        c.uq = u.uq;
        c.uk = u.uk;
        check_varlen(c, seed++);
      }
  // seqused_q alone and seqused_k alone.
  VCase q_only{u.lq, u.lk, 2, 1, 64, true, FLASHPTX_BF16};
  q_only.uq = u.uq;
  check_varlen(q_only, seed++);
  VCase k_only{u.lq, u.lk, 2, 1, 128, false, FLASHPTX_FP16};
  k_only.uk = u.uk;
  check_varlen(k_only, seed++);
  // With a sliding window (the local varlen kernel), aligned to the used lengths' bottom-right.
  VCase w{u.lq, u.lk, 2, 1, 128, false, FLASHPTX_BF16};
  w.window = true;
  w.wl = 20;
  w.wr = 5;
  w.uq = u.uq;
  w.uk = u.uk;
  check_varlen(w, seed++);
  // Used lengths equal to the full lengths: the same bits as no seqused at all.
  VCase full{u.lq, u.lk, 2, 1, 128, true, FLASHPTX_BF16};
  VProblem none(full, seed);
  full.uq = full.lq;
  full.uk = full.lk;
  VProblem all(full, seed);
  none.poison();
  none.run();
  all.poison();
  all.run();
  CHECK_MESSAGE(all.out() == none.out(), full.str() << ": O with seqused = cu_seqlens lengths differs from NULL's");
  const auto la = all.lse(), ln = none.lse();
  CHECK_MESSAGE(std::memcmp(la.data(), ln.data(), la.size() * 4) == 0, full.str() << ": LSE differs from NULL's");
  // Every used query length 0: a successful call that launches nothing (O untouched).
  VCase zero{u.lq, u.lk, 2, 1, 64, false, FLASHPTX_BF16};
  zero.uq.assign(u.lq.size(), 0);
  VProblem z(zero, seed);
  z.poison();
  z.run();
  for (uint16_t x : z.out()) REQUIRE(x == kPoison);
  flashptx_kernel_info info{};
  CHECK(flashptx_fwd_varlen_kernel_info(&z.params, &info) == FLASHPTX_ERR_BAD_SHAPE);
}

TEST_CASE("seqused: backward over used lengths, dQ/dK/dV rows past them untouched") {
  const bool sim = on_simulator();
  const Used u = seqused_lengths(sim);
  uint64_t seed = 1000;
  for (int64_t d : {64, 128, 256})
    for (bool causal : {false, true}) {
      if (sim && d != 128 && causal != (d == 256)) continue;  // the simulator: d64, d128 x2, d256 causal
      for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16}) {
        if (sim && t != (causal ? FLASHPTX_FP16 : FLASHPTX_BF16)) continue;
        VBCase c{u.lq, u.lk, 2, causal ? 1 : 2, d, causal, t};
        c.uq = u.uq;
        c.uk = u.uk;
        check_varlen_bwd(c, seed++);
      }
    }
  // seqused_k alone (every query row used, keys cut), GQA.
  VBCase k_only{u.lq, u.lk, 2, 1, 64, false, FLASHPTX_BF16};
  k_only.uk = u.uk;
  check_varlen_bwd(k_only, seed++);
}

TEST_CASE("seqused: deterministic backward, bitwise across launches and schedules") {
  const Used u = seqused_lengths(on_simulator());
  uint64_t seed = 1100;
  for (bool causal : {false, true}) {
    VBCase c{u.lq, u.lk, 2, 1, 64, causal, FLASHPTX_BF16, true};
    c.uq = u.uq;
    c.uk = u.uk;
    INFO(c.str());
    VBProblem pb(c, seed++);
    pb.poison();
    pb.run();
    const auto first = pb.grads();
    check_bwd_writes(pb, first);
    check_bwd_rule(pb, first);
    check_launches_bitwise(pb, c, first);
  }
}

TEST_CASE("seqused: bad values and device copies are a status, nothing launched, outputs untouched") {
  const std::vector<int> lq = {100, 50, 7}, lk = {100, 60, 9};
  VBProblem pb(VBCase{lq, lk, 2, 2, 64, false, FLASHPTX_BF16}, 1200);
  pb.poison();
  pb.f.poison();
  struct Bad { std::vector<int32_t> uq, uk; const char* says; };
  const Bad bad[] = {
      {{100, 51, 7}, {}, "seqused_q[1] is 51, above sequence 1's length 50 in cu_seqlens_q"},
      {{100, -1, 7}, {}, "seqused_q[1] is -1: a used length must be 0 or more"},
      {{}, {0, 0, 10}, "seqused_k[2] is 10, above sequence 2's length 9 in cu_seqlens_k"},
      {{}, {-5, 0, 0}, "seqused_k[0] is -5"},
  };
  for (const Bad& b : bad) {
    INFO(b.says);
    flashptx_fwd_varlen_params fp = pb.f.params;
    flashptx_bwd_varlen_params bp = pb.params;
    fp.seqused_q = bp.seqused_q = b.uq.empty() ? nullptr : b.uq.data();
    fp.seqused_k = bp.seqused_k = b.uk.empty() ? nullptr : b.uk.data();
    CHECK(flashptx_fwd_varlen(&fp, nullptr) == FLASHPTX_ERR_BAD_SHAPE);
    CHECK_MESSAGE(std::string(flashptx_last_error()).find(b.says) != std::string::npos, flashptx_last_error());
    CHECK(flashptx_bwd_varlen(&bp, nullptr) == FLASHPTX_ERR_BAD_SHAPE);
    CHECK_MESSAGE(std::string(flashptx_last_error()).find(b.says) != std::string::npos, flashptx_last_error());
  }
  // A device copy where the host copy belongs is refused, not dereferenced.
  const std::vector<int32_t> used = {10, 20, 7};
  DeviceBuf dused(used.size() * 4);
  CUDA_REQUIRE(cudaMemcpy(dused.p, used.data(), dused.bytes, cudaMemcpyHostToDevice));
  flashptx_fwd_varlen_params fp = pb.f.params;
  fp.seqused_k = static_cast<const int32_t*>(dused.p);
  CHECK(flashptx_fwd_varlen(&fp, nullptr) == FLASHPTX_ERR_BAD_SHAPE);
  CHECK(std::string(flashptx_last_error()).find("seqused_k points to device memory") != std::string::npos);
  flashptx_bwd_varlen_params bp = pb.params;
  bp.seqused_q = static_cast<const int32_t*>(dused.p);
  CHECK(flashptx_bwd_varlen(&bp, nullptr) == FLASHPTX_ERR_BAD_SHAPE);
  CHECK(std::string(flashptx_last_error()).find("seqused_q points to device memory") != std::string::npos);
  CUDA_REQUIRE(cudaDeviceSynchronize());
  for (uint16_t x : pb.f.out()) REQUIRE(x == kPoison);
  const auto g = pb.grads();
  for (const auto* x : {&g.dq, &g.dk, &g.dv})
    for (uint16_t v : *x) REQUIRE(v == kPoison);
}

// ---- head dims 96, 192 and (192, 128) ---------------------------------------------------------------
// The varlen forward at these dims runs one kernel per shape and dtype, plain or with a window and a
// softcap (src/sm90/fa3_fwd_hdim_local.cu, fa3_fwd_varlen_local_sm90_*_d96 / _d192 / _d192_v128; the
// varlen ABI has no sinks: the kernel's optional sink is none). What these dims can get wrong beyond
// d64/128/256: d96's last chunk is half a chunk (loaded zero-filled past column 96; O stored by a
// TMA box clipped there, or from registers for a sequence's last rows: 96 columns, not 128); d192's
// 112-key blocks (a ragged block at every length below); (192, 128): V and O with 128 columns and
// their own strides beside Q's and K's 192. check_writes holds every element beside O poisoned (the
// padded layouts' pads after column d_v included, the rows past each sequence and past seqused_q),
// and the fp64 rule runs on every row of the short sequences.
namespace {
struct HdimKernel { int64_t d, dv; flashptx_dtype t; const char* symbol; };
const HdimKernel kHdimKernels[] = {{96, 0, FLASHPTX_BF16, "fa3_fwd_varlen_local_sm90_bf16_d96"},
                                   {96, 96, FLASHPTX_FP16, "fa3_fwd_varlen_local_sm90_fp16_d96"},
                                   {192, 0, FLASHPTX_BF16, "fa3_fwd_varlen_local_sm90_bf16_d192"},
                                   {192, 192, FLASHPTX_FP16, "fa3_fwd_varlen_local_sm90_fp16_d192"},
                                   {192, 128, FLASHPTX_BF16, "fa3_fwd_varlen_local_sm90_bf16_d192_v128"},
                                   {192, 128, FLASHPTX_FP16, "fa3_fwd_varlen_local_sm90_fp16_d192_v128"}};
void check_hdim_symbol(const VCase& c, const char* symbol) {
  VProblem pb(c, 1);
  flashptx_kernel_info info{};
  REQUIRE_MESSAGE(flashptx_fwd_varlen_kernel_info(&pb.params, &info) == FLASHPTX_OK, flashptx_last_error());
  CHECK_MESSAGE(std::string(info.symbol) == symbol, c.str());
  CHECK(std::string(info.schedule) == "one-per-tile");
}
}  // namespace

TEST_CASE("head dims 96 and 192 over packed sequences: plain, causal and not, GQA, padded, empty, seqused; d_v 128 beside 192") {
  const bool sim = on_simulator();
  // Lengths: empty query and key sequences, one row, a sequence inside one warpgroup's 64 rows, one
  // across the 128-row tile (its last warpgroup stores from registers), more keys than queries and
  // fewer (bottom-right: the leading rows of a causal mask see no key).
  const std::vector<int> sim_lq = {0, 70, 150, 1, 9}, sim_lk = {30, 200, 90, 1, 0};
  const std::vector<int> lq = {0, 1, 63, 200, 129, 700, 1500, 7, 64}, lk = {5, 1, 300, 128, 400, 700, 1000, 0, 113};
  uint64_t seed = 1100;
  for (int i = 0; i < 6; ++i)
    for (bool causal : {false, true}) {
      const HdimKernel& x = kHdimKernels[i];
      VCase c{sim ? sim_lq : lq, sim ? sim_lk : lk, sim ? 2 : 8, sim ? 1 : 2, x.d, causal, x.t};
      c.dv = x.dv;
      c.padded = (i / 2 + (causal ? 1 : 0)) % 2 == 1;  // pads after column d_v of V and O stay poisoned
      check_hdim_symbol(c, x.symbol);
      if (sim && causal != (i % 2 == 1)) continue;  // the simulator: each kernel once, both masks across them
      check_varlen(c, seed++);
    }
  // GQA 4 and MQA, and seqused_q / seqused_k (used lengths 0 with rows, partial, one row; used keys
  // 0 with used rows: O = 0, LSE -inf), one case per shape.
  const Used u = seqused_lengths(sim);
  for (const HdimKernel& x : {kHdimKernels[0], kHdimKernels[3], kHdimKernels[4]}) {
    VCase c{u.lq, u.lk, 4, x.d == 96 ? 1 : 4, x.d, x.d == 192 && x.dv != 128, x.t};
    c.dv = x.dv;
    c.uq = u.uq;
    c.uk = u.uk;
    check_varlen(c, seed++);
  }
  if (sim) return;
  // On the GPU: 64 random sequences up to 768 rows (some empty), and 4 up to 8k.
  std::mt19937_64 rng(1190);
  for (const HdimKernel& x : kHdimKernels) {
    const auto l = random_lengths(rng, 64, 768, 0.1), lk2 = random_lengths(rng, 64, 768, 0.1);
    VCase c{l, lk2, 8, 2, x.d, (x.d + x.dv) % 3 == 0, x.t};
    c.dv = x.dv;
    check_varlen(c, seed++);
    const auto big = random_lengths(rng, 4, 8192, 0.15);
    VCase b{big, big, 2, 1, x.d, true, x.t};
    b.dv = x.dv;
    check_varlen(b, seed++);
  }
}

TEST_CASE("head dims 96 and 192 over packed sequences: window and softcap, per-sequence alignment; d_v 128 beside 192") {
  // Windows: smaller than a block (left 40, right 0), asymmetric (17, 33), wider than every
  // sequence on the left with a right bound (1000, 5), with causal (causal wins on the right), a
  // right bound alone, the diagonal alone (0, 0); the softcap alone (causal, large scores: Q x 4)
  // and with a window. Both dtypes across the cases, every kernel.
  struct M { int64_t wl, wr; bool window, causal; float cap, qscale; };
  const M mods[] = {{40, 0, true, false, 0.f, 1.f},   {17, 33, true, false, 0.f, 1.f},
                    {1000, 5, true, false, 20.f, 2.f}, {100, 64, true, true, 0.f, 1.f},
                    {-1, 20, true, false, 0.f, 1.f},  {0, 0, true, false, 10.f, 1.f},
                    {-1, -1, false, true, 30.f, 4.f}};
  const bool sim = on_simulator();
  const std::vector<int> sim_lq = {0, 70, 150, 9}, sim_lk = {30, 200, 90, 0};
  const std::vector<int> lq = {0, 1, 63, 200, 129, 700, 1500, 7}, lk = {5, 1, 300, 128, 400, 700, 1000, 0};
  uint64_t seed = 1200;
  int n = 0;
  for (const HdimKernel& x : kHdimKernels) {
    const int reps = sim ? 1 : 7;
    for (int r = 0; r < reps; ++r) {
      const M& m = mods[n++ % 7];
      VCase c{sim ? sim_lq : lq, sim ? sim_lk : lk, sim ? 2 : 4, sim ? 1 : 2, x.d, m.causal, x.t};
      c.dv = x.dv;
      c.window = m.window;
      c.wl = m.wl;
      c.wr = m.wr;
      c.softcap = m.cap;
      c.qscale = m.qscale;
      c.padded = n % 2 == 0;
      check_hdim_symbol(c, x.symbol);
      check_varlen(c, seed++);
    }
  }
  if (!sim) return;
  // The simulator: the softcap alone (causal, large scores) at d192, the window at (192, 128) with
  // seqused.
  VCase cap{sim_lq, sim_lk, 2, 1, 192, true, FLASHPTX_FP16};
  cap.softcap = 30.f;
  cap.qscale = 4.f;
  check_varlen(cap, seed++);
  const Used u = seqused_lengths(true);
  VCase w{u.lq, u.lk, 2, 1, 192, false, FLASHPTX_BF16};
  w.dv = 128;
  w.window = true;
  w.wl = 20;
  w.wr = 5;
  w.uq = u.uq;
  w.uk = u.uk;
  check_varlen(w, seed++);
}

TEST_CASE("head dims 96 and 192 over packed sequences: unsupported pairs and V/O strides are statuses, nothing launched") {
  VProblem pb(VCase{{100, 50}, {100, 60}, 2, 1, 192, false, FLASHPTX_BF16, false, false, -1, -1, {}, {}, 128}, 1300);
  pb.poison();
  flashptx_fwd_varlen_params p = pb.params;
  p.head_dim_v = 64;  // (192, 64): no such pair
  CHECK(flashptx_fwd_varlen(&p, nullptr) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
  CHECK(std::string(flashptx_last_error()).find("(192, 64)") != std::string::npos);
  p = pb.params;
  p.head_dim = 96;  // (96, 128): V wider than Q
  CHECK(flashptx_fwd_varlen(&p, nullptr) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
  p = pb.params;
  p.o_row_stride = 128;  // heads 2 x 128 columns: rows overlap
  CHECK(flashptx_fwd_varlen(&p, nullptr) == FLASHPTX_ERR_BAD_STRIDES);
  CUDA_REQUIRE(cudaDeviceSynchronize());
  for (uint16_t x : pb.out()) REQUIRE(x == kPoison);
  // The valid problem runs (the (192, 128) kernel, its V and O at 128 columns).
  check_varlen(pb.c, 1301);
}

}  // TEST_SUITE
