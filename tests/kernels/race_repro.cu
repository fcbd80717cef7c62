// The racecheck reproducer kernels (see race_repro.h for the variants and what each isolates).
//
// The FA3 forward (src/sm90/fa3_fwd.cuh) fails compute-sanitizer racecheck with "Internal Sanitizer
// Error: The Sanitizer failed to handle a hardware exception" once its K/V ring wraps, in the release
// build only; the test build, whose only difference is the mbarrier wait loop, passes. These kernels
// keep the ring protocol (RingState, full/empty mbarriers, the producer one generation ahead, one
// release per consumer warp after the read retired, the producer tail) and vary one ingredient at a
// time: the wait loop of each role, the reader (ld.shared, wgmma SS, FA3's K/V rings with wgmma RS),
// setmaxnreg, the copy (tensor TMA or plain bulk copy), and whether the ring wraps.
//
// All waits are chosen by template parameter, never by FLASHPTX_BOUNDED_WAIT: both build flavours
// hold the same kernels (the audit's goldens are the release objects' and match the test objects').
// Wait forms that ptx/mbarrier.cuh lacks (suspend-time hint, test_wait, nanosleep backoff, a bounded
// loop without printf) are written here; they may move to ptx/ once the matrix has been run.
#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "src/protocol/ring.h"
#include "ptx/cvt.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/setmaxnreg.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
#include "tests/kernels/race_repro.h"

namespace flashptx_test::race {

namespace fp = flashptx::ptx;

// ---- wait forms not in ptx/mbarrier.cuh ---------------------------------------------------------

// mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [bar], parity, suspendTimeHint;
// As ptx::mbarrier_try_wait_parity, with the optional operand that bounds, in nanoseconds, how long
// the hardware may suspend the thread before try_wait returns false (PTX ISA, mbarrier.try_wait).
__device__ __forceinline__ bool try_wait_parity_hint(uint32_t bar, uint32_t parity, uint32_t hint_ns) {
  uint32_t done = 0;
#if FLASHPTX_HAS_SM90
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2, %3;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done) : "r"(bar), "r"(parity), "r"(hint_ns) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("mbarrier.try_wait.parity needs sm_90");
#endif
  return done != 0;
}

// mbarrier.test_wait.parity.acquire.cta.shared::cta.b64 p, [bar], parity;
// The non-blocking test: returns at once, never suspends the thread. Same acquire on true.
__device__ __forceinline__ bool test_wait_parity(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
#if FLASHPTX_HAS_SM90
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.test_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done) : "r"(bar), "r"(parity) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("mbarrier.test_wait.parity needs sm_90");
#endif
  return done != 0;
}

// nanosleep.u32 ns;  (suspends the warp for about ns nanoseconds, at most 1 ms)
__device__ __forceinline__ void nanosleep_ns(uint32_t ns) {
#if FLASHPTX_HAS_SM90
  asm volatile("nanosleep.u32 %0;" :: "r"(ns) : "memory");
#else
  FLASHPTX_ARCH_UNSUPPORTED("nanosleep needs sm_70");
#endif
}

// What a timed-out bounded wait recorded before it trapped (barrier address << 1 | parity); 0 when
// no wait timed out. (After a trap the context is lost: it is there for a debugger.)
__device__ uint32_t g_race_wait_timeout = 0;

// The out-of-line, never-returning timeouts of the bounded waits. kBounded's says so with printf, as
// ptx::mbarrier_wait_timeout does, but without arguments (printf's argument buffer gives the kernel a
// stack, which the SASS audit rejects); that call inside the callee is what makes ptxas serialize the
// kernel's wgmma (C7510), in the test build and here alike. kBoundedNoPrintf's only traps: no C7510.
__device__ __noinline__ __attribute__((noreturn)) void race_wait_timeout_printf(uint32_t bar, uint32_t parity) {
  g_race_wait_timeout = (bar << 1) | parity;
  printf("flashptx race repro: mbarrier wait timed out (bounded wait); trapping\n");
  asm volatile("trap;");
  __builtin_unreachable();
}
__device__ __noinline__ __attribute__((noreturn)) void race_wait_timeout_trap(uint32_t bar, uint32_t parity) {
  g_race_wait_timeout = (bar << 1) | parity;
  asm volatile("trap;");
  __builtin_unreachable();
}

// Suspend-time hint of kSuspendHint: 0x989680 ns = 10 ms, the value CUTLASS's ClusterBarrier passes.
constexpr uint32_t kSuspendHintNs = 0x989680u;
// Bound of kBounded, as ptx::mbarrier_wait_bounded's default.
constexpr long long kBoundedCycles = 20000000000LL;

template <Wait W>
__device__ __forceinline__ void race_wait(uint32_t bar, uint32_t parity) {
  if constexpr (W == Wait::kSpin) {
    fp::mbarrier_wait(bar, parity);  // the release build's FLASHPTX_MBAR_WAIT, verbatim
  } else if constexpr (W == Wait::kSuspendHint) {
    while (!try_wait_parity_hint(bar, parity, kSuspendHintNs)) {
    }
  } else if constexpr (W == Wait::kBounded || W == Wait::kBoundedNoPrintf) {
    // The loop of ptx::mbarrier_wait_bounded (the test build's FLASHPTX_MBAR_WAIT).
    if (fp::mbarrier_try_wait_parity(bar, parity)) return;
    const long long start = clock64();
    while (!fp::mbarrier_try_wait_parity(bar, parity)) {
      if (clock64() - start > kBoundedCycles) {
        if constexpr (W == Wait::kBounded) race_wait_timeout_printf(bar, parity);
        else race_wait_timeout_trap(bar, parity);
      }
    }
  } else if constexpr (W == Wait::kBackoff) {
    uint32_t ns = 32;
    while (!fp::mbarrier_try_wait_parity(bar, parity)) {
      nanosleep_ns(ns);
      ns = ns < 1024 ? 2 * ns : ns;
    }
  } else {
    static_assert(W == Wait::kTestWait, "wait kind");
    while (!test_wait_parity(bar, parity)) {
    }
  }
}

// ---- the kernel ------------------------------------------------------------------------------------

// ld.shared.v4.b32: a plain generic-proxy shared-memory read (what racecheck instruments).
__device__ __forceinline__ uint4 lds128(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ float bf16x2_sum(uint32_t x) {
  return __uint_as_float(x << 16) + __uint_as_float(x & 0xFFFF0000u);
}

template <int Stages, bool Kv, bool NeedQ>
struct RaceLayout {
  static constexpr int kRingBytes = Stages * kRaceTileBytes;
  static constexpr int kOffK = 0;
  static constexpr int kOffV = kOffK + kRingBytes;                 // Kv only
  static constexpr int kOffQ = kOffV + (Kv ? kRingBytes : 0);      // NeedQ only
  static constexpr int kQBytes = kRaceQRows * kRaceCols * 2;       // 16 KB
  static constexpr int kOffBar = kOffQ + (NeedQ ? kQBytes : 0);
  // full_k[S], empty_k[S], full_v[S], empty_v[S], q_full
  static constexpr int kNumBars = 4 * Stages + 1;
  static constexpr int kSmemBytes = kOffBar + 8 * kNumBars + 1024;  // + alignment slack
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA");
};

// Semantics: one producer thread streams `iters` tiles of K (and of V for kFa3Kv) through an
// S-stage ring with the FA3 protocol: wait empty[s] (parity one generation ahead), arrive.expect_tx
// on full[s] with the tile's bytes, issue the copy, advance; then the producer tail waits until every
// slot has been released. Each consumer warpgroup waits full[s], reads the slot (Reader), and each of
// its warps releases empty[s] once (lane 0, after the read retired: __syncwarp after ld.shared, or
// wgmma.wait_group). The output depends on every byte of every tile of every generation.
// Fails if: a wait passes early or a slot is overwritten while read (wrong sums: the host reports
// the iteration), a wait never passes (a hang; kBounded traps after ~10 s), or the run dies under a
// tool (the point of the matrix: tools/race/racecheck_matrix.sh).
template <Reader R, Wait WP, Wait WC, Copy C, bool Regs, bool Serial, int Stages>
__global__ void __launch_bounds__(kRaceThreads, 1)
    race_ring_kernel(const __grid_constant__ CUtensorMap map_k, const __grid_constant__ CUtensorMap map_v,
                     const __grid_constant__ CUtensorMap map_q, const uint8_t* k_raw, float* out, int iters) {
  static_assert(C == Copy::kTensor || R == Reader::kLds, "the bulk copy lands unswizzled: ld.shared readers only");
  static_assert(!Serial || R != Reader::kLds, "serial_wgmma needs a wgmma reader");
  constexpr bool kKv = R == Reader::kFa3Kv;
  constexpr bool kNeedQ = R != Reader::kLds;
  using L = RaceLayout<Stages, kKv, kNeedQ>;
  using Ring = flashptx::RingState<Stages>;

  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const uint32_t base = (fp::smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sK = base + L::kOffK, sV = base + L::kOffV, sQ = base + L::kOffQ;
  const uint32_t bars = base + L::kOffBar;
  auto full_k = [&](uint32_t s) { return bars + 8u * s; };
  auto empty_k = [&](uint32_t s) { return bars + 8u * (Stages + s); };
  auto full_v = [&](uint32_t s) { return bars + 8u * (2 * Stages + s); };
  auto empty_v = [&](uint32_t s) { return bars + 8u * (3 * Stages + s); };
  const uint32_t q_full = bars + 8u * (4 * Stages);

  const int warpgroup = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;
  const int warp = tid / 32, lane = threadIdx.x % 32;

  if (threadIdx.x == 0) {
    for (uint32_t s = 0; s < Stages; ++s) {
      fp::mbarrier_init(full_k(s), 1);
      fp::mbarrier_init(empty_k(s), 4 * kRaceConsumers);
      fp::mbarrier_init(full_v(s), 1);
      fp::mbarrier_init(empty_v(s), 4 * kRaceConsumers);
    }
    fp::mbarrier_init(q_full, 1);
    fp::fence_mbarrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ================================ PRODUCER =================================================
    if constexpr (Regs) fp::setmaxnreg_dec<24>();
    if (threadIdx.x == 0) {
      if constexpr (kNeedQ) {
        fp::mbarrier_arrive_expect_tx(q_full, L::kQBytes);
        fp::cp_async_bulk_tensor_2d_load(sQ, &map_q, q_full, 0, 0);
      }
      Ring w = Ring::producer_start();
      for (int i = 0; i < iters; ++i) {
        race_wait<WP>(empty_k(w.stage), w.phase);
        fp::mbarrier_arrive_expect_tx(full_k(w.stage), kRaceTileBytes);
        if constexpr (C == Copy::kTensor)
          fp::cp_async_bulk_tensor_2d_load(sK + w.stage * kRaceTileBytes, &map_k, full_k(w.stage), 0,
                                           i * kRaceTileRows);
        else
          fp::cp_async_bulk_load(sK + w.stage * kRaceTileBytes, k_raw + static_cast<size_t>(i) * kRaceTileBytes,
                                 kRaceTileBytes, full_k(w.stage));
        if constexpr (kKv) {
          race_wait<WP>(empty_v(w.stage), w.phase);
          fp::mbarrier_arrive_expect_tx(full_v(w.stage), kRaceTileBytes);
          fp::cp_async_bulk_tensor_2d_load(sV + w.stage * kRaceTileBytes, &map_v, full_v(w.stage), 0,
                                           i * kRaceTileRows);
        }
        w.advance();
      }
      // Producer tail: every slot released before the producer leaves (FA3's, verbatim in shape).
      for (int s = 0; s < Stages; ++s) {
        race_wait<WP>(empty_k(w.stage), w.phase);
        if constexpr (kKv) race_wait<WP>(empty_v(w.stage), w.phase);
        w.advance();
      }
    }
    return;
  }

  // ================================== CONSUMERS =================================================
  if constexpr (Regs) fp::setmaxnreg_inc<240>();
  const int g = warpgroup - 1;
  const int r0 = 16 * warp + lane / 4;  // wgmma fragment rows r0 and r0 + 8
  Ring kr = Ring::consumer_start();

  if constexpr (R == Reader::kLds) {
    // Thread t reads half a row (4 x 16 B) of row t/2: a 128B-swizzled row keeps its 16-byte chunks
    // inside its own 128 bytes, so the pair's sum is the row's sum whatever the swizzle.
    const int row = tid >> 1, half = tid & 1;
    for (int i = 0; i < iters; ++i) {
      race_wait<WC>(full_k(kr.stage), kr.phase);
      const uint32_t src = sK + kr.stage * kRaceTileBytes + row * 128 + half * 64;
      float sum = 0.f;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const uint4 v = lds128(src + 16 * c);
        sum += bf16x2_sum(v.x) + bf16x2_sum(v.y) + bf16x2_sum(v.z) + bf16x2_sum(v.w);
      }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      // Generic reads of bytes the async proxy wrote, before the slot goes back to the async proxy
      // (the next TMA): a proxy fence in every reader. Without it the plain runs of the three
      // non-setmaxnreg ld.shared variants read overwritten data on the H200 (2026-11-30).
      fp::fence_proxy_async_shared_cta();
      __syncwarp();                              // every lane's reads before the warp's release
      if (lane == 0) fp::mbarrier_arrive(empty_k(kr.stage));
      kr.advance();
      if (half == 0) out[(i * kRaceConsumers + g) * 64 + row] = sum;
    }
    return;
  } else {
    race_wait<WC>(q_full, 0);
    // Q rows of this consumer and a K slot: K-major, 128B swizzle, SBO 1024 (as FA3's issue_qk).
    const uint64_t desc_q = fp::make_smem_desc(sQ + 64 * g * 128, 0, 1024, fp::Swizzle::k128B);
    float s_acc[32];
#pragma unroll
    for (int e = 0; e < 32; ++e) s_acc[e] = 0.f;
    // Serial: what ptxas does to the test build (C7510): each wgmma its own group, waited at once.
    auto serialize = [&]() {
      fp::wgmma_commit_group();
      fp::wgmma_wait_group<0>();
      fp::wgmma_fence_operand(s_acc);
    };
    auto issue_qk = [&](uint32_t stage) {
      const uint64_t desc_k = fp::make_smem_desc(sK + stage * kRaceTileBytes, 0, 1024, fp::Swizzle::k128B);
      fp::wgmma_fence_operand(s_acc);
      fp::wgmma_fence();
#pragma unroll
      for (int k = 0; k < kRaceCols / 16; ++k) {
        if constexpr (Serial) fp::wgmma_fence();
        fp::wgmma_m64k16_f32_bf16_ss<64, 0, 0>(s_acc, fp::smem_desc_advance(desc_q, 32 * k),
                                               fp::smem_desc_advance(desc_k, 32 * k), k > 0 ? 1u : 0u);
        if constexpr (Serial) serialize();
      }
      fp::wgmma_commit_group();
      fp::wgmma_fence_operand(s_acc);
    };

    if constexpr (R == Reader::kWgmma) {
      for (int i = 0; i < iters; ++i) {
        race_wait<WC>(full_k(kr.stage), kr.phase);
        issue_qk(kr.stage);
        fp::wgmma_wait_group<0>();
        fp::wgmma_fence_operand(s_acc);
        if (lane == 0) fp::mbarrier_arrive(empty_k(kr.stage));  // QK retired: the slot has no reader
        kr.advance();
        // Row sums of S: this thread's rows r0 (s_acc[4j], [4j+1]) and r0 + 8 ([4j+2], [4j+3]).
        float a = 0.f, b = 0.f;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          a += s_acc[4 * j] + s_acc[4 * j + 1];
          b += s_acc[4 * j + 2] + s_acc[4 * j + 3];
        }
        a += __shfl_xor_sync(0xffffffffu, a, 1);
        a += __shfl_xor_sync(0xffffffffu, a, 2);
        b += __shfl_xor_sync(0xffffffffu, b, 1);
        b += __shfl_xor_sync(0xffffffffu, b, 2);
        if (lane % 4 == 0) {
          out[(i * kRaceConsumers + g) * 64 + r0] = a;
          out[(i * kRaceConsumers + g) * 64 + r0 + 8] = b;
        }
      }
    } else {
      // FA3's steady loop without the softmax: QK(j) (older group) and PV(j-1) (newer) in flight
      // together; wait_group<1> retires QK(j) and releases K, wait_group<0> retires PV(j-1) and
      // releases V, then P_j = bf16(S_j) overwrites the A fragments (src/sm90/fa3_fwd.cuh;
      // docs/PROTOCOLS.md, "The two-stage overlap").
      Ring vr = Ring::consumer_start();
      float o[32];
      uint32_t pfrag[4][4];
#pragma unroll
      for (int e = 0; e < 32; ++e) o[e] = 0.f;
      auto convert_p = [&]() {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          pfrag[k][0] = fp::cvt_rn_bf16x2_f32(s_acc[8 * k + 0], s_acc[8 * k + 1]);
          pfrag[k][1] = fp::cvt_rn_bf16x2_f32(s_acc[8 * k + 2], s_acc[8 * k + 3]);
          pfrag[k][2] = fp::cvt_rn_bf16x2_f32(s_acc[8 * k + 4], s_acc[8 * k + 5]);
          pfrag[k][3] = fp::cvt_rn_bf16x2_f32(s_acc[8 * k + 6], s_acc[8 * k + 7]);
        }
      };
      // V is MN-major for P V (the 64 columns contiguous): LBO = next 64-column chunk (unused at 64
      // columns), SBO 1024 between 8-key groups; +2048 B per k16 of keys (as FA3's issue_pv).
      auto issue_pv = [&](uint32_t stage, bool accumulate) {
        const uint64_t desc_v = fp::make_smem_desc(sV + stage * kRaceTileBytes, kRaceTileRows * 128, 1024,
                                                   fp::Swizzle::k128B);
        fp::wgmma_fence_operand(o);
        fp::wgmma_fence();
#pragma unroll
        for (int k = 0; k < kRaceTileRows / 16; ++k) {
          if constexpr (Serial) fp::wgmma_fence();
          fp::wgmma_m64k16_f32_bf16_rs<64, 1>(o, pfrag[k], fp::smem_desc_advance(desc_v, k * 16 * 128),
                                              (accumulate || k > 0) ? 1u : 0u);
          if constexpr (Serial) {
            fp::wgmma_commit_group();
            fp::wgmma_wait_group<0>();
            fp::wgmma_fence_operand(o);
          }
        }
        fp::wgmma_commit_group();
        fp::wgmma_fence_operand(o);
      };
      race_wait<WC>(full_k(kr.stage), kr.phase);
      issue_qk(kr.stage);
      fp::wgmma_wait_group<0>();
      fp::wgmma_fence_operand(s_acc);
      if (lane == 0) fp::mbarrier_arrive(empty_k(kr.stage));
      kr.advance();
      convert_p();
      for (int j = 1; j < iters; ++j) {
        race_wait<WC>(full_k(kr.stage), kr.phase);
        issue_qk(kr.stage);
        race_wait<WC>(full_v(vr.stage), vr.phase);
        issue_pv(vr.stage, j > 1);
        fp::wgmma_wait_group<1>();  // QK(j) complete; PV(j-1) may still run
        fp::wgmma_fence_operand(s_acc);
        if (lane == 0) fp::mbarrier_arrive(empty_k(kr.stage));
        kr.advance();
        fp::wgmma_wait_group<0>();  // PV(j-1) complete: V[j-1] and P reusable
        fp::wgmma_fence_operand(o);
        if (lane == 0) fp::mbarrier_arrive(empty_v(vr.stage));
        vr.advance();
        convert_p();
      }
      race_wait<WC>(full_v(vr.stage), vr.phase);
      issue_pv(vr.stage, iters > 1);
      fp::wgmma_wait_group<0>();
      fp::wgmma_fence_operand(o);
      if (lane == 0) fp::mbarrier_arrive(empty_v(vr.stage));
      vr.advance();
      // O (64 x 64 of this consumer), row-major: o[4j+0,1] = (r0, 8j+c..+1), o[4j+2,3] = (r0+8, ..).
      float* og = out + g * 64 * 64;
      const int c = 2 * (lane % 4);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        og[r0 * 64 + 8 * j + c] = o[4 * j];
        og[r0 * 64 + 8 * j + c + 1] = o[4 * j + 1];
        og[(r0 + 8) * 64 + 8 * j + c] = o[4 * j + 2];
        og[(r0 + 8) * 64 + 8 * j + c + 1] = o[4 * j + 3];
      }
    }
  }
}

// ---- the variant table -------------------------------------------------------------------------------

namespace {

using LaunchFn = cudaError_t (*)(const CUtensorMap&, const CUtensorMap&, const CUtensorMap&, const void*, float*, int);

template <Reader R, Wait WP, Wait WC, Copy C, bool Regs, bool Serial, int Stages>
cudaError_t launch_one(const CUtensorMap& map_k, const CUtensorMap& map_v, const CUtensorMap& map_q,
                       const void* k_raw, float* out, int iters) {
  constexpr int smem = RaceLayout<Stages, R == Reader::kFa3Kv, R != Reader::kLds>::kSmemBytes;
  auto* kernel = race_ring_kernel<R, WP, WC, C, Regs, Serial, Stages>;
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return e;
  kernel<<<1, kRaceThreads, smem>>>(map_k, map_v, map_q, static_cast<const uint8_t*>(k_raw), out, iters);
  return cudaGetLastError();
}

struct Entry {
  Variant v;
  LaunchFn launch;
};

#define RACE_VARIANT(name, R, WP, WC, C, REGS, SERIAL, STAGES, WHAT) \
  RACE_VARIANT_N(name, R, WP, WC, C, REGS, SERIAL, STAGES, kRaceIters, WHAT)
#define RACE_VARIANT_N(name, R, WP, WC, C, REGS, SERIAL, STAGES, ITERS, WHAT)                         \
  Entry {                                                                                             \
    Variant{name, Reader::R, Wait::WP, Wait::WC, Copy::C, REGS, SERIAL, STAGES, ITERS, WHAT},         \
        &launch_one<Reader::R, Wait::WP, Wait::WC, Copy::C, REGS, SERIAL, STAGES>                     \
  }

constexpr int kWrap = 3;             // FA3 d64's ring depth: 24 tiles wrap it 8 times
constexpr int kNoWrap = kRaceIters;  // one slot per tile: every slot is filled once

// The order is the matrix's priority order (tools/race/racecheck_matrix.sh runs it as listed, until
// its time budget ends). "np": kBoundedNoPrintf. Names: reader, setmaxnreg, wrap, wait, extras.
const Entry kEntries[] = {
    // The bridge: FA3's consumer loop without the softmax, release vs test schedule.
    RACE_VARIANT("fa3kv_regs_wrap_spin", kFa3Kv, kSpin, kSpin, kTensor, true, false, kWrap,
                 "FA3 release shape: K/V rings, V lagging, QK SS + PV RS in flight across waits, setmaxnreg, spin"),
    RACE_VARIANT("fa3kv_regs_wrap_bounded", kFa3Kv, kBounded, kBounded, kTensor, true, false, kWrap,
                 "FA3 test shape: bounded wait with printf, so ptxas serializes every wgmma (C7510)"),
    RACE_VARIANT("fa3kv_regs_wrap_boundednp", kFa3Kv, kBoundedNoPrintf, kBoundedNoPrintf, kTensor, true, false, kWrap,
                 "the test build's bounded loop with wgmma left asynchronous (no printf: no C7510)"),
    RACE_VARIANT("fa3kv_regs_wrap_spin_serial", kFa3Kv, kSpin, kSpin, kTensor, true, true, kWrap,
                 "the release spin with every wgmma waited at once (the test build's wgmma schedule)"),
    // Wrap or overlap? In the finding, every failing FA3 shape had >= 8 K/V blocks, every passing one a
    // single block: with one block FA3's steady loop never runs, so no wgmma is ever in flight across
    // a wait. 3 tiles through 3 stages: the steady loop runs (QK in flight across the V waits), the
    // ring never wraps.
    RACE_VARIANT_N("fa3kv_regs_nowrap_spin", kFa3Kv, kSpin, kSpin, kTensor, true, false, kWrap, 3,
                   "no wrap (3 tiles, 3 stages) but FA3's steady loop runs: wgmma in flight across V waits"),
    // One ring, QK only: is the V ring / the wgmma in flight across a wait needed?
    RACE_VARIANT("wgmma_regs_wrap_spin", kWgmma, kSpin, kSpin, kTensor, true, false, kWrap,
                 "one TMA ring, wgmma SS readers (no wgmma in flight across a wait), setmaxnreg, spin"),
    RACE_VARIANT("wgmma_regs_nowrap_spin", kWgmma, kSpin, kSpin, kTensor, true, false, kNoWrap,
                 "control: the ring never wraps (producer empty waits pass at once; only its tail waits)"),
    RACE_VARIANT("lds_wrap_spin", kLds, kSpin, kSpin, kTensor, false, false, kWrap,
                 "minimal: one TMA ring, ld.shared readers, no setmaxnreg, spin"),
    RACE_VARIANT("fa3kv_wrap_spin", kFa3Kv, kSpin, kSpin, kTensor, false, false, kWrap,
                 "the FA3 release shape without setmaxnreg"),
    // Which role's spin matters (the other role bounded without printf, so wgmma stays asynchronous).
    RACE_VARIANT("fa3kv_regs_wrap_pspin_cboundednp", kFa3Kv, kSpin, kBoundedNoPrintf, kTensor, true, false, kWrap,
                 "only the producer (24 registers) spins; consumers bounded"),
    RACE_VARIANT("fa3kv_regs_wrap_pboundednp_cspin", kFa3Kv, kBoundedNoPrintf, kSpin, kTensor, true, false, kWrap,
                 "only the consumers spin; producer bounded"),
    // Other wait loops on the FA3 release shape.
    RACE_VARIANT("fa3kv_regs_wrap_testwait", kFa3Kv, kTestWait, kTestWait, kTensor, true, false, kWrap,
                 "spin on test_wait: the same loop without the hardware suspend of try_wait"),
    RACE_VARIANT("fa3kv_regs_wrap_hint", kFa3Kv, kSuspendHint, kSuspendHint, kTensor, true, false, kWrap,
                 "try_wait with an explicit suspend-time hint (10 ms)"),
    RACE_VARIANT("fa3kv_regs_wrap_backoff", kFa3Kv, kBackoff, kBackoff, kTensor, true, false, kWrap,
                 "try_wait + nanosleep backoff (32..1024 ns)"),
    // The small rings' neighbours.
    RACE_VARIANT("wgmma_regs_wrap_bounded", kWgmma, kBounded, kBounded, kTensor, true, false, kWrap,
                 "one ring, wgmma SS, the test build's bounded wait (printf: C7510)"),
    RACE_VARIANT("lds_regs_wrap_spin", kLds, kSpin, kSpin, kTensor, true, false, kWrap,
                 "ld.shared readers with setmaxnreg 24/240"),
    RACE_VARIANT("lds_wrap_boundednp", kLds, kBoundedNoPrintf, kBoundedNoPrintf, kTensor, false, false, kWrap,
                 "minimal ring with the bounded loop"),
    RACE_VARIANT("lds_nowrap_spin", kLds, kSpin, kSpin, kTensor, false, false, kNoWrap,
                 "control for the minimal ring: never wraps"),
    RACE_VARIANT_N("fa3kv_regs_single_spin", kFa3Kv, kSpin, kSpin, kTensor, true, false, kWrap, 1,
                   "one tile (FA3's passing short shapes): no steady loop, no wgmma in flight across a wait"),
    RACE_VARIANT("bulk_lds_wrap_boundednp", kLds, kBoundedNoPrintf, kBoundedNoPrintf, kBulk, false, false, kWrap,
                 "non-tensor cp.async.bulk: racecheck attributes its writes to a thread (reported false positive)"),
};
#undef RACE_VARIANT
#undef RACE_VARIANT_N

}  // namespace

int race_variant_count() { return static_cast<int>(sizeof(kEntries) / sizeof(kEntries[0])); }

const Variant& race_variant(int i) { return kEntries[i].v; }

const Variant* find_race_variant(const char* name) {
  for (const Entry& e : kEntries)
    if (std::strcmp(e.v.name, name) == 0) return &e.v;
  return nullptr;
}

cudaError_t launch_race_variant(const char* name, const CUtensorMap& map_k, const CUtensorMap& map_v,
                                const CUtensorMap& map_q, const void* k_raw, float* out) {
  for (const Entry& e : kEntries)
    if (std::strcmp(e.v.name, name) == 0) return e.launch(map_k, map_v, map_q, k_raw, out, e.v.iters);
  return cudaErrorInvalidValue;
}

}  // namespace flashptx_test::race
