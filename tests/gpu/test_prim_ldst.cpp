// GPU tests of ptx/ldst.cuh (ldmatrix/stmatrix round trips, prmt, elect.sync) and ptx/cluster.cuh
// (DSMEM exchange, barrier.cluster, remote mbarrier arrive, multicast TMA) in a 2-CTA cluster.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "src/tensormap.h"
#include "tests/kernels/prim_host_util.h"
#include "tests/kernels/prim_ldst.h"

using namespace flashptx_test::prim;

namespace {

// Matrix j of the 16x16 tile: rows (j%2)*8.., cols (j/2)*8.. (the addressing of the kernel).
uint16_t mat(const std::vector<uint16_t>& t, int j, int r, int c) { return t[((j % 2) * 8 + r) * 16 + (j / 2) * 8 + c]; }

// Lane t's fragment register of matrix j: (row t/4, cols 2(t%4), +1), low column in the low half.
uint32_t frag(const std::vector<uint16_t>& t, int j, int lane, bool trans) {
  const int r = lane / 4, c = 2 * (lane % 4);
  const uint32_t lo = trans ? mat(t, j, c, r) : mat(t, j, r, c);
  const uint32_t hi = trans ? mat(t, j, c + 1, r) : mat(t, j, r, c + 1);
  return lo | (hi << 16);
}

uint32_t prmt_model(uint32_t a, uint32_t b, uint32_t s) {
  const uint64_t bytes = static_cast<uint64_t>(a) | (static_cast<uint64_t>(b) << 32);
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t n = (s >> (4 * i)) & 0xFu;
    uint32_t byte = static_cast<uint32_t>(bytes >> (8 * (n & 7u))) & 0xFFu;
    if (n & 8u) byte = (byte & 0x80u) ? 0xFFu : 0x00u;
    d |= byte << (8 * i);
  }
  return d;
}

}  // namespace

TEST_SUITE("gpu_sm90 primitives ldst") {

TEST_CASE("ldmatrix x1/x2/x4 (.trans) fragments and stmatrix (.trans) round trips") {
  std::mt19937 g(4001);
  std::vector<uint16_t> tile(256);
  for (auto& v : tile) { v = static_cast<uint16_t>(g()); if (v == kLdPoison) v = 1; }
  DevBuf<uint16_t> d_tile(256), tiles(4 * 256);
  DevBuf<uint32_t> regs(32 * kLdRegs);
  d_tile.upload(tile);
  regs.poison();
  tiles.poison();
  PRIM_LAUNCH_REQUIRE(launch_ldstmatrix(d_tile.p, regs.p, tiles.p));
  const auto r = regs.download();
  const auto t = tiles.download();
  struct Slot { int reg; int mat; bool trans; const char* what; };
  const Slot slots[] = {{0, 0, false, "x1"},         {1, 0, false, "x2 r0"},      {2, 1, false, "x2 r1"},
                        {3, 0, false, "x4 r0"},      {4, 1, false, "x4 r1"},      {5, 2, false, "x4 r2"},
                        {6, 3, false, "x4 r3"},      {7, 0, true, "x1.trans"},    {8, 0, true, "x2.trans r0"},
                        {9, 1, true, "x2.trans r1"}, {10, 0, true, "x4.trans r0"}, {11, 1, true, "x4.trans r1"},
                        {12, 2, true, "x4.trans r2"}, {13, 3, true, "x4.trans r3"}};
  for (const Slot& s : slots) {
    int bad = 0;
    for (int lane = 0; lane < 32; ++lane) {
      const uint32_t got = r[lane * kLdRegs + s.reg], want = frag(tile, s.mat, lane, s.trans);
      if (got != want && ++bad <= 2) MESSAGE("ldmatrix " << s.what << " lane " << lane << ": " << got << " want " << want);
    }
    CHECK_MESSAGE(bad == 0, "ldmatrix " << s.what);
  }
  // Expected stmatrix tiles.
  std::vector<uint16_t> w_x4 = tile, w_x4t(256), w_x2(256, kLdPoison), w_x1t(256, kLdPoison);
  for (int j = 0; j < 4; ++j)
    for (int rr = 0; rr < 8; ++rr)
      for (int cc = 0; cc < 8; ++cc) {
        const int idx = ((j % 2) * 8 + rr) * 16 + (j / 2) * 8 + cc;
        w_x4t[idx] = mat(tile, j, cc, rr);
        if (j < 2) w_x2[idx] = tile[idx];
        if (j == 0) w_x1t[idx] = mat(tile, 0, cc, rr);
      }
  const std::vector<uint16_t>* want[4] = {&w_x4, &w_x4t, &w_x2, &w_x1t};
  const char* names[4] = {"stmatrix x4 (round trip)", "stmatrix x4.trans", "stmatrix x2", "stmatrix x1.trans"};
  for (int k = 0; k < 4; ++k) {
    int bad = 0;
    for (int i = 0; i < 256; ++i)
      if (t[k * 256 + i] != (*want[k])[i] && ++bad <= 2)
        MESSAGE(names[k] << " element (" << i / 16 << ", " << i % 16 << "): " << t[k * 256 + i] << " want " << (*want[k])[i]);
    CHECK_MESSAGE(bad == 0, names[k]);
  }
}

TEST_CASE("prmt: runtime and immediate selectors, sign replication") {
  const int n = 1024;
  std::mt19937 g(4002);
  std::vector<uint32_t> a(n), b(n), s(n);
  for (int i = 0; i < n; ++i) { a[i] = g(); b[i] = g(); s[i] = g() & 0xFFFFu; }
  DevBuf<uint32_t> da(n), db(n), ds(n), out(n), fixed(2 * n);
  da.upload(a); db.upload(b); ds.upload(s);
  out.poison(); fixed.poison();
  PRIM_LAUNCH_REQUIRE(launch_prmt(da.p, db.p, ds.p, out.p, fixed.p, n));
  const auto o = out.download(), f = fixed.download();
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    bad += o[i] != prmt_model(a[i], b[i], s[i]);
    bad += f[2 * i] != prmt_model(a[i], b[i], 0x5410);
    bad += f[2 * i + 1] != prmt_model(a[i], b[i], 0xC840);
  }
  CHECK_MESSAGE(bad == 0, bad << " prmt results differ from the byte-permute model");
}

TEST_CASE("elect.sync: exactly one elected member, all members agree on its lane") {
  DevBuf<int> full(32), part(32);
  full.poison(); part.poison();
  PRIM_LAUNCH_REQUIRE(launch_elect(full.p, part.p));
  const auto f = full.download(), p = part.download();
  auto check = [](const std::vector<int>& v, uint32_t mask, const char* what) {
    INFO(what);
    int elected = 0, leader = -1;
    for (int l = 0; l < 32; ++l) {
      if (!((mask >> l) & 1u)) { CHECK(v[l] == -1); continue; }
      if (v[l] & 1) { ++elected; CHECK_MESSAGE((v[l] >> 8) == l, "the elected thread's reported lane is not its own"); }
      if (leader < 0) leader = v[l] >> 8;
      CHECK_MESSAGE((v[l] >> 8) == leader, "members disagree on the elected lane");
    }
    CHECK(elected == 1);
    CHECK(((mask >> leader) & 1u) == 1u);
  };
  check(f, 0xFFFFFFFFu, "full mask");
  check(p, kElectMask, "partial mask");
}

}  // TEST_SUITE

TEST_SUITE("gpu_sm90 primitives cluster") {

TEST_CASE("2-CTA cluster: ranks, DSMEM loads/stores across barrier.cluster, remote mbarrier arrive") {
  std::mt19937 g(4003);
  std::vector<uint32_t> in(512);
  for (auto& v : in) v = g();
  DevBuf<uint32_t> d_in(512), ld(512), st(512), v4(512);
  DevBuf<int> info(8);
  d_in.upload(in);
  ld.poison(); st.poison(); v4.poison(); info.poison();
  PRIM_LAUNCH_REQUIRE(launch_cluster_dsmem(d_in.p, info.p, ld.p, st.p, v4.p));
  const auto inf = info.download();
  for (int cta = 0; cta < 2; ++cta) {
    INFO("CTA " << cta);
    CHECK(inf[cta * 4 + 0] == cta);  // blockIdx.x 0,1 form cluster 0 with ranks 0,1
    CHECK(inf[cta * 4 + 1] == 2);
    CHECK(inf[cta * 4 + 2] == cta);
    CHECK(inf[cta * 4 + 3] == 0);
  }
  const auto l = ld.download(), s = st.download(), v = v4.download();
  int bad_ld = 0, bad_st = 0, bad_v4 = 0;
  for (int rank = 0; rank < 2; ++rank) {
    const int peer = rank ^ 1;
    for (int t = 0; t < 256; ++t) {
      bad_ld += l[rank * 256 + t] != in[peer * 256 + (t * 3) % 256];
      bad_v4 += v[rank * 256 + t] != in[peer * 256 + t];
      bad_st += s[rank * 256 + t] != (in[peer * 256 + t] ^ 0x5A5A5A5Au);  // written by the peer
    }
  }
  CHECK_MESSAGE(bad_ld == 0, bad_ld << " ld.shared::cluster.u32 values are not the peer's");
  CHECK_MESSAGE(bad_v4 == 0, bad_v4 << " ld.shared::cluster.v4 values are not the peer's");
  CHECK_MESSAGE(bad_st == 0, bad_st << " words the peer stored by st.shared::cluster are missing or wrong");
}

TEST_CASE("2-CTA cluster: a multicast TMA load lands in both CTAs") {
  const uint64_t dims[2] = {96, 24}, strides[1] = {96 * 2};
  const uint32_t box[2] = {32, 8};
  std::mt19937 g(4004);
  std::vector<uint16_t> host(96 * 24);
  for (auto& v : host) v = static_cast<uint16_t>(1 + g() % 65535);
  DevBuf<uint16_t> tensor(host.size());
  tensor.upload(host);
  CUtensorMap map;
  std::string err;
  REQUIRE_MESSAGE(flashptx::encode_tensor_map(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, tensor.p, dims, strides, box,
                                              CU_TENSOR_MAP_SWIZZLE_NONE, &err), err);
  const uint32_t box_bytes = 32 * 8 * 2;
  const int c0 = 40, c1 = 9;
  DevBuf<uint16_t> out(2 * 32 * 8);
  out.poison();
  PRIM_LAUNCH_REQUIRE(launch_cluster_multicast(map, c0, c1, box_bytes, out.p));
  const auto o = out.download();
  for (int rank = 0; rank < 2; ++rank) {
    int bad = 0;
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 32; ++c)
        bad += o[rank * 256 + r * 32 + c] != host[(c1 + r) * 96 + c0 + c];
    CHECK_MESSAGE(bad == 0, "CTA rank " << rank << ": " << bad << " elements of the multicast box differ");
  }
}

}  // TEST_SUITE
