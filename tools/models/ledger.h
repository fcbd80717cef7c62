// The ledger: each protocol model registers the tables it reproduces, under a section code, and
// `flashptx ledger [section]` prints them. The codes (0x02 ... 0x0D) are the section numbers of the
// design write-up the models were checked against; docs/PROTOCOLS.md, "The ledger's section
// codes", maps each to the guide section that explains it. Models live in tools/models/*.cpp, one
// section or protocol per file; they are linked into ./flashptx and ./run_tests as objects (not an
// archive), so a static registration is never dropped by the linker.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

namespace flashptx::models {

struct LedgerSection {
  const char* section;  // section code, e.g. "0x03"
  const char* title;    // e.g. "FA3 ring: (stage, phase) table, s=2, J=5"
  void (*print)(std::FILE* out);
};

inline std::vector<LedgerSection>& ledger_registry() {
  static std::vector<LedgerSection> r;
  return r;
}

struct LedgerRegistrar {
  LedgerRegistrar(const char* section, const char* title, void (*print)(std::FILE*)) {
    ledger_registry().push_back({section, title, print});
  }
};

// One row of a claims table, the failure labs whose rows are claims about a number or a schedule
// ("* " marks the claim a mutation makes; the correct claim follows under it, marked "  "): the claim,
// the value our code computes for it, and the check's verdict, in columns of the given widths.
inline void print_claim_row(std::FILE* out, bool mutation, int claim_width, const char* claim, int value_width,
                            const std::string& value, const char* verdict) {
  std::fprintf(out, "%s %-*s %-*s %s\n", mutation ? "*" : " ", claim_width, claim, value_width, value.c_str(), verdict);
}

}  // namespace flashptx::models

#define FLASHPTX_LEDGER_CAT2(a, b) a##b
#define FLASHPTX_LEDGER_CAT(a, b) FLASHPTX_LEDGER_CAT2(a, b)
// FLASHPTX_LEDGER("0x03", "title", print_fn);  at namespace scope in a model's .cpp
#define FLASHPTX_LEDGER(section, title, fn)                                      \
  static ::flashptx::models::LedgerRegistrar FLASHPTX_LEDGER_CAT(ledger_reg_, __LINE__)( \
      section, title, fn)
