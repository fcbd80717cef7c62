// Architecture guards for the ptx/ layer, and its one host/device qualifier.
//
// Every wrapper in ptx/ is written
//     #if FLASHPTX_HAS_<FAMILY>   asm volatile("<the PTX>" ...);
//     #else                       FLASHPTX_ARCH_UNSUPPORTED("<family> needs <arch>");
//     #endif
// The #else branch is never a silent no-op: in a device compilation pass for an architecture that
// lacks the instruction it is a compile-time error (a static_assert that fires when the header is
// compiled for that target), so e.g. setmaxnreg built for plain sm_90 stops the build with the
// message instead of vanishing. In the host pass (__CUDA_ARCH__ undefined) device bodies are not
// code-generated and the guard is inert.
//
// This header is also read by plain C++ compilers (g++ builds the host tests and the CPU models,
// which use the constexpr descriptor builders of ptx/ and the protocol objects of src/protocol/):
// everything in it but smem_u32 is plain C++.
#pragma once
#include <cstdint>

// ---- the host/device qualifier ---------------------------------------------------------------
// FLASHPTX_HD: for code that one source compiles for both sides: the descriptor builders of ptx/
// (device code folds them to immediates, the host tests check their bits) and the protocol objects
// of src/protocol/ that kernels and CPU models share. Defined here, the lowest layer, so that
// ptx/ copied alone still compiles; src/protocol/hd.h includes this header.
#if defined(__CUDACC__)
#define FLASHPTX_HD __host__ __device__ __forceinline__
#else
#define FLASHPTX_HD inline
#endif

// ---- capability macros -------------------------------------------------------------------------
// Any device pass (CUDA 13 compiles sm_75 and later): instructions every such target has, e.g. the
// named barriers bar.sync / bar.arrive with a thread count (sm_20+), ex2.approx.ftz.f32 and trap (all
// targets). Their guard is inert in the host pass, like every other.
#if defined(__CUDA_ARCH__)
#define FLASHPTX_HAS_ANY_SM 1
#else
#define FLASHPTX_HAS_ANY_SM 0
#endif

// sm_80 and later: cvt.rn.bf16x2.f32 and cvt.rn.f16x2.f32 (the packed conversions, PTX ISA 7.0).
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 800)
#define FLASHPTX_HAS_SM80 1
#else
#define FLASHPTX_HAS_SM80 0
#endif

// sm_90 and later: mbarrier try_wait.parity, cp.async.bulk(.tensor), clusters, fence.proxy.async.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
#define FLASHPTX_HAS_SM90 1
#else
#define FLASHPTX_HAS_SM90 0
#endif

// sm_90a only: wgmma (Hopper's warpgroup MMA). Blackwell has no wgmma.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FLASHPTX_HAS_SM90A 1
#else
#define FLASHPTX_HAS_SM90A 0
#endif

// sm_100a (and family-specific sm_100f): tcgen05, TMEM, cluster launch control.
#if defined(__CUDA_ARCH__) && (defined(__CUDA_ARCH_FEAT_SM100_ALL) || \
    (defined(__CUDA_ARCH_FAMILY_SPECIFIC__) && (__CUDA_ARCH_FAMILY_SPECIFIC__ == 1000)))
#define FLASHPTX_HAS_SM100A 1
#else
#define FLASHPTX_HAS_SM100A 0
#endif

// setmaxnreg exists on the architecture-specific targets sm_90a and sm_100a, not on plain sm_90.
#define FLASHPTX_HAS_SETMAXNREG (FLASHPTX_HAS_SM90A || FLASHPTX_HAS_SM100A)

#if defined(__CUDA_ARCH__)
// Device pass for a target without the instruction: stop the build, naming what is missing.
#define FLASHPTX_ARCH_UNSUPPORTED(msg) static_assert(::flashptx::ptx::kArchMismatch, "flashptx: " msg)
#else
#define FLASHPTX_ARCH_UNSUPPORTED(msg) ((void)0)
#endif

namespace flashptx::ptx {
// false; named so that the static_assert above reads as what it is.
inline constexpr bool kArchMismatch = false;

#if defined(__CUDACC__)
// A generic pointer into shared memory as a 32-bit shared-state-space address, which is what the
// shared::cta / shared::cluster operands of the instructions below take. Converted once, at the
// call site, never inside a loop. (CUDA compilers only: __cvta_generic_to_shared is a CUDA builtin.)
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
#endif
}  // namespace flashptx::ptx
