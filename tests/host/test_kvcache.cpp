// flashptx_fwd_kvcache's validation (include/flashptx.h, "inference: attention over a KV cache"), on
// any machine: each bad input the host can see gets its status and a message naming it; the
// workspace size of a forced split count needs no device. (The kernels: tests/gpu/test_fa3_kvcache.cpp.)
#include <doctest/doctest.h>

#include <string>

#include "include/flashptx.h"

namespace {

alignas(256) unsigned char g_fake[8][256];  // validation never dereferences these

// Decode against a paged cache: batch 4, 1 query row, 8 query heads on 2 kv heads, d128, pages of 64,
// 16 pages per sequence of 30 pages.
flashptx_kvcache_params paged() {
  flashptx_kvcache_params p{};
  p.q = g_fake[0]; p.k_cache = g_fake[1]; p.v_cache = g_fake[2]; p.o = g_fake[3];
  p.cache_seqlens = reinterpret_cast<const int32_t*>(g_fake[4]);
  p.page_table = reinterpret_cast<const int32_t*>(g_fake[5]);
  p.batch = 4; p.seqlen_q = 1; p.heads_q = 8; p.heads_kv = 2; p.head_dim = 128;
  p.cache_batch = 30; p.cache_seqlen = 64; p.max_pages = 16; p.page_table_stride = 16;
  p.q_head_stride = p.o_head_stride = 128; p.q_row_stride = p.o_row_stride = 8 * 128;
  p.q_batch_stride = p.o_batch_stride = 8 * 128;
  p.k_head_stride = p.v_head_stride = 128; p.k_row_stride = p.v_row_stride = 2 * 128;
  p.k_batch_stride = p.v_batch_stride = 64 * 2 * 128;
  p.dtype = FLASHPTX_BF16;
  p.num_splits = 1;
  return p;
}
flashptx_kvcache_params contiguous() {
  flashptx_kvcache_params p = paged();
  p.page_table = nullptr;
  p.max_pages = 0; p.page_table_stride = 0;
  p.cache_batch = 4; p.cache_seqlen = 1000;
  p.k_batch_stride = p.v_batch_stride = 1000 * 2 * 128;
  return p;
}

// Two new keys per sequence (k_new / v_new [4, 2, 2, 128]), and rotary over 64 dims.
void add_new(flashptx_kvcache_params& p) {
  p.k_new = g_fake[6];
  p.v_new = g_fake[7];
  p.seqlen_new = 2;
  p.k_new_head_stride = p.v_new_head_stride = 128;
  p.k_new_row_stride = p.v_new_row_stride = 2 * 128;
  p.k_new_batch_stride = p.v_new_batch_stride = 2 * 2 * 128;
}
void add_rotary(flashptx_kvcache_params& p) {
  add_new(p);
  p.rotary_cos = reinterpret_cast<const float*>(g_fake[0]);
  p.rotary_sin = reinterpret_cast<const float*>(g_fake[1]);
  p.rotary_dim = 64;
  p.seqlen_ro = 1024;
}

}  // namespace

TEST_SUITE("host kvcache") {

TEST_CASE("valid paged and contiguous calls pass validation") {
  for (flashptx_kvcache_params p : {paged(), contiguous()}) {
    CHECK(flashptx_fwd_kvcache_check(&p) == FLASHPTX_OK);
    CHECK(std::string(flashptx_last_error()).empty());
    for (int64_t ps : {8, 16, 32, 64, 128, 192, 256}) {
      if (p.page_table == nullptr) break;
      flashptx_kvcache_params q = p;
      q.cache_seqlen = ps;
      q.k_batch_stride = q.v_batch_stride = ps * 2 * 128;
      CHECK_MESSAGE(flashptx_fwd_kvcache_check(&q) == FLASHPTX_OK, "page_size " << ps << ": " << flashptx_last_error());
    }
  }
  flashptx_kvcache_params p = contiguous();
  p.cache_batch_idx = reinterpret_cast<const int32_t*>(g_fake[6]);
  CHECK(flashptx_fwd_kvcache_check(&p) == FLASHPTX_OK);
  for (flashptx_kvcache_params l : {paged(), contiguous()}) {  // left padding, paged or not
    l.cache_leftpad = reinterpret_cast<const int32_t*>(g_fake[7]);
    CHECK_MESSAGE(flashptx_fwd_kvcache_check(&l) == FLASHPTX_OK, flashptx_last_error());
  }
  p.batch = 0;  // nothing to compute
  p.q = nullptr;
  CHECK(flashptx_fwd_kvcache_check(&p) == FLASHPTX_OK);
}

// The same calls at another head dim: every stride in units of d.
flashptx_kvcache_params at_head_dim(flashptx_kvcache_params p, int64_t d) {
  const int64_t rows = p.page_table != nullptr ? 64 : 1000;
  p.head_dim = d;
  p.q_head_stride = p.o_head_stride = d; p.q_row_stride = p.o_row_stride = 8 * d;
  p.q_batch_stride = p.o_batch_stride = 8 * d;
  p.k_head_stride = p.v_head_stride = d; p.k_row_stride = p.v_row_stride = 2 * d;
  p.k_batch_stride = p.v_batch_stride = rows * 2 * d;
  return p;
}

TEST_CASE("head dims 64, 128 and 256 pass validation, with the append and rotary up to d; others do not") {
  for (int64_t d : {64, 128, 256})
    for (flashptx_kvcache_params base : {paged(), contiguous()}) {
      INFO("d=" << d << (base.page_table != nullptr ? " paged" : " contiguous"));
      flashptx_kvcache_params p = at_head_dim(base, d);
      CHECK_MESSAGE(flashptx_fwd_kvcache_check(&p) == FLASHPTX_OK, flashptx_last_error());
      add_rotary(p);
      p.k_new_head_stride = p.v_new_head_stride = d;
      p.k_new_row_stride = p.v_new_row_stride = 2 * d;
      p.k_new_batch_stride = p.v_new_batch_stride = 2 * 2 * d;
      p.rotary_dim = d;  // rotary over the whole head
      int64_t bytes = -1;
      CHECK(flashptx_fwd_kvcache_workspace_size(&p, &bytes) == FLASHPTX_OK);
      CHECK(bytes == (4 * 8 * 1 * d * 2 + 255) / 256 * 256);  // the rotated q, [batch, seqlen_q, heads_q, d] bf16
      p.workspace = g_fake[7];
      p.workspace_bytes = bytes;
      CHECK_MESSAGE(flashptx_fwd_kvcache_check(&p) == FLASHPTX_OK, flashptx_last_error());
      p.rotary_dim = d + 16;
      CHECK(flashptx_fwd_kvcache_check(&p) == FLASHPTX_ERR_BAD_SHAPE);
      CHECK(std::string(flashptx_last_error()).find("at most head_dim " + std::to_string(d)) != std::string::npos);
      // A forced split: the partial O rows are d floats.
      flashptx_kvcache_params s = at_head_dim(base, d);
      s.num_splits = 5;
      CHECK(flashptx_fwd_kvcache_workspace_size(&s, &bytes) == FLASHPTX_OK);
      CHECK(bytes == (5 * 32 * d * 4 + 255) / 256 * 256 + (5 * 32 * 4 + 255) / 256 * 256);
    }
  for (int64_t d : {32, 80, 96, 160, 192, 512}) {
    flashptx_kvcache_params p = at_head_dim(paged(), d);
    INFO("d=" << d);
    CHECK(flashptx_fwd_kvcache_check(&p) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
    CHECK(std::string(flashptx_last_error()).find("head_dim " + std::to_string(d) + ":") != std::string::npos);
    int64_t bytes = -1;
    CHECK(flashptx_fwd_kvcache_workspace_size(&p, &bytes) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
  }
}

TEST_CASE("each bad input has its status and a message naming it") {
  using M = void (*)(flashptx_kvcache_params&);
  struct Bad { const char* what; flashptx_status want; M mutate; const char* needle; };
  const Bad bad[] = {
      {"fp16", FLASHPTX_ERR_UNSUPPORTED, [](flashptx_kvcache_params& p) { p.dtype = FLASHPTX_FP16; }, "bf16 only"},
      {"fp32", FLASHPTX_ERR_UNSUPPORTED_DTYPE, [](flashptx_kvcache_params& p) { p.dtype = FLASHPTX_FP32; }, "dtype"},
      {"d96", FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, [](flashptx_kvcache_params& p) { p.head_dim = 96; },
       "head_dim 96: the KV-cache forward has head_dim 64, 128 or 256"},
      {"d192", FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, [](flashptx_kvcache_params& p) { p.head_dim = 192; }, "head_dim 192"},
      {"heads", FLASHPTX_ERR_BAD_HEADS, [](flashptx_kvcache_params& p) { p.heads_kv = 3; }, "heads_kv (3)"},
      {"negative batch", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_kvcache_params& p) { p.batch = -1; }, "batch is -1"},
      {"nan scale", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_kvcache_params& p) { p.softmax_scale = -1.f; }, "softmax_scale"},
      {"splits", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_kvcache_params& p) { p.num_splits = 129; }, "num_splits is 129"},
      {"page size 48", FLASHPTX_ERR_UNSUPPORTED,
       [](flashptx_kvcache_params& p) { p.cache_seqlen = 48; p.k_batch_stride = p.v_batch_stride = 48 * 256; },
       "page_size 48"},
      {"no pages", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_kvcache_params& p) { p.cache_batch = 0; }, "the cache is empty"},
      {"no page column", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_kvcache_params& p) { p.max_pages = 0; }, "max_pages is 0"},
      {"page table stride", FLASHPTX_ERR_BAD_STRIDES, [](flashptx_kvcache_params& p) { p.page_table_stride = 8; },
       "page_table_stride 8"},
      {"batch idx with pages", FLASHPTX_ERR_UNSUPPORTED,
       [](flashptx_kvcache_params& p) { p.cache_batch_idx = reinterpret_cast<const int32_t*>(g_fake[6]); },
       "cache_batch_idx"},
      {"null q", FLASHPTX_ERR_NULL_POINTER, [](flashptx_kvcache_params& p) { p.q = nullptr; }, "q is NULL"},
      {"null seqlens", FLASHPTX_ERR_NULL_POINTER, [](flashptx_kvcache_params& p) { p.cache_seqlens = nullptr; },
       "cache_seqlens is NULL"},
      {"misaligned k", FLASHPTX_ERR_MISALIGNED, [](flashptx_kvcache_params& p) { p.k_cache = g_fake[1] + 8; },
       "k_cache is not 16-byte"},
      {"misaligned lengths", FLASHPTX_ERR_MISALIGNED,
       [](flashptx_kvcache_params& p) { p.cache_seqlens = reinterpret_cast<const int32_t*>(g_fake[4] + 2); },
       "cache_seqlens"},
      {"misaligned leftpad", FLASHPTX_ERR_MISALIGNED,
       [](flashptx_kvcache_params& p) { p.cache_leftpad = reinterpret_cast<const int32_t*>(g_fake[6] + 1); },
       "cache_leftpad"},
      {"cache row stride", FLASHPTX_ERR_MISALIGNED, [](flashptx_kvcache_params& p) { p.k_row_stride = 260; },
       "k_cache row stride"},
      {"overlapping o", FLASHPTX_ERR_BAD_STRIDES, [](flashptx_kvcache_params& p) { p.o_head_stride = 64; }, "overlap"},
      {"workspace", FLASHPTX_ERR_WORKSPACE, [](flashptx_kvcache_params& p) { p.num_splits = 3; }, "workspace"},
      {"k_new alone", FLASHPTX_ERR_NULL_POINTER, [](flashptx_kvcache_params& p) { add_new(p); p.v_new = nullptr; },
       "v_new is NULL"},
      {"seqlen_new negative", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_kvcache_params& p) { add_new(p); p.seqlen_new = -2; },
       "seqlen_new is -2"},
      {"seqlen_new above the capacity", FLASHPTX_ERR_BAD_SHAPE,
       [](flashptx_kvcache_params& p) { add_new(p); p.seqlen_new = 16 * 64 + 1; }, "above the cache's capacity"},
      {"k_new strides", FLASHPTX_ERR_MISALIGNED, [](flashptx_kvcache_params& p) { add_new(p); p.k_new_row_stride = 12; },
       "k_new row stride"},
      {"rotary without k_new", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_kvcache_params& p) { add_rotary(p); p.k_new = nullptr; },
       "without k_new"},
      {"rotary_dim odd", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_kvcache_params& p) { add_rotary(p); p.rotary_dim = 33; },
       "rotary_dim 33"},
      {"rotary_dim 24", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_kvcache_params& p) { add_rotary(p); p.rotary_dim = 24; },
       "multiple of 16"},
      {"rotary_dim above d", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_kvcache_params& p) { add_rotary(p); p.rotary_dim = 256; },
       "at most head_dim"},
      {"no rotary rows", FLASHPTX_ERR_BAD_SHAPE, [](flashptx_kvcache_params& p) { add_rotary(p); p.seqlen_ro = 0; },
       "seqlen_ro is 0"},
      {"sin missing", FLASHPTX_ERR_NULL_POINTER, [](flashptx_kvcache_params& p) { add_rotary(p); p.rotary_sin = nullptr; },
       "rotary_sin is NULL"},
  };
  for (const Bad& b : bad) {
    flashptx_kvcache_params p = paged();
    b.mutate(p);
    INFO(b.what);
    CHECK(flashptx_fwd_kvcache_check(&p) == b.want);
    CHECK_MESSAGE(std::string(flashptx_last_error()).find(b.needle) != std::string::npos, flashptx_last_error());
  }
  CHECK(flashptx_fwd_kvcache_check(nullptr) == FLASHPTX_ERR_NULL_PARAMS);
}

TEST_CASE("the workspace of a forced split count: partial O and LSE, 256-byte sections") {
  flashptx_kvcache_params p = paged();
  int64_t bytes = -1;
  CHECK(flashptx_fwd_kvcache_workspace_size(&p, &bytes) == FLASHPTX_OK);
  CHECK(bytes == 0);
  p.num_splits = 3;
  CHECK(flashptx_fwd_kvcache_workspace_size(&p, &bytes) == FLASHPTX_OK);
  const int64_t rows = 4 * 8 * 1;
  CHECK(bytes == (3 * rows * 128 * 4 + 255) / 256 * 256 + (3 * rows * 4 + 255) / 256 * 256);
  int n = 0;
  CHECK(flashptx_fwd_kvcache_num_splits(&p, &n) == FLASHPTX_OK);
  CHECK(n == 3);
  p.workspace = g_fake[7];
  p.workspace_bytes = bytes - 1;
  CHECK(flashptx_fwd_kvcache_check(&p) == FLASHPTX_ERR_WORKSPACE);
  CHECK(std::string(flashptx_last_error()).find("workspace of " + std::to_string(bytes)) != std::string::npos);
  p.workspace_bytes = bytes;
  CHECK(flashptx_fwd_kvcache_check(&p) == FLASHPTX_OK);
  p.workspace = g_fake[7] + 16;
  CHECK(flashptx_fwd_kvcache_check(&p) == FLASHPTX_ERR_WORKSPACE);  // not 256-byte aligned
  // Rotary: the rotated q (bf16 [batch, seqlen_q, heads_q, d]) after the partials.
  flashptx_kvcache_params r = paged();
  add_rotary(r);
  CHECK(flashptx_fwd_kvcache_check(&r) == FLASHPTX_ERR_WORKSPACE);  // no split, but the rotated q
  CHECK(flashptx_fwd_kvcache_workspace_size(&r, &bytes) == FLASHPTX_OK);
  CHECK(bytes == (rows * 128 * 2 + 255) / 256 * 256);
  r.workspace = g_fake[7];
  r.workspace_bytes = bytes;
  CHECK(flashptx_fwd_kvcache_check(&r) == FLASHPTX_OK);
  r.num_splits = 3;
  CHECK(flashptx_fwd_kvcache_workspace_size(&r, &bytes) == FLASHPTX_OK);
  CHECK(bytes == (3 * rows * 128 * 4 + 255) / 256 * 256 + (3 * rows * 4 + 255) / 256 * 256 +
                     (rows * 128 * 2 + 255) / 256 * 256);
}

}  // TEST_SUITE
