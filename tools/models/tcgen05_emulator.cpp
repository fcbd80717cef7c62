// The tcgen05 functional emulator (see tcgen05_emulator.h for what it models and what it does not).
// Read top to bottom: 1. descriptor decoding and sm_100a legality; 2. the canonical-layout address
// of an operand element; 3. the instruction descriptor, shapes and element types; 4. Tensor Memory
// and its allocator; 5. tcgen05.mma; 6. tcgen05.ld / st of shape .32x32b.
#include "tools/models/tcgen05_emulator.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace flashptx::models::tcgen05 {

const char* emu_error_name(EmuError e) {
  switch (e) {
    case EmuError::kOk: return "ok";
    case EmuError::kDescVersion: return "descriptor bits 46-48 are not 0b001";
    case EmuError::kDescReserved: return "descriptor reserved bit set";
    case EmuError::kDescSwizzleCode: return "invalid swizzle code";
    case EmuError::kDescLboAbsolute: return "LBO absolute mode is sm_103a only";
    case EmuError::kNotModelled: return "not modelled";
    case EmuError::kSmemOutOfRange: return "operand outside shared memory";
    case EmuError::kIdescReserved: return "instruction descriptor reserved bit set";
    case EmuError::kIdescType: return "type code not defined for the kind";
    case EmuError::kIllegalShape: return "M x N not in the Matrix Shape table";
    case EmuError::kTmemATransposed: return "A from TMEM must be K-major";
    case EmuError::kTmemAddress: return "TMEM address outside a live allocation";
    case EmuError::kAllocSize: return "alloc size not a power of two in [32, 512]";
    case EmuError::kAllocPermit: return "alloc after relinquish_alloc_permit";
    case EmuError::kAllocFull: return "no free columns";
    case EmuError::kDeallocMismatch: return "dealloc is not exactly one allocation";
    case EmuError::kNotFreedAtExit: return "TMEM still allocated at exit";
    case EmuError::kPairMismatch: return "pair allocation differs between the CTAs";
    case EmuError::kLdStShape: return "illegal .num";
    case EmuError::kLaneQuarter: return "lanes outside the warp's quarter";
  }
  return "?";
}

namespace {
uint32_t bits(uint64_t v, int lo, int n) { return static_cast<uint32_t>((v >> lo) & ((1ull << n) - 1ull)); }
}  // namespace

// ---- 1. the shared-memory descriptor ("Shared Memory Descriptor") --------------------------------
// Start address, LBO and SBO are stored as (x & 0x3FFFF) >> 4 in 14-bit fields.
SmemDesc decode_smem_desc(uint64_t desc) {
  SmemDesc d;
  d.start = bits(desc, 0, 14) << 4;
  d.lbo = bits(desc, 16, 14) << 4;
  d.sbo = bits(desc, 32, 14) << 4;
  d.fixed_46_48 = bits(desc, 46, 3);
  d.base_offset = bits(desc, 49, 3);
  d.lbo_mode = bits(desc, 52, 1);
  d.swizzle_code = bits(desc, 61, 3);
  d.reserved_clear = bits(desc, 14, 2) == 0 && bits(desc, 30, 2) == 0 && bits(desc, 53, 8) == 0;
  return d;
}

uint32_t swizzle_bytes(uint32_t code) {
  switch (code) {
    case 2: return 128;  // 128-Byte swizzling
    case 4: return 64;   // 64-Byte swizzling
    case 6: return 32;   // 32-Byte swizzling
    default: return 0;   // 0: none; 1: 128-Byte with 32B atoms (not modelled); 3, 5, 7: invalid
  }
}

EmuError check_smem_desc(const SmemDesc& d) {
  if (d.fixed_46_48 != 1) return EmuError::kDescVersion;
  if (!d.reserved_clear) return EmuError::kDescReserved;
  if (d.swizzle_code == 3 || d.swizzle_code == 5 || d.swizzle_code == 7) return EmuError::kDescSwizzleCode;
  if (d.lbo_mode != 0) return EmuError::kDescLboAbsolute;  // "Target ISA Note": sm_103a
  if (d.swizzle_code == 1) return EmuError::kNotModelled;  // 128B swizzle with 32-byte atoms
  if (d.base_offset != 0) return EmuError::kNotModelled;   // pattern not on its repeat boundary
  return EmuError::kOk;
}

// ---- 2. the canonical layouts ("Canonical Layouts") ------------------------------------------------
// In units of elements, T = 16 bytes / element size, S = swizzle width / 16 (chunks per row):
//   K-major,  none:     ((8,m),(T,2k)) : ((1T,SBO),(1,LBO))
//   K-major,  swizzled: ((8,m),(T,2k)) : ((S*T,SBO),(1,T))
//   MN-major, none:     ((T,1,m),(8,k)) : ((1,T,SBO),(1T,LBO))
//   MN-major, swizzled: ((T,S,m),(8,k)) : ((1,T,LBO),(S*T,SBO))
// The first mode is MN, the second K. The swizzle, Swizzle<log2 S, 4, 3>, acts on the byte address:
// address bits [4, 4 + log2 S) ^= bits [7, 7 + log2 S).
EmuError operand_address(const SmemDesc& d, bool mn_major, uint32_t eb, uint32_t mn, uint32_t k, uint32_t* addr) {
  const EmuError legal = check_smem_desc(d);
  if (legal != EmuError::kOk) return legal;
  if (eb != 1 && eb != 2 && eb != 4) return EmuError::kNotModelled;
  const uint32_t t = 16 / eb;                       // elements per 16-byte chunk
  const uint32_t w = swizzle_bytes(d.swizzle_code);  // 0: no swizzle
  const uint32_t s = w / 16;
  uint64_t elems = 0;  // offset in elements; LBO and SBO are in bytes, so divide by eb
  const uint64_t lbo_e = d.lbo / eb, sbo_e = d.sbo / eb;
  if (!mn_major) {
    if (w == 0) {
      elems = (mn % 8) * t + (mn / 8) * sbo_e + (k % t) + (k / t) * lbo_e;
    } else {
      // The K mode (T,2k):(1,T) is contiguous: one row of the atom holds S*T elements of K.
      if (k >= s * t) return EmuError::kNotModelled;  // beyond one swizzle row: not a canonical layout
      elems = (mn % 8) * (s * t) + (mn / 8) * sbo_e + k;
    }
  } else {
    if (w == 0) {
      elems = (mn % t) + (mn / t) * sbo_e + (k % 8) * t + (k / 8) * lbo_e;
    } else {
      elems = (mn % t) + ((mn / t) % s) * t + (mn / (t * s)) * lbo_e + (k % 8) * (s * t) + (k / 8) * sbo_e;
    }
  }
  uint64_t a = d.start + elems * eb;
  if (w != 0) {
    const uint64_t mask = s - 1;  // log2 S bits
    a ^= ((a >> 7) & mask) << 4;
  }
  if (a + eb > kSmemBytes) return EmuError::kSmemOutOfRange;
  *addr = static_cast<uint32_t>(a);
  return EmuError::kOk;
}

// ---- 3. instruction descriptor, shapes, element types ("Instruction descriptor", "Matrix Shape") ---
InstrDesc decode_instr_desc(uint32_t v) {
  InstrDesc d;
  d.sparse_selector = bits(v, 0, 2);
  d.sparse = bits(v, 2, 1);
  d.saturate = bits(v, 3, 1);
  d.dtype = bits(v, 4, 2);
  d.atype = bits(v, 7, 3);
  d.btype = bits(v, 10, 3);
  d.negate_a = bits(v, 13, 1);
  d.negate_b = bits(v, 14, 1);
  d.transpose_a = bits(v, 15, 1);
  d.transpose_b = bits(v, 16, 1);
  d.n = bits(v, 17, 6) << 3;
  d.m = bits(v, 24, 5) << 4;
  d.max_shift = bits(v, 30, 2);
  d.reserved_clear = bits(v, 6, 1) == 0 && bits(v, 23, 1) == 0 && bits(v, 29, 1) == 0;
  return d;
}

bool shape_in_isa_table(int cta_group, uint32_t m, uint32_t n) {
  if (cta_group == 1) return (m == 64 || m == 128) && n >= 8 && n <= 256 && n % 8 == 0;
  if (cta_group == 2) return (m == 128 || m == 256) && n >= 16 && n <= 256 && n % 16 == 0;
  return false;
}

uint32_t elem_bytes(ElemType t) { return (t == ElemType::kF16 || t == ElemType::kBF16) ? 2u : 1u; }

double decode_element(ElemType t, uint32_t v) {
  switch (t) {
    case ElemType::kBF16: {  // the high half of an IEEE binary32
      const uint32_t f = (v & 0xFFFFu) << 16;
      float x;
      std::memcpy(&x, &f, 4);
      return x;
    }
    case ElemType::kF16: {  // IEEE binary16: 1 | 5 (bias 15) | 10
      const int s = (v >> 15) & 1, e = (v >> 10) & 0x1F, m = v & 0x3FF;
      double x;
      if (e == 0) x = std::ldexp(m, -24);
      else if (e == 31) x = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
      else x = std::ldexp(1024 + m, e - 25);
      return s ? -x : x;
    }
    case ElemType::kE4M3: {  // 1 | 4 (bias 7) | 3, no infinities, S.1111.111 is NaN
      const int s = (v >> 7) & 1, e = (v >> 3) & 0xF, m = v & 7;
      double x;
      if (e == 15 && m == 7) x = std::numeric_limits<double>::quiet_NaN();
      else if (e == 0) x = std::ldexp(m, -9);
      else x = std::ldexp(8 + m, e - 10);
      return s ? -x : x;
    }
    case ElemType::kE5M2: {  // 1 | 5 (bias 15) | 2, IEEE-like
      const int s = (v >> 7) & 1, e = (v >> 2) & 0x1F, m = v & 3;
      double x;
      if (e == 31) x = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
      else if (e == 0) x = std::ldexp(m, -16);
      else x = std::ldexp(4 + m, e - 17);
      return s ? -x : x;
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

EmuError elem_type(Kind kind, uint32_t code, ElemType* out) {
  if (kind == Kind::kF16) {
    if (code == 0) { *out = ElemType::kF16; return EmuError::kOk; }
    if (code == 1) { *out = ElemType::kBF16; return EmuError::kOk; }
    return EmuError::kIdescType;
  }
  if (code == 0) { *out = ElemType::kE4M3; return EmuError::kOk; }
  if (code == 1) { *out = ElemType::kE5M2; return EmuError::kOk; }
  if (code == 3 || code == 4 || code == 5) return EmuError::kNotModelled;  // e2m3, e3m2, e2m1
  return EmuError::kIdescType;
}

// ---- 4. Tensor Memory ("Tensor Memory", "Tensor Memory Allocation") -------------------------------
// A TMEM address is lane << 16 | column.
namespace {
uint32_t lane_of(uint32_t taddr) { return taddr >> 16; }
uint32_t column_of(uint32_t taddr) { return taddr & 0xFFFFu; }
}  // namespace

Tmem::Tmem() : cells_(size_t(kLanes) * kColumns, 0u) {}

EmuError Tmem::alloc(uint32_t ncols, uint32_t* taddr) {
  if (!permit_) return EmuError::kAllocPermit;
  if (ncols < 32 || ncols > kColumns || (ncols & (ncols - 1)) != 0) return EmuError::kAllocSize;
  for (uint32_t base = 0; base + ncols <= kColumns; base += ncols) {
    bool free = true;
    for (const Block& b : blocks_) free = free && (base + ncols <= b.base || b.base + b.cols <= base);
    if (free) {
      blocks_.push_back({base, ncols});
      *taddr = base;  // lane 0
      return EmuError::kOk;
    }
  }
  return EmuError::kAllocFull;
}

// "tcgen05.dealloc": the address and the column count of one earlier allocation.
EmuError Tmem::dealloc(uint32_t taddr, uint32_t ncols) {
  if (lane_of(taddr) != 0) return EmuError::kDeallocMismatch;
  for (size_t i = 0; i < blocks_.size(); ++i)
    if (blocks_[i].base == column_of(taddr) && blocks_[i].cols == ncols) {
      blocks_.erase(blocks_.begin() + static_cast<long>(i));
      return EmuError::kOk;
    }
  return EmuError::kDeallocMismatch;
}

bool Tmem::live(uint32_t begin, uint32_t end) const {
  for (uint32_t c = begin; c < end; ++c) {
    bool in = false;
    for (const Block& b : blocks_) in = in || (c >= b.base && c < b.base + b.cols);
    if (!in) return false;
  }
  return begin < end && end <= kColumns;
}

EmuError alloc_pair(Tmem& cta0, Tmem& cta1, uint32_t ncols, uint32_t* taddr) {
  uint32_t a0 = 0, a1 = 0;
  EmuError e = cta0.alloc(ncols, &a0);
  if (e != EmuError::kOk) return e;
  e = cta1.alloc(ncols, &a1);
  if (e != EmuError::kOk) return e;
  if (a0 != a1) return EmuError::kPairMismatch;
  *taddr = a0;
  return EmuError::kOk;
}

// ---- 5. tcgen05.mma -----------------------------------------------------------------------------------
EmuError gather_operand(const Smem& smem, uint64_t desc, bool mn_major, ElemType t, uint32_t rows, uint32_t k,
                        std::vector<double>* out) {
  const SmemDesc d = decode_smem_desc(desc);
  const uint32_t eb = elem_bytes(t);
  out->assign(size_t(rows) * k, 0.0);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t kk = 0; kk < k; ++kk) {
      uint32_t a = 0;
      const EmuError e = operand_address(d, mn_major, eb, r, kk, &a);
      if (e != EmuError::kOk) return e;
      uint32_t v = 0;
      for (uint32_t b = 0; b < eb; ++b) v |= uint32_t(smem.bytes[a + b]) << (8 * b);  // little-endian
      (*out)[size_t(r) * k + kk] = decode_element(t, v);
    }
  return EmuError::kOk;
}

namespace {
// A from TMEM (TS form): K-major, row r in lane (address lane + r), 4 / elem_bytes elements per
// 32-bit column, element k in column (address column + k * eb / 4), at byte (k * eb) % 4.
EmuError gather_tmem_a(const Tmem& tmem, uint32_t a_tmem, ElemType t, uint32_t rows, uint32_t k,
                       std::vector<double>* out) {
  const uint32_t eb = elem_bytes(t), col0 = column_of(a_tmem), lane0 = lane_of(a_tmem);
  if (lane0 != 0 || !tmem.live(col0, col0 + (k * eb + 3) / 4)) return EmuError::kTmemAddress;
  out->assign(size_t(rows) * k, 0.0);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t kk = 0; kk < k; ++kk) {
      const uint32_t byte = kk * eb;
      const uint32_t cell = tmem.cell(lane0 + r, col0 + byte / 4);
      const uint32_t v = (cell >> (8 * (byte % 4))) & (eb == 2 ? 0xFFFFu : 0xFFu);
      (*out)[size_t(r) * k + kk] = decode_element(t, v);
    }
  return EmuError::kOk;
}
}  // namespace

EmuError mma(const std::vector<Cta*>& ctas, const MmaOp& op) {
  if (op.cta_group != 1 && op.cta_group != 2) return EmuError::kNotModelled;
  if (ctas.size() != static_cast<size_t>(op.cta_group)) return EmuError::kNotModelled;
  const InstrDesc id = decode_instr_desc(op.idesc);
  if (!id.reserved_clear) return EmuError::kIdescReserved;
  if (id.sparse || id.saturate || id.max_shift || id.sparse_selector) return EmuError::kNotModelled;
  if (id.dtype != 1) return EmuError::kNotModelled;  // f32 accumulators only (f16 D: not modelled)
  ElemType at, bt;
  EmuError e = elem_type(op.kind, id.atype, &at);
  if (e != EmuError::kOk) return e;
  e = elem_type(op.kind, id.btype, &bt);
  if (e != EmuError::kOk) return e;
  if (op.kind == Kind::kF16 && id.atype != id.btype) return EmuError::kIdescType;  // .f16 or .bf16, both
  if (!shape_in_isa_table(op.cta_group, id.m, id.n)) return EmuError::kIllegalShape;
  // TMEM data-path layouts modelled (d_location): cta_group::1 M = 128 and cta_group::2 M = 256
  // (identity, 128 rows per CTA), cta_group::2 M = 128 (Layout B, 64 rows per CTA, SS form only).
  const bool pair128 = op.cta_group == 2 && id.m == 128;
  if (!((op.cta_group == 1 && id.m == 128) || (op.cta_group == 2 && id.m == 256) || pair128))
    return EmuError::kNotModelled;
  if (pair128 && op.a_from_tmem) return EmuError::kNotModelled;
  if (op.a_from_tmem && id.transpose_a) return EmuError::kTmemATransposed;

  const uint32_t k = 32 / elem_bytes(at);  // K = 16 (kind::f16) or 32 (kind::f8f6f4)
  if (elem_bytes(bt) != elem_bytes(at)) return EmuError::kNotModelled;
  const uint32_t rows = rows_per_cta(op.cta_group, id.m), n_total = id.n, n_local = id.n / op.cta_group;
  const uint32_t d_col = column_of(op.d_tmem);
  if (lane_of(op.d_tmem) != 0) return EmuError::kTmemAddress;
  const uint32_t d_width = pair128 ? n_total / 2 : n_total;  // TMEM columns D occupies
  for (Cta* c : ctas)
    if (!c->tmem.live(d_col, d_col + d_width)) return EmuError::kTmemAddress;

  // Gather everything first (A may share TMEM with nothing D writes, but do not rely on it).
  std::vector<std::vector<double>> a(ctas.size()), b(ctas.size());
  for (size_t r = 0; r < ctas.size(); ++r) {
    e = op.a_from_tmem ? gather_tmem_a(ctas[r]->tmem, op.a_tmem, at, rows, k, &a[r])
                       : gather_operand(ctas[r]->smem, op.a_desc, id.transpose_a != 0, at, rows, k, &a[r]);
    if (e != EmuError::kOk) return e;
    e = gather_operand(ctas[r]->smem, op.b_desc, id.transpose_b != 0, bt, n_local, k, &b[r]);
    if (e != EmuError::kOk) return e;
  }
  const double sa = id.negate_a ? -1.0 : 1.0, sb = id.negate_b ? -1.0 : 1.0;
  for (size_t r = 0; r < ctas.size(); ++r)
    for (uint32_t i = 0; i < rows; ++i)
      for (uint32_t n = 0; n < n_total; ++n) {
        const std::vector<double>& bn = b[n / n_local];  // N column n lives in CTA n / n_local
        const uint32_t nl = n % n_local;
        double acc = 0.0;
        for (uint32_t kk = 0; kk < k; ++kk) acc += (sa * a[r][size_t(i) * k + kk]) * (sb * bn[size_t(nl) * k + kk]);
        uint32_t lane = 0, col = 0;
        d_location(op.cta_group, id.m, n_total, i, n, &lane, &col);
        float d = 0.0f;
        if (op.enable_input_d) {
          const uint32_t old = ctas[r]->tmem.cell(lane, d_col + col);
          std::memcpy(&d, &old, 4);
        }
        const float out = static_cast<float>(static_cast<double>(d) + acc);
        uint32_t o;
        std::memcpy(&o, &out, 4);
        ctas[r]->tmem.set_cell(lane, d_col + col, o);
      }
  return EmuError::kOk;
}

// The data-path layouts ("Data path layout organization"): Layout A (cta_group::2, M = 256) and
// Layout D (cta_group::1, M = 128) put row i in lane i; Layout B (cta_group::2, M = 128) puts this
// CTA's 64 rows in lanes [0, 64) for the first N / 2 columns and in lanes [64, 128) for the rest.
EmuError d_location(int cta_group, uint32_t m, uint32_t n, uint32_t row, uint32_t col, uint32_t* lane,
                    uint32_t* column) {
  if ((cta_group == 1 && m == 128) || (cta_group == 2 && m == 256)) {
    if (row >= 128 || col >= n) return EmuError::kTmemAddress;
    *lane = row;
    *column = col;
    return EmuError::kOk;
  }
  if (cta_group == 2 && m == 128) {
    if (row >= 64 || col >= n || n % 2 != 0) return EmuError::kTmemAddress;
    *lane = row + (col < n / 2 ? 0u : 64u);
    *column = col % (n / 2);
    return EmuError::kOk;
  }
  return EmuError::kNotModelled;
}

// ---- 6. tcgen05.ld / tcgen05.st, shape .32x32b ("Matrix fragments for shape .32x32b") -------------
LaneColumn map_32x32b(uint32_t taddr, uint32_t thread, uint32_t reg) {
  return {lane_of(taddr) + thread, column_of(taddr) + reg};
}

namespace {
EmuError check_32x32b(const Tmem& tmem, uint32_t warp, uint32_t taddr, uint32_t num) {
  if (num == 0 || num > 128 || (num & (num - 1)) != 0) return EmuError::kLdStShape;
  // "Access restrictions": warp w of a warpgroup reaches lanes [32*(w%4), 32*(w%4)+32) only.
  if (lane_of(taddr) != 32 * (warp % 4)) return EmuError::kLaneQuarter;
  if (!tmem.live(column_of(taddr), column_of(taddr) + num)) return EmuError::kTmemAddress;
  return EmuError::kOk;
}
}  // namespace

EmuError ld_32x32b(const Tmem& tmem, uint32_t warp, uint32_t taddr, uint32_t num, std::vector<uint32_t>* regs) {
  const EmuError e = check_32x32b(tmem, warp, taddr, num);
  if (e != EmuError::kOk) return e;
  regs->assign(size_t(32) * num, 0u);
  for (uint32_t t = 0; t < 32; ++t)
    for (uint32_t j = 0; j < num; ++j) {
      const LaneColumn lc = map_32x32b(taddr, t, j);
      (*regs)[size_t(t) * num + j] = tmem.cell(lc.lane, lc.column);
    }
  return EmuError::kOk;
}

EmuError st_32x32b(Tmem& tmem, uint32_t warp, uint32_t taddr, uint32_t num, const std::vector<uint32_t>& regs) {
  const EmuError e = check_32x32b(tmem, warp, taddr, num);
  if (e != EmuError::kOk) return e;
  if (regs.size() != size_t(32) * num) return EmuError::kLdStShape;
  for (uint32_t t = 0; t < 32; ++t)
    for (uint32_t j = 0; j < num; ++j) {
      const LaneColumn lc = map_32x32b(taddr, t, j);
      tmem.set_cell(lc.lane, lc.column, regs[size_t(t) * num + j]);
    }
  return EmuError::kOk;
}

}  // namespace flashptx::models::tcgen05
