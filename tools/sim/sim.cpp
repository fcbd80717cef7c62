// ptxsim: the public objects (Memory, TensorMaps) and report text.
#include <algorithm>
#include <cstring>
#include <sstream>

#include "tools/sim/isa/tensormap.h"
#include "tools/sim/sim.h"

namespace ptxsim {

void Memory::add(uint64_t base, uint64_t bytes, std::string label) {
  Range r{base, bytes, std::move(label)};
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), base, [](const Range& a, uint64_t b) { return a.base < b; });
  ranges_.insert(it, std::move(r));
  last_ = 0;
}
void Memory::remove(uint64_t base) {
  auto it = std::find_if(ranges_.begin(), ranges_.end(), [&](const Range& r) { return r.base == base; });
  if (it != ranges_.end()) ranges_.erase(it);
  last_ = 0;
}
const Memory::Range* Memory::find(uint64_t addr, uint64_t bytes) const {
  if (last_ < ranges_.size()) {
    const Range& r = ranges_[last_];
    if (addr >= r.base && addr + bytes <= r.base + r.bytes && addr + bytes >= addr) return &r;
  }
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr, [](uint64_t a, const Range& r) { return a < r.base; });
  if (it == ranges_.begin()) return nullptr;
  --it;
  if (addr + bytes < addr || addr + bytes > it->base + it->bytes) return nullptr;
  last_ = size_t(it - ranges_.begin());
  return &*it;
}

TensorMaps::TensorMaps() = default;
TensorMaps::~TensorMaps() = default;
TensorMaps::TensorMaps(TensorMaps&&) noexcept = default;
TensorMaps& TensorMaps::operator=(TensorMaps&&) noexcept = default;
uint64_t TensorMaps::add(const isa::TensorMapDesc& d) {
  maps_.push_back(std::make_unique<isa::TensorMapDesc>(d));
  return maps_.size() - 1;
}
void TensorMaps::encode(void* map128, uint64_t index) {
  memset(map128, 0, 128);
  uint64_t v[2] = {kTensorMapMagic, index};
  memcpy(map128, v, 16);
}
const isa::TensorMapDesc* TensorMaps::find(const void* map128) const {
  uint64_t v[2];
  memcpy(v, map128, 16);
  if (v[0] != kTensorMapMagic || v[1] >= maps_.size()) return nullptr;
  return maps_[v[1]].get();
}
const isa::TensorMapDesc* TensorMaps::at(uint64_t index) const { return index < maps_.size() ? maps_[index].get() : nullptr; }

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::kRoundRobin: return "round-robin";
    case Policy::kRandom: return "random";
    case Policy::kStarveProducer: return "starve-producer";
    case Policy::kConsumersFirst: return "consumers-first";
    case Policy::kDelayOneWarpgroup: return "delay-one-warpgroup";
  }
  return "?";
}
const char* trace_event_name(TraceEvent::Kind k) {
  switch (k) {
    case TraceEvent::kTmaIssue: return "tma-issue";
    case TraceEvent::kTmaLand: return "tma-land";
    case TraceEvent::kWgmmaIssue: return "wgmma-issue";
    case TraceEvent::kWgmmaRetire: return "wgmma-retire";
    case TraceEvent::kPhaseComplete: return "phase";
    case TraceEvent::kWaitBegin: return "wait-begin";
    case TraceEvent::kWaitEnd: return "wait-end";
    case TraceEvent::kBarrier: return "barrier";
    case TraceEvent::kWgmmaCommit: return "wgmma-commit";
  }
  return "?";
}
const char* finding_kind_name(Finding::Kind k) {
  switch (k) {
    case Finding::kOutOfBounds: return "out-of-bounds";
    case Finding::kHazard: return "hazard";
    case Finding::kDeadlock: return "deadlock";
    case Finding::kLivelock: return "livelock";
    case Finding::kProtocol: return "protocol";
    case Finding::kIllegal: return "illegal";
    case Finding::kTrap: return "trap";
  }
  return "?";
}
std::string Finding::text() const {
  std::ostringstream s;
  s << finding_kind_name(kind) << " in " << kernel;
  if (!ptx_location.empty()) s << " at " << ptx_location;
  if (!where.empty()) s << ", " << where;
  if (!barrier.empty()) s << ", " << barrier;
  s << ": " << message;
  return s.str();
}
std::string Report::text() const {
  std::ostringstream s;
  for (auto& f : findings) s << f.text() << "\n";
  s << (ok() ? "ok" : "FAILED") << ": " << findings.size() << " finding(s), " << warp_instructions << " warp instructions, "
    << thread_instructions << " thread instructions, " << seconds << " s";
  if (seconds > 0) s << " (" << (uint64_t)(thread_instructions / seconds) << " thread instructions/s)";
  s << "\n";
  return s.str();
}

}  // namespace ptxsim
