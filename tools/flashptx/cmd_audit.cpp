// `flashptx audit`: the golden-SASS audit of the built kernels (tools/sass/audit.h), and the
// summary table that `flashptx` prints when there is no GPU.
//
//   flashptx audit [--golden-dir DIR] [--list FILE] [--arch sm_90a|sm_100a] [--kernel SUBSTR]
//                  [--regenerate] [--summary]
// Exit status: 0 when every kernel passes, 1 on any failure, 2 on a usage error.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "tools/flashptx/commands.h"
#include "tools/sass/audit.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: flashptx audit [--golden-dir DIR] [--list FILE] [--arch sm_90a|sm_100a]\n"
               "                      [--kernel SUBSTR] [--regenerate] [--summary]\n"
               "  compares the normalised SASS of every built kernel with sass_golden/<arch>/<kernel>.sass,\n"
               "  runs the ordering checks of <kernel>.check, fails on spills or local memory.\n"
               "  --regenerate rewrites the .sass goldens from the current build (never the .check files).\n");
  return 2;
}

}  // namespace

int cmd_audit(int argc, char** argv) {
  flashptx::sass::AuditOptions opt;
  bool summary = false;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--golden-dir" && has_value) opt.golden_dir = argv[++i];
    else if (a == "--list" && has_value) opt.list_file = argv[++i];
    else if (a == "--arch" && has_value) opt.arch = argv[++i];
    else if (a == "--kernel" && has_value) opt.kernel = argv[++i];
    else if (a == "--regenerate") opt.regenerate = true;
    else if (a == "--summary") summary = true;
    else return usage();
  }
  if (!opt.arch.empty() && opt.arch != "sm_90a" && opt.arch != "sm_100a") return usage();
  const flashptx::sass::AuditReport r = flashptx::sass::run_audit(opt);
  flashptx::sass::print_report(r, summary, std::cout);
  return r.ok() ? 0 : 1;
}

int print_audit_summary() {
  const flashptx::sass::AuditReport r = flashptx::sass::run_audit(flashptx::sass::AuditOptions());
  flashptx::sass::print_report(r, true, std::cout);
  return r.ok() ? 0 : 1;
}
