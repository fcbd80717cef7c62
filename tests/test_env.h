// What the test runner knows about this machine, for the suites that need to ask.
#pragma once
#include <string>

namespace flashptx_test {

// Compute capability of device 0 as major*10+minor (90 for an H200), 0 when there is none.
int device_cc();

// The nvcc the vendoring compile test runs ($FLASHPTX_NVCC, else the toolkit's); "" when absent.
std::string nvcc_path();

// The first `name` on PATH (a file, not a folder); "" when there is none.
std::string program_on_path(const std::string& name);

// Runs `cmd` through /bin/sh with stderr joined to stdout: its exit status (-1 when it could not be
// started or did not exit), and its output in *out.
int run_command(const std::string& cmd, std::string* out);

}  // namespace flashptx_test
