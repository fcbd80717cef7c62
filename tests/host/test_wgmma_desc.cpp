// The wgmma shared-memory matrix descriptor (ptx/wgmma.cuh: make_smem_desc, smem_desc_advance)
// against values computed by hand from the PTX ISA's "Matrix Descriptor Format" of wgmma
// ("Asynchronous Warpgroup Level Matrix Shared Memory Layout"): a 64-bit value with
//   bits  0-13  matrix start address,           encoded (addr & 0x3FFFF) >> 4
//   bits 16-29  leading-dimension byte offset,  encoded (LBO  & 0x3FFFF) >> 4
//   bits 32-45  stride-dimension byte offset,   encoded (SBO  & 0x3FFFF) >> 4
//   bits 49-51  matrix base offset (0 for a pattern-aligned start)
//   bits 62-63  swizzle: 0 none (interleave), 1 128B, 2 64B, 3 32B
// and every other bit 0. The arithmetic for each literal is written beside it. The descriptors the
// FA3 forward builds (src/sm90/fa3_fwd.cuh) are spelled out for a carve-up based at 0x400.
//
// Second suite: ptx/wgmma_mma.cuh is exactly what its generator (tools/support/wgmma_gen.cpp)
// writes, i.e. `make regen-wgmma` is a no-op on a clean tree.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ptx/wgmma.cuh"  // a host compiler sees the descriptor builders only
#include "tools/support/wgmma_gen.h"

namespace ptx = flashptx::ptx;
using ptx::Swizzle;

namespace {

// The fields of a descriptor, read back by the ISA's bit positions (not by the builder's code).
struct Fields {
  uint32_t start, lbo, sbo, base_offset, swizzle;
};
Fields fields(uint64_t d) {
  return Fields{static_cast<uint32_t>(d & 0x3FFF), static_cast<uint32_t>((d >> 16) & 0x3FFF),
                static_cast<uint32_t>((d >> 32) & 0x3FFF), static_cast<uint32_t>((d >> 49) & 0x7),
                static_cast<uint32_t>(d >> 62)};
}

// Bits the format defines: 0x3FFF | 0x3FFF << 16 | 0x3FFF << 32 | 7 << 49 | 3 << 62.
constexpr uint64_t kDefinedBits = 0xC00E'3FFF'3FFF'3FFFull;

// The FA3 forward's carve-up (Config<HeadDim, BlockN, Stages, ConsumerWGs, ...>): tiles of
// rows x 128 B per 64-column chunk, all 1024-aligned, from a base the kernel aligns to 1024.
constexpr uint32_t kBase = 0x400;

}  // namespace

TEST_SUITE("host ptx wgmma descriptor") {

TEST_CASE("each field lands in its bit range, and nothing else is set") {
  // Start address alone, the largest encodable: (0x3FFF0 & 0x3FFFF) >> 4 = 0x3FFF in bits 0-13.
  CHECK(ptx::make_smem_desc(0x3FFF0, 0, 0, Swizzle::kNone) == 0x0000'0000'0000'3FFFull);
  // LBO alone: 0x3FFF << 16.
  CHECK(ptx::make_smem_desc(0, 0x3FFF0, 0, Swizzle::kNone) == 0x0000'0000'3FFF'0000ull);
  // SBO alone: 0x3FFF << 32.
  CHECK(ptx::make_smem_desc(0, 0, 0x3FFF0, Swizzle::kNone) == 0x0000'3FFF'0000'0000ull);
  // Swizzle alone: 1 << 62 (128B), 2 << 62 (64B), 3 << 62 (32B); 0 (none) sets nothing.
  CHECK(ptx::make_smem_desc(0, 0, 0, Swizzle::k128B) == 0x4000'0000'0000'0000ull);
  CHECK(ptx::make_smem_desc(0, 0, 0, Swizzle::k64B) == 0x8000'0000'0000'0000ull);
  CHECK(ptx::make_smem_desc(0, 0, 0, Swizzle::k32B) == 0xC000'0000'0000'0000ull);
  CHECK(ptx::make_smem_desc(0, 0, 0, Swizzle::kNone) == 0ull);
  // All at once: 3 << 62 | 0x3FFF << 32 | 0x3FFF << 16 | 0x3FFF. Base offset (bits 49-51) stays 0
  // and no reserved bit (14-15, 30-31, 46-48, 52-61) is set.
  const uint64_t all = ptx::make_smem_desc(0x3FFF0, 0x3FFF0, 0x3FFF0, Swizzle::k32B);
  CHECK(all == 0xC000'3FFF'3FFF'3FFFull);
  CHECK((all & ~kDefinedBits) == 0);
  CHECK(fields(all).base_offset == 0);
  // The builders are constexpr: a kernel's descriptors of constant addresses fold to immediates.
  static_assert(ptx::make_smem_desc(0x400, 16, 1024, Swizzle::k128B) == 0x4000'0040'0001'0040ull);
  static_assert(ptx::smem_desc_advance(0x4000'0040'0001'0040ull, 32) == 0x4000'0040'0001'0042ull);
}

TEST_CASE("edge cases: address bits 18 and up are masked, the low 4 bits of every field dropped") {
  const uint64_t q = ptx::make_smem_desc(0x2400, 0, 1024, Swizzle::k128B);
  // 0x42400: bit 18 is outside the 18-bit shared address the field encodes: same as 0x2400.
  CHECK(ptx::make_smem_desc(0x40000 + 0x2400, 0, 1024, Swizzle::k128B) == q);
  // 0xFFFFFFF0 & 0x3FFFF = 0x3FFF0 -> 0x3FFF; nothing spills into bit 14 or above.
  CHECK(ptx::make_smem_desc(0xFFFF'FFF0u, 0, 0, Swizzle::kNone) == 0x3FFFull);
  // 0x240F >> 4 = 0x240: an address is taken in 16-byte units, rounded down.
  CHECK(fields(ptx::make_smem_desc(0x240F, 0, 0, Swizzle::kNone)).start == 0x240);
  // LBO 1023 -> 1023 >> 4 = 63 (0x3F): rounded down, not up; LBO 1024 -> 0x40.
  CHECK(ptx::make_smem_desc(0, 1023, 0, Swizzle::kNone) == 0x0000'0000'003F'0000ull);
  CHECK(ptx::make_smem_desc(0, 1024, 0, Swizzle::kNone) == 0x0000'0000'0040'0000ull);
  // LBO 0x40010: bit 18 masked, 0x10 >> 4 = 1 -> 1 << 16.
  CHECK(ptx::make_smem_desc(0, 0x40010, 0, Swizzle::kNone) == 0x0000'0000'0001'0000ull);
  // SBO 1039 -> 64 (0x40), 1040 -> 65 (0x41), in bits 32-45.
  CHECK(ptx::make_smem_desc(0, 0, 1039, Swizzle::kNone) == 0x0000'0040'0000'0000ull);
  CHECK(ptx::make_smem_desc(0, 0, 1040, Swizzle::kNone) == 0x0000'0041'0000'0000ull);
  // SBO 0x7FFF0: bit 18 masked -> 0x3FFF0 >> 4 = 0x3FFF.
  CHECK(ptx::make_smem_desc(0, 0, 0x7FFF0, Swizzle::kNone) == 0x0000'3FFF'0000'0000ull);
}

TEST_CASE("smem_desc_advance adds bytes >> 4 to the start address and touches nothing else") {
  const uint64_t d = ptx::make_smem_desc(0x8400, 16384, 1024, Swizzle::k128B);
  // 1 << 62 | (1024 >> 4 = 0x40) << 32 | (16384 >> 4 = 0x400) << 16 | 0x8400 >> 4 = 0x840.
  CHECK(d == 0x4000'0040'0400'0840ull);
  // +32 B = +2 in the start field.
  CHECK(ptx::smem_desc_advance(d, 32) == 0x4000'0040'0400'0842ull);
  // +40 B: 40 >> 4 = 2, the remainder of a 16-byte unit is dropped like the builder's.
  CHECK(ptx::smem_desc_advance(d, 40) == ptx::smem_desc_advance(d, 32));
  // Advancing equals building at the advanced address, for any multiple of 16 that keeps the
  // address inside the 18-bit window.
  for (uint32_t off = 0; off < 0x10000; off += 0x430)
    CHECK(ptx::smem_desc_advance(d, off) == ptx::make_smem_desc(0x8400 + off, 16384, 1024, Swizzle::k128B));
  // It is a plain addition: a start field that overflows carries into reserved bit 14 instead of
  // wrapping (0x3FFF + 1 = 0x4000). Callers keep start + offset below 256 KiB, which every shared
  // address of a CTA is (228 KiB at most on sm_90).
  CHECK(ptx::smem_desc_advance(ptx::make_smem_desc(0x3FFF0, 0, 0, Swizzle::kNone), 16) == 0x4000ull);
}

TEST_CASE("FA3 forward d128 (Config<128, 128, 2, 2>): Q and K, K-major, 128B swizzle, SBO 1024") {
  // kBlockM = 128; Q tile 128 x 128 x 2 B = 32768 at base + 0; K stages of 128 x 128 x 2 = 32768
  // from base + 32768. LBO 0 (unused for a swizzled K-major operand), SBO 1024 = 8 rows x 128 B.
  constexpr uint32_t sQ = kBase, sK = kBase + 32768;
  // Q rows of warpgroup 0: start 0x400 >> 4 = 0x040; 1 << 62 | 0x40 << 32.
  const uint64_t q0 = ptx::make_smem_desc(sQ + 64 * 0 * 128, 0, 1024, Swizzle::k128B);
  CHECK(q0 == 0x4000'0040'0000'0040ull);
  // Warpgroup 1: start 0x400 + 64 * 128 = 0x2400 -> 0x240.
  const uint64_t q1 = ptx::make_smem_desc(sQ + 64 * 1 * 128, 0, 1024, Swizzle::k128B);
  CHECK(q1 == 0x4000'0040'0000'0240ull);
  const Fields f = fields(q1);
  CHECK(f.start == 0x240);
  CHECK(f.lbo == 0);
  CHECK(f.sbo == 1024 / 16);
  CHECK(f.base_offset == 0);
  CHECK(f.swizzle == 1);
  // K stage 0: 0x8400 -> 0x840; stage 1: 0x8400 + 0x8000 = 0x10400 -> 0x1040.
  const uint64_t k0 = ptx::make_smem_desc(sK + 0 * 32768, 0, 1024, Swizzle::k128B);
  const uint64_t k1 = ptx::make_smem_desc(sK + 1 * 32768, 0, 1024, Swizzle::k128B);
  CHECK(k0 == 0x4000'0040'0000'0840ull);
  CHECK(k1 == 0x4000'0040'0000'1040ull);
  // The k-loop (kD / 16 = 8 steps): (k / 4) * rows * 128 selects the 64-column chunk, (k % 4) * 32
  // the k16 slice inside the 128-byte swizzle row (+32 B = +2 in the start field).
  // Q (rows = kBlockM = 128): k = 0..3 -> +0, +2, +4, +6; k = 4..7 -> +0x400 + 0, 2, 4, 6.
  const uint64_t q1_steps[8] = {0x4000'0040'0000'0240ull, 0x4000'0040'0000'0242ull, 0x4000'0040'0000'0244ull,
                                0x4000'0040'0000'0246ull, 0x4000'0040'0000'0640ull, 0x4000'0040'0000'0642ull,
                                0x4000'0040'0000'0644ull, 0x4000'0040'0000'0646ull};
  // K stage 1 (rows = kBlockN = 128): 0x1040 + the same steps.
  const uint64_t k1_steps[8] = {0x4000'0040'0000'1040ull, 0x4000'0040'0000'1042ull, 0x4000'0040'0000'1044ull,
                                0x4000'0040'0000'1046ull, 0x4000'0040'0000'1440ull, 0x4000'0040'0000'1442ull,
                                0x4000'0040'0000'1444ull, 0x4000'0040'0000'1446ull};
  for (int k = 0; k < 8; ++k) {
    const uint32_t a_off = (k / 4) * 128 * 128 + (k % 4) * 32;
    const uint32_t b_off = (k / 4) * 128 * 128 + (k % 4) * 32;
    CAPTURE(k);
    CHECK(ptx::smem_desc_advance(q1, a_off) == q1_steps[k]);
    CHECK(ptx::smem_desc_advance(k1, b_off) == k1_steps[k]);
  }
}

TEST_CASE("FA3 forward d128 (Config<128, 128, 2, 2>): V, MN-major, LBO kBlockN * 128, SBO 1024") {
  // V stages from base + 32768 + 2 * 32768 = base + 98304 (0x18000). For O += P V the keys are K
  // and d is N: LBO = kBlockN * 128 = 16384 between 64-column chunks of d, SBO = 1024 between
  // 8-key groups.
  constexpr uint32_t sV = kBase + 98304;
  // Stage 0: start 0x18400 >> 4 = 0x1840; LBO 16384 >> 4 = 0x400 in bits 16-29; SBO 0x40 << 32.
  const uint64_t v0 = ptx::make_smem_desc(sV, 128 * 128, 1024, Swizzle::k128B);
  CHECK(v0 == 0x4000'0040'0400'1840ull);
  // Stage 1: 0x18400 + 0x8000 = 0x20400 -> 0x2040.
  CHECK(ptx::make_smem_desc(sV + 32768, 128 * 128, 1024, Swizzle::k128B) == 0x4000'0040'0400'2040ull);
  // The k-loop over keys (kBlockN / 16 = 8 steps): k * 16 rows * 128 B = +2048 B = +0x80 each.
  for (uint32_t k = 0; k < 8; ++k) {
    CAPTURE(k);
    CHECK(ptx::smem_desc_advance(v0, k * 16 * 128) == 0x4000'0040'0400'1840ull + k * 0x80);
  }
  // The last step, k = 7: 0x1840 + 7 * 0x80 = 0x1BC0.
  CHECK(ptx::smem_desc_advance(v0, 7 * 2048) == 0x4000'0040'0400'1BC0ull);
}

TEST_CASE("FA3 forward d256 (Config<256, 80, 2, 2>) and d64 (Config<64, 128, 3, 3>)") {
  // d256: Q 128 x 256 x 2 = 65536; K/V stages of 80 x 256 x 2 = 40960. kBlockN = 80.
  constexpr uint32_t sK = kBase + 65536, sV = kBase + 65536 + 2 * 40960;
  // V stage 0: 0x400 + 0x24000 = 0x24400 -> 0x2440; LBO 80 * 128 = 10240 -> 0x280 << 16.
  const uint64_t v0 = ptx::make_smem_desc(sV, 80 * 128, 1024, Swizzle::k128B);
  CHECK(v0 == 0x4000'0040'0280'2440ull);
  // K stage 1: 0x400 + 0x10000 + 0xA000 = 0x1A400 -> 0x1A40. Its last QK step, k = 15:
  // (15 / 4) * 80 * 128 + (15 % 4) * 32 = 30720 + 96 = 0x7860 -> +0x786: 0x21C6.
  const uint64_t k1 = ptx::make_smem_desc(sK + 40960, 0, 1024, Swizzle::k128B);
  CHECK(k1 == 0x4000'0040'0000'1A40ull);
  CHECK(ptx::smem_desc_advance(k1, 3 * 80 * 128 + 3 * 32) == 0x4000'0040'0000'21C6ull);
  // d64 with three consumer warpgroups (kBlockM = 192): Q of warpgroup 2 at 0x400 + 2 * 64 * 128
  // = 0x4400 -> 0x440; one 64-column chunk, so the four k-steps are +0, +2, +4, +6.
  const uint64_t q2 = ptx::make_smem_desc(kBase + 2 * 64 * 128, 0, 1024, Swizzle::k128B);
  CHECK(q2 == 0x4000'0040'0000'0440ull);
  CHECK(ptx::smem_desc_advance(q2, 3 * 32) == 0x4000'0040'0000'0446ull);
}

TEST_CASE("the primitive test kernels' descriptors (tests/kernels/prim_wgmma.cu)") {
  // K-major with LBO 16 (unused; 16 >> 4 = 1 << 16) and SBO 1024, tile at 0x400.
  CHECK(ptx::make_smem_desc(0x400, 16, 1024, Swizzle::k128B) == 0x4000'0040'0001'0040ull);
  // MN-major B in 64-column chunks of 64 x 128 B = 8192 (0x2000 >> 4 = 0x200 << 16), at 0x2400;
  // a k16 step is +2048 B = +0x80.
  const uint64_t b = ptx::make_smem_desc(0x2400, 8192, 1024, Swizzle::k128B);
  CHECK(b == 0x4000'0040'0200'0240ull);
  CHECK(ptx::smem_desc_advance(b, 16 * 128 * 3) == 0x4000'0040'0200'03C0ull);
}

}  // TEST_SUITE

// ---- the generated header ------------------------------------------------------------------------

namespace {

std::string committed_header_path() { return std::string(FLASHPTX_ROOT) + "/" + flashptx::gen::kWgmmaMmaHeader; }

// Decided once, before the run: the comparison needs the source tree this binary was built from.
// Run from a copy of the binaries without it, the case is skipped (counted as skipped by
// tests/main.cpp's listener), and the reason is printed like the runner's own skip lines.
bool source_tree_missing() {
  static const bool missing = [] {
    std::error_code ec;
    const bool m = !std::filesystem::is_regular_file(committed_header_path(), ec);
    if (m)
      std::printf("flashptx run_tests: skipping the ptx/wgmma_mma.cuh regeneration test: %s not found "
                  "(run outside the source tree it was built from)\n",
                  committed_header_path().c_str());
    return m;
  }();
  return missing;
}

// Where a and b first differ: line and column (1-based), and both lines around that column.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream ia(a), ib(b);
  std::string la, lb;
  for (int n = 1;; ++n) {
    const bool ga = static_cast<bool>(std::getline(ia, la)), gb = static_cast<bool>(std::getline(ib, lb));
    if (!ga && !gb) return "the end (no line differs; the final newline does)";
    if (ga == gb && la == lb) continue;
    size_t col = 0;
    while (col < la.size() && col < lb.size() && la[col] == lb[col]) ++col;
    const size_t from = col > 60 ? col - 60 : 0;
    auto excerpt = [&](bool got, const std::string& l) {
      return got ? std::string("[") + l.substr(from, 120) + "]" : std::string("<end of file>");
    };
    return "line " + std::to_string(n) + ", column " + std::to_string(col + 1) + " (excerpts from column " +
           std::to_string(from + 1) + "):\n  committed: " + excerpt(ga, la) + "\n  generated: " + excerpt(gb, lb);
  }
}

}  // namespace

TEST_SUITE("host ptx wgmma generated header") {

TEST_CASE("the generator's arms follow the PTX operand order of wgmma.mma_async") {
  const std::string h = flashptx::gen::wgmma_mma_header();
  // m64n128k16, A in shared memory: d = %0..%63, a-desc %64, b-desc %65, scale-d %66 (as predicate
  // p), imm-scale-a 1, imm-scale-b 1, imm-trans-a %67, imm-trans-b %68.
  CHECK(h.find("setp.ne.b32 p, %66, 0;\\n\"\n"
               "                 \"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 \"\n"
               "                 \"{%0, %1, ") != std::string::npos);
  CHECK(h.find("%62, %63}, \"\n                 \"%64, %65, p, 1, 1, %67, %68;\\n}\\n\"") != std::string::npos);
  // A in registers: a = {%64..%67}, b-desc %68, scale-d %69, imm-trans-b %70 (no imm-trans-a).
  CHECK(h.find("\"{%64, %65, %66, %67}, %68, p, 1, 1, %70;\\n}\\n\"") != std::string::npos);
  // FP8 (m64nNk32): no transpose immediates at all.
  CHECK(h.find("m64n256k32.f32.e5m2.e4m3") != std::string::npos);
  CHECK(h.find("\"%128, %129, p, 1, 1;\\n}\\n\"") != std::string::npos);
  // The 16-bit forms have every N the ISA allows for m64nNk16: 8..256 in steps of 8.
  for (int n = 8; n <= 256; n += 8)
    for (const char* types : {".f32.bf16.bf16 ", ".f32.f16.f16 "}) {
      const std::string mnemonic = "wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k16" + types;
      CAPTURE(mnemonic);
      CHECK(h.find(mnemonic) != std::string::npos);
    }
  // Every function the kernels and tests call is there, with its signature.
  for (const char* sig :
       {"template <int N, int TransA, int TransB>\n__device__ __forceinline__ void wgmma_m64k16_f32_bf16_ss(",
        "template <int N, int TransB>\n__device__ __forceinline__ void wgmma_m64k16_f32_bf16_rs(",
        "template <int N, int TransA, int TransB>\n__device__ __forceinline__ void wgmma_m64k16_f32_f16_ss(",
        "template <int N, int TransB>\n__device__ __forceinline__ void wgmma_m64k16_f32_f16_rs(",
        "template <int N, int TypeA, int TypeB>\n__device__ __forceinline__ void wgmma_m64k32_f32_fp8_ss(",
        "template <int N, int TypeA, int TypeB>\n__device__ __forceinline__ void wgmma_m64k32_f32_fp8_rs("}) {
    CAPTURE(sig);
    CHECK(h.find(sig) != std::string::npos);
  }
}

TEST_CASE("ptx/wgmma_mma.cuh is what make regen-wgmma writes" * doctest::skip(source_tree_missing())) {
  std::ifstream in(committed_header_path(), std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot read " << committed_header_path());
  std::ostringstream committed;
  committed << in.rdbuf();
  const std::string generated = flashptx::gen::wgmma_mma_header();
  INFO("ptx/wgmma_mma.cuh differs from tools/support/wgmma_gen.cpp's output at "
       << first_difference(committed.str(), generated)
       << "\nEdit the generator, never the header, then run make regen-wgmma.");
  const bool identical = committed.str() == generated;  // not CHECK(a == b): doctest would print both
  CHECK(identical);
}

}  // TEST_SUITE
