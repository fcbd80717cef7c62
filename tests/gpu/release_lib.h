// The release flavour of the library, loaded beside the test flavour.
//
// ./run_tests links the test flavour (bounded mbarrier waits that trap with the barrier's name, so
// a protocol bug fails instead of hanging). Users link the release flavour (plain try_wait loops).
// The only difference between the two is the wait loop, so on the same inputs their outputs must
// be equal bit for bit: the GPU suites run each problem through both and compare, so that the
// kernels users link are exercised by every correctness test, not only the test build.
//
// The release library is libflashptx.so, found (in this order) at $FLASHPTX_LIB, beside the
// run_tests executable, or in the build's output folder. Its symbols stay local to it (dlopen with
// RTLD_LOCAL; the .so exports only the C ABI and binds its own calls with -Bsymbolic).
#pragma once
#include <string>

#include "include/flashptx.h"

namespace flashptx_test {

struct ReleaseLib {
  flashptx_status (*fwd)(const flashptx_fwd_params*, cudaStream_t) = nullptr;
  flashptx_status (*bwd)(const flashptx_bwd_params*, cudaStream_t) = nullptr;
  flashptx_status (*fwd_varlen)(const flashptx_fwd_varlen_params*, cudaStream_t) = nullptr;
  flashptx_status (*fwd_fp8)(const flashptx_fwd_fp8_params*, cudaStream_t) = nullptr;
  flashptx_status (*bwd_varlen)(const flashptx_bwd_varlen_params*, cudaStream_t) = nullptr;
  const char* (*last_error)() = nullptr;
  std::string path;   // where it was loaded from
  std::string why;    // why it was not, when fwd is null
  bool loaded() const { return fwd != nullptr; }
};

// Loaded once per process; later calls return the same object.
const ReleaseLib& release_lib();

}  // namespace flashptx_test
