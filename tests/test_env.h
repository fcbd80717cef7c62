// What the test runner knows about this machine, for the suites that need to ask.
#pragma once
#include <string>

namespace flashptx_test {

// Compute capability of device 0 as major*10+minor (90 for an H200), 0 when there is none.
int device_cc();

// The nvcc the vendoring compile test runs ($FLASHPTX_NVCC, else the toolkit's); "" when absent.
std::string nvcc_path();

}  // namespace flashptx_test
