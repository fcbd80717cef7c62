// `flashptx ladder`: the attention ladder's table and lessons (tools/flashptx/ladder.h).
//
//   flashptx ladder              the table: rung, kernel, SASS facts from the goldens, TFLOP/s
//   flashptx ladder --diff N     the lesson of rung N: the normalised SASS diff of rung N-1 -> N,
//                                with the protocol lines (mbarrier, TMA, setmaxnreg, named barriers,
//                                wgmma fence/commit/wait) counted first and marked "<==" in the diff
//   flashptx ladder --bench      every rung's TFLOP/s on this machine's Hopper GPU (ladder_bench)
// Exit status: 0; 1 when a golden or the results file cannot be read, or (--bench) there is no
// Hopper GPU or a CUDA call fails (one line says which); 2 on a usage error.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "tests/kernels/ladder.h"
#include "tools/flashptx/commands.h"
#include "tools/flashptx/device.h"
#include "tools/flashptx/ladder.h"
#include "tools/sass/audit.h"
#include "tools/sass/sass_diff.h"
#include "tools/support/gpu_reference.h"

#ifndef FLASHPTX_ROOT
#define FLASHPTX_ROOT "."
#endif

namespace flashptx::cli {

namespace {

std::vector<std::string> listing_lines(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') v.push_back(line);
  return v;
}

std::string opcode(const std::string& line) {
  std::istringstream in(line);
  std::string t;
  in >> t;
  if (!t.empty() && t[0] == '@') in >> t;
  return t;
}

bool starts(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// The summary's order of the protocol families.
const char* const kProtocols[] = {"mbarrier", "TMA", "proxy fence", "setmaxnreg", "named barrier", "wgmma fence",
                                  "wgmma commit", "wgmma wait"};

std::string golden_path(const std::string& dir, const LadderRung& r) {
  return dir + "/sm_90a/" + r.kernel + ".sass";
}

}  // namespace

const std::vector<LadderRung>& ladder_rungs() {
  static const std::vector<LadderRung> rungs = {
      {"1", "ladder_1_kernel", "tests/kernels/ladder_1.cu",
       "one warpgroup, 64 rows: plain 16-byte loads + __syncthreads, wgmma SS (QK) and RS (PV), online softmax"},
      {"2", "ladder_2_kernel", "tests/kernels/ladder_2.cu",
       "+ TMA loads completing on an mbarrier (arrive.expect_tx, parity wait), one stage"},
      {"3", "ladder_3_kernel", "tests/kernels/ladder_3.cu",
       "+ a producer warpgroup (setmaxnreg 24/240) and a 2-stage K/V ring (full/empty mbarriers)"},
      {"4", "ladder_4_kernel", "tests/kernels/ladder_4.cu",
       "+ 2 consumer warpgroups (128 rows, K/V loaded once for both) taking turns by the pingpong token ring"},
      {"fa3", "fa3_fwd_sm90_bf16_d128_n128", "src/sm90/fa3_fwd.cuh",
       "+ softmax(n) overlapped with PV(n-1) in each warpgroup, TMA-store epilogue, LSE, masks, persistent tiles"},
  };
  return rungs;
}

SassFacts sass_facts(const std::string& text) {
  SassFacts f;
  f.found = true;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '#') {
      const size_t at = line.find("REG:");
      if (starts(line, "# resources:") && at != std::string::npos) f.reg = std::atoi(line.c_str() + at + 4);
      continue;
    }
    const std::string op = opcode(line);
    if (op.empty() || op.back() == ':') continue;  // a label
    ++f.instructions;
    if (starts(op, "HGMMA.")) ++f.hgmma;
    if (starts(op, "UTMALDG.")) ++f.utmaldg;
    if (starts(op, "SYNCS.")) ++f.syncs;
    if (starts(op, "BAR.")) ++f.bar;
    if (starts(op, "USETMAXREG.")) ++f.setmaxnreg;
  }
  return f;
}

std::string ladder_result(const std::string& results_text, const std::string& id) {
  std::istringstream in(results_text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    std::string key, value;
    if (!(l >> key) || key[0] == '#' || key != id || !(l >> value)) continue;
    return value;
  }
  return "";
}

std::string ladder_table(const std::string& golden_dir, const std::string& results_text) {
  std::ostringstream o;
  o << "The attention ladder: bf16, d128, non-causal; one protocol added per rung (README \"Attention ladder\").\n"
       "SASS facts are counted in the committed goldens (sass_golden/sm_90a/<kernel>.sass): REG registers per\n"
       "thread at launch, INSTR instructions, HGMMA tensor-core MMAs, UTMALDG TMA tensor loads, SYNCS mbarrier\n"
       "operations, BAR named-barrier instructions, SETMAXNREG register moves. TFLOP/s: measured on the H200 at\n"
       "batch 4, seqlen 4096, 16 heads (tools/ladder/h200_tflops.txt); bought: TFLOP/s over the previous rung's.\n\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-5s %-28s %4s %6s %6s %8s %6s %4s %11s %-17s %s\n", "rung", "kernel", "REG", "INSTR",
                "HGMMA", "UTMALDG", "SYNCS", "BAR", "SETMAXNREG", "TFLOP/s", "bought");
  o << buf;
  double prev = 0;
  for (const LadderRung& r : ladder_rungs()) {
    std::string text;
    const bool have = sass::read_file(golden_path(golden_dir, r), &text);
    const SassFacts f = have ? sass_facts(text) : SassFacts();
    const std::string t = ladder_result(results_text, r.id);
    const double tf = t.empty() ? 0 : std::atof(t.c_str());
    std::string bought = "-";
    if (tf > 0 && prev > 0) {
      char b[32];
      std::snprintf(b, sizeof b, "x%.2f", tf / prev);
      bought = b;
    }
    prev = tf;
    if (!have) {
      std::snprintf(buf, sizeof buf, "%-5s %-28s %s\n", r.id, r.kernel, "(no golden)");
    } else {
      std::snprintf(buf, sizeof buf, "%-5s %-28s %4d %6d %6d %8d %6d %4d %11d %-17s %s\n", r.id, r.kernel, f.reg,
                    f.instructions, f.hgmma, f.utmaldg, f.syncs, f.bar, f.setmaxnreg,
                    t.empty() ? "not measured yet" : t.c_str(), bought.c_str());
    }
    o << buf;
  }
  o << "\n";
  for (const LadderRung& r : ladder_rungs()) o << r.id << (r.id[1] ? ": " : ":   ") << r.adds << "  (" << r.source << ")\n";
  o << "\nflashptx ladder --diff N prints the lesson of rung N: the SASS diff of rung N-1 -> N (N = 2 .. "
    << ladder_rungs().size() << ").\n";
  return o.str();
}

static const char* protocol_of(const std::string& line) {
  const std::string op = opcode(line);
  if (starts(op, "SYNCS.")) return "mbarrier";
  if (starts(op, "UTMA") || starts(op, "UBLKCP")) return "TMA";
  if (starts(op, "FENCE.VIEW.ASYNC")) return "proxy fence";
  if (starts(op, "USETMAXREG.")) return "setmaxnreg";
  if (starts(op, "BAR.")) return "named barrier";
  if (starts(op, "WARPGROUP.ARRIVE")) return "wgmma fence";
  if (starts(op, "WARPGROUP.DEPBAR")) return "wgmma wait";
  if (starts(op, "HGMMA.") && line.find("gsb0") != std::string::npos) return "wgmma commit";
  return nullptr;
}

static std::string mark_lesson(const std::string& diff) {
  std::map<std::string, std::pair<int, int>> count;  // family -> (added, removed)
  std::ostringstream marked;
  std::istringstream in(diff);
  for (std::string line; std::getline(in, line);) {
    const bool change = (line[0] == '+' || line[0] == '-') && !starts(line, "+++") && !starts(line, "---");
    const char* p = change ? protocol_of(line.substr(1)) : nullptr;
    if (p == nullptr) {
      marked << line << "\n";
      continue;
    }
    (line[0] == '+' ? count[p].first : count[p].second) += 1;
    marked << line << std::string(line.size() < 60 ? 60 - line.size() : 1, ' ') << "<== " << p << "\n";
  }
  std::ostringstream o;
  o << "the lesson: protocol instructions this rung adds (+) and removes (-), marked <== in the diff below\n";
  bool any = false;
  for (const char* p : kProtocols) {
    if (!count.count(p)) continue;
    any = true;
    char b[96];
    std::snprintf(b, sizeof b, "  %-14s +%-4d -%d\n", p, count[p].first, count[p].second);
    o << b;
  }
  if (!any) o << "  (none: the rung changes no protocol instruction)\n";
  o << "  (mbarrier SYNCS.*, TMA UTMA*/UBLKCP, proxy fence FENCE.VIEW.ASYNC, setmaxnreg USETMAXREG.*, named barrier\n"
       "   BAR.*, wgmma fence WARPGROUP.ARRIVE, commit the HGMMA that carries gsb0, wait WARPGROUP.DEPBAR)\n";
  return o.str() + marked.str();
}

std::string ladder_diff(const std::string& golden_dir, int n, std::string* err) {
  const auto& rs = ladder_rungs();
  if (n < 2 || n > static_cast<int>(rs.size())) {
    *err = "--diff must be between 2 and " + std::to_string(rs.size()) + ", got " + std::to_string(n);
    return "";
  }
  const LadderRung &a = rs[n - 2], &b = rs[n - 1];
  std::string ta, tb;
  for (const auto& [r, t] : {std::pair<const LadderRung*, std::string*>{&a, &ta}, {&b, &tb}})
    if (!sass::read_file(golden_path(golden_dir, *r), t)) {
      *err = "cannot read " + golden_path(golden_dir, *r);
      return "";
    }
  const SassFacts fa = sass_facts(ta), fb = sass_facts(tb);
  std::ostringstream o;
  o << "rung " << a.id << " -> " << b.id << ": " << b.adds << "\n"
    << "instructions " << fa.instructions << " -> " << fb.instructions << ", HGMMA " << fa.hgmma << " -> " << fb.hgmma
    << ", UTMALDG " << fa.utmaldg << " -> " << fb.utmaldg << ", SYNCS " << fa.syncs << " -> " << fb.syncs << ", BAR "
    << fa.bar << " -> " << fb.bar << ", SETMAXNREG " << fa.setmaxnreg << " -> " << fb.setmaxnreg << ", REG " << fa.reg
    << " -> " << fb.reg << "\n";
  o << mark_lesson(sass::render_diff(listing_lines(ta), listing_lines(tb), std::string(a.kernel) + ".sass",
                                     std::string(b.kernel) + ".sass"));
  return o.str();
}

std::string ladder_bench_line(const std::string& id, double flops, double ms) {
  char b[96];
  std::snprintf(b, sizeof b, "ladder-tflops: %s %.1f   (%.3f ms)\n", id.c_str(), flops / ms * 1e-9, ms);
  return b;
}

namespace {

// Median of 5 rounds of `iters` launches (after 5 warm-up launches), CUDA events on the legacy
// stream, milliseconds per launch; false (the error in *e) when a CUDA call fails.
template <class Launch>
bool median_ms(Launch launch, int iters, double* ms, cudaError_t* e) {
  for (int i = 0; i < 5; ++i) launch();
  if ((*e = cudaDeviceSynchronize()) != cudaSuccess) return false;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  std::vector<float> rounds;
  if ((*e = cudaEventCreate(&e0)) == cudaSuccess && (*e = cudaEventCreate(&e1)) == cudaSuccess) {
    for (int r = 0; r < 5 && *e == cudaSuccess; ++r) {
      cudaEventRecord(e0);
      for (int i = 0; i < iters; ++i) launch();
      cudaEventRecord(e1);
      float t = 0;
      if ((*e = cudaEventSynchronize(e1)) == cudaSuccess && (*e = cudaEventElapsedTime(&t, e0, e1)) == cudaSuccess)
        rounds.push_back(t / iters);
    }
  }
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  if (*e == cudaSuccess) *e = cudaGetLastError();
  if (*e != cudaSuccess) return false;
  std::sort(rounds.begin(), rounds.end());
  *ms = rounds[2];
  return true;
}

}  // namespace

int ladder_bench(int64_t iters) {
  const Gpu g = probe_gpu();
  if (!g.hopper) {
    std::fprintf(stderr, "flashptx ladder --bench: %s; nothing was timed\n", g.why.c_str());
    return 1;
  }
  constexpr int kB = kBenchBatch, kS = kBenchSeqlen, kH = kBenchHeads, kD = flashptx_test::ladder::kHeadDim;
  const int64_t n = static_cast<int64_t>(kB) * kS * kH * kD;  // elements of Q, K, V and O each
  const double flops = 4.0 * kB * kH * static_cast<double>(kS) * kS * kD;
  void* buf[4] = {};
  auto fail = [&](const char* what, cudaError_t e) {
    std::fprintf(stderr, "flashptx ladder --bench: %s: %s\n", what, cudaGetErrorString(e));
    for (void* b : buf) cudaFree(b);
    return 1;
  };
  for (int i = 0; i < 4; ++i)
    if (const cudaError_t e = cudaMalloc(&buf[i], n * 2); e != cudaSuccess) return fail("cudaMalloc", e);
  for (int i = 0; i < 3; ++i)
    if (const cudaError_t e = flashptx::gpuref::fill_random(buf[i], n, FLASHPTX_BF16, 0xbe7c + i, 1.f, nullptr);
        e != cudaSuccess)
      return fail("filling the inputs", e);
  std::printf("flashptx ladder --bench on %s: B=%d S=%d H=%d d=%d bf16 non-causal; CUDA events, 5 warm-ups, "
              "median of 5 rounds of %lld launches; rungs 1-4 the release build of tests/kernels/ladder_*.cu, "
              "fa3 flashptx_fwd\n",
              g.name.c_str(), kB, kS, kH, kD, static_cast<long long>(iters));
  namespace ld = flashptx_test::ladder;
  ld::Problem lp;
  lp.q = buf[0]; lp.k = buf[1]; lp.v = buf[2]; lp.o = buf[3];
  lp.batch = kB; lp.seqlen_q = kS; lp.seqlen_k = kS; lp.heads = kH;
  flashptx_fwd_params fp;
  flashptx_fwd_params_contiguous(&fp, buf[0], buf[1], buf[2], buf[3], nullptr, kB, kS, kS, kH, kH, kD, FLASHPTX_BF16, 0);
  for (int rung = 1; rung <= ld::kRungs + 1; ++rung) {
    const std::string id = rung <= ld::kRungs ? std::to_string(rung) : std::string("fa3");
    double ms = 0;
    cudaError_t e = cudaSuccess;
    bool ok;
    if (rung <= ld::kRungs) {
      if ((e = ld::launch(rung, lp)) != cudaSuccess) return fail(("rung " + id + " launch").c_str(), e);
      ok = median_ms([&] { ld::launch(rung, lp); }, static_cast<int>(iters), &ms, &e);
    } else {
      if (flashptx_fwd(&fp, nullptr) != FLASHPTX_OK) {
        std::fprintf(stderr, "flashptx ladder --bench: flashptx_fwd: %s\n", flashptx_last_error());
        for (void* b : buf) cudaFree(b);
        return 1;
      }
      ok = median_ms([&] { flashptx_fwd(&fp, nullptr); }, static_cast<int>(iters), &ms, &e);
    }
    if (!ok) return fail(("timing " + id).c_str(), e);
    std::fputs(ladder_bench_line(id, flops, ms).c_str(), stdout);
    std::fflush(stdout);
  }
  for (void* b : buf) cudaFree(b);
  return 0;
}

Parsed parse_ladder_args(int argc, const char* const* argv, LadderCmdArgs* a) {
  *a = LadderCmdArgs();
  Options o("ladder", "flashptx ladder [--diff N | --bench [--iters N]]",
            "The attention ladder (tests/kernels/ladder_*.cu, README \"Attention ladder\"): per rung, what it\n"
            "adds, SASS facts counted in its committed golden, and the TFLOP/s measured on the H200\n"
            "(tools/ladder/h200_tflops.txt; --bench measures them on this machine's GPU).");
  o.integer("--diff", &a->diff, 2, static_cast<int64_t>(ladder_rungs().size()),
            "the lesson of rung N: the normalised SASS diff of rung N-1 -> N");
  o.flag("--bench", &a->bench,
         "time every rung and the FA3 forward on this GPU (B=4 S=4096 H=16 d128 non-causal)");
  o.integer("--iters", &a->iters, 1, 10000, "with --bench: launches per timed round (default 20)");
  const Parsed p = o.parse(argc, argv);
  if (!p.run()) return p;
  if (a->bench && o.given("--diff")) return o.error("--diff and --bench do not go together");
  if (!a->bench && o.given("--iters")) return o.error("--iters goes with --bench");
  return p;
}

}  // namespace flashptx::cli

int cmd_ladder(int argc, char** argv) {
  using namespace flashptx::cli;
  LadderCmdArgs a;
  const Parsed p = parse_ladder_args(argc, argv, &a);
  if (!p.run()) return finish(p);
  if (a.bench) return ladder_bench(a.iters);
  const std::string golden_dir = std::string(FLASHPTX_ROOT) + "/sass_golden";
  if (a.diff > 0) {
    std::string err;
    const std::string d = ladder_diff(golden_dir, static_cast<int>(a.diff), &err);
    if (!err.empty()) {
      std::fprintf(stderr, "flashptx ladder: %s\n", err.c_str());
      return 1;
    }
    std::fputs(d.c_str(), stdout);
    return 0;
  }
  std::string results;
  const std::string results_path = std::string(FLASHPTX_ROOT) + "/tools/ladder/h200_tflops.txt";
  if (!flashptx::sass::read_file(results_path, &results)) {
    std::fprintf(stderr, "flashptx ladder: cannot read %s\n", results_path.c_str());
    return 1;
  }
  std::fputs(ladder_table(golden_dir, results).c_str(), stdout);
  return 0;
}
