// Workspace records of the pivot sampler: what each chunk CTA hands to the
// row's merging CTA.
#pragma once

#include <stdint.h>

#include "tokensift/tokensift.hpp"

namespace tokensift::cuda_detail {

// Depths below a chunk's max at which it reports its tail mass (top-p rows):
// tail[t] >= the mass of its tokens with z < zloc - kTailDepth[t].
constexpr int kTailBins = 8;
__host__ __device__ constexpr float tail_depth(int t) {
  return t == 0 ? 2.0f : t == 1 ? 4.0f : t == 2 ? 6.0f : t == 3 ? 8.0f : t == 4 ? 11.0f : t == 5 ? 14.0f : t == 6 ? 18.0f : 24.0f;
}
struct TailMass {
  double m[kTailBins];
};

struct ChunkSummary {
  uint64_t xmax;     // pack_order(order_key(x), index) of the chunk's largest non-NaN logit
  uint64_t next;     // packed (z key, index) of the best active token NOT emitted; 0 = none
  uint64_t race;     // plain rows: packed (score key, index) of the chunk's race winner
  double mass;       // sum of exp(z - zloc) over eligible tokens (when the row needs it)
  float zloc;        // z of the chunk's largest logit
  uint32_t lb_key;   // a lower bound on the row's k-th key (0 = none)
  int32_t emitted;   // candidates written for this chunk
  int32_t eligible;  // tokens with z > -inf
  int32_t bad;       // saw a NaN or +inf logit
  int32_t pad_;
  TailMass tail;     // top-p rows: mass below zloc - tail_depth(t), relative to zloc
};

struct PivotArgs {
  const void* logits;
  int64_t row_stride;
  int64_t rows;
  int32_t vocab;
  int32_t chunks;
  SamplingParams params;
  SampleOutputs out;
  uint32_t* tickets;         // [rows], zero between calls
  ChunkSummary* summaries;   // [rows * chunks]
  uint64_t* candidates;      // [rows * chunks * kCap]
};

}  // namespace tokensift::cuda_detail
