// Deterministic writer order for global gradient accumulation (docs/PROTOCOLS.md,
// "Deterministic writer order"; the FA4 paper, Zadouri et al., arXiv 2603.05451, section 3.2).
//
// FP32 addition is not associative, so a deterministic backward needs a declared physical order of
// reduce-adds into each dQ (or dK/dV) accumulator. Each writer owns a lock value; a per-tile
// semaphore counts completed writers; writer k waits until the semaphore equals its lock, stages,
// fences, bulk-reduces, waits for the bulk reduce to complete, and only then increments:
//
//   wait_eq(sem, lock) -> stage dQ TMEM->SMEM -> shared fence + reduction-warp barrier
//     -> bulk global reduce-add f32 -> wait bulk completion -> arrive_inc(sem)
//
// WriterProtocol checks that per-writer step order (each wrong transition has its own reason);
// OrderedSemaphore is the counter; the lock_* functions are the source's lock coordinates. A slot
// whose writer does not exist (sparse / truncated schedules) must be bridged, or every later writer
// waits forever: bridge() is that tail bridge.
//
// __host__ __device__: the FA3 backward (src/sm90/fa3_bwd.cuh) takes its lock values from here, and
// the CPU model (tools/models/fa4_backward.cpp) drives the whole protocol.
#pragma once
#include <cstdint>

#include "src/protocol/hd.h"  // FLASHPTX_HD

namespace flashptx::writer_order {

// ---- lock coordinates ----------------------------------------------------------------------------
// dense dQ: K/V tile ordinal.
FLASHPTX_HD constexpr int lock_dense(int n_block) { return n_block; }
// causal SPT dQ: valid K/V tiles in reverse writer order.
FLASHPTX_HD constexpr int lock_causal_spt(int n_block, int n_block_max_for_m_block) {
  return n_block_max_for_m_block - 1 - n_block;
}
// GQA dK/dV: query head within the shared K/V head.
FLASHPTX_HD constexpr int lock_gqa(int head_idx, int qhead_per_kvhead) {
  return head_idx % qhead_per_kvhead;
}
// dense dQ, rotated visits. In the ascending order above every key block walks the query blocks
// 0, 1, 2, ... and key block n adds each dQ tile after key block n - 1: a CTA that reaches tile m in
// step with its neighbours still waits for n earlier adds, and the last key block of a head starts
// (n_blocks - 1) add latencies late. Rotated, key block n visits query block (n + i) mod m_blocks at
// its step i, and a tile's writers add in the order of their visits: tile m is visited by key blocks
// min(m, n_blocks - 1), ..., 1, 0, then n_blocks - 1, ..., m + 1, each one step (or more) after the
// one before it, so in a lockstep walk nobody waits for a turn. The plan allows it only with
// n_blocks <= m_blocks (one writer per tile and step) and when all key blocks of a head fit on the
// GPU at once, since a writer now waits for key blocks dispatched after it (src/plan.cpp,
// dq_order_rotated_ok); and only without a causal mask, whose shortest-first order above already
// walks in step.
FLASHPTX_HD constexpr int rotated_m_block(int n_block, int step, int m_blocks) {
  return (n_block + step) % m_blocks;
}
// Key block n's lock on tile m_block (0 <= n_block < n_blocks <= m_blocks, 0 <= m_block < m_blocks):
// the number of key blocks that visit the tile at an earlier step. No division: the dQ writer runs
// at 24 registers.
FLASHPTX_HD constexpr int lock_dense_rotated(int n_block, int m_block, int n_blocks) {
  return n_block <= m_block ? (m_block < n_blocks - 1 ? m_block : n_blocks - 1) - n_block
                            : m_block + n_blocks - n_block;
}
static_assert(lock_dense_rotated(0, 0, 4) == 0 && lock_dense_rotated(3, 0, 4) == 1 &&
                  lock_dense_rotated(2, 0, 4) == 2 && lock_dense_rotated(1, 0, 4) == 3,
              "square rotated: tile 0 is visited by key blocks 0, 3, 2, 1 at steps 0..3");
static_assert(lock_dense_rotated(1, 5, 2) == 0 && lock_dense_rotated(0, 5, 2) == 1,
              "two key blocks, tile 5 of 8: key block 1 (step 4) before key block 0 (step 5)");
static_assert(lock_causal_spt(3, 4) == 0 && lock_causal_spt(2, 4) == 1 && lock_causal_spt(1, 4) == 2,
              "causal SPT locks {3:0, 2:1, 1:2} for valid writers 1..3 of 4");

// ---- the semaphore -------------------------------------------------------------------------------
struct OrderedSemaphore {
  int value = 0;
  FLASHPTX_HD bool ready(int lock) const { return value == lock; }  // wait_eq
  FLASHPTX_HD void arrive_inc() { ++value; }
  // Tail bridge: advance over the slot of a writer that does not exist in this schedule.
  FLASHPTX_HD void bridge(int missing_lock) {
    if (value == missing_lock) ++value;
  }
};

// ---- one writer's protocol -------------------------------------------------------------------------
enum class Step : uint8_t { kWaitEq, kStage, kFenceBarrier, kReduceAdd, kWaitBulk, kArriveInc };
enum class WriterError : uint8_t {
  kOk = 0,
  kStageBeforeLock,            // staged / wrote before wait_eq succeeded
  kReduceBeforeFence,          // bulk reduce-add before the shared fence and reduction barrier
  kReleaseBeforeBulkComplete,  // arrive_inc before the bulk reduce completed
  kOutOfOrder,                 // any other transition
};

FLASHPTX_HD constexpr const char* writer_error_name(WriterError e) {
  return e == WriterError::kOk                          ? "ok"
         : e == WriterError::kStageBeforeLock           ? "write before the writer's lock turn"
         : e == WriterError::kReduceBeforeFence         ? "reduce before shared fence/barrier"
         : e == WriterError::kReleaseBeforeBulkComplete ? "lock released before bulk completion"
                                                        : "writer protocol out of order";
}

struct WriterProtocol {
  uint8_t next = 0;  // index of the next expected Step
  FLASHPTX_HD WriterError step(Step s) {
    const Step want = static_cast<Step>(next);
    if (s == want) {
      next = static_cast<uint8_t>((next + 1) % 6);
      return WriterError::kOk;
    }
    if (want == Step::kWaitEq) return WriterError::kStageBeforeLock;
    if (want == Step::kFenceBarrier && s == Step::kReduceAdd) return WriterError::kReduceBeforeFence;
    if (want == Step::kWaitBulk && s == Step::kArriveInc) return WriterError::kReleaseBeforeBulkComplete;
    return WriterError::kOutOfOrder;
  }
};

}  // namespace flashptx::writer_order
