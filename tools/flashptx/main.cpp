// flashptx: the command line. `flashptx help` lists the subcommands.
#include <cstdio>
#include <cstring>

#include "tools/flashptx/commands.h"

static int usage() {
  std::printf(
      "usage: flashptx [command] [options]\n"
      "  (none)    run the flagship FA3 forward kernel on a default shape when a Hopper GPU is\n"
      "            present (error against the fp64 reference, TFLOP/s); otherwise say so and print\n"
      "            the audit summary of the built kernels\n"
      "  run       the same, with --batch --seqlen --heads --hdim --dtype --causal\n"
      "  audit     golden-SASS audit of every built kernel (--regenerate rewrites the goldens)\n"
      "  ledger    the spec's protocol tables, computed by the models in src/models/\n"
      "  bench     time kernels on a shape or a named grid (--grid fa3-grid), JSON manifest\n"
      "  trace     measured pipeline timeline of the instrumented forward kernel, as SVG\n");
  return 2;
}

int main(int argc, char** argv) {
  if (argc < 2) return cmd_run(argc - 1, argv + 1);
  const char* c = argv[1];
  if (!std::strcmp(c, "run")) return cmd_run(argc - 2, argv + 2);
  if (!std::strcmp(c, "audit")) return cmd_audit(argc - 2, argv + 2);
  if (!std::strcmp(c, "ledger")) return cmd_ledger(argc - 2, argv + 2);
  if (!std::strcmp(c, "bench")) return cmd_bench(argc - 2, argv + 2);
  if (!std::strcmp(c, "trace")) return cmd_trace(argc - 2, argv + 2);
  if (!std::strcmp(c, "help") || !std::strcmp(c, "--help") || !std::strcmp(c, "-h")) { usage(); return 0; }
  std::fprintf(stderr, "flashptx: unknown command '%s'\n", c);
  return usage();
}
