// Host tests of the paired static schedule (src/protocol/tile_scheduler.h paired_slot), the tile
// sequence the forward kernel's persistent causal CTAs walk, through the model of
// tools/models/persistent_schedule.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <utility>
#include <tuple>

#include "src/protocol/tile_scheduler.h"
#include "tools/models/persistent_schedule.h"

using namespace flashptx;
using namespace flashptx::models::persistent;

// A tile coordinate inside the problem's M x H x B tiles.
static void require_in_range(const TileCoord& t, int M, int H, int B) {
  REQUIRE(t.m_block >= 0);
  REQUIRE(t.m_block < M);
  REQUIRE(t.head >= 0);
  REQUIRE(t.head < H);
  REQUIRE(t.batch >= 0);
  REQUIRE(t.batch < B);
}

TEST_SUITE("host models persistent schedule") {
  TEST_CASE("paired_slot covers every tile exactly once, for odd and even M and any grid") {
    for (int M : {1, 2, 3, 7, 8, 16})
      for (int H : {1, 3, 16})
        for (int B : {1, 2, 5})
          for (int G : {1, 4, 132, 1000}) {
            INFO("M=" << M << " H=" << H << " B=" << B << " G=" << G);
            std::map<std::tuple<int, int, int>, int> seen;
            int empty = 0;
            for (int c = 0; c < G; ++c) {
              int last_k = -1;
              for (int k = 0;; ++k) {
                TileCoord t{};
                const SlotKind s = paired_slot(c, k, G, M, H, B, &t);
                if (s == SlotKind::kDone) break;
                last_k = k;
                if (s == SlotKind::kEmpty) { ++empty; continue; }
                require_in_range(t, M, H, B);
                ++seen[{t.m_block, t.head, t.batch}];
                // a unit's two slots are consecutive: the long tile first, then m = M-1-long
                if (k % 2 == 1) {
                  TileCoord l{};
                  REQUIRE(paired_slot(c, k - 1, G, M, H, B, &l) == SlotKind::kTile);
                  CHECK(l.m_block == M - 1 - t.m_block);
                  CHECK(l.head == t.head);
                  CHECK(l.batch == t.batch);
                }
              }
              // past the last unit every slot is done
              TileCoord t{};
              CHECK(paired_slot(c, last_k + 1, G, M, H, B, &t) == SlotKind::kDone);
              CHECK(paired_slot(c, last_k + 2, G, M, H, B, &t) == SlotKind::kDone);
            }
            CHECK(static_cast<int>(seen.size()) == M * H * B);
            for (const auto& [key, n] : seen) CHECK(n == 1);
            CHECK(empty == (M % 2 == 1 ? H * B : 0));
            CHECK(paired_units(M, H, B) == ((M + 1) / 2) * H * B);
          }
  }

  TEST_CASE("square problems: units of M + 1 blocks, loads within one unit, makespan near the bound") {
    for (int s : {512, 1024, 2048, 4096})
      for (int d : {64, 128}) {
        const CausalProblem p{s / 128, 2048 / d, 16384 / s, 128, 128, s, s};
        INFO("s=" << s << " d=" << d);
        const auto loads = loads_paired(p, 132);
        long lo = loads[0], hi = loads[0];
        for (long l : loads) { lo = std::min(lo, l); hi = std::max(hi, l); }
        const int unit = p.num_m_blocks + 1;  // J_m + J_{M-1-m} = (m + 1) + (M - m)
        CHECK(hi - lo <= unit);
        CHECK(makespan(loads) <= lower_bound(p, 132) + unit);
        // never worse than the round-robin of single LPT tiles it replaces
        CHECK(makespan(loads) <= makespan(loads_round_robin(p, 132)));
      }
    // the worked numbers the ledger prints for d128 1k (M = 8, 16 heads, batch 16: 2048 tiles):
    // 1024 units of 9 blocks on 132 CTAs: 7 or 8 units each, makespan 72 = lower bound ceil(9216/132) = 70 + 2
    const CausalProblem p{8, 16, 16, 128, 128, 1024, 1024};
    CHECK(makespan(loads_paired(p, 132)) == 72);
    CHECK(lower_bound(p, 132) == 70);
  }

  // The launch plan's estimates (tile_scheduler.h, paired_makespan_blocks and
  // one_per_tile_makespan_blocks, which src/plan.cpp compares for d64 causal) against the exact loads
  // of the kernel's paired walk and of the hardware's first-free dispatch.
  TEST_CASE("makespan estimates: paired bounded by the exact walk, one-per-tile by the dispatch model") {
    for (int s : {512, 830, 1024, 1500, 2048, 3000, 4096})
      for (int bm : {128, 192})
        for (const auto& [h, b] : {std::pair{32, 2}, std::pair{8, 1}, std::pair{16, 5}}) {
          const int M = (s + bm - 1) / bm;
          const CausalProblem p{M, h, b, bm, 128, s, s};
          INFO("s=" << s << " block_m=" << bm << " h=" << h << " b=" << b);
          const long exact = makespan(loads_paired(p, 132));
          const long long est = paired_makespan_blocks(M, bm, 128, s, s, h, b, 132);
          const long long unit = paired_unit_cost_max(M, bm, 128, s, s);
          CHECK(est >= exact);         // never optimistic about the walk the kernel runs
          CHECK(est <= exact + unit);  // and at most one unit pessimistic
          // equal units (128 x 128 blocks, an even M): exactly the walk's makespan
          if (bm == 128 && M % 2 == 0 && s % 128 == 0) CHECK(est == exact);
          long longest = 0;
          for (int m = 0; m < M; ++m) longest = std::max<long>(longest, causal_n_blocks(m, bm, 128, s, s));
          const long long tiles_per_cta = (static_cast<long long>(M) * h * b + 131) / 132;
          const long long one = one_per_tile_makespan_blocks(M, bm, 128, s, s, h, b, 132);
          CHECK(one >= lower_bound(p, 132) / 2);
          // the greedy dispatch finishes within the estimate's tail allowance of it
          const long dispatch = makespan(loads_dispatch(p, 132));
          CHECK(one - tiles_per_cta / 2 >= dispatch - longest);
          CHECK(one - tiles_per_cta / 2 <= dispatch + longest);
        }
  }

  TEST_CASE("bottom-right causal with seqlen_q != seqlen_k: still every tile once, loads bounded") {
    const CausalProblem p{4, 8, 3, 128, 128, 512, 1000};  // 512 queries against 1000 keys
    const auto loads = loads_paired(p, 16);
    long total = 0;
    for (long l : loads) total += l;
    long expect = 0;
    for (int m = 0; m < 4; ++m) expect += causal_n_blocks(m, 128, 128, 512, 1000) * 8 * 3;
    CHECK(total == expect);
  }

  TEST_CASE("tile_from_linear_lpt: every tile once, longest first inside each section of (batch, head) pairs") {
    for (int M : {1, 4, 7, 16})
      for (int H : {1, 3, 32})
        for (int B : {1, 2, 5})
          for (int section : {1, 2, 7, 64, 1000}) {
            INFO("M=" << M << " H=" << H << " B=" << B << " section=" << section);
            const int pairs = H * B;
            std::map<std::tuple<int, int, int>, int> seen;
            int prev_m = M, prev_section = 0;
            for (int i = 0; i < M * pairs; ++i) {
              const TileCoord t = tile_from_linear_lpt(i, M, H, B, section);
              require_in_range(t, M, H, B);
              ++seen[{t.m_block, t.head, t.batch}];
              const int s = (t.batch * H + t.head) / section;  // the pair's section
              CHECK(s >= prev_section);                        // sections in order
              if (s == prev_section) CHECK(t.m_block <= prev_m);  // longest first inside one
              prev_section = s;
              prev_m = t.m_block;
            }
            CHECK(static_cast<int>(seen.size()) == M * pairs);
            for (const auto& kv : seen) CHECK(kv.second == 1);
          }
  }

  TEST_CASE("the dynamic schedule: every block once, within one tile of the lower bound (greedy list bound)") {
    // A list schedule's makespan is at most total / G + the longest job (Graham); longest-first
    // inside sections keeps the tail to the last section's short tiles. Checked on the grid's
    // square problems (the plan's d64 causal launches) and on a shorter Q than K.
    const CausalProblem probs[] = {{4, 32, 32, 128, 128, 512, 512},   {8, 32, 16, 128, 128, 1024, 1024},
                                   {16, 32, 8, 128, 128, 2048, 2048}, {7, 32, 2, 128, 128, 830, 830},
                                   {6, 4, 3, 128, 128, 700, 1000}};
    for (const CausalProblem& p : probs)
      for (int section : {1, 16, 64, 1024}) {
        INFO("M=" << p.num_m_blocks << " H=" << p.heads << " B=" << p.batch << " section=" << section);
        const auto loads = loads_dynamic(p, 132, section);
        long total = 0, expect = 0, longest = 0;
        for (long l : loads) total += l;
        for (int m = 0; m < p.num_m_blocks; ++m) {
          const long c = causal_n_blocks(m, p.block_m, p.block_n, p.seqlen_q, p.seqlen_k);
          expect += c * p.heads * p.batch;
          longest = std::max(longest, c);
        }
        CHECK(total == expect);
        CHECK(makespan(loads) <= (expect + 131) / 132 + longest);
        CHECK(makespan(loads) >= lower_bound(p, 132));
      }
    // Where the paired static schedule rounds up (units not a multiple of the CTAs: 2048 units of
    // 5 blocks on 132 CTAs at d64 512), the dynamic schedule's makespan is lower.
    const CausalProblem d64_512{4, 32, 32, 128, 128, 512, 512};
    CHECK(makespan(loads_dynamic(d64_512, 132, 64)) < makespan(loads_paired(d64_512, 132)));
  }
}
