// Validation of the C ABI's parameters (src/validate.h).
#include "src/validate.h"

#include <algorithm>
#include <cmath>

namespace flashptx {

namespace {
bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
flashptx_status bad(flashptx_status s, std::string* msg, std::string text) {
  *msg = std::move(text);
  return s;
}
// The head dims every kernel family specialises (forward, varlen, backward, FP8 quantize).
// `whose` names the family in the message ("the backward's "), or is empty.
flashptx_status check_head_dim(int64_t head_dim, std::string* msg, const char* whose = "") {
  if (head_dim == 64 || head_dim == 128 || head_dim == 256) return FLASHPTX_OK;
  return bad(FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, msg,
             "head_dim " + std::to_string(head_dim) + " is not one of " + whose + "64, 128, 256");
}
// GQA/MQA: every key/value head serves the same number of query heads.
flashptx_status check_heads(int64_t heads_q, int64_t heads_kv, std::string* msg) {
  if (heads_q > 0 && heads_kv > 0 && heads_q % heads_kv == 0) return FLASHPTX_OK;
  return bad(FLASHPTX_ERR_BAD_HEADS, msg,
             "heads_q (" + std::to_string(heads_q) + ") must be a positive multiple of heads_kv (" +
                 std::to_string(heads_kv) + ")");
}
}  // namespace

flashptx_status check_strides(const char* name, int64_t batch, int64_t seqlen, int64_t heads, int64_t d, int64_t sb,
                              int64_t ss, int64_t sh, bool must_not_overlap, std::string* msg) {
  const int64_t extent[3] = {batch, seqlen, heads};
  const int64_t stride[3] = {sb, ss, sh};
  const char* what[3] = {"batch", "row", "head"};
  for (int i = 0; i < 3; ++i) {
    if (stride[i] < 0) return bad(FLASHPTX_ERR_BAD_STRIDES, msg, std::string(name) + " " + what[i] + " stride is negative");
    if (extent[i] > 1 && stride[i] == 0)
      return bad(FLASHPTX_ERR_BAD_STRIDES, msg,
                 std::string(name) + " " + what[i] + " stride is 0 (broadcast is not supported)");
    if (extent[i] > 1 && stride[i] % 8 != 0)
      return bad(FLASHPTX_ERR_MISALIGNED, msg,
                 std::string(name) + " " + what[i] + " stride " + std::to_string(stride[i]) +
                     " is not a multiple of 8 elements (16 bytes)");
    if (extent[i] > 1 && stride[i] >= (int64_t(1) << 39))
      return bad(FLASHPTX_ERR_BAD_STRIDES, msg, std::string(name) + " " + what[i] + " stride is 2^39 elements or more");
  }
  if (must_not_overlap) {
    // Sufficient condition for distinct (b, s, h) rows never to share an element: sorted by stride,
    // each stride covers the previous stride times its extent (the innermost row is d elements).
    struct Dim { int64_t stride, extent; };
    Dim dims[3] = {{sb, batch}, {ss, seqlen}, {sh, heads}};
    std::sort(dims, dims + 3, [](const Dim& a, const Dim& b) { return a.stride < b.stride; });
    int64_t covered = d;
    for (const Dim& x : dims) {
      if (x.extent <= 1) continue;
      if (x.stride < covered)
        return bad(FLASHPTX_ERR_BAD_STRIDES, msg,
                   std::string(name) + " strides make rows overlap (a stride of " + std::to_string(x.stride) +
                       " inside a span of " + std::to_string(covered) + " elements)");
      covered = x.stride * x.extent;
    }
  }
  return FLASHPTX_OK;
}

flashptx_status validate_fwd(const flashptx_fwd_params& p, std::string* msg) {
  if (p.batch < 0 || p.seqlen_q < 0 || p.seqlen_k < 0 || p.heads_q < 0 || p.heads_kv < 0 || p.head_dim < 0)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "a size is negative");
  if (!std::isfinite(p.softmax_scale) || p.softmax_scale < 0.f)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "softmax_scale must be finite and positive (0 selects 1/sqrt(d))");
  if (p.batch == 0 || p.seqlen_q == 0) return FLASHPTX_OK;  // nothing to compute

  if (p.q_dtype != FLASHPTX_BF16 && p.q_dtype != FLASHPTX_FP16)
    return bad(FLASHPTX_ERR_UNSUPPORTED_DTYPE, msg, "q dtype must be FLASHPTX_BF16 or FLASHPTX_FP16");
  if (p.k_dtype != p.q_dtype || p.v_dtype != p.q_dtype || p.o_dtype != p.q_dtype)
    return bad(FLASHPTX_ERR_DTYPE_MISMATCH, msg, "q, k, v and o must share one dtype");
  if (check_head_dim(p.head_dim, msg) != FLASHPTX_OK) return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
  if (check_heads(p.heads_q, p.heads_kv, msg) != FLASHPTX_OK) return FLASHPTX_ERR_BAD_HEADS;
  if (p.q == nullptr || p.k == nullptr || p.v == nullptr || p.o == nullptr)
    return bad(FLASHPTX_ERR_NULL_POINTER, msg, "q, k, v and o must be non-NULL");
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.o))
    return bad(FLASHPTX_ERR_MISALIGNED, msg, "q, k, v and o must be 16-byte aligned");
  if (p.lse != nullptr && reinterpret_cast<uintptr_t>(p.lse) % 4 != 0)
    return bad(FLASHPTX_ERR_MISALIGNED, msg, "lse must be 4-byte aligned");
  if (p.tile_counter != nullptr && reinterpret_cast<uintptr_t>(p.tile_counter) % 8 != 0)
    return bad(FLASHPTX_ERR_MISALIGNED, msg, "tile_counter must be 8-byte aligned");
  const int64_t kMaxInt = 0x7fffffff;
  if (p.seqlen_q > kMaxInt - 256 || p.seqlen_k > kMaxInt - 256 || p.heads_q > 65535 || p.batch > kMaxInt)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "seqlen must stay below 2^31 - 256, heads_q below 65536");
  if ((p.seqlen_q + 63) / 64 * p.heads_q * p.batch > kMaxInt)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "too many output tiles for one grid (2^31 - 1)");

  flashptx_status s;
  const int64_t d = p.head_dim;
  if ((s = check_strides("q", p.batch, p.seqlen_q, p.heads_q, d, p.q_batch_stride, p.q_row_stride, p.q_head_stride,
                         false, msg)) != FLASHPTX_OK)
    return s;
  // Without keys, K and V are never read: their strides (dense ones have a zero batch stride then)
  // do not matter.
  if (p.seqlen_k > 0 &&
      (s = check_strides("k", p.batch, p.seqlen_k, p.heads_kv, d, p.k_batch_stride, p.k_row_stride, p.k_head_stride,
                         false, msg)) != FLASHPTX_OK)
    return s;
  if (p.seqlen_k > 0 &&
      (s = check_strides("v", p.batch, p.seqlen_k, p.heads_kv, d, p.v_batch_stride, p.v_row_stride, p.v_head_stride,
                         false, msg)) != FLASHPTX_OK)
    return s;
  return check_strides("o", p.batch, p.seqlen_q, p.heads_q, d, p.o_batch_stride, p.o_row_stride, p.o_head_stride, true,
                       msg);
}

// One prefix-sum array of a varlen call: num_seqs + 1 host int32 values, 0 first, never decreasing,
// `total` last; its longest sequence at most max_seqlen.
static flashptx_status check_cu_seqlens(const char* name, const int32_t* cu, int64_t num_seqs, int64_t total,
                                        int64_t max_seqlen, const char* total_name, const char* max_name,
                                        std::string* msg) {
  if (cu == nullptr)
    return bad(FLASHPTX_ERR_NULL_POINTER, msg, std::string(name) + " is NULL (the host copy of the prefix sums)");
  if (cu[0] != 0)
    return bad(FLASHPTX_ERR_BAD_CU_SEQLENS, msg,
               std::string(name) + "[0] is " + std::to_string(cu[0]) + ", not 0");
  int64_t longest = 0, longest_at = 0;
  for (int64_t b = 0; b < num_seqs; ++b) {
    const int64_t len = static_cast<int64_t>(cu[b + 1]) - cu[b];
    if (len < 0)
      return bad(FLASHPTX_ERR_BAD_CU_SEQLENS, msg,
                 std::string(name) + " decreases at entry " + std::to_string(b + 1) + " (" + std::to_string(cu[b]) +
                     " then " + std::to_string(cu[b + 1]) + ")");
    if (len > longest) { longest = len; longest_at = b; }
  }
  if (cu[num_seqs] != total)
    return bad(FLASHPTX_ERR_BAD_CU_SEQLENS, msg,
               std::string(name) + "[num_seqs] is " + std::to_string(cu[num_seqs]) + ", not " + total_name + " (" +
                   std::to_string(total) + ")");
  if (max_seqlen < longest)
    return bad(FLASHPTX_ERR_BAD_CU_SEQLENS, msg,
               std::string(max_name) + " (" + std::to_string(max_seqlen) + ") is below the longest sequence of " +
                   name + " (" + std::to_string(longest) + ", sequence " + std::to_string(longest_at) + ")");
  return FLASHPTX_OK;
}

flashptx_status validate_fwd_varlen(const flashptx_fwd_varlen_params& p, std::string* msg) {
  if (p.num_seqs < 0 || p.total_q < 0 || p.total_k < 0 || p.max_seqlen_q < 0 || p.max_seqlen_k < 0 ||
      p.heads_q < 0 || p.heads_kv < 0 || p.head_dim < 0)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "a size is negative");
  if (!std::isfinite(p.softmax_scale) || p.softmax_scale < 0.f)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "softmax_scale must be finite and positive (0 selects 1/sqrt(d))");
  if (p.num_seqs > FLASHPTX_VARLEN_MAX_SEQS)
    return bad(FLASHPTX_ERR_TOO_MANY_SEQS, msg,
               "num_seqs " + std::to_string(p.num_seqs) + " is above FLASHPTX_VARLEN_MAX_SEQS (" +
                   std::to_string(FLASHPTX_VARLEN_MAX_SEQS) + "): split the batch");
  const int64_t kMaxInt = 0x7fffffff;
  if (p.total_q > kMaxInt - 256 || p.total_k > kMaxInt - 256)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "total_q and total_k must stay below 2^31 - 256");
  if (p.num_seqs == 0) {
    if (p.total_q != 0 || p.total_k != 0)
      return bad(FLASHPTX_ERR_BAD_CU_SEQLENS, msg, "num_seqs is 0 but total_q or total_k is not");
    return FLASHPTX_OK;  // nothing to compute
  }
  flashptx_status s;
  if ((s = check_cu_seqlens("cu_seqlens_q", p.cu_seqlens_q, p.num_seqs, p.total_q, p.max_seqlen_q, "total_q",
                            "max_seqlen_q", msg)) != FLASHPTX_OK)
    return s;
  if ((s = check_cu_seqlens("cu_seqlens_k", p.cu_seqlens_k, p.num_seqs, p.total_k, p.max_seqlen_k, "total_k",
                            "max_seqlen_k", msg)) != FLASHPTX_OK)
    return s;
  if (p.total_q == 0) return FLASHPTX_OK;  // every sequence empty: nothing to compute

  if (p.dtype != FLASHPTX_BF16 && p.dtype != FLASHPTX_FP16)
    return bad(FLASHPTX_ERR_UNSUPPORTED_DTYPE, msg, "dtype must be FLASHPTX_BF16 or FLASHPTX_FP16");
  if (check_head_dim(p.head_dim, msg) != FLASHPTX_OK) return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
  if (check_heads(p.heads_q, p.heads_kv, msg) != FLASHPTX_OK) return FLASHPTX_ERR_BAD_HEADS;
  if (p.heads_q > 65535) return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "heads_q must stay below 65536");
  const bool keys = p.total_k > 0;
  if (p.q == nullptr || p.o == nullptr || (keys && (p.k == nullptr || p.v == nullptr)))
    return bad(FLASHPTX_ERR_NULL_POINTER, msg, "q, k, v and o must be non-NULL");
  if (!aligned16(p.q) || !aligned16(p.o) || (keys && (!aligned16(p.k) || !aligned16(p.v))))
    return bad(FLASHPTX_ERR_MISALIGNED, msg, "q, k, v and o must be 16-byte aligned");
  if (p.lse != nullptr && reinterpret_cast<uintptr_t>(p.lse) % 4 != 0)
    return bad(FLASHPTX_ERR_MISALIGNED, msg, "lse must be 4-byte aligned");
  // Tiles: at most ceil(len / 64) query blocks per sequence; the sum over sequences is below
  // total_q / 64 + num_seqs.
  if ((p.total_q / 64 + p.num_seqs) * p.heads_q > kMaxInt)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "too many output tiles for one grid (2^31 - 1)");

  // The packed tensors as [1, total, heads, d]: the batch stride is never used.
  const int64_t d = p.head_dim;
  if ((s = check_strides("q", 1, p.total_q, p.heads_q, d, 0, p.q_row_stride, p.q_head_stride, false, msg)) !=
      FLASHPTX_OK)
    return s;
  if (keys && (s = check_strides("k", 1, p.total_k, p.heads_kv, d, 0, p.k_row_stride, p.k_head_stride, false, msg)) !=
                  FLASHPTX_OK)
    return s;
  if (keys && (s = check_strides("v", 1, p.total_k, p.heads_kv, d, 0, p.v_row_stride, p.v_head_stride, false, msg)) !=
                  FLASHPTX_OK)
    return s;
  return check_strides("o", 1, p.total_q, p.heads_q, d, 0, p.o_row_stride, p.o_head_stride, true, msg);
}

flashptx_status validate_bwd_shape(const flashptx_bwd_params& p, std::string* msg) {
  if (p.batch < 0 || p.seqlen_q < 0 || p.seqlen_k < 0 || p.heads_q < 0 || p.heads_kv < 0 || p.head_dim < 0)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "a size is negative");
  if (!std::isfinite(p.softmax_scale) || p.softmax_scale < 0.f)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "softmax_scale must be finite and positive (0 selects 1/sqrt(d))");
  if (p.batch == 0) return FLASHPTX_OK;  // nothing to compute
  if (p.dtype != FLASHPTX_BF16 && p.dtype != FLASHPTX_FP16)
    return bad(FLASHPTX_ERR_UNSUPPORTED_DTYPE, msg, "dtype must be FLASHPTX_BF16 or FLASHPTX_FP16");
  if (check_head_dim(p.head_dim, msg, "the backward's ") != FLASHPTX_OK) return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
  if (check_heads(p.heads_q, p.heads_kv, msg) != FLASHPTX_OK) return FLASHPTX_ERR_BAD_HEADS;
  const int64_t kMaxInt = 0x7fffffff;
  if (p.seqlen_q > kMaxInt - 256 || p.seqlen_k > kMaxInt - 256 || p.heads_q > 65535 || p.batch > 65535)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "seqlen must stay below 2^31 - 256, heads_q and batch below 65536");
  return FLASHPTX_OK;
}

flashptx_status validate_bwd(const flashptx_bwd_params& p, int64_t workspace_needed, std::string* msg) {
  flashptx_status s = validate_bwd_shape(p, msg);
  if (s != FLASHPTX_OK || p.batch == 0) return s;
  struct T { const char* name; const void* ptr; bool used; };
  const bool rows_q = p.seqlen_q > 0, rows_k = p.seqlen_k > 0;
  const T tensors[] = {{"q", p.q, rows_q},   {"k", p.k, rows_k},   {"v", p.v, rows_k},
                       {"o", p.o, rows_q},   {"dout", p.dout, rows_q}, {"dq", p.dq, rows_q},
                       {"dk", p.dk, rows_k}, {"dv", p.dv, rows_k}};
  for (const T& t : tensors) {
    if (!t.used) continue;
    if (t.ptr == nullptr) return bad(FLASHPTX_ERR_NULL_POINTER, msg, std::string(t.name) + " is NULL");
    if (!aligned16(t.ptr)) return bad(FLASHPTX_ERR_MISALIGNED, msg, std::string(t.name) + " is not 16-byte aligned");
  }
  if (rows_q && p.lse == nullptr) return bad(FLASHPTX_ERR_NULL_POINTER, msg, "lse is NULL (the forward's LSE is needed)");
  if (rows_q && reinterpret_cast<uintptr_t>(p.lse) % 4 != 0)
    return bad(FLASHPTX_ERR_MISALIGNED, msg, "lse must be 4-byte aligned");
  const int64_t d = p.head_dim;
  struct S { const char* name; int64_t seq, heads, sb, ss, sh; bool out; };
  const S strides[] = {
      {"q", p.seqlen_q, p.heads_q, p.q_batch_stride, p.q_row_stride, p.q_head_stride, false},
      {"k", p.seqlen_k, p.heads_kv, p.k_batch_stride, p.k_row_stride, p.k_head_stride, false},
      {"v", p.seqlen_k, p.heads_kv, p.v_batch_stride, p.v_row_stride, p.v_head_stride, false},
      {"o", p.seqlen_q, p.heads_q, p.o_batch_stride, p.o_row_stride, p.o_head_stride, false},
      {"dout", p.seqlen_q, p.heads_q, p.do_batch_stride, p.do_row_stride, p.do_head_stride, false},
      {"dq", p.seqlen_q, p.heads_q, p.dq_batch_stride, p.dq_row_stride, p.dq_head_stride, true},
      {"dk", p.seqlen_k, p.heads_kv, p.dk_batch_stride, p.dk_row_stride, p.dk_head_stride, true},
      {"dv", p.seqlen_k, p.heads_kv, p.dv_batch_stride, p.dv_row_stride, p.dv_head_stride, true},
  };
  for (const S& x : strides) {
    if (x.seq == 0) continue;
    if ((s = check_strides(x.name, p.batch, x.seq, x.heads, d, x.sb, x.ss, x.sh, x.out, msg)) != FLASHPTX_OK) return s;
  }
  if (workspace_needed > 0) {
    if (p.workspace == nullptr)
      return bad(FLASHPTX_ERR_WORKSPACE, msg,
                 "workspace is NULL (" + std::to_string(workspace_needed) + " bytes needed: flashptx_bwd_workspace_size)");
    if (reinterpret_cast<uintptr_t>(p.workspace) % 256 != 0)
      return bad(FLASHPTX_ERR_WORKSPACE, msg, "workspace must be 256-byte aligned");
    if (p.workspace_bytes < workspace_needed)
      return bad(FLASHPTX_ERR_WORKSPACE, msg,
                 "workspace_bytes " + std::to_string(p.workspace_bytes) + " is below the " +
                     std::to_string(workspace_needed) + " bytes this problem needs");
  }
  return FLASHPTX_OK;
}

int64_t quantize_fp8_descale_count(const flashptx_quantize_fp8_params& p) {
  switch (p.granularity) {
    case FLASHPTX_FP8_SCALE_PER_TENSOR: return 1;
    case FLASHPTX_FP8_SCALE_PER_HEAD: return p.batch * p.heads;
    case FLASHPTX_FP8_SCALE_PER_BLOCK:
      return p.batch * p.heads * ((p.seqlen + FLASHPTX_FP8_SCALE_BLOCK_ROWS - 1) / FLASHPTX_FP8_SCALE_BLOCK_ROWS);
  }
  return 0;
}

namespace {
// e4m3 rows are 1-byte elements: 16-byte rows need strides (of dimensions with more than one
// element) that are multiples of 16. Negative strides are check_strides' to refuse.
flashptx_status check_e4m3_alignment(const char* name, int64_t batch, int64_t seqlen, int64_t heads, int64_t sb,
                                     int64_t ss, int64_t sh, std::string* msg) {
  const int64_t extent[3] = {batch, seqlen, heads};
  const int64_t stride[3] = {sb, ss, sh};
  const char* what[3] = {"batch", "row", "head"};
  for (int i = 0; i < 3; ++i)
    if (extent[i] > 1 && stride[i] > 0 && stride[i] % 16 != 0)
      return bad(FLASHPTX_ERR_MISALIGNED, msg,
                 std::string(name) + " " + what[i] + " stride " + std::to_string(stride[i]) +
                     " is not a multiple of 16 elements (16 bytes of e4m3)");
  return FLASHPTX_OK;
}
}  // namespace

flashptx_status validate_quantize_fp8(const flashptx_quantize_fp8_params& p, std::string* msg) {
  if (p.batch < 0 || p.seqlen < 0 || p.heads < 0 || p.head_dim < 0)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "a size is negative");
  if (p.batch > 65535 || p.heads > 65535 || p.seqlen > 0x7fffffffLL - 256)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "batch and heads must stay below 65536, seqlen below 2^31 - 256");
  if (p.granularity != FLASHPTX_FP8_SCALE_PER_TENSOR && p.granularity != FLASHPTX_FP8_SCALE_PER_HEAD &&
      p.granularity != FLASHPTX_FP8_SCALE_PER_BLOCK)
    return bad(FLASHPTX_ERR_BAD_GRANULARITY, msg,
               "granularity " + std::to_string(static_cast<int>(p.granularity)) +
                   " is not FLASHPTX_FP8_SCALE_PER_TENSOR, _PER_HEAD or _PER_BLOCK");
  if (p.in_dtype != FLASHPTX_BF16 && p.in_dtype != FLASHPTX_FP16)
    return bad(FLASHPTX_ERR_UNSUPPORTED_DTYPE, msg, "in dtype must be FLASHPTX_BF16 or FLASHPTX_FP16");
  if (p.out_dtype != FLASHPTX_FP8_E4M3)
    return bad(FLASHPTX_ERR_UNSUPPORTED_DTYPE, msg, "out dtype must be FLASHPTX_FP8_E4M3");
  if (check_head_dim(p.head_dim, msg) != FLASHPTX_OK) return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
  if (p.hadamard_block != 0 && !(p.hadamard_block == p.head_dim || (p.hadamard_block == 128 && p.head_dim >= 128)))
    return bad(FLASHPTX_ERR_BAD_HADAMARD, msg,
               "hadamard_block " + std::to_string(p.hadamard_block) + " is not 0, head_dim (" +
                   std::to_string(p.head_dim) + ") or 128 (at most head_dim)");
  if (p.batch == 0 || p.seqlen == 0 || p.heads == 0) return FLASHPTX_OK;  // nothing to compute

  if (p.in == nullptr || p.out == nullptr || p.descale == nullptr)
    return bad(FLASHPTX_ERR_NULL_POINTER, msg, "in, out and descale must be non-NULL");
  if (!aligned16(p.in) || !aligned16(p.out))
    return bad(FLASHPTX_ERR_MISALIGNED, msg, "in and out must be 16-byte aligned");
  if (reinterpret_cast<uintptr_t>(p.descale) % 4 != 0)
    return bad(FLASHPTX_ERR_MISALIGNED, msg, "descale must be 4-byte aligned");
  flashptx_status s;
  const int64_t d = p.head_dim;
  if ((s = check_strides("in", p.batch, p.seqlen, p.heads, d, p.in_batch_stride, p.in_row_stride, p.in_head_stride,
                         false, msg)) != FLASHPTX_OK)
    return s;
  if ((s = check_e4m3_alignment("out", p.batch, p.seqlen, p.heads, p.out_batch_stride, p.out_row_stride,
                                 p.out_head_stride, msg)) != FLASHPTX_OK)
    return s;
  if ((s = check_strides("out", p.batch, p.seqlen, p.heads, d, p.out_batch_stride, p.out_row_stride,
                         p.out_head_stride, true, msg)) != FLASHPTX_OK)
    return s;
  return FLASHPTX_OK;
}

namespace {
bool granularity_ok(flashptx_fp8_scale_granularity g) {
  return g == FLASHPTX_FP8_SCALE_PER_TENSOR || g == FLASHPTX_FP8_SCALE_PER_HEAD || g == FLASHPTX_FP8_SCALE_PER_BLOCK;
}
// e4m3 tensors: check_strides' rules, then check_e4m3_alignment.
flashptx_status check_e4m3_strides(const char* name, int64_t batch, int64_t seqlen, int64_t heads, int64_t d,
                                   int64_t sb, int64_t ss, int64_t sh, std::string* msg) {
  flashptx_status s = check_strides(name, batch, seqlen, heads, d, sb, ss, sh, false, msg);
  if (s != FLASHPTX_OK) return s;
  return check_e4m3_alignment(name, batch, seqlen, heads, sb, ss, sh, msg);
}
}  // namespace

flashptx_status validate_fwd_fp8(const flashptx_fwd_fp8_params& p, std::string* msg) {
  if (p.batch < 0 || p.seqlen_q < 0 || p.seqlen_k < 0 || p.heads_q < 0 || p.heads_kv < 0 || p.head_dim < 0)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "a size is negative");
  if (!std::isfinite(p.softmax_scale) || p.softmax_scale < 0.f)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "softmax_scale must be finite and positive (0 selects 1/sqrt(d))");
  if (p.batch == 0 || p.seqlen_q == 0) return FLASHPTX_OK;  // nothing to compute

  if (p.q_dtype != FLASHPTX_FP8_E4M3 || p.k_dtype != FLASHPTX_FP8_E4M3 || p.v_dtype != FLASHPTX_FP8_E4M3)
    return bad(FLASHPTX_ERR_UNSUPPORTED_DTYPE, msg, "q, k and v dtypes must be FLASHPTX_FP8_E4M3");
  if (p.o_dtype != FLASHPTX_BF16)
    return bad(FLASHPTX_ERR_UNSUPPORTED_DTYPE, msg, "o dtype must be FLASHPTX_BF16");
  const flashptx_fp8_scale_granularity gs[3] = {p.q_granularity, p.k_granularity, p.v_granularity};
  const char* gname[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i)
    if (!granularity_ok(gs[i]))
      return bad(FLASHPTX_ERR_BAD_GRANULARITY, msg,
                 std::string(gname[i]) + "_granularity " + std::to_string(static_cast<int>(gs[i])) +
                     " is not FLASHPTX_FP8_SCALE_PER_TENSOR, _PER_HEAD or _PER_BLOCK");
  if (p.v_layout != FLASHPTX_FP8_V_ROW_MAJOR && p.v_layout != FLASHPTX_FP8_V_KEYS_CONTIGUOUS)
    return bad(FLASHPTX_ERR_BAD_V_LAYOUT, msg,
               "v_layout " + std::to_string(static_cast<int>(p.v_layout)) +
                   " is not FLASHPTX_FP8_V_ROW_MAJOR or FLASHPTX_FP8_V_KEYS_CONTIGUOUS");
  if (check_head_dim(p.head_dim, msg, "the FP8 forward's ") != FLASHPTX_OK) return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
  if (check_heads(p.heads_q, p.heads_kv, msg) != FLASHPTX_OK) return FLASHPTX_ERR_BAD_HEADS;
  if (p.q == nullptr || p.k == nullptr || p.v == nullptr || p.o == nullptr)
    return bad(FLASHPTX_ERR_NULL_POINTER, msg, "q, k, v and o must be non-NULL");
  const float* ds[3] = {p.descale_q, p.descale_k, p.descale_v};
  for (int i = 0; i < 3; ++i)
    if (ds[i] == nullptr)
      return bad(FLASHPTX_ERR_NULL_DESCALE, msg, std::string("descale_") + gname[i] + " is NULL (every FP8 tensor needs its descales)");
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.o))
    return bad(FLASHPTX_ERR_MISALIGNED, msg, "q, k, v and o must be 16-byte aligned");
  for (int i = 0; i < 3; ++i)
    if (reinterpret_cast<uintptr_t>(ds[i]) % 4 != 0)
      return bad(FLASHPTX_ERR_MISALIGNED, msg, std::string("descale_") + gname[i] + " must be 4-byte aligned");
  if (p.lse != nullptr && reinterpret_cast<uintptr_t>(p.lse) % 4 != 0)
    return bad(FLASHPTX_ERR_MISALIGNED, msg, "lse must be 4-byte aligned");
  const int64_t kMaxInt = 0x7fffffff;
  if (p.seqlen_q > kMaxInt - 256 || p.seqlen_k > kMaxInt - 256 || p.heads_q > 65535 || p.batch > 65535)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "seqlen must stay below 2^31 - 256, heads_q and batch below 65536");
  if ((p.seqlen_q + 127) / 128 * p.heads_q * p.batch > kMaxInt)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "too many output tiles for one grid (2^31 - 1)");
  // The descale arrays are indexed with 32-bit strides in the kernel.
  if (p.batch * p.heads_q * ((p.seqlen_q + 127) / 128) > kMaxInt ||
      p.batch * p.heads_kv * ((p.seqlen_k + 127) / 128) > kMaxInt)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "more than 2^31 - 1 descales");

  flashptx_status s;
  const int64_t d = p.head_dim;
  if ((s = check_e4m3_strides("q", p.batch, p.seqlen_q, p.heads_q, d, p.q_batch_stride, p.q_row_stride,
                              p.q_head_stride, msg)) != FLASHPTX_OK)
    return s;
  // Without keys, K and V are never read: their strides do not matter.
  if (p.seqlen_k > 0) {
    if ((s = check_e4m3_strides("k", p.batch, p.seqlen_k, p.heads_kv, d, p.k_batch_stride, p.k_row_stride,
                                p.k_head_stride, msg)) != FLASHPTX_OK)
      return s;
    if (p.v_layout == FLASHPTX_FP8_V_ROW_MAJOR) {
      if ((s = check_e4m3_strides("v", p.batch, p.seqlen_k, p.heads_kv, d, p.v_batch_stride, p.v_row_stride,
                                  p.v_head_stride, msg)) != FLASHPTX_OK)
        return s;
    } else {
      // V^T: (batch, head, dim) strides over rows of seqlen_k contiguous keys.
      if ((s = check_e4m3_strides("v (keys contiguous)", p.batch, d, p.heads_kv, p.seqlen_k, p.v_batch_stride,
                                  p.v_dim_stride, p.v_head_stride, msg)) != FLASHPTX_OK)
        return s;
    }
  }
  return check_strides("o", p.batch, p.seqlen_q, p.heads_q, d, p.o_batch_stride, p.o_row_stride, p.o_head_stride, true,
                       msg);
}

}  // namespace flashptx
