// kernel_info reports what launches: for every forward specialization and every schedule it can
// run, flashptx's kernel_info (the plan) and the launch the call then made (recorded by the
// library, src/plan.h last_launch) name the same kernel, grid, block, shared memory, tiles and
// schedule. Through the C ABI too.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <string>

#include "include/flashptx.h"
#include "src/internal.h"
#include "src/kernels.h"
#include "tools/support/gpu_reference.h"
#include "tests/gpu/test_util.h"

namespace {

struct Buffers {
  void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  explicit Buffers(size_t n) {
    REQUIRE(cudaMalloc(&q, n * 2) == cudaSuccess);
    REQUIRE(cudaMalloc(&k, n * 2) == cudaSuccess);
    REQUIRE(cudaMalloc(&v, n * 2) == cudaSuccess);
    REQUIRE(cudaMalloc(&o, n * 2) == cudaSuccess);
  }
  ~Buffers() { cudaFree(q); cudaFree(k); cudaFree(v); cudaFree(o); }
};

void check_same(const flashptx_kernel_info& info, const flashptx::Launch& l) {
  CHECK(std::string(info.symbol) == l.kernel->name);
  CHECK(info.ctas == static_cast<int>(l.grid.x));
  CHECK(info.threads == static_cast<int>(l.block.x));
  CHECK(info.tiles == l.tiles);
  CHECK(std::string(info.schedule) == flashptx::schedule_name(l.schedule));
  CHECK(info.shared_bytes >= l.smem_bytes);
  // (The simulator reports no register count: PTX has none; ptxas's is the SASS's.)
  if (!flashptx_test::device_is_simulator()) CHECK(info.registers > 0);
}

}  // namespace

TEST_SUITE("gpu_sm90 launch plan") {

TEST_CASE("kernel_info is what launches, for every forward specialization and schedule") {
  // On the simulator: one batch, one head, 100 rows (a ragged tile): what is checked is that the
  // launch is the one the plan describes, which the shape only sizes.
  const bool sim = flashptx_test::on_simulator();
  const int64_t b = sim ? 1 : 2, s = sim ? 100 : 1100, h = sim ? 1 : 4;
  Buffers buf(static_cast<size_t>(b * s * h * 256));
  REQUIRE(flashptx::gpuref::fill_random(buf.q, b * s * h * 256, FLASHPTX_BF16, 1, 1.f, nullptr) == cudaSuccess);
  REQUIRE(flashptx::gpuref::fill_random(buf.k, b * s * h * 256, FLASHPTX_BF16, 2, 1.f, nullptr) == cudaSuccess);
  REQUIRE(flashptx::gpuref::fill_random(buf.v, b * s * h * 256, FLASHPTX_BF16, 3, 1.f, nullptr) == cudaSuccess);
  int launched = 0;
  for (const flashptx::KernelEntry& k : flashptx::fa3_fwd_kernels()) {
    for (auto sched : {flashptx::Schedule::kAuto, flashptx::Schedule::kOnePerTile, flashptx::Schedule::kPersistent}) {
      if (sched == flashptx::Schedule::kPersistent && !k.persistent) continue;
      if (sched == flashptx::Schedule::kOnePerTile && k.paired) continue;  // paired kernels only loop
      for (int causal : {0, 1}) {
        if (k.paired && !causal) continue;  // and only under a causal mask
        INFO(k.name << " schedule " << flashptx::schedule_name(sched) << " causal " << causal);
        flashptx_fwd_params p;
        flashptx_fwd_params_contiguous(&p, buf.q, buf.k, buf.v, buf.o, nullptr, b, s, s, h, h, k.head_dim, k.dtype,
                                       causal);
        flashptx::FwdOptions opt;
        opt.kernel = k.name;
        opt.schedule = sched;
        flashptx_kernel_info info{};
        REQUIRE_MESSAGE(flashptx::fwd_kernel_info(&p, opt, &info) == FLASHPTX_OK, flashptx_last_error());
        REQUIRE_MESSAGE(flashptx::fwd(&p, opt, nullptr) == FLASHPTX_OK, flashptx_last_error());
        REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
        check_same(info, flashptx::last_launch());
        ++launched;
      }
    }
  }
  CHECK(launched >= 30);
  // The C ABI: the default plan.
  for (int64_t d : {64, 128, 256}) {
    flashptx_fwd_params p;
    flashptx_fwd_params_contiguous(&p, buf.q, buf.k, buf.v, buf.o, nullptr, b, s, s, h, h, d, FLASHPTX_BF16, 0);
    flashptx_kernel_info info{};
    REQUIRE(flashptx_fwd_kernel_info(&p, &info) == FLASHPTX_OK);
    REQUIRE(flashptx_fwd(&p, nullptr) == FLASHPTX_OK);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    check_same(info, flashptx::last_launch());
  }
}

}  // TEST_SUITE
