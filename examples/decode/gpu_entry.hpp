// Entry points of the GPU engine, visible to host-only code (main.cpp).
// Declared only in builds with CUDA (TOKENSIFT_DECODE_GPU).
#pragma once

#include "decode_common.hpp"

namespace decode {

// Number of CUDA devices the runtime sees (0 on error or without a driver).
int gpu_device_count();
// Runs every requested mode for every batch size on device 0; returns the exit code.
int run_gpu_variant(const Options& opt);

}  // namespace decode
