// The status-quo CPU sampler: what an engine without a sampling library does.
//
// Per row: widen, divide by T, std::sort the whole vocabulary, softmax, cut
// min-p / top-k / top-p, draw.  It is the cost reference of the ds4-style
// loop, not an oracle: it follows the same filter order and exponential race
// as docs/semantics.md, so it usually draws the same token, but it makes no
// promise about ties at filter boundaries or top-p band rows.
#pragma once

#include <cstdint>

#include "decode_common.hpp"

namespace decode {

struct NaiveSampleArgs {
  const void* logits = nullptr;  // rows x vocab, host memory
  LogitsType dtype = LogitsType::kF32;
  int64_t rows = 0, vocab = 0;
  const float* temperature = nullptr;  // per row
  const float* top_p = nullptr;
  const float* min_p = nullptr;
  const int32_t* top_k = nullptr;
  const uint64_t* seeds = nullptr;
  uint64_t offset = 0;  // the decode step
  int threads = 0;      // 0 = hardware concurrency
  int32_t* tokens = nullptr;
};

void naive_sample(const NaiveSampleArgs& args);

}  // namespace decode
