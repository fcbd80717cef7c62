// The host side of `flashptx bench` that needs no GPU: timing statistics, the named grids, and the
// JSON manifest. The CUDA part is tools/flashptx/cmd_bench.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace flashptx::bench {

// Distribution of repeated timings (milliseconds). Percentiles by linear interpolation between
// order statistics (p in [0, 100]).
struct Stats {
  int n = 0;
  double min = 0, p10 = 0, median = 0, p90 = 0, max = 0, mean = 0;
};
double percentile(std::vector<double> sorted_or_not, double p);
Stats summarize(const std::vector<double>& ms);

struct Shape {
  int64_t batch = 1, seqlen_q = 1, seqlen_k = 1, heads_q = 1, heads_kv = 1, head_dim = 128;
  std::string dtype = "bf16";
  bool causal = false;
  std::string label() const;  // "b8 sq2048 sk2048 h16/16 d128 bf16 causal"
};

// The FA3 paper's forward grid: hidden 2048 (heads = 2048 / hdim), batch * seqlen = 16384,
// seqlen 512..16k, head dims 64/128/256, non-causal and causal. Order: hdim, causal, seqlen.
std::vector<Shape> fa3_grid(const std::string& dtype = "bf16");

// What a run measured about one shape.
struct Row {
  Shape shape;
  std::string direction = "fwd";
  std::string status = "ok";  // "ok" or the error
  Stats ms;
  double flops = 0;           // paper numerator (causal halved)
  double flops_dense = 0;
  double flops_useful = 0;    // exact valid pairs
  int64_t valid_pairs = 0;    // per (batch, head)
  double tflops = 0;          // flops / median time
  double tflops_useful = 0;
  int buffer_sets = 0;        // input sets rotated through
  // Error checks (negative: not run).
  int64_t cpu_rows_checked = -1;
  double err_o_cpu = -1, err_lse_cpu = -1;     // max |out - fp64 ref| on the checked rows
  double tol_o_cpu = -1, tol_lse_cpu = -1;     // 2 * max |same_dtype_ref - ref| + 1e-5 on those rows
  double err_o_gpuref = -1;                    // max |out - gpu fp32 ref| over every element
  double err_lse_gpuref = -1;
  bool check_passed = true;
  // kernel facts (flashptx::fwd_kernel_info for the run's options: what launched)
  std::string kernel_symbol;
  std::string schedule;       // "one-per-tile" or "persistent" (the plan's, after "auto")
  int registers = 0, shared_bytes = 0, threads = 0, ctas = 0;  // ctas: the grid
  int64_t tiles = 0;          // work tiles the grid covers

};

struct Meta {
  std::string tool = "flashptx bench";
  std::string timestamp;        // ISO 8601 UTC
  std::string gpu_name = "unknown";
  int sm_count = 0, cc_major = 0, cc_minor = 0;
  int clock_khz = 0, mem_clock_khz = 0, l2_bytes = 0;
  int driver_version = 0, runtime_version = 0;
  std::string nvcc_version = "unknown", ptxas_version = "unknown";
  std::string git_commit = "unknown";
  bool git_dirty = false;
  std::string command_line;
  std::string timing_protocol;  // prose: what was timed
  int warmup = 0;
  // the variant options of the run (`flashptx bench --kernel --schedule`): "" / "auto" by default
  std::string kernel_requested, schedule_requested = "auto";
  // one kernel record per distinct symbol seen in the rows
  struct Kernel { std::string symbol, sass_hash = "unknown"; int registers = 0, shared_bytes = 0, threads = 0; };
  std::vector<Kernel> kernels;
};

std::string manifest_json(const Meta& meta, const std::vector<Row>& rows);

// FNV-1a 64 of a byte string, as 16 lowercase hex digits.
std::string fnv1a64_hex(const std::string& bytes);

}  // namespace flashptx::bench
