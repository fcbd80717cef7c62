// ptxsim ISA semantics: warp collectives shfl.sync, vote.sync, redux.sync, match.sync.
//
// Written from the PTX ISA sections "Data Movement and Conversion Instructions: shfl.sync" (9.7.9)
// and "Parallel Synchronization and Communication Instructions: vote.sync / redux.sync /
// match.sync / elect.sync". Each function takes the values of
// all 32 lanes; `member` is the membermask, and a lane not in it contributes nothing.
#pragma once
#include <cstdint>

namespace ptxsim::isa {

// ---- shfl.sync.{up,down,bfly,idx}.b32 d[|p], a, b, c, membermask -------------------------------
// c packs the clamp value c[4:0] and the segment mask c[12:8]:
//   maxLane = (lane & segmask) | (cval & ~segmask),  minLane = lane & segmask
//   .up:   j = lane - b,                     p = j >= maxLane
//   .down: j = lane + b,                     p = j <= maxLane
//   .bfly: j = lane ^ b,                     p = j <= maxLane
//   .idx:  j = minLane | (b[4:0] & ~segmask), p = j <= maxLane
//   if !p, j = lane (the thread copies its own a).
// The source lane must be in membermask (and executing the same shfl.sync); otherwise d is
// undefined. ISA reading: the result is then 0 with `undefined` set, for the core to report.
enum class ShflMode : uint8_t { up, down, bfly, idx };
struct ShflSource { uint32_t lane; bool pred; };

inline ShflSource shfl_source(ShflMode mode, uint32_t lane, uint32_t b, uint32_t c) {
  const int32_t bval = int32_t(b & 0x1f), cval = int32_t(c & 0x1f), segmask = int32_t((c >> 8) & 0x1f);
  const int32_t l = int32_t(lane & 0x1f);
  const int32_t max_lane = (l & segmask) | (cval & ~segmask), min_lane = l & segmask;
  int32_t j = 0;
  bool p = false;
  switch (mode) {
    case ShflMode::up: j = l - bval; p = j >= max_lane; break;
    case ShflMode::down: j = l + bval; p = j <= max_lane; break;
    case ShflMode::bfly: j = l ^ bval; p = j <= max_lane; break;
    case ShflMode::idx: j = min_lane | (bval & ~segmask); p = j <= max_lane; break;
  }
  if (!p) j = l;
  return {uint32_t(j), p};
}

struct ShflLaneResult {
  uint32_t d = 0;
  bool pred = false;
  bool undefined = false;  // the source lane is not in membermask: d is undefined per the ISA
};
// Evaluates the shuffle for every lane in member; lanes not in member are left untouched.
inline void shfl_sync(ShflMode mode, uint32_t member, const uint32_t a[32], const uint32_t b[32],
                      const uint32_t c[32], ShflLaneResult out[32]) {
  for (uint32_t lane = 0; lane < 32; ++lane) {
    if (!((member >> lane) & 1)) continue;
    const ShflSource s = shfl_source(mode, lane, b[lane], c[lane]);
    out[lane].pred = s.pred;
    out[lane].undefined = !((member >> s.lane) & 1);
    out[lane].d = out[lane].undefined ? 0 : a[s.lane];
  }
}

// ---- vote.sync.{all,any,uni}.pred / vote.sync.ballot.b32 ----------------------------------------
// pred bit `lane` of preds is lane's (possibly negated) source predicate.
inline bool vote_all(uint32_t member, uint32_t preds) { return (preds & member) == member; }
inline bool vote_any(uint32_t member, uint32_t preds) { return (preds & member) != 0; }
inline bool vote_uni(uint32_t member, uint32_t preds) {
  return (preds & member) == 0 || (preds & member) == member;
}
inline uint32_t vote_ballot(uint32_t member, uint32_t preds) { return preds & member; }

// ---- redux.sync.op.{b32,u32,s32} d, a, membermask ----------------------------------------------
// .add (u32/s32, wrapping), .min/.max (u32 or s32), .and/.or/.xor (b32); every member lane
// receives the same result.
enum class ReduxOp : uint8_t { add, min_u, max_u, min_s, max_s, and_, or_, xor_ };
inline uint32_t redux_sync(ReduxOp op, uint32_t member, const uint32_t a[32]) {
  bool first = true;
  uint32_t r = 0;
  for (uint32_t lane = 0; lane < 32; ++lane) {
    if (!((member >> lane) & 1)) continue;
    const uint32_t v = a[lane];
    if (first) { r = v; first = false; continue; }
    switch (op) {
      case ReduxOp::add: r += v; break;
      case ReduxOp::min_u: r = v < r ? v : r; break;
      case ReduxOp::max_u: r = v > r ? v : r; break;
      case ReduxOp::min_s: r = int32_t(v) < int32_t(r) ? v : r; break;
      case ReduxOp::max_s: r = int32_t(v) > int32_t(r) ? v : r; break;
      case ReduxOp::and_: r &= v; break;
      case ReduxOp::or_: r |= v; break;
      case ReduxOp::xor_: r ^= v; break;
    }
  }
  return r;
}

// ---- match.sync.{any,all}.{b32,b64} d[|p], a, membermask ---------------------------------------
// .any: d = the member lanes whose a equals this lane's a. .all: d = membermask if every member
// lane has the same a, else 0; p = (that equality).
inline uint32_t match_any(uint32_t member, const uint64_t a[32], uint32_t lane) {
  uint32_t d = 0;
  for (uint32_t j = 0; j < 32; ++j)
    if (((member >> j) & 1) && a[j] == a[lane]) d |= 1u << j;
  return d;
}
inline uint32_t match_all(uint32_t member, const uint64_t a[32], bool* pred) {
  bool same = true, have = false;
  uint64_t v = 0;
  for (uint32_t j = 0; j < 32; ++j) {
    if (!((member >> j) & 1)) continue;
    if (!have) { v = a[j]; have = true; } else if (a[j] != v) same = false;
  }
  if (pred) *pred = same;
  return same ? member : 0;
}

// ---- elect.sync d|p, membermask -----------------------------------------------------------------
// One leader among the member lanes; d = its lane id in every member, p true in the leader only.
// ISA reading: the leader is the lowest-numbered member lane (the ISA says only "one ... leader").
inline uint32_t elect_sync(uint32_t member) { return member ? uint32_t(__builtin_ctz(member)) : 0xffffffffu; }

}  // namespace ptxsim::isa
