// Vendoring one kernel, as the README says: copy the files its "Vendoring one kernel" section lists
// (and nothing else of flashptx) beside tools/vendor/fa3_fwd_standalone.cu into an empty folder, and
// compile there with the command the README gives. Runs where nvcc and the source tree are (the
// runner skips the suite elsewhere, with the reason); the list itself is checked against the README
// embedded in ./run_tests everywhere.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "tests/embedded.h"
#include "tests/test_env.h"

namespace {

namespace fs = std::filesystem;

// What a user copies to launch the FA3 forward (besides their own launcher): every ptx/ header
// (one folder), and these.
const char* const kVendored[] = {
    "src/protocol/hd.h",        "src/protocol/ring.h",      "src/protocol/pingpong.h",
    "src/protocol/tile_scheduler.h", "src/protocol/trace.h", "src/sm90/common.cuh",
    "src/sm90/fa3_fwd.cuh",     "src/sm90/fa3_fwd_config.h", "src/tensormap.h",
    "src/tensormap.cpp",
};

std::string readme_section() {
  const std::string readme(flashptx_test::embedded_file("README.md"));
  const size_t a = readme.find("## Vendoring one kernel");
  if (a == std::string::npos) return {};
  const size_t b = readme.find("\n## ", a + 4);
  return readme.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

}  // namespace

TEST_SUITE("host vendoring") {

TEST_CASE("the README's vendoring section lists every file the standalone example needs") {
  const std::string section = readme_section();
  REQUIRE_MESSAGE(!section.empty(), "README.md has no '## Vendoring one kernel' section");
  CHECK(section.find("`ptx/`") != std::string::npos);
  for (const char* f : kVendored)
    CHECK_MESSAGE(section.find(f) != std::string::npos, std::string(f) << " is not in the README's list");
  CHECK(section.find("-gencode arch=compute_90a,code=sm_90a") != std::string::npos);
  CHECK(section.find("-std=c++20") != std::string::npos);
  CHECK(section.find("tools/vendor/fa3_fwd_standalone.cu") != std::string::npos);
}

}  // TEST_SUITE

TEST_SUITE("vendoring compile") {

TEST_CASE("the listed files alone compile the FA3 forward into an object (nvcc, sm_90a)") {
  const fs::path root = FLASHPTX_ROOT;
  const fs::path dir = fs::temp_directory_path() / ("flashptx-vendor-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "ptx");
  for (const auto& e : fs::directory_iterator(root / "ptx")) fs::copy_file(e.path(), dir / "ptx" / e.path().filename());
  for (const char* f : kVendored) {
    fs::create_directories((dir / f).parent_path());
    fs::copy_file(root / f, dir / f);
  }
  fs::copy_file(root / "tools/vendor/fa3_fwd_standalone.cu", dir / "fa3_fwd_standalone.cu");
  const std::string nvcc = flashptx_test::nvcc_path();
  const std::string log = (dir / "nvcc.log").string();
  const std::string cmd = "cd '" + dir.string() + "' && '" + nvcc +
                          "' -std=c++20 -gencode arch=compute_90a,code=sm_90a -I. -c fa3_fwd_standalone.cu "
                          "-o fa3_fwd_standalone.o > '" + log + "' 2>&1 && '" + nvcc +
                          "' -std=c++20 -I. -c src/tensormap.cpp -o tensormap.o >> '" + log + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::string out;
  if (FILE* f = std::fopen(log.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    std::fclose(f);
  }
  CHECK_MESSAGE(rc == 0, "nvcc failed in " << dir << ":\n" << out);
  CHECK(fs::exists(dir / "fa3_fwd_standalone.o"));
  CHECK(fs::exists(dir / "tensormap.o"));
  if (rc == 0) fs::remove_all(dir);
}

}  // TEST_SUITE
