// `flashptx sim`: one kernel of the library executed in the PTX simulator (issue 31, "How it is
// used"), on any machine. The CLI links the real CUDA runtime, so the simulator comes from
// build/libflashptx_sim.so (the release library's objects on the fake runtime, tools/sim/cudart/),
// opened with dlopen ($FLASHPTX_SIM_LIB, else FLASHPTX_BUILD_DIR/libflashptx_sim.so) and called
// through its C ABI (include/flashptx.h, tools/sim/cudart/flashptx_sim.h) on host memory this
// command registers. The output is checked against the fp64 reference under FlashAttention's rule
// (tools/support/reference.h): max|out - ref| <= 2 max|same_dtype_ref - ref| + 1e-5, as the GPU
// suites check it. Then the simulator's report, instructions and instructions/s; last line PASS or
// FAIL (exit 0 or 1; usage errors exit 2).
//
// The C ABI has no way to force a kernel: the call runs the launch plan's choice, and the command
// prints which kernel that was (flashptx_fwd_kernel_info / flashptx_bwd_kernel_info). `--kernel
// NAME` sets the shape defaults from the kernel table row (head dim, dtype, causal for the paired
// kernels) and fails, saying so, when the plan chose another kernel for the shape.
// `--trace FILE` writes the simulator's event log of every launch of the call to FILE (TMA copies
// issued and landed, wgmma groups committed and retired, mbarrier phases, waits, named barriers,
// on its logical clock: tools/sim/cudart/flashptx_sim.h flashptx_sim_trace) and renders it with the
// pipeline trace's renderer (tools/support/trace_render.h, sim_timeline) to FILE.svg.
#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "src/kernels.h"
#include "tools/flashptx/commands.h"
#include "tools/support/dtype.h"
#include "tools/support/reference.h"
#include "tools/support/trace_render.h"

namespace flashptx::cli {
namespace {

bool sm90_family(Family f) {
  switch (f) {
    case Family::kFa3Fwd: case Family::kFa3FwdTraced: case Family::kFa3FwdVarlen: case Family::kFa3Bwd:
    case Family::kFa3BwdPre: case Family::kFa3BwdPostDq: case Family::kFa3BwdPostDkv:
    case Family::kFa3BwdSink: case Family::kFa3BwdVarlen: case Family::kFa3BwdVarlenPre:
    case Family::kFa3BwdVarlenPostDq: case Family::kFa3BwdVarlenPostDkv: return true;
    default: return false;
  }
}

std::vector<std::string> sim_kernel_names() {
  std::vector<std::string> names;
  for (const KernelEntry& k : kernel_table())
    if (k.family == Family::kFa3Fwd || k.family == Family::kFa3Bwd) names.push_back(k.name);
  return names;
}

// The C ABI of libflashptx_sim.so, through function pointers.
struct SimLib {
  void* handle = nullptr;
  std::string path;
  decltype(&flashptx_fwd_params_contiguous) fwd_params_contiguous = nullptr;
  decltype(&flashptx_fwd) fwd = nullptr;
  decltype(&flashptx_fwd_kernel_info) fwd_kernel_info = nullptr;
  decltype(&flashptx_bwd_params_contiguous) bwd_params_contiguous = nullptr;
  decltype(&flashptx_bwd_workspace_size) bwd_workspace_size = nullptr;
  decltype(&flashptx_bwd) bwd = nullptr;
  decltype(&flashptx_bwd_kernel_info) bwd_kernel_info = nullptr;
  decltype(&flashptx_last_error) last_error = nullptr;
  decltype(&flashptx_status_name) status_name = nullptr;
  int (*reg)(const void*, size_t) = nullptr;
  int (*unreg)(const void*) = nullptr;
  int (*configure)(const char*, uint64_t, int) = nullptr;
  int (*trace)(const char*) = nullptr;
  const char* (*last_report)() = nullptr;
  uint64_t (*launches)() = nullptr;
  void (*stats)(uint64_t*, uint64_t*, double*) = nullptr;
};

std::string sim_lib_path() {
  if (const char* e = std::getenv("FLASHPTX_SIM_LIB"); e != nullptr && *e) return e;
  return std::string(FLASHPTX_BUILD_DIR) + "/libflashptx_sim.so";
}

// Opens the library; false with *err saying what is missing.
bool open_sim(SimLib* s, std::string* err) {
  s->path = sim_lib_path();
  s->handle = dlopen(s->path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (s->handle == nullptr) {
    const char* e = dlerror();
    *err = "cannot load the simulator library " + s->path + " (" + (e ? e : "?") +
           "): `make sim-exec` builds it, or set $FLASHPTX_SIM_LIB";
    return false;
  }
  bool ok = true;
  auto get = [&](auto** fp, const char* name) {
    *reinterpret_cast<void**>(fp) = dlsym(s->handle, name);
    if (*fp == nullptr) {
      if (ok) *err = s->path + " does not export " + name;
      ok = false;
    }
  };
  get(&s->fwd_params_contiguous, "flashptx_fwd_params_contiguous");
  get(&s->fwd, "flashptx_fwd");
  get(&s->fwd_kernel_info, "flashptx_fwd_kernel_info");
  get(&s->bwd_params_contiguous, "flashptx_bwd_params_contiguous");
  get(&s->bwd_workspace_size, "flashptx_bwd_workspace_size");
  get(&s->bwd, "flashptx_bwd");
  get(&s->bwd_kernel_info, "flashptx_bwd_kernel_info");
  get(&s->last_error, "flashptx_last_error");
  get(&s->status_name, "flashptx_status_name");
  get(&s->reg, "flashptx_sim_register");
  get(&s->unreg, "flashptx_sim_unregister");
  get(&s->configure, "flashptx_sim_configure");
  get(&s->trace, "flashptx_sim_trace");
  get(&s->last_report, "flashptx_sim_last_report");
  get(&s->launches, "flashptx_sim_launches");
  get(&s->stats, "flashptx_sim_stats");
  return ok;
}

// Host buffers registered with the simulated device for the command's lifetime.
struct Buffers {
  SimLib* lib;
  std::vector<void*> ptrs;
  explicit Buffers(SimLib* l) : lib(l) {}
  ~Buffers() {
    for (void* p : ptrs) {
      lib->unreg(p);
      std::free(p);
    }
  }
  void* get(size_t bytes, int fill) {
    const size_t n = (bytes + 255) / 256 * 256 + 256;
    void* p = std::aligned_alloc(256, n);
    std::memset(p, fill, n);
    if (lib->reg(p, n) != 0) {
      std::free(p);
      return nullptr;
    }
    ptrs.push_back(p);
    return p;
  }
};

struct SimArgs {
  std::string kernel, direction = "fwd", dtype = "bf16", policy = "round-robin", trace;
  int64_t batch = 1, seqlen_q = 128, seqlen_k = 256, heads = 2, heads_kv = 1, hdim = 128, seed = 1, sms = 4;
  bool causal = false, list = false;
};

Parsed parse_sim_args(int argc, const char* const* argv, SimArgs* a) {
  constexpr int64_t kAny = std::numeric_limits<int64_t>::max();
  int64_t seqlen = 0, heads_kv = 0;
  Options o("sim", "flashptx sim [--kernel NAME] [shape options] [--policy P --seed N --sms N --trace FILE] | --list",
            "Runs one forward (or backward) of the library in the PTX simulator on this machine's CPU,\n"
            "through build/libflashptx_sim.so (or $FLASHPTX_SIM_LIB): its error against the fp64\n"
            "reference under FlashAttention's rule (2 max|same-dtype ref - ref| + 1e-5), the simulator's\n"
            "hazard/deadlock report, instructions simulated and instructions/s. Last line PASS or FAIL.\n"
            "The C ABI cannot force a kernel: the launch plan's choice runs, and is printed.");
  o.group("kernel")
      .flag("--list", &a->list, "the kernel-table rows of the sm_90a families, one line each")
      .text("--kernel", &a->kernel, sim_kernel_names(),
            "an FA3 forward or backward kernel of the kernel table: its head\n"
            "dim, dtype (and causal, for the paired kernels) become the\n"
            "defaults; FAIL when the plan chooses another kernel",
            "NAME")
      .text("--direction", &a->direction, {"fwd", "bwd"}, "forward (default) or backward")
      .group("shape (default: --batch 1 --seqlen-q 128 --seqlen-k 256 --heads 2 --heads-kv 1 --hdim 128 bf16)")
      .integer("--batch", &a->batch, 1, 64, "batch size")
      .integer("--seqlen", &seqlen, 1, kAny, "query and key length")
      .integer("--seqlen-q", &a->seqlen_q, 1, kAny, "query length")
      .integer("--seqlen-k", &a->seqlen_k, 1, kAny, "key length")
      .integer("--heads", &a->heads, 1, 256, "query heads")
      .integer("--heads-kv", &heads_kv, 1, 256, "key/value heads, dividing --heads (default 1)")
      .integer_of("--hdim", &a->hdim, {64, 128, 256}, "head dimension")
      .text("--dtype", &a->dtype, {"bf16", "fp16"}, "element type")
      .flag("--causal", &a->causal, "causal mask (bottom-right aligned)")
      .group("simulator")
      .text("--policy", &a->policy, {"round-robin", "random", "starve-producer", "consumers-first", "delay-one-warpgroup"},
            "the scheduler's policy (default round-robin)", "P")
      .integer("--seed", &a->seed, 0, kAny, "the scheduler's seed, also the inputs' (default 1)")
      .integer("--sms", &a->sms, 1, 1024, "simulated SMs (default 4)")
      .text("--trace", &a->trace, {},
            "write the simulator's event log (TMA copies, wgmma groups,\n"
            "mbarrier phases and waits, on its logical clock) to FILE and\n"
            "its timeline to FILE.svg",
            "FILE");
  const Parsed p = o.parse(argc, argv);
  if (!p.run()) return p;
  if (o.given("--seqlen")) {
    if (o.given("--seqlen-q") || o.given("--seqlen-k")) return o.error("--seqlen does not combine with --seqlen-q/--seqlen-k");
    a->seqlen_q = a->seqlen_k = seqlen;
  }
  if (heads_kv > 0) a->heads_kv = heads_kv;
  if (a->heads % a->heads_kv != 0)
    return o.error("--heads " + std::to_string(a->heads) + " is not a multiple of --heads-kv " + std::to_string(a->heads_kv));
  if (!a->kernel.empty()) {
    const KernelEntry& k = *kernel_by_name(a->kernel);
    const std::string kdtype = k.dtype == FLASHPTX_FP16 ? "fp16" : "bf16";
    const std::string kdir = k.family == Family::kFa3Bwd ? "bwd" : "fwd";
    if (o.given("--hdim") && a->hdim != k.head_dim)
      return o.error("--kernel " + a->kernel + " runs head dim " + std::to_string(k.head_dim) + ", not --hdim " +
                     std::to_string(a->hdim));
    if (o.given("--dtype") && a->dtype != kdtype)
      return o.error("--kernel " + a->kernel + " runs " + kdtype + ", not --dtype " + a->dtype);
    if (o.given("--direction") && a->direction != kdir)
      return o.error("--kernel " + a->kernel + " is a " + kdir + " kernel, not --direction " + a->direction);
    a->hdim = k.head_dim;
    a->dtype = kdtype;
    a->direction = kdir;
    if (k.paired) a->causal = true;
  }
  return p;
}

int list_kernels() {
  std::printf("%-44s %-16s %-5s %5s %9s %6s %7s %7s  %s\n", "kernel", "family", "dtype", "hdim", "block", "stages",
              "threads", "smem", "flashptx sim runs it");
  for (const KernelEntry& k : kernel_table()) {
    if (!sm90_family(k.family)) continue;
    const char* how = k.family == Family::kFa3Fwd   ? "--kernel (the plan's choice at the shape)"
                      : k.family == Family::kFa3Bwd ? "--kernel, --direction bwd"
                      : k.family == Family::kFa3BwdPre || k.family == Family::kFa3BwdPostDq ||
                              k.family == Family::kFa3BwdPostDkv
                          ? "inside --direction bwd"
                          : "no (./run_tests runs it in the simulator)";
    char block[32];
    std::snprintf(block, sizeof block, "%dx%d", k.block_m, k.block_n);
    std::printf("%-44s %-16s %-5s %5d %9s %6d %7d %7d  %s%s%s\n", k.name, family_name(k.family),
                k.dtype == FLASHPTX_FP16 ? "fp16" : "bf16", k.head_dim, block, k.stages, k.threads, k.smem_bytes, how,
                k.paired ? ", causal" : "", "");
  }
  return 0;
}

uint16_t to16(bool fp16, double x) { return fp16 ? double_to_fp16(x) : double_to_bf16(x); }

void fill(std::mt19937_64& rng, bool fp16, uint16_t* p, size_t n) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (size_t i = 0; i < n; ++i) p[i] = to16(fp16, u(rng));
}

struct Check {
  const char* what;
  double err, tol;
  const char* extra = "";  // what the tolerance adds to the rule
  bool ok() const { return std::isfinite(err) && err <= tol; }
};

double max_abs_diff_kv(const ref::Problem& p, const ref::TensorView& out, const std::vector<double>& r) {
  double m = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t s = 0; s < p.seqlen_k; ++s)
      for (int64_t h = 0; h < p.heads_kv; ++h)
        for (int64_t d = 0; d < p.head_dim; ++d) {
          const double e = std::fabs(out.at(b, s, h, d) - r[((b * p.seqlen_k + s) * p.heads_kv + h) * p.head_dim + d]);
          m = std::isnan(e) ? INFINITY : std::max(m, e);
        }
  return m;
}
double max_abs_diff_vec(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}
double max_of(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, x);
  return m;
}

int run_sim(const SimArgs& a) {
  SimLib lib;
  std::string err;
  if (!open_sim(&lib, &err)) {
    std::fprintf(stderr, "flashptx sim: %s\n", err.c_str());
    std::printf("FAIL\n");
    return 1;
  }
  if (lib.configure(a.policy.c_str(), static_cast<uint64_t>(a.seed), static_cast<int>(a.sms)) != 0) {
    std::fprintf(stderr, "flashptx sim: the simulator refused policy %s\n", a.policy.c_str());
    std::printf("FAIL\n");
    return 1;
  }
  if (!a.trace.empty() && lib.trace(a.trace.c_str()) != 0) {
    std::fprintf(stderr, "flashptx sim: cannot write the trace to %s\n", a.trace.c_str());
    std::printf("FAIL\n");
    return 1;
  }
  const bool fp16 = a.dtype == "fp16";
  const flashptx_dtype dt = fp16 ? FLASHPTX_FP16 : FLASHPTX_BF16;
  const ref::Elem el = fp16 ? ref::Elem::kFP16 : ref::Elem::kBF16;
  const Round rd = fp16 ? Round::kFP16 : Round::kBF16;
  ref::Problem pr = ref::problem(a.batch, a.seqlen_q, a.seqlen_k, a.heads, a.heads_kv, a.hdim, a.causal);
  const size_t nq = size_t(a.batch) * a.seqlen_q * a.heads * a.hdim, nk = size_t(a.batch) * a.seqlen_k * a.heads_kv * a.hdim;
  const size_t nl = size_t(a.batch) * a.heads * a.seqlen_q;
  Buffers buf(&lib);
  auto* q = static_cast<uint16_t*>(buf.get(nq * 2, 0));
  auto* k = static_cast<uint16_t*>(buf.get(nk * 2, 0));
  auto* v = static_cast<uint16_t*>(buf.get(nk * 2, 0));
  auto* o = static_cast<uint16_t*>(buf.get(nq * 2, 0xFF));
  auto* lse = static_cast<float*>(buf.get(nl * 4, 0xFF));
  if (!q || !k || !v || !o || !lse) {
    std::fprintf(stderr, "flashptx sim: flashptx_sim_register refused a buffer\n");
    std::printf("FAIL\n");
    return 1;
  }
  std::mt19937_64 rng(static_cast<uint64_t>(a.seed));
  fill(rng, fp16, q, nq);
  fill(rng, fp16, k, nk);
  fill(rng, fp16, v, nk);
  std::printf("flashptx sim: %s batch %lld, seqlen_q %lld, seqlen_k %lld, heads %lld/%lld, d%lld, %s%s; policy %s, seed %lld, %lld SMs\n",
              a.direction == "bwd" ? "backward" : "forward", (long long)a.batch, (long long)a.seqlen_q,
              (long long)a.seqlen_k, (long long)a.heads, (long long)a.heads_kv, (long long)a.hdim, a.dtype.c_str(),
              a.causal ? ", causal" : "", a.policy.c_str(), (long long)a.seed, (long long)a.sms);
  std::printf("simulator: %s\n", lib.path.c_str());
  std::fflush(stdout);

  flashptx_fwd_params fp;
  lib.fwd_params_contiguous(&fp, q, k, v, o, lse, a.batch, a.seqlen_q, a.seqlen_k, a.heads, a.heads_kv, a.hdim, dt,
                            a.causal);
  std::vector<Check> checks;
  bool ran_ok = true;
  std::string ran_kernel;
  auto call_failed = [&](const char* what, int32_t st) {
    std::printf("%s: %s: %s\n", what, lib.status_name(static_cast<flashptx_status>(st)), lib.last_error());
    ran_ok = false;
  };
  auto print_info = [&](const char* what, const flashptx_kernel_info& info) {
    std::printf("%s kernel (the launch plan's choice): %s, %d threads, %d CTAs for %lld tiles (%s), %d B shared\n",
                what, info.symbol, info.threads, info.ctas, (long long)info.tiles, info.schedule, info.shared_bytes);
    ran_kernel = info.symbol;
  };
  const auto t0 = std::chrono::steady_clock::now();
  flashptx_kernel_info info{};
  if (int32_t st = lib.fwd_kernel_info(&fp, &info); st != FLASHPTX_OK) call_failed("flashptx_fwd_kernel_info", st);
  else {
    print_info("forward", info);
    if (int32_t s2 = lib.fwd(&fp, nullptr); s2 != FLASHPTX_OK) call_failed("flashptx_fwd", s2);
  }
  const ref::TensorView qv = ref::contiguous_q(q, el, pr), kv = ref::contiguous_kv(k, el, pr), vv = ref::contiguous_kv(v, el, pr);
  if (ran_ok && a.direction == "fwd") {
    const ref::Forward r = ref::forward(pr, qv, kv, vv), s = ref::forward(pr, qv, kv, vv, rd);
    const ref::TensorView ov = ref::contiguous_q(o, el, pr);
    std::vector<float> sl(s.lse.begin(), s.lse.end());
    checks.push_back({"O", ref::max_abs_diff_o(pr, ov, r.o), 2 * max_abs_diff_vec(s.o, r.o) + 1e-5});
    checks.push_back({"LSE", ref::max_abs_diff_lse(pr, lse, r.lse), 2 * ref::max_abs_diff_lse(pr, sl.data(), r.lse) + 1e-5});
  }
  if (ran_ok && a.direction == "bwd") {
    auto* dout = static_cast<uint16_t*>(buf.get(nq * 2, 0));
    auto* dq = static_cast<uint16_t*>(buf.get(nq * 2, 0xFF));
    auto* dk = static_cast<uint16_t*>(buf.get(nk * 2, 0xFF));
    auto* dv = static_cast<uint16_t*>(buf.get(nk * 2, 0xFF));
    fill(rng, fp16, dout, nq);
    flashptx_bwd_params bp;
    lib.bwd_params_contiguous(&bp, q, k, v, o, lse, dout, dq, dk, dv, a.batch, a.seqlen_q, a.seqlen_k, a.heads,
                              a.heads_kv, a.hdim, dt, a.causal);
    int64_t ws = 0;
    if (int32_t st = lib.bwd_workspace_size(&bp, &ws); st != FLASHPTX_OK) call_failed("flashptx_bwd_workspace_size", st);
    else {
      bp.workspace = buf.get(size_t(ws), 0);
      bp.workspace_bytes = ws;
      flashptx_kernel_info bi{};
      if (int32_t s1 = lib.bwd_kernel_info(&bp, &bi); s1 != FLASHPTX_OK) call_failed("flashptx_bwd_kernel_info", s1);
      else {
        print_info("backward", bi);
        if (int32_t s2 = lib.bwd(&bp, nullptr); s2 != FLASHPTX_OK) call_failed("flashptx_bwd", s2);
      }
    }
    if (ran_ok) {
      const ref::TensorView dov = ref::contiguous_q(dout, el, pr);
      const ref::Backward r = ref::backward(pr, qv, kv, vv, dov), s = ref::backward(pr, qv, kv, vv, dov, rd);
      checks.push_back({"dQ", ref::max_abs_diff_o(pr, ref::contiguous_q(dq, el, pr), r.dq),
                        2 * max_abs_diff_vec(s.dq, r.dq) + 1e-5 + max_of(r.dq_env), " + fp32 envelope"});
      checks.push_back({"dK", max_abs_diff_kv(pr, ref::contiguous_kv(dk, el, pr), r.dk),
                        2 * max_abs_diff_vec(s.dk, r.dk) + 1e-5 + max_of(r.dk_env), " + fp32 envelope"});
      checks.push_back({"dV", max_abs_diff_kv(pr, ref::contiguous_kv(dv, el, pr), r.dv),
                        2 * max_abs_diff_vec(s.dv, r.dv) + 1e-5});
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  bool pass = ran_ok;
  for (const Check& c : checks) {
    std::printf("max|%s - ref| = %.3e   (tolerance %.3e: 2 max|same-dtype ref - ref| + 1e-5%s)  %s\n", c.what, c.err,
                c.tol, c.extra, c.ok() ? "ok" : "OVER");
    pass = pass && c.ok();
  }
  const std::string report = lib.last_report();
  std::printf("simulator report: %s\n", report.empty() ? "no hazard, no deadlock, no out-of-bounds access" : "");
  if (!report.empty()) {
    std::printf("%s\n", report.c_str());
    pass = false;
  }
  uint64_t warp_i = 0, thread_i = 0;
  double sim_s = 0;
  lib.stats(&warp_i, &thread_i, &sim_s);
  std::printf("simulated: %llu launches, %llu warp instructions (%llu thread instructions) in %.2f s: %.3g warp instr/s, %.3g thread instr/s (wall %.2f s with the reference)\n",
              (unsigned long long)lib.launches(), (unsigned long long)warp_i, (unsigned long long)thread_i, sim_s,
              sim_s > 0 ? warp_i / sim_s : 0.0, sim_s > 0 ? thread_i / sim_s : 0.0, wall);
  if (!a.trace.empty()) {
    lib.trace(nullptr);  // closes the log
    namespace rd = flashptx::trace_render;
    std::string text, terr;
    rd::Timeline tl;
    const std::string svg = a.trace + ".svg";
    if (!rd::read_trace_file(a.trace, &text, &terr) || !rd::sim_timeline(text, &tl, &terr)) {
      std::printf("trace: %s: %s\n", a.trace.c_str(), terr.c_str());
      pass = false;
    } else {
      FILE* f = std::fopen(svg.c_str(), "w");
      const std::string body = rd::render_svg(tl, "flashptx sim: " + (ran_kernel.empty() ? std::string("?") : ran_kernel) +
                                                      " (policy " + a.policy + ", seed " + std::to_string(a.seed) + ")");
      const bool wrote = f != nullptr && std::fwrite(body.data(), 1, body.size(), f) == body.size();
      if (f != nullptr) std::fclose(f);
      std::printf("trace: event log %s (%zu spans, %zu instants over %.0f steps), timeline %s%s\n", a.trace.c_str(),
                  tl.spans.size(), tl.instants.size(), tl.t_end - tl.t_begin, svg.c_str(), wrote ? "" : " NOT WRITTEN");
      pass = pass && wrote;
    }
  }
  if (!a.kernel.empty() && ran_kernel != a.kernel) {
    std::printf("--kernel %s: the plan ran %s at this shape (the C ABI cannot force a kernel; choose a shape the plan\n"
                "gives to %s)\n", a.kernel.c_str(), ran_kernel.empty() ? "nothing" : ran_kernel.c_str(), a.kernel.c_str());
    pass = false;
  }
  std::printf("%s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}

}  // namespace
}  // namespace flashptx::cli

int cmd_sim(int argc, char** argv) {
  using namespace flashptx::cli;
  SimArgs a;
  const Parsed p = parse_sim_args(argc, argv, &a);
  if (!p.run()) return finish(p);
  if (a.list) return list_kernels();
  return run_sim(a);
}

// The no-GPU path of `flashptx` (cmd_run.cpp): the flagship FA3 forward (bf16, d128) in the
// simulator at a small shape. Returns -1, printing nothing, when the simulator library is missing.
int run_flagship_in_simulator() {
  using namespace flashptx::cli;
  SimLib probe;
  probe.path = sim_lib_path();
  if (void* h = dlopen(probe.path.c_str(), RTLD_NOW | RTLD_LOCAL); h == nullptr) return -1;
  SimArgs a;  // the defaults: 1 x 128 queries x 256 keys, 2 query heads on 1 kv head, d128, bf16
  std::printf("(`flashptx sim --help`: other kernels, shapes, the backward and the scheduler policies)\n");
  std::fflush(stdout);
  return run_sim(a);
}
