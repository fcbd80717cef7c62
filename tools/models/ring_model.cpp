// FA3 producer/consumer rings over shared memory: the CPU oracle (docs/PROTOCOLS.md, "Hopper
// prerequisites" and "The K/V rings"; `flashptx ledger 0x02` and `0x03`).
//
// What this file certifies, top to bottom:
//   1. The (stage, phase) coordinate of RingState<S> (src/protocol/ring.h, the object the kernel
//      runs): the producer starts one generation ahead, parity flips only on wrap (table s=2 J=5).
//   2. An event-level simulator of one producer and G consumer warpgroups over separate K and V
//      full/empty mbarrier rings. The barriers follow PTX semantics (arrival count, transaction
//      bytes, phase completion, try_wait.parity). Every shared-memory slot remembers which logical
//      payload it holds and who still reads it, so the simulator names the first violation:
//      stale read, overwrite of a live stage, release while the WGMMA still reads, release of an
//      unproduced stage, the deadlock's root cause, a dangling arrive after the producer exited.
//      Each mutation of the ring failure lab is one switch of the script builder.
//   3. Conservation A = C = W = R = J and 0 <= P - R <= s on every clean run.
//   4. The wait-for graph: produce(r) <- release(r-s) <- consume(r-s) <- produce(r-s); acyclic
//      because the ordinal strictly decreases (and cyclic if the producer were not one generation
//      ahead).
//   5. The finite-J overlap bound (T_L=300, T_C=500, J=5: 2800 cycles, 1.43x; asymptote 1.6x),
//      the shared-memory ledger (160 KiB, 128 KiB with the Q/V alias, 2+4s barriers = 80 B at s=2)
//      and the setmaxnreg ownership table (39,936 / 64,512 / 65,536).
#include "tools/models/ring_model.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "src/protocol/ring.h"
#include "tools/models/ledger.h"
#include "src/sm90/fa3_fwd_config.h"

namespace flashptx::models::ring {

const char* fault_name(Fault f) {
  switch (f) {
    case Fault::kNone: return "none";
    case Fault::kStaleRead: return "stale_read";
    case Fault::kPayloadMismatch: return "payload_mismatch";
    case Fault::kOverwriteLive: return "overwrite_live_stage";
    case Fault::kReleaseInFlight: return "release_before_wgmma_complete";
    case Fault::kReleaseUnproduced: return "release_of_unproduced_stage";
    case Fault::kMissingCommit: return "missing_commit";
    case Fault::kMissingVRelease: return "missing_v_release";
    case Fault::kMissingKRelease: return "missing_k_release";
    case Fault::kAdvanceWithoutRelease: return "advance_without_release";
    case Fault::kDanglingArrive: return "dangling_arrive_after_producer_exit";
    case Fault::kDeadlock: return "deadlock";
    case Fault::kCountMismatch: return "count_mismatch";
    case Fault::kFalseFullGeneration: return "false_full_generation";
  }
  return "?";
}

// ===================================================================================================
// 1. Coordinates. consumer raw phase = e_r (the source's quotient), producer raw phase = e_r + 1
//    (the producer's z starts at s); the semantic parity is the raw phase mod 2, which is exactly what
//    RingState keeps.
// ===================================================================================================
template <int S>
static std::vector<CoordRow> coordinate_table_t(int J) {
  std::vector<CoordRow> rows;
  auto cons = RingState<S>::consumer_start();
  auto prod = RingState<S>::producer_start();
  for (int r = 0; r < J; ++r) {
    CoordRow row;
    row.r = r;
    row.n = J - 1 - r;
    row.stage = static_cast<int>(cons.stage);
    row.consumer_raw = r / S;
    row.consumer_parity = static_cast<int>(cons.phase);
    row.producer_raw = r / S + 1;
    row.producer_parity = static_cast<int>(prod.phase);
    rows.push_back(row);
    cons.advance();
    prod.advance();
  }
  return rows;
}

std::vector<CoordRow> coordinate_table(int stages, int J) {
  switch (stages) {
    case 1: return coordinate_table_t<1>(J);
    case 2: return coordinate_table_t<2>(J);
    case 3: return coordinate_table_t<3>(J);
    case 4: return coordinate_table_t<4>(J);
  }
  return {};
}

bool aba_wait_passes(int stages, bool use_parity) {
  MBarrier full;
  full.init(1);
  full.arrive_expect_tx(32768);  // generation 0 of stage 0: committed and landed
  full.complete_tx(32768);
  const uint32_t parity = 1u;    // consumer parity of ordinal r = s: stage 0 wrapped once, generation 1
  (void)stages;
  if (!use_parity) return full.completed >= 1;    // "stage 0 is full": generation 0 still counts
  return full.try_wait_parity(parity);
}

// ===================================================================================================
// 2. The event-level simulator.
//
// Agents execute scripts of ops, one op per tick each (producer first). A TMA copy lands tma_latency
// ticks after issue: then the full barrier's transaction count drops to zero and its phase
// completes. A WGMMA read of a slot begins at Issue and ends at the consumer's next WaitGroup.
// ===================================================================================================
namespace {

enum Ring { kK = 0, kV = 1 };
const char* ring_name(int x) { return x == kK ? "K" : "V"; }

enum class Op {
  kAcquire,      // producer: wait empty[ring][stage] with the producer phase
  kLoad,         // producer: arrive_expect_tx(full) and issue the TMA copy of block (tile, r)
  kAdvance,      // either agent: RingState::advance()
  kTail,         // producer: one acquire of producer_tail on V, over a copy of the state
  kReset,        // mutation: re-create the ring state
  kWait,         // consumer: wait full[ring][stage] with the consumer phase
  kIssue,        // consumer: WGMMA starts reading the slot
  kWaitGroup,    // consumer: wgmma.wait_group 0, every read of this consumer ends
  kRelease,      // consumer: arrive on empty[ring][stage]
  kExit,
};

struct Step {
  Op op;
  int ring = kK;
  int tile = 0, r = 0;
  int64_t q = 0;  // the logical ordinal this op means (count of blocks before it, all tiles)
};

struct Slot {
  bool valid = false;     // holds a landed payload
  bool landing = false;   // a TMA into it is in flight
  int tile = -1, r = -1;
  int64_t q = -1;
  int64_t landing_q = -1; // ordinal of the TMA in flight, if any
  int released = 0;       // consumers that released the current payload
  int readers = 0;        // WGMMA reads in flight
};

struct Tma { int ring, stage; int64_t land; int tile, r; int64_t q; };

template <int S>
struct Agent {
  std::vector<Step> script;
  size_t pc = 0;
  RingState<S> st;
  RingState<S> tail_st;
  bool tail_started = false;
  bool done = false;
  int64_t ordinal = 0;               // logical ordinal of the current coordinate
  std::vector<std::pair<int, int>> reading;  // (ring, stage) reads in flight
  std::map<int64_t, int> released;   // ordinal -> bitmask of rings released
  std::map<int64_t, int> waited;     // ordinal -> bitmask of rings whose full wait passed
};

template <int S>
class Sim {
 public:
  explicit Sim(const Config& c) : cfg(c) {}

  Result run() {
    for (int x = 0; x < 2; ++x)
      for (int i = 0; i < S; ++i) { full[x][i].init(1); empty[x][i].init(cfg.consumers); }
    build_scripts();
    const int64_t max_ticks = 1000000;
    for (tick = 0; tick < max_ticks; ++tick) {
      land_copies();
      bool progressed = false;
      if (!prod.done) progressed |= step_producer();
      if (res.fault != Fault::kNone) return finish();
      for (auto& c : cons) {
        if (!c.done) progressed |= step_consumer(c);
        if (res.fault != Fault::kNone) return finish();
      }
      bool all_done = prod.done;
      for (auto& c : cons) all_done = all_done && c.done;
      if (all_done && tma.empty()) { check_counts(); return finish(); }
      if (!progressed && tma.empty()) { classify_deadlock(); return finish(); }
    }
    fail(Fault::kDeadlock, "tick limit");
    return finish();
  }

 private:
  const Config& cfg;
  Result res;
  int64_t tick = 0;
  MBarrier full[2][S], empty[2][S];
  Slot slot[2][S];
  std::vector<Tma> tma;
  Agent<S> prod;
  std::vector<Agent<S>> cons;
  int64_t produced[2] = {0, 0};  // P_X: commits
  int64_t released_phases[2] = {0, 0};  // R_X: completed empty phases (all consumers released)

  Result finish() { res.ticks = static_cast<int>(tick); return res; }
  void fail(Fault f, const std::string& d) {
    if (res.fault == Fault::kNone) { res.fault = f; res.detail = d; }
  }
  Counters& ctr(int x) { return x == kK ? res.k : res.v; }
  bool mut(Mutation m) const { return cfg.mutation == m; }
  bool at(int t, int r) const { return t == cfg.mutation_tile && r == cfg.mutation_r; }

  // ---- scripts: the non-overlapped consumer body, both agents persistent across work tiles --------
  void build_scripts() {
    prod.st = RingState<S>::producer_start();
    int64_t q = 0;
    for (int t = 0; t < (int)cfg.tiles.size(); ++t) {
      if (t > 0 && mut(Mutation::kResetStatePerTile)) prod.script.push_back({Op::kReset, kK, t, 0, q});
      for (int r = 0; r < cfg.tiles[t]; ++r) {
        if (mut(Mutation::kSkipBlock) && at(t, r)) continue;  // the block is never loaded
        for (int x : {kK, kV}) {
          prod.script.push_back({Op::kAcquire, x, t, r, q});
          prod.script.push_back({Op::kLoad, x, t, r, q});
        }
        prod.script.push_back({Op::kAdvance, kK, t, r, q});
        ++q;
      }
    }
    // Synchronization tail, not a data tile: s acquires on V at the coordinates after the last load.
    if (!mut(Mutation::kNoProducerTail))
      for (int i = 0; i < S; ++i) prod.script.push_back({Op::kTail, kV, -1, i, q + i});
    prod.script.push_back({Op::kExit});

    cons.resize(cfg.consumers);
    for (auto& c : cons) {
      c.st = RingState<S>::consumer_start();
      int64_t qc = 0;
      for (int t = 0; t < (int)cfg.tiles.size(); ++t) {
        if (t > 0 && mut(Mutation::kResetStatePerTile)) c.script.push_back({Op::kReset, kK, t, 0, qc});
        for (int r = 0; r < cfg.tiles[t]; ++r) {
          const bool here = at(t, r);
          const bool skip_v = here && (mut(Mutation::kMissingVRelease) || mut(Mutation::kAdvanceWithoutRelease));
          const bool skip_k = here && mut(Mutation::kAdvanceWithoutRelease);
          // K: wait full, QK reads sK[stage], wait_group, release (the QK group was K's last reader)
          c.script.push_back({Op::kWait, kK, t, r, qc});
          c.script.push_back({Op::kIssue, kK, t, r, qc});
          if (here && mut(Mutation::kReleaseKBeforeWait)) c.script.push_back({Op::kRelease, kK, t, r, qc});
          c.script.push_back({Op::kWaitGroup, kK, t, r, qc});
          if (!skip_k && !(here && mut(Mutation::kReleaseKBeforeWait)))
            c.script.push_back({Op::kRelease, kK, t, r, qc});
          // (online softmax here: no ring traffic)
          // V: wait full, PV reads sV[stage], wait_group, release after the output update
          c.script.push_back({Op::kWait, kV, t, r, qc});
          c.script.push_back({Op::kIssue, kV, t, r, qc});
          if (here && mut(Mutation::kReleaseVBeforeWait)) c.script.push_back({Op::kRelease, kV, t, r, qc});
          c.script.push_back({Op::kWaitGroup, kV, t, r, qc});
          if (!skip_v && !(here && mut(Mutation::kReleaseVBeforeWait)))
            c.script.push_back({Op::kRelease, kV, t, r, qc});
          c.script.push_back({Op::kAdvance, kK, t, r, qc});
          ++qc;
        }
        if (mut(Mutation::kReleaseUnproduced) && t == cfg.mutation_tile)
          c.script.push_back({Op::kRelease, kK, t, cfg.tiles[t], qc});  // the next, unproduced ordinal
      }
      c.script.push_back({Op::kExit});
    }
  }

  void land_copies() {
    for (size_t i = 0; i < tma.size();) {
      if (tma[i].land <= tick) {
        const Tma& m = tma[i];
        Slot& s = slot[m.ring][m.stage];
        s.valid = true; s.landing = false;
        s.tile = m.tile; s.r = m.r; s.q = m.q; s.released = 0;
        full[m.ring][m.stage].complete_tx(cfg.tx_bytes);
        tma.erase(tma.begin() + i);
      } else {
        ++i;
      }
    }
  }

  void track_in_flight(int x) {
    const int d = static_cast<int>(produced[x] - released_phases[x]);
    ctr(x).max_in_flight = std::max(ctr(x).max_in_flight, d);
    ctr(x).min_in_flight = std::min(ctr(x).min_in_flight, d);
  }

  bool producer_wait_passes(int x, uint32_t stage, uint32_t phase, int64_t q) {
    if (mut(Mutation::kNoParityProducer))
      return empty[x][stage].completed >= 1 || q < S;  // sticky "empty" flag; fresh slots are empty
    return empty[x][stage].try_wait_parity(phase);
  }

  bool step_producer() {
    Agent<S>& a = prod;
    const Step& s = a.script[a.pc];
    switch (s.op) {
      case Op::kReset: a.st = RingState<S>::producer_start(); break;
      case Op::kAcquire:
        if (!producer_wait_passes(s.ring, a.st.stage, a.st.phase, s.q)) return false;
        ++ctr(s.ring).A;
        break;
      case Op::kLoad: {
        Slot& sl = slot[s.ring][a.st.stage];
        if (sl.readers > 0 || (sl.valid && sl.released < cfg.consumers) || sl.landing) {
          const int64_t live = sl.landing ? sl.landing_q : sl.q;
          fail(Fault::kOverwriteLive, std::string("TMA into ") + ring_name(s.ring) + " stage " +
                                          std::to_string(a.st.stage) + " for ordinal " + std::to_string(s.q) +
                                          " while ordinal " + std::to_string(live) +
                                          (sl.landing ? " is still landing" : " is still unreleased"));
          return true;
        }
        full[s.ring][a.st.stage].arrive_expect_tx(cfg.tx_bytes);
        sl.valid = false; sl.landing = true; sl.landing_q = s.q;
        tma.push_back({s.ring, (int)a.st.stage, tick + cfg.tma_latency, s.tile, s.r, s.q});
        ++produced[s.ring];
        ++ctr(s.ring).C;
        track_in_flight(s.ring);
        break;
      }
      case Op::kAdvance: a.st.advance(); break;
      case Op::kTail:
        if (!a.tail_started) { a.tail_st = a.st; a.tail_started = true; }
        if (!empty[kV][a.tail_st.stage].try_wait_parity(a.tail_st.phase)) return false;
        if (mut(Mutation::kTailAsPayload)) {  // the mutation: a dummy block committed on full V
          full[kV][a.tail_st.stage].arrive_expect_tx(cfg.tx_bytes);
          slot[kV][a.tail_st.stage].valid = false;
          slot[kV][a.tail_st.stage].landing = true;
          slot[kV][a.tail_st.stage].landing_q = s.q;
          tma.push_back({kV, (int)a.tail_st.stage, tick + cfg.tma_latency, -1, s.r, s.q});
          ++produced[kV];
          ++ctr(kV).C;
        }
        a.tail_st.advance();
        break;
      case Op::kExit: a.done = true; break;
      default: break;
    }
    ++a.pc;
    return true;
  }

  bool step_consumer(Agent<S>& c) {
    const Step& s = c.script[c.pc];
    const bool first = (&c == &cons[0]);
    switch (s.op) {
      case Op::kReset: c.st = RingState<S>::consumer_start(); break;
      case Op::kWait: {
        const MBarrier& b = full[s.ring][c.st.stage];
        // kNamedBarrierAsReadiness: the turn on the named barrier stands in for K's full wait
        const bool turn_only = mut(Mutation::kNamedBarrierAsReadiness) && s.ring == kK && at(s.tile, s.r);
        const bool pass = turn_only || (mut(Mutation::kNoParityConsumer) ? b.completed >= 1 : b.try_wait_parity(c.st.phase));
        if (!pass) return false;
        c.waited[s.q] |= 1 << s.ring;
        if (first) ++ctr(s.ring).W;
        break;
      }
      case Op::kIssue: {
        Slot& sl = slot[s.ring][c.st.stage];
        const std::string where = std::string(ring_name(s.ring)) + " stage " + std::to_string(c.st.stage) +
                                  " at ordinal " + std::to_string(s.q);
        if (!sl.valid) {
          fail(Fault::kStaleRead, "read of " + where + ": its TMA has not landed");
          return true;
        }
        if (sl.q < s.q) {
          fail(Fault::kStaleRead, "read of " + where + " found older ordinal " + std::to_string(sl.q));
          return true;
        }
        if (sl.q != s.q || sl.tile != s.tile || sl.r != s.r) {
          fail(Fault::kPayloadMismatch, "read of " + where + " (tile " + std::to_string(s.tile) + ", r " +
                                            std::to_string(s.r) + ") found tile " + std::to_string(sl.tile) +
                                            ", r " + std::to_string(sl.r));
          return true;
        }
        ++sl.readers;
        c.reading.push_back({s.ring, (int)c.st.stage});
        break;
      }
      case Op::kWaitGroup:
        for (auto& rd : c.reading) --slot[rd.first][rd.second].readers;
        c.reading.clear();
        break;
      case Op::kRelease: {
        const int x = s.ring;
        const uint32_t stage = c.st.stage;
        for (auto& rd : c.reading)
          if (rd.first == x && rd.second == (int)stage) {
            fail(Fault::kReleaseInFlight, std::string("release of ") + ring_name(x) + " stage " +
                                              std::to_string(stage) + " while its WGMMA still reads it");
            return true;
          }
        if (!(c.waited[s.q] & (1 << x))) {
          fail(Fault::kReleaseUnproduced, std::string("release of ") + ring_name(x) + " ordinal " +
                                              std::to_string(s.q) + ", whose full generation this consumer never passed");
          return true;
        }
        if (prod.done) {
          fail(Fault::kDanglingArrive, std::string("release of ") + ring_name(x) + " stage " +
                                           std::to_string(stage) + " after the producer exited");
          return true;
        }
        c.released[s.q] |= 1 << x;
        Slot& sl = slot[x][stage];
        ++sl.released;
        const uint32_t before = empty[x][stage].completed;
        empty[x][stage].arrive();
        if (empty[x][stage].completed != before) { ++released_phases[x]; ++ctr(x).R; track_in_flight(x); }
        break;
      }
      case Op::kAdvance: c.st.advance(); ++c.ordinal; break;
      case Op::kExit: c.done = true; break;
      default: break;
    }
    ++c.pc;
    return true;
  }

  // ---- deadlock: name the root cause from the agents' records ----------------------------------
  void classify_deadlock() {
    const Step* ps = prod.done ? nullptr : &prod.script[prod.pc];
    if (ps && (ps->op == Op::kAcquire || ps->op == Op::kTail)) {
      const int x = ps->ring;
      const int64_t need = ps->q - S;  // the generation whose release this acquire waits for
      for (auto& c : cons) {
        if (c.ordinal <= need) continue;  // the consumer has not passed it yet
        const int rel = c.released.count(need) ? c.released.at(need) : 0;
        if (rel & (1 << x)) continue;
        const std::string d = std::string("producer waits empty ") + ring_name(x) + " for ordinal " +
                              std::to_string(ps->q) + "; the consumer passed ordinal " + std::to_string(need) +
                              " without releasing " + ring_name(x);
        if (rel == 0) fail(Fault::kAdvanceWithoutRelease, d);
        else fail(x == kV ? Fault::kMissingVRelease : Fault::kMissingKRelease, d);
        return;
      }
    }
    for (auto& c : cons) {
      if (c.done) continue;
      const Step& s = c.script[c.pc];
      if (s.op == Op::kWait && (prod.done || ps == nullptr || ps->op == Op::kTail || ps->op == Op::kExit)) {
        fail(Fault::kMissingCommit, std::string("consumer waits full ") + ring_name(s.ring) + " for ordinal " +
                                        std::to_string(s.q) + " (tile " + std::to_string(s.tile) + ", r " +
                                        std::to_string(s.r) + "), which the producer never commits");
        return;
      }
    }
    fail(Fault::kDeadlock, "no agent can progress");
  }

  void check_counts() {
    int64_t J = 0;
    for (int t : cfg.tiles) J += t;
    for (int x = 0; x < 2; ++x) {
      const Counters& k = ctr(x);
      if (k.C > J && k.A == J && k.W == J) {
        fail(Fault::kFalseFullGeneration, std::string(ring_name(x)) + ": C=" + std::to_string(k.C) + " commits for J=" +
                                              std::to_string(J) + " blocks; " + std::to_string(k.C - J) +
                                              " full generations carry no block any consumer waits for");
        return;
      }
      if (k.A != J || k.C != J || k.W != J || k.R != J || k.max_in_flight > S || k.min_in_flight < 0) {
        fail(Fault::kCountMismatch, std::string(ring_name(x)) + ": A=" + std::to_string(k.A) + " C=" +
                                        std::to_string(k.C) + " W=" + std::to_string(k.W) + " R=" +
                                        std::to_string(k.R) + " J=" + std::to_string(J));
        return;
      }
    }
  }
};

}  // namespace

Result simulate(const Config& cfg) {
  switch (cfg.stages) {
    case 1: return Sim<1>(cfg).run();
    case 2: return Sim<2>(cfg).run();
    case 3: return Sim<3>(cfg).run();
    case 4: return Sim<4>(cfg).run();
  }
  Result r;
  r.fault = Fault::kDeadlock;
  r.detail = "unsupported stage count";
  return r;
}

// ===================================================================================================
// 4. Wait-for graph.
// ===================================================================================================
bool wait_for_graph_acyclic(int J, int lead) {
  // node ids: P_r = 3r, C_r = 3r+1, R_r = 3r+2; edge a -> b means "a waits for b"
  const int n = 3 * J;
  std::vector<std::vector<int>> out(n);
  for (int r = 0; r < J; ++r) {
    if (r - lead >= 0 && r - lead < J) out[3 * r].push_back(3 * (r - lead) + 2);
    out[3 * r + 1].push_back(3 * r);
    out[3 * r + 2].push_back(3 * r + 1);
  }
  std::vector<int> color(n, 0);  // 0 white, 1 on stack, 2 done
  std::vector<std::pair<int, size_t>> stack;
  for (int s = 0; s < n; ++s) {
    if (color[s]) continue;
    stack.push_back({s, 0});
    color[s] = 1;
    while (!stack.empty()) {
      auto& [v, i] = stack.back();
      if (i < out[v].size()) {
        const int w = out[v][i++];
        if (color[w] == 1) return false;
        if (color[w] == 0) { color[w] = 1; stack.push_back({w, 0}); }
      } else {
        color[v] = 2;
        stack.pop_back();
      }
    }
  }
  return true;
}

std::vector<int> wait_chain(int r, int stages) {
  std::vector<int> chain;
  for (int x = r; x >= 0; x -= stages) chain.push_back(x);
  return chain;
}

// ===================================================================================================
// 5. Finite-J overlap, driven by RingState: the producer's slot is the one it acquires.
// ===================================================================================================
template <int S>
static int64_t overlap_makespan_t(int J, int64_t tl, int64_t tc) {
  std::vector<int64_t> slot_free(S, 0);  // time at which each stage's last release happened
  auto prod = RingState<S>::producer_start();
  int64_t load_end = 0, comp_end = 0;
  for (int r = 0; r < J; ++r) {
    const int64_t start = std::max(load_end, slot_free[prod.stage]);
    load_end = start + tl;
    const int64_t cs = std::max(load_end, comp_end);
    comp_end = cs + tc;
    slot_free[prod.stage] = comp_end;  // released at the end of the compute that read it
    prod.advance();
  }
  return comp_end;
}

int64_t overlap_makespan(int stages, int J, int64_t tl, int64_t tc) {
  switch (stages) {
    case 1: return overlap_makespan_t<1>(J, tl, tc);
    case 2: return overlap_makespan_t<2>(J, tl, tc);
    case 3: return overlap_makespan_t<3>(J, tl, tc);
    case 4: return overlap_makespan_t<4>(J, tl, tc);
  }
  return -1;
}

int64_t overlap_formula(int J, int64_t tl, int64_t tc) {
  return J <= 0 ? 0 : tl + tc + (J - 1) * std::max(tl, tc);
}

// ===================================================================================================
// 6. Shared-memory and register ledgers.
// ===================================================================================================
SmemLedger smem_ledger(int bm, int bn, int d, int dv, int b, int s, bool p_in_smem) {
  SmemLedger l;
  l.q = (int64_t)bm * d * b;
  l.k = (int64_t)s * bn * d * b;
  l.v = (int64_t)s * bn * dv * b;
  l.p = p_in_smem ? (int64_t)bm * bn * b : 0;
  l.no_alias = l.q + l.k + l.v + l.p;
  l.alias = std::max(l.q, l.v) + l.k + l.p;
  l.barriers = 2 + 4 * s;
  l.barrier_bytes = 8 * l.barriers;
  return l;
}

std::vector<RegRow> setmaxnreg_table() {
  const int rows[3][3] = {{1, 56, 256}, {2, 24, 240}, {3, 32, 160}};
  std::vector<RegRow> out;
  for (auto& r : rows) {
    RegRow x;
    x.mma_wgs = r[0];
    x.producer_max = r[1];
    x.consumer_max = r[2];
    x.sum = 128LL * r[1] + 128LL * r[0] * r[2];
    auto ok = [](int v) { return v >= 24 && v <= 256 && v % 8 == 0; };  // setmaxnreg immediate
    x.legal = ok(r[1]) && ok(r[2]) && x.sum <= 65536;
    out.push_back(x);
  }
  return out;
}

// ===================================================================================================
// Ledger printers.
// ===================================================================================================
static void print_smem(std::FILE* o) {
  const SmemLedger l = smem_ledger(128, 128, 128, 128, 2, 2, false);
  std::fprintf(o, "B_M = B_N = d = d_v = 128, BF16 (b = 2), s = 2, P in registers\n");
  std::fprintf(o, "  Q payload           %6lld KiB\n", (long long)l.q / 1024);
  std::fprintf(o, "  two K stages        %6lld KiB\n", (long long)l.k / 1024);
  std::fprintf(o, "  two V stages        %6lld KiB\n", (long long)l.v / 1024);
  std::fprintf(o, "  without Q/V alias   %6lld KiB\n", (long long)l.no_alias / 1024);
  std::fprintf(o, "  with Q/V alias      %6lld KiB   max(|sQ|,|sV|) + |sK|\n", (long long)l.alias / 1024);
  std::fprintf(o, "  raw Q/K/V barriers  %6lld B     2 + 4s = %lld mbarriers x 8 B\n", (long long)l.barrier_bytes,
               (long long)l.barriers);
}

static void print_regs(std::FILE* o) {
  std::fprintf(o, "columns: MMA WGs = consumer warpgroups; producer/consumer max = setmaxnreg target, 32-bit\n"
                  "         registers per thread; CTA ownership sum = threads x target over the CTA (registers);\n"
                  "         legal = each target in [24, 256] and a multiple of 8, sum within the 65,536 of an SM\n");
  std::fprintf(o, "MMA WGs  producer max  consumer max  CTA ownership sum            legal (<= 65,536)\n");
  for (const RegRow& r : setmaxnreg_table())
    std::fprintf(o, "%7d  %12d  %12d  128*%d + %3d*%d = %6lld  %s\n", r.mma_wgs, r.producer_max, r.consumer_max,
                 r.producer_max, 128 * r.mma_wgs, r.consumer_max, (long long)r.sum, r.legal ? "yes" : "no");
}

static void print_coords(std::FILE* o) {
  std::fprintf(o, "s = 2, J = 5, dense blocks [4,3,2,1,0]; from RingState<2>::consumer_start/producer_start\n");
  std::fprintf(o, "columns: r = K/V block ordinal in the tile; n_r = the K/V block index it loads (descending);\n"
                  "         stage = r mod s; cons raw = r div s, the consumer's generation of that stage; prod raw =\n"
                  "         r div s + 1 (the producer runs one generation ahead); full / empty parity = the phase\n"
                  "         bit RingState waits for on the stage's full (consumer) / empty (producer) mbarrier\n");
  std::fprintf(o, "r  n_r  stage  cons raw  full parity  prod raw  empty parity\n");
  for (const CoordRow& r : coordinate_table(2, 5))
    std::fprintf(o, "%d  %3d  %5d  %8d  %11d  %8d  %12d\n", r.r, r.n, r.stage, r.consumer_raw, r.consumer_parity,
                 r.producer_raw, r.producer_parity);
  std::fprintf(o, "ABA probe (stage 0, generation 1 awaited, only generation 0 complete): with parity %s, "
               "without parity %s\n",
               aba_wait_passes(2, true) ? "ACCEPTED" : "rejected", aba_wait_passes(2, false) ? "ACCEPTED (stale)" : "rejected");
}

static void print_sim(std::FILE* o) {
  Config c;
  c.tiles = {5, 3, 4};
  c.consumers = 2;
  Result r = simulate(c);
  std::fprintf(o, "simulated: s=2, 2 consumer WGs, persistent tiles J = {5,3,4} (sum 12): fault %s\n",
               r.fault == Fault::kNone ? "none (all checks pass)" : fault_name(r.fault));
  std::fprintf(o, "columns, per ring over all tiles (counts of K/V blocks): A = producer acquires of an empty\n"
                  "         stage; C = commits (TMA bytes landed on a full barrier); W = full waits passed by\n"
                  "         consumer 0; R = empty phases completed (stage releases); max/min(P-R) = the largest/\n"
                  "         smallest number of stages produced but not yet released (must stay in [0, s])\n");
  std::fprintf(o, "ring  A   C   W   R   max(P-R)  min(P-R)\n");
  for (int x = 0; x < 2; ++x) {
    const Counters& k = x ? r.v : r.k;
    std::fprintf(o, "%-4s %2d  %2d  %2d  %2d  %8d  %8d\n", x ? "V" : "K", k.A, k.C, k.W, k.R, k.max_in_flight,
                 k.min_in_flight);
  }
  std::fprintf(o, "wait-for graph (J=12): producer one generation ahead (lead s=2): %s; lead 0: %s\n",
               wait_for_graph_acyclic(12, 2) ? "acyclic" : "CYCLE", wait_for_graph_acyclic(12, 0) ? "acyclic" : "CYCLE");
  std::fprintf(o, "chain from P_4 backward (s=2): ");
  for (int x : wait_chain(4, 2)) std::fprintf(o, "P_%d ", x);
  std::fprintf(o, "(base case: the first s acquires see fresh, empty stages)\n");
}

struct MatrixRow { const char* bug; Mutation m; int tile, r; std::vector<int> tiles; };

static void print_matrix(std::FILE* o) {
  const MatrixRow rows[] = {
      {"reset K/V state at every persistent work tile", Mutation::kResetStatePerTile, 1, 0, {5, 5}},
      {"producer skips a selected block (the last)", Mutation::kSkipBlock, 0, 4, {5}},
      {"consumer exits a branch without V release", Mutation::kMissingVRelease, 0, 1, {5}},
      {"release K before QK wait_group", Mutation::kReleaseKBeforeWait, 0, 2, {5}},
      {"release V before PV wait_group", Mutation::kReleaseVBeforeWait, 0, 2, {5}},
      {"advance without release", Mutation::kAdvanceWithoutRelease, 0, 1, {5}},
      {"release a stage that was never produced", Mutation::kReleaseUnproduced, 0, 0, {5}},
      {"reuse stage without parity (consumer)", Mutation::kNoParityConsumer, 0, 0, {5}},
      {"reuse stage without parity (producer)", Mutation::kNoParityProducer, 0, 0, {5}},
      {"omit producer tail", Mutation::kNoProducerTail, 0, 0, {5}},
      {"named barrier taken as K readiness (r=0)", Mutation::kNamedBarrierAsReadiness, 0, 0, {5}},
      {"producer tail treated as a dummy payload", Mutation::kTailAsPayload, 0, 0, {5}},
  };
  std::fprintf(o, "each row: the mutation, the fault the simulator names, and (indented) its first evidence;\n"
                  "s = 2 stages, 2 consumer warpgroups\n");
  std::fprintf(o, "%-48s %s\n", "mutation (s=2)", "detected as");
  for (const MatrixRow& row : rows) {
    Config c;
    c.tiles = row.tiles;
    c.mutation = row.m;
    c.mutation_tile = row.tile;
    c.mutation_r = row.r;
    Result r = simulate(c);
    std::fprintf(o, "%-48s %s\n    %s\n", row.bug, fault_name(r.fault), r.detail.c_str());
  }
}

static void print_overlap(std::FILE* o) {
  const int64_t tl = 300, tc = 500;
  std::fprintf(o, "T_L = 300, T_C = 500 (idealized cycles)\n");
  std::fprintf(o, "columns: J = K/V blocks; serial = J (T_L + T_C); s=1, s=2 = simulated makespan with 1 or 2\n"
                  "         stages; formula = T_L + T_C + (J-1) max(T_L, T_C), the s = 2 closed form; in cycles;\n"
                  "         speedup = serial / (s=2)\n");
  std::fprintf(o, "J  serial  s=1     s=2     formula  speedup(s=2)\n");
  for (int J : {1, 2, 5, 10, 100}) {
    const int64_t ser = J * (tl + tc);
    const int64_t m2 = overlap_makespan(2, J, tl, tc);
    std::fprintf(o, "%-3d %6lld  %6lld  %6lld  %7lld  %.2fx\n", J, (long long)ser,
                 (long long)overlap_makespan(1, J, tl, tc), (long long)m2, (long long)overlap_formula(J, tl, tc),
                 (double)ser / m2);
  }
  std::fprintf(o, "asymptote (T_L + T_C) / max(T_L, T_C) = %.2fx\n", (double)(tl + tc) / std::max(tl, tc));
}

FLASHPTX_LEDGER("0x02", "Hopper shared-memory liveness ledger", print_smem);
FLASHPTX_LEDGER("0x02", "setmaxnreg CTA register ownership", print_regs);
FLASHPTX_LEDGER("0x03", "K/V ring (stage, phase) coordinates", print_coords);
FLASHPTX_LEDGER("0x03", "K/V ring simulation: conservation and wait-for graph", print_sim);
FLASHPTX_LEDGER("0x03", "K/V ring failure matrix", print_matrix);
FLASHPTX_LEDGER("0x03", "finite-J load/compute overlap", print_overlap);

}  // namespace flashptx::models::ring

// ===================================================================================================
// The shipped kernels' layouts, from the kernels' own FwdLayout (src/sm90/fa3_fwd_config.h): the
// liveness ledger above is the article's formula for its example; this is what each shipped forward
// allocates (one definition, read by the kernel, the launch plan and this table).
// ===================================================================================================
namespace {
template <flashptx::fa3::FwdConfig C>
void print_layout_row(std::FILE* o, const char* name) {
  using L = flashptx::fa3::FwdLayout<C>;
  std::fprintf(o, "%-10s %4d x %-4d %6d %6d %6d %7d %7s %8d  128*%d + %d*128*%d = %d\n", name, L::kBlockM, C.block_n,
               C.stages, L::kQBytes / 1024, L::kKVBytes / 1024, L::kSmemBytes, L::kSeparateO ? "own" : (L::kOHalves ? "halves" : "in Q"),
               L::kNumBarriers, L::kProducerRegs, C.consumer_wgs, L::kConsumerRegs,
               128 * L::kProducerRegs + 128 * C.consumer_wgs * L::kConsumerRegs);
}
void print_shipped_layouts(std::FILE* o) {
  using namespace flashptx::fa3;
  std::fprintf(o, "columns: tile = query rows x keys per block; stages = K/V ring depth; Q KiB = the Q tile;\n"
                  "         KV KiB = one K (or V) stage; smem B = dynamic shared memory requested (bytes); O stage =\n"
                  "         where the output is staged (own buffer, a half-size buffer in two rounds, or reusing\n"
                  "         Q's); barriers = mbarriers (d128: two Q slots, 32 KiB each);\n"
                  "         registers = producer WG 128 x target + consumer WGs 128 x target = CTA total\n");
  std::fprintf(o, "kernel     tile        stages  Q KiB  KV KiB   smem B  O stage  barriers  registers (producer + consumers)\n");
  print_layout_row<kD64M128>(o, "d64_m128");
  print_layout_row<kD64M192>(o, "d64_m192");
  print_layout_row<kD128N128>(o, "d128_n128");
  print_layout_row<kD256>(o, "d256");
  print_layout_row<kD256Persistent>(o, "d256_pers");
}
}  // namespace

FLASHPTX_LEDGER("0x02", "The shipped FA3 forward layouts (src/sm90/fa3_fwd_config.h FwdLayout)", print_shipped_layouts);
