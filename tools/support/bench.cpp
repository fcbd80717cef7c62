// Host side of `flashptx bench`: see tools/support/bench.h.
#include "tools/support/bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tools/support/json.h"

namespace flashptx::bench {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(v.size() - 1, lo + 1);
  const double f = pos - static_cast<double>(lo);
  return v[lo] + f * (v[hi] - v[lo]);
}

Stats summarize(const std::vector<double>& ms) {
  Stats s;
  s.n = static_cast<int>(ms.size());
  if (ms.empty()) return s;
  std::vector<double> v = ms;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.p10 = percentile(v, 10);
  s.median = percentile(v, 50);
  s.p90 = percentile(v, 90);
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

std::string Shape::label() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "b%lld sq%lld sk%lld h%lld/%lld d%lld %s %s",
                static_cast<long long>(batch), static_cast<long long>(seqlen_q),
                static_cast<long long>(seqlen_k), static_cast<long long>(heads_q),
                static_cast<long long>(heads_kv), static_cast<long long>(head_dim), dtype.c_str(),
                causal ? "causal" : "full");
  return buf;
}

std::vector<Shape> fa3_grid(const std::string& dtype) {
  std::vector<Shape> g;
  for (int64_t d : {64, 128, 256})
    for (bool causal : {false, true})
      for (int64_t s : {512, 1024, 2048, 4096, 8192, 16384}) {
        Shape x;
        x.batch = 16384 / s;
        x.seqlen_q = x.seqlen_k = s;
        x.heads_q = x.heads_kv = 2048 / d;
        x.head_dim = d;
        x.dtype = dtype;
        x.causal = causal;
        g.push_back(x);
      }
  return g;
}

std::string fnv1a64_hex(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {
void write_stats(json::Writer& w, const Stats& s) {
  w.begin_object();
  w.kv("n", s.n).kv("min", s.min).kv("p10", s.p10).kv("median", s.median);
  w.kv("p90", s.p90).kv("max", s.max).kv("mean", s.mean);
  w.end_object();
}
// Negative means "not measured": written as null.
void opt(json::Writer& w, const char* k, double x) {
  w.key(k);
  if (x < 0) w.null(); else w.value(x);
}
}  // namespace

std::string manifest_json(const Meta& m, const std::vector<Row>& rows) {
  json::Writer w;
  w.begin_object();
  w.key("meta").begin_object();
  w.kv("tool", m.tool).kv("timestamp", m.timestamp).kv("command_line", m.command_line);
  w.key("device").begin_object();
  w.kv("name", m.gpu_name).kv("sm_count", m.sm_count);
  w.kv("compute_capability", std::to_string(m.cc_major) + "." + std::to_string(m.cc_minor));
  w.kv("clock_khz", m.clock_khz).kv("mem_clock_khz", m.mem_clock_khz).kv("l2_bytes", m.l2_bytes);
  w.kv("driver_version", m.driver_version).kv("runtime_version", m.runtime_version);
  w.end_object();
  w.key("toolchain").begin_object();
  w.kv("nvcc", m.nvcc_version).kv("ptxas", m.ptxas_version);
  w.end_object();
  w.key("source").begin_object();
  w.kv("git_commit", m.git_commit).kv("git_dirty", m.git_dirty);
  w.end_object();
  w.kv("timing_protocol", m.timing_protocol).kv("warmup", m.warmup);
  w.key("variant").begin_object();
  w.key("kernel");
  if (m.kernel_requested.empty()) w.null(); else w.value(m.kernel_requested);
  w.kv("schedule", m.schedule_requested);
  w.end_object();
  w.key("flop_numerators").begin_object();
  w.kv("fwd", "4*B*H*Sq*Sk*d, halved when causal (the papers' convention)");
  w.kv("fwd_useful", "4*B*H*valid_pairs*d, valid_pairs exact for the bottom-right causal mask");
  w.kv("bwd", "2.5 * fwd");
  w.end_object();
  w.key("kernels").begin_array();
  for (const auto& k : m.kernels) {
    w.begin_object();
    w.kv("symbol", k.symbol).kv("registers", k.registers).kv("shared_bytes", k.shared_bytes);
    w.kv("threads", k.threads).kv("sass_hash_fnv1a64", k.sass_hash);
    w.end_object();
  }
  w.end_array();
  w.end_object();  // meta

  w.key("rows").begin_array();
  for (const auto& r : rows) {
    const Shape& s = r.shape;
    w.begin_object();
    w.kv("impl", "flashptx").kv("direction", r.direction).kv("status", r.status);
    w.kv("batch", s.batch).kv("seqlen_q", s.seqlen_q).kv("seqlen_k", s.seqlen_k);
    w.kv("seqlen", s.seqlen_q).kv("heads", s.heads_q).kv("heads_kv", s.heads_kv).kv("hdim", s.head_dim);
    w.kv("dtype", s.dtype).kv("causal", s.causal).kv("mask", s.causal ? "causal_bottom_right" : "none");
    w.kv("kernel", r.kernel_symbol).kv("registers", r.registers).kv("shared_bytes", r.shared_bytes);
    w.kv("schedule", r.schedule).kv("threads", r.threads).kv("ctas", r.ctas).kv("tiles", r.tiles);
    w.kv("buffer_sets", r.buffer_sets);
    w.key("time_ms");
    write_stats(w, r.ms);
    w.kv("ms", r.ms.median);
    w.kv("flops", r.flops).kv("flops_dense", r.flops_dense).kv("flops_useful", r.flops_useful);
    w.kv("valid_pairs_per_head", r.valid_pairs);
    w.kv("tflops", r.tflops).kv("tflops_useful", r.tflops_useful);
    w.key("check").begin_object();
    w.kv("cpu_fp64_rows", r.cpu_rows_checked);
    opt(w, "err_o_vs_fp64", r.err_o_cpu);
    opt(w, "tol_o", r.tol_o_cpu);
    opt(w, "err_lse_vs_fp64", r.err_lse_cpu);
    opt(w, "tol_lse", r.tol_lse_cpu);
    opt(w, "err_o_vs_gpu_ref", r.err_o_gpuref);
    opt(w, "err_lse_vs_gpu_ref", r.err_lse_gpuref);
    w.kv("passed", r.check_passed);
    w.end_object();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace flashptx::bench
