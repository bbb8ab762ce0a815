// Plain rows at large batch (plain_race.cu): host-side entry points and the
// kernel's tuning numbers.
#pragma once

#include <cuda_runtime.h>

#include "cuda/pivot_policy.cuh"
#include "tokensift/tokensift.hpp"

// Batches from this many rows take the plain-race kernel; a build-time knob so
// that a `variant` build can time the chunked kernel on the same shapes (a huge
// value: never).
#ifndef TOKENSIFT_PLAIN_RACE_MIN_ROWS
#define TOKENSIFT_PLAIN_RACE_MIN_ROWS 128
#endif

// Its 16-byte loads per thread per round and whether a round's loads go out
// before the previous round is worked (1) or not (0), for 4-byte logits and
// for 2-byte ones: knobs so that a `variant` build can time other shapes.
// Measured at B = 1024 (perf-notes v25b-v25c): fp32 252 us at 4 not ahead,
// 268 at 2 ahead; bf16 304 at 4 not ahead, 241 at 2 ahead (a round of bf16
// is twice the tokens, so its work hides the next round's loads).
#ifndef TOKENSIFT_PLAIN_RACE_UNROLL_32
#define TOKENSIFT_PLAIN_RACE_UNROLL_32 4
#endif
#ifndef TOKENSIFT_PLAIN_RACE_AHEAD_32
#define TOKENSIFT_PLAIN_RACE_AHEAD_32 0
#endif
#ifndef TOKENSIFT_PLAIN_RACE_UNROLL_16
#define TOKENSIFT_PLAIN_RACE_UNROLL_16 2
#endif
#ifndef TOKENSIFT_PLAIN_RACE_AHEAD_16
#define TOKENSIFT_PLAIN_RACE_AHEAD_16 1
#endif
// 1: the exact score (two contract logs, a few tokens in a thousand) is an
// out-of-line call, so that its registers do not crowd a deeper load
// pipeline (fp32 4 loads ahead fits 64 registers then).  Not the default
// until timed (perf-notes next step 1).
#ifndef TOKENSIFT_PLAIN_RACE_NOINLINE_SCORE
#define TOKENSIFT_PLAIN_RACE_NOINLINE_SCORE 0
#endif

namespace tokensift::cuda_detail {

template <int kLogitBytes>
struct PlainRacePolicy {
  static constexpr int kThreads = 512;  // one CTA per row
  static constexpr int kMinBlocksPerSm = 2;  // 64 registers: a second row's loads overlap this one's race
  static constexpr int kUnroll = kLogitBytes == 4 ? TOKENSIFT_PLAIN_RACE_UNROLL_32 : TOKENSIFT_PLAIN_RACE_UNROLL_16;
  static constexpr bool kAhead = (kLogitBytes == 4 ? TOKENSIFT_PLAIN_RACE_AHEAD_32 : TOKENSIFT_PLAIN_RACE_AHEAD_16) != 0;
  static constexpr int64_t kMinRows = TOKENSIFT_PLAIN_RACE_MIN_ROWS;  // one CTA per row fills the GPU (132 SMs)
  // The cheap bounds that spare a token its exact score: the chunk phase's
  // margin and range (the error budget is in plain_race.cu, may_win).
  static constexpr float kSkipMargin = PivotPolicy::kRaceSkipMargin;
  static constexpr float kSkipMaxAbsZ = PivotPolicy::kRaceSkipMaxAbsZ;
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
