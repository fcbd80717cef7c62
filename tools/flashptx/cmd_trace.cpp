// `flashptx trace`: the measured pipeline timeline of the instrumented forward kernel.
//
// With a GPU: launches the traced kernel (fa3_fwd_sm90_bf16_d128_trace, through src/internal.h) once on random inputs after one
// untraced warm-up call, reads the trace buffer back, writes the raw trace as JSON (--json), the
// SVG Gantt chart (--out) and prints the per-consumer summary. It also compares the traced call's
// output with the simple GPU reference, so a trace of a wrong kernel does not pass unnoticed.
// Without a GPU: `--from-json FILE [FILE...]` re-renders saved raw traces (plain or gzip-compressed
// JSON), each to its own SVG.
// Every option is checked first (parse_trace_args: no CUDA call): the shape as the library
// validates it, for the traced kernel of the kernel table.
// What it shows: the order and overlap of protocol events in the traced CTAs of one launch, on one
// SM clock. What it does not prove: that untraced builds time the same (stamps cost a few cycles
// and a global store each), or that other CTAs behave like the traced ones.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "src/protocol/trace.h"
#include "src/internal.h"
#include "src/kernels.h"
#include "src/plan.h"
#include "src/validate.h"
#include "tools/flashptx/commands.h"
#include "tools/flashptx/device.h"
#include "tools/support/dtype.h"
#include "tools/support/gpu_reference.h"
#include "tools/support/trace_render.h"

using namespace flashptx;
namespace tr = flashptx::trace;
namespace rd = flashptx::trace_render;

namespace {

// The traced kernels are rows of the kernel table like any other, selected by name through the
// library's internal API (src/internal.h), with the trace buffer they need. A causal mask takes the
// paired persistent kernel (the plan's choice for causal d128 on the grid and for d64 up to 2k
// rows): its CTAs walk several tiles, and the trace shows one tile's start under the previous
// tile's end. d64 has a causal traced kernel only (the 128-row paired one,
// src/sm90/fa3_fwd_trace_d64.cu).
const KernelEntry* traced_kernel(int64_t hdim, const std::string& dtype, bool causal) {
  for (const KernelEntry& k : kernel_table())
    if (k.family == Family::kFa3FwdTraced && k.head_dim == hdim && (k.dtype == FLASHPTX_FP16) == (dtype == "fp16") &&
        k.paired == causal)
      return &k;
  return nullptr;
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return static_cast<bool>(f);
}

// The window [t0, t1] (microseconds from the first stamp) of a timeline, for a readable SVG of a
// long run; the summary is always computed over the whole timeline.
rd::Timeline window(const rd::Timeline& tl, double t0, double t1) {
  rd::Timeline w = tl;
  const double a = tl.t_begin + t0, b = tl.t_begin + t1;
  w.spans.clear();
  for (rd::Span s : tl.spans) {
    if (s.t1 < a || s.t0 > b) continue;
    s.t0 = std::max(s.t0, a);
    s.t1 = std::min(s.t1, b);
    w.spans.push_back(s);
  }
  w.instants.clear();
  for (const rd::Instant& i : tl.instants)
    if (i.t >= a && i.t <= b) w.instants.push_back(i);
  for (auto& x : w.active) { x.t0 = std::max(x.t0, a); x.t1 = std::min(x.t1, b); }
  w.t_begin = a;
  w.t_end = b;
  return w;
}

// "tools/trace/h200-d128-s1024-causal.json.gz" -> "h200-d128-s1024-causal.svg".
std::string svg_name(const std::string& json) {
  std::string base = json.substr(json.find_last_of('/') == std::string::npos ? 0 : json.find_last_of('/') + 1);
  for (const char* ext : {".gz", ".json"})
    if (base.size() > std::strlen(ext) && base.compare(base.size() - std::strlen(ext), std::string::npos, ext) == 0)
      base.resize(base.size() - std::strlen(ext));
  return base + ".svg";
}

int render(rd::RawTrace raw, int ctas, const std::string& out, const std::vector<double>& window_us) {
  if (ctas > 0)
    raw.lanes.erase(std::remove_if(raw.lanes.begin(), raw.lanes.end(), [&](const rd::Lane& l) { return l.cta >= ctas; }),
                    raw.lanes.end());
  if (raw.lanes.empty()) { std::fprintf(stderr, "flashptx trace: no stamped lanes (was the kernel built with -DFLASHPTX_TRACE=1?)\n"); return 1; }
  const std::string truncated = rd::truncation_note(raw);
  if (!truncated.empty()) std::fprintf(stderr, "flashptx trace: %s\n", truncated.c_str());
  const rd::Timeline tl = rd::build_timeline(raw);
  const std::string title = "flashptx FA3 forward pipeline trace: " + raw.shape;
  const double g_window_t0 = window_us.empty() ? 0 : window_us[0], g_window_t1 = window_us.empty() ? 0 : window_us[1];
  const bool windowed = g_window_t1 > g_window_t0;
  const std::string wtitle = windowed ? title + " (window " + std::to_string(static_cast<int>(g_window_t0)) + "-" +
                                            std::to_string(static_cast<int>(g_window_t1)) + " us)"
                                      : title;
  if (!write_file(out, rd::render_svg(windowed ? window(tl, g_window_t0, g_window_t1) : tl, wtitle, truncated))) { std::fprintf(stderr, "flashptx trace: cannot write %s\n", out.c_str()); return 1; }
  std::printf("%s\n", raw.shape.c_str());
  std::printf("%s", rd::summary_text(rd::summarize(tl)).c_str());
  std::printf("two-stage overlap at run time (each consumer's own PV(j-1) under its softmax(j)):\n%s",
              rd::own_overlap_text(rd::own_overlap(tl)).c_str());
  if (tl.unmatched_ends) std::printf("(%d end stamps had no begin)\n", tl.unmatched_ends);
  std::printf("SVG written to %s\n", out.c_str());
  return 0;
}

}  // namespace

namespace flashptx::cli {

Parsed parse_trace_args(int argc, const char* const* argv, TraceArgs* a) {
  constexpr int64_t kAny = std::numeric_limits<int64_t>::max();
  *a = TraceArgs();
  std::vector<int64_t> hdims;
  std::vector<std::string> dtypes;
  int traced = 0;
  for (const KernelEntry& k : kernel_table())
    if (k.family == Family::kFa3FwdTraced) {
      ++traced;
      if (std::find(hdims.begin(), hdims.end(), k.head_dim) == hdims.end()) hdims.push_back(k.head_dim);
      const std::string t = k.dtype == FLASHPTX_FP16 ? "fp16" : "bf16";
      if (std::find(dtypes.begin(), dtypes.end(), t) == dtypes.end()) dtypes.push_back(t);
    }
  Options o("trace",
            "flashptx trace [shape options] [--cta N] [--out trace.svg] [--json trace.json]\n"
            "       flashptx trace --from-json FILE [--out trace.svg] [--cta N] [--window-us T0 T1]\n"
            "       flashptx trace --from-json FILE FILE... [--cta N] [--window-us T0 T1]",
            "The measured pipeline timeline of the instrumented forward kernel (one launch on the GPU),\n"
            "as an SVG Gantt chart, the raw trace as JSON, and a per-consumer summary; or the same\n"
            "from a saved raw trace (plain or gzip-compressed JSON), without a GPU.");
  o.positionals("FILE...", &a->more_json,
                "with --from-json: more saved traces; each renders to its own SVG, named after\n"
                "the trace (tools/trace/x.json.gz -> x.svg, in the current directory)");
  o.group("GPU run (the " + std::to_string(traced) + " traced kernels of the kernel table)")
      .integer_of("--hdim", &a->hdim, hdims, "head dimension (a traced kernel's)")
      .integer("--seqlen", &a->seqlen, 1, kAny, "query and key length (default 8192)")
      .integer("--batch", &a->batch, 1, kAny, "batch size (default 1)")
      .integer("--heads", &a->heads, 1, 65535, "query heads (default 16)")
      .integer("--heads-kv", &a->heads_kv, 1, 65535, "key/value heads (default: --heads)")
      .text("--dtype", &a->dtype, dtypes, "element type (a traced kernel's)")
      .flag("--causal", &a->causal, "causal mask (the paired persistent kernel: tile transitions)")
      .text("--json", &a->json_out, {}, "the raw trace written (default trace.json)", "FILE")
      .group("rendering")
      .text("--from-json", &a->from_json, {}, "render this saved raw trace instead of running the GPU", "FILE")
      .integer("--cta", &a->ctas, 0, trace::kMaxCtas,
               "render only the first N traced CTAs (0, the default: all " + std::to_string(trace::kMaxCtas) + ")")
      .reals("--window-us", &a->window_us, 2, 0, 1e9, "the SVG shows only this window (us from the first stamp)",
             "T0 T1")
      .text("--out", &a->out, {}, "the SVG written (default trace.svg)", "FILE");
  const Parsed p = o.parse(argc, argv);
  if (!p.run()) return p;
  if (!a->window_us.empty() && !(a->window_us[1] > a->window_us[0]))
    return o.error("--window-us needs T0 < T1");
  if (a->from_json.empty() && !a->more_json.empty())
    return o.error("unexpected argument '" + a->more_json.front() + "' (saved traces follow --from-json)");
  if (!a->from_json.empty()) {
    for (const char* gpu_opt : {"--hdim", "--seqlen", "--batch", "--heads", "--heads-kv", "--dtype", "--causal", "--json"})
      if (o.given(gpu_opt))
        return o.error(std::string(gpu_opt) + " is for a GPU run; with --from-json the trace is the file's");
    if (a->more_json.empty()) {
      a->renders.push_back({a->from_json, a->out});
      return p;
    }
    if (o.given("--out"))
      return o.error("--out names one SVG, and " + std::to_string(a->more_json.size() + 1) +
                     " traces are given: leave --out out (each SVG is named after its trace)");
    a->more_json.insert(a->more_json.begin(), a->from_json);
    for (const std::string& f : a->more_json) {
      for (const TraceArgs::Render& r : a->renders)
        if (r.svg == svg_name(f))
          return o.error("'" + r.json + "' and '" + f + "' would both render to " + r.svg);
      a->renders.push_back({f, svg_name(f)});
    }
    return p;
  }
  if (a->heads_kv == 0) a->heads_kv = a->heads;
  if (a->heads % a->heads_kv != 0)
    return o.error("--heads " + std::to_string(a->heads) + " is not a multiple of --heads-kv " +
                   std::to_string(a->heads_kv));
  // The shape as the library will check it, for the traced kernel (stand-in pointers, no CUDA call).
  const KernelEntry* k = traced_kernel(a->hdim, a->dtype, a->causal);
  if (k == nullptr)
    return o.error("no traced kernel for --hdim " + std::to_string(a->hdim) + " --dtype " + a->dtype +
                   (a->causal ? " --causal" : " without --causal"));
  alignas(16) static unsigned char stand_in[4][16];
  static uint64_t stand_in_trace[1];
  flashptx_fwd_params fp;
  flashptx_fwd_params_contiguous(&fp, stand_in[0], stand_in[1], stand_in[2], stand_in[3], nullptr, a->batch, a->seqlen,
                                 a->seqlen, a->heads, a->heads_kv, a->hdim,
                                 a->dtype == "fp16" ? FLASHPTX_FP16 : FLASHPTX_BF16, a->causal ? 1 : 0);
  FwdOptions fo;
  fo.kernel = k->name;
  fo.trace = stand_in_trace;
  std::string msg;
  FwdPlan plan;
  if (validate_fwd(fp, &msg) != FLASHPTX_OK || plan_fwd(fp, fo, Device{0, 90, 132}, &plan, &msg) != FLASHPTX_OK)
    return o.error(msg);
  return p;
}

}  // namespace flashptx::cli

int cmd_trace(int argc, char** argv) {
  cli::TraceArgs a;
  const cli::Parsed parsed = cli::parse_trace_args(argc, argv, &a);
  if (!parsed.run()) return cli::finish(parsed);
  const int64_t hdim = a.hdim, seqlen = a.seqlen, batch = a.batch, heads = a.heads, heads_kv = a.heads_kv;
  const bool causal = a.causal;
  const int ctas = static_cast<int>(a.ctas);
  const std::string &dtype = a.dtype, &out = a.out, &json_out = a.json_out, &from = a.from_json;

  if (!from.empty()) {
    int rc = 0;
    for (const cli::TraceArgs::Render& r : a.renders) {
      if (a.renders.size() > 1) std::printf("%s== %s -> %s\n", &r == &a.renders.front() ? "" : "\n", r.json.c_str(), r.svg.c_str());
      std::string text, err;
      rd::RawTrace raw;
      if (!rd::read_trace_file(r.json, &text, &err)) {
        std::fprintf(stderr, "flashptx trace: %s\n", err.c_str());
        rc = 1;
      } else if (!rd::from_json(text, &raw, &err)) {
        std::fprintf(stderr, "flashptx trace: %s: %s\n", r.json.c_str(), err.c_str());
        rc = 1;
      } else if (render(raw, ctas, r.svg, a.window_us) != 0) {
        rc = 1;
      }
    }
    return rc;
  }

  const cli::Gpu g = cli::probe_gpu();
  if (!g.hopper) {
    std::fprintf(stderr, "flashptx trace: %s; `flashptx trace --from-json FILE` renders a saved trace\n", g.why.c_str());
    return 1;
  }
  const flashptx_dtype dt = dtype == "fp16" ? FLASHPTX_FP16 : FLASHPTX_BF16;
  const int64_t nq = batch * seqlen * heads * hdim, nkv = batch * seqlen * heads_kv * hdim;
  void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  uint64_t* tb = nullptr;
  float* ro = nullptr;
  unsigned* ctr = nullptr;  // the dynamic schedule's tile counter, for a traced kernel that has it
  int rc = 1;
  auto ck = [](cudaError_t e, const char* what) {
    if (e != cudaSuccess) std::fprintf(stderr, "flashptx trace: %s: %s\n", what, cudaGetErrorString(e));
    return e == cudaSuccess;
  };
  do {
    if (!ck(cudaMalloc(&q, 2 * nq), "cudaMalloc q") || !ck(cudaMalloc(&k, 2 * nkv), "cudaMalloc k") ||
        !ck(cudaMalloc(&v, 2 * nkv), "cudaMalloc v") || !ck(cudaMalloc(&o, 2 * nq), "cudaMalloc o") ||
        !ck(cudaMalloc(&tb, sizeof(uint64_t) * tr::kWordsTotal), "cudaMalloc trace") ||
        !ck(cudaMalloc(&ro, sizeof(float) * nq), "cudaMalloc ref"))
      break;
    if (!ck(gpuref::fill_random(q, nq, dt, 7, 1.f, 0), "fill q") || !ck(gpuref::fill_random(k, nkv, dt, 8, 1.f, 0), "fill k") ||
        !ck(gpuref::fill_random(v, nkv, dt, 9, 1.f, 0), "fill v"))
      break;
    flashptx_fwd_params p;
    flashptx_fwd_params_contiguous(&p, q, k, v, o, nullptr, batch, seqlen, seqlen, heads, heads_kv, hdim, dt, causal);
    const KernelEntry* tk = traced_kernel(hdim, dtype, causal);  // found by the argument parser
    // A traced kernel with the dynamic schedule (FwdConfig::dynamic_walk) runs it, as its release twin
    // does in the benchmarks: the caller's zeroed counter (include/flashptx.h, tile_counter), which
    // every call leaves zero.
    if (tk->dynamic) {
      if (!ck(cudaMalloc(&ctr, 2 * sizeof(unsigned)), "cudaMalloc tile counter") ||
          !ck(cudaMemset(ctr, 0, 2 * sizeof(unsigned)), "zero tile counter"))
        break;
      p.tile_counter = ctr;
    }
    // one untraced call first: module load and clocks ramp outside the trace
    flashptx_status st = flashptx_fwd(&p, 0);
    if (st != FLASHPTX_OK) { std::fprintf(stderr, "flashptx trace: flashptx_fwd: %s: %s\n", flashptx_status_name(st), flashptx_last_error()); break; }
    if (!ck(cudaMemset(o, 0xff, 2 * nq), "poison o") || !ck(cudaMemset(tb, 0, sizeof(uint64_t) * tr::kWordsTotal), "zero trace"))
      break;
    FwdOptions traced;
    traced.kernel = tk->name;
    traced.trace = tb;
    st = flashptx::fwd(&p, traced, 0);
    if (st != FLASHPTX_OK) { std::fprintf(stderr, "flashptx trace: traced forward: %s: %s\n", flashptx_status_name(st), flashptx_last_error()); break; }
    if (!ck(cudaDeviceSynchronize(), "traced launch")) break;
    std::vector<uint64_t> words(tr::kWordsTotal);
    if (!ck(cudaMemcpy(words.data(), tb, sizeof(uint64_t) * tr::kWordsTotal, cudaMemcpyDeviceToHost), "copy trace")) break;

    // The traced call's output against the simple GPU reference.
    if (!ck(gpuref::attention_fwd(p, ro, nullptr, 0), "gpu reference") || !ck(cudaDeviceSynchronize(), "gpu reference")) break;
    std::vector<uint16_t> ho(nq);
    std::vector<float> hr(nq);
    if (!ck(cudaMemcpy(ho.data(), o, 2 * nq, cudaMemcpyDeviceToHost), "copy o") ||
        !ck(cudaMemcpy(hr.data(), ro, sizeof(float) * nq, cudaMemcpyDeviceToHost), "copy ref"))
      break;
    double err = 0;
    for (int64_t x = 0; x < nq; ++x) {
      const double got = dt == FLASHPTX_FP16 ? fp16_to_float(ho[x]) : bf16_to_float(ho[x]);
      const double e = std::fabs(got - hr[x]);
      err = std::isnan(e) ? INFINITY : std::max(err, e);
    }

    int dev = 0, clk = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, dev);
    char shape[256];
    std::snprintf(shape, sizeof shape, "b%lld s%lld h%lld/%lld d%lld %s %s (clock axis at %d MHz)",
                  static_cast<long long>(batch), static_cast<long long>(seqlen), static_cast<long long>(heads),
                  static_cast<long long>(heads_kv), static_cast<long long>(hdim), dtype.c_str(),
                  causal ? "causal" : "non-causal", clk / 1000);
    const rd::RawTrace raw = rd::decode(words.data(), clk, shape);
    if (!write_file(json_out, rd::to_json(raw))) { std::fprintf(stderr, "flashptx trace: cannot write %s\n", json_out.c_str()); break; }
    std::printf("traced output vs GPU fp32 reference: max |diff| = %.3e%s\n", err,
                err < (dt == FLASHPTX_FP16 ? 4e-3 : 3e-2) ? "" : "  (LARGE: check the traced build)");
    std::printf("raw trace written to %s\n", json_out.c_str());
    rc = render(raw, ctas, out, a.window_us);
  } while (false);
  cudaFree(q); cudaFree(k); cudaFree(v); cudaFree(o); cudaFree(tb); cudaFree(ro); cudaFree(ctr);
  return rc;
}
