// The generator of ptx/wgmma_mma.cuh (see wgmma_gen.h). Edit the tables and patterns here, then
// `make regen-wgmma`; never the header.
#include "tools/support/wgmma_gen.h"

#include <sstream>
#include <string>
#include <vector>

namespace flashptx::gen {
namespace {

// ---- what is generated --------------------------------------------------------------------------
// N values per form. PTX ISA ("Warpgroup MMA: wgmma.mma_async", shapes): m64nNk16 for f16/bf16 and
// m64nNk32 for e4m3/e5m2 accept N = 8..256 in steps of 8 (dense, f32 accumulator).
// The 16-bit forms get every legal N (the forward uses 64..256; the backward's and other tile
// shapes need more), which costs nothing measurable to compile: the arms an instantiation does not
// select are discarded (tests/kernels/prim_wgmma.cu: 3.7-4.0 s of nvcc user time with 8 or 32 arms
// per form). The FP8 forms keep the N values their tests use; add more here when a kernel needs them.
std::vector<int> n_values_16bit() {
  std::vector<int> v;
  for (int n = 8; n <= 256; n += 8) v.push_back(n);
  return v;
}
constexpr int kNFp8[] = {64, 128, 192, 256};

// A 16-bit form: the input type spelled in the mnemonic and in the comments.
struct Type16 {
  const char* name;  // bf16 | f16
};
const Type16 kTypes16[] = {{"bf16"}, {"f16"}};

// FP8 operand types by template value (TypeA/TypeB): 0 = e4m3, 1 = e5m2.
const char* const kFp8Types[] = {"e4m3", "e5m2"};

// ---- text helpers -------------------------------------------------------------------------------
// "%first, %first+1, ..., %first+count-1"
std::string operand_numbers(int first, int count) {
  std::string s;
  for (int i = 0; i < count; ++i) s += (i ? ", %" : "%") + std::to_string(first + i);
  return s;
}

// "+f"(d[0]), ..., "+f"(d[count-1])
std::string accumulator_outputs(int count) {
  std::string s;
  for (int i = 0; i < count; ++i) s += (i ? ", " : "") + std::string("\"+f\"(d[") + std::to_string(i) + "])";
  return s;
}

const char* const kAsmIndent = "                 ";  // continuation lines of an asm statement

// How the A operand reaches the MMA.
enum class ASource { kSmem, kRegs };

// One `if constexpr` arm: the asm statement of one instruction.
//   shape:      "m64n128k16"      types: ".bf16.bf16"
//   imm_tail:   the operands after "p, 1, 1" (the transpose immediates), as text with a leading ", "
//   imm_inputs: their input constraints, with a leading ", "
void emit_arm(std::ostringstream& o, bool first, const std::string& condition, int n, const std::string& shape,
              const std::string& types, ASource a, int trans_immediates, const std::string& trans_inputs) {
  const int nacc = n / 2;                                     // %0 .. %nacc-1: the accumulator
  const int a_ops = a == ASource::kSmem ? 1 : 4;              // desc_a, or a[0..3]
  const int b_op = nacc + a_ops;                              // desc_b
  const int scale_op = b_op + 1;                              // scale_d
  // std::string(...) + ...: GCC 12's -Wrestrict misfires on "literal" + std::string&& at -O3.
  const std::string a_text = a == ASource::kSmem ? std::string("%") + std::to_string(nacc)
                                                 : std::string("{") + operand_numbers(nacc, 4) + "}";
  std::string tail;
  for (int i = 0; i < trans_immediates; ++i) tail += ", %" + std::to_string(scale_op + 1 + i);
  const std::string inputs = a == ASource::kSmem
                                 ? "\"l\"(desc_a), \"l\"(desc_b), \"r\"(scale_d)"
                                 : "\"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(desc_b), \"r\"(scale_d)";
  o << (first ? "  if constexpr (" : "  } else if constexpr (") << condition << ") {\n";
  o << "    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" << scale_op << ", 0;\\n\"\n";
  o << kAsmIndent << "\"wgmma.mma_async.sync.aligned." << shape << ".f32" << types << " \"\n";
  o << kAsmIndent << "\"{" << operand_numbers(0, nacc) << "}, \"\n";
  o << kAsmIndent << "\"" << a_text << ", %" << b_op << ", p, 1, 1" << tail << ";\\n}\\n\"\n";
  o << kAsmIndent << ": " << accumulator_outputs(nacc) << "\n";
  o << kAsmIndent << ": " << inputs << trans_inputs << ");\n";
}

// The closing of a function: the fallback arm for an N (or type pair) not generated, and the guard.
void emit_function_end(std::ostringstream& o, const std::string& name) {
  o << "  } else {\n";
  o << "    static_assert(N == 0, \"" << name << ": N not generated (tools/support/wgmma_gen.cpp)\");\n";
  o << "  }\n";
  o << "#else\n";
  o << "  FLASHPTX_ARCH_UNSUPPORTED(\"wgmma needs sm_90a\");\n";
  o << "#endif\n";
  o << "}\n";
}

// "__device__ __forceinline__ void NAME(" and the column its continuation line is aligned to.
std::string signature(const std::string& name, const std::string& params, const std::string& last_param,
                      int align_column) {
  return "__device__ __forceinline__ void " + name + "(" + params + ",\n" + std::string(align_column, ' ') +
         last_param + ") {\n";
}

// wgmma_m64k16_f32_<t>_ss<N, TransA, TransB> and wgmma_m64k16_f32_<t>_rs<N, TransB>.
void emit_16bit(std::ostringstream& o, const Type16& t, ASource a) {
  const std::string tn = t.name;
  const std::string name = "wgmma_m64k16_f32_" + tn + (a == ASource::kSmem ? "_ss" : "_rs");
  if (a == ASource::kSmem) {
    o << "// D(64xN, f32) (+)= A(64x16, " << tn << ", shared memory via desc_a) * B(16xN, " << tn
      << ", shared memory via desc_b).\n";
    o << "// TransA/TransB: 0 = K-major operand in shared memory, 1 = MN-major (transposed).\n";
    o << "template <int N, int TransA, int TransB>\n";
    o << signature(name, "float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b", "uint32_t scale_d", 56);
    o << "  static_assert(TransA == 0 || TransA == 1, \"TransA is 0 or 1\");\n";
  } else {
    o << "// D(64xN, f32) (+)= A(64x16, " << tn << ", registers a[4]) * B(16xN, " << tn
      << ", shared memory via desc_b).\n";
    o << "// A fragment (per thread, 2 x " << tn
      << " per register): rows r = 16*warp + lane/4 and r+8, columns\n";
    o << "// 2*(lane%4) + {0,1} and +8: a[0]=(r, k0..k0+1) a[1]=(r+8, k0..) a[2]=(r, k0+8..) "
         "a[3]=(r+8, k0+8..).\n";
    o << "template <int N, int TransB>\n";
    o << signature(name, "float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc_b", "uint32_t scale_d", 56);
  }
  o << "  static_assert(TransB == 0 || TransB == 1, \"TransB is 0 or 1\");\n";
  o << "#if FLASHPTX_HAS_SM90A\n";
  const bool ss = a == ASource::kSmem;
  bool first = true;
  for (int n : n_values_16bit()) {
    emit_arm(o, first, "N == " + std::to_string(n), n, "m64n" + std::to_string(n) + "k16", "." + tn + "." + tn, a,
             ss ? 2 : 1, ss ? ", \"n\"(TransA), \"n\"(TransB)" : ", \"n\"(TransB)");
    first = false;
  }
  emit_function_end(o, name);
}

// wgmma_m64k32_f32_fp8_ss<N, TypeA, TypeB> and wgmma_m64k32_f32_fp8_rs<N, TypeA, TypeB>.
void emit_fp8(std::ostringstream& o, ASource a) {
  const std::string name = std::string("wgmma_m64k32_f32_fp8") + (a == ASource::kSmem ? "_ss" : "_rs");
  if (a == ASource::kSmem) {
    o << "// D(64xN, f32) (+)= A(64x32, fp8, shared memory) * B(32xN, fp8, shared memory). FP8 operands must be\n";
    o << "// K-major (no transpose immediates exist for 8-bit types). TypeA/TypeB: 0 = e4m3, 1 = e5m2.\n";
    o << "template <int N, int TypeA, int TypeB>\n";
    o << signature(name, "float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b", "uint32_t scale_d", 55);
  } else {
    o << "// D(64xN, f32) (+)= A(64x32, fp8, registers a[4], 4 x fp8 per register) * B(32xN, fp8, shared "
         "memory, K-major).\n";
    o << "template <int N, int TypeA, int TypeB>\n";
    o << signature(name, "float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc_b", "uint32_t scale_d", 55);
  }
  o << "  static_assert((TypeA == 0 || TypeA == 1) && (TypeB == 0 || TypeB == 1), \"fp8 types: 0 = e4m3, 1 = "
       "e5m2\");\n";
  o << "#if FLASHPTX_HAS_SM90A\n";
  bool first = true;
  for (int n : kNFp8)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        const std::string cond = "N == " + std::to_string(n) + " && TypeA == " + std::to_string(ta) +
                                 " && TypeB == " + std::to_string(tb);
        emit_arm(o, first, cond, n, "m64n" + std::to_string(n) + "k32",
                 std::string(".") + kFp8Types[ta] + "." + kFp8Types[tb], a, 0, "");
        first = false;
      }
  emit_function_end(o, name);
}

}  // namespace

std::string wgmma_mma_header() {
  std::ostringstream o;
  o << "// wgmma.mma_async forms, written out in full so that every PTX string is visible (PTX ISA:\n"
       "// \"Warpgroup MMA: wgmma.mma_async\"). Included by ptx/wgmma.cuh; read the contracts there.\n"
       "//\n"
       "// GENERATED by tools/gen/gen_wgmma.cpp from tools/support/wgmma_gen.cpp: do not edit; change the\n"
       "// generator and run `make regen-wgmma` (a host test fails when this file and the generator differ).\n"
       "//\n"
       "// One function per form; its `if constexpr` arms are the N values generated for it (the\n"
       "// instruction shape is m64nNk16 for 16-bit inputs and m64nNk32 for FP8). The accumulator is\n"
       "// float[N/2] per thread in the wgmma D-fragment layout. `scale_d` = 0 overwrites D (D = A*B),\n"
       "// 1 accumulates (D += A*B). Operands of each arm, in PTX order: the accumulator %0..%(N/2-1), A\n"
       "// (a descriptor, or four registers), B's descriptor, scale-d (as predicate p), imm-scale-a = 1,\n"
       "// imm-scale-b = 1, then for the 16-bit forms imm-trans-a (SS only) and imm-trans-b.\n"
       "#pragma once\n"
       "#include <cstdint>\n"
       "\n"
       "#include \"ptx/arch.cuh\"\n"
       "\n"
       "namespace flashptx::ptx {\n";
  for (const Type16& t : kTypes16) {
    o << "\n";
    emit_16bit(o, t, ASource::kSmem);
    o << "\n";
    emit_16bit(o, t, ASource::kRegs);
  }
  o << "\n";
  emit_fp8(o, ASource::kSmem);
  o << "\n";
  emit_fp8(o, ASource::kRegs);
  o << "\n}  // namespace flashptx::ptx\n";
  return o.str();
}

}  // namespace flashptx::gen
