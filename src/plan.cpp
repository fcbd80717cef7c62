// Launch plans (src/plan.h): the dispatch rule, the grid, the kernel arguments, the launch.
#include "src/plan.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

#include "src/sm100/fa4_fwd_config.h"
#include "src/tensormap.h"

namespace flashptx {

const char* schedule_name(Schedule s) {
  switch (s) {
    case Schedule::kAuto: return "auto";
    case Schedule::kOnePerTile: return "one-per-tile";
    case Schedule::kPersistent: return "persistent";
    case Schedule::kClusterLaunchControl: return "clc";
  }
  return "unknown";
}

bool parse_schedule(std::string_view name, Schedule* s) {
  for (Schedule x : {Schedule::kAuto, Schedule::kOnePerTile, Schedule::kPersistent, Schedule::kClusterLaunchControl})
    if (name == schedule_name(x)) { *s = x; return true; }
  return false;
}

// ---- the device ------------------------------------------------------------------------------
flashptx_status current_device(Device* d, std::string* err) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *err = std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")";
    return FLASHPTX_ERR_UNSUPPORTED_DEVICE;
  }
  static std::mutex mu;
  static Device cache[64];
  std::lock_guard<std::mutex> lock(mu);
  if (dev >= 0 && dev < 64 && cache[dev].ordinal == dev) {
    *d = cache[dev];
  } else {
    int major = 0, minor = 0, sms = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
      cudaGetLastError();
      *err = "cannot read the attributes of device " + std::to_string(dev);
      return FLASHPTX_ERR_UNSUPPORTED_DEVICE;
    }
    *d = Device{dev, major * 10 + minor, sms};
    if (dev < 64) cache[dev] = *d;
  }
  // sm_100 runs the FA4 kernels (src/sm100), when this build has them. NOT YET RUN ON ONE: they are
  // compiled, audited and emulator-replayed only (no Blackwell GPU was available).
  const bool sm100_ok = d->cc == 100 && !fa4_fwd_kernels().empty();
  if (d->cc != 90 && !sm100_ok) {
    *err = "device " + std::to_string(dev) + " is sm_" + std::to_string(d->cc) +
           "; the kernels of this build are sm_90a (Hopper) and sm_100a (Blackwell)";
    return FLASHPTX_ERR_UNSUPPORTED_DEVICE;
  }
  return FLASHPTX_OK;
}

// ---- FA3 forward --------------------------------------------------------------------------------
// The dispatch rule, from the measurements in tools/NOTES.md (H200, bf16, FA3 grid):
//   d64:  3 consumer warpgroups (block_m 192) except causal below 2k rows, where the smaller tile
//         wastes less of the diagonal (v3: 8k +16% non-causal, +9% causal; 1k causal -8%).
//   d128: block_n 128 everywhere: with O staged in its own buffer (v4) it matches block_n 176 at 8k
//         (617 vs 615 TFLOP/s) and beats it at 1k (551 vs 489).
//   d256: one specialization.
// Schedule: persistent for non-causal masks where the kernel can loop; one CTA per tile for causal
// masks (with tiles of unequal length the static round-robin measured slower than the hardware's
// own block dispatch: tools/NOTES.md, v2) and for kernels that cannot loop.
static int fwd_block_m_rule(const flashptx_fwd_params& p) {
  if (p.head_dim == 64) return (p.causal && p.seqlen_q < 2048) ? 128 : 192;
  return 128;
}

static const KernelEntry* fwd_kernel_for(const flashptx_fwd_params& p, int block_m) {
  for (const KernelEntry& k : fa3_fwd_kernels())
    if (k.dtype == p.q_dtype && k.head_dim == p.head_dim && k.block_m == block_m) return &k;
  return nullptr;
}

// ---- FA4 forward (sm_100) --------------------------------------------------------------------------
// The rule (NOT MEASURED: no Blackwell GPU was available; it follows the pinned FA4 source's admission
// of its 2-CTA path, seed 0x07): head dim 128, non-causal, and at least one pair tile of query rows
// (512) -> the cta_group::2 pair; otherwise one CTA per tile. Every FA4 kernel schedules itself with
// cluster launch control: grid = tiles x cluster size.
static const KernelEntry* fa4_kernel_for(const flashptx_fwd_params& p) {
  const int cluster = (p.head_dim == 128 && !p.causal && p.seqlen_q >= 512) ? 2 : 1;
  for (const KernelEntry& k : fa4_fwd_kernels())
    if (k.dtype == p.q_dtype && k.head_dim == p.head_dim && k.cluster_ctas == cluster) return &k;
  return nullptr;
}

static flashptx_status plan_fa4_fwd(const flashptx_fwd_params& p, const FwdOptions& opt, FwdPlan* plan,
                                    std::string* err) {
  const KernelEntry* k = nullptr;
  if (opt.kernel != nullptr) {
    k = kernel_by_name(opt.kernel);
    if (k == nullptr || k->family != Family::kFa4Fwd) {
      *err = std::string("no sm_100 forward kernel named '") + opt.kernel + "'";
      return FLASHPTX_ERR_BAD_OPTION;
    }
    if (k->head_dim != p.head_dim || k->dtype != p.q_dtype) {
      *err = std::string("kernel ") + k->name + " is for head_dim " + std::to_string(k->head_dim) + " " +
             (k->dtype == FLASHPTX_BF16 ? "bf16" : "fp16") + ", not this problem's";
      return FLASHPTX_ERR_BAD_OPTION;
    }
  } else if ((k = fa4_kernel_for(p)) == nullptr) {
    *err = "no sm_100 forward kernel for head_dim " + std::to_string(p.head_dim) + " (FA4: 64 and 128)";
    return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
  }
  if (opt.trace != nullptr) {
    *err = "a trace buffer is only for the traced kernel (sm_90)";
    return FLASHPTX_ERR_BAD_OPTION;
  }
  if (opt.schedule != Schedule::kAuto && opt.schedule != Schedule::kClusterLaunchControl) {
    *err = std::string("kernel ") + k->name + " schedules its tiles with cluster launch control (schedule clc)";
    return FLASHPTX_ERR_BAD_OPTION;
  }
  const int64_t m_blocks = (p.seqlen_q + k->block_m - 1) / k->block_m;
  const int64_t tiles = m_blocks * p.heads_q * p.batch;
  plan->launch = Launch{k, dim3(static_cast<unsigned>(tiles * k->cluster_ctas)), dim3(static_cast<unsigned>(k->threads)),
                        k->smem_bytes, Schedule::kClusterLaunchControl, tiles};
  return FLASHPTX_OK;
}

flashptx_status plan_fwd(const flashptx_fwd_params& p, const FwdOptions& opt, const Device& dev, FwdPlan* plan,
                         std::string* err) {
  if (dev.cc == 100) return plan_fa4_fwd(p, opt, plan, err);
  const KernelEntry* k = nullptr;
  if (opt.kernel != nullptr) {
    k = kernel_by_name(opt.kernel);
    if (k == nullptr || (k->family != Family::kFa3Fwd && k->family != Family::kFa3FwdTraced)) {
      *err = std::string("no forward kernel named '") + opt.kernel + "'";
      return FLASHPTX_ERR_BAD_OPTION;
    }
    if (k->head_dim != p.head_dim || k->dtype != p.q_dtype) {
      *err = std::string("kernel ") + k->name + " is for head_dim " + std::to_string(k->head_dim) + " " +
             (k->dtype == FLASHPTX_BF16 ? "bf16" : "fp16") + ", not this problem's";
      return FLASHPTX_ERR_BAD_OPTION;
    }
  } else {
    k = fwd_kernel_for(p, fwd_block_m_rule(p));
    if (k == nullptr) {
      *err = "no forward kernel for head_dim " + std::to_string(p.head_dim) + " in this dtype";
      return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
    }
  }
  const bool traced = k->family == Family::kFa3FwdTraced;
  if (traced != (opt.trace != nullptr)) {
    *err = traced ? std::string("the traced kernel needs a trace buffer")
                  : std::string("a trace buffer is only for the traced kernel");
    return FLASHPTX_ERR_BAD_OPTION;
  }

  Schedule sched = opt.schedule;
  if (sched == Schedule::kAuto) sched = (k->persistent && !p.causal) ? Schedule::kPersistent : Schedule::kOnePerTile;
  if (sched == Schedule::kClusterLaunchControl) {
    *err = std::string("kernel ") + k->name + " has no cluster launch control (an sm_100 schedule)";
    return FLASHPTX_ERR_BAD_OPTION;
  }
  if (sched == Schedule::kPersistent && !k->persistent) {
    *err = std::string("kernel ") + k->name + " cannot loop over tiles (schedule persistent)";
    return FLASHPTX_ERR_BAD_OPTION;
  }
  const int64_t m_blocks = (p.seqlen_q + k->block_m - 1) / k->block_m;
  const int64_t tiles = m_blocks * p.heads_q * p.batch;
  int64_t ctas = tiles;
  // A persistent CTA uses more than half the shared memory of an SM: one per SM.
  if (sched == Schedule::kPersistent) ctas = std::min<int64_t>(tiles, std::max(dev.sm_count, 1));

  plan->launch = Launch{k, dim3(static_cast<unsigned>(ctas)), dim3(static_cast<unsigned>(k->threads)), k->smem_bytes,
                        sched, tiles};
  return FLASHPTX_OK;
}

flashptx_status encode_fwd_args(const flashptx_fwd_params& p, const FwdOptions& opt, FwdPlan* plan, std::string* err) {
  const KernelEntry& k = *plan->launch.kernel;
  fa3::FwdParams& a = plan->args;
  a = fa3::FwdParams{};
  auto type = [](flashptx_dtype t) {
    return t == FLASHPTX_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  };
  const int64_t sk = std::max<int64_t>(p.seqlen_k, 1);  // a map needs extent >= 1; no block is read then
  // Box rows: FA3 loads Q per tile and stores O per 64-row consumer; FA4 (src/sm100/fa4_fwd.cuh) loads
  // and stores per 128-row Q stage, and a cta_group::2 CTA loads half of each K block.
  const bool fa4 = k.family == Family::kFa4Fwd;
  const uint32_t q_box = fa4 ? static_cast<uint32_t>(fa4::kStageRows) : static_cast<uint32_t>(k.block_m);
  const uint32_t k_box = static_cast<uint32_t>(k.block_n / k.cluster_ctas);
  const uint32_t o_box = fa4 ? static_cast<uint32_t>(fa4::kStageRows) : 64u;
  const bool ok =
      encode_bshd(&a.tma_q, type(p.q_dtype), p.q, p.batch, p.seqlen_q, p.heads_q, p.head_dim, p.q_batch_stride,
                  p.q_row_stride, p.q_head_stride, q_box, err) &&
      encode_bshd(&a.tma_k, type(p.k_dtype), p.k, p.batch, sk, p.heads_kv, p.head_dim, p.k_batch_stride,
                  p.k_row_stride, p.k_head_stride, k_box, err) &&
      encode_bshd(&a.tma_v, type(p.v_dtype), p.v, p.batch, sk, p.heads_kv, p.head_dim, p.v_batch_stride,
                  p.v_row_stride, p.v_head_stride, static_cast<uint32_t>(k.block_n), err) &&
      encode_bshd(&a.tma_o, type(p.o_dtype), p.o, p.batch, p.seqlen_q, p.heads_q, p.head_dim, p.o_batch_stride,
                  p.o_row_stride, p.o_head_stride, o_box, err);
  if (!ok) return FLASHPTX_ERR_BAD_STRIDES;
  a.lse = p.lse;
  a.trace = opt.trace;
  a.seqlen_q = static_cast<int>(p.seqlen_q);
  a.seqlen_k = static_cast<int>(p.seqlen_k);
  a.heads_q = static_cast<int>(p.heads_q);
  a.heads_kv = static_cast<int>(p.heads_kv);
  a.batch = static_cast<int>(p.batch);
  a.num_m_blocks = static_cast<int>((p.seqlen_q + k.block_m - 1) / k.block_m);
  a.causal = p.causal ? 1 : 0;
  const float scale = p.softmax_scale != 0.f ? p.softmax_scale : 1.f / std::sqrt(static_cast<float>(p.head_dim));
  a.softmax_scale = scale;
  a.softmax_scale_log2 = scale * 1.4426950408889634f;
  return FLASHPTX_OK;
}

// ---- launch ------------------------------------------------------------------------------------
static thread_local Launch g_last_launch;

Launch last_launch() { return g_last_launch; }

flashptx_status launch(const Launch& l, void* args, cudaStream_t stream, std::string* err) {
  cudaError_t e = cudaFuncSetAttribute(l.kernel->fn, cudaFuncAttributeMaxDynamicSharedMemorySize, l.smem_bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *err = std::string("cudaFuncSetAttribute(") + l.kernel->name + "): " + cudaGetErrorString(e);
    return FLASHPTX_ERR_CUDA;
  }
  void* kernel_args[] = {args};
  e = cudaLaunchKernel(l.kernel->fn, l.grid, l.block, kernel_args, static_cast<size_t>(l.smem_bytes), stream);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *err = std::string("launch of ") + l.kernel->name + ": " + cudaGetErrorString(e);
    return FLASHPTX_ERR_CUDA;
  }
  g_last_launch = l;
  return FLASHPTX_OK;
}

}  // namespace flashptx
