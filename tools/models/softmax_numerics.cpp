// FA4 softmax numerics oracle (docs/PROTOCOLS.md, "The FA4 roles"; the FA4 paper, Zadouri et
// al., arXiv 2603.05451, sections 3.1.3 and 3.1.4).
//
// Read top to bottom:
//   1. the degree-3 exp2 on the deterministic 65,536-point grid: raw and post-BF16 relative errors
//      (two different claims), exact/one-step BF16 codes;
//   2. the hardware/software fragment-dispatch table;
//   3. the retained-reference recurrence, its deterministic fixture and its failure lab, checked
//      against a direct FP64 softmax;
//   4. the dtype threshold/offset envelopes.
// The exp2 and the recurrence are the __host__ __device__ code of src/protocol/, not copies.
#include "tools/models/softmax_numerics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "src/protocol/e4m3.h"
#include "src/protocol/exp2_emulation.h"
#include "tools/models/ledger.h"

namespace flashptx::models::softmax_numerics {

namespace emu = flashptx::exp2emu;

// ---- 1. the grid --------------------------------------------------------------------------------

float grid_point(int i) { return static_cast<float>(i) / 65536.0f; }  // exact in FP32

GridStats grid_stats() {
  GridStats g;
  g.points = kGridPoints;
  double raw_sum = 0, bf_sum = 0;
  for (int i = 0; i < kGridPoints; ++i) {
    const float x = grid_point(i);
    const double ref = std::exp2(static_cast<double>(x));
    const float y = emu::exp2_degree3(x);
    const double raw = std::fabs(static_cast<double>(y) - ref) / ref;
    const uint16_t yb = emu::bf16_bits_rne(y);
    const double bf = std::fabs(static_cast<double>(emu::bf16_to_float(yb)) - ref) / ref;
    const uint16_t rb = emu::bf16_bits_rne(static_cast<float>(ref));
    g.raw_max = std::max(g.raw_max, raw);
    g.bf16_max = std::max(g.bf16_max, bf);
    raw_sum += raw;
    bf_sum += bf;
    if (yb == rb) ++g.exact_codes;
    if (std::abs(static_cast<int>(yb) - static_cast<int>(rb)) <= 1) ++g.within_one;
  }
  g.raw_mean = raw_sum / kGridPoints;
  g.bf16_mean = bf_sum / kGridPoints;
  return g;
}

// ---- 2. fragment dispatch -----------------------------------------------------------------------

int emulated_entries(int freq, int res, int start, int row_len) {
  const int F = row_len / kFragLen;
  int n = 0;
  for (int j = 0; j < F; ++j)
    for (int k = 0; k < kFragLen; k += 2)
      if (emu::pair_uses_emulation(k, j, F, freq, res, start)) n += 2;
  return n;
}

std::vector<DispatchRow> dispatch_table() {
  struct C { const char* name; int f, r, s; };
  const C rows[] = {
      {"SM100 2-CTA, noncausal, d=128", 10, 4, 1},
      {"SM100 1-CTA, causal, d=128", 16, 4, 1},
      {"SM100 2-CTA, noncausal, d=192", 16, 4, 0},
      {"SM100 1-CTA, causal, d=192", 32, 4, 1},
      {"SM100 2-CTA, d=256", 14, 6, 0},
      {"SM103 tuning rows", 0, 4, 0},
  };
  std::vector<DispatchRow> out;
  for (const C& c : rows) {
    const int n = emulated_entries(c.f, c.r, c.s);
    out.push_back({c.name, c.f, c.r, c.s, n, 100.0 * n / kRowLen});
  }
  return out;
}

// ---- 3. the recurrence --------------------------------------------------------------------------

namespace {
uint64_t splitmix(uint64_t& st) {
  uint64_t z = (st += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
float uniform(uint64_t& st, float lo, float hi) {  // exact FP32 grid of 2^-24 steps
  const float u = static_cast<float>(splitmix(st) >> 40) * (1.0f / 16777216.0f);
  return lo + (hi - lo) * u;
}
}  // namespace

// lambda = 1 (so raw and base-2 coordinates coincide), tau = 8. Block maxima 0, 1, 2, 12, 13:
// after three blocks the true base-2 maximum is 2 and the retained reference still 0 (2 - 0 <= 8);
// block 4 moves it to 12 (gamma = 2^-12); block 5 is retained again (13 - 12 <= 8).
RowFixture deterministic_fixture(float omega) {
  RowFixture fx;
  fx.lambda = 1.0f;
  fx.tau = 8.0f;
  fx.omega = omega;
  fx.s = {{0.0f, -1.0f, -2.5f, -0.5f},
          {1.0f, 0.25f, -3.0f, 0.5f},
          {-1.0f, 2.0f, 1.5f, 0.0f},
          {12.0f, 9.0f, 11.5f, 3.0f},
          {13.0f, 10.0f, 12.5f, 6.0f}};
  uint64_t st = 0x0009;  // fixed values in [-1, 1)
  for (const auto& blk : fx.s) {
    std::vector<float> v(blk.size() * kDV);
    for (float& x : v) x = uniform(st, -1.0f, 1.0f);
    fx.v.push_back(v);
  }
  return fx;
}

// Rows whose block maxima drift upward by random steps, some above tau and some below it, so both
// branches of the recurrence are taken. Scores are raw; lambda = (1/sqrt(64)) * log2(e).
RowFixture random_fixture(unsigned seed, int blocks, int block_len, float omega) {
  RowFixture fx;
  fx.lambda = 0.125f * 1.44269504088896341f;
  fx.tau = 8.0f;
  fx.omega = omega;
  uint64_t st = 0xF1A5ull * (seed + 1);
  float base = uniform(st, -20.0f, 20.0f);
  for (int b = 0; b < blocks; ++b) {
    base += uniform(st, -30.0f, 90.0f);  // in raw units; x lambda = up to ~16 base-2 units
    std::vector<float> s(block_len), v(block_len * kDV);
    for (float& x : s) x = base + uniform(st, -40.0f, 40.0f);
    for (float& x : v) x = uniform(st, -1.0f, 1.0f);
    fx.s.push_back(s);
    fx.v.push_back(v);
  }
  return fx;
}

RecurrenceRun run_recurrence(const RowFixture& fx, Mutation mut) {
  RecurrenceRun run{};
  flashptx::softmax::row_init(run.state);
  double true_max = -INFINITY;
  for (size_t j = 0; j < fx.s.size(); ++j) {
    const float g = flashptx::softmax::row_update(run.state, fx.s[j].data(), fx.v[j].data(),
                                                 static_cast<int>(fx.s[j].size()), fx.lambda,
                                                 fx.tau, fx.omega, mut);
    run.gamma.push_back(g);
    run.a_after.push_back(run.state.a);
    for (float s : fx.s[j]) true_max = std::max(true_max, static_cast<double>(s) * fx.lambda);
    run.true_max_b.push_back(true_max);
  }
  flashptx::softmax::row_finalize(run.state, run.out);
  run.lse = flashptx::softmax::row_lse(run.state, fx.lambda, fx.omega, mut);

  // Direct FP64 softmax: weights 2^(lambda s), no reference, no offset.
  const double lam = fx.lambda, r = static_cast<double>(run.state.a) * lam, om = fx.omega;
  double den = 0, num[kDV] = {0}, Dr = 0, Nr[kDV] = {0};
  run.max_p = 0;
  for (size_t j = 0; j < fx.s.size(); ++j)
    for (size_t k = 0; k < fx.s[j].size(); ++k) {
      const double b = fx.s[j][k] * lam;
      const double w = std::exp2(b - true_max);
      const double wr = std::exp2(b - r + om);
      den += w;
      Dr += wr;
      for (int d = 0; d < kDV; ++d) {
        num[d] += w * fx.v[j][k * kDV + d];
        Nr[d] += wr * fx.v[j][k * kDV + d];
      }
      const double p = std::exp2(b - static_cast<double>(run.a_after[j]) * lam + om);
      run.max_p = std::max(run.max_p, static_cast<float>(p));
    }
  for (int d = 0; d < kDV; ++d) {
    run.ref_out[d] = num[d] / den;
    run.ref_N[d] = Nr[d];
  }
  run.ref_D = Dr;
  run.ref_lse = (true_max + std::log2(den)) * std::log(2.0);
  return run;
}

std::string check_recurrence(const RecurrenceRun& run) {
  // Tolerances: the degree-3 exp2 is within 8.8e-5 relative per term; FP32 sums add ~1e-6.
  const double tol = 1e-3;
  const bool d_ok = std::fabs(run.state.D - run.ref_D) <= tol * run.ref_D;
  double nscale = 0;
  for (int d = 0; d < kDV; ++d) nscale = std::max(nscale, std::fabs(run.ref_N[d]));
  bool n_ok = true;
  for (int d = 0; d < kDV; ++d)
    if (std::fabs(run.state.N[d] - run.ref_N[d]) > tol * std::max(nscale, run.ref_D)) n_ok = false;
  if (!d_ok && !n_ok) return "block and state in different frames";
  if (!d_ok) return "D not in retained frame";
  if (!n_ok) return "N not in retained frame";
  for (int d = 0; d < kDV; ++d)
    if (std::fabs(run.out[d] - run.ref_out[d]) > tol) return "output differs from direct softmax";
  if (std::fabs(run.lse - run.ref_lse) > tol * std::max(1.0, std::fabs(run.ref_lse)))
    return "LSE biased by a constant";
  return "ok";
}

// ---- 4. dtype envelopes -------------------------------------------------------------------------

std::string check_envelope(float tau, float omega, float format_max) {
  return std::exp2(static_cast<double>(tau) + omega) > format_max ? "P_max exceeds format max"
                                                                  : "ok";
}

// ---- the correction warp -------------------------------------------------------------------------

CorrectionRun correction_warp(const std::vector<float>& scales, bool per_lane_branch) {
  CorrectionRun r;
  const int lanes = 32;
  // O row of lane l before correction: 4 values; expected after: scale_l times them
  auto o_before = [](int l, int d) { return static_cast<float>((l * 3 + d * 5) % 11 - 5); };
  unsigned ballot = 0;
  for (int l = 0; l < lanes; ++l)
    if (scales[l] < 1.0f) ballot |= 1u << l;
  unsigned active = 0;  // lanes that reach the rescale path
  if (per_lane_branch) active = ballot;
  else if (ballot) active = 0xFFFFFFFFu;
  r.lanes_on_path = __builtin_popcount(active);
  if (active != 0 && active != 0xFFFFFFFFu) {
    // a warp-collective tcgen05.ld with part of the warp: undefined; the model stops here
    char buf[80];
    std::snprintf(buf, sizeof buf, "partial_warp_collective (lanes %d of 32 reached tcgen05.ld)", r.lanes_on_path);
    r.verdict = std::string(buf);
    return r;
  }
  for (int l = 0; l < lanes; ++l)
    for (int d = 0; d < kDV; ++d) {
      const float before = o_before(l, d);
      const float after = (active >> l & 1u) ? before * scales[l] : before;
      r.max_row_err = std::max(r.max_row_err, std::fabs(static_cast<double>(after) - static_cast<double>(before) * scales[l]));
    }
  r.verdict = std::string(r.max_row_err == 0 ? "ok" : "row not rescaled");
  return r;
}

// ---- ledger -------------------------------------------------------------------------------------

namespace {

void print_exp2(std::FILE* out) {
  std::fprintf(out, "degree-3 exp2: p0=1, p1=%.16g, p2=%.17g, p3=%.16g (FP32, Horner by FMA)\n",
               (double)emu::kP1, (double)emu::kP2, (double)emu::kP3);
  std::fprintf(out, "range reduction: clamp -127; n = RD(x + 12582912) - 12582912; f = x - n;\n"
                    "                 result bits = (bits(x + C) << 23) + bits(p(f))\n");
  std::fprintf(out, "columns: x = input; x+C (RD) bits = FP32 bits of x + 1.5 x 2^23 rounded down (its low bits\n"
                  "         hold n); n = integer part; f = x - n in [0, 1); p(f) = the polynomial; 2^x (emu) = the\n"
                  "         emulated result (p(f) with n added to its exponent); 2^x (fp64) = the exact value\n");
  std::fprintf(out, "  x        x+C (RD) bits   n     f          p(f)         2^x (emu)        2^x (fp64)\n");
  for (float x : {-130.0f, -127.0f, -3.75f, -0.5f, 0.0f, 0.3f, 1.0f, 7.999f, 20.25f}) {
    const emu::Exp2Trace t = emu::exp2_degree3_trace(x);
    std::fprintf(out, "  %-8g 0x%08X   %5g  %-10.7g %-12.9g %-16.9g %-16.9g\n", (double)x,
                 emu::f2u(t.x_rounded), (double)t.n, (double)t.f, (double)t.poly, (double)t.result,
                 std::exp2((double)x));
  }
  const GridStats g = grid_stats();
  std::fprintf(out, "\n65,536-point grid x_i = i/65536 on [0,1), FP64 reference     spec (the article's values)\n");
  std::fprintf(out, "  raw FP32 max relative error:   %.7e               8.7683755e-5\n", g.raw_max);
  std::fprintf(out, "  raw FP32 mean relative error:  %.7e               5.4271432e-5\n", g.raw_mean);
  std::fprintf(out, "  post-BF16 max relative error:  %.7e               3.8975323e-3\n", g.bf16_max);
  std::fprintf(out, "  post-BF16 mean relative error: %.7e               1.4095395e-3\n", g.bf16_mean);
  std::fprintf(out, "  exact BF16-code match:         %.4f%% (%d / %d)      99.0051%%\n", g.exact_pct(),
               g.exact_codes, g.points);
  std::fprintf(out, "  within one BF16 code step:     %.4f%% (%d / %d)     100%%\n", g.within_one_pct(),
               g.within_one, g.points);
}

void print_dispatch(std::FILE* out) {
  std::fprintf(out, "pair (k,k+1) of fragment j emulated iff k mod freq >= freq-res, j >= start, j < F-1\n");
  std::fprintf(out, "128-element row, F = 4 fragments of 32:\n");
  std::fprintf(out, "columns: coordinate = kernel specialization; freq/res/start = the dispatch parameters above;\n"
                  "         emulated = elements of the row computed by the polynomial instead of MUFU.EX2;\n"
                  "         fraction = emulated / 128\n");
  std::fprintf(out, "  %-34s %-14s %-10s %s\n", "coordinate", "freq/res/start", "emulated", "fraction");
  for (const DispatchRow& r : dispatch_table())
    std::fprintf(out, "  %-34s %2d/%d/%d         %3d / 128  %.3f%%\n", r.coordinate, r.freq, r.res,
                 r.start, r.emulated, r.pct);
}

void print_recurrence(std::FILE* out) {
  const RowFixture fx = deterministic_fixture();
  const RecurrenceRun run = run_recurrence(fx);
  std::fprintf(out, "deterministic fixture: lambda=1, tau=8, omega=0, 5 blocks of 4 scores, d_v=4\n");
  std::fprintf(out, "columns: block max = largest score of the block; true max b = running max so far;\n"
                  "         retained r = the reference the state is kept in (moves only when b - r > tau);\n"
                  "         gamma = 2^(r_old - r_new), the rescale applied to N and D (1 = no rescale;\n"
                  "         block 1: 0, nothing to rescale yet)\n");
  std::fprintf(out, "  block  block max  true max b  retained r  gamma\n");
  for (size_t j = 0; j < fx.s.size(); ++j) {
    const float bm = *std::max_element(fx.s[j].begin(), fx.s[j].end());
    std::fprintf(out, "  %5zu  %9g  %10g  %10g  %.9g\n", j + 1, (double)bm, run.true_max_b[j],
                 (double)run.a_after[j] * fx.lambda, (double)run.gamma[j]);
  }
  std::fprintf(out, "  output N/D:  ");
  for (int d = 0; d < kDV; ++d) std::fprintf(out, "%+.7f ", (double)run.out[d]);
  std::fprintf(out, "\n  direct fp64: ");
  for (int d = 0; d < kDV; ++d) std::fprintf(out, "%+.7f ", run.ref_out[d]);
  std::fprintf(out, "\n  LSE = (r + log2 D - omega) ln 2 = %.7f   direct: %.7f\n", (double)run.lse,
               run.ref_lse);
  std::fprintf(out, "\nfailure lab (same fixture, omega = 4 so the LSE offset is visible); each row: mutation -> the\n"
                    "checker's verdict (ok, or the broken rule):\n");
  const RowFixture fx4 = deterministic_fixture(4.0f);
  const struct { Mutation m; const char* name; } muts[] = {
      {Mutation::none, "none (the correct recurrence)"},
      {Mutation::convert_only_D, "gamma applied to D only"},
      {Mutation::convert_only_N, "gamma applied to N only"},
      {Mutation::center_on_candidate, "skipped update, block centred on candidate"},
      {Mutation::lse_without_offset, "LSE omits - omega"},
  };
  for (const auto& m : muts)
    std::fprintf(out, "  %-44s -> %s\n", m.name, check_recurrence(run_recurrence(fx4, m.m)).c_str());
}

void print_correction_warp(std::FILE* out) {
  std::fprintf(out, "one correction warp, 32 rows (one per lane); scale = the row's old-state scale (1: no move)\n");
  std::fprintf(out, "columns: rescaled = rows needing a rescale; decision = warp vote (ballot(scale < 1) taken by\n"
                    "         the whole warp) or per-lane (each lane branches on its own scale); lanes = lanes that\n"
                    "         reach the TMEM load/multiply/store path; verdict\n");
  std::fprintf(out, "  %-9s %-9s %-6s %s\n", "rescaled", "decision", "lanes", "verdict");
  for (int need : {0, 3, 32}) {
    std::vector<float> scales(32, 1.0f);
    for (int l = 0; l < need; ++l) scales[(l * 11) % 32] = 0.25f;
    for (bool per_lane : {false, true}) {
      const CorrectionRun r = correction_warp(scales, per_lane);
      std::fprintf(out, "  %-9d %-9s %-6d %s\n", need, per_lane ? "per-lane" : "vote", r.lanes_on_path, r.verdict.c_str());
    }
  }
}

void print_envelopes(std::FILE* out) {
  std::fprintf(out, "P_max <= 2^(tau + omega)\n");
  std::fprintf(out, "columns: tau = rescale threshold (log2); omega = probability offset (log2); P_max = largest\n"
                  "         unnormalized probability 2^(tau+omega); format max = largest finite value of the\n"
                  "         dtype; headroom = format max / P_max\n");
  std::fprintf(out, "  %-12s tau  omega  P_max  format max  headroom  check\n", "dtype");
  for (const auto& e : flashptx::softmax::kEnvelopes) {
    const double pmax = std::exp2((double)e.tau + e.omega);
    std::fprintf(out, "  %-12s %3g  %5g  %5g  %10g  %8.4g  %s\n", e.dtype, (double)e.tau,
                 (double)e.omega, pmax, (double)e.format_max, e.format_max / pmax,
                 check_envelope(e.tau, e.omega, e.format_max).c_str());
  }
  std::fprintf(out, "  mutation: E4M3FN with tau=8, omega=4 -> P_max 4096 -> %s; E4M3(4096) = %g\n",
               check_envelope(8.0f, 4.0f, 448.0f).c_str(),
               (double)flashptx::e4m3::quantize(4096.0f));
}

}  // namespace

FLASHPTX_LEDGER("0x09", "FA4 softmax: degree-3 exp2 emulation and its 65,536-point grid", print_exp2);
FLASHPTX_LEDGER("0x09", "FA4 softmax: hardware/software exp2 fragment dispatch", print_dispatch);
FLASHPTX_LEDGER("0x09", "FA4 softmax: retained-reference recurrence, LSE, failure lab", print_recurrence);
FLASHPTX_LEDGER("0x09", "FA4 softmax: dtype threshold/offset envelopes", print_envelopes);
FLASHPTX_LEDGER("0x09", "FA4 correction warp: the warp vote and its per-lane mutation", print_correction_warp);

}  // namespace flashptx::models::softmax_numerics
