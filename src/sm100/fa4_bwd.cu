// FA4 backward (sm_100a): the list of specializations. Every FA4 backward kernel that exists is named
// here, once: an extern "C" __global__ wrapper around fa4bwd::bwd_kernel_body<config>
// (src/sm100/fa4_bwd.cuh), so its SASS golden is named plainly
// (sass_golden/sm_100a/fa4_bwd_sm100_bf16_d128.sass).
//
// NEVER EXECUTED: there is no Blackwell GPU here. They compile, audit and replay (see the .cuh).
//
//   kernel   cta_group  keys/CTA  query rows/step  Q/dO stages  smem
//   d64      1          128       128              2            ~161 KiB
//   d128     1          128       128              1            ~193 KiB
// The configs (BwdConfig objects) are in src/sm100/fa4_bwd_config.h, which the CPU replay includes.
// Not built: the 2-CTA (cta_group::2) form and its dS exchange over DSMEM (modelled only:
// src/models/fa4_backward.cpp); see tools/NOTES.md.
#include "src/sm100/fa4_bwd.cuh"

#define FLASHPTX_FA4_BWD_KERNEL(name, config)                                                     \
  extern "C" __global__ void __launch_bounds__(flashptx::fa4bwd::kThreads, 1)                    \
      name(const __grid_constant__ flashptx::fa4bwd::BwdParams p) {                               \
    flashptx::fa4bwd::bwd_kernel_body<config>(p);                                                 \
  }

FLASHPTX_FA4_BWD_KERNEL(fa4_bwd_sm100_bf16_d64, flashptx::fa4bwd::kBwdD64)
FLASHPTX_FA4_BWD_KERNEL(fa4_bwd_sm100_fp16_d64, flashptx::fa4bwd::fp16(flashptx::fa4bwd::kBwdD64))
FLASHPTX_FA4_BWD_KERNEL(fa4_bwd_sm100_bf16_d128, flashptx::fa4bwd::kBwdD128)
FLASHPTX_FA4_BWD_KERNEL(fa4_bwd_sm100_fp16_d128, flashptx::fa4bwd::fp16(flashptx::fa4bwd::kBwdD128))
