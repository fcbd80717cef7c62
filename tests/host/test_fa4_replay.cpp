// The FA4 forward kernel (src/sm100/fa4_fwd.cuh) replayed through the tcgen05 emulator on the CPU.
//
// No Blackwell GPU ran this kernel. What this test establishes instead: the descriptors, TMEM columns,
// K-step advances, MMA order and softmax/correction arithmetic the kernel issues compute attention.
// It runs the kernel's own code where the kernel has it:
//   - fa4::mma_tile_schedule, the MMA warp's walk of a tile (waits, K steps, commits), with a visitor
//     that executes each tcgen05.mma through tools/models/tcgen05_emulator with the operands MmaPlan
//     computes (qk(), pv(): descriptors, TMEM addresses, enable-input-d), and runs the softmax and the
//     correction where the MMA thread waits for them;
//   - the softmax of a row (key_limit, row_max, reference_step, exp_pack_fragment with the kernel's
//     emulation split, row_accumulate), reading S and writing P through the emulator's tcgen05.ld/st
//     .32x32b at the kernel's TMEM addresses (s_taddr, p_taddr), warp by warp (lane quarters);
//   - the correction (row_needs_rescale with the warp vote, rescale at o_taddr) and the epilogue
//     (inverse_sum, normalise, the staging tile at o_stage_addr, row_lse);
//   - fa4::tile_at and the K/V ring (RingState) over all tiles of the problem, one simulated CTA (or
//     pair) taking them in turn, so ring slots, TMEM columns and phases carry across tiles as they do
//     in a persistent CTA.
// What stands in for hardware the emulator does not model: the TMA (a box written / read with the
// 128-byte swizzle on the shared-memory address, zeros outside the tensor: CUDA's
// CU_TENSOR_MAP_SWIZZLE_128B, read from the documentation), and MUFU.EX2 (the correctly rounded 2^x,
// flushed to zero below the normal range; the ISA allows 2^-22 relative error).
// The result is compared with tools/support/reference.h (fp64) under FlashAttention's rule,
// max|O - ref| <= 2 max|O_same_dtype - ref| + 1e-5 (the same-dtype reference rounding P to the dtype),
// widened by half an output ulp at the largest |O| (see Errors below for why).
// Mutations of the plan (a K advance that ignores the swizzle atom, a V advance of 32 bytes, P read
// from S's first columns, no rescale) must fail it.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "src/protocol/fa4_plan.h"
#include "src/protocol/online_softmax.h"
#include "src/protocol/ring.h"
#include "tools/models/tcgen05_emulator.h"
#include "src/sm100/fa4_fwd_config.h"
#include "tools/support/dtype.h"
#include "tools/support/reference.h"
#include "tests/host/replay_util.h"

namespace emu = flashptx::models::tcgen05;
namespace fa4 = flashptx::fa4;
namespace ref = flashptx::ref;
using emu::EmuError;

namespace {

using flashptx_test::fresh_seed;
using flashptx_test::HostMath;

using fa4::fp16;
using fa4::kD128;
using fa4::kD128Pair;
using fa4::kD64;

uint16_t to16(bool bf16, double x) { return bf16 ? flashptx::double_to_bf16(x) : flashptx::double_to_fp16(x); }

// ---- the problem -------------------------------------------------------------------------------------
struct Problem {
  int batch = 1, sq = 1, sk = 1, hq = 1, hkv = 1;
  bool causal = false;
  double sigma = 1.0;  // input spread: larger moves the row maxima across blocks (rescales)
};

// [batch, seqlen, heads, d] contiguous 16-bit tensors.
struct Tensor {
  int seqlen = 0, heads = 0, d = 0, batch = 0;
  std::vector<uint16_t> x;
  size_t at(int b, int s, int h, int e) const {
    return ((static_cast<size_t>(b) * seqlen + s) * heads + h) * d + e;
  }
};

Tensor random_tensor(std::mt19937& rng, bool bf16, int batch, int seqlen, int heads, int d, double sigma) {
  Tensor t{seqlen, heads, d, batch, {}};
  std::normal_distribution<double> nd(0.0, sigma);
  t.x.resize(static_cast<size_t>(batch) * seqlen * heads * d);
  for (auto& v : t.x) v = to16(bf16, nd(rng));
  return t;
}

enum class Mutation {
  kNone,
  kQkAdvanceIgnoresAtom,  // QK descriptors advanced by 32 B per K step, across the 64-element atoms too
  kVAdvance32,            // V descriptor advanced by 32 B per K step (16 keys are 2 x SBO = 2048 B)
  kPFromSHead,            // PV reads A at S_i's first columns instead of P_i's (the tail half)
  kNoRescale,             // the correction never rescales O
};

struct Outcome {
  std::vector<uint16_t> o;  // [batch, sq, hq, d]
  std::vector<float> lse;   // [batch, hq, sq]
  long rescale_warps = 0, correction_warps = 0;  // warp steps (j > 0) that rescaled / all of them
  long mmas = 0;
};

// ---- the TMA, as the tensor maps of src/plan.cpp describe it -------------------------------------
// Box (64 elements, rows) of a 2-byte [batch, seqlen, heads, d] tensor at (c0, row0, h, b), 128-byte
// swizzle: box row r, element e lands at dst + 128 r + 2 e with the 16-byte unit XORed with bits 7-9
// of the address (dst 1024-aligned); rows or columns outside the tensor read as zero.
uint32_t swizzle128(uint32_t a) { return a ^ (((a >> 7) & 7u) << 4); }
void tma_load(emu::Smem& sm, uint32_t dst, const Tensor& t, int c0, int row0, int h, int b, int rows) {
  REQUIRE(dst % 1024 == 0);
  REQUIRE(dst + static_cast<uint32_t>(rows * 128) <= emu::kSmemBytes);
  for (int r = 0; r < rows; ++r)
    for (int e = 0; e < fa4::kChunkElems; ++e) {
      const int s = row0 + r, col = c0 + e;
      const uint16_t v = (s >= 0 && s < t.seqlen && col < t.d) ? t.x[t.at(b, s, h, col)] : uint16_t{0};
      std::memcpy(&sm.bytes[swizzle128(dst + static_cast<uint32_t>(r * 128 + e * 2))], &v, 2);
    }
}
void tma_store(const emu::Smem& sm, uint32_t src, Tensor& t, int c0, int row0, int h, int b, int rows) {
  for (int r = 0; r < rows; ++r)
    for (int e = 0; e < fa4::kChunkElems; ++e) {
      const int s = row0 + r, col = c0 + e;
      if (s < 0 || s >= t.seqlen || col >= t.d) continue;  // clipped
      uint16_t v;
      std::memcpy(&v, &sm.bytes[swizzle128(src + static_cast<uint32_t>(r * 128 + e * 2))], 2);
      t.x[t.at(b, s, h, col)] = v;
    }
}

// ---- the replay --------------------------------------------------------------------------------------
template <fa4::FwdConfig C>
class Replay {
 public:
  using L = fa4::FwdLayout<C>;
  using Plan = typename L::Plan;
  static constexpr int G = C.cta_group, D = C.head_dim;

  Replay(const Problem& pr, const Tensor& q, const Tensor& k, const Tensor& v, Mutation mut, uint32_t smem_base)
      : pr_(pr), q_(q), k_(k), v_(v), mut_(mut), base_(smem_base) {
    for (int r = 0; r < G; ++r) {
      ctas_.push_back(std::make_unique<emu::Cta>());
      cta_ptrs_.push_back(ctas_.back().get());
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    lambda_ = scale * 1.4426950408889634f;  // src/plan.cpp encode_fwd_args: softmax_scale_log2
  }

  Outcome run() {
    Outcome out;
    out_ = &out;
    Tensor o{pr_.sq, pr_.hq, D, pr_.batch, {}};
    o.x.assign(static_cast<size_t>(pr_.batch) * pr_.sq * pr_.hq * D, uint16_t{0xFFFF});  // NaN: unwritten fails
    o_ = &o;
    out.lse.assign(static_cast<size_t>(pr_.batch) * pr_.hq * pr_.sq, std::nanf(""));
    // Warp 12's allocation: all 512 columns (a pair: the same columns in both CTAs).
    if (G == 1) REQUIRE(ctas_[0]->tmem.alloc(Plan::kTmemCols, &tmem_) == EmuError::kOk);
    else REQUIRE(emu::alloc_pair(ctas_[0]->tmem, ctas_[1]->tmem, Plan::kTmemCols, &tmem_) == EmuError::kOk);
    REQUIRE(tmem_ == 0u);
    const int m_blocks = (pr_.sq + fa4::tile_rows(G) - 1) / fa4::tile_rows(G);
    const int tiles = m_blocks * pr_.hq * pr_.batch;
    for (int index = 0; index < tiles; ++index) {
      tile_ = fa4::tile_at(index, m_blocks, pr_.hq, pr_.hkv, pr_.batch, pr_.causal, pr_.sq, pr_.sk, G);
      for (auto& a : st_)
        for (auto& b : a)
          for (auto& s : b) s = fa4::row_start();
      if (tile_.n_max > 0) fa4::mma_tile_schedule(tile_.n_max, *this);
      for (int r = 0; r < G; ++r)
        for (int i = 0; i < fa4::kQStages; ++i) epilogue(r, i);
    }
    for (int r = 0; r < G; ++r) {
      REQUIRE(ctas_[r]->tmem.dealloc(tmem_, Plan::kTmemCols) == EmuError::kOk);
      ctas_[r]->tmem.relinquish();
      CHECK(ctas_[r]->tmem.at_exit() == EmuError::kOk);
    }
    out.o = std::move(o.x);
    return out;
  }

  // ---- the visitor of fa4::mma_tile_schedule: the MMA thread's walk ----
  void wait_q(int i) {  // the load warp's Q stage i, every CTA of the pair its own rows
    for (int r = 0; r < G; ++r)
      for (int c = 0; c < D / fa4::kChunkElems; ++c)
        tma_load(ctas_[r]->smem, q_smem(i) + Plan::q_chunk(c), q_, c * fa4::kChunkElems,
                 fa4::q_row0(tile_.m_block, i, r, G), tile_.head, tile_.batch, fa4::kStageRows);
  }
  void wait_kv(bool is_v, int j) {  // the next ring slot: the load warp's K(n) or V(n), n = block of step j
    const int n = fa4::block_of_step(tile_.n_max, j);
    const uint32_t slot = ring_.stage;
    ring_.advance();
    for (int r = 0; r < G; ++r) {
      if (is_v) {
        for (int c = 0; c < Plan::kDLocal / fa4::kChunkElems; ++c)
          tma_load(ctas_[r]->smem, kv_smem(slot) + Plan::v_chunk(c), v_, r * Plan::kDLocal + c * fa4::kChunkElems,
                   n * fa4::kBlockN, tile_.head_kv, tile_.batch, fa4::kBlockN);
      } else {
        for (int c = 0; c < D / fa4::kChunkElems; ++c)
          tma_load(ctas_[r]->smem, kv_smem(slot) + Plan::k_chunk(c), k_, c * fa4::kChunkElems,
                   n * fa4::kBlockN + r * Plan::kNLocal, tile_.head_kv, tile_.batch, Plan::kNLocal);
      }
    }
    (is_v ? v_slot_ : k_slot_) = slot;
  }
  void wait_p_ready(int i, int j) { softmax(i, fa4::block_of_step(tile_.n_max, j)); }
  void wait_o_rescaled(int i, int j) { correction(i, j); }
  void wait_s_free(int, int) {}
  void issue_qk(int i, int) {
    for (uint32_t s = 0; s < Plan::kQkSteps; ++s) {
      fa4::Issue is = Plan::qk(tmem_, q_smem(i), kv_smem(k_slot_), i, s);
      if (mut_ == Mutation::kQkAdvanceIgnoresAtom) {
        is.a_desc = flashptx::ptx::make_umma_smem_desc(q_smem(i) + 32u * s, 16u, 1024u, flashptx::ptx::UmmaSwizzle::k128B);
        is.b_desc =
            flashptx::ptx::make_umma_smem_desc(kv_smem(k_slot_) + 32u * s, 16u, 1024u, flashptx::ptx::UmmaSwizzle::k128B);
      }
      mma(is);
    }
  }
  void issue_pv(int i, int j) {
    for (uint32_t s = 0; s < Plan::kPvSteps; ++s) {
      fa4::Issue is = Plan::pv(tmem_, kv_smem(v_slot_), i, s, j > 0);
      if (mut_ == Mutation::kVAdvance32)
        is.b_desc = flashptx::ptx::make_umma_smem_desc(kv_smem(v_slot_) + 32u * s, Plan::v_tile().lbo, Plan::v_tile().sbo,
                                                       flashptx::ptx::UmmaSwizzle::k128B);
      if (mut_ == Mutation::kPFromSHead) is.a_tmem = tmem_ + Plan::s_col(i) + flashptx::umma::tmem_kstep_columns(s);
      mma(is);
    }
  }
  void commit_s_full(int, int) {}
  void commit_o_ready(int, int) {}
  void commit_q_empty(int) {}
  void release_kv(bool, int) {}

 private:
  uint32_t q_smem(int i) const { return base_ + L::kOffQ + static_cast<uint32_t>(i) * L::kQBytes; }
  uint32_t kv_smem(uint32_t s) const { return base_ + L::kOffKv + s * L::kSlotBytes; }
  uint32_t o_smem() const { return base_ + L::kOffO; }

  // An emulator refusal fails the test (once per kind, not once per access).
  static void ok(EmuError e, const char* what) {
    if (e != EmuError::kOk) FAIL(what << " refused by the emulator: " << emu::emu_error_name(e));
  }

  void mma(const fa4::Issue& is) {
    const EmuError e = emu::mma(cta_ptrs_, flashptx_test::mma_op(is, G));
    if (e != EmuError::kOk) FAIL("tcgen05.mma refused by the emulator: " << emu::emu_error_name(e));
    ++out_->mmas;
  }

  // Softmax warpgroup of stage i on block n, in every CTA: warps 4i .. 4i+3, lane quarter warp % 4.
  void softmax(int i, int n) {
    for (int r = 0; r < G; ++r)
      for (int w = 0; w < 4; ++w) {
        const int warp = 4 * i + w;
        std::vector<uint32_t> h0, h1;
        ok(emu::ld_32x32b(ctas_[r]->tmem, warp, Plan::s_taddr(tmem_, warp, i, 0), Plan::kSLoadCols, &h0), "S ld");
        ok(emu::ld_32x32b(ctas_[r]->tmem, warp, Plan::s_taddr(tmem_, warp, i, 1), Plan::kSLoadCols, &h1), "S ld");
        std::vector<uint32_t> p[fa4::kFragments];
        for (auto& x : p) x.assign(32 * fa4::kFragment / 2, 0u);
        for (int th = 0; th < 32; ++th) {
          const int t = 32 * w + th;
          const int row = fa4::q_row0(tile_.m_block, i, r, G) + t;
          float s[fa4::kBlockN];
          for (int k = 0; k < Plan::kSLoadCols; ++k) {
            std::memcpy(&s[k], &h0[th * Plan::kSLoadCols + k], 4);
            std::memcpy(&s[Plan::kSLoadCols + k], &h1[th * Plan::kSLoadCols + k], 4);
          }
          const int lim = fa4::key_limit(row, n, pr_.sq, pr_.sk, pr_.causal);
          if (lim < fa4::kBlockN)
            for (int k = 0; k < fa4::kBlockN; ++k) s[k] = k < lim ? s[k] : -INFINITY;
          fa4::RowState& st = st_[r][i][t];
          const fa4::RefStep rs = fa4::reference_step(st, fa4::row_max(s), lambda_, float(C.tau_log2), 0.0f);
          gamma_[r][i][t] = rs.gamma;
          float psum = 0.0f;
          for (int c = 0; c < fa4::kFragments; ++c) {
            uint32_t packed[fa4::kFragment / 2];
            psum = fa4::exp_pack_fragment<C.emu, HostMath<C.bf16>>(s + fa4::kFragment * c, c, lambda_, rs.bias, packed,
                                                                   psum);
            for (int e = 0; e < fa4::kFragment / 2; ++e) p[c][th * (fa4::kFragment / 2) + e] = packed[e];
          }
          fa4::row_accumulate(st, rs.gamma, psum);
        }
        for (int c = 0; c < fa4::kFragments; ++c)
          ok(emu::st_32x32b(ctas_[r]->tmem, warp, Plan::p_taddr(tmem_, warp, i, c), fa4::kFragment / 2, p[c]), "P st");
      }
  }

  // Correction before PV_i(j): warps 8..11; a warp rescales its 32 rows of O_i if any of them moved.
  void correction(int i, int j) {
    if (j == 0) return;  // the tile's first PV overwrites O_i
    for (int r = 0; r < G; ++r)
      for (int w = 0; w < 4; ++w) {
        const int warp = fa4::kCorrectionWarp0 + w;
        bool any = false;
        for (int th = 0; th < 32; ++th) any = any || fa4::row_needs_rescale(gamma_[r][i][32 * w + th]);
        ++out_->correction_warps;
        if (!any) continue;
        ++out_->rescale_warps;
        if (mut_ == Mutation::kNoRescale) continue;
        constexpr int kCols = Plan::kOChunkCols;
        for (int c = 0; c < D / kCols; ++c) {
          std::vector<uint32_t> o;
          ok(emu::ld_32x32b(ctas_[r]->tmem, warp, Plan::o_taddr(tmem_, warp, i, c), kCols, &o), "O ld");
          for (int th = 0; th < 32; ++th)
            for (int k = 0; k < kCols; ++k) {
              float x;
              std::memcpy(&x, &o[th * kCols + k], 4);
              x = fa4::rescale(x, gamma_[r][i][32 * w + th]);
              std::memcpy(&o[th * kCols + k], &x, 4);
            }
          ok(emu::st_32x32b(ctas_[r]->tmem, warp, Plan::o_taddr(tmem_, warp, i, c), kCols, o), "O st");
        }
      }
  }

  // The tile's end for stage i of CTA r: the correction stages O_i / D, the epilogue stores it.
  void epilogue(int r, int i) {
    for (int w = 0; w < 4; ++w) {
      const int warp = fa4::kCorrectionWarp0 + w;
      constexpr int kCols = Plan::kOChunkCols;
      std::vector<uint32_t> o[D / kCols];
      for (int c = 0; c < D / kCols; ++c) {
        if (tile_.n_max > 0)
          ok(emu::ld_32x32b(ctas_[r]->tmem, warp, Plan::o_taddr(tmem_, warp, i, c), kCols, &o[c]), "O ld");
        else
          o[c].assign(32 * kCols, 0u);
      }
      for (int th = 0; th < 32; ++th) {
        const int t = 32 * w + th;
        const fa4::RowState st = st_[r][i][t];
        const float inv = fa4::inverse_sum(st.d);
        const uint32_t row_base = o_smem() + Plan::o_stage_byte(static_cast<uint32_t>(t), 0);
        for (int c = 0; c < D / kCols; ++c)
          for (int e = 0; e < kCols / 2; ++e) {
            float a, b;
            std::memcpy(&a, &o[c][th * kCols + 2 * e], 4);
            std::memcpy(&b, &o[c][th * kCols + 2 * e + 1], 4);
            const uint32_t v = HostMath<C.bf16>::pack(fa4::normalise(a, inv), fa4::normalise(b, inv));
            const uint32_t addr =
                Plan::o_stage_addr(row_base, static_cast<uint32_t>(t), static_cast<uint32_t>(kCols * c + 2 * e));
            std::memcpy(&ctas_[r]->smem.bytes[addr], &v, 4);
          }
        const int row = fa4::q_row0(tile_.m_block, i, r, G) + t;
        if (row < pr_.sq)
          out_->lse[(static_cast<size_t>(tile_.batch) * pr_.hq + tile_.head) * pr_.sq + row] =
              fa4::row_lse(st, lambda_, 0.0f);
      }
    }
    for (int c = 0; c < D / fa4::kChunkElems; ++c)
      tma_store(ctas_[r]->smem, o_smem() + Plan::q_chunk(c), *o_, c * fa4::kChunkElems,
                fa4::q_row0(tile_.m_block, i, r, G), tile_.head, tile_.batch, fa4::kStageRows);
  }

  const Problem& pr_;
  const Tensor &q_, &k_, &v_;
  Mutation mut_;
  uint32_t base_;
  float lambda_ = 0.0f;
  std::vector<std::unique_ptr<emu::Cta>> ctas_;
  std::vector<emu::Cta*> cta_ptrs_;
  uint32_t tmem_ = 0;
  flashptx::RingState<L::kSlots> ring_ = flashptx::RingState<L::kSlots>::consumer_start();
  uint32_t k_slot_ = 0, v_slot_ = 0;
  fa4::Tile tile_{};
  fa4::RowState st_[2][fa4::kQStages][fa4::kStageRows];
  float gamma_[2][fa4::kQStages][fa4::kStageRows] = {};
  Outcome* out_ = nullptr;
  Tensor* o_ = nullptr;
};

// ---- one problem: replay, references, the rule ------------------------------------------------------
// The rule. O is checked against the fp64 reference with a bound built from a second reference that
// rounds P to the kernel's 16-bit type and O to its output type ("same"): the kernel may be off by
// twice what that rounding alone costs, plus half an output ulp at the largest |O|. The last term is
// the output's own quantization: O is stored in 16 bits, and where the kernel's fp32 value lands a hair
// across a rounding midpoint of the top binade its element is a full ulp from fp64 while the same
// reference's worst element may be one that rounded closely. Without it the rule failed on correct
// code in one H200 run of the suite (seed 2438598237, d64 fp16, b1 sq300 sk333 hq4 hkv2: max|O-ref|
// 4.59e-4, 0.94 of the fp16 ulp in [0.5, 1) where max|O| lies, against 2 x 2.16e-4; 0.67 of the
// widened bound). The plan mutations below stay about 90 times past the bound.
struct Errors {
  double o_err = 0, o_same = 0, o_half_ulp = 0, lse_err = 0;
  long rescale_warps = 0, correction_warps = 0, mmas = 0;
  double bound() const { return 2.0 * o_same + o_half_ulp + 1e-5; }
  bool passes() const { return o_err <= bound() && lse_err <= 5e-4; }
};

// Half an ulp of a 16-bit format (bf16: 8 significant bits, fp16: 11) at magnitude x.
double half_ulp16(bool bf16, double x) {
  if (!(x > 0)) return 0;
  int exp2 = 0;
  std::frexp(x, &exp2);  // x = f 2^exp2, f in [0.5, 1): the binade's ulp is 2^(exp2 - bits)
  return std::ldexp(0.5, exp2 - (bf16 ? 8 : 11));
}

template <fa4::FwdConfig C>
Errors run_problem(const Problem& pr, std::mt19937& rng, Mutation mut) {
  const int D = C.head_dim;
  const Tensor q = random_tensor(rng, C.bf16, pr.batch, pr.sq, pr.hq, D, pr.sigma);
  const Tensor k = random_tensor(rng, C.bf16, pr.batch, pr.sk, pr.hkv, D, pr.sigma);
  const Tensor v = random_tensor(rng, C.bf16, pr.batch, pr.sk, pr.hkv, D, 1.0);
  // A shared-memory placement like the kernel's dynamic carve-up: 1024-aligned, somewhere in the window.
  const uint32_t room = emu::kSmemBytes - fa4::FwdLayout<C>::kSmemBytes;
  const uint32_t base = 1024u * std::uniform_int_distribution<uint32_t>(0, room / 1024u)(rng);
  Replay<C> replay(pr, q, k, v, mut, base);
  const Outcome out = replay.run();

  ref::Problem rp = ref::problem(pr.batch, pr.sq, pr.sk, pr.hq, pr.hkv, D, pr.causal);
  const ref::Elem et = C.bf16 ? ref::Elem::kBF16 : ref::Elem::kFP16;
  const ref::TensorView qv = ref::contiguous_q(q.x.data(), et, rp), kv = ref::contiguous_kv(k.x.data(), et, rp),
                        vv = ref::contiguous_kv(v.x.data(), et, rp);
  const ref::Forward exact = ref::forward(rp, qv, kv, vv);
  const ref::Forward same = ref::forward(rp, qv, kv, vv, C.bf16 ? flashptx::Round::kBF16 : flashptx::Round::kFP16);
  Errors e;
  e.o_err = ref::max_abs_diff_o(rp, ref::contiguous_q(out.o.data(), et, rp), exact.o);
  std::vector<uint16_t> same16(same.o.size());
  for (size_t x = 0; x < same.o.size(); ++x) same16[x] = to16(C.bf16, same.o[x]);
  e.o_same = ref::max_abs_diff_o(rp, ref::contiguous_q(same16.data(), et, rp), exact.o);
  double o_max = 0;
  for (const double x : exact.o) o_max = std::max(o_max, std::fabs(x));
  e.o_half_ulp = half_ulp16(C.bf16, o_max);
  e.lse_err = ref::max_abs_diff_lse(rp, out.lse.data(), exact.lse);
  e.rescale_warps = out.rescale_warps;
  e.correction_warps = out.correction_warps;
  e.mmas = out.mmas;
  return e;
}

std::string describe(const char* name, const Problem& pr) {
  char b[200];
  std::snprintf(b, sizeof b, "%s b%d sq%d sk%d hq%d hkv%d %s sigma %.1f", name, pr.batch, pr.sq, pr.sk, pr.hq, pr.hkv,
                pr.causal ? "causal" : "non-causal", pr.sigma);
  return b;
}

// The problems every specialization replays: GQA, ragged sequence ends (masked key tails, query rows
// past the end), causal with seqlen_q > seqlen_k (rows that see no key: O = 0, LSE = -inf) and <, and a
// wide input spread whose row maxima move by more than tau between blocks (the rescale path).
std::vector<Problem> problems(int cta_group) {
  const int rows = fa4::tile_rows(cta_group);
  return {
      {1, rows + 44, 333, 4, 2, false, 1.0},
      {1, rows + 44, 333, 2, 1, true, 1.0},
      {1, 300, 200, 2, 1, true, 1.0},
      {2, 200, 451, 2, 2, true, 2.5},
      {1, rows, 384, 2, 1, false, 2.5},
  };
}

template <fa4::FwdConfig C>
void replay_all(const char* name) {
  const uint32_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  double worst_ratio = 0, worst_lse = 0;
  long rescaled = 0, steps = 0, mmas = 0;
  for (const Problem& pr : problems(C.cta_group)) {
    const Errors e = run_problem<C>(pr, rng, Mutation::kNone);
    const std::string what = describe(name, pr);
    INFO(what << ": max|O-ref| " << e.o_err << ", max|O_same-ref| " << e.o_same << ", half ulp at max|O| "
              << e.o_half_ulp << ", max|LSE-ref| " << e.lse_err);
    CHECK(e.o_err <= e.bound());
    CHECK(e.lse_err <= 5e-4);
    worst_ratio = std::max(worst_ratio, e.o_err / e.bound());
    worst_lse = std::max(worst_lse, e.lse_err);
    rescaled += e.rescale_warps;
    steps += e.correction_warps;
    mmas += e.mmas;
  }
  // One line of evidence per specialization: the worst error relative to the bound over its problems.
  MESSAGE(std::string(name) << ": " << problems(C.cta_group).size() << " problems, " << mmas
                            << " tcgen05.mma replayed; worst max|O-ref| / bound = " << worst_ratio
                            << ", worst max|LSE-ref| = " << worst_lse << "; O rescaled in " << rescaled << " of "
                            << steps << " warp steps");
}

}  // namespace

TEST_SUITE("host fa4 replay") {

TEST_CASE("the plan's pieces agree with the project's own definitions") {
  // The constexpr emulation split is exp2emu::pair_uses_emulation, element by element.
  for (const fa4::EmuSplit e : {fa4::EmuSplit{16, 4, 1}, fa4::EmuSplit{10, 4, 1}, fa4::EmuSplit{16, 4, 0},
                                fa4::EmuSplit{32, 4, 1}, fa4::EmuSplit{14, 6, 0}, fa4::EmuSplit{0, 4, 0}})
    for (int k = 0; k < fa4::kBlockN; ++k)
      CHECK(fa4::emulated(e, k) ==
            flashptx::exp2emu::pair_uses_emulation((k % 32) & ~1, k / 32, 4, e.freq, e.res, e.start));
  // The seed's table (0x09): 16/4/1 -> 16 of 128, 10/4/1 -> 24, 16/4/0 -> 24, 32/4/1 -> 8, 14/6/0 -> 36.
  CHECK(fa4::emulated_count({16, 4, 1}) == 16);
  CHECK(fa4::emulated_count({10, 4, 1}) == 24);
  CHECK(fa4::emulated_count({16, 4, 0}) == 24);
  CHECK(fa4::emulated_count({32, 4, 1}) == 8);
  CHECK(fa4::emulated_count({14, 6, 0}) == 36);
  // The staging tile's store address from the row base equals the swizzled byte of (row, column).
  using P = fa4::MmaPlan<128, 1, true>;
  for (uint32_t r = 0; r < 128; ++r)
    for (uint32_t d = 0; d < 128; d += 2)
      CHECK(P::o_stage_addr(P::o_stage_byte(r, 0), r, d) == P::o_stage_byte(r, d));
  // The staging layout is the TMA box layout (what tma_store reads back).
  for (uint32_t r = 0; r < 128; r += 7)
    for (uint32_t d = 0; d < 128; d += 2)
      CHECK(P::o_stage_byte(r, d) == swizzle128(P::q_chunk(static_cast<int>(d / 64)) + r * 128 + (d % 64) * 2));
  // The reference step is online_softmax.h's row_update on rows with a visible key (same gamma, same
  // reference, same D), block after block.
  std::mt19937 rng(fresh_seed());
  std::normal_distribution<float> nd(0.0f, 6.0f);
  for (int trial = 0; trial < 200; ++trial) {
    flashptx::softmax::RowState<1> a;
    flashptx::softmax::row_init(a);
    fa4::RowState b = fa4::row_start();
    const float lambda = 0.127f;
    for (int blk = 0; blk < 6; ++blk) {
      float s[fa4::kBlockN], v[fa4::kBlockN] = {};
      for (float& x : s) x = nd(rng) + 4.0f * static_cast<float>(blk);
      const float g1 = flashptx::softmax::row_update<1>(a, s, v, fa4::kBlockN, lambda, 8.0f, 0.0f);
      const fa4::RefStep rs = fa4::reference_step(b, fa4::row_max(s), lambda, 8.0f, 0.0f);
      float psum = 0.0f;
      for (int k = 0; k < fa4::kBlockN; ++k)
        psum = flashptx::exp2emu::fadd_rn(psum,
                                          flashptx::exp2emu::exp2_degree3(flashptx::exp2emu::ffma_rn(s[k], lambda, rs.bias)));
      fa4::row_accumulate(b, rs.gamma, psum);
      CHECK(g1 == rs.gamma);
      CHECK(a.a == b.a);
      CHECK(a.D == b.d);
    }
  }
  // A row whose keys are all masked so far keeps the reference -inf, gamma 1, probabilities exactly 0.
  fa4::RowState m = fa4::row_start();
  const fa4::RefStep rs = fa4::reference_step(m, -INFINITY, 0.127f, 8.0f, 0.0f);
  CHECK(rs.gamma == 1.0f);
  CHECK(m.a == -INFINITY);
  CHECK(flashptx::exp2emu::exp2_degree3(flashptx::exp2emu::ffma_rn(-INFINITY, 0.127f, rs.bias)) == 0.0f);
  CHECK(HostMath<true>::ex2(flashptx::exp2emu::ffma_rn(-INFINITY, 0.127f, rs.bias)) == 0.0f);
}

TEST_CASE("the MMA walk of a tile: startup, steady steps, drain, ring order") {
  // The order the kernel's MMA thread issues, as the visitor sees it.
  struct Rec {
    std::vector<std::string> ev;
    void wait_q(int i) { ev.push_back("wq" + std::to_string(i)); }
    void wait_kv(bool v, int j) { ev.push_back(std::string(v ? "wv" : "wk") + std::to_string(j)); }
    void wait_p_ready(int i, int j) { ev.push_back("wp" + std::to_string(i) + std::to_string(j)); }
    void wait_o_rescaled(int i, int j) { ev.push_back("wo" + std::to_string(i) + std::to_string(j)); }
    void wait_s_free(int i, int j) { ev.push_back("ws" + std::to_string(i) + std::to_string(j)); }
    void issue_qk(int i, int j) { ev.push_back("QK" + std::to_string(i) + std::to_string(j)); }
    void issue_pv(int i, int j) { ev.push_back("PV" + std::to_string(i) + std::to_string(j)); }
    void commit_s_full(int i, int j) { ev.push_back("cs" + std::to_string(i) + std::to_string(j)); }
    void commit_o_ready(int i, int j) { ev.push_back("co" + std::to_string(i) + std::to_string(j)); }
    void commit_q_empty(int i) { ev.push_back("cq" + std::to_string(i)); }
    void release_kv(bool v, int j) { ev.push_back(std::string(v ? "rv" : "rk") + std::to_string(j)); }
  } rec;
  fa4::mma_tile_schedule(2, rec);
  // Two blocks: startup (both S), one steady step per stage (PV then the next QK into the same slot,
  // after the PV's completion), the drain; Q released after each stage's last QK; the ring released
  // K0, V0, K1, V1: the order it was filled.
  const std::vector<std::string> exact = {
      "wq0", "ws00", "wk0", "QK00", "cs00", "wq1", "ws10", "QK10", "cs10", "rk0",
      "wv0", "wp00", "wo00", "PV00", "co00", "ws01", "wk1", "QK01", "cs01", "cq0",
      "wp10", "wo10", "PV10", "co10", "rv0", "ws11", "QK11", "cs11", "rk1", "cq1",
      "wv1", "wp01", "wo01", "PV01", "co01", "wp11", "wo11", "PV11", "co11", "rv1",
  };
  CHECK(rec.ev == exact);
}

TEST_CASE("replay d64 bf16 (cta_group::1)") { replay_all<kD64>("d64 bf16"); }
TEST_CASE("replay d64 fp16 (cta_group::1)") { replay_all<fp16(kD64)>("d64 fp16"); }
TEST_CASE("replay d128 bf16 (cta_group::1)") { replay_all<kD128>("d128 bf16"); }
TEST_CASE("replay d128 fp16 (cta_group::1)") { replay_all<fp16(kD128)>("d128 fp16"); }
TEST_CASE("replay d128 bf16 (cta_group::2 pair, M = 256)") { replay_all<kD128Pair>("d128 bf16 2cta"); }
TEST_CASE("replay d128 fp16 (cta_group::2 pair, M = 256)") { replay_all<fp16(kD128Pair)>("d128 fp16 2cta"); }

TEST_CASE("mutations of the plan fail the rule") {
  std::mt19937 rng(fresh_seed());
  const Problem pr{1, 256, 256, 1, 1, false, 2.5};
  const Problem pair_pr{1, 512, 256, 1, 1, false, 2.5};
  double least = 1e300;
  struct Case {
    const char* what;
    Mutation m;
  };
  for (const Case c : {Case{"K advance ignores the 64-element swizzle atom", Mutation::kQkAdvanceIgnoresAtom},
                       Case{"V advance of 32 bytes per 16 keys", Mutation::kVAdvance32},
                       Case{"P read from S's head columns", Mutation::kPFromSHead},
                       Case{"no rescale", Mutation::kNoRescale}}) {
    INFO(c.what);
    const Errors e1 = run_problem<kD128>(pr, rng, c.m);
    CHECK_FALSE(e1.passes());
    const Errors e2 = run_problem<kD128Pair>(pair_pr, rng, c.m);
    CHECK_FALSE(e2.passes());
    INFO("1-CTA max|O-ref| " << e1.o_err << " vs bound " << e1.bound() << "; pair " << e2.o_err << " vs "
                              << e2.bound());
    if (c.m == Mutation::kNoRescale) CHECK(e1.rescale_warps > 0);  // the path the mutation removes is taken
    least = std::min({least, e1.o_err / e1.bound(), e2.o_err / e2.bound()});
  }
  MESSAGE("plan mutations: the closest to passing is " << least << " x its bound");
  // At head dim 64 one 64-element atom holds all of K: +32 B per step is then right, and passes.
  const Errors ok64 = run_problem<kD64>(pr, rng, Mutation::kQkAdvanceIgnoresAtom);
  CHECK(ok64.passes());
  CHECK_FALSE(run_problem<kD64>(pr, rng, Mutation::kPFromSHead).passes());
}

}  // TEST_SUITE
