// CPU fp64 reference for attention forward and backward (used by the tests and the bench).
//
// Semantics (as FlashAttention defines them):
//   S = softmax_scale * Q K^T; causal masks are aligned to the bottom-right: query i sees key j iff
//   j <= i + seqlen_k - seqlen_q. A row that sees no key (possible when seqlen_q > seqlen_k) has
//   O = 0 and LSE = -inf. LSE is the natural-log logsumexp of the scaled scores of the row.
//   GQA/MQA: query head h reads kv head h / (heads_q / heads_kv).
//   Sliding window (window_left, window_right; -1 unbounded), aligned to the bottom-right like the
//   causal mask: query i sees key j iff i + d - window_left <= j <= i + d + window_right, d =
//   seqlen_k - seqlen_q; with causal as well, a key must pass both (the intersection).
//   Softcap c > 0 (FlashAttention-3's convention): the scaled score s becomes c * tanh(s / c), and the
//   softmax and LSE are of these scores; the mask applies after it (a masked key is absent).
//   Attention sinks (sinks non-empty, one logit s_h per query head, natural log): s_h joins every
//   row's softmax denominator and adds no value: LSE = log(sum_j exp(x_j) + exp(s_h)) over the row's
//   visible logits x_j, O = sum_j exp(x_j - LSE) v_j; a row that sees no key has O = 0, LSE = s_h.
//   Its gradient (backward): dsinks_h = -sum over the rows i of head h, every batch, of
//   exp(s_h - LSE_i) (dO_i . O_i) (the sink's probability times -delta_i: the softmax Jacobian with
//   the sink's value 0).
// Tensors are [batch, seqlen, heads, head_dim], last dim contiguous, other strides in elements.
//
// What it is: plain loops, O(B*H*Sq*Sk*d), every sum in double. What it is not: fast. A few thousand
// rows at seqlen 4k, d 128 take a few seconds; the bench checks large shapes on a subset of rows or
// against the GPU reference (tools/support/gpu_reference.h).
//
// "Same dtype" mode (Round::kBF16 / kFP16) models a plain kernel in that dtype, for
// FlashAttention's tolerance rule:  max|out - ref| <= 2 * max|same_dtype_ref - ref| + 1e-5.  It
// rounds the inputs to the dtype, computes scores and the softmax in double, rounds the normalized
// P to the dtype before PV, accumulates PV in double and rounds O to the dtype. LSE is returned
// unrounded (the kernels write it in fp32; its tolerance comes from the rounded inputs).
#pragma once
#include <cstdint>
#include <vector>

#include "tools/support/dtype.h"

namespace flashptx::ref {

enum class Elem { kF32, kF64, kBF16, kFP16 };

// A read-only view of one [batch, seqlen, heads, head_dim] tensor.
struct TensorView {
  const void* data = nullptr;
  Elem type = Elem::kF64;
  int64_t batch_stride = 0, row_stride = 0, head_stride = 0;  // elements; last dim contiguous
  double at(int64_t b, int64_t s, int64_t h, int64_t d) const;
};

struct Problem {
  int64_t batch = 1, seqlen_q = 1, seqlen_k = 1, heads_q = 1, heads_kv = 1, head_dim = 1;
  bool causal = false;
  double softmax_scale = 0;  // 0: 1/sqrt(head_dim)
  int64_t window_left = -1, window_right = -1;  // -1: unbounded
  double softcap = 0;                           // 0: none
  std::vector<double> sinks;                    // empty: none; else [heads_q] logits
  // The sink logit of query head h, -inf without sinks.
  double sink(int64_t h) const;
  double scale() const;
  // The logit of key j from the dot product q.k: the scaled score, capped where softcap > 0.
  double logit(double dot) const;
  int64_t group() const { return heads_q / heads_kv; }
  // The keys query row i may see are [first_key(i), last_key(i)] (bottom-right alignment of the
  // causal mask and of the window). last_key < first_key: the row is fully masked.
  int64_t first_key(int64_t i) const;
  int64_t last_key(int64_t i) const;
  // Number of (query, key) pairs that are not masked, for one (batch, head).
  int64_t valid_pairs() const;
};

// A problem from its sizes (softmax_scale 0: 1/sqrt(head_dim)).
Problem problem(int64_t batch, int64_t seqlen_q, int64_t seqlen_k, int64_t heads_q, int64_t heads_kv,
                int64_t head_dim, bool causal = false, double softmax_scale = 0);

// Views of contiguous [batch, seqlen, heads, head_dim] storage.
TensorView contiguous_q(const void* data, Elem type, const Problem& p);   // seqlen_q, heads_q
TensorView contiguous_kv(const void* data, Elem type, const Problem& p);  // seqlen_k, heads_kv

struct Forward {
  std::vector<double> o;    // [batch, seqlen_q, heads_q, head_dim], contiguous
  std::vector<double> lse;  // [batch, heads_q, seqlen_q], natural log; -inf for fully masked rows
  double o_at(const Problem& p, int64_t b, int64_t i, int64_t h, int64_t d) const {
    return o[((b * p.seqlen_q + i) * p.heads_q + h) * p.head_dim + d];
  }
  double lse_at(const Problem& p, int64_t b, int64_t h, int64_t i) const {
    return lse[(b * p.heads_q + h) * p.seqlen_q + i];
  }
};

struct Backward {
  std::vector<double> dq;  // [batch, seqlen_q, heads_q, head_dim]
  std::vector<double> dk;  // [batch, seqlen_k, heads_kv, head_dim]
  std::vector<double> dv;  // [batch, seqlen_k, heads_kv, head_dim]
  // The fp32 envelope of dQ and dK: sum over the (i, j) pairs of 2^-20 (sum_d |dO_id V_jd| +
  // sum_d |dO_id O_id|) P_ij scale |K_j| (resp. |Q_i|). dS = P (dP - delta) subtracts two fp32 dot
  // products a kernel computes in different orders; where they cancel (a row with one visible key:
  // exactly) the result is fp32 noise that neither the fp64 nor the same-dtype reference has. The
  // GPU tests add max(env) to FlashAttention's tolerance, visibly.
  std::vector<double> dq_env, dk_env;
  // Softcap only (empty otherwise): the first-order envelope of tanh.approx.f32 (relative error
  // 2^-11, PTX ISA), in the forward's LSE and the backward's P, on dV (and added to dq_env and dk_env
  // with the derivative's 1 - t^2): P_ij may be off by 2 P_ij (e_ij + sum_k P_ik e_ik), e_ij =
  // 2^-11 |logit_ij| (forward_row's tanh_env). A GPU test adds it to the rule, visibly.
  std::vector<double> dv_env;
  // With sinks: dL/ds_h [heads_q], and its fp32 envelope per head: sum over the rows of 2^-20 p_sink
  // sum_d |dO_id O_id| (a kernel's delta is an fp32 sum of d products; the reduction adds
  // batch * seqlen_q fp32 terms, within 2^-20 of their absolute sum at the tests' sizes).
  std::vector<double> dsinks, dsinks_env;
  // With sinks: the spread of dsinks_h that storing O in a 16-bit dtype causes, per unit roundoff u
  // (multiply by u: 2^-8 bf16, 2^-11 fp16). dsinks_h depends on O through delta_i = dO_i . O_i, and
  // a kernel's O carries two roundings: P before PV and O itself. Rounding x to nearest moves it by
  // at most u|x|, modelled as independent and uniform, variance u^2 x^2 / 3; so O_id is off with
  // variance u^2 (O_id^2 + sum_j P_ij^2 V_jd^2) / 3, and dsinks_h = -sum_i p_sink,i delta_i with
  // variance u^2 sum_i p_sink,i^2 sum_d dO_id^2 (O_id^2 + sum_j P_ij^2 V_jd^2) / 3: its square root
  // per head is this value. dsinks_h is one such sum, a single draw, so the same-dtype reference's
  // own draw says nothing about the kernel's: a GPU test adds a multiple of u * dsinks_o_sd to the
  // rule (docs/DECISIONS.md, "Attention sinks").
  std::vector<double> dsinks_o_sd;
};

// One output row (batch b, query row i, query head h): writes head_dim values to o_row, returns LSE.
// tanh_env (optional, head_dim values, with *lse_env): where p.softcap > 0, the first-order effect on
// O and on the LSE of a tanh computed within the PTX ISA's bound for tanh.approx.f32 (relative error
// 2^-11): each logit t_j may be off by e_j = 2^-11 |t_j|, which moves P_j by at most P_j (e_j + sum_k
// P_k e_k), so env_d = sum_j P_j (e_j + e) |V_jd| and lse_env = e = sum_k P_k e_k. Zero without a
// softcap. A GPU test adds it to FlashAttention's tolerance, visibly (as Backward::dq_env).
double forward_row(const Problem& p, const TensorView& q, const TensorView& k, const TensorView& v,
                   int64_t b, int64_t i, int64_t h, double* o_row, Round same_dtype = Round::kNone,
                   double* tanh_env = nullptr, double* lse_env = nullptr);

Forward forward(const Problem& p, const TensorView& q, const TensorView& k, const TensorView& v,
                Round same_dtype = Round::kNone);

// Attention over a KV cache (flashptx_fwd_kvcache), written from its definition: sequence b has
// seqlens[b] keys; its key j is row `row` of cache entry `outer` (a cache batch row, or a page) of
// the [outer, row, heads_kv, d] views k_cache / v_cache, where key_at(b, j, &outer, &row) puts it.
// Each sequence is then the forward above with seqlen_k = seqlens[b] (causal bottom-right within
// that length; a row that sees no key: O = 0, LSE = -inf). p.seqlen_k is not read.
using KeyAt = void (*)(const void* ctx, int64_t b, int64_t j, int64_t* outer, int64_t* row);
Forward forward_kvcache(const Problem& p, const std::vector<int32_t>& seqlens, const TensorView& q,
                        const TensorView& k_cache, const TensorView& v_cache, KeyAt key_at, const void* ctx,
                        Round same_dtype = Round::kNone);

// Gradients of the loss L = sum(O * dO) (dO given, [batch, seqlen_q, heads_q, head_dim] view).
// dK and dV of a kv head sum over the query heads of its group. Fully masked rows contribute 0.
// Same-dtype mode (the same rule for gradients, a plain backward in that dtype): the forward's O
// rounded (so delta = dO . O uses it), P rounded before dV = P^T dO, dS rounded before dQ = dS K
// and dK = dS^T Q, and dQ, dK, dV rounded; every sum in double.
Backward backward(const Problem& p, const TensorView& q, const TensorView& k, const TensorView& v,
                  const TensorView& dout, Round same_dtype = Round::kNone);

// max |out - ref| over every element of an O-shaped tensor (out through a view, ref contiguous).
double max_abs_diff_o(const Problem& p, const TensorView& out, const std::vector<double>& ref);
// max |lse - ref| over [batch, heads_q, seqlen_q] (lse contiguous fp32). Equal infinities count 0.
double max_abs_diff_lse(const Problem& p, const float* lse, const std::vector<double>& ref);

}  // namespace flashptx::ref
