// Greedy rows at large batch (greedy_argmax.cu): host-side entry points and the
// kernel's tuning numbers.
#pragma once

#include <cuda_runtime.h>

#include "tokensift/tokensift.hpp"

namespace tokensift::cuda_detail {

struct GreedyPolicy {
  static constexpr int kThreads = 512;   // one CTA per row
  static constexpr int kUnroll = 4;      // 16-byte loads in flight per thread: 32 KB per CTA
  static constexpr int64_t kMinRows = 128;  // from here one CTA per row fills the GPU (132 SMs)
};

// True when every row of the call is greedy by a scalar temperature, no
// per-row parameter array could make a row invalid, and the batch is large
// enough for one CTA per row.
bool greedy_argmax_applies(const LogitsView& logits, const SamplingParams& params);

// One CTA per row; writes every output the caller asked for.  No workspace.
cudaError_t launch_greedy_argmax(const LogitsView& logits, const SampleOutputs& out, cudaStream_t stream);

}  // namespace tokensift::cuda_detail
