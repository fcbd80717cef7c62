// The FP8 forward's host references (fp64): attention on dequantized e4m3 inputs, exact, or "same
// precision" (P rounded to e4m3 with the 2^8 offset, O rounded to bf16, as flashptx_fwd_fp8 stores
// it). The GPU suite "gpu_sm90 fa3 fp8 forward" asserts max|O - exact| <= 2 max|O_same - exact| + 1e-4.
#pragma once
#include <cstdint>
#include <vector>

#include "include/flashptx.h"

namespace flashptx::ref {

// One e4m3 tensor with its descales: element (b, s, h, e) = decode(codes[b sb + s ss + h sh + e sd]) *
// descale[the group of (b, h, s)], the group by granularity over `heads` heads and `seqlen` rows
// (flashptx_quantize_fp8's layouts: 1, [batch, heads], [batch, heads, ceil(seqlen / 128)]).
struct Fp8Tensor {
  const uint8_t* codes = nullptr;
  int64_t sb = 0, ss = 0, sh = 0, sd = 1;
  const float* descale = nullptr;
  flashptx_fp8_scale_granularity granularity = FLASHPTX_FP8_SCALE_PER_TENSOR;
  int64_t heads = 1, seqlen = 0;
  double at(int64_t b, int64_t s, int64_t h, int64_t e) const;
};
int64_t fp8_descale_index(flashptx_fp8_scale_granularity g, int64_t heads, int64_t seqlen, int64_t b, int64_t h,
                          int64_t s);

struct Fp8Attention {
  int64_t batch = 0, seqlen_q = 0, seqlen_k = 0, heads_q = 0, heads_kv = 0, head_dim = 0;
  bool causal = false;     // bottom-right aligned
  double softmax_scale = 0;  // 0: 1/sqrt(head_dim)
  Fp8Tensor q, k, v;
};

// O dense [batch, seqlen_q, heads_q, head_dim], LSE [batch, heads_q, seqlen_q] (natural log; -inf for
// a row without a visible key, whose O is 0). same_precision: P = e4m3(2^(x - m + 8)) with m the row
// max (x the scores in base 2), the row sum of the unrounded values, O rounded to bf16.
// score_abs (optional, [batch, heads_q, seqlen_q]): per row, the largest softmax_scale * sum_e |q_e k_e|
// over its visible keys (natural-log units): what bounds the error of a score whose products are
// accumulated with fewer mantissa bits than fp32 (Hopper's FP8 MMA; tests/gpu/test_prim_wgmma.cpp).
void fp8_attention(const Fp8Attention& a, bool same_precision, std::vector<double>* o, std::vector<double>* lse,
                   std::vector<double>* score_abs = nullptr);

}  // namespace flashptx::ref
