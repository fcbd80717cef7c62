// The FA4 backward kernel (src/sm100/fa4_bwd.cuh) replayed through the tcgen05 emulator on the CPU.
//
// No Blackwell GPU ran this kernel. What this test establishes instead: the descriptors, TMEM columns,
// K-step advances, MMA order, P/dS arithmetic, dS^T shared-memory layout, dQ accumulator order and
// dK/dV staging the kernel uses compute the attention backward. It runs the kernel's own code where
// the kernel has it (src/protocol/fa4_bwd_plan.h, src/sm100/fa4_bwd_config.h):
//   - fa4bwd::bwd_tile_schedule, the MMA thread's walk of a key block (waits, K steps, commits), with
//     a visitor that executes each tcgen05.mma through tools/models/tcgen05_emulator (written from the
//     PTX ISA, independently of the plan) with the operands BwdMmaPlan computes (s_t, dp_t, dv, dk, dq:
//     descriptors, TMEM addresses, enable-input-d, instruction descriptors);
//   - the compute warps (warps 4-11, lane quarters, query halves, 32-query chunks in the kernel's
//     order): S^T and dP^T through the emulator's tcgen05.ld .32x32b at s_taddr/dp_taddr, key_visible,
//     bwd_p, bwd_ds, P^T back through tcgen05.st at p_taddr (over S^T's own columns: an aliasing slip
//     corrupts the S^T a later chunk reads), dS^T into the shared-memory image at ds_unit_byte;
//   - the reduction warps: dQ through tcgen05.ld at dq_taddr, staged at dq_stage_byte, the 16 KiB
//     chunk bulk-added (cp.reduce.async.bulk, a linear add) into the accumulator; the postprocess reads
//     it back through dq_accum_index;
//   - the epilogue: dK (x softmax_scale) and dV through tcgen05.ld, staged at out_unit_byte, read back
//     by the TMA store's swizzle; GQA: added into the fp32 accumulators.
// Visibility is modelled at the barriers: dS^T reaches the MMA at ds_ready, dQ leaves TMEM at dq_free,
// so a schedule that issues an MMA before the wait that certifies its operands reads stale data.
// What stands in for hardware the emulator does not model: the TMA (boxes written/read with the
// 128-byte swizzle, zeros outside the tensor, as in tests/host/test_fa4_replay.cpp) and MUFU.EX2
// (the correctly rounded 2^x, flushed below the normal range). What rests on reading only: timing,
// asynchrony, and that the completion waits the emulator cannot distinguish (p_free before the next
// S^T, qdo_empty before the next load) are what the hardware needs (PTX ISA "Pipelined tcgen05
// Instructions").
// The result is compared with tools/support/reference.h's fp64 backward (written separately, for the
// FA3 GPU tests) under FlashAttention's rule, as tests/gpu/test_fa3_bwd.cpp applies it:
// max|g - ref| <= 2 max|g_same - ref| + 1e-5 + the fp32 envelope of dS's cancellation (dQ, dK), widened
// by half an output ulp at the largest |g| (the forward replay's widening, argued in run_problem).
// Plan and order mutations must fail it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "src/protocol/fa4_bwd_plan.h"
#include "src/protocol/ring.h"
#include "tools/models/tcgen05_emulator.h"
#include "src/sm100/fa4_bwd_config.h"
#include "tools/support/dtype.h"
#include "tools/support/reference.h"
#include "tests/host/replay_util.h"

namespace emu = flashptx::models::tcgen05;
namespace fb = flashptx::fa4bwd;
namespace fp = flashptx::fa4bwd::pair;
namespace ref = flashptx::ref;
using emu::EmuError;

namespace {

using flashptx_test::fresh_seed;
using flashptx_test::HostMath;

uint16_t to16(bool bf16, float x) { return bf16 ? flashptx::float_to_bf16(x) : flashptx::float_to_fp16(x); }
double from16(bool bf16, uint16_t v) { return bf16 ? flashptx::bf16_to_float(v) : flashptx::fp16_to_float(v); }
float f(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

struct Shape {
  int batch = 1, sq = 1, sk = 1, hq = 1, hkv = 1;
  bool causal = false;
};

struct Tensor {  // [batch, seqlen, heads, d] contiguous 16-bit
  int seqlen = 0, heads = 0, d = 0, batch = 0;
  std::vector<uint16_t> x;
  size_t at(int b, int s, int h, int e) const { return ((static_cast<size_t>(b) * seqlen + s) * heads + h) * d + e; }
};
Tensor random_tensor(std::mt19937& rng, bool bf16, int batch, int seqlen, int heads, int d) {
  Tensor t{seqlen, heads, d, batch, {}};
  std::normal_distribution<double> nd(0.0, 1.0);
  t.x.resize(static_cast<size_t>(batch) * seqlen * heads * d);
  for (auto& v : t.x) v = to16(bf16, static_cast<float>(nd(rng)));
  return t;
}

// The TMA: box (64 elements, rows) at (c0, row0, h, b), 128-byte swizzle, zeros outside the tensor.
uint32_t swizzle128(uint32_t a) { return a ^ (((a >> 7) & 7u) << 4); }
void tma_load(emu::Smem& sm, uint32_t dst, const Tensor& t, int c0, int row0, int h, int b, int rows) {
  REQUIRE(dst % 1024 == 0);
  for (int r = 0; r < rows; ++r)
    for (int e = 0; e < fb::kChunkElems; ++e) {
      const int s = row0 + r, col = c0 + e;
      const uint16_t v = (s < t.seqlen && col < t.d) ? t.x[t.at(b, s, h, col)] : uint16_t{0};
      std::memcpy(&sm.bytes[swizzle128(dst + static_cast<uint32_t>(r * 128 + e * 2))], &v, 2);
    }
}
void tma_store(const emu::Smem& sm, uint32_t src, Tensor& t, int c0, int row0, int h, int b, int rows) {
  for (int r = 0; r < rows; ++r)
    for (int e = 0; e < fb::kChunkElems; ++e) {
      const int s = row0 + r, col = c0 + e;
      if (s >= t.seqlen || col >= t.d) continue;  // clipped
      uint16_t v;
      std::memcpy(&v, &sm.bytes[swizzle128(src + static_cast<uint32_t>(r * 128 + e * 2))], 2);
      t.x[t.at(b, s, h, col)] = v;
    }
}

enum class Mutation {
  kNone,
  kDqReadsDsTransposed,  // dQ's A read K-major (dS^T K: the transpose of the shared dS^T tile lost)
  kPContiguous,          // dV reads P^T from 8s columns (the forward's contiguous P), not the halves' heads
  kDsUnswizzled,         // dS^T stored without the 128-byte swizzle its descriptors declare
  kDkNoAccumulate,       // dK's first K step of every query block overwrites (enable-input-d = s > 0)
  kDqBeforeDsReady,      // the MMA thread issues dK and dQ before waiting ds_ready (the previous dS^T)
  kDpBeforeDqFree,       // the MMA thread issues dP^T before waiting dq_free (dQ overwritten unread)
  // The 2-CTA form's own:
  kNoExchange,           // the dS halves are not sent: each CTA's XA keeps only its own key block
  kWrongPeerHalf,        // a CTA sends its own rows' half (DS chunk r) instead of the peer's (chunk 1 - r)
  kDqBeforeExchange,     // the leader issues dQ after ds_ready of the compute warps but before x_full
  kDqFoldSwapped,        // the reduction reads Layout B's column halves the other way round (lanes 64-127 first)
  kXbOwnKOnly,           // dQ's B takes this CTA's K for both key blocks (the peer's K columns not loaded)
};

struct Grads {
  std::vector<uint16_t> dq, dk, dv;
  long mmas = 0, steps = 0;
};

// What the 1-CTA and the 2-CTA replays share: inputs, the compute warps, the epilogue, the MMA call,
// the postprocess. D, Bf16: the head dim and dtype; the TMEM/compute addresses are BwdMmaPlan<D>'s
// (the pair plan uses the same at d = 128).
template <int D, bool Bf16>
class ReplayBase {
 public:
  using Plan = fb::BwdMmaPlan<D, Bf16>;
  static constexpr uint32_t kBase = 1024;  // the 1024-aligned carve-up starts past the alignment slack

  ReplayBase(const Shape& sh, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout,
             const std::vector<float>& lse2, const std::vector<float>& delta, Mutation mut)
      : sh_(sh), q_(q), k_(k), v_(v), do_(dout), lse2_(lse2), delta_(delta), mut_(mut) {
    scale_ = 1.0f / std::sqrt(static_cast<float>(D));
    lambda_ = scale_ * 1.4426950408889634f;  // src/plan.cpp: softmax_scale_log2
    m_blocks_ = (sh.sq + fb::kBlockM - 1) / fb::kBlockM;
    n_blocks_ = (sh.sk + fb::kBlockN - 1) / fb::kBlockN;
  }

 protected:
  struct Unit {
    uint32_t addr;
    uint32_t w[4];
  };

  void start(Grads& g) {
    out_ = &g;
    dq_accum_.assign(static_cast<size_t>(sh_.batch) * sh_.hq * m_blocks_ * fb::kBlockM * D, 0.0f);
    const size_t kv_rows = static_cast<size_t>(sh_.batch) * sh_.hkv * n_blocks_ * fb::kBlockN;
    dk_accum_.assign(kv_rows * D, 0.0f);
    dv_accum_.assign(kv_rows * D, 0.0f);
    dk_ = Tensor{sh_.sk, sh_.hkv, D, sh_.batch, {}};
    dk_.x.assign(static_cast<size_t>(sh_.batch) * sh_.sk * sh_.hkv * D, uint16_t{0xFFFF});  // NaN: unwritten fails
    dv_ = dk_;
  }

  // The postprocess: dQ = softmax_scale x accumulator, in the dtype; GQA: dK, dV from theirs.
  void finish(Grads& g) {
    g.dq.assign(static_cast<size_t>(sh_.batch) * sh_.sq * sh_.hq * D, 0);
    for (int b = 0; b < sh_.batch; ++b)
      for (int h = 0; h < sh_.hq; ++h)
        for (int r = 0; r < sh_.sq; ++r)
          for (int e = 0; e < D; ++e) {
            const int m = r / fb::kBlockM;
            const size_t tile = (static_cast<size_t>(b) * sh_.hq + h) * m_blocks_ + m;
            const float a = dq_accum_[tile * fb::kBlockM * D + fb::dq_accum_index(r % fb::kBlockM, e)];
            g.dq[((static_cast<size_t>(b) * sh_.sq + r) * sh_.hq + h) * D + e] = to16(Bf16, a * scale_);
          }
    if (sh_.hq != sh_.hkv)
      for (int b = 0; b < sh_.batch; ++b)
        for (int h = 0; h < sh_.hkv; ++h)
          for (int r = 0; r < sh_.sk; ++r)
            for (int e = 0; e < D; ++e) {
              const size_t a = ((static_cast<size_t>(b) * sh_.hkv + h) * n_blocks_ * fb::kBlockN + r) * D + e;
              dk_.x[dk_.at(b, r, h, e)] = to16(Bf16, dk_accum_[a]);
              dv_.x[dv_.at(b, r, h, e)] = to16(Bf16, dv_accum_[a]);
            }
    g.dk = std::move(dk_.x);
    g.dv = std::move(dv_.x);
  }

  static void ok(EmuError e, const char* what) {
    if (e != EmuError::kOk) FAIL(what << " refused by the emulator: " << emu::emu_error_name(e));
  }
  void mma(const std::vector<emu::Cta*>& ctas, const fb::Issue& is) {
    const EmuError e = emu::mma(ctas, flashptx_test::mma_op(is, static_cast<int>(ctas.size())));
    if (e != EmuError::kOk) FAIL("tcgen05.mma refused by the emulator: " << emu::emu_error_name(e));
    ++out_->mmas;
  }

  // The compute warps of one CTA on step j (query block m): warps 4-11, in the kernel's chunk order.
  // P^T goes to TMEM at once (each thread's own columns); dS^T units are queued in `pending` (at
  // ds_smem + ds_unit_byte) until ds_ready publishes them; with copy_half >= 0 (the 2-CTA form), the
  // warpgroup of that query half also queues its units at xa_smem + ds_unit_byte (its XA block).
  void compute(emu::Cta& cta, uint32_t tmem, const fb::KeyBlock& kb, int j, uint32_t ds_smem, int copy_half,
               uint32_t xa_smem, std::vector<Unit>& pending) {
    const int m = kb.m_begin + j;
    const size_t rows0 = (static_cast<size_t>(kb.batch) * sh_.hq + kb.head) * m_blocks_ * fb::kBlockM;
    pending.clear();
    for (int warp = fb::kComputeWarp0; warp < fb::kComputeWarp0 + fb::kComputeWarps; ++warp) {
      const int h = warp / 4 - 1;
      for (int c = 0; c < 64 / fb::kComputeCols; ++c) {
        std::vector<uint32_t> s_raw, dp_raw;
        ok(emu::ld_32x32b(cta.tmem, warp, Plan::s_taddr(tmem, warp, h, c), fb::kComputeCols, &s_raw), "S^T ld");
        ok(emu::ld_32x32b(cta.tmem, warp, Plan::dp_taddr(tmem, warp, h, c), fb::kComputeCols, &dp_raw), "dP^T ld");
        std::vector<uint32_t> p_pack(32 * fb::kComputeCols / 2);
        const int q0 = 64 * h + fb::kComputeCols * c;
        for (int th = 0; th < 32; ++th) {
          const int key = 32 * (warp % 4) + th;
          const int gkey = kb.n_block * fb::kBlockN + key;
          uint32_t ds_pack[fb::kComputeCols / 2];
          for (int e = 0; e < fb::kComputeCols / 2; ++e) {
            float pv[2], dsv[2];
            for (int x = 0; x < 2; ++x) {
              const int q = q0 + 2 * e + x;
              const bool vis = fb::key_visible(gkey, m * fb::kBlockM + q, sh_.sq, sh_.sk, sh_.causal);
              pv[x] = fb::bwd_p<HostMath<Bf16>>(f(s_raw[th * fb::kComputeCols + 2 * e + x]), lambda_,
                                                lse2_[rows0 + m * fb::kBlockM + q], vis);
              dsv[x] = fb::bwd_ds(pv[x], f(dp_raw[th * fb::kComputeCols + 2 * e + x]), delta_[rows0 + m * fb::kBlockM + q]);
            }
            p_pack[th * (fb::kComputeCols / 2) + e] = HostMath<Bf16>::pack(pv[0], pv[1]);
            ds_pack[e] = HostMath<Bf16>::pack(dsv[0], dsv[1]);
          }
          for (int un = 0; un < fb::kComputeCols / 8; ++un) {
            uint32_t a = Plan::ds_unit_byte(static_cast<uint32_t>(key), static_cast<uint32_t>(q0 + 8 * un));
            if (mut_ == Mutation::kDsUnswizzled)
              a = Plan::kmajor(fb::kBlockN).byte_offset(static_cast<uint32_t>(key), static_cast<uint32_t>(q0 + 8 * un));
            const Unit u{ds_smem + a, {ds_pack[4 * un], ds_pack[4 * un + 1], ds_pack[4 * un + 2], ds_pack[4 * un + 3]}};
            pending.push_back(u);
            if (h == copy_half) pending.push_back({xa_smem + a, {u.w[0], u.w[1], u.w[2], u.w[3]}});
          }
        }
        ok(emu::st_32x32b(cta.tmem, warp, Plan::p_taddr(tmem, warp, h, c), fb::kComputeCols / 2, p_pack), "P^T st");
      }
    }
  }
  static void publish(emu::Cta& cta, std::vector<Unit>& pending) {
    for (const Unit& x : pending) std::memcpy(&cta.smem.bytes[x.addr], x.w, 16);
    pending.clear();
  }

  // The dK/dV epilogue of one CTA (compute warps, query half h = head-dim half), staging dV at
  // dv_stage and dK at dk_stage.
  void epilogue(emu::Cta& cta, uint32_t tmem, const fb::KeyBlock& kb, bool any, uint32_t dv_stage, uint32_t dk_stage) {
    const bool gqa = sh_.hq != sh_.hkv;
    const uint32_t tiles[2] = {dv_stage, dk_stage};
    for (int t = 0; t < 2; ++t) {
      const float scale = t == 0 ? 1.0f : scale_;
      for (int warp = fb::kComputeWarp0; warp < fb::kComputeWarp0 + fb::kComputeWarps; ++warp) {
        const int h = warp / 4 - 1;
        for (int c = 0; c < D / 2 / 32; ++c) {
          const int col0 = h * (D / 2) + 32 * c;
          std::vector<uint32_t> r(32 * 32, 0u);
          if (any)
            ok(emu::ld_32x32b(cta.tmem, warp, t == 0 ? Plan::dv_taddr(tmem, warp, col0 / 32) : Plan::dk_taddr(tmem, warp, col0 / 32),
                              32, &r),
               "dK/dV ld");
          for (int th = 0; th < 32; ++th) {
            const int key = 32 * (warp % 4) + th, gkey = kb.n_block * fb::kBlockN + key;
            if (gqa) {
              if (gkey >= sh_.sk) continue;
              std::vector<float>& acc = t == 0 ? dv_accum_ : dk_accum_;
              const size_t a = ((static_cast<size_t>(kb.batch) * sh_.hkv + kb.head_kv) * n_blocks_ * fb::kBlockN + gkey) * D;
              for (int k = 0; k < 32; ++k) acc[a + col0 + k] += f(r[th * 32 + k]) * scale;
              continue;
            }
            for (int un = 0; un < 4; ++un) {
              uint32_t w[4];
              for (int e = 0; e < 4; ++e)
                w[e] = HostMath<Bf16>::pack(f(r[th * 32 + 8 * un + 2 * e]) * scale, f(r[th * 32 + 8 * un + 2 * e + 1]) * scale);
              std::memcpy(&cta.smem.bytes[tiles[t] + Plan::out_unit_byte(static_cast<uint32_t>(key),
                                                                         static_cast<uint32_t>(col0 + 8 * un))],
                          w, 16);
            }
          }
        }
      }
      if (gqa) continue;
      for (int c = 0; c < D / fb::kChunkElems; ++c)
        for (int r0 = 0; r0 < fb::kBlockN; r0 += 64)
          tma_store(cta.smem, tiles[t] + Plan::chunk(fb::kBlockN, c) + r0 * fb::kSwizzleRow, t == 0 ? dv_ : dk_,
                    c * fb::kChunkElems, kb.n_block * fb::kBlockN + r0, kb.head_kv, kb.batch, 64);
    }
  }

  // cp.reduce.async.bulk .add.f32 of `bytes` from shared `src` to dQ accumulator floats at `dst`.
  static void bulk_add(const emu::Cta& cta, uint32_t src, float* dst, uint32_t bytes) {
    for (uint32_t i = 0; i < bytes / 4; ++i) {
      float x;
      std::memcpy(&x, &cta.smem.bytes[src + 4 * i], 4);
      dst[i] += x;
    }
  }
  float* dq_tile(const fb::KeyBlock& kb, int j) {
    const size_t tile = (static_cast<size_t>(kb.batch) * sh_.hq + kb.head) * m_blocks_ + kb.m_begin + j;
    return dq_accum_.data() + tile * fb::kBlockM * D;
  }

  const Shape sh_;
  const Tensor &q_, &k_, &v_, &do_;
  const std::vector<float>&lse2_, &delta_;
  Mutation mut_;
  float scale_ = 0, lambda_ = 0;
  int m_blocks_ = 0, n_blocks_ = 0;
  std::vector<float> dq_accum_, dk_accum_, dv_accum_;
  Tensor dk_, dv_;
  Grads* out_ = nullptr;
};

// The 1-CTA kernel (src/sm100/fa4_bwd.cuh).
template <fb::BwdConfig C>
class Replay : public ReplayBase<C.head_dim, C.bf16> {
  using B = ReplayBase<C.head_dim, C.bf16>;
  using B::mut_;
  using B::sh_;
  using B::kBase;

 public:
  using L = fb::BwdLayout<C>;
  using Plan = typename L::Plan;
  static constexpr int D = C.head_dim;
  using B::B;

  Grads run(bool deterministic) {
    Grads g;
    B::start(g);
    cta_ = std::make_unique<emu::Cta>();
    ctas_ = {cta_.get()};
    // The grid: one CTA per (key block, query head, batch), taken in turn by one simulated CTA (TMEM
    // allocated and freed per CTA, as the kernel does).
    for (int b = 0; b < sh_.batch; ++b)
      for (int h = 0; h < sh_.hq; ++h)
        for (int bx = 0; bx < B::n_blocks_; ++bx) {
          kb_ = fb::key_block(bx, h, b, B::n_blocks_, B::m_blocks_, sh_.hq, sh_.hkv, sh_.sq, sh_.sk, sh_.causal,
                              deterministic);
          REQUIRE(cta_->tmem.alloc(Plan::kTmemCols, &tmem_) == EmuError::kOk);
          REQUIRE(tmem_ == 0u);
          ring_ = flashptx::RingState<C.stages>::consumer_start();
          pending_dq_ = -1;
          const int J = kb_.m_end - kb_.m_begin;
          fb::bwd_tile_schedule(J, *this);
          if (pending_dq_ >= 0) reduction(pending_dq_);  // the reduction warps drain the last dQ
          g.steps += J;
          B::epilogue(*cta_, tmem_, kb_, J > 0, kBase + L::kOffDs, kBase + L::kOffQ);
          REQUIRE(cta_->tmem.dealloc(tmem_, Plan::kTmemCols) == EmuError::kOk);
        }
    cta_->tmem.relinquish();
    CHECK(cta_->tmem.at_exit() == EmuError::kOk);
    B::finish(g);
    return g;
  }

  // ---- the visitor of fb::bwd_tile_schedule: the MMA thread's walk ----
  void wait_kv() {
    for (int c = 0; c < D / fb::kChunkElems; ++c) {
      tma_load(cta_->smem, kBase + L::kOffK + Plan::chunk(fb::kBlockN, c), B::k_, c * fb::kChunkElems,
               kb_.n_block * fb::kBlockN, kb_.head_kv, kb_.batch, fb::kBlockN);
      tma_load(cta_->smem, kBase + L::kOffV + Plan::chunk(fb::kBlockN, c), B::v_, c * fb::kChunkElems,
               kb_.n_block * fb::kBlockN, kb_.head_kv, kb_.batch, fb::kBlockN);
    }
  }
  void wait_q(int j) {
    const int m = kb_.m_begin + j;
    for (int c = 0; c < D / fb::kChunkElems; ++c)
      tma_load(cta_->smem, q_smem() + Plan::chunk(fb::kBlockM, c), B::q_, c * fb::kChunkElems, m * fb::kBlockM,
               kb_.head, kb_.batch, fb::kBlockM);
  }
  void wait_do(int j) {
    const int m = kb_.m_begin + j;
    for (int c = 0; c < D / fb::kChunkElems; ++c)
      tma_load(cta_->smem, do_smem() + Plan::chunk(fb::kBlockM, c), B::do_, c * fb::kChunkElems, m * fb::kBlockM,
               kb_.head, kb_.batch, fb::kBlockM);
  }
  void wait_s_free(int) {}  // dV completed: every emulated MMA completes at issue
  void wait_dq_free(int) {
    if (mut_ == Mutation::kDpBeforeDqFree) return;  // the reduction drains only after the next dP^T
    reduction(pending_dq_);
    pending_dq_ = -1;
  }
  void wait_p_ready(int j) { B::compute(*cta_, tmem_, kb_, j, kBase + L::kOffDs, -1, 0, ds_pending_); }
  void wait_ds_ready(int) {
    if (mut_ != Mutation::kDqBeforeDsReady) B::publish(*cta_, ds_pending_);
  }
  void issue_s(int) {
    for (uint32_t s = 0; s < Plan::kSdpSteps; ++s) B::mma(ctas_, Plan::s_t(tmem_, kBase + L::kOffK, q_smem(), s));
  }
  void issue_dp(int) {
    for (uint32_t s = 0; s < Plan::kSdpSteps; ++s) B::mma(ctas_, Plan::dp_t(tmem_, kBase + L::kOffV, do_smem(), s));
    if (mut_ == Mutation::kDpBeforeDqFree && pending_dq_ >= 0) {
      reduction(pending_dq_);
      pending_dq_ = -1;
    }
  }
  void issue_dv(int j) {
    for (uint32_t s = 0; s < Plan::kDkvSteps; ++s) {
      fb::Issue is = Plan::dv(tmem_, do_smem(), s, j > 0);
      if (mut_ == Mutation::kPContiguous) is.a_tmem = tmem_ + Plan::kSCol + flashptx::umma::tmem_kstep_columns(s);
      B::mma(ctas_, is);
    }
  }
  void issue_dk(int j) {
    for (uint32_t s = 0; s < Plan::kDkvSteps; ++s) {
      fb::Issue is = Plan::dk(tmem_, kBase + L::kOffDs, q_smem(), s, j > 0);
      if (mut_ == Mutation::kDkNoAccumulate) is.accumulate = s > 0;
      B::mma(ctas_, is);
    }
  }
  void issue_dq(int j) {
    for (uint32_t s = 0; s < Plan::kDqSteps; ++s) {
      fb::Issue is = Plan::dq(tmem_, kBase + L::kOffDs, kBase + L::kOffK, s);
      if (mut_ == Mutation::kDqReadsDsTransposed) {
        is.a_desc = Plan::kmajor(fb::kBlockN).desc(kBase + L::kOffDs, s);
        is.idesc = Plan::kIdescDkv;  // A K-major, B MN-major
      }
      B::mma(ctas_, is);
    }
    if (mut_ == Mutation::kDqBeforeDsReady) B::publish(*cta_, ds_pending_);
    pending_dq_ = j;
  }
  void commit_sdp_full(int) {}
  void commit_p_free(int) {}
  void commit_dq_full(int) {}
  void commit_ds_free(int) {}
  void commit_qdo_empty(int) { ring_.advance(); }
  void commit_dkv_full() {}

 private:
  uint32_t q_smem() const { return kBase + L::kOffQ + ring_.stage * Plan::kQBytes; }
  uint32_t do_smem() const { return kBase + L::kOffDo + ring_.stage * Plan::kQBytes; }

  // The reduction warps on step j: dQ out of TMEM 32 columns at a time, staged, bulk-added.
  void reduction(int j) {
    if (j < 0) return;
    float* dst = B::dq_tile(kb_, j);
    for (int c = 0; c < D / fb::kDqChunkCols; ++c) {
      const uint32_t stage = kBase + L::kOffDqStage + static_cast<uint32_t>(c % 2) * fb::kDqChunkBytes;
      for (int warp = 0; warp < fb::kReductionWarps; ++warp) {
        std::vector<uint32_t> r;
        B::ok(emu::ld_32x32b(cta_->tmem, warp, Plan::dq_taddr(tmem_, warp, c), fb::kDqChunkCols, &r), "dQ ld");
        for (int th = 0; th < 32; ++th) {
          const uint32_t t = static_cast<uint32_t>(32 * warp + th);
          for (uint32_t un = 0; un < fb::kDqChunkCols / 4; ++un)
            std::memcpy(&cta_->smem.bytes[stage + fb::dq_stage_byte(t, un)], &r[th * fb::kDqChunkCols + 4 * un], 16);
        }
      }
      B::bulk_add(*cta_, stage, dst + c * fb::kBlockM * fb::kDqChunkCols, fb::kDqChunkBytes);
    }
  }

  std::unique_ptr<emu::Cta> cta_;
  std::vector<emu::Cta*> ctas_;
  uint32_t tmem_ = 0;
  fb::KeyBlock kb_{};
  flashptx::RingState<C.stages> ring_ = flashptx::RingState<C.stages>::consumer_start();
  int pending_dq_ = -1;
  std::vector<typename B::Unit> ds_pending_;
};

// The 2-CTA kernel (src/sm100/fa4_bwd_pair.cuh): a cluster of two CTAs, every MMA cta_group::2 over
// both emulated CTAs (the emulator's Layouts A and B), the loads of each CTA's share, the dS exchange
// (a 16 KiB copy between the two shared-memory images, at ds_ready: the relays' x_full), the dQ
// read-out of Layout B. The grid's pairs are taken in turn by one simulated pair.
template <bool Bf16>
class PairReplay : public ReplayBase<fp::kHeadDim, Bf16> {
  using B = ReplayBase<fp::kHeadDim, Bf16>;
  using B::mut_;
  using B::sh_;
  using B::kBase;

 public:
  using L = fb::BwdPairLayout<Bf16>;
  using Plan = typename L::Plan;
  static constexpr int D = fp::kHeadDim;
  using B::B;

  Grads run(bool deterministic) {
    Grads g;
    B::start(g);
    for (auto& c : cta_) c = std::make_unique<emu::Cta>();
    ctas_ = {cta_[0].get(), cta_[1].get()};
    const int pairs = fp::pair_count(B::n_blocks_);
    for (int b = 0; b < sh_.batch; ++b)
      for (int h = 0; h < sh_.hq; ++h)
        for (int pi = 0; pi < pairs; ++pi) {
          for (int r = 0; r < 2; ++r)
            kb_[r] = fp::pair_key_block(2 * pi + r, h, b, B::n_blocks_, B::m_blocks_, sh_.hq, sh_.hkv, sh_.sq, sh_.sk,
                                        sh_.causal, deterministic);
          REQUIRE(kb_[0].m_begin == kb_[1].m_begin);  // the pair walks one schedule
          REQUIRE(emu::alloc_pair(cta_[0]->tmem, cta_[1]->tmem, Plan::kTmemCols, &tmem_) == EmuError::kOk);
          pending_dq_ = -1;
          const int J = kb_[0].m_end - kb_[0].m_begin;
          fb::bwd_tile_schedule(J, *this);
          if (pending_dq_ >= 0) reduction(pending_dq_);
          g.steps += J;
          for (int r = 0; r < 2; ++r) {
            if (kb_[r].n_block < B::n_blocks_)  // a pair's second block past the keys writes nothing
              B::epilogue(*cta_[r], tmem_, kb_[r], J > 0, kBase + L::kOffDs, kBase + L::kOffXa);
            REQUIRE(cta_[r]->tmem.dealloc(tmem_, Plan::kTmemCols) == EmuError::kOk);
          }
        }
    for (auto& c : cta_) {
      c->tmem.relinquish();
      CHECK(c->tmem.at_exit() == EmuError::kOk);
    }
    B::finish(g);
    return g;
  }

  // ---- the visitor of fb::bwd_tile_schedule: the leader's MMA thread ----
  // kv_full (both CTAs' TMA, the peer's through its relay): K, V of the CTA's block; XB: block b of the
  // pair's K, this CTA's 64 head-dim columns.
  void wait_kv() {
    for (int r = 0; r < 2; ++r) {
      emu::Smem& sm = cta_[r]->smem;
      const fb::KeyBlock& kb = kb_[r];
      for (int c = 0; c < D / fb::kChunkElems; ++c) {
        tma_load(sm, kBase + L::kOffK + Plan::One::chunk(fb::kBlockN, c), B::k_, c * fb::kChunkElems,
                 kb.n_block * fb::kBlockN, kb.head_kv, kb.batch, fb::kBlockN);
        tma_load(sm, kBase + L::kOffV + Plan::One::chunk(fb::kBlockN, c), B::v_, c * fb::kChunkElems,
                 kb.n_block * fb::kBlockN, kb.head_kv, kb.batch, fb::kBlockN);
      }
      for (int blk = 0; blk < 2; ++blk) {
        const int n = (mut_ == Mutation::kXbOwnKOnly) ? kb.n_block : 2 * (kb.n_block / 2) + blk;
        tma_load(sm, kBase + L::kOffXb + blk * Plan::kXBlockBytes, B::k_, r * fb::kChunkElems, n * fb::kBlockN,
                 kb.head_kv, kb.batch, fb::kBlockN);
      }
    }
  }
  // QS: this CTA's 64 queries, boxes (64 columns, 64 rows); QD: its 64 head-dim columns of all 128 queries.
  void load_q_do(const Tensor& t, uint32_t qs, uint32_t qd, int j) {
    for (int r = 0; r < 2; ++r) {
      const fb::KeyBlock& kb = kb_[r];
      const int m = kb.m_begin + j;
      for (int c = 0; c < D / fb::kChunkElems; ++c)
        tma_load(cta_[r]->smem, kBase + qs + Plan::kmajor(Plan::kHalf).kstep_offset(4 * c), t, c * fb::kChunkElems,
                 m * fb::kBlockM + 64 * r, kb.head, kb.batch, 64);
      for (int hh = 0; hh < 2; ++hh)
        tma_load(cta_[r]->smem, kBase + qd + hh * 64 * fb::kSwizzleRow, t, r * fb::kChunkElems, m * fb::kBlockM + 64 * hh,
                 kb.head, kb.batch, 64);
    }
  }
  // The loads of step j follow qdo_empty(j - 1), which counts the reduction's arrive once its staging
  // in QS / dOS has been read: the previous dQ drains first.
  void wait_q(int j) {
    reduction(pending_dq_);
    pending_dq_ = -1;
    load_q_do(B::q_, L::kOffQs, L::kOffQd, j);
  }
  void wait_do(int j) { load_q_do(B::do_, L::kOffDos, L::kOffDod, j); }
  void wait_s_free(int) {}
  void wait_dq_free(int) {}  // drained before the loads of this step (wait_q)
  void wait_p_ready(int j) {
    for (int r = 0; r < 2; ++r)
      B::compute(*cta_[r], tmem_, kb_[r], j, kBase + L::kOffDs, r, kBase + L::kOffXa, pending_[r]);
  }
  // ds_ready: both CTAs' compute warps (their stores published) and both relays (x_full: the peer's
  // half landed in this CTA's XA block 1 - r).
  void wait_ds_ready(int) {
    for (int r = 0; r < 2; ++r) B::publish(*cta_[r], pending_[r]);
    if (mut_ != Mutation::kDqBeforeExchange) exchange();
  }
  void exchange() {
    if (mut_ == Mutation::kNoExchange) return;
    for (uint32_t r = 0; r < 2; ++r) {
      const uint32_t src = kBase + L::kOffDs + (mut_ == Mutation::kWrongPeerHalf ? Plan::send_dst(r) : Plan::send_src(r));
      std::memcpy(&cta_[1 - r]->smem.bytes[kBase + L::kOffXa + Plan::send_dst(r)], &cta_[r]->smem.bytes[src],
                  Plan::kXBlockBytes);
    }
  }
  void issue_s(int) {
    for (uint32_t s = 0; s < Plan::kSdpSteps; ++s)
      B::mma(ctas_, Plan::s_t(tmem_, kBase + L::kOffK, kBase + L::kOffQs, s));
  }
  void issue_dp(int) {
    for (uint32_t s = 0; s < Plan::kSdpSteps; ++s)
      B::mma(ctas_, Plan::dp_t(tmem_, kBase + L::kOffV, kBase + L::kOffDos, s));
  }
  void issue_dv(int j) {
    for (uint32_t s = 0; s < Plan::kDkvSteps; ++s) B::mma(ctas_, Plan::dv(tmem_, kBase + L::kOffDod, s, j > 0));
  }
  void issue_dk(int j) {
    for (uint32_t s = 0; s < Plan::kDkvSteps; ++s)
      B::mma(ctas_, Plan::dk(tmem_, kBase + L::kOffDs, kBase + L::kOffQd, s, j > 0));
  }
  void issue_dq(int j) {
    for (uint32_t s = 0; s < Plan::kDqSteps; ++s)
      B::mma(ctas_, Plan::dq(tmem_, kBase + L::kOffXa, kBase + L::kOffXb, s));
    if (mut_ == Mutation::kDqBeforeExchange) exchange();
    pending_dq_ = j;
  }
  void commit_sdp_full(int) {}
  void commit_p_free(int) {}
  void commit_dq_full(int) {}
  void commit_ds_free(int) {}
  void commit_qdo_empty(int) {}
  void commit_dkv_full() {}

 private:
  // The reduction warps of both CTAs on step j: warp w reads its two 32-column chunks of Layout B
  // (rows 32 (w % 2) + lane, columns 64 (w / 2) + 32 c), stages them (8 KiB a chunk, QS / dOS), and
  // thread 0 bulk-adds the four chunks: rows [64 r, +64) of each 32-column chunk of the accumulator.
  void reduction(int j) {
    if (j < 0) return;
    for (int r = 0; r < 2; ++r) {
      float* dst = B::dq_tile(kb_[r], j);
      for (int warp = 0; warp < fb::kReductionWarps; ++warp)
        for (int c = 0; c < 2; ++c) {
          std::vector<uint32_t> v;
          B::ok(emu::ld_32x32b(cta_[r]->tmem, warp, Plan::One::dq_taddr(tmem_, warp, c), fb::kDqChunkCols, &v), "dQ ld");
          const int chunk = Plan::dq_chunk(warp, c) ^ (mut_ == Mutation::kDqFoldSwapped ? 2 : 0);
          const uint32_t stage = kBase + L::dq_stage(chunk);
          for (int th = 0; th < 32; ++th) {
            const int row = Plan::dq_row(warp, th);
            for (uint32_t un = 0; un < fb::kDqChunkCols / 4; ++un)
              std::memcpy(&cta_[r]->smem.bytes[stage + fb::dq_stage_byte(static_cast<uint32_t>(row), un)],
                          &v[th * fb::kDqChunkCols + 4 * un], 16);
          }
        }
      for (int c = 0; c < D / fb::kDqChunkCols; ++c)
        B::bulk_add(*cta_[r], kBase + L::dq_stage(c), dst + fb::dq_accum_index(64 * r, 32 * c), L::kDqStageChunkBytes);
    }
  }

  std::unique_ptr<emu::Cta> cta_[2];
  std::vector<emu::Cta*> ctas_;
  uint32_t tmem_ = 0;
  fb::KeyBlock kb_[2]{};
  int pending_dq_ = -1;
  std::vector<typename B::Unit> pending_[2];
};

// ---- one problem: inputs, the preprocess, the replay, the references, the rule ------------------------
struct Verdict {
  double err[3] = {}, tol[3] = {};  // dQ, dK, dV
  long mmas = 0, steps = 0;
  bool passes() const { return err[0] <= tol[0] && err[1] <= tol[1] && err[2] <= tol[2]; }
};

// Half an ulp of a 16-bit format (bf16: 8 significant bits, fp16: 11) at magnitude x (as in
// tests/host/test_fa4_replay.cpp, where the same widening is argued).
double half_ulp16(bool bf16, double x) {
  if (!(x > 0)) return 0;
  int exp2 = 0;
  std::frexp(x, &exp2);  // x = f 2^exp2, f in [0.5, 1): the binade's ulp is 2^(exp2 - bits)
  return std::ldexp(0.5, exp2 - (bf16 ? 8 : 11));
}

template <fb::BwdConfig C, bool Pair = false>
Verdict run_problem(const Shape& sh, uint32_t seed, Mutation mut, bool deterministic = false) {
  static_assert(!Pair || C.head_dim == fp::kHeadDim, "the 2-CTA form is d = 128 only");
  constexpr int D = C.head_dim;
  std::mt19937 rng(seed);
  const Tensor q = random_tensor(rng, C.bf16, sh.batch, sh.sq, sh.hq, D);
  const Tensor k = random_tensor(rng, C.bf16, sh.batch, sh.sk, sh.hkv, D);
  const Tensor v = random_tensor(rng, C.bf16, sh.batch, sh.sk, sh.hkv, D);
  const Tensor dout = random_tensor(rng, C.bf16, sh.batch, sh.sq, sh.hq, D);
  ref::Problem rp = ref::problem(sh.batch, sh.sq, sh.sk, sh.hq, sh.hkv, D, sh.causal);
  const ref::Elem el = C.bf16 ? ref::Elem::kBF16 : ref::Elem::kFP16;
  const auto qv = ref::contiguous_q(q.x.data(), el, rp), kv = ref::contiguous_kv(k.x.data(), el, rp),
             vv = ref::contiguous_kv(v.x.data(), el, rp), dov = ref::contiguous_q(dout.x.data(), el, rp);
  // The forward's outputs, as the kernel receives them: O in the dtype, LSE in fp32. The preprocess
  // (src/sm90/fa3_bwd_aux.cuh's arithmetic): delta = rowsum(dO O) in fp32, LSE2 = LSE log2(e), +inf on
  // padded rows and on rows that saw no key.
  const ref::Forward fw = ref::forward(rp, qv, kv, vv);
  const int m_blocks = (sh.sq + fb::kBlockM - 1) / fb::kBlockM;
  std::vector<float> lse2(static_cast<size_t>(sh.batch) * sh.hq * m_blocks * fb::kBlockM, INFINITY);
  std::vector<float> delta(lse2.size(), 0.0f);
  for (int b = 0; b < sh.batch; ++b)
    for (int h = 0; h < sh.hq; ++h)
      for (int r = 0; r < sh.sq; ++r) {
        const size_t i = (static_cast<size_t>(b) * sh.hq + h) * m_blocks * fb::kBlockM + r;
        const float lse = static_cast<float>(fw.lse_at(rp, b, h, r));
        lse2[i] = lse == -INFINITY ? INFINITY : lse * 1.4426950408889634f;
        // The preprocess's order (fa3_bwd_aux.cuh preprocess_body): d/8 threads per row, each summing its
        // 8 products in fp32 in pairs, then a butterfly over the threads.
        float part[D / 8];
        for (int t = 0; t < D / 8; ++t) {
          part[t] = 0.0f;
          for (int e = 8 * t; e < 8 * t + 8; e += 2) {
            const float o0 = static_cast<float>(from16(C.bf16, to16(C.bf16, static_cast<float>(fw.o_at(rp, b, r, h, e)))));
            const float o1 = static_cast<float>(from16(C.bf16, to16(C.bf16, static_cast<float>(fw.o_at(rp, b, r, h, e + 1)))));
            const float d0 = static_cast<float>(from16(C.bf16, dout.x[dout.at(b, r, h, e)]));
            const float d1 = static_cast<float>(from16(C.bf16, dout.x[dout.at(b, r, h, e + 1)]));
            part[t] += o0 * d0 + o1 * d1;
          }
        }
        for (int off = D / 16; off > 0; off /= 2) {
          float next[D / 8];
          for (int t = 0; t < D / 8; ++t) next[t] = part[t] + part[t ^ off];
          for (int t = 0; t < D / 8; ++t) part[t] = next[t];
        }
        delta[i] = part[0];
      }
  std::conditional_t<Pair, PairReplay<C.bf16>, Replay<C>> rep(sh, q, k, v, dout, lse2, delta, mut);
  const Grads g = rep.run(deterministic);
  const auto r64 = ref::backward(rp, qv, kv, vv, dov);
  const auto same = ref::backward(rp, qv, kv, vv, dov, C.bf16 ? flashptx::Round::kBF16 : flashptx::Round::kFP16);
  Verdict vd;
  vd.mmas = g.mmas;
  vd.steps = g.steps;
  const std::vector<uint16_t>* xs[3] = {&g.dq, &g.dk, &g.dv};
  const std::vector<double>* rs[3] = {&r64.dq, &r64.dk, &r64.dv};
  const std::vector<double>* ss[3] = {&same.dq, &same.dk, &same.dv};
  const std::vector<double>* envs[3] = {&r64.dq_env, &r64.dk_env, nullptr};
  for (int t = 0; t < 3; ++t) {
    double err = 0, sd = 0, env = 0, gmax = 0;
    for (size_t i = 0; i < xs[t]->size(); ++i) {
      const double d = std::fabs(from16(C.bf16, (*xs[t])[i]) - (*rs[t])[i]);
      err = (d <= err) ? err : (std::isnan(d) ? INFINITY : d);
      sd = std::max(sd, std::fabs((*ss[t])[i] - (*rs[t])[i]));
      gmax = std::max(gmax, std::fabs((*rs[t])[i]));
    }
    if (envs[t] != nullptr)
      for (double e : *envs[t]) env = std::max(env, e);
    vd.err[t] = err;
    // The GPU tests' rule, widened by half an output ulp at the largest |g|: the gradient's own 16-bit
    // quantization. Where the kernel's fp32 value lands a hair across a rounding midpoint its element is
    // a full ulp from fp64, while the same-dtype reference's worst element may have rounded closely
    // (without it, 1500 fresh-seed cases reached 0.97 of the rule; the mutations stay 100x past it).
    vd.tol[t] = 2 * sd + 1e-5 + env + half_ulp16(C.bf16, gmax);
  }
  return vd;
}

std::string describe(const Verdict& v) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "dQ %.3g (tol %.3g), dK %.3g (tol %.3g), dV %.3g (tol %.3g); %ld MMAs, %ld steps",
                v.err[0], v.tol[0], v.err[1], v.tol[1], v.err[2], v.tol[2], v.mmas, v.steps);
  return buf;
}

// Two key blocks (the last partial), two query blocks (the last partial): masked keys and padded rows;
// causal with seqlen_q < seqlen_k (bottom-right: a key block whose first query block is not 0) and
// seqlen_q > seqlen_k (rows that see no key); GQA (dK, dV summed over the group); batch and head
// offsets of LSE2/delta, the dQ accumulator, dK/dV. The 2-CTA kernel also on pairs of every kind: an
// odd number of key blocks (the last pair's second CTA past the keys), causal where the pair's second
// block starts below the first's query blocks, four key blocks (two pairs adding each dQ tile).
template <fb::BwdConfig C, bool Pair = false>
void check_shapes(const char* name, bool deterministic = false) {
  const uint32_t seed = fresh_seed();
  INFO(name << " seed " << seed);
  const Shape shapes[] = {
      {1, 200, 250, 1, 1, false}, {1, 200, 250, 1, 1, true}, {1, 300, 130, 1, 1, true}, {1, 130, 200, 2, 1, false},
      {2, 70, 140, 2, 2, true},   {1, 256, 500, 1, 1, false}, {1, 400, 390, 1, 1, true},
  };
  for (size_t i = 0; i < (Pair ? 7u : 5u); ++i) {
    const Shape& sh = shapes[i];
    const Verdict v = run_problem<C, Pair>(sh, seed, Mutation::kNone, deterministic);
    INFO("b" << sh.batch << " sq" << sh.sq << " sk" << sh.sk << " hq" << sh.hq << " hkv" << sh.hkv
             << std::string(sh.causal ? " causal" : "") << ": " << describe(v));
    if (std::getenv("FLASHPTX_REPLAY_VERBOSE")) MESSAGE(describe(v));
    CHECK(v.passes());
    // Five MMAs per step: S^T and dP^T over the head dim, dV and dK over 128 queries, dQ over the keys
    // (128; the pair's 256).
    using P = std::conditional_t<Pair, typename fb::BwdPairLayout<C.bf16>::Plan, typename fb::BwdLayout<C>::Plan>;
    CHECK(v.mmas == v.steps * (2 * P::kSdpSteps + 2 * P::kDkvSteps + P::kDqSteps));
  }
}

struct NamedMutation {
  Mutation m;
  const char* name;
};
// Each mutation fails the rule on one problem; the unmutated run of the same problem passes.
template <fb::BwdConfig C, bool Pair, size_t N>
void check_mutations(const NamedMutation (&ms)[N]) {
  const uint32_t seed = fresh_seed();
  INFO("seed " << seed);
  const Shape sh{1, 200, 250, 1, 1, false};
  for (const NamedMutation& m : ms) {
    const Verdict v = run_problem<C, Pair>(sh, seed, m.m);
    INFO(std::string(m.name) << ": " << describe(v));
    if (std::getenv("FLASHPTX_REPLAY_VERBOSE")) MESSAGE((std::string(m.name) + ": " + describe(v)));
    CHECK_FALSE(v.passes());
  }
  CHECK(run_problem<C, Pair>(sh, seed, Mutation::kNone).passes());
}

}  // namespace

TEST_SUITE("host fa4 backward replay") {
  TEST_CASE("2-CTA d128 bf16: the pair kernel's issue sequence (cta_group::2, the dS exchange) matches fp64") {
    check_shapes<fb::kBwdD128, true>("2-CTA d128 bf16");
  }
  TEST_CASE("2-CTA d128 fp16") { check_shapes<fb::fp16(fb::kBwdD128), true>("2-CTA d128 fp16"); }
  TEST_CASE("2-CTA deterministic (causal pairs from the last) and its writer locks") {
    check_shapes<fb::kBwdD128, true>("2-CTA d128 bf16 deterministic", true);
    // Three pairs over query block 2 of a square causal problem (768 keys, 768 queries): the pairs
    // that see it are 0 and 1 (pair 2's first key is 512 > row 383); SPT: pair 1 writes first.
    CHECK(fp::pair_dq_lock(2, 2, 768, 768, true) == 0);  // pair 1, rank 0
    CHECK(fp::pair_dq_lock(3, 2, 768, 768, true) == 1);  // pair 1, rank 1
    CHECK(fp::pair_dq_lock(0, 2, 768, 768, true) == 2);
    CHECK(fp::pair_dq_lock(1, 2, 768, 768, true) == 3);
    CHECK(fp::pair_dq_lock(5, 0, 768, 768, false) == 5);  // dense: 2 p + rank
    const fb::KeyBlock a = fp::pair_key_block(0, 0, 0, 6, 6, 1, 1, 768, 768, true, true);
    const fb::KeyBlock b = fp::pair_key_block(1, 0, 0, 6, 6, 1, 1, 768, 768, true, true);
    CHECK((a.n_block == 4 && b.n_block == 5 && a.m_begin == 4 && b.m_begin == 4));  // the last pair first
  }
  TEST_CASE("2-CTA mutations (the exchange, the peer half, the pair layouts) fail the replay") {
    const NamedMutation ms[] = {
        {Mutation::kNoExchange, "dS exchange skipped"},
        {Mutation::kWrongPeerHalf, "the wrong dS half sent to the peer"},
        {Mutation::kDqBeforeExchange, "dQ issued before the exchange landed (x_full)"},
        {Mutation::kDqFoldSwapped, "dQ's Layout B column halves read the other way round"},
        {Mutation::kXbOwnKOnly, "dQ's B without the peer key block's K"},
        {Mutation::kDsUnswizzled, "dS^T stored without the swizzle"},
    };
    check_mutations<fb::kBwdD128, true>(ms);
  }
  TEST_CASE("d128 bf16: the kernel's issue sequence through the tcgen05 emulator matches fp64") {
    check_shapes<fb::kBwdD128>("d128 bf16");
  }
  TEST_CASE("d128 fp16") { check_shapes<fb::fp16(fb::kBwdD128)>("d128 fp16"); }
  TEST_CASE("d64 bf16 (two Q/dO stages)") { check_shapes<fb::kBwdD64>("d64 bf16"); }
  TEST_CASE("d64 fp16") { check_shapes<fb::fp16(fb::kBwdD64)>("d64 fp16"); }
  TEST_CASE("deterministic causal visits key blocks from the last (the SPT order's first writer)") {
    const uint32_t seed = fresh_seed();
    INFO("seed " << seed);
    const Verdict v = run_problem<fb::kBwdD64>({1, 200, 250, 1, 1, true}, seed, Mutation::kNone, true);
    INFO(describe(v));
    CHECK(v.passes());
    const fb::KeyBlock a = fb::key_block(0, 0, 0, 2, 2, 1, 1, 200, 250, true, true);
    CHECK(a.n_block == 1);
    CHECK(fb::dq_lock(a.n_block, 1, 200, 250, true) == 0);  // the first writer of the last dQ tile
  }
  TEST_CASE("mutations of the plan and of the issue order fail the replay") {
    const NamedMutation ms[] = {
        {Mutation::kDqReadsDsTransposed, "dQ reads dS^T K-major (the transpose lost)"},
        {Mutation::kPContiguous, "dV reads P^T from contiguous columns"},
        {Mutation::kDsUnswizzled, "dS^T stored without the swizzle"},
        {Mutation::kDkNoAccumulate, "dK restarts at every query block"},
        {Mutation::kDqBeforeDsReady, "dK and dQ issued before ds_ready"},
        {Mutation::kDpBeforeDqFree, "dP^T issued before dq_free"},
    };
    check_mutations<fb::kBwdD64, false>(ms);
  }
}
