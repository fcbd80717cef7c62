// ptxsim, sm_100a: the executor's tcgen05 state (Tensor Memory per CTA, tcgen05.mma operations in
// flight, tcgen05.commit arrivals not yet performed, tcgen05.ld registers not yet waited for).
// Included by tools/sim/exec.cpp only; the instructions are in tools/sim/exec_sm100.inc.
// Tensor Memory and the MMA arithmetic are the tcgen05 emulator's (tools/models/tcgen05_emulator.h:
// the project's one reading of the ISA's TMEM allocation rules, .32x32b fragment map, descriptor
// and data-path tables). Executed in the PTX simulator; never run on a Blackwell GPU.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "tools/models/tcgen05_emulator.h"

namespace ptxsim::sm100 {

namespace emu = flashptx::models::tcgen05;

inline constexpr uint32_t kLanes = emu::kLanes, kColumns = emu::kColumns;
// pend[] cell values: 0 none; an in-flight tcgen05.mma's id (< kStBit) writes the cell; kStBit | warp:
// a tcgen05.st of that warp (slot * warps + warp) not yet waited for with tcgen05.wait::st.
inline constexpr uint32_t kStBit = 0x80000000u;

struct Block { uint32_t column, ncols, pc; };  // a live allocation and the tcgen05.alloc that made it

// One CTA slot's Tensor Memory (created by its first tcgen05 instruction).
struct CtaTmem {
  std::unique_ptr<emu::Cta> cta;   // the emulator's CTA: TMEM, and a shared-memory image for its MMA
  std::vector<uint32_t> pend;      // kLanes * kColumns
  // The last writer of each cell, for the tcgen05.fence checks: 0 none, else thread-in-CTA + 1 of a
  // tcgen05.st, or kStBit | (thread + 1) of the thread that issued a completed tcgen05.mma; and when.
  std::vector<uint32_t> writer;
  std::vector<uint64_t> wstep;
  std::vector<Block> blocks;
  bool relinquished = false;
  uint32_t relinquish_pc = 0;
  bool used = false;
};

struct Mma {
  uint32_t id = 0, slot = 0, thread = 0, pc = 0;  // slot, thread: the issuing CTA slot and thread
  emu::MmaOp op;
  uint32_t m = 0, n = 0, d_col = 0;
  uint32_t lanes = 0, d_cols = 0;   // the TMEM cells D occupies in each CTA: lanes [0, lanes) x d_cols columns
  uint32_t a_col = 0, a_cols = 0;   // TS: the TMEM columns of A (lanes [0, lanes))
  // The CTA slots whose Tensor Memory and shared memory the MMA uses (cta_group::1: the issuer's;
  // cta_group::2: the pair, even rank first), and per slot the 16-byte shared-memory chunks it reads
  // (reader-locked until complete).
  std::vector<uint32_t> slots;
  std::vector<std::vector<uint32_t>> chunks;
  bool done = false;
  bool uses(uint32_t s) const { for (uint32_t x : slots) if (x == s) return true; return false; }
};

// A cta_group::2 tcgen05.alloc / dealloc posted by the first warp of the pair to reach it; the
// peer's warp performs it for both and marks it done (PTX ISA, tcgen05.alloc: with .cta_group::2 one
// warp of each of the peer CTAs performs it collectively).
struct PairPost {
  uint32_t op = 0, pc = 0, ncols = 0;
  uint32_t taddr = 0;                // dealloc: the address
  uint32_t dst_slot = 0, dst_off = 0;  // alloc: where the address is written (the poster's shared memory)
  bool done = false;
};

struct Commit {
  uint32_t slot = 0, thread = 0, pc = 0, mbar_off = 0;
  std::vector<uint32_t> mmas;        // ids, issue order
  std::vector<uint32_t> targets;     // CTA slots whose mbarrier at mbar_off gets the arrive-on
  uint64_t land_at = 0;
};

struct StRange { uint32_t lane0, col0, cols; };  // 32 lanes from lane0

struct WarpTc {
  std::vector<uint32_t> ld_pc;       // per register: 0, else (pc + 1) of the tcgen05.ld that writes it
  std::vector<uint32_t> ld_list;     // registers with ld_pc set
  std::vector<StRange> st;           // tcgen05.st ranges not yet waited for
  // Per lane, for the tcgen05.fence checks (scheduler steps): the thread synchronisations it passed
  // (bar.sync / barrier completions, successful mbarrier waits; the most recent kSyncHistory), its
  // last tcgen05.fence::after_thread_sync and ::before_thread_sync.
  std::vector<uint64_t> syncs[32];
  uint64_t after[32] = {0}, before[32] = {0};
};
inline constexpr size_t kSyncHistory = 256;

struct State {
  std::vector<CtaTmem> ctas;         // by CTA slot
  std::vector<Mma> mmas;             // in flight
  std::vector<Commit> commits;       // not yet arrived
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> uncommitted;  // (slot, thread) -> ids
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> last_land;                 // (slot, thread) -> land_at
  std::vector<WarpTc> warps;         // by slot * warps + warp
  std::map<uint32_t, PairPost> pair_posts;  // by the posting CTA slot
  uint32_t ld_pending = 0;           // warps with ld_list non-empty
  uint32_t next_id = 1;
  bool on = false;                   // a tcgen05 instruction has executed in this launch
  // cluster launch control: the responses' source bytes (one registered range, 16 bytes a request,
  // written at issue and copied into shared memory by a bulk copy), and per CTA slot whether it has
  // observed a failed request
  std::vector<uint8_t> clc_buf;
  size_t clc_used = 0;
  std::vector<uint8_t> clc_failed;
};

}  // namespace ptxsim::sm100
