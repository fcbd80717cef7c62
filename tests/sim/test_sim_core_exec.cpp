// Simulator core: scalar ALU forms, divergence, warp collectives, CTA barriers, calls.
// Each expectation is worked out from the PTX ISA's definition of the instruction.
#include <doctest/doctest.h>

#include <cmath>

#include "tests/sim/sim_core_util.h"

using namespace simtest;

TEST_SUITE("sim core exec") {

// out[tid] = f(tid) for a few integer and float forms.
TEST_CASE("integer and float ALU forms, per thread") {
  const char* ptx = R"(
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<20>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 32;
  add.s64 %rd4, %rd2, %rd3;
  // 0: (tid * 7 + 3) >> 1 with shr.u32; 1: -tid >> 1 arithmetic (shr.s32)
  mad.lo.s32 %r2, %r1, 7, 3;
  shr.u32 %r3, %r2, 1;
  st.global.u32 [%rd4], %r3;
  neg.s32 %r4, %r1;
  shr.s32 %r5, %r4, 1;
  st.global.u32 [%rd4+4], %r5;
  // 2: prmt.b32 with selector 0x3210 of (a, b) is a; 0x7654 is b; 0x0123 byte-reverses a
  mov.b32 %r6, 0x44332211;
  prmt.b32 %r7, %r6, %r1, 0x0123;
  st.global.u32 [%rd4+8], %r7;
  // 3: selp from setp.lt.s32 with .and combine: (tid < 5) and (tid != 2)
  setp.ne.s32 %p1, %r1, 2;
  setp.lt.and.s32 %p2, %r1, 5, %p1;
  selp.u32 %r8, 1, 0, %p2;
  st.global.u32 [%rd4+12], %r8;
  // 4: float: fma.rn.f32 (tid, 0.5, 1.0); 5: ex2.approx (tid) ; 6: cvt.rn.bf16x2.f32 (1.0, tid)
  cvt.rn.f32.s32 %f1, %r1;
  fma.rn.f32 %f2, %f1, 0f3F000000, 0f3F800000;
  st.global.f32 [%rd4+16], %f2;
  ex2.approx.ftz.f32 %f3, %f1;
  st.global.f32 [%rd4+20], %f3;
  cvt.rn.bf16x2.f32 %r9, %f1, 0f3F800000;
  st.global.b32 [%rd4+24], %r9;
  // 7: bfi.b32: insert tid's low 4 bits at position 8 into 0xFFFFFFFF
  bfi.b32 %r10, %r1, -1, 8, 4;
  st.global.u32 [%rd4+28], %r10;
  ret;
}
)";
  std::string err;
  auto m = load(ptx, &err);
  REQUIRE_MESSAGE(m, err);
  std::vector<uint32_t> out(64 * 8, 0xDEADBEEF);
  ptxsim::Memory mem;
  mem.add(out.data(), out.size() * 4, "out");
  ptxsim::TensorMaps maps;
  auto cfg = config(m, "k", 64, Params().put<uint64_t>(0, (uint64_t)out.data()).bytes);
  auto rep = ptxsim::launch(cfg, mem, maps);
  REQUIRE_MESSAGE(rep.ok(), rep.text());
  for (uint32_t t = 0; t < 64; ++t) {
    const uint32_t* o = &out[t * 8];
    CHECK(o[0] == (t * 7 + 3) >> 1);
    CHECK((int32_t)o[1] == (-(int32_t)t) >> 1);
    CHECK(o[2] == 0x11223344u);
    CHECK(o[3] == (t < 5 && t != 2 ? 1u : 0u));
    CHECK(f32(o[4]) == t * 0.5f + 1.0f);
    CHECK(f32(o[5]) == std::ldexp(1.0f, (int)t));
    // bf16 of 1.0 is 0x3F80 (upper half: first source); tid is exact in bf16 up to 256
    uint32_t tb = u32((float)t) >> 16;
    CHECK(o[6] == ((tb << 16) | 0x3F80u));
    CHECK(o[7] == ((0xFFFFFFFFu & ~0xF00u) | ((t & 0xF) << 8)));
  }
}

// Divergent branches with independent thread scheduling: odd lanes loop tid times.
TEST_CASE("divergence: per-thread PCs, loops of different trip counts") {
  const char* ptx = R"(
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  mov.u32 %r2, 0;
  mov.u32 %r3, 0;
  and.b32 %r4, %r1, 1;
  setp.eq.s32 %p1, %r4, 0;
  @%p1 bra EVEN;
LOOP:
  add.s32 %r2, %r2, %r3;
  add.s32 %r3, %r3, 1;
  setp.lt.u32 %p2, %r3, %r1;
  @%p2 bra LOOP;
  bra.uni DONE;
EVEN:
  mul.lo.s32 %r2, %r1, 100;
DONE:
  st.global.u32 [%rd4], %r2;
  ret;
}
)";
  std::string err;
  auto m = load(ptx, &err);
  REQUIRE_MESSAGE(m, err);
  const OutRun run = run_u32_out(m, 96, 96);
  REQUIRE_MESSAGE(run.report.ok(), run.report.text());
  const std::vector<uint32_t>& out = run.out;
  for (uint32_t t = 0; t < 96; ++t) {
    uint32_t want = (t % 2 == 0) ? t * 100 : (t - 1) * t / 2;  // sum 0..t-1
    CHECK(out[t] == want);
  }
}

TEST_CASE("shfl.sync bfly/idx, vote.sync, elect.sync meet the threads of the mask") {
  const char* ptx = R"(
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<6>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 16;
  add.s64 %rd4, %rd1, %rd3;
  // butterfly sum over the warp: after 5 steps every lane holds the sum of tid in its warp
  mov.u32 %r2, %r1;
  mov.u32 %r9, -1;
  shfl.sync.bfly.b32 %r3|%p1, %r2, 16, 31, %r9;
  add.s32 %r2, %r2, %r3;
  shfl.sync.bfly.b32 %r3|%p1, %r2, 8, 31, %r9;
  add.s32 %r2, %r2, %r3;
  shfl.sync.bfly.b32 %r3|%p1, %r2, 4, 31, %r9;
  add.s32 %r2, %r2, %r3;
  shfl.sync.bfly.b32 %r3|%p1, %r2, 2, 31, %r9;
  add.s32 %r2, %r2, %r3;
  shfl.sync.bfly.b32 %r3|%p1, %r2, 1, 31, %r9;
  add.s32 %r2, %r2, %r3;
  st.global.u32 [%rd4], %r2;
  // idx: read lane (31 - lane)
  mov.u32 %r4, %laneid;
  sub.s32 %r5, 31, %r4;
  shfl.sync.idx.b32 %r6|%p2, %r1, %r5, 31, %r9;
  st.global.u32 [%rd4+4], %r6;
  // vote.any over (lane == 7)
  setp.eq.s32 %p3, %r4, 7;
  vote.sync.any.pred %p4, %p3, %r9;
  selp.u32 %r7, 1, 0, %p4;
  st.global.u32 [%rd4+8], %r7;
  // elect.sync: the elected lane gets p = true
  elect.sync %r8|%p5, %r9;
  selp.u32 %r10, 1, 0, %p5;
  shl.b32 %r11, %r8, 8;
  or.b32 %r10, %r10, %r11;
  st.global.u32 [%rd4+12], %r10;
  ret;
}
)";
  std::string err;
  auto m = load(ptx, &err);
  REQUIRE_MESSAGE(m, err);
  std::vector<uint32_t> out(64 * 4, 0);
  ptxsim::Memory mem;
  mem.add(out.data(), out.size() * 4, "out");
  ptxsim::TensorMaps maps;
  auto rep = ptxsim::launch(config(m, "k", 64, Params().put<uint64_t>(0, (uint64_t)out.data()).bytes), mem, maps);
  REQUIRE_MESSAGE(rep.ok(), rep.text());
  for (uint32_t t = 0; t < 64; ++t) {
    uint32_t w = t / 32, lane = t % 32;
    uint32_t sum = 0;
    for (uint32_t k = 0; k < 32; ++k) sum += w * 32 + k;
    CHECK(out[t * 4] == sum);
    CHECK(out[t * 4 + 1] == w * 32 + 31 - lane);
    CHECK(out[t * 4 + 2] == 1u);
    CHECK((out[t * 4 + 3] & 1) == (lane == 0 ? 1u : 0u));  // ISA reading: the lowest lane leads
    CHECK((out[t * 4 + 3] >> 8) == 0u);
  }
}

// bar.sync 1, 64 between two warps exchanging data through shared memory; bar.arrive by a
// producer warp and bar.sync by a consumer warp (the named-barrier producer/consumer pattern).
TEST_CASE("bar.sync / bar.arrive with id and thread count") {
  const char* ptx = R"(
.shared .align 4 .b8 buf[256];
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, buf;
  shl.b32 %r3, %r1, 2;
  add.s32 %r4, %r2, %r3;
  setp.ge.u32 %p1, %r1, 32;
  @%p1 bra CONSUMER;
  mul.lo.s32 %r5, %r1, 3;
  st.shared.u32 [%r4], %r5;
  bar.arrive 1, 64;
  ret;
CONSUMER:
  bar.sync 1, 64;
  sub.s32 %r6, %r4, 128;
  ld.shared.u32 %r7, [%r6];
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  st.global.u32 [%rd4], %r7;
  ret;
}
)";
  std::string err;
  auto m = load(ptx, &err);
  REQUIRE_MESSAGE(m, err);
  for (auto pol : {ptxsim::Policy::kRoundRobin, ptxsim::Policy::kRandom, ptxsim::Policy::kDelayOneWarpgroup}) {
    std::vector<uint32_t> out(64, 0);
    ptxsim::Memory mem;
    mem.add(out.data(), out.size() * 4, "out");
    ptxsim::TensorMaps maps;
    auto cfg = config(m, "k", 64, Params().put<uint64_t>(0, (uint64_t)out.data()).bytes);
    cfg.policy = pol;
    cfg.seed = 7;
    auto rep = ptxsim::launch(cfg, mem, maps);
    REQUIRE_MESSAGE(rep.ok(), rep.text());
    for (uint32_t t = 32; t < 64; ++t) CHECK(out[t] == (t - 32) * 3);
  }
}

TEST_CASE("bar.sync without a count waits for the threads that have not exited") {
  const char* ptx = R"(
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  setp.ge.u32 %p1, %r1, 64;
  @%p1 bra DONE;
  bar.sync 0;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], 1;
DONE:
  ret;
}
)";
  auto m = load(ptx);
  REQUIRE(m);
  std::vector<uint32_t> out(64, 0);
  ptxsim::Memory mem;
  mem.add(out.data(), out.size() * 4, "out");
  ptxsim::TensorMaps maps;
  for (auto pol : {ptxsim::Policy::kRoundRobin, ptxsim::Policy::kDelayOneWarpgroup}) {
    auto cfg = config(m, "k", 128, Params().put<uint64_t>(0, (uint64_t)out.data()).bytes);
    cfg.policy = pol;
    auto rep = ptxsim::launch(cfg, mem, maps);
    REQUIRE_MESSAGE(rep.ok(), rep.text());
    for (auto v : out) CHECK(v == 1u);
  }
}

TEST_CASE("the scheduler is deterministic: same policy and seed, same run; other policies, same results") {
  const char* ptx = R"(
.shared .align 4 .b8 buf[512];
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, buf;
  shl.b32 %r3, %r1, 2;
  add.s32 %r4, %r2, %r3;
  mov.u32 %r10, 0;
  mov.u32 %r11, 0;
LOOP:
  add.s32 %r5, %r1, %r10;
  st.shared.u32 [%r4], %r5;
  bar.sync 0;
  xor.b32 %r6, %r3, 4;
  add.s32 %r7, %r2, %r6;
  ld.shared.u32 %r8, [%r7];
  bar.sync 0;
  add.s32 %r10, %r10, %r8;
  and.b32 %r10, %r10, 1023;
  add.s32 %r11, %r11, 1;
  setp.lt.u32 %p1, %r11, 50;
  @%p1 bra LOOP;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  st.global.u32 [%rd4], %r10;
  ret;
}
)";
  auto m = load(ptx);
  REQUIRE(m);
  auto run = [&](ptxsim::Policy pol, uint64_t seed, std::vector<uint32_t>* out) {
    out->assign(128, 0);
    ptxsim::Memory mem;
    mem.add(out->data(), out->size() * 4, "out");
    ptxsim::TensorMaps maps;
    auto cfg = config(m, "k", 128, Params().put<uint64_t>(0, (uint64_t)out->data()).bytes);
    cfg.policy = pol;
    cfg.seed = seed;
    return ptxsim::launch(cfg, mem, maps);
  };
  std::vector<uint32_t> a, b, c;
  auto ra = run(ptxsim::Policy::kRandom, 5, &a);
  auto rb = run(ptxsim::Policy::kRandom, 5, &b);
  auto rc = run(ptxsim::Policy::kRoundRobin, 1, &c);
  REQUIRE_MESSAGE(ra.ok(), ra.text());
  REQUIRE(rb.ok());
  REQUIRE(rc.ok());
  CHECK(ra.warp_instructions == rb.warp_instructions);
  CHECK(a == b);
  CHECK(a == c);  // a race-free kernel: the schedule does not change the result
}

TEST_CASE("atom and red on global and shared memory: add, max, exch, cas return the old value") {
  const char* ptx = R"(
.shared .align 4 .b8 cnt[16];
.visible .entry k(.param .u64 g, .param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [g];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, cnt;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra SKIP;
  st.shared.u32 [%r2], 0;
SKIP:
  bar.sync 0;
  atom.global.add.u32 %r3, [%rd1], 1;
  atom.global.max.u32 %r4, [%rd1+4], %r1;
  atom.shared.add.u32 %r5, [%r2], 2;
  red.global.add.f32 [%rd1+8], 0f3F000000;
  atom.global.cas.b32 %r6, [%rd1+12], %r1, 100;
  bar.sync 0;
  ld.shared.u32 %r7, [%r2];
  mul.wide.u32 %rd3, %r1, 16;
  add.s64 %rd4, %rd2, %rd3;
  st.global.v4.u32 [%rd4], {%r3, %r5, %r6, %r7};
  ret;
}
)";
  std::string err;
  auto m = load(ptx, &err);
  REQUIRE_MESSAGE(m, err);
  std::vector<uint32_t> g(4, 0), out(64 * 4, 0);
  g[3] = 5;  // the cas succeeds for the thread whose tid is 5, once
  ptxsim::Memory mem;
  mem.add(g.data(), 16, "g");
  mem.add(out.data(), out.size() * 4, "out");
  ptxsim::TensorMaps maps;
  auto rep = ptxsim::launch(config(m, "k", 64, Params().put<uint64_t>(0, (uint64_t)g.data()).put<uint64_t>(8, (uint64_t)out.data()).bytes), mem, maps);
  REQUIRE_MESSAGE(rep.ok(), rep.text());
  CHECK(g[0] == 64u);
  CHECK(g[1] == 63u);
  CHECK(f32(g[2]) == 32.0f);
  CHECK(g[3] == 100u);
  std::vector<int> seen_add(64, 0), seen_sh(128, 0);
  int cas_hits = 0;
  for (int t = 0; t < 64; ++t) {
    const uint32_t* o = &out[t * 4];
    REQUIRE(o[0] < 64u);
    seen_add[o[0]]++;        // every old value 0..63 exactly once
    REQUIRE(o[1] < 128u);
    seen_sh[o[1]]++;
    if (o[2] == (uint32_t)t) ++cas_hits;  // old value equal to the compare value: this thread swapped
    CHECK(o[3] == 128u);
  }
  for (int v = 0; v < 64; ++v) CHECK(seen_add[v] == 1);
  for (int v = 0; v < 128; v += 2) CHECK(seen_sh[v] == 1);
  CHECK(cas_hits == 1);
}

TEST_CASE("negative: a warp of the warpgroup that never issues the wgmma: the others deadlock at wait_group") {
  std::string d;
  for (int i = 0; i < 32; ++i) d += (i ? ", " : "") + std::string("%f") + std::to_string(i);
  std::string ptx = R"(
.shared .align 1024 .b8 smem[4096];
.visible .entry k(.param .u64 da, .param .u64 db)
{
  .reg .pred %p<3>;
  .reg .b32 %r<4>;
  .reg .f32 %f<40>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [da];
  ld.param.u64 %rd2, [db];
  mov.u32 %r1, %tid.x;
  setp.ge.u32 %p1, %r1, 96;
  @%p1 bra DONE;
  wgmma.fence.sync.aligned;
  setp.ne.b32 %p2, 0, 0;
  wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {)" + d + R"(}, %rd1, %rd2, %p2, 1, 1, 0, 0;
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
DONE:
  ret;
}
)";
  std::string err;
  auto m = load(ptx, &err);
  REQUIRE_MESSAGE(m, err);
  ptxsim::Memory mem;
  ptxsim::TensorMaps maps;
  uint64_t desc = (uint64_t)((1u << 24) >> 4 & 0x3FFF) | ((uint64_t)8 << 16) | ((uint64_t)16 << 32);
  auto rep = ptxsim::launch(config(m, "k", 128, Params().put<uint64_t>(0, desc).put<uint64_t>(8, desc).bytes), mem, maps);
  REQUIRE(rep.has(ptxsim::Finding::kDeadlock));
  CHECK(rep.text().find("wgmma whose other warps of the warpgroup never issued it") != std::string::npos);
}

TEST_CASE("negative: bar.sync whose count is never reached is a deadlock naming the barrier") {
  const char* ptx = R"(
.visible .entry k()
{
  bar.sync 2, 128;
  ret;
}
)";
  auto m = load(ptx);
  REQUIRE(m);
  ptxsim::Memory mem;
  ptxsim::TensorMaps maps;
  auto rep = ptxsim::launch(config(m, "k", 64, {}), mem, maps);
  REQUIRE(rep.has(ptxsim::Finding::kDeadlock));
  CHECK(rep.text().find("named barrier 2 (64 of 128 threads arrived)") != std::string::npos);
  // and a count that is not a multiple of the warp size is illegal
  auto m2 = load(".visible .entry k()\n{\n  bar.sync 1, 48;\n  ret;\n}\n");
  REQUIRE(m2);
  auto rep2 = ptxsim::launch(config(m2, "k", 64, {}), mem, maps);
  CHECK(rep2.has(ptxsim::Finding::kIllegal));
}

TEST_CASE("out-of-bounds global store names the address and thread") {
  const char* ptx = R"(
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  st.global.u32 [%rd4], %r1;
  ret;
}
)";
  auto m = load(ptx);
  REQUIRE(m);
  std::vector<uint32_t> out(31, 0);  // one short
  ptxsim::Memory mem;
  mem.add(out.data(), out.size() * 4, "out");
  ptxsim::TensorMaps maps;
  auto rep = ptxsim::launch(config(m, "k", 32, Params().put<uint64_t>(0, (uint64_t)out.data()).bytes), mem, maps);
  REQUIRE(rep.has(ptxsim::Finding::kOutOfBounds));
  CHECK(rep.findings[0].where.find("lane 31") != std::string::npos);
  CHECK(rep.findings[0].ptx_location.find("st.global.u32") != std::string::npos);
}

TEST_CASE("an unimplemented form is a load error naming the form and line") {
  std::string err;
  auto m = load(".visible .entry k()\n{\n  .reg .b32 %r<3>;\n  popc.b32 %r1, %r2;\n  ret;\n}\n", &err);
  CHECK(!m);
  CHECK(err.find("popc.b32") != std::string::npos);
  CHECK(err.find("snippet.ptx:7") != std::string::npos);
}

TEST_CASE(".func call with .param passing and ret") {
  const char* ptx = R"(
.func (.param .b32 ret0) twice(.param .b32 a)
{
  .reg .b32 %r<3>;
  ld.param.b32 %r1, [a];
  add.s32 %r2, %r1, %r1;
  st.param.b32 [ret0], %r2;
  ret;
}
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  {
  .param .b32 p0;
  st.param.b32 [p0+0], %r1;
  .param .b32 rv;
  call.uni (rv), twice, (p0);
  ld.param.b32 %r2, [rv+0];
  }
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  st.global.u32 [%rd4], %r2;
  ret;
}
)";
  std::string err;
  auto m = load(ptx, &err);
  REQUIRE_MESSAGE(m, err);
  const OutRun run = run_u32_out(m, 32, 32);
  REQUIRE_MESSAGE(run.report.ok(), run.report.text());
  const std::vector<uint32_t>& out = run.out;
  for (uint32_t t = 0; t < 32; ++t) CHECK(out[t] == 2 * t);
}

}  // TEST_SUITE

// The benchmark, not a test: ./run_tests -ts="sim core bench" --no-skip prints it.
TEST_SUITE("sim core bench") {
TEST_CASE("simulated instructions per second (benchmark)" * doctest::skip()) { MESSAGE(ptxsim::benchmark()); }
}
