// Runs host batches through the public C++ API on the CPU backend.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "generators.hpp"
#include "tokensift/tokensift.hpp"

namespace tokensift::testing {

struct BatchResult {
  Status status = Status::kInternal;
  std::string error;
  std::vector<int32_t> tokens, row_status, kept;
  std::vector<float> logprobs;
};

// Samples `logits` with `params` on a fresh CPU sampler; the outputs start
// filled with garbage so that an unwritten row is visible.
inline BatchResult run_cpu(const LogitsView& logits, const SamplingParams& params,
                           Algo algo = Algo::kAuto, int num_threads = 0) {
  BatchResult out;
  SamplerConfig config;
  config.backend = Backend::kCpu;
  config.algo = algo;
  config.num_threads = num_threads;
  std::unique_ptr<Sampler> sampler;
  out.status = Sampler::create(config, &sampler);
  if (out.status != Status::kOk) {
    out.error = last_error_message();
    return out;
  }
  const size_t rows = logits.rows > 0 ? (size_t)logits.rows : 0;
  out.tokens.assign(rows, -777);
  out.row_status.assign(rows, -777);
  out.kept.assign(rows, -777);
  out.logprobs.assign(rows, -777.0f);
  size_t bytes = 0;
  out.status = sampler->workspace_size(logits.rows, logits.vocab, logits.dtype, &bytes);
  if (out.status != Status::kOk) {
    out.error = last_error_message();
    return out;
  }
  std::vector<unsigned char> workspace(bytes + 1);
  out.status = sampler->workspace_init(workspace.data(), bytes);
  if (out.status != Status::kOk) {
    out.error = last_error_message();
    return out;
  }
  SampleOutputs o;
  o.tokens = out.tokens.data();
  o.row_status = out.row_status.data();
  o.logprobs = out.logprobs.data();
  o.kept_counts = out.kept.data();
  out.status = sampler->sample(logits, params, o, bytes ? workspace.data() : nullptr, bytes);
  if (out.status != Status::kOk) out.error = last_error_message();
  return out;
}

inline BatchResult run_cpu(const HostBatch& b, Algo algo = Algo::kAuto, int num_threads = 0) {
  return run_cpu(b.view(), b.sampling_params(), algo, num_threads);
}

// Multiplies a row budget by TOKENSIFT_TEST_SCALE (default 1) for longer soaks.
inline int64_t scaled(int64_t n) {
  const char* s = std::getenv("TOKENSIFT_TEST_SCALE");
  const double f = s ? std::atof(s) : 1.0;
  const int64_t v = (int64_t)(n * (f > 0 ? f : 1.0));
  return v > 0 ? v : 1;
}

}  // namespace tokensift::testing
