// ptxsim: the PTX parser and pre-decoder. Every instruction is decoded once into an Inst (opcode,
// types, modifier bits, operands resolved to register indices, symbols and label targets); an
// instruction form the simulator does not implement is a load error naming it and its line.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "tools/sim/core.h"
#include "tools/sim/sm100.h"

namespace ptxsim {
namespace {

struct Stmt {
  enum K { kText, kOpen, kClose, kLabel } k;
  std::string s;
  uint32_t line;
};

std::string trim(std::string_view v) {
  size_t a = 0, b = v.size();
  while (a < b && isspace((unsigned char)v[a])) ++a;
  while (b > a && isspace((unsigned char)v[b - 1])) --b;
  return std::string(v.substr(a, b - a));
}


// Removes comments, keeping newlines (line numbers).
std::string strip_comments(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '"') {  // strings (.pragma): copy verbatim
      out += in[i++];
      while (i < in.size() && in[i] != '"') out += in[i++];
      if (i < in.size()) out += in[i];
    } else if (in[i] == '/' && i + 1 < in.size() && in[i + 1] == '/') {
      while (i < in.size() && in[i] != '\n') ++i;
      if (i < in.size()) out += '\n';
    } else if (in[i] == '/' && i + 1 < in.size() && in[i + 1] == '*') {
      i += 2;
      while (i + 1 < in.size() && !(in[i] == '*' && in[i + 1] == '/')) { if (in[i] == '\n') out += '\n'; ++i; }
      ++i;
    } else {
      out += in[i];
    }
  }
  return out;
}

int64_t parse_int(const std::string& s, bool* ok) {
  *ok = true;
  if (s.empty()) { *ok = false; return 0; }
  size_t i = 0;
  bool neg = false;
  if (s[0] == '-') { neg = true; i = 1; } else if (s[0] == '+') { i = 1; }
  uint64_t v = 0;
  std::string t = s.substr(i);
  while (!t.empty() && (t.back() == 'U' || t.back() == 'u')) t.pop_back();
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'f' || t[1] == 'F') && t.size() == 10) {
    v = std::stoull(t.substr(2), nullptr, 16);
  } else if (t.size() > 2 && t[0] == '0' && (t[1] == 'd' || t[1] == 'D') && t.size() == 18) {
    v = std::stoull(t.substr(2), nullptr, 16);
  } else if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    for (size_t j = 2; j < t.size(); ++j) if (!isxdigit((unsigned char)t[j])) { *ok = false; return 0; }
    v = std::stoull(t.substr(2), nullptr, 16);
  } else if (!t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return isdigit((unsigned char)c); })) {
    v = std::stoull(t, nullptr, (t.size() > 1 && t[0] == '0') ? 8 : 10);
  } else {
    *ok = false;
    return 0;
  }
  return neg ? -(int64_t)v : (int64_t)v;
}

// Splits at top-level commas.
std::vector<std::string> split_operands(std::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[' || c == '{' || c == '(') ++depth;
    if (c == ']' || c == '}' || c == ')') --depth;
    if (c == ',' && depth == 0) { out.push_back(trim(cur)); cur.clear(); continue; }
    cur += c;
  }
  if (!trim(cur).empty()) out.push_back(trim(cur));
  return out;
}

std::vector<std::string> split_dots(const std::string& s) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : s) {
    if (c == '.') { parts.push_back(cur); cur.clear(); } else cur += c;
  }
  parts.push_back(cur);
  return parts;
}

Ty parse_ty(const std::string& t) {
  static const std::map<std::string, Ty> m = {
      {"pred", T_PRED}, {"b8", T_B8}, {"b16", T_B16}, {"b32", T_B32}, {"b64", T_B64}, {"b128", T_B128},
      {"u8", T_U8}, {"u16", T_U16}, {"u32", T_U32}, {"u64", T_U64}, {"s8", T_S8}, {"s16", T_S16},
      {"s32", T_S32}, {"s64", T_S64}, {"f16", T_F16}, {"f16x2", T_F16X2}, {"bf16", T_BF16},
      {"bf16x2", T_BF16X2}, {"f32", T_F32}, {"f64", T_F64}, {"e4m3", T_E4M3}, {"e5m2", T_E5M2},
      {"e4m3x2", T_E4M3X2}, {"e5m2x2", T_E5M2X2}, {"tf32", T_TF32}};
  auto it = m.find(t);
  return it == m.end() ? T_NONE : it->second;
}

struct Special_ { const char* name; Special id; };
const Special_ kSpecials[] = {
    {"%tid.x", SR_TID_X}, {"%tid.y", SR_TID_Y}, {"%tid.z", SR_TID_Z}, {"%ntid.x", SR_NTID_X},
    {"%ntid.y", SR_NTID_Y}, {"%ntid.z", SR_NTID_Z}, {"%ctaid.x", SR_CTAID_X}, {"%ctaid.y", SR_CTAID_Y},
    {"%ctaid.z", SR_CTAID_Z}, {"%nctaid.x", SR_NCTAID_X}, {"%nctaid.y", SR_NCTAID_Y},
    {"%nctaid.z", SR_NCTAID_Z}, {"%laneid", SR_LANEID}, {"%warpid", SR_WARPID}, {"%nwarpid", SR_NWARPID},
    {"%smid", SR_SMID}, {"%nsmid", SR_NSMID}, {"%clock", SR_CLOCK}, {"%clock64", SR_CLOCK64},
    {"%cluster_ctaid.x", SR_CLUSTER_CTAID_X}, {"%cluster_ctaid.y", SR_CLUSTER_CTAID_Y},
    {"%cluster_ctaid.z", SR_CLUSTER_CTAID_Z}, {"%cluster_nctaid.x", SR_CLUSTER_NCTAID_X},
    {"%cluster_nctaid.y", SR_CLUSTER_NCTAID_Y}, {"%cluster_nctaid.z", SR_CLUSTER_NCTAID_Z},
    {"%cluster_ctarank", SR_CLUSTER_CTARANK}, {"%cluster_nctarank", SR_CLUSTER_NCTARANK},
    {"%clusterid.x", SR_CLUSTERID_X}, {"%clusterid.y", SR_CLUSTERID_Y}, {"%clusterid.z", SR_CLUSTERID_Z},
    {"%nclusterid.x", SR_NCLUSTERID_X}, {"%nclusterid.y", SR_NCLUSTERID_Y},
    {"%nclusterid.z", SR_NCLUSTERID_Z}, {"%dynamic_smem_size", SR_DYN_SMEM},
    {"%total_smem_size", SR_TOTAL_SMEM}, {"%lanemask_eq", SR_LANEMASK_EQ}, {"%lanemask_lt", SR_LANEMASK_LT},
    {"%lanemask_le", SR_LANEMASK_LE}, {"%lanemask_gt", SR_LANEMASK_GT}, {"%lanemask_ge", SR_LANEMASK_GE},
    {"%gridid", SR_GRIDID}, {"%globaltimer", SR_GLOBALTIMER},
};

struct Sym { SymKind sk; int64_t off; };

class Parser {
 public:
  Parser(std::string_view src, std::string_view name, bool lenient) : lenient_(lenient) {
    mod_ = std::make_shared<Module>();
    mod_->name = std::string(name);
    text_ = strip_comments(src);
  }

  std::shared_ptr<Module> run(std::string* err) {
    scan();
    if (!error_.empty()) { if (err) *err = error_; return nullptr; }
    parse_top();
    if (!error_.empty()) { if (err) *err = error_; return nullptr; }
    finish();
    if (!error_.empty()) { if (err) *err = error_; return nullptr; }
    std::string missing;
    for (size_t f = 0; f < mod_->forms.size(); ++f)
      if (!mod_->form_impl[f]) {
        const Inst& in = mod_->code[mod_->form_first[f]];
        missing += mod_->name + ":" + std::to_string(in.line) + ": unimplemented instruction form '" +
                   mod_->forms[f] + "' (" + mod_->texts[in.text] + ")\n";
      }
    if (!missing.empty()) {
      if (err) *err = missing;
      if (!lenient_) return nullptr;
    }
    return mod_;
  }

 private:
  void fail(uint32_t line, const std::string& msg) {
    if (error_.empty()) error_ = mod_->name + ":" + std::to_string(line) + ": " + msg;
  }

  // Splits the text into statements: text up to ';', '{', '}', labels.
  void scan() {
    std::string cur;
    uint32_t line = 1, start_line = 1;
    int paren = 0;
    bool init_braces = false;  // inside "= { ... }" initialiser
    int init_depth = 0;
    auto flush = [&](Stmt::K k) {
      std::string t = trim(cur);
      if (!t.empty()) stmts_.push_back({Stmt::kText, t, start_line});
      cur.clear();
      if (k != Stmt::kText) stmts_.push_back({k, "", line});
      start_line = line;
    };
    for (size_t i = 0; i < text_.size(); ++i) {
      char c = text_[i];
      if (trim(cur).empty()) start_line = line;
      if (c == '\n') {
        ++line;
        std::string t = trim(cur);
        if (paren == 0 && (t.rfind(".version", 0) == 0 || t.rfind(".target", 0) == 0 || t.rfind(".address_size", 0) == 0 ||
                           t.rfind(".file", 0) == 0 || t.rfind(".loc", 0) == 0)) { cur.clear(); continue; }
        cur += ' ';
        continue;
      }
      if (c == '"') {
        cur += c;
        ++i;
        while (i < text_.size() && text_[i] != '"') cur += text_[i++];
        if (i < text_.size()) cur += '"';
        continue;
      }
      if (init_braces) {
        cur += c;
        if (c == '{') ++init_depth;
        if (c == '}') { if (--init_depth == 0) init_braces = false; }
        continue;
      }
      if (c == '(') ++paren;
      if (c == ')') --paren;
      if (c == ';' && paren == 0) { flush(Stmt::kText); continue; }
      if (c == '{' && paren == 0) {
        std::string t = trim(cur);
        if (!t.empty() && t.back() == '=') { init_braces = true; init_depth = 1; cur += c; continue; }
        if (!t.empty() && t[0] != '.') {
          // an operand vector "{%r1, %r2}" inside an instruction
          cur += c;
          int d = 1;
          ++i;
          while (i < text_.size() && d > 0) {
            if (text_[i] == '{') ++d;
            if (text_[i] == '}') --d;
            if (text_[i] == '\n') ++line;
            cur += text_[i] == '\n' ? ' ' : text_[i];
            ++i;
          }
          --i;
          continue;
        }
        flush(Stmt::kOpen);
        continue;
      }
      if (c == '}' && paren == 0) { flush(Stmt::kClose); continue; }
      if (c == ':' && paren == 0) {
        bool dbl = (i + 1 < text_.size() && text_[i + 1] == ':') || (i > 0 && text_[i - 1] == ':');
        std::string t = trim(cur);
        if (!dbl && !t.empty() && std::all_of(t.begin(), t.end(), [](char ch) { return isalnum((unsigned char)ch) || ch == '_' || ch == '$'; })) {
          stmts_.push_back({Stmt::kLabel, t, start_line});
          cur.clear();
          continue;
        }
      }
      cur += c;
    }
    if (!trim(cur).empty()) fail(line, "unterminated statement '" + trim(cur) + "'");
  }

  void parse_top() {
    size_t i = 0;
    while (i < stmts_.size() && error_.empty()) {
      const Stmt& s = stmts_[i];
      if (s.k == Stmt::kText) {
        const std::string& t = s.s;
        if (t.find(".entry") != std::string::npos || t.find(".func") != std::string::npos) {
          bool is_entry = t.find(".entry") != std::string::npos;
          bool decl_only = i + 1 >= stmts_.size() || stmts_[i + 1].k != Stmt::kOpen;
          uint32_t fi = declare_func(t, is_entry, s.line);
          if (decl_only) { ++i; continue; }
          i += 2;
          i = parse_body(i, fi);
          continue;
        }
        parse_module_directive(t, s.line);
        ++i;
      } else {
        fail(s.line, "unexpected brace or label at module scope");
        ++i;
      }
    }
  }

  void parse_module_directive(const std::string& t, uint32_t line) {
    if (t.rfind(".version", 0) == 0 || t.rfind(".target", 0) == 0 || t.rfind(".address_size", 0) == 0 ||
        t.rfind(".file", 0) == 0 || t.rfind(".loc", 0) == 0 || t.rfind(".pragma", 0) == 0)
      return;
    // variables: [.extern|.visible|.weak] (.shared|.global|.const) [.align N] .type name[N] [= {...}]
    std::istringstream ss(t);
    std::string w;
    bool ext = false;
    Space sp = SP_GENERIC;
    uint32_t align = 0;
    Ty ty = T_NONE;
    std::string rest;
    while (ss >> w) {
      if (w == ".extern") ext = true;
      else if (w == ".visible" || w == ".weak") {}
      else if (w == ".shared") sp = SP_SHARED;
      else if (w == ".global") sp = SP_GLOBAL;
      else if (w == ".const") sp = SP_CONST;
      else if (w == ".align") { ss >> w; align = (uint32_t)std::stoul(w); }
      else if (w[0] == '.' && parse_ty(w.substr(1)) != T_NONE) ty = parse_ty(w.substr(1));
      else { std::getline(ss, rest); rest = w + rest; break; }
    }
    if (sp == SP_GENERIC || ty == T_NONE) { fail(line, "unsupported module directive '" + t + "'"); return; }
    declare_var(rest, sp, ty, align, ext, line, /*global_scope=*/true);
  }

  // name, name[N], name[] with optional "= {...}" or "= v".
  void declare_var(const std::string& rest_in, Space sp, Ty ty, uint32_t align, bool ext, uint32_t line, bool global_scope) {
    std::string rest = trim(rest_in);
    std::string init;
    size_t eq = rest.find('=');
    if (eq != std::string::npos) { init = trim(rest.substr(eq + 1)); rest = trim(rest.substr(0, eq)); }
    std::string name = rest;
    uint64_t count = 1;
    bool unsized = false;
    size_t lb = rest.find('[');
    if (lb != std::string::npos) {
      name = trim(rest.substr(0, lb));
      std::string n = rest.substr(lb + 1, rest.find(']') - lb - 1);
      if (trim(n).empty()) unsized = true; else count = std::stoull(n);
    }
    uint32_t esz = (uint32_t)ty_bytes(ty);
    if (align == 0) align = esz;
    if (sp == SP_SHARED) {
      if (ext || unsized) {
        mod_->dyn_smem_align = std::max(mod_->dyn_smem_align, align);
        dyn_syms_.push_back(name);
        syms_scope_.back()[name] = {SK_SHARED, -1};  // patched in finish()
      } else {
        uint32_t off = (mod_->static_smem + align - 1) / align * align;
        mod_->static_smem = off + (uint32_t)(esz * count);
        syms_scope_.back()[name] = {SK_SHARED, off};
      }
      return;
    }
    GlobalVar g;
    g.name = name;
    g.space = sp;
    g.align = align;
    g.size = (uint32_t)(esz * count);
    g.init.assign(g.size, 0);
    if (!init.empty()) {
      std::string body = init;
      if (body.front() == '{') body = body.substr(1, body.rfind('}') - 1);
      auto vals = split_operands(body);
      for (size_t k = 0; k < vals.size() && (k + 1) * esz <= g.size; ++k) {
        bool ok;
        int64_t v = parse_int(vals[k], &ok);
        if (!ok) { fail(line, "unsupported initialiser '" + vals[k] + "'"); return; }
        memcpy(&g.init[k * esz], &v, esz);
      }
    }
    (void)global_scope;
    syms_scope_.front()[name] = {SK_GLOBAL, (int64_t)mod_->globals.size()};
    mod_->globals.push_back(std::move(g));
  }

  // Parses ".param .align A .b8 name[N]" / ".param .u64 name" lists.
  static std::vector<ParamDecl> parse_param_list(const std::string& s, uint32_t* total) {
    std::vector<ParamDecl> out;
    uint32_t off = 0;
    for (auto& p : split_operands(s)) {
      std::istringstream ss(p);
      std::string w;
      uint32_t align = 0, esz = 0, count = 1;
      std::string name;
      while (ss >> w) {
        if (w == ".param" || w == ".ptr" || w == ".global" || w == ".shared") continue;
        if (w == ".align") { ss >> w; align = (uint32_t)std::stoul(w); continue; }
        if (w[0] == '.' && parse_ty(w.substr(1)) != T_NONE) { esz = (uint32_t)ty_bytes(parse_ty(w.substr(1))); continue; }
        if (w[0] == '.') continue;
        name = w;
      }
      size_t lb = name.find('[');
      if (lb != std::string::npos) { count = (uint32_t)std::stoul(name.substr(lb + 1)); name = name.substr(0, lb); }
      if (align == 0) align = esz;
      off = (off + align - 1) / align * align;
      out.push_back({name, off, esz * count, align});
      off += esz * count;
    }
    if (total) *total = off;
    return out;
  }

  uint32_t declare_func(const std::string& t, bool is_entry, uint32_t line) {
    // [.visible|.extern|.weak] (.entry|.func) [(rets)] name (params) directives
    size_t kw = t.find(is_entry ? ".entry" : ".func");
    std::string rest = trim(t.substr(kw + (is_entry ? 6 : 5)));
    std::string rets;
    if (!rest.empty() && rest[0] == '(') {
      size_t close = rest.find(')');
      rets = rest.substr(1, close - 1);
      rest = trim(rest.substr(close + 1));
    }
    size_t np = 0;
    while (np < rest.size() && (isalnum((unsigned char)rest[np]) || rest[np] == '_' || rest[np] == '$')) ++np;
    std::string name = rest.substr(0, np);
    rest = trim(rest.substr(np));
    std::string params;
    if (!rest.empty() && rest[0] == '(') {
      int d = 0;
      size_t k = 0;
      for (; k < rest.size(); ++k) {
        if (rest[k] == '(') ++d;
        if (rest[k] == ')' && --d == 0) break;
      }
      params = rest.substr(1, k - 1);
      rest = trim(rest.substr(k + 1));
    }
    uint32_t fi;
    auto it = mod_->func_index.find(name);
    if (it != mod_->func_index.end()) fi = it->second;
    else {
      fi = (uint32_t)mod_->funcs.size();
      mod_->funcs.emplace_back();
      mod_->func_index[name] = fi;
    }
    Func& f = mod_->funcs[fi];
    f.name = name;
    f.is_entry = is_entry;
    f.params = parse_param_list(params, &f.param_bytes);
    f.rets = parse_param_list(rets, nullptr);
    // performance directives
    std::istringstream ss(rest);
    std::string w;
    auto read3 = [&](uint32_t* v) {
      std::string r;
      std::getline(ss, r);
      auto parts = split_operands(r);
      for (size_t k = 0; k < parts.size() && k < 3; ++k) v[k] = (uint32_t)std::stoul(parts[k]);
      ss.clear();
    };
    // directives may follow each other on one logical line: tokenise by directive names
    std::string r2 = rest;
    auto take = [&](const char* d, uint32_t* v, int n) {
      size_t p = r2.find(d);
      if (p == std::string::npos) return;
      std::string tail = r2.substr(p + strlen(d));
      size_t nextdot = tail.find('.');
      std::string args = tail.substr(0, nextdot);
      auto parts = split_operands(args);
      for (int k = 0; k < n && k < (int)parts.size(); ++k) v[k] = (uint32_t)std::stoul(parts[k]);
    };
    (void)read3;
    (void)line;
    take(".maxntid", f.maxntid, 3);
    take(".reqntid", f.reqntid, 3);
    take(".reqnctapercluster", f.reqcluster, 3);
    take(".maxnreg", &f.maxnreg, 1);
    take(".minnctapersm", &f.minnctapersm, 1);
    if (r2.find(".explicitcluster") != std::string::npos) f.explicitcluster = true;
    return fi;
  }

  // Register declarations: ".reg .b32 %r<5>", ".reg .pred p, q", ".reg .b64 %rd1".
  void declare_regs(const std::string& t, uint32_t line) {
    std::string rest = trim(t.substr(4));
    // skip type and .v2 etc.
    std::istringstream ss(rest);
    std::string w, names;
    Ty ty = T_NONE;
    while (ss >> w) {
      if (w[0] == '.') {
        if (parse_ty(w.substr(1)) != T_NONE) ty = parse_ty(w.substr(1));
        else if (w.rfind(".v", 0) == 0) { fail(line, "vector registers unsupported"); return; }
        continue;
      }
      std::string tail;
      std::getline(ss, tail);
      names = w + tail;
      break;
    }
    for (auto& nm : split_operands(names)) {
      size_t lt = nm.find('<');
      if (lt != std::string::npos) {
        std::string base = trim(nm.substr(0, lt));
        uint32_t cnt = (uint32_t)std::stoul(nm.substr(lt + 1));
        if (ty == T_B128) { fail(line, "ranges of .b128 registers are not supported"); return; }
        RegRange rr{base, reg_next_, cnt};
        reg_ranges_.back().push_back(rr);
        reg_next_ += cnt;
      } else {
        reg_scope_.back()[trim(nm)] = reg_next_;
        reg_next_ += ty == T_B128 ? 2 : 1;  // a .b128 register: two 64-bit slots, low half first
      }
    }
  }

  struct RegRange { std::string base; uint32_t first, count; };
  // Finds a register by name in the scope stack; -1 if none.
  int64_t find_reg(const std::string& name) const {
    for (size_t d = reg_scope_.size(); d-- > 0;) {
      auto it = reg_scope_[d].find(name);
      if (it != reg_scope_[d].end()) return it->second;
      // ranges: base followed by digits
      for (auto& rr : reg_ranges_[d]) {
        if (name.size() > rr.base.size() && name.compare(0, rr.base.size(), rr.base) == 0) {
          const char* p = name.c_str() + rr.base.size();
          bool digits = *p != 0;
          for (const char* q = p; *q; ++q) if (!isdigit((unsigned char)*q)) digits = false;
          if (digits) {
            uint32_t k = (uint32_t)std::stoul(p);
            if (k < rr.count) return rr.first + k;
          }
        }
      }
    }
    return -1;
  }
  bool find_sym(const std::string& name, Sym* s) const {
    for (size_t d = syms_scope_.size(); d-- > 0;) {
      auto it = syms_scope_[d].find(name);
      if (it != syms_scope_[d].end()) { *s = it->second; return true; }
    }
    return false;
  }

  size_t parse_body(size_t i, uint32_t fi) {
    Func& f = mod_->funcs[fi];
    f.defined = true;
    f.begin = (uint32_t)mod_->code.size();
    reg_scope_.assign(1, {});
    reg_ranges_.assign(1, {});
    reg_next_ = 0;
    syms_scope_.resize(1);
    syms_scope_.push_back({});
    labels_.clear();
    fixups_.clear();
    cur_func_ = fi;
    // params as symbols
    if (f.is_entry) {
      for (auto& p : f.params) syms_scope_.back()[p.name] = {SK_KPARAM, p.offset};
    } else {
      f.param_lofs.clear();
      f.ret_lofs.clear();
      for (auto& p : f.params) {
        uint32_t o = alloc_lparam(p.size, p.align);
        f.param_lofs.push_back(o);
        syms_scope_.back()[p.name] = {SK_LPARAM, o};
      }
      for (auto& p : f.rets) {
        uint32_t o = alloc_lparam(p.size, p.align);
        f.ret_lofs.push_back(o);
        syms_scope_.back()[p.name] = {SK_LPARAM, o};
      }
    }
    int depth = 1;
    while (i < stmts_.size() && error_.empty()) {
      const Stmt& s = stmts_[i++];
      if (s.k == Stmt::kOpen) {
        ++depth;
        reg_scope_.push_back({});
        reg_ranges_.push_back({});
        syms_scope_.push_back({});
        continue;
      }
      if (s.k == Stmt::kClose) {
        if (--depth == 0) break;
        reg_scope_.pop_back();
        reg_ranges_.pop_back();
        syms_scope_.pop_back();
        continue;
      }
      if (s.k == Stmt::kLabel) { labels_[s.s] = (uint32_t)mod_->code.size(); continue; }
      const std::string& t = s.s;
      if (t.rfind(".reg", 0) == 0) { declare_regs(t, s.line); continue; }
      if (t.rfind(".param", 0) == 0) {  // call-site param variable
        uint32_t total = 0;
        auto d = parse_param_list(t, &total);
        for (auto& p : d) syms_scope_.back()[p.name] = {SK_LPARAM, alloc_lparam(p.size, p.align)};
        continue;
      }
      if (t.rfind(".shared", 0) == 0 || t.rfind(".local", 0) == 0 || t.rfind(".global", 0) == 0) {
        parse_module_directive(t, s.line);
        continue;
      }
      if (t.rfind(".pragma", 0) == 0 || t.rfind(".loc", 0) == 0) continue;
      if (t[0] == '.') { fail(s.line, "unsupported directive in function body: '" + t + "'"); continue; }
      parse_inst(t, s.line);
    }
    f.end = (uint32_t)mod_->code.size();
    f.reg_count = reg_next_;
    for (auto& fx : fixups_) {
      auto it = labels_.find(fx.label);
      if (it == labels_.end()) { fail(mod_->code[fx.pc].line, "unknown label '" + fx.label + "'"); continue; }
      mod_->code[fx.pc].o[fx.slot].imm = it->second;
    }
    syms_scope_.resize(1);
    return i;
  }

  uint32_t alloc_lparam(uint32_t size, uint32_t align) {
    if (align == 0) align = 1;
    uint32_t o = (mod_->lparam_bytes + align - 1) / align * align;
    mod_->lparam_bytes = o + std::max(size, 1u);
    return o;
  }

  // One operand.
  bool parse_operand(const std::string& s_in, Opnd* o, uint32_t line, uint32_t pc, int slot, bool label_ok) {
    std::string s = trim(s_in);
    if (s.empty()) { fail(line, "empty operand"); return false; }
    if (s == "_") { o->kind = K_SINK; return true; }
    if (s[0] == '!') { o->neg = true; s = trim(s.substr(1)); }
    if (s[0] == '{') {  // vector
      std::string body = s.substr(1, s.rfind('}') - 1);
      auto el = split_operands(body);
      o->kind = K_VEC;
      o->n = (uint8_t)el.size();
      o->reg = (uint32_t)mod_->vecs.size();
      for (auto& e : el) {
        VecElem v{K_NONE, 0, 0};
        if (e == "_") v.kind = K_SINK;
        else {
          int64_t r = find_reg(e);
          if (r >= 0) { v.kind = K_REG; v.reg = (uint32_t)r; }
          else {
            bool ok;
            v.imm = parse_int(e, &ok);
            if (!ok) { fail(line, "bad vector element '" + e + "'"); return false; }
            v.kind = K_IMM;
          }
        }
        mod_->vecs.push_back(v);
      }
      return true;
    }
    if (s[0] == '[') {  // address
      std::string body = trim(s.substr(1, s.rfind(']') - 1));
      o->kind = K_ADDR;
      auto parts = split_operands(body);
      if (parts.size() == 2) {  // [tmap, {coords}]
        Opnd v;
        if (!parse_operand(parts[1], &v, line, pc, slot, false)) return false;
        o->n = v.n;
        o->reg = v.reg;
        body = parts[0];
      }
      // base [+ offset]
      std::string base = body;
      int64_t off = 0;
      size_t plus = body.find('+', 1);
      size_t minus = body.find('-', 1);
      size_t opos = std::min(plus, minus);
      if (opos != std::string::npos) {
        base = trim(body.substr(0, opos));
        std::string offs = trim(body.substr(opos + 1));
        bool ok;
        off = parse_int(offs, &ok);
        if (!ok) { fail(line, "bad address offset '" + body + "'"); return false; }
        if (body[opos] == '-') off = -off;
      }
      int64_t r = find_reg(base);
      if (r >= 0) { o->sk = SK_REG; o->reg2 = (uint32_t)r; o->imm = off; return true; }
      Sym sy;
      if (find_sym(base, &sy)) {
        o->sk = sy.sk;
        if (sy.sk == SK_GLOBAL) { o->reg2 = (uint32_t)sy.off; o->imm = off; }
        else if (sy.sk == SK_SHARED && sy.off < 0) { o->reg2 = 1; o->imm = off; }  // dynamic window
        else o->imm = sy.off + off;
        return true;
      }
      bool ok;
      int64_t a = parse_int(base, &ok);
      if (ok) { o->sk = SK_NONE; o->imm = a + off; return true; }
      fail(line, "unknown address base '" + base + "'");
      return false;
    }
    size_t bar = s.find('|');
    if (bar != std::string::npos) {
      std::string sa = trim(s.substr(0, bar)), sb = trim(s.substr(bar + 1));
      int64_t a = sa == "_" ? int64_t(kNoReg) : find_reg(sa), b = sb == "_" ? int64_t(kNoReg) : find_reg(sb);
      if (a < 0 || b < 0) { fail(line, "bad register pair '" + s + "'"); return false; }
      o->kind = K_PAIR;
      o->reg = (uint32_t)a;
      o->reg2 = (uint32_t)b;
      return true;
    }
    if (s[0] == '%') {
      for (auto& sp : kSpecials)
        if (s == sp.name) { o->kind = K_SPECIAL; o->reg = sp.id; return true; }
    }
    int64_t r = find_reg(s);
    if (r >= 0) { o->kind = K_REG; o->reg = (uint32_t)r; return true; }
    bool ok;
    int64_t v = parse_int(s, &ok);
    if (ok) { o->kind = K_IMM; o->imm = v; return true; }
    Sym sy;
    if (find_sym(s, &sy)) {
      o->kind = K_SYM;
      o->sk = sy.sk;
      if (sy.sk == SK_GLOBAL) { o->reg2 = (uint32_t)sy.off; o->imm = 0; }
      else if (sy.sk == SK_SHARED && sy.off < 0) { o->reg2 = 1; o->imm = 0; }
      else o->imm = sy.off;
      return true;
    }
    auto fit = mod_->func_index.find(s);
    if (fit != mod_->func_index.end()) { o->kind = K_FUNC; o->reg = fit->second; return true; }
    if (label_ok) {
      o->kind = K_LABEL;
      fixups_.push_back({pc, slot, s});
      return true;
    }
    fail(line, "unknown operand '" + s + "'");
    return false;
  }

  void parse_inst(const std::string& t_in, uint32_t line) {
    std::string t = t_in;
    Inst in;
    in.line = line;
    in.func = cur_func_;
    if (t[0] == '@') {
      size_t sp = t.find_first_of(" \t");
      std::string g = t.substr(1, sp - 1);
      if (g[0] == '!') { in.guard_neg = true; g = g.substr(1); }
      int64_t r = find_reg(g);
      if (r < 0) { fail(line, "unknown guard predicate '" + g + "'"); return; }
      in.guard = (int32_t)r;
      t = trim(t.substr(sp));
    }
    size_t sp = t.find_first_of(" \t(");
    std::string mnem = sp == std::string::npos ? t : t.substr(0, sp);
    std::string ops = sp == std::string::npos ? "" : trim(t.substr(sp));
    uint32_t pc = (uint32_t)mod_->code.size();
    std::string text = mnem + (ops.empty() ? "" : " " + ops);
    // normalise whitespace in the text for reports
    std::string norm;
    for (char c : text) { if (c == '\t') c = ' '; if (!(c == ' ' && !norm.empty() && norm.back() == ' ')) norm += c; }
    in.text = (uint32_t)mod_->texts.size();
    mod_->texts.push_back(norm);
    std::vector<std::string> opv = split_operands(ops);
    bool is_call = mnem.rfind("call", 0) == 0;
    if (is_call) {
      // call[.uni] [(ret),] func, (args)
      std::vector<std::string> flat;
      for (auto& x : opv) flat.push_back(x);
      in.op = OP_CALL;
      int slot = 0;
      Opnd retv, argv;
      std::string fname;
      std::vector<std::string> rets, args;
      size_t k = 0;
      if (!flat.empty() && flat[0][0] == '(') { rets = split_operands(flat[0].substr(1, flat[0].size() - 2)); k = 1; }
      if (k < flat.size()) fname = flat[k++];
      if (k < flat.size() && flat[k][0] == '(') args = split_operands(flat[k].substr(1, flat[k].size() - 2));
      auto fit = mod_->func_index.find(fname);
      if (fit == mod_->func_index.end()) { fail(line, "call of unknown function '" + fname + "'"); return; }
      in.o[0].kind = K_FUNC;
      in.o[0].reg = fit->second;
      // args/rets as vectors of local-param offsets (imm)
      auto vec_of = [&](const std::vector<std::string>& names, Opnd* o) {
        o->kind = K_VEC;
        o->n = (uint8_t)names.size();
        o->reg = (uint32_t)mod_->vecs.size();
        for (auto& nm : names) {
          Sym sy{};
          if (!find_sym(nm, &sy) || sy.sk != SK_LPARAM) { fail(line, "bad call parameter '" + nm + "'"); return; }
          mod_->vecs.push_back({K_IMM, 0, sy.off});
        }
      };
      vec_of(args, &in.o[1]);
      vec_of(rets, &in.o[2]);
      in.nops = 3;
      (void)slot; (void)retv; (void)argv;
      finish_inst(in, "call" + std::string(mnem.find(".uni") != std::string::npos ? ".uni" : ""));
      return;
    }
    if (opv.size() > 8) { fail(line, "too many operands"); return; }
    in.nops = (uint8_t)opv.size();
    bool label_ok = mnem.rfind("bra", 0) == 0;
    for (size_t k = 0; k < opv.size(); ++k)
      if (!parse_operand(opv[k], &in.o[k], line, pc, (int)k, label_ok)) return;
    decode(in, mnem);
    finish_inst(in, mnem);
  }

  void finish_inst(Inst& in, const std::string& form) {
    auto it = form_ids_.find(form);
    uint32_t fid;
    if (it == form_ids_.end()) {
      fid = (uint32_t)mod_->forms.size();
      form_ids_[form] = fid;
      mod_->forms.push_back(form);
      mod_->form_impl.push_back(in.implemented);
      mod_->form_count.push_back(0);
      mod_->form_first.push_back((uint32_t)mod_->code.size());
    } else {
      fid = it->second;
    }
    if (!in.implemented && mod_->form_impl[fid]) mod_->form_impl[fid] = 0;
    mod_->form_count[fid]++;
    in.form = fid;
    mod_->code.push_back(in);
  }

  // Decodes the mnemonic into op, types, modifiers. Unknown parts make the form unimplemented.
  void decode(Inst& in, const std::string& mnem) {
    auto p = split_dots(mnem);
    const std::string& base = p[0];
    std::vector<Ty> types;
    bool bad = false;
    std::vector<std::string> unknown;
    auto mod = [&](const std::string& m) -> bool {
      static const std::map<std::string, uint32_t> bits = {
          {"ftz", M_FTZ}, {"sat", M_SAT}, {"rn", M_RN}, {"rz", M_RZ}, {"rm", M_RM}, {"rp", M_RP},
          {"approx", M_APPROX}, {"satfinite", M_SATFINITE}, {"trans", M_TRANS}, {"uni", M_UNI},
          {"read", M_READ}, {"inc", M_INC}, {"dec", M_DEC}, {"aligned", M_ALIGNED}, {"volatile", M_VOLATILE},
          {"nc", M_NC}, {"acquire", M_ACQUIRE}, {"release", M_RELEASE}, {"relaxed", M_RELAXED}, {"sc", M_SC},
          {"acq_rel", M_ACQREL}, {"cta", M_CTA}, {"cluster", M_CLUSTER}, {"gpu", M_GPU}, {"sys", M_SYS},
          {"parity", M_PARITY}, {"hi", M_HI}, {"lo", M_LO}, {"wide", M_WIDE}, {"sync", 0}, {"full", 0},
          {"rni", M_RN}, {"rzi", M_RZ}};
      auto it = bits.find(m);
      if (it == bits.end()) return false;
      in.mods |= it->second;
      return true;
    };
    auto space = [&](const std::string& m) -> bool {
      if (m == "global") { in.space = SP_GLOBAL; return true; }
      if (m == "shared" || m == "shared::cta") { in.space = SP_SHARED; return true; }
      if (m == "shared::cluster") { in.space = SP_SHARED_CLUSTER; return true; }
      if (m == "param") { in.space = SP_PARAM; return true; }
      if (m == "local") { in.space = SP_LOCAL; return true; }
      if (m == "const") { in.space = SP_CONST; return true; }
      return false;
    };
    auto cmp = [&](const std::string& m) -> bool {
      static const std::map<std::string, Cmp> c = {
          {"eq", C_EQ}, {"ne", C_NE}, {"lt", C_LT}, {"le", C_LE}, {"gt", C_GT}, {"ge", C_GE}, {"lo", C_LO},
          {"ls", C_LS}, {"hi", C_HI}, {"hs", C_HS}, {"equ", C_EQU}, {"neu", C_NEU}, {"ltu", C_LTU},
          {"leu", C_LEU}, {"gtu", C_GTU}, {"geu", C_GEU}, {"num", C_NUM}, {"nan", C_NAN}};
      auto it = c.find(m);
      if (it == c.end()) return false;
      in.sub = it->second;
      return true;
    };
    // Modifiers of single instructions, kept in Inst::sub (core.h).
    auto own = [&](const std::string& w) -> bool {
      if ((base == "cvt" || base == "fma") && w == "relu") { in.sub |= 1; return true; }
      if (base == "cvt" && w == "rna") { in.sub |= 2; return true; }
      if ((base == "szext" || base == "bmsk") && (w == "wrap" || w == "clamp")) { in.sub = w == "clamp"; return true; }
      if ((base == "sub" || base == "subc") && w == "cc") { in.sub = 1; return true; }
      if (base == "prmt") {
        static const std::map<std::string, uint8_t> modes = {{"f4e", 1}, {"b4e", 2}, {"rc8", 3}, {"ecl", 4}, {"ecr", 5}, {"rc16", 6}};
        if (auto it = modes.find(w); it != modes.end()) { in.sub = it->second; return true; }
      }
      return false;
    };
    auto generic = [&](size_t from) {
      for (size_t k = from; k < p.size(); ++k) {
        Ty t = parse_ty(p[k]);
        if (t != T_NONE) { types.push_back(t); continue; }
        if (mod(p[k]) || space(p[k]) || own(p[k])) continue;
        if (p[k] == "v2") { in.sub2 = 2; continue; }
        if (p[k] == "v4") { in.sub2 = 4; continue; }
        unknown.push_back(p[k]);
      }
    };
    static const std::map<std::string, Op> simple = {
        {"add", OP_ADD}, {"sub", OP_SUB}, {"fma", OP_FMA}, {"div", OP_DIV}, {"rem", OP_REM}, {"abs", OP_ABS},
        {"neg", OP_NEG}, {"min", OP_MIN}, {"max", OP_MAX}, {"ex2", OP_EX2}, {"rcp", OP_RCP}, {"tanh", OP_TANH}, {"and", OP_AND},
        {"or", OP_OR}, {"xor", OP_XOR}, {"not", OP_NOT}, {"shl", OP_SHL}, {"shr", OP_SHR}, {"bfi", OP_BFI},
        {"prmt", OP_PRMT}, {"mov", OP_MOV}, {"selp", OP_SELP}, {"cvt", OP_CVT}, {"ld", OP_LD}, {"st", OP_ST},
        {"bra", OP_BRA}, {"ret", OP_RET}, {"exit", OP_EXIT}, {"trap", OP_TRAP}, {"brkpt", OP_BRKPT},
        {"nanosleep", OP_NANOSLEEP}, {"mapa", OP_MAPA}, {"membar", OP_FENCE}, {"szext", OP_SZEXT},
        {"bmsk", OP_BMSK}, {"subc", OP_SUBC}, {"lg2", OP_LG2}};
    auto sit = simple.find(base);
    if (base == "mul" || base == "mad") {
      in.op = base == "mul" ? OP_MUL : OP_MAD_LO;
      generic(1);
      if (in.mods & M_HI) in.op = base == "mul" ? OP_MUL_HI : OP_INVALID;
      if (in.mods & M_WIDE) in.op = base == "mul" ? OP_MUL_WIDE : OP_INVALID;
      if (base == "mad" && !(in.mods & M_LO) && !types.empty() && !ty_float(types[0])) bad = true;
      if (base == "mad" && !types.empty() && ty_float(types[0])) in.op = OP_FMA;
    } else if (base == "setp" || base == "set") {
      in.op = OP_SETP;
      if (base == "set") bad = true;
      for (size_t k = 1; k < p.size(); ++k) {
        if (cmp(p[k])) { if (k != 1) bad = true; continue; }
        if (p[k] == "and") { in.sub2 = 1; continue; }
        if (p[k] == "or") { in.sub2 = 2; continue; }
        if (p[k] == "xor") { in.sub2 = 3; continue; }
        Ty t = parse_ty(p[k]);
        if (t != T_NONE) { types.push_back(t); continue; }
        if (mod(p[k])) continue;
        unknown.push_back(p[k]);
      }
    } else if (base == "cvta") {
      in.op = OP_CVTA;
      size_t k = 1;
      if (p.size() > 1 && p[1] == "to") { in.op = OP_CVTA_TO; k = 2; }
      generic(k);
    } else if (base == "shfl") {
      in.op = OP_SHFL;
      for (size_t k = 1; k < p.size(); ++k) {
        if (p[k] == "up") in.sub = SH_UP;
        else if (p[k] == "down") in.sub = SH_DOWN;
        else if (p[k] == "bfly") in.sub = SH_BFLY;
        else if (p[k] == "idx") in.sub = SH_IDX;
        else if (p[k] == "sync" || p[k] == "b32") {}
        else unknown.push_back(p[k]);
      }
      types.push_back(T_B32);
    } else if (base == "vote") {
      in.op = OP_VOTE;
      for (size_t k = 1; k < p.size(); ++k) {
        if (p[k] == "all") in.sub = V_ALL;
        else if (p[k] == "any") in.sub = V_ANY;
        else if (p[k] == "uni") in.sub = V_UNI;
        else if (p[k] == "ballot") in.sub = V_BALLOT;
        else if (p[k] == "sync" || p[k] == "pred" || p[k] == "b32") {}
        else unknown.push_back(p[k]);
      }
    } else if (base == "elect") {
      in.op = OP_ELECT;
      generic(1);
    } else if (base == "atom" || base == "red") {
      in.op = base == "atom" ? OP_ATOM : OP_RED;
      static const std::map<std::string, AtomOp> ao = {
          {"add", A_ADD}, {"min", A_MIN}, {"max", A_MAX}, {"exch", A_EXCH}, {"cas", A_CAS},
          {"and", A_AND}, {"or", A_OR}, {"xor", A_XOR}, {"inc", A_INC}, {"dec", A_DEC}};
      for (size_t k = 1; k < p.size(); ++k) {
        auto it = ao.find(p[k]);
        if (it != ao.end()) { in.sub = it->second; continue; }
        Ty t = parse_ty(p[k]);
        if (t != T_NONE) { types.push_back(t); continue; }
        if (mod(p[k]) || space(p[k])) continue;
        unknown.push_back(p[k]);
      }
    } else if (base == "bar" || base == "barrier") {
      size_t k = 1;
      if (p.size() > 1 && p[1] == "cluster") {
        if (p.size() > 2 && p[2] == "arrive") in.op = OP_CLUSTER_ARRIVE;
        else if (p.size() > 2 && p[2] == "wait") in.op = OP_CLUSTER_WAIT;
        k = 3;
      } else if (p.size() > 1 && p[1] == "warp") {
        in.op = OP_BAR_WARP;
        k = 3;
      } else {
        if (p.size() > 1 && p[1] == "cta") k = 2;
        if (p.size() > k && p[k] == "sync") in.op = OP_BAR_SYNC;
        else if (p.size() > k && p[k] == "arrive") in.op = OP_BAR_ARRIVE;
        else if (base == "bar" && p.size() == 1) in.op = OP_BAR_SYNC;
        ++k;
        if (base == "bar") in.mods |= M_ALIGNED;  // bar{.cta}.sync is bar.cta.sync.aligned
      }
      generic(k);
    } else if (base == "setmaxnreg") {
      in.op = OP_SETMAXNREG;
      generic(1);
    } else if (base == "fence") {
      if (p.size() > 2 && p[1] == "proxy" && p[2] == "async") { in.op = OP_FENCE_PROXY_ASYNC; for (size_t k = 3; k < p.size(); ++k) if (!space(p[k])) unknown.push_back(p[k]); }
      else if (p.size() > 2 && p[1] == "proxy" && p[2].rfind("tensormap", 0) == 0) { in.op = OP_FENCE_PROXY_TMAP; }
      else if (p.size() > 1 && p[1] == "mbarrier_init") { in.op = OP_FENCE_MBAR_INIT; generic(2); }
      else { in.op = OP_FENCE; generic(1); }
    } else if (base == "mbarrier") {
      std::string what = p.size() > 1 ? p[1] : "";
      size_t k = 2;
      if (what == "init") in.op = OP_MBAR_INIT;
      else if (what == "inval") in.op = OP_MBAR_INVAL;
      else if (what == "expect_tx") in.op = OP_MBAR_EXPECT_TX;
      else if (what == "try_wait") in.op = OP_MBAR_TRY_WAIT;
      else if (what == "test_wait") in.op = OP_MBAR_TEST_WAIT;
      else if (what == "arrive") {
        in.op = OP_MBAR_ARRIVE;
        if (p.size() > 2 && p[2] == "expect_tx") { in.op = OP_MBAR_ARRIVE_TX; k = 3; }
      }
      generic(k);
    } else if (base == "cp") {
      // cp.async.bulk[.tensor.Nd][.prefetch...], cp.reduce.async.bulk[.tensor.Nd]
      bool reduce = p.size() > 1 && p[1] == "reduce";
      size_t k = reduce ? 2 : 1;
      if (!(p.size() > k + 1 && p[k] == "async" && p[k + 1] == "bulk")) { bad = true; }
      k += 2;
      bool tensor = false, prefetch = false, commit = false, wait = false;
      std::string dst, src;
      int dims = 0;
      for (; k < p.size(); ++k) {
        const std::string& w = p[k];
        if (w == "tensor") tensor = true;
        else if (w.size() == 2 && w[1] == 'd' && isdigit((unsigned char)w[0])) dims = w[0] - '0';
        else if (w == "prefetch") prefetch = true;
        else if (w == "commit_group") commit = true;
        else if (w == "wait_group") wait = true;
        else if (w == "read") in.mods |= M_READ;
        else if (w == "global" || w == "shared::cluster" || w == "shared::cta" || w == "L2") { if (dst.empty()) dst = w; else src = w; }
        else if (w == "tile" || w == "bulk_group" || w == "mbarrier::complete_tx::bytes") {}
        else if (w == "multicast::cluster") in.mods |= M_MULTICAST;
        else if (w == "add") in.sub = A_ADD;
        else if (parse_ty(w) != T_NONE) types.push_back(parse_ty(w));
        else unknown.push_back(w);
      }
      in.k = (uint16_t)dims;
      if (commit) in.op = OP_BULK_COMMIT;
      else if (wait) in.op = OP_BULK_WAIT;
      else if (prefetch) in.op = tensor ? OP_TMA_PREFETCH : OP_INVALID;
      else if (tensor) in.op = reduce ? OP_TMA_REDUCE : (dst == "global" ? OP_TMA_STORE : OP_TMA_LOAD);
      else in.op = reduce ? OP_BULK_REDUCE : (dst == "global" ? OP_BULK_STORE : OP_BULK_LOAD);
      if (in.op == OP_TMA_LOAD && dst != "shared::cluster") bad = true;
      if (in.op == OP_BULK_LOAD && dst != "shared::cluster") bad = true;
      // cp.async.bulk.shared::cluster.shared::cta: shared memory to (another CTA's) shared memory
      if (in.op == OP_BULK_LOAD && src == "shared::cta") in.sub2 = 1;
      if (in.op == OP_TMA_REDUCE && in.sub != A_ADD) bad = true;
    } else if (base == "wgmma") {
      std::string what = p.size() > 1 ? p[1] : "";
      if (what == "fence") in.op = OP_WGMMA_FENCE;
      else if (what == "commit_group") in.op = OP_WGMMA_COMMIT;
      else if (what == "wait_group") in.op = OP_WGMMA_WAIT;
      else if (what == "mma_async") {
        in.op = OP_WGMMA_MMA;
        for (size_t k = 2; k < p.size(); ++k) {
          const std::string& w = p[k];
          if (w == "sync" || w == "aligned") continue;
          if (w[0] == 'm' && w.find('n') != std::string::npos && w.find('k') != std::string::npos) {
            unsigned mm = 0, nn = 0, kk = 0;
            if (sscanf(w.c_str(), "m%un%uk%u", &mm, &nn, &kk) == 3) { in.m = (uint16_t)mm; in.n = (uint16_t)nn; in.k = (uint16_t)kk; continue; }
          }
          Ty t = parse_ty(w);
          if (t != T_NONE) { types.push_back(t); continue; }
          unknown.push_back(w);
        }
        // type list: dtype, atype, btype
        if (types.size() == 3) { in.ty = types[0]; in.ty2 = types[1]; types.clear(); }
        // SS: a is a descriptor (64-bit register); RS: a is a vector
        in.sub2 = in.nops > 1 && in.o[1].kind == K_VEC ? 1 : 0;
      }
      if (in.op != OP_WGMMA_MMA) generic(2);
    } else if (base == "ldmatrix" || base == "stmatrix") {
      in.op = base == "ldmatrix" ? OP_LDMATRIX : OP_STMATRIX;
      for (size_t k = 1; k < p.size(); ++k) {
        const std::string& w = p[k];
        if (w == "m8n8") { in.m = 8; continue; }
        if (w == "x1") { in.n = 1; continue; }
        if (w == "x2") { in.n = 2; continue; }
        if (w == "x4") { in.n = 4; continue; }
        if (parse_ty(w) != T_NONE) { types.push_back(parse_ty(w)); continue; }
        if (mod(w) || space(w)) continue;
        unknown.push_back(w);
      }
      if (in.m != 8 || in.n == 0) bad = true;
    } else if (base == "tcgen05") {
      decode_tcgen05(in, p, &unknown, &bad);  // tools/sim/parse_sm100.cpp
    } else if (base == "clusterlaunchcontrol") {
      decode_clc(in, p, &unknown, &bad);  // tools/sim/parse_sm100.cpp
    } else if (sit != simple.end()) {
      in.op = sit->second;
      generic(1);
      if (base == "membar") { types.clear(); }
    } else {
      bad = true;
    }
    if (base == "membar") {
      // membar.{cta,gl,sys}: "gl" is a level, not a modifier
      unknown.erase(std::remove(unknown.begin(), unknown.end(), "gl"), unknown.end());
    }
    if (!types.empty()) in.ty = types[0];
    if (types.size() > 1) in.ty2 = types[1];
    if (in.op == OP_MOV && in.ty == T_B128) in.op = OP_MOV_B128;  // tools/sim/exec_sm100.inc
    if (types.size() > 2) bad = true;
    if (!unknown.empty() || bad || in.op == OP_INVALID) in.implemented = false;
    if (in.implemented) in.implemented = check_supported(in);
  }

  // The closed set of forms the executor implements (beyond decoding).
  static bool check_supported(const Inst& in) {
    Ty t = in.ty;
    bool i32 = t == T_S32 || t == T_U32 || t == T_B32;
    bool i64 = t == T_S64 || t == T_U64 || t == T_B64;
    bool i16 = t == T_S16 || t == T_U16 || t == T_B16;
    switch (in.op) {
      case OP_ADD: return i16 || i32 || i64 || t == T_F32;
      case OP_SUB: return in.sub ? (t == T_U32 || t == T_S32) : (i16 || i32 || i64 || t == T_F32);  // .cc: 32-bit
      case OP_SUBC: return t == T_U32 || t == T_S32;
      case OP_SZEXT: return t == T_U32 || t == T_S32;
      case OP_BMSK: return t == T_B32;
      case OP_LG2: return t == T_F32 && (in.mods & M_APPROX);
      case OP_MUL: return i16 || i32 || i64 || t == T_F32;
      case OP_MUL_HI: return i32 || i64;
      case OP_MUL_WIDE: return i16 || i32;
      case OP_MAD_LO: return i32 || i64;
      case OP_FMA: return t == T_F32 || (t == T_BF16 && (in.mods & M_RN) && !(in.mods & (M_FTZ | M_SAT)));
                     // fma.rn{.relu}.bf16
      case OP_DIV: case OP_REM: return i32 || i64 || (in.op == OP_DIV && t == T_F32 && (in.mods & (M_RN | M_APPROX | M_FULL_DIV_OK)));
      case OP_ABS: case OP_NEG: return i32 || i64 || t == T_F32 || i16;
      case OP_MIN: case OP_MAX: return i32 || i64 || t == T_F32 || i16;
      case OP_EX2: return t == T_F32 && (in.mods & M_APPROX);
      case OP_RCP: return t == T_F32;
      case OP_TANH: return t == T_F32 && (in.mods & M_APPROX);  // tanh.approx.f32 (the .f16/.bf16 forms: not implemented)
      case OP_AND: case OP_OR: case OP_XOR: case OP_NOT: return i16 || i32 || i64 || t == T_PRED;
      case OP_SHL: case OP_SHR: return i16 || i32 || i64;
      case OP_BFI: return i32 || i64;
      case OP_PRMT: return t == T_B32;
      case OP_MOV: return t != T_NONE;
      case OP_SELP: return t != T_NONE && t != T_PRED;
      case OP_SETP: return t != T_NONE && t != T_PRED && t != T_F16X2 && t != T_BF16X2;
      case OP_CVT: {
        Ty d = in.ty, s = in.ty2;
        if (d == T_TF32) return s == T_F32 && ((in.sub & 2) != 0 || (in.mods & (M_RN | M_RZ)) != 0);  // .rna/.rn/.rz
        if ((in.sub & 2) != 0) return false;  // .rna: tf32 alone
        if ((in.sub & 1) != 0) return (d == T_BF16X2 || d == T_F16X2) && s == T_F32;  // .relu
        bool di = ty_bytes(d) && !ty_float(d) && d != T_E4M3X2 && d != T_E5M2X2 && d != T_F16X2 && d != T_BF16X2;
        bool si = ty_bytes(s) && !ty_float(s) && s != T_E4M3X2 && s != T_E5M2X2 && s != T_F16X2 && s != T_BF16X2;
        if (di && si) return true;
        if ((d == T_BF16X2 || d == T_F16X2) && s == T_F32) return true;
        if ((d == T_E4M3X2 || d == T_E5M2X2) && s == T_F32 && (in.mods & M_SATFINITE)) return true;
        if (d == T_F32 && (s == T_F16 || s == T_BF16)) return true;
        if ((d == T_F16 || d == T_BF16) && s == T_F32) return true;
        if (d == T_F32 && si) return true;
        if (di && s == T_F32) return true;
        if (d == T_F32 && s == T_F32) return true;
        return false;
      }
      case OP_CVTA: case OP_CVTA_TO: return (t == T_U64 || t == T_U32) && in.space != SP_GENERIC;
      case OP_MAPA: return in.space == SP_SHARED_CLUSTER && (t == T_U32 || t == T_U64);
      case OP_LD: case OP_ST: return ty_bytes(t) > 0 && t != T_PRED;
      case OP_ATOM: case OP_RED:
        if (in.space != SP_GLOBAL && in.space != SP_SHARED && in.space != SP_GENERIC) return false;
        if (t == T_F32) return in.sub == A_ADD;
        return i32 || i64;
      case OP_BRA: case OP_CALL: case OP_RET: case OP_EXIT: case OP_TRAP: case OP_BRKPT: case OP_NANOSLEEP:
        return true;
      case OP_SHFL: case OP_VOTE: case OP_BAR_WARP: case OP_ELECT: return true;
      case OP_BAR_SYNC: case OP_BAR_ARRIVE: case OP_CLUSTER_ARRIVE: case OP_CLUSTER_WAIT: return true;
      case OP_SETMAXNREG: return (in.mods & (M_INC | M_DEC)) && t == T_U32;
      case OP_FENCE: case OP_FENCE_PROXY_ASYNC: case OP_FENCE_MBAR_INIT: case OP_FENCE_PROXY_TMAP: return true;
      case OP_MBAR_TRY_WAIT: case OP_MBAR_TEST_WAIT:
        return t == T_B64 && (in.mods & M_PARITY) && in.space == SP_SHARED;
      case OP_MBAR_INIT: case OP_MBAR_ARRIVE: case OP_MBAR_ARRIVE_TX: case OP_MBAR_EXPECT_TX: case OP_MBAR_INVAL:
        return t == T_B64 && (in.space == SP_SHARED || in.space == SP_SHARED_CLUSTER);
      case OP_TMA_LOAD: case OP_TMA_STORE: case OP_TMA_REDUCE: case OP_TMA_PREFETCH: return in.k >= 1 && in.k <= 5;
      case OP_BULK_LOAD: case OP_BULK_STORE: return true;
      case OP_BULK_REDUCE: return in.sub == A_ADD && t == T_F32;
      case OP_BULK_COMMIT: case OP_BULK_WAIT: return true;
      case OP_WGMMA_FENCE: case OP_WGMMA_COMMIT: case OP_WGMMA_WAIT: return true;
      case OP_WGMMA_MMA:
        if (in.m != 64 || in.ty != T_F32) return false;
        if (in.ty2 == T_BF16 || in.ty2 == T_F16) return in.k == 16 && in.n % 8 == 0 && in.n >= 8 && in.n <= 256;
        if (in.ty2 == T_E4M3 || in.ty2 == T_E5M2) return in.k == 32 && in.n % 8 == 0 && in.n >= 8 && in.n <= 256;
        return false;
      case OP_LDMATRIX: case OP_STMATRIX: return t == T_B16 && (in.space == SP_SHARED);
      case OP_TC_ALLOC: case OP_TC_DEALLOC: case OP_TC_RELINQUISH: case OP_TC_LD: case OP_TC_ST: case OP_TC_WAIT_LD:
      case OP_TC_WAIT_ST: case OP_TC_FENCE_BEFORE: case OP_TC_FENCE_AFTER: case OP_TC_MMA: case OP_TC_COMMIT:
        return tcgen05_supported(in);
      case OP_MOV_B128: return (in.o[0].kind == K_REG && in.o[1].kind == K_VEC && in.o[1].n == 2) ||
                               (in.o[0].kind == K_VEC && in.o[0].n == 2 && in.o[1].kind == K_REG);
      case OP_CLC_TRY_CANCEL: case OP_CLC_IS_CANCELED: case OP_CLC_FIRST_CTAID: return true;
      default: return false;
    }
  }
  static constexpr uint32_t M_FULL_DIV_OK = 0;

  void finish() {
    // dynamic shared window: after the statics, aligned
    uint32_t dyn_off = (mod_->static_smem + mod_->dyn_smem_align - 1) / mod_->dyn_smem_align * mod_->dyn_smem_align;
    // registers: each entry from 0, each .func after the largest entry
    uint32_t emax = 0;
    for (auto& f : mod_->funcs) if (f.is_entry) emax = std::max(emax, f.reg_count);
    uint32_t next = emax;
    std::vector<uint32_t> base(mod_->funcs.size(), 0);
    for (size_t fi = 0; fi < mod_->funcs.size(); ++fi)
      if (!mod_->funcs[fi].is_entry) { base[fi] = next; next += mod_->funcs[fi].reg_count; }
    mod_->entry_regs_max = emax;
    mod_->total_regs = next;
    std::vector<uint8_t> vec_done(mod_->vecs.size(), 0);
    for (auto& in : mod_->code) {
      uint32_t b = base[in.func];
      if (in.guard >= 0) in.guard += (int32_t)b;
      for (int k = 0; k < in.nops; ++k) {
        Opnd& o = in.o[k];
        if (o.kind == K_REG) o.reg += b;
        if (o.kind == K_PAIR) { if (o.reg != kNoReg) o.reg += b; if (o.reg2 != kNoReg) o.reg2 += b; }
        if (o.kind == K_ADDR && o.sk == SK_REG) o.reg2 += b;
        if ((o.kind == K_SYM || o.kind == K_ADDR) && o.sk == SK_SHARED && o.reg2 == 1) { o.imm += dyn_off; o.reg2 = 0; }
        if ((o.kind == K_VEC || (o.kind == K_ADDR && o.n)) && in.op != OP_CALL) {
          for (uint32_t e = 0; e < o.n; ++e) {
            if (vec_done[o.reg + e]) continue;
            vec_done[o.reg + e] = 1;
            if (mod_->vecs[o.reg + e].kind == K_REG) mod_->vecs[o.reg + e].reg += b;
          }
        }
      }
    }
    dyn_base_ = dyn_off;
    mod_->static_smem = dyn_off;  // the dynamic window starts here
    for (auto& f : mod_->funcs)
      if (!f.defined && f.name != "vprintf" && !f.is_entry) {
        // declared only: calls to it are unimplemented
        for (auto& in : mod_->code)
          if (in.op == OP_CALL && mod_->funcs[in.o[0].reg].name == f.name) {
            in.implemented = false;
            mod_->form_impl[in.form] = 0;
          }
      }
  }

  bool lenient_;
  std::shared_ptr<Module> mod_;
  std::string text_;
  std::vector<Stmt> stmts_;
  std::string error_;
  std::vector<std::unordered_map<std::string, uint32_t>> reg_scope_;
  std::vector<std::vector<RegRange>> reg_ranges_;
  std::vector<std::unordered_map<std::string, Sym>> syms_scope_{1};
  std::vector<std::string> dyn_syms_;
  uint32_t reg_next_ = 0;
  uint32_t cur_func_ = 0;
  uint32_t dyn_base_ = 0;
  std::unordered_map<std::string, uint32_t> labels_;
  struct Fixup { uint32_t pc; int slot; std::string label; };
  std::vector<Fixup> fixups_;
  std::unordered_map<std::string, uint32_t> form_ids_;
};

}  // namespace

std::string Module::location(uint32_t pc) const {
  if (pc >= code.size()) return name + ":?";
  return name + ":" + std::to_string(code[pc].line) + ": " + texts[code[pc].text];
}

std::shared_ptr<const Module> load_module(std::string_view ptx, std::string_view name, std::string* err) {
  Parser p(ptx, name, false);
  return p.run(err);
}
std::shared_ptr<const Module> load_module_lenient(std::string_view ptx, std::string_view name, std::string* err) {
  Parser p(ptx, name, true);
  return p.run(err);
}

std::vector<ParamInfo> entry_params(const Module& m, std::string_view entry) {
  std::vector<ParamInfo> out;
  auto it = m.func_index.find(std::string(entry));
  if (it == m.func_index.end()) return out;
  for (auto& p : m.funcs[it->second].params) out.push_back({p.name, p.offset, p.size, p.align});
  return out;
}
uint32_t entry_param_bytes(const Module& m, std::string_view entry) {
  auto it = m.func_index.find(std::string(entry));
  return it == m.func_index.end() ? 0 : m.funcs[it->second].param_bytes;
}
std::vector<std::string> entries(const Module& m) {
  std::vector<std::string> out;
  for (auto& f : m.funcs) if (f.is_entry && f.defined) out.push_back(f.name);
  return out;
}
std::vector<FormInfo> list_forms(const Module& m) {
  std::vector<FormInfo> out;
  for (size_t f = 0; f < m.forms.size(); ++f) {
    const Inst& in = m.code[m.form_first[f]];
    out.push_back({m.forms[f], m.form_impl[f] != 0, m.form_count[f], m.name + ":" + std::to_string(in.line)});
  }
  std::sort(out.begin(), out.end(), [](const FormInfo& a, const FormInfo& b) { return a.form < b.form; });
  return out;
}

}  // namespace ptxsim
