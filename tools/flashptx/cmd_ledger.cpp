// PLACEHOLDER: replaced by the owner of this subcommand.
#include <cstdio>
#include "tools/flashptx/commands.h"
int cmd_ledger(int, char**) { std::printf("flashptx ledger: not built yet\n"); return 2; }
