// The attention sinks on the host (no GPU): the C ABI's validation and statuses, the launch plan's
// choice of the sink kernels (and its refusals: sm_100, a forced kernel without sinks), the
// backward's sink launch, and the fp64 reference's sink gradient against central differences of
// its own forward (L = sum(O * dO), the reference's definition of the loss), as are dQ, dK and dV
// with sinks: the check that dS keeps its form (src/sm90/fa3_bwd_sink.h) and that dsinks is the
// derivative it claims to be.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "src/kernels.h"
#include "src/plan.h"
#include "tools/support/reference.h"

namespace {

alignas(16) unsigned char g_fake[4][64];
alignas(16) float g_sinks[8];
const flashptx::Device kH200{0, 90, 132};

flashptx_fwd_params problem(int64_t sq, int64_t sk, int64_t d, int causal) {
  flashptx_fwd_params p;
  flashptx_fwd_params_contiguous(&p, g_fake[0], g_fake[1], g_fake[2], g_fake[3], nullptr, 2, sq, sk, 4, 2, d,
                                 FLASHPTX_BF16, causal);
  p.sinks = g_sinks;
  return p;
}
flashptx_bwd_params bwd_problem() {
  flashptx_bwd_params b;
  flashptx_bwd_params_contiguous(&b, g_fake[0], g_fake[1], g_fake[2], g_fake[3], reinterpret_cast<float*>(g_fake[0]),
                                 g_fake[0], g_fake[1], g_fake[2], g_fake[3], 1, 128, 128, 4, 2, 128, FLASHPTX_BF16, 0);
  b.sinks = g_sinks;
  b.dsinks = g_sinks + 4;
  return b;
}

}  // namespace

TEST_SUITE("host sinks") {

TEST_CASE("sinks validation: alignment, both or neither in the backward, the backward's other refusals") {
  flashptx_fwd_params p = problem(100, 100, 128, 0);
  CHECK(flashptx_fwd_check(&p) == FLASHPTX_OK);
  p.sinks = reinterpret_cast<const float*>(reinterpret_cast<const char*>(g_sinks) + 2);
  CHECK(flashptx_fwd_check(&p) == FLASHPTX_ERR_MISALIGNED);
  CHECK(std::string(flashptx_last_error()).find("sinks must be 4-byte aligned") != std::string::npos);

  // (No workspace is set: the sinks are checked before it, so the statuses below are theirs.)
  flashptx_bwd_params b = bwd_problem();
  int64_t bytes = 0;
  CHECK(flashptx_bwd_workspace_size(&b, &bytes) == FLASHPTX_OK);
  CHECK(flashptx_bwd_check(&b) == FLASHPTX_ERR_WORKSPACE);
  b.dsinks = nullptr;
  CHECK(flashptx_bwd_check(&b) == FLASHPTX_ERR_BAD_SINKS);
  CHECK(std::string(flashptx_last_error()).find("sinks is set but dsinks is NULL") != std::string::npos);
  b = bwd_problem();
  b.sinks = nullptr;
  CHECK(flashptx_bwd_check(&b) == FLASHPTX_ERR_BAD_SINKS);
  CHECK(std::string(flashptx_last_error()).find("dsinks is set but sinks is NULL") != std::string::npos);
  b = bwd_problem();
  b.dsinks = reinterpret_cast<float*>(reinterpret_cast<char*>(g_sinks + 4) + 1);
  CHECK(flashptx_bwd_check(&b) == FLASHPTX_ERR_MISALIGNED);
  // Sinks together with a window and a softcap (the sinks' gradient is independent of the mask).
  b = bwd_problem();
  b.window = 1;
  b.window_left = 64;
  b.softcap = 10.f;
  CHECK(flashptx_bwd_check(&b) == FLASHPTX_ERR_WORKSPACE);  // as without them (no workspace set): not UNSUPPORTED
  CHECK(std::string(flashptx_status_name(FLASHPTX_ERR_BAD_SINKS)) == "FLASHPTX_ERR_BAD_SINKS");
}

TEST_CASE("the plan: a sink kernel per head dim with any mask, window and softcap; refusals") {
  for (int64_t d : {64, 128, 256}) {
    const std::string want = "fa3_fwd_sink_sm90_bf16_d" + std::to_string(d);
    for (int causal : {0, 1}) {
      flashptx_fwd_params p = problem(1000, 1000, d, causal);
      flashptx::FwdPlan plan;
      std::string err;
      REQUIRE_MESSAGE(flashptx::plan_fwd(p, {}, kH200, &plan, &err) == FLASHPTX_OK, err);
      CHECK(plan.launch.kernel->name == want);
      CHECK(plan.launch.schedule == flashptx::Schedule::kOnePerTile);
      CHECK(plan.launch.grid.x == (1000 + 127) / 128 * 4 * 2);
      p.window = 1;
      p.window_left = 100;
      p.softcap = 30.f;
      REQUIRE(flashptx::plan_fwd(p, {}, kH200, &plan, &err) == FLASHPTX_OK);
      CHECK(plan.launch.kernel->name == want);
      // A kernel without sinks forced onto a problem with them, and the reverse: option errors.
      flashptx::FwdOptions o;
      const std::string local = "fa3_fwd_local_sm90_bf16_d" + std::to_string(d);
      o.kernel = local.c_str();
      CHECK(flashptx::plan_fwd(p, o, kH200, &plan, &err) == FLASHPTX_ERR_BAD_OPTION);
      CHECK(err.find("has no attention sinks") != std::string::npos);
      p.sinks = nullptr;
      o.kernel = want.c_str();
      CHECK(flashptx::plan_fwd(p, o, kH200, &plan, &err) == FLASHPTX_ERR_BAD_OPTION);
      CHECK(err.find("needs attention sinks") != std::string::npos);
    }
  }
  // The kernels' table rows: every sink kernel has the window, the softcap and the sinks.
  int rows = 0;
  for (const flashptx::KernelEntry& k : flashptx::fa3_fwd_sink_kernels()) {
    int on = 0;
    for (const flashptx::KernelSwitch& s : k.switches)
      if ((std::string(s.name) == "window" || std::string(s.name) == "softcap" || std::string(s.name) == "sinks") &&
          s.value != 0)
        ++on;
    CHECK_MESSAGE(on == 3, k.name);
    ++rows;
  }
  CHECK(rows == 6);
  // sm_100 has no sinks: a status, not a launch; the same for the backward.
  flashptx_fwd_params p = problem(1000, 1000, 128, 0);
  flashptx::FwdPlan plan;
  std::string err;
  CHECK(flashptx::plan_fwd(p, {}, flashptx::Device{0, 100, 148}, &plan, &err) != FLASHPTX_OK);
  flashptx_bwd_params b = bwd_problem();
  flashptx::BwdPlan bp;
  if (!flashptx::fa4_bwd_kernels().empty()) {
    flashptx_set_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, 1);
    CHECK(flashptx::plan_bwd(b, {}, flashptx::Device{0, 100, 148}, &bp, &err) == FLASHPTX_ERR_UNSUPPORTED);
    CHECK(flashptx::plan_fwd(p, {}, flashptx::Device{0, 100, 148}, &plan, &err) == FLASHPTX_ERR_UNSUPPORTED);
    flashptx_set_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, 0);
  }
  // The FA3 backward: the sink launch, one CTA per query head, only with sinks.
  REQUIRE_MESSAGE(flashptx::plan_bwd(b, {}, kH200, &bp, &err) == FLASHPTX_OK, err);
  CHECK(bp.sink.grid.x == 4);
  CHECK(std::string(bp.sink.kernel->name) == "fa3_bwd_sink_sm90");
  b.sinks = nullptr;
  b.dsinks = nullptr;
  REQUIRE(flashptx::plan_bwd(b, {}, kH200, &bp, &err) == FLASHPTX_OK);
  CHECK(bp.sink.grid.x == 0);
}

TEST_CASE("fp64 reference with sinks: dsinks, dQ, dK and dV are the central differences of L = sum(O * dO)") {
  // A small GQA problem in fp64 (no rounding anywhere), causal with Sq > Sk so that some rows see no
  // key (their LSE is the sink alone) and the sinks at several magnitudes.
  for (bool causal : {false, true}) {
    auto p = flashptx::ref::problem(2, 6, 5, 4, 2, 8, causal);
    p.sinks = {0.3, -1.5, 2.0, -0.7};
    std::mt19937_64 rng(causal ? 7 : 8);
    std::normal_distribution<double> nd(0.0, 1.0);
    std::vector<double> q(2 * 6 * 4 * 8), k(2 * 5 * 2 * 8), v(k.size()), dout(q.size());
    for (auto* x : {&q, &k, &v, &dout})
      for (double& e : *x) e = nd(rng);
    auto qv = flashptx::ref::contiguous_q(q.data(), flashptx::ref::Elem::kF64, p);
    const auto kv = flashptx::ref::contiguous_kv(k.data(), flashptx::ref::Elem::kF64, p);
    const auto vv = flashptx::ref::contiguous_kv(v.data(), flashptx::ref::Elem::kF64, p);
    const auto dov = flashptx::ref::contiguous_q(dout.data(), flashptx::ref::Elem::kF64, p);
    auto loss = [&](const flashptx::ref::Problem& pp) {
      const auto f = flashptx::ref::forward(pp, qv, kv, vv);
      double l = 0;
      for (size_t i = 0; i < f.o.size(); ++i) l += f.o[i] * dout[i];
      return l;
    };
    const auto g = flashptx::ref::backward(p, qv, kv, vv, dov);
    REQUIRE(g.dsinks.size() == 4);
    const double h = 1e-6;
    for (size_t s = 0; s < 4; ++s) {
      auto up = p, dn = p;
      up.sinks[s] += h;
      dn.sinks[s] -= h;
      const double fd = (loss(up) - loss(dn)) / (2 * h);
      INFO("causal=" << causal << " head " << s << ": dsinks " << g.dsinks[s] << ", difference " << fd);
      CHECK(std::fabs(fd - g.dsinks[s]) <= 1e-6 * (1 + std::fabs(fd)));
      CHECK(std::fabs(g.dsinks[s]) > 1e-3);  // not vacuous
    }
    // dQ at a few elements (the rows without a key among them when causal), by the same differences.
    for (size_t idx : {size_t(0), size_t(37), size_t(100), q.size() - 1}) {
      const double keep = q[idx];
      q[idx] = keep + h;
      const double lu = loss(p);
      q[idx] = keep - h;
      const double ld = loss(p);
      q[idx] = keep;
      const double fd = (lu - ld) / (2 * h);
      INFO("causal=" << causal << " dQ[" << idx << "] " << g.dq[idx] << ", difference " << fd);
      CHECK(std::fabs(fd - g.dq[idx]) <= 1e-6 * (1 + std::fabs(fd)));
    }
    // dV and dK at a few elements.
    for (auto [x, grad] : {std::pair{&v, &g.dv}, std::pair{&k, &g.dk}})
      for (size_t idx : {size_t(3), size_t(41), x->size() - 2}) {
        const double keep = (*x)[idx];
        (*x)[idx] = keep + h;
        const double lu = loss(p);
        (*x)[idx] = keep - h;
        const double ld = loss(p);
        (*x)[idx] = keep;
        const double fd = (lu - ld) / (2 * h);
        CHECK(std::fabs(fd - (*grad)[idx]) <= 1e-6 * (1 + std::fabs(fd)));
      }
    // Without sinks the reference is unchanged in form: no dsinks.
    auto none = p;
    none.sinks.clear();
    CHECK(flashptx::ref::backward(none, qv, kv, vv, dov).dsinks.empty());
  }
}

}  // TEST_SUITE
