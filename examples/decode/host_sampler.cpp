// CPU sampling for the ds4-style loop and the CPU-only variant.
#include "host_sampler.hpp"

#include <sched.h>

#include <stdexcept>
#include <thread>

#include "naive_sampler.hpp"

namespace decode {

tokensift::DType to_tokensift(LogitsType t) {
  return t == LogitsType::kF32 ? tokensift::DType::kF32 : tokensift::DType::kBF16;
}

void check_tokensift(tokensift::Status status, const char* what) {
  if (status == tokensift::Status::kOk) return;
  throw std::runtime_error(std::string(what) + ": " + tokensift::status_string(status) + " (" +
                           tokensift::last_error_message() + ")");
}

int usable_cores() {
  // The affinity mask, not hardware_concurrency(): in a container the latter
  // reports the whole host and the samplers would oversubscribe.
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n ? (int)n : 1;
}

HostSampler::HostSampler(Kind kind, int threads, int64_t max_rows, int64_t vocab, LogitsType dtype)
    : kind_(kind), threads_(threads > 0 ? threads : usable_cores()), vocab_(vocab), dtype_(dtype) {
  if (kind_ != Kind::kTokensift) return;
  tokensift::SamplerConfig cfg;
  cfg.backend = tokensift::Backend::kCpu;
  cfg.num_threads = threads_;
  check_tokensift(tokensift::Sampler::create(cfg, &sampler_), "creating the CPU sampler");
  size_t bytes = 0;
  check_tokensift(sampler_->workspace_size(max_rows, vocab, to_tokensift(dtype), &bytes),
                  "CPU workspace size");
  workspace_.assign(bytes, 0);
  check_tokensift(sampler_->workspace_init(workspace_.data(), workspace_.size()),
                  "CPU workspace init");
}

void HostSampler::sample(const void* logits, int64_t rows, const RowSetup& setup, uint64_t step,
                         int32_t* tokens) {
  if (kind_ == Kind::kNaive) {
    NaiveSampleArgs a;
    a.logits = logits;
    a.dtype = dtype_;
    a.rows = rows;
    a.vocab = vocab_;
    a.temperature = setup.temperature.data();
    a.top_p = setup.top_p.data();
    a.min_p = setup.min_p.data();
    a.top_k = setup.top_k.data();
    a.seeds = setup.seeds.data();
    a.offset = step;
    a.threads = threads_;
    a.tokens = tokens;
    naive_sample(a);
    return;
  }
  tokensift::LogitsView view;
  view.data = logits;
  view.rows = rows;
  view.vocab = vocab_;
  view.row_stride = vocab_;
  view.dtype = to_tokensift(dtype_);
  tokensift::SamplingParams p;
  p.temperature.per_row = setup.temperature.data();
  p.top_p.per_row = setup.top_p.data();
  p.min_p.per_row = setup.min_p.data();
  p.top_k.per_row = setup.top_k.data();
  p.seed.per_row = setup.seeds.data();
  p.offset.value = step;
  tokensift::SampleOutputs out;
  out.tokens = tokens;
  check_tokensift(sampler_->sample(view, p, out, workspace_.empty() ? nullptr : workspace_.data(),
                                   workspace_.size()),
                  "CPU sample");
}

}  // namespace decode
