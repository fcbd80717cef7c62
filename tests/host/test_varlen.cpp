// The varlen forward on any machine (include/flashptx.h, "variable-length batches"): validation of
// every bad prefix sum (its own status and a message naming the entry, nothing launched), the launch
// plan, and the schedule: the tile order the kernel decodes (src/protocol/tile_scheduler.h, the
// same __host__ __device__ code) against a model written here from the definition.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "include/flashptx.h"
#include "src/protocol/tile_scheduler.h"
#include "src/internal.h"
#include "tools/models/scheduling_model.h"
#include "src/plan.h"
#include "src/sm90/fa3_fwd_config.h"

namespace {

alignas(16) unsigned char g_fake[4][64];
const flashptx::Device kH200{0, 90, 132};

std::vector<int32_t> prefix(const std::vector<int>& lens) {
  std::vector<int32_t> cu(lens.size() + 1, 0);
  for (size_t i = 0; i < lens.size(); ++i) cu[i + 1] = cu[i] + lens[i];
  return cu;
}

// A valid problem over host prefix sums the caller keeps alive.
flashptx_fwd_varlen_params problem(const std::vector<int32_t>& cu_q, const std::vector<int32_t>& cu_k, int64_t hq,
                                   int64_t hkv, int64_t d, flashptx_dtype t, int causal) {
  flashptx_fwd_varlen_params p;
  flashptx_fwd_varlen_params_contiguous(&p, g_fake[0], g_fake[1], g_fake[2], g_fake[3], nullptr, cu_q.data(),
                                        cu_k.data(), static_cast<int64_t>(cu_q.size()) - 1, hq, hkv, d, t, causal);
  return p;
}

// The model of the schedule, from its definition (src/sm90/fa3_fwd_config.h, FwdVarlenTable):
// sequences with query rows, sorted by the K/V blocks of their longest tile, then by their tile
// count, both descending, ties in the caller's order; inside a sequence query blocks longest-first
// under a causal mask (ascending otherwise), every head of a block before the next block.
struct ModelTile { int seq, m_block, head; };
std::vector<ModelTile> model_order(const std::vector<int>& lq, const std::vector<int>& lk, int heads, int bm, int bn,
                                   bool causal) {
  auto cost = [&](int b, int m) {
    return causal ? flashptx::causal_n_blocks(m, bm, bn, lq[b], lk[b]) : flashptx::n_blocks(bn, lk[b]);
  };
  std::vector<int> seqs;
  for (int b = 0; b < static_cast<int>(lq.size()); ++b)
    if (lq[b] > 0) seqs.push_back(b);
  auto blocks = [&](int b) { return (lq[b] + bm - 1) / bm; };
  auto longest = [&](int b) {
    int mx = 0;
    for (int m = 0; m < blocks(b); ++m) mx = std::max(mx, cost(b, m));
    return mx;
  };
  std::stable_sort(seqs.begin(), seqs.end(), [&](int a, int b) {
    return std::make_tuple(-longest(a), -blocks(a)) < std::make_tuple(-longest(b), -blocks(b));
  });
  std::vector<ModelTile> out;
  for (int b : seqs)
    for (int i = 0; i < blocks(b); ++i)
      for (int h = 0; h < heads; ++h) out.push_back({b, causal ? blocks(b) - 1 - i : i, h});
  return out;
}

// The kernel's decode of every tile of a table (varlen_tile_from_linear), mapped back to the
// caller's sequence index through the table's packed offsets.
std::vector<ModelTile> decoded_order(const flashptx::fa3::FwdVarlenTable& t, const std::vector<int32_t>& cu_q,
                                     int heads, bool causal) {
  std::map<int, int> seq_of_start;  // a sequence with rows is named by its first packed row
  for (size_t b = 0; b + 1 < cu_q.size(); ++b)
    if (cu_q[b + 1] > cu_q[b]) seq_of_start[cu_q[b]] = static_cast<int>(b);
  std::vector<ModelTile> out;
  for (int idx = 0; idx < t.tile_prefix[t.num_seqs]; ++idx) {
    const flashptx::TileCoord c = flashptx::varlen_tile_from_linear(t.tile_prefix, t.num_seqs, heads, idx, causal);
    out.push_back({seq_of_start.at(t.seq[c.batch].q_start), c.m_block, c.head});
  }
  return out;
}

std::vector<int> random_lengths(uint64_t seed, int n, int max_len, double zero_fraction) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&x] { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x; };
  std::vector<int> lens(n);
  for (int& l : lens) l = (next() % 1000) < zero_fraction * 1000 ? 0 : static_cast<int>(next() % (max_len + 1));
  return lens;
}

}  // namespace

TEST_SUITE("host varlen") {

TEST_CASE("the ABI's constants agree with the kernel's parameter block") {
  CHECK(FLASHPTX_VARLEN_MAX_SEQS == flashptx::fa3::kVarlenMaxSeqs);
  CHECK(sizeof(flashptx::fa3::FwdVarlenParams) <= 32764);
}

TEST_CASE("the contiguous helper computes totals and longest sequences from the host prefix sums") {
  const auto cu_q = prefix({5, 0, 300, 7}), cu_k = prefix({9, 4, 0, 1000});
  const flashptx_fwd_varlen_params p = problem(cu_q, cu_k, 8, 2, 128, FLASHPTX_BF16, 1);
  CHECK(p.num_seqs == 4);
  CHECK(p.total_q == 312);
  CHECK(p.total_k == 1013);
  CHECK(p.max_seqlen_q == 300);
  CHECK(p.max_seqlen_k == 1000);
  CHECK(p.q_row_stride == 8 * 128);
  CHECK(p.k_row_stride == 2 * 128);
  CHECK(p.o_head_stride == 128);
  CHECK(flashptx_fwd_varlen_check(&p) == FLASHPTX_OK);
  CHECK(std::string(flashptx_last_error()).empty());
}

TEST_CASE("each bad prefix sum has its own status, a message naming the entry, and launches nothing") {
  struct Bad {
    const char* what;
    flashptx_status want;
    std::vector<int32_t> cu_q, cu_k;
    void (*mutate)(flashptx_fwd_varlen_params&);
    const char* needle;
  };
  const std::vector<int32_t> q = prefix({100, 0, 37, 300}), k = prefix({120, 5, 0, 300});
  auto none = [](flashptx_fwd_varlen_params&) {};
  const Bad bad[] = {
      {"negative first entry", FLASHPTX_ERR_BAD_CU_SEQLENS, {-1, 99, 99, 136, 436}, k, none, "cu_seqlens_q[0] is -1"},
      {"positive first entry", FLASHPTX_ERR_BAD_CU_SEQLENS, {4, 100, 100, 137, 437}, k, none, "cu_seqlens_q[0] is 4"},
      {"decreasing q", FLASHPTX_ERR_BAD_CU_SEQLENS, {0, 100, 90, 137, 437}, k, none, "cu_seqlens_q decreases at entry 2"},
      {"decreasing k", FLASHPTX_ERR_BAD_CU_SEQLENS, q, {0, 120, 125, 125, 100}, none, "cu_seqlens_k decreases at entry 4"},
      {"k starts negative", FLASHPTX_ERR_BAD_CU_SEQLENS, q, {-5, 115, 120, 120, 420}, none, "cu_seqlens_k[0] is -5"},
      {"last q above total_q", FLASHPTX_ERR_BAD_CU_SEQLENS, q, k,
       [](flashptx_fwd_varlen_params& p) { p.total_q -= 1; }, "not total_q"},
      {"last q below total_q", FLASHPTX_ERR_BAD_CU_SEQLENS, q, k,
       [](flashptx_fwd_varlen_params& p) { p.total_q += 8; }, "not total_q"},
      {"last k not total_k", FLASHPTX_ERR_BAD_CU_SEQLENS, q, k,
       [](flashptx_fwd_varlen_params& p) { p.total_k = 7; }, "not total_k"},
      {"max_seqlen_q below the longest", FLASHPTX_ERR_BAD_CU_SEQLENS, q, k,
       [](flashptx_fwd_varlen_params& p) { p.max_seqlen_q = 299; }, "sequence 3"},
      {"max_seqlen_k below the longest", FLASHPTX_ERR_BAD_CU_SEQLENS, q, k,
       [](flashptx_fwd_varlen_params& p) { p.max_seqlen_k = 0; }, "max_seqlen_k (0)"},
      {"no sequences but rows", FLASHPTX_ERR_BAD_CU_SEQLENS, q, k,
       [](flashptx_fwd_varlen_params& p) { p.num_seqs = 0; }, "num_seqs is 0"},
      {"too many sequences", FLASHPTX_ERR_TOO_MANY_SEQS, q, k,
       [](flashptx_fwd_varlen_params& p) { p.num_seqs = FLASHPTX_VARLEN_MAX_SEQS + 1; }, "FLASHPTX_VARLEN_MAX_SEQS"},
      {"negative num_seqs", FLASHPTX_ERR_BAD_SHAPE, q, k,
       [](flashptx_fwd_varlen_params& p) { p.num_seqs = -1; }, "num_seqs is -1: a size must be 0 or more"},
      {"null cu_seqlens_q", FLASHPTX_ERR_NULL_POINTER, q, k,
       [](flashptx_fwd_varlen_params& p) { p.cu_seqlens_q = nullptr; }, "cu_seqlens_q is NULL"},
      {"null cu_seqlens_k", FLASHPTX_ERR_NULL_POINTER, q, k,
       [](flashptx_fwd_varlen_params& p) { p.cu_seqlens_k = nullptr; }, "cu_seqlens_k is NULL"},
      // The rest of the problem, as the fixed-length forward checks it.
      {"head_dim 80", FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, q, k,
       [](flashptx_fwd_varlen_params& p) { p.head_dim = 80; }, "the varlen forward's (head_dim, head_dim_v) = (80, 80)"},
      {"head_dim_v 64 beside 128", FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, q, k,
       [](flashptx_fwd_varlen_params& p) { p.head_dim_v = 64; }, "(128, 64) is not one of the forward's"},
      {"head_dim_v 128 beside 256", FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, q, k,
       [](flashptx_fwd_varlen_params& p) { p.head_dim = 256; p.head_dim_v = 128; }, "(256, 128)"},
      {"negative head_dim_v", FLASHPTX_ERR_BAD_SHAPE, q, k,
       [](flashptx_fwd_varlen_params& p) { p.head_dim_v = -128; }, "head_dim_v is -128"},
      {"fp32", FLASHPTX_ERR_UNSUPPORTED_DTYPE, q, k,
       [](flashptx_fwd_varlen_params& p) { p.dtype = FLASHPTX_FP32; }, "dtype is FLASHPTX_FP32"},
      {"heads 7 over 2", FLASHPTX_ERR_BAD_HEADS, q, k,
       [](flashptx_fwd_varlen_params& p) { p.heads_q = 7; }, "multiple"},
      {"null o", FLASHPTX_ERR_NULL_POINTER, q, k, [](flashptx_fwd_varlen_params& p) { p.o = nullptr; }, "o is NULL"},
      {"misaligned k", FLASHPTX_ERR_MISALIGNED, q, k,
       [](flashptx_fwd_varlen_params& p) { p.k = g_fake[1] + 8; }, "k is not 16-byte aligned"},
      {"row stride not 16 B", FLASHPTX_ERR_MISALIGNED, q, k,
       [](flashptx_fwd_varlen_params& p) { p.v_row_stride += 4; }, "row stride"},
      {"overlapping O rows", FLASHPTX_ERR_BAD_STRIDES, q, k,
       [](flashptx_fwd_varlen_params& p) { p.o_row_stride = 64; }, "overlap"},
      {"NaN scale", FLASHPTX_ERR_BAD_SHAPE, q, k,
       [](flashptx_fwd_varlen_params& p) { p.softmax_scale = NAN; }, "softmax_scale"},
  };
  for (const Bad& b : bad) {
    INFO(b.what);
    // The totals and maxima of the valid arrays, then the bad arrays in their place.
    flashptx_fwd_varlen_params p = problem(q, k, 8, 2, 128, FLASHPTX_BF16, 1);
    p.cu_seqlens_q = b.cu_q.data();
    p.cu_seqlens_k = b.cu_k.data();
    b.mutate(p);
    CHECK(flashptx_fwd_varlen_check(&p) == b.want);
    const std::string msg = flashptx_last_error();
    CHECK_MESSAGE(msg.find(flashptx_status_name(b.want)) == 0, msg);
    CHECK_MESSAGE(msg.find(b.needle) != std::string::npos, msg);
    // The launching call refuses with the same status before it looks for a device, and nothing
    // launches (the last launch of this thread is unchanged).
    const flashptx::Launch before = flashptx::last_launch();
    CHECK(flashptx_fwd_varlen(&p, nullptr) == b.want);
    CHECK(flashptx::last_launch().kernel == before.kernel);
    flashptx_kernel_info info{};
    CHECK(flashptx_fwd_varlen_kernel_info(&p, &info) == b.want);
  }
  CHECK(std::string(flashptx_status_name(FLASHPTX_ERR_BAD_CU_SEQLENS)) == "FLASHPTX_ERR_BAD_CU_SEQLENS");
  CHECK(std::string(flashptx_status_name(FLASHPTX_ERR_TOO_MANY_SEQS)) == "FLASHPTX_ERR_TOO_MANY_SEQS");
  CHECK(flashptx_fwd_varlen_check(nullptr) == FLASHPTX_ERR_NULL_PARAMS);
  CHECK(flashptx_fwd_varlen(nullptr, nullptr) == FLASHPTX_ERR_NULL_PARAMS);
}

TEST_CASE("sequences of length 0 are valid; nothing to compute is a successful no-op") {
  const auto cu_q = prefix({0, 17, 0, 0, 250}), cu_k = prefix({3, 0, 0, 9, 250});
  const flashptx_fwd_varlen_params with_zeros = problem(cu_q, cu_k, 4, 4, 64, FLASHPTX_FP16, 1);
  CHECK(flashptx_fwd_varlen_check(&with_zeros) == FLASHPTX_OK);
  // Every query sequence empty: no launch, no pointer needed.
  const auto zq = prefix({0, 0, 0}), zk = prefix({5, 0, 7});
  flashptx_fwd_varlen_params p = problem(zq, zk, 4, 4, 64, FLASHPTX_FP16, 0);
  p.q = p.k = p.v = nullptr;
  p.o = nullptr;
  CHECK(flashptx_fwd_varlen(&p, nullptr) == FLASHPTX_OK);
  flashptx_kernel_info info{};
  CHECK(flashptx_fwd_varlen_kernel_info(&p, &info) == FLASHPTX_ERR_BAD_SHAPE);
  // No sequences at all.
  p.num_seqs = 0;
  p.total_q = p.total_k = 0;
  p.cu_seqlens_q = p.cu_seqlens_k = nullptr;
  CHECK(flashptx_fwd_varlen(&p, nullptr) == FLASHPTX_OK);
  // Queries but no keys anywhere: valid (O = 0, LSE = -inf); k and v are not needed.
  const auto nq = prefix({3, 9}), nk = prefix({0, 0});
  p = problem(nq, nk, 2, 1, 128, FLASHPTX_BF16, 1);
  p.k = p.v = nullptr;
  CHECK(flashptx_fwd_varlen_check(&p) == FLASHPTX_OK);
}

TEST_CASE("binary search of the tile prefix equals a linear scan") {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const auto lens = random_lengths(seed, 1 + static_cast<int>(seed * 7 % 64), 3000, 0.2);
    const auto cu = prefix(lens);
    flashptx::fa3::FwdVarlenTable t{};
    flashptx::build_varlen_table(cu.data(), cu.data(), static_cast<int>(lens.size()), 3, 128, 128, seed % 2, &t);
    for (int idx = 0; idx < t.tile_prefix[t.num_seqs]; ++idx) {
      int linear = 0;
      while (linear + 1 < t.num_seqs && t.tile_prefix[linear + 1] <= idx) ++linear;
      REQUIRE(flashptx::varlen_slot_of_tile(t.tile_prefix, t.num_seqs, idx) == linear);
    }
  }
}

TEST_CASE("the kernel's tile order is the model's: longest-first sequences, every tile exactly once") {
  struct Batch { const char* what; std::vector<int> lq, lk; };
  std::vector<Batch> batches = {
      {"one sequence", {1000}, {1000}},
      {"all equal", std::vector<int>(16, 512), std::vector<int>(16, 512)},
      {"one long, many short", {}, {}},
      {"zeros inside", {0, 129, 0, 1, 4096, 0}, {7, 129, 0, 0, 4096, 300}},
      {"cross lengths", {300, 1000, 64, 2000}, {1000, 300, 2000, 64}},
  };
  batches[2].lq.assign(63, 100);
  batches[2].lq.insert(batches[2].lq.begin() + 17, 8192);
  batches[2].lk = batches[2].lq;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const int n = 1 + static_cast<int>(seed * 5 % 64);
    batches.push_back({"random", random_lengths(seed, n, 8192, 0.15), random_lengths(seed + 100, n, 8192, 0.15)});
  }
  for (const Batch& b : batches)
    for (bool causal : {false, true})
      for (int heads : {1, 3, 16})
        for (int bm : {128}) {
          INFO(std::string(b.what) << " n=" << b.lq.size() << " causal=" << causal << " heads=" << heads);
          const auto cu_q = prefix(b.lq), cu_k = prefix(b.lk);
          flashptx::fa3::FwdVarlenTable t{};
          flashptx::build_varlen_table(cu_q.data(), cu_k.data(), static_cast<int>(b.lq.size()), heads, bm, 128, causal,
                                       &t);
          const auto got = decoded_order(t, cu_q, heads, causal);
          const auto want = model_order(b.lq, b.lk, heads, bm, 128, causal);
          REQUIRE(got.size() == want.size());
          for (size_t i = 0; i < got.size(); ++i) {
            INFO("tile " << i);
            REQUIRE(got[i].seq == want[i].seq);
            REQUIRE(got[i].m_block == want[i].m_block);
            REQUIRE(got[i].head == want[i].head);
          }
          // The table's entries are the sequences' own offsets and lengths.
          for (int s = 0; s < t.num_seqs; ++s) {
            const auto& e = t.seq[s];
            int seq = 0;  // the sequence with rows that starts at q_start
            while (!(cu_q[seq] == e.q_start && cu_q[seq + 1] > cu_q[seq])) ++seq;
            CHECK(e.len_q == b.lq[seq]);
            CHECK(e.k_start == cu_k[seq]);
            CHECK(e.len_k == b.lk[seq]);
            CHECK(e.len_q > 0);
          }
        }
}

TEST_CASE("longest-first beats the caller's order on one long sequence among many short ones") {
  // 63 sequences of 256 rows and one of 8192 placed last, causal, 16 heads, on 132 first-free
  // workers (the hardware's block dispatch in index order): the caller's order leaves the long
  // sequence's tiles for the end, the schedule starts them first.
  std::vector<int> lens(63, 256);
  lens.push_back(8192);
  const auto cu = prefix(lens);
  const int heads = 16, bm = 128, bn = 128;
  flashptx::fa3::FwdVarlenTable t{};
  flashptx::build_varlen_table(cu.data(), cu.data(), static_cast<int>(lens.size()), heads, bm, bn, true, &t);
  std::vector<int> costs, sorted_order, caller_order;
  for (int idx = 0; idx < t.tile_prefix[t.num_seqs]; ++idx) {
    const auto c = flashptx::varlen_tile_from_linear(t.tile_prefix, t.num_seqs, heads, idx, true);
    const auto& e = t.seq[c.batch];
    costs.push_back(1 + flashptx::causal_n_blocks(c.m_block, bm, bn, e.len_q, e.len_k));  // + the tile's fixed cost
    sorted_order.push_back(idx);
  }
  // The caller's order: sequences as given, query blocks ascending.
  std::vector<std::tuple<int, int, int>> key;  // (caller's sequence, m_block, idx)
  for (int idx = 0; idx < static_cast<int>(costs.size()); ++idx) {
    const auto c = flashptx::varlen_tile_from_linear(t.tile_prefix, t.num_seqs, heads, idx, true);
    const int seq = static_cast<int>(std::find(cu.begin(), cu.end() - 1, t.seq[c.batch].q_start) - cu.begin());
    key.emplace_back(seq, c.m_block, idx);
  }
  std::sort(key.begin(), key.end());
  for (const auto& k : key) caller_order.push_back(std::get<2>(k));
  using flashptx::models::scheduling::list_schedule;
  using flashptx::models::scheduling::makespan_lower_bound;
  const int lpt = list_schedule(costs, sorted_order, 132).makespan;
  const int caller = list_schedule(costs, caller_order, 132).makespan;
  const int bound = makespan_lower_bound(costs, 132);
  INFO("makespan: longest-first " << lpt << ", caller's order " << caller << ", lower bound " << bound);
  CHECK(lpt < caller);
  CHECK(lpt <= bound * 5 / 4);
}

TEST_CASE("the varlen plan: the head dim's and dtype's varlen kernel, one CTA per tile, misuse named") {
  const auto cu_q = prefix({1000, 0, 129, 1}), cu_k = prefix({1000, 50, 0, 4000});
  for (int64_t d : {64, 128, 256})
    for (flashptx_dtype dt : {FLASHPTX_BF16, FLASHPTX_FP16}) {
      const flashptx_fwd_varlen_params p = problem(cu_q, cu_k, 8, 2, d, dt, 1);
      flashptx::FwdVarlenPlan plan;
      std::string err;
      REQUIRE_MESSAGE(flashptx::plan_fwd_varlen(p, {}, kH200, &plan, &err) == FLASHPTX_OK, err);
      const flashptx::KernelEntry& k = *plan.launch.kernel;
      CHECK(k.family == flashptx::Family::kFa3FwdVarlen);
      CHECK(k.head_dim == d);
      CHECK(k.dtype == dt);
      CHECK(k.block_m == 128);
      CHECK_FALSE(k.persistent);
      const int64_t tiles = (8 + 0 + 2 + 1) * 8;  // query blocks of 128 rows per sequence x heads
      CHECK(plan.launch.tiles == tiles);
      CHECK(plan.launch.grid.x == static_cast<unsigned>(tiles));
      CHECK(plan.launch.schedule == flashptx::Schedule::kOnePerTile);
      CHECK(plan.args.table.num_seqs == 3);  // the empty query sequence is left out
      CHECK(plan.args.table.tile_prefix[3] == tiles);
    }
  const flashptx_fwd_varlen_params p = problem(cu_q, cu_k, 8, 2, 128, FLASHPTX_BF16, 0);
  flashptx::FwdVarlenPlan plan;
  std::string err;
  flashptx::FwdOptions o;
  o.kernel = "fa3_fwd_varlen_sm90_fp16_d128_n128";
  o.schedule = flashptx::Schedule::kOnePerTile;
  CHECK(flashptx::plan_fwd_varlen(problem(cu_q, cu_k, 8, 2, 128, FLASHPTX_FP16, 0), o, kH200, &plan, &err) ==
        FLASHPTX_OK);
  CHECK(std::string(plan.launch.kernel->name) == "fa3_fwd_varlen_sm90_fp16_d128_n128");
  struct Bad { const char* what; flashptx::FwdOptions opt; flashptx::Device dev; flashptx_status want; const char* needle; };
  flashptx::FwdOptions fixed, wrong_dtype, persistent;
  fixed.kernel = "fa3_fwd_sm90_bf16_d128_n128";
  wrong_dtype.kernel = "fa3_fwd_varlen_sm90_fp16_d128_n128";
  persistent.schedule = flashptx::Schedule::kPersistent;
  const Bad bad[] = {
      {"a fixed-length kernel", fixed, kH200, FLASHPTX_ERR_BAD_OPTION, "no varlen forward kernel named"},
      {"the other dtype", wrong_dtype, kH200, FLASHPTX_ERR_BAD_OPTION, "in this dtype"},
      {"persistent", persistent, kH200, FLASHPTX_ERR_BAD_OPTION, "one-per-tile"},
      {"sm_100", {}, flashptx::Device{0, 100, 148}, FLASHPTX_ERR_UNSUPPORTED_DEVICE, "sm_90a"},
  };
  for (const Bad& b : bad) {
    INFO(b.what);
    err.clear();
    CHECK(flashptx::plan_fwd_varlen(p, b.opt, b.dev, &plan, &err) == b.want);
    CHECK_MESSAGE(err.find(b.needle) != std::string::npos, err);
  }
}

TEST_CASE("the varlen plan at head dims 96, 192 and (192, 128): one local kernel per shape, plain or modified") {
  // One kernel per shape and dtype serves the plain varlen, causal or not, and the window and the
  // softcap (src/sm90/fa3_fwd_hdim_local.cu); V's and O's maps and strides follow head_dim_v.
  const auto cu_q = prefix({1000, 0, 129, 1}), cu_k = prefix({1000, 50, 0, 4000});
  struct D { int64_t d, dv; const char* suffix; int block_n; };
  for (const D& x : {D{96, 0, "d96", 128}, D{192, 0, "d192", 112}, D{192, 128, "d192_v128", 128}})
    for (flashptx_dtype dt : {FLASHPTX_BF16, FLASHPTX_FP16}) {
      const std::string name =
          std::string("fa3_fwd_varlen_local_sm90_") + (dt == FLASHPTX_BF16 ? "bf16_" : "fp16_") + x.suffix;
      INFO(name);
      const int64_t dv = x.dv != 0 ? x.dv : x.d;
      auto at = [&](int causal) {
        flashptx_fwd_varlen_params p = problem(cu_q, cu_k, 8, 2, x.d, dt, causal);
        p.head_dim_v = x.dv;
        p.v_row_stride = 2 * dv;
        p.v_head_stride = dv;
        p.o_row_stride = 8 * dv;
        p.o_head_stride = dv;
        return p;
      };
      flashptx_fwd_varlen_params w = at(1);
      w.window = 1;
      w.window_left = 100;
      w.window_right = 0;
      flashptx_fwd_varlen_params c = at(0);
      c.softcap = 30.f;
      for (const flashptx_fwd_varlen_params& p : {at(0), at(1), w, c}) {
        REQUIRE(flashptx_fwd_varlen_check(&p) == FLASHPTX_OK);
        flashptx::FwdVarlenPlan plan;
        std::string err;
        REQUIRE_MESSAGE(flashptx::plan_fwd_varlen(p, {}, kH200, &plan, &err) == FLASHPTX_OK, err);
        const flashptx::KernelEntry& k = *plan.launch.kernel;
        CHECK(std::string(k.name) == name);
        CHECK(k.family == flashptx::Family::kFa3FwdVarlen);
        CHECK(k.block_m == 128);
        CHECK(k.block_n == x.block_n);
        CHECK(plan.launch.schedule == flashptx::Schedule::kOnePerTile);
        CHECK(plan.launch.tiles == (8 + 0 + 2 + 1) * 8);
        // The table's window: a window is the sequence's, a causal mask is the window (-1, 0), and
        // the longest-first order is the window's (as build_varlen_table with that window).
        CHECK(plan.args.table.num_seqs == 3);
      }
      // A kernel of another shape forced here: an option error naming the dims.
      flashptx::FwdOptions o;
      o.kernel = dt == FLASHPTX_BF16 ? "fa3_fwd_varlen_local_sm90_bf16_d128" : "fa3_fwd_varlen_local_sm90_fp16_d128";
      flashptx::FwdVarlenPlan plan;
      std::string err;
      CHECK(flashptx::plan_fwd_varlen(at(0), o, kH200, &plan, &err) == FLASHPTX_ERR_BAD_OPTION);
      CHECK_MESSAGE(err.find("(head_dim, head_dim_v) = (" + std::to_string(x.d)) != std::string::npos, err);
      o.kernel = name.c_str();
      CHECK(flashptx::plan_fwd_varlen(w, o, kH200, &plan, &err) == FLASHPTX_OK);
    }
  // d128 keeps its plain varlen kernel; d192 forced onto the (192, 128) kernel is refused.
  flashptx::FwdVarlenPlan plan;
  std::string err;
  REQUIRE(flashptx::plan_fwd_varlen(problem(cu_q, cu_k, 8, 2, 128, FLASHPTX_BF16, 0), {}, kH200, &plan, &err) ==
          FLASHPTX_OK);
  CHECK(std::string(plan.launch.kernel->name).rfind("fa3_fwd_varlen_sm90_bf16_d128", 0) == 0);
  flashptx::FwdOptions o;
  o.kernel = "fa3_fwd_varlen_local_sm90_bf16_d192_v128";
  CHECK(flashptx::plan_fwd_varlen(problem(cu_q, cu_k, 8, 2, 192, FLASHPTX_BF16, 0), o, kH200, &plan, &err) ==
        FLASHPTX_ERR_BAD_OPTION);
  // V's and O's strides are checked at head_dim_v: rows of 128 columns (192, 128) pass dense, and an
  // O row stride below heads x head_dim_v overlaps.
  flashptx_fwd_varlen_params p = problem(cu_q, cu_k, 8, 2, 192, FLASHPTX_BF16, 0);
  p.head_dim_v = 128;
  p.v_row_stride = 2 * 128;
  p.v_head_stride = 128;
  p.o_row_stride = 8 * 128;
  p.o_head_stride = 128;
  CHECK(flashptx_fwd_varlen_check(&p) == FLASHPTX_OK);
  p.o_row_stride = 7 * 128;
  CHECK(flashptx_fwd_varlen_check(&p) == FLASHPTX_ERR_BAD_STRIDES);
}

// A varlen backward over placeholder pointers (never dereferenced: the checks and the plan only) and
// four sequences, 8 query heads over 2 KV heads at head_dim d, contiguous, causal, the workspace set;
// dv != 0: head_dim_v dv, V, O, dO and dV densely strided at dv columns; window: (100, 0).
flashptx_bwd_varlen_params bwd_varlen_plan_params(int64_t d, int64_t dv, flashptx_dtype dt, bool window) {
  static const auto cu_q = prefix({1000, 0, 129, 1}), cu_k = prefix({1000, 50, 0, 4000});
  alignas(256) static unsigned char ws[256];
  flashptx_bwd_varlen_params bp;
  flashptx_bwd_varlen_params_contiguous(&bp, g_fake[0], g_fake[1], g_fake[2], g_fake[3],
                                        reinterpret_cast<const float*>(g_fake[3]), g_fake[0], g_fake[1], g_fake[2],
                                        g_fake[3], cu_q.data(), cu_k.data(), 4, 8, 2, d, dt, 1);
  if (dv != 0) {
    bp.head_dim_v = dv;
    bp.v_row_stride = bp.dv_row_stride = 2 * dv;
    bp.o_row_stride = bp.do_row_stride = 8 * dv;
    bp.v_head_stride = bp.dv_head_stride = bp.o_head_stride = bp.do_head_stride = dv;
  }
  bp.workspace = ws;
  bp.workspace_bytes = int64_t(1) << 40;
  if (window) {
    bp.window = 1;
    bp.window_left = 100;
    bp.window_right = 0;
  }
  return bp;
}

// Two varlen backward plans with one launch shape: the main kernels' tiles and shared memory, the
// four launches' grids and shared memory, the workspace (the plan's and flashptx_bwd_varlen_workspace_size's).
void check_same_varlen_bwd_launches(const flashptx::BwdVarlenPlan& a, const flashptx_bwd_varlen_params& pa,
                                    const flashptx::BwdVarlenPlan& b, const flashptx_bwd_varlen_params& pb) {
  const flashptx::KernelEntry &ka = *a.main.kernel, &kb = *b.main.kernel;
  CHECK(ka.block_m == kb.block_m);
  CHECK(ka.block_n == kb.block_n);
  CHECK(ka.smem_bytes == kb.smem_bytes);
  for (auto [x, y] : {std::pair{&a.pre, &b.pre}, std::pair{&a.main, &b.main}, std::pair{&a.post_dq, &b.post_dq},
                      std::pair{&a.post_dkv, &b.post_dkv}}) {
    CHECK(x->grid.x == y->grid.x);
    CHECK(x->grid.y == y->grid.y);
    CHECK(x->smem_bytes == y->smem_bytes);
  }
  CHECK(a.workspace.total == b.workspace.total);
  int64_t bytes_a = 0, bytes_b = 0;
  REQUIRE(flashptx_bwd_varlen_workspace_size(&pa, &bytes_a) == FLASHPTX_OK);
  REQUIRE(flashptx_bwd_varlen_workspace_size(&pb, &bytes_b) == FLASHPTX_OK);
  CHECK(bytes_a == bytes_b);
}

TEST_CASE("the varlen backward plan at head dims 96 and 192: the d128 and d256 shapes with their column bound") {
  // 96 and 192 run the d96 / d192 varlen kernels (the d128 and d256 shapes, BwdConfig::real_head_dim:
  // src/sm90/fa3_bwd_varlen.cu, fa3_bwd_local.cu), plain or with a window; the workspace and the aux
  // launches are those of the kernel's head dim (the accumulators' rows are its width), the tensor
  // maps the caller's. A kernel of the other width forced here is an option error; 80 is refused.
  struct D { int64_t d, kd; const char* suffix; };
  for (const D& x : {D{96, 128, "d96"}, D{192, 256, "d192"}})
    for (flashptx_dtype dt : {FLASHPTX_BF16, FLASHPTX_FP16})
      for (bool window : {false, true}) {
        const std::string name = std::string(window ? "fa3_bwd_varlen_local_sm90_" : "fa3_bwd_varlen_sm90_") +
                                 (dt == FLASHPTX_BF16 ? "bf16_" : "fp16_") + x.suffix;
        INFO(name);
        const flashptx_bwd_varlen_params bp = bwd_varlen_plan_params(x.d, 0, dt, window),
                                         wide = bwd_varlen_plan_params(x.kd, 0, dt, window);
        REQUIRE_MESSAGE(flashptx_bwd_varlen_check(&bp) == FLASHPTX_OK, flashptx_last_error());
        flashptx::BwdVarlenPlan plan, plan_kd;
        std::string err;
        REQUIRE_MESSAGE(flashptx::plan_bwd_varlen(bp, {}, kH200, &plan, &err) == FLASHPTX_OK, err);
        REQUIRE_MESSAGE(flashptx::plan_bwd_varlen(wide, {}, kH200, &plan_kd, &err) == FLASHPTX_OK, err);
        const flashptx::KernelEntry& k = *plan.main.kernel;
        CHECK(std::string(k.name) == name);
        CHECK(k.family == flashptx::Family::kFa3BwdVarlen);
        CHECK(k.head_dim == x.d);
        int kernel_head_dim = 0;
        for (const flashptx::KernelSwitch& s : k.switches)
          if (std::string(s.name) == "kernel_head_dim") kernel_head_dim = s.value;
        CHECK(kernel_head_dim == x.kd);
        CHECK(plan.local == window);
        // The kd problem's shape, grids, shared memory and workspace.
        const flashptx::KernelEntry& kk = *plan_kd.main.kernel;
        CHECK(kk.head_dim == x.kd);
        check_same_varlen_bwd_launches(plan, bp, plan_kd, wide);
        // The kd kernel (no column bound) forced at the caller's head dim: refused.
        flashptx::BwdOptions o;
        const std::string kd_name = kk.name;
        o.kernel = kd_name.c_str();
        CHECK(flashptx::plan_bwd_varlen(bp, o, kH200, &plan, &err) == FLASHPTX_ERR_BAD_OPTION);
        CHECK_MESSAGE(err.find("for this head dim") != std::string::npos, err);
        o.kernel = name.c_str();
        CHECK(flashptx::plan_bwd_varlen(bp, o, kH200, &plan, &err) == FLASHPTX_OK);
      }
  // Head dims without a kernel: a status naming the backward's dims, nothing planned.
  for (int64_t d : {80, 32, 160}) {
    const flashptx_bwd_varlen_params bp = bwd_varlen_plan_params(d, 0, FLASHPTX_BF16, false);
    CHECK(flashptx_bwd_varlen_check(&bp) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
    const std::string msg = flashptx_last_error();
    CHECK_MESSAGE(msg.find("head_dim " + std::to_string(d) + " is not one of the backward's 64, 96, 128, 192, 256") !=
                      std::string::npos,
                  msg);
    int64_t bytes = 0;
    CHECK(flashptx_bwd_varlen_workspace_size(&bp, &bytes) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
  }
}

TEST_CASE("the varlen backward plan at (192, 128): the d192_v128 kernels, the d256 shape, V's maps at 128 columns") {
  // (head_dim, head_dim_v) = (192, 128) runs fa3_bwd_varlen(_local)_sm90_*_d192_v128 (the d256 shape,
  // BwdConfig::real_head_dim 192, real_head_dim_v 128: src/sm90/fa3_bwd_varlen.cu, fa3_bwd_local.cu),
  // with the (192, 192) problem's grids, shared memory and workspace; the d192 kernel forced at
  // (192, 128) and the d192_v128 one at (192, 192) are option errors; V's, O's, dO's and dV's strides
  // are checked at 128 columns; (192, 64) and (128, 64) are refused naming the pair.
  for (flashptx_dtype dt : {FLASHPTX_BF16, FLASHPTX_FP16})
    for (bool window : {false, true}) {
      const std::string name = std::string(window ? "fa3_bwd_varlen_local_sm90_" : "fa3_bwd_varlen_sm90_") +
                               (dt == FLASHPTX_BF16 ? "bf16_" : "fp16_") + "d192_v128";
      INFO(name);
      const flashptx_bwd_varlen_params bp = bwd_varlen_plan_params(192, 128, dt, window),
                                       square = bwd_varlen_plan_params(192, 0, dt, window);
      REQUIRE_MESSAGE(flashptx_bwd_varlen_check(&bp) == FLASHPTX_OK, flashptx_last_error());
      flashptx::BwdVarlenPlan plan, plan_sq;
      std::string err;
      REQUIRE_MESSAGE(flashptx::plan_bwd_varlen(bp, {}, kH200, &plan, &err) == FLASHPTX_OK, err);
      REQUIRE_MESSAGE(flashptx::plan_bwd_varlen(square, {}, kH200, &plan_sq, &err) == FLASHPTX_OK, err);
      const flashptx::KernelEntry& k = *plan.main.kernel;
      CHECK(std::string(k.name) == name);
      CHECK(k.family == flashptx::Family::kFa3BwdVarlen);
      CHECK(k.head_dim == 192);
      CHECK(k.head_dim_v == 128);
      int kernel_head_dim = 0;
      for (const flashptx::KernelSwitch& s : k.switches)
        if (std::string(s.name) == "kernel_head_dim") kernel_head_dim = s.value;
      CHECK(kernel_head_dim == 256);
      CHECK(plan.local == window);
      const flashptx::KernelEntry& ks = *plan_sq.main.kernel;
      CHECK(std::string(ks.name) == name.substr(0, name.size() - 5));  // the d192 kernel
      CHECK(ks.head_dim_v == 0);
      check_same_varlen_bwd_launches(plan, bp, plan_sq, square);
      // Each kernel forced at the other pair: refused, naming V's head dim.
      flashptx::BwdOptions o;
      const std::string sq_name = ks.name;
      o.kernel = sq_name.c_str();
      CHECK(flashptx::plan_bwd_varlen(bp, o, kH200, &plan, &err) == FLASHPTX_ERR_BAD_OPTION);
      CHECK_MESSAGE(err.find("V's head dim") != std::string::npos, err);
      o.kernel = name.c_str();
      CHECK(flashptx::plan_bwd_varlen(square, o, kH200, &plan, &err) == FLASHPTX_ERR_BAD_OPTION);
      CHECK(flashptx::plan_bwd_varlen(bp, o, kH200, &plan, &err) == FLASHPTX_OK);
    }
  // V's strides at 128 columns: a dV row stride below heads_kv x 128 overlaps.
  flashptx_bwd_varlen_params bp = bwd_varlen_plan_params(192, 128, FLASHPTX_BF16, false);
  bp.dv_row_stride = 2 * 128 - 8;
  CHECK(flashptx_bwd_varlen_check(&bp) == FLASHPTX_ERR_BAD_STRIDES);
  // Pairs without a kernel: a status naming the pair, nothing planned.
  for (auto [d, dv] : {std::pair<int64_t, int64_t>{192, 64}, {128, 64}, {256, 128}}) {
    flashptx_bwd_varlen_params x = bwd_varlen_plan_params(192, dv, FLASHPTX_BF16, false);
    x.head_dim = d;
    CHECK(flashptx_bwd_varlen_check(&x) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
    const std::string msg = flashptx_last_error();
    CHECK_MESSAGE(msg.find("(head_dim, head_dim_v) = (" + std::to_string(d) + ", " + std::to_string(dv) + ")") !=
                      std::string::npos,
                  msg);
    int64_t bytes = 0;
    CHECK(flashptx_bwd_varlen_workspace_size(&x, &bytes) == FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM);
  }
}

TEST_CASE("seqused: the tables give each sequence its used lengths at its cu_seqlens offsets") {
  // Lengths from cu_seqlens, used lengths inside them: 0 with rows, equal, partial, one row; the
  // forward's schedule is the model's over the used lengths (a sequence with no used query row has no
  // tile), the backward's table holds every sequence with a used row or key.
  const std::vector<int> lq = {70, 600, 9, 64, 300, 0, 1000}, lk = {100, 650, 0, 64, 700, 20, 900};
  const std::vector<int> uq = {33, 600, 0, 1, 300, 0, 517}, uk = {65, 7, 0, 64, 0, 20, 129};
  const auto cu_q = prefix(lq), cu_k = prefix(lk);
  const std::vector<int32_t> used_q(uq.begin(), uq.end()), used_k(uk.begin(), uk.end());
  const int n = static_cast<int>(lq.size());
  for (bool causal : {false, true}) {
    INFO("causal=" << causal);
    flashptx::fa3::FwdVarlenTable t{};
    flashptx::build_varlen_table(cu_q.data(), cu_k.data(), n, 3, 128, 128, causal, &t, nullptr, used_q.data(),
                                 used_k.data());
    const auto got = decoded_order(t, cu_q, 3, causal);
    const auto want = model_order(uq, uk, 3, 128, 128, causal);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("tile " << i);
      CHECK(got[i].seq == want[i].seq);
      CHECK(got[i].m_block == want[i].m_block);
      CHECK(got[i].head == want[i].head);
    }
    CHECK(t.num_seqs == 5);  // sequences 2 (used 0 of 9) and 5 (no rows) have no tile
    for (int s = 0; s < t.num_seqs; ++s) {
      int b = 0;
      while (!(cu_q[b] == t.seq[s].q_start && lq[b] > 0)) ++b;
      CHECK(t.seq[s].len_q == uq[b]);
      CHECK(t.seq[s].k_start == cu_k[b]);
      CHECK(t.seq[s].len_k == uk[b]);
    }
  }
  flashptx::fa3::BwdVarlenTable bt{};
  flashptx::build_bwd_varlen_table(cu_q.data(), cu_k.data(), n, 64, 128, &bt, used_q.data(), used_k.data());
  CHECK(bt.num_seqs == 6);  // sequence 2 uses no row and no key
  int m = 0, nb = 0;
  for (int b = 0; b < n; ++b) {
    m += (uq[b] + 63) / 64;
    nb += (uk[b] + 127) / 128;
  }
  CHECK(bt.m_prefix[bt.num_seqs] == m);
  CHECK(bt.n_prefix[bt.num_seqs] == nb);
  for (int s = 0; s < bt.num_seqs; ++s) {
    int b = 0;
    while (!(cu_q[b] == bt.seq[s].q_start && cu_k[b] == bt.seq[s].k_start && (uq[b] > 0 || uk[b] > 0))) ++b;
    CHECK(bt.seq[s].len_q == uq[b]);
    CHECK(bt.seq[s].len_k == uk[b]);
  }
  // The plan sizes its launch by the used lengths: tiles = used query blocks x heads.
  flashptx_fwd_varlen_params p = problem(cu_q, cu_k, 8, 2, 128, FLASHPTX_BF16, 1);
  p.seqused_q = used_q.data();
  p.seqused_k = used_k.data();
  REQUIRE(flashptx_fwd_varlen_check(&p) == FLASHPTX_OK);
  flashptx::FwdVarlenPlan plan;
  std::string err;
  REQUIRE_MESSAGE(flashptx::plan_fwd_varlen(p, {}, kH200, &plan, &err) == FLASHPTX_OK, err);
  CHECK(plan.launch.tiles == (1 + 5 + 0 + 1 + 3 + 0 + 5) * 8);
  // Every used query length 0: no tile; the launching call is a no-op before it looks for a device
  // only when nothing has rows, so here the plan says 0 tiles (src/api.cpp launches nothing then).
  const std::vector<int32_t> none(lq.size(), 0);
  p.seqused_q = none.data();
  REQUIRE(flashptx_fwd_varlen_check(&p) == FLASHPTX_OK);
  REQUIRE_MESSAGE(flashptx::plan_fwd_varlen(p, {}, kH200, &plan, &err) == FLASHPTX_OK, err);
  CHECK(plan.launch.tiles == 0);
}

TEST_CASE("seqused: a used length below 0 or above its sequence's is FLASHPTX_ERR_BAD_SHAPE naming the entry") {
  const std::vector<int> lq = {100, 0, 37, 300}, lk = {120, 5, 0, 300};
  const auto cu_q = prefix(lq), cu_k = prefix(lk);
  struct Bad { std::vector<int32_t> uq, uk; const char* needle; };
  const Bad bad[] = {
      {{100, 1, 0, 0}, {}, "seqused_q[1] is 1, above sequence 1's length 0 in cu_seqlens_q"},
      {{101, 0, 0, 0}, {}, "seqused_q[0] is 101, above sequence 0's length 100"},
      {{0, 0, -1, 0}, {}, "seqused_q[2] is -1: a used length must be 0 or more"},
      {{}, {120, 5, 1, 300}, "seqused_k[2] is 1, above sequence 2's length 0 in cu_seqlens_k"},
      {{}, {0, 0, 0, -300}, "seqused_k[3] is -300"},
      {{100, 0, 37, 300}, {121, 0, 0, 0}, "seqused_k[0] is 121"},
  };
  alignas(256) static unsigned char ws[256];
  for (const Bad& b : bad) {
    INFO(b.needle);
    flashptx_fwd_varlen_params p = problem(cu_q, cu_k, 8, 2, 128, FLASHPTX_BF16, 1);
    p.seqused_q = b.uq.empty() ? nullptr : b.uq.data();
    p.seqused_k = b.uk.empty() ? nullptr : b.uk.data();
    CHECK(flashptx_fwd_varlen_check(&p) == FLASHPTX_ERR_BAD_SHAPE);
    std::string msg = flashptx_last_error();
    CHECK_MESSAGE(msg.find("FLASHPTX_ERR_BAD_SHAPE") == 0, msg);
    CHECK_MESSAGE(msg.find(b.needle) != std::string::npos, msg);
    const flashptx::Launch before = flashptx::last_launch();
    CHECK(flashptx_fwd_varlen(&p, nullptr) == FLASHPTX_ERR_BAD_SHAPE);
    CHECK(flashptx::last_launch().kernel == before.kernel);
    flashptx_kernel_info info{};
    CHECK(flashptx_fwd_varlen_kernel_info(&p, &info) == FLASHPTX_ERR_BAD_SHAPE);
    // The backward, over the same arrays (its own check: after the prefix sums, before any launch).
    flashptx_bwd_varlen_params bp;
    flashptx_bwd_varlen_params_contiguous(&bp, g_fake[0], g_fake[1], g_fake[2], g_fake[3],
                                          reinterpret_cast<const float*>(g_fake[3]), g_fake[0], g_fake[1], g_fake[2],
                                          g_fake[3], cu_q.data(), cu_k.data(), 4, 8, 2, 128, FLASHPTX_BF16, 1);
    bp.workspace = ws;
    bp.workspace_bytes = int64_t(1) << 40;
    CHECK_MESSAGE(flashptx_bwd_varlen_check(&bp) == FLASHPTX_OK, flashptx_last_error());
    bp.seqused_q = p.seqused_q;
    bp.seqused_k = p.seqused_k;
    CHECK(flashptx_bwd_varlen_check(&bp) == FLASHPTX_ERR_BAD_SHAPE);
    msg = flashptx_last_error();
    CHECK_MESSAGE(msg.find(b.needle) != std::string::npos, msg);
    CHECK(flashptx_bwd_varlen(&bp, nullptr) == FLASHPTX_ERR_BAD_SHAPE);
  }
  // Valid: 0, partial and full used lengths; either array alone.
  const std::vector<int32_t> uq = {0, 0, 37, 299}, uk = {120, 1, 0, 0};
  flashptx_fwd_varlen_params p = problem(cu_q, cu_k, 8, 2, 128, FLASHPTX_BF16, 1);
  p.seqused_q = uq.data();
  CHECK(flashptx_fwd_varlen_check(&p) == FLASHPTX_OK);
  p.seqused_k = uk.data();
  CHECK(flashptx_fwd_varlen_check(&p) == FLASHPTX_OK);
  p.seqused_q = nullptr;
  CHECK(flashptx_fwd_varlen_check(&p) == FLASHPTX_OK);
}

}  // TEST_SUITE
