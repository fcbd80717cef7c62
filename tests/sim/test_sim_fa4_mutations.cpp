// Protocol mutations of the FA4 forward's own PTX (build/ptx/src/sm100/fa4_fwd.ptx), as tests: each
// case edits one instruction line of the entry the library's plan launches for the shape (found by
// pattern and occurrence, the number of matches asserted), runs flashptx_fwd with the edited module in
// place (flashptx_sim_override_ptx) and expects the launch to fail with the named report. The
// unmutated module passes (no finding; O against fp64 under FlashAttention's rule, LSE).
// sm_100a: executed in the PTX simulator (the runner's child whose device reports sm_100); never run
// on a Blackwell GPU. On a GPU the cases skip.
//
// Which instances are caught, and why the others are not (explored with every occurrence):
//   - tcgen05.wait::ld: 14 in the entry; the softmax's two .x64 loads of S are followed by two waits,
//     either one covering both loads (a wait::ld waits for all prior loads of the thread), so deleting
//     one is correctly no finding; each of the correction's O loads has its own wait (caught).
//   - tcgen05.fence::after_thread_sync: 9; caught where no later fence of the same thread covers the
//     synchronisation (the softmax after s_full, the correction after o_ready); the MMA thread's
//     p_ready / o_rescaled fences cover each other's waits (a fence orders after every prior
//     synchronisation), and the fence after the allocation orders the address's read from shared
//     memory, which the simulator does not track.
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
#include "src/internal.h"
#include "src/plan.h"
#include "tests/gpu/test_util.h"
#include "tools/sim/cudart/flashptx_sim.h"
#include "tools/support/reference.h"

extern "C" int flashptx_sim_override_ptx(const char*, const char*) __attribute__((weak));
extern "C" int flashptx_sim_configure(const char*, uint64_t, int) __attribute__((weak));
extern "C" const char* flashptx_sim_last_report(void) __attribute__((weak));

namespace {

namespace ref = flashptx::ref;

constexpr const char* kEntry = "fa4_fwd_sm100_bf16_d64";
// 130 queries (two tiles, one partial), 160 keys (two blocks, one partial), one head, d64.
constexpr int64_t kSq = 130, kSk = 160, kD = 64;

// A launch: the entry (forced by name through the plan, or nullptr: the plan's rule, which must pick
// kEntry) and its problem.
struct Shape {
  const char* entry;
  bool forced;
  int64_t sq, sk, hq, hkv, d;
  bool causal;
  bool fp16 = false;  // the inputs' and O's dtype: fp16, else bf16
};
constexpr Shape kOneCta{kEntry, false, kSq, kSk, 1, 1, kD, false};
// The 2-CTA (cta_group::2) kernel: 300 queries on each of 3 query heads sharing one KV head (GQA):
// three pair tiles of 512 rows, each partial, on the simulator's 4 SMs (2 pairs resident: cluster
// launch control steals the third); 160 keys (two blocks, one partial).
constexpr const char* kPairEntry = "fa4_fwd_sm100_bf16_d128_2cta";
constexpr Shape kPair{kPairEntry, true, 300, 160, 3, 1, 128, false};
constexpr Shape kPairCausal{kPairEntry, true, 300, 160, 3, 1, 128, true};  // causal, bottom-right aligned
constexpr Shape kPairFp16{"fa4_fwd_sm100_fp16_d128_2cta", true, 300, 160, 3, 1, 128, false, true};

std::string module_text() {
  static const std::string text = [] {
    const std::string path = std::string(FLASHPTX_BUILD_DIR) + "/ptx/src/sm100/fa4_fwd.ptx";
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }();
  return text;
}

// The text with the `which`-th of the entry's lines matching `pattern` (there must be `expected`)
// edited: the match replaced by `replacement` ("$1" etc. from the pattern's groups), or, when that
// is empty, the line deleted.
std::string mutate_in(const std::string& t0, const char* entry, const std::string& pattern, size_t expected, size_t which,
                      const std::string& replacement) {
  std::string t = t0;
  const size_t b = t.find(std::string(".entry ") + entry + "(");
  REQUIRE(b != std::string::npos);
  size_t e = t.find(".entry ", b + 8);
  if (e == std::string::npos) e = t.size();
  const std::regex re(pattern);
  std::vector<std::pair<size_t, size_t>> ls;
  for (size_t pos = b; pos < e;) {
    size_t nl = t.find('\n', pos);
    if (nl == std::string::npos || nl > e) nl = e;
    if (std::regex_search(t.begin() + long(pos), t.begin() + long(nl), re)) ls.push_back({pos, nl - pos});
    pos = nl + 1;
  }
  REQUIRE_MESSAGE(ls.size() == expected, "/" << pattern << "/ matched " << ls.size() << " lines of " << entry);
  if (which == SIZE_MAX) {  // every match, last first (offsets stay valid)
    for (size_t i = ls.size(); i-- > 0;) {
      const std::string line = t.substr(ls[i].first, ls[i].second);
      t.replace(ls[i].first, ls[i].second, std::regex_replace(line, re, replacement));
    }
    return t;
  }
  const std::string line = t.substr(ls[which].first, ls[which].second);
  t.replace(ls[which].first, ls[which].second, replacement.empty() ? "" : std::regex_replace(line, re, replacement));
  return t;
}
std::string mutate(const std::string& pattern, size_t expected, size_t which, const std::string& replacement) {
  return mutate_in(module_text(), kEntry, pattern, expected, which, replacement);
}

struct Outcome {
  flashptx_status status = FLASHPTX_OK;
  std::string report, kernel;
  double o_err = 0, o_tol = 0, lse_err = 0;
};

Outcome run(const std::string& ptx, const char* policy, const Shape& sh = kOneCta) {
  REQUIRE(flashptx_sim_configure(policy, std::random_device{}(), 4) == 0);
  if (!ptx.empty()) REQUIRE_MESSAGE(flashptx_sim_override_ptx(sh.entry, ptx.c_str()) == 0, flashptx_sim_last_report());
  struct Restore {
    bool on;
    const char* entry;
    ~Restore() { if (on) flashptx_sim_override_ptx(entry, nullptr); }
  } restore{!ptx.empty(), sh.entry};
  const int64_t kSq = sh.sq, kSk = sh.sk, kD = sh.d;
  const size_t nq = kSq * kD * sh.hq, nk = kSk * kD * sh.hkv;
  std::vector<uint16_t> q(nq), k(nk), v(nk);
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> nd(0.f, 1.f);
  for (auto* x : {&q, &k, &v})
    for (auto& e : *x) e = sh.fp16 ? flashptx::float_to_fp16(nd(rng)) : flashptx::float_to_bf16(nd(rng));
  const ref::Elem el = sh.fp16 ? ref::Elem::kFP16 : ref::Elem::kBF16;
  const flashptx::Round rd = sh.fp16 ? flashptx::Round::kFP16 : flashptx::Round::kBF16;
  void *dq, *dk, *dv, *dout, *dlse;
  CUDA_REQUIRE(cudaMalloc(&dq, nq * 2));
  CUDA_REQUIRE(cudaMalloc(&dk, nk * 2));
  CUDA_REQUIRE(cudaMalloc(&dv, nk * 2));
  CUDA_REQUIRE(cudaMalloc(&dout, nq * 2));
  CUDA_REQUIRE(cudaMalloc(&dlse, kSq * sh.hq * 4));
  CUDA_REQUIRE(cudaMemcpy(dq, q.data(), nq * 2, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemcpy(dk, k.data(), nk * 2, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemcpy(dv, v.data(), nk * 2, cudaMemcpyHostToDevice));
  CUDA_REQUIRE(cudaMemset(dout, 0xFF, nq * 2));
  CUDA_REQUIRE(cudaMemset(dlse, 0xFF, kSq * sh.hq * 4));
  flashptx_fwd_params p;
  flashptx_fwd_params_contiguous(&p, dq, dk, dv, dout, static_cast<float*>(dlse), 1, kSq, kSk, sh.hq, sh.hkv, kD,
                                 sh.fp16 ? FLASHPTX_FP16 : FLASHPTX_BF16, sh.causal ? 1 : 0);
  Outcome r;
  flashptx::FwdOptions opt;
  if (sh.forced) opt.kernel = sh.entry;
  flashptx_kernel_info info{};  // the plan's kernel (last_launch() keeps only launches that succeeded)
  REQUIRE_MESSAGE(flashptx::fwd_kernel_info(&p, opt, &info) == FLASHPTX_OK, flashptx_last_error());
  r.kernel = info.symbol;
  r.status = flashptx::fwd(&p, opt, nullptr);
  if (r.status != FLASHPTX_OK) r.report = flashptx_sim_last_report();
  std::vector<uint16_t> o(nq);
  std::vector<float> lse(kSq * sh.hq);
  CUDA_REQUIRE(cudaMemcpy(o.data(), dout, nq * 2, cudaMemcpyDeviceToHost));
  CUDA_REQUIRE(cudaMemcpy(lse.data(), dlse, lse.size() * 4, cudaMemcpyDeviceToHost));
  for (void* x : {dq, dk, dv, dout, dlse}) cudaFree(x);
  if (r.status == FLASHPTX_OK) {
    ref::Problem pr;
    pr = flashptx_test::ref_problem(1, kSq, kSk, sh.hq, sh.hkv, kD, sh.causal, 0.f);
    const auto qv = ref::contiguous_q(q.data(), el, pr);
    const auto kv = ref::contiguous_kv(k.data(), el, pr);
    const auto vv = ref::contiguous_kv(v.data(), el, pr);
    const ref::Forward exact = ref::forward(pr, qv, kv, vv);
    const ref::Forward same = ref::forward(pr, qv, kv, vv, rd);
    double same_err = 0;
    for (size_t i = 0; i < same.o.size(); ++i)
      same_err = std::max(same_err, std::fabs(flashptx::round_to(rd, same.o[i]) - exact.o[i]));
    r.o_tol = 2 * same_err + 1e-5;
    r.o_err = ref::max_abs_diff_o(pr, ref::contiguous_q(o.data(), el, pr), exact.o);
    if (std::isnan(r.o_err)) r.o_err = INFINITY;
    r.lse_err = ref::max_abs_diff_lse(pr, lse.data(), exact.lse);
    if (std::isnan(r.lse_err)) r.lse_err = INFINITY;
  }
  return r;
}

void check_caught(const Outcome& r, const std::vector<std::string>& words, const char* entry = kEntry) {
  INFO("report:\n" << r.report.substr(0, 3000));
  CHECK(r.kernel == entry);
  CHECK_MESSAGE(r.status == FLASHPTX_ERR_CUDA, "flashptx_fwd returned " << flashptx_status_name(r.status));
  for (const std::string& w : words) CHECK_MESSAGE(r.report.find(w) != std::string::npos, "no '" << w << "' in the report");
}

// The 2-CTA kernel's module as built, checked to wait at cluster scope everywhere in the entry (44
// waits; src/sm100/fa4_fwd.cuh: the peer's arrives are release.cluster, so the waits acquire at
// cluster scope to synchronize with them). The identity edit fails unless there are exactly 44.
std::string pair_waits_at_cluster_scope() {
  return mutate_in(module_text(), kPairEntry, "mbarrier\\.try_wait\\.parity\\.acquire\\.cluster\\.", 44, SIZE_MAX,
                   "mbarrier.try_wait.parity.acquire.cluster.");
}

bool sim() {
  if (flashptx_sim_override_ptx != nullptr && flashptx_test::on_simulator() && !module_text().empty()) {
    REQUIRE(flashptx_set_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, 1) == FLASHPTX_OK);
    return true;
  }
  MESSAGE("skipped: the FA4 mutations run on the PTX simulator only (build/run_tests_sim, with its fa4_fwd.ptx)");
  return false;
}

}  // namespace

TEST_SUITE("gpu_sm100 fa4 sim mutations") {

TEST_CASE("the unmutated FA4 forward passes on the mutation shape, under two policies") {
  if (!sim()) return;
  for (const char* pol : {"round-robin", "random"}) {
    const Outcome r = run("", pol);
    INFO(pol << ": " << r.report.substr(0, 2000));
    CHECK(r.kernel == kEntry);
    CHECK(r.status == FLASHPTX_OK);
    CHECK(r.o_err <= r.o_tol);
    CHECK(r.lse_err <= 5e-4);
  }
}

TEST_CASE("mutation: the correction's tcgen05.wait::ld of O removed: its registers are used before they are valid") {
  if (!sim()) return;
  check_caught(run(mutate("tcgen05\\.wait::ld", 14, 10, ""), "round-robin"),
               {"hazard", "before the tcgen05.wait::ld"});
}

TEST_CASE("mutation: tcgen05.fence::after_thread_sync missing after s_full (softmax) / after o_ready (correction)") {
  if (!sim()) return;
  check_caught(run(mutate("tcgen05\\.fence::after_thread_sync", 9, 1, ""), "round-robin"),
               {"protocol", "tcgen05.ld of", "no tcgen05.fence::after_thread_sync"});
  check_caught(run(mutate("tcgen05\\.fence::after_thread_sync", 9, 4, ""), "random"),
               {"protocol", "tcgen05.ld of", "no tcgen05.fence::after_thread_sync"});
}

TEST_CASE("mutation: a tcgen05.commit to the wrong mbarrier (the next one): the waiters deadlock or read in flight") {
  if (!sim()) return;
  // the first commit of the entry (the waiters of its barrier never see the phase)
  check_caught(run(mutate("tcgen05\\.commit.*\\[(%r[0-9]+)\\]", 5, 0, "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [$1+8]"), "round-robin"),
               {"deadlock", "mbarrier"});
  // the third: its waiter's barrier completes from another arrival, and S is read in flight
  check_caught(run(mutate("tcgen05\\.commit.*\\[(%r[0-9]+)\\]", 5, 2, "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [$1+8]"), "round-robin"),
               {"hazard", "before that MMA completed"});
}

TEST_CASE("mutation: the tcgen05.dealloc removed: the CTA exits holding its TMEM columns") {
  if (!sim()) return;
  check_caught(run(mutate("tcgen05\\.dealloc", 1, 0, ""), "round-robin"), {"protocol", "exited holding TMEM columns"});
}


TEST_CASE("the 2-CTA forward (cta_group::2) as built, every wait at cluster scope, passes against fp64, under two policies, causal, and fp16") {
  if (!sim()) return;
  const std::string ptx = pair_waits_at_cluster_scope();
  for (const char* pol : {"round-robin", "random"}) {
    const Outcome r = run(ptx, pol, kPair);
    INFO(pol << ": " << r.report.substr(0, 3000));
    CHECK(r.kernel == kPairEntry);
    CHECK(r.status == FLASHPTX_OK);
    CHECK(r.o_err <= r.o_tol);
    CHECK(r.lse_err <= 5e-4);
  }
  const Outcome c = run(ptx, "round-robin", kPairCausal);
  INFO("causal: " << c.report.substr(0, 3000));
  CHECK(c.status == FLASHPTX_OK);
  CHECK(c.o_err <= c.o_tol);
  CHECK(c.lse_err <= 5e-4);
  // the fp16 twin, as built (its own PTX entry; the same source with the other dtype)
  const Outcome h = run("", "random", kPairFp16);
  INFO("fp16: " << h.report.substr(0, 3000));
  CHECK(h.kernel == kPairFp16.entry);
  CHECK(h.status == FLASHPTX_OK);
  CHECK(h.o_err <= h.o_tol);
  CHECK(h.lse_err <= 5e-4);
}

TEST_CASE("mutation: every mbarrier's arrival count one more than its arrivals: the first waiter deadlocks") {
  if (!sim()) return;
  // the entry's one mbarrier.init (a loop over the barriers) initialises each with count + 1
  check_caught(run(mutate("mbarrier\\.init\\.shared::cta\\.b64 \\[(%r[0-9]+)\\], (%r[0-9]+);", 1, 0,
                          "{ .reg .b32 c1; add.u32 c1, $2, 1; mbarrier.init.shared::cta.b64 [$1], c1; }"), "round-robin"),
               {"deadlock", "mbarrier"});
}

TEST_CASE("mutation: the P.V MMAs' D (O) at P's TMEM columns: an MMA reads its A operand while another writes it") {
  if (!sim()) return;
  // the eight K-steps of the first P.V issue (A = P from TMEM, D = O): D moved onto P's first column
  check_caught(run(mutate("tcgen05\\.mma(.*)\\[%r609\\], \\[%r582\\]", 1, 0, "tcgen05.mma$1[%r582], [%r582]"), "round-robin"),
               {"hazard", "reads its A operand from", "before that MMA completed"});
}

TEST_CASE("mutation (2-CTA): one wait back at .acquire.cta: the pair MMA reads the peer's P unordered, a wait with too narrow a scope") {
  if (!sim()) return;
  // the MMA thread's wait before its P.V MMAs (the peer's softmax arrives on it at cluster scope)
  check_caught(run(mutate_in(pair_waits_at_cluster_scope(), kPairEntry, "acquire\\.cluster(\\.shared::cta\\.b64 p, \\[%r266\\])", 1, 0,
                             "acquire.cta$1"), "round-robin", kPair),
               {"protocol", "a wait with too narrow a scope", "tcgen05.mma of the pair reads"}, kPairEntry);
}

TEST_CASE("mutation (2-CTA): the peer's arrive on the leader's barrier sent to its own (mapa rank 1): a deadlock or an extra arrival") {
  if (!sim()) return;
  // the first mapa of the entry: the peer softmax's arrive on the leader (rank 0)
  const Outcome r = run(mutate_in(pair_waits_at_cluster_scope(), kPairEntry, "mapa\\.shared::cluster\\.u32 (%r2743), (%r61), %r2745;", 1, 0,
                                  "mapa.shared::cluster.u32 $1, $2, 1;"), "round-robin", kPair);
  check_caught(r, {"mbarrier"}, kPairEntry);
  CHECK_MESSAGE((r.report.find("deadlock") != std::string::npos || r.report.find("more arrivals") != std::string::npos), r.report.substr(0, 2000));
}

TEST_CASE("mutation (2-CTA): every wait of the entry back at .acquire.cta (the kernel before its fix): a wait with too narrow a scope") {
  if (!sim()) return;
  check_caught(run(mutate_in(module_text(), kPairEntry, "mbarrier\\.try_wait\\.parity\\.acquire\\.cluster\\.", 44, SIZE_MAX,
                             "mbarrier.try_wait.parity.acquire.cta."), "round-robin", kPair),
               {"protocol", "a wait with too narrow a scope"}, kPairEntry);
}

}  // TEST_SUITE
