// ptxsim: the ISA semantics the core calls (tools/sim/isa/, written by sim-isa), in one include.
#pragma once
#include "tools/sim/isa/bits.h"
#include "tools/sim/isa/ldmatrix.h"
#include "tools/sim/isa/numeric.h"
#include "tools/sim/isa/shfl.h"
#include "tools/sim/isa/swizzle.h"
#include "tools/sim/isa/tensormap.h"
#include "tools/sim/isa/wgmma.h"

namespace ptxsim {
// Rounding modifier of an instruction (default .rn).
#define PTXSIM_RND(in) ((in).mods & M_RZ ? isa::Rnd::rz : (in).mods & M_RM ? isa::Rnd::rm : (in).mods & M_RP ? isa::Rnd::rp : isa::Rnd::rn)
}
