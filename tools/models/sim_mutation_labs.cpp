// The PTX simulator's mutation labs (tools/models/sim_mutation_labs.h) and their ledger tables.
#include "tools/models/sim_mutation_labs.h"

#include <cstdio>
#include <cstring>

#include "tools/models/ledger.h"

namespace flashptx::models {

namespace {
const SimMutationLab kLabs[] = {
    {"0x02", "a wgmma.wait_group depth raised (S read before its group retires)",
     "the 2nd executed `wgmma.wait_group 0` (after QK^T) -> 1", "hazard",
     {"an accumulator) of an in-flight wgmma.mma_async before the wgmma.wait_group"}, true},
    {"0x02", "the consumer reads O before its last PV retires (a wait_group removed)",
     "the entry's last `wgmma.wait_group 0` (before the epilogue) deleted", "hazard",
     {"an accumulator) of an in-flight wgmma.mma_async"}, true},
    {"0x03", "a try_wait parity flipped",
     "the first `mbarrier.try_wait.parity` (Q full) waits parity ^ 1", "deadlock",
     {"%mut: spinning on mbarrier", "waiting for parity"}, true},
    {"0x03", "expect_tx bytes one box over (the phase never completes)",
     "the first executed K `mbarrier.arrive.expect_tx` announces twice its one box", "deadlock",
     {"spinning on mbarrier", "pending arrivals 0 of 1, tx-count"}, true},
    {"0x03", "a producer skipping a stage (its TMA dropped)",
     "the first executed ring `cp.async.bulk.tensor` load deleted, its expect_tx kept", "deadlock",
     {"spinning on mbarrier", "pending arrivals 0 of 1, tx-count"}, true},
    {"0x03", "an empty-barrier arrival dropped",
     "the first consumer release (`mbarrier.arrive`) whose phase the producer waits for, deleted", "deadlock",
     {"spinning on mbarrier", "pending arrivals"}, true},
    {"0x03", "a stage released before the wait that retires its reader",
     "the steady-state loop's ring-stage release moved (with its guard) before the `wgmma.wait_group 1` "
     "that retires the QK^T reading the stage (640 keys: the stage is refilled)", "hazard",
     {"a stage released early", "wgmma.mma_async"}, true},
    {"0x04", "the fence.proxy.async before the TMA store of O removed",
     "the entry's one `fence.proxy.async.shared::cta` deleted", "protocol",
     {"cp.async.bulk.tensor", "through the generic proxy with no fence.proxy.async"}, true},
    {"0x05", "a named barrier's thread count wrong",
     "the first executed `bar.sync id, count` counts one warp more", "protocol",
     {"bar.sync", "named barrier", "differs from the count"}, true},
    {"0x05", "a setmaxnreg split over the launch's register pool",
     "the consumers' `setmaxnreg.inc 240` -> 248 (pool 65536)", "deadlock",
     {"setmaxnreg.inc", "setmaxnreg waiting for registers"}, true},
    {"0x0E", "a wait_group 1 turned into a full wait is not a finding and changes nothing",
     "the first `wgmma.wait_group 1` -> 0 (a helper that always waits for all)", "none", {}, true},
};

void print_section(std::FILE* o, const char* section) {
  std::fprintf(o, "columns: mutation of fa3_fwd_sm90_bf16_d64_m128's PTX | the edit | the simulator's finding\n");
  for (const SimMutationLab& l : kLabs) {
    if (std::strcmp(l.section, section) != 0) continue;
    std::fprintf(o, "* %s\n    edit: %s\n    %s%s\n", l.name, l.edit, l.caught ? "" : "NOT CAUGHT (a simulator gap): expected ",
                 std::strcmp(l.finding, "none") == 0 ? "no finding; output bit for bit equal" : l.finding);
  }
  if (std::strcmp(section, "0x0E") == 0)
    std::fprintf(o, "* a third stage added blindly: no lab: not a PTX edit. The stage count is compiled into\n"
                    "    shared-memory offsets, barrier addresses and the parity/stage arithmetic, and the plan\n"
                    "    sizes dynamic shared memory for two stages; it needs a rebuild from the sources.\n");
  std::fprintf(o, "checked by tests/sim/test_sim_mutations.cpp on the PTX simulator (gpu_sm90 sim mutations)\n");
}
void p02(std::FILE* o) { print_section(o, "0x02"); }
void p03(std::FILE* o) { print_section(o, "0x03"); }
void p04(std::FILE* o) { print_section(o, "0x04"); }
void p05(std::FILE* o) { print_section(o, "0x05"); }
void p0e(std::FILE* o) { print_section(o, "0x0E"); }
}  // namespace

std::span<const SimMutationLab> sim_mutation_labs() { return kLabs; }
const SimMutationLab* sim_mutation_lab(std::string_view name) {
  for (const SimMutationLab& l : kLabs)
    if (name == l.name) return &l;
  return nullptr;
}

FLASHPTX_LEDGER("0x02", "PTX simulator mutation labs: wgmma groups", p02);
FLASHPTX_LEDGER("0x03", "PTX simulator mutation labs: the K/V ring", p03);
FLASHPTX_LEDGER("0x04", "PTX simulator mutation labs: proxy fences", p04);
FLASHPTX_LEDGER("0x05", "PTX simulator mutation labs: warp specialization", p05);
FLASHPTX_LEDGER("0x0E", "PTX simulator mutation labs: compiled-kernel rows", p0e);

}  // namespace flashptx::models
