// Tuning numbers of the pivot sampler, in one place.  Kernels take the policy
// as a template parameter and never hard-code these.
#pragma once

#include <stdint.h>

namespace tokensift::cuda_detail {

struct PivotPolicy {
  static constexpr int kThreads = 256;        // per CTA, chunk and merge phases
  static constexpr int kMinBlocksPerSm = 4;   // caps registers at 64 so 4 CTAs (64 KB of loads) fit per SM
  static constexpr int kItems = 16;           // logits per thread in the chunk phase
  static constexpr int kChunk = kThreads * kItems;  // 4096 logits per CTA
  static constexpr int kCap = 64;             // most candidates a chunk emits
  static constexpr int kTopPEmit = 32;        // candidates a chunk emits for top-p-only rows
  static constexpr int kMergeCap = 4096;      // most candidates the merge sorts in shared memory
  static constexpr int kMaxMergeChunks = 128; // chunk counts cached in shared memory (V <= 512K)
  static constexpr int kFallbackPivots = 3;   // quaternary search in the fallback
};

// Chunks per row depend on V only (never on the batch), so a row's result and
// its arithmetic are the same at any batch size.
inline int64_t pivot_chunks(int64_t vocab) {
  return (vocab + PivotPolicy::kChunk - 1) / PivotPolicy::kChunk;
}

}  // namespace tokensift::cuda_detail
