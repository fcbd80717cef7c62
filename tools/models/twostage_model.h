// FA3 two-stage WGMMA-softmax pipeline (docs/PROTOCOLS.md, "The two-stage overlap"): schedule
// bound, register liveness, and the wait_group legality checker over event traces; see
// twostage_model.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace flashptx::trace_render { struct RawTrace; }

namespace flashptx::models::twostage {

// ---- schedule (normalized times M_Q, E, M_V) --------------------------------------------------------
double serial_time(int J, double mq, double e, double mv);      // J (M_Q + E + M_V)
double two_stage_time(int J, double mq, double e, double mv);   // timed peeled schedule
double two_stage_formula(int J, double mq, double e, double mv);  // M_Q+E+(J-1)[M_Q+max(E,M_V)]+M_V

// ---- liveness ledger ------------------------------------------------------------------------------------
struct Liveness {
  int64_t o_bytes, s_bytes, p_bytes, total_bytes;  // CTA-wide
  double o_words, s_words, p_words, total_words;   // average 32-bit words per consumer thread
};
Liveness liveness(int br, int bc, int dv, int groups, int p_bytes);
int64_t three_stage_extra_bytes(int br, int bc, int in_bytes);  // B_r B_c sizeof(in) + B_r sizeof(float)

// ---- the FA3 paper's Table 2 ablation (source-reported, H100, non-causal FP16 forward) -------------
// Times in ms at batch 4, seqlen 8448, 16 heads, d = 128; throughput recomputed from the dense
// forward numerator 4 B H S^2 d (tools/models/flops.h) and compared with the paper's rounded column.
struct AblationRow { const char* config; double ms; double paper_tflops; };
struct AblationShape { double batch, seqlen, heads, d; };
constexpr AblationShape kTable2Shape = {4, 8448, 16, 128};
const std::vector<AblationRow>& table2_ablation();
double table2_flops();                   // 4 * 4 * 8448^2 * 16 * 128
double table2_tflops(double ms);         // table2_flops() / (ms 1e-3) / 1e12

// ---- wait_group legality on event traces ----------------------------------------------------------------
enum class Ev {
  kIssueQK,    // wgmma.mma_async of QK(j): writes S_j, reads K_j
  kIssuePV,    // wgmma.mma_async of PV(j): reads register P_j and V_j, accumulates into O
  kCommit,     // wgmma.commit_group: every uncommitted WGMMA becomes the newest group
  kWaitGroup,  // wgmma.wait_group(n): all but the newest n committed groups are complete
  kReadS,      // softmax reads S_j
  kWriteP,     // convert S_j into the persistent P register fragment (overwrites P_(j-1))
  kTouchO,     // rescale, read or store O
  kReleaseK,   // consumer_release of K_j
  kReleaseV,   // consumer_release of V_j
};
struct Event { Ev ev; int j = 0; int n = 0; };

enum class Violation {
  kNone,
  kReadSInFlight,       // score read before a wait that covers its QK group
  kPOverwriteInFlight,  // P register fragment overwritten while a PV that reads it is pending
  kOTouchInFlight,      // O touched while a PV accumulating into it is pending
  kKReleaseInFlight,    // K stage released before its QK completed
  kVReleaseInFlight,    // V stage released before its PV completed
  kUncommittedAtEnd,    // a WGMMA was never committed and waited
};
const char* violation_name(Violation v);

struct Verdict {
  Violation violation = Violation::kNone;
  int at = -1;               // event index
  std::string detail;
  bool overlap = false;      // some score was read while a PV group was still pending
};
Verdict check_trace(const std::vector<Event>& trace);

enum class Variant {
  kCanonical,           // beta23 intra-WG overlap order
  kWait0ForWait1,       // wait_group(0) where (1) was intended: legal, overlap lost
  kReadSBeforeWait,     // softmax reads S_j right after commit
  kWritePBeforeWait0,   // P_j converted before wait_group(0)
  kRescaleOInFlight,    // O rescaled between PV issue and wait_group(0)
  kReleaseKEarly,       // K_j released before wait_group(1)
  kReleaseVEarly,       // V_(j-1) released before wait_group(0)
  kPVCommittedFirst,    // PV(j-1) committed before QK(j): wait_group(1) now proves PV, not QK
};
std::vector<Event> pipeline_trace(int J, Variant v);
std::string format_event(const Event& e);

// ---- the overlap at run time: the failure lab the listing cannot see ------------------------------------
// The committed H200 trace of the d128 forward (tools/trace/h200-d128-s8192-b2-h16.json.gz): each
// consumer's PV(j-1) retires a short wait after softmax(j) ends, much shorter than a drain PV takes
// alone (trace_render::own_overlap). The mutation `pv_after_softmax` rewrites that trace as a run in
// which the listing's order held but PV(j-1) only started when softmax(j) ended (the tensor pipe
// busy elsewhere, say): every steady PV retires one lone-PV time after its softmax, later stamps of
// the lane shift by the same amount. The instruction order, and so the kernel's .check, are unchanged.
inline constexpr const char* kCommittedTrace = "tools/trace/h200-d128-s8192-b2-h16.json.gz";  // under FLASHPTX_ROOT
trace_render::RawTrace pv_after_softmax(const trace_render::RawTrace& t);

}  // namespace flashptx::models::twostage
