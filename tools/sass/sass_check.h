// The ordering checker of the golden-SASS audit: a minimal FileCheck of our own, run against the
// normalised listing of the current build (so the checks hold across deliberate regenerations).
//
// A .check file holds one directive per line; other lines are comments. A directive may follow a
// comment leader ("//", ";" or "#") and whitespace:
//   CHECK: pat          the first line at or after the current position that contains pat; the
//                       current position moves just past it
//   CHECK-NEXT: pat     the next instruction line after the previous match (label lines skipped)
//                       must contain pat
//   CHECK-NOT: pat      pat must not occur between the previous match and the next positive match
//                       (CHECK, CHECK-NEXT, CHECK-COUNT, CHECK-LABEL); or the end of the listing
//                       when no positive directive follows
//   CHECK-COUNT-N: pat  exactly N lines from the current position to the end of the listing
//                       contain pat (not necessarily adjacent); the position moves past the Nth.
//                       (FileCheck's CHECK-COUNT means "N times in a row, more allowed"; ours is
//                       "exactly N from here on", which is what an audit wants: e.g. exactly 4 BAR.)
//   CHECK-LABEL: pat    the same as CHECK; it reads as a section heading of the check file
//   CHECK-DEFINE: NAME = value
//                       from here on, [[NAME]] in a pattern stands for value (literal text, which
//                       may hold {{regex}}); NAME is an identifier, defined once per run
//   CHECK-INCLUDE: file the directives of `file` (a path relative to the directory of the check
//                       file that includes it) run here, in order, seeing the names defined so far;
//                       errors name the included file and its line. Kernels that share a protocol
//                       share one included file and define what differs (a count, an MMA shape).
//                       Included files are named *.check.inc so that the audit does not take them
//                       for a kernel's check file. The path may name defines ([[NAME]]), so that a
//                       kernel's check file chooses between included variants of one section.
// pat is a literal substring; {{regex}} inside it is a std::regex (ECMAScript) fragment, e.g.
// "BAR.SYNC{{(\.DEFER_BLOCKING)?}} 0x1, 0x80". Lines are matched with leading blanks removed.
// Lines of the listing: labels ("L3:") and instructions; the header ("#" lines) is not searched.
#pragma once
#include <string>
#include <vector>

namespace flashptx::sass {

struct CheckResult {
  bool ok = true;
  int directives = 0;           // how many directives ran
  std::vector<std::string> errors;  // one message per failure: file:line, directive, pattern, where
};

// Runs the directives of `check_text` (named `check_name` in messages; CHECK-INCLUDE paths are
// relative to its directory) against `listing` (the lines of a normalised listing; "#" header lines
// allowed and ignored).
CheckResult run_checks(const std::string& check_text, const std::string& check_name,
                       const std::vector<std::string>& listing);

}  // namespace flashptx::sass
