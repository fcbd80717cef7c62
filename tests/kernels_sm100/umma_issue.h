// The MMA issue plan of the sm_100a tcgen05.mma test kernels (tests/kernels_sm100/umma.cu): TMEM
// columns, operand tile layouts, instruction descriptors and, per K step, the exact operands the
// issuing thread hands to tcgen05.mma. __host__ __device__ and free of CUDA headers, so that the
// kernels call it on the GPU and tests/host/test_tcgen05_emulator.cpp replays the same calls through
// the tcgen05 emulator against an fp64 GEMM.
#pragma once
#include <cstdint>

#include "src/protocol/hd.h"
#include "src/protocol/umma_plan.h"
#include "ptx/tcgen05_desc.cuh"

namespace flashptx_test::umma_plan {

namespace ptx = flashptx::ptx;
using flashptx::umma::SmemTile;

// Tile geometry: D[M x 64] = A[M x K] * B[64 x K]^T with operand rows of 128 bytes (K = 64 bf16 or
// 128 e4m3), row-major, K contiguous. cta_group::2: M = 256, CTA r holding A rows [128r, 128r+128)
// and B rows [32r, 32r+32).
constexpr int kM = 128, kN = 64, kRowBytes = 128, kPairM = 256;
constexpr uint32_t kKSteps = flashptx::umma::ksteps(kRowBytes);  // 4

// TMEM of one CTA: D in columns [0, 64), A (TS form) in columns [64, 96).
constexpr uint32_t kTmemCols = 128;
constexpr uint32_t kDCol = 0, kACol = 64;

// Both operands: K-major, no swizzle, 8-row groups of 8 contiguous core matrices.
FLASHPTX_HD constexpr SmemTile operand_tile(bool fp8) { return flashptx::umma::kmajor_interleaved_128b_rows(fp8 ? 1u : 2u); }

constexpr uint32_t kIdescF16 = ptx::make_umma_idesc_f16<ptx::UmmaF16Type::kBF16, ptx::UmmaDType::kF32, kM, kN>();
constexpr uint32_t kIdescF8 = ptx::make_umma_idesc_f8f6f4<ptx::UmmaF8F6F4Type::kE4M3, ptx::UmmaF8F6F4Type::kE4M3,
                                                          ptx::UmmaDType::kF32, kM, kN>();
constexpr uint32_t kIdescF16Pair =
    ptx::make_umma_idesc_f16<ptx::UmmaF16Type::kBF16, ptx::UmmaDType::kF32, kPairM, kN, ptx::UmmaMajor::kK,
                             ptx::UmmaMajor::kK, 2>();
static_assert(ptx::umma_a_tmem_ok(kIdescF16) && ptx::umma_a_tmem_ok(kIdescF8) && ptx::umma_a_tmem_ok(kIdescF16Pair),
              "the TS kernels read A from TMEM, which must be K-major");

// What the issuing thread passes to tcgen05.mma for one K step.
struct Issue {
  uint32_t d_tmem;   // D's TMEM address
  bool a_tmem_form;  // TS: A from TMEM at a_tmem; SS: A from shared memory through a_desc
  uint32_t a_tmem;
  uint64_t a_desc;
  uint64_t b_desc;
  uint32_t idesc;
  bool accumulate;   // enable-input-d
};

// K step s of the kernel with operands at shared::cta addresses a_smem / b_smem (the same offsets
// in both CTAs of a pair) and TMEM allocation base tmem_base.
FLASHPTX_HD constexpr Issue issue(bool fp8, bool ts, int cta_group, uint32_t tmem_base, uint32_t a_smem,
                                  uint32_t b_smem, uint32_t s) {
  const SmemTile tile = operand_tile(fp8);
  Issue r{};
  r.d_tmem = tmem_base + kDCol;
  r.a_tmem_form = ts;
  r.a_tmem = ts ? tmem_base + kACol + flashptx::umma::tmem_kstep_columns(s) : 0u;
  r.a_desc = ts ? 0ull : tile.desc(a_smem, s);
  r.b_desc = tile.desc(b_smem, s);
  r.idesc = cta_group == 2 ? kIdescF16Pair : (fp8 ? kIdescF8 : kIdescF16);
  r.accumulate = s > 0;
  return r;
}

// Where the kernel stores byte `kb` (a multiple of 16: whole chunks) of operand row `row`.
FLASHPTX_HD constexpr uint32_t chunk_offset(bool fp8, uint32_t row, uint32_t kb) {
  return operand_tile(fp8).byte_offset(row, kb / (fp8 ? 1u : 2u));
}

}  // namespace flashptx_test::umma_plan
