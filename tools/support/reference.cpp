// CPU fp64 attention reference: see tools/support/reference.h for the semantics and what it does
// not prove.
#include "tools/support/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace flashptx::ref {

double TensorView::at(int64_t b, int64_t s, int64_t h, int64_t d) const {
  const int64_t off = b * batch_stride + s * row_stride + h * head_stride + d;
  switch (type) {
    case Elem::kF32: return static_cast<const float*>(data)[off];
    case Elem::kF64: return static_cast<const double*>(data)[off];
    case Elem::kBF16: return bf16_to_float(static_cast<const uint16_t*>(data)[off]);
    case Elem::kFP16: return fp16_to_float(static_cast<const uint16_t*>(data)[off]);
  }
  return 0;
}

double Problem::scale() const {
  return softmax_scale != 0 ? softmax_scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

double Problem::logit(double dot) const {
  const double s = dot * scale();
  return softcap > 0 ? softcap * std::tanh(s / softcap) : s;
}

double Problem::sink(int64_t h) const {
  return sinks.empty() ? -std::numeric_limits<double>::infinity() : sinks[static_cast<size_t>(h)];
}

int64_t Problem::last_key(int64_t i) const {
  const int64_t diag = seqlen_k - seqlen_q;
  int64_t last = seqlen_k - 1;
  if (causal) last = std::min(last, i + diag);
  if (window_right >= 0) last = std::min(last, i + diag + window_right);
  return last;
}

int64_t Problem::first_key(int64_t i) const {
  const int64_t diag = seqlen_k - seqlen_q;
  return window_left >= 0 ? std::max<int64_t>(0, i + diag - window_left) : 0;
}

int64_t Problem::valid_pairs() const {
  int64_t n = 0;
  for (int64_t i = 0; i < seqlen_q; ++i) n += std::max<int64_t>(0, last_key(i) - first_key(i) + 1);
  return n;
}

Problem problem(int64_t batch, int64_t seqlen_q, int64_t seqlen_k, int64_t heads_q, int64_t heads_kv,
                int64_t head_dim, bool causal, double softmax_scale) {
  Problem p;
  p.batch = batch;
  p.seqlen_q = seqlen_q;
  p.seqlen_k = seqlen_k;
  p.heads_q = heads_q;
  p.heads_kv = heads_kv;
  p.head_dim = head_dim;
  p.causal = causal;
  p.softmax_scale = softmax_scale;
  return p;
}

namespace {
TensorView contiguous(const void* data, Elem type, int64_t seqlen, int64_t heads, int64_t head_dim) {
  TensorView t;
  t.data = data;
  t.type = type;
  t.head_stride = head_dim;
  t.row_stride = heads * head_dim;
  t.batch_stride = seqlen * t.row_stride;
  return t;
}
}  // namespace

TensorView contiguous_q(const void* data, Elem type, const Problem& p) {
  return contiguous(data, type, p.seqlen_q, p.heads_q, p.head_dim);
}

TensorView contiguous_kv(const void* data, Elem type, const Problem& p) {
  return contiguous(data, type, p.seqlen_k, p.heads_kv, p.head_dim);
}

double forward_row(const Problem& p, const TensorView& q, const TensorView& k, const TensorView& v,
                   int64_t b, int64_t i, int64_t h, double* o_row, Round rd, double* tanh_env, double* lse_env) {
  const int64_t D = p.head_dim, hk = h / p.group(), first = p.first_key(i), last = p.last_key(i);
  std::fill(o_row, o_row + D, 0.0);
  if (tanh_env != nullptr) std::fill(tanh_env, tanh_env + D, 0.0);
  if (lse_env != nullptr) *lse_env = 0;
  const double sink = p.sink(h);  // -inf: none
  if (last < first) return sink;  // no key: O = 0; LSE the sink's alone (-inf without one)

  std::vector<double> qrow(D), s(last + 1);  // s[j] for the visible keys j in [first, last]
  for (int64_t d = 0; d < D; ++d) qrow[d] = round_to(rd, q.at(b, i, h, d));
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t j = first; j <= last; ++j) {
    double acc = 0;
    for (int64_t d = 0; d < D; ++d) acc += qrow[d] * round_to(rd, k.at(b, j, hk, d));
    s[j] = p.logit(acc);
    m = std::max(m, s[j]);
  }
  m = std::max(m, sink);
  double l = std::exp(sink - m);  // the sink's term (0 without one)
  for (int64_t j = first; j <= last; ++j) {
    s[j] = std::exp(s[j] - m);  // <= 1: no overflow whatever the magnitude of the scores
    l += s[j];
  }
  for (int64_t j = first; j <= last; ++j) {
    const double pj = round_to(rd, s[j] / l);  // same-dtype mode: P in the dtype before PV
    for (int64_t d = 0; d < D; ++d) o_row[d] += pj * round_to(rd, v.at(b, j, hk, d));
  }
  for (int64_t d = 0; d < D; ++d) o_row[d] = round_to(rd, o_row[d]);
  if (p.softcap > 0 && tanh_env != nullptr && lse_env != nullptr) {
    // s[j] holds exp(t_j - m); the logits again, for e_j = 2^-11 |t_j|.
    std::vector<double> e(last + 1);
    double mean = 0;
    for (int64_t j = first; j <= last; ++j) {
      double acc = 0;
      for (int64_t d = 0; d < D; ++d) acc += qrow[d] * round_to(rd, k.at(b, j, hk, d));
      e[j] = std::ldexp(std::fabs(p.logit(acc)), -11);
      mean += s[j] / l * e[j];
    }
    for (int64_t j = first; j <= last; ++j)
      for (int64_t d = 0; d < D; ++d) tanh_env[d] += s[j] / l * (e[j] + mean) * std::fabs(v.at(b, j, hk, d));
    *lse_env = mean;
  }
  return m + std::log(l);
}

Forward forward_kvcache(const Problem& p, const std::vector<int32_t>& seqlens, const TensorView& q,
                        const TensorView& k_cache, const TensorView& v_cache, KeyAt key_at, const void* ctx,
                        Round rd) {
  Forward f;
  f.o.assign(static_cast<size_t>(p.batch * p.seqlen_q * p.heads_q * p.head_dim), 0.0);
  f.lse.assign(static_cast<size_t>(p.batch * p.heads_q * p.seqlen_q), 0.0);
  const int64_t D = p.head_dim, H = p.heads_kv;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t len = seqlens[static_cast<size_t>(b)];
    // The sequence's keys and values gathered into dense [len, heads_kv, d] fp64 (exact copies).
    std::vector<double> kd(static_cast<size_t>(std::max<int64_t>(len, 1) * H * D)), vd(kd.size());
    for (int64_t j = 0; j < len; ++j) {
      int64_t outer = 0, row = 0;
      key_at(ctx, b, j, &outer, &row);
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) {
          kd[static_cast<size_t>((j * H + h) * D + d)] = k_cache.at(outer, row, h, d);
          vd[static_cast<size_t>((j * H + h) * D + d)] = v_cache.at(outer, row, h, d);
        }
    }
    const TensorView kv{kd.data(), Elem::kF64, 0, H * D, D}, vv{vd.data(), Elem::kF64, 0, H * D, D};
    Problem pb = p;
    pb.seqlen_k = len;
    for (int64_t i = 0; i < p.seqlen_q; ++i)
      for (int64_t h = 0; h < p.heads_q; ++h) {
        double* o_row = &f.o[static_cast<size_t>(((b * p.seqlen_q + i) * p.heads_q + h) * D)];
        f.lse[static_cast<size_t>((b * p.heads_q + h) * p.seqlen_q + i)] = forward_row(pb, q, kv, vv, b, i, h, o_row, rd);
      }
  }
  return f;
}

Forward forward(const Problem& p, const TensorView& q, const TensorView& k, const TensorView& v,
                Round rd) {
  Forward f;
  f.o.assign(static_cast<size_t>(p.batch * p.seqlen_q * p.heads_q * p.head_dim), 0.0);
  f.lse.assign(static_cast<size_t>(p.batch * p.heads_q * p.seqlen_q), 0.0);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < p.seqlen_q; ++i)
      for (int64_t h = 0; h < p.heads_q; ++h) {
        double* row = &f.o[static_cast<size_t>(((b * p.seqlen_q + i) * p.heads_q + h) * p.head_dim)];
        f.lse[static_cast<size_t>((b * p.heads_q + h) * p.seqlen_q + i)] =
            forward_row(p, q, k, v, b, i, h, row, rd);
      }
  return f;
}

// The inputs of one tensor as contiguous doubles [batch, seq, heads, d], rounded to the dtype once.
static std::vector<double> dense(const TensorView& t, int64_t batch, int64_t seq, int64_t heads, int64_t d, Round rd) {
  std::vector<double> x(static_cast<size_t>(batch * seq * heads * d));
  size_t n = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < seq; ++s)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t e = 0; e < d; ++e) x[n++] = round_to(rd, t.at(b, s, h, e));
  return x;
}

Backward backward(const Problem& p, const TensorView& q, const TensorView& k, const TensorView& v,
                  const TensorView& dout, Round rd) {
  const int64_t D = p.head_dim, Hq = p.heads_q, Hk = p.heads_kv, Sq = p.seqlen_q, Sk = p.seqlen_k;
  Backward g;
  if (!p.sinks.empty()) {
    g.dsinks.assign(static_cast<size_t>(Hq), 0.0);
    g.dsinks_env.assign(static_cast<size_t>(Hq), 0.0);
    g.dsinks_o_sd.assign(static_cast<size_t>(Hq), 0.0);  // the variance until the end
  }
  g.dq.assign(static_cast<size_t>(p.batch * Sq * Hq * D), 0.0);
  g.dk.assign(static_cast<size_t>(p.batch * Sk * Hk * D), 0.0);
  g.dv.assign(g.dk.size(), 0.0);
  g.dq_env.assign(g.dq.size(), 0.0);
  g.dk_env.assign(g.dk.size(), 0.0);
  if (p.softcap > 0) g.dv_env.assign(g.dv.size(), 0.0);
  const double scale = p.scale();
  const auto Q = dense(q, p.batch, Sq, Hq, D, rd), K = dense(k, p.batch, Sk, Hk, D, rd),
             V = dense(v, p.batch, Sk, Hk, D, rd), dO = dense(dout, p.batch, Sq, Hq, D, Round::kNone);
  auto row = [&](const std::vector<double>& x, int64_t b, int64_t s, int64_t h, int64_t seq, int64_t heads) {
    return &x[static_cast<size_t>(((b * seq + s) * heads + h) * D)];
  };
  std::vector<double> o(D), sc, pr, dp;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t hk = h / p.group();
      for (int64_t i = 0; i < Sq; ++i) {
        // The row's keys [first, last] (the causal mask and the window); none: O = 0 depends on nothing.
        const int64_t first = p.first_key(i), last = p.last_key(i);
        if (last < first) continue;
        const double* qi = row(Q, b, i, h, Sq, Hq);
        const double* doi = row(dO, b, i, h, Sq, Hq);
        // The forward row: scores, LSE, O (rounded to the dtype in same-dtype mode, as a plain
        // forward's output would be).
        sc.assign(last + 1, 0.0);
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t j = first; j <= last; ++j) {
          const double* kj = row(K, b, j, hk, Sk, Hk);
          double acc = 0;
          for (int64_t e = 0; e < D; ++e) acc += qi[e] * kj[e];
          sc[j] = p.logit(acc);  // the scaled score, capped where softcap > 0
          m = std::max(m, sc[j]);
        }
        const double sink = p.sink(h);  // -inf: none
        m = std::max(m, sink);
        double l = std::exp(sink - m);
        for (int64_t j = first; j <= last; ++j) l += std::exp(sc[j] - m);
        const double lse = m + std::log(l);
        std::fill(o.begin(), o.end(), 0.0);
        pr.assign(last + 1, 0.0);
        for (int64_t j = first; j <= last; ++j) {
          pr[j] = std::exp(sc[j] - lse);
          const double pj = round_to(rd, pr[j]);
          const double* vj = row(V, b, j, hk, Sk, Hk);
          for (int64_t e = 0; e < D; ++e) o[e] += pj * vj[e];
        }
        for (int64_t e = 0; e < D; ++e) o[e] = round_to(rd, o[e]);
        double delta = 0, delta_abs = 0;  // D_i = sum_j P_ij dP_ij = dO_i . O_i
        for (int64_t e = 0; e < D; ++e) {
          delta += doi[e] * o[e];
          delta_abs += std::fabs(doi[e] * o[e]);
        }
        if (!p.sinks.empty()) {
          const double ps = std::exp(sink - lse);  // the sink's probability
          g.dsinks[static_cast<size_t>(h)] -= ps * delta;
          g.dsinks_env[static_cast<size_t>(h)] += std::ldexp(ps * delta_abs, -20);
          double var = 0;  // sum_d dO_id^2 (O_id^2 + sum_j P_ij^2 V_jd^2) / 3
          for (int64_t e = 0; e < D; ++e) {
            double pv2 = 0;
            for (int64_t j = first; j <= last; ++j) {
              const double pv = pr[j] * row(V, b, j, hk, Sk, Hk)[e];
              pv2 += pv * pv;
            }
            var += doi[e] * doi[e] * (o[e] * o[e] + pv2) / 3;
          }
          g.dsinks_o_sd[static_cast<size_t>(h)] += ps * ps * var;
        }
        dp.assign(last + 1, 0.0);
        double* dqi = &g.dq[static_cast<size_t>(((b * Sq + i) * Hq + h) * D)];
        double* dqe = &g.dq_env[static_cast<size_t>(((b * Sq + i) * Hq + h) * D)];
        // Softcap: the mean tanh.approx logit error of the row, sum_k P_k e_k (forward_row's tanh_env).
        double ebar = 0;
        if (p.softcap > 0)
          for (int64_t j = first; j <= last; ++j) ebar += pr[j] * std::ldexp(std::fabs(sc[j]), -11);
        for (int64_t j = first; j <= last; ++j) {
          const double* kj = row(K, b, j, hk, Sk, Hk);
          const double* vj = row(V, b, j, hk, Sk, Hk);
          double dpj = 0, dp_abs = 0;
          for (int64_t e = 0; e < D; ++e) {
            dpj += doi[e] * vj[e];
            dp_abs += std::fabs(doi[e] * vj[e]);
          }
          // The softcap's derivative: d(c tanh(x / c))/dx = 1 - tanh^2(x / c) = 1 - (logit / c)^2.
          const double t = p.softcap > 0 ? sc[j] / p.softcap : 0, dtanh = 1 - t * t;
          const double ds = round_to(rd, pr[j] * (dpj - delta) * dtanh);  // dL/dS_ij (before the scale)
          const double pj = round_to(rd, pr[j]);
          // fp32 envelope of dP_ij - delta_i: both are fp32 sums of d products in a kernel, in
          // different orders (tensor cores; the preprocess), and they cancel where P_ij ~ 1.
          double eps = std::ldexp(dp_abs + delta_abs, -20) * pr[j] * scale * dtanh;
          if (p.softcap > 0) {
            // tanh.approx.f32 (relative error 2^-11, PTX ISA) in the forward (the LSE) and in the
            // backward (P): P_ij moves by at most eP = 2 P_ij (e_ij + ebar), e_ij = 2^-11 |logit|;
            // 1 - t^2 by 2 t^2 2^-11. First order, as forward_row's tanh_env.
            const double ep = 2 * pr[j] * (std::ldexp(std::fabs(sc[j]), -11) + ebar);
            eps += scale * (ep * (std::fabs(dpj) + std::fabs(delta)) * dtanh +
                            pr[j] * (std::fabs(dpj) + std::fabs(delta)) * std::ldexp(2 * t * t, -11));
            double* dve = &g.dv_env[static_cast<size_t>(((b * Sk + j) * Hk + hk) * D)];
            for (int64_t e = 0; e < D; ++e) dve[e] += ep * std::fabs(doi[e]);
          }
          double* dkj = &g.dk[static_cast<size_t>(((b * Sk + j) * Hk + hk) * D)];
          double* dke = &g.dk_env[static_cast<size_t>(((b * Sk + j) * Hk + hk) * D)];
          double* dvj = &g.dv[static_cast<size_t>(((b * Sk + j) * Hk + hk) * D)];
          for (int64_t e = 0; e < D; ++e) {
            dvj[e] += pj * doi[e];
            dqi[e] += scale * ds * kj[e];
            dkj[e] += scale * ds * qi[e];
            dqe[e] += eps * std::fabs(kj[e]);
            dke[e] += eps * std::fabs(qi[e]);
          }
        }
      }
    }
  for (double& x : g.dsinks_o_sd) x = std::sqrt(x);
  if (rd != Round::kNone)
    for (auto* t : {&g.dq, &g.dk, &g.dv})
      for (double& x : *t) x = round_to(rd, x);
  return g;
}

double max_abs_diff_o(const Problem& p, const TensorView& out, const std::vector<double>& ref) {
  double m = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < p.seqlen_q; ++i)
      for (int64_t h = 0; h < p.heads_q; ++h)
        for (int64_t d = 0; d < p.head_dim; ++d) {
          const double r = ref[static_cast<size_t>(((b * p.seqlen_q + i) * p.heads_q + h) * p.head_dim + d)];
          const double x = out.at(b, i, h, d);
          const double e = std::fabs(x - r);
          if (std::isnan(e)) return std::numeric_limits<double>::infinity();
          m = std::max(m, e);
        }
  return m;
}

double max_abs_diff_lse(const Problem& p, const float* lse, const std::vector<double>& ref) {
  double m = 0;
  const size_t n = static_cast<size_t>(p.batch * p.heads_q * p.seqlen_q);
  for (size_t idx = 0; idx < n; ++idx) {
    const double x = lse[idx], r = ref[idx];
    if (std::isinf(x) && std::isinf(r) && (x > 0) == (r > 0)) continue;
    const double e = std::fabs(x - r);
    if (std::isnan(e)) return std::numeric_limits<double>::infinity();
    m = std::max(m, e);
  }
  return m;
}

}  // namespace flashptx::ref
