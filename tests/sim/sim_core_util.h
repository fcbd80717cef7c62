// Helpers of the simulator-core tests (tests/sim/test_sim_core_*.cpp): load a PTX snippet, build
// a param block, run it. Expectations in the tests are worked out from the PTX ISA.
#pragma once
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tools/sim/sim.h"

namespace simtest {

inline const char* kHeader = ".version 8.0\n.target sm_90a\n.address_size 64\n";

inline std::shared_ptr<const ptxsim::Module> load(const std::string& body, std::string* err = nullptr) {
  std::string e;
  auto m = ptxsim::load_module(std::string(kHeader) + body, "snippet.ptx", &e);
  if (err) *err = e;
  return m;
}

struct Params {
  std::vector<uint8_t> bytes;
  template <class T> Params& put(uint32_t off, T v) {
    if (bytes.size() < off + sizeof(T)) bytes.resize(off + sizeof(T));
    memcpy(&bytes[off], &v, sizeof(T));
    return *this;
  }
};

inline ptxsim::LaunchConfig config(std::shared_ptr<const ptxsim::Module> m, const std::string& entry, uint32_t block,
                                   std::vector<uint8_t> params, uint32_t grid = 1) {
  ptxsim::LaunchConfig c;
  c.module = std::move(m);
  c.entry = entry;
  c.block.x = block;
  c.grid.x = grid;
  c.params = std::move(params);
  return c;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return "";
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline float f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
inline uint32_t u32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

}  // namespace simtest
