// Split fallback of the pivot sampler: the histogram path of
// pivot_fallback.cuh, spread over many CTAs, for top-p rows whose boundary the
// chunks' candidates miss (kept sets of hundreds to tens of thousands).
//
// Why: one CTA streaming a 129k-logit row is bound by its own instruction
// latency, not by memory: 8 warps cannot hide the ~40 dependent instructions
// each token costs (bin, fixed-point weight, atomics; Philox for the race), so
// each pass took ~150 us on the H200.  The same passes over the row's 4,096-
// logit chunks, one CTA each, take a few microseconds.
//
// One more launch per call (two above kSplitFusedMaxItems items), a persistent
// grid of up to kSplitCtas CTAs (no more than the call has chunks) that takes
// (deferred row, chunk) items from a counter, all of pass A's before any of
// pass B's; it exits at once when no row was deferred, and the host skips it
// when no row of the call can qualify.  A pass-B item waits for its own
// row's boundary (a flag pass A's last item releases), not for the whole of
// pass A: the items it waits for were claimed before it, by running CTAs.
// Behind the chunked kernel the one launch streams (split_stream_kernel,
// sm_90's programmatic dependent launch): it runs beside the pivot kernel's
// last wave and takes each row as the merge publishes it; there pass B is
// counted in half chunks, and an item is half a chunk while the halves of
// the rows deferred so far fit the CTAs that run at once (split_stream_claim),
// so a lone deferred row's pass B, on an otherwise idle GPU, ends about twice
// as soon.
//   A. Each item bins its chunk (depth below zmax, fixed-point mass) in shared
//      memory and adds the non-empty bins to the row's global histogram with
//      64-bit integer atomics.  The row's last item (a ticket) scans the
//      histogram for the bin where the prefix reaches p W.
//   B. Each item appends its tokens of that bin to the row's global list and
//      counts its tokens above it; those go to a queue in shared memory and
//      the CTA races them a thread a token (v86: raced in each thread's loop,
//      a warp ran the race whenever one lane needed it), then each warp adds
//      its count and best to the row by atomics (v88).  The row's last item
//      sorts the list in shared memory, scans to the boundary, finishes the
//      race and writes the result.
// Both passes are bound by instructions a token, not by bytes (Nsight
// Compute at V = 262,208 B = 1024: pass A 74 a token at 69 % issue busy);
// a per-lane skip saves nothing while a warp's lanes disagree (v87).  So
// the token loops carry no test a row does not need: without min-p, padding
// and masked tokens are -inf, which lands in the catch-all bin with weight
// 0, so neither validity nor eligibility is tested (v90), and pass A bins
// every token from a run already open on that bin (v92).  What an item
// costs besides its tokens is paid less often: the row's fields are derived
// once, when the row is deferred (SplitRow, v93), and in the two-launch form
// an item covers two chunks once the call has two for every CTA that runs
// at once (v91 pass B, v94 pass A: one claim, one ticket, one flush).
// The bins are scaled to the row (kFbDepthBins per ln(V / W), W from the
// chunks' sums), so near-flat rows (logits within a unit or two of the max)
// resolve here too instead of overflowing one bin of the fixed grid.
// Every cross-CTA combination is an integer sum or a max, so the result does
// not depend on which CTA handled which item: the same bits as the one-CTA
// histogram path, at any batch size.  When the grid cannot pin the bin (a bin
// of more than kFbListCap tokens), the last item of B runs the one-CTA
// fallback instead.
// Rows whose boundary lies in a run of ties at their max (flat rows) take
// tie mode (split_tie.cuh): pass A also counts and races the run, its last
// item cuts it by index, and pass B skips the row.
#pragma once

#include "cuda/pivot_chunk.cuh"
#include "cuda/pivot_fallback.cuh"
#include "cuda/pivot_merge.cuh"
#include "cuda/split_item.cuh"
#include "cuda/split_tie.cuh"
#include "cuda/split_trace.cuh"

namespace tokensift::cuda_detail {

// The one-CTA fallback as a call (PivotPolicy::kSplitRunCall): inlined, its
// code (every path of FallbackRow::run) is compiled into the split kernels
// beside their item loops.
template <class T, class Policy>
__device__ __noinline__ FallbackResult run_fallback_out_of_line(FallbackRow<T, Policy> fb, const RowConfig& cfg) {
  return fb.run(cfg);
}

// The row of a launch's deferred-list slot, once the pivot kernel is over.
__device__ __forceinline__ int64_t deferred_row(const PivotArgs& a, int64_t slot) {
  return (int64_t)(a.deferred_rows[slot] & ~kDeferredTie) - 1;
}
__device__ __forceinline__ bool deferred_tie(const PivotArgs& a, int64_t slot) {
  return (a.deferred_rows[slot] & kDeferredTie) != 0u;
}

// Items are handed out one at a time from a counter, so a CTA that spends long
// on one row's last item (the sort, or the one-CTA fallback) holds no other
// row's items: with a static split it held every gridDim-th item and rows
// queued behind it (v6's constant-row regression, docs/perf-notes.md).
__device__ __forceinline__ int64_t next_item(uint32_t* counter, int64_t& slot) {
  __syncthreads();  // everyone has read the previous item
  if (threadIdx.x == 0) slot = atomicAdd(counter, 1u);
  __syncthreads();
  return slot;
}

// Whether this item, covering `units` of the row's `total` (chunks; the
// streaming launch's pass B counts half chunks), is the row's last to
// arrive, after every earlier item's global writes are visible.
template <class Policy>
__device__ bool split_last_n(uint32_t* ticket, int32_t units, int32_t total, int& flag) {
  __syncthreads();
  if (threadIdx.x == 0) flag = ticket_arrive_n(ticket, (uint32_t)units) + (uint32_t)units == (uint32_t)total;
  __syncthreads();
  return flag;
}

// Pass A on one item: the histogram of its `spans` consecutive chunks (two
// in split_hist_kernel's paired items, v94: one flush of the histogram, one
// claim, one ticket for both) into the row's; the row's last item finds the
// boundary bin and publishes it (SplitRow::ready).
template <class T, class Policy, bool kTie = false>
__device__ __forceinline__ void split_pass_a_item(const PivotArgs& a, int64_t row_id, int32_t chunk, int64_t item,
                                                  FallbackSmem<Policy>& sm, int& last_flag, int spans = 1) {
  const SplitItem<T, Policy> it = split_item<T, Policy>(a, row_id, chunk);
  TS_SPLIT_ROW_FIRST(it.row_id, 1);
  TS_SPLIT_ITEM(0, item, 0, it.row_id);
  // The chunk's loads go out first: their latency (HBM, ~1 us) then
  // overlaps the row's fields and the histogram's clearing instead of
  // following them on the deferred row's chain.
  float x[Policy::kItems];
  bool valid[Policy::kItems];
  load_chunk<T, Policy>(it.row, a.vocab, it.begin, x, valid);
  SplitRow& s = a.split[it.row_id];
  FallbackRow<T, Policy> fb{it.row, a.vocab, it.cfg.temperature, s.zmax, it.cfg.ln_minp, it.cfg.m_active, sm};
  split_set_bins(fb, s);
  const float scale = fb.fixed_scale();
  // Tie mode (split_tie_pass_a_item): the generic token loop also counts and
  // races each chunk's ties at the max.
  constexpr bool tie = Policy::kSplitTieMode && kTie;
  if (tie && threadIdx.x == 0) {  // ordered by hist_clear's barriers
    sm.tie_span[0] = sm.tie_span[1] = 0u;
    sm.tie_best[0] = sm.tie_best[1] = 0ull;
  }
  fb.hist_clear();
  typename FallbackRow<T, Policy>::BinRun run;
  const bool lean_hist = Policy::kSplitLeanHist && !it.cfg.m_active && !tie;
  if (lean_hist) run.bin = Policy::kFbBins - 1;  // weight 0 (padding, -inf) goes to the catch-all bin
  for (int span = 0; span < spans; ++span) {
    if (span > 0) load_chunk<T, Policy>(it.row, a.vocab, it.begin + span * Policy::kChunk, x, valid);
    if (lean_hist) {
#pragma unroll
      for (int j = 0; j < Policy::kItems; ++j) fb.template hist_token<true, true>(run, fb.z_of(x[j]), scale);
    } else if (Policy::kSplitLeanTokens && !it.cfg.m_active && !tie) {
      // Padding and masked tokens are -inf: weight 0, dropped by hist_token.
#pragma unroll
      for (int j = 0; j < Policy::kItems; ++j) fb.template hist_token<true>(run, fb.z_of(x[j]), scale);
    } else {
      unsigned int ties = 0;
#pragma unroll
      for (int j = 0; j < Policy::kItems; ++j) {
        if (!valid[j]) continue;
        const float z = fb.z_of(x[j]);
        if (fb.eligible(z)) {
          fb.template hist_token<true>(run, z, scale);
          if constexpr (tie) ties += z == fb.zmax;
        }
      }
      if constexpr (tie) {  // count and race the span's ties
        ties = __reduce_add_sync(0xffffffffu, ties);
        if ((threadIdx.x & 31) == 0 && ties) atomicAdd(&sm.tie_span[span], ties);
        SplitItem<T, Policy> jt = it;
        jt.begin += span * Policy::kChunk;
        uint64_t best = 0;
        float best_score = -__builtin_huge_valf();
        split_race_cut<T, Policy, Policy::kItems>(fb, x, valid, jt, (uint64_t)contract::order_key(fb.zmax) << 32, best,
                                                  best_score);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
          const uint64_t y = __shfl_xor_sync(0xffffffffu, best, o);
          best = y > best ? y : best;
        }
        if ((threadIdx.x & 31) == 0 && best) atomicMax(&sm.tie_best[span], (unsigned long long)best);
      }
    }
  }
  fb.hist_flush(run);
  __syncthreads();
  if (tie && threadIdx.x == 0) {  // before the ticket, whose release publishes them
    uint32_t* counts = split_tie_counts(a, it.row_id, Policy::kFbListCap);
    uint64_t* winners = split_tie_winners(a, it.row_id, Policy::kFbListCap);
    for (int span = 0; span < spans; ++span) {
      counts[chunk + span] = sm.tie_span[span];
      winners[chunk + span] = sm.tie_best[span];
    }
  }
  TS_SPLIT_ITEM(0, item, 1, it.row_id);
  unsigned long long* hist = a.split_hist + it.row_id * Policy::kFbBins;
  for (int b = threadIdx.x; b < Policy::kFbBins; b += Policy::kThreads) {
    const uint64_t v = fb.hist_value(b);
    if (v) atomicAdd(&hist[b], (unsigned long long)v);
  }
  TS_SPLIT_ITEM(0, item, 2, it.row_id);
  const bool last_a = split_last_n<Policy>(&s.ticket_a, spans, a.chunks, last_flag);
  TS_SPLIT_ITEM(0, item, 3, it.row_id);
  if (last_a) {
    TS_SPLIT_ROW(it.row_id, 2);
    const auto bd = fb.template find_boundary<true>(
        [&](int b) { return (uint64_t)load_cg(&hist[b]); }, split_row_config(a, it));
    int take = 0;
    uint64_t race = 0, cut = 0;
    if constexpr (tie) cut = split_tie_cut<T, Policy>(a, it.row_id, fb, bd.target, it, take, race);
    if (threadIdx.x == 0) {
      s.bin = cut ? kSplitTieBin : bd.bin;
      s.above_m = bd.above;
      s.target = bd.target;
      s.take = take;
      if (cut) s.race = race;  // pass B's items skip the row
      store_release(&s.ready, 1u);  // after the fields above (same thread)
    }
    TS_SPLIT_ROW(it.row_id, 3);
  }
  __syncthreads();
}

// Pass A on an item of a row deferred in tie mode (kDeferredTie): out of line,
// so that the kernels' item loops for other rows keep main's registers and
// code (inline, the tie form's race took split_stream_kernel's p0.9 at B = 16
// +1.4..+2.3 %, v100's first A / B).
template <class T, class Policy>
__device__ __noinline__ void split_tie_pass_a_item(const PivotArgs& a, int64_t row_id, int32_t chunk, int64_t item,
                                                   FallbackSmem<Policy>& sm, int& last_flag, int spans) {
  split_pass_a_item<T, Policy, true>(a, row_id, chunk, item, sm, last_flag, spans);
}
template <class T, class Policy>
__device__ __forceinline__ void split_pass_a(const PivotArgs& a, int64_t row_id, bool tie, int32_t chunk,
                                             int64_t item, FallbackSmem<Policy>& sm, int& last_flag, int spans = 1) {
  if (Policy::kSplitTieMode && tie) split_tie_pass_a_item<T, Policy>(a, row_id, chunk, item, sm, last_flag, spans);
  else split_pass_a_item<T, Policy>(a, row_id, chunk, item, sm, last_flag, spans);
}

// Pass B's token loop, a Philox group of four tokens at a time (v42): the
// tokens of the boundary bin go to `append` (packed order), those above it
// are counted and raced.  Four consecutive tokens share one Philox call
// (contract::token_bits), and item_index puts every group of four of a
// thread's items on consecutive indices from a multiple of four, so one
// philox_block serves the group; the race per token wrote 16 of them per
// thread, inlined at each token with its two contract logs (v37b's trace:
// 5.6-7.9 us per 4,096-logit item, latency-bound).  Before a token's exact
// score the chunk phase's test drops tokens that cannot beat this thread's
// best exact score so far (score = z - ln E <= z - ln(1 - U); the margin
// covers the fast log), and a group whose best z plus the largest possible
// boost stays below it skips its Philox call.  Only tokens that cannot win
// are skipped, so `best` has the bits of the per-token loop.
template <class T, class Policy, int kN, class Append>
__device__ __forceinline__ void split_race_groups(const FallbackRow<T, Policy>& fb, const float (&x)[kN],
                                                  const bool (&valid)[kN], const SplitItem<T, Policy>& it, int bin,
                                                  Append&& append, uint64_t& n_above, uint64_t& best) {
  static_assert(kN % 4 == 0 && (16 / sizeof(T)) % 4 == 0, "groups of four on consecutive indices");
  constexpr float kInf = __builtin_huge_valf();
  float best_score = -kInf;
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
      if (!fb.eligible(zj)) continue;
      const int b = fb.bin_of(zj);
      if (b > bin) continue;
      if (b == bin) {
        append(pack_order(contract::order_key(zj), idx0 + w));
      } else {
        n_above += 1;
        z[w] = zj;
        zm = fmaxf(zm, zj);
      }
    }
    race_group4(it, idx0, z, zm, best, best_score);
  }
}

// Pass B's token loop with the race compacted (v86, PivotPolicy::
// kSplitRaceQueue): the loop only sorts each token into above the bin, in
// it (to `append`) or below; the tokens above go, as (z, index) pairs, to a
// queue in shared memory (`queue`, the list's space, free until the row's
// last item loads the list there), a warp's worth reserved by one atomic;
// then the CTA races the queue, a thread a token.  The race in the loop
// (split_race_groups) ran a Philox group and two contract logs in a warp
// whenever one of its lanes had a token above the bin, so on a deep row
// (a few of a thread's 16 tokens a warp) nearly every warp ran nearly every
// group.  The skip test is the loop's: a token is dropped only when it cannot
// beat this thread's best exact score, so `best` has the same bits.
// The tokens of the bin go to `append`; the mask of those above it is
// returned.  kLean (PivotPolicy::kSplitLeanTokens, v90): the row has no
// min-p and its boundary is not the catch-all bin, so the only ineligible
// tokens, -inf (padding included), land in the catch-all bin, below `bin`,
// and the loop needs neither `valid` nor eligibility.
template <bool kLean, class T, class Policy, int kN, class Append>
__device__ __forceinline__ uint32_t split_classify(const FallbackRow<T, Policy>& fb, const float (&x)[kN],
                                                   const bool (&valid)[kN], const SplitItem<T, Policy>& it, int bin,
                                                   Append&& append) {
  uint32_t above = 0;
#pragma unroll
  for (int j = 0; j < kN; ++j) {
    if (!kLean && !valid[j]) continue;
    const float z = fb.z_of(x[j]);
    if (!kLean && !fb.eligible(z)) continue;
    const int b = fb.bin_of(z);
    if (b > bin) continue;
    if (b == bin) append(pack_order(contract::order_key(z), (uint32_t)item_index<Policy, T>(it.begin, j)));
    else above |= 1u << j;
  }
  return above;
}

template <class T, class Policy, int kN, class Append>
__device__ __forceinline__ void split_race_queued(const FallbackRow<T, Policy>& fb, const float (&x)[kN],
                                                  const bool (&valid)[kN], const SplitItem<T, Policy>& it, int bin,
                                                  Append&& append, uint64_t* queue, int& queue_n,
                                                  uint64_t& n_above, uint64_t& best, float& best_score) {
  static_assert(kN <= 32, "a thread's tokens above the bin as one 32-bit mask");
  static_assert(Policy::kThreads * kN <= Policy::kFbListCap, "every token of an item fits the queue");
  static_assert(Policy::kThreads % 32 == 0, "whole warps reserve queue space");
  const bool lean = Policy::kSplitLeanTokens && !it.cfg.m_active && bin < Policy::kFbBins - 1;
  const uint32_t above = lean ? split_classify<true>(fb, x, valid, it, bin, append)
                              : split_classify<false>(fb, x, valid, it, bin, append);
  const int n = __popc(above);
  n_above += (uint64_t)n;
  // The warp's inclusive prefix of n, one atomic for its total.
  const int lane = threadIdx.x & 31;
  int incl = n;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += y;
  }
  int base = 0;
  if (lane == 31 && incl) base = atomicAdd(&queue_n, incl);
  int at = __shfl_sync(0xffffffffu, base, 31) + incl - n;
#pragma unroll
  for (int j = 0; j < kN; ++j)
    if ((above >> j) & 1u)
      queue[at++] = ((uint64_t)__float_as_uint(fb.z_of(x[j])) << 32) | (uint32_t)item_index<Policy, T>(it.begin, j);
  __syncthreads();
  const int queued = queue_n;
  for (int q = threadIdx.x; q < queued; q += Policy::kThreads) {
    const uint64_t e = queue[q];
    const float z = __uint_as_float((uint32_t)(e >> 32));
    const uint32_t idx = (uint32_t)e;
    const uint32_t r = contract::token_bits(it.cfg.seed, it.cfg.offset, idx);
    if (fabsf(z) < Policy::kRaceSkipMaxAbsZ &&
        z - __logf(1.0f - contract::uniform_from_bits(r)) < best_score - Policy::kRaceSkipMargin)
      continue;
    const float sc = contract::race_score_from_bits(z, r);
    const uint64_t p = pack_order(contract::order_key(sc), idx);
    if (p > best) {
      best = p;
      best_score = sc;
    }
  }
}

// Pass B on one item: the span's tokens of the boundary bin into the row's
// list, its tokens above the bin counted and raced; the row's last item
// resolves the list and writes the result.  The span is kN logits a thread
// from `begin` (a whole chunk's kItems, or half of it in the streaming
// launch), `units` of the row's `total` on its ticket; `spans` such spans
// follow one another (the gather launch's items of two chunks, v91: one
// claim, one set of row fields, one ticket and one set of warp atomics for
// both).  In the fused launch
// an item may start before its row's pass A has ended: thread 0 waits for
// the row's boundary first (SplitRow::ready; the pass-A items it waits for
// were all claimed before this one, by CTAs that are running, so the wait
// ends).
template <class T, class Policy, int kN>
__device__ __forceinline__ void split_pass_b_item(
    const PivotArgs& a, int64_t row_id, int32_t begin, int32_t units, int32_t total, int64_t item,
    FallbackSmem<Policy>& sm, typename cub::BlockReduce<uint64_t, Policy::kThreads>::TempStorage& reduce,
    int& last_flag, bool wait, int spans = 1) {
  static_assert(kN == Policy::kItems || 2 * kN == Policy::kItems, "a chunk or half of one");
  using ReduceU64 = cub::BlockReduce<uint64_t, Policy::kThreads>;
  const float kNan = __int_as_float(0x7fffffff);
  SplitItem<T, Policy> it = split_item<T, Policy>(a, row_id, 0);
  it.begin = begin;
  TS_SPLIT_ROW_FIRST(it.row_id, 4);
  TS_SPLIT_ITEM(1, item, 0, it.row_id);
  SplitRow& s = a.split[it.row_id];
  // In the fused and streaming launches (`wait`) the chunk is loaded before
  // the wait for the row's boundary (most items of a row are claimed while
  // its pass A runs): the loads' latency is then off the row's chain.  The
  // gather launch, whose items do not wait, loads it after reading the bin,
  // as before (the order v48b measured at three CTAs per SM).  An item
  // whose row lists nothing drops them.
  float x[kN];
  bool valid[kN];
  // The race queue's count (v86) is zeroed before the barrier below, which
  // every thread passes before its token loop.
  if (Policy::kSplitRaceQueue && threadIdx.x == 0) sm.queue_n = 0;
  if (wait) {
    load_items<T, Policy, kN>(it.row, a.vocab, it.begin, x, valid);
    if (threadIdx.x == 0)
      while (load_acquire(&s.ready) == 0u) __nanosleep(128);
    __syncthreads();
  } else if constexpr (Policy::kSplitRaceQueue) {
    __syncthreads();
  }
  TS_SPLIT_ITEM(1, item, 1, it.row_id);
  FallbackRow<T, Policy> fb{it.row, a.vocab, it.cfg.temperature, s.zmax, it.cfg.ln_minp, it.cfg.m_active, sm};
  split_set_bins(fb, s);
  uint64_t* list = a.split_list + it.row_id * Policy::kFbListCap;
  const int bin = load_cg(&s.bin);  // from L2: pass A's last item may have run in this launch
  if (bin >= 0) {
    if (!wait) load_items<T, Policy, kN>(it.row, a.vocab, it.begin, x, valid);
    uint64_t best = 0, n_above = 0;
    float best_score = -__builtin_huge_valf();  // the queued race's skip bar, carried over the spans
    for (int span = 0; span < spans; ++span) {
      if (span > 0) {
        // The next span's loads go out before the barriers: x is free once the
        // previous span's tokens are classified and queued.
        it.begin += kN * Policy::kThreads;
        load_items<T, Policy, kN>(it.row, a.vocab, it.begin, x, valid);
        if constexpr (Policy::kSplitRaceQueue) {
          __syncthreads();  // every thread has raced the previous span's queue
          if (threadIdx.x == 0) sm.queue_n = 0;
          __syncthreads();
        }
      }
      if constexpr (Policy::kSplitRaceQueue) {
        split_race_queued<T, Policy, kN>(fb, x, valid, it, bin, [&](uint64_t p) {
          const int at = atomicAdd(&s.nlist, 1);
          if (at < Policy::kFbListCap) list[at] = p;
        }, sm.data.list, sm.queue_n, n_above, best, best_score);
      } else if constexpr (Policy::kSplitRaceGroups) {
        split_race_groups<T, Policy, kN>(fb, x, valid, it, bin, [&](uint64_t p) {
          const int at = atomicAdd(&s.nlist, 1);
          if (at < Policy::kFbListCap) list[at] = p;
        }, n_above, best);
      } else {
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          if (!valid[j]) continue;
          const float z = fb.z_of(x[j]);
          if (!fb.eligible(z)) continue;
          const int b = fb.bin_of(z);
          if (b > bin) continue;
          const uint32_t idx = (uint32_t)item_index<Policy, T>(it.begin, j);
          if (b == bin) {
            const int at = atomicAdd(&s.nlist, 1);
            if (at < Policy::kFbListCap) list[at] = pack_order(contract::order_key(z), idx);
          } else {
            n_above += 1;
            const uint64_t r = fb.race_key(z, it.cfg, idx);
            best = r > best ? r : best;
          }
        }
      }
    }  // spans
    if constexpr (Policy::kSplitWarpAtomics) {
      // Each warp adds its count and its best to the row (v88): no block
      // reduction, so no barrier between the token loop and the ticket, whose
      // barrier and release order these atomics before the last item's reads
      // as they order the list's appends.
      uint32_t n = (uint32_t)n_above;
      uint64_t m = best;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        n += __shfl_xor_sync(0xffffffffu, n, o);
        const uint64_t y = __shfl_xor_sync(0xffffffffu, m, o);
        m = y > m ? y : m;
      }
      TS_SPLIT_ITEM(1, item, 2, it.row_id);
      if ((threadIdx.x & 31) == 0) {
        if (n) atomicAdd(&s.above_n, n);
        if (m) atomicMax(&s.race, (unsigned long long)m);
      }
    } else {
      const uint64_t n = ReduceU64(reduce).Sum(n_above);
      TS_SPLIT_ITEM(1, item, 2, it.row_id);
      __syncthreads();
      const uint64_t m = ReduceU64(reduce).Reduce(best, MaxU64{});
      if (threadIdx.x == 0) {
        if (n) atomicAdd(&s.above_n, (uint32_t)n);
        if (m) atomicMax(&s.race, (unsigned long long)m);
      }
    }
    TS_SPLIT_ITEM(1, item, 3, it.row_id);
  }
  const bool last_b = split_last_n<Policy>(&s.ticket_b, units, total, last_flag);
  TS_SPLIT_ITEM(1, item, 4, it.row_id);
  if (last_b) {
    TS_SPLIT_ROW(it.row_id, 5);
    const RowConfig cfg = split_row_config(a, it);
    const int nlist = load_cg(&s.nlist);
    FallbackResult r;
    bool done = false;
    if (bin >= 0 && nlist <= Policy::kFbListCap) {
      for (int j = threadIdx.x; j < nlist; j += Policy::kThreads) sm.data.list[j] = load_cg(&list[j]);
      __syncthreads();
      TS_SPLIT_ROW(it.row_id, 6);
      HistStage st;
      const uint64_t best = threadIdx.x == 0 ? (uint64_t)load_cg(&s.race) : 0;
      done = fb.template resolve_list<true>(nlist, load_cg(&s.above_m), (int)load_cg(&s.above_n),
                                            load_cg(&s.target), cfg, true, best, st);
      if (done) r = fb.from_stage(st);
      TS_SPLIT_ROW(it.row_id, 7);
    }
    if (Policy::kSplitTieMode && bin == kSplitTieBin) {  // pass A's last item raced the cut
      r.token = (int32_t)packed_index(load_cg(&s.race));
      r.kept = load_cg(&s.take);
      r.kept_mass = (double)r.kept;  // every kept weight is exp(0) = 1
      done = true;
    }
    TS_SPLIT_INFO(it.row_id, 0, nlist);
    TS_SPLIT_INFO(it.row_id, 1, done ? 0 : 1);
    TS_SPLIT_INFO(it.row_id, 2, bin);
    if (!done) {  // the one-CTA fallback (it may take its generic path)
      if constexpr (Policy::kSplitRunCall) r = run_fallback_out_of_line(fb, cfg);
      else r = fb.run(cfg);
    }
    if (threadIdx.x == 0) {
      float lp = kNan;
      if (a.out.logprobs) {
        const float z = contract::scale(to_float(it.row[r.token]), it.cfg.temperature);
        lp = (float)(((double)z - (double)s.zmax) - log(r.kept_mass));
      }
      write_result(a.out, it.row_id, RowResult{TOKENSIFT_ROW_OK, r.token, r.kept, lp});
    }
    TS_SPLIT_ROW(it.row_id, 8);
  }
  __syncthreads();
}

// Launch bounds of the launches that run both passes (policy knob
// TOKENSIFT_PIVOT_SPLIT_FUSED_MIN_BLOCKS; 0: none).
#if TOKENSIFT_PIVOT_SPLIT_FUSED_MIN_BLOCKS > 0
#define TS_SPLIT_FUSED_BOUNDS __launch_bounds__(Policy::kThreads, TOKENSIFT_PIVOT_SPLIT_FUSED_MIN_BLOCKS)
#else
#define TS_SPLIT_FUSED_BOUNDS __launch_bounds__(Policy::kThreads)
#endif

// Chunks an item of a two-launch pass covers: `most` (the policy's 1 or 2)
// once the call has at least two chunks for each CTA that runs at once
// (v91); with fewer, items of one chunk end sooner (a CTA would run an item
// of two where two CTAs could run one each).
template <class Policy>
__device__ __forceinline__ int split_chunks_per_item(const PivotArgs& a, int most) {
  uint32_t sms;
  asm("mov.u32 %0, %%nsmid;" : "=r"(sms));
  const int64_t slots = min((int64_t)gridDim.x, (int64_t)sms * Policy::kSplitPairCtasPerSm);
  const int64_t chunks = (int64_t)*a.deferred_count * a.chunks;
  return most == 2 && chunks >= 2 * slots ? 2 : 1;
}

// The two passes as two launches (calls above kSplitFusedMaxItems items):
// pass B reads what pass A published at the launch boundary.
// Four CTAs an SM (the registers of 64 a thread it had before tie mode's
// race, v100, which the bound keeps: 80 without it, three CTAs an SM).
template <class T, class Policy>
__global__ void __launch_bounds__(Policy::kThreads, Policy::kSplitPairCtasPerSm) split_hist_kernel(TS_PIVOT_KERNEL_ARGS a) {
  __shared__ FallbackSmem<Policy> sm;
  __shared__ int last_flag;
  __shared__ int64_t item_slot;
  TS_SPLIT_ENTRY(1);
  const int per = split_chunks_per_item<Policy>(a, Policy::kSplitHistChunks);  // v94
  const int32_t per_row = (a.chunks + per - 1) / per;
  const int64_t items = (int64_t)*a.deferred_count * per_row;
  for (int64_t item = next_item(&a.split_next[0], item_slot); item < items;
       item = next_item(&a.split_next[0], item_slot)) {
    const int32_t c0 = (int32_t)(item % per_row) * per;
    split_pass_a<T, Policy>(a, deferred_row(a, item / per_row), deferred_tie(a, item / per_row), c0, item, sm,
                            last_flag, min(per, a.chunks - c0));
  }
  TS_SPLIT_EXIT(1);
}

template <class T, class Policy>
__global__ void __launch_bounds__(Policy::kThreads, Policy::kSplitGatherMinBlocksPerSm)
    split_gather_kernel(TS_PIVOT_KERNEL_ARGS a) {
  __shared__ FallbackSmem<Policy> sm;
  __shared__ typename cub::BlockReduce<uint64_t, Policy::kThreads>::TempStorage reduce;
  __shared__ int last_flag;
  __shared__ int64_t item_slot;
  TS_SPLIT_ENTRY(2);
  const int per = split_chunks_per_item<Policy>(a, Policy::kSplitGatherChunks);  // v91
  const int32_t per_row = (a.chunks + per - 1) / per;
  const int64_t items = (int64_t)*a.deferred_count * per_row;
  for (int64_t item = next_item(&a.split_next[1], item_slot); item < items;
       item = next_item(&a.split_next[1], item_slot)) {
    const int32_t c0 = (int32_t)(item % per_row) * per;
    const int32_t n = min(per, a.chunks - c0);
    split_pass_b_item<T, Policy, Policy::kItems>(a, deferred_row(a, item / per_row), c0 * Policy::kChunk, n, a.chunks,
                                                 item, sm, reduce, last_flag, false, n);
  }
  TS_SPLIT_EXIT(2);
}

// Both passes in one launch (calls of at most kSplitFusedMaxItems items):
// items 0..n-1 are pass A's, n..2n-1 pass B's, handed out in that order, so
// a row's pass B starts as soon as its own boundary is known instead of
// after every CTA of pass A has exited, and a call pays one launch fewer.
template <class T, class Policy>
__global__ void TS_SPLIT_FUSED_BOUNDS split_fused_kernel(TS_PIVOT_KERNEL_ARGS a) {
  __shared__ FallbackSmem<Policy> sm;
  __shared__ typename cub::BlockReduce<uint64_t, Policy::kThreads>::TempStorage reduce;
  __shared__ int last_flag;
  __shared__ int64_t item_slot;
  TS_SPLIT_ENTRY(1);
  const int64_t items = (int64_t)*a.deferred_count * a.chunks;
  for (int64_t item = next_item(&a.split_next[0], item_slot); item < 2 * items;
       item = next_item(&a.split_next[0], item_slot)) {
    const int64_t b = item < items ? item : item - items;
    const int64_t row_id = deferred_row(a, b / a.chunks);
    const int32_t chunk = (int32_t)(b % a.chunks);
    if (item < items) split_pass_a<T, Policy>(a, row_id, deferred_tie(a, b / a.chunks), chunk, b, sm, last_flag);
    else
      split_pass_b_item<T, Policy, Policy::kItems>(a, row_id, chunk * Policy::kChunk, 1, a.chunks, b, sm, reduce,
                                                   last_flag, true);
  }
  TS_SPLIT_EXIT(1);
}

// Thread 0: the row in deferred-list slot `slot`, waiting until the pivot
// kernel publishes it (defer_row) or has merged every row without reaching
// the slot (-1: no such row).  The count of merged rows is read with acquire
// and each row's merge counts after its deferral, so once the count is full
// every entry there will be is visible.
__device__ __forceinline__ int64_t wait_deferred(const PivotArgs& a, int64_t slot, int& tie) {
  tie = 0;
  if (slot >= a.rows) return -1;
  for (;;) {
    uint32_t r = load_acquire(&a.deferred_rows[slot]);
    if (!r && load_acquire(a.rows_done) == (uint32_t)a.rows) {
      r = load_acquire(&a.deferred_rows[slot]);
      if (!r) return -1;
    }
    if (r) {
      tie = (r & kDeferredTie) != 0u;
      return (int64_t)(r & ~kDeferredTie) - 1;
    }
    __nanosleep(256);
  }
}

// The fused launch streaming behind the pivot kernel (PivotPolicy::
// kSplitStream): launched as its programmatic dependent, it starts once every
// pivot CTA has started (each triggers it first thing), in the slots the
// pivot kernel's last wave leaves free, and takes each row as the merge
// defers it instead of after the pivot kernel ends (at B = 64 the deferred
// rows waited ~19 us for that, the longest stage of their chain; v38 in
// docs/perf-notes.md).
//
// Two counters hand out the items, pass A's and pass B's, each in the order
// rows were deferred.  A CTA takes a pass-A item while the next one's row is
// published (pass A first, as split_fused_kernel, which keeps the batches
// where every row defers as fast as there: v38's first form, row by row,
// lost 11-19 % on them), else a pass-B item of a row whose pass-A items are
// all taken, else it sleeps.  The claims are plain fetch-and-adds after a
// peek, so racing CTAs may overshoot: a pass-A item past the published rows
// waits for its row (it may never come: then it is dropped), and a pass-B
// item whose row still has pass-A items to hand out is kept back while its
// CTA takes those first.  So every wait is on the pivot kernel, whose CTAs
// have all started, or on a row's boundary once all of the row's pass-A items
// are taken, by running CTAs: nothing waits on a CTA that cannot run.  The
// CTAs leave when every row is merged and every item taken; before they exit
// they wait for the pivot kernel's end (griddepcontrol.wait), so the call's
// later work never overlaps it.  Launched without the dependency (no sm_90),
// it finds every row deferred and runs as split_fused_kernel does.
enum SplitClaim : int { kClaimExit = 0, kClaimA = 1, kClaimB = 2 };

// Thread 0: the next item for this CTA (kind, item, units).  Pass B is
// counted in half chunks (per_b = 2 x chunks a row): a claim takes one half
// while every half of the rows deferred so far has a CTA of its own (their
// count at most min(the grid, two CTAs a SM)), else two (a whole chunk's
// worth).  So a lone deferred row at small B (one row of V = 129,280 is 64
// halves) or every row of a small all-deferring batch gets twice the items
// of half the length, in one round, while where items queue (a batch whose
// deferred rows outnumber the CTAs) they stay whole and pay their fixed
// costs (claim, wait, reductions, ticket) once.  v49 halved every item and
// lost 9-13 % where every row defers; v51 (at most 128 halves waiting), v53
// (halves waiting against CTAs idle or in pass A) and v54 (against CTAs
// running less those in pass B) kept the rows they aimed at whole: the
// claims of a row's pass B race its CTAs' counters, and an exact match has
// no slack.  The row count has none of that: it only grows.  Mixed claims
// leave a whole claim at an odd half; one that runs past its row's end is
// cut there and the rest kept back in `pending` like an overshot claim.
template <class Policy>
__device__ __forceinline__ int split_stream_claim(const PivotArgs& a, int64_t room, int64_t& pending,
                                                  int32_t& pending_units, int64_t& item, int32_t& units) {
  uint32_t* const a_next = &a.split_next[0];
  uint32_t* const b_next = &a.split_next[1];
  const int64_t per_a = a.chunks;      // pass-A items a row
  const int64_t per_b = 2 * a.chunks;  // pass-B halves a row
  const int64_t cap = a.rows * per_a;
  constexpr int64_t kNoLimit = INT64_MAX;
  int64_t deferred = 0;  // rows deferred so far, at the last look
  auto take = [&](int64_t j, int32_t u, int64_t limit) {
    const int64_t row_end = (j / per_b + 1) * per_b;
    const int64_t end = min(min(j + u, row_end), limit);
    item = j;
    units = (int32_t)(end - j);
    if (j + u > end && end < limit) {  // the rest lies in the next row
      pending = end;
      pending_units = (int32_t)(j + u - end);
    }
    return (int)kClaimB;
  };
  auto units_for = [&] {
    if constexpr (Policy::kSplitHalves == 0) return 2;
    if constexpr (Policy::kSplitHalves == 2) return 1;
    return deferred * per_b <= room ? 1 : 2;
  };
  for (;;) {
    const int64_t fa = load_relaxed(a_next);
    if constexpr (Policy::kSplitHalves == 1) deferred = load_relaxed(a.deferred_count);  // with fa's
    if (pending >= 0 && fa >= (pending / per_b + 1) * per_a) {  // its row's pass-A items are all taken
      const int64_t p = pending;
      pending = -1;
      return take(p, pending_units, kNoLimit);
    }
    const int64_t sa = fa / per_a;
    if (fa < cap && load_acquire(&a.deferred_rows[sa]) != 0u) {
      item = atomicAdd(a_next, 1u);
      units = 1;
      return kClaimA;
    }
    const int64_t fb = load_relaxed(b_next);
    if (pending < 0 && fb < sa * per_b) {
      const int32_t u = units_for();
      const int64_t j = atomicAdd(b_next, (uint32_t)u);
      if (j < (int64_t)(load_relaxed(a_next) / per_a) * per_b) {
        return take(j, u, kNoLimit);
      }
      pending = j;  // overshot: take its row's remaining pass-A items first
      pending_units = u;
      continue;
    }
    if (load_acquire(a.rows_done) == (uint32_t)a.rows) {
      // Every row is merged, so every deferral is published and final.
      const int64_t rows = (int64_t)load_relaxed(a.deferred_count);
      if (fa < rows * per_a) continue;  // pass-A items left: taken above
      const int64_t n = rows * per_b;
      if (pending >= 0) {
        const int64_t p = pending;
        pending = -1;
        if (p < n) {  // else past the last row: nothing to do
          return take(p, pending_units, n);
        }
      }
      const int64_t fb2 = load_relaxed(b_next);
      if (fb2 < n) {
        const int32_t u = units_for();
        const int64_t j = atomicAdd(b_next, (uint32_t)u);
        if (j < n) {
          return take(j, u, n);
        }
      }
      return kClaimExit;
    }
    __nanosleep(256);
  }
}

// Bounded at two CTAs per SM, what its ~128 registers give anyway: left to
// itself ptxas takes 80 registers and spills ~0.8 KB for its three item
// bodies (pass A, pass B whole and half).  Its grid (launch_split_stream)
// has room for every half only while that stays within what the device
// holds at once.
template <class T, class Policy>
__global__ void __launch_bounds__(Policy::kThreads, 2) split_stream_kernel(TS_PIVOT_KERNEL_ARGS a) {
  __shared__ FallbackSmem<Policy> sm;
  __shared__ typename cub::BlockReduce<uint64_t, Policy::kThreads>::TempStorage reduce;
  __shared__ int last_flag;
  __shared__ int claim_kind;
  __shared__ int claim_units;
  __shared__ int64_t claim_item;
  __shared__ int64_t claim_row;
  __shared__ int claim_tie;
  TS_SPLIT_ENTRY(1);
  const int64_t per_b = 2 * (int64_t)a.chunks;  // pass-B halves a row
  int64_t pending = -1;                          // thread 0's
  int32_t pending_units = 0;
  // CTAs that can run at once for the halves: the grid, at most two a SM.
  int64_t room = gridDim.x;
  if (Policy::kSplitHalves == 1 && threadIdx.x == 0) {
    uint32_t sms;
    asm("mov.u32 %0, %%nsmid;" : "=r"(sms));
    room = min(room, 2 * (int64_t)sms);
  }
  for (;;) {
    __syncthreads();  // everyone has read the previous claim
    if (threadIdx.x == 0) {
      int64_t item = -1;
      int32_t units = 0;
      const int kind = split_stream_claim<Policy>(a, room, pending, pending_units, item, units);
      claim_kind = kind;
      claim_item = item;
      claim_units = units;
      int tie = 0;
      claim_row = kind == kClaimExit ? -1 : wait_deferred(a, item / (kind == kClaimA ? (int64_t)a.chunks : per_b), tie);
      claim_tie = tie;
    }
    __syncthreads();
    const int kind = claim_kind;
    if (kind == kClaimExit) break;  // uniform
    const int64_t row_id = claim_row;
    if (row_id < 0) continue;  // an item past the last deferred row (an overshot claim)
    const int64_t item = claim_item;
    if (kind == kClaimA) {
      split_pass_a<T, Policy>(a, row_id, claim_tie != 0, (int32_t)(item % a.chunks), item, sm, last_flag);
    } else {
      const int32_t begin = (int32_t)(item % per_b) * (Policy::kChunk / 2);
      if (claim_units == 2)
        split_pass_b_item<T, Policy, Policy::kItems>(a, row_id, begin, 2, (int32_t)per_b, item, sm, reduce, last_flag,
                                                     true);
      else
        split_pass_b_item<T, Policy, Policy::kItems / 2>(a, row_id, begin, 1, (int32_t)per_b, item, sm, reduce,
                                                         last_flag, true);
    }
  }
  pdl_wait_primary();
  TS_SPLIT_EXIT(1);
}

}  // namespace tokensift::cuda_detail
