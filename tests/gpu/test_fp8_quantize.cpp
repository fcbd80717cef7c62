// flashptx_quantize_fp8 on the GPU, bit for bit against the host reference
// (tools/support/fp8_quant_ref.h): fresh random inputs with outlier channels, every granularity and
// head dim, with and without the Hadamard rotation, bf16 and fp16, dense and padded strides, ragged
// sequence tails, outputs poisoned (and the padding between rows checked untouched).
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "include/flashptx.h"
#include "tests/gpu/test_util.h"
#include "tools/support/dtype.h"
#include "tools/support/fp8_quant_ref.h"

using flashptx::float_to_bf16;
using flashptx::float_to_fp16;

namespace {

constexpr uint8_t kPoison8 = 0xFF;  // the e4m3 NaN code: never a result of finite inputs

struct Case {
  int64_t batch, seqlen, heads, head_dim;
  bool bf16;
  flashptx_fp8_scale_granularity g;
  int hadamard;
  bool padded;
};

void run_case(const Case& c, uint64_t seed) {
  const int64_t B = c.batch, S = c.seqlen, H = c.heads, D = c.head_dim;
  // Input strides (elements): padded rows by 8, batches by 64; output rows padded by 16 bytes.
  const int64_t ihs = c.padded ? D + 8 : D, irs = H * ihs, ibs = S * irs + (c.padded ? 64 : 0);
  const int64_t ohs = c.padded ? D + 16 : D, ors = H * ohs, obs = S * ors + (c.padded ? 32 : 0);
  const int64_t in_elems = B * ibs, out_bytes = B * obs;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> N(0.f, 1.f);
  std::vector<uint16_t> in(static_cast<size_t>(in_elems), c.bf16 ? 0x7FC0 : 0x7E00);  // NaN in the padding
  // Outlier channels: two of every head, 30x (and a wider range for bf16).
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < D; ++i) {
          const float scale = (i == 5 || i == D - 3) ? (c.bf16 ? 100.f : 30.f) : 1.f;
          const float v = N(rng) * scale;
          in[static_cast<size_t>(b * ibs + s * irs + h * ihs + i)] = c.bf16 ? float_to_bf16(v) : float_to_fp16(v);
        }
  flashptx_quantize_fp8_params p;
  flashptx_quantize_fp8_params_contiguous(&p, nullptr, nullptr, nullptr, B, S, H, D,
                                          c.bf16 ? FLASHPTX_BF16 : FLASHPTX_FP16, c.g);
  p.in_batch_stride = ibs; p.in_row_stride = irs; p.in_head_stride = ihs;
  p.out_batch_stride = obs; p.out_row_stride = ors; p.out_head_stride = ohs;
  p.hadamard_block = c.hadamard;
  int64_t nds = 0;
  REQUIRE(flashptx_quantize_fp8_descale_count(&p, &nds) == FLASHPTX_OK);

  std::vector<uint8_t> want(static_cast<size_t>(out_bytes), kPoison8);
  std::vector<float> want_ds(static_cast<size_t>(nds + 1), -1.f);  // one guard value after the scales
  flashptx::ref::quantize_fp8({in.data(), want.data(), want_ds.data(), B, S, H, D, ibs, irs, ihs, obs, ors, ohs,
                               c.bf16, c.g, c.hadamard});

  void *din = nullptr, *dout = nullptr;
  float* dds = nullptr;
  CUDA_REQUIRE(cudaMalloc(&din, static_cast<size_t>(in_elems) * 2));
  CUDA_REQUIRE(cudaMalloc(&dout, static_cast<size_t>(out_bytes)));
  CUDA_REQUIRE(cudaMalloc(&dds, static_cast<size_t>(nds + 1) * sizeof(float)));
  CUDA_REQUIRE(cudaMemcpy(din, in.data(), static_cast<size_t>(in_elems) * 2, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemset(dout, kPoison8, static_cast<size_t>(out_bytes)));
  std::vector<float> poison_ds(static_cast<size_t>(nds + 1), -1.f);
  CUDA_REQUIRE(cudaMemcpy(dds, poison_ds.data(), poison_ds.size() * sizeof(float), cudaMemcpyHostToDevice));
  p.in = din; p.out = dout; p.descale = dds;
  REQUIRE_MESSAGE(flashptx_quantize_fp8(&p, nullptr) == FLASHPTX_OK, flashptx_last_error());
  CUDA_REQUIRE(cudaDeviceSynchronize());
  std::vector<uint8_t> got(static_cast<size_t>(out_bytes));
  std::vector<float> got_ds(static_cast<size_t>(nds + 1));
  CUDA_REQUIRE(cudaMemcpy(got.data(), dout, got.size(), cudaMemcpyDeviceToHost));
  CUDA_REQUIRE(cudaMemcpy(got_ds.data(), dds, got_ds.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_REQUIRE(cudaFree(din));
  CUDA_REQUIRE(cudaFree(dout));
  CUDA_REQUIRE(cudaFree(dds));

  int64_t bad_ds = 0, bad = 0, first = -1;
  for (size_t i = 0; i < got_ds.size(); ++i)
    if (std::memcmp(&got_ds[i], &want_ds[i], 4) != 0) ++bad_ds;
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++bad;
    }
  CHECK_MESSAGE(bad_ds == 0, bad_ds << " descales differ (of " << nds << ")");
  CHECK_MESSAGE(bad == 0, bad << " bytes differ, the first at " << first
                               << (first >= 0 ? " (got " + std::to_string(got[first]) + ", want " +
                                                    std::to_string(want[first]) + ")"
                                              : std::string()));
}

}  // namespace

TEST_SUITE("gpu_sm90 fp8 quantize") {

TEST_CASE("bit for bit against the host reference: every granularity, head dim, rotation, dtype, layout") {
  uint64_t seed = 0x5eed;
  if (flashptx_test::on_simulator()) {
    // On the simulator: every head dim, granularity and rotation at 130 rows (two 128-row blocks, a
    // ragged one), two heads; dtype and layout alternate instead of taking every pair.
    int i = 0;
    for (int64_t d : {64, 128, 256})
      for (auto g : {FLASHPTX_FP8_SCALE_PER_TENSOR, FLASHPTX_FP8_SCALE_PER_HEAD, FLASHPTX_FP8_SCALE_PER_BLOCK})
        for (int hb : {0, 64, 128, 256}) {
          if (hb != 0 && hb != d && !(hb == 128 && d >= 128)) continue;
          const Case c{1, 130, 2, d, i % 2 == 0, g, hb, i / 2 % 2 == 1};
          ++i;
          CAPTURE(d);
          CAPTURE(static_cast<int>(g));
          CAPTURE(hb);
          run_case(c, ++seed);
        }
    return;
  }
  for (int64_t d : {64, 128, 256})
    for (auto g : {FLASHPTX_FP8_SCALE_PER_TENSOR, FLASHPTX_FP8_SCALE_PER_HEAD, FLASHPTX_FP8_SCALE_PER_BLOCK})
      for (int hb : {0, 128, 256})
        for (bool bf16 : {true, false})
          for (bool padded : {false, true}) {
            if (hb != 0 && hb != d && !(hb == 128 && d >= 128)) continue;
            const Case c{2, 333, 3, d, bf16, g, hb, padded};
            CAPTURE(d);
            CAPTURE(static_cast<int>(g));
            CAPTURE(hb);
            CAPTURE(bf16);
            CAPTURE(padded);
            run_case(c, ++seed);
          }
  // hadamard = head_dim at d64 (the loop above covers 128 and 256).
  run_case({1, 200, 2, 64, true, FLASHPTX_FP8_SCALE_PER_BLOCK, 64, true}, ++seed);
  run_case({1, 200, 2, 64, false, FLASHPTX_FP8_SCALE_PER_TENSOR, 64, false}, ++seed);
}

TEST_CASE("shapes: one row, a single block, many heads, a long per-head group") {
  uint64_t seed = 0xf8;
  run_case({1, 1, 1, 128, true, FLASHPTX_FP8_SCALE_PER_BLOCK, 128, false}, ++seed);
  run_case({1, 128, 1, 256, true, FLASHPTX_FP8_SCALE_PER_HEAD, 256, false}, ++seed);
  run_case({3, 129, 17, 64, false, FLASHPTX_FP8_SCALE_PER_TENSOR, 0, true}, ++seed);
  run_case({1, 4100, 2, 128, true, FLASHPTX_FP8_SCALE_PER_HEAD, 128, false}, ++seed);
  run_case({1, 4100, 2, 128, true, FLASHPTX_FP8_SCALE_PER_TENSOR, 128, false}, ++seed);
}

TEST_CASE("the same input twice: identical bytes (deterministic, the per-tensor atomics included)") {
  // run_case compares against the reference on each run; two runs with one seed are one input.
  run_case({2, 1000, 4, 128, true, FLASHPTX_FP8_SCALE_PER_TENSOR, 128, false}, 77);
  run_case({2, 1000, 4, 128, true, FLASHPTX_FP8_SCALE_PER_TENSOR, 128, false}, 77);
}

}  // TEST_SUITE
