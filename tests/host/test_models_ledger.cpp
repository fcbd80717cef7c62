// Host test of the ledger registry behind `flashptx ledger`: every registered table prints, and the
// sections 0x02-0x05, 0x0B and 0x0D are present (tools/guide/PROTOCOLS.md maps the codes).
#include <doctest/doctest.h>

#include <cstdio>
#include <set>
#include <string>

#include "src/models/ledger.h"

TEST_SUITE("host models ledger") {
  TEST_CASE("every registered table prints, under a 0xNN spec section") {
    std::set<std::string> sections;
    for (const auto& s : flashptx::models::ledger_registry()) {
      CAPTURE(s.title);
      const std::string id = s.section;
      CHECK(id.size() == 4);
      CHECK(id.rfind("0x", 0) == 0);
      sections.insert(id);
      std::FILE* f = std::tmpfile();
      REQUIRE(f != nullptr);
      s.print(f);
      CHECK(std::ftell(f) > 0);
      std::fclose(f);
    }
    for (const char* want : {"0x02", "0x03", "0x04", "0x05", "0x0B", "0x0D"}) CHECK(sections.count(want) == 1);
  }
}
