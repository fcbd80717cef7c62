// `flashptx audit`: the golden-SASS audit of the built kernels (tools/sass/audit.h), and the
// summary table that `flashptx` prints when there is no GPU.
//
//   flashptx audit [--arch sm_90a|sm_100a] [--kernel SUBSTR] [--summary] [--regenerate]
//                  [--golden-dir DIR] [--list FILE]
// Exit status: 0 when every kernel passes; 1 on a failure, or when the audit cannot run here (no
// disassembler, no build: one line says which); 2 on a usage error, including a --kernel or --arch
// filter that selects no built kernel and a --golden-dir that does not exist or holds no goldens
// (the goldens' names and the directory are checked before anything is disassembled).
#include <cstdio>
#include <iostream>
#include <string>

#include "tools/flashptx/commands.h"
#include "tools/sass/audit.h"

namespace flashptx::cli {

Parsed parse_audit_args(int argc, const char* const* argv, AuditArgs* a) {
  *a = AuditArgs();
  Options o("audit", "flashptx audit [options]",
            "Compares the normalised SASS of every built kernel with sass_golden/<arch>/<kernel>.sass,\n"
            "runs the ordering checks of <kernel>.check, and fails on spills or local memory.");
  o.text("--arch", &a->opt.arch, {"sm_90a", "sm_100a"}, "only the kernels of one architecture")
      .text("--kernel", &a->opt.kernel, {}, "only the kernels whose name contains SUBSTR", "SUBSTR")
      .flag("--summary", &a->summary, "one line per kernel and the verdict (no notes, no diffs)")
      .flag("--regenerate", &a->opt.regenerate,
            "rewrite the .sass goldens from the current build (never the\n"
            ".check files); commit them alone, saying why the order changed")
      .text("--golden-dir", &a->opt.golden_dir, {}, "the goldens (default: sass_golden/ of the source tree)", "DIR")
      .text("--list", &a->opt.list_file, {}, "the build's audit list (default: build/audit_objects.txt)", "FILE");
  return o.parse(argc, argv);
}

}  // namespace flashptx::cli

int cmd_audit(int argc, char** argv) {
  using namespace flashptx::cli;
  AuditArgs a;
  const Parsed p = parse_audit_args(argc, argv, &a);
  if (!p.run()) return finish(p);
  const flashptx::sass::AuditReport r = flashptx::sass::run_audit(a.opt);
  if (r.cannot_run) {
    std::fprintf(stderr, "flashptx audit: cannot run: %s\n", r.errors.front().c_str());
    return 1;
  }
  if (r.matched_nothing || r.bad_golden_dir) {
    std::fprintf(stderr, "flashptx audit: %s\n", r.errors.back().c_str());
    return 2;
  }
  flashptx::sass::print_report(r, a.summary, std::cout);
  return r.ok() ? 0 : 1;
}

int print_audit_summary() {
  const flashptx::sass::AuditReport r = flashptx::sass::run_audit(flashptx::sass::AuditOptions());
  flashptx::sass::print_report(r, true, std::cout);
  return r.ok() ? 0 : 1;
}
