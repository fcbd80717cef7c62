// The FA4 forward protocol model (tools/models/fa4_forward) driven by the kernel's own plan objects
// (src/protocol/fa4_plan.h): its roles, its MMA walk (fa4::mma_tile_schedule, the function the
// kernel's MMA thread and the emulator replay run) and its barrier table. CPU only; the kernel has
// never run on a Blackwell GPU.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "src/protocol/fa4_plan.h"
#include "tools/models/fa4_forward.h"

namespace f = flashptx::models::fa4fwd;
namespace fa4 = flashptx::fa4;

TEST_SUITE("host models fa4 forward kernel plan") {
  TEST_CASE("the model's roles are the kernel's role table") {
    const auto& r = f::roles();
    REQUIRE(r.size() == static_cast<size_t>(fa4::kRoleCount));
    CHECK(f::roles_partition_16(r));
    int regs = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      const fa4::RoleSpec s = fa4::role_spec(static_cast<fa4::Role>(i));
      CHECK(r[i].first_warp == s.first_warp);
      CHECK(r[i].last_warp == s.last_warp);
      CHECK(r[i].setmaxnreg == s.regs);
      regs += 32 * (s.last_warp - s.first_warp + 1) * s.regs;
    }
    CHECK(regs == 65536);
    for (int w = 0; w < fa4::kWarps; ++w) CHECK(fa4::role_of_warp(w) != fa4::Role::kCount);
  }

  TEST_CASE("the kernel's MMA walk passes the order checker, in beta23's tensor order") {
    for (int blocks = 1; blocks <= 6; ++blocks) {
      INFO("blocks " << blocks);
      const auto ev = f::kernel_issue_order(blocks);
      CHECK(f::check_order(ev, blocks) == f::FwdError::kOk);
      CHECK(f::mma_order(ev) == f::mma_order(f::issue_order(blocks)));
    }
  }

  TEST_CASE("removing a wait from the kernel's walk is caught with its reason") {
    struct Drop {
      f::Op op;
      f::FwdError want;
    };
    for (const Drop d : {Drop{f::Op::kCompletePV, f::FwdError::kSOverwriteWhileLive},
                         Drop{f::Op::kWaitORescaled, f::FwdError::kPvBeforeCorrection},
                         Drop{f::Op::kWaitPEarly, f::FwdError::kPvBeforePEarly},
                         Drop{f::Op::kWaitV, f::FwdError::kPvBeforeV}, Drop{f::Op::kWaitK, f::FwdError::kQkBeforeK},
                         Drop{f::Op::kWaitQ, f::FwdError::kQkBeforeQ}, Drop{f::Op::kPublishO, f::FwdError::kMissingDrain}}) {
      INFO(static_cast<int>(d.op));
      CHECK(f::check_order(f::kernel_issue_order(3, d.op), 3) == d.want);
    }
  }

  TEST_CASE("the kernel's barrier table: hand-offs between the right roles, one arrival per producing agent") {
    CHECK(f::check_barrier_plan(1, 0) == f::FwdError::kOk);
    CHECK(f::check_barrier_plan(2, 0) == f::FwdError::kOk);
    CHECK(f::check_barrier_plan(2, 1) == f::FwdError::kOk);
    // Concrete counts, as the kernel initialises them.
    CHECK(fa4::arrival_count(fa4::Bar::kPReady, 1, 0) == 4u);
    CHECK(fa4::arrival_count(fa4::Bar::kPReady, 2, 0) == 8u);   // the peer's four warps arrive remotely
    CHECK(fa4::arrival_count(fa4::Bar::kKvFull, 2, 0) == 2u);   // expect_tx + the peer's relay
    CHECK(fa4::arrival_count(fa4::Bar::kKvFull, 2, 1) == 1u);
    CHECK(fa4::arrival_count(fa4::Bar::kSchedEmpty, 1, 0) == 15u);
    CHECK(fa4::arrival_count(fa4::Bar::kSchedEmpty, 2, 0) == 30u);
    CHECK(fa4::arrival_count(fa4::Bar::kSFull, 2, 1) == 1u);   // the leader's multicast commit
    // A table with one wrong count fails.
    std::vector<uint32_t> counts;
    for (int b = 0; b < fa4::kBarCount; ++b) counts.push_back(fa4::arrival_count(static_cast<fa4::Bar>(b), 2, 0));
    CHECK(f::check_barrier_plan(2, 0, counts.data()) == f::FwdError::kOk);
    counts[static_cast<int>(fa4::Bar::kORescaled)] = 4;  // forgot the peer's correction warps
    CHECK(f::check_barrier_plan(2, 0, counts.data()) == f::FwdError::kBarrierCount);
  }
}
