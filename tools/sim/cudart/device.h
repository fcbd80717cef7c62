// The simulated device behind the fake CUDA runtime (tools/sim/cudart/): what the real driver
// holds for a process, shared by every copy of the fake runtime in it.
//
// A process may hold two copies of the runtime, as it may hold two static cudarts on a GPU: the
// test binary's and libflashptx_sim.so's (loaded RTLD_LOCAL, -Bsymbolic, as the release library
// is beside the test build). Each copy keeps its own registered kernels, launch configurations
// and last error; the device (global memory, tensor maps, the PTX modules, the scheduler's
// settings) is one, as the driver is one, so that a buffer from either copy's cudaMalloc is valid
// in a kernel launched by the other. device() finds the process's device through the exported
// function flashptx_sim_device_v1 (the executable's, when it exports one),
// else uses its own.
#pragma once
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "tools/sim/sim.h"

namespace ptxsim::cudart {

// One known range of global memory: a fake cudaMalloc buffer or a flashptx_sim_register range.
struct Range {
  uint64_t bytes = 0;
  bool allocated = false;  // from cudaMalloc (cudaFree releases it), else registered host memory
};

// Where an entry's PTX is: the file, and the cluster shape its directives require (1x1x1 when none).
struct EntryLoc {
  std::string file;
  Dim3 cluster;
};

// The event log flashptx_sim_trace writes: one line per event, "clock cta warp event what", on a
// logical clock (scheduler steps) that continues across launches: each launch's clock starts after
// the previous launch's last event. Each launch is announced by a line "launch N ENTRY ...".
class FileTrace : public TraceSink {
 public:
  explicit FileTrace(std::FILE* f) : f_(f) {
    std::fprintf(f_, "# flashptx sim trace v1: clock cta warp event what (clock: scheduler steps, continuing across launches)\n");
  }
  ~FileTrace() override { std::fclose(f_); }
  FileTrace(const FileTrace&) = delete;
  FileTrace& operator=(const FileTrace&) = delete;
  void begin_launch(uint64_t n, const std::string& what) {
    base_ = next_;
    std::fprintf(f_, "launch %llu %s\n", static_cast<unsigned long long>(n), what.c_str());
  }
  void event(const TraceEvent& e) override {
    const uint64_t c = base_ + e.clock;
    if (c + 1 > next_) next_ = c + 1;
    std::fprintf(f_, "%llu %u %u %s %s\n", static_cast<unsigned long long>(c), e.cta, e.warp, trace_event_name(e.kind),
                 e.what.c_str());
    ++events_;
  }
  uint64_t events() const { return events_; }
  void flush() { std::fflush(f_); }

 private:
  std::FILE* f_;
  uint64_t base_ = 0, next_ = 0, events_ = 0;
};

struct Device {
  std::recursive_mutex mu;  // every call of every runtime copy holds it: launches run one at a time
  Memory memory;            // what a kernel may address: exactly the ranges below
  std::map<uint64_t, Range> ranges;
  TensorMaps maps;

  std::string ptx_dir;      // $FLASHPTX_SIM_PTX_DIR, else the build's ptx/ folder
  bool indexed = false;
  std::unordered_map<std::string, EntryLoc> entries;                       // by mangled name
  std::unordered_map<std::string, std::shared_ptr<const Module>> modules;  // by file

  Policy policy = Policy::kRoundRobin;
  uint64_t seed = 1;
  int sms = 4;
  // The compute capability the device reports (major * 10 + minor): 90, or 100 with
  // FLASHPTX_SIM_CC=100, so that the library plans its sm_100a (FA4) kernels, which the simulator
  // executes from their PTX (never run on a Blackwell GPU). The device name stays the same.
  int cc = 90;

  std::unique_ptr<FileTrace> trace;  // flashptx_sim_trace: every launch's events, to a file

  std::string last_report;  // of the last launch with findings
  uint64_t launches = 0;
  double busy_seconds = 0;  // simulator time spent in launches: the events' logical clock

  // The range holding [p, p + bytes), or nullptr.
  const Range* find(const void* p, uint64_t bytes) const;
  bool add(const void* p, uint64_t bytes, bool allocated, std::string label);
  bool remove(const void* p, bool allocated);
  // The module holding entry `name`, loaded on first use; nullptr with *err saying why.
  std::shared_ptr<const Module> module_of(const std::string& name, EntryLoc* loc, std::string* err);
};

Device& device();
// True in a copy of the runtime that uses another copy's device (the release library beside the
// test binary). Such a copy schedules its launches with the random policy whatever the device's
// is, so that two flavours compared bit for bit in one process have run under two schedules.
bool second_copy();

// The scheduler policy named as policy_name() spells it; false for any other name.
bool parse_policy(const char* name, Policy* out);

}  // namespace ptxsim::cudart

extern "C" void* flashptx_sim_device_v1();
