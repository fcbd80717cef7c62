// tanh.approx.f32 on the simulator, against the PTX ISA ("Floating Point Instructions: tanh"):
// d = tanh(a), maximum relative error 2^-11 (the ISA's bound, here against the fp64 tanh),
// tanh(+-0) = +-0, tanh(+-inf) = +-1, NaN in gives NaN. (The softcap of the FA3 local kernels runs it.)
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "tests/sim/sim_core_util.h"

using namespace simtest;

TEST_SUITE("sim core exec") {

TEST_CASE("tanh.approx.f32: within 2^-11 of tanh over a sweep, and its special values") {
  // Thread t computes tanh of in[t]; in[] spans [-12, 12) in steps of 3/128 (1024 threads),
  // then the special values in the last CTA's first lanes.
  const char* ptx = R"(
.visible .entry k(.param .u64 out, .param .u64 in)
{
  .reg .b32 %r<4>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [in];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mad.lo.s32 %r3, %r2, 128, %r1;
  mul.wide.u32 %rd3, %r3, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  tanh.approx.f32 %f2, %f1;
  add.s64 %rd5, %rd1, %rd3;
  st.global.f32 [%rd5], %f2;
  ret;
}
)";
  std::string err;
  auto m = load(ptx, &err);
  REQUIRE_MESSAGE(m, err);
  const int n = 9 * 128;
  std::vector<float> in(n), out(n, NAN);
  for (int i = 0; i < 1024; ++i) in[i] = -12.f + 3.f * static_cast<float>(i) / 128.f;
  const float special[] = {0.f, -0.f, INFINITY, -INFINITY, NAN, 1e-30f, -1e-30f, 0x1p-126f};
  for (int i = 1024; i < n; ++i) in[i] = special[(i - 1024) % 8];
  ptxsim::Memory mem;
  mem.add(out.data(), out.size() * 4, "out");
  mem.add(in.data(), in.size() * 4, "in");
  ptxsim::TensorMaps maps;
  auto cfg = config(m, "k", 128,
                    Params().put<uint64_t>(0, (uint64_t)out.data()).put<uint64_t>(8, (uint64_t)in.data()).bytes, 9);
  for (bool perturb : {false, true}) {
    cfg.perturb_approx = perturb;  // the ISA's error bound, not one rounding, is what a kernel may rely on
    auto rep = ptxsim::launch(cfg, mem, maps);
    REQUIRE_MESSAGE(rep.ok(), rep.text());
    for (int i = 0; i < 1024; ++i) {
      const double exact = std::tanh(static_cast<double>(in[i]));
      CHECK_MESSAGE(std::fabs(out[i] - exact) <= std::ldexp(std::fabs(exact), -11),
                    "tanh(" << in[i] << ") = " << out[i] << ", exact " << exact);
    }
    CHECK(out[1024] == 0.f);
    CHECK(!std::signbit(out[1024]));
    CHECK(out[1025] == 0.f);
    CHECK(std::signbit(out[1025]));
    // tanh(+-inf) = +-1: exactly where the simulator rounds (its exact mode); within the 2^-11
    // bound where it perturbs the result (which the bound allows for every input).
    CHECK(std::fabs(out[1026] - 1.f) <= (perturb ? 0x1p-11f : 0.f));
    CHECK(std::fabs(out[1027] + 1.f) <= (perturb ? 0x1p-11f : 0.f));
    CHECK(std::isnan(out[1028]));
    CHECK(std::fabs(out[1029] - 1e-30f) <= std::ldexp(1e-30, -11));
    CHECK(std::fabs(out[1030] + 1e-30f) <= std::ldexp(1e-30, -11));
    CHECK(std::fabs(out[1031] - 0x1p-126f) <= std::ldexp(0x1p-126, -11));
  }
}

}  // TEST_SUITE
