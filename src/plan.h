// Launch plans: from a validated problem to {kernel row, grid, block, shared memory, schedule,
// kernel arguments}, in one function per kernel family. flashptx_fwd launches the plan;
// flashptx_fwd_kernel_info reports the same plan; the CLI selects variants through FwdOptions
// (never through environment variables). Host code only; plan_fwd itself makes no CUDA call, so
// the dispatch rule is testable on any machine.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "include/flashptx.h"
#include "src/kernels.h"
#include "src/sm90/fa3_bwd_config.h"
#include "src/sm90/fa3_bwd_sink.h"
#include "src/sm90/fa3_fwd_config.h"

namespace flashptx {

// How a launch covers its work tiles.
enum class Schedule : uint8_t {
  kAuto,        // the plan's rule (src/plan.cpp)
  kOnePerTile,  // grid = tiles; the hardware's block dispatch orders them
  kPersistent,  // grid = min(tiles, SMs); each CTA walks tiles blockIdx.x + k * gridDim.x (a paired
                //   kernel: min(units, SMs), units of two causal tiles: tile_scheduler.h paired_slot)
  kClusterLaunchControl,  // grid = tiles (x cluster size); a running CTA steals the tiles of CTAs not
                          // yet launched (clusterlaunchcontrol.try_cancel): the FA4 kernels, sm_100
};
const char* schedule_name(Schedule s);
bool parse_schedule(std::string_view name, Schedule* s);  // "auto", "one-per-tile", "persistent", "clc"

// What the plan needs to know about the device.
struct Device {
  int ordinal = -1;
  int cc = 0;        // major * 10 + minor
  int sm_count = 0;
};
// Why no GPU is usable, in plain words, from what the runtime said: `e` from cudaGetDeviceCount or
// cudaGetDevice, `count` devices, `driver_version` from cudaDriverGetVersion (0: no driver loaded),
// `runtime_version` from cudaRuntimeGetVersion. (The runtime answers "CUDA driver version is
// insufficient" both when the driver is too old and when there is none; this says which.) Pure.
std::string no_gpu_reason(cudaError_t e, int count, int driver_version, int runtime_version);

// The current device (cudaGetDevice), attributes cached per ordinal. FLASHPTX_OK, or
// FLASHPTX_ERR_UNSUPPORTED_DEVICE with *err saying why (no driver, no device, neither sm_90 nor an
// sm_100 with the FA4 kernels built).
flashptx_status current_device(Device* d, std::string* err);

// Whether the caller opted in to the FA4 kernels (flashptx_set_option,
// FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100; process-wide, src/api.cpp).
bool sm100_opted_in();
// The sm_100 gate of plan_fwd and plan_bwd: FLASHPTX_OK for any device but sm_100, and for sm_100
// once sm100_opted_in(); otherwise FLASHPTX_ERR_UNSUPPORTED_DEVICE with *err saying why (the FA4
// kernels have never executed on a Blackwell GPU) and how to opt in. Every C call that plans on the
// current device goes through it, kernel_info included, so that both give one answer.
flashptx_status admit_sm100(const Device& dev, std::string* err);

struct Launch {
  const KernelEntry* kernel = nullptr;
  dim3 grid{1, 1, 1};
  dim3 block{1, 1, 1};
  int smem_bytes = 0;
  Schedule schedule = Schedule::kOnePerTile;
  int64_t tiles = 0;  // work tiles the launch covers
};

// Variant selection for benchmarks and tests (`flashptx bench --kernel NAME --schedule S`).
// The C ABI uses the defaults.
struct FwdOptions {
  const char* kernel = nullptr;        // a kernel table name of the forward families, or nullptr: the rule
  Schedule schedule = Schedule::kAuto;
  uint64_t* trace = nullptr;           // device trace buffer: required by, and only for, the traced kernel
};

struct FwdPlan {
  Launch launch;
  fa3::FwdParams args{};  // filled by encode_fwd_args
};

// Chooses the kernel and sizes the launch. `p` must be valid (flashptx_fwd_check). Errors: an
// unknown or mismatched forced kernel, a schedule the kernel cannot run, a missing trace buffer.
flashptx_status plan_fwd(const flashptx_fwd_params& p, const FwdOptions& opt, const Device& dev, FwdPlan* plan,
                         std::string* err);
// The d64 causal rule (what plan_fwd runs): query rows per tile (128 or 192) and whether the paired
// kernel runs, by the makespan estimates of src/protocol/tile_scheduler.h on `sms` SMs.
struct FwdChoice {
  int block_m;
  bool paired;
  bool loop = false;  // the persistent twin where a head dim has one (d256 non-causal)
};
FwdChoice fwd_d64_causal_choice(int64_t seqlen_q, int64_t seqlen_k, int64_t heads, int64_t batch, int sms);
// d128 and d256 causal: true for the paired kernel, false for the plain one (one CTA per tile).
bool fwd_causal_paired(int64_t head_dim, int64_t seqlen_q, int64_t seqlen_k, int64_t heads, int64_t batch, int sms);
// d64 non-causal: the tile's rows (128 or 192).
int fwd_d64_noncausal_block_m(int64_t seqlen_q, int64_t heads, int64_t batch, int sms);
// The dynamic schedule's L2 section, in (batch, head) pairs (fa3::FwdParams::lpt_section).
int lpt_section_pairs(int64_t seqlen_k, int64_t head_dim, int64_t pairs);
// Encodes the four tensor maps (the driver's cuTensorMapEncodeTiled) and the scalar arguments.
flashptx_status encode_fwd_args(const flashptx_fwd_params& p, const FwdOptions& opt, FwdPlan* plan,
                                std::string* err);

// ---- variable-length forward ----------------------------------------------------------------------
// The varlen twin of each forward shape (family kFa3FwdVarlen), one CTA per tile: the launch order is
// the schedule (src/sm90/fa3_fwd_config.h, FwdVarlenTable). FwdOptions: a forced kernel of that
// family; schedule auto or one-per-tile; no trace buffer.
struct FwdVarlenPlan {
  Launch launch;
  fa3::FwdVarlenParams args{};  // the sequence table filled by plan_fwd_varlen, the rest by encode
};

// The schedule: the sequences with query rows, longest-first (the K/V blocks of their longest tile,
// then their tile count; ties keep the caller's order), each with its tile prefix (num_m_blocks x
// heads_q tiles of block_m rows). cu_q/cu_k: valid host prefix sums of num_seqs + 1 entries.
// window: the local kernels' sliding window (normalised, causal folded in as window_right = 0;
// nullptr: none), by which a sequence's longest tile is then counted. used_q/used_k: the caller's
// seqused_q/_k (nullptr: the cu_seqlens lengths), each sequence's lengths in the table (its packed
// offsets stay cu_seqlens'); valid (validate_fwd_varlen).
void build_varlen_table(const int32_t* cu_q, const int32_t* cu_k, int num_seqs, int heads_q, int block_m, int block_n,
                        bool causal, fa3::FwdVarlenTable* table, const int (*window)[2] = nullptr,
                        const int32_t* used_q = nullptr, const int32_t* used_k = nullptr);

// The score modifiers of a forward call (flashptx_fwd_params::window, ::softcap), normalised:
// bounds that no row reaches made unbounded (-1; FlashAttention's rule: window_left >= seqlen_k - 1,
// window_right >= seqlen_q - 1), causal folded in as window_right = 0. local: the call needs a local
// kernel (a softcap, or a window that is neither none nor the causal mask); causal: otherwise, the
// mask today's kernels run (a window of (-1, 0) is the causal mask).
struct FwdModifiers {
  bool local = false;
  bool causal = false;
  int window_left = -1, window_right = -1;
  float softcap = 0.f;
};
FwdModifiers fwd_modifiers(int window, int64_t window_left, int64_t window_right, bool causal, float softcap,
                           int64_t seqlen_q, int64_t seqlen_k);

// Chooses the kernel, builds the sequence table, sizes the launch. `p` must be valid
// (validate_fwd_varlen) with total_q > 0. No CUDA call.
flashptx_status plan_fwd_varlen(const flashptx_fwd_varlen_params& p, const FwdOptions& opt, const Device& dev,
                                FwdVarlenPlan* plan, std::string* err);
// Encodes the tensor maps of the packed tensors and the scalars (the table is left as planned).
flashptx_status encode_fwd_varlen_args(const flashptx_fwd_varlen_params& p, FwdVarlenPlan* plan, std::string* err);

// ---- backward -------------------------------------------------------------------------------------
// Four launches on one stream (five with sinks: their gradient after the preprocess), after one memset of the workspace's zeroed section (semaphores and,
// under GQA, the dK/dV accumulators): preprocess, main kernel, dQ postprocess, and under GQA the
// dK/dV postprocess. A launch with an empty grid is skipped (e.g. seqlen_k 0: no main kernel).
// The order in which the deterministic mode's dQ writers take their turns (src/protocol/
// writer_order.h). kAuto: rotated where dq_order_rotated_ok allows it, otherwise ascending (causal
// masks keep their shortest-first order either way).
enum class DqOrder : uint8_t { kAuto, kAscending, kRotated };
// The rotated order makes a writer wait for key blocks dispatched after it, so it needs a head's
// n_blocks CTAs resident together (one backward CTA per SM: n_blocks <= sm_count), and it leaves
// the CTAs of a head cut by a wave boundary waiting for the rest: allowed only where that remainder
// (sm_count mod n_blocks) is at most 1/16 of the GPU. Its lock is the step (writer_order.h): at
// most one writer per tile and step, n_blocks <= m_blocks. Pure.
bool dq_order_rotated_ok(int64_t n_blocks, int64_t m_blocks, int sm_count);
struct BwdPlan {
  Launch pre, main, post_dq, post_dkv;
  Launch sink;                  // with sinks: their gradient, after the preprocess (empty grid: none)
  bool gqa = false;
  bool dq_rotated = false;      // deterministic, no mask: the rotated writer order
  fa3::BwdWorkspace workspace;
  fa3::BwdParams args{};        // main kernel (filled by encode_bwd_args)
  bool local = false;           // the main kernel is a local one (BwdConfig::local): it takes
  fa3::BwdLocal local_args{};   // BwdLocalParams {args, local_args} (src/sm90/fa3_bwd_local.cu)
  fa3::BwdAuxParams aux{};      // pre/postprocess
  fa3::BwdSinkParams sink_args{};  // the sinks' gradient
};
struct BwdOptions {
  const char* kernel = nullptr;  // a kernel table name of family kFa3Bwd, or nullptr: the rule
  DqOrder dq_order = DqOrder::kAuto;  // deterministic mode only; kRotated is refused where unsafe
};
// Chooses the kernels and sizes the launches and the workspace. `p`'s shape must be valid
// (validate_bwd_shape). No CUDA call. An sm_100 device passes admit_sm100 first.
flashptx_status plan_bwd(const flashptx_bwd_params& p, const BwdOptions& opt, const Device& dev, BwdPlan* plan,
                         std::string* err);
// The workspace flashptx_bwd_workspace_size reports: the larger of the FA3 plan's and (head dims 64,
// 128) the FA4 plan's, whose 128-row query blocks may pad the per-row scratch further. The same on
// every device and whatever the options. No CUDA call.
flashptx_status bwd_workspace_bytes(const flashptx_bwd_params& p, int64_t* bytes, std::string* err);
// Carves the workspace and encodes the tensor maps and scalars.
flashptx_status encode_bwd_args(const flashptx_bwd_params& p, BwdPlan* plan, std::string* err);
// The launch sequence.
flashptx_status launch_bwd(const flashptx_bwd_params& p, BwdPlan* plan, cudaStream_t stream, std::string* err);

// ---- variable-length backward ---------------------------------------------------------------------
// The varlen twins of the backward (src/sm90/fa3_bwd_varlen.cu), one CTA per key block of one query
// head of one sequence: preprocess, main kernel, dQ postprocess, under GQA the dK/dV postprocess,
// after one memset of the workspace's zeroed section, every kernel with the same parameter block
// (BwdVarlenParams, the sequence table in it). Deterministic mode: the fixed-length orders
// (ascending, causal shortest-first) within each sequence; never rotated.
struct BwdVarlenPlan {
  Launch pre, main, post_dq, post_dkv;
  bool gqa = false;
  fa3::BwdWorkspace workspace;
  fa3::BwdVarlenParams args{};  // the table filled by plan_bwd_varlen, the rest by encode_bwd_varlen_args
  bool local = false;           // the main kernel is a local one: it takes BwdVarlenLocalParams
  fa3::BwdLocal local_args{};   // {args, local_args} (src/sm90/fa3_bwd_local.cu)
};
// The sequence table: the sequences with a query row or a key, in launch order (most query blocks
// first, then most key blocks; ties keep the caller's order), with their padded query-block and
// key-block prefixes. cu_q/cu_k: valid host prefix sums of num_seqs + 1 entries; used_q/used_k as
// build_varlen_table's (the lengths the table gives each sequence; nullptr: cu_seqlens').
void build_bwd_varlen_table(const int32_t* cu_q, const int32_t* cu_k, int num_seqs, int block_m, int block_n,
                            fa3::BwdVarlenTable* table, const int32_t* used_q = nullptr,
                            const int32_t* used_k = nullptr);
// Chooses the kernels (BwdOptions::kernel: a row of family kFa3BwdVarlen; dq_order kAuto or
// kAscending), builds the table and sizes the launches and the workspace. `p` valid
// (validate_bwd_varlen_shape and _buffers), not empty. No CUDA call.
flashptx_status plan_bwd_varlen(const flashptx_bwd_varlen_params& p, const BwdOptions& opt, const Device& dev,
                                BwdVarlenPlan* plan, std::string* err);
// The workspace flashptx_bwd_varlen_workspace_size reports: the layout of plan_bwd_varlen with every
// sequence's padding at its bound (total / block + num_seqs blocks), so that it depends on the
// totals only. No CUDA call.
flashptx_status bwd_varlen_workspace_bytes(const flashptx_bwd_varlen_params& p, int64_t* bytes, std::string* err);
// Carves the workspace and encodes the tensor maps of the packed tensors and the scalars.
flashptx_status encode_bwd_varlen_args(const flashptx_bwd_varlen_params& p, BwdVarlenPlan* plan, std::string* err);
// The launch sequence.
flashptx_status launch_bwd_varlen(const flashptx_bwd_varlen_params& p, BwdVarlenPlan* plan, cudaStream_t stream,
                                  std::string* err);

// Raises the kernel's dynamic shared-memory limit and launches it with `args` as its one parameter.
// Records the launch for last_launch().
flashptx_status launch(const Launch& l, void* args, cudaStream_t stream, std::string* err);

// The last launch of this host thread (tests check that kernel_info describes what launched).
Launch last_launch();

}  // namespace flashptx
