// Scheduler policies for the GPU suites' cases that run on the PTX simulator (tools/sim/, issue 31):
// a case whose result must not depend on the schedule (a deterministic mode, a traced build against
// the release one) runs it again under other policies and seeds and compares the bits.
//
// On a GPU, ./run_tests links the real CUDA runtime and no simulator: flashptx_sim_configure is
// absent (weak) and a SimSchedule does nothing. On the simulator the runner's own copy of the
// library schedules with the device's policy, and the release library (tests/gpu/release_lib.h,
// libflashptx_sim.so: a second copy of the runtime) with the random policy under the device's seed
// (tools/sim/cudart/device.h), so a release comparison is already one across two policies.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <string>

#include <doctest/doctest.h>

extern "C" int flashptx_sim_configure(const char* policy, uint64_t seed, int sms) __attribute__((weak));

namespace flashptx_test {

struct SimPolicy {
  const char* policy;  // as tools/sim/cudart/flashptx_sim.h spells it
  uint64_t seed;
};
// The schedules a simulator case re-runs under, besides the default one (round-robin, seed 1).
inline constexpr SimPolicy kSimPolicies[] = {
    {"starve-producer", 3}, {"random", 7}, {"delay-one-warpgroup", 5}, {"consumers-first", 11}};

// For the lifetime of the object the simulator's launches run under `p` (on a GPU: nothing); then
// under the runner's defaults again ($FLASHPTX_SIM_POLICY / $FLASHPTX_SIM_SEED, else round-robin, 1).
class SimSchedule {
 public:
  explicit SimSchedule(const SimPolicy& p) : on_(flashptx_sim_configure != nullptr) {
    if (on_) REQUIRE_MESSAGE(flashptx_sim_configure(p.policy, p.seed, 0) == 0, "no simulator policy " << p.policy);
  }
  ~SimSchedule() {
    if (!on_) return;
    const char* pol = std::getenv("FLASHPTX_SIM_POLICY");
    const char* seed = std::getenv("FLASHPTX_SIM_SEED");
    flashptx_sim_configure(pol && *pol ? pol : "round-robin", seed && *seed ? std::strtoull(seed, nullptr, 0) : 1, 0);
  }
  SimSchedule(const SimSchedule&) = delete;
  SimSchedule& operator=(const SimSchedule&) = delete;
  static std::string name(const SimPolicy& p) { return std::string(p.policy) + " seed " + std::to_string(p.seed); }

 private:
  bool on_;
};

}  // namespace flashptx_test
