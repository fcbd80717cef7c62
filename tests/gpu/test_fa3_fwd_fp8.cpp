// flashptx_fwd_fp8 on the GPU (the FA3 FP8 forward, src/sm90/fa3_fwd_fp8.cuh).
//
// Inputs: fresh random bf16-valued tensors (never zeros), quantized to e4m3 on the host by the
// reference of flashptx_quantize_fp8 (tools/support/fp8_quant_ref.h: bit-identical to the device
// quantizer, tests/gpu/test_fp8_quantize.cpp), at the case's granularity and strides.
// Rule: with ref = fp64 attention of the dequantized inputs and O_same = the same with P rounded to
// e4m3 after the 2^8 offset and O rounded to bf16 (tools/support/fp8_attention_ref.h),
//   max|O - ref| <= 2 max|O_same - ref| + 1e-4;
//   |LSE - ref| <= 2e-3 A + 1e-5 |ref| + 1e-5 per row, A = the row's largest scale * sum_e |q_e k_e|:
//   LSE is a softmax-weighted mean of the scores, each of which Hopper's FP8 MMA accumulates with
//   fewer mantissa bits than fp32 (the 2e-3 of tests/gpu/test_prim_wgmma.cpp's e4m3 rule).
// Outputs poisoned (0xFFFF bf16 NaN, 0xFFFFFFFF for LSE) with guards after them: every logical
// element is written, nothing else. Every case also runs through the release libflashptx.so and must
// give the same bits (tests/gpu/release_lib.h).
//
// Suites (one process each on the H200, as the other GPU suites):
//   gpu_sm90 fa3 fp8 forward   correctness, strides, GQA, tails, determinism, bad input
//   gpu_sm90 fa3 fp8 rmse      the quantization experiment of issue 11 (prints three RMSEs)
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "src/sm90/fa3_fwd_fp8.h"
#include "tests/gpu/release_lib.h"
#include "tests/gpu/test_util.h"
#include "tests/sim/sim_schedule.h"
#include "tools/support/dtype.h"
#include "tools/support/fp8_attention_ref.h"
#include "tools/support/fp8_quant_ref.h"

using namespace flashptx_test;

namespace {

struct Fp8Case {
  int64_t batch, sq, sk, hq, hkv, d;
  bool causal;
  flashptx_fp8_scale_granularity gq, gk, gv;
  Layout layout = Layout::kContiguous;
  bool v_keys_contiguous = false;
  float softmax_scale = 0.f;
  std::string str() const {
    std::ostringstream s;
    s << "b" << batch << " sq" << sq << " sk" << sk << " hq" << hq << " hkv" << hkv << " d" << d
      << (causal ? " causal" : "") << " gran(q,k,v)=" << gq << gk << gv << layout_name(layout)
      << (v_keys_contiguous ? " V^T" : "");
    return s.str();
  }
};

int64_t descale_count(flashptx_fp8_scale_granularity g, int64_t b, int64_t h, int64_t s) {
  if (g == FLASHPTX_FP8_SCALE_PER_TENSOR) return 1;
  if (g == FLASHPTX_FP8_SCALE_PER_HEAD) return b * h;
  return b * h * ((s + 127) / 128);
}

// One e4m3 tensor: bf16-valued N(0,1) data quantized by the host reference into `st` strides.
struct Quantized {
  std::vector<uint8_t> codes;
  std::vector<float> descale;
  Strides st{};
};
Quantized quantize(std::mt19937_64& rng, Layout layout, int64_t b, int64_t s, int64_t h, int64_t d,
                   flashptx_fp8_scale_granularity g) {
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<uint16_t> in(static_cast<size_t>(std::max<int64_t>(b * s * h * d, 1)));
  for (auto& x : in) {
    float v = nd(rng);
    if (v == 0.f) v = 0.5f;  // never a zero
    x = flashptx::float_to_bf16(v);
  }
  Quantized r;
  // e4m3 strides must be multiples of 16 bytes: the padded layout pads rows by 16 here.
  r.st = make_strides(layout, b, s, h, d);
  if (layout == Layout::kPadded) {
    const int64_t hs = d + 16, rs = h * hs, bs = s * rs + 64;
    r.st = {bs, rs, hs, b * bs};
  }
  r.codes.assign(static_cast<size_t>(std::max<int64_t>(r.st.total, 1)), 0x7F);  // NaN code in the padding
  r.descale.assign(static_cast<size_t>(descale_count(g, b, h, s)), 0.f);
  if (b * s * h > 0)
    flashptx::ref::quantize_fp8({in.data(), r.codes.data(), r.descale.data(), b, s, h, d, s * h * d, h * d, d, r.st.b,
                                 r.st.s, r.st.h, true, g, 0});
  return r;
}

struct Fp8Problem {
  Fp8Case c;
  Quantized q, k, v;
  std::vector<uint8_t> vt;  // V^T [b, h, d, sk_pad] when c.v_keys_contiguous
  int64_t vt_dim_stride = 0, vt_head_stride = 0, vt_batch_stride = 0;
  Strides so{};
  std::unique_ptr<DeviceBuf> dq, dk, dv, dout, dlse, dsq, dsk, dsv;
  flashptx_fwd_fp8_params params{};

  Fp8Problem(const Fp8Case& cs, uint64_t seed) : c(cs) {
    std::mt19937_64 rng(seed);
    q = quantize(rng, c.layout, c.batch, c.sq, c.hq, c.d, c.gq);
    k = quantize(rng, c.layout, c.batch, c.sk, c.hkv, c.d, c.gk);
    v = quantize(rng, c.layout, c.batch, c.sk, c.hkv, c.d, c.gv);
    so = make_strides(c.layout, c.batch, c.sq, c.hq, c.d);
    const uint8_t* vsrc = v.codes.data();
    size_t vbytes = v.codes.size();
    if (c.v_keys_contiguous) {
      vt_dim_stride = (c.sk + 15) / 16 * 16 + 16;  // padded key rows
      vt_head_stride = c.d * vt_dim_stride;
      vt_batch_stride = c.hkv * vt_head_stride + 32;
      vt.assign(static_cast<size_t>(std::max<int64_t>(c.batch * vt_batch_stride, 16)), 0x7F);
      for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t s = 0; s < c.sk; ++s)
          for (int64_t h = 0; h < c.hkv; ++h)
            for (int64_t e = 0; e < c.d; ++e)
              vt[b * vt_batch_stride + h * vt_head_stride + e * vt_dim_stride + s] =
                  v.codes[b * v.st.b + s * v.st.s + h * v.st.h + e];
      vsrc = vt.data();
      vbytes = vt.size();
    }
    auto upload = [](std::unique_ptr<DeviceBuf>& d, const void* h, size_t n) {
      d.reset(new DeviceBuf(n));
      CUDA_REQUIRE(cudaMemcpy(d->p, h, n, cudaMemcpyHostToDevice));
    };
    upload(dq, q.codes.data(), q.codes.size());
    upload(dk, k.codes.data(), k.codes.size());
    upload(dv, vsrc, vbytes);
    upload(dsq, q.descale.data(), q.descale.size() * 4);
    upload(dsk, k.descale.data(), k.descale.size() * 4);
    upload(dsv, v.descale.data(), v.descale.size() * 4);
    dout.reset(new DeviceBuf((static_cast<size_t>(std::max<int64_t>(so.total, 1)) + kGuard) * 2));
    dlse.reset(new DeviceBuf((static_cast<size_t>(c.batch * c.hq * c.sq) + kGuard) * 4));
    params = flashptx_fwd_fp8_params{};
    params.q = dq->p; params.k = dk->p; params.v = dv->p; params.o = dout->p;
    params.lse = static_cast<float*>(dlse->p);
    params.descale_q = static_cast<const float*>(dsq->p);
    params.descale_k = static_cast<const float*>(dsk->p);
    params.descale_v = static_cast<const float*>(dsv->p);
    params.batch = c.batch; params.seqlen_q = c.sq; params.seqlen_k = c.sk;
    params.heads_q = c.hq; params.heads_kv = c.hkv; params.head_dim = c.d;
    params.q_batch_stride = q.st.b; params.q_row_stride = q.st.s; params.q_head_stride = q.st.h;
    params.k_batch_stride = k.st.b; params.k_row_stride = k.st.s; params.k_head_stride = k.st.h;
    if (c.v_keys_contiguous) {
      params.v_batch_stride = vt_batch_stride; params.v_head_stride = vt_head_stride;
      params.v_dim_stride = vt_dim_stride; params.v_row_stride = 1;
      params.v_layout = FLASHPTX_FP8_V_KEYS_CONTIGUOUS;
    } else {
      params.v_batch_stride = v.st.b; params.v_row_stride = v.st.s; params.v_head_stride = v.st.h;
      params.v_layout = FLASHPTX_FP8_V_ROW_MAJOR;
    }
    params.o_batch_stride = so.b; params.o_row_stride = so.s; params.o_head_stride = so.h;
    params.q_dtype = params.k_dtype = params.v_dtype = FLASHPTX_FP8_E4M3;
    params.o_dtype = FLASHPTX_BF16;
    params.q_granularity = c.gq; params.k_granularity = c.gk; params.v_granularity = c.gv;
    params.causal = c.causal ? 1 : 0;
    params.softmax_scale = c.softmax_scale;
  }

  void poison() {
    CUDA_REQUIRE(cudaMemset(dout->p, 0xFF, dout->bytes));
    CUDA_REQUIRE(cudaMemset(dlse->p, 0xFF, dlse->bytes));
  }
  void run() {
    const flashptx_status s = flashptx_fwd_fp8(&params, nullptr);
    REQUIRE_MESSAGE(s == FLASHPTX_OK, flashptx_last_error());
    CUDA_REQUIRE(cudaGetLastError());
    CUDA_REQUIRE(cudaDeviceSynchronize());
  }
  void run_release() {
    const auto& rel = release_lib();
    REQUIRE_MESSAGE(rel.loaded(), rel.why);
    const flashptx_status s = rel.fwd_fp8(&params, nullptr);
    REQUIRE_MESSAGE(s == FLASHPTX_OK, rel.last_error());
    CUDA_REQUIRE(cudaGetLastError());
    CUDA_REQUIRE(cudaDeviceSynchronize());
  }
  std::vector<uint16_t> out() const {
    std::vector<uint16_t> o(dout->bytes / 2);
    REQUIRE(cudaMemcpy(o.data(), dout->p, dout->bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    return o;
  }
  std::vector<float> lse() const {
    std::vector<float> l(dlse->bytes / 4);
    REQUIRE(cudaMemcpy(l.data(), dlse->p, dlse->bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    return l;
  }
  flashptx::ref::Fp8Attention ref_problem() const {
    flashptx::ref::Fp8Attention a;
    a.batch = c.batch; a.seqlen_q = c.sq; a.seqlen_k = c.sk; a.heads_q = c.hq; a.heads_kv = c.hkv; a.head_dim = c.d;
    a.causal = c.causal;
    a.softmax_scale = c.softmax_scale;
    a.q = {q.codes.data(), q.st.b, q.st.s, q.st.h, 1, q.descale.data(), c.gq, c.hq, c.sq};
    a.k = {k.codes.data(), k.st.b, k.st.s, k.st.h, 1, k.descale.data(), c.gk, c.hkv, c.sk};
    a.v = {v.codes.data(), v.st.b, v.st.s, v.st.h, 1, v.descale.data(), c.gv, c.hkv, c.sk};
    return a;
  }
};

// Runs the case, checks the writes and the fp64 rule, then the release library's bits.
void check_case(const Fp8Case& c, uint64_t seed) {
  CAPTURE(c.str());
  Fp8Problem pb(c, seed);
  pb.poison();
  pb.run();
  const auto o = pb.out();
  const auto l = pb.lse();

  // Writes: every logical element of O set (not NaN), everything else still poisoned.
  std::vector<char> logical(o.size(), 0);
  int64_t unwritten = 0, clobbered = 0;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t i = 0; i < c.sq; ++i)
      for (int64_t h = 0; h < c.hq; ++h)
        for (int64_t e = 0; e < c.d; ++e) {
          const size_t at = static_cast<size_t>(b * pb.so.b + i * pb.so.s + h * pb.so.h + e);
          logical[at] = 1;
          if (std::isnan(flashptx::bf16_to_float(o[at]))) ++unwritten;
        }
  for (size_t i = 0; i < o.size(); ++i)
    if (!logical[i] && o[i] != kPoison) ++clobbered;
  CHECK_MESSAGE(unwritten == 0, c.str() << ": " << unwritten << " O elements not written (NaN)");
  CHECK_MESSAGE(clobbered == 0, c.str() << ": " << clobbered << " elements outside O written");
  check_lse_writes(l, c.batch * c.hq * c.sq, c.str());

  std::vector<double> ref_o, ref_lse, same_o, same_lse, score_abs;
  const auto rp = pb.ref_problem();
  flashptx::ref::fp8_attention(rp, false, &ref_o, &ref_lse, &score_abs);
  flashptx::ref::fp8_attention(rp, true, &same_o, &same_lse);
  double e_o = 0, e_same = 0, e_lse = 0, lse_excess = 0;
  int64_t lse_inf_bad = 0;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t i = 0; i < c.sq; ++i)
      for (int64_t h = 0; h < c.hq; ++h) {
        for (int64_t e = 0; e < c.d; ++e) {
          const size_t r = static_cast<size_t>(((b * c.sq + i) * c.hq + h) * c.d + e);
          const double got = flashptx::bf16_to_float(o[static_cast<size_t>(b * pb.so.b + i * pb.so.s + h * pb.so.h + e)]);
          e_o = std::max(e_o, std::fabs(got - ref_o[r]));
          e_same = std::max(e_same, std::fabs(same_o[r] - ref_o[r]));
        }
        const size_t li = static_cast<size_t>((b * c.hq + h) * c.sq + i);
        const double want = ref_lse[li], got = l[li];
        if (std::isinf(want) || std::isinf(got)) {
          lse_inf_bad += !(std::isinf(want) && std::isinf(got) && want < 0 && got < 0);
        } else {
          e_lse = std::max(e_lse, std::fabs(got - want));
          lse_excess =
              std::max(lse_excess, std::fabs(got - want) - (2e-3 * score_abs[li] + 1e-5 * std::fabs(want) + 1e-5));
        }
      }
  const double tol = 2 * e_same + 1e-4;
  CHECK_MESSAGE(e_o <= tol, c.str() << ": max|O - ref| = " << e_o << " > " << tol << " (O_same: " << e_same << ")");
  CHECK_MESSAGE(lse_excess <= 0, c.str() << ": max|LSE - ref| = " << e_lse << ", beyond its row's bound by " << lse_excess);
  CHECK_MESSAGE(lse_inf_bad == 0, c.str() << ": " << lse_inf_bad << " rows disagree on LSE = -inf");

  if (release_lib().loaded()) {
    pb.poison();
    pb.run_release();
    CHECK_MESSAGE(pb.out() == o, c.str() << ": the release library's O differs from the test build's");
    const auto lr = pb.lse();
    CHECK_MESSAGE(std::memcmp(lr.data(), l.data(), l.size() * 4) == 0,
                  c.str() << ": the release library's LSE differs from the test build's");
  }
}

constexpr flashptx_fp8_scale_granularity kT = FLASHPTX_FP8_SCALE_PER_TENSOR, kH = FLASHPTX_FP8_SCALE_PER_HEAD,
                                         kB = FLASHPTX_FP8_SCALE_PER_BLOCK;

}  // namespace

TEST_SUITE("gpu_sm90 fa3 fp8 forward") {

// One test case per head dim (run one with -tc='*d128*'), after a one-tile smoke test.
TEST_CASE("smoke: d128, one tile of 128 queries x 128 keys, per-tensor descales, both V layouts") {
  check_case({1, 128, 128, 1, 1, 128, false, kT, kT, kT}, 0x5e);
  check_case({1, 128, 128, 1, 1, 128, false, kT, kT, kT, Layout::kContiguous, true}, 0x5f);
}

void every_granularity(int64_t d, uint64_t seed) {
  if (on_simulator()) {
    // On the simulator: ragged tails in both lengths (two query tiles, two key blocks), GQA 2;
    // per-block scales without the mask, per-head with it (per-tensor: the smoke case).
    check_case({1, 150, 200, 2, 1, d, false, kB, kB, kB}, ++seed);
    check_case({1, 150, 200, 2, 1, d, true, kH, kH, kH}, ++seed);
    return;
  }
  for (bool causal : {false, true})
    for (auto g : {kT, kH, kB}) check_case({2, 300, 333, 4, 2, d, causal, g, g, g}, ++seed);
}
TEST_CASE("d64: causal and not, every granularity; GQA 2, ragged tails") { every_granularity(64, 0xf800); }
TEST_CASE("d128: causal and not, every granularity; GQA 2, ragged tails") { every_granularity(128, 0xf810); }
TEST_CASE("d256: causal and not, every granularity; GQA 2, ragged tails") { every_granularity(256, 0xf820); }

TEST_CASE("mixed granularities, V already transposed (keys contiguous), padded and head-major strides") {
  uint64_t seed = 0x57f8;
  if (on_simulator()) {
    // On the simulator: the three layouts once each at smaller shapes, one head dim each.
    check_case({1, 130, 200, 2, 1, 64, false, kB, kH, kT, Layout::kContiguous, true}, ++seed);
    check_case({2, 100, 129, 2, 2, 128, true, kH, kB, kB, Layout::kPadded, false}, ++seed);
    check_case({1, 70, 150, 4, 2, 256, true, kT, kT, kB, Layout::kHeadMajor, true}, ++seed);
    return;
  }
  for (int64_t d : {64, 128, 256})
    for (bool causal : {false, true}) {
      check_case({1, 257, 390, 2, 1, d, causal, kB, kH, kT, Layout::kContiguous, true}, ++seed);
      check_case({2, 200, 129, 4, 4, d, causal, kH, kB, kB, Layout::kPadded, false}, ++seed);
      check_case({1, 130, 300, 8, 2, d, causal, kT, kT, kB, Layout::kHeadMajor, true}, ++seed);
    }
}

TEST_CASE("shapes: one query, one key, more queries than keys (rows without keys), no keys, MQA, many blocks") {
  uint64_t seed = 0x1f8;
  if (on_simulator()) {
    // On the simulator: the edge shapes at d128, and the wide-block kernel (>= 2048 keys, uniform
    // K and V descales) on one query block at d64 and d128.
    check_case({1, 1, 1, 1, 1, 128, false, kB, kB, kB}, ++seed);
    check_case({1, 1, 300, 2, 1, 128, true, kT, kB, kB}, ++seed);
    check_case({1, 150, 50, 2, 2, 128, true, kB, kB, kB}, ++seed);  // rows < 100 see no key
    check_case({2, 77, 0, 2, 1, 128, false, kH, kH, kH}, ++seed);   // O = 0, LSE = -inf
    for (int64_t d : {64, 128}) check_case({1, 1, 2100, 2, 1, d, true, kB, kH, kT}, ++seed);
    return;
  }
  for (int64_t d : {64, 128, 256}) {
    check_case({1, 1, 1, 1, 1, d, false, kB, kB, kB}, ++seed);
    check_case({1, 1, 700, 2, 1, d, true, kT, kB, kB}, ++seed);
    check_case({1, 300, 50, 2, 2, d, true, kB, kB, kB}, ++seed);   // rows < 250 see no key
    check_case({2, 77, 0, 2, 1, d, false, kH, kH, kH}, ++seed);    // O = 0, LSE = -inf
    check_case({1, 1000, 1000, 8, 1, d, true, kB, kB, kB}, ++seed);
    check_case({1, 1024, 1024, 2, 2, d, false, kB, kB, kB}, ++seed);
    // K and V descales uniform along the keys, V row-major, >= 2048 keys: the wide-block kernels at
    // d64 / d128 (block_n 256 / 192; src/sm90/fa3_fwd_fp8.cu wide_blocks_apply), ragged and causal.
    check_case({1, 1, 2100, 2, 1, d, true, kB, kH, kT}, ++seed);
    check_case({1, 2200, 2050, 2, 1, d, true, kB, kT, kT}, ++seed);  // rows < 150 see no key
    check_case({1, 2048, 2048, 4, 1, d, true, kB, kH, kH}, ++seed);
    check_case({1, 2048, 2048, 2, 2, d, false, kT, kT, kT}, ++seed);
    check_case({2, 300, 2200, 2, 2, d, false, kH, kH, kH}, ++seed);
  }
  // A custom softmax scale and large scores.
  check_case({1, 256, 512, 2, 1, 128, false, kB, kB, kB, Layout::kContiguous, false, 0.3f}, ++seed);
}

// The paired causal walk (src/sm90/fa3_fwd_fp8.cu paired_applies: causal calls up to 8k keys, and
// d64's wide blocks at any length): units of query blocks m and M-1-m dealt round robin over one CTA per SM. Odd query-block counts (the middle tile's empty
// slot), more units than SMs (several units per CTA: the simulator has 4 SMs), query blocks that see
// no key (seqlen_q > seqlen_k: O = 0 from the consumers while the producer skips them), GQA.
TEST_CASE("the paired causal walk: odd query-block counts, several units per CTA, blocks without keys") {
  uint64_t seed = 0x9a1d;
  const auto paired = [&](const Fp8Case& c) {
    Fp8Problem pb(c, 1);
    const char* name = flashptx::fwd_fp8_kernel_name(pb.params);
    REQUIRE(name != nullptr);
    CHECK_MESSAGE(std::string(name).find("_paired") != std::string::npos, c.str() << ": ran " << name);
    check_case(c, ++seed);
  };
  if (on_simulator()) {
    paired({1, 300, 300, 6, 2, 64, true, kH, kH, kH});   // M = 3, 12 units on 4 SMs
    paired({1, 300, 100, 2, 1, 128, true, kB, kB, kB});  // rows < 200 see no key
    paired({2, 200, 260, 2, 2, 256, true, kT, kT, kT, Layout::kPadded, true});
    paired({1, 300, 2100, 4, 2, 64, true, kB, kH, kT});  // the wide-block walk (256-key blocks), M = 3
    return;
  }
  for (int64_t d : {64, 128, 256}) {
    paired({4, 1000, 1000, 16, 4, d, true, kH, kH, kH});  // M = 8: 256 units on 132 SMs
    paired({2, 1300, 1300, 12, 3, d, true, kB, kB, kB});  // M = 11
    paired({1, 1500, 600, 8, 8, d, true, kB, kT, kH, Layout::kHeadMajor, false});  // rows < 900 see no key
    paired({3, 700, 4096, 4, 1, d, true, kB, kB, kB, Layout::kContiguous, true});
    // Long keys at few rows (the CPU's fp64 reference is the cost here):
    if (d == 64) paired({1, 600, 9000, 4, 2, d, true, kB, kH, kH});  // the wide-block walk, 9k keys
    paired({1, 500, 8000, 4, 2, d, true, kB, kB, kB});               // 8k keys, 5 query blocks
  }
}

TEST_CASE("determinism: 200 launches bitwise equal, in both V layouts and the wide-block kernel") {
  for (int which = 0; which < 3; ++which) {
    const bool vt = which == 1;
    const auto g = which == 2 ? kH : kB;  // 2: per-head K/V, the d128 block_n 192 kernel
    Fp8Case c{1, 1000, which == 2 ? 2100 : 1100, 4, 2, 128, true, kB, g, g, Layout::kContiguous, vt};
    // On the simulator: smaller (the wide-block kernel on one query block), and the same launch
    // under two more scheduler policies and seeds instead of 200 under one.
    if (on_simulator()) c = {1, which == 2 ? 64 : 200, which == 2 ? 2100 : 300, 2, 1, 128, true, kB, g, g, Layout::kContiguous, vt};
    CAPTURE(c.str());
    Fp8Problem pb(c, 99);
    pb.poison();
    pb.run();
    const auto o0 = pb.out();
    const auto l0 = pb.lse();
    if (on_simulator()) {
      for (int i = 0; i < 2; ++i) {
        SimSchedule schedule(kSimPolicies[i]);
        pb.poison();
        pb.run();
        CHECK_MESSAGE(pb.out() == o0, c.str() << ": O under " << SimSchedule::name(kSimPolicies[i]) << " differs");
        const auto l = pb.lse();
        CHECK_MESSAGE(std::memcmp(l.data(), l0.data(), l.size() * 4) == 0,
                      c.str() << ": LSE under " << SimSchedule::name(kSimPolicies[i]) << " differs");
      }
      continue;
    }
    int differing = 0;
    for (int i = 0; i < 200; ++i) {
      REQUIRE(flashptx_fwd_fp8(&pb.params, nullptr) == FLASHPTX_OK);
      if (i % 20 == 19) {
        CUDA_REQUIRE(cudaDeviceSynchronize());
        differing += pb.out() != o0;
        const auto l = pb.lse();
        differing += std::memcmp(l.data(), l0.data(), l.size() * 4) != 0;
      }
    }
    CUDA_REQUIRE(cudaDeviceSynchronize());
    CHECK_MESSAGE(differing == 0, c.str() << ": " << differing << " of 20 samples differ from the first launch");
  }
}

TEST_CASE("bad input on the device path: a distinct status, nothing launched, O untouched") {
  const Fp8Case c{1, 128, 128, 2, 2, 128, false, kB, kB, kB};
  Fp8Problem pb(c, 5);
  pb.poison();
  auto expect = [&](flashptx_fwd_fp8_params p, flashptx_status want) {
    CHECK(flashptx_fwd_fp8(&p, nullptr) == want);
    CHECK(std::string(flashptx_last_error()).find(flashptx_status_name(want)) == 0);
  };
  flashptx_fwd_fp8_params p = pb.params;
  p.descale_k = nullptr;
  expect(p, FLASHPTX_ERR_NULL_DESCALE);
  p = pb.params;
  p.v_granularity = static_cast<flashptx_fp8_scale_granularity>(7);
  expect(p, FLASHPTX_ERR_BAD_GRANULARITY);
  p = pb.params;
  p.k_dtype = FLASHPTX_BF16;
  expect(p, FLASHPTX_ERR_UNSUPPORTED_DTYPE);
  p = pb.params;
  p.q_row_stride += 8;  // 8 bytes: rows no longer 16-byte aligned
  expect(p, FLASHPTX_ERR_MISALIGNED);
  p = pb.params;
  p.v_layout = static_cast<flashptx_fp8_v_layout>(2);
  expect(p, FLASHPTX_ERR_BAD_V_LAYOUT);
  CUDA_REQUIRE(cudaDeviceSynchronize());
  const auto o = pb.out();
  int64_t touched = 0;
  for (uint16_t x : o) touched += x != kPoison;
  CHECK_MESSAGE(touched == 0, touched << " O elements written by a rejected call");
}

}  // TEST_SUITE

// ---- the quantization experiment (issue 11) ------------------------------------------------------
// Q, K, V ~ N(0, 1) in bf16, with a persistent +-10 excursion in channel 0 of Q and K (the CPU
// model's controlled fixture, tools/models/fp8.cpp channel_outlier_experiment, at kernel scale).
// Quantized on the GPU by flashptx_quantize_fp8 three ways: per tensor; per 128-row block; per block
// after the orthonormal Walsh-Hadamard rotation over head_dim of Q and K (QK^T unchanged). The FP8
// forward's O against fp64 attention of the bf16 inputs: RMSE over all elements, asserted against
// the bounds of the seed article's FP8 section (FA3 Table 3, fp64 reference; see kPaper* below).
namespace {

double rmse_of(flashptx_fp8_scale_granularity g, int hadamard, const std::vector<uint16_t>& q,
               const std::vector<uint16_t>& k, const std::vector<uint16_t>& v, const std::vector<double>& ref,
               int64_t B, int64_t S, int64_t H, int64_t D) {
  const size_t n = static_cast<size_t>(B * S * H * D);
  DeviceBuf in_q(n * 2), in_k(n * 2), in_v(n * 2), q8(n), k8(n), v8(n), o(n * 2);
  const int64_t nds = descale_count(g, B, H, S);
  DeviceBuf dsq(nds * 4), dsk(nds * 4), dsv(nds * 4);
  CUDA_REQUIRE(cudaMemcpy(in_q.p, q.data(), n * 2, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemcpy(in_k.p, k.data(), n * 2, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemcpy(in_v.p, v.data(), n * 2, cudaMemcpyHostToDevice));
  auto quant = [&](const DeviceBuf& in, DeviceBuf& out, DeviceBuf& ds, int hb) {
    flashptx_quantize_fp8_params qp;
    flashptx_quantize_fp8_params_contiguous(&qp, in.p, out.p, static_cast<float*>(ds.p), B, S, H, D, FLASHPTX_BF16, g);
    qp.hadamard_block = hb;
    REQUIRE_MESSAGE(flashptx_quantize_fp8(&qp, nullptr) == FLASHPTX_OK, flashptx_last_error());
  };
  quant(in_q, q8, dsq, hadamard);
  quant(in_k, k8, dsk, hadamard);
  quant(in_v, v8, dsv, 0);  // never V
  flashptx_fwd_fp8_params p;
  flashptx_fwd_fp8_params_contiguous(&p, q8.p, k8.p, v8.p, o.p, nullptr, static_cast<const float*>(dsq.p),
                                     static_cast<const float*>(dsk.p), static_cast<const float*>(dsv.p), B, S, S, H,
                                     H, D, g, 0);
  REQUIRE_MESSAGE(flashptx_fwd_fp8(&p, nullptr) == FLASHPTX_OK, flashptx_last_error());
  CUDA_REQUIRE(cudaDeviceSynchronize());
  std::vector<uint16_t> got(n);
  CUDA_REQUIRE(cudaMemcpy(got.data(), o.p, n * 2, cudaMemcpyDeviceToHost));
  double se = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = flashptx::bf16_to_float(got[i]) - ref[i];
    se += d * d;
  }
  return std::sqrt(se / static_cast<double>(n));
}

}  // namespace

TEST_SUITE("gpu_sm90 fa3 fp8 rmse") {

TEST_CASE("RMSE of O vs fp64 with outlier channels: per tensor, per block, per block + Hadamard, within the paper's bounds") {
  // On the simulator: 512 x 512, one head (four query and key blocks), the same bounds.
  const bool sim = flashptx_test::on_simulator();
  const int64_t B = 1, S = sim ? 512 : 1024, H = sim ? 1 : 4, D = 128;
  std::mt19937_64 rng(3406);
  std::normal_distribution<float> nd(0.f, 1.f);
  const size_t n = static_cast<size_t>(B * S * H * D);
  std::vector<uint16_t> q(n), k(n), v(n);
  std::vector<double> qf(n), kf(n), vf(n);
  for (size_t i = 0; i < n; ++i) {
    const bool ch0 = i % D == 0;
    float a = nd(rng), b = nd(rng), c = nd(rng);
    if (ch0) {
      a += (rng() & 1) ? 10.f : -10.f;
      b += (rng() & 1) ? 10.f : -10.f;
    }
    q[i] = flashptx::float_to_bf16(a); qf[i] = flashptx::bf16_to_float(q[i]);
    k[i] = flashptx::float_to_bf16(b); kf[i] = flashptx::bf16_to_float(k[i]);
    v[i] = flashptx::float_to_bf16(c); vf[i] = flashptx::bf16_to_float(v[i]);
  }
  // fp64 attention of the bf16 inputs (non-causal, scale 1/sqrt(D)), [B, S, H, D].
  std::vector<double> ref(n, 0.0), x(static_cast<size_t>(S));
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < S; ++i) {
      double m = -1e300;
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < D; ++e) dot += qf[(i * H + h) * D + e] * kf[(j * H + h) * D + e];
        x[j] = dot * scale;
        m = std::max(m, x[j]);
      }
      double l = 0;
      double* orow = &ref[(i * H + h) * D];
      for (int64_t j = 0; j < S; ++j) {
        const double p = std::exp(x[j] - m);
        l += p;
        for (int64_t e = 0; e < D; ++e) orow[e] += p * vf[(j * H + h) * D + e];
      }
      for (int64_t e = 0; e < D; ++e) orow[e] /= l;
    }
  const double per_tensor = rmse_of(kT, 0, q, k, v, ref, B, S, H, D);
  const double per_block = rmse_of(kB, 0, q, k, v, ref, B, S, H, D);
  const double hadamard = rmse_of(kB, static_cast<int>(D), q, k, v, ref, B, S, H, D);
  std::printf("fa3 fp8 rmse (d%lld, %lld x %lld, %lld heads, +-10 in Q/K channel 0): per tensor %.4e, per block %.4e, "
              "per block + Hadamard %.4e (FA3 paper, its own distribution: 2.4e-2 per tensor, 9.1e-3 with both)\n",
              static_cast<long long>(D), static_cast<long long>(S), static_cast<long long>(S), static_cast<long long>(H),
              per_tensor, per_block, hadamard);
  // The seed article's FP8 section (FA3 Table 3, RMSE against fp64): FP16 baseline 3.2e-4; FP8 per
  // tensor 2.4e-2; FP8 block quantization + incoherent processing 9.1e-3; without incoherent
  // processing 2.4e-2 (the 2.6x is 2.4e-2 / 9.1e-3). The fixture here is not the paper's distribution,
  // so each bound carries a stated margin:
  //   - per block + Hadamard <= 1.25 x 9.1e-3: the rotation spreads the outlier channel as the paper's
  //     incoherent processing does; 25% for the different inputs and shape;
  //   - per tensor <= 1.5 x 2.4e-2: one scale for the whole tensor, 50% for the +-10 channel (the
  //     fixture's outliers are persistent, the paper's are rare);
  //   - per tensor and per block each at least 2x per block + Hadamard: the paper's 2.6x less 25%;
  //     per block alone does not remove a persistent outlier channel (the paper's "without incoherent
  //     processing" row equals per tensor);
  //   - per block + Hadamard above the FP16 baseline 3.2e-4: e4m3 operands cannot beat fp16 ones, so
  //     a smaller value means the comparison read something other than the FP8 output.
  constexpr double kPaperFp16 = 3.2e-4, kPaperPerTensor = 2.4e-2, kPaperBlockIncoherent = 9.1e-3;
  constexpr double kPaperRatio = kPaperPerTensor / kPaperBlockIncoherent;
  CHECK_MESSAGE(hadamard <= 1.25 * kPaperBlockIncoherent, "per block + Hadamard " << hadamard);
  CHECK_MESSAGE(per_tensor <= 1.5 * kPaperPerTensor, "per tensor " << per_tensor);
  CHECK_MESSAGE(per_tensor >= 0.75 * kPaperRatio * hadamard, "per tensor " << per_tensor << ", per block + Hadamard " << hadamard);
  CHECK_MESSAGE(per_block >= 0.75 * kPaperRatio * hadamard, "per block " << per_block << ", per block + Hadamard " << hadamard);
  CHECK_MESSAGE(hadamard > kPaperFp16, "per block + Hadamard " << hadamard << " is below the FP16 baseline");
}

}  // TEST_SUITE
