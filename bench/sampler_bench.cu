// sampler_bench: GPU sampler timings for the issue's grid, one record per
// (algo, dtype, vocab, batch, case), as JSON plus a markdown table.
//
// Method (docs/perf-notes.md): inputs are generated on the device; every
// timed call reads a different copy of the input (copies rotate over >= 4x the
// 60 MB L2), so the logits come from HBM as they would in a decode step.
// us_graph: R calls on the R copies captured in one CUDA graph, replayed; the
// median over replays / R.  us_eager: the same R calls launched back to back;
// median / R.  floor_us: logits bytes / the device-to-device copy bandwidth
// measured in the same run (bytes read + written over time).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tokensift/contract.h"
#include "tokensift/tokensift.hpp"

using namespace tokensift;

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
      std::exit(2);                                                                             \
    }                                                                                           \
  } while (0)

enum class Dist { kOutlierHead, kFlat, kDominant, kGaussian };

__device__ float unit_uniform(uint32_t r) { return ((r >> 8) + 0.5f) * (1.0f / 16777216.0f); }

// N(0, 2^2) per logit (Box-Muller on Philox bits); 20 tokens per row boosted
// by +8..+15 (the anchors' distribution); or flat rows; or one dominant token;
// or the Gaussian alone (`gaussian`: no boosted head, so top-p 0.9 keeps tens
// of thousands and every p-only row takes the split fallback).
template <class T>
__global__ void generate_kernel(T* out, int64_t rows, int64_t vocab, uint64_t seed, Dist dist) {
  const int64_t total = rows * vocab;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t row = i / vocab, col = i % vocab;
    float v;
    if (dist == Dist::kFlat) {
      v = 1.5f;
    } else {
      const contract::Philox4 r = contract::philox4x32_10((uint32_t)i, (uint32_t)(i >> 32), 17u, 0u,
                                                          (uint32_t)seed, (uint32_t)(seed >> 32));
      const float u1 = unit_uniform(r.v[0]), u2 = unit_uniform(r.v[1]);
      v = 2.0f * sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
      if (dist == Dist::kDominant) v *= 0.5f;
    }
    out[row * vocab + col] = (T)v;
  }
}

template <class T>
__global__ void boost_kernel(T* out, int64_t rows, int64_t vocab, uint64_t seed, Dist dist) {
  const int64_t row = blockIdx.x;
  const int j = threadIdx.x;
  const contract::Philox4 r = contract::philox4x32_10((uint32_t)row, (uint32_t)j, 99u, 0u, (uint32_t)seed, 7u);
  if (dist == Dist::kOutlierHead && j < 20) {
    const int64_t col = r.v[0] % (uint32_t)vocab;
    const float b = 8.0f + 7.0f * unit_uniform(r.v[1]);
    out[row * vocab + col] = (T)((float)out[row * vocab + col] + b);
  } else if (dist == Dist::kDominant && j == 0) {
    out[row * vocab + r.v[0] % (uint32_t)vocab] = (T)30.0f;
  }
}

// The issue's six cases run by default; an opt-in case runs only when
// --cases names it (it is not part of the issue's table).
struct Case {
  const char* name;
  float t, min_p, top_p;
  int32_t k;
  bool opt_in = false;
};
const Case kCases[] = {{"k50_p0.9", 1, 0, 0.9f, 50}, {"p0.9", 1, 0, 0.9f, 0},    {"k50", 1, 0, 1, 50},
                       {"minp0.05", 1, 0.05f, 1, 0}, {"plain", 1, 0, 1, 0},        {"greedy", 0, 0, 1, 0},
                       // llama.cpp's default chain: T 0.8, top-k 40, top-p 0.95, min-p 0.05.
                       {"llamacpp", 0.8f, 0.05f, 0.95f, 40, true}};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double copy_bandwidth_gbps() {
  const size_t bytes = size_t(2) << 30;
  void *a, *b;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMemset(a, 1, bytes));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<double> t;
  for (int i = 0; i < 12; ++i) {
    cudaEventRecord(e0);
    CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
    cudaEventRecord(e1);
    CK(cudaEventSynchronize(e1));
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    if (i >= 2) t.push_back(ms);
  }
  cudaFree(a);
  cudaFree(b);
  return 2.0 * bytes / (median(t) * 1e-3) / 1e9;
}

struct Options {
  std::string out = "sampler-bench.json";
  std::string algos = "pivot,sort";
  std::vector<int64_t> vocabs = {129280, 151936, 262208};
  std::vector<int64_t> batches = {1, 4, 16, 64, 256, 1024};
  std::vector<std::string> dtypes = {"fp32", "bf16"};
  std::vector<std::string> dists = {"outlier_head", "flat", "dominant"};
  std::vector<std::string> cases;  // empty: the issue's six (opt-in cases only by name)
  int64_t sort_max_batch = 256;
  int reps = 15;
  std::string command;
};

template <class V, class F>
std::vector<V> split(const char* s, F conv) {
  std::vector<V> out;
  std::string str(s);
  size_t p = 0;
  while (p <= str.size()) {
    size_t q = str.find(',', p);
    if (q == std::string::npos) q = str.size();
    out.push_back(conv(str.substr(p, q - p)));
    p = q + 1;
  }
  return out;
}

int main(int argc, char** argv) {
  Options o;
  for (int i = 0; i < argc; ++i) o.command += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? argv[++i] : (const char*)""; };
    if (a == "--out") o.out = next();
    else if (a == "--algos") o.algos = next();
    else if (a == "--vocabs") o.vocabs = split<int64_t>(next(), [](const std::string& s) { return std::stoll(s); });
    else if (a == "--batches") o.batches = split<int64_t>(next(), [](const std::string& s) { return std::stoll(s); });
    else if (a == "--dtypes") o.dtypes = split<std::string>(next(), [](const std::string& s) { return s; });
    else if (a == "--cases") o.cases = split<std::string>(next(), [](const std::string& s) { return s; });
    else if (a == "--dists") o.dists = split<std::string>(next(), [](const std::string& s) { return s; });
    else if (a == "--sort-max-batch") o.sort_max_batch = std::atoll(next());
    else if (a == "--reps") o.reps = std::atoi(next());
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const double bw = copy_bandwidth_gbps();
  std::printf("GPU %s, copy bandwidth %.0f GB/s (read+write)\n", prop.name, bw);
  const size_t l2 = (size_t)prop.l2CacheSize;

  FILE* js = std::fopen(o.out.c_str(), "w");
  std::fprintf(js, "{\"gpu\": \"%s\", \"commit\": \"%s\", \"command\": \"%s\", \"copy_bandwidth_GBps\": %.1f,\n \"records\": [\n",
               prop.name, std::getenv("TOKENSIFT_COMMIT") ? std::getenv("TOKENSIFT_COMMIT") : "unknown", o.command.c_str(), bw);
  bool first_rec = true;
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);

  for (const std::string& dist_name : o.dists) {
    const Dist dist = dist_name == "flat"       ? Dist::kFlat
                      : dist_name == "dominant" ? Dist::kDominant
                      : dist_name == "gaussian" ? Dist::kGaussian
                                                : Dist::kOutlierHead;
    for (const std::string& dt : o.dtypes) {
      const DType dtype = dt == "bf16" ? DType::kBF16 : DType::kF32;
      for (int64_t vocab : o.vocabs) {
        for (int64_t batch : o.batches) {
          const size_t bytes = (size_t)batch * vocab * dtype_size(dtype);
          const int copies = (int)std::max<size_t>(2, std::min<size_t>(512, (4 * l2 + bytes - 1) / bytes));
          void* data;
          CK(cudaMalloc(&data, bytes * copies));
          for (int c = 0; c < copies; ++c) {
            char* p = (char*)data + c * bytes;
            if (dtype == DType::kF32) {
              generate_kernel<float><<<1024, 256>>>((float*)p, batch, vocab, 1000 + c, dist);
              boost_kernel<float><<<(unsigned)batch, 32>>>((float*)p, batch, vocab, 1000 + c, dist);
            } else {
              generate_kernel<__nv_bfloat16><<<1024, 256>>>((__nv_bfloat16*)p, batch, vocab, 1000 + c, dist);
              boost_kernel<__nv_bfloat16><<<(unsigned)batch, 32>>>((__nv_bfloat16*)p, batch, vocab, 1000 + c, dist);
            }
          }
          CK(cudaDeviceSynchronize());
          int32_t *tokens, *status;
          uint64_t* offsets;
          CK(cudaMalloc(&tokens, 4 * batch));
          CK(cudaMalloc(&status, 4 * batch));
          CK(cudaMalloc(&offsets, 8 * batch));
          CK(cudaMemset(offsets, 0, 8 * batch));
          for (const std::string& algo_name : split<std::string>(o.algos.c_str(), [](const std::string& s) { return s; })) {
            const Algo algo = algo_name == "sort" ? Algo::kSort : algo_name == "auto" ? Algo::kAuto : Algo::kPivot;
            if (algo == Algo::kSort && batch > o.sort_max_batch) continue;
            SamplerConfig cfg;
            cfg.backend = Backend::kCuda;
            cfg.algo = algo;
            std::unique_ptr<Sampler> s;
            if (Sampler::create(cfg, &s) != Status::kOk) {
              std::fprintf(stderr, "create: %s\n", last_error_message());
              return 2;
            }
            size_t ws_bytes = 0;
            s->workspace_size(batch, vocab, dtype, &ws_bytes);
            void* ws = nullptr;
            CK(cudaMalloc(&ws, std::max<size_t>(ws_bytes, 256)));
            s->workspace_init(ws, ws_bytes, stream);
            const int calls = algo == Algo::kSort ? std::min(copies, 8) : copies;
            for (const Case& c : kCases) {
              if (dist != Dist::kOutlierHead && (std::strcmp(c.name, "greedy") == 0)) continue;
              const bool named = std::find(o.cases.begin(), o.cases.end(), std::string(c.name)) != o.cases.end();
              if ((!o.cases.empty() || c.opt_in) && !named) continue;
              SamplingParams p;
              p.temperature.value = c.t;
              p.min_p.value = c.min_p;
              p.top_k.value = c.k;
              p.top_p.value = c.top_p;
              p.seed.value = 42;
              p.offset.per_row = offsets;  // read on the device, as an engine would
              SampleOutputs out{tokens, status, nullptr, nullptr};
              auto call = [&](int i) {
                LogitsView v{(char*)data + (size_t)(i % copies) * bytes, batch, vocab, vocab, dtype};
                const Status st = s->sample(v, p, out, ws, ws_bytes, stream);
                if (st != Status::kOk) {
                  std::fprintf(stderr, "sample: %s\n", last_error_message());
                  std::exit(2);
                }
              };
              // Warm-up.
              for (int i = 0; i < std::min(calls, 4); ++i) call(i);
              CK(cudaStreamSynchronize(stream));
              // Eager.
              std::vector<double> te;
              for (int r = 0; r < std::max(3, o.reps / 3); ++r) {
                cudaEventRecord(e0, stream);
                for (int i = 0; i < calls; ++i) call(i);
                cudaEventRecord(e1, stream);
                CK(cudaEventSynchronize(e1));
                float ms;
                cudaEventElapsedTime(&ms, e0, e1);
                te.push_back(ms * 1e3 / calls);
              }
              // Graph.
              cudaGraph_t g;
              cudaGraphExec_t ge;
              CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
              for (int i = 0; i < calls; ++i) call(i);
              CK(cudaStreamEndCapture(stream, &g));
              CK(cudaGraphInstantiate(&ge, g, 0));
              CK(cudaGraphLaunch(ge, stream));
              CK(cudaStreamSynchronize(stream));
              std::vector<double> tg;
              for (int r = 0; r < o.reps; ++r) {
                cudaEventRecord(e0, stream);
                CK(cudaGraphLaunch(ge, stream));
                cudaEventRecord(e1, stream);
                CK(cudaEventSynchronize(e1));
                float ms;
                cudaEventElapsedTime(&ms, e0, e1);
                tg.push_back(ms * 1e3 / calls);
              }
              cudaGraphExecDestroy(ge);
              cudaGraphDestroy(g);
              const double floor_us = bytes / (bw * 1e9) * 1e6;
              const double ug = median(tg), ue = median(te);
              std::printf("%-6s %-5s %-12s V=%-6lld B=%-5lld %-9s graph %9.2f us  eager %9.2f us  floor %7.2f us  %.2fx floor\n",
                          algo_name.c_str(), dt.c_str(), dist_name.c_str(), (long long)vocab, (long long)batch, c.name,
                          ug, ue, floor_us, ug / floor_us);
              std::fflush(stdout);
              std::fprintf(js,
                           "%s  {\"impl\": \"tokensift-%s\", \"algo\": \"%s\", \"dtype\": \"%s\", \"dist\": \"%s\", "
                           "\"vocab\": %lld, \"batch\": %lld, \"case\": \"%s\", \"us_graph\": %.3f, \"us_eager\": %.3f, "
                           "\"floor_us\": %.3f, \"workspace_bytes\": %zu}",
                           first_rec ? "" : ",\n", algo_name.c_str(), algo_name.c_str(), dt.c_str(), dist_name.c_str(),
                           (long long)vocab, (long long)batch, c.name, ug, ue, floor_us, ws_bytes);
              first_rec = false;
            }
            cudaFree(ws);
          }
          cudaFree(tokens);
          cudaFree(status);
          cudaFree(offsets);
          cudaFree(data);
        }
      }
    }
  }
  std::fprintf(js, "\n]}\n");
  std::fclose(js);
  return 0;
}
