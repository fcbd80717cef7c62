// tcgen05: Blackwell's 5th-generation tensor-core family and Tensor Memory (TMEM), sm_100a only
// (PTX ISA: "Tensorcore 5th Generation Family Instructions": "Tensor Memory" allocation and
// addressing, "tcgen05.alloc/dealloc/relinquish_alloc_permit", "tcgen05.mma", "tcgen05.commit",
// "tcgen05.ld", "tcgen05.st", "tcgen05.wait", "tcgen05.fence", and the "Memory Consistency Model"
// pieces they cite). Descriptors and TMEM address packing: ptx/tcgen05_desc.cuh.
//
// Who issues what (each wrapper's contract repeats its own line):
//   alloc / dealloc / relinquish_alloc_permit   one whole warp (.sync.aligned); for cta_group::2 one
//                                               warp in each CTA of the pair
//   mma / commit                                one thread (the MMA is asynchronous)
//   ld / st / wait::ld / wait::st               whole warps; warp w%4 of a warpgroup owns TMEM lanes
//                                               [32*(w%4), 32*(w%4)+32)
//   fence::before/after_thread_sync             any thread, around the thread synchronisation
//                                               (bar.sync, mbarrier, barrier.cluster) that orders
//                                               tcgen05 operations of different threads
// Completion chain of an MMA result: issue mma -> tcgen05.commit to an mbarrier -> consumers wait on
// that mbarrier -> tcgen05.fence::after_thread_sync -> tcgen05.ld -> tcgen05.wait::ld -> use the
// registers. All tcgen05 operations of one kernel must use the same cta_group.
#pragma once
#include <cstdint>

#include "ptx/arch.cuh"
#include "ptx/tcgen05_desc.cuh"

namespace flashptx::ptx {

// ---- TMEM allocation ----------------------------------------------------------------------------

// tcgen05.alloc.cta_group::{1,2}.sync.aligned.shared::cta.b32 [dst], ncols;
// @pre executed by all 32 threads of one warp, convergently (for cta_group::2: one warp in each of
//      the two peer CTAs, with the same NCols); NCols a power of two in [32, 512].
// @pre cta_group::2: the peer CTA is known to be running, i.e. a cluster barrier (barrier.cluster
//      arrive + wait, ptx::barrier_cluster_sync) separates kernel entry from the alloc. A cluster
//      launch does not promise both CTAs start together, and the pair allocation touches the peer
//      ("Cluster of Cooperative Thread Arrays": a CTA must make sure its peer exists before acting
//      on it; CUTLASS syncs the cluster before its pair allocation).
// Certifies: once the instruction completes, the 32-bit TMEM base address (lane 0, first column) of
// NCols freshly allocated columns is written to shared memory at `dst_smem` (shared::cta address).
// It may block until columns are free. Does not certify: visibility of that address to other warps
// (tcgen05.fence::before_thread_sync, a CTA barrier, tcgen05.fence::after_thread_sync, then read it),
// nor the values in the columns (uninitialised). Every allocation must be deallocated before exit.
template <int CtaGroup, uint32_t NCols>
__device__ __forceinline__ void tcgen05_alloc(uint32_t dst_smem) {
  static_assert(CtaGroup == 1 || CtaGroup == 2, "cta_group is 1 or 2");
  static_assert(tmem_alloc_cols_ok(NCols), "tcgen05.alloc: ncols must be a power of two in [32, 512]");
#if FLASHPTX_HAS_SM100A
  if constexpr (CtaGroup == 1) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" :: "r"(dst_smem), "n"(NCols) : "memory");
  } else {
    asm volatile("tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%0], %1;" :: "r"(dst_smem), "n"(NCols) : "memory");
  }
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.alloc needs sm_100a");
#endif
}

// tcgen05.dealloc.cta_group::{1,2}.sync.aligned.b32 taddr, ncols;
// @pre one whole warp (cta_group::2: one warp per peer CTA), `taddr` and NCols exactly as returned
//      by / given to the matching alloc; every tcgen05 operation touching the columns, in this CTA
//      and (cta_group::2) in the peer, has completed and is ordered before (wait::ld/st, commit +
//      mbarrier wait, fence::before_thread_sync + barrier + fence::after_thread_sync).
// Certifies: the columns are returned. Does not certify that the peer CTA stopped using them.
template <int CtaGroup, uint32_t NCols>
__device__ __forceinline__ void tcgen05_dealloc(uint32_t taddr) {
  static_assert(CtaGroup == 1 || CtaGroup == 2, "cta_group is 1 or 2");
  static_assert(tmem_alloc_cols_ok(NCols), "tcgen05.dealloc: ncols must be a power of two in [32, 512]");
#if FLASHPTX_HAS_SM100A
  if constexpr (CtaGroup == 1) {
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(taddr), "n"(NCols) : "memory");
  } else {
    asm volatile("tcgen05.dealloc.cta_group::2.sync.aligned.b32 %0, %1;" :: "r"(taddr), "n"(NCols) : "memory");
  }
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.dealloc needs sm_100a");
#endif
}

// tcgen05.relinquish_alloc_permit.cta_group::{1,2}.sync.aligned;
// @pre one whole warp (cta_group::2: per peer CTA). Certifies: this CTA gives up the right to
// allocate again (a later tcgen05.alloc is undefined), which lets other CTAs' blocked allocations
// proceed sooner. Does not free anything: live columns stay live until dealloc.
template <int CtaGroup>
__device__ __forceinline__ void tcgen05_relinquish_alloc_permit() {
  static_assert(CtaGroup == 1 || CtaGroup == 2, "cta_group is 1 or 2");
#if FLASHPTX_HAS_SM100A
  if constexpr (CtaGroup == 1) {
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
  } else {
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;" ::: "memory");
  }
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.relinquish_alloc_permit needs sm_100a");
#endif
}

// ---- MMA ----------------------------------------------------------------------------------------
// D[M x N] (TMEM, f32 or f16 cells) = A[M x K] * B[K x N] + (accumulate ? D : 0), K = 16 for
// kind::f16, 32 for kind::f8f6f4. SS: A and B from shared memory (64-bit descriptors,
// make_umma_smem_desc). TS: A from TMEM at `a_tmem` (K-major, two 16-bit or four 8-bit elements per
// 32-bit cell, row i in lane i; the idesc's transpose-A bit clear, umma_a_tmem_ok), B from shared
// memory. `idesc` from make_umma_idesc_*; its CtaGroup must match. The enable-input-d predicate is
// `accumulate`. Consecutive K steps advance the descriptors by the layout's own K-step offset
// (flashptx::umma::kstep_offset), never by a literal.
// @pre issued by ONE thread (cta_group::2: one thread of the pair, in the CTA of even rank, both
//      CTAs' operands ready and both CTAs running); the shared-memory operands were written by the
//      async proxy (TMA, waited on) or fenced with fence.proxy.async.shared::cta + barrier; D and a
//      TMEM A were allocated with the same cta_group.
// Certifies: the MMA is enqueued; MMAs from the same thread with the same accumulator, shape and
// kind execute in issue order. Does not certify completion: neither D nor the release of the smem
// operands is observable until a tcgen05.commit of this thread arrives on its mbarrier.
// In SASS: UTCHMMA (kind::f16), UTCQMMA (kind::f8f6f4); cta_group::2 adds .2CTA.

// tcgen05.mma.cta_group::{1,2}.kind::f16 [d_tmem], a_desc, b_desc, idesc, p;
template <int CtaGroup = 1>
__device__ __forceinline__ void tcgen05_mma_f16_ss(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc,
                                                   bool accumulate) {
  static_assert(CtaGroup == 1 || CtaGroup == 2, "cta_group is 1 or 2");
#if FLASHPTX_HAS_SM100A
  if constexpr (CtaGroup == 1) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
                 "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n}\n"
                 :: "r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(static_cast<uint32_t>(accumulate)) : "memory");
  } else {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
                 "tcgen05.mma.cta_group::2.kind::f16 [%0], %1, %2, %3, p;\n}\n"
                 :: "r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(static_cast<uint32_t>(accumulate)) : "memory");
  }
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.mma needs sm_100a");
#endif
}

// tcgen05.mma.cta_group::{1,2}.kind::f16 [d_tmem], [a_tmem], b_desc, idesc, p;
template <int CtaGroup = 1>
__device__ __forceinline__ void tcgen05_mma_f16_ts(uint32_t d_tmem, uint32_t a_tmem, uint64_t b_desc, uint32_t idesc,
                                                   bool accumulate) {
  static_assert(CtaGroup == 1 || CtaGroup == 2, "cta_group is 1 or 2");
#if FLASHPTX_HAS_SM100A
  if constexpr (CtaGroup == 1) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
                 "tcgen05.mma.cta_group::1.kind::f16 [%0], [%1], %2, %3, p;\n}\n"
                 :: "r"(d_tmem), "r"(a_tmem), "l"(b_desc), "r"(idesc), "r"(static_cast<uint32_t>(accumulate)) : "memory");
  } else {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
                 "tcgen05.mma.cta_group::2.kind::f16 [%0], [%1], %2, %3, p;\n}\n"
                 :: "r"(d_tmem), "r"(a_tmem), "l"(b_desc), "r"(idesc), "r"(static_cast<uint32_t>(accumulate)) : "memory");
  }
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.mma needs sm_100a");
#endif
}

// tcgen05.mma.cta_group::{1,2}.kind::f8f6f4 [d_tmem], a_desc, b_desc, idesc, p;
template <int CtaGroup = 1>
__device__ __forceinline__ void tcgen05_mma_f8f6f4_ss(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc,
                                                      bool accumulate) {
  static_assert(CtaGroup == 1 || CtaGroup == 2, "cta_group is 1 or 2");
#if FLASHPTX_HAS_SM100A
  if constexpr (CtaGroup == 1) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
                 "tcgen05.mma.cta_group::1.kind::f8f6f4 [%0], %1, %2, %3, p;\n}\n"
                 :: "r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(static_cast<uint32_t>(accumulate)) : "memory");
  } else {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
                 "tcgen05.mma.cta_group::2.kind::f8f6f4 [%0], %1, %2, %3, p;\n}\n"
                 :: "r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(static_cast<uint32_t>(accumulate)) : "memory");
  }
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.mma needs sm_100a");
#endif
}

// tcgen05.mma.cta_group::{1,2}.kind::f8f6f4 [d_tmem], [a_tmem], b_desc, idesc, p;
template <int CtaGroup = 1>
__device__ __forceinline__ void tcgen05_mma_f8f6f4_ts(uint32_t d_tmem, uint32_t a_tmem, uint64_t b_desc,
                                                      uint32_t idesc, bool accumulate) {
  static_assert(CtaGroup == 1 || CtaGroup == 2, "cta_group is 1 or 2");
#if FLASHPTX_HAS_SM100A
  if constexpr (CtaGroup == 1) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
                 "tcgen05.mma.cta_group::1.kind::f8f6f4 [%0], [%1], %2, %3, p;\n}\n"
                 :: "r"(d_tmem), "r"(a_tmem), "l"(b_desc), "r"(idesc), "r"(static_cast<uint32_t>(accumulate)) : "memory");
  } else {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
                 "tcgen05.mma.cta_group::2.kind::f8f6f4 [%0], [%1], %2, %3, p;\n}\n"
                 :: "r"(d_tmem), "r"(a_tmem), "l"(b_desc), "r"(idesc), "r"(static_cast<uint32_t>(accumulate)) : "memory");
  }
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.mma needs sm_100a");
#endif
}

// ---- commit ---------------------------------------------------------------------------------------

// tcgen05.commit.cta_group::{1,2}.mbarrier::arrive::one.shared::cluster.b64 [bar];
// @pre issued by the thread that issued the tcgen05.mma (and tcgen05.cp/shift) operations to track.
// Certifies: when all prior asynchronous tcgen05 operations of this thread have completed (their
// TMEM results written, their smem operands no longer read), one arrive-on is performed on the
// mbarrier at `bar` (a shared::cta address of this CTA, valid as shared::cluster). Waiters that
// acquire that phase and then execute tcgen05.fence::after_thread_sync may read the results. Does
// not certify anything about operations issued after it, nor does it wait.
template <int CtaGroup = 1>
__device__ __forceinline__ void tcgen05_commit(uint32_t bar) {
  static_assert(CtaGroup == 1 || CtaGroup == 2, "cta_group is 1 or 2");
#if FLASHPTX_HAS_SM100A
  if constexpr (CtaGroup == 1) {
    asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" :: "r"(bar) : "memory");
  } else {
    asm volatile("tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.b64 [%0];" :: "r"(bar) : "memory");
  }
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.commit needs sm_100a");
#endif
}

// tcgen05.commit.cta_group::{1,2}.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [bar], cta_mask;
// As tcgen05_commit, but the arrive-on is performed on the mbarrier at the same shared-memory
// offset `bar` in every CTA of the cluster whose rank bit is set in `cta_mask` (e.g. 0b11: both CTAs
// of a pair, the usual completion signal of a cta_group::2 MMA).
template <int CtaGroup = 1>
__device__ __forceinline__ void tcgen05_commit_multicast(uint32_t bar, uint16_t cta_mask) {
  static_assert(CtaGroup == 1 || CtaGroup == 2, "cta_group is 1 or 2");
#if FLASHPTX_HAS_SM100A
  if constexpr (CtaGroup == 1) {
    asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%0], %1;" :: "r"(bar), "h"(cta_mask) : "memory");
  } else {
    asm volatile("tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%0], %1;" :: "r"(bar), "h"(cta_mask) : "memory");
  }
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.commit needs sm_100a");
#endif
}

// ---- fences and waits -----------------------------------------------------------------------------

// tcgen05.fence::before_thread_sync;
// Certifies: this thread's prior asynchronous tcgen05 operations (and alloc's write of the address)
// are ordered before a following thread synchronisation (bar.sync, mbarrier arrive, barrier.cluster).
// Does not certify completion; it only makes the synchronisation a valid ordering edge.
__device__ __forceinline__ void tcgen05_fence_before_thread_sync() {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.fence needs sm_100a");
#endif
}

// tcgen05.fence::after_thread_sync;
// Certifies: this thread's subsequent tcgen05 operations are ordered after a preceding thread
// synchronisation (the consumer side of the pair above; also required after the mbarrier wait that
// observes a tcgen05.commit, before tcgen05.ld of the results).
__device__ __forceinline__ void tcgen05_fence_after_thread_sync() {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.fence needs sm_100a");
#endif
}

// tcgen05.wait::ld.sync.aligned;
// @pre whole warp. Certifies: all prior tcgen05.ld of this thread have completed, their destination
// registers hold the data. Does not stop the compiler from moving register uses above it: use
// tcgen05_wait_ld_bind() on the destination array, which ties the registers to the wait.
__device__ __forceinline__ void tcgen05_wait_ld() {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.wait needs sm_100a");
#endif
}

// tcgen05.wait::st.sync.aligned;
// @pre whole warp. Certifies: all prior tcgen05.st of this thread have completed (their source
// registers may be reused and a following fence::before_thread_sync + barrier publishes the cells,
// e.g. to an MMA reading A from TMEM).
__device__ __forceinline__ void tcgen05_wait_st() {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.wait::st.sync.aligned;" ::: "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.wait needs sm_100a");
#endif
}

// ---- TMEM <-> registers, shape 32x32b -------------------------------------------------------------
// @pre whole warp, convergent; `taddr` names lane 32*(warp%4) (the warp's own lane quarter) and a
// start column c. Thread t of the warp accesses TMEM lane 32*(warp%4)+t, columns c .. c+N-1: register
// r[j] <-> column c+j. Loads certify nothing until tcgen05.wait::ld; stores until tcgen05.wait::st.
// Reading TMEM written by an MMA additionally needs the commit -> mbarrier -> fence::after chain.
// In SASS: LDTM / STTM.

// tcgen05.ld.sync.aligned.32x32b.x1.b32
__device__ __forceinline__ void tcgen05_ld_32x32b_x1(uint32_t taddr, uint32_t (&r)[1]) {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x1.b32 {%0}, [%1];"
               : "=r"(r[0])
               : "r"(taddr));
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.ld needs sm_100a");
#endif
}

// tcgen05.ld.sync.aligned.32x32b.x2.b32
__device__ __forceinline__ void tcgen05_ld_32x32b_x2(uint32_t taddr, uint32_t (&r)[2]) {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x2.b32 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(taddr));
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.ld needs sm_100a");
#endif
}

// tcgen05.ld.sync.aligned.32x32b.x4.b32
__device__ __forceinline__ void tcgen05_ld_32x32b_x4(uint32_t taddr, uint32_t (&r)[4]) {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(taddr));
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.ld needs sm_100a");
#endif
}

// tcgen05.ld.sync.aligned.32x32b.x8.b32
__device__ __forceinline__ void tcgen05_ld_32x32b_x8(uint32_t taddr, uint32_t (&r)[8]) {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x8.b32 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7])
               : "r"(taddr));
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.ld needs sm_100a");
#endif
}

// tcgen05.ld.sync.aligned.32x32b.x16.b32
__device__ __forceinline__ void tcgen05_ld_32x32b_x16(uint32_t taddr, uint32_t (&r)[16]) {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x16.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, [%16];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]), "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15])
               : "r"(taddr));
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.ld needs sm_100a");
#endif
}

// tcgen05.ld.sync.aligned.32x32b.x32.b32
__device__ __forceinline__ void tcgen05_ld_32x32b_x32(uint32_t taddr, uint32_t (&r)[32]) {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x32.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, [%32];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]), "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15]), "=r"(r[16]), "=r"(r[17]), "=r"(r[18]), "=r"(r[19]), "=r"(r[20]), "=r"(r[21]), "=r"(r[22]), "=r"(r[23]), "=r"(r[24]), "=r"(r[25]), "=r"(r[26]), "=r"(r[27]), "=r"(r[28]), "=r"(r[29]), "=r"(r[30]), "=r"(r[31])
               : "r"(taddr));
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.ld needs sm_100a");
#endif
}

// tcgen05.ld.sync.aligned.32x32b.x64.b32
__device__ __forceinline__ void tcgen05_ld_32x32b_x64(uint32_t taddr, uint32_t (&r)[64]) {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x64.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, [%64];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]), "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15]), "=r"(r[16]), "=r"(r[17]), "=r"(r[18]), "=r"(r[19]), "=r"(r[20]), "=r"(r[21]), "=r"(r[22]), "=r"(r[23]), "=r"(r[24]), "=r"(r[25]), "=r"(r[26]), "=r"(r[27]), "=r"(r[28]), "=r"(r[29]), "=r"(r[30]), "=r"(r[31]), "=r"(r[32]), "=r"(r[33]), "=r"(r[34]), "=r"(r[35]), "=r"(r[36]), "=r"(r[37]), "=r"(r[38]), "=r"(r[39]), "=r"(r[40]), "=r"(r[41]), "=r"(r[42]), "=r"(r[43]), "=r"(r[44]), "=r"(r[45]), "=r"(r[46]), "=r"(r[47]), "=r"(r[48]), "=r"(r[49]), "=r"(r[50]), "=r"(r[51]), "=r"(r[52]), "=r"(r[53]), "=r"(r[54]), "=r"(r[55]), "=r"(r[56]), "=r"(r[57]), "=r"(r[58]), "=r"(r[59]), "=r"(r[60]), "=r"(r[61]), "=r"(r[62]), "=r"(r[63])
               : "r"(taddr));
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.ld needs sm_100a");
#endif
}

// tcgen05.ld.sync.aligned.32x32b.x128.b32
__device__ __forceinline__ void tcgen05_ld_32x32b_x128(uint32_t taddr, uint32_t (&r)[128]) {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x128.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, [%128];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]), "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15]), "=r"(r[16]), "=r"(r[17]), "=r"(r[18]), "=r"(r[19]), "=r"(r[20]), "=r"(r[21]), "=r"(r[22]), "=r"(r[23]), "=r"(r[24]), "=r"(r[25]), "=r"(r[26]), "=r"(r[27]), "=r"(r[28]), "=r"(r[29]), "=r"(r[30]), "=r"(r[31]), "=r"(r[32]), "=r"(r[33]), "=r"(r[34]), "=r"(r[35]), "=r"(r[36]), "=r"(r[37]), "=r"(r[38]), "=r"(r[39]), "=r"(r[40]), "=r"(r[41]), "=r"(r[42]), "=r"(r[43]), "=r"(r[44]), "=r"(r[45]), "=r"(r[46]), "=r"(r[47]), "=r"(r[48]), "=r"(r[49]), "=r"(r[50]), "=r"(r[51]), "=r"(r[52]), "=r"(r[53]), "=r"(r[54]), "=r"(r[55]), "=r"(r[56]), "=r"(r[57]), "=r"(r[58]), "=r"(r[59]), "=r"(r[60]), "=r"(r[61]), "=r"(r[62]), "=r"(r[63]), "=r"(r[64]), "=r"(r[65]), "=r"(r[66]), "=r"(r[67]), "=r"(r[68]), "=r"(r[69]), "=r"(r[70]), "=r"(r[71]), "=r"(r[72]), "=r"(r[73]), "=r"(r[74]), "=r"(r[75]), "=r"(r[76]), "=r"(r[77]), "=r"(r[78]), "=r"(r[79]), "=r"(r[80]), "=r"(r[81]), "=r"(r[82]), "=r"(r[83]), "=r"(r[84]), "=r"(r[85]), "=r"(r[86]), "=r"(r[87]), "=r"(r[88]), "=r"(r[89]), "=r"(r[90]), "=r"(r[91]), "=r"(r[92]), "=r"(r[93]), "=r"(r[94]), "=r"(r[95]), "=r"(r[96]), "=r"(r[97]), "=r"(r[98]), "=r"(r[99]), "=r"(r[100]), "=r"(r[101]), "=r"(r[102]), "=r"(r[103]), "=r"(r[104]), "=r"(r[105]), "=r"(r[106]), "=r"(r[107]), "=r"(r[108]), "=r"(r[109]), "=r"(r[110]), "=r"(r[111]), "=r"(r[112]), "=r"(r[113]), "=r"(r[114]), "=r"(r[115]), "=r"(r[116]), "=r"(r[117]), "=r"(r[118]), "=r"(r[119]), "=r"(r[120]), "=r"(r[121]), "=r"(r[122]), "=r"(r[123]), "=r"(r[124]), "=r"(r[125]), "=r"(r[126]), "=r"(r[127])
               : "r"(taddr));
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.ld needs sm_100a");
#endif
}

// tcgen05.st.sync.aligned.32x32b.x1.b32
__device__ __forceinline__ void tcgen05_st_32x32b_x1(uint32_t taddr, const uint32_t (&r)[1]) {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.st.sync.aligned.32x32b.x1.b32 [%0], {%1};"
               :: "r"(taddr), "r"(r[0])
               : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.st needs sm_100a");
#endif
}

// tcgen05.st.sync.aligned.32x32b.x2.b32
__device__ __forceinline__ void tcgen05_st_32x32b_x2(uint32_t taddr, const uint32_t (&r)[2]) {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.st.sync.aligned.32x32b.x2.b32 [%0], {%1, %2};"
               :: "r"(taddr), "r"(r[0]), "r"(r[1])
               : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.st needs sm_100a");
#endif
}

// tcgen05.st.sync.aligned.32x32b.x4.b32
__device__ __forceinline__ void tcgen05_st_32x32b_x4(uint32_t taddr, const uint32_t (&r)[4]) {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.st.sync.aligned.32x32b.x4.b32 [%0], {%1, %2, %3, %4};"
               :: "r"(taddr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.st needs sm_100a");
#endif
}

// tcgen05.st.sync.aligned.32x32b.x8.b32
__device__ __forceinline__ void tcgen05_st_32x32b_x8(uint32_t taddr, const uint32_t (&r)[8]) {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.st.sync.aligned.32x32b.x8.b32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8};"
               :: "r"(taddr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]), "r"(r[4]), "r"(r[5]), "r"(r[6]), "r"(r[7])
               : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.st needs sm_100a");
#endif
}

// tcgen05.st.sync.aligned.32x32b.x16.b32
__device__ __forceinline__ void tcgen05_st_32x32b_x16(uint32_t taddr, const uint32_t (&r)[16]) {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.st.sync.aligned.32x32b.x16.b32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16};"
               :: "r"(taddr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]), "r"(r[4]), "r"(r[5]), "r"(r[6]), "r"(r[7]), "r"(r[8]), "r"(r[9]), "r"(r[10]), "r"(r[11]), "r"(r[12]), "r"(r[13]), "r"(r[14]), "r"(r[15])
               : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.st needs sm_100a");
#endif
}

// tcgen05.st.sync.aligned.32x32b.x32.b32
__device__ __forceinline__ void tcgen05_st_32x32b_x32(uint32_t taddr, const uint32_t (&r)[32]) {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.st.sync.aligned.32x32b.x32.b32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32};"
               :: "r"(taddr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]), "r"(r[4]), "r"(r[5]), "r"(r[6]), "r"(r[7]), "r"(r[8]), "r"(r[9]), "r"(r[10]), "r"(r[11]), "r"(r[12]), "r"(r[13]), "r"(r[14]), "r"(r[15]), "r"(r[16]), "r"(r[17]), "r"(r[18]), "r"(r[19]), "r"(r[20]), "r"(r[21]), "r"(r[22]), "r"(r[23]), "r"(r[24]), "r"(r[25]), "r"(r[26]), "r"(r[27]), "r"(r[28]), "r"(r[29]), "r"(r[30]), "r"(r[31])
               : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.st needs sm_100a");
#endif
}

// tcgen05.st.sync.aligned.32x32b.x64.b32
__device__ __forceinline__ void tcgen05_st_32x32b_x64(uint32_t taddr, const uint32_t (&r)[64]) {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.st.sync.aligned.32x32b.x64.b32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64};"
               :: "r"(taddr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]), "r"(r[4]), "r"(r[5]), "r"(r[6]), "r"(r[7]), "r"(r[8]), "r"(r[9]), "r"(r[10]), "r"(r[11]), "r"(r[12]), "r"(r[13]), "r"(r[14]), "r"(r[15]), "r"(r[16]), "r"(r[17]), "r"(r[18]), "r"(r[19]), "r"(r[20]), "r"(r[21]), "r"(r[22]), "r"(r[23]), "r"(r[24]), "r"(r[25]), "r"(r[26]), "r"(r[27]), "r"(r[28]), "r"(r[29]), "r"(r[30]), "r"(r[31]), "r"(r[32]), "r"(r[33]), "r"(r[34]), "r"(r[35]), "r"(r[36]), "r"(r[37]), "r"(r[38]), "r"(r[39]), "r"(r[40]), "r"(r[41]), "r"(r[42]), "r"(r[43]), "r"(r[44]), "r"(r[45]), "r"(r[46]), "r"(r[47]), "r"(r[48]), "r"(r[49]), "r"(r[50]), "r"(r[51]), "r"(r[52]), "r"(r[53]), "r"(r[54]), "r"(r[55]), "r"(r[56]), "r"(r[57]), "r"(r[58]), "r"(r[59]), "r"(r[60]), "r"(r[61]), "r"(r[62]), "r"(r[63])
               : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.st needs sm_100a");
#endif
}

// tcgen05.st.sync.aligned.32x32b.x128.b32
__device__ __forceinline__ void tcgen05_st_32x32b_x128(uint32_t taddr, const uint32_t (&r)[128]) {
#if FLASHPTX_HAS_SM100A
  asm volatile("tcgen05.st.sync.aligned.32x32b.x128.b32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127, %128};"
               :: "r"(taddr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]), "r"(r[4]), "r"(r[5]), "r"(r[6]), "r"(r[7]), "r"(r[8]), "r"(r[9]), "r"(r[10]), "r"(r[11]), "r"(r[12]), "r"(r[13]), "r"(r[14]), "r"(r[15]), "r"(r[16]), "r"(r[17]), "r"(r[18]), "r"(r[19]), "r"(r[20]), "r"(r[21]), "r"(r[22]), "r"(r[23]), "r"(r[24]), "r"(r[25]), "r"(r[26]), "r"(r[27]), "r"(r[28]), "r"(r[29]), "r"(r[30]), "r"(r[31]), "r"(r[32]), "r"(r[33]), "r"(r[34]), "r"(r[35]), "r"(r[36]), "r"(r[37]), "r"(r[38]), "r"(r[39]), "r"(r[40]), "r"(r[41]), "r"(r[42]), "r"(r[43]), "r"(r[44]), "r"(r[45]), "r"(r[46]), "r"(r[47]), "r"(r[48]), "r"(r[49]), "r"(r[50]), "r"(r[51]), "r"(r[52]), "r"(r[53]), "r"(r[54]), "r"(r[55]), "r"(r[56]), "r"(r[57]), "r"(r[58]), "r"(r[59]), "r"(r[60]), "r"(r[61]), "r"(r[62]), "r"(r[63]), "r"(r[64]), "r"(r[65]), "r"(r[66]), "r"(r[67]), "r"(r[68]), "r"(r[69]), "r"(r[70]), "r"(r[71]), "r"(r[72]), "r"(r[73]), "r"(r[74]), "r"(r[75]), "r"(r[76]), "r"(r[77]), "r"(r[78]), "r"(r[79]), "r"(r[80]), "r"(r[81]), "r"(r[82]), "r"(r[83]), "r"(r[84]), "r"(r[85]), "r"(r[86]), "r"(r[87]), "r"(r[88]), "r"(r[89]), "r"(r[90]), "r"(r[91]), "r"(r[92]), "r"(r[93]), "r"(r[94]), "r"(r[95]), "r"(r[96]), "r"(r[97]), "r"(r[98]), "r"(r[99]), "r"(r[100]), "r"(r[101]), "r"(r[102]), "r"(r[103]), "r"(r[104]), "r"(r[105]), "r"(r[106]), "r"(r[107]), "r"(r[108]), "r"(r[109]), "r"(r[110]), "r"(r[111]), "r"(r[112]), "r"(r[113]), "r"(r[114]), "r"(r[115]), "r"(r[116]), "r"(r[117]), "r"(r[118]), "r"(r[119]), "r"(r[120]), "r"(r[121]), "r"(r[122]), "r"(r[123]), "r"(r[124]), "r"(r[125]), "r"(r[126]), "r"(r[127])
               : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("tcgen05.st needs sm_100a");
#endif
}

// Shape-generic spellings: N is the repeat count .xN (columns per thread), 1..128.
template <int N>
__device__ __forceinline__ void tcgen05_ld_32x32b(uint32_t taddr, uint32_t (&r)[N]) {
  static_assert(N == 1 || N == 2 || N == 4 || N == 8 || N == 16 || N == 32 || N == 64 || N == 128,
                "tcgen05.ld 32x32b: .x1 .. .x128");
  if constexpr (N == 1) tcgen05_ld_32x32b_x1(taddr, r);
  else if constexpr (N == 2) tcgen05_ld_32x32b_x2(taddr, r);
  else if constexpr (N == 4) tcgen05_ld_32x32b_x4(taddr, r);
  else if constexpr (N == 8) tcgen05_ld_32x32b_x8(taddr, r);
  else if constexpr (N == 16) tcgen05_ld_32x32b_x16(taddr, r);
  else if constexpr (N == 32) tcgen05_ld_32x32b_x32(taddr, r);
  else if constexpr (N == 64) tcgen05_ld_32x32b_x64(taddr, r);
  else tcgen05_ld_32x32b_x128(taddr, r);
}

template <int N>
__device__ __forceinline__ void tcgen05_st_32x32b(uint32_t taddr, const uint32_t (&r)[N]) {
  static_assert(N == 1 || N == 2 || N == 4 || N == 8 || N == 16 || N == 32 || N == 64 || N == 128,
                "tcgen05.st 32x32b: .x1 .. .x128");
  if constexpr (N == 1) tcgen05_st_32x32b_x1(taddr, r);
  else if constexpr (N == 2) tcgen05_st_32x32b_x2(taddr, r);
  else if constexpr (N == 4) tcgen05_st_32x32b_x4(taddr, r);
  else if constexpr (N == 8) tcgen05_st_32x32b_x8(taddr, r);
  else if constexpr (N == 16) tcgen05_st_32x32b_x16(taddr, r);
  else if constexpr (N == 32) tcgen05_st_32x32b_x32(taddr, r);
  else if constexpr (N == 64) tcgen05_st_32x32b_x64(taddr, r);
  else tcgen05_st_32x32b_x128(taddr, r);
}

// tcgen05.wait::ld, then an empty asm that reads and rewrites every register of `r`, so no use of
// the loaded values can be scheduled by the compiler above the wait (the asm outputs of tcgen05.ld
// are ordinary registers to the compiler; only this data dependence pins their uses).
template <int N>
__device__ __forceinline__ void tcgen05_wait_ld_bind(uint32_t (&r)[N]) {
  tcgen05_wait_ld();
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i]) :: "memory");
}

}  // namespace flashptx::ptx
