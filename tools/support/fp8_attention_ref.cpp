// fp64 references of the FP8 forward (tools/support/fp8_attention_ref.h).
#include "tools/support/fp8_attention_ref.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tools/support/dtype.h"
#include "tools/support/fp8_quant_ref.h"

namespace flashptx::ref {

int64_t fp8_descale_index(flashptx_fp8_scale_granularity g, int64_t heads, int64_t seqlen, int64_t b, int64_t h,
                          int64_t s) {
  switch (g) {
    case FLASHPTX_FP8_SCALE_PER_TENSOR: return 0;
    case FLASHPTX_FP8_SCALE_PER_HEAD: return b * heads + h;
    case FLASHPTX_FP8_SCALE_PER_BLOCK: {
      const int64_t nblk = (seqlen + FLASHPTX_FP8_SCALE_BLOCK_ROWS - 1) / FLASHPTX_FP8_SCALE_BLOCK_ROWS;
      return (b * heads + h) * nblk + s / FLASHPTX_FP8_SCALE_BLOCK_ROWS;
    }
  }
  return 0;
}

double Fp8Tensor::at(int64_t b, int64_t s, int64_t h, int64_t e) const {
  const double code = e4m3_decode(codes[b * sb + s * ss + h * sh + e * sd]);
  return code * static_cast<double>(descale[fp8_descale_index(granularity, heads, seqlen, b, h, s)]);
}

void fp8_attention(const Fp8Attention& a, bool same_precision, std::vector<double>* o, std::vector<double>* lse,
                   std::vector<double>* score_abs) {
  const int64_t B = a.batch, SQ = a.seqlen_q, SK = a.seqlen_k, HQ = a.heads_q, HKV = a.heads_kv, D = a.head_dim;
  const double scale = a.softmax_scale > 0 ? a.softmax_scale : 1.0 / std::sqrt(static_cast<double>(D));
  const double log2e = 1.4426950408889634;
  o->assign(static_cast<size_t>(B * SQ * HQ * D), 0.0);
  lse->assign(static_cast<size_t>(B * HQ * SQ), -std::numeric_limits<double>::infinity());
  if (score_abs != nullptr) score_abs->assign(static_cast<size_t>(B * HQ * SQ), 0.0);
  std::vector<double> kd(static_cast<size_t>(SK * D)), vd(static_cast<size_t>(SK * D)), x(static_cast<size_t>(SK));
  std::vector<double> qrow(static_cast<size_t>(D));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t hk = 0; hk < HKV; ++hk) {
      for (int64_t s = 0; s < SK; ++s)
        for (int64_t e = 0; e < D; ++e) {
          kd[s * D + e] = a.k.at(b, s, hk, e);
          vd[s * D + e] = a.v.at(b, s, hk, e);
        }
      for (int64_t h = hk * (HQ / HKV); h < (hk + 1) * (HQ / HKV); ++h)
        for (int64_t i = 0; i < SQ; ++i) {
          const int64_t visible = a.causal ? std::min<int64_t>(SK, i + (SK - SQ) + 1) : SK;
          if (visible <= 0) continue;  // O = 0, LSE = -inf
          for (int64_t e = 0; e < D; ++e) qrow[e] = a.q.at(b, i, h, e);
          double m = -std::numeric_limits<double>::infinity(), abs_max = 0;
          for (int64_t j = 0; j < visible; ++j) {
            double dot = 0, dot_abs = 0;
            for (int64_t e = 0; e < D; ++e) {
              dot += qrow[e] * kd[j * D + e];
              dot_abs += std::fabs(qrow[e] * kd[j * D + e]);
            }
            x[j] = dot * scale * log2e;  // base 2
            m = std::max(m, x[j]);
            abs_max = std::max(abs_max, dot_abs * scale);
          }
          if (score_abs != nullptr) (*score_abs)[(b * HQ + h) * SQ + i] = abs_max;
          double l = 0;
          double* orow = &(*o)[((b * SQ + i) * HQ + h) * D];
          for (int64_t j = 0; j < visible; ++j) {
            const double u = std::exp2(x[j] - m + (same_precision ? 8.0 : 0.0));
            l += u;
            const double pu = same_precision ? e4m3_decode(e4m3_encode(u)) : u;
            for (int64_t e = 0; e < D; ++e) orow[e] += pu * vd[j * D + e];
          }
          for (int64_t e = 0; e < D; ++e) {
            orow[e] /= l;
            if (same_precision) orow[e] = bf16_to_float(float_to_bf16(static_cast<float>(orow[e])));
          }
          const double lse2 = m + std::log2(l) - (same_precision ? 8.0 : 0.0);
          (*lse)[(b * HQ + h) * SQ + i] = lse2 / log2e;
        }
    }
}

}  // namespace flashptx::ref
