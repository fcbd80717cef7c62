// Persistent scheduling, LPT and variable-work geometry: the CPU oracle behind `flashptx ledger 0x0B`
// (docs/PROTOCOLS.md, "Scheduling"), and the FLOP accounting behind `flashptx ledger 0x0D`
// (the guide's "Evidence"). Both drive the headers the kernels and the bench use
// (src/protocol/tile_scheduler.h, tools/models/flops.h).
//
// What this file certifies:
//   1. Causal J_m = causal_n_blocks(): m+1 for M = N on a square sequence, clipped at the last K/V
//      block, bottom-right aligned when S_q != S_k.
//   2. The worked makespan: costs [1..6] on three first-free workers, lexical order 9 (loads 5, 7, 9),
//      LPT order 7 (7, 7, 7), lower bound max(21/3, 6) = 7. The two orders are produced by
//      tile_from_linear(longest_first = false / true), the kernel's own tile map.
//   3. The L2 section rule H_section * S_k (d_qk + d_v) b <= budget, as heads_per_l2_section().
//   4. The varlen virtual-to-actual map [1, 3, 2, 0] for lengths [128, 768, 256, 512], M = 128.
//   5. The scheduling failure lab: five claims about a schedule (LPT order, balance of a static
//      stride, one tile order for the CLC and the L2-sectioned maps, a sorted varlen table, the dQ
//      writer turns), each checked on the schedule our code builds, with a named reason.
//   6. FLOPs: 4 * 32 * 1024^2 * 16 * 128 = 274,877,906,944 FLOPs and 1374.39 / 687.19 / 1527.10 /
//      763.55 TFLOP/s at 0.20 ms (forward) and 0.45 ms (backward).
#include "tools/models/scheduling_model.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include <memory>

#include "src/protocol/fa4_plan.h"
#include "src/protocol/tile_scheduler.h"
#include "src/protocol/writer_order.h"
#include "tools/models/flops.h"
#include "tools/models/ledger.h"
#include "tools/models/persistent_schedule.h"
#include "src/plan.h"

namespace flashptx::models::scheduling {

ListSchedule list_schedule(const std::vector<int>& costs, const std::vector<int>& order, int workers) {
  ListSchedule s;
  s.loads.assign(workers, 0);
  for (int tile : order) {
    int w = 0;
    for (int p = 1; p < workers; ++p)
      if (s.loads[p] < s.loads[w]) w = p;  // first free worker, ties to the lowest index
    s.loads[w] += costs[tile];
  }
  s.makespan = *std::max_element(s.loads.begin(), s.loads.end());
  return s;
}

int makespan_lower_bound(const std::vector<int>& costs, int workers) {
  long sum = 0;
  int mx = 0;
  for (int c : costs) { sum += c; mx = std::max(mx, c); }
  return std::max<int>((int)((sum + workers - 1) / workers), mx);
}

std::vector<int> causal_costs(int num_m_blocks, int block_m, int block_n, int seqlen_q, int seqlen_k) {
  std::vector<int> c;
  for (int m = 0; m < num_m_blocks; ++m) c.push_back(causal_n_blocks(m, block_m, block_n, seqlen_q, seqlen_k));
  return c;
}

std::vector<int> tile_order(int num_m_blocks, bool longest_first) {
  std::vector<int> o;
  for (int i = 0; i < num_m_blocks; ++i) o.push_back(tile_from_linear(i, num_m_blocks, 1, 1, longest_first).m_block);
  return o;
}

std::vector<int> varlen_map(const std::vector<int>& seqlens, int block_m) {
  std::vector<int> out(seqlens.size());
  varlen_virtual_to_actual(seqlens.data(), (int)seqlens.size(), block_m, out.data());
  return out;
}

std::vector<FlopRow> flop_reconciliation() {
  const double dense = fwd_flops_dense(32, 16, 1024, 128);
  const double causal = fwd_flops_causal_half(32, 16, 1024, 1024, 128, 128);
  return {
      {"dense forward", dense, 0.20, tflops_per_s(dense, 0.20)},
      {"causal forward", causal, 0.20, tflops_per_s(causal, 0.20)},
      {"dense backward", bwd_flops(dense), 0.45, tflops_per_s(bwd_flops(dense), 0.45)},
      {"causal backward", bwd_flops(causal), 0.45, tflops_per_s(bwd_flops(causal), 0.45)},
  };
}

const std::vector<CompileRow>& compile_times() {
  static const std::vector<CompileRow> r = {{"forward", 55.0, 2.5}, {"backward", 45.0, 1.4}};
  return r;
}
double compile_speedup(const CompileRow& r) { return r.fa3_s / r.fa4_s; }


// ---- 5. the scheduling failure lab ----------------------------------------------------------------------
const char* sched_error_name(SchedError e) {
  switch (e) {
    case SchedError::kOk: return "ok";
    case SchedError::kLongestNotFirst: return "longest_not_first";
    case SchedError::kNotBalanced: return "not_balanced";
    case SchedError::kOtherTileOrder: return "other_tile_order";
    case SchedError::kVarlenNotSorted: return "varlen_not_sorted";
    case SchedError::kTurnDeadlock: return "turn_deadlock";
    case SchedError::kFirstWriterStalls: return "first_writer_stalls";
  }
  return "?";
}

SchedError check_longest_first(const std::vector<int>& costs, const std::vector<int>& order) {
  for (size_t i = 1; i < order.size(); ++i)
    if (costs[order[i]] > costs[order[i - 1]]) return SchedError::kLongestNotFirst;
  return SchedError::kOk;
}

SchedError check_balanced(const std::vector<long>& loads, long lower_bound) {
  return *std::max_element(loads.begin(), loads.end()) > lower_bound ? SchedError::kNotBalanced : SchedError::kOk;
}

SchedError check_same_order(const std::vector<TileCoord>& a, const std::vector<TileCoord>& b, int* differ) {
  int n = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i].m_block != b[i].m_block || a[i].head != b[i].head || a[i].batch != b[i].batch) ++n;
  n += static_cast<int>(std::max(a.size(), b.size()) - std::min(a.size(), b.size()));
  if (differ) *differ = n;
  return n ? SchedError::kOtherTileOrder : SchedError::kOk;
}

std::vector<TileCoord> fa4_clc_order(int num_m_blocks, int heads, int n) {
  // The FA4 forward's scheduler warp turns a cancelled CTA's index into a tile with fa4::tile_at
  // (src/sm100/fa4_fwd.cuh): the causal LPT reversal, no L2 section. One row per work tile.
  std::vector<TileCoord> v;
  const int rows = num_m_blocks * fa4::tile_rows(1);
  for (int i = 0; i < n; ++i) {
    const fa4::Tile t = fa4::tile_at(i, num_m_blocks, heads, heads, 1, true, rows, rows, 1);
    v.push_back({t.m_block, t.head, t.batch});
  }
  return v;
}

std::vector<TileCoord> sectioned_order(int num_m_blocks, int heads, int section, int n) {
  std::vector<TileCoord> v;
  for (int i = 0; i < n; ++i) v.push_back(tile_from_linear_sectioned(i, num_m_blocks, heads, 1, section));
  return v;
}

VarlenListing varlen_listing(const std::vector<int>& seqlens, bool causal, bool prefix_sums_only) {
  std::vector<int32_t> cu(seqlens.size() + 1, 0);
  for (size_t b = 0; b < seqlens.size(); ++b) cu[b + 1] = cu[b] + seqlens[b];
  auto table = std::make_unique<fa3::FwdVarlenTable>();
  const int n = static_cast<int>(seqlens.size()), bm = 128, bn = 128;
  build_varlen_table(cu.data(), cu.data(), n, 1, bm, bn, causal, table.get());
  if (prefix_sums_only) {
    // The mutation: the same sequences listed in the caller's order (their packed offsets ascending),
    // tile prefixes recomputed for that order.
    std::sort(table->seq, table->seq + table->num_seqs,
              [](const fa3::VarlenSeq& a, const fa3::VarlenSeq& b) { return a.q_start < b.q_start; });
    int prefix = 0;
    for (int s = 0; s < table->num_seqs; ++s) {
      table->tile_prefix[s] = prefix;
      prefix += ceil_div(table->seq[s].len_q, bm);
    }
    table->tile_prefix[table->num_seqs] = prefix;
  }
  VarlenListing out;
  for (int s = 0; s < table->num_seqs; ++s) {
    const fa3::VarlenSeq& q = table->seq[s];
    out.batch.push_back(static_cast<int>(std::find(cu.begin(), cu.end(), q.q_start) - cu.begin()));
    out.key.push_back(varlen_longest_tile(q.len_q, q.len_k, bm, bn, causal));
  }
  return out;
}

SchedError check_varlen_longest_first(const VarlenListing& v) {
  for (size_t i = 1; i < v.key.size(); ++i)
    if (v.key[i] > v.key[i - 1]) return SchedError::kVarlenNotSorted;
  return SchedError::kOk;
}

TurnSim simulate_dq_turns(int n_blocks, int resident, bool lpt_turns, bool lpt_dispatch) {
  // Square causal problem, block_m = block_n = 128: key block n visits query tiles n .. M-1 (M =
  // n_blocks), ascending from its diagonal, as fa3_bwd.cuh's walk.
  const int M = n_blocks, blk = 128, S = M * blk;
  struct Cta { int n = -1, m = 0, ready = 0; bool done = false; };
  std::vector<Cta> slots;
  std::vector<writer_order::OrderedSemaphore> sem(static_cast<size_t>(M));
  int next = 0;  // next blockIdx.x to dispatch
  auto key_block = [&](int bx) { return lpt_dispatch ? bx : M - 1 - bx; };
  auto lock = [&](int n, int m) {
    return lpt_turns ? n : writer_order::lock_causal_spt(n, causal_n_blocks(m, blk, blk, S, S));
  };
  auto dispatch = [&](Cta& c, int t) {
    c = Cta{};
    if (next >= M) { c.done = true; return; }
    c.n = key_block(next++);
    c.m = c.n;
    c.ready = t + 1;  // its first tile computed one unit after it starts
  };
  TurnSim r;
  slots.resize(static_cast<size_t>(std::min(resident, M)));
  for (Cta& c : slots) dispatch(c, 0);
  for (int t = 1;; ++t) {
    bool progress = true, live = false;
    while (progress) {  // adds at time t may open turns for other CTAs at the same time
      progress = false;
      for (Cta& c : slots) {
        if (c.done || c.ready > t) continue;
        if (!sem[c.m].ready(lock(c.n, c.m))) continue;
        sem[c.m].arrive_inc();
        progress = true;
        if (++c.m == M) {
          ++r.completed;
          r.makespan = t;
          dispatch(c, t);
        } else {
          c.ready = t + 1;
        }
      }
    }
    for (const Cta& c : slots)
      if (!c.done) {
        live = true;
        if (c.ready <= t) ++r.idle;  // computed, waiting for its turn through this unit
      }
    if (!live) break;
    bool can_move = false;  // a CTA still computing will reach a new state; otherwise nothing changes
    for (const Cta& c : slots)
      if (!c.done && c.ready > t) can_move = true;
    if (!can_move) { r.deadlock = true; break; }
  }
  return r;
}

SchedError check_turns(const TurnSim& s) {
  if (s.deadlock) return SchedError::kTurnDeadlock;
  return s.idle > 0 ? SchedError::kFirstWriterStalls : SchedError::kOk;
}

// ---- ledger --------------------------------------------------------------------------------------------
static void print_jm(std::FILE* o) {
  std::fprintf(o, "causal J_m = causal_n_blocks(m, M, N, S_q, S_k): the K/V blocks query block m must visit\n");
  std::fprintf(o, "(M, N = query and key block rows; S_q, S_k = sequence lengths; one J_m per query block m = 0, 1, ...)\n");
  struct Shape { int M, N, sq, sk; };
  const Shape shapes[] = {{128, 128, 768, 768}, {128, 64, 512, 512}, {128, 128, 300, 300}, {128, 128, 256, 768}};
  for (const Shape& s : shapes) {
    const int nm = ceil_div(s.sq, s.M);
    std::fprintf(o, "M=%d N=%d S_q=%d S_k=%d (non-causal %d):  J_m =", s.M, s.N, s.sq, s.sk, n_blocks(s.N, s.sk));
    for (int c : causal_costs(nm, s.M, s.N, s.sq, s.sk)) std::fprintf(o, " %d", c);
    std::fprintf(o, "\n");
  }
}

static void print_makespan(std::FILE* o) {
  const auto costs = causal_costs(6, 128, 128, 768, 768);  // [1..6]
  std::fprintf(o, "six causal query blocks, cost J_m = [1..6], three first-free workers\n");
  std::fprintf(o, "columns: order = the tile order; m sequence = query blocks in issue order; worker loads =\n"
                  "         K/V blocks each worker processed; makespan = the busiest worker's load (K/V blocks)\n");
  std::fprintf(o, "order               m sequence     worker loads  makespan\n");
  for (bool lpt : {false, true}) {
    const auto ord = tile_order(6, lpt);
    const auto s = list_schedule(costs, ord, 3);
    std::fprintf(o, "%-19s", lpt ? "LPT (longest_first)" : "lexical");
    for (int m : ord) std::fprintf(o, " %d", m);
    std::fprintf(o, "    %d, %d, %d       %d\n", s.loads[0], s.loads[1], s.loads[2], s.makespan);
  }
  std::fprintf(o, "lower bound max(21/3, 6) = %d\n", makespan_lower_bound(costs, 3));
}

static void print_l2(std::FILE* o) {
  std::fprintf(o, "H_section * S_k (d_qk + d_v) b <= L2 budget; d = 128, BF16, budget 50 MiB (beta23), 16 heads\n");
  std::fprintf(o, "columns: S_k = keys; W_KV/head = K and V bytes of one head; heads fitting = budget / W_KV\n"
                  "         (at most 16); section = heads scheduled together (heads_per_l2_section, power of two)\n");
  std::fprintf(o, "S_k      W_KV/head     heads fitting   section (power of two)\n");
  const long long budget = 50LL * 1024 * 1024;
  for (long long sk : {1024LL, 8192LL, 32768LL, 131072LL}) {
    const long long w = sk * 256 * 2;
    std::fprintf(o, "%-7lld  %7.2f MiB   %13lld   %d\n", sk, w / 1048576.0, std::min(16LL, budget / w),
                 heads_per_l2_section(sk, 128, 128, 2, budget, 16));
  }
}

static void print_varlen(std::FILE* o) {
  const std::vector<int> lens = {128, 768, 256, 512};
  const auto map = varlen_map(lens, 128);
  std::fprintf(o, "lengths [128, 768, 256, 512], M = 128\n");
  std::fprintf(o, "virtual batch = the scheduler's order (longest first); actual batch = the sequence it maps to;\n"
                  "worktiles = query blocks of M rows in that sequence\n");
  std::fprintf(o, "virtual batch:");
  for (size_t v = 0; v < map.size(); ++v) std::fprintf(o, " %zu", v);
  std::fprintf(o, "\nactual batch: ");
  for (int a : map) std::fprintf(o, " %d", a);
  std::fprintf(o, "\nworktiles:    ");
  for (int a : map) std::fprintf(o, " %d", ceil_div(lens[a], 128));
  std::fprintf(o, "\n");
}

static void print_flops(std::FILE* o) {
  std::fprintf(o, "B = 32, S_q = S_k = 1024, H = 16, d = 128: 4 * B * S^2 * H * d = %.0f FLOPs\n",
               fwd_flops_dense(32, 16, 1024, 128));
  std::fprintf(o, "columns: counted FLOPs = the numerator each mode uses (causal = dense / 2, backward = 2.5 x\n"
                  "         forward); time = a synthetic interval (ms), not a measurement; TFLOP/s = FLOPs / time\n");
  std::fprintf(o, "mode              counted FLOPs   time     TFLOP/s\n");
  for (const FlopRow& r : flop_reconciliation())
    std::fprintf(o, "%-16s  %9.3fe9    %.2f ms  %8.2f\n", r.mode, r.flops / 1e9, r.ms, r.tflops);
  std::fprintf(o, "exact causal pairs S(S+1)/2 = %lld (vs S^2/2 = %lld); exact numerator %.3fe9\n",
               (long long)causal_valid_pairs(1024, 1024), 1024LL * 1024 / 2,
               fwd_flops_causal_exact(32, 16, 1024, 1024, 128, 128) / 1e9);
}

FLASHPTX_LEDGER("0x0B", "causal tile cost J_m", print_jm);
FLASHPTX_LEDGER("0x0B", "lexical versus LPT makespan", print_makespan);
FLASHPTX_LEDGER("0x0B", "L2 head-section rule", print_l2);

BwdWorkingSet bwd_working_set(long long seqlen, int head_dim, long long n_blocks, long long pairs, long long resident,
                              bool rank_major) {
  const long long ctas = std::min(resident, n_blocks * pairs);
  BwdWorkingSet w;
  w.pairs_in_flight = rank_major ? std::min(pairs, ctas) : std::min(pairs, (ctas + n_blocks - 1) / n_blocks);
  const double per_pair = static_cast<double>(seqlen) * head_dim * (2 + 2 + 2 + 2 + 4) + seqlen * 8.0;
  w.bytes = w.pairs_in_flight * per_pair;
  return w;
}

// The mutation row "globally sort all heads and batches by cost" on our backward: the deterministic
// causal dispatch read as (rank, pair) instead of head-major, measured on the H200 (2026-11-30, kernel
// time): d256 causal 8k 353 -> 178 TFLOP/s, d128 causal 8k 531 -> 344
// (docs/DECISIONS.md, "Rank-major deterministic dispatch").
static void print_bwd_l2(std::FILE* o) {
  std::fprintf(o, "FA3 backward working set in flight, 132 resident CTAs (one per SM), 60 MiB L2 (H200);\n"
                  "columns: d, S = head dim and seqlen (16k tokens, hidden 2048); N = key blocks per pair; pairs =\n"
                  "(batch, head) pairs; order: head-major (the kernel) or rank-major (the mutation); in flight =\n"
                  "pairs with CTAs resident; MiB = their Q, dO, K, V, dQ accumulator, LSE and delta\n");
  std::fprintf(o, "%-4s %-6s %-4s %-5s %-11s %9s %9s  %s\n", "d", "S", "N", "pairs", "order", "in flight", "MiB",
               "fits L2");
  struct Shape { int d; long long s, n; };
  for (const Shape& x : {Shape{128, 8192, 64}, Shape{256, 8192, 128}}) {
    const long long pairs = (16384 / x.s) * (2048 / x.d);
    for (bool rank_major : {false, true}) {
      const BwdWorkingSet w = bwd_working_set(x.s, x.d, x.n, pairs, 132, rank_major);
      const double mib = w.bytes / 1048576.0;
      std::fprintf(o, "%-4d %-6lld %-4lld %-5lld %-11s %9lld %9.0f  %s\n", x.d, x.s, x.n, pairs,
                   rank_major ? "rank-major" : "head-major", w.pairs_in_flight, mib, mib <= 60 ? "yes" : "no");
    }
  }
  std::fprintf(o, "measured (H200, deterministic causal backward, kernel time): rank-major d128 8k 531 -> 344,\n"
                  "d256 8k 353 -> 178 TFLOP/s: the mutation's 'arithmetic tail may shrink' did not pay for the L2\n");
}
FLASHPTX_LEDGER("0x0B", "failure lab: backward heads sorted globally (L2 working set)", print_bwd_l2);
FLASHPTX_LEDGER("0x0B", "varlen virtual-to-actual batch map", print_varlen);

// printf into a std::string (the table cells below).
static std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
static std::string fmt(const char* f, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

// The scheduling failure lab: five claims a description of a schedule makes, each checked on the
// schedule our code builds; each claim beside the correct statement, which passes.
static void print_claims(std::FILE* o) {
  std::fprintf(o, "columns: claim = what a description says of one of our schedules (* = the mutation, a wrong\n"
                  "         claim; the line under it = the correct one); evidence = the schedule built by the code\n"
                  "         that runs it (costs and loads in K/V blocks; tiles as (m_block, head)); verdict = the\n"
                  "         check's named reason, ok when the claim holds\n");
  auto row = [&](bool mutation, const char* claim, const std::string& evidence, SchedError e) {
    print_claim_row(o, mutation, 61, claim, 42, evidence, sched_error_name(e));
  };
  auto list = [](const std::vector<int>& v) {
    std::string s;
    for (int x : v) {
      if (!s.empty()) s += ' ';
      s += std::to_string(x);
    }
    return s;
  };
  // 1. increasing m_block order called LPT (costs 1..6, three first-free workers)
  const auto costs = causal_costs(6, 128, 128, 768, 768);
  for (bool lpt : {false, true}) {
    const auto ord = tile_order(6, lpt);
    std::vector<int> c;
    for (int m : ord) c.push_back(costs[m]);
    const ListSchedule ls = list_schedule(costs, ord, 3);
    row(!lpt, lpt ? "m_block reversed (longest_first) is LPT" : "m_block increasing (tile_from_linear) is LPT",
        fmt("costs %s; makespan %d, bound %d", list(c).c_str(), ls.makespan, makespan_lower_bound(costs, 3)),
        check_longest_first(costs, ord));
  }
  // 2. grid-stride persistence called balanced: the same six tiles on three persistent CTAs
  const persistent::CausalProblem p{6, 1, 1, 128, 128, 768, 768};
  const long bound = persistent::lower_bound(p, 3);
  const auto rr = persistent::loads_round_robin(p, 3), pr = persistent::loads_paired(p, 3);
  auto loads = [&](const std::vector<long>& v) {
    std::vector<int> w(v.begin(), v.end());
    return fmt("loads %s; bound %ld", list(w).c_str(), bound);
  };
  row(true, "grid-stride over the LPT order balances (3 CTAs)", loads(rr), check_balanced(rr, bound));
  row(false, "the paired static schedule (paired_slot) balances", loads(pr), check_balanced(pr, bound));
  // 3. the FA4 CLC scheduler's order called the L2-sectioned map: 4 m_blocks, 4 heads, section 2
  auto tiles = [](const std::vector<TileCoord>& v, size_t n) {
    std::string s;
    for (size_t i = 0; i < n && i < v.size(); ++i) s += fmt("(%d,%d)", v[i].m_block, v[i].head);
    return s;
  };
  const auto clc = fa4_clc_order(4, 4, 16), sec = sectioned_order(4, 4, 2, 16);
  int differ = 0;
  const SchedError e3 = check_same_order(clc, sec, &differ);
  row(true, "FA4 CLC hands out tiles in the L2-sectioned order", fmt("%d of 16 positions differ", differ), e3);
  std::fprintf(o, "    first six: fa4::tile_at %s; tile_from_linear_sectioned %s\n", tiles(clc, 6).c_str(),
               tiles(sec, 6).c_str());
  row(false, "FA4 CLC hands out tiles in fa4::tile_at order", "0 of 16 positions differ",
      check_same_order(clc, fa4_clc_order(4, 4, 16), nullptr));
  // 4. varlen prefix sums called the longest-first sort: lengths [128, 768, 256, 512], causal, M = 128
  const std::vector<int> lens = {128, 768, 256, 512};
  const VarlenListing unsorted = varlen_listing(lens, true, true), kernel = varlen_listing(lens, true, false);
  row(true, "prefix sums in metadata order are longest-first",
      fmt("batches %s, keys %s", list(unsorted.batch).c_str(), list(unsorted.key).c_str()),
      check_varlen_longest_first(unsorted));
  row(false, "build_varlen_table's sorted table is longest-first",
      fmt("batches %s, keys %s", list(kernel.batch).c_str(), list(kernel.key).c_str()), check_varlen_longest_first(kernel));
  // 5. the forward's LPT applied to the deterministic dQ turns: 8 key blocks of one head
  auto sim = [](const TurnSim& t) {
    return t.deadlock ? fmt("deadlock after %d of 8 CTAs", t.completed)
                      : fmt("makespan %d, idle %ld", t.makespan, t.idle);
  };
  const TurnSim lpt_kernel = simulate_dq_turns(8, 4, true, false), lpt_both = simulate_dq_turns(8, 8, true, true),
                spt = simulate_dq_turns(8, 4, false, false);
  row(true, "LPT turns (lock = n) with the kernel's dispatch, 4 resident", sim(lpt_kernel), check_turns(lpt_kernel));
  row(true, "LPT turns and LPT dispatch, all 8 resident", sim(lpt_both), check_turns(lpt_both));
  row(false, "lock_causal_spt, reversed dispatch (the kernel), 4 resident", sim(spt), check_turns(spt));
  std::fprintf(o, "dQ turns: lockstep model, one time unit per query tile; idle = CTA-units spent computed but\n"
                  "waiting for the turn; the fp32 order of each dQ tile's adds is the lock order, so the LPT rows\n"
                  "also sum in a different order from the kernel's\n");
}
FLASHPTX_LEDGER("0x0B", "failure lab: scheduling claims checked on our schedules", print_claims);

FLASHPTX_LEDGER("0x0D", "FLOP numerators and accounting throughput", print_flops);

static void print_compile(std::FILE* o) {
  std::fprintf(o, "source-reported (FA4 paper Table 4): developer compile time of one kernel, seconds; not measured\n"
                  "here, and not kernel time, first-call latency or a package build\n");
  std::fprintf(o, "columns: FA3 = C++ templates (s); FA4 = CuTe DSL (s); speedup = FA3 / FA4\n");
  std::fprintf(o, "%-10s %8s %8s %9s\n", "kernel", "FA3 s", "FA4 s", "speedup");
  for (const CompileRow& r : compile_times())
    std::fprintf(o, "%-10s %8.1f %8.1f %8.2fx\n", r.pass, r.fa3_s, r.fa4_s, compile_speedup(r));
  std::fprintf(o, "the paper rounds the backward %.2fx to 32x; its 20-30x faster-iteration claim rests on these two ratios\n",
               compile_speedup(compile_times()[1]));
}
FLASHPTX_LEDGER("0x0D", "FA4 compile time: C++ templates vs CuTe DSL", print_compile);

}  // namespace flashptx::models::scheduling
