// FLASHPTX_HD: the qualifier of the protocol objects that kernels and CPU models share (one code,
// compiled for the device by nvcc and for the host by g++). It is defined once, in ptx/arch.cuh
// (the lowest layer, which must compile when ptx/ is copied alone); this header keeps the name
// available to src/protocol/ without the rest of ptx/.
#pragma once

#include "ptx/arch.cuh"
