// Host oracle tests of the K/V mbarrier rings (docs/PROTOCOLS.md, "The K/V rings"), driven
// through RingState<S>.
#include <doctest/doctest.h>

#include "src/protocol/ring.h"
#include "src/sm90/fa3_fwd_config.h"
#include "tools/models/ring_model.h"

using namespace flashptx::models::ring;

namespace {
Result run(Mutation m, std::vector<int> tiles, int tile = 0, int r = 0, int consumers = 1, int stages = 2) {
  Config c;
  c.mutation = m;
  c.tiles = tiles;
  c.mutation_tile = tile;
  c.mutation_r = r;
  c.consumers = consumers;
  c.stages = stages;
  return simulate(c);
}
}  // namespace

TEST_SUITE("host models ring") {
  TEST_CASE("mbarrier parity: a fresh barrier passes parity 1, completes on arrivals and tx bytes") {
    MBarrier b;
    b.init(1);
    CHECK(b.try_wait_parity(1));
    CHECK_FALSE(b.try_wait_parity(0));
    b.arrive_expect_tx(32768);
    CHECK_FALSE(b.try_wait_parity(0));  // arrival alone is not completion: 32 KiB still in flight
    b.complete_tx(32768);
    CHECK(b.try_wait_parity(0));
    CHECK_FALSE(b.try_wait_parity(1));
  }

  TEST_CASE("(stage, phase) table, s=2 J=5, producer one generation ahead") {
    const auto rows = coordinate_table(2, 5);
    REQUIRE(rows.size() == 5);
    const int expect[5][7] = {{0, 4, 0, 0, 0, 1, 1}, {1, 3, 1, 0, 0, 1, 1}, {2, 2, 0, 1, 1, 2, 0},
                              {3, 1, 1, 1, 1, 2, 0}, {4, 0, 0, 2, 0, 3, 1}};
    for (int i = 0; i < 5; ++i) {
      CHECK(rows[i].r == expect[i][0]);
      CHECK(rows[i].n == expect[i][1]);
      CHECK(rows[i].stage == expect[i][2]);
      CHECK(rows[i].consumer_raw == expect[i][3]);
      CHECK(rows[i].consumer_parity == expect[i][4]);
      CHECK(rows[i].producer_raw == expect[i][5]);
      CHECK(rows[i].producer_parity == expect[i][6]);
    }
    auto p = flashptx::RingState<2>::producer_start();
    CHECK(p.stage == 0);
    CHECK(p.phase == 1);
  }

  TEST_CASE("ABA: rejected with parity, accepted when parity is ignored") {
    for (int s : {1, 2, 3, 4}) {
      CHECK_FALSE(aba_wait_passes(s, true));
      CHECK(aba_wait_passes(s, false));
    }
  }

  TEST_CASE("clean runs conserve A = C = W = R = J and 0 <= P - R <= s") {
    for (int s : {1, 2, 3, 4})
      for (int g : {1, 2}) {
        Config c;
        c.stages = s;
        c.consumers = g;
        c.tiles = {5, 3, 0, 4, 1};
        const Result r = simulate(c);
        CAPTURE(s);
        CAPTURE(g);
        CHECK(r.fault == Fault::kNone);
        for (const Counters* k : {&r.k, &r.v}) {
          CHECK(k->A == 13);
          CHECK(k->C == 13);
          CHECK(k->W == 13);
          CHECK(k->R == 13);
          CHECK(k->min_in_flight >= 0);
          CHECK(k->max_in_flight <= s);
        }
      }
  }

  TEST_CASE("wait-for graph is acyclic with the producer one generation ahead, cyclic without") {
    CHECK(wait_for_graph_acyclic(5, 2));
    CHECK(wait_for_graph_acyclic(12, 1));
    CHECK_FALSE(wait_for_graph_acyclic(5, 0));
    CHECK(wait_chain(4, 2) == std::vector<int>{4, 2, 0});
  }

  TEST_CASE("finite-J overlap: 2800 cycles, 1.43x; asymptote 1.6x; one stage is serial") {
    CHECK(overlap_makespan(2, 5, 300, 500) == 2800);
    CHECK(overlap_formula(5, 300, 500) == 2800);
    CHECK(4000.0 / 2800 == doctest::Approx(1.43).epsilon(0.005));
    CHECK(overlap_makespan(1, 5, 300, 500) == 4000);
    CHECK(overlap_makespan(2, 1, 300, 500) == 800);
    const double s_inf = 100000.0 * 800 / overlap_makespan(2, 100000, 300, 500);
    CHECK(s_inf == doctest::Approx(1.6).epsilon(0.001));
    for (int J : {1, 2, 3, 7})
      for (auto tl : {100, 300, 700}) CHECK(overlap_makespan(3, J, tl, 500) == overlap_formula(J, tl, 500));
  }

  TEST_CASE("shared-memory ledger and setmaxnreg table") {
    const SmemLedger l = smem_ledger(128, 128, 128, 128, 2, 2, false);
    CHECK(l.q == 32 * 1024);
    CHECK(l.k == 64 * 1024);
    CHECK(l.v == 64 * 1024);
    CHECK(l.no_alias == 160 * 1024);
    CHECK(l.alias == 128 * 1024);
    CHECK(l.barriers == 10);
    CHECK(l.barrier_bytes == 80);
    const auto t = setmaxnreg_table();
    REQUIRE(t.size() == 3);
    CHECK(t[0].sum == 39936);
    CHECK(t[1].sum == 64512);
    CHECK(t[2].sum == 65536);
    for (const auto& r : t) CHECK(r.legal);
  }

  TEST_CASE("failure matrix: each mutation is detected with its named fault") {
    CHECK(run(Mutation::kResetStatePerTile, {5, 5}, 1).fault == Fault::kOverwriteLive);
    CHECK(run(Mutation::kResetStatePerTile, {4, 4}, 1).fault == Fault::kNone);  // latent: J a multiple of 2s
    CHECK(run(Mutation::kSkipBlock, {5}, 0, 4).fault == Fault::kMissingCommit);
    CHECK(run(Mutation::kSkipBlock, {5}, 0, 2).fault == Fault::kPayloadMismatch);
    CHECK(run(Mutation::kMissingVRelease, {5}, 0, 1).fault == Fault::kMissingVRelease);
    CHECK(run(Mutation::kMissingVRelease, {5}, 0, 4).fault == Fault::kMissingVRelease);  // caught by the tail
    CHECK(run(Mutation::kReleaseKBeforeWait, {5}, 0, 2).fault == Fault::kReleaseInFlight);
    CHECK(run(Mutation::kReleaseVBeforeWait, {5}, 0, 2).fault == Fault::kReleaseInFlight);
    CHECK(run(Mutation::kAdvanceWithoutRelease, {5}, 0, 1).fault == Fault::kAdvanceWithoutRelease);
    CHECK(run(Mutation::kReleaseUnproduced, {5}, 0).fault == Fault::kReleaseUnproduced);
    CHECK(run(Mutation::kReleaseUnproduced, {0, 5}, 0).fault == Fault::kReleaseUnproduced);  // empty tile
    CHECK(run(Mutation::kNoParityConsumer, {5}).fault == Fault::kStaleRead);
    CHECK(run(Mutation::kNoParityProducer, {5}).fault == Fault::kOverwriteLive);
    CHECK(run(Mutation::kNoProducerTail, {5}).fault == Fault::kDanglingArrive);
    // two consumer warpgroups: same verdicts
    CHECK(run(Mutation::kMissingVRelease, {5}, 0, 1, 2).fault == Fault::kMissingVRelease);
    CHECK(run(Mutation::kReleaseKBeforeWait, {5}, 0, 2, 2).fault == Fault::kReleaseInFlight);
    CHECK(run(Mutation::kNoProducerTail, {5}, 0, 0, 2).fault == Fault::kDanglingArrive);
    CHECK(std::string(fault_name(Fault::kMissingVRelease)) == "missing_v_release");
  }

  // Two labs of the pingpong and producer-tail protocols, on the same simulator.
  TEST_CASE("failure lab: the pingpong named barrier taken as K readiness reads a stage still landing") {
    // The turn orders issue between consumer warpgroups; it says nothing about bytes in shared memory.
    for (int consumers : {1, 2}) {
      const Result r = run(Mutation::kNamedBarrierAsReadiness, {5}, 0, 0, consumers);
      CHECK(r.fault == Fault::kStaleRead);
      CHECK(r.detail.find("K stage 0 at ordinal 0: its TMA has not landed") != std::string::npos);
    }
    // the same consumer with its full wait in place: clean
    CHECK(run(Mutation::kNone, {5}, 0, 0, 2).fault == Fault::kNone);
    CHECK(std::string(fault_name(Fault::kStaleRead)) == "stale_read");
  }

  TEST_CASE("failure lab: a producer tail that carries a dummy payload commits false full generations") {
    // The tail exists only to wait for the last s releases; arming full V makes s extra generations.
    for (int consumers : {1, 2}) {
      const Result r = run(Mutation::kTailAsPayload, {5, 3}, 0, 0, consumers);
      CHECK(r.fault == Fault::kFalseFullGeneration);
      CHECK(r.detail == "V: C=10 commits for J=8 blocks; 2 full generations carry no block any consumer waits for");
    }
    const Result clean = run(Mutation::kNone, {5, 3}, 0, 0, 2);
    CHECK(clean.fault == Fault::kNone);
    CHECK(clean.v.C == 8);
    CHECK(std::string(fault_name(Fault::kFalseFullGeneration)) == "false_full_generation");
  }
}

TEST_SUITE("host models ring") {

TEST_CASE("the article's liveness ledger and the shipped d128 kernel's FwdLayout agree") {
  using L = flashptx::fa3::FwdLayout<flashptx::fa3::kD128N128>;
  const flashptx::models::ring::SmemLedger l = flashptx::models::ring::smem_ledger(128, 128, 128, 128, 2, 2, false);
  CHECK(l.q == L::kQBytes);
  CHECK(l.k == 2 * L::kKVBytes);
  CHECK(l.v == 2 * L::kKVBytes);
  // The ledger's barriers are the Q and K/V rings'; the kernel adds its tile feed's two per slot and
  // the second Q slot's pair (FwdLayout::kQSlots).
  CHECK(l.barriers + 2 * L::kTileSlots + 2 * (L::kQSlots - 1) == L::kNumBarriers);
  CHECK(L::kQSlots == 2);
  CHECK(L::kTileSlots == 2);
  // The two-consumer register row of setmaxnreg_table() is the kernel's split (24 / 240); the
  // paired causal twin moves 8 registers per consumer thread to its producer (40 / 232), the same
  // launch allocation (168 x 384 = 64,512).
  using LP = flashptx::fa3::FwdLayout<flashptx::fa3::kD128N128Paired>;
  bool found = false;
  for (const auto& r : flashptx::models::ring::setmaxnreg_table())
    if (r.mma_wgs == 2) {
      found = true;
      CHECK(r.producer_max == L::kProducerRegs);
      CHECK(r.consumer_max == L::kConsumerRegs);
      CHECK(128 * LP::kProducerRegs + 256 * LP::kConsumerRegs == 128 * r.producer_max + 256 * r.consumer_max);
      CHECK(LP::kConsumerRegs == r.consumer_max - 8);
    }
  CHECK(found);
}

}  // TEST_SUITE
