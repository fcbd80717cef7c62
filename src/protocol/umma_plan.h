// tcgen05.mma operand plans: the shared-memory layout of an operand tile, the descriptor of each K
// step, the byte placement of an element, and the TMEM columns an A operand or a K step occupies.
//
// This is the code the sm_100a kernels run to build their descriptors and advances, written
// __host__ __device__ (FLASHPTX_HD) so that the host replays the same calls through the tcgen05
// emulator (tools/models/tcgen05_emulator.h), which gathers operands from a shared-memory image
// following the ISA's canonical layouts on its own. If a plan here and the ISA disagree (a wrong
// K-step advance, a wrong LBO/SBO), the replay's result differs from the fp64 GEMM.
//
// What each piece certifies (and the ISA text it follows: "Shared Memory Descriptor", "Leading
// Dimension Stride", "Stride Dimension Byte Offset", "Canonical Layouts"):
//   - SmemTile: a tile's layout, the LBO/SBO its descriptor carries, and where element (mn, k) of
//     the tile sits (byte_offset), so the kernel's stores and its descriptors come from one object.
//   - kstep_offset(): the byte offset of K step s from the tile start. One tcgen05.mma of kind::f16
//     or kind::f8f6f4 consumes 32 bytes of K. K-major without swizzle: 32 bytes are two 16-byte core
//     matrix columns, LBO apart, so a step is 2 x LBO (not 32). K-major swizzled: 32 bytes inside the
//     swizzle width (the hardware applies the swizzle to the advanced address). MN-major: K / 8
//     groups of 8 K rows, each SBO (swizzled) or LBO (no swizzle) apart.
//   - tmem_kstep_columns(): A in TMEM is K-major packed in 32-bit columns, so 32 bytes of K are 8
//     columns whatever the element width.
// What it does not certify: that the bytes at those addresses are what the kernel means (the
// emulator replay and the GPU tests do that), nor any swizzled layout's alignment (the caller
// places swizzled tiles on the pattern's repeat boundary: 1024 B for 128B swizzle).
#pragma once
#include <cstdint>

#include "src/protocol/hd.h"  // FLASHPTX_HD
#include "ptx/tcgen05_desc.cuh"

namespace flashptx::umma {

using ptx::UmmaMajor;
using ptx::UmmaSwizzle;

constexpr uint32_t kChunkBytes = 16;   // one row of a core matrix: 16 bytes (128 bits)
constexpr uint32_t kKStepBytes = 32;   // K bytes per tcgen05.mma: kind::f16 16 x 2 B, kind::f8f6f4 32 x 1 B
constexpr uint32_t kTmemCellBytes = 4;  // one TMEM column of one lane

// Width in bytes of one swizzled row (the swizzle span); 16 (one chunk) without swizzle.
FLASHPTX_HD constexpr uint32_t swizzle_width(UmmaSwizzle s) {
  return s == UmmaSwizzle::k128B ? 128u : s == UmmaSwizzle::k64B ? 64u : s == UmmaSwizzle::k32B ? 32u : 16u;
}

// One operand tile in shared memory. For K-major tiles `mn` indexes rows (M for A, N for B) and `k`
// the reduction; MN-major tiles are stored with MN contiguous.
struct SmemTile {
  UmmaMajor major = UmmaMajor::kK;
  UmmaSwizzle swizzle = UmmaSwizzle::kNone;  // kNone, k32B, k64B, k128B
  uint32_t lbo = 0, sbo = 0;                 // bytes, as the descriptor carries them
  uint32_t elem_bytes = 2;                   // 2: f16/bf16, 1: e4m3/e5m2
  // K-major swizzled tiles whose K extent exceeds the swizzle width: bytes between consecutive
  // swizzle atoms along K (a layout choice of the kernel, not described by the descriptor).
  uint32_t k_atom_stride = 0;

  // Byte offset of element (mn, k) from the tile start, before any swizzle (the address the
  // hardware swizzles is tile start + this). The canonical layouts, in bytes:
  //   K-major, none:      (mn%8)*16 + (mn/8)*SBO + (kb%16) + (kb/16)*LBO         (kb = k bytes)
  //   K-major, W-swizzle: (mn%8)*W  + (mn/8)*SBO + (kb%W)  + (kb/W)*k_atom_stride
  //   MN-major, none:     (mb%16) + (mb/16)*SBO + (k%8)*16 + (k/8)*LBO           (mb = mn bytes)
  //   MN-major, W-swizzle:(mb%W)  + (mb/W)*LBO  + (k%8)*W  + (k/8)*SBO
  FLASHPTX_HD constexpr uint32_t byte_offset(uint32_t mn, uint32_t k) const {
    const uint32_t w = swizzle_width(swizzle);
    if (major == UmmaMajor::kK) {
      const uint32_t kb = k * elem_bytes;
      if (swizzle == UmmaSwizzle::kNone)
        return (mn % 8u) * kChunkBytes + (mn / 8u) * sbo + kb % kChunkBytes + (kb / kChunkBytes) * lbo;
      return (mn % 8u) * w + (mn / 8u) * sbo + kb % w + (kb / w) * k_atom_stride;
    }
    const uint32_t mb = mn * elem_bytes;
    if (swizzle == UmmaSwizzle::kNone)
      return mb % kChunkBytes + (mb / kChunkBytes) * sbo + (k % 8u) * kChunkBytes + (k / 8u) * lbo;
    return mb % w + (mb / w) * lbo + (k % 8u) * w + (k / 8u) * sbo;
  }

  // Byte offset of the first element of K step s (32 bytes of K per step) from the tile start.
  FLASHPTX_HD constexpr uint32_t kstep_offset(uint32_t s) const {
    const uint32_t kb = s * kKStepBytes;
    if (major == UmmaMajor::kK) {
      if (swizzle == UmmaSwizzle::kNone) return (kb / kChunkBytes) * lbo;  // 2 x LBO per step
      const uint32_t w = swizzle_width(swizzle);
      return (kb / w) * k_atom_stride + kb % w;
    }
    const uint32_t k_rows = kb / elem_bytes;  // K elements before step s
    return (k_rows / 8u) * (swizzle == UmmaSwizzle::kNone ? lbo : sbo);
  }

  // The descriptor of K step s of the tile that starts at shared::cta address `tile_addr`.
  FLASHPTX_HD constexpr uint64_t desc(uint32_t tile_addr, uint32_t s) const {
    return ptx::make_umma_smem_desc(tile_addr + kstep_offset(s), lbo, sbo, swizzle);
  }
};

// The K-major, no-swizzle tile whose 8 core matrices of one 8-row group lie contiguous along K
// (LBO = 128 B) and whose 8-row groups follow each other (SBO = 8 x 128 B = 1024 B): the layout of
// 128-byte rows (64 bf16 or 128 e4m3 of K).
FLASHPTX_HD constexpr SmemTile kmajor_interleaved_128b_rows(uint32_t elem_bytes) {
  return SmemTile{UmmaMajor::kK, UmmaSwizzle::kNone, 128u, 1024u, elem_bytes, 0u};
}

// A in TMEM (TS form): K-major, `kTmemCellBytes` bytes of K per column, row r in lane r. The column
// offset of K step s from A's first column.
FLASHPTX_HD constexpr uint32_t tmem_kstep_columns(uint32_t s) { return s * (kKStepBytes / kTmemCellBytes); }

// Instruction K steps needed for `k_bytes` of K.
FLASHPTX_HD constexpr uint32_t ksteps(uint32_t k_bytes) { return k_bytes / kKStepBytes; }

static_assert(kmajor_interleaved_128b_rows(2).kstep_offset(1) == 256u, "no swizzle: one K step is 2 x LBO");
static_assert(SmemTile{UmmaMajor::kK, UmmaSwizzle::k128B, 16u, 1024u, 2u, 0u}.kstep_offset(3) == 96u,
              "128B swizzle: K steps advance inside the 128-byte row");

}  // namespace flashptx::umma
