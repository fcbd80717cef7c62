// Myers' shortest-edit-script line diff and its rendering (see sass_diff.h). Common prefix and
// suffix are trimmed first, so a one-line change in a long listing costs almost nothing.
#include "tools/sass/sass_diff.h"

#include <algorithm>
#include <sstream>

namespace flashptx::sass {
namespace {

constexpr long long kMaxTraceInts = 40'000'000;  // bounds the backtrack memory (160 MB)

// The middle part after trimming: a[a0, a1) against b[b0, b1). Greedy forward Myers search with
// the V array of every step kept, then a backtrack that emits the script.
void myers(const std::vector<std::string>& a, int a0, int a1, const std::vector<std::string>& b, int b0,
           int b1, std::vector<DiffLine>* out) {
  const int n = a1 - a0, m = b1 - b0, max = n + m, off = max + 1;
  std::vector<std::vector<int>> trace;
  std::vector<int> v(2 * max + 3, 0);
  int found_d = -1;
  for (int d = 0; d <= max && found_d < 0; ++d) {
    if (static_cast<long long>(d + 1) * v.size() > kMaxTraceInts) {
      // Too different to be worth a minimal script: everything of a out, everything of b in.
      for (int i = a0; i < a1; ++i) out->push_back({'-', a[i], i + 1, 0});
      for (int j = b0; j < b1; ++j) out->push_back({'+', b[j], 0, j + 1});
      return;
    }
    trace.push_back(v);
    for (int k = -d; k <= d; k += 2) {
      int x = (k == -d || (k != d && v[off + k - 1] < v[off + k + 1])) ? v[off + k + 1] : v[off + k - 1] + 1;
      int y = x - k;
      while (x < n && y < m && a[a0 + x] == b[b0 + y]) ++x, ++y;
      v[off + k] = x;
      if (x >= n && y >= m) { found_d = d; break; }
    }
  }
  // Backtrack from (n, m) through the saved V arrays.
  std::vector<DiffLine> rev;
  int x = n, y = m;
  for (int d = found_d; d >= 0; --d) {
    const std::vector<int>& vd = trace[d];
    const int k = x - y;
    int prev_k;
    if (d == 0) prev_k = k;
    else prev_k = (k == -d || (k != d && vd[off + k - 1] < vd[off + k + 1])) ? k + 1 : k - 1;
    const int prev_x = d == 0 ? 0 : vd[off + prev_k], prev_y = prev_x - prev_k;
    while (x > prev_x && y > prev_y) {
      --x, --y;
      rev.push_back({' ', a[a0 + x], a0 + x + 1, b0 + y + 1});
    }
    if (d == 0) break;
    if (x == prev_x) rev.push_back({'+', b[b0 + prev_y], 0, b0 + prev_y + 1});
    else rev.push_back({'-', a[a0 + prev_x], a0 + prev_x + 1, 0});
    x = prev_x, y = prev_y;
  }
  out->insert(out->end(), rev.rbegin(), rev.rend());
}

}  // namespace

std::vector<DiffLine> diff_lines(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  int pre = 0;
  const int na = static_cast<int>(a.size()), nb = static_cast<int>(b.size());
  while (pre < na && pre < nb && a[pre] == b[pre]) ++pre;
  int suf = 0;
  while (suf < na - pre && suf < nb - pre && a[na - 1 - suf] == b[nb - 1 - suf]) ++suf;
  std::vector<DiffLine> out;
  for (int i = 0; i < pre; ++i) out.push_back({' ', a[i], i + 1, i + 1});
  myers(a, pre, na - suf, b, pre, nb - suf, &out);
  for (int i = suf; i > 0; --i) out.push_back({' ', a[na - i], na - i + 1, nb - i + 1});
  return out;
}

std::string render_diff(const std::vector<std::string>& a, const std::vector<std::string>& b,
                        const std::string& a_name, const std::string& b_name, int context) {
  const std::vector<DiffLine> d = diff_lines(a, b);
  const int n = static_cast<int>(d.size());
  std::vector<bool> show(n, false);
  bool any = false;
  for (int i = 0; i < n; ++i) {
    if (d[i].op == ' ') continue;
    any = true;
    for (int j = std::max(0, i - context); j <= std::min(n - 1, i + context); ++j) show[j] = true;
  }
  if (!any) return "";
  std::ostringstream os;
  os << "--- " << a_name << "\n+++ " << b_name << "\n";
  int a_line = 1, b_line = 1;  // the next line numbers of a and b at position i
  for (int i = 0; i < n; ++i) {
    if (show[i] && (i == 0 || !show[i - 1]))
      os << "@@ golden line " << a_line << ", current line " << b_line << " @@\n";
    if (show[i]) os << d[i].op << d[i].text << "\n";
    if (d[i].op != '+') ++a_line;
    if (d[i].op != '-') ++b_line;
  }
  return os.str();
}

}  // namespace flashptx::sass
