// The instrumented build (`flashptx trace`) computes what the release build computes: the same
// bf16 problem through flashptx_fwd (or a release kernel named through the internal API) and
// through the traced kernel (selected by name with the internal API, src/internal.h) gives bitwise
// equal O and LSE, and the trace buffer holds stamps for the traced CTAs.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <vector>

#include "include/flashptx.h"
#include "src/protocol/trace.h"
#include "tools/support/gpu_reference.h"
#include "src/internal.h"
#include "tests/gpu/test_util.h"
#include "tests/sim/sim_schedule.h"

// CUDA_REQUIRE: tests/gpu/test_util.h.

namespace {
flashptx_status traced_fwd(const flashptx_fwd_params* p, uint64_t* trace,
                           const char* kernel = "fa3_fwd_sm90_bf16_d128_trace") {
  flashptx::FwdOptions opt;
  opt.kernel = kernel;
  opt.trace = trace;
  return flashptx::fwd(p, opt, nullptr);
}

struct Record { uint64_t clock; uint32_t event, arg; };
std::vector<Record> records(const std::vector<uint64_t>& t, int cta, int lane) {
  const uint64_t* base = t.data() + static_cast<size_t>(cta * flashptx::trace::kLanes + lane) * flashptx::trace::kWordsPerLane;
  const uint64_t n = std::min<uint64_t>(base[0], flashptx::trace::kMaxRecords);
  std::vector<Record> r;
  for (uint64_t i = 0; i < n; ++i)
    r.push_back({base[2 + 2 * i], static_cast<uint32_t>(base[3 + 2 * i] >> 32), static_cast<uint32_t>(base[3 + 2 * i])});
  return r;
}
// One bf16 problem (b x s x h, head dim d), its buffers, and the comparison of the release library's
// call (or of a release kernel named by `release`) with a traced kernel's: O and LSE bitwise equal, no
// poisoned element left; returns the trace.
struct TracedRun {
  int64_t b, s, h, d;
  size_t n;
  void *q = nullptr, *k = nullptr, *v = nullptr, *o1 = nullptr, *o2 = nullptr;
  float *l1 = nullptr, *l2 = nullptr;
  uint64_t* trace = nullptr;
  TracedRun(int64_t b_, int64_t s_, int64_t h_, uint64_t seed, int64_t d_ = 128)
      : b(b_), s(s_), h(h_), d(d_), n(static_cast<size_t>(b_ * s_ * h_ * d_)) {
    CUDA_REQUIRE(cudaMalloc(&q, n * 2));
    CUDA_REQUIRE(cudaMalloc(&k, n * 2));
    CUDA_REQUIRE(cudaMalloc(&v, n * 2));
    CUDA_REQUIRE(cudaMalloc(&o1, n * 2));
    CUDA_REQUIRE(cudaMalloc(&o2, n * 2));
    CUDA_REQUIRE(cudaMalloc(&l1, b * h * s * 4));
    CUDA_REQUIRE(cudaMalloc(&l2, b * h * s * 4));
    CUDA_REQUIRE(cudaMalloc(&trace, sizeof(uint64_t) * flashptx::trace::kWordsTotal));
    CUDA_REQUIRE(flashptx::gpuref::fill_random(q, n, FLASHPTX_BF16, seed, 1.f, nullptr));
    CUDA_REQUIRE(flashptx::gpuref::fill_random(k, n, FLASHPTX_BF16, seed + 1, 1.f, nullptr));
    CUDA_REQUIRE(flashptx::gpuref::fill_random(v, n, FLASHPTX_BF16, seed + 2, 1.f, nullptr));
  }
  ~TracedRun() {
    for (void* x : {q, k, v, o1, o2, static_cast<void*>(l1), static_cast<void*>(l2), static_cast<void*>(trace)}) cudaFree(x);
  }
  // On the simulator the traced kernel runs under `traced` (tests/sim/sim_schedule.h; nullptr: the
  // default schedule, the release call's), so that equal bits hold across two schedules.
  std::vector<uint64_t> compare(int causal, const char* kernel, const char* release = nullptr,
                                const flashptx_test::SimPolicy* traced = &flashptx_test::kSimPolicies[0]) {
    CUDA_REQUIRE(cudaMemset(o1, 0xFF, n * 2));
    CUDA_REQUIRE(cudaMemset(o2, 0xFF, n * 2));
    CUDA_REQUIRE(cudaMemset(trace, 0, sizeof(uint64_t) * flashptx::trace::kWordsTotal));
    flashptx_fwd_params p;
    flashptx_fwd_params_contiguous(&p, q, k, v, o1, l1, b, s, s, h, h, d, FLASHPTX_BF16, causal);
    if (release == nullptr) {
      REQUIRE_MESSAGE(flashptx_fwd(&p, nullptr) == FLASHPTX_OK, flashptx_last_error());
    } else {
      flashptx::FwdOptions opt;
      opt.kernel = release;
      REQUIRE_MESSAGE(flashptx::fwd(&p, opt, nullptr) == FLASHPTX_OK, flashptx_last_error());
    }
    p.o = o2;
    p.lse = l2;
    if (traced != nullptr) {
      const flashptx_test::SimSchedule schedule(*traced);
      REQUIRE_MESSAGE(traced_fwd(&p, trace, kernel) == FLASHPTX_OK, flashptx_last_error());
    } else {
      REQUIRE_MESSAGE(traced_fwd(&p, trace, kernel) == FLASHPTX_OK, flashptx_last_error());
    }
    CUDA_REQUIRE(cudaGetLastError());
    CUDA_REQUIRE(cudaDeviceSynchronize());
    std::vector<uint16_t> a(n), c(n);
    std::vector<float> la(b * h * s), lc(b * h * s);
    CUDA_REQUIRE(cudaMemcpy(a.data(), o1, n * 2, cudaMemcpyDeviceToHost));
    CUDA_REQUIRE(cudaMemcpy(c.data(), o2, n * 2, cudaMemcpyDeviceToHost));
    CUDA_REQUIRE(cudaMemcpy(la.data(), l1, la.size() * 4, cudaMemcpyDeviceToHost));
    CUDA_REQUIRE(cudaMemcpy(lc.data(), l2, lc.size() * 4, cudaMemcpyDeviceToHost));
    CHECK(std::memcmp(a.data(), c.data(), n * 2) == 0);
    CHECK(std::memcmp(la.data(), lc.data(), la.size() * 4) == 0);
    size_t poisoned = 0;
    for (uint16_t x : c) poisoned += x == 0xFFFF;
    CHECK(poisoned == 0);
    std::vector<uint64_t> t(flashptx::trace::kWordsTotal);
    CUDA_REQUIRE(cudaMemcpy(t.data(), trace, t.size() * 8, cudaMemcpyDeviceToHost));
    return t;
  }
};
}  // namespace

TEST_SUITE("gpu_sm90 fa3 trace") {

TEST_CASE("the traced build gives the release build's output, bit for bit, and records stamps") {
  // On the simulator: 2 heads x 200 rows (two query tiles per head, a ragged one).
  TracedRun run = flashptx_test::on_simulator() ? TracedRun(1, 200, 2, 11) : TracedRun(2, 1500, 4, 11);
  for (int causal : {0, 1}) {
    INFO("causal " << causal);
    const std::vector<uint64_t> t = run.compare(causal, "fa3_fwd_sm90_bf16_d128_trace");
    // Every lane of traced CTA 0 stamped something, and its clocks never run backwards.
    for (int lane = 0; lane < 3; ++lane) {
      const uint64_t* base = t.data() + static_cast<size_t>(lane) * flashptx::trace::kWordsPerLane;
      CHECK_MESSAGE(base[0] > 4, "lane " << lane << " recorded " << base[0] << " stamps");
      const uint64_t m = std::min<uint64_t>(base[0], flashptx::trace::kMaxRecords);
      for (uint64_t i = 1; i < m; ++i) REQUIRE(base[2 + 2 * i] >= base[2 + 2 * (i - 1)]);
    }
  }
}

TEST_CASE("the paired causal kernel, traced: the release output bit for bit, and a tile's start under the last one's end") {
  // 2 x 1500 x 4 heads, causal: 96 tiles in 48 paired units, so each of the 48 CTAs walks two tiles.
  // On the simulator (4 SMs): 4 heads x 256 rows, one unit of two tiles per head, so each of the 4
  // CTAs walks two tiles.
  TracedRun run = flashptx_test::on_simulator() ? TracedRun(1, 256, 4, 21) : TracedRun(2, 1500, 4, 21);
  // The overlap below is a property of a schedule that runs the producer when it can (round robin,
  // the default); a policy that starves the producer (starve-producer) delays the next tile's loads
  // past the epilogue by design, so the traced run keeps the default schedule here.
  const std::vector<uint64_t> t = run.compare(1, "fa3_fwd_sm90_bf16_d128_paired_trace", nullptr, nullptr);
  for (int cta = 0; cta < flashptx::trace::kMaxCtas; ++cta) {
    INFO("traced CTA " << cta);
    // The producer (lane 0) begins a second tile; its first K load of that tile is issued before the
    // first consumer (lane 1) has finished the epilogue of the first: the next tile's loads run
    // under the current tile's end (the overlap a persistent CTA exists for).
    const auto prod = records(t, cta, 0), cons = records(t, cta, 1);
    int tiles = 0;
    uint64_t second_tile_k = 0;
    for (const Record& r : prod) {
      if (r.event == flashptx::trace::kTileBegin) ++tiles;
      if (tiles == 2 && r.event == flashptx::trace::kTmaIssueK && second_tile_k == 0) second_tile_k = r.clock;
    }
    uint64_t first_epilogue_end = 0;
    for (const Record& r : cons)
      if (r.event == flashptx::trace::kEpilogueEnd) { first_epilogue_end = r.clock; break; }
    REQUIRE(tiles == 2);
    REQUIRE(second_tile_k > 0);
    REQUIRE(first_epilogue_end > 0);
    CHECK_MESSAGE(second_tile_k < first_epilogue_end, "the second tile's first K load at clock " << second_tile_k
                      << ", the first tile's epilogue ended at " << first_epilogue_end);
  }
}

TEST_CASE("the d64 paired causal kernel, traced: the release kernel's output bit for bit, and stamps in every lane") {
  // 4 x 512 x 32 heads, causal: 512 tiles on the 128-row d64 paired kernel (its static schedule here:
  // no tile counter), traced and release, against each other.
  // On the simulator: 4 heads x 256 rows (8 tiles on 4 SMs).
  TracedRun run = flashptx_test::on_simulator() ? TracedRun(1, 256, 4, 31, 64) : TracedRun(4, 512, 32, 31, 64);
  const std::vector<uint64_t> t =
      run.compare(1, "fa3_fwd_sm90_bf16_d64_paired_trace", "fa3_fwd_sm90_bf16_d64_m128_paired");
  for (int lane = 0; lane < 3; ++lane) {
    const auto r = records(t, 0, lane);
    CHECK_MESSAGE(r.size() > 4, "lane " << lane << " recorded " << r.size() << " stamps");
    for (size_t i = 1; i < r.size(); ++i) REQUIRE(r[i].clock >= r[i - 1].clock);
  }
}

}  // TEST_SUITE
