// The row-CTA kernel's candidate list (pivot_rowcta.cuh): the merge's
// shared-memory buffer (MergeSmem::cand, kMergeCap packed (key, index)
// entries) filled by offers against tau and kept under half full by
// compactions.  A compaction is a radix select of the buffer's top
// need..cap (block_threshold_select), or, when ties at the k-th key make
// that impossible, a sort and an exact cut at need in the contract's order;
// tau rises to the cut.  An offer that finds the buffer full is returned to
// its thread (a bit per logit) and made again after the compaction, so no
// token is lost.
#pragma once

#include "cuda/block_rank_sort.cuh"
#include "cuda/block_threshold_select.cuh"
#include "cuda/pivot_merge.cuh"
#include "cuda/vector_logits.cuh"

namespace tokensift::cuda_detail {

// rowcta_compact's work on a list of n entries (cap < n <= kSlots x
// kThreads) read kSlots to a thread.  The select sees the same keys at any
// kSlots, and compact_list writes thread by thread, so a list that fits in
// fewer slots gives the same cut and the same order with them.
template <class Policy, int kSlots>
__device__ __forceinline__ void rowcta_compact_slots(MergeSmem<Policy>& sm, uint64_t& tau_sh, int n, int need,
                                                     int cap) {
  uint64_t v[kSlots];
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int i = s * Policy::kThreads + (int)threadIdx.x;
    v[s] = i < n ? sm.cand[i] : 0ull;
  }
  const ThresholdResult t = block_threshold_select<Policy::kThreads, kSlots, uint64_t>(v, need, cap, 0u, sm.thresh);
  uint64_t cut;
  if (!t.exact) {
    cut = (uint64_t)t.key << 32;  // every token whose key is at least t.key
    const int kept = compact_list<Policy>(sm, v, [&](uint64_t e) { return e >= cut; });
    if (threadIdx.x == 0) sm.count = kept;
  } else {
    // Ties at the k-th key: the contract's order (index ascending among
    // equal keys) decides, so sort and keep exactly `need`.
    block_sort_desc<Policy::kThreads, Policy::kRankSortMax>(sm.cand, n);
    cut = sm.cand[need - 1];
    if (threadIdx.x == 0) sm.count = need;
  }
  if (threadIdx.x == 0 && cut > tau_sh) tau_sh = cut;
  __syncthreads();
}

// Keeps the buffer's top need..cap (exactly need on ties) and raises tau to
// the cut: at most cap entries stay.  Call from all threads.  The final
// compaction of a top-k row holds ~270 entries (tau aims at the top
// kRowCtaAim): under kCompactCode it runs the 2-slot form, whose unrolled
// slot loops are an eighth of the full buffer's (code run once per row is
// fetched cold; pivot_policy.cuh).
template <class Policy>
__device__ __noinline__ void rowcta_compact(MergeSmem<Policy>& sm, uint64_t& tau_sh, int need, int cap) {
  constexpr int kSlots = Policy::kMergeCap / Policy::kThreads;
  __syncthreads();
  const int n = sm.count < Policy::kMergeCap ? sm.count : Policy::kMergeCap;
  if (n <= cap) return;
  if (Policy::kCompactCode && n <= 2 * Policy::kThreads) rowcta_compact_slots<Policy, 2>(sm, tau_sh, n, need, cap);
  else rowcta_compact_slots<Policy, kSlots>(sm, tau_sh, n, need, cap);
}

// Min-p rows: keeps the buffer's tokens that pass min-p against cur_max (a
// lower bound on the row's max, so every survivor stays), and under kTau
// only those at or above tau (a gated row's, pivot_rowcta.cuh).  Returns
// whether the buffer now has room (under half full).  Lists of at most 2 x
// kThreads (the final filter's, ~10 entries on the anchors' rows) take the
// 2-slot form under kCompactCode; the same entries in the same order.
template <class Policy, int kSlots, bool kTau>
__device__ __forceinline__ int rowcta_filter_minp_slots(MergeSmem<Policy>& sm, int n, float cur_max, float ln_minp,
                                                        uint64_t tau) {
  uint64_t v[kSlots];
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int i = s * Policy::kThreads + (int)threadIdx.x;
    v[s] = i < n && contract::passes_min_p(contract::key_to_float(packed_key(sm.cand[i])), cur_max, ln_minp) &&
                   (!kTau || sm.cand[i] >= tau)
               ? sm.cand[i]
               : 0ull;
  }
  return compact_list<Policy>(sm, v, [](uint64_t e) { return e != 0; });
}
template <class Policy, bool kTau>
__device__ __forceinline__ bool rowcta_filter_minp_impl(MergeSmem<Policy>& sm, float cur_max, float ln_minp,
                                                        uint64_t tau) {
  constexpr int kSlots = Policy::kMergeCap / Policy::kThreads;
  __syncthreads();
  const int n = sm.count < Policy::kMergeCap ? sm.count : Policy::kMergeCap;
  const int kept = Policy::kCompactCode && n <= 2 * Policy::kThreads
                       ? rowcta_filter_minp_slots<Policy, 2, kTau>(sm, n, cur_max, ln_minp, tau)
                       : rowcta_filter_minp_slots<Policy, kSlots, kTau>(sm, n, cur_max, ln_minp, tau);
  if (threadIdx.x == 0) sm.count = kept;
  __syncthreads();
  return kept <= Policy::kMergeCap / 2;
}
template <class Policy>
__device__ __noinline__ bool rowcta_filter_minp(MergeSmem<Policy>& sm, float cur_max, float ln_minp) {
  return rowcta_filter_minp_impl<Policy, false>(sm, cur_max, ln_minp, 0ull);
}
template <class Policy>
__device__ __noinline__ bool rowcta_filter_minp_tau(MergeSmem<Policy>& sm, float cur_max, float ln_minp, uint64_t tau) {
  return rowcta_filter_minp_impl<Policy, true>(sm, cur_max, ln_minp, tau);
}

// Offers the items of `mask` (scaled logits z, indices from idx0 / stride
// as the row-CTA kernel's iterations lay them out) that reach tau; returns
// those that found the buffer full.
template <class Policy, bool kMinP, int kPer, int kVec>
__device__ __forceinline__ uint32_t rowcta_offer(MergeSmem<Policy>& sm, const float (&z)[kPer], uint32_t mask,
                                                 int32_t i0, bool scalar, int32_t hi, int32_t ti, uint64_t tau,
                                                 float tau_f, float cur_max, float ln_minp) {
  uint32_t dropped = 0;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const bool want = kMinP ? contract::passes_min_p(z[j], cur_max, ln_minp) : z[j] >= tau_f;
    if ((mask >> j & 1u) && want && z[j] > -__builtin_huge_valf()) {
      const uint32_t idx = scalar ? (uint32_t)(j == 0 ? hi : ti)
                                  : (uint32_t)(i0 + ((j / kVec) * Policy::kThreads + (int)threadIdx.x) * kVec + (j % kVec));
      const uint64_t p = pack_order(contract::order_key(z[j]), idx);
      if (p >= tau) {
        const int at = atomicAdd(&sm.count, 1);
        if (at < Policy::kMergeCap) sm.cand[at] = p;
        else dropped |= 1u << j;
      }
    }
  }
  return dropped;
}

// rowcta_offer for a whole iteration, vector by vector: only the vectors
// in `vflags` (those whose max reaches tau or passes min-p: a superset of
// the vectors holding an offered token, since scaling and both tests are
// monotone; a vector with a NaN is skipped, its row's status is NaN) form
// their z and test their tokens.  A warp runs a vector's tests when any of
// its lanes flags that vector; it ran all kPer tests per lane when any lane
// offered anything, which at ~280 offers per row was nearly every iteration
// (~15 instructions per logit).
template <class T, class Policy, bool kMinP, bool kUnit, int kVec>
__device__ __forceinline__ uint32_t rowcta_offer_vector(MergeSmem<Policy>& sm, const uint4& raw, int u, int32_t i0,
                                                        uint64_t tau, float tau_f, float cur_max, float ln_minp,
                                                        float temperature) {
  uint32_t dropped = 0;
  float f[kVec];
  unpack_vector<T>(raw, f);
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    float z = f[k];
    if (!kUnit) {
      const float sc = contract::scale(z, temperature);
      z = sc > -__builtin_huge_valf() ? sc : -__builtin_huge_valf();
    }
    const bool want = kMinP ? contract::passes_min_p(z, cur_max, ln_minp) : z >= tau_f;
    if (want && z > -__builtin_huge_valf()) {
      const uint32_t idx = (uint32_t)(i0 + (u * Policy::kThreads + (int)threadIdx.x) * kVec + k);
      const uint64_t p = pack_order(contract::order_key(z), idx);
      if (p >= tau) {
        const int at = atomicAdd(&sm.count, 1);
        if (at < Policy::kMergeCap) sm.cand[at] = p;
        else dropped |= 1u << (u * kVec + k);
      }
    }
  }
  return dropped;
}
template <class T, class Policy, bool kMinP, bool kUnit, int kPer, int kVec>
__device__ __forceinline__ uint32_t rowcta_offer_vectors(MergeSmem<Policy>& sm, const uint4 (&raw)[kPer / kVec],
                                                         uint32_t vflags, int32_t i0, uint64_t tau, float tau_f,
                                                         float cur_max, float ln_minp, float temperature) {
  constexpr int kUnroll = kPer / kVec;
  uint32_t dropped = 0;
  if constexpr (Policy::kRowCtaOfferLoop) {
    // One copy of the vector's test, its vector picked by a select chain
    // (indexing raw[] by a run-time u would put it in local memory).  A
    // lane's flags are few (~280 offers a row), so the loop runs once or
    // twice where the unrolled form fetched kUnroll copies.
#pragma unroll 1
    while (vflags) {
      const int u = __ffs((int)vflags) - 1;
      vflags &= vflags - 1u;
      uint4 r = raw[0];
#pragma unroll
      for (int q = 1; q < kUnroll; ++q)
        if (u == q) r = raw[q];
      dropped |= rowcta_offer_vector<T, Policy, kMinP, kUnit, kVec>(sm, r, u, i0, tau, tau_f, cur_max, ln_minp,
                                                                    temperature);
    }
  } else {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (!(vflags >> u & 1u)) continue;
      dropped |= rowcta_offer_vector<T, Policy, kMinP, kUnit, kVec>(sm, raw[u], u, i0, tau, tau_f, cur_max, ln_minp,
                                                                    temperature);
    }
  }
  return dropped;
}

}  // namespace tokensift::cuda_detail
