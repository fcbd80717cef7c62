// flashptx kernels: every row of the kernel table (src/kernels.h), all its fields, with each
// kernel's registers per thread and static shared memory as ptxas allocated them in the built
// objects (cuobjdump --dump-resource-usage over the build's audit list: no GPU, no disassembly).
//
//   flashptx kernels                   every row
//   flashptx kernels --kernel d128     the rows whose name contains "d128"
//   flashptx kernels --family fa3_fwd  the rows of one family (family_name's spelling)
//
// Dynamic shared memory is the row's (what the launch requests); static is ptxas's (the kernel's
// own __shared__ variables). Without the disassembler or the audit list the resource columns show
// "-" and one line on stderr says why; the table itself needs neither.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "src/kernels.h"
#include "tools/flashptx/commands.h"
#include "tools/sass/audit.h"

namespace flashptx::cli {

namespace {

const char* dtype_name(flashptx_dtype t) {
  switch (t) {
    case FLASHPTX_BF16: return "bf16";
    case FLASHPTX_FP16: return "fp16";
    case FLASHPTX_FP32: return "fp32";
    case FLASHPTX_FP8_E4M3: return "e4m3";
  }
  return "?";
}

bool selected(const KernelEntry& k, const KernelsArgs& a) {
  return std::string(k.name).find(a.kernel) != std::string::npos &&
         (a.family.empty() || a.family == family_name(k.family));
}

std::string switches_text(const KernelEntry& k) {
  std::string s;
  for (const KernelSwitch& w : k.switches) {
    if (!s.empty()) s += ' ';
    s += std::string(w.name) + '=' + (w.text != nullptr ? std::string(w.text) : std::to_string(w.value));
  }
  return s.empty() ? "-" : s;
}

std::string resource(const std::map<std::string, sass::Resources>& res, const char* kernel, const char* key) {
  const auto it = res.find(kernel);
  if (it == res.end() || it->second.values.count(key) == 0) return "-";
  return std::to_string(it->second.get(key));
}

}  // namespace

Parsed parse_kernels_args(int argc, const char* const* argv, KernelsArgs* a) {
  *a = KernelsArgs();
  std::vector<std::string> families;
  for (const KernelEntry& k : kernel_table()) {
    const std::string f = family_name(k.family);
    if (std::find(families.begin(), families.end(), f) == families.end()) families.push_back(f);
  }
  Options o("kernels", "flashptx kernels [--kernel S] [--family F]",
            "Every row of the kernel table (src/kernels.h), every field: family, dtype, head dim, tile\n"
            "(block_m x block_n), stages, MMA warpgroups, pingpong, schedule capabilities (persistent,\n"
            "paired, dynamic), cluster size, threads, and the config's protocol switches; with the\n"
            "registers per thread and the static shared memory of the built objects (ptxas's, read by\n"
            "cuobjdump; no GPU) beside the dynamic shared memory the launch requests.");
  o.text("--kernel", &a->kernel, {}, "only the rows whose name contains S", "S")
      .text("--family", &a->family, families, "only the rows of family F", "F");
  const Parsed p = o.parse(argc, argv);
  if (!p.run()) return p;
  for (const KernelEntry& k : kernel_table())
    if (selected(k, *a)) return p;
  return o.error("no kernel matches --kernel '" + a->kernel + "'" +
                 (a->family.empty() ? std::string() : " in family " + a->family));
}

bool read_kernel_resources(std::map<std::string, sass::Resources>* res, std::string* why) {
  const sass::AuditOptions opt;
  std::vector<std::pair<std::string, std::string>> objects;
  if (!sass::disassembler_runs(opt.cuobjdump, why) || !sass::read_audit_list(opt.list_file, &objects, why))
    return false;
  for (const auto& [arch, path] : objects) {
    // The list's paths are relative to the source tree (as the audit reads them).
    const std::string obj = std::filesystem::path(path).is_absolute() || std::filesystem::exists(path)
                                ? path
                                : std::string(FLASHPTX_ROOT) + "/" + path;
    std::string text;
    const int rc = sass::run_command("'" + opt.cuobjdump + "' --dump-resource-usage '" + obj + "'", &text);
    if (text.find("does not contain device code") != std::string::npos) continue;  // a host object
    if (rc != 0) {
      *why = "cuobjdump --dump-resource-usage failed on " + obj;
      return false;
    }
    for (auto& [name, r] : sass::parse_resource_usage(text)) (*res)[name] = r;
  }
  return true;
}

std::string kernels_table(const KernelsArgs& a, const std::map<std::string, sass::Resources>& res) {
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line, "%-38s %-17s %-5s %4s %-8s %6s %3s %-3s %-4s %-4s %-4s %7s %7s %4s %7s %8s  %s\n",
                "kernel", "family", "dtype", "hdim", "tile", "stages", "wgs", "pp", "pers", "pair", "dyn", "cluster",
                "threads", "regs", "smem_st", "smem_dyn", "switches");
  os << line;
  int rows = 0;
  for (const KernelEntry& k : kernel_table()) {
    if (!selected(k, a)) continue;
    ++rows;
    const std::string tile = std::to_string(k.block_m) + "x" + std::to_string(k.block_n);
    std::snprintf(line, sizeof line, "%-38s %-17s %-5s %4d %-8s %6d %3d %-3s %-4s %-4s %-4s %7d %7d %4s %7s %8d  ",
                  k.name, family_name(k.family), dtype_name(k.dtype), k.head_dim, tile.c_str(), k.stages,
                  k.consumer_wgs, k.pingpong ? "yes" : "no", k.persistent ? "yes" : "no", k.paired ? "yes" : "no",
                  k.dynamic ? "yes" : "no", k.cluster_ctas, k.threads, resource(res, k.name, "REG").c_str(),
                  resource(res, k.name, "SHARED").c_str(), k.smem_bytes);
    os << line << switches_text(k) << '\n';
  }
  os << rows << " kernels (tile: block_m x block_n; wgs: MMA warpgroups; pp: pingpong; pers: loops over tiles;"
     << " pair: the paired causal schedule; dyn: also the dynamic schedule; regs: per thread at launch;"
     << " smem_st / smem_dyn: static / dynamic shared memory in bytes)\n";
  return os.str();
}

}  // namespace flashptx::cli

int cmd_kernels(int argc, char** argv) {
  using namespace flashptx::cli;
  KernelsArgs a;
  const Parsed p = parse_kernels_args(argc, argv, &a);
  if (!p.run()) return finish(p);
  std::map<std::string, flashptx::sass::Resources> res;
  std::string why;
  if (!read_kernel_resources(&res, &why))
    std::fprintf(stderr, "flashptx kernels: no registers or static shared memory (%s)\n", why.c_str());
  std::fputs(kernels_table(a, res).c_str(), stdout);
  return 0;
}
