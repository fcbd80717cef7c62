// flashptx_fwd_fp8 on the CPU: its validation (every fault a distinct status, a message, nothing
// launched), the kernel's layout arithmetic (src/sm90/fa3_fwd_fp8_config.h) run through a
// thread-by-thread emulation of ldmatrix.x4.trans / prmt / stmatrix.x4 and of the wgmma fragments,
// the shared-memory plan, and the fp64 references the GPU suite uses.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "tools/models/fp8.h"
#include "src/sm90/fa3_fwd_fp8.h"
#include "src/sm90/fa3_fwd_fp8_config.h"
#include "src/sm90/fa3_fwd_fp8_math.h"
#include "src/protocol/tile_scheduler.h"
#include "tools/support/fp8_attention_ref.h"
#include "tools/support/dtype.h"
#include "tools/support/fp8_quant_ref.h"

namespace {

namespace fp8m = flashptx::models::fp8;
using flashptx::fa3::natural_selector;
using flashptx::fa3::natural_src;
using flashptx::fa3::p_acc_index;
using flashptx::fa3::swizzle_unit;
using flashptx::fa3::transpose_dst;
using flashptx::fa3::raw_v_offset;
using flashptx::fa3::transpose_src;

alignas(16) uint8_t g_buf[4][64];
float g_scales[3] = {1.f, 1.f, 1.f};

flashptx_fwd_fp8_params good() {
  flashptx_fwd_fp8_params p;
  flashptx_fwd_fp8_params_contiguous(&p, g_buf[0], g_buf[1], g_buf[2], g_buf[3], nullptr, &g_scales[0], &g_scales[1],
                                     &g_scales[2], 2, 300, 333, 4, 2, 128, FLASHPTX_FP8_SCALE_PER_BLOCK, 1);
  return p;
}

void expect(const flashptx_fwd_fp8_params& p, flashptx_status want, const char* needle) {
  const flashptx_status s = flashptx_fwd_fp8_check(&p);
  CHECK_MESSAGE(s == want, "got " << flashptx_status_name(s) << ": " << flashptx_last_error());
  const std::string msg = flashptx_last_error();
  CHECK_MESSAGE(msg.find(flashptx_status_name(want)) == 0, msg);
  CHECK_MESSAGE(msg.find(needle) != std::string::npos, "message '" << msg << "' lacks '" << needle << "'");
}

// ldmatrix.x4.trans / stmatrix.x4 on a byte array, thread by thread (PTX ISA "ldmatrix",
// "stmatrix"; the model's move_tile semantics, tools/models/fp8.cpp): matrix m's row rr is the 16 bytes
// at the address lane 8m + rr gives. .trans: thread t = 4c + q receives units (row 2q, col c) and
// (2q + 1, c) of each matrix. stmatrix (no .trans): thread t = 4r + q's register holds units 2q, 2q+1
// of row r.
uint16_t unit_at(const uint8_t* mem, uint32_t row_addr, int c) {
  return static_cast<uint16_t>(mem[row_addr + 2 * c] | (mem[row_addr + 2 * c + 1] << 8));
}
void ldmatrix_x4_trans(const uint8_t* mem, const uint32_t (&addr)[32], uint32_t (&reg)[32][4]) {
  for (int t = 0; t < 32; ++t)
    for (int m = 0; m < 4; ++m) {
      const int c = t / 4, q = t % 4;
      reg[t][m] = unit_at(mem, addr[8 * m + 2 * q], c) | (static_cast<uint32_t>(unit_at(mem, addr[8 * m + 2 * q + 1], c)) << 16);
    }
}
void stmatrix_x4(uint8_t* mem, const uint32_t (&addr)[32], const uint32_t (&reg)[32][4]) {
  for (int t = 0; t < 32; ++t)
    for (int m = 0; m < 4; ++m) {
      const int r = t / 4, q = t % 4;
      const uint32_t a = addr[8 * m + r] + 4 * q;
      for (int b = 0; b < 4; ++b) mem[a + b] = static_cast<uint8_t>(reg[t][m] >> (8 * b));
    }
}

// The producer's transpose of one stage, as src/sm90/fa3_fwd_fp8.cuh runs it (every unit, any warp).
std::vector<uint8_t> emulate_transpose(const std::vector<uint8_t>& raw, int d, int block_n) {
  std::vector<uint8_t> vt(static_cast<size_t>(d * ((block_n + 127) / 128) * 128), 0xEE);
  for (int u = 0; u < (block_n / 16) * (d / 32); ++u) {
    const int kk = u % (block_n / 16), jj = u / (block_n / 16);
    uint32_t la[32], sa[32], r[32][4], w[32][4];
    for (int lane = 0; lane < 32; ++lane) {
      la[lane] = transpose_src(kk, jj, lane, d, block_n);
      sa[lane] = transpose_dst(kk, jj, lane, d, block_n);
    }
    ldmatrix_x4_trans(raw.data(), la, r);
    for (int t = 0; t < 32; ++t) {
      w[t][0] = fp8m::prmt(r[t][0], r[t][1], 0x6420);
      w[t][1] = fp8m::prmt(r[t][0], r[t][1], 0x7531);
      w[t][2] = fp8m::prmt(r[t][2], r[t][3], 0x6420);
      w[t][3] = fp8m::prmt(r[t][2], r[t][3], 0x7531);
    }
    stmatrix_x4(vt.data(), sa, w);
  }
  return vt;
}
// The PV wgmma's view of a Vt stage: B[key][dim], K-major, as the consumer's descriptors address it
// (Consumer::vt_desc): k-step k reads chunk c = 32k / 128 from the stage base + c * d * 128, whose
// rows (head dims) are w = min(128, block_n - 128c) bytes wide; a swizzle atom is 8 rows (SBO 8w);
// inside it row r, 16-byte unit u sits at r * w + 16 * (u ^ (r % 8)) for w = 128 (128B swizzle) and
// 16 * (u ^ ((r / 2) % 4)) for w = 64 (64B swizzle), from a 1024-aligned base (PTX ISA "Shared
// memory matrix layout", swizzling modes). Written from the descriptor's rules, not from vt_offset.
uint8_t vt_at(const std::vector<uint8_t>& vt, int block_n, int dim, int key) {
  const int c = key / 128, w = std::min(128, block_n - 128 * c), k = key % 128, u = k / 16, r = dim % 8;
  const int su = w == 128 ? (u ^ r) : (u ^ ((r / 2) % 4));
  const int d_rows = static_cast<int>(vt.size()) / (((block_n + 127) / 128) * 128);
  return vt[static_cast<size_t>(c * d_rows * 128 + (dim / 8) * 8 * w + r * w + 16 * su + k % 16)];
}


// ---- the consumer's block walk, replayed on the host ------------------------------------------
// Consumer::run of src/sm90/fa3_fwd_fp8.cuh row by row: K/V blocks right to left, S in fp32 from the
// codes, the mask, the kernel's own row_update / block_scale / out_factor / lse_of
// (src/sm90/fa3_fwd_fp8_math.h, exp2f for ex2.approx), P rounded to e4m3, O accumulated in fp32 in
// the unit of the last block's dV and rescaled by alpha * dV_prev / dV_n. Mutations break one rule.
enum class EmuMutation { none, dv_once_at_end, dk_of_first_block };
void emulate(const flashptx::ref::Fp8Attention& a, int block_n, EmuMutation mut, std::vector<double>* o,
             std::vector<double>* lse) {
  namespace k = flashptx::fa3::fp8;
  const int64_t B = a.batch, SQ = a.seqlen_q, SK = a.seqlen_k, HQ = a.heads_q, HKV = a.heads_kv, D = a.head_dim;
  const double scale = a.softmax_scale > 0 ? a.softmax_scale : 1.0 / std::sqrt(static_cast<double>(D));
  const float scale_log2 = static_cast<float>(scale * 1.4426950408889634);
  o->assign(static_cast<size_t>(B * SQ * HQ * D), 0.0);
  lse->assign(static_cast<size_t>(B * HQ * SQ), 0.0);
  auto code = [](const flashptx::ref::Fp8Tensor& t, int64_t b, int64_t s, int64_t h, int64_t e) {
    return static_cast<float>(flashptx::ref::e4m3_decode(t.codes[b * t.sb + s * t.ss + h * t.sh + e * t.sd]));
  };
  auto ds = [](const flashptx::ref::Fp8Tensor& t, int64_t b, int64_t h, int64_t s) {
    return t.descale[flashptx::ref::fp8_descale_index(t.granularity, t.heads, t.seqlen, b, h, s)];
  };
  auto ex2 = [](float x) { return exp2f(x); };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < HQ; ++h) {
      const int64_t hk = h / (HQ / HKV);
      for (int64_t i = 0; i < SQ; ++i) {
        const int m_block = static_cast<int>(i / 128);
        const int n_max = a.causal ? flashptx::causal_n_blocks(m_block, 128, block_n, static_cast<int>(SQ), static_cast<int>(SK))
                                   : flashptx::n_blocks(block_n, static_cast<int>(SK));
        const float dq = ds(a.q, b, h, static_cast<int64_t>(m_block) * 128);
        float row_max = -INFINITY, row_sum = 0.f, dv_cur = 1.f;
        std::vector<float> acc(static_cast<size_t>(D), 0.f), s(static_cast<size_t>(block_n));
        for (int j = 0; j < n_max; ++j) {
          const int n = n_max - 1 - j;
          const float dk = ds(a.k, b, hk, static_cast<int64_t>(mut == EmuMutation::dk_of_first_block ? 0 : n) * block_n);
          const float dv_n = k::descale_or_one(ds(a.v, b, hk, static_cast<int64_t>(n) * block_n));
          const float sc = k::block_scale(scale_log2, dq, dk);
          float mx = -INFINITY;
          for (int c = 0; c < block_n; ++c) {
            const int64_t key = static_cast<int64_t>(n) * block_n + c;
            const bool masked = key >= SK || (a.causal && key > i + (SK - SQ));
            float dot = 0.f;
            if (!masked)
              for (int64_t e = 0; e < D; ++e) dot += code(a.q, b, i, h, e) * code(a.k, b, key, hk, e);
            s[static_cast<size_t>(c)] = masked ? -INFINITY : dot;
            mx = std::max(mx, s[static_cast<size_t>(c)]);
          }
          float bias;
          const float alpha = k::row_update(row_max, mx, sc, &bias, ex2);
          float sum = 0.f;
          for (auto& x : s) {
            x = exp2f(std::fma(x, sc, bias));
            sum += x;
          }
          row_sum = row_sum * alpha + sum;
          const float ratio = mut == EmuMutation::dv_once_at_end ? 1.f : dv_cur / dv_n;
          if (j > 0)
            for (auto& x : acc) x *= alpha * ratio;
          for (int c = 0; c < block_n; ++c) {
            const int64_t key = static_cast<int64_t>(n) * block_n + c;
            if (key >= SK) continue;  // TMA's zero fill: V is 0 there (and P is 0)
            const float p8 = static_cast<float>(flashptx::ref::e4m3_decode(flashptx::ref::e4m3_encode(s[static_cast<size_t>(c)])));
            for (int64_t e = 0; e < D; ++e) acc[static_cast<size_t>(e)] += p8 * code(a.v, b, key, hk, e);
          }
          dv_cur = dv_n;  // (dv_once_at_end: every block then weighted by the last block's dV)
        }
        const float f = k::out_factor(dv_cur, row_sum);
        for (int64_t e = 0; e < D; ++e)
          (*o)[static_cast<size_t>(((b * SQ + i) * HQ + h) * D + e)] =
              flashptx::bf16_to_float(flashptx::float_to_bf16(acc[static_cast<size_t>(e)] * f));
        (*lse)[static_cast<size_t>((b * HQ + h) * SQ + i)] = k::lse_of(row_max, row_sum);
      }
    }
}

}  // namespace

TEST_SUITE("host fp8 forward") {

TEST_CASE("validation: every fault a distinct status with a message") {
  CHECK(flashptx_fwd_fp8_check(nullptr) == FLASHPTX_ERR_NULL_PARAMS);
  flashptx_fwd_fp8_params p = good();
  CHECK(flashptx_fwd_fp8_check(&p) == FLASHPTX_OK);
  p.descale_q = nullptr;
  expect(p, FLASHPTX_ERR_NULL_DESCALE, "descale_q");
  p = good(); p.descale_v = nullptr;
  expect(p, FLASHPTX_ERR_NULL_DESCALE, "descale_v");
  p = good(); p.k_granularity = static_cast<flashptx_fp8_scale_granularity>(3);
  expect(p, FLASHPTX_ERR_BAD_GRANULARITY, "k_granularity 3");
  p = good(); p.q_granularity = static_cast<flashptx_fp8_scale_granularity>(-1);
  expect(p, FLASHPTX_ERR_BAD_GRANULARITY, "q_granularity");
  p = good(); p.v_layout = static_cast<flashptx_fp8_v_layout>(5);
  expect(p, FLASHPTX_ERR_BAD_V_LAYOUT, "v_layout 5");
  p = good(); p.q_dtype = FLASHPTX_BF16;
  expect(p, FLASHPTX_ERR_UNSUPPORTED_DTYPE, "FLASHPTX_FP8_E4M3");
  p = good(); p.o_dtype = FLASHPTX_FP8_E4M3;
  expect(p, FLASHPTX_ERR_UNSUPPORTED_DTYPE, "o_dtype is FLASHPTX_");
  p = good(); p.head_dim = 96;
  expect(p, FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, "96");
  p = good(); p.heads_kv = 3;
  expect(p, FLASHPTX_ERR_BAD_HEADS, "heads_kv");
  p = good(); p.v = nullptr;
  expect(p, FLASHPTX_ERR_NULL_POINTER, "v is NULL");
  p = good(); p.k = g_buf[1] + 8;
  expect(p, FLASHPTX_ERR_MISALIGNED, "k is not 16-byte aligned");
  p = good(); p.descale_k = reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(&g_scales[1]) + 2);
  expect(p, FLASHPTX_ERR_MISALIGNED, "descale_k must be 4-byte aligned");
  p = good(); p.k_row_stride = 264;  // a multiple of 8, not of 16 bytes of e4m3
  expect(p, FLASHPTX_ERR_MISALIGNED, "multiple of 16 elements");
  p = good(); p.o_row_stride = 4 * 128 + 4;
  expect(p, FLASHPTX_ERR_MISALIGNED, "o row stride");
  p = good(); p.o_head_stride = 64;  // heads overlap
  expect(p, FLASHPTX_ERR_BAD_STRIDES, "overlap");
  p = good(); p.v_layout = FLASHPTX_FP8_V_KEYS_CONTIGUOUS; p.v_dim_stride = 344;  // 333 keys padded to 344: not /16
  expect(p, FLASHPTX_ERR_MISALIGNED, "v (keys contiguous)");
  p.v_dim_stride = 352; p.v_head_stride = 352 * 128; p.v_batch_stride = 2 * 352 * 128;
  CHECK(flashptx_fwd_fp8_check(&p) == FLASHPTX_OK);
  p = good(); p.seqlen_k = -1;
  expect(p, FLASHPTX_ERR_BAD_SHAPE, "seqlen_k is -1");
  p = good(); p.softmax_scale = NAN;
  expect(p, FLASHPTX_ERR_BAD_SHAPE, "softmax_scale");
  // Nothing to compute: no pointer is needed.
  p = good(); p.batch = 0; p.q = nullptr; p.descale_q = nullptr;
  CHECK(flashptx_fwd_fp8_check(&p) == FLASHPTX_OK);
  // The new statuses have names of their own.
  CHECK(std::string(flashptx_status_name(FLASHPTX_ERR_NULL_DESCALE)) == "FLASHPTX_ERR_NULL_DESCALE");
  CHECK(std::string(flashptx_status_name(FLASHPTX_ERR_BAD_V_LAYOUT)) == "FLASHPTX_ERR_BAD_V_LAYOUT");
}

TEST_CASE("the in-kernel V transpose, emulated thread by thread: Vt[d][16kk+p] = V[16kk+sigma(p)][d]") {
  std::mt19937 rng(11);
  for (auto [d, bn] : {std::pair{64, 128}, std::pair{128, 128}, std::pair{256, 64}, std::pair{64, 256},
                       std::pair{128, 192}}) {
    CAPTURE(d);
    CAPTURE(bn);
    std::vector<uint8_t> raw(static_cast<size_t>(bn * d));
    for (auto& x : raw) x = static_cast<uint8_t>(rng());
    const auto vt = emulate_transpose(raw, d, bn);
    int wrong = 0, unwritten = 0;
    for (int dim = 0; dim < d; ++dim)
      for (int key = 0; key < bn; ++key) unwritten += vt_at(vt, bn, dim, key) == 0xEE;
    for (int dim = 0; dim < d; ++dim)
      for (int key = 0; key < bn; ++key)
        wrong += vt_at(vt, bn, dim, key) != raw[raw_v_offset(key / 16 * 16 + fp8m::transpose_sigma(key % 16), dim, d, bn)];
    CHECK(wrong == 0);
    CHECK(unwritten < bn * d / 64);  // 0xEE may also be a data byte; a missed unit would leave >= 512
    // Bank conflicts of the LDSM side: the 8 rows of each ldmatrix matrix (16 bytes each) must lie in
    // 8 different 16-byte bank groups (address / 16 mod 8) for one wavefront per matrix.
    int conflicted = 0;
    for (int u = 0; u < (bn / 16) * (d / 32); ++u)
      for (int m = 0; m < 4; ++m) {
        unsigned groups = 0;
        for (int rr = 0; rr < 8; ++rr) groups |= 1u << ((transpose_src(u % (bn / 16), u / (bn / 16), 8 * m + rr, d, bn) / 16) % 8);
        conflicted += groups != 0xFFu;
      }
    CHECK(conflicted == 0);
  }
}

TEST_CASE("P repair + transposed V: the RS wgmma's A x B equals P V exactly (and fails without the pairing)") {
  // One warp's 16 rows, one k32 step (32 keys), 16 head dims; P small integers (exact in e4m3).
  const int bn = 128, d = 64;
  double p[16][32], v[32][16];
  std::vector<uint8_t> raw(static_cast<size_t>(bn * d), 0);
  // Random small integers (a periodic pattern can hide a swap of two keys whose values coincide).
  std::mt19937 rng(23);
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 32; ++k) p[r][k] = static_cast<double>(rng() % 9) - 4;
  for (int k = 0; k < 32; ++k)
    for (int e = 0; e < 16; ++e) {
      v[k][e] = static_cast<double>(rng() % 9) - 4;
      raw[raw_v_offset(k, e, d, bn)] = flashptx::ref::e4m3_encode(v[k][e]);
    }
  const auto vt = emulate_transpose(raw, d, bn);
  for (bool pair_v : {true, false}) {
    double err = 0;
    // Full product per (row, dim): sum over A columns of A[row][col] * B[col][dim].
    for (int row = 0; row < 16; ++row)
      for (int e = 0; e < 16; ++e) {
        double got = 0, want = 0;
        for (int k = 0; k < 32; ++k) want += p[row][k] * v[k][e];
        for (int lane = 0; lane < 32; ++lane) {
          if (lane / 4 != row % 8) continue;
          const int q = lane % 4, r0 = lane / 4;
          float s_acc[16];
          for (int j = 0; j < 4; ++j)
            for (int x = 0; x < 4; ++x) s_acc[4 * j + x] = static_cast<float>(p[r0 + 8 * (x >> 1)][8 * j + 2 * q + (x & 1)]);
          for (int w = 0; w < 4; ++w) {
            if ((w & 1) != row / 8) continue;
            for (int i = 0; i < 4; ++i) {
              const int col = 16 * (w >> 1) + 4 * q + i;
              const double a = s_acc[p_acc_index(0, w, i)];
              const double b = pair_v ? flashptx::ref::e4m3_decode(vt_at(vt, bn, e, col)) : v[col][e];
              got += a * b;
            }
          }
        }
        err = std::max(err, std::fabs(got - want));
      }
    if (pair_v) CHECK(err == 0);
    else CHECK(err > 0);  // the repair alone, V in natural order: the pairing is what makes it exact
  }
}

TEST_CASE("the kernel's block walk replayed on the host meets the GPU suite's rule; broken scale rules do not") {
  // Per-block descales that differ a lot between blocks: rows of block r scaled by 4^(r % 3 - 1).
  const int64_t B = 1, SQ = 200, SK = 300, HQ = 2, HKV = 1, D = 64;
  std::mt19937 rng(31);
  std::normal_distribution<float> nd(0.f, 1.f);
  auto make = [&](int64_t s, int64_t heads, std::vector<uint8_t>* c, std::vector<float>* dsc,
                  flashptx_fp8_scale_granularity g = FLASHPTX_FP8_SCALE_PER_BLOCK) {
    std::vector<uint16_t> in(static_cast<size_t>(B * s * heads * D));
    for (int64_t r = 0; r < s; ++r)
      for (int64_t x = 0; x < heads * D; ++x)
        in[static_cast<size_t>(r * heads * D + x)] =
            flashptx::float_to_bf16(nd(rng) * std::ldexp(1.f, 2 * static_cast<int>((r / 128) % 3) - 2));
    c->assign(in.size(), 0);
    dsc->assign(static_cast<size_t>(B * heads * ((s + 127) / 128)), 0.f);
    flashptx::ref::quantize_fp8({in.data(), c->data(), dsc->data(), B, s, heads, D, s * heads * D, heads * D, D,
                                 s * heads * D, heads * D, D, true, g, 0});
  };
  std::vector<uint8_t> q, k, v, kh, vh;
  std::vector<float> dq, dk, dv, dkh, dvh;
  make(SQ, HQ, &q, &dq);
  make(SK, HKV, &k, &dk);
  make(SK, HKV, &v, &dv);
  // The wide-block kernels (block_n 192, 256) run only with K/V descales uniform along the keys:
  // their replay takes per-head K and V (launch_fwd_fp8, wide_blocks_apply).
  make(SK, HKV, &kh, &dkh, FLASHPTX_FP8_SCALE_PER_HEAD);
  make(SK, HKV, &vh, &dvh, FLASHPTX_FP8_SCALE_PER_HEAD);
  // Per-block K/V descales with 64- and 128-key blocks (where the broken scale rules must fail);
  // per-head K/V with the wide blocks (192, 256), the only descales those kernels run with.
  struct Run {
    int block_n;
    bool per_block;
  };
  for (bool causal : {false, true})
    for (Run run : {Run{64, true}, Run{128, true}, Run{192, false}, Run{256, false}}) {
      CAPTURE(causal);
      CAPTURE(run.block_n);
      const auto kg = run.per_block ? FLASHPTX_FP8_SCALE_PER_BLOCK : FLASHPTX_FP8_SCALE_PER_HEAD;
      flashptx::ref::Fp8Attention a;
      a.batch = B; a.seqlen_q = SQ; a.seqlen_k = SK; a.heads_q = HQ; a.heads_kv = HKV; a.head_dim = D;
      a.causal = causal;
      a.q = {q.data(), SQ * HQ * D, HQ * D, D, 1, dq.data(), FLASHPTX_FP8_SCALE_PER_BLOCK, HQ, SQ};
      a.k = {(run.per_block ? k : kh).data(), SK * HKV * D, HKV * D, D, 1, (run.per_block ? dk : dkh).data(), kg, HKV, SK};
      a.v = {(run.per_block ? v : vh).data(), SK * HKV * D, HKV * D, D, 1, (run.per_block ? dv : dvh).data(), kg, HKV, SK};
      std::vector<double> ref_o, ref_lse, same_o, same_lse, abs_s;
      flashptx::ref::fp8_attention(a, false, &ref_o, &ref_lse, &abs_s);
      flashptx::ref::fp8_attention(a, true, &same_o, &same_lse);
      double e_same = 0;
      for (size_t i = 0; i < ref_o.size(); ++i) e_same = std::max(e_same, std::fabs(same_o[i] - ref_o[i]));
      // With uniform K/V descales the two broken rules compute the same thing as the right one.
      const std::vector<EmuMutation> muts = run.per_block
          ? std::vector<EmuMutation>{EmuMutation::none, EmuMutation::dv_once_at_end, EmuMutation::dk_of_first_block}
          : std::vector<EmuMutation>{EmuMutation::none};
      for (EmuMutation m : muts) {
        CAPTURE(static_cast<int>(m));
        std::vector<double> o, lse;
        emulate(a, run.block_n, m, &o, &lse);
        double e = 0, el = 0;
        for (size_t i = 0; i < o.size(); ++i) e = std::max(e, std::fabs(o[i] - ref_o[i]));
        for (size_t i = 0; i < lse.size(); ++i) el = std::max(el, std::fabs(lse[i] - ref_lse[i]) - 2e-3 * abs_s[i]);
        const bool holds = e <= 2 * e_same + 1e-4 && el <= 1e-4;
        if (m == EmuMutation::none) CHECK_MESSAGE(holds, "max|O - ref| " << e << " vs O_same " << e_same << "; LSE excess " << el);
        else CHECK_MESSAGE(!holds, "a broken scale rule passed: max|O - ref| " << e << " vs O_same " << e_same);
      }
    }
}

TEST_CASE("P repair for V given keys-contiguous: the quad exchange puts every key in natural order") {
  // One warp, one k32 step: P[row][key] distinct bytes; after the kernel's packing (p_acc_index) and
  // exchange (natural_src, natural_selector), register w byte i of lane 4g + q must hold
  // P[g + 8 (w % 2)][16 (w / 2) + 4q + i], the A fragment in natural key order.
  // Two tags, since 16 x 32 values do not fit a byte: the key with the row in its group of 8, and
  // the key with the row's half (r0 or r0 + 8).
  for (int tag = 0; tag < 2; ++tag) {
    auto pval = [tag](int row, int key) {
      return static_cast<uint8_t>(tag == 0 ? 32 * (row % 8) + key : 32 * (row / 8) + key);
    };
    uint32_t words[32][4];
    for (int lane = 0; lane < 32; ++lane) {
      const int q = lane % 4, r0 = lane / 4;
      uint8_t s_acc[16];
      for (int j = 0; j < 4; ++j)
        for (int e = 0; e < 4; ++e) s_acc[4 * j + e] = pval(r0 + 8 * (e >> 1), 8 * j + 2 * q + (e & 1));
      for (int w = 0; w < 4; ++w) {
        uint32_t x = 0;
        for (int i = 0; i < 4; ++i) x |= static_cast<uint32_t>(s_acc[p_acc_index(0, w, i)]) << (8 * i);
        words[lane][w] = x;
      }
    }
    int wrong = 0;
    for (int lane = 0; lane < 32; ++lane) {
      const int q = lane % 4, base = lane & ~3, r0 = lane / 4;
      for (int w = 0; w < 4; ++w) {
        const uint32_t x = words[base | natural_src(q, 0)][w], y = words[base | natural_src(q, 1)][w];
        const uint32_t got = fp8m::prmt(x, y, natural_selector(q));
        for (int i = 0; i < 4; ++i)
          wrong += static_cast<uint8_t>(got >> (8 * i)) != pval(r0 + 8 * (w & 1), 16 * (w >> 1) + 4 * q + i);
      }
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("shared-memory plans and register splits of the five kernels") {
  using namespace flashptx::fa3;
  auto check = [](auto layout, int d, int bn) {
    using L = decltype(layout);
    CAPTURE(d);
    CHECK(L::kHeadDim == d);
    CHECK(L::kBlockN == bn);
    CHECK(L::kNumBarriers == 2 * L::kQSlots + 5 * L::kStages);  // Q full/empty per slot; K, V, Vt rings
    CHECK(L::kQSlots == 2);
    CHECK(L::kOffK == 2 * L::kQBytes);
    CHECK(L::kOffBar + 8 * L::kNumBarriers + 1024 == L::kSmemBytes);
    CHECK(L::kSmemBytes <= 227 * 1024);
    CHECK(L::kBarVtEmpty + L::kStages == static_cast<uint32_t>(L::kNumBarriers));  // the last slot is used
    CHECK(L::kProducerRegs * 128 + L::kConsumerRegs * 256 == 168 * 384);
  };
  check(Fp8Layout<kFp8D64>{}, 64, 128);
  check(Fp8Layout<kFp8D128>{}, 128, 128);
  check(Fp8Layout<kFp8D256>{}, 256, 64);
  check(Fp8Layout<kFp8D64N256>{}, 64, 256);
  check(Fp8Layout<kFp8D128N192>{}, 128, 192);
  CHECK(Fp8Layout<kFp8D128N192>::kUniformKVDescalesOnly);
  CHECK(Fp8Layout<kFp8D64N256>::kUniformKVDescalesOnly);
  CHECK(!Fp8Layout<kFp8D128>::kUniformKVDescalesOnly);
}

TEST_CASE("references: the 2^8 offset cancels, e4m3 P moves O a little, LSE unchanged") {
  const int64_t B = 1, SQ = 40, SK = 70, H = 2, D = 64;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  auto make = [&](int64_t s, std::vector<uint8_t>* c, std::vector<float>* ds) {
    std::vector<uint16_t> in(static_cast<size_t>(B * s * H * D));
    for (auto& x : in) x = flashptx::float_to_bf16(nd(rng));
    c->assign(in.size(), 0);
    ds->assign(static_cast<size_t>(B * H * ((s + 127) / 128)), 0.f);
    flashptx::ref::quantize_fp8({in.data(), c->data(), ds->data(), B, s, H, D, s * H * D, H * D, D, s * H * D, H * D, D,
                                 true, FLASHPTX_FP8_SCALE_PER_BLOCK, 0});
  };
  std::vector<uint8_t> q, k, v;
  std::vector<float> dq, dk, dv;
  make(SQ, &q, &dq);
  make(SK, &k, &dk);
  make(SK, &v, &dv);
  flashptx::ref::Fp8Attention a;
  a.batch = B; a.seqlen_q = SQ; a.seqlen_k = SK; a.heads_q = H; a.heads_kv = H; a.head_dim = D; a.causal = true;
  a.q = {q.data(), SQ * H * D, H * D, D, 1, dq.data(), FLASHPTX_FP8_SCALE_PER_BLOCK, H, SQ};
  a.k = {k.data(), SK * H * D, H * D, D, 1, dk.data(), FLASHPTX_FP8_SCALE_PER_BLOCK, H, SK};
  a.v = {v.data(), SK * H * D, H * D, D, 1, dv.data(), FLASHPTX_FP8_SCALE_PER_BLOCK, H, SK};
  std::vector<double> o, lse, os, lses;
  flashptx::ref::fp8_attention(a, false, &o, &lse);
  flashptx::ref::fp8_attention(a, true, &os, &lses);
  double e = 0, el = 0;
  for (size_t i = 0; i < o.size(); ++i) e = std::max(e, std::fabs(o[i] - os[i]));
  for (size_t i = 0; i < lse.size(); ++i) el = std::max(el, std::fabs(lse[i] - lses[i]));
  CHECK(e > 1e-4);   // rounding P to e4m3 is visible
  CHECK(e < 0.1);    // and small
  CHECK(el < 1e-12); // the offset leaves LSE unchanged
  // Row 0 of a causal 40 x 70 problem sees 31 keys; every row has a finite LSE.
  for (double x : lse) CHECK(std::isfinite(x));
}

}  // TEST_SUITE

TEST_SUITE("host fp8 forward") {

// Which kernel a call launches (src/sm90/fa3_fwd_fp8.cu: wide_blocks_apply, persistent_applies,
// paired_applies): a host-only decision, checked here against the rules the launch comments and
// README state.
TEST_CASE("kernel choice: wide blocks only for uniform K/V descales, V row-major, >= 2k keys; the loop flavour for non-causal up to 4k keys; the paired walk for causal calls where it measured ahead") {
  flashptx_fwd_fp8_params p;
  const auto name = [&](int64_t d, int64_t sk, int causal, flashptx_fp8_scale_granularity kv, bool vt) {
    flashptx_fwd_fp8_params_contiguous(&p, reinterpret_cast<void*>(256), reinterpret_cast<void*>(512),
                                       reinterpret_cast<void*>(768), reinterpret_cast<void*>(1024), nullptr,
                                       reinterpret_cast<const float*>(2048), reinterpret_cast<const float*>(4096),
                                       reinterpret_cast<const float*>(8192), 1, 1000, sk, 4, 4, d,
                                       FLASHPTX_FP8_SCALE_PER_BLOCK, causal);
    p.k_granularity = p.v_granularity = kv;
    if (vt) p.v_layout = FLASHPTX_FP8_V_KEYS_CONTIGUOUS;
    const char* n = flashptx::fwd_fp8_kernel_name(p);
    return std::string(n != nullptr ? n : "(none)");
  };
  const auto kB = FLASHPTX_FP8_SCALE_PER_BLOCK, kH = FLASHPTX_FP8_SCALE_PER_HEAD, kT = FLASHPTX_FP8_SCALE_PER_TENSOR;
  // Per-block K/V descales: 128-key (d256: 64-key) blocks whatever the length.
  CHECK(name(128, 8192, 0, kB, false) == "fa3_fwd_fp8_sm90_d128");
  CHECK(name(128, 4096, 0, kB, false) == "fa3_fwd_fp8_sm90_d128_p");
  CHECK(name(64, 8192, 1, kB, false) == "fa3_fwd_fp8_sm90_d64_paired");
  // Uniform K/V descales from 2048 keys: the wide blocks (loop flavour only, any grid; causal d128 at
  // 2048: the paired walk's 128-key blocks instead).
  CHECK(name(128, 2048, 0, kH, false) == "fa3_fwd_fp8_sm90_d128_n192_p");
  CHECK(name(128, 16384, 1, kT, false) == "fa3_fwd_fp8_sm90_d128_n192_p");
  CHECK(name(64, 8192, 0, kH, false) == "fa3_fwd_fp8_sm90_d64_n256_p");
  CHECK(name(128, 2047, 0, kH, false) == "fa3_fwd_fp8_sm90_d128_p");
  // V given keys-contiguous: one TMA box per Vt stage, so never the two-chunk wide stage.
  CHECK(name(128, 8192, 0, kH, true) == "fa3_fwd_fp8_sm90_d128");
  // d256 has no wide kernel (O is 128 registers per thread); long non-causal calls one CTA per tile.
  CHECK(name(256, 8192, 0, kH, false) == "fa3_fwd_fp8_sm90_d256");
  CHECK(name(256, 8192, 1, kH, false) == "fa3_fwd_fp8_sm90_d256_paired");
  // Causal: the paired walk up to 8k keys with 128-key blocks; at d64 with the wide blocks at every
  // length; at d128, where the wide blocks apply, up to 2k keys (then the wide kernel, one CTA per tile).
  CHECK(name(256, 1024, 1, kH, false) == "fa3_fwd_fp8_sm90_d256_paired");
  CHECK(name(128, 4096, 1, kB, false) == "fa3_fwd_fp8_sm90_d128_paired");
  CHECK(name(128, 1024, 1, kH, false) == "fa3_fwd_fp8_sm90_d128_paired");
  CHECK(name(64, 512, 1, kT, true) == "fa3_fwd_fp8_sm90_d64_paired");
  CHECK(name(128, 4097, 1, kB, false) == "fa3_fwd_fp8_sm90_d128_paired");
  CHECK(name(128, 2048, 1, kH, false) == "fa3_fwd_fp8_sm90_d128_paired");
  CHECK(name(64, 8192, 1, kH, false) == "fa3_fwd_fp8_sm90_d64_n256_paired");
  CHECK(name(64, 16384, 1, kT, false) == "fa3_fwd_fp8_sm90_d64_n256_paired");
  CHECK(name(128, 4096, 1, kH, false) == "fa3_fwd_fp8_sm90_d128_n192_p");
  CHECK(name(128, 8192, 1, kB, false) == "fa3_fwd_fp8_sm90_d128_paired");
  CHECK(name(128, 8193, 1, kB, false) == "fa3_fwd_fp8_sm90_d128");
  CHECK(name(256, 16384, 1, kH, false) == "fa3_fwd_fp8_sm90_d256");
  CHECK(name(256, 1024, 0, kH, false) == "fa3_fwd_fp8_sm90_d256_p");
  CHECK(name(96, 1024, 0, kH, false) == "(none)");
}

}  // TEST_SUITE
