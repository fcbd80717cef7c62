// Tiny JSON writer and reader: see src/json.h.
#include "tools/support/json.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace flashptx::json {

std::string escape(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\r': o += "\\r"; break;
      case '\t': o += "\\t"; break;
      case '\b': o += "\\b"; break;
      case '\f': o += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o + "\"";
}

std::string number(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[40];
  for (int prec = 6; prec <= 17; ++prec) {  // the shortest text that reads back to the same double
    std::snprintf(buf, sizeof buf, "%.*g", prec, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  return buf;
}

void Writer::newline() {
  out_ += '\n';
  out_.append(2 * stack_.size(), ' ');
}

void Writer::before_value() {
  if (after_key_) { after_key_ = false; return; }
  if (!stack_.empty()) {
    if (has_item_.back()) out_ += ',';
    has_item_.back() = true;
    newline();
  }
}

Writer& Writer::begin_object() { before_value(); out_ += '{'; stack_.push_back('{'); has_item_.push_back(false); return *this; }
Writer& Writer::begin_array() { before_value(); out_ += '['; stack_.push_back('['); has_item_.push_back(false); return *this; }

Writer& Writer::end_object() {
  const bool had = has_item_.back();
  stack_.pop_back();
  has_item_.pop_back();
  if (had) newline();
  out_ += '}';
  return *this;
}

Writer& Writer::end_array() {
  const bool had = has_item_.back();
  stack_.pop_back();
  has_item_.pop_back();
  if (had) newline();
  out_ += ']';
  return *this;
}

Writer& Writer::key(const std::string& k) {
  if (has_item_.back()) out_ += ',';
  has_item_.back() = true;
  newline();
  out_ += escape(k) + ": ";
  after_key_ = true;
  return *this;
}

Writer& Writer::value(const std::string& s) { before_value(); out_ += escape(s); return *this; }
Writer& Writer::value(double x) { before_value(); out_ += number(x); return *this; }
Writer& Writer::value(int64_t x) { before_value(); out_ += std::to_string(x); return *this; }
Writer& Writer::value(uint64_t x) { before_value(); out_ += std::to_string(x); return *this; }
Writer& Writer::value(bool b) { before_value(); out_ += b ? "true" : "false"; return *this; }
Writer& Writer::null() { before_value(); out_ += "null"; return *this; }

// ---- reader -------------------------------------------------------------------------------------
const Value* Value::get(const std::string& k) const {
  if (kind != kObject) return nullptr;
  for (const auto& m : obj)
    if (m.first == k) return &m.second;
  return nullptr;
}
double Value::num_or(const std::string& k, double dflt) const {
  const Value* v = get(k);
  return v && v->kind == kNumber ? v->num : dflt;
}
std::string Value::str_or(const std::string& k, const std::string& dflt) const {
  const Value* v = get(k);
  return v && v->kind == kString ? v->str : dflt;
}

namespace {

struct Parser {
  const std::string& t;
  size_t i = 0;
  std::string err;

  bool fail(const char* what) {
    if (err.empty()) err = std::string(what) + " at offset " + std::to_string(i);
    return false;
  }
  void ws() { while (i < t.size() && (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t')) ++i; }
  bool lit(const char* w) {
    const size_t n = std::strlen(w);
    if (t.compare(i, n, w) != 0) return fail("bad literal");
    i += n;
    return true;
  }
  static void put_utf8(std::string& o, uint32_t c) {
    if (c < 0x80) o += static_cast<char>(c);
    else if (c < 0x800) { o += static_cast<char>(0xc0 | (c >> 6)); o += static_cast<char>(0x80 | (c & 0x3f)); }
    else if (c < 0x10000) { o += static_cast<char>(0xe0 | (c >> 12)); o += static_cast<char>(0x80 | ((c >> 6) & 0x3f)); o += static_cast<char>(0x80 | (c & 0x3f)); }
    else { o += static_cast<char>(0xf0 | (c >> 18)); o += static_cast<char>(0x80 | ((c >> 12) & 0x3f)); o += static_cast<char>(0x80 | ((c >> 6) & 0x3f)); o += static_cast<char>(0x80 | (c & 0x3f)); }
  }
  bool hex4(uint32_t* c) {
    if (i + 4 > t.size()) return fail("short \\u escape");
    *c = 0;
    for (int n = 0; n < 4; ++n) {
      const char h = t[i++];
      *c <<= 4;
      if (h >= '0' && h <= '9') *c |= h - '0';
      else if (h >= 'a' && h <= 'f') *c |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') *c |= h - 'A' + 10;
      else return fail("bad hex digit");
    }
    return true;
  }
  bool string(std::string* o) {
    if (t[i] != '"') return fail("expected string");
    ++i;
    while (i < t.size()) {
      const unsigned char c = t[i++];
      if (c == '"') return true;
      if (c < 0x20) return fail("control character in string");
      if (c != '\\') { *o += static_cast<char>(c); continue; }
      if (i >= t.size()) break;
      const char e = t[i++];
      switch (e) {
        case '"': *o += '"'; break;
        case '\\': *o += '\\'; break;
        case '/': *o += '/'; break;
        case 'b': *o += '\b'; break;
        case 'f': *o += '\f'; break;
        case 'n': *o += '\n'; break;
        case 'r': *o += '\r'; break;
        case 't': *o += '\t'; break;
        case 'u': {
          uint32_t c1 = 0;
          if (!hex4(&c1)) return false;
          if (c1 >= 0xd800 && c1 < 0xdc00 && t.compare(i, 2, "\\u") == 0) {
            i += 2;
            uint32_t c2 = 0;
            if (!hex4(&c2)) return false;
            c1 = 0x10000 + ((c1 - 0xd800) << 10) + (c2 - 0xdc00);
          }
          put_utf8(*o, c1);
          break;
        }
        default: return fail("bad escape");
      }
    }
    return fail("unterminated string");
  }
  bool num(double* x) {
    const size_t s = i;
    if (i < t.size() && t[i] == '-') ++i;
    if (i >= t.size() || !std::isdigit(static_cast<unsigned char>(t[i]))) return fail("bad number");
    if (t[i] == '0') ++i; else while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
    if (i < t.size() && t[i] == '.') {
      ++i;
      if (i >= t.size() || !std::isdigit(static_cast<unsigned char>(t[i]))) return fail("bad fraction");
      while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
    }
    if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
      ++i;
      if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
      if (i >= t.size() || !std::isdigit(static_cast<unsigned char>(t[i]))) return fail("bad exponent");
      while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
    }
    *x = std::strtod(t.substr(s, i - s).c_str(), nullptr);
    return true;
  }
  bool value(Value* v, int depth) {
    if (depth > 200) return fail("nesting too deep");
    ws();
    if (i >= t.size()) return fail("unexpected end");
    const char c = t[i];
    if (c == '{') {
      v->kind = Value::kObject;
      ++i;
      ws();
      if (i < t.size() && t[i] == '}') { ++i; return true; }
      while (true) {
        ws();
        std::string k;
        if (i >= t.size() || !string(&k)) return fail("expected key");
        ws();
        if (i >= t.size() || t[i] != ':') return fail("expected ':'");
        ++i;
        Value m;
        if (!value(&m, depth + 1)) return false;
        v->obj.emplace_back(std::move(k), std::move(m));
        ws();
        if (i < t.size() && t[i] == ',') { ++i; continue; }
        if (i < t.size() && t[i] == '}') { ++i; return true; }
        return fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      v->kind = Value::kArray;
      ++i;
      ws();
      if (i < t.size() && t[i] == ']') { ++i; return true; }
      while (true) {
        Value m;
        if (!value(&m, depth + 1)) return false;
        v->arr.push_back(std::move(m));
        ws();
        if (i < t.size() && t[i] == ',') { ++i; continue; }
        if (i < t.size() && t[i] == ']') { ++i; return true; }
        return fail("expected ',' or ']'");
      }
    }
    if (c == '"') { v->kind = Value::kString; return string(&v->str); }
    if (c == 't') { v->kind = Value::kBool; v->b = true; return lit("true"); }
    if (c == 'f') { v->kind = Value::kBool; v->b = false; return lit("false"); }
    if (c == 'n') { v->kind = Value::kNull; return lit("null"); }
    v->kind = Value::kNumber;
    return num(&v->num);
  }
};

}  // namespace

bool parse(const std::string& text, Value* out, std::string* err) {
  Parser p{text, 0, std::string()};
  *out = Value();
  bool ok = p.value(out, 0);
  if (ok) {
    p.ws();
    if (p.i != text.size()) ok = p.fail("trailing characters");
  }
  if (!ok && err) *err = p.err;
  return ok;
}

}  // namespace flashptx::json
