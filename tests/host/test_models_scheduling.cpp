// Host oracle tests of scheduling (tile_scheduler.h) and FLOP accounting (flops.h):
// docs/PROTOCOLS.md, "Scheduling" and "Evidence".
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <set>
#include <tuple>

#include "tools/models/flops.h"
#include "src/protocol/tile_scheduler.h"
#include "tools/models/scheduling_model.h"

using namespace flashptx;
using namespace flashptx::models::scheduling;

TEST_SUITE("host models scheduling") {
  TEST_CASE("causal J_m and non-causal n_blocks") {
    CHECK(causal_costs(6, 128, 128, 768, 768) == std::vector<int>{1, 2, 3, 4, 5, 6});
    CHECK(causal_costs(4, 128, 64, 512, 512) == std::vector<int>{2, 4, 6, 8});
    CHECK(causal_costs(3, 128, 128, 300, 300) == std::vector<int>{1, 2, 3});
    // bottom-right: 256 queries against 768 keys see the first 512 keys plus their own diagonal
    CHECK(causal_costs(2, 128, 128, 256, 768) == std::vector<int>{5, 6});
    // more queries than keys: the first rows see nothing
    CHECK(causal_n_blocks(0, 128, 128, 512, 128) == 0);
    CHECK(causal_n_blocks(3, 128, 128, 512, 128) == 1);
    CHECK(n_blocks(128, 1000) == 8);
    CHECK(n_blocks(128, 0) == 0);
    // the aligned causal cost J_m = min(ceil(Sk/N), ceil(min((m+1)M, Sq)/N)) when S_q == S_k
    for (int S : {100, 128, 777, 1024})
      for (int M : {64, 128})
        for (int N : {64, 128, 176})
          for (int m = 0; m * M < S; ++m) {
            const int a = std::min(ceil_div(S, N), ceil_div(std::min((m + 1) * M, S), N));
            CHECK(causal_n_blocks(m, M, N, S, S) == a);
          }
  }

  // The forward's per-warpgroup visit count (Consumer::own_n_blocks) against a brute force over keys:
  // the blocks a 64-row warpgroup visits are those holding a key some row of it (below seqlen_q) sees,
  // and the warpgroups of a tile together need exactly the tile's n_max.
  TEST_CASE("rows_n_blocks: brute force over rows and keys; max over a tile's warpgroups is n_max") {
    for (int sq : {1, 63, 64, 200, 512, 777})
      for (int sk : {0, 1, 100, 512, 1000})
        for (int bn : {64, 128})
          for (int bm : {128, 192})
            for (bool causal : {false, true}) {
              int skipped = 0;
              for (int m = 0; m * bm < sq; ++m) {
                const int tile = causal ? causal_n_blocks(m, bm, bn, sq, sk) : n_blocks(bn, sk);
                int widest = 0;
                for (int g = 0; g < bm / 64; ++g) {
                  const int r0 = m * bm + 64 * g;
                  int last_key = -1;  // the rightmost key any row of the warpgroup sees
                  for (int r = r0; r < std::min(r0 + 64, sq); ++r)
                    last_key = std::max(last_key, causal ? std::min(sk - 1, r + sk - sq) : sk - 1);
                  const int want = last_key < 0 ? 0 : last_key / bn + 1;
                  const int own = rows_n_blocks(r0, r0 + 64, bn, sq, sk, causal);
                  CHECK(own == want);
                  const int key_end = rows_key_end(r0, r0 + 64, sq, sk, causal);
                  CHECK(key_end == last_key + 1);
                  CHECK(ceil_div(key_end, bn) == own);
                  CHECK(own <= tile);
                  widest = std::max(widest, own);
                  skipped += tile - own;
                }
                CHECK(widest == tile);
              }
              // 128 x 128 tiles under a square causal mask: warpgroup 0's first block (the diagonal)
              // holds visible keys in its left 64 columns only; warpgroup 1's reaches the last column.
              if (causal && bm == 128 && bn == 128 && sq == sk && sq % 128 == 0)
                for (int m = 0; m * bm < sq; ++m)
                  for (int g = 0; g < 2; ++g) {
                    const int r0 = m * bm + 64 * g;
                    const int own = rows_n_blocks(r0, r0 + 64, bn, sq, sk, causal);
                    const bool half = rows_key_end(r0, r0 + 64, sq, sk, causal) <= (own - 1) * bn + bn / 2;
                    CHECK(half == (g == 0));
                  }
              // d256's 128 x 64 tiles under a square causal mask: warpgroup 0 skips one block per tile
              if (causal && bm == 128 && bn == 64 && sq == sk && sq % 128 == 0) CHECK(skipped == sq / 128);
            }
  }

  TEST_CASE("tile_from_linear: bijection; longest_first reverses m_block") {
    const int nm = 5, h = 3, b = 2;
    for (bool lf : {false, true}) {
      std::set<std::tuple<int, int, int>> seen;
      for (int i = 0; i < num_tiles(nm, h, b); ++i) {
        const TileCoord t = tile_from_linear(i, nm, h, b, lf);
        CHECK(t.m_block == (lf ? nm - 1 - i % nm : i % nm));
        CHECK(t.head == (i / nm) % h);
        CHECK(t.batch == i / (nm * h));
        seen.insert({t.m_block, t.head, t.batch});
      }
      CHECK(seen.size() == (std::size_t)num_tiles(nm, h, b));
    }
  }

  TEST_CASE("lexical makespan 9, LPT 7, lower bound 7") {
    const auto costs = causal_costs(6, 128, 128, 768, 768);
    const auto lex = list_schedule(costs, tile_order(6, false), 3);
    const auto lpt = list_schedule(costs, tile_order(6, true), 3);
    CHECK(lex.loads == std::vector<int>{5, 7, 9});
    CHECK(lex.makespan == 9);
    CHECK(lpt.loads == std::vector<int>{7, 7, 7});
    CHECK(lpt.makespan == 7);
    CHECK(makespan_lower_bound(costs, 3) == 7);
  }

  TEST_CASE("L2 section rule and sectioned order") {
    const long long budget = 50LL * 1024 * 1024;
    CHECK(heads_per_l2_section(1024, 128, 128, 2, budget, 16) == 16);
    CHECK(heads_per_l2_section(8192, 128, 128, 2, budget, 16) == 8);
    CHECK(heads_per_l2_section(32768, 128, 128, 2, budget, 16) == 2);
    CHECK(heads_per_l2_section(131072, 128, 128, 2, budget, 16) == 1);
    const int nm = 4, h = 6, b = 2, sec = 4;  // sections {0..3} and the residual {4, 5}
    std::set<std::tuple<int, int, int>> seen;
    int prev_m = nm;
    for (int i = 0; i < num_tiles(nm, h, b); ++i) {
      const TileCoord t = tile_from_linear_sectioned(i, nm, h, b, sec);
      seen.insert({t.m_block, t.head, t.batch});
      if (i < nm * sec) {  // first section of batch 0: longest m_block first, heads inside
        CHECK(t.head < sec);
        CHECK(t.m_block <= prev_m);
        prev_m = t.m_block;
      }
    }
    CHECK(seen.size() == (std::size_t)num_tiles(nm, h, b));
  }

  TEST_CASE("varlen virtual-to-actual map [1, 3, 2, 0]") {
    CHECK(varlen_map({128, 768, 256, 512}, 128) == std::vector<int>{1, 3, 2, 0});
    CHECK(varlen_map({128, 128, 256}, 128) == std::vector<int>{2, 0, 1});  // stable on ties
  }

  TEST_CASE("FLOP reconciliation: 274.878e9; 1374.39, 687.19, 1527.10, 763.55 TFLOP/s") {
    CHECK(fwd_flops_dense(32, 16, 1024, 128) == 274877906944.0);
    CHECK(fwd_flops_dense(32, 16, 1024, 1024, 128, 128) == 274877906944.0);
    const auto rows = flop_reconciliation();
    REQUIRE(rows.size() == 4);
    const double want[4] = {1374.39, 687.19, 1527.10, 763.55};
    for (int i = 0; i < 4; ++i) CHECK(rows[i].tflops == doctest::Approx(want[i]).epsilon(0.00001));
    CHECK(rows[1].flops == 137438953472.0);
    CHECK(rows[2].flops == doctest::Approx(687.195e9).epsilon(1e-5));
    CHECK(rows[3].flops == doctest::Approx(343.597e9).epsilon(1e-5));
  }

  TEST_CASE("exact causal pair count, bottom-right aligned") {
    CHECK(causal_valid_pairs(1024, 1024) == 1024LL * 1025 / 2);
    for (int sq : {1, 7, 64, 300})
      for (int sk : {1, 5, 64, 333}) {
        long long brute = 0;
        for (int i = 0; i < sq; ++i) {
          long long c = i + sk - sq + 1;
          brute += c < 0 ? 0 : (c > sk ? sk : c);
        }
        CAPTURE(sq);
        CAPTURE(sk);
        CHECK(causal_valid_pairs(sq, sk) == brute);
      }
    CHECK(fwd_flops_causal_exact(1, 1, 4, 4, 1, 1) == 2.0 * 10 * 2);
    CHECK(bwd_flops(2.0) == 5.0);
  }
}
