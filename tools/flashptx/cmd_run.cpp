// `flashptx` with no arguments (or `flashptx run [bench options]`): the main job.
// With a Hopper GPU: the flagship FA3 forward (bf16, head dim 128, batch 2 x seqlen 8192 x 16 heads
// unless options say otherwise), its error against the fp64 reference on sampled rows and against
// the GPU reference on every element, and its TFLOP/s (the `flashptx bench` path, one shape).
// Without one: says so, and prints the audit summary of the built kernels.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tools/flashptx/commands.h"

int cmd_run(int argc, char** argv) {
  int n = 0, major = 0, minor = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaSuccess && n > 0) {
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
  } else {
    cudaGetLastError();
  }
  if (major == 9 && minor == 0) {
    std::vector<std::string> args = {"--batch", "2", "--seqlen", "8192", "--heads", "16", "--hdim", "128",
                                     "--dtype", "bf16", "--out", "flashptx-run.json"};
    for (int i = 0; i < argc; ++i) args.push_back(argv[i]);
    std::vector<char*> av;
    for (std::string& s : args) av.push_back(&s[0]);
    std::printf("flashptx: flagship FA3 forward on the Hopper GPU (use `flashptx bench --help` for shapes)\n");
    return cmd_bench(static_cast<int>(av.size()), av.data());
  }
  if (e != cudaSuccess || n == 0)
    std::printf("flashptx: no CUDA device here (%s); the kernels are compiled and audited, not run.\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "no device");
  else
    std::printf("flashptx: device 0 is sm_%d%d, not Hopper sm_90: the forward kernels do not run on it.\n", major,
                minor);
  std::printf("Audit summary of the built kernels (flashptx audit for the full check):\n\n");
  return print_audit_summary();
}
