// Failure labs on compiled code: each lab takes a real golden listing from sass_golden/sm_90a (the
// normalised SASS of a shipped kernel, committed), applies one named mutation that breaks one rule of
// the kernel's protocol, and runs the ordering checks on the result. The unmutated listing must pass
// its kernel's .check; the mutated one must fail, and the failure must name the directive that
// holds the broken rule. No disassembler and no GPU are needed: the listings are read from the tree.
//
// Labs (listed in docs/PROTOCOLS.md under "Pingpong", "The two-stage overlap" and
// "Deterministic writer order"):
//   overlap_not_compiled          (the two-stage overlap; a drawn timeline is not compiled fact) the
//                                 same source, but the compiled steady state waits for PV(j-1)
//                                 (wait_group 0) before its first exponential: the schedule a
//                                 diagram shows is gone, and only the audit of the listing says so.
//   temporaries_spill             (register budget) S, P or mask temporaries outgrow the consumer's
//                                 register grant and ptxas spills: local memory in the resources and
//                                 LDL/STL in the listing; the audit's spill rule names them.
//   another_specialization        (artifact identity) a listing of another specialization (d64)
//                                 audited under the d128 kernel's checks: its MMA shapes fail them.
//   wait_after_each_gemm          (the two-stage overlap) a wgmma helper that waits for its own group
//                                 after every commit where the caller asked it not to wait: the QK
//                                 and PV batches are serialised and the overlap is gone. The
//                                 forward's .check first held only the order of the batches and of
//                                 the waits it expects, so this lab found a gap: an extra wait
//                                 passed. The check now forbids any wgmma wait between the QK and
//                                 PV batches (fa3_fwd_sm90_pingpong_mainloop.check.inc) and fails on
//                                 this mutation; the lab's own directives (kNoWaitBetweenBatches)
//                                 stay as the narrower statement.
//   wait_group_0_for_1            (the two-stage overlap) the caller's wait_group(1) compiled as
//                                 wait_group(0): still correct, but PV(j-1) is retired before the
//                                 first exponential; the forward's .check fails.
//   dq_published_before_fence     (backward dQ relay) the MMA warpgroup arrives on dq_full before the
//                                 proxy fence of its dQ stores: the writer's bulk reduce-add may read
//                                 shared memory the async proxy has not seen.
//   dq_reduce_before_fence        (backward dQ relay, deterministic) the writer issues its bulk
//                                 reduce-add before the proxy fence that follows its acquire of the
//                                 semaphore turn.
//   fa4_dq_before_ds_ready        (FA4 backward, sm_100a golden) the MMA thread's wait on ds_ready
//                                 moves below the dK and dQ MMAs that read dS^T.
//   fa4_dq_reduce_before_proxy_fence (FA4 backward) the reduction's bulk reduce-add of a dQ chunk
//                                 moves above the proxy fence of its staging stores.
//   fa4_init_extra_stage          (FA4 backward) one more mbarrier init than the plan has barriers
//                                 (an init loop over a stage that does not exist).
//   fa4_p_ready_before_tmem_fence (FA4 backward) the compute warps arrive on p_ready before the
//                                 tcgen05 fence that orders their P^T stores.
//   lock_released_before_bulk_done (backward dQ relay, deterministic) the writer releases the
//                                 semaphore (fence, membar, release add) right after issuing the bulk
//                                 reduce-add, before waiting for its completion: the next writer may
//                                 add first, and the declared fp32 summation order is lost.
//   pv_after_softmax              (the two-stage overlap, at run time) the listing keeps its order, so
//                                 the traced kernel's golden still passes its .check, but the measured
//                                 H200 trace is rewritten so that each PV(j-1) starts when softmax(j)
//                                 ends (tools/models/twostage_model.h): only the clock shows the lost
//                                 overlap, and trace_render::own_overlap names it.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/host/file_text.h"
#include "tools/models/twostage_model.h"
#include "tools/sass/sass_check.h"
#include "tools/sass/sass_listing.h"
#include "tools/support/trace_render.h"

namespace fs = std::filesystem;
using flashptx::sass::CheckResult;
using flashptx::sass::run_checks;

using flashptx_test::file_text;

namespace {

using Listing = std::vector<std::string>;

// The FA4 kernels' goldens are sm_100a listings (never executed: no Blackwell GPU); the rest sm_90a.
fs::path golden_dir(const std::string& kernel) {
  return fs::path(FLASHPTX_ROOT) / "sass_golden" / (kernel.rfind("fa4_", 0) == 0 ? "sm_100a" : "sm_90a");
}

Listing read_listing(const std::string& kernel) {
  const fs::path p = golden_dir(kernel) / (kernel + ".sass");
  std::ifstream in(p);
  REQUIRE_MESSAGE(in.good(), "cannot read " << p.string());
  Listing out;
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

CheckResult check_kernel(const std::string& kernel, const Listing& listing) {
  const fs::path c = golden_dir(kernel) / (kernel + ".check");
  return run_checks(file_text(c), c.string(), listing);
}

std::string joined(const CheckResult& r) {
  std::string s;
  for (const std::string& e : r.errors) s += e + "\n";
  return s;
}

bool has(const std::string& line, const std::string& pat) { return line.find(pat) != std::string::npos; }

// The index of the first line at or after `from` that contains `pat` (REQUIREd to exist).
size_t find(const Listing& l, const std::string& pat, size_t from = 0) {
  for (size_t i = from; i < l.size(); ++i)
    if (has(l[i], pat)) return i;
  FAIL("mutation anchor not found: " << pat);
  return l.size();
}

// Moves line `from` so that it sits just before the line now at `before` (before > from or not).
void move_line(Listing& l, size_t from, size_t before) {
  const std::string s = l[from];
  l.erase(l.begin() + static_cast<long>(from));
  if (before > from) --before;
  l.insert(l.begin() + static_cast<long>(before), s);
}

// ---- the mutations ----------------------------------------------------------------------------------
// Each is applied to a copy of the golden listing and keeps every other line in place.

// After every wgmma commit ("HGMMA ... gsb0") of the consumer's main loops, a wait for that group.
void wait_after_each_gemm(Listing& l) {
  for (size_t i = 0; i < l.size(); ++i)
    if (has(l[i], "HGMMA.") && has(l[i], ", gsb0")) l.insert(l.begin() + static_cast<long>(++i), "    WARPGROUP.DEPBAR.LE gsb0, 0x0");
}

// Every wait_group(1) becomes wait_group(0).
void wait_group_0_for_1(Listing& l) {
  for (std::string& s : l)
    if (has(s, "WARPGROUP.DEPBAR.LE gsb0, 0x1")) s.replace(s.find("0x1"), 3, "0x0");
}

// MMA warpgroup, first dQ hand-off: the proxy fence after the dQ stores (STS.128) moves below the
// arrive on dq_full.
void dq_published_before_fence(Listing& l) {
  const size_t sts = find(l, "STS.128", find(l, "BAR.SYNC.DEFER_BLOCKING 0x2, 0x100"));
  const size_t fence = find(l, "FENCE.VIEW.ASYNC.S", sts);
  const size_t arrive = find(l, "SYNCS.ARRIVE.TRANS64.A1T0", sts);
  REQUIRE(fence < arrive);
  move_line(l, fence, arrive + 1);
}

// dQ writer: the bulk reduce-add moves above the proxy fence that follows the semaphore acquire.
void dq_reduce_before_fence(Listing& l) {
  const size_t writer = find(l, "USETMAXREG.DEALLOC.CTAPOOL");
  const size_t fence = find(l, "FENCE.VIEW.ASYNC.G", writer);
  const size_t red = find(l, "UBLKRED.G.S.ADD.F32", fence);
  move_line(l, red, fence);
}

// dQ writer: the semaphore release (the proxy fence, the GPU-scope membar and the release add that
// follow the completion wait) moves up to just after the bulk reduce-add, ahead of the wait.
void lock_released_before_bulk_done(Listing& l) {
  const size_t writer = find(l, "USETMAXREG.DEALLOC.CTAPOOL");
  const size_t red = find(l, "UBLKRED.G.S.ADD.F32", writer);
  const size_t wait1 = find(l, "DEPBAR.LE SB0, 0x0", red);
  const size_t wait2 = find(l, "DEPBAR.LE SB0, 0x0", wait1 + 1);
  const size_t fence = find(l, "FENCE.VIEW.ASYNC.G", wait2);
  const size_t membar = find(l, "MEMBAR.ALL.GPU", fence);
  const size_t release = find(l, "REDG.E.ADD.STRONG.GPU", membar);
  // Move the three, in order, to sit right after the reduce-add.
  size_t at = red + 1;
  for (size_t idx : {fence, membar, release}) { move_line(l, idx, at); ++at; }
  CHECK(find(l, "REDG.E.ADD.STRONG.GPU", red) < find(l, "DEPBAR.LE SB0, 0x0", red));
}

// Steady state: each loop's wait_group 0 (PV(j-1) retired) moves up to just after its wait_group 1,
// ahead of every exponential of softmax(j).
void overlap_not_compiled(Listing& l) {
  size_t from = 0;
  for (;;) {
    size_t w1 = l.size();
    for (size_t i = from; i < l.size(); ++i)
      if (has(l[i], "WARPGROUP.DEPBAR.LE gsb0, 0x1")) { w1 = i; break; }
    if (w1 == l.size()) break;
    const size_t w0 = find(l, "WARPGROUP.DEPBAR.LE gsb0, 0x0", w1);
    REQUIRE(find(l, "MUFU.EX2", w1) < w0);  // the golden overlaps: exponentials before the wait
    move_line(l, w0, w1 + 1);
    from = w1 + 2;
  }
}

// Spills: the resources line reports local memory, and a store/load pair to it appears in the main
// loop (around the first exponential of the steady state).
void temporaries_spill(Listing& l) {
  for (std::string& s : l)
    if (s.rfind("# resources:", 0) == 0) s.replace(s.find("LOCAL:0"), 7, "LOCAL:64");
  const size_t at = find(l, "MUFU.EX2", find(l, "WARPGROUP.DEPBAR.LE gsb0, 0x1"));
  l.insert(l.begin() + static_cast<long>(at), "    STL [R+#], R");
  l.insert(l.begin() + static_cast<long>(at) + 2, "    LDL R, [R+#]");
}

// The resources and listing of a golden, as the audit sees them.
std::string spill_verdict(const Listing& l) {
  std::string res;
  for (const std::string& s : l)
    if (s.rfind("# resources: ", 0) == 0) res = s.substr(13);
  REQUIRE(!res.empty());
  const auto usage = flashptx::sass::parse_resource_usage("Function k:\n" + res + "\n");
  flashptx::sass::Listing listing;
  for (const std::string& s : l)
    if (!s.empty() && s[0] != '#') listing.lines.push_back(s);
  return flashptx::sass::spill_reason(usage.at("k"), listing);
}

// ---- FA4 backward (sm_100a, src/sm100/fa4_bwd.cuh) ----
// MMA thread: the wait on ds_ready moves below the dQ MMAs (dK and dQ read dS^T before the compute
// warps have published it).
void fa4_dq_before_ds_ready(Listing& l) {
  const size_t mma = find(l, "USETMAXREG.DEALLOC.CTAPOOL 0x58");
  const size_t dv = find(l, "UTCHMMA tmem[UR]", mma);                 // dV: the TS MMAs
  const size_t wait = find(l, "SYNCS.PHASECHK.TRANS64.TRYWAIT", dv);  // ds_ready
  const size_t commit = find(l, "UTCBAR", wait);                      // dq_full, after dK and dQ
  move_line(l, wait, commit);
}
// Reduction: the bulk reduce-add of a dQ chunk moves above the proxy fence of its staging stores.
void fa4_dq_reduce_before_proxy_fence(Listing& l) {
  const size_t red_wg = find(l, "USETMAXREG.TRY_ALLOC.CTAPOOL UP, 0x98");
  const size_t fence = find(l, "FENCE.VIEW.ASYNC.S", red_wg);
  const size_t red = find(l, "UBLKRED.G.S.ADD.F32", fence);
  move_line(l, red, fence);
}
// Barrier initialisation over one stage more than exists: one more SYNCS.EXCH.64 (the init of a
// barrier slot past the run, which resets the first barrier of the next kind: the bug the count holds).
void fa4_init_extra_stage(Listing& l) {
  const size_t init = find(l, "SYNCS.EXCH.64");
  l.insert(l.begin() + static_cast<long>(init), l[init]);
}
// Compute: P^T's tcgen05 fence (wait::st + fence::before_thread_sync) moves below the p_ready arrive.
void fa4_p_ready_before_tmem_fence(Listing& l) {
  const size_t comp = find(l, "USETMAXREG.TRY_ALLOC.CTAPOOL UP, 0x88");
  const size_t fence = find(l, "FENCE.VIEW.ASYNC.T", comp);
  const size_t arrive = find(l, "SYNCS.ARRIVE.TRANS64.A1T0", fence);
  move_line(l, fence, arrive + 1);
}

// The lab-owned directives of wait_after_each_gemm: within one steady-state step no wgmma wait
// between the QK and PV batches, and none between the PV batch and the caller's wait_group(1).
// (The startup's QK(0), also taken under the token ring, ends with its full wait: skipped first.)
const char* kNoWaitBetweenBatches =
    "CHECK-LABEL: USETMAXREG.TRY_ALLOC.CTAPOOL UP, 0xf0\n"
    // the full-width startup's QK(0) (the half-width one before it is 64x64) and its full wait
    "CHECK: HGMMA.64x128x16.F32.BF16 R, gdesc[UR], RZ, !UPT\n"
    "CHECK: WARPGROUP.DEPBAR.LE gsb0, 0x0\n"
    "CHECK: BAR.SYNC.DEFER_BLOCKING R, 0x100\n"
    "CHECK: HGMMA.64x128x16.F32.BF16 R, gdesc[UR], RZ, !UPT\n"
    "CHECK-NOT: WARPGROUP.DEPBAR\n"
    "CHECK: HGMMA.64x128x16.F32.BF16 R, R, gdesc[UR].tnspB, R, UP\n"
    "CHECK-NOT: WARPGROUP.DEPBAR.LE gsb0, 0x0\n"
    "CHECK: WARPGROUP.DEPBAR.LE gsb0, 0x1\n";

// ---- FA4 backward, 2-CTA (sm_100a, src/sm100/fa4_bwd_pair.cuh) ----
// The dS exchange: the DSMEM bulk copy moves above the sending warpgroup's barrier (the half is sent
// before all of its writers' stores and proxy fences).
void fa4_pair_send_before_barrier(Listing& l) {
  const size_t comp = find(l, "USETMAXREG.TRY_ALLOC.CTAPOOL UP, 0x88");
  const size_t bar = find(l, "BAR.SYNC.DEFER_BLOCKING 0x3, 0x80", comp);
  const size_t copy = find(l, "UBLKCP.S.S", bar);
  move_line(l, copy, bar);
}
// The leader's MMA thread: the wait on ds_ready (which counts the relays' x_full) moves below the dQ
// MMAs (dQ reads XA before the peer's half has landed).
void fa4_pair_dq_before_exchange(Listing& l) {
  const size_t mma = find(l, "USETMAXREG.DEALLOC.CTAPOOL 0x58");
  const size_t p_free = find(l, "UTCBAR.2CTA [UR], URZ", mma);        // after dV: the local p_free commit
  const size_t wait = find(l, "SYNCS.PHASECHK.TRANS64.TRYWAIT", p_free);  // ds_ready
  const size_t commit = find(l, "UTCBAR.2CTA.MULTICAST", wait);       // dq_full, after dK and dQ
  move_line(l, wait, commit);
}
// The reduction: this CTA's qdo_empty arrive (its staging in QS / dOS read) moves above the wait for
// the bulk reads (the next Q/dO load may overwrite staging still being read).
void fa4_pair_qdo_empty_before_bulk_read(Listing& l) {
  const size_t red_wg = find(l, "USETMAXREG.TRY_ALLOC.CTAPOOL UP, 0x98");
  const size_t add = find(l, "UBLKRED.G.S.ADD.F32", red_wg);
  const size_t wait = find(l, "DEPBAR.LE SB0, 0x0", add);
  const size_t arrive = find(l, "SYNCS.ARRIVE.TRANS64.A1T0", wait);
  move_line(l, arrive, wait);
}

struct Lab {
  const char* name;
  const char* kernel;
  std::function<void(Listing&)> mutate;
  const char* expect;  // a substring of the failure: the directive's pattern and how it failed
};

const Lab kLabs[] = {
    {"wait_after_each_gemm", "fa3_fwd_sm90_bf16_d128_n128", wait_after_each_gemm,
     "CHECK-NOT: WARPGROUP.DEPBAR: found at"},
    {"wait_group_0_for_1", "fa3_fwd_sm90_bf16_d128_n128", wait_group_0_for_1,
     "CHECK: WARPGROUP.DEPBAR.LE gsb0, 0x1: not found"},
    {"overlap_not_compiled", "fa3_fwd_sm90_bf16_d128_n128", overlap_not_compiled, "CHECK-NOT: HGMMA: found at"},
    {"dq_published_before_fence", "fa3_bwd_sm90_bf16_d128", dq_published_before_fence,
     "CHECK-NOT: SYNCS.ARRIVE: found at"},
    {"dq_reduce_before_fence", "fa3_bwd_sm90_bf16_d128", dq_reduce_before_fence,
     "CHECK: UBLKRED.G.S.ADD.F32.RN: not found"},
    {"lock_released_before_bulk_done", "fa3_bwd_sm90_bf16_d128", lock_released_before_bulk_done,
     "CHECK: FENCE.VIEW.ASYNC.G: not found"},
    {"fa4_dq_before_ds_ready", "fa4_bwd_sm100_bf16_d128", fa4_dq_before_ds_ready, "CHECK-NOT: UTCHMMA: found at"},
    {"fa4_dq_reduce_before_proxy_fence", "fa4_bwd_sm100_bf16_d128", fa4_dq_reduce_before_proxy_fence,
     "CHECK-NOT: UBLKRED: found at"},
    {"fa4_init_extra_stage", "fa4_bwd_sm100_bf16_d64", fa4_init_extra_stage, "expected exactly 15 matching lines, found 16"},
    {"fa4_p_ready_before_tmem_fence", "fa4_bwd_sm100_bf16_d128", fa4_p_ready_before_tmem_fence,
     "CHECK-NOT: SYNCS.ARRIVE: found at"},
    {"fa4_pair_send_before_barrier", "fa4_bwd_sm100_bf16_d128_2cta", fa4_pair_send_before_barrier,
     "CHECK-NOT: UBLKCP: found at"},
    {"fa4_pair_dq_before_exchange", "fa4_bwd_sm100_bf16_d128_2cta", fa4_pair_dq_before_exchange,
     "CHECK-NOT: UTCHMMA: found at"},
    {"fa4_pair_qdo_empty_before_bulk_read", "fa4_bwd_sm100_bf16_d128_2cta", fa4_pair_qdo_empty_before_bulk_read,
     "CHECK-NOT: SYNCS.ARRIVE: found at"},
};

}  // namespace

TEST_SUITE("failure labs (SASS)") {

TEST_CASE("the unmutated goldens pass their kernels' checks") {
  for (const char* k : {"fa3_fwd_sm90_bf16_d128_n128", "fa3_bwd_sm90_bf16_d128", "fa4_bwd_sm100_bf16_d128",
                        "fa4_bwd_sm100_bf16_d64", "fa4_bwd_sm100_bf16_d128_2cta"}) {
    const CheckResult r = check_kernel(k, read_listing(k));
    INFO(k << "\n" << joined(r));
    CHECK(r.ok);
    CHECK(r.directives > 20);
  }
  const CheckResult extra = run_checks(kNoWaitBetweenBatches, "wait_after_each_gemm.check",
                                       read_listing("fa3_fwd_sm90_bf16_d128_n128"));
  INFO(joined(extra));
  CHECK(extra.ok);
}

TEST_CASE("each mutated golden fails its kernel's check, naming the broken directive") {
  for (const Lab& lab : kLabs) {
    Listing l = read_listing(lab.kernel);
    const Listing original = l;
    lab.mutate(l);
    CHECK(l != original);
    const CheckResult r = check_kernel(lab.kernel, l);
    const std::string errs = joined(r);
    INFO("lab " << lab.name << " on " << lab.kernel << ":\n" << errs);
    CHECK_FALSE(r.ok);
    CHECK(errs.find(lab.expect) != std::string::npos);
  }
}

TEST_CASE("wait_after_each_gemm: serialised batches fail the lab's own directives") {
  Listing l = read_listing("fa3_fwd_sm90_bf16_d128_n128");
  wait_after_each_gemm(l);
  const CheckResult r = run_checks(kNoWaitBetweenBatches, "wait_after_each_gemm.check", l);
  const std::string errs = joined(r);
  INFO(errs);
  CHECK_FALSE(r.ok);
  CHECK(errs.find("CHECK-NOT: WARPGROUP.DEPBAR: found at") != std::string::npos);
  CHECK(errs.find("WARPGROUP.DEPBAR.LE gsb0, 0x0") != std::string::npos);
}

TEST_CASE("temporaries_spill: local memory and LDL/STL fail the audit's spill rule") {
  const Listing clean = read_listing("fa3_fwd_sm90_bf16_d128_n128");
  CHECK(spill_verdict(clean) == "");
  Listing l = clean;
  temporaries_spill(l);
  CHECK(spill_verdict(l) == "spills or local memory: LOCAL:64 1 LDL 1 STL");
  // the ordering checks alone would not notice: spills are the resource rule's job
  CHECK(check_kernel("fa3_fwd_sm90_bf16_d128_n128", l).ok);
}

TEST_CASE("another_specialization: the d64 listing fails the d128 kernel's checks") {
  const Listing d64 = read_listing("fa3_fwd_sm90_bf16_d64_m128");
  CHECK(check_kernel("fa3_fwd_sm90_bf16_d64_m128", d64).ok);
  const CheckResult r = check_kernel("fa3_fwd_sm90_bf16_d128_n128", d64);
  const std::string errs = joined(r);
  INFO(errs);
  CHECK_FALSE(r.ok);
  CHECK(errs.find("HGMMA.64x128x16.F32.BF16 R, R, gdesc[UR].tnspB, R, UP: not found") != std::string::npos);
}

TEST_CASE("pv_after_softmax: the listing's order passes its .check; only the trace's clock loses the overlap") {
  namespace rd = flashptx::trace_render;
  // The static half: the traced kernel's golden holds the two-stage order (its .check passes), and it
  // is the same listing in both runs below: the mutation touches the clock, not the instructions.
  const CheckResult golden = check_kernel("fa3_fwd_sm90_bf16_d128_trace", read_listing("fa3_fwd_sm90_bf16_d128_trace"));
  INFO(joined(golden));
  CHECK(golden.ok);
  std::string text, err;
  rd::RawTrace raw;
  REQUIRE_MESSAGE(rd::read_trace_file(std::string(FLASHPTX_ROOT) + "/" + flashptx::models::twostage::kCommittedTrace,
                                      &text, &err), err);
  REQUIRE_MESSAGE(rd::from_json(text, &raw, &err), err);
  const auto measured = rd::own_overlap(rd::build_timeline(raw));
  const rd::RawTrace m = flashptx::models::twostage::pv_after_softmax(raw);
  const auto mutated = rd::own_overlap(rd::build_timeline(m));
  REQUIRE(measured.size() == 8);  // 4 traced CTAs x 2 consumers
  REQUIRE(mutated.size() == 8);
  for (size_t i = 0; i < measured.size(); ++i) {
    CAPTURE(i);
    CHECK(measured[i].steady > 100);
    CHECK(measured[i].lone > 0);
    CHECK(measured[i].overlapped);
    CHECK(measured[i].hidden_fraction > 0.5);
    CHECK_FALSE(mutated[i].overlapped);
    CHECK(mutated[i].hidden_fraction < rd::kMinHiddenFraction);
    CHECK(mutated[i].steady == measured[i].steady);  // same spans, same order: only times moved
  }
  // Nothing but clocks changed, and every lane's stamps stay in time order.
  REQUIRE(m.lanes.size() == raw.lanes.size());
  int other_event = 0, out_of_order = 0;
  for (size_t l = 0; l < m.lanes.size(); ++l) {
    REQUIRE(m.lanes[l].records.size() == raw.lanes[l].records.size());
    for (size_t r = 0; r < m.lanes[l].records.size(); ++r) {
      other_event += m.lanes[l].records[r].event != raw.lanes[l].records[r].event ||
                     m.lanes[l].records[r].arg != raw.lanes[l].records[r].arg;
      out_of_order += r > 0 && m.lanes[l].records[r].clock < m.lanes[l].records[r - 1].clock;
    }
  }
  CHECK(other_event == 0);
  CHECK(out_of_order == 0);
  CHECK(rd::own_overlap_text(mutated).find("no: pv_not_overlapped_at_run_time") != std::string::npos);
}

}  // TEST_SUITE
