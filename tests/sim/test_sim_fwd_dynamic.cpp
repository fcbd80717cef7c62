// The FA3 forward's dynamic schedule (a tile counter, include/flashptx.h flashptx_fwd_params
// tile_counter) at shapes the PTX simulator affords (issue 31): the GPU suite's case (tests/gpu/
// test_fa3_fwd.cpp, "the dynamic schedule ...") runs 1000 launches at GPU shapes; this one runs the
// same claims where there is no GPU, and on a GPU too (it is cheap there):
//   - the 128-row d64 paired kernel (named: at these shapes the plan may prefer the 192-row one)
//     with the counter launches one CTA per SM, more tiles than SMs (4 simulated SMs: every CTA
//     takes several tiles from the counter);
//   - O and LSE within the GPU suites' fp64 rule (max|O - ref| <= 2 max|O_same - ref| + 1e-5; LSE to
//     1e-4) on every row, every element written;
//   - the same bits as the static schedule (the same kernel without a counter), and as the dynamic
//     schedule under other scheduler policies and seeds (which CTA takes which tile changes);
//   - the counter is left zero by every call.
// Shapes: 512 x 512 (4 query blocks per head, the longest-first order), and a longer Q than K with
// GQA (384 x 256: the first query block sees no key, O = 0 and LSE = -inf there).
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "src/internal.h"
#include "src/plan.h"
#include "tests/gpu/test_util.h"
#include "tests/sim/sim_schedule.h"
#include "tools/support/dtype.h"
#include "tools/support/reference.h"

namespace {

using namespace flashptx_test;
namespace ref = flashptx::ref;

struct DynCase { int64_t batch, sq, sk, hq, hkv; flashptx_dtype dtype; };

struct DynProblem {
  DynCase c;
  ref::Problem rp;
  std::vector<uint16_t> q, k, v;
  DeviceBuf dq, dk, dv, dout, dlse, dctr;
  flashptx_fwd_params params{};
  DynProblem(const DynCase& cs, uint64_t seed)
      : c(cs), rp(ref_problem(cs.batch, cs.sq, cs.sk, cs.hq, cs.hkv, 64, true, 0.f)),
        q(static_cast<size_t>(cs.batch * cs.sq * cs.hq * 64)), k(static_cast<size_t>(cs.batch * cs.sk * cs.hkv * 64)),
        v(k.size()), dq(q.size() * 2), dk(k.size() * 2), dv(v.size() * 2), dout((q.size() + kGuard) * 2),
        dlse((static_cast<size_t>(cs.batch * cs.hq * cs.sq) + kGuard) * 4), dctr(8) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (auto* x : {&q, &k, &v})
      for (auto& e : *x) e = to_storage(c.dtype, nd(rng));
    CUDA_REQUIRE(cudaMemcpy(dq.p, q.data(), q.size() * 2, cudaMemcpyHostToDevice));
    CUDA_REQUIRE(cudaMemcpy(dk.p, k.data(), k.size() * 2, cudaMemcpyHostToDevice));
    CUDA_REQUIRE(cudaMemcpy(dv.p, v.data(), v.size() * 2, cudaMemcpyHostToDevice));
    CUDA_REQUIRE(cudaMemset(dctr.p, 0, 8));
    flashptx_fwd_params_contiguous(&params, dq.p, dk.p, dv.p, dout.p, static_cast<float*>(dlse.p), c.batch, c.sq, c.sk,
                                   c.hq, c.hkv, 64, c.dtype, 1);
  }
  std::string str() const {
    return "B=" + std::to_string(c.batch) + " Sq=" + std::to_string(c.sq) + " Sk=" + std::to_string(c.sk) +
           " Hq=" + std::to_string(c.hq) + " Hkv=" + std::to_string(c.hkv) + " d=64 causal" +
           (c.dtype == FLASHPTX_BF16 ? " bf16" : " fp16");
  }
  // One forward (with the counter, or the static schedule without it); O and LSE as written.
  struct Out { std::vector<uint16_t> o; std::vector<float> lse; };
  Out run(bool dynamic) {
    CUDA_REQUIRE(cudaMemset(dout.p, 0xFF, dout.bytes));  // NaN
    CUDA_REQUIRE(cudaMemset(dlse.p, 0xFF, dlse.bytes));
    flashptx_fwd_params p = params;
    p.tile_counter = dynamic ? static_cast<uint32_t*>(dctr.p) : nullptr;
    flashptx::FwdOptions opt;  // the kernel that has the dynamic schedule, named (src/plan.h)
    opt.kernel = c.dtype == FLASHPTX_BF16 ? "fa3_fwd_sm90_bf16_d64_m128_paired" : "fa3_fwd_sm90_fp16_d64_m128_paired";
    const flashptx_status s = flashptx::fwd(&p, opt, nullptr);
    REQUIRE_MESSAGE(s == FLASHPTX_OK, flashptx_last_error());
    CUDA_REQUIRE(cudaDeviceSynchronize());
    Out r{std::vector<uint16_t>(dout.bytes / 2), std::vector<float>(dlse.bytes / 4)};
    CUDA_REQUIRE(cudaMemcpy(r.o.data(), dout.p, dout.bytes, cudaMemcpyDeviceToHost));
    CUDA_REQUIRE(cudaMemcpy(r.lse.data(), dlse.p, dlse.bytes, cudaMemcpyDeviceToHost));
    return r;
  }
  std::array<uint32_t, 2> counter() const {
    std::array<uint32_t, 2> w{~0u, ~0u};
    CUDA_REQUIRE(cudaMemcpy(w.data(), dctr.p, 8, cudaMemcpyDeviceToHost));
    return w;
  }
};

bool same(const DynProblem::Out& a, const DynProblem::Out& b) {
  return a.o == b.o && std::memcmp(a.lse.data(), b.lse.data(), a.lse.size() * 4) == 0;
}

}  // namespace

TEST_SUITE("gpu_sm90 fa3 dynamic schedule") {

TEST_CASE("small shapes: fp64, bit for bit the static schedule and itself under other policies, counter left zero") {
  const DynCase cases[] = {{1, 512, 512, 4, 4, FLASHPTX_BF16}, {2, 384, 256, 2, 1, FLASHPTX_FP16}};
  uint64_t seed = 0xd1a;
  for (const DynCase& c : cases) {
    DynProblem pb(c, seed++);
    INFO(pb.str());
    const DynProblem::Out dyn = pb.run(true);
    const flashptx::Launch l = flashptx::last_launch();
    REQUIRE(l.kernel != nullptr);
    CHECK(std::string(l.kernel->name).find("d64_m128_paired") != std::string::npos);
    int sms = 0;
    CUDA_REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int64_t tiles = (c.sq + 127) / 128 * c.hq * c.batch;
    CHECK(l.tiles == tiles);
    CHECK(l.grid.x == static_cast<unsigned>(std::min<int64_t>(tiles, sms)));  // one CTA per SM
    if (on_simulator() && !sim_shapes_on_gpu()) CHECK(tiles > sms);  // 4 simulated SMs
    CHECK(pb.counter() == std::array<uint32_t, 2>{0u, 0u});

    // The fp64 rule on every row; every element of O written, the guard after O and LSE untouched.
    const auto qv = ref::contiguous_q(pb.q.data(), c.dtype == FLASHPTX_BF16 ? ref::Elem::kBF16 : ref::Elem::kFP16, pb.rp);
    const auto kv = ref::contiguous_kv(pb.k.data(), c.dtype == FLASHPTX_BF16 ? ref::Elem::kBF16 : ref::Elem::kFP16, pb.rp);
    const auto vv = ref::contiguous_kv(pb.v.data(), c.dtype == FLASHPTX_BF16 ? ref::Elem::kBF16 : ref::Elem::kFP16, pb.rp);
    const ref::Forward exact = ref::forward(pb.rp, qv, kv, vv);
    const ref::Forward rounded =
        ref::forward(pb.rp, qv, kv, vv, c.dtype == FLASHPTX_BF16 ? flashptx::Round::kBF16 : flashptx::Round::kFP16);
    double same_err = 0;
    for (size_t i = 0; i < exact.o.size(); ++i) same_err = std::max(same_err, std::fabs(rounded.o[i] - exact.o[i]));
    const auto ov = ref::contiguous_q(dyn.o.data(), c.dtype == FLASHPTX_BF16 ? ref::Elem::kBF16 : ref::Elem::kFP16, pb.rp);
    double o_err = ref::max_abs_diff_o(pb.rp, ov, exact.o);
    if (std::isnan(o_err)) o_err = INFINITY;
    double lse_err = ref::max_abs_diff_lse(pb.rp, dyn.lse.data(), exact.lse);
    if (std::isnan(lse_err)) lse_err = INFINITY;
    CHECK_MESSAGE(o_err <= 2 * same_err + 1e-5, "max|O - ref| = " << o_err << " (same-dtype " << same_err << ")");
    CHECK_MESSAGE(lse_err <= 1e-4, "max|LSE - ref| = " << lse_err);
    int64_t clobbered = 0;
    for (size_t i = pb.q.size(); i < dyn.o.size(); ++i) clobbered += dyn.o[i] != kPoison;
    CHECK_MESSAGE(clobbered == 0, clobbered << " guard elements after O were written");
    check_lse_writes(dyn.lse, c.batch * c.hq * c.sq, pb.str());

    // The static schedule (no counter): the same kernel, the same bits.
    const DynProblem::Out st = pb.run(false);
    CHECK(std::string(flashptx::last_launch().kernel->name) == l.kernel->name);
    CHECK_MESSAGE(same(dyn, st), "the dynamic schedule's O or LSE differs from the static schedule's");
    // The dynamic schedule under two other scheduler policies and seeds (on a GPU: two more launches).
    for (int i = 0; i < 2; ++i) {
      SimSchedule schedule(kSimPolicies[i]);
      const DynProblem::Out again = pb.run(true);
      CHECK_MESSAGE(same(dyn, again), "under " << SimSchedule::name(kSimPolicies[i]) << " the dynamic schedule's bits differ");
      CHECK(pb.counter() == std::array<uint32_t, 2>{0u, 0u});
    }
  }
}

}  // TEST_SUITE
