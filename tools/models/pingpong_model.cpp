// FA3 pingpong token ring: the CPU oracle behind `flashptx ledger 0x04` (docs/PROTOCOLS.md,
// "Pingpong").
//
// What this file certifies:
//   1. The ring as the kernel builds it from TokenRing<G> (src/protocol/pingpong.h): consumer g
//      waits bar.sync(barrier_of(g), 256) and passes bar.arrive(barrier_of(next(g)), 256); only
//      primes(0) deposits the bootstrap half-credit, once per CTA.
//   2. A named-barrier simulator with PTX bar.sync/bar.arrive generations: the first party of a
//      generation fixes its participant count, the generation completes when that many threads
//      arrived, then the barrier re-arms. Each scheduler call carries its handoff rank
//      rho = h G + g, so a generation that pairs the wrong handoffs is caught when it completes.
//   3. Handoffs per consumer and work tile: J + 1 (non-overlap) and max(J - 1, 0) (intra-WG overlap),
//      compared with TokenRing::handoffs_*; token conservation (pending half-credits + owner = 1) after
//      every event, and at every persistent-tile boundary the token rests as one half-credit on B_0.
//   4. The scheduler failure matrix, each mutation detected with a named fault.
//   5. The flow-shop bounds: E/M = 1/2 gives 1.2x for two quanta and 1.5x asymptotically.
#include "tools/models/pingpong_model.h"

#include <algorithm>
#include <cstdio>

#include "src/protocol/pingpong.h"
#include "tools/models/ledger.h"

namespace flashptx::models::pingpong {

const char* fault_name(Fault f) {
  switch (f) {
    case Fault::kNone: return "none";
    case Fault::kNoBootstrap: return "no_bootstrap";
    case Fault::kSelfCompletion: return "self_completed_generation";
    case Fault::kDuplicateCredit: return "duplicate_half_credit";
    case Fault::kCountMismatch: return "participant_count_mismatch";
    case Fault::kParticipantsUnreachable: return "participants_unreachable";
    case Fault::kIdMismatch: return "barrier_id_mismatch";
    case Fault::kGenerationDrift: return "generation_drift";
    case Fault::kTokenStranded: return "token_stranded";
    case Fault::kTokenNotHome: return "token_not_home_at_tile_boundary";
    case Fault::kDeadlock: return "deadlock";
  }
  return "?";
}

namespace {

enum class Op { kSync, kArrive, kWork, kTileEnd, kExit };

struct Step {
  Op op;
  uint32_t id = 0;
  uint32_t count = 0;
  int rank = 0;          // handoff rank this call belongs to (-1: bootstrap)
  bool bootstrap = false;
  int tile = 0;
  std::string what;      // for kWork: "QK(0)", ...
};

struct Party { int group; bool sync; int rank; };

struct Barrier {
  uint32_t expected = 0;  // 0: idle, no generation open
  uint32_t arrived = 0;
  unsigned generation = 0;
  std::vector<Party> parties;
};

template <int G>
class Sim {
  using Ring = TokenRing<G>;

 public:
  explicit Sim(const Config& c) : cfg(c) {}

  Result run() {
    res.syncs.assign(G, 0);
    res.arrives.assign(G, 0);
    build();
    for (long tick = 0; tick < 100000; ++tick) {
      bool progressed = false;
      for (int g = 0; g < G && res.fault == Fault::kNone; ++g) progressed |= step(g);
      if (res.fault != Fault::kNone) return res;
      progressed |= tile_rendezvous();
      if (res.fault != Fault::kNone) return res;
      bool done = true;
      for (int g = 0; g < G; ++g) done = done && pc[g] == script[g].size();
      if (done) return res;
      if (!progressed) { classify_deadlock(); return res; }
    }
    fail(Fault::kDeadlock, "tick limit");
    return res;
  }

 private:
  const Config& cfg;
  Result res;
  std::vector<Step> script[G];
  size_t pc[G] = {};
  bool blocked[G] = {};
  uint32_t blocked_on[G] = {};
  unsigned blocked_gen[G] = {};
  int owner = -1;
  bool ever_bootstrapped = false;
  Barrier bar[16];

  bool mut(Mutation m) const { return cfg.mutation == m; }
  void fail(Fault f, const std::string& d) {
    if (res.fault == Fault::kNone) { res.fault = f; res.detail = d; }
  }
  static std::string B(uint32_t id) { return "B" + std::to_string(id); }

  // ---- scripts, from TokenRing<G> -------------------------------------------------------------------
  void build() {
    const uint32_t n = mut(Mutation::kHalfParticipants) ? Ring::kThreadsPerGroup
                     : mut(Mutation::kOverParticipants) ? 3 * Ring::kThreadsPerGroup
                                                        : Ring::kParticipants;
    for (int g = 0; g < G; ++g) {
      auto& s = script[g];
      // wait_for_turn: local id g; the physical-id bug forgets to subtract the producer warpgroup
      const uint32_t wait_id = mut(Mutation::kPhysicalId) ? Ring::barrier_of(g + 1) : Ring::barrier_of(g);
      const uint32_t pass_id = Ring::barrier_of(Ring::next(g));
      int h = 0;  // this group's handoff ordinal across the whole CTA (persistent)
      auto prime = [&](int t) {
        if (Ring::primes(g) && !mut(Mutation::kNoBootstrap))
          s.push_back({Op::kArrive, Ring::barrier_of(0), n, -1, true, t, ""});
      };
      prime(0);
      for (int t = 0; t < (int)cfg.tiles.size(); ++t) {
        if (t > 0 && mut(Mutation::kReprimePerTile)) prime(t);
        const int J = cfg.tiles[t];
        int h_tile = 0;  // handoff ordinal within this tile
        auto handoff_sync = [&](std::vector<Step>& v, bool& skipped) {
          skipped = mut(Mutation::kSkipConditional) && g == cfg.group && t == cfg.tile && h_tile == cfg.handoff;
          if (!skipped) v.push_back({Op::kSync, wait_id, n, h * G + g, false, t, ""});
          ++h; ++h_tile;
        };
        auto handoff_arrive = [&](std::vector<Step>& v, bool skipped, bool final_arrive) {
          if (skipped) return;
          if (final_arrive && mut(Mutation::kNoFinalArrive) && g == cfg.group && t == cfg.tile) return;
          v.push_back({Op::kArrive, pass_id, n, (h - 1) * G + g, false, t, ""});
        };
        auto work = [&](const std::string& w) { s.push_back({Op::kWork, 0, 0, 0, false, t, w}); };
        bool sk = false;
        if (J >= 1 && !cfg.intra_overlap) {
          // non-overlap: startup grant, J-1 middle grants, drain grant: J + 1 syncs and arrives
          handoff_sync(s, sk);                       // grant 0: QK(0)
          for (int j = 0; j < J; ++j) {
            work("QK(" + std::to_string(j) + ")");
            handoff_arrive(s, sk, false);            // peer may issue its bundle
            work("softmax(" + std::to_string(j) + ")");
            handoff_sync(s, sk);                     // returned grant: PV(j) [then QK(j+1)]
            work("PV(" + std::to_string(j) + ")");
          }
          handoff_arrive(s, sk, true);               // drain grant passed after PV(J-1)
        } else if (J >= 1) {
          // intra-WG overlap: QK(0) and PV(J-1) outside the ring; J - 1 steady handoffs
          work("QK(0)");
          work("softmax(0)");
          for (int j = 1; j < J; ++j) {
            handoff_sync(s, sk);
            work("QK(" + std::to_string(j) + ")+PV(" + std::to_string(j - 1) + ")");
            handoff_arrive(s, sk, false);
            work("softmax(" + std::to_string(j) + ")");
          }
          work("PV(" + std::to_string(J - 1) + ")");
        }
        s.push_back({Op::kTileEnd, 0, 0, 0, false, t, ""});
      }
    }
  }

  // ---- one scheduler call -----------------------------------------------------------------------
  void contribute(int g, const Step& s) {
    Barrier& b = bar[s.id];
    if (b.expected == 0) b.expected = s.count;
    else if (b.expected != s.count) {
      fail(Fault::kCountMismatch, "WG" + std::to_string(g) + " passes " + std::to_string(s.count) + " to " + B(s.id) +
                                      ", whose open generation expects " + std::to_string(b.expected));
      return;
    }
    b.arrived += Ring::kThreadsPerGroup;
    b.parties.push_back({g, s.op == Op::kSync, s.rank});
    if (b.arrived == b.expected) complete(s.id);
  }

  void complete(uint32_t id) {
    Barrier& b = bar[id];
    int syncs = 0, arrives = 0;
    const Party* sp = nullptr;
    const Party* ap = nullptr;
    for (const Party& p : b.parties) {
      if (p.sync) { ++syncs; sp = &p; } else { ++arrives; ap = &p; }
    }
    if (b.parties.size() == 1) {
      fail(Fault::kSelfCompletion, "a generation of " + B(id) + " completed with only WG" +
                                       std::to_string(b.parties[0].group) + "'s 128 threads");
      return;
    }
    if (syncs == 0) {
      fail(Fault::kDuplicateCredit, "a generation of " + B(id) + " completed from " + std::to_string(arrives) +
                                        " half-credits and no waiter");
      return;
    }
    if (syncs == 1 && arrives == 1 && ap->rank != sp->rank - 1) {
      fail(Fault::kGenerationDrift, "WG" + std::to_string(sp->group) + " sync of handoff rank " +
                                        std::to_string(sp->rank) + " on " + B(id) + " paired with the arrive of rank " +
                                        std::to_string(ap->rank) + " (expected " + std::to_string(sp->rank - 1) + ")");
      return;
    }
    if (syncs != 1 || arrives != 1) {
      fail(Fault::kDeadlock, "a generation of " + B(id) + " with " + std::to_string(syncs) + " waiters");
      return;
    }
    ++b.generation;
    b.expected = 0;
    b.arrived = 0;
    b.parties.clear();
    owner = sp->group;
    blocked[sp->group] = false;
    res.events.push_back("WG" + std::to_string(sp->group) + " sync(" + B(id) + ") completes: WG" +
                         std::to_string(sp->group) + " owns the token");
  }

  int pending_credits() const {
    int c = 0;
    for (const Barrier& b : bar)
      for (const Party& p : b.parties) c += p.sync ? 0 : 1;
    return c;
  }

  void check_token() {
    if (!ever_bootstrapped) return;
    if (pending_credits() + (owner >= 0 ? 1 : 0) != 1) res.token_conserved = false;
  }

  bool step(int g) {
    if (pc[g] == script[g].size() || blocked[g]) return false;
    const Step& s = script[g][pc[g]];
    switch (s.op) {
      case Op::kTileEnd: return false;  // released by tile_rendezvous()
      case Op::kWork:
        if (owner == g) res.events.push_back("WG" + std::to_string(g) + " issues " + s.what + " holding the token");
        break;
      case Op::kSync:
        ++res.syncs[g];
        blocked[g] = true;
        blocked_on[g] = s.id;
        blocked_gen[g] = bar[s.id].generation;
        if (owner == g) owner = -1;  // cannot happen in a legal ring; keeps the accounting honest
        contribute(g, s);
        break;
      case Op::kArrive:
        if (s.bootstrap) ever_bootstrapped = true; else ++res.arrives[g];
        if (owner == g) owner = -1;
        res.events.push_back(std::string("WG") + std::to_string(g) + (s.bootstrap ? " bootstrap" : "") + " arrive(" +
                             B(s.id) + "): half-credit pending on " + B(s.id));
        contribute(g, s);
        break;
      default: break;
    }
    ++pc[g];
    check_token();
    return true;
  }

  // All groups at the end of tile t: the token must rest as the one half-credit on B_0.
  bool tile_rendezvous() {
    int t = -1;
    for (int g = 0; g < G; ++g) {
      if (pc[g] == script[g].size() || script[g][pc[g]].op != Op::kTileEnd) return false;
      t = script[g][pc[g]].tile;
    }
    const uint32_t home = Ring::barrier_of(0);
    if (owner >= 0) {
      fail(Fault::kTokenStranded, "end of tile " + std::to_string(t) + ": WG" + std::to_string(owner) +
                                      " still owns the token (its final pass_turn is missing)");
      return true;
    }
    for (uint32_t id = 0; id < 16; ++id) {
      const Barrier& b = bar[id];
      const bool ok = id == home ? (b.parties.size() == 1 && !b.parties[0].sync) : b.parties.empty();
      if (!ok) {
        fail(Fault::kTokenNotHome, "end of tile " + std::to_string(t) + ": " + B(id) + " holds " +
                                       std::to_string(b.parties.size()) + " parties; the token must rest on " + B(home));
        return true;
      }
    }
    for (int g = 0; g < G; ++g) ++pc[g];
    return true;
  }

  void classify_deadlock() {
    for (uint32_t id = 0; id < 16; ++id)
      if (bar[id].expected > Ring::kParticipants) {
        fail(Fault::kParticipantsUnreachable, B(id) + " expects " + std::to_string(bar[id].expected) +
                                                  " threads; one sync and one arrive supply " +
                                                  std::to_string(Ring::kParticipants));
        return;
      }
    for (uint32_t id = 0; id < 16; ++id) {
      bool credit = false, waited = false;
      for (const Party& p : bar[id].parties) credit |= !p.sync;
      for (int g = 0; g < G; ++g) waited |= blocked[g] && blocked_on[g] == id;
      if (credit && !waited) {
        std::string w;
        for (int g = 0; g < G; ++g)
          if (blocked[g]) w += " WG" + std::to_string(g) + "@" + B(blocked_on[g]);
        fail(Fault::kIdMismatch, "a half-credit rests on " + B(id) + " while the waiters are on" + w);
        return;
      }
    }
    if (owner >= 0) {
      fail(Fault::kTokenStranded, "WG" + std::to_string(owner) + " owns the token and will never pass it");
      return;
    }
    if (!ever_bootstrapped && pending_credits() == 0) {
      fail(Fault::kNoBootstrap, "every consumer waits and no half-credit was ever deposited on " +
                                    B(Ring::barrier_of(0)));
      return;
    }
    fail(Fault::kDeadlock, "no group can progress");
  }
};

}  // namespace

Result simulate(const Config& cfg) {
  if (cfg.groups == 3) return Sim<3>(cfg).run();
  return Sim<2>(cfg).run();
}

bool use_scheduler_barrier(int num_wg_mma, bool intra_wg_overlap, int tile_hdim) {
  return intra_wg_overlap ? (num_wg_mma >= 2 && tile_hdim <= 128) : num_wg_mma == 2;
}

double flow_shop_makespan(int n, double m, double e) {
  double tensor = 0, mufu = 0;  // completion times of the two resources
  for (int i = 0; i < n; ++i) {
    tensor += m;                            // bundles issue back to back on the tensor pipe
    mufu = std::max(mufu, tensor) + e;      // softmax i after its bundle and after softmax i-1
  }
  return mufu;
}

double flow_shop_speedup(int n, double m, double e) { return n * (m + e) / flow_shop_makespan(n, m, e); }

// ---- ledger ---------------------------------------------------------------------------------------
static void print_circuit(std::FILE* o) {
  Config c;
  c.intra_overlap = true;  // J = 1 has no steady handoff; J = 2 has exactly one per group
  c.tiles = {2};
  Result r = simulate(c);
  std::fprintf(o, "two consumer groups, TokenRing<2>: B_g = %u + g, %u participants; intra-WG overlap, J = 2\n",
               TokenRing<2>::kFirstBarrier, TokenRing<2>::kParticipants);
  std::fprintf(o, "where: WGg = consumer warpgroup g (128 threads); B_n = named barrier n (PTX bar, 0..15);\n"
                  "       sync = bar.sync (128 threads arrive and wait), arrive = bar.arrive (128 threads, no wait);\n"
                  "       a half-credit = one arrive waiting for its sync; participants = threads per generation\n");
  int i = 0;
  for (const std::string& e : r.events) std::fprintf(o, "  %d  %s\n", i++, e.c_str());
  std::fprintf(o, "  token conserved (pending half-credits + owner = 1) throughout: %s\n",
               r.token_conserved ? "yes" : "NO");
  Config c3;
  c3.groups = 3;
  c3.tiles = {2, 2};
  c3.intra_overlap = true;
  Result r3 = simulate(c3);
  std::fprintf(o, "three groups (B2 -> B3 -> B4 -> B2), two tiles of J = 2: fault %s, token conserved: %s\n",
               r3.fault == Fault::kNone ? "none (the ring completes)" : fault_name(r3.fault),
               r3.token_conserved ? "yes" : "NO");
}

// Which (G, overlap, head dim) coordinates each row of the admission table covers; the verdict is
// computed over all of them ("MIXED" if the predicate disagrees inside a row).
static void print_admission(std::FILE* o) {
  struct Row { const char* g_txt; std::vector<int> g; const char* ov_txt; std::vector<bool> ov;
               const char* hd_txt; std::vector<int> hd; };
  const std::vector<int> small = {64, 96, 128}, large = {192, 256}, all = {64, 96, 128, 192, 256};
  const Row rows[] = {
      {"1", {1}, "either", {false, true}, "either", all},
      {"2", {2}, "no", {false}, "either", all},
      {"3", {3}, "no", {false}, "either", all},
      {"2 or 3", {2, 3}, "yes", {true}, "yes (64, 96, 128)", small},
      {"2 or 3", {2, 3}, "yes", {true}, "no (192, 256)", large},
  };
  std::fprintf(o, "use_scheduler_barrier = intra_wg_overlap ? (G >= 2 and tile_hdim <= 128) : (G == 2)\n");
  std::fprintf(o, "columns: G = consumer (MMA) warpgroups; intra-WG overlap = the two-stage QK/PV overlap of 0x05\n"
                  "         on or off; hdim <= 128 = the tile's head dimension (elements); scheduler = whether the\n"
                  "         named-barrier token ring is built; coords = (G, overlap, hdim) points evaluated\n");
  std::fprintf(o, "%-8s %-16s %-20s %-10s %s\n", "G", "intra-WG overlap", "hdim <= 128", "scheduler", "coords");
  for (const Row& r : rows) {
    int on = 0, n = 0;
    for (int g : r.g)
      for (bool ov : r.ov)
        for (int hd : r.hd) { on += use_scheduler_barrier(g, ov, hd); ++n; }
    std::fprintf(o, "%-8s %-16s %-20s %-10s %d\n", r.g_txt, r.ov_txt, r.hd_txt,
                 on == n ? "enabled" : on == 0 ? "disabled" : "MIXED", n);
  }
  std::fprintf(o, "so \"FA3 uses pingpong\" holds only on the enabled rows; G = 3 without overlap builds no ring\n");
}

static void print_handoffs(std::FILE* o) {
  std::fprintf(o, "columns: J = K/V blocks in the work tile; formula columns = scheduler handoffs per consumer WG\n"
                  "         (one handoff = one bar.sync + one bar.arrive); simulated = syncs/arrives that WG0\n"
                  "         executed in the named-barrier simulator, 2 groups, one tile (bootstrap not counted)\n");
  std::fprintf(o, "J   non-overlap (J+1)  intra-overlap (max(J-1,0))  simulated non-overlap  simulated intra-overlap\n");
  for (int J : {0, 1, 2, 3, 5, 8}) {
    Config a;
    a.tiles = {J};
    Config b = a;
    b.intra_overlap = true;
    Result ra = simulate(a), rb = simulate(b);
    char sa[16], sb[16];
    std::snprintf(sa, sizeof sa, "%d/%d", ra.syncs[0], ra.arrives[0]);
    std::snprintf(sb, sizeof sb, "%d/%d", rb.syncs[0], rb.arrives[0]);
    std::fprintf(o, "%-3d %17d  %26d  %21s  %23s\n", J, TokenRing<2>::handoffs_non_overlap(J),
                 TokenRing<2>::handoffs_intra_overlap(J), sa, sb);
  }
}

static void print_matrix(std::FILE* o) {
  struct Row { const char* bug; Mutation m; bool overlap; std::vector<int> tiles; };
  const Row rows[] = {
      {"omit bootstrap arrival", Mutation::kNoBootstrap, false, {3}},
      {"128 instead of 256 participants", Mutation::kHalfParticipants, false, {3}},
      {"384 participants", Mutation::kOverParticipants, false, {3}},
      {"physical WG id used without subtracting producer", Mutation::kPhysicalId, false, {3}},
      {"one group skips a conditional barrier", Mutation::kSkipConditional, false, {3}},
      {"omit non-overlap final arrive", Mutation::kNoFinalArrive, false, {3, 3}},
      {"re-prime every work tile", Mutation::kReprimePerTile, false, {3, 3}},
  };
  std::fprintf(o, "each row: the mutation, the fault the simulator names, and (indented) its first evidence;\n"
                  "2 consumer groups, non-overlap, work tiles of J = 3 K/V blocks\n");
  std::fprintf(o, "%-50s %s\n", "mutation", "detected as");
  for (const Row& row : rows) {
    Config c;
    c.mutation = row.m;
    c.intra_overlap = row.overlap;
    c.tiles = row.tiles;
    Result r = simulate(c);
    std::fprintf(o, "%-50s %s\n    %s\n", row.bug, fault_name(r.fault), r.detail.c_str());
  }
}

static void print_flow(std::FILE* o) {
  std::fprintf(o, "M = 1 (tensor bundle), E = 1/2 (softmax), flow shop of N quanta\n");
  std::fprintf(o, "columns: N = consumer quanta; serial = N (M + E); pingpong = flow-shop makespan\n"
                  "         M + E + (N-1) max(M, E); all in units of M; speedup = serial / pingpong\n");
  std::fprintf(o, "N           serial    pingpong  speedup\n");
  for (int n : {1, 2, 4, 16, 1000000})
    std::fprintf(o, "%-8d %10.1f  %10.1f  %.4fx\n", n, n * 1.5, flow_shop_makespan(n, 1.0, 0.5),
                 flow_shop_speedup(n, 1.0, 0.5));
  std::fprintf(o, "two items 2(M+E)/(M+max(M,E)+E) = %.1fx; ceiling (M+E)/max(M,E) = %.1fx; FP8 (M = E) -> %.0fx\n",
               flow_shop_speedup(2, 1.0, 0.5), (1.0 + 0.5) / std::max(1.0, 0.5), (1.0 + 1.0) / 1.0);
  const PingpongClaim& p = kPaperPingpong;
  std::fprintf(o, "source-reported (FA3 paper, H100, FP16 forward, d = 128, S = 8192; not measured here):\n"
                  "  %.0f TFLOP/s without the scheduler -> %.0f-%.0f TFLOP/s with it: %.0f/%.0f = %.3fx,"
                  " %.0f/%.0f = %.3fx (%.2f-%.2fx)\n"
                  "  below the %.1fx two-item and %.1fx long-stream bounds above: barriers, issue, register\n"
                  "  pressure and the compiler's schedule are outside the flow-shop model\n",
               p.without_tflops, p.with_lo_tflops, p.with_hi_tflops, p.with_lo_tflops, p.without_tflops,
               claim_speedup(p.with_lo_tflops, p.without_tflops), p.with_hi_tflops, p.without_tflops,
               claim_speedup(p.with_hi_tflops, p.without_tflops), claim_speedup(p.with_lo_tflops, p.without_tflops),
               claim_speedup(p.with_hi_tflops, p.without_tflops), flow_shop_speedup(2, 1.0, 0.5),
               (1.0 + 0.5) / std::max(1.0, 0.5));
}

FLASHPTX_LEDGER("0x04", "pingpong admission: use_scheduler_barrier (5 rows)", print_admission);
FLASHPTX_LEDGER("0x04", "pingpong token ring circuit", print_circuit);
FLASHPTX_LEDGER("0x04", "scheduler handoffs per consumer and tile", print_handoffs);
FLASHPTX_LEDGER("0x04", "scheduler failure matrix", print_matrix);
FLASHPTX_LEDGER("0x04", "flow-shop bounds", print_flow);

}  // namespace flashptx::models::pingpong
