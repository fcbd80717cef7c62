// Persistent causal schedules compared on the CPU: the paired static schedule the forward kernel runs
// (src/protocol/tile_scheduler.h paired_slot), a static round-robin of LPT-ordered tiles, and the
// hardware's dispatch of one CTA per tile. See persistent_schedule.cpp.
#pragma once
#include <vector>

namespace flashptx::models::persistent {

struct CausalProblem {
  int num_m_blocks, heads, batch;
  int block_m, block_n, seqlen_q, seqlen_k;
};
// Per-CTA loads, in K/V blocks, of each schedule on `grid` CTAs.
std::vector<long> loads_paired(const CausalProblem& p, int grid);        // the kernel's paired_slot
std::vector<long> loads_round_robin(const CausalProblem& p, int grid);   // tile c + k G, LPT order
std::vector<long> loads_dispatch(const CausalProblem& p, int grid);      // first-free, blockIdx order
// The dynamic schedule (the kernel's TileWalk::next_dynamic): tile_from_linear_lpt order in sections
// of `section` (batch, head) pairs, each tile to the first CTA that frees (the atomic counter).
std::vector<long> loads_dynamic(const CausalProblem& p, int grid, int section);
long lower_bound(const CausalProblem& p, int grid);                      // max(ceil(sum / G), max J)
long makespan(const std::vector<long>& loads);

}  // namespace flashptx::models::persistent
