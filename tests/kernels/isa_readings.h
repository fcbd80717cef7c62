// Probes of the PTX ISA readings the simulator lists for cross-validation on hardware
// (tools/sim/READINGS.md, tools/sim/isa/READINGS.md): each probe executes one instruction form on
// inputs where the ISA is silent or unclear, and the test (tests/gpu/test_isa_readings.cpp) states
// the simulator's reading as the expectation. On the H200 a failure refutes a reading; in the
// simulator the same test shows the simulator holds its own reading.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace flashptx_test::readings {

// One warp each: out[k] is probe k's result bits (indices shared by the two kernels, each writing
// its own). Core: forms the simulator's core executes; library: forms only its ISA library models.
constexpr int kProbes = 40;
cudaError_t launch_core_probes(const uint32_t* in, uint32_t* out);
cudaError_t launch_library_probes(const uint32_t* in, uint32_t* out);

// rcp.approx.f32, ex2.approx.f32 and ex2.approx.ftz.f32 of x[i]: out[3 * i + f] (n inputs).
cudaError_t launch_approx_sweep(const float* x, uint32_t* out, int n);
// lg2.approx.f32 of x[i]: out[i].
cudaError_t launch_lg2_sweep(const float* x, uint32_t* out, int n);

}  // namespace flashptx_test::readings
