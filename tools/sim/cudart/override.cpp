// flashptx_sim_override_ptx (tools/sim/cudart/flashptx_sim.h): a test launches the library's own
// plan with a mutated PTX module (tests/sim/test_sim_mutations.cpp). The override replaces the
// device's loaded copy of the module that holds the entry; clearing drops it, so the next launch
// loads the file again.
#include <filesystem>

#include "tools/sim/cudart/device.h"
#include "tools/sim/cudart/flashptx_sim.h"

using namespace ptxsim::cudart;

extern "C" int flashptx_sim_override_ptx(const char* entry, const char* ptx_text) {
  if (entry == nullptr) return -1;
  Device& d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  EntryLoc loc;
  std::string err;
  if (d.module_of(entry, &loc, &err) == nullptr) {
    d.last_report = err;
    return -1;
  }
  if (ptx_text == nullptr) {
    d.modules.erase(loc.file);
    return 0;
  }
  const std::string name = "mutated:" + std::filesystem::relative(loc.file, d.ptx_dir).string();
  std::shared_ptr<const ptxsim::Module> m = ptxsim::load_module(ptx_text, name, &err);
  if (m == nullptr) {
    // as Device::module_of: a module with forms the simulator does not implement loads leniently
    // when the entry reaches none of them (an sm_100a module's cta_group::2 kernels)
    std::string lenient_err;
    m = ptxsim::load_module_lenient(ptx_text, name, &lenient_err);
    if (m == nullptr || !ptxsim::entry_unimplemented(*m, entry).empty()) {
      d.last_report = "mutated PTX does not load: " + err;
      return -1;
    }
  }
  d.modules[loc.file] = m;
  return 0;
}
