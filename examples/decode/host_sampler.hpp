// The two CPU samplers of the ds4-style loop behind one call: tokensift's CPU
// backend, or the naive full-sort sampler.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "decode_common.hpp"
#include "tokensift/tokensift.hpp"

namespace decode {

class HostSampler {
 public:
  enum class Kind { kTokensift, kNaive };
  // Throws std::runtime_error when tokensift refuses the configuration.
  HostSampler(Kind kind, int threads, int64_t max_rows, int64_t vocab, LogitsType dtype);
  // Samples `rows` rows of host logits with the decode step as the offset.
  void sample(const void* logits, int64_t rows, const RowSetup& setup, uint64_t step,
              int32_t* tokens);
  int threads() const { return threads_; }
  bool is_naive() const { return kind_ == Kind::kNaive; }
  const char* name() const { return kind_ == Kind::kTokensift ? "tokensift-cpu" : "naive-sort-cpu"; }

 private:
  Kind kind_;
  int threads_;
  int64_t vocab_;
  LogitsType dtype_;
  std::unique_ptr<tokensift::Sampler> sampler_;
  std::vector<unsigned char> workspace_;
};

tokensift::DType to_tokensift(LogitsType t);
// CPUs this process may run on (its affinity mask).
int usable_cores();
// Throws with tokensift's message when status is not kOk.
void check_tokensift(tokensift::Status status, const char* what);

}  // namespace decode
