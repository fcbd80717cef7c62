// `flashptx kernels` (tools/flashptx/cmd_kernels.cpp): the kernel table printed row by row with its
// protocol switches, and the registers / static shared memory read from the built objects.
#include <doctest/doctest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "src/kernels.h"
#include "src/sm90/fa3_fwd_config.h"
#include "tools/flashptx/commands.h"

namespace {

using flashptx::KernelEntry;
using flashptx::kernel_table;
using flashptx::cli::KernelsArgs;
using flashptx::cli::kernels_table;
using flashptx::cli::Parsed;
using flashptx::cli::parse_kernels_args;

Parsed parse(std::vector<const char*> args, KernelsArgs* a) {
  return parse_kernels_args(static_cast<int>(args.size()), args.data(), a);
}

// The printed line of one kernel (the first column is the name, padded), or "" if none.
std::string line_of(const std::string& table, const std::string& name) {
  std::istringstream in(table);
  for (std::string l; std::getline(in, l);)
    if (l.rfind(name + " ", 0) == 0) return l;
  return "";
}

std::vector<std::string> columns(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> c;
  for (std::string w; in >> w;) c.push_back(w);
  return c;
}

// Column indices of the table (kernels_table's header).
constexpr int kThreadsCol = 12, kRegsCol = 13, kSmemStaticCol = 14, kSmemDynCol = 15;

bool is_sm100(flashptx::Family f) {
  using F = flashptx::Family;
  return f == F::kFa4Fwd || f == F::kFa4Bwd || f == F::kFa4BwdPre || f == F::kFa4BwdPostDq || f == F::kFa4BwdPostDkv;
}

}  // namespace

TEST_SUITE("host cli kernels") {

TEST_CASE("kernels: options; every row once, with its columns and dynamic shared memory") {
  KernelsArgs a;
  CHECK(parse({"--help"}, &a).kind == Parsed::kHelp);
  const Parsed none = parse({"--kernel", "nosuch"}, &a);
  CHECK(none.kind == Parsed::kError);
  CHECK(none.text.find("no kernel matches --kernel 'nosuch'") != std::string::npos);
  CHECK(parse({"--family", "fa5_fwd"}, &a).kind == Parsed::kError);
  REQUIRE(parse({}, &a).run());

  const std::string t = kernels_table(a, {});
  const std::vector<std::string> header = columns(t.substr(0, t.find('\n')));
  REQUIRE(header.size() == 17);
  CHECK(header[kRegsCol] == "regs");
  CHECK(header[kSmemStaticCol] == "smem_st");
  CHECK(header[kSmemDynCol] == "smem_dyn");
  std::string closing = "\n";
  closing += std::to_string(kernel_table().size());
  closing += " kernels (";
  CHECK(t.find(closing) != std::string::npos);
  for (const KernelEntry& k : kernel_table()) {
    INFO(k.name);
    const std::vector<std::string> c = columns(line_of(t, k.name));
    REQUIRE(c.size() >= 17);
    CHECK(c[1] == flashptx::family_name(k.family));
    CHECK(c[3] == std::to_string(k.head_dim));
    CHECK(c[4] == std::to_string(k.block_m) + "x" + std::to_string(k.block_n));
    CHECK(c[kThreadsCol] == std::to_string(k.threads));
    CHECK(c[kRegsCol] == "-");  // no resources given
    CHECK(c[kSmemDynCol] == std::to_string(k.smem_bytes));
    // every switch of the row, by name and value, in the row's order
    std::string want;
    for (const flashptx::KernelSwitch& s : k.switches) {
      if (!want.empty()) want += ' ';
      want += s.name;
      want += '=';
      want += s.text != nullptr ? std::string(s.text) : std::to_string(s.value);
    }
    CHECK(line_of(t, k.name).find(want.empty() ? "  -" : "  " + want) != std::string::npos);
  }
}

TEST_CASE("kernels: the FA3 forward rows carry their config's switches") {
  KernelsArgs a;
  REQUIRE(parse({"--family", "fa3_fwd"}, &a).run());
  const std::string t = kernels_table(a, {});
  CHECK(line_of(t, "fa3_fwd_sm90_bf16_d128_trace").empty());  // another family
  const std::string paired = line_of(t, "fa3_fwd_sm90_bf16_d64_m128_paired");
  for (const char* s : {"tile_feed=1", "walk_ahead=1", "q_slots=2", "producer_regs=56", "consumer_regs=224",
                        "o_staging=own", "skip_blocks=0", "half_first=1", "tree_max=0", "lazy_rescale=0",
                        "defer_epilogue=1", "traced=0"})
    CHECK_MESSAGE(paired.find(s) != std::string::npos, s);
  CHECK(columns(paired)[10] == "yes");  // the dynamic schedule
  const std::string d256 = line_of(t, "fa3_fwd_sm90_fp16_d256_persistent");
  for (const char* s : {"o_staging=halves", "lazy_rescale=1", "tree_max=1", "skip_blocks=1", "q_slots=1"})
    CHECK_MESSAGE(d256.find(s) != std::string::npos, s);
  CHECK(line_of(t, "fa3_fwd_sm90_bf16_d256").find("o_staging=in_q") != std::string::npos);
  // The switches are the config's: the d128 row against its FwdConfig.
  const std::string d128 = line_of(t, "fa3_fwd_sm90_bf16_d128_n128");
  constexpr flashptx::fa3::FwdConfig c = flashptx::fa3::kD128N128;
  CHECK(d128.find("producer_regs=" + std::to_string(c.producer_regs)) != std::string::npos);
  CHECK(d128.find("q_slots=" + std::to_string(c.q_slots)) != std::string::npos);
  // --kernel selects by substring, across families
  REQUIRE(parse({"--kernel", "_d64_paired_trace"}, &a).run());
  const std::string one = kernels_table(a, {});
  CHECK(one.find("\n1 kernels (") != std::string::npos);
  CHECK(line_of(one, "fa3_fwd_sm90_bf16_d64_paired_trace").find("traced=1") != std::string::npos);
}

TEST_CASE("kernels: resource columns from the resource map") {
  KernelsArgs a;
  REQUIRE(parse({"--kernel", "fa3_fwd_sm90_bf16_d128_n128"}, &a).run());
  std::map<std::string, flashptx::sass::Resources> res;
  res["fa3_fwd_sm90_bf16_d128_n128"].values = {{"REG", 168}, {"SHARED", 1024}};
  const std::string t = kernels_table(a, res);
  const std::vector<std::string> c = columns(line_of(t, "fa3_fwd_sm90_bf16_d128_n128"));
  REQUIRE(c.size() >= 17);
  CHECK(c[kRegsCol] == "168");
  CHECK(c[kSmemStaticCol] == "1024");
  CHECK(columns(line_of(t, "fa3_fwd_sm90_bf16_d128_n128_paired"))[kRegsCol] == "-");
}

}  // TEST_SUITE

TEST_SUITE("audit_sm90 cli kernels") {

TEST_CASE("kernels: every sm_90a row's registers and static shared memory come from its object") {
  std::map<std::string, flashptx::sass::Resources> res;
  std::string why;
  REQUIRE_MESSAGE(flashptx::cli::read_kernel_resources(&res, &why), why);
  for (const KernelEntry& k : kernel_table()) {
    if (is_sm100(k.family)) continue;  // their objects decode only with the sm_100a audit
    INFO(k.name);
    REQUIRE(res.count(k.name) == 1);
    const long regs = res[k.name].get("REG"), smem = res[k.name].get("SHARED");
    // __launch_bounds__(threads, 1): at most the register file over the CTA, in units of 8
    CHECK(regs > 0);
    CHECK(regs <= (65536 / k.threads) / 8 * 8);
    CHECK(smem >= 0);
    CHECK(k.smem_bytes + smem <= 228 * 1024);  // one CTA's static and dynamic share the SM's 228 KiB
    if (k.family == flashptx::Family::kFa3Fwd || k.family == flashptx::Family::kFa3FwdVarlen) {
      // setmaxnreg moves registers within the launch allocation, which ptxas sizes to the whole
      // file: the config's split must fit what the object was given.
      long producer = 0, consumer = 0;
      for (const flashptx::KernelSwitch& s : k.switches) {
        if (std::string(s.name) == "producer_regs") producer = s.value;
        if (std::string(s.name) == "consumer_regs") consumer = s.value;
      }
      CHECK(regs == (65536 / k.threads) / 8 * 8);
      CHECK(128 * producer + 128 * k.consumer_wgs * consumer <= regs * k.threads);
    }
  }
  KernelsArgs a;
  const char* args[] = {"--family", "fa3_bwd"};
  REQUIRE(parse_kernels_args(2, args, &a).run());
  const std::string t = kernels_table(a, res);
  const long bwd_regs = res["fa3_bwd_sm90_bf16_d128"].get("REG");
  CHECK(columns(line_of(t, "fa3_bwd_sm90_bf16_d128"))[kRegsCol] == std::to_string(bwd_regs));
}

}  // TEST_SUITE
