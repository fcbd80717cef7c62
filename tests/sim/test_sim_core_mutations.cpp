// Simulator core: protocol mutations of the project's primitive kernels, each caught with a named
// report. The mutation edits the generated PTX (one instruction of one entry) or the launch
// arguments; the unmutated kernel passes in test_sim_core_prim*.cpp.
#include <doctest/doctest.h>

#include <sstream>

#include "tests/sim/sim_core_util.h"
#include "tools/sim/isa/tensormap.h"

using namespace simtest;

namespace {

std::string corpus_text(const std::string& name) {
#ifdef FLASHPTX_BUILD_DIR
  return read_file(std::string(FLASHPTX_BUILD_DIR) + "/ptx/tests/kernels/" + name + ".ptx");
#else
  return read_file("build/ptx/tests/kernels/" + name + ".ptx");
#endif
}

// Replaces the occurrence-th line (0-based) containing `pattern` after the entry whose name
// contains `entry` with `replacement`; empty when not found.
std::string mutate(const std::string& text, const std::string& entry, const std::string& pattern, int occurrence,
                   const std::string& replacement) {
  std::istringstream in(text);
  std::string line, out;
  bool in_entry = false, done = false;
  int seen = 0;
  while (std::getline(in, line)) {
    if (line.find(".entry") != std::string::npos) in_entry = line.find(entry) != std::string::npos;
    if (in_entry && !done && line.find(pattern) != std::string::npos && seen++ == occurrence) {
      out += replacement + "\n";
      done = true;
      continue;
    }
    out += line + "\n";
  }
  return done ? out : "";
}

std::string entry_of(const ptxsim::Module& m, const std::string& part) {
  for (auto& e : ptxsim::entries(m)) if (e.find(part) != std::string::npos) return e;
  return "";
}

#define CORPUS_OR_SKIP(var, name)                                              \
  std::string var = corpus_text(name);                                         \
  if (var.empty()) { MESSAGE("skipped: " name ".ptx is absent (make sim-ptx)"); return; }

}  // namespace

TEST_SUITE("sim core mutations") {

TEST_CASE("mutation: wgmma.wait_group depth raised (1 -> 2): the first group's accumulators are read in flight") {
  CORPUS_OR_SKIP(text, "prim_wgmma");
  std::string mt = mutate(text, "prim_wgmma_wait_depth", "wgmma.wait_group.sync.aligned 1;", 0, "\twgmma.wait_group.sync.aligned 2;");
  REQUIRE(!mt.empty());
  std::string err;
  auto m = ptxsim::load_module(mt, "prim_wgmma.ptx", &err);
  REQUIRE_MESSAGE(m, err);
  std::string e = entry_of(*m, "prim_wgmma_wait_depth");
  std::vector<uint8_t> a1(8192), a2(8192), b(8192);
  std::vector<float> o1(4096), o2(4096);
  ptxsim::Memory mem;
  for (auto* v : {&a1, &a2, &b}) mem.add(v->data(), v->size(), "in");
  mem.add(o1.data(), o1.size() * 4, "o1");
  mem.add(o2.data(), o2.size() * 4, "o2");
  ptxsim::TensorMaps maps;
  auto ps = ptxsim::entry_params(*m, e);
  Params p;
  const void* ptrs[5] = {a1.data(), a2.data(), b.data(), o1.data(), o2.data()};
  for (int i = 0; i < 5; ++i) p.put<uint64_t>(ps[i].offset, (uint64_t)ptrs[i]);
  auto cfg = config(m, e, 128, p.bytes);
  cfg.dynamic_smem = 1024 + 3 * 64 * 128;
  auto rep = ptxsim::launch(cfg, mem, maps);
  REQUIRE(rep.has(ptxsim::Finding::kHazard));
  CHECK(rep.findings[0].message.find("accumulator") != std::string::npos);
  CHECK(rep.findings[0].ptx_location.find("prim_wgmma.ptx:") == 0);
}

TEST_CASE("mutation: fence.proxy.async dropped before a tensor store: a protocol report") {
  CORPUS_OR_SKIP(text, "prim_tma");
  std::string mt = mutate(text, "prim_tma_store", "fence.proxy.async.shared::cta;", 0, "");
  REQUIRE(!mt.empty());
  std::string err;
  auto m = ptxsim::load_module(mt, "prim_tma.ptx", &err);
  REQUIRE_MESSAGE(m, err);
  std::string e = entry_of(*m, "prim_tma_store");
  std::vector<float> g(16 * 8, 1.0f), img(32, 2.0f);
  const ptxsim::isa::TensorMapDesc d = f32_8x16_box8x4(g.data());
  ptxsim::TensorMaps maps;
  alignas(64) uint8_t map[128];
  ptxsim::TensorMaps::encode(map, maps.add(d));
  ptxsim::Memory mem;
  mem.add(g.data(), g.size() * 4, "g");
  mem.add(img.data(), img.size() * 4, "img");
  auto ps = ptxsim::entry_params(*m, e);
  Params p;
  p.bytes.resize(ps.back().offset + 4);
  memcpy(&p.bytes[ps[0].offset], map, 128);
  p.put<int32_t>(ps[1].offset, 2).put<uint32_t>(ps[3].offset, 128).put<uint64_t>(ps[4].offset, (uint64_t)img.data()).put<int32_t>(ps[5].offset, 0);
  auto cfg = config(m, e, 128, p.bytes);
  cfg.dynamic_smem = 128 + 1024;
  auto rep = ptxsim::launch(cfg, mem, maps);
  REQUIRE(rep.has(ptxsim::Finding::kProtocol));
  CHECK(rep.text().find("no fence.proxy.async") != std::string::npos);
}

TEST_CASE("mutation: the consumer's empty-barrier arrival dropped: a deadlock naming the barrier") {
  CORPUS_OR_SKIP(text, "prim_sync");
  // the consumer's branch comes first in the generated PTX: its arrive releases the empty barrier
  // (the second __shared__ barrier, at smem+0x8)
  std::string mt = mutate(text, "prim_mbar_pingpong", "mbarrier.arrive.release.cta.shared::cta.b64", 0, "");
  REQUIRE(!mt.empty());
  std::string err;
  auto m = ptxsim::load_module(mt, "prim_sync.ptx", &err);
  REQUIRE_MESSAGE(m, err);
  std::string e = entry_of(*m, "prim_mbar_pingpong");
  std::vector<int> in(320), seen(320), parity(320), flags(320);
  ptxsim::Memory mem;
  for (auto* v : {&in, &seen, &parity, &flags}) mem.add(v->data(), v->size() * 4, "buf");
  ptxsim::TensorMaps maps;
  auto ps = ptxsim::entry_params(*m, e);
  Params p;
  const void* ptrs[4] = {in.data(), seen.data(), parity.data(), flags.data()};
  for (int i = 0; i < 4; ++i) p.put<uint64_t>(ps[i].offset, (uint64_t)ptrs[i]);
  auto rep = ptxsim::launch(config(m, e, 64, p.bytes), mem, maps);
  REQUIRE(rep.has(ptxsim::Finding::kDeadlock));
  std::string t = rep.text();
  // the producer waits for the empty barrier's first phase; the consumer for the full barrier's second
  CHECK(t.find("smem+0x8 (cta 0) [phase parity 0, phases completed 0, pending arrivals 32 of 32, tx-count 0] waiting for parity 0") != std::string::npos);
  CHECK(t.find("smem+0x0 (cta 0) [phase parity 1, phases completed 1, pending arrivals 32 of 32, tx-count 0] waiting for parity 1") != std::string::npos);
}

TEST_CASE("mutation: expect_tx one chunk more than the box: the phase never completes") {
  CORPUS_OR_SKIP(text, "prim_tma");
  std::string err;
  auto m = ptxsim::load_module(text, "prim_tma.ptx", &err);
  REQUIRE_MESSAGE(m, err);
  std::string e = entry_of(*m, "prim_tma_load");
  std::vector<uint32_t> g(64 * 16, 7), out(1024, 0);
  ptxsim::isa::TensorMapDesc d;
  d.type = ptxsim::isa::ElemType::u32;
  d.rank = 2;
  d.base = (uint64_t)g.data();
  d.dims[0] = 64; d.dims[1] = 16;
  d.strides_bytes[0] = 4; d.strides_bytes[1] = 256;
  d.box[0] = 16; d.box[1] = 8;  // 512 bytes
  ptxsim::TensorMaps maps;
  alignas(64) uint8_t map[128];
  ptxsim::TensorMaps::encode(map, maps.add(d));
  ptxsim::Memory mem;
  mem.add(g.data(), g.size() * 4, "g");
  mem.add(out.data(), out.size() * 4, "out");
  auto ps = ptxsim::entry_params(*m, e);
  Params p;
  p.bytes.resize(ps.back().offset + 8);
  memcpy(&p.bytes[ps[0].offset], map, 128);
  p.put<int32_t>(ps[1].offset, 2).put<uint32_t>(ps[3].offset, 512 + 16).put<uint64_t>(ps[4].offset, (uint64_t)out.data());
  auto cfg = config(m, e, 128, p.bytes);
  cfg.dynamic_smem = 2048;
  auto rep = ptxsim::launch(cfg, mem, maps);
  REQUIRE(rep.has(ptxsim::Finding::kDeadlock));
  CHECK(rep.text().find("tx-count 16") != std::string::npos);
}

TEST_CASE("livelock: a loop that never ends exhausts the step budget with each warp's PC") {
  auto m = load(".visible .entry k()\n{\nL:\n  bra.uni L;\n}\n");
  REQUIRE(m);
  ptxsim::Memory mem;
  ptxsim::TensorMaps maps;
  auto cfg = config(m, "k", 64, {});
  cfg.step_budget = 10000;
  auto rep = ptxsim::launch(cfg, mem, maps);
  REQUIRE(rep.has(ptxsim::Finding::kLivelock));
  CHECK(rep.text().find("bra.uni L") != std::string::npos);
}

}  // TEST_SUITE
