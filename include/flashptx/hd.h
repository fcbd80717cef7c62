// FLASHPTX_HD: the qualifier of the protocol objects that kernels and CPU models share (one code,
// compiled for the device by nvcc and for the host by g++).
#pragma once

#if defined(__CUDACC__)
#define FLASHPTX_HD __host__ __device__ __forceinline__
#else
#define FLASHPTX_HD inline
#endif
