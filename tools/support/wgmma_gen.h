// The generator of ptx/wgmma_mma.cuh: every wgmma.mma_async form the kernels call, one function
// per form, one `if constexpr` arm per N, each arm's PTX string and operand list written out.
//
// The header is committed (ptx/ stays vendorable without this tool); this function is its only
// source. `make regen-wgmma` builds tools/gen/gen_wgmma.cpp around it and rewrites the header; the
// host test "host ptx wgmma generated header" (tests/host/test_wgmma_desc.cpp) fails when the
// committed header differs from what this function returns. Plain C++, no CUDA: it lives in the
// support library so that the test can call it in-process.
#pragma once
#include <string>

namespace flashptx::gen {

// Where the generated header lives, relative to the source root.
inline constexpr const char* kWgmmaMmaHeader = "ptx/wgmma_mma.cuh";

// The complete text of ptx/wgmma_mma.cuh.
std::string wgmma_mma_header();

}  // namespace flashptx::gen
