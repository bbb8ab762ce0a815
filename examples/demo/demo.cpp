// tokensift_demo: the main demo.  Samples a small batch of synthetic logits
// with a few parameter sets on the CPU backend, and on the CUDA backend too
// when one is available at run time, and shows that the two agree.
//
//   tokensift_demo [vocab] [rows]
//
// Public C++ API only (the CUDA runtime is used just to move buffers).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <vector>

#include "tokensift/tokensift.hpp"

#if defined(TOKENSIFT_WITH_CUDA)
#include <cuda_runtime.h>
#endif

namespace {

using namespace tokensift;

struct ParamSet {
  const char* name;
  float temperature, min_p, top_p;
  int32_t top_k;
};
const ParamSet kSets[] = {
    {"greedy (T=0)", 0.0f, 0.0f, 1.0f, 0},
    {"plain (T=1)", 1.0f, 0.0f, 1.0f, 0},
    {"T=0.7 top_k=50 top_p=0.9", 0.7f, 0.0f, 0.9f, 50},
    {"T=1 min_p=0.05", 1.0f, 0.05f, 1.0f, 0},
    {"T=1.3 min_p=0.02 top_p=0.95", 1.3f, 0.02f, 0.95f, 0},
};

struct Outputs {
  std::vector<int32_t> tokens, status, kept;
  std::vector<float> logprobs;
  explicit Outputs(size_t rows) : tokens(rows), status(rows), kept(rows), logprobs(rows) {}
  SampleOutputs view() {
    return SampleOutputs{tokens.data(), status.data(), logprobs.data(), kept.data()};
  }
};

// N(0, 2^2) logits with 20 boosted tokens per row; the last row holds a NaN to
// show a per-row status.
std::vector<float> make_logits(int64_t rows, int64_t vocab) {
  uint64_t s = 42;
  auto next = [&] {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return s;
  };
  auto uniform = [&] { return ((next() >> 11) + 0.5) * 0x1p-53; };
  std::vector<float> x((size_t)(rows * vocab));
  for (auto& v : x)
    v = (float)(2.0 * std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307 * uniform()));
  for (int64_t r = 0; r < rows; ++r)
    for (int j = 0; j < 20; ++j) x[(size_t)(r * vocab) + next() % vocab] += (float)(8 + 7 * uniform());
  x[(size_t)((rows - 1) * vocab + vocab / 2)] = std::numeric_limits<float>::quiet_NaN();
  return x;
}

SamplingParams params_for(const ParamSet& ps, const uint64_t* seeds, uint64_t step) {
  SamplingParams p;
  p.temperature.value = ps.temperature;
  p.min_p.value = ps.min_p;
  p.top_k.value = ps.top_k;
  p.top_p.value = ps.top_p;
  p.seed.per_row = seeds;  // one seed per request
  p.offset.value = step;   // e.g. the decode step
  return p;
}

bool ok(Status st, const char* what) {
  if (st == Status::kOk) return true;
  std::printf("%s failed: %s (%s)\n", what, status_string(st), last_error_message());
  return false;
}

const char* row_status_name(int32_t s) {
  switch ((RowStatus)s) {
    case RowStatus::kOk: return "OK";
    case RowStatus::kNanInput: return "NAN_INPUT";
    case RowStatus::kNoValidToken: return "NO_VALID_TOKEN";
    case RowStatus::kInvalidParam: return "INVALID_PARAM";
  }
  return "?";
}

#if defined(TOKENSIFT_WITH_CUDA)
// Runs the same batch on the GPU; returns false if any CUDA step fails.
bool sample_cuda(const std::vector<float>& x, int64_t rows, int64_t vocab, const ParamSet& ps,
                 const std::vector<uint64_t>& seeds, uint64_t step, Outputs* out, double* us) {
  SamplerConfig cfg;
  cfg.backend = Backend::kCuda;
  std::unique_ptr<Sampler> s;
  if (!ok(Sampler::create(cfg, &s), "CUDA Sampler::create")) return false;
  size_t bytes = 0;
  if (!ok(s->workspace_size(rows, vocab, DType::kF32, &bytes), "workspace_size")) return false;
  float* d_x = nullptr;
  uint64_t* d_seeds = nullptr;
  int32_t *d_tok = nullptr, *d_status = nullptr, *d_kept = nullptr;
  float* d_lp = nullptr;
  void* d_ws = nullptr;
  bool good = cudaMalloc(&d_x, x.size() * 4) == cudaSuccess &&
              cudaMalloc(&d_seeds, seeds.size() * 8) == cudaSuccess &&
              cudaMalloc(&d_tok, rows * 4) == cudaSuccess &&
              cudaMalloc(&d_status, rows * 4) == cudaSuccess &&
              cudaMalloc(&d_kept, rows * 4) == cudaSuccess &&
              cudaMalloc(&d_lp, rows * 4) == cudaSuccess &&
              (bytes == 0 || cudaMalloc(&d_ws, bytes) == cudaSuccess);
  if (good) {
    cudaMemcpy(d_x, x.data(), x.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(d_seeds, seeds.data(), seeds.size() * 8, cudaMemcpyHostToDevice);
    good = ok(s->workspace_init(d_ws, bytes, nullptr), "CUDA workspace_init");
  }
  if (good) {
    const LogitsView view{d_x, rows, vocab, vocab, DType::kF32};
    const SamplingParams p = params_for(ps, d_seeds, step);
    const SampleOutputs o{d_tok, d_status, d_lp, d_kept};
    good = ok(s->sample(view, p, o, d_ws, bytes, nullptr), "CUDA sample");  // warm-up
    cudaDeviceSynchronize();
    const auto t0 = std::chrono::steady_clock::now();
    const int iters = 20;
    for (int i = 0; good && i < iters; ++i) good = ok(s->sample(view, p, o, d_ws, bytes, nullptr), "CUDA sample");
    cudaDeviceSynchronize();
    *us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
    cudaMemcpy(out->tokens.data(), d_tok, rows * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(out->status.data(), d_status, rows * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(out->kept.data(), d_kept, rows * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(out->logprobs.data(), d_lp, rows * 4, cudaMemcpyDeviceToHost);
    good = good && cudaGetLastError() == cudaSuccess;
  }
  cudaFree(d_x), cudaFree(d_seeds), cudaFree(d_tok), cudaFree(d_status), cudaFree(d_kept);
  cudaFree(d_lp), cudaFree(d_ws);
  return good;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const int64_t vocab = argc > 1 ? std::atoll(argv[1]) : 129280;
  const int64_t rows = argc > 2 ? std::atoll(argv[2]) : 8;
  if (vocab < 1 || rows < 1) {
    std::printf("usage: tokensift_demo [vocab >= 1] [rows >= 1]\n");
    return 2;
  }
  const bool cuda = backend_available(Backend::kCuda);
  std::printf("tokensift_demo: %lld rows x %lld vocab, fp32 logits; CUDA backend %s\n",
              (long long)rows, (long long)vocab, cuda ? "available" : "not available");
  const std::vector<float> x = make_logits(rows, vocab);
  std::vector<uint64_t> seeds((size_t)rows);
  for (int64_t r = 0; r < rows; ++r) seeds[(size_t)r] = 0x1234 + (uint64_t)r;
  const uint64_t step = 7;

  SamplerConfig cfg;  // CPU, Algo::kAuto, all cores
  std::unique_ptr<Sampler> cpu;
  if (!ok(Sampler::create(cfg, &cpu), "CPU Sampler::create")) return 1;
  size_t bytes = 0;
  if (!ok(cpu->workspace_size(rows, vocab, DType::kF32, &bytes), "workspace_size")) return 1;
  std::vector<unsigned char> workspace(bytes);
  if (!ok(cpu->workspace_init(workspace.data(), bytes), "workspace_init")) return 1;
  const LogitsView view{x.data(), rows, vocab, vocab, DType::kF32};

  int disagreements = 0;
  for (const ParamSet& ps : kSets) {
    const SamplingParams p = params_for(ps, seeds.data(), step);
    Outputs out((size_t)rows);
    // The first call starts the worker threads; time the calls after it.
    if (!ok(cpu->sample(view, p, out.view(), workspace.data(), bytes), "CPU sample")) return 1;
    const int iters = 5;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i)
      if (!ok(cpu->sample(view, p, out.view(), workspace.data(), bytes), "CPU sample")) return 1;
    const double cpu_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        iters;
    std::printf("\n== %s: CPU %.0f us per call (%.1f us/row, %d threads)\n", ps.name, cpu_us,
                cpu_us / (double)rows, cpu->config().num_threads);
    std::printf("  row  token  status          kept  logprob\n");
    for (int64_t r = 0; r < rows; ++r)
      std::printf("  %3lld  %6d  %-14s %5d  %8.4f\n", (long long)r, out.tokens[(size_t)r],
                  row_status_name(out.status[(size_t)r]), out.kept[(size_t)r],
                  (double)out.logprobs[(size_t)r]);
#if defined(TOKENSIFT_WITH_CUDA)
    if (cuda) {
      Outputs gpu((size_t)rows);
      double gpu_us = 0.0;
      if (!sample_cuda(x, rows, vocab, ps, seeds, step, &gpu, &gpu_us)) return 1;
      int same = 0;
      for (int64_t r = 0; r < rows; ++r)
        same += gpu.tokens[(size_t)r] == out.tokens[(size_t)r] &&
                gpu.status[(size_t)r] == out.status[(size_t)r];
      disagreements += (int)(rows - same);
      std::printf("  CUDA: %.1f us per call; tokens and statuses agree with the CPU on %d/%lld rows\n",
                  gpu_us, same, (long long)rows);
    }
#endif
  }
  // Only a top-p row whose prefix mass lies within 1e-6 of p (a "band row",
  // docs/semantics.md) may legitimately differ; these inputs make that unlikely.
  if (cuda)
    std::printf("\nCPU and CUDA %s\n",
                disagreements ? "DISAGREE on some rows (see above)" : "agree on every row");
  return disagreements ? 1 : 0;
}
