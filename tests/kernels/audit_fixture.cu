// A tiny sm_90a kernel that exists to give the golden-SASS audit something to audit: one mbarrier
// initialised by thread 0, a named barrier `bar.sync 1, 128` making the init visible to the first
// warpgroup, then each of its threads arrives once and waits for the phase (parity 0) to complete.
// Its golden (sass_golden/sm_90a/flashptx_audit_fixture.sass) and order check (.check) pin:
// SYNCS.EXCH.64 (init) before BAR.SYNC 1, 128, before SYNCS.ARRIVE, before the TRYWAIT.
// The plain (unbounded) wait is used on purpose, also in the test flavour: the bounded wait's
// printf would give the kernel a stack frame, which the audit rejects.
#include <cstdint>

#include "ptx/mbarrier.cuh"

extern "C" __global__ void flashptx_audit_fixture(int* out) {
  __shared__ alignas(8) uint64_t bar;
  const uint32_t b = flashptx::ptx::smem_u32(&bar);
  if (threadIdx.x == 0) flashptx::ptx::mbarrier_init(b, 128);
  asm volatile("bar.sync 1, 128;" ::: "memory");
  if (threadIdx.x < 128) {
    flashptx::ptx::mbarrier_arrive(b);
    flashptx::ptx::mbarrier_wait(b, 0);
    out[threadIdx.x] = 1;
  }
}
