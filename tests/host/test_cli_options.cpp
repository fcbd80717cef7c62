// The command line, without a GPU: the one option parser (tools/flashptx/options.h) with its exact
// messages and exit codes; each command's parse-and-validate step (parse_*_args, and the commands
// run in-process with their stdout and stderr captured, for the cases that must end before any
// device work); the plain-words reason when there is no GPU; the README's command table against
// each command's --help (the README embedded by the build, tests/embedded.h).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "tests/embedded.h"
#include "tests/host/file_text.h"
#include "tools/flashptx/commands.h"
#include "tools/flashptx/device.h"
#include "tools/flashptx/options.h"
#include "src/kernels.h"

using namespace flashptx::cli;

using flashptx_test::file_text;

namespace {

// argv for the parse functions and the commands.
struct Argv {
  std::vector<std::string> s;
  std::vector<char*> p;
  explicit Argv(std::vector<std::string> args) : s(std::move(args)) {
    for (std::string& x : s) p.push_back(x.data());
    p.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(s.size()); }
  char** argv() { return p.data(); }
};

// A command run in-process with stdout and stderr captured (file descriptors 1 and 2).
struct Run {
  int rc = -1;
  std::string out, err;
};
Run run_captured(const std::function<int()>& f) {
  char out_path[] = "/tmp/flashptx-cli-out-XXXXXX", err_path[] = "/tmp/flashptx-cli-err-XXXXXX";
  const int fo = mkstemp(out_path), fe = mkstemp(err_path);
  REQUIRE(fo >= 0);
  REQUIRE(fe >= 0);
  std::cout.flush();
  std::cerr.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  const int saved_out = dup(1), saved_err = dup(2);
  dup2(fo, 1);
  dup2(fe, 2);
  Run r;
  r.rc = f();
  std::cout.flush();
  std::cerr.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  close(saved_out);
  close(saved_err);
  close(fo);
  close(fe);
  r.out = file_text(out_path);
  r.err = file_text(err_path);
  unlink(out_path);
  unlink(err_path);
  return r;
}
Run run_cmd(int (*cmd)(int, char**), std::vector<std::string> args) {
  Argv a(std::move(args));
  return run_captured([&] { return cmd(a.argc(), a.argv()); });
}

std::string hint(const std::string& command) { return "(flashptx " + command + " --help lists the options)\n"; }
std::string error_text(const std::string& command, const std::string& message) {
  return "flashptx " + command + ": " + message + "\n" + hint(command);
}

// A toy command with one option of each kind.
struct Toy {
  int64_t n = 7, d = 64, big = 1;
  double x = 1;
  bool f = false;
  std::string s = "a", file, pos;
  std::vector<double> w;
  Options o{"toy", "flashptx toy [options]", "A toy."};
  Toy() {
    o.group("things")
        .integer("--n", &n, 1, 100, "an integer in [1, 100]")
        .integer("--big", &big, 1, std::numeric_limits<int64_t>::max(), "an integer of at least 1")
        .integer_of("--d", &d, {64, 128, 256}, "one of three")
        .real("--x", &x, 0.5, 2, "a number in [0.5, 2]")
        .flag("--f", &f, "a flag")
        .text("--s", &s, {"a", "b"}, "a or b")
        .text("--file", &file, {}, "any text", "FILE")
        .reals("--w", &w, 2, 0, 10, "two numbers", "T0 T1")
        .positional("POS", &pos, "one positional");
  }
  Parsed parse(std::vector<std::string> args) {
    Argv a(std::move(args));
    return o.parse(a.argc(), a.argv());
  }
};

void check_error(const Parsed& p, const std::string& command, const std::string& message) {
  CHECK(p.kind == Parsed::kError);
  CHECK(p.exit_code() == 2);
  CHECK(p.text == error_text(command, message));
}

// The option names a help text lists in its option column ("  --name ...").
std::vector<std::string> help_options(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  --", 0) != 0) continue;
    size_t e = 2;
    while (e < line.size() && (std::isalnum(static_cast<unsigned char>(line[e])) || line[e] == '-')) ++e;
    names.push_back(line.substr(2, e - 2));
  }
  return names;
}

// Whether `text` holds `opt` as a whole option name ("--seqlen" not inside "--seqlen-q").
bool mentions(const std::string& text, const std::string& opt) {
  for (size_t p = text.find(opt); p != std::string::npos; p = text.find(opt, p + 1)) {
    const size_t e = p + opt.size();
    if (e >= text.size() || !(std::isalnum(static_cast<unsigned char>(text[e])) || text[e] == '-')) return true;
  }
  return false;
}

std::string help_of(const std::string& command) {
  Argv a({"--help"});
  Parsed p;
  if (command == "bench" || command == "run") {
    BenchArgs b;
    p = parse_bench_args(command, a.argc(), a.argv(), &b);
  } else if (command == "audit") {
    AuditArgs x;
    p = parse_audit_args(a.argc(), a.argv(), &x);
  } else if (command == "ledger") {
    LedgerArgs x;
    p = parse_ledger_args(a.argc(), a.argv(), &x);
  } else if (command == "trace") {
    TraceArgs x;
    p = parse_trace_args(a.argc(), a.argv(), &x);
  } else if (command == "ladder") {
    LadderCmdArgs x;
    p = parse_ladder_args(a.argc(), a.argv(), &x);
  }
  REQUIRE(p.kind == Parsed::kHelp);
  return p.text;
}

Parsed bench(std::vector<std::string> args, BenchArgs* b, const std::string& command = "bench") {
  Argv a(std::move(args));
  return parse_bench_args(command, a.argc(), a.argv(), b);
}
Parsed trace(std::vector<std::string> args, TraceArgs* t) {
  Argv a(std::move(args));
  return parse_trace_args(a.argc(), a.argv(), t);
}

}  // namespace

TEST_SUITE("host cli") {

TEST_CASE("options: values of every type, --name=value, defaults kept, given()") {
  Toy t;
  const Parsed p = t.parse({"--n", "42", "--x=1.5", "--f", "--s", "b", "--file", "-", "--w", "1", "2.5", "--d=128",
                            "--big", "5", "the-positional"});
  REQUIRE_MESSAGE(p.run(), p.text);
  CHECK(p.exit_code() == 0);
  CHECK(t.n == 42);
  CHECK(t.x == 1.5);
  CHECK(t.f);
  CHECK(t.s == "b");
  CHECK(t.file == "-");
  CHECK(t.w == std::vector<double>{1, 2.5});
  CHECK(t.d == 128);
  CHECK(t.pos == "the-positional");
  CHECK(t.o.given("--n"));
  CHECK_FALSE(t.o.given("--help"));
  Toy u;
  REQUIRE(u.parse({}).run());
  CHECK(u.n == 7);
  CHECK(u.s == "a");
  CHECK_FALSE(u.o.given("--n"));
  CHECK(u.o.names() == std::vector<std::string>{"--n", "--big", "--d", "--x", "--f", "--s", "--file", "--w", "--help"});
}

TEST_CASE("options: the exact messages, exit status 2") {
  check_error(Toy().parse({"--bogus"}), "toy", "unknown option '--bogus'");
  check_error(Toy().parse({"--bogus=1"}), "toy", "unknown option '--bogus'");
  check_error(Toy().parse({"-x"}), "toy", "unknown option '-x'");
  check_error(Toy().parse({"--n"}), "toy", "--n needs a value");
  check_error(Toy().parse({"--n", "--f"}), "toy", "--n needs a value");  // not "unknown option"
  check_error(Toy().parse({"--w", "1"}), "toy", "--w needs 2 values (T0 T1)");
  check_error(Toy().parse({"--n", "abc"}), "toy", "--n expects an integer, got 'abc'");
  check_error(Toy().parse({"--n", "12x"}), "toy", "--n expects an integer, got '12x'");
  check_error(Toy().parse({"--n", "99999999999999999999"}), "toy", "--n expects an integer, got '99999999999999999999'");
  check_error(Toy().parse({"--n="}), "toy", "--n expects an integer, got ''");
  check_error(Toy().parse({"--x", "fast"}), "toy", "--x expects a number, got 'fast'");
  check_error(Toy().parse({"--x", "inf"}), "toy", "--x expects a number, got 'inf'");
  check_error(Toy().parse({"--n", "0"}), "toy", "--n must be between 1 and 100, got 0");
  check_error(Toy().parse({"--big", "-1"}), "toy", "--big must be at least 1, got -1");
  check_error(Toy().parse({"--x", "3"}), "toy", "--x must be between 0.5 and 2, got 3");
  check_error(Toy().parse({"--d", "96"}), "toy", "--d must be one of 64, 128, 256, got 96");
  check_error(Toy().parse({"--s", "c"}), "toy", "--s must be one of a, b, got 'c'");
  check_error(Toy().parse({"--w", "1", "11"}), "toy", "--w values must be between 0 and 10, got 11");
  check_error(Toy().parse({"--f=1"}), "toy", "--f takes no value");
  check_error(Toy().parse({"one", "two"}), "toy", "unexpected argument 'two'");
  check_error(Toy().o.error("anything else"), "toy", "anything else");
}

TEST_CASE("options: --help anywhere wins, on stdout with exit 0; errors on stderr with exit 2") {
  Toy t;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--help"}, {"-h"}, {"--bogus", "--help"}, {"--n", "abc", "-h"}}) {
    const Parsed p = t.parse(args);
    CHECK(p.kind == Parsed::kHelp);
    CHECK(p.exit_code() == 0);
    CHECK(p.text == t.o.help());
  }
  const std::string h = t.o.help();
  CHECK(h.rfind("usage: flashptx toy [options]\nA toy.\n\n  POS                     one positional\nthings:\n"
                "  --n N                   an integer in [1, 100]\n", 0) == 0);
  CHECK(h.find("  --d 64|128|256          one of three\n") != std::string::npos);
  CHECK(h.find("  --s a|b                 a or b\n") != std::string::npos);
  CHECK(h.find("  --w T0 T1               two numbers\n") != std::string::npos);
  CHECK(h.find("  --help, -h              this text\n") != std::string::npos);

  const Parsed help = t.parse({"--help"});
  const Run shown = run_captured([&] { return finish(help); });
  CHECK(shown.rc == 0);
  CHECK(shown.out == h);
  CHECK(shown.err.empty());
  const Parsed bad = Toy().parse({"--bogus"});
  const Run refused = run_captured([&] { return finish(bad); });
  CHECK(refused.rc == 2);
  CHECK(refused.out.empty());
  CHECK(refused.err == error_text("toy", "unknown option '--bogus'"));
}

TEST_CASE("every command: --help on stdout, exit 0; a usage error on stderr, exit 2, nothing else done") {
  struct Cmd { const char* name; int (*fn)(int, char**); };
  for (const Cmd c : {Cmd{"run", cmd_run}, Cmd{"audit", cmd_audit}, Cmd{"ledger", cmd_ledger}, Cmd{"bench", cmd_bench},
                      Cmd{"trace", cmd_trace}, Cmd{"ladder", cmd_ladder}}) {
    INFO(c.name);
    const Run h = run_cmd(c.fn, {"--help"});
    CHECK(h.rc == 0);
    CHECK(h.err.empty());
    CHECK(h.out == help_of(c.name));
    CHECK(h.out.rfind(std::string("usage: flashptx "), 0) == 0);
    const Run bad = run_cmd(c.fn, {"--bogus"});
    CHECK(bad.rc == 2);
    CHECK(bad.out.empty());
    CHECK(bad.err == error_text(c.name, "unknown option '--bogus'"));
  }
}

TEST_CASE("run and bench: the issue's cases are refused before any device work") {
  struct Case { int (*fn)(int, char**); const char* cmd; std::vector<std::string> args; std::string message; };
  const std::vector<Case> cases = {
      {cmd_run, "run", {"--bogus"}, "unknown option '--bogus'"},
      {cmd_run, "run", {"--seqlen", "abc"}, "--seqlen expects an integer, got 'abc'"},
      {cmd_run, "run", {"--seqlen"}, "--seqlen needs a value"},
      {cmd_run, "run", {"--seqlen", "--causal"}, "--seqlen needs a value"},
      {cmd_run, "run", {"stray"}, "unexpected argument 'stray'"},
      {cmd_bench, "bench", {"--hdim", "96"}, "--hdim must be one of 64, 128, 256, got 96"},
      {cmd_bench, "bench", {"--batch", "-1"}, "--batch must be at least 1, got -1"},
      {cmd_bench, "bench", {"--heads", "70000"}, "--heads must be between 1 and 65535, got 70000"},
      {cmd_bench, "bench", {"--dtype", "fp8"}, "--dtype must be one of bf16, fp16, got 'fp8'"},
      {cmd_bench, "bench", {"--heads", "16", "--heads-kv", "5"}, "--heads 16 is not a multiple of --heads-kv 5"},
      {cmd_bench, "bench", {"--grid", "paper"}, "--grid must be one of fa3-grid, got 'paper'"},
      {cmd_bench, "bench", {"--grid", "fa3-grid", "--seqlen", "1024"},
       "--seqlen does not combine with --grid (the grid sets the shapes; --hdim, --dtype and --kernel select among them)"},
      {cmd_bench, "bench", {"--schedule", "sometimes"}, "--schedule must be one of auto, one-per-tile, persistent, got 'sometimes'"},
      {cmd_bench, "bench", {"--direction", "sideways"}, "--direction must be one of fwd, bwd, got 'sideways'"},
      {cmd_bench, "bench", {"--min-ms", "0"}, "--min-ms must be between 1 and 1e+06, got 0"},
      {cmd_bench, "bench", {"--kernel", "fa3_fwd_sm90_bf16_d64_m128", "--hdim", "128"},
       "--kernel fa3_fwd_sm90_bf16_d64_m128 runs head dim 64, not --hdim 128"},
      {cmd_bench, "bench", {"--kernel", "fa3_fwd_sm90_fp16_d256", "--dtype", "bf16"},
       "--kernel fa3_fwd_sm90_fp16_d256 runs fp16, not --dtype bf16"},
      {cmd_bench, "bench", {"--kernel", "fa3_fwd_sm90_bf16_d256", "--schedule", "persistent"},
       "b2 sq8192 sk8192 h16/16 d256 bf16 full: kernel fa3_fwd_sm90_bf16_d256 cannot loop over tiles (schedule persistent)"},
  };
  for (const Case& c : cases) {
    std::string line = c.cmd;
    for (const std::string& a : c.args) line += " " + a;
    INFO(line);
    const Run r = run_cmd(c.fn, c.args);
    CHECK(r.rc == 2);
    CHECK(r.out.empty());
    CHECK(r.err == error_text(c.cmd, c.message));
  }
  // --kernel takes only forward kernels of the kernel table (the traced kernel needs a trace buffer).
  BenchArgs b;
  for (const char* bad : {"nosuch", "fa3_fwd_sm90_bf16_d128_trace"}) {
    const Parsed p = bench({"--kernel", bad}, &b);
    CHECK(p.kind == Parsed::kError);
    CHECK(p.text.rfind("flashptx bench: --kernel must be one of fa3_fwd_sm90_bf16_d64_m128, ", 0) == 0);
    CHECK(p.text.find(std::string(", got '") + bad + "'\n") != std::string::npos);
  }
  // The backward: parsed; its shapes checked as flashptx_bwd will check them, before any device
  // work; forward-only variant options refused.
  REQUIRE(bench({"--direction", "bwd", "--deterministic"}, &b).run());
  CHECK(b.direction == "bwd");
  CHECK(b.deterministic);
  REQUIRE(bench({"--direction", "bwd", "--hdim", "256"}, &b).run());  // d256 has its backward
  CHECK(b.shapes[0].head_dim == 256);
  Parsed q = bench({"--direction", "bwd", "--schedule", "persistent"}, &b);
  CHECK(q.kind == Parsed::kError);
  CHECK(q.text.find("select forward variants") != std::string::npos);
  q = bench({"--deterministic"}, &b);
  CHECK(q.kind == Parsed::kError);
  CHECK(q.text.find("--deterministic is a backward mode") != std::string::npos);
  // The deterministic mode's dQ order: parsed; refused without the mode or for the forward.
  REQUIRE(bench({"--direction", "bwd", "--deterministic", "--dq-order", "ascending"}, &b).run());
  CHECK(b.dq_order == "ascending");
  q = bench({"--direction", "bwd", "--dq-order", "rotated"}, &b);
  CHECK(q.kind == Parsed::kError);
  CHECK(q.text.find("add --deterministic") != std::string::npos);
  q = bench({"--dq-order", "rotated"}, &b);
  CHECK(q.kind == Parsed::kError);
  CHECK(q.text.find("--dq-order is a backward option") != std::string::npos);
  q = bench({"--direction", "bwd", "--deterministic", "--dq-order", "sideways"}, &b);
  CHECK(q.kind == Parsed::kError);
}

TEST_CASE("bench: shapes, variants and defaults as parsed") {
  BenchArgs b;
  REQUIRE(bench({}, &b).run());
  REQUIRE(b.shapes.size() == 1);
  CHECK(b.shapes[0].label() == "b2 sq8192 sk8192 h16/16 d128 bf16 full");
  CHECK(b.kernel.empty());
  CHECK(b.schedule == "auto");
  CHECK(b.direction == "fwd");
  CHECK(b.gpu_ref);
  CHECK(b.out.rfind("bench-", 0) == 0);
  CHECK(b.command_line == "flashptx bench");

  REQUIRE(bench({}, &b, "run").run());
  CHECK(b.out == "flashptx-run.json");

  REQUIRE(bench({"--seqlen", "1000", "--seqlen-k", "3000", "--heads", "8", "--heads-kv", "2", "--hdim", "64",
                 "--dtype", "fp16", "--causal", "--no-gpu-ref", "--out", "x.json", "--reps", "3"},
                &b)
              .run());
  REQUIRE(b.shapes.size() == 1);
  CHECK(b.shapes[0].label() == "b2 sq1000 sk3000 h8/2 d64 fp16 causal");
  CHECK_FALSE(b.gpu_ref);
  CHECK(b.out == "x.json");
  CHECK(b.reps == 3);

  // A forced kernel sets the head dim and dtype; the schedule goes with it.
  REQUIRE(bench({"--kernel", "fa3_fwd_sm90_fp16_d64_m192", "--schedule", "one-per-tile"}, &b).run());
  CHECK(b.shapes[0].head_dim == 64);
  CHECK(b.shapes[0].dtype == "fp16");
  CHECK(b.kernel == "fa3_fwd_sm90_fp16_d64_m192");
  CHECK(b.schedule == "one-per-tile");
  CHECK(b.command_line == "flashptx bench --kernel fa3_fwd_sm90_fp16_d64_m192 --schedule one-per-tile");

  // The grid: 36 points; --hdim, --dtype or --kernel select among them.
  REQUIRE(bench({"--grid", "fa3-grid"}, &b).run());
  CHECK(b.shapes.size() == 36);
  REQUIRE(bench({"--grid", "fa3-grid", "--hdim", "256", "--dtype", "fp16"}, &b).run());
  CHECK(b.shapes.size() == 12);
  for (const auto& s : b.shapes) CHECK((s.head_dim == 256 && s.dtype == "fp16"));
  REQUIRE(bench({"--grid", "fa3-grid", "--kernel", "fa3_fwd_sm90_bf16_d64_m128"}, &b).run());
  CHECK(b.shapes.size() == 12);
  // A schedule some point of the grid cannot run is refused before any device work.
  const Parsed p = bench({"--grid", "fa3-grid", "--schedule", "persistent"}, &b);
  CHECK(p.kind == Parsed::kError);
  CHECK(p.text.find("d256 bf16 full: kernel fa3_fwd_sm90_bf16_d256 cannot loop over tiles") != std::string::npos);
  REQUIRE(bench({"--grid", "fa3-grid", "--hdim", "128", "--schedule", "persistent"}, &b).run());
  CHECK(b.shapes.size() == 12);
}

TEST_CASE("audit and ledger: arguments, filters that match nothing") {
  AuditArgs a;
  {
    Argv v({"--arch", "sm_100a", "--kernel", "umma", "--summary", "--golden-dir", "/g", "--list", "/l"});
    REQUIRE(parse_audit_args(v.argc(), v.argv(), &a).run());
    CHECK(a.opt.arch == "sm_100a");
    CHECK(a.opt.kernel == "umma");
    CHECK(a.summary);
    CHECK(a.opt.golden_dir == "/g");
    CHECK(a.opt.list_file == "/l");
    CHECK_FALSE(a.opt.regenerate);
  }
  const Run arch = run_cmd(cmd_audit, {"--arch", "sm_80"});
  CHECK(arch.rc == 2);
  CHECK(arch.out.empty());
  CHECK(arch.err == error_text("audit", "--arch must be one of sm_90a, sm_100a, got 'sm_80'"));

  LedgerArgs l;
  {
    Argv v({"--list"});
    REQUIRE(parse_ledger_args(v.argc(), v.argv(), &l).run());
    CHECK(l.list);
  }
  {
    Argv v({"0x03"});
    REQUIRE(parse_ledger_args(v.argc(), v.argv(), &l).run());
    CHECK(l.section == "0x03");
  }
  const Run none = run_cmd(cmd_ledger, {"0x99"});
  CHECK(none.rc == 2);
  CHECK(none.err == error_text("ledger", "no table for section 0x99 (flashptx ledger --list lists them)"));
  // Section codes are hex: a bare "11" is 0x11, and both the error and the output say so.
  const Run eleven = run_cmd(cmd_ledger, {"11"});
  CHECK(eleven.rc == 2);
  CHECK(eleven.err ==
        error_text("ledger", "no table for section 0x11 (SECTION is hex: '11' is 0x11; flashptx ledger --list lists them)"));
  const Run six = run_cmd(cmd_ledger, {"6", "--list"});
  CHECK(six.rc == 0);
  CHECK(six.out.rfind("flashptx ledger: SECTION is hex: '6' is 0x06\n0x06 ", 0) == 0);
  const Run hex = run_cmd(cmd_ledger, {"0x0A", "--list"});
  CHECK(hex.rc == 0);
  CHECK(hex.out.rfind("0x0A", 0) == 0);
  const Run word = run_cmd(cmd_ledger, {"zz"});
  CHECK(word.rc == 2);
  CHECK(word.err == error_text("ledger", "'zz' is not a section id (such as 0x03)"));
  CHECK(run_cmd(cmd_ledger, {"0x03", "0x04"}).err == error_text("ledger", "unexpected argument '0x04'"));
  const Run listed = run_cmd(cmd_ledger, {"--list"});
  CHECK(listed.rc == 0);
  CHECK(listed.out.find("0x03") != std::string::npos);
}

TEST_CASE("trace: the traced kernel's shapes only; --from-json takes no GPU option") {
  TraceArgs t;
  REQUIRE(trace({}, &t).run());
  CHECK(t.hdim == 128);
  CHECK(t.heads_kv == 16);
  CHECK(t.out == "trace.svg");
  check_error(trace({"--hdim", "256"}, &t), "trace", "--hdim must be one of 128, 64, got 256");
  // d64 has a traced kernel for causal masks only (the 128-row paired kernel).
  check_error(trace({"--hdim", "64"}, &t), "trace", "no traced kernel for --hdim 64 --dtype bf16 without --causal");
  REQUIRE(trace({"--hdim", "64", "--causal", "--seqlen", "512", "--batch", "4", "--heads", "32"}, &t).run());
  check_error(trace({"--dtype", "fp16"}, &t), "trace", "--dtype must be one of bf16, got 'fp16'");
  check_error(trace({"--window-us", "5"}, &t), "trace", "--window-us needs 2 values (T0 T1)");
  check_error(trace({"--from-json", "t.json", "--window-us", "5", "3"}, &t), "trace", "--window-us needs T0 < T1");
  check_error(trace({"--from-json", "t.json", "--seqlen", "4"}, &t), "trace",
              "--seqlen is for a GPU run; with --from-json the trace is the file's");
  check_error(trace({"--cta", "5"}, &t), "trace", "--cta must be between 0 and 4, got 5");
  check_error(trace({"--heads", "16", "--heads-kv", "3"}, &t), "trace",
              "--heads 16 is not a multiple of --heads-kv 3");
  REQUIRE(trace({"--from-json", "t.json.gz", "--window-us", "0", "12", "--cta", "1", "--out", "o.svg"}, &t).run());
  CHECK(t.from_json == "t.json.gz");
  CHECK(t.window_us == std::vector<double>{0, 12});
  CHECK(t.ctas == 1);
  REQUIRE(t.renders.size() == 1);
  CHECK(t.renders[0].svg == "o.svg");
  // Several saved traces (a shell glob): each renders to an SVG named after it.
  REQUIRE(trace({"--from-json", "tools/trace/a.json.gz", "b.json", "--cta", "1"}, &t).run());
  REQUIRE(t.renders.size() == 2);
  CHECK(t.renders[0].json == "tools/trace/a.json.gz");
  CHECK(t.renders[0].svg == "a.svg");
  CHECK(t.renders[1].json == "b.json");
  CHECK(t.renders[1].svg == "b.svg");
  check_error(trace({"--from-json", "a.json.gz", "b.json", "--out", "o.svg"}, &t), "trace",
              "--out names one SVG, and 2 traces are given: leave --out out (each SVG is named after its trace)");
  check_error(trace({"--from-json", "x/a.json.gz", "y/a.json"}, &t), "trace",
              "'x/a.json.gz' and 'y/a.json' would both render to a.svg");
  check_error(trace({"a.json"}, &t), "trace", "unexpected argument 'a.json' (saved traces follow --from-json)");
}

TEST_CASE("trace --help counts the traced kernels of the kernel table") {
  int traced = 0;
  for (const flashptx::KernelEntry& k : flashptx::kernel_table()) traced += k.family == flashptx::Family::kFa3FwdTraced;
  REQUIRE(traced > 0);
  TraceArgs t;
  const Parsed h = trace({"--help"}, &t);
  CHECK(h.kind == Parsed::kHelp);
  CHECK(h.text.find("GPU run (the " + std::to_string(traced) + " traced kernels of the kernel table)") !=
        std::string::npos);
}

TEST_CASE("trace --from-json FILE.json.gz, the README's re-render, in-process") {
  const std::string_view gz = flashptx_test::embedded_file("tools/trace/h200-d128-s8192-b2-h16.json.gz");
  REQUIRE(gz.size() > 2);
  const auto dir = std::filesystem::temp_directory_path() / ("flashptx-cli-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string in = (dir / "h200-d128-s8192-b2-h16.json.gz").string(), svg = (dir / "steady.svg").string();
  std::ofstream(in, std::ios::binary).write(gz.data(), static_cast<std::streamsize>(gz.size()));
  const Run r = run_cmd(cmd_trace, {"--from-json", in, "--out", svg, "--cta", "1", "--window-us", "300", "312"});
  CHECK(r.rc == 0);
  INFO(r.out << r.err);
  CHECK(r.out.rfind("b2 s8192 h16/16 d128 bf16 non-causal (clock axis at 1980 MHz)\n", 0) == 0);
  CHECK(r.out.find("0    0             650.22     68.7") != std::string::npos);
  CHECK(r.out.find("SVG written to " + svg + "\n") != std::string::npos);
  CHECK(file_text(svg).rfind("<svg", 0) == 0);
  // The committed trace's lanes overflowed the buffer: one line says so, not one per lane.
  CHECK(r.err == "flashptx trace: 3 of 3 lanes stamped more records than the buffer keeps (up to 13328, kept 4096): "
                 "their timelines end at the last kept record\n");
  const Run missing = run_cmd(cmd_trace, {"--from-json", (dir / "none.json").string()});
  CHECK(missing.rc == 1);
  CHECK(missing.err == "flashptx trace: cannot read " + (dir / "none.json").string() + "\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("no GPU: the reason in plain words, not the runtime's 'driver version is insufficient'") {
  CHECK(no_gpu_reason(cudaErrorInsufficientDriver, 0, 0, 13000) ==
        "no NVIDIA driver found (libcuda.so.1 is not installed or cannot be loaded), so no GPU to run on");
  CHECK(no_gpu_reason(cudaErrorInsufficientDriver, 0, 12040, 13000) ==
        "the NVIDIA driver supports CUDA 12.4, older than the CUDA 13.0 runtime of this build: update the driver");
  CHECK(no_gpu_reason(cudaErrorNoDevice, 0, 13000, 13000) ==
        "no NVIDIA GPU found (the driver is installed but sees no device)");
  CHECK(no_gpu_reason(cudaSuccess, 0, 13000, 13000) == "no NVIDIA GPU found (the driver is installed but sees no device)");
  CHECK(no_gpu_reason(cudaErrorDevicesUnavailable, 0, 13000, 13000).rfind("the CUDA runtime cannot use the GPU: ", 0) == 0);
}

TEST_CASE("README: the command table lists every option of every command's --help") {
  const std::string readme(flashptx_test::embedded_file("README.md"));
  REQUIRE_MESSAGE(!readme.empty(), "README.md is not embedded in this binary (the Makefile's EMBED_FILES)");
  const size_t at = readme.find("\n## The command line\n");
  REQUIRE(at != std::string::npos);
  const size_t end = readme.find("\n## ", at + 1);
  std::vector<std::string> rows;  // the table's rows
  std::istringstream in(readme.substr(at, end - at));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("| `flashptx", 0) == 0) rows.push_back(line);
  REQUIRE(!rows.empty());
  // A command's rows: those whose first cell names it; run's row points at bench's options.
  auto rows_of = [&](const std::string& c) {
    std::string text;
    for (const std::string& r : rows) {
      const std::string cell = r.substr(0, r.find(" | "));
      if (cell.find("`flashptx " + c + " ") != std::string::npos || cell.find("`flashptx " + c + "`") != std::string::npos)
        text += r + "\n";
    }
    return text;
  };
  const std::string main = main_help();
  for (const std::string c : {"run", "audit", "ledger", "bench", "trace", "ladder"}) {
    INFO("flashptx " << c);
    CHECK(main.find(" " + c + " ") != std::string::npos);
    std::string mine = rows_of(c);
    REQUIRE(!mine.empty());
    if (c == "run") {
      CHECK(mine.find("[bench options]") != std::string::npos);
      mine += rows_of("bench");
    }
    const std::vector<std::string> opts = help_options(help_of(c));
    CHECK(!opts.empty());
    for (const std::string& o : opts) {
      if (o == "--help") continue;  // every command's; said once above the table
      CHECK_MESSAGE(mentions(mine, o), o << " (in `flashptx " << c << " --help`) is missing from the README's row:\n"
                                         << mine);
    }
  }
  CHECK(readme.substr(at, end - at).find("`--help`") != std::string::npos);
}

}  // TEST_SUITE

TEST_SUITE("nogpu cli") {

TEST_CASE("no sm_90 GPU: bench, ladder --bench and trace say why in one line; run says why, then the flagship in the simulator") {
  const Gpu g = probe_gpu();
  REQUIRE_FALSE(g.hopper);
  CHECK(g.why.find("insufficient") == std::string::npos);
  const Run b = run_cmd(cmd_bench, {"--seqlen", "1024", "--quiet"});
  CHECK(b.rc == 1);
  CHECK(b.out.empty());
  CHECK(b.err == "flashptx bench: " + g.why + "; nothing was timed\n");
  const Run lb = run_cmd(cmd_ladder, {"--bench"});
  CHECK(lb.rc == 1);
  CHECK(lb.out.empty());
  CHECK(lb.err == "flashptx ladder --bench: " + g.why + "; nothing was timed\n");
  const Run t = run_cmd(cmd_trace, {});
  CHECK(t.rc == 1);
  CHECK(t.err == "flashptx trace: " + g.why + "; `flashptx trace --from-json FILE` renders a saved trace\n");
  // An unwritable --out fails before any work, GPU or not.
  const Run unwritable = run_cmd(cmd_bench, {"--seqlen", "1024", "--out", "/nonexistent/dir/b.json"});
  CHECK(unwritable.rc == 1);
  CHECK(unwritable.out.empty());
  CHECK(unwritable.err ==
        "flashptx bench: cannot write --out /nonexistent/dir/b.json: the directory /nonexistent/dir does not exist; "
        "nothing was timed\n");
  // With no options: the probe, the reason, then the flagship forward in the PTX simulator
  // (build/libflashptx_sim.so, tools/flashptx/cmd_sim.cpp), PASS; without that library, the audit summary.
  const std::string probe = "flashptx: looking for a Hopper GPU (flashptx --help lists the commands)\n";
  const Run r = run_cmd(cmd_run, {});
  CHECK((r.rc == 0 || r.rc == 1));
  CHECK(r.out.rfind(probe + "flashptx: " + g.why + ". The flagship forward runs in the PTX simulator instead.\n", 0) == 0);
  CHECK((r.out.find("\nPASS\n") != std::string::npos || r.out.find("\naudit: ") != std::string::npos));
  // With options (they are the GPU run's): the audit summary, saying first what the slow part does.
  const Run ro = run_cmd(cmd_run, {"--seqlen", "1024"});
  CHECK(ro.out.rfind(probe + "flashptx: " + g.why + ". The kernels are compiled and audited here, not run.\n"
                     "(the options given are for the GPU run; nothing else uses them)\n"
                     "Audit summary of the built kernels (flashptx audit for the full check): disassembling the ",
                     0) == 0);
  CHECK(ro.out.find("\naudit: ") != std::string::npos);
}

TEST_CASE("can_write: an existing writable file, a new name in a writable directory; not a missing directory") {
  std::string why;
  const std::string dir = std::filesystem::temp_directory_path().string();
  CHECK(can_write(dir + "/flashptx-can-write-" + std::to_string(getpid()) + ".json", &why));
  CHECK_FALSE(std::filesystem::exists(dir + "/flashptx-can-write-" + std::to_string(getpid()) + ".json"));  // nothing made
  CHECK_FALSE(can_write("/nonexistent/x.json", &why));
  CHECK(why == "the directory /nonexistent does not exist");
  CHECK(can_write("relative-name.json", &why));  // the current directory
}

}  // TEST_SUITE

TEST_SUITE("audit_sm90 cli") {

// The goldens of both architectures in the source tree.
size_t golden_count() {
  bool exists = false;
  return flashptx::sass::golden_kernel_names(flashptx::sass::AuditOptions().golden_dir, "", &exists).size();
}

TEST_CASE("audit --kernel that matches nothing: one line, exit 2; --summary differs from the full report") {
  const Run none = run_cmd(cmd_audit, {"--kernel", "nosuch"});
  CHECK(none.rc == 2);
  CHECK(none.out.empty());
  CHECK(none.err == "flashptx audit: no kernel name contains 'nosuch' (the " +
                     std::to_string(golden_count()) + " goldens in " + flashptx::sass::AuditOptions().golden_dir +
                     "/ name the audited kernels: flashptx audit --summary lists them)\n");
  const Run dir = run_cmd(cmd_audit, {"--golden-dir", "/nonexistent/g"});
  CHECK(dir.rc == 2);
  CHECK(dir.err == "flashptx audit: the golden directory /nonexistent/g does not exist\n");
  const Run full = run_cmd(cmd_audit, {"--arch", "sm_90a", "--kernel", "fa3_fwd_sm90_bf16_d128"});
  const Run summary = run_cmd(cmd_audit, {"--arch", "sm_90a", "--kernel", "fa3_fwd_sm90_bf16_d128", "--summary"});
  CHECK(full.rc == 0);
  CHECK(summary.rc == 0);
  CHECK(full.out.find("note: toolchain: ") != std::string::npos);
  CHECK(summary.out.find("note:") == std::string::npos);
  CHECK(summary.out.find("fa3_fwd_sm90_bf16_d128_n128") != std::string::npos);
  // the plain d128 kernel, its paired causal twin, and their traced builds
  CHECK(summary.out.find("fa3_fwd_sm90_bf16_d128_n128_paired") != std::string::npos);
  CHECK(summary.out.find("fa3_fwd_sm90_bf16_d128_paired_trace") != std::string::npos);
  CHECK(summary.out.find("audit: 4 kernels, 0 failing, 0 other errors: PASS\n") != std::string::npos);
}

}  // TEST_SUITE
