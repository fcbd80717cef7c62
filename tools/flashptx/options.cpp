// The option parser of the `flashptx` commands: see options.h.
#include "tools/flashptx/options.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace flashptx::cli {

namespace {

bool parse_int(const std::string& s, int64_t* v) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(s.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0') return false;
  *v = x;
  return true;
}

bool parse_real(const std::string& s, double* v) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(s.c_str(), &end);
  if (errno == ERANGE || *end != '\0' || !std::isfinite(x)) return false;
  *v = x;
  return true;
}

// Shortest readable text of a bound: "0.5", "200", "1e+06".
std::string num(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

template <class T>
std::string join(const std::vector<T>& v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  return os.str();
}

bool is_option_token(const std::string& a) { return a.size() > 2 && a[0] == '-' && a[1] == '-'; }

}  // namespace

int finish(const Parsed& p) {
  if (p.kind == Parsed::kHelp) std::fputs(p.text.c_str(), stdout);
  if (p.kind == Parsed::kError) std::fputs(p.text.c_str(), stderr);
  return p.exit_code();
}

Options::Options(std::string command, std::string usage, std::string about)
    : command_(std::move(command)), usage_(std::move(usage)), about_(std::move(about)) {}

Options::Opt& Options::add(Type type, const std::string& name, const std::string& help, const std::string& meta) {
  Opt o{};
  o.type = type;
  o.name = name;
  o.help = help;
  o.meta = meta;
  opts_.push_back(o);
  return opts_.back();
}

Options& Options::group(const std::string& title) {
  add(Type::kHeading, "", title);
  return *this;
}

Options& Options::flag(const std::string& name, bool* out, const std::string& help) {
  add(Type::kFlag, name, help).b = out;
  return *this;
}

Options& Options::integer(const std::string& name, int64_t* out, int64_t lo, int64_t hi, const std::string& help,
                          const std::string& meta) {
  Opt& o = add(Type::kInt, name, help, meta);
  o.i = out;
  o.ilo = lo;
  o.ihi = hi;
  return *this;
}

Options& Options::integer_of(const std::string& name, int64_t* out, const std::vector<int64_t>& allowed,
                             const std::string& help, const std::string& meta) {
  integer(name, out, 0, 0, help, meta);
  opts_.back().iallowed = allowed;
  return *this;
}

Options& Options::real(const std::string& name, double* out, double lo, double hi, const std::string& help,
                       const std::string& meta) {
  Opt& o = add(Type::kReal, name, help, meta);
  o.d = out;
  o.dlo = lo;
  o.dhi = hi;
  return *this;
}

Options& Options::reals(const std::string& name, std::vector<double>* out, int count, double lo, double hi,
                        const std::string& help, const std::string& meta) {
  Opt& o = add(Type::kReals, name, help, meta);
  o.ds = out;
  o.count = count;
  o.dlo = lo;
  o.dhi = hi;
  return *this;
}

Options& Options::text(const std::string& name, std::string* out, const std::vector<std::string>& allowed,
                       const std::string& help, const std::string& meta) {
  Opt& o = add(Type::kText, name, help, meta);
  o.s = out;
  o.sallowed = allowed;
  return *this;
}

Options& Options::positional(const std::string& meta, std::string* out, const std::string& help) {
  pos_meta_ = meta;
  pos_help_ = help;
  pos_ = out;
  return *this;
}

Options& Options::positionals(const std::string& meta, std::vector<std::string>* out, const std::string& help) {
  pos_meta_ = meta;
  pos_help_ = help;
  pos_list_ = out;
  return *this;
}

const Options::Opt* Options::find(const std::string& name) const {
  for (const Opt& o : opts_)
    if (o.type != Type::kHeading && o.name == name) return &o;
  return nullptr;
}

bool Options::given(const std::string& name) const {
  for (const std::string& g : given_)
    if (g == name) return true;
  return false;
}

Parsed Options::error(const std::string& message) const {
  Parsed p;
  p.kind = Parsed::kError;
  p.text = "flashptx " + command_ + ": " + message + "\n(flashptx " + command_ + " --help lists the options)\n";
  return p;
}

// One value of a single-valued option; *err set on failure.
bool Options::set_value(const Opt& o, const std::string& v, std::string* err) {
  switch (o.type) {
    case Type::kInt: {
      int64_t x = 0;
      if (!parse_int(v, &x)) { *err = o.name + " expects an integer, got '" + v + "'"; return false; }
      if (!o.iallowed.empty()) {
        bool ok = false;
        for (int64_t a : o.iallowed) ok = ok || a == x;
        if (!ok) { *err = o.name + " must be one of " + join(o.iallowed) + ", got " + v; return false; }
      } else if (x < o.ilo || x > o.ihi) {
        *err = o.name + (o.ihi == std::numeric_limits<int64_t>::max()
                             ? " must be at least " + std::to_string(o.ilo)
                             : " must be between " + std::to_string(o.ilo) + " and " + std::to_string(o.ihi)) +
               ", got " + v;
        return false;
      }
      *o.i = x;
      return true;
    }
    case Type::kReal: {
      double x = 0;
      if (!parse_real(v, &x)) { *err = o.name + " expects a number, got '" + v + "'"; return false; }
      if (x < o.dlo || x > o.dhi) {
        *err = o.name + " must be between " + num(o.dlo) + " and " + num(o.dhi) + ", got " + v;
        return false;
      }
      *o.d = x;
      return true;
    }
    case Type::kText: {
      if (!o.sallowed.empty()) {
        bool ok = false;
        for (const std::string& a : o.sallowed) ok = ok || a == v;
        if (!ok) { *err = o.name + " must be one of " + join(o.sallowed) + ", got '" + v + "'"; return false; }
      }
      *o.s = v;
      return true;
    }
    default:
      return false;
  }
}

Parsed Options::parse(int argc, const char* const* argv) {
  given_.clear();
  if (pos_list_ != nullptr) pos_list_->clear();
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      Parsed p;
      p.kind = Parsed::kHelp;
      p.text = help();
      return p;
    }
  }
  bool have_pos = false;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (!is_option_token(a)) {
      const bool dash_word = a.size() > 1 && a[0] == '-' && !std::isdigit(static_cast<unsigned char>(a[1]));
      if (dash_word) return error("unknown option '" + a + "'");
      if (pos_list_ != nullptr) {
        pos_list_->push_back(a);
        continue;
      }
      if (pos_ != nullptr && !have_pos) {
        *pos_ = a;
        have_pos = true;
        continue;
      }
      return error("unexpected argument '" + a + "'");
    }
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const Opt* o = find(name);
    if (o == nullptr) return error("unknown option '" + name + "'");
    given_.push_back(name);
    if (o->type == Type::kFlag) {
      if (eq != std::string::npos) return error(name + " takes no value");
      *o->b = true;
      continue;
    }
    if (o->type == Type::kReals) {
      std::vector<std::string> vals;
      if (eq != std::string::npos) vals.push_back(a.substr(eq + 1));
      while (static_cast<int>(vals.size()) < o->count && i + 1 < argc && !is_option_token(argv[i + 1]))
        vals.push_back(argv[++i]);
      if (static_cast<int>(vals.size()) < o->count)
        return error(name + " needs " + std::to_string(o->count) + " values (" + o->meta + ")");
      o->ds->clear();
      for (const std::string& v : vals) {
        double x = 0;
        if (!parse_real(v, &x)) return error(name + " expects a number, got '" + v + "'");
        if (x < o->dlo || x > o->dhi)
          return error(name + " values must be between " + num(o->dlo) + " and " + num(o->dhi) + ", got " + v);
        o->ds->push_back(x);
      }
      continue;
    }
    std::string v;
    if (eq != std::string::npos) {
      v = a.substr(eq + 1);
    } else {
      if (i + 1 >= argc || is_option_token(argv[i + 1])) return error(name + " needs a value");
      v = argv[++i];
    }
    std::string err;
    if (!set_value(*o, v, &err)) return error(err);
  }
  return Parsed{};
}

std::string Options::help() const {
  std::ostringstream os;
  os << "usage: " << usage_ << "\n";
  if (!about_.empty()) os << about_ << (about_.back() == '\n' ? "\n" : "\n\n");
  auto line = [&](const std::string& left, const std::string& text) {
    std::string l = "  " + left;
    if (l.size() < 26) l += std::string(26 - l.size(), ' ');
    else l += "\n" + std::string(26, ' ');
    // continuation lines of a long help text stay in the text column
    std::string t;
    for (char c : text) t += c == '\n' ? std::string("\n") + std::string(26, ' ') : std::string(1, c);
    os << l << t << "\n";
  };
  if (pos_ != nullptr || pos_list_ != nullptr) line(pos_meta_, pos_help_);
  for (const Opt& o : opts_) {
    if (o.type == Type::kHeading) { os << o.help << ":\n"; continue; }
    std::string left = o.name;
    if (o.type == Type::kText && !o.sallowed.empty() && o.meta == "S") {
      left += " ";
      for (size_t i = 0; i < o.sallowed.size(); ++i) {
        if (i) left += '|';
        left += o.sallowed[i];
      }
    } else if (o.type == Type::kInt && !o.iallowed.empty() && o.meta == "N") {
      left += " ";
      for (size_t i = 0; i < o.iallowed.size(); ++i) {
        if (i) left += '|';
        left += std::to_string(o.iallowed[i]);
      }
    } else if (o.type != Type::kFlag) {
      left += " " + o.meta;
    }
    line(left, o.help);
  }
  line("--help, -h", "this text");
  return os.str();
}

std::vector<std::string> Options::names() const {
  std::vector<std::string> n;
  for (const Opt& o : opts_)
    if (o.type != Type::kHeading) n.push_back(o.name);
  n.push_back("--help");
  return n;
}

}  // namespace flashptx::cli
