// Unit tests of the golden-SASS audit's pieces on fixed text: the normaliser (registers, immediates,
// protocol immediates, labels, NOP/self-loop removal), the resource parser and spill detection, the
// zero-instruction error, the file-name sanitiser, the line diff, and every checker directive
// (CHECK-DEFINE and CHECK-INCLUDE included) passing and failing. The fixture
// tests/host/fixtures/audit_fixture_sm90a.*.txt is real cuobjdump 13.2 output for
// tests/kernels/audit_fixture.cu built by nvcc 13.0 for sm_90a; the build embeds it in ./run_tests
// (tests/embedded.h), so these tests run from a copy of the binaries too.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>
#include <unistd.h>

#include "tests/embedded.h"
#include "tools/sass/sass_check.h"
#include "tools/sass/sass_diff.h"
#include "tools/sass/sass_listing.h"

using namespace flashptx::sass;

namespace {

std::string fixture(const std::string& name) {
  const std::string path = "tests/host/fixtures/" + name;
  const std::string_view bytes = flashptx_test::embedded_file(path);
  REQUIRE_MESSAGE(!bytes.empty(), path << " is not embedded in this binary (the Makefile's EMBED_FILES)");
  return std::string(bytes);
}

// A synthetic dump: one function, instructions at 16-byte steps, encodings after each.
std::string dump_of(const std::string& name, const std::vector<std::string>& instrs) {
  std::ostringstream os;
  os << "\tcode for sm_90a\n\t.target\tsm_90a\n\n\t\tFunction : " << name << "\n";
  char addr[16];
  for (size_t i = 0; i < instrs.size(); ++i) {
    std::snprintf(addr, sizeof addr, "%04zx", i * 16);
    os << "        /*" << addr << "*/                   " << instrs[i] << " ;   /* 0x000fe20000000800 */\n"
       << "                                                    /* 0x000fe20000000800 */\n";
  }
  return os.str();
}

const std::vector<std::string> kListing = {
    "# header: ignored",
    "    SYNCS.EXCH.64 URZ, [UR], UR",
    "    BAR.SYNC.DEFER_BLOCKING 0x1, 0x80",
    "    SYNCS.ARRIVE.TRANS64.A1T0 RZ, [UR], RZ",
    "    SYNCS.PHASECHK.TRANS64.TRYWAIT P, [UR], R",
    "    @!P BRA L1",
    "L0:",
    "    STG.E desc[UR][R.64], R",
    "    EXIT",
    "L1:",
    "    SYNCS.PHASECHK.TRANS64.TRYWAIT P, [UR], R",
    "    @!P BRA L1",
    "    BRA L0",
};

CheckResult check(const std::string& text) { return run_checks(text, "t.check", kListing); }

bool any_error_contains(const CheckResult& r, const std::string& s) {
  for (const std::string& e : r.errors)
    if (e.find(s) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_SUITE("host sass") {

TEST_CASE("normaliser: the real fixture dump of audit_fixture.cu") {
  const std::vector<SassFunction> fns = parse_dump_sass(fixture("audit_fixture_sm90a.sass.txt"));
  REQUIRE(fns.size() == 1);
  CHECK(fns[0].name == "flashptx_audit_fixture");
  CHECK(fns[0].arch == "sm_90a");
  const Listing l = normalize(fns[0]);
  CHECK(l.instruction_count == 32);  // 34 printed, less the self-loop BRA and the NOP
  const std::string text = [&] { std::string s; for (auto& x : l.lines) s += x + "\n"; return s; }();
  CHECK(text.find("    BAR.SYNC.DEFER_BLOCKING 0x1, 0x80\n") != std::string::npos);
  CHECK(text.find("    @!UP SYNCS.EXCH.64 URZ, [UR], UR\n") != std::string::npos);
  CHECK(text.find("    STG.E desc[UR][R.64], R\n") != std::string::npos);
  CHECK(text.find("NOP") == std::string::npos);
  CHECK(text.find("0x200") == std::string::npos);
  CHECK(l.lines.back() == "    BRA L0");
  // The out-of-line retry loop: the label before its target, branches to labels.
  CHECK(text.find("    @!P BRA L1\nL0:\n    STG.E") != std::string::npos);
  CHECK(text.find("L1:\n    SYNCS.PHASECHK.TRANS64.TRYWAIT P, [UR], R\n    @!P BRA L1\n") != std::string::npos);
}

TEST_CASE("normaliser: registers, predicates, immediates, .reuse") {
  CHECK(normalize_instruction("ISETP.NE.AND P0, PT, R5.reuse, RZ, PT") == "ISETP.NE.AND P, PT, R, RZ, PT");
  CHECK(normalize_instruction("@!UP0 UIADD3 UR4, -UR4, 0x100000, URZ") == "@!UP UIADD3 UR, -UR, #, URZ");
  CHECK(normalize_instruction("@P1 EXIT") == "@P EXIT");
  CHECK(normalize_instruction("@!PT LDS RZ, [RZ]") == "@!PT LDS RZ, [RZ]");
  CHECK(normalize_instruction("LDC R1, c[0x0][0x28]") == "LDC R, c[#][#]");
  CHECK(normalize_instruction("FMUL R3, R2, 1.4426950216293334961") == "FMUL R, R, #");
  CHECK(normalize_instruction("IMAD.WIDE.U32 R2, R5, 0x4, R2") == "IMAD.WIDE.U32 R, R, #, R");
  CHECK(normalize_instruction("HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT, gsb0") ==
        "HGMMA.64x128x16.F32.BF16 R, gdesc[UR], RZ, !UPT, gsb0");
  CHECK(normalize_instruction("BSYNC B0") == "BSYNC B");
}

TEST_CASE("normaliser: protocol immediates are kept, memory offsets are not") {
  CHECK(normalize_instruction("USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xe8") == "USETMAXREG.TRY_ALLOC.CTAPOOL UP, 0xe8");
  CHECK(normalize_instruction("USETMAXREG.DEALLOC.CTAPOOL 0x28") == "USETMAXREG.DEALLOC.CTAPOOL 0x28");
  CHECK(normalize_instruction("BAR.ARV 0x2, 0x100") == "BAR.ARV 0x2, 0x100");
  CHECK(normalize_instruction("WARPGROUP.DEPBAR.LE gsb0, 0x1") == "WARPGROUP.DEPBAR.LE gsb0, 0x1");
  CHECK(normalize_instruction("DEPBAR.LE SB0, 0x2") == "DEPBAR.LE SB0, 0x2");
  CHECK(normalize_instruction("SYNCS.ARRIVE.TRANS64 RZ, [UR4+0x8], 0x4000") == "SYNCS.ARRIVE.TRANS64 RZ, [UR+#], 0x4000");
}

TEST_CASE("normaliser: labels numbered by target address, NOP padding and self-loop dropped") {
  const std::string d = dump_of("k", {"@P0 BRA 0x40",  // 0x00
                                      "BSSY B0, 0x30",  // 0x10
                                      "BRA 0x10",       // 0x20
                                      "NOP",            // 0x30 (target: label moves to 0x40)
                                      "EXIT",           // 0x40
                                      "BRA 0x50",       // 0x50 self-loop
                                      "NOP", "NOP"});
  const Listing l = normalize(parse_dump_sass(d).at(0));
  const std::vector<std::string> want = {"    @P BRA L2", "L0:", "    BSSY B, L1", "    BRA L0",
                                         "L1:", "L2:", "    EXIT"};
  CHECK(l.lines == want);
  CHECK(l.instruction_count == 4);
}

TEST_CASE("normaliser: a listing of zero instructions is an error") {
  CHECK_THROWS_AS(normalize(parse_dump_sass(dump_of("empty", {}))[0]), std::runtime_error);
  CHECK_THROWS_AS(normalize(parse_dump_sass(dump_of("pad", {"NOP", "BRA 0x10", "NOP"}))[0]), std::runtime_error);
  try {
    normalize(parse_dump_sass(dump_of("empty_kernel", {}))[0]);
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("empty_kernel") != std::string::npos);
    CHECK(std::string(e.what()).find("zero instructions") != std::string::npos);
  }
}

TEST_CASE("resources: parsed from the fixture; spills and local memory detected") {
  const auto res = parse_resource_usage(fixture("audit_fixture_sm90a.res.txt"));
  REQUIRE(res.count("flashptx_audit_fixture") == 1);
  const Resources& r = res.at("flashptx_audit_fixture");
  CHECK(r.get("REG") == 10);
  CHECK(r.get("SHARED") == 1032);
  CHECK(r.get("CONSTANT[0]") == 536);
  const Listing clean = normalize(parse_dump_sass(fixture("audit_fixture_sm90a.sass.txt"))[0]);
  CHECK(spill_reason(r, clean).empty());

  const auto spilled = parse_resource_usage(" Function k:\n  REG:255 STACK:16 SHARED:0 LOCAL:8 CONSTANT[0]:536\n");
  CHECK(spill_reason(spilled.at("k"), clean).find("LOCAL:8") != std::string::npos);
  CHECK(spill_reason(spilled.at("k"), clean).find("STACK:16") != std::string::npos);
  Listing with_stl = clean;
  with_stl.lines.push_back("    STL [R+#], R");
  with_stl.lines.push_back("    @P LDL R, [R+#]");
  const std::string why = spill_reason(r, with_stl);
  CHECK(why.find("1 LDL") != std::string::npos);
  CHECK(why.find("1 STL") != std::string::npos);
}

TEST_CASE("file names: plain names kept, long or unsafe names sanitised deterministically") {
  CHECK(golden_file_stem("flashptx_audit_fixture") == "flashptx_audit_fixture");
  CHECK(golden_file_stem("_Z3fooILi128EEvPf") == "_Z3fooILi128EEvPf");
  const std::string odd = "void foo<128, (bar)1>(float*)";
  const std::string s = golden_file_stem(odd);
  CHECK(s == golden_file_stem(odd));
  CHECK(s.find_first_of(" <>(),*/") == std::string::npos);
  CHECK(s != golden_file_stem("void foo<128, (bar)2>(float*)"));
  const std::string long_name(300, 'a');
  CHECK(golden_file_stem(long_name).size() == 160 + 17);
}

TEST_CASE("diff: identical inputs give nothing; a change shows -/+ with context") {
  const std::vector<std::string> a = {"a", "b", "c", "d", "e", "f", "g", "h"};
  CHECK(render_diff(a, a, "g", "c").empty());
  std::vector<std::string> b = a;
  b[4].assign(1, 'E');
  b.insert(b.begin() + 1, "x");
  const std::string d = render_diff(a, b, "golden", "current", 1);
  CHECK(d.find("--- golden\n+++ current\n") == 0);
  CHECK(d.find("-e\n+E\n") != std::string::npos);
  CHECK(d.find(" a\n+x\n b\n") != std::string::npos);
  CHECK(d.find(" h\n") == std::string::npos);  // outside the context
  // The script is minimal and replays a into b.
  int edits = 0;
  std::vector<std::string> replay_a, replay_b;
  for (const DiffLine& l : diff_lines(a, b)) {
    if (l.op != ' ') ++edits;
    if (l.op != '+') replay_a.push_back(l.text);
    if (l.op != '-') replay_b.push_back(l.text);
  }
  CHECK(edits == 3);
  CHECK(replay_a == a);
  CHECK(replay_b == b);
  CHECK(diff_lines({}, {"x"}).size() == 1);
  CHECK(diff_lines({"x"}, {}).size() == 1);
}

TEST_CASE("checker: CHECK and CHECK-LABEL pass in order, fail out of order with the search start") {
  CHECK(check("CHECK: SYNCS.EXCH.64\nCHECK: BAR.SYNC\nCHECK-LABEL: L1:\nCHECK: BRA L0\n").ok);
  const CheckResult r = check("// comment\nCHECK: SYNCS.ARRIVE\nCHECK: SYNCS.EXCH.64\n");
  CHECK_FALSE(r.ok);
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].find("t.check:3: CHECK: SYNCS.EXCH.64: not found") != std::string::npos);
  CHECK(r.errors[0].find("search started at listing line 5: SYNCS.PHASECHK") != std::string::npos);
}

TEST_CASE("checker: CHECK-NEXT") {
  CHECK(check("CHECK: SYNCS.ARRIVE\nCHECK-NEXT: TRYWAIT\nCHECK-NEXT: @!P BRA\nCHECK-NEXT: STG.E\n").ok);  // skips L0:
  const CheckResult r = check("CHECK: SYNCS.EXCH.64\nCHECK-NEXT: SYNCS.ARRIVE\n");
  CHECK_FALSE(r.ok);
  CHECK(any_error_contains(r, "t.check:2: CHECK-NEXT: SYNCS.ARRIVE: not on the next instruction line"));
  CHECK(any_error_contains(r, "listing line 3: BAR.SYNC"));
}

TEST_CASE("checker: CHECK-NOT between matches and up to the end") {
  CHECK(check("CHECK: SYNCS.EXCH.64\nCHECK-NOT: TRYWAIT\nCHECK: SYNCS.ARRIVE\n").ok);
  CHECK(check("CHECK: BRA L0\nCHECK-NOT: SYNCS\n").ok);
  const CheckResult r = check("CHECK: SYNCS.EXCH.64\nCHECK-NOT: BAR.SYNC\nCHECK: SYNCS.ARRIVE\n");
  CHECK_FALSE(r.ok);
  CHECK(any_error_contains(r, "t.check:2: CHECK-NOT: BAR.SYNC: found at listing line 3"));
  CHECK_FALSE(check("CHECK: STG.E\nCHECK-NOT: TRYWAIT\n").ok);
}

TEST_CASE("checker: CHECK-COUNT-N is exactly N from the current position") {
  CHECK(check("CHECK-COUNT-2: TRYWAIT\n").ok);
  CHECK(check("CHECK: STG.E\nCHECK-COUNT-1: TRYWAIT\nCHECK-NEXT: @!P BRA L1\n").ok);
  const CheckResult r = check("CHECK-COUNT-3: TRYWAIT\n");
  CHECK_FALSE(r.ok);
  CHECK(any_error_contains(r, "expected exactly 3 matching lines, found 2"));
  CHECK_FALSE(check("CHECK-COUNT-1: TRYWAIT\n").ok);
}

TEST_CASE("checker: {{regex}} patterns, and malformed files") {
  CHECK(check("CHECK: BAR.SYNC{{(\\.DEFER_BLOCKING)?}} 0x1, 0x{{[0-9a-f]+}}\n").ok);
  CHECK(check("CHECK: @!P BRA L{{[0-9]+}}\n").ok);
  CHECK_FALSE(check("CHECK: BAR.SYNC{{.*}} 0x2\n").ok);
  CHECK(check("CHECK: R.64\n").ok);  // '.' is literal outside {{ }}
  CHECK_FALSE(check("CHECK: RX64\n").ok);
  CHECK_FALSE(check("CHECK: {{[}}\n").ok);
  CHECK_FALSE(check("no directives here\n").ok);
  CHECK_FALSE(check("CHECK:\n").ok);
}

TEST_CASE("checker: CHECK-DEFINE and [[NAME]]") {
  CHECK(check("CHECK-DEFINE: BAR = BAR.SYNC.DEFER_BLOCKING\nCHECK-DEFINE: N=0x80\nCHECK: [[BAR]] 0x1, [[N]]\n").ok);
  // The value is literal text that may hold {{regex}}; a define reaches every later directive.
  CHECK(check("CHECK-DEFINE: WAIT = TRANS64.{{TRY}}WAIT\nCHECK: SYNCS.ARRIVE\nCHECK-NEXT: [[WAIT]]\n"
              "CHECK-NOT: [[WAIT]]\nCHECK: STG.E\n").ok);
  const CheckResult wrong = check("CHECK-DEFINE: N = 0x100\nCHECK: BAR.SYNC.DEFER_BLOCKING 0x1, [[N]]\n");
  CHECK_FALSE(wrong.ok);
  CHECK(any_error_contains(wrong, "t.check:2: CHECK: BAR.SYNC.DEFER_BLOCKING 0x1, 0x100: not found"));
  // Used before (or without) its definition, defined twice, or malformed: errors naming the line.
  const CheckResult undefined = check("CHECK: [[BAR]]\nCHECK-DEFINE: BAR = BAR.SYNC\n");
  CHECK_FALSE(undefined.ok);
  CHECK(any_error_contains(undefined, "t.check:1: CHECK: [[BAR]]: [[BAR]] is not defined"));
  CHECK(any_error_contains(check("CHECK-DEFINE: A = 1\nCHECK-DEFINE: A = 2\nCHECK: EXIT\n"),
                           "t.check:2: CHECK-DEFINE: A is already defined"));
  CHECK(any_error_contains(check("CHECK-DEFINE: no equals sign\nCHECK: EXIT\n"), "expected NAME = value"));
  // "[[" not around an identifier is literal (no listing line holds it, so the CHECK fails).
  CHECK_FALSE(check("CHECK: [[R.64]]\n").ok);
}

TEST_CASE("checker: CHECK-INCLUDE, relative to the including file, errors naming the included file") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("flashptx-check-" + std::to_string(getpid()));
  fs::create_directories(dir / "sub");
  struct Cleanup {
    fs::path d;
    ~Cleanup() { std::error_code ec; fs::remove_all(d, ec); }
  } cleanup{dir};
  auto write = [&](const fs::path& p, const std::string& text) { std::ofstream(p) << text; };
  // A shared protocol with one kernel-specific name; a nested include from the subfolder.
  write(dir / "sub" / "proto.check.inc", "# shared\nCHECK: SYNCS.EXCH.64\nCHECK: BAR.SYNC.DEFER_BLOCKING 0x1, [[N]]\n"
                                         "CHECK-INCLUDE: tail.check.inc\n");
  write(dir / "sub" / "tail.check.inc", "CHECK-NOT: TRYWAIT\nCHECK: SYNCS.ARRIVE\n");
  const std::string main_name = (dir / "k.check").string();
  CHECK(run_checks("CHECK-DEFINE: N = 0x80\nCHECK-INCLUDE: sub/proto.check.inc\nCHECK: EXIT\n", main_name, kListing).ok);
  // A failing directive inside the included file is reported at that file's line.
  const CheckResult r = run_checks("CHECK-DEFINE: N = 0x100\nCHECK-INCLUDE: sub/proto.check.inc\n", main_name, kListing);
  CHECK_FALSE(r.ok);
  CHECK(any_error_contains(r, (dir / "sub" / "proto.check.inc").string() +
                                  ":3: CHECK: BAR.SYNC.DEFER_BLOCKING 0x1, 0x100: not found"));
  // An included CHECK-NOT is pending until the next positive match, which may be the includer's.
  write(dir / "not.check.inc", "CHECK-NOT: TRYWAIT\n");
  const CheckResult n = run_checks("CHECK: SYNCS.ARRIVE\nCHECK-INCLUDE: not.check.inc\nCHECK: STG.E\n", main_name, kListing);
  CHECK_FALSE(n.ok);
  CHECK(any_error_contains(n, "not.check.inc:1: CHECK-NOT: TRYWAIT: found at listing line 5"));
  // Missing file; an include of itself ends at the depth limit.
  CHECK(any_error_contains(run_checks("CHECK-INCLUDE: nosuch.check.inc\n", main_name, kListing),
                           "k.check:1: CHECK-INCLUDE: nosuch.check.inc: cannot read"));
  // The path may name a define: the kernel's check file chooses a variant of a section. The
  // variant that holds passes, the other fails at its own line; an undefined name is an error.
  write(dir / "step_a.check.inc", "CHECK: SYNCS.ARRIVE\n");
  write(dir / "step_b.check.inc", "CHECK: NOSUCH\n");
  CHECK(run_checks("CHECK-DEFINE: V = a\nCHECK-INCLUDE: step_[[V]].check.inc\n", main_name, kListing).ok);
  CHECK(any_error_contains(run_checks("CHECK-DEFINE: V = b\nCHECK-INCLUDE: step_[[V]].check.inc\n", main_name, kListing),
                           "step_b.check.inc:1: CHECK: NOSUCH: not found"));
  CHECK(any_error_contains(run_checks("CHECK-INCLUDE: step_[[W]].check.inc\n", main_name, kListing),
                           "[[W]] is not defined"));
  write(dir / "loop.check.inc", "CHECK: EXIT\nCHECK-INCLUDE: loop.check.inc\n");
  CHECK(any_error_contains(run_checks("CHECK-INCLUDE: loop.check.inc\n", main_name, kListing),
                           "includes nested deeper than"));
}

}  // TEST_SUITE
