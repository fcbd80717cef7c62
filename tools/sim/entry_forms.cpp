// ptxsim: the unimplemented forms one entry reaches (tools/sim/sim.h, entry_unimplemented).
#include <set>

#include "tools/sim/core.h"

namespace ptxsim {

std::vector<std::string> entry_unimplemented(const Module& m, std::string_view entry) {
  std::vector<std::string> out;
  auto it = m.func_index.find(std::string(entry));
  if (it == m.func_index.end()) return out;
  std::set<uint32_t> seen{it->second};
  std::vector<uint32_t> todo{it->second};
  while (!todo.empty()) {
    const Func& f = m.funcs[todo.back()];
    todo.pop_back();
    for (uint32_t pc = f.begin; pc < f.end && pc < m.code.size(); ++pc) {
      const Inst& in = m.code[pc];
      if (!in.implemented) out.push_back(m.name + ":" + std::to_string(in.line) + ": unimplemented instruction form '" + m.forms[in.form] + "'");
      if (in.op == OP_CALL && in.o[0].kind == K_FUNC && seen.insert(in.o[0].reg).second) todo.push_back(in.o[0].reg);
    }
  }
  return out;
}

}  // namespace ptxsim
