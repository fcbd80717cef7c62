// The C ABI's validation (include/flashptx.h), on any machine: every bad input gets its own status
// and a message, launches nothing, and needs no GPU. The device check is exercised where there is
// no sm_90 device (the GPU suites cover the launch path).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "flashptx.h"
#include "tests/test_env.h"

namespace {

// Fake, well-aligned device pointers: validation never dereferences them.
alignas(16) unsigned char g_fake[4][64];

flashptx_fwd_params valid() {
  flashptx_fwd_params p;
  flashptx_fwd_params_contiguous(&p, g_fake[0], g_fake[1], g_fake[2], g_fake[3], nullptr, 2, 100, 120, 8, 2, 128,
                                 FLASHPTX_BF16, 1);
  return p;
}

flashptx_status check(const flashptx_fwd_params& p) { return flashptx_fwd_check(&p); }

}  // namespace

TEST_SUITE("host api") {

TEST_CASE("a valid problem passes validation and leaves no message") {
  CHECK(check(valid()) == FLASHPTX_OK);
  CHECK(std::string(flashptx_last_error()).empty());
}

TEST_CASE("each bad input has its own status and a message naming it") {
  struct Bad { const char* what; flashptx_status want; void (*mutate)(flashptx_fwd_params&); const char* needle; };
  const Bad bad[] = {
      {"head_dim 96", FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, [](flashptx_fwd_params& p) { p.head_dim = 96; }, "head_dim 96"},
      {"head_dim 32", FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, [](flashptx_fwd_params& p) { p.head_dim = 32; }, "head_dim"},
      {"fp32 inputs", FLASHPTX_ERR_UNSUPPORTED_DTYPE,
       [](flashptx_fwd_params& p) { p.q_dtype = p.k_dtype = p.v_dtype = p.o_dtype = FLASHPTX_FP32; }, "dtype"},
      {"fp8 inputs", FLASHPTX_ERR_UNSUPPORTED_DTYPE,
       [](flashptx_fwd_params& p) { p.q_dtype = p.k_dtype = p.v_dtype = p.o_dtype = FLASHPTX_FP8_E4M3; }, "dtype"},
      {"k fp16, q bf16", FLASHPTX_ERR_DTYPE_MISMATCH, [](flashptx_fwd_params& p) { p.k_dtype = FLASHPTX_FP16; }, "share"},
      {"o fp16, q bf16", FLASHPTX_ERR_DTYPE_MISMATCH, [](flashptx_fwd_params& p) { p.o_dtype = FLASHPTX_FP16; }, "share"},
      {"null q", FLASHPTX_ERR_NULL_POINTER, [](flashptx_fwd_params& p) { p.q = nullptr; }, "non-NULL"},
      {"null o", FLASHPTX_ERR_NULL_POINTER, [](flashptx_fwd_params& p) { p.o = nullptr; }, "non-NULL"},
      {"misaligned v", FLASHPTX_ERR_MISALIGNED,
       [](flashptx_fwd_params& p) { p.v = static_cast<const char*>(p.v) + 8; }, "16-byte"},
      {"misaligned lse", FLASHPTX_ERR_MISALIGNED,
       [](flashptx_fwd_params& p) { p.lse = reinterpret_cast<float*>(g_fake[3] + 2); }, "lse"},
      {"row stride not 16 B", FLASHPTX_ERR_MISALIGNED, [](flashptx_fwd_params& p) { p.q_row_stride += 4; }, "row stride"},
      {"negative stride", FLASHPTX_ERR_BAD_STRIDES, [](flashptx_fwd_params& p) { p.k_head_stride = -128; }, "negative"},
      {"zero row stride", FLASHPTX_ERR_BAD_STRIDES, [](flashptx_fwd_params& p) { p.v_row_stride = 0; }, "stride is 0"},
      {"overlapping O rows", FLASHPTX_ERR_BAD_STRIDES, [](flashptx_fwd_params& p) { p.o_row_stride = 64; }, "overlap"},
      {"heads_q 7 over 2", FLASHPTX_ERR_BAD_HEADS, [](flashptx_fwd_params& p) { p.heads_q = 7; }, "multiple"},
      {"heads_kv 0", FLASHPTX_ERR_BAD_HEADS, [](flashptx_fwd_params& p) { p.heads_kv = 0; }, "multiple"},
      {"negative seqlen", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_fwd_params& p) { p.seqlen_k = -1; }, "negative"},
      {"NaN scale", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_fwd_params& p) { p.softmax_scale = NAN; }, "softmax_scale"},
      {"negative scale", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_fwd_params& p) { p.softmax_scale = -1.f; }, "softmax_scale"},
  };
  for (const Bad& b : bad) {
    INFO(b.what);
    flashptx_fwd_params p = valid();
    b.mutate(p);
    CHECK(check(p) == b.want);
    const std::string msg = flashptx_last_error();
    CHECK_MESSAGE(msg.find(flashptx_status_name(b.want)) == 0, msg);
    CHECK_MESSAGE(msg.find(b.needle) != std::string::npos, msg);
  }
  CHECK(flashptx_fwd_check(nullptr) == FLASHPTX_ERR_NULL_PARAMS);
  CHECK(flashptx_fwd(nullptr, nullptr) == FLASHPTX_ERR_NULL_PARAMS);
}

TEST_CASE("batch 0 or seqlen_q 0 is a successful no-op, even with null pointers") {
  flashptx_fwd_params p = valid();
  p.batch = 0;
  p.q = p.k = p.v = nullptr;
  p.o = nullptr;
  CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_OK);
  p = valid();
  p.seqlen_q = 0;
  CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_OK);
}

}  // TEST_SUITE

// Runs only where there is no sm_90 device (the runner excludes "nogpu*" suites on an sm_90 machine,
// and says so): there the GPU suites cover the launch path instead.
TEST_SUITE("nogpu api") {

TEST_CASE("without an sm_90 device the call is refused with FLASHPTX_ERR_UNSUPPORTED_DEVICE") {
  REQUIRE(flashptx_test::device_cc() != 90);
  flashptx_fwd_params p = valid();
  CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_ERR_UNSUPPORTED_DEVICE);
  CHECK(std::string(flashptx_last_error()).find("FLASHPTX_ERR_UNSUPPORTED_DEVICE") == 0);
  flashptx_kernel_info info{};
  CHECK(flashptx_fwd_kernel_info(&p, &info) == FLASHPTX_ERR_UNSUPPORTED_DEVICE);
}

}  // TEST_SUITE

TEST_SUITE("host api") {

TEST_CASE("every status has a distinct name") {
  const flashptx_status all[] = {FLASHPTX_OK, FLASHPTX_ERR_NULL_POINTER, FLASHPTX_ERR_MISALIGNED,
                                 FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, FLASHPTX_ERR_UNSUPPORTED_DTYPE,
                                 FLASHPTX_ERR_DTYPE_MISMATCH, FLASHPTX_ERR_BAD_STRIDES, FLASHPTX_ERR_BAD_HEADS,
                                 FLASHPTX_ERR_BAD_SHAPE, FLASHPTX_ERR_UNSUPPORTED_DEVICE, FLASHPTX_ERR_CUDA,
                                 FLASHPTX_ERR_NULL_PARAMS, FLASHPTX_ERR_BAD_OPTION};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i)
    for (size_t j = i + 1; j < sizeof(all) / sizeof(all[0]); ++j)
      CHECK(std::strcmp(flashptx_status_name(all[i]), flashptx_status_name(all[j])) != 0);
}

}  // TEST_SUITE
