// The racecheck reproducer's GPU suite (kernels: tests/kernels/race_repro.cu; the matrix that runs
// each case under compute-sanitizer: tools/race/racecheck_matrix.sh; findings: tools/race/README.md).
//
// One TEST_CASE per compiled variant, named exactly as the variant, so that one sanitizer run can
// take one case: run_tests -ts='gpu_sm90 race repro' -tc='<variant>'. Each case draws fresh random
// inputs (the seed is printed on failure), runs the variant once and checks every output against
// the exact value computed here: inputs are small integers, so every sum, product and bf16 rounding
// on the device is exact and the comparison is equality. A wrong value names the tile (iteration) it
// came from, which tells a stale or overwritten ring slot from a wrong read.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "src/tensormap.h"
#include "tests/kernels/prim_host_util.h"
#include "tests/kernels/race_repro.h"
#include "tools/support/dtype.h"

using namespace flashptx_test::race;
using flashptx_test::prim::DevBuf;

namespace {

// bf16 [rows][64], box 64 x box_rows, 128B swizzle (the FA3 K/V/Q maps at head dim 64).
bool encode_rows(CUtensorMap* map, const void* base, uint64_t rows, uint32_t box_rows) {
  const uint64_t dims[2] = {static_cast<uint64_t>(kRaceCols), rows};
  const uint64_t strides[1] = {static_cast<uint64_t>(kRaceCols) * 2};
  const uint32_t box[2] = {static_cast<uint32_t>(kRaceCols), box_rows};
  std::string err;
  const bool ok = flashptx::encode_tensor_map(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, base, dims, strides, box,
                                              CU_TENSOR_MAP_SWIZZLE_128B, &err);
  if (!ok) MESSAGE("encode_tensor_map: " << err);
  return ok;
}

// n integers uniform in [-amp, amp], as bf16 bits (exact) and as values.
std::vector<uint16_t> random_ints(size_t n, int amp, std::mt19937& g, std::vector<double>* val) {
  std::uniform_int_distribution<int> U(-amp, amp);
  std::vector<uint16_t> bits(n);
  val->resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int x = U(g);
    (*val)[i] = x;
    bits[i] = flashptx::float_to_bf16(static_cast<float>(x));
  }
  return bits;
}

// Synchronises with a limit: a spin-wait variant whose protocol broke would hang the whole test run;
// this ends the process with a message instead (a hung kernel cannot be cancelled from the host).
cudaError_t sync_with_limit(const char* name, double seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t e = cudaStreamQuery(nullptr);
    if (e != cudaErrorNotReady) return e == cudaSuccess ? cudaDeviceSynchronize() : e;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > seconds) {
      std::fprintf(stderr, "race repro: variant %s still running after %.0f s: its kernel hangs; exiting\n", name,
                   seconds);
      std::fflush(stderr);
      std::_Exit(3);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void run_variant(const char* name) {
  const Variant* v = find_race_variant(name);
  REQUIRE_MESSAGE(v != nullptr, "no compiled variant named " << name);
  const uint32_t seed = std::random_device{}();
  INFO("variant " << name << " (" << v->isolates << "), seed " << seed);
  std::mt19937 g(seed);

  // Magnitudes keep everything exact: |K|,|Q| <= 4 gives |row sum of S| <= 64*64*16 < 2^24; the
  // K/V bridge uses {-1, 0, 1}, so |S| <= 64 is exact in bf16 (P) and |O| <= 24*64*64 < 2^24.
  // Tiles past the variant's `iters` are uploaded but never read.
  const int amp = v->reader == Reader::kFa3Kv ? 1 : 4;
  const size_t kv_elems = static_cast<size_t>(kRaceIters) * kRaceTileRows * kRaceCols;
  const size_t q_elems = static_cast<size_t>(kRaceQRows) * kRaceCols;
  std::vector<double> K, V, Q;
  const std::vector<uint16_t> hk = random_ints(kv_elems, amp, g, &K);
  const std::vector<uint16_t> hv = random_ints(kv_elems, amp, g, &V);
  const std::vector<uint16_t> hq = random_ints(q_elems, amp, g, &Q);
  DevBuf<uint16_t> dk(kv_elems), dv(kv_elems), dq(q_elems);
  dk.upload(hk);
  dv.upload(hv);
  dq.upload(hq);
  DevBuf<float> dout(kRaceOutFloats);
  dout.poison(0xFF);  // NaN: an output the kernel never wrote cannot pass
  CUtensorMap mk, mv, mq;
  REQUIRE(encode_rows(&mk, dk.p, static_cast<uint64_t>(kRaceIters) * kRaceTileRows, kRaceTileRows));
  REQUIRE(encode_rows(&mv, dv.p, static_cast<uint64_t>(kRaceIters) * kRaceTileRows, kRaceTileRows));
  REQUIRE(encode_rows(&mq, dq.p, kRaceQRows, kRaceQRows));

  const cudaError_t le = launch_race_variant(name, mk, mv, mq, dk.p, dout.p);
  REQUIRE_MESSAGE(le == cudaSuccess, "launch: " << cudaGetErrorString(le));
  const cudaError_t se = sync_with_limit(name, 120.0);
  REQUIRE_MESSAGE(se == cudaSuccess, "kernel: " << cudaGetErrorString(se));
  const std::vector<float> out = dout.download();

  // Expected outputs, with the tile (iteration) each depends on (-1: all of them).
  std::vector<double> want;
  std::vector<int> iter_of;
  auto at = [](const std::vector<double>& x, size_t row, int col) { return x[row * kRaceCols + col]; };
  if (v->reader == Reader::kLds) {
    for (int i = 0; i < v->iters; ++i)
      for (int c = 0; c < kRaceConsumers; ++c)
        for (int r = 0; r < kRaceTileRows; ++r) {
          double s = 0;
          for (int k = 0; k < kRaceCols; ++k) s += at(K, static_cast<size_t>(i) * kRaceTileRows + r, k);
          want.push_back(s);
          iter_of.push_back(i);
        }
  } else if (v->reader == Reader::kWgmma) {
    for (int i = 0; i < v->iters; ++i) {
      std::vector<double> colsum(kRaceCols, 0.0);  // sum over the tile's rows n of K[n][k]
      for (int n = 0; n < kRaceTileRows; ++n)
        for (int k = 0; k < kRaceCols; ++k) colsum[k] += at(K, static_cast<size_t>(i) * kRaceTileRows + n, k);
      for (int c = 0; c < kRaceConsumers; ++c)
        for (int r = 0; r < 64; ++r) {
          double s = 0;  // sum_n S[r][n] = sum_k Q[64c + r][k] * colsum[k]
          for (int k = 0; k < kRaceCols; ++k) s += at(Q, 64 * c + r, k) * colsum[k];
          want.push_back(s);
          iter_of.push_back(i);
        }
    }
  } else {
    std::vector<double> O(static_cast<size_t>(kRaceConsumers) * 64 * 64, 0.0);
    for (int j = 0; j < v->iters; ++j)
      for (int c = 0; c < kRaceConsumers; ++c)
        for (int m = 0; m < 64; ++m)
          for (int n = 0; n < kRaceTileRows; ++n) {
            const size_t kn = static_cast<size_t>(j) * kRaceTileRows + n;
            double s = 0;  // S_j[m][n], exact in bf16 (|s| <= 64)
            for (int k = 0; k < kRaceCols; ++k) s += at(Q, 64 * c + m, k) * at(K, kn, k);
            if (s == 0) continue;
            for (int d = 0; d < kRaceCols; ++d) O[(static_cast<size_t>(c) * 64 + m) * 64 + d] += s * at(V, kn, d);
          }
    want = O;
    iter_of.assign(O.size(), -1);
  }

  int bad = 0;
  std::set<int> bad_iters;
  for (size_t e = 0; e < want.size(); ++e) {
    if (static_cast<double>(out[e]) == want[e]) continue;
    bad_iters.insert(iter_of[e]);
    if (++bad <= 6)
      MESSAGE("output " << e << " (tile " << iter_of[e] << "): " << out[e] << ", expected " << want[e]);
  }
  std::string iters;
  for (int i : bad_iters) {
    if (!iters.empty()) iters += ' ';
    iters += std::to_string(i);
  }
  CHECK_MESSAGE(bad == 0, name << ": " << bad << " of " << want.size() << " outputs wrong; tiles: " << iters);
}

}  // namespace

TEST_SUITE("race repro variants") {

TEST_CASE("the variant table: unique names, valid shapes, each isolating something") {
  std::set<std::string> names;
  REQUIRE(race_variant_count() > 0);
  for (int i = 0; i < race_variant_count(); ++i) {
    const Variant& v = race_variant(i);
    INFO(v.name);
    CHECK(names.insert(v.name).second);
    CHECK(std::strchr(v.name, ',') == nullptr);  // doctest -tc splits filters at commas
    CHECK(std::strchr(v.name, ' ') == nullptr);
    CHECK(v.stages >= 2);
    CHECK(v.stages <= kRaceIters);
    CHECK(v.iters >= 1);
    CHECK(v.iters <= kRaceIters);
    CHECK((v.copy == Copy::kTensor || v.reader == Reader::kLds));
    CHECK((!v.serial_wgmma || v.reader != Reader::kLds));
    CHECK(std::strlen(v.isolates) > 0);
    CHECK(find_race_variant(v.name) == &v);
  }
  CHECK(find_race_variant("no such variant") == nullptr);
}

}  // TEST_SUITE

// One case per variant, in the table's order; the names are the variants'.
TEST_SUITE("gpu_sm90 race repro") {

TEST_CASE("fa3kv_regs_wrap_spin") { run_variant("fa3kv_regs_wrap_spin"); }
TEST_CASE("fa3kv_regs_wrap_bounded") { run_variant("fa3kv_regs_wrap_bounded"); }
TEST_CASE("fa3kv_regs_wrap_boundednp") { run_variant("fa3kv_regs_wrap_boundednp"); }
TEST_CASE("fa3kv_regs_wrap_spin_serial") { run_variant("fa3kv_regs_wrap_spin_serial"); }
TEST_CASE("fa3kv_regs_nowrap_spin") { run_variant("fa3kv_regs_nowrap_spin"); }
TEST_CASE("wgmma_regs_wrap_spin") { run_variant("wgmma_regs_wrap_spin"); }
TEST_CASE("wgmma_regs_nowrap_spin") { run_variant("wgmma_regs_nowrap_spin"); }
TEST_CASE("lds_wrap_spin") { run_variant("lds_wrap_spin"); }
TEST_CASE("fa3kv_wrap_spin") { run_variant("fa3kv_wrap_spin"); }
TEST_CASE("fa3kv_regs_wrap_pspin_cboundednp") { run_variant("fa3kv_regs_wrap_pspin_cboundednp"); }
TEST_CASE("fa3kv_regs_wrap_pboundednp_cspin") { run_variant("fa3kv_regs_wrap_pboundednp_cspin"); }
TEST_CASE("fa3kv_regs_wrap_testwait") { run_variant("fa3kv_regs_wrap_testwait"); }
TEST_CASE("fa3kv_regs_wrap_hint") { run_variant("fa3kv_regs_wrap_hint"); }
TEST_CASE("fa3kv_regs_wrap_backoff") { run_variant("fa3kv_regs_wrap_backoff"); }
TEST_CASE("wgmma_regs_wrap_bounded") { run_variant("wgmma_regs_wrap_bounded"); }
TEST_CASE("lds_regs_wrap_spin") { run_variant("lds_regs_wrap_spin"); }
TEST_CASE("lds_wrap_boundednp") { run_variant("lds_wrap_boundednp"); }
TEST_CASE("lds_nowrap_spin") { run_variant("lds_nowrap_spin"); }
TEST_CASE("fa3kv_regs_single_spin") { run_variant("fa3kv_regs_single_spin"); }
TEST_CASE("bulk_lds_wrap_boundednp") { run_variant("bulk_lds_wrap_boundednp"); }

}  // TEST_SUITE
