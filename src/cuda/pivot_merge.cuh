// Merge phase of the pivot sampler: the last CTA of a row to finish its chunk
// combines the chunk summaries, decides the kept set from the candidates when
// they suffice, and otherwise runs the full-row fallback.
//
// The candidates are exactly the contract's order down to `next` (the best
// token any chunk did not emit), so a filter boundary is decided when it lies
// above `next`:
//   min-p is complete when `next` itself fails min-p (all later tokens do);
//   top-k is decided when at least k candidates precede `next`;
//   top-p needs W, the mass of the survivors: over the candidates when the
//   survivors are all candidates, else from the chunks' partial sums (no
//   min-p); its boundary must also precede `next`.
// Rows with many candidates keep only the top few hundred by key first (what
// is dropped only lowers `next`).  Decided rows sort those in shared memory,
// scan the masses in double and race the kept prefix.  Undecided min-p rows
// gather every token above min-p's floor and decide from that when it fits on
// chip.  Undecided top-p rows without top-k are deferred to the split
// fallback (pivot_split.cuh); the rest take the full-row fallback here.  In
// the pivot kernel's kEarly instantiation (small calls, pivot_kernels.cuh) a
// top-p-only row whose candidates' mass (the chunks' emit_mass) is below
// p W is deferred before its candidates are loaded: the list could not have
// decided it, so this saves the ~9 us of loading, pre-selecting, sorting and
// scanning them (v46), and the row's result keeps its bits.  Every
// reduction has a fixed shape, so results are bit-identical from run to run
// and independent of the batch.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "cuda/block_rank_sort.cuh"
#include "cuda/block_threshold_select.cuh"
#include "cuda/cuda_utils.cuh"
#include "cuda/pivot_fallback.cuh"
#include "cuda/pivot_types.cuh"
#include "cuda/row_config.cuh"
#include "cuda/split_defer.cuh"
#include "cuda/warp_list.cuh"

namespace tokensift::cuda_detail {

// Dev builds only (dev/merge_probe.cu): thread 0 of the merging CTA stamps
// clock64() at each stage of the merge into merge_trace[].
// Under TOKENSIFT_ROWCTA_TRACE (dev/rowcta_trace.cu) the same stamps go to
// rowcta_merge_trace[CTA], one row per CTA of the row-CTA kernel.
#ifdef TOKENSIFT_MERGE_TRACE
__device__ long long merge_trace[16];
#define TS_MERGE_MARK(i) \
  do {                    \
    if (threadIdx.x == 0) merge_trace[i] = clock64(); \
  } while (0)
#elif defined(TOKENSIFT_ROWCTA_TRACE)
constexpr int kRowCtaMergeTraceRows = 4096;
__device__ long long rowcta_merge_trace[kRowCtaMergeTraceRows][16];
#define TS_MERGE_MARK(i)                                                                                    \
  do {                                                                                                      \
    if (threadIdx.x == 0 && blockIdx.x < kRowCtaMergeTraceRows) rowcta_merge_trace[blockIdx.x][i] = clock64(); \
  } while (0)
#else
#define TS_MERGE_MARK(i) \
  do {                    \
  } while (0)
#endif

struct RowStats {
  uint64_t xmax, next, race;
  uint32_t lb;
  int32_t bad, eligible, emitted;
};
struct RowStatsOp {
  __device__ RowStats operator()(const RowStats& a, const RowStats& b) const {
    RowStats r;
    r.xmax = a.xmax > b.xmax ? a.xmax : b.xmax;
    r.next = a.next > b.next ? a.next : b.next;
    r.race = a.race > b.race ? a.race : b.race;
    r.lb = a.lb > b.lb ? a.lb : b.lb;
    r.bad = a.bad | b.bad;
    r.eligible = a.eligible + b.eligible;
    r.emitted = a.emitted + b.emitted;
    return r;
  }
};

// A chunk's share of W = sum over the row's eligible tokens of exp(z - zmax),
// from its summary (written by another CTA of this launch, hence load_cg).
// The block and the one-warp decisions both sum these terms.
__device__ __forceinline__ double chunk_mass_term(const ChunkSummary& s, float zmax) {
  if (load_cg(&s.eligible) == 0) return 0.0;
  return load_cg(&s.mass) * exp((double)load_cg(&s.zloc) - (double)zmax);
}

struct WarpListResult {
  int decided;
  int kept;
  int32_t token;
  double kept_mass;
};

template <class Policy>
struct MergeSmem {
  using Reduce = cub::BlockReduce<RowStats, Policy::kThreads>;
  using ReduceF64 = cub::BlockReduce<double, Policy::kThreads>;
  using ReduceU64 = cub::BlockReduce<uint64_t, Policy::kThreads>;
  using ReduceInt = cub::BlockReduce<int, Policy::kThreads>;
  using ScanF64 = cub::BlockScan<double, Policy::kThreads>;
  using ScanInt = cub::BlockScan<int, Policy::kThreads>;
  union {
    typename ScanInt::TempStorage scan_int;
    typename Reduce::TempStorage reduce;
    typename ReduceF64::TempStorage f64;
    typename ReduceU64::TempStorage u64;
    typename ReduceInt::TempStorage i32;
    typename ScanF64::TempStorage scan;
    double early_part[2][Policy::kThreads / 32];  // early deferral: per warp, W and the candidates' mass
  } temp;
  union {
    uint64_t cand[Policy::kMergeCap];
    struct {  // early deferral's chunk terms, loaded with the statistics (before any candidate)
      double mass[Policy::kMaxMergeChunks];
      float zloc[Policy::kMaxMergeChunks];
      float emit[Policy::kMaxMergeChunks];
    } early;
  };
  int chunk_emitted[Policy::kMaxMergeChunks];
  ThresholdSmem<Policy::kThreads> thresh;
  RowStats stats;
  WarpListResult wres;
  double dval;
  uint64_t uval;
  int count;
  int ival;
  int robust;  // decide_from_list: the top-p boundary is clear of the band
};

// Writes the entries of v (one per slot row, as the caller read them from
// the list) that `keep` accepts to the front of sm.cand, in slot order, and
// returns how many; the list's compactions (the merge's pre-selection, the
// row-CTA kernel's threshold and min-p compactions).  Call from all threads;
// reading sm.cand after it needs a barrier.
template <class Policy, int kSlots, class Keep>
__device__ __forceinline__ int compact_list(MergeSmem<Policy>& sm, const uint64_t (&v)[kSlots], Keep keep) {
  int mine = 0;
#pragma unroll
  for (int s = 0; s < kSlots; ++s) mine += keep(v[s]);
  int pos, kept;
  __syncthreads();
  typename MergeSmem<Policy>::ScanInt(sm.temp.scan_int).ExclusiveSum(mine, pos, kept);
  __syncthreads();
#pragma unroll
  for (int s = 0; s < kSlots; ++s)
    if (keep(v[s])) sm.cand[pos++] = v[s];
  return kept;
}

struct RowResult {
  int32_t status, token, kept;
  float logprob;
};
// Internal status: the row went to the split fallback, which writes its result.
constexpr int32_t kRowDeferred = -1000;

__device__ __forceinline__ void write_result(const SampleOutputs& o, int64_t row, const RowResult& r) {
  o.tokens[row] = r.token;
  if (o.row_status) o.row_status[row] = r.status;
  if (o.logprobs) o.logprobs[row] = r.logprob;
  if (o.kept_counts) o.kept_counts[row] = r.kept;
}

// A row the one-warp or CTA-wide finish decided (pivot_cluster.cuh,
// pivot_rowcta.cuh): its token and kept count, and the log-prob from the kept
// mass, as decide_and_draw forms it.
template <class T>
__device__ __forceinline__ RowResult finish_result(const WarpListResult& w, const T* row, const RowConfig& cfg,
                                                   float zmax, bool want_logprob) {
  float lp = __int_as_float(0x7fffffff);
  if (want_logprob) {
    const float z = contract::scale(to_float(row[w.token]), cfg.temperature);
    lp = (float)(((double)z - (double)zmax) - log(w.kept_mass));
  }
  return {TOKENSIFT_ROW_OK, w.token, w.kept, lp};
}

// Top-p rows without top-k or min-p decide from their list only when the
// boundary is clear of the contract's band by a margin that covers both the
// band (1e-6) and the error of the W they divide by (the chunks' fp32 partial
// sums, or the row-CTA kernel's streamed sum: a few 1e-6 relative, plus, at
// T != 1, the row-CTA kernel's scaling of differences instead of each z,
// ~1.2e-7 |zmax|).  Clear: the prefix before the kept count is below
// p W (1 - margin) and the prefix through it at or above p W (1 + margin),
// so the row is outside the band and its kept count is the contract's own.
// Any other row (every band row among them) goes to the fixed-point path
// (the split fallback, or the merging CTA's fallback), whose integer sums
// give one answer whatever the path or the split; so the chunked kernel and
// the row-CTA kernel's top-p rows keep the same count on every row.
__device__ __forceinline__ bool top_p_only(const RowConfig& cfg) { return cfg.p_active && !cfg.k_active && !cfg.m_active; }
__device__ __forceinline__ bool top_p_clear(double before, double through, double target, float zmax) {
  const double margin = 1e-5 + 2e-7 * fabs((double)zmax);
  return before < target * (1.0 - margin) && through >= target * (1.0 + margin);
}

struct ListDecision {
  bool decided;
  int kept;  // the kept set is sm.cand[0, kept)
};

// Decides the row from the candidate list in shared memory.  The list is the
// exact order down to `next` (all of it when `complete`).  When the
// survivors extend beyond the list (top-p without min-p), W comes from the
// chunks' partial sums.
template <class Policy, class ChunkMass>
__device__ ListDecision decide_from_list(MergeSmem<Policy>& sm, int n, bool complete, uint64_t next,
                                         const RowConfig& cfg, float zmax, ChunkMass chunk_mass) {
  block_sort_desc<Policy::kThreads, Policy::kRankSortMax>(sm.cand, n);
  int valid_prefix = n;  // candidates that precede `next`
  if (!complete) {
    int c = 0;
    for (int j = threadIdx.x; j < n; j += Policy::kThreads) c += sm.cand[j] > next;
    __syncthreads();
    const int t = typename MergeSmem<Policy>::ReduceInt(sm.temp.i32).Sum(c);
    if (threadIdx.x == 0) sm.ival = t;
    __syncthreads();
    valid_prefix = sm.ival;
  }
  int survivors = -1;  // -1: the survivors extend beyond the list
  if (cfg.k_active) {
    if (cfg.top_k <= valid_prefix) survivors = cfg.top_k;
    else if (complete) survivors = n;
    else return {false, 0};
  } else if (complete) {
    survivors = n;
  } else if (cfg.m_active) {
    return {false, 0};
  } else if (!cfg.p_active) {
    return {false, 0};
  }
  if (!cfg.p_active) return {true, survivors};
  double w_total;
  int limit;
  if (survivors >= 0) {
    double w = 0;
    for (int j = threadIdx.x; j < survivors; j += Policy::kThreads)
      w += exp((double)contract::key_to_float(packed_key(sm.cand[j])) - (double)zmax);
    __syncthreads();
    const double t = typename MergeSmem<Policy>::ReduceF64(sm.temp.f64).Sum(w);
    if (threadIdx.x == 0) sm.dval = t;
    __syncthreads();
    w_total = sm.dval;
    limit = survivors;
  } else {
    if (cfg.m_active) return {false, 0};  // W over the min-p set, which is not all here
    w_total = chunk_mass();
    limit = valid_prefix;
  }
  const double target = (double)cfg.top_p * w_total;
  // First j with prefix mass >= target: an index-ordered scan in tiles.
  double carry = 0;
  for (int base = 0; base < limit; base += Policy::kThreads) {
    const int j = base + threadIdx.x;
    const double w = j < limit ? exp((double)contract::key_to_float(packed_key(sm.cand[j])) - (double)zmax) : 0.0;
    double incl, tile_total;
    __syncthreads();
    typename MergeSmem<Policy>::ScanF64(sm.temp.scan).InclusiveSum(w, incl, tile_total);
    const int hit = (j < limit && carry + incl >= target) ? j : 0x7fffffff;
    __syncthreads();
    const int first = typename MergeSmem<Policy>::ReduceInt(sm.temp.i32).Reduce(hit, MinInt{});
    if (threadIdx.x == 0) sm.ival = first;
    __syncthreads();
    const int at = sm.ival;
    if (at != 0x7fffffff) {
      if (!top_p_only(cfg)) return {true, at + 1};
      // The thread holding the boundary judges whether it is clear of the band.
      if (j == at) sm.robust = top_p_clear(carry + incl - w, carry + incl, target, zmax);
      __syncthreads();
      return {sm.robust != 0, at + 1};
    }
    carry += tile_total;
  }
  if (survivors >= 0 && !top_p_only(cfg)) return {true, survivors};  // rounding: the whole set is the prefix
  return {false, 0};
}

// decide_from_list and the race for a list of n <= 64 candidates (rows
// without min-p), on one warp: the same rules, shuffles instead of block
// barriers.  Call from the 32 threads of warp 0.
template <class Policy>
__device__ WarpListResult warp_decide_and_race(const uint64_t* cand, int n, bool complete, uint64_t next,
                                               const RowConfig& cfg, float zmax, const ChunkSummary* sum,
                                               int chunks, bool want_mass, double row_mass = -1.0) {
  const int lane = (int)(threadIdx.x & 31u);
  const WarpListResult undecided{0, 0, -1, 0.0};
  uint64_t v[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) v[r] = lane + 32 * r < n ? cand[lane + 32 * r] : 0ull;
  warp_sort_desc64(v);
  TS_MERGE_MARK(12);
  int valid_prefix = n;  // candidates that precede `next`
  if (!complete)
    valid_prefix = __popc(__ballot_sync(kFullMask, v[0] > next)) + __popc(__ballot_sync(kFullMask, v[1] > next));
  int survivors = -1;  // -1: the survivors extend beyond the list
  if (cfg.k_active) {
    if (cfg.top_k <= valid_prefix) survivors = cfg.top_k;
    else if (complete) survivors = n;
    else return undecided;
  } else if (complete) {
    survivors = n;
  } else if (!cfg.p_active) {
    return undecided;
  }
  int m = survivors;
  if (cfg.p_active) {
    // Each position's mass, formed once (one exp site, rolled under
    // kCompactCode: this code runs once per row and is fetched cold).
    const auto weight = [&](uint64_t e) { return exp((double)contract::key_to_float(packed_key(e)) - (double)zmax); };
    double w0 = 0, w1 = 0;
    if constexpr (Policy::kCompactCode) {
#pragma unroll 1
      for (int r = 0; r < 2; ++r) {
        const double x = weight(r == 0 ? v[0] : v[1]);
        if (r == 0) w0 = x;
        else w1 = x;
      }
    }
    const auto wt = [&](int r) { return Policy::kCompactCode ? (r == 0 ? w0 : w1) : weight(v[r]); };
    double w_total;
    int limit;
    if (survivors >= 0) {
      double w = 0;
#pragma unroll
      for (int r = 0; r < 2; ++r)
        if (lane + 32 * r < survivors) w += wt(r);
      w_total = warp_sum(w);
      limit = survivors;
    } else if (row_mass >= 0.0) {  // W streamed by the row-CTA kernel
      w_total = row_mass;
      limit = valid_prefix;
    } else {  // W from the chunks' partial sums
      double w = 0;
      for (int c = lane; c < chunks; c += 32) {
        w += chunk_mass_term(sum[c], zmax);
      }
      w_total = warp_sum(w);
      limit = valid_prefix;
    }
    const double target = (double)cfg.top_p * w_total;
    // First position whose prefix mass reaches the target.
    const double s0 = warp_inclusive_sum(lane < limit ? wt(0) : 0.0);
    const double s1 = __shfl_sync(kFullMask, s0, 31) + warp_inclusive_sum(lane + 32 < limit ? wt(1) : 0.0);
    const unsigned h0 = __ballot_sync(kFullMask, lane < limit && s0 >= target);
    const unsigned h1 = __ballot_sync(kFullMask, lane + 32 < limit && s1 >= target);
    if (h0) m = __ffs((int)h0);  // kept = first hit + 1
    else if (h1) m = 32 + __ffs((int)h1);
    else if (survivors < 0 || top_p_only(cfg)) return undecided;  // rounding: with survivors, the whole set is the prefix
    if (top_p_only(cfg)) {  // the boundary must be clear of the band (top_p_clear)
      const int pos = m - 1, src = pos & 31;
      const bool second = pos >= 32;  // uniform
      const double through = __shfl_sync(kFullMask, second ? s1 : s0, src);
      const double w_at = __shfl_sync(kFullMask, second ? wt(1) : wt(0), src);
      if (!top_p_clear(through - w_at, through, target, zmax)) return undecided;
    }
  }
  TS_MERGE_MARK(13);
  uint64_t best = 0;
  double w = 0;
  // The race over the kept prefix (two positions a lane).  Rolled under
  // kCompactCode: the second position runs the first one's fetched code
  // (Philox, two logs, the mass) instead of its own straight-line copy.
  const auto race_one = [&](uint64_t e) {
    const float z = contract::key_to_float(packed_key(e));
    const uint32_t idx = packed_index(e);
    const uint64_t q = pack_order(contract::order_key(contract::race_score(z, cfg.seed, cfg.offset, idx)), idx);
    best = q > best ? q : best;
    if (want_mass) w += exp((double)z - (double)zmax);
  };
  if constexpr (Policy::kCompactCode) {
#pragma unroll 1
    for (int r = 0; r < 2; ++r)
      if (lane + 32 * r < m) race_one(r == 0 ? v[0] : v[1]);
  } else {
#pragma unroll
    for (int r = 0; r < 2; ++r)
      if (lane + 32 * r < m) race_one(v[r]);
  }
  best = warp_max_u64(best);
  if (want_mass) w = warp_sum(w);  // the kept set's mass: the log-prob's only
  return {1, m, (int32_t)packed_index(best), w};
}

// W over all eligible tokens from the chunks' partial sums (top-p-only rows
// whose survivors are not all candidates, and plain rows' log-probs).
template <class Policy>
__device__ __forceinline__ double row_chunk_mass(MergeSmem<Policy>& sm, const ChunkSummary* sum, int chunks,
                                                 float zmax) {
  double w = 0;
  for (int c = threadIdx.x; c < chunks; c += Policy::kThreads) {
    w += chunk_mass_term(sum[c], zmax);
  }
  __syncthreads();
  const double t = typename MergeSmem<Policy>::ReduceF64(sm.temp.f64).Sum(w);
  if (threadIdx.x == 0) sm.dval = t;
  __syncthreads();
  return sm.dval;
}

// The merge from the candidates in sm.cand (sm.count of them, exact down to
// row_next: every token not among them is at most row_next) on: the
// decision, the draw and the log-prob.  The chunked merge and the row-CTA
// kernel (pivot_rowcta.cuh) both end here, so a row decided from the same
// sorted top k gets the same bits from either.
template <class T, class Policy>
__device__ RowResult decide_and_draw(const PivotArgs& a, int64_t row_id, const RowConfig& cfg,
                                                     MergeSmem<Policy>& sm, FallbackSmem<Policy>& fsm,
                                                     bool use_list, uint64_t row_next, float zmax,
                                                     double row_mass = -1.0) {
  const ChunkSummary* sum = a.summaries + row_id * a.chunks;
  const T* row = static_cast<const T*>(a.logits) + row_id * a.row_stride;
  const float kNan = __int_as_float(0x7fffffff);
  // W over every eligible token: the row-CTA kernel's streamed sum (top-p
  // rows, row_mass >= 0), else the chunks' partial sums.
  auto chunk_mass = [&]() { return row_mass >= 0.0 ? row_mass : row_chunk_mass<Policy>(sm, sum, a.chunks, zmax); };
  TS_MERGE_MARK(2);
  ListDecision d{};
  WarpListResult wl{0, 0, -1, 0.0};  // the one-warp finish's result, when it ran and decided
  if (use_list) {
    const uint64_t next = row_next;
    const bool complete =
        next == 0 || (cfg.m_active && !contract::passes_min_p(contract::key_to_float(packed_key(next)), zmax,
                                                              cfg.ln_minp));
    int n = sm.count;
    uint64_t bound = next;
    bool whole = complete;
    // Pre-select: when a top-k or top-p row has many candidates, keep only
    // the top few hundred by key before sorting; what is dropped just lowers
    // the point down to which the list is exact (`bound`).
    // Top-k rows with k < kWarpList keep at most kWarpList, for the one-warp finish.
    const bool to_warp = cfg.k_active && !cfg.m_active && cfg.top_k < Policy::kWarpList && n > Policy::kWarpList;
    if (to_warp ||
        (n > Policy::kPreselect && !cfg.m_active && (!cfg.k_active || cfg.top_k <= Policy::kPreselect / 2))) {
      constexpr int kSlots = Policy::kMergeCap / Policy::kThreads;
      uint64_t v[kSlots];
#pragma unroll
      for (int s2 = 0; s2 < kSlots; ++s2) {
        const int i = s2 * Policy::kThreads + threadIdx.x;
        v[s2] = i < n ? sm.cand[i] : 0ull;
      }
      const int need = cfg.k_active ? cfg.top_k : Policy::kPreselect / 4;
      const ThresholdResult t =
          block_threshold_select<Policy::kThreads, kSlots, uint64_t>(v, need, to_warp ? Policy::kWarpList : Policy::kPreselect,
                                                                     0, sm.thresh);
      TS_MERGE_MARK(10);
      const auto keep = [&](uint64_t e) { return e != 0 && packed_key(e) >= t.key; };
      uint64_t dropped = 0;
#pragma unroll
      for (int s2 = 0; s2 < kSlots; ++s2)
        if (!keep(v[s2]) && v[s2] > dropped) dropped = v[s2];
      const int kept_total = compact_list<Policy>(sm, v, keep);
      __syncthreads();
      TS_MERGE_MARK(11);
      const uint64_t dmax = typename MergeSmem<Policy>::ReduceU64(sm.temp.u64).Reduce(dropped, MaxU64{});
      if (threadIdx.x == 0) sm.uval = dmax;
      __syncthreads();
      n = kept_total;
      if (sm.uval > bound) bound = sm.uval;
      whole = whole && sm.uval == 0;
    }
    TS_MERGE_MARK(3);
    if (n > Policy::kWarpList && cfg.k_active && !cfg.m_active && cfg.top_k < Policy::kWarpList) {
      // Ties at the k-th key kept more than kWarpList: the first kWarpList in
      // order hold the k survivors, so the one-warp finish decides from them
      // as from any shorter list (its W, scan and race read only the first k
      // in sorted order).  The block path summed the same terms in another
      // order, so a row-CTA path (pivot_rowcta.cuh) that keeps only the row's
      // top k..kWarpList could not have matched its bits.
      block_sort_desc<Policy::kThreads, Policy::kRankSortMax>(sm.cand, n);
      const uint64_t cut = sm.cand[Policy::kWarpList];  // the best token left out
      bound = cut > bound ? cut : bound;
      whole = false;
      n = Policy::kWarpList;
    }
    if (n <= Policy::kWarpList && !cfg.m_active) {
      if (threadIdx.x < 32) {
        const WarpListResult r = warp_decide_and_race<Policy>(sm.cand, n, whole, bound, cfg, zmax, sum, a.chunks,
                                                                      a.out.logprobs != nullptr, row_mass);
        if (threadIdx.x == 0) sm.wres = r;
      }
      __syncthreads();
      wl = sm.wres;
      d = {wl.decided != 0, wl.kept};
    } else if (Policy::kMinPUnsortedRace && whole && cfg.m_active && !cfg.k_active && !cfg.p_active &&
               a.out.logprobs == nullptr) {
      // A complete list of a min-p row with neither top-k nor top-p is its
      // kept set as it stands (the callers filter it by min-p first), and
      // the race's maximum does not depend on the list's order: without a
      // log-prob (whose mass is summed in the sorted order, so that every
      // path adds the same terms in the same order) the sort decides
      // nothing (v105).
      d = {true, n};
    } else {
      d = decide_from_list<Policy>(sm, n, whole, bound, cfg, zmax, [&] { return chunk_mass(); });
    }
  }
  TS_MERGE_MARK(4);

  // ---- 2. bounded gather (min-p rows): every token that can be kept ----
  // min-p keeps z >= zmax + ln(min_p).  One pass gathers the tokens above that
  // floor; when they fit on chip the row is decided exactly from them.  Rows
  // without min-p go straight to the fallback, whose histogram path decides
  // them in two passes without such a floor.
  if (!d.decided && cfg.m_active) {
    const float zfloor = zmax + cfg.ln_minp - 1.0f;
    __syncthreads();
    if (threadIdx.x == 0) sm.count = 0;
    __syncthreads();
    for (int32_t i = threadIdx.x; i < a.vocab; i += Policy::kThreads) {
      const float x = to_float(row[i]);
      const float z = cfg.temperature == 1.0f ? x : contract::scale(x, cfg.temperature);
      if (!(z >= zfloor) || !(z > -__builtin_huge_valf())) continue;
      if (cfg.m_active && !contract::passes_min_p(z, zmax, cfg.ln_minp)) continue;
      const int at = atomicAdd(&sm.count, 1);
      if (at < Policy::kMergeCap) sm.cand[at] = pack_order(contract::order_key(z), (uint32_t)i);
    }
    __syncthreads();
    if (sm.count <= Policy::kMergeCap) {
      // Complete down to zfloor: every min-p survivor is here.
      d = decide_from_list<Policy>(sm, sm.count, /*complete=*/true, 0, cfg, zmax,
                                   [&] { return chunk_mass(); });
    }
  }
  const bool use_fallback = !d.decided;
  const int m = d.kept;

  int32_t token;
  int32_t kept;
  double kept_mass = 0;
  // A row whose best non-emitted token ties with its max holds a run of equal
  // logits longer than a chunk emits (a constant row): no bin grid can split
  // it.  Until v100 such rows kept the in-kernel fallback, one CTA per row
  // (1.1 ms a flat row at V = 129,280): on the split path that fallback would
  // run inside the persistent grid and delay other rows' items (7x slower at
  // B = 1024).  Now they defer in tie mode (split_tie.cuh; kDeferredTie tags
  // them): pass A counts and races the run per chunk, and when the boundary
  // lies inside it (every flat row), the kept set is an index prefix of the
  // run, cut from the chunks' counts by the row's last pass-A item.  A
  // boundary below the run takes the usual bins.
  const bool tie_run_at_max = row_next != 0 && packed_key(row_next) == contract::order_key(zmax);  // next holds z keys
  if (use_fallback && cfg.p_active && !cfg.k_active && (Policy::kSplitTieMode || !tie_run_at_max) &&
      split_vocab_ok<Policy>(a.vocab)) {
    // Bins scaled to the row: ln(V / W) is the depth below the max where a
    // typical token sits, so kFbDepthBins bins per that depth keep the bin at
    // the boundary to a few hundred tokens on near-flat rows (depth ~1) and
    // on peaked ones (depth ~10-20) alike.  W from the chunks' sums: top-p
    // rows without min-p only; others keep the fixed grid.
    const float per_unit = cfg.m_active ? (float)Policy::kFbBinsPerUnit : split_bins_per_unit<Policy>(a.vocab, chunk_mass());
    defer_row<Policy>(a, row_id, cfg, zmax, per_unit, tie_run_at_max);
    return {kRowDeferred, -1, 0, kNan};
  }
  if (use_fallback) {
    __syncthreads();
    FallbackRow<T, Policy> fb{row, a.vocab, cfg.temperature, zmax, cfg.ln_minp, cfg.m_active, fsm};
    const FallbackResult r = fb.run(cfg);
    token = r.token;
    kept = r.kept;
    kept_mass = r.kept_mass;
  } else if (wl.decided) {
    token = wl.token;
    kept = wl.kept;
    kept_mass = wl.kept_mass;
  } else {
    uint64_t best = 0;
    double w = 0;
    for (int j = threadIdx.x; j < m; j += Policy::kThreads) {
      const uint64_t p = sm.cand[j];
      const float z = contract::key_to_float(packed_key(p));
      const uint32_t idx = packed_index(p);
      const float s = contract::race_score(z, cfg.seed, cfg.offset, idx);
      const uint64_t q = pack_order(contract::order_key(s), idx);
      best = q > best ? q : best;
      w += exp((double)z - (double)zmax);
    }
    __syncthreads();
    const uint64_t b = typename MergeSmem<Policy>::ReduceU64(sm.temp.u64).Reduce(best, MaxU64{});
    if (threadIdx.x == 0) sm.uval = b;
    __syncthreads();
    token = (int32_t)packed_index(sm.uval);
    kept = m;
    if (a.out.logprobs) {
      const double t = typename MergeSmem<Policy>::ReduceF64(sm.temp.f64).Sum(w);
      if (threadIdx.x == 0) sm.dval = t;
      __syncthreads();
      kept_mass = sm.dval;
    }
  }
  TS_MERGE_MARK(5);
  float lp = kNan;
  if (a.out.logprobs) {
    const float z = contract::scale(to_float(row[token]), cfg.temperature);
    lp = (float)(((double)z - (double)zmax) - log(kept_mass));
  }
  TS_MERGE_MARK(6);
  return {TOKENSIFT_ROW_OK, token, kept, lp};
}

// Early deferral's test: the candidates' mass (sm.early, one chunk per
// thread, behind a barrier) below p W (1 - margin)?  W is a fixed-order sum
// for this test only; the bins take the list path's block sum.  Uniform.
template <class Policy>
__device__ __forceinline__ bool early_defer_test(MergeSmem<Policy>& sm, int chunks, float zmax, float top_p) {
  static_assert(Policy::kMaxMergeChunks <= Policy::kThreads, "one chunk per thread");
  double w = 0.0, m = 0.0;
  const int c = (int)threadIdx.x;
  if (c < chunks) {
    const double f = exp((double)sm.early.zloc[c] - (double)zmax);
    w = sm.early.mass[c] * f;
    m = (double)sm.early.emit[c] * f;
  }
  w = warp_sum(w);
  m = warp_sum(m);
  if ((threadIdx.x & 31u) == 0) {
    sm.temp.early_part[0][threadIdx.x / 32] = w;
    sm.temp.early_part[1][threadIdx.x / 32] = m;
  }
  __syncthreads();
  double wt = 0.0, mt = 0.0;
#pragma unroll
  for (int i = 0; i < Policy::kThreads / 32; ++i) {
    wt += sm.temp.early_part[0][i];
    mt += sm.temp.early_part[1][i];
  }
  __syncthreads();  // the parts (and sm.early) are read before anyone writes them again
  return mt < (double)top_p * wt * (1.0 - Policy::kEarlyDeferMargin);
}

template <class T, class Policy, bool kEarly>
__device__ RowResult pivot_merge_phase(const PivotArgs& a, int64_t row_id, const RowConfig& cfg,
                                       MergeSmem<Policy>& sm,
                                       FallbackSmem<Policy>& fsm) {
  const ChunkSummary* sum = a.summaries + row_id * a.chunks;
  const T* row = static_cast<const T*>(a.logits) + row_id * a.row_stride;
  const float kNan = __int_as_float(0x7fffffff);

  TS_MERGE_MARK(0);
  // kEarly: a top-p-only row's chunk terms for the early test, loaded here
  // (one round trip with the statistics) into shared memory.
  const bool early = kEarly && top_p_only(cfg) && !cfg.invalid && a.chunks <= Policy::kMaxMergeChunks &&
                     split_vocab_ok<Policy>(a.vocab);
  RowStats st{0, 0, 0, 0, 0, 0, 0};
  for (int c = threadIdx.x; c < a.chunks; c += Policy::kThreads) {
    if constexpr (kEarly) {
      if (early) {
        sm.early.mass[c] = load_cg(&sum[c].mass);
        sm.early.zloc[c] = load_cg(&sum[c].zloc);
        sm.early.emit[c] = load_cg(&sum[c].emit_mass);
      }
    }
    RowStats s;
    s.xmax = load_cg(&sum[c].xmax);
    s.next = load_cg(&sum[c].next);
    s.race = load_cg(&sum[c].race);
    s.lb = load_cg(&sum[c].lb_key);
    s.bad = load_cg(&sum[c].bad);
    s.eligible = load_cg(&sum[c].eligible);
    s.emitted = load_cg(&sum[c].emitted);
    if constexpr (kEarly) {
      if (early && s.eligible == 0) sm.early.mass[c] = 0.0, sm.early.emit[c] = 0.0f;
    }
    st = RowStatsOp{}(st, s);
  }
  __syncthreads();
  {
    const RowStats r = typename MergeSmem<Policy>::Reduce(sm.temp.reduce).Reduce(st, RowStatsOp{});
    if (threadIdx.x == 0) sm.stats = r;
    __syncthreads();
  }
  const RowStats rs = sm.stats;
  TS_MERGE_MARK(1);
  const uint32_t kNegInfKey = contract::order_key(-__builtin_huge_valf());

  if (cfg.invalid) return {TOKENSIFT_ROW_INVALID_PARAM, -1, 0, kNan};
  if (rs.bad) return {TOKENSIFT_ROW_NAN_INPUT, -1, 0, kNan};
  if (rs.xmax == 0 || packed_key(rs.xmax) == kNegInfKey) return {TOKENSIFT_ROW_NO_VALID_TOKEN, -1, 0, kNan};
  if (cfg.greedy) return {TOKENSIFT_ROW_OK, (int32_t)packed_index(rs.xmax), 1, 0.0f};
  const float zmax = contract::scale(contract::key_to_float(packed_key(rs.xmax)), cfg.temperature);
  if (zmax == __builtin_huge_valf()) return {TOKENSIFT_ROW_NAN_INPUT, -1, 0, kNan};
  if (rs.eligible == 0) return {TOKENSIFT_ROW_NO_VALID_TOKEN, -1, 0, kNan};

  auto chunk_mass = [&]() { return row_chunk_mass<Policy>(sm, sum, a.chunks, zmax); };

  if (cfg.plain()) {
    const int32_t tok = (int32_t)packed_index(rs.race);
    float lp = kNan;
    if (a.out.logprobs) {
      const double w = chunk_mass();
      const float z = contract::scale(to_float(row[tok]), cfg.temperature);
      lp = (float)(((double)z - (double)zmax) - log(w));
    }
    return {TOKENSIFT_ROW_OK, tok, rs.eligible, lp};
  }

  // ---- 1. the chunks' candidates ----
  const uint32_t lb = cfg.m_active ? 0u : rs.lb;
  const bool small_s = a.chunks <= Policy::kMaxMergeChunks;
  if (small_s && threadIdx.x < a.chunks)  // the chunks' emitted counts, in shared memory
    sm.chunk_emitted[threadIdx.x] = load_cg(&sum[threadIdx.x].emitted);
  __syncthreads();
  // Early deferral: the candidates hold the chunks' emitted mass; when that
  // is below p W by the margin, the list cannot decide the row (its prefix
  // never reaches p W), so it goes to the split fallback now, as it would
  // after the candidates were loaded, pre-selected, sorted and scanned: with
  // use_list false, decide_and_draw defers it under the same conditions (top-p
  // only, no tie run at the max, a vocabulary the split takes), with the same
  // zmax and bins.
  bool defer_now = false;
  if constexpr (kEarly) {
    defer_now = early && !(rs.next != 0 && packed_key(rs.next) == contract::order_key(zmax)) &&
                early_defer_test<Policy>(sm, a.chunks, zmax, cfg.top_p);
  }
  TS_MERGE_MARK(8);
  bool use_list = !defer_now && rs.emitted <= Policy::kMergeCap * 4;
  uint32_t key_floor = lb;
  auto load_candidates = [&]() {
    if (threadIdx.x == 0) sm.count = 0;
    __syncthreads();
    const uint64_t* cands = a.candidates + row_id * a.chunks * Policy::kCap;
    auto consider = [&](uint64_t p) {
      if (packed_key(p) < key_floor) return;
      if (cfg.m_active && !contract::passes_min_p(contract::key_to_float(packed_key(p)), zmax, cfg.ln_minp)) return;
      const int at = atomicAdd(&sm.count, 1);
      if (at < Policy::kMergeCap) sm.cand[at] = p;
    };
    if (small_s) {
      // Slot walk: warp w owns chunks w, w + kWarps, ...; lane l loads slot
      // 32 s + l of each, for s below the warp's largest emitted count / 32,
      // walking slot rows first (s = 0 of every chunk, then s = 1, ...) so
      // that chunks emitting <= 64 (top-p and min-p rows) finish in one round
      // of kUnroll independent loads.  A slot is real when it is below its
      // chunk's emitted count (shared memory): no search for its chunk.
      constexpr int kUnroll = Policy::kMergeLoadUnroll;
      constexpr int kWarps = Policy::kThreads / 32;
      static_assert(Policy::kCap % 32 == 0 && Policy::kMaxMergeChunks <= 32 * kWarps, "a lane per chunk of its warp");
      const int warp = (int)(threadIdx.x / 32), lane = (int)(threadIdx.x % 32);
      const int cpw = warp < a.chunks ? (a.chunks - warp + kWarps - 1) / kWarps : 0;  // chunks of this warp
      const int most = __reduce_max_sync(0xffffffffu, lane < cpw ? sm.chunk_emitted[warp + kWarps * lane] : 0);
      const int pairs = cpw * ((most + 31) / 32);  // (slot row, chunk) pairs, slot rows first
      for (int i0 = 0; i0 < pairs; i0 += kUnroll) {
        uint64_t p[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int i = i0 + u;
          const int srow = i / max(cpw, 1);
          const int c = warp + kWarps * (i - srow * cpw);
          const int e = 32 * srow + lane;
          p[u] = i < pairs && e < sm.chunk_emitted[c] ? load_cg(&cands[(int64_t)c * Policy::kCap + e]) : 0ull;
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
          if (p[u]) consider(p[u]);
      }
    } else {
      const int64_t total_slots = (int64_t)a.chunks * Policy::kCap;
      for (int64_t slot = threadIdx.x; slot < total_slots; slot += Policy::kThreads) {
        const int c = (int)(slot / Policy::kCap), e = (int)(slot % Policy::kCap);
        if (e < load_cg(&sum[c].emitted)) consider(load_cg(&cands[slot]));
      }
    }
    __syncthreads();
  };
  if (use_list) {
    load_candidates();
    TS_MERGE_MARK(9);
    // Too many for shared memory (a top-k row over many chunks): the k-th key
    // of the kMergeCap candidates that did fit is a valid lower bound for the
    // row's k-th key, so reload above it.
    if (sm.count > Policy::kMergeCap && cfg.k_active && !cfg.m_active && cfg.top_k <= Policy::kCap) {
      constexpr int kSlots = Policy::kMergeCap / Policy::kThreads;
      uint64_t v[kSlots];
#pragma unroll
      for (int s2 = 0; s2 < kSlots; ++s2) v[s2] = sm.cand[s2 * Policy::kThreads + threadIdx.x];
      const ThresholdResult t =
          block_threshold_select<Policy::kThreads, kSlots, uint64_t>(v, cfg.top_k, cfg.top_k, 0, sm.thresh);
      key_floor = t.key > key_floor ? t.key : key_floor;
      load_candidates();
    }
    use_list = sm.count <= Policy::kMergeCap;
  }
  return decide_and_draw<T, Policy>(a, row_id, cfg, sm, fsm, use_list, rs.next, zmax);
}

}  // namespace tokensift::cuda_detail
