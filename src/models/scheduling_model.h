// Scheduling and FLOP accounting oracles (tools/guide/PROTOCOLS.md, "Scheduling" and "Evidence");
// see scheduling_model.cpp.
#pragma once
#include <vector>

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
// (every pair's CTAs of one rank side by side, tried on the H200 and reverted: tools/NOTES.md) has
// min(pairs, resident). Bytes per pair: Q, dO, K, V in bf16, the fp32 dQ accumulator, LSE and delta.
struct BwdWorkingSet { long long pairs_in_flight; double bytes; };
BwdWorkingSet bwd_working_set(long long seqlen, int head_dim, long long n_blocks, long long pairs, long long resident,
                              bool rank_major);

}  // namespace flashptx::models::scheduling
