// A small line diff for the golden-SASS audit: Myers' O((N+M)D) shortest edit script, and a
// unified-style rendering with context lines, "-" for golden-only and "+" for current-only lines.
#pragma once
#include <string>
#include <vector>

namespace flashptx::sass {

struct DiffLine {
  char op;  // ' ' common, '-' only in a (golden), '+' only in b (current)
  std::string text;
  int a_line, b_line;  // 1-based line numbers in a and b (0 where the line is absent there)
};

// The shortest edit script turning a into b, as a sequence of common, deleted and added lines.
std::vector<DiffLine> diff_lines(const std::vector<std::string>& a, const std::vector<std::string>& b);

// Hunks of the script with `context` common lines around each change:
//   --- a_name
//   +++ b_name
//   @@ a line 12, b line 12 @@
//    common
//   -golden only
//   +current only
// Empty when a == b.
std::string render_diff(const std::vector<std::string>& a, const std::vector<std::string>& b,
                        const std::string& a_name, const std::string& b_name, int context = 3);

}  // namespace flashptx::sass
