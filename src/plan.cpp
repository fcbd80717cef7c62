// Launch plans (src/plan.h): the dispatch rule, the grid, the kernel arguments, the launch.
#include "src/plan.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "src/protocol/fa4_bwd_pair_plan.h"
#include "src/protocol/tile_scheduler.h"
#include "src/sm100/fa4_fwd_config.h"
#include "src/tensormap.h"

namespace flashptx {

static thread_local Launch g_last_launch;  // for last_launch(): the forward's kernel, the backward's main

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
static std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

std::string no_gpu_reason(cudaError_t e, int count, int driver_version, int runtime_version) {
  if (driver_version == 0)
    return "no NVIDIA driver found (libcuda.so.1 is not installed or cannot be loaded), so no GPU to run on";
  if (e == cudaErrorInsufficientDriver)
    return "the NVIDIA driver supports CUDA " + cuda_version(driver_version) + ", older than the CUDA " +
           cuda_version(runtime_version) + " runtime of this build: update the driver";
  if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0))
    return "no NVIDIA GPU found (the driver is installed but sees no device)";
  return std::string("the CUDA runtime cannot use the GPU: ") + cudaGetErrorString(e);
}

flashptx_status current_device(Device* d, std::string* err) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) {
    cudaGetLastError();
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    *err = no_gpu_reason(e, 0, drv, rt);
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

flashptx_status admit_sm100(const Device& dev, std::string* err) {
  if (dev.cc != 100 || sm100_opted_in()) return FLASHPTX_OK;
  *err = "device " + std::to_string(dev.ordinal) +
         " is sm_100 (Blackwell), whose FA4 kernels have never executed on a Blackwell GPU (compiled, "
         "SASS-audited and replayed on an emulator only); to run them anyway, opt in with "
         "flashptx_set_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, 1) (Python: flashptx.allow_unverified_sm100())";
  return FLASHPTX_ERR_UNSUPPORTED_DEVICE;
}

// ---- plan calibration ---------------------------------------------------------------------------
// The fitted constants of the forward's dispatch rules below, in one table. Each was fitted to
// measured shapes on the H200 and checked on shapes the fit did not use; the measurements, the fits
// and where each rule changes its answer: docs/DECISIONS.md, "Plan calibration" (one subsection per
// field). The rules themselves (which estimate, which kernels) are below; a refit changes this table
// only.
struct PlanCalibration {
  // d64 causal (fwd_d64_causal_choice): the time of a 192 x 128 block of the three-consumer kernel
  // in units of a 128 x 128 block of the two-consumer one (1.5x the FLOPs).
  double d64_block192_weight;
  // d128 / d256 causal (fwd_causal_paired): the plain kernel's blocks (one CTA per tile) in units of
  // the paired kernel's.
  double d128_one_per_tile_weight;
  double d256_one_per_tile_weight;
  // d256 causal: above this many query rows the plain kernel, whatever the estimates say.
  int64_t d256_paired_max_rows;
  // d256 non-causal: the persistent twin (O in halves) up to this many keys, the plain kernel beyond.
  int64_t d256_persistent_max_keys;
  // d64 non-causal (fwd_d64_noncausal_block_m): a round of 192-row tiles in units of a round of
  // 128-row tiles, and the rows up to which rounds decide (the 192-row tile beyond).
  double d64_round192_weight;
  int64_t d64_noncausal_rounds_max_rows;
  // The dynamic schedule's L2 sections (lpt_section_pairs): the bytes of K and V one section keeps.
  int64_t lpt_section_bytes;
};
constexpr PlanCalibration kPlanCalibration = {
    .d64_block192_weight = 1.29,             // docs/DECISIONS.md, "Plan calibration": d64 causal
    .d128_one_per_tile_weight = 1.10,        // docs/DECISIONS.md, "Plan calibration": d128 causal
    .d256_one_per_tile_weight = 1.02,        // docs/DECISIONS.md, "Plan calibration": d256 causal
    .d256_paired_max_rows = 8192,            // docs/DECISIONS.md, "Plan calibration": d256 causal
    .d256_persistent_max_keys = 4096,        // docs/DECISIONS.md, "Plan calibration": d256 non-causal
    .d64_round192_weight = 1.34,             // docs/DECISIONS.md, "Plan calibration": d64 non-causal
    .d64_noncausal_rounds_max_rows = 1024,   // docs/DECISIONS.md, "Plan calibration": d64 non-causal
    .lpt_section_bytes = int64_t{32} << 20,  // docs/DECISIONS.md, "Plan calibration": L2 sections
};

// ---- FA3 forward --------------------------------------------------------------------------------
// The dispatch rule (bf16 and fp16 alike; kPlanCalibration holds its fitted constants):
//   d64:  3 consumer warpgroups (block_m 192) except non-causal up to
//         d64_noncausal_rounds_max_rows rows, where fwd_d64_noncausal_block_m's rounds may put the
//         128-row persistent kernel first (a ragged last 192-row tile: 512 rows are 2.7 tiles; 768
//         rows are 4 whole ones); causal: fwd_d64_causal_choice below (128- or 192-row tiles,
//         paired or not).
//   d128: block_n 128 everywhere (docs/DECISIONS.md, "O staged in its own buffer").
//   d256: one specialization (block_n 64, pingpong), its paired twin (causal up to
//         d256_paired_max_rows rows) and its persistent twin (non-causal up to
//         d256_persistent_max_keys keys; both stage O in halves beside Q).
// Schedule: persistent for non-causal masks where the kernel can loop (d64, d128). Causal masks: the
// paired kernels (persistent CTAs over the paired static schedule, src/protocol/tile_scheduler.h
// paired_slot: units of tiles m and M-1-m, equal in cost; grid min(units, SMs)) where the makespan
// estimates put them first (fwd_d64_causal_choice, fwd_causal_paired); one CTA per tile in LPT order
// otherwise (few units per CTA quantize: 1500 rows x 3 x 8 heads at d256 is 1.09 units per CTA).
// (A static round-robin of single causal tiles is not among the choices: docs/DECISIONS.md, "The
// paired causal schedule".)
// d64 causal: the 128-row paired kernel, the 192-row paired kernel or the 192-row kernel one CTA per
// tile, whichever finishes first by the makespan estimates of src/protocol/tile_scheduler.h, a
// 192 x 128 block weighted d64_block192_weight of a 128 x 128 one. The estimates stand for what
// decides these shapes: a few units per CTA quantize (1500 rows, 32 heads, batch 3: 4.4 units of the
// 128-row tile per CTA, 2.9 of the 192-row tile), and a ragged 192-row tile wastes rows (1k: 6 tiles
// of 192 for 1024 rows).
FwdChoice fwd_d64_causal_choice(int64_t seqlen_q, int64_t seqlen_k, int64_t heads, int64_t batch, int sms) {
  const int sq = static_cast<int>(seqlen_q), sk = static_cast<int>(seqlen_k), h = static_cast<int>(heads),
            b = static_cast<int>(batch);
  const int m128 = static_cast<int>((seqlen_q + 127) / 128), m192 = static_cast<int>((seqlen_q + 191) / 192);
  const double w192 = kPlanCalibration.d64_block192_weight;
  const double paired128 = static_cast<double>(paired_makespan_blocks(m128, 128, 128, sq, sk, h, b, sms));
  const double paired192 = w192 * static_cast<double>(paired_makespan_blocks(m192, 192, 128, sq, sk, h, b, sms));
  const double one192 = w192 * static_cast<double>(one_per_tile_makespan_blocks(m192, 192, 128, sq, sk, h, b, sms));
  if (paired128 <= paired192 && paired128 <= one192) return {128, true};
  return paired192 < one192 ? FwdChoice{192, true} : FwdChoice{192, false};
}

// d128 and d256 causal: the paired kernel, or the plain kernel one CTA per tile in LPT order, by the
// same makespan estimates as d64 (128- and 64-key blocks), the plain kernel's blocks weighted
// d128_one_per_tile_weight / d256_one_per_tile_weight; and at d256 the plain kernel above
// d256_paired_max_rows rows whatever the estimates say.
bool fwd_causal_paired(int64_t head_dim, int64_t seqlen_q, int64_t seqlen_k, int64_t heads, int64_t batch, int sms) {
  if (seqlen_q > (1 << 24) || seqlen_k > (1 << 24) || heads * batch > (1 << 24)) return head_dim == 128;
  if (head_dim == 256 && seqlen_q > kPlanCalibration.d256_paired_max_rows) return false;
  const int sq = static_cast<int>(seqlen_q), sk = static_cast<int>(seqlen_k), h = static_cast<int>(heads),
            b = static_cast<int>(batch);
  const int m = static_cast<int>((seqlen_q + 127) / 128), block_n = head_dim == 256 ? 64 : 128;
  const double weight =
      head_dim == 256 ? kPlanCalibration.d256_one_per_tile_weight : kPlanCalibration.d128_one_per_tile_weight;
  const double paired = static_cast<double>(paired_makespan_blocks(m, 128, block_n, sq, sk, h, b, sms));
  const double one = weight * static_cast<double>(one_per_tile_makespan_blocks(m, 128, block_n, sq, sk, h, b, sms));
  return paired <= one;
}

// d64 non-causal up to d64_noncausal_rounds_max_rows rows: the 128- or the 192-row kernel (both
// persistent, equal tiles), by rounds of tiles on the CTAs, a round of 192-row tiles weighted
// d64_round192_weight of a round of 128-row ones whether or not the tiles' last warpgroups hold rows
// (they skip their blocks, but the tile's other warpgroups set its time). Beyond, the 192-row tile.
int fwd_d64_noncausal_block_m(int64_t seqlen_q, int64_t heads, int64_t batch, int sms) {
  if (seqlen_q > kPlanCalibration.d64_noncausal_rounds_max_rows) return 192;
  const int64_t g = std::max(sms, 1), hb = heads * batch;
  const int64_t t128 = (seqlen_q + 127) / 128 * hb, t192 = (seqlen_q + 191) / 192 * hb;
  const double r128 = static_cast<double>((t128 + g - 1) / g),
               r192 = kPlanCalibration.d64_round192_weight * static_cast<double>((t192 + g - 1) / g);
  return r128 <= r192 ? 128 : 192;
}

static FwdChoice fwd_choice(const flashptx_fwd_params& p, int sms) {
  if (p.head_dim == 64) {
    if (!p.causal) return {fwd_d64_noncausal_block_m(p.seqlen_q, p.heads_q, p.batch, sms), false};
    // (Problems whose sizes leave int range take the 192-row kernel one CTA per tile.)
    if (p.seqlen_q > (1 << 24) || p.seqlen_k > (1 << 24) || p.heads_q * p.batch > (1 << 24))
      return {192, false};
    return fwd_d64_causal_choice(p.seqlen_q, p.seqlen_k, p.heads_q, p.batch, sms);
  }
  // d256 non-causal: the persistent twin (O staged in halves) up to d256_persistent_max_keys keys,
  // the plain kernel beyond.
  if (p.head_dim == 256 && !p.causal) return {128, false, p.seqlen_k <= kPlanCalibration.d256_persistent_max_keys};
  return {128, p.causal && fwd_causal_paired(p.head_dim, p.seqlen_q, p.seqlen_k, p.heads_q, p.batch, sms)};
}

// V's head dim: flashptx_fwd_params::head_dim_v (and the backward's, fixed-length and varlen), 0
// meaning head_dim; a row's (KernelEntry::head_dim_v, 0 likewise).
static int64_t v_dim(const flashptx_fwd_params& p) { return p.head_dim_v != 0 ? p.head_dim_v : p.head_dim; }
static int64_t v_dim(const KernelEntry& k) { return k.head_dim_v != 0 ? k.head_dim_v : k.head_dim; }
static int64_t v_dim(const flashptx_bwd_params& p) { return p.head_dim_v != 0 ? p.head_dim_v : p.head_dim; }
static int64_t v_dim(const flashptx_bwd_varlen_params& p) { return p.head_dim_v != 0 ? p.head_dim_v : p.head_dim; }
// Head dims 96 and 192 and a separate V head dim: their kernels (src/sm90/fa3_fwd_hdim.cu), one per
// (head_dim, head_dim_v) and dtype, one CTA per tile for every mask (docs/DECISIONS.md, "Head dims
// 96 and 192, and a V head dim of its own").
static bool hdim_problem(const flashptx_fwd_params& p) {
  return p.head_dim == 96 || p.head_dim == 192 || v_dim(p) != p.head_dim;
}
static const KernelEntry* hdim_kernel_for(const flashptx_fwd_params& p) {
  for (const KernelEntry& k : fa3_fwd_hdim_kernels())
    if (k.dtype == p.q_dtype && k.head_dim == p.head_dim && v_dim(k) == v_dim(p)) return &k;
  return nullptr;
}
static std::string dims_text(const flashptx_fwd_params& p) {
  return "(head_dim, head_dim_v) = (" + std::to_string(p.head_dim) + ", " + std::to_string(v_dim(p)) + ")";
}

// The row of (dtype, head dim, block_m, paired); where a head dim has a plain and a persistent
// kernel of that shape (d256), `loop` picks between them.
static const KernelEntry* fwd_kernel_for(const flashptx_fwd_params& p, int block_m, bool paired, bool loop = false) {
  const KernelEntry* any = nullptr;
  for (const KernelEntry& k : fa3_fwd_kernels())
    if (k.dtype == p.q_dtype && k.head_dim == p.head_dim && k.block_m == block_m && k.paired == paired) {
      if (k.persistent == loop) return &k;
      if (any == nullptr) any = &k;
    }
  return any;
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
  if ((p.window != 0 && (p.window_left >= 0 || p.window_right >= 0)) || p.softcap != 0.f) {
    *err = "the sm_100 forward has no sliding window or softcap (the FA3 forward on sm_90 has them)";
    return FLASHPTX_ERR_UNSUPPORTED;
  }
  if (p.sinks != nullptr) {
    *err = "the sm_100 forward has no attention sinks (the FA3 forward on sm_90 has them)";
    return FLASHPTX_ERR_UNSUPPORTED;
  }
  if (opt.kernel != nullptr) {
    k = kernel_by_name(opt.kernel);
    if (k == nullptr || k->family != Family::kFa4Fwd) {
      *err = std::string("no sm_100 forward kernel named '") + opt.kernel + "'";
      return FLASHPTX_ERR_BAD_OPTION;
    }
    if (k->head_dim != p.head_dim || v_dim(*k) != v_dim(p) || k->dtype != p.q_dtype) {
      *err = std::string("kernel ") + k->name + " is for head_dim " + std::to_string(k->head_dim) + " " +
             (k->dtype == FLASHPTX_BF16 ? "bf16" : "fp16") + ", not this problem's";
      return FLASHPTX_ERR_BAD_OPTION;
    }
  } else if (v_dim(p) != p.head_dim) {
    *err = "the sm_100 forward has no separate V head dim: " + dims_text(p) + " (FA4: head_dim_v = head_dim)";
    return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
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

// The dynamic schedule runs where the kernel has it (KernelEntry::dynamic: the 128-row d64 paired
// kernel) and the caller gave a counter; its grid is then min(tiles, SMs), every tile one fetch.
static bool dynamic_schedule(const KernelEntry& k, const flashptx_fwd_params& p) {
  return k.dynamic && p.tile_counter != nullptr;
}

// (batch, head) pairs per section of the dynamic schedule: as many as keep their K and V within
// lpt_section_bytes of L2 (kPlanCalibration), the sections then made equal, so that the last is not
// a sliver whose few tiles leave most CTAs idle.
int lpt_section_pairs(int64_t seqlen_k, int64_t head_dim, int64_t pairs) {
  const int64_t per_pair = std::max<int64_t>(seqlen_k, 1) * head_dim * 2 * 2;  // K and V, 2 bytes
  const int64_t fit =
      std::clamp<int64_t>(kPlanCalibration.lpt_section_bytes / per_pair, 1, std::max<int64_t>(pairs, 1));
  const int64_t sections = (pairs + fit - 1) / fit;
  return static_cast<int>(std::max<int64_t>((pairs + sections - 1) / std::max<int64_t>(sections, 1), 1));
}

// ---- the score modifiers: the local kernels (src/sm90/fa3_fwd_local.cu) -----------------------------
FwdModifiers fwd_modifiers(int window, int64_t window_left, int64_t window_right, bool causal, float softcap,
                           int64_t seqlen_q, int64_t seqlen_k) {
  FwdModifiers m;
  int64_t left = window != 0 ? window_left : -1, right = window != 0 ? window_right : -1;
  if (causal) right = 0;  // causal is the window (-1, 0)
  if (left >= seqlen_k - 1) left = -1;
  if (right >= seqlen_q - 1) right = -1;
  m.window_left = static_cast<int>(left);
  m.window_right = static_cast<int>(right);
  m.softcap = softcap;
  m.local = softcap != 0.f || left >= 0 || right > 0;
  m.causal = !m.local && right == 0;
  return m;
}
static FwdModifiers fwd_modifiers(const flashptx_fwd_params& p) {
  return fwd_modifiers(p.window, p.window_left, p.window_right, p.causal != 0, p.softcap, p.seqlen_q, p.seqlen_k);
}
static bool is_local(const KernelEntry& k) {
  for (const KernelSwitch& s : k.switches)
    if (std::string_view(s.name) == "window") return s.value != 0;
  return false;
}
static bool has_sinks(const KernelEntry& k) {
  for (const KernelSwitch& s : k.switches)
    if (std::string_view(s.name) == "sinks") return s.value != 0;
  return false;
}
// A sink kernel that also runs without sinks (FwdConfig::sinks_optional: FwdParams::sinks null).
static bool sinks_optional(const KernelEntry& k) {
  for (const KernelSwitch& s : k.switches)
    if (std::string_view(s.name) == "sinks_optional") return s.value != 0;
  return false;
}
static const KernelEntry* local_kernel_for(std::span<const KernelEntry> rows, flashptx_dtype t, int64_t head_dim,
                                           int64_t head_dim_v) {
  for (const KernelEntry& k : rows)
    if (k.dtype == t && k.head_dim == head_dim && v_dim(k) == head_dim_v) return &k;
  return nullptr;
}

flashptx_status plan_fwd(const flashptx_fwd_params& p_in, const FwdOptions& opt, const Device& dev, FwdPlan* plan,
                         std::string* err) {
  if (const flashptx_status s = admit_sm100(dev, err); s != FLASHPTX_OK) return s;
  if (dev.cc == 100) return plan_fa4_fwd(p_in, opt, plan, err);
  // A window or a softcap: the local kernel of the head dim, one CTA per tile, its tiles in
  // longest-first order (FwdConfig::window; a tile loads only the blocks its window sees). A window
  // equal to none or to the causal mask plans as that mask, on today's kernels.
  const bool modified = p_in.window != 0 || p_in.softcap != 0.f;
  const FwdModifiers mod = modified ? fwd_modifiers(p_in) : FwdModifiers{};
  flashptx_fwd_params p = p_in;
  if (modified) p.causal = mod.causal ? 1 : 0;
  const KernelEntry* k = nullptr;
  // Sinks: the sink kernel of the head dim (the local kernels' walk, with or without a window and a
  // softcap; src/sm90/fa3_fwd_sink.cu), one CTA per tile as the local kernels.
  const bool sinks = p.sinks != nullptr;
  if (opt.kernel == nullptr && (mod.local || sinks)) {
    if (hdim_problem(p)) {
      // Head dims 96 and 192 and (192, 128): one kernel per shape and dtype carries the window, the
      // softcap and the sinks, the sinks optional (src/sm90/fa3_fwd_hdim_local.cu).
      if ((k = local_kernel_for(fa3_fwd_hdim_local_kernels(), p.q_dtype, p.head_dim, v_dim(p))) == nullptr) {
        *err = "no local (window / softcap / sinks) forward kernel for " + dims_text(p) + " in this dtype";
        return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
      }
    } else if (sinks) {
      if ((k = local_kernel_for(fa3_fwd_sink_kernels(), p.q_dtype, p.head_dim, v_dim(p))) == nullptr) {
        *err = "no attention-sink forward kernel for " + dims_text(p) + " in this dtype";
        return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
      }
    } else if ((k = local_kernel_for(fa3_fwd_local_kernels(), p.q_dtype, p.head_dim, v_dim(p))) == nullptr) {
      *err = "no local (window / softcap) forward kernel for " + dims_text(p) + " in this dtype";
      return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
    }
    if (opt.trace != nullptr) {
      *err = "a trace buffer is only for the traced kernel (no window, softcap or sinks)";
      return FLASHPTX_ERR_BAD_OPTION;
    }
    if (opt.schedule != Schedule::kAuto && opt.schedule != Schedule::kOnePerTile) {
      *err = std::string("kernel ") + k->name + " runs one CTA per tile (schedule one-per-tile)";
      return FLASHPTX_ERR_BAD_OPTION;
    }
    const int64_t tiles = (p.seqlen_q + k->block_m - 1) / k->block_m * p.heads_q * p.batch;
    plan->launch = Launch{k, dim3(static_cast<unsigned>(tiles)), dim3(static_cast<unsigned>(k->threads)), k->smem_bytes,
                          Schedule::kOnePerTile, tiles};
    return FLASHPTX_OK;
  }
  if (opt.kernel != nullptr) {
    k = kernel_by_name(opt.kernel);
    if (k == nullptr || (k->family != Family::kFa3Fwd && k->family != Family::kFa3FwdTraced)) {
      *err = std::string("no forward kernel named '") + opt.kernel + "'";
      return FLASHPTX_ERR_BAD_OPTION;
    }
    if (k->head_dim != p.head_dim || v_dim(*k) != v_dim(p) || k->dtype != p.q_dtype) {
      std::string dims = std::to_string(k->head_dim);  // "192", or "192/128" with a V head dim of its own
      if (v_dim(*k) != k->head_dim) dims.append("/").append(std::to_string(v_dim(*k)));
      *err = std::string("kernel ") + k->name + " is for head_dim " + dims + " " +
             (k->dtype == FLASHPTX_BF16 ? "bf16" : "fp16") + ", not this problem's";
      return FLASHPTX_ERR_BAD_OPTION;
    }
  } else if (hdim_problem(p)) {
    if ((k = hdim_kernel_for(p)) == nullptr) {
      *err = "no forward kernel for " + dims_text(p) + " in this dtype";
      return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
    }
  } else {
    const FwdChoice c = fwd_choice(p, std::max(dev.sm_count, 1));
    // A forced one-CTA-per-tile schedule takes the plain kernel (the paired ones only loop).
    k = fwd_kernel_for(p, c.block_m, c.paired && opt.schedule != Schedule::kOnePerTile,
                       c.loop && opt.schedule != Schedule::kOnePerTile);
    if (k == nullptr) {
      *err = "no forward kernel for head_dim " + std::to_string(p.head_dim) + " in this dtype";
      return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
    }
  }
  if (mod.local && !is_local(*k)) {
    *err = std::string("kernel ") + k->name + " has no sliding window or softcap (the fa3_fwd_local kernels have them)";
    return FLASHPTX_ERR_BAD_OPTION;
  }
  if (sinks ? !has_sinks(*k) : (has_sinks(*k) && !sinks_optional(*k))) {
    *err = std::string("kernel ") + k->name +
           (sinks ? " has no attention sinks (the fa3_fwd_sink kernels have them)" : " needs attention sinks (sinks is NULL)");
    return FLASHPTX_ERR_BAD_OPTION;
  }
  const bool traced = k->family == Family::kFa3FwdTraced;
  if (traced != (opt.trace != nullptr)) {
    *err = traced ? std::string("the traced kernel needs a trace buffer")
                  : std::string("a trace buffer is only for the traced kernel");
    return FLASHPTX_ERR_BAD_OPTION;
  }

  if (k->paired && !p.causal) {
    *err = std::string("kernel ") + k->name + " walks the paired causal schedule: causal masks only";
    return FLASHPTX_ERR_BAD_OPTION;
  }
  Schedule sched = opt.schedule;
  if (sched == Schedule::kAuto)
    sched = (k->paired || (k->persistent && !p.causal)) ? Schedule::kPersistent : Schedule::kOnePerTile;
  if (sched == Schedule::kOnePerTile && k->paired) {
    *err = std::string("kernel ") + k->name + " walks the paired causal schedule: schedule persistent only";
    return FLASHPTX_ERR_BAD_OPTION;
  }
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
  // A paired CTA walks units of two tiles (paired_slot): at most one CTA per unit.
  if (sched == Schedule::kPersistent) {
    const int64_t work = (k->paired && !dynamic_schedule(*k, p)) ? paired_units(static_cast<int>(m_blocks), static_cast<int>(p.heads_q),
                                                  static_cast<int>(p.batch))
                                   : tiles;
    ctas = std::min<int64_t>(work, std::max(dev.sm_count, 1));
  }

  plan->launch = Launch{k, dim3(static_cast<unsigned>(ctas)), dim3(static_cast<unsigned>(k->threads)), k->smem_bytes,
                        sched, tiles};
  return FLASHPTX_OK;
}

// The local kernels' modifier fields (FwdParams::window_left/right, softcap_prescale). With a
// softcap c the kernel computes tanh(S scale / c) and exponentiates with the scale c: the logit
// c tanh(scale S / c), and an LSE in those units.
static void encode_modifiers(const FwdModifiers& mod, float scale, fa3::FwdParams* a) {
  a->window_left = mod.window_left;
  a->window_right = mod.window_right;
  a->softcap_prescale = 0.f;
  if (mod.softcap > 0.f) {
    a->softcap_prescale = scale / mod.softcap;
    a->softmax_scale = mod.softcap;
    a->softmax_scale_log2 = mod.softcap * 1.4426950408889634f;
  }
}

flashptx_status encode_fwd_args(const flashptx_fwd_params& p_in, const FwdOptions& opt, FwdPlan* plan, std::string* err) {
  const KernelEntry& k = *plan->launch.kernel;
  const bool modified = p_in.window != 0 || p_in.softcap != 0.f;
  const FwdModifiers mod = fwd_modifiers(p_in);  // (for a local kernel, with or without modifiers)
  flashptx_fwd_params p = p_in;
  if (modified) p.causal = mod.causal ? 1 : 0;
  fa3::FwdParams& a = plan->args;
  a = fa3::FwdParams{};
  auto type = [](flashptx_dtype t) {
    return t == FLASHPTX_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  };
  // Without keys no K/V block is read, but a map needs an extent >= 1 and valid strides: one row,
  // dense strides (the caller's may be zero then).
  const bool no_keys = p.seqlen_k == 0;
  const int64_t sk = std::max<int64_t>(p.seqlen_k, 1);
  const int64_t kv_ss = no_keys ? p.heads_kv * p.head_dim : 0, kv_sb = no_keys ? p.heads_kv * p.head_dim : 0;
  // V and O have head_dim_v columns (0: head_dim); the maps of a head dim that is not a multiple of
  // 64 (96) keep 64-column boxes, the last one past the tensor's edge (zero-filled on load, clipped
  // on store: FwdLayout::kChunks).
  const int64_t dv = v_dim(p);
  const int64_t vv_ss = no_keys ? p.heads_kv * dv : 0, vv_sb = no_keys ? p.heads_kv * dv : 0;
  // Box rows: FA3 loads Q per tile and stores O per 64-row consumer; FA4 (src/sm100/fa4_fwd.cuh) loads
  // and stores per 128-row Q stage, and a cta_group::2 CTA loads half of each K block.
  const bool fa4 = k.family == Family::kFa4Fwd;
  const uint32_t q_box = fa4 ? static_cast<uint32_t>(fa4::kStageRows) : static_cast<uint32_t>(k.block_m);
  const uint32_t k_box = static_cast<uint32_t>(k.block_n / k.cluster_ctas);
  const uint32_t o_box = fa4 ? static_cast<uint32_t>(fa4::kStageRows) : 64u;
  const bool ok =
      encode_bshd(&a.tma_q, type(p.q_dtype), p.q, p.batch, p.seqlen_q, p.heads_q, p.head_dim, p.q_batch_stride,
                  p.q_row_stride, p.q_head_stride, q_box, err) &&
      encode_bshd(&a.tma_k, type(p.k_dtype), p.k, p.batch, sk, p.heads_kv, p.head_dim,
                  no_keys ? kv_sb : p.k_batch_stride, no_keys ? kv_ss : p.k_row_stride,
                  no_keys ? p.head_dim : p.k_head_stride, k_box, err) &&
      encode_bshd(&a.tma_v, type(p.v_dtype), p.v, p.batch, sk, p.heads_kv, dv,
                  no_keys ? vv_sb : p.v_batch_stride, no_keys ? vv_ss : p.v_row_stride,
                  no_keys ? dv : p.v_head_stride, static_cast<uint32_t>(k.block_n), err) &&
      encode_bshd(&a.tma_o, type(p.o_dtype), p.o, p.batch, p.seqlen_q, p.heads_q, dv, p.o_batch_stride,
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
  if (dynamic_schedule(k, p)) {
    a.tile_counter = p.tile_counter;
    a.lpt_section = lpt_section_pairs(p.seqlen_k, p.head_dim, p.heads_q * p.batch);
  }
  const float scale = p.softmax_scale != 0.f ? p.softmax_scale : 1.f / std::sqrt(static_cast<float>(p.head_dim));
  a.softmax_scale = scale;
  a.softmax_scale_log2 = scale * 1.4426950408889634f;
  if (is_local(k)) encode_modifiers(mod, scale, &a);
  if (has_sinks(k)) a.sinks = p.sinks;
  return FLASHPTX_OK;
}

// ---- FA3 forward, variable-length batches ----------------------------------------------------------
// One kernel per head dim and dtype (block_m 128 at every head dim: src/sm90/fa3_fwd.cu says why).
// The K/V blocks of a sequence's longest tile under a window (fa3::window_blocks).
static int window_longest_tile(int len_q, int len_k, int block_m, int block_n, const int (&w)[2]) {
  int longest = 0;
  for (int m = 0; m * block_m < len_q; ++m) {
    const fa3::BlockRange r = fa3::window_blocks(m, block_m, block_n, len_q, len_k, w[0], w[1]);
    longest = std::max(longest, r.n_max - r.n_min);
  }
  return longest;
}

// Sequence b's length for the kernels: its used length where the caller gives one (seqused_q/_k,
// validated to lie in [0, the cu_seqlens length]), else the cu_seqlens length. The packed offsets
// stay cu_seqlens'; rows past the used length are neither computed nor stored, keys past it are
// masked like a ragged tail's (include/flashptx.h, flashptx_fwd_varlen_params::seqused_q).
static int used_len(const int32_t* cu, const int32_t* used, int b) {
  return used != nullptr ? used[b] : cu[b + 1] - cu[b];
}

void build_varlen_table(const int32_t* cu_q, const int32_t* cu_k, int num_seqs, int heads_q, int block_m, int block_n,
                        bool causal, fa3::FwdVarlenTable* table, const int (*window)[2], const int32_t* used_q,
                        const int32_t* used_k) {
  struct Entry { int b, longest, tiles, len_q, len_k; };
  std::vector<Entry> order;
  order.reserve(static_cast<size_t>(num_seqs));
  for (int b = 0; b < num_seqs; ++b) {
    const int len_q = used_len(cu_q, used_q, b), len_k = used_len(cu_k, used_k, b);
    if (len_q == 0) continue;  // no query row: no tile, nothing written
    const int longest = window != nullptr ? window_longest_tile(len_q, len_k, block_m, block_n, *window)
                                          : varlen_longest_tile(len_q, len_k, block_m, block_n, causal);
    order.push_back({b, longest, ceil_div(len_q, block_m), len_q, len_k});
  }
  // Longest-first: a greedy dispatcher (the hardware's, in blockIdx order) then starts the longest
  // tiles first and fills the tail with short ones. Stable, so equal sequences keep their order.
  std::stable_sort(order.begin(), order.end(), [](const Entry& a, const Entry& b) {
    return a.longest != b.longest ? a.longest > b.longest : a.tiles > b.tiles;
  });
  table->num_seqs = static_cast<int>(order.size());
  int prefix = 0;
  for (size_t s = 0; s < order.size(); ++s) {
    const int b = order[s].b;
    table->seq[s] = fa3::VarlenSeq{cu_q[b], cu_k[b], order[s].len_q, order[s].len_k};
    table->tile_prefix[s] = prefix;
    prefix += order[s].tiles * heads_q;
  }
  table->tile_prefix[order.size()] = prefix;
}

flashptx_status plan_fwd_varlen(const flashptx_fwd_varlen_params& p, const FwdOptions& opt, const Device& dev,
                                FwdVarlenPlan* plan, std::string* err) {
  if (dev.cc != 90) {
    *err = "device " + std::to_string(dev.ordinal) + " is sm_" + std::to_string(dev.cc) +
           "; the varlen forward kernels are sm_90a (Hopper)";
    return FLASHPTX_ERR_UNSUPPORTED_DEVICE;
  }
  const KernelEntry* k = nullptr;
  // A window or a softcap: the local varlen kernel (as plan_fwd), the window per sequence; a window
  // no sequence's rows reach (against max_seqlen_q/_k) is none.
  const bool modified = p.window != 0 || p.softcap != 0.f;
  const FwdModifiers mod = modified ? fwd_modifiers(p.window, p.window_left, p.window_right, p.causal != 0, p.softcap,
                                                    p.max_seqlen_q, p.max_seqlen_k)
                                    : FwdModifiers{.causal = p.causal != 0};
  // Head dims 96 and 192 and (192, 128): one local varlen kernel per shape and dtype serves the
  // plain varlen and the modifiers alike (src/sm90/fa3_fwd_hdim_local.cu; docs/DECISIONS.md, "Varlen
  // at head dims 96 and 192: the local kernel serves the plain varlen too").
  const int64_t dv = p.head_dim_v != 0 ? p.head_dim_v : p.head_dim;
  const bool hdim = p.head_dim == 96 || p.head_dim == 192 || dv != p.head_dim;
  if (opt.kernel != nullptr) {
    k = kernel_by_name(opt.kernel);
    if (k == nullptr || k->family != Family::kFa3FwdVarlen) {
      *err = std::string("no varlen forward kernel named '") + opt.kernel + "'";
      return FLASHPTX_ERR_BAD_OPTION;
    }
    if (mod.local && !is_local(*k)) {
      *err = std::string("kernel ") + k->name + " has no sliding window or softcap (the fa3_fwd_varlen_local kernels have them)";
      return FLASHPTX_ERR_BAD_OPTION;
    }
  } else {
    for (const KernelEntry& e : hdim        ? fa3_fwd_varlen_hdim_local_kernels()
                                : mod.local ? fa3_fwd_varlen_local_kernels()
                                            : fa3_fwd_varlen_kernels())
      if (e.dtype == p.dtype && e.head_dim == p.head_dim && v_dim(e) == dv) k = &e;
  }
  if (k == nullptr || k->head_dim != p.head_dim || v_dim(*k) != dv || k->dtype != p.dtype) {
    *err = "no varlen forward kernel for (head_dim, head_dim_v) = (" + std::to_string(p.head_dim) + ", " +
           std::to_string(dv) + ") in this dtype";
    return opt.kernel != nullptr ? FLASHPTX_ERR_BAD_OPTION : FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
  }
  if (opt.trace != nullptr) {
    *err = "a trace buffer is only for the traced kernel";
    return FLASHPTX_ERR_BAD_OPTION;
  }
  if (opt.schedule != Schedule::kAuto && opt.schedule != Schedule::kOnePerTile) {
    *err = std::string("kernel ") + k->name + " runs one CTA per tile (schedule one-per-tile)";
    return FLASHPTX_ERR_BAD_OPTION;
  }
  fa3::FwdVarlenTable& t = plan->args.table;
  // (A local kernel forced by name on a call without modifiers: its window is the call's mask.)
  const FwdModifiers wmod = fwd_modifiers(p.window, p.window_left, p.window_right, p.causal != 0, p.softcap,
                                          p.max_seqlen_q, p.max_seqlen_k);
  const int window[2] = {wmod.window_left, wmod.window_right};
  build_varlen_table(p.cu_seqlens_q, p.cu_seqlens_k, static_cast<int>(p.num_seqs), static_cast<int>(p.heads_q),
                     k->block_m, k->block_n, mod.causal, &t, is_local(*k) ? &window : nullptr, p.seqused_q,
                     p.seqused_k);
  const int64_t tiles = t.tile_prefix[t.num_seqs];
  plan->launch = Launch{k, dim3(static_cast<unsigned>(tiles)), dim3(static_cast<unsigned>(k->threads)), k->smem_bytes,
                        Schedule::kOnePerTile, tiles};
  return FLASHPTX_OK;
}

flashptx_status encode_fwd_varlen_args(const flashptx_fwd_varlen_params& p, FwdVarlenPlan* plan, std::string* err) {
  const KernelEntry& k = *plan->launch.kernel;
  fa3::FwdParams& a = plan->args.fwd;
  a = fa3::FwdParams{};
  const CUtensorMapDataType type =
      p.dtype == FLASHPTX_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  // The packed tensors as [1, total, heads, d]. Without keys (every sequence's key length 0) no K/V
  // block is read, but a map needs an extent >= 1: one row, dense strides, any valid base (q's).
  const bool no_keys = p.total_k == 0;
  const int64_t tk = std::max<int64_t>(p.total_k, 1);
  const void* kp = no_keys ? p.q : p.k;
  const void* vp = no_keys ? p.q : p.v;
  // V and O have head_dim_v columns (0: head_dim); a head dim that is not a multiple of 64 (96)
  // keeps 64-column boxes, the last past the tensor's edge (zero-filled on load, clipped on store).
  const int64_t dv = p.head_dim_v != 0 ? p.head_dim_v : p.head_dim;
  const int64_t k_ss = no_keys ? p.heads_kv * p.head_dim : p.k_row_stride, k_sh = no_keys ? p.head_dim : p.k_head_stride;
  const int64_t v_ss = no_keys ? p.heads_kv * dv : p.v_row_stride, v_sh = no_keys ? dv : p.v_head_stride;
  const bool ok =
      encode_bshd(&a.tma_q, type, p.q, 1, p.total_q, p.heads_q, p.head_dim, 0, p.q_row_stride, p.q_head_stride,
                  static_cast<uint32_t>(k.block_m), err) &&
      encode_bshd(&a.tma_k, type, kp, 1, tk, p.heads_kv, p.head_dim, 0, k_ss, k_sh, static_cast<uint32_t>(k.block_n),
                  err) &&
      encode_bshd(&a.tma_v, type, vp, 1, tk, p.heads_kv, dv, 0, v_ss, v_sh, static_cast<uint32_t>(k.block_n), err) &&
      encode_bshd(&a.tma_o, type, p.o, 1, p.total_q, p.heads_q, dv, 0, p.o_row_stride, p.o_head_stride, 64u, err);
  if (!ok) return FLASHPTX_ERR_BAD_STRIDES;
  a.lse = p.lse;
  a.trace = nullptr;
  a.seqlen_q = static_cast<int>(p.max_seqlen_q);  // not read by the varlen kernels: each tile has its own
  a.seqlen_k = static_cast<int>(p.max_seqlen_k);
  a.heads_q = static_cast<int>(p.heads_q);
  a.heads_kv = static_cast<int>(p.heads_kv);
  a.batch = 1;
  a.num_m_blocks = 0;  // not read: the table holds the tiles
  const bool modified = p.window != 0 || p.softcap != 0.f;
  const FwdModifiers mod = fwd_modifiers(p.window, p.window_left, p.window_right, p.causal != 0, p.softcap,
                                         p.max_seqlen_q, p.max_seqlen_k);
  a.causal = (modified ? mod.causal : p.causal != 0) ? 1 : 0;
  const float scale = p.softmax_scale != 0.f ? p.softmax_scale : 1.f / std::sqrt(static_cast<float>(p.head_dim));
  a.softmax_scale = scale;
  a.softmax_scale_log2 = scale * 1.4426950408889634f;
  if (is_local(k)) encode_modifiers(mod, scale, &a);
  fa3::FwdVarlenTable& t = plan->args.table;
  t.o = p.o;
  t.o_row_stride = p.o_row_stride;
  t.o_head_stride = p.o_head_stride;
  t.total_q = static_cast<int>(p.total_q);
  return FLASHPTX_OK;
}

// ---- FA3 / FA4 backward ---------------------------------------------------------------------------
// One main kernel per head dim and dtype (src/sm90/fa3_bwd.cu; on sm_100 src/sm100/fa4_bwd.cu, head
// dims 64 and 128, and for d128 over two key blocks or more the 2-CTA src/sm100/fa4_bwd_pair.cu; NEVER
// RUN: no Blackwell GPU was available); the pre/postprocess kernels per dtype.
// The device picks the family: sm_100 the FA4 rows, anything else (sm_90, or no device: the workspace
// size) the FA3 rows.
static const KernelEntry* row_of(std::span<const KernelEntry> rows, Family f, flashptx_dtype t, int head_dim) {
  for (const KernelEntry& k : rows)
    if (k.family == f && k.dtype == t && (k.head_dim == 0 || k.head_dim == head_dim)) return &k;
  return nullptr;
}

bool dq_order_rotated_ok(int64_t n_blocks, int64_t m_blocks, int sm_count) {
  return n_blocks >= 1 && n_blocks <= m_blocks && sm_count >= 1 && n_blocks <= sm_count &&
         (sm_count % n_blocks) * 16 <= sm_count;
}

// The local backward kernels (BwdConfig::local: the "local" switch of the row).
static bool is_bwd_local(const KernelEntry& k) {
  for (const KernelSwitch& s : k.switches)
    if (std::string_view(s.name) == "local") return s.value != 0;
  return false;
}
// The local backward kernels' modifiers (fa3::BwdLocal): the window bounds (-1 unbounded) and the
// softcap as the forward encodes them (encode_modifiers): with a softcap c, P^T = exp2(c log2e t -
// LSE2), t = tanh(scale s / c); softmax_scale stays the call's scale (dK, and dQ in the
// postprocess: d(c tanh(scale s / c))/ds = scale (1 - t^2), the (1 - t^2) applied in the kernel).
static void encode_bwd_modifiers(const FwdModifiers& mod, float scale, fa3::BwdParams* a, fa3::BwdLocal* l) {
  l->window_left = mod.window_left;
  l->window_right = mod.window_right;
  l->softcap_prescale = 0.f;
  l->softcap_ln2_inv = 0.f;
  if (mod.softcap > 0.f) {
    l->softcap_prescale = scale / mod.softcap;
    l->softcap_ln2_inv = 0.6931471805599453f / mod.softcap;
    a->softmax_scale_log2 = mod.softcap * 1.4426950408889634f;
  }
}
// The varlen backward's modifiers, against the longest sequences (as the varlen forward's).
static FwdModifiers bwd_varlen_modifiers(const flashptx_bwd_varlen_params& p) {
  return fwd_modifiers(p.window, p.window_left, p.window_right, p.causal != 0, p.softcap, p.max_seqlen_q,
                       p.max_seqlen_k);
}

// plan_bwd without the sm_100 gate (the workspace size plans both families on any device).
static flashptx_status plan_bwd_family(const flashptx_bwd_params& p, const BwdOptions& opt, const Device& dev,
                                       BwdPlan* plan, std::string* err) {
  const bool fa4 = dev.cc == 100;
  const std::span<const KernelEntry> rows = fa4 ? fa4_bwd_kernels() : fa3_bwd_kernels();
  const Family main = fa4 ? Family::kFa4Bwd : Family::kFa3Bwd;
  // A bounded window or a softcap: the local kernel of the head dim and dtype (src/sm90/fa3_bwd_local.cu),
  // the forward's modifiers (fwd_modifiers: causal folded in as window_right 0, a bound no row
  // reaches taken as none). Otherwise the plain kernels, a window (-1, 0) being the causal mask.
  const FwdModifiers mod =
      fwd_modifiers(p.window, p.window_left, p.window_right, p.causal != 0, p.softcap, p.seqlen_q, p.seqlen_k);
  if (fa4 && mod.local) {
    *err = "the sm_100 backward has no sliding window or softcap (the FA3 backward on sm_90 has them)";
    return FLASHPTX_ERR_UNSUPPORTED;
  }
  if (fa4 && p.head_dim_v != 0 && p.head_dim_v != p.head_dim) {
    *err = "the sm_100 backward has no separate V head dim: (head_dim, head_dim_v) = (" +
           std::to_string(p.head_dim) + ", " + std::to_string(p.head_dim_v) + ") (FA4: head_dim_v = head_dim)";
    return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
  }
  // The kernel's head dim: FA3 runs 96 on its d128 kernels and 192 on its d256 ones, over zero
  // columns (fa3::bwd_kernel_head_dim); the tensor maps keep the caller's head dims (encode_bwd_args).
  // (192, 128) runs the d256 kernels too: the kernel's head dim is Q's, V's columns past 128 zero.
  const int kd = fa4 ? static_cast<int>(p.head_dim) : fa3::bwd_kernel_head_dim(static_cast<int>(p.head_dim));
  const KernelEntry* k = nullptr;
  if (opt.kernel != nullptr) {
    k = kernel_by_name(opt.kernel);
    if (k == nullptr || k->family != main || k->head_dim != kd || k->dtype != p.dtype) {
      *err = std::string("no backward kernel named '") + opt.kernel + "' for this head dim, dtype and device";
      return FLASHPTX_ERR_BAD_OPTION;
    }
    if (mod.local && !is_bwd_local(*k)) {
      *err = std::string("kernel ") + k->name + " has no sliding window or softcap (the fa3_bwd_local kernels have them)";
      return FLASHPTX_ERR_BAD_OPTION;
    }
  } else if (mod.local) {
    k = row_of(fa3_bwd_local_kernels(), main, p.dtype, kd);
  } else if (fa4 && fa4bwd::pair::use_pair(static_cast<int>(p.head_dim), p.seqlen_k)) {
    // sm_100, d128, two key blocks or more: the 2-CTA kernel (src/protocol/fa4_bwd_pair_plan.h use_pair).
    k = row_of(fa4_bwd_pair_kernels(), main, p.dtype, static_cast<int>(p.head_dim));
  } else {
    k = row_of(rows, main, p.dtype, kd);
  }
  if (fa4 && p.sinks != nullptr) {
    *err = "the sm_100 backward has no attention sinks (the FA3 backward on sm_90 has them)";
    return FLASHPTX_ERR_UNSUPPORTED;
  }
  const KernelEntry* pre = row_of(rows, fa4 ? Family::kFa4BwdPre : Family::kFa3BwdPre, p.dtype, 0);
  const KernelEntry* post_dq = row_of(rows, fa4 ? Family::kFa4BwdPostDq : Family::kFa3BwdPostDq, p.dtype, 0);
  const KernelEntry* post_dkv = row_of(rows, fa4 ? Family::kFa4BwdPostDkv : Family::kFa3BwdPostDkv, p.dtype, 0);
  if (k == nullptr || pre == nullptr || post_dq == nullptr || post_dkv == nullptr) {
    *err = std::string(mod.local && !fa4 ? "no local (window / softcap) backward kernel" : "no backward kernel") +
           " for head_dim " + std::to_string(p.head_dim) + " in this dtype" +
           (fa4 ? std::string(" on sm_100 (the FA4 backward has head dims 64 and 128") +
                      (fa4bwd::pair::tmem_columns_needed(static_cast<int>(p.head_dim)) > 512
                           ? "; d" + std::to_string(p.head_dim) + " needs " +
                                 std::to_string(fa4bwd::pair::tmem_columns_needed(static_cast<int>(p.head_dim))) +
                                 " TMEM columns of 512)"
                           : std::string(")"))
                : std::string());
    return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
  }
  const int64_t m_blocks = (p.seqlen_q + k->block_m - 1) / k->block_m;
  const int64_t n_blocks = (p.seqlen_k + k->block_n - 1) / k->block_n;
  auto grid3 = [](int64_t x, int64_t y, int64_t z) {
    return dim3(static_cast<unsigned>(x), static_cast<unsigned>(y), static_cast<unsigned>(z));
  };
  plan->gqa = p.heads_q != p.heads_kv;
  // Deterministic dQ order (src/protocol/writer_order.h). Only a mask-free walk can rotate:
  // the causal order already walks in step, and its first query block differs per key block. The FA4
  // backward walks ascending only (src/sm100/fa4_bwd.cuh reads no dq_rotated).
  if (fa4 && opt.dq_order == DqOrder::kRotated) {
    *err = "the rotated dQ order is an FA3 backward order; the FA4 backward (sm_100) walks ascending";
    return FLASHPTX_ERR_BAD_OPTION;
  }
  plan->local = is_bwd_local(*k);
  const bool can_rotate = !fa4 && !plan->local && p.deterministic && !mod.causal &&
                          dq_order_rotated_ok(n_blocks, m_blocks, dev.sm_count);
  if (opt.dq_order == DqOrder::kRotated && !can_rotate) {
    *err = "the rotated dQ order needs the deterministic mode, no causal mask, no more key blocks than query "
           "blocks, and a head's " + std::to_string(n_blocks) + " key blocks resident together on " +
           std::to_string(dev.sm_count) + " SMs";
    return FLASHPTX_ERR_BAD_OPTION;
  }
  plan->dq_rotated = can_rotate && opt.dq_order != DqOrder::kAscending;
  plan->workspace = fa3::bwd_workspace(p.batch, p.heads_q, p.heads_kv, p.seqlen_q, p.seqlen_k, kd, k->block_m,
                                       k->block_n);
  const int64_t pre_rows = fa3::pre_rows_per_cta(kd);
  plan->pre = Launch{pre, grid3((m_blocks * k->block_m + pre_rows - 1) / pre_rows, p.heads_q, p.batch), dim3(256), 0,
                     Schedule::kOnePerTile, m_blocks * k->block_m * p.heads_q * p.batch};
  // The 2-CTA kernel: one cluster of two CTAs per pair of key blocks (the last pair's second CTA past an
  // odd count has no keys and writes nothing).
  const int64_t main_x = k->cluster_ctas == 2 ? 2 * fa4bwd::pair::pair_count(static_cast<int>(n_blocks)) : n_blocks;
  plan->main = Launch{k, grid3(main_x, p.heads_q, p.batch), dim3(static_cast<unsigned>(k->threads)), k->smem_bytes,
                      Schedule::kOnePerTile, main_x * p.heads_q * p.batch};
  // The FA4 dQ postprocess reads its accumulator order directly (no shared-memory transpose).
  plan->post_dq = Launch{post_dq, grid3(m_blocks, p.heads_q, p.batch), dim3(256),
                         fa4 ? 0 : fa3::post_dq_smem_bytes(k->block_m, kd),
                         Schedule::kOnePerTile, m_blocks * p.heads_q * p.batch};
  plan->post_dkv = Launch{post_dkv, grid3(plan->gqa ? n_blocks : 0, p.heads_kv, p.batch), dim3(256), 0,
                          Schedule::kOnePerTile, plan->gqa ? n_blocks * p.heads_kv * p.batch : 0};
  // The sinks' gradient: one CTA per query head over the preprocess's scratch (src/sm90/fa3_bwd_sink.h).
  const bool sinks = p.sinks != nullptr && p.dsinks != nullptr;
  plan->sink = Launch{&fa3_bwd_sink_kernels()[0], grid3(sinks ? p.heads_q : 0, 1, 1), dim3(fa3::kSinkThreads), 0,
                      Schedule::kOnePerTile, sinks ? p.heads_q : 0};
  return FLASHPTX_OK;
}

flashptx_status plan_bwd(const flashptx_bwd_params& p, const BwdOptions& opt, const Device& dev, BwdPlan* plan,
                         std::string* err) {
  if (const flashptx_status s = admit_sm100(dev, err); s != FLASHPTX_OK) return s;
  return plan_bwd_family(p, opt, dev, plan, err);
}

flashptx_status bwd_workspace_bytes(const flashptx_bwd_params& p, int64_t* bytes, std::string* err) {
  BwdPlan plan;
  const flashptx_status s = plan_bwd_family(p, BwdOptions{}, Device{}, &plan, err);
  if (s != FLASHPTX_OK) return s;
  *bytes = plan.workspace.total;
  BwdPlan sm100;
  std::string ignored;
  if (plan_bwd_family(p, BwdOptions{}, Device{-1, 100, 0}, &sm100, &ignored) == FLASHPTX_OK)
    *bytes = std::max(*bytes, sm100.workspace.total);
  return FLASHPTX_OK;
}

flashptx_status encode_bwd_args(const flashptx_bwd_params& p, BwdPlan* plan, std::string* err) {
  const KernelEntry& k = *plan->main.kernel;
  const fa3::BwdWorkspace& w = plan->workspace;
  char* ws = static_cast<char*>(p.workspace);
  auto at = [&](int64_t off) { return ws == nullptr ? nullptr : ws + off; };
  const CUtensorMapDataType type =
      p.dtype == FLASHPTX_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const int64_t sq = std::max<int64_t>(p.seqlen_q, 1), sk = std::max<int64_t>(p.seqlen_k, 1);
  const int64_t m_blocks = (p.seqlen_q + k.block_m - 1) / k.block_m;
  const int64_t n_blocks = (p.seqlen_k + k.block_n - 1) / k.block_n;

  // Q and dO boxes: a query block; the 2-CTA kernel loads each CTA's share in boxes of 64 rows
  // (src/sm100/fa4_bwd_pair.cuh PairLoader).
  const uint32_t q_box = k.cluster_ctas == 2 ? 64u : static_cast<uint32_t>(k.block_m);
  // Q, K, dK at head_dim columns; V, dO, dV at head_dim_v (0: head_dim). Each map's extent is its
  // tensor's, so the kernel's 64-column boxes past it load zeros and store nothing (PTX ISA,
  // "Tensors": out-of-bound access): at (192, 128) the d256 kernel's V and dO columns 128..255 are
  // zero, S = Q K^T and dP = dO V^T are the (192, 128) problem's, dV's columns past 128 are zero and
  // its map drops them (docs/DECISIONS.md, "The backward at (192, 128)").
  const int64_t dv = v_dim(p);
  fa3::BwdParams& a = plan->args;
  a = fa3::BwdParams{};
  if (plan->main.grid.x > 0) {
    // Without query rows the kernel runs no step and never reads Q or dO: their maps stay zero.
    const bool ok =
        (p.seqlen_q == 0 ||
         (encode_bshd(&a.tma_q, type, p.q, p.batch, sq, p.heads_q, p.head_dim, p.q_batch_stride, p.q_row_stride,
                      p.q_head_stride, q_box, err) &&
          encode_bshd(&a.tma_do, type, p.dout, p.batch, sq, p.heads_q, dv, p.do_batch_stride,
                      p.do_row_stride, p.do_head_stride, q_box, err))) &&
        encode_bshd(&a.tma_k, type, p.k, p.batch, sk, p.heads_kv, p.head_dim, p.k_batch_stride, p.k_row_stride,
                    p.k_head_stride, static_cast<uint32_t>(k.block_n), err) &&
        encode_bshd(&a.tma_v, type, p.v, p.batch, sk, p.heads_kv, dv, p.v_batch_stride, p.v_row_stride,
                    p.v_head_stride, static_cast<uint32_t>(k.block_n), err) &&
        encode_bshd(&a.tma_dk, type, p.dk, p.batch, sk, p.heads_kv, p.head_dim, p.dk_batch_stride, p.dk_row_stride,
                    p.dk_head_stride, 64u, err) &&
        encode_bshd(&a.tma_dv, type, p.dv, p.batch, sk, p.heads_kv, dv, p.dv_batch_stride, p.dv_row_stride,
                    p.dv_head_stride, 64u, err);
    if (!ok) return FLASHPTX_ERR_BAD_STRIDES;
  }
  a.dq_accum = reinterpret_cast<float*>(at(w.dq_accum));
  a.lse2 = reinterpret_cast<const float*>(at(w.lse2));
  a.delta = reinterpret_cast<const float*>(at(w.delta));
  a.dk_accum = reinterpret_cast<float*>(at(w.dk_accum));
  a.dv_accum = reinterpret_cast<float*>(at(w.dv_accum));
  a.dq_sem = reinterpret_cast<uint32_t*>(at(w.dq_sem));
  a.dkv_sem = reinterpret_cast<uint32_t*>(at(w.dkv_sem));
  a.seqlen_q = static_cast<int>(p.seqlen_q);
  a.seqlen_k = static_cast<int>(p.seqlen_k);
  a.heads_q = static_cast<int>(p.heads_q);
  a.heads_kv = static_cast<int>(p.heads_kv);
  a.batch = static_cast<int>(p.batch);
  a.m_blocks = static_cast<int>(m_blocks);
  a.n_blocks = static_cast<int>(n_blocks);
  const FwdModifiers mod =
      fwd_modifiers(p.window, p.window_left, p.window_right, p.causal != 0, p.softcap, p.seqlen_q, p.seqlen_k);
  a.causal = mod.causal && !plan->local ? 1 : 0;  // local kernels: causal is their window (-1, 0)
  a.deterministic = p.deterministic ? 1 : 0;
  a.dq_rotated = plan->dq_rotated ? 1 : 0;
  const float scale = p.softmax_scale != 0.f ? p.softmax_scale : 1.f / std::sqrt(static_cast<float>(p.head_dim));
  a.softmax_scale = scale;
  a.softmax_scale_log2 = scale * 1.4426950408889634f;
  if (plan->local) encode_bwd_modifiers(mod, scale, &a, &plan->local_args);

  fa3::BwdAuxParams& x = plan->aux;
  x = fa3::BwdAuxParams{};
  x.o = p.o; x.dout = p.dout; x.lse = p.lse;
  x.dq = p.dq; x.dk = p.dk; x.dv = p.dv;
  x.dq_accum = a.dq_accum;
  x.lse2 = reinterpret_cast<float*>(at(w.lse2));
  x.delta = reinterpret_cast<float*>(at(w.delta));
  x.dk_accum = a.dk_accum;
  x.dv_accum = a.dv_accum;
  x.o_sb = p.o_batch_stride; x.o_ss = p.o_row_stride; x.o_sh = p.o_head_stride;
  x.do_sb = p.do_batch_stride; x.do_ss = p.do_row_stride; x.do_sh = p.do_head_stride;
  x.dq_sb = p.dq_batch_stride; x.dq_ss = p.dq_row_stride; x.dq_sh = p.dq_head_stride;
  x.dk_sb = p.dk_batch_stride; x.dk_ss = p.dk_row_stride; x.dk_sh = p.dk_head_stride;
  x.dv_sb = p.dv_batch_stride; x.dv_ss = p.dv_row_stride; x.dv_sh = p.dv_head_stride;
  x.seqlen_q = a.seqlen_q; x.seqlen_k = a.seqlen_k; x.heads_q = a.heads_q; x.heads_kv = a.heads_kv;
  x.batch = a.batch; x.head_dim = static_cast<int>(p.head_dim); x.head_dim_v = static_cast<int>(dv);
  x.block_m = k.block_m; x.block_n = k.block_n; x.m_blocks = a.m_blocks; x.n_blocks = a.n_blocks;
  x.softmax_scale = scale;

  fa3::BwdSinkParams& z = plan->sink_args;
  z = fa3::BwdSinkParams{};
  z.lse2 = x.lse2; z.delta = x.delta; z.sinks = p.sinks; z.dsinks = p.dsinks;
  z.batch = a.batch; z.heads_q = a.heads_q; z.seqlen_q = a.seqlen_q;
  z.rows_pad = static_cast<int>(m_blocks * k.block_m);
  return FLASHPTX_OK;
}

// The backward workspace's zeroed sections (semaphores, GQA dK/dV accumulators: fa3::bwd_workspace),
// cleared on the call's stream before its first kernel; the fixed and the varlen backward's.
static flashptx_status zero_bwd_workspace(const fa3::BwdWorkspace& w, void* workspace, cudaStream_t stream,
                                          std::string* err) {
  if (w.zeroed_end <= w.zeroed_begin) return FLASHPTX_OK;
  const cudaError_t e = cudaMemsetAsync(static_cast<char*>(workspace) + w.zeroed_begin, 0,
                                        static_cast<size_t>(w.zeroed_end - w.zeroed_begin), stream);
  if (e == cudaSuccess) return FLASHPTX_OK;
  cudaGetLastError();
  *err = std::string("cudaMemsetAsync(workspace): ") + cudaGetErrorString(e);
  return FLASHPTX_ERR_CUDA;
}

flashptx_status launch_bwd(const flashptx_bwd_params& p, BwdPlan* plan, cudaStream_t stream, std::string* err) {
  flashptx_status s;
  if ((s = zero_bwd_workspace(plan->workspace, p.workspace, stream, err)) != FLASHPTX_OK) return s;
  auto run = [&](const Launch& l, void* args) {
    if (l.grid.x == 0 || l.grid.y == 0 || l.grid.z == 0) return FLASHPTX_OK;
    return launch(l, args, stream, err);
  };
  if ((s = run(plan->pre, &plan->aux)) != FLASHPTX_OK) return s;
  if ((s = run(plan->sink, &plan->sink_args)) != FLASHPTX_OK) return s;
  if (plan->local) {
    fa3::BwdLocalParams lp{plan->args, plan->local_args};  // copied by the launch
    if ((s = run(plan->main, &lp)) != FLASHPTX_OK) return s;
  } else if ((s = run(plan->main, &plan->args)) != FLASHPTX_OK) {
    return s;
  }
  if ((s = run(plan->post_dq, &plan->aux)) != FLASHPTX_OK) return s;
  if ((s = run(plan->post_dkv, &plan->aux)) != FLASHPTX_OK) return s;
  g_last_launch = plan->main;
  return FLASHPTX_OK;
}

// ---- FA3 backward, variable-length batches -----------------------------------------------------------
void build_bwd_varlen_table(const int32_t* cu_q, const int32_t* cu_k, int num_seqs, int block_m, int block_n,
                            fa3::BwdVarlenTable* table, const int32_t* used_q, const int32_t* used_k) {
  struct Entry { int b, m_blocks, n_blocks, len_q, len_k; };
  std::vector<Entry> order;
  order.reserve(static_cast<size_t>(num_seqs));
  for (int b = 0; b < num_seqs; ++b) {
    // (The used lengths, as the forward's table: the rows and keys past them are neither read as
    // rows of the sums nor written; the workspace's bound, by the cu_seqlens lengths, covers them.)
    const int len_q = used_len(cu_q, used_q, b), len_k = used_len(cu_k, used_k, b);
    if (len_q == 0 && len_k == 0) continue;  // nothing to read or write
    order.push_back({b, ceil_div(len_q, block_m), ceil_div(len_k, block_n), len_q, len_k});
  }
  // A CTA's work is the query blocks it walks: sequences with the most first, so that the hardware's
  // dispatch in blockIdx order starts the longest CTAs first (as the varlen forward's table).
  std::stable_sort(order.begin(), order.end(), [](const Entry& a, const Entry& b) {
    return a.m_blocks != b.m_blocks ? a.m_blocks > b.m_blocks : a.n_blocks > b.n_blocks;
  });
  table->num_seqs = static_cast<int>(order.size());
  int m = 0, n = 0;
  for (size_t s = 0; s < order.size(); ++s) {
    const int b = order[s].b;
    table->seq[s] = fa3::BwdVarlenSeq{cu_q[b], cu_k[b], order[s].len_q, order[s].len_k};
    table->m_prefix[s] = m;
    table->n_prefix[s] = n;
    m += order[s].m_blocks;
    n += order[s].n_blocks;
  }
  table->m_prefix[order.size()] = m;
  table->n_prefix[order.size()] = n;
}

// The kernel rows of a varlen backward: the main kernel (forced by name or by head dims and dtype)
// and the aux kernels of its dtype.
static flashptx_status bwd_varlen_rows(const flashptx_bwd_varlen_params& p, const BwdOptions& opt,
                                       const KernelEntry* rows[4], std::string* err) {
  const std::span<const KernelEntry> table = fa3_bwd_varlen_kernels();
  const KernelEntry* k = nullptr;
  const bool local = bwd_varlen_modifiers(p).local;
  if (opt.kernel != nullptr) {
    k = kernel_by_name(opt.kernel);
    if (k == nullptr || k->family != Family::kFa3BwdVarlen || k->head_dim != p.head_dim ||
        v_dim(*k) != v_dim(p) || k->dtype != p.dtype) {
      *err = std::string("no varlen backward kernel named '") + opt.kernel +
             "' for this head dim, V's head dim and dtype";
      return FLASHPTX_ERR_BAD_OPTION;
    }
    if (local && !is_bwd_local(*k)) {
      *err = std::string("kernel ") + k->name +
             " has no sliding window or softcap (the fa3_bwd_varlen_local kernels have them)";
      return FLASHPTX_ERR_BAD_OPTION;
    }
  } else {
    // A bounded window or a softcap: the local varlen kernel (src/sm90/fa3_bwd_local.cu).
    // By (head_dim, head_dim_v): the d192 and d192_v128 rows share Q's head dim.
    for (const KernelEntry& r : local ? fa3_bwd_varlen_local_kernels() : table)
      if (r.family == Family::kFa3BwdVarlen && r.dtype == p.dtype && r.head_dim == p.head_dim &&
          v_dim(r) == v_dim(p)) {
        k = &r;
        break;
      }
  }
  if (opt.dq_order == DqOrder::kRotated) {
    *err = "the varlen backward's dQ writers take the ascending (causal: shortest-first) order only";
    return FLASHPTX_ERR_BAD_OPTION;
  }
  rows[0] = k;
  rows[1] = row_of(table, Family::kFa3BwdVarlenPre, p.dtype, 0);
  rows[2] = row_of(table, Family::kFa3BwdVarlenPostDq, p.dtype, 0);
  rows[3] = row_of(table, Family::kFa3BwdVarlenPostDkv, p.dtype, 0);
  for (int i = 0; i < 4; ++i)
    if (rows[i] == nullptr) {
      *err = std::string(local ? "no local (window / softcap) varlen backward kernel" : "no varlen backward kernel") +
             " for (head_dim, head_dim_v) = (" + std::to_string(p.head_dim) + ", " +
             std::to_string(v_dim(p)) + ") in this dtype";
      return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
    }
  return FLASHPTX_OK;
}

// The workspace of a varlen call: the fixed-length layout of one batch whose query (key) rows are the
// padded blocks, at their bound total / block + num_seqs (each sequence pads less than one block).
static fa3::BwdWorkspace bwd_varlen_workspace(const flashptx_bwd_varlen_params& p, int block_m, int block_n) {
  const int64_t m_cap = p.total_q / block_m + p.num_seqs, n_cap = p.total_k / block_n + p.num_seqs;
  return fa3::bwd_workspace(1, p.heads_q, p.heads_kv, m_cap * block_m, n_cap * block_n,
                            fa3::bwd_kernel_head_dim(static_cast<int>(p.head_dim)), block_m, block_n);
}

flashptx_status bwd_varlen_workspace_bytes(const flashptx_bwd_varlen_params& p, int64_t* bytes, std::string* err) {
  const KernelEntry* rows[4];
  const flashptx_status s = bwd_varlen_rows(p, BwdOptions{}, rows, err);
  if (s != FLASHPTX_OK) return s;
  *bytes = bwd_varlen_workspace(p, rows[0]->block_m, rows[0]->block_n).total;
  return FLASHPTX_OK;
}

flashptx_status plan_bwd_varlen(const flashptx_bwd_varlen_params& p, const BwdOptions& opt, const Device& dev,
                                BwdVarlenPlan* plan, std::string* err) {
  if (dev.cc != 90) {
    *err = "device " + std::to_string(dev.ordinal) + " is sm_" + std::to_string(dev.cc) +
           "; the varlen backward kernels are sm_90a (Hopper)";
    return FLASHPTX_ERR_UNSUPPORTED_DEVICE;
  }
  const KernelEntry* rows[4];
  if (const flashptx_status s = bwd_varlen_rows(p, opt, rows, err); s != FLASHPTX_OK) return s;
  const KernelEntry* k = rows[0];
  plan->local = is_bwd_local(*k);
  fa3::BwdVarlenTable& t = plan->args.table;
  build_bwd_varlen_table(p.cu_seqlens_q, p.cu_seqlens_k, static_cast<int>(p.num_seqs), k->block_m, k->block_n, &t,
                         p.seqused_q, p.seqused_k);
  const int64_t m_blocks = t.m_prefix[t.num_seqs], n_blocks = t.n_prefix[t.num_seqs];
  plan->gqa = p.heads_q != p.heads_kv;
  plan->workspace = bwd_varlen_workspace(p, k->block_m, k->block_n);
  auto grid2 = [](int64_t x, int64_t y) { return dim3(static_cast<unsigned>(x), static_cast<unsigned>(y), 1u); };
  // The aux kernels' sizes at the kernel's head dim, as the fixed-length plan's (fa3::bwd_kernel_head_dim).
  const int kd = fa3::bwd_kernel_head_dim(static_cast<int>(p.head_dim));
  const int64_t pre_rows = fa3::pre_rows_per_cta(kd);
  plan->pre = Launch{rows[1], grid2((m_blocks * k->block_m + pre_rows - 1) / pre_rows, p.heads_q), dim3(256), 0,
                     Schedule::kOnePerTile, m_blocks * k->block_m * p.heads_q};
  plan->main = Launch{k, grid2(n_blocks, p.heads_q), dim3(static_cast<unsigned>(k->threads)), k->smem_bytes,
                      Schedule::kOnePerTile, n_blocks * p.heads_q};
  plan->post_dq = Launch{rows[2], grid2(m_blocks, p.heads_q), dim3(256),
                         fa3::post_dq_smem_bytes(k->block_m, kd), Schedule::kOnePerTile, m_blocks * p.heads_q};
  plan->post_dkv = Launch{rows[3], grid2(plan->gqa ? n_blocks : 0, p.heads_kv), dim3(256), 0, Schedule::kOnePerTile,
                          plan->gqa ? n_blocks * p.heads_kv : 0};
  return FLASHPTX_OK;
}

flashptx_status encode_bwd_varlen_args(const flashptx_bwd_varlen_params& p, BwdVarlenPlan* plan, std::string* err) {
  const KernelEntry& k = *plan->main.kernel;
  const fa3::BwdWorkspace& w = plan->workspace;
  char* ws = static_cast<char*>(p.workspace);
  auto at = [&](int64_t off) { return ws == nullptr ? nullptr : ws + off; };
  const CUtensorMapDataType type =
      p.dtype == FLASHPTX_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  fa3::BwdVarlenTable& t = plan->args.table;
  const int64_t m_blocks = t.m_prefix[t.num_seqs], n_blocks = t.n_prefix[t.num_seqs];
  fa3::BwdParams& a = plan->args.bwd;
  a = fa3::BwdParams{};
  if (plan->main.grid.x > 0) {
    // The packed tensors as [1, total, heads, d]; V, dO and dV at head_dim_v columns, whose boxes
    // past it load zeros and store nothing (as the fixed-length backward's: encode_bwd_args). Without
    // query rows the kernel runs no step and never reads Q or dO: their maps stay zero.
    const int64_t dv = v_dim(p);
    const bool ok =
        (p.total_q == 0 ||
         (encode_bshd(&a.tma_q, type, p.q, 1, p.total_q, p.heads_q, p.head_dim, 0, p.q_row_stride, p.q_head_stride,
                      static_cast<uint32_t>(k.block_m), err) &&
          encode_bshd(&a.tma_do, type, p.dout, 1, p.total_q, p.heads_q, dv, 0, p.do_row_stride,
                      p.do_head_stride, static_cast<uint32_t>(k.block_m), err))) &&
        encode_bshd(&a.tma_k, type, p.k, 1, p.total_k, p.heads_kv, p.head_dim, 0, p.k_row_stride, p.k_head_stride,
                    static_cast<uint32_t>(k.block_n), err) &&
        encode_bshd(&a.tma_v, type, p.v, 1, p.total_k, p.heads_kv, dv, 0, p.v_row_stride, p.v_head_stride,
                    static_cast<uint32_t>(k.block_n), err) &&
        encode_bshd(&a.tma_dk, type, p.dk, 1, p.total_k, p.heads_kv, p.head_dim, 0, p.dk_row_stride,
                    p.dk_head_stride, 64u, err) &&
        encode_bshd(&a.tma_dv, type, p.dv, 1, p.total_k, p.heads_kv, dv, 0, p.dv_row_stride,
                    p.dv_head_stride, 64u, err);
    if (!ok) return FLASHPTX_ERR_BAD_STRIDES;
  }
  a.dq_accum = reinterpret_cast<float*>(at(w.dq_accum));
  a.lse2 = reinterpret_cast<const float*>(at(w.lse2));
  a.delta = reinterpret_cast<const float*>(at(w.delta));
  a.dk_accum = reinterpret_cast<float*>(at(w.dk_accum));
  a.dv_accum = reinterpret_cast<float*>(at(w.dv_accum));
  a.dq_sem = reinterpret_cast<uint32_t*>(at(w.dq_sem));
  a.dkv_sem = reinterpret_cast<uint32_t*>(at(w.dkv_sem));
  a.seqlen_q = static_cast<int>(p.max_seqlen_q);  // not read by the varlen kernels: each sequence has its own
  a.seqlen_k = static_cast<int>(p.max_seqlen_k);
  a.heads_q = static_cast<int>(p.heads_q);
  a.heads_kv = static_cast<int>(p.heads_kv);
  a.batch = 1;
  a.m_blocks = static_cast<int>(m_blocks);  // the padded blocks of all sequences: the scratch's extent per head
  a.n_blocks = static_cast<int>(n_blocks);
  const FwdModifiers mod = bwd_varlen_modifiers(p);
  a.causal = mod.causal && !plan->local ? 1 : 0;  // local kernels: causal is their window (-1, 0)
  a.deterministic = p.deterministic ? 1 : 0;
  a.dq_rotated = 0;
  const float scale = p.softmax_scale != 0.f ? p.softmax_scale : 1.f / std::sqrt(static_cast<float>(p.head_dim));
  a.softmax_scale = scale;
  a.softmax_scale_log2 = scale * 1.4426950408889634f;
  if (plan->local) encode_bwd_modifiers(mod, scale, &a, &plan->local_args);

  fa3::BwdAuxParams& x = plan->args.aux;
  x = fa3::BwdAuxParams{};
  x.o = p.o; x.dout = p.dout; x.lse = p.lse;
  x.dq = p.dq; x.dk = p.dk; x.dv = p.dv;
  x.dq_accum = a.dq_accum;
  x.lse2 = reinterpret_cast<float*>(at(w.lse2));
  x.delta = reinterpret_cast<float*>(at(w.delta));
  x.dk_accum = a.dk_accum;
  x.dv_accum = a.dv_accum;
  x.o_ss = p.o_row_stride; x.o_sh = p.o_head_stride;
  x.do_ss = p.do_row_stride; x.do_sh = p.do_head_stride;
  x.dq_ss = p.dq_row_stride; x.dq_sh = p.dq_head_stride;
  x.dk_ss = p.dk_row_stride; x.dk_sh = p.dk_head_stride;
  x.dv_ss = p.dv_row_stride; x.dv_sh = p.dv_head_stride;
  x.seqlen_q = a.seqlen_q; x.seqlen_k = a.seqlen_k; x.heads_q = a.heads_q; x.heads_kv = a.heads_kv;
  x.batch = 1; x.head_dim = static_cast<int>(p.head_dim);
  x.head_dim_v = static_cast<int>(v_dim(p));  // O's and dO's columns (the preprocess), dV's (post_dkv)
  x.block_m = k.block_m; x.block_n = k.block_n; x.m_blocks = a.m_blocks; x.n_blocks = a.n_blocks;
  x.softmax_scale = scale;

  t.dk = p.dk;
  t.dv = p.dv;
  t.dk_row_stride = p.dk_row_stride;
  t.dk_head_stride = p.dk_head_stride;
  t.dv_row_stride = p.dv_row_stride;
  t.dv_head_stride = p.dv_head_stride;
  t.total_q = static_cast<int>(p.total_q);
  t.total_k = static_cast<int>(p.total_k);
  return FLASHPTX_OK;
}

flashptx_status launch_bwd_varlen(const flashptx_bwd_varlen_params& p, BwdVarlenPlan* plan, cudaStream_t stream,
                                  std::string* err) {
  flashptx_status s;
  if ((s = zero_bwd_workspace(plan->workspace, p.workspace, stream, err)) != FLASHPTX_OK) return s;
  auto run = [&](const Launch& l) {
    if (l.grid.x == 0 || l.grid.y == 0 || l.grid.z == 0) return FLASHPTX_OK;
    if (plan->local && &l == &plan->main) {
      // The local kernel's block: {args, local_args} (the aux kernels read the leading args).
      auto lp = std::make_unique<fa3::BwdVarlenLocalParams>();
      lp->v = plan->args;
      lp->local = plan->local_args;
      return launch(l, lp.get(), stream, err);  // copied by the launch
    }
    return launch(l, &plan->args, stream, err);
  };
  for (const Launch* l : {&plan->pre, &plan->main, &plan->post_dq, &plan->post_dkv})
    if ((s = run(*l)) != FLASHPTX_OK) return s;
  g_last_launch = plan->main;
  return FLASHPTX_OK;
}

// ---- launch ------------------------------------------------------------------------------------
Launch last_launch() { return g_last_launch; }

// The dynamic shared memory a kernel may take is a function attribute of the device's context
// (cudaFuncAttributeMaxDynamicSharedMemorySize, CUDA Programming Guide, "Shared Memory"): set once
// per device and kernel to the largest size launched, not before every launch (a driver call on
// the host path of each call). A cudaDeviceReset drops the attribute with the context: a launch the
// runtime then rejects sets it again and is retried once (launch_kernel below).
namespace {
struct SmemAttr {
  const void* fn;
  int device;
  int bytes;
};
std::mutex g_smem_mu;
std::vector<SmemAttr> g_smem_set;  // what this process set, per (kernel, device)

cudaError_t set_smem_attr(const void* fn, int bytes, bool force) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    force = true;
    dev = -1;
  }
  std::lock_guard<std::mutex> lock(g_smem_mu);
  SmemAttr* hit = nullptr;
  for (SmemAttr& a : g_smem_set)
    if (a.fn == fn && a.device == dev) hit = &a;
  if (!force && hit != nullptr && hit->bytes >= bytes) return cudaSuccess;
  const cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess) return e;
  if (dev >= 0) {
    if (hit != nullptr)
      hit->bytes = bytes;
    else
      g_smem_set.push_back(SmemAttr{fn, dev, bytes});
  }
  return cudaSuccess;
}
}  // namespace

flashptx_status launch(const Launch& l, void* args, cudaStream_t stream, std::string* err) {
  cudaError_t e = set_smem_attr(l.kernel->fn, l.smem_bytes, /*force*/ false);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *err = std::string("cudaFuncSetAttribute(") + l.kernel->name + "): " + cudaGetErrorString(e);
    return FLASHPTX_ERR_CUDA;
  }
  void* kernel_args[] = {args};
  e = cudaLaunchKernel(l.kernel->fn, l.grid, l.block, kernel_args, static_cast<size_t>(l.smem_bytes), stream);
  if (e == cudaErrorInvalidValue && l.smem_bytes > 48 * 1024) {
    // The attribute this process set may be gone (a reset context): set it again, launch once more.
    cudaGetLastError();
    e = set_smem_attr(l.kernel->fn, l.smem_bytes, /*force*/ true);
    if (e == cudaSuccess)
      e = cudaLaunchKernel(l.kernel->fn, l.grid, l.block, kernel_args, static_cast<size_t>(l.smem_bytes), stream);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    *err = std::string("launch of ") + l.kernel->name + ": " + cudaGetErrorString(e);
    return FLASHPTX_ERR_CUDA;
  }
  g_last_launch = l;
  return FLASHPTX_OK;
}

}  // namespace flashptx
