// Test kernels for the synchronisation primitives: ptx/mbarrier.cuh, ptx/barrier.cuh,
// ptx/setmaxnreg.cuh (and cp_async_bulk_load of ptx/tma.cuh as the byte source of expect_tx).
// Every kernel records what it observed; the doctest cases (tests/gpu/test_prim_sync.cpp) judge it.
// Waits are FLASHPTX_MBAR_WAIT (bounded in this flavour), every other spin is bounded by clock64,
// so a protocol bug traps or records a wrong value instead of hanging.
#include <cstdint>

#include "ptx/barrier.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/setmaxnreg.cuh"
#include "ptx/tma.cuh"
#include "tests/kernels/prim_sync.h"

namespace fp = flashptx::ptx;

namespace {

// Busy-waits about `cycles` clock cycles (bounded by construction).
__device__ __forceinline__ void spin_cycles(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

// Polls try_wait.parity up to `tries` times: true as soon as the phase is seen complete. Used where
// the phase must already have completed (a single try_wait may legally time out and say false).
__device__ __forceinline__ bool poll_parity(uint32_t bar, uint32_t parity, int tries = 1 << 20) {
  for (int i = 0; i < tries; ++i)
    if (fp::mbarrier_try_wait_parity(bar, parity)) return true;
  return false;
}

}  // namespace

// ---- mbarrier ping-pong ---------------------------------------------------------------------------
// Semantics: phases and parity across kPingGens generations of two count-32 barriers (full, empty).
// Warp 0 (producer) waits `empty` for generation g-1, writes buf[lane] = in[g][lane], arrives on
// `full`; warp 1 (consumer) waits `full` with parity g&1, records the parity it used and a value
// written by ANOTHER producer lane, then - before its own arrive on `empty`, so the next `full` phase
// cannot have completed - records try_wait(full, g&1) (the completed phase: must be true) and
// try_wait(full, (g+1)&1) (the pending phase: must be false), then arrives on `empty`.
// Fails if: a wait passes early (stale or poisoned data), parity flips wrongly (a trap or a wrong
// flag), arrive lacks release / try_wait lacks acquire (stale data), or try_wait reports a pending
// phase as complete.
__global__ void prim_mbar_pingpong_kernel(const int* in, int* seen, int* parity_used, int* flags) {
  __shared__ alignas(8) uint64_t full, empty;
  __shared__ int buf[32];
  const uint32_t bfull = fp::smem_u32(&full), bempty = fp::smem_u32(&empty);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (threadIdx.x == 0) {
    fp::mbarrier_init(bfull, 32);
    fp::mbarrier_init(bempty, 32);
  }
  if (warp == 0) buf[lane] = -1;  // poison
  __syncthreads();
  for (int g = 0; g < flashptx_test::prim::kPingGens; ++g) {
    if (warp == 0) {
      if (g > 0) FLASHPTX_MBAR_WAIT(bempty, (g - 1) & 1, "pingpong empty");
      spin_cycles(500);  // give an early-passing consumer the chance to read stale data
      buf[lane] = in[g * 32 + lane];
      fp::mbarrier_arrive(bfull);
    } else {
      const uint32_t par = g & 1;
      FLASHPTX_MBAR_WAIT(bfull, par, "pingpong full");
      parity_used[g * 32 + lane] = static_cast<int>(par);
      seen[g * 32 + lane] = buf[(lane + g + 1) % 32];
      const bool completed_true = fp::mbarrier_try_wait_parity(bfull, par);
      const bool pending_false = !fp::mbarrier_try_wait_parity(bfull, par ^ 1u);
      flags[g * 32 + lane] = (completed_true ? 1 : 0) | (pending_false ? 2 : 0);
      fp::mbarrier_arrive(bempty);
    }
  }
}

// ---- mbarrier arrival counting, inval and re-init ------------------------------------------------
// Semantics: a count-5 barrier completes a phase exactly at the 5th arrival, in each of 3
// generations (parities 0, 1, 0); after completion the next phase reads pending. Then inval lets
// the 8 bytes be used as plain shared memory, and a re-init starts again at phase 0: try_wait(0)
// false, try_wait(1) true (the phase "before" phase 0 counts as complete), and one arrival of a
// count-1 barrier completes it. Threads 0..4 arrive one at a time, separated by __syncthreads;
// thread 63 observes after each arrival.
// flags layout: [gen*5 + k] = completion seen after arrival k (expect k==4), [15+gen] = next phase
// pending (expect 1), [18] plain-memory round trip, [19] re-init try_wait(0) false, [20] re-init
// try_wait(1) true, [21] re-init completes after its one arrival. Unused entries stay 0.
// Fails if: the count is off by any amount, the parity does not alternate, inval/re-init leaves the
// barrier in a phase other than 0.
__global__ void prim_mbar_count_kernel(int* flags) {
  __shared__ alignas(8) uint64_t bar;
  const uint32_t b = fp::smem_u32(&bar);
  const int tid = threadIdx.x;
  constexpr int kObserver = 63;
  if (tid == 0) fp::mbarrier_init(b, 5);
  __syncthreads();
  for (int gen = 0; gen < 3; ++gen) {
    const uint32_t par = gen & 1;
    for (int k = 0; k < 5; ++k) {
      if (tid == k) fp::mbarrier_arrive(b);
      __syncthreads();
      if (tid == kObserver) {
        // Before the 5th arrival the phase must read incomplete on one try (deterministic: no
        // other arrival can come); at the 5th it must read complete (polled: try_wait may time out).
        const bool done = (k < 4) ? fp::mbarrier_try_wait_parity(b, par) : poll_parity(b, par);
        flags[gen * 5 + k] = done ? 1 : 0;
        if (k == 4) flags[15 + gen] = fp::mbarrier_try_wait_parity(b, par ^ 1u) ? 0 : 1;
      }
      __syncthreads();
    }
  }
  if (tid == 0) {
    fp::mbarrier_inval(b);
    volatile uint64_t* plain = &bar;
    *plain = 0x0123456789abcdefull;
    flags[18] = (*plain == 0x0123456789abcdefull) ? 1 : 0;
    fp::mbarrier_init(b, 1);
  }
  __syncthreads();
  if (tid == kObserver) {
    flags[19] = fp::mbarrier_try_wait_parity(b, 0) ? 0 : 1;
    flags[20] = poll_parity(b, 1) ? 1 : 0;
  }
  __syncthreads();
  if (tid == 7) fp::mbarrier_arrive(b);
  __syncthreads();
  if (tid == kObserver) flags[21] = poll_parity(b, 0) ? 1 : 0;
  __syncthreads();
  if (tid == 0) fp::mbarrier_inval(b);
}

// ---- expect_tx ------------------------------------------------------------------------------------
// Semantics: a phase with announced transaction bytes completes only when that many bytes of bulk
// copies have signalled complete_tx, and the bytes are then visible.
//   barA phase 0: arrive.expect_tx(2 chunks) -> must read incomplete (no copy issued: an arrive
//     that dropped the tx would complete it). Copy chunk 0, wait ~100k cycles (it has landed), must
//     still read incomplete (one chunk pending). Copy chunk 1 -> the bounded wait passes.
//   barB phase 0: expect_tx(1 chunk) (no arrival) then a plain arrive -> must read incomplete with no
//     copy issued (a dropped expect_tx would let the arrive complete it). Copy chunk 2 -> completes.
//   barA phase 1: arrive.expect_tx(1 chunk): try_wait(1) incomplete, copy chunk 3, wait(1) passes.
// Then all threads copy the 4 landed chunks out; the host compares them with the source.
// flags: [0] barA incomplete before any arrive, [1] after arrive.expect_tx, [2] after 1 of 2 chunks,
// [3] barB incomplete after expect_tx + arrive, [4] barA phase 1 incomplete before its copy,
// [5] all waits passed. All expected 1.
__global__ void prim_mbar_expect_tx_kernel(const uint8_t* src, uint8_t* dst, int* flags) {
  using flashptx_test::prim::kTxChunkBytes;
  using flashptx_test::prim::kTxChunks;
  __shared__ alignas(128) uint8_t buf[kTxChunks * kTxChunkBytes];
  __shared__ alignas(8) uint64_t barA, barB;
  const uint32_t a = fp::smem_u32(&barA), bb = fp::smem_u32(&barB), s = fp::smem_u32(buf);
  if (threadIdx.x == 0) {
    fp::mbarrier_init(a, 1);
    fp::mbarrier_init(bb, 1);
    fp::fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    flags[0] = fp::mbarrier_try_wait_parity(a, 0) ? 0 : 1;
    fp::mbarrier_arrive_expect_tx(a, 2 * kTxChunkBytes);
    flags[1] = fp::mbarrier_try_wait_parity(a, 0) ? 0 : 1;
    fp::cp_async_bulk_load(s, src, kTxChunkBytes, a);
    spin_cycles(100000);
    flags[2] = fp::mbarrier_try_wait_parity(a, 0) ? 0 : 1;
    fp::cp_async_bulk_load(s + kTxChunkBytes, src + kTxChunkBytes, kTxChunkBytes, a);
    FLASHPTX_MBAR_WAIT(a, 0, "expect_tx barA phase 0");

    fp::mbarrier_expect_tx(bb, kTxChunkBytes);
    fp::mbarrier_arrive(bb);
    flags[3] = fp::mbarrier_try_wait_parity(bb, 0) ? 0 : 1;
    fp::cp_async_bulk_load(s + 2 * kTxChunkBytes, src + 2 * kTxChunkBytes, kTxChunkBytes, bb);
    FLASHPTX_MBAR_WAIT(bb, 0, "expect_tx barB phase 0");

    fp::mbarrier_arrive_expect_tx(a, kTxChunkBytes);
    flags[4] = fp::mbarrier_try_wait_parity(a, 1) ? 0 : 1;
    fp::cp_async_bulk_load(s + 3 * kTxChunkBytes, src + 3 * kTxChunkBytes, kTxChunkBytes, a);
    FLASHPTX_MBAR_WAIT(a, 1, "expect_tx barA phase 1");
    flags[5] = 1;
  }
  __syncthreads();
  // Every reader acquires the completed phases itself (barA's phase 1 and barB's phase 0 are the
  // latest of each; thread 0 acquired barA's phase 0 before it issued the later copies).
  FLASHPTX_MBAR_WAIT(a, 1, "expect_tx barA phase 1 (readers)");
  FLASHPTX_MBAR_WAIT(bb, 0, "expect_tx barB phase 0 (readers)");
  for (int i = threadIdx.x; i < kTxChunks * kTxChunkBytes / 16; i += blockDim.x)
    reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(buf)[i];
}

// ---- named barriers -------------------------------------------------------------------------------
// Semantics: bar.arrive / bar.sync generations between two warpgroups, count 256 each. Warpgroup 0
// (producer) writes buf[t] = in[g][t] after a delay, then bar.arrive(FULL=1); warpgroup 1 (consumer)
// bar.sync(FULL) and reads a value another warp wrote, then bar.arrive(EMPTY=2) which the producer
// bar.syncs before overwriting buf in generation g+1. FULL uses the compile-time form, EMPTY the
// runtime-operand form. Fails if: bar.sync does not wait for the arrivals (stale/poisoned reads after
// the producer's delay), a generation completes with the wrong count (values of the wrong
// generation), or bar.arrive does not order the producer's prior stores.
__global__ void prim_named_barrier_kernel(const int* in, int* out) {
  using flashptx_test::prim::kNamedGens;
  __shared__ int buf[128];
  constexpr uint32_t kFull = 1, kEmpty = 2, kCount = 256;
  const int t = threadIdx.x % 128;
  if (threadIdx.x < 128) buf[t] = -1;  // poison
  __syncthreads();
  if (threadIdx.x < 128) {
    for (int g = 0; g < kNamedGens; ++g) {
      if (g > 0) fp::bar_sync(kEmpty, kCount);
      spin_cycles(2000);
      buf[t] = in[g * 128 + t];
      fp::bar_arrive<kFull, kCount>();
    }
  } else {
    for (int g = 0; g < kNamedGens; ++g) {
      fp::bar_sync<kFull, kCount>();
      out[g * 128 + t] = buf[(t * 5 + g) % 128];
      if (g + 1 < kNamedGens) fp::bar_arrive(kEmpty, kCount);
    }
  }
}

// ---- setmaxnreg -------------------------------------------------------------------------------------
// Semantics: register reallocation in the FA3 shape: 384 threads capped at 168 registers by
// __launch_bounds__(384, 1); the producer warpgroup gives registers back (.dec 40), the two consumer
// warpgroups take them (.inc 232: 128*40 + 256*232 = 384*168). Each consumer thread loads 160 floats
// into a fully unrolled register array BEFORE a named barrier (the asm's memory clobber forbids
// sinking the loads past it), so 160+ values are live across it: more than the 168-register entry cap
// leaves room for, which ptxas can only compile without spills under the .inc 232 budget. After the
// barrier it reduces them against 8 scale factors the producer published. The values are small
// integers, so the expected sums are exact in float.
// Fails if: .inc does not grant the registers (ptxas spills: the audit fails; or the kernel faults),
// .dec/.inc break the warps (wrong sums), or the barrier hand-off is broken.
// Its golden shows USETMAXREG.DEALLOC.CTAPOOL 0x28 and
// USETMAXREG.TRY_ALLOC.CTAPOOL 0xe8.
extern "C" __global__ void __launch_bounds__(384, 1)
    prim_setmaxnreg_kernel(const float* values, const float* scale, float* out) {
  using flashptx_test::prim::kRegValues;
  __shared__ float s_scale[8];
  constexpr uint32_t kReady = 1, kAll = 384;
  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    fp::setmaxnreg_dec<40>();
    if (threadIdx.x < 8) s_scale[threadIdx.x] = scale[threadIdx.x];
    fp::bar_arrive<kReady, kAll>();
  } else {
    fp::setmaxnreg_inc<232>();
    const int c = threadIdx.x - 128;  // consumer thread 0..255
    float v[kRegValues];
#pragma unroll
    for (int i = 0; i < kRegValues; ++i) v[i] = values[i * 256 + c];  // coalesced across threads
    fp::bar_sync<kReady, kAll>();
    float sc[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) sc[j] = s_scale[j];
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < kRegValues; ++i) acc += v[i] * sc[i % 8];
    out[c] = acc;
  }
}

// ---- launchers ----------------------------------------------------------------------------------------
namespace flashptx_test::prim {

cudaError_t launch_mbar_pingpong(const int* in, int* seen, int* parity, int* flags) {
  prim_mbar_pingpong_kernel<<<1, 64>>>(in, seen, parity, flags);
  return cudaGetLastError();
}
cudaError_t launch_mbar_count(int* flags) {
  prim_mbar_count_kernel<<<1, 64>>>(flags);
  return cudaGetLastError();
}
cudaError_t launch_mbar_expect_tx(const void* src, void* dst, int* flags) {
  prim_mbar_expect_tx_kernel<<<1, 128>>>(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), flags);
  return cudaGetLastError();
}
cudaError_t launch_named_barrier(const int* in, int* out) {
  prim_named_barrier_kernel<<<1, 256>>>(in, out);
  return cudaGetLastError();
}
cudaError_t launch_setmaxnreg(const float* values, const float* scale, float* out) {
  prim_setmaxnreg_kernel<<<1, 384>>>(values, scale, out);
  return cudaGetLastError();
}

}  // namespace flashptx_test::prim
