// The version and the install (Makefile "version and install", tools/install/). The version: the
// VERSION file, flashptx_version() and CHANGELOG.md's top entry agree. The install: `make install`
// into a fresh prefix from the build's products (nothing rebuilt: the products are given to make as
// old files), the installed tree as tools/install/install.sh lists it, then a user's program
// (tests/install_consumer/consumer.c) built against it through CMake's find_package (C++, shared and
// static) and through pkg-config (C), run from outside the source tree. Needs the source tree, cmake
// and pkg-config; the runner skips the suite without them, with the reason.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "include/flashptx.h"
#include "tests/host/file_text.h"
#include "tests/test_env.h"

using flashptx_test::file_text;

namespace {

namespace fs = std::filesystem;

const fs::path kRoot = FLASHPTX_ROOT;

// A path as one shell word (the test's own temporary paths and the source tree: no quote inside).
std::string quoted(const fs::path& p) {
  std::string s = p.string();
  s.insert(s.begin(), '\'');
  s.push_back('\'');
  return s;
}

// The VERSION file's one line, without its newline.
std::string version_file() {
  std::string v = file_text(kRoot / "VERSION");
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r' || v.back() == ' ')) v.pop_back();
  return v;
}

// A fresh folder under $TMPDIR (or /tmp), removed when the test ends.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "flashptx-install-XXXXXX").string();
    REQUIRE(mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// What the consumer must print: the version, then either the no-GPU refusal with its message or, on
// a machine that runs the forward, the kernel and an OK forward of batch 0.
void check_consumer_output(const std::string& what, int rc, const std::string& out) {
  INFO(what << " printed:\n" << out);
  CHECK(rc == 0);
  CHECK(out.find("flashptx " + version_file() + " (") == 0);
  const bool refused = out.find("forward: FLASHPTX_ERR_UNSUPPORTED_DEVICE: ") != std::string::npos;
  const bool ran = out.find("forward of batch 0: FLASHPTX_OK") != std::string::npos;
  CHECK((refused || ran));
  if (flashptx_test::device_cc() == 0) CHECK(refused);
}

}  // namespace

TEST_SUITE("host install") {

TEST_CASE("one version: the VERSION file, flashptx_version() and CHANGELOG.md's top entry") {
  const std::string v = version_file();
  REQUIRE_MESSAGE(std::regex_match(v, std::regex(R"(\d+\.\d+\.\d+)")), "VERSION reads '" << v << "'");
  CHECK(std::string(flashptx_version()) == v);
  std::smatch m;
  REQUIRE(std::regex_match(v, m, std::regex(R"((\d+)\.(\d+)\.(\d+))")));
  CHECK(flashptx_version_number() == std::stoi(m[1]) * 10000 + std::stoi(m[2]) * 100 + std::stoi(m[3]));
  // The top entry: the first "## " heading, "## 0.9.0" or "## [0.9.0] - date". No CHANGELOG.md is a failure.
  const fs::path changelog = kRoot / "CHANGELOG.md";
  REQUIRE_MESSAGE(fs::exists(changelog), changelog << " does not exist");
  std::istringstream lines(file_text(changelog));
  std::string line, top;
  while (std::getline(lines, line))
    if (line.rfind("## ", 0) == 0) { top = line; break; }
  REQUIRE_MESSAGE(!top.empty(), changelog << " has no '## ' entry");
  CHECK_MESSAGE(std::regex_search(top, m, std::regex(R"(^## \[?(\d+\.\d+\.\d+)\]?)")), "top entry: " << top);
  CHECK_MESSAGE(m[1] == v, "CHANGELOG.md's top entry is '" << top << "', VERSION is " << v);
}

TEST_CASE("make install PREFIX=: the tree, and programs built against it through CMake and pkg-config") {
  const std::string v = version_file();
  const std::string major = v.substr(0, v.find('.'));
  TempDir tmp;
  const fs::path prefix = tmp.path / "prefix";
  std::string out;

  // The products as they are: -o keeps make from remaking them (or anything on their account).
  const std::string make = "make -s -C " + quoted(kRoot) + " install PREFIX=" + quoted(prefix) +
                           " -o libflashptx.so -o libflashptx.a -o flashptx";
  REQUIRE_MESSAGE(flashptx_test::run_command(make, &out) == 0, make << ":\n" << out);
  CHECK_MESSAGE(out.find("install: flashptx " + v) != std::string::npos, out);

  for (const char* f : {"include/flashptx.h", "lib/libflashptx.a", "bin/flashptx", "lib/cmake/flashptx/flashptxConfig.cmake",
                        "lib/cmake/flashptx/flashptxConfigVersion.cmake", "lib/pkgconfig/flashptx.pc",
                        "share/doc/flashptx/LICENSE", "share/doc/flashptx/README.md", "share/doc/flashptx/CHANGELOG.md"})
    CHECK_MESSAGE(fs::is_regular_file(prefix / f), f << " was not installed");
  const fs::path lib = prefix / "lib";
  REQUIRE(fs::is_regular_file(lib / ("libflashptx.so." + v)));
  CHECK(fs::is_symlink(lib / ("libflashptx.so." + major)));
  CHECK(fs::read_symlink(lib / ("libflashptx.so." + major)) == "libflashptx.so." + v);
  CHECK(fs::read_symlink(lib / "libflashptx.so") == "libflashptx.so." + major);
  CHECK(file_text(lib / ("libflashptx.so." + v)) == file_text(kRoot / "libflashptx.so"));
  CHECK(file_text(prefix / "include/flashptx.h") == file_text(kRoot / "include/flashptx.h"));
  REQUIRE(flashptx_test::run_command("readelf -d " + quoted(lib / ("libflashptx.so." + v)), &out) == 0);
  CHECK_MESSAGE(out.find("Library soname: [libflashptx.so." + major + "]") != std::string::npos, out);
  REQUIRE(flashptx_test::run_command(quoted(prefix / "bin/flashptx") + " --version", &out) == 0);
  CHECK(out == "flashptx " + v + "\n");

  // CMake: find_package(flashptx CONFIG REQUIRED), the targets flashptx::flashptx and _static.
  const fs::path build = tmp.path / "cmake-build";
  const std::string configure = "cmake -S " + quoted(kRoot / "tests/install_consumer") + " -B " + quoted(build) +
                                " -DCMAKE_PREFIX_PATH=" + quoted(prefix);
  REQUIRE_MESSAGE(flashptx_test::run_command(configure, &out) == 0, configure << ":\n" << out);
  CHECK_MESSAGE(out.find("flashptx_VERSION=" + v) != std::string::npos, out);
  const std::string compile = "cmake --build " + quoted(build);
  REQUIRE_MESSAGE(flashptx_test::run_command(compile, &out) == 0, compile << ":\n" << out);
  // Run from a folder outside the source tree, with no library path set: the shared one finds the
  // installed .so through the run path CMake records.
  const std::string away = "cd " + quoted(tmp.path) + " && env -u LD_LIBRARY_PATH ";
  for (const char* exe : {"consumer_shared", "consumer_static"}) {
    const int rc = flashptx_test::run_command(away + quoted(build / exe), &out);
    check_consumer_output(std::string("CMake ") + exe, rc, out);
  }
  REQUIRE(flashptx_test::run_command("readelf -d " + quoted(build / "consumer_shared"), &out) == 0);
  CHECK_MESSAGE(out.find("Shared library: [libflashptx.so." + major + "]") != std::string::npos, out);

  // pkg-config: a C program.
  const std::string pc = "PKG_CONFIG_PATH=" + quoted(lib / "pkgconfig") + " pkg-config";
  REQUIRE(flashptx_test::run_command(pc + " --modversion flashptx", &out) == 0);
  CHECK(out == v + "\n");
  REQUIRE(flashptx_test::run_command(pc + " --cflags --libs flashptx", &out) == 0);
  std::string flags = out.substr(0, out.find('\n'));
  const fs::path cexe = tmp.path / "consumer_c";
  const std::string cc = "cc -std=c99 -Wall -Werror " + quoted(kRoot / "tests/install_consumer/consumer.c") + " -o " +
                         quoted(cexe) + " " + flags + " -Wl,-rpath," + lib.string();
  REQUIRE_MESSAGE(flashptx_test::run_command(cc, &out) == 0, cc << ":\n" << out);
  const int rc = flashptx_test::run_command(away + quoted(cexe), &out);
  check_consumer_output("the pkg-config C program", rc, out);
}

}  // TEST_SUITE
