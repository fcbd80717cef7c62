/* A program of a flashptx user, built against an installed tree (tests/host/test_install.cpp): as C
 * through pkg-config, and as C++ through CMake's find_package (CMakeLists.txt). It prints the
 * library's version, then asks for a forward:
 *   no usable GPU: flashptx_fwd must answer FLASHPTX_ERR_UNSUPPORTED_DEVICE with a message (exit 0);
 *   a GPU that runs it: kernel_info names the kernel, and a forward of batch 0 (nothing to compute,
 *   no launch on the placeholder pointers) answers FLASHPTX_OK (exit 0).
 * Anything else exits 1. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "flashptx.h"

int main(void) {
  printf("flashptx %s (%d)\n", flashptx_version(), flashptx_version_number());
  /* 16-byte aligned, never dereferenced: without a GPU nothing launches, with one batch is 0. */
  void* placeholder = (void*)(uintptr_t)(1u << 20);
  flashptx_fwd_params p;
  flashptx_fwd_params_contiguous(&p, placeholder, placeholder, placeholder, placeholder, NULL, 1, 128, 128, 4, 4,
                                 128, FLASHPTX_BF16, 0);
  flashptx_kernel_info info;
  if (flashptx_fwd_kernel_info(&p, &info) == FLASHPTX_OK) {
    printf("this device runs %s\n", info.symbol);
    p.batch = 0;
    const flashptx_status s = flashptx_fwd(&p, (cudaStream_t)0);
    printf("forward of batch 0: %s\n", flashptx_status_name(s));
    return s == FLASHPTX_OK ? 0 : 1;
  }
  const flashptx_status s = flashptx_fwd(&p, (cudaStream_t)0);
  printf("forward: %s\n", flashptx_last_error());
  return s == FLASHPTX_ERR_UNSUPPORTED_DEVICE && strlen(flashptx_last_error()) > 0 ? 0 : 1;
}
