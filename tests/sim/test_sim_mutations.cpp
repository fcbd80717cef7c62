// Protocol mutations of the shipped kernels' PTX, as tests (issue 31, "Mutations, as tests").
//
// Each case edits the real module the build produced (build/ptx/src/sm90/fa3_fwd.ptx), inside the
// entry the library's own plan launches for the case's shape, at instruction lines found by pattern
// (never by line number; every edit asserts how many lines its pattern matched in that entry), and
// launches the forward through flashptx_fwd with the edited module in place
// (flashptx_sim_override_ptx, tools/sim/cudart/flashptx_sim.h). The unmutated module must pass
// (no finding; O and LSE against fp64 under the GPU suites' rule); the mutated one must fail the
// launch with the expected Finding kind, its text naming the barrier or the instruction. Cases whose
// detection could depend on the schedule run under two scheduler policies.
//
// Runs on the simulator only (build/run_tests_sim, the gpu_sm90 runner); on a GPU it skips.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "src/kernels.h"
#include "tools/models/sim_mutation_labs.h"
#include "src/plan.h"
#include "tests/gpu/test_util.h"
#include "tools/sim/cudart/flashptx_sim.h"
#include "tools/support/reference.h"

// Weak: ./run_tests (the real cudart) has no simulator; these cases skip there.
extern "C" int flashptx_sim_override_ptx(const char*, const char*) __attribute__((weak));
extern "C" int flashptx_sim_configure(const char*, uint64_t, int) __attribute__((weak));
extern "C" const char* flashptx_sim_last_report(void) __attribute__((weak));

namespace {

namespace ref = flashptx::ref;

// The entry the plan launches for the mutation shape (checked against last_launch() on every run).
constexpr const char* kEntry = "fa3_fwd_sm90_bf16_d64_m128";
// 1 batch, 1 head, 128 queries (one tile), 384 keys: three key blocks, each empty barrier of the
// ring completes a phase the producer waits on (the early-release case runs 640 keys: five blocks,
// so that stages are refilled after their release).
constexpr int64_t kSq = 128, kSk = 384, kH = 1, kD = 64;

std::string read_module() {
  const std::string path = std::string(FLASHPTX_BUILD_DIR) + "/ptx/src/sm90/fa3_fwd.ptx";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), path << " is missing: make sim-ptx builds it");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
const std::string& module_text() {
  static const std::string m = read_module();
  return m;
}

// The PTX module with edits confined to one entry's body: lines are found by regex there.
struct Mutant {
  std::string head, body, tail;  // the module before the entry, the entry, after it
  explicit Mutant(const std::string& module, const char* entry = kEntry) {
    const std::string open = std::string(".entry ") + entry + "(";
    const size_t b = module.find(open);
    REQUIRE_MESSAGE(b != std::string::npos, "no entry " << entry << " in fa3_fwd.ptx");
    size_t e = module.find(".entry ", b + open.size());
    e = e == std::string::npos ? module.size() : module.rfind('\n', e);
    head = module.substr(0, b);
    body = module.substr(b, e - b);
    tail = module.substr(e);
  }
  std::string text() const { return head + body + tail; }

  // The lines of the entry matching re (whole line); their offsets in body.
  std::vector<std::pair<size_t, std::string>> lines(const std::regex& re) const {
    std::vector<std::pair<size_t, std::string>> out;
    size_t p = 0;
    while (p < body.size()) {
      size_t n = body.find('\n', p);
      if (n == std::string::npos) n = body.size();
      std::string l = body.substr(p, n - p);
      if (std::regex_search(l, re)) out.emplace_back(p, l);
      p = n + 1;
    }
    return out;
  }
  // Replaces the line at index `which` of the lines matching re, having checked there are
  // `expected` of them; returns the original line.
  std::string edit(const char* pattern, size_t expected, size_t which,
                   const std::function<std::string(const std::string&, const std::smatch&)>& f) {
    const std::regex re(pattern);
    auto ls = lines(re);
    REQUIRE_MESSAGE(ls.size() == expected, "pattern /" << pattern << "/ matched " << ls.size() << " lines of " << kEntry
                                                       << ", expected " << expected);
    REQUIRE(which < ls.size());
    auto [off, line] = ls[which];
    std::smatch m;
    std::regex_search(line, m, re);
    const std::string repl = f(line, m);
    body.replace(off, line.size(), repl);
    return line;
  }
};

struct Outcome {
  flashptx_status status = FLASHPTX_OK;
  std::string report, kernel;
  double o_err = 0, o_tol = 0, lse_err = 0;
  std::vector<uint16_t> o;
  bool passes() const { return status == FLASHPTX_OK && report.empty() && o_err <= o_tol && lse_err <= 1e-4; }
};

// One forward of the mutation shape with `ptx` (the module's text; "" the file as built) under
// `policy`, checked against fp64 when it succeeds.
Outcome run(const std::string& ptx, const char* policy, uint64_t seed = 1, int64_t sk = kSk) {
  REQUIRE(flashptx_sim_configure(policy, seed, 4) == 0);
  if (!ptx.empty()) REQUIRE_MESSAGE(flashptx_sim_override_ptx(kEntry, ptx.c_str()) == 0, flashptx_sim_last_report());
  struct Restore {  // the module's file again, whatever happens below
    bool on;
    ~Restore() { if (on) flashptx_sim_override_ptx(kEntry, nullptr); }
  } restore{!ptx.empty()};
  const size_t nq = kSq * kH * kD, nk = sk * kH * kD;
  std::vector<uint16_t> q(nq), k(nk), v(nk);
  std::mt19937 rng(seed * 7919 + 17);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& x : q) x = flashptx::float_to_bf16(u(rng));
  for (auto& x : k) x = flashptx::float_to_bf16(u(rng));
  for (auto& x : v) x = flashptx::float_to_bf16(u(rng));
  void *dq, *dk, *dv, *dout, *dlse;
  CUDA_REQUIRE(cudaMalloc(&dq, nq * 2));
  CUDA_REQUIRE(cudaMalloc(&dk, nk * 2));
  CUDA_REQUIRE(cudaMalloc(&dv, nk * 2));
  CUDA_REQUIRE(cudaMalloc(&dout, nq * 2));
  CUDA_REQUIRE(cudaMalloc(&dlse, kH * kSq * 4));
  CUDA_REQUIRE(cudaMemcpy(dq, q.data(), nq * 2, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemcpy(dk, k.data(), nk * 2, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemcpy(dv, v.data(), nk * 2, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemset(dout, 0xFF, nq * 2));
  CUDA_REQUIRE(cudaMemset(dlse, 0xFF, kH * kSq * 4));
  flashptx_fwd_params p;
  flashptx_fwd_params_contiguous(&p, dq, dk, dv, dout, static_cast<float*>(dlse), 1, kSq, sk, kH, kH, kD, FLASHPTX_BF16, 0);
  Outcome r;
  r.status = flashptx_fwd(&p, nullptr);
  const flashptx::Launch l = flashptx::last_launch();
  r.kernel = l.kernel ? l.kernel->name : "";
  if (r.status != FLASHPTX_OK) r.report = flashptx_sim_last_report();
  r.o.resize(nq);
  std::vector<float> lse(kH * kSq);
  CUDA_REQUIRE(cudaMemcpy(r.o.data(), dout, nq * 2, cudaMemcpyDeviceToHost));
  CUDA_REQUIRE(cudaMemcpy(lse.data(), dlse, lse.size() * 4, cudaMemcpyDeviceToHost));
  for (void* x : {dq, dk, dv, dout, dlse}) cudaFree(x);
  if (r.status == FLASHPTX_OK) {
    ref::Problem pr;
    pr.seqlen_q = kSq; pr.seqlen_k = sk; pr.heads_q = kH; pr.heads_kv = kH; pr.head_dim = kD;
    const auto qv = ref::contiguous_q(q.data(), ref::Elem::kBF16, pr);
    const auto kv = ref::contiguous_kv(k.data(), ref::Elem::kBF16, pr);
    const auto vv = ref::contiguous_kv(v.data(), ref::Elem::kBF16, pr);
    const ref::Forward exact = ref::forward(pr, qv, kv, vv);
    const ref::Forward same = ref::forward(pr, qv, kv, vv, flashptx::Round::kBF16);
    double same_err = 0;
    for (size_t i = 0; i < same.o.size(); ++i) same_err = std::max(same_err, std::fabs(same.o[i] - exact.o[i]));
    r.o_tol = 2 * same_err + 1e-5;
    r.o_err = ref::max_abs_diff_o(pr, ref::contiguous_q(r.o.data(), ref::Elem::kBF16, pr), exact.o);
    if (std::isnan(r.o_err)) r.o_err = INFINITY;
    r.lse_err = ref::max_abs_diff_lse(pr, lse.data(), exact.lse);
    if (std::isnan(r.lse_err)) r.lse_err = INFINITY;
  }
  return r;
}


// The mutated run: the launch fails with the simulator's report, which must hold every word of
// `expect` (the finding's kind as the report spells it, the barrier or instruction).
void check_caught(const Outcome& r, const std::vector<std::string>& expect) {
  INFO("report:\n" << r.report.substr(0, 4000));
  if (std::getenv("MUT_SHOW")) std::printf("MUTREPORT %s\n", r.report.substr(0, 1500).c_str());
  CHECK_MESSAGE(r.status == FLASHPTX_ERR_CUDA, "flashptx_fwd returned " << flashptx_status_name(r.status));
  for (const std::string& w : expect) CHECK_MESSAGE(r.report.find(w) != std::string::npos, "no '" << w << "' in the report");
}

// The run of a mutation must hold the words its ledger row (tools/models/sim_mutation_labs.h) names:
// the Finding kind, then the row's words.
void check_lab(const Outcome& r, const char* name) {
  const flashptx::models::SimMutationLab* lab = flashptx::models::sim_mutation_lab(name);
  REQUIRE_MESSAGE(lab != nullptr, "no ledger row for '" << name << "'");
  REQUIRE(lab->caught);
  std::vector<std::string> words{lab->finding};
  for (const char* w : lab->words)
    if (w) words.push_back(w);
  check_caught(r, words);
}

// Wraps one instruction line in a scope whose register %mut holds `prep` of operand `reg`.
std::string with_mut(const std::string& line, const std::string& reg, const std::string& prep) {
  std::string l = line;
  const size_t at = l.rfind(reg);
  l.replace(at, reg.size(), "%mut");
  return "{\n.reg .b32 %mut;\n" + prep + "\n" + l + "\n}";
}

bool sim() {
  if (flashptx_sim_override_ptx != nullptr && flashptx_test::on_simulator()) return true;
  MESSAGE("skipped: the mutations run on the PTX simulator only (build/run_tests_sim)");
  return false;
}

const char* const kPolicies[] = {"round-robin", "starve-producer"};

}  // namespace

TEST_SUITE("gpu_sm90 sim mutations") {

// A tool, not a test: applies one edit to every line of the entry matching $MUT_PAT in turn
// ($MUT_MODE: del, dbl, xor, add32, else " 0;" -> " 1;") and prints each launch's outcome, to find
// which instances the mutation shape executes (a branch the shape never takes shows no finding).
// It runs before the unmutated case when both variables are set (not a case of its own, so that the
// suite skips nothing):
// MUT_PAT='...' MUT_MODE=del build/run_tests_sim -ts="gpu_sm90 sim mutations" -tc="the unmutated*"
void explore() {
  const char* pat = std::getenv("MUT_PAT");
  if (pat == nullptr || std::getenv("MUT_MODE") == nullptr) return;
  const std::regex re(pat);
  const size_t n = Mutant(module_text()).lines(re).size();
  for (size_t i = 0; i < n; ++i) {
    Mutant m(module_text());
    std::string mode = std::getenv("MUT_MODE");
    std::string orig = m.edit(pat, n, i, [&](const std::string& l, const std::smatch& g) {
      if (mode == "del") return std::string();
      if (mode == "dbl") return with_mut(l, g[2].str(), "add.s32 %mut, " + g[2].str() + ", " + g[2].str() + ";");
      if (mode == "xor") return with_mut(l, g[2].str(), "xor.b32 %mut, " + g[2].str() + ", 1;");
      if (mode == "add32") return with_mut(l, g[2].str(), "add.s32 %mut, " + g[2].str() + ", 32;");
      return std::regex_replace(l, std::regex(" 0;"), " 1;");
    });
    Outcome r = run(m.text(), std::getenv("MUT_POL") ? std::getenv("MUT_POL") : "round-robin");
    std::printf("EXPLORE %zu/%zu [%s]: status %d err %g: %s\n", i, n, orig.c_str(), r.status, r.o_err, r.report.substr(0, 300).c_str());
  }
}

TEST_CASE("the unmutated forward passes on the mutation shape, under two policies") {
  if (!sim()) return;
  explore();
  for (const char* pol : kPolicies) {
    const Outcome r = run("", pol);
    INFO(pol << ": " << r.report);
    CHECK(r.kernel == kEntry);
    CHECK(r.status == FLASHPTX_OK);
    CHECK_MESSAGE(r.o_err <= r.o_tol, "max|O - ref| = " << r.o_err << " > " << r.o_tol);
    CHECK(r.lse_err <= 1e-4);
    // The override hook itself: the module's own text through it passes too; and the early-release
    // case's longer shape passes unmutated.
    if (pol == kPolicies[0]) CHECK(run(Mutant(module_text()).text(), pol).passes());
    const Outcome r640 = run("", pol, 1, 640);
    CHECK_MESSAGE(r640.passes(), pol << ", 640 keys: " << r640.report);
  }
}

// 0x02 (wgmma async): the first QK^T group's wait_group 0 raised to 1: softmax reads S in flight.
TEST_CASE("mutation: a wgmma.wait_group depth raised (S read before its group retires)") {
  if (!sim()) return;
  for (const char* pol : kPolicies) {
    Mutant m(module_text());
    m.edit(R"(^\s*wgmma\.wait_group\.sync\.aligned 0;)", 5, 1, [](const std::string& l, const std::smatch&) {
      return std::regex_replace(l, std::regex(" 0;"), " 1;");
    });
    check_lab(run(m.text(), pol), "a wgmma.wait_group depth raised (S read before its group retires)");
  }
}

// 0x02 (wgmma async), PTX ISA "wgmma.fence": a fence is required before a warp's first
// wgmma.mma_async and between another instruction's write of an accumulator or A-fragment register
// and the wgmma.mma_async that uses it. The entry's seven fences, of which the mutation shape
// executes the second (before the first QK^T), the fifth (before the loop's QK^T) and the seventh
// (before the last PV: O's accumulators were rescaled, and P written, after the previous fence).
TEST_CASE("mutation: a wgmma.fence removed (before the first QK^T; before the last PV)") {
  if (!sim()) return;
  {
    Mutant m(module_text());
    m.edit(R"(^\s*wgmma\.fence\.sync\.aligned;)", 7, 1, [](const std::string&, const std::smatch&) { return std::string(); });
    check_caught(run(m.text(), "round-robin"), {"hazard", "no wgmma.fence before the warp's first wgmma.mma_async"});
  }
  {
    Mutant m(module_text());
    m.edit(R"(^\s*wgmma\.fence\.sync\.aligned;)", 7, 6, [](const std::string&, const std::smatch&) { return std::string(); });
    check_caught(run(m.text(), "starve-producer"),
                 {"hazard", "wgmma.mma_async accesses register", "(an accumulator), written at", "mul.f32",
                  "after the warp's last wgmma.fence"});
  }
}

// 0x03 (mbarrier parity): the entry's first try_wait (a consumer's wait on the Q barrier) with its
// parity flipped: it waits for a phase after the one that completes, which never comes (deadlock).
TEST_CASE("mutation: a try_wait parity flipped") {
  if (!sim()) return;
  for (const char* pol : kPolicies) {
    Mutant m(module_text());
    m.edit(R"(^mbarrier\.try_wait\.parity\.acquire\.cta\.shared::cta\.b64 p, \[(%r\d+)\], (%r\d+);)", 21, 0,
           [](const std::string& l, const std::smatch& g) { return with_mut(l, g[2].str(), "xor.b32 %mut, " + g[2].str() + ", 1;"); });
    check_lab(run(m.text(), pol), "a try_wait parity flipped");
  }
}

// 0x03 (transaction counts): the first expect_tx of the producer one box over (its bytes doubled:
// it arms one TMA): the phase can never complete; the consumers wait forever.
TEST_CASE("mutation: expect_tx bytes one box over (the phase never completes)") {
  if (!sim()) return;
  Mutant m(module_text());
  m.edit(R"(mbarrier\.arrive\.expect_tx\.release\.cta\.shared::cta\.b64 _, \[(%r\d+)\], (%r\d+);)", 4, 1,
         [](const std::string& l, const std::smatch& g) { return with_mut(l, g[2].str(), "add.s32 %mut, " + g[2].str() + ", " + g[2].str() + ";"); });
  check_lab(run(m.text(), "round-robin"), "expect_tx bytes one box over (the phase never completes)");
}

// 0x04 (proxy fences): the consumers' generic writes of O to shared memory, then the TMA store of
// O with the fence.proxy.async between them deleted.
TEST_CASE("mutation: the fence.proxy.async before the TMA store of O removed") {
  if (!sim()) return;
  Mutant m(module_text());
  m.edit(R"(^\s*fence\.proxy\.async\.shared::cta;)", 1, 0, [](const std::string&, const std::smatch&) { return std::string(); });
  for (const char* pol : kPolicies) check_lab(run(m.text(), pol), "the fence.proxy.async before the TMA store of O removed");
}

// 0x05 (warp specialization): the first named barrier's bar.sync counting one warp more than
// arrive: it never completes.
TEST_CASE("mutation: a named barrier's thread count wrong") {
  if (!sim()) return;
  Mutant m(module_text());
  const size_t n = m.lines(std::regex(R"(^\s*bar\.sync (%r\d+), (%r\d+);)")).size();
  REQUIRE(n >= 2);
  m.edit(R"(^\s*bar\.sync (%r\d+), (%r\d+);)", n, 1,
         [](const std::string& l, const std::smatch& g) { return with_mut(l, g[2].str(), "add.s32 %mut, " + g[2].str() + ", 32;"); });
  for (const char* pol : kPolicies) check_lab(run(m.text(), pol), "a named barrier's thread count wrong");
}

// 0x05 (register budget): the consumers' setmaxnreg.inc raised by 8 over what the pool leaves.
TEST_CASE("mutation: a setmaxnreg split over the launch's register pool") {
  if (!sim()) return;
  Mutant m(module_text());
  m.edit(R"(^\s*setmaxnreg\.inc\.sync\.aligned\.u32 (\d+);)", 1, 0, [](const std::string& l, const std::smatch& g) {
    return std::regex_replace(l, std::regex(g[1].str() + ";"), std::to_string(std::stoi(g[1].str()) + 8) + ";");
  });
  const Outcome r = run(m.text(), "round-robin");
  check_lab(r, "a setmaxnreg split over the launch's register pool");
  // Beside the deadlock, a report of its own naming the split (tools/sim/exec.cpp nreg_over_pool).
  check_caught(r, {"protocol", "setmaxnreg.inc to 248 can never be granted", "a setmaxnreg split over the pool"});
}

// 0x03 (producer): the producer's first tensor load into the ring dropped, its expect_tx kept.
TEST_CASE("mutation: a producer skipping a stage (its TMA dropped)") {
  if (!sim()) return;
  Mutant m(module_text());
  m.edit(R"(^\s*cp\.async\.bulk\.tensor\.4d\.shared::cluster\.global\.tile\.mbarrier::complete_tx::bytes)", 4, 1,
         [](const std::string&, const std::smatch&) { return std::string(); });
  check_lab(run(m.text(), "round-robin"), "a producer skipping a stage (its TMA dropped)");
}

// 0x03 (empty barriers): every consumer release of one ring barrier dropped: after the wrap the
// producer waits on it forever.
TEST_CASE("mutation: an empty-barrier arrival dropped") {
  if (!sim()) return;
  for (const char* pol : kPolicies) {
    Mutant m(module_text());
    const std::regex re(R"(^\s*mbarrier\.arrive\.release\.cta\.shared::cta\.b64 _, \[(%r\d+)\];)");
    const size_t n = m.lines(re).size();
    REQUIRE(n >= 4);
    m.edit(R"(^\s*mbarrier\.arrive\.release\.cta\.shared::cta\.b64 _, \[(%r\d+)\];)", n, 3,
           [](const std::string&, const std::smatch&) { return std::string(); });
    check_lab(run(m.text(), pol), "an empty-barrier arrival dropped");
  }
}

// 0x03 (early release): the consumers' release of a ring stage in the steady-state loop (its
// guarded empty-barrier arrive, the 10th of the entry, after the `wgmma.wait_group 1` that retires
// the QK^T wgmma reading the stage) moved before that wait: the producer may refill the stage while
// the wgmma still reads it. The release is made while the reading wgmma is in flight for the
// releasing warp; the producer's wait on that phase is then no ordering of the wgmma's reads before
// its refill (tools/sim/exec.cpp note_released_reads), whatever the schedule.
// (Before 2026-12-02 this case moved the 4th arrive, the release of Q, which this one-tile shape
// never refills: nothing to catch.)
TEST_CASE("mutation: a stage released before the wait that retires its reader") {
  if (!sim()) return;
  for (const char* pol : kPolicies) {
    Mutant m(module_text());
    const std::regex arrive(R"(^\s*mbarrier\.arrive\.release\.cta\.shared::cta\.b64 _, \[(%r\d+)\];)");
    auto arrives = m.lines(arrive);
    REQUIRE(arrives.size() == 15);
    auto [aoff, aline] = arrives[9];
    // The guard and the address of that arrive: "@%pG bra L;", then shl (stage * 8), the base, the
    // barrier's offset, the arrive.
    const size_t from = aoff > 600 ? aoff - 600 : 0;
    const std::string window = m.body.substr(from, aoff + aline.size() - from);
    std::smatch g;
    REQUIRE_MESSAGE(std::regex_search(window, g,
                                      std::regex(R"(@(%p\d+) bra\s+\S+;\s+shl\.b32\s+(%r\d+), (%r\d+), 3;\s+add\.s32\s+(%r\d+), \2, (%r\d+);\s+add\.s32\s+(%r\d+), \4, (\d+);\s+// begin inline asm\s+mbarrier\.arrive\.release\.cta\.shared::cta\.b64 _, \[\6\];$)")),
                    "the address computation above the stage release is not the expected one:\n" << window);
    m.body.replace(aoff, aline.size(), "");  // the release where it was: gone
    const std::string early = "\t@" + g[1].str() + " bra $L__mut_early;\n{\n.reg .b32 %mut;\nshl.b32 %mut, " + g[3].str() +
                              ", 3;\nadd.s32 %mut, %mut, " + g[5].str() + ";\nadd.s32 %mut, %mut, " + g[7].str() +
                              ";\nmbarrier.arrive.release.cta.shared::cta.b64 _, [%mut];\n}\n$L__mut_early:\n";
    m.edit(R"(^\s*wgmma\.wait_group\.sync\.aligned 1;)", 2, 1, [&](const std::string& l, const std::smatch&) { return early + l; });
    const Outcome r = run(m.text(), pol, 1, 640);
    if (std::getenv("MUT_SHOW")) std::printf("EARLY %s: %s\n", pol, r.report.substr(0, 1200).c_str());
    check_lab(r, "a stage released before the wait that retires its reader");
  }
}

// 0x02 (epilogue): the last wait_group 0 before the epilogue removed: O is read (rescaled and
// written out) while the last PV group is in flight.
TEST_CASE("mutation: the consumer reads O before its last PV retires (a wait_group removed)") {
  if (!sim()) return;
  for (const char* pol : kPolicies) {
    Mutant m(module_text());
    m.edit(R"(^\s*wgmma\.wait_group\.sync\.aligned 0;)", 5, 4, [](const std::string&, const std::smatch&) { return std::string(); });
    check_lab(run(m.text(), pol), "the consumer reads O before its last PV retires (a wait_group removed)");
  }
}

// 0x0E (compiled kernels): a wait_group 1 turned into a full wait (what a helper that always
// waits for 0 does): not an error; nothing is reported and the output is bit for bit the same.
TEST_CASE("mutation: a wait_group 1 turned into a full wait is not a finding and changes nothing") {
  if (!sim()) return;
  Mutant m(module_text());
  m.edit(R"(^\s*wgmma\.wait_group\.sync\.aligned 1;)", 2, 0, [](const std::string& l, const std::smatch&) {
    return std::regex_replace(l, std::regex(" 1;"), " 0;");
  });
  const flashptx::models::SimMutationLab* lab = flashptx::models::sim_mutation_lab(
      "a wait_group 1 turned into a full wait is not a finding and changes nothing");
  REQUIRE(lab != nullptr);
  CHECK(std::string(lab->finding) == "none");
  const Outcome base = run("", "round-robin", 5), full = run(m.text(), "round-robin", 5);
  CHECK(base.passes());
  CHECK_MESSAGE(full.passes(), full.report);
  CHECK(full.o == base.o);
}

}  // TEST_SUITE
