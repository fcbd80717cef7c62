// The golden-SASS audit driver (see audit.h): the disassembler runs, the goldens' files, the
// comparison and the report.
#include "tools/sass/audit.h"

#include <sys/wait.h>

#include <algorithm>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "src/kernels.h"
#include "tools/sass/sass_check.h"
#include "tools/sass/sass_diff.h"

#ifndef FLASHPTX_ROOT
#define FLASHPTX_ROOT "."
#endif
#ifndef FLASHPTX_BUILD_DIR
#define FLASHPTX_BUILD_DIR "build"
#endif
#ifndef FLASHPTX_CUOBJDUMP
#define FLASHPTX_CUOBJDUMP "cuobjdump"
#endif

namespace fs = std::filesystem;

namespace flashptx::sass {
namespace {

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) out.push_back(l);
  return out;
}


// "Cuda compilation tools, release 13.0, V13.0.88" -> "release 13.0, V13.0.88".
std::string version_of(const std::string& cmd) {
  std::string out;
  if (run_command(cmd + " --version", &out) != 0) return "unknown";
  for (const std::string& l : split_lines(out)) {
    size_t p = l.find("release ");
    if (p != std::string::npos) return l.substr(p);
  }
  return "unknown";
}

std::string cuda_dir() {
  const char* c = std::getenv("CUDA");
  if (c && *c) return c;
  c = std::getenv("CUDA_HOME");
  return c && *c ? c : "/usr/local/cuda";
}

// The header fields of a golden ("# key: value" lines).
std::map<std::string, std::string> header_of(const std::vector<std::string>& lines) {
  std::map<std::string, std::string> h;
  for (const std::string& l : lines) {
    if (l.size() < 2 || l[0] != '#') continue;
    size_t colon = l.find(": ");
    if (colon != std::string::npos) h[l.substr(2, colon - 2)] = l.substr(colon + 2);
  }
  return h;
}

// The lines that are compared: the listing, the resource line and the instruction count; other
// header lines (versions, object path) become a bare "#", so that the diff keeps file line numbers.
std::vector<std::string> compared_lines(const std::vector<std::string>& lines) {
  std::vector<std::string> b;
  for (const std::string& l : lines) {
    const bool kept_header = l.rfind("# resources:", 0) == 0 || l.rfind("# instructions:", 0) == 0;
    b.push_back(!l.empty() && l[0] == '#' && !kept_header ? "#" : l);
  }
  return b;
}

std::string resolve_object(const std::string& path) {
  if (fs::path(path).is_absolute() || fs::exists(path)) return path;
  return std::string(FLASHPTX_ROOT) + "/" + path;
}

// The object as recorded in a golden's header: relative to the build folder.
std::string object_label(const std::string& obj, const std::string& list_file) {
  std::error_code ec;
  const std::string build = fs::weakly_canonical(fs::absolute(fs::path(list_file).parent_path()), ec).string();
  const std::string o = fs::weakly_canonical(fs::absolute(obj), ec).string();
  if (!build.empty() && o.compare(0, build.size() + 1, build + "/") == 0) return o.substr(build.size() + 1);
  return obj;
}

// Compares one kernel with its golden file (already known to exist), filling status and diff.
void compare_with_golden(KernelReport* k, const std::string& golden_path, const std::string& golden,
                         const std::string& current, const Toolchain& tc) {
  const std::vector<std::string> g = split_lines(golden), c = split_lines(current);
  const auto gh = header_of(g);
  const std::vector<std::string> gb = compared_lines(g), cb = compared_lines(c);
  std::vector<std::string> mism;
  const std::pair<const char*, const std::string*> tools[] = {
      {"nvcc", &tc.nvcc}, {"ptxas", &tc.ptxas}, {"disassembler", &tc.disassembler}};
  for (const auto& [key, now] : tools) {
    const std::string was = gh.count(key) ? gh.at(key) : "(none)";
    if (was != *now) mism.push_back(std::string(key) + " golden \"" + was + "\", current \"" + *now + "\"");
  }
  for (const std::string& m : mism) k->notes.push_back("toolchain mismatch: " + m);
  if (gb == cb) {
    k->golden = mism.empty() ? "match" : "toolchain-mismatch";
    return;
  }
  k->golden = "DIFF";
  k->problems.push_back("kernel " + k->name + " (" + k->arch + ") differs from its golden " + golden_path +
                        (mism.empty() ? "" : " (the toolchain differs too)"));
  k->diff = render_diff(gb, cb, golden_path, "current build of " + k->name);
}

// Writes the golden when it changed; says what it did in k->golden and k->notes.
void regenerate_golden(KernelReport* k, const std::string& path, const std::string& text) {
  std::string old;
  const bool existed = read_file(path, &old);
  if (existed && old == text) { k->golden = "unchanged"; return; }
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
  if (!existed) { k->golden = "new"; k->notes.push_back("wrote new golden " + path); return; }
  int plus = 0, minus = 0;
  for (const DiffLine& d : diff_lines(split_lines(old), split_lines(text))) {
    plus += d.op == '+';
    minus += d.op == '-';
  }
  k->golden = "updated";
  k->notes.push_back("updated " + path + " (+" + std::to_string(plus) + " -" + std::to_string(minus) + " lines)");
  k->diff = render_diff(split_lines(old), split_lines(text), path + " (before)", path + " (now)");
}

void run_check_file(KernelReport* k, const std::string& check_path, const std::string& current) {
  std::string text;
  if (!read_file(check_path, &text)) return;
  const CheckResult cr = run_checks(text, check_path, split_lines(current));
  k->check = cr.ok ? "pass" : "FAIL";
  for (const std::string& e : cr.errors) k->problems.push_back("check failed for kernel " + k->name + ": " + e);
}

// cuobjdump's output for one object, remembered for the life of the process (keyed by the object's
// size and time of change), so that repeated audits in one test run disassemble each object once.
int disassemble(const std::string& cuobjdump, const std::string& flag, const std::string& obj, std::string* out) {
  static std::map<std::string, std::pair<int, std::string>> cache;
  std::error_code ec;
  const auto size = fs::file_size(obj, ec);
  const auto when = fs::last_write_time(obj, ec).time_since_epoch().count();
  const std::string key = cuobjdump + "\n" + flag + "\n" + obj + "\n" + std::to_string(size) + "\n" + std::to_string(when);
  auto it = cache.find(key);
  if (it == cache.end()) {
    std::string text;
    const int rc = run_command(quote(cuobjdump) + " " + flag + " " + quote(obj), &text);
    it = cache.emplace(key, std::make_pair(rc, text)).first;
  }
  *out = it->second.second;
  return it->second.first;
}

struct Audit {
  const AuditOptions& opt;
  Toolchain tc;
  AuditReport report;
  std::map<std::string, std::set<std::string>> stems;  // arch -> stems seen
  std::map<std::string, std::string> bodies;           // arch/name -> current listing (duplicates)

  void kernel(const SassFunction& fn, const std::string& arch, const std::string& obj,
              const std::map<std::string, Resources>& res) {
    KernelReport k;
    k.name = fn.name;
    k.arch = arch;
    k.object = object_label(obj, opt.list_file);
    k.stem = golden_file_stem(fn.name);
    if (res.count(fn.name)) k.res = res.at(fn.name);
    else k.problems.push_back("kernel " + fn.name + ": no resource-usage line from the disassembler");
    Listing listing;
    try {
      listing = normalize(fn);
    } catch (const std::exception& e) {
      k.golden = "error";
      k.problems.push_back(e.what());
      report.kernels.push_back(k);
      return;
    }
    const std::string current = golden_text(k, tc, listing);
    const std::string key = arch + "/" + fn.name;
    if (bodies.count(key)) {  // the same kernel in two objects: fine when identical
      if (bodies[key] != current)
        report.errors.push_back("kernel " + fn.name + " (" + arch + ") is built twice with different code");
      return;
    }
    bodies[key] = current;
    stems[arch].insert(k.stem);
    const std::string spill = spill_reason(k.res, listing);
    if (!spill.empty()) k.problems.push_back("kernel " + fn.name + " (" + arch + "): " + spill);
    const std::string base = opt.golden_dir + "/" + arch + "/" + k.stem;
    std::string golden;
    if (opt.regenerate) regenerate_golden(&k, base + ".sass", current);
    else if (!read_file(base + ".sass", &golden)) {
      k.golden = "missing";
      k.problems.push_back("no golden for kernel " + fn.name + " (" + arch + ", " + base + ".sass); run make regen-golden");
    } else {
      compare_with_golden(&k, base + ".sass", golden, current, tc);
    }
    run_check_file(&k, base + ".check", current);
    report.kernels.push_back(k);
  }

  void object(const std::string& arch, const std::string& path) {
    const std::string obj = resolve_object(path);
    std::string sass, res;
    const int rc = disassemble(opt.cuobjdump, "--dump-sass", obj, &sass);
    if (sass.find("does not contain device code") != std::string::npos) return;  // host object
    if (rc != 0) {
      report.errors.push_back("disassembler failed on " + obj + ": " + sass);
      return;
    }
    disassemble(opt.cuobjdump, "--dump-resource-usage", obj, &res);
    const auto resources = parse_resource_usage(res);
    for (const SassFunction& fn : parse_dump_sass(sass)) {
      if (!fn.arch.empty() && fn.arch != arch) {
        report.errors.push_back(obj + " is listed as " + arch + " but holds " + fn.arch + " code");
        continue;
      }
      if (opt.kernel.empty() || fn.name.find(opt.kernel) != std::string::npos) kernel(fn, arch, obj, resources);
    }
  }

  // Goldens whose kernel is no longer built (only meaningful without a kernel filter).
  void stale(const std::set<std::string>& archs) {
    if (!opt.kernel.empty()) return;
    for (const std::string& arch : archs) {
      const fs::path dir = fs::path(opt.golden_dir) / arch;
      std::error_code ec;
      if (!fs::is_directory(dir, ec)) continue;
      std::set<std::string> files;
      for (const auto& e : fs::directory_iterator(dir, ec)) files.insert(e.path().filename().string());
      for (const std::string& f : files) {
        const fs::path p(f);
        if (p.extension() != ".sass" && p.extension() != ".check") continue;
        if (!stems[arch].count(p.stem().string()))
          report.notes.push_back("stale golden " + (dir / f).string() + ": its kernel is no longer built");
      }
    }
  }
};

}  // namespace

bool read_file(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream os;
  os << in.rdbuf();
  *text = os.str();
  return true;
}

AuditOptions::AuditOptions()
    : golden_dir(std::string(FLASHPTX_ROOT) + "/sass_golden"),
      list_file(std::string(FLASHPTX_BUILD_DIR) + "/audit_objects.txt"),
      cuobjdump(FLASHPTX_CUOBJDUMP) {}

bool AuditReport::ok() const {
  if (!errors.empty()) return false;
  for (const KernelReport& k : kernels)
    if (k.failed()) return false;
  return true;
}

int run_command(const std::string& cmd, std::string* output) {
  output->clear();
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) output->append(buf, n);
  const int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Toolchain current_toolchain(const std::string& cuobjdump) {
  static std::map<std::string, Toolchain> cache;  // one probe per process
  auto it = cache.find(cuobjdump);
  if (it != cache.end()) return it->second;
  return cache[cuobjdump] = Toolchain{version_of(quote(cuda_dir() + "/bin/nvcc")), version_of(quote(cuda_dir() + "/bin/ptxas")),
          "cuobjdump " + version_of(quote(cuobjdump))};
}

bool read_audit_list(const std::string& path, std::vector<std::pair<std::string, std::string>>* entries,
                     std::string* why) {
  std::string text;
  if (!read_file(path, &text)) {
    *why = "no audit list " + path + " (build it: make)";
    return false;
  }
  for (const std::string& l : split_lines(text)) {
    std::istringstream in(l);
    std::string arch, obj;
    if (in >> arch >> obj) entries->push_back({arch, obj});
  }
  return true;
}

std::string golden_text(const KernelReport& k, const Toolchain& tc, const Listing& listing) {
  std::ostringstream os;
  os << "# flashptx golden SASS, normalised (tools/sass/sass_listing.h); rewrite only with `make regen-golden`\n"
     << "# kernel: " << k.name << "\n# arch: " << k.arch << "\n# object: " << k.object << "\n"
     << "# nvcc: " << tc.nvcc << "\n# ptxas: " << tc.ptxas << "\n# disassembler: " << tc.disassembler << "\n"
     << "# resources: " << k.res.line << "\n# instructions: " << listing.instruction_count << "\n";
  for (const std::string& l : listing.lines) os << l << "\n";
  return os.str();
}

bool disassembler_runs(const std::string& cuobjdump, std::string* why) {
  std::error_code ec;
  if (!fs::exists(cuobjdump, ec)) {
    *why = "no disassembler at " + cuobjdump + " (make fetches it into .deps/; the audit needs it)";
    return false;
  }
  std::string out;
  if (run_command(quote(cuobjdump) + " --version", &out) != 0) {
    while (!out.empty() && out.back() == '\n') out.pop_back();
    *why = "the disassembler " + cuobjdump + " does not run: " + out;
    return false;
  }
  return true;
}

std::vector<std::string> golden_kernel_names(const std::string& dir, const std::string& arch, bool* dir_exists) {
  std::error_code ec;
  *dir_exists = fs::is_directory(dir, ec);
  std::vector<std::string> names;
  for (const char* a : {"sm_90a", "sm_100a"}) {
    if (!arch.empty() && arch != a) continue;
    const fs::path sub = fs::path(dir) / a;
    if (!fs::is_directory(sub, ec)) continue;
    for (const auto& e : fs::directory_iterator(sub, ec)) {
      if (e.path().extension() != ".sass") continue;
      std::ifstream in(e.path());
      std::string line;
      for (int i = 0; i < 4 && std::getline(in, line); ++i)
        if (line.rfind("# kernel: ", 0) == 0) names.push_back(line.substr(10));
    }
  }
  return names;
}

AuditReport run_audit(const AuditOptions& opt) {
  std::vector<std::pair<std::string, std::string>> entries;
  std::string why;
  if (!disassembler_runs(opt.cuobjdump, &why) || !read_audit_list(opt.list_file, &entries, &why)) {
    AuditReport r;
    r.errors.push_back(why);
    r.cannot_run = true;
    return r;
  }
  if (!opt.regenerate) {  // what the goldens allow, checked before the disassembler runs
    bool exists = false;
    const std::vector<std::string> names = golden_kernel_names(opt.golden_dir, opt.arch, &exists);
    const std::string archs = opt.arch.empty() ? "sm_90a/ or sm_100a/" : opt.arch + "/";
    AuditReport r;
    if (!exists || names.empty()) {
      r.bad_golden_dir = true;
      r.errors.push_back(!exists ? "the golden directory " + opt.golden_dir + " does not exist"
                                 : "the golden directory " + opt.golden_dir + " holds no goldens (no " + archs +
                                       "*.sass with a '# kernel:' line)");
      return r;
    }
    bool named = opt.kernel.empty();
    for (const std::string& n : names) named = named || n.find(opt.kernel) != std::string::npos;
    if (!named) {
      r.matched_nothing = true;
      r.errors.push_back("no kernel name contains '" + opt.kernel + "' (the " + std::to_string(names.size()) +
                         " goldens in " + opt.golden_dir + "/" + (opt.arch.empty() ? "" : opt.arch + "/") +
                         " name the audited kernels: flashptx audit --summary lists them)");
      return r;
    }
  }
  Audit a{opt, current_toolchain(opt.cuobjdump), {}, {}, {}};
  a.report.notes.push_back("toolchain: nvcc " + a.tc.nvcc + "; ptxas " + a.tc.ptxas + "; " + a.tc.disassembler);
  std::set<std::string> archs;
  for (const auto& [arch, obj] : entries) {
    if (!opt.arch.empty() && arch != opt.arch) continue;
    archs.insert(arch);
    a.object(arch, obj);
  }
  a.stale(archs);
  if (a.report.kernels.empty() && (!opt.kernel.empty() || !opt.arch.empty())) {
    a.report.matched_nothing = true;
    a.report.errors.push_back(
        "no built kernel matches" + (opt.kernel.empty() ? std::string() : " --kernel '" + opt.kernel + "'") +
        (opt.arch.empty() ? std::string() : " --arch " + opt.arch));
  }
  return a.report;
}

void print_report(const AuditReport& r, bool summary_only, std::ostream& os) {
  if (r.cannot_run) {
    os << "audit: cannot run: " << (r.errors.empty() ? std::string("?") : r.errors.front()) << "\n";
    return;
  }
  size_t name_w = 6;
  for (const KernelReport& k : r.kernels) name_w = std::max(name_w, k.name.size());
  name_w += 2;
  os << std::left << std::setw(static_cast<int>(name_w)) << "kernel" << std::setw(9) << "arch" << std::setw(6) << "REG"
     << std::setw(12) << "SMEM static" << std::setw(13) << "SMEM dynamic" << std::setw(13) << "LOCAL/STACK"
     << std::setw(20) << "golden" << "check\n";
  for (const KernelReport& k : r.kernels) {
    const KernelEntry* row = kernel_by_name(k.name);
    os << std::setw(static_cast<int>(name_w)) << k.name << std::setw(9) << k.arch << std::setw(6) << k.res.get("REG")
       << std::setw(12) << k.res.get("SHARED") << std::setw(13) << (row ? std::to_string(row->smem_bytes) : "-")
       << std::setw(13) << (std::to_string(k.res.get("LOCAL")) + "/" + std::to_string(k.res.get("STACK")))
       << std::setw(20) << k.golden << k.check << "\n";
  }
  os << "(SMEM static: the kernel's own shared memory, from the disassembler; SMEM dynamic: what its launch\n"
        "adds, from the kernel table; '-': not a kernel of the table, a test or teaching kernel)\n";
  if (!summary_only) {
    for (const std::string& n : r.notes) os << "note: " << n << "\n";
    for (const KernelReport& k : r.kernels)
      for (const std::string& n : k.notes) os << "note: " << k.name << " (" << k.arch << "): " << n << "\n";
  }
  for (const std::string& e : r.errors) os << "FAIL: " << e << "\n";
  for (const KernelReport& k : r.kernels) {
    for (const std::string& p : k.problems) os << "FAIL: " << p << "\n";
    if (!summary_only && !k.diff.empty()) os << k.diff;
  }
  size_t failed = 0;
  for (const KernelReport& k : r.kernels) failed += k.failed();
  os << "audit: " << r.kernels.size() << " kernels, " << failed << " failing, " << r.errors.size()
     << " other errors: " << (r.ok() ? "PASS" : "FAIL") << "\n";
  if (summary_only && !r.ok()) os << "(flashptx audit prints the diffs and the notes)\n";
}

}  // namespace flashptx::sass
