// FA3 backward, the attention sinks' gradient: what the host and the kernel share (plain C++).
//
// With sinks (flashptx_bwd_params::sinks), head h's sink s_h is one more logit in each row's softmax
// that adds no value: P_ij = exp(x_ij - LSE_i), p_i = exp(s_h - LSE_i), LSE_i = log(sum_j exp(x_ij)
// + exp(s_h)), O_i = sum_j P_ij v_j. Its gradient through the softmax (the Jacobian of softmax over
// the keys and the sink together, the sink's "value" 0 so dP_i,sink = dO_i . 0 = 0):
//   dL/ds_h = sum_i p_i (dP_i,sink - sum_k P_ik dP_ik) = -sum_i p_i (dO_i . O_i) = -sum_i p_i delta_i,
// summed over the rows i of head h in every batch; and for the scores dS_ij = P_ij (dP_ij - delta_i)
// with delta_i = sum_k P_ik dP_ik + p_i * 0 = dO_i . O_i, the form without sinks (docs/DECISIONS.md,
// "Attention sinks: the epilogue's denominator"). So the main kernel runs unchanged on the
// sink-aware LSE, and the sinks' gradient is one reduction of what the preprocess already wrote:
// delta and LSE2 = LSE log2(e) per row (src/sm90/fa3_bwd_aux.cuh; +inf on padded rows, where the
// term is then 2^-inf = 0).
#pragma once
#include <cstdint>

namespace flashptx::fa3 {

struct BwdSinkParams {
  const float* lse2;   // workspace: [batch, heads_q, rows_pad], LSE * log2(e) (the preprocess's)
  const float* delta;  // workspace: [batch, heads_q, rows_pad], dO . O (the preprocess's)
  const float* sinks;  // [heads_q] natural-log logits (the caller's)
  float* dsinks;       // [heads_q] written
  int batch, heads_q, seqlen_q, rows_pad;
};

// The reduction's shape: one CTA per query head, kSinkThreads threads, thread t summing rows
// t, t + kSinkThreads, ... of batch 0, then of batch 1, ... in that order, then a fixed tree over
// the threads: the same additions in the same order on every run (no atomics).
inline constexpr int kSinkThreads = 256;

}  // namespace flashptx::fa3
