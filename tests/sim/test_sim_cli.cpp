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
#include <sstream>
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

// --trace: the event log pairs every copy it saw issued with its landing and every wgmma group
// committed with its retirement (a copy or group left open would mean a lost event), holds
// mbarrier phases and waits, and its SVG is the renderer's, drawn with the simulator's kinds.
TEST_CASE("flashptx sim --trace: the event log of the launch and its timeline, rendered") {
  char base[] = "/tmp/flashptx_sim_trace_XXXXXX";
  const int fd = mkstemp(base);
  REQUIRE(fd >= 0);
  close(fd);
  const std::string log = base, svg = log + ".svg";
  const Out r = flashptx_sim("--hdim 64 --seqlen-q 64 --seqlen-k 300 --heads 1 --trace '" + log + "'");
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  CHECK(r.last_line() == "PASS");
  CHECK(r.out.find("trace: event log " + log) != std::string::npos);
  const std::string text = slurp(log), pic = slurp(svg);
  std::remove(log.c_str());
  std::remove(svg.c_str());
  REQUIRE(text.rfind("# flashptx sim trace v1", 0) == 0);
  CHECK(text.find("\nlaunch 0 ") != std::string::npos);
  int issued = 0, landed = 0, committed = 0, retired = 0, phases = 0, waits = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(" tma-issue copy ") != std::string::npos) ++issued;
    if (line.find(" tma-land copy ") != std::string::npos) ++landed;
    if (line.find(" wgmma-commit group ") != std::string::npos) ++committed;
    if (line.find(" wgmma-retire group ") != std::string::npos) ++retired;
    if (line.find(" phase mbarrier ") != std::string::npos) ++phases;
    if (line.find(" wait-begin ") != std::string::npos) ++waits;
  }
  // 300 keys: Q and five K/V blocks through the ring at least.
  CHECK(issued >= 6);
  CHECK(landed == issued);
  CHECK(committed >= 8);
  CHECK(retired == committed);
  CHECK(phases >= issued / 2);
  CHECK(waits > 0);
  CHECK(pic.rfind("<svg ", 0) == 0);
  CHECK(pic.find("wgmma group (committed -&gt; retired)") != std::string::npos);
  CHECK(pic.find("async copy (issue -&gt; landed)") != std::string::npos);
  CHECK(pic.find("CTA 0 warp 4") != std::string::npos);
  CHECK(pic.find("(never closed)") == std::string::npos);
  CHECK(pic.find("</svg>") != std::string::npos);
  // A file that cannot be written is a FAIL that says so.
  const Out bad = flashptx_sim("--seqlen 64 --trace /nonexistent-dir/x");
  CHECK(bad.rc == 1);
  CHECK(bad.last_line() == "FAIL");
  CHECK(bad.err.find("cannot write the trace to /nonexistent-dir/x") != std::string::npos);
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
