// The launch plans (src/plan.h) and the kernel table (src/kernels.h), on any machine: plan_fwd makes
// no CUDA call, so the dispatch rule, the grid and every option error are checked here with a
// stated device (132 SMs, sm_90, as the H200).
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "src/kernels.h"
#include "src/plan.h"
#include "src/sm90/fa3_fwd_config.h"

namespace {

alignas(16) unsigned char g_fake[4][64];
const flashptx::Device kH200{0, 90, 132};

flashptx_fwd_params problem(int64_t b, int64_t sq, int64_t sk, int64_t h, int64_t d, flashptx_dtype t, int causal) {
  flashptx_fwd_params p;
  flashptx_fwd_params_contiguous(&p, g_fake[0], g_fake[1], g_fake[2], g_fake[3], nullptr, b, sq, sk, h, h, d, t, causal);
  return p;
}

flashptx::FwdPlan plan_or_fail(const flashptx_fwd_params& p, const flashptx::FwdOptions& o = {}) {
  flashptx::FwdPlan plan;
  std::string err;
  const flashptx_status s = flashptx::plan_fwd(p, o, kH200, &plan, &err);
  REQUIRE_MESSAGE(s == FLASHPTX_OK, err);
  REQUIRE(plan.launch.kernel != nullptr);
  return plan;
}

}  // namespace

TEST_SUITE("host plan") {

TEST_CASE("the kernel table: unique names, rows consistent with their layouts") {
  std::set<std::string> names;
  for (const flashptx::KernelEntry& k : flashptx::kernel_table()) {
    INFO(k.name);
    CHECK(names.insert(k.name).second);
    CHECK(flashptx::kernel_by_name(k.name) == &k);
    CHECK(k.fn != nullptr);
    if (k.family == flashptx::Family::kFa4Fwd || k.family == flashptx::Family::kFa4Bwd)
      continue;  // sm_100 rows: tests/host/test_plan_fa4.cpp
    CHECK(k.smem_bytes <= 227 * 1024);
    switch (k.family) {
      case flashptx::Family::kFa3Fwd:
      case flashptx::Family::kFa3FwdTraced:  // a producer warpgroup + consumers of 64 query rows each
      case flashptx::Family::kFa3FwdVarlen:
        CHECK(k.threads == 128 * (k.consumer_wgs + 1));
        CHECK(k.block_m == 64 * k.consumer_wgs);
        CHECK(k.smem_bytes > 0);
        break;
      case flashptx::Family::kFa3FwdFp8:  // a producer warpgroup + two consumers; a tile is one Q descale block
        CHECK(k.threads == 384);
        CHECK(k.block_m == 128);
        CHECK(k.dtype == FLASHPTX_FP8_E4M3);
        CHECK(k.smem_bytes > 0);
        break;
      case flashptx::Family::kFa3Bwd:  // a producer warpgroup + two MMA warpgroups: 64 keys each
                                       // (d64/d128), or all 64 keys and half the head dim each (d256)
      case flashptx::Family::kFa3BwdVarlen:
        CHECK(k.threads == 128 * (k.consumer_wgs + 1));
        // (the row's head_dim is the one it serves: 96 and 192 run on the d128 and d256 shapes)
        CHECK(k.block_n == (flashptx::fa3::bwd_kernel_head_dim(k.head_dim) == 256 ? 64 : 64 * k.consumer_wgs));
        CHECK(k.smem_bytes > 0);
        break;
      case flashptx::Family::kFa3FwdKvcache:  // a producer warpgroup + one consumer of 64 packed rows
        CHECK(k.threads == 256);
        CHECK(k.block_m == 64);
        CHECK(k.consumer_wgs == 1);
        CHECK(k.smem_bytes > 0);
        break;
      case flashptx::Family::kFa3FwdKvcacheCombine:  // two columns of one output row per thread
        CHECK(k.threads * 2 == k.head_dim);
        CHECK(k.smem_bytes == 0);
        break;
      case flashptx::Family::kFa3FwdKvcacheAppend:  // a plain kernel over a row's heads and pairs of dims
        CHECK(k.threads == 128);
        CHECK(k.smem_bytes == 0);
        break;
      default:  // the backward's pre/postprocess: plain 256-thread kernels, any head dim
        CHECK(k.threads == 256);
        CHECK(k.head_dim == 0);
        CHECK(k.smem_bytes == 0);
    }
  }
  CHECK(flashptx::kernel_by_name("fa3_fwd_sm90_bf16_d128_n128x") == nullptr);
  // The traced kernel is a row of the same table.
  const flashptx::KernelEntry* t = flashptx::kernel_by_name("fa3_fwd_sm90_bf16_d128_trace");
  REQUIRE(t != nullptr);
  CHECK(t->family == flashptx::Family::kFa3FwdTraced);
}

TEST_CASE("the forward rule resolves every head dim, dtype and mask to a kernel of that problem") {
  for (int64_t d : {64, 128, 256})
    for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16})
      for (int causal : {0, 1})
        for (int64_t s : {1, 100, 1024, 2048, 8192}) {
          INFO("d=" << d << " causal=" << causal << " s=" << s);
          const auto plan = plan_or_fail(problem(2, s, s, 8, d, t, causal));
          const flashptx::KernelEntry& k = *plan.launch.kernel;
          CHECK(k.family == flashptx::Family::kFa3Fwd);
          CHECK(k.head_dim == d);
          CHECK(k.dtype == t);
          const int64_t tiles = (s + k.block_m - 1) / k.block_m * 8 * 2;
          CHECK(plan.launch.tiles == tiles);
          CHECK(plan.launch.block.x == static_cast<unsigned>(k.threads));
          CHECK(plan.launch.smem_bytes == k.smem_bytes);
          // causal: the paired twins or one CTA per tile by the makespan estimates
          // (fwd_d64_causal_choice, fwd_causal_paired); nothing non-causal is paired
          if (d == 64 && causal) {
            const flashptx::FwdChoice c = flashptx::fwd_d64_causal_choice(s, s, 8, 2, 132);
            CHECK(k.block_m == c.block_m);
            CHECK(k.paired == c.paired);
          } else if (causal) {
            CHECK(k.paired == flashptx::fwd_causal_paired(d, s, s, 8, 2, 132));
          } else {
            CHECK(!k.paired);
            if (d == 64) CHECK(k.block_m == flashptx::fwd_d64_noncausal_block_m(s, 8, 2, 132));
          }
          if (plan.launch.schedule == flashptx::Schedule::kPersistent) {
            CHECK(k.persistent);
            CHECK((k.paired || !causal));
            // paired: units of two tiles (m, M-1-m), the paired schedule of tile_scheduler.h
            const int64_t m_blocks = (s + k.block_m - 1) / k.block_m;
            const int64_t work = k.paired ? (m_blocks + 1) / 2 * 8 * 2 : tiles;
            CHECK(plan.launch.grid.x == static_cast<unsigned>(std::min<int64_t>(work, 132)));
          } else {
            CHECK(!k.paired);
            CHECK((!k.persistent || causal));
            CHECK(plan.launch.grid.x == static_cast<unsigned>(tiles));
          }
        }
  // The measured rule (src/plan.cpp): d64 causal by the makespan estimates, at the points measured
  // on the H200 (docs/DECISIONS.md, "Plan calibration"): 32 heads, 16k tokens.
  struct D64Point { int64_t b, s; const char* kernel; };
  for (const D64Point& pt : {D64Point{32, 512, "fa3_fwd_sm90_bf16_d64_m128_paired"},
                             D64Point{16, 1024, "fa3_fwd_sm90_bf16_d64_m128_paired"},
                             D64Point{8, 2048, "fa3_fwd_sm90_bf16_d64_m128_paired"},
                             D64Point{4, 4096, "fa3_fwd_sm90_bf16_d64_m192_paired"},
                             D64Point{2, 8192, "fa3_fwd_sm90_bf16_d64_m192"},
                             D64Point{1, 16384, "fa3_fwd_sm90_bf16_d64_m192"},
                             D64Point{2, 830, "fa3_fwd_sm90_bf16_d64_m128_paired"},
                             D64Point{3, 1500, "fa3_fwd_sm90_bf16_d64_m192_paired"},
                             D64Point{5, 3000, "fa3_fwd_sm90_bf16_d64_m192_paired"}}) {
    INFO("b=" << pt.b << " s=" << pt.s);
    CHECK(std::string(plan_or_fail(problem(pt.b, pt.s, pt.s, 32, 64, FLASHPTX_BF16, 1)).launch.kernel->name) ==
          pt.kernel);
  }
  CHECK(plan_or_fail(problem(1, 2048, 2048, 8, 64, FLASHPTX_BF16, 0)).launch.kernel->block_m == 192);
  // d64 non-causal up to 1k rows: the 128- or 192-row tile by rounds of tiles (a 192-row tile leaves
  // 512 rows 2.7 tiles, 768 rows 4 whole ones), at the points measured on the H200 (docs/DECISIONS.md,
  // "Plan calibration") and the grid's (32 heads, 16k tokens).
  CHECK(plan_or_fail(problem(1, 1024, 1024, 8, 64, FLASHPTX_BF16, 0)).launch.kernel->block_m == 128);
  CHECK(plan_or_fail(problem(1, 512, 512, 8, 64, FLASHPTX_FP16, 0)).launch.kernel->block_m == 128);
  struct D64NcPoint { int64_t b, s; int block_m; };
  for (const D64NcPoint& pt : {D64NcPoint{32, 512, 128}, D64NcPoint{16, 1024, 128}, D64NcPoint{4, 1024, 128},
                               D64NcPoint{16, 768, 192}, D64NcPoint{8, 2048, 192}, D64NcPoint{16, 960, 192},
                               D64NcPoint{16, 700, 192}, D64NcPoint{32, 384, 192}, D64NcPoint{16, 576, 192},
                               D64NcPoint{8, 896, 192}, D64NcPoint{16, 640, 128}}) {
    INFO("b=" << pt.b << " s=" << pt.s);
    CHECK(plan_or_fail(problem(pt.b, pt.s, pt.s, 32, 64, FLASHPTX_BF16, 0)).launch.kernel->block_m == pt.block_m);
  }
  // d256 causal: the paired twin up to 8k rows where the makespan estimates put it first, one CTA
  // per tile from 16k; at the points measured on the H200 (docs/DECISIONS.md, "Plan calibration"),
  // each with the kernel that measured faster there (fp16 as bf16).
  struct CausalPoint { int64_t b, s, h; bool paired; };
  const CausalPoint d256_points[] = {
      {32, 512, 8, true},   {16, 1024, 8, true},  {8, 2048, 8, true},   {4, 4096, 8, true},   {2, 8192, 8, true},
      {1, 16384, 8, false}, {3, 3000, 8, false},  {3, 1500, 8, false},  {1, 4096, 8, true},   {1, 8192, 8, true},
      {1, 3000, 8, true},   {2, 1024, 8, false},  {4, 2000, 16, true},  {2, 5000, 8, false},  {1, 6000, 16, true},
      {4, 1536, 8, true},   {2, 2500, 16, true},  {4, 1300, 8, false},  {2, 2700, 8, false},  {4, 800, 8, true},
      {2, 2200, 8, false},  {2, 700, 24, false},  {5, 1000, 8, false},  {2, 1100, 16, false}, {3, 1100, 16, true}};
  for (const CausalPoint& pt : d256_points) {
    INFO("b=" << pt.b << " s=" << pt.s << " h=" << pt.h);
    CHECK(std::string(plan_or_fail(problem(pt.b, pt.s, pt.s, pt.h, 256, FLASHPTX_BF16, 1)).launch.kernel->name) ==
          (pt.paired ? "fa3_fwd_sm90_bf16_d256_paired" : "fa3_fwd_sm90_bf16_d256"));
  }
  // d128 causal: the paired twin on the grid and wherever the estimates do not put one CTA per tile
  // 10% ahead; the plain kernel at the points where it measured 2-17% faster.
  const CausalPoint d128_points[] = {
      {32, 512, 16, true}, {16, 1024, 16, true}, {1, 16384, 16, true}, {3, 3000, 16, true}, {2, 1500, 16, true},
      {1, 6000, 32, true}, {4, 1300, 8, true},   {2, 1800, 12, true},  {3, 1500, 8, false},  {2, 2200, 8, false},
      {2, 700, 24, false}, {5, 1000, 8, false},  {1, 5000, 8, false},  {1, 1200, 8, false}};
  for (const CausalPoint& pt : d128_points) {
    INFO("d128 b=" << pt.b << " s=" << pt.s << " h=" << pt.h);
    CHECK(std::string(plan_or_fail(problem(pt.b, pt.s, pt.s, pt.h, 128, FLASHPTX_BF16, 1)).launch.kernel->name) ==
          (pt.paired ? "fa3_fwd_sm90_bf16_d128_n128_paired" : "fa3_fwd_sm90_bf16_d128_n128"));
  }
  // Persistent (grid = SMs) for non-causal masks where the kernel loops and for the paired causal
  // kernels (where the estimates choose them); one CTA per tile otherwise. A small causal problem on
  // the paired kernel: one CTA per unit of two tiles (64 units); a smaller one (16 units, the
  // estimates' ratio 0.56) one CTA per tile.
  CHECK(plan_or_fail(problem(2, 8192, 8192, 16, 128, FLASHPTX_BF16, 0)).launch.grid.x == 132);
  CHECK(plan_or_fail(problem(2, 8192, 8192, 16, 128, FLASHPTX_BF16, 1)).launch.grid.x == 132);
  CHECK(std::string(plan_or_fail(problem(2, 8192, 8192, 16, 128, FLASHPTX_BF16, 1)).launch.kernel->name) ==
        "fa3_fwd_sm90_bf16_d128_n128_paired");
  CHECK(plan_or_fail(problem(1, 1024, 1024, 16, 128, FLASHPTX_BF16, 1)).launch.grid.x == 4 * 16);
  CHECK(plan_or_fail(problem(1, 1024, 1024, 4, 128, FLASHPTX_BF16, 1)).launch.grid.x == 8 * 4);
  CHECK(plan_or_fail(problem(2, 8192, 8192, 32, 64, FLASHPTX_BF16, 1)).launch.grid.x == 43 * 32 * 2);  // one per tile
  CHECK(plan_or_fail(problem(2, 8192, 8192, 8, 256, FLASHPTX_BF16, 1)).launch.grid.x == 132);  // paired
  CHECK(plan_or_fail(problem(1, 16384, 16384, 8, 256, FLASHPTX_BF16, 1)).launch.grid.x == 128 * 8);
  CHECK(plan_or_fail(problem(2, 8192, 8192, 8, 256, FLASHPTX_BF16, 0)).launch.grid.x == 64 * 8 * 2);
  // d256 non-causal: the persistent twin up to 4k keys (O in halves), the plain kernel beyond; a
  // forced one-CTA-per-tile schedule takes the plain kernel.
  for (int64_t s : {512, 1024, 2048, 4096, 8192}) {
    const auto pl = plan_or_fail(problem(16384 / s, s, s, 8, 256, FLASHPTX_BF16, 0));
    INFO("s=" << s);
    CHECK(std::string(pl.launch.kernel->name) ==
          (s <= 4096 ? "fa3_fwd_sm90_bf16_d256_persistent" : "fa3_fwd_sm90_bf16_d256"));
    CHECK(pl.launch.grid.x == (s <= 4096 ? 132u : static_cast<unsigned>(s / 128 * 8 * (16384 / s))));
  }
  {
    flashptx::FwdOptions o;
    o.schedule = flashptx::Schedule::kOnePerTile;
    CHECK(std::string(plan_or_fail(problem(8, 2048, 2048, 8, 256, FLASHPTX_FP16, 0), o).launch.kernel->name) ==
          "fa3_fwd_sm90_fp16_d256");
  }
}

TEST_CASE("the dynamic schedule: with a tile counter, the d64 128-row paired kernel on min(tiles, SMs) CTAs") {
  alignas(8) static unsigned counter[2];
  for (int64_t s : {512, 830, 1024, 2048}) {
    INFO("s=" << s);
    flashptx_fwd_params p = problem(16384 / s, s, s, 32, 64, FLASHPTX_BF16, 1);
    const auto st = plan_or_fail(p);
    p.tile_counter = counter;
    auto dyn = plan_or_fail(p);
    CHECK(std::string(dyn.launch.kernel->name) == "fa3_fwd_sm90_bf16_d64_m128_paired");
    CHECK(dyn.launch.kernel->dynamic);
    const int64_t tiles = (s + 127) / 128 * 32 * (16384 / s);
    CHECK(dyn.launch.grid.x == static_cast<unsigned>(std::min<int64_t>(tiles, 132)));
    CHECK(st.launch.kernel == dyn.launch.kernel);  // the same kernel; its static walk without a counter
    CHECK(st.launch.grid.x == static_cast<unsigned>(std::min<int64_t>((tiles / 32 / (16384 / s) + 1) / 2 * 32 * (16384 / s), 132)));
  }
  // The GPU test's shapes (tests/gpu/test_fa3_fwd.cpp, "the dynamic schedule") run the dynamic kernel.
  struct Shape { int64_t b, sq, sk, hq, hkv; };
  for (const Shape& g : {Shape{2, 830, 830, 32, 32}, Shape{4, 512, 512, 32, 32}, Shape{4, 512, 1024, 32, 8},
                         Shape{2, 1024, 512, 32, 32}}) {
    INFO("b=" << g.b << " sq=" << g.sq << " sk=" << g.sk);
    flashptx_fwd_params p;
    flashptx_fwd_params_contiguous(&p, g_fake[0], g_fake[1], g_fake[2], g_fake[3], nullptr, g.b, g.sq, g.sk, g.hq,
                                   g.hkv, 64, FLASHPTX_BF16, 1);
    p.tile_counter = counter;
    CHECK(plan_or_fail(p).launch.kernel->dynamic);
  }
  // Every other launch ignores the counter: its kernel has no dynamic walk, its grid is unchanged.
  for (int64_t d : {64, 128, 256})
    for (int causal : {0, 1}) {
      if (d == 64 && causal) continue;
      flashptx_fwd_params p = problem(4, 4096, 4096, 2048 / d, d, FLASHPTX_BF16, causal);
      const auto st = plan_or_fail(p);
      p.tile_counter = counter;
      auto dyn = plan_or_fail(p);
      CHECK(!dyn.launch.kernel->dynamic);
      CHECK(dyn.launch.grid.x == st.launch.grid.x);
    }
  // Which kernels have it: the 128-row d64 paired kernel in both dtypes and its traced build
  // (`flashptx trace --hdim 64 --causal`), nothing else.
  int with = 0;
  for (const flashptx::KernelEntry& k : flashptx::kernel_table())
    if (k.dynamic) {
      ++with;
      CHECK(k.paired);
      CHECK(k.head_dim == 64);
      CHECK(k.block_m == 128);
    }
  CHECK(with == 3);
}

TEST_CASE("lpt_section_pairs: K/V of a section within 32 MiB, sections of equal size") {
  // d64, 2k keys: 512 KiB of K and V per pair -> 64 pairs fit; 256 pairs -> 4 sections of 64.
  CHECK(flashptx::lpt_section_pairs(2048, 64, 256) == 64);
  // 1500 keys, d64: 375 KiB per pair -> 87 fit; 96 pairs -> 2 sections of 48, not 87 + 9.
  CHECK(flashptx::lpt_section_pairs(1500, 64, 96) == 48);
  // fewer pairs than fit: one section of all of them; a pair larger than the budget: one per section
  CHECK(flashptx::lpt_section_pairs(512, 64, 10) == 10);
  CHECK(flashptx::lpt_section_pairs(1 << 20, 256, 8) == 1);
  for (int64_t sk : {1, 100, 512, 1024, 4096, 65536})
    for (int64_t pairs : {1, 7, 96, 1024}) {
      const int sec = flashptx::lpt_section_pairs(sk, 64, pairs);
      REQUIRE(sec >= 1);
      CHECK(sec <= pairs);
      const int64_t n = (pairs + sec - 1) / sec;
      CHECK(n * sec - pairs <= n - 1);  // the last section within n - 1 pairs of the others
      if (sec > 1) CHECK(sec * sk * 64 * 4 <= (int64_t{32} << 20));
    }
}

TEST_CASE("variant selection: a forced kernel and schedule, and every misuse named") {
  const flashptx_fwd_params p = problem(2, 4096, 4096, 16, 128, FLASHPTX_BF16, 1);
  flashptx::FwdOptions o;
  o.schedule = flashptx::Schedule::kPersistent;
  auto plan = plan_or_fail(p, o);
  CHECK(plan.launch.schedule == flashptx::Schedule::kPersistent);
  CHECK(plan.launch.grid.x == 132);

  o = {};
  o.kernel = "fa3_fwd_sm90_bf16_d128_n128";
  o.schedule = flashptx::Schedule::kOnePerTile;
  plan = plan_or_fail(problem(2, 4096, 4096, 16, 128, FLASHPTX_BF16, 0), o);
  CHECK(std::string(plan.launch.kernel->name) == "fa3_fwd_sm90_bf16_d128_n128");
  CHECK(plan.launch.grid.x == 32 * 16 * 2);
  // A causal problem with a forced one-CTA-per-tile schedule takes the plain kernel, not the paired.
  o = {};
  o.schedule = flashptx::Schedule::kOnePerTile;
  plan = plan_or_fail(p, o);
  CHECK(std::string(plan.launch.kernel->name) == "fa3_fwd_sm90_bf16_d128_n128");
  CHECK(plan.launch.grid.x == 32 * 16 * 2);

  struct Bad { const char* what; flashptx::FwdOptions opt; flashptx_fwd_params p; const char* needle; };
  flashptx::FwdOptions unknown, wrong_d, wrong_t, persist256, traced_no_buf, buf_untraced, paired_full, paired_one;
  paired_full.kernel = "fa3_fwd_sm90_bf16_d128_n128_paired";
  paired_one.kernel = "fa3_fwd_sm90_bf16_d128_n128_paired";
  paired_one.schedule = flashptx::Schedule::kOnePerTile;
  unknown.kernel = "fa3_fwd_sm90_bf16_d80";
  wrong_d.kernel = "fa3_fwd_sm90_bf16_d64_m128";
  wrong_t.kernel = "fa3_fwd_sm90_fp16_d128_n128";
  persist256.schedule = flashptx::Schedule::kPersistent;
  persist256.kernel = "fa3_fwd_sm90_bf16_d256";  // the plain d256 kernel (its persistent twin can loop)
  traced_no_buf.kernel = "fa3_fwd_sm90_bf16_d128_trace";
  static uint64_t fake_trace[4];
  buf_untraced.trace = fake_trace;
  const Bad bad[] = {
      {"unknown kernel", unknown, p, "no forward kernel named"},
      {"kernel of another head dim", wrong_d, p, "head_dim 64"},
      {"kernel of another dtype", wrong_t, p, "fp16"},
      {"persistent schedule on the plain d256 kernel", persist256, problem(1, 1000, 1000, 2, 256, FLASHPTX_BF16, 0), "cannot loop"},
      {"traced kernel without a buffer", traced_no_buf, p, "needs a trace buffer"},
      {"a buffer without the traced kernel", buf_untraced, p, "only for the traced kernel"},
      {"the paired kernel without a causal mask", paired_full, problem(2, 4096, 4096, 16, 128, FLASHPTX_BF16, 0),
       "causal masks only"},
      {"the paired kernel one CTA per tile", paired_one, p, "schedule persistent only"},
  };
  for (const Bad& b : bad) {
    INFO(b.what);
    flashptx::FwdPlan pl;
    std::string err;
    CHECK(flashptx::plan_fwd(b.p, b.opt, kH200, &pl, &err) == FLASHPTX_ERR_BAD_OPTION);
    CHECK_MESSAGE(err.find(b.needle) != std::string::npos, err);
  }
}

TEST_CASE("schedule names round-trip and unknown names are refused") {
  for (auto s : {flashptx::Schedule::kAuto, flashptx::Schedule::kOnePerTile, flashptx::Schedule::kPersistent}) {
    flashptx::Schedule back{};
    CHECK(flashptx::parse_schedule(flashptx::schedule_name(s), &back));
    CHECK(back == s);
  }
  flashptx::Schedule x{};
  CHECK_FALSE(flashptx::parse_schedule("persistant", &x));
}

TEST_CASE("the layout object: the shared-memory plan of every shipped forward fits and is 1024-aligned") {
  using flashptx::fa3::FwdLayout;
  constexpr flashptx::fa3::FwdConfig c = flashptx::fa3::kD128N128;
  using L = FwdLayout<c>;
  static_assert(L::kOffK % 1024 == 0 && L::kOffV % 1024 == 0 && L::kOffO % 1024 == 0);
  CHECK(L::kQBytes == 128 * 128 * 2);
  CHECK(L::kKVBytes == 128 * 128 * 2);
  CHECK(L::kSeparateO);
  // 2 Q slots, 2 K, 2 V, O; 12 ring barriers (2 per Q slot) + 4 of the tile feed; 2 tile slots of
  // 16 B; slack
  CHECK(c.tile_feed);
  CHECK(L::kQSlots == 2);
  CHECK(L::kSmemBytes == 7 * 32768 + 8 * (4 + 4 * 2 + 4) + 2 * 16 + 1024);
  // Every row's shared memory from the switches the row carries (the kernel table's copy of its
  // FwdConfig): Q slots, O staging, the tile feed's barriers and slots.
  for (const flashptx::KernelEntry& k : flashptx::fa3_fwd_kernels()) {
    INFO(k.name);
    std::map<std::string, const flashptx::KernelSwitch*> sw;
    for (const flashptx::KernelSwitch& x : k.switches) sw[x.name] = &x;
    REQUIRE(sw.count("q_slots") == 1);
    REQUIRE(sw.count("o_staging") == 1);
    REQUIRE(sw.count("tile_feed") == 1);
    const int q = k.block_m * k.head_dim * 2, kv = k.block_n * k.head_dim * 2;
    const int q_slots = sw["q_slots"]->value;
    const bool feed = sw["tile_feed"]->value != 0;
    const std::string o = sw["o_staging"]->text;
    CHECK((o == "own" || o == "halves" || o == "in_q"));
    const int o_bytes = o == "own" ? q : (o == "halves" ? q / 2 : 0);
    CHECK(k.smem_bytes == q_slots * q + 2 * k.stages * kv + o_bytes +
                              8 * (2 * q_slots + 4 * k.stages + (feed ? 4 : 0)) + (feed ? 32 : 0) + 1024);
    // O in the Q buffer only where no buffer of its own fits beside the rings
    if (o == "in_q") CHECK(2 * q + 2 * k.stages * kv + 8 * (2 + 4 * k.stages) + 1024 > 227 * 1024);
  }
}

}  // TEST_SUITE

TEST_SUITE("host plan") {

// (head_dim, head_dim_v) = (192, 128): the d256 kernels (plain and local), the (192, 192) problem's
// workspace and grids (the tensor maps and the aux kernels' head_dim_v need a driver to encode: the
// simulator's cases, tests/gpu/test_fa3_bwd.cpp); sm_100 refuses it.
TEST_CASE("backward plan: (192, 128) on the d256 kernels, the (192, 192) workspace and grids") {
  alignas(16) static unsigned char fake[9][64];
  for (int64_t hkv : {8, 2}) {
    INFO("hkv=" << hkv);
    flashptx_bwd_params p;
    flashptx_bwd_params_contiguous(&p, fake[0], fake[1], fake[2], fake[3], reinterpret_cast<const float*>(fake[4]),
                                   fake[5], fake[6], fake[7], fake[8], 2, 1000, 777, 8, hkv, 192, FLASHPTX_BF16, 1);
    flashptx::BwdPlan same, plan;
    std::string err;
    REQUIRE_MESSAGE(flashptx::plan_bwd(p, {}, kH200, &same, &err) == FLASHPTX_OK, err);
    p.head_dim_v = 128;
    REQUIRE_MESSAGE(flashptx::plan_bwd(p, {}, kH200, &plan, &err) == FLASHPTX_OK, err);
    CHECK(std::string(plan.main.kernel->name) == "fa3_bwd_sm90_bf16_d256");
    CHECK(plan.workspace.total == same.workspace.total);
    CHECK(plan.pre.grid.x == same.pre.grid.x);
    CHECK(plan.post_dkv.grid.x == same.post_dkv.grid.x);
    p.window = 1;
    p.window_left = 50;
    p.softcap = 4.f;
    REQUIRE_MESSAGE(flashptx::plan_bwd(p, {}, kH200, &plan, &err) == FLASHPTX_OK, err);
    CHECK(std::string(plan.main.kernel->name) == "fa3_bwd_local_sm90_bf16_d256");
  }
  // sm_100 (opted in): no separate V head dim on the FA4 backward.
  int64_t before = 0;
  REQUIRE(flashptx_get_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, &before) == FLASHPTX_OK);
  REQUIRE(flashptx_set_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, 1) == FLASHPTX_OK);
  flashptx_bwd_params p;
  flashptx_bwd_params_contiguous(&p, fake[0], fake[1], fake[2], fake[3], reinterpret_cast<const float*>(fake[4]),
                                 fake[5], fake[6], fake[7], fake[8], 2, 1000, 777, 8, 2, 192, FLASHPTX_BF16, 1);
  p.head_dim_v = 128;
  flashptx::BwdPlan plan;
  std::string err;
  const flashptx_status s = flashptx::plan_bwd(p, {}, flashptx::Device{0, 100, 148}, &plan, &err);
  flashptx_set_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, before);
  CHECK(s == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
  CHECK_MESSAGE(err.find("no separate V head dim: (head_dim, head_dim_v) = (192, 128)") != std::string::npos, err);
}

TEST_CASE("backward plan: kernels of the problem, grids, workspace carve-up") {
  alignas(16) static unsigned char fake[9][64];
  // Head dims 96 and 192 run on the d128 and d256 kernels (kd), their accumulators kd wide.
  for (int64_t d : {64, 96, 128, 192, 256})
    for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16})
      for (int64_t hkv : {8, 2}) {
        INFO("d=" << d << " hkv=" << hkv);
        const int64_t kd = d == 96 ? 128 : d == 192 ? 256 : d;
        flashptx_bwd_params p;
        flashptx_bwd_params_contiguous(&p, fake[0], fake[1], fake[2], fake[3], reinterpret_cast<const float*>(fake[4]),
                                       fake[5], fake[6], fake[7], fake[8], 2, 1000, 777, 8, hkv, d, t, 1);
        flashptx::BwdPlan plan;
        std::string err;
        REQUIRE_MESSAGE(flashptx::plan_bwd(p, {}, kH200, &plan, &err) == FLASHPTX_OK, err);
        const flashptx::KernelEntry& k = *plan.main.kernel;
        CHECK(k.family == flashptx::Family::kFa3Bwd);
        CHECK(k.head_dim == kd);
        CHECK(k.dtype == t);
        CHECK(k.block_n == (kd == 256 ? 64 : 128));  // d256: 64 keys per CTA (src/sm90/fa3_bwd.cu)
        const int64_t m_blocks = (1000 + k.block_m - 1) / k.block_m, n_blocks = (777 + k.block_n - 1) / k.block_n;
        CHECK(plan.main.grid.x == n_blocks);
        CHECK(plan.main.grid.y == 8);
        CHECK(plan.main.grid.z == 2);
        CHECK(plan.post_dq.grid.x == m_blocks);
        // The preprocess covers every padded row exactly once at d/8 threads per row (256 per CTA),
        // with no CTA beyond the last row; the dQ postprocess stages a whole tile of 16-bit pairs.
        const int64_t pre_rows = 256 / (kd / 8);
        CHECK(plan.pre.grid.x * pre_rows >= m_blocks * k.block_m);
        CHECK((plan.pre.grid.x - 1) * pre_rows < m_blocks * k.block_m);
        CHECK(plan.post_dq.smem_bytes >= k.block_m * kd * 2);
        CHECK(plan.post_dq.smem_bytes <= 48 * 1024);
        CHECK(plan.gqa == (hkv != 8));
        CHECK(plan.post_dkv.grid.x == (hkv != 8 ? n_blocks : 0));
        CHECK(plan.pre.kernel->dtype == t);
        CHECK(plan.post_dq.kernel->dtype == t);
        // Sections in order, 256-aligned, sized as documented in src/sm90/fa3_bwd_config.h.
        const auto& w = plan.workspace;
        const int64_t rows = 2 * 8 * m_blocks * k.block_m;
        CHECK(w.dq_accum == 0);
        CHECK(w.lse2 >= rows * kd * 4);
        CHECK(w.delta >= w.lse2 + rows * 4);
        CHECK(w.dq_sem >= w.delta + rows * 4);
        CHECK(w.zeroed_begin == w.dq_sem);
        for (int64_t off : {w.lse2, w.delta, w.dq_sem, w.dkv_sem, w.dk_accum, w.dv_accum, w.total}) CHECK(off % 256 == 0);
        if (hkv != 8) CHECK(w.dv_accum - w.dk_accum >= 2 * hkv * n_blocks * k.block_n * kd * 4);
        else CHECK(w.dv_accum == w.dk_accum);
      }
}

TEST_CASE("the dQ accumulator's fragment order is a bijection onto the tile") {
  for (int d : {64, 128, 256})
    for (bool split_rows : {false, true}) {
      if (d == 256 && split_rows) continue;  // d256 splits dQ by columns (kSplitHeadDim)
      const int block_m = split_rows ? 128 : 64;
      std::vector<int> seen(block_m * d, 0);
      for (int f = 0; f < block_m * d; ++f) {
        const auto c = flashptx::fa3::dq_accum_coord(f, d, split_rows);
        REQUIRE(c.row >= 0);
        REQUIRE(c.row < block_m);
        REQUIRE(c.col >= 0);
        REQUIRE(c.col < d);
        ++seen[c.row * d + c.col];
        if (f % 2 == 1) {  // pairs of adjacent floats are adjacent columns of one row (bf16x2 stores)
          const auto p = flashptx::fa3::dq_accum_coord(f - 1, d, split_rows);
          CHECK(p.row == c.row);
          CHECK(p.col + 1 == c.col);
        }
      }
      for (int x : seen) CHECK(x == 1);
    }
  // Thread 0 of warpgroup 0, registers 0..3: rows 0 and 8, columns 0 and 1 (the wgmma D layout).
  CHECK(flashptx::fa3::dq_accum_coord(0, 128, false).row == 0);
  CHECK(flashptx::fa3::dq_accum_coord(1, 128, false).col == 1);
  CHECK(flashptx::fa3::dq_accum_coord(2, 128, false).row == 8);
  // Float 4 is thread 1: lane 1 holds columns 2, 3 of row 0.
  CHECK(flashptx::fa3::dq_accum_coord(4, 128, false).col == 2);
  // Warpgroup 1 (column split): columns 64 and up.
  CHECK(flashptx::fa3::dq_accum_coord(64 * 64, 128, false).col == 64);
  // d256: each warpgroup's half (its dQ staging part) is one contiguous range of 64 x 128 floats.
  for (int f = 0; f < 64 * 256; f += 97) {
    const auto c = flashptx::fa3::dq_accum_coord(f, 256, false);
    CHECK(c.col / 128 == f / (64 * 128));
  }
}

}  // TEST_SUITE
