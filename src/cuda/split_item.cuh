// A split launch's item (pivot_split.cuh): a deferred row's chunk, with the
// row's fields its tokens need, and the row's bin resolution.
#pragma once

#include "cuda/pivot_fallback.cuh"
#include "cuda/pivot_types.cuh"
#include "cuda/row_config.cuh"

namespace tokensift::cuda_detail {

template <class T, class Policy>
struct SplitItem {
  int64_t row_id;
  int32_t begin;
  RowConfig cfg;
  const T* row;
};

// Chunk `chunk` of row `row_id`.  With PivotPolicy::kSplitRowFields (v93)
// its cfg holds only what an item's tokens need (temperature, min-p, seed,
// offset), from the row's SplitRow; a row's last item, which decides,
// reads the whole (split_row_config).
template <class T, class Policy>
__device__ SplitItem<T, Policy> split_item(const PivotArgs& a, int64_t row_id, int32_t chunk) {
  SplitItem<T, Policy> it;
  it.row_id = row_id;
  it.begin = chunk * Policy::kChunk;
  if constexpr (Policy::kSplitRowFields) {
    const SplitRow& s = a.split[row_id];
    it.cfg = RowConfig{};
    it.cfg.temperature = s.temperature;
    it.cfg.ln_minp = s.ln_minp;
    it.cfg.m_active = s.m_active != 0u;
    it.cfg.seed = s.seed;
    it.cfg.offset = s.offset;
    it.cfg.p_active = true;  // only top-p rows defer
  } else {
    it.cfg = load_row_config(a.params, it.row_id, a.vocab);
  }
  it.row = static_cast<const T*>(a.logits) + it.row_id * a.row_stride;
  return it;
}

// The row's whole RowConfig, for the item that decides.
template <class T, class Policy>
__device__ __forceinline__ RowConfig split_row_config(const PivotArgs& a, const SplitItem<T, Policy>& it) {
  if constexpr (Policy::kSplitRowFields) return load_row_config(a.params, it.row_id, a.vocab);
  else return it.cfg;
}

// The bin width of the row's histogram.
template <class T, class Policy>
__device__ __forceinline__ void split_set_bins(FallbackRow<T, Policy>& fb, const SplitRow& s) {
  if constexpr (Policy::kSplitRowFields) fb.set_bins(s.bins_per_unit, s.depth_cap);
  else fb.set_bins_per_unit(s.bins_per_unit);
}

// The exponential race of one Philox group of four consecutive tokens (idx0 a
// multiple of four): z[w] the tokens' z, -inf for those not in the race, zm
// their largest.  A group whose zm plus the largest possible boost stays
// below this thread's best exact score skips its Philox call, and a token
// whose bound z - ln(1 - U) (-ln U >= 1 - U; the margin covers the fast log)
// stays below it skips its two contract logs: only tokens that cannot win are
// skipped, so `best` has the per-token race's bits.  Split pass B's group loop
// (split_race_groups) and tie mode's (split_race_cut) share it.
template <class T, class Policy>
__device__ __forceinline__ void race_group4(const SplitItem<T, Policy>& it, uint32_t idx0, const float (&z)[4],
                                            float zm, uint64_t& best, float& best_score) {
  constexpr float kInf = __builtin_huge_valf();
  if (!(zm > -kInf) || zm + contract::kMaxRaceBoost < best_score - Policy::kRaceSkipMargin) return;
  const contract::Philox4 r = contract::philox_block(it.cfg.seed, it.cfg.offset, idx0 >> 2);
  const float bar = best_score - Policy::kRaceSkipMargin;
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    if (!(z[w] > -kInf)) continue;
    if (fabsf(z[w]) < Policy::kRaceSkipMaxAbsZ && z[w] - __logf(1.0f - contract::uniform_from_bits(r.v[w])) < bar)
      continue;
    const float sc = contract::race_score_from_bits(z[w], r.v[w]);
    const uint64_t p = pack_order(contract::order_key(sc), idx0 + w);
    if (p > best) {
      best = p;
      best_score = sc;
    }
  }
}

}  // namespace tokensift::cuda_detail
