// Online softmax with a retained reference and conditional rescaling (docs/PROTOCOLS.md,
// "The FA4 roles"; the FA4 paper, Zadouri et al., arXiv 2603.05451, section 3.1.4).
//
// Coordinates:
//   s      raw score (after QK, masking, score mod; before the softmax scale sigma)
//   lambda sigma * log2(e)                       (softmax_scale_log2)
//   a      retained reference, raw coordinate    (SoftmaxSm100.row_max)
//   r      lambda * a, base-2 reference
//   omega  probability offset (0 for BF16/FP16, 4 or 8 for 8-bit P)
//   x      lambda * s - r + omega, the exp2 argument
// State of one row in frame r:  D = sum 2^(b_i - r + omega),  N = sum 2^(b_i - r + omega) v_i.
//
// Per block B: candidate c = max(a, max_B s); delta = (c - a) * lambda. The reference moves only if
// delta > tau; gamma = 2^(-delta) then, else gamma = 1 and the old state is untouched. Both D and N
// are multiplied by the SAME gamma (one frame conversion), then the block is centred on the
// (possibly retained) reference. Output N / D and LSE = (r + log2 D - omega) ln 2 never need the true
// maximum: the reference and the offset cancel.
//
// Every exponential goes through the degree-3 emulation (flashptx/exp2_emulation.h) and every FP32
// operation is an explicit round-to-nearest primitive, so the host oracle and a device kernel
// running this code produce identical bits for r, D and N. (LSE uses log2f, which is not bit-equal
// between glibc and CUDA; it is compared with a tolerance.)
//
// The Mutation argument exists only for the failure lab (docs/PROTOCOLS.md, "The FA4 roles",
// failure lab); kernels use Mutation::none.
#pragma once
#include <cstdint>
#include <cmath>

#include "src/protocol/exp2_emulation.h"

namespace flashptx::softmax {

// The pinned dtype envelopes (thresholds and offsets of flash-attention fa4-v4.0.0.beta23): a
// reference stale by at most tau bounds the unnormalised probability by 2^(tau+omega).
struct DtypeEnvelope {
  const char* dtype;
  float tau;         // rescale threshold, base-2
  float omega;       // probability offset, base-2
  float format_max;  // largest finite value of the P format the source comment names
};
constexpr DtypeEnvelope kEnvelopes[3] = {
    {"BF16/FP16", 8.0f, 0.0f, 65504.0f},
    {"FP8 E4M3FN", 4.0f, 4.0f, 448.0f},
    {"8-bit E5M2", 4.0f, 8.0f, 57344.0f},
};
FLASHPTX_HD float envelope_pmax(float tau, float omega) { return exp2f(tau + omega); }

enum class Mutation : int {
  none = 0,
  convert_only_D,        // gamma applied to the denominator only
  convert_only_N,        // gamma applied to the numerator only
  center_on_candidate,   // skipped update keeps the old reference, but the block is centred on c
  lse_without_offset,    // LSE omits "- omega"
};

template <int DV>
struct RowState {
  float a;       // retained reference, raw score coordinate
  float D;       // denominator in frame lambda * a
  float N[DV];   // numerator in the same frame
  int rescales;  // how many times the reference moved (gamma < 1 or first block)
};

template <int DV>
FLASHPTX_HD void row_init(RowState<DV>& st) {
  st.a = -INFINITY;
  st.D = 0.0f;
  for (int d = 0; d < DV; ++d) st.N[d] = 0.0f;
  st.rescales = 0;
}

// One score block of B entries: s[k], v[k * DV + d]. Returns gamma (the old-state scale).
template <int DV>
FLASHPTX_HD float row_update(RowState<DV>& st, const float* s, const float* v, int B, float lambda,
                             float tau, float omega, Mutation mut = Mutation::none) {
  using namespace flashptx::exp2emu;
  float bmax = s[0];
  for (int k = 1; k < B; ++k) bmax = fmax_f32(bmax, s[k]);
  const float cand = fmax_f32(st.a, bmax);
  const float delta = fmul_rn(fsub_rn(cand, st.a), lambda);  // +inf on the first block
  float a_next = st.a;
  float gamma = 1.0f;
  if (delta > tau) {
    a_next = cand;
    gamma = exp2_degree3(-delta);  // clamps to -127: exactly 0 on the first block
    st.rescales += 1;
  }
  const float a_center = (mut == Mutation::center_on_candidate) ? cand : a_next;
  // x = s * lambda - a * lambda + omega, as one FMA per element (scale_subtract_rowmax).
  const float bias = fsub_rn(omega, fmul_rn(a_center, lambda));
  float psum = 0.0f;
  float acc[DV];
  for (int d = 0; d < DV; ++d)
    acc[d] = (mut == Mutation::convert_only_D) ? st.N[d] : fmul_rn(gamma, st.N[d]);
  for (int k = 0; k < B; ++k) {
    const float p = exp2_degree3(ffma_rn(s[k], lambda, bias));
    psum = fadd_rn(psum, p);
    for (int d = 0; d < DV; ++d) acc[d] = ffma_rn(p, v[k * DV + d], acc[d]);
  }
  const float dscaled = (mut == Mutation::convert_only_N) ? st.D : fmul_rn(gamma, st.D);
  st.D = fadd_rn(dscaled, psum);
  for (int d = 0; d < DV; ++d) st.N[d] = acc[d];
  st.a = a_next;
  return gamma;
}

// Output row N / D (one correctly rounded reciprocal, then multiplies, as the epilogue does).
template <int DV>
FLASHPTX_HD void row_finalize(const RowState<DV>& st, float* out) {
  using namespace flashptx::exp2emu;
#ifdef __CUDA_ARCH__
  const float inv = __frcp_rn(st.D);
#else
  const float inv = 1.0f / st.D;
#endif
  for (int d = 0; d < DV; ++d) out[d] = fmul_rn(st.N[d], inv);
}

// Natural-log sum-exp from the retained frame: (a * lambda + log2 D - omega) ln 2.
template <int DV>
FLASHPTX_HD float row_lse(const RowState<DV>& st, float lambda, float omega,
                          Mutation mut = Mutation::none) {
  using namespace flashptx::exp2emu;
  const float off = (mut == Mutation::lse_without_offset) ? 0.0f : omega;
  const float t = fsub_rn(fadd_rn(fmul_rn(st.a, lambda), log2f(st.D)), off);
  return fmul_rn(t, 0.69314718055994531f);
}

}  // namespace flashptx::softmax
