// PLACEHOLDER: replaced by the owner of this subcommand.
#include <cstdio>
#include "tools/flashptx/commands.h"
int cmd_bench(int, char**) { std::printf("flashptx bench: not built yet\n"); return 2; }
