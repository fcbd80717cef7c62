// The racecheck reproducer (tests/kernels/race_repro.cu, tests/gpu/test_race_repro.cpp,
// tools/race/): the smallest ptx/ kernels that could show why compute-sanitizer racecheck fails on
// the release FA3 forward once its K/V ring wraps ("Internal Sanitizer Error: The Sanitizer failed
// to handle a hardware exception", then cudaErrorIllegalAddress), while the test build passes.
//
// One kernel template, one CTA of 384 threads (the FA3 d64 shape): warpgroup 0 is the producer (one
// thread issues every TMA), warpgroups 1 and 2 are consumers. A ring of `stages` slots of one tile
// each (64 rows x 64 bf16 = 8 KB, 128B swizzle), `full`/`empty` mbarriers per slot (flashptx::RingState,
// the FA3 protocol), `iters` tiles (mostly kRaceIters = 24: a 3-stage ring wraps 8 times). Every variant is compiled
// into both build flavours with the same code: the wait loop is a template parameter here, never
// FLASHPTX_BOUNDED_WAIT, so the test build's run_tests runs the release wait where a variant asks.
// Launchers return the launch's error (cudaGetLastError); the caller synchronises and checks.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace flashptx_test::race {

// How consumers read a ring slot.
enum class Reader : int {
  kLds = 0,    // plain ld.shared.v4 by every consumer thread; output: the 64 row sums of the tile
  kWgmma = 1,  // S = Q_g K^T by wgmma SS (Q_g: the consumer's 64 rows of a 128 x 64 Q loaded once by
               // TMA), as FA3's QK; output: the 64 row sums of S
  kFa3Kv = 2,  // FA3's consumer shape without softmax: separate K and V rings on one stage
               // coordinate, V lagging K by one block; QK(j) by wgmma SS then PV(j-1) by wgmma RS with
               // P = bf16(S) from registers, wait_group<1> releases K, wait_group<0> releases V;
               // output: the whole O = sum_j P_j V_j (64 x 64 per consumer)
};

// The mbarrier wait loop (every wait of the role that uses it).
enum class Wait : int {
  kSpin = 0,         // while (!try_wait.parity) {}: ptx::mbarrier_wait, what the release build runs
  kSuspendHint = 1,  // try_wait.parity with an explicit suspendTimeHint operand, in a loop
  kBounded = 2,      // the test build's loop (ptx::mbarrier_wait_bounded): try_wait, then clock64-
                     // bounded retries and an out-of-line noreturn call that printf's and traps on
                     // timeout. The printf (a call inside the callee) makes ptxas serialize every
                     // wgmma of the kernel (C7510: each HGMMA waited at once), as in the test build
  kBoundedNoPrintf = 3,  // the same loop and call, the callee only traps: wgmma stays asynchronous
  kBackoff = 4,      // try_wait, then nanosleep with exponential backoff between retries
  kTestWait = 5,     // while (!test_wait.parity) {}: a spin that never suspends the thread
};

// How the producer fills a slot.
enum class Copy : int {
  kTensor = 0,  // cp.async.bulk.tensor.2d (TMA with a tensor map, 128B swizzle), as FA3
  kBulk = 1,    // cp.async.bulk (non-tensor, linear layout): racecheck attributes its shared-memory
                // writes to the issuing thread (kLds reader only: wgmma needs the swizzled layout)
};

// One compiled variant. `name` is its doctest case name (tests/gpu/test_race_repro.cpp) and its row
// in tools/race/racecheck_matrix.sh.
struct Variant {
  const char* name;
  Reader reader;
  Wait wait_producer;  // the producer's empty waits (and its tail)
  Wait wait_consumer;  // the consumers' full waits (and q_full)
  Copy copy;
  bool setmaxnreg;     // producer setmaxnreg.dec 24, consumers .inc 240 (FA3 with two consumers)
  bool serial_wgmma;   // every wgmma waited at once (wait_group 0 after each), as ptxas serializes
                       // the test build's kernels; no wgmma in flight across a wait or an arrive
  int stages;          // ring depth; >= iters: the ring never wraps (the control)
  int iters;           // tiles through the ring (K/V blocks in FA3 terms), 1..kRaceIters
  const char* isolates;  // one line: what this variant changes against its neighbours
};

constexpr int kRaceIters = 24;        // tiles through the ring per launch (most variants; the maximum)
constexpr int kRaceTileRows = 64;     // rows of a tile (keys, in FA3 terms)
constexpr int kRaceCols = 64;         // bf16 columns (head dim 64: one 128-byte swizzle row)
constexpr int kRaceTileBytes = kRaceTileRows * kRaceCols * 2;  // 8192
constexpr int kRaceConsumers = 2;     // consumer warpgroups
constexpr int kRaceQRows = 64 * kRaceConsumers;                // 128
constexpr int kRaceThreads = 128 * (1 + kRaceConsumers);       // 384
// Output floats: kLds / kWgmma: [kRaceIters][kRaceConsumers][64] row sums;
//                kFa3Kv:         [kRaceConsumers][64][64] O.
constexpr int kRaceOutFloats = kRaceConsumers * 64 * 64;      // the larger of the two (8192)
static_assert(kRaceIters * kRaceConsumers * 64 <= kRaceOutFloats, "output buffer");

// Every compiled variant, in the table's order.
int race_variant_count();
const Variant& race_variant(int i);
// The variant named `name`, or nullptr.
const Variant* find_race_variant(const char* name);

// Runs variant `name` once (one CTA, its `iters` tiles). map_k / map_v: bf16 [kRaceIters * 64 rows][64], box 64 x 64,
// 128B swizzle; map_q: bf16 [128][64], box 64 x 128, 128B swizzle; k_raw: the same K bytes, dense
// (Copy::kBulk reads it); out: kRaceOutFloats floats. Unused maps may be any valid map.
cudaError_t launch_race_variant(const char* name, const CUtensorMap& map_k, const CUtensorMap& map_v,
                                const CUtensorMap& map_q, const void* k_raw, float* out);

}  // namespace flashptx_test::race
