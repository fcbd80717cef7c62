// The FA4 forward model (docs/PROTOCOLS.md, "The FA4 roles"): feeds and speeds, sensitivity,
// d*, roles, split P, issue order, H/L rule.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tools/models/fa4_forward.h"

namespace f = flashptx::models::fa4fwd;

TEST_SUITE("host models fa4 forward 0x08") {
  TEST_CASE("resource ledger rows") {
    const f::Ledger a = f::ledger(128, 128, 128);
    CHECK(a.flops_mma == 4LL * 128 * 128 * 128);
    CHECK(a.t_mma == 1024.0);
    CHECK(a.t_smem == 768.0);
    CHECK(a.t_exp == 1024.0);
    CHECK(a.lower_bound() == 1024.0);
    CHECK(a.serial() == 2816.0);
    CHECK(a.largest() == "MMA and exp");
    CHECK(a.t_smem / a.t_mma == 0.75);

    const f::Ledger b = f::ledger(256, 128, 128);
    CHECK(b.t_mma == 2048.0);
    CHECK(b.t_smem == 1536.0);
    CHECK(b.t_exp == 2048.0);
    CHECK(b.largest() == "MMA and exp");

    const f::Ledger c = f::ledger(192, 96, 160);
    CHECK(c.i_qk == 2);
    CHECK(c.i_pv == 4);
    CHECK(c.t_mma == 1440.0);
    CHECK(c.t_smem == 2048.0);
    CHECK(c.t_exp == 1152.0);
    CHECK(c.largest() == "SMEM");
    // Mutation "drop instruction ceilings": the ragged tile names the wrong resource.
    const f::Ledger c2 = f::ledger(192, 96, 160, 2, {}, false);
    CHECK(c2.t_smem == 1080.0);
    CHECK(c2.largest() == "MMA");
  }

  TEST_CASE("sensitivity table and d*") {
    const double want[4][3] = {{1024, 768, 1024}, {1024, 768, 512}, {512, 768, 1024}, {1024, 1536, 1024}};
    const char* largest[4] = {"MMA and exp", "MMA", "exp", "SMEM"};
    const auto& rows = f::sensitivity_rows();
    REQUIRE(rows.size() == 4u);
    for (size_t i = 0; i < 4; ++i) {
      const f::Ledger l = f::ledger(128, 128, 128, 2, rows[i].rates);
      CAPTURE(rows[i].mutation);
      CHECK(l.t_mma == want[i][0]);
      CHECK(l.t_smem == want[i][1]);
      CHECK(l.t_exp == want[i][2]);
      CHECK(l.largest() == largest[i]);
    }
    CHECK(f::d_star() == 128.0);
    // At d* the MMA and exp times tie for any M, N.
    const f::Ledger l = f::ledger(384, 256, 128);
    CHECK(l.t_mma == l.t_exp);
  }

  TEST_CASE("roles, register targets, split P") {
    CHECK(f::roles_partition_16(f::roles()));
    auto broken = f::roles();
    broken.back().first_warp = 14;  // warp 14 owned twice
    CHECK_FALSE(f::roles_partition_16(broken));
    CHECK(f::register_budget(192, 80, 48) == 512);
    CHECK(f::p_early_columns(128) == 96);
    CHECK(f::p_early_columns(128) * 4 == 128 * 3);
  }

  TEST_CASE("startup/steady/drain issue order") {
    const auto ev = f::issue_order(2);
    const std::vector<std::string> want = {"QK_H_0", "QK_L_0", "PV_H_0", "QK_H_1",
                                           "PV_L_0", "QK_L_1", "PV_H_1", "PV_L_1"};
    CHECK(f::mma_order(ev) == want);
    CHECK(f::check_order(ev, 2) == f::FwdError::kOk);
    // Exact event list for one K/V block: startup then drain, no steady phase.
    using O = f::Op;
    const std::vector<f::Event> one = {
        {O::kWaitK, -1, 0},         {O::kWaitQ, 0, -1},      {O::kIssueQK, 0, 0},
        {O::kPublishS, 0, 0},       {O::kWaitQ, 1, -1},      {O::kIssueQK, 1, 0},
        {O::kPublishS, 1, 0},       {O::kReleaseQ, -1, -1},  {O::kWaitPEarly, 0, 0},
        {O::kWaitORescaled, 0, 0},  {O::kWaitV, -1, 0},      {O::kIssuePV, 0, 0},
        {O::kWaitPFinal, 0, 0},     {O::kCompletePV, 0, 0},  {O::kPublishO, 0, -1},
        {O::kWaitPEarly, 1, 0},     {O::kWaitORescaled, 1, 0}, {O::kWaitV, -1, 0},
        {O::kIssuePV, 1, 0},        {O::kWaitPFinal, 1, 0},  {O::kCompletePV, 1, 0},
        {O::kPublishO, 1, -1}};
    CHECK(f::issue_order(1) == one);
    CHECK(f::check_order(one, 1) == f::FwdError::kOk);
    for (int blocks = 1; blocks <= 6; ++blocks) {
      CHECK(f::check_order(f::issue_order(blocks), blocks) == f::FwdError::kOk);
      CHECK(f::mma_order(f::issue_order(blocks)).size() == static_cast<size_t>(4 * blocks));
    }
  }

  TEST_CASE("schedule mutations are rejected with their reasons") {
    const auto& m = f::order_mutations();
    REQUIRE(m.size() == 8u);
    const f::FwdError want[8] = {f::FwdError::kPvBeforeCorrection, f::FwdError::kSOverwriteWhileLive,
                                 f::FwdError::kPvCompleteBeforePFinal, f::FwdError::kPvBeforePEarly,
                                 f::FwdError::kPvBeforeV, f::FwdError::kQkBeforeK,
                                 f::FwdError::kQReleasedEarly, f::FwdError::kMissingDrain};
    for (size_t i = 0; i < m.size(); ++i) {
      CAPTURE(m[i].name);
      CHECK(m[i].expected == want[i]);
      CHECK(f::check_order(f::mutated_order(i, 2), 2) == want[i]);
      CHECK(f::check_order(f::mutated_order(i, 3), 3) == want[i]);
    }
  }

  TEST_CASE("H and L exponential sections never overlap") {
    for (int blocks = 1; blocks <= 4; ++blocks) {
      const auto s = f::paper_exp_sections(blocks);
      CHECK(f::check_exp_sections(s) == f::FwdError::kOk);
      for (const auto& x : s) CHECK(x.end - x.begin == 1024.0);
    }
    auto s = f::paper_exp_sections(2);
    for (auto& x : s)
      if (x.stage == 1) { x.begin -= 512; x.end -= 512; }
    CHECK(f::check_exp_sections(s) == f::FwdError::kExpOverlap);
    CHECK(std::string(f::fwd_error_name(f::FwdError::kExpOverlap)) ==
          "H and L exponential sections overlap");
  }
}
