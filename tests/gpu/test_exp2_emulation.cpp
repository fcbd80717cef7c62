// GPU test (docs/PROTOCOLS.md, "The FA4 roles" and "FP8 layouts"): the same exp2 and rescale
// code runs as device functions on the H200
// and matches the host bit for bit; the E4M3FN codebook encoder matches the hardware conversion.
// The host side is the CPU oracle of tools/models/softmax_numerics.cpp; the device side is
// tests/kernels/exp2_emulation_kernels.cu. Every CUDA call and launch is checked.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ios>
#include <string>
#include <vector>

#include "src/protocol/e4m3.h"
#include "src/protocol/exp2_emulation.h"
#include "src/protocol/online_softmax.h"
#include "tools/models/softmax_numerics.h"
#include "tests/kernels/exp2_emulation_kernels.h"

namespace sn = flashptx::models::softmax_numerics;
namespace emu = flashptx::exp2emu;
namespace nk = flashptx_test::numerics;

#define CUDA_OK(expr)                                                          \
  do {                                                                         \
    const cudaError_t e_ = (expr);                                             \
    REQUIRE_MESSAGE(e_ == cudaSuccess, #expr ": " << cudaGetErrorString(e_)); \
  } while (0)

namespace {

// A device buffer freed on scope exit.
template <class T>
struct DevBuf {
  T* p = nullptr;
  size_t n = 0;
  explicit DevBuf(size_t count) : n(count) {
    const cudaError_t e = cudaMalloc(&p, count * sizeof(T));
    REQUIRE_MESSAGE(e == cudaSuccess, "cudaMalloc: " << cudaGetErrorString(e));
  }
  ~DevBuf() { if (p) cudaFree(p); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  void upload(const std::vector<T>& h) {
    REQUIRE(h.size() == n);
    CUDA_OK(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> h(n);
    CUDA_OK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
};

}  // namespace

TEST_SUITE("gpu_sm90 numerics") {

TEST_CASE("degree-3 exp2 on the device equals the host bit for bit (grid and full range)") {
  std::vector<float> x;
  for (int i = 0; i < sn::kGridPoints; ++i) x.push_back(sn::grid_point(i));  // the 65,536-point grid
  for (int i = 0; i < (1 << 17); ++i) x.push_back(-135.0f + i / 512.0f);    // [-135, 121)
  for (float e : {-INFINITY, NAN, -1e-30f, -0.0f, 1e-30f, 126.99f, 127.0f}) x.push_back(e);
  const int n = static_cast<int>(x.size());
  DevBuf<float> dx(n);
  DevBuf<uint32_t> dbits(n);
  dx.upload(x);
  CUDA_OK(nk::launch_exp2_degree3(dx.p, dbits.p, n));
  CUDA_OK(cudaDeviceSynchronize());
  const std::vector<uint32_t> dev = dbits.download();
  int mismatches = 0;
  for (int i = 0; i < n; ++i) {
    const uint32_t host = emu::f2u(emu::exp2_degree3(x[i]));
    if (host != dev[i] && ++mismatches <= 8)
      MESSAGE("x=" << x[i] << " host 0x" << std::hex << host << " device 0x" << dev[i]);
  }
  CHECK(mismatches == 0);
  // the device grid reproduces the ledger's error numbers too (same bits)
  double raw_max = 0;
  for (int i = 0; i < sn::kGridPoints; ++i) {
    const double ref = std::exp2(static_cast<double>(x[i]));
    float y;
    std::memcpy(&y, &dev[i], 4);
    raw_max = std::max(raw_max, std::fabs(y - ref) / ref);
  }
  CHECK(raw_max == sn::grid_stats().raw_max);
}

TEST_CASE("retained-reference rescale recurrence on the device equals the host bit for bit") {
  REQUIRE(nk::kDV == sn::kDV);
  const int rows = 256, blocks = 8, block_len = 64;
  for (float omega : {0.0f, 4.0f, 8.0f}) {
    INFO("omega " << omega);
    std::vector<float> s, v;
    std::vector<sn::RowFixture> fx;
    for (int r = 0; r < rows; ++r) {
      fx.push_back(sn::random_fixture(static_cast<unsigned>(r), blocks, block_len, omega));
      for (int j = 0; j < blocks; ++j) {
        s.insert(s.end(), fx.back().s[j].begin(), fx.back().s[j].end());
        v.insert(v.end(), fx.back().v[j].begin(), fx.back().v[j].end());
      }
    }
    const float lambda = fx[0].lambda, tau = fx[0].tau;
    DevBuf<float> ds(s.size()), dv(v.size()), dout(rows * nk::kDV), dlse(rows), dgamma(rows * blocks);
    DevBuf<uint32_t> dstate(rows * (3 + nk::kDV));
    ds.upload(s);
    dv.upload(v);
    CUDA_OK(nk::launch_rescale_rows(ds.p, dv.p, rows, blocks, block_len, lambda, tau, omega,
                                    dstate.p, dout.p, dlse.p, dgamma.p));
    CUDA_OK(cudaDeviceSynchronize());
    const auto state = dstate.download();
    const auto out = dout.download();
    const auto lse = dlse.download();
    const auto gamma = dgamma.download();
    int bad_state = 0, bad_out = 0, bad_gamma = 0, bad_lse = 0, moved = 0;
    for (int r = 0; r < rows; ++r) {
      const sn::RecurrenceRun h = sn::run_recurrence(fx[r]);
      REQUIRE(sn::check_recurrence(h) == "ok");
      const uint32_t* so = &state[r * (3 + nk::kDV)];
      if (so[0] != emu::f2u(h.state.a) || so[1] != emu::f2u(h.state.D)) ++bad_state;
      for (int d = 0; d < nk::kDV; ++d) {
        if (so[2 + d] != emu::f2u(h.state.N[d])) ++bad_state;
        if (emu::f2u(out[r * nk::kDV + d]) != emu::f2u(h.out[d])) ++bad_out;
      }
      if (so[2 + nk::kDV] != static_cast<uint32_t>(h.state.rescales)) ++bad_state;
      for (int j = 0; j < blocks; ++j) {
        if (emu::f2u(gamma[r * blocks + j]) != emu::f2u(h.gamma[j])) ++bad_gamma;
        if (j > 0 && h.gamma[j] < 1.0f) ++moved;
      }
      // log2f is not bit-equal between glibc and CUDA: a few FP32 ulps
      if (std::fabs(lse[r] - h.lse) > 4e-6 * std::max(1.0f, std::fabs(h.lse))) ++bad_lse;
    }
    CHECK(bad_state == 0);
    CHECK(bad_out == 0);
    CHECK(bad_gamma == 0);
    CHECK(bad_lse == 0);
    CHECK(moved > 0);  // the rows exercise the frame conversion, not only retained references
  }
}

TEST_CASE("E4M3FN codebook encoder equals the hardware satfinite conversion") {
  std::vector<float> x;
  for (uint32_t hi = 0; hi < (1u << 19); ++hi) {  // every sign/exponent/top-10-fraction pattern
    const uint32_t u = hi << 13;
    float f;
    std::memcpy(&f, &u, 4);
    x.push_back(f);
  }
  uint64_t st = 0x5EED;
  for (int i = 0; i < 65536; ++i) {  // arbitrary low bits near the E4M3 range
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    const uint32_t u = (static_cast<uint32_t>(st >> 33) & 0x81FFFFFFu) | 0x38000000u;
    float f;
    std::memcpy(&f, &u, 4);
    x.push_back(f);
  }
  const int n = static_cast<int>(x.size());
  DevBuf<float> dx(n);
  DevBuf<uint8_t> dours(n), dhw(n);
  dx.upload(x);
  CUDA_OK(nk::launch_e4m3_encode(dx.p, dours.p, dhw.p, n));
  CUDA_OK(cudaDeviceSynchronize());
  const auto ours = dours.download();
  const auto hw = dhw.download();
  int host_dev = 0, vs_hw = 0;
  for (int i = 0; i < n; ++i) {
    if (ours[i] != flashptx::e4m3::encode(x[i])) ++host_dev;
    const bool both_nan = flashptx::e4m3::is_nan(ours[i]) && flashptx::e4m3::is_nan(hw[i]);
    if (ours[i] != hw[i] && !both_nan && ++vs_hw <= 8)
      MESSAGE("x=" << x[i] << " ours 0x" << std::hex << int(ours[i]) << " hw 0x" << int(hw[i]));
  }
  CHECK(host_dev == 0);
  CHECK(vs_hw == 0);
}

}  // TEST_SUITE
