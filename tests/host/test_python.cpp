// The Python package's CPU-side checks (tools/python/tests/test_cpu.py): the ctypes mirrors of the
// C ABI's structures against include/flashptx.h, the library lookup and its message, import without
// torch, and (with the built libflashptx.so) the library's statuses as Python exceptions. Needs
// python3 and the source tree; the runner skips the suite elsewhere, with the reason.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "tests/test_env.h"

namespace flashptx_test {

std::string program_on_path(const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const fs::path p = fs::path(dir) / name;
    if (fs::exists(p, ec) && !fs::is_directory(p, ec)) return p.string();
  }
  return "";
}

int run_command(const std::string& cmd, std::string* out) {
  out->clear();
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  const int st = pclose(p);
  return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// $FLASHPTX_PYTHON when it names a file, else the first python3 on PATH; "" when there is none.
std::string python3_path() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (const char* e = std::getenv("FLASHPTX_PYTHON"); e && *e && fs::exists(e, ec)) return e;
  return program_on_path("python3");
}

}  // namespace flashptx_test

TEST_SUITE("python cpu") {

TEST_CASE("tools/python/tests/test_cpu.py: ctypes layouts, library lookup, import without torch") {
  const std::string py = flashptx_test::python3_path();
  const std::string script = (std::filesystem::path(FLASHPTX_ROOT) / "tools/python/tests/test_cpu.py").string();
  const std::string cmd = "'" + py + "' '" + script + "'";
  std::string out;
  const int rc = flashptx_test::run_command(cmd, &out);
  CHECK_MESSAGE(rc == 0, cmd << " failed (" << rc << "):\n" << out);
  CHECK_MESSAGE(out.find(" 0 failed, ") != std::string::npos, "no '0 failed' summary:\n" << out);
}

}  // TEST_SUITE
