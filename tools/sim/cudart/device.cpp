// The simulated device (tools/sim/cudart/device.h).
#include "tools/sim/cudart/device.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef FLASHPTX_BUILD_DIR
#define FLASHPTX_BUILD_DIR "build"
#endif

namespace ptxsim::cudart {

bool parse_policy(const char* name, Policy* out) {
  for (int i = 0; i <= static_cast<int>(Policy::kDelayOneWarpgroup); ++i) {
    if (std::string(policy_name(static_cast<Policy>(i))) != name) continue;
    *out = static_cast<Policy>(i);
    return true;
  }
  return false;
}

static Device* make_device() {
  Device* d = new Device;  // never destroyed: registrations and atexit handlers may outlive statics
  const char* dir = std::getenv("FLASHPTX_SIM_PTX_DIR");
  d->ptx_dir = dir && *dir ? dir : FLASHPTX_BUILD_DIR "/ptx";
  if (const char* p = std::getenv("FLASHPTX_SIM_POLICY"); p && *p) {
    if (!parse_policy(p, &d->policy)) std::fprintf(stderr, "flashptx sim: FLASHPTX_SIM_POLICY=%s is not a policy; round-robin\n", p);
  }
  if (const char* s = std::getenv("FLASHPTX_SIM_SEED"); s && *s) d->seed = std::strtoull(s, nullptr, 0);
  if (const char* s = std::getenv("FLASHPTX_SIM_CC"); s && *s) {
    const int cc = std::atoi(s);
    if (cc == 90 || cc == 100) d->cc = cc;
    else std::fprintf(stderr, "flashptx sim: FLASHPTX_SIM_CC=%s is not 90 or 100; 90\n", s);
  }
  if (const char* s = std::getenv("FLASHPTX_SIM_SMS"); s && *s) {
    const int n = std::atoi(s);
    if (n >= 1 && n <= 1024) d->sms = n;
    else std::fprintf(stderr, "flashptx sim: FLASHPTX_SIM_SMS=%s is not 1..1024; %d\n", s, d->sms);
  }
  return d;
}

static bool g_second_copy = false;
bool second_copy() {
  device();
  return g_second_copy;
}

Device& device() {
  static Device* const d = [] {
    using Fn = void* (*)();
    // The executable's device when it exports one (a copy of the runtime already in the process).
    // Looked up through the main program's handle: RTLD_DEFAULT from a -Bsymbolic library finds
    // the library's own definition first.
    void* main_program = dlopen(nullptr, RTLD_NOW);
    if (auto fn = main_program ? reinterpret_cast<Fn>(dlsym(main_program, "flashptx_sim_device_v1")) : nullptr;
        fn != nullptr && fn != &flashptx_sim_device_v1) {
      g_second_copy = true;
      return static_cast<Device*>(fn());
    }
    return static_cast<Device*>(flashptx_sim_device_v1());
  }();
  return *d;
}

const Range* Device::find(const void* p, uint64_t bytes) const {
  const uint64_t a = reinterpret_cast<uint64_t>(p);
  auto it = ranges.upper_bound(a);
  if (it == ranges.begin()) return nullptr;
  --it;
  if (a - it->first > it->second.bytes || bytes > it->second.bytes - (a - it->first)) return nullptr;
  return &it->second;
}

bool Device::add(const void* p, uint64_t bytes, bool allocated, std::string label) {
  const uint64_t a = reinterpret_cast<uint64_t>(p);
  if (p == nullptr || bytes == 0) return false;
  auto next = ranges.lower_bound(a);
  if (next != ranges.end() && next->first < a + bytes) return false;
  if (next != ranges.begin() && std::prev(next)->first + std::prev(next)->second.bytes > a) return false;
  ranges[a] = Range{bytes, allocated};
  memory.add(a, bytes, std::move(label));
  return true;
}

bool Device::remove(const void* p, bool allocated) {
  auto it = ranges.find(reinterpret_cast<uint64_t>(p));
  if (it == ranges.end() || it->second.allocated != allocated) return false;
  memory.remove(it->first);
  ranges.erase(it);
  return true;
}

// The entries of one PTX file: ".entry NAME(" lines, and the cluster directives between an entry's
// parameter list and its body.
static void index_file(const std::string& path, std::unordered_map<std::string, EntryLoc>* out) {
  std::ifstream in(path);
  std::string line, current;
  while (std::getline(in, line)) {
    const size_t e = line.find(".entry ");
    if (e != std::string::npos && line.find("//") > e) {
      const size_t b = e + 7, paren = line.find('(', b);
      current = line.substr(b, (paren == std::string::npos ? line.size() : paren) - b);
      while (!current.empty() && (current.back() == ' ' || current.back() == '\t')) current.pop_back();
      (*out)[current] = EntryLoc{path, Dim3{}};
      continue;
    }
    if (current.empty()) continue;
    if (line.rfind("{", 0) == 0) { current.clear(); continue; }
    if (const size_t r = line.find(".reqnctapercluster"); r != std::string::npos) {
      unsigned x = 1, y = 1, z = 1;
      std::sscanf(line.c_str() + r + 18, " %u , %u , %u", &x, &y, &z);
      (*out)[current].cluster = Dim3{x, y, z};
    }
  }
}

std::shared_ptr<const Module> Device::module_of(const std::string& name, EntryLoc* loc, std::string* err) {
  namespace fs = std::filesystem;
  if (!indexed) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(ptx_dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_regular_file() && it->path().extension() == ".ptx") index_file(it->path().string(), &entries);
    if (ec || entries.empty()) {
      *err = "no PTX modules under " + ptx_dir + " (build them: make sim-ptx; or set FLASHPTX_SIM_PTX_DIR)";
      return nullptr;
    }
    indexed = true;
  }
  auto e = entries.find(name);
  if (e == entries.end()) {
    *err = "kernel " + name + " is in no PTX module under " + ptx_dir + " (an sm_90a kernel of this build?)";
    return nullptr;
  }
  *loc = e->second;
  auto& m = modules[e->second.file];
  if (!m) {
    std::ifstream in(e->second.file);
    std::stringstream text;
    text << in.rdbuf();
    std::string why;
    m = load_module(text.str(), fs::relative(e->second.file, ptx_dir).string(), &why);
    if (!m) {
      // A module with forms the simulator does not implement (an sm_100a module's cta_group::2
      // kernels beside its cta_group::1 ones) loads leniently; each launch then checks that its
      // entry reaches none of them (below), so an unimplemented form is still refused before
      // anything runs, by name.
      std::string lenient_why;
      m = load_module_lenient(text.str(), fs::relative(e->second.file, ptx_dir).string(), &lenient_why);
      if (!m) {
        *err = "PTX module " + e->second.file + " does not load: " + why;
        return nullptr;
      }
    }
  }
  if (const std::vector<std::string> missing = entry_unimplemented(*m, name); !missing.empty()) {
    *err = "kernel " + name + " of PTX module " + e->second.file + " uses forms the simulator does not implement:";
    for (const std::string& f : missing) *err += "\n  " + f;
    return nullptr;
  }
  return m;
}

}  // namespace ptxsim::cudart

extern "C" void* flashptx_sim_device_v1() {
  static ptxsim::cudart::Device* const d = ptxsim::cudart::make_device();
  return d;
}
