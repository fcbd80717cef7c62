// Scheduling and FLOP accounting oracles (docs/PROTOCOLS.md, "Scheduling" and "Evidence");
// see scheduling_model.cpp.
#pragma once
#include <string>
#include <vector>

#include "src/protocol/tile_scheduler.h"

namespace flashptx::models::scheduling {

struct ListSchedule { std::vector<int> loads; int makespan = 0; };
// First-free list scheduling of tiles (indices into costs) in the given order.
ListSchedule list_schedule(const std::vector<int>& costs, const std::vector<int>& order, int workers);
int makespan_lower_bound(const std::vector<int>& costs, int workers);  // max(ceil(sum/P), max)
std::vector<int> causal_costs(int num_m_blocks, int block_m, int block_n, int seqlen_q, int seqlen_k);
// m_block sequence of tile_from_linear over one (head, batch).
std::vector<int> tile_order(int num_m_blocks, bool longest_first);
std::vector<int> varlen_map(const std::vector<int>& seqlens, int block_m);

struct FlopRow { const char* mode; double flops; double ms; double tflops; };
std::vector<FlopRow> flop_reconciliation();

// FA4 paper Table 4 (source-reported developer compile time of one kernel, seconds): FA3's C++
// templates against FA4's CuTe DSL. Speedup = FA3 time / FA4 time; compile time, not kernel time.
struct CompileRow { const char* pass; double fa3_s, fa4_s; };
const std::vector<CompileRow>& compile_times();
double compile_speedup(const CompileRow& r);

// The FA3 backward's working set under a dispatch order (the 0x0B mutation "globally sort all heads
// and batches": unrelated working sets thrash L2). One CTA per key block and (batch, head) pair,
// dispatched in linear order; `resident` CTAs in flight. Head-major (the kernel's grid: key blocks
// fastest) keeps the pairs of the first `resident` CTAs, ceil(resident / n_blocks) of them; rank-major
// (every pair's CTAs of one rank side by side, reverted: docs/DECISIONS.md, "Rank-major deterministic dispatch") has
// min(pairs, resident). Bytes per pair: Q, dO, K, V in bf16, the fp32 dQ accumulator, LSE and delta.
struct BwdWorkingSet { long long pairs_in_flight; double bytes; };
BwdWorkingSet bwd_working_set(long long seqlen, int head_dim, long long n_blocks, long long pairs, long long resident,
                              bool rank_major);

// ---- the scheduling failure lab: claims about a schedule, checked on the schedule itself -------------
// Each row of `flashptx ledger 0x0B` "failure lab: scheduling claims" states a claim about one of our
// schedules, builds the schedule with the code that runs it (tile_from_linear, paired_slot, fa4::tile_at,
// build_varlen_table, writer_order.h's locks) and checks the claim; the guide's "Scheduling" lists them.
enum class SchedError : unsigned char {
  kOk = 0,
  kLongestNotFirst,    // an order called LPT issues a cheaper tile before a dearer one
  kNotBalanced,        // a static schedule called balanced: its makespan exceeds the lower bound
  kOtherTileOrder,     // two tile maps called the same: they hand out tiles in different orders
  kVarlenNotSorted,    // a varlen table called longest-first: its sequences are in another order
  kTurnDeadlock,       // dQ writers wait for a turn held by a CTA that cannot be dispatched
  kFirstWriterStalls,  // dQ writers reach a tile before their turn and wait
};
const char* sched_error_name(SchedError e);

// An order of tiles (indices into costs) claimed to be longest-first: the costs must not increase.
SchedError check_longest_first(const std::vector<int>& costs, const std::vector<int>& order);
// A schedule's per-worker loads claimed to be balanced: makespan == makespan lower bound of `costs`.
SchedError check_balanced(const std::vector<long>& loads, long lower_bound);
// Two tile maps claimed to be one: `differ` = positions at which they hand out different tiles.
SchedError check_same_order(const std::vector<TileCoord>& a, const std::vector<TileCoord>& b, int* differ);
// The first `n` tiles of a map, in issue order.
std::vector<TileCoord> fa4_clc_order(int num_m_blocks, int heads, int n);             // fa4::tile_at, causal
std::vector<TileCoord> sectioned_order(int num_m_blocks, int heads, int section, int n);  // tile_from_linear_sectioned

// Varlen: the sequences of a forward varlen table (src/plan.cpp build_varlen_table, the kernel's
// table) in listed order, with each one's sort key (K/V blocks of its longest tile). The mutation
// `prefix_sums_only` rebuilds the same table in the caller's (metadata) order: tiles are still found by
// their prefix sums, but nothing is sorted.
struct VarlenListing { std::vector<int> batch, key; };
VarlenListing varlen_listing(const std::vector<int>& seqlens, bool causal, bool prefix_sums_only);
SchedError check_varlen_longest_first(const VarlenListing& v);

// Deterministic causal dQ turns (the FA3 backward: key block n = n_blocks - 1 - blockIdx.x, writer
// locks writer_order::lock_causal_spt). A lockstep model: n_blocks key-block CTAs of one (batch, head),
// square causal problem with block_m = block_n; `resident` CTAs at a time, dispatched in blockIdx
// order to the first free slot; each step computes one query tile (one time unit), then waits until
// the tile's semaphore equals the CTA's lock, adds (instantly) and moves to the next query tile.
// `lpt_turns`: the mutation, the forward's longest-first order applied to the turns (the key block with
// the most query tiles, n = 0, adds first: lock = n); `lpt_dispatch`: blockIdx.x = n (n = 0 first).
struct TurnSim { bool deadlock = false; int makespan = 0; long idle = 0; int completed = 0; };
TurnSim simulate_dq_turns(int n_blocks, int resident, bool lpt_turns, bool lpt_dispatch);
SchedError check_turns(const TurnSim& s);

}  // namespace flashptx::models::scheduling
