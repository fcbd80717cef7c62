// The C ABI (include/flashptx.h), thin: validation (src/validate.cpp), the device, the launch plan
// (src/plan.cpp), the launch. Every rejection names its reason in a message kept per host thread
// (flashptx_last_error) and launches nothing.
#include "include/flashptx.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "src/internal.h"
#include "src/plan.h"
#include "src/sm90/fa3_fwd_fp8.h"
#include "src/sm90/fp8_quantize.h"
#include "src/validate.h"

namespace {

thread_local std::string g_last_error;

flashptx_status fail(flashptx_status s, const std::string& msg) {
  g_last_error = std::string(flashptx_status_name(s)) + ": " + msg;
  return s;
}
flashptx_status ok() {
  g_last_error.clear();
  return FLASHPTX_OK;
}

// FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100 (include/flashptx.h): read by every plan on the current device.
std::atomic<bool> g_allow_unverified_sm100{false};

}  // namespace

namespace flashptx {

bool sm100_opted_in() { return g_allow_unverified_sm100.load(std::memory_order_relaxed); }

flashptx_status record_status(flashptx_status s, const std::string& msg) { return s == FLASHPTX_OK ? ok() : fail(s, msg); }

// Device and plan of a validated problem: what a launch and its kernel_info share.
static flashptx_status plan_validated(const flashptx_fwd_params* p, const FwdOptions& opt, FwdPlan* plan) {
  std::string msg;
  flashptx_status s;
  Device dev;
  if ((s = current_device(&dev, &msg)) != FLASHPTX_OK) return fail(s, msg);
  if ((s = plan_fwd(*p, opt, dev, plan, &msg)) != FLASHPTX_OK) return fail(s, msg);
  return FLASHPTX_OK;
}

flashptx_status fwd(const flashptx_fwd_params* p, const FwdOptions& opt, cudaStream_t stream) {
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  std::string msg;
  flashptx_status s = validate_fwd(*p, &msg);
  if (s != FLASHPTX_OK) return fail(s, msg);
  if (p->batch == 0 || p->seqlen_q == 0) return ok();  // nothing to compute, nothing launched
  FwdPlan plan;
  if ((s = plan_validated(p, opt, &plan)) != FLASHPTX_OK) return s;
  if ((s = encode_fwd_args(*p, opt, &plan, &msg)) != FLASHPTX_OK) return fail(s, msg);
  if ((s = launch(plan.launch, &plan.args, stream, &msg)) != FLASHPTX_OK) return fail(s, msg);
  return ok();
}

// kernel_info from a plan's launch (the forward's kernel, the backward's main kernel).
static void fill_info(const Launch& l, flashptx_kernel_info* info) {
  info->symbol = l.kernel->name;
  info->threads = static_cast<int>(l.block.x);
  info->ctas = static_cast<int>(l.grid.x * l.grid.y * l.grid.z);
  info->tiles = l.tiles;
  info->schedule = schedule_name(l.schedule);
  info->shared_bytes = l.smem_bytes;
  info->registers = 0;
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, l.kernel->fn) == cudaSuccess) {
    info->registers = attr.numRegs;
    info->shared_bytes = l.smem_bytes + static_cast<int>(attr.sharedSizeBytes);
  } else {
    cudaGetLastError();
  }
}

flashptx_status fwd_kernel_info(const flashptx_fwd_params* p, const FwdOptions& opt, flashptx_kernel_info* info) {
  if (info == nullptr) return fail(FLASHPTX_ERR_NULL_POINTER, "info is NULL");
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  std::string msg;
  flashptx_status s = validate_fwd(*p, &msg);
  if (s != FLASHPTX_OK) return fail(s, msg);
  if (p->batch == 0 || p->seqlen_q == 0)
    return fail(FLASHPTX_ERR_BAD_SHAPE, "batch is " + std::to_string(p->batch) + " and seqlen_q " +
                                            std::to_string(p->seqlen_q) + ": nothing would launch");
  FwdPlan plan;
  if ((s = plan_validated(p, opt, &plan)) != FLASHPTX_OK) return s;
  fill_info(plan.launch, info);
  return ok();
}

// ---- variable-length forward ----------------------------------------------------------------------
// The prefix sums are read on the host (include/flashptx.h says why). A device pointer passed there by
// mistake would be dereferenced by the validation: where the CUDA runtime can tell (a driver is
// present), device memory is refused with a status first. Where it cannot, no device memory exists.
template <class Params>  // flashptx_fwd_varlen_params, flashptx_bwd_varlen_params
static flashptx_status check_host_prefix_sums(const Params& p, std::string* msg) {
  if (p.num_seqs <= 0) return FLASHPTX_OK;
  // (seqused_q/_k, the used lengths, likewise: host arrays, FLASHPTX_ERR_BAD_SHAPE as their values.)
  const struct { const char* name; const int32_t* ptr; flashptx_status status; const char* what; } arrays[] = {
      {"cu_seqlens_q", p.cu_seqlens_q, FLASHPTX_ERR_BAD_CU_SEQLENS, "prefix sums"},
      {"cu_seqlens_k", p.cu_seqlens_k, FLASHPTX_ERR_BAD_CU_SEQLENS, "prefix sums"},
      {"seqused_q", p.seqused_q, FLASHPTX_ERR_BAD_SHAPE, "used lengths"},
      {"seqused_k", p.seqused_k, FLASHPTX_ERR_BAD_SHAPE, "used lengths"}};
  for (const auto& a : arrays) {
    if (a.ptr == nullptr) continue;  // validation names it
    cudaPointerAttributes attr{};
    if (cudaPointerGetAttributes(&attr, a.ptr) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    if (attr.type == cudaMemoryTypeDevice) {
      *msg = std::string(a.name) + " points to device memory: pass the host copy of the " + a.what;
      return a.status;
    }
  }
  return FLASHPTX_OK;
}

static flashptx_status validate_varlen_checked(const flashptx_fwd_varlen_params& p, std::string* msg) {
  const flashptx_status s = check_host_prefix_sums(p, msg);
  if (s != FLASHPTX_OK) return s;
  return validate_fwd_varlen(p, msg);
}

static bool varlen_nothing_to_do(const flashptx_fwd_varlen_params& p) { return p.num_seqs == 0 || p.total_q == 0; }

static flashptx_status varlen_plan_checked(const flashptx_fwd_varlen_params* p, const FwdOptions& opt,
                                           FwdVarlenPlan* plan) {
  std::string msg;
  Device dev;
  flashptx_status s;
  if ((s = current_device(&dev, &msg)) != FLASHPTX_OK) return fail(s, msg);
  if ((s = plan_fwd_varlen(*p, opt, dev, plan, &msg)) != FLASHPTX_OK) return fail(s, msg);
  return FLASHPTX_OK;
}

flashptx_status fwd_varlen(const flashptx_fwd_varlen_params* p, const FwdOptions& opt, cudaStream_t stream) {
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  std::string msg;
  flashptx_status s = validate_varlen_checked(*p, &msg);
  if (s != FLASHPTX_OK) return fail(s, msg);
  if (varlen_nothing_to_do(*p)) return ok();  // nothing to compute, nothing launched
  // The plan holds the kernel's parameter block (about 21 KB): per host thread, not on the stack.
  static thread_local FwdVarlenPlan plan;
  if ((s = varlen_plan_checked(p, opt, &plan)) != FLASHPTX_OK) return s;
  if (plan.launch.tiles == 0) return ok();  // seqused_q 0 for every sequence: nothing launched
  if ((s = encode_fwd_varlen_args(*p, &plan, &msg)) != FLASHPTX_OK) return fail(s, msg);
  if ((s = launch(plan.launch, &plan.args, stream, &msg)) != FLASHPTX_OK) return fail(s, msg);
  return ok();
}

flashptx_status fwd_varlen_kernel_info(const flashptx_fwd_varlen_params* p, const FwdOptions& opt,
                                       flashptx_kernel_info* info) {
  if (info == nullptr) return fail(FLASHPTX_ERR_NULL_POINTER, "info is NULL");
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  std::string msg;
  flashptx_status s = validate_varlen_checked(*p, &msg);
  if (s != FLASHPTX_OK) return fail(s, msg);
  if (varlen_nothing_to_do(*p)) return fail(FLASHPTX_ERR_BAD_SHAPE, "num_seqs or total_q is 0: nothing would launch");
  static thread_local FwdVarlenPlan plan;
  if ((s = varlen_plan_checked(p, opt, &plan)) != FLASHPTX_OK) return s;
  if (plan.launch.tiles == 0) return fail(FLASHPTX_ERR_BAD_SHAPE, "seqused_q is 0 for every sequence: nothing would launch");
  fill_info(plan.launch, info);
  return ok();
}

// ---- backward -------------------------------------------------------------------------------------
static flashptx_status bwd_plan_checked(const flashptx_bwd_params* p, const BwdOptions& opt, BwdPlan* plan) {
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  std::string msg;
  flashptx_status s = validate_bwd_shape(*p, &msg);
  if (s != FLASHPTX_OK) return fail(s, msg);
  Device dev;
  if (p->batch > 0) {
    int64_t need = 0;
    if ((s = bwd_workspace_bytes(*p, &need, &msg)) != FLASHPTX_OK) return fail(s, msg);
    if ((s = validate_bwd_buffers(*p, need, &msg)) != FLASHPTX_OK) return fail(s, msg);
  }
  if ((s = current_device(&dev, &msg)) != FLASHPTX_OK) return fail(s, msg);
  if (dev.cc != 90 && !(dev.cc == 100 && !fa4_bwd_kernels().empty()))
    return fail(FLASHPTX_ERR_UNSUPPORTED_DEVICE, "device " + std::to_string(dev.ordinal) + " is sm_" +
                                                     std::to_string(dev.cc) +
                                                     "; the backward kernels are sm_90a (Hopper) and sm_100a (Blackwell)");
  if ((s = plan_bwd(*p, opt, dev, plan, &msg)) != FLASHPTX_OK) return fail(s, msg);
  return FLASHPTX_OK;
}

flashptx_status bwd(const flashptx_bwd_params* p, const BwdOptions& opt, cudaStream_t stream) {
  if (p != nullptr && p->batch == 0) {
    std::string msg;
    const flashptx_status s = validate_bwd_shape(*p, &msg);
    return s == FLASHPTX_OK ? ok() : fail(s, msg);
  }
  BwdPlan plan;
  flashptx_status s = bwd_plan_checked(p, opt, &plan);
  if (s != FLASHPTX_OK) return s;
  std::string msg;
  if ((s = encode_bwd_args(*p, &plan, &msg)) != FLASHPTX_OK) return fail(s, msg);
  if ((s = launch_bwd(*p, &plan, stream, &msg)) != FLASHPTX_OK) return fail(s, msg);
  return ok();
}

// ---- variable-length backward ------------------------------------------------------------------------
// Validation (the shape, then for a problem that is not empty the host prefix sums, buffers and the
// workspace), the device and the plan: what a launch and its kernel_info share. The plan holds the
// kernels' parameter block (about 26 KB): per host thread, not on the stack.
static flashptx_status bwd_varlen_checked(const flashptx_bwd_varlen_params* p, std::string* msg) {
  flashptx_status s = validate_bwd_varlen_shape(*p, msg);
  if (s != FLASHPTX_OK || bwd_varlen_empty(*p)) return s;
  if ((s = check_host_prefix_sums(*p, msg)) != FLASHPTX_OK) return s;
  int64_t need = 0;
  if ((s = bwd_varlen_workspace_bytes(*p, &need, msg)) != FLASHPTX_OK) return s;
  return validate_bwd_varlen_buffers(*p, need, msg);
}

static flashptx_status bwd_varlen_plan_checked(const flashptx_bwd_varlen_params* p, const BwdOptions& opt,
                                               BwdVarlenPlan* plan) {
  std::string msg;
  Device dev;
  flashptx_status s;
  if ((s = current_device(&dev, &msg)) != FLASHPTX_OK) return fail(s, msg);
  if ((s = plan_bwd_varlen(*p, opt, dev, plan, &msg)) != FLASHPTX_OK) return fail(s, msg);
  return FLASHPTX_OK;
}

flashptx_status bwd_varlen(const flashptx_bwd_varlen_params* p, const BwdOptions& opt, cudaStream_t stream) {
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  std::string msg;
  flashptx_status s = bwd_varlen_checked(p, &msg);
  if (s != FLASHPTX_OK) return fail(s, msg);
  if (bwd_varlen_empty(*p)) return ok();  // nothing to compute, nothing launched
  static thread_local BwdVarlenPlan plan;
  if ((s = bwd_varlen_plan_checked(p, opt, &plan)) != FLASHPTX_OK) return s;
  if ((s = encode_bwd_varlen_args(*p, &plan, &msg)) != FLASHPTX_OK) return fail(s, msg);
  if ((s = launch_bwd_varlen(*p, &plan, stream, &msg)) != FLASHPTX_OK) return fail(s, msg);
  return ok();
}

flashptx_status bwd_varlen_kernel_info(const flashptx_bwd_varlen_params* p, const BwdOptions& opt,
                                       flashptx_kernel_info* info) {
  if (info == nullptr) return fail(FLASHPTX_ERR_NULL_POINTER, "info is NULL");
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  std::string msg;
  flashptx_status s = bwd_varlen_checked(p, &msg);
  if (s != FLASHPTX_OK) return fail(s, msg);
  static thread_local BwdVarlenPlan plan;
  if (!bwd_varlen_empty(*p) && (s = bwd_varlen_plan_checked(p, opt, &plan)) != FLASHPTX_OK) return s;
  if (bwd_varlen_empty(*p) || plan.main.grid.x == 0)
    return fail(FLASHPTX_ERR_BAD_SHAPE, "no sequence has a key (or a used key, seqused_k): no main kernel would launch");
  fill_info(plan.main, info);
  return ok();
}

flashptx_status bwd_kernel_info(const flashptx_bwd_params* p, const BwdOptions& opt, flashptx_kernel_info* info) {
  if (info == nullptr) return fail(FLASHPTX_ERR_NULL_POINTER, "info is NULL");
  if (p != nullptr && p->batch == 0) return fail(FLASHPTX_ERR_BAD_SHAPE, "batch is 0: nothing would launch");
  BwdPlan plan;
  const flashptx_status s = bwd_plan_checked(p, opt, &plan);
  if (s != FLASHPTX_OK) return s;
  fill_info(plan.main, info);
  return ok();
}

}  // namespace flashptx

extern "C" {

const char* flashptx_last_error(void) { return g_last_error.c_str(); }

const char* flashptx_status_name(flashptx_status s) {
  switch (s) {
    case FLASHPTX_OK: return "FLASHPTX_OK";
    case FLASHPTX_ERR_NULL_POINTER: return "FLASHPTX_ERR_NULL_POINTER";
    case FLASHPTX_ERR_MISALIGNED: return "FLASHPTX_ERR_MISALIGNED";
    case FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM: return "FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM";
    case FLASHPTX_ERR_UNSUPPORTED_DTYPE: return "FLASHPTX_ERR_UNSUPPORTED_DTYPE";
    case FLASHPTX_ERR_DTYPE_MISMATCH: return "FLASHPTX_ERR_DTYPE_MISMATCH";
    case FLASHPTX_ERR_BAD_STRIDES: return "FLASHPTX_ERR_BAD_STRIDES";
    case FLASHPTX_ERR_BAD_HEADS: return "FLASHPTX_ERR_BAD_HEADS";
    case FLASHPTX_ERR_BAD_SHAPE: return "FLASHPTX_ERR_BAD_SHAPE";
    case FLASHPTX_ERR_UNSUPPORTED_DEVICE: return "FLASHPTX_ERR_UNSUPPORTED_DEVICE";
    case FLASHPTX_ERR_CUDA: return "FLASHPTX_ERR_CUDA";
    case FLASHPTX_ERR_NULL_PARAMS: return "FLASHPTX_ERR_NULL_PARAMS";
    case FLASHPTX_ERR_BAD_OPTION: return "FLASHPTX_ERR_BAD_OPTION";
    case FLASHPTX_ERR_WORKSPACE: return "FLASHPTX_ERR_WORKSPACE";
    case FLASHPTX_ERR_BAD_CU_SEQLENS: return "FLASHPTX_ERR_BAD_CU_SEQLENS";
    case FLASHPTX_ERR_TOO_MANY_SEQS: return "FLASHPTX_ERR_TOO_MANY_SEQS";
    case FLASHPTX_ERR_BAD_GRANULARITY: return "FLASHPTX_ERR_BAD_GRANULARITY";
    case FLASHPTX_ERR_BAD_HADAMARD: return "FLASHPTX_ERR_BAD_HADAMARD";
    case FLASHPTX_ERR_NULL_DESCALE: return "FLASHPTX_ERR_NULL_DESCALE";
    case FLASHPTX_ERR_BAD_V_LAYOUT: return "FLASHPTX_ERR_BAD_V_LAYOUT";
    case FLASHPTX_ERR_BAD_WINDOW: return "FLASHPTX_ERR_BAD_WINDOW";
    case FLASHPTX_ERR_BAD_SOFTCAP: return "FLASHPTX_ERR_BAD_SOFTCAP";
    case FLASHPTX_ERR_UNSUPPORTED: return "FLASHPTX_ERR_UNSUPPORTED";
    case FLASHPTX_ERR_BAD_SINKS: return "FLASHPTX_ERR_BAD_SINKS";
  }
  return "FLASHPTX_ERR_UNKNOWN";
}

static flashptx_status unknown_option(flashptx_option option) {
  return fail(FLASHPTX_ERR_BAD_OPTION, "option " + std::to_string(static_cast<int>(option)) +
                                           " is not a flashptx_option (FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100 is 1)");
}

flashptx_status flashptx_set_option(flashptx_option option, int64_t value) {
  if (option != FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100) return unknown_option(option);
  if (value != 0 && value != 1)
    return fail(FLASHPTX_ERR_BAD_OPTION,
                "FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100 takes 0 or 1, not " + std::to_string(value));
  g_allow_unverified_sm100.store(value == 1, std::memory_order_relaxed);
  return ok();
}

flashptx_status flashptx_get_option(flashptx_option option, int64_t* value) {
  if (value == nullptr) return fail(FLASHPTX_ERR_NULL_POINTER, "value is NULL");
  if (option != FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100) return unknown_option(option);
  *value = flashptx::sm100_opted_in() ? 1 : 0;
  return ok();
}

void flashptx_fwd_params_contiguous(flashptx_fwd_params* p, const void* q, const void* k, const void* v, void* o,
                                    float* lse, int64_t batch, int64_t seqlen_q, int64_t seqlen_k, int64_t heads_q,
                                    int64_t heads_kv, int64_t head_dim, flashptx_dtype dtype, int causal) {
  *p = flashptx_fwd_params{};
  p->q = q; p->k = k; p->v = v; p->o = o; p->lse = lse;
  p->batch = batch; p->seqlen_q = seqlen_q; p->seqlen_k = seqlen_k;
  p->heads_q = heads_q; p->heads_kv = heads_kv; p->head_dim = head_dim;
  p->q_row_stride = p->o_row_stride = heads_q * head_dim;
  p->q_head_stride = p->o_head_stride = head_dim;
  p->q_batch_stride = p->o_batch_stride = seqlen_q * heads_q * head_dim;
  p->k_row_stride = p->v_row_stride = heads_kv * head_dim;
  p->k_head_stride = p->v_head_stride = head_dim;
  p->k_batch_stride = p->v_batch_stride = seqlen_k * heads_kv * head_dim;
  p->q_dtype = p->k_dtype = p->v_dtype = p->o_dtype = dtype;
  p->causal = causal;
  p->softmax_scale = 0.f;
}

flashptx_status flashptx_fwd_check(const flashptx_fwd_params* p) {
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  std::string msg;
  const flashptx_status s = flashptx::validate_fwd(*p, &msg);
  return s == FLASHPTX_OK ? ok() : fail(s, msg);
}

flashptx_status flashptx_fwd(const flashptx_fwd_params* p, cudaStream_t stream) {
  return flashptx::fwd(p, flashptx::FwdOptions{}, stream);
}

flashptx_status flashptx_fwd_kernel_info(const flashptx_fwd_params* p, flashptx_kernel_info* info) {
  return flashptx::fwd_kernel_info(p, flashptx::FwdOptions{}, info);
}

void flashptx_fwd_varlen_params_contiguous(flashptx_fwd_varlen_params* p, const void* q, const void* k,
                                           const void* v, void* o, float* lse, const int32_t* cu_seqlens_q,
                                           const int32_t* cu_seqlens_k, int64_t num_seqs, int64_t heads_q,
                                           int64_t heads_kv, int64_t head_dim, flashptx_dtype dtype, int causal) {
  *p = flashptx_fwd_varlen_params{};
  p->q = q; p->k = k; p->v = v; p->o = o; p->lse = lse;
  p->cu_seqlens_q = cu_seqlens_q; p->cu_seqlens_k = cu_seqlens_k;
  p->num_seqs = num_seqs;
  p->heads_q = heads_q; p->heads_kv = heads_kv; p->head_dim = head_dim;
  // total and max_seqlen from the host prefix sums (the longest positive difference; validation
  // checks the rest).
  auto scan = [num_seqs](const int32_t* cu, int64_t* total, int64_t* longest) {
    if (cu == nullptr || num_seqs <= 0 || num_seqs > FLASHPTX_VARLEN_MAX_SEQS) return;
    *total = cu[num_seqs];
    for (int64_t b = 0; b < num_seqs; ++b)
      if (static_cast<int64_t>(cu[b + 1]) - cu[b] > *longest) *longest = static_cast<int64_t>(cu[b + 1]) - cu[b];
  };
  scan(cu_seqlens_q, &p->total_q, &p->max_seqlen_q);
  scan(cu_seqlens_k, &p->total_k, &p->max_seqlen_k);
  p->q_row_stride = p->o_row_stride = heads_q * head_dim;
  p->q_head_stride = p->o_head_stride = head_dim;
  p->k_row_stride = p->v_row_stride = heads_kv * head_dim;
  p->k_head_stride = p->v_head_stride = head_dim;
  p->dtype = dtype;
  p->causal = causal;
  p->softmax_scale = 0.f;
}

flashptx_status flashptx_fwd_varlen_check(const flashptx_fwd_varlen_params* p) {
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  std::string msg;
  const flashptx_status s = flashptx::validate_varlen_checked(*p, &msg);
  return s == FLASHPTX_OK ? ok() : fail(s, msg);
}

flashptx_status flashptx_fwd_varlen(const flashptx_fwd_varlen_params* p, cudaStream_t stream) {
  return flashptx::fwd_varlen(p, flashptx::FwdOptions{}, stream);
}

flashptx_status flashptx_fwd_varlen_kernel_info(const flashptx_fwd_varlen_params* p, flashptx_kernel_info* info) {
  return flashptx::fwd_varlen_kernel_info(p, flashptx::FwdOptions{}, info);
}

void flashptx_bwd_params_contiguous(flashptx_bwd_params* p, const void* q, const void* k, const void* v, const void* o,
                                    const float* lse, const void* dout, void* dq, void* dk, void* dv, int64_t batch,
                                    int64_t seqlen_q, int64_t seqlen_k, int64_t heads_q, int64_t heads_kv,
                                    int64_t head_dim, flashptx_dtype dtype, int causal) {
  *p = flashptx_bwd_params{};
  p->q = q; p->k = k; p->v = v; p->o = o; p->lse = lse; p->dout = dout; p->dq = dq; p->dk = dk; p->dv = dv;
  p->batch = batch; p->seqlen_q = seqlen_q; p->seqlen_k = seqlen_k;
  p->heads_q = heads_q; p->heads_kv = heads_kv; p->head_dim = head_dim;
  const int64_t qs = heads_q * head_dim, ks = heads_kv * head_dim;
  p->q_row_stride = p->o_row_stride = p->do_row_stride = p->dq_row_stride = qs;
  p->q_head_stride = p->o_head_stride = p->do_head_stride = p->dq_head_stride = head_dim;
  p->q_batch_stride = p->o_batch_stride = p->do_batch_stride = p->dq_batch_stride = seqlen_q * qs;
  p->k_row_stride = p->v_row_stride = p->dk_row_stride = p->dv_row_stride = ks;
  p->k_head_stride = p->v_head_stride = p->dk_head_stride = p->dv_head_stride = head_dim;
  p->k_batch_stride = p->v_batch_stride = p->dk_batch_stride = p->dv_batch_stride = seqlen_k * ks;
  p->dtype = dtype;
  p->causal = causal;
  p->softmax_scale = 0.f;
  p->deterministic = 0;
}

flashptx_status flashptx_bwd_workspace_size(const flashptx_bwd_params* p, int64_t* bytes) {
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  if (bytes == nullptr) return fail(FLASHPTX_ERR_NULL_POINTER, "bytes is NULL");
  std::string msg;
  flashptx_status s = flashptx::validate_bwd_shape(*p, &msg);
  if (s != FLASHPTX_OK) return fail(s, msg);
  *bytes = 0;
  if (p->batch == 0) return ok();
  if ((s = flashptx::bwd_workspace_bytes(*p, bytes, &msg)) != FLASHPTX_OK) return fail(s, msg);
  return ok();
}

flashptx_status flashptx_bwd_check(const flashptx_bwd_params* p) {
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  std::string msg;
  flashptx_status s = flashptx::validate_bwd_shape(*p, &msg);
  if (s != FLASHPTX_OK) return fail(s, msg);
  if (p->batch == 0) return ok();
  int64_t need = 0;
  if ((s = flashptx::bwd_workspace_bytes(*p, &need, &msg)) != FLASHPTX_OK) return fail(s, msg);
  if ((s = flashptx::validate_bwd_buffers(*p, need, &msg)) != FLASHPTX_OK) return fail(s, msg);
  return ok();
}

flashptx_status flashptx_bwd(const flashptx_bwd_params* p, cudaStream_t stream) {
  return flashptx::bwd(p, flashptx::BwdOptions{}, stream);
}

flashptx_status flashptx_bwd_kernel_info(const flashptx_bwd_params* p, flashptx_kernel_info* info) {
  return flashptx::bwd_kernel_info(p, flashptx::BwdOptions{}, info);
}

void flashptx_bwd_varlen_params_contiguous(flashptx_bwd_varlen_params* p, const void* q, const void* k,
                                           const void* v, const void* o, const float* lse, const void* dout,
                                           void* dq, void* dk, void* dv, const int32_t* cu_seqlens_q,
                                           const int32_t* cu_seqlens_k, int64_t num_seqs, int64_t heads_q,
                                           int64_t heads_kv, int64_t head_dim, flashptx_dtype dtype, int causal) {
  if (p == nullptr) return;
  // The forward's helper fills the shared fields (totals and max_seqlen from the host prefix sums).
  flashptx_fwd_varlen_params f;
  flashptx_fwd_varlen_params_contiguous(&f, q, k, v, nullptr, nullptr, cu_seqlens_q, cu_seqlens_k, num_seqs, heads_q,
                                        heads_kv, head_dim, dtype, causal);
  *p = flashptx_bwd_varlen_params{};
  p->q = q; p->k = k; p->v = v; p->o = o; p->lse = lse; p->dout = dout; p->dq = dq; p->dk = dk; p->dv = dv;
  p->cu_seqlens_q = cu_seqlens_q; p->cu_seqlens_k = cu_seqlens_k;
  p->num_seqs = num_seqs;
  p->total_q = f.total_q; p->total_k = f.total_k;
  p->max_seqlen_q = f.max_seqlen_q; p->max_seqlen_k = f.max_seqlen_k;
  p->heads_q = heads_q; p->heads_kv = heads_kv; p->head_dim = head_dim;
  const int64_t qs = heads_q * head_dim, ks = heads_kv * head_dim;
  p->q_row_stride = p->o_row_stride = p->do_row_stride = p->dq_row_stride = qs;
  p->q_head_stride = p->o_head_stride = p->do_head_stride = p->dq_head_stride = head_dim;
  p->k_row_stride = p->v_row_stride = p->dk_row_stride = p->dv_row_stride = ks;
  p->k_head_stride = p->v_head_stride = p->dk_head_stride = p->dv_head_stride = head_dim;
  p->dtype = dtype;
  p->causal = causal;
  p->softmax_scale = 0.f;
  p->deterministic = 0;
}

flashptx_status flashptx_bwd_varlen_workspace_size(const flashptx_bwd_varlen_params* p, int64_t* bytes) {
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  if (bytes == nullptr) return fail(FLASHPTX_ERR_NULL_POINTER, "bytes is NULL");
  std::string msg;
  flashptx_status s = flashptx::validate_bwd_varlen_shape(*p, &msg);
  if (s != FLASHPTX_OK) return fail(s, msg);
  *bytes = 0;
  if (flashptx::bwd_varlen_empty(*p)) return ok();
  if ((s = flashptx::bwd_varlen_workspace_bytes(*p, bytes, &msg)) != FLASHPTX_OK) return fail(s, msg);
  return ok();
}

flashptx_status flashptx_bwd_varlen_check(const flashptx_bwd_varlen_params* p) {
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  std::string msg;
  const flashptx_status s = flashptx::bwd_varlen_checked(p, &msg);
  return s == FLASHPTX_OK ? ok() : fail(s, msg);
}

flashptx_status flashptx_bwd_varlen(const flashptx_bwd_varlen_params* p, cudaStream_t stream) {
  return flashptx::bwd_varlen(p, flashptx::BwdOptions{}, stream);
}

flashptx_status flashptx_bwd_varlen_kernel_info(const flashptx_bwd_varlen_params* p, flashptx_kernel_info* info) {
  return flashptx::bwd_varlen_kernel_info(p, flashptx::BwdOptions{}, info);
}

void flashptx_quantize_fp8_params_contiguous(flashptx_quantize_fp8_params* p, const void* in, void* out,
                                             float* descale, int64_t batch, int64_t seqlen, int64_t heads,
                                             int64_t head_dim, flashptx_dtype in_dtype,
                                             flashptx_fp8_scale_granularity granularity) {
  *p = flashptx_quantize_fp8_params{};
  p->in = in; p->out = out; p->descale = descale;
  p->batch = batch; p->seqlen = seqlen; p->heads = heads; p->head_dim = head_dim;
  p->in_head_stride = p->out_head_stride = head_dim;
  p->in_row_stride = p->out_row_stride = heads * head_dim;
  p->in_batch_stride = p->out_batch_stride = seqlen * heads * head_dim;
  p->in_dtype = in_dtype;
  p->out_dtype = FLASHPTX_FP8_E4M3;
  p->granularity = granularity;
  p->hadamard_block = 0;
}

flashptx_status flashptx_quantize_fp8_descale_count(const flashptx_quantize_fp8_params* p, int64_t* count) {
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  if (count == nullptr) return fail(FLASHPTX_ERR_NULL_POINTER, "count is NULL");
  // The sizes and the granularity only: a params whose pointers are not set yet may be sized.
  std::string msg;
  const flashptx_status s =
      flashptx::check_sizes({{"batch", p->batch}, {"seqlen", p->seqlen}, {"heads", p->heads}}, &msg);
  if (s != FLASHPTX_OK) return fail(s, msg);
  if (p->granularity != FLASHPTX_FP8_SCALE_PER_TENSOR && p->granularity != FLASHPTX_FP8_SCALE_PER_HEAD &&
      p->granularity != FLASHPTX_FP8_SCALE_PER_BLOCK)
    return fail(FLASHPTX_ERR_BAD_GRANULARITY, "granularity " + std::to_string(static_cast<int>(p->granularity)) +
                                                  " is not FLASHPTX_FP8_SCALE_PER_TENSOR, _PER_HEAD or _PER_BLOCK");
  *count = flashptx::quantize_fp8_descale_count(*p);
  return ok();
}

flashptx_status flashptx_quantize_fp8_check(const flashptx_quantize_fp8_params* p) {
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  std::string msg;
  const flashptx_status s = flashptx::validate_quantize_fp8(*p, &msg);
  return s == FLASHPTX_OK ? ok() : fail(s, msg);
}

flashptx_status flashptx_quantize_fp8(const flashptx_quantize_fp8_params* p, cudaStream_t stream) {
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  std::string msg;
  flashptx_status s = flashptx::validate_quantize_fp8(*p, &msg);
  if (s != FLASHPTX_OK) return fail(s, msg);
  if (p->batch == 0 || p->seqlen == 0 || p->heads == 0) return ok();  // nothing to compute, nothing launched
  flashptx::Device dev;
  if ((s = flashptx::current_device(&dev, &msg)) != FLASHPTX_OK) return fail(s, msg);
  if (dev.cc != 90)
    return fail(FLASHPTX_ERR_UNSUPPORTED_DEVICE, "device " + std::to_string(dev.ordinal) + " is sm_" +
                                                     std::to_string(dev.cc) + "; the quantize kernels are sm_90a (Hopper)");
  if ((s = flashptx::launch_quantize_fp8(*p, stream, &msg)) != FLASHPTX_OK) return fail(s, msg);
  return ok();
}

void flashptx_fwd_fp8_params_contiguous(flashptx_fwd_fp8_params* p, const void* q, const void* k, const void* v,
                                        void* o, float* lse, const float* descale_q, const float* descale_k,
                                        const float* descale_v, int64_t batch, int64_t seqlen_q, int64_t seqlen_k,
                                        int64_t heads_q, int64_t heads_kv, int64_t head_dim,
                                        flashptx_fp8_scale_granularity granularity, int causal) {
  if (p == nullptr) return;
  *p = flashptx_fwd_fp8_params{};
  p->q = q; p->k = k; p->v = v; p->o = o; p->lse = lse;
  p->descale_q = descale_q; p->descale_k = descale_k; p->descale_v = descale_v;
  p->batch = batch; p->seqlen_q = seqlen_q; p->seqlen_k = seqlen_k;
  p->heads_q = heads_q; p->heads_kv = heads_kv; p->head_dim = head_dim;
  p->q_row_stride = heads_q * head_dim; p->q_head_stride = head_dim; p->q_batch_stride = seqlen_q * heads_q * head_dim;
  p->k_row_stride = heads_kv * head_dim; p->k_head_stride = head_dim; p->k_batch_stride = seqlen_k * heads_kv * head_dim;
  p->v_row_stride = heads_kv * head_dim; p->v_head_stride = head_dim; p->v_batch_stride = seqlen_k * heads_kv * head_dim;
  p->v_dim_stride = 0;
  p->o_row_stride = heads_q * head_dim; p->o_head_stride = head_dim; p->o_batch_stride = seqlen_q * heads_q * head_dim;
  p->q_dtype = p->k_dtype = p->v_dtype = FLASHPTX_FP8_E4M3;
  p->o_dtype = FLASHPTX_BF16;
  p->q_granularity = p->k_granularity = p->v_granularity = granularity;
  p->v_layout = FLASHPTX_FP8_V_ROW_MAJOR;
  p->causal = causal;
  p->softmax_scale = 0.f;
}

flashptx_status flashptx_fwd_fp8_check(const flashptx_fwd_fp8_params* p) {
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  std::string msg;
  const flashptx_status s = flashptx::validate_fwd_fp8(*p, &msg);
  return s == FLASHPTX_OK ? ok() : fail(s, msg);
}

flashptx_status flashptx_fwd_fp8(const flashptx_fwd_fp8_params* p, cudaStream_t stream) {
  if (p == nullptr) return fail(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  std::string msg;
  flashptx_status s = flashptx::validate_fwd_fp8(*p, &msg);
  if (s != FLASHPTX_OK) return fail(s, msg);
  if (p->batch == 0 || p->seqlen_q == 0) return ok();  // nothing to compute, nothing launched
  flashptx::Device dev;
  if ((s = flashptx::current_device(&dev, &msg)) != FLASHPTX_OK) return fail(s, msg);
  if (dev.cc != 90)
    return fail(FLASHPTX_ERR_UNSUPPORTED_DEVICE, "device " + std::to_string(dev.ordinal) + " is sm_" +
                                                     std::to_string(dev.cc) + "; the FP8 forward kernels are sm_90a (Hopper)");
  if ((s = flashptx::launch_fwd_fp8(*p, dev.sm_count, stream, &msg)) != FLASHPTX_OK) return fail(s, msg);
  return ok();
}

}  // extern "C"
