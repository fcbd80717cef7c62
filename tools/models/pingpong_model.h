// FA3 pingpong: the named-barrier token ring of the consumer warpgroups (docs/PROTOCOLS.md,
// "Pingpong"); see pingpong_model.cpp.
#pragma once
#include <string>
#include <vector>

namespace flashptx::models::pingpong {

enum class Mutation {
  kNone,
  kNoBootstrap,          // consumer 0 never deposits the bootstrap half-credit
  kHalfParticipants,     // bar.sync/bar.arrive with 128 instead of 256 participants
  kOverParticipants,     // 384 participants: the two halves can never reach the count
  kPhysicalId,           // sync on B0 + g_phys (not minus the producer WG); arrive on the local id
  kSkipConditional,      // group `group` skips one sync/arrive pair (handoff `handoff` of its tile)
  kNoFinalArrive,        // group `group` omits the non-overlap final arrive of tile `tile`
  kReprimePerTile,       // the bootstrap half-credit is deposited at every work tile
};

enum class Fault {
  kNone,
  kNoBootstrap,             // deadlock: no credit anywhere and none was ever deposited
  kSelfCompletion,          // a generation completed with one 128-thread party (count 128)
  kDuplicateCredit,         // a generation completed by arrivals alone: two half-credits, no waiter
  kCountMismatch,           // the two halves of a generation passed different participant counts
  kParticipantsUnreachable, // deadlock: a generation expects more threads than the ring supplies
  kIdMismatch,              // deadlock: a credit rests on a barrier nobody waits on
  kGenerationDrift,         // a sync paired with an arrive of the wrong handoff rank
  kTokenStranded,           // the token stays owned by a group: its pass_turn never came
  kTokenNotHome,            // at a work-tile boundary the token is not the one half-credit on B_0
  kDeadlock,
};
const char* fault_name(Fault f);

struct Config {
  int groups = 2;
  bool intra_overlap = false;    // false: J+1 handoffs per tile; true: max(J-1, 0)
  std::vector<int> tiles = {3};  // J per persistent work tile
  Mutation mutation = Mutation::kNone;
  int group = 1, tile = 0, handoff = 1;
};

struct Result {
  Fault fault = Fault::kNone;
  std::string detail;
  std::vector<int> syncs, arrives;        // per group, scheduler calls (bootstrap not counted)
  bool token_conserved = true;            // pending credits + owners == 1 after every event
  std::vector<std::string> events;        // "WG0 sync(B2) completes: WG0 owns the token", ...
};

Result simulate(const Config& cfg);

// The compile-time admission of the named scheduler in the pinned CuTe FA3 forward
// (flash_fwd_sm90.py; the article's 0x04): the token ring is built only for G >= 2 consumer warpgroups with head dimension <= 128 when intra-WG overlap is
// on, and only for exactly G = 2 when it is off.
bool use_scheduler_barrier(int num_wg_mma, bool intra_wg_overlap, int tile_hdim);

// Flow-shop bounds: N consumer quanta, tensor bundle M then softmax E each.
double flow_shop_makespan(int n, double m, double e);  // M + E + (N-1) max(M, E), by recurrence
double flow_shop_speedup(int n, double m, double e);   // N (M + E) / makespan

// The FA3 paper's source-reported pingpong ablation (FP16 forward, d = 128, S = 8192, H100):
// about 570 TFLOP/s without the scheduler, 620-640 with it. Same FLOPs, so the speedup is the
// throughput ratio.
struct PingpongClaim { double without_tflops, with_lo_tflops, with_hi_tflops; };
constexpr PingpongClaim kPaperPingpong = {570.0, 620.0, 640.0};
inline double claim_speedup(double with_tflops, double without_tflops) { return with_tflops / without_tflops; }

}  // namespace flashptx::models::pingpong
