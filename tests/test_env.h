// What the test runner knows about this machine, for the suites that need to ask.
#pragma once
#include <string>

namespace flashptx_test {

// Compute capability of device 0 as major*10+minor (90 for an H200), 0 when there is none.
int device_cc();

// Whether the golden-SASS audit can run for `arch` ("sm_90a" or "sm_100a") here: an installed
// disassembler decodes it and the built objects exist. On false, *why says what is missing.
// Implemented by the audit (tools/sass/).
bool audit_available(const char* arch, std::string* why);

}  // namespace flashptx_test
