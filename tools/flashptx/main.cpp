// flashptx: the command line. `flashptx --help` lists the commands; `flashptx COMMAND --help`
// lists a command's options (on stdout, exit 0). Usage errors: one line on stderr, exit 2.
#include <cstdio>
#include <cstring>
#include <string>

#include "include/flashptx.h"
#include "tools/flashptx/commands.h"

int main(int argc, char** argv) {
  if (argc < 2) return cmd_run(0, argv + 1);
  const char* c = argv[1];
  if (!std::strcmp(c, "run")) return cmd_run(argc - 2, argv + 2);
  if (!std::strcmp(c, "audit")) return cmd_audit(argc - 2, argv + 2);
  if (!std::strcmp(c, "ledger")) return cmd_ledger(argc - 2, argv + 2);
  if (!std::strcmp(c, "bench")) return cmd_bench(argc - 2, argv + 2);
  if (!std::strcmp(c, "trace")) return cmd_trace(argc - 2, argv + 2);
  if (!std::strcmp(c, "ladder")) return cmd_ladder(argc - 2, argv + 2);
  if (!std::strcmp(c, "--version")) {
    std::printf("flashptx %s\n", flashptx_version());
    return 0;
  }
  if (!std::strcmp(c, "kernels")) return cmd_kernels(argc - 2, argv + 2);
  if (!std::strcmp(c, "sim")) return cmd_sim(argc - 2, argv + 2);
  if (!std::strcmp(c, "help") || !std::strcmp(c, "--help") || !std::strcmp(c, "-h")) {
    std::fputs(flashptx::cli::main_help().c_str(), stdout);
    return 0;
  }
  std::fprintf(stderr, "flashptx: unknown command '%s' (flashptx --help lists the commands)\n", c);
  return 2;
}
