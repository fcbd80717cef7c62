// Tile order and per-tile work of the forward kernels (docs/PROTOCOLS.md, "Scheduling"; the
// FA4 paper, Zadouri et al., arXiv 2603.05451, section 3.3).
//
// A forward launch covers num_m_blocks x heads x batch output tiles. Causal attention gives tile
// m_block a K/V trip count J_m that grows with m_block, so the order in which tiles are handed out
// decides the makespan: lexical order leaves the longest tiles for the last wave, longest-
// processing-time-first (LPT) order starts them first and fills the tail with short ones (the
// worked example: costs [1..6] on 3 workers, makespan 9 lexical, 7 LPT, lower bound 7).
//
// __host__ __device__: the kernel's persistent loop calls tile_from_linear(); the CPU oracle
// (tools/models/scheduling_model.cpp) drives the same functions through the guide's worked examples.
#pragma once

#include "src/protocol/hd.h"

namespace flashptx {

struct TileCoord {
  int m_block;
  int head;
  int batch;
};

FLASHPTX_HD int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Number of output tiles of a launch.
FLASHPTX_HD int num_tiles(int num_m_blocks, int heads, int batch) { return num_m_blocks * heads * batch; }

// Linear tile index -> (m_block, head, batch). m_block varies fastest, then head, then batch.
// longest_first: causal m_blocks in descending order (m_block = num_m_blocks-1-(idx % num_m_blocks)),
// so that, for every (head, batch), the tile with the largest J_m is issued first.
FLASHPTX_HD TileCoord tile_from_linear(int idx, int num_m_blocks, int heads, int batch, bool longest_first) {
  (void)batch;
  const int m = idx % num_m_blocks;
  const int hb = idx / num_m_blocks;
  TileCoord t;
  t.m_block = longest_first ? num_m_blocks - 1 - m : m;
  t.head = hb % heads;
  t.batch = hb / heads;
  return t;
}

// K/V blocks a non-causal query block visits: ceil(seqlen_k / block_n).
FLASHPTX_HD int n_blocks(int block_n, int seqlen_k) { return seqlen_k > 0 ? ceil_div(seqlen_k, block_n) : 0; }

// K/V blocks a causal query block visits, bottom-right aligned (query row i sees keys
// j <= i + seqlen_k - seqlen_q). The visible key range of the block's last row is
// [0, min(seqlen_k, (m_block+1)*block_m + seqlen_k - seqlen_q)), rounded up to whole blocks;
// 0 when empty. For seqlen_q == seqlen_k this is the aligned causal cost
// J_m = min(ceil(S_k/N), ceil(min((m+1)M, S_q)/N)), and J_m = m+1 when M == N.
FLASHPTX_HD int causal_n_blocks(int m_block, int block_m, int block_n, int seqlen_q, int seqlen_k) {
  int hi = (m_block + 1) * block_m + seqlen_k - seqlen_q;
  if (hi > seqlen_k) hi = seqlen_k;
  if (hi <= 0) return 0;
  return ceil_div(hi, block_n);
}

// K/V blocks that query rows [row_begin, row_end) of one sequence see: the blocks one consumer
// warpgroup of a tile visits (its 64 rows), where the tile's n_max is set by the tile's last row.
// Rows at or past seqlen_q are no one's and see nothing (a ragged tile's last warpgroup may have
// none); for a causal mask the range's last visible row sets the count (bottom-right aligned, as
// causal_n_blocks). Never more than the tile's own count when [row_begin, row_end) lies in the tile.
FLASHPTX_HD int rows_n_blocks(int row_begin, int row_end, int block_n, int seqlen_q, int seqlen_k, bool causal) {
  if (row_end > seqlen_q) row_end = seqlen_q;
  if (row_begin >= row_end) return 0;
  if (!causal) return n_blocks(block_n, seqlen_k);
  int hi = row_end + seqlen_k - seqlen_q;
  if (hi > seqlen_k) hi = seqlen_k;
  if (hi <= 0) return 0;
  return ceil_div(hi, block_n);
}

// One past the rightmost key that query rows [row_begin, row_end) of one sequence see: seqlen_k
// without a causal mask, the range's last row's bound with one (bottom-right aligned); 0 when the
// range holds no row below seqlen_q or its rows see no key. The forward's consumer compares it with
// the first block it visits (Consumer::half_first): when no key of that block's right half is
// visible to any of its 64 rows, the block's QK is issued 64 columns wide (the causal diagonal of a
// 128 x 128 tile, for warpgroup 0). ceil_div(rows_key_end, block_n) == rows_n_blocks (host test);
// rows_n_blocks keeps its own body because, written as that ceil_div, ptxas scheduled the d256 and
// 192-row kernels differently (10 listings changed) for the same values.
FLASHPTX_HD int rows_key_end(int row_begin, int row_end, int seqlen_q, int seqlen_k, bool causal) {
  if (row_end > seqlen_q) row_end = seqlen_q;
  if (row_begin >= row_end) return 0;
  if (!causal) return seqlen_k > 0 ? seqlen_k : 0;
  int hi = row_end + seqlen_k - seqlen_q;
  if (hi > seqlen_k) hi = seqlen_k;
  return hi > 0 ? hi : 0;
}

// L2 section rule (the FA4 paper, section 3.3): heads whose K/V working sets, S_k (d_qk + d_v) b
// bytes each, fit the L2 budget together. Rounded down to a power of two (the head swizzle), at
// least 1, at most `heads`.
FLASHPTX_HD int heads_per_l2_section(long long seqlen_k, int d_qk, int d_v, int bytes_per_elem,
                                     long long l2_budget_bytes, int heads) {
  const long long per_head = seqlen_k * (long long)(d_qk + d_v) * bytes_per_elem;
  long long fit = per_head > 0 ? l2_budget_bytes / per_head : heads;
  if (fit > heads) fit = heads;
  if (fit < 1) fit = 1;
  int p = 1;
  while ((long long)p * 2 <= fit) p *= 2;
  return p;
}

// Longest first inside sections: `units` work units (heads, or (batch, head) pairs) of
// num_m_blocks query blocks each, grouped `section` at a time (the last group may be narrower);
// index `local` -> (m_block, unit) in the order: for section: for m_block descending: for unit in
// section. The order both functions below hand out.
FLASHPTX_HD void sectioned_lpt(int local, int num_m_blocks, int units, int section, int* m_block, int* unit) {
  const int full_tiles = num_m_blocks * section;  // tiles in one full section
  const int s = local / full_tiles;
  const int u0 = s * section;
  const int width = (units - u0) < section ? (units - u0) : section;
  const int r = local - s * full_tiles;
  *m_block = num_m_blocks - 1 - r / width;
  *unit = u0 + r % width;
}

// The FA4 paper's L2-aware LPT hierarchy:
//   for batch: for head_section: for m_block descending: for head in section
// A residual section (heads % section) comes last in each batch. Linear index -> coordinate.
FLASHPTX_HD TileCoord tile_from_linear_sectioned(int idx, int num_m_blocks, int heads, int batch,
                                                 int section) {
  (void)batch;
  const int per_batch = num_m_blocks * heads;
  TileCoord t;
  t.batch = idx / per_batch;
  sectioned_lpt(idx % per_batch, num_m_blocks, heads, section, &t.m_block, &t.head);
  return t;
}

// The dynamic causal schedule's order: the same hierarchy over (batch, head) pairs instead of the
// heads of one batch (K/V of a section's pairs sized to stay in L2 together): for section: for
// m_block descending: for pair in section. A CTA that finishes a tile takes the next index (an
// atomic counter), so the order is a greedy longest-first list schedule; the last section's
// shortest tiles fill the tail.
FLASHPTX_HD TileCoord tile_from_linear_lpt(int idx, int num_m_blocks, int heads, int batch, int section) {
  int bh = 0;
  TileCoord t;
  sectioned_lpt(idx, num_m_blocks, heads * batch, section, &t.m_block, &bh);
  t.head = bh % heads;
  t.batch = bh / heads;
  return t;
}

// ---- variable-length batches (the FA3 varlen forward, src/sm90/fa3_fwd_config.h FwdVarlenTable) --
// The host lists the sequences in schedule order and gives each its tile prefix: tile_prefix[s] =
// tiles of the sequences before s, strictly increasing (every listed sequence has a tile), with
// tile_prefix[num_seqs] the tile count. A sequence's tiles are num_m_blocks x heads, the head
// varying fastest, so that every head of the longest query block goes out before the next block.

// The sequence slot s of tile idx: the largest s with tile_prefix[s] <= idx (binary search, ceil(log2
// num_seqs) steps). idx must lie in [0, tile_prefix[num_seqs]).
FLASHPTX_HD int varlen_slot_of_tile(const int* tile_prefix, int num_seqs, int idx) {
  int lo = 0, hi = num_seqs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (tile_prefix[mid] <= idx) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// Linear tile index -> (m_block, head, slot) with slot in TileCoord::batch. longest_first: query
// blocks in descending order (the causal cost J_m grows with m), as tile_from_linear.
FLASHPTX_HD TileCoord varlen_tile_from_linear(const int* tile_prefix, int num_seqs, int heads, int idx,
                                              bool longest_first) {
  const int slot = varlen_slot_of_tile(tile_prefix, num_seqs, idx);
  const int local = idx - tile_prefix[slot];
  const int num_m_blocks = (tile_prefix[slot + 1] - tile_prefix[slot]) / heads;
  const int m = local / heads;
  TileCoord t;
  t.m_block = longest_first ? num_m_blocks - 1 - m : m;
  t.head = local % heads;
  t.batch = slot;
  return t;
}

// The K/V blocks of a sequence's longest tile (its last query block: bottom-right alignment gives
// it every key) and the key the host sorts sequences by. 0 for a sequence of no query rows.
FLASHPTX_HD int varlen_longest_tile(int len_q, int len_k, int block_m, int block_n, bool causal) {
  if (len_q <= 0) return 0;
  return causal ? causal_n_blocks(ceil_div(len_q, block_m) - 1, block_m, block_n, len_q, len_k)
                : n_blocks(block_n, len_k);
}

// Varlen LPT preprocessing (the FA4 paper's design): virtual batch v -> actual batch, sorted
// by query work tiles descending (stable: ties keep metadata order). out[v] = actual batch index.
FLASHPTX_HD void varlen_virtual_to_actual(const int* seqlens_q, int n, int block_m, int* out) {
  for (int i = 0; i < n; ++i) out[i] = i;
  for (int i = 1; i < n; ++i) {  // insertion sort, stable
    const int a = out[i];
    const int wa = ceil_div(seqlens_q[a], block_m);
    int j = i - 1;
    while (j >= 0 && ceil_div(seqlens_q[out[j]], block_m) < wa) { out[j + 1] = out[j]; --j; }
    out[j + 1] = a;
  }
}

// ---- the paired static schedule of persistent causal launches ------------------------------------
// Causal tile m of a square problem (M == N) costs J_m = m + 1 K/V blocks, so tiles m and M-1-m cost
// M + 1 together for every m: units of two such tiles are all equal, and a static round-robin of
// equal units over G persistent CTAs balances to within one unit, with no atomic counter and no
// workspace (a CTA knows its whole tile sequence from (blockIdx.x, gridDim.x)). Static round-robin
// of single LPT-ordered tiles balances worse than the hardware's own dispatch of one CTA per tile
// (docs/DECISIONS.md, "The paired causal schedule").
//
// Units enumerate (pair p, head, batch), p fastest, so that the CTAs running at one time share heads
// (K/V in L2); P = ceil(M / 2) pairs per (head, batch). Slot k = 0, 1, 2, ... of CTA c is unit
// u = c + (k / 2) G: its long tile (m = M-1-p) when k is even, its short tile (m = p) when k is odd.
// An odd M leaves the middle pair with one tile: its short slot is empty.
enum class SlotKind : int { kDone = -1, kEmpty = 0, kTile = 1 };
FLASHPTX_HD int paired_units(int num_m_blocks, int heads, int batch) {
  return ((num_m_blocks + 1) / 2) * heads * batch;
}
FLASHPTX_HD SlotKind paired_slot(int cta, int k, int grid, int num_m_blocks, int heads, int batch, TileCoord* out) {
  const int pairs = (num_m_blocks + 1) / 2;
  const int unit = cta + (k / 2) * grid;  // < 2 * tiles, which the launch keeps in int range
  if (unit >= pairs * heads * batch) return SlotKind::kDone;
  const int p = unit % pairs;
  const int long_m = num_m_blocks - 1 - p;
  if (k % 2 == 1 && p == long_m) return SlotKind::kEmpty;  // the middle tile of an odd M: one tile only
  out->m_block = k % 2 == 0 ? long_m : p;
  out->head = (unit / pairs) % heads;
  out->batch = unit / (pairs * heads);
  return SlotKind::kTile;
}

// ---- choosing a causal schedule: the makespan estimates the launch plan compares ----------------
// Key blocks the busiest CTA computes (each block is block_m x block_n), estimated for a causal
// launch of num_m_blocks query blocks per (head, batch) on `sms` CTAs at a time:
//   paired        ceil(U / G) units of the costliest unit, U = paired_units, G = min(U, sms): a
//                 CTA walks every G-th unit; units of unequal cost (block_m != block_n, an odd M's
//                 middle tile alone) are bounded by the costliest.
//   one per tile  the hardware dispatches tiles in LPT index order as SMs free up, a greedy list
//                 schedule: the total over sms, plus half the longest tile for the tail, plus half
//                 a block per tile of the busiest CTA for its launch and prologue (fitted:
//                 docs/DECISIONS.md, "Choosing the d64 causal schedule").
// What they leave out, the plan's weight per block carries (src/plan.cpp, fwd_d64_causal_choice).
FLASHPTX_HD long long paired_unit_cost_max(int num_m_blocks, int block_m, int block_n, int seqlen_q, int seqlen_k) {
  long long worst = 0;
  for (int p = 0; p < (num_m_blocks + 1) / 2; ++p) {
    const int hi = num_m_blocks - 1 - p;
    long long c = causal_n_blocks(hi, block_m, block_n, seqlen_q, seqlen_k);
    if (hi != p) c += causal_n_blocks(p, block_m, block_n, seqlen_q, seqlen_k);
    if (c > worst) worst = c;
  }
  return worst;
}
FLASHPTX_HD long long paired_makespan_blocks(int num_m_blocks, int block_m, int block_n, int seqlen_q, int seqlen_k,
                                             int heads, int batch, int sms) {
  const long long units = static_cast<long long>((num_m_blocks + 1) / 2) * heads * batch;
  const long long g = units < sms ? units : sms;
  if (g <= 0) return 0;
  return (units + g - 1) / g * paired_unit_cost_max(num_m_blocks, block_m, block_n, seqlen_q, seqlen_k);
}
FLASHPTX_HD long long one_per_tile_makespan_blocks(int num_m_blocks, int block_m, int block_n, int seqlen_q,
                                                   int seqlen_k, int heads, int batch, int sms) {
  long long total = 0, longest = 0;
  for (int m = 0; m < num_m_blocks; ++m) {
    const long long c = causal_n_blocks(m, block_m, block_n, seqlen_q, seqlen_k);
    total += c;
    if (c > longest) longest = c;
  }
  total *= static_cast<long long>(heads) * batch;
  if (sms <= 0) return 0;
  const long long tiles = static_cast<long long>(num_m_blocks) * heads * batch;
  return (total + sms - 1) / sms + longest / 2 + (tiles + sms - 1) / sms / 2;
}

}  // namespace flashptx
