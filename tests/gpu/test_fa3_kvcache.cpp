// The FA3 forward over a KV cache on the GPU (flashptx_fwd_kvcache), against the CPU fp64 reference
// (ref::forward_kvcache: each sequence gathered from the cache by its own lengths, then the plain
// forward), under FlashAttention's rule max|out - ref| <= 2 * max|same_dtype_ref - ref| + 1e-5 (the
// LSE with the fp32 term of tests/gpu/test_fa3_fwd.cpp).
//
// What a KV-cache kernel can get wrong, and where each is caught:
//   - a sequence's length read wrong, keys past it leaking in: ragged cache_seqlens (0, 1, a block
//     edge, not a multiple of the block, the full capacity), every row compared;
//   - pages: a page table whose order is a random permutation, its unused entries -1 (reading one
//     sets the error word, which must stay 0), page sizes below, at and above the 64-key block;
//   - cache_batch_idx: a permutation of cache rows, rows of the cache no sequence uses;
//   - packed GQA: the query heads of a group sharing a tile (GQA 4:2 and 6:2, MQA 4:1), seqlen_q 1
//     and several dozen (several 64-row tiles);
//   - the causal diagonal bottom-right within each sequence's length (rows that see nothing:
//     O = 0, LSE = -inf);
//   - split-KV: 1, 3 and 7 splits (more splits than some sequences have blocks: empty splits), and
//     the combine's merge by LSE;
//   - writes outside O and LSE: both poisoned, with a guard after each that must stay poisoned;
//   - left padding (cache_leftpad): keys before it never attended, pages wholly inside it never read
//     (-1 in the table), split ranges that start past it, a padding past the length clamped;
//   - device data out of range: the error word's bits, no read outside the cache;
//   - a CUDA graph: one decode call captured, replayed with new lengths and a new page table written
//     into the same device buffers (nothing of them may be read on the host or baked into the
//     graph). GPU only: the simulator's runtime has no stream capture (tests/main.cpp skips it there).
// Inputs are fresh random values. Shapes are small: the suite runs in the PTX simulator.
#include <doctest/doctest.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "include/flashptx.h"
#include "tests/gpu/test_util.h"
#include "tools/support/dtype.h"
#include "tools/support/reference.h"

namespace {

using namespace flashptx_test;
namespace ref = flashptx::ref;

constexpr int64_t kD = 128;

struct KCase {
  int64_t sq, hq, hkv;
  std::vector<int32_t> lens;  // cache_seqlens, one per sequence
  bool paged;
  int64_t page_size;     // paged
  int64_t cache_seqlen;  // contiguous: seqlen_cache; paged: the capacity (max_pages * page_size)
  bool causal;
  int splits;
  bool batch_idx = false;  // contiguous: sequences read permuted cache rows
  int64_t seqlen_new = 0;  // keys appended at lens[b] before attending (k_new/v_new)
  int64_t rotary_dim = 0;  // rotary on q and the new keys (needs seqlen_new's k_new)
  bool interleaved = false;
  std::vector<int32_t> leftpad = {};  // cache_leftpad (empty: none): sequence b's keys start there
  int64_t d = kD;                     // the head dim
  std::string str() const {
    std::string s = "d";
    s += std::to_string(d);
    s += paged ? " paged page=" + std::to_string(page_size) : std::string(" contiguous");
    s += " cap=" + std::to_string(cache_seqlen) + " lens=[";
    for (size_t i = 0; i < lens.size(); ++i) s += (i ? "," : "") + std::to_string(lens[i]);
    return s + "] sq=" + std::to_string(sq) + " Hq=" + std::to_string(hq) + " Hkv=" + std::to_string(hkv) +
           (causal ? " causal" : "") + " splits=" + std::to_string(splits) + (batch_idx ? " cache_batch_idx" : "") +
           (seqlen_new ? " new=" + std::to_string(seqlen_new) : "") +
           (rotary_dim ? " rotary=" + std::to_string(rotary_dim) + (interleaved ? " interleaved" : " half") : "") +
           (leftpad.empty() ? "" : " leftpad[0]=" + std::to_string(leftpad[0]));
  }
};

std::vector<uint16_t> random_bf16(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<uint16_t> x(n);
  for (auto& v : x) v = flashptx::float_to_bf16(u(rng));
  return x;
}

template <class T>
void upload(DeviceBuf& d, const std::vector<T>& h) {
  CUDA_REQUIRE(cudaMemcpy(d.p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
}

struct Where {
  std::vector<int32_t> table;  // paged: [batch, max_pages]; contiguous: cache_batch_idx
  int64_t max_pages = 0, page_size = 0;
  bool paged = false;
};
void key_at(const void* ctx, int64_t b, int64_t j, int64_t* outer, int64_t* row) {
  const Where& w = *static_cast<const Where*>(ctx);
  if (w.paged) {
    *outer = w.table[static_cast<size_t>(b * w.max_pages + j / w.page_size)];
    *row = j % w.page_size;
  } else {
    *outer = w.table.empty() ? b : w.table[static_cast<size_t>(b)];
    *row = j;
  }
}

// The reference's view of a left-padded sequence: its key j is cache position pad[b] + j.
struct Padded {
  const Where* w;
  const std::vector<int32_t>* pad;
};
void key_at_padded(const void* ctx, int64_t b, int64_t j, int64_t* outer, int64_t* row) {
  const Padded& p = *static_cast<const Padded*>(ctx);
  key_at(p.w, b, (*p.pad)[static_cast<size_t>(b)] + j, outer, row);
}

void check_case(const KCase& c, uint64_t seed) {
  INFO(c.str());
  const int64_t hd = c.d;
  std::mt19937_64 rng(seed);
  const int64_t batch = static_cast<int64_t>(c.lens.size());
  Where w;
  w.paged = c.paged;
  int64_t cache_batch, cache_seqlen;
  if (c.paged) {
    w.page_size = c.page_size;
    w.max_pages = c.cache_seqlen / c.page_size;
    int64_t used = 0;
    for (int32_t l : c.lens) used += (l + c.seqlen_new + c.page_size - 1) / c.page_size;
    cache_batch = used + 3;  // pages no sequence uses
    std::vector<int32_t> perm(static_cast<size_t>(cache_batch));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    w.table.assign(static_cast<size_t>(batch * w.max_pages), -1);  // unused entries: never read
    size_t next = 0;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t pg = 0; pg < (c.lens[b] + c.seqlen_new + c.page_size - 1) / c.page_size; ++pg) {
        // Pages wholly inside the left padding: -1, never to be read (the error word stays 0).
        const bool padding = !c.leftpad.empty() && (pg + 1) * c.page_size <= c.leftpad[static_cast<size_t>(b)];
        w.table[static_cast<size_t>(b * w.max_pages + pg)] = padding ? -1 : perm[next++];
      }
    cache_seqlen = c.page_size;
  } else {
    cache_batch = c.batch_idx ? batch + 2 : batch;
    cache_seqlen = c.cache_seqlen;
    if (c.batch_idx) {
      std::vector<int32_t> perm(static_cast<size_t>(cache_batch));
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      w.table.assign(perm.begin(), perm.begin() + batch);
    }
  }
  const int64_t q_n = batch * c.sq * c.hq * hd, kv_n = cache_batch * cache_seqlen * c.hkv * hd;
  const auto q = random_bf16(static_cast<size_t>(q_n), rng);
  const auto k = random_bf16(static_cast<size_t>(kv_n), rng);
  const auto v = random_bf16(static_cast<size_t>(kv_n), rng);
  // Appended keys and values, and the rotary tables (fp32 cos/sin of random angles, one row per
  // position of the capacity).
  const int64_t new_n = batch * c.seqlen_new * c.hkv * hd;
  const auto k_new = random_bf16(static_cast<size_t>(std::max<int64_t>(new_n, 1)), rng);
  const auto v_new = random_bf16(static_cast<size_t>(std::max<int64_t>(new_n, 1)), rng);
  const int64_t cap = c.paged ? w.max_pages * c.page_size : cache_seqlen, half = c.rotary_dim / 2;
  std::vector<float> cosv(static_cast<size_t>(std::max<int64_t>(cap * half, 1))), sinv(cosv.size());
  {
    std::uniform_real_distribution<double> ang(-3.14159, 3.14159);
    for (size_t i = 0; i < cosv.size(); ++i) {
      const double a = ang(rng);
      cosv[i] = static_cast<float>(std::cos(a));
      sinv[i] = static_cast<float>(std::sin(a));
    }
  }
  // The expected results of the append, from the definition (rotation in fp64, rounded once to
  // bf16): the cache after the call, and the rotated q the attention must use. mag (or nullptr):
  // |xa| + |xb| of each rotated element's pair, the scale of the kernel's fp32 rounding in
  // xa co - xb si, which a cancelling pair leaves far above the result's own bf16 ulp.
  auto rotate = [&](const uint16_t* src, uint16_t* dst, int64_t pos, double* mag) {  // one head's d values
    for (int64_t d = 0; d < hd; ++d) dst[d] = src[d];
    if (c.rotary_dim == 0) return;
    for (int64_t i = 0; i < half; ++i) {
      const int64_t da = c.interleaved ? 2 * i : i, db = c.interleaved ? 2 * i + 1 : i + half;
      const double xa = flashptx::bf16_to_float(src[da]), xb = flashptx::bf16_to_float(src[db]);
      const double co = cosv[static_cast<size_t>(pos * half + i)], si = sinv[static_cast<size_t>(pos * half + i)];
      dst[da] = flashptx::float_to_bf16(static_cast<float>(xa * co - xb * si));
      dst[db] = flashptx::float_to_bf16(static_cast<float>(xb * co + xa * si));
      if (mag != nullptr) mag[da] = mag[db] = std::fabs(xa) + std::fabs(xb);
    }
  };
  std::vector<uint16_t> k_after = k, v_after = v, q_used = q;
  std::vector<char> appended(static_cast<size_t>(kv_n), 0);
  std::vector<double> k_mag(static_cast<size_t>(kv_n), 0.0);
  std::vector<int32_t> lens_after = c.lens;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t j = 0; j < c.seqlen_new; ++j) {
      int64_t outer, row;
      key_at(&w, b, c.lens[b] + j, &outer, &row);
      for (int64_t h = 0; h < c.hkv; ++h) {
        const int64_t dst = ((outer * cache_seqlen + row) * c.hkv + h) * hd, src = ((b * c.seqlen_new + j) * c.hkv + h) * hd;
        rotate(&k_new[src], &k_after[dst], c.lens[b] + j, &k_mag[static_cast<size_t>(dst)]);
        for (int64_t d = 0; d < hd; ++d) {
          v_after[dst + d] = v_new[src + d];
          appended[dst + d] = 1;
        }
      }
    }
    lens_after[b] += static_cast<int32_t>(c.seqlen_new);
    if (c.rotary_dim > 0)
      for (int64_t i = 0; i < c.sq; ++i)
        for (int64_t h = 0; h < c.hq; ++h) {
          const int64_t o = ((b * c.sq + i) * c.hq + h) * hd;
          rotate(&q[o], &q_used[o], c.lens[b] + (c.causal ? i : 0), nullptr);
        }
  }
  DeviceBuf dq(q_n * 2), dk(kv_n * 2), dv(kv_n * 2), d_o((q_n + kGuard) * 2);
  const int64_t lse_n = batch * c.hq * c.sq;
  DeviceBuf d_lse((lse_n + kGuard) * 4), d_len(batch * 4), d_table(std::max<size_t>(w.table.size(), 1) * 4), d_err(4);
  upload(dq, q);
  upload(dk, k);
  upload(dv, v);
  upload(d_len, c.lens);
  if (!w.table.empty()) upload(d_table, w.table);
  DeviceBuf dkn(k_new.size() * 2), dvn(v_new.size() * 2), dcos(cosv.size() * 4), dsin(sinv.size() * 4),
      d_pad(std::max<size_t>(c.leftpad.size(), 1) * 4);
  if (!c.leftpad.empty()) upload(d_pad, c.leftpad);
  upload(dkn, k_new);
  upload(dvn, v_new);
  upload(dcos, cosv);
  upload(dsin, sinv);
  CUDA_REQUIRE(cudaMemset(d_o.p, 0xFF, d_o.bytes));
  CUDA_REQUIRE(cudaMemset(d_lse.p, 0xFF, d_lse.bytes));
  CUDA_REQUIRE(cudaMemset(d_err.p, 0, 4));

  flashptx_kvcache_params p{};
  p.q = dq.p; p.k_cache = dk.p; p.v_cache = dv.p; p.o = d_o.p; p.lse = static_cast<float*>(d_lse.p);
  p.cache_seqlens = static_cast<const int32_t*>(d_len.p);
  if (c.paged) p.page_table = static_cast<const int32_t*>(d_table.p);
  else if (c.batch_idx) p.cache_batch_idx = static_cast<const int32_t*>(d_table.p);
  p.batch = batch; p.seqlen_q = c.sq; p.heads_q = c.hq; p.heads_kv = c.hkv; p.head_dim = hd;
  p.cache_batch = cache_batch; p.cache_seqlen = cache_seqlen;
  p.max_pages = w.max_pages; p.page_table_stride = w.max_pages;
  p.q_head_stride = hd; p.q_row_stride = c.hq * hd; p.q_batch_stride = c.sq * c.hq * hd;
  p.o_head_stride = hd; p.o_row_stride = c.hq * hd; p.o_batch_stride = c.sq * c.hq * hd;
  p.k_head_stride = p.v_head_stride = hd;
  p.k_row_stride = p.v_row_stride = c.hkv * hd;
  p.k_batch_stride = p.v_batch_stride = cache_seqlen * c.hkv * hd;
  p.dtype = FLASHPTX_BF16;
  p.causal = c.causal ? 1 : 0;
  p.num_splits = c.splits;
  p.error_word = static_cast<uint32_t*>(d_err.p);
  if (!c.leftpad.empty()) p.cache_leftpad = static_cast<const int32_t*>(d_pad.p);
  if (c.seqlen_new > 0) {
    p.k_new = dkn.p;
    p.v_new = dvn.p;
    p.seqlen_new = c.seqlen_new;
    p.k_new_head_stride = p.v_new_head_stride = hd;
    p.k_new_row_stride = p.v_new_row_stride = c.hkv * hd;
    p.k_new_batch_stride = p.v_new_batch_stride = c.seqlen_new * c.hkv * hd;
  }
  if (c.rotary_dim > 0) {
    p.rotary_cos = static_cast<const float*>(dcos.p);
    p.rotary_sin = static_cast<const float*>(dsin.p);
    p.rotary_dim = c.rotary_dim;
    p.seqlen_ro = cap;
    p.rotary_interleaved = c.interleaved ? 1 : 0;
  }
  int64_t ws = -1;
  REQUIRE(flashptx_fwd_kvcache_workspace_size(&p, &ws) == FLASHPTX_OK);
  CHECK((c.splits > 1 || c.rotary_dim > 0) == (ws > 0));
  DeviceBuf d_ws(static_cast<size_t>(std::max<int64_t>(ws, 1)));
  CUDA_REQUIRE(cudaMemset(d_ws.p, 0xFF, d_ws.bytes));  // partials poisoned: every one read must be written
  p.workspace = ws > 0 ? d_ws.p : nullptr;
  p.workspace_bytes = ws;
  const flashptx_status s = flashptx_fwd_kvcache(&p, nullptr);
  REQUIRE_MESSAGE(s == FLASHPTX_OK, flashptx_last_error());
  CUDA_REQUIRE(cudaDeviceSynchronize());

  std::vector<uint16_t> o(static_cast<size_t>(q_n + kGuard));
  std::vector<float> lse(static_cast<size_t>(lse_n + kGuard));
  uint32_t err = 0xdeadu;
  CUDA_REQUIRE(cudaMemcpy(o.data(), d_o.p, o.size() * 2, cudaMemcpyDeviceToHost));
  CUDA_REQUIRE(cudaMemcpy(lse.data(), d_lse.p, lse.size() * 4, cudaMemcpyDeviceToHost));
  CUDA_REQUIRE(cudaMemcpy(&err, d_err.p, 4, cudaMemcpyDeviceToHost));
  CHECK_MESSAGE(err == 0u, "error word " << err << " on valid device data");
  check_lse_writes(lse, lse_n, c.str());
  int64_t o_bad = 0, o_clobbered = 0;
  for (int64_t i = 0; i < q_n; ++i)
    if (!std::isfinite(flashptx::bf16_to_float(o[i]))) ++o_bad;
  for (int64_t i = q_n; i < q_n + kGuard; ++i)
    if (o[i] != kPoison) ++o_clobbered;
  CHECK_MESSAGE(o_bad == 0, o_bad << " O elements not written (or not finite)");
  CHECK_MESSAGE(o_clobbered == 0, o_clobbered << " elements after O were written");
  // The cache after the call: the appended rows (rotated keys within one bf16 rounding of the fp64
  // rotation, values exact), every other element untouched.
  if (c.seqlen_new > 0) {
    std::vector<uint16_t> kd(static_cast<size_t>(kv_n)), vd(static_cast<size_t>(kv_n));
    CUDA_REQUIRE(cudaMemcpy(kd.data(), dk.p, kv_n * 2, cudaMemcpyDeviceToHost));
    CUDA_REQUIRE(cudaMemcpy(vd.data(), dv.p, kv_n * 2, cudaMemcpyDeviceToHost));
    int64_t k_bad = 0, v_bad = 0, touched = 0;
    for (int64_t i = 0; i < kv_n; ++i) {
      if (vd[i] != v_after[i]) ++v_bad;
      if (!appended[i]) {
        if (kd[i] != k_after[i]) ++touched;
        continue;
      }
      const double want = flashptx::bf16_to_float(k_after[i]), got = flashptx::bf16_to_float(kd[i]);
      // One bf16 ulp of the result, plus the fp32 rotation's rounding (a few 2^-24 of the pair's
      // magnitude; 2^-20 of it allowed).
      if (std::fabs(got - want) > std::ldexp(std::fabs(want), -7) + std::ldexp(k_mag[static_cast<size_t>(i)], -20) + 1e-30)
        ++k_bad;
    }
    CHECK_MESSAGE(k_bad == 0, k_bad << " appended key elements differ from the rotation by more than one bf16 ulp "
                                       "and the fp32 rotation's rounding");
    CHECK_MESSAGE(v_bad == 0, v_bad << " value elements differ from the expected cache");
    CHECK_MESSAGE(touched == 0, touched << " key elements outside the appended rows changed");
  }

  ref::Problem rp = ref::problem(batch, c.sq, 0, c.hq, c.hkv, hd, c.causal, 0);
  const Strides qs = make_strides(Layout::kContiguous, batch, c.sq, c.hq, hd);
  const Strides cs = make_strides(Layout::kContiguous, cache_batch, cache_seqlen, c.hkv, hd);
  const ref::TensorView qv = ref_view(q_used, FLASHPTX_BF16, qs), kv = ref_view(k_after, FLASHPTX_BF16, cs),
                        vv = ref_view(v_after, FLASHPTX_BF16, cs);
  // Left padding: the reference sees sequence b's keys [pad[b], lens_after[b]) as its keys 0, 1, ...
  // (the causal diagonal, bottom-right within that length, is the same cache position).
  const std::vector<int32_t> pad = c.leftpad.empty() ? std::vector<int32_t>(static_cast<size_t>(batch), 0) : c.leftpad;
  std::vector<int32_t> lens_ref = lens_after;
  for (size_t b = 0; b < lens_ref.size(); ++b) lens_ref[b] -= pad[b];
  const Padded padded{&w, &pad};
  const ref::Forward exact = ref::forward_kvcache(rp, lens_ref, qv, kv, vv, key_at_padded, &padded);
  const ref::Forward same =
      ref::forward_kvcache(rp, lens_ref, qv, kv, vv, key_at_padded, &padded, flashptx::Round::kBF16);
  double e_o = 0, e_same = 0, e_lse = 0, e_lse_same = 0, lse_mag = 0;
  for (int64_t i = 0; i < q_n; ++i) {
    e_o = std::max(e_o, std::fabs(flashptx::bf16_to_float(o[i]) - exact.o[i]));
    e_same = std::max(e_same, std::fabs(same.o[i] - exact.o[i]));
  }
  int64_t inf_mismatch = 0;
  for (int64_t i = 0; i < lse_n; ++i) {
    if (std::isinf(exact.lse[i]) || std::isinf(lse[i])) {
      if (lse[i] != exact.lse[i]) ++inf_mismatch;
      continue;
    }
    e_lse = std::max(e_lse, std::fabs(lse[i] - exact.lse[i]));
    e_lse_same = std::max(e_lse_same, std::fabs(same.lse[i] - exact.lse[i]));
    lse_mag = std::max(lse_mag, std::fabs(exact.lse[i]));
  }
  const double o_tol = 2 * e_same + 1e-5, lse_tol = 2 * e_lse_same + 1e-5 + std::ldexp(lse_mag, -20);
  CHECK_MESSAGE(e_o <= o_tol, "max|O - ref| = " << e_o << " > " << o_tol);
  CHECK_MESSAGE(e_lse <= lse_tol, "max|LSE - ref| = " << e_lse << " > " << lse_tol);
  CHECK_MESSAGE(inf_mismatch == 0, inf_mismatch << " LSE values -inf on one side only");
}

// The driver's graph API, through the runtime's entry-point query as src/tensormap.cpp takes
// cuTensorMapEncodeTiled (no -lcuda link, and nothing the simulator's runtime must define).
struct GraphApi {
  CUresult (*begin)(CUstream, CUstreamCaptureMode) = nullptr;
  CUresult (*end)(CUstream, CUgraph*) = nullptr;
  CUresult (*instantiate)(CUgraphExec*, CUgraph, unsigned long long) = nullptr;
  CUresult (*launch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*exec_destroy)(CUgraphExec) = nullptr;
  CUresult (*destroy)(CUgraph) = nullptr;
};
template <class F>
bool entry(const char* name, F* fn) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q{};
  const bool ok = cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) == cudaSuccess &&
                  q == cudaDriverEntryPointSuccess && p != nullptr;
  *fn = reinterpret_cast<F>(p);
  return ok;
}
GraphApi graph_api() {
  GraphApi g;
  REQUIRE(entry("cuStreamBeginCapture", &g.begin));
  REQUIRE(entry("cuStreamEndCapture", &g.end));
  REQUIRE(entry("cuGraphInstantiateWithFlags", &g.instantiate));
  REQUIRE(entry("cuGraphLaunch", &g.launch));
  REQUIRE(entry("cuGraphExecDestroy", &g.exec_destroy));
  REQUIRE(entry("cuGraphDestroy", &g.destroy));
  return g;
}

}  // namespace

TEST_SUITE("gpu_sm90 fa3 kvcache") {

TEST_CASE("a captured CUDA graph replays with new lengths and a new page table (GPU only)") {
  // One paged decode call with 3 splits (attention + combine) captured on a stream in the global
  // capture mode (PyTorch's default), then replayed four times, each after writing new
  // cache_seqlens (0, 1, a page edge, the full capacity among them) and a new page table (a fresh
  // permutation of the pages) into the same device buffers: O and LSE against the fp64 reference
  // of that replay's lengths and table, the error word 0.
  const GraphApi api = graph_api();
  std::mt19937_64 rng(0x6a7f);
  const int64_t batch = 3, hq = 8, hkv = 2, ps = 64, max_pages = 4, pages = batch * max_pages + 3, splits = 3;
  const int64_t q_n = batch * hq * kD, kv_n = pages * ps * hkv * kD, lse_n = batch * hq;
  const auto q = random_bf16(static_cast<size_t>(q_n), rng), k = random_bf16(static_cast<size_t>(kv_n), rng),
             v = random_bf16(static_cast<size_t>(kv_n), rng);
  DeviceBuf dq(q_n * 2), dk(kv_n * 2), dv(kv_n * 2), d_o((q_n + kGuard) * 2), d_lse((lse_n + kGuard) * 4),
      d_len(batch * 4), d_table(batch * max_pages * 4), d_err(4);
  upload(dq, q);
  upload(dk, k);
  upload(dv, v);
  flashptx_kvcache_params p{};
  p.q = dq.p; p.k_cache = dk.p; p.v_cache = dv.p; p.o = d_o.p; p.lse = static_cast<float*>(d_lse.p);
  p.cache_seqlens = static_cast<const int32_t*>(d_len.p);
  p.page_table = static_cast<const int32_t*>(d_table.p);
  p.batch = batch; p.seqlen_q = 1; p.heads_q = hq; p.heads_kv = hkv; p.head_dim = kD;
  p.cache_batch = pages; p.cache_seqlen = ps; p.max_pages = max_pages; p.page_table_stride = max_pages;
  p.q_head_stride = p.o_head_stride = kD; p.q_row_stride = p.o_row_stride = hq * kD;
  p.q_batch_stride = p.o_batch_stride = hq * kD;
  p.k_head_stride = p.v_head_stride = kD; p.k_row_stride = p.v_row_stride = hkv * kD;
  p.k_batch_stride = p.v_batch_stride = ps * hkv * kD;
  p.dtype = FLASHPTX_BF16;
  p.num_splits = splits;
  p.error_word = static_cast<uint32_t*>(d_err.p);
  int64_t ws = 0;
  REQUIRE(flashptx_fwd_kvcache_workspace_size(&p, &ws) == FLASHPTX_OK);
  REQUIRE(ws > 0);
  DeviceBuf d_ws(static_cast<size_t>(ws));
  p.workspace = d_ws.p;
  p.workspace_bytes = ws;

  auto new_table = [&] {
    std::vector<int32_t> perm(static_cast<size_t>(pages));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    return std::vector<int32_t>(perm.begin(), perm.begin() + batch * max_pages);
  };
  // The first lengths and table, and one plain call before the capture (the library's first launch
  // of a kernel may load it: not a stream operation to capture).
  std::vector<int32_t> table = new_table();
  upload(d_len, std::vector<int32_t>{1, 1, 1});
  upload(d_table, table);
  cudaStream_t stream = nullptr;
  CUDA_REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  REQUIRE_MESSAGE(flashptx_fwd_kvcache(&p, stream) == FLASHPTX_OK, flashptx_last_error());
  CUDA_REQUIRE(cudaStreamSynchronize(stream));

  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  REQUIRE(api.begin(reinterpret_cast<CUstream>(stream), CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
  const flashptx_status captured = flashptx_fwd_kvcache(&p, stream);
  const CUresult ended = api.end(reinterpret_cast<CUstream>(stream), &graph);
  REQUIRE_MESSAGE(captured == FLASHPTX_OK, flashptx_last_error());
  REQUIRE(ended == CUDA_SUCCESS);
  REQUIRE(api.instantiate(&exec, graph, 0) == CUDA_SUCCESS);

  const std::vector<std::vector<int32_t>> replays = {{0, 100, 256}, {255, 1, 64}, {17, 200, 130}, {256, 0, 65}};
  for (size_t r = 0; r < replays.size(); ++r) {
    const std::vector<int32_t>& lens = replays[r];
    INFO("replay " << r << " lens " << lens[0] << "," << lens[1] << "," << lens[2]);
    table = new_table();
    upload(d_len, lens);
    upload(d_table, table);
    CUDA_REQUIRE(cudaMemset(d_o.p, 0xFF, d_o.bytes));
    CUDA_REQUIRE(cudaMemset(d_lse.p, 0xFF, d_lse.bytes));
    CUDA_REQUIRE(cudaMemset(d_err.p, 0, 4));
    REQUIRE(api.launch(exec, reinterpret_cast<CUstream>(stream)) == CUDA_SUCCESS);
    CUDA_REQUIRE(cudaStreamSynchronize(stream));
    std::vector<uint16_t> o(static_cast<size_t>(q_n + kGuard));
    std::vector<float> lse(static_cast<size_t>(lse_n + kGuard));
    uint32_t err = 0xdeadu;
    CUDA_REQUIRE(cudaMemcpy(o.data(), d_o.p, o.size() * 2, cudaMemcpyDeviceToHost));
    CUDA_REQUIRE(cudaMemcpy(lse.data(), d_lse.p, lse.size() * 4, cudaMemcpyDeviceToHost));
    CUDA_REQUIRE(cudaMemcpy(&err, d_err.p, 4, cudaMemcpyDeviceToHost));
    CHECK_MESSAGE(err == 0u, "error word " << err);
    check_lse_writes(lse, lse_n, "graph replay");
    for (int64_t i = q_n; i < q_n + kGuard; ++i) REQUIRE(o[static_cast<size_t>(i)] == kPoison);
    Where w;
    w.paged = true;
    w.page_size = ps;
    w.max_pages = max_pages;
    w.table = table;
    const ref::Problem rp = ref::problem(batch, 1, 0, hq, hkv, kD, false, 0);
    const Strides qs = make_strides(Layout::kContiguous, batch, 1, hq, kD);
    const Strides cs = make_strides(Layout::kContiguous, pages, ps, hkv, kD);
    const ref::TensorView qv = ref_view(q, FLASHPTX_BF16, qs), kv = ref_view(k, FLASHPTX_BF16, cs),
                          vv = ref_view(v, FLASHPTX_BF16, cs);
    const ref::Forward exact = ref::forward_kvcache(rp, lens, qv, kv, vv, key_at, &w);
    const ref::Forward same = ref::forward_kvcache(rp, lens, qv, kv, vv, key_at, &w, flashptx::Round::kBF16);
    double e_o = 0, e_same = 0, e_lse = 0;
    int64_t inf_mismatch = 0, o_bad = 0;
    for (int64_t i = 0; i < q_n; ++i) {
      const double got = flashptx::bf16_to_float(o[static_cast<size_t>(i)]);
      if (!std::isfinite(got)) ++o_bad;
      e_o = std::max(e_o, std::fabs(got - exact.o[i]));
      e_same = std::max(e_same, std::fabs(same.o[i] - exact.o[i]));
    }
    for (int64_t i = 0; i < lse_n; ++i) {
      if (std::isinf(exact.lse[i]) || std::isinf(lse[i])) {
        if (lse[i] != exact.lse[i]) ++inf_mismatch;
        continue;
      }
      e_lse = std::max(e_lse, std::fabs(lse[i] - exact.lse[i]));
    }
    CHECK_MESSAGE(o_bad == 0, o_bad << " O elements not written (or not finite)");
    CHECK_MESSAGE(e_o <= 2 * e_same + 1e-5, "max|O - ref| = " << e_o << " > " << 2 * e_same + 1e-5);
    CHECK_MESSAGE(e_lse <= 1e-3, "max|LSE - ref| = " << e_lse);
    CHECK_MESSAGE(inf_mismatch == 0, inf_mismatch << " LSE values -inf on one side only");
  }
  CHECK(api.exec_destroy(exec) == CUDA_SUCCESS);
  CHECK(api.destroy(graph) == CUDA_SUCCESS);
  CUDA_REQUIRE(cudaStreamDestroy(stream));
}


TEST_CASE("decode and chunked prefill against contiguous and paged caches*") {
  // lens: 0 (no key), 1, a block edge, ragged, the full capacity.
  const std::vector<KCase> cases = {
      {1, 4, 2, {0, 1, 64, 150, 192}, false, 0, 192, false, 1},
      {1, 4, 2, {0, 1, 64, 150, 192}, false, 0, 192, false, 3, true},
      {24, 4, 1, {37, 128, 200}, false, 0, 200, true, 1},
      {1, 4, 4, {5, 130}, true, 64, 192, false, 1},
      {1, 6, 2, {0, 77, 192}, true, 64, 192, false, 7},
      {3, 4, 2, {19, 100, 160}, true, 16, 160, true, 3},
      {40, 4, 2, {30, 128}, true, 128, 256, true, 1},
      {1, 4, 1, {1, 90, 256}, true, 32, 256, false, 1},
  };
  uint64_t seed = 0x6b76;
  for (const KCase& c : cases) check_case(c, seed++);
}

TEST_CASE("new keys appended in place, with and without rotary (interleaved, half-split)*") {
  // {sq, hq, hkv, lens, paged, page, cap, causal, splits, batch_idx, seqlen_new, rotary_dim, interleaved}
  const std::vector<KCase> cases = {
      {1, 4, 2, {0, 70, 127}, false, 0, 160, false, 1, true, 1, 0, false},
      {3, 4, 2, {0, 61, 100}, true, 64, 192, true, 3, false, 3, 64, true},
      {2, 4, 1, {5, 40}, true, 16, 128, true, 1, false, 2, 128, false},
      {1, 2, 2, {33, 0}, false, 0, 96, false, 1, false, 4, 32, false},
  };
  uint64_t seed = 0xa99e;
  for (const KCase& c : cases) check_case(c, seed++);
}

TEST_CASE("left padding (cache_leftpad): keys from cache_leftpad[b] on*") {
  // {sq, hq, hkv, lens, paged, page, cap, causal, splits, batch_idx, seqlen_new, rotary_dim, interleaved,
  //  leftpad}: 0, inside a block, a block edge, the whole length (no key), with splits (ranges that
  // start past the padding), causal rows that see nothing, pages wholly inside the padding (-1 in
  // the table), an append with rotary behind the padding.
  const std::vector<KCase> cases = {
      {1, 4, 2, {0, 100, 192, 150}, false, 0, 192, false, 3, false, 0, 0, false, {0, 37, 64, 150}},
      {20, 4, 1, {90, 200}, false, 0, 200, true, 1, true, 0, 0, false, {80, 5}},
      {1, 6, 2, {130, 255}, true, 16, 256, false, 7, false, 0, 0, false, {70, 129}},
      {3, 4, 2, {61, 140}, true, 64, 192, true, 2, false, 3, 64, true, {0, 128}},
  };
  uint64_t seed = 0x1e7f;
  for (const KCase& c : cases) check_case(c, seed++);
}

// Head dims 64 and 256 (their own kernels: 4 and 2 stages, one 64-column chunk or four; their own
// combine), the d128 cases' coverage at simulator shapes: each case once per head dim.
std::vector<KCase> at_head_dims(const std::vector<KCase>& cases) {
  std::vector<KCase> out;
  for (int64_t d : {64, 256})
    for (KCase c : cases) {
      c.d = d;
      if (c.rotary_dim < 0) c.rotary_dim = d;  // -1: rotary over the whole head
      out.push_back(c);
    }
  return out;
}

TEST_CASE("d64 and d256: decode and chunked prefill against contiguous and paged caches*") {
  // {sq, hq, hkv, lens, paged, page, cap, causal, splits, batch_idx}: lens 0 (no key), 1, a block
  // edge, ragged, the full capacity; contiguous (and through cache_batch_idx), pages of 16, 64 and
  // 128; splits 1, 2, 3 and 7 (empty splits); GQA 4:2 and 6:2, MQA 4:1, MHA; decode and a chunk of
  // 17 rows x 4 heads of a group (two 64-row tiles), causal.
  const std::vector<KCase> cases = at_head_dims({
      {1, 4, 2, {0, 1, 64, 150, 192}, false, 0, 192, false, 1},
      {1, 4, 1, {0, 70, 192}, false, 0, 192, false, 3, true},
      {17, 8, 2, {37, 128}, false, 0, 128, true, 2},
      {1, 6, 2, {0, 77, 192}, true, 64, 192, false, 7},
      {3, 4, 2, {19, 100, 160}, true, 16, 160, true, 3},
      {1, 4, 4, {5, 256}, true, 128, 256, false, 1},
  });
  uint64_t seed = 0xd64d256;
  for (const KCase& c : cases) check_case(c, seed++);
}

TEST_CASE("d64 and d256: new keys appended in place, with and without rotary (interleaved, half-split)*") {
  // {sq, hq, hkv, lens, paged, page, cap, causal, splits, batch_idx, seqlen_new, rotary_dim (-1: d),
  //  interleaved}: the cache after the call checked (check_case); an append that fills the capacity;
  // rotary over part of the head and over all of it.
  const std::vector<KCase> cases = at_head_dims({
      {1, 4, 2, {0, 70, 127}, false, 0, 160, false, 1, true, 1, 0, false},
      {3, 4, 2, {0, 61, 189}, true, 64, 192, true, 3, false, 3, -1, false},
      {2, 4, 1, {5, 40}, true, 16, 128, true, 1, false, 2, 32, true},
      {1, 2, 2, {33, 0}, false, 0, 96, false, 2, false, 4, 64, true},
  });
  uint64_t seed = 0xa99e64;
  for (const KCase& c : cases) check_case(c, seed++);
}

TEST_CASE("device data out of range: clamped and recorded in the error word*") {
  // Sequence 0 claims more keys than the cache holds (clamped to its capacity: then the full
  // cache), sequence 1's second page index is outside the cache (its keys read as zeros).
  std::mt19937_64 rng(0x3e7);
  const int64_t ps = 64, max_pages = 2, pages = 4, hkv = 1, hq = 2;
  const int64_t kv_n = pages * ps * hkv * kD, q_n = 2 * hq * kD;
  const auto q = random_bf16(q_n, rng), k = random_bf16(kv_n, rng), v = random_bf16(kv_n, rng);
  const std::vector<int32_t> lens = {500, 100}, table = {2, 0, 1, 99};
  DeviceBuf dq(q_n * 2), dk(kv_n * 2), dv(kv_n * 2), d_o(q_n * 2), d_len(8), d_table(16), d_err(4);
  upload(dq, q);
  upload(dk, k);
  upload(dv, v);
  upload(d_len, lens);
  upload(d_table, table);
  CUDA_REQUIRE(cudaMemset(d_o.p, 0xFF, d_o.bytes));
  CUDA_REQUIRE(cudaMemset(d_err.p, 0, 4));
  flashptx_kvcache_params p{};
  p.q = dq.p; p.k_cache = dk.p; p.v_cache = dv.p; p.o = d_o.p;
  p.cache_seqlens = static_cast<const int32_t*>(d_len.p);
  p.page_table = static_cast<const int32_t*>(d_table.p);
  p.batch = 2; p.seqlen_q = 1; p.heads_q = hq; p.heads_kv = hkv; p.head_dim = kD;
  p.cache_batch = pages; p.cache_seqlen = ps; p.max_pages = max_pages; p.page_table_stride = max_pages;
  p.q_head_stride = p.o_head_stride = kD; p.q_row_stride = p.o_row_stride = hq * kD;
  p.q_batch_stride = p.o_batch_stride = hq * kD;
  p.k_head_stride = p.v_head_stride = kD; p.k_row_stride = p.v_row_stride = hkv * kD;
  p.k_batch_stride = p.v_batch_stride = ps * hkv * kD;
  p.dtype = FLASHPTX_BF16;
  p.num_splits = 1;
  p.error_word = static_cast<uint32_t*>(d_err.p);
  REQUIRE_MESSAGE(flashptx_fwd_kvcache(&p, nullptr) == FLASHPTX_OK, flashptx_last_error());
  CUDA_REQUIRE(cudaDeviceSynchronize());
  uint32_t err = 0;
  std::vector<uint16_t> o(q_n);
  CUDA_REQUIRE(cudaMemcpy(&err, d_err.p, 4, cudaMemcpyDeviceToHost));
  CUDA_REQUIRE(cudaMemcpy(o.data(), d_o.p, q_n * 2, cudaMemcpyDeviceToHost));
  CHECK(err == (FLASHPTX_KVCACHE_ERR_SEQLEN | FLASHPTX_KVCACHE_ERR_PAGE));
  for (int64_t i = 0; i < q_n; ++i) REQUIRE(std::isfinite(flashptx::bf16_to_float(o[i])));
  // Sequence 0, clamped to 128 keys, is the reference of its full capacity.
  Where w;
  w.paged = true;
  w.page_size = ps;
  w.max_pages = max_pages;
  w.table = table;
  ref::Problem rp = ref::problem(1, 1, 0, hq, hkv, kD, false, 0);
  const Strides qs = make_strides(Layout::kContiguous, 1, 1, hq, kD);
  const Strides cs = make_strides(Layout::kContiguous, pages, ps, hkv, kD);
  const ref::Forward exact = ref::forward_kvcache(rp, {128}, ref_view(q, FLASHPTX_BF16, qs),
                                                  ref_view(k, FLASHPTX_BF16, cs), ref_view(v, FLASHPTX_BF16, cs),
                                                  key_at, &w);
  const ref::Forward same =
      ref::forward_kvcache(rp, {128}, ref_view(q, FLASHPTX_BF16, qs), ref_view(k, FLASHPTX_BF16, cs),
                           ref_view(v, FLASHPTX_BF16, cs), key_at, &w, flashptx::Round::kBF16);
  double e = 0, e_same = 0;
  for (int64_t i = 0; i < hq * kD; ++i) {
    e = std::max(e, std::fabs(flashptx::bf16_to_float(o[i]) - exact.o[i]));
    e_same = std::max(e_same, std::fabs(same.o[i] - exact.o[i]));
  }
  CHECK_MESSAGE(e <= 2 * e_same + 1e-5, "clamped sequence: max|O - ref| = " << e);

  // A left padding past its sequence's (clamped) length, and a negative one: clamped to [0, length]
  // and recorded; sequence 0 then has no key (O = 0), sequence 1 attends from key 0.
  const std::vector<int32_t> pads = {129, -4}, lens_ok = {128, 100}, table_ok = {2, 0, 1, 3};
  DeviceBuf d_pad(8);
  upload(d_pad, pads);
  upload(d_len, lens_ok);
  upload(d_table, table_ok);
  CUDA_REQUIRE(cudaMemset(d_o.p, 0xFF, d_o.bytes));
  CUDA_REQUIRE(cudaMemset(d_err.p, 0, 4));
  p.cache_leftpad = static_cast<const int32_t*>(d_pad.p);
  REQUIRE_MESSAGE(flashptx_fwd_kvcache(&p, nullptr) == FLASHPTX_OK, flashptx_last_error());
  CUDA_REQUIRE(cudaDeviceSynchronize());
  CUDA_REQUIRE(cudaMemcpy(&err, d_err.p, 4, cudaMemcpyDeviceToHost));
  CUDA_REQUIRE(cudaMemcpy(o.data(), d_o.p, q_n * 2, cudaMemcpyDeviceToHost));
  CHECK(err == FLASHPTX_KVCACHE_ERR_LEFTPAD);
  for (int64_t i = 0; i < hq * kD; ++i) REQUIRE(flashptx::bf16_to_float(o[static_cast<size_t>(i)]) == 0.f);  // no key
  w.table = table_ok;
  const ref::Problem rp1 = ref::problem(1, 1, 0, hq, hkv, kD, false, 0);
  struct Second { const Where* w; };
  const Second second{&w};
  const auto key_at_second = [](const void* ctx, int64_t, int64_t j, int64_t* outer, int64_t* row) {
    key_at(static_cast<const Second*>(ctx)->w, 1, j, outer, row);
  };
  const std::vector<uint16_t> q1(q.begin() + hq * kD, q.end());
  const ref::Forward exact1 = ref::forward_kvcache(rp1, {100}, ref_view(q1, FLASHPTX_BF16, qs),
                                                   ref_view(k, FLASHPTX_BF16, cs), ref_view(v, FLASHPTX_BF16, cs),
                                                   key_at_second, &second);
  const ref::Forward same1 =
      ref::forward_kvcache(rp1, {100}, ref_view(q1, FLASHPTX_BF16, qs), ref_view(k, FLASHPTX_BF16, cs),
                           ref_view(v, FLASHPTX_BF16, cs), key_at_second, &second, flashptx::Round::kBF16);
  e = 0;
  e_same = 0;
  for (int64_t i = 0; i < hq * kD; ++i) {
    e = std::max(e, std::fabs(flashptx::bf16_to_float(o[static_cast<size_t>(hq * kD + i)]) - exact1.o[i]));
    e_same = std::max(e_same, std::fabs(same1.o[i] - exact1.o[i]));
  }
  CHECK_MESSAGE(e <= 2 * e_same + 1e-5, "negative left padding: max|O - ref| = " << e);
}

}  // TEST_SUITE
