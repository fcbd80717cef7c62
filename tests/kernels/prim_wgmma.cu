// Test kernels for ptx/wgmma.cuh and ptx/wgmma_mma.cuh: one warpgroup computes a 64xN product from
// operands it placed in shared memory (128B swizzle, written with plain stores at the swizzled
// address, then fence.proxy.async + __syncthreads so the async proxy of the MMA sees them) and
// writes the accumulator fragment out in row-major order. The host (tests/gpu/test_prim_wgmma.cpp)
// compares with an fp64 GEMM of the same inputs.
//
// Layouts (all tiles 1024-byte aligned; o is a byte offset in the tile, swz(o) = o ^ ((o>>7)&7)<<4):
//   K-major operand (A, or B with TransB=0): row r (M or N index) at r*128, K contiguous in the row;
//     descriptor LBO 16 (unused), SBO 1024 (8-row groups); k-step: start address + 32 bytes.
//   MN-major B (TransB=1): 64-element chunks of N; chunk j at j*8192, K row k at k*128 in it;
//     descriptor LBO 8192 (next 64 columns of N), SBO 1024 (next 8 rows of K); k16-step: + 2048 bytes.
// Accumulator fragment (m64nNk16): warp w, lane l, r = 16w + l/4, c = 2(l%4):
//   d[4i+0] = (r, 8i+c), d[4i+1] = (r, 8i+c+1), d[4i+2] = (r+8, 8i+c), d[4i+3] = (r+8, 8i+c+1).
#include <cstdint>

#include "ptx/fence.cuh"
#include "ptx/wgmma.cuh"
#include "tests/kernels/prim_wgmma.h"

namespace fp = flashptx::ptx;
using flashptx_test::prim::MmaType;

namespace {

constexpr int kSteps = 4;              // MMAs per product: K = 4 x 16 (16-bit) or 4 x 32 (e4m3)
constexpr uint32_t kTileA = 64 * 128;  // bytes of A
constexpr uint32_t kMnChunk = 64 * 128;  // bytes of one 64-column chunk of an MN-major B (K = 64)

__device__ __forceinline__ uint32_t swz128(uint32_t o) { return o ^ (((o >> 7) & 7u) << 4); }

__device__ __forceinline__ uint8_t* aligned_tile(uint8_t* dyn) {
  const uint32_t base = fp::smem_u32(dyn);
  return dyn + ((1024u - (base & 1023u)) & 1023u);
}

// Copies a K-major operand (rows x 128 bytes, dense in global) into a swizzled tile, 16 B at a time.
__device__ void fill_kmajor(uint8_t* tile, const uint8_t* g, int rows) {
  for (int i = threadIdx.x; i < rows * 8; i += blockDim.x) {
    const uint32_t o = static_cast<uint32_t>(i) * 16;
    *reinterpret_cast<uint4*>(tile + swz128(o)) = reinterpret_cast<const uint4*>(g)[i];
  }
}

// Copies an MN-major B (64 rows of K x n 16-bit elements, dense in global) into 64-column chunks.
__device__ void fill_mnmajor(uint8_t* tile, const uint8_t* g, int n) {
  const int chunks_per_row = n * 2 / 16;
  for (int i = threadIdx.x; i < 64 * chunks_per_row; i += blockDim.x) {
    const int k = i / chunks_per_row, c = i % chunks_per_row;  // c: 16-byte chunk along N
    const uint32_t o = static_cast<uint32_t>(c / 8) * kMnChunk + k * 128 + (c % 8) * 16;
    *reinterpret_cast<uint4*>(tile + swz128(o)) = reinterpret_cast<const uint4*>(g)[i];
  }
}

template <int N>
__device__ __forceinline__ void store_fragment(const float (&d)[N / 2], float* out) {
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  const int r = 16 * w + l / 4, c = 2 * (l % 4);
#pragma unroll
  for (int i = 0; i < N / 8; ++i) {
    out[r * N + 8 * i + c] = d[4 * i + 0];
    out[r * N + 8 * i + c + 1] = d[4 * i + 1];
    out[(r + 8) * N + 8 * i + c] = d[4 * i + 2];
    out[(r + 8) * N + 8 * i + c + 1] = d[4 * i + 3];
  }
}

template <int N>
__device__ __forceinline__ void poison(float (&d)[N / 2]) {
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = __int_as_float(0x7fc00000);  // NaN: scale_d = 0 must ignore it
}

template <MmaType T, int N, int TransB>
__device__ __forceinline__ void mma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, uint32_t scale_d) {
  if constexpr (T == MmaType::kBF16) fp::wgmma_m64k16_f32_bf16_ss<N, 0, TransB>(d, da, db, scale_d);
  else if constexpr (T == MmaType::kF16) fp::wgmma_m64k16_f32_f16_ss<N, 0, TransB>(d, da, db, scale_d);
  else fp::wgmma_m64k32_f32_fp8_ss<N, 0, 0>(d, da, db, scale_d);
}

}  // namespace

// ---- SS --------------------------------------------------------------------------------------------
// Semantics: wgmma.mma_async SS for this (type, N, B-major) with 128B-swizzled descriptors from
// make_smem_desc, K stepped with smem_desc_advance; scale_d = 0 on the first MMA overwrites a NaN-
// poisoned accumulator, = 1 accumulates; commit + wait_group<0> make D readable.
// Fails if: a descriptor field (address, LBO, SBO, swizzle bits) or the advance is wrong, the
// operand list of the N arm is wrong, scale_d is mis-wired (NaN or doubled values), or the fragment
// layout differs from the one documented above (values in the wrong place).
template <MmaType T, int N, int TransB>
__global__ void __launch_bounds__(128, 1) prim_wgmma_ss_kernel(const uint8_t* a, const uint8_t* b, float* out) {
  extern __shared__ uint8_t dyn[];
  uint8_t* sa = aligned_tile(dyn);
  uint8_t* sb = sa + kTileA;
  fill_kmajor(sa, a, 64);
  if constexpr (TransB) fill_mnmajor(sb, b, N);
  else fill_kmajor(sb, b, N);
  fp::fence_proxy_async_shared_cta();
  __syncthreads();
  const uint64_t da = fp::make_smem_desc(fp::smem_u32(sa), 16, 1024, fp::Swizzle::k128B);
  const uint64_t db = TransB ? fp::make_smem_desc(fp::smem_u32(sb), kMnChunk, 1024, fp::Swizzle::k128B)
                             : fp::make_smem_desc(fp::smem_u32(sb), 16, 1024, fp::Swizzle::k128B);
  constexpr uint32_t kStepB = TransB ? 16 * 128 : 32;
  float d[N / 2];
  poison<N>(d);
  // The accumulator's writes stay before the fence (PTX ISA, wgmma.fence: a register written by
  // another instruction needs a wgmma.fence between the write and the wgmma.mma_async that uses it).
  fp::wgmma_fence_operand(d);
  fp::wgmma_fence();
#pragma unroll
  for (int s = 0; s < kSteps; ++s)
    mma_ss<T, N, TransB>(d, fp::smem_desc_advance(da, 32 * s), fp::smem_desc_advance(db, kStepB * s), s > 0);
  fp::wgmma_commit_group();
  fp::wgmma_wait_group<0>();
  fp::wgmma_fence_operand(d);
  store_fragment<N>(d, out);
}

// ---- RS --------------------------------------------------------------------------------------------
// Semantics: wgmma.mma_async RS: A from registers in the A-fragment layout (a[0] = (r, k0+c..+1),
// a[1] = (r+8, same), a[2] = (r, k0+8+c..), a[3] = (r+8, k0+8+c..), lower column in the low half),
// B MN-major (TransB = 1) in 128B-swizzled 64-column chunks: LBO = chunk distance, SBO = 1024.
// Fails if: the A fragment layout, the MN-major descriptor (LBO/SBO roles), the advance along K or
// the RS operand list is wrong.
template <MmaType T, int N>
__global__ void __launch_bounds__(128, 1) prim_wgmma_rs_kernel(const uint16_t* a, const uint8_t* b, float* out) {
  extern __shared__ uint8_t dyn[];
  uint8_t* sb = aligned_tile(dyn);
  fill_mnmajor(sb, b, N);
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  const int r = 16 * w + l / 4, c = 2 * (l % 4);
  auto pack = [&](int row, int k) {  // A is 64 x 64, row-major
    return static_cast<uint32_t>(a[row * 64 + k]) | (static_cast<uint32_t>(a[row * 64 + k + 1]) << 16);
  };
  uint32_t frag[kSteps][4];
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    frag[s][0] = pack(r, 16 * s + c);
    frag[s][1] = pack(r + 8, 16 * s + c);
    frag[s][2] = pack(r, 16 * s + 8 + c);
    frag[s][3] = pack(r + 8, 16 * s + 8 + c);
  }
  fp::fence_proxy_async_shared_cta();
  __syncthreads();
  const uint64_t db = fp::make_smem_desc(fp::smem_u32(sb), kMnChunk, 1024, fp::Swizzle::k128B);
  float d[N / 2];
  poison<N>(d);
  // The accumulator's and A's writes stay before the fence (PTX ISA, wgmma.fence).
  fp::wgmma_fence_operand(d);
#pragma unroll
  for (int s = 0; s < kSteps; ++s) fp::wgmma_fence_operand(frag[s]);
  fp::wgmma_fence();
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    if constexpr (T == MmaType::kBF16)
      fp::wgmma_m64k16_f32_bf16_rs<N, 1>(d, frag[s], fp::smem_desc_advance(db, 16 * 128 * s), s > 0);
    else
      fp::wgmma_m64k16_f32_f16_rs<N, 1>(d, frag[s], fp::smem_desc_advance(db, 16 * 128 * s), s > 0);
  }
  fp::wgmma_commit_group();
  fp::wgmma_wait_group<0>();
  fp::wgmma_fence_operand(d);
  store_fragment<N>(d, out);
}

// ---- wait_group depth ------------------------------------------------------------------------------
// Semantics: with two committed groups pending, wait_group<1> retires the older one: its accumulators
// (D1 = A1*B) are complete and readable while the younger group (D2 = A2*B) may still run; then
// wait_group<0> retires the younger. Each read is preceded by wgmma_fence_operand so the compiler
// cannot hoist it above its wait.
// Fails if: wait_group<1> returns before the older group completed (D1 partial or NaN: both
// accumulators start as NaN and the first MMA of each group has scale_d = 0), or the groups are
// committed/counted wrongly.
__global__ void __launch_bounds__(128, 1) prim_wgmma_wait_depth_kernel(const uint8_t* a1, const uint8_t* a2,
                                                                       const uint8_t* b, float* out1, float* out2) {
  constexpr int N = 64;
  extern __shared__ uint8_t dyn[];
  uint8_t* s1 = aligned_tile(dyn);
  uint8_t* s2 = s1 + kTileA;
  uint8_t* sb = s2 + kTileA;
  fill_kmajor(s1, a1, 64);
  fill_kmajor(s2, a2, 64);
  fill_kmajor(sb, b, N);
  fp::fence_proxy_async_shared_cta();
  __syncthreads();
  const uint64_t d1 = fp::make_smem_desc(fp::smem_u32(s1), 16, 1024, fp::Swizzle::k128B);
  const uint64_t d2 = fp::make_smem_desc(fp::smem_u32(s2), 16, 1024, fp::Swizzle::k128B);
  const uint64_t db = fp::make_smem_desc(fp::smem_u32(sb), 16, 1024, fp::Swizzle::k128B);
  float acc1[N / 2], acc2[N / 2];
  poison<N>(acc1);
  poison<N>(acc2);
  fp::wgmma_fence_operand(acc1);  // the writes stay before the fence (PTX ISA, wgmma.fence)
  fp::wgmma_fence_operand(acc2);
  fp::wgmma_fence();
#pragma unroll
  for (int s = 0; s < kSteps; ++s)
    fp::wgmma_m64k16_f32_bf16_ss<N, 0, 0>(acc1, fp::smem_desc_advance(d1, 32 * s), fp::smem_desc_advance(db, 32 * s), s > 0);
  fp::wgmma_commit_group();
#pragma unroll
  for (int s = 0; s < kSteps; ++s)
    fp::wgmma_m64k16_f32_bf16_ss<N, 0, 0>(acc2, fp::smem_desc_advance(d2, 32 * s), fp::smem_desc_advance(db, 32 * s), s > 0);
  fp::wgmma_commit_group();
  fp::wgmma_wait_group<1>();
  fp::wgmma_fence_operand(acc1);
  store_fragment<N>(acc1, out1);
  fp::wgmma_wait_group<0>();
  fp::wgmma_fence_operand(acc2);
  store_fragment<N>(acc2, out2);
}

// ---- launchers ---------------------------------------------------------------------------------------
namespace flashptx_test::prim {

namespace {

template <typename K>
cudaError_t launch128(K kernel, int smem_bytes) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
}

template <MmaType T, int N, int TransB>
cudaError_t ss(const void* a, const void* b, float* d) {
  const int smem = 1024 + static_cast<int>(kTileA) + (TransB ? (N / 64) * static_cast<int>(kMnChunk) : N * 128);
  cudaError_t e = launch128(prim_wgmma_ss_kernel<T, N, TransB>, smem);
  if (e != cudaSuccess) return e;
  prim_wgmma_ss_kernel<T, N, TransB><<<1, 128, smem>>>(static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b), d);
  return cudaGetLastError();
}

template <MmaType T, int N>
cudaError_t rs(const void* a, const void* b, float* d) {
  const int smem = 1024 + (N / 64) * static_cast<int>(kMnChunk);
  cudaError_t e = launch128(prim_wgmma_rs_kernel<T, N>, smem);
  if (e != cudaSuccess) return e;
  prim_wgmma_rs_kernel<T, N><<<1, 128, smem>>>(static_cast<const uint16_t*>(a), static_cast<const uint8_t*>(b), d);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_wgmma_ss(MmaType type, int n, int trans_b, const void* a, const void* b, float* d) {
  constexpr MmaType B = MmaType::kBF16, H = MmaType::kF16, E = MmaType::kE4M3;
  if (trans_b == 0 && (type == B || type == H)) {
    const bool bf = type == B;
    switch (n) {
      case 64: return bf ? ss<B, 64, 0>(a, b, d) : ss<H, 64, 0>(a, b, d);
      case 80: return bf ? ss<B, 80, 0>(a, b, d) : ss<H, 80, 0>(a, b, d);
      case 96: return bf ? ss<B, 96, 0>(a, b, d) : ss<H, 96, 0>(a, b, d);
      case 128: return bf ? ss<B, 128, 0>(a, b, d) : ss<H, 128, 0>(a, b, d);
      case 160: return bf ? ss<B, 160, 0>(a, b, d) : ss<H, 160, 0>(a, b, d);
      case 176: return bf ? ss<B, 176, 0>(a, b, d) : ss<H, 176, 0>(a, b, d);
      case 192: return bf ? ss<B, 192, 0>(a, b, d) : ss<H, 192, 0>(a, b, d);
      case 256: return bf ? ss<B, 256, 0>(a, b, d) : ss<H, 256, 0>(a, b, d);
      default: return cudaErrorInvalidValue;
    }
  }
  if (trans_b == 1 && type == B) {
    switch (n) {
      case 64: return ss<B, 64, 1>(a, b, d);
      case 128: return ss<B, 128, 1>(a, b, d);
      case 256: return ss<B, 256, 1>(a, b, d);
      default: return cudaErrorInvalidValue;
    }
  }
  if (trans_b == 0 && type == E) {
    switch (n) {
      case 64: return ss<E, 64, 0>(a, b, d);
      case 128: return ss<E, 128, 0>(a, b, d);
      case 256: return ss<E, 256, 0>(a, b, d);
      default: return cudaErrorInvalidValue;
    }
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_wgmma_rs(MmaType type, int n, const void* a, const void* b, float* d) {
  const bool bf = type == MmaType::kBF16;
  if (!bf && type != MmaType::kF16) return cudaErrorInvalidValue;
  switch (n) {
    case 64: return bf ? rs<MmaType::kBF16, 64>(a, b, d) : rs<MmaType::kF16, 64>(a, b, d);
    case 128: return bf ? rs<MmaType::kBF16, 128>(a, b, d) : rs<MmaType::kF16, 128>(a, b, d);
    case 256: return bf ? rs<MmaType::kBF16, 256>(a, b, d) : rs<MmaType::kF16, 256>(a, b, d);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_wgmma_wait_depth(const void* a1, const void* a2, const void* b, float* d1, float* d2) {
  const int smem = 1024 + 3 * static_cast<int>(kTileA);
  cudaError_t e = launch128(prim_wgmma_wait_depth_kernel, smem);
  if (e != cudaSuccess) return e;
  prim_wgmma_wait_depth_kernel<<<1, 128, smem>>>(static_cast<const uint8_t*>(a1), static_cast<const uint8_t*>(a2),
                                                  static_cast<const uint8_t*>(b), d1, d2);
  return cudaGetLastError();
}

}  // namespace flashptx_test::prim
