// The FA4 backward (src/sm100/fa4_bwd.cu, and the 2-CTA src/sm100/fa4_bwd_pair.cu) executed in the
// PTX simulator through the library's plan, in the runner's child whose device reports sm_100
// (tests/main.cpp needs_sim_cc100): its kernels' own PTX (build/ptx/src/sm100/fa4_bwd*.ptx). NEVER RUN
// ON A BLACKWELL GPU. On a GPU (any) the cases skip: the GPU suites of the backward are the FA3 ones.
//
// FlashAttention's rule against the CPU fp64 reference, every element of dQ, dK and dV:
//   max|g - g_ref| <= 2 max|g_same - g_ref| + 1e-5 (+ the fp32 envelope of dS for dQ and dK,
//   tools/support/reference.h Backward), g_same the same-dtype backward. Inputs fresh random
// values, dO too; the gradients poisoned with NaN first. O and LSE are the CPU forward's (O rounded to
// the dtype as the same-dtype forward's, LSE in fp32), so that the simulator spends its time on the
// backward only. The deterministic mode (the issue's: bitwise reproducible gradients), twice, bit
// for bit.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "tests/gpu/test_util.h"
#include "tools/support/dtype.h"
#include "tools/support/reference.h"

extern "C" int flashptx_sim_configure(const char*, uint64_t, int) __attribute__((weak));
extern "C" int flashptx_sim_override_ptx(const char*, const char*) __attribute__((weak));
extern "C" const char* flashptx_sim_last_report(void) __attribute__((weak));

namespace {

namespace ref = flashptx::ref;

struct BCase {
  int64_t sq, sk, hq, hkv, d;
  bool causal;
  const char* kernel;  // what the plan must pick
  flashptx_dtype dtype = FLASHPTX_BF16;
};

bool is_bf16(flashptx_dtype t) { return t == FLASHPTX_BF16; }
uint16_t to_dtype(flashptx_dtype t, float x) { return is_bf16(t) ? flashptx::float_to_bf16(x) : flashptx::float_to_fp16(x); }
float from_dtype(flashptx_dtype t, uint16_t x) { return is_bf16(t) ? flashptx::bf16_to_float(x) : flashptx::fp16_to_float(x); }

struct Grads { std::vector<uint16_t> dq, dk, dv; };

constexpr const char* kPairEntry = "fa4_bwd_sm100_bf16_d128_2cta";

// The 2-CTA backward's module with every mbarrier wait of kPairEntry set back to CTA scope (a
// mutation of its PTX): the kernel acquires at cluster scope, since the peer's warps arrive on its
// barriers with release.cluster (src/sm100/fa4_bwd_pair.cuh); .acquire.cta does not synchronize with
// them, which the simulator reports.
std::string pair_waits_at_cta_scope() {
  std::ifstream in(std::string(FLASHPTX_BUILD_DIR) + "/ptx/src/sm100/fa4_bwd_pair.ptx");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string t = ss.str();
  const size_t b = t.find(std::string(".entry ") + kPairEntry + "(");
  REQUIRE(b != std::string::npos);
  size_t e = t.find(".entry ", b + 8);
  if (e == std::string::npos) e = t.size();
  const std::string from = "mbarrier.try_wait.parity.acquire.cluster.", to = "mbarrier.try_wait.parity.acquire.cta.";
  int n = 0;
  for (size_t pos = t.find(from, b); pos != std::string::npos && pos < e; pos = t.find(from, pos + to.size())) {
    t.replace(pos, from.size(), to);
    e -= from.size() - to.size();
    ++n;
  }
  REQUIRE_MESSAGE(n == 21, n << " cluster-scope waits in " << kPairEntry);
  return t;
}

// The status and the report of a launch that failed (the gradients are then not checked).
struct Failure { flashptx_status status = FLASHPTX_OK; std::string report; };
Failure* g_expect_failure = nullptr;

Grads run_bwd(const BCase& c, const std::vector<uint16_t>& q, const std::vector<uint16_t>& k, const std::vector<uint16_t>& v,
              const std::vector<uint16_t>& o, const std::vector<float>& lse, const std::vector<uint16_t>& dout) {
  const size_t nq = q.size(), nk = k.size();
  void *dq_in, *dk_in, *dv_in, *d_o, *d_lse, *d_do, *ddq, *ddk, *ddv, *ws = nullptr;
  CUDA_REQUIRE(cudaMalloc(&dq_in, nq * 2));
  CUDA_REQUIRE(cudaMalloc(&dk_in, nk * 2));
  CUDA_REQUIRE(cudaMalloc(&dv_in, nk * 2));
  CUDA_REQUIRE(cudaMalloc(&d_o, nq * 2));
  CUDA_REQUIRE(cudaMalloc(&d_do, nq * 2));
  CUDA_REQUIRE(cudaMalloc(&d_lse, lse.size() * 4));
  CUDA_REQUIRE(cudaMalloc(&ddq, nq * 2));
  CUDA_REQUIRE(cudaMalloc(&ddk, nk * 2));
  CUDA_REQUIRE(cudaMalloc(&ddv, nk * 2));
  CUDA_REQUIRE(cudaMemcpy(dq_in, q.data(), nq * 2, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemcpy(dk_in, k.data(), nk * 2, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemcpy(dv_in, v.data(), nk * 2, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemcpy(d_o, o.data(), nq * 2, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemcpy(d_do, dout.data(), nq * 2, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemcpy(d_lse, lse.data(), lse.size() * 4, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemset(ddq, 0xFF, nq * 2));
  CUDA_REQUIRE(cudaMemset(ddk, 0xFF, nk * 2));
  CUDA_REQUIRE(cudaMemset(ddv, 0xFF, nk * 2));
  flashptx_bwd_params p;
  flashptx_bwd_params_contiguous(&p, dq_in, dk_in, dv_in, d_o, static_cast<const float*>(d_lse), d_do, ddq, ddk, ddv, 1,
                                 c.sq, c.sk, c.hq, c.hkv, c.d, c.dtype, c.causal ? 1 : 0);
  p.deterministic = 1;
  int64_t bytes = 0;
  REQUIRE_MESSAGE(flashptx_bwd_workspace_size(&p, &bytes) == FLASHPTX_OK, flashptx_last_error());
  CUDA_REQUIRE(cudaMalloc(&ws, bytes > 0 ? bytes : 256));
  p.workspace = ws;
  p.workspace_bytes = bytes;
  flashptx_kernel_info info{};
  REQUIRE_MESSAGE(flashptx_bwd_kernel_info(&p, &info) == FLASHPTX_OK, flashptx_last_error());
  INFO("kernel " << std::string(info.symbol));
  CHECK(std::string(info.symbol) == c.kernel);
  const flashptx_status s = flashptx_bwd(&p, nullptr);
  if (g_expect_failure) {
    g_expect_failure->status = s;
    if (s != FLASHPTX_OK) g_expect_failure->report = flashptx_sim_last_report();
  } else {
    REQUIRE_MESSAGE(s == FLASHPTX_OK, flashptx_last_error());
  }
  CUDA_REQUIRE(cudaDeviceSynchronize());
  Grads g{std::vector<uint16_t>(nq), std::vector<uint16_t>(nk), std::vector<uint16_t>(nk)};
  CUDA_REQUIRE(cudaMemcpy(g.dq.data(), ddq, nq * 2, cudaMemcpyDeviceToHost));
  CUDA_REQUIRE(cudaMemcpy(g.dk.data(), ddk, nk * 2, cudaMemcpyDeviceToHost));
  CUDA_REQUIRE(cudaMemcpy(g.dv.data(), ddv, nk * 2, cudaMemcpyDeviceToHost));
  for (void* x : {dq_in, dk_in, dv_in, d_o, d_lse, d_do, ddq, ddk, ddv, ws}) cudaFree(x);
  return g;
}

double max_err(flashptx_dtype t, const std::vector<uint16_t>& g, const std::vector<double>& r) {
  double m = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    const double d = std::fabs(double(from_dtype(t, g[i])) - r[i]);
    if (!(d <= m)) m = std::isnan(d) ? INFINITY : d;
  }
  return m;
}
double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

void run_case(const BCase& c) {
  INFO("Sq=" << c.sq << " Sk=" << c.sk << " Hq=" << c.hq << " Hkv=" << c.hkv << " d=" << c.d << (c.causal ? " causal" : "")
              << (is_bf16(c.dtype) ? " bf16" : " fp16"));
  const ref::Elem el = is_bf16(c.dtype) ? ref::Elem::kBF16 : ref::Elem::kFP16;
  const flashptx::Round rd = is_bf16(c.dtype) ? flashptx::Round::kBF16 : flashptx::Round::kFP16;
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> nd(0.f, 1.f);
  auto make = [&](int64_t n) {
    std::vector<uint16_t> x(static_cast<size_t>(n));
    for (auto& e : x) e = to_dtype(c.dtype, nd(rng));
    return x;
  };
  const std::vector<uint16_t> q = make(c.sq * c.hq * c.d), k = make(c.sk * c.hkv * c.d), v = make(c.sk * c.hkv * c.d),
                              dout = make(c.sq * c.hq * c.d);
  const ref::Problem rp = flashptx_test::ref_problem(1, c.sq, c.sk, c.hq, c.hkv, c.d, c.causal, 0.f);
  const auto qv = ref::contiguous_q(q.data(), el, rp), kv = ref::contiguous_kv(k.data(), el, rp),
             vv = ref::contiguous_kv(v.data(), el, rp), dov = ref::contiguous_q(dout.data(), el, rp);
  const ref::Forward fwd = ref::forward(rp, qv, kv, vv, rd);
  std::vector<uint16_t> o(fwd.o.size());
  for (size_t i = 0; i < o.size(); ++i) o[i] = to_dtype(c.dtype, static_cast<float>(fwd.o[i]));
  std::vector<float> lse(fwd.lse.size());
  for (size_t i = 0; i < lse.size(); ++i) lse[i] = static_cast<float>(fwd.lse[i]);

  const Grads g = run_bwd(c, q, k, v, o, lse, dout);
  if (g_expect_failure) return;
  const auto exact = ref::backward(rp, qv, kv, vv, dov);
  const auto same = ref::backward(rp, qv, kv, vv, dov, rd);
  static const std::vector<double> kNone;
  struct G { const char* name; const std::vector<uint16_t>& x; const std::vector<double>& r; const std::vector<double>& s;
             const std::vector<double>& env; };
  for (const G& x : {G{"dQ", g.dq, exact.dq, same.dq, exact.dq_env}, G{"dK", g.dk, exact.dk, same.dk, exact.dk_env},
                     G{"dV", g.dv, exact.dv, same.dv, kNone}}) {
    double env = 0;
    for (double e : x.env) env = std::max(env, e);
    const double err = max_err(c.dtype, x.x, x.r), tol = 2 * max_diff(x.s, x.r) + 1e-5 + env;
    CHECK_MESSAGE(err <= tol, x.name << ": max|g - ref| = " << err << " > " << tol);
  }
  // the deterministic mode: a second launch, bit for bit
  const Grads g2 = run_bwd(c, q, k, v, o, lse, dout);
  CHECK(g2.dq == g.dq);
  CHECK(g2.dk == g.dk);
  CHECK(g2.dv == g.dv);
}

bool sim() {
  if (flashptx_sim_configure == nullptr || !flashptx_test::on_simulator()) {
    MESSAGE("skipped: the FA4 backward runs on the PTX simulator only here (never run on a Blackwell GPU)");
    return false;
  }
  REQUIRE(flashptx_set_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, 1) == FLASHPTX_OK);
  REQUIRE(flashptx_sim_configure("round-robin", std::random_device{}(), 4) == 0);
  return true;
}

}  // namespace

TEST_SUITE("gpu_sm100 fa4 backward (simulator)") {

TEST_CASE("the 1-CTA FA4 backward, d64, deterministic: GQA, ragged tails, causal and not, against fp64") {
  if (!sim()) return;
  MESSAGE("sm_100a FA4 backward: executed in the PTX simulator; never run on a Blackwell GPU");
  run_case({130, 160, 2, 1, 64, false, "fa4_bwd_sm100_bf16_d64"});
  run_case({130, 160, 2, 1, 64, true, "fa4_bwd_sm100_bf16_d64"});
  run_case({130, 160, 2, 1, 64, false, "fa4_bwd_sm100_fp16_d64", FLASHPTX_FP16});
}

TEST_CASE("the 1-CTA FA4 backward, d128 (one key block: the plan's 1-CTA kernel), causal, deterministic, against fp64") {
  if (!sim()) return;
  run_case({130, 100, 2, 1, 128, true, "fa4_bwd_sm100_bf16_d128"});
  run_case({130, 100, 2, 1, 128, true, "fa4_bwd_sm100_fp16_d128", FLASHPTX_FP16});
}

TEST_CASE("the 2-CTA FA4 backward (cta_group::2), d128, deterministic: GQA, ragged tails, against fp64, bf16 and fp16") {
  if (!sim()) return;
  run_case({130, 300, 2, 1, 128, false, kPairEntry});
  run_case({130, 300, 2, 1, 128, false, "fa4_bwd_sm100_fp16_d128_2cta", FLASHPTX_FP16});
}

TEST_CASE("a mutation of the 2-CTA FA4 backward: its waits on the peer's arrivals at CTA scope are a wait with too narrow a scope") {
  if (!sim()) return;
  REQUIRE(flashptx_sim_override_ptx(kPairEntry, pair_waits_at_cta_scope().c_str()) == 0);
  struct Restore { ~Restore() { flashptx_sim_override_ptx(kPairEntry, nullptr); } } restore;
  Failure f;
  g_expect_failure = &f;
  struct Reset { ~Reset() { g_expect_failure = nullptr; } } reset;
  run_case({130, 300, 2, 1, 128, false, kPairEntry});
  INFO("report:\n" << f.report.substr(0, 3000));
  CHECK(f.status == FLASHPTX_ERR_CUDA);
  CHECK(f.report.find("a wait with too narrow a scope") != std::string::npos);
}

}  // TEST_SUITE
