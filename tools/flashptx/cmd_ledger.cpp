// flashptx ledger: the spec's tables, computed by the protocol models in src/models/.
//
//   flashptx ledger            every registered table, by spec section (0x02, 0x03, ...)
//   flashptx ledger 0x03       the tables of one section (also "03", "3", "0x3")
//   flashptx ledger --list     section, title, one line each
//
// Each model registers its printers with FLASHPTX_LEDGER (src/models/ledger.h); nothing here knows
// the models by name. Sections print in ascending spec order; tables within a section in the order
// their model file registers them.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "src/models/ledger.h"
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

int usage() {
  std::fprintf(stderr, "usage: flashptx ledger [SECTION | --list]\n"
                       "  SECTION  a spec section id such as 0x03; prints only its tables\n"
                       "  --list   one line per table: section and title\n");
  return 2;
}

}  // namespace

int cmd_ledger(int argc, char** argv) {
  const std::vector<LedgerSection> all = sorted_sections();
  if (all.empty()) {
    std::printf("flashptx ledger: no model registered a table\n");
    return 1;
  }
  if (argc == 0) {
    std::printf("flashptx ledger: %zu tables from the protocol models; section ids follow the spec "
                "(shared/seed/000_ef2f13dec32d4c62.txt)\n\n", all.size());
    for (const LedgerSection& s : all) print_one(s);
    return 0;
  }
  if (argc > 1) return usage();
  const char* a = argv[0];
  if (!std::strcmp(a, "--list") || !std::strcmp(a, "-l")) {
    for (const LedgerSection& s : all) std::printf("%-5s %s\n", s.section, s.title);
    return 0;
  }
  if (!std::strcmp(a, "--help") || !std::strcmp(a, "-h")) { usage(); return 0; }
  const long want = section_number(a);
  if (want < 0) return usage();
  int n = 0;
  for (const LedgerSection& s : all)
    if (section_number(s.section) == want) { print_one(s); ++n; }
  if (!n) {
    std::fprintf(stderr, "flashptx ledger: no table for section %s; `flashptx ledger --list` lists them\n", a);
    return 1;
  }
  return 0;
}
