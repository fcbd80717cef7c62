// The FA4 backward model (docs/PROTOCOLS.md, "The backward relay", "Deterministic writer
// order"; `flashptx ledger 0x0A`): ledger, algebra, tiled vs direct gradients, 2CTA repack, relay
// order, TMEM intervals, deterministic writer orders. Every mutation is checked against its named
// reason.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "src/protocol/writer_order.h"
#include "tools/models/fa4_backward.h"

namespace b = flashptx::models::fa4bwd;
namespace wo = flashptx::writer_order;

TEST_SUITE("host models fa4 backward 0x0A") {
  TEST_CASE("five-MMA cycle ledger, 1CTA and 2CTA") {
    const b::Ledger a = b::ledger_1cta(128, 128, 128);
    CHECK(a.mma == 2560.0);
    CHECK(a.smem_operands == 2048.0);
    CHECK(a.ds_write == 256.0);
    CHECK(a.dq_write_read == 1024.0);
    CHECK(a.smem_total() == 3328.0);
    CHECK(a.exp == 1024.0);
    CHECK(a.lower_bound() == 3328.0);
    CHECK((a.smem_total() - a.mma) / a.mma == doctest::Approx(0.30).epsilon(1e-12));

    const b::Ledger p = b::ledger_2cta(128, 128, 128);
    CHECK(p.mma == 2560.0);
    CHECK(p.smem_operands == 1536.0);
    CHECK(p.ds_write == 256.0);
    CHECK(p.ds_exchange == 384.0);
    CHECK(p.dq_write_read == 512.0);
    CHECK(p.smem_total() == 2688.0);
    CHECK(p.exp == 1024.0);
    const double red = 100.0 * (a.smem_total() - p.smem_total()) / a.smem_total();
    CHECK(std::round(red * 100) / 100 == 19.23);
    CHECK(a.smem_total() - a.mma == 768.0);
    CHECK(p.smem_total() - p.mma == 128.0);
    const double ex = 100.0 * (768.0 - 128.0) / 768.0;
    CHECK(std::round(ex * 100) / 100 == 83.33);

    CHECK(b::dq_atomic_elements(1, 256, 128) == 65536);
    CHECK(b::dq_atomic_elements(2, 256, 128) == 32768);
    CHECK(b::exchange_bytes_pair(128, 128, 2) == 128 * 128 * 2);
  }

  TEST_CASE("dS rows sum to zero and the two deltas agree") {
    for (uint64_t seed : {1ull, 2ull, 3ull}) {
      const b::Problem pr = b::random_problem(24, 20, 8, seed);
      const b::Direct d = b::direct_backward(pr);
      for (int i = 0; i < d.ds.rows; ++i) {
        double s = 0;
        for (int j = 0; j < d.ds.cols; ++j) s += d.ds(i, j);
        CHECK(std::fabs(s) < 1e-14);
        CHECK(std::fabs(d.delta_rowsum[i] - d.delta_rowdot[i]) < 1e-14);
      }
    }
  }

  TEST_CASE("tiled dQ, dK, dV match the direct formulas") {
    const b::Problem pr = b::random_problem(48, 40, 16, 0x0A0A);
    const b::Direct d = b::direct_backward(pr);
    for (int bm : {8, 16, 48})
      for (int bn : {8, 13, 40}) {
        const b::Grads g = b::tiled_backward(pr, d.o, d.lse, bm, bn);
        CAPTURE(bm);
        CAPTURE(bn);
        CHECK(b::max_abs_diff(g.dq, d.dq) < 1e-14);
        CHECK(b::max_abs_diff(g.dk, d.dk) < 1e-14);
        CHECK(b::max_abs_diff(g.dv, d.dv) < 1e-14);
      }
    // Sanity: the gradients are not trivially zero.
    double mx = 0;
    for (double x : d.dq.v) mx = std::max(mx, std::fabs(x));
    CHECK(mx > 1e-3);
  }

  TEST_CASE("2CTA repack and its three wrong variants") {
    const int m = 32, n = 24, d = 16;
    const b::Problem pr = b::random_problem(m, 2 * n, d, 0x2C7A);
    const b::Direct dr = b::direct_backward(pr);
    struct Case { b::RepackVariant v; b::RepackError want; };
    const Case cases[] = {{b::RepackVariant::kExact, b::RepackError::kOk},
                          {b::RepackVariant::kOmitPeerHalf, b::RepackError::kMissingPeerHalf},
                          {b::RepackVariant::kWrongRowHalf, b::RepackError::kWrongRowHalf},
                          {b::RepackVariant::kSwapPeerKOrder, b::RepackError::kKOrderMismatch}};
    for (const auto& c : cases)
      for (int cta = 0; cta < 2; ++cta) {
        const b::CtaRepack r = b::repack(c.v, cta, m, n);
        CHECK(r.row_begin == cta * m / 2);
        CHECK(b::check_repack(r, m, n) == c.want);
        const double err = b::repack_dq_error(r, dr.ds, pr.k, pr.alpha, dr.dq);
        if (c.want == b::RepackError::kOk) CHECK(err < 1e-14);
        else CHECK(err > 1e-3);  // the wrong variant is also numerically wrong
      }
  }

  TEST_CASE("relay event order and its rejected mutations") {
    const auto t = b::relay_trace();
    std::vector<b::RelayOp> cta0;
    for (const auto& e : t)
      if (e.cta == 0) cta0.push_back(e.op);
    using R = b::RelayOp;
    CHECK(cta0 == std::vector<R>{R::kWriteXchg, R::kExpectTx, R::kRemoteCopy, R::kRelayWait,
                                 R::kRelayArrive, R::kMmaWait, R::kMmaDQ, R::kPhaseToggle});
    CHECK(b::check_relay(t) == b::RelayError::kOk);
    const auto& m = b::relay_mutations();
    REQUIRE(m.size() == 6u);
    const b::RelayError want[6] = {b::RelayError::kMissingExpectTx, b::RelayError::kMissingRelayArrive,
                                   b::RelayError::kMmaWithoutWait, b::RelayError::kPhaseDisagree,
                                   b::RelayError::kPairMismatch, b::RelayError::kCopyBeforeWrite};
    for (size_t i = 0; i < m.size(); ++i) {
      CAPTURE(m[i].name);
      CHECK(m[i].expected == want[i]);
      CHECK(b::check_relay(b::mutated_relay(i)) == want[i]);
    }
  }

  TEST_CASE("the 2-CTA kernel's barrier protocol: every phase completes in its step; mutations hang or misplace") {
    // src/protocol/fa4_bwd_pair_plan.h (PBar, pair_arrival_count, the byte counts) and the leader's
    // walk bwd_tile_schedule: the objects src/sm100/fa4_bwd_pair.cuh runs (never executed: no GPU).
    namespace kp = flashptx::fa4bwd::pair;
    for (int J : {1, 2, 3, 6}) {
      CAPTURE(J);
      CHECK(b::simulate_pair_protocol(J) == b::PairProtocolError::kOk);
    }
    CHECK(b::simulate_pair_protocol(0) == b::PairProtocolError::kOk);  // no step: nothing waits, nothing arrives
    const b::PairProtocolError want[] = {b::PairProtocolError::kOk, b::PairProtocolError::kDeadlock,
                                         b::PairProtocolError::kDeadlock, b::PairProtocolError::kDeadlock,
                                         b::PairProtocolError::kDeadlock, b::PairProtocolError::kDeadlock};
    for (int i = 1; i < static_cast<int>(b::PairMutation::kCount); ++i) {
      const auto m = static_cast<b::PairMutation>(i);
      CAPTURE(b::pair_mutation_name(m));
      CHECK(b::simulate_pair_protocol(3, m) == want[i]);
    }
    // Wrong counts: the leader's ds_ready without the relays (16): the relays' arrivals of step j land
    // in step j + 1's phase; qdo_empty without the reduction's arrive (1): the same, on the loader's
    // side; the leader's q_full without the peer's relay (1): the relay's arrive of step j lands late.
    uint32_t counts[2][kp::kPBarCount];
    for (int r = 0; r < 2; ++r)
      for (int k = 0; k < kp::kPBarCount; ++k) counts[r][k] = kp::pair_arrival_count(static_cast<kp::PBar>(k), r);
    CHECK(b::simulate_pair_protocol(3, b::PairMutation::kNone, counts) == b::PairProtocolError::kOk);
    const struct { int rank; kp::PBar bar; uint32_t count; } wrong[] = {
        {0, kp::PBar::kDsReady, 16}, {1, kp::PBar::kQdoEmpty, 1}, {0, kp::PBar::kQFull, 1}, {0, kp::PBar::kPReady, 8}};
    for (const auto& w : wrong) {
      uint32_t c[2][kp::kPBarCount];
      std::memcpy(c, counts, sizeof c);
      c[w.rank][static_cast<int>(w.bar)] = w.count;
      CAPTURE(static_cast<int>(w.bar));
      const b::PairProtocolError e = b::simulate_pair_protocol(3, b::PairMutation::kNone, c);
      CHECK(e != b::PairProtocolError::kOk);
      CHECK(e != b::PairProtocolError::kDeadlock);  // nothing hangs: the arrivals land in the wrong phase
    }
  }

  TEST_CASE("TMEM live intervals") {
    CHECK(b::first_illegal_alias(b::tmem_objects_1cta()) == "");
    CHECK(b::first_illegal_alias(b::tmem_objects_2cta()) == "");
    CHECK(b::first_illegal_alias(b::tmem_objects_1cta_forced_concurrent()) == "dS/dQ");
    // failure lab: the 2CTA offsets carry no widths; S/P without the pair's partition collides
    CHECK(b::first_illegal_alias(b::tmem_objects_2cta_offsets_1cta_widths()) == "S/P/dQ(prev)");
    for (const auto& o : b::tmem_objects_1cta()) CHECK(o.cols.end <= 512u);
    for (const auto& o : b::tmem_objects_2cta()) CHECK(o.cols.end <= 512u);
  }

  TEST_CASE("the kernel's TMEM map over its own schedule: legal; dQ early or no dq_free wait alias dP^T") {
    // src/protocol/fa4_bwd_plan.h: the columns of BwdMmaPlan and the order of bwd_tile_schedule,
    // the objects src/sm100/fa4_bwd.cuh runs (never executed: no Blackwell GPU).
    for (int d : {64, 128})
      for (int J : {1, 2, 5}) {
        CAPTURE(d);
        CAPTURE(J);
        const auto objs = b::kernel_tmem_objects(d, J, b::KernelTmemMutation::kNone);
        CHECK(objs.size() == static_cast<size_t>(5 * J + 2));
        CHECK(b::first_illegal_alias(objs) == "");
        for (const auto& o : objs) CHECK(o.cols.end <= 512u);
        CHECK(b::first_illegal_alias(b::kernel_tmem_objects(d, J, b::KernelTmemMutation::kDqBeforeDsReady)) ==
              "dP^T/dQ");
      }
    // Without the dq_free wait, dP^T(j+1) lands on dQ(j) before the reduction warps are known to have
    // read it (needs two steps).
    CHECK(b::first_illegal_alias(b::kernel_tmem_objects(128, 1, b::KernelTmemMutation::kNoDqFreeWait)) == "");
    CHECK(b::first_illegal_alias(b::kernel_tmem_objects(128, 3, b::KernelTmemMutation::kNoDqFreeWait)) == "dQ/dP^T");
  }

  TEST_CASE("the kernel's deterministic dQ writers complete in lock order; the wrong causal span deadlocks") {
    // fa4bwd::key_block (deterministic: causal key blocks from the last) and fa4bwd::dq_lock.
    for (bool causal : {false, true})
      for (int sq : {128, 300, 1000})
        for (int sk : {128, 513, 1000}) {
          const int m_blocks = (sq + 127) / 128;
          for (int m = 0; m < m_blocks; ++m) {
            CAPTURE(causal);
            CAPTURE(sq);
            CAPTURE(sk);
            CAPTURE(m);
            const b::SimResult r = b::kernel_dq_writers(sq, sk, causal, m, false);
            CHECK_FALSE(r.deadlock);
            // Non-causal: key blocks ascending; causal (SPT): from the last block that reaches tile m down.
            for (size_t i = 1; i < r.order.size(); ++i) CHECK(causal ? r.order[i] < r.order[i - 1] : r.order[i] > r.order[i - 1]);
          }
        }
    // Counting the causal lock over every key block (not those reaching tile 0) leaves lock 0 unowned.
    const b::SimResult bad = b::kernel_dq_writers(300, 1000, true, 0, true);
    CHECK(bad.deadlock);
  }

  TEST_CASE("the 2-CTA kernel's deterministic dQ writers complete in lock order (pairs, then rank)") {
    for (bool causal : {false, true})
      for (int sk : {300, 512, 900})
        for (int m = 0; m < 6; ++m) {
          CAPTURE(causal);
          CAPTURE(sk);
          CAPTURE(m);
          const b::SimResult r = b::kernel_pair_dq_writers(700, sk, causal, m);
          CHECK_FALSE(r.deadlock);
          // Rank 0 before rank 1 inside each pair; causal: the last pair that reaches the tile first.
          for (size_t i = 1; i < r.order.size(); i += 2) CHECK(r.order[i] == r.order[i - 1] + 1);
          if (causal && r.order.size() >= 4) CHECK(r.order[0] > r.order[2]);
        }
  }

  TEST_CASE("writer orders: FP32 order, causal SPT locks, tail bridge") {
    const auto& c = b::fp32_example();
    CHECK(b::fp32_sum_in_order(c, {0, 1, 2, 3}) == 3.0f);  // the enforced writer order
    CHECK(b::fp32_sum_in_order(c, {0, 2, 1, 3}) == 4.0f);  // another arrival order

    CHECK(wo::lock_dense(5) == 5);
    const auto w = b::causal_spt_writers();
    REQUIRE(w.size() == 3u);
    CHECK(w[0].id == 1); CHECK(w[0].lock == 2);
    CHECK(w[1].id == 2); CHECK(w[1].lock == 1);
    CHECK(w[2].id == 3); CHECK(w[2].lock == 0);
    const b::SimResult cs = b::simulate_writers(w, 3, false);
    CHECK_FALSE(cs.deadlock);
    CHECK(cs.order == std::vector<int>{3, 2, 1});
    for (int h = 0; h < 8; ++h) CHECK(wo::lock_gqa(h, 4) == h % 4);

    const b::SimResult dense = b::simulate_writers({{3, 3}, {1, 1}, {0, 0}, {2, 2}}, 4, false);
    CHECK(dense.order == std::vector<int>{0, 1, 2, 3});  // arrival in any order, writes in lock order

    const b::SimResult miss = b::simulate_writers({{0, 0}, {2, 2}, {3, 3}}, 4, false);
    CHECK(miss.deadlock);
    CHECK(miss.completed == 1);  // deadlock after the first writer
    const b::SimResult br = b::simulate_writers({{0, 0}, {2, 2}, {3, 3}}, 4, true);
    CHECK_FALSE(br.deadlock);
    CHECK(br.order == std::vector<int>{0, 2, 3});
  }

  TEST_CASE("writer protocol step order") {
    using S = wo::Step;
    wo::WriterProtocol ok;
    for (S s : {S::kWaitEq, S::kStage, S::kFenceBarrier, S::kReduceAdd, S::kWaitBulk, S::kArriveInc})
      CHECK(ok.step(s) == wo::WriterError::kOk);
    CHECK(ok.next == 0);

    wo::WriterProtocol a;  // release the lock before the bulk reduce completed
    for (S s : {S::kWaitEq, S::kStage, S::kFenceBarrier, S::kReduceAdd}) a.step(s);
    CHECK(a.step(S::kArriveInc) == wo::WriterError::kReleaseBeforeBulkComplete);

    wo::WriterProtocol f;  // reduce before the shared fence / reduction-warp barrier
    f.step(S::kWaitEq);
    f.step(S::kStage);
    CHECK(f.step(S::kReduceAdd) == wo::WriterError::kReduceBeforeFence);

    wo::WriterProtocol l;  // write before the lock turn
    CHECK(l.step(S::kStage) == wo::WriterError::kStageBeforeLock);

    wo::OrderedSemaphore sem;
    CHECK(sem.ready(0));
    sem.bridge(1);  // not this slot's turn: no effect
    CHECK(sem.value == 0);
    sem.arrive_inc();
    sem.bridge(1);
    CHECK(sem.ready(2));
  }

  // Failure lab: a backward that counts only four MMAs forgets that the forward kept no scores.
  TEST_CASE("failure lab: only four MMAs leaves P without a producer; five give 2.5x the forward") {
    const auto five = b::bwd_mma_graph(true), four = b::bwd_mma_graph(false);
    CHECK(five.size() == 5);
    CHECK(b::check_mma_graph(five) == "ok");
    CHECK(b::bwd_over_fwd_flops(five) == 2.5);
    CHECK(four.size() == 4);
    CHECK(b::check_mma_graph(four) == "dV needs P (from S), which no MMA produces and the forward does not keep");
    CHECK(b::bwd_over_fwd_flops(four) == 2.0);
  }
}
