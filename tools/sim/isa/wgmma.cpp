// ptxsim ISA semantics: wgmma.mma_async (see wgmma.h).
#include "tools/sim/isa/wgmma.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "tools/sim/isa/numeric.h"

namespace ptxsim::isa {

// ---- matrix descriptor ------------------------------------------------------------------------
MatrixDesc matrix_desc_decode(uint64_t desc) {
  MatrixDesc m;
  m.start_addr = uint32_t(desc & 0x3fff) << 4;
  m.lbo = uint32_t((desc >> 16) & 0x3fff) << 4;
  m.sbo = uint32_t((desc >> 32) & 0x3fff) << 4;
  m.base_offset = uint32_t((desc >> 49) & 0x7);
  switch (desc >> 62) {
    case 0: m.swizzle = Swizzle::none; break;
    case 1: m.swizzle = Swizzle::b128; break;
    case 2: m.swizzle = Swizzle::b64; break;
    default: m.swizzle = Swizzle::b32; break;
  }
  return m;
}

uint64_t matrix_desc_encode(const MatrixDesc& m) {
  auto enc = [](uint32_t x) { return uint64_t((x & 0x3ffff) >> 4); };
  uint64_t mode = 0;
  switch (m.swizzle) {
    case Swizzle::none: mode = 0; break;
    case Swizzle::b128: mode = 1; break;
    case Swizzle::b64: mode = 2; break;
    case Swizzle::b32: mode = 3; break;
  }
  return enc(m.start_addr) | (enc(m.lbo) << 16) | (enc(m.sbo) << 32) | (uint64_t(m.base_offset & 7) << 49) |
         (mode << 62);
}

uint32_t mma_type_bytes(MmaType t) {
  switch (t) {
    case MmaType::f16: case MmaType::bf16: return 2;
    case MmaType::e4m3: case MmaType::e5m2: return 1;
    case MmaType::tf32: return 4;
  }
  return 2;
}
uint32_t mma_k(MmaType t) { return 32 / mma_type_bytes(t); }

// ISA reading: a .tf32 operand is read as the f32 bit pattern with its 13 low fraction bits ignored.
float mma_elem_to_f32(MmaType t, uint32_t bits) {
  switch (t) {
    case MmaType::f16: return f16_to_f32(uint16_t(bits));
    case MmaType::bf16: return bf16_to_f32(uint16_t(bits));
    case MmaType::e4m3: return e4m3_to_f32(uint8_t(bits));
    case MmaType::e5m2: return e5m2_to_f32(uint8_t(bits));
    case MmaType::tf32: return f32_from_bits(bits & 0xffffe000u);
  }
  return 0;
}

// ---- canonical layouts ------------------------------------------------------------------------
// ISA reading: the base offset is taken as the row phase of the pattern's start, so the XOR uses
// (address bits [7,10) - base_offset); with base_offset 0 this is the plain address-bit XOR.
uint32_t canonical_address(const MatrixDesc& m, Major major, uint32_t elem_bytes, uint32_t mn, uint32_t k) {
  const uint32_t T = 16 / elem_bytes;
  uint32_t off = 0;
  if (m.swizzle == Swizzle::none) {
    if (major == Major::k)  // ((8,m),(T,2k)):((1T,SBO),(1,LBO))
      off = (mn % 8) * 16 + (mn / 8) * m.sbo + (k % T) * elem_bytes + (k / T) * m.lbo;
    else                    // ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
      off = (mn % T) * elem_bytes + (mn / T) * m.sbo + (k % 8) * 16 + (k / 8) * m.lbo;
    return m.start_addr + off;
  }
  const uint32_t W = swizzle_span_bytes(m.swizzle), C = W / 16;
  // ISA reading: K-major swizzled layouts ignore LBO ("not used, assumed 1"): one instruction's
  // 32 bytes of K never leave a swizzle row.
  if (major == Major::k)    // ((8,m),(T,2k)):((C*T,SBO),(1,T))
    off = (mn % 8) * W + (mn / 8) * m.sbo + (k / T) * 16 + (k % T) * elem_bytes;
  else                      // ((T,C,m),(8,k)):((1,T,LBO),(C*T,SBO))
    off = (mn % T) * elem_bytes + ((mn / T) % C) * 16 + (mn / (T * C)) * m.lbo + (k % 8) * W + (k / 8) * m.sbo;
  const uint32_t addr = m.start_addr + off;
  const uint32_t mask = (1u << swizzle_bits(m.swizzle)) - 1;
  const uint32_t phase = ((addr >> 7) - m.base_offset) & mask;
  return addr ^ (phase << 4);
}

// ---- fragments ----------------------------------------------------------------------------------
RowCol wgmma_d_position(uint32_t t, uint32_t i) {
  return {16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2), 8 * (i / 4) + 2 * (t % 4) + (i % 2)};
}
FragSlot wgmma_d_owner(uint32_t row, uint32_t col, bool f16_accum) {
  const uint32_t t = 32 * (row / 16) + 4 * (row % 8) + (col % 8) / 2;
  const uint32_t i = 4 * (col / 8) + 2 * ((row % 16) / 8) + (col % 2);
  return f16_accum ? FragSlot{t, i / 2, i % 2} : FragSlot{t, i, 0};
}
RowCol wgmma_a_position(uint32_t t, uint32_t j, uint32_t elem_bytes) {
  const uint32_t w = t / 32, g = (t % 32) / 4, q = t % 4;
  if (elem_bytes == 1) return {16 * w + g + 8 * ((j / 4) % 2), 4 * q + (j % 4) + 16 * (j / 8)};
  if (elem_bytes == 4) return {16 * w + g + 8 * (j % 2), q + 4 * (j / 2)};
  return {16 * w + g + 8 * ((j / 2) % 2), 2 * q + (j % 2) + 8 * (j / 4)};
}
FragSlot wgmma_a_owner(uint32_t row, uint32_t col, uint32_t elem_bytes) {
  const uint32_t w = row / 16, g = row % 8, hi = (row % 16) / 8;
  if (elem_bytes == 1) {
    const uint32_t t = 32 * w + 4 * g + (col % 16) / 4, j = (col % 4) + 4 * hi + 8 * (col / 16);
    return {t, j / 4, j % 4};
  }
  if (elem_bytes == 4) {
    const uint32_t t = 32 * w + 4 * g + col % 4, j = hi + 2 * (col / 4);
    return {t, j, 0};
  }
  const uint32_t t = 32 * w + 4 * g + (col % 8) / 2, j = (col % 2) + 2 * hi + 4 * (col / 8);
  return {t, j / 2, j % 2};
}

// ---- wgmma.mma_async ----------------------------------------------------------------------------
uint32_t wgmma_d_regs(const WgmmaOp& op) { return op.d_f16 ? op.n / 4 : op.n / 2; }

namespace {
bool is_fp8(MmaType t) { return t == MmaType::e4m3 || t == MmaType::e5m2; }
}  // namespace

std::string wgmma_validate(const WgmmaOp& op) {
  if (op.n < 8 || op.n > 256 || op.n % 8 != 0) return "N must be 8..256 in steps of 8";
  if (is_fp8(op.atype) != is_fp8(op.btype) || (!is_fp8(op.atype) && op.atype != op.btype))
    return "A and B types must match (.f16, .bf16, .tf32) or both be .e4m3/.e5m2";
  if (op.d_f16 && (op.atype == MmaType::bf16 || op.atype == MmaType::tf32))
    return ".bf16 and .tf32 multiplicands require .f32 accumulators";
  const bool t16 = op.atype == MmaType::f16 || op.atype == MmaType::bf16;
  if (!t16 && (op.trans_a || op.trans_b)) return "imm-trans-a/b must be 0 for types other than .f16/.bf16";
  if (op.a_in_regs && op.trans_a) return "the register (RS) form has no imm-trans-a";
  if ((op.scale_a != 1 && op.scale_a != -1) || (op.scale_b != 1 && op.scale_b != -1))
    return "imm-scale-a/b must be 1 or -1";
  return {};
}

std::vector<SmemSpan> wgmma_smem_footprint(const WgmmaOp& op) {
  const uint32_t K = mma_k(op.atype), ea = mma_type_bytes(op.atype), eb = mma_type_bytes(op.btype);
  std::vector<uint32_t> chunks;
  if (!op.a_in_regs) {
    const MatrixDesc da = matrix_desc_decode(op.desc_a);
    for (uint32_t row = 0; row < 64; ++row)
      for (uint32_t k = 0; k < K; ++k)
        chunks.push_back(canonical_address(da, op.trans_a ? Major::mn : Major::k, ea, row, k) & ~15u);
  }
  const MatrixDesc db = matrix_desc_decode(op.desc_b);
  for (uint32_t n = 0; n < op.n; ++n)
    for (uint32_t k = 0; k < K; ++k)
      chunks.push_back(canonical_address(db, op.trans_b ? Major::mn : Major::k, eb, n, k) & ~15u);
  std::sort(chunks.begin(), chunks.end());
  chunks.erase(std::unique(chunks.begin(), chunks.end()), chunks.end());
  std::vector<SmemSpan> out;
  for (uint32_t c : chunks) {
    if (!out.empty() && out.back().last == c) out.back().last = c + 16;
    else out.push_back({c, c + 16});
  }
  return out;
}

namespace {
// Reads a 64-or-N x K operand through its descriptor into out[mn * K + k], one 16-byte chunk per
// call: within a chunk the T = 16 / elem_bytes elements are contiguous along K (K-major) or along
// MN (MN-major), and the swizzle moves whole chunks.
void read_smem_operand(const MatrixDesc& d, Major major, MmaType type, uint32_t rows, uint32_t K,
                       const SmemRead& smem, float* out) {
  const uint32_t eb = mma_type_bytes(type), T = 16 / eb;
  uint8_t chunk[16];
  auto elem = [&](uint32_t i) {
    uint32_t v = 0;
    std::memcpy(&v, chunk + i * eb, eb);
    return mma_elem_to_f32(type, v);
  };
  if (major == Major::k) {
    for (uint32_t mn = 0; mn < rows; ++mn)
      for (uint32_t k0 = 0; k0 < K; k0 += T) {
        smem(canonical_address(d, major, eb, mn, k0), chunk, 16);
        for (uint32_t i = 0; i < T && k0 + i < K; ++i) out[mn * K + k0 + i] = elem(i);
      }
  } else {
    for (uint32_t k = 0; k < K; ++k)
      for (uint32_t mn0 = 0; mn0 < rows; mn0 += T) {
        smem(canonical_address(d, major, eb, mn0, k), chunk, 16);
        for (uint32_t i = 0; i < T && mn0 + i < rows; ++i) out[(mn0 + i) * K + k] = elem(i);
      }
  }
}
}  // namespace

void wgmma_read_operands(const WgmmaOp& op, const SmemRead& smem, const uint32_t* a_regs, float* a, float* b) {
  const uint32_t K = mma_k(op.atype), ea = mma_type_bytes(op.atype);
  if (op.a_in_regs) {
    for (uint32_t row = 0; row < 64; ++row)
      for (uint32_t k = 0; k < K; ++k) {
        const FragSlot s = wgmma_a_owner(row, k, ea);
        const uint32_t reg = a_regs[s.thread * 4 + s.reg];
        const uint32_t bits = ea == 4 ? reg : ea == 1 ? (reg >> (8 * s.half)) & 0xff : (reg >> (16 * s.half)) & 0xffff;
        a[row * K + k] = mma_elem_to_f32(op.atype, bits);
      }
  } else {
    read_smem_operand(matrix_desc_decode(op.desc_a), op.trans_a ? Major::mn : Major::k, op.atype, 64, K, smem, a);
  }
  std::vector<float> bt(size_t(op.n) * K);  // read as (n, k), returned as b[k * N + n]
  read_smem_operand(matrix_desc_decode(op.desc_b), op.trans_b ? Major::mn : Major::k, op.btype, op.n, K, smem, bt.data());
  for (uint32_t n = 0; n < op.n; ++n)
    for (uint32_t k = 0; k < K; ++k) b[k * op.n + n] = bt[n * K + k];
}

// ISA reading: NaN inputs (e4m3 0x7f, ...) propagate through the f32 sums as IEEE NaNs.
void wgmma_compute(const WgmmaOp& op, const SmemRead& smem, const uint32_t* a_regs, uint32_t* d_regs) {
  const uint32_t K = mma_k(op.atype), N = op.n, nregs = wgmma_d_regs(op);
  std::vector<float> a(64 * K), b(size_t(K) * N);
  wgmma_read_operands(op, smem, a_regs, a.data(), b.data());
  if (op.scale_a != 1) for (float& x : a) x *= float(op.scale_a);
  if (op.scale_b != 1) for (float& x : b) x *= float(op.scale_b);
  // D in (row, col) order, from the registers through the fragment layout.
  std::vector<float> acc(64 * size_t(N), 0.0f);
  if (op.scale_d)
    for (uint32_t t = 0; t < 128; ++t)
      for (uint32_t e = 0; e < N / 2; ++e) {
        const RowCol rc = wgmma_d_position(t, e);
        const uint32_t reg = d_regs[t * nregs + (op.d_f16 ? e / 2 : e)];
        acc[rc.row * N + rc.col] = op.d_f16 ? f16_to_f32(uint16_t(reg >> (16 * (e % 2)))) : f32_from_bits(reg);
      }
  // Products of the multiplicand types (at most 11 significant bits each) are exact in f32, so
  // acc + a*b in f32 is the fma.rn.f32 of the reading, per element in k order; the loop runs over
  // columns innermost (independent elements), which keeps each element's order.
  if (op.accum == AccumMode::f64) {
    std::vector<double> acc64(acc.begin(), acc.end());
    for (uint32_t row = 0; row < 64; ++row)
      for (uint32_t k = 0; k < K; ++k) {
        const double av = a[row * K + k];
        double* dst = &acc64[size_t(row) * N];
        const float* bk = &b[size_t(k) * N];
        for (uint32_t n = 0; n < N; ++n) dst[n] += av * double(bk[n]);
      }
    for (size_t i = 0; i < acc.size(); ++i) acc[i] = float(acc64[i]);
  } else {
    const bool reverse = op.accum == AccumMode::f32_reverse;
    for (uint32_t row = 0; row < 64; ++row)
      for (uint32_t kk = 0; kk < K; ++kk) {
        const uint32_t k = reverse ? K - 1 - kk : kk;
        const float av = a[row * K + k];
        float* dst = &acc[size_t(row) * N];
        const float* bk = &b[size_t(k) * N];
        // N is a multiple of 8: eight independent elements at a time (GCC/Clang vector extension;
        // element-wise IEEE multiply and add, so each element's result is the scalar one).
        typedef float f32x8 __attribute__((vector_size(32)));
        const f32x8 av8 = {av, av, av, av, av, av, av, av};
        for (uint32_t n0 = 0; n0 < N; n0 += 8) {
          f32x8 d8, b8;
          std::memcpy(&d8, dst + n0, 32);
          std::memcpy(&b8, bk + n0, 32);
          d8 += av8 * b8;
          std::memcpy(dst + n0, &d8, 32);
        }
      }
  }
  for (uint32_t t = 0; t < 128; ++t)
    for (uint32_t e = 0; e < N / 2; ++e) {
      const RowCol rc = wgmma_d_position(t, e);
      const float r = acc[rc.row * N + rc.col];
      uint32_t& reg = d_regs[t * nregs + (op.d_f16 ? e / 2 : e)];
      if (op.d_f16) {
        const uint32_t shift = 16 * (e % 2);
        reg = (reg & ~(0xffffu << shift)) | (uint32_t(f32_to_f16(r)) << shift);
      } else {
        reg = f32_bits(r);
      }
    }
}

}  // namespace ptxsim::isa
