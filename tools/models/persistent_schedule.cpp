// Persistent causal scheduling on the CPU: `flashptx ledger 0x0B` ("paired static schedule") and
// tests/host/test_models_persistent.cpp (docs/PROTOCOLS.md, "Scheduling").
//
// What this file certifies, driving the kernel's own functions (src/protocol/tile_scheduler.h):
//   1. paired_slot visits every causal tile exactly once for any grid, odd or even M.
//   2. On a square problem its units cost M + 1 blocks each, so the per-CTA loads differ by at most
//      one unit and the makespan is within one unit of the lower bound.
//   3. Against the two schedules it replaces: a static round-robin of LPT-ordered tiles (what the
//      persistent grid ran for causal masks before, measured worse than one CTA per tile) and the
//      hardware's first-free dispatch of one CTA per tile (modelled as list scheduling in blockIdx
//      order; each CTA then also pays a launch, a prologue and an unoverlapped epilogue per tile,
//      which this block count leaves out).
#include "tools/models/persistent_schedule.h"

#include <algorithm>
#include <cstdio>

#include "src/protocol/tile_scheduler.h"
#include "tools/models/ledger.h"
#include "tools/models/scheduling_model.h"

namespace flashptx::models::persistent {

static int cost(const CausalProblem& p, int m) {
  return causal_n_blocks(m, p.block_m, p.block_n, p.seqlen_q, p.seqlen_k);
}

std::vector<long> loads_paired(const CausalProblem& p, int grid) {
  std::vector<long> loads(grid, 0);
  for (int c = 0; c < grid; ++c)
    for (int k = 0;; ++k) {
      TileCoord t;
      const SlotKind s = paired_slot(c, k, grid, p.num_m_blocks, p.heads, p.batch, &t);
      if (s == SlotKind::kDone) break;
      if (s == SlotKind::kTile) loads[c] += cost(p, t.m_block);
    }
  return loads;
}

std::vector<long> loads_round_robin(const CausalProblem& p, int grid) {
  std::vector<long> loads(grid, 0);
  const int tiles = num_tiles(p.num_m_blocks, p.heads, p.batch);
  for (int i = 0; i < tiles; ++i)
    loads[i % grid] += cost(p, tile_from_linear(i, p.num_m_blocks, p.heads, p.batch, true).m_block);
  return loads;
}

// The list schedule of the tiles in the order `at` gives (linear index -> tile) on `grid` CTAs: each
// tile to the first CTA that frees (scheduling_model.h list_schedule).
template <class Order>
static std::vector<long> loads_in_order(const CausalProblem& p, int grid, Order at) {
  const int tiles = num_tiles(p.num_m_blocks, p.heads, p.batch);
  std::vector<int> costs(tiles), order(tiles);
  for (int i = 0; i < tiles; ++i) {
    costs[i] = cost(p, at(i).m_block);
    order[i] = i;
  }
  const scheduling::ListSchedule ls = scheduling::list_schedule(costs, order, grid);
  return std::vector<long>(ls.loads.begin(), ls.loads.end());
}

std::vector<long> loads_dispatch(const CausalProblem& p, int grid) {
  // The hardware's dispatch of one CTA per tile, in blockIdx order, to the first free SM.
  return loads_in_order(p, grid, [&](int i) { return tile_from_linear(i, p.num_m_blocks, p.heads, p.batch, true); });
}

std::vector<long> loads_dynamic(const CausalProblem& p, int grid, int section) {
  // The kernel's CTAs start with tiles 0 .. grid-1 (blockIdx.x) and each later fetch hands the next
  // index to the CTA that asked first, i.e. the one that finished first: the list schedule of the
  // tiles in tile_from_linear_lpt order.
  return loads_in_order(p, grid, [&](int i) {
    return tile_from_linear_lpt(i, p.num_m_blocks, p.heads, p.batch, section);
  });
}

long lower_bound(const CausalProblem& p, int grid) {
  std::vector<int> costs;
  for (int i = 0; i < num_tiles(p.num_m_blocks, p.heads, p.batch); ++i)
    costs.push_back(cost(p, i % p.num_m_blocks));
  return scheduling::makespan_lower_bound(costs, grid);
}

long makespan(const std::vector<long>& loads) { return *std::max_element(loads.begin(), loads.end()); }

static void print_paired(std::FILE* o) {
  std::fprintf(o, "Causal forward tiles on 132 persistent CTAs (one H200), 16k tokens, hidden 2048, M = N = 128.\n");
  std::fprintf(o, "Columns: makespan in K/V blocks (the busiest CTA's blocks; lower is better) of the paired static\n");
  std::fprintf(o, "schedule the kernel runs, a static round-robin of LPT-ordered tiles, the hardware's first-free\n");
  std::fprintf(o, "dispatch of one CTA per tile (per-tile launch and epilogue costs not counted), the dynamic\n");
  std::fprintf(o, "schedule (an atomic counter, longest-first in sections of 64 (batch, head) pairs; the kernel sizes\n");
  std::fprintf(o, "its sections by L2), and the lower bound max(ceil(total / 132), longest tile).\n");
  std::fprintf(o, "d    seqlen  tiles   paired  round-robin  dispatch  dynamic  lower bound\n");
  for (int d : {64, 128})
    for (int s : {512, 1024, 2048, 4096}) {
      const CausalProblem p{(s + 127) / 128, 2048 / d, 16384 / s, 128, 128, s, s};
      std::fprintf(o, "%-4d %-7d %-7d %-7ld %-12ld %-9ld %-8ld %ld\n", d, s, num_tiles(p.num_m_blocks, p.heads, p.batch),
                   makespan(loads_paired(p, 132)), makespan(loads_round_robin(p, 132)),
                   makespan(loads_dispatch(p, 132)), makespan(loads_dynamic(p, 132, 64)), lower_bound(p, 132));
    }
}

FLASHPTX_LEDGER("0x0B", "paired static schedule of persistent causal tiles", print_paired);

}  // namespace flashptx::models::persistent
