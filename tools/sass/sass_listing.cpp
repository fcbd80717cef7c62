// Parsing of cuobjdump's SASS and resource-usage dumps, and the normaliser of the golden-SASS
// audit. The normalised form is described in sass_listing.h.
#include "tools/sass/sass_listing.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

namespace flashptx::sass {
namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// The opcode's first segment: "HGMMA.64x128x16.F32.BF16" -> "HGMMA".
std::string opcode_base(const std::string& opcode) { return opcode.substr(0, opcode.find('.')); }

bool is_branch_opcode(const std::string& base) {
  static const std::set<std::string> k = {"BRA", "BRX", "JMP", "JMX", "CALL", "BSSY", "SSY", "PBK", "PCNT"};
  return k.count(base) != 0;
}

bool is_protocol_opcode(const std::string& base) {
  static const std::set<std::string> k = {"USETMAXREG", "BAR", "DEPBAR", "WARPGROUP", "SYNCS", "UTCBAR"};
  return k.count(base) != 0;
}

// "  /*01a0*/   @!P0 BRA 0x1d0 ;   /* 0x... */" -> {0x1a0, "@!P0 BRA 0x1d0"}; false for other lines.
bool parse_instruction_line(const std::string& line, RawInstr* out) {
  std::string s = trim(line);
  if (!starts_with(s, "/*")) return false;
  size_t close = s.find("*/");
  if (close == std::string::npos || close <= 2) return false;
  const std::string addr = s.substr(2, close - 2);
  if (addr.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) return false;
  std::string body = s.substr(close + 2);
  size_t enc = body.rfind("/*");
  if (enc != std::string::npos) body = body.substr(0, enc);
  body = trim(body);
  if (!body.empty() && body.back() == ';') body.pop_back();
  body = trim(body);
  if (body.empty()) return false;
  out->addr = std::stol(addr, nullptr, 16);
  out->text = body;
  return true;
}

// Splits at top-level commas (not inside [], (), {}).
std::vector<std::string> split_operands(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[' || c == '(' || c == '{') ++depth;
    if (c == ']' || c == ')' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) out.push_back(trim(cur));
  return out;
}

std::string erase_register_numbers(std::string s) {
  static const std::regex reuse(R"(\.reuse\b)");
  static const std::regex ur(R"(\bUR\d+\b)"), r(R"(\bR\d+\b)"), up(R"(\bUP\d+\b)"), p(R"(\bP\d+\b)"),
      b(R"(\bB\d+\b)");
  s = std::regex_replace(s, reuse, "");
  s = std::regex_replace(s, ur, "UR");
  s = std::regex_replace(s, r, "R");
  s = std::regex_replace(s, up, "UP");
  s = std::regex_replace(s, p, "P");
  s = std::regex_replace(s, b, "B");
  return s;
}

// Hex, decimal and floating-point immediates -> "#"; register suffixes like ".64" are untouched.
std::string erase_immediates(const std::string& s) {
  static const std::regex imm(R"((^|[^\w.])(0x[0-9a-fA-F]+|\d+(\.\d+)?([eE][+-]?\d+)?)\b)");
  return std::regex_replace(s, imm, "$1#");
}

bool is_hex_immediate(const std::string& s) {
  static const std::regex hex(R"(0x[0-9a-fA-F]+)");
  return std::regex_match(s, hex);
}

struct Split {
  std::string guard, opcode, operands;
};

Split split_instruction(const std::string& text) {
  Split out;
  std::string rest = trim(text);
  if (starts_with(rest, "@")) {
    size_t sp = rest.find_first_of(" \t");
    out.guard = rest.substr(0, sp);
    rest = sp == std::string::npos ? "" : trim(rest.substr(sp));
  }
  size_t sp = rest.find_first_of(" \t");
  out.opcode = rest.substr(0, sp);
  out.operands = sp == std::string::npos ? "" : trim(rest.substr(sp));
  return out;
}

// `label_of` maps a branch target address to its label; null when labels are not wanted.
std::string normalize_with_labels(const std::string& text, const std::map<long, std::string>* label_of) {
  const Split sp = split_instruction(text);
  const std::string base = opcode_base(sp.opcode);
  std::string out = sp.guard.empty() ? "" : erase_register_numbers(sp.guard) + " ";
  out += sp.opcode;
  std::vector<std::string> ops = split_operands(sp.operands);
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string op = ops[i];
    if (is_branch_opcode(base) && is_hex_immediate(op)) {
      const long target = std::stol(op, nullptr, 16);
      op = "#";
      if (label_of && label_of->count(target)) op = label_of->at(target);
    } else {
      op = erase_register_numbers(op);
      const bool memory = op.find('[') != std::string::npos;
      if (memory || !is_protocol_opcode(base)) op = erase_immediates(op);
    }
    out += (i == 0 ? " " : ", ") + op;
  }
  return out;
}

bool is_self_loop(const RawInstr& in) {
  const Split sp = split_instruction(in.text);
  if (!sp.guard.empty() || sp.opcode != "BRA") return false;
  std::vector<std::string> ops = split_operands(sp.operands);
  return ops.size() == 1 && is_hex_immediate(ops[0]) && std::stol(ops[0], nullptr, 16) == in.addr;
}

bool is_nop(const RawInstr& in) { return split_instruction(in.text).opcode == "NOP"; }

// The instructions that the listing keeps: no NOPs, no trailing self-loop.
std::vector<RawInstr> kept_instructions(const SassFunction& fn) {
  std::vector<RawInstr> kept;
  for (const RawInstr& in : fn.instrs)
    if (!is_nop(in)) kept.push_back(in);
  while (!kept.empty() && is_self_loop(kept.back())) kept.pop_back();
  return kept;
}

// Target address -> "L<n>", numbered in order of address.
std::map<long, std::string> assign_labels(const std::vector<RawInstr>& instrs) {
  std::set<long> targets;
  for (const RawInstr& in : instrs) {
    const Split sp = split_instruction(in.text);
    if (!is_branch_opcode(opcode_base(sp.opcode))) continue;
    for (const std::string& op : split_operands(sp.operands))
      if (is_hex_immediate(op)) targets.insert(std::stol(op, nullptr, 16));
  }
  std::map<long, std::string> labels;
  int n = 0;
  for (long t : targets) labels[t] = "L" + std::to_string(n++);
  return labels;
}

}  // namespace

long Resources::get(const std::string& key) const {
  auto it = values.find(key);
  return it == values.end() ? 0 : it->second;
}

std::vector<SassFunction> parse_dump_sass(const std::string& text) {
  std::vector<SassFunction> fns;
  std::istringstream in(text);
  std::string line, arch;
  while (std::getline(in, line)) {
    const std::string t = trim(line);
    if (starts_with(t, ".target")) {
      arch = trim(t.substr(7));
    } else if (starts_with(t, "Function :")) {
      fns.push_back(SassFunction{trim(t.substr(10)), arch, {}});
    } else if (!fns.empty()) {
      RawInstr ri;
      if (parse_instruction_line(line, &ri)) fns.back().instrs.push_back(ri);
    }
  }
  return fns;
}

std::map<std::string, Resources> parse_resource_usage(const std::string& text) {
  std::map<std::string, Resources> out;
  std::istringstream in(text);
  std::string line, current;
  static const std::regex kv(R"(([A-Z_]+(\[\d+\])?):(\d+))");
  while (std::getline(in, line)) {
    const std::string t = trim(line);
    if (starts_with(t, "Function ") && !t.empty() && t.back() == ':') {
      current = trim(t.substr(9, t.size() - 10));
    } else if (!current.empty() && t.find("REG:") != std::string::npos) {
      Resources r;
      r.line = t;
      for (std::sregex_iterator it(t.begin(), t.end(), kv), end; it != end; ++it)
        r.values[(*it)[1]] = std::stol((*it)[3]);
      out[current] = r;
      current.clear();
    }
  }
  return out;
}

std::string normalize_instruction(const std::string& text) { return normalize_with_labels(text, nullptr); }

Listing normalize(const SassFunction& fn) {
  const std::vector<RawInstr> kept = kept_instructions(fn);
  if (kept.empty())
    throw std::runtime_error("kernel " + fn.name + ": the listing parses to zero instructions");
  const std::map<long, std::string> labels = assign_labels(kept);
  Listing out;
  auto next_label = labels.begin();
  for (const RawInstr& in : kept) {
    // A label whose target was a dropped NOP lands on the next kept instruction.
    for (; next_label != labels.end() && next_label->first <= in.addr; ++next_label)
      out.lines.push_back(next_label->second + ":");
    out.lines.push_back("    " + normalize_with_labels(in.text, &labels));
    ++out.instruction_count;
  }
  for (; next_label != labels.end(); ++next_label) out.lines.push_back(next_label->second + ":");
  return out;
}

bool is_instruction_line(const std::string& line) {
  const std::string t = trim(line);
  return !t.empty() && t[0] != '#' && t.back() != ':';
}

std::string spill_reason(const Resources& res, const Listing& listing) {
  std::string why;
  if (res.get("LOCAL") > 0) why += "LOCAL:" + std::to_string(res.get("LOCAL")) + " ";
  if (res.get("STACK") > 0) why += "STACK:" + std::to_string(res.get("STACK")) + " ";
  int ldl = 0, stl = 0;
  for (const std::string& l : listing.lines) {
    const std::string t = trim(l);
    const Split sp = split_instruction(t);
    const std::string base = opcode_base(sp.opcode);
    if (base == "LDL") ++ldl;
    if (base == "STL") ++stl;
  }
  if (ldl) why += std::to_string(ldl) + " LDL ";
  if (stl) why += std::to_string(stl) + " STL ";
  if (why.empty()) return "";
  return "spills or local memory: " + trim(why);
}

std::string golden_file_stem(const std::string& name) {
  bool safe = !name.empty() && name.size() <= 200 && name[0] != '.';
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) safe = false;
  if (safe) return name;
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
  std::string stem;
  for (char c : name.substr(0, 160))
    stem += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') ? c : '_';
  char hex[24];
  std::snprintf(hex, sizeof hex, "~%016llx", static_cast<unsigned long long>(h));
  return stem + hex;
}

}  // namespace flashptx::sass
