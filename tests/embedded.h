// Files of the source tree compiled into ./run_tests (tests/embed.cpp, the Makefile's EMBED_FILES):
// the host tests read them from here, so they run the same from a copy of the binaries without the
// source tree.
#pragma once
#include <string_view>

namespace flashptx_test {

// The bytes of an embedded file, by its path from the repository root
// ("tests/host/fixtures/audit_fixture_sm90a.sass.txt"); empty when it was not embedded.
std::string_view embedded_file(std::string_view path);

}  // namespace flashptx_test
