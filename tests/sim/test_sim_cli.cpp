// `flashptx sim` (tools/flashptx/cmd_sim.cpp), run as a program: at a tiny shape the forward and the
// backward in the PTX simulator pass against fp64 (last line PASS), a forced kernel the plan does
// not choose is a FAIL that says so, --list names the kernel table's sm_90a rows, and a bad option
// is a usage error (one line and the hint on stderr, nothing on stdout, exit 2).
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

struct Out {
  int rc = -1;
  std::string out, err;
  std::string last_line() const {
    std::string s = out;
    while (!s.empty() && s.back() == '\n') s.pop_back();
    const size_t nl = s.rfind('\n');
    return nl == std::string::npos ? s : s.substr(nl + 1);
  }
};

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

Out flashptx_sim(const std::string& args) {
  namespace fs = std::filesystem;
  const std::string exe = std::string(FLASHPTX_ROOT) + "/flashptx";
  const std::string lib = std::string(FLASHPTX_BUILD_DIR) + "/libflashptx_sim.so";
  std::error_code ec;
  REQUIRE_MESSAGE(fs::exists(exe, ec), exe << " is missing: make flashptx builds it");
  REQUIRE_MESSAGE(fs::exists(lib, ec), lib << " is missing: make sim-exec builds it");
  char base[] = "/tmp/flashptx_sim_cli_XXXXXX";
  const int fd = mkstemp(base);
  REQUIRE(fd >= 0);
  close(fd);
  const std::string o = std::string(base) + ".out", e = std::string(base) + ".err";
  const std::string cmd = "'" + exe + "' sim " + args + " >'" + o + "' 2>'" + e + "'";
  const int st = std::system(cmd.c_str());
  Out r;
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(o);
  r.err = slurp(e);
  std::remove(base);
  std::remove(o.c_str());
  std::remove(e.c_str());
  return r;
}

}  // namespace

TEST_SUITE("sim cli") {

TEST_CASE("flashptx sim: a tiny causal GQA forward passes against fp64, with the report and the speed") {
  const Out r = flashptx_sim("--hdim 64 --seqlen-q 70 --seqlen-k 150 --heads 2 --heads-kv 1 --causal --policy random --seed 5");
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK(r.last_line() == "PASS");
  CHECK(r.out.find("max|O - ref| = ") != std::string::npos);
  CHECK(r.out.find("max|LSE - ref| = ") != std::string::npos);
  CHECK(r.out.find("simulator report: no hazard, no deadlock, no out-of-bounds access") != std::string::npos);
  CHECK(r.out.find(" warp instr/s") != std::string::npos);
  CHECK(r.out.find("the launch plan's choice): fa3_fwd_sm90_bf16_d64_m128_paired") != std::string::npos);
}

TEST_CASE("flashptx sim --direction bwd: a tiny backward passes against fp64") {
  const Out r = flashptx_sim("--direction bwd --hdim 64 --seqlen-q 70 --seqlen-k 100 --sms 2");
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK(r.last_line() == "PASS");
  CHECK(r.out.find("max|dQ - ref| = ") != std::string::npos);
  CHECK(r.out.find("max|dV - ref| = ") != std::string::npos);
}

TEST_CASE("flashptx sim --kernel: the plan's choice must be that kernel (the C ABI cannot force one)") {
  const Out r = flashptx_sim("--kernel fa3_fwd_sm90_bf16_d64_m192 --seqlen 64");
  INFO(r.out << r.err);
  CHECK(r.rc == 1);
  CHECK(r.last_line() == "FAIL");
  CHECK(r.out.find("the C ABI cannot force a kernel") != std::string::npos);
}

TEST_CASE("flashptx sim --list names the sm_90a rows; a bad option is a usage error") {
  const Out l = flashptx_sim("--list");
  CHECK(l.rc == 0);
  CHECK(l.out.find("\nfa3_fwd_sm90_bf16_d128_n128 ") != std::string::npos);
  CHECK(l.out.find("\nfa3_bwd_sm90_bf16_d64 ") != std::string::npos);
  CHECK(l.out.find("fa4_") == std::string::npos);
  const Out h = flashptx_sim("--help");
  CHECK(h.rc == 0);
  CHECK(h.out.find("--policy") != std::string::npos);
  const Out b = flashptx_sim("--bogus");
  CHECK(b.rc == 2);
  CHECK(b.out.empty());
  CHECK(b.err == "flashptx sim: unknown option '--bogus'\n(flashptx sim --help lists the options)\n");
  const Out k = flashptx_sim("--heads 3 --heads-kv 2");
  CHECK(k.rc == 2);
  CHECK(k.err == "flashptx sim: --heads 3 is not a multiple of --heads-kv 2\n(flashptx sim --help lists the options)\n");
}

}  // TEST_SUITE
