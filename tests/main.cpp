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
// Everything else (host suites) always runs. The last line printed is exactly
// "N passed, N failed, N skipped", counted in test cases.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "src/plan.h"
#include "tests/gpu/release_lib.h"
#include "tests/test_env.h"
#include "tools/sass/audit.h"

namespace {

struct Counts { unsigned passed = 0, failed = 0, skipped = 0; };
Counts g_counts;

// A listener beside the console reporter: it only counts.
struct CountingListener : public doctest::IReporter {
  explicit CountingListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& s) override {
    if (s.testCaseSuccess) ++g_counts.passed; else ++g_counts.failed;
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override { ++g_counts.skipped; }
};
REGISTER_LISTENER("flashptx_counts", 1, CountingListener);

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
  return std::string(p.name) + ", sm_" + std::to_string(g_device_cc);
}

}  // namespace flashptx_test

int main(int argc, char** argv) {
  doctest::Context context;
  context.applyCommandLine(argc, argv);

  const std::string device = flashptx_test::probe_device();
  const int cc = flashptx_test::g_device_cc;
  std::printf("flashptx run_tests: device: %s\n", device.c_str());

  struct Rule { const char* suites; bool runnable; std::string reason; };
  std::vector<Rule> rules;
  rules.push_back({"gpu_sm90*", cc == 90,
                   cc == 0 ? device : "needs an sm_90 GPU (found sm_" + std::to_string(cc) + ")"});
  rules.push_back({"gpu_sm100*", cc == 100,
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
    std::printf("flashptx run_tests: skipping suites %s: %s\n", r.suites, r.reason.c_str());
  }

  int rc = context.run();
  if (context.shouldExit()) return rc;
  std::printf("%u passed, %u failed, %u skipped\n", g_counts.passed, g_counts.failed, g_counts.skipped);
  return g_counts.failed ? 1 : rc;
}
