// flashptx_version (include/flashptx.h). The version is the VERSION file at the repository root,
// passed by the Makefile as FLASHPTX_VERSION to this file only (its one use).
#include "include/flashptx.h"

#ifndef FLASHPTX_VERSION
#error "FLASHPTX_VERSION is not defined: build with the Makefile, which reads it from the VERSION file"
#endif

namespace {

// MAJOR * 10000 + MINOR * 100 + PATCH of a "MAJOR.MINOR.PATCH" string: three numbers, two dots.
constexpr int packed(const char* v) {
  int part[3] = {0, 0, 0};
  int n = 0;
  for (; *v != '\0'; ++v) {
    if (*v == '.') {
      if (++n > 2) return -1;
    } else if (*v >= '0' && *v <= '9') {
      part[n] = part[n] * 10 + (*v - '0');
    } else {
      return -1;
    }
  }
  return n == 2 && part[1] < 100 && part[2] < 100 ? part[0] * 10000 + part[1] * 100 + part[2] : -1;
}
constexpr int kVersionNumber = packed(FLASHPTX_VERSION);
static_assert(kVersionNumber >= 0, "VERSION must read MAJOR.MINOR.PATCH, minor and patch below 100");

}  // namespace

extern "C" const char* flashptx_version(void) { return FLASHPTX_VERSION; }
extern "C" int flashptx_version_number(void) { return kVersionNumber; }
