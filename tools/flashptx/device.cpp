// The GPU the commands run on: see device.h.
#include "tools/flashptx/device.h"

namespace flashptx::cli {

namespace {
std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }
}  // namespace

std::string no_gpu_reason(cudaError_t e, int count, int driver_version, int runtime_version) {
  if (driver_version == 0)
    return "no NVIDIA driver found (libcuda.so.1 is not installed or cannot be loaded), so no GPU to run on";
  if (e == cudaErrorInsufficientDriver)
    return "the NVIDIA driver supports CUDA " + cuda_version(driver_version) + ", older than the CUDA " +
           cuda_version(runtime_version) + " runtime of this build: update the driver";
  if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0))
    return "no NVIDIA GPU found (the driver is installed but sees no device)";
  return std::string("the CUDA runtime cannot use the GPU: ") + cudaGetErrorString(e);
}

Gpu probe_gpu() {
  Gpu g;
  int n = 0, drv = 0, rt = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    cudaGetLastError();
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    g.why = no_gpu_reason(e, n, drv, rt);
    return g;
  }
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
    cudaGetLastError();
    g.why = "cannot read the properties of device 0";
    return g;
  }
  g.cc = p.major * 10 + p.minor;
  g.name = p.name;
  g.hopper = g.cc == 90;
  if (!g.hopper)
    g.why = "device 0 is " + g.name + " (sm_" + std::to_string(g.cc) +
            "); the kernels of this build run on Hopper (sm_90) only";
  return g;
}

}  // namespace flashptx::cli
