// flashptx test runner.
//
// Suites are named by what they need, and the runner decides before the run which of them this
// machine can execute; the rest are excluded by doctest's suite filter and so counted as skipped,
// each with its reason printed:
//   gpu_sm90*   needs a CUDA device of compute capability 9.0 (Hopper; sm_90a code)
//   gpu_sm90 release*  also needs the release libflashptx.so (tests/gpu/release_lib.h)
//   gpu_sm100*  needs a CUDA device of compute capability 10.0 (Blackwell; sm_100a code)
//   audit_sm90*, audit_sm100*  need a disassembler that decodes that architecture
//   vendoring compile*  needs nvcc and the source tree (it compiles the README's vendored files)
//   python cpu*  needs python3 and the source tree (it runs tools/python/tests/test_cpu.py)
//   host install*  needs the source tree, make, cmake, pkg-config, cc and readelf (it installs and
//               builds programs against the installed tree)
//   nogpu*      what a machine without a device of this build must answer (refusals): skipped on an
//               sm_90 or sm_100 one
// On a machine without a GPU, the gpu_sm90 suites, and the gpu_sm100 cases the simulator models,
// run on the PTX simulator instead: the same test objects linked with the simulator's CUDA runtime
// (build/run_tests_sim, tools/sim/exec.mk) run as a child process with this command line, and their
// counts join the last line. On the simulator (device "flashptx PTX simulator (sm_90a)") the runner
// runs and counts the gpu_sm90 and gpu_sm100 suites only, and skips, with the reason printed, their
// cases kSimulatorRuns does not list. The sm_100a cases there are executed in the PTX simulator;
// never run on a Blackwell GPU.
// Everything else (host suites) always runs. The last line printed is exactly
// "N passed, N failed, N skipped", counted in test cases.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime.h>
#include <fnmatch.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "src/plan.h"
#include "tests/gpu/release_lib.h"
#include "tests/sim_selection.h"
#include "tests/test_env.h"
#include "tools/sass/audit.h"
#include "tools/sim/cudart/flashptx_sim.h"

namespace {

struct Counts { unsigned passed = 0, failed = 0, skipped = 0; };
Counts g_counts;

// Which cases this process counts: all of them, except that on the simulator only the GPU suites
// (gpu_sm90, gpu_sm100) are counted (they are all it runs), and that beside a simulator runner the
// GPU suites are the runner's to count.
enum class Counting { kAll, kGpuSm90Only, kAllButGpuSm90 };
Counting g_counting = Counting::kAll;
bool is_gpu_sm90(const char* suite) { return std::strncmp(suite, "gpu_sm90", 8) == 0; }
bool is_gpu_sm100(const char* suite) { return std::strncmp(suite, "gpu_sm100", 9) == 0; }
// The suites the simulator runner runs (the cases of them kSimulatorRuns lists) and counts.
bool is_simulated(const char* suite) { return is_gpu_sm90(suite) || is_gpu_sm100(suite); }
// The gpu_sm100 suites that go through the library's plan, which picks the FA4 kernels only on an
// sm_100 device: they run in a second simulator child whose device reports compute capability 10.0
// (FLASHPTX_SIM_CC=100, tools/sim/cudart/device.h); every other simulated suite runs in the first.
bool needs_sim_cc100(const char* suite) { return std::strncmp(suite, "gpu_sm100 fa4", 13) == 0; }
int g_sim_cc = 0;  // on the simulator: the compute capability its device reports (90 or 100)
// On the simulator: the suites this child runs and counts.
bool owned_here(const char* suite) { return is_simulated(suite) && needs_sim_cc100(suite) == (g_sim_cc == 100); }
bool counted(const doctest::TestCaseData& tc) {
  if (g_counting == Counting::kAll) return true;
  if (g_counting == Counting::kGpuSm90Only) return owned_here(tc.m_test_suite);
  return !is_simulated(tc.m_test_suite);
}

// A listener beside the console reporter: it only counts.
struct CountingListener : public doctest::IReporter {
  explicit CountingListener(const doctest::ContextOptions&) {}
  bool current_counted = true;
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData& tc) override { current_counted = counted(tc); }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& s) override {
    if (!current_counted) return;
    if (s.testCaseSuccess) ++g_counts.passed; else ++g_counts.failed;
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData& tc) override {
    if (counted(tc)) ++g_counts.skipped;
  }
};
REGISTER_LISTENER("flashptx_counts", 1, CountingListener);

// The gpu_sm90 cases the simulator runs (suite and case patterns, fnmatch; tests/sim_selection.h).
// Every other gpu_sm90 case is skipped there with kSimulatorSkipReason printed: its GPU shapes take
// the simulator far beyond the runner's time, and it has no simulator shape yet (on_simulator(),
// tests/gpu/test_util.h). A new GPU case joins this list once it has one.
using flashptx_test::SimulatorRun;
constexpr SimulatorRun kSimulatorRuns[] = {
    {"gpu_sm90 primitives*", "*"},
    {"gpu_sm90 numerics", "*"},
    {"gpu_sm90 fa3 forward", "small shapes:*"},
    {"gpu_sm90 fa3 forward", "seqlen_k = 0 and fully masked rows*"},
    {"gpu_sm90 fa3 forward", "bad input on the device path*"},
    {"gpu_sm90 fa3 forward", "the paired causal schedule:*"},
    {"gpu_sm90 fa3 forward", "the persistent d256 kernel*"},
    {"gpu_sm90 fa3 forward", "the paired 192-row kernel*"},
    {"gpu_sm90 fa3 backward", "small shapes:*"},
    {"gpu_sm90 fa3 backward", "medium shapes:*"},
    {"gpu_sm90 fa3 backward", "d256: medium shapes*"},
    {"gpu_sm90 fa3 backward", "strided layouts: padded rows and head-major, the gradients*"},
    {"gpu_sm90 fa3 backward", "a custom softmax scale*"},
    {"gpu_sm90 fa3 backward", "edge sizes:*"},
    {"gpu_sm90 fa3 backward", "the release library:*"},
    {"gpu_sm90 fa3 backward", "deterministic mode:*"},
    {"gpu_sm90 fa3 backward", "d256: small shapes*"},
    {"gpu_sm90 fa3 backward", "d256: strided layouts*"},
    {"gpu_sm90 fa3 backward", "d256: a custom softmax scale*"},
    {"gpu_sm90 fa3 backward", "d256: edge sizes*"},
    {"gpu_sm90 fa3 backward", "d256: deterministic mode*"},
    {"gpu_sm90 fa3 backward", "a call from a thread that has made no CUDA call*"},
    {"gpu_sm90 fa3 backward", "window and softcap:*"},
    // Backward head dims 96 and 192 on the d128 and d256 kernels (tests/gpu/test_fa3_bwd.cpp).
    {"gpu_sm90 fa3 backward", "head dims 96 and 192:*"},
    // The backward at (head_dim, head_dim_v) = (192, 128) on the d256 kernels (the same file).
    {"gpu_sm90 fa3 backward", "head dims (192, 128):*"},
    {"gpu_sm90 fa3 fp8 forward", "smoke:*"},
    {"gpu_sm90 fa3 fp8 forward", "d64: causal and not*"},
    {"gpu_sm90 fa3 fp8 forward", "d128: causal and not*"},
    {"gpu_sm90 fa3 fp8 forward", "d256: causal and not*"},
    {"gpu_sm90 fa3 fp8 forward", "mixed granularities*"},
    {"gpu_sm90 fa3 fp8 forward", "shapes:*"},
    {"gpu_sm90 fa3 fp8 forward", "the paired causal walk*"},
    {"gpu_sm90 fa3 fp8 forward", "determinism:*"},
    {"gpu_sm90 fa3 varlen", "every head dim and dtype*"},
    {"gpu_sm90 fa3 varlen", "padded strides*"},
    {"gpu_sm90 fa3 varlen", "repeated launches*"},
    {"gpu_sm90 fa3 varlen", "backward:*"},  // (the head dims 96 and 192 cases too: the d96 and d192 kernels)
    {"gpu_sm90 fa3 trace", "*"},
    {"gpu_sm90 ladder", "every rung*"},
    {"gpu_sm90 fa3 dynamic schedule", "*"},
    {"gpu_sm90 fa3 fp8 forward", "bad input on the device path*"},
    {"gpu_sm90 fa3 varlen", "bad cu_seqlens on the device path*"},
    {"gpu_sm90 ladder", "the rungs refuse what they do not take*"},
    {"gpu_sm90 fp8 quantize", "shapes:*"},
    {"gpu_sm90 fp8 quantize", "the same input twice*"},
    {"gpu_sm90 sim mutations", "*"},
    {"gpu_sm90 isa readings", "forms the simulator executes*"},
    {"gpu_sm90 isa readings", "rcp.approx and ex2.approx*"},
    {"gpu_sm90 isa readings", "forms only the simulator's ISA library models*"},
    {"gpu_sm90 isa readings", "lg2.approx.f32 within the ISA's bound*"},
    // The sliding window and the softcap (the FA3 local kernels, src/sm90/fa3_fwd_local.cu): small
    // shapes on the simulator (tests/gpu/test_fa3_fwd.cpp, test_fa3_varlen.cpp).
    {"gpu_sm90 fa3 forward", "sliding window:*"},
    {"gpu_sm90 fa3 forward", "softcap:*"},
    {"gpu_sm90 fa3 forward", "bad window and softcap values*"},
    // Head dims 96 and 192 and (192, 128) (src/sm90/fa3_fwd_hdim.cu, and their window, softcap and
    // sinks: src/sm90/fa3_fwd_hdim_local.cu): simulator shapes.
    {"gpu_sm90 fa3 forward", "head dims 96 and 192*"},
    {"gpu_sm90 fa3 varlen", "sliding window over packed sequences*"},
    // ... and the varlen forward at those dims (src/sm90/fa3_fwd_hdim_local.cu's varlen twins).
    {"gpu_sm90 fa3 varlen", "head dims 96 and 192 over packed sequences: plain*"},
    {"gpu_sm90 fa3 varlen", "head dims 96 and 192 over packed sequences: window and softcap*"},
    {"gpu_sm90 fa3 varlen", "head dims 96 and 192 over packed sequences: unsupported pairs*"},
    // seqused_q / seqused_k over the varlen forward and backward (tests/gpu/test_fa3_varlen.cpp).
    {"gpu_sm90 fa3 varlen", "seqused:*"},
    // The KV-cache forward (src/sm90/fa3_fwd_kvcache.cu): every case at simulator shapes, but the
    // CUDA-graph one (the simulator's runtime has no stream capture: kSimulatorSkipReasons).
    {"gpu_sm90 fa3 kvcache", "decode and chunked prefill*"},
    {"gpu_sm90 fa3 kvcache", "new keys appended in place*"},
    {"gpu_sm90 fa3 kvcache", "left padding (cache_leftpad)*"},
    {"gpu_sm90 fa3 kvcache", "device data out of range*"},
    {"gpu_sm90 fa3 kvcache", "d64 and d256: decode and chunked prefill*"},
    {"gpu_sm90 fa3 kvcache", "d64 and d256: new keys appended in place*"},
    // The attention sinks (src/sm90/fa3_fwd_sink.cu, fa3_bwd_sink.cu; tests/gpu/test_fa3_sinks.cpp).
    {"gpu_sm90 fa3 sinks", "*"},
    // Cases at simulator shapes (each states its shape, and its launch count where the GPU's is 1000).
    {"gpu_sm90 race repro", "*"},
    {"gpu_sm90 release flavour", "*"},
    {"gpu_sm90 launch plan", "*"},
    {"gpu_sm90 fa3 fp8 rmse", "*"},
    {"gpu_sm90 fp8 quantize", "bit for bit against the host reference*"},
    {"gpu_sm90 fa3 forward", "medium and long shapes*"},
    {"gpu_sm90 fa3 forward", "unequal lengths with causal bottom-right alignment*"},
    {"gpu_sm90 fa3 forward", "strided layouts: padded rows and head-major"},
    {"gpu_sm90 fa3 forward", "large-magnitude scores and a custom softmax scale"},
    {"gpu_sm90 fa3 forward", "scores that grow along the walk*"},
    {"gpu_sm90 fa3 forward", "large shapes (8k-16k) against the GPU reference kernel"},
    {"gpu_sm90 fa3 forward", "determinism: repeated runs are bitwise equal*"},
    {"gpu_sm90 fa3 forward", "the dynamic schedule (d64 causal, a tile counter)*"},
    {"gpu_sm90 fa3 backward", "large shapes (1k-8k)*"},
    {"gpu_sm90 fa3 backward", "d256: large shapes (1k-8k)*"},
    {"gpu_sm90 fa3 varlen", "batches of 1 to 64 sequences*"},
    // sm_100a: the tcgen05 test kernels (tests/kernels_sm100/tmem_roundtrip.cu, umma.cu) and cluster
    // launch control (clc.cu), executed in the PTX simulator's tcgen05 engine
    // (tools/sim/exec_sm100.inc); never run on a Blackwell GPU.
    {"gpu_sm100 primitives", "TMEM alloc -> tcgen05.st -> tcgen05.ld -> dealloc round trip*"},
    {"gpu_sm100 primitives", "tcgen05.mma kind::f16 (bf16 -> f32), SS, cta_group::1*"},
    {"gpu_sm100 primitives", "tcgen05.mma kind::f16 (bf16 -> f32), TS (A in TMEM), cta_group::1*"},
    {"gpu_sm100 primitives", "tcgen05.mma kind::f8f6f4 (e4m3 -> f32), SS, cta_group::1*"},
    {"gpu_sm100 primitives", "tcgen05.mma kind::f8f6f4 (e4m3 -> f32), TS (A in TMEM), cta_group::1*"},
    {"gpu_sm100 primitives", "clusterlaunchcontrol.try_cancel work stealing*"},
    // cta_group::2 (tests/kernels_sm100/umma.cu): the M = 256 pair MMA over two CTAs' Tensor Memory,
    // the pair allocation, the commit multicast to both CTAs' barriers.
    {"gpu_sm100 primitives", "tcgen05.mma kind::f16 cta_group::2, SS, 2-CTA cluster, multicast commit*"},
    {"gpu_sm100 primitives", "tcgen05.mma kind::f16 cta_group::2, TS, 2-CTA cluster, multicast commit*"},
    // The FA4 forward through the library's plan, its 1-CTA kernels at the simulator's shapes
    // (tests/gpu/test_fa4_fwd.cpp), in the child whose device reports sm_100 (needs_sim_cc100).
    {"gpu_sm100 fa4 forward", "*"},
    {"gpu_sm100 fa4 sim mutations", "*"},  // tests/sim/test_sim_fa4_mutations.cpp
    // The FA4 backward (1-CTA d64, 2-CTA d128; deterministic) through the plan: tests/sim/test_sim_fa4_bwd.cpp.
    {"gpu_sm100 fa4 backward (simulator)", "*"},
};
constexpr const char* kSimulatorSkipReason = "no simulator shape yet (its GPU shapes would take the simulator hours)";
constexpr const char* kSimulatorSkipReason100 =
    "not executable in the PTX simulator yet (the multicast try_cancel is not modelled: tools/sim/READINGS.md, "
    "sm_100a); needs an sm_100 GPU";
// Cases skipped on the simulator for a reason of their own (suite, case pattern, reason).
constexpr struct { const char* suite; const char* test_case; const char* reason; } kSimulatorSkipReasons[] = {
    {"gpu_sm90 fa3 kvcache", "a captured CUDA graph*",
     "the simulator's CUDA runtime (tools/sim/cudart) has no stream capture or graphs; needs a GPU"},
};
const char* simulator_skip_reason(const std::string& suite, const char* name = "") {
  for (const auto& r : kSimulatorSkipReasons)
    if (suite == r.suite && fnmatch(r.test_case, name, 0) == 0) return r.reason;
  return is_gpu_sm100(suite.c_str()) ? kSimulatorSkipReason100 : kSimulatorSkipReason;
}


bool runs_on_simulator(const doctest::TestCaseData& tc) { return flashptx_test::runs_on_simulator(tc, kSimulatorRuns); }

// A doctest filter that matches `name` itself: its commas and backslashes escaped.
std::string exact_filter(const char* name) {
  std::string f;
  for (const char* c = name; *c; ++c) {
    if (*c == ',' || *c == '\\') f += '\\';
    f += *c;
  }
  return f;
}

// On the simulator: every suite but the GPU ones this child owns (gpu_sm90; gpu_sm100 in the child
// whose device reports sm_100) is excluded (and not counted); of those, the cases kSimulatorRuns does
// not name are marked skipped (and counted so), each by its suite and name (tests/sim_selection.h:
// never by name alone); the reason is printed once for a suite none of whose cases run, else for
// each case.
void exclude_for_simulator(doctest::Context& context) {
  const auto& tests = doctest::detail::getRegisteredTests();
  std::set<std::string> others, kept_suites, said;
  for (const doctest::detail::TestCase& tc : tests) {
    if (!owned_here(tc.m_test_suite)) others.insert(tc.m_test_suite);
    else if (runs_on_simulator(tc)) kept_suites.insert(tc.m_test_suite);
  }
  for (const std::string& suite : others) context.addFilter("test-suite-exclude", exact_filter(suite.c_str()).c_str());
  for (const doctest::TestCaseData* tc : flashptx_test::simulator_skips(tests, kSimulatorRuns, owned_here)) {
    flashptx_test::mark_skipped(*tc);
    if (!kept_suites.count(tc->m_test_suite)) {
      if (said.insert(tc->m_test_suite).second)
        std::printf("flashptx run_tests: on the simulator, skipping suite %s: %s\n", tc->m_test_suite,
                    simulator_skip_reason(tc->m_test_suite));
    } else {
      std::printf("flashptx run_tests: on the simulator, skipping %s / %s: %s\n", tc->m_test_suite, tc->m_name,
                  simulator_skip_reason(tc->m_test_suite, tc->m_name));
    }
  }
}

// The simulator runner: $FLASHPTX_SIM_RUNNER ("" or "off": none), else the build's run_tests_sim.
std::string simulator_runner() {
  namespace fs = std::filesystem;
  std::string p = std::string(FLASHPTX_BUILD_DIR) + "/run_tests_sim";
  if (const char* e = std::getenv("FLASHPTX_SIM_RUNNER")) p = std::strcmp(e, "off") == 0 ? "" : e;
  std::error_code ec;
  return !p.empty() && fs::exists(p, ec) ? p : "";
}

// Runs the simulator runner with this process's arguments, its output going to ours; returns its
// counts (a case failed when it ends without them).
Counts run_simulator(const std::string& runner, int argc, char** argv, bool cc100) {
  char counts_path[] = "/tmp/flashptx_sim_counts_XXXXXX";
  const int fd = mkstemp(counts_path);
  if (fd >= 0) close(fd);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> args{const_cast<char*>(runner.c_str())};
    for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
    args.push_back(nullptr);
    setenv("FLASHPTX_SIM_COUNTS", counts_path, 1);
    if (cc100) setenv("FLASHPTX_SIM_CC", "100", 1);  // the second child: an sm_100 device (needs_sim_cc100)
    else unsetenv("FLASHPTX_SIM_CC");
    // The H200's copies of the simulator's cases (tests/gpu/capture.cpp), where the tree is here.
    const std::string manifest = std::string(FLASHPTX_ROOT) + "/tools/sim/chip/h200-copies.tsv";
    std::error_code ec;
    if (!std::getenv("FLASHPTX_CHIP_MANIFEST") && std::filesystem::exists(manifest, ec))
      setenv("FLASHPTX_CHIP_MANIFEST", manifest.c_str(), 1);
    const std::string lib = std::string(FLASHPTX_BUILD_DIR) + "/libflashptx_sim.so";
    setenv("FLASHPTX_LIB", lib.c_str(), 1);  // the release flavour, on the simulator too
    execv(runner.c_str(), args.data());
    std::fprintf(stderr, "flashptx run_tests: cannot run %s: %s\n", runner.c_str(), std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  Counts c;
  std::ifstream in(counts_path);
  if (!(in >> c.passed >> c.failed >> c.skipped)) {
    c = Counts{0, 1, 0};
    std::printf("flashptx run_tests: the simulator runner %s ended without its counts (status %d): one failure\n",
                runner.c_str(), status);
  }
  std::remove(counts_path);
  return c;
}

}  // namespace

namespace flashptx_test {

int g_device_cc = 0;  // major*10+minor of device 0, 0 when there is none

std::string python3_path();  // tests/host/test_python.cpp: $FLASHPTX_PYTHON, else python3 on PATH

int device_cc() { return g_device_cc; }

std::string nvcc_path() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (const char* e = std::getenv("FLASHPTX_NVCC"); e && *e && fs::exists(e, ec)) return e;
  for (const char* c : {"/usr/local/cuda/bin/nvcc"})
    if (fs::exists(c, ec)) return c;
  return "";
}

static std::string probe_device() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    cudaGetLastError();
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    return flashptx::no_gpu_reason(e, n, drv, rt);
  }
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return "cudaGetDeviceProperties failed";
  g_device_cc = p.major * 10 + p.minor;
  if (std::strcmp(p.name, FLASHPTX_SIM_DEVICE_NAME) == 0) {
    g_counting = Counting::kGpuSm90Only;
    g_sim_cc = g_device_cc;
  }
  return std::string(p.name) + ", sm_" + std::to_string(g_device_cc);
}

}  // namespace flashptx_test

int main(int argc, char** argv) {
  doctest::Context context;
  context.applyCommandLine(argc, argv);

  const std::string device = flashptx_test::probe_device();
  // On the simulator, its reports go to stderr as launches fail: keep them beside their case.
  if (g_counting == Counting::kGpuSm90Only) std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const int cc = flashptx_test::g_device_cc;
  std::printf("flashptx run_tests: device: %s\n", device.c_str());

  struct Rule { const char* suites; bool runnable; std::string reason; };
  std::vector<Rule> rules;
  const bool on_simulator = g_counting == Counting::kGpuSm90Only;
  const std::string sim_runner = cc == 0 ? simulator_runner() : "";
  if (!sim_runner.empty()) {
    g_counting = Counting::kAllButGpuSm90;
    std::printf("flashptx run_tests: the gpu_sm90 suites and the modelled gpu_sm100 cases run on the PTX simulator (%s), after the others\n",
                sim_runner.c_str());
  }
  rules.push_back({"gpu_sm90*", cc == 90,
                   cc == 0 ? device + " (no simulator runner: make sim-exec, or FLASHPTX_SIM_RUNNER)"
                           : "needs an sm_90 GPU (found sm_" + std::to_string(cc) + ")"});
  // On the simulator the gpu_sm100 cases kSimulatorRuns lists run (sm_100a executed in the PTX
  // simulator; never run on a Blackwell GPU); exclude_for_simulator skips the others.
  rules.push_back({"gpu_sm100*", cc == 100 || on_simulator,
                   cc == 0 ? "needs an sm_100 GPU (" + device + ")"
                           : "needs an sm_100 GPU (found sm_" + std::to_string(cc) + ")"});
  if (cc == 90) {
    const auto& rel = flashptx_test::release_lib();
    rules.push_back({"gpu_sm90 release*", rel.loaded(), rel.why});
    if (rel.loaded()) std::printf("flashptx run_tests: release flavour: %s\n", rel.path.c_str());
  }
  {
    namespace fs = std::filesystem;
    std::error_code ec;
    const bool tree = fs::exists(fs::path(FLASHPTX_ROOT) / "src/sm90/fa3_fwd.cuh", ec);
    const std::string nvcc = flashptx_test::nvcc_path();
    rules.push_back({"vendoring compile*", tree && !nvcc.empty(),
                     !tree ? std::string("the source tree is not at ") + FLASHPTX_ROOT
                           : std::string("no nvcc (set FLASHPTX_NVCC)")});
  }
  {
    namespace fs = std::filesystem;
    std::error_code ec;
    const bool tree = fs::exists(fs::path(FLASHPTX_ROOT) / "tools/python/tests/test_cpu.py", ec);
    const std::string py = flashptx_test::python3_path();
    rules.push_back({"python cpu*", tree && !py.empty(),
                     !tree ? std::string("the source tree is not at ") + FLASHPTX_ROOT
                           : std::string("no python3 on PATH (set FLASHPTX_PYTHON)")});
  }
  {
    namespace fs = std::filesystem;
    std::error_code ec;
    const bool tree = fs::exists(fs::path(FLASHPTX_ROOT) / "tests/install_consumer/CMakeLists.txt", ec);
    std::string missing;
    for (const char* tool : {"make", "cmake", "pkg-config", "cc", "readelf"})
      if (flashptx_test::program_on_path(tool).empty()) missing += std::string(missing.empty() ? "" : ", ") + tool;
    rules.push_back({"host install*", tree && missing.empty(),
                     !tree ? std::string("the source tree is not at ") + FLASHPTX_ROOT
                           : "not on PATH: " + missing + " (the install test builds a CMake and a pkg-config program)"});
  }
  rules.push_back({"nogpu*", cc != 90 && cc != 100,
                   "an sm_" + std::to_string(cc) + " GPU is present: the GPU suites test the launch path instead"});
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    std::string why;
    bool ok = flashptx::sass::audit_available(arch, &why);
    rules.push_back({arch[3] == '9' ? "audit_sm90*" : "audit_sm100*", ok, why});
  }
  for (const Rule& r : rules) {
    if (r.runnable) continue;
    context.addFilter("test-suite-exclude", r.suites);
    if (on_simulator && !is_simulated(r.suites)) continue;  // not counted here: no need to say
    if (on_simulator && g_sim_cc == 100 && is_gpu_sm90(r.suites)) continue;  // the first child's
    if (!sim_runner.empty() && is_simulated(r.suites)) continue;  // the simulator runner's
    std::printf("flashptx run_tests: skipping suites %s: %s\n", r.suites, r.reason.c_str());
  }
  if (on_simulator) exclude_for_simulator(context);
  // FLASHPTX_TEST_SIM_SHAPES=1 on an sm_90 GPU: the simulator's cases alone, at its shapes, for the
  // copy-by-copy comparison of the two (tests/gpu/capture.cpp); the suites that drive the
  // simulator's own API are not for a GPU.
  if (const char* e = std::getenv("FLASHPTX_TEST_SIM_SHAPES"); cc == 90 && e && std::strcmp(e, "1") == 0) {
    std::printf("flashptx run_tests: FLASHPTX_TEST_SIM_SHAPES=1: the simulator's cases at its shapes, on the GPU\n");
    exclude_for_simulator(context);
    context.addFilter("test-suite-exclude", "gpu_sm90 sim*");
  }

  int rc = context.run();
  if (context.shouldExit()) return rc;
  if (!sim_runner.empty()) {
    const Counts c = run_simulator(sim_runner, argc, argv, false);
    g_counts.passed += c.passed; g_counts.failed += c.failed; g_counts.skipped += c.skipped;
    // the FA4 suites through the plan: the simulated device as an sm_100 one (sm_100a executed in
    // the PTX simulator; never run on a Blackwell GPU)
    bool any_cc100 = false;
    for (const doctest::detail::TestCase& tc : doctest::detail::getRegisteredTests())
      any_cc100 = any_cc100 || needs_sim_cc100(tc.m_test_suite);
    if (any_cc100) {
      std::printf("flashptx run_tests: the gpu_sm100 fa4 suites run on the PTX simulator as an sm_100 device (FLASHPTX_SIM_CC=100)\n");
      const Counts c100 = run_simulator(sim_runner, argc, argv, true);
      g_counts.passed += c100.passed; g_counts.failed += c100.failed; g_counts.skipped += c100.skipped;
    }
  }
  if (const char* f = std::getenv("FLASHPTX_SIM_COUNTS"); on_simulator && f && *f) {
    std::ofstream(f) << g_counts.passed << " " << g_counts.failed << " " << g_counts.skipped << "\n";
    std::printf("simulator: %u passed, %u failed, %u skipped\n", g_counts.passed, g_counts.failed, g_counts.skipped);
    return g_counts.failed ? 1 : rc;
  }
  std::printf("%u passed, %u failed, %u skipped\n", g_counts.passed, g_counts.failed, g_counts.skipped);
  return g_counts.failed ? 1 : rc;
}
