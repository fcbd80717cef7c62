// The golden-SASS audit over the objects actually built (tests/main.cpp skips these suites, with
// the reason, where no disassembler can decode the architecture or nothing of it is built):
// the audit must pass against sass_golden/; and it must be able to fail: goldens regenerated into a
// scratch directory, with one instruction line corrupted or an impossible .check expectation
// added, must fail naming that kernel; an empty golden directory fails with "no golden"; a kernel
// filter that selects nothing fails. On any machine ("host audit"): without a disassembler the audit
// says so in one line and nothing else; the summary leaves out the notes and diffs of the full report.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "src/kernels.h"
#include "tests/host/file_text.h"
#include "tools/sass/audit.h"

namespace fs = std::filesystem;
using namespace flashptx::sass;

using flashptx_test::file_text;

namespace {

std::string report_text(const AuditReport& r) {
  std::ostringstream os;
  print_report(r, false, os);
  return os.str();
}

// A scratch copy of sass_golden/, removed at the end of the scope.
struct GoldenCopy {
  fs::path dir;
  GoldenCopy() {
    static int n = 0;
    dir = fs::temp_directory_path() / ("flashptx-golden-" + std::to_string(getpid()) + "-" + std::to_string(n++));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string committed = AuditOptions().golden_dir;
    if (fs::is_directory(committed)) fs::copy(committed, dir, fs::copy_options::recursive);
  }
  ~GoldenCopy() { std::error_code ec; fs::remove_all(dir, ec); }
};

// Goldens regenerated from the current build into a scratch directory, so that the failure tests
// do not depend on the state of the committed goldens. Returns the first kernel written.
KernelReport fresh_goldens(const char* arch, const GoldenCopy& dir) {
  AuditOptions opt;
  opt.arch = arch;
  opt.golden_dir = dir.dir.string();
  opt.regenerate = true;
  const AuditReport r = run_audit(opt);
  for (const KernelReport& k : r.kernels)
    if (k.golden == "new" || k.golden == "updated" || k.golden == "unchanged") return k;
  FAIL("no " << std::string(arch) << " kernel could be written as a golden:\n" << report_text(r));
  return {};
}

// The audit of one kernel against the goldens in `dir`.
AuditReport audit_one(const char* arch, const KernelReport& k, const GoldenCopy& dir) {
  AuditOptions opt;
  opt.arch = arch;
  opt.kernel = k.name;
  opt.golden_dir = dir.dir.string();
  return run_audit(opt);
}

void audit_passes(const char* arch) {
  AuditOptions opt;
  opt.arch = arch;
  const AuditReport r = run_audit(opt);
  INFO(report_text(r));
  CHECK(!r.kernels.empty());
  CHECK(r.ok());
}

void corrupt_golden_fails(const char* arch) {
  GoldenCopy copy;
  const KernelReport k = fresh_goldens(arch, copy);
  const fs::path sass = copy.dir / arch / (k.stem + ".sass");
  std::string text = file_text(sass);
  const size_t first_instr = text.find("\n    ");  // the first instruction line
  REQUIRE(first_instr != std::string::npos);
  const size_t eol = text.find('\n', first_instr + 1);
  const std::string original = text.substr(first_instr + 5, eol - first_instr - 5);
  text.insert(first_instr + 5, "CORRUPTED.");
  std::ofstream(sass) << text;
  const AuditReport r = audit_one(arch, k, copy);
  const std::string out = report_text(r);
  INFO(out);
  CHECK_FALSE(r.ok());
  CHECK(out.find("kernel " + k.name + " (" + arch + ") differs from its golden") != std::string::npos);
  CHECK(out.find("-    CORRUPTED." + original + "\n+    " + original + "\n") != std::string::npos);
}

void corrupt_check_fails(const char* arch) {
  GoldenCopy copy;
  const KernelReport k = fresh_goldens(arch, copy);
  const fs::path check = copy.dir / arch / (k.stem + ".check");
  std::ofstream(check, std::ios::app) << "CHECK: EXIT\nCHECK: NO.SUCH.OPCODE.ANYWHERE\n";
  const AuditReport r = audit_one(arch, k, copy);
  const std::string out = report_text(r);
  INFO(out);
  CHECK_FALSE(r.ok());
  CHECK(out.find("check failed for kernel " + k.name) != std::string::npos);
  CHECK(out.find(check.string() + ":") != std::string::npos);
  CHECK(out.find("NO.SUCH.OPCODE.ANYWHERE: not found") != std::string::npos);
}

void missing_golden_fails(const char* arch) {
  GoldenCopy copy;
  const KernelReport k = fresh_goldens(arch, copy);
  fs::remove(copy.dir / arch / (k.stem + ".sass"));  // this kernel's golden only
  AuditOptions opt;
  opt.arch = arch;
  opt.golden_dir = copy.dir.string();
  const AuditReport r = run_audit(opt);
  const std::string out = report_text(r);
  INFO(out);
  CHECK_FALSE(r.ok());
  CHECK(out.find("no golden for kernel " + k.name + " (" + arch) != std::string::npos);
  CHECK(out.find("run make regen-golden") != std::string::npos);
}

}  // namespace

TEST_SUITE("audit_sm90") {
TEST_CASE("audit sm_90a: the built kernels match their goldens and checks") { audit_passes("sm_90a"); }
TEST_CASE("audit sm_90a: a corrupted golden line fails, naming the kernel") { corrupt_golden_fails("sm_90a"); }
TEST_CASE("audit sm_90a: a corrupted .check expectation fails") { corrupt_check_fails("sm_90a"); }
TEST_CASE("audit sm_90a: a missing golden fails") { missing_golden_fails("sm_90a"); }
}

TEST_SUITE("audit_sm100") {
TEST_CASE("audit sm_100a: the built kernels match their goldens and checks") { audit_passes("sm_100a"); }
TEST_CASE("audit sm_100a: a corrupted golden line fails, naming the kernel") { corrupt_golden_fails("sm_100a"); }
TEST_CASE("audit sm_100a: a corrupted .check expectation fails") { corrupt_check_fails("sm_100a"); }
TEST_CASE("audit sm_100a: a missing golden fails") { missing_golden_fails("sm_100a"); }
}

TEST_SUITE("host audit") {

TEST_CASE("no disassembler: one line saying so, no stale-golden notes, no per-object failures") {
  AuditOptions opt;
  opt.cuobjdump = "/nonexistent/cuobjdump";
  const AuditReport r = run_audit(opt);
  CHECK(r.cannot_run);
  CHECK_FALSE(r.ok());
  CHECK(r.kernels.empty());
  CHECK(r.notes.empty());
  REQUIRE(r.errors.size() == 1);
  const std::string line =
      "audit: cannot run: no disassembler at /nonexistent/cuobjdump (make fetches it into .deps/; the audit needs it)\n";
  CHECK(report_text(r) == line);
  std::ostringstream summary;
  print_report(r, true, summary);
  CHECK(summary.str() == line);
  std::string why;
  CHECK_FALSE(disassembler_runs("/nonexistent/cuobjdump", &why));
  CHECK(why == "no disassembler at /nonexistent/cuobjdump (make fetches it into .deps/; the audit needs it)");
}

TEST_CASE("--summary: the table, the failures and the verdict; the full report adds notes and diffs") {
  AuditReport r;
  KernelReport ok;
  ok.name = "k_ok";
  ok.arch = "sm_90a";
  ok.golden = "match";
  ok.notes.push_back("toolchain mismatch: nvcc golden \"a\", current \"b\"");
  KernelReport bad;
  bad.name = "k_bad";
  bad.arch = "sm_90a";
  bad.golden = "DIFF";
  bad.problems.push_back("kernel k_bad (sm_90a) differs from its golden g.sass");
  bad.diff = "--- g.sass\n+++ current\n-    OLD\n+    NEW\n";
  r.kernels = {ok, bad};
  r.notes.push_back("toolchain: nvcc X");
  std::ostringstream full, summary;
  print_report(r, false, full);
  print_report(r, true, summary);
  for (const std::string& t : {full.str(), summary.str()}) {
    CHECK(t.find("k_ok") != std::string::npos);
    CHECK(t.find("FAIL: kernel k_bad (sm_90a) differs from its golden g.sass") != std::string::npos);
    CHECK(t.find("audit: 2 kernels, 1 failing, 0 other errors: FAIL") != std::string::npos);
  }
  CHECK(full.str().find("note: toolchain: nvcc X") != std::string::npos);
  CHECK(full.str().find("note: k_ok (sm_90a): toolchain mismatch") != std::string::npos);
  CHECK(full.str().find("-    OLD\n+    NEW\n") != std::string::npos);
  CHECK(summary.str().find("note:") == std::string::npos);
  CHECK(summary.str().find("OLD") == std::string::npos);
  CHECK(summary.str().find("(flashptx audit prints the diffs and the notes)") != std::string::npos);
  CHECK(full.str() != summary.str());
}

}  // TEST_SUITE

TEST_SUITE("audit_sm90 filters") {
TEST_CASE("audit: a --kernel filter that selects no built kernel is an error") {
  AuditOptions opt;
  opt.kernel = "no_such_kernel_anywhere";
  const AuditReport r = run_audit(opt);
  CHECK(r.matched_nothing);
  CHECK_FALSE(r.ok());
  REQUIRE(!r.errors.empty());
  CHECK(r.errors.back().rfind("no kernel name contains 'no_such_kernel_anywhere' (the ", 0) == 0);
  // Refused from the goldens' kernel names, before any disassembly: no kernel, no toolchain note.
  CHECK(r.kernels.empty());
  CHECK(r.notes.empty());
  CHECK(r.errors.size() == 1);
  opt.kernel = "fa3_fwd_sm90_bf16_d128";
  const AuditReport some = run_audit(opt);
  CHECK_FALSE(some.matched_nothing);
  CHECK(!some.kernels.empty());
  // The table: full names (the longest fits its column), static and dynamic shared memory.
  std::ostringstream table;
  print_report(some, true, table);
  INFO(table.str());
  CHECK(table.str().find("SMEM static") != std::string::npos);
  CHECK(table.str().find("SMEM dynamic") != std::string::npos);
  for (const KernelReport& k : some.kernels) CHECK(table.str().find("\n" + k.name + " ") != std::string::npos);
}

TEST_CASE("audit: a golden directory that does not exist, or holds no goldens, is one error before any disassembly") {
  AuditOptions opt;
  opt.golden_dir = "/nonexistent/flashptx-goldens";
  const AuditReport missing = run_audit(opt);
  CHECK(missing.bad_golden_dir);
  CHECK(missing.kernels.empty());
  REQUIRE(missing.errors.size() == 1);
  CHECK(missing.errors[0] == "the golden directory /nonexistent/flashptx-goldens does not exist");
  CHECK(report_text(missing).find("regen") == std::string::npos);  // no advice to regenerate
  GoldenCopy empty;
  fs::remove_all(empty.dir);
  fs::create_directories(empty.dir / "sm_90a");
  opt.golden_dir = empty.dir.string();
  opt.arch = "sm_90a";
  const AuditReport none = run_audit(opt);
  CHECK(none.bad_golden_dir);
  REQUIRE(none.errors.size() == 1);
  CHECK(none.errors[0] == "the golden directory " + empty.dir.string() + " holds no goldens (no sm_90a/*.sass with a '# kernel:' line)");
}

TEST_CASE("audit: the golden kernel names are read from the goldens' headers") {
  bool exists = false;
  const std::vector<std::string> names = golden_kernel_names(AuditOptions().golden_dir, "sm_90a", &exists);
  CHECK(exists);
  REQUIRE(!names.empty());
  for (const flashptx::KernelEntry& k : flashptx::kernel_table()) {
    const bool sm90 = std::string(k.name).find("sm90") != std::string::npos;
    if (sm90) CHECK_MESSAGE(std::find(names.begin(), names.end(), k.name) != names.end(), k.name);
  }
}
}
