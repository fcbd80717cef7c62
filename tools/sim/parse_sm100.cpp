// ptxsim: decoding of the tcgen05 instruction forms (PTX ISA, "Tensorcore 5th Generation Family
// Instructions": tcgen05.alloc / dealloc / relinquish_alloc_permit, tcgen05.ld / st, tcgen05.wait,
// tcgen05.fence, tcgen05.mma, tcgen05.commit). See tools/sim/sm100.h for the fields.
#include "tools/sim/sm100.h"

#include <algorithm>
#include <cstdio>

namespace ptxsim {

void decode_tcgen05(Inst& in, const std::vector<std::string>& p, std::vector<std::string>* unknown, bool* bad) {
  const std::string what = p.size() > 1 ? p[1] : "";
  in.sub = 0;
  size_t k = 2;
  if (what == "alloc") in.op = OP_TC_ALLOC;
  else if (what == "dealloc") in.op = OP_TC_DEALLOC;
  else if (what == "relinquish_alloc_permit") in.op = OP_TC_RELINQUISH;
  else if (what == "ld") in.op = OP_TC_LD;
  else if (what == "st") in.op = OP_TC_ST;
  else if (what == "wait::ld") in.op = OP_TC_WAIT_LD;
  else if (what == "wait::st") in.op = OP_TC_WAIT_ST;
  else if (what == "fence::before_thread_sync") in.op = OP_TC_FENCE_BEFORE;
  else if (what == "fence::after_thread_sync") in.op = OP_TC_FENCE_AFTER;
  else if (what == "mma") in.op = OP_TC_MMA;
  else if (what == "commit") in.op = OP_TC_COMMIT;
  else { *bad = true; return; }
  bool sync = false, aligned = false, arrive_one = false;
  for (; k < p.size(); ++k) {
    const std::string& w = p[k];
    unsigned num = 0;
    if (w == "cta_group::1") in.sub = 1;
    else if (w == "cta_group::2") in.sub = 2;
    else if (w == "sync") sync = true;
    else if (w == "aligned") aligned = true;
    else if (w == "shared::cta" && in.op == OP_TC_ALLOC) in.space = SP_SHARED;
    else if (w == "shared::cluster" && in.op == OP_TC_COMMIT) in.space = SP_SHARED_CLUSTER;
    else if (w == "b32" && (in.op == OP_TC_ALLOC || in.op == OP_TC_DEALLOC || in.op == OP_TC_LD || in.op == OP_TC_ST)) in.ty = T_B32;
    else if (w == "b64" && in.op == OP_TC_COMMIT) in.ty = T_B64;
    else if (w == "32x32b" && (in.op == OP_TC_LD || in.op == OP_TC_ST)) in.m = 32;
    else if ((in.op == OP_TC_LD || in.op == OP_TC_ST) && std::sscanf(w.c_str(), "x%u", &num) == 1 && w == "x" + std::to_string(num)) in.n = (uint16_t)num;
    else if (w == "kind::f16" && in.op == OP_TC_MMA) in.ty2 = T_F16;
    else if (w == "kind::f8f6f4" && in.op == OP_TC_MMA) in.ty2 = T_E4M3;
    else if (w == "mbarrier::arrive::one" && in.op == OP_TC_COMMIT) arrive_one = true;
    else if (w == "multicast::cluster" && in.op == OP_TC_COMMIT) in.mods |= M_MULTICAST;
    else unknown->push_back(w);
  }
  // Which qualifiers each form requires (the ISA's syntax blocks); a missing one is a malformed form.
  switch (in.op) {
    case OP_TC_ALLOC: *bad |= !(sync && aligned && in.sub && in.space == SP_SHARED && in.ty == T_B32 && in.nops == 2); break;
    case OP_TC_DEALLOC: *bad |= !(sync && aligned && in.sub && in.ty == T_B32 && in.nops == 2); break;
    case OP_TC_RELINQUISH: *bad |= !(sync && aligned && in.sub && in.nops == 0); break;
    case OP_TC_LD: case OP_TC_ST: {
      const uint32_t n = in.n;
      *bad |= !(sync && aligned && in.m == 32 && in.ty == T_B32 && n >= 1 && n <= 128 && (n & (n - 1)) == 0 && in.nops == 2);
      if (!*bad) {
        const Opnd& v = in.op == OP_TC_LD ? in.o[0] : in.o[1];
        const Opnd& a = in.op == OP_TC_LD ? in.o[1] : in.o[0];
        // .32x32b.xN: N registers per thread ("Matrix fragments for shape .32x32b"); x1 may be a
        // plain register
        const bool regs_ok = (v.kind == K_VEC && v.n == n) || (n == 1 && v.kind == K_REG);
        *bad |= !regs_ok || a.kind != K_ADDR;
      }
      break;
    }
    case OP_TC_WAIT_LD: case OP_TC_WAIT_ST: *bad |= !(sync && aligned && in.nops == 0); break;
    case OP_TC_FENCE_BEFORE: case OP_TC_FENCE_AFTER: *bad |= in.nops != 0; break;
    case OP_TC_MMA:
      // [d_tmem], a_desc | [a_tmem], b_desc, idesc, enable_input_d (the dense form without
      // disable-output-lane or scale-input-d operands)
      *bad |= !(in.sub && in.ty2 != T_NONE && in.nops == 5 && in.o[0].kind == K_ADDR && in.o[4].kind == K_REG);
      in.sub2 = in.nops > 1 && in.o[1].kind == K_ADDR ? 1 : 0;
      break;
    case OP_TC_COMMIT:
      *bad |= !(in.sub && arrive_one && in.space == SP_SHARED_CLUSTER && in.ty == T_B64 && in.o[0].kind == K_ADDR &&
                in.nops == ((in.mods & M_MULTICAST) ? 2 : 1));
      break;
    default: break;
  }
}

bool tcgen05_supported(const Inst& in) {
  switch (in.op) {
    case OP_TC_ALLOC: case OP_TC_DEALLOC: case OP_TC_RELINQUISH: case OP_TC_MMA: case OP_TC_COMMIT:
      return in.sub == 1 || in.sub == 2;  // cta_group::2: the CTA pair (exec_sm100.inc)
    default:
      return true;
  }
}

void decode_clc(Inst& in, const std::vector<std::string>& p, std::vector<std::string>* unknown, bool* bad) {
  const std::string what = p.size() > 1 ? p[1] : "";
  std::vector<std::string> rest(p.begin() + std::min<size_t>(2, p.size()), p.end());
  auto take = [&](const std::vector<std::string>& want) {
    for (const std::string& w : want) {
      auto it = std::find(rest.begin(), rest.end(), w);
      if (it == rest.end()) { *bad = true; return; }
      rest.erase(it);
    }
  };
  if (what == "try_cancel") {
    in.op = OP_CLC_TRY_CANCEL;
    take({"async", "shared::cta", "mbarrier::complete_tx::bytes", "b128"});
    *bad |= !(in.nops == 2 && in.o[0].kind == K_ADDR && in.o[1].kind == K_ADDR);
  } else if (what == "query_cancel" && p.size() > 2 && p[2] == "is_canceled") {
    in.op = OP_CLC_IS_CANCELED;
    rest.erase(rest.begin());
    take({"pred", "b128"});
    *bad |= !(in.nops == 2 && in.o[0].kind == K_REG && in.o[1].kind == K_REG);
  } else if (what == "query_cancel" && p.size() > 2 && p[2] == "get_first_ctaid") {
    in.op = OP_CLC_FIRST_CTAID;
    rest.erase(rest.begin());
    take({"v4", "b32", "b128"});
    *bad |= !(in.nops == 2 && in.o[0].kind == K_VEC && in.o[0].n == 4 && in.o[1].kind == K_REG);
  } else {
    *bad = true;
    return;
  }
  for (const std::string& w : rest) unknown->push_back(w);  // e.g. multicast::cluster::all: not modelled
}

}  // namespace ptxsim
