// The deterministic backward's dQ writer orders (src/protocol/writer_order.h) and the plan's
// choice between them (src/plan.cpp, dq_order_rotated_ok). The locks the kernel takes are checked
// against a brute-force ranking of the visits; a round-based model of one head's CTAs (each step:
// compute one round, then add when the tile's semaphore shows the writer's lock) shows what each
// order costs and when the rotated order deadlocks (key blocks not resident together).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "include/flashptx.h"
#include "src/protocol/writer_order.h"
#include "src/plan.h"

namespace wo = flashptx::writer_order;

namespace {

struct Run {
  bool deadlock = false;
  int rounds = 0;
  std::vector<std::vector<int>> add_order;  // per query block: the key blocks in the order they added
};

// One head: n_blocks CTAs (key blocks) dispatched in index order into `resident` slots; each walks
// m_blocks steps. A round: a computing CTA finishes its step's compute; a CTA whose dQ tile is
// ready adds it if the tile's semaphore equals its lock (the add is visible from the next round),
// then computes its next step. A CTA leaves after its last add and frees its slot.
Run simulate(int n_blocks, int m_blocks, int resident, bool rotated) {
  struct Cta { int step = 0; bool computed = false; bool done = false; bool live = false; };
  std::vector<Cta> cta(n_blocks);
  std::vector<int> sem(m_blocks, 0);
  Run r;
  r.add_order.assign(m_blocks, {});
  int next = 0, live = 0, done = 0;
  for (r.rounds = 0; done < n_blocks; ++r.rounds) {
    while (live < resident && next < n_blocks) { cta[next++].live = true; ++live; }
    std::vector<int> inc(m_blocks, 0);
    bool progress = false;
    for (int n = 0; n < n_blocks; ++n) {
      Cta& c = cta[n];
      if (!c.live || c.done) continue;
      if (!c.computed) { c.computed = true; progress = true; continue; }
      const int m = rotated ? wo::rotated_m_block(n, c.step, m_blocks) : c.step;
      const int lock = rotated ? wo::lock_dense_rotated(n, m, n_blocks) : wo::lock_dense(n);
      if (sem[m] != lock) continue;
      ++inc[m];
      r.add_order[m].push_back(n);
      progress = true;
      c.computed = false;
      if (++c.step == m_blocks) { c.done = true; c.live = false; --live; ++done; }
    }
    for (int m = 0; m < m_blocks; ++m) sem[m] += inc[m];
    if (!progress) { r.deadlock = true; return r; }
  }
  return r;
}

}  // namespace

TEST_SUITE("host writer order") {
  TEST_CASE("rotated locks rank each tile's writers by the step of their visit (the kernel's lock)") {
    for (int M = 1; M <= 40; ++M)
      for (int N = 1; N <= M; ++N)
        for (int m = 0; m < M; ++m) {
          std::vector<std::pair<int, int>> visits;  // (step, key block)
          for (int n = 0; n < N; ++n)
            for (int i = 0; i < M; ++i)
              if (wo::rotated_m_block(n, i, M) == m) visits.push_back({i, n});
          REQUIRE(visits.size() == static_cast<size_t>(N));  // each key block visits the tile once
          std::sort(visits.begin(), visits.end());
          for (int rank = 0; rank < N; ++rank) {
            const int n = visits[rank].second;
            INFO("N=" << N << " M=" << M << " m=" << m << " n=" << n);
            REQUIRE(wo::lock_dense_rotated(n, m, N) == rank);
            if (rank > 0) REQUIRE(visits[rank].first > visits[rank - 1].first);  // one writer per step
          }
        }
  }

  TEST_CASE("every key block visits every query block once, in either order") {
    for (int N : {1, 3, 8, 12, 40})
      for (int M : {1, 3, 8, 13, 40}) {
        for (bool rotated : {false, true}) {
          if (rotated && N > M) continue;  // the plan's condition
          const Run r = simulate(N, M, N, rotated);
          INFO("N=" << N << " M=" << M << (rotated ? " rotated" : " ascending"));
          REQUIRE_FALSE(r.deadlock);
          for (int m = 0; m < M; ++m) {
            std::vector<int> o = r.add_order[m];
            std::sort(o.begin(), o.end());
            std::vector<int> all(N);
            for (int n = 0; n < N; ++n) all[n] = n;
            CHECK(o == all);
          }
        }
      }
  }

  TEST_CASE("the cost: ascending makes key block n start n adds late; rotated walks in step") {
    // Printed values of the model (rounds for one head, all key blocks resident).
    for (int M : {4, 8, 16, 64})
      for (int N : {2, 8, 16, 64}) {
        if (N > M) continue;
        INFO("N=" << N << " M=" << M);
        CHECK(simulate(N, M, N, false).rounds == 2 * M + N - 1);
        CHECK(simulate(N, M, N, true).rounds == 2 * M);
      }
  }

  TEST_CASE("failure lab: the rotated order with a head's key blocks not resident together deadlocks") {
    // 8 key blocks, 5 CTA slots: key block 4 waits for key block 5, which waits for a free slot
    // that no resident CTA will ever give back. The ascending order only waits for earlier CTAs.
    CHECK(simulate(8, 8, 5, true).deadlock);
    CHECK_FALSE(simulate(8, 8, 5, false).deadlock);
    CHECK_FALSE(simulate(8, 8, 8, true).deadlock);
  }

  TEST_CASE("the plan: rotated only for deterministic mask-free shapes whose key blocks fit together") {
    CHECK(flashptx::dq_order_rotated_ok(8, 8, 132));     // 132 = 16 x 8 + 4: 4 SMs wait at a wave's end
    CHECK(flashptx::dq_order_rotated_ok(64, 64, 132));
    CHECK(flashptx::dq_order_rotated_ok(132, 200, 132));
    CHECK_FALSE(flashptx::dq_order_rotated_ok(133, 200, 132));  // not resident together: would deadlock
    CHECK_FALSE(flashptx::dq_order_rotated_ok(100, 100, 132));  // 32 SMs of a cut head would wait
    CHECK_FALSE(flashptx::dq_order_rotated_ok(24, 24, 132));    // 12 > 132 / 16
    CHECK_FALSE(flashptx::dq_order_rotated_ok(12, 3, 132));     // more key than query blocks
    CHECK_FALSE(flashptx::dq_order_rotated_ok(8, 8, 0));        // no device known
    const flashptx::Device h200{0, 90, 132};
    void* fake[9];
    for (int i = 0; i < 9; ++i) fake[i] = reinterpret_cast<void*>(static_cast<uintptr_t>(0x10000 * (i + 1)));
    auto plan_for = [&](int64_t s, int64_t d, int causal, int deterministic, flashptx::DqOrder order,
                        flashptx::BwdPlan* plan) {
      flashptx_bwd_params p;
      flashptx_bwd_params_contiguous(&p, fake[0], fake[1], fake[2], fake[3], nullptr, fake[4], fake[5], fake[6],
                                     fake[7], 16384 / s, s, s, 2048 / d, 2048 / d, d, FLASHPTX_BF16, causal);
      p.deterministic = deterministic;
      flashptx::BwdOptions opt;
      opt.dq_order = order;
      std::string err;
      return flashptx::plan_bwd(p, opt, h200, plan, &err);
    };
    using O = flashptx::DqOrder;
    flashptx::BwdPlan plan;
    REQUIRE(plan_for(1024, 128, 0, 1, O::kAuto, &plan) == FLASHPTX_OK);
    CHECK(plan.dq_rotated);                                     // 8 key blocks
    REQUIRE(plan_for(4096, 256, 0, 1, O::kAuto, &plan) == FLASHPTX_OK);
    CHECK(plan.dq_rotated);                                     // 64 key blocks of 64
    REQUIRE(plan_for(16384, 256, 0, 1, O::kAuto, &plan) == FLASHPTX_OK);
    CHECK_FALSE(plan.dq_rotated);                               // 256 key blocks > 132 SMs
    REQUIRE(plan_for(1024, 128, 1, 1, O::kAuto, &plan) == FLASHPTX_OK);
    CHECK_FALSE(plan.dq_rotated);                               // causal: shortest-first
    REQUIRE(plan_for(1024, 128, 0, 0, O::kAuto, &plan) == FLASHPTX_OK);
    CHECK_FALSE(plan.dq_rotated);                               // not deterministic: no order
    REQUIRE(plan_for(1024, 128, 0, 1, O::kAscending, &plan) == FLASHPTX_OK);
    CHECK_FALSE(plan.dq_rotated);
    CHECK(plan_for(16384, 256, 0, 1, O::kRotated, &plan) == FLASHPTX_ERR_BAD_OPTION);
    CHECK(plan_for(1024, 128, 1, 1, O::kRotated, &plan) == FLASHPTX_ERR_BAD_OPTION);
  }
}
