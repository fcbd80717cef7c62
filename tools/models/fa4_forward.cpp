// The FA4 forward model (docs/PROTOCOLS.md, "The FA4 roles"; the FA4 paper, Zadouri et al., arXiv 2603.05451, section 3.1.1 and Table 1).
//
// Read top to bottom:
//   1. ledger(): F_MMA = 4MNd; SMEM bytes from the 128x128 instruction grids (ceilings kept, the
//      thing that makes the ragged (192,96,160) tile SMEM-bound); T_exp = MN / R_exp.
//      Certifies: 1024/768/1024 at 128^3, 2048/1536/2048 at (256,128,128), 1440/2048/1152 at
//      (192,96,160); max() is a lower bound, the sum a no-overlap subtotal, neither a runtime.
//   2. the sensitivity table and d* = R_MMA / (4 R_exp) = 128.
//   3. the warp roles (the kernel's table, src/protocol/fa4_plan.h: a partition of warps 0..15) and
//      2*192 + 80 + 48 = 512.
//   4. split P: 32 * floor((3N/4)/32) = 96 of 128 columns; an issue point, not a completion.
//   5. issue_order() / check_order(): the startup/steady/drain MMA order and every handoff edge;
//      each schedule mutation is rejected with its own FwdError. kernel_issue_order(): the same events
//      from the kernel's own walk (fa4::mma_tile_schedule); check_barrier_plan(): the kernel's barrier
//      table against its roles and that walk.
//   6. H/L exponential critical sections never overlap (the paper serializes MUFU work).
//   7. evidence: the five rows of the forward failure matrix that describe a number as something else
//      (a sum as an overlapped runtime, the max as a measurement, paper M as every work group, a
//      setmaxnreg target as the compiled count, the issue order as a timeline), each checked.
//   8. ledger tables.
#include "tools/models/fa4_forward.h"

#include <algorithm>
#include <cstdio>

#include "src/protocol/fa4_plan.h"
#include "tools/models/ledger.h"
#include "tools/sass/audit.h"
#include "tools/sass/sass_listing.h"

namespace flashptx::models::fa4fwd {

// ---- 1. feeds and speeds -----------------------------------------------------------------------
namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

double Ledger::lower_bound() const { return std::max({t_mma, t_smem, t_exp}); }
double Ledger::serial() const { return t_mma + t_smem + t_exp; }
std::string Ledger::largest() const {
  const double lb = lower_bound();
  std::string s;
  auto add = [&](double t, const char* name) {
    if (t == lb) s += (s.empty() ? "" : " and ") + std::string(name);
  };
  add(t_mma, "MMA");
  add(t_smem, "SMEM");
  add(t_exp, "exp");
  return s;
}

Ledger ledger(int64_t m, int64_t n, int64_t d, int64_t b, Rates r, bool keep_ceilings) {
  Ledger l{};
  l.m = m; l.n = n; l.d = d;
  l.flops_mma = 4 * m * n * d;  // QK^T (2MNd) + PV (2MNd)
  l.t_mma = double(l.flops_mma) / r.mma;
  if (keep_ceilings) {
    l.i_qk = ceil_div(m, 128) * ceil_div(n, 128);      // each covered tile reads Q and K
    l.i_pv = ceil_div(m, 128) * ceil_div(d, 128);      // P from TMEM; V from SMEM
    l.b_qk = b * l.i_qk * (128 * d + 128 * d);
    l.b_pv = b * l.i_pv * (128 * n);
    l.t_smem = double(l.b_qk + l.b_pv) / r.smem;
  } else {
    // Mutation: the divisible-tile closed form applied to any shape.
    l.b_qk = b * m * n * d / 64;
    l.b_pv = b * m * n * d / 128;
    l.t_smem = 3.0 * b * m * n * d / (128.0 * r.smem);
  }
  l.t_exp = double(m * n) / r.exp;  // one exponential per score
  return l;
}

// ---- 2. sensitivity and the crossover ----------------------------------------------------------
double d_star(Rates r) { return r.mma / (4.0 * r.exp); }

const std::vector<SensitivityRow>& sensitivity_rows() {
  static const std::vector<SensitivityRow> rows = {
      {"paper B200 model", Rates{8192, 128, 16}},
      {"double only exponential throughput", Rates{8192, 128, 32}},
      {"double only tensor throughput", Rates{16384, 128, 16}},
      {"halve only SMEM bandwidth", Rates{8192, 64, 16}},
  };
  return rows;
}

// ---- 3. roles and register targets --------------------------------------------------------------
const std::vector<Role>& roles() {
  static const std::vector<Role> r = [] {
    std::vector<Role> v;
    for (int i = 0; i < fa4::kRoleCount; ++i) {
      const fa4::RoleSpec s = fa4::role_spec(static_cast<fa4::Role>(i));
      v.push_back({s.name, s.first_warp, s.last_warp, s.regs});
    }
    return v;
  }();
  return r;
}

bool roles_partition_16(const std::vector<Role>& r) {
  int seen[16] = {0};
  for (const auto& x : r)
    for (int w = x.first_warp; w <= x.last_warp; ++w) {
      if (w < 0 || w > 15) return false;
      ++seen[w];
    }
  for (int c : seen)
    if (c != 1) return false;
  return true;
}

int register_budget(int softmax, int correction, int other) { return 2 * softmax + correction + other; }

// ---- 4. split P ----------------------------------------------------------------------------------
int p_early_columns(int n) { return 32 * ((3 * n / 4) / 32); }

// ---- 5. issue order --------------------------------------------------------------------------------
std::vector<Event> issue_order(int blocks) {
  std::vector<Event> e;
  // startup: both score tiles before the K/V loop
  e.push_back({Op::kWaitK, -1, 0});
  for (int s = 0; s < 2; ++s) {
    e.push_back({Op::kWaitQ, s, -1});
    e.push_back({Op::kIssueQK, s, 0});
    e.push_back({Op::kPublishS, s, 0});
  }
  // PV of block j-1 followed by the QK of block j into the same (now dead) S/P slot
  auto pv = [&](int s, int j) {
    e.push_back({Op::kWaitPEarly, s, j});
    e.push_back({Op::kWaitORescaled, s, j});
    e.push_back({Op::kWaitV, -1, j});
    e.push_back({Op::kIssuePV, s, j});
    e.push_back({Op::kWaitPFinal, s, j});
    e.push_back({Op::kCompletePV, s, j});
  };
  for (int j = 1; j < blocks; ++j)
    for (int s = 0; s < 2; ++s) {
      pv(s, j - 1);
      e.push_back({Op::kWaitK, -1, j});
      e.push_back({Op::kIssueQK, s, j});
      e.push_back({Op::kPublishS, s, j});
    }
  // drain: final PV without a QK behind it
  e.push_back({Op::kReleaseQ, -1, -1});
  for (int s = 0; s < 2; ++s) {
    pv(s, blocks - 1);
    e.push_back({Op::kPublishO, s, -1});
  }
  return e;
}

std::vector<std::string> mma_order(const std::vector<Event>& ev) {
  std::vector<std::string> out;
  for (const auto& x : ev)
    if (x.op == Op::kIssueQK || x.op == Op::kIssuePV)
      out.push_back(std::string(x.op == Op::kIssueQK ? "QK_" : "PV_") + (x.stage == 0 ? "H_" : "L_") +
                    std::to_string(x.block));
  return out;
}

FwdError check_order(const std::vector<Event>& ev, int blocks) {
  using Grid = std::vector<std::vector<char>>;
  auto grid = [&] { return Grid(2, std::vector<char>(static_cast<size_t>(blocks), 0)); };
  Grid s_pub = grid(), p_early = grid(), o_resc = grid(), p_final = grid(), pv_issued = grid(),
       pv_done = grid();
  std::vector<char> k_ready(static_cast<size_t>(blocks), 0), v_ready(k_ready);
  bool q_ready[2] = {false, false}, q_released[2] = {false, false}, o_pub[2] = {false, false};

  for (const auto& x : ev) {
    const size_t s = static_cast<size_t>(x.stage < 0 ? 0 : x.stage);
    const size_t j = static_cast<size_t>(x.block < 0 ? 0 : x.block);
    switch (x.op) {
      case Op::kWaitQ: q_ready[s] = true; break;
      case Op::kWaitK: k_ready[j] = 1; break;
      case Op::kWaitV: v_ready[j] = 1; break;
      case Op::kIssueQK:
        if (q_released[s]) return FwdError::kQReleasedEarly;
        if (!q_ready[s]) return FwdError::kQkBeforeQ;
        if (!k_ready[j]) return FwdError::kQkBeforeK;
        // S_i / P_i alias: the next score may land only after PV consumed P_i completely.
        if (j > 0 && !pv_done[s][j - 1]) return FwdError::kSOverwriteWhileLive;
        break;
      case Op::kPublishS: s_pub[s][j] = 1; break;
      case Op::kWaitPEarly: p_early[s][j] = 1; break;
      case Op::kWaitORescaled: o_resc[s][j] = 1; break;
      case Op::kIssuePV:
        if (!s_pub[s][j]) return FwdError::kPvBeforeS;
        if (!p_early[s][j]) return FwdError::kPvBeforePEarly;
        if (!o_resc[s][j]) return FwdError::kPvBeforeCorrection;
        if (!v_ready[j]) return FwdError::kPvBeforeV;
        pv_issued[s][j] = 1;
        break;
      case Op::kWaitPFinal: p_final[s][j] = 1; break;
      case Op::kCompletePV:
        if (!pv_issued[s][j] || !p_final[s][j]) return FwdError::kPvCompleteBeforePFinal;
        pv_done[s][j] = 1;
        break;
      case Op::kPublishO: o_pub[s] = true; break;
      case Op::kReleaseQ:
        if (x.stage < 0) q_released[0] = q_released[1] = true;
        else q_released[s] = true;
        break;
    }
  }
  for (size_t s = 0; s < 2; ++s) {
    if (!o_pub[s]) return FwdError::kMissingDrain;
    for (size_t j = 0; j < static_cast<size_t>(blocks); ++j)
      if (!pv_done[s][j]) return FwdError::kMissingDrain;
  }
  return FwdError::kOk;
}

const char* fwd_error_name(FwdError e) {
  switch (e) {
    case FwdError::kOk: return "ok";
    case FwdError::kQkBeforeQ: return "QK issued before Q landed";
    case FwdError::kQkBeforeK: return "QK issued before K landed";
    case FwdError::kSOverwriteWhileLive: return "S overwritten while aliased P is live";
    case FwdError::kPvBeforeS: return "PV issued before S was published";
    case FwdError::kPvBeforePEarly: return "PV issued before the early P signal";
    case FwdError::kPvBeforeCorrection: return "PV issued before correction released O";
    case FwdError::kPvBeforeV: return "PV issued before V landed";
    case FwdError::kPvCompleteBeforePFinal: return "PV completed without the final P fraction";
    case FwdError::kMissingDrain: return "drain incomplete";
    case FwdError::kQReleasedEarly: return "Q released before its last QK";
    case FwdError::kExpOverlap: return "H and L exponential sections overlap";
    case FwdError::kBarrierRoles: return "hand-off barrier of the wrong roles";
    case FwdError::kBarrierCount: return "barrier arrival count is not one per producing agent";
  }
  return "?";
}

const std::vector<Mutation>& order_mutations() {
  static const std::vector<Mutation> m = {
      {"issue PV before correction releases O", FwdError::kPvBeforeCorrection},
      {"overwrite S after the early P signal", FwdError::kSOverwriteWhileLive},
      {"complete PV on the 75% signal", FwdError::kPvCompleteBeforePFinal},
      {"issue PV before the early P signal", FwdError::kPvBeforePEarly},
      {"issue PV before V lands", FwdError::kPvBeforeV},
      {"issue QK before K lands", FwdError::kQkBeforeK},
      {"release Q after startup", FwdError::kQReleasedEarly},
      {"skip the drain PV of L", FwdError::kMissingDrain},
  };
  return m;
}

std::vector<Event> mutated_order(size_t i, int blocks) {
  std::vector<Event> e = issue_order(blocks);
  auto find = [&](Event x) {
    return static_cast<long>(std::find(e.begin(), e.end(), x) - e.begin());
  };
  auto erase = [&](Event x) {
    long k = find(x);
    if (k < static_cast<long>(e.size())) e.erase(e.begin() + k);
  };
  switch (i) {
    case 0: erase({Op::kWaitORescaled, 0, 0}); break;
    case 1: {  // move H's PV-final wait and completion behind the next QK into the same slot
      erase({Op::kWaitPFinal, 0, 0});
      erase({Op::kCompletePV, 0, 0});
      long k = find({Op::kIssueQK, 0, 1});
      e.insert(e.begin() + k + 1, {{Op::kWaitPFinal, 0, 0}, {Op::kCompletePV, 0, 0}});
      break;
    }
    case 2: erase({Op::kWaitPFinal, 0, 0}); break;
    case 3: erase({Op::kWaitPEarly, 0, 0}); break;
    case 4: erase({Op::kWaitV, -1, 0}); break;  // the first V(0) wait (H's)
    case 5:
      while (find({Op::kWaitK, -1, 1}) < static_cast<long>(e.size())) erase({Op::kWaitK, -1, 1});
      break;
    case 6: {
      erase({Op::kReleaseQ, -1, -1});
      long k = find({Op::kPublishS, 1, 0});
      e.insert(e.begin() + k + 1, Event{Op::kReleaseQ, -1, -1});
      break;
    }
    case 7: {
      long k = find({Op::kWaitPEarly, 1, blocks - 1});
      e.erase(e.begin() + k, e.end());
      break;
    }
  }
  return e;
}

// ---- 5b. the kernel's walk and its barrier plan ---------------------------------------------------------
namespace {
// fa4::mma_tile_schedule's visitor, writing the events the walk implies.
struct EventWriter {
  int blocks;
  Op drop;
  std::vector<Event> ev;
  void add(Op op, int stage, int block) {
    if (op != drop) ev.push_back({op, stage, block});
  }
  void wait_q(int i) { add(Op::kWaitQ, i, -1); }
  void wait_kv(bool is_v, int j) { add(is_v ? Op::kWaitV : Op::kWaitK, -1, j); }
  void wait_p_ready(int i, int j) { add(Op::kWaitPEarly, i, j); }  // unsplit P: the only P signal
  void wait_o_rescaled(int i, int j) { add(Op::kWaitORescaled, i, j); }
  void wait_s_free(int i, int j) {
    if (j > 0) add(Op::kCompletePV, i, j - 1);  // the PV that read P_i, before S_i is overwritten
  }
  void issue_qk(int i, int j) { add(Op::kIssueQK, i, j); }
  void issue_pv(int i, int j) {
    add(Op::kIssuePV, i, j);
    add(Op::kWaitPFinal, i, j);  // unsplit P: already complete when the PV was issued
  }
  void commit_s_full(int i, int j) { add(Op::kPublishS, i, j); }
  void commit_o_ready(int i, int j) {
    if (j == blocks - 1) {  // the tile's last PV: the correction observes its completion (o_ready)
      add(Op::kCompletePV, i, j);
      add(Op::kPublishO, i, -1);
    }
  }
  void commit_q_empty(int i) { add(Op::kReleaseQ, i, -1); }
  void release_kv(bool, int) {}
};

// The barrier behind each hand-off event of the walk, and the roles it connects (producer, consumer).
struct Edge {
  Op op;
  fa4::Bar bar;
  fa4::Role producer, consumer;
};
constexpr Edge kEdges[] = {
    {Op::kWaitQ, fa4::Bar::kQFull, fa4::Role::kLoad, fa4::Role::kMma},
    {Op::kWaitK, fa4::Bar::kKvFull, fa4::Role::kLoad, fa4::Role::kMma},
    {Op::kWaitV, fa4::Bar::kKvFull, fa4::Role::kLoad, fa4::Role::kMma},
    {Op::kPublishS, fa4::Bar::kSFull, fa4::Role::kMma, fa4::Role::kSoftmaxH},
    {Op::kWaitPEarly, fa4::Bar::kPReady, fa4::Role::kSoftmaxH, fa4::Role::kMma},
    {Op::kWaitPFinal, fa4::Bar::kPReady, fa4::Role::kSoftmaxH, fa4::Role::kMma},
    {Op::kWaitORescaled, fa4::Bar::kORescaled, fa4::Role::kCorrection, fa4::Role::kMma},
    {Op::kCompletePV, fa4::Bar::kOReady, fa4::Role::kMma, fa4::Role::kCorrection},
    {Op::kPublishO, fa4::Bar::kOReady, fa4::Role::kMma, fa4::Role::kCorrection},
    {Op::kReleaseQ, fa4::Bar::kQEmpty, fa4::Role::kMma, fa4::Role::kLoad},
};
}  // namespace

std::vector<Event> kernel_issue_order(int blocks, Op drop) {
  EventWriter w{blocks, drop, {}};
  fa4::mma_tile_schedule(blocks, w);
  return w.ev;
}

FwdError check_barrier_plan(int cta_group, int rank, const uint32_t* counts) {
  // Every event of the walk that hands something from one role to another names a barrier of the plan
  // that connects exactly those roles.
  for (const Event& e : kernel_issue_order(3)) {
    if (e.op == Op::kIssueQK || e.op == Op::kIssuePV) continue;
    const Edge* edge = nullptr;
    for (const Edge& x : kEdges)
      if (x.op == e.op) edge = &x;
    if (edge == nullptr) return FwdError::kBarrierRoles;
    const fa4::BarrierSpec s = fa4::barrier_spec(edge->bar);
    if (s.producer != edge->producer || s.consumer != edge->consumer) return FwdError::kBarrierRoles;
  }
  // Arrival counts: one per producing agent. The agents of each signal kind, from the role table: a
  // TMA phase is one expect_tx arrival (plus, on a pair's leader, the peer's relay); a commit, one
  // (multicast: one in each CTA); per warp, every warp of the producing role (the tile readers: every
  // warp of the multi-warp roles and each single-thread role); per thread, one.
  for (int b = 0; b < fa4::kBarCount; ++b) {
    const fa4::Bar bar = static_cast<fa4::Bar>(b);
    const fa4::BarrierSpec s = fa4::barrier_spec(bar);
    const uint32_t pair = (cta_group == 2 && rank == 0 && s.pair_to_leader) ? 2u : 1u;
    uint32_t want = 1;
    switch (s.signal) {
      case fa4::Signal::kTmaBytes: want = pair; break;
      case fa4::Signal::kCommit:
      case fa4::Signal::kPerThread: want = 1; break;
      case fa4::Signal::kPerWarp: {
        uint32_t agents = 0;
        if (s.producer == fa4::Role::kCount) {  // every role that reads tiles
          for (int r = 0; r < fa4::kRoleCount; ++r) {
            const fa4::Role role = static_cast<fa4::Role>(r);
            if (role == fa4::Role::kScheduler) continue;
            const int warps = fa4::role_warps(role);
            agents += warps > 1 ? static_cast<uint32_t>(warps) : 1u;
          }
        } else {
          agents = static_cast<uint32_t>(fa4::role_warps(s.producer));
        }
        want = agents * pair;
        break;
      }
    }
    const uint32_t have = counts ? counts[b] : fa4::arrival_count(bar, cta_group, rank);
    if (have != want) return FwdError::kBarrierCount;
  }
  return FwdError::kOk;
}

// ---- 6. H/L exponential critical sections -------------------------------------------------------
std::vector<ExpSection> paper_exp_sections(int blocks) {
  const double t = ledger(128, 128, 128).t_exp;  // 1024 cycles per 128x128 score tile
  std::vector<ExpSection> v;
  for (int j = 0; j < blocks; ++j) {
    v.push_back({0, j, 2 * t * j, 2 * t * j + t});
    v.push_back({1, j, 2 * t * j + t, 2 * t * (j + 1)});
  }
  return v;
}

FwdError check_exp_sections(const std::vector<ExpSection>& s) {
  for (const auto& a : s)
    for (const auto& b : s)
      if (a.stage == 0 && b.stage == 1 && a.begin < b.end && b.begin < a.end)
        return FwdError::kExpOverlap;
  return FwdError::kOk;
}


// ---- 7. evidence ----------------------------------------------------------------------------------------
const char* evidence_error_name(EvidenceError e) {
  switch (e) {
    case EvidenceError::kOk: return "ok";
    case EvidenceError::kSumIsNoOverlap: return "sum_is_no_overlap";
    case EvidenceError::kModelCalledMeasured: return "model_called_measured";
    case EvidenceError::kWorkRowsCollapsed: return "work_rows_collapsed";
    case EvidenceError::kTargetNotCompiled: return "target_not_compiled";
    case EvidenceError::kOrderNotTimeline: return "order_not_timeline";
  }
  return "?";
}

EvidenceError check_runtime_claim(const Ledger& l, const RuntimeClaim& c) {
  if (c.measured)
    for (double modelled : {l.t_mma, l.t_smem, l.t_exp, l.lower_bound(), l.serial()})
      if (c.cycles == modelled) return EvidenceError::kModelCalledMeasured;
  // Overlap means at least two terms run at once, so an overlapped time lies below their sum.
  if (c.overlapped && c.cycles >= l.serial()) return EvidenceError::kSumIsNoOverlap;
  return EvidenceError::kOk;
}

int work_group_rows(int q_stage, int cta_group) { return q_stage * cta_group * fa4::kStageRows; }

EvidenceError check_work_group_rows(int claimed_rows, int q_stage, int cta_group) {
  return claimed_rows == work_group_rows(q_stage, cta_group) ? EvidenceError::kOk : EvidenceError::kWorkRowsCollapsed;
}

CompiledRegs compiled_regs(const std::string& text) {
  CompiledRegs c;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.rfind("# resources: ", 0) == 0) {
      const auto usage = sass::parse_resource_usage("Function k:\n" + line.substr(13) + "\n");
      if (usage.count("k")) c.launch_regs = usage.at("k").get("REG");
    }
    const size_t op = line.find("USETMAXREG.");
    if (op != std::string::npos) {  // "USETMAXREG.TRY_ALLOC.CTAPOOL UP, 0xc0" / "...DEALLOC.CTAPOOL 0x50"
      const size_t hex = line.find("0x", op);
      if (hex != std::string::npos) c.setmaxnreg.push_back(static_cast<int>(std::stol(line.substr(hex), nullptr, 16)));
    }
  }
  return c;
}

EvidenceError check_compiled_register_claim(int claimed, const CompiledRegs& c) {
  if (claimed == c.launch_regs) return EvidenceError::kOk;
  return EvidenceError::kTargetNotCompiled;
}

EvidenceError check_order_as_timeline(int blocks, std::vector<double>* bounds) {
  const std::vector<Event> order = kernel_issue_order(blocks);  // takes no rate: nothing in it is a time
  std::vector<double> b;
  for (const SensitivityRow& r : sensitivity_rows()) {
    // The same walk, `blocks` K/V blocks of both query stages, under this row's rates.
    const Ledger l = ledger(128 * 2, 128 * blocks, 128, 2, r.rates);
    b.push_back(l.lower_bound());
  }
  if (bounds) *bounds = b;
  const bool one_time = std::all_of(b.begin(), b.end(), [&](double x) { return x == b.front(); });
  return !order.empty() && !one_time ? EvidenceError::kOrderNotTimeline : EvidenceError::kOk;
}

// ---- 8. ledger tables ------------------------------------------------------------------------------
namespace {
void print_resources(std::FILE* o) {
  std::fprintf(o, "columns: Tile = query rows M, keys N, head dim d; I_QK / I_PV = MMA instructions per GEMM\n"
                  "         (the instruction grid, partial instructions rounded up); MMA, SMEM, exp = cycles per\n"
                  "         tile at the paper's B200 per-SM rates; lower bnd = the largest of the three, in\n"
                  "         cycles (a bound, not a runtime)\n");
  std::fprintf(o, "%-16s %6s %6s %6s %6s %6s  %-10s %s\n", "Tile (M,N,d)", "I_QK", "I_PV", "MMA",
               "SMEM", "exp", "lower bnd", "Largest modeled term");
  const int64_t tiles[][3] = {{128, 128, 128}, {256, 128, 128}, {192, 96, 160}};
  for (const auto& t : tiles) {
    const Ledger l = ledger(t[0], t[1], t[2]);
    char name[32];
    std::snprintf(name, sizeof name, "(%lld,%lld,%lld)", (long long)t[0], (long long)t[1],
                  (long long)t[2]);
    std::fprintf(o, "%-16s %6lld %6lld %6.0f %6.0f %6.0f  %-10.0f %s\n", name, (long long)l.i_qk,
                 (long long)l.i_pv, l.t_mma, l.t_smem, l.t_exp, l.lower_bound(), l.largest().c_str());
  }
  const Ledger c = ledger(128, 128, 128);
  std::fprintf(o, "128^3 no-overlap subtotal: %.0f cycles (neither it nor the max is a runtime)\n",
               c.serial());
  const Ledger r = ledger(192, 96, 160, 2, {}, false);
  std::fprintf(o, "(192,96,160) with ceilings dropped: SMEM %.0f -> largest term '%s' (wrong)\n",
               r.t_smem, r.largest().c_str());
  std::fprintf(o, "d* = R_MMA / (4 R_exp) = 8192 / 64 = %.0f;  T_SMEM/T_MMA (BF16, divisible) = %.2f\n",
               d_star(), c.t_smem / c.t_mma);
}

void print_sensitivity(std::FILE* o) {
  std::fprintf(o, "columns: MMA, SMEM, exp = cycles per 128^3 tile after the mutation of one rate; largest term =\n"
                  "         the resource that bounds the tile\n");
  std::fprintf(o, "%-36s %6s %6s %6s  %s\n", "Synthetic rate mutation (128^3)", "MMA", "SMEM", "exp",
               "Largest term");
  for (const auto& row : sensitivity_rows()) {
    const Ledger l = ledger(128, 128, 128, 2, row.rates);
    std::fprintf(o, "%-36s %6.0f %6.0f %6.0f  %s\n", row.mutation, l.t_mma, l.t_smem, l.t_exp,
                 l.largest().c_str());
  }
}

void print_roles(std::FILE* o) {
  std::fprintf(o, "setmaxnreg target = 32-bit registers per thread the role's warpgroup asks for (source targets)\n");
  std::fprintf(o, "%-10s %-24s %s\n", "Warp IDs", "Source role", "setmaxnreg target");
  for (const auto& r : roles()) {
    char ids[16];
    if (r.first_warp == r.last_warp) std::snprintf(ids, sizeof ids, "%d", r.first_warp);
    else std::snprintf(ids, sizeof ids, "%d..%d", r.first_warp, r.last_warp);
    std::fprintf(o, "%-10s %-24s %d\n", ids, r.name, r.setmaxnreg);
  }
  std::fprintf(o, "partition of warps 0..15: %s\n", roles_partition_16(roles()) ? "yes" : "NO");
  std::fprintf(o, "budget: 2 * 192 + 80 + 48 = %d (source targets, not compiled counts)\n",
               register_budget(192, 80, 48));
  std::fprintf(o, "split P: C_P,early = 32 * floor((3*128/4)/32) = %d of 128 columns (%d%%)\n",
               p_early_columns(128), p_early_columns(128) * 100 / 128);
  std::fprintf(o, "\ncolumns: q_stage = query tiles in flight per CTA; g = CTAs per cluster (CTA-group); TMEM\n"
                  "         columns = used of the 512 per CTA (2 S/P buffers of N = 128, plus q_stage O buffers\n"
                  "         of d_v = 128); Softmax WGs = softmax warpgroups per CTA\n");
  std::fprintf(o, "%-18s %-26s %-14s %s\n", "Source config", "Query rows / work group",
               "TMEM columns", "Softmax WGs");
  std::fprintf(o, "%-18s %-26d %-14d %d\n", "q_stage=1, g=1", 1 * 1 * 128, 2 * 128 + 128, 1);
  std::fprintf(o, "%-18s %-26d %-14d %d\n", "q_stage=2, g=1", 2 * 1 * 128, 2 * 128 + 2 * 128, 2);
  std::fprintf(o, "%-18s %-26s %-14s %s\n", "q_stage=2, g=2", "512 across the CTA pair",
               "2 x 512 views", "2 per CTA");
}

void print_order(std::FILE* o) {
  const int blocks = 2;
  const auto ev = issue_order(blocks);
  std::fprintf(o, "MMA issue order, q_stage=2, %d K/V blocks:", blocks);
  for (const auto& s : mma_order(ev)) std::fprintf(o, " %s", s.c_str());
  std::fprintf(o, "\nvalid order: %s\n", fwd_error_name(check_order(ev, blocks)));
  std::fprintf(o, "H/L exponential sections (paper schedule): %s\n\n",
               check_exp_sections(paper_exp_sections(blocks)) == FwdError::kOk ? "never overlap"
                                                                               : "OVERLAP");
  std::fprintf(o, "%-40s %s\n", "Schedule mutation", "Rejected as");
  for (size_t i = 0; i < order_mutations().size(); ++i)
    std::fprintf(o, "%-40s %s\n", order_mutations()[i].name,
                 fwd_error_name(check_order(mutated_order(i, blocks), blocks)));
  std::fprintf(o, "%-40s %s\n", "kernel walk (fa4::mma_tile_schedule)",
               fwd_error_name(check_order(kernel_issue_order(blocks), blocks)));
  std::fprintf(o, "%-40s %s / %s / %s\n", "kernel barrier plan (1-CTA / leader / peer)",
               fwd_error_name(check_barrier_plan(1, 0)), fwd_error_name(check_barrier_plan(2, 0)),
               fwd_error_name(check_barrier_plan(2, 1)));
  auto ov = paper_exp_sections(blocks);
  for (auto& x : ov)
    if (x.stage == 1) { x.begin -= 512; x.end -= 512; }
  std::fprintf(o, "%-40s %s\n", "overlap H and L exponential sections",
               fwd_error_name(check_exp_sections(ov)));
}

// The five evidence rows: each claim (* = the mutation) and the correct statement under it.
void print_evidence(std::FILE* o) {
  std::fprintf(o, "columns: claim = what a description says of a number (* = the mutation; the line under it =\n"
                  "         the correct statement); value = the number, computed here (cycles per tile at the\n"
                  "         paper's B200 rates; rows; 32-bit registers per thread); verdict = the check's named\n"
                  "         reason, ok when the claim holds\n");
  auto row = [&](bool mutation, const char* claim, const std::string& value, EvidenceError e) {
    print_claim_row(o, mutation, 56, claim, 22, value, evidence_error_name(e));
  };
  auto num = [](double x) { char b[32]; std::snprintf(b, sizeof b, "%.0f", x); return std::string(b); };
  const Ledger l = ledger(128, 128, 128);
  row(true, "MMA + SMEM + exp is the optimized runtime (128^3)", num(l.serial()) + " cycles",
      check_runtime_claim(l, {l.serial(), true, false}));
  row(false, "MMA + SMEM + exp is the no-overlap subtotal", num(l.serial()) + " cycles",
      check_runtime_claim(l, {l.serial(), false, false}));
  row(true, "max(MMA, SMEM, exp) is the measured runtime", num(l.lower_bound()) + " cycles",
      check_runtime_claim(l, {l.lower_bound(), true, true}));
  row(false, "max(MMA, SMEM, exp) is a lower bound on the runtime", num(l.lower_bound()) + " cycles",
      check_runtime_claim(l, {l.lower_bound(), true, false}));
  row(true, "paper M = 256 rows is the q_stage=2, g=2 work group", "256 rows",
      check_work_group_rows(256, 2, 2));
  row(false, "q_stage=2, g=2 work group: fa4::tile_rows(2)", std::to_string(fa4::tile_rows(2)) + " rows",
      check_work_group_rows(fa4::tile_rows(2), 2, 2));
  row(false, "paper M = 256 rows is the q_stage=2, g=1 work group", "256 rows", check_work_group_rows(256, 2, 1));
  // The compiled d128 kernel's golden listing (sm_100a; never executed: no Blackwell GPU here).
  const std::string golden = std::string(FLASHPTX_ROOT) + "/sass_golden/sm_100a/fa4_fwd_sm100_bf16_d128.sass";
  std::string text;
  const int softmax = fa4::role_regs(fa4::Role::kSoftmaxH);
  if (sass::read_file(golden, &text)) {
    const CompiledRegs c = compiled_regs(text);
    row(true, "setmaxnreg target is the compiled count (softmax)", std::to_string(softmax) + " registers",
        check_compiled_register_claim(softmax, c));
    row(false, "ptxas's REG (allocated at launch) is the compiled count", std::to_string(c.launch_regs) + " registers",
        check_compiled_register_claim(static_cast<int>(c.launch_regs), c));
    std::string ops;
    for (int v : c.setmaxnreg) {
      if (!ops.empty()) ops += ' ';
      ops += std::to_string(v);
    }
    std::fprintf(o, "    fa4_fwd_sm100_bf16_d128.sass: REG:%ld at launch x 512 threads = %ld; USETMAXREG operands %s\n"
                    "    (the role targets, requested at run time once the other roles release theirs)\n",
                 c.launch_regs, c.launch_regs * 512, ops.c_str());
  } else {
    std::fprintf(o, "    (the setmaxnreg rows read %s, which is not readable here)\n", golden.c_str());
  }
  std::vector<double> bounds;
  const EvidenceError e = check_order_as_timeline(2, &bounds);
  std::string times;
  for (double b : bounds) {
    if (!times.empty()) times += '/';
    times += num(b);
  }
  const auto mm = std::minmax_element(bounds.begin(), bounds.end());
  row(true, "kernel_issue_order (2 blocks) is a timeline", num(*mm.first) + ".." + num(*mm.second) + " cycles", e);
  std::fprintf(o, "    one order, %zu events, under the %zu rate sets of the sensitivity table: lower bounds %s cycles;\n"
                  "    as an order it is what it says: check_order %s\n",
               kernel_issue_order(2).size(), bounds.size(), times.c_str(),
               fwd_error_name(check_order(kernel_issue_order(2), 2)));
}
}  // namespace

FLASHPTX_LEDGER("0x08", "FA4 forward resource ledger with instruction ceilings; d*", print_resources);
FLASHPTX_LEDGER("0x08", "Sensitivity: synthetic rate mutations at 128^3", print_sensitivity);
FLASHPTX_LEDGER("0x08", "Beta23 warp roles, register targets, split P, q_stage coordinates", print_roles);
FLASHPTX_LEDGER("0x08", "Startup/steady/drain MMA order, handoff edges, mutations", print_order);
FLASHPTX_LEDGER("0x08", "Evidence rows: what each number is, and the claims that mislabel it", print_evidence);

}  // namespace flashptx::models::fa4fwd
