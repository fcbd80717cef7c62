// Every example in README.md, run the way a user runs it. Each fenced block of the README carries a
// marker comment on its first line, "readme-check: NAME", and NAME says who checks it:
//   build      `make && ./run_tests`: what ./run_tests prints, checked here against this binary's own
//              first lines and last line (run again with a filter that selects no test case); the
//              build itself is what CI runs on every landing.
//   c-program  app.c, written out and compiled against include/flashptx.h (and as C++, -fsyntax-only);
//   c-build    the shell block that builds and runs it, run as written with $FLASHPTX pointing at the
//              header and the repository's libflashptx.so. Both: "the README's C example" below.
//   python     the PyTorch example, run with python3 over tools/python and that libflashptx.so:
//              without a GPU it must reach the package's "no usable GPU" message.
//   cmake      the CMake consumer and `make install PREFIX=`: built by the packaging consumer test
//              (a CMake project against the installed tree), not here; here only its two lines.
//   vendoring  the two nvcc lines: tests/host/test_vendoring.cpp compiles them.
// A block without a marker, or with a name not in this list, fails "every README block is checked".
// What a machine without a GPU prints is what the README shows; with an sm_90 GPU the examples run for
// real and must succeed. The cases that compile or run need the source tree, a C compiler, the CUDA
// headers, python3 and the built libflashptx.so; where one is missing they are skipped (doctest::skip,
// counted in the runner's "skipped"), their names saying what they need.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/embedded.h"
#include "tests/host/file_text.h"
#include "tests/test_env.h"

#ifndef FLASHPTX_ROOT
#define FLASHPTX_ROOT "."
#endif

namespace flashptx_test {
std::string python3_path();  // tests/host/test_python.cpp
}

using flashptx_test::file_text;

namespace {

namespace fs = std::filesystem;

struct Block {
  std::string lang, marker, body;  // marker: the NAME of "readme-check: NAME"
  int line = 0;                    // of the opening fence, 1-based
};

std::vector<Block> readme_blocks(const std::string& md) {
  std::vector<Block> out;
  std::istringstream in(md);
  std::string l;
  int n = 0;
  Block* open = nullptr;
  while (std::getline(in, l)) {
    ++n;
    if (l.rfind("```", 0) == 0) {
      if (open == nullptr) {
        out.push_back(Block{l.substr(3), "", "", n});
        open = &out.back();
      } else {
        open = nullptr;
      }
      continue;
    }
    if (open == nullptr) continue;
    if (open->body.empty() && open->marker.empty()) {
      const size_t at = l.find("readme-check: ");
      if (at != std::string::npos) {
        std::string rest = l.substr(at + 14);
        open->marker = rest.substr(0, rest.find_first_of(" */"));
        continue;  // the marker line is not part of the example's text
      }
    }
    open->body += l + "\n";
  }
  return out;
}

const std::vector<Block>& blocks() {
  static const std::vector<Block> b = readme_blocks(std::string(flashptx_test::embedded_file("README.md")));
  return b;
}

std::vector<const Block*> blocks_named(const std::string& marker) {
  std::vector<const Block*> r;
  for (const Block& b : blocks())
    if (b.marker == marker) r.push_back(&b);
  return r;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

// The lines a block shows as output: its comment lines "#   TEXT" after the one that says "prints"
// or "on stderr".
std::vector<std::string> shown_output(const Block& b) {
  std::vector<std::string> out;
  bool on = false;
  for (const std::string& l : lines_of(b.body)) {
    if (!on) {
      on = l.rfind("#", 0) == 0 && (l.find("prints") != std::string::npos || l.find("on stderr") != std::string::npos);
      continue;
    }
    if (l.rfind("#   ", 0) == 0) out.push_back(l.substr(4));
    else break;
  }
  return out;
}

// A shown line matches an actual one exactly, or, ending in " ...", by its prefix.
bool shown_matches(const std::string& shown, const std::string& actual) {
  const std::string dots = " ...";
  if (shown.size() > dots.size() && shown.compare(shown.size() - dots.size(), dots.size(), dots) == 0)
    return actual.rfind(shown.substr(0, shown.size() - dots.size()), 0) == 0;
  return shown == actual;
}

struct Ran {
  int rc = -1;
  std::string out, err;
};

// Runs `cmd` with sh in `dir`, stdout and stderr apart.
Ran run_sh(const fs::path& dir, const std::string& cmd) {
  const fs::path o = dir / "stdout.txt", e = dir / "stderr.txt";
  const std::string full = "cd '" + dir.string() + "' && ( " + cmd + " ) > '" + o.string() + "' 2> '" + e.string() + "'";
  const int st = std::system(full.c_str());
  Ran r;
  r.rc = (st != -1 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
  r.out = file_text(o);
  r.err = file_text(e);
  return r;
}

fs::path exe_dir() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : p.parent_path();
}

// The repository's libflashptx.so: $FLASHPTX_LIB, beside this binary, then the source tree's root
// (where `make` puts it), as the release-flavour tests look for it.
fs::path built_library() {
  std::error_code ec;
  if (const char* e = std::getenv("FLASHPTX_LIB"); e && *e && fs::exists(e, ec)) return fs::absolute(e, ec);
  for (const fs::path& p : {exe_dir() / "libflashptx.so", fs::path(FLASHPTX_ROOT) / "libflashptx.so"})
    if (!p.empty() && fs::exists(p, ec)) return p;
  return {};
}

bool on_path(const std::string& prog) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::error_code ec;
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && fs::exists(fs::path(d) / prog, ec)) return true;
  return false;
}

const fs::path kCudaInclude = "/usr/local/cuda/include";
const fs::path kCudaLib = "/usr/local/cuda/lib64";

bool have_tree() {
  std::error_code ec;
  return fs::exists(fs::path(FLASHPTX_ROOT) / "include/flashptx.h", ec);
}
bool can_build_c() {
  std::error_code ec;
  return have_tree() && on_path("cc") && fs::exists(kCudaInclude / "cuda_runtime_api.h", ec) &&
         fs::exists(kCudaLib / "libcudart.so", ec) && !built_library().empty();
}
bool can_run_python() { return have_tree() && !flashptx_test::python3_path().empty() && !built_library().empty(); }

fs::path scratch(const std::string& what) {
  const fs::path d = fs::temp_directory_path() / ("flashptx-readme-" + what + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

// Checks that each line the README shows appears in `actual_text`, in order. Where this machine's
// reason for having no GPU is not the README's (`reason`: a driver without a device, say), each shown
// line is compared only up to where the README's reason begins: the README shows one machine's words.
void check_shown(const std::vector<std::string>& shown, const std::string& actual_text, const std::string& reason) {
  const std::vector<std::string> actual = lines_of(actual_text);
  const bool same_reason = !reason.empty() && actual_text.find(reason) != std::string::npos;
  if (!same_reason) MESSAGE("this machine's no-GPU reason is not the README's; lines compared up to the reason");
  size_t at = 0;
  for (std::string s : shown) {
    if (s == "...") continue;
    if (!same_reason && !reason.empty()) {
      const size_t r = s.find(reason.substr(0, 16));
      if (r != std::string::npos) s = s.substr(0, r) + " ...";
    }
    size_t i = at;
    while (i < actual.size() && !shown_matches(s, actual[i])) ++i;
    CHECK_MESSAGE(i < actual.size(), "the README shows \"" << s << "\", not printed here:\n" << actual_text);
    if (i < actual.size()) at = i + 1;
  }
}

// The no-driver reason the README shows: its build block's device line.
const std::string kDeviceLine = "flashptx run_tests: device: ";

std::string readme_reason() {
  for (const Block& b : blocks())
    if (b.marker == "build")
      for (const std::string& l : shown_output(b))
        if (l.rfind(kDeviceLine, 0) == 0) return l.substr(kDeviceLine.size());
  return "";
}

}  // namespace

TEST_SUITE("host readme") {

TEST_CASE("every README block is checked: its marker names this file's check or the test that runs it") {
  REQUIRE_MESSAGE(!blocks().empty(), "README.md is not embedded in this binary, or has no fenced block");
  const std::vector<std::string> known = {"build", "c-program", "c-build", "python", "cmake", "vendoring"};
  for (const Block& b : blocks()) {
    INFO("README.md:" << b.line << " ```" << b.lang);
    CHECK_MESSAGE(!b.marker.empty(), "a fenced block without a \"readme-check: NAME\" marker on its first line");
    CHECK_MESSAGE(std::find(known.begin(), known.end(), b.marker) != known.end(),
                  "unknown marker \"" << b.marker << "\"");
  }
  // The examples this file runs exist, once each.
  for (const char* m : {"build", "c-program", "c-build", "python"}) {
    INFO(m);
    CHECK(blocks_named(m).size() == 1);
  }
  // The delegated blocks say what their tests build.
  const std::vector<const Block*> cm = blocks_named("cmake");
  REQUIRE(cm.size() == 2);
  CHECK(cm[0]->body.find("find_package(flashptx REQUIRED)") != std::string::npos);
  CHECK(cm[0]->body.find("target_link_libraries(app flashptx::flashptx)") != std::string::npos);
  CHECK(cm[1]->body.find("make install PREFIX=") != std::string::npos);
  const std::vector<const Block*> v = blocks_named("vendoring");
  REQUIRE(v.size() == 1);
  CHECK(v[0]->body.find("-gencode arch=compute_90a,code=sm_90a") != std::string::npos);
}

TEST_CASE("build: ./run_tests prints the first lines and the last line the README shows") {
  const std::vector<const Block*> b = blocks_named("build");
  REQUIRE(b.size() == 1);
  CHECK(b[0]->body.rfind("make && ./run_tests\n", 0) == 0);
  const std::vector<std::string> shown = shown_output(*b[0]);
  REQUIRE(shown.size() >= 3);
  const fs::path self = fs::read_symlink("/proc/self/exe");
  const fs::path dir = scratch("build");
  // This binary again, selecting no test case: the runner's own lines, then its count line.
  std::string cmd = "'";  // (appended piece by piece: GCC 12's -Wrestrict misfires on "'" + std::string at -O3)
  cmd += self.string();
  cmd += "' '--test-case=readme: no test case has this name'";
  const Ran r = run_sh(dir, cmd);
  INFO(r.out << r.err);
  CHECK(r.rc == 0);
  const std::vector<std::string> out = lines_of(r.out);
  REQUIRE(!out.empty());
  CHECK(std::regex_match(out.back(), std::regex("[0-9]+ passed, 0 failed, [0-9]+ skipped")));
  CHECK(std::regex_match(shown.back(), std::regex("N passed, 0 failed, M skipped")));
  if (flashptx_test::device_cc() != 0) {
    MESSAGE("a GPU is present: the README's lines are those of a machine without one; only the last line is compared");
    return;
  }
  std::vector<std::string> head(shown.begin(), shown.end() - 1);
  check_shown(head, r.out, readme_reason());
  std::filesystem::remove_all(dir);
}

TEST_CASE("the README's C example: app.c compiles (as C and C++), links libflashptx.so, says what it shows"
          " [needs the source tree, cc, the CUDA headers and libcudart.so, and the built libflashptx.so]" *
          doctest::skip(!can_build_c())) {
  const std::vector<const Block*> prog = blocks_named("c-program"), build = blocks_named("c-build");
  REQUIRE(prog.size() == 1);
  REQUIRE(build.size() == 1);
  const fs::path dir = scratch("c");
  // $FLASHPTX as the README means it: the header under include/, the library beside it.
  const fs::path inst = dir / "flashptx";
  fs::create_directories(inst);
  fs::create_directory_symlink(fs::absolute(fs::path(FLASHPTX_ROOT) / "include"), inst / "include");
  fs::create_symlink(built_library(), inst / "libflashptx.so");
  // The SONAME's name (libflashptx.so.MAJOR), which make leaves beside the library: what a program
  // linked with -lflashptx asks the loader for.
  fs::create_symlink(built_library(), inst / "libflashptx.so.0");
  write(dir / "app.c", prog[0]->body);
  const Ran cxx = run_sh(dir, "c++ -x c++ -std=c++17 -fsyntax-only -Wall -I'" + (inst / "include").string() + "' -I'" +
                                  kCudaInclude.string() + "' app.c");
  CHECK_MESSAGE(cxx.rc == 0, "app.c does not compile as C++:\n" << cxx.err);
  const Ran r = run_sh(dir, "export FLASHPTX='" + inst.string() + "'; " + build[0]->body);
  INFO("stdout:\n" << r.out << "stderr:\n" << r.err);
  REQUIRE_MESSAGE(fs::exists(dir / "app"), "the README's build line did not build app");
  const int cc = flashptx_test::device_cc();
  if (cc == 90) {  // an H200 (or H100): the example runs
    CHECK(r.rc == 0);
    const std::vector<std::string> out = lines_of(r.out);
    REQUIRE(out.size() == 2);
    CHECK(out[0].rfind("fa3_fwd_sm90_bf16_d128", 0) == 0);
    CHECK(out[1] == "FLASHPTX_OK");
  } else if (cc == 0) {  // no GPU: a clear status, what the README shows
    CHECK(r.rc == 1);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("FLASHPTX_ERR_UNSUPPORTED_DEVICE: ", 0) == 0);
    const std::vector<std::string> shown = shown_output(*build[0]);
    REQUIRE(shown.size() == 1);
    check_shown(shown, r.err, readme_reason());
  } else {  // another GPU: a status either way, never a crash
    CHECK((r.rc == 0 || r.rc == 1));
    if (r.rc == 1) CHECK(r.err.rfind("FLASHPTX_ERR_", 0) == 0);
  }
  fs::remove_all(dir);
}

TEST_CASE("the README's PyTorch example: imports, and without a GPU stops at the package's clear reason"
          " [needs the source tree, python3 and the built libflashptx.so]" *
          doctest::skip(!can_run_python())) {
  const std::vector<const Block*> py = blocks_named("python");
  REQUIRE(py.size() == 1);
  const fs::path dir = scratch("python");
  write(dir / "example.py", py[0]->body);
  const std::string cmd = "PYTHONPATH='" + (fs::absolute(fs::path(FLASHPTX_ROOT)) / "tools/python").string() +
                          "' FLASHPTX_LIB='" + built_library().string() + "' '" + flashptx_test::python3_path() +
                          "' example.py";
  const Ran r = run_sh(dir, cmd);
  INFO("stdout:\n" << r.out << "stderr:\n" << r.err);
  if (r.rc == 0) {  // a GPU and PyTorch with CUDA: the example ran
    CHECK(flashptx_test::device_cc() == 90);
    CHECK(r.out == "(2, 4096, 16, 128) (2, 4096, 16, 128)\n");
  } else {
    CHECK(r.rc == 1);
    CHECK(r.err.rfind("flashptx cannot run here: ", 0) == 0);
    if (flashptx_test::device_cc() == 0) {
      CHECK(r.err.find("no usable GPU: ") != std::string::npos);
      const std::vector<std::string> shown = shown_output(*py[0]);
      REQUIRE(shown.size() == 1);
      check_shown(shown, r.err, readme_reason());
    }
  }
  fs::remove_all(dir);
}

}  // TEST_SUITE
