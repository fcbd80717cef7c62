// Test kernels for ptx/ldst.cuh: ldmatrix / stmatrix (.trans, x1/x2/x4), prmt, elect.sync. The
// kernels record registers and tiles; tests/gpu/test_prim_ldst.cpp models the fragment layout.
#include <cstdint>

#include "ptx/ldst.cuh"
#include "tests/kernels/prim_ldst.h"

namespace fp = flashptx::ptx;

// ---- ldmatrix / stmatrix ------------------------------------------------------------------------
// Semantics: a 16x16 tile holds four 8x8 matrices M0 (rows 0-7, cols 0-7), M1 (rows 8-15, cols 0-7),
// M2 (rows 0-7, cols 8-15), M3 (rows 8-15, cols 8-15); lane l gives the address of row l%8 of matrix
// l/8. ldmatrix must deliver lane t (row t/4, cols 2(t%4), +1) of each addressed matrix (of its
// transpose with .trans), low column in the low half; stmatrix with the same addresses must write
// the registers back (x4: the tile round-trips exactly; .trans: each matrix transposed in place;
// x2/x1: only the matrices they address).
// Fails if: a wrapper names the wrong shape/.trans or binds registers in the wrong order, or the
// fragment convention of the header comment is wrong.
__global__ void prim_ldstmatrix_kernel(const uint16_t* tile, uint32_t* regs, uint16_t* tiles) {
  using flashptx_test::prim::kLdPoison;
  using flashptx_test::prim::kLdRegs;
  __shared__ alignas(16) uint16_t src[256];
  __shared__ alignas(16) uint16_t dst[4][256];
  const int l = threadIdx.x;
  for (int i = l; i < 256; i += 32) {
    src[i] = tile[i];
    for (int t = 0; t < 4; ++t) dst[t][i] = kLdPoison;
  }
  __syncwarp();
  const int m = l / 8, row = (m % 2) * 8 + l % 8, col = (m / 2) * 8;
  const uint32_t a = fp::smem_u32(&src[row * 16 + col]);
  uint32_t r[kLdRegs] = {};
  fp::ldmatrix_x1(a, r[0]);
  fp::ldmatrix_x2(a, r[1], r[2]);
  fp::ldmatrix_x4(a, r[3], r[4], r[5], r[6]);
  fp::ldmatrix_x1_trans(a, r[7]);
  fp::ldmatrix_x2_trans(a, r[8], r[9]);
  fp::ldmatrix_x4_trans(a, r[10], r[11], r[12], r[13]);
  for (int i = 0; i < kLdRegs; ++i) regs[l * kLdRegs + i] = r[i];
  fp::stmatrix_x4(fp::smem_u32(&dst[0][row * 16 + col]), r[3], r[4], r[5], r[6]);
  fp::stmatrix_x4_trans(fp::smem_u32(&dst[1][row * 16 + col]), r[3], r[4], r[5], r[6]);
  fp::stmatrix_x2(fp::smem_u32(&dst[2][row * 16 + col]), r[3], r[4]);
  fp::stmatrix_x1_trans(fp::smem_u32(&dst[3][row * 16 + col]), r[3]);
  __syncwarp();
  for (int i = l; i < 4 * 256; i += 32) tiles[i] = (&dst[0][0])[i];
}

// ---- prmt ------------------------------------------------------------------------------------------
// Semantics: prmt.b32 default mode, runtime and immediate selectors, including the sign-replicate
// bit. Fails if operands are swapped or the selector is misbound.
__global__ void prim_prmt_kernel(const uint32_t* a, const uint32_t* b, const uint32_t* sel, uint32_t* out,
                                 uint32_t* fixed) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = fp::prmt(a[i], b[i], sel[i]);
  fixed[2 * i] = fp::prmt<0x5410>(a[i], b[i]);
  fixed[2 * i + 1] = fp::prmt<0xC840>(a[i], b[i]);
}

// ---- elect.sync --------------------------------------------------------------------------------------
// Semantics: exactly one thread of the member mask is elected and every member learns its lane.
// Fails if: none or several threads see is_elected, or the lanes disagree / name a non-member.
__global__ void prim_elect_kernel(int* full, int* part) {
  using flashptx_test::prim::kElectMask;
  const int l = threadIdx.x;
  const fp::Elected e = fp::elect_sync(0xFFFFFFFFu);
  full[l] = (e.is_elected ? 1 : 0) | static_cast<int>(e.lane << 8);
  if ((kElectMask >> l) & 1u) {
    const fp::Elected p = fp::elect_sync(kElectMask);
    part[l] = (p.is_elected ? 1 : 0) | static_cast<int>(p.lane << 8);
  } else {
    part[l] = -1;
  }
}

namespace flashptx_test::prim {

cudaError_t launch_ldstmatrix(const uint16_t* tile, uint32_t* regs, uint16_t* tiles) {
  prim_ldstmatrix_kernel<<<1, 32>>>(tile, regs, tiles);
  return cudaGetLastError();
}
cudaError_t launch_prmt(const uint32_t* a, const uint32_t* b, const uint32_t* sel, uint32_t* out,
                        uint32_t* fixed, int n) {
  if (n % 128) return cudaErrorInvalidValue;
  prim_prmt_kernel<<<n / 128, 128>>>(a, b, sel, out, fixed);
  return cudaGetLastError();
}
cudaError_t launch_elect(int* full, int* part) {
  prim_elect_kernel<<<1, 32>>>(full, part);
  return cudaGetLastError();
}

}  // namespace flashptx_test::prim
