// TMEM planning (docs/PROTOCOLS.md, "TMEM planning"; `flashptx ledger 0x07`): capacity,
// allocator, address packing, S/P/O map, alias legality, lane bands, CTA-group rules, and the
// eleven negative fixtures (each with its named reason).
#include <doctest/doctest.h>

#include "src/protocol/tmem_plan.h"
#include "tools/models/tmem.h"

using namespace flashptx::tmem;
namespace m = flashptx::models::tmem07;

TEST_SUITE("host models tmem 0x07") {
  TEST_CASE("capacity, granule and legal sizes") {
    CHECK(kBytes == 262144u);
    CHECK(kBytes / 1024u == 256u);
    CHECK(kGranuleBytes == 16384u);
    for (uint32_t c = 0; c <= 1024; ++c) {
      const bool want = c == 32 || c == 64 || c == 128 || c == 256 || c == 512;
      CHECK(legal_alloc_columns(c) == want);
    }
  }

  TEST_CASE("address packing round trip") {
    CHECK(taddr(37, 384) == 2425216u);
    CHECK(taddr_lane(2425216u) == 37u);
    CHECK(taddr_column(2425216u) == 384u);
    for (uint32_t l = 0; l < kLanes; l += 7)
      for (uint32_t c = 0; c < kColumns; c += 31) {
        const uint32_t a = taddr(l, c);
        CHECK(a == ((l << 16) | c));
        CHECK(taddr_lane(a) == l);
        CHECK(taddr_column(a) == c);
      }
    CHECK(taddr_in_view(127, 511));
    CHECK_FALSE(taddr_in_view(128, 0));
    CHECK_FALSE(taddr_in_view(0, 512));  // no flat 1024-column pair space
  }

  TEST_CASE("allocator: non-increasing sizes, relinquish, free before exit") {
    TmemAllocator a;
    uint32_t base = 99;
    CHECK(a.allocate(512, &base) == TmemError::kOk);
    CHECK(base == 0u);  // a full-width allocation starts at column 0
    CHECK(a.live_columns() == 512u);
    CHECK(a.allocate(32, &base) == TmemError::kOutOfColumns);
    CHECK(a.at_exit() == TmemError::kNotFreedAtExit);
    a.relinquish();
    CHECK(a.live_columns() == 512u);  // relinquish does not free live values
    CHECK(a.deallocate(0, 512) == TmemError::kOk);
    CHECK(a.at_exit() == TmemError::kOk);
    CHECK(a.allocate(32, &base) == TmemError::kPermitClosed);

    TmemAllocator b;
    CHECK(b.allocate(128, &base) == TmemError::kOk);
    CHECK(b.allocate(128, &base) == TmemError::kOk);
    CHECK(base == 128u);
    CHECK(b.allocate(64, &base) == TmemError::kOk);
    CHECK(base == 256u);
    CHECK(b.allocate(128, &base) == TmemError::kSizeIncreases);
    CHECK(b.allocate(96, &base) == TmemError::kIllegalSize);
    // tcgen05.dealloc frees exactly one allocation: never a part of one, never two at once.
    CHECK(b.deallocate(64, 64) == TmemError::kPartialDealloc);   // second half of the first block
    CHECK(b.deallocate(0, 64) == TmemError::kPartialDealloc);    // first half of it
    CHECK(b.deallocate(0, 256) == TmemError::kPartialDealloc);   // the first two blocks together
    CHECK(b.live_columns() == 320u);                             // none of those freed anything
    CHECK(b.deallocate(0, 128) == TmemError::kOk);
    CHECK(b.deallocate(0, 128) == TmemError::kFreeUnallocated);
    CHECK(b.deallocate(256, 64) == TmemError::kOk);
    CHECK(b.deallocate(128, 128) == TmemError::kOk);
    CHECK(b.at_exit() == TmemError::kOk);
  }

  TEST_CASE("S/P/O column map and capacity equation") {
    const Fa4FwdColumnPlan p{128, 128, 2};
    CHECK(p.logical_columns() == 512u);
    CHECK(p.check() == TmemError::kOk);
    CHECK(p.p_columns() == 64u);
    CHECK(p.s(0).begin == 0u);   CHECK(p.s(0).end == 128u);
    CHECK(p.p(0).begin == 64u);  CHECK(p.p(0).end == 128u);
    CHECK(p.s(1).begin == 128u); CHECK(p.s(1).end == 256u);
    CHECK(p.p(1).begin == 192u); CHECK(p.p(1).end == 256u);
    CHECK(p.o(0).begin == 256u); CHECK(p.o(0).end == 384u);
    CHECK(p.o(1).begin == 384u); CHECK(p.o(1).end == 512u);
    CHECK(p.alloc_columns() == 512u);
    CHECK(Fa4FwdColumnPlan{128, 192, 1}.logical_columns() == 448u);
    CHECK(Fa4FwdColumnPlan{128, 192, 1}.check() == TmemError::kOk);
    CHECK(Fa4FwdColumnPlan{128, 192, 2}.logical_columns() == 640u);
    CHECK(Fa4FwdColumnPlan{128, 192, 2}.check() == TmemError::kMapTooWide);
    CHECK(Fa4FwdColumnPlan{128, 128, 1}.logical_columns() == 384u);
  }

  TEST_CASE("alias legality needs address and time") {
    const auto objs = m::fa4_fwd_objects(128, 128, 2);
    CHECK(m::first_illegal_alias(objs) == "");
    // S0 and P0 share columns [64,128) but not live time.
    const TmemObject s0{"S0", {0, 128}, {0, 3}}, p0{"P0", {64, 128}, {3, 5}};
    CHECK(legal_alias(s0, p0));
    const TmemObject p0_early{"P0", {64, 128}, {2, 5}};
    CHECK_FALSE(legal_alias(s0, p0_early));
    const TmemObject o0{"O0", {256, 384}, {0, 8}};
    CHECK(legal_alias(s0, o0));  // disjoint columns, overlapping time
  }

  TEST_CASE("lane ownership per warp") {
    for (uint32_t w = 0; w < 16; ++w)
      for (uint32_t l = 0; l < 128; ++l)
        CHECK(warp_owns_lane(w, l) == (l / 32u == w % 4u));
    CHECK_FALSE(warp_owns_lane(0, 64));
  }

  TEST_CASE("CTA-group contract and B payload") {
    const auto a = m::cta_group_contract(1), b = m::cta_group_contract(2);
    CHECK(a.mma_m == 128u);
    CHECK(b.mma_m == 256u);
    CHECK(b.mma_k == 128u);  // the pair expands M, not the reduction K
    CHECK(b.cta1_rows.begin == 128u);
    CHECK(b.cta1_rows.end == 256u);
    CHECK(b.cluster_m == 2u);
    CHECK(a.b_bytes_pair == 65536u);
    CHECK(b.b_bytes_per_cta == 16384u);
    CHECK(b.b_bytes_pair == 32768u);
    CHECK(double(b.b_bytes_pair) / a.b_bytes_pair == 0.5);
  }

  TEST_CASE("positive traces pass") {
    CHECK(m::check_trace(m::positive_trace(1)).error == TmemError::kOk);
    CHECK(m::check_trace(m::positive_trace(2)).error == TmemError::kOk);
  }

  TEST_CASE("the eleven negative fixtures fail with their own reasons") {
    const auto& f = m::negative_fixtures();
    REQUIRE(f.size() == 11u);
    const TmemError want[11] = {
        TmemError::kIllegalSize,      TmemError::kSizeIncreases,          TmemError::kPermitClosed,
        TmemError::kMapTooWide,       TmemError::kLiveAliasOverlap,       TmemError::kCtaGroupMismatch,
        TmemError::kPeerNotActive,    TmemError::kCollectiveParticipants, TmemError::kUnfinishedConsume,
        TmemError::kPeerNotQuiesced,  TmemError::kLaneOwnership};
    for (size_t i = 0; i < f.size(); ++i) {
      CAPTURE(f[i].mutation);
      CHECK(f[i].expected == want[i]);
      CHECK(m::run_fixture(i) == want[i]);
    }
    // Reasons are pairwise distinct.
    for (size_t i = 0; i < 11; ++i)
      for (size_t j = i + 1; j < 11; ++j) CHECK(want[i] != want[j]);
    CHECK(std::string(tmem_error_name(TmemError::kLaneOwnership)) == "lane-ownership violation");
  }
}
