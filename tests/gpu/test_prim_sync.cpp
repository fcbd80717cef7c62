// GPU tests of the synchronisation primitives (ptx/mbarrier.cuh, ptx/barrier.cuh,
// ptx/setmaxnreg.cuh): each checks what the primitive certifies, from values the kernels recorded
// (tests/kernels/prim_sync.cu explains per kernel how the check could fail).
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "tests/kernels/prim_host_util.h"
#include "tests/kernels/prim_sync.h"

using namespace flashptx_test::prim;

TEST_SUITE("gpu_sm90 primitives mbarrier") {

TEST_CASE("mbarrier ping-pong: 10 generations, alternating parity, data of each generation") {
  std::mt19937 g(1001);
  std::vector<int> in(kPingGens * 32);
  for (auto& v : in) v = static_cast<int>(g() & 0x3fffffff) + 1;  // never 0 nor the poison
  DevBuf<int> d_in(in.size()), seen(in.size()), parity(in.size()), flags(in.size());
  d_in.upload(in);
  seen.poison(); parity.poison(); flags.poison();
  PRIM_LAUNCH_REQUIRE(launch_mbar_pingpong(d_in.p, seen.p, parity.p, flags.p));
  const auto s = seen.download(), p = parity.download(), f = flags.download();
  int bad = 0;
  for (int gen = 0; gen < kPingGens; ++gen) {
    for (int lane = 0; lane < 32; ++lane) {
      const int i = gen * 32 + lane;
      const int want = in[gen * 32 + (lane + gen + 1) % 32];
      if (s[i] != want || p[i] != (gen & 1) || f[i] != 3) {
        if (++bad <= 8)
          MESSAGE("gen " << gen << " lane " << lane << ": seen " << s[i] << " want " << want << ", parity "
                         << p[i] << ", flags " << f[i] << " (1: completed phase true, 2: pending phase false)");
      }
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("mbarrier arrival count over 3 generations, then inval, plain reuse and re-init") {
  DevBuf<int> flags(kCountFlags);
  PRIM_CUDA_REQUIRE(cudaMemset(flags.p, 0, flags.bytes()));
  PRIM_LAUNCH_REQUIRE(launch_mbar_count(flags.p));
  const auto f = flags.download();
  for (int gen = 0; gen < 3; ++gen) {
    for (int k = 0; k < 5; ++k) {
      INFO("generation " << gen << ", after arrival " << k + 1 << " of 5");
      CHECK(f[gen * 5 + k] == (k == 4 ? 1 : 0));
    }
    INFO("generation " << gen << ": the next phase must read pending");
    CHECK(f[15 + gen] == 1);
  }
  CHECK_MESSAGE(f[18] == 1, "invalidated barrier's bytes did not round-trip as plain memory");
  CHECK_MESSAGE(f[19] == 1, "re-initialised barrier: phase 0 read complete before any arrival");
  CHECK_MESSAGE(f[20] == 1, "re-initialised barrier: parity 1 (the phase before 0) did not read complete");
  CHECK_MESSAGE(f[21] == 1, "re-initialised count-1 barrier did not complete after its arrival");
}

TEST_CASE("mbarrier expect_tx: a phase completes only after the announced bytes land") {
  const size_t n = kTxChunks * kTxChunkBytes;
  std::mt19937 g(1002);
  std::vector<uint8_t> src(n);
  for (auto& b : src) b = static_cast<uint8_t>(g());
  DevBuf<uint8_t> d_src(n), d_dst(n);
  DevBuf<int> flags(kTxFlags);
  d_src.upload(src);
  d_dst.poison();
  PRIM_CUDA_REQUIRE(cudaMemset(flags.p, 0, flags.bytes()));
  PRIM_LAUNCH_REQUIRE(launch_mbar_expect_tx(d_src.p, d_dst.p, flags.p));
  const auto f = flags.download();
  CHECK_MESSAGE(f[0] == 1, "fresh barrier read complete before any arrival");
  CHECK_MESSAGE(f[1] == 1, "arrive.expect_tx with bytes pending read complete (tx not counted)");
  CHECK_MESSAGE(f[2] == 1, "phase read complete with one of two announced chunks still missing");
  CHECK_MESSAGE(f[3] == 1, "expect_tx + arrive read complete before any byte arrived (expect_tx dropped)");
  CHECK_MESSAGE(f[4] == 1, "second generation's arrive.expect_tx read complete before its copy");
  CHECK_MESSAGE(f[5] == 1, "the waits did not all pass");
  const auto dst = d_dst.download();
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += dst[i] != src[i];
  CHECK_MESSAGE(bad == 0, bad << " bytes of the 4 bulk-copied chunks differ from the source");
}

}  // TEST_SUITE

TEST_SUITE("gpu_sm90 primitives named barriers") {

TEST_CASE("bar.arrive / bar.sync generations between a producer and a consumer warpgroup") {
  std::mt19937 g(1003);
  std::vector<int> in(kNamedGens * 128);
  for (auto& v : in) v = static_cast<int>(g() & 0x3fffffff) + 1;
  DevBuf<int> d_in(in.size()), out(in.size());
  d_in.upload(in);
  out.poison();
  PRIM_LAUNCH_REQUIRE(launch_named_barrier(d_in.p, out.p));
  const auto o = out.download();
  int bad = 0;
  for (int gen = 0; gen < kNamedGens; ++gen)
    for (int t = 0; t < 128; ++t) {
      const int want = in[gen * 128 + (t * 5 + gen) % 128];
      if (o[gen * 128 + t] != want && ++bad <= 8)
        MESSAGE("generation " << gen << " consumer " << t << ": read " << o[gen * 128 + t] << ", want " << want);
    }
  CHECK(bad == 0);
}

}  // TEST_SUITE

TEST_SUITE("gpu_sm90 primitives setmaxnreg") {

TEST_CASE("setmaxnreg .dec 40 / .inc 232: consumers reduce 160 register-resident values") {
  std::mt19937 g(1004);
  std::uniform_int_distribution<int> val(-16, 16), sc(-4, 4);
  std::vector<float> values(256 * kRegValues), scale(8);
  for (auto& v : values) v = static_cast<float>(val(g));
  for (auto& s : scale) s = static_cast<float>(sc(g));
  DevBuf<float> d_values(values.size()), d_scale(8), out(256);
  d_values.upload(values);
  d_scale.upload(scale);
  out.poison();
  PRIM_LAUNCH_REQUIRE(launch_setmaxnreg(d_values.p, d_scale.p, out.p));
  const auto o = out.download();
  int bad = 0;
  for (int c = 0; c < 256; ++c) {
    double want = 0;  // small integers: exact in float, in any order
    for (int i = 0; i < kRegValues; ++i) want += values[i * 256 + c] * scale[i % 8];
    if (o[c] != static_cast<float>(want) && ++bad <= 8)
      MESSAGE("consumer thread " << c << ": " << o[c] << ", want " << want);
  }
  CHECK(bad == 0);
}

}  // TEST_SUITE
