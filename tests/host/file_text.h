// The host tests' one file reader: goldens, fixtures, committed files and what a test wrote.
#pragma once
#include <fstream>
#include <sstream>
#include <string>

namespace flashptx_test {

// The file's bytes; "" when it cannot be opened (the caller's check on the contents then fails).
inline std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

}  // namespace flashptx_test
