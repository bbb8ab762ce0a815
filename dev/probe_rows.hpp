// Shared by the dev probes (merge_probe.cu, fallback_probe.cu, rowcta_trace.cu,
// split_trace.cu, cluster_probe.cu, cluster_trace.cu): the anchors' rows on
// the device, a median timing of calls of the pivot sampler (eager, and per
// call in a replayed graph), a batch call's buffers and a line of stage
// statistics.  Include after "cuda/pivot_sampler.cu".
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

namespace probe {

// B rows of N(0, sigma^2) logits, `boosted` tokens of each raised by +8..+15.
inline std::vector<float> anchor_rows(int B, int64_t V, float sigma, int boosted) {
  std::mt19937_64 gen(1234);
  std::normal_distribution<float> nd(0.0f, sigma);
  std::uniform_real_distribution<float> ud(8.0f, 15.0f);
  std::vector<float> h((size_t)B * V);
  for (int r = 0; r < B; ++r) {
    for (int64_t i = 0; i < V; ++i) h[(size_t)r * V + i] = nd(gen);
    for (int j = 0; j < boosted; ++j) h[(size_t)r * V + gen() % V] += ud(gen);
  }
  return h;
}

// B rows of N(0, 1) logits with one token of each at 30 (the benchmark's
// `dominant` rows: min-p keeps only it, but a CTA streaming the row learns
// the row's max only when it reaches that token).
inline std::vector<float> dominant_rows(int B, int64_t V) {
  std::mt19937_64 gen(4321);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> h((size_t)B * V);
  for (int r = 0; r < B; ++r) {
    for (int64_t i = 0; i < V; ++i) h[(size_t)r * V + i] = nd(gen);
    h[(size_t)r * V + gen() % V] = 30.0f;
  }
  return h;
}

__global__ void spin_kernel(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

// SM clock in MHz: a spin of known cycles timed with events (clock64
// stamps to microseconds).
inline double sm_clock_mhz() {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const long long cycles = 200000000;
  spin_kernel<<<1, 1>>>(cycles / 10);
  cudaEventRecord(e0);
  spin_kernel<<<1, 1>>>(cycles);
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float ms;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return (double)cycles / (ms * 1e3);
}

// Median of `reps` timed runs of launch() (CUDA events), in microseconds,
// after one untimed run.
template <class F>
float median_event_us(F&& launch, int reps = 7) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  launch();
  std::vector<float> t;
  for (int rep = 0; rep < reps; ++rep) {
    cudaEventRecord(e0);
    launch();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    t.push_back(ms * 1000);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Per call in a CUDA graph of `calls` captured calls (call(i, stream) issues
// the i-th), replayed: the median over replays / calls, in microseconds, as
// bench/sampler_bench.cu's us_graph.
template <class F>
inline float graph_us(F&& call, int calls, cudaStream_t s, int reps = 9) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  for (int i = 0; i < calls; ++i) call(i, s);
  cudaStreamEndCapture(s, &g);
  if (cudaGraphInstantiate(&ge, g, 0) != cudaSuccess) return -1.0f;
  cudaGraphLaunch(ge, s);
  cudaStreamSynchronize(s);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> t;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(e0, s);
    cudaGraphLaunch(ge, s);
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    t.push_back(ms * 1000.0f / (float)calls);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// A batch call's device buffers for up to max_b rows of V logits: token and
// status outputs, zeroed per-row offsets (the Philox counters read at run
// time, as an engine's graph replay does) and the pivot workspace.
struct BatchBuffers {
  int32_t* tokens = nullptr;
  int32_t* status = nullptr;
  uint64_t* offsets = nullptr;
  void* workspace = nullptr;

  BatchBuffers(int max_b, int64_t V) {
    cudaMalloc(&tokens, 4 * (size_t)max_b);
    cudaMalloc(&status, 4 * (size_t)max_b);
    cudaMalloc(&offsets, 8 * (size_t)max_b);
    cudaMemset(offsets, 0, 8 * (size_t)max_b);
    const size_t ws_bytes = tokensift::cuda_detail::pivot_workspace_size(max_b, V);
    cudaMalloc(&workspace, ws_bytes);
    cudaMemset(workspace, 0, ws_bytes);
  }

  tokensift::SampleOutputs outputs() const {
    tokensift::SampleOutputs o;
    o.tokens = tokens;
    o.row_status = status;
    return o;
  }
};

// One line of a stage's distribution over CTAs or rows (us): count, min,
// median, p90, max, mean.
inline void stats_line(const char* name, std::vector<double> v) {
  if (v.empty()) {
    printf("    %-28s (none)\n", name);
    return;
  }
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  double sum = 0;
  for (double x : v) sum += x;
  printf("    %-28s n %4zu  min %7.2f  med %7.2f  p90 %7.2f  max %7.2f  mean %7.2f\n", name, n, v[0], v[n / 2],
         v[(size_t)(0.9 * (n - 1))], v[n - 1], sum / n);
}

// The rows on the device, a one-row workspace and outputs.
struct RowBench {
  int64_t vocab;
  float* logits = nullptr;
  void* workspace = nullptr;
  int32_t* token = nullptr;
  int32_t* kept = nullptr;

  RowBench(const std::vector<float>& h, int64_t V) : vocab(V) {
    cudaMalloc(&logits, h.size() * 4);
    cudaMemcpy(logits, h.data(), h.size() * 4, cudaMemcpyHostToDevice);
    const size_t ws_bytes = tokensift::cuda_detail::pivot_workspace_size(1, V);
    cudaMalloc(&workspace, ws_bytes);
    cudaMemset(workspace, 0, ws_bytes);
    cudaMalloc(&token, 4);
    cudaMalloc(&kept, 4);
  }

  tokensift::SampleOutputs outputs() const {
    tokensift::SampleOutputs o;
    o.tokens = token;
    o.kept_counts = kept;
    return o;
  }

  tokensift::LogitsView row(int r) const {
    tokensift::LogitsView lv;
    lv.data = logits + (size_t)r * vocab;
    lv.rows = 1;
    lv.vocab = vocab;
    lv.row_stride = vocab;
    return lv;
  }

  // The kept count of the last call.
  int32_t last_kept() const {
    int32_t k = 0;
    cudaMemcpy(&k, kept, 4, cudaMemcpyDeviceToHost);
    return k;
  }

  // One untimed call (for traces); the kept count it produced.
  int32_t call(int r, const tokensift::SamplingParams& p) const {
    tokensift::cuda_detail::launch_pivot(row(r), p, outputs(), workspace, 0);
    cudaDeviceSynchronize();
    return last_kept();
  }

  // Median of `reps` timed calls on row r, in microseconds.
  float median_us(int r, const tokensift::SamplingParams& p, int reps = 7) const {
    return median_event_us([&] { tokensift::cuda_detail::launch_pivot(row(r), p, outputs(), workspace, 0); }, reps);
  }
};

}  // namespace probe
