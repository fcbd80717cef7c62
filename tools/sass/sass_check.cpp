// The minimal FileCheck of the golden-SASS audit; the directives are defined in sass_check.h.
#include "tools/sass/sass_check.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "tools/sass/sass_listing.h"

namespace flashptx::sass {
namespace {

enum class Kind { Check, Next, Not, Count, Label, Define, Include };

struct Directive {
  Kind kind;
  int count = 0;       // CHECK-COUNT-N
  int line = 0;        // 1-based line in the check file
  std::string source;  // the check file (or included file) it comes from, for messages
  std::string spelling, pattern;
  std::regex re;
};

// Included files may include others, up to this depth (a cycle ends here with an error).
constexpr int kMaxIncludeDepth = 8;

// A searchable line of the listing: its text without leading blanks and its 1-based line number.
struct Line {
  std::string text;
  int number;
  bool instruction;
};

std::string ltrim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b);
}

std::string rtrim(const std::string& s) {
  size_t e = s.find_last_not_of(" \t\r");
  return e == std::string::npos ? "" : s.substr(0, e + 1);
}

std::string escape_regex(const std::string& lit) {
  static const std::string special = R"(\^$.|?*+()[]{})";
  std::string out;
  for (char c : lit) {
    if (special.find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

// "lit{{re}}lit" -> an ECMAScript regex; throws std::regex_error on a bad {{...}}.
std::regex compile_pattern(const std::string& pat) {
  std::string re;
  size_t i = 0;
  while (i < pat.size()) {
    size_t open = pat.find("{{", i);
    if (open == std::string::npos) { re += escape_regex(pat.substr(i)); break; }
    size_t close = pat.find("}}", open + 2);
    if (close == std::string::npos) throw std::regex_error(std::regex_constants::error_brace);
    re += escape_regex(pat.substr(i, open - i)) + "(?:" + pat.substr(open + 2, close - open - 2) + ")";
    i = close + 2;
  }
  return std::regex(re);
}

// Parses one check-file line; false when it holds no directive.
bool parse_directive(const std::string& raw, int line_no, Directive* d) {
  std::string s = ltrim(raw);
  for (const char* leader : {"//", ";", "#"})
    if (s.compare(0, std::string(leader).size(), leader) == 0) { s = ltrim(s.substr(std::string(leader).size())); break; }
  static const std::regex head(R"(^(CHECK(-NEXT|-NOT|-LABEL|-DEFINE|-INCLUDE|-COUNT-([0-9]+))?):(.*)$)");
  std::smatch m;
  if (!std::regex_match(s, m, head)) return false;
  const std::string suffix = m[2];
  d->kind = suffix.empty() ? Kind::Check : suffix == "-NEXT" ? Kind::Next : suffix == "-NOT" ? Kind::Not
          : suffix == "-LABEL" ? Kind::Label : suffix == "-DEFINE" ? Kind::Define
          : suffix == "-INCLUDE" ? Kind::Include : Kind::Count;
  if (d->kind == Kind::Count) d->count = std::stoi(m[3]);
  d->line = line_no;
  d->spelling = m[1];
  d->pattern = rtrim(ltrim(m[4]));
  return true;
}

bool is_identifier(const std::string& s) {
  static const std::regex id("^[A-Za-z_][A-Za-z0-9_]*$");
  return std::regex_match(s, id);
}

// Replaces every [[NAME]] of `pat` by NAME's value; false (with the reason) for an undefined NAME.
// A "[[" not followed by an identifier and "]]" is literal text.
bool substitute(const std::string& pat, const std::map<std::string, std::string>& defines, std::string* out,
                std::string* why) {
  out->clear();
  size_t i = 0;
  while (i < pat.size()) {
    const size_t open = pat.find("[[", i);
    const size_t close = open == std::string::npos ? std::string::npos : pat.find("]]", open + 2);
    if (close == std::string::npos) { *out += pat.substr(i); break; }
    const std::string name = pat.substr(open + 2, close - open - 2);
    if (!is_identifier(name)) { *out += pat.substr(i, open + 2 - i); i = open + 2; continue; }
    const auto it = defines.find(name);
    if (it == defines.end()) { *why = "[[" + name + "]] is not defined (CHECK-DEFINE: " + name + " = ...)"; return false; }
    *out += pat.substr(i, open - i) + it->second;
    i = close + 2;
  }
  return true;
}

// Reads the directives of `text` (named `source`) into `out`, in order: CHECK-DEFINE lines update
// `defines`, CHECK-INCLUDE lines splice in the directives of the named file (relative to the
// directory of `source`), every other directive gets its [[NAME]]s substituted and its pattern
// compiled. Problems go to r->errors.
void load(const std::string& text, const std::string& source, int depth, std::map<std::string, std::string>* defines,
          std::vector<Directive>* out, CheckResult* r) {
  std::istringstream in(text);
  std::string raw;
  for (int n = 1; std::getline(in, raw); ++n) {
    Directive d;
    if (!parse_directive(raw, n, &d)) continue;
    d.source = source;
    const std::string at = source + ":" + std::to_string(n) + ": " + d.spelling + ": ";
    auto error = [&](const std::string& what) {
      r->ok = false;
      r->errors.push_back(at + what);
    };
    if (d.pattern.empty()) { error("empty pattern"); continue; }
    if (d.kind == Kind::Define) {
      const size_t eq = d.pattern.find('=');
      const std::string name = eq == std::string::npos ? "" : rtrim(d.pattern.substr(0, eq));
      if (!is_identifier(name)) { error(d.pattern + ": expected NAME = value"); continue; }
      if (defines->count(name)) { error(name + " is already defined"); continue; }
      (*defines)[name] = ltrim(d.pattern.substr(eq + 1));
      continue;
    }
    if (d.kind == Kind::Include) {
      if (depth >= kMaxIncludeDepth) { error(d.pattern + ": includes nested deeper than " + std::to_string(kMaxIncludeDepth)); continue; }
      std::string file, why;
      if (!substitute(d.pattern, *defines, &file, &why)) { error(d.pattern + ": " + why); continue; }
      const std::string path = (std::filesystem::path(source).parent_path() / file).string();
      std::ifstream f(path);
      if (!f) { error(file + ": cannot read " + path); continue; }
      std::ostringstream body;
      body << f.rdbuf();
      load(body.str(), path, depth + 1, defines, out, r);
      continue;
    }
    if (d.kind == Kind::Count && d.count <= 0) { error("count must be >= 1"); continue; }
    std::string expanded, why;
    if (!substitute(d.pattern, *defines, &expanded, &why)) { error(d.pattern + ": " + why); continue; }
    d.pattern = expanded;
    try {
      d.re = compile_pattern(d.pattern);
    } catch (const std::regex_error& e) {
      error(d.pattern + ": bad {{regex}}: " + e.what());
      continue;
    }
    out->push_back(d);
  }
}

bool matches(const Directive& d, const Line& l) { return std::regex_search(l.text, d.re); }

std::string where(const std::vector<Line>& lines, size_t i) {
  if (i >= lines.size()) return "the end of the listing";
  return "listing line " + std::to_string(lines[i].number) + ": " + lines[i].text;
}

class Checker {
 public:
  Checker(const std::vector<Line>& lines, CheckResult* r) : lines_(lines), r_(r) {}

  // Runs one directive; false when the run must stop (a positive directive failed).
  bool run(const Directive& d) {
    ++r_->directives;
    if (d.kind == Kind::Not) { nots_.push_back(&d); return true; }
    size_t first = 0, next = 0;  // where the match starts, and the position after it
    if (!find_positive(d, &first, &next)) return false;
    flush_nots(first);
    pos_ = next;
    return true;
  }

  void finish() { flush_nots(lines_.size()); }

 private:
  void fail(const Directive& d, const std::string& what) {
    r_->ok = false;
    r_->errors.push_back(d.source + ":" + std::to_string(d.line) + ": " + d.spelling + ": " + d.pattern + ": " + what);
  }

  bool find_positive(const Directive& d, size_t* first, size_t* next) {
    if (d.kind == Kind::Next) {
      size_t i = pos_;
      while (i < lines_.size() && !lines_[i].instruction) ++i;
      if (i < lines_.size() && matches(d, lines_[i])) { *first = i; *next = i + 1; return true; }
      fail(d, "not on the next instruction line; it is " + where(lines_, i));
      return false;
    }
    if (d.kind == Kind::Count) {
      std::vector<size_t> hits;
      for (size_t i = pos_; i < lines_.size(); ++i)
        if (matches(d, lines_[i])) hits.push_back(i);
      if (static_cast<int>(hits.size()) != d.count || hits.empty()) {
        fail(d, "expected exactly " + std::to_string(d.count) + " matching lines, found " +
                    std::to_string(hits.size()) + "; search started at " + where(lines_, pos_));
        return false;
      }
      *first = hits.front();
      *next = hits.back() + 1;
      return true;
    }
    for (size_t i = pos_; i < lines_.size(); ++i)
      if (matches(d, lines_[i])) { *first = i; *next = i + 1; return true; }
    fail(d, "not found; search started at " + where(lines_, pos_));
    return false;
  }

  // The pending CHECK-NOTs must not match in [pos_, end).
  void flush_nots(size_t end) {
    for (const Directive* d : nots_)
      for (size_t i = pos_; i < end; ++i)
        if (matches(*d, lines_[i])) {
          fail(*d, "found at " + where(lines_, i) + " (searched from " + where(lines_, pos_) + " up to " +
                       where(lines_, end) + ")");
          break;
        }
    nots_.clear();
  }

  const std::vector<Line>& lines_;
  CheckResult* r_;
  size_t pos_ = 0;
  std::vector<const Directive*> nots_;
};

}  // namespace

CheckResult run_checks(const std::string& check_text, const std::string& check_name,
                       const std::vector<std::string>& listing) {
  CheckResult r;
  std::vector<Directive> directives;
  std::map<std::string, std::string> defines;
  load(check_text, check_name, 0, &defines, &directives, &r);
  if (!r.ok) return r;
  if (directives.empty()) {
    r.ok = false;
    r.errors.push_back(check_name + ": no CHECK directives");
    return r;
  }
  std::vector<Line> lines;
  for (size_t i = 0; i < listing.size(); ++i) {
    const std::string t = ltrim(rtrim(listing[i]));
    if (t.empty() || t[0] == '#') continue;
    lines.push_back({t, static_cast<int>(i + 1), is_instruction_line(t)});
  }
  Checker c(lines, &r);
  for (const Directive& d : directives)
    if (!c.run(d)) return r;
  c.finish();
  return r;
}

}  // namespace flashptx::sass
