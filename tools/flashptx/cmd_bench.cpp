// `flashptx bench`: times the forward on one shape or a named grid and writes a JSON manifest.
//
// Every option is checked first (parse_bench_args, no CUDA call): types and ranges, the shape as
// the library validates it, and --kernel / --schedule against the kernel table and the launch plan
// (plan_fwd on a nominal sm_90 device: no CUDA call). Only then is the GPU looked for.
//
// What is timed: the kernel launched by flashptx::fwd (src/internal.h: the C ABI's path, with the
// variant options --kernel and --schedule; their defaults are exactly flashptx_fwd), its host-side
// validation included, between two CUDA events recorded on the stream around each call; launches
// go back to back, so the time is the GPU time of one call, not end-to-end latency. Each
// repetition reads a different input set (sets rotate, and together exceed ~3x the L2 size), so no
// rep finds its inputs in L2: this is the cold-L2 number, as in the FA3 paper's protocol; a hot-L2
// number would be higher for small shapes. Warm-up launches come first and are not counted. We
// report the median and the spread (min, p10, p90, max); TFLOP/s uses the median and the papers'
// numerator (causal halved; docs/PROTOCOLS.md, "Evidence"), with the exact valid-pair count
// and the "useful" TFLOP/s beside it.
// The manifest records, per row, the kernel, the schedule, the grid (CTAs) and the work tiles that
// flashptx::fwd_kernel_info reports for the same options.
// What it does not prove: that another process or clock state would give the same numbers (the
// manifest records clocks, driver, toolchain and commit so that runs can be compared).
//
// Correctness beside the timing: the output of input set 0 is compared with the CPU fp64
// reference on a subset of rows (with FlashAttention's tolerance from the same-dtype reference)
// and, over every element, with the simple GPU fp32 reference (tools/support/gpu_reference.h).
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "src/internal.h"
#include "src/kernels.h"
#include "src/plan.h"
#include "src/validate.h"
#include "tools/flashptx/commands.h"
#include "tools/flashptx/device.h"
#include "tools/support/bench.h"
#include "tools/support/bench_flops.h"
#include "tools/support/gpu_reference.h"
#include "tools/support/reference.h"

#ifndef FLASHPTX_ROOT
#define FLASHPTX_ROOT "."
#endif

using namespace flashptx;
using namespace flashptx::bench;

namespace {

std::string utc_now(const char* fmt) {
  char buf[64];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, fmt, &tm);
  return buf;
}

// First line of a command's output containing `needle` (or the first line), "unknown" on failure.
std::string run_capture(const std::string& cmd, const char* needle) {
  FILE* f = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!f) return "unknown";
  std::string first, hit;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    std::string s(line);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    if (first.empty()) first = s;
    if (hit.empty() && needle && s.find(needle) != std::string::npos) hit = s;
  }
  const int rc = pclose(f);
  if (rc != 0 && first.empty()) return "unknown";
  return !hit.empty() ? hit : (first.empty() ? "unknown" : first);
}

std::string root_dir() {
  const char* env = std::getenv("FLASHPTX_ROOT");
  return env && *env ? env : FLASHPTX_ROOT;
}

std::string cuda_bin(const char* tool) {
  const char* home = std::getenv("CUDA_HOME");
  const std::string dir = home && *home ? std::string(home) + "/bin/" : "/usr/local/cuda/bin/";
  return dir + tool;
}

std::string sass_hash(const std::string& symbol) {
  std::ifstream f(root_dir() + "/sass_golden/sm_90a/" + symbol + ".sass", std::ios::binary);
  if (!f) return "unknown";
  std::stringstream ss;
  ss << f.rdbuf();
  return fnv1a64_hex(ss.str());
}

void fill_meta(Meta* m, const std::string& cmdline, int warmup) {
  m->timestamp = utc_now("%Y-%m-%dT%H:%M:%SZ");
  m->command_line = cmdline;
  m->warmup = warmup;
  int dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, dev) == cudaSuccess) m->gpu_name = prop.name;
  cudaDeviceGetAttribute(&m->sm_count, cudaDevAttrMultiProcessorCount, dev);
  cudaDeviceGetAttribute(&m->cc_major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&m->cc_minor, cudaDevAttrComputeCapabilityMinor, dev);
  cudaDeviceGetAttribute(&m->clock_khz, cudaDevAttrClockRate, dev);
  cudaDeviceGetAttribute(&m->mem_clock_khz, cudaDevAttrMemoryClockRate, dev);
  cudaDeviceGetAttribute(&m->l2_bytes, cudaDevAttrL2CacheSize, dev);
  cudaDriverGetVersion(&m->driver_version);
  cudaRuntimeGetVersion(&m->runtime_version);
  m->nvcc_version = run_capture(cuda_bin("nvcc") + " --version", "release");
  m->ptxas_version = run_capture(cuda_bin("ptxas") + " --version", "release");
  const std::string git = "git -C '" + root_dir() + "' ";
  // Binaries built on one machine and run on another (tools/gpu_session.sh): the commit they were
  // built from, passed in FLASHPTX_GIT_COMMIT, wins over the tree they happen to run beside (the GPU
  // machine's copy of the tree may carry another HEAD, or none).
  const char* built_from = std::getenv("FLASHPTX_GIT_COMMIT");
  if (built_from != nullptr && *built_from != '\0') {
    m->git_commit = built_from;
    m->git_dirty = false;
  } else {
    const std::string head = run_capture(git + "rev-parse HEAD", nullptr);
    m->git_commit = head.size() == 40 ? head : "unknown";
    m->git_dirty = m->git_commit != "unknown" &&
                   run_capture(git + "status --porcelain --untracked-files=no", nullptr) != "unknown";
  }
  m->timing_protocol =
      "CUDA events around each flashptx_fwd call on one stream, launches back to back; inputs "
      "rotated over buffer sets totalling > 3x L2 (cold L2); warm-up launches excluded; median "
      "and spread of the repetitions";
}

#define CK(call)                                                                             \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      row.status = std::string(#call) + ": " + cudaGetErrorString(e_);                       \
      return;                                                                                \
    }                                                                                        \
  } while (0)

// The row's kernel facts from the library's answer for the launch (flashptx_kernel_info).
void take_kernel_info(const flashptx_kernel_info& info, Row* row) {
  row->kernel_symbol = info.symbol ? info.symbol : "";
  row->registers = info.registers;
  row->shared_bytes = info.shared_bytes;
  row->threads = info.threads;
  row->ctas = info.ctas;
  row->tiles = info.tiles;
  row->schedule = info.schedule ? info.schedule : "";
}

struct Set { void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr; };

void free_sets(std::vector<Set>& sets) {
  for (auto& s : sets) { cudaFree(s.q); cudaFree(s.k); cudaFree(s.v); cudaFree(s.o); }
  sets.clear();
}

// Times `call(i)` (launch on the legacy stream with input set i % nsets): `warmup` untimed calls,
// then CUDA events around each of `reps` calls (reps <= 0: enough for min_ms, at least 30). Fills
// row.ms; false with row.status on a CUDA error.
template <class Call>
bool time_calls(const cli::BenchArgs& opt, int nsets, Row& row, Call call) {
  auto ck = [&](cudaError_t e, const char* what) {
    if (e != cudaSuccess) row.status = std::string(what) + ": " + cudaGetErrorString(e);
    return e == cudaSuccess;
  };
  const int warmup = static_cast<int>(std::max<int64_t>(1, opt.warmup));
  cudaEvent_t w0, w1;
  if (!ck(cudaEventCreate(&w0), "cudaEventCreate") || !ck(cudaEventCreate(&w1), "cudaEventCreate")) return false;
  cudaEventRecord(w0, 0);
  for (int r = 0; r < warmup; ++r) call(r % nsets);
  cudaEventRecord(w1, 0);
  float warm_ms = 0;
  const bool warm_ok = ck(cudaEventSynchronize(w1), "warm-up") && ck(cudaEventElapsedTime(&warm_ms, w0, w1), "timing");
  cudaEventDestroy(w0);
  cudaEventDestroy(w1);
  if (!warm_ok) return false;
  int reps = static_cast<int>(opt.reps);
  if (reps <= 0) {
    const double per = std::max(1e-3, static_cast<double>(warm_ms) / warmup);
    reps = std::clamp(static_cast<int>(std::ceil(opt.min_ms / per)), 30, 2000);
  }
  std::vector<cudaEvent_t> ev(2 * reps);
  for (auto& e : ev)
    if (!ck(cudaEventCreate(&e), "cudaEventCreate")) return false;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(ev[2 * r], 0);
    call(r % nsets);
    cudaEventRecord(ev[2 * r + 1], 0);
  }
  bool ok = ck(cudaDeviceSynchronize(), "timed calls");
  std::vector<double> ms(reps);
  for (int r = 0; ok && r < reps; ++r) {
    float t = 0;
    ok = ck(cudaEventElapsedTime(&t, ev[2 * r], ev[2 * r + 1]), "timing");
    ms[r] = t;
  }
  for (auto& e : ev) cudaEventDestroy(e);
  if (ok) row.ms = summarize(ms);
  return ok;
}

// Fills `row` for one shape: timing, numerators and the error checks.
void bench_shape(const cli::BenchArgs& opt, const FwdOptions& fo, const Meta& meta, Row& row) {
  const Shape& s = row.shape;
  const flashptx_dtype dt = s.dtype == "fp16" ? FLASHPTX_FP16 : FLASHPTX_BF16;
  const ref::Elem elem = dt == FLASHPTX_FP16 ? ref::Elem::kFP16 : ref::Elem::kBF16;
  const Round round = dt == FLASHPTX_FP16 ? Round::kFP16 : Round::kBF16;
  const int64_t nq = s.batch * s.seqlen_q * s.heads_q * s.head_dim;
  const int64_t nkv = s.batch * s.seqlen_k * s.heads_kv * s.head_dim;
  const int64_t nlse = s.batch * s.heads_q * s.seqlen_q;

  row.flops = fwd_flops(s.batch, s.heads_q, s.seqlen_q, s.seqlen_k, s.head_dim, s.causal);
  row.flops_dense = fwd_flops_dense(s.batch, s.heads_q, s.seqlen_q, s.seqlen_k, s.head_dim);
  row.flops_useful = fwd_flops_useful(s.batch, s.heads_q, s.seqlen_q, s.seqlen_k, s.head_dim, s.causal);
  row.valid_pairs = valid_pairs(s.seqlen_q, s.seqlen_k, s.causal);

  flashptx_fwd_params p;
  flashptx_fwd_params_contiguous(&p, nullptr, nullptr, nullptr, nullptr, nullptr, s.batch, s.seqlen_q,
                                 s.seqlen_k, s.heads_q, s.heads_kv, s.head_dim, dt, s.causal ? 1 : 0);
  // Sizes and sets: every set has its own Q, K, V and O.
  const double set_bytes = 2.0 * (2 * nq + 2 * nkv);
  const double l2 = meta.l2_bytes > 0 ? meta.l2_bytes : 60e6;
  int nsets = static_cast<int>(std::ceil(3.0 * l2 / set_bytes));
  nsets = std::clamp(nsets, 2, 64);
  nsets = std::min<int>(nsets, static_cast<int>(opt.mem_cap_gb * 1e9 / set_bytes));
  if (nsets < 1) { row.status = "shape exceeds --mem-cap-gb"; return; }
  row.buffer_sets = nsets;

  std::vector<Set> sets(nsets);
  struct Guard { std::vector<Set>& s; ~Guard() { free_sets(s); } } guard{sets};
  float* lse = nullptr;
  struct LseGuard { float*& p; ~LseGuard() { cudaFree(p); } } lse_guard{lse};
  for (int i = 0; i < nsets; ++i) {
    CK(cudaMalloc(&sets[i].q, 2 * nq));
    CK(cudaMalloc(&sets[i].k, 2 * nkv));
    CK(cudaMalloc(&sets[i].v, 2 * nkv));
    CK(cudaMalloc(&sets[i].o, 2 * nq));
    CK(gpuref::fill_random(sets[i].q, nq, dt, 1000 + 3 * i, 1.0f, 0));
    CK(gpuref::fill_random(sets[i].k, nkv, dt, 1001 + 3 * i, 1.0f, 0));
    CK(gpuref::fill_random(sets[i].v, nkv, dt, 1002 + 3 * i, 1.0f, 0));
  }
  CK(cudaMalloc(&lse, sizeof(float) * std::max<int64_t>(1, nlse)));
  // The dynamic schedule's tile counter (include/flashptx.h, tile_counter): zeroed once; every call
  // leaves it zero, and the calls here run one after another on one stream.
  uint32_t* counter = nullptr;
  struct CounterGuard { uint32_t*& p; ~CounterGuard() { cudaFree(p); } } counter_guard{counter};
  CK(cudaMalloc(&counter, 8));
  CK(cudaMemset(counter, 0, 8));
  p.tile_counter = counter;
  CK(cudaDeviceSynchronize());

  auto params_for = [&](int i, float* l) {
    flashptx_fwd_params q = p;
    q.q = sets[i].q; q.k = sets[i].k; q.v = sets[i].v; q.o = sets[i].o; q.lse = l;
    return q;
  };
  {
    const flashptx_fwd_params p0 = params_for(0, lse);
    flashptx_kernel_info info{};
    if (flashptx::fwd_kernel_info(&p0, fo, &info) == FLASHPTX_OK) take_kernel_info(info, &row);
    if (flashptx::fwd(&p0, fo, 0) != FLASHPTX_OK) {
      row.status = flashptx_last_error();
      return;
    }
    CK(cudaDeviceSynchronize());
  }

  // Warm-up, then the timed calls.
  if (!time_calls(opt, nsets, row, [&](int i) {
        const flashptx_fwd_params pr = params_for(i, nullptr);
        flashptx::fwd(&pr, fo, 0);
      }))
    return;
  row.tflops = tflops(row.flops, row.ms.median);
  row.tflops_useful = tflops(row.flops_useful, row.ms.median);

  // ---- correctness of set 0 (rerun with LSE, so O and LSE are from the same call) ----
  if (opt.check_rows <= 0 && !opt.gpu_ref) return;
  const flashptx_fwd_params p0 = params_for(0, lse);
  if (flashptx::fwd(&p0, fo, 0) != FLASHPTX_OK) { row.status = std::string("check run: ") + flashptx_last_error(); return; }
  CK(cudaDeviceSynchronize());
  std::vector<uint16_t> hq(nq), hk(nkv), hv(nkv), ho(nq);
  std::vector<float> hl(nlse);
  CK(cudaMemcpy(hq.data(), sets[0].q, 2 * nq, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hk.data(), sets[0].k, 2 * nkv, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hv.data(), sets[0].v, 2 * nkv, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(ho.data(), sets[0].o, 2 * nq, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hl.data(), lse, sizeof(float) * nlse, cudaMemcpyDeviceToHost));

  ref::Problem rp = ref::problem(s.batch, s.seqlen_q, s.seqlen_k, s.heads_q, s.heads_kv, s.head_dim, s.causal);
  const ref::TensorView Q = ref::contiguous_q(hq.data(), elem, rp), K = ref::contiguous_kv(hk.data(), elem, rp),
                        V = ref::contiguous_kv(hv.data(), elem, rp), O = ref::contiguous_q(ho.data(), elem, rp);
  auto lse_err = [](double x, double r) {
    if (std::isinf(x) && std::isinf(r) && (x > 0) == (r > 0)) return 0.0;
    const double e = std::fabs(x - r);
    return std::isnan(e) ? INFINITY : e;
  };
  if (opt.check_rows > 0) {
    // Rows spread over (batch, query row, head), always including the first and the last query
    // row (the last sees every key; with a causal mask the first sees the fewest).
    const int64_t total = s.batch * s.seqlen_q * s.heads_q;
    const int64_t n = std::min<int64_t>(opt.check_rows, total);
    std::vector<double> r64(s.head_dim), rdt(s.head_dim);
    double eo = 0, so = 0, el = 0, sl = 0;
    for (int64_t c = 0; c < n; ++c) {
      const int64_t idx = n == 1 ? total - 1 : (c * (total - 1)) / (n - 1);
      const int64_t h = idx % s.heads_q, i = (idx / s.heads_q) % s.seqlen_q, b = idx / (s.heads_q * s.seqlen_q);
      const double l64 = ref::forward_row(rp, Q, K, V, b, i, h, r64.data());
      const double ldt = ref::forward_row(rp, Q, K, V, b, i, h, rdt.data(), round);
      for (int64_t d = 0; d < s.head_dim; ++d) {
        eo = std::max(eo, lse_err(O.at(b, i, h, d), r64[d]));
        so = std::max(so, std::fabs(rdt[d] - r64[d]));
      }
      el = std::max(el, lse_err(hl[(b * s.heads_q + h) * s.seqlen_q + i], l64));
      sl = std::max(sl, lse_err(ldt, l64));
    }
    row.cpu_rows_checked = n;
    row.err_o_cpu = eo;
    row.err_lse_cpu = el;
    row.tol_o_cpu = 2 * so + 1e-5;
    row.tol_lse_cpu = 2 * sl + 1e-5;
    row.check_passed = eo <= row.tol_o_cpu && el <= row.tol_lse_cpu;
  }
  if (opt.gpu_ref) {
    float *ro = nullptr, *rl = nullptr;
    struct F { float*& a; float*& b; ~F() { cudaFree(a); cudaFree(b); } } fg{ro, rl};
    CK(cudaMalloc(&ro, sizeof(float) * nq));
    CK(cudaMalloc(&rl, sizeof(float) * std::max<int64_t>(1, nlse)));
    CK(gpuref::attention_fwd(p0, ro, rl, 0));
    CK(cudaDeviceSynchronize());
    std::vector<float> gro(nq), grl(nlse);
    CK(cudaMemcpy(gro.data(), ro, sizeof(float) * nq, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(grl.data(), rl, sizeof(float) * nlse, cudaMemcpyDeviceToHost));
    double eo = 0, el = 0;
    for (int64_t x = 0; x < nq; ++x) {
      const double got = dt == FLASHPTX_FP16 ? fp16_to_float(ho[x]) : bf16_to_float(ho[x]);
      eo = std::max(eo, lse_err(got, gro[x]));
    }
    for (int64_t x = 0; x < nlse; ++x) el = std::max(el, lse_err(hl[x], grl[x]));
    row.err_o_gpuref = eo;
    row.err_lse_gpuref = el;
  }
}

// The device the options are checked against before any CUDA call: the launch plan needs only the
// compute capability and the SM count (the H200's 132; the real count decides the grid later).
const Device kNominalSm90{0, 90, 132};

std::vector<std::string> forward_kernel_names() {
  std::vector<std::string> names;
  for (const KernelEntry& k : kernel_table())
    if (k.family == Family::kFa3Fwd) names.push_back(k.name);
  return names;
}

// One shape checked as the library will check it (validate_fwd, then the launch plan for the
// options), with stand-in pointers: no CUDA call. *err names the shape and the problem.
bool check_shape(const Shape& s, const FwdOptions& fo, std::string* err) {
  alignas(16) static unsigned char stand_in[4][16];
  flashptx_fwd_params p;
  flashptx_fwd_params_contiguous(&p, stand_in[0], stand_in[1], stand_in[2], stand_in[3], nullptr, s.batch, s.seqlen_q,
                                 s.seqlen_k, s.heads_q, s.heads_kv, s.head_dim,
                                 s.dtype == "fp16" ? FLASHPTX_FP16 : FLASHPTX_BF16, s.causal ? 1 : 0);
  std::string msg;
  FwdPlan plan;
  if (validate_fwd(p, &msg) != FLASHPTX_OK || plan_fwd(p, fo, kNominalSm90, &plan, &msg) != FLASHPTX_OK) {
    *err = s.label() + ": " + msg;
    return false;
  }
  return true;
}

// The same for the backward (validate_bwd_shape, then plan_bwd).
bool check_shape_bwd(const Shape& s, std::string* err) {
  flashptx_bwd_params p;
  flashptx_bwd_params_contiguous(&p, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                 s.batch, s.seqlen_q, s.seqlen_k, s.heads_q, s.heads_kv, s.head_dim,
                                 s.dtype == "fp16" ? FLASHPTX_FP16 : FLASHPTX_BF16, s.causal ? 1 : 0);
  std::string msg;
  BwdPlan plan;
  if (validate_bwd_shape(p, &msg) != FLASHPTX_OK || plan_bwd(p, BwdOptions{}, kNominalSm90, &plan, &msg) != FLASHPTX_OK) {
    *err = s.label() + ": backward: " + msg;
    return false;
  }
  return true;
}

FwdOptions fwd_options(const cli::BenchArgs& a) {
  FwdOptions fo;
  fo.kernel = a.kernel.empty() ? nullptr : a.kernel.c_str();
  parse_schedule(a.schedule, &fo.schedule);
  return fo;
}

}  // namespace

namespace flashptx::cli {

Parsed parse_bench_args(const std::string& command, int argc, const char* const* argv, BenchArgs* a) {
  constexpr int64_t kAny = std::numeric_limits<int64_t>::max();
  const bool run = command == "run";
  *a = BenchArgs();
  Shape one;
  one.batch = 2;
  one.seqlen_q = one.seqlen_k = 8192;
  one.heads_q = 16;
  one.head_dim = 128;
  int64_t seqlen = 8192, heads_kv = 0;
  bool no_gpu_ref = false;
  Options o(command,
            run ? "flashptx [run] [options]"
                : "flashptx bench [--grid fa3-grid | shape options] [variant options] [run options]",
            run ? "With a Hopper GPU: the flagship FA3 forward (bf16, d128, 2 x 8192 x 16 heads unless the\n"
                  "options say otherwise), its error against the fp64 reference and its TFLOP/s, written to\n"
                  "flashptx-run.json. Without one: says why, and prints the audit summary of the built kernels.\n"
                  "The options are those of `flashptx bench`."
                : "CUDA-event timing with cold L2 of the forward on one shape or a named grid, with a JSON\n"
                  "manifest (GPU, clocks, driver, toolchain, commit; per row the kernel, schedule, grid,\n"
                  "tiles, registers, shared memory, the timing distribution and the error).");
  o.group("shape (default: --batch 2 --seqlen 8192 --heads 16 --hdim 128 --dtype bf16)")
      .text("--grid", &a->grid, {"fa3-grid"},
            "a named grid of shapes instead: the FA3 paper's (hidden 2048,\n"
            "16k tokens, seqlen 512..16k, d 64/128/256, causal and not);\n"
            "--hdim, --dtype and --kernel select among its points",
            "NAME")
      .integer("--batch", &one.batch, 1, kAny, "batch size")
      .integer("--seqlen", &seqlen, 1, kAny, "query and key length")
      .integer("--seqlen-q", &one.seqlen_q, 1, kAny, "query length (instead of --seqlen)")
      .integer("--seqlen-k", &one.seqlen_k, 1, kAny, "key length (instead of --seqlen)")
      .integer("--heads", &one.heads_q, 1, 65535, "query heads")
      .integer("--heads-kv", &heads_kv, 1, 65535, "key/value heads, dividing --heads (default: --heads)")
      .integer_of("--hdim", &one.head_dim, {64, 128, 256}, "head dimension")
      .text("--dtype", &one.dtype, {"bf16", "fp16"}, "element type")
      .flag("--causal", &one.causal, "causal mask (bottom-right aligned)")
      .group("variant (default: the library's rule, exactly as flashptx_fwd)")
      .text("--kernel", &a->kernel, forward_kernel_names(),
            "one forward kernel of the kernel table (src/kernels.h):\n"
            "FA3 forward kernels; its head dim and dtype become the defaults",
            "NAME")
      .text("--schedule", &a->schedule, {"auto", "one-per-tile", "persistent"},
            "auto: the rule; one CTA per tile; or min(tiles, SMs) CTAs\n"
            "looping over tiles")
      .text("--direction", &a->direction, {"fwd", "bwd"}, "forward (default) or backward")
      .flag("--deterministic", &a->deterministic, "backward: the deterministic mode (bitwise reproducible)")
      .text("--dq-order", &a->dq_order, {"auto", "ascending", "rotated"},
            "deterministic backward: the dQ writers' order (auto: the\n"
            "plan's rule; src/protocol/writer_order.h)")
      .group("run")
      .integer("--reps", &a->reps, 0, 100000, "timed repetitions (default 0: >= 30 and >= --min-ms)")
      .real("--min-ms", &a->min_ms, 1, 1e6, "GPU time to aim for per shape (default 200)", "MS")
      .integer("--warmup", &a->warmup, 0, 10000, "untimed launches first (default 5)")
      .integer("--check-rows", &a->check_rows, 0, 1000000, "CPU fp64 reference rows per shape (default 32)")
      .flag("--no-gpu-ref", &no_gpu_ref, "skip the GPU fp32 reference check (every element)")
      .real("--mem-cap-gb", &a->mem_cap_gb, 0.01, 1e4, "cap on the rotated input sets (default 8)", "G")
      .text("--out", &a->out, {},
            run ? "the manifest (default flashptx-run.json)" : "the manifest (default bench-<UTC time>.json)",
            "FILE")
      .flag("--quiet", &a->quiet, "no progress lines on stderr");
  const Parsed p = o.parse(argc, argv);
  if (!p.run()) return p;

  a->gpu_ref = !no_gpu_ref;
  a->command_line = "flashptx " + command;
  for (int i = 0; i < argc; ++i) a->command_line += std::string(" ") + argv[i];
  if (!o.given("--seqlen-q")) one.seqlen_q = seqlen;
  if (!o.given("--seqlen-k")) one.seqlen_k = seqlen;
  one.heads_kv = heads_kv > 0 ? heads_kv : one.heads_q;
  if (one.heads_q % one.heads_kv != 0)
    return o.error("--heads " + std::to_string(one.heads_q) + " is not a multiple of --heads-kv " +
                   std::to_string(one.heads_kv));

  // A forced kernel fixes the head dim and the dtype.
  if (!a->kernel.empty()) {
    const KernelEntry& k = *kernel_by_name(a->kernel);
    const std::string kdtype = k.dtype == FLASHPTX_FP16 ? "fp16" : "bf16";
    if (o.given("--hdim") && one.head_dim != k.head_dim)
      return o.error("--kernel " + a->kernel + " runs head dim " + std::to_string(k.head_dim) + ", not --hdim " +
                     std::to_string(one.head_dim));
    if (o.given("--dtype") && one.dtype != kdtype)
      return o.error("--kernel " + a->kernel + " runs " + kdtype + ", not --dtype " + one.dtype);
    one.head_dim = k.head_dim;
    one.dtype = kdtype;
  }

  if (!a->grid.empty()) {
    for (const char* shape_opt : {"--batch", "--seqlen", "--seqlen-q", "--seqlen-k", "--heads", "--heads-kv", "--causal"})
      if (o.given(shape_opt))
        return o.error(std::string(shape_opt) + " does not combine with --grid (the grid sets the shapes; --hdim, "
                       "--dtype and --kernel select among them)");
    for (const Shape& s : fa3_grid(one.dtype))
      if ((!o.given("--hdim") && a->kernel.empty()) || s.head_dim == one.head_dim) a->shapes.push_back(s);
  } else {
    a->shapes = {one};
  }

  if (a->direction == "bwd") {
    if (a->dq_order != "auto" && !a->deterministic)
      return o.error("--dq-order orders the deterministic mode's dQ writers: add --deterministic");
    if (!a->kernel.empty() || a->schedule != "auto")
      return o.error("--kernel and --schedule select forward variants; the backward has one plan per head dim");
    for (const Shape& s : a->shapes) {
      std::string err;
      if (!check_shape_bwd(s, &err)) return o.error(err);
    }
  } else {
    if (a->deterministic) return o.error("--deterministic is a backward mode (--direction bwd)");
    if (a->dq_order != "auto") return o.error("--dq-order is a backward option (--direction bwd --deterministic)");
    const FwdOptions fo = fwd_options(*a);
    for (const Shape& s : a->shapes) {
      std::string err;
      if (!check_shape(s, fo, &err)) return o.error(err);
    }
  }
  if (a->out.empty()) a->out = run ? "flashptx-run.json" : "bench-" + utc_now("%Y%m%dT%H%M%SZ") + ".json";
  return p;
}

// The backward of one shape: O and LSE from flashptx_fwd per input set (untimed), then flashptx_bwd
// timed like the forward (CUDA events around each call, input sets rotated, cold L2). FLOPs are
// 2.5 x the forward's. Correctness of set 0: every element of dQ, dK, dV against the fp32 GPU
// reference backward (tools/support/gpu_reference.h), |g - ref| <= 2^-5 max|ref| + 1e-4 (the GPU
// suite's large-shape bound); err_o_gpuref holds the largest error over the three gradients.
void bench_shape_bwd(const cli::BenchArgs& opt, const Meta& meta, Row& row) {
  const Shape& s = row.shape;
  row.direction = "bwd";
  const flashptx_dtype dt = s.dtype == "fp16" ? FLASHPTX_FP16 : FLASHPTX_BF16;
  const int64_t nq = s.batch * s.seqlen_q * s.heads_q * s.head_dim;
  const int64_t nkv = s.batch * s.seqlen_k * s.heads_kv * s.head_dim;
  const int64_t nlse = s.batch * s.heads_q * s.seqlen_q;
  row.flops = bench::bwd_flops(s.batch, s.heads_q, s.seqlen_q, s.seqlen_k, s.head_dim, s.causal);
  row.flops_dense = 2.5 * bench::fwd_flops_dense(s.batch, s.heads_q, s.seqlen_q, s.seqlen_k, s.head_dim);
  row.flops_useful = 2.5 * bench::fwd_flops_useful(s.batch, s.heads_q, s.seqlen_q, s.seqlen_k, s.head_dim, s.causal);
  row.valid_pairs = valid_pairs(s.seqlen_q, s.seqlen_k, s.causal);

  struct BSet { void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr, *dout = nullptr, *dq = nullptr,
                *dk = nullptr, *dv = nullptr; float* lse = nullptr; };
  const double set_bytes = 2.0 * (4 * nq + 4 * nkv) + 4.0 * nlse;
  const double l2 = meta.l2_bytes > 0 ? meta.l2_bytes : 60e6;
  int nsets = std::clamp(static_cast<int>(std::ceil(3.0 * l2 / set_bytes)), 2, 32);
  nsets = std::min<int>(nsets, static_cast<int>(opt.mem_cap_gb * 1e9 / set_bytes));
  if (nsets < 1) { row.status = "shape exceeds --mem-cap-gb"; return; }
  row.buffer_sets = nsets;
  std::vector<BSet> sets(nsets);
  void* ws = nullptr;
  struct Guard {
    std::vector<BSet>& s; void*& w;
    ~Guard() {
      for (auto& x : s)
        for (void* p : {x.q, x.k, x.v, x.o, x.dout, x.dq, x.dk, x.dv, static_cast<void*>(x.lse)}) cudaFree(p);
      cudaFree(w);
    }
  } guard{sets, ws};
  flashptx_fwd_params fp;
  flashptx_fwd_params_contiguous(&fp, nullptr, nullptr, nullptr, nullptr, nullptr, s.batch, s.seqlen_q, s.seqlen_k,
                                 s.heads_q, s.heads_kv, s.head_dim, dt, s.causal ? 1 : 0);
  flashptx_bwd_params bp;
  flashptx_bwd_params_contiguous(&bp, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                 s.batch, s.seqlen_q, s.seqlen_k, s.heads_q, s.heads_kv, s.head_dim, dt,
                                 s.causal ? 1 : 0);
  bp.deterministic = opt.deterministic ? 1 : 0;
  BwdOptions bwd_opt;
  bwd_opt.dq_order = opt.dq_order == "ascending" ? DqOrder::kAscending
                     : opt.dq_order == "rotated" ? DqOrder::kRotated
                                                 : DqOrder::kAuto;
  int64_t ws_bytes = 0;
  if (flashptx_bwd_workspace_size(&bp, &ws_bytes) != FLASHPTX_OK) { row.status = flashptx_last_error(); return; }
  CK(cudaMalloc(&ws, static_cast<size_t>(std::max<int64_t>(ws_bytes, 256))));
  for (int i = 0; i < nsets; ++i) {
    BSet& x = sets[i];
    for (void** p : {&x.q, &x.o, &x.dout, &x.dq}) CK(cudaMalloc(p, 2 * nq));
    for (void** p : {&x.k, &x.v, &x.dk, &x.dv}) CK(cudaMalloc(p, 2 * nkv));
    CK(cudaMalloc(&x.lse, 4 * std::max<int64_t>(nlse, 1)));
    CK(gpuref::fill_random(x.q, nq, dt, 2000 + 4 * i, 1.0f, 0));
    CK(gpuref::fill_random(x.k, nkv, dt, 2001 + 4 * i, 1.0f, 0));
    CK(gpuref::fill_random(x.v, nkv, dt, 2002 + 4 * i, 1.0f, 0));
    CK(gpuref::fill_random(x.dout, nq, dt, 2003 + 4 * i, 1.0f, 0));
    flashptx_fwd_params f = fp;
    f.q = x.q; f.k = x.k; f.v = x.v; f.o = x.o; f.lse = x.lse;
    if (flashptx_fwd(&f, 0) != FLASHPTX_OK) { row.status = std::string("forward: ") + flashptx_last_error(); return; }
  }
  CK(cudaDeviceSynchronize());
  auto params_for = [&](int i) {
    flashptx_bwd_params b = bp;
    const BSet& x = sets[i];
    b.q = x.q; b.k = x.k; b.v = x.v; b.o = x.o; b.lse = x.lse; b.dout = x.dout; b.dq = x.dq; b.dk = x.dk; b.dv = x.dv;
    b.workspace = ws;
    b.workspace_bytes = ws_bytes;
    return b;
  };
  {
    const flashptx_bwd_params b0 = params_for(0);
    flashptx_kernel_info info{};
    if (flashptx_bwd_kernel_info(&b0, &info) == FLASHPTX_OK) {
      take_kernel_info(info, &row);
      row.schedule = opt.deterministic ? "deterministic" : "one-per-tile";
    }
    BwdPlan plan;
    std::string msg;
    Device dev;
    if (current_device(&dev, &msg) != FLASHPTX_OK || plan_bwd(b0, bwd_opt, dev, &plan, &msg) != FLASHPTX_OK) {
      row.status = msg;
      return;
    }
    if (opt.deterministic) row.schedule = plan.dq_rotated ? "deterministic, rotated dQ order" : "deterministic, ascending dQ order";
    if (flashptx::bwd(&b0, bwd_opt, 0) != FLASHPTX_OK) { row.status = flashptx_last_error(); return; }
    CK(cudaDeviceSynchronize());
  }
  if (!time_calls(opt, nsets, row, [&](int i) {
        const flashptx_bwd_params b = params_for(i);
        flashptx::bwd(&b, bwd_opt, 0);
      }))
    return;
  row.tflops = tflops(row.flops, row.ms.median);
  row.tflops_useful = tflops(row.flops_useful, row.ms.median);

  if (!opt.gpu_ref) return;
  const flashptx_bwd_params b0 = params_for(0);
  if (flashptx::bwd(&b0, bwd_opt, 0) != FLASHPTX_OK) { row.status = std::string("check run: ") + flashptx_last_error(); return; }
  float *rq = nullptr, *rk = nullptr, *rv = nullptr, *scratch = nullptr;
  struct F { float** p[4]; ~F() { for (auto* x : p) cudaFree(*x); } } fg{{&rq, &rk, &rv, &scratch}};
  CK(cudaMalloc(&rq, 4 * nq));
  CK(cudaMalloc(&rk, 4 * nkv));
  CK(cudaMalloc(&rv, 4 * nkv));
  CK(cudaMalloc(&scratch, 8 * std::max<int64_t>(nlse, 1)));
  CK(gpuref::attention_bwd(b0, rq, rk, rv, scratch, 0));
  CK(cudaDeviceSynchronize());
  double worst = 0;
  bool ok = true;
  auto compare = [&](const void* got_dev, const float* ref_dev, int64_t n) {
    std::vector<uint16_t> got(n);
    std::vector<float> ref(n);
    if (cudaMemcpy(got.data(), got_dev, 2 * n, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(ref.data(), ref_dev, 4 * n, cudaMemcpyDeviceToHost) != cudaSuccess) { ok = false; return; }
    double mag = 0, err = 0;
    for (int64_t x = 0; x < n; ++x) {
      mag = std::max(mag, std::fabs(double(ref[x])));
      const double g = dt == FLASHPTX_FP16 ? fp16_to_float(got[x]) : bf16_to_float(got[x]);
      const double e = std::fabs(g - ref[x]);
      err = std::isnan(e) ? INFINITY : std::max(err, e);
    }
    worst = std::max(worst, err);
    ok = ok && err <= std::ldexp(mag, -5) + 1e-4;
  };
  compare(sets[0].dq, rq, nq);
  compare(sets[0].dk, rk, nkv);
  compare(sets[0].dv, rv, nkv);
  row.err_o_gpuref = worst;
  row.check_passed = ok;
}

bool can_write(const std::string& path, std::string* why) {
  if (access(path.c_str(), F_OK) == 0) {
    if (access(path.c_str(), W_OK) == 0) return true;
    *why = std::strerror(errno);
    return false;
  }
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (access(dir.c_str(), W_OK | X_OK) == 0) return true;
  *why = errno == ENOENT ? "the directory " + dir + " does not exist" : "the directory " + dir + ": " + std::strerror(errno);
  return false;
}

int run_bench(const BenchArgs& opt) {
  std::ofstream f(opt.out);
  if (!f) {
    std::fprintf(stderr, "flashptx %s: cannot write --out %s: %s; nothing was timed\n",
                 opt.command_line.rfind("flashptx run", 0) == 0 ? "run" : "bench", opt.out.c_str(), std::strerror(errno));
    return 1;
  }
  const FwdOptions fo = fwd_options(opt);
  Meta meta;
  fill_meta(&meta, opt.command_line, static_cast<int>(opt.warmup));
  meta.kernel_requested = opt.kernel;
  meta.schedule_requested = opt.schedule;
  if (!opt.quiet)
    std::fprintf(stderr, "flashptx bench: %s (%d SMs, L2 %d MB), commit %.12s%s, %zu shape(s)\n", meta.gpu_name.c_str(),
                 meta.sm_count, meta.l2_bytes >> 20, meta.git_commit.c_str(), meta.git_dirty ? " (dirty)" : "",
                 opt.shapes.size());

  std::vector<Row> rows;
  bool all_ok = true;
  const auto t0 = std::time(nullptr);
  for (size_t n = 0; n < opt.shapes.size(); ++n) {
    Row row;
    row.shape = opt.shapes[n];
    if (opt.direction == "bwd") bench_shape_bwd(opt, meta, row);
    else bench_shape(opt, fo, meta, row);
    cudaGetLastError();  // a failure is recorded in the row; do not let it poison the next one
    all_ok = all_ok && row.status == "ok" && row.check_passed;
    if (!opt.quiet)
      std::fprintf(stderr, "[%zu/%zu %lds] %-44s %s  %s %s %d CTAs  median %.4f ms (p10 %.4f p90 %.4f, n=%d)  %.1f TFLOP/s  err %.2e (tol %.2e)%s\n",
                   n + 1, opt.shapes.size(), static_cast<long>(std::time(nullptr) - t0), row.shape.label().c_str(),
                   row.status == "ok" ? "" : row.status.c_str(), row.kernel_symbol.c_str(), row.schedule.c_str(),
                   row.ctas, row.ms.median, row.ms.p10, row.ms.p90, row.ms.n, row.tflops, row.err_o_cpu, row.tol_o_cpu,
                   row.check_passed ? "" : "  CHECK FAILED");
    bool seen = false;
    for (const auto& k : meta.kernels) seen = seen || k.symbol == row.kernel_symbol;
    if (!seen && !row.kernel_symbol.empty())
      meta.kernels.push_back({row.kernel_symbol, sass_hash(row.kernel_symbol), row.registers, row.shared_bytes, row.threads});
    rows.push_back(row);
  }

  const std::string text = manifest_json(meta, rows);
  f << text;
  f.close();
  if (!f) { std::fprintf(stderr, "flashptx bench: could not write %s\n", opt.out.c_str()); return 1; }
  // A compact table on stdout.
  std::printf("| hdim | causal | seqlen | batch | heads | kernel | schedule | CTAs | ms (median) | TFLOP/s | err vs fp64 | status |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : rows)
    std::printf("| %lld | %s | %lld | %lld | %lld | %s | %s | %d | %.4f | %.1f | %.2e | %s |\n",
                static_cast<long long>(r.shape.head_dim), r.shape.causal ? "yes" : "no",
                static_cast<long long>(r.shape.seqlen_q), static_cast<long long>(r.shape.batch),
                static_cast<long long>(r.shape.heads_q), r.kernel_symbol.c_str(), r.schedule.c_str(), r.ctas,
                r.ms.median, r.tflops, r.err_o_cpu,
                r.status == "ok" ? (r.check_passed ? "ok" : "CHECK FAILED") : r.status.c_str());
  std::fprintf(stderr, "flashptx bench: manifest written to %s\n", opt.out.c_str());
  return all_ok ? 0 : 1;
}

}  // namespace flashptx::cli

int cmd_bench(int argc, char** argv) {
  using namespace flashptx::cli;
  BenchArgs a;
  const Parsed p = parse_bench_args("bench", argc, argv, &a);
  if (!p.run()) return finish(p);
  std::string why;
  if (!can_write(a.out, &why)) {
    std::fprintf(stderr, "flashptx bench: cannot write --out %s: %s; nothing was timed\n", a.out.c_str(), why.c_str());
    return 1;
  }
  const Gpu g = probe_gpu();
  if (!g.hopper) {
    std::fprintf(stderr, "flashptx bench: %s; nothing was timed\n", g.why.c_str());
    return 1;
  }
  return run_bench(a);
}
