// Helpers of the simulator-core tests (tests/sim/test_sim_core_*.cpp): load a PTX snippet, build
// a param block, run it. Expectations in the tests are worked out from the PTX ISA.
#pragma once
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tools/sim/isa/tensormap.h"
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

// A snippet whose entry "k" takes one pointer (param offset 0) to n u32 outputs, run on `block`
// threads of one CTA: the outputs (zeroed first) and the report.
struct OutRun {
  std::vector<uint32_t> out;
  ptxsim::Report report;
};
inline OutRun run_u32_out(const std::shared_ptr<const ptxsim::Module>& m, uint32_t block, size_t n) {
  OutRun r;
  r.out.assign(n, 0);
  ptxsim::Memory mem;
  mem.add(r.out.data(), r.out.size() * 4, "out");
  ptxsim::TensorMaps maps;
  r.report = ptxsim::launch(config(m, "k", block, Params().put<uint64_t>(0, (uint64_t)r.out.data()).bytes), mem, maps);
  return r;
}

// The 2-D f32 tensor of 8 rows x 16 columns at `base` (row stride 64 bytes) with an 8 x 4 box.
inline ptxsim::isa::TensorMapDesc f32_8x16_box8x4(const void* base) {
  ptxsim::isa::TensorMapDesc d;
  d.type = ptxsim::isa::ElemType::f32;
  d.rank = 2;
  d.base = (uint64_t)base;
  d.dims[0] = 16; d.dims[1] = 8;
  d.strides_bytes[0] = 4; d.strides_bytes[1] = 64;
  d.box[0] = 8; d.box[1] = 4;
  return d;
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
