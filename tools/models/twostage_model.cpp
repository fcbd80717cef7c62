// FA3 two-stage WGMMA-softmax pipeline: the CPU oracle (docs/PROTOCOLS.md, "The two-stage
// overlap"; the FA3 paper, Shah et al., arXiv 2407.08608, section 3.2; `flashptx ledger 0x05`).
//
// What this file certifies:
//   1. The dependency bound of the peeled schedule: serial J(M_Q+E+M_V) = 15 against
//      M_Q+E+(J-1)[M_Q+max(E,M_V)]+M_V = 11 for unit times and J = 5 (15/11 = 1.36x), by a timed
//      walk of the schedule (startup QK(0)+softmax(0); steady QK(j), PV(j-1) on the tensor pipe with
//      softmax(j) beside PV(j-1); drain PV(J-1)) checked against the formula.
//   2. The RS liveness ledger: O, S_j and P_(j-1) coexist in the steady pair, 64 + 64 + 32 = 160
//      words per consumer thread at B_r = B_c = d_v = 128, G = 2; the three-stage extra is 32.5 KiB.
//   3. wait_group legality on event traces: WGMMA groups are ordered by commit age, not by name.
//      wait_group(n) completes every committed group but the newest n. The checker replays a trace
//      and names the first use of a resource whose covering group may still be pending.
//   4. The overlap at run time, on the committed H200 trace: each consumer's PV(j-1) retires a short
//      wait after softmax(j), shorter than a lone PV; the mutation pv_after_softmax (same order, no
//      overlap in time) fails that check while the listing's order is untouched.
#include "tools/models/twostage_model.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <string>

#include "src/protocol/trace.h"
#include "tools/models/flops.h"
#include "tools/models/ledger.h"
#include "tools/support/trace_render.h"

namespace flashptx::models::twostage {

double serial_time(int J, double mq, double e, double mv) { return J * (mq + e + mv); }

double two_stage_time(int J, double mq, double e, double mv) {
  if (J <= 0) return 0;
  double t = 0, tensor_free = 0;
  // startup: QK(0), then softmax(0) (no older PV exists)
  tensor_free = t + mq;
  t = tensor_free + e;
  for (int j = 1; j < J; ++j) {
    const double qk_end = std::max(t, tensor_free) + mq;   // QK(j) issued first (older group)
    const double pv_end = qk_end + mv;                      // PV(j-1) behind it on the tensor pipe
    const double sm_end = qk_end + e;                       // wait_group(1) then softmax(j)
    tensor_free = pv_end;
    t = std::max(pv_end, sm_end);                           // wait_group(0) closes the pair
  }
  return std::max(t, tensor_free) + mv;                     // drain: PV(J-1)
}

double two_stage_formula(int J, double mq, double e, double mv) {
  return J <= 0 ? 0 : mq + e + (J - 1) * (mq + std::max(e, mv)) + mv;
}

Liveness liveness(int br, int bc, int dv, int groups, int p_bytes) {
  Liveness l;
  const double threads = 128.0 * groups;
  l.o_bytes = (int64_t)br * dv * 4;
  l.s_bytes = (int64_t)br * bc * 4;
  l.p_bytes = (int64_t)br * bc * p_bytes;
  l.total_bytes = l.o_bytes + l.s_bytes + l.p_bytes;
  l.o_words = l.o_bytes / 4.0 / threads;
  l.s_words = l.s_bytes / 4.0 / threads;
  l.p_words = l.p_bytes / 4.0 / threads;
  l.total_words = l.o_words + l.s_words + l.p_words;
  return l;
}

int64_t three_stage_extra_bytes(int br, int bc, int in_bytes) { return (int64_t)br * bc * in_bytes + (int64_t)br * 4; }

const char* violation_name(Violation v) {
  switch (v) {
    case Violation::kNone: return "legal";
    case Violation::kReadSInFlight: return "score_read_before_covering_wait";
    case Violation::kPOverwriteInFlight: return "p_overwritten_while_pv_pending";
    case Violation::kOTouchInFlight: return "o_touched_while_pv_pending";
    case Violation::kKReleaseInFlight: return "k_released_before_qk_complete";
    case Violation::kVReleaseInFlight: return "v_released_before_pv_complete";
    case Violation::kUncommittedAtEnd: return "wgmma_never_committed";
  }
  return "?";
}

std::string format_event(const Event& e) {
  const std::string j = std::to_string(e.j);
  switch (e.ev) {
    case Ev::kIssueQK: return "issue QK(" + j + ")";
    case Ev::kIssuePV: return "issue PV(" + j + ")";
    case Ev::kCommit: return "commit_group";
    case Ev::kWaitGroup: return "wait_group(" + std::to_string(e.n) + ")";
    case Ev::kReadS: return "read S(" + j + ")";
    case Ev::kWriteP: return "write P(" + j + ")";
    case Ev::kTouchO: return "touch O";
    case Ev::kReleaseK: return "release K(" + j + ")";
    case Ev::kReleaseV: return "release V(" + j + ")";
  }
  return "?";
}

// ---- the checker -----------------------------------------------------------------------------------
namespace {
struct Op { bool pv; int j; };
}  // namespace

Verdict check_trace(const std::vector<Event>& trace) {
  Verdict v;
  std::vector<Op> uncommitted;
  std::deque<std::vector<Op>> groups;  // committed, not yet known complete; front = oldest
  auto pending = [&](bool pv, int j, bool any_j) {
    for (const Op& o : uncommitted)
      if (o.pv == pv && (any_j || o.j == j)) return true;
    for (const auto& g : groups)
      for (const Op& o : g)
        if (o.pv == pv && (any_j || o.j == j)) return true;
    return false;
  };
  auto fail = [&](Violation x, int i, const std::string& d) {
    v.violation = x;
    v.at = i;
    v.detail = "event " + std::to_string(i) + " (" + format_event(trace[i]) + "): " + d;
  };
  for (int i = 0; i < (int)trace.size(); ++i) {
    const Event& e = trace[i];
    switch (e.ev) {
      case Ev::kIssueQK: uncommitted.push_back({false, e.j}); break;
      case Ev::kIssuePV: uncommitted.push_back({true, e.j}); break;
      case Ev::kCommit:
        if (!uncommitted.empty()) groups.push_back(uncommitted);
        uncommitted.clear();
        break;
      case Ev::kWaitGroup:
        while ((int)groups.size() > e.n) groups.pop_front();
        break;
      case Ev::kReadS:
        if (pending(false, e.j, false)) { fail(Violation::kReadSInFlight, i, "QK of this score may be pending"); return v; }
        if (pending(true, 0, true)) v.overlap = true;
        break;
      case Ev::kWriteP:
        if (pending(true, 0, true)) { fail(Violation::kPOverwriteInFlight, i, "a PV still reads the P fragment"); return v; }
        break;
      case Ev::kTouchO:
        if (pending(true, 0, true)) { fail(Violation::kOTouchInFlight, i, "a PV still accumulates into O"); return v; }
        break;
      case Ev::kReleaseK:
        if (pending(false, e.j, false)) { fail(Violation::kKReleaseInFlight, i, "QK still reads this K stage"); return v; }
        break;
      case Ev::kReleaseV:
        if (pending(true, e.j, false)) { fail(Violation::kVReleaseInFlight, i, "PV still reads this V stage"); return v; }
        break;
    }
  }
  if (!uncommitted.empty()) {
    v.violation = Violation::kUncommittedAtEnd;
    v.at = (int)trace.size();
    v.detail = "the trace ends with uncommitted WGMMA";
  }
  return v;
}

// ---- traces ------------------------------------------------------------------------------------------
std::vector<Event> pipeline_trace(int J, Variant var) {
  std::vector<Event> t;
  auto add = [&](Ev ev, int j = 0, int n = 0) { t.push_back({ev, j, n}); };
  // startup: QK(0) alone
  add(Ev::kIssueQK, 0); add(Ev::kCommit); add(Ev::kWaitGroup, 0, 0);
  add(Ev::kReleaseK, 0); add(Ev::kReadS, 0); add(Ev::kWriteP, 0);
  for (int j = 1; j < J; ++j) {
    // the mutation is applied to the first steady pair (wait_group(0)-for-(1): to every pair)
    const bool m = (j == 1) || var == Variant::kWait0ForWait1;
    if (m && var == Variant::kPVCommittedFirst) {
      add(Ev::kIssuePV, j - 1); add(Ev::kCommit);
      add(Ev::kIssueQK, j); add(Ev::kCommit);
    } else {
      add(Ev::kIssueQK, j); add(Ev::kCommit);
      add(Ev::kTouchO);  // rescale_O_before_gemm: legal, no PV pending yet
      add(Ev::kIssuePV, j - 1); add(Ev::kCommit);
    }
    if (m && var == Variant::kRescaleOInFlight) add(Ev::kTouchO);
    if (m && var == Variant::kReadSBeforeWait) add(Ev::kReadS, j);
    if (m && var == Variant::kReleaseKEarly) add(Ev::kReleaseK, j);
    if (m && var == Variant::kWritePBeforeWait0) add(Ev::kWriteP, j);
    if (m && var == Variant::kReleaseVEarly) add(Ev::kReleaseV, j - 1);
    add(Ev::kWaitGroup, 0, (m && var == Variant::kWait0ForWait1) ? 0 : 1);
    if (!(m && var == Variant::kReleaseKEarly)) add(Ev::kReleaseK, j);
    if (!(m && var == Variant::kReadSBeforeWait)) add(Ev::kReadS, j);  // softmax(j) beside PV(j-1)
    add(Ev::kWaitGroup, 0, 0);
    if (!(m && var == Variant::kReleaseVEarly)) add(Ev::kReleaseV, j - 1);
    if (!(m && var == Variant::kWritePBeforeWait0)) add(Ev::kWriteP, j);
  }
  // drain: PV(J-1), then the final rescale and store
  add(Ev::kIssuePV, J - 1); add(Ev::kCommit); add(Ev::kWaitGroup, 0, 0);
  add(Ev::kReleaseV, J - 1); add(Ev::kTouchO);
  return t;
}

// ---- Table 2 ------------------------------------------------------------------------------------------
const std::vector<AblationRow>& table2_ablation() {
  static const std::vector<AblationRow> rows = {
      {"full FA3 (warp specialization + two-stage pipeline)", 3.538, 661},
      {"warp specialization, no GEMM-softmax pipeline", 4.021, 582},
      {"GEMM-softmax pipeline, no warp specialization", 4.105, 570},
  };
  return rows;
}
double table2_flops() {
  const AblationShape& x = kTable2Shape;
  return flashptx::fwd_flops_dense(x.batch, x.heads, x.seqlen, x.d);
}
double table2_tflops(double ms) { return flashptx::tflops_per_s(table2_flops(), ms); }

// ---- ledger --------------------------------------------------------------------------------------------
static void print_bound(std::FILE* o) {
  std::fprintf(o, "M_Q = M_V = E = 1 (normalized)\n");
  std::fprintf(o, "columns: J = K/V blocks; serial = J (M_Q + E + M_V); two-stage (timed) = makespan of the\n"
                  "         simulated peeled schedule; formula = M_Q + E + (J-1)(M_Q + max(E, M_V)) + M_V;\n"
                  "         times in units of one QK GEMM (M_Q); speedup = serial / two-stage\n");
  std::fprintf(o, "J   serial  two-stage (timed)  formula  speedup\n");
  for (int J : {1, 2, 5, 10}) {
    const double s = serial_time(J, 1, 1, 1), t = two_stage_time(J, 1, 1, 1);
    std::fprintf(o, "%-3d %6.0f  %17.0f  %7.0f  %.2fx%s\n", J, s, t, two_stage_formula(J, 1, 1, 1), s / t,
                 J == 5 ? "   (15/11)" : "");
  }
}

static void print_liveness(std::FILE* o) {
  const Liveness l = liveness(128, 128, 128, 2, 2);
  std::fprintf(o, "B_r = B_c = d_v = 128, G = 2 (256 consumer threads), FP32 O/S, FP16 P, RS PV path\n");
  std::fprintf(o, "columns: live payload = the tensor held in registers across the steady step; CTA bytes =\n"
                  "         its size over all consumer threads (KiB); words/thread = 32-bit registers per\n"
                  "         consumer thread if spread evenly (a lower bound, not a ptxas count)\n");
  std::fprintf(o, "live payload   CTA bytes   words/thread\n");
  std::fprintf(o, "O              %5lld KiB   %6.1f\n", (long long)l.o_bytes / 1024, l.o_words);
  std::fprintf(o, "S_j            %5lld KiB   %6.1f\n", (long long)l.s_bytes / 1024, l.s_words);
  std::fprintf(o, "P_(j-1)        %5lld KiB   %6.1f\n", (long long)l.p_bytes / 1024, l.p_words);
  std::fprintf(o, "RS subtotal    %5lld KiB   %6.1f\n", (long long)l.total_bytes / 1024, l.total_words);
  const int64_t x = three_stage_extra_bytes(128, 128, 2);
  std::fprintf(o, "three-stage extra: 128*128*2 + 128*4 = %lld B = %.1f KiB = %.1f words/thread (G = 2)\n",
               (long long)x, x / 1024.0, x / 4.0 / 256.0);
}

static void print_legality(std::FILE* o) {
  std::fprintf(o, "wait_group(N): wait until at most N committed wgmma groups are still pending\n");
  std::fprintf(o, "resource / action                      earliest legal point\n");
  std::fprintf(o, "read or transform S_j                  after wait_group(1)\n");
  std::fprintf(o, "release shared K_j stage               after wait_group(1)\n");
  std::fprintf(o, "read/rescale O after PV issue          after wait_group(0)\n");
  std::fprintf(o, "overwrite register P_(j-1) (RS PV)     after wait_group(0)\n");
  std::fprintf(o, "release shared V_(j-1) stage           after wait_group(0)\n\n");
  std::fprintf(o, "canonical steady pair (J = 2):\n");
  const auto tr = pipeline_trace(2, Variant::kCanonical);
  for (size_t i = 0; i < tr.size(); ++i) std::fprintf(o, "  %2zu %s\n", i, format_event(tr[i]).c_str());
  struct Row { const char* name; Variant v; };
  const Row rows[] = {
      {"canonical", Variant::kCanonical},
      {"wait_group(0) where 1 was intended", Variant::kWait0ForWait1},
      {"score read before the covering wait", Variant::kReadSBeforeWait},
      {"P overwritten before PV completion", Variant::kWritePBeforeWait0},
      {"O rescaled while PV is in flight", Variant::kRescaleOInFlight},
      {"K released before wait_group(1)", Variant::kReleaseKEarly},
      {"V released before wait_group(0)", Variant::kReleaseVEarly},
      {"PV committed before QK (age, not label)", Variant::kPVCommittedFirst},
  };
  std::fprintf(o, "\ncolumns: trace = a mutation of the canonical J = 5 event trace; verdict = the first rule it\n"
                  "         breaks (legal if none); overlap = whether some score S_j is read while a PV group is still pending\n");
  std::fprintf(o, "%-42s %-34s %s\n", "trace (J = 5)", "verdict", "overlap");
  for (const Row& r : rows) {
    const Verdict v = check_trace(pipeline_trace(5, r.v));
    std::fprintf(o, "%-42s %-34s %s\n", r.name, violation_name(v.violation), v.overlap ? "yes" : "no");
  }
}

FLASHPTX_LEDGER("0x05", "two-stage WGMMA-softmax schedule bound", print_bound);
FLASHPTX_LEDGER("0x05", "register liveness ledger", print_liveness);
FLASHPTX_LEDGER("0x05", "wait_group legality on event traces", print_legality);

static void print_table2(std::FILE* o) {
  const AblationShape& x = kTable2Shape;
  std::fprintf(o, "source-reported (FA3 paper Table 2, H100, non-causal FP16 forward; not measured here)\n");
  std::fprintf(o, "batch %.0f, seqlen %.0f, %.0f heads, d = %.0f: 4 B S^2 H d = %.0f FLOPs (%.4e)\n", x.batch,
               x.seqlen, x.heads, x.d, table2_flops(), table2_flops());
  std::fprintf(o, "columns: time = the paper's kernel time (ms); computed = FLOPs / time (TFLOP/s);\n"
                  "         paper = the paper's rounded TFLOP/s; vs full = time / full FA3's time\n");
  std::fprintf(o, "%-52s %9s %14s %7s %8s\n", "configuration", "time ms", "computed TF/s", "paper", "vs full");
  const double full = table2_ablation()[0].ms;
  for (const AblationRow& r : table2_ablation())
    std::fprintf(o, "%-52s %9.3f %14.1f %7.0f %7.3fx\n", r.config, r.ms, table2_tflops(r.ms), r.paper_tflops,
                 r.ms / full);
  std::fprintf(o, "the two ablated rows each drop a different technique: the gap between them is not the\n"
                  "isolated worth of either one\n");
}
FLASHPTX_LEDGER("0x05", "FA3 Table 2 ablation: times converted to TFLOP/s", print_table2);


// ---- the overlap at run time ----------------------------------------------------------------------------
trace_render::RawTrace pv_after_softmax(const trace_render::RawTrace& t) {
  namespace tr = flashptx::trace;
  trace_render::RawTrace m = t;
  for (trace_render::Lane& lane : m.lanes) {
    if (lane.lane == 0) continue;  // the producer stamps no PV
    auto& r = lane.records;
    // A lone PV's time on this lane (cycles): issue -> retire with no softmax end in between; median.
    std::vector<uint64_t> lone;
    for (size_t i = 0; i < r.size(); ++i) {
      if (r[i].event != tr::kPVIssue) continue;
      for (size_t k = i + 1; k < r.size(); ++k) {
        if (r[k].event == tr::kSoftmaxEnd) break;
        if (r[k].event == tr::kPVDone && r[k].arg == r[i].arg) { lone.push_back(r[k].clock - r[i].clock); break; }
      }
    }
    if (lone.empty()) continue;
    std::sort(lone.begin(), lone.end());
    const uint64_t lone_pv = lone[lone.size() / 2];
    // Each steady PV retires lone_pv after the softmax that ran since its issue; later stamps shift.
    uint64_t shift = 0, softmax_end = 0;
    bool pv_open = false, softmax_since_issue = false;
    for (trace_render::Record& x : r) {
      x.clock += shift;
      if (x.event == tr::kPVIssue) { pv_open = true; softmax_since_issue = false; }
      if (x.event == tr::kSoftmaxEnd && pv_open) { softmax_since_issue = true; softmax_end = x.clock; }
      if (x.event == tr::kPVDone) {
        if (softmax_since_issue && x.clock < softmax_end + lone_pv) {
          shift += softmax_end + lone_pv - x.clock;
          x.clock = softmax_end + lone_pv;
        }
        pv_open = softmax_since_issue = false;
      }
    }
  }
  return m;
}

static void print_runtime(std::FILE* o) {
  const std::string path = std::string(FLASHPTX_ROOT) + "/" + kCommittedTrace;
  std::string text, err;
  trace_render::RawTrace raw;
  if (!trace_render::read_trace_file(path, &text, &err) || !trace_render::from_json(text, &raw, &err)) {
    std::fprintf(o, "the committed trace %s is not readable here: %s\n", kCommittedTrace, err.c_str());
    return;
  }
  std::fprintf(o, "the listing fixes the order (PV(j-1) issued, softmax(j), then wait_group 0); only a clock\n"
                  "shows whether PV(j-1) ran during softmax(j). Measured: %s\n%s\n", kCommittedTrace, raw.shape.c_str());
  std::fprintf(o, "%s", trace_render::own_overlap_text(trace_render::own_overlap(trace_render::build_timeline(raw))).c_str());
  std::fprintf(o, "\nfailure lab pv_after_softmax (the same trace, each steady PV(j-1) started only when softmax(j)\n"
                  "ended; instruction order and the kernel's .check unchanged):\n");
  std::fprintf(o, "%s", trace_render::own_overlap_text(
                            trace_render::own_overlap(trace_render::build_timeline(pv_after_softmax(raw))))
                            .c_str());
}
FLASHPTX_LEDGER("0x05", "overlap at run time: the committed H200 trace and pv_after_softmax", print_runtime);

}  // namespace flashptx::models::twostage
