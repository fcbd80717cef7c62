// The subcommands of the `flashptx` command line, one file each in tools/flashptx/.
//
// Each command first parses and validates its whole command line (parse_*_args: no CUDA call, no
// disassembler, no file written), then works. The parse functions are what the host tests call
// (tests/host/test_cli_options.cpp): they return kRun with the arguments filled, kHelp with the
// help text, or kError with the message (options.h has the rules and the wording).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tools/flashptx/options.h"
#include "tools/sass/audit.h"
#include "tools/support/bench.h"

int cmd_run(int argc, char** argv);     // no arguments: flagship forward on a default shape, or the audit summary
int cmd_audit(int argc, char** argv);   // golden-SASS audit (tools/sass/)
int cmd_ledger(int argc, char** argv);  // the protocol tables, from the models (tools/models/)
int cmd_bench(int argc, char** argv);   // side-by-side-ready timing with a JSON manifest
int cmd_trace(int argc, char** argv);   // measured pipeline timeline (instrumented build)
int cmd_ladder(int argc, char** argv);  // the attention ladder's table and SASS lessons
int cmd_kernels(int argc, char** argv); // the kernel table, every field, with registers and shared memory
int cmd_sim(int argc, char** argv);     // one kernel in the PTX simulator (build/libflashptx_sim.so), on any machine

// The no-GPU path of `flashptx`: the flagship forward in the simulator at a small shape
// (tools/flashptx/cmd_sim.cpp). Exit status 0 (PASS) or 1; -1, printing nothing, when the
// simulator library is not there.
int run_flagship_in_simulator();

// Shared by `flashptx` (no arguments, no GPU) and `flashptx audit --summary`: per kernel, registers,
// shared memory, spills and golden status. Implemented by the audit (tools/flashptx/cmd_audit.cpp).
int print_audit_summary();

namespace flashptx::cli {

// `flashptx` itself: the list of commands (what `flashptx --help` prints).
std::string main_help();

// `flashptx bench` and `flashptx run` (the same options; run has the flagship's defaults and
// writes flashptx-run.json unless --out says otherwise).
struct BenchArgs {
  std::vector<bench::Shape> shapes;  // what will be timed, after --grid / the shape options
  std::string grid;
  std::string kernel;                // a forward kernel of the kernel table; empty: the library's rule
  std::string schedule = "auto";     // auto | one-per-tile | persistent
  std::string direction = "fwd";     // fwd | bwd
  bool deterministic = false;        // backward: the deterministic mode
  std::string dq_order = "auto";     // backward, deterministic: auto | ascending | rotated
  int64_t reps = 0, warmup = 5, check_rows = 32;
  double min_ms = 200, mem_cap_gb = 8;
  bool gpu_ref = true, quiet = false;
  std::string out;
  std::string command_line;          // "flashptx bench ..." as given, for the manifest
};
// command: "bench" or "run".
Parsed parse_bench_args(const std::string& command, int argc, const char* const* argv, BenchArgs* a);
// Times a.shapes on the GPU (the GPU must be there: the caller checked). It opens a.out before it
// times anything, so an unwritable path fails at once.
int run_bench(const BenchArgs& a);
// Whether `path` can be written (an existing file that is writable, or a new name in a writable
// directory), without creating or changing anything; on false, *why says what is wrong.
bool can_write(const std::string& path, std::string* why);

struct AuditArgs {
  sass::AuditOptions opt;
  bool summary = false;
};
Parsed parse_audit_args(int argc, const char* const* argv, AuditArgs* a);

struct LedgerArgs {
  std::string section;  // empty: every table
  bool list = false;
};
Parsed parse_ledger_args(int argc, const char* const* argv, LedgerArgs* a);

struct TraceArgs {
  int64_t hdim = 128, seqlen = 8192, batch = 1, heads = 16, heads_kv = 0;  // heads_kv 0: = heads
  std::string dtype = "bf16";
  bool causal = false;
  int64_t ctas = 0;  // render the first N traced CTAs; 0: all
  std::string out = "trace.svg", json_out = "trace.json", from_json;
  std::vector<std::string> more_json;  // further saved traces after --from-json FILE
  std::vector<double> window_us;  // empty, or {T0, T1}
  // --from-json: each saved trace and the SVG it renders to (one: --out; several: FILE's name with
  // .json / .json.gz replaced by .svg, in the current directory).
  struct Render { std::string json, svg; };
  std::vector<Render> renders;
};
Parsed parse_trace_args(int argc, const char* const* argv, TraceArgs* a);

struct LadderCmdArgs {
  int64_t diff = 0;    // 0: the table; N: the lesson of rung N
  bool bench = false;  // time every rung on this machine's GPU (ladder_bench)
  int64_t iters = 20;  // --bench: launches per timed round
};
Parsed parse_ladder_args(int argc, const char* const* argv, LadderCmdArgs* a);

// `flashptx kernels` (tools/flashptx/cmd_kernels.cpp).
struct KernelsArgs {
  std::string kernel;  // substring of the name; empty: every row
  std::string family;  // family_name (src/kernels.h); empty: every family
};
Parsed parse_kernels_args(int argc, const char* const* argv, KernelsArgs* a);
// Registers and the rest of ptxas's resource line of every kernel in the build's audit list, by
// name (cuobjdump --dump-resource-usage); false with *why without the disassembler or the list.
bool read_kernel_resources(std::map<std::string, sass::Resources>* res, std::string* why);
// The table `flashptx kernels` prints: one line per selected row, then a closing line with the
// count; resource columns "-" for a kernel missing from res.
std::string kernels_table(const KernelsArgs& a, const std::map<std::string, sass::Resources>& res);

}  // namespace flashptx::cli
