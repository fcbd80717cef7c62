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
  // The role table checked against rules it does not encode itself: the PTX ISA's setmaxnreg
  // (immediate in [24, 256], a multiple of 8; warpgroup-collective, so the four warps 4g..4g+3 of an
  // aligned warpgroup share one target: seed article, "setmaxnreg"), the 64K 32-bit registers of
  // an SM for the one 512-thread CTA, and the FA4 roles the seed article lists for beta23's forward
  // (two softmax warpgroups, one correction warpgroup, then one warp each for MMA, epilogue, load
  // and scheduler). Counted per warp from the ranges, not through role_of_warp.
  TEST_CASE("the kernel's role table obeys setmaxnreg's ISA rules and the register file") {
    REQUIRE(fa4::kWarps * 32 == fa4::kThreads);
    std::vector<int> owners(fa4::kWarps, 0), target(fa4::kWarps, -1);
    for (int i = 0; i < fa4::kRoleCount; ++i) {
      const fa4::RoleSpec s = fa4::role_spec(static_cast<fa4::Role>(i));
      INFO(s.name);
      CHECK(s.regs >= 24);
      CHECK(s.regs <= 256);
      CHECK(s.regs % 8 == 0);
      REQUIRE(s.first_warp >= 0);
      REQUIRE(s.last_warp < fa4::kWarps);
      REQUIRE(s.first_warp <= s.last_warp);
      for (int w = s.first_warp; w <= s.last_warp; ++w) {
        ++owners[w];
        target[w] = s.regs;
      }
    }
    int regs = 0;
    for (int w = 0; w < fa4::kWarps; ++w) {
      INFO("warp " << w);
      CHECK(owners[w] == 1);                  // every warp has exactly one role
      CHECK(target[w] == target[w / 4 * 4]);  // one target per warpgroup
      regs += 32 * target[w];
    }
    CHECK(regs <= 64 * 1024);
    // The article's role shape: warpgroups 0 and 1 softmax, 2 correction, 3 split into four
    // single-warp roles.
    CHECK(fa4::role_warps(fa4::Role::kSoftmaxH) == 4);
    CHECK(fa4::role_warps(fa4::Role::kSoftmaxL) == 4);
    CHECK(fa4::role_warps(fa4::Role::kCorrection) == 4);
    for (fa4::Role r : {fa4::Role::kMma, fa4::Role::kEpilogue, fa4::Role::kLoad, fa4::Role::kScheduler})
      CHECK(fa4::role_warps(r) == 1);
    CHECK(fa4::role_spec(fa4::Role::kSoftmaxH).first_warp % 4 == 0);
    CHECK(fa4::role_spec(fa4::Role::kSoftmaxL).first_warp % 4 == 0);
    CHECK(fa4::role_spec(fa4::Role::kCorrection).first_warp % 4 == 0);
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
