// ptxsim, sm_100a: the tcgen05 family (PTX ISA, "Tensorcore 5th Generation Family Instructions").
// Decoding (tools/sim/parse_sm100.cpp) and the forms the executor implements. Executed by
// tools/sim/exec_sm100.inc; Tensor Memory and the tcgen05.mma arithmetic come from the tcgen05
// emulator (tools/models/tcgen05_emulator.h), the project's one reading of the ISA's descriptor,
// data-path and TMEM tables. Executed in the PTX simulator; never run on a Blackwell GPU.
//
// Inst fields of the tcgen05 ops:
//   sub   the cta_group (1 or 2)
//   m, n  tcgen05.ld/st: m = 32 for the shape .32x32b (the only shape decoded), n = the .num count
//   sub2  tcgen05.mma: 1 for A from Tensor Memory (the "TS" form, [a_tmem]), 0 for A from shared memory
//   ty2   tcgen05.mma: T_F16 for .kind::f16, T_E4M3 for .kind::f8f6f4
//   mods  tcgen05.commit: M_MULTICAST for .multicast::cluster
#pragma once
#include <string>
#include <vector>

#include "tools/sim/core.h"

namespace ptxsim {

// Decodes the parts after "tcgen05" (p = the mnemonic split at dots) into in.op and the fields above;
// a part it does not know goes to *unknown, a form it knows to be malformed sets *bad.
void decode_tcgen05(Inst& in, const std::vector<std::string>& p, std::vector<std::string>* unknown, bool* bad);
// The forms the executor implements: cta_group::1 and cta_group::2 (the CTA pair).
bool tcgen05_supported(const Inst& in);
// clusterlaunchcontrol.try_cancel (the non-multicast form: .multicast::cluster::all is not modelled)
// and query_cancel.is_canceled / .get_first_ctaid.v4 (PTX ISA, "clusterlaunchcontrol.try_cancel",
// "clusterlaunchcontrol.query_cancel"). in.o: try_cancel [resp], [mbar]; is_canceled p, resp;
// get_first_ctaid {x, y, z, _}, resp (resp a .b128 register: two slots).
void decode_clc(Inst& in, const std::vector<std::string>& p, std::vector<std::string>* unknown, bool* bad);

}  // namespace ptxsim
