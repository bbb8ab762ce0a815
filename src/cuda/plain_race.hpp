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

// Its 16-byte loads per thread per round, for 4-byte logits and for 2-byte
// ones (each round's loads go out before the previous round is worked):
// knobs so that a `variant` build can time other shapes.  Measured at B =
// 1024, V = 129,280 (perf-notes v25b-v26): fp32 233 us at 3, 235 at 4; bf16
// 220 at 2 (the exact score out of line).
#ifndef TOKENSIFT_PLAIN_RACE_UNROLL_32
#define TOKENSIFT_PLAIN_RACE_UNROLL_32 3
#endif
#ifndef TOKENSIFT_PLAIN_RACE_UNROLL_16
#define TOKENSIFT_PLAIN_RACE_UNROLL_16 2
#endif
// 1: the exact score is an out-of-line call (0: inline, v25).
#ifndef TOKENSIFT_PLAIN_RACE_NOINLINE_SCORE
#define TOKENSIFT_PLAIN_RACE_NOINLINE_SCORE 1
#endif

// 1: each warp's bar goes to a block-wide bar (one shared atomic max a warp
// a round) and comes back raised by every other warp's; 0: per warp only.
#ifndef TOKENSIFT_PLAIN_RACE_BLOCK_BAR
#define TOKENSIFT_PLAIN_RACE_BLOCK_BAR 1
#endif

// 1: the flat split where the rows' layout allows (v77); 0: one CTA per row.
#ifndef TOKENSIFT_PLAIN_RACE_FLAT
#define TOKENSIFT_PLAIN_RACE_FLAT 1
#endif
// The flat split's rows: from FLAT_MIN_ROWS to below FLAT_MAX_ROWS.  The
// benchmark's plain rows, same run (docs/perf-notes.md v77b): at 32-96 rows
// the flat split takes 21-66 % off the chunked kernel; at 128 rows one CTA
// per row (each alone on an SM) is 7-35 % faster than it, at 192 within 3 %
// (V >= 262,208: the flat split 9-12 % faster), at 256 and more faster
// (v77: +6..+13 %, each CTA's second row segment costing more than the 8
// idle CTA slots it would fill).
#ifndef TOKENSIFT_PLAIN_RACE_FLAT_MIN_ROWS
#define TOKENSIFT_PLAIN_RACE_FLAT_MIN_ROWS 32
#endif
#ifndef TOKENSIFT_PLAIN_RACE_FLAT_MAX_ROWS
#define TOKENSIFT_PLAIN_RACE_FLAT_MAX_ROWS 128
#endif
// The flat split's least work a CTA, in rounds of its loads (a call with
// less takes fewer CTAs).
#ifndef TOKENSIFT_PLAIN_RACE_FLAT_MIN_ROUNDS
#define TOKENSIFT_PLAIN_RACE_FLAT_MIN_ROUNDS 1
#endif

namespace tokensift::cuda_detail {

template <int kLogitBytes>
struct PlainRacePolicy {
  static constexpr int kThreads = 512;  // one CTA per row
  static constexpr int kMinBlocksPerSm = 2;  // 64 registers: a second row's loads overlap this one's race
  static constexpr int kUnroll = kLogitBytes == 4 ? TOKENSIFT_PLAIN_RACE_UNROLL_32 : TOKENSIFT_PLAIN_RACE_UNROLL_16;
  static constexpr int64_t kMinRows = TOKENSIFT_PLAIN_RACE_MIN_ROWS;  // one CTA per row fills the GPU (132 SMs)
  // The cheap bounds that spare a token its exact score: the chunk phase's
  // margin and range (the error budget is in plain_race.cu, may_win).
  static constexpr float kSkipMargin = PivotPolicy::kRaceSkipMargin;
  static constexpr float kSkipMaxAbsZ = PivotPolicy::kRaceSkipMaxAbsZ;
  static constexpr bool kBlockBar = TOKENSIFT_PLAIN_RACE_BLOCK_BAR != 0;
  // The flat split (v77): rows cut into equal ranges of vectors, one a CTA,
  // over the CTAs that run at once; each CTA gets at least kFlatMinRounds
  // rounds.  Calls of kFlatMinRows to kFlatMaxRows - 1 rows take it where
  // the rows' layout allows; where it does not, calls below kMinRows keep
  // the chunked kernel (one CTA per row would leave most SMs idle).
  static constexpr bool kFlat = TOKENSIFT_PLAIN_RACE_FLAT != 0;
  static constexpr int64_t kFlatMinRounds = TOKENSIFT_PLAIN_RACE_FLAT_MIN_ROUNDS;
  static constexpr int64_t kFlatMinRows = TOKENSIFT_PLAIN_RACE_FLAT_MIN_ROWS;
  static constexpr int64_t kFlatMaxRows = TOKENSIFT_PLAIN_RACE_FLAT_MAX_ROWS;
};

// True when every row of the call is a plain row (no min-p, top-k or top-p;
// temperature above the greedy floor) by scalar parameters, no log-prob is
// asked for, and the call has kMinRows rows (one CTA per row) or, where the
// flat split can take it (rows' layout, workspace), kFlatMinRows.
bool plain_race_applies(const LogitsView& logits, const SamplingParams& params, const SampleOutputs& out,
                        const void* workspace);

// The flat split (rows cut into equal ranges of vectors over the CTAs that
// run at once) for calls below kFlatMaxRows rows where the workspace and the
// rows' layout allow, else one CTA per row; writes the token, the row status
// and the kept count.  Workspace:
// plain_race_workspace_size(rows) bytes from its start, 8-byte aligned, or
// nullptr (then one CTA per row).
cudaError_t launch_plain_race(const LogitsView& logits, const SamplingParams& params, const SampleOutputs& out,
                              void* workspace, cudaStream_t stream);

// The flat split's workspace: one accumulator per row.
size_t plain_race_workspace_size(int64_t rows);

}  // namespace tokensift::cuda_detail
