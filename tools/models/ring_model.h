// FA3 K/V mbarrier rings: the CPU oracle (docs/PROTOCOLS.md, "Hopper prerequisites" and "The
// K/V rings"; `flashptx ledger 0x02` and `0x03`); see ring_model.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace flashptx::models::ring {

// ---- one mbarrier, with the PTX phase/parity semantics ------------------------------------------
// A phase completes when its pending arrival count reaches zero AND its transaction count is zero;
// the barrier then re-arms for the next phase. try_wait.parity(p) passes once the phase of parity p
// has completed, i.e. while the current (incomplete) phase has the other parity. A fresh barrier is
// in phase 0, so waiting parity 1 passes at once: "the phase before the first counts as complete".
struct MBarrier {
  uint32_t expected = 1;   // arrivals per phase (mbarrier.init count)
  uint32_t pending = 1;    // arrivals still missing in the current phase
  int64_t tx = 0;          // outstanding transaction bytes of the current phase
  uint32_t completed = 0;  // phases completed so far; current phase index
  void init(uint32_t count) { expected = pending = count; tx = 0; completed = 0; }
  void expect_tx(int64_t bytes) { tx += bytes; }
  void arrive() { --pending; maybe_complete(); }
  void arrive_expect_tx(int64_t bytes) { expect_tx(bytes); arrive(); }
  void complete_tx(int64_t bytes) { tx -= bytes; maybe_complete(); }
  bool try_wait_parity(uint32_t parity) const { return (completed & 1u) != parity; }
  void maybe_complete() {
    if (pending == 0 && tx == 0) { ++completed; pending = expected; }
  }
};

// ---- the protocol simulator -----------------------------------------------------------------------
enum class Mutation {
  kNone,
  kResetStatePerTile,      // producer and consumer re-create their ring states at every work tile
  kSkipBlock,              // the producer skips block (tile, r) that the consumer still expects
  kMissingVRelease,        // the consumer leaves ordinal (tile, r) without releasing V
  kReleaseKBeforeWait,     // release K before the QK wait_group
  kReleaseVBeforeWait,     // release V before the PV wait_group
  kAdvanceWithoutRelease,  // the consumer advances its read state at (tile, r) without releasing K or V
  kReleaseUnproduced,      // the consumer releases one extra, never-produced K stage after tile `tile`
  kNoParityConsumer,       // consumer full waits ignore parity: any completed phase passes
  kNoParityProducer,       // producer empty waits ignore parity: any completed phase (or fresh) passes
  kNoProducerTail,         // the producer exits without pipeline_v.producer_tail
  kNamedBarrierAsReadiness,// at (tile, r) the consumer takes its turn on the pingpong named barrier
                           // as proof that K has landed and skips K's full wait: issue order is not
                           // payload completion
  kTailAsPayload,          // the producer tail arms the full V barrier and issues a dummy copy at
                           // each of its s acquires, as if the tail were data
};

enum class Fault {
  kNone,
  kStaleRead,              // a consumer read a slot holding an older generation, or one still in flight
  kPayloadMismatch,        // the slot holds the right generation count but another logical block
  kOverwriteLive,          // the producer wrote a slot that has unreleased or in-flight readers
  kReleaseInFlight,        // a consumer released a slot its own WGMMA was still reading
  kReleaseUnproduced,      // a release of an ordinal whose full generation this consumer never passed
  kMissingCommit,          // deadlock: a consumer waits a full generation that is never committed
  kMissingVRelease,        // deadlock: producer waits an empty V generation the consumer skipped (K released)
  kMissingKRelease,        // deadlock: the same on K
  kAdvanceWithoutRelease,  // deadlock: the consumer advanced past an ordinal releasing neither K nor V
  kDanglingArrive,         // a consumer release arrived after the producer exited (no producer tail)
  kDeadlock,               // deadlock of another shape
  kCountMismatch,          // finished, but A = C = W = R = J or 0 <= P - R <= s fails
  kFalseFullGeneration,    // finished with more full generations committed than blocks consumed:
                           // a commit no consumer waits for (a tail that carried a payload)
};
const char* fault_name(Fault f);

struct Config {
  int stages = 2;
  int consumers = 1;              // consumer warpgroups; each empty phase needs one release from each
  std::vector<int> tiles = {5};   // J of each persistent work tile, in order
  int tma_latency = 20;           // ticks from TMA issue to complete_tx
  int64_t tx_bytes = 32768;       // X_K = X_V = 128 * 128 * 2: one bf16 128 x 128 tile
  Mutation mutation = Mutation::kNone;
  int mutation_tile = 0;
  int mutation_r = 0;
};

struct Counters { int A = 0, C = 0, W = 0, R = 0; int max_in_flight = 0; int min_in_flight = 0; };

struct Result {
  Fault fault = Fault::kNone;
  std::string detail;
  Counters k, v;                  // per ring: acquires, commits, consumer-0 waits, completed empty phases
  int ticks = 0;
};

Result simulate(const Config& cfg);

// ---- (stage, phase) table (s=2, J=5) ---------------------------------------------------------------
struct CoordRow { int r, n, stage, consumer_raw, consumer_parity, producer_raw, producer_parity; };
// Coordinates of traversal ordinals 0..J-1 (dense, right to left: n_r = J-1-r), from RingState.
std::vector<CoordRow> coordinate_table(int stages, int J);

// ABA probe: stage 0 has completed generation 0 only; a consumer now waits for generation 1 of
// stage 0 (ordinal r = s). Returns true if the wait passes (the stale generation is accepted).
bool aba_wait_passes(int stages, bool use_parity);

// ---- wait-for graph ------------------------------------------------------------------------------
// Nodes P_r (produce), C_r (consume), R_r (release) for r < J. produce(r) waits release(r - lead)
// when r >= lead (lead = s for the correct ring: the producer starts one generation ahead);
// consume(r) waits produce(r); release(r) follows consume(r). Returns true if acyclic.
bool wait_for_graph_acyclic(int J, int lead);
// The chain followed backward from P_r: the ordinals visited (r, r-s, r-2s, ...), base case < s.
std::vector<int> wait_chain(int r, int stages);

// ---- finite-J overlap ------------------------------------------------------------------------------
// Timed two-resource schedule over an s-stage ring: load(r) starts after load(r-1) and after the
// release of r-s; compute(r) after load(r) and compute(r-1); release(r) = end of compute(r).
int64_t overlap_makespan(int stages, int J, int64_t t_load, int64_t t_compute);
int64_t overlap_formula(int J, int64_t t_load, int64_t t_compute);  // T_L + T_C + (J-1) max

// ---- shared-memory and register ledgers ----------------------------------------------------------
struct SmemLedger { int64_t q, k, v, p, no_alias, alias, barriers, barrier_bytes; };
SmemLedger smem_ledger(int block_m, int block_n, int d, int d_v, int bytes, int stages, bool p_in_smem);

struct RegRow { int mma_wgs, producer_max, consumer_max; int64_t sum; bool legal; };
std::vector<RegRow> setmaxnreg_table();

}  // namespace flashptx::models::ring
