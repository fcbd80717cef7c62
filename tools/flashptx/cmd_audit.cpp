// PLACEHOLDER: replaced by the owner of this subcommand.
#include <cstdio>
#include "tools/flashptx/commands.h"
int cmd_audit(int, char**) { std::printf("flashptx audit: not built yet\n"); return 2; }
int print_audit_summary() { return 0; }
