// The TMEM and CTA-group oracle (docs/PROTOCOLS.md, "TMEM planning"; PTX ISA "Tensorcore 5th
// Generation Family Instructions").
//
// Read top to bottom:
//   1. check_trace(): one state machine for the tcgen05 contracts. Each rule names the invariant it
//      certifies and the TmemError it reports:
//        - allocation size / monotonicity / permit (TmemAllocator, shared with the kernel)
//        - one CTA-group mode per kernel
//        - group 2 needs an active peer, and a warp of each CTA for alloc/relinquish/dealloc
//        - issue -> commit -> observe -> fence -> ld: a load before the fence is "unfinished"
//        - a warp loads only its 32-lane band
//        - group-2 dealloc only after the peer quiesced; every column freed before exit
//   2. the positive traces (group 1 and group 2) that must pass;
//   3. the eleven negative fixtures, each with the failure it must be detected as;
//   4. the S/P/O map and its live-interval alias audit, and the CTA-group contract;
//   5. the ledger tables.
#include "tools/models/tmem.h"

#include <cstdio>

#include "tools/models/ledger.h"

namespace flashptx::models::tmem07 {

using namespace flashptx::tmem;

// ---- 1. the event checker --------------------------------------------------------------------
CheckResult check_trace(const std::vector<Event>& trace) {
  TmemAllocator alloc;
  int mode = 0;               // kernel-wide CTA-group mode: 0 until the first tcgen05 operation
  bool peer_active = false;   // the pair's peer CTA is resident
  bool peer_quiesced = true;  // no paired access outstanding on the peer
  // Completion chain of the most recent MMA result.
  enum { kNone, kIssued, kCommitted, kObserved, kFenced } result = kNone;

  for (size_t i = 0; i < trace.size(); ++i) {
    const Event& e = trace[i];
    const int at = static_cast<int>(i);
    const bool tcgen05 = e.op == Op::kAlloc || e.op == Op::kRelinquish || e.op == Op::kDealloc ||
                         e.op == Op::kMma || e.op == Op::kCommit || e.op == Op::kLd;
    if (tcgen05) {
      // Invariant: all tcgen05 operations of one kernel use the same CTA-group mode.
      if (mode == 0) mode = e.cta_group;
      else if (mode != e.cta_group) return {TmemError::kCtaGroupMismatch, at};
      // Invariant: a paired operation needs its peer resident.
      if (e.cta_group == 2 && !peer_active) return {TmemError::kPeerNotActive, at};
    }
    const bool collective = e.op == Op::kAlloc || e.op == Op::kRelinquish || e.op == Op::kDealloc;
    // Invariant: group-2 alloc/relinquish/dealloc take one warp from each CTA of the pair.
    if (collective && e.participants != e.cta_group) return {TmemError::kCollectiveParticipants, at};

    switch (e.op) {
      case Op::kAlloc: {
        uint32_t base = 0;
        TmemError r = alloc.allocate(e.cols, &base);
        if (r != TmemError::kOk) return {r, at};
        break;
      }
      case Op::kRelinquish: alloc.relinquish(); break;
      case Op::kDealloc: {
        // Invariant: the pair's TMEM may be freed only after the peer stopped touching it.
        if (e.cta_group == 2 && !peer_quiesced) return {TmemError::kPeerNotQuiesced, at};
        TmemError r = alloc.deallocate(e.base, e.cols);
        if (r != TmemError::kOk) return {r, at};
        break;
      }
      case Op::kMma:
        result = kIssued;
        if (e.cta_group == 2) peer_quiesced = false;  // the paired MMA touches the peer's view
        break;
      case Op::kCommit: if (result == kIssued) result = kCommitted; break;
      case Op::kWaitMbar: if (result == kCommitted) result = kObserved; break;
      // A fence before the completion was observed publishes nothing.
      case Op::kFenceAfterSync: if (result == kObserved) result = kFenced; break;
      case Op::kLd:
        // Invariant: a warp touches only lanes [32*(w%4), +32).
        if (e.lanes.begin >= e.lanes.end || !warp_owns_lane(e.warp, e.lanes.begin) ||
            !warp_owns_lane(e.warp, e.lanes.end - 1))
          return {TmemError::kLaneOwnership, at};
        // Invariant: issue -> commit -> observe -> fence before any consumer load.
        if (result != kFenced) return {TmemError::kUnfinishedConsume, at};
        break;
      case Op::kWaitLd: break;
      case Op::kPeerActive: peer_active = true; break;
      case Op::kPeerQuiesce: peer_quiesced = true; break;
      case Op::kExit: {
        TmemError r = alloc.at_exit();
        if (r != TmemError::kOk) return {r, at};
        break;
      }
    }
  }
  return {};
}

// ---- 2. positive traces ------------------------------------------------------------------------
std::vector<Event> positive_trace(int g) {
  const uint8_t cg = static_cast<uint8_t>(g);
  std::vector<Event> t;
  if (g == 2) t.push_back({Op::kPeerActive});
  t.push_back({Op::kAlloc, cg, 512, 0, cg});
  t.push_back({Op::kMma, cg});
  t.push_back({Op::kCommit, cg});
  t.push_back({Op::kWaitMbar});
  t.push_back({Op::kFenceAfterSync});
  for (uint32_t w = 0; w < 4; ++w) {
    Event ld{Op::kLd, cg};
    ld.warp = w;
    ld.lanes = warp_lane_band(w);
    t.push_back(ld);
  }
  t.push_back({Op::kWaitLd});
  t.push_back({Op::kRelinquish, cg, 0, 0, cg});
  if (g == 2) t.push_back({Op::kPeerQuiesce});
  t.push_back({Op::kDealloc, cg, 512, 0, cg});
  t.push_back({Op::kExit});
  return t;
}

// ---- 3. the eleven negative fixtures -----------------------------------------------------------
const std::vector<Fixture>& negative_fixtures() {
  static const std::vector<Fixture> f = {
      {"allocate 96 columns", TmemError::kIllegalSize},
      {"allocate 64 then 128 columns", TmemError::kSizeIncreases},
      {"allocate after relinquishing", TmemError::kPermitClosed},
      {"use two Q stages with algebraic d_v=192", TmemError::kMapTooWide},
      {"write P while aliased S is still live", TmemError::kLiveAliasOverlap},
      {"mix CTA-group 1 and 2 operations", TmemError::kCtaGroupMismatch},
      {"launch group 2 without active peer", TmemError::kPeerNotActive},
      {"allocate group 2 from one warp only", TmemError::kCollectiveParticipants},
      {"load TMEM before completion/fence", TmemError::kUnfinishedConsume},
      {"deallocate before peer quiescence", TmemError::kPeerNotQuiesced},
      {"let warp 0 load lane 64", TmemError::kLaneOwnership},
  };
  return f;
}

namespace {
// Replace the first event matching `op` in a positive trace.
std::vector<Event> mutate(int g, Op op, Event with) {
  std::vector<Event> t = positive_trace(g);
  for (auto& e : t)
    if (e.op == op) { e = with; break; }
  return t;
}
std::vector<Event> erase_first(std::vector<Event> t, Op op) {
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i].op == op) { t.erase(t.begin() + static_cast<long>(i)); break; }
  return t;
}
}  // namespace

TmemError run_fixture(size_t i) {
  switch (i) {
    case 0: return check_trace(mutate(1, Op::kAlloc, {Op::kAlloc, 1, 96, 0, 1})).error;
    case 1: {
      std::vector<Event> t = {{Op::kAlloc, 1, 64, 0, 1}, {Op::kAlloc, 1, 128, 0, 1}};
      return check_trace(t).error;
    }
    case 2: {
      std::vector<Event> t = positive_trace(1);
      // After relinquish (and even after the free), a second allocation is illegal.
      t.insert(t.end() - 1, Event{Op::kAlloc, 1, 512, 0, 1});
      return check_trace(t).error;
    }
    case 3: return Fa4FwdColumnPlan{128, 192, 2}.check();
    case 4: {
      // Mutation: P0 begins at the instant softmax starts loading S0, before the score release.
      std::vector<TmemObject> objs = fa4_fwd_objects(128, 128, 2);
      for (auto& o : objs)
        if (std::string(o.name) == "P0") o.live.begin -= 1;
      return first_illegal_alias(objs).empty() ? TmemError::kOk : TmemError::kLiveAliasOverlap;
    }
    case 5: {
      std::vector<Event> t = positive_trace(1);
      for (auto& e : t)
        if (e.op == Op::kMma) e.cta_group = 2;
      t.insert(t.begin(), Event{Op::kPeerActive});  // the peer is there: only the mode is wrong
      return check_trace(t).error;
    }
    case 6: return check_trace(erase_first(positive_trace(2), Op::kPeerActive)).error;
    case 7: return check_trace(mutate(2, Op::kAlloc, {Op::kAlloc, 2, 512, 0, 1})).error;
    case 8: return check_trace(erase_first(positive_trace(1), Op::kFenceAfterSync)).error;
    case 9: return check_trace(erase_first(positive_trace(2), Op::kPeerQuiesce)).error;
    case 10: {
      Event ld{Op::kLd, 1};
      ld.warp = 0;
      ld.lanes = Interval{64, 96};
      return check_trace(mutate(1, Op::kLd, ld)).error;
    }
  }
  return TmemError::kOk;
}

// ---- 4. the S/P/O map, its live intervals, and the CTA-group contract --------------------------
// Logical time steps of one forward K/V iteration (two Q stages H=0, L=1):
//   t0 QK_H writes S0    t1 QK_L writes S1, softmax H loads S0    t2 softmax H finishes S0
//   t3 P0 written (S0 dead), softmax L finishes S1   t4 PV_H reads P0, P1 written   t5 PV_L reads P1
// S_i is live from its MMA until its last consumer; P_i from the score release to PV completion.
std::vector<TmemObject> fa4_fwd_objects(uint32_t n, uint32_t d_v, uint32_t q_stage) {
  const Fa4FwdColumnPlan plan{n, d_v, q_stage};
  std::vector<TmemObject> v;
  static const char* const kS[] = {"S0", "S1"};
  static const char* const kP[] = {"P0", "P1"};
  static const char* const kO[] = {"O0", "O1"};
  for (uint32_t i = 0; i < 2; ++i) {
    v.push_back({kS[i], plan.s(i), Interval{i, i + 3}});
    v.push_back({kP[i], plan.p(i), Interval{i + 3, i + 5}});
  }
  for (uint32_t i = 0; i < q_stage && i < 2; ++i) v.push_back({kO[i], plan.o(i), Interval{0, 8}});
  return v;
}

std::string first_illegal_alias(const std::vector<TmemObject>& objs) {
  for (size_t i = 0; i < objs.size(); ++i)
    for (size_t j = i + 1; j < objs.size(); ++j)
      if (!legal_alias(objs[i], objs[j])) return std::string(objs[i].name) + "/" + objs[j].name;
  return "";
}

CtaGroupContract cta_group_contract(int g) {
  const uint32_t m = 128, n = 128, d = 128, b_tile = 128 * 128 * 2;  // BF16 B tile = 32 KiB
  if (g == 1) return {m, n, d, {0, 128}, {0, 128}, 1, 1, b_tile, 2 * b_tile};
  // The pair expands M; each CTA stages half of B (K/V SMEM per stage / cta_group_size).
  return {2 * m, n, d, {0, 128}, {128, 256}, 2, 1, b_tile / 2, b_tile};
}

// ---- 5. ledger tables --------------------------------------------------------------------------
namespace {
void print_capacity(std::FILE* o) {
  std::fprintf(o, "M_TMEM  = %u columns x %u lanes x %u B = %u bytes = %u KiB\n", kColumns, kLanes,
               kCellBytes, kBytes, kBytes / 1024);
  std::fprintf(o, "M_32    = %u columns x %u lanes x %u B = %u bytes = %u KiB\n", kGranuleColumns,
               kLanes, kCellBytes, kGranuleBytes, kGranuleBytes / 1024);
  std::fprintf(o, "legal allocation sizes:");
  for (uint32_t c = 1; c <= 1024; ++c)
    if (legal_alloc_columns(c)) std::fprintf(o, " %u", c);
  std::fprintf(o, "\ntaddr(lane 37, column 384) = %u -> (%u, %u)\n", taddr(37, 384),
               taddr_lane(taddr(37, 384)), taddr_column(taddr(37, 384)));
  std::fprintf(o, "(taddr packs lane in bits 31:16 and column in bits 15:0; a column is 128 lanes x 4 B)\n");
  std::fprintf(o, "\nWarp inside warpgroup  TMEM lanes it may access ([first, end), one lane = one row)\n");
  for (uint32_t w = 0; w < 4; ++w)
    std::fprintf(o, "%-22u [%u, %u)\n", w, warp_lane_band(w).begin, warp_lane_band(w).end);
}

void print_map(std::FILE* o) {
  std::fprintf(o, "N = 128 keys, d_v = 128, q_stage = 2 (two query tiles H and L in flight)\n");
  std::fprintf(o, "columns: Object = S (scores, FP32), P (probabilities, 16-bit, aliasing S's upper half),\n"
                  "         O (output accumulator, FP32), per query tile 0/1; Columns = TMEM column range\n"
                  "         [first, end); Width = columns; Live steps = [first, end) in the model's schedule\n"
                  "         steps (abstract issue order, not cycles): two objects may share columns only if\n"
                  "         their live steps do not overlap\n");
  std::fprintf(o, "%-8s %-12s %-6s %s\n", "Object", "Columns", "Width", "Live steps");
  for (const auto& x : fa4_fwd_objects(128, 128, 2))
    std::fprintf(o, "%-8s [%3u, %3u)   %-6u [%u, %u)\n", x.name, x.cols.begin, x.cols.end,
                 x.cols.width(), x.live.begin, x.live.end);
  std::fprintf(o, "alias audit: %s\n\n", first_illegal_alias(fa4_fwd_objects(128, 128, 2)).empty()
                                              ? "every overlapping pair is disjoint in time"
                                              : "ILLEGAL");
  const Fa4FwdColumnPlan probes[] = {{128, 128, 2}, {128, 192, 1}, {128, 192, 2}};
  for (const auto& p : probes)
    std::fprintf(o, "N=%u, q_stage=%u, d_v=%u -> 2*%u + %u*%u = %u columns: %s\n", p.n, p.q_stage,
                 p.d_v, p.n, p.q_stage, p.d_v, p.logical_columns(),
                 p.check() != TmemError::kOk ? "impossible"
                 : p.logical_columns() == kColumns ? "exact fit"
                                                   : "algebraically fits");
}

void print_cta_groups(std::FILE* o) {
  const CtaGroupContract a = cta_group_contract(1), b = cta_group_contract(2);
  std::fprintf(o, "%-20s %-18s %s\n", "Contract", "CTA-group 1", "CTA-group 2");
  std::fprintf(o, "%-20s %ux%ux%u        %ux%ux%u across the pair\n", "logical MMA tile", a.mma_m,
               a.mma_n, a.mma_k, b.mma_m, b.mma_n, b.mma_k);
  std::fprintf(o, "%-20s [%u, %u)           [%u, %u)\n", "CTA 0 output rows", a.cta0_rows.begin,
               a.cta0_rows.end, b.cta0_rows.begin, b.cta0_rows.end);
  std::fprintf(o, "%-20s separate tile       [%u, %u) in the paired tile\n", "CTA 1 output rows",
               b.cta1_rows.begin, b.cta1_rows.end);
  std::fprintf(o, "%-20s (%u, %u)             (%u, %u)\n", "cluster shape", a.cluster_m,
               a.cluster_n, b.cluster_m, b.cluster_n);
  std::fprintf(o, "%-20s %u KiB             %u KiB  (K/V SMEM per stage / CTA-group size)\n",
               "B staged per CTA", a.b_bytes_per_cta / 1024, b.b_bytes_per_cta / 1024);
  std::fprintf(o, "%-20s %u KiB             %u KiB  (ratio %.1f, source-derived)\n",
               "B staged by the pair", a.b_bytes_pair / 1024, b.b_bytes_pair / 1024,
               double(b.b_bytes_pair) / a.b_bytes_pair);
  std::fprintf(o, "B = the shared operand (K or V tile), 128 x 128 BF16 = %u KiB; in CTA-group 1 the two CTAs are\n"
                  "independent and each stages all of it; in CTA-group 2 each stages half. Shared-memory payload\n"
                  "only: HBM traffic and speed are not modelled\n", 128u * 128u * 2u / 1024u);
}

void print_fixtures(std::FILE* o) {
  std::fprintf(o, "positive trace cta_group::1: %s\n", tmem_error_name(check_trace(positive_trace(1)).error));
  std::fprintf(o, "positive trace cta_group::2: %s\n\n", tmem_error_name(check_trace(positive_trace(2)).error));
  std::fprintf(o, "each row: one mutation of the positive trace, and the rule the TMEM checker reports broken\n");
  std::fprintf(o, "%-44s %s\n", "Mutation", "Failure observed");
  const auto& f = negative_fixtures();
  for (size_t i = 0; i < f.size(); ++i)
    std::fprintf(o, "%-44s %s%s\n", f[i].mutation, tmem_error_name(run_fixture(i)),
                 run_fixture(i) == f[i].expected ? "" : "   <-- MISMATCH");
}
}  // namespace

FLASHPTX_LEDGER("0x07", "TMEM capacity, granule, legal sizes, address packing, lane bands", print_capacity);
FLASHPTX_LEDGER("0x07", "Beta23 S/P/O column map, live intervals, capacity equation", print_map);
FLASHPTX_LEDGER("0x07", "CTA-group 1 vs 2 contract (M=N=d=128) and B payload", print_cta_groups);
FLASHPTX_LEDGER("0x07", "TMEM oracle: positive traces and the eleven negative fixtures", print_fixtures);

}  // namespace flashptx::models::tmem07
