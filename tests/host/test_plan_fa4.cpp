// The sm_100 launch plan (src/plan.cpp, plan_fa4_fwd) and the FA4 rows of the kernel table, on any
// machine: plan_fwd makes no CUDA call, so the dispatch to the FA4 kernels is checked here with a stated
// device (148 SMs, sm_100, as a B200), and so is the gate in front of it: without the caller's opt-in
// (FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100) an sm_100 device is refused. Nothing here launches anything.
#include <doctest/doctest.h>

#include <string>

#include "include/flashptx.h"
#include "src/kernels.h"
#include "src/plan.h"
#include "src/sm100/fa4_bwd_config.h"
#include "src/sm100/fa4_fwd_config.h"

namespace {

alignas(16) unsigned char g_fake[4][64];
const flashptx::Device kB200{0, 100, 148};
const flashptx::Device kH200{0, 90, 132};

// The caller's opt-in to the FA4 kernels (FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100) for one scope; the
// option as it was afterwards.
struct Sm100OptIn {
  int64_t before = 0;
  explicit Sm100OptIn(int64_t value = 1) {
    REQUIRE(flashptx_get_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, &before) == FLASHPTX_OK);
    REQUIRE(flashptx_set_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, value) == FLASHPTX_OK);
  }
  ~Sm100OptIn() { flashptx_set_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, before); }
};

flashptx_fwd_params problem(int64_t b, int64_t sq, int64_t sk, int64_t h, int64_t hkv, int64_t d, flashptx_dtype t,
                            int causal) {
  flashptx_fwd_params p;
  flashptx_fwd_params_contiguous(&p, g_fake[0], g_fake[1], g_fake[2], g_fake[3], nullptr, b, sq, sk, h, hkv, d, t,
                                 causal);
  return p;
}

template <flashptx::fa4::FwdConfig C>
void check_row(const char* name) {
  INFO(name);
  const flashptx::KernelEntry* k = flashptx::kernel_by_name(name);
  REQUIRE(k != nullptr);
  using L = flashptx::fa4::FwdLayout<C>;
  CHECK(k->family == flashptx::Family::kFa4Fwd);
  CHECK(k->head_dim == C.head_dim);
  CHECK(k->dtype == (C.bf16 ? FLASHPTX_BF16 : FLASHPTX_FP16));
  CHECK(k->block_m == L::kBlockM);
  CHECK(k->block_m == 256 * C.cta_group);
  CHECK(k->block_n == flashptx::fa4::kBlockN);
  CHECK(k->stages == C.kv_slots);
  CHECK(k->threads == 512);
  CHECK(k->cluster_ctas == C.cta_group);
  CHECK(k->smem_bytes == static_cast<int>(L::kSmemBytes));
  CHECK(k->smem_bytes <= 227 * 1024);
  CHECK(k->persistent);
}

}  // namespace

TEST_SUITE("host plan fa4") {

TEST_CASE("the FA4 rows of the kernel table are the configs the replay runs") {
  using namespace flashptx::fa4;
  check_row<kD64>("fa4_fwd_sm100_bf16_d64");
  check_row<fp16(kD64)>("fa4_fwd_sm100_fp16_d64");
  check_row<kD128>("fa4_fwd_sm100_bf16_d128");
  check_row<fp16(kD128)>("fa4_fwd_sm100_fp16_d128");
  check_row<kD128Pair>("fa4_fwd_sm100_bf16_d128_2cta");
  check_row<fp16(kD128Pair)>("fa4_fwd_sm100_fp16_d128_2cta");
  CHECK(flashptx::fa4_fwd_kernels().size() == 6u);
  CHECK(std::string(flashptx::family_name(flashptx::Family::kFa4Fwd)) == "fa4_fwd");
}

TEST_CASE("on sm_100 the forward rule picks an FA4 kernel of the problem, scheduled by cluster launch control") {
  const Sm100OptIn opted_in;
  for (int64_t d : {64, 128})
    for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16})
      for (int causal : {0, 1})
        for (int64_t s : {1, 100, 511, 512, 4096}) {
          INFO("d=" << d << " causal=" << causal << " s=" << s);
          flashptx::FwdPlan plan;
          std::string err;
          REQUIRE_MESSAGE(flashptx::plan_fwd(problem(2, s, s, 8, 2, d, t, causal), {}, kB200, &plan, &err) ==
                              FLASHPTX_OK,
                          err);
          const flashptx::KernelEntry& k = *plan.launch.kernel;
          CHECK(k.family == flashptx::Family::kFa4Fwd);
          CHECK(k.head_dim == d);
          CHECK(k.dtype == t);
          // The pair form for head dim 128, non-causal, at least one pair tile of rows (the rule's words).
          CHECK(k.cluster_ctas == ((d == 128 && !causal && s >= 512) ? 2 : 1));
          const int64_t tiles = (s + k.block_m - 1) / k.block_m * 8 * 2;
          CHECK(plan.launch.tiles == tiles);
          CHECK(plan.launch.grid.x == static_cast<unsigned>(tiles * k.cluster_ctas));
          CHECK(plan.launch.block.x == 512u);
          CHECK(plan.launch.smem_bytes == k.smem_bytes);
          CHECK(plan.launch.schedule == flashptx::Schedule::kClusterLaunchControl);
        }
  // The same problems on sm_90 still take FA3.
  flashptx::FwdPlan plan;
  std::string err;
  REQUIRE(flashptx::plan_fwd(problem(2, 4096, 4096, 8, 8, 128, FLASHPTX_BF16, 0), {}, kH200, &plan, &err) ==
          FLASHPTX_OK);
  CHECK(plan.launch.kernel->family == flashptx::Family::kFa3Fwd);
}

TEST_CASE("sm_100 refusals name their reason") {
  const Sm100OptIn opted_in;
  struct Bad {
    const char* what;
    flashptx::FwdOptions opt;
    flashptx_fwd_params p;
    flashptx::Device dev;
    flashptx_status want;
    const char* needle;
  };
  flashptx::FwdOptions fa3_on_100, persist, fa4_wrong_d, fa4_on_90, clc_on_90;
  fa3_on_100.kernel = "fa3_fwd_sm90_bf16_d128_n128";
  persist.schedule = flashptx::Schedule::kPersistent;
  fa4_wrong_d.kernel = "fa4_fwd_sm100_bf16_d64";
  fa4_on_90.kernel = "fa4_fwd_sm100_bf16_d128";
  clc_on_90.schedule = flashptx::Schedule::kClusterLaunchControl;
  const flashptx_fwd_params p = problem(1, 1024, 1024, 4, 4, 128, FLASHPTX_BF16, 0);
  const Bad bad[] = {
      {"head dim 256 has no FA4 kernel", {}, problem(1, 1024, 1024, 4, 4, 256, FLASHPTX_BF16, 0), kB200,
       FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, "FA4: 64 and 128"},
      {"an sm_90 kernel forced on sm_100", fa3_on_100, p, kB200, FLASHPTX_ERR_BAD_OPTION, "no sm_100 forward kernel"},
      {"a persistent schedule forced on FA4", persist, p, kB200, FLASHPTX_ERR_BAD_OPTION, "cluster launch control"},
      {"an FA4 kernel of another head dim", fa4_wrong_d, p, kB200, FLASHPTX_ERR_BAD_OPTION, "head_dim 64"},
      {"an FA4 kernel forced on sm_90", fa4_on_90, p, kH200, FLASHPTX_ERR_BAD_OPTION, "no forward kernel named"},
      {"the clc schedule on sm_90", clc_on_90, p, kH200, FLASHPTX_ERR_BAD_OPTION, "no cluster launch control"},
  };
  for (const Bad& b : bad) {
    INFO(b.what);
    flashptx::FwdPlan pl;
    std::string err;
    CHECK(flashptx::plan_fwd(b.p, b.opt, b.dev, &pl, &err) == b.want);
    CHECK_MESSAGE(err.find(b.needle) != std::string::npos, err);
  }
  flashptx::Schedule back{};
  CHECK(flashptx::parse_schedule("clc", &back));
  CHECK(back == flashptx::Schedule::kClusterLaunchControl);
}

// ---- the backward (src/sm100/fa4_bwd.cu; NEVER RUN: no Blackwell GPU) ----
namespace {
alignas(256) unsigned char g_bwd[10][256];
flashptx_bwd_params bwd_problem(int64_t sq, int64_t sk, int64_t h, int64_t hkv, int64_t d, flashptx_dtype t,
                                int causal) {
  flashptx_bwd_params p;
  flashptx_bwd_params_contiguous(&p, g_bwd[0], g_bwd[1], g_bwd[2], g_bwd[3], reinterpret_cast<const float*>(g_bwd[4]),
                                 g_bwd[5], g_bwd[6], g_bwd[7], g_bwd[8], 2, sq, sk, h, hkv, d, t, causal);
  return p;
}
}  // namespace

TEST_CASE("on sm_100 flashptx_bwd plans the FA4 backward and its sm_100a pre/postprocess; sm_90 keeps FA3") {
  const Sm100OptIn opted_in;
  using namespace flashptx::fa4bwd;
  for (int64_t d : {64, 128})
    for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16})
      for (int causal : {0, 1})
        for (int64_t hkv : {8, 2}) {
          INFO("d=" << d << " causal=" << causal << " hkv=" << hkv);
          const flashptx_bwd_params p = bwd_problem(300, 257, 8, hkv, d, t, causal);
          flashptx::BwdPlan plan;
          std::string err;
          REQUIRE_MESSAGE(flashptx::plan_bwd(p, {}, kB200, &plan, &err) == FLASHPTX_OK, err);
          const flashptx::KernelEntry& k = *plan.main.kernel;
          CHECK(k.family == flashptx::Family::kFa4Bwd);
          CHECK(k.head_dim == d);
          CHECK(k.dtype == t);
          CHECK(k.block_m == kBlockM);
          CHECK(k.block_n == kBlockN);
          CHECK(k.threads == kThreads);
          // d128 over 3 key blocks: the 2-CTA kernel (pair::use_pair), 2 pairs = 4 CTAs in clusters of 2.
          const bool pair = d == 128;
          CHECK(k.cluster_ctas == (pair ? 2 : 1));
          const int smem = d == 64 ? static_cast<int>(BwdLayout<kBwdD64>::kSmemBytes)
                                   : static_cast<int>(BwdPairLayout<true>::kSmemBytes);
          CHECK(k.smem_bytes == smem);
          CHECK(k.smem_bytes <= 227 * 1024);
          CHECK(plan.main.grid.x == (pair ? 4u : 3u));  // key blocks of 128: ceil(257 / 128)
          CHECK(plan.main.grid.y == 8u);
          CHECK(plan.main.grid.z == 2u);
          CHECK(plan.pre.kernel->family == flashptx::Family::kFa4BwdPre);
          CHECK(plan.post_dq.kernel->family == flashptx::Family::kFa4BwdPostDq);
          CHECK(plan.post_dq.grid.x == 3u);  // query blocks of 128: ceil(300 / 128)
          CHECK(plan.post_dq.smem_bytes == 0);
          CHECK(plan.post_dkv.kernel->family == flashptx::Family::kFa4BwdPostDkv);
          CHECK(plan.post_dkv.grid.x == (hkv != 8 ? 3u : 0u));
          // The workspace the ABI asks for covers this plan (rows padded to 128-row query blocks).
          int64_t ws = 0;
          REQUIRE(flashptx_bwd_workspace_size(&p, &ws) == FLASHPTX_OK);
          CHECK(ws >= plan.workspace.total);
          flashptx::BwdPlan h;
          REQUIRE(flashptx::plan_bwd(p, {}, kH200, &h, &err) == FLASHPTX_OK);
          CHECK(h.main.kernel->family == flashptx::Family::kFa3Bwd);
          CHECK(ws >= h.workspace.total);
        }
  // Head dim 256 has no FA4 backward; an FA3 kernel cannot be forced on sm_100, nor FA4 on sm_90.
  flashptx::BwdPlan plan;
  std::string err;
  CHECK(flashptx::plan_bwd(bwd_problem(100, 100, 4, 4, 256, FLASHPTX_BF16, 0), {}, kB200, &plan, &err) ==
        FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
  CHECK_MESSAGE(err.find("head dims 64 and 128") != std::string::npos, err);
  CHECK_MESSAGE(err.find("768 TMEM columns of 512") != std::string::npos, err);
  flashptx::BwdOptions o;
  o.kernel = "fa3_bwd_sm90_bf16_d128";
  CHECK(flashptx::plan_bwd(bwd_problem(100, 100, 4, 4, 128, FLASHPTX_BF16, 0), o, kB200, &plan, &err) ==
        FLASHPTX_ERR_BAD_OPTION);
  o.kernel = "fa4_bwd_sm100_bf16_d128";
  CHECK(flashptx::plan_bwd(bwd_problem(100, 100, 4, 4, 128, FLASHPTX_BF16, 0), o, kH200, &plan, &err) ==
        FLASHPTX_ERR_BAD_OPTION);
  CHECK(flashptx::plan_bwd(bwd_problem(100, 100, 4, 4, 128, FLASHPTX_BF16, 0), o, kB200, &plan, &err) == FLASHPTX_OK);
  // FA3's rotated deterministic dQ order: never for the FA4 kernel (it walks ascending), refused if forced.
  flashptx_bwd_params det = bwd_problem(1024, 512, 4, 4, 128, FLASHPTX_BF16, 0);
  det.deterministic = 1;
  flashptx::BwdOptions auto_order;
  REQUIRE(flashptx::plan_bwd(det, auto_order, kB200, &plan, &err) == FLASHPTX_OK);
  CHECK_FALSE(plan.dq_rotated);
  flashptx::BwdOptions rotated;
  rotated.dq_order = flashptx::DqOrder::kRotated;
  CHECK(flashptx::plan_bwd(det, rotated, kB200, &plan, &err) == FLASHPTX_ERR_BAD_OPTION);
  CHECK_MESSAGE(err.find("FA4 backward") != std::string::npos, err);
  CHECK(flashptx::fa4_bwd_kernels().size() == 10u);
  CHECK(flashptx::fa4_bwd_pair_kernels().size() == 2u);
  // The 1-CTA / 2-CTA rule: d128 with one key block (seqlen_k <= 128) stays 1-CTA; two or more take the
  // pair; d64 never; the pair kernel may be named, on sm_100 only; its Q/dO boxes are 64 rows.
  REQUIRE(flashptx::plan_bwd(bwd_problem(300, 128, 4, 4, 128, FLASHPTX_BF16, 0), {}, kB200, &plan, &err) == FLASHPTX_OK);
  CHECK(std::string(plan.main.kernel->name) == "fa4_bwd_sm100_bf16_d128");
  REQUIRE(flashptx::plan_bwd(bwd_problem(300, 129, 4, 4, 128, FLASHPTX_FP16, 1), {}, kB200, &plan, &err) == FLASHPTX_OK);
  CHECK(std::string(plan.main.kernel->name) == "fa4_bwd_sm100_fp16_d128_2cta");
  CHECK(plan.main.grid.x == 2u);
  REQUIRE(flashptx::plan_bwd(bwd_problem(300, 1000, 4, 4, 64, FLASHPTX_BF16, 0), {}, kB200, &plan, &err) == FLASHPTX_OK);
  CHECK(std::string(plan.main.kernel->name) == "fa4_bwd_sm100_bf16_d64");
  CHECK_FALSE(flashptx::fa4bwd::pair::use_pair(128, 128));
  CHECK(flashptx::fa4bwd::pair::use_pair(128, 129));
  CHECK_FALSE(flashptx::fa4bwd::pair::use_pair(64, 4096));
  o.kernel = "fa4_bwd_sm100_bf16_d128_2cta";
  REQUIRE(flashptx::plan_bwd(bwd_problem(100, 100, 4, 4, 128, FLASHPTX_BF16, 0), o, kB200, &plan, &err) == FLASHPTX_OK);
  CHECK(plan.main.grid.x == 2u);  // one pair (its second CTA past the keys)
  CHECK(flashptx::plan_bwd(bwd_problem(100, 100, 4, 4, 128, FLASHPTX_BF16, 0), o, kH200, &plan, &err) ==
        FLASHPTX_ERR_BAD_OPTION);
  CHECK(std::string(flashptx::family_name(flashptx::Family::kFa4Bwd)) == "fa4_bwd");
}

TEST_CASE("sm_100 without the caller's opt-in: FLASHPTX_ERR_UNSUPPORTED_DEVICE saying why and how to opt in") {
  const Sm100OptIn opted_out(0);
  const flashptx_fwd_params f = problem(1, 1024, 1024, 4, 4, 128, FLASHPTX_BF16, 0);
  const flashptx_bwd_params b = bwd_problem(300, 257, 8, 2, 128, FLASHPTX_BF16, 1);
  flashptx::FwdPlan fp;
  flashptx::BwdPlan bp;
  std::string ferr, berr;
  CHECK(flashptx::plan_fwd(f, {}, kB200, &fp, &ferr) == FLASHPTX_ERR_UNSUPPORTED_DEVICE);
  CHECK(flashptx::plan_bwd(b, {}, kB200, &bp, &berr) == FLASHPTX_ERR_UNSUPPORTED_DEVICE);
  for (const std::string& err : {ferr, berr}) {
    CHECK_MESSAGE(err.find("device 0 is sm_100") != std::string::npos, err);
    CHECK_MESSAGE(err.find("never executed on a Blackwell GPU") != std::string::npos, err);
    CHECK_MESSAGE(err.find("flashptx_set_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, 1)") != std::string::npos, err);
  }
  // A forced kernel does not get past the gate either.
  flashptx::FwdOptions forced;
  forced.kernel = "fa4_fwd_sm100_bf16_d128";
  CHECK(flashptx::plan_fwd(f, forced, kB200, &fp, &ferr) == FLASHPTX_ERR_UNSUPPORTED_DEVICE);
  // sm_90 is not gated.
  REQUIRE(flashptx::plan_fwd(f, {}, kH200, &fp, &ferr) == FLASHPTX_OK);
  CHECK(fp.launch.kernel->family == flashptx::Family::kFa3Fwd);
  REQUIRE(flashptx::plan_bwd(b, {}, kH200, &bp, &berr) == FLASHPTX_OK);
  // The workspace size is the same whatever the option (it covers the FA4 plan either way).
  int64_t ws_out = 0, ws_in = 0;
  REQUIRE(flashptx_bwd_workspace_size(&b, &ws_out) == FLASHPTX_OK);
  {
    const Sm100OptIn opted_in;
    REQUIRE(flashptx_bwd_workspace_size(&b, &ws_in) == FLASHPTX_OK);
    REQUIRE(flashptx::plan_fwd(f, {}, kB200, &fp, &ferr) == FLASHPTX_OK);
    CHECK(fp.launch.kernel->family == flashptx::Family::kFa4Fwd);
    REQUIRE(flashptx::plan_bwd(b, {}, kB200, &bp, &berr) == FLASHPTX_OK);
    CHECK(bp.main.kernel->family == flashptx::Family::kFa4Bwd);
    CHECK(ws_in >= bp.workspace.total);
  }
  CHECK(ws_in == ws_out);
  // Back to the default: refused again.
  CHECK(flashptx::plan_fwd(f, {}, kB200, &fp, &ferr) == FLASHPTX_ERR_UNSUPPORTED_DEVICE);
}

TEST_CASE("flashptx_set_option / flashptx_get_option: the option starts at 0; bad options and values are named") {
  int64_t v = -1;
  REQUIRE(flashptx_get_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, &v) == FLASHPTX_OK);
  CHECK(v == 0);  // nothing in this process has opted in outside a scope that put it back
  {
    const Sm100OptIn opted_in;
    REQUIRE(flashptx_get_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, &v) == FLASHPTX_OK);
    CHECK(v == 1);
    CHECK(flashptx::sm100_opted_in());
    // A refused value changes nothing.
    CHECK(flashptx_set_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, 2) == FLASHPTX_ERR_BAD_OPTION);
    CHECK(std::string(flashptx_last_error()) ==
          "FLASHPTX_ERR_BAD_OPTION: FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100 takes 0 or 1, not 2");
    CHECK(flashptx::sm100_opted_in());
  }
  CHECK_FALSE(flashptx::sm100_opted_in());
  CHECK(flashptx_set_option(static_cast<flashptx_option>(7), 1) == FLASHPTX_ERR_BAD_OPTION);
  CHECK(std::string(flashptx_last_error()).find("option 7 is not a flashptx_option") != std::string::npos);
  CHECK(flashptx_get_option(static_cast<flashptx_option>(0), &v) == FLASHPTX_ERR_BAD_OPTION);
  CHECK(flashptx_get_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, nullptr) == FLASHPTX_ERR_NULL_POINTER);
  CHECK_FALSE(flashptx::sm100_opted_in());
}

}  // TEST_SUITE
