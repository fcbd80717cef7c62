// flashptx_fwd_kvcache (include/flashptx.h, "inference: attention over a KV cache"): validation, the
// split rule, the workspace, the kernel arguments and the launches, in one file beside the other
// entry points (src/api.cpp); the kernels: src/sm90/fa3_fwd_kvcache.cu.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "include/flashptx.h"
#include "src/internal.h"
#include "src/kernels.h"
#include "src/plan.h"
#include "src/sm90/fa3_fwd_kvcache_config.h"
#include "src/tensormap.h"
#include "src/validate.h"

namespace flashptx {

namespace {

// The error word's bits, as the header promises them to the caller.
static_assert(fa3::kKvErrSeqlen == FLASHPTX_KVCACHE_ERR_SEQLEN && fa3::kKvErrPage == FLASHPTX_KVCACHE_ERR_PAGE &&
              fa3::kKvErrBatchIdx == FLASHPTX_KVCACHE_ERR_BATCH_IDX && fa3::kKvErrRotary == FLASHPTX_KVCACHE_ERR_ROTARY &&
              fa3::kKvErrLeftpad == FLASHPTX_KVCACHE_ERR_LEFTPAD);

constexpr int64_t kKvBlockM = 64;  // packed rows per tile (KvLayout::kBlockM)
constexpr int64_t kKvBlockN = 64;  // keys per block (KvLayout::kBlockN), at every head dim
static_assert(fa3::kKvD64Paged.block_n == kKvBlockN && fa3::kKvD64Contig.block_n == kKvBlockN &&
              fa3::kKvD128Paged.block_n == kKvBlockN && fa3::kKvD128Contig.block_n == kKvBlockN &&
              fa3::kKvD256Paged.block_n == kKvBlockN && fa3::kKvD256Contig.block_n == kKvBlockN);

flashptx_status bad(flashptx_status s, std::string* msg, std::string text) {
  *msg = std::move(text);
  return s;
}
std::string str(int64_t v) { return std::to_string(v); }

bool paged(const flashptx_kvcache_params& p) { return p.page_table != nullptr; }
int64_t capacity(const flashptx_kvcache_params& p) { return paged(p) ? p.max_pages * p.cache_seqlen : p.cache_seqlen; }
int64_t m_blocks(const flashptx_kvcache_params& p) {
  return (p.seqlen_q * (p.heads_q / p.heads_kv) + kKvBlockM - 1) / kKvBlockM;
}
bool aligned(const void* ptr, uintptr_t a) { return reinterpret_cast<uintptr_t>(ptr) % a == 0; }

// The sizes, the scale, the dtype, the head dim and heads, the cache's form: what the workspace size
// and the split count need (no pointer but page_table's presence is read).
flashptx_status validate_kvcache_shape(const flashptx_kvcache_params& p, std::string* msg) {
  flashptx_status s = check_sizes({{"batch", p.batch}, {"seqlen_q", p.seqlen_q}, {"heads_q", p.heads_q},
                                   {"heads_kv", p.heads_kv}, {"head_dim", p.head_dim}, {"cache_batch", p.cache_batch},
                                   {"cache_seqlen", p.cache_seqlen}, {"max_pages", p.max_pages}},
                                  msg);
  if (s != FLASHPTX_OK) return s;
  if (!std::isfinite(p.softmax_scale) || p.softmax_scale < 0.f)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg,
               "softmax_scale is " + std::to_string(p.softmax_scale) +
                   ": it must be finite and 0 or more (0 selects 1/sqrt(d))");
  if (p.num_splits < 0 || p.num_splits > FLASHPTX_KVCACHE_MAX_SPLITS)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg,
               "num_splits is " + str(p.num_splits) + ": 0 (the library's choice) to " +
                   str(FLASHPTX_KVCACHE_MAX_SPLITS));
  if (p.batch == 0 || p.seqlen_q == 0) return FLASHPTX_OK;  // nothing to compute
  if (p.dtype == FLASHPTX_FP16)
    return bad(FLASHPTX_ERR_UNSUPPORTED, msg, "the KV-cache forward is bf16 only for now (dtype is fp16)");
  if (p.dtype != FLASHPTX_BF16)
    return bad(FLASHPTX_ERR_UNSUPPORTED_DTYPE, msg,
               "dtype " + str(static_cast<int>(p.dtype)) + " is not bf16 (the KV-cache forward's dtype)");
  if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256)
    return bad(FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, msg,
               "head_dim " + str(p.head_dim) + ": the KV-cache forward has head_dim 64, 128 or 256");
  if (p.heads_q <= 0 || p.heads_kv <= 0 || p.heads_q % p.heads_kv != 0)
    return bad(FLASHPTX_ERR_BAD_HEADS, msg,
               "heads_q (" + str(p.heads_q) + ") must be a positive multiple of heads_kv (" + str(p.heads_kv) + ")");
  if (p.cache_batch == 0 || p.cache_seqlen == 0)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg,
               std::string("the cache is empty (") + (paged(p) ? "num_pages" : "cache_batch") + " " +
                   str(p.cache_batch) + ", " + (paged(p) ? "page_size" : "cache_seqlen") + " " + str(p.cache_seqlen) +
                   ")");
  if (paged(p)) {
    const int64_t ps = p.cache_seqlen;
    if (!(ps % kKvBlockN == 0 || ps == 8 || ps == 16 || ps == 32))
      return bad(FLASHPTX_ERR_UNSUPPORTED, msg,
                 "page_size " + str(ps) +
                     ": a multiple of 64, or 8, 16 or 32 (a 64-key block must be whole pages or inside one page)");
    if (ps > 256 * 1024)
      return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "page_size " + str(ps) + " is above 262144");
    if (p.max_pages == 0) return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "max_pages is 0: a page table needs a column");
    if (p.page_table_stride < p.max_pages)
      return bad(FLASHPTX_ERR_BAD_STRIDES, msg,
                 "page_table_stride " + str(p.page_table_stride) + " is below max_pages " + str(p.max_pages));
    if (p.cache_batch_idx != nullptr)
      return bad(FLASHPTX_ERR_UNSUPPORTED, msg, "cache_batch_idx with a paged cache (the page table says it)");
  }
  if (p.k_new != nullptr || p.v_new != nullptr || p.seqlen_new != 0) {
    if (p.seqlen_new < 0) return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "seqlen_new is " + str(p.seqlen_new) + ": negative");
    if (p.seqlen_new > capacity(p))
      return bad(FLASHPTX_ERR_BAD_SHAPE, msg,
                 "seqlen_new " + str(p.seqlen_new) + " is above the cache's capacity " + str(capacity(p)));
  }
  if (p.rotary_cos != nullptr || p.rotary_sin != nullptr) {
    if (p.k_new == nullptr)
      return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "rotary_cos/sin without k_new (rotary applies to appended keys and q)");
    if (p.rotary_dim <= 0 || p.rotary_dim % 16 != 0 || p.rotary_dim > p.head_dim)
      return bad(FLASHPTX_ERR_BAD_SHAPE, msg,
                 "rotary_dim " + str(p.rotary_dim) + ": a positive multiple of 16, at most head_dim " + str(p.head_dim));
    if (p.seqlen_ro <= 0) return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "seqlen_ro is " + str(p.seqlen_ro) + ": rotary needs a row");
    if (p.seqlen_ro >= (int64_t(1) << 31)) return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "seqlen_ro is 2^31 or more");
  }
  if (capacity(p) >= (int64_t(1) << 31) - 256 || p.cache_batch >= (int64_t(1) << 31))
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "the cache holds 2^31 - 256 keys per sequence or more");
  if (p.batch > 65535) return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "batch " + str(p.batch) + " is above 65535 (grid z)");
  if (p.seqlen_q * p.heads_q >= (int64_t(1) << 31))
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg, "seqlen_q * heads_q is 2^31 or more");
  if (m_blocks(p) * p.heads_kv > 65535)
    return bad(FLASHPTX_ERR_BAD_SHAPE, msg,
               "seqlen_q * heads_q / 64 = " + str(m_blocks(p) * p.heads_kv) + " tiles per sequence: above 65535 (grid y)");
  return FLASHPTX_OK;
}

// Pointers, alignment, strides.
flashptx_status validate_kvcache_buffers(const flashptx_kvcache_params& p, std::string* msg) {
  const struct { const char* name; const void* ptr; } need[] = {
      {"q", p.q}, {"k_cache", p.k_cache}, {"v_cache", p.v_cache}, {"o", p.o}, {"cache_seqlens", p.cache_seqlens}};
  for (const auto& b : need)
    if (b.ptr == nullptr) return bad(FLASHPTX_ERR_NULL_POINTER, msg, std::string(b.name) + " is NULL");
  const struct { const char* name; const void* ptr; uintptr_t a; } al[] = {
      {"q", p.q, 16}, {"k_cache", p.k_cache, 16}, {"v_cache", p.v_cache, 16}, {"o", p.o, 16}, {"lse", p.lse, 4},
      {"cache_seqlens", p.cache_seqlens, 4}, {"cache_batch_idx", p.cache_batch_idx, 4},
      {"page_table", p.page_table, 4}, {"cache_leftpad", p.cache_leftpad, 4}, {"error_word", p.error_word, 4}};
  for (const auto& b : al)
    if (!aligned(b.ptr, b.a))
      return bad(FLASHPTX_ERR_MISALIGNED, msg, std::string(b.name) + " is not " + str(b.a) + "-byte aligned");
  if ((p.k_new == nullptr) != (p.v_new == nullptr))
    return bad(FLASHPTX_ERR_NULL_POINTER, msg, p.k_new == nullptr ? "k_new is NULL while v_new is set" : "v_new is NULL while k_new is set");
  if ((p.rotary_cos == nullptr) != (p.rotary_sin == nullptr))
    return bad(FLASHPTX_ERR_NULL_POINTER, msg,
               p.rotary_cos == nullptr ? "rotary_cos is NULL while rotary_sin is set" : "rotary_sin is NULL while rotary_cos is set");
  const struct { const char* name; const void* ptr; uintptr_t a; } al2[] = {
      {"k_new", p.k_new, 16}, {"v_new", p.v_new, 16}, {"rotary_cos", p.rotary_cos, 4}, {"rotary_sin", p.rotary_sin, 4}};
  for (const auto& b : al2)
    if (!aligned(b.ptr, b.a))
      return bad(FLASHPTX_ERR_MISALIGNED, msg, std::string(b.name) + " is not " + str(b.a) + "-byte aligned");
  const int64_t d = p.head_dim;
  flashptx_status s;
  if (p.k_new != nullptr && p.seqlen_new > 0) {
    if ((s = check_strides("k_new", p.batch, p.seqlen_new, p.heads_kv, d, p.k_new_batch_stride, p.k_new_row_stride,
                           p.k_new_head_stride, false, msg)) != FLASHPTX_OK)
      return s;
    if ((s = check_strides("v_new", p.batch, p.seqlen_new, p.heads_kv, d, p.v_new_batch_stride, p.v_new_row_stride,
                           p.v_new_head_stride, false, msg)) != FLASHPTX_OK)
      return s;
  }
  if ((s = check_strides("q", p.batch, p.seqlen_q, p.heads_q, d, p.q_batch_stride, p.q_row_stride, p.q_head_stride,
                         false, msg)) != FLASHPTX_OK)
    return s;
  if ((s = check_strides("k_cache", p.cache_batch, p.cache_seqlen, p.heads_kv, d, p.k_batch_stride, p.k_row_stride,
                         p.k_head_stride, false, msg)) != FLASHPTX_OK)
    return s;
  if ((s = check_strides("v_cache", p.cache_batch, p.cache_seqlen, p.heads_kv, d, p.v_batch_stride, p.v_row_stride,
                         p.v_head_stride, false, msg)) != FLASHPTX_OK)
    return s;
  return check_strides("o", p.batch, p.seqlen_q, p.heads_q, d, p.o_batch_stride, p.o_row_stride, p.o_head_stride, true,
                       msg);
}

// The split rule: without a forced count, split only where the tiles (batch x kv heads x packed
// row blocks) leave SMs idle, into as many splits as fit the SMs in one wave (splits x tiles <= the
// SM count, one CTA per SM: a count past it leaves a second, nearly empty wave), each at least
// kMinSplitBlocks key blocks of the cache's capacity (the lengths themselves are device data), and
// at most kMaxAutoSplits (past it the combine and each CTA's prologue outweigh the keys a split
// reads). docs/DECISIONS.md, "KV-cache split count".
constexpr int64_t kMinSplitBlocks = 4;
constexpr int64_t kMaxAutoSplits = 64;
int kvcache_splits(const flashptx_kvcache_params& p, int sm_count) {
  if (p.num_splits > 0) return p.num_splits;
  const int64_t tiles = p.batch * p.heads_kv * m_blocks(p);
  if (tiles * 2 > sm_count) return 1;
  const int64_t blocks = (capacity(p) + kKvBlockN - 1) / kKvBlockN;
  int64_t n = sm_count / tiles;
  n = std::min<int64_t>(n, blocks / kMinSplitBlocks);
  n = std::min<int64_t>(n, std::min<int64_t>(kMaxAutoSplits, FLASHPTX_KVCACHE_MAX_SPLITS));
  return static_cast<int>(std::max<int64_t>(n, 1));
}

int64_t round256(int64_t b) { return (b + 255) / 256 * 256; }
int64_t part_rows(const flashptx_kvcache_params& p) { return p.batch * p.heads_q * p.seqlen_q; }
bool rotary(const flashptx_kvcache_params& p) { return p.rotary_cos != nullptr; }
// [partial O (splits > 1)][partial LSE (splits > 1)][rotated q (rotary)], each 256-byte aligned.
int64_t part_o_bytes(const flashptx_kvcache_params& p, int splits) {
  return splits > 1 ? round256(splits * part_rows(p) * p.head_dim * 4) : 0;
}
int64_t part_lse_bytes(const flashptx_kvcache_params& p, int splits) {
  return splits > 1 ? round256(splits * part_rows(p) * 4) : 0;
}
int64_t workspace_for(const flashptx_kvcache_params& p, int splits) {
  if (p.batch == 0 || p.seqlen_q == 0) return 0;
  return part_o_bytes(p, splits) + part_lse_bytes(p, splits) + (rotary(p) ? round256(part_rows(p) * p.head_dim * 2) : 0);
}

flashptx_status check_workspace(const flashptx_kvcache_params& p, int splits, std::string* msg) {
  const int64_t need = workspace_for(p, splits);
  if (need == 0) return FLASHPTX_OK;
  if (p.workspace == nullptr || !aligned(p.workspace, 256) || p.workspace_bytes < need)
    return bad(FLASHPTX_ERR_WORKSPACE, msg,
               "num_splits " + str(splits) + " needs a 256-byte aligned workspace of " + str(need) + " bytes (given " +
                   str(p.workspace_bytes) + (p.workspace == nullptr ? ", NULL" : "") +
                   "; flashptx_fwd_kvcache_workspace_size)");
  return FLASHPTX_OK;
}

// The split count: forced, or the rule on the current device.
flashptx_status splits_of(const flashptx_kvcache_params& p, int* splits, std::string* msg) {
  if (p.num_splits > 0) {
    *splits = p.num_splits;
    return FLASHPTX_OK;
  }
  Device dev;
  const flashptx_status s = current_device(&dev, msg);
  if (s != FLASHPTX_OK) return s;
  *splits = kvcache_splits(p, dev.sm_count);
  return FLASHPTX_OK;
}

// The table's row of a family for the call's head dim (the append serves every head dim: its row's
// head_dim is 0) and, for the attention kernels, its cache form.
const KernelEntry* kv_row(Family f, int64_t head_dim, bool is_paged) {
  for (const KernelEntry& k : fa3_fwd_kvcache_kernels()) {
    if (k.family != f || (k.head_dim != 0 && k.head_dim != head_dim)) continue;
    if (f != Family::kFa3FwdKvcache) return &k;
    for (const KernelSwitch& sw : k.switches)
      if (std::string(sw.name) == "paged" && (sw.value != 0) == is_paged) return &k;
  }
  return nullptr;
}

flashptx_status run_kvcache(const flashptx_kvcache_params& p, cudaStream_t stream, std::string* msg) {
  flashptx_status s;
  Device dev;
  if ((s = current_device(&dev, msg)) != FLASHPTX_OK) return s;
  if (dev.cc != 90)
    return bad(FLASHPTX_ERR_UNSUPPORTED_DEVICE, msg,
               "device " + str(dev.ordinal) + " is sm_" + str(dev.cc) + "; the KV-cache kernels are sm_90a (Hopper)");
  const int splits = kvcache_splits(p, dev.sm_count);
  if ((s = check_workspace(p, splits, msg)) != FLASHPTX_OK) return s;
  const KernelEntry* k = kv_row(Family::kFa3FwdKvcache, p.head_dim, paged(p));
  const KernelEntry* comb = kv_row(Family::kFa3FwdKvcacheCombine, p.head_dim, false);
  if (k == nullptr || comb == nullptr)
    return bad(FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, msg,
               "no KV-cache kernel of head_dim " + str(p.head_dim) + " in the table");

  fa3::KvcacheParams a{};
  const int64_t ps = p.cache_seqlen;
  const uint32_t box_rows = paged(p) ? static_cast<uint32_t>(std::min<int64_t>(ps, kKvBlockN)) : kKvBlockN;
  std::string err;
  const bool ok = encode_bshd(&a.tma_k, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, p.k_cache, p.cache_batch, p.cache_seqlen,
                              p.heads_kv, p.head_dim, p.k_batch_stride, p.k_row_stride, p.k_head_stride, box_rows, &err) &&
                  encode_bshd(&a.tma_v, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, p.v_cache, p.cache_batch, p.cache_seqlen,
                              p.heads_kv, p.head_dim, p.v_batch_stride, p.v_row_stride, p.v_head_stride, box_rows, &err);
  if (!ok) return bad(FLASHPTX_ERR_BAD_STRIDES, msg, "the cache's tensor map: " + err);
  a.q = static_cast<const uint16_t*>(p.q);
  a.q_sb = p.q_batch_stride; a.q_sr = p.q_row_stride; a.q_sh = p.q_head_stride;
  a.o = static_cast<uint16_t*>(p.o);
  a.o_sb = p.o_batch_stride; a.o_sr = p.o_row_stride; a.o_sh = p.o_head_stride;
  a.lse = p.lse;
  if (splits > 1) {
    a.part_o = static_cast<float*>(p.workspace);
    a.part_lse = reinterpret_cast<float*>(static_cast<char*>(p.workspace) + part_o_bytes(p, splits));
  }
  a.cache_seqlens = p.cache_seqlens;
  a.cache_batch_idx = p.cache_batch_idx;
  a.page_table = p.page_table;
  a.page_table_stride = p.page_table_stride;
  a.cache_leftpad = p.cache_leftpad;
  a.error_word = p.error_word;
  a.batch = static_cast<int>(p.batch);
  a.seqlen_q = static_cast<int>(p.seqlen_q);
  a.heads_q = static_cast<int>(p.heads_q);
  a.heads_kv = static_cast<int>(p.heads_kv);
  a.group = static_cast<int>(p.heads_q / p.heads_kv);
  a.capacity = static_cast<int>(capacity(p));
  a.cache_batch = static_cast<int>(p.cache_batch);
  a.page_size = static_cast<int>(ps);
  a.box_rows = static_cast<int>(box_rows);
  a.max_pages = static_cast<int>(p.max_pages);
  a.num_splits = splits;
  a.m_blocks = static_cast<int>(m_blocks(p));
  a.causal = p.causal != 0 ? 1 : 0;
  const float scale = p.softmax_scale != 0.f ? p.softmax_scale : 1.f / std::sqrt(static_cast<float>(p.head_dim));
  a.softmax_scale = scale;
  a.softmax_scale_log2 = scale * 1.4426950408889634f;

  a.seqlen_new = static_cast<int>(p.k_new != nullptr ? p.seqlen_new : 0);
  if (p.k_new != nullptr) {
    fa3::KvAppendParams ap{};
    ap.k_new = static_cast<const uint16_t*>(p.k_new);
    ap.v_new = static_cast<const uint16_t*>(p.v_new);
    ap.kn_sb = p.k_new_batch_stride; ap.kn_sr = p.k_new_row_stride; ap.kn_sh = p.k_new_head_stride;
    ap.vn_sb = p.v_new_batch_stride; ap.vn_sr = p.v_new_row_stride; ap.vn_sh = p.v_new_head_stride;
    ap.k_cache = static_cast<uint16_t*>(p.k_cache);
    ap.v_cache = static_cast<uint16_t*>(p.v_cache);
    ap.k_sb = p.k_batch_stride; ap.k_sr = p.k_row_stride; ap.k_sh = p.k_head_stride;
    ap.v_sb = p.v_batch_stride; ap.v_sr = p.v_row_stride; ap.v_sh = p.v_head_stride;
    ap.q = a.q;
    ap.q_sb = a.q_sb; ap.q_sr = a.q_sr; ap.q_sh = a.q_sh;
    if (rotary(p)) {
      ap.q_rot = reinterpret_cast<uint16_t*>(static_cast<char*>(p.workspace) + part_o_bytes(p, splits) +
                                             part_lse_bytes(p, splits));
      ap.rotary_cos = p.rotary_cos;
      ap.rotary_sin = p.rotary_sin;
      ap.rotary_dim = static_cast<int>(p.rotary_dim);
      ap.seqlen_ro = static_cast<int>(p.seqlen_ro);
      ap.interleaved = p.rotary_interleaved != 0 ? 1 : 0;
    }
    ap.causal = a.causal;
    ap.cache_seqlens = p.cache_seqlens;
    ap.cache_batch_idx = p.cache_batch_idx;
    ap.page_table = p.page_table;
    ap.page_table_stride = p.page_table_stride;
    ap.error_word = p.error_word;
    ap.batch = a.batch;
    ap.seqlen_new = a.seqlen_new;
    ap.seqlen_q = a.seqlen_q;
    ap.heads_q = a.heads_q;
    ap.heads_kv = a.heads_kv;
    ap.head_dim = static_cast<int>(p.head_dim);
    ap.capacity = a.capacity;
    ap.cache_batch = a.cache_batch;
    ap.page_size = a.page_size;
    ap.paged = paged(p) ? 1 : 0;
    const KernelEntry* app = kv_row(Family::kFa3FwdKvcacheAppend, p.head_dim, false);
    if (app == nullptr) return bad(FLASHPTX_ERR_UNSUPPORTED, msg, "no KV-cache append kernel in the table");
    const int64_t rows = std::max<int64_t>(a.seqlen_new, rotary(p) ? p.seqlen_q : 0);
    if (rows > 0) {
      Launch la;
      la.kernel = app;
      la.grid = dim3(static_cast<unsigned>(rows), static_cast<unsigned>(p.batch));
      la.block = dim3(static_cast<unsigned>(app->threads));
      la.smem_bytes = 0;
      la.tiles = rows * p.batch;
      if ((s = launch(la, &ap, stream, msg)) != FLASHPTX_OK) return s;
    }
    if (rotary(p)) {  // the attention reads the rotated q, contiguous
      a.q = ap.q_rot;
      a.q_sh = p.head_dim;
      a.q_sr = p.heads_q * p.head_dim;
      a.q_sb = p.seqlen_q * p.heads_q * p.head_dim;
    }
  }

  Launch l;
  l.kernel = k;
  l.grid = dim3(static_cast<unsigned>(splits), static_cast<unsigned>(a.m_blocks * p.heads_kv),
                static_cast<unsigned>(p.batch));
  l.block = dim3(static_cast<unsigned>(k->threads));
  l.smem_bytes = k->smem_bytes;
  l.schedule = Schedule::kOnePerTile;
  l.tiles = static_cast<int64_t>(splits) * a.m_blocks * p.heads_kv * p.batch;
  if ((s = launch(l, &a, stream, msg)) != FLASHPTX_OK) return s;
  if (splits == 1) return FLASHPTX_OK;

  fa3::KvCombineParams c{};
  c.part_o = a.part_o;
  c.part_lse = a.part_lse;
  c.o = a.o;
  c.o_sb = a.o_sb; c.o_sr = a.o_sr; c.o_sh = a.o_sh;
  c.lse = p.lse;
  c.batch = a.batch;
  c.seqlen_q = a.seqlen_q;
  c.heads_q = a.heads_q;
  c.num_splits = splits;
  Launch lc;
  lc.kernel = comb;
  lc.grid = dim3(static_cast<unsigned>(part_rows(p)));
  lc.block = dim3(static_cast<unsigned>(comb->threads));
  lc.smem_bytes = 0;
  lc.tiles = part_rows(p);
  return launch(lc, &c, stream, msg);
}

}  // namespace

flashptx_status validate_fwd_kvcache(const flashptx_kvcache_params& p, std::string* msg) {
  flashptx_status s = validate_kvcache_shape(p, msg);
  if (s != FLASHPTX_OK || p.batch == 0 || p.seqlen_q == 0) return s;
  if ((s = validate_kvcache_buffers(p, msg)) != FLASHPTX_OK) return s;
  // A forced split count: the workspace is known here (otherwise once the plan has chosen).
  return p.num_splits > 0 ? check_workspace(p, p.num_splits, msg) : FLASHPTX_OK;
}

}  // namespace flashptx

extern "C" {

flashptx_status flashptx_fwd_kvcache_check(const flashptx_kvcache_params* p) {
  if (p == nullptr) return flashptx::record_status(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  std::string msg;
  return flashptx::record_status(flashptx::validate_fwd_kvcache(*p, &msg), msg);
}

flashptx_status flashptx_fwd_kvcache_num_splits(const flashptx_kvcache_params* p, int* num_splits) {
  if (p == nullptr) return flashptx::record_status(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  if (num_splits == nullptr) return flashptx::record_status(FLASHPTX_ERR_NULL_POINTER, "num_splits is NULL");
  std::string msg;
  flashptx_status s = flashptx::validate_kvcache_shape(*p, &msg);
  if (s == FLASHPTX_OK) s = flashptx::splits_of(*p, num_splits, &msg);
  return flashptx::record_status(s, msg);
}

flashptx_status flashptx_fwd_kvcache_workspace_size(const flashptx_kvcache_params* p, int64_t* bytes) {
  if (p == nullptr) return flashptx::record_status(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  if (bytes == nullptr) return flashptx::record_status(FLASHPTX_ERR_NULL_POINTER, "bytes is NULL");
  std::string msg;
  flashptx_status s = flashptx::validate_kvcache_shape(*p, &msg);
  int splits = 1;
  if (s == FLASHPTX_OK && p->batch > 0 && p->seqlen_q > 0) s = flashptx::splits_of(*p, &splits, &msg);
  if (s == FLASHPTX_OK) *bytes = flashptx::workspace_for(*p, splits);
  return flashptx::record_status(s, msg);
}

flashptx_status flashptx_fwd_kvcache(const flashptx_kvcache_params* p, cudaStream_t stream) {
  if (p == nullptr) return flashptx::record_status(FLASHPTX_ERR_NULL_PARAMS, "params is NULL");
  std::string msg;
  flashptx_status s = flashptx::validate_fwd_kvcache(*p, &msg);
  if (s == FLASHPTX_OK && p->batch > 0 && p->seqlen_q > 0) s = flashptx::run_kvcache(*p, stream, &msg);
  return flashptx::record_status(s, msg);
}

}  // extern "C"
