// ptxsim: the interpreter, the scheduler and the asynchronous engines (mbarrier, bulk and tensor
// copies, wgmma groups), with hazard, protocol and deadlock reports. Written from the PTX ISA.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <sstream>
#include <map>
#include <unordered_map>

#include "tools/sim/core.h"
#include "tools/sim/exec_sm100_state.h"
#include "tools/sim/isa_shim.h"

namespace ptxsim {
namespace {

// fma.rn.f32 per lane: the hardware FMA where the host has one (exact, and ~50x faster than
// the library's software fma), else std::fma.
__attribute__((target("fma"))) float fma_hw(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
float fma_sw(float a, float b, float c) { return std::fma(a, b, c); }
float (*const fma_rn)(float, float, float) = __builtin_cpu_supports("fma") ? fma_hw : fma_sw;

enum LaneState : uint8_t { LS_RUN, LS_EXITED, LS_BAR, LS_MBAR, LS_COLL, LS_WGWAIT, LS_CLUSTER, LS_NREG };

// Shared bytes an in-flight wgmma.mma_async of the releasing warp was still reading when that warp
// arrived on an mbarrier (the release came before the wgmma.wait_group that retires the reader).
struct ReleasedRead { uint32_t cta, lo, hi, wgmma_pc, arrive_pc; uint32_t seq; };

// A thread's arrive on an mbarrier of another CTA of the cluster, for the memory model's scope rule:
// `orders` when it is a release at cluster scope (its scope includes the waiting thread).
struct RemoteArrive { uint32_t slot, pc; bool orders; };

struct Mbar {
  std::vector<ReleasedRead> cur_reads, done_reads;  // of the current phase; of the last completed one
  std::vector<RemoteArrive> cur_remote, done_remote;  // of the current phase; of the last completed one
  bool live = false;
  uint32_t count = 0;    // expected arrivals per phase
  int64_t pending = 0;   // arrivals still missing in the current phase
  int64_t tx = 0;        // transaction count (may be negative transiently)
  uint32_t phase = 0;    // parity of the current (incomplete) phase
  uint64_t gen = 0;      // phases completed
  uint32_t init_pc = 0;
};

struct NamedBar { uint32_t arrived = 0, expected = 0; uint64_t gen = 0; uint32_t first_pc = 0; bool all = false; };

enum AsyncKind : uint8_t { AK_TMA_LOAD, AK_TMA_STORE, AK_TMA_REDUCE, AK_BULK_LOAD, AK_BULK_STORE, AK_BULK_REDUCE };

struct AsyncOp {
  AsyncKind kind;
  uint32_t id;                 // poison / reader id (1..65534)
  uint32_t cta;                // issuing CTA slot
  uint32_t thread;             // issuing thread (in CTA)
  uint32_t pc;
  uint32_t group = 0;          // bulk group (0: uncommitted; loads: none)
  std::vector<std::pair<uint32_t, uint32_t>> dst_ctas;  // (cta slot, smem offset) for loads
  uint32_t smem = 0;           // source offset for stores
  uint32_t bytes = 0;
  uint32_t mbar = 0;           // mbarrier offset (loads)
  bool from_smem = false;      // a bulk copy from the issuer's shared memory (at smem) to shared::cluster
  uint64_t gaddr = 0;          // non-tensor global address
  const isa::TensorMapDesc* desc = nullptr;
  int32_t coords[5] = {0, 0, 0, 0, 0};
  uint64_t land_at = 0;
  bool done = false;
};

struct WgOp {  // one wgmma.mma_async of a warpgroup
  uint32_t seq;
  uint32_t contributed = 0;  // warps (bit mask)
  bool computed = false;
  uint32_t retired_mask = 0;
  isa::WgmmaOp op;
  uint32_t nd = 0;
  std::vector<uint32_t> d;     // 128 * nd
  std::vector<uint32_t> a;     // 128 * 4
  std::vector<uint32_t> dregs[4];  // per warp: register indices of D
  std::vector<uint32_t> aregs[4];
  std::vector<uint32_t> chunks;    // 16-byte smem chunks read (reader-locked until retired)
  uint32_t pc = 0;
};

struct Warp {
  uint32_t cta = 0, id = 0;  // slot, warp index in CTA
  uint32_t pc[32];
  uint8_t st[32];
  uint32_t nlanes = 32;      // threads of this warp that exist
  std::vector<uint64_t> regs;
  std::vector<uint8_t> lparam;
  std::vector<uint32_t> callstack[32];
  // blocking info per lane
  uint32_t wait_addr[32];
  uint64_t wait_gen[32];
  Mbar* wait_mbar[32];
  uint32_t spin_pc[32];
  uint64_t spin_gen[32];
  uint64_t proxy_fence[32];
  uint32_t bulk_seq[32];
  uint8_t cf[32] = {0};       // the carry flag of sub.cc / subc (PTX ISA 9.7.2, extended precision)
  // The memory model's scope rule (scope_check_read): per lane, the last successful mbarrier wait
  // whose phase a thread of another CTA arrived on without the pairing synchronizing (the wait's
  // acquire at .cta scope, or the arrive not a release at .cluster scope): that CTA's slot + 1 (0:
  // none; cleared by a wait that does synchronize with it, and by barrier.cluster.wait), the wait's
  // and the arrive's pcs.
  uint32_t narrow_slot[32] = {0}, narrow_wait_pc[32] = {0}, narrow_arrive_pc[32] = {0};
  // wgmma
  std::vector<uint32_t> lock;     // per register: 0 free, else wgmma seq + 1 (bit 31: operand A)
  std::vector<uint64_t> pend;     // pending values of locked accumulators
  std::vector<uint8_t> pend_valid;  // pend holds a computed, unretired result
  uint32_t inflight = 0;
  std::vector<ReleasedRead> acquired;  // done_reads of the phase this warp's last successful wait saw
  uint32_t acquired_mbar = 0;
  uint32_t wg_issued = 0;         // wgmma ops issued by this warp
  std::vector<uint32_t> uncommitted;  // seqs
  std::vector<std::vector<uint32_t>> groups;  // committed, oldest first
  uint32_t groups_committed = 0;              // commit_groups so far (the trace's group numbers)
  // The wgmma.fence rule (PTX ISA, "wgmma.fence"): the warp's wgmma.fence count, and per register
  // the count + 1 at its last write by an instruction other than wgmma's own (0: none) and that
  // instruction's pc. A register with the current count + 1 was written since the last fence.
  uint32_t wg_fences = 0;
  std::vector<uint32_t> wstamp, wpc;
  uint32_t nreg = 0;
  bool is_producer = false, is_consumer = false;
  bool done = false;
  uint32_t setmaxnreg_req = 0;
};

struct Cta {
  bool active = false;
  uint32_t linear = 0, ctaid[3] = {0, 0, 0};
  uint32_t cluster_linear = 0, rank = 0;
  uint32_t first_slot = 0;  // slot of rank 0 of its cluster
  std::vector<uint8_t> smem;
  std::vector<uint16_t> poison;
  std::vector<uint8_t> readers;
  std::vector<uint32_t> tag;
  std::vector<uint8_t> rwriter;  // clusters: per byte, 0, or the rank + 1 of another CTA whose thread last stored it
  std::unordered_map<uint32_t, Mbar> mbars;
  NamedBar bars[16];
  std::vector<Warp> warps;
  uint32_t threads = 0, exited = 0;
  int64_t pool_free = 0;
  std::unordered_map<uint32_t, WgOp> wgops[8];  // per warpgroup, by seq
  uint32_t wg_nreg_arrived[8] = {0}, wg_nreg_value[8] = {0};
  uint64_t cluster_gen = 0;
  uint32_t cluster_arrived = 0;
};

struct Ctx;
#define DBG(...)

struct Exec {
  const LaunchConfig& cfg;
  Memory& mem;
  const TensorMaps& maps;
  const Module& m;
  const Func* entry = nullptr;
  Report rep;
  std::vector<Cta> ctas;  // slots
  std::vector<std::vector<uint8_t>> gvars;
  std::vector<AsyncOp> async;
  std::vector<AsyncOp*> op_by_id;
  uint32_t next_id = 1;
  uint64_t step = 0, budget = 0;
  std::mt19937_64 rng;
  bool fatal = false;
  uint32_t smem_bytes = 0, nthreads = 0, nwarps = 0, cl_size = 1;
  uint32_t total_ctas = 0, next_cta = 0;
  uint32_t regs_per_thread = 168;
  uint32_t nregs = 0;
  uint32_t uni_next = UINT32_MAX;  // exec_inst: every lane of the group continues at this pc

  Exec(const LaunchConfig& c, Memory& me, const TensorMaps& t) : cfg(c), mem(me), maps(t), m(*c.module), rng(c.seed) {}

  // ---- findings ----------------------------------------------------------------------------
  std::string where(const Warp& w, int lane) const {
    const Cta& c = ctas[w.cta];
    std::ostringstream s;
    s << "cta (" << c.ctaid[0] << "," << c.ctaid[1] << "," << c.ctaid[2] << ") warp " << w.id;
    if (lane >= 0) s << " lane " << lane << " (thread " << w.id * 32 + lane << ")";
    return s.str();
  }
  std::set<std::pair<int, uint32_t>> reported;  // (kind, pc): one report per instruction and kind
  void finding(Finding::Kind k, const Warp* w, int lane, uint32_t pc, std::string barrier, std::string msg, bool is_fatal = false) {
    bool dup = pc != UINT32_MAX && !reported.insert({(int)k, pc}).second;
    if (!dup && rep.findings.size() < cfg.max_findings) {
      Finding f;
      f.kind = k;
      f.kernel = cfg.entry;
      f.ptx_location = pc < m.code.size() ? m.location(pc) : "";
      f.where = w ? where(*w, lane) : "";
      f.barrier = std::move(barrier);
      f.message = std::move(msg);
      rep.findings.push_back(std::move(f));
    }
    if (is_fatal || rep.findings.size() >= cfg.max_findings) fatal = true;
  }
  static std::string hex(uint64_t v) { std::ostringstream s; s << "0x" << std::hex << v; return s.str(); }
  std::string mbar_name(uint32_t cta, uint32_t off) const {
    std::ostringstream s;
    s << "mbarrier smem+" << hex(off) << " (cta " << ctas[cta].linear << ")";
    auto it = ctas[cta].mbars.find(off);
    if (it != ctas[cta].mbars.end()) {
      const Mbar& b = it->second;
      s << " [phase parity " << b.phase << ", phases completed " << b.gen << ", pending arrivals " << b.pending
        << " of " << b.count << ", tx-count " << b.tx << (b.live ? "" : ", not initialised") << "]";
    }
    return s.str();
  }

  static bool spin_neutral(Op op) {
    switch (op) {
      case OP_LD: case OP_ST: case OP_ATOM: case OP_RED: case OP_CALL: case OP_RET: case OP_EXIT:
      case OP_BAR_SYNC: case OP_BAR_ARRIVE: case OP_CLUSTER_ARRIVE: case OP_CLUSTER_WAIT: case OP_BAR_WARP:
      case OP_SHFL: case OP_VOTE: case OP_ELECT: case OP_SETMAXNREG: case OP_FENCE: case OP_FENCE_PROXY_ASYNC:
      case OP_MBAR_INIT: case OP_MBAR_ARRIVE: case OP_MBAR_ARRIVE_TX: case OP_MBAR_EXPECT_TX: case OP_MBAR_INVAL:
      case OP_TMA_LOAD: case OP_TMA_STORE: case OP_TMA_REDUCE: case OP_BULK_LOAD: case OP_BULK_STORE:
      case OP_BULK_REDUCE: case OP_BULK_COMMIT: case OP_BULK_WAIT: case OP_WGMMA_FENCE: case OP_WGMMA_COMMIT:
      case OP_WGMMA_WAIT: case OP_WGMMA_MMA: case OP_LDMATRIX: case OP_STMATRIX:
        return false;
      default:
        return true;
    }
  }
  static isa::Rnd rnd(const Inst& in) { return PTXSIM_RND(in); }
  static isa::IRnd irnd(const Inst& in) {
    // cvt's integer rounding: .rni/.rzi parse as M_RN/M_RZ; .rmi/.rpi are not in the corpus
    return in.mods & M_RZ ? isa::IRnd::rzi : in.mods & M_RM ? isa::IRnd::rmi : in.mods & M_RP ? isa::IRnd::rpi :
           in.mods & M_RN ? isa::IRnd::rni : isa::IRnd::rzi;
  }
  // ---- values ------------------------------------------------------------------------------
  inline uint64_t& R(Warp& w, uint32_t r, int lane) { return w.regs[(size_t)r * 32 + lane]; }
  uint64_t special(Warp& w, uint32_t id, int lane) {
    const Cta& c = ctas[w.cta];
    uint32_t t = w.id * 32 + lane;
    switch (id) {
      case SR_TID_X: return t % cfg.block.x;
      case SR_TID_Y: return (t / cfg.block.x) % cfg.block.y;
      case SR_TID_Z: return t / (cfg.block.x * cfg.block.y);
      case SR_NTID_X: return cfg.block.x;
      case SR_NTID_Y: return cfg.block.y;
      case SR_NTID_Z: return cfg.block.z;
      case SR_CTAID_X: return c.ctaid[0];
      case SR_CTAID_Y: return c.ctaid[1];
      case SR_CTAID_Z: return c.ctaid[2];
      case SR_NCTAID_X: return cfg.grid.x;
      case SR_NCTAID_Y: return cfg.grid.y;
      case SR_NCTAID_Z: return cfg.grid.z;
      case SR_LANEID: return (uint64_t)lane;
      case SR_WARPID: return w.id;
      case SR_NWARPID: return nwarps;
      case SR_SMID: return w.cta;
      case SR_NSMID: return ctas.size();
      case SR_CLOCK: return (uint32_t)step;  // ISA reading (READINGS.md #16): logical time
      case SR_CLOCK64: case SR_GLOBALTIMER: return step;
      case SR_CLUSTER_CTAID_X: return c.ctaid[0] % cfg.cluster.x;
      case SR_CLUSTER_CTAID_Y: return c.ctaid[1] % cfg.cluster.y;
      case SR_CLUSTER_CTAID_Z: return c.ctaid[2] % cfg.cluster.z;
      case SR_CLUSTER_NCTAID_X: return cfg.cluster.x;
      case SR_CLUSTER_NCTAID_Y: return cfg.cluster.y;
      case SR_CLUSTER_NCTAID_Z: return cfg.cluster.z;
      case SR_CLUSTER_CTARANK: return c.rank;
      case SR_CLUSTER_NCTARANK: return cl_size;
      case SR_CLUSTERID_X: return c.ctaid[0] / cfg.cluster.x;
      case SR_CLUSTERID_Y: return c.ctaid[1] / cfg.cluster.y;
      case SR_CLUSTERID_Z: return c.ctaid[2] / cfg.cluster.z;
      case SR_NCLUSTERID_X: return cfg.grid.x / cfg.cluster.x;
      case SR_NCLUSTERID_Y: return cfg.grid.y / cfg.cluster.y;
      case SR_NCLUSTERID_Z: return cfg.grid.z / cfg.cluster.z;
      case SR_DYN_SMEM: return cfg.dynamic_smem;
      case SR_TOTAL_SMEM: return smem_bytes;
      case SR_LANEMASK_EQ: return 1u << lane;
      case SR_LANEMASK_LT: return (1u << lane) - 1;
      case SR_LANEMASK_LE: return (uint32_t)((2ull << lane) - 1);
      case SR_LANEMASK_GT: return ~(uint32_t)((2ull << lane) - 1);
      case SR_LANEMASK_GE: return ~((1u << lane) - 1);
      default: return 0;
    }
  }
  uint32_t shared_base(const Cta& c) const { return (c.rank + 1) << 24; }
  uint64_t sym_value(Warp& w, const Opnd& o) {
    switch (o.sk) {
      case SK_SHARED: return shared_base(ctas[w.cta]) + (uint64_t)o.imm;
      case SK_GLOBAL: return reinterpret_cast<uint64_t>(gvars[o.reg2].data()) + (uint64_t)o.imm;
      case SK_KPARAM: return (uint64_t)o.imm;
      case SK_LPARAM: return (uint64_t)o.imm;  // only meaningful to ld/st.param
      default: return (uint64_t)o.imm;
    }
  }
  inline uint64_t val(Warp& w, const Opnd& o, int lane) {
    uint64_t v;
    switch (o.kind) {
      case K_REG: v = R(w, o.reg, lane); break;
      case K_IMM: v = (uint64_t)o.imm; break;
      case K_SPECIAL: v = special(w, o.reg, lane); break;
      case K_SYM: v = sym_value(w, o); break;
      default: v = 0;
    }
    return o.neg ? (v ? 0 : 1) : v;
  }
  static inline uint64_t mask_ty(uint64_t v, Ty t) {
    switch (ty_bytes(t)) {
      case 1: return v & 0xFF;
      case 2: return v & 0xFFFF;
      case 4: return v & 0xFFFFFFFFu;
      default: return v;
    }
  }
  static inline int64_t sext(uint64_t v, Ty t) {
    switch (ty_bytes(t)) {
      case 1: return (int8_t)v;
      case 2: return (int16_t)v;
      case 4: return (int32_t)v;
      default: return (int64_t)v;
    }
  }
  static inline float f32(uint64_t v) { float f; uint32_t u = (uint32_t)v; memcpy(&f, &u, 4); return f; }
  static inline uint64_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
  static inline double f64(uint64_t v) { double d; memcpy(&d, &v, 8); return d; }
  static inline uint64_t bits64(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
  inline void wr(Warp& w, const Opnd& o, int lane, uint64_t v) {
    if (o.kind == K_REG) R(w, o.reg, lane) = v;
  }

  // ---- memory ------------------------------------------------------------------------------
  // Resolves a shared address to (cta slot, offset). cluster: decode rank bits.
  bool shared_loc(Warp& w, uint64_t a, bool cluster, uint32_t bytes, uint32_t* cta, uint32_t* off, uint32_t pc, int lane) {
    const Cta& c = ctas[w.cta];
    uint32_t rank_bits = (uint32_t)(a >> 24) & 0xFF;
    uint32_t o = (uint32_t)(a & 0xFFFFFF);
    uint32_t slot = w.cta;
    if (a >> 32) { finding(Finding::kOutOfBounds, &w, lane, pc, "", "shared address " + hex(a) + " is not a shared-window address"); return false; }
    if (cluster && rank_bits != 0) {
      uint32_t r = rank_bits - 1;
      if (r >= cl_size) { finding(Finding::kOutOfBounds, &w, lane, pc, "", "shared::cluster address " + hex(a) + " names rank " + std::to_string(r) + " outside the cluster"); return false; }
      slot = c.first_slot + r;
    } else if (rank_bits != 0 && rank_bits != c.rank + 1) {
      finding(Finding::kOutOfBounds, &w, lane, pc, "", "shared::cta address " + hex(a) + " names another CTA's window");
      return false;
    }
    if ((uint64_t)o + bytes > smem_bytes) {
      finding(Finding::kOutOfBounds, &w, lane, pc, "", "shared access of " + std::to_string(bytes) + " bytes at offset " + hex(o) + " outside the CTA's " + std::to_string(smem_bytes) + " bytes");
      return false;
    }
    *cta = slot;
    *off = o;
    return true;
  }
  void poison_report(Warp& w, int lane, uint32_t pc, uint32_t cta, uint32_t off, bool write) {
    uint16_t id = ctas[cta].poison[off];
    if (id == 0xFFFF) {
      finding(Finding::kProtocol, &w, lane, pc, mbar_name(cta, off), std::string("generic ") + (write ? "store to" : "load from") + " a live mbarrier object");
      return;
    }
    AsyncOp* op = op_by_id[id];
    std::string issued = op ? m.location(op->pc) : "?";
    finding(Finding::kHazard, &w, lane, pc, op ? mbar_name(op->cta, op->mbar) : "",
            std::string(write ? "store to" : "read of") + " shared bytes at offset " + hex(off) +
                " that an in-flight bulk copy has not yet written (issued at " + issued + ")");
  }
  void readers_report(Warp& w, int lane, uint32_t pc, uint32_t off) {
    finding(Finding::kHazard, &w, lane, pc, "", "store to shared bytes at offset " + hex(off) +
            " that an in-flight asynchronous operation (wgmma operand or bulk store source) is reading");
  }
  // Checked shared read/write by the generic proxy.
  bool smem_read(Warp& w, int lane, uint32_t pc, uint64_t a, bool cluster, void* dst, uint32_t n) {
    uint32_t cta, off;
    if (!shared_loc(w, a, cluster, n, &cta, &off, pc, lane)) { memset(dst, 0, n); return false; }
    Cta& c = ctas[cta];
    for (uint32_t i = 0; i < n; ++i)
      if (c.poison[off + i]) { poison_report(w, lane, pc, cta, off + i, false); break; }
    if (w.narrow_slot[lane]) {
      if (cta != w.cta) scope_check_read(w, lane, pc, cta, "ld.shared::cluster reads the shared memory of");
      else
        for (uint32_t i = 0; i < n; ++i)
          if (!c.rwriter.empty() && c.rwriter[off + i] && c.first_slot + c.rwriter[off + i] - 1 == w.narrow_slot[lane] - 1) {
            scope_check_read(w, lane, pc, w.narrow_slot[lane] - 1, "a load of shared bytes (offset " + hex(off + i) + ") last stored by a thread of");
            break;
          }
    }
    memcpy(dst, &c.smem[off], n);
    return true;
  }
  // The memory model's scope rule (PTX ISA, "Memory Consistency Model": a release pattern
  // synchronizes with an acquire pattern only when the two are morally strong, each specifying a
  // scope that includes the thread executing the other; a .cta scope does not include a thread of
  // the peer CTA). The lane's last mbarrier wait observed a phase that a thread of CTA slot `src`
  // arrived on without such a pairing (Warp::narrow_slot); reading that CTA's data now relies on an
  // order nothing established: "a wait with too narrow a scope".
  void scope_check_read(Warp& w, int lane, uint32_t pc, uint32_t src, const std::string& what) {
    if (w.narrow_slot[lane] != src + 1) return;
    const Inst& wi = m.code[w.narrow_wait_pc[lane]];
    const Inst& ai = m.code[w.narrow_arrive_pc[lane]];
    const bool wait_cta = !(wi.mods & M_CLUSTER) || (wi.mods & M_RELAXED);
    const bool arrive_ok = (ai.mods & M_CLUSTER) && !(ai.mods & M_RELAXED);
    std::string why;
    if (wait_cta) why = std::string("the wait's ") + ((wi.mods & M_RELAXED) ? ".relaxed" : ".acquire at .cta scope") + " does not include the arriving thread of CTA " + std::to_string(ctas[src].linear);
    if (!arrive_ok) why += std::string(why.empty() ? "" : ", and ") + "the arrive is not a release at .cluster scope (its scope does not include the waiting thread)";
    finding(Finding::kProtocol, &w, lane, pc, "", "a wait with too narrow a scope: " + what + " CTA " + std::to_string(ctas[src].linear) +
            " ordered only by the mbarrier wait at " + m.location(w.narrow_wait_pc[lane]) + ", whose phase the arrive at " +
            m.location(w.narrow_arrive_pc[lane]) + " of that CTA completed; " + why +
            ", so the pair does not synchronize (PTX ISA, Memory Consistency Model: release and acquire patterns synchronize "
            "only when morally strong, each with a scope that includes the thread executing the other)");
  }
  bool smem_write(Warp& w, int lane, uint32_t pc, uint64_t a, bool cluster, const void* src, uint32_t n) {
    uint32_t cta, off;
    if (!shared_loc(w, a, cluster, n, &cta, &off, pc, lane)) return false;
    Cta& c = ctas[cta];
    for (uint32_t i = 0; i < n; ++i) {
      if (c.poison[off + i]) { poison_report(w, lane, pc, cta, off + i, true); break; }
      if (c.readers[off + i]) { readers_report(w, lane, pc, off + i); break; }
    }
    memcpy(&c.smem[off], src, n);
    if (!c.rwriter.empty()) memset(&c.rwriter[off], cta == w.cta ? 0 : int(ctas[w.cta].rank + 1), n);
    uint32_t t = ((uint32_t)(w.proxy_fence[lane] & 0xFFFF) << 16) | (w.id * 32 + lane + 1);
    for (uint32_t i = 0; i < n; ++i) c.tag[off + i] = t;
    return true;
  }
  uint8_t* global_ptr(Warp* w, int lane, uint32_t pc, uint64_t a, uint32_t n, bool write) {
    const Memory::Range* r = mem.find(a, n);
    if (!r) {
      finding(Finding::kOutOfBounds, w, lane, pc, "", std::string("global ") + (write ? "store" : "load") + " of " +
              std::to_string(n) + " bytes at " + hex(a) + " outside every registered allocation");
      return nullptr;
    }
    return reinterpret_cast<uint8_t*>(a);
  }
  // Generic / space-qualified access.
  bool mem_access(Warp& w, int lane, const Inst& in, Space sp, uint64_t a, void* buf, uint32_t n, bool write) {
    uint32_t pc = (uint32_t)(&in - m.code.data());
    if (sp == SP_GENERIC) {
      if ((a >> 56) == (kGenericShared >> 56)) { sp = SP_SHARED_CLUSTER; a -= kGenericShared; }
      else if ((a >> 56) == (kGenericParam >> 56)) { sp = SP_PARAM; a -= kGenericParam; }
      else if ((a >> 56) == (kGenericLocal >> 56)) {
        finding(Finding::kIllegal, &w, lane, pc, "", "local memory is not modelled");
        return false;
      } else sp = SP_GLOBAL;
    }
    switch (sp) {
      case SP_GLOBAL: case SP_CONST: {
        uint8_t* p = global_ptr(&w, lane, pc, a, n, write);
        if (!p) { if (!write) memset(buf, 0, n); return false; }
        if (write) memcpy(p, buf, n); else memcpy(buf, p, n);
        return true;
      }
      case SP_SHARED: case SP_SHARED_CLUSTER:
        return write ? smem_write(w, lane, pc, a, sp == SP_SHARED_CLUSTER, buf, n)
                     : smem_read(w, lane, pc, a, sp == SP_SHARED_CLUSTER, buf, n);
      case SP_PARAM: {
        if (write || a + n > cfg.params.size()) {
          finding(Finding::kOutOfBounds, &w, lane, pc, "", "param access at " + hex(a) + " outside the " + std::to_string(cfg.params.size()) + "-byte param block");
          if (!write) memset(buf, 0, n);
          return false;
        }
        memcpy(buf, &cfg.params[a], n);
        return true;
      }
      default:
        finding(Finding::kIllegal, &w, lane, pc, "", "unsupported state space");
        return false;
    }
  }
  uint64_t addr_of(Warp& w, const Opnd& o, int lane) {
    if (o.sk == SK_REG) return R(w, o.reg2, lane) + (uint64_t)o.imm;
    if (o.sk == SK_NONE) return (uint64_t)o.imm;
    Opnd s = o;
    s.kind = K_SYM;
    return sym_value(w, s);
  }

  // ---- wgmma register locks ------------------------------------------------------------------
  // The registers `in` writes (its operand 0, for the instructions that have a destination), stamped
  // for the wgmma.fence rule (Warp::wstamp). wgmma's own writes (mma_async, wait_group) are not: the
  // ISA orders accumulator accesses between wgmma.mma_async instructions by default.
  void stamp_writes(Warp& w, const Inst& in, uint32_t pc) {
    switch (in.op) {
      case OP_ST: case OP_RED: case OP_BRA: case OP_CALL: case OP_RET: case OP_EXIT: case OP_TRAP: case OP_BRKPT:
      case OP_NANOSLEEP: case OP_BAR_SYNC: case OP_BAR_ARRIVE: case OP_BAR_WARP: case OP_CLUSTER_ARRIVE:
      case OP_CLUSTER_WAIT: case OP_SETMAXNREG: case OP_FENCE: case OP_FENCE_PROXY_ASYNC: case OP_FENCE_MBAR_INIT:
      case OP_FENCE_PROXY_TMAP: case OP_MBAR_INIT: case OP_MBAR_INVAL: case OP_TMA_LOAD: case OP_TMA_STORE:
      case OP_TMA_REDUCE: case OP_TMA_PREFETCH: case OP_BULK_LOAD: case OP_BULK_STORE: case OP_BULK_REDUCE:
      case OP_BULK_COMMIT: case OP_BULK_WAIT: case OP_WGMMA_FENCE: case OP_WGMMA_COMMIT: case OP_WGMMA_WAIT:
      case OP_WGMMA_MMA: case OP_STMATRIX:
        return;
      default: break;
    }
    if (in.nops == 0) return;
    const uint32_t s = w.wg_fences + 1;
    auto stamp = [&](uint32_t r) { if (r < w.wstamp.size()) { w.wstamp[r] = s; w.wpc[r] = pc; } };
    const Opnd& d = in.o[0];
    if (d.kind == K_REG) stamp(d.reg);
    else if (d.kind == K_PAIR) { if (d.reg != kNoReg) stamp(d.reg); if (d.reg2 != kNoReg) stamp(d.reg2); }
    else if (d.kind == K_VEC)
      for (uint32_t e = 0; e < d.n; ++e)
        if (m.vecs[d.reg + e].kind == K_REG) stamp(m.vecs[d.reg + e].reg);
  }
  // PTX ISA, "wgmma.fence": all warps of the warpgroup must execute wgmma.fence before the first
  // wgmma.mma_async, and between a register access by a thread and a wgmma.mma_async that accesses
  // the same register as its accumulator or as a fragment of A (other than accumulator accesses
  // between wgmma.mma_async instructions); otherwise the behaviour is undefined. Checked here for
  // writes (tools/sim/READINGS.md: reads and the same-shape condition are not checked).
  void check_wgmma_fence(Warp& w, const WgOp& g, uint32_t wq, int lane, uint32_t pc) {
    if (w.wg_fences == 0) {
      finding(Finding::kHazard, &w, lane, pc, "",
              "wgmma.mma_async with no wgmma.fence before the warp's first wgmma.mma_async (PTX ISA, wgmma.fence)");
      return;
    }
    auto dirty = [&](const std::vector<uint32_t>& regs, const char* what) {
      for (uint32_t r : regs)
        if (r < w.wstamp.size() && w.wstamp[r] == w.wg_fences + 1) {
          finding(Finding::kHazard, &w, lane, pc, "",
                  std::string("wgmma.mma_async accesses register ") + std::to_string(r) + " (" + what + "), written at " +
                      m.location(w.wpc[r]) + " after the warp's last wgmma.fence (PTX ISA, wgmma.fence: one is required between the two)");
          return true;
        }
      return false;
    };
    if (!dirty(g.dregs[wq], "an accumulator")) dirty(g.aregs[wq], "a fragment of A");
  }

  void check_locks(Warp& w, const Inst& in, uint32_t mask, uint32_t pc) {
    auto bad = [&](uint32_t r, bool write) -> bool {
      if (r == kNoReg || r >= w.lock.size() || !w.lock[r]) return false;
      bool is_a = w.lock[r] >> 31;
      if (is_a && !write) return false;
      finding(Finding::kHazard, &w, __builtin_ctz(mask), pc, "",
              std::string(write ? "write to" : "read of") + " register " + std::to_string(r) +
                  (is_a ? " (an A operand)" : " (an accumulator)") + " of an in-flight wgmma.mma_async before the wgmma.wait_group that retires it");
      return true;
    };
    for (int k = 0; k < in.nops; ++k) {
      const Opnd& o = in.o[k];
      bool dst = k == 0 && in.op != OP_ST && in.op != OP_RED && in.op != OP_STMATRIX && in.op != OP_BRA;
      if (o.kind == K_REG && bad(o.reg, dst)) return;
      if (o.kind == K_PAIR && (bad(o.reg, true) || bad(o.reg2, true))) return;
      if (o.kind == K_ADDR && o.sk == SK_REG && bad(o.reg2, false)) return;
      if (o.kind == K_VEC)
        for (uint32_t e = 0; e < o.n; ++e) {
          const VecElem& v = m.vecs[o.reg + e];
          if (v.kind == K_REG && bad(v.reg, dst)) return;
        }
    }
    if (in.guard >= 0 && bad((uint32_t)in.guard, false)) return;
  }

  // ---- mbarrier ---------------------------------------------------------------------------------
  Mbar* mbar_at(Warp& w, int lane, uint32_t pc, uint64_t a, bool cluster, uint32_t* cta_out, uint32_t* off_out) {
    uint32_t cta, off;
    if (!shared_loc(w, a, cluster, 8, &cta, &off, pc, lane)) return nullptr;
    if (off & 7) { finding(Finding::kIllegal, &w, lane, pc, "", "mbarrier address " + hex(a) + " is not 8-byte aligned"); return nullptr; }
    auto it = ctas[cta].mbars.find(off);
    if (it == ctas[cta].mbars.end() || !it->second.live) {
      finding(Finding::kProtocol, &w, lane, pc, mbar_name(cta, off), "mbarrier operation on an object that is not an initialised mbarrier");
      return nullptr;
    }
    *cta_out = cta;
    *off_out = off;
    return &it->second;
  }
  void phase_check(Mbar& b, uint32_t cta, uint32_t off) {
    if (b.pending == 0 && b.tx == 0) {
      b.phase ^= 1;
      b.gen++;
      b.done_reads = std::move(b.cur_reads);
      b.cur_reads.clear();
      b.done_remote = std::move(b.cur_remote);
      b.cur_remote.clear();
      b.pending = b.count;
      if (cfg.trace) cfg.trace->event({step, TraceEvent::kPhaseComplete, ctas[cta].linear, 0, "mbarrier smem+" + hex(off)});
    }
  }
  // An arrive (a release, PTX ISA mbarrier.arrive .release) by a warp with wgmma.mma_async still in
  // flight (committed or not, not yet retired by this warp's wgmma.wait_group): the shared bytes
  // they read go with the barrier's phase, and a thread whose wait sees that phase complete must
  // not write them (the release does not order the wgmma's reads before the waiter's writes).
  // ISA reading (READINGS.md #21).
  void note_released_reads(Warp& w, Mbar& b, uint32_t pc) {
    Cta& c = ctas[w.cta];
    const uint32_t wg = w.id / 4;
    auto add = [&](uint32_t seq) {
      for (const ReleasedRead& r : b.cur_reads) if (r.seq == seq && r.cta == w.cta) return;
      auto it = c.wgops[wg % 8].find(seq);
      if (it == c.wgops[wg % 8].end()) return;
      for (uint32_t ch : it->second.chunks) {
        if (!b.cur_reads.empty() && b.cur_reads.back().seq == seq && b.cur_reads.back().hi == ch * 16) b.cur_reads.back().hi += 16;
        else b.cur_reads.push_back({w.cta, ch * 16, ch * 16 + 16, it->second.pc, pc, seq});
      }
    };
    for (auto& g : w.groups) for (uint32_t seq : g) add(seq);
    for (uint32_t seq : w.uncommitted) add(seq);
  }
  void mbar_arrive(Warp* w, int lane, uint32_t pc, Mbar& b, uint32_t cta, uint32_t off, uint32_t cnt) {
    b.pending -= cnt;
    if (b.pending < 0) {
      finding(Finding::kProtocol, w, lane, pc, mbar_name(cta, off), "more arrivals than the mbarrier's expected count in one phase");
      b.pending = 0;
    }
    phase_check(b, cta, off);
  }
  void complete_tx(uint32_t cta, uint32_t off, uint32_t bytes, uint32_t pc) {
    auto it = ctas[cta].mbars.find(off);
    if (it == ctas[cta].mbars.end() || !it->second.live) {
      finding(Finding::kProtocol, nullptr, -1, pc, mbar_name(cta, off), "a bulk copy completed on an object that is not a live mbarrier");
      return;
    }
    it->second.tx -= bytes;
    phase_check(it->second, cta, off);
  }

  // ---- async engine ------------------------------------------------------------------------------
  uint32_t alloc_id(AsyncOp* op) {
    for (int tries = 0; tries < 65534; ++tries) {
      uint32_t id = next_id++;
      if (next_id >= 65535) next_id = 1;
      if (!op_by_id[id]) { op_by_id[id] = op; return id; }
    }
    return 0;
  }
  // ISA reading (READINGS.md #12): when a copy lands is the scheduler's choice
  uint64_t land_delay() {
    switch (cfg.policy) {
      case Policy::kRandom: return rng() % 400;
      case Policy::kStarveProducer: return 400;
      default: return 64;
    }
  }
  void land(AsyncOp& op) {
    if (op.done) return;
    op.done = true;
    Cta& src = ctas[op.cta];
    auto rd_global = [&](uint64_t a, void* d, uint32_t n) {
      uint8_t* p = global_ptr(nullptr, -1, op.pc, a, n, false);
      if (p) memcpy(d, p, n); else memset(d, 0, n);
    };
    auto wr_global = [&](uint64_t a, const void* s, uint32_t n) {
      uint8_t* p = global_ptr(nullptr, -1, op.pc, a, n, true);
      if (p) memcpy(p, s, n);
    };
    auto rd_src = [&](uint32_t a, void* d, uint32_t n) {
      a &= 0xFFFFFF;
      if (a + n > smem_bytes) { memset(d, 0, n); return; }
      memcpy(d, &src.smem[a], n);
    };
    if (cfg.trace) cfg.trace->event({step, TraceEvent::kTmaLand, src.linear, op.thread / 32, "copy " + std::to_string(op.id) + ": " + m.location(op.pc)});
    switch (op.kind) {
      case AK_TMA_LOAD: case AK_BULK_LOAD:
        for (auto& [slot, off] : op.dst_ctas) {
          Cta& d = ctas[slot];
          auto wr_smem = [&](uint32_t a, const void* s, uint32_t n) {
            a &= 0xFFFFFF;
            if (a + n > smem_bytes) return;
            memcpy(&d.smem[a], s, n);
          };
          if (op.kind == AK_TMA_LOAD) isa::tile_load(*op.desc, op.coords, off, rd_global, wr_smem);
          else {
            std::vector<uint8_t> tmp(op.bytes);
            if (op.from_smem) rd_src(op.smem, tmp.data(), op.bytes);
            else rd_global(op.gaddr, tmp.data(), op.bytes);
            wr_smem(off, tmp.data(), op.bytes);
          }
          for (uint32_t i = 0; i < op.bytes && off + i < smem_bytes; ++i) {
            if (d.poison[off + i] == op.id) d.poison[off + i] = 0;
            d.tag[off + i] = 0;
          }
          complete_tx(slot, op.mbar, op.bytes, op.pc);
        }
        if (op.from_smem)
          for (uint32_t i = 0; i < op.bytes && op.smem + i < smem_bytes; ++i)
            if (src.readers[op.smem + i]) src.readers[op.smem + i]--;
        break;
      case AK_TMA_STORE: case AK_TMA_REDUCE: case AK_BULK_STORE: case AK_BULK_REDUCE: {
        if (op.kind == AK_TMA_STORE) isa::tile_store(*op.desc, op.coords, op.smem, rd_src, wr_global);
        else if (op.kind == AK_TMA_REDUCE) isa::tile_reduce_add(*op.desc, op.coords, op.smem, rd_src, rd_global, wr_global);
        else {
          std::vector<uint8_t> tmp(op.bytes);
          rd_src(op.smem, tmp.data(), op.bytes);
          if (op.kind == AK_BULK_STORE) wr_global(op.gaddr, tmp.data(), op.bytes);
          else {
            std::vector<float> g(op.bytes / 4);
            rd_global(op.gaddr, g.data(), op.bytes);
            for (uint32_t i = 0; i < op.bytes / 4; ++i) { float s; memcpy(&s, &tmp[i * 4], 4); g[i] = g[i] + s; }
            wr_global(op.gaddr, g.data(), op.bytes);
          }
        }
        uint32_t sbytes = op.bytes;
        for (uint32_t i = 0; i < sbytes && op.smem + i < smem_bytes; ++i)
          if (src.readers[op.smem + i]) src.readers[op.smem + i]--;
        break;
      }
    }
    op_by_id[op.id] = nullptr;
  }
  void gc_async() {
    async.erase(std::remove_if(async.begin(), async.end(), [](const AsyncOp& o) { return o.done; }), async.end());
    for (auto& o : async) op_by_id[o.id] = &o;
  }
  bool land_due(bool force_all) {
    bool any = false;
    for (auto& op : async) {
      if (op.done) continue;
      if (force_all || op.land_at <= step) {
        // one copy per call unless forced: a phase that one copy completes early is observable
        // before the next copy lands
        land(op);
        any = true;
        if (fatal || !force_all) break;
      }
    }
    if (any) gc_async();
    return any;
  }
  // Proxy check: bytes written by the generic proxy and not fenced by the writer before an
  // async-proxy read.
  // ISA reading (READINGS.md #14): the writer's own fence.proxy.async is what is checked
  void proxy_check(Warp& w, int lane, uint32_t pc, uint32_t cta, uint32_t off, uint32_t n, const char* what) {
    Cta& c = ctas[cta];
    for (uint32_t i = 0; i < n && off + i < smem_bytes; ++i) {
      uint32_t t = c.tag[off + i];
      if (!t) continue;
      uint32_t th = (t & 0xFFFF) - 1;
      Warp& ww = c.warps[th / 32];
      if ((ww.proxy_fence[th % 32] & 0xFFFF) == (t >> 16)) {
        finding(Finding::kProtocol, &w, lane, pc, "",
                std::string(what) + " reads shared bytes at offset " + hex(off + i) + " written by thread " + std::to_string(th) +
                    " through the generic proxy with no fence.proxy.async by that thread in between");
        return;
      }
    }
  }

  // ---- launch ------------------------------------------------------------------------------------
  bool start_cta(uint32_t slot, uint32_t linear, uint32_t rank, uint32_t first_slot) {
    Cta& c = ctas[slot];
    c.active = true;
    c.linear = linear;
    c.ctaid[0] = linear % cfg.grid.x;
    c.ctaid[1] = (linear / cfg.grid.x) % cfg.grid.y;
    c.ctaid[2] = linear / (cfg.grid.x * cfg.grid.y);
    c.rank = rank;
    c.first_slot = first_slot;
    c.smem.assign(smem_bytes, 0);
    c.poison.assign(smem_bytes, 0);
    c.readers.assign(smem_bytes, 0);
    c.tag.assign(smem_bytes, 0);
    if (cl_size > 1) c.rwriter.assign(smem_bytes, 0);
    c.mbars.clear();
    for (auto& b : c.bars) b = NamedBar{};
    for (auto& g : c.wgops) g.clear();
    for (auto& v : c.wg_nreg_arrived) v = 0;
    c.threads = nthreads;
    c.exited = 0;
    c.pool_free = 0;
    c.cluster_gen = 0;
    c.cluster_arrived = 0;
    c.warps.resize(nwarps);
    for (uint32_t wi = 0; wi < nwarps; ++wi) {
      Warp& w = c.warps[wi];
      w.cta = slot;
      w.id = wi;
      w.nlanes = std::min(32u, nthreads - wi * 32);
      w.regs.assign((size_t)nregs * 32, 0);
      w.lparam.assign((size_t)m.lparam_bytes * 32 + 8, 0);
      for (int l = 0; l < 32; ++l) {
        w.pc[l] = entry->begin;
        w.st[l] = l < (int)w.nlanes ? LS_RUN : LS_EXITED;
        w.callstack[l].clear();
        w.spin_pc[l] = UINT32_MAX;
        w.proxy_fence[l] = 0;
        w.bulk_seq[l] = 0;
        w.wait_mbar[l] = nullptr;
        w.narrow_slot[l] = 0;
      }
      w.lock.assign(nregs, 0);
      w.wstamp.assign(nregs, 0);
      w.wpc.assign(nregs, 0);
      w.wg_fences = 0;
      w.groups_committed = 0;
      for (int l = 0; l < 32; ++l) w.cf[l] = 0;
      w.pend.clear();  // allocated by the warp's first wgmma
      w.pend_valid.clear();
      w.inflight = 0;
      w.acquired.clear();
      w.wg_issued = 0;
      w.uncommitted.clear();
      w.groups.clear();
      w.nreg = regs_per_thread;
      w.is_producer = w.is_consumer = false;
      w.done = false;
    }
    tc_reset(slot);
    return true;
  }

  Report run();
  void exec_warp(Warp& w, int quantum);
  bool warp_runnable(Warp& w);
  void exec_inst(Warp& w, uint32_t pc, uint32_t mask);
  std::string blocked_desc(Warp& w);
  void nreg_over_pool(Cta& c);
  std::string nreg_split_text(Cta& c, uint32_t want);
  // sm_100a, tcgen05 (tools/sim/exec_sm100.inc)
  sm100::State tc;
  sm100::CtaTmem& tc_cta(uint32_t slot);
  sm100::WarpTc& tc_warp(const Warp& w);
  void tc_reset(uint32_t slot);
  void tc_check_ld_regs(Warp& w, const Inst& in, uint32_t mask, uint32_t pc);
  std::string tc_cell_name(uint32_t lane, uint32_t col);
  std::string tc_inflight_writer(uint32_t slot, uint32_t lane0, uint32_t lanes, uint32_t col0, uint32_t cols, int64_t warp_gw, bool* is_mma);
  bool tc_uniform(Warp& w, uint32_t mask, const Opnd& o, uint64_t* v, uint32_t pc, const char* what);
  void exec_tcgen05(Warp& w, uint32_t pc, uint32_t mask);
  void tc_complete(sm100::Mma& x);
  void tc_land(sm100::Commit& k);
  bool tc_land_due(bool force_all);
  void tc_cta_exit(uint32_t slot);
  void tc_note_sync(Warp& w, int lane);
  void exec_clc(Warp& w, uint32_t pc, uint32_t mask);
  // cluster launch control (exec_sm100.inc): run()'s queue of clusters not yet launched
  uint32_t* clc_next = nullptr;
  const std::vector<std::vector<uint32_t>>* clc_clusters = nullptr;
  void tc_handoff_check(Warp& w, int lane, uint32_t reader, uint32_t cell_lane, uint32_t lanes, uint32_t col0, uint32_t cols,
                        uint32_t pc, const char* what, int64_t cell_slot = -1);
  // cta_group::2 (exec_sm100.inc): the CTA pair, and the pair-collective alloc / dealloc
  bool tc_pair_slots(Warp& w, int lane, uint32_t pc, uint32_t* even, uint32_t* odd);
  int tc_pair_meet(Warp& w, uint32_t pc, uint32_t peer, const sm100::PairPost& mine, sm100::PairPost** peer_post);
  void tc_pair_alloc(Warp& w, uint32_t pc, uint32_t mask);
  void tc_pair_dealloc(Warp& w, uint32_t pc, uint32_t mask);
};

bool Exec::warp_runnable(Warp& w) {
  if (w.done) return false;
  bool any = false;
  Cta& c = ctas[w.cta];
  for (uint32_t l = 0; l < w.nlanes; ++l) {
    switch (w.st[l]) {
      case LS_RUN: any = true; break;
      case LS_MBAR:
        if (w.wait_mbar[l] && w.wait_mbar[l]->gen != w.wait_gen[l]) {
          w.st[l] = LS_RUN;
          w.spin_pc[l] = UINT32_MAX;
          any = true;
          if (cfg.trace) cfg.trace->event({step, TraceEvent::kWaitEnd, c.linear, w.id, "lane " + std::to_string(l)});
        }
        break;
      case LS_BAR:
        if (c.bars[w.wait_addr[l]].gen != w.wait_gen[l]) {
          w.st[l] = LS_RUN; w.pc[l]++; any = true;
          if (tc.on) tc_note_sync(w, int(l));  // tcgen05.fence checks (exec_sm100.inc)
        }
        break;
      case LS_CLUSTER: {
        Cta& c0 = ctas[c.first_slot];
        if (c0.cluster_gen != w.wait_gen[l]) {
          w.st[l] = LS_RUN; w.pc[l]++; any = true;
          w.narrow_slot[l] = 0;  // barrier.cluster.wait (acquire, cluster scope) after every thread's arrive
          if (tc.on) tc_note_sync(w, int(l));
        }
        break;
      }
      case LS_NREG:
        if (c.pool_free > (int64_t)w.wait_gen[l]) { w.st[l] = LS_RUN; any = true; }
        break;
      case LS_WGWAIT: {
        auto it = c.wgops[(w.id / 4) % 8].find(w.wait_addr[l]);
        if (it == c.wgops[(w.id / 4) % 8].end() || it->second.computed) { w.st[l] = LS_RUN; any = true; }
        break;
      }
      default: break;
    }
  }
  if (!any) {
    bool all_exited = true;
    for (uint32_t l = 0; l < w.nlanes; ++l) if (w.st[l] != LS_EXITED) all_exited = false;
    if (all_exited) w.done = true;
  }
  return any;
}

// Why a setmaxnreg.inc to `want` can never be granted (PTX ISA, setmaxnreg: .inc blocks until the
// pool has the registers; .dec releases them): the launch's pool against what the warpgroups hold or
// ask for, each warpgroup at the largest count of its warps (requested where a warp waits; exited
// warps keep theirs: READINGS.md #9).
std::string Exec::nreg_split_text(Cta& c, uint32_t want) {
  const int64_t pool = int64_t(regs_per_thread) * 32 * int64_t(c.warps.size());
  int64_t asked = 0;
  std::ostringstream counts;
  for (uint32_t g = 0; g * 4 < c.warps.size(); ++g) {
    uint32_t target = 0, warps = 0;
    for (uint32_t k = g * 4; k < std::min<size_t>(c.warps.size(), g * 4 + 4); ++k) {
      Warp& o = c.warps[k];
      uint32_t r = o.nreg;
      for (uint32_t x = 0; x < o.nlanes; ++x)
        if (o.st[x] == LS_NREG) { r = uint32_t(val(o, m.code[o.pc[x]].o[0], int(x))); break; }
      target = std::max(target, r);
      ++warps;
    }
    asked += int64_t(target) * 32 * warps;
    counts << (g ? ", " : "") << "warpgroup " << g << ": " << target;
  }
  return "setmaxnreg.inc to " + std::to_string(want) + " can never be granted: the launch's register pool is " +
         std::to_string(regs_per_thread) + " per thread x " + std::to_string(c.threads) + " threads = " +
         std::to_string(pool) + " registers and the warpgroups' counts (" + counts.str() + ") need " +
         std::to_string(asked) + ": a setmaxnreg split over the pool (" + std::to_string(c.pool_free) + " free now)";
}

// At a deadlock: a setmaxnreg.inc still blocked is reported on its own, beside the deadlock it
// causes (nothing will release registers now).
void Exec::nreg_over_pool(Cta& c) {
  for (Warp& w : c.warps) {
    if (w.done) continue;
    for (uint32_t x = 0; x < w.nlanes; ++x)
      if (w.st[x] == LS_NREG) {
        const uint32_t pc = w.pc[x];
        finding(Finding::kProtocol, &w, int(x), pc, "", nreg_split_text(c, uint32_t(val(w, m.code[pc].o[0], int(x)))));
        break;
      }
  }
}

std::string Exec::blocked_desc(Warp& w) {
  std::ostringstream s;
  std::map<std::pair<uint32_t, uint8_t>, uint32_t> groups;
  for (uint32_t l = 0; l < w.nlanes; ++l)
    if (w.st[l] != LS_EXITED) groups[{w.pc[l], w.st[l]}] |= 1u << l;
  Cta& c = ctas[w.cta];
  for (auto& [k, mask] : groups) {
    auto [pc, st] = k;
    int l = __builtin_ctz(mask);
    s << "\n    " << where(w, -1) << " lanes " << hex(mask) << " at " << m.location(pc) << ": ";
    switch (st) {
      case LS_MBAR: {
        uint32_t off = w.wait_addr[l];
        s << "spinning on " << mbar_name(w.cta, off) << " waiting for parity " << (R(w, m.code[pc].o[2].kind == K_REG ? m.code[pc].o[2].reg : 0, l) & 1);
        break;
      }
      case LS_BAR: {
        const NamedBar& b = c.bars[w.wait_addr[l]];
        s << "waiting at named barrier " << w.wait_addr[l] << " (" << b.arrived << " of " << b.expected << " threads arrived)";
        break;
      }
      case LS_COLL: s << "waiting for the other threads of its warp at a .sync/.aligned instruction"; break;
      case LS_WGWAIT: s << "waiting for a wgmma whose other warps of the warpgroup never issued it"; break;
      case LS_CLUSTER: s << "waiting at the cluster barrier"; break;
      case LS_NREG: s << "setmaxnreg waiting for registers (pool free " << c.pool_free << ")"; break;
      default: s << "runnable"; break;
    }
  }
  return s.str();
}

void Exec::exec_warp(Warp& w, int quantum) {
  uint32_t minpc = UINT32_MAX, mask = 0;
  bool have = false;
  for (int q = 0; q < quantum && !fatal; ++q) {
    if (have) {
      // the group stayed together and no other lane of the warp can run: no rescan
      exec_inst(w, minpc, mask);
      step++;
      if (uni_next == UINT32_MAX) have = false; else minpc = uni_next;
      continue;
    }
    // the group: the lowest PC among runnable lanes
    minpc = UINT32_MAX;
    mask = 0;
    uint32_t runmask = 0;
    bool coll = false;
    for (uint32_t l = 0; l < w.nlanes; ++l) {
      uint8_t st = w.st[l];
      if (st == LS_RUN) {
        uint32_t p = w.pc[l];
        runmask |= 1u << l;
        if (p < minpc) { minpc = p; mask = 1u << l; }
        else if (p == minpc) mask |= 1u << l;
      } else if (st == LS_COLL) coll = true;
    }
    if (minpc == UINT32_MAX) return;
    if (coll)
      for (uint32_t l = 0; l < w.nlanes; ++l)
        if (w.st[l] == LS_COLL && w.pc[l] == minpc) mask |= 1u << l;
    exec_inst(w, minpc, mask);
    step++;
    if (!coll && runmask == mask && uni_next != UINT32_MAX) { have = true; minpc = uni_next; }
  }
}

#define FOR_LANES for (uint32_t _m = mask; _m; _m &= _m - 1) if (int l = __builtin_ctz(_m); true)

void Exec::exec_inst(Warp& w, uint32_t pc, uint32_t mask) {
  const Inst& in = m.code[pc];
  Cta& cta = ctas[w.cta];
  uni_next = UINT32_MAX;
  const uint32_t mask_in = mask;
  if (!in.implemented) {
    finding(Finding::kIllegal, &w, __builtin_ctz(mask), pc, "", "unimplemented instruction form '" + m.forms[in.form] + "'", true);
    return;
  }
  rep.warp_instructions++;
  rep.thread_instructions += __builtin_popcount(mask);
  // guard
  if (in.guard >= 0) {
    uint32_t keep = 0;
    FOR_LANES {
      bool p = R(w, (uint32_t)in.guard, l) != 0;
      if (in.guard_neg) p = !p;
      if (p) keep |= 1u << l;
      else { w.pc[l] = pc + 1; if (w.st[l] == LS_COLL) w.st[l] = LS_RUN; }
    }
    mask = keep;
    if (!mask) { uni_next = pc + 1; return; }
  }
  if (w.inflight && in.op != OP_WGMMA_MMA && in.op != OP_WGMMA_WAIT && in.op != OP_WGMMA_COMMIT && in.op != OP_WGMMA_FENCE)
    check_locks(w, in, mask, pc);
  stamp_writes(w, in, pc);
  if (tc.ld_pending) tc_check_ld_regs(w, in, mask, pc);
  auto advance = [&]() { FOR_LANES { w.pc[l] = pc + 1; w.st[l] = LS_RUN; } uni_next = pc + 1; };
  // collectives: the threads named must all be here
  auto gather = [&](uint32_t need) -> bool {
    uint32_t live = 0;
    for (uint32_t l = 0; l < w.nlanes; ++l) if (w.st[l] != LS_EXITED) live |= 1u << l;
    need &= live;
    if ((mask & need) != need) {
      FOR_LANES w.st[l] = LS_COLL;
      return false;
    }
    return true;
  };
  auto all_live = [&]() { uint32_t live = 0; for (uint32_t l = 0; l < w.nlanes; ++l) if (w.st[l] != LS_EXITED) live |= 1u << l; return live; };
  // A wait that failed, then the same wait again, with only spin-neutral instructions (ALU,
  // moves, compares, branches, sleeps) between and no phase change: the thread is spinning.
  // Anything else in between (memory, barriers, arrivals) resets the record.
  if (!spin_neutral(in.op)) FOR_LANES w.spin_pc[l] = UINT32_MAX;
  const Opnd* o = in.o;
  Ty t = in.ty;
  // Source operands 1..4 as (pointer, stride) over the lanes: registers read in place,
  // immediates broadcast, anything else evaluated per lane once.
  const uint64_t* sp[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
  uint32_t ss[5] = {0, 0, 0, 0, 0};
  uint64_t tmp[5][32];
  for (int k = 1; k < in.nops && k < 5; ++k) {
    const Opnd& x = o[k];
    if (x.kind == K_REG && !x.neg) { sp[k] = &w.regs[(size_t)x.reg * 32]; ss[k] = 1; }
    else if (x.kind == K_IMM && !x.neg) { sp[k] = reinterpret_cast<const uint64_t*>(&x.imm); ss[k] = 0; }
    else if (x.kind == K_REG || x.kind == K_IMM || x.kind == K_SPECIAL || x.kind == K_SYM) {
      FOR_LANES tmp[k][l] = val(w, x, l);
      sp[k] = tmp[k];
      ss[k] = 1;
    }
  }
#define V(k, l) (sp[k][(l) * ss[k]])
  switch (in.op) {
    // ---------------------------------------------------------------- integer and float ALU
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_MIN: case OP_MAX: case OP_DIV: case OP_REM: case OP_AND:
    case OP_OR: case OP_XOR: case OP_MUL_HI: {
      if (in.op == OP_SUB && in.sub) {  // sub.cc.{u32,s32}: CF = the borrow out (tools/sim/isa/bits.h)
        FOR_LANES {
          const isa::Carry32 c = isa::sub_cc32((uint32_t)V(1, l), (uint32_t)V(2, l));
          R(w, o[0].reg, l) = c.d;
          w.cf[l] = c.cf;
        }
      } else if (t == T_F32) {
        bool ftz = in.mods & M_FTZ;
        FOR_LANES {
          float a = f32(V(1, l)), b = f32(V(2, l)), r;
          if (ftz) { a = isa::ftz_f32(a); b = isa::ftz_f32(b); }
          switch (in.op) {
            case OP_ADD: r = (in.mods & (M_RZ | M_RM | M_RP)) ? isa::add_f32(a, b, rnd(in), ftz) : a + b; break;
            case OP_SUB: r = (in.mods & (M_RZ | M_RM | M_RP)) ? isa::sub_f32(a, b, rnd(in), ftz) : a - b; break;
            case OP_MUL: r = (in.mods & (M_RZ | M_RM | M_RP)) ? isa::mul_f32(a, b, rnd(in), ftz) : a * b; break;
            case OP_MIN: r = isa::min_f32(a, b, false, ftz); break;
            case OP_MAX: r = isa::max_f32(a, b, false, ftz); break;
            case OP_DIV: r = (in.mods & M_APPROX) ? a * (1.0f / b) : a / b; break;
            default: r = 0;
          }
          if (ftz) r = isa::ftz_f32(r);
          if (in.mods & M_SAT) r = std::isnan(r) ? 0.0f : std::min(1.0f, std::max(0.0f, r));
          R(w, o[0].reg, l) = bits(r);
        }
      } else if (t == T_PRED) {
        FOR_LANES {
          uint64_t a = V(1, l) != 0, b = V(2, l) != 0;
          R(w, o[0].reg, l) = in.op == OP_AND ? (a & b) : in.op == OP_OR ? (a | b) : (a ^ b);
        }
      } else {
        bool sg = ty_signed(t);
        int nb = ty_bytes(t) * 8;
        FOR_LANES {
          uint64_t a = V(1, l), b = V(2, l), r = 0;
          int64_t sa = sext(a, t), sb = sext(b, t);
          switch (in.op) {
            case OP_ADD: r = a + b; break;
            case OP_SUB: r = a - b; break;
            case OP_MUL: r = a * b; break;
            case OP_MIN: r = sg ? (uint64_t)std::min(sa, sb) : std::min(mask_ty(a, t), mask_ty(b, t)); break;
            case OP_MAX: r = sg ? (uint64_t)std::max(sa, sb) : std::max(mask_ty(a, t), mask_ty(b, t)); break;
            case OP_DIV:
              if (mask_ty(b, t) == 0) r = ~0ull;
              else r = sg ? (uint64_t)(sb == -1 ? -sa : sa / sb) : mask_ty(a, t) / mask_ty(b, t);
              break;
            case OP_REM:  // by zero: all ones, as div (rem.s32 on the H200: tools/sim/READINGS.md #19)
              if (mask_ty(b, t) == 0) r = ~0ull;
              else r = sg ? (uint64_t)(sb == -1 ? 0 : sa % sb) : mask_ty(a, t) % mask_ty(b, t);
              break;
            case OP_AND: r = a & b; break;
            case OP_OR: r = a | b; break;
            case OP_XOR: r = a ^ b; break;
            case OP_MUL_HI:
              if (nb == 64) r = sg ? (uint64_t)isa::mul_hi_s64(sa, sb) : isa::mul_hi_u64(a, b);
              else r = sg ? (uint64_t)((sa * sb) >> nb) : ((mask_ty(a, t) * mask_ty(b, t)) >> nb);
              break;
            default: break;
          }
          R(w, o[0].reg, l) = mask_ty(r, t);
        }
      }
      advance();
      break;
    }
    case OP_SUBC: {  // subc{.cc}.{u32,s32}: d = a - (b + CF)
      FOR_LANES {
        const isa::Carry32 c = isa::subc32((uint32_t)V(1, l), (uint32_t)V(2, l), w.cf[l] != 0);
        R(w, o[0].reg, l) = c.d;
        if (in.sub) w.cf[l] = c.cf;
      }
      advance();
      break;
    }
    case OP_SZEXT: {
      FOR_LANES R(w, o[0].reg, l) = isa::szext((uint32_t)V(1, l), (uint32_t)V(2, l), in.sub != 0, t == T_S32);
      advance();
      break;
    }
    case OP_BMSK: {
      FOR_LANES R(w, o[0].reg, l) = isa::bmsk((uint32_t)V(1, l), (uint32_t)V(2, l), in.sub != 0);
      advance();
      break;
    }
    case OP_LG2: {  // lg2.approx{.ftz}.f32
      isa::ApproxConfig ac;
      ac.mode = cfg.perturb_approx ? isa::ApproxMode::perturbed : isa::ApproxMode::exact;
      ac.seed = cfg.seed;
      FOR_LANES R(w, o[0].reg, l) = bits(isa::lg2_approx_f32(f32(V(1, l)), in.mods & M_FTZ, ac));
      advance();
      break;
    }
    case OP_MUL_WIDE: {
      bool sg = ty_signed(t);
      Ty wide = ty_bytes(t) == 2 ? T_U32 : T_U64;
      FOR_LANES {
        uint64_t a = V(1, l), b = V(2, l);
        uint64_t r = sg ? (uint64_t)(sext(a, t) * sext(b, t)) : mask_ty(a, t) * mask_ty(b, t);
        R(w, o[0].reg, l) = mask_ty(r, wide);
      }
      advance();
      break;
    }
    case OP_MAD_LO: {
      FOR_LANES R(w, o[0].reg, l) = mask_ty(V(1, l) * V(2, l) + V(3, l), t);
      advance();
      break;
    }
    case OP_FMA: {
      if (t == T_BF16) {  // fma.rn{.relu}.bf16: one rounding of the exact a * b + c
        FOR_LANES R(w, o[0].reg, l) = isa::fma_bf16((uint16_t)V(1, l), (uint16_t)V(2, l), (uint16_t)V(3, l), in.sub & 1);
        advance();
        break;
      }
      bool ftz = in.mods & M_FTZ;
      FOR_LANES {
        float a = f32(V(1, l)), b = f32(V(2, l)), c = f32(V(3, l));
        float r = (ftz || (in.mods & (M_RZ | M_RM | M_RP | M_SAT))) ? isa::fma_f32(a, b, c, rnd(in), ftz, in.mods & M_SAT) : fma_rn(a, b, c);
        R(w, o[0].reg, l) = bits(r);
      }
      advance();
      break;
    }
    case OP_ABS: case OP_NEG: case OP_NOT: {
      FOR_LANES {
        uint64_t a = V(1, l), r;
        if (t == T_F32) {
          uint32_t u = (uint32_t)a;
          r = in.op == OP_ABS ? (u & 0x7FFFFFFFu) : (u ^ 0x80000000u);
          if (in.mods & M_FTZ) r = bits(isa::ftz_f32(f32(r)));
        } else if (t == T_PRED) r = a ? 0 : 1;
        else if (in.op == OP_NOT) r = mask_ty(~a, t);
        else if (in.op == OP_NEG) r = mask_ty((uint64_t)(-sext(a, t)), t);
        else { int64_t s = sext(a, t); r = mask_ty((uint64_t)(s < 0 ? -s : s), t); }
        R(w, o[0].reg, l) = r;
      }
      advance();
      break;
    }
    case OP_EX2: case OP_RCP: {
      isa::ApproxConfig ac;
      ac.mode = cfg.perturb_approx ? isa::ApproxMode::perturbed : isa::ApproxMode::exact;
      ac.seed = cfg.seed;
      bool ftz = in.mods & M_FTZ;
      FOR_LANES {
        float a = f32(V(1, l)), r;
        if (in.op == OP_EX2) r = isa::ex2_approx_f32(a, ftz, ac);
        else if (in.mods & M_APPROX) r = isa::rcp_approx_f32(a, ftz, ac);
        else r = isa::rcp_rn_f32(a, rnd(in), ftz);
        R(w, o[0].reg, l) = bits(r);
      }
      advance();
      break;
    }
    case OP_TANH: {  // tanh.approx.f32 (PTX ISA "tanh"): max relative error 2^-11, no .ftz form
      isa::ApproxConfig ac;
      ac.mode = cfg.perturb_approx ? isa::ApproxMode::perturbed : isa::ApproxMode::exact;
      ac.seed = cfg.seed;
      FOR_LANES { R(w, o[0].reg, l) = bits(isa::tanh_approx_f32(f32(V(1, l)), ac)); }
      advance();
      break;
    }
    case OP_SHL: case OP_SHR: {
      int nb = ty_bytes(t) * 8;
      FOR_LANES {
        uint64_t a = V(1, l);
        uint32_t n = (uint32_t)V(2, l);
        uint64_t r;
        if (in.op == OP_SHL) r = n >= (uint32_t)nb ? 0 : a << n;
        else if (ty_signed(t)) { int64_t s = sext(a, t); r = (uint64_t)(n >= (uint32_t)nb ? (s < 0 ? -1 : 0) : s >> n); }
        else r = n >= (uint32_t)nb ? 0 : mask_ty(a, t) >> n;
        R(w, o[0].reg, l) = mask_ty(r, t);
      }
      advance();
      break;
    }
    case OP_BFI: {
      int nb = ty_bytes(t) * 8;
      FOR_LANES R(w, o[0].reg, l) = mask_ty(isa::bfi(V(1, l), V(2, l), (uint32_t)V(3, l), (uint32_t)V(4, l), nb), t);
      advance();
      break;
    }
    case OP_PRMT: {
      FOR_LANES R(w, o[0].reg, l) = isa::prmt((uint32_t)V(1, l), (uint32_t)V(2, l), (uint32_t)V(3, l), (isa::PrmtMode)in.sub);
      advance();
      break;
    }
    case OP_MOV: {
      if (o[0].kind == K_VEC) {  // unpack
        uint32_t eb = ty_bytes(t) * 8 / o[0].n;
        FOR_LANES {
          uint64_t v = V(1, l);
          for (uint32_t e = 0; e < o[0].n; ++e) {
            const VecElem& ve = m.vecs[o[0].reg + e];
            if (ve.kind == K_REG) R(w, ve.reg, l) = (v >> (eb * e)) & (eb == 64 ? ~0ull : ((1ull << eb) - 1));
          }
        }
      } else if (o[1].kind == K_VEC) {  // pack
        uint32_t eb = ty_bytes(t) * 8 / o[1].n;
        FOR_LANES {
          uint64_t v = 0;
          for (uint32_t e = 0; e < o[1].n; ++e) {
            const VecElem& ve = m.vecs[o[1].reg + e];
            uint64_t x = ve.kind == K_REG ? R(w, ve.reg, l) : (uint64_t)ve.imm;
            v |= (x & (eb == 64 ? ~0ull : ((1ull << eb) - 1))) << (eb * e);
          }
          R(w, o[0].reg, l) = v;
        }
      } else {
        FOR_LANES R(w, o[0].reg, l) = t == T_PRED ? (V(1, l) != 0) : mask_ty(V(1, l), t);
      }
      advance();
      break;
    }
    case OP_SELP: {
      FOR_LANES R(w, o[0].reg, l) = mask_ty(V(3, l) ? V(1, l) : V(2, l), t);
      advance();
      break;
    }
    case OP_SETP: {
      Cmp c = (Cmp)in.sub;
      FOR_LANES {
        uint64_t a = V(1, l), b = V(2, l);
        bool r;
        if (t == T_F32 || t == T_F64) {
          double x = t == T_F32 ? (double)f32(a) : f64(a), y = t == T_F32 ? (double)f32(b) : f64(b);
          bool un = std::isnan(x) || std::isnan(y);
          switch (c) {
            case C_EQ: r = !un && x == y; break;
            case C_NE: r = !un && x != y; break;
            case C_LT: r = !un && x < y; break;
            case C_LE: r = !un && x <= y; break;
            case C_GT: r = !un && x > y; break;
            case C_GE: r = !un && x >= y; break;
            case C_EQU: r = un || x == y; break;
            case C_NEU: r = un || x != y; break;
            case C_LTU: r = un || x < y; break;
            case C_LEU: r = un || x <= y; break;
            case C_GTU: r = un || x > y; break;
            case C_GEU: r = un || x >= y; break;
            case C_NUM: r = !un; break;
            case C_NAN: r = un; break;
            default: r = false;
          }
        } else {
          bool sg = ty_signed(t);
          int64_t sa = sext(a, t), sb = sext(b, t);
          uint64_t ua = mask_ty(a, t), ub = mask_ty(b, t);
          switch (c) {
            case C_EQ: r = ua == ub; break;
            case C_NE: r = ua != ub; break;
            case C_LT: r = sg ? sa < sb : ua < ub; break;
            case C_LE: r = sg ? sa <= sb : ua <= ub; break;
            case C_GT: r = sg ? sa > sb : ua > ub; break;
            case C_GE: r = sg ? sa >= sb : ua >= ub; break;
            case C_LO: r = ua < ub; break;
            case C_LS: r = ua <= ub; break;
            case C_HI: r = ua > ub; break;
            case C_HS: r = ua >= ub; break;
            default: r = false;
          }
        }
        bool r2 = !r;
        if (in.sub2) {
          bool cc = V(3, l) != 0;
          if (in.sub2 == 1) { r = r && cc; r2 = r2 && cc; }
          else if (in.sub2 == 2) { r = r || cc; r2 = r2 || cc; }
          else { r = r != cc; r2 = r2 != cc; }
        }
        if (o[0].kind == K_PAIR) {
          if (o[0].reg != kNoReg) R(w, o[0].reg, l) = r;
          if (o[0].reg2 != kNoReg) R(w, o[0].reg2, l) = r2;
        } else R(w, o[0].reg, l) = r;
      }
      advance();
      break;
    }
    case OP_CVT: {
      Ty d = in.ty, s = in.ty2;
      FOR_LANES {
        uint64_t a = V(1, l), r = 0;
        if (d == T_TF32) {
          const isa::Tf32Rnd tr = (in.sub & 2) ? isa::Tf32Rnd::rna : (in.mods & M_RZ) ? isa::Tf32Rnd::rz : isa::Tf32Rnd::rn;
          r = isa::cvt_tf32_f32(f32(a), tr, in.mods & M_SATFINITE, in.sub & 1);
        } else if (d == T_BF16X2 || d == T_F16X2) {
          float x = f32(a), y = f32(V(2, l));
          const bool relu = in.sub & 1;
          r = d == T_BF16X2 ? isa::cvt_rn_bf16x2_f32(x, y, relu, in.mods & M_SATFINITE) : isa::cvt_rn_f16x2_f32(x, y, relu, in.mods & M_SATFINITE);
        } else if (d == T_E4M3X2 || d == T_E5M2X2) {
          float x = f32(a), y = f32(V(2, l));
          r = d == T_E4M3X2 ? isa::cvt_rn_satfinite_e4m3x2_f32(x, y) : isa::cvt_rn_satfinite_e5m2x2_f32(x, y);
        } else if (d == T_F32 && s == T_F16) r = bits(isa::f16_to_f32((uint16_t)a));
        else if (d == T_F32 && s == T_BF16) r = bits(isa::bf16_to_f32((uint16_t)a));
        else if (d == T_F16 && s == T_F32) r = isa::f32_to_f16(f32(a), rnd(in), in.mods & M_SATFINITE);
        else if (d == T_BF16 && s == T_F32) r = isa::f32_to_bf16(f32(a), rnd(in), in.mods & M_SATFINITE);
        else if (d == T_F32 && s == T_F32) r = bits(isa::cvt_f32_round_integral(f32(a), irnd(in), in.mods & M_FTZ));
        else if (d == T_F32) r = bits(ty_signed(s) ? isa::cvt_f32_from_s64(sext(a, s), rnd(in)) : isa::cvt_f32_from_u64(mask_ty(a, s), rnd(in)));
        else if (s == T_F32) r = mask_ty((uint64_t)isa::cvt_int_from_float(f32(a), irnd(in), ty_bytes(d) * 8, ty_signed(d)), d);
        else {
          // integer to integer: sign- or zero-extend the source, then truncate
          uint64_t v = ty_signed(s) ? (uint64_t)sext(a, s) : mask_ty(a, s);
          if (in.mods & M_SAT) {
            int nb = ty_bytes(d) * 8;
            if (ty_signed(d)) {
              int64_t lo = nb == 64 ? INT64_MIN : -(1ll << (nb - 1)), hi = nb == 64 ? INT64_MAX : (1ll << (nb - 1)) - 1;
              int64_t x = ty_signed(s) ? (int64_t)v : (int64_t)std::min<uint64_t>(v, (uint64_t)INT64_MAX);
              v = (uint64_t)std::min(hi, std::max(lo, x));
            } else {
              uint64_t hi = nb == 64 ? ~0ull : (1ull << nb) - 1;
              if (ty_signed(s) && (int64_t)v < 0) v = 0; else v = std::min(v, hi);
            }
          }
          r = mask_ty(v, d);
        }
        R(w, o[0].reg, l) = r;
      }
      advance();
      break;
    }
    case OP_CVTA: case OP_CVTA_TO: {
      uint64_t win = in.space == SP_SHARED ? kGenericShared : in.space == SP_PARAM ? kGenericParam : in.space == SP_LOCAL ? kGenericLocal : 0;
      FOR_LANES {
        uint64_t a = V(1, l);
        uint64_t r = in.op == OP_CVTA ? a + win : a - win;
        R(w, o[0].reg, l) = mask_ty(r, t);
      }
      advance();
      break;
    }
    case OP_MAPA: {
      FOR_LANES {
        uint64_t a = V(1, l);
        uint32_t rk = (uint32_t)V(2, l);
        if (rk >= cl_size) finding(Finding::kIllegal, &w, l, pc, "", "mapa to rank " + std::to_string(rk) + " outside the cluster of " + std::to_string(cl_size));
        R(w, o[0].reg, l) = ((uint64_t)(rk + 1) << 24) | (a & 0xFFFFFF);
      }
      advance();
      break;
    }
    // ---------------------------------------------------------------- memory
    case OP_LD: case OP_ST: {
      bool st = in.op == OP_ST;
      const Opnd& ad = st ? o[0] : o[1];
      const Opnd& v = st ? o[1] : o[0];
      uint32_t eb = ty_bytes(t);
      uint32_t n = in.sub2 ? in.sub2 : 1;
      FOR_LANES {
        uint8_t buf[64];
        if (in.space == SP_PARAM && (ad.sk == SK_LPARAM)) {
          uint8_t* base = &w.lparam[(size_t)l * m.lparam_bytes];
          uint64_t a = (uint64_t)ad.imm;
          if (a + eb * n > m.lparam_bytes) { finding(Finding::kOutOfBounds, &w, l, pc, "", "local param access out of range"); continue; }
          if (st) {
            for (uint32_t e = 0; e < n; ++e) {
              uint64_t x = v.kind == K_VEC ? (m.vecs[v.reg + e].kind == K_REG ? R(w, m.vecs[v.reg + e].reg, l) : (uint64_t)m.vecs[v.reg + e].imm) : val(w, v, l);
              memcpy(base + a + e * eb, &x, eb);
            }
          } else {
            for (uint32_t e = 0; e < n; ++e) {
              uint64_t x = 0;
              memcpy(&x, base + a + e * eb, eb);
              uint32_t r = v.kind == K_VEC ? m.vecs[v.reg + e].reg : v.reg;
              if (v.kind != K_VEC || m.vecs[v.reg + e].kind == K_REG) R(w, r, l) = ty_signed(t) ? mask_ty((uint64_t)sext(x, t), eb < 4 ? T_U32 : t) : x;
            }
          }
          continue;
        }
        uint64_t a = addr_of(w, ad, l);
        if (st) {
          for (uint32_t e = 0; e < n; ++e) {
            uint64_t x;
            if (v.kind == K_VEC) { const VecElem& ve = m.vecs[v.reg + e]; x = ve.kind == K_REG ? R(w, ve.reg, l) : (uint64_t)ve.imm; }
            else x = val(w, v, l);
            memcpy(buf + e * eb, &x, eb);
          }
          mem_access(w, l, in, in.space, a, buf, eb * n, true);
        } else {
          mem_access(w, l, in, in.space, a, buf, eb * n, false);
          for (uint32_t e = 0; e < n; ++e) {
            uint64_t x = 0;
            memcpy(&x, buf + e * eb, eb);
            if (ty_signed(t) && eb < 4) x = mask_ty((uint64_t)sext(x, t), T_U32);
            if (v.kind == K_VEC) { const VecElem& ve = m.vecs[v.reg + e]; if (ve.kind == K_REG) R(w, ve.reg, l) = x; }
            else R(w, v.reg, l) = x;
          }
        }
        if (fatal) return;
      }
      advance();
      break;
    }
    case OP_ATOM: case OP_RED: {
      const Opnd& ad = in.op == OP_ATOM ? o[1] : o[0];
      int vi = in.op == OP_ATOM ? 2 : 1;
      uint32_t eb = ty_bytes(t);
      FOR_LANES {
        uint64_t a = addr_of(w, ad, l), old = 0;
        if (!mem_access(w, l, in, in.space, a, &old, eb, false)) continue;
        uint64_t b = val(w, o[vi], l), r = old;
        AtomOp op = (AtomOp)in.sub;
        if (t == T_F32) r = bits(f32(old) + f32(b));
        else {
          bool sg = ty_signed(t);
          switch (op) {
            case A_ADD: r = old + b; break;
            case A_MIN: r = sg ? (uint64_t)std::min(sext(old, t), sext(b, t)) : std::min(mask_ty(old, t), mask_ty(b, t)); break;
            case A_MAX: r = sg ? (uint64_t)std::max(sext(old, t), sext(b, t)) : std::max(mask_ty(old, t), mask_ty(b, t)); break;
            case A_EXCH: r = b; break;
            case A_CAS: r = mask_ty(old, t) == mask_ty(b, t) ? val(w, o[vi + 1], l) : old; break;
            case A_AND: r = old & b; break;
            case A_OR: r = old | b; break;
            case A_XOR: r = old ^ b; break;
            case A_INC: r = mask_ty(old, t) >= mask_ty(b, t) ? 0 : old + 1; break;
            case A_DEC: r = (mask_ty(old, t) == 0 || mask_ty(old, t) > mask_ty(b, t)) ? b : old - 1; break;
          }
        }
        r = mask_ty(r, t);
        mem_access(w, l, in, in.space, a, &r, eb, true);
        if (in.op == OP_ATOM) R(w, o[0].reg, l) = mask_ty(old, t);
      }
      advance();
      break;
    }
    // ---------------------------------------------------------------- control
    case OP_BRA: {
      FOR_LANES { w.pc[l] = (uint32_t)o[0].imm; w.st[l] = LS_RUN; }
      if (mask == mask_in) uni_next = (uint32_t)o[0].imm;
      break;
    }
    case OP_CALL: {
      const Func& f = m.funcs[o[0].reg];
      if (f.name == "vprintf" || !f.defined) {
        // vprintf: accepted, nothing printed; the return value is 0
        FOR_LANES {
          if (o[2].n) { uint32_t z = 0; memcpy(&w.lparam[(size_t)l * m.lparam_bytes + m.vecs[o[2].reg].imm], &z, 4); }
        }
        advance();
        break;
      }
      FOR_LANES {
        uint8_t* base = &w.lparam[(size_t)l * m.lparam_bytes];
        for (uint32_t k = 0; k < o[1].n && k < f.params.size(); ++k)
          memmove(base + f.param_lofs[k], base + m.vecs[o[1].reg + k].imm, f.params[k].size);
        if (w.callstack[l].size() > 64) { finding(Finding::kIllegal, &w, l, pc, "", "call depth over 64 (recursion?)", true); return; }
        w.callstack[l].push_back(pc);
        w.pc[l] = f.begin;
      }
      break;
    }
    case OP_RET: case OP_EXIT: {
      FOR_LANES {
        if (in.op == OP_RET && !w.callstack[l].empty()) {
          uint32_t cpc = w.callstack[l].back();
          w.callstack[l].pop_back();
          const Inst& ci = m.code[cpc];
          const Func& f = m.funcs[ci.o[0].reg];
          uint8_t* base = &w.lparam[(size_t)l * m.lparam_bytes];
          for (uint32_t k = 0; k < ci.o[2].n && k < f.rets.size(); ++k)
            memmove(base + m.vecs[ci.o[2].reg + k].imm, base + f.ret_lofs[k], f.rets[k].size);
          w.pc[l] = cpc + 1;
          w.st[l] = LS_RUN;
        } else {
          w.st[l] = LS_EXITED;
          cta.exited++;
        }
      }
      // a barrier without a count waits for the threads that have not exited
      for (auto& b : cta.bars)
        if (b.arrived && b.all && b.arrived >= cta.threads - cta.exited) { b.gen++; b.arrived = 0; }
      break;
    }
    case OP_TRAP: case OP_BRKPT:
      finding(Finding::kTrap, &w, __builtin_ctz(mask), pc, "", in.op == OP_TRAP ? "trap executed" : "brkpt executed", true);
      return;
    case OP_NANOSLEEP: case OP_FENCE: case OP_FENCE_MBAR_INIT: case OP_FENCE_PROXY_TMAP:
      advance();
      break;
    case OP_FENCE_PROXY_ASYNC:
      FOR_LANES w.proxy_fence[l]++;
      advance();
      break;
    // ---------------------------------------------------------------- warp collectives
    case OP_SHFL: {
      uint32_t member = (uint32_t)val(w, o[4], __builtin_ctz(mask));
      if (!gather(member)) return;
      uint32_t a[32], r[32];
      bool p[32];
      FOR_LANES a[l] = (uint32_t)V(1, l);
      FOR_LANES {
        auto s = isa::shfl_source((isa::ShflMode)in.sub, l, (uint32_t)V(2, l), (uint32_t)V(3, l));
        r[l] = (mask >> s.lane) & 1 ? a[s.lane] : 0;
        p[l] = s.pred;
      }
      FOR_LANES {
        if (o[0].kind == K_PAIR) { if (o[0].reg != kNoReg) R(w, o[0].reg, l) = r[l]; if (o[0].reg2 != kNoReg) R(w, o[0].reg2, l) = p[l]; }
        else R(w, o[0].reg, l) = r[l];
      }
      advance();
      break;
    }
    case OP_VOTE: {
      uint32_t member = (uint32_t)val(w, o[2], __builtin_ctz(mask));
      if (!gather(member)) return;
      uint32_t preds = 0;
      FOR_LANES if (V(1, l)) preds |= 1u << l;
      FOR_LANES {
        uint64_t r;
        switch (in.sub) {
          case V_ALL: r = (preds & mask) == mask; break;
          case V_ANY: r = (preds & mask) != 0; break;
          case V_UNI: r = (preds & mask) == 0 || (preds & mask) == mask; break;
          default: r = preds & mask; break;
        }
        R(w, o[0].reg, l) = r;
      }
      advance();
      break;
    }
    case OP_BAR_WARP: {
      uint32_t member = (uint32_t)val(w, o[0], __builtin_ctz(mask));
      if (!gather(member)) return;
      advance();
      break;
    }
    case OP_ELECT: {
      uint32_t member = (uint32_t)val(w, o[1], __builtin_ctz(mask));
      if (!gather(member)) return;
      // ISA reading: the leader is the lowest-numbered active lane of membermask
      uint32_t act = mask & member;
      int leader = act ? __builtin_ctz(act) : -1;
      FOR_LANES {
        if (o[0].kind == K_PAIR) {
          if (o[0].reg != kNoReg) R(w, o[0].reg, l) = (uint32_t)leader;
          if (o[0].reg2 != kNoReg) R(w, o[0].reg2, l) = l == leader;
        }
      }
      advance();
      break;
    }
    // ---------------------------------------------------------------- CTA and cluster barriers
    case OP_BAR_SYNC: case OP_BAR_ARRIVE: {
      if ((in.mods & M_ALIGNED) && !gather(all_live())) return;
      int l0 = __builtin_ctz(mask);
      uint32_t id = (uint32_t)val(w, o[0], l0);
      uint32_t cnt = in.nops > 1 ? (uint32_t)val(w, o[1], l0) : 0;
      if (id >= 16) { finding(Finding::kIllegal, &w, l0, pc, "", "barrier id " + std::to_string(id) + " out of range 0..15", true); return; }
      if (in.nops > 1 && (cnt == 0 || cnt % 32 != 0)) {
        finding(Finding::kIllegal, &w, l0, pc, "named barrier " + std::to_string(id), "thread count " + std::to_string(cnt) + " is not a non-zero multiple of the warp size", true);
        return;
      }
      NamedBar& b = cta.bars[id];
      // ISA reading (READINGS.md #7): counts are in threads; each executing thread adds one
      // without a count: every thread of the CTA that has not exited (exited threads count as arrived)
      uint32_t expected = cnt ? cnt : cta.threads - cta.exited;
      if (b.arrived == 0) { b.expected = expected; b.first_pc = pc; b.all = cnt == 0; }
      else if (b.all && cnt == 0) b.expected = expected;  // exits since the first arrival
      else if (b.expected != expected)
        finding(Finding::kProtocol, &w, l0, pc, "named barrier " + std::to_string(id), "thread count " + std::to_string(expected) + " differs from the count " + std::to_string(b.expected) + " given by " + m.location(b.first_pc) + " in the same phase");
      b.arrived += __builtin_popcount(mask);
      bool complete = b.arrived >= b.expected;
      if (b.arrived > b.expected)
        finding(Finding::kProtocol, &w, l0, pc, "named barrier " + std::to_string(id), "more threads arrived (" + std::to_string(b.arrived) + ") than the barrier's count " + std::to_string(b.expected));
      if (in.op == OP_BAR_SYNC) {
        FOR_LANES { w.st[l] = LS_BAR; w.wait_addr[l] = id; w.wait_gen[l] = b.gen; }
      } else advance();
      if (complete) { b.gen++; b.arrived = 0; }
      if (cfg.trace && complete) cfg.trace->event({step, TraceEvent::kBarrier, cta.linear, w.id, "bar " + std::to_string(id)});
      break;
    }
    case OP_CLUSTER_ARRIVE: case OP_CLUSTER_WAIT: {
      if ((in.mods & M_ALIGNED) && !gather(all_live())) return;
      Cta& c0 = ctas[cta.first_slot];
      if (in.op == OP_CLUSTER_ARRIVE) {
        c0.cluster_arrived += __builtin_popcount(mask);
        FOR_LANES w.wait_gen[l] = c0.cluster_gen;  // the phase this thread arrived on
        uint32_t total = 0;
        for (uint32_t r = 0; r < cl_size; ++r) total += ctas[cta.first_slot + r].threads - ctas[cta.first_slot + r].exited;
        if (c0.cluster_arrived >= total) { c0.cluster_gen++; c0.cluster_arrived = 0; }
        advance();
      } else {
        FOR_LANES {
          if (c0.cluster_gen != w.wait_gen[l]) { w.pc[l] = pc + 1; w.st[l] = LS_RUN; w.narrow_slot[l] = 0; if (tc.on) tc_note_sync(w, int(l)); }
          else w.st[l] = LS_CLUSTER;
        }
      }
      break;
    }
    case OP_SETMAXNREG: {
      if (!gather(all_live())) return;
      int l0 = __builtin_ctz(mask);
      uint32_t want = (uint32_t)val(w, o[0], l0);
      if (want < 24 || want > 256 || want % 8) {
        finding(Finding::kIllegal, &w, l0, pc, "", "setmaxnreg count " + std::to_string(want) + " is not in 24..256 and a multiple of 8", true);
        return;
      }
      bool inc = in.mods & M_INC;
      if ((inc && want < w.nreg) || (!inc && want > w.nreg)) {
        finding(Finding::kIllegal, &w, l0, pc, "", std::string("setmaxnreg.") + (inc ? "inc" : "dec") + " to " + std::to_string(want) + " from the warp's current " + std::to_string(w.nreg), true);
        return;
      }
      // warpgroup uniformity: every warp of the warpgroup must request the same count
      uint32_t wg = w.id / 4;
      for (uint32_t k = wg * 4; k < std::min(nwarps, wg * 4 + 4); ++k) {
        Warp& o2 = cta.warps[k];
        bool at_same = false;
        for (uint32_t l = 0; l < o2.nlanes; ++l) if (o2.st[l] != LS_EXITED && o2.pc[l] == pc) at_same = true;
        if (k != w.id && !at_same) {
          // another warp of the group runs elsewhere: check it isn't at a different setmaxnreg
          for (uint32_t l = 0; l < o2.nlanes; ++l)
            if (o2.st[l] != LS_EXITED && m.code[o2.pc[l]].op == OP_SETMAXNREG && o2.pc[l] != pc) {
              uint32_t other = (uint32_t)m.code[o2.pc[l]].o[0].imm;
              if (other != want) {
                finding(Finding::kProtocol, &w, l0, pc, "", "setmaxnreg is not warpgroup-uniform: warp " + std::to_string(k) + " requests " + std::to_string(other) + " at " + m.location(o2.pc[l]), true);
                return;
              }
            }
        }
      }
      // ISA reading (READINGS.md #9): the pool is accounted per warp, 32 threads x count
      int64_t delta = ((int64_t)want - (int64_t)w.nreg) * 32;
      if (inc && delta > cta.pool_free) {
        // the ISA: .inc blocks until enough registers are released; never more than the pool
        int64_t could = cta.pool_free;
        for (auto& o2 : cta.warps) if (&o2 != &w) {
          for (uint32_t l = 0; l < o2.nlanes; ++l)
            if (o2.st[l] != LS_EXITED && m.code[o2.pc[l]].op == OP_SETMAXNREG && (m.code[o2.pc[l]].mods & M_DEC)) { could += ((int64_t)o2.nreg - (int64_t)m.code[o2.pc[l]].o[0].imm) * 32; break; }
        }
        bool others_pending = false;
        for (auto& o2 : cta.warps) if (&o2 != &w && !o2.done) for (uint32_t l = 0; l < o2.nlanes; ++l) if (o2.st[l] != LS_EXITED && o2.nreg > 24) others_pending = true;
        (void)could;
        if (!others_pending) {
          finding(Finding::kProtocol, &w, l0, pc, "", nreg_split_text(cta, want) + "; nothing left to release them", true);
          return;
        }
        FOR_LANES { w.st[l] = LS_NREG; w.wait_gen[l] = (uint64_t)cta.pool_free; }
        return;
      }
      cta.pool_free -= delta;
      w.nreg = want;
      advance();
      break;
    }
    // ---------------------------------------------------------------- mbarrier
    case OP_MBAR_INIT: {
      FOR_LANES {
        uint64_t a = addr_of(w, o[0], l);
        uint32_t cnt = (uint32_t)V(1, l);
        uint32_t c, off;
        if (!shared_loc(w, a, false, 8, &c, &off, pc, l)) continue;
        if (off & 7) { finding(Finding::kIllegal, &w, l, pc, "", "mbarrier.init at an address not 8-byte aligned"); continue; }
        if (cnt == 0 || cnt > (1u << 20) - 1) { finding(Finding::kIllegal, &w, l, pc, "", "mbarrier.init count " + std::to_string(cnt) + " outside 1..2^20-1"); continue; }
        Cta& cc = ctas[c];
        for (int i = 0; i < 8; ++i) if (cc.poison[off + i] && cc.poison[off + i] != 0xFFFF) { poison_report(w, l, pc, c, off + i, true); break; }
        Mbar& b = cc.mbars[off];
        if (b.live) finding(Finding::kProtocol, &w, l, pc, mbar_name(c, off), "mbarrier.init on a live mbarrier (no mbarrier.inval before)");
        b = Mbar{};
        b.live = true;
        b.count = cnt;
        b.pending = cnt;
        b.init_pc = pc;
        for (int i = 0; i < 8; ++i) cc.poison[off + i] = 0xFFFF;
      }
      advance();
      break;
    }
    case OP_MBAR_INVAL: {
      FOR_LANES {
        uint32_t c, off;
        Mbar* b = mbar_at(w, l, pc, addr_of(w, o[0], l), false, &c, &off);
        if (!b) continue;
        b->live = false;
        for (int i = 0; i < 8; ++i) ctas[c].poison[off + i] = 0;
      }
      advance();
      break;
    }
    case OP_MBAR_ARRIVE: case OP_MBAR_ARRIVE_TX: case OP_MBAR_EXPECT_TX: {
      bool cl = in.space == SP_SHARED_CLUSTER;
      FOR_LANES {
        const Opnd& ad = in.op == OP_MBAR_EXPECT_TX ? o[0] : o[1];
        uint32_t c, off;
        Mbar* b = mbar_at(w, l, pc, addr_of(w, ad, l), cl, &c, &off);
        if (!b) continue;
        if (in.op == OP_MBAR_EXPECT_TX) { b->tx += (int64_t)V(1, l); continue; }
        uint32_t cnt = 1;
        if (in.op == OP_MBAR_ARRIVE_TX) b->tx += (int64_t)V(2, l);
        else if (in.nops > 2) cnt = (uint32_t)V(2, l);
        if (w.inflight) note_released_reads(w, *b, pc);
        if (c != w.cta && b->cur_remote.size() < 64)
          b->cur_remote.push_back({w.cta, pc, (in.mods & M_CLUSTER) && !(in.mods & M_RELAXED)});
        uint64_t state = ((uint64_t)b->phase << 63) | b->gen;
        mbar_arrive(&w, l, pc, *b, c, off, cnt);
        if (o[0].kind == K_REG) R(w, o[0].reg, l) = state;
      }
      advance();
      break;
    }
    case OP_MBAR_TRY_WAIT: case OP_MBAR_TEST_WAIT: {
      FOR_LANES {
        uint32_t c, off;
        Mbar* b = mbar_at(w, l, pc, addr_of(w, o[1], l), false, &c, &off);
        if (!b) { w.pc[l] = pc + 1; continue; }
        uint32_t parity = (uint32_t)V(2, l) & 1;
        // the phase of parity `parity` has completed when the current phase's parity differs
        // ISA reading (READINGS.md #4): the phase of parity P has completed iff the current phase's
        // parity differs from P
        bool ok = b->phase != parity;
        if (!ok && w.spin_pc[l] == pc && w.spin_gen[l] == b->gen) {
          // ISA reading (READINGS.md #2): the same wait failed before with no phase change since:
          // a spin loop, not progress; the thread is suspended until the phase changes
          w.st[l] = LS_MBAR;
          w.wait_mbar[l] = b;
          w.wait_gen[l] = b->gen;
          w.wait_addr[l] = off;
          if (cfg.trace && l == __builtin_ctz(mask)) cfg.trace->event({step, TraceEvent::kWaitBegin, cta.linear, w.id, mbar_name(c, off)});
          continue;
        }
        w.spin_pc[l] = ok ? UINT32_MAX : pc;
        w.spin_gen[l] = b->gen;
        if (ok) {
          w.acquired = b->done_reads;
          w.acquired_mbar = off;
          // the scope rule: does this wait synchronize with the arrives of other CTAs' threads?
          const bool wait_cluster = (in.mods & M_CLUSTER) && !(in.mods & M_RELAXED);
          for (const RemoteArrive& ra : b->done_remote) {
            if (ra.orders && wait_cluster) {
              if (w.narrow_slot[l] == ra.slot + 1) w.narrow_slot[l] = 0;
            } else {
              w.narrow_slot[l] = ra.slot + 1;
              w.narrow_wait_pc[l] = pc;
              w.narrow_arrive_pc[l] = ra.pc;
            }
          }
          if (tc.on) tc_note_sync(w, l);  // tcgen05.fence checks (exec_sm100.inc)
        }
        if (o[0].kind == K_REG) R(w, o[0].reg, l) = ok;
        w.pc[l] = pc + 1;
        w.st[l] = LS_RUN;
      }
      break;
    }
    // ---------------------------------------------------------------- bulk copies
    case OP_TMA_LOAD: case OP_BULK_LOAD: {
      w.is_producer = true;
      FOR_LANES {
        AsyncOp op{};
        op.kind = in.op == OP_TMA_LOAD ? AK_TMA_LOAD : AK_BULK_LOAD;
        op.cta = w.cta;
        op.thread = w.id * 32 + l;
        op.pc = pc;
        uint64_t dst = addr_of(w, o[0], l);
        uint64_t mb;
        uint16_t ctamask = 0;
        if (in.op == OP_TMA_LOAD) {
          uint64_t ta = addr_of(w, o[1], l);
          uint8_t map[16];
          if (!mem_access(w, l, in, SP_GENERIC, ta, map, 16, false)) continue;
          op.desc = maps.find(map);
          if (!op.desc) { finding(Finding::kIllegal, &w, l, pc, "", "tensor map operand at " + hex(ta) + " is not a registered tensor map", true); return; }
          if (o[1].n != in.k || o[1].n != (uint32_t)op.desc->rank) { finding(Finding::kIllegal, &w, l, pc, "", "coordinate count differs from the tensor map's rank", true); return; }
          for (uint32_t e = 0; e < o[1].n; ++e) { const VecElem& ve = m.vecs[o[1].reg + e]; op.coords[e] = (int32_t)(ve.kind == K_REG ? R(w, ve.reg, l) : (uint64_t)ve.imm); }
          op.bytes = op.desc->box_bytes();
          mb = addr_of(w, o[2], l);
          if (in.mods & M_MULTICAST) ctamask = (uint16_t)V(3, l);
        } else if (in.sub2 == 1) {
          // PTX ISA, cp.async.bulk: .shared::cluster.shared::cta copies from the executing CTA's
          // shared memory to a shared::cluster destination, completing on the mbarrier of the
          // destination CTA. The source bytes are read when the copy lands (the latest point): from
          // issue until then they are reader-locked (a generic store to them is a hazard), and the
          // generic writes before the copy need the writer's fence.proxy.async (async proxy).
          const uint64_t sa = addr_of(w, o[1], l);
          op.bytes = (uint32_t)V(2, l);
          mb = addr_of(w, o[3], l);
          if (op.bytes % 16 || sa % 16 || dst % 16) finding(Finding::kIllegal, &w, l, pc, "", "cp.async.bulk size and addresses must be multiples of 16");
          uint32_t sc, soff;
          if (!shared_loc(w, sa, false, op.bytes, &sc, &soff, pc, l)) continue;
          for (uint32_t i = 0; i < op.bytes; ++i)
            if (cta.poison[soff + i]) { poison_report(w, l, pc, sc, soff + i, false); break; }
          proxy_check(w, l, pc, sc, soff, op.bytes, "a shared-to-shared bulk copy");
          for (uint32_t i = 0; i < op.bytes; ++i) if (cta.readers[soff + i] < 255) cta.readers[soff + i]++;
          op.from_smem = true;
          op.smem = soff;
        } else {
          op.gaddr = addr_of(w, o[1], l);
          op.bytes = (uint32_t)V(2, l);
          mb = addr_of(w, o[3], l);
          if (op.bytes % 16 || op.gaddr % 16 || dst % 16) finding(Finding::kIllegal, &w, l, pc, "", "cp.async.bulk size and addresses must be multiples of 16");
          if (!global_ptr(&w, l, pc, op.gaddr, op.bytes, false)) continue;
        }
        uint32_t c, off, mc, moff;
        if (!shared_loc(w, dst, true, op.bytes, &c, &off, pc, l)) continue;
        if (!shared_loc(w, mb, true, 8, &mc, &moff, pc, l)) continue;
        op.mbar = moff;
        std::vector<uint32_t> targets;
        if (ctamask) { for (uint32_t r = 0; r < cl_size; ++r) if (ctamask >> r & 1) targets.push_back(cta.first_slot + r); }
        else targets.push_back(c);
        AsyncOp& stored = (async.push_back(op), async.back());
        for (auto& ao : async) op_by_id[ao.id] = &ao;  // vector may have moved
        stored.id = alloc_id(&stored);
        for (uint32_t slot : targets) {
          Cta& d = ctas[slot];
          auto it = d.mbars.find(moff);
          if (it == d.mbars.end() || !it->second.live) finding(Finding::kProtocol, &w, l, pc, mbar_name(slot, moff), "bulk copy completes on an object that is not a live mbarrier");
          for (uint32_t i = 0; i < op.bytes; ++i) {
            if (d.poison[off + i]) { if (d.poison[off + i] == 0xFFFF) finding(Finding::kProtocol, &w, l, pc, mbar_name(slot, off + i), "bulk copy destination overlaps a live mbarrier"); else finding(Finding::kHazard, &w, l, pc, mbar_name(slot, moff), "bulk copy destination overlaps bytes another in-flight copy is still writing (issued at " + (op_by_id[d.poison[off + i]] ? m.location(op_by_id[d.poison[off + i]]->pc) : std::string("?")) + ")"); break; }
            if (d.readers[off + i]) { finding(Finding::kHazard, &w, l, pc, mbar_name(slot, moff), "bulk copy overwrites shared bytes at offset " + hex(off + i) + " that an in-flight wgmma or bulk store is reading"); break; }
          }
          for (const ReleasedRead& r : w.acquired)
            if (r.cta == slot && off < r.hi && r.lo < off + op.bytes) {
              finding(Finding::kHazard, &w, l, pc, mbar_name(w.cta, w.acquired_mbar),
                      "bulk copy may overwrite shared bytes " + hex(std::max(off, r.lo)) + ".." + hex(std::min(off + op.bytes, r.hi)) +
                          " that the wgmma.mma_async at " + m.location(r.wgmma_pc).substr(0, m.location(r.wgmma_pc).find(": ")) +
                          " may still be reading: the release this thread waited for was made at " + m.location(r.arrive_pc) +
                          " before the releasing warp's wgmma.wait_group retired that wgmma (a stage released early)");
              break;
            }
          for (uint32_t i = 0; i < op.bytes; ++i) if (!d.poison[off + i]) d.poison[off + i] = (uint16_t)stored.id;
          stored.dst_ctas.push_back({slot, off});
        }
        stored.land_at = step + land_delay();
        if (cfg.trace) cfg.trace->event({step, TraceEvent::kTmaIssue, cta.linear, w.id, "copy " + std::to_string(stored.id) + ": " + m.location(pc)});
      }
      advance();
      break;
    }
    case OP_TMA_STORE: case OP_TMA_REDUCE: case OP_BULK_STORE: case OP_BULK_REDUCE: {
      FOR_LANES {
        AsyncOp op{};
        op.kind = in.op == OP_TMA_STORE ? AK_TMA_STORE : in.op == OP_TMA_REDUCE ? AK_TMA_REDUCE : in.op == OP_BULK_STORE ? AK_BULK_STORE : AK_BULK_REDUCE;
        op.cta = w.cta;
        op.thread = w.id * 32 + l;
        op.pc = pc;
        uint64_t src;
        if (in.op == OP_TMA_STORE || in.op == OP_TMA_REDUCE) {
          uint64_t ta = addr_of(w, o[0], l);
          uint8_t map[16];
          if (!mem_access(w, l, in, SP_GENERIC, ta, map, 16, false)) continue;
          op.desc = maps.find(map);
          if (!op.desc) { finding(Finding::kIllegal, &w, l, pc, "", "tensor map operand is not a registered tensor map", true); return; }
          for (uint32_t e = 0; e < o[0].n; ++e) { const VecElem& ve = m.vecs[o[0].reg + e]; op.coords[e] = (int32_t)(ve.kind == K_REG ? R(w, ve.reg, l) : (uint64_t)ve.imm); }
          op.bytes = op.desc->box_bytes();
          src = addr_of(w, o[1], l);
        } else {
          op.gaddr = addr_of(w, o[0], l);
          src = addr_of(w, o[1], l);
          op.bytes = (uint32_t)V(2, l);
          if (!global_ptr(&w, l, pc, op.gaddr, op.bytes, true)) continue;
        }
        uint32_t c, off;
        if (!shared_loc(w, src, false, op.bytes, &c, &off, pc, l)) continue;
        op.smem = off;
        for (uint32_t i = 0; i < op.bytes; ++i)
          if (cta.poison[off + i]) { poison_report(w, l, pc, c, off + i, false); break; }
        proxy_check(w, l, pc, c, off, op.bytes, "a bulk store");
        for (uint32_t i = 0; i < op.bytes; ++i) cta.readers[off + i]++;
        async.push_back(op);
        for (auto& ao : async) op_by_id[ao.id] = &ao;
        AsyncOp& stored = async.back();
        stored.id = alloc_id(&stored);
        stored.land_at = UINT64_MAX;  // lands at its wait_group (or when the engine picks it after commit)
        if (cfg.trace) cfg.trace->event({step, TraceEvent::kTmaIssue, cta.linear, w.id, "copy " + std::to_string(stored.id) + ": " + m.location(pc)});
      }
      advance();
      break;
    }
    case OP_TMA_PREFETCH: {
      FOR_LANES {
        uint8_t map[16];
        if (!mem_access(w, l, in, SP_GENERIC, addr_of(w, o[0], l), map, 16, false)) continue;
        if (!maps.find(map)) finding(Finding::kIllegal, &w, l, pc, "", "prefetch of an unregistered tensor map");
      }
      advance();
      break;
    }
    case OP_BULK_COMMIT: {
      FOR_LANES {
        uint32_t th = w.id * 32 + l;
        uint32_t seq = ++w.bulk_seq[l];
        for (auto& op : async)
          if (!op.done && op.cta == w.cta && op.thread == th && op.group == 0 && op.kind != AK_TMA_LOAD && op.kind != AK_BULK_LOAD) {
            op.group = seq;
            op.land_at = step + land_delay();
          }
      }
      advance();
      break;
    }
    case OP_BULK_WAIT: {
      uint32_t n = (uint32_t)val(w, o[0], __builtin_ctz(mask));
      bool any = false;
      FOR_LANES {
        uint32_t th = w.id * 32 + l;
        for (auto& op : async)
          if (!op.done && op.cta == w.cta && op.thread == th && op.group != 0 && op.group + n <= w.bulk_seq[l]) { land(op); any = true; }
      }
      if (any) gc_async();
      advance();
      break;
    }
    // ---------------------------------------------------------------- wgmma
    case OP_WGMMA_FENCE: {
      if (!gather(all_live())) return;
      ++w.wg_fences;
      advance();
      break;
    }
    case OP_WGMMA_MMA: {
      if (!gather(all_live())) return;
      w.is_consumer = true;
      for (uint32_t k = (w.id / 4) * 4; k < std::min(nwarps, (w.id / 4) * 4 + 4); ++k) {
        Warp& ow = cta.warps[k];
        if (ow.pend.empty()) { ow.pend.assign((size_t)nregs * 32, 0); ow.pend_valid.assign(nregs, 0); }
      }
      uint32_t wg = w.id / 4, wq = w.id % 4;
      uint32_t seq = w.wg_issued++;
      WgOp& g = cta.wgops[wg % 8][seq];
      g.seq = seq;
      int l0 = __builtin_ctz(mask);
      uint32_t nd = in.n / 2;
      if (!g.contributed) {
        g.op.n = in.n;
        auto mt = [](Ty x) { return x == T_BF16 ? isa::MmaType::bf16 : x == T_F16 ? isa::MmaType::f16 : x == T_E4M3 ? isa::MmaType::e4m3 : isa::MmaType::e5m2; };
        g.op.atype = g.op.btype = mt(in.ty2);
        g.op.a_in_regs = in.sub2 == 1;
        g.op.desc_a = g.op.a_in_regs ? 0 : val(w, o[1], l0);
        g.op.desc_b = val(w, o[2], l0);
        g.op.scale_d = val(w, o[3], l0) != 0;
        g.op.scale_a = in.nops > 4 ? (int)(int64_t)o[4].imm : 1;
        g.op.scale_b = in.nops > 5 ? (int)(int64_t)o[5].imm : 1;
        bool fp8 = in.ty2 == T_E4M3 || in.ty2 == T_E5M2;
        if (!fp8) {
          if (g.op.a_in_regs) g.op.trans_b = in.nops > 6 && o[6].imm;
          else { g.op.trans_a = in.nops > 6 && o[6].imm; g.op.trans_b = in.nops > 7 && o[7].imm; }
        }
        g.nd = nd;
        g.d.assign(128 * nd, 0);
        g.a.assign(128 * 4, 0);
        g.pc = pc;
        std::string v = isa::wgmma_validate(g.op);
        if (!v.empty()) { finding(Finding::kIllegal, &w, l0, pc, "", "wgmma: " + v, true); return; }
        // the shared operands are reader-locked from the first warp's issue: the hardware may
        // read them at any point until the group retires
        uint32_t kk = isa::mma_k(g.op.atype);
        std::vector<float> abuf(64 * kk), bbuf((size_t)kk * g.op.n);
        auto rec = [&](uint32_t a, void* dst, uint32_t n) {
          memset(dst, 0, n);
          a &= 0xFFFFFF;
          if (a + n > smem_bytes) return;
          for (uint32_t ch = a >> 4; ch <= (a + n - 1) >> 4; ++ch)
            if (g.chunks.empty() || g.chunks.back() != ch) g.chunks.push_back(ch);
        };
        isa::wgmma_read_operands(g.op, rec, g.a.data(), abuf.data(), bbuf.data());
        std::sort(g.chunks.begin(), g.chunks.end());
        g.chunks.erase(std::unique(g.chunks.begin(), g.chunks.end()), g.chunks.end());
        for (uint32_t ch : g.chunks)
          for (int i = 0; i < 16; ++i)
            if (cta.readers[ch * 16 + i] < 255) cta.readers[ch * 16 + i]++;
      }
      if (g.contributed >> wq & 1) { finding(Finding::kIllegal, &w, l0, pc, "", "wgmma bookkeeping: warp contributed twice", true); return; }
      g.contributed |= 1u << wq;
      g.dregs[wq].clear();
      for (uint32_t e = 0; e < o[0].n; ++e) g.dregs[wq].push_back(m.vecs[o[0].reg + e].reg);
      if (g.op.a_in_regs) { g.aregs[wq].clear(); for (uint32_t e = 0; e < o[1].n; ++e) g.aregs[wq].push_back(m.vecs[o[1].reg + e].reg); }
      check_wgmma_fence(w, g, wq, l0, pc);
      for (uint32_t l = 0; l < 32; ++l) {
        if (g.op.a_in_regs)
          for (uint32_t e = 0; e < 4 && e < g.aregs[wq].size(); ++e) g.a[(wq * 32 + l) * 4 + e] = (uint32_t)R(w, g.aregs[wq][e], l);
      }
      // lock D (and A) registers of this warp
      for (uint32_t r : g.dregs[wq]) w.lock[r] = seq + 1;
      for (uint32_t r : g.aregs[wq]) if (!w.lock[r]) w.lock[r] = (seq + 1) | 0x80000000u;
      w.inflight++;
      w.uncommitted.push_back(seq);
      if (g.contributed == 0xF || nwarps < wg * 4 + 4) {
        // all four warps have issued: read the operands and compute. The accumulator input of
        // each warp is the result of the previous wgmma on those registers when one is still in
        // flight (a chain), else the register.
        for (uint32_t k = 0; k < 4; ++k) {
          if (wg * 4 + k >= nwarps) continue;
          Warp& ow = cta.warps[wg * 4 + k];
          for (uint32_t l = 0; l < 32; ++l)
            for (uint32_t e = 0; e < nd && e < g.dregs[k].size(); ++e) {
              uint32_t r = g.dregs[k][e];
              g.d[(k * 32 + l) * nd + e] = (uint32_t)(ow.pend_valid[r] ? ow.pend[(size_t)r * 32 + l] : R(ow, r, l));
            }
        }
        auto rd = [&](uint32_t a, void* dst, uint32_t n) {
          a &= 0xFFFFFF;
          if (a + n > smem_bytes) { finding(Finding::kOutOfBounds, &w, l0, pc, "", "wgmma operand outside shared memory at " + hex(a)); memset(dst, 0, n); return; }
          for (uint32_t i = 0; i < n; ++i) if (cta.poison[a + i]) { poison_report(w, l0, pc, w.cta, a + i, false); break; }
          memcpy(dst, &cta.smem[a], n);
        };
        isa::wgmma_compute(g.op, rd, g.a.data(), g.d.data());
        for (uint32_t ch : g.chunks) proxy_check(w, l0, pc, w.cta, ch * 16, 16, "wgmma.mma_async");
        g.computed = true;
        for (uint32_t k = 0; k < 4; ++k) {
          if (wg * 4 + k >= nwarps) continue;
          Warp& ow = cta.warps[wg * 4 + k];
          for (uint32_t l = 0; l < 32; ++l)
            for (uint32_t e = 0; e < g.dregs[k].size(); ++e) ow.pend[(size_t)g.dregs[k][e] * 32 + l] = g.d[(k * 32 + l) * nd + e];
          for (uint32_t r : g.dregs[k]) ow.pend_valid[r] = 1;
        }
        if (cfg.trace) cfg.trace->event({step, TraceEvent::kWgmmaIssue, cta.linear, w.id, m.location(pc)});
      }
      advance();
      break;
    }
    case OP_WGMMA_COMMIT: {
      if (!gather(all_live())) return;
      w.groups.push_back(w.uncommitted);
      w.uncommitted.clear();
      if (cfg.trace) cfg.trace->event({step, TraceEvent::kWgmmaCommit, cta.linear, w.id, "group " + std::to_string(w.groups_committed) + ": " + m.location(pc)});
      ++w.groups_committed;
      advance();
      break;
    }
    case OP_WGMMA_WAIT: {
      if (!gather(all_live())) return;
      uint32_t n = (uint32_t)val(w, o[0], __builtin_ctz(mask));
      uint32_t wg = w.id / 4, wq = w.id % 4;
      while (w.groups.size() > n) {
        auto& grp = w.groups.front();
        for (uint32_t seq : grp) {
          auto it = cta.wgops[wg % 8].find(seq);
          if (it == cta.wgops[wg % 8].end()) continue;
          if (!it->second.computed) { FOR_LANES { w.st[l] = LS_WGWAIT; w.wait_addr[l] = seq; } return; }
        }
        for (uint32_t seq : grp) {
          auto it = cta.wgops[wg % 8].find(seq);
          if (it == cta.wgops[wg % 8].end()) continue;
          WgOp& g = it->second;
          for (uint32_t r : g.dregs[wq]) {
            if ((w.lock[r] & 0x7FFFFFFFu) == seq + 1) {
              for (uint32_t l = 0; l < 32; ++l) R(w, r, l) = w.pend[(size_t)r * 32 + l];
              w.lock[r] = 0;
              w.pend_valid[r] = 0;
            }
          }
          for (uint32_t r : g.aregs[wq]) if ((w.lock[r] & 0x7FFFFFFFu) == seq + 1) w.lock[r] = 0;
          w.inflight--;
          if (!g.retired_mask) for (uint32_t ch : g.chunks) for (int i = 0; i < 16; ++i) if (cta.readers[ch * 16 + i]) cta.readers[ch * 16 + i]--;
          g.retired_mask |= 1u << wq;
          uint32_t all = 0;
          for (uint32_t k = 0; k < 4 && wg * 4 + k < nwarps; ++k) all |= 1u << k;
          if (g.retired_mask == all) cta.wgops[wg % 8].erase(it);
        }
        if (cfg.trace) cfg.trace->event({step, TraceEvent::kWgmmaRetire, cta.linear, w.id, "group " + std::to_string(w.groups_committed - w.groups.size()) + ": " + m.location(pc)});
        w.groups.erase(w.groups.begin());
      }
      advance();
      break;
    }
    case OP_LDMATRIX: case OP_STMATRIX: {
      if (!gather(all_live())) return;
      uint32_t addrs[32] = {0};
      FOR_LANES addrs[l] = (uint32_t)addr_of(w, in.op == OP_LDMATRIX ? o[1] : o[0], l);
      int l0 = __builtin_ctz(mask);
      const Opnd& v = in.op == OP_LDMATRIX ? o[0] : o[1];
      uint32_t num = in.n;
      std::vector<uint32_t> regs(32 * num, 0);
      if (in.op == OP_LDMATRIX) {
        isa::ldmatrix_m8n8(num, in.mods & M_TRANS, addrs, [&](uint32_t a, void* d, uint32_t n) { smem_read(w, l0, pc, a, false, d, n); }, regs.data());
        FOR_LANES for (uint32_t e = 0; e < num; ++e) R(w, m.vecs[v.reg + e].reg, l) = regs[l * num + e];
      } else {
        FOR_LANES for (uint32_t e = 0; e < num; ++e) regs[l * num + e] = (uint32_t)R(w, m.vecs[v.reg + e].reg, l);
        isa::stmatrix_m8n8(num, in.mods & M_TRANS, addrs, regs.data(), [&](uint32_t a, const void* s, uint32_t n) { smem_write(w, l0, pc, a, false, s, n); });
      }
      advance();
      break;
    }
    case OP_TC_ALLOC: case OP_TC_DEALLOC: case OP_TC_RELINQUISH: case OP_TC_LD: case OP_TC_ST: case OP_TC_WAIT_LD:
    case OP_TC_WAIT_ST: case OP_TC_FENCE_BEFORE: case OP_TC_FENCE_AFTER: case OP_TC_MMA: case OP_TC_COMMIT:
      exec_tcgen05(w, pc, mask);  // tools/sim/exec_sm100.inc
      break;
    case OP_MOV_B128: case OP_CLC_TRY_CANCEL: case OP_CLC_IS_CANCELED: case OP_CLC_FIRST_CTAID:
      exec_clc(w, pc, mask);  // tools/sim/exec_sm100.inc
      break;
    default:
      finding(Finding::kIllegal, &w, __builtin_ctz(mask), pc, "", "instruction form not executable: " + m.forms[in.form], true);
      return;
  }
}

Report Exec::run() {
  auto t0 = std::chrono::steady_clock::now();
  auto it = m.func_index.find(cfg.entry);
  if (it == m.func_index.end() || !m.funcs[it->second].is_entry) {
    finding(Finding::kIllegal, nullptr, -1, UINT32_MAX, "", "no entry named '" + cfg.entry + "' in " + m.name, true);
    return rep;
  }
  entry = &m.funcs[it->second];
  nthreads = cfg.block.x * cfg.block.y * cfg.block.z;
  nwarps = (nthreads + 31) / 32;
  cl_size = cfg.cluster.x * cfg.cluster.y * cfg.cluster.z;
  if (nthreads == 0 || nthreads > 1024) { finding(Finding::kIllegal, nullptr, -1, UINT32_MAX, "", "block of " + std::to_string(nthreads) + " threads", true); return rep; }
  if (cfg.grid.x % cfg.cluster.x || cfg.grid.y % cfg.cluster.y || cfg.grid.z % cfg.cluster.z || cl_size > 16) {
    finding(Finding::kIllegal, nullptr, -1, UINT32_MAX, "", "grid not a multiple of the cluster shape", true);
    return rep;
  }
  if (entry->reqcluster[0] && (entry->reqcluster[0] != cfg.cluster.x || entry->reqcluster[1] != cfg.cluster.y || entry->reqcluster[2] != cfg.cluster.z))
    finding(Finding::kIllegal, nullptr, -1, UINT32_MAX, "", "launch cluster shape differs from .reqnctapercluster", true);
  if (entry->maxntid[0] && nthreads > entry->maxntid[0] * std::max(1u, entry->maxntid[1]) * std::max(1u, entry->maxntid[2]))
    finding(Finding::kIllegal, nullptr, -1, UINT32_MAX, "", "block exceeds .maxntid", true);
  if (cfg.params.size() < entry->param_bytes)
    finding(Finding::kIllegal, nullptr, -1, UINT32_MAX, "", "param block of " + std::to_string(cfg.params.size()) + " bytes; the entry declares " + std::to_string(entry->param_bytes), true);
  if (fatal) return rep;
  smem_bytes = m.static_smem + cfg.dynamic_smem;
  if (smem_bytes > 232448) { finding(Finding::kIllegal, nullptr, -1, UINT32_MAX, "", "shared memory " + std::to_string(smem_bytes) + " bytes over the sm_90 limit of 227 KB", true); return rep; }
  smem_bytes = std::max(smem_bytes, 16u);
  // ISA reading (READINGS.md #9): without .maxnreg or a LaunchConfig value, the registers per
  // thread are what the register file (64K per SM) gives each thread of .minnctapersm CTAs of
  // the .maxntid (else launched) size, rounded down to a multiple of 8, at most 248
  if (cfg.regs_per_thread) regs_per_thread = cfg.regs_per_thread;
  else if (entry->maxnreg) regs_per_thread = entry->maxnreg;
  else {
    uint32_t bound = entry->maxntid[0] ? entry->maxntid[0] * std::max(1u, entry->maxntid[1]) * std::max(1u, entry->maxntid[2]) : nthreads;
    uint32_t per = 65536u / (bound * std::max(1u, entry->minnctapersm));
    regs_per_thread = std::min(248u, per / 8 * 8);
  }
  // registers: the entry's own (numbered from 0); .func registers follow the largest entry's
  nregs = std::max(1u, m.total_regs > m.entry_regs_max ? m.total_regs : entry->reg_count);
  // module data
  for (auto& g : m.globals) {
    gvars.push_back(g.init);
    if (gvars.back().empty()) gvars.back().resize(1);
  }
  for (size_t i = 0; i < gvars.size(); ++i) mem.add(reinterpret_cast<uint64_t>(gvars[i].data()), m.globals[i].size ? m.globals[i].size : 1, "module ." + std::string(m.globals[i].space == SP_CONST ? "const " : "global ") + m.globals[i].name);
  op_by_id.assign(65536, nullptr);
  async.reserve(4096);
  total_ctas = cfg.grid.x * cfg.grid.y * cfg.grid.z;
  uint32_t nclusters = total_ctas / cl_size;
  uint32_t resident_clusters = std::max(1u, (uint32_t)std::max(1, cfg.sms) / cl_size);
  if ((uint32_t)cfg.sms < cl_size) resident_clusters = 1;
  ctas.resize(resident_clusters * cl_size);
  budget = cfg.step_budget ? cfg.step_budget : 400000000ull;
  // clusters in order: cluster c holds the CTAs whose ctaid / cluster dims equal c's position
  std::vector<std::vector<uint32_t>> cluster_ctas(nclusters);
  for (uint32_t lin = 0; lin < total_ctas; ++lin) {
    uint32_t x = lin % cfg.grid.x, y = (lin / cfg.grid.x) % cfg.grid.y, z = lin / (cfg.grid.x * cfg.grid.y);
    uint32_t cx = x / cfg.cluster.x, cy = y / cfg.cluster.y, cz = z / cfg.cluster.z;
    uint32_t cid = cx + (cfg.grid.x / cfg.cluster.x) * (cy + (cfg.grid.y / cfg.cluster.y) * cz);
    cluster_ctas[cid].push_back(lin);
  }
  // ranks within a cluster: x fastest (cluster_ctarank = x + X*(y + Y*z)); push order matches
  uint32_t next_cluster = 0;
  clc_next = &next_cluster;  // clusterlaunchcontrol.try_cancel takes clusters from this queue
  clc_clusters = &cluster_ctas;
  auto fill = [&](uint32_t slot_cluster) {
    if (next_cluster >= nclusters) return false;
    auto& v = cluster_ctas[next_cluster++];
    for (uint32_t r = 0; r < cl_size; ++r) {
      start_cta(slot_cluster * cl_size + r, v[r], r, slot_cluster * cl_size);
      Cta& c = ctas[slot_cluster * cl_size + r];
      c.pool_free = 0;
    }
    return true;
  };
  for (uint32_t s = 0; s < resident_clusters; ++s) if (!fill(s)) { for (uint32_t r = 0; r < cl_size; ++r) ctas[s * cl_size + r].active = false; }
  uint64_t rr = 0;
  std::vector<Warp*> cand;
  while (!fatal) {
    // retire finished clusters, start new ones
    for (uint32_t s = 0; s < resident_clusters; ++s) {
      bool act = false, alldone = true;
      for (uint32_t r = 0; r < cl_size; ++r) {
        Cta& c = ctas[s * cl_size + r];
        if (!c.active) continue;
        act = true;
        for (auto& w : c.warps) if (!w.done) { alldone = false; break; }
      }
      if (act && alldone) {
        // a CTA's outstanding bulk operations complete before it is gone
        bool any = false;
        for (auto& op : async) if (!op.done && op.cta >= s * cl_size && op.cta < (s + 1) * cl_size) { land(op); any = true; }
        if (any) gc_async();
        for (uint32_t r = 0; r < cl_size; ++r) tc_cta_exit(s * cl_size + r);  // tcgen05: commits land, TMEM freed
        for (uint32_t r = 0; r < cl_size; ++r) {
          Cta& c = ctas[s * cl_size + r];
          for (auto& [off, b] : c.mbars)
            if (b.live && b.tx != 0)
              finding(Finding::kProtocol, nullptr, -1, b.init_pc, mbar_name(s * cl_size + r, off),
                      "the CTA exited with a transaction count of " + std::to_string(b.tx) +
                          " on this mbarrier (expect_tx and the bytes its copies delivered differ)");
          c.active = false;
        }
        if (!fill(s)) {}
      }
    }
    cand.clear();
    for (auto& c : ctas) if (c.active) for (auto& w : c.warps) if (warp_runnable(w)) cand.push_back(&w);
    if (cand.empty()) {
      if (!tc.commits.empty() && tc_land_due(true)) continue;  // tcgen05.commit arrivals (exec_sm100.inc)
      if (!async.empty()) {
        // nothing runs: the oldest copies land now
        for (auto& op : async) if (op.group != 0 || op.kind == AK_TMA_LOAD || op.kind == AK_BULK_LOAD) { op.land_at = 0; }
        if (land_due(false)) continue;
        land_due(true);
        continue;
      }
      bool any_active = false, retire = false;
      for (auto& c : ctas)
        if (c.active) {
          any_active = true;
          bool all = true;
          for (auto& w : c.warps) if (!w.done) { all = false; break; }
          if (all) retire = true;
        }
      if (!any_active) break;
      if (retire) continue;
      for (auto& c : ctas) if (c.active) nreg_over_pool(c);
      std::string msg = "no thread can make progress:";
      for (auto& c : ctas) if (c.active) for (auto& w : c.warps) if (!w.done) msg += blocked_desc(w);
      finding(Finding::kDeadlock, nullptr, -1, UINT32_MAX, "", msg, true);
      break;
    }
    // policy: choose a warp
    Warp* w = nullptr;
    auto pick_rr = [&](const std::vector<Warp*>& v) { return v[(rr++) % v.size()]; };
    switch (cfg.policy) {
      case Policy::kRoundRobin: w = pick_rr(cand); break;
      case Policy::kRandom: w = cand[rng() % cand.size()]; break;
      case Policy::kStarveProducer: case Policy::kConsumersFirst: case Policy::kDelayOneWarpgroup: {
        std::vector<Warp*> pref;
        for (Warp* x : cand) {
          bool low = cfg.policy == Policy::kStarveProducer ? x->is_producer
                   : cfg.policy == Policy::kConsumersFirst ? !x->is_consumer
                   : (x->id / 4) == 1;
          if (!low) pref.push_back(x);
        }
        // the low-priority warps still run now and then (and whenever nobody else can)
        w = (pref.empty() || rng() % 64 == 0) ? pick_rr(cand) : pick_rr(pref);
        break;
      }
    }
    int quantum = cfg.policy == Policy::kRandom ? 1 + (int)(rng() % 32) : 32;
    exec_warp(*w, quantum);
    if (!async.empty()) land_due(false);
    if (!tc.commits.empty()) tc_land_due(false);
    if (step > budget) {
      std::string msg = "step budget of " + std::to_string(budget) + " warp-instructions exhausted (livelock?):";
      for (auto& c : ctas) if (c.active) for (auto& w2 : c.warps) if (!w2.done) msg += blocked_desc(w2);
      finding(Finding::kLivelock, nullptr, -1, UINT32_MAX, "", msg, true);
      break;
    }
  }
  for (size_t i = 0; i < gvars.size(); ++i) mem.remove(reinterpret_cast<uint64_t>(gvars[i].data()));
  if (!tc.clc_buf.empty()) mem.remove(reinterpret_cast<uint64_t>(tc.clc_buf.data()));
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

#include "tools/sim/exec_sm100.inc"  // sm_100a: the tcgen05 instructions, members of Exec

}  // namespace

Report launch(const LaunchConfig& cfg, Memory& mem, const TensorMaps& maps) {
  if (!cfg.module) {
    Report r;
    Finding f;
    f.kind = Finding::kIllegal;
    f.kernel = cfg.entry;
    f.message = "no module";
    r.findings.push_back(f);
    return r;
  }
  Exec e(cfg, mem, maps);
  return e.run();
}

}  // namespace ptxsim
