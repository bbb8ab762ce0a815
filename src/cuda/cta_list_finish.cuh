// The one-warp finish of a top-k row's list (warp_decide_and_race), with its
// per-position work spread over the CTA: the cluster kernel's CTA 0
// (pivot_cluster.cuh).
//
// Why: warp_decide_and_race sorts a list of at most 64 entries by a bitonic
// network of 64-bit shuffles (21 dependent stages), forms each position's
// mass with a double exp and races the kept prefix with Philox and two logs,
// two positions a lane one after the other.  At B = 1 that is ~2.2 us of one
// warp while the other seven of CTA 0 wait (perf-notes v63's trace), the
// longest stage after the loads.  Here the 256 threads do the per-position
// work at once: a rank sort with four threads a key (a key's place in a
// descending order of unique keys is the number of larger keys), then one
// thread a position for its mass and one for its race score.  Warp 0 then
// takes warp_decide_and_race's decisions from those values with the same
// shuffles in the same order (the survivors' sum, the prefix scan, the
// ballots), so every bit (the kept count, the token, the kept mass) equals
// what the one-warp finish returns on the same list.
//
// Only top-k rows (0 < k < V, no min-p): the survivors are then the top k,
// or the whole list when it is complete, which is all the cluster kernel
// takes.  A row the list cannot decide (top k not all above `next`) comes
// back undecided, as from the warp finish.
#pragma once

#include "cuda/pivot_merge.cuh"

namespace tokensift::cuda_detail {

constexpr int kCtaFinishList = 64;  // the warp finish's list: two positions a lane

struct CtaFinishSmem {
  uint64_t sorted[kCtaFinishList];  // the list in the contract's order, 0 past its end
  double weight[kCtaFinishList];    // exp(z - zmax) of each position
  uint64_t race[kCtaFinishList];    // packed (race score's order key, index) of each position
};

// cand[0, n) in shared memory (n <= kCtaFinishList, unique nonzero keys,
// written before a barrier); call from all threads of the CTA.  The result
// is warp 0's (thread 0 writes it).
template <int kThreads>
__device__ WarpListResult cta_topk_finish(const uint64_t* cand, int n, bool complete, uint64_t next,
                                          const RowConfig& cfg, float zmax, bool want_mass, CtaFinishSmem& fs) {
  static_assert(kThreads >= 4 * kCtaFinishList, "four threads a key");
  // Rows other than top-k without min-p come back undecided (cfg is the
  // row's, so every thread returns here together, before any barrier): the
  // caller's general finish takes them.  The cluster kernel admits only
  // such rows today; the guard keeps this helper correct on its own.
  if (!cfg.k_active || cfg.m_active) return WarpListResult{0, 0, -1, 0.0};
  const int tid = (int)threadIdx.x, lane = tid & 31;
  if (tid < 4 * kCtaFinishList) {
    // Thread q of a key's four compares it with keys q, q + 4, ...: the
    // four read neighbouring words, so a warp's loads do not share a bank.
    const int i = tid >> 2, q = tid & 3;
    const uint64_t mine = i < n ? cand[i] : 0ull;
    int r = 0;
#pragma unroll
    for (int s = 0; s < kCtaFinishList / 4; ++s) {
      const int j = q + 4 * s;
      r += j < n && cand[j] > mine;
    }
    r += __shfl_xor_sync(kFullMask, r, 1);
    r += __shfl_xor_sync(kFullMask, r, 2);
    if (q == 0) fs.sorted[i < n ? r : i] = mine;  // the n keys take places 0..n-1; the rest are 0
  }
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
