// The FA3 backward's sliding-window walk and its deterministic dQ writer order (BwdConfig::local,
// src/sm90/fa3_bwd.cuh; docs/DECISIONS.md "The backward's window and softcap").
//
// FlashAttention's window, bottom-right aligned: query row i sees key j iff lo <= j - i <= hi, with
// lo = diag - window_left and hi = diag + window_right (diag = len_k - len_q), an unbounded side
// (-1) taken as kWindowUnbounded. Keys >= len_k are never seen.
//
// A key block n (keys [k0, k0 + bn)) is seen by query rows [k0 - hi, k1 - lo] (k1 its last real
// key, clamped to [0, len_q)), and every row of [k0 + bn - 1 - hi, k0 - lo] sees every key of a
// whole block (the block's keys all < len_k). Its walk is the query blocks meeting the first range,
// in three segments: a masked head, the unmasked middle (query blocks inside the second range), a
// masked tail. The dQ tile m's writers are then the contiguous key blocks [first_writer(m), ...]:
// both ranges are monotone in n.
//
// __host__ __device__: the kernel takes its walk and its lock from here, and the host test
// (tests/host/test_bwd_window.cpp) checks them against a brute-force visibility of every (row, key).
#pragma once
#include <cstdint>

#include "src/protocol/hd.h"  // FLASHPTX_HD

namespace flashptx::bwd_window {

// |j - i| < 2^31 for every row and key: a bound outside that range never binds.
constexpr int kWindowUnboundedLo = -2147483647 - 1;
constexpr int kWindowUnboundedHi = 2147483647;

// The offset bounds of (key - row) from the window bounds (-1: unbounded).
FLASHPTX_HD constexpr int window_lo(int diag, int window_left) {
  return window_left < 0 ? kWindowUnboundedLo : diag - window_left;
}
FLASHPTX_HD constexpr int window_hi(int diag, int window_right) {
  return window_right < 0 ? kWindowUnboundedHi : diag + window_right;
}
// Row `row` sees key `key` (key < len_k assumed). (The difference in 64 bits: the 32-bit and
// unsigned forms of this compare made ptxas spill 4 bytes in the d64 kernels' masked loops.)
FLASHPTX_HD constexpr bool window_sees(int row, int key, int lo, int hi) {
  const int64_t d = static_cast<int64_t>(key) - row;
  return d >= lo && d <= hi;
}

FLASHPTX_HD constexpr int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
FLASHPTX_HD constexpr int64_t clamp64(int64_t x, int64_t a, int64_t b) { return x < a ? a : (x > b ? b : x); }

// The walk of key block n: query blocks m_first, m_first + 1, ..., head masked steps, then middle
// unmasked ones, then tail masked ones. No step when no row sees a key of the block.
struct WindowWalk {
  int m_first, head, middle, tail;
};
FLASHPTX_HD constexpr WindowWalk window_walk(int n_block, int block_m, int block_n, int len_q, int len_k, int lo,
                                             int hi) {
  const int64_t k0 = static_cast<int64_t>(n_block) * block_n;
  const int64_t k1 = (k0 + block_n < len_k ? k0 + block_n : static_cast<int64_t>(len_k)) - 1;
  if (len_q <= 0 || k1 < k0) return WindowWalk{0, 0, 0, 0};
  const bool lo_unb = lo == kWindowUnboundedLo, hi_unb = hi == kWindowUnboundedHi;
  const int64_t r_lo = hi_unb ? 0 : clamp64(k0 - hi, 0, len_q);
  const int64_t r_hi = lo_unb ? len_q - 1 : clamp64(k1 - lo, -1, len_q - 1);
  if (r_lo > r_hi) return WindowWalk{0, 0, 0, 0};
  const int64_t m_begin = r_lo / block_m, m_end = r_hi / block_m + 1;
  int64_t mu_b = m_end, mu_e = m_end;
  if (k0 + block_n <= len_k) {
    // Query block m is unmasked iff m bm >= u_lo and m bm + bm - 1 <= u_hi (its padded rows past
    // len_q included: masking them too is never wrong, P^T is 0 there anyway).
    const int64_t u_lo = hi_unb ? 0 : k0 + block_n - 1 - hi;
    mu_b = clamp64(u_lo <= 0 ? 0 : (u_lo + block_m - 1) / block_m, m_begin, m_end);
    mu_e = lo_unb ? m_end : clamp64(floor_div(k0 - lo + 1, block_m), mu_b, m_end);
  }
  return WindowWalk{static_cast<int>(m_begin), static_cast<int>(mu_b - m_begin), static_cast<int>(mu_e - mu_b),
                    static_cast<int>(m_end - mu_e)};
}

// The first key block whose walk visits dQ tile m (tile m has a writer): the first block with a key
// >= m bm + lo. Deterministic mode: the writers of tile m add in ascending key-block order, writer n
// taking lock n - first_writer(m) (writer_order::lock_dense of the offset); every earlier writer has
// a smaller blockIdx.x and was dispatched first.
FLASHPTX_HD constexpr int window_first_writer(int m, int block_m, int block_n, int lo) {
  const int64_t first_key = static_cast<int64_t>(m) * block_m + lo;
  return first_key <= 0 ? 0 : static_cast<int>(first_key / block_n);
}

}  // namespace flashptx::bwd_window
