// FA4 forward on a Blackwell GPU (sm_100): the first-run test. NEVER RUN ON A BLACKWELL GPU: none was
// available when it was written. On a machine without a GPU its 1-CTA kernels are executed in the PTX
// simulator (the runner's second simulator child, whose device reports sm_100: tests/main.cpp
// needs_sim_cc100) through the library's plan, at smaller shapes (on_simulator()); the 2-CTA kernels
// execute in the simulator in tests/sim/test_sim_fa4_mutations.cpp instead (as built the simulator
// reports their .acquire.cta waits on the peer CTA's release.cluster arrives; with those waits at
// cluster scope, a test-side edit of their PTX, they pass against fp64). What the kernel has
// been through besides: compile, golden SASS with order checks, and the emulator replay of its issue
// sequence and arithmetic (tests/host/test_fa4_replay.cpp).
//
// Every FA4 specialization (forced by name, so the pair kernels run at sizes the rule would not pick)
// against the CPU fp64 reference under FlashAttention's rule, max|O - ref| <= 2 max|O_same - ref| + 1e-5,
// LSE within 5e-4; O and LSE poisoned with NaN first; plus the C ABI's own choice on one problem. The
// cases opt in to the FA4 kernels (FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100) first; the first checks the
// refusal without it.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "src/internal.h"
#include "tests/gpu/test_util.h"
#include "tools/support/dtype.h"
#include "tools/support/reference.h"

namespace {

struct Case {
  const char* kernel;  // nullptr: the plan's rule
  int64_t batch, sq, sk, hq, hkv, d;
  bool causal;
  flashptx_dtype dtype;
};

void run_case(const Case& c) {
  INFO((c.kernel ? c.kernel : "(rule)") << " B=" << c.batch << " Sq=" << c.sq << " Sk=" << c.sk << " Hq=" << c.hq
                                        << " Hkv=" << c.hkv << " d=" << c.d << (c.causal ? " causal" : ""));
  const bool bf16 = c.dtype == FLASHPTX_BF16;
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> nd(0.f, 1.f);
  auto make = [&](int64_t n) {
    std::vector<uint16_t> v(static_cast<size_t>(n));
    for (auto& x : v) x = bf16 ? flashptx::float_to_bf16(nd(rng)) : flashptx::float_to_fp16(nd(rng));
    return v;
  };
  const int64_t nq = c.batch * c.sq * c.hq * c.d, nk = c.batch * c.sk * c.hkv * c.d;
  const std::vector<uint16_t> q = make(nq), k = make(nk), v = make(nk);
  uint16_t *dq = nullptr, *dk = nullptr, *dv = nullptr, *dout = nullptr;
  float* dlse = nullptr;
  CUDA_REQUIRE(cudaMalloc(&dq, nq * 2));
  CUDA_REQUIRE(cudaMalloc(&dk, nk * 2));
  CUDA_REQUIRE(cudaMalloc(&dv, nk * 2));
  CUDA_REQUIRE(cudaMalloc(&dout, nq * 2));
  CUDA_REQUIRE(cudaMalloc(&dlse, c.batch * c.hq * c.sq * sizeof(float)));
  CUDA_REQUIRE(cudaMemcpy(dq, q.data(), nq * 2, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemcpy(dk, k.data(), nk * 2, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemcpy(dv, v.data(), nk * 2, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemset(dout, 0xFF, nq * 2));
  CUDA_REQUIRE(cudaMemset(dlse, 0xFF, c.batch * c.hq * c.sq * sizeof(float)));

  flashptx_fwd_params p;
  flashptx_fwd_params_contiguous(&p, dq, dk, dv, dout, dlse, c.batch, c.sq, c.sk, c.hq, c.hkv, c.d, c.dtype,
                                 c.causal ? 1 : 0);
  flashptx::FwdOptions opt;
  opt.kernel = c.kernel;
  flashptx_kernel_info info{};
  REQUIRE_MESSAGE(flashptx::fwd_kernel_info(&p, opt, &info) == FLASHPTX_OK, flashptx_last_error());
  CHECK(std::string(info.symbol).rfind("fa4_fwd_sm100_", 0) == 0);
  CHECK(std::string(info.schedule) == "clc");
  REQUIRE_MESSAGE(flashptx::fwd(&p, opt, nullptr) == FLASHPTX_OK, flashptx_last_error());
  CUDA_REQUIRE(cudaDeviceSynchronize());
  std::vector<uint16_t> out(static_cast<size_t>(nq));
  std::vector<float> lse(static_cast<size_t>(c.batch * c.hq * c.sq));
  CUDA_REQUIRE(cudaMemcpy(out.data(), dout, nq * 2, cudaMemcpyDeviceToHost));
  CUDA_REQUIRE(cudaMemcpy(lse.data(), dlse, lse.size() * sizeof(float), cudaMemcpyDeviceToHost));
  cudaFree(dq);
  cudaFree(dk);
  cudaFree(dv);
  cudaFree(dout);
  cudaFree(dlse);

  const flashptx::ref::Problem rp = flashptx_test::ref_problem(c.batch, c.sq, c.sk, c.hq, c.hkv, c.d, c.causal, 0.f);
  const auto et = bf16 ? flashptx::ref::Elem::kBF16 : flashptx::ref::Elem::kFP16;
  const auto qv = flashptx::ref::contiguous_q(q.data(), et, rp), kv = flashptx::ref::contiguous_kv(k.data(), et, rp),
             vv = flashptx::ref::contiguous_kv(v.data(), et, rp);
  const auto exact = flashptx::ref::forward(rp, qv, kv, vv);
  const auto same = flashptx::ref::forward(rp, qv, kv, vv, bf16 ? flashptx::Round::kBF16 : flashptx::Round::kFP16);
  const double err = flashptx::ref::max_abs_diff_o(rp, flashptx::ref::contiguous_q(out.data(), et, rp), exact.o);
  std::vector<double> same_rounded(same.o.size());
  for (size_t i = 0; i < same.o.size(); ++i) same_rounded[i] = flashptx::round_to(bf16 ? flashptx::Round::kBF16 : flashptx::Round::kFP16, same.o[i]);
  const double same_err =
      flashptx::ref::max_abs_diff_o(rp, flashptx::ref::contiguous_q(same_rounded.data(), flashptx::ref::Elem::kF64, rp),
                                    exact.o);
  INFO("max|O-ref| " << err << ", max|O_same-ref| " << same_err);
  CHECK(err <= 2.0 * same_err + 1e-5);
  CHECK(flashptx::ref::max_abs_diff_lse(rp, lse.data(), exact.lse) <= 5e-4);
}

}  // namespace

TEST_SUITE("gpu_sm100 fa4 forward") {

TEST_CASE("without the caller's opt-in the device is refused, by kernel_info and by the forward alike") {
  REQUIRE(flashptx_set_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, 0) == FLASHPTX_OK);
  alignas(16) static unsigned char placeholder[16];  // never dereferenced: nothing launches
  flashptx_fwd_params p;
  flashptx_fwd_params_contiguous(&p, placeholder, placeholder, placeholder, placeholder, nullptr, 1, 128, 128, 4, 4,
                                 128, FLASHPTX_BF16, 0);
  flashptx_kernel_info info{};
  CHECK(flashptx_fwd_kernel_info(&p, &info) == FLASHPTX_ERR_UNSUPPORTED_DEVICE);
  const std::string why = flashptx_last_error();
  CHECK_MESSAGE(why.find("FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100") != std::string::npos, why);
  CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_ERR_UNSUPPORTED_DEVICE);
  CHECK(std::string(flashptx_last_error()) == why);
}

TEST_CASE("every FA4 specialization against fp64 (first run on a Blackwell GPU)") {
  REQUIRE(flashptx_set_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, 1) == FLASHPTX_OK);
  if (flashptx_test::on_simulator()) {
    // Executed in the PTX simulator; never run on a Blackwell GPU. The four 1-CTA kernels (d64 and
    // d128, bf16 and fp16), causal and not, GQA (3 query heads on one KV head), ragged tails (130 rows,
    // 160 keys: a partial Q tile and K block), 6 work tiles on the simulator's 4 SMs (so that cluster
    // launch control steals work); causal with rows that see no key (200 rows, 130 keys).
    MESSAGE("sm_100a FA4 forward: executed in the PTX simulator; never run on a Blackwell GPU. The 2-CTA kernels "
            "run in the simulator in tests/sim/test_sim_fa4_mutations.cpp");
    for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16}) {
      const char* d64 = t == FLASHPTX_BF16 ? "fa4_fwd_sm100_bf16_d64" : "fa4_fwd_sm100_fp16_d64";
      const char* d128 = t == FLASHPTX_BF16 ? "fa4_fwd_sm100_bf16_d128" : "fa4_fwd_sm100_fp16_d128";
      run_case({d64, 1, 130, 160, 3, 1, 64, false, t});
      run_case({d128, 1, 130, 160, 3, 1, 128, true, t});
      run_case({t == FLASHPTX_BF16 ? d64 : d128, 1, 200, 130, 2, 1, t == FLASHPTX_BF16 ? 64 : 128, true, t});
    }
    return;
  }
  for (flashptx_dtype t : {FLASHPTX_BF16, FLASHPTX_FP16}) {
    const char* d64 = t == FLASHPTX_BF16 ? "fa4_fwd_sm100_bf16_d64" : "fa4_fwd_sm100_fp16_d64";
    const char* d128 = t == FLASHPTX_BF16 ? "fa4_fwd_sm100_bf16_d128" : "fa4_fwd_sm100_fp16_d128";
    const char* pair = t == FLASHPTX_BF16 ? "fa4_fwd_sm100_bf16_d128_2cta" : "fa4_fwd_sm100_fp16_d128_2cta";
    for (int causal : {0, 1}) {
      run_case({d64, 2, 300, 333, 4, 2, 64, causal != 0, t});
      run_case({d128, 2, 300, 333, 4, 2, 128, causal != 0, t});
      run_case({pair, 1, 556, 333, 4, 2, 128, causal != 0, t});
      run_case({d128, 1, 300, 200, 2, 1, 128, causal != 0, t});  // causal: rows that see no key
    }
  }
}

TEST_CASE("the C ABI's rule on sm_100 picks an FA4 kernel, and it computes attention") {
  REQUIRE(flashptx_set_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, 1) == FLASHPTX_OK);
  if (flashptx_test::on_simulator()) {  // smaller problems (the rule picks a 1-CTA kernel for them)
    run_case({nullptr, 1, 256, 256, 2, 2, 128, false, FLASHPTX_BF16});
    run_case({nullptr, 1, 256, 256, 2, 2, 64, true, FLASHPTX_BF16});
    return;
  }
  run_case({nullptr, 1, 1024, 1024, 4, 4, 128, false, FLASHPTX_BF16});
  run_case({nullptr, 1, 1024, 1024, 4, 4, 64, true, FLASHPTX_BF16});
}

}  // TEST_SUITE
