// Dev probe (not part of the library): times the pivot sampler row by row on
// the anchors' distribution and reports, with TOKENSIFT_FB_TRACE, every row
// whose fallback leaves the histogram path.  Arguments: B, top_p, sigma of the
// N(0, sigma^2) bulk, number of tokens boosted by +8..+15 (defaults 64 0.9 2 20).  Build on the device:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Isrc \
//        -DTOKENSIFT_FB_TRACE dev/fallback_probe.cu src/cuda/greedy_argmax.cu -o /tmp/fbp && /tmp/fbp
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "cuda/pivot_kernels.cuh"  // the kernels, instantiated here by launch_pivot
#include "cuda/pivot_sampler.cu"

using namespace tokensift;

int main(int argc, char** argv) {
  const int64_t V = 129280;
  const int B = argc > 1 ? atoi(argv[1]) : 64;
  const float top_p = argc > 2 ? (float)atof(argv[2]) : 0.9f;
  const float sigma = argc > 3 ? (float)atof(argv[3]) : 2.0f;
  const int boosted = argc > 4 ? atoi(argv[4]) : 20;
  std::mt19937_64 gen(1234);
  std::normal_distribution<float> nd(0.0f, sigma);
  std::uniform_real_distribution<float> ud(8.0f, 15.0f);
  std::vector<float> h((size_t)B * V);
  for (int r = 0; r < B; ++r) {
    for (int64_t i = 0; i < V; ++i) h[(size_t)r * V + i] = nd(gen);
    for (int j = 0; j < boosted; ++j) h[(size_t)r * V + gen() % V] += ud(gen);
  }
  float* d;
  cudaMalloc(&d, h.size() * 4);
  cudaMemcpy(d, h.data(), h.size() * 4, cudaMemcpyHostToDevice);
  const size_t ws_bytes = cuda_detail::pivot_workspace_size(1, V);
  void* ws;
  cudaMalloc(&ws, ws_bytes);
  cudaMemset(ws, 0, ws_bytes);
  int32_t *tok, *kept;
  cudaMalloc(&tok, 4);
  cudaMalloc(&kept, 4);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  SamplingParams p;
  p.top_p.value = top_p;
  SampleOutputs o;
  o.tokens = tok;
  o.kept_counts = kept;
  std::vector<float> times;
  for (int r = 0; r < B; ++r) {
    LogitsView lv;
    lv.data = d + (size_t)r * V;
    lv.rows = 1;
    lv.vocab = V;
    lv.row_stride = V;
    std::vector<float> t;
    for (int rep = 0; rep < 7; ++rep) {
      cudaEventRecord(e0);
      cuda_detail::launch_pivot(lv, p, o, ws, 0);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms;
      cudaEventElapsedTime(&ms, e0, e1);
      t.push_back(ms * 1000);
    }
    std::sort(t.begin(), t.end());
    int32_t k;
    cudaMemcpy(&k, kept, 4, cudaMemcpyDeviceToHost);
    printf("row %3d kept %6d  %8.1f us\n", r, k, t[3]);
    times.push_back(t[3]);
  }
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
