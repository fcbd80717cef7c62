// The one option parser of the `flashptx` commands: typed options (flag, integer, real, string,
// a fixed number of reals), ranges and allowed values, one optional positional argument or a list
// of them, and the
// rules every command follows:
//   - every option is checked before the command does anything else (no device work first);
//   - `--help` / `-h` anywhere: the help on stdout, exit 0;
//   - an unknown option, a value that is not of the option's type or outside its range or its
//     allowed values, a missing value, a stray argument: one line on stderr naming it, exit 2.
// Values are written `--name VALUE` or `--name=VALUE`. A value may not start with "--" (so that
// `--seqlen --causal` says "--seqlen needs a value"); negative numbers ("-1") are values.
//
// Messages (tests/host/test_cli_options.cpp checks them word for word), for `flashptx CMD`:
//   flashptx CMD: unknown option '--bogus'
//   flashptx CMD: --seqlen needs a value
//   flashptx CMD: --window-us needs 2 values (T0 T1)
//   flashptx CMD: --seqlen expects an integer, got 'abc'
//   flashptx CMD: --min-ms expects a number, got 'x'
//   flashptx CMD: --batch must be at least 1, got -1
//   flashptx CMD: --heads must be between 1 and 65535, got 70000
//   flashptx CMD: --hdim must be one of 64, 128, 256, got 96
//   flashptx CMD: --causal takes no value
//   flashptx CMD: unexpected argument 'foo'
// each followed by the line "(flashptx CMD --help lists the options)".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace flashptx::cli {

// What parsing (and a command's own validation) decided.
struct Parsed {
  enum Kind { kRun, kHelp, kError };
  Kind kind = kRun;
  std::string text;  // kHelp: the help, for stdout; kError: the message, for stderr
  bool run() const { return kind == kRun; }
  int exit_code() const { return kind == kError ? 2 : 0; }
};

// Prints a kHelp outcome on stdout, a kError outcome on stderr; returns its exit status (0 or 2).
int finish(const Parsed& p);

class Options {
 public:
  // command: "bench" (messages say "flashptx bench: ..."); usage: the line after "usage: ";
  // about: a paragraph under it (may be empty).
  Options(std::string command, std::string usage, std::string about = "");

  // A heading in the help before the options declared after it.
  Options& group(const std::string& title);
  Options& flag(const std::string& name, bool* out, const std::string& help);
  // [lo, hi] inclusive; `allowed` non-empty: only those values (the range is then not used).
  Options& integer(const std::string& name, int64_t* out, int64_t lo, int64_t hi, const std::string& help,
                   const std::string& meta = "N");
  Options& integer_of(const std::string& name, int64_t* out, const std::vector<int64_t>& allowed,
                      const std::string& help, const std::string& meta = "N");
  Options& real(const std::string& name, double* out, double lo, double hi, const std::string& help,
                const std::string& meta = "X");
  // `count` numbers after the option, each in [lo, hi]; meta names them ("T0 T1").
  Options& reals(const std::string& name, std::vector<double>* out, int count, double lo, double hi,
                 const std::string& help, const std::string& meta);
  // `allowed` empty: any value.
  Options& text(const std::string& name, std::string* out, const std::vector<std::string>& allowed,
                const std::string& help, const std::string& meta = "S");
  // One optional positional argument (its checking is the command's).
  Options& positional(const std::string& meta, std::string* out, const std::string& help);
  // Any number of positional arguments, in order (instead of `positional`).
  Options& positionals(const std::string& meta, std::vector<std::string>* out, const std::string& help);

  Parsed parse(int argc, const char* const* argv);

  // Whether the last parse saw the option (by name, "--batch").
  bool given(const std::string& name) const;
  // The help text (what `--help` prints).
  std::string help() const;
  // The names of every declared option, in order ("--batch", ...), `--help` last.
  std::vector<std::string> names() const;
  // A kError outcome for a command's own validation, in the same format as the parser's.
  Parsed error(const std::string& message) const;
  const std::string& command() const { return command_; }

 private:
  enum class Type { kFlag, kInt, kReal, kReals, kText, kHeading };
  struct Opt {
    Type type;
    std::string name, help, meta;
    bool* b = nullptr;
    int64_t* i = nullptr;
    double* d = nullptr;
    std::vector<double>* ds = nullptr;
    std::string* s = nullptr;
    int64_t ilo = 0, ihi = 0;
    double dlo = 0, dhi = 0;
    int count = 1;
    std::vector<int64_t> iallowed;
    std::vector<std::string> sallowed;
  };
  // A new option of `type` at the end of the list (the registrars fill in its target and limits).
  Opt& add(Type type, const std::string& name, const std::string& help, const std::string& meta = "");
  const Opt* find(const std::string& name) const;
  bool set_value(const Opt& o, const std::string& v, std::string* err);

  std::string command_, usage_, about_;
  std::vector<Opt> opts_;
  std::string pos_meta_, pos_help_;
  std::string* pos_ = nullptr;
  std::vector<std::string>* pos_list_ = nullptr;
  std::vector<std::string> given_;
};

}  // namespace flashptx::cli
