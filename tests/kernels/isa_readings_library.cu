// Device side of tests/gpu/test_isa_readings.cpp, the forms no library kernel issues and only the
// simulator's ISA library models (tools/sim/isa/; the simulator's core refuses to load this module,
// naming each form: it runs on a GPU only). One PTX instruction form per probe, inputs from memory.
#include "tests/kernels/isa_readings.h"

namespace flashptx_test::readings {
namespace kernels {

__device__ __forceinline__ float f(uint32_t u) { return __uint_as_float(u); }

__device__ __forceinline__ uint32_t cvt_rn_relu_bf16x2_f32(uint32_t a, uint32_t b) {
  uint32_t d;
  asm volatile("cvt.rn.relu.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(f(a)), "f"(f(b)));
  return d;
}
__device__ __forceinline__ uint32_t szext_wrap_s32(uint32_t a, uint32_t b) {
  uint32_t d;
  asm volatile("szext.wrap.s32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ uint32_t bmsk_wrap_b32(uint32_t a, uint32_t b) {
  uint32_t d;
  asm volatile("bmsk.wrap.b32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
// sub.cc then subc in one block: the carry flag lives between them only.
__device__ __forceinline__ void sub_cc_subc(uint32_t a, uint32_t b, uint32_t c, uint32_t* d0, uint32_t* d1) {
  asm volatile("sub.cc.u32 %0, %2, %3;\n\tsubc.u32 %1, %4, %4;" : "=r"(*d0), "=r"(*d1) : "r"(a), "r"(b), "r"(c));
}
__device__ __forceinline__ uint32_t fma_rn_bf16(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm volatile("{\n\t.reg .b16 ha, hb, hc, hd, hx;\n\tmov.b32 {ha, hx}, %1;\n\tmov.b32 {hb, hx}, %2;\n\t"
               "mov.b32 {hc, hx}, %3;\n\tfma.rn.bf16 hd, ha, hb, hc;\n\tcvt.u32.u16 %0, hd;\n\t}"
               : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ __forceinline__ uint32_t cvt_rna_tf32_f32(uint32_t a) {
  uint32_t d;
  asm volatile("cvt.rna.tf32.f32 %0, %1;" : "=r"(d) : "f"(f(a)));
  return d;
}
__device__ __forceinline__ uint32_t lg2_approx_f32(uint32_t a) {
  float d;
  asm volatile("lg2.approx.f32 %0, %1;" : "=f"(d) : "f"(f(a)));
  return __float_as_uint(d);
}
#define PRMT_MODE(NAME, MODE)                                                                     \
  __device__ __forceinline__ uint32_t prmt_##NAME(uint32_t a, uint32_t b, uint32_t c) {           \
    uint32_t d;                                                                                   \
    asm volatile("prmt.b32." MODE " %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));        \
    return d;                                                                                     \
  }
PRMT_MODE(f4e, "f4e")
PRMT_MODE(b4e, "b4e")
PRMT_MODE(rc8, "rc8")
PRMT_MODE(ecl, "ecl")
PRMT_MODE(ecr, "ecr")
PRMT_MODE(rc16, "rc16")
#undef PRMT_MODE

// Forms no library kernel issues, which only the simulator's ISA library models (tools/sim/isa/,
// its unit tests in tests/sim/test_sim_isa_*.cpp): the hardware checks the readings it implements.
__global__ void library_probes_kernel(const uint32_t* __restrict__ in, uint32_t* __restrict__ out) {
  if (threadIdx.x != 0) return;
  out[6] = cvt_rn_relu_bf16x2_f32(in[4], in[0]);
  out[17] = szext_wrap_s32(in[9], in[13]);
  out[18] = bmsk_wrap_b32(in[11], in[13]);
  sub_cc_subc(in[11], in[12], in[11], &out[19], &out[20]);
  out[21] = fma_rn_bf16(in[14], in[14], in[15]);
  out[24] = cvt_rna_tf32_f32(in[0]);
  out[25] = cvt_rna_tf32_f32(in[16]);
  out[28] = prmt_f4e(in[9], in[10], in[12]);
  out[29] = prmt_b4e(in[9], in[10], in[12]);
  out[30] = prmt_rc8(in[9], in[10], in[12]);
  out[31] = prmt_ecl(in[9], in[10], in[12]);
  out[32] = prmt_ecr(in[9], in[10], in[12]);
  out[33] = prmt_rc16(in[9], in[10], in[12]);
}

// lg2.approx.f32 of x[i] (a form only the ISA library models).
__global__ void lg2_sweep_kernel(const float* __restrict__ x, uint32_t* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = lg2_approx_f32(__float_as_uint(x[i]));
}

}  // namespace kernels

cudaError_t launch_library_probes(const uint32_t* in, uint32_t* out) {
  kernels::library_probes_kernel<<<1, 32>>>(in, out);
  return cudaGetLastError();
}

constexpr int kThreads = 256;
cudaError_t launch_lg2_sweep(const float* x, uint32_t* out, int n) {
  kernels::lg2_sweep_kernel<<<(n + kThreads - 1) / kThreads, kThreads>>>(x, out, n);
  return cudaGetLastError();
}

}  // namespace flashptx_test::readings
