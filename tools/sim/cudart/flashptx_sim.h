/* flashptx on the PTX simulator: what libflashptx_sim.so exports beside the C ABI of
   include/flashptx.h (issue 31, "The same C ABI on a CPU").

   libflashptx_sim.so is the release library's own objects linked with a fake CUDA runtime
   (tools/sim/cudart/) that executes every launch in the simulator (tools/sim/sim.h) on host
   memory. A kernel may touch only memory the simulated device knows: buffers from the fake
   cudaMalloc, and ranges registered here. Any other address a kernel reaches is a finding of the
   simulator, and the call that launched it returns FLASHPTX_ERR_CUDA (cudaErrorLaunchFailure)
   with the report on stderr and in flashptx_sim_last_report(). Streams are accepted and run in
   order: every call has finished when it returns.

   Never the shipped library: built into build/ only. */
#ifndef FLASHPTX_SIM_H
#define FLASHPTX_SIM_H

#include <stddef.h>
#include <stdint.h>

/* The name cudaGetDeviceProperties gives the simulated device: how a program tells it is on the
   simulator. */
#define FLASHPTX_SIM_DEVICE_NAME "flashptx PTX simulator (sm_90a)"

#ifdef __cplusplus
extern "C" {
#endif

/* Makes [ptr, ptr + bytes) global memory of the simulated device. Returns 0, or -1 when ptr is
   NULL, bytes is 0, or the range overlaps one already known (nothing is changed then). */
int flashptx_sim_register(const void* ptr, size_t bytes);
/* Forgets the range registered at ptr. Returns 0, or -1 when no range was registered there
   (a cudaMalloc'd buffer is released by cudaFree, not here). */
int flashptx_sim_unregister(const void* ptr);

/* How launches are scheduled from now on: policy is one of "round-robin", "random",
   "starve-producer", "consumers-first", "delay-one-warpgroup" (NULL keeps the current one);
   seed the scheduler's seed; sms the simulated SM count (CTAs resident at once, and what
   cudaDeviceGetAttribute reports), 0 keeping the current one. Returns 0, or -1 for an unknown
   policy. The defaults come from $FLASHPTX_SIM_POLICY, $FLASHPTX_SIM_SEED, $FLASHPTX_SIM_SMS. */
int flashptx_sim_configure(const char* policy, uint64_t seed, int sms);

/* Writes the event log of every launch from now on to the file at path (created or truncated):
   one line per event, "clock cta warp event what", on a logical clock of scheduler steps that
   continues across launches; the events are the simulator's TMA copies issued and landed, wgmma
   groups committed and retired (and each wgmma issued), mbarrier phases completed, waits
   suspended and resumed, named barriers completed (tools/sim/sim.h, TraceEvent). NULL or "" stops
   tracing and closes the file. Returns 0, or -1 when the file cannot be opened (tracing is then off).
   `flashptx sim --trace FILE` renders it (tools/support/trace_render.h, sim_timeline). */
int flashptx_sim_trace(const char* path);

/* The simulator's report of the last launch that had findings ("" when none had), and the
   number of launches executed so far. */
const char* flashptx_sim_last_report(void);

/* For mutation tests (tests/sim/test_sim_mutations.cpp): launches of every entry of the PTX module
   that holds `entry` run ptx_text (a whole module, e.g. that module's text edited) from now on;
   ptx_text NULL restores the module's file. Returns 0, or -1 when no module holds entry or
   ptx_text does not load (flashptx_sim_last_report() says why). The cluster shapes stay the
   file's. */
int flashptx_sim_override_ptx(const char* entry, const char* ptx_text);
uint64_t flashptx_sim_launches(void);

/* The simulator's work so far (any argument may be NULL): warp instructions and thread
   instructions executed by this library's launches, and the seconds the simulator spent in
   launches (every launch of the process's simulated device). For `flashptx sim`'s speed line. */
void flashptx_sim_stats(uint64_t* warp_instructions, uint64_t* thread_instructions, double* seconds);

#ifdef __cplusplus
}
#endif

#endif /* FLASHPTX_SIM_H */
