// The subcommands of the `flashptx` command line, one file each in tools/flashptx/.
#pragma once

int cmd_run(int argc, char** argv);     // no arguments: flagship forward on a default shape, or the audit summary
int cmd_audit(int argc, char** argv);   // golden-SASS audit (tools/sass/)
int cmd_ledger(int argc, char** argv);  // the spec's tables, from the protocol models (src/models/)
int cmd_bench(int argc, char** argv);   // side-by-side-ready timing with a JSON manifest
int cmd_trace(int argc, char** argv);   // measured pipeline timeline (instrumented build)

// Shared by `flashptx` (no arguments, no GPU) and `flashptx audit --summary`: per kernel, registers,
// shared memory, spills and golden status. Implemented by the audit (tools/flashptx/cmd_audit.cpp).
int print_audit_summary();
