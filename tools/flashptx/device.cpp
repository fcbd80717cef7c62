// The GPU the commands run on: see device.h.
#include "tools/flashptx/device.h"

#include "src/plan.h"

namespace flashptx::cli {

std::string no_gpu_reason(cudaError_t e, int count, int driver_version, int runtime_version) {
  return flashptx::no_gpu_reason(e, count, driver_version, runtime_version);  // the library's wording
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
