// flashptx ledger: the protocol tables of docs/PROTOCOLS.md, computed by the models in
// tools/models/.
//
//   flashptx ledger            every registered table, by section code (0x02, 0x03, ...)
//   flashptx ledger 0x03       the tables of one section (also "03", "3", "0x3": section codes are
//                              hex, so "11" is 0x11, and the output says so when "0x" is left out)
//   flashptx ledger --list     section, title, one line each
// A SECTION that is not a section id, or names no table, is an error (exit 2).
//
// Each model registers its printers with FLASHPTX_LEDGER (tools/models/ledger.h); nothing here knows
// the models by name. Sections print in ascending code order; tables within a section in the order
// their model file registers them.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tools/models/ledger.h"
#include "tools/flashptx/commands.h"

namespace {

using flashptx::models::LedgerSection;

// "0x03", "03", "3", "0X3" -> 3; -1 if not a section id.
long section_number(const char* s) {
  if (!s || !*s) return -1;
  const bool hex = (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'));
  char* end = nullptr;
  const long v = std::strtol(hex ? s + 2 : s, &end, 16);
  if (end == (hex ? s + 2 : s) || *end) return -1;
  return v;
}

// The code as the guide writes it: 0x11 for "11".
std::string section_code(long v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%02lX", v);
  return b;
}

// Whether a SECTION was written without "0x" (and so read as hex, which it may not look like).
bool bare(const std::string& s) { return s.size() < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'); }

// "SECTION is hex: '11' is 0x11" for a bare SECTION; empty otherwise.
std::string read_as(const std::string& s, long v) {
  return bare(s) ? "SECTION is hex: '" + s + "' is " + section_code(v) : std::string();
}

std::vector<LedgerSection> sorted_sections() {
  std::vector<LedgerSection> v = flashptx::models::ledger_registry();
  std::stable_sort(v.begin(), v.end(), [](const LedgerSection& a, const LedgerSection& b) {
    return section_number(a.section) < section_number(b.section);
  });
  return v;
}

void print_one(const LedgerSection& s) {
  std::string head = std::string("[") + s.section + "] " + s.title;
  std::printf("%s\n%s\n", head.c_str(), std::string(head.size(), '-').c_str());
  s.print(stdout);
  std::printf("\n");
}

}  // namespace

namespace flashptx::cli {

Parsed parse_ledger_args(int argc, const char* const* argv, LedgerArgs* a) {
  *a = LedgerArgs();
  Options o("ledger", "flashptx ledger [SECTION] [--list]",
            "The protocol tables of docs/PROTOCOLS.md, computed by the models in tools/models/, by\n"
            "section code (the guide's \"The ledger's section codes\" maps them).");
  o.positional("SECTION", &a->section, "a section id such as 0x03 (also 03, 3): only its tables")
      .flag("--list", &a->list, "one line per table: section and title");
  const Parsed p = o.parse(argc, argv);
  if (!p.run() || a->section.empty()) return p;
  const long want = section_number(a->section.c_str());
  if (want < 0) return o.error("'" + a->section + "' is not a section id (such as 0x03)");
  for (const LedgerSection& s : flashptx::models::ledger_registry())
    if (section_number(s.section) == want) return p;
  const std::string how = read_as(a->section, want);
  return o.error("no table for section " + section_code(want) + " (" + (how.empty() ? "" : how + "; ") +
                 "flashptx ledger --list lists them)");
}

}  // namespace flashptx::cli

int cmd_ledger(int argc, char** argv) {
  using namespace flashptx::cli;
  LedgerArgs a;
  const Parsed p = parse_ledger_args(argc, argv, &a);
  if (!p.run()) return finish(p);
  const std::vector<LedgerSection> all = sorted_sections();
  if (all.empty()) {
    std::printf("flashptx ledger: no model registered a table\n");
    return 1;
  }
  const long want = a.section.empty() ? -1 : section_number(a.section.c_str());
  if (want >= 0 && bare(a.section)) std::printf("flashptx ledger: %s\n", read_as(a.section, want).c_str());
  if (a.list) {
    for (const LedgerSection& s : all)
      if (want < 0 || section_number(s.section) == want) std::printf("%-5s %s\n", s.section, s.title);
    return 0;
  }
  if (want < 0)
    std::printf("flashptx ledger: %zu tables from the protocol models, by section code (0x02, 0x03, ...;\n"
                "docs/PROTOCOLS.md maps the codes to its sections)\n\n",
                all.size());
  for (const LedgerSection& s : all)
    if (want < 0 || section_number(s.section) == want) print_one(s);
  return 0;
}
