// ptxsim: a benchmark (not a test): simulated instructions per second on two kernels, a
// converged ALU loop (FMA chains, one warpgroup-sized block of 384 threads as FA3 uses) and a
// divergent one (odd and even lanes on different paths), plus a wgmma-heavy loop.
#include <chrono>
#include <ctime>
#include <cstring>
#include <sstream>
#include <vector>

#include "tools/sim/sim.h"

namespace ptxsim {

namespace {

const char* kAluLoop = R"(
.version 8.0
.target sm_90a
.address_size 64
.visible .entry alu(.param .u64 out, .param .u32 iters, .param .u32 diverge)
{
  .reg .pred %p<4>;
  .reg .b32 %r<10>;
  .reg .f32 %f<10>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [iters];
  ld.param.u32 %r7, [diverge];
  mov.u32 %r2, %tid.x;
  cvt.rn.f32.u32 %f1, %r2;
  mov.f32 %f2, 0f3F800000;
  mov.f32 %f3, 0f00000000;
  mov.u32 %r3, 0;
  and.b32 %r8, %r2, %r7;
  setp.ne.s32 %p2, %r8, 0;
LOOP:
  @%p2 bra ODD;
  fma.rn.f32 %f3, %f1, %f2, %f3;
  fma.rn.f32 %f2, %f2, 0f3F7FF000, 0f3A000000;
  mul.f32 %f4, %f3, 0f3F000000;
  add.f32 %f3, %f3, %f4;
  bra.uni NEXT;
ODD:
  add.f32 %f3, %f3, %f1;
  max.f32 %f4, %f3, %f2;
  sub.f32 %f3, %f4, %f2;
NEXT:
  add.s32 %r3, %r3, 1;
  setp.lt.u32 %p1, %r3, %r1;
  @%p1 bra LOOP;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.f32 [%rd3], %f3;
  ret;
}
)";

}  // namespace

std::string benchmark() {
  std::ostringstream s;
  std::string err;
  auto m = load_module(kAluLoop, "bench.ptx", &err);
  if (!m) return "benchmark: " + err;
  for (int diverge = 0; diverge < 2; ++diverge) {
    std::vector<float> out(384);
    Memory mem;
    mem.add(out.data(), out.size() * 4, "out");
    TensorMaps maps;
    LaunchConfig c;
    c.module = m;
    c.entry = "alu";
    c.block.x = 384;
    c.params.resize(16);
    uint64_t p = reinterpret_cast<uint64_t>(out.data());
    uint32_t iters = 20000, dv = diverge;
    memcpy(&c.params[0], &p, 8);
    memcpy(&c.params[8], &iters, 4);
    memcpy(&c.params[12], &dv, 4);
    std::clock_t c0 = std::clock();
    Report r = launch(c, mem, maps);
    double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
    s << (diverge ? "divergent" : "converged") << " ALU loop, 384 threads x " << iters << " iterations: "
      << r.thread_instructions << " thread instructions (" << r.warp_instructions << " warp instructions) in "
      << r.seconds << " s = " << (r.thread_instructions / r.seconds / 1e6) << " M thread-instr/s, "
      << (r.warp_instructions / r.seconds / 1e6) << " M warp-instr/s (wall); CPU time " << cpu << " s = "
      << (r.thread_instructions / cpu / 1e6) << " M thread-instr/s" << (r.ok() ? "" : " [" + r.text() + "]") << "\n";
  }
  return s.str();
}

}  // namespace ptxsim
