// The golden-SASS audit: disassembles every object of the build's audit list with cuobjdump,
// normalises each kernel (sass_listing.h), compares it with sass_golden/<arch>/<kernel>.sass,
// runs the ordering checks of sass_golden/<arch>/<kernel>.check (sass_check.h) on the current
// listing, and fails on spills or local memory. With `regenerate` it rewrites the .sass files
// (never the .check files) and says what changed.
//
// Failures: a listing differing from its golden (instructions or the ptxas resource line), a missing
// golden, a failing check, spills/local memory, a zero-instruction listing, a disassembler error.
// Reported without failing: a toolchain (nvcc, ptxas, disassembler) version different from the
// golden's header when the instructions still match ("toolchain-mismatch"), and stale goldens
// (kernels no longer built).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "tools/sass/sass_listing.h"

namespace flashptx::sass {

struct AuditOptions {
  std::string golden_dir;  // default: FLASHPTX_ROOT "/sass_golden"
  std::string list_file;   // default: FLASHPTX_BUILD_DIR "/audit_objects.txt"
  std::string cuobjdump;   // default: FLASHPTX_CUOBJDUMP
  std::string arch;        // "sm_90a" or "sm_100a"; empty: both
  std::string kernel;      // substring of the kernel name; empty: all
  bool regenerate = false;
  AuditOptions();
};

struct KernelReport {
  std::string name, arch, object, stem;
  Resources res;
  std::string golden = "-";  // match, DIFF, missing, toolchain-mismatch, error; new/updated/unchanged
  std::string check = "none";  // pass, FAIL, none
  std::vector<std::string> problems;  // failures, one line each
  std::vector<std::string> notes;     // reported, not failing
  std::string diff;                   // golden -> current, when they differ
  bool failed() const { return !problems.empty(); }
};

struct AuditReport {
  std::vector<KernelReport> kernels;
  std::vector<std::string> errors;  // failures not tied to one kernel
  std::vector<std::string> notes;   // stale goldens, skipped objects, the toolchain
  bool cannot_run = false;          // no disassembler or no audit list: errors holds the one reason
  bool matched_nothing = false;     // a --kernel / --arch filter selected no built kernel (an error)
  bool bad_golden_dir = false;      // the golden directory does not exist or holds no goldens (an error)
  bool ok() const;
};

// The versions written in a golden's header and compared with it.
struct Toolchain {
  std::string nvcc, ptxas, disassembler;
};
Toolchain current_toolchain(const std::string& cuobjdump);

// Whether `cuobjdump` exists and runs; on false, *why is one line saying what is missing.
bool disassembler_runs(const std::string& cuobjdump, std::string* why);

// The whole file at `path` into *text (binary); false when it cannot be opened.
bool read_file(const std::string& path, std::string* text);

// Runs a shell command, capturing stdout and stderr together; returns its exit status.
int run_command(const std::string& cmd, std::string* output);

// The (arch, object path) entries of an audit list; false with *why when it cannot be read.
bool read_audit_list(const std::string& path, std::vector<std::pair<std::string, std::string>>* entries,
                     std::string* why);

// The full text of a golden file for a kernel: header then listing.
std::string golden_text(const KernelReport& k, const Toolchain& tc, const Listing& listing);

// Without a disassembler or an audit list, one error saying so and nothing else (cannot_run).
// Before disassembling anything (unless regenerating): a golden directory that does not exist or
// holds no goldens of the selected architectures is one error (bad_golden_dir), and so is a
// --kernel filter that no golden's kernel name contains (matched_nothing).
AuditReport run_audit(const AuditOptions& opt);

// The kernel names recorded in the goldens ("# kernel: NAME") under dir/<arch>/, for the
// architectures given (both when arch is empty). *dir_exists says whether dir is a directory.
std::vector<std::string> golden_kernel_names(const std::string& dir, const std::string& arch, bool* dir_exists);

// Whether the audit can run for `arch` ("sm_90a" or "sm_100a") here: the disassembler exists and
// runs, the build's audit list names objects of that architecture, and it decodes one of them.
// On false, *why says what is missing (the test runner prints it when it skips the audit suites).
bool audit_available(const char* arch, std::string* why);

// The full report: the per-kernel table (full names; registers; shared memory, static from the
// disassembler and dynamic from the kernel table, "-" for a kernel that is not a row of it; local
// memory and stack; golden and check status), the notes, each failure with its diff or check messages,
// and the closing "audit: N kernels, ..." line. summary_only: the table, one line per failure,
// and the closing line (no notes, no diffs). A report that cannot_run prints its one reason.
void print_report(const AuditReport& r, bool summary_only, std::ostream& os);

}  // namespace flashptx::sass
