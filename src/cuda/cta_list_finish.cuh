// The one-warp finish of a top-k row's list (warp_decide_and_race), with its
// per-position work spread over the CTA: the cluster kernel's CTA 0
// (pivot_cluster.cuh) and the row-CTA kernel's top-k rows (pivot_rowcta.cuh).
//
// Why: warp_decide_and_race sorts a list of at most 64 entries by a bitonic
// network of 64-bit shuffles (21 dependent stages), forms each position's
// mass with a double exp and races the kept prefix with Philox and two logs,
// two positions a lane one after the other.  At B = 1 that is ~2.2 us of one
// warp while the other seven of CTA 0 wait (perf-notes v63's trace), the
// longest stage after the loads; in the row-CTA kernel at B = 128 it is 2.9
// us a row (sort 1.0, race 0.9), behind a final compaction (a radix select
// to at most 64 entries, 1.6 us) of the ~160 the row's list holds
// (dev/rowcta_trace, session 22).  Here the 256 threads do the per-position
// work at once: a rank sort (a key's place in a descending order of unique
// keys is the number of larger keys; four threads a key up to 64 keys, two
// up to 128, one up to kThreads), which places the list's top 64 directly,
// so a list of up to kThreads entries needs no compaction first (the
// row-CTA kernel compacts its ~165 to 64 first all the same: at one thread a
// key the rank loop cost the finish more than the compaction, perf-notes
// v96 / v96b); then one thread a position for its mass and one for its race
// score.  Warp 0 then takes warp_decide_and_race's decisions from those
// values with the same shuffles in the same order (the survivors' sum, the
// prefix scan, the ballots), so every bit (the kept count, the token, the
// kept mass) equals what the one-warp finish returns on the same top 64.
//
// Only top-k rows (0 < k < V, no min-p): the survivors are then the top k,
// or the whole list when it is complete, which is all either kernel takes.
// Those bits read only the list's top k in sorted order (the survivors'
// masses, their prefix scan, the race over them), so a list cut to its top
// 64 by rank decides as the same list compacted to any top 64 or fewer
// that holds the top k.  A row the list cannot decide (top k not all above
// `next`) comes back undecided, as from the warp finish.
#pragma once

#include "cuda/pivot_merge.cuh"

namespace tokensift::cuda_detail {

constexpr int kCtaFinishList = 64;  // the warp finish's list: two positions a lane

struct CtaFinishSmem {
  uint64_t sorted[kCtaFinishList];  // the list's top 64 in the contract's order, 0 past its end
  double weight[kCtaFinishList];    // exp(z - zmax) of each position
  uint64_t race[kCtaFinishList];    // packed (race score's order key, index) of each position
  uint64_t cut;                     // the best entry left out (lists of more than 64)
};

// Places the top kCtaFinishList of cand[0, n) (n <= kThreads, unique
// nonzero keys, written before a barrier) in fs.sorted by rank, zeros past
// n, and the entry ranked kCtaFinishList (the best left out) in fs.cut when
// n is longer.  g threads a key (4, 2 or 1 as n allows; uniform), each
// comparing it with every g-th key: the g read neighbouring words, so a
// warp's loads do not share a bank.  Every thread runs the loop (its bound
// is uniform) so that the g-lane sums shuffle over whole warps.  Call from
// all threads; the caller's barrier publishes fs.
template <int kThreads>
__device__ __forceinline__ void cta_rank_place(const uint64_t* cand, int n, CtaFinishSmem& fs) {
  static_assert(kThreads >= 4 * kCtaFinishList, "four threads a key up to 64 keys");
  const int tid = (int)threadIdx.x;
  const int lg = n <= kThreads / 4 ? 2 : n <= kThreads / 2 ? 1 : 0;  // log2 of g
  const int g = 1 << lg, i = tid >> lg, q = tid & (g - 1);
  const uint64_t mine = i < n ? cand[i] : 0ull;
  int r = 0;
#pragma unroll 4
  for (int j = q; j < n; j += g) r += cand[j] > mine;
  if (lg >= 1) r += __shfl_xor_sync(kFullMask, r, 1);
  if (lg >= 2) r += __shfl_xor_sync(kFullMask, r, 2);
  // The n keys take places 0..n-1; a short list's other places get zeros.
  const int at = i < n ? r : i;
  if (q == 0 && at < kCtaFinishList) fs.sorted[at] = mine;
  if (q == 0 && i < n && at == kCtaFinishList) fs.cut = mine;
}

// cand[0, n) in shared memory (n <= kThreads, unique nonzero keys, written
// before a barrier); call from all threads of the CTA.  The result is warp
// 0's (thread 0 writes it).
template <int kThreads>
__device__ WarpListResult cta_topk_finish(const uint64_t* cand, int n, bool complete, uint64_t next,
                                          const RowConfig& cfg, float zmax, bool want_mass, CtaFinishSmem& fs) {
  // Rows other than top-k without min-p come back undecided (cfg is the
  // row's, so every thread returns here together, before any barrier): the
  // caller's general finish takes them.
  if (!cfg.k_active || cfg.m_active) return WarpListResult{0, 0, -1, 0.0};
  const int tid = (int)threadIdx.x, lane = tid & 31;
  cta_rank_place<kThreads>(cand, n, fs);
  __syncthreads();
  if (tid < kCtaFinishList) {
    // The expression warp_decide_and_race's weight and race_one form.
    fs.weight[tid] = exp((double)contract::key_to_float(packed_key(fs.sorted[tid])) - (double)zmax);
  } else if (tid < 2 * kCtaFinishList && tid - kCtaFinishList < n) {
    const uint64_t e = fs.sorted[tid - kCtaFinishList];
    const float z = contract::key_to_float(packed_key(e));
    const uint32_t idx = packed_index(e);
    fs.race[tid - kCtaFinishList] =
        pack_order(contract::order_key(contract::race_score(z, cfg.seed, cfg.offset, idx)), idx);
  }
  __syncthreads();
  WarpListResult res{0, 0, -1, 0.0};
  if (tid >= 32) return res;
  if (n > kCtaFinishList) {
    // The top 64 as a list exact down to the best entry left out (every
    // place holds a key above it).
    complete = false;
    next = fs.cut > next ? fs.cut : next;
    n = kCtaFinishList;
  }
  const uint64_t v0 = fs.sorted[lane], v1 = fs.sorted[lane + 32];
  int valid_prefix = n;  // candidates that precede `next`
  if (!complete) valid_prefix = __popc(__ballot_sync(kFullMask, v0 > next)) + __popc(__ballot_sync(kFullMask, v1 > next));
  const int survivors = cfg.top_k <= valid_prefix ? cfg.top_k : complete ? n : -1;
  if (survivors < 0) return res;
  const double w0 = fs.weight[lane], w1 = fs.weight[lane + 32];
  int m = survivors;
  if (cfg.p_active) {
    double w = 0;
    if (lane < survivors) w += w0;
    if (lane + 32 < survivors) w += w1;
    const double target = (double)cfg.top_p * warp_sum(w);
    // First position whose prefix mass reaches the target; none: rounding,
    // the whole set is the prefix.
    const double s0 = warp_inclusive_sum(lane < survivors ? w0 : 0.0);
    const double s1 = __shfl_sync(kFullMask, s0, 31) + warp_inclusive_sum(lane + 32 < survivors ? w1 : 0.0);
    const unsigned h0 = __ballot_sync(kFullMask, lane < survivors && s0 >= target);
    const unsigned h1 = __ballot_sync(kFullMask, lane + 32 < survivors && s1 >= target);
    if (h0) m = __ffs((int)h0);
    else if (h1) m = 32 + __ffs((int)h1);
  }
  uint64_t best = 0;
  double w = 0;
  if (lane < m) {
    best = fs.race[lane];
    if (want_mass) w += w0;
  }
  if (lane + 32 < m) {
    best = fs.race[lane + 32] > best ? fs.race[lane + 32] : best;
    if (want_mass) w += w1;
  }
  best = warp_max_u64(best);
  if (want_mass) w = warp_sum(w);  // the kept set's mass: the log-prob's only
  return {1, m, (int32_t)packed_index(best), w};
}

}  // namespace tokensift::cuda_detail
