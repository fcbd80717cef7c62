// CPU oracle of the FA4 backward (docs/PROTOCOLS.md, "The backward relay" and "Deterministic
// writer order"; `flashptx ledger 0x0A`): the five-MMA cycle ledger (1CTA and 2CTA), the softmax
// backward algebra on a tiled fp64 model against direct formulas, the 2CTA dS repack and its wrong
// variants, the DSMEM relay event order, TMEM live intervals, and deterministic writer orders.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "src/protocol/fa4_bwd_pair_plan.h"
#include "src/protocol/tmem_plan.h"
#include "src/protocol/writer_order.h"

namespace flashptx::models::fa4bwd {

// ---- the cycle ledger ----------------------------------------------------------------------------
struct Ledger {
  double mma, smem_operands, ds_write, ds_exchange, dq_write_read, exp;
  double smem_total() const { return smem_operands + ds_write + ds_exchange + dq_write_read; }
  double lower_bound() const;  // max(MMA, SMEM total, exp)
};
Ledger ledger_1cta(double m, double n, double d);
Ledger ledger_2cta(double m, double n, double d);  // the paper's normalized pair ledger
// dQ atomic elements for one CTA pair's M_pair x (2 N partitions) work, d columns.
int64_t dq_atomic_elements(int cta_group, int64_t m_pair, int64_t d);

// ---- the MMA graph of one backward tile (failure lab: counting only four MMAs) ------------------
// Each MMA names its result and its two operands. The forward keeps O and the LSE, not S or P, so
// the backward must recompute S; P and dS are elementwise (P from S and the LSE; dS from P, dP and
// delta), not MMAs. check_mma_graph walks the list in order and names the first operand nobody made.
struct BwdMma { const char* result; const char* a; const char* b; };
std::vector<BwdMma> bwd_mma_graph(bool recompute_scores);  // false: the four-MMA mutation
// "ok" or "<x> needs <y>, which no MMA produces and the forward does not keep"
std::string check_mma_graph(const std::vector<BwdMma>& g);
// FLOPs of the graph for an M x N tile at head dim d (2 M N d per MMA), over the forward's 4 M N d.
double bwd_over_fwd_flops(const std::vector<BwdMma>& g);

// ---- warp roles (the pinned FA4 beta's flash_bwd_sm100.py, d = 128; the article's 0x0A) ----------
// 16 warps per CTA; setmaxnreg acts on whole warpgroups (warps 4w .. 4w+3), so a warpgroup's target
// is the largest of its warps' role targets. regs_1cta / regs_2cta: 0 where the source gives none.
struct BwdRole { int first_warp, last_warp; const char* role; const char* owns; int regs_1cta, regs_2cta; };
const std::vector<BwdRole>& bwd_roles();
bool bwd_roles_partition_16();                 // every warp 0..15 in exactly one role
int bwd_warpgroup_target(int warpgroup, int cta_group);   // max target over the warpgroup's roles
int bwd_register_budget(int cta_group);        // sum of the four warpgroup targets (per thread slot)

// The article's values for its own (unpublished) random fixtures, printed beside ours.
struct ArticleBwdFixture { double tiled_dk, tiled_dq, tiled_dv, repack_exact, omit_peer, wrong_half, swap_k; };
constexpr ArticleBwdFixture kArticleBwd = {5.55e-17, 1.11e-16, 1.11e-16, 0.0, 0.6799, 1.2337, 1.4536};

// ---- dense fp64 algebra --------------------------------------------------------------------------
struct Mat {
  int rows = 0, cols = 0;
  std::vector<double> v;
  Mat() = default;
  Mat(int r, int c) : rows(r), cols(c), v(static_cast<size_t>(r) * c, 0.0) {}
  double& operator()(int r, int c) { return v[static_cast<size_t>(r) * cols + c]; }
  double operator()(int r, int c) const { return v[static_cast<size_t>(r) * cols + c]; }
};
double max_abs_diff(const Mat& a, const Mat& b);
Mat random_mat(int r, int c, uint64_t seed);

struct Problem { Mat q, k, v, d_o; double alpha; };
Problem random_problem(int m, int n, int d, uint64_t seed);

struct Direct {  // full-matrix formulas
  Mat s, p, o, dp, ds, dq, dk, dv;
  std::vector<double> lse, delta_rowsum, delta_rowdot;
};
Direct direct_backward(const Problem& pr);

struct Grads { Mat dq, dk, dv; };
// FA2/FA4-style tiled backward: P rebuilt from LSE per (bm x bn) tile, delta = rowdot(dO, O),
// five tile contractions, dQ/dK/dV accumulated across tiles.
Grads tiled_backward(const Problem& pr, const Mat& o, const std::vector<double>& lse, int bm, int bn);

// ---- 2CTA repack ---------------------------------------------------------------------------------
// One CTA's assembled dQ operand: for each owned output row r, segments of dS[r + row_offset,
// col_begin:col_end) paired with K rows [k_begin, k_begin + width).
struct Segment { int row_offset, col_begin, col_end, k_begin; };
struct CtaRepack { int row_begin, row_end; std::vector<Segment> segs; };
enum class RepackVariant : uint8_t { kExact, kOmitPeerHalf, kWrongRowHalf, kSwapPeerKOrder };
enum class RepackError : uint8_t { kOk = 0, kMissingPeerHalf, kWrongRowHalf, kKOrderMismatch };
const char* repack_error_name(RepackError e);
// The pair holds dS [M x 2N] column-partitioned (CTA c owns columns [cN, cN+N)).
CtaRepack repack(RepackVariant v, int cta, int m, int n);
RepackError check_repack(const CtaRepack& r, int m, int n);
// dQ rows [row_begin,row_end) computed from the repack, compared against the direct dQ.
double repack_dq_error(const CtaRepack& r, const Mat& ds_full, const Mat& k_full, double alpha,
                       const Mat& dq_direct);
int64_t exchange_bytes_pair(int64_t m, int64_t n, int64_t bytes_ds);  // 2 * (M/2) * N * b

// ---- DSMEM relay event order -------------------------------------------------------------------
enum class RelayOp : uint8_t {
  kWriteXchg, kExpectTx, kRemoteCopy, kRelayWait, kRelayArrive, kMmaWait, kMmaDQ, kPhaseToggle
};
struct RelayEvent { int cta; RelayOp op; int kv_column; };
enum class RelayError : uint8_t {
  kOk = 0,
  kCopyBeforeWrite,    // remote copy of a half not yet written
  kMissingExpectTx,    // completion accounting lost: the receiver never expected the bytes
  kRelayBeforeCopy,    // relay observed a transaction that was never issued by the peer
  kMissingRelayArrive, // MMA waited on a leader event nobody arrived on (visibility race)
  kMmaWithoutWait,     // dQ MMA issued without waiting for the relay
  kPhaseDisagree,      // one CTA advanced the phase and the other did not
  kPairMismatch,       // the two CTAs work on different sparse K/V columns
};
const char* relay_error_name(RelayError e);
std::vector<RelayEvent> relay_trace(int kv_column = 0);
RelayError check_relay(const std::vector<RelayEvent>& t);
struct RelayMutation { const char* name; RelayError expected; };
const std::vector<RelayMutation>& relay_mutations();
std::vector<RelayEvent> mutated_relay(size_t i);

// ---- TMEM live intervals ---------------------------------------------------------------------------
std::vector<flashptx::tmem::TmemObject> tmem_objects_1cta();
std::vector<flashptx::tmem::TmemObject> tmem_objects_2cta();
std::vector<flashptx::tmem::TmemObject> tmem_objects_1cta_forced_concurrent();  // the mutation
// Failure lab: widths inferred from offsets. The 2CTA map's offsets (S/P at 0, dQ(prev) at 64) say
// nothing about widths; S/P is 64 columns per CTA only because the pair shares one MMA and each CTA
// holds its partition of the accumulator (1CTA: 128 columns). This is the 2CTA map with S/P sized
// for an MMA issued by one CTA alone (cta_group 1): the offsets are unchanged, the columns collide.
std::vector<flashptx::tmem::TmemObject> tmem_objects_2cta_offsets_1cta_widths();
std::string first_illegal_alias(const std::vector<flashptx::tmem::TmemObject>& objs);

// ---- the kernel's own TMEM map and schedule (src/protocol/fa4_bwd_plan.h) --------------------------
// The 1-CTA kernel (src/sm100/fa4_bwd.cuh, never executed: no Blackwell GPU) walked through
// fa4bwd::bwd_tile_schedule for J query blocks, each visitor call one logical time step; the columns
// are fa4bwd::BwdMmaPlan's. S^T(j) lives from its MMA to p_ready (the compute warps have read it), P^T
// (two 32-column halves over S^T's columns) from p_ready to the commit after dV, dP^T from its MMA to
// ds_ready, dQ (over dP^T's columns) from its MMA to the reduction's dq_free, dV and dK from their first
// MMA to the end. The mutations: dQ issued before the ds_ready wait; dP^T(j+1) issued without the
// dq_free wait (dQ(j) is then only known to be read by the end of step j+1).
enum class KernelTmemMutation : uint8_t { kNone, kDqBeforeDsReady, kNoDqFreeWait };
std::vector<flashptx::tmem::TmemObject> kernel_tmem_objects(int head_dim, int J, KernelTmemMutation m);


// ---- the 2-CTA kernel's barrier protocol (src/protocol/fa4_bwd_pair_plan.h) -----------------------
// Both CTAs of a pair (src/sm100/fa4_bwd_pair.cuh, never executed: no Blackwell GPU) run as processes
// over modelled mbarriers (arrival count, transaction bytes, completed phases; a wait on parity P passes
// once the phase of parity P has completed): the leader's MMA thread walks fa4bwd::bwd_tile_schedule;
// the loaders, relays, compute warpgroups and reduction warpgroups of each CTA are written here after
// the kernel's roles. The barriers are fa4bwd::pair::PBar with the counts of pair_arrival_count
// (`counts`: a table to use instead, counts[rank][bar]), the byte counts the loaders expect are the
// plan's, the copies the TMA boxes and the exchange actually move. Every arrival carries the phase it
// belongs to (the step); one that lands in another phase is a protocol error even when nothing hangs.
// The mutations drop or change one signal of the kernel.
enum class PairProtocolError : uint8_t {
  kOk,
  kDeadlock,         // some process waits on a phase no remaining arrival can complete
  kWrongPhase,       // an arrival or transaction landed in a phase other than its own
  kBytesMismatch,    // a phase's expect_tx differs from the bytes its copies move
  kLeftOver,         // a barrier ends with a partial phase (arrivals or bytes that nobody waited for)
};
const char* pair_protocol_error_name(PairProtocolError e);
enum class PairMutation : uint8_t {
  kNone,
  kNoRelayOfXFull,     // the relay does not forward x_full to the leader's ds_ready
  kNoExpectTx,         // the sender copies its dS half without the arrive.expect_tx on the peer's x_full
  kDsFreeLeaderOnly,   // ds_free committed to the leader only (no multicast)
  kNoQFullRelay,       // the peer's relay does not forward q_full
  kNoReductionArrive,  // the reduction does not arrive on qdo_empty (its staging read)
  kCount
};
const char* pair_mutation_name(PairMutation m);
PairProtocolError simulate_pair_protocol(int J, PairMutation m = PairMutation::kNone,
                                         const uint32_t (*counts)[::flashptx::fa4bwd::pair::kPBarCount] = nullptr);

// ---- writer orders ---------------------------------------------------------------------------------
// The worked example: contributions [1e8, 1, -1e8, 3] summed in FP32 in a given order.
float fp32_sum_in_order(const std::vector<float>& contrib, const std::vector<int>& order);
const std::vector<float>& fp32_example();

struct Writer { int id; int lock; };
struct SimResult {
  bool deadlock = false;
  std::vector<int> order;  // ids in execution order
  int completed = 0;
};
// Runs writers against an OrderedSemaphore. `slots` lock values exist in the declared order; any
// slot without a writer is bridged only when tail_bridge is set.
SimResult simulate_writers(const std::vector<Writer>& present, int slots, bool tail_bridge);
// Causal SPT example: valid physical writers [1,2,3], n_block_max_for_m_block = 4.
std::vector<Writer> causal_spt_writers();

// Deterministic dQ (fa4bwd::key_block, fa4bwd::dq_lock): the writers of dQ tile m are the key blocks
// whose query range contains m; simulate_writers runs them under the kernel's locks. `wrong_span`: the
// causal lock counted over all key blocks instead of those that reach tile m (the failure lab).
SimResult kernel_dq_writers(int seqlen_q, int seqlen_k, bool causal, int m_block, bool wrong_span);
// The same for the 2-CTA kernel (fa4bwd::pair::pair_key_block, pair_dq_lock): the writers of dQ tile m
// are both CTAs of every pair that walks it (their halves of the rows), in the grid's pair order.
SimResult kernel_pair_dq_writers(int seqlen_q, int seqlen_k, bool causal, int m_block);

}  // namespace flashptx::models::fa4bwd
