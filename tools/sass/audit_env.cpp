// Whether the golden-SASS audit can run for one architecture on this machine (tools/sass/audit.h):
// the disassembler exists and runs, the build's audit list exists and names objects of that
// architecture, and the disassembler decodes them (cuobjdump needs nvdisasm beside it or on PATH).
// The test runner skips the audit_sm90* / audit_sm100* suites, with the reason, when it does not.
#include <string>
#include <vector>

#include "tools/sass/audit.h"

namespace flashptx::sass {

bool audit_available(const char* arch, std::string* why) {
  const AuditOptions opt;
  if (!disassembler_runs(opt.cuobjdump, why)) return false;
  std::string out;
  std::vector<std::pair<std::string, std::string>> entries;
  if (!read_audit_list(opt.list_file, &entries, why)) return false;
  bool any = false;
  for (const auto& [a, obj] : entries) {
    if (a != arch) continue;
    any = true;
    // One decodable object is enough to know the disassembler handles the architecture.
    const int rc = run_command("'" + opt.cuobjdump + "' --dump-sass '" + obj + "'", &out);
    if (out.find("does not contain device code") != std::string::npos) continue;
    if (rc != 0 || out.find("fatal") != std::string::npos) {
      *why = "the disassembler cannot decode " + std::string(arch) + " here: " + out;
      return false;
    }
    return true;
  }
  *why = any ? std::string("no ") + arch + " object in " + opt.list_file + " holds device code"
             : std::string("no ") + arch + " objects in " + opt.list_file;
  return false;
}

}  // namespace flashptx::sass
