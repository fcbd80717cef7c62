// Host tests for the FA3 FP8 oracle (docs/PROTOCOLS.md, "FP8 layouts";
// `flashptx ledger 0x06`).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "src/protocol/e4m3.h"
#include "tools/models/fp8.h"

namespace f8 = flashptx::models::fp8;
namespace e4m3 = flashptx::e4m3;
using f8::ScaleMutation;

TEST_SUITE("host models fp8 0x06") {

TEST_CASE("E4M3FN codebook: all 256 codes decode, encode back, 448 max, 2^-9 min subnormal") {
  const f8::CodebookSummary s = f8::codebook_check();
  CHECK(s.finite == 254);
  CHECK(s.nan == 2);
  CHECK(s.max_finite == 448.0f);
  CHECK(s.min_subnormal == 0.001953125f);
  CHECK(s.min_subnormal == std::ldexp(1.0f, -9));
  CHECK(s.min_normal == std::ldexp(1.0f, -6));
  CHECK(s.roundtrip_failures == 0);
  CHECK(s.midpoint_failures == 0);
  CHECK(s.saturation_failures == 0);
  CHECK(e4m3::is_nan(0x7F));
  CHECK(e4m3::is_nan(0xFF));
  CHECK(std::isnan(e4m3::decode(0x7F)));
  CHECK(e4m3::encode(NAN) == 0x7F);
  CHECK(e4m3::decode(0x7E) == 448.0f);
  CHECK(e4m3::decode(0xFE) == -448.0f);
  CHECK(e4m3::decode(0x01) == 0.001953125f);
  // exhaustive: decode is monotone over the positive codes, every value is k * 2^-9 * 2^e
  for (int c = 1; c < 0x7F; ++c) CHECK(e4m3::decode(uint8_t(c)) > e4m3::decode(uint8_t(c - 1)));
  // round to nearest even at the subnormal bottom: 2^-10 is a tie between 0 and 2^-9 -> 0
  CHECK(e4m3::encode(std::ldexp(1.0f, -10)) == 0x00);
  CHECK(e4m3::encode(std::nextafter(std::ldexp(1.0f, -10), 1.0f)) == 0x01);
  CHECK(e4m3::encode(3 * std::ldexp(1.0f, -10)) == 0x02);  // tie 1.5 units -> 2 (even)
  // carry into the exponent: 1.9375 rounds to 2.0; 15/16 * 2^-6 subnormal tie rounds to 2^-6
  CHECK(e4m3::decode(e4m3::encode(1.9375f)) == 2.0f);
  CHECK(e4m3::encode(15.0f / 1024.0f) == 0x08);
  // saturation instead of infinity
  CHECK(e4m3::encode(INFINITY) == 0x7E);
  CHECK(e4m3::encode(-1e30f) == 0xFE);
  // exhaustive over FP32 patterns (top 19 bits): encode picks a nearest code, ties to even
  int bad = 0;
  for (uint32_t hi = 0; hi < (1u << 19); ++hi) {
    const uint32_t u = hi << 13;
    float x;
    std::memcpy(&x, &u, 4);
    if (std::isnan(x)) continue;
    const uint8_t c = e4m3::encode(x);
    const double ax = std::fabs(static_cast<double>(x));
    if (ax >= 448.0) { bad += (c & 0x7F) != 0x7E; continue; }
    const double got = std::fabs(static_cast<double>(e4m3::decode(c)));
    for (int o = 0; o < 0x7F; ++o) {  // no code strictly closer; equal distance -> even code
      const double alt = e4m3::decode(uint8_t(o));
      const double dg = std::fabs(got - ax), da = std::fabs(alt - ax);
      if (da < dg || (da == dg && alt != got && (o & 1) == 0 && ((c & 0x7F) & 1))) { ++bad; break; }
    }
    if (x != 0 && c != 0 && c != 0x80 && ((c >> 7) != (u >> 31))) ++bad;  // sign kept
  }
  CHECK(bad == 0);
}

TEST_CASE("descale placement equals the unscaled math; wrong placements are detected by name") {
  const f8::ScaleFixture blk = f8::scale_fixture(false);
  REQUIRE(blk.dq.size() == 2);
  REQUIRE(blk.dv.size() == 4);
  CHECK(blk.dv[0] != blk.dv[3]);  // block-varying V descales
  const f8::ScaleRun ok = f8::run_scaled(blk, ScaleMutation::none);
  const f8::ScaleRun ref = f8::reference_attention(blk);
  CHECK(f8::max_abs_diff(ok.o, ref.o) < 1e-12);
  CHECK(f8::max_abs_diff(ok.s_entering_softmax, ref.s_entering_softmax) < 1e-12);
  CHECK(f8::check_scaled(blk, ok) == "ok");
  CHECK(f8::check_scaled(blk, f8::run_scaled(blk, ScaleMutation::qk_descale_after_softmax)) ==
        "QK descale not applied before softmax");
  CHECK(f8::check_scaled(blk, f8::run_scaled(blk, ScaleMutation::q_descale_by_kv_block)) ==
        "QK descale on wrong axis");
  CHECK(f8::check_scaled(blk, f8::run_scaled(blk, ScaleMutation::final_v_scale)) ==
        "V descale outside a block-varying sum");
  // a head-wide V descale (pinned [batch, kv_head] API) may legally be applied at finalize
  const f8::ScaleFixture head = f8::scale_fixture(true);
  CHECK(head.dv[0] == head.dv[3]);
  CHECK(f8::check_scaled(head, f8::run_scaled(head, ScaleMutation::none)) == "ok");
  CHECK(f8::check_scaled(head, f8::run_scaled(head, ScaleMutation::final_v_scale)) == "ok");
}

TEST_CASE("the 2^8 probability offset cancels in numerator, denominator and LSE") {
  const f8::ScaleFixture fx = f8::scale_fixture(false);
  const f8::ScaleRun with = f8::run_scaled(fx, ScaleMutation::none, true);
  const f8::ScaleRun without = f8::run_scaled(fx, ScaleMutation::none, false);
  CHECK(f8::max_abs_diff(with.o, without.o) < 1e-15);
  for (size_t i = 0; i < with.lse.size(); ++i) CHECK(std::fabs(with.lse[i] - without.lse[i]) < 1e-13);
  CHECK(f8::check_scaled(fx, f8::run_scaled(fx, ScaleMutation::offset_not_in_denominator)) ==
        "2^8 offset not cancelled in denominator");
  CHECK(f8::check_scaled(fx, f8::run_scaled(fx, ScaleMutation::offset_not_in_lse)) ==
        "LSE biased by the 2^8 offset");
  const f8::Identities id = f8::identities(f8::kHeadlineSeed);
  CHECK(id.offset_err <= 1.2e-16);  // the design write-up: 1.11e-16
  // the offset moves probabilities up the E4M3 range: [0,1] uses codes up to 0x38, [0,256] up to 0x78
  CHECK(e4m3::encode(1.0f) == 0x38);
  CHECK(e4m3::encode(256.0f) == 0x78);
  CHECK(e4m3::encode(std::ldexp(1.0f, -11)) == 0x00);        // underflows without the offset ...
  CHECK(e4m3::decode(e4m3::encode(256.0f * std::ldexp(1.0f, -11))) == 0.125f);  // ... not with it
}

TEST_CASE("Q/K orthogonal transform is exact before quantization only; P/V permutation must be paired") {
  const f8::Identities id = f8::identities(f8::kHeadlineSeed);
  CHECK(id.rrt_err < 1e-15);
  CHECK(id.qk_err < 1e-13);             // the write-up (its seed): 1.78e-14
  CHECK(id.qk_quantized_err > 1e-3);     // after E4M3 the identity is not exact
  CHECK(id.paired_err < 1e-13);          // the write-up (its seed): 2.22e-16
  CHECK(f8::check_permutation(id.paired_err) == "ok");
  CHECK(f8::check_permutation(id.unpaired_p_err) == "unpaired permutation changes PV");
  CHECK(f8::check_permutation(id.unpaired_v_err) == "unpaired permutation changes PV");
  // the signed Hadamard is orthonormal for every power-of-two width
  for (int d : {2, 16, 64, 128}) {
    const f8::Mat r = f8::signed_hadamard(d, 7);
    f8::Mat eye(d, d);
    for (int i = 0; i < d; ++i) eye(i, i) = 1;
    CHECK(f8::max_abs_diff(f8::matmul_bt(r, r), eye) < 1e-14);
  }
}

TEST_CASE("seeded experiment: the spec's orderings (numbers of its Python oracle not reproducible)") {
  // Seed 3406 of this oracle's generator; the design write-up's run (per-tensor 0.04762, per-block
  // 0.04066, Hadamard 0.05024) used Python's generator and fixture code, which it does not give
  // (docs/PROTOCOLS.md, "FP8 layouts", ledger).
  const f8::ExperimentRow h = f8::outlier_experiment(f8::kHeadlineSeed);
  CHECK(h.per_block < h.per_tensor);
  CHECK(h.hadamard_block > h.per_block);  // "The transform is worse on that seed"
  CHECK(h.hadamard_block > h.per_tensor);
  // pinned values of this oracle (deterministic generator), so drift is noticed
  CHECK(h.per_tensor == doctest::Approx(0.01343).epsilon(1e-3));
  CHECK(h.per_block == doctest::Approx(0.01119).epsilon(1e-3));
  CHECK(h.hadamard_block == doctest::Approx(0.01401).epsilon(1e-3));
  // geometry dependence: over 100 seeds the transform sometimes helps and sometimes hurts
  int had_wins = 0;
  for (uint64_t s = 0; s < 100; ++s) {
    const f8::ExperimentRow r = f8::outlier_experiment(s);
    had_wins += r.hadamard_block < r.per_block;
  }
  CHECK(had_wins > 10);
  CHECK(had_wins < 90);
  // controlled fixture: persistent +-10 in Q/K channel 0; the Hadamard reliably helps
  const f8::ExperimentRow c = f8::channel_outlier_experiment(f8::kHeadlineSeed);
  CHECK(c.hadamard_block < 0.5 * c.per_block);  // the write-up: 0.23677 -> 0.08066
  int reliable = 0;
  for (uint64_t s = 0; s < 50; ++s) {
    const f8::ExperimentRow r = f8::channel_outlier_experiment(s);
    reliable += r.hadamard_block < r.per_block;
  }
  CHECK(reliable >= 45);
}

}  // TEST_SUITE

// ---- the FP8 layout, descale and transform failure lab -----------------------------------------
TEST_CASE("FP8 failure lab: the protocol passes; each layout mutation is named with its evidence") {
  using f8::LayoutLab;
  const f8::LayoutLabResult ok = f8::run_layout_lab(LayoutLab::none);
  CHECK(ok.verdict == "ok");
  const f8::LayoutLabResult v = f8::run_layout_lab(LayoutLab::v_head_contiguous_to_pv);
  CHECK(v.verdict == "fp8_v_not_k_major");
  CHECK(v.evidence.find("240 of 256 B-operand bytes") != std::string::npos);
  const f8::LayoutLabResult vt = f8::run_layout_lab(LayoutLab::vt_released_before_transpose);
  CHECK(vt.verdict.rfind("partial_transposed_tile", 0) == 0);
  CHECK(vt.evidence == "Vt released at tick 2; quarters read from generations 0 1 1 1");
  const f8::LayoutLabResult p = f8::run_layout_lab(LayoutLab::p_ownership_repair_skipped);
  CHECK(p.verdict == "wrong_operand_a_ownership");
  CHECK(p.evidence.find("24 of 32 operand-A columns") != std::string::npos);
  CHECK(p.evidence.find("(0 with V's") != std::string::npos);  // paired with V, the reinterpretation is exact
  CHECK(std::string(f8::layout_lab_name(LayoutLab::p_ownership_repair_skipped)) == "p_ownership_repair_skipped");
}

TEST_CASE("FP8 failure lab: the accumulator-to-operand-A reinterpretation is the transpose's key permutation") {
  // Slot i of lane q holds accumulator column c_fragment_col(q, i) and operand A expects
  // a_fragment_col(q, i); over the first 16 keys that map is exactly sigma of the V transpose.
  for (int q = 0; q < 4; ++q)
    for (int i = 0; i < 4; ++i) CHECK(f8::transpose_sigma(f8::a_fragment_col(q, i)) == f8::c_fragment_col(q, i));
}

TEST_CASE("FP8 failure lab: bad descales are refused by name; the good fixture passes") {
  CHECK(f8::check_descales(f8::scale_fixture(false)) == "ok");
  CHECK(f8::check_descales(f8::scale_fixture(true)) == "ok");
  struct Bad { double d; const char* want; };
  for (const Bad& b : {Bad{0.0, "descK[1] = 0: zero descale"}, Bad{-0.5, "descK[1] = -0.5: negative descale"},
                       Bad{std::nan(""), "descK[1] = nan: NaN descale"}, Bad{INFINITY, "descK[1] = inf: infinite descale"}}) {
    f8::ScaleFixture fx = f8::scale_fixture(false);
    fx.dk[1] = b.d;
    CHECK(f8::check_descales(fx) == b.want);
    // and what it would have done: the output departs from the reference on the clean tensors
    const f8::ScaleRun bad = f8::run_scaled(fx, ScaleMutation::none);
    const f8::ScaleRun ref = f8::reference_attention(f8::scale_fixture(false));
    bool nan = false;
    double diff = 0;
    for (size_t i = 0; i < bad.o.a.size(); ++i) {
      nan = nan || std::isnan(bad.o.a[i]);
      diff = std::max(diff, std::fabs(bad.o.a[i] - ref.o.a[i]));
    }
    CHECK((nan || diff > 1e-3));
  }
}

TEST_CASE("FP8 failure lab: Q and K under different orthogonal transforms change the logits") {
  const f8::TransformPair same = f8::qk_transform_pair(f8::kHeadlineSeed, true);
  const f8::TransformPair diff = f8::qk_transform_pair(f8::kHeadlineSeed, false);
  CHECK(same.rqrk_err < 1e-14);
  CHECK(same.logit_err < 1e-12);
  CHECK(f8::check_qk_transform(same) == "ok");
  CHECK(diff.rqrk_err > 0.5);
  CHECK(diff.logit_err > 1.0);
  CHECK(f8::check_qk_transform(diff) == "R_Q R_K^T != I: logits change before quantization");
}
