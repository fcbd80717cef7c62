// sm_100a test kernels: tcgen05.mma kind::f16 (bf16 inputs) and kind::f8f6f4 (e4m3 inputs), SS and
// TS forms, cta_group::1 and cta_group::2, with completion through tcgen05.commit to an mbarrier.
//
// cta_group::1 (one CTA, 4 warps): D[128 x 64] f32 in TMEM columns [0, 64); operand rows are 128
// bytes (K = 64 bf16 or 128 e4m3), four MMAs of 32 bytes of K each, the first one with
// enable-input-d false. TS: A is stored into TMEM columns [64, 96) by the four warps (row i in lane
// i, 4 bytes per column) and read by the MMA from there.
// cta_group::2 (cluster of 2): D[256 x 64], CTA r owning A rows [128r, 128r+128) and B rows
// [32r, 32r+32) at identical shared-memory offsets; the even CTA's thread 0 issues; the commit is
// multicast to the mbarrier of both CTAs.
// Every descriptor, K-step advance and TMEM column comes from the issue plan
// (tests/kernels_sm100/umma_issue.h), which the host replays through the tcgen05 emulator
// (tests/host/test_tcgen05_emulator.cpp). Semantics on a GPU: tests/gpu/test_sm100_primitives.cpp.
#include <cstdint>

#include "ptx/cluster.cuh"
#include "ptx/fence.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tcgen05.cuh"
#include "tests/kernels_sm100/sm100_common.cuh"
#include "tests/kernels_sm100/sm100_launchers.h"
#include "tests/kernels_sm100/umma_issue.h"

namespace ptx = flashptx::ptx;
namespace plan = flashptx_test::umma_plan;
using namespace flashptx_test;

namespace {

static_assert(plan::kM == kUmmaM && plan::kN == kUmmaN && plan::kRowBytes == kUmmaRowBytes && plan::kPairM == kUmma2M,
              "the issue plan and the launchers describe the same tiles");

// Stores this warp's 32 rows of A (128 bytes each) into TMEM columns [kACol, kACol + 32).
__device__ __forceinline__ void a_to_tmem(uint32_t tmem_base, const uint8_t* a_rows) {
  const uint32_t warp = threadIdx.x / 32;
  uint32_t r[32];
  const uint4* src = reinterpret_cast<const uint4*>(a_rows + threadIdx.x * kUmmaRowBytes);
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    const uint4 v = src[q];
    r[4 * q] = v.x; r[4 * q + 1] = v.y; r[4 * q + 2] = v.z; r[4 * q + 3] = v.w;
  }
  ptx::tcgen05_st_32x32b_x32(tmem_base + ptx::tmem_addr(32 * warp, plan::kACol), r);
  ptx::tcgen05_wait_st();
}

// Loads this thread's row of D (64 f32) and writes it to d_rows[threadIdx.x].
__device__ __forceinline__ void d_from_tmem(uint32_t tmem_base, float* d_rows) {
  const uint32_t warp = threadIdx.x / 32;
  uint32_t r[64];
  ptx::tcgen05_ld_32x32b_x64(tmem_base + ptx::tmem_addr(32 * warp, plan::kDCol), r);
  ptx::tcgen05_wait_ld_bind(r);
#pragma unroll
  for (int j = 0; j < 64; ++j) d_rows[threadIdx.x * kUmmaN + j] = __uint_as_float(r[j]);
}

// Issues the plan's K steps from one thread.
template <bool kFp8, bool kTs, int kCtaGroup>
__device__ __forceinline__ void issue_ksteps(uint32_t tmem, uint32_t a_smem, uint32_t b_smem) {
#pragma unroll
  for (uint32_t s = 0; s < plan::kKSteps; ++s) {
    const plan::Issue is = plan::issue(kFp8, kTs, kCtaGroup, tmem, a_smem, b_smem, s);
    if constexpr (kTs) {
      if constexpr (kFp8) ptx::tcgen05_mma_f8f6f4_ts<kCtaGroup>(is.d_tmem, is.a_tmem, is.b_desc, is.idesc, is.accumulate);
      else ptx::tcgen05_mma_f16_ts<kCtaGroup>(is.d_tmem, is.a_tmem, is.b_desc, is.idesc, is.accumulate);
    } else {
      if constexpr (kFp8) ptx::tcgen05_mma_f8f6f4_ss<kCtaGroup>(is.d_tmem, is.a_desc, is.b_desc, is.idesc, is.accumulate);
      else ptx::tcgen05_mma_f16_ss<kCtaGroup>(is.d_tmem, is.a_desc, is.b_desc, is.idesc, is.accumulate);
    }
  }
}

template <bool kFp8, bool kTs>
__device__ __forceinline__ void umma_cta1_body(const uint8_t* a, const uint8_t* b, float* d) {
  __shared__ __align__(1024) uint8_t a_smem[kUmmaM * kUmmaRowBytes];
  __shared__ __align__(1024) uint8_t b_smem[kUmmaN * kUmmaRowBytes];
  __shared__ __align__(8) uint64_t mma_done;
  __shared__ uint32_t tmem_base_slot;
  const uint32_t bar = ptx::smem_u32(&mma_done);
  constexpr flashptx::umma::SmemTile tile = plan::operand_tile(kFp8);

  if (threadIdx.x / 32 == 0) ptx::tcgen05_alloc<1, plan::kTmemCols>(ptx::smem_u32(&tmem_base_slot));
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(bar, 1);
    ptx::fence_mbarrier_init();
  }
  if (!kTs) tile_to_smem(a_smem, a, kUmmaM, tile);
  tile_to_smem(b_smem, b, kUmmaN, tile);
  ptx::fence_proxy_async_shared_cta();  // generic st.shared -> the MMA's async-proxy reads
  ptx::tcgen05_fence_before_thread_sync();
  __syncthreads();
  ptx::tcgen05_fence_after_thread_sync();
  const uint32_t tmem = tmem_base_slot;

  if (kTs) {
    a_to_tmem(tmem, a);
    ptx::tcgen05_fence_before_thread_sync();
    __syncthreads();
    ptx::tcgen05_fence_after_thread_sync();
  }

  if (threadIdx.x == 0) {
    issue_ksteps<kFp8, kTs, 1>(tmem, ptx::smem_u32(a_smem), ptx::smem_u32(b_smem));
    ptx::tcgen05_commit<1>(bar);
  }

  FLASHPTX_MBAR_WAIT(bar, 0, "umma_cta1.mma_done");
  ptx::tcgen05_fence_after_thread_sync();
  d_from_tmem(tmem, d);

  ptx::tcgen05_fence_before_thread_sync();
  __syncthreads();
  if (threadIdx.x / 32 == 0) {
    ptx::tcgen05_fence_after_thread_sync();
    ptx::tcgen05_dealloc<1, plan::kTmemCols>(tmem);
    ptx::tcgen05_relinquish_alloc_permit<1>();
  }
}

template <bool kTs>
__device__ __forceinline__ void umma_cta2_body(const uint8_t* a, const uint8_t* b, float* d) {
  __shared__ __align__(1024) uint8_t a_smem[128 * kUmmaRowBytes];
  __shared__ __align__(1024) uint8_t b_smem[(kUmmaN / 2) * kUmmaRowBytes];
  __shared__ __align__(8) uint64_t mma_done;
  __shared__ uint32_t tmem_base_slot;
  const uint32_t bar = ptx::smem_u32(&mma_done);
  const uint32_t rank = ptx::cluster_ctarank();
  const uint8_t* a_mine = a + rank * 128 * kUmmaRowBytes;
  const uint8_t* b_mine = b + rank * (kUmmaN / 2) * kUmmaRowBytes;
  constexpr flashptx::umma::SmemTile tile = plan::operand_tile(false);

  // The pair allocation acts on the peer CTA: it must be known to be running first.
  ptx::barrier_cluster_sync();
  if (threadIdx.x / 32 == 0) ptx::tcgen05_alloc<2, plan::kTmemCols>(ptx::smem_u32(&tmem_base_slot));
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(bar, 1);
    ptx::fence_mbarrier_init();
  }
  if (!kTs) tile_to_smem(a_smem, a_mine, 128, tile);
  tile_to_smem(b_smem, b_mine, kUmmaN / 2, tile);
  ptx::fence_proxy_async_shared_cta();
  ptx::tcgen05_fence_before_thread_sync();
  __syncthreads();
  ptx::tcgen05_fence_after_thread_sync();
  const uint32_t tmem = tmem_base_slot;
  if (kTs) a_to_tmem(tmem, a_mine);

  // Both CTAs' operands, TMEM and barrier initialisation are in place before the pair MMA.
  ptx::tcgen05_fence_before_thread_sync();
  ptx::barrier_cluster_sync();
  ptx::tcgen05_fence_after_thread_sync();

  if (rank == 0 && threadIdx.x == 0) {
    issue_ksteps<false, kTs, 2>(tmem, ptx::smem_u32(a_smem), ptx::smem_u32(b_smem));
    ptx::tcgen05_commit_multicast<2>(bar, 0b11);  // both CTAs' mma_done
  }

  FLASHPTX_MBAR_WAIT(bar, 0, "umma_cta2.mma_done");
  ptx::tcgen05_fence_after_thread_sync();
  d_from_tmem(tmem, d + rank * 128 * kUmmaN);

  // Neither CTA deallocates (pair-collective) or exits while the other may still use the pair.
  ptx::tcgen05_fence_before_thread_sync();
  ptx::barrier_cluster_sync();
  if (threadIdx.x / 32 == 0) {
    ptx::tcgen05_fence_after_thread_sync();
    ptx::tcgen05_dealloc<2, plan::kTmemCols>(tmem);
    ptx::tcgen05_relinquish_alloc_permit<2>();
  }
  ptx::barrier_cluster_sync();
}

}  // namespace

extern "C" __global__ void __launch_bounds__(128, 1) sm100_umma_f16_ss_kernel(const uint8_t* a, const uint8_t* b, float* d) {
  umma_cta1_body<false, false>(a, b, d);
}
extern "C" __global__ void __launch_bounds__(128, 1) sm100_umma_f16_ts_kernel(const uint8_t* a, const uint8_t* b, float* d) {
  umma_cta1_body<false, true>(a, b, d);
}
extern "C" __global__ void __launch_bounds__(128, 1) sm100_umma_f8_ss_kernel(const uint8_t* a, const uint8_t* b, float* d) {
  umma_cta1_body<true, false>(a, b, d);
}
extern "C" __global__ void __launch_bounds__(128, 1) sm100_umma_f8_ts_kernel(const uint8_t* a, const uint8_t* b, float* d) {
  umma_cta1_body<true, true>(a, b, d);
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128, 1)
sm100_umma_pair_f16_ss_kernel(const uint8_t* a, const uint8_t* b, float* d) {
  umma_cta2_body<false>(a, b, d);
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128, 1)
sm100_umma_pair_f16_ts_kernel(const uint8_t* a, const uint8_t* b, float* d) {
  umma_cta2_body<true>(a, b, d);
}

namespace flashptx_test {

namespace {
cudaError_t run_umma(void (*kernel)(const uint8_t*, const uint8_t*, float*), int ctas, int m, const uint8_t* a,
                     const uint8_t* b, float* d) {
  const size_t a_bytes = size_t(m) * kUmmaRowBytes, b_bytes = size_t(kUmmaN) * kUmmaRowBytes;
  const size_t d_bytes = size_t(m) * kUmmaN * sizeof(float);
  uint8_t *da = nullptr, *db = nullptr;
  float* dd = nullptr;
  SM100_TRY(cudaMalloc(&da, a_bytes));
  SM100_TRY(cudaMalloc(&db, b_bytes));
  SM100_TRY(cudaMalloc(&dd, d_bytes));
  SM100_TRY(cudaMemcpy(da, a, a_bytes, cudaMemcpyHostToDevice));
  SM100_TRY(cudaMemcpy(db, b, b_bytes, cudaMemcpyHostToDevice));
  SM100_TRY(cudaMemset(dd, 0xFF, d_bytes));  // NaN: an unwritten element cannot pass
  kernel<<<ctas, 128>>>(da, db, dd);
  SM100_TRY(cudaGetLastError());
  SM100_TRY(cudaDeviceSynchronize());
  SM100_TRY(cudaMemcpy(d, dd, d_bytes, cudaMemcpyDeviceToHost));
  SM100_TRY(cudaFree(da));
  SM100_TRY(cudaFree(db));
  SM100_TRY(cudaFree(dd));
  return cudaSuccess;
}
}  // namespace

cudaError_t sm100_launch_umma(UmmaVariant v, const uint8_t* a, const uint8_t* b, float* d) {
  switch (v) {
    case UmmaVariant::kF16SS: return run_umma(sm100_umma_f16_ss_kernel, 1, kUmmaM, a, b, d);
    case UmmaVariant::kF16TS: return run_umma(sm100_umma_f16_ts_kernel, 1, kUmmaM, a, b, d);
    case UmmaVariant::kF8SS: return run_umma(sm100_umma_f8_ss_kernel, 1, kUmmaM, a, b, d);
    case UmmaVariant::kF8TS: return run_umma(sm100_umma_f8_ts_kernel, 1, kUmmaM, a, b, d);
  }
  return cudaErrorInvalidValue;
}

cudaError_t sm100_launch_umma_2cta(bool ts, const uint8_t* a, const uint8_t* b, float* d) {
  return run_umma(ts ? sm100_umma_pair_f16_ts_kernel : sm100_umma_pair_f16_ss_kernel, 2, kUmma2M, a, b, d);
}

}  // namespace flashptx_test
