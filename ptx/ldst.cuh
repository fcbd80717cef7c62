// Warp-collective shared-memory matrix loads/stores and small data-movement helpers of sm_90
// (PTX ISA: "Warp Level Matrix Load Instruction: ldmatrix", "Warp Level Matrix Store Instruction:
// stmatrix", "Data Movement and Conversion Instructions: prmt", "Parallel Synchronization and
// Communication Instructions: elect.sync").
//
// ldmatrix / stmatrix move 8x8 matrices of 16-bit elements between shared memory and registers, in
// the fragment layout of mma.m16n8k16 / wgmma accumulators: in each 8x8 matrix, thread t holds one
// 32-bit register with the two adjacent elements (row t/4, columns 2*(t%4) and 2*(t%4)+1), lower
// column in the lower half. With .trans the matrix is transposed on the way (row <-> column).
// Row addresses: for .x1 threads 0-7 give the 8 row addresses of matrix 0; .x2 adds threads 8-15 for
// matrix 1; .x4 threads 0-31 give the rows of matrices 0..3 (8 threads per matrix, in order). Each
// row address is a 16-byte aligned shared::cta address (ptx::smem_u32) of 8 contiguous b16 elements.
//
// All of these are .sync.aligned warp collectives: every thread of the warp must execute the same
// instruction (same shape, same .trans), convergently. Threads whose addresses the shape does not
// use must still participate; their address operand is ignored.
#pragma once
#include <cstdint>

#include "ptx/arch.cuh"

namespace flashptx::ptx {

// ---- ldmatrix ---------------------------------------------------------------------------------

// ldmatrix.sync.aligned.m8n8.x1.shared.b16 {r0}, [row_addr];
// Certifies: r0 holds this thread's fragment of the 8x8 matrix whose rows threads 0-7 addressed.
// Does not certify ordering against async-proxy writers (TMA): wait on their mbarrier first; against
// other threads' st.shared only with a barrier (bar.sync / mbarrier) between.
__device__ __forceinline__ void ldmatrix_x1(uint32_t row_addr, uint32_t& r0) {
#if FLASHPTX_HAS_SM90
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(row_addr) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("ldmatrix needs sm_90 in flashptx");
#endif
}

// ldmatrix.sync.aligned.m8n8.x2.shared.b16 {r0, r1}, [row_addr];   (threads 0-15 give rows)
__device__ __forceinline__ void ldmatrix_x2(uint32_t row_addr, uint32_t& r0, uint32_t& r1) {
#if FLASHPTX_HAS_SM90
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
               : "=r"(r0), "=r"(r1) : "r"(row_addr) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("ldmatrix needs sm_90 in flashptx");
#endif
}

// ldmatrix.sync.aligned.m8n8.x4.shared.b16 {r0, r1, r2, r3}, [row_addr];   (threads 0-31 give rows)
__device__ __forceinline__ void ldmatrix_x4(uint32_t row_addr, uint32_t& r0, uint32_t& r1, uint32_t& r2,
                                            uint32_t& r3) {
#if FLASHPTX_HAS_SM90
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(row_addr) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("ldmatrix needs sm_90 in flashptx");
#endif
}

// ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {r0}, [row_addr];
// As ldmatrix_x1, but thread t receives (column t/4, rows 2*(t%4), 2*(t%4)+1) of the stored matrix:
// the stored rows become fragment columns. Certifies and does not certify what ldmatrix_x1 does.
__device__ __forceinline__ void ldmatrix_x1_trans(uint32_t row_addr, uint32_t& r0) {
#if FLASHPTX_HAS_SM90
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(row_addr) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("ldmatrix needs sm_90 in flashptx");
#endif
}

// ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {r0, r1}, [row_addr];
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t row_addr, uint32_t& r0, uint32_t& r1) {
#if FLASHPTX_HAS_SM90
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
               : "=r"(r0), "=r"(r1) : "r"(row_addr) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("ldmatrix needs sm_90 in flashptx");
#endif
}

// ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {r0, r1, r2, r3}, [row_addr];
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t row_addr, uint32_t& r0, uint32_t& r1, uint32_t& r2,
                                                  uint32_t& r3) {
#if FLASHPTX_HAS_SM90
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(row_addr) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("ldmatrix needs sm_90 in flashptx");
#endif
}

// ---- stmatrix ---------------------------------------------------------------------------------
// The inverse of ldmatrix (sm_90): each thread gives its fragment register(s); threads give the row
// addresses as for ldmatrix of the same shape. Certifies: the generic-proxy shared-memory writes of
// the whole 8x8 matrices once every thread of the warp has executed it. Does not certify visibility
// to the async proxy (a TMA store or a wgmma/tcgen05 operand read of these bytes): that needs
// fence.proxy.async.shared::cta (ptx/fence.cuh) by the writing threads, then a barrier.

// stmatrix.sync.aligned.m8n8.x1.shared.b16 [row_addr], {r0};
__device__ __forceinline__ void stmatrix_x1(uint32_t row_addr, uint32_t r0) {
#if FLASHPTX_HAS_SM90
  asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" :: "r"(row_addr), "r"(r0) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("stmatrix needs sm_90");
#endif
}

// stmatrix.sync.aligned.m8n8.x2.shared.b16 [row_addr], {r0, r1};
__device__ __forceinline__ void stmatrix_x2(uint32_t row_addr, uint32_t r0, uint32_t r1) {
#if FLASHPTX_HAS_SM90
  asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};"
               :: "r"(row_addr), "r"(r0), "r"(r1) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("stmatrix needs sm_90");
#endif
}

// stmatrix.sync.aligned.m8n8.x4.shared.b16 [row_addr], {r0, r1, r2, r3};
__device__ __forceinline__ void stmatrix_x4(uint32_t row_addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
#if FLASHPTX_HAS_SM90
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
               :: "r"(row_addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("stmatrix needs sm_90");
#endif
}

// stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [row_addr], {r0};
// As stmatrix_x1, with the matrix transposed on the way to memory.
__device__ __forceinline__ void stmatrix_x1_trans(uint32_t row_addr, uint32_t r0) {
#if FLASHPTX_HAS_SM90
  asm volatile("stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%0], {%1};" :: "r"(row_addr), "r"(r0) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("stmatrix needs sm_90");
#endif
}

// stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [row_addr], {r0, r1};
__device__ __forceinline__ void stmatrix_x2_trans(uint32_t row_addr, uint32_t r0, uint32_t r1) {
#if FLASHPTX_HAS_SM90
  asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};"
               :: "r"(row_addr), "r"(r0), "r"(r1) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("stmatrix needs sm_90");
#endif
}

// stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [row_addr], {r0, r1, r2, r3};
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t row_addr, uint32_t r0, uint32_t r1, uint32_t r2,
                                                  uint32_t r3) {
#if FLASHPTX_HAS_SM90
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};"
               :: "r"(row_addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("stmatrix needs sm_90");
#endif
}

// ---- prmt -------------------------------------------------------------------------------------

// prmt.b32 d, a, b, selector;   (default mode)
// Byte permute: the 8 bytes {b, a} are numbered 0-3 (a, low to high) and 4-7 (b); nibble i of
// `selector` (i = 0..3) picks the source byte of result byte i (bits 0-2 the index; bit 3 set
// replicates that byte's sign bit instead). Certifies exactly that bit-level result; pure register
// operation, no memory effect. Used to pack/unpack 8- and 16-bit lanes (e.g. fp8 <-> fp16 shuffles).
__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t selector) {
  uint32_t d = 0;
#if FLASHPTX_HAS_SM90
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(selector));
#else
  FLASHPTX_ARCH_UNSUPPORTED("prmt is only built for sm_90+ in flashptx");
#endif
  return d;
}

// The same with the selector as an immediate, checked: only the low 16 bits are meaningful.
template <uint32_t Selector>
__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b) {
  static_assert(Selector <= 0xFFFFu, "prmt selector: 4 nibbles");
  uint32_t d = 0;
#if FLASHPTX_HAS_SM90
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "n"(Selector));
#else
  FLASHPTX_ARCH_UNSUPPORTED("prmt is only built for sm_90+ in flashptx");
#endif
  return d;
}

// byte_perm: the CUDA spelling of the same (__byte_perm(a, b, s) == prmt(a, b, s)).
__device__ __forceinline__ uint32_t byte_perm(uint32_t a, uint32_t b, uint32_t selector) {
  return prmt(a, b, selector);
}

// ---- elect.sync -------------------------------------------------------------------------------

struct Elected {
  bool is_elected;  // true in exactly one thread of `membermask`
  uint32_t lane;    // the lane id of the elected thread, the same in every participating thread
};

// elect.sync lane|p, membermask;
// Elects one thread among the non-exited threads of `membermask` (the lowest active lane, per the
// ISA's "leader" definition); every thread in the mask must execute it (sync). Certifies: exactly
// one participating thread gets is_elected, and all get its lane id. Does not certify any memory
// ordering, and does not make the elected thread uniform across calls unless the mask is.
__device__ __forceinline__ Elected elect_sync(uint32_t membermask = 0xFFFFFFFFu) {
  uint32_t lane = 0, pred = 0;
#if FLASHPTX_HAS_SM90
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "elect.sync %0|p, %2;\n"
      "selp.u32 %1, 1, 0, p;\n"
      "}\n"
      : "=r"(lane), "=r"(pred) : "r"(membermask));
#else
  FLASHPTX_ARCH_UNSUPPORTED("elect.sync needs sm_90");
#endif
  return Elected{pred != 0, lane};
}

// The common use: is this thread the elected one of the full warp?
__device__ __forceinline__ bool elect_one_sync() { return elect_sync(0xFFFFFFFFu).is_elected; }

// ---- st.shared ----------------------------------------------------------------------------------

// st.shared.b32 [addr], v;
// A plain 4-byte store to shared::cta (`addr` a 32-bit shared-state-space address). Certifies the
// store in program order for this thread (generic proxy) only. Does not make it visible to the async
// proxy (TMA, wgmma): the writer must execute fence.proxy.async.shared::cta (ptx/fence.cuh) before
// the barrier that hands the bytes to an async-proxy reader.
__device__ __forceinline__ void st_shared_b32(uint32_t addr, uint32_t v) {
#if FLASHPTX_HAS_SM90
  asm volatile("st.shared.b32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("st.shared is only built for sm_90+ in flashptx");
#endif
}

// st.shared.v4.f32 [addr], {a, b, c, d};   (addr 16-byte aligned)
// Same contract as st_shared_b32: generic proxy, this thread only.
__device__ __forceinline__ void st_shared_v4_f32(uint32_t addr, float a, float b, float c, float d) {
#if FLASHPTX_HAS_SM90
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" :: "r"(addr), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("st.shared is only built for sm_90+ in flashptx");
#endif
}

// st.shared.v4.b32 [addr], {a, b, c, d};   (addr 16-byte aligned)
// Same contract as st_shared_b32: generic proxy, this thread only (packed 16-bit pairs, raw bits).
__device__ __forceinline__ void st_shared_v4_b32(uint32_t addr, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
#if FLASHPTX_HAS_SM90
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" :: "r"(addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("st.shared is only built for sm_90+ in flashptx");
#endif
}

// ---- st.global ----------------------------------------------------------------------------------

// st.global.b32 [ptr], v;   (ptr 4-byte aligned, a global-state-space address in generic form)
// A plain 4-byte store to global memory by this thread (generic proxy). Certifies the store in
// program order for this thread only; visible to other threads of the grid after kernel completion
// (or through a fence and a synchronisation the caller provides). Does not order it against this
// thread's earlier async-proxy (TMA) stores to the same bytes.
__device__ __forceinline__ void st_global_b32(void* ptr, uint32_t v) {
#if FLASHPTX_HAS_SM90
  asm volatile("st.global.b32 [%0], %1;" :: "l"(ptr), "r"(v) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("st.global is only built for sm_90+ in flashptx");
#endif
}

// ld.shared.v2.f32 {a, b}, [addr];   (addr 8-byte aligned)
// A plain load (generic proxy). Bytes written by TMA are visible to it once the mbarrier phase
// their complete_tx signalled has been observed complete by this thread (mbarrier try_wait).
__device__ __forceinline__ float2 ld_shared_v2_f32(uint32_t addr) {
  float2 v = make_float2(0.f, 0.f);
#if FLASHPTX_HAS_SM90
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(addr) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("ld.shared is only built for sm_90+ in flashptx");
#endif
  return v;
}

// ld.shared.v4.b32 {a, b, c, d}, [addr];   (addr 16-byte aligned)
// A plain load (generic proxy). Bytes another thread wrote with st.shared are visible to it once
// this thread has observed complete an mbarrier phase that the writer's release-arrive (after the
// store) completed (PTX ISA "mbarrier": arrive has release, try_wait acquire semantics).
__device__ __forceinline__ int4 ld_shared_v4_b32(uint32_t addr) {
  int4 v = make_int4(0, 0, 0, 0);
#if FLASHPTX_HAS_SM90
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("ld.shared is only built for sm_90+ in flashptx");
#endif
  return v;
}

}  // namespace flashptx::ptx
