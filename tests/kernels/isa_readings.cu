// Device side of tests/gpu/test_isa_readings.cpp, the forms the simulator's core executes (the others:
// isa_readings_library.cu, a module of its own so that the simulator loads this one): one PTX instruction form per probe, on inputs the
// host passes in memory (so that nothing is folded at compile time), each result's bits stored.
// The forms are written out here as raw PTX on purpose: what is probed is the instruction, not a
// wrapper of ptx/. Which reading each probe checks: tests/gpu/test_isa_readings.cpp.
#include "tests/kernels/isa_readings.h"

namespace flashptx_test::readings {
// A named namespace (see exp2_emulation_kernels.cu: an anonymous one puts the build path into the
// mangled names the golden audit reads).
namespace kernels {

__device__ __forceinline__ float f(uint32_t u) { return __uint_as_float(u); }

// cvt to a 16-bit type of one f32: the 16 bits, zero-extended.
__device__ __forceinline__ uint32_t cvt_rn_bf16_f32(uint32_t a) {
  uint32_t d;
  asm volatile("{\n\t.reg .b16 h;\n\tcvt.rn.bf16.f32 h, %1;\n\tcvt.u32.u16 %0, h;\n\t}" : "=r"(d) : "f"(f(a)));
  return d;
}
__device__ __forceinline__ uint32_t cvt_rn_f16_f32(uint32_t a) {
  uint32_t d;
  asm volatile("{\n\t.reg .b16 h;\n\tcvt.rn.f16.f32 h, %1;\n\tcvt.u32.u16 %0, h;\n\t}" : "=r"(d) : "f"(f(a)));
  return d;
}
__device__ __forceinline__ uint32_t cvt_rn_satfinite_e4m3x2_f32(uint32_t a, uint32_t b) {
  uint32_t d;
  asm volatile("{\n\t.reg .b16 h;\n\tcvt.rn.satfinite.e4m3x2.f32 h, %1, %2;\n\tcvt.u32.u16 %0, h;\n\t}"
               : "=r"(d) : "f"(f(a)), "f"(f(b)));
  return d;
}
__device__ __forceinline__ uint32_t cvt_rn_satfinite_e5m2x2_f32(uint32_t a, uint32_t b) {
  uint32_t d;
  asm volatile("{\n\t.reg .b16 h;\n\tcvt.rn.satfinite.e5m2x2.f32 h, %1, %2;\n\tcvt.u32.u16 %0, h;\n\t}"
               : "=r"(d) : "f"(f(a)), "f"(f(b)));
  return d;
}
__device__ __forceinline__ uint32_t cvt_rn_bf16x2_f32(uint32_t a, uint32_t b) {
  uint32_t d;
  asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(f(a)), "f"(f(b)));
  return d;
}
__device__ __forceinline__ uint32_t cvt_rn_f16x2_f32(uint32_t a, uint32_t b) {
  uint32_t d;
  asm volatile("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(f(a)), "f"(f(b)));
  return d;
}
__device__ __forceinline__ uint32_t add_sat_f32(uint32_t a, uint32_t b) {
  float d;
  asm volatile("add.sat.f32 %0, %1, %2;" : "=f"(d) : "f"(f(a)), "f"(f(b)));
  return __float_as_uint(d);
}
__device__ __forceinline__ uint32_t add_rm_f32(uint32_t a, uint32_t b) {
  float d;
  asm volatile("add.rm.f32 %0, %1, %2;" : "=f"(d) : "f"(f(a)), "f"(f(b)));
  return __float_as_uint(d);
}
__device__ __forceinline__ uint32_t add_rn_f32(uint32_t a, uint32_t b) {
  float d;
  asm volatile("add.rn.f32 %0, %1, %2;" : "=f"(d) : "f"(f(a)), "f"(f(b)));
  return __float_as_uint(d);
}
__device__ __forceinline__ uint32_t ex2_approx_f32(uint32_t a) {
  float d;
  asm volatile("ex2.approx.f32 %0, %1;" : "=f"(d) : "f"(f(a)));
  return __float_as_uint(d);
}
__device__ __forceinline__ uint32_t ex2_approx_ftz_f32(uint32_t a) {
  float d;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(d) : "f"(f(a)));
  return __float_as_uint(d);
}
__device__ __forceinline__ uint32_t rcp_approx_f32(uint32_t a) {
  float d;
  asm volatile("rcp.approx.f32 %0, %1;" : "=f"(d) : "f"(f(a)));
  return __float_as_uint(d);
}
__device__ __forceinline__ uint32_t cvt_rzi_s32_f32(uint32_t a) {
  int32_t d;
  asm volatile("cvt.rzi.s32.f32 %0, %1;" : "=r"(d) : "f"(f(a)));
  return static_cast<uint32_t>(d);
}
__device__ __forceinline__ uint32_t cvt_rzi_u32_f32(uint32_t a) {
  uint32_t d;
  asm volatile("cvt.rzi.u32.f32 %0, %1;" : "=r"(d) : "f"(f(a)));
  return d;
}
__device__ __forceinline__ uint32_t div_s32(uint32_t a, uint32_t b) {
  int32_t d;
  asm volatile("div.s32 %0, %1, %2;" : "=r"(d) : "r"(static_cast<int32_t>(a)), "r"(static_cast<int32_t>(b)));
  return static_cast<uint32_t>(d);
}
__device__ __forceinline__ uint32_t rem_s32(uint32_t a, uint32_t b) {
  int32_t d;
  asm volatile("rem.s32 %0, %1, %2;" : "=r"(d) : "r"(static_cast<int32_t>(a)), "r"(static_cast<int32_t>(b)));
  return static_cast<uint32_t>(d);
}
// elect.sync among the lanes of `mask` (called by those lanes only): the elected lane.
__device__ __forceinline__ uint32_t elect_sync_lane(uint32_t mask) {
  uint32_t lane;
  asm volatile("{\n\t.reg .pred p;\n\telect.sync %0|p, %1;\n\t}" : "=r"(lane) : "r"(mask));
  return lane;
}

// The probe inputs, in[k] (set by the host, tests/gpu/test_isa_readings.cpp):
//   0 +NaN 0x7fc00001   1 -NaN 0xffc00000   2 1.0   3 -1.0   4 -0.0   5 3e9   6 -3e9   7 -130.0
//   8 -149.0   9 0x03020100   10 0x07060504   11 0   12 1   13 32   14 bf16 0x3f81   15 bf16 0xbf82
//   16 0x7f7fffff (FLT_MAX)   17 7   18 500.0   19 -500.0   20 +inf   21 -inf
// Forms the simulator's core executes (the library's kernels use them, or their close kin).
__global__ void core_probes_kernel(const uint32_t* __restrict__ in, uint32_t* __restrict__ out) {
  const uint32_t lane = threadIdx.x;
  if (lane == 0) {
    out[0] = cvt_rn_bf16_f32(in[0]);
    out[1] = cvt_rn_bf16_f32(in[1]);
    out[2] = cvt_rn_f16_f32(in[0]);
    out[3] = cvt_rn_f16_f32(in[1]);
    out[4] = cvt_rn_satfinite_e4m3x2_f32(in[0], in[1]);
    out[5] = cvt_rn_satfinite_e5m2x2_f32(in[0], in[1]);
    out[7] = add_sat_f32(in[0], in[2]);
    out[8] = add_sat_f32(in[4], in[4]);
    out[9] = ex2_approx_f32(in[7]);
    out[10] = ex2_approx_f32(in[8]);
    out[11] = add_rm_f32(in[2], in[3]);
    out[12] = add_rn_f32(in[2], in[3]);
    out[13] = cvt_rzi_s32_f32(in[5]);
    out[14] = cvt_rzi_s32_f32(in[6]);
    out[15] = cvt_rzi_s32_f32(in[0]);
    out[16] = cvt_rzi_u32_f32(in[3]);
    out[26] = div_s32(in[17], in[11]);
    out[27] = rem_s32(in[17], in[11]);
    out[34] = cvt_rn_f16x2_f32(in[0], in[1]);
    out[35] = cvt_rn_bf16x2_f32(in[0], in[1]);
    out[36] = cvt_rn_satfinite_e4m3x2_f32(in[18], in[19]);
    out[37] = cvt_rn_satfinite_e4m3x2_f32(in[20], in[21]);
    out[38] = ex2_approx_ftz_f32(in[7]);
    out[39] = rcp_approx_f32(in[4]);
  }
  __syncwarp();
  // elect.sync with partial member masks (out[22], out[23]): every member stores the same lane.
  const uint32_t upper = 0xFFFF0000u, ends = 0x80000001u;
  if ((upper >> lane) & 1u) {
    const uint32_t e = elect_sync_lane(upper);
    if (lane == 31) out[22] = e;
  }
  __syncwarp();
  if ((ends >> lane) & 1u) {
    const uint32_t e = elect_sync_lane(ends);
    if (lane == 31) out[23] = e;
  }
}

// rcp.approx.f32, ex2.approx.f32, ex2.approx.ftz.f32 of x[i] (out[3 * i + f]).
__global__ void approx_sweep_kernel(const float* __restrict__ x, uint32_t* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint32_t a = __float_as_uint(x[i]);
  out[3 * i + 0] = rcp_approx_f32(a);
  out[3 * i + 1] = ex2_approx_f32(a);
  out[3 * i + 2] = ex2_approx_ftz_f32(a);
}

}  // namespace kernels

cudaError_t launch_core_probes(const uint32_t* in, uint32_t* out) {
  kernels::core_probes_kernel<<<1, 32>>>(in, out);
  return cudaGetLastError();
}

constexpr int kThreads = 256;
cudaError_t launch_approx_sweep(const float* x, uint32_t* out, int n) {
  kernels::approx_sweep_kernel<<<(n + kThreads - 1) / kThreads, kThreads>>>(x, out, n);
  return cudaGetLastError();
}

}  // namespace flashptx_test::readings
