// Dev probe (not part of the library): times the pivot sampler row by row on
// the anchors' distribution and reports, with TOKENSIFT_FB_TRACE, every row
// whose fallback leaves the histogram path.  Arguments: B, top_p, sigma of the
// N(0, sigma^2) bulk, number of tokens boosted by +8..+15 (defaults 64 0.9 2 20).  Build on the device:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Isrc \
//        -DTOKENSIFT_FB_TRACE dev/fallback_probe.cu src/cuda/greedy_argmax.cu -o /tmp/fbp && /tmp/fbp
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "cuda/pivot_kernels.cuh"  // the kernels, instantiated here by launch_pivot
#include "cuda/pivot_sampler.cu"
#include "probe_rows.hpp"

using namespace tokensift;

int main(int argc, char** argv) {
  const int64_t V = 129280;
  const int B = argc > 1 ? atoi(argv[1]) : 64;
  const float sigma = argc > 3 ? (float)atof(argv[3]) : 2.0f;
  const int boosted = argc > 4 ? atoi(argv[4]) : 20;
  const probe::RowBench rows(probe::anchor_rows(B, V, sigma, boosted), V);
  SamplingParams p;
  p.top_p.value = argc > 2 ? (float)atof(argv[2]) : 0.9f;
  for (int r = 0; r < B; ++r) {
    const float us = rows.median_us(r, p);
    printf("row %3d kept %6d  %8.1f us\n", r, rows.last_kept(), us);
  }
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
