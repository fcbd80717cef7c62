// CPU oracle of the FA4 forward (docs/PROTOCOLS.md, "The FA4 roles"; `flashptx ledger 0x08`): the feeds-and-speeds ledger with instruction ceilings,
// the sensitivity table, the d* crossover, the beta23 warp roles and register targets, split P,
// the startup/steady/drain MMA issue order with its handoff edges, and the H/L exponential
// critical-section rule. Every checker reports a named reason.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace flashptx::models::fa4fwd {

// ---- feeds and speeds ---------------------------------------------------------------------------
struct Rates {
  double mma = 8192;  // BF16 FLOPs / cycle / SM (paper model)
  double smem = 128;  // bytes / cycle / SM
  double exp = 16;    // MUFU exponentials / cycle / SM
};

struct Ledger {
  int64_t m, n, d;
  int64_t flops_mma;      // 4 M N d
  int64_t i_qk, i_pv;     // instruction grids (ceilings kept)
  int64_t b_qk, b_pv;     // SMEM bytes
  double t_mma, t_smem, t_exp;
  double lower_bound() const;  // max of the three: optimistic, not a runtime
  double serial() const;       // sum: no-overlap subtotal, not an upper bound
  std::string largest() const; // "MMA", "SMEM", "exp", "MMA and exp", ...
};

// b: bytes per element (2 for BF16). keep_ceilings=false is the "drop instruction ceilings"
// mutation (uses the divisible-tile formula 3bMNd/128 / R_SMEM).
Ledger ledger(int64_t m, int64_t n, int64_t d, int64_t b = 2, Rates r = {}, bool keep_ceilings = true);
double d_star(Rates r = {});  // R_MMA / (4 R_exp)

struct SensitivityRow { const char* mutation; Rates rates; };
const std::vector<SensitivityRow>& sensitivity_rows();

// ---- roles and register targets ------------------------------------------------------------------
// The kernel's own role table (src/protocol/fa4_plan.h role_spec, which src/sm100/fa4_fwd.cuh
// dispatches on): beta23's warp ids and setmaxnreg targets.
struct Role { const char* name; int first_warp, last_warp; int setmaxnreg; };
const std::vector<Role>& roles();  // 16 warps, ids 0..15
// True when the roles cover 0..15 exactly once.
bool roles_partition_16(const std::vector<Role>& r);
// 2 * softmax + correction + other = 512 (normalized per-thread budget of the source targets).
int register_budget(int softmax, int correction, int other);

// ---- split P ------------------------------------------------------------------------------------
int p_early_columns(int n);  // 32 * floor((3N/4) / 32)

// ---- startup / steady / drain issue order ------------------------------------------------------
enum class Op : uint8_t {
  kWaitQ, kWaitK, kWaitV,            // load -> MMA (pipeline_q, pipeline_kv)
  kIssueQK, kPublishS,               // MMA -> softmax (pipeline_s_p_o, S side)
  kWaitPEarly, kWaitORescaled,       // softmax 75% P / correction rescaled O -> MMA
  kIssuePV, kWaitPFinal, kCompletePV,// PV issue, last 25% of P, PV completion
  kPublishO, kReleaseQ,              // drain: final O to correction, Q stage released (stage -1: both)
};
struct Event {
  Op op;
  int stage;  // 0 = H, 1 = L (-1: none)
  int block;  // K/V block (-1: none)
  bool operator==(const Event& o) const { return op == o.op && stage == o.stage && block == o.block; }
};

enum class FwdError : uint8_t {
  kOk = 0,
  kQkBeforeQ,            // QK issued before Q landed
  kQkBeforeK,            // QK issued before its K stage landed
  kSOverwriteWhileLive,  // QK into S_i before the previous PV on the aliased P_i completed
  kPvBeforeS,            // PV issued for a block whose S was never published
  kPvBeforePEarly,       // PV issued before softmax signalled the first 75% of P
  kPvBeforeCorrection,   // PV issued before correction released rescaled O
  kPvBeforeV,            // PV issued before its V stage landed
  kPvCompleteBeforePFinal,  // PV treated complete on the early signal only
  kMissingDrain,         // a (stage, block) PV never completed, or O never published
  kQReleasedEarly,       // Q released while a QK on it may still be issued
  kExpOverlap,           // H and L exponential critical sections overlap
  kBarrierRoles,         // a hand-off backed by a barrier whose producer / consumer is another role
  kBarrierCount,         // a barrier's arrival count is not one arrival per producing agent
};
const char* fwd_error_name(FwdError e);

// The pinned beta23 MMA-warp order for q_stage = 2 and `blocks` K/V blocks.
std::vector<Event> issue_order(int blocks);
// The order the kernel's MMA thread walks (fa4::mma_tile_schedule, the function src/sm100/fa4_fwd.cuh
// runs), as events: unsplit P (one p_ready per PV: the early and the final signal are one phase), Q
// released per stage after its last QK, a PV's completion observed before the next QK into the aliased
// S/P slot (wait_s_free) and, for the tile's last PVs, by the correction (o_ready). `drop` removes one
// kind of event from the walk (the mutation tests; kCount: none).
std::vector<Event> kernel_issue_order(int blocks, Op drop = static_cast<Op>(255));

// The kernel's barrier plan (fa4_plan.h barrier_spec / arrival_count) against its roles and its walk:
// every hand-off event of kernel_issue_order is backed by a barrier whose producer and consumer are the
// roles the event names, and every per-warp barrier counts one arrival per warp of its producing role
// (twice on a pair's leader where the peer's warps arrive too). `counts[b]`: the arrival counts to
// check (nullptr: the kernel's, fa4::arrival_count), so a test can hand it a wrong table.
FwdError check_barrier_plan(int cta_group, int rank, const uint32_t* counts = nullptr);
// Just the tensor issues, e.g. "QK_H_0", "QK_L_0", "PV_H_0", "QK_H_1", ...
std::vector<std::string> mma_order(const std::vector<Event>& ev);
FwdError check_order(const std::vector<Event>& ev, int blocks);

// Schedule mutations of the forward failure matrix, each with its required reason.
struct Mutation { const char* name; FwdError expected; };
const std::vector<Mutation>& order_mutations();
std::vector<Event> mutated_order(size_t i, int blocks);

// ---- H/L exponential critical sections ---------------------------------------------------------
struct ExpSection { int stage; int block; double begin, end; };
// Paper schedule at 128^3: each softmax's MUFU section takes T_exp(128,128) = 1024 cycles; H and L
// alternate, L's section following H's, while the other tile's MMAs run.
std::vector<ExpSection> paper_exp_sections(int blocks);
FwdError check_exp_sections(const std::vector<ExpSection>& s);

// ---- evidence: what each number of this model is, and what it is not ------------------------------
// The forward failure matrix's five evidence rows (docs/PROTOCOLS.md, "The FA4 roles",
// its evidence rows): a number of this model or of the kernel's source described as something it is not.
// Each check takes the claim and recomputes what the number is from the object that produced it.
enum class EvidenceError : uint8_t {
  kOk = 0,
  kSumIsNoOverlap,        // the sum of the resource times called an overlapped (optimized) runtime
  kModelCalledMeasured,   // a number the model computes called a measured runtime
  kWorkRowsCollapsed,     // paper M used for a work group whose q_stage x cta_group x 128 differs
  kTargetNotCompiled,     // a setmaxnreg target called the compiled register count
  kOrderNotTimeline,      // an issue order called a timeline: the same order under different times
};
const char* evidence_error_name(EvidenceError e);

// A runtime claim for one tile: `cycles`, said to be an overlapped runtime (overlapped) and/or a
// measurement (measured). A sum of the three terms is the no-overlap subtotal; any number equal to
// one the ledger computes is the model's, not a measurement.
struct RuntimeClaim { double cycles; bool overlapped; bool measured; };
EvidenceError check_runtime_claim(const Ledger& l, const RuntimeClaim& c);

// Query rows of one work group claimed for (q_stage, cta_group): q_stage x cta_group x 128
// (fa4::kStageRows; fa4::tile_rows for the kernel's q_stage = 2).
int work_group_rows(int q_stage, int cta_group);
EvidenceError check_work_group_rows(int claimed_rows, int q_stage, int cta_group);

// The registers of a compiled kernel, read from its golden listing (sass_golden/sm_100a/*.sass): the
// per-thread count ptxas allocated at launch (the "# resources: REG:n" line) and the setmaxnreg
// operands of its USETMAXREG instructions, in listing order. launch_regs < 0: no resources line.
struct CompiledRegs { long launch_regs = -1; std::vector<int> setmaxnreg; };
CompiledRegs compiled_regs(const std::string& listing_text);
// "The compiled register count of a softmax thread is `claimed`": holds when claimed is what ptxas
// allocated at launch; fails as kTargetNotCompiled when it is one of the setmaxnreg requests instead.
EvidenceError check_compiled_register_claim(int claimed, const CompiledRegs& c);

// "The kernel's issue order (kernel_issue_order) is a timeline": an order carries no durations. The
// check computes the lower bound of the same walk under each rate set of the sensitivity table; the
// claim fails when one order stands for more than one modelled time. `bounds` gets them.
EvidenceError check_order_as_timeline(int blocks, std::vector<double>* bounds);

}  // namespace flashptx::models::fa4fwd
