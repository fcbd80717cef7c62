// Simulator core: mbarrier phases, transaction counts and parity; bulk tensor copies landing and
// completing transactions; wgmma groups; and the protocol errors they must make visible.
// Expectations are worked out from the PTX ISA (mbarrier phase completion: pending arrivals zero
// and tx-count zero; try_wait.parity P is true once the phase of parity P has completed; wgmma
// accumulator fragment and canonical K-major layouts).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "tests/sim/sim_core_util.h"
#include "tools/sim/isa/tensormap.h"

using namespace simtest;

namespace {

// Thread 0 walks one mbarrier through its phase rules; results to out[0..7].
const char* kMbarPhases = R"(
.shared .align 16 .b8 smem[256];
.visible .entry k(.param .u64 out, .param .u64 src)
{
  .reg .pred %p<8>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [src];
  mov.u32 %r1, smem;
  add.s32 %r2, %r1, 128;
  mov.u32 %r3, 2;
  mbarrier.init.shared::cta.b64 [%r1], %r3;
  fence.mbarrier_init.release.cluster;
  mbarrier.arrive.release.cta.shared::cta.b64 %rd3, [%r1];
  mbarrier.test_wait.parity.acquire.cta.shared::cta.b64 %p1, [%r1], 0;
  selp.u32 %r4, 1, 0, %p1;
  st.global.u32 [%rd1], %r4;
  mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r1], 64;
  mbarrier.arrive.release.cta.shared::cta.b64 %rd4, [%r1];
  mbarrier.test_wait.parity.acquire.cta.shared::cta.b64 %p2, [%r1], 0;
  selp.u32 %r5, 1, 0, %p2;
  st.global.u32 [%rd1+4], %r5;
  // parity 1 counts as complete before the first phase (the "previous" phase)
  mbarrier.test_wait.parity.acquire.cta.shared::cta.b64 %p3, [%r1], 1;
  selp.u32 %r6, 1, 0, %p3;
  st.global.u32 [%rd1+8], %r6;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd2], 64, [%r1];
WAIT:
  mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p4, [%r1], 0;
  @!%p4 bra WAIT;
  mbarrier.test_wait.parity.acquire.cta.shared::cta.b64 %p5, [%r1], 1;
  selp.u32 %r7, 1, 0, %p5;
  st.global.u32 [%rd1+12], %r7;
  ld.shared.u32 %r8, [%r2+60];
  st.global.u32 [%rd1+16], %r8;
  ret;
}
)";

}  // namespace

TEST_SUITE("sim core async") {

TEST_CASE("mbarrier: a phase completes when arrivals and the transaction count both reach zero") {
  std::string err;
  auto m = load(kMbarPhases, &err);
  REQUIRE_MESSAGE(m, err);
  std::vector<uint32_t> out(8, 0xFFFF);
  alignas(16) uint32_t src[16];
  for (int i = 0; i < 16; ++i) src[i] = 1000 + i;
  ptxsim::Memory mem;
  mem.add(out.data(), out.size() * 4, "out");
  mem.add(src, sizeof src, "src");
  ptxsim::TensorMaps maps;
  auto rep = ptxsim::launch(config(m, "k", 1, Params().put<uint64_t>(0, (uint64_t)out.data()).put<uint64_t>(8, (uint64_t)src).bytes), mem, maps);
  REQUIRE_MESSAGE(rep.ok(), rep.text());
  CHECK(out[0] == 0);     // one of two arrivals
  CHECK(out[1] == 0);     // arrivals complete, 64 transaction bytes outstanding
  CHECK(out[2] == 1);     // parity 1: the phase before the first
  CHECK(out[3] == 0);     // phase 1 has not completed
  CHECK(out[4] == 1015);  // the bulk copy landed before the wait returned
}

// A one-thread-issues, all-threads-wait tensor load, as the kernels do.
static std::string tma_kernel(bool wait, uint32_t expect_bytes, int boxes, int parity) {
  std::string s = R"(
.shared .align 1024 .b8 smem[4096];
.visible .entry k(.param .u64 out, .param .align 64 .b8 tmap[128], .param .u32 c0, .param .u32 c1)
{
  .reg .pred %p<8>;
  .reg .b32 %r<30>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [out];
  mov.u64 %rd2, tmap;
  cvta.param.u64 %rd3, %rd2;
  ld.param.u32 %r20, [c0];
  ld.param.u32 %r21, [c1];
  mov.u32 %r1, smem;
  add.s32 %r2, %r1, 1024;
  mov.u32 %r10, %tid.x;
  setp.ne.s32 %p1, %r10, 0;
  @%p1 bra SKIP;
  mbarrier.init.shared::cta.b64 [%r1], 1;
  fence.mbarrier_init.release.cluster;
SKIP:
  bar.sync 0;
  @%p1 bra WAITING;
  mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%r1], EXPECT;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd3, {%r20, %r21}], [%r1];
)";
  if (boxes > 1)
    s += "  add.s32 %r22, %r21, 4;\n  add.s32 %r3, %r2, 128;\n"
         "  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r3], [%rd3, {%r20, %r22}], [%r1];\n";
  s += "WAITING:\n";
  if (wait)
    s += "WAIT:\n  mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p2, [%r1], PARITY;\n  @!%p2 bra WAIT;\n";
  s += R"(
  shl.b32 %r11, %r10, 2;
  add.s32 %r12, %r2, %r11;
  ld.shared.u32 %r13, [%r12];
  mul.wide.u32 %rd4, %r10, 4;
  add.s64 %rd5, %rd1, %rd4;
  st.global.u32 [%rd5], %r13;
  ret;
}
)";
  auto rep = [&](const std::string& what, const std::string& with) {
    for (size_t p; (p = s.find(what)) != std::string::npos;) s.replace(p, what.size(), with);
  };
  rep("EXPECT", std::to_string(expect_bytes));
  rep("PARITY", std::to_string(parity));
  return s;
}

namespace {
struct TmaRig {
  std::vector<float> g;           // 16 rows x 32 columns, row-major
  std::vector<uint32_t> out;
  ptxsim::Memory mem;
  ptxsim::TensorMaps maps;
  alignas(64) uint8_t map[128];
  TmaRig() : g(16 * 32), out(64, 0xFFFFFFFFu) {
    for (int r = 0; r < 16; ++r) for (int c = 0; c < 32; ++c) g[r * 32 + c] = float(r * 100 + c);
    mem.add(g.data(), g.size() * 4, "g");
    mem.add(out.data(), out.size() * 4, "out");
    ptxsim::isa::TensorMapDesc d;
    d.type = ptxsim::isa::ElemType::f32;
    d.rank = 2;
    d.base = (uint64_t)g.data();
    d.dims[0] = 32; d.dims[1] = 16;
    d.strides_bytes[0] = 4; d.strides_bytes[1] = 32 * 4;
    d.box[0] = 8; d.box[1] = 4;   // 8 x 4 floats = 128 bytes
    ptxsim::TensorMaps::encode(map, maps.add(d));
  }
  ptxsim::Report run(const std::string& ptx, int c0, int c1, uint32_t threads = 32) {
    std::string err;
    auto m = load(ptx, &err);
    REQUIRE_MESSAGE(m, err);
    auto ps = ptxsim::entry_params(*m, "k");
    REQUIRE(ps.size() == 4);
    CHECK(ps[1].offset == 64);  // .align 64
    CHECK(ps[1].size == 128);
    Params p;
    p.put<uint64_t>(ps[0].offset, (uint64_t)out.data());
    p.bytes.resize(ps[3].offset + 4);
    memcpy(&p.bytes[ps[1].offset], map, 128);
    p.put<int32_t>(ps[2].offset, c0).put<int32_t>(ps[3].offset, c1);
    return ptxsim::launch(config(m, "k", threads, p.bytes), mem, maps);
  }
};
}  // namespace

TEST_CASE("tensor load: the box lands, completes the transaction, zero fill outside the tensor") {
  TmaRig rig;
  auto rep = rig.run(tma_kernel(true, 128, 1, 0), 8, 4);
  REQUIRE_MESSAGE(rep.ok(), rep.text());
  for (int t = 0; t < 32; ++t) CHECK(f32(rig.out[t]) == float((4 + t / 8) * 100 + 8 + t % 8));
  // a box hanging over the last column and row: the outside reads as zero and still counts
  TmaRig rig2;
  auto rep2 = rig2.run(tma_kernel(true, 128, 1, 0), 28, 14);
  REQUIRE_MESSAGE(rep2.ok(), rep2.text());
  for (int t = 0; t < 32; ++t) {
    int r = 14 + t / 8, c = 28 + t % 8;
    float want = (r < 16 && c < 32) ? float(r * 100 + c) : 0.0f;
    CHECK(f32(rig2.out[t]) == want);
  }
}

TEST_CASE("trace: a tensor load's issue, landing and phase completion on the logical clock") {
  struct Sink : ptxsim::TraceSink {
    std::vector<ptxsim::TraceEvent> ev;
    void event(const ptxsim::TraceEvent& e) override { ev.push_back(e); }
  } sink;
  TmaRig rig;
  std::string err;
  auto m = load(tma_kernel(true, 128, 1, 0), &err);
  REQUIRE_MESSAGE(m, err);
  auto ps = ptxsim::entry_params(*m, "k");
  Params p;
  p.put<uint64_t>(ps[0].offset, (uint64_t)rig.out.data());
  p.bytes.resize(ps[3].offset + 4);
  memcpy(&p.bytes[ps[1].offset], rig.map, 128);
  p.put<int32_t>(ps[2].offset, 8).put<int32_t>(ps[3].offset, 4);
  auto cfg = config(m, "k", 32, p.bytes);
  cfg.trace = &sink;
  auto rep = ptxsim::launch(cfg, rig.mem, rig.maps);
  REQUIRE_MESSAGE(rep.ok(), rep.text());
  int issue = -1, landed = -1, phase = -1;
  for (size_t i = 0; i < sink.ev.size(); ++i) {
    if (sink.ev[i].kind == ptxsim::TraceEvent::kTmaIssue && issue < 0) issue = (int)i;
    if (sink.ev[i].kind == ptxsim::TraceEvent::kTmaLand && landed < 0) landed = (int)i;
    if (sink.ev[i].kind == ptxsim::TraceEvent::kPhaseComplete && phase < 0) phase = (int)i;
  }
  REQUIRE(issue >= 0);
  REQUIRE(landed > issue);
  REQUIRE(phase > landed);
  CHECK(sink.ev[landed].clock >= sink.ev[issue].clock);
}

TEST_CASE("negative: reading a tensor-load destination before the wait is a hazard naming the barrier") {
  TmaRig rig;
  auto rep = rig.run(tma_kernel(false, 128, 1, 0), 8, 4);
  REQUIRE(rep.has(ptxsim::Finding::kHazard));
  auto& f = rep.findings[0];
  CHECK(f.message.find("in-flight bulk copy") != std::string::npos);
  CHECK(f.barrier.find("mbarrier smem+0x0") != std::string::npos);
  CHECK(f.ptx_location.find("ld.shared.u32") != std::string::npos);
}

TEST_CASE("negative: waiting on the wrong parity is a deadlock that shows the barrier's state") {
  TmaRig rig;
  // parity 1 passes at once (the phase before the first); the first real phase has parity 0.
  // Waiting for parity 1 after phase 0 would need a second phase: use a kernel that waits twice.
  std::string ptx = tma_kernel(true, 128, 1, 0);
  size_t p = ptx.find("WAITING:\n");
  ptx.insert(p + 9, "WAIT1:\n  mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p3, [%r1], 0;\n  @!%p3 bra WAIT1;\n"
                    "WAIT2:\n  mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p4, [%r1], 1;\n  @!%p4 bra WAIT2;\n");
  auto rep = rig.run(ptx, 8, 4);
  REQUIRE(rep.has(ptxsim::Finding::kDeadlock));
  std::string t = rep.text();
  CHECK(t.find("phase parity 1, phases completed 1, pending arrivals 1 of 1, tx-count 0") != std::string::npos);
  CHECK(t.find("WAIT2") == std::string::npos);  // labels are not instructions; the line is
  CHECK(t.find("try_wait.parity.acquire.cta.shared::cta.b64 %p4") != std::string::npos);
}

TEST_CASE("negative: expect_tx one box short releases the phase early (hazard, and tx left over)") {
  TmaRig rig;
  auto rep = rig.run(tma_kernel(true, 128, 2, 0), 8, 4, 64);  // two boxes, 256 bytes, 128 expected
  CHECK(!rep.ok());
  bool hazard_or_protocol = rep.has(ptxsim::Finding::kHazard) || rep.has(ptxsim::Finding::kProtocol);
  CHECK_MESSAGE(hazard_or_protocol, rep.text());
  // one box too many expected: the phase can never complete
  TmaRig rig2;
  auto rep2 = rig2.run(tma_kernel(true, 256, 1, 0), 8, 4);
  REQUIRE(rep2.has(ptxsim::Finding::kDeadlock));
  CHECK(rep2.text().find("tx-count 128") != std::string::npos);
}

// Generic-proxy writes to shared memory read by a bulk tensor store.
static std::string store_kernel(bool fence) {
  std::string s = R"(
.shared .align 1024 .b8 smem[2048];
.visible .entry k(.param .u64 out, .param .align 64 .b8 tmap[128], .param .u32 c0, .param .u32 c1)
{
  .reg .pred %p<4>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<6>;
  mov.u64 %rd2, tmap;
  cvta.param.u64 %rd3, %rd2;
  mov.u32 %r1, smem;
  mov.u32 %r10, %tid.x;
  shl.b32 %r11, %r10, 2;
  add.s32 %r12, %r1, %r11;
  cvt.rn.f32.u32 %f1, %r10;
  st.shared.f32 [%r12], %f1;
FENCE
  bar.sync 0;
  setp.ne.s32 %p1, %r10, 0;
  @%p1 bra DONE;
  cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd3, {0, 0}], [%r1];
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
DONE:
  ret;
}
)";
  s.replace(s.find("FENCE"), 5, fence ? "  fence.proxy.async.shared::cta;" : "");
  s.insert(s.find("  .reg .b64"), "  .reg .f32 %f<2>;\n");
  return s;
}

TEST_CASE("tensor store: fence.proxy.async between generic writes and the bulk store, else a protocol report") {
  {
    TmaRig rig;
    auto rep = rig.run(store_kernel(true), 0, 0);
    REQUIRE_MESSAGE(rep.ok(), rep.text());
    for (int t = 0; t < 32; ++t) CHECK(rig.g[(t / 8) * 32 + t % 8] == float(t));
    CHECK(rig.g[8] == 8.0f);  // outside the box: untouched (row 0, column 8 was 8)
  }
  {
    TmaRig rig;
    auto rep = rig.run(store_kernel(false), 0, 0);
    REQUIRE(rep.has(ptxsim::Finding::kProtocol));
    CHECK(rep.text().find("no fence.proxy.async") != std::string::npos);
  }
}

TEST_CASE("negative: setmaxnreg over the launch's register pool is reported, a legal split runs") {
  auto kernel = [](int dec, int inc) {
    return std::string(R"(
.visible .entry k()
.maxnreg 128
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  mov.u32 %r1, %tid.x;
  setp.ge.u32 %p1, %r1, 128;
  @%p1 bra HI;
  setmaxnreg.dec.sync.aligned.u32 )") + std::to_string(dec) + R"(;
  bra.uni DONE;
HI:
  setmaxnreg.inc.sync.aligned.u32 )" + std::to_string(inc) + R"(;
DONE:
  ret;
}
)";
  };
  ptxsim::Memory mem;
  ptxsim::TensorMaps maps;
  {
    auto m = load(kernel(40, 216));
    REQUIRE(m);
    auto rep = ptxsim::launch(config(m, "k", 256, {}), mem, maps);
    CHECK_MESSAGE(rep.ok(), rep.text());
  }
  {
    auto m = load(kernel(40, 232));  // 40 + 232 > 2 * 128
    REQUIRE(m);
    auto rep = ptxsim::launch(config(m, "k", 256, {}), mem, maps);
    REQUIRE(!rep.ok());
    CHECK(rep.text().find("setmaxnreg") != std::string::npos);
    // Its own report (not only the deadlock it causes): the pool and the warpgroups' counts, worked
    // out from the ISA (.inc blocks until the pool covers it): 128 x 256 = 32768 registers; warpgroup
    // 0 holds 40 x 128, warpgroup 1 asks for 232 x 128: 34816 in all.
    REQUIRE_MESSAGE(rep.has(ptxsim::Finding::kProtocol), rep.text());
    CHECK_MESSAGE(rep.text().find("setmaxnreg.inc to 232 can never be granted: the launch's register pool is 128 per "
                                  "thread x 256 threads = 32768 registers and the warpgroups' counts (warpgroup 0: 40, "
                                  "warpgroup 1: 232) need 34816: a setmaxnreg split over the pool") != std::string::npos,
                  rep.text());
  }
  {
    auto m = load(kernel(20, 128));  // 20 is not a legal count
    REQUIRE(m);
    auto rep = ptxsim::launch(config(m, "k", 256, {}), mem, maps);
    CHECK(rep.has(ptxsim::Finding::kIllegal));
  }
}

// ---- wgmma ----------------------------------------------------------------------------------
// A (64 x 16) and B (N=64 x K=16, i.e. B^T stored K-major) in the no-swizzle K-major canonical
// layout: element (r, k) at (r%8)*16 + (k%8)*2 + (k/8)*LBO + (r/8)*SBO, LBO = 128, SBO = 256.
static uint32_t kmajor_offset(int r, int k) { return (r % 8) * 16 + (k % 8) * 2 + (k / 8) * 128 + (r / 8) * 256; }
static uint64_t desc(uint32_t addr) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(128 >> 4) << 16) | ((uint64_t)(256 >> 4) << 32);
}
static uint16_t bf16(float f) { uint32_t u = u32(f); return (uint16_t)(u >> 16); }  // exact for our inputs

static std::string wgmma_kernel(bool early_read, bool early_smem_write = false) {
  std::string d;
  for (int i = 0; i < 32; ++i) d += (i ? ", " : "") + std::string("%f") + std::to_string(i);
  std::string s = R"(
.shared .align 1024 .b8 smem[4096];
.visible .entry k(.param .u64 out, .param .u64 ab)
{
  .reg .pred %p<2>;
  .reg .b32 %r<40>;
  .reg .f32 %f<40>;
  .reg .b64 %rd<20>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [ab];
  mov.u32 %r1, smem;
  mov.u32 %r2, %tid.x;
  shl.b32 %r3, %r2, 5;
  cvt.u64.u32 %rd3, %r3;
  add.s64 %rd4, %rd2, %rd3;
  add.s32 %r4, %r1, %r3;
  ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd4];
  st.shared.v4.u32 [%r4], {%r10, %r11, %r12, %r13};
  ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd4+16];
  st.shared.v4.u32 [%r4+16], {%r10, %r11, %r12, %r13};
  fence.proxy.async.shared::cta;
  bar.sync 0;
  ld.param.u64 %rd5, [ab+8];
  ld.param.u64 %rd6, [ab+16];
  wgmma.fence.sync.aligned;
  {
  .reg .pred p;
  setp.ne.b32 p, 0, 0;
  wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {D}, %rd5, %rd6, p, 1, 1, 0, 0;
  }
  wgmma.commit_group.sync.aligned;
EARLY
  wgmma.wait_group.sync.aligned 0;
  mul.wide.u32 %rd7, %r2, 128;
  add.s64 %rd8, %rd1, %rd7;
)";
  for (int i = 0; i < 32; ++i) s += "  st.global.f32 [%rd8+" + std::to_string(4 * i) + "], %f" + std::to_string(i) + ";\n";
  s += "  ret;\n}\n";
  s.replace(s.find("{D}"), 3, "{" + d + "}");
  s.replace(s.find("EARLY"), 5, early_read ? "  mov.b32 %r30, %f5;" : early_smem_write ? "  bar.sync 0;\n  st.shared.u32 [%r4], %r2;" : "");
  return s;
}

TEST_CASE("wgmma SS m64n64k16 bf16: accumulators as the ISA's fragment layout says, against an fp64 matmul") {
  std::string err;
  auto m = load(wgmma_kernel(false), &err);
  REQUIRE_MESSAGE(m, err);
  // the param "ab" points at 4096 bytes of A|B image; descriptors at ab+8/ab+16 are read from
  // the param block, so we put them there (the param is 8 bytes: extend the block)
  std::vector<uint8_t> img(4096, 0);
  float A[64][16], B[64][16];
  for (int r = 0; r < 64; ++r)
    for (int k = 0; k < 16; ++k) {
      A[r][k] = float(((r * 3 + k * 5) % 17) - 8) / 4.0f;
      B[r][k] = float(((r * 7 + k * 11) % 13) - 6) / 8.0f;
      uint16_t a = bf16(A[r][k]), b = bf16(B[r][k]);
      memcpy(&img[kmajor_offset(r, k)], &a, 2);
      memcpy(&img[2048 + kmajor_offset(r, k)], &b, 2);
    }
  std::vector<float> out(128 * 32, -1.0f);
  ptxsim::Memory mem;
  mem.add(out.data(), out.size() * 4, "out");
  mem.add(img.data(), img.size(), "ab");
  ptxsim::TensorMaps maps;
  // shared addresses: the module's smem is at the window's offset 0 of rank 0: (0 + 1) << 24
  uint32_t base = 1u << 24;
  Params p;
  p.put<uint64_t>(0, (uint64_t)out.data()).put<uint64_t>(8, (uint64_t)img.data());
  p.put<uint64_t>(16, desc(base)).put<uint64_t>(24, desc(base + 2048));
  auto cfg = config(m, "k", 128, p.bytes);
  auto rep = ptxsim::launch(cfg, mem, maps);
  REQUIRE_MESSAGE(rep.ok(), rep.text());
  int bad = 0;
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < 32; ++i) {
      int row = 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2);
      int col = 8 * (i / 4) + 2 * (t % 4) + (i % 2);
      double ref = 0;
      for (int k = 0; k < 16; ++k) ref += (double)A[row][k] * (double)B[col][k];
      if (std::fabs(out[t * 32 + i] - ref) > 1e-6) ++bad;
    }
  CHECK(bad == 0);
}

// (after a bar.sync that every warp reaches after issuing: the operands have been read)
TEST_CASE("negative: writing shared memory an in-flight wgmma reads is a hazard") {
  std::string err;
  auto m = load(wgmma_kernel(false, true), &err);
  REQUIRE_MESSAGE(m, err);
  std::vector<uint8_t> img(4096, 0);
  std::vector<float> out(128 * 32, 0);
  ptxsim::Memory mem;
  mem.add(out.data(), out.size() * 4, "out");
  mem.add(img.data(), img.size(), "ab");
  ptxsim::TensorMaps maps;
  uint32_t base = 1u << 24;
  Params p;
  p.put<uint64_t>(0, (uint64_t)out.data()).put<uint64_t>(8, (uint64_t)img.data());
  p.put<uint64_t>(16, desc(base)).put<uint64_t>(24, desc(base + 2048));
  auto rep = ptxsim::launch(config(m, "k", 128, p.bytes), mem, maps);
  REQUIRE_MESSAGE(rep.has(ptxsim::Finding::kHazard), rep.text());
  CHECK(rep.findings[0].message.find("in-flight asynchronous operation") != std::string::npos);
  CHECK(rep.findings[0].ptx_location.find("st.shared.u32 [%r4], %r2") != std::string::npos);
}

TEST_CASE("negative: reading a wgmma accumulator before the wait that retires it is a hazard") {
  std::string err;
  auto m = load(wgmma_kernel(true), &err);
  REQUIRE_MESSAGE(m, err);
  std::vector<uint8_t> img(4096, 0);
  std::vector<float> out(128 * 32, 0);
  ptxsim::Memory mem;
  mem.add(out.data(), out.size() * 4, "out");
  mem.add(img.data(), img.size(), "ab");
  ptxsim::TensorMaps maps;
  uint32_t base = 1u << 24;
  Params p;
  p.put<uint64_t>(0, (uint64_t)out.data()).put<uint64_t>(8, (uint64_t)img.data());
  p.put<uint64_t>(16, desc(base)).put<uint64_t>(24, desc(base + 2048));
  auto rep = ptxsim::launch(config(m, "k", 128, p.bytes), mem, maps);
  REQUIRE(rep.has(ptxsim::Finding::kHazard));
  CHECK(rep.findings[0].ptx_location.find("mov.b32 %r30, %f5") != std::string::npos);
}

}  // TEST_SUITE
