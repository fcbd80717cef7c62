// ptxsim ISA semantics: wgmma.mma_async (sm_90a warpgroup MMA).
//
// Written from PTX ISA 9.7.15 "Asynchronous Warpgroup Level Matrix Multiply-Accumulate
// Instructions": 9.7.15.5.1.1 "Register Fragments" (Figures "WGMMA .m64nNk16 register fragment
// layout for matrix A" / "... for accumulator matrix D", and the k32 forms), 9.7.15.5.1.2 "Shared
// Memory Matrix Layout" (swizzle atoms, leading/stride dimension byte offsets, 9.7.15.5.1.2.1.3
// "Canonical Layouts"), 9.7.15.5.1.2.2 "Matrix Descriptor Format" and 9.7.15.5.2 wgmma.mma_async.
//
// Threads are numbered 0..127 within the warpgroup (warp w = t / 32, lane = t % 32).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tools/sim/isa/swizzle.h"

namespace ptxsim::isa {

// ---- matrix descriptor (64 bits) -------------------------------------------------------------
// bits 13..0  start address >> 4       bits 29..16 leading dimension byte offset >> 4
// bits 45..32 stride dim. byte offset >> 4   bits 51..49 matrix base offset
// bits 63..62 swizzle: 0 none, 1 128B, 2 64B, 3 32B. Encoding of an address x: (x & 0x3FFFF) >> 4.
struct MatrixDesc {
  uint32_t start_addr = 0;   // bytes (a multiple of 16, < 2^18)
  uint32_t lbo = 0;          // bytes
  uint32_t sbo = 0;          // bytes
  uint32_t base_offset = 0;  // 0..7
  Swizzle swizzle = Swizzle::none;
};
MatrixDesc matrix_desc_decode(uint64_t desc);
uint64_t matrix_desc_encode(const MatrixDesc& m);

// Element types of the multiplicands.
enum class MmaType : uint8_t { f16, bf16, e4m3, e5m2, tf32 };
uint32_t mma_type_bytes(MmaType t);  // 2, 2, 1, 1, 4
uint32_t mma_k(MmaType t);           // K of one instruction: 16, 16, 32, 32, 8
float mma_elem_to_f32(MmaType t, uint32_t bits);  // tf32: the f32 pattern with the low 13 bits ignored

// K-major: K is the contiguous dimension in 16-byte chunks (imm-trans = 0).
// MN-major: M (for A) or N (for B) is contiguous (imm-trans = 1; 16-bit types only).
enum class Major : uint8_t { k, mn };

// Shared-memory byte address of element (mn, k) of the operand the descriptor describes, per the
// canonical layouts (T = 16 / elem_bytes elements per 16-byte chunk):
//   K-major,  none:   ((8,m),(T,2k)):((1T,SBO),(1,LBO))
//   K-major,  swizzle span W (32/64/128): ((8,m),(T,2k)):((W/16*T,SBO),(1,T))
//   MN-major, none:   ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
//   MN-major, swizzle span W: ((T,W/16,m),(8,k)):((1,T,LBO),(W/16*T,SBO))
// then the swizzle Swizzle<B,4,3> on the byte address. The result is a shared::cta offset.
uint32_t canonical_address(const MatrixDesc& m, Major major, uint32_t elem_bytes, uint32_t mn, uint32_t k);

// ---- register fragments -----------------------------------------------------------------------
struct RowCol { uint32_t row, col; };
struct FragSlot { uint32_t thread, reg, half; };  // half: which 16-bit half (f16 accumulators)

// Accumulator D (64 x N): thread t, f32 register index i (0 .. N/2-1) holds
//   row = 16*(t/32) + (t%32)/4 + 8*((i/2)%2),  col = 8*(i/4) + 2*(t%4) + (i%2).
// For .f16 accumulators element i is half (i%2) of register i/2.
RowCol wgmma_d_position(uint32_t thread, uint32_t elem_index);
FragSlot wgmma_d_owner(uint32_t row, uint32_t col, bool f16_accum);
// A from registers (64 x K): thread t, element index j (16-bit: 0..7 in four .b32 registers, two
// per register; 8-bit: 0..15, four per register, low byte first; tf32: 0..3, one per register):
//   16-bit: row = 16w + g + 8*((j/2)%2), col = 2*(t%4) + (j%2) + 8*(j/4)
//   8-bit:  row = 16w + g + 8*((j/4)%2), col = 4*(t%4) + (j%4) + 16*(j/8)
//   tf32:   row = 16w + g + 8*(j%2),     col = (t%4) + 4*(j/2)
// with w = t/32, g = (t%32)/4.
RowCol wgmma_a_position(uint32_t thread, uint32_t elem_index, uint32_t elem_bytes);
FragSlot wgmma_a_owner(uint32_t row, uint32_t col, uint32_t elem_bytes);  // half = byte/half index in reg

// ---- wgmma.mma_async ----------------------------------------------------------------------------
// f32_in_order: k = 0..K-1 with fma.rn.f32 (the default); f32_reverse: k = K-1..0, to show a
// result's sensitivity to the (unspecified) order; f64: summed in double, rounded once.
enum class AccumMode : uint8_t { f32_in_order, f32_reverse, f64 };
struct WgmmaOp {
  uint32_t n = 8;                  // 8..256 step 8
  MmaType atype = MmaType::bf16, btype = MmaType::bf16;  // equal except e4m3/e5m2 mixes
  bool d_f16 = false;              // .f16 accumulators (N/4 registers) instead of .f32 (N/2)
  bool a_in_regs = false;          // RS form: A from a_regs, else from desc_a (SS)
  uint64_t desc_a = 0, desc_b = 0;
  bool scale_d = true;             // predicate p: false -> D = A*B, true -> D = A*B + D
  int scale_a = 1, scale_b = 1;    // imm-scale-a/b: 1 or -1
  bool trans_a = false, trans_b = false;  // imm-trans-a/b: 1 = MN-major (16-bit types only)
  AccumMode accum = AccumMode::f32_in_order;
};
uint32_t wgmma_d_regs(const WgmmaOp& op);   // registers per thread for D
// Empty when the form exists in the ISA (shape, types, transposes, scale values); else why not.
std::string wgmma_validate(const WgmmaOp& op);

using SmemRead = std::function<void(uint32_t addr, void* dst, uint32_t n)>;

// Reads A (64 x K) and B (K x N) as the op describes: A element (m, k), B element (k, n); B's
// descriptor is indexed (n, k) in the canonical layout (N plays MN).
void wgmma_read_operands(const WgmmaOp& op, const SmemRead& smem, const uint32_t* a_regs,
                         float* a /*64*K*/, float* b /*K*N*/);

// The shared-memory bytes the op reads (A for SS, and B), as sorted, merged [first, last) ranges of
// whole 16-byte chunks: what an in-flight wgmma must not see overwritten.
struct SmemSpan { uint32_t first, last; };
std::vector<SmemSpan> wgmma_smem_footprint(const WgmmaOp& op);

// Computes the new D registers: d_regs[t * wgmma_d_regs(op) + i] (bit patterns, in and out).
// a_regs[t * 4 + r] for the RS form (ignored for SS). Arithmetic: ISA reading (the order and
// internal precision of the sums are not specified): each D element is
//   acc = scale_d ? D : 0;  for k = 0..K-1: acc = fma_rn_f32(a*sa, b*sb, acc)
// (products of 16-bit and 8-bit inputs are exact in f32); AccumMode::f64 sums in double and
// rounds once. f16 accumulators: the f32 result rounded to f16 (.rn) at the end.
void wgmma_compute(const WgmmaOp& op, const SmemRead& smem, const uint32_t* a_regs, uint32_t* d_regs);

}  // namespace ptxsim::isa
