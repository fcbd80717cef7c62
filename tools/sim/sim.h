// ptxsim: a PTX simulator for sm_90a kernels with asynchronous semantics (issue 31), and the sm_100a
// tcgen05 / Tensor Memory / cluster-launch-control forms of cta_group::1 (issue 32; tools/sim/sm100.h;
// executed here, never run on a Blackwell GPU).
//
// A tool, never linked into libflashptx. Written from the PTX ISA; it includes nothing from the
// project's ptx/, src/ or include/. The public API below is what the fake CUDA runtime
// (tools/sim/cudart/) and the tests use; it is kept stable.
//
// Address model (what a kernel's registers hold):
//   global   a global address IS the host pointer value of a registered Memory range.
//   shared   32-bit shared addresses: ((cluster_rank + 1) << 24) | offset. A shared::cta access
//            uses the executing CTA whatever the rank bits say (they must be its own or zero);
//            a shared::cluster access decodes the rank (mapa rewrites it).
//   generic  global addresses as they are; shared = kGenericShared + shared32;
//            param = kGenericParam + offset; local = kGenericLocal + offset (per thread).
//
// Execution: every thread has its own PC and registers; a warp runs the group of its lanes at
// the lowest PC (in lockstep while they agree); .sync/.aligned instructions wait until every
// (non-exited) lane the mask names has arrived. The scheduler picks a warp by Policy and seed,
// deterministically; kStarveProducer runs warps that issued bulk loads last, kConsumersFirst
// prefers warps that issued wgmma, kDelayOneWarpgroup runs warpgroup 1 last (each still runs
// 1/64 of the time and whenever nobody else can).
// Asynchronous semantics: bulk/tensor load destinations are poisoned until the copy lands (a
// read is kHazard); copies land at scheduler-chosen points and complete_tx their mbarrier; bulk
// store sources are reader-locked until performed (at the latest at wait_group); wgmma results
// land in the accumulators at the wait_group that retires their group (touching them before is
// kHazard) and their shared operands are reader-locked until then; generic shared writes read
// by the async proxy without the writer's fence.proxy.async are kProtocol. A try_wait that fails
// twice with no phase change in between suspends its thread (so deadlocks are found, with each
// warp's blocking instruction and the barrier's phase, pending arrivals and tx-count).
// tools/sim/READINGS.md lists the ISA readings to cross-validate on hardware.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ptxsim {

namespace isa { struct TensorMapDesc; }  // tools/sim/isa/ (sim-isa): the logical tensor map

inline constexpr uint64_t kGenericShared = 0xFE00000000000000ull;
inline constexpr uint64_t kGenericParam  = 0xFD00000000000000ull;
inline constexpr uint64_t kGenericLocal  = 0xFC00000000000000ull;
inline constexpr uint64_t kTensorMapMagic = 0x50544D5349585046ull;  // first 8 bytes of a map

struct Module;  // parsed, pre-decoded PTX module (entries, functions, params, globals, .shared)

// Parses and pre-decodes a module. An instruction form the simulator does not implement is an
// error naming the form and name:line; the result is then nullptr and *err says why.
std::shared_ptr<const Module> load_module(std::string_view ptx, std::string_view name, std::string* err);
// The same, but a module with unimplemented forms still loads (they trap when executed) and
// *err lists them. For list_forms and partial runs.
std::shared_ptr<const Module> load_module_lenient(std::string_view ptx, std::string_view name, std::string* err);

// The unimplemented forms (with name:line) an entry can reach: its own body and the functions it
// calls. Empty: a module loaded leniently can launch that entry (its other entries' forms do not
// matter). tools/sim/entry_forms.cpp.
std::vector<std::string> entry_unimplemented(const Module&, std::string_view entry);

struct ParamInfo { std::string name; uint32_t offset = 0, size = 0, align = 0; };
std::vector<ParamInfo> entry_params(const Module&, std::string_view entry);  // the param block layout
uint32_t entry_param_bytes(const Module&, std::string_view entry);
std::vector<std::string> entries(const Module&);

struct FormInfo { std::string form; bool implemented = false; uint32_t count = 0; std::string first_location; };
std::vector<FormInfo> list_forms(const Module&);  // each distinct instruction form, sorted

struct Dim3 { uint32_t x = 1, y = 1, z = 1; };

// Global memory: registered ranges of host memory; a global address is the host pointer value.
class Memory {
 public:
  void add(uint64_t base, uint64_t bytes, std::string label);
  void add(const void* p, uint64_t bytes, std::string label) { add(reinterpret_cast<uint64_t>(p), bytes, std::move(label)); }
  void remove(uint64_t base);
  // The range holding [addr, addr+bytes), or nullptr.
  struct Range { uint64_t base, bytes; std::string label; };
  const Range* find(uint64_t addr, uint64_t bytes) const;
  const std::vector<Range>& ranges() const { return ranges_; }
 private:
  std::vector<Range> ranges_;  // sorted by base
  mutable size_t last_ = 0;
};

// Tensor maps: the 128-byte CUtensorMap a kernel receives holds {uint64 magic, uint64 index} in
// its first 16 bytes; index names an entry of this registry.
class TensorMaps {
 public:
  TensorMaps();
  ~TensorMaps();
  TensorMaps(TensorMaps&&) noexcept;
  TensorMaps& operator=(TensorMaps&&) noexcept;
  uint64_t add(const isa::TensorMapDesc&);
  // Writes the 128-byte handle for index into map128.
  static void encode(void* map128, uint64_t index);
  const isa::TensorMapDesc* find(const void* map128) const;
  const isa::TensorMapDesc* at(uint64_t index) const;
 private:
  std::vector<std::unique_ptr<isa::TensorMapDesc>> maps_;
};

// The trace's events (LaunchConfig::trace). `what` begins with the object's identity where a pair of
// events belongs together: "copy N: " (kTmaIssue/kTmaLand: one bulk or tensor copy, N reused once it
// has landed), "group N: " (kWgmmaCommit/kWgmmaRetire: the warp's Nth committed wgmma group); then
// the PTX location of the instruction (for kTmaLand: the issuing one) or the barrier.
struct TraceEvent {
  uint64_t clock = 0;  // logical: scheduler steps
  enum Kind { kTmaIssue, kTmaLand, kWgmmaIssue, kWgmmaRetire, kPhaseComplete, kWaitBegin, kWaitEnd, kBarrier,
              kWgmmaCommit } kind;
  uint32_t cta = 0, warp = 0;
  std::string what;  // barrier / group / instruction
};
const char* trace_event_name(TraceEvent::Kind);  // "tma-issue", "tma-land", "wgmma-issue", ...
class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void event(const TraceEvent&) = 0;
};

enum class Policy { kRoundRobin, kRandom, kStarveProducer, kConsumersFirst, kDelayOneWarpgroup };
const char* policy_name(Policy);

struct LaunchConfig {
  std::shared_ptr<const Module> module;
  std::string entry;
  Dim3 grid, block, cluster;
  uint32_t dynamic_smem = 0;
  std::vector<uint8_t> params;  // the param block, laid out as entry_params says
  Policy policy = Policy::kRoundRobin;
  uint64_t seed = 1;
  int sms = 4;                   // CTAs resident at once (clusters are co-scheduled)
  uint64_t step_budget = 0;      // warp-instructions before a kLivelock report; 0: 400 million
  bool perturb_approx = false;   // ex2/rcp/... .approx perturbed within the ISA's error
  uint32_t regs_per_thread = 0;  // setmaxnreg pool; 0: .maxnreg, else 64K / (.maxntid x .minnctapersm) rounded to 8
  TraceSink* trace = nullptr;
  uint32_t max_findings = 32;    // findings kept (the run stops at the first fatal one)
};

struct Finding {
  enum Kind { kOutOfBounds, kHazard, kDeadlock, kLivelock, kProtocol, kIllegal, kTrap } kind = kIllegal;
  std::string kernel, ptx_location /*file:line + instruction text*/, where /*cta, warp, lane*/, barrier, message;
  std::string text() const;
};
const char* finding_kind_name(Finding::Kind);

struct Report {
  bool ok() const { return findings.empty(); }
  bool has(Finding::Kind k) const { for (auto& f : findings) if (f.kind == k) return true; return false; }
  std::vector<Finding> findings;
  uint64_t warp_instructions = 0, thread_instructions = 0;
  double seconds = 0;
  std::string text() const;
};

Report launch(const LaunchConfig&, Memory&, const TensorMaps&);

// A benchmark, not a test: simulated instructions per second on synthetic kernels, as text.
std::string benchmark();

}  // namespace ptxsim
