// Plain rows at large batch (plain_race.cu): host-side entry points and the
// kernel's tuning numbers.
#pragma once

#include <cuda_runtime.h>

#include "tokensift/tokensift.hpp"

// Batches from this many rows take the plain-race kernel; a build-time knob so
// that a `variant` build can time the chunked kernel on the same shapes (a huge
// value: never).
#ifndef TOKENSIFT_PLAIN_RACE_MIN_ROWS
#define TOKENSIFT_PLAIN_RACE_MIN_ROWS 128
#endif

namespace tokensift::cuda_detail {

struct PlainRacePolicy {
  static constexpr int kThreads = 512;  // one CTA per row
  static constexpr int kMinBlocksPerSm = 2;  // 64 registers: a second row's loads overlap this one's race
  // 16-byte loads per thread per round, issued one round ahead (v25: 4 per
  // round, not ahead, left 31 % of warp stalls on the loads' scoreboard).
  static constexpr int kUnroll = 2;
  static constexpr int64_t kMinRows = TOKENSIFT_PLAIN_RACE_MIN_ROWS;  // one CTA per row fills the GPU (132 SMs)
  // The cheap bounds that spare a token its exact score (as the chunk
  // phase's race, PivotPolicy): the fast log errs by < 1e-5 below
  // kSkipMaxAbsZ, far inside the margin.
  static constexpr float kSkipMargin = 0.01f;
  static constexpr float kSkipMaxAbsZ = 1000.0f;
};

// True when every row of the call is a plain row (no min-p, top-k or top-p;
// temperature above the greedy floor) by scalar parameters, no log-prob is
// asked for, and the batch is large enough for one CTA per row.
bool plain_race_applies(const LogitsView& logits, const SamplingParams& params, const SampleOutputs& out);

// One CTA per row; writes the token, the row status and the kept count.  No
// workspace.
cudaError_t launch_plain_race(const LogitsView& logits, const SamplingParams& params, const SampleOutputs& out,
                              cudaStream_t stream);

}  // namespace tokensift::cuda_detail
