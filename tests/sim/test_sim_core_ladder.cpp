// Simulator core: the ladder's first rung (tests/kernels/ladder_1.cu: a whole attention forward
// with wgmma, plain loads, one warpgroup per 64 query rows) in the simulator, against an fp64
// softmax(Q K^T * scale) V computed here from the definition. Also prints the simulator's speed.
#include <doctest/doctest.h>

#include <cmath>

#include "tests/sim/sim_core_util.h"

using namespace simtest;

namespace {

std::string ladder_ptx() {
#ifdef FLASHPTX_BUILD_DIR
  return read_file(std::string(FLASHPTX_BUILD_DIR) + "/ptx/tests/kernels/ladder_1.ptx");
#else
  return read_file("build/ptx/tests/kernels/ladder_1.ptx");
#endif
}

uint16_t to_bf16(float f) {  // round to nearest even
  uint32_t u = u32(f);
  u += 0x7FFF + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}
float from_bf16(uint16_t h) { return f32((uint32_t)h << 16); }

}  // namespace

TEST_SUITE("sim core prim") {

TEST_CASE("ladder rung 1 (attention forward with wgmma) against fp64, and its speed") {
  std::string text = ladder_ptx();
  if (text.empty()) { MESSAGE("skipped: ladder_1.ptx is absent (make sim-ptx)"); return; }
  std::string err;
  auto m = ptxsim::load_module(text, "ladder_1.ptx", &err);
  REQUIRE_MESSAGE(m, err);
  auto es = ptxsim::entries(*m);
  REQUIRE(es.size() == 1);
  const int sq = 64, sk = 1024, h = 2, d = 128;
  std::vector<uint16_t> q(sq * h * d), k(sk * h * d), v(sk * h * d), o(sq * h * d, 0xFFFF);
  uint64_t x = 99;
  auto rnd = [&]() { x = x * 6364136223846793005ull + 1442695040888963407ull; return (float)((x >> 40) % 2001) / 1000.0f - 1.0f; };
  for (auto& e : q) e = to_bf16(rnd());
  for (auto& e : k) e = to_bf16(rnd());
  for (auto& e : v) e = to_bf16(rnd());
  const float scale = 1.0f / std::sqrt(128.0f);
  Params p;
  p.put<uint64_t>(0, (uint64_t)q.data()).put<uint64_t>(8, (uint64_t)k.data()).put<uint64_t>(16, (uint64_t)v.data());
  p.put<uint64_t>(24, (uint64_t)o.data()).put<int32_t>(32, sq).put<int32_t>(36, sk).put<int32_t>(40, h);
  p.put<float>(44, scale * 1.4426950408889634f);
  ptxsim::Memory mem;
  mem.add(q.data(), q.size() * 2, "q");
  mem.add(k.data(), k.size() * 2, "k");
  mem.add(v.data(), v.size() * 2, "v");
  mem.add(o.data(), o.size() * 2, "o");
  ptxsim::TensorMaps maps;
  auto cfg = config(m, es[0], 128, p.bytes);
  cfg.grid.x = sq / 64;
  cfg.grid.y = h;
  cfg.dynamic_smem = 16384 + 2 * 32768 + 1024;
  auto rep = ptxsim::launch(cfg, mem, maps);
  REQUIRE_MESSAGE(rep.ok(), rep.text());
  MESSAGE("ladder rung 1, " << sq << " x " << sk << " keys x " << h << " heads: " << rep.warp_instructions << " warp instructions in "
          << rep.seconds << " s (" << rep.thread_instructions / rep.seconds / 1e6 << " M thread-instr/s wall)");
  double max_err = 0;
  for (int hh = 0; hh < h; ++hh)
    for (int i = 0; i < sq; ++i) {
      std::vector<double> s(sk);
      double mx = -1e300;
      for (int j = 0; j < sk; ++j) {
        double acc = 0;
        for (int c = 0; c < d; ++c) acc += (double)from_bf16(q[(i * h + hh) * d + c]) * from_bf16(k[(j * h + hh) * d + c]);
        s[j] = acc * scale;
        mx = std::max(mx, s[j]);
      }
      double den = 0;
      for (int j = 0; j < sk; ++j) { s[j] = std::exp(s[j] - mx); den += s[j]; }
      for (int c = 0; c < d; ++c) {
        double acc = 0;
        for (int j = 0; j < sk; ++j) acc += s[j] * from_bf16(v[(j * h + hh) * d + c]);
        double ref = acc / den, got = from_bf16(o[(i * h + hh) * d + c]);
        max_err = std::max(max_err, std::fabs(ref - got));
      }
    }
  MESSAGE("max |O - O_fp64| = " << max_err);
  // P is rounded to bf16 before the PV product and O to bf16 at the end: a few bf16 ulps of |O|
  CHECK(max_err < 1.0 / 64);
}

}  // TEST_SUITE
