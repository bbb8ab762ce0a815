// Tie mode of the split fallback (v100, pivot_split.cuh): top-p rows whose
// best unemitted token ties with their max (the merge's tie_run_at_max: a
// flat row, or a run of equal logits longer than its chunks emit).
//
// For most p such a row's boundary lies inside the run, where no bin can
// split it: until v100 these rows kept the in-kernel one-CTA fallback, whose
// generic search, tie cut and race pass made five passes over the row in one
// CTA (1.1 ms a flat row at V = 129,280, latency-bound; session 27's profile).
// Here the split launches take them.  Pass A's items (split_tie_pass_a_item)
// bin the row as for any deferred row and also count and race each chunk's
// ties at the max, leaving a count and a winner per chunk in the row's list
// space.  The row's last pass-A item (split_tie_cut) checks whether the
// ties' fixed-point mass reaches p W; if so the kept count is the generic
// search's with nothing above the max (every tie weighs exactly 2^shift, so
// the count is the first whose prefix, as a double, reaches the target: the
// count the histogram path, the generic search and the CPU backend agree
// on), the last kept tie is found by a block scan of the chunks' counts and
// a scan of the one chunk that holds it, and the race ends with the winners
// of the chunks before it and a race of that chunk up to the cut.  Pass B's
// items skip the row; its last item writes the result.  A boundary below
// the run keeps the bins (pass B as for any row).
//
// Failure modes: a row whose boundary is below the run but in a bin of more
// than kFbListCap tokens runs the one-CTA fallback inside the grid (as any
// deferred row whose bin overflows); rows of 2^kFbMaxVocabBits or more
// tokens never defer.
#pragma once

#include "cuda/pivot_chunk.cuh"
#include "cuda/pivot_fallback.cuh"
#include "cuda/split_item.cuh"

namespace tokensift::cuda_detail {

// Tie mode (v100; the deferred list tags the row, kDeferredTie): the boundary "bin" of a row whose top-p cut
// lies inside a run of ties at its max.  Pass A counts and races each chunk's
// ties; the row's last pass-A item cuts the run by index and finishes the
// race, so pass B's items skip the row and its last item writes the result.
constexpr int32_t kSplitTieBin = -2;

// Tie mode's per-chunk ties at the max (a u32 count each) and race winners
// (a u64 each, from u64 slot kSplitTieWinners): the row's list space, which
// pass B would fill only after the row's boundary is published.
constexpr int kSplitTieWinners = 256;
__device__ __forceinline__ uint32_t* split_tie_counts(const PivotArgs& a, int64_t row_id, int list_cap) {
  return reinterpret_cast<uint32_t*>(a.split_list + row_id * list_cap);
}
__device__ __forceinline__ uint64_t* split_tie_winners(const PivotArgs& a, int64_t row_id, int list_cap) {
  return a.split_list + row_id * list_cap + kSplitTieWinners;
}

// Tie mode's race in pass A: the item's tokens at or above `cut` (every tie
// at the max), a Philox group of four at a time, with split_race_groups'
// skip tests (only tokens that cannot beat this thread's best exact score are
// skipped, so `best` has the per-token race's bits).  Tokens below the cut
// (-inf and padding included) never enter.
template <class T, class Policy, int kN>
__device__ __forceinline__ void split_race_cut(const FallbackRow<T, Policy>& fb, const float (&x)[kN],
                                               const bool (&valid)[kN], const SplitItem<T, Policy>& it, uint64_t cut,
                                               uint64_t& best, float& best_score) {
  static_assert(kN % 4 == 0 && (16 / sizeof(T)) % 4 == 0, "groups of four on consecutive indices");
  constexpr float kInf = __builtin_huge_valf();
#pragma unroll
  for (int g = 0; g < kN / 4; ++g) {
    const uint32_t idx0 = (uint32_t)item_index<Policy, T>(it.begin, 4 * g);
    float z[4];
    float zm = -kInf;
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const int j = 4 * g + w;
      z[w] = -kInf;
      if (!valid[j]) continue;
      const float zj = fb.z_of(x[j]);
      if (!(zj > -kInf) || pack_order(contract::order_key(zj), idx0 + w) < cut) continue;
      z[w] = zj;
      zm = fmaxf(zm, zj);
    }
    race_group4(it, idx0, z, zm, best, best_score);
  }
}


// Tie mode's cut, by the row's last pass-A item (all threads; uniform
// result): when the ties at the max reach the target p W, the kept count is
// generic_top_p_fixed's with nothing above the max (the first count whose
// fixed-point prefix, as a double, reaches the target: the same count every
// path of the fallback gives), and the last kept token is the take-th tie in
// index order, found from the chunks' counts (one block scan) and a scan of
// the one chunk that holds it.  Returns 0 when the boundary lies below the
// run (the row keeps the bins).  Inline: as a call it took split_hist_kernel
// from 64 registers to 111 (the call's frame and saved state).
template <class T, class Policy>
__device__ __forceinline__ uint64_t split_tie_cut(const PivotArgs& a, int64_t row_id, FallbackRow<T, Policy>& fb,
                                                  double target, const SplitItem<T, Policy>& it, int& take_out,
                                                  uint64_t& race_out) {
  static_assert(((1 << Policy::kFbMaxVocabBits) + Policy::kChunk - 1) / Policy::kChunk <= Policy::kThreads,
                "a chunk's count a thread");
  static_assert(Policy::kThreads <= kSplitTieWinners && 2 * kSplitTieWinners <= Policy::kFbListCap,
                "the counts and the winners fit the row's list space");
  static_assert(Policy::kChunk % Policy::kThreads == 0, "a chunk splits evenly over the threads");
  using Scan = typename FallbackSmem<Policy>::Scan;
  FallbackSmem<Policy>& sm = fb.sm;
  const float scale = fb.fixed_scale();
  const uint32_t kappa = contract::order_key(fb.zmax);
  const uint64_t q = fb.fixed_weight(contract::key_to_float(kappa), scale);
  // The run's length: the scan of the chunks' counts (a thread a chunk).
  const uint32_t* counts = split_tie_counts(a, row_id, Policy::kFbListCap);
  const int c = (int)threadIdx.x < a.chunks ? (int)load_cg(&counts[threadIdx.x]) : 0;
  int before, ties;
  __syncthreads();  // sm.temp and sm.ibcast may still be read (find_boundary)
  Scan(sm.temp.scan).ExclusiveSum(c, before, ties);
  if (q == 0 || ties < 1 || !((double)((uint64_t)ties * q) >= target)) return 0;  // uniform
  int take = (int)ceil(target / (double)q);
  take = max(1, min(take, ties));
  while (take > 1 && (double)((uint64_t)(take - 1) * q) >= target) --take;
  while (take < ties && (double)((uint64_t)take * q) < target) ++take;
  if (before < take && take <= before + c) {
    sm.ibcast[4] = (int)threadIdx.x;
    sm.ibcast[5] = take - before;
  }
  if (threadIdx.x == 0) sm.found = 0xffffffffu;
  __syncthreads();
  constexpr int kPer = Policy::kChunk / Policy::kThreads;
  const int rank = sm.ibcast[5];
  const int32_t i0 = sm.ibcast[4] * Policy::kChunk + (int32_t)threadIdx.x * kPer;
  int mine = 0;
#pragma unroll
  for (int e = 0; e < kPer; ++e) mine += i0 + e < fb.vocab && fb.is_tie(i0 + e, kappa, 0);
  int before_mine;
  __syncthreads();  // the scan's storage again
  Scan(sm.temp.scan).ExclusiveSum(mine, before_mine);
  if (before_mine < rank && rank <= before_mine + mine) {
    int acc = before_mine;
    for (int e = 0; e < kPer; ++e)
      if (i0 + e < fb.vocab && fb.is_tie(i0 + e, kappa, 0) && ++acc == rank) {
        sm.found = (uint32_t)(i0 + e);
        break;
      }
  }
  __syncthreads();
  const uint32_t found = sm.found;
  if (found == 0xffffffffu) return 0;  // uniform (a guard)
  // The race over the kept ties: the winners of the chunks before the cut's
  // (every tie of those is kept), and the ties of the cut's chunk up to it,
  // loaded and raced as pass A's items race theirs (a token at a time with
  // the contract's logs, this one CTA's stage took ~10 us more a row).
  const int cut_chunk = sm.ibcast[4];
  uint64_t best = (int)threadIdx.x < cut_chunk ? load_cg(&split_tie_winners(a, row_id, Policy::kFbListCap)[threadIdx.x]) : 0;
  {
    SplitItem<T, Policy> jt = it;
    jt.begin = cut_chunk * Policy::kChunk;
    float x[Policy::kItems];
    bool valid[Policy::kItems];
    load_chunk<T, Policy>(jt.row, fb.vocab, jt.begin, x, valid);
    uint64_t mine = 0;
    float mine_score = -__builtin_huge_valf();
    split_race_cut<T, Policy, Policy::kItems>(fb, x, valid, jt, pack_order(kappa, found), mine, mine_score);
    best = mine > best ? mine : best;
  }
  race_out = fb.block_max(best);
  take_out = take;
  return pack_order(kappa, found);
}

}  // namespace tokensift::cuda_detail
