// Blackwell Tensor Memory (TMEM): capacity, allocator rules, address packing, the FA4 S/P/O column
// plan, alias legality and lane ownership (docs/PROTOCOLS.md, "TMEM planning"; PTX ISA
// "Tensorcore 5th Generation Family Instructions", "Tensor Memory").
//
// This is the code an sm_100a kernel uses to lay out its TMEM and the code the CPU oracle
// (tools/models/tmem.cpp) drives through every table and negative fixture of that guide section: one
// source, written __host__ __device__ (FLASHPTX_HD), no allocation, no exceptions, no std::
// containers.
//
// What each piece certifies:
//   - kColumns * kLanes * kCellBytes = 256 KiB, the granule 32 columns = 16 KiB: the per-CTA view
//     (never a flat pair-wide pool: a CTA pair has two 512-column views, not one 1024-column one).
//   - TmemAllocator: the allocation-size rule (power of two in [32, 512]), the non-increasing rule,
//     the relinquish permit, "a dealloc frees exactly one allocation", and "every column freed
//     before exit".
//   - taddr(): lane << 16 | column, the 32-bit address inside one CTA's view.
//   - Fa4FwdColumnPlan: c_S0 = 0, c_S1 = N, c_Oi = 2N + i*d_v, P_i in the tail half of S_i; the
//     capacity equation 2N + q_stage*d_v <= 512.
//   - legal_alias(): reuse is legal iff columns OR live intervals are disjoint.
//   - warp_owns_lane(): warp w of a warpgroup may touch lanes [32*(w%4), 32*(w%4)+32).
#pragma once
#include <cstdint>

#include "src/protocol/hd.h"  // FLASHPTX_HD

namespace flashptx::tmem {

// ---- capacity, granule, address ------------------------------------------------------------------
constexpr uint32_t kColumns = 512;     // per-CTA addressable columns on sm_100
constexpr uint32_t kLanes = 128;       // lanes per column
constexpr uint32_t kCellBytes = 4;     // one 32-bit cell per (lane, column)
constexpr uint32_t kGranuleColumns = 32;
constexpr uint32_t kBytes = kColumns * kLanes * kCellBytes;               // 262,144 = 256 KiB
constexpr uint32_t kGranuleBytes = kGranuleColumns * kLanes * kCellBytes;  // 16,384 = 16 KiB
static_assert(kBytes == 256u * 1024u, "TMEM is 256 KiB per CTA view");
static_assert(kGranuleBytes == 16u * 1024u, "the 32-column granule is 16 KiB");

// ---- address packing ---------------------------------------------------------------------------
FLASHPTX_HD constexpr uint32_t taddr(uint32_t lane, uint32_t column) { return (lane << 16) | column; }
FLASHPTX_HD constexpr uint32_t taddr_lane(uint32_t a) { return a >> 16; }
FLASHPTX_HD constexpr uint32_t taddr_column(uint32_t a) { return a & 0xFFFFu; }
FLASHPTX_HD constexpr bool taddr_in_view(uint32_t lane, uint32_t column) {
  return lane < kLanes && column < kColumns;
}
static_assert(taddr(37, 384) == 2425216u, "TMEM address: lane 37, column 384 -> 2,425,216");

// ---- named reasons, shared by the allocator, the plan and the oracle's event checker ----------
enum class TmemError : uint8_t {
  kOk = 0,
  kIllegalSize,           // allocation is not a legal power of two in [32, 512]
  kSizeIncreases,         // successive allocation amounts may not increase
  kPermitClosed,          // allocation after relinquish_alloc_permit
  kOutOfColumns,          // the live allocations would exceed 512 columns
  kMapTooWide,            // the logical S/P/O map needs more than 512 columns
  kLiveAliasOverlap,      // two objects overlap in columns AND in live time
  kCtaGroupMismatch,      // cta_group::1 and ::2 operations mixed in one kernel
  kPeerNotActive,         // a cta_group::2 operation without an active peer CTA
  kCollectiveParticipants,// group-2 alloc/relinquish/dealloc without one warp from each CTA
  kUnfinishedConsume,     // tcgen05.ld before completion was observed and fenced
  kPeerNotQuiesced,       // deallocation while the peer may still access TMEM
  kLaneOwnership,         // a warp touches a lane outside its 32-lane band
  kNotFreedAtExit,        // allocated columns still live at kernel exit
  kFreeUnallocated,       // deallocation of a block that is not allocated
  kPartialDealloc,        // deallocation that is not exactly one earlier allocation (base and size)
};

FLASHPTX_HD constexpr const char* tmem_error_name(TmemError e) {
  switch (e) {
    case TmemError::kOk: return "ok";
    case TmemError::kIllegalSize: return "allocation is not a legal power of two";
    case TmemError::kSizeIncreases: return "allocation size increases";
    case TmemError::kPermitClosed: return "allocation permit is closed";
    case TmemError::kOutOfColumns: return "live allocations exceed 512 columns";
    case TmemError::kMapTooWide: return "logical map needs more than 512 columns";
    case TmemError::kLiveAliasOverlap: return "simultaneous address/lifetime overlap";
    case TmemError::kCtaGroupMismatch: return "kernel-wide CTA-group mode mismatch";
    case TmemError::kPeerNotActive: return "peer-liveness violation";
    case TmemError::kCollectiveParticipants: return "collective-participant violation";
    case TmemError::kUnfinishedConsume: return "unfinished result consumption";
    case TmemError::kPeerNotQuiesced: return "live peer access";
    case TmemError::kLaneOwnership: return "lane-ownership violation";
    case TmemError::kNotFreedAtExit: return "TMEM not deallocated before exit";
    case TmemError::kFreeUnallocated: return "deallocation of unallocated columns";
    case TmemError::kPartialDealloc: return "deallocation does not match one allocation";
  }
  return "?";
}

// ---- allocation sizes --------------------------------------------------------------------------
// Legal amounts: 32, 64, 128, 256, 512 (a power of two, at least one granule, at most the view).
FLASHPTX_HD constexpr bool legal_alloc_columns(uint32_t cols) {
  return cols >= kGranuleColumns && cols <= kColumns && (cols & (cols - 1u)) == 0u;
}

// The allocator of one CTA view. tcgen05.alloc hands out a column base aligned to its size; this
// model keeps a 16-bit occupancy mask of 32-column granules and places each block at the lowest
// size-aligned free base (so a full 512-column allocation starts at column 0, which is what lets
// the FA4 fragment code treat the base as known). It also remembers each block's extent:
// tcgen05.dealloc frees exactly one earlier allocation, its address and column count as returned by
// and given to tcgen05.alloc ("tcgen05.dealloc"), never a part of one or several at once.
struct TmemAllocator {
  static constexpr uint32_t kGranules = kColumns / kGranuleColumns;  // 16
  uint32_t granules_used = 0;   // bit g: granule g (columns [32g, 32g+32)) is allocated
  uint8_t block_granules[kGranules] = {};  // at a block's first granule: its size in granules, else 0
  uint32_t last_cols = 0;       // previous allocation amount (0: none yet)
  bool permit_open = true;      // cleared by relinquish_alloc_permit

  FLASHPTX_HD TmemError allocate(uint32_t cols, uint32_t* base_out) {
    if (!permit_open) return TmemError::kPermitClosed;
    if (!legal_alloc_columns(cols)) return TmemError::kIllegalSize;
    if (last_cols != 0u && cols > last_cols) return TmemError::kSizeIncreases;
    const uint32_t g = cols / kGranuleColumns;
    const uint32_t mask = (g >= 32u) ? 0xFFFFFFFFu : ((1u << g) - 1u);
    for (uint32_t base = 0; base + g <= kGranules; base += g) {
      if ((granules_used & (mask << base)) == 0u) {
        granules_used |= mask << base;
        block_granules[base] = static_cast<uint8_t>(g);
        last_cols = cols;
        if (base_out) *base_out = base * kGranuleColumns;
        return TmemError::kOk;
      }
    }
    return TmemError::kOutOfColumns;
  }
  // Closes the right to allocate again; live blocks stay live.
  FLASHPTX_HD void relinquish() { permit_open = false; }
  FLASHPTX_HD TmemError deallocate(uint32_t base, uint32_t cols) {
    if (!legal_alloc_columns(cols) || base % kGranuleColumns != 0u || base + cols > kColumns)
      return TmemError::kFreeUnallocated;
    const uint32_t first = base / kGranuleColumns, g = cols / kGranuleColumns;
    if (((granules_used >> first) & 1u) == 0u) return TmemError::kFreeUnallocated;
    // Inside a live block, or covering a different extent than the block that starts here.
    if (block_granules[first] != g) return TmemError::kPartialDealloc;
    granules_used &= ~(((g >= 32u) ? 0xFFFFFFFFu : ((1u << g) - 1u)) << first);
    block_granules[first] = 0;
    return TmemError::kOk;
  }
  FLASHPTX_HD uint32_t live_columns() const {
    uint32_t n = 0;
    for (uint32_t b = granules_used; b; b &= b - 1u) ++n;
    return n * kGranuleColumns;
  }
  FLASHPTX_HD TmemError at_exit() const {
    return granules_used ? TmemError::kNotFreedAtExit : TmemError::kOk;
  }
};

// ---- column intervals, live intervals, alias legality (docs/PROTOCOLS.md, "TMEM planning")
struct Interval {  // half-open [begin, end)
  uint32_t begin = 0, end = 0;
  FLASHPTX_HD constexpr uint32_t width() const { return end - begin; }
  FLASHPTX_HD constexpr bool overlaps(Interval o) const { return begin < o.end && o.begin < end; }
};

struct TmemObject {
  const char* name;
  Interval cols;  // TMEM columns (FP32-column units)
  Interval live;  // logical time steps in which the object holds a value somebody will read
};

// legal_alias(x, y) <=> (C_x ∩ C_y = ∅) ∨ (L_x ∩ L_y = ∅)
FLASHPTX_HD constexpr bool legal_alias(const TmemObject& x, const TmemObject& y) {
  return !x.cols.overlaps(y.cols) || !x.live.overlaps(y.live);
}

// ---- lane ownership ("The warp index determines which lane band ...") --------------------------
FLASHPTX_HD constexpr Interval warp_lane_band(uint32_t warp) {
  return Interval{32u * (warp % 4u), 32u * (warp % 4u) + 32u};
}
FLASHPTX_HD constexpr bool warp_owns_lane(uint32_t warp, uint32_t lane) {
  return lane >= warp_lane_band(warp).begin && lane < warp_lane_band(warp).end;
}

// ---- the FA4 forward column plan (as flash-attention fa4-v4.0.0.beta23 lays it out) ----------
// For K/V tile width N, value width d_v and q_stage output slots:
//   c_S0 = 0, c_S1 = N, c_Oi = 2N + i*d_v; P_i (BF16, N/2 FP32 columns) sits in the tail half of S_i.
struct Fa4FwdColumnPlan {
  uint32_t n = 128, d_v = 128, q_stage = 2;

  FLASHPTX_HD constexpr uint32_t logical_columns() const { return 2u * n + q_stage * d_v; }
  FLASHPTX_HD constexpr TmemError check() const {
    return logical_columns() <= kColumns ? TmemError::kOk : TmemError::kMapTooWide;
  }
  // BF16 P needs ceil(N * 16 / 32) FP32 columns.
  FLASHPTX_HD constexpr uint32_t p_columns() const { return (n * 16u + 31u) / 32u; }
  FLASHPTX_HD constexpr Interval s(uint32_t i) const { return Interval{i * n, i * n + n}; }
  FLASHPTX_HD constexpr Interval p(uint32_t i) const {
    return Interval{i * n + n - p_columns(), i * n + n};
  }
  FLASHPTX_HD constexpr Interval o(uint32_t i) const {
    return Interval{2u * n + i * d_v, 2u * n + (i + 1u) * d_v};
  }
  // Beta23 requests the maximum (512) regardless of the logical width, so its base is column 0.
  FLASHPTX_HD constexpr uint32_t alloc_columns() const { return kColumns; }
};

}  // namespace flashptx::tmem
