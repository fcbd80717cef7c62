// A tiny JSON writer and reader for the bench manifest and the raw trace files (`flashptx trace`).
//
// The writer escapes strings per RFC 8259 (quote, backslash, control characters as \u00XX) and
// writes non-finite numbers as null (JSON has no inf/NaN; an LSE of -inf is written as null and
// said so where it matters). The reader parses the whole grammar into a Value tree; it exists so
// that tests can prove the manifests parse back and `flashptx trace --from-json` can re-render a
// saved trace. Numbers are held as double (exact for integers below 2^53; trace clocks fit).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace flashptx::json {

std::string escape(const std::string& s);  // the quoted JSON string literal, quotes included
std::string number(double x);              // shortest round-trip text; "null" if not finite

// Streaming writer with a stack, so brackets always balance; indentation for humans.
class Writer {
 public:
  Writer& begin_object();
  Writer& end_object();
  Writer& begin_array();
  Writer& end_array();
  Writer& key(const std::string& k);
  Writer& value(const std::string& s);
  Writer& value(const char* s) { return value(std::string(s)); }
  Writer& value(double x);
  Writer& value(int64_t x);
  Writer& value(int x) { return value(static_cast<int64_t>(x)); }
  Writer& value(uint64_t x);
  Writer& value(bool b);
  Writer& null();
  template <class T>
  Writer& kv(const std::string& k, const T& v) { key(k); return value(v); }
  const std::string& str() const { return out_; }
  bool complete() const { return stack_.empty() && !out_.empty(); }

 private:
  void before_value();
  void newline();
  std::string out_;
  std::vector<char> stack_;     // '{' or '['
  std::vector<bool> has_item_;  // whether the open container has an element yet
  bool after_key_ = false;
};

struct Value {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<Value> arr;
  std::vector<std::pair<std::string, Value>> obj;  // in document order
  const Value* get(const std::string& k) const;    // object member or nullptr
  double num_or(const std::string& k, double dflt) const;
  std::string str_or(const std::string& k, const std::string& dflt) const;
};

// Parses a whole document. On failure returns false and says where in *err.
bool parse(const std::string& text, Value* out, std::string* err);

}  // namespace flashptx::json
