// How a merging CTA hands a row to the split fallback (pivot_split.cuh):
// which rows it takes, the deferral itself, the row's histogram resolution,
// and the merged-row count the streaming split launch waits on.
#pragma once

#include <cstdint>

#include "cuda/cuda_utils.cuh"
#include "cuda/pivot_types.cuh"
#include "cuda/row_config.cuh"

namespace tokensift::cuda_detail {

// Rows the split fallback takes: top-p without top-k (whose deep boundaries are
// what the chunks' candidates miss), at vocabularies where its fixed-point
// masses are exact enough.  The host skips the split launches when no row of
// a call can qualify.
template <class Policy>
__host__ __device__ inline bool split_vocab_ok(int64_t vocab) {
  return vocab < (int64_t(1) << Policy::kFbMaxVocabBits);
}

// The deferred list's tag for a row in tie mode (pivot_split.cuh): the items
// read it with the row id, so the form of its pass A is known with no load of
// its own.
constexpr uint32_t kDeferredTie = 0x80000000u;

// Hands the row to the split fallback: clears its histogram and counters and
// appends it to the deferred list.  The entry is published last, with release
// semantics (after the barrier that orders every thread's histogram stores):
// the streaming split launch may be running already and takes the row as soon
// as it sees the entry (pivot_split.cuh, split_stream_kernel).
template <class Policy>
__device__ void defer_row(const PivotArgs& a, int64_t row_id, const RowConfig& cfg, float zmax, float bins_per_unit,
                          bool tie_run_at_max = false) {
  unsigned long long* hist = a.split_hist + row_id * Policy::kFbBins;
  for (int b = threadIdx.x; b < Policy::kFbBins; b += Policy::kThreads) hist[b] = 0;
  __syncthreads();
  if (threadIdx.x == 0) {
    SplitRow s{};
    s.zmax = zmax;
    s.bin = -1;
    s.bins_per_unit = bins_per_unit;
    s.depth_cap = (float)(Policy::kFbBins - 1) / bins_per_unit;  // FallbackRow::set_bins_per_unit's division
    s.temperature = cfg.temperature;
    s.ln_minp = cfg.ln_minp;
    s.m_active = cfg.m_active;
    s.seed = cfg.seed;
    s.offset = cfg.offset;
    a.split[row_id] = s;
    store_release(&a.deferred_rows[atomicAdd(a.deferred_count, 1u)],
                  ((uint32_t)row_id + 1u) | (tie_run_at_max ? kDeferredTie : 0u));
  }
}

// The split fallback's histogram resolution for a top-p row without min-p
// whose W is w: ln(V / W) is the depth below the max where a typical token
// sits, so kFbDepthBins bins per that depth keep the bin at the boundary to a
// few hundred tokens on near-flat rows (depth ~1) and on peaked ones (depth
// ~10-20) alike.
template <class Policy>
__device__ __forceinline__ float split_bins_per_unit(int64_t vocab, double w) {
  const double depth = log((double)vocab / w);
  return depth > 0.0 ? (float)fmin(fmax((double)Policy::kFbDepthBins / depth, 8.0), 65536.0) : 65536.0f;
}

// The merging CTA's last word on a row (thread 0, after its result or its
// deferral is written): the streaming split launch ends once every row has
// been merged and it has run every deferred row.
__device__ __forceinline__ void row_merged(const PivotArgs& a) {
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(a.rows_done) : "memory");
}

}  // namespace tokensift::cuda_detail
