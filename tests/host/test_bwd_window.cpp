// The FA3 backward's sliding-window walk and its deterministic dQ writer order
// (src/protocol/bwd_window.h), against a brute-force visibility of every (query row, key): each key
// block visits exactly the query blocks holding a row that sees one of its keys, in the order head
// (masked), middle (unmasked: every real row sees every key), tail (masked); no step is marked
// unmasked where a row of the block misses a key; and the writers of each dQ tile are the
// consecutive key blocks from window_first_writer, so that lock n - first is dense 0, 1, 2, ...
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "src/protocol/bwd_window.h"

namespace bw = flashptx::bwd_window;

namespace {

struct Shape {
  int len_q, len_k, left, right, block_m, block_n;
  std::string str() const {
    return "len_q " + std::to_string(len_q) + " len_k " + std::to_string(len_k) + " window (" + std::to_string(left) +
           ", " + std::to_string(right) + ") blocks " + std::to_string(block_m) + "x" + std::to_string(block_n);
  }
};

// FlashAttention's rule, written out: row i sees key j iff i + diag - left <= j <= i + diag + right.
bool sees(const Shape& s, int i, int j) {
  const int diag = s.len_k - s.len_q;
  if (j < 0 || j >= s.len_k || i < 0 || i >= s.len_q) return false;
  if (s.left >= 0 && j < i + diag - s.left) return false;
  if (s.right >= 0 && j > i + diag + s.right) return false;
  return true;
}

void check_shape(const Shape& s) {
  INFO(s.str());
  const int diag = s.len_k - s.len_q;
  const int lo = bw::window_lo(diag, s.left), hi = bw::window_hi(diag, s.right);
  const int m_blocks = (s.len_q + s.block_m - 1) / s.block_m, n_blocks = (s.len_k + s.block_n - 1) / s.block_n;
  // The mask the kernel applies matches the rule on every pair.
  for (int i = 0; i < s.len_q; ++i)
    for (int j = 0; j < s.len_k; ++j) REQUIRE(bw::window_sees(i, j, lo, hi) == sees(s, i, j));
  std::vector<std::vector<int>> writers(static_cast<size_t>(m_blocks));
  for (int n = 0; n < n_blocks; ++n) {
    const bw::WindowWalk w = bw::window_walk(n, s.block_m, s.block_n, s.len_q, s.len_k, lo, hi);
    CHECK(w.head >= 0);
    CHECK(w.middle >= 0);
    CHECK(w.tail >= 0);
    const int steps = w.head + w.middle + w.tail;
    for (int m = 0; m < m_blocks; ++m) {
      bool any = false, all = true;
      for (int i = m * s.block_m; i < (m + 1) * s.block_m; ++i)
        for (int j = n * s.block_n; j < (n + 1) * s.block_n; ++j) {
          const bool v = sees(s, i, j);
          any = any || v;
          // Unmasked: every real row of the block sees every key of the block, and every key is real.
          if (i < s.len_q && !v) all = false;
        }
      const bool visited = steps > 0 && m >= w.m_first && m < w.m_first + steps;
      CHECK_MESSAGE(visited == any, "key block " << n << ", query block " << m);
      const bool unmasked = m >= w.m_first + w.head && m < w.m_first + w.head + w.middle;
      if (unmasked) CHECK_MESSAGE(all, "key block " << n << " marks query block " << m << " unmasked");
      if (visited) writers[static_cast<size_t>(m)].push_back(n);
    }
  }
  for (int m = 0; m < m_blocks; ++m) {
    const auto& ws = writers[static_cast<size_t>(m)];
    if (ws.empty()) continue;
    const int first = bw::window_first_writer(m, s.block_m, s.block_n, lo);
    for (size_t r = 0; r < ws.size(); ++r)
      CHECK_MESSAGE(ws[r] - first == static_cast<int>(r), "dQ tile " << m << ": writer " << ws[r] << " takes lock "
                                                                        << ws[r] - first << ", its rank is " << r);
  }
}

}  // namespace

TEST_SUITE("host bwd window") {

TEST_CASE("the window walk and the dQ writer order against brute force: edges") {
  for (int bm : {64, 128})
    for (int bn : {64, 128})
      for (const auto& [lq, lk] : {std::pair{1, 1}, {1, 300}, {300, 1}, {129, 129}, {200, 333}, {333, 200}, {256, 256}})
        for (const auto& [l, r] : {std::pair{-1, -1}, {-1, 0}, {0, 0}, {0, -1}, {5, 3}, {0, 70}, {70, 0}, {127, 128},
                                   {lk - 2, lq - 2}, {lk + 5, -1}, {-1, lq + 5}, {300, 300}})
          check_shape({lq, lk, l, r, bm, bn});
}

TEST_CASE("the window walk and the dQ writer order against brute force: random shapes") {
  std::mt19937 rng(33);
  for (int it = 0; it < 300; ++it) {
    const int lq = 1 + static_cast<int>(rng() % 500), lk = 1 + static_cast<int>(rng() % 500);
    auto bound = [&](int len) { return rng() % 4 == 0 ? -1 : static_cast<int>(rng() % (len + 20)); };
    const int bm = rng() % 2 ? 64 : 128, bn = rng() % 2 ? 64 : 128;
    check_shape({lq, lk, bound(lk), bound(lq), bm, bn});
  }
}

}  // TEST_SUITE
