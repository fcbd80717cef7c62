// Simulator core: clusters of two CTAs and the tcgen05 CTA pair (tools/sim/exec.cpp, exec_sm100.inc),
// on hand-written PTX. Executed in the PTX simulator; never run on a Blackwell GPU. Each expectation
// is worked out from the PTX ISA, not from ptx/ or src/:
//   - "Memory Consistency Model": a release pattern synchronizes with an acquire pattern only when
//     the two are morally strong: each specifies a scope that includes the thread executing the
//     other. An mbarrier arrive .release.cluster of rank 1 on rank 0's barrier, observed by rank 0's
//     try_wait .acquire.cta, does not synchronize (.cta does not include rank 1's thread); with
//     .acquire.cluster it does;
//   - "CTA pair": two CTAs of a cluster whose %cluster_ctarank differ in bit 0 only;
//     "tcgen05.alloc": with .cta_group::2 one warp of each CTA of the pair allocates, the same
//     columns in both, the address written to each warp's shared-memory destination.
#include <doctest/doctest.h>

#include <string>

#include "tests/sim/sim_core_util.h"

using namespace simtest;

namespace {

bool has_message(const ptxsim::Report& r, ptxsim::Finding::Kind k, const std::string& part) {
  for (const auto& f : r.findings)
    if (f.kind == k && f.message.find(part) != std::string::npos) return true;
  return false;
}

// Rank 1 stores 1234 into its own shared `data`, then arrives (release, cluster scope) on rank 0's
// barrier through mapa; rank 0 waits with the scope SCOPE, reads rank 1's `data` through mapa +
// ld.shared::cluster and writes it to out[0]. Cluster barriers around it (every CTA running and the
// barrier initialised before; no CTA exits while its peer reads its memory). One thread per CTA.
const char* kScope = R"(
.shared .align 8 .b64 bar;
.shared .align 4 .b32 data;
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %cluster_ctarank;
  mov.u32 %r2, bar;
  mov.u32 %r3, data;
  setp.ne.u32 %p2, %r1, 0;
  @%p2 bra PEER;
  mbarrier.init.shared::cta.b64 [%r2], 1;
  fence.mbarrier_init.release.cluster;
PEER:
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  @%p2 bra RANK1;
WAIT:
  mbarrier.try_wait.parity.acquire.SCOPE.shared::cta.b64 %p3, [%r2], 0;
  @!%p3 bra WAIT;
  mapa.shared::cluster.u32 %r4, %r3, 1;
  ld.shared::cluster.u32 %r5, [%r4];
  st.global.u32 [%rd1], %r5;
  bra END;
RANK1:
  mov.u32 %r6, 1234;
  st.shared.u32 [%r3], %r6;
  mapa.shared::cluster.u32 %r7, %r2, 0;
  mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r7];
END:
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  ret;
}
)";

ptxsim::Report run_cluster2(const std::string& body, uint32_t block, uint32_t* out, size_t n, uint32_t cluster = 2) {
  std::string err;
  auto m = load(body, &err);
  REQUIRE_MESSAGE(m, err);
  ptxsim::Memory mem;
  mem.add(out, n * 4, "out");
  ptxsim::TensorMaps maps;
  ptxsim::LaunchConfig cfg = config(m, "k", block, Params().put<uint64_t>(0, (uint64_t)out).bytes, 2);
  cfg.cluster.x = cluster;
  return ptxsim::launch(cfg, mem, maps);
}

std::string with(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

// The pair allocation: each CTA's warp allocates COLS columns with .cta_group::2, reads the address
// back from its shared memory into out[2 * rank], the address's low half (the column) into
// out[2 * rank + 1]... then frees them with .cta_group::2.
const char* kPairAlloc = R"(
.shared .align 4 .b32 slot;
.visible .entry k(.param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %cluster_ctarank;
  mov.u32 %r2, slot;
  mov.u32 %r9, %tid.x;
  setp.eq.u32 %p1, %r1, 0;
  selp.u32 %r3, 64, COLS1, %p1;
  tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%r2], %r3;
  tcgen05.fence::before_thread_sync;
  bar.sync 0;
  tcgen05.fence::after_thread_sync;
  ld.shared.u32 %r4, [%r2];
  setp.ne.u32 %p2, %r9, 0;
  @%p2 bra FREE;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  add.u32 %r5, %r4, 1;
  st.global.u32 [%rd3], %r5;
FREE:
  tcgen05.dealloc.cta_group::2.sync.aligned.b32 %r4, %r3;
  tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;
  ret;
}
)";

const char* kHeader100 = ".version 8.7\n.target sm_100a\n.address_size 64\n";

ptxsim::Report run_pair(const std::string& body, uint32_t* out, uint32_t cluster) {
  std::string err;
  auto m = ptxsim::load_module(std::string(kHeader100) + body, "pair.ptx", &err);
  REQUIRE_MESSAGE(m, err);
  ptxsim::Memory mem;
  mem.add(out, 2 * 4, "out");
  ptxsim::TensorMaps maps;
  ptxsim::LaunchConfig cfg = config(m, "k", 32, Params().put<uint64_t>(0, (uint64_t)out).bytes, 2);
  cfg.cluster.x = cluster;
  return ptxsim::launch(cfg, mem, maps);
}

}  // namespace

TEST_SUITE("sim core pair") {

TEST_CASE("scope rule: an .acquire.cluster wait synchronizes with the peer's release.cluster arrive; .acquire.cta is reported") {
  uint32_t out = 0;
  const ptxsim::Report ok = run_cluster2(with(kScope, "SCOPE", "cluster"), 1, &out, 1);
  INFO(ok.text());
  CHECK(ok.findings.empty());
  CHECK(out == 1234u);
  out = 0;
  const ptxsim::Report bad = run_cluster2(with(kScope, "SCOPE", "cta"), 1, &out, 1);
  INFO(bad.text());
  CHECK(has_message(bad, ptxsim::Finding::kProtocol, "a wait with too narrow a scope"));
  CHECK(has_message(bad, ptxsim::Finding::kProtocol, "ld.shared::cluster reads the shared memory of CTA 1"));
}

TEST_CASE("cta_group::2 alloc: the same columns in both CTAs of the pair, the address in each one's shared memory") {
  uint32_t out[2] = {0, 0};
  const ptxsim::Report r = run_pair(with(kPairAlloc, "COLS1", "64"), out, 2);
  INFO(r.text());
  CHECK(r.findings.empty());
  CHECK(out[0] == 1u);  // column 0 (the lowest free base), lane 0, + 1
  CHECK(out[1] == 1u);
}

TEST_CASE("negative: cta_group::2 alloc with different column counts in the pair, and outside a pair") {
  uint32_t out[2] = {0, 0};
  const ptxsim::Report mismatch = run_pair(with(kPairAlloc, "COLS1", "128"), out, 2);
  INFO(mismatch.text());
  CHECK(has_message(mismatch, ptxsim::Finding::kProtocol, "meets the peer CTA's"));
  const ptxsim::Report alone = run_pair(with(kPairAlloc, "COLS1", "64"), out, 1);
  INFO(alone.text());
  CHECK(has_message(alone, ptxsim::Finding::kIllegal, "it has no peer CTA"));
}

}  // TEST_SUITE
