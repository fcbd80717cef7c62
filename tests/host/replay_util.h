// Shared by the host tests that replay kernels through the tcgen05 emulator
// (test_fa4_replay.cpp, test_fa4_bwd_replay.cpp, test_tcgen05_emulator.cpp).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>

#include "tools/models/tcgen05_emulator.h"
#include "tools/support/dtype.h"

namespace flashptx_test {

// A fresh seed per run; FLASHPTX_TEST_SEED=N replays the run whose INFO printed "seed N".
inline uint32_t fresh_seed() {
  if (const char* s = std::getenv("FLASHPTX_TEST_SEED")) return static_cast<uint32_t>(std::strtoul(s, nullptr, 10));
  return std::random_device{}();
}

// The host side of the kernels' exponential and packing: MUFU.EX2 modelled as correctly rounded
// with .ftz, cvt.rn.{bf16,f16}x2 as round-to-nearest-even.
template <bool Bf16>
struct HostMath {
  static float ex2(float x) {
    float r = static_cast<float>(std::exp2(static_cast<double>(x)));
    if (std::fpclassify(r) == FP_SUBNORMAL) r = 0.0f;  // .ftz
    return r;
  }
  static uint32_t pack(float lo, float hi) {
    const uint16_t a = Bf16 ? flashptx::float_to_bf16(lo) : flashptx::float_to_fp16(lo);
    const uint16_t b = Bf16 ? flashptx::float_to_bf16(hi) : flashptx::float_to_fp16(hi);
    return static_cast<uint32_t>(a) | (static_cast<uint32_t>(b) << 16);
  }
};

// The emulator's operation for one tcgen05.mma a kernel plan describes (any plan's Issue: d_tmem,
// a_tmem_form, a_tmem, a_desc, b_desc, idesc, accumulate).
template <class Issue>
flashptx::models::tcgen05::MmaOp mma_op(const Issue& is, int cta_group, bool fp8 = false) {
  flashptx::models::tcgen05::MmaOp op;
  op.kind = fp8 ? flashptx::models::tcgen05::Kind::kF8F6F4 : flashptx::models::tcgen05::Kind::kF16;
  op.cta_group = cta_group;
  op.d_tmem = is.d_tmem;
  op.a_from_tmem = is.a_tmem_form;
  op.a_tmem = is.a_tmem;
  op.a_desc = is.a_desc;
  op.b_desc = is.b_desc;
  op.idesc = is.idesc;
  op.enable_input_d = is.accumulate;
  return op;
}

}  // namespace flashptx_test
