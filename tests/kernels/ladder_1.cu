// Attention ladder, rung 1: one consumer warpgroup, plain loads, wgmma (tests/kernels/ladder.h).
//
// What this rung is: the smallest complete FlashAttention forward on Hopper tensor cores. One CTA of
// one warpgroup (128 threads) owns 64 query rows of one (batch, head) and walks every K/V block of
// 128 keys:
//   every thread copies 16-byte pieces of K and V (and, once, Q) from global to shared memory with
//   plain loads and stores, into the 128B-swizzled layout the wgmma descriptors describe;
//   S = Q K^T by wgmma SS (both operands in shared memory), 8 HGMMA 64x128x16;
//   the online softmax in registers (base 2, ex2.approx), P converted to bf16 A fragments;
//   O += P V by wgmma RS (P from registers, V from shared memory), 8 HGMMA 64x128x16;
//   at the end O / rowsum is stored from registers to global memory.
// Nothing overlaps: the loads of block n+1 start after the last MMA of block n retired.
//
// Which barrier certifies what (docs/PROTOCOLS.md, "Hopper prerequisites": the proxy rule and
// wgmma groups; "The K/V rings" describes the ring that later rungs put in place of this):
//   fence.proxy.async.shared::cta, by every writer, then __syncthreads (BAR.SYNC 0x0)
//       the generic-proxy stores of the tile are ordered before the async-proxy reads of the
//       wgmmas issued after the barrier (PTX ISA "Memory Consistency Model: proxies": a barrier alone
//       orders the generic proxy only);
//   wgmma.wait_group 0 (WARPGROUP.DEPBAR.LE gsb0, 0x0)
//       this warp's MMAs have completed: S (after QK) and O (after PV) are readable, P reusable,
//       and the shared tiles they read are no longer read;
//   __syncthreads at the top of the next block
//       every warp has passed that wait, so K and V may be overwritten.
// What it lacks (rung 2 adds it): the copies occupy every thread, its address arithmetic and the
// registers of the loads in flight (ptxas issues all 32 of K and V first: 252 registers); the tensor
// cores idle while they run.
#include <cstdint>

#include "ptx/barrier.cuh"
#include "ptx/fence.cuh"
#include "tests/kernels/ladder_common.cuh"

namespace ll = flashptx_test::ladder;
namespace fp = flashptx::ptx;

namespace {

// Shared memory (1024-aligned base): Q 64 x 128 (16 KiB), K and V 128 x 128 (32 KiB each).
constexpr uint32_t kOffQ = 0, kOffK = 16384, kOffV = 16384 + 32768, kSmemBytes = 16384 + 2 * 32768 + 1024;

// kRows rows of one head from `src` (row `row0` of the sequence of `batch`), into the swizzled tile
// at `tile`: 16 units of 16 bytes per row, kRows / 8 per thread, all loads issued before the first
// store (unrolled: kRows / 8 x 4 registers in flight).
template <int kRows>
__device__ __forceinline__ void copy_tile(uint32_t tile, const uint16_t* src, int batch, int seqlen, int row0,
                                          int heads, int head) {
  constexpr int kPerThread = kRows * 16 / 128;
  uint4 x[kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int idx = static_cast<int>(threadIdx.x) + 128 * i, r = idx / 16, u = idx % 16;
    x[i] = *reinterpret_cast<const uint4*>(
        src + ((static_cast<int64_t>(batch) * seqlen + row0 + r) * heads + head) * ll::kHeadDim + u * 8);
  }
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int idx = static_cast<int>(threadIdx.x) + 128 * i, r = idx / 16, u = idx % 16;
    fp::st_shared_v4_b32(tile + ll::swizzled(kRows, u / 8, r, u % 8), x[i].x, x[i].y, x[i].z, x[i].w);
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(128, 1) ladder_1_kernel(const ll::LadderArgs a) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const uint32_t base = (fp::smem_u32(smem_raw) + 1023u) & ~1023u;
  const int m_block = blockIdx.x, head = blockIdx.y, batch = blockIdx.z;
  const int n_blocks = a.seqlen_k / ll::kBlockN;

  ll::Rows rows;
  rows.init();
  copy_tile<ll::kBlockM>(base + kOffQ, a.q, batch, a.seqlen_q, m_block * ll::kBlockM, a.heads, head);
  for (int n = 0; n < n_blocks; ++n) {
    // Every warp has retired PV(n-1) (its wait_group 0 below): nobody reads K or V any more.
    if (n > 0) __syncthreads();
    copy_tile<ll::kBlockN>(base + kOffK, a.k, batch, a.seqlen_k, n * ll::kBlockN, a.heads, head);
    copy_tile<ll::kBlockN>(base + kOffV, a.v, batch, a.seqlen_k, n * ll::kBlockN, a.heads, head);
    // My generic stores -> the async proxy (wgmma operand reads), then everyone's: the tiles are in.
    fp::fence_proxy_async_shared_cta();
    __syncthreads();
    rows.issue_qk(base + kOffQ, base + kOffK);
    fp::wgmma_wait_group<0>();  // QK complete: S readable
    fp::wgmma_fence_operand(rows.s);
    rows.softmax_rescale_convert(a.scale_log2);
    rows.issue_pv(base + kOffV);
    fp::wgmma_wait_group<0>();  // PV complete: O readable, P and the V tile reusable
    fp::wgmma_fence_operand(rows.o);
  }
  rows.store_o(a, batch, head, m_block * ll::kBlockM + 16 * (threadIdx.x / 32) + (threadIdx.x % 32) / 4);
}

namespace flashptx_test::ladder {

cudaError_t launch_rung1(const LadderArgs& a, dim3 grid, cudaStream_t stream) {
  cudaError_t e = cudaFuncSetAttribute(ladder_1_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  if (e != cudaSuccess) return e;
  ladder_1_kernel<<<grid, 128, kSmemBytes, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace flashptx_test::ladder
