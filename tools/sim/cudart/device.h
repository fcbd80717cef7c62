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
