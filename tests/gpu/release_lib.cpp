// The release flavour of the library, loaded beside the test flavour (tests/gpu/release_lib.h).
#include "tests/gpu/release_lib.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#ifndef FLASHPTX_ROOT
#define FLASHPTX_ROOT "."
#endif

namespace flashptx_test {

static std::string exe_dir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

const ReleaseLib& release_lib() {
  static const ReleaseLib lib = [] {
    ReleaseLib r;
    std::vector<std::string> candidates;
    if (const char* e = std::getenv("FLASHPTX_LIB"); e && *e) candidates.push_back(e);
    candidates.push_back(exe_dir() + "/libflashptx.so");
    candidates.push_back(std::string(FLASHPTX_ROOT) + "/libflashptx.so");
    std::string tried;
    for (const std::string& c : candidates) {
      void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h == nullptr) {
        tried += (tried.empty() ? "" : "; ") + c + ": " + dlerror();
        continue;
      }
      r.fwd = reinterpret_cast<decltype(r.fwd)>(dlsym(h, "flashptx_fwd"));
      r.bwd = reinterpret_cast<decltype(r.bwd)>(dlsym(h, "flashptx_bwd"));
      r.fwd_varlen = reinterpret_cast<decltype(r.fwd_varlen)>(dlsym(h, "flashptx_fwd_varlen"));
      r.fwd_fp8 = reinterpret_cast<decltype(r.fwd_fp8)>(dlsym(h, "flashptx_fwd_fp8"));
      r.bwd_varlen = reinterpret_cast<decltype(r.bwd_varlen)>(dlsym(h, "flashptx_bwd_varlen"));
      r.last_error = reinterpret_cast<decltype(r.last_error)>(dlsym(h, "flashptx_last_error"));
      if (r.fwd == nullptr || r.bwd == nullptr || r.fwd_varlen == nullptr || r.fwd_fp8 == nullptr ||
          r.bwd_varlen == nullptr || r.last_error == nullptr) {
        r.fwd = nullptr;
        tried += (tried.empty() ? "" : "; ") + c + ": does not export the C ABI";
        continue;
      }
      r.path = c;
      return r;
    }
    r.why = "libflashptx.so not found (" + tried + "); set FLASHPTX_LIB";
    return r;
  }();
  return lib;
}

}  // namespace flashptx_test
