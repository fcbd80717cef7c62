// The simulator held against the chip: every copy a GPU-suite case makes from the device to the host,
// recorded on one side and compared on the other (tools/sim/READINGS.md, "The simulator against the H200").
//
// ./run_tests and build/run_tests_sim are linked with `--wrap=cudaMemcpy --wrap=cudaMemcpyAsync`
// (Makefile, tools/sim/exec.mk), so that the test objects' calls come here first; every other call
// goes straight on to the runtime (the real one, or the simulator's). The cases' inputs come from
// fixed seeds, so the same case makes the same copies, in the same order, of the same sizes, on both
// sides when it runs at the same shapes (FLASHPTX_TEST_SIM_SHAPES=1 makes a GPU run the simulator's
// cases at the simulator's shapes: tests/gpu/test_util.h, on_simulator()).
//
//   FLASHPTX_CAPTURE=FILE         append every device-to-host copy made inside a test case to FILE:
//                                 per copy one header line
//                                   "copy <seq> <bytes> <fnv1a64 hex>\t<suite>\t<case>\n"
//                                 then the copied bytes (seq counts the case's copies from 0).
//                                 tools/sim/compare_capture.py compares two such files.
//   FLASHPTX_CHIP_MANIFEST=FILE   compare each copy, as it is made, with the H200's copy of the same
//                                 case and seq that FILE lists ("<suite>\t<case>\t<seq>\t<bytes>\t
//                                 <fnv1a64 hex>\t<same|differs>", written by compare_capture.py
//                                 --manifest). A copy the H200 and the simulator made bit for bit
//                                 alike when it was captured ("same") must still be alike: a
//                                 difference fails the case. A copy that differed then (the
//                                 simulator's exact ex2.approx, for one) is not checked; a copy of
//                                 another size means the case changed since the capture: it says so.
// Both are read once, at the first copy; neither is set in an ordinary run.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "tools/support/bench.h"

extern "C" cudaError_t __real_cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
extern "C" cudaError_t __real_cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                                              cudaStream_t stream);

namespace {

struct CaseId { std::string suite, name; };

struct Capture {
  std::mutex mu;
  bool loaded = false;
  std::FILE* out = nullptr;  // FLASHPTX_CAPTURE
  struct Entry { size_t bytes; std::string hash; bool same; };
  std::map<std::tuple<std::string, std::string, unsigned>, Entry> manifest;  // FLASHPTX_CHIP_MANIFEST
  bool have_manifest = false;
  CaseId current;
  bool in_case = false;
  unsigned seq = 0;

  void load() {
    if (loaded) return;
    loaded = true;
    if (const char* f = std::getenv("FLASHPTX_CAPTURE"); f && *f) {
      out = std::fopen(f, "ab");
      if (!out) std::fprintf(stderr, "flashptx capture: cannot open %s: nothing is recorded\n", f);
    }
    if (const char* f = std::getenv("FLASHPTX_CHIP_MANIFEST"); f && *f) {
      std::ifstream in(f);
      std::string line;
      while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::string field[6];
        size_t at = 0;
        int n = 0;
        for (; n < 6; ++n) {
          const size_t tab = line.find('\t', at);
          field[n] = line.substr(at, tab == std::string::npos ? std::string::npos : tab - at);
          if (tab == std::string::npos) { ++n; break; }
          at = tab + 1;
        }
        if (n != 6) continue;
        manifest[{field[0], field[1], static_cast<unsigned>(std::stoul(field[2]))}] =
            Entry{std::stoull(field[3]), field[4], field[5] == "same"};
      }
      have_manifest = !manifest.empty();
      if (!have_manifest) std::fprintf(stderr, "flashptx capture: %s lists no copies: nothing is compared\n", f);
    }
  }
};
Capture g_capture;

// One completed device-to-host copy of `bytes` at host address `dst`.
void record(const void* dst, size_t bytes) {
  Capture& c = g_capture;
  std::string fail;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.load();
    if (!c.in_case || (!c.out && !c.have_manifest)) return;
    const unsigned seq = c.seq++;
    const std::string hash = flashptx::bench::fnv1a64_hex(std::string(static_cast<const char*>(dst), bytes));
    if (c.out) {
      std::fprintf(c.out, "copy %u %zu %s\t%s\t%s\n", seq, bytes, hash.c_str(), c.current.suite.c_str(),
                   c.current.name.c_str());
      std::fwrite(dst, 1, bytes, c.out);
      std::fflush(c.out);
    }
    if (c.have_manifest) {
      const auto it = c.manifest.find({c.current.suite, c.current.name, seq});
      if (it != c.manifest.end()) {
        const Capture::Entry& e = it->second;
        if (e.bytes != bytes)
          std::printf("flashptx capture: %s / %s copy %u is %zu bytes, %zu on the H200: the case changed since "
                      "the capture (tools/sim/compare_capture.py; not compared)\n",
                      c.current.suite.c_str(), c.current.name.c_str(), seq, bytes, e.bytes);
        else if (e.same && e.hash != hash)
          fail = "copy " + std::to_string(seq) + " (" + std::to_string(bytes) + " bytes) differs from the H200's, " +
                 "which the simulator matched bit for bit when it was captured (H200 " + e.hash + ", here " + hash + ")";
      }
    }
  }
  if (!fail.empty()) FAIL_CHECK("the simulator against the chip: " << fail);
}

struct CaptureListener : public doctest::IReporter {
  explicit CaptureListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData& tc) override {
    std::lock_guard<std::mutex> lock(g_capture.mu);
    g_capture.current = CaseId{tc.m_test_suite, tc.m_name};
    g_capture.in_case = true;
    g_capture.seq = 0;
  }
  void test_case_reenter(const doctest::TestCaseData&) override {}  // subcases: the count goes on
  void test_case_end(const doctest::CurrentTestCaseStats&) override {
    std::lock_guard<std::mutex> lock(g_capture.mu);
    g_capture.in_case = false;
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("flashptx_capture", 2, CaptureListener);

}  // namespace

extern "C" cudaError_t __wrap_cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  const cudaError_t e = __real_cudaMemcpy(dst, src, bytes, kind);
  if (e == cudaSuccess && kind == cudaMemcpyDeviceToHost && bytes > 0) record(dst, bytes);
  return e;
}

extern "C" cudaError_t __wrap_cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                                              cudaStream_t stream) {
  cudaError_t e = __real_cudaMemcpyAsync(dst, src, bytes, kind, stream);
  if (e != cudaSuccess || kind != cudaMemcpyDeviceToHost || bytes == 0) return e;
  {
    std::lock_guard<std::mutex> lock(g_capture.mu);
    g_capture.load();
    if (!g_capture.in_case || (!g_capture.out && !g_capture.have_manifest)) return e;
  }
  e = cudaStreamSynchronize(stream);  // only while capturing: the bytes must have landed
  if (e == cudaSuccess) record(dst, bytes);
  return e;
}
