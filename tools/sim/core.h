// ptxsim internals: the pre-decoded module. Not part of the public API (tools/sim/sim.h).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tools/sim/sim.h"

namespace ptxsim {

// Element types.
enum Ty : uint8_t {
  T_NONE, T_PRED, T_B8, T_B16, T_B32, T_B64, T_U8, T_U16, T_U32, T_U64, T_S8, T_S16, T_S32, T_S64,
  T_F16, T_F16X2, T_BF16, T_BF16X2, T_F32, T_F64, T_E4M3, T_E5M2, T_E4M3X2, T_E5M2X2, T_B128,
  T_TF32  // cvt's destination only (a 32-bit pattern)
};
inline int ty_bytes(Ty t) {
  switch (t) {
    case T_PRED: return 1;
    case T_B8: case T_U8: case T_S8: case T_E4M3: case T_E5M2: return 1;
    case T_B16: case T_U16: case T_S16: case T_F16: case T_BF16: case T_E4M3X2: case T_E5M2X2: return 2;
    case T_B32: case T_U32: case T_S32: case T_F32: case T_F16X2: case T_BF16X2: case T_TF32: return 4;
    case T_B64: case T_U64: case T_S64: case T_F64: return 8;
    case T_B128: return 16;
    default: return 0;
  }
}
inline bool ty_signed(Ty t) { return t == T_S8 || t == T_S16 || t == T_S32 || t == T_S64; }
inline bool ty_float(Ty t) { return t == T_F16 || t == T_BF16 || t == T_F32 || t == T_F64; }

enum Space : uint8_t { SP_GENERIC, SP_GLOBAL, SP_SHARED, SP_SHARED_CLUSTER, SP_PARAM, SP_LOCAL, SP_CONST };

enum Op : uint16_t {
  OP_INVALID,
  // arithmetic
  OP_ADD, OP_SUB, OP_MUL, OP_MUL_HI, OP_MUL_WIDE, OP_MAD_LO, OP_FMA, OP_DIV, OP_REM, OP_ABS, OP_NEG,
  OP_MIN, OP_MAX, OP_EX2, OP_RCP, OP_TANH,
  // logic
  OP_AND, OP_OR, OP_XOR, OP_NOT, OP_SHL, OP_SHR, OP_BFI, OP_PRMT,
  OP_MOV, OP_SELP, OP_SETP, OP_CVT, OP_CVTA, OP_CVTA_TO, OP_MAPA,
  // memory
  OP_LD, OP_ST, OP_ATOM, OP_RED,
  // control
  OP_BRA, OP_CALL, OP_RET, OP_EXIT, OP_TRAP, OP_BRKPT, OP_NANOSLEEP,
  // collectives
  OP_SHFL, OP_VOTE, OP_BAR_WARP, OP_ELECT,
  OP_BAR_SYNC, OP_BAR_ARRIVE, OP_CLUSTER_ARRIVE, OP_CLUSTER_WAIT, OP_SETMAXNREG,
  OP_FENCE, OP_FENCE_PROXY_ASYNC, OP_FENCE_MBAR_INIT, OP_FENCE_PROXY_TMAP,
  // mbarrier
  OP_MBAR_INIT, OP_MBAR_ARRIVE, OP_MBAR_ARRIVE_TX, OP_MBAR_EXPECT_TX, OP_MBAR_TRY_WAIT, OP_MBAR_TEST_WAIT,
  OP_MBAR_INVAL,
  // bulk async
  OP_TMA_LOAD, OP_TMA_STORE, OP_TMA_REDUCE, OP_TMA_PREFETCH, OP_BULK_LOAD, OP_BULK_STORE, OP_BULK_REDUCE,
  OP_BULK_COMMIT, OP_BULK_WAIT,
  // wgmma and matrix moves
  OP_WGMMA_FENCE, OP_WGMMA_COMMIT, OP_WGMMA_WAIT, OP_WGMMA_MMA, OP_LDMATRIX, OP_STMATRIX,
  // forms no library kernel issues, for the ISA-reading probes (tests/kernels/isa_readings_library.cu)
  OP_SZEXT, OP_BMSK, OP_SUBC, OP_LG2,
  // tcgen05 (sm_100a; decoded by tools/sim/parse_sm100.cpp, executed by tools/sim/exec_sm100.inc)
  OP_TC_ALLOC, OP_TC_DEALLOC, OP_TC_RELINQUISH, OP_TC_LD, OP_TC_ST, OP_TC_WAIT_LD, OP_TC_WAIT_ST,
  OP_TC_FENCE_BEFORE, OP_TC_FENCE_AFTER, OP_TC_MMA, OP_TC_COMMIT,
  // cluster launch control and the .b128 moves its responses need (sm_100a; the same files)
  OP_MOV_B128, OP_CLC_TRY_CANCEL, OP_CLC_IS_CANCELED, OP_CLC_FIRST_CTAID,
  OP_COUNT
};

// Modifier bits (Inst::mods).
enum : uint32_t {
  M_FTZ = 1u << 0, M_SAT = 1u << 1, M_RN = 1u << 2, M_RZ = 1u << 3, M_RM = 1u << 4, M_RP = 1u << 5,
  M_APPROX = 1u << 6, M_SATFINITE = 1u << 7, M_TRANS = 1u << 8, M_UNI = 1u << 9, M_READ = 1u << 10,
  M_INC = 1u << 11, M_DEC = 1u << 12, M_ALIGNED = 1u << 13, M_VOLATILE = 1u << 14, M_NC = 1u << 15,
  M_ACQUIRE = 1u << 16, M_RELEASE = 1u << 17, M_RELAXED = 1u << 18, M_SC = 1u << 19, M_ACQREL = 1u << 20,
  M_CTA = 1u << 21, M_CLUSTER = 1u << 22, M_GPU = 1u << 23, M_SYS = 1u << 24, M_MULTICAST = 1u << 25,
  M_PARITY = 1u << 26, M_HI = 1u << 27, M_LO = 1u << 28, M_WIDE = 1u << 29, M_AND = 1u << 30, M_OR = 1u << 31,
};

// Sub-operations (Inst::sub): comparison, shuffle mode, vote mode, atom op.
enum Cmp : uint8_t { C_EQ, C_NE, C_LT, C_LE, C_GT, C_GE, C_LO, C_LS, C_HI, C_HS, C_EQU, C_NEU, C_LTU, C_LEU,
                     C_GTU, C_GEU, C_NUM, C_NAN };
enum ShflMode : uint8_t { SH_UP, SH_DOWN, SH_BFLY, SH_IDX };
enum VoteMode : uint8_t { V_ALL, V_ANY, V_UNI, V_BALLOT };
enum AtomOp : uint8_t { A_ADD, A_MIN, A_MAX, A_EXCH, A_CAS, A_AND, A_OR, A_XOR, A_INC, A_DEC };

enum OKind : uint8_t {
  K_NONE, K_REG, K_IMM, K_VEC, K_ADDR, K_SYM, K_SPECIAL, K_LABEL, K_FUNC, K_SINK, K_PAIR
};
// Symbol spaces for K_SYM / address bases.
enum SymKind : uint8_t { SK_NONE, SK_REG, SK_SHARED, SK_GLOBAL, SK_KPARAM, SK_LPARAM };

enum Special : uint8_t {
  SR_TID_X, SR_TID_Y, SR_TID_Z, SR_NTID_X, SR_NTID_Y, SR_NTID_Z, SR_CTAID_X, SR_CTAID_Y, SR_CTAID_Z,
  SR_NCTAID_X, SR_NCTAID_Y, SR_NCTAID_Z, SR_LANEID, SR_WARPID, SR_NWARPID, SR_SMID, SR_NSMID, SR_CLOCK,
  SR_CLOCK64, SR_CLUSTER_CTAID_X, SR_CLUSTER_CTAID_Y, SR_CLUSTER_CTAID_Z, SR_CLUSTER_NCTAID_X,
  SR_CLUSTER_NCTAID_Y, SR_CLUSTER_NCTAID_Z, SR_CLUSTER_CTARANK, SR_CLUSTER_NCTARANK, SR_CLUSTERID_X,
  SR_CLUSTERID_Y, SR_CLUSTERID_Z, SR_NCLUSTERID_X, SR_NCLUSTERID_Y, SR_NCLUSTERID_Z, SR_DYN_SMEM,
  SR_TOTAL_SMEM, SR_LANEMASK_EQ, SR_LANEMASK_LT, SR_LANEMASK_LE, SR_LANEMASK_GT, SR_LANEMASK_GE,
  SR_GRIDID, SR_GLOBALTIMER, SR_COUNT
};

inline constexpr uint32_t kNoReg = 0xFFFFFFFFu;  // a sink in a register pair

struct Opnd {
  OKind kind = K_NONE;
  bool neg = false;      // !%p
  uint8_t n = 0;         // K_VEC: element count; K_ADDR: coordinate count
  SymKind sk = SK_NONE;  // K_SYM and K_ADDR base
  uint32_t reg = 0;      // K_REG/K_PAIR first; K_VEC/K_ADDR coords: index into Module::vecs; K_SPECIAL id
  uint32_t reg2 = 0;     // K_PAIR second; K_ADDR base register (sk == SK_REG)
  int64_t imm = 0;       // K_IMM value; K_ADDR/K_SYM byte offset (symbol offset included); K_LABEL pc
};

// A vector element: a register, an immediate or a sink.
struct VecElem { OKind kind; uint32_t reg; int64_t imm; };

struct Inst {
  Op op = OP_INVALID;
  Ty ty = T_NONE, ty2 = T_NONE;  // ty: the instruction type; ty2: cvt source / second type
  Space space = SP_GENERIC;
  uint8_t sub = 0;     // Cmp / ShflMode / VoteMode / AtomOp / cvta direction; prmt: isa::PrmtMode;
                       // cvt, fma: bit 0 .relu, bit 1 .rna (cvt); szext/bmsk: 1 .clamp; sub/subc: 1 .cc
  uint8_t sub2 = 0;    // setp combine: 0 none, 1 and, 2 or, 3 xor; ld/st vector width; wgmma: SS=0/RS=1
  uint8_t nops = 0;
  bool guard_neg = false;
  bool implemented = true;
  uint32_t mods = 0;
  int32_t guard = -1;  // predicate register or -1
  uint32_t line = 0;   // PTX line (1-based)
  uint32_t func = 0;   // index into Module::funcs
  uint32_t form = 0;   // index into Module::forms
  uint32_t text = 0;   // index into Module::texts
  uint16_t m = 0, n = 0, k = 0;  // wgmma shape; ldmatrix/stmatrix: n = count (1/2/4); tensor dims in k
  Opnd o[8];
};

struct ParamDecl { std::string name; uint32_t offset, size, align; };

struct Func {
  std::string name;
  bool is_entry = false;
  uint32_t begin = 0, end = 0;   // instruction range in Module::code
  std::vector<ParamDecl> params;  // entry: the kernel param block; func: formals
  std::vector<ParamDecl> rets;    // func: return params
  std::vector<uint32_t> param_lofs, ret_lofs;  // func: offsets in the per-thread local-param area
  uint32_t reg_count = 0;         // registers this function declares (absolute numbering)
  uint32_t maxntid[3] = {0, 0, 0}, reqntid[3] = {0, 0, 0}, reqcluster[3] = {0, 0, 0};
  uint32_t maxnreg = 0, minnctapersm = 0;
  bool explicitcluster = false;
  uint32_t param_bytes = 0;
  bool defined = false;
};

struct GlobalVar { std::string name; Space space; uint32_t align, size; std::vector<uint8_t> init; };

struct Module {
  std::string name;
  std::vector<Inst> code;
  std::vector<Func> funcs;
  std::vector<VecElem> vecs;
  std::vector<std::string> texts;   // instruction text per inst (for reports)
  std::vector<std::string> forms;   // distinct forms
  std::vector<uint8_t> form_impl;
  std::vector<uint32_t> form_count, form_first;
  std::vector<GlobalVar> globals;   // .global / .const data
  uint32_t static_smem = 0;         // bytes of static .shared
  uint32_t dyn_smem_align = 16;     // alignment of the dynamic (.extern) window
  uint32_t total_regs = 0;          // registers of the largest entry + every .func's
  uint32_t entry_regs_max = 0;
  uint32_t lparam_bytes = 0;        // per-thread local param area
  std::unordered_map<std::string, uint32_t> func_index;
  std::string location(uint32_t pc) const;  // name:line: text
};

}  // namespace ptxsim
