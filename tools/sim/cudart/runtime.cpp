// A CUDA runtime backed by the PTX simulator: the entry points nvcc 13.0's host code calls (the
// registration and launch stubs of every .cu object, and the cuda* calls of the library and the
// tests), so that the very objects nvcc built run unchanged on a CPU. One plan, two executors.
//
// The simulated device is one sm_90a GPU ("flashptx PTX simulator (sm_90a)") whose global memory
// is host memory (tools/sim/cudart/device.h). Every call runs to completion before it returns:
// streams and events are accepted and ordered trivially; an event's time is the simulator's
// busy time so far (a logical clock, not the hardware's).
//
// A kernel registered by __cudaRegisterFunction (host stub -> mangled device name) is found at
// launch by that name among the PTX modules of the build's ptx/ folder (the release flags: the
// kernels users run); its parameter block is packed from the launch's argument pointers by the
// entry's PTX parameter layout. A launch whose simulator report has findings returns
// cudaErrorLaunchFailure and prints the report on stderr (flashptx_sim_last_report keeps it).
// Anything of the CUDA runtime not implemented here is absent at link time, never a silent no-op.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "tools/sim/cudart/device.h"
#include "tools/sim/cudart/flashptx_sim.h"

namespace ptxsim::cudart {

CUresult encode_tiled(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
                      const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                      CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

constexpr const char* kDeviceName = FLASHPTX_SIM_DEVICE_NAME;
constexpr int kMaxDynamicSmemOptin = 227 * 1024;   // sharedMemPerBlockOptin of an H100/H200
constexpr int kDefaultDynamicSmem = 48 * 1024;     // without cudaFuncSetAttribute
constexpr int kSmemPerSm = 228 * 1024;
constexpr size_t kAllocAlign = 256;                // cudaMalloc's documented minimum alignment

// What this copy of the runtime holds (the device is shared: device.h).
struct Function {
  std::string name;  // mangled device name
  int max_dynamic_smem = kDefaultDynamicSmem;
};
struct Runtime {
  std::unordered_map<const void*, Function> functions;  // by host stub
  uint64_t allocations = 0;
};
static Runtime& runtime() {
  static Runtime* const r = new Runtime;  // never destroyed: the objects' atexit handlers outlive statics
  return *r;
}

struct CallConfig { dim3 grid, block; size_t smem; cudaStream_t stream; };
thread_local std::vector<CallConfig> t_configs;
thread_local cudaError_t t_last_error = cudaSuccess;

static cudaError_t fail(cudaError_t e) {
  t_last_error = e;
  return e;
}

static bool dims_ok(dim3 g, dim3 b) {
  const uint64_t threads = uint64_t(b.x) * b.y * b.z;
  return g.x >= 1 && g.y >= 1 && g.z >= 1 && g.x <= 0x7FFFFFFFu && g.y <= 65535 && g.z <= 65535 && threads >= 1 &&
         threads <= 1024 && b.z <= 64;
}

// Totals over this copy's launches (flashptx_sim_stats).
static uint64_t g_warp_instructions = 0, g_thread_instructions = 0;

static cudaError_t launch(const void* fn, dim3 grid, dim3 block, void** args, size_t smem, Dim3 cluster, bool cluster_set) {
  auto f = runtime().functions.find(fn);
  if (f == runtime().functions.end()) return fail(cudaErrorInvalidDeviceFunction);
  if (!dims_ok(grid, block)) return fail(cudaErrorInvalidConfiguration);
  if (smem > static_cast<size_t>(f->second.max_dynamic_smem)) return fail(cudaErrorInvalidValue);
  Device& d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  EntryLoc loc;
  std::string err;
  std::shared_ptr<const Module> m = d.module_of(f->second.name, &loc, &err);
  if (!m) {
    std::fprintf(stderr, "flashptx sim: %s\n", err.c_str());
    d.last_report = err;
    return fail(cudaErrorInvalidPtx);
  }
  LaunchConfig c;
  c.module = m;
  c.entry = f->second.name;
  c.grid = Dim3{grid.x, grid.y, grid.z};
  c.block = Dim3{block.x, block.y, block.z};
  c.cluster = cluster_set ? cluster : loc.cluster;
  if (c.grid.x % c.cluster.x || c.grid.y % c.cluster.y || c.grid.z % c.cluster.z) return fail(cudaErrorInvalidClusterSize);
  c.dynamic_smem = static_cast<uint32_t>(smem);
  c.params.assign(entry_param_bytes(*m, c.entry), 0);
  const std::vector<ParamInfo> params = entry_params(*m, c.entry);
  for (size_t i = 0; i < params.size(); ++i)
    std::memcpy(c.params.data() + params[i].offset, args[i], params[i].size);
  // A CTA starts with at most what the register file (64K per SM) gives each of its threads,
  // rounded down to the allocation granule of 8: below the simulator's default for blocks of more
  // than 384 threads (a 512-thread kernel starts at 128; its setmaxnreg counts are relative to that).
  const uint32_t threads = block.x * block.y * block.z;
  if (const uint32_t cap = (65536u / threads) & ~7u; cap < 168) c.regs_per_thread = cap;
  c.policy = second_copy() ? Policy::kRandom : d.policy;
  c.seed = d.seed;
  c.sms = d.sms;
  if (d.trace) {
    d.trace->begin_launch(d.launches, c.entry + " grid " + std::to_string(grid.x) + "x" + std::to_string(grid.y) + "x" +
                                          std::to_string(grid.z) + " block " + std::to_string(block.x) + " " +
                                          policy_name(c.policy) + " seed " + std::to_string(c.seed));
    c.trace = d.trace.get();
  }
  const Report r = ptxsim::launch(c, d.memory, d.maps);
  if (d.trace) d.trace->flush();
  ++d.launches;
  d.busy_seconds += r.seconds;
  g_warp_instructions += r.warp_instructions;
  g_thread_instructions += r.thread_instructions;
  if (!r.ok()) {
    d.last_report = "launch of " + c.entry + " (grid " + std::to_string(grid.x) + "x" + std::to_string(grid.y) + "x" +
                    std::to_string(grid.z) + ", block " + std::to_string(block.x) + ", " + policy_name(c.policy) +
                    " seed " + std::to_string(c.seed) + "):\n" + r.text();
    std::fprintf(stderr, "flashptx sim: %s\n", d.last_report.c_str());
    return fail(cudaErrorLaunchFailure);
  }
  return cudaSuccess;
}

struct Event { double seconds = 0; bool recorded = false; };
struct Stream { int unused = 0; };

// A stream or event is an object behind the runtime's opaque handle type H.
template <class T, class H>
cudaError_t create_handle(H* out) {
  if (out == nullptr) return fail(cudaErrorInvalidValue);
  *out = reinterpret_cast<H>(new T);
  return cudaSuccess;
}

}  // namespace ptxsim::cudart

using namespace ptxsim::cudart;

extern "C" {

// ---- registration and launch stubs (crt/host_runtime.h) ----------------------------------------
void** __cudaRegisterFatBinary(void* fat_cubin) {
  static void* handles[1];
  handles[0] = fat_cubin;
  return handles;  // the handle is only passed back; kernels are found by name, not by their cubin
}
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
char __cudaInitModule(void**) { return 1; }

void __cudaRegisterFunction(void**, const char* host_fun, char*, const char* device_name, int, uint3*, uint3*, dim3*,
                            dim3*, int*) {
  runtime().functions[host_fun] = Function{device_name};
}
// Module-scope __device__ variables live in their PTX module (the simulator gives each its storage).
void __cudaRegisterVar(void**, char*, char*, const char*, int, size_t, int, int) {}

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t smem, struct CUstream_st* stream) {
  t_configs.push_back(CallConfig{grid, block, smem, stream});
  return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* smem, void* stream) {
  if (t_configs.empty()) return fail(cudaErrorMissingConfiguration);
  const CallConfig c = t_configs.back();
  t_configs.pop_back();
  *grid = c.grid; *block = c.block; *smem = c.smem;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* fn) {
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void*>(fn));
  return cudaSuccess;
}
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t smem, cudaStream_t) {
  return launch(reinterpret_cast<const void*>(kernel), grid, block, args, smem, {}, false);
}

cudaError_t cudaLaunchKernel(const void* fn, dim3 grid, dim3 block, void** args, size_t smem, cudaStream_t) {
  return launch(fn, grid, block, args, smem, {}, false);
}
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* fn, void** args) {
  if (config == nullptr) return fail(cudaErrorInvalidValue);
  ptxsim::Dim3 cluster;
  bool cluster_set = false;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const cudaLaunchAttribute& a = config->attrs[i];
    if (a.id == cudaLaunchAttributeClusterDimension) {
      cluster = {a.val.clusterDim.x, a.val.clusterDim.y, a.val.clusterDim.z};
      cluster_set = true;
    } else if (a.id != cudaLaunchAttributeIgnore) {
      return fail(cudaErrorNotSupported);  // no other launch attribute has a meaning here
    }
  }
  return launch(fn, config->gridDim, config->blockDim, args, config->dynamicSmemBytes, cluster, cluster_set);
}

cudaError_t cudaFuncSetAttribute(const void* fn, cudaFuncAttribute attr, int value) {
  auto f = runtime().functions.find(fn);
  if (f == runtime().functions.end()) return fail(cudaErrorInvalidDeviceFunction);
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || value > kMaxDynamicSmemOptin) return fail(cudaErrorInvalidValue);
    f->second.max_dynamic_smem = value;
    return cudaSuccess;
  }
  if (attr == cudaFuncAttributePreferredSharedMemoryCarveout || attr == cudaFuncAttributeNonPortableClusterSizeAllowed ||
      attr == cudaFuncAttributeRequiredClusterWidth)
    return cudaSuccess;  // no effect on the simulator
  return fail(cudaErrorNotSupported);
}
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* fn) {
  auto f = runtime().functions.find(fn);
  if (attr == nullptr) return fail(cudaErrorInvalidValue);
  if (f == runtime().functions.end()) return fail(cudaErrorInvalidDeviceFunction);
  *attr = cudaFuncAttributes{};
  attr->maxThreadsPerBlock = 1024;
  attr->maxDynamicSharedSizeBytes = f->second.max_dynamic_smem;
  attr->ptxVersion = 90;
  attr->binaryVersion = 90;
  attr->numRegs = 0;           // a PTX program has no allocated registers (ptxas's count is the SASS's)
  attr->sharedSizeBytes = 0;   // static .shared is part of the module; the simulator sizes it
  return cudaSuccess;
}

// ---- memory --------------------------------------------------------------------------------------
cudaError_t cudaMalloc(void** p, size_t bytes) {
  if (p == nullptr) return fail(cudaErrorInvalidValue);
  *p = nullptr;
  if (bytes == 0) return cudaSuccess;
  const size_t rounded = (bytes + kAllocAlign - 1) / kAllocAlign * kAllocAlign;
  void* q = std::aligned_alloc(kAllocAlign, rounded);
  if (q == nullptr) return fail(cudaErrorMemoryAllocation);
  std::memset(q, 0xA5, rounded);  // not zero: a kernel that reads what nobody wrote sees garbage
  Device& d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  d.add(q, bytes, true, "cudaMalloc #" + std::to_string(++runtime().allocations) + " (" + std::to_string(bytes) + " bytes)");
  *p = q;
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  if (p == nullptr) return cudaSuccess;
  Device& d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  if (!d.remove(p, true)) return fail(cudaErrorInvalidValue);
  std::free(p);
  return cudaSuccess;
}

// Device-side ranges of a copy must be memory the device knows.
static bool known(const void* p, size_t n) {
  Device& d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  return n == 0 || d.find(p, n) != nullptr;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  if (n == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return fail(cudaErrorInvalidValue);
  const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind != cudaMemcpyDefault && kind != cudaMemcpyHostToHost && !dst_dev && !src_dev) return fail(cudaErrorInvalidMemcpyDirection);
  if ((dst_dev && !known(dst, n)) || (src_dev && !known(src, n))) return fail(cudaErrorInvalidValue);
  std::memmove(dst, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy(dst, src, n, kind);
}
cudaError_t cudaMemset(void* p, int value, size_t n) {
  if (n == 0) return cudaSuccess;
  if (!known(p, n)) return fail(cudaErrorInvalidValue);
  std::memset(p, value, n);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t) { return cudaMemset(p, value, n); }

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  if (a == nullptr) return fail(cudaErrorInvalidValue);
  *a = cudaPointerAttributes{};
  Device& d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  const Range* r = d.find(p, 1);
  a->type = r == nullptr ? cudaMemoryTypeUnregistered : r->allocated ? cudaMemoryTypeDevice : cudaMemoryTypeHost;
  a->device = 0;
  if (r != nullptr) { a->devicePointer = const_cast<void*>(p); a->hostPointer = const_cast<void*>(p); }
  return cudaSuccess;
}

// ---- device --------------------------------------------------------------------------------------
// *out = value, for the queries of one number.
static cudaError_t answer(int* out, int value) {
  if (out == nullptr) return fail(cudaErrorInvalidValue);
  *out = value;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int* n) { return answer(n, 1); }
cudaError_t cudaGetDevice(int* dev) { return answer(dev, 0); }
cudaError_t cudaSetDevice(int dev) { return dev == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice); }
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int dev) {
  if (p == nullptr) return fail(cudaErrorInvalidValue);
  if (dev != 0) return fail(cudaErrorInvalidDevice);
  *p = cudaDeviceProp{};
  std::snprintf(p->name, sizeof(p->name), "%s", kDeviceName);
  p->major = device().cc / 10;
  p->minor = device().cc % 10;
  p->multiProcessorCount = device().sms;
  p->totalGlobalMem = size_t(16) << 30;
  p->sharedMemPerBlock = kDefaultDynamicSmem;
  p->sharedMemPerBlockOptin = kMaxDynamicSmemOptin;
  p->sharedMemPerMultiprocessor = kSmemPerSm;
  p->reservedSharedMemPerBlock = 1024;
  p->regsPerBlock = 65536;
  p->regsPerMultiprocessor = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsPerMultiProcessor = 2048;
  p->maxBlocksPerMultiProcessor = 32;
  p->maxThreadsDim[0] = 1024; p->maxThreadsDim[1] = 1024; p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7FFFFFFF; p->maxGridSize[1] = 65535; p->maxGridSize[2] = 65535;
  p->clusterLaunch = 1;
  p->unifiedAddressing = 1;
  p->l2CacheSize = 50 << 20;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr attr, int dev) {
  if (v == nullptr) return fail(cudaErrorInvalidValue);
  if (dev != 0) return fail(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrComputeCapabilityMajor: *v = device().cc / 10; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor: *v = device().cc % 10; return cudaSuccess;
    case cudaDevAttrMultiProcessorCount: *v = device().sms; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = kMaxDynamicSmemOptin; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = kDefaultDynamicSmem; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = kSmemPerSm; return cudaSuccess;
    case cudaDevAttrMaxThreadsPerBlock: *v = 1024; return cudaSuccess;
    case cudaDevAttrWarpSize: *v = 32; return cudaSuccess;
    case cudaDevAttrClusterLaunch: *v = 1; return cudaSuccess;
    default: return fail(cudaErrorNotSupported);
  }
}
cudaError_t cudaDriverGetVersion(int* v) { return answer(v, CUDART_VERSION); }
cudaError_t cudaRuntimeGetVersion(int* v) { return answer(v, CUDART_VERSION); }

// The driver entry points the library asks for: cuTensorMapEncodeTiled only (tools/sim/cudart/encode.cpp).
cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int version, unsigned long long,
                                             cudaDriverEntryPointQueryResult* status) {
  if (symbol == nullptr || fn == nullptr) return fail(cudaErrorInvalidValue);
  *fn = nullptr;
  const bool found = std::strcmp(symbol, "cuTensorMapEncodeTiled") == 0 && version >= 12000;
  if (found) *fn = reinterpret_cast<void*>(&encode_tiled);
  if (status) *status = found ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}
cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned long long flags,
                                    cudaDriverEntryPointQueryResult* status) {
  return cudaGetDriverEntryPointByVersion(symbol, fn, CUDART_VERSION, flags, status);
}

// ---- errors --------------------------------------------------------------------------------------
cudaError_t cudaGetLastError() {
  const cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return t_last_error; }

struct ErrorText { cudaError_t e; const char* name; const char* text; };
static const ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorMissingConfiguration, "cudaErrorMissingConfiguration", "__global__ function call is not configured"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorInvalidPtx, "cudaErrorInvalidPtx",
     "the kernel's PTX could not be found or loaded by the simulator (see flashptx_sim_last_report)"},
    {cudaErrorInvalidClusterSize, "cudaErrorInvalidClusterSize", "invalid cluster size"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported by the PTX simulator's runtime"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure",
     "unspecified launch failure (the PTX simulator reported findings: see stderr or flashptx_sim_last_report)"},
};
const char* cudaGetErrorString(cudaError_t e) {
  for (const ErrorText& t : kErrors)
    if (t.e == e) return t.text;
  return "unrecognized error code";
}
const char* cudaGetErrorName(cudaError_t e) {
  for (const ErrorText& t : kErrors)
    if (t.e == e) return t.name;
  return "cudaErrorUnknown";
}

// ---- streams and events --------------------------------------------------------------------------
cudaError_t cudaStreamCreate(cudaStream_t* s) { return create_handle<Stream>(s); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) { return create_handle<Stream>(s); }
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete reinterpret_cast<Stream*>(s);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }

cudaError_t cudaEventCreate(cudaEvent_t* e) { return create_handle<Event>(e); }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) { return create_handle<Event>(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete reinterpret_cast<Event*>(e);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
  Device& d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  *reinterpret_cast<Event*>(e) = Event{d.busy_seconds, true};
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) { return e ? cudaSuccess : fail(cudaErrorInvalidResourceHandle); }
cudaError_t cudaEventQuery(cudaEvent_t e) { return e ? cudaSuccess : fail(cudaErrorInvalidResourceHandle); }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  if (ms == nullptr || a == nullptr || b == nullptr) return fail(cudaErrorInvalidValue);
  const Event& x = *reinterpret_cast<Event*>(a);
  const Event& y = *reinterpret_cast<Event*>(b);
  if (!x.recorded || !y.recorded) return fail(cudaErrorInvalidResourceHandle);
  *ms = static_cast<float>((y.seconds - x.seconds) * 1e3);
  return cudaSuccess;
}

// ---- flashptx_sim.h ----------------------------------------------------------------------------------
int flashptx_sim_register(const void* p, size_t bytes) {
  Device& d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  return d.add(p, bytes, false, "flashptx_sim_register (" + std::to_string(bytes) + " bytes)") ? 0 : -1;
}
int flashptx_sim_unregister(const void* p) {
  Device& d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  return d.remove(p, false) ? 0 : -1;
}
int flashptx_sim_configure(const char* policy, uint64_t seed, int sms) {
  Device& d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  if (policy != nullptr && !parse_policy(policy, &d.policy)) return -1;
  d.seed = seed;
  if (sms > 0) d.sms = sms;
  return 0;
}
int flashptx_sim_trace(const char* path) {
  Device& d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  d.trace.reset();
  if (path == nullptr || *path == 0) return 0;
  std::FILE* f = std::fopen(path, "w");
  if (f == nullptr) return -1;
  d.trace = std::make_unique<FileTrace>(f);
  return 0;
}
const char* flashptx_sim_last_report() { return device().last_report.c_str(); }
uint64_t flashptx_sim_launches() { return device().launches; }
void flashptx_sim_stats(uint64_t* warp_instructions, uint64_t* thread_instructions, double* seconds) {
  Device& d = device();
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  if (warp_instructions != nullptr) *warp_instructions = g_warp_instructions;
  if (thread_instructions != nullptr) *thread_instructions = g_thread_instructions;
  if (seconds != nullptr) *seconds = d.busy_seconds;
}

}  // extern "C"
