// Simulator core, sm_100a: the tcgen05 family executed by the PTX simulator (tools/sim/exec_sm100.inc).
// Executed in the PTX simulator; never run on a Blackwell GPU. Each expectation is worked out from
// the PTX ISA ("Tensorcore 5th Generation Family Instructions"), not from ptx/ or src/:
//   - "Tensor Memory Allocation": tcgen05.alloc of a power of two of columns in [32, 512] by one warp,
//     the address (lane 0 in bits 31-16, the first column in bits 15-0) written to shared memory;
//     every allocation freed before exit; no alloc after relinquish_alloc_permit;
//   - "Matrix fragments for shape .32x32b": thread t of the warp, register j <-> TMEM lane
//     (address lane + t), column (address column + j); "Access restrictions": warp w of a warpgroup
//     reaches lanes [32*(w%4), +32) only;
//   - "tcgen05.wait": tcgen05.ld / st are asynchronous until tcgen05.wait::ld / ::st;
//   - "Instruction descriptor" and "Shared memory descriptor" (the bit tables), the K-major
//     no-swizzle canonical layout (core matrices of 8 rows x 16 bytes; LBO between the core matrices
//     along K, SBO between 8-row groups), D = A x B^T (+ D with enable-input-d), the M = 128
//     cta_group::1 data path (row i of D in lane i, column j in column j); tcgen05.commit's
//     arrive-on once the thread's prior MMAs completed.
// Plus mutations of the project's own sm_100a test kernels (build/ptx/tests/kernels_sm100/umma.ptx).
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <sstream>

#include "tests/sim/sim_core_util.h"

using namespace simtest;

namespace {

const char* kHeader100 = ".version 8.7\n.target sm_100a\n.address_size 64\n";

std::shared_ptr<const ptxsim::Module> load100(const std::string& body, std::string* err) {
  return ptxsim::load_module(std::string(kHeader100) + body, "tc.ptx", err);
}

// Replaces the first occurrence of `from` with `to` (which must exist).
std::string edit(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "mutation anchor not found: " << from);
  return s.replace(at, from.size(), to);
}

bool has_message(const ptxsim::Report& r, ptxsim::Finding::Kind k, const std::string& part) {
  for (const auto& f : r.findings)
    if (f.kind == k && f.message.find(part) != std::string::npos) return true;
  return false;
}

// ---- Tensor Memory: allocation, the .32x32b map, the waits -------------------------------------
// Four warps. Warp 0 allocates 64 columns; every warp stores {1000 t + 1, 1000 t + 2} with .x2 at
// column 5 of its lane quarter, waits, loads .x1 at column 6 and writes it to out[t]; out[128 + t]
// gets the allocated address. Warp 0 frees and relinquishes.
const char* kTmemMap = R"(
.shared .align 16 .b8 smem[64];
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<40>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  mov.u32 %r4, smem;
  setp.eq.u32 %p1, %r2, 0;
  @!%p1 bra AFTER_ALLOC;
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r4], 64;
AFTER_ALLOC:
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
  tcgen05.fence::after_thread_sync;
  ld.shared.u32 %r5, [%r4];
  shl.b32 %r6, %r2, 21;
  add.u32 %r7, %r5, %r6;
  mad.lo.u32 %r10, %r1, 1000, 1;
  add.u32 %r11, %r10, 1;
  add.u32 %r8, %r7, 5;
  tcgen05.st.sync.aligned.32x32b.x2.b32 [%r8], {%r10, %r11};
  tcgen05.wait::st.sync.aligned;
  add.u32 %r9, %r7, 6;
  tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r12}, [%r9];
  tcgen05.wait::ld.sync.aligned;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r12;
  st.global.u32 [%rd3+512], %r5;
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
  @!%p1 bra DONE;
  tcgen05.fence::after_thread_sync;
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 64;
  tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
DONE:
  ret;
}
)";

OutRun run_map(const std::string& body) {
  std::string err;
  auto m = load100(body, &err);
  REQUIRE_MESSAGE(m, err);
  return run_u32_out(m, 128, 256);
}


// ---- tcgen05.mma kind::f16, cta_group::1, M = 128, N = 8, K = 16 --------------------------------
// 128 threads. A (SS: a shared-memory image of 4096 bytes, copied in; TS: per thread 8 packed
// registers, stored into TMEM columns [8, 16)) and B (256 bytes) are given by the host; thread 0
// issues one MMA with enable-input-d false and, if acc2, a second with enable-input-d true, then
// commits to the mbarrier at smem+4352; every thread waits on that phase, loads its row of D
// (.32x32b.x8 at its quarter) and writes it to out[8 t + j]. Parameters: out, a, b, the A and B
// descriptors without their start addresses, the instruction descriptor, acc2.
const char* kMma = R"(
.shared .align 1024 .b8 smem[5120];
.visible .entry k(.param .u64 out, .param .u64 a, .param .u64 b, .param .u64 adesc, .param .u64 bdesc, .param .u32 idesc, .param .u32 acc2)
{
  .reg .pred %p<8>;
  .reg .b32 %r<80>;
  .reg .b64 %rd<20>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [a];
  ld.param.u64 %rd3, [b];
  ld.param.u64 %rd4, [adesc];
  ld.param.u64 %rd5, [bdesc];
  ld.param.u32 %r40, [idesc];
  ld.param.u32 %r41, [acc2];
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  mov.u32 %r3, smem;
  add.u32 %r4, %r3, 4096;
  add.u32 %r5, %r3, 4352;
  add.u32 %r6, %r3, 4360;
  add.u32 %r7, %r3, 4368;
%%A_SMEM%%
  setp.lt.u32 %p2, %r1, 16;
  @!%p2 bra NO_B;
  mul.wide.u32 %rd8, %r1, 16;
  add.s64 %rd9, %rd3, %rd8;
  ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd9];
  shl.b32 %r8, %r1, 4;
  add.u32 %r9, %r4, %r8;
  st.shared.v4.u32 [%r9], {%r10, %r11, %r12, %r13};
NO_B:
  setp.eq.u32 %p1, %r2, 0;
  @!%p1 bra NO_ALLOC;
  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r7], 32;
NO_ALLOC:
  setp.eq.u32 %p3, %r1, 0;
  @!%p3 bra NO_INIT;
  mbarrier.init.shared::cta.b64 [%r5], 1;
  mbarrier.init.shared::cta.b64 [%r6], 1;
NO_INIT:
  fence.proxy.async.shared::cta;
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
  tcgen05.fence::after_thread_sync;
  ld.shared.u32 %r20, [%r7];
%%A_TMEM%%
  @!%p3 bra NO_MMA;
  and.b32 %r21, %r3, 262143;
  shr.u32 %r21, %r21, 4;
  cvt.u64.u32 %rd10, %r21;
  or.b64 %rd11, %rd4, %rd10;
  and.b32 %r22, %r4, 262143;
  shr.u32 %r22, %r22, 4;
  cvt.u64.u32 %rd12, %r22;
  or.b64 %rd13, %rd5, %rd12;
  mov.u32 %r23, 0;
  setp.ne.u32 %p4, %r23, 0;
  tcgen05.mma.cta_group::1.kind::f16 [%r20], %%A_OPERAND%%, %rd13, %r40, %p4;
  setp.ne.u32 %p5, %r41, 0;
  @!%p5 bra ONE_MMA;
  tcgen05.mma.cta_group::1.kind::f16 [%r20], %%A_OPERAND%%, %rd13, %r40, %p5;
ONE_MMA:
  tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r5];
NO_MMA:
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p6, [%r5], 0;
  @!%p6 bra WAIT;
  tcgen05.fence::after_thread_sync;
  shl.b32 %r24, %r2, 21;
  add.u32 %r25, %r20, %r24;
  tcgen05.ld.sync.aligned.32x32b.x8.b32 {%r50, %r51, %r52, %r53, %r54, %r55, %r56, %r57}, [%r25];
  tcgen05.wait::ld.sync.aligned;
  mul.wide.u32 %rd14, %r1, 32;
  add.s64 %rd15, %rd1, %rd14;
  st.global.v4.u32 [%rd15], {%r50, %r51, %r52, %r53};
  st.global.v4.u32 [%rd15+16], {%r54, %r55, %r56, %r57};
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
  @!%p1 bra DONE;
  tcgen05.fence::after_thread_sync;
  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r20, 32;
  tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
DONE:
  ret;
}
)";

const char* kASmem = R"(  mul.wide.u32 %rd6, %r1, 32;
  add.s64 %rd7, %rd2, %rd6;
  ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd7];
  ld.global.v4.u32 {%r14, %r15, %r16, %r17}, [%rd7+16];
  shl.b32 %r8, %r1, 5;
  add.u32 %r9, %r3, %r8;
  st.shared.v4.u32 [%r9], {%r10, %r11, %r12, %r13};
  st.shared.v4.u32 [%r9+16], {%r14, %r15, %r16, %r17};)";

const char* kATmem = R"(  mul.wide.u32 %rd6, %r1, 32;
  add.s64 %rd7, %rd2, %rd6;
  ld.global.v4.u32 {%r60, %r61, %r62, %r63}, [%rd7];
  ld.global.v4.u32 {%r64, %r65, %r66, %r67}, [%rd7+16];
  shl.b32 %r24, %r2, 21;
  add.u32 %r26, %r20, %r24;
  add.u32 %r26, %r26, 8;
  tcgen05.st.sync.aligned.32x32b.x8.b32 [%r26], {%r60, %r61, %r62, %r63, %r64, %r65, %r66, %r67};
  tcgen05.wait::st.sync.aligned;
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
  tcgen05.fence::after_thread_sync;
  add.u32 %r27, %r20, 8;)";

std::string mma_kernel(bool ts) {
  std::string s = kMma;
  s = edit(s, "%%A_SMEM%%", ts ? "" : kASmem);
  s = edit(s, "%%A_TMEM%%", ts ? kATmem : "");
  s = edit(s, "%%A_OPERAND%%", ts ? "[%r27]" : "%rd11");
  s = edit(s, "%%A_OPERAND%%", ts ? "[%r27]" : "%rd11");
  return s;
}

constexpr uint32_t kM = 128, kN = 8, kK = 16, kLbo = 128, kSbo = 256;

// The ISA's bit tables, packed here by hand.
uint64_t smem_desc_without_start(uint32_t lbo, uint32_t sbo) {
  return (uint64_t(lbo >> 4) << 16) | (uint64_t(sbo >> 4) << 32) | (uint64_t(1) << 46);  // bits 46-48 = 0b001
}
uint32_t idesc_bf16_f32(uint32_t m, uint32_t n) {
  return (1u << 4) | (1u << 7) | (1u << 10) | ((n >> 3) << 17) | ((m >> 4) << 24);  // D f32, A/B bf16, K-major
}
// K-major, no swizzle: element (row, k) of 2-byte elements.
uint32_t kmajor_offset(uint32_t row, uint32_t k) { return (row % 8) * 16 + (row / 8) * kSbo + (k % 8) * 2 + (k / 8) * kLbo; }

struct MmaRun {
  std::vector<float> out, ref;
  ptxsim::Report report;
};

MmaRun run_mma(const std::string& body, bool ts, bool acc2, uint64_t bdesc_override = 0, uint32_t idesc = 0) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> q(-16, 16);
  auto bf16 = [](float f) { uint32_t u; memcpy(&u, &f, 4); return uint16_t(u >> 16); };
  std::vector<float> a(kM * kK), b(kN * kK);
  for (auto& x : a) x = q(rng) / 8.0f;
  for (auto& x : b) x = q(rng) / 8.0f;
  std::vector<uint8_t> aimg(4096, 0), bimg(256, 0);
  std::vector<uint32_t> aregs(kM * 8, 0);
  for (uint32_t i = 0; i < kM; ++i)
    for (uint32_t k = 0; k < kK; ++k) {
      const uint16_t h = bf16(a[i * kK + k]);
      memcpy(&aimg[kmajor_offset(i, k)], &h, 2);
      aregs[i * 8 + k / 2] |= uint32_t(h) << (16 * (k % 2));  // A in TMEM: row i in lane i, 2 elements a column
    }
  for (uint32_t j = 0; j < kN; ++j)
    for (uint32_t k = 0; k < kK; ++k) {
      const uint16_t h = bf16(b[j * kK + k]);
      memcpy(&bimg[kmajor_offset(j, k)], &h, 2);
    }
  MmaRun r;
  r.out.assign(kM * kN, 0);
  r.ref.assign(kM * kN, 0);
  for (uint32_t i = 0; i < kM; ++i)
    for (uint32_t j = 0; j < kN; ++j) {
      double s = 0;
      for (uint32_t k = 0; k < kK; ++k) s += double(a[i * kK + k]) * b[j * kK + k];
      r.ref[i * kN + j] = float(acc2 ? 2 * s : s);
    }
  std::string err;
  auto m = load100(body, &err);
  REQUIRE_MESSAGE(m, err);
  ptxsim::Memory mem;
  mem.add(r.out.data(), r.out.size() * 4, "out");
  mem.add(aimg.data(), aimg.size(), "a");
  mem.add(aregs.data(), aregs.size() * 4, "aregs");
  mem.add(bimg.data(), bimg.size(), "b");
  const auto ps = ptxsim::entry_params(*m, "k");
  REQUIRE(ps.size() == 7);
  Params p;
  p.put<uint64_t>(ps[0].offset, (uint64_t)r.out.data());
  p.put<uint64_t>(ps[1].offset, ts ? (uint64_t)aregs.data() : (uint64_t)aimg.data());
  p.put<uint64_t>(ps[2].offset, (uint64_t)bimg.data());
  p.put<uint64_t>(ps[3].offset, smem_desc_without_start(kLbo, kSbo));
  p.put<uint64_t>(ps[4].offset, bdesc_override ? bdesc_override : smem_desc_without_start(kLbo, kSbo));
  p.put<uint32_t>(ps[5].offset, idesc ? idesc : idesc_bf16_f32(kM, kN));
  p.put<uint32_t>(ps[6].offset, acc2 ? 1u : 0u);
  ptxsim::TensorMaps maps;
  auto cfg = config(m, "k", 128, p.bytes);
  cfg.policy = ptxsim::Policy::kRandom;
  cfg.seed = rng();
  r.report = ptxsim::launch(cfg, mem, maps);
  return r;
}

int mismatches(const MmaRun& r) {
  int bad = 0;
  for (size_t i = 0; i < r.ref.size(); ++i) bad += !(r.out[i] == r.ref[i]);  // exact: small multiples of 1/64
  return bad;
}

std::string umma_text() {
#ifdef FLASHPTX_BUILD_DIR
  return read_file(std::string(FLASHPTX_BUILD_DIR) + "/ptx/tests/kernels_sm100/umma.ptx");
#else
  return read_file("build/ptx/tests/kernels_sm100/umma.ptx");
#endif
}

// Runs sm100_umma_f16_ss_kernel or another 1-CTA bf16 entry of tests/kernels_sm100/umma.cu from its PTX text with A = 1.0 and
// B = -0.5 everywhere (every D element is -32; the numerics are the gpu_sm100 primitives cases'); the
// report, with a finding added when D is wrong.
ptxsim::Report run_umma(const std::string& text, const std::string& e = "sm100_umma_f16_ss_kernel") {
  std::string err;
  auto m = ptxsim::load_module_lenient(text, "umma.ptx", &err);
  REQUIRE_MESSAGE(m, err);
  const auto missing = ptxsim::entry_unimplemented(*m, e);
  REQUIRE_MESSAGE(missing.empty(), missing[0]);
  std::vector<uint16_t> a(128 * 64, 0x3F80), b(64 * 64, 0xBF00);  // 1.0 and -0.5
  std::vector<float> d(128 * 64, 0);
  ptxsim::Memory mem;
  mem.add(a.data(), a.size() * 2, "a");
  mem.add(b.data(), b.size() * 2, "b");
  mem.add(d.data(), d.size() * 4, "d");
  const auto ps = ptxsim::entry_params(*m, e);
  Params p;
  const void* ptrs[3] = {a.data(), b.data(), d.data()};
  for (int i = 0; i < 3; ++i) p.put<uint64_t>(ps[i].offset, (uint64_t)ptrs[i]);
  ptxsim::TensorMaps maps;
  auto rep = ptxsim::launch(config(m, e, 128, p.bytes), mem, maps);
  if (rep.ok())
    for (float x : d) if (x != -32.0f) { rep.findings.push_back({}); rep.findings.back().message = "wrong D"; break; }
  return rep;
}

// Replaces the occurrence-th line containing `pattern` after the entry `entry` with `replacement`.
std::string mutate_line(const std::string& text, const std::string& entry, const std::string& pattern, int occurrence,
                        const std::string& replacement) {
  std::istringstream in(text);
  std::string line, out;
  bool in_entry = false, done = false;
  int seen = 0;
  while (std::getline(in, line)) {
    if (line.find(".entry") != std::string::npos) in_entry = line.find(entry + "(") != std::string::npos;
    if (in_entry && !done && line.find(pattern) != std::string::npos && seen++ == occurrence) {
      out += replacement + "\n";
      done = true;
      continue;
    }
    out += line + "\n";
  }
  return done ? out : "";
}

// ---- cluster launch control (tests/kernels_sm100/clc.cu) ------------------------------------------
// "clusterlaunchcontrol.try_cancel": a successful request cancels a cluster that has not started and
// names its first CTA; no two successful responses name the same one; after the queue is empty a
// request fails. So every block index is processed exactly once however many CTAs start.
struct ClcRun { std::vector<uint32_t> visits; uint32_t started = 0; ptxsim::Report report; };
ClcRun run_clc(const std::string& text, uint32_t grid, ptxsim::Policy policy) {
  std::string err;
  auto m = ptxsim::load_module(text, "clc.ptx", &err);
  REQUIRE_MESSAGE(m, err);
  ClcRun r;
  r.visits.assign(grid, 0);
  ptxsim::Memory mem;
  mem.add(r.visits.data(), r.visits.size() * 4, "visits");
  mem.add(&r.started, 4, "started");
  const auto ps = ptxsim::entry_params(*m, "sm100_clc_kernel");
  Params p;
  p.put<uint64_t>(ps[0].offset, (uint64_t)r.visits.data());
  p.put<uint64_t>(ps[1].offset, (uint64_t)&r.started);
  auto cfg = config(m, "sm100_clc_kernel", 128, p.bytes, grid);
  cfg.policy = policy;
  cfg.seed = std::random_device{}();
  ptxsim::TensorMaps maps;
  r.report = ptxsim::launch(cfg, mem, maps);
  return r;
}
std::string clc_text() {
#ifdef FLASHPTX_BUILD_DIR
  return read_file(std::string(FLASHPTX_BUILD_DIR) + "/ptx/tests/kernels_sm100/clc.ptx");
#else
  return read_file("build/ptx/tests/kernels_sm100/clc.ptx");
#endif
}

}  // namespace

TEST_SUITE("sim core tcgen05") {

TEST_CASE("sm_100a PTX loads; an unimplemented tcgen05 form is a load error naming it (.pack::16b)") {
  std::string err;
  CHECK(load100(kTmemMap, &err));
  // cta_group::2 is executed (tests/sim/test_sim_core_pair.cpp); .pack::16b of tcgen05.ld is not
  CHECK(load100(edit(kTmemMap, "tcgen05.alloc.cta_group::1", "tcgen05.alloc.cta_group::2"), &err));
  std::string packed = edit(kTmemMap, "tcgen05.ld.sync.aligned.32x32b.x1.b32", "tcgen05.ld.sync.aligned.32x32b.x1.pack::16b.b32");
  CHECK_FALSE(load100(packed, &err));
  CHECK(err.find("tcgen05.ld.sync.aligned.32x32b.x1.pack::16b.b32") != std::string::npos);
  CHECK(err.find("tc.ptx:") != std::string::npos);
  // leniently loaded, the entry that reaches the form is refused by entry_unimplemented
  auto lenient = ptxsim::load_module_lenient(std::string(kHeader100) + packed, "tc.ptx", &err);
  REQUIRE(lenient);
  const auto missing = ptxsim::entry_unimplemented(*lenient, "k");
  REQUIRE(missing.size() == 1);
  CHECK(missing[0].find("pack::16b") != std::string::npos);
}

TEST_CASE("tcgen05.alloc / st / ld .32x32b: thread t, register j <-> lane base + t, column base + j") {
  OutRun r = run_map(kTmemMap);
  REQUIRE_MESSAGE(r.report.ok(), r.report.text());
  for (uint32_t t = 0; t < 128; ++t) {
    CHECK(r.out[t] == t * 1000 + 2);    // register 1 of the .x2 store at column 5 is column 6
    CHECK(r.out[128 + t] == r.out[128]);  // one address for the CTA
  }
  const uint32_t a = r.out[128];
  CHECK((a >> 16) == 0u);                // lane 0
  CHECK((a & 0xFFFFu) + 64 <= 512u);     // 64 columns inside the 512
}

TEST_CASE("tcgen05.ld registers used before tcgen05.wait::ld: hazard") {
  OutRun r = run_map(edit(kTmemMap, "  tcgen05.wait::ld.sync.aligned;\n", ""));
  REQUIRE(r.report.has(ptxsim::Finding::kHazard));
  CHECK(has_message(r.report, ptxsim::Finding::kHazard, "before the tcgen05.wait::ld"));
}

TEST_CASE("tcgen05.ld of cells a tcgen05.st wrote, before tcgen05.wait::st: hazard") {
  OutRun r = run_map(edit(kTmemMap, "  tcgen05.wait::st.sync.aligned;\n", ""));
  CHECK(has_message(r.report, ptxsim::Finding::kHazard, "no tcgen05.wait::st"));
}

TEST_CASE("the lane-quarter rule: warp w reaches lanes [32*(w%4), +32) only") {
  OutRun r = run_map(edit(kTmemMap, "shl.b32 %r6, %r2, 21;", "mov.u32 %r6, 0;"));
  REQUIRE(r.report.has(ptxsim::Finding::kIllegal));
  REQUIRE(!r.report.findings.empty());
  const ptxsim::Finding& f = r.report.findings[0];
  const size_t w = f.where.find("warp ");
  REQUIRE(w != std::string::npos);
  const int warp = std::stoi(f.where.substr(w + 5));
  CHECK(warp != 0);  // warp 0 addresses its own quarter, lane 0
  CHECK(f.message.find("may access lanes [" + std::to_string(32 * (warp % 4)) + ", " + std::to_string(32 * (warp % 4) + 32) +
                       ") only") != std::string::npos);
}

TEST_CASE("tcgen05.alloc: a column count that is not a power of two in [32, 512] is illegal") {
  for (const char* n : {"48", "16", "1024"}) {
    OutRun r = run_map(edit(kTmemMap, "shared::cta.b32 [%r4], 64;", std::string("shared::cta.b32 [%r4], ") + n + ";"));
    CHECK_MESSAGE(has_message(r.report, ptxsim::Finding::kIllegal, "power of two in [32, 512]"), n);
  }
}

TEST_CASE("a CTA that exits holding TMEM columns, a double free, an alloc after relinquish: reports") {
  OutRun held = run_map(edit(kTmemMap, "  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 64;\n", ""));
  CHECK(has_message(held.report, ptxsim::Finding::kProtocol, "exited holding TMEM columns"));
  OutRun twice = run_map(edit(kTmemMap, "  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 64;\n",
                              "  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 64;\n"
                              "  tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 64;\n"));
  CHECK(has_message(twice.report, ptxsim::Finding::kProtocol, "double free"));
  OutRun size = run_map(edit(kTmemMap, "tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 64;",
                             "tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 32;"));
  CHECK(has_message(size.report, ptxsim::Finding::kProtocol, "not exactly one live allocation"));
  OutRun after = run_map(edit(kTmemMap, "  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r4], 64;\n",
                              "  tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n"
                              "  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r4], 64;\n"));
  CHECK(has_message(after.report, ptxsim::Finding::kProtocol, "after this CTA's tcgen05.relinquish_alloc_permit"));
}

TEST_CASE("tcgen05.alloc beyond the 512 columns can never be granted: a deadlock report") {
  OutRun r = run_map(edit(kTmemMap, "  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r4], 64;\n",
                          "  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r4], 512;\n"
                          "  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r4], 32;\n"));
  CHECK(has_message(r.report, ptxsim::Finding::kDeadlock, "can never be granted"));
}

TEST_CASE("tcgen05.ld / st outside a live allocation: out of bounds") {
  OutRun r = run_map(edit(kTmemMap, "add.u32 %r8, %r7, 5;", "add.u32 %r8, %r7, 63;"));
  CHECK(has_message(r.report, ptxsim::Finding::kOutOfBounds, "live allocation"));
}


TEST_CASE("tcgen05.mma kind::f16 SS, M=128 N=8: D = A B^T in lanes 0..127, columns 0..7, after the commit's phase") {
  MmaRun r = run_mma(mma_kernel(false), false, false);
  REQUIRE_MESSAGE(r.report.ok(), r.report.text());
  CHECK(mismatches(r) == 0);
}

TEST_CASE("tcgen05.mma enable-input-d: a second MMA with it true accumulates (2 A B^T)") {
  MmaRun r = run_mma(mma_kernel(false), false, true);
  REQUIRE_MESSAGE(r.report.ok(), r.report.text());
  CHECK(mismatches(r) == 0);
}

TEST_CASE("tcgen05.mma kind::f16 TS: A from TMEM (row i in lane i, two bf16 per column)") {
  MmaRun r = run_mma(mma_kernel(true), true, true);
  REQUIRE_MESSAGE(r.report.ok(), r.report.text());
  CHECK(mismatches(r) == 0);
}

TEST_CASE("mutation: D read without waiting for the commit's phase: hazard") {
  MmaRun r = run_mma(edit(mma_kernel(false), "  @!%p6 bra WAIT;\n", ""), false, false);
  CHECK(has_message(r.report, ptxsim::Finding::kHazard, "before that MMA completed"));
}

TEST_CASE("mutation: tcgen05.commit to the wrong mbarrier: the waiters deadlock") {
  MmaRun r = run_mma(edit(mma_kernel(false), "arrive::one.shared::cluster.b64 [%r5];", "arrive::one.shared::cluster.b64 [%r6];"), false, false);
  REQUIRE(r.report.has(ptxsim::Finding::kDeadlock));
  CHECK(has_message(r.report, ptxsim::Finding::kDeadlock, "mbarrier smem+0x1100"));
}

TEST_CASE("mutation: a generic store to an MMA's shared operand before it completed: hazard") {
  MmaRun r = run_mma(edit(mma_kernel(false), "NO_MMA:\n", "  st.shared.u32 [%r3+16], %r1;\nNO_MMA:\n"), false, false);
  CHECK(has_message(r.report, ptxsim::Finding::kHazard, "is reading"));
}

TEST_CASE("mutation: operands written by st.shared without fence.proxy.async: protocol") {
  MmaRun r = run_mma(edit(mma_kernel(false), "  fence.proxy.async.shared::cta;\n", ""), false, false);
  CHECK(has_message(r.report, ptxsim::Finding::kProtocol, "no fence.proxy.async"));
}

TEST_CASE("tcgen05.mma descriptors decoded from their bits: a wrong version field, an N outside the shape table") {
  MmaRun v = run_mma(mma_kernel(false), false, false, smem_desc_without_start(kLbo, kSbo) & ~(uint64_t(1) << 46));
  CHECK(has_message(v.report, ptxsim::Finding::kIllegal, "descriptor bits 46-48"));
  MmaRun n = run_mma(mma_kernel(false), false, false, 0, idesc_bf16_f32(kM, kN) | (1u << 17 << 5));  // N = 8 + 256
  CHECK(has_message(n.report, ptxsim::Finding::kIllegal, "not in the ISA's shape table"));
}

TEST_CASE("the umma test kernel's PTX (tests/kernels_sm100/umma.cu) runs; its mutations are caught") {
  const std::string text = umma_text();
  if (text.empty()) { MESSAGE("skipped: umma.ptx is absent (make sim-ptx)"); return; }
  const std::string e = "sm100_umma_f16_ss_kernel";
  ptxsim::Report ok = run_umma(text);
  CHECK_MESSAGE(ok.ok(), ok.text());
  // tcgen05.wait::ld removed from d_from_tmem: the loaded D is stored before it is valid
  std::string no_wait = mutate_line(text, e, "tcgen05.wait::ld.sync.aligned", 0, "");
  REQUIRE(!no_wait.empty());
  CHECK(run_umma(no_wait).has(ptxsim::Finding::kHazard));
  // the commit to another shared address (not the mma_done mbarrier)
  std::string wrong_bar = mutate_line(text, e, "tcgen05.commit.cta_group::1", 0,
                                      "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r43];");
  REQUIRE(!wrong_bar.empty());
  ptxsim::Report wb = run_umma(wrong_bar);
  CHECK((wb.has(ptxsim::Finding::kProtocol) || wb.has(ptxsim::Finding::kDeadlock)));
  // the dealloc removed: the CTA exits holding its 128 columns
  std::string no_dealloc = mutate_line(text, e, "tcgen05.dealloc.cta_group::1", 0, "");
  REQUIRE(!no_dealloc.empty());
  CHECK(has_message(run_umma(no_dealloc), ptxsim::Finding::kProtocol, "exited holding TMEM columns"));
}

TEST_CASE("mutation: tcgen05.fence::after_thread_sync missing after the wait on the commit's phase: protocol") {
  MmaRun r = run_mma(edit(mma_kernel(false), "  @!%p6 bra WAIT;\n  tcgen05.fence::after_thread_sync;\n", "  @!%p6 bra WAIT;\n"), false, false);
  CHECK(has_message(r.report, ptxsim::Finding::kProtocol, "no tcgen05.fence::after_thread_sync"));
}

TEST_CASE("mutation: the fences at the A hand-off of the TS form (tcgen05.st by four warps -> bar.sync -> MMA)") {
  const std::string ts = mma_kernel(true);
  const std::string hand_off = "  tcgen05.wait::st.sync.aligned;\n  tcgen05.fence::before_thread_sync;\n  bar.sync 0;\n  tcgen05.fence::after_thread_sync;\n";
  MmaRun no_after = run_mma(edit(ts, hand_off, "  tcgen05.wait::st.sync.aligned;\n  tcgen05.fence::before_thread_sync;\n  bar.sync 0;\n"), true, false);
  CHECK(has_message(no_after.report, ptxsim::Finding::kProtocol, "no tcgen05.fence::after_thread_sync"));
  MmaRun no_before = run_mma(edit(ts, hand_off, "  tcgen05.wait::st.sync.aligned;\n  bar.sync 0;\n  tcgen05.fence::after_thread_sync;\n"), true, false);
  CHECK(has_message(no_before.report, ptxsim::Finding::kProtocol, "no tcgen05.fence::before_thread_sync"));
}

TEST_CASE("the umma TS kernel's PTX: each tcgen05.fence of its two hand-offs removed is caught") {
  const std::string text = umma_text();
  if (text.empty()) { MESSAGE("skipped: umma.ptx is absent (make sim-ptx)"); return; }
  const std::string e = "sm100_umma_f16_ts_kernel";
  ptxsim::Report ok = run_umma(text, e);
  CHECK_MESSAGE(ok.ok(), ok.text());
  // the second fence pair: A stored by the four warps -> the MMA-issuing thread
  const std::string no_after_a = mutate_line(text, e, "tcgen05.fence::after_thread_sync", 1, "");
  CHECK(has_message(run_umma(no_after_a, e), ptxsim::Finding::kProtocol, "tcgen05.mma reads its A operand"));
  const std::string no_before_a = mutate_line(text, e, "tcgen05.fence::before_thread_sync", 1, "");
  CHECK(has_message(run_umma(no_before_a, e), ptxsim::Finding::kProtocol, "no tcgen05.fence::before_thread_sync"));
  // after the wait on mma_done, before tcgen05.ld of D
  const std::string no_after_d = mutate_line(text, e, "tcgen05.fence::after_thread_sync", 2, "");
  CHECK(has_message(run_umma(no_after_d, e), ptxsim::Finding::kProtocol, "tcgen05.ld of"));
}


TEST_CASE("clusterlaunchcontrol.try_cancel: every block index processed once; its mutations are caught") {
  const std::string text = clc_text();
  if (text.empty()) { MESSAGE("skipped: clc.ptx is absent (make sim-ptx)"); return; }
  for (ptxsim::Policy pol : {ptxsim::Policy::kRoundRobin, ptxsim::Policy::kRandom}) {
    ClcRun r = run_clc(text, 96, pol);
    REQUIRE_MESSAGE(r.report.ok(), r.report.text());
    int wrong = 0;
    for (uint32_t v : r.visits) wrong += v != 1;
    CHECK(wrong == 0);
    CHECK(r.started >= 1u);
    CHECK(r.started < 96u);  // 4 simulated SMs: the rest were cancelled and stolen
  }
  const std::string e = "sm100_clc_kernel";
  // the ctaid read without testing is_canceled first
  ClcRun no_test = run_clc(mutate_line(text, e, "@%p4 bra", 0, ""), 96, ptxsim::Policy::kRoundRobin);
  CHECK(has_message(no_test.report, ptxsim::Finding::kProtocol, "get_first_ctaid of a failed response"));
  // the loop never exits: a request after a failed one
  ClcRun again = run_clc(mutate_line(text, e, "@%p5 bra", 0, "\tbra.uni \t$L__BB0_3;"), 96, ptxsim::Policy::kRoundRobin);
  CHECK(has_message(again.report, ptxsim::Finding::kProtocol, "after this CTA observed a failed request"));
  // the response read without waiting for its mbarrier phase: a read of the bytes in flight, or of
  // bytes no request has written yet (then query_cancel sees no response)
  ClcRun early = run_clc(mutate_line(text, e, "@%p3 bra", 0, ""), 96, ptxsim::Policy::kRoundRobin);
  CHECK((early.report.has(ptxsim::Finding::kHazard) ||
         has_message(early.report, ptxsim::Finding::kIllegal, "not a try_cancel response")));
}

}  // TEST_SUITE
