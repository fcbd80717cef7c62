// The C ABI on a CPU: a C program built against include/flashptx.h and linked with
// build/libflashptx_sim.so (tests/sim/sim_capi_forward.c, built by tools/sim/exec.mk) runs a
// forward in the PTX simulator on host memory it registers; its output is checked against the
// fp64 reference under the GPU suites' rule, and the same call on memory it did not register is
// refused with a status, the output untouched.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "tools/support/reference.h"

namespace {

// The program's fixed problem (tests/sim/sim_capi_forward.c).
constexpr int64_t kSq = 70, kSk = 150, kHq = 2, kHkv = 1, kD = 64;

struct Run {
  int32_t status = -1;
  std::vector<uint16_t> q, k, v, o;
  std::vector<float> lse;
  std::string output;  // what the program printed
};

Run run_program(uint32_t seed, const char* mode) {
  namespace fs = std::filesystem;
  const std::string exe = std::string(FLASHPTX_BUILD_DIR) + "/sim_capi_forward";
  std::error_code ec;
  REQUIRE_MESSAGE(fs::exists(exe, ec), exe << " is missing: make sim-exec builds it");
  char out_path[] = "/tmp/flashptx_sim_capi_XXXXXX";
  const int fd = mkstemp(out_path);
  REQUIRE(fd >= 0);
  close(fd);
  const std::string log = std::string(out_path) + ".log";
  const std::string cmd = "'" + exe + "' '" + out_path + "' " + std::to_string(seed) + " " + mode + " >'" + log + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  Run r;
  {
    std::ifstream l(log);
    r.output.assign(std::istreambuf_iterator<char>(l), std::istreambuf_iterator<char>());
  }
  INFO(r.output);
  REQUIRE_MESSAGE(rc == 0, exe << " " << mode << " exited with " << rc);
  std::ifstream in(out_path, std::ios::binary);
  r.q.resize(kSq * kHq * kD);
  r.k.resize(kSk * kHkv * kD);
  r.v.resize(kSk * kHkv * kD);
  r.o.resize(kSq * kHq * kD);
  r.lse.resize(kHq * kSq);
  in.read(reinterpret_cast<char*>(&r.status), 4);
  in.read(reinterpret_cast<char*>(r.q.data()), r.q.size() * 2);
  in.read(reinterpret_cast<char*>(r.k.data()), r.k.size() * 2);
  in.read(reinterpret_cast<char*>(r.v.data()), r.v.size() * 2);
  in.read(reinterpret_cast<char*>(r.o.data()), r.o.size() * 2);
  in.read(reinterpret_cast<char*>(r.lse.data()), r.lse.size() * 4);
  REQUIRE_MESSAGE(in.good(), "the program's output file is short");
  std::remove(out_path);
  std::remove(log.c_str());
  return r;
}

}  // namespace

TEST_SUITE("sim exec c abi") {

TEST_CASE("a C program linked with libflashptx_sim.so: the forward on registered host memory matches fp64") {
  namespace ref = flashptx::ref;
  const uint32_t seed = std::random_device{}();
  INFO("seed " << seed);
  const Run r = run_program(seed, "registered");
  INFO(r.output);
  REQUIRE_MESSAGE(r.status == FLASHPTX_OK, "flashptx_fwd returned " << flashptx_status_name(static_cast<flashptx_status>(r.status)));
  ref::Problem p;
  p.seqlen_q = kSq; p.seqlen_k = kSk; p.heads_q = kHq; p.heads_kv = kHkv; p.head_dim = kD; p.causal = true;
  const ref::TensorView q = ref::contiguous_q(r.q.data(), ref::Elem::kBF16, p);
  const ref::TensorView k = ref::contiguous_kv(r.k.data(), ref::Elem::kBF16, p);
  const ref::TensorView v = ref::contiguous_kv(r.v.data(), ref::Elem::kBF16, p);
  const ref::Forward exact = ref::forward(p, q, k, v);
  const ref::Forward same = ref::forward(p, q, k, v, flashptx::Round::kBF16);
  const double o_same = ref::max_abs_diff_o(p, ref::contiguous_q(r.o.data(), ref::Elem::kBF16, p), exact.o);
  double same_err = 0;
  for (size_t i = 0; i < same.o.size(); ++i) same_err = std::max(same_err, std::fabs(same.o[i] - exact.o[i]));
  const double o_tol = 2 * same_err + 1e-5;
  CHECK_MESSAGE(o_same <= o_tol, "max|O - ref| = " << o_same << " > " << o_tol);
  const double lse_err = ref::max_abs_diff_lse(p, r.lse.data(), exact.lse);
  CHECK_MESSAGE(lse_err <= 1e-4, "max|LSE - ref| = " << lse_err);
  int64_t nan_o = 0;
  for (uint16_t x : r.o) nan_o += (x & 0x7F80) == 0x7F80 && (x & 0x7F) != 0;
  CHECK_MESSAGE(nan_o == 0, nan_o << " output elements left poisoned");
}

TEST_CASE("a C program linked with libflashptx_sim.so: an output the device does not know is refused, untouched") {
  const Run r = run_program(std::random_device{}(), "unregistered");
  INFO(r.output);
  CHECK_MESSAGE(r.status == FLASHPTX_ERR_CUDA, "flashptx_fwd returned " << flashptx_status_name(static_cast<flashptx_status>(r.status)));
  CHECK_MESSAGE(r.output.find("flashptx sim:") != std::string::npos, "no simulator report on stderr");
  int64_t written = 0;
  for (uint16_t x : r.o) written += x != 0xFFFF;
  CHECK_MESSAGE(written == 0, written << " output elements were written");
}

}  // TEST_SUITE
