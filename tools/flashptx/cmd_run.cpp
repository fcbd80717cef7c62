// `flashptx` with no arguments (or `flashptx run [bench options]`): the main job.
// With a Hopper GPU: the flagship FA3 forward (bf16, head dim 128, batch 2 x seqlen 8192 x 16 heads
// unless options say otherwise), its error against the fp64 reference on sampled rows and against
// the GPU reference on every element, and its TFLOP/s (the `flashptx bench` path, one shape).
// Without one: says why in one line, then, with no options, runs the flagship forward in the PTX
// simulator (build/libflashptx_sim.so: tools/flashptx/cmd_sim.cpp) at a small shape; with options, or
// where the simulator library is not built, prints the audit summary of the built kernels.
// It says what it is doing before each slow step (the GPU probe, the disassembly).
// The options are checked first, GPU or not.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tools/flashptx/commands.h"
#include "tools/flashptx/device.h"

namespace flashptx::cli {

std::string main_help() {
  return "usage: flashptx [COMMAND] [options]      (flashptx COMMAND --help: the command's options)\n"
         "  (none), run  the flagship FA3 forward on a default shape when a Hopper GPU is present\n"
         "               (error against the fp64 reference, TFLOP/s); otherwise say why and print\n"
         "               the audit summary of the built kernels. run takes the options of bench\n"
         "  audit        golden-SASS audit of every built kernel (--regenerate rewrites the goldens)\n"
         "  ledger       the protocol tables (docs/PROTOCOLS.md), computed by the models\n"
         "  bench        time the forward on a shape or a named grid (--grid fa3-grid), with a\n"
         "               forced kernel or schedule if asked; JSON manifest\n"
         "  trace        measured pipeline timeline of the instrumented forward kernel, as SVG;\n"
         "               --from-json re-renders a saved trace without a GPU\n"
         "  ladder       the attention ladder: per rung what it adds, SASS facts, TFLOP/s;\n"
         "               --diff N prints the SASS lesson of rung N\n"
         "  kernels      the kernel table: every kernel's fields and protocol switches, registers,\n"
         "               static and dynamic shared memory (no GPU needed)\n"
         "  sim          one kernel in the PTX simulator on the CPU: error against fp64, hazard and\n"
         "               deadlock report, instructions/s; --list names the kernels it runs\n";
}

}  // namespace flashptx::cli

namespace {

// The audit list's object count, for the line that says what the slow part is doing.
size_t audited_objects() {
  std::vector<std::pair<std::string, std::string>> entries;
  std::string why;
  return flashptx::sass::read_audit_list(flashptx::sass::AuditOptions().list_file, &entries, &why) ? entries.size() : 0;
}

}  // namespace

int cmd_run(int argc, char** argv) {
  using namespace flashptx::cli;
  BenchArgs a;
  const Parsed p = parse_bench_args("run", argc, argv, &a);
  if (!p.run()) return finish(p);
  std::printf("flashptx: looking for a Hopper GPU (flashptx --help lists the commands)\n");
  std::fflush(stdout);
  const Gpu g = probe_gpu();
  if (g.hopper) {
    std::string why;
    if (!can_write(a.out, &why)) {
      std::fprintf(stderr, "flashptx run: cannot write --out %s: %s; nothing was timed\n", a.out.c_str(), why.c_str());
      return 1;
    }
    std::printf("flashptx: flagship FA3 forward on %s (`flashptx run --help` for the options)\n", g.name.c_str());
    std::fflush(stdout);
    return run_bench(a);
  }
  if (argc == 0) {  // the main job anyway, in the PTX simulator (when build/libflashptx_sim.so is there)
    std::printf("flashptx: %s. The flagship forward runs in the PTX simulator instead.\n", g.why.c_str());
    std::fflush(stdout);
    if (const int rc = run_flagship_in_simulator(); rc >= 0) return rc;
    std::printf("(the simulator library is not built: `make sim-exec`)\n");
  }
  std::printf("flashptx: %s. The kernels are compiled and audited here, not run.\n", g.why.c_str());
  std::fflush(stdout);
  if (argc > 0) std::printf("(the options given are for the GPU run; nothing else uses them)\n");
  std::printf("Audit summary of the built kernels (flashptx audit for the full check): disassembling the %zu\n"
              "objects of the build first, which takes a while on a small machine...\n\n",
              audited_objects());
  std::fflush(stdout);
  return print_audit_summary();
}
