// A functional CPU model of the tcgen05 pieces the sm_100a kernels rely on, written from the PTX ISA
// ("Tensorcore 5th Generation Family Instructions") and independently of the kernel code: it does
// not include the kernels' descriptor builders or operand plans (ptx/tcgen05_desc.cuh,
// src/protocol/umma_plan.h). The kernels' plans are replayed through it by the tests
// (tests/host/test_tcgen05_emulator.cpp); where a plan and this model disagree, the replayed GEMM
// differs from fp64.
//
// What it models (and the ISA text each piece follows):
//   - the 64-bit shared-memory matrix descriptor ("Shared Memory Descriptor"): start, LBO, SBO,
//     base offset, LBO mode, swizzle; its fixed and reserved bits; sm_100a legality;
//   - the gather of an operand from a byte image of shared memory through a descriptor, K-major and
//     MN-major, no swizzle and 32B/64B/128B swizzle ("Leading Dimension Stride", "Stride Dimension
//     Byte Offset", "Canonical Layouts": the CuTe layouts and Swizzle<B,4,3> on the byte address);
//   - the 32-bit instruction descriptor of .kind::f16 / .kind::f8f6f4 ("Instruction descriptor"),
//     and the dense shapes of the "Matrix Shape" table;
//   - tcgen05.mma, dense, f16/bf16 and e4m3/e5m2 inputs, f32 accumulate, enable-input-d, negate,
//     transposes, A from shared memory (SS) or TMEM (TS), cta_group::1 with M = 128 and
//     cta_group::2 with M = 256 (each CTA of the pair: A rows and D lanes [0, 128), B columns of its
//     half of N) and, SS form only, cta_group::2 with M = 128 (the ISA's data-path "Layout B": each
//     CTA of the pair holds M / 2 = 64 rows of A and of D, and N / 2 columns of B; its 64 D rows x N
//     columns are folded into 128 lanes x N / 2 columns: row i, column n < N / 2 in lane i, column n;
//     row i, column n >= N / 2 in lane 64 + i, column n - N / 2. d_location() says where each D
//     element lives, for every modelled form);
//   - Tensor Memory per CTA: 128 lanes x 512 columns of 32 bits, tcgen05.alloc / dealloc /
//     relinquish_alloc_permit rules ("Tensor Memory Allocation"), and tcgen05.ld / tcgen05.st of
//     shape .32x32b ("Matrix fragments for shape .32x32b"): thread t, register j <-> lane
//     (address lane + t), column (address column + j), the warp confined to its lane quarter.
// What it does not model, and says so with EmuError::kNotModelled rather than guessing: M = 64
// (cta_group::1) TMEM layouts, the TS form (A from TMEM) of M = 128 cta_group::2, f16 accumulators, sparse and .ws forms,
// sub-byte types, 128B swizzle with 32-byte atoms, a non-zero matrix base offset, .16x* shapes of
// tcgen05.ld/st, .pack/.unpack. Timing, asynchrony and the completion chain are not modelled at
// all (tools/models/tmem.cpp checks the event order).
// Arithmetic: each D element is (enable-input-d ? D : 0) + the exact dot product (in double, exact
// for the inputs the tests use), rounded once to f32. The hardware's internal accumulation order and
// precision are not specified by the ISA; tests feed values whose sums are exact in f32.
#pragma once
#include <cstdint>
#include <vector>

namespace flashptx::models::tcgen05 {

enum class EmuError : uint8_t {
  kOk = 0,
  kDescVersion,        // descriptor bits 46-48 are not the fixed 0b001
  kDescReserved,       // a reserved / fixed-zero descriptor bit is set
  kDescSwizzleCode,    // swizzle code 3, 5 or 7
  kDescLboAbsolute,    // bit 52 set: LBO as an absolute address is an sm_103a feature
  kNotModelled,        // legal (or unknown), but outside this model
  kSmemOutOfRange,     // an operand byte lies outside the shared-memory image
  kIdescReserved,      // a reserved instruction-descriptor bit is set
  kIdescType,          // a type code that the kind does not define
  kIllegalShape,       // M x N not in the Matrix Shape table for the CTA group
  kTmemATransposed,    // TS form with transpose-A set
  kTmemAddress,        // a TMEM operand or access outside a live allocation, or at a bad lane
  kAllocSize,          // tcgen05.alloc: not a power of two in [32, 512]
  kAllocPermit,        // tcgen05.alloc after relinquish_alloc_permit
  kAllocFull,          // not enough free columns (the hardware would block)
  kDeallocMismatch,    // tcgen05.dealloc that is not exactly one live allocation
  kNotFreedAtExit,     // columns still allocated at exit
  kPairMismatch,       // cta_group::2 allocation that differs between the two CTAs
  kLdStShape,          // .num not in {1, 2, 4, ..., 128}
  kLaneQuarter,        // a warp addressing lanes outside its quarter [32*(warp%4), +32)
};
const char* emu_error_name(EmuError e);

constexpr uint32_t kSmemBytes = 1u << 18;  // the descriptor's 18-bit address space
constexpr uint32_t kLanes = 128, kColumns = 512;

// ---- shared-memory descriptor ----------------------------------------------------------------
struct SmemDesc {
  uint32_t start = 0;        // bytes
  uint32_t lbo = 0;          // bytes
  uint32_t sbo = 0;          // bytes
  uint32_t fixed_46_48 = 0;  // must be 0b001
  uint32_t base_offset = 0;  // bits 49-51
  uint32_t lbo_mode = 0;     // bit 52
  uint32_t swizzle_code = 0; // bits 61-63
  bool reserved_clear = true;  // bits 14-15, 30-31, 53-60
};
SmemDesc decode_smem_desc(uint64_t desc);
// sm_100a legality and model coverage of a decoded descriptor.
EmuError check_smem_desc(const SmemDesc& d);
// Swizzle width in bytes of a (modelled) swizzle code: 0 none, 32, 64, 128; 0 for others.
uint32_t swizzle_bytes(uint32_t swizzle_code);

// Byte address of element (mn, k) of an operand with elements of `elem_bytes` (1, 2 or 4) bytes:
// mn is the M (A) or N (B) index, k the reduction index; mn_major selects the MN-major layouts.
EmuError operand_address(const SmemDesc& d, bool mn_major, uint32_t elem_bytes, uint32_t mn, uint32_t k,
                         uint32_t* addr);

// ---- instruction descriptor --------------------------------------------------------------------
enum class Kind : uint8_t { kF16, kF8F6F4 };
struct InstrDesc {
  uint32_t sparse_selector = 0, sparse = 0, saturate = 0, dtype = 0, atype = 0, btype = 0;
  uint32_t negate_a = 0, negate_b = 0, transpose_a = 0, transpose_b = 0;
  uint32_t n = 0, m = 0, max_shift = 0;
  bool reserved_clear = true;  // bits 6, 23, 29
};
InstrDesc decode_instr_desc(uint32_t idesc);
// The dense shapes of the Matrix Shape table, .kind::f16 / .kind::f8f6f4, no .ws.
bool shape_in_isa_table(int cta_group, uint32_t m, uint32_t n);

enum class ElemType : uint8_t { kF16, kBF16, kE4M3, kE5M2 };
uint32_t elem_bytes(ElemType t);
double decode_element(ElemType t, uint32_t bits);  // NaN for NaN encodings
// The element type a kind's atype/btype code names (kNotModelled for sub-byte types).
EmuError elem_type(Kind kind, uint32_t code, ElemType* out);

// ---- memories ----------------------------------------------------------------------------------
struct Smem {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(kSmemBytes, 0);
};

class Tmem {
 public:
  Tmem();
  uint32_t cell(uint32_t lane, uint32_t column) const { return cells_[lane * kColumns + column]; }
  void set_cell(uint32_t lane, uint32_t column, uint32_t v) { cells_[lane * kColumns + column] = v; }
  // tcgen05.alloc (the model places a block at the lowest free base aligned to its size; the
  // hardware's choice is its own) / dealloc / relinquish_alloc_permit, and the exit rule.
  EmuError alloc(uint32_t ncols, uint32_t* taddr);
  EmuError dealloc(uint32_t taddr, uint32_t ncols);
  void relinquish() { permit_ = false; }
  EmuError at_exit() const { return blocks_.empty() ? EmuError::kOk : EmuError::kNotFreedAtExit; }
  // Columns [begin, end) lie inside live allocations.
  bool live(uint32_t begin, uint32_t end) const;

 private:
  struct Block { uint32_t base, cols; };
  std::vector<uint32_t> cells_;
  std::vector<Block> blocks_;
  bool permit_ = true;
};
// cta_group::2 allocation: one warp in each CTA, the same columns in both.
EmuError alloc_pair(Tmem& cta0, Tmem& cta1, uint32_t ncols, uint32_t* taddr);

struct Cta {
  Smem smem;
  Tmem tmem;
};

// ---- tcgen05.mma ---------------------------------------------------------------------------------
struct MmaOp {
  Kind kind = Kind::kF16;
  int cta_group = 1;
  uint32_t d_tmem = 0;
  bool a_from_tmem = false;  // TS form
  uint64_t a_desc = 0;
  uint32_t a_tmem = 0;
  uint64_t b_desc = 0;
  uint32_t idesc = 0;
  bool enable_input_d = false;
};
// Executes one tcgen05.mma. `ctas` holds one CTA (cta_group::1) or the pair, rank 0 then rank 1.
EmuError mma(const std::vector<Cta*>& ctas, const MmaOp& op);

// Where one CTA's D element (row, column) of a tcgen05.mma of shape M x N lives in its TMEM, relative
// to the D address: `row` is the row inside this CTA's share (cta_group::1: [0, M); cta_group::2:
// [0, M / 2)), `col` in [0, N). The data-path layouts: cta_group::1 M = 128 and cta_group::2 M = 256
// are the identity (lane = row, column = col); cta_group::2 M = 128 folds N in two halves over the
// two 64-lane halves (Layout B). kNotModelled for the other shapes.
EmuError d_location(int cta_group, uint32_t m, uint32_t n, uint32_t row, uint32_t col, uint32_t* lane,
                    uint32_t* column);
// Rows of A (and of D) each CTA holds: M for cta_group::1, M / 2 for cta_group::2.
inline uint32_t rows_per_cta(int cta_group, uint32_t m) { return m / static_cast<uint32_t>(cta_group); }

// The operand a descriptor describes, as doubles, row-major [rows][k]: row = M index (A) or N index
// (B). The same gather tcgen05.mma performs.
EmuError gather_operand(const Smem& smem, uint64_t desc, bool mn_major, ElemType t, uint32_t rows, uint32_t k,
                        std::vector<double>* out);

// ---- tcgen05.ld / tcgen05.st, shape .32x32b ---------------------------------------------------------
struct LaneColumn { uint32_t lane, column; };
// Thread t of the warp, register j, for an access at TMEM address taddr.
LaneColumn map_32x32b(uint32_t taddr, uint32_t thread, uint32_t reg);
// regs[t * num + j] is register j of thread t. `warp` is the warp's index in the CTA.
EmuError ld_32x32b(const Tmem& tmem, uint32_t warp, uint32_t taddr, uint32_t num, std::vector<uint32_t>* regs);
EmuError st_32x32b(Tmem& tmem, uint32_t warp, uint32_t taddr, uint32_t num, const std::vector<uint32_t>& regs);

}  // namespace flashptx::models::tcgen05
