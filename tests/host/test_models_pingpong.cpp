// Host oracle tests of the pingpong token ring (docs/PROTOCOLS.md, "Pingpong"), driven
// through TokenRing<G>.
#include <doctest/doctest.h>

#include "src/protocol/pingpong.h"
#include "tools/models/pingpong_model.h"

using namespace flashptx::models::pingpong;

namespace {
Result run(Mutation m, std::vector<int> tiles, bool overlap = false, int groups = 2) {
  Config c;
  c.mutation = m;
  c.tiles = tiles;
  c.intra_overlap = overlap;
  c.groups = groups;
  return simulate(c);
}
}  // namespace

TEST_SUITE("host models pingpong") {
  TEST_CASE("TokenRing ids and participant count") {
    using R2 = flashptx::TokenRing<2>;
    using R3 = flashptx::TokenRing<3>;
    CHECK(R2::barrier_of(0) == 2);
    CHECK(R2::barrier_of(1) == 3);
    CHECK(R3::barrier_of(2) == 4);
    CHECK(R2::kParticipants == 256);
    CHECK(R3::next(2) == 0);
    CHECK(R3::pred(0) == 2);
    CHECK(R2::primes(0));
    CHECK_FALSE(R2::primes(1));
  }

  TEST_CASE("two- and three-group rings run clean and conserve the token across persistent tiles") {
    for (int g : {2, 3})
      for (bool ov : {false, true}) {
        const Result r = run(Mutation::kNone, {3, 1, 0, 5, 2}, ov, g);
        CAPTURE(g);
        CAPTURE(ov);
        CHECK(r.fault == Fault::kNone);
        CHECK(r.token_conserved);
      }
  }

  TEST_CASE("two-group circuit: bootstrap, sync, issue, pass, sync, issue, pass") {
    const Result r = run(Mutation::kNone, {2}, true);
    REQUIRE(r.events.size() >= 6);
    CHECK(r.events[0] == "WG0 bootstrap arrive(B2): half-credit pending on B2");
    CHECK(r.events[1] == "WG0 sync(B2) completes: WG0 owns the token");
    CHECK(r.events[2].find("WG0 issues QK(1)+PV(0)") == 0);
    CHECK(r.events[3] == "WG0 arrive(B3): half-credit pending on B3");
    CHECK(r.events[4] == "WG1 sync(B3) completes: WG1 owns the token");
    CHECK(r.events.back() == "WG1 arrive(B2): half-credit pending on B2");
  }

  TEST_CASE("handoffs per consumer: J+1 non-overlap, max(J-1,0) intra-overlap") {
    using R = flashptx::TokenRing<2>;
    for (int J : {0, 1, 2, 3, 5, 8}) {
      const Result a = run(Mutation::kNone, {J}, false);
      const Result b = run(Mutation::kNone, {J}, true);
      CAPTURE(J);
      for (int g = 0; g < 2; ++g) {
        CHECK(a.syncs[g] == R::handoffs_non_overlap(J));
        CHECK(a.arrives[g] == R::handoffs_non_overlap(J));
        CHECK(b.syncs[g] == R::handoffs_intra_overlap(J));
        CHECK(b.arrives[g] == R::handoffs_intra_overlap(J));
      }
    }
    CHECK(R::handoffs_non_overlap(5) == 6);
    CHECK(R::handoffs_intra_overlap(1) == 0);
  }

  TEST_CASE("scheduler failure matrix: each mutation is detected with its named fault") {
    CHECK(run(Mutation::kNoBootstrap, {3}).fault == Fault::kNoBootstrap);
    CHECK(run(Mutation::kHalfParticipants, {3}).fault == Fault::kSelfCompletion);
    CHECK(run(Mutation::kOverParticipants, {3}).fault == Fault::kParticipantsUnreachable);
    CHECK(run(Mutation::kPhysicalId, {3}).fault == Fault::kIdMismatch);
    CHECK(run(Mutation::kSkipConditional, {3}).fault == Fault::kGenerationDrift);
    CHECK(run(Mutation::kNoFinalArrive, {3, 3}).fault == Fault::kTokenStranded);
    CHECK(run(Mutation::kReprimePerTile, {3, 3}).fault == Fault::kDuplicateCredit);
    // three groups
    CHECK(run(Mutation::kNoBootstrap, {3}, false, 3).fault == Fault::kNoBootstrap);
    CHECK(run(Mutation::kReprimePerTile, {2, 2}, true, 3).fault == Fault::kDuplicateCredit);
    CHECK(run(Mutation::kHalfParticipants, {2}, true, 3).fault == Fault::kSelfCompletion);
    // J = 1 intra-overlap: no handoff, so re-priming is caught even with no scheduled region
    CHECK(run(Mutation::kReprimePerTile, {1, 1}, true).fault == Fault::kDuplicateCredit);
    CHECK(std::string(fault_name(Fault::kTokenStranded)) == "token_stranded");
  }

  TEST_CASE("flow-shop bounds: 1.2x for two quanta, 1.5x ceiling") {
    CHECK(flow_shop_makespan(2, 1.0, 0.5) == doctest::Approx(2.5));
    CHECK(flow_shop_speedup(2, 1.0, 0.5) == doctest::Approx(1.2));
    CHECK(flow_shop_speedup(1000000, 1.0, 0.5) == doctest::Approx(1.5).epsilon(1e-5));
    CHECK(flow_shop_speedup(1000000, 1.0, 1.0) == doctest::Approx(2.0).epsilon(1e-5));
  }
}
