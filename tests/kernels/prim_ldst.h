// Launchers of the warp data-movement and cluster test kernels (tests/kernels/prim_ldst.cu,
// tests/kernels/prim_cluster.cu). Each returns the launch's error (cudaGetLastError); the caller
// synchronises and checks. Device pointers.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace flashptx_test::prim {

// ldmatrix / stmatrix on a 16x16 b16 tile (one warp). regs: 32 lanes x kLdRegs; tiles: 4 x 256 b16.
// regs per lane: [0] x1, [1..2] x2, [3..6] x4, [7] x1.trans, [8..9] x2.trans, [10..13] x4.trans.
// tiles: [0] stmatrix x4 of the x4 registers, [1] stmatrix x4.trans of them, [2] stmatrix x2 of
// registers 0..1, [3] stmatrix x1.trans of register 0 (untouched elements keep the poison 0xDEAD).
constexpr int kLdRegs = 16;
constexpr uint16_t kLdPoison = 0xDEAD;
cudaError_t launch_ldstmatrix(const uint16_t* tile, uint32_t* regs, uint16_t* tiles);

// prmt: out[i] = prmt(a[i], b[i], sel[i]) for i < n (runtime selector), fixed[2i] = prmt<0x5410>,
// fixed[2i+1] = prmt<0xC840> (sign replication) of a[i], b[i]. n a multiple of 128.
cudaError_t launch_prmt(const uint32_t* a, const uint32_t* b, const uint32_t* sel, uint32_t* out,
                        uint32_t* fixed, int n);

// elect.sync: one warp; full[l] and part[l] = (is_elected ? 1 : 0) | lane << 8 for the full mask and
// for kElectMask (lanes outside it write -1 to part).
constexpr uint32_t kElectMask = 0x0F0F00F0u;
cudaError_t launch_elect(int* full, int* part);

// 2-CTA cluster: DSMEM exchange, barrier.cluster, remote mbarrier arrive. in: 2 x 256 words;
// info: 2 x 4 ints (ctarank, nctarank, cluster_ctaid.x, clusterid.x); ld/st/v4: 2 x 256 words.
cudaError_t launch_cluster_dsmem(const uint32_t* in, int* info, uint32_t* ld_out, uint32_t* st_out,
                                 uint32_t* v4_out);

// 2-CTA cluster: one 2D TMA load multicast to both CTAs (box bytes <= 4096, no swizzle); each CTA
// copies the tile it received to out + rank * box_bytes.
cudaError_t launch_cluster_multicast(const CUtensorMap& map, int c0, int c1, uint32_t box_bytes, void* out);

}  // namespace flashptx_test::prim
