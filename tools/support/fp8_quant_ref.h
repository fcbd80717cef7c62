// The host reference of flashptx_quantize_fp8 (include/flashptx.h), and the e4m3 format.
//
// e4m3 (OCP FP8, "fn"): 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities, one NaN per sign
// (S.1111.111), largest finite 448, smallest subnormal 2^-9. The encoder is written here from the
// definition (round to nearest, ties to even, finite values beyond 448 saturated as cvt.satfinite
// does, NaN -> 0x7F), and tested against every code decoded (tests/host/test_fp8_quantize.cpp).
//
// The quantization reference repeats the kernel's steps (src/sm90/fp8_quantize.cu) in the same fp32
// order: bf16/fp16 -> fp32, the Walsh-Hadamard butterflies (strides 1, 2, 4, ...; lower a + b, upper
// a - b), the multiply by fp32(1/sqrt(n)), amax, descale = amax / 448, y / descale (IEEE fp32
// division), then the fp32 quotient, exact in fp64, rounded once to e4m3. The fp64 transform
// (hadamard_fp64) is the mathematical one, for the properties (orthonormality, Q K^T preserved).
#pragma once
#include <cstdint>
#include <vector>

#include "include/flashptx.h"

namespace flashptx::ref {

double e4m3_decode(uint8_t code);   // NaN for 0x7F / 0xFF
uint8_t e4m3_encode(double x);      // nearest, ties to even, saturating at +-448, NaN -> 0x7F

// The orthonormal Walsh-Hadamard transform of n values (n a power of two), in place, fp64.
void hadamard_fp64(double* x, int n);
// The same in the kernel's fp32 order, scale fp32(1/sqrt(n)).
void hadamard_fp32(float* x, int n);

// A host tensor to quantize: the fields of flashptx_quantize_fp8_params with host pointers (in: the
// 16-bit storage; out: bytes; descale: quantize_fp8_descale_count values).
struct QuantizeFp8Host {
  const uint16_t* in;
  uint8_t* out;
  float* descale;
  int64_t batch, seqlen, heads, head_dim;
  int64_t in_sb, in_ss, in_sh, out_sb, out_ss, out_sh;
  bool bf16;
  flashptx_fp8_scale_granularity granularity;
  int hadamard_block;
};
void quantize_fp8(const QuantizeFp8Host& q);

}  // namespace flashptx::ref
