// The bench's host side: FLOP numerators (docs/PROTOCOLS.md, "Evidence"), timing statistics,
// the fa3 grid, and the JSON manifest (well-formed, parses back, carries the keys the side-by-side
// and README rely on).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "tools/support/bench.h"
#include "tools/support/bench_flops.h"
#include "tools/support/json.h"
#include "tools/support/reference.h"

using namespace flashptx;
using namespace flashptx::bench;

TEST_SUITE("host bench") {

TEST_CASE("forward numerators: 4*B*H*Sq*Sk*d, causal halved, the spec's worked example") {
  // the worked example of `flashptx ledger 0x0D`: B=32, S=1024, H=16, d=128 -> 274,877,906,944
  // dense forward FLOPs.
  CHECK(fwd_flops(32, 16, 1024, 1024, 128, false) == 274877906944.0);
  CHECK(fwd_flops(32, 16, 1024, 1024, 128, true) == 137438953472.0);
  CHECK(bwd_flops(32, 16, 1024, 1024, 128, false) == 2.5 * 274877906944.0);
  CHECK(bwd_flops(32, 16, 1024, 1024, 128, true) == 2.5 * 137438953472.0);
  // its derived throughputs: 0.20 ms -> 1374.39 / 687.19 TFLOP/s
  CHECK(tflops(fwd_flops(32, 16, 1024, 1024, 128, false), 0.20) == doctest::Approx(1374.39).epsilon(1e-5));
  CHECK(tflops(fwd_flops(32, 16, 1024, 1024, 128, true), 0.20) == doctest::Approx(687.19).epsilon(1e-5));
  CHECK(tflops(bwd_flops(32, 16, 1024, 1024, 128, false), 0.45) == doctest::Approx(1527.10).epsilon(1e-5));
}

TEST_CASE("exact causal valid pairs, bottom-right aligned, equal the reference's mask") {
  CHECK(valid_pairs(1024, 1024, true) == 1024 * 1025 / 2);
  CHECK(valid_pairs(1024, 1024, false) == 1024 * 1024);
  CHECK(valid_pairs(1, 1, true) == 1);
  CHECK(valid_pairs(1, 239, true) == 239);   // the one query sees every key
  CHECK(valid_pairs(239, 1, true) == 1);     // only the last query sees the one key
  CHECK(valid_pairs(5, 3, true) == 6);       // rows 0,1 masked; 1 + 2 + 3
  CHECK(valid_pairs(3, 5, true) == 3 + 4 + 5);
  CHECK(valid_pairs(0, 5, true) == 0);
  for (int64_t sq : {1, 2, 3, 17, 64, 113, 239})
    for (int64_t sk : {1, 2, 5, 17, 64, 203, 239}) {
      ref::Problem p;
      p.seqlen_q = sq;
      p.seqlen_k = sk;
      p.causal = true;
      CHECK_MESSAGE(valid_pairs(sq, sk, true) == p.valid_pairs(), "sq=" << sq << " sk=" << sk);
    }
  // useful numerator uses the exact count; the paper numerator the half
  CHECK(fwd_flops_useful(2, 3, 113, 203, 64, true) == 4.0 * 2 * 3 * valid_pairs(113, 203, true) * 64);
  CHECK(fwd_flops_useful(1, 1, 512, 512, 64, true) > fwd_flops(1, 1, 512, 512, 64, true));  // S(S+1)/2 > S^2/2
}

TEST_CASE("timing statistics") {
  const Stats s = summarize({5, 1, 4, 2, 3});
  CHECK(s.n == 5);
  CHECK(s.min == 1);
  CHECK(s.max == 5);
  CHECK(s.median == 3);
  CHECK(s.p10 == doctest::Approx(1.4));
  CHECK(s.p90 == doctest::Approx(4.6));
  CHECK(s.mean == 3);
  CHECK(summarize({2, 4}).median == 3);
  CHECK(summarize({}).n == 0);
}

TEST_CASE("fa3 grid: hidden 2048, 16k tokens, 36 forward points") {
  const auto g = fa3_grid();
  CHECK(g.size() == 36);
  for (const auto& s : g) {
    CHECK(s.heads_q * s.head_dim == 2048);
    CHECK(s.batch * s.seqlen_q == 16384);
    CHECK(s.seqlen_q == s.seqlen_k);
  }
  CHECK(g.front().seqlen_q == 512);
  CHECK(g.back().seqlen_q == 16384);
  CHECK(g.back().causal);
}

TEST_CASE("json writer escapes and the reader parses it back") {
  const std::string nasty = "a\"b\\c\nd\te\x01 f/\xc3\xa9";
  json::Writer w;
  w.begin_object().kv("s", nasty).kv("x", 1.5).kv("n", int64_t(-7)).kv("inf", INFINITY);
  w.key("arr").begin_array().value(1).value(true).null().begin_object().end_object().end_array();
  w.key("empty").begin_array().end_array();
  w.end_object();
  CHECK(w.complete());
  json::Value v;
  std::string err;
  REQUIRE_MESSAGE(json::parse(w.str(), &v, &err), err << "\n" << w.str());
  CHECK(v.str_or("s", "") == nasty);
  CHECK(v.num_or("x", 0) == 1.5);
  CHECK(v.num_or("n", 0) == -7);
  CHECK(v.get("inf")->kind == json::Value::kNull);  // JSON has no inf
  CHECK(v.get("arr")->arr.size() == 4);
  CHECK(v.get("empty")->arr.empty());
  CHECK(json::number(0.1) == "0.1");
  CHECK(std::stod(json::number(1.0 / 3)) == 1.0 / 3);
  // the reader rejects broken documents
  for (const char* bad : {"{", "[1,]", "{\"a\" 1}", "\"abc", "{} x", "[01]", "nul", "{\"a\":1,}"})
    CHECK_MESSAGE(!json::parse(bad, &v, &err), bad);
  CHECK(json::parse(" {\"a\": [1, 2.5e3, -0.5, \"\\u00e9\\ud83d\\ude00\"]} ", &v, &err));
  CHECK(v.get("a")->arr[3].str == "\xc3\xa9\xf0\x9f\x98\x80");
}

TEST_CASE("manifest is well-formed and carries meta and per-row keys") {
  Meta m;
  m.timestamp = "2026-01-01T00:00:00Z";
  m.gpu_name = "NVIDIA H200 \"test\"";
  m.sm_count = 132;
  m.kernels.push_back({"fa3_fwd_sm90_d128", "0123456789abcdef", 168, 200000, 384});
  Row r;
  r.shape.batch = 2;
  r.shape.seqlen_q = r.shape.seqlen_k = 8192;
  r.shape.heads_q = r.shape.heads_kv = 16;
  r.shape.causal = true;
  r.ms = summarize({1, 2, 3});
  r.flops = fwd_flops(2, 16, 8192, 8192, 128, true);
  r.tflops = tflops(r.flops, r.ms.median);
  r.err_o_cpu = 1e-3;
  r.kernel_symbol = "fa3_fwd_sm90_bf16_d128_n128";
  r.schedule = "persistent";
  r.ctas = 132;
  r.tiles = 2 * 16 * 64;
  m.kernel_requested = "fa3_fwd_sm90_bf16_d128_n128";
  m.schedule_requested = "persistent";
  Row bad = r;
  bad.status = "FLASHPTX_ERR_UNSUPPORTED_DEVICE: not sm_90";
  const std::string text = manifest_json(m, {r, bad});
  json::Value v;
  std::string err;
  REQUIRE_MESSAGE(json::parse(text, &v, &err), err);
  const json::Value* meta = v.get("meta");
  REQUIRE(meta);
  CHECK(meta->get("device")->str_or("name", "") == m.gpu_name);
  CHECK(meta->get("device")->num_or("sm_count", 0) == 132);
  CHECK(meta->get("source")->get("git_commit"));
  CHECK(meta->get("toolchain")->get("nvcc"));
  CHECK(meta->get("kernels")->arr[0].str_or("sass_hash_fnv1a64", "") == "0123456789abcdef");
  const json::Value* rows = v.get("rows");
  REQUIRE(rows);
  REQUIRE(rows->arr.size() == 2);
  const json::Value& r0 = rows->arr[0];
  for (const char* k : {"impl", "direction", "hdim", "seqlen", "batch", "heads", "causal", "tflops", "ms",
                        "time_ms", "flops", "valid_pairs_per_head", "dtype", "mask", "check"})
    CHECK_MESSAGE(r0.get(k) != nullptr, k);
  CHECK(r0.num_or("ms", 0) == 2);
  // what launched: kernel, schedule, grid and tiles (flashptx::fwd_kernel_info for the run's options)
  CHECK(r0.str_or("kernel", "") == "fa3_fwd_sm90_bf16_d128_n128");
  CHECK(r0.str_or("schedule", "") == "persistent");
  CHECK(r0.num_or("ctas", 0) == 132);
  CHECK(r0.num_or("tiles", 0) == 2048);
  // what was asked for (`flashptx bench --kernel --schedule`); the defaults are null and "auto"
  REQUIRE(meta->get("variant"));
  CHECK(meta->get("variant")->str_or("kernel", "") == "fa3_fwd_sm90_bf16_d128_n128");
  CHECK(meta->get("variant")->str_or("schedule", "") == "persistent");
  {
    json::Value d;
    REQUIRE(json::parse(manifest_json(Meta(), {}), &d, &err));
    CHECK(d.get("meta")->get("variant")->get("kernel")->kind == json::Value::kNull);
    CHECK(d.get("meta")->get("variant")->str_or("schedule", "") == "auto");
  }
  CHECK(r0.get("check")->num_or("err_o_vs_fp64", -1) == 1e-3);
  CHECK(r0.get("check")->get("err_o_vs_gpu_ref")->kind == json::Value::kNull);  // not measured
  CHECK(rows->arr[1].str_or("status", "") == bad.status);
}

TEST_CASE("fnv1a64") {
  CHECK(fnv1a64_hex("") == "cbf29ce484222325");
  CHECK(fnv1a64_hex("a") == "af63dc4c8601ec8c");
}

}  // TEST_SUITE
