// Validation of the C ABI's parameters (src/validate.h).
#include "src/validate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <utility>

namespace flashptx {

namespace {
flashptx_status bad(flashptx_status s, std::string* msg, std::string text) {
  *msg = std::move(text);
  return s;
}
std::string str(int64_t v) { return std::to_string(v); }
std::string address(const void* p) {
  char b[32];
  std::snprintf(b, sizeof b, "%p", p);
  return b;
}
std::string dtype_text(flashptx_dtype t) {
  switch (t) {
    case FLASHPTX_BF16: return "FLASHPTX_BF16";
    case FLASHPTX_FP16: return "FLASHPTX_FP16";
    case FLASHPTX_FP32: return "FLASHPTX_FP32";
    case FLASHPTX_FP8_E4M3: return "FLASHPTX_FP8_E4M3";
  }
  return std::to_string(static_cast<int>(t));
}
// A 2-byte element type of the forward and backward: bf16 or fp16.
flashptx_status check_half_dtype(const char* name, flashptx_dtype t, std::string* msg) {
  if (t == FLASHPTX_BF16 || t == FLASHPTX_FP16) return FLASHPTX_OK;
  return bad(FLASHPTX_ERR_UNSUPPORTED_DTYPE, msg, std::string(name) + " is " + dtype_text(t) +
                                                      ": it must be FLASHPTX_BF16 or FLASHPTX_FP16");
}
// Every named field is `want` (the first field's type, checked by the caller).
struct DtypeField { const char* name; flashptx_dtype t; };
flashptx_status check_same_dtype(std::initializer_list<DtypeField> fields, std::string* msg) {
  const DtypeField& first = *fields.begin();
  for (const DtypeField& f : fields)
    if (f.t != first.t)
      return bad(FLASHPTX_ERR_DTYPE_MISMATCH, msg,
                 std::string(f.name) + " is " + dtype_text(f.t) + " but " + first.name + " is " + dtype_text(first.t) +
                     ": q, k, v and o must share one dtype");
  return FLASHPTX_OK;
}
flashptx_status check_scale(float scale, std::string* msg) {
  if (std::isfinite(scale) && scale >= 0.f) return FLASHPTX_OK;
  return bad(FLASHPTX_ERR_BAD_SHAPE, msg,
             "softmax_scale is " + std::to_string(scale) + ": it must be finite and 0 or more (0 selects 1/sqrt(d))");
}
// The score modifiers (include/flashptx.h, flashptx_fwd_params): window bounds of -1 or more (read
// only where window is set), a softcap that is finite and 0 or more.
template <class Params>
flashptx_status check_modifiers(const Params& p, std::string* msg) {
  if (p.window != 0) {
    for (const auto& [name, v] : {std::pair<const char*, int64_t>{"window_left", p.window_left},
                                  std::pair<const char*, int64_t>{"window_right", p.window_right}})
      if (v < -1)
        return bad(FLASHPTX_ERR_BAD_WINDOW, msg,
                   std::string(name) + " is " + std::to_string(v) + ": a window bound is -1 (unbounded) or more");
  }
  if (!(std::isfinite(p.softcap) && p.softcap >= 0.f))
    return bad(FLASHPTX_ERR_BAD_SOFTCAP, msg,
               "softcap is " + std::to_string(p.softcap) + ": it must be finite and 0 (none) or more");
  return FLASHPTX_OK;
}
// A buffer the call reads or writes: non-NULL, 16-byte aligned.
struct Buffer { const char* name; const void* ptr; };
flashptx_status check_buffers(std::initializer_list<Buffer> buffers, std::string* msg) {
  for (const Buffer& b : buffers)
    if (b.ptr == nullptr) return bad(FLASHPTX_ERR_NULL_POINTER, msg, std::string(b.name) + " is NULL");
  for (const Buffer& b : buffers)
    if (reinterpret_cast<uintptr_t>(b.ptr) % 16 != 0)
      return bad(FLASHPTX_ERR_MISALIGNED, msg,
                 std::string(b.name) + " is not 16-byte aligned (" + address(b.ptr) + ")");
  return FLASHPTX_OK;
}
// An optional pointer (NULL allowed) that must be `bytes`-aligned.
flashptx_status check_aligned(const char* name, const void* p, int bytes, std::string* msg) {
  if (p == nullptr || reinterpret_cast<uintptr_t>(p) % bytes == 0) return FLASHPTX_OK;
  return bad(FLASHPTX_ERR_MISALIGNED, msg,
             std::string(name) + " must be " + std::to_string(bytes) + "-byte aligned (" + address(p) + ")");
}
// A size at most `max` (`limit` says the bound in words: "2^31 - 256").
struct Bound { const char* name; int64_t value, max; const char* limit; };
flashptx_status check_bounds(std::initializer_list<Bound> bounds, std::string* msg) {
  for (const Bound& b : bounds)
    if (b.value > b.max)
      return bad(FLASHPTX_ERR_BAD_SHAPE, msg,
                 std::string(b.name) + " is " + str(b.value) + ": it must stay below " + b.limit);
  return FLASHPTX_OK;
}
constexpr int64_t kMaxInt = 0x7fffffff;
constexpr int64_t kMaxRows = kMaxInt - 256 - 1;  // "below 2^31 - 256"
constexpr int64_t kMax16 = 65535;                // "below 65536"
// The grid has at most 2^31 - 1 CTAs of `rows`-row query tiles.
flashptx_status check_tiles(int64_t tiles, std::string* msg) {
  if (tiles <= kMaxInt) return FLASHPTX_OK;
  return bad(FLASHPTX_ERR_BAD_SHAPE, msg,
             "the problem has " + str(tiles) + " output tiles: more than one grid holds (2^31 - 1)");
}
// The head dims every kernel family specialises (forward, varlen, backward, FP8 quantize).
// `whose` names the family in the message ("the backward's "), or is empty.
flashptx_status check_head_dim(int64_t head_dim, std::string* msg, const char* whose = "") {
  if (head_dim == 64 || head_dim == 128 || head_dim == 256) return FLASHPTX_OK;
  return bad(FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, msg,
             "head_dim " + std::to_string(head_dim) + " is not one of " + whose + "64, 128, 256");
}
// The fixed-length backward's head dims: the kernels' 64, 128, 256, and 96 and 192 run on the d128
// and d256 kernels over zero columns (src/sm90/fa3_bwd_config.h bwd_kernel_head_dim).
flashptx_status check_bwd_head_dim(int64_t head_dim, std::string* msg) {
  if (head_dim == 64 || head_dim == 96 || head_dim == 128 || head_dim == 192 || head_dim == 256) return FLASHPTX_OK;
  return bad(FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, msg,
             "head_dim " + std::to_string(head_dim) + " is not one of the backward's 64, 96, 128, 192, 256");
}
// The fixed-length backward's (head_dim, head_dim_v) pairs (flashptx_bwd_params::head_dim_v, 0 meaning
// head_dim): the head dims above with V of the same width, and DeepSeek's (192, 128), which runs the d256
// kernels with V, O, dO and dV at 128 columns (docs/DECISIONS.md, "The backward at (192, 128)").
flashptx_status check_bwd_head_dims(int64_t head_dim, int64_t head_dim_v, std::string* msg) {
  const int64_t dv = head_dim_v != 0 ? head_dim_v : head_dim;
  if (dv == head_dim) return check_bwd_head_dim(head_dim, msg);
  if (head_dim == 192 && dv == 128) return FLASHPTX_OK;
  return bad(FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, msg,
             "(head_dim, head_dim_v) = (" + std::to_string(head_dim) + ", " + std::to_string(dv) +
                 ") is not one of the backward's (64, 64), (96, 96), (128, 128), (192, 192), (192, 128), (256, 256)" +
                 " (head_dim_v 0 means head_dim)");
}
// The fixed-length forward's (head_dim, head_dim_v) pairs (flashptx_fwd_params::head_dim_v, 0 meaning
// head_dim): the dims above, 96 and 192, and DeepSeek's (192, 128) (src/sm90/fa3_fwd_hdim.cu).
flashptx_status check_fwd_head_dims(int64_t head_dim, int64_t head_dim_v, std::string* msg) {
  const int64_t dv = head_dim_v != 0 ? head_dim_v : head_dim;
  if (dv == head_dim && (head_dim == 64 || head_dim == 96 || head_dim == 128 || head_dim == 192 || head_dim == 256))
    return FLASHPTX_OK;
  if (head_dim == 192 && dv == 128) return FLASHPTX_OK;
  return bad(FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, msg,
             "(head_dim, head_dim_v) = (" + std::to_string(head_dim) + ", " + std::to_string(dv) +
                 ") is not one of the forward's (64, 64), (96, 96), (128, 128), (192, 192), (192, 128), (256, 256)" +
                 " (head_dim_v 0 means head_dim)");
}
// GQA/MQA: every key/value head serves the same number of query heads.
flashptx_status check_heads(int64_t heads_q, int64_t heads_kv, std::string* msg) {
  if (heads_q > 0 && heads_kv > 0 && heads_q % heads_kv == 0) return FLASHPTX_OK;
  return bad(FLASHPTX_ERR_BAD_HEADS, msg,
             "heads_q (" + std::to_string(heads_q) + ") must be a positive multiple of heads_kv (" +
                 std::to_string(heads_kv) + ")");
}

}  // namespace

flashptx_status check_sizes(std::initializer_list<SizeField> sizes, std::string* msg) {
  for (const SizeField& f : sizes)
    if (f.value < 0) return bad(FLASHPTX_ERR_BAD_SHAPE, msg, std::string(f.name) + " is " + str(f.value) + ": a size must be 0 or more");
  return FLASHPTX_OK;
}

namespace {
// The sizes (each 0 or more) and the softmax scale of a fixed-length problem: the forward's, the
// backward's and the FP8 forward's params name them alike.
template <class Params>
flashptx_status check_sizes_and_scale(const Params& p, std::string* msg) {
  const flashptx_status s = check_sizes({{"batch", p.batch}, {"seqlen_q", p.seqlen_q}, {"seqlen_k", p.seqlen_k},
                                         {"heads_q", p.heads_q}, {"heads_kv", p.heads_kv}, {"head_dim", p.head_dim}},
                                        msg);
  return s != FLASHPTX_OK ? s : check_scale(p.softmax_scale, msg);
}
// Sequence lengths below 2^31 - 256, heads_q below 65536, batch at most batch_max.
template <class Params>
flashptx_status check_row_bounds(const Params& p, int64_t batch_max, const char* batch_limit, std::string* msg) {
  return check_bounds({{"seqlen_q", p.seqlen_q, kMaxRows, "2^31 - 256"},
                       {"seqlen_k", p.seqlen_k, kMaxRows, "2^31 - 256"},
                       {"heads_q", p.heads_q, kMax16, "65536"},
                       {"batch", p.batch, batch_max, batch_limit}},
                      msg);
}
}  // namespace

flashptx_status check_strides(const char* name, int64_t batch, int64_t seqlen, int64_t heads, int64_t d, int64_t sb,
                              int64_t ss, int64_t sh, bool must_not_overlap, std::string* msg) {
  const int64_t extent[3] = {batch, seqlen, heads};
  const int64_t stride[3] = {sb, ss, sh};
  const char* what[3] = {"batch", "row", "head"};
  for (int i = 0; i < 3; ++i) {
    if (stride[i] < 0)
      return bad(FLASHPTX_ERR_BAD_STRIDES, msg,
                 std::string(name) + " " + what[i] + " stride is " + str(stride[i]) + ": it is negative");
    if (extent[i] > 1 && stride[i] == 0)
      return bad(FLASHPTX_ERR_BAD_STRIDES, msg,
                 std::string(name) + " " + what[i] + " stride is 0 over " + str(extent[i]) + " " + what[i] +
                     "s (broadcast is not supported)");
    if (extent[i] > 1 && stride[i] % 8 != 0)
      return bad(FLASHPTX_ERR_MISALIGNED, msg,
                 std::string(name) + " " + what[i] + " stride " + std::to_string(stride[i]) +
                     " is not a multiple of 8 elements (16 bytes)");
    if (extent[i] > 1 && stride[i] >= (int64_t(1) << 39))
      return bad(FLASHPTX_ERR_BAD_STRIDES, msg,
                 std::string(name) + " " + what[i] + " stride is " + str(stride[i]) + ": 2^39 elements or more");
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
  flashptx_status s;
  if ((s = check_sizes_and_scale(p, msg)) != FLASHPTX_OK) return s;
  if ((s = check_sizes({{"head_dim_v", p.head_dim_v}}, msg)) != FLASHPTX_OK) return s;
  if ((s = check_modifiers(p, msg)) != FLASHPTX_OK) return s;
  if (p.batch == 0 || p.seqlen_q == 0) return FLASHPTX_OK;  // nothing to compute

  if ((s = check_half_dtype("q_dtype", p.q_dtype, msg)) != FLASHPTX_OK) return s;
  if ((s = check_same_dtype({{"q_dtype", p.q_dtype}, {"k_dtype", p.k_dtype}, {"v_dtype", p.v_dtype},
                             {"o_dtype", p.o_dtype}},
                            msg)) != FLASHPTX_OK)
    return s;
  if (check_fwd_head_dims(p.head_dim, p.head_dim_v, msg) != FLASHPTX_OK) return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
  if (check_heads(p.heads_q, p.heads_kv, msg) != FLASHPTX_OK) return FLASHPTX_ERR_BAD_HEADS;
  if ((s = check_buffers({{"q", p.q}, {"k", p.k}, {"v", p.v}, {"o", p.o}}, msg)) != FLASHPTX_OK) return s;
  if ((s = check_aligned("lse", p.lse, 4, msg)) != FLASHPTX_OK) return s;
  if ((s = check_aligned("tile_counter", p.tile_counter, 8, msg)) != FLASHPTX_OK) return s;
  if ((s = check_aligned("sinks", p.sinks, 4, msg)) != FLASHPTX_OK) return s;
  if ((s = check_row_bounds(p, kMaxInt, "2^31", msg)) != FLASHPTX_OK) return s;
  if ((s = check_tiles((p.seqlen_q + 63) / 64 * p.heads_q * p.batch, msg)) != FLASHPTX_OK) return s;

  const int64_t d = p.head_dim, dv = p.head_dim_v != 0 ? p.head_dim_v : p.head_dim;  // Q, K; V, O
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
      (s = check_strides("v", p.batch, p.seqlen_k, p.heads_kv, dv, p.v_batch_stride, p.v_row_stride, p.v_head_stride,
                         false, msg)) != FLASHPTX_OK)
    return s;
  return check_strides("o", p.batch, p.seqlen_q, p.heads_q, dv, p.o_batch_stride, p.o_row_stride, p.o_head_stride, true,
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

// seqused_q/_k (the varlen structs; NULL: every row used): num_seqs host int32 entries, entry b in
// [0, the length cu_seqlens gives sequence b]. `cu` is already valid (check_cu_seqlens).
static flashptx_status check_seqused(const char* name, const int32_t* used, const char* cu_name, const int32_t* cu,
                                     int64_t num_seqs, std::string* msg) {
  if (used == nullptr) return FLASHPTX_OK;
  for (int64_t b = 0; b < num_seqs; ++b) {
    const int64_t len = static_cast<int64_t>(cu[b + 1]) - cu[b];
    if (used[b] < 0 || used[b] > len)
      return bad(FLASHPTX_ERR_BAD_SHAPE, msg,
                 std::string(name) + "[" + std::to_string(b) + "] is " + std::to_string(used[b]) +
                     (used[b] < 0 ? ": a used length must be 0 or more"
                                  : ", above sequence " + std::to_string(b) + "'s length " + std::to_string(len) +
                                        " in " + cu_name));
  }
  return FLASHPTX_OK;
}
template <class Params>  // flashptx_fwd_varlen_params, flashptx_bwd_varlen_params
static flashptx_status check_seqused(const Params& p, std::string* msg) {
  const flashptx_status s = check_seqused("seqused_q", p.seqused_q, "cu_seqlens_q", p.cu_seqlens_q, p.num_seqs, msg);
  if (s != FLASHPTX_OK) return s;
  return check_seqused("seqused_k", p.seqused_k, "cu_seqlens_k", p.cu_seqlens_k, p.num_seqs, msg);
}

flashptx_status validate_fwd_varlen(const flashptx_fwd_varlen_params& p, std::string* msg) {
  flashptx_status s;
  if ((s = check_sizes({{"num_seqs", p.num_seqs}, {"total_q", p.total_q}, {"total_k", p.total_k},
                        {"max_seqlen_q", p.max_seqlen_q}, {"max_seqlen_k", p.max_seqlen_k}, {"heads_q", p.heads_q},
                        {"heads_kv", p.heads_kv}, {"head_dim", p.head_dim}, {"head_dim_v", p.head_dim_v}},
                       msg)) != FLASHPTX_OK)
    return s;
  if ((s = check_scale(p.softmax_scale, msg)) != FLASHPTX_OK) return s;
  if ((s = check_modifiers(p, msg)) != FLASHPTX_OK) return s;
  if (p.num_seqs > FLASHPTX_VARLEN_MAX_SEQS)
    return bad(FLASHPTX_ERR_TOO_MANY_SEQS, msg,
               "num_seqs " + std::to_string(p.num_seqs) + " is above FLASHPTX_VARLEN_MAX_SEQS (" +
                   std::to_string(FLASHPTX_VARLEN_MAX_SEQS) + "): split the batch");
  if ((s = check_bounds({{"total_q", p.total_q, kMaxRows, "2^31 - 256"}, {"total_k", p.total_k, kMaxRows, "2^31 - 256"}},
                        msg)) != FLASHPTX_OK)
    return s;
  if (p.num_seqs == 0) {
    if (p.total_q != 0 || p.total_k != 0)
      return bad(FLASHPTX_ERR_BAD_CU_SEQLENS, msg,
                 "num_seqs is 0 but total_q is " + str(p.total_q) + " and total_k " + str(p.total_k) +
                     " (both must be 0)");
    return FLASHPTX_OK;  // nothing to compute
  }
  if ((s = check_cu_seqlens("cu_seqlens_q", p.cu_seqlens_q, p.num_seqs, p.total_q, p.max_seqlen_q, "total_q",
                            "max_seqlen_q", msg)) != FLASHPTX_OK)
    return s;
  if ((s = check_cu_seqlens("cu_seqlens_k", p.cu_seqlens_k, p.num_seqs, p.total_k, p.max_seqlen_k, "total_k",
                            "max_seqlen_k", msg)) != FLASHPTX_OK)
    return s;
  if ((s = check_seqused(p, msg)) != FLASHPTX_OK) return s;
  if (p.total_q == 0) return FLASHPTX_OK;  // every sequence empty: nothing to compute

  if ((s = check_half_dtype("dtype", p.dtype, msg)) != FLASHPTX_OK) return s;
  // The fixed-length forward's (head_dim, head_dim_v) pairs (src/sm90/fa3_fwd_hdim_local.cu's varlen
  // twins at 96, 192 and (192, 128)).
  if (check_fwd_head_dims(p.head_dim, p.head_dim_v, msg) != FLASHPTX_OK) {
    *msg = "the varlen forward's " + *msg;
    return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
  }
  if (check_heads(p.heads_q, p.heads_kv, msg) != FLASHPTX_OK) return FLASHPTX_ERR_BAD_HEADS;
  if ((s = check_bounds({{"heads_q", p.heads_q, kMax16, "65536"}}, msg)) != FLASHPTX_OK) return s;
  const bool keys = p.total_k > 0;
  if ((s = check_buffers({{"q", p.q}, {"o", p.o}}, msg)) != FLASHPTX_OK) return s;
  if (keys && (s = check_buffers({{"k", p.k}, {"v", p.v}}, msg)) != FLASHPTX_OK) return s;
  if ((s = check_aligned("lse", p.lse, 4, msg)) != FLASHPTX_OK) return s;
  // Tiles: at most ceil(len / 64) query blocks per sequence; the sum over sequences is below
  // total_q / 64 + num_seqs.
  if ((s = check_tiles((p.total_q / 64 + p.num_seqs) * p.heads_q, msg)) != FLASHPTX_OK) return s;

  // The packed tensors as [1, total, heads, d]: the batch stride is never used.
  const int64_t d = p.head_dim, dv = p.head_dim_v != 0 ? p.head_dim_v : p.head_dim;  // Q, K; V, O
  if ((s = check_strides("q", 1, p.total_q, p.heads_q, d, 0, p.q_row_stride, p.q_head_stride, false, msg)) !=
      FLASHPTX_OK)
    return s;
  if (keys && (s = check_strides("k", 1, p.total_k, p.heads_kv, d, 0, p.k_row_stride, p.k_head_stride, false, msg)) !=
                  FLASHPTX_OK)
    return s;
  if (keys && (s = check_strides("v", 1, p.total_k, p.heads_kv, dv, 0, p.v_row_stride, p.v_head_stride, false, msg)) !=
                  FLASHPTX_OK)
    return s;
  return check_strides("o", 1, p.total_q, p.heads_q, dv, 0, p.o_row_stride, p.o_head_stride, true, msg);
}

flashptx_status validate_bwd_shape(const flashptx_bwd_params& p, std::string* msg) {
  flashptx_status s;
  if ((s = check_sizes_and_scale(p, msg)) != FLASHPTX_OK) return s;
  if ((s = check_sizes({{"head_dim_v", p.head_dim_v}}, msg)) != FLASHPTX_OK) return s;
  if ((s = check_modifiers(p, msg)) != FLASHPTX_OK) return s;
  if (p.batch == 0) return FLASHPTX_OK;  // nothing to compute
  if ((s = check_half_dtype("dtype", p.dtype, msg)) != FLASHPTX_OK) return s;
  if (check_bwd_head_dims(p.head_dim, p.head_dim_v, msg) != FLASHPTX_OK) return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
  if (check_heads(p.heads_q, p.heads_kv, msg) != FLASHPTX_OK) return FLASHPTX_ERR_BAD_HEADS;
  return check_row_bounds(p, kMax16, "65536", msg);
}

flashptx_status validate_bwd(const flashptx_bwd_params& p, int64_t workspace_needed, std::string* msg) {
  const flashptx_status s = validate_bwd_shape(p, msg);
  if (s != FLASHPTX_OK || p.batch == 0) return s;
  return validate_bwd_buffers(p, workspace_needed, msg);
}

flashptx_status validate_bwd_buffers(const flashptx_bwd_params& p, int64_t workspace_needed, std::string* msg) {
  flashptx_status s;
  struct T { const char* name; const void* ptr; bool used; };
  const bool rows_q = p.seqlen_q > 0, rows_k = p.seqlen_k > 0;
  const T tensors[] = {{"q", p.q, rows_q},   {"k", p.k, rows_k},   {"v", p.v, rows_k},
                       {"o", p.o, rows_q},   {"dout", p.dout, rows_q}, {"dq", p.dq, rows_q},
                       {"dk", p.dk, rows_k}, {"dv", p.dv, rows_k}};
  for (const T& t : tensors) {
    if (!t.used) continue;
    if ((s = check_buffers({{t.name, t.ptr}}, msg)) != FLASHPTX_OK) return s;
  }
  if (rows_q && p.lse == nullptr) return bad(FLASHPTX_ERR_NULL_POINTER, msg, "lse is NULL (the forward's LSE is needed)");
  if (rows_q && (s = check_aligned("lse", p.lse, 4, msg)) != FLASHPTX_OK) return s;
  // The sinks (include/flashptx.h, flashptx_bwd_params): both or neither, fp32-aligned.
  if ((p.sinks == nullptr) != (p.dsinks == nullptr))
    return bad(FLASHPTX_ERR_BAD_SINKS, msg,
               std::string(p.sinks == nullptr ? "dsinks is set but sinks is NULL" : "sinks is set but dsinks is NULL") +
                   ": the sinks' gradient needs the forward's sinks, and a backward with sinks writes their gradient");
  if ((s = check_aligned("sinks", p.sinks, 4, msg)) != FLASHPTX_OK) return s;
  if ((s = check_aligned("dsinks", p.dsinks, 4, msg)) != FLASHPTX_OK) return s;
  // Q, K, dQ, dK have head_dim columns; V, O, dO, dV head_dim_v (0: head_dim).
  const int64_t d = p.head_dim, dv = p.head_dim_v != 0 ? p.head_dim_v : p.head_dim;
  struct S { const char* name; int64_t seq, heads, cols, sb, ss, sh; bool out; };
  const S strides[] = {
      {"q", p.seqlen_q, p.heads_q, d, p.q_batch_stride, p.q_row_stride, p.q_head_stride, false},
      {"k", p.seqlen_k, p.heads_kv, d, p.k_batch_stride, p.k_row_stride, p.k_head_stride, false},
      {"v", p.seqlen_k, p.heads_kv, dv, p.v_batch_stride, p.v_row_stride, p.v_head_stride, false},
      {"o", p.seqlen_q, p.heads_q, dv, p.o_batch_stride, p.o_row_stride, p.o_head_stride, false},
      {"dout", p.seqlen_q, p.heads_q, dv, p.do_batch_stride, p.do_row_stride, p.do_head_stride, false},
      {"dq", p.seqlen_q, p.heads_q, d, p.dq_batch_stride, p.dq_row_stride, p.dq_head_stride, true},
      {"dk", p.seqlen_k, p.heads_kv, d, p.dk_batch_stride, p.dk_row_stride, p.dk_head_stride, true},
      {"dv", p.seqlen_k, p.heads_kv, dv, p.dv_batch_stride, p.dv_row_stride, p.dv_head_stride, true},
  };
  for (const S& x : strides) {
    if (x.seq == 0) continue;
    if ((s = check_strides(x.name, p.batch, x.seq, x.heads, x.cols, x.sb, x.ss, x.sh, x.out, msg)) != FLASHPTX_OK)
      return s;
  }
  if (workspace_needed > 0) {
    if (p.workspace == nullptr)
      return bad(FLASHPTX_ERR_WORKSPACE, msg,
                 "workspace is NULL (" + std::to_string(workspace_needed) + " bytes needed: flashptx_bwd_workspace_size)");
    if (reinterpret_cast<uintptr_t>(p.workspace) % 256 != 0)
      return bad(FLASHPTX_ERR_WORKSPACE, msg, "workspace must be 256-byte aligned (" + address(p.workspace) + ")");
    if (p.workspace_bytes < workspace_needed)
      return bad(FLASHPTX_ERR_WORKSPACE, msg,
                 "workspace_bytes " + std::to_string(p.workspace_bytes) + " is below the " +
                     std::to_string(workspace_needed) + " bytes this problem needs");
  }
  return FLASHPTX_OK;
}

// ---- variable-length backward --------------------------------------------------------------------
flashptx_status validate_bwd_varlen_shape(const flashptx_bwd_varlen_params& p, std::string* msg) {
  flashptx_status s;
  if ((s = check_sizes({{"num_seqs", p.num_seqs}, {"total_q", p.total_q}, {"total_k", p.total_k},
                        {"max_seqlen_q", p.max_seqlen_q}, {"max_seqlen_k", p.max_seqlen_k}, {"heads_q", p.heads_q},
                        {"heads_kv", p.heads_kv}, {"head_dim", p.head_dim}},
                       msg)) != FLASHPTX_OK)
    return s;
  if ((s = check_scale(p.softmax_scale, msg)) != FLASHPTX_OK) return s;
  if ((s = check_modifiers(p, msg)) != FLASHPTX_OK) return s;
  if ((s = check_sizes({{"head_dim_v", p.head_dim_v}}, msg)) != FLASHPTX_OK) return s;
  if (p.num_seqs > FLASHPTX_VARLEN_MAX_SEQS)
    return bad(FLASHPTX_ERR_TOO_MANY_SEQS, msg,
               "num_seqs " + std::to_string(p.num_seqs) + " is above FLASHPTX_VARLEN_MAX_SEQS (" +
                   std::to_string(FLASHPTX_VARLEN_MAX_SEQS) + "): split the batch");
  // Each sequence's rows are padded to whole blocks (of at most 128 rows) in the workspace, whose row
  // indices are 32-bit: the padded totals stay below 2^31.
  if ((s = check_bounds({{"total_q + 128 num_seqs", p.total_q + 128 * p.num_seqs, kMaxRows, "2^31 - 256"},
                         {"total_k + 128 num_seqs", p.total_k + 128 * p.num_seqs, kMaxRows, "2^31 - 256"},
                         {"heads_q", p.heads_q, kMax16, "65536"}},
                        msg)) != FLASHPTX_OK)
    return s;
  if (p.num_seqs == 0) {
    if (p.total_q != 0 || p.total_k != 0)
      return bad(FLASHPTX_ERR_BAD_CU_SEQLENS, msg,
                 "num_seqs is 0 but total_q is " + str(p.total_q) + " and total_k " + str(p.total_k) +
                     " (both must be 0)");
    return FLASHPTX_OK;  // nothing to compute
  }
  if (p.total_q == 0 && p.total_k == 0) return FLASHPTX_OK;  // nothing to compute
  if ((s = check_half_dtype("dtype", p.dtype, msg)) != FLASHPTX_OK) return s;
  // The fixed-length backward's (head_dim, head_dim_v) pairs (96, 192 and (192, 128):
  // src/sm90/fa3_bwd_varlen.cu's d96, d192 and d192_v128 kernels).
  if (check_bwd_head_dims(p.head_dim, p.head_dim_v, msg) != FLASHPTX_OK) return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
  if (check_heads(p.heads_q, p.heads_kv, msg) != FLASHPTX_OK) return FLASHPTX_ERR_BAD_HEADS;
  return FLASHPTX_OK;
}

flashptx_status validate_bwd_varlen_buffers(const flashptx_bwd_varlen_params& p, int64_t workspace_needed,
                                            std::string* msg) {
  flashptx_status s;
  if ((s = check_cu_seqlens("cu_seqlens_q", p.cu_seqlens_q, p.num_seqs, p.total_q, p.max_seqlen_q, "total_q",
                            "max_seqlen_q", msg)) != FLASHPTX_OK)
    return s;
  if ((s = check_cu_seqlens("cu_seqlens_k", p.cu_seqlens_k, p.num_seqs, p.total_k, p.max_seqlen_k, "total_k",
                            "max_seqlen_k", msg)) != FLASHPTX_OK)
    return s;
  if ((s = check_seqused(p, msg)) != FLASHPTX_OK) return s;
  const bool rows_q = p.total_q > 0, rows_k = p.total_k > 0;
  struct T { const char* name; const void* ptr; bool used; };
  const T tensors[] = {{"q", p.q, rows_q},   {"k", p.k, rows_k},   {"v", p.v, rows_k},
                       {"o", p.o, rows_q},   {"dout", p.dout, rows_q}, {"dq", p.dq, rows_q},
                       {"dk", p.dk, rows_k}, {"dv", p.dv, rows_k}};
  for (const T& t : tensors) {
    if (!t.used) continue;
    if ((s = check_buffers({{t.name, t.ptr}}, msg)) != FLASHPTX_OK) return s;
  }
  if (rows_q && p.lse == nullptr) return bad(FLASHPTX_ERR_NULL_POINTER, msg, "lse is NULL (the forward's LSE is needed)");
  if (rows_q && (s = check_aligned("lse", p.lse, 4, msg)) != FLASHPTX_OK) return s;
  // The packed tensors as [1, total, heads, d]: the batch stride is never used. Q, K, dQ, dK have
  // head_dim columns; V, O, dO, dV head_dim_v (0: head_dim).
  const int64_t d = p.head_dim, dv = p.head_dim_v != 0 ? p.head_dim_v : p.head_dim;
  struct S { const char* name; int64_t rows, heads, cols, ss, sh; bool out; };
  const S strides[] = {
      {"q", p.total_q, p.heads_q, d, p.q_row_stride, p.q_head_stride, false},
      {"k", p.total_k, p.heads_kv, d, p.k_row_stride, p.k_head_stride, false},
      {"v", p.total_k, p.heads_kv, dv, p.v_row_stride, p.v_head_stride, false},
      {"o", p.total_q, p.heads_q, dv, p.o_row_stride, p.o_head_stride, false},
      {"dout", p.total_q, p.heads_q, dv, p.do_row_stride, p.do_head_stride, false},
      {"dq", p.total_q, p.heads_q, d, p.dq_row_stride, p.dq_head_stride, true},
      {"dk", p.total_k, p.heads_kv, d, p.dk_row_stride, p.dk_head_stride, true},
      {"dv", p.total_k, p.heads_kv, dv, p.dv_row_stride, p.dv_head_stride, true},
  };
  for (const S& x : strides) {
    if (x.rows == 0) continue;
    if ((s = check_strides(x.name, 1, x.rows, x.heads, x.cols, 0, x.ss, x.sh, x.out, msg)) != FLASHPTX_OK) return s;
  }
  if (workspace_needed > 0) {
    if (p.workspace == nullptr)
      return bad(FLASHPTX_ERR_WORKSPACE, msg,
                 "workspace is NULL (" + std::to_string(workspace_needed) +
                     " bytes needed: flashptx_bwd_varlen_workspace_size)");
    if (reinterpret_cast<uintptr_t>(p.workspace) % 256 != 0)
      return bad(FLASHPTX_ERR_WORKSPACE, msg, "workspace must be 256-byte aligned (" + address(p.workspace) + ")");
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
  flashptx_status s;
  if ((s = check_sizes({{"batch", p.batch}, {"seqlen", p.seqlen}, {"heads", p.heads}, {"head_dim", p.head_dim}},
                       msg)) != FLASHPTX_OK)
    return s;
  if ((s = check_bounds({{"batch", p.batch, kMax16, "65536"},
                         {"heads", p.heads, kMax16, "65536"},
                         {"seqlen", p.seqlen, kMaxRows, "2^31 - 256"}},
                        msg)) != FLASHPTX_OK)
    return s;
  if (p.granularity != FLASHPTX_FP8_SCALE_PER_TENSOR && p.granularity != FLASHPTX_FP8_SCALE_PER_HEAD &&
      p.granularity != FLASHPTX_FP8_SCALE_PER_BLOCK)
    return bad(FLASHPTX_ERR_BAD_GRANULARITY, msg,
               "granularity " + std::to_string(static_cast<int>(p.granularity)) +
                   " is not FLASHPTX_FP8_SCALE_PER_TENSOR, _PER_HEAD or _PER_BLOCK");
  if ((s = check_half_dtype("in_dtype", p.in_dtype, msg)) != FLASHPTX_OK) return s;
  if (p.out_dtype != FLASHPTX_FP8_E4M3)
    return bad(FLASHPTX_ERR_UNSUPPORTED_DTYPE, msg,
               "out_dtype is " + dtype_text(p.out_dtype) + ": it must be FLASHPTX_FP8_E4M3");
  if (check_head_dim(p.head_dim, msg) != FLASHPTX_OK) return FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM;
  if (p.hadamard_block != 0 && !(p.hadamard_block == p.head_dim || (p.hadamard_block == 128 && p.head_dim >= 128)))
    return bad(FLASHPTX_ERR_BAD_HADAMARD, msg,
               "hadamard_block " + std::to_string(p.hadamard_block) + " is not 0, head_dim (" +
                   std::to_string(p.head_dim) + ") or 128 (at most head_dim)");
  if (p.batch == 0 || p.seqlen == 0 || p.heads == 0) return FLASHPTX_OK;  // nothing to compute

  if (p.descale == nullptr) return bad(FLASHPTX_ERR_NULL_POINTER, msg, "descale is NULL");
  if ((s = check_buffers({{"in", p.in}, {"out", p.out}}, msg)) != FLASHPTX_OK) return s;
  if ((s = check_aligned("descale", p.descale, 4, msg)) != FLASHPTX_OK) return s;
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
  flashptx_status s;
  if ((s = check_sizes_and_scale(p, msg)) != FLASHPTX_OK) return s;
  if (p.batch == 0 || p.seqlen_q == 0) return FLASHPTX_OK;  // nothing to compute

  const DtypeField fp8[3] = {{"q_dtype", p.q_dtype}, {"k_dtype", p.k_dtype}, {"v_dtype", p.v_dtype}};
  for (const DtypeField& f : fp8)
    if (f.t != FLASHPTX_FP8_E4M3)
      return bad(FLASHPTX_ERR_UNSUPPORTED_DTYPE, msg,
                 std::string(f.name) + " is " + dtype_text(f.t) + ": q, k and v dtypes must be FLASHPTX_FP8_E4M3");
  if (p.o_dtype != FLASHPTX_BF16)
    return bad(FLASHPTX_ERR_UNSUPPORTED_DTYPE, msg, "o_dtype is " + dtype_text(p.o_dtype) + ": it must be FLASHPTX_BF16");
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
  const Buffer qkvo[4] = {{"q", p.q}, {"k", p.k}, {"v", p.v}, {"o", p.o}};
  for (const Buffer& b : qkvo)
    if (b.ptr == nullptr) return bad(FLASHPTX_ERR_NULL_POINTER, msg, std::string(b.name) + " is NULL");
  const float* ds[3] = {p.descale_q, p.descale_k, p.descale_v};
  for (int i = 0; i < 3; ++i)
    if (ds[i] == nullptr)
      return bad(FLASHPTX_ERR_NULL_DESCALE, msg, std::string("descale_") + gname[i] + " is NULL (every FP8 tensor needs its descales)");
  if ((s = check_buffers({{"q", p.q}, {"k", p.k}, {"v", p.v}, {"o", p.o}}, msg)) != FLASHPTX_OK) return s;
  for (int i = 0; i < 3; ++i)
    if ((s = check_aligned((std::string("descale_") + gname[i]).c_str(), ds[i], 4, msg)) != FLASHPTX_OK) return s;
  if ((s = check_aligned("lse", p.lse, 4, msg)) != FLASHPTX_OK) return s;
  if ((s = check_row_bounds(p, kMax16, "65536", msg)) != FLASHPTX_OK) return s;
  if ((s = check_tiles((p.seqlen_q + 127) / 128 * p.heads_q * p.batch, msg)) != FLASHPTX_OK) return s;
  // The descale arrays are indexed with 32-bit strides in the kernel.
  const int64_t descales_k = p.batch * p.heads_kv * ((p.seqlen_k + 127) / 128);
  if (descales_k > kMaxInt)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "the key blocks need " + str(descales_k) + " descales: more than 2^31 - 1");

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
