// The C ABI's validation (include/flashptx.h), on any machine: every bad input gets its own status
// and a message, launches nothing, and needs no GPU. The device check is exercised where there is
// no sm_90 device (the GPU suites cover the launch path).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "include/flashptx.h"
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

TEST_CASE("the forward's head-dim pairs: 96, 192 and (192, 128) pass, V's and O's strides by head_dim_v") {
  for (int64_t d : {64, 96, 128, 192, 256}) {
    flashptx_fwd_params p = valid();
    flashptx_fwd_params_contiguous(&p, g_fake[0], g_fake[1], g_fake[2], g_fake[3], nullptr, 2, 100, 120, 8, 2, d,
                                   FLASHPTX_BF16, 1);
    CHECK_MESSAGE(check(p) == FLASHPTX_OK, d);
    p.head_dim_v = d;  // explicit and equal: the same problem
    CHECK_MESSAGE(check(p) == FLASHPTX_OK, d);
  }
  // (192, 128): V and O of 128 columns, densely strided as such.
  flashptx_fwd_params p;
  flashptx_fwd_params_contiguous(&p, g_fake[0], g_fake[1], g_fake[2], g_fake[3], nullptr, 2, 100, 120, 8, 2, 192,
                                 FLASHPTX_BF16, 0);
  p.head_dim_v = 128;
  p.v_row_stride = 2 * 128; p.v_head_stride = 128; p.v_batch_stride = 120 * 2 * 128;
  p.o_row_stride = 8 * 128; p.o_head_stride = 128; p.o_batch_stride = 100 * 8 * 128;
  CHECK(check(p) == FLASHPTX_OK);
  // O's rows of 128 columns overlap where its head stride is below 128 (the check uses d_v, not d).
  p.o_head_stride = 120; p.o_row_stride = 8 * 120;
  CHECK(check(p) == FLASHPTX_ERR_BAD_STRIDES);
  // The backward takes 96 and 192 (on the d128 and d256 kernels); (192, 128): the backward's case below.
  flashptx_bwd_params b;
  flashptx_bwd_params_contiguous(&b, g_fake[0], g_fake[1], g_fake[2], g_fake[3], reinterpret_cast<const float*>(g_fake[0]),
                                 g_fake[0], g_fake[1], g_fake[2], g_fake[3], 2, 100, 120, 8, 2, 96, FLASHPTX_BF16, 1);
  CHECK(flashptx_bwd_check(&b) == FLASHPTX_ERR_WORKSPACE);  // past the head dim: no workspace given
  b.head_dim = 160;
  CHECK(flashptx_bwd_check(&b) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
}

TEST_CASE("each bad input has its own status and a message naming it") {
  struct Bad { const char* what; flashptx_status want; void (*mutate)(flashptx_fwd_params&); const char* needle; };
  const Bad bad[] = {
      {"head_dim 80", FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, [](flashptx_fwd_params& p) { p.head_dim = 80; }, "(head_dim, head_dim_v) = (80, 80)"},
      {"head_dim 32", FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, [](flashptx_fwd_params& p) { p.head_dim = 32; }, "head_dim"},
      {"head_dim_v 64 beside 128", FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, [](flashptx_fwd_params& p) { p.head_dim_v = 64; },
       "(head_dim, head_dim_v) = (128, 64) is not one of the forward's"},
      {"head_dim_v 128 beside 256", FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM,
       [](flashptx_fwd_params& p) { p.head_dim = 256; p.head_dim_v = 128; }, "(256, 128)"},
      {"negative head_dim_v", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_fwd_params& p) { p.head_dim_v = -128; },
       "head_dim_v is -128"},
      {"fp32 inputs", FLASHPTX_ERR_UNSUPPORTED_DTYPE,
       [](flashptx_fwd_params& p) { p.q_dtype = p.k_dtype = p.v_dtype = p.o_dtype = FLASHPTX_FP32; }, "q_dtype is FLASHPTX_FP32"},
      {"fp8 inputs", FLASHPTX_ERR_UNSUPPORTED_DTYPE,
       [](flashptx_fwd_params& p) { p.q_dtype = p.k_dtype = p.v_dtype = p.o_dtype = FLASHPTX_FP8_E4M3; }, "q_dtype is FLASHPTX_FP8_E4M3"},
      {"k fp16, q bf16", FLASHPTX_ERR_DTYPE_MISMATCH, [](flashptx_fwd_params& p) { p.k_dtype = FLASHPTX_FP16; }, "k_dtype is FLASHPTX_FP16 but q_dtype is FLASHPTX_BF16"},
      {"o fp16, q bf16", FLASHPTX_ERR_DTYPE_MISMATCH, [](flashptx_fwd_params& p) { p.o_dtype = FLASHPTX_FP16; }, "o_dtype is FLASHPTX_FP16"},
      {"null q", FLASHPTX_ERR_NULL_POINTER, [](flashptx_fwd_params& p) { p.q = nullptr; }, "q is NULL"},
      {"null o", FLASHPTX_ERR_NULL_POINTER, [](flashptx_fwd_params& p) { p.o = nullptr; }, "o is NULL"},
      {"misaligned v", FLASHPTX_ERR_MISALIGNED,
       [](flashptx_fwd_params& p) { p.v = static_cast<const char*>(p.v) + 8; }, "v is not 16-byte aligned (0x"},
      {"misaligned lse", FLASHPTX_ERR_MISALIGNED,
       [](flashptx_fwd_params& p) { p.lse = reinterpret_cast<float*>(g_fake[3] + 2); }, "lse must be 4-byte aligned (0x"},
      {"misaligned tile_counter", FLASHPTX_ERR_MISALIGNED,
       [](flashptx_fwd_params& p) { p.tile_counter = reinterpret_cast<unsigned int*>(g_fake[3] + 4); }, "tile_counter must be 8-byte aligned"},
      {"row stride not 16 B", FLASHPTX_ERR_MISALIGNED, [](flashptx_fwd_params& p) { p.q_row_stride += 4; }, "q row stride 1028 is not a multiple of 8"},
      {"negative stride", FLASHPTX_ERR_BAD_STRIDES, [](flashptx_fwd_params& p) { p.k_head_stride = -128; }, "k head stride is -128: it is negative"},
      {"zero row stride", FLASHPTX_ERR_BAD_STRIDES, [](flashptx_fwd_params& p) { p.v_row_stride = 0; }, "v row stride is 0 over"},
      {"overlapping O rows", FLASHPTX_ERR_BAD_STRIDES, [](flashptx_fwd_params& p) { p.o_row_stride = 64; }, "overlap"},
      {"heads_q 7 over 2", FLASHPTX_ERR_BAD_HEADS, [](flashptx_fwd_params& p) { p.heads_q = 7; }, "multiple"},
      {"heads_kv 0", FLASHPTX_ERR_BAD_HEADS, [](flashptx_fwd_params& p) { p.heads_kv = 0; }, "multiple"},
      {"negative seqlen", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_fwd_params& p) { p.seqlen_k = -1; }, "seqlen_k is -1: a size must be 0 or more"},
      {"NaN scale", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_fwd_params& p) { p.softmax_scale = NAN; }, "softmax_scale is nan"},
      {"negative scale", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_fwd_params& p) { p.softmax_scale = -1.f; }, "softmax_scale is -1.0"},
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

TEST_CASE("a negative size: the message names the field and its value, for the check and the launch alike") {
  struct Field { const char* name; int64_t flashptx_fwd_params::*member; };
  const Field fields[] = {{"batch", &flashptx_fwd_params::batch},       {"seqlen_q", &flashptx_fwd_params::seqlen_q},
                          {"seqlen_k", &flashptx_fwd_params::seqlen_k}, {"heads_q", &flashptx_fwd_params::heads_q},
                          {"heads_kv", &flashptx_fwd_params::heads_kv}, {"head_dim", &flashptx_fwd_params::head_dim}};
  for (const Field& f : fields) {
    INFO(f.name);
    flashptx_fwd_params p = valid();
    p.*f.member = -5;
    const std::string want = std::string("FLASHPTX_ERR_BAD_SHAPE: ") + f.name + " is -5: a size must be 0 or more";
    CHECK(check(p) == FLASHPTX_ERR_BAD_SHAPE);
    CHECK(std::string(flashptx_last_error()) == want);
    CHECK(flashptx_fwd(&p, nullptr) == FLASHPTX_ERR_BAD_SHAPE);
    CHECK(std::string(flashptx_last_error()) == want);
  }
}

TEST_CASE("seqlen_k 0: K and V strides are not checked (dense ones have a zero batch stride)") {
  flashptx_fwd_params p;
  flashptx_fwd_params_contiguous(&p, g_fake[0], g_fake[1], g_fake[2], g_fake[3], nullptr, 2, 55, 0, 4, 2, 128,
                                 FLASHPTX_FP16, 1);
  CHECK(p.k_batch_stride == 0);
  CHECK(check(p) == FLASHPTX_OK);
  p.seqlen_k = 10;  // with keys, the same zero stride is refused
  CHECK(check(p) == FLASHPTX_ERR_BAD_STRIDES);
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

// The backward's C ABI: validation, the workspace size, on any machine.
namespace {
alignas(256) unsigned char g_bwd_fake[10][256];
flashptx_bwd_params valid_bwd() {
  flashptx_bwd_params p;
  flashptx_bwd_params_contiguous(&p, g_bwd_fake[0], g_bwd_fake[1], g_bwd_fake[2], g_bwd_fake[3],
                                 reinterpret_cast<const float*>(g_bwd_fake[4]), g_bwd_fake[5], g_bwd_fake[6],
                                 g_bwd_fake[7], g_bwd_fake[8], 2, 100, 120, 8, 2, 128, FLASHPTX_BF16, 1);
  int64_t ws = 0;
  REQUIRE(flashptx_bwd_workspace_size(&p, &ws) == FLASHPTX_OK);
  p.workspace = g_bwd_fake[9];
  p.workspace_bytes = ws;
  return p;
}
}  // namespace

TEST_SUITE("host api") {

TEST_CASE("backward: a valid problem passes; each bad input has its own status and message") {
  CHECK(flashptx_bwd_check(nullptr) == FLASHPTX_ERR_NULL_PARAMS);
  const flashptx_bwd_params ok = valid_bwd();
  CHECK(flashptx_bwd_check(&ok) == FLASHPTX_OK);
  struct Bad { const char* what; flashptx_status want; void (*mutate)(flashptx_bwd_params&); const char* needle; };
  const Bad bad[] = {
      {"head_dim 80", FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, [](flashptx_bwd_params& p) { p.head_dim = 80; },
       "head_dim 80 is not one of the backward's 64, 96, 128, 192, 256"},
      {"fp32", FLASHPTX_ERR_UNSUPPORTED_DTYPE, [](flashptx_bwd_params& p) { p.dtype = FLASHPTX_FP32; }, "dtype is FLASHPTX_FP32"},
      {"heads 7/2", FLASHPTX_ERR_BAD_HEADS, [](flashptx_bwd_params& p) { p.heads_q = 7; }, "multiple"},
      {"negative seqlen", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_bwd_params& p) { p.seqlen_q = -3; }, "seqlen_q is -3"},
      {"NaN scale", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_bwd_params& p) { p.softmax_scale = NAN; }, "softmax_scale"},
      {"null dout", FLASHPTX_ERR_NULL_POINTER, [](flashptx_bwd_params& p) { p.dout = nullptr; }, "dout is NULL"},
      {"null dk", FLASHPTX_ERR_NULL_POINTER, [](flashptx_bwd_params& p) { p.dk = nullptr; }, "dk is NULL"},
      {"null lse", FLASHPTX_ERR_NULL_POINTER, [](flashptx_bwd_params& p) { p.lse = nullptr; }, "lse is NULL"},
      {"misaligned o", FLASHPTX_ERR_MISALIGNED,
       [](flashptx_bwd_params& p) { p.o = static_cast<const char*>(p.o) + 2; }, "o is not 16-byte"},
      {"dq row stride", FLASHPTX_ERR_MISALIGNED, [](flashptx_bwd_params& p) { p.dq_row_stride += 4; }, "dq row stride"},
      {"overlapping dv rows", FLASHPTX_ERR_BAD_STRIDES, [](flashptx_bwd_params& p) { p.dv_row_stride = 64; }, "overlap"},
      {"no workspace", FLASHPTX_ERR_WORKSPACE, [](flashptx_bwd_params& p) { p.workspace = nullptr; }, "workspace is NULL"},
      {"small workspace", FLASHPTX_ERR_WORKSPACE, [](flashptx_bwd_params& p) { p.workspace_bytes -= 1; }, "below"},
      {"misaligned workspace", FLASHPTX_ERR_WORKSPACE,
       [](flashptx_bwd_params& p) { p.workspace = static_cast<char*>(p.workspace) + 16; }, "256-byte"},
  };
  // Head dims 96 and 192: the d128 and d256 kernels over zero columns (src/sm90/fa3_bwd_config.h).
  for (int64_t d : {96, 192}) {
    INFO("head_dim " << d);
    flashptx_bwd_params p;
    flashptx_bwd_params_contiguous(&p, g_bwd_fake[0], g_bwd_fake[1], g_bwd_fake[2], g_bwd_fake[3],
                                   reinterpret_cast<const float*>(g_bwd_fake[4]), g_bwd_fake[5], g_bwd_fake[6],
                                   g_bwd_fake[7], g_bwd_fake[8], 2, 100, 120, 8, 2, d, FLASHPTX_BF16, 1);
    int64_t ws = 0;
    REQUIRE(flashptx_bwd_workspace_size(&p, &ws) == FLASHPTX_OK);
    p.workspace = g_bwd_fake[9];
    p.workspace_bytes = ws;
    CHECK_MESSAGE(flashptx_bwd_check(&p) == FLASHPTX_OK, flashptx_last_error());
  }
  for (const Bad& b : bad) {
    INFO(b.what);
    flashptx_bwd_params p = valid_bwd();
    b.mutate(p);
    CHECK(flashptx_bwd_check(&p) == b.want);
    const std::string msg = flashptx_last_error();
    CHECK_MESSAGE(msg.find(flashptx_status_name(b.want)) == 0, msg);
    CHECK_MESSAGE(msg.find(b.needle) != std::string::npos, msg);
  }
}

// (head_dim, head_dim_v) = (192, 128): V, O, dO and dV of 128 columns, densely strided as such.
flashptx_bwd_params split_bwd(int64_t d, int64_t dv) {
  flashptx_bwd_params p;
  flashptx_bwd_params_contiguous(&p, g_bwd_fake[0], g_bwd_fake[1], g_bwd_fake[2], g_bwd_fake[3],
                                 reinterpret_cast<const float*>(g_bwd_fake[4]), g_bwd_fake[5], g_bwd_fake[6],
                                 g_bwd_fake[7], g_bwd_fake[8], 2, 100, 120, 8, 2, d, FLASHPTX_BF16, 1);
  p.head_dim_v = dv;
  p.v_batch_stride = p.dv_batch_stride = 120 * 2 * dv;
  p.v_row_stride = p.dv_row_stride = 2 * dv;
  p.v_head_stride = p.dv_head_stride = dv;
  p.o_batch_stride = p.do_batch_stride = 100 * 8 * dv;
  p.o_row_stride = p.do_row_stride = 8 * dv;
  p.o_head_stride = p.do_head_stride = dv;
  return p;
}

TEST_CASE("backward: (192, 128) passes with V, O, dO, dV strides at 128 columns; other pairs are refused") {
  flashptx_bwd_params p = split_bwd(192, 128);
  int64_t ws = 0, ws192 = 0;
  REQUIRE_MESSAGE(flashptx_bwd_workspace_size(&p, &ws) == FLASHPTX_OK, flashptx_last_error());
  flashptx_bwd_params q = split_bwd(192, 192);
  REQUIRE(flashptx_bwd_workspace_size(&q, &ws192) == FLASHPTX_OK);
  CHECK(ws == ws192);  // the d256 kernels' accumulators either way
  p.workspace = g_bwd_fake[9];
  p.workspace_bytes = ws;
  CHECK_MESSAGE(flashptx_bwd_check(&p) == FLASHPTX_OK, flashptx_last_error());
  // With a window and a softcap (the d256 local kernel: tests/host/test_plan.cpp).
  flashptx_bwd_params w = p;
  w.window = 1; w.window_left = 30; w.window_right = 0; w.softcap = 5.f;
  CHECK_MESSAGE(flashptx_bwd_check(&w) == FLASHPTX_OK, flashptx_last_error());
  // V's strides are checked at 128 columns: a head stride of 120 makes dV's rows overlap.
  flashptx_bwd_params o = p;
  o.dv_head_stride = 120; o.dv_row_stride = 2 * 120;
  CHECK(flashptx_bwd_check(&o) == FLASHPTX_ERR_BAD_STRIDES);
  CHECK(std::string(flashptx_last_error()).find("dv") != std::string::npos);
  // At 192 columns V's 128-column strides would overlap: the pair, not the strides, is what says 128.
  flashptx_bwd_params n = p;
  n.head_dim_v = 0;
  CHECK(flashptx_bwd_check(&n) == FLASHPTX_ERR_BAD_STRIDES);
  // Other pairs: the status, with the pair in the message.
  for (auto [d, dv] : {std::pair<int64_t, int64_t>{192, 64}, {128, 192}, {256, 128}, {96, 64}}) {
    INFO(d << ", " << dv);
    flashptx_bwd_params x = split_bwd(d, dv);
    CHECK(flashptx_bwd_check(&x) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
    const std::string msg = flashptx_last_error();
    CHECK_MESSAGE(msg.find("(" + std::to_string(d) + ", " + std::to_string(dv) + ")") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("(192, 128)") != std::string::npos, msg);
    int64_t bytes = 0;
    CHECK(flashptx_bwd_workspace_size(&x, &bytes) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
  }
  flashptx_bwd_params neg = split_bwd(192, 128);
  neg.head_dim_v = -128;
  CHECK(flashptx_bwd_check(&neg) == FLASHPTX_ERR_BAD_SHAPE);
}

TEST_CASE("backward: batch 0 is a successful no-op; the workspace size follows the shape") {
  flashptx_bwd_params p = valid_bwd();
  p.batch = 0;
  p.q = nullptr;
  CHECK(flashptx_bwd(&p, nullptr) == FLASHPTX_OK);
  int64_t a = 0, b = 0;
  p = valid_bwd();
  REQUIRE(flashptx_bwd_workspace_size(&p, &a) == FLASHPTX_OK);
  p.seqlen_q *= 2;
  REQUIRE(flashptx_bwd_workspace_size(&p, &b) == FLASHPTX_OK);
  CHECK(b > a);
  CHECK(a % 256 == 0);
  // MHA needs no dK/dV accumulators; GQA does (fp32 [b, h_kv, n_pad, d] each).
  p = valid_bwd();
  p.heads_kv = p.heads_q;
  p.k_row_stride = p.v_row_stride = p.dk_row_stride = p.dv_row_stride = p.heads_kv * p.head_dim;
  REQUIRE(flashptx_bwd_workspace_size(&p, &b) == FLASHPTX_OK);
  CHECK(b < a);
  CHECK(flashptx_bwd_workspace_size(&p, nullptr) == FLASHPTX_ERR_NULL_POINTER);
}

}  // TEST_SUITE
