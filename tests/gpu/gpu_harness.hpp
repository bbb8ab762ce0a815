// Helpers for the GPU tests: device copies of a HostBatch, running a batch
// through a backend, and the comparison tally the report is built from.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "generators.hpp"
#include "tokensift/tokensift.hpp"

namespace tokensift::testing {

#define TS_CUDA_OK(expr)                                                              \
  do {                                                                                \
    cudaError_t e_ = (expr);                                                          \
    ASSERT_EQ(e_, cudaSuccess) << #expr << ": " << cudaGetErrorString(e_);            \
  } while (0)

inline bool cuda_device_present() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return n > 0;
}

#define TS_REQUIRE_GPU() \
  if (!::tokensift::testing::cuda_device_present()) GTEST_SKIP() << "no CUDA device"

struct DeviceMem {
  void* p = nullptr;
  explicit DeviceMem(size_t bytes) {
    if (bytes && cudaMalloc(&p, bytes) != cudaSuccess) p = nullptr;
  }
  ~DeviceMem() { cudaFree(p); }
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

template <class T>
std::unique_ptr<DeviceMem> to_device(const std::vector<T>& v) {
  auto m = std::make_unique<DeviceMem>(v.size() * sizeof(T));
  cudaMemcpy(m->p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  return m;
}

struct Results {
  std::vector<int32_t> token, status, kept;
  std::vector<float> logprob;
  explicit Results(int64_t rows = 0)
      : token((size_t)rows, -7), status((size_t)rows, -7), kept((size_t)rows, -7),
        logprob((size_t)rows, -7.0f) {}
};

// The batch, its parameters and output buffers on the device.
struct DeviceBatch {
  std::unique_ptr<DeviceMem> logits, temperature, min_p, top_k, top_p, seed, offset;
  std::unique_ptr<DeviceMem> token, status, kept, logprob;
  LogitsView view;
  SamplingParams params;
  SampleOutputs out;
  int64_t rows = 0;

  explicit DeviceBatch(const HostBatch& b) : rows(b.rows) {
    logits = std::make_unique<DeviceMem>(b.storage.size());
    cudaMemcpy(logits->p, b.storage.data(), b.storage.size(), cudaMemcpyHostToDevice);
    temperature = to_device(b.temperature);
    min_p = to_device(b.min_p);
    top_k = to_device(b.top_k);
    top_p = to_device(b.top_p);
    seed = to_device(b.seed);
    offset = to_device(b.offset);
    token = std::make_unique<DeviceMem>(4 * b.rows);
    status = std::make_unique<DeviceMem>(4 * b.rows);
    kept = std::make_unique<DeviceMem>(4 * b.rows);
    logprob = std::make_unique<DeviceMem>(4 * b.rows);
    view = LogitsView{logits->p, b.rows, b.vocab, b.stride, b.dtype};
    params.temperature.per_row = temperature->as<float>();
    params.min_p.per_row = min_p->as<float>();
    params.top_k.per_row = top_k->as<int32_t>();
    params.top_p.per_row = top_p->as<float>();
    params.seed.per_row = seed->as<uint64_t>();
    params.offset.per_row = offset->as<uint64_t>();
    out = SampleOutputs{token->as<int32_t>(), status->as<int32_t>(), logprob->as<float>(), kept->as<int32_t>()};
  }
  // Poisons the outputs so an unwritten row cannot pass.  Synchronous: the
  // memsets go to the legacy default stream, which does not order them before
  // work on a non-blocking stream (the graph tests' stream).
  void poison() {
    cudaMemset(token->p, 0xA5, 4 * rows);
    cudaMemset(status->p, 0xA5, 4 * rows);
    cudaMemset(kept->p, 0xA5, 4 * rows);
    cudaMemset(logprob->p, 0xA5, 4 * rows);
    cudaDeviceSynchronize();
  }
  Results fetch() const {
    Results r(rows);
    cudaMemcpy(r.token.data(), token->p, 4 * rows, cudaMemcpyDeviceToHost);
    cudaMemcpy(r.status.data(), status->p, 4 * rows, cudaMemcpyDeviceToHost);
    cudaMemcpy(r.kept.data(), kept->p, 4 * rows, cudaMemcpyDeviceToHost);
    cudaMemcpy(r.logprob.data(), logprob->p, 4 * rows, cudaMemcpyDeviceToHost);
    return r;
  }
};

// A CUDA sampler with a zero-initialised workspace large enough for `rows` x `vocab`.
struct GpuSampler {
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<DeviceMem> ws;
  size_t ws_bytes = 0;
  Status init(Algo algo, int64_t rows, int64_t vocab, DType dtype) {
    SamplerConfig c;
    c.backend = Backend::kCuda;
    c.algo = algo;
    Status s = Sampler::create(c, &sampler);
    if (s != Status::kOk) return s;
    s = sampler->workspace_size(rows, vocab, dtype, &ws_bytes);
    if (s != Status::kOk) return s;
    ws = std::make_unique<DeviceMem>(ws_bytes);
    return sampler->workspace_init(ws->p, ws_bytes, nullptr);
  }
  Status run(const DeviceBatch& d, cudaStream_t stream = nullptr) {
    return sampler->sample(d.view, d.params, d.out, ws->p, ws_bytes, stream);
  }
};

inline Results run_cpu(const HostBatch& b) {
  SamplerConfig c;
  c.backend = Backend::kCpu;
  std::unique_ptr<Sampler> s;
  Results r(b.rows);
  if (Sampler::create(c, &s) != Status::kOk) return r;
  size_t bytes = 0;
  s->workspace_size(b.rows, b.vocab, b.dtype, &bytes);
  std::vector<unsigned char> ws(bytes);
  SampleOutputs out{r.token.data(), r.status.data(), r.logprob.data(), r.kept.data()};
  const Status st = s->sample(b.view(), b.sampling_params(), out, ws.data(), bytes);
  if (st != Status::kOk) std::fprintf(stderr, "CPU backend failed: %s\n", last_error_message());
  return r;
}

}  // namespace tokensift::testing
