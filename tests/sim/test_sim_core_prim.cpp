// Simulator core: the project's primitive test kernels (tests/kernels/prim_*.cu), their PTX as
// the build generates it (build/ptx/tests/kernels/*.ptx, the release flags), run in the simulator.
// Parameters and inputs follow the kernels' host launchers; every expectation is worked out here
// from the PTX ISA's definitions (not from the project's helpers or the simulator's ISA library).
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "tests/sim/sim_core_util.h"

using namespace simtest;

namespace {

std::string ptx_dir() {
#ifdef FLASHPTX_BUILD_DIR
  return std::string(FLASHPTX_BUILD_DIR) + "/ptx/tests/kernels/";
#else
  return "build/ptx/tests/kernels/";
#endif
}

std::shared_ptr<const ptxsim::Module> corpus_module(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const ptxsim::Module>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  std::string text = read_file(ptx_dir() + name + ".ptx");
  if (text.empty()) return nullptr;
  std::string err;
  auto m = ptxsim::load_module(text, name + ".ptx", &err);
  INFO(err);
  cache[name] = m;
  return m;
}

std::string entry_named(const ptxsim::Module& m, const std::string& part) {
  for (auto& e : ptxsim::entries(m)) if (e.find(part) != std::string::npos) return e;
  return "";
}

// A param block from pointers, in the entry's own layout.
std::vector<uint8_t> pointer_params(const ptxsim::Module& m, const std::string& entry, std::vector<const void*> ptrs) {
  auto ps = ptxsim::entry_params(m, entry);
  REQUIRE(ps.size() == ptrs.size());
  Params p;
  for (size_t i = 0; i < ps.size(); ++i) {
    REQUIRE(ps[i].size == 8);
    p.put<uint64_t>(ps[i].offset, (uint64_t)ptrs[i]);
  }
  return p.bytes;
}

#define REQUIRE_CORPUS(m, name)                                                                  \
  auto m = corpus_module(name);                                                                  \
  if (!m) {                                                                                      \
    MESSAGE("skipped: " << ptx_dir() << name << ".ptx is absent (make sim-ptx generates it)");  \
    return;                                                                                      \
  }

const ptxsim::Policy kPolicies[] = {ptxsim::Policy::kRoundRobin, ptxsim::Policy::kRandom,
                                    ptxsim::Policy::kStarveProducer, ptxsim::Policy::kConsumersFirst};

}  // namespace

TEST_SUITE("sim core prim") {

TEST_CASE("the whole PTX corpus loads; every form is implemented") {
  const char* files[] = {"prim_sync", "prim_ldst", "prim_tma", "prim_wgmma", "prim_cluster", "ladder_1", "ladder_2",
                         "ladder_3", "ladder_4", "race_repro", "exp2_emulation_kernels", "audit_fixture", "ptx_compile_smoke"};
  int found = 0;
  for (const char* f : files) {
    std::string text = read_file(ptx_dir() + f + ".ptx");
    if (text.empty()) continue;
    ++found;
    std::string err;
    auto m = ptxsim::load_module(text, std::string(f) + ".ptx", &err);
    CHECK_MESSAGE(m, f << ": " << err);
    if (m) for (auto& fi : ptxsim::list_forms(*m)) CHECK_MESSAGE(fi.implemented, fi.form << " at " << fi.first_location);
  }
  std::string lib = ptx_dir() + "../../src/sm90/";
  for (const char* f : {"fa3_fwd", "fa3_bwd", "fa3_fwd_fp8", "fa3_fwd_trace", "fa3_fwd_trace_d64", "fa3_fwd_trace_paired", "fp8_quantize"}) {
    std::string text = read_file(lib + f + ".ptx");
    if (text.empty()) continue;
    ++found;
    std::string err;
    auto m = ptxsim::load_module(text, std::string(f) + ".ptx", &err);
    CHECK_MESSAGE(m, f << ": " << err);
  }
  if (!found) MESSAGE("skipped: no PTX under " << ptx_dir() << " (make sim-ptx generates it)");
}

TEST_CASE("prim_sync: mbarrier ping-pong between a producer and a consumer warp") {
  REQUIRE_CORPUS(m, "prim_sync");
  std::string e = entry_named(*m, "prim_mbar_pingpong");
  REQUIRE(!e.empty());
  for (auto pol : kPolicies) {
    std::vector<int> in(10 * 32), seen(320, -7), parity(320, -7), flags(320, -7);
    for (int i = 0; i < 320; ++i) in[i] = i * 13 + 5;
    ptxsim::Memory mem;
    for (auto* v : {&in, &seen, &parity, &flags}) mem.add(v->data(), v->size() * 4, "buf");
    ptxsim::TensorMaps maps;
    auto cfg = config(m, e, 64, pointer_params(*m, e, {in.data(), seen.data(), parity.data(), flags.data()}));
    cfg.policy = pol;
    auto rep = ptxsim::launch(cfg, mem, maps);
    REQUIRE_MESSAGE(rep.ok(), ptxsim::policy_name(pol) << ": " << rep.text());
    for (int g = 0; g < 10; ++g)
      for (int l = 0; l < 32; ++l) {
        CHECK(seen[g * 32 + l] == in[g * 32 + (l + g + 1) % 32]);
        CHECK(parity[g * 32 + l] == (g & 1));
        CHECK(flags[g * 32 + l] == 3);  // the waited phase completed; the next one pending
      }
  }
}

TEST_CASE("prim_sync: mbarrier arrival counting, inval, reuse as memory, re-init") {
  REQUIRE_CORPUS(m, "prim_sync");
  std::string e = entry_named(*m, "prim_mbar_count");
  for (auto pol : kPolicies) {
    std::vector<int> flags(32, -7);
    ptxsim::Memory mem;
    mem.add(flags.data(), flags.size() * 4, "flags");
    ptxsim::TensorMaps maps;
    auto cfg = config(m, e, 64, pointer_params(*m, e, {flags.data()}));
    cfg.policy = pol;
    auto rep = ptxsim::launch(cfg, mem, maps);
    REQUIRE_MESSAGE(rep.ok(), rep.text());
    for (int g = 0; g < 3; ++g) {
      for (int k = 0; k < 5; ++k) CHECK(flags[g * 5 + k] == (k == 4 ? 1 : 0));  // count 5: the fifth arrival
      CHECK(flags[15 + g] == 1);
    }
    for (int i = 18; i < 22; ++i) CHECK(flags[i] == 1);
    for (int i = 22; i < 32; ++i) CHECK(flags[i] == -7);
  }
}

TEST_CASE("prim_sync: expect_tx phases complete only when the announced bytes have landed") {
  REQUIRE_CORPUS(m, "prim_sync");
  std::string e = entry_named(*m, "prim_mbar_expect_tx");
  for (auto pol : kPolicies) {
    std::vector<uint8_t> src(4 * 4096), dst(4 * 4096, 0);
    for (size_t i = 0; i < src.size(); ++i) src[i] = (uint8_t)(i * 7 + i / 251);
    std::vector<int> flags(8, -7);
    ptxsim::Memory mem;
    mem.add(src.data(), src.size(), "src");
    mem.add(dst.data(), dst.size(), "dst");
    mem.add(flags.data(), flags.size() * 4, "flags");
    ptxsim::TensorMaps maps;
    auto cfg = config(m, e, 128, pointer_params(*m, e, {src.data(), dst.data(), flags.data()}));
    cfg.policy = pol;
    auto rep = ptxsim::launch(cfg, mem, maps);
    REQUIRE_MESSAGE(rep.ok(), rep.text());
    for (int i = 0; i < 6; ++i) CHECK(flags[i] == 1);
    CHECK(flags[6] == -7);
    CHECK(dst == src);
  }
}

TEST_CASE("prim_sync: named barriers between a producer and a consumer warpgroup") {
  REQUIRE_CORPUS(m, "prim_sync");
  std::string e = entry_named(*m, "prim_named_barrier");
  for (auto pol : kPolicies) {
    std::vector<int> in(8 * 128), out(8 * 128, -7);
    for (int i = 0; i < 1024; ++i) in[i] = 3 * i + 1;
    ptxsim::Memory mem;
    mem.add(in.data(), in.size() * 4, "in");
    mem.add(out.data(), out.size() * 4, "out");
    ptxsim::TensorMaps maps;
    auto cfg = config(m, e, 256, pointer_params(*m, e, {in.data(), out.data()}));
    cfg.policy = pol;
    auto rep = ptxsim::launch(cfg, mem, maps);
    REQUIRE_MESSAGE(rep.ok(), rep.text());
    for (int g = 0; g < 8; ++g)
      for (int t = 0; t < 128; ++t) CHECK(out[g * 128 + t] == in[g * 128 + (t * 5 + g) % 128]);
  }
}

TEST_CASE("prim_sync: setmaxnreg producer/consumer split within the pool") {
  REQUIRE_CORPUS(m, "prim_sync");
  std::string e = entry_named(*m, "prim_setmaxnreg");
  std::vector<float> values(256 * 160), scale(8), out(256, -1.0f);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float((int)(i % 29) - 14) * 0.125f;
  for (int j = 0; j < 8; ++j) scale[j] = 0.5f + 0.25f * j;
  ptxsim::Memory mem;
  mem.add(values.data(), values.size() * 4, "values");
  mem.add(scale.data(), scale.size() * 4, "scale");
  mem.add(out.data(), out.size() * 4, "out");
  ptxsim::TensorMaps maps;
  auto cfg = config(m, e, 384, pointer_params(*m, e, {values.data(), scale.data(), out.data()}));
  // __launch_bounds__(384, 1): 65536 / 384 rounded down to 8 is 168 registers per thread;
  // 128 * 40 + 256 * 232 = 64512 <= 384 * 168
  cfg.regs_per_thread = 168;
  auto rep = ptxsim::launch(cfg, mem, maps);
  REQUIRE_MESSAGE(rep.ok(), rep.text());
  for (int c = 0; c < 256; ++c) {
    float acc = 0.0f;
    for (int i = 0; i < 160; ++i) acc = std::fma(values[i * 256 + c], scale[i % 8], acc);  // fma.rn.f32 in the PTX
    CHECK(out[c] == acc);
  }
  // the same kernel with a smaller pool: the consumers' .inc can never be satisfied
  auto cfg2 = cfg;
  cfg2.regs_per_thread = 128;
  std::fill(out.begin(), out.end(), -1.0f);
  auto rep2 = ptxsim::launch(cfg2, mem, maps);
  REQUIRE(!rep2.ok());
  CHECK(rep2.text().find("setmaxnreg") != std::string::npos);
}

// ldmatrix (PTX ISA, "ldmatrix"): for .x{1,2,4}, matrix i's row r is at the address of thread
// 8i + r; thread l's register i holds row l/4, columns 2(l%4) and 2(l%4)+1 of matrix i (low half
// first). With .trans, the element (row, col) of the above is taken from (col, row).
TEST_CASE("prim_ldst: ldmatrix / stmatrix x1/x2/x4 with and without .trans") {
  REQUIRE_CORPUS(m, "prim_ldst");
  std::string e = entry_named(*m, "prim_ldstmatrix");
  std::vector<uint16_t> tile(256), tiles(4 * 256, 0);
  for (int i = 0; i < 256; ++i) tile[i] = (uint16_t)(0x1000 + i);
  std::vector<uint32_t> regs(32 * 16, 0);
  ptxsim::Memory mem;
  mem.add(tile.data(), 512, "tile");
  mem.add(regs.data(), regs.size() * 4, "regs");
  mem.add(tiles.data(), tiles.size() * 2, "tiles");
  ptxsim::TensorMaps maps;
  auto rep = ptxsim::launch(config(m, e, 32, pointer_params(*m, e, {tile.data(), regs.data(), tiles.data()})), mem, maps);
  REQUIRE_MESSAGE(rep.ok(), rep.text());
  // thread l addresses row (m%2)*8 + l%8, column block (m/2)*8 of the 16x16 tile, m = l/8:
  // matrix i (i = 0..3) is the 8x8 block (row block i%2, column block i/2).
  auto elem = [&](int i, int r, int c) { return tile[((i % 2) * 8 + r) * 16 + (i / 2) * 8 + c]; };
  auto reg = [&](int i, int l, bool trans) {
    int r = l / 4, c = 2 * (l % 4);
    uint16_t lo = trans ? elem(i, c, r) : elem(i, r, c), hi = trans ? elem(i, c + 1, r) : elem(i, r, c + 1);
    return (uint32_t)lo | ((uint32_t)hi << 16);
  };
  for (int l = 0; l < 32; ++l) {
    const uint32_t* r = &regs[l * 16];
    CHECK(r[0] == reg(0, l, false));
    CHECK(r[1] == reg(0, l, false));
    CHECK(r[2] == reg(1, l, false));
    for (int i = 0; i < 4; ++i) CHECK(r[3 + i] == reg(i, l, false));
    CHECK(r[7] == reg(0, l, true));
    CHECK(r[8] == reg(0, l, true));
    CHECK(r[9] == reg(1, l, true));
    for (int i = 0; i < 4; ++i) CHECK(r[10 + i] == reg(i, l, true));
  }
  // stmatrix x4 of the x4 registers writes the tile back; .trans writes each block transposed;
  // x2 writes blocks 0 and 1 only; x1.trans block 0 transposed; the rest keeps the poison.
  for (int i = 0; i < 4; ++i)
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) {
        int idx = ((i % 2) * 8 + r) * 16 + (i / 2) * 8 + c;
        CHECK(tiles[idx] == elem(i, r, c));
        CHECK(tiles[256 + idx] == elem(i, c, r));
        CHECK(tiles[512 + idx] == (i < 2 ? elem(i, r, c) : 0xDEAD));
        CHECK(tiles[768 + idx] == (i == 0 ? elem(0, c, r) : 0xDEAD));
      }
}

// prmt (PTX ISA, default mode): the 8 bytes {b, a} are numbered 0..7 (a's bytes 0-3); each
// selector nibble picks a byte by its low 3 bits; bit 3 replicates that byte's sign bit.
static uint32_t prmt_ref(uint32_t a, uint32_t b, uint32_t s) {
  uint64_t bytes = ((uint64_t)b << 32) | a;
  uint32_t r = 0;
  for (int k = 0; k < 4; ++k) {
    uint32_t n = (s >> (4 * k)) & 0xF;
    uint8_t v = (uint8_t)(bytes >> (8 * (n & 7)));
    if (n & 8) v = (v & 0x80) ? 0xFF : 0x00;
    r |= (uint32_t)v << (8 * k);
  }
  return r;
}

TEST_CASE("prim_ldst: prmt with run-time and fixed selectors") {
  REQUIRE_CORPUS(m, "prim_ldst");
  std::string e = entry_named(*m, "prim_prmt");
  const int n = 256;
  std::vector<uint32_t> a(n), b(n), sel(n), out(n), fixed(2 * n);
  uint64_t x = 12345;
  for (int i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    a[i] = (uint32_t)(x >> 32);
    b[i] = (uint32_t)x ^ 0x80808080u;
    sel[i] = (uint32_t)(x >> 13) & 0xFFFF;
  }
  ptxsim::Memory mem;
  for (auto* v : {&a, &b, &sel, &out, &fixed}) mem.add(v->data(), v->size() * 4, "buf");
  ptxsim::TensorMaps maps;
  auto rep = ptxsim::launch(config(m, e, 128, pointer_params(*m, e, {a.data(), b.data(), sel.data(), out.data(), fixed.data()}), n / 128), mem, maps);
  REQUIRE_MESSAGE(rep.ok(), rep.text());
  for (int i = 0; i < n; ++i) {
    CHECK(out[i] == prmt_ref(a[i], b[i], sel[i]));
    CHECK(fixed[2 * i] == prmt_ref(a[i], b[i], 0x5410));
    CHECK(fixed[2 * i + 1] == prmt_ref(a[i], b[i], 0xC840));
  }
}

TEST_CASE("prim_ldst: elect.sync over the full warp and over a partial membermask") {
  REQUIRE_CORPUS(m, "prim_ldst");
  std::string e = entry_named(*m, "prim_elect");
  std::vector<int> full(32, -7), part(32, -7);
  ptxsim::Memory mem;
  mem.add(full.data(), 128, "full");
  mem.add(part.data(), 128, "part");
  ptxsim::TensorMaps maps;
  auto rep = ptxsim::launch(config(m, e, 32, pointer_params(*m, e, {full.data(), part.data()})), mem, maps);
  REQUIRE_MESSAGE(rep.ok(), rep.text());
  const uint32_t mask = 0x0F0F00F0u;
  const int leader = __builtin_ctz(mask);  // ISA reading: the lowest active lane of the mask
  for (int l = 0; l < 32; ++l) {
    CHECK(full[l] == ((l == 0 ? 1 : 0) | (0 << 8)));
    if ((mask >> l) & 1) CHECK(part[l] == ((l == leader ? 1 : 0) | (leader << 8)));
    else CHECK(part[l] == -1);
  }
}

}  // TEST_SUITE
