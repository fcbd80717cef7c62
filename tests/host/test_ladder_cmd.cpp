// `flashptx ladder` (tools/flashptx/ladder.h): the attention ladder's table, its SASS facts counted in
// the goldens, the results file, the lessons (SASS diffs), and the README's table. Printed values are
// compared, not only the presence of a table.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "tests/embedded.h"
#include "tests/host/file_text.h"
#include "tools/flashptx/commands.h"
#include "tools/flashptx/ladder.h"

using flashptx_test::file_text;

namespace {

using namespace flashptx::cli;
namespace fs = std::filesystem;

const std::string kGoldens = std::string(FLASHPTX_ROOT) + "/sass_golden";

// The table's row of rung `id` ("1", ..., "fa3"): the line that starts with it and a space.
std::string row_of(const std::string& table, const std::string& id) {
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(id + " ", 0) == 0) return line;
  return "";
}

}  // namespace

TEST_SUITE("host ladder") {

TEST_CASE("SASS facts: opcodes counted by prefix, predicates skipped, labels and header not counted") {
  const std::string listing =
      "# flashptx golden SASS\n"
      "# resources: REG:192 STACK:0 SHARED:1024 LOCAL:0\n"
      "    SYNCS.EXCH.64 URZ, [UR+#], UR\n"
      "    BAR.SYNC.DEFER_BLOCKING 0x0\n"
      "L0:\n"
      "    @!P BAR.ARV 0x2, 0x100\n"
      "    USETMAXREG.TRY_ALLOC.CTAPOOL UP, 0xf0\n"
      "    @P ELECT P, URZ, PT\n"
      "    UTMALDG.4D [UR], [UR]\n"
      "    HGMMA.64x128x16.F32.BF16 R, gdesc[UR], RZ, !UPT\n"
      "    WARPGROUP.DEPBAR.LE gsb0, 0x0\n"
      "    MEMBAR.ALL.CTA\n"
      "    @!P SYNCS.ARRIVE.TRANS64.A1T0 RZ, [UR+#], RZ\n"
      "    EXIT\n";
  const SassFacts f = sass_facts(listing);
  CHECK(f.reg == 192);
  CHECK(f.instructions == 11);
  CHECK(f.hgmma == 1);
  CHECK(f.utmaldg == 1);
  CHECK(f.syncs == 2);
  CHECK(f.bar == 2);  // not WARPGROUP.DEPBAR, not MEMBAR
  CHECK(f.setmaxnreg == 1);
}

TEST_CASE("the results file: RUNG TFLOPS lines, comments skipped, a missing rung is empty") {
  const std::string r = "# 1 999\n1 123.4\nfa3 640.5   # release library\n2\n";
  CHECK(ladder_result(r, "1") == "123.4");
  CHECK(ladder_result(r, "fa3") == "640.5");
  CHECK(ladder_result(r, "2").empty());
  CHECK(ladder_result(r, "3").empty());
}

TEST_CASE("the table from the committed goldens and results file: every rung's counts") {
  const std::string results = file_text(std::string(FLASHPTX_ROOT) + "/tools/ladder/h200_tflops.txt");
  REQUIRE(!results.empty());
  const std::string t = ladder_table(kGoldens, results);
  INFO(t);
  CHECK(t.find("rung  kernel                        REG  INSTR  HGMMA  UTMALDG  SYNCS  BAR  SETMAXNREG TFLOP/s") !=
        std::string::npos);
  // Counts of the goldens as committed (a deliberate regeneration that changes them updates these,
  // and the README's table, together). The TFLOP/s column: the results file's, or "not measured yet".
  struct Want { const char* id; const char* counts; };
  for (const Want w : {Want{"1", "ladder_1_kernel               252   1533     16        0      0    2           0 "},
                       Want{"2", "ladder_2_kernel               193    863     16        6      8    2           0 "},
                       Want{"3", "ladder_3_kernel               192    927     16        6     17    1           2 "},
                       Want{"4", "ladder_4_kernel               168   1571     32        8     21    8           2 "},
                       Want{"fa3", "fa3_fwd_sm90_bf16_d128_n128   168   4086     56        8     84   14           2 "}}) {
    const std::string row = row_of(t, w.id);
    INFO(w.id << ": " << row);
    CHECK(row.find(w.counts) != std::string::npos);
    const std::string measured = ladder_result(results, w.id);
    CHECK(row.find(measured.empty() ? std::string("not measured yet") : measured) != std::string::npos);
  }
  CHECK(t.find("2:   + TMA loads completing on an mbarrier") != std::string::npos);
  CHECK(t.find("(tests/kernels/ladder_3.cu)") != std::string::npos);
}

TEST_CASE("the table: measured values, the 'bought' ratio, a missing golden") {
  const fs::path dir = fs::temp_directory_path() / ("flashptx-ladder-" + std::to_string(getpid()));
  fs::create_directories(dir / "sm_90a");
  auto write = [&](const std::string& kernel, const std::string& body) {
    std::ofstream(dir / "sm_90a" / (kernel + ".sass")) << "# resources: REG:100 STACK:0\n" << body;
  };
  write("ladder_1_kernel", "    HGMMA.64x128x16.F32.BF16 R\n    EXIT\n");
  write("ladder_2_kernel", "    UTMALDG.4D [UR], [UR]\n    SYNCS.PHASECHK.TRANS64.TRYWAIT P\n    EXIT\n");
  write("ladder_3_kernel", "    USETMAXREG.DEALLOC.CTAPOOL 0x18\n");
  write("ladder_4_kernel", "    BAR.SYNC.DEFER_BLOCKING R, 0x100\n");
  const std::string t = ladder_table(dir.string(), "1 100.0\n2 150.0\nfa3 600\n");
  INFO(t);
  CHECK(row_of(t, "1") == "1     ladder_1_kernel               100      2      1        0      0    0           0 100.0             -");
  CHECK(row_of(t, "2") == "2     ladder_2_kernel               100      3      0        1      1    0           0 150.0             x1.50");
  CHECK(row_of(t, "3") == "3     ladder_3_kernel               100      1      0        0      0    0           1 not measured yet  -");
  CHECK(row_of(t, "4") == "4     ladder_4_kernel               100      1      0        0      0    1           0 not measured yet  -");
  CHECK(row_of(t, "fa3") == "fa3   fa3_fwd_sm90_bf16_d128_n128  (no golden)");
  std::string err;
  CHECK(ladder_diff(dir.string(), 5, &err).empty());
  CHECK(err == "cannot read " + (dir / "sm_90a" / "fa3_fwd_sm90_bf16_d128_n128.sass").string());
  err.clear();
  const std::string d = ladder_diff(dir.string(), 2, &err);
  CHECK(err.empty());
  CHECK(d.rfind("rung 1 -> 2: + TMA loads", 0) == 0);
  CHECK(d.find("instructions 2 -> 3, HGMMA 1 -> 0, UTMALDG 0 -> 1, SYNCS 0 -> 1, BAR 0 -> 0, SETMAXNREG 0 -> 0, "
               "REG 100 -> 100\n") != std::string::npos);
  CHECK(d.find("--- ladder_1_kernel.sass\n+++ ladder_2_kernel.sass\n") != std::string::npos);
  CHECK(d.find("\n-    HGMMA.64x128x16.F32.BF16 R\n") != std::string::npos);  // an MMA: not a protocol line
  const std::string tma = "+    UTMALDG.4D [UR], [UR]";
  CHECK(d.find("\n" + tma + std::string(60 - tma.size(), ' ') + "<== TMA\n") != std::string::npos);
  // The summary comes first, before the diff.
  const size_t summary = d.find("the lesson: protocol instructions this rung adds (+) and removes (-)");
  REQUIRE(summary != std::string::npos);
  CHECK(summary < d.find("--- ladder_1_kernel.sass"));
  CHECK(d.find("\n  TMA            +1    -0\n") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("the lessons from the committed goldens: rung 2 adds the TMA loads, rung 3 setmaxnreg, rung 4 the tokens") {
  std::string err;
  const std::string d2 = ladder_diff(kGoldens, 2, &err);
  REQUIRE(err.empty());
  CHECK(d2.find("UTMALDG 0 -> 6, SYNCS 0 -> 8") != std::string::npos);
  CHECK(d2.find("\n+    UTMALDG.4D [UR], [UR]  ") != std::string::npos);
  CHECK(d2.find("\n  TMA            +6    -0\n") != std::string::npos);
  CHECK(d2.find("\n  mbarrier       +8    -0\n") != std::string::npos);
  CHECK(d2.find("\n-    LDG.E.128 R, desc[UR][R.64]\n") != std::string::npos);  // unmarked: a plain load
  const std::string d3 = ladder_diff(kGoldens, 3, &err);
  REQUIRE(err.empty());
  CHECK(d3.find("SETMAXNREG 0 -> 2") != std::string::npos);
  CHECK(d3.find("\n+    USETMAXREG.DEALLOC.CTAPOOL 0x18") != std::string::npos);
  CHECK(d3.find("<== setmaxnreg\n") != std::string::npos);
  const std::string arrive = "+    @!P SYNCS.ARRIVE.TRANS64.A1T0 RZ, [UR+#], RZ";
  CHECK(d3.find("\n" + arrive + std::string(60 - arrive.size(), ' ') + "<== mbarrier\n") != std::string::npos);
  const std::string d4 = ladder_diff(kGoldens, 4, &err);
  REQUIRE(err.empty());
  CHECK(d4.find("HGMMA 16 -> 32") != std::string::npos);
  CHECK(d4.find("\n+    @!P BAR.ARV 0x2, 0x100  ") != std::string::npos);  // the token ring's bootstrap
  CHECK(d4.find("<== named barrier\n") != std::string::npos);
  CHECK(ladder_diff(kGoldens, 5, &err).find("rung 4 -> fa3:") == 0);
  CHECK(ladder_diff(kGoldens, 1, &err).empty());
  CHECK(err == "--diff must be between 2 and 5, got 1");
}

TEST_CASE("flashptx ladder: options") {
  LadderCmdArgs a;
  const char* ok[] = {"--diff", "3"};
  REQUIRE(parse_ladder_args(2, ok, &a).run());
  CHECK(a.diff == 3);
  const char* bad[] = {"--diff", "6"};
  const Parsed p = parse_ladder_args(2, bad, &a);
  CHECK(p.kind == Parsed::kError);
  CHECK(p.text.find("--diff") != std::string::npos);
  const Parsed none = parse_ladder_args(0, nullptr, &a);
  CHECK(none.run());
  CHECK(a.diff == 0);
  CHECK_FALSE(a.bench);
  CHECK(a.iters == 20);
  const char* bench[] = {"--bench", "--iters", "7"};
  REQUIRE(parse_ladder_args(3, bench, &a).run());
  CHECK(a.bench);
  CHECK(a.iters == 7);
  const char* both[] = {"--bench", "--diff", "3"};
  const Parsed pb = parse_ladder_args(3, both, &a);
  CHECK(pb.kind == Parsed::kError);
  CHECK(pb.text.rfind("flashptx ladder: --diff and --bench do not go together\n", 0) == 0);
  const char* alone[] = {"--iters", "7"};
  const Parsed pi = parse_ladder_args(2, alone, &a);
  CHECK(pi.kind == Parsed::kError);
  CHECK(pi.text.rfind("flashptx ladder: --iters goes with --bench\n", 0) == 0);
  const char* zero[] = {"--bench", "--iters", "0"};
  CHECK(parse_ladder_args(3, zero, &a).kind == Parsed::kError);
}

TEST_CASE("flashptx ladder --bench: a result line, its prefix removed, is a results-file line") {
  // 4 * 4 * 16 * 4096^2 * 128 FLOPs in 0.75 ms: 733.0 TFLOP/s.
  const double flops = 4.0 * kBenchBatch * kBenchHeads * static_cast<double>(kBenchSeqlen) * kBenchSeqlen * 128;
  const std::string line = ladder_bench_line("fa3", flops, 0.75);
  CHECK(line == "ladder-tflops: fa3 733.0   (0.750 ms)\n");
  const std::string prefix = "ladder-tflops: ";
  REQUIRE(line.rfind(prefix, 0) == 0);
  CHECK(ladder_result(line.substr(prefix.size()), "fa3") == "733.0");
  CHECK(ladder_result(ladder_bench_line("3", flops, 1.5).substr(prefix.size()), "3") == "366.5");
}

TEST_CASE("README: the ladder table names every rung's kernel with the golden's counts") {
  const std::string readme(flashptx_test::embedded_file("README.md"));
  const size_t at = readme.find("\n## Attention ladder\n");
  REQUIRE(at != std::string::npos);
  const std::string sec = readme.substr(at, readme.find("\n## ", at + 1) - at);
  for (const LadderRung& r : ladder_rungs()) {
    const SassFacts f = sass_facts(file_text(kGoldens + "/sm_90a/" + r.kernel + ".sass"));
    REQUIRE(f.reg > 0);
    const std::string cells = "| " + std::to_string(f.reg) + " | " + std::to_string(f.hgmma) + " | " +
                              std::to_string(f.utmaldg) + " | " + std::to_string(f.syncs) + " | " +
                              std::to_string(f.bar) + " | " + std::to_string(f.setmaxnreg) + " |";
    const size_t row = sec.find("| " + std::string(r.id) + " | `" + r.kernel + "` |");
    INFO(r.kernel << " " << cells);
    REQUIRE(row != std::string::npos);
    CHECK(sec.substr(row, sec.find('\n', row) - row).find(cells) != std::string::npos);
  }
}

}  // TEST_SUITE
