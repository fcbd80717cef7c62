// Simulator core: the project's TMA and wgmma primitive kernels (tests/kernels/prim_tma.cu,
// prim_wgmma.cu) in the simulator. Inputs follow the host launchers; expectations come from the
// PTX ISA: the tensor copy's box (dense, innermost first, out-of-bound elements zero) with the
// 128B swizzle (16-byte chunk index XOR address bits 7-9), and D = A * B for wgmma with exactly
// representable inputs, so the fp32 sums are exact in any order and equal the fp64 product.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "tests/sim/sim_core_util.h"
#include "tools/sim/isa/tensormap.h"

using namespace simtest;

namespace {

std::string ptx_dir2() {
#ifdef FLASHPTX_BUILD_DIR
  return std::string(FLASHPTX_BUILD_DIR) + "/ptx/tests/kernels/";
#else
  return "build/ptx/tests/kernels/";
#endif
}

std::shared_ptr<const ptxsim::Module> module2(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const ptxsim::Module>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  std::string text = read_file(ptx_dir2() + name + ".ptx");
  if (text.empty()) return nullptr;
  std::string err;
  auto m = ptxsim::load_module(text, name + ".ptx", &err);
  cache[name] = m;
  return m;
}

std::string find_entry(const ptxsim::Module& m, const std::string& a, const std::string& b = "") {
  for (auto& e : ptxsim::entries(m))
    if (e.find(a) != std::string::npos && (b.empty() || e.find(b) != std::string::npos)) return e;
  return "";
}

#define REQUIRE_CORPUS2(m, name)                                                                  \
  auto m = module2(name);                                                                         \
  if (!m) {                                                                                       \
    MESSAGE("skipped: " << ptx_dir2() << name << ".ptx is absent (make sim-ptx generates it)");  \
    return;                                                                                       \
  }

uint16_t bf16_of(float f) { return (uint16_t)(u32(f) >> 16); }  // exact for the values used
uint16_t f16_of(float v) {  // exact normal values only (and zero)
  if (v == 0) return 0;
  uint16_t s = v < 0 ? 0x8000 : 0;
  float a = std::fabs(v);
  int e = (int)std::floor(std::log2(a));
  float mant = a / std::ldexp(1.0f, e) - 1.0f;
  return (uint16_t)(s | ((e + 15) << 10) | (uint16_t)std::lround(mant * 1024));
}
// e4m3: sign, 4 exponent bits (bias 7), 3 mantissa bits.
float e4m3_value(uint8_t b) {
  int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
  float v = e ? std::ldexp(1.0f + m / 8.0f, e - 7) : std::ldexp(m / 8.0f, -6);
  return s ? -v : v;
}

struct TmaLaunch {
  std::vector<uint8_t> params;
  TmaLaunch(const ptxsim::Module& m, const std::string& e, const uint8_t map[128], int rank, const int32_t c[5],
            uint32_t box_bytes, const void* ptr, int extra = -1) {
    auto ps = ptxsim::entry_params(m, e);
    REQUIRE(ps.size() >= 5);
    Params p;
    p.bytes.resize(ps.back().offset + ps.back().size);
    memcpy(&p.bytes[ps[0].offset], map, 128);
    p.put<int32_t>(ps[1].offset, rank);
    REQUIRE(ps[2].size == 20);
    memcpy(&p.bytes[ps[2].offset], c, 20);
    p.put<uint32_t>(ps[3].offset, box_bytes);
    p.put<uint64_t>(ps[4].offset, (uint64_t)ptr);
    if (extra >= 0) { REQUIRE(ps.size() == 6); p.put<int32_t>(ps[5].offset, extra); }
    params = p.bytes;
  }
};

}  // namespace

TEST_SUITE("sim core prim") {

TEST_CASE("prim_tma: 2D bf16 tile load with the 128B swizzle") {
  REQUIRE_CORPUS2(m, "prim_tma");
  std::string e = find_entry(*m, "prim_tma_load");
  std::vector<uint16_t> g(64 * 32);
  for (int r = 0; r < 32; ++r) for (int c = 0; c < 64; ++c) g[r * 64 + c] = (uint16_t)(r * 64 + c);
  ptxsim::isa::TensorMapDesc d;
  d.type = ptxsim::isa::ElemType::bf16;
  d.rank = 2;
  d.base = (uint64_t)g.data();
  d.dims[0] = 64; d.dims[1] = 32;
  d.strides_bytes[0] = 2; d.strides_bytes[1] = 128;
  d.box[0] = 64; d.box[1] = 8;
  d.swizzle = ptxsim::isa::Swizzle::b128;
  ptxsim::TensorMaps maps;
  alignas(64) uint8_t map[128];
  ptxsim::TensorMaps::encode(map, maps.add(d));
  for (auto pol : {ptxsim::Policy::kRoundRobin, ptxsim::Policy::kRandom}) {
    std::vector<uint8_t> out(1024, 0);
    ptxsim::Memory mem;
    mem.add(g.data(), g.size() * 2, "g");
    mem.add(out.data(), out.size(), "out");
    int32_t c[5] = {0, 8, 0, 0, 0};
    TmaLaunch L(*m, e, map, 2, c, 1024, out.data());
    auto cfg = config(m, e, 128, L.params);
    cfg.dynamic_smem = 1024 + 1024;
    cfg.policy = pol;
    auto rep = ptxsim::launch(cfg, mem, maps);
    REQUIRE_MESSAGE(rep.ok(), rep.text());
    int bad = 0;
    for (uint32_t r = 0; r < 8; ++r)
      for (uint32_t col = 0; col < 64; ++col) {
        uint32_t L0 = r * 128 + col * 2, P = L0 ^ (((L0 >> 7) & 7) << 4);
        uint16_t v;
        memcpy(&v, &out[P], 2);
        if (v != g[(8 + r) * 64 + col]) ++bad;
      }
    CHECK(bad == 0);
  }
}

TEST_CASE("prim_tma: 3D f32 tile load partly outside the tensor fills zeros") {
  REQUIRE_CORPUS2(m, "prim_tma");
  std::string e = find_entry(*m, "prim_tma_load");
  std::vector<float> g(12 * 5 * 3);
  for (size_t i = 0; i < g.size(); ++i) g[i] = 1.0f + (float)i;
  ptxsim::isa::TensorMapDesc d;
  d.type = ptxsim::isa::ElemType::f32;
  d.rank = 3;
  d.base = (uint64_t)g.data();
  d.dims[0] = 12; d.dims[1] = 5; d.dims[2] = 3;
  d.strides_bytes[0] = 4; d.strides_bytes[1] = 48; d.strides_bytes[2] = 240;
  d.box[0] = 8; d.box[1] = 4; d.box[2] = 2;
  ptxsim::TensorMaps maps;
  alignas(64) uint8_t map[128];
  ptxsim::TensorMaps::encode(map, maps.add(d));
  std::vector<float> out(64, -1.0f);
  ptxsim::Memory mem;
  mem.add(g.data(), g.size() * 4, "g");
  mem.add(out.data(), out.size() * 4, "out");
  int32_t c[5] = {8, 3, 2, 0, 0};
  TmaLaunch L(*m, e, map, 3, c, 256, out.data());
  auto cfg = config(m, e, 128, L.params);
  cfg.dynamic_smem = 256 + 1024;
  auto rep = ptxsim::launch(cfg, mem, maps);
  REQUIRE_MESSAGE(rep.ok(), rep.text());
  for (int z = 0; z < 2; ++z)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 8; ++x) {
        int gx = 8 + x, gy = 3 + y, gz = 2 + z;
        float want = (gx < 12 && gy < 5 && gz < 3) ? g[gz * 60 + gy * 12 + gx] : 0.0f;
        CHECK(out[(z * 4 + y) * 8 + x] == want);
      }
}

TEST_CASE("prim_tma: 2D tile store and reduce-add of a box") {
  REQUIRE_CORPUS2(m, "prim_tma");
  std::string e = find_entry(*m, "prim_tma_store");
  for (int reduce = 0; reduce < 2; ++reduce) {
    std::vector<float> g(16 * 8);
    for (size_t i = 0; i < g.size(); ++i) g[i] = 100.0f + (float)i;
    std::vector<float> img(32);
    for (int i = 0; i < 32; ++i) img[i] = -0.5f * (float)i;
    const ptxsim::isa::TensorMapDesc d = f32_8x16_box8x4(g.data());
    ptxsim::TensorMaps maps;
    alignas(64) uint8_t map[128];
    ptxsim::TensorMaps::encode(map, maps.add(d));
    ptxsim::Memory mem;
    mem.add(g.data(), g.size() * 4, "g");
    mem.add(img.data(), img.size() * 4, "img");
    int32_t c[5] = {8, 4, 0, 0, 0};
    TmaLaunch L(*m, e, map, 2, c, 128, img.data(), reduce);
    auto cfg = config(m, e, 128, L.params);
    cfg.dynamic_smem = 128 + 1024;
    auto rep = ptxsim::launch(cfg, mem, maps);
    REQUIRE_MESSAGE(rep.ok(), rep.text());
    for (int r = 0; r < 8; ++r)
      for (int col = 0; col < 16; ++col) {
        float orig = 100.0f + (float)(r * 16 + col);
        bool in_box = r >= 4 && col >= 8;
        float v = in_box ? img[(r - 4) * 8 + (col - 8)] : 0.0f;
        float want = in_box ? (reduce ? orig + v : v) : orig;
        CHECK(g[r * 16 + col] == want);
      }
  }
}

TEST_CASE("prim_tma: bulk store, bulk reduce-add from eight CTAs, wait_group.read then reuse") {
  REQUIRE_CORPUS2(m, "prim_tma");
  std::string e = find_entry(*m, "prim_bulk");
  for (auto pol : {ptxsim::Policy::kRoundRobin, ptxsim::Policy::kRandom}) {
    std::vector<float> src(8 * 1024), c1(8 * 1024, 0), c2(8 * 1024, 0), acc(1024);
    for (size_t i = 0; i < src.size(); ++i) src[i] = (float)((int)(i % 97) - 48);
    for (int i = 0; i < 1024; ++i) acc[i] = (float)i;
    ptxsim::Memory mem;
    for (auto* v : {&src, &c1, &c2, &acc}) mem.add(v->data(), v->size() * 4, "buf");
    ptxsim::TensorMaps maps;
    Params p;
    auto ps = ptxsim::entry_params(*m, e);
    REQUIRE(ps.size() == 4);
    p.put<uint64_t>(ps[0].offset, (uint64_t)src.data()).put<uint64_t>(ps[1].offset, (uint64_t)c1.data());
    p.put<uint64_t>(ps[2].offset, (uint64_t)c2.data()).put<uint64_t>(ps[3].offset, (uint64_t)acc.data());
    auto cfg = config(m, e, 128, p.bytes, 8);
    cfg.policy = pol;
    cfg.sms = 3;  // more CTAs than SMs
    auto rep = ptxsim::launch(cfg, mem, maps);
    REQUIRE_MESSAGE(rep.ok(), rep.text());
    for (int i = 0; i < 8 * 1024; ++i) {
      CHECK(c1[i] == src[i]);
      CHECK(c2[i] == -src[i]);
    }
    for (int i = 0; i < 1024; ++i) {
      float want = (float)i;
      for (int b = 0; b < 8; ++b) want += src[b * 1024 + i];
      CHECK(acc[i] == want);  // integers: exact in any order
    }
  }
}

// wgmma: out[r * N + c] = sum_k A[r][k] * B[k][c] (A: 64 x K row-major; B K-major: b[c][k];
// MN-major: b[k][c]).
static void run_wgmma_ss(const ptxsim::Module& m, int type, int n, int trans_b) {
  std::string tag = "MmaTypeE" + std::to_string(type) + "ELi" + std::to_string(n) + "ELi" + std::to_string(trans_b) + "E";
  std::string e = find_entry(m, "prim_wgmma_ss", tag);
  REQUIRE_MESSAGE(!e.empty(), tag);
  bool fp8 = type == 2;
  int K = fp8 ? 128 : 64, eb = fp8 ? 1 : 2;
  std::vector<double> A(64 * K), B((size_t)K * n);
  std::vector<uint8_t> a(64 * 128), b((size_t)n * 128);
  auto enc = [&](double v, uint8_t* dst) {
    if (fp8) {
      for (int x = 0; x < 256; ++x) if (e4m3_value((uint8_t)x) == (float)v) { *dst = (uint8_t)x; return; }
      FAIL("no e4m3 code");
    } else {
      uint16_t h = type == 0 ? bf16_of((float)v) : f16_of((float)v);
      memcpy(dst, &h, 2);
    }
  };
  for (int r = 0; r < 64; ++r)
    for (int k = 0; k < K; ++k) {
      A[r * K + k] = ((r * 5 + k * 3) % 9 - 4) * 0.5;
      enc(A[r * K + k], &a[(r * K + k) * eb]);
    }
  for (int k = 0; k < K; ++k)
    for (int c = 0; c < n; ++c) {
      B[(size_t)k * n + c] = ((k * 7 + c * 2) % 5 - 2) * 0.5;
      size_t idx = trans_b ? (size_t)k * n + c : (size_t)c * K + k;
      enc(B[(size_t)k * n + c], &b[idx * eb]);
    }
  std::vector<float> out((size_t)64 * n, -1.0f);
  ptxsim::Memory mem;
  mem.add(a.data(), a.size(), "a");
  mem.add(b.data(), b.size(), "b");
  mem.add(out.data(), out.size() * 4, "out");
  ptxsim::TensorMaps maps;
  Params p;
  auto ps = ptxsim::entry_params(m, e);
  p.put<uint64_t>(ps[0].offset, (uint64_t)a.data()).put<uint64_t>(ps[1].offset, (uint64_t)b.data()).put<uint64_t>(ps[2].offset, (uint64_t)out.data());
  auto cfg = config(std::shared_ptr<const ptxsim::Module>(&m, [](const ptxsim::Module*) {}), e, 128, p.bytes);
  cfg.dynamic_smem = 1024 + 64 * 128 + (trans_b ? (n / 64) * 64 * 128 : n * 128);
  auto rep = ptxsim::launch(cfg, mem, maps);
  REQUIRE_MESSAGE(rep.ok(), tag << ": " << rep.text());
  int bad = 0;
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < n; ++c) {
      double ref = 0;
      for (int k = 0; k < K; ++k) ref += A[r * K + k] * B[(size_t)k * n + c];
      if (out[(size_t)r * n + c] != ref) ++bad;
    }
  CHECK_MESSAGE(bad == 0, tag);
}

TEST_CASE("prim_wgmma: SS bf16/f16 every N, MN-major B, e4m3, against the fp64 product") {
  REQUIRE_CORPUS2(m, "prim_wgmma");
  for (int n : {64, 80, 96, 128, 160, 176, 192, 256}) {
    run_wgmma_ss(*m, 0, n, 0);
    run_wgmma_ss(*m, 1, n, 0);
  }
  for (int n : {64, 128, 256}) {
    run_wgmma_ss(*m, 0, n, 1);
    run_wgmma_ss(*m, 2, n, 0);
  }
}

TEST_CASE("prim_wgmma: RS (A from registers) and wait_group depth") {
  REQUIRE_CORPUS2(m, "prim_wgmma");
  for (int type : {0, 1})
    for (int n : {64, 128, 256}) {
      std::string tag = "MmaTypeE" + std::to_string(type) + "ELi" + std::to_string(n) + "EEv";
      std::string e = find_entry(*m, "prim_wgmma_rs", tag);
      REQUIRE(!e.empty());
      std::vector<double> A(64 * 64), B(64 * (size_t)n);
      std::vector<uint16_t> a(64 * 64);
      std::vector<uint8_t> b((size_t)64 * n * 2);
      for (int i = 0; i < 64 * 64; ++i) { A[i] = ((i * 7) % 11 - 5) * 0.25; a[i] = type == 0 ? bf16_of((float)A[i]) : f16_of((float)A[i]); }
      for (size_t i = 0; i < B.size(); ++i) { B[i] = ((int)(i * 3) % 7 - 3) * 0.5; uint16_t h = type == 0 ? bf16_of((float)B[i]) : f16_of((float)B[i]); memcpy(&b[i * 2], &h, 2); }
      std::vector<float> out((size_t)64 * n, -1.0f);
      ptxsim::Memory mem;
      mem.add(a.data(), a.size() * 2, "a");
      mem.add(b.data(), b.size(), "b");
      mem.add(out.data(), out.size() * 4, "out");
      ptxsim::TensorMaps maps;
      auto ps = ptxsim::entry_params(*m, e);
      Params p;
      p.put<uint64_t>(ps[0].offset, (uint64_t)a.data()).put<uint64_t>(ps[1].offset, (uint64_t)b.data()).put<uint64_t>(ps[2].offset, (uint64_t)out.data());
      auto cfg = config(m, e, 128, p.bytes);
      cfg.dynamic_smem = 1024 + (n / 64) * 64 * 128;
      auto rep = ptxsim::launch(cfg, mem, maps);
      REQUIRE_MESSAGE(rep.ok(), rep.text());
      int bad = 0;
      for (int r = 0; r < 64; ++r)
        for (int c = 0; c < n; ++c) {
          double ref = 0;
          for (int k = 0; k < 64; ++k) ref += A[r * 64 + k] * B[(size_t)k * n + c];
          if (out[(size_t)r * n + c] != ref) ++bad;
        }
      CHECK_MESSAGE(bad == 0, "rs " << tag);
    }
  // wait depth: two groups, wait_group 1 retires the first only
  std::string e = find_entry(*m, "prim_wgmma_wait_depth");
  REQUIRE(!e.empty());
  std::vector<double> A1(64 * 64), A2(64 * 64), B(64 * 64);
  std::vector<uint16_t> a1(64 * 64), a2(64 * 64), b(64 * 64);
  for (int i = 0; i < 4096; ++i) {
    A1[i] = ((i * 5) % 7 - 3) * 0.5; A2[i] = ((i * 3) % 5 - 2) * 0.25; B[i] = ((i * 11) % 9 - 4) * 0.5;
    a1[i] = bf16_of((float)A1[i]); a2[i] = bf16_of((float)A2[i]); b[i] = bf16_of((float)B[i]);
  }
  std::vector<float> o1(64 * 64, -1), o2(64 * 64, -1);
  ptxsim::Memory mem;
  for (auto* v : {&a1, &a2, &b}) mem.add(v->data(), v->size() * 2, "in");
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
  REQUIRE_MESSAGE(rep.ok(), rep.text());
  int bad = 0;
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c) {
      double r1 = 0, r2 = 0;
      for (int k = 0; k < 64; ++k) { r1 += A1[r * 64 + k] * B[c * 64 + k]; r2 += A2[r * 64 + k] * B[c * 64 + k]; }
      if (o1[r * 64 + c] != r1 || o2[r * 64 + c] != r2) ++bad;
    }
  CHECK(bad == 0);
}

}  // TEST_SUITE

TEST_SUITE("sim core prim") {

TEST_CASE("prim_cluster: distributed shared memory (mapa, ld/st.shared::cluster, cluster barriers, remote arrive)") {
  REQUIRE_CORPUS2(m, "prim_cluster");
  std::string e = find_entry(*m, "prim_cluster_dsmem");
  REQUIRE(!e.empty());
  for (auto pol : {ptxsim::Policy::kRoundRobin, ptxsim::Policy::kRandom, ptxsim::Policy::kDelayOneWarpgroup}) {
    std::vector<uint32_t> in(512), ld(512, 0), st(512, 0), v4(512, 0);
    std::vector<int> info(8, -1);
    for (int i = 0; i < 512; ++i) in[i] = 0x1000u * (i / 256 + 1) + (uint32_t)i;
    ptxsim::Memory mem;
    for (auto* v : {&in, &ld, &st, &v4}) mem.add(v->data(), v->size() * 4, "buf");
    mem.add(info.data(), info.size() * 4, "info");
    ptxsim::TensorMaps maps;
    auto ps = ptxsim::entry_params(*m, e);
    Params p;
    const void* ptrs[5] = {in.data(), info.data(), ld.data(), st.data(), v4.data()};
    for (int i = 0; i < 5; ++i) p.put<uint64_t>(ps[i].offset, (uint64_t)ptrs[i]);
    auto cfg = config(m, e, 256, p.bytes, 2);
    cfg.cluster.x = 2;
    cfg.policy = pol;
    auto rep = ptxsim::launch(cfg, mem, maps);
    REQUIRE_MESSAGE(rep.ok(), rep.text());
    for (int r = 0; r < 2; ++r) {
      CHECK(info[r * 4 + 0] == r);
      CHECK(info[r * 4 + 1] == 2);
      CHECK(info[r * 4 + 2] == r);
      CHECK(info[r * 4 + 3] == 0);
      int peer = r ^ 1;
      for (int t = 0; t < 256; ++t) {
        CHECK(ld[r * 256 + t] == in[peer * 256 + (t * 3) % 256]);
        CHECK(v4[r * 256 + t] == (t < 256 ? in[peer * 256 + t] : 0u));
        uint32_t want = t < 256 ? (in[peer * 256 + t] ^ 0x5A5A5A5Au) : 0xDEADBEEFu;
        CHECK(st[r * 256 + t] == want);
      }
    }
  }
}

TEST_CASE("prim_cluster: a multicast tensor load lands in both CTAs and completes each one's barrier") {
  REQUIRE_CORPUS2(m, "prim_cluster");
  std::string e = find_entry(*m, "prim_cluster_multicast");
  REQUIRE(!e.empty());
  std::vector<uint32_t> g(64 * 16);
  for (int i = 0; i < 64 * 16; ++i) g[i] = 0xC0000000u + (uint32_t)i;
  ptxsim::isa::TensorMapDesc d;
  d.type = ptxsim::isa::ElemType::u32;
  d.rank = 2;
  d.base = (uint64_t)g.data();
  d.dims[0] = 64; d.dims[1] = 16;
  d.strides_bytes[0] = 4; d.strides_bytes[1] = 256;
  d.box[0] = 16; d.box[1] = 8;
  ptxsim::TensorMaps maps;
  alignas(64) uint8_t map[128];
  ptxsim::TensorMaps::encode(map, maps.add(d));
  for (auto pol : {ptxsim::Policy::kRoundRobin, ptxsim::Policy::kRandom, ptxsim::Policy::kStarveProducer}) {
    std::vector<uint32_t> out(2 * 128, 0);
    ptxsim::Memory mem;
    mem.add(g.data(), g.size() * 4, "g");
    mem.add(out.data(), out.size() * 4, "out");
    auto ps = ptxsim::entry_params(*m, e);
    REQUIRE(ps.size() == 5);
    Params p;
    p.bytes.resize(ps[4].offset + 8);
    memcpy(&p.bytes[ps[0].offset], map, 128);
    p.put<int32_t>(ps[1].offset, 16).put<int32_t>(ps[2].offset, 8).put<uint32_t>(ps[3].offset, 512).put<uint64_t>(ps[4].offset, (uint64_t)out.data());
    auto cfg = config(m, e, 128, p.bytes, 2);
    cfg.cluster.x = 2;
    cfg.policy = pol;
    auto rep = ptxsim::launch(cfg, mem, maps);
    REQUIRE_MESSAGE(rep.ok(), rep.text());
    for (int r = 0; r < 2; ++r)
      for (int i = 0; i < 128; ++i) CHECK(out[r * 128 + i] == g[(8 + i / 16) * 64 + 16 + i % 16]);
  }
}

}  // TEST_SUITE
