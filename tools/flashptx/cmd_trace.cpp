// PLACEHOLDER: replaced by the owner of this subcommand.
#include <cstdio>
#include "tools/flashptx/commands.h"
int cmd_trace(int, char**) { std::printf("flashptx trace: not built yet\n"); return 2; }
