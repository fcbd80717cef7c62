// The sliding window and the softcap on the host (no GPU): the C ABI's validation and statuses, the
// backward's refusal, the launch plan's choice of the local kernels, FlashAttention's normalisation
// of the window, and the block range a tile walks (fa3::window_blocks) against a count from the
// definition (query i sees key j iff i + d - left <= j <= i + d + right, d = seqlen_k - seqlen_q).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "include/flashptx.h"
#include "src/kernels.h"
#include "src/plan.h"
#include "src/sm90/fa3_fwd_config.h"

namespace {

alignas(16) unsigned char g_fake[4][64];
const flashptx::Device kH200{0, 90, 132};

flashptx_fwd_params problem(int64_t sq, int64_t sk, int64_t d, int causal) {
  flashptx_fwd_params p;
  flashptx_fwd_params_contiguous(&p, g_fake[0], g_fake[1], g_fake[2], g_fake[3], nullptr, 2, sq, sk, 4, 2, d,
                                 FLASHPTX_BF16, causal);
  return p;
}

std::string kernel_of(const flashptx_fwd_params& p) {
  flashptx::FwdPlan plan;
  std::string err;
  REQUIRE_MESSAGE(flashptx::plan_fwd(p, {}, kH200, &plan, &err) == FLASHPTX_OK, err);
  return plan.launch.kernel->name;
}

}  // namespace

TEST_SUITE("host variants") {

TEST_CASE("window and softcap validation: statuses and messages") {
  flashptx_fwd_params p = problem(100, 100, 128, 0);
  CHECK(flashptx_fwd_check(&p) == FLASHPTX_OK);
  p.window = 1;
  p.window_left = -2;
  CHECK(flashptx_fwd_check(&p) == FLASHPTX_ERR_BAD_WINDOW);
  CHECK(std::string(flashptx_last_error()).find("window_left is -2") != std::string::npos);
  p.window_left = -1;
  p.window_right = -5;
  CHECK(flashptx_fwd_check(&p) == FLASHPTX_ERR_BAD_WINDOW);
  p.window = 0;  // the bounds are not read without the flag
  CHECK(flashptx_fwd_check(&p) == FLASHPTX_OK);
  for (float bad : {-0.5f, NAN, INFINITY}) {
    p = problem(100, 100, 128, 0);
    p.softcap = bad;
    CHECK(flashptx_fwd_check(&p) == FLASHPTX_ERR_BAD_SOFTCAP);
  }
  CHECK(std::string(flashptx_status_name(FLASHPTX_ERR_UNSUPPORTED)) == "FLASHPTX_ERR_UNSUPPORTED");
  CHECK(std::string(flashptx_status_name(FLASHPTX_ERR_BAD_WINDOW)) == "FLASHPTX_ERR_BAD_WINDOW");
  CHECK(std::string(flashptx_status_name(FLASHPTX_ERR_BAD_SOFTCAP)) == "FLASHPTX_ERR_BAD_SOFTCAP");
  // Varlen: the same checks.
  const int32_t cu[3] = {0, 50, 100};
  flashptx_fwd_varlen_params v;
  flashptx_fwd_varlen_params_contiguous(&v, g_fake[0], g_fake[1], g_fake[2], g_fake[3], nullptr, cu, cu, 2, 4, 2, 128,
                                        FLASHPTX_BF16, 0);
  CHECK(flashptx_fwd_varlen_check(&v) == FLASHPTX_OK);
  v.window = 1;
  v.window_right = -2;
  CHECK(flashptx_fwd_varlen_check(&v) == FLASHPTX_ERR_BAD_WINDOW);
  v.window_right = 3;
  v.softcap = -1.f;
  CHECK(flashptx_fwd_varlen_check(&v) == FLASHPTX_ERR_BAD_SOFTCAP);
}

TEST_CASE("the backward takes a window and a softcap: statuses, and the local kernel the plan picks") {
  flashptx_bwd_params b;
  flashptx_bwd_params_contiguous(&b, g_fake[0], g_fake[1], g_fake[2], g_fake[3], nullptr, g_fake[0], g_fake[1],
                                 g_fake[2], g_fake[3], 1, 128, 128, 2, 2, 128, FLASHPTX_BF16, 0);
  int64_t bytes = 0;
  CHECK(flashptx_bwd_workspace_size(&b, &bytes) == FLASHPTX_OK);
  const flashptx_status plain_check = flashptx_bwd_check(&b);  // the fake buffers' status, whatever it is
  b.window = 1;
  b.window_left = 64;
  CHECK(flashptx_bwd_workspace_size(&b, &bytes) == FLASHPTX_OK);
  CHECK(flashptx_bwd_check(&b) == plain_check);  // no longer UNSUPPORTED: the same status as without
  b.window_left = -2;
  CHECK(flashptx_bwd_workspace_size(&b, &bytes) == FLASHPTX_ERR_BAD_WINDOW);
  b.window_left = b.window_right = -1;  // a window of (-1, -1) is none
  CHECK(flashptx_bwd_workspace_size(&b, &bytes) == FLASHPTX_OK);
  b.softcap = 30.f;
  CHECK(flashptx_bwd_workspace_size(&b, &bytes) == FLASHPTX_OK);
  b.softcap = -1.f;
  CHECK(flashptx_bwd_workspace_size(&b, &bytes) == FLASHPTX_ERR_BAD_SOFTCAP);
  b.softcap = NAN;
  CHECK(flashptx_bwd_workspace_size(&b, &bytes) == FLASHPTX_ERR_BAD_SOFTCAP);

  // The plan: the local kernel for a bounded window or a softcap, the plain one otherwise (a window
  // (-1, 0) is the causal mask).
  for (int64_t d : {64, 128, 256})
    for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16}) {
      const std::string dt = t == FLASHPTX_BF16 ? "bf16" : "fp16";
      flashptx_bwd_params p;
      flashptx_bwd_params_contiguous(&p, g_fake[0], g_fake[1], g_fake[2], g_fake[3], nullptr, g_fake[0], g_fake[1],
                                     g_fake[2], g_fake[3], 2, 1000, 1100, 4, 2, d, t, 0);
      auto plan_of = [&](const flashptx_bwd_params& x, flashptx::BwdPlan* plan) {
        std::string err;
        REQUIRE_MESSAGE(flashptx::plan_bwd(x, {}, kH200, plan, &err) == FLASHPTX_OK, err);
        plan->main.grid.x = 0;  // the fake buffers have no tensor maps: the encoding skips them
        REQUIRE_MESSAGE(flashptx::encode_bwd_args(x, plan, &err) == FLASHPTX_OK, err);
        return std::string(plan->main.kernel->name);
      };
      flashptx::BwdPlan plan;
      const std::string plain = "fa3_bwd_sm90_" + dt + "_d" + std::to_string(d);
      const std::string local = "fa3_bwd_local_sm90_" + dt + "_d" + std::to_string(d);
      CHECK(plan_of(p, &plan) == plain);
      CHECK(!plan.local);
      p.window = 1;
      p.window_left = -1;
      p.window_right = 0;  // the causal mask: the plain kernel, causal
      CHECK(plan_of(p, &plan) == plain);
      CHECK(plan.args.causal == 1);
      p.window_left = 100;
      p.window_right = 7;
      CHECK(plan_of(p, &plan) == local);
      CHECK(plan.local);
      CHECK((plan.local_args.window_left == 100 && plan.local_args.window_right == 7));
      CHECK(plan.local_args.softcap_prescale == 0.f);
      CHECK(plan.args.causal == 0);
      CHECK(!plan.dq_rotated);
      p.causal = 1;  // causal + window: right folds to 0
      CHECK(plan_of(p, &plan) == local);
      CHECK((plan.local_args.window_left == 100 && plan.local_args.window_right == 0 && plan.args.causal == 0));
      p.causal = 0;
      p.window = 0;
      p.softcap = 20.f;  // the softcap alone: the local kernel, an unbounded window
      CHECK(plan_of(p, &plan) == local);
      const float scale = 1.f / std::sqrt(static_cast<float>(d));
      CHECK((plan.local_args.window_left == -1 && plan.local_args.window_right == -1));
      CHECK(plan.local_args.softcap_prescale == doctest::Approx(scale / 20.f));
      CHECK(plan.local_args.softcap_ln2_inv == doctest::Approx(0.693147f / 20.f));
      CHECK(plan.args.softmax_scale == doctest::Approx(scale));  // dK, dQ: the call's scale
      CHECK(plan.args.softmax_scale_log2 == doctest::Approx(20.f * 1.442695f));
      CHECK(plan.aux.softmax_scale == doctest::Approx(scale));
      // A plain kernel forced onto a capped call: an option error.
      flashptx::BwdOptions o;
      o.kernel = plain.c_str();
      std::string err;
      CHECK(flashptx::plan_bwd(p, o, kH200, &plan, &err) == FLASHPTX_ERR_BAD_OPTION);
      CHECK(err.find("no sliding window or softcap") != std::string::npos);
      // Deterministic with a window: the ascending order (the rotated one is the plain kernels').
      p.deterministic = 1;
      p.window = 1;
      p.window_left = 30;
      p.window_right = 30;
      CHECK(plan_of(p, &plan) == local);
      CHECK(!plan.dq_rotated);
      o.kernel = nullptr;
      o.dq_order = flashptx::DqOrder::kRotated;
      CHECK(flashptx::plan_bwd(p, o, kH200, &plan, &err) == FLASHPTX_ERR_BAD_OPTION);
    }
  // A head dim without a local kernel answers UNSUPPORTED_HEAD_DIM.
  b = flashptx_bwd_params{};
  flashptx_bwd_params_contiguous(&b, g_fake[0], g_fake[1], g_fake[2], g_fake[3], nullptr, g_fake[0], g_fake[1],
                                 g_fake[2], g_fake[3], 1, 128, 128, 2, 2, 32, FLASHPTX_BF16, 0);
  b.softcap = 10.f;
  CHECK(flashptx_bwd_workspace_size(&b, &bytes) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
  CHECK(std::string(flashptx_last_error()).find("head_dim 32") != std::string::npos);
}

TEST_CASE("the plan: local kernels for a real window or a softcap, today's kernels otherwise") {
  for (int64_t d : {64, 128, 256}) {
    flashptx_fwd_params p = problem(1000, 1000, d, 0);
    const std::string plain = kernel_of(p);
    const std::string causal = kernel_of(problem(1000, 1000, d, 1));
    CHECK(plain.find("local") == std::string::npos);
    p.window = 1;
    p.window_left = p.window_right = -1;  // none
    CHECK(kernel_of(p) == plain);
    p.window_right = 0;  // the causal mask
    CHECK(kernel_of(p) == causal);
    p.window_left = 5000;  // past the sequence: unbounded, still causal
    CHECK(kernel_of(p) == causal);
    p.window_left = 256;
    CHECK(kernel_of(p) == "fa3_fwd_local_sm90_bf16_d" + std::to_string(d));
    flashptx_fwd_params c = problem(1000, 1000, d, 0);
    c.softcap = 30.f;
    CHECK(kernel_of(c) == "fa3_fwd_local_sm90_bf16_d" + std::to_string(d));
    // A local kernel's plan: one CTA per tile, every tile.
    flashptx::FwdPlan plan;
    std::string err;
    REQUIRE(flashptx::plan_fwd(c, {}, kH200, &plan, &err) == FLASHPTX_OK);
    CHECK(plan.launch.schedule == flashptx::Schedule::kOnePerTile);
    CHECK(plan.launch.grid.x == (1000 + 127) / 128 * 4 * 2);
    // Forcing a kernel without the window onto a windowed problem is an option error.
    flashptx::FwdOptions o;
    o.kernel = plain.c_str();
    CHECK(flashptx::plan_fwd(c, o, kH200, &plan, &err) == FLASHPTX_ERR_BAD_OPTION);
    CHECK(err.find("no sliding window or softcap") != std::string::npos);
  }
  // FlashAttention's normalisation: causal folds in as right = 0; a bound no row reaches is -1.
  const auto m1 = flashptx::fwd_modifiers(1, 100, 7, true, 20.f, 1000, 1200);
  CHECK((m1.local && m1.window_left == 100 && m1.window_right == 0 && m1.softcap == 20.f));
  const auto m2 = flashptx::fwd_modifiers(1, 1199, 999, false, 0.f, 1000, 1200);  // both past: none
  CHECK((!m2.local && !m2.causal && m2.window_left == -1 && m2.window_right == -1));
  const auto m3 = flashptx::fwd_modifiers(1, 1198, 998, false, 0.f, 1000, 1200);  // both just inside
  CHECK((m3.local && m3.window_left == 1198 && m3.window_right == 998));
  const auto m4 = flashptx::fwd_modifiers(1, -1, 0, false, 0.f, 1000, 1200);  // the causal mask
  CHECK((!m4.local && m4.causal));
  const auto m5 = flashptx::fwd_modifiers(0, 5, 5, false, 0.f, 1000, 1200);  // bounds without the flag
  CHECK((!m5.local && !m5.causal));
  // sm_100 has no local kernel: a status, not a launch.
  flashptx_fwd_params p = problem(1000, 1000, 128, 0);
  p.softcap = 5.f;
  flashptx::FwdPlan plan;
  std::string err;
  CHECK(flashptx::plan_fwd(p, {}, flashptx::Device{0, 100, 148}, &plan, &err) != FLASHPTX_OK);
}

TEST_CASE("the plan: head dims 96 and 192 and (192, 128): one local kernel per shape for a window, a softcap or sinks") {
  alignas(16) static float sinks[4];
  struct D { int64_t d, dv; const char* plain; const char* local; };
  for (const D& x : {D{96, 0, "fa3_fwd_sm90_bf16_d96", "fa3_fwd_local_sm90_bf16_d96"},
                     D{192, 0, "fa3_fwd_sm90_bf16_d192", "fa3_fwd_local_sm90_bf16_d192"},
                     D{192, 128, "fa3_fwd_sm90_bf16_d192_v128", "fa3_fwd_local_sm90_bf16_d192_v128"}}) {
    INFO(x.local);
    auto at = [&](int causal) {
      flashptx_fwd_params p = problem(1000, 1000, x.d, causal);
      p.head_dim_v = x.dv;
      return p;
    };
    flashptx_fwd_params p = at(0);
    CHECK(kernel_of(p) == x.plain);  // no modifier: the plain kernel
    CHECK(kernel_of(at(1)) == x.plain);
    p.window = 1;
    p.window_left = -1;
    p.window_right = 0;  // the causal mask: the plain kernel
    CHECK(kernel_of(p) == x.plain);
    p.window_left = 100;  // a window
    CHECK(kernel_of(p) == x.local);
    flashptx_fwd_params c = at(1);
    c.softcap = 30.f;  // a softcap
    CHECK(kernel_of(c) == x.local);
    flashptx_fwd_params s = at(1);
    s.sinks = sinks;  // sinks: the same kernel (FwdConfig::sinks_optional)
    CHECK(kernel_of(s) == x.local);
    s.window = 1;
    s.window_left = 64;
    s.window_right = 0;
    s.softcap = 20.f;
    CHECK(kernel_of(s) == x.local);
    // One CTA per tile, every tile (128-row tiles).
    flashptx::FwdPlan plan;
    std::string err;
    REQUIRE(flashptx::plan_fwd(s, {}, kH200, &plan, &err) == FLASHPTX_OK);
    CHECK(plan.launch.schedule == flashptx::Schedule::kOnePerTile);
    CHECK(plan.launch.grid.x == (1000 + 127) / 128 * 4 * 2);
    CHECK(plan.launch.kernel->head_dim == x.d);
    // Forced: the local kernel runs with or without sinks and modifiers (its sinks are optional);
    // the plain kernel refuses a window and sinks.
    flashptx::FwdOptions o;
    o.kernel = x.local;
    CHECK(flashptx::plan_fwd(at(0), o, kH200, &plan, &err) == FLASHPTX_OK);
    CHECK(flashptx::plan_fwd(s, o, kH200, &plan, &err) == FLASHPTX_OK);
    o.kernel = x.plain;
    CHECK(flashptx::plan_fwd(p, o, kH200, &plan, &err) == FLASHPTX_ERR_BAD_OPTION);
    CHECK(err.find("no sliding window or softcap") != std::string::npos);
    flashptx_fwd_params ps = at(0);
    ps.sinks = sinks;
    CHECK(flashptx::plan_fwd(ps, o, kH200, &plan, &err) == FLASHPTX_ERR_BAD_OPTION);
    CHECK(err.find("has no attention sinks") != std::string::npos);
    // A local kernel of the other dims forced here: an option error (its head dim).
    o.kernel = "fa3_fwd_local_sm90_bf16_d128";
    CHECK(flashptx::plan_fwd(p, o, kH200, &plan, &err) == FLASHPTX_ERR_BAD_OPTION);
  }
  // fp16 has its own.
  flashptx_fwd_params h = problem(100, 100, 96, 0);
  h.q_dtype = h.k_dtype = h.v_dtype = h.o_dtype = FLASHPTX_FP16;
  h.softcap = 10.f;
  CHECK(kernel_of(h) == "fa3_fwd_local_sm90_fp16_d96");
  // The table rows: window, softcap, sinks and sinks_optional on, the plain kernels' shapes.
  int rows = 0;
  for (const flashptx::KernelEntry& k : flashptx::fa3_fwd_hdim_local_kernels()) {
    int on = 0;
    for (const flashptx::KernelSwitch& s : k.switches)
      for (const char* name : {"window", "softcap", "sinks", "sinks_optional"})
        if (std::string(s.name) == name && s.value != 0) ++on;
    CHECK_MESSAGE(on == 4, k.name);
    const flashptx::KernelEntry* twin = nullptr;
    for (const flashptx::KernelEntry& e : flashptx::fa3_fwd_hdim_kernels())
      if (e.dtype == k.dtype && e.head_dim == k.head_dim && e.head_dim_v == k.head_dim_v) twin = &e;
    REQUIRE_MESSAGE(twin != nullptr, k.name);
    CHECK((twin->block_m == k.block_m && twin->block_n == k.block_n && twin->stages == k.stages &&
           twin->smem_bytes == k.smem_bytes));
    ++rows;
  }
  CHECK(rows == 6);
  // No other kernel has optional sinks (the sink kernels of d64/128/256 need the array).
  int optional = 0;
  for (const flashptx::KernelEntry& k : flashptx::kernel_table())
    for (const flashptx::KernelSwitch& s : k.switches)
      if (std::string(s.name) == "sinks_optional" && s.value != 0) ++optional;
  CHECK(optional == 12);  // and their varlen twins (fa3_fwd_varlen_hdim_local_kernels)
}

TEST_CASE("fa3::window_blocks: the blocks a tile walks hold exactly the keys its rows see") {
  // For every tile of several shapes and windows: [n_min, n_max) covers every visible key of the
  // tile's rows, and its first and last blocks each hold one (no block is loaded for nothing).
  const int lens[][2] = {{1, 1}, {100, 100}, {200, 333}, {333, 200}, {129, 1000}, {1000, 129}};
  const int windows[][2] = {{-1, -1}, {-1, 0}, {0, 0}, {50, 0}, {17, 33}, {-1, 40}, {300, -1}, {1000, 1000}};
  for (const auto& l : lens)
    for (const auto& w : windows)
      for (int bm : {128})
        for (int bn : {64, 128}) {
          const int sq = l[0], sk = l[1], diag = sk - sq;
          for (int m = 0; m * bm < sq; ++m) {
            const auto r = flashptx::fa3::window_blocks(m, bm, bn, sq, sk, w[0], w[1]);
            int lo = sk, hi = -1;  // visible keys of the tile
            for (int i = m * bm; i < std::min(sq, m * bm + bm); ++i)
              for (int j = 0; j < sk; ++j)
                if ((w[0] < 0 || j >= i + diag - w[0]) && (w[1] < 0 || j <= i + diag + w[1])) {
                  lo = std::min(lo, j);
                  hi = std::max(hi, j);
                }
            INFO("sq=" << sq << " sk=" << sk << " window=(" << w[0] << "," << w[1] << ") bn=" << bn << " m=" << m);
            if (hi < 0) {
              CHECK(r.n_max - r.n_min <= 0);
            } else {
              CHECK(r.n_min == lo / bn);
              CHECK(r.n_max == hi / bn + 1);
            }
          }
        }
}

}  // TEST_SUITE
