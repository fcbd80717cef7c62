// The GPU the commands run on, asked once, and why there is none in plain words. The CUDA runtime
// answers "CUDA driver version is insufficient for CUDA runtime version" both when the driver is
// too old and when there is no driver at all; this says which.
#pragma once
#include <cuda_runtime_api.h>

#include <string>

namespace flashptx::cli {

struct Gpu {
  bool hopper = false;   // device 0 is sm_90: the kernels of this build run on it
  int cc = 0;            // major * 10 + minor of device 0; 0 when there is none
  std::string name;      // device 0's name
  std::string why;       // when !hopper: one line saying what is missing
};

// Device 0 (cudaGetDeviceCount, cudaDriverGetVersion, the device's properties).
Gpu probe_gpu();

// The line for a failed probe, from what the runtime said: `e` from cudaGetDeviceCount, `count`
// devices, `driver_version` from cudaDriverGetVersion (0 when no driver is loaded), `runtime_version`
// from cudaRuntimeGetVersion. Pure, so the wording is tested on any machine.
std::string no_gpu_reason(cudaError_t e, int count, int driver_version, int runtime_version);

}  // namespace flashptx::cli
