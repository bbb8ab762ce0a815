// Cluster kernel of the pivot sampler: one thread-block cluster per row for
// small batches of top-k rows (perf-notes step 11 (b), dev/cluster_probe.cu)
// and, in its kMinP and kMinPTopK copies, of min-p rows (v102, v102d).
//
// Why: at B = 1 the chunked kernel spends ~18 us on a V = 129,280 top-k row,
// ~11 of them past what greedy's one launch costs: 32 chunk CTAs each emit
// their own top ~80 (the union must hold the row's top k without proof), take
// a ticket, and the last one loads ~2,500 candidates from L2, pre-selects and
// decides (perf-notes step 11).  A cluster of kClusterCtas CTAs on sm_90 shares distributed shared
// memory, so the CTAs can agree on the row's threshold first and hand CTA 0
// only the tokens above it: ~k candidates, no ticket, no L2 round trip.
//
// The passes (Qrita's Gaussian truncation and multi-pivot search, across a
// cluster instead of a CTA): every CTA loads its kClusterItems logits per
// thread once, into registers, and forms z.  (1) Statistics: each CTA's
// NaN-propagating raw max, eligible count and the sums of z and z^2 over its
// eligible tokens go to every CTA of the cluster (one 16-byte st.async into
// each CTA's statistics mailbox, cluster_mailbox.cuh); each CTA combines the kClusterCtas records in one fixed order, so
// all hold the same row statistics bit for bit and take the same decisions.
// (2) Search: three pivots per round (calls of at most 4 rows), Gaussian
// quantiles aimed at counts spread geometrically around the window [need,
// kWarpList] (need = the row's k, or its eligible count when smaller); each
// CTA counts its tokens at or above each pivot and the counts are exchanged
// the same way.  Calls of 5-16 rows (the capped copy) take 15 pivots a
// round, each CTA binning its tokens by how many pivots they reach (v68c:
// B = 16 -13.5 %, where it cost B = 1 +4.7 %).  A pivot whose count
// lands in the window ends the search; otherwise the pivots re-aim from the
// count nearest the window (gaussian_reguess), up to kClusterRounds rounds,
// the last of which accepts any count in [need, kMergeCap].  A row no pivot
// brackets takes an exact radix select instead (cluster_exact_select: the
// k-th key in four 8-bit passes, its ties cut by index), which lists exactly
// the row's top `need`.  (3) Every token at or above the chosen pivot (or
// in the exact top `need`) goes into CTA 0's candidate list, each CTA's
// part placed by the counts the CTAs exchanged, by st.async into CTA 0's
// list mailbox, whose expected bytes are the chosen pivot's count (the exact
// path: one remote atomic a CTA, plain remote stores, a cluster barrier).
// The other CTAs leave; CTA 0 runs what the row-CTA kernel runs on its list:
// an exact compaction to at most kWarpList (ties cut by index) and the
// merge's one-warp decisions and draw, their per-position work spread over
// the CTA (cta_list_finish.cuh).  One launch, no workspace: every row is
// decided here.  Where a B = 1 call's ~7.2 us go (v66's trace, v67): CTA 0
// has its data ~2.1 us after entry (a DRAM round trip), then the exchanges
// (0.2-0.4 us each since the mailboxes replaced cluster barriers, whose
// waits and release fences held 54 % of CTA 0's stall samples at v63), the
// first pivots and round 1's count (~1.5), the list (~1.0) and the finish
// (~1.7); the rest is the launch.  No stage is arithmetic-bound: each pays
// for the cold code regions it enters (dev/stage_cost_probe.cu).
//
// Why the bits equal the other paths' (the GPU tests' row-alone checks):
// the list holds every token of the row at or above the pivot, so it is the
// contract's order down to the pivot, as the row-CTA kernel's list is down to
// its tau (the exact path's list is the row's top k itself); both end in
// rowcta_compact and decide_and_draw, whose one-warp finish reads only the
// sorted top k (pivot_rowcta.cuh has the argument
// against the chunked path).  Statuses (invalid parameters, NaN or +inf,
// no eligible token) follow the row-CTA kernel's order on the same
// statistics.
//
// Pure min-p rows (kMinP: no top-k, no top-p) need no search: once the
// statistics are exchanged every CTA holds the row's max, so it knows which
// of its tokens pass min-p; the counts go through one round's mailbox and
// every survivor into CTA 0's list, which is then the row's whole min-p set,
// what the chunked merge decides from (decide_and_draw on a complete list:
// the same bits).  A row with more survivors than the list holds (flat or
// hot rows) keeps them all: without log-probs each CTA races its own
// survivors and CTA 0 takes the best of the 16 (the token and count are
// exact under any split); with log-probs CTA 0 alone runs the merge's gather
// and one-CTA fallback, as on the chunked path, whose kept mass (a double
// sum in its own order) the log-prob's bits follow.  Min-p rows with top-k
// (k < kWarpList; llama.cpp's default chain, top-p on top) search like
// top-k rows; CTA 0 keeps the entries of its list that pass min-p, a prefix
// of the row's order that holds either k tokens or every survivor, and
// decides from it as the chunked merge does from its filtered candidates.
//
// Failure modes: a row the search cannot bracket (a flat row: every token
// ties, so a pivot counts none or all of them; rows whose sums overflow or
// cancel in fp32, such as 3,000 + N(0, 1)) pays the exact select, five more
// cluster barriers and four histograms (v59 sent it to the chunked kernel in a
// second launch that every call then waited for, perf-notes v60).  A
// cluster needs kClusterCtas co-resident CTAs in one GPC; launches wait for
// them like any grid.  Only V <= kClusterCtas x kThreads x kClusterItems
// (131,072) takes this kernel; loads are 16-byte vectors where the row is
// aligned, else per element.
#pragma once

#include <cooperative_groups.h>

#include "cuda/cluster_exact_select.cuh"
#include "cuda/cluster_mailbox.cuh"
#include "cuda/cluster_trace.cuh"
#include "cuda/cta_list_finish.cuh"
#include "cuda/pivot_rowcta.cuh"

namespace tokensift::cuda_detail {

// The first round's aim of pivot j (of 3): Gaussian counts spread
// geometrically from need / 2 to 0.9 cap.  Real rows have heavier heads than
// their Gaussian fit (the anchors' 20 boosted tokens sit on top of the tail
// the fit predicts), so a pivot aimed below the window often lands in it.
__device__ __forceinline__ float cluster_aim(int j, int need, int cap) {
  const float lo = fmaxf(0.5f * (float)need, 0.5f), hi = 0.9f * (float)cap;
  return lo * __powf(hi / lo, 0.5f * (float)j);
}

// The binned search's first aim of pivot j (of kPivots): Gaussian counts spread
// geometrically from need / 4 to 4 cap, a step of ~1.24 at k = 50 (the
// window [k, cap] spans 1.28).  Real rows have heavier heads than their
// Gaussian fit (the anchors' 20 boosted tokens sit on top of the tail the
// fit predicts), so pivots aimed below the window often land in it.
template <int kPivots>
__device__ __forceinline__ float cluster_binned_aim(int j, int need, int cap) {
  const float lo = fmaxf(0.25f * (float)need, 0.5f), hi = 4.0f * (float)cap;
  return lo * __powf(__fdividef(hi, lo), (float)j * (1.0f / (float)(kPivots - 1)));
}

// The standard normal's upper-tail quantile: z with P(Z > z) = q, 0 < q < 1
// (Abramowitz & Stegun 26.2.23, |error| < 4.5e-4): one log, one square root
// and one division instead of normcdfinvf's general code.  The first
// pivots' stage took 0.8 us at B = 1 either way (v61, v62's traces): its cost
// is not this arithmetic.  Pivots are heuristics: their bits never reach a
// result, only which pivot lands.
__device__ __forceinline__ float upper_tail_quantile(float q) {
  const float s = -2.0f * __logf(fminf(q, 1.0f - q));
  const float t = s * rsqrtf(s);
  const float z = t - __fdividef(2.515517f + t * (0.802853f + t * 0.010328f),
                                 1.0f + t * (1.432788f + t * (0.189269f + t * 0.001308f)));
  return q < 0.5f ? z : -z;
}

// A Gaussian quantile: the z above which `aim` of the row's eligible tokens
// are expected (the row statistics' mean and sigma).
// Approximate arithmetic throughout (MUFU reciprocal, square root, logs):
// the IEEE division and square root are subroutines with slow paths, cold
// code in a stage that runs once per row, and a pivot's bits never reach a
// result.
__device__ __forceinline__ float cluster_quantile(const ChunkStats& st, float aim) {
  const float inv_n = __frcp_rn((float)max(st.nsample, 1));
  const float mean = st.sum * inv_n, var = fmaxf(st.sumsq * inv_n - mean * mean, 0.0f);
  const float elig = (float)st.eligible;
  const float q = __fdividef(fminf(fmaxf(aim, 0.5f), elig - 0.5f), elig);
  return mean + var * rsqrtf(fmaxf(var, 1e-30f)) * upper_tail_quantile(q);
}

// Lane j's pivot made safe for the bins (call from a whole warp, lanes in
// pivot order): at least -FLT_MAX (never below an ineligible token's -inf;
// a NaN becomes it too) and at least every lower lane's, so that a token
// reaches pivot p exactly when it reaches p + 1 of them and the count at p
// is the number of tokens at or above it, which the list takes.
__device__ __forceinline__ float ascending_pivots(float pv) {
  pv = fmaxf(pv, -3.4028235e38f);
  const int lane = (int)(threadIdx.x & 31u);
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const float y = __shfl_up_sync(0xffffffffu, pv, o);
    if (lane >= o) pv = fmaxf(pv, y);
  }
  return pv;
}

// A CTA's statistics as one 16-byte message (its mailbox word): eligible
// and nsample, each at most kThreads x kClusterItems (8,192), share a word.
__device__ __forceinline__ uint4 pack_stats(const ChunkStats& c) {
  return make_uint4(__float_as_uint(c.xmax), (uint32_t)c.eligible | ((uint32_t)c.nsample << 16),
                    __float_as_uint(c.sum), __float_as_uint(c.sumsq));
}
__device__ __forceinline__ ChunkStats unpack_stats(const uint4& v) {
  return {__uint_as_float(v.x), (int32_t)(v.y & 0xffffu), (int32_t)(v.y >> 16), __uint_as_float(v.z),
          __uint_as_float(v.w)};
}
// Pivot p's count in a round's message.
__device__ __forceinline__ int count_at(const uint4& v, int p) { return (int)(p == 0 ? v.x : p == 1 ? v.y : v.z); }

// x[j] for a run-time j without leaving registers (an indexed register
// array goes to local memory): a tree of selects on j's bits.
template <int N>
__device__ __forceinline__ float select_item(const float (&x)[N], int j) {
  static_assert(N == 32, "five levels");
  float a[16], b[8], c[4], d[2];
#pragma unroll
  for (int i = 0; i < 16; ++i) a[i] = (j & 1) ? x[2 * i + 1] : x[2 * i];
#pragma unroll
  for (int i = 0; i < 8; ++i) b[i] = (j & 2) ? a[2 * i + 1] : a[2 * i];
#pragma unroll
  for (int i = 0; i < 4; ++i) c[i] = (j & 4) ? b[2 * i + 1] : b[2 * i];
#pragma unroll
  for (int i = 0; i < 2; ++i) d[i] = (j & 8) ? c[2 * i + 1] : c[2 * i];
  return (j & 16) ? d[1] : d[0];
}

// The finish on CTA 0's list, out of line for the capped kernel: inlined,
// its 64-bit compares and double sums raised the kernel's registers (128
// uncapped, spills under the cap; v62 measured this for the one-warp form).
template <class Policy>
__device__ __noinline__ WarpListResult cluster_cta_finish(const uint64_t* cand, int n, uint64_t next,
                                                          const RowConfig& cfg, float zmax, bool want_mass,
                                                          CtaFinishSmem& fs) {
  static_assert(Policy::kWarpList == kCtaFinishList, "the list after compaction fits the finish");
  return cta_topk_finish<Policy::kThreads>(cand, n, next == 0, next, cfg, zmax, want_mass, fs);
}

// kCapped: the instantiation for calls of more than kClusterUncappedMaxRows
// rows, its registers capped so that kClusterMinBlocksPerSm CTAs fit an SM
// (16 clusters then fit the GPCs at once) and its finish out of line; the
// smaller calls' copy keeps every register it wants (the cap spilled and
// cost B = 1 ~1 us, v62) and its finish inline (fp32 at 8 rows uncapped
// ran +15 %, v63).  Same arithmetic, same bits.
// kMinP: the copy for min-p rows without top-k or top-p, which lists every
// min-p survivor instead of searching (step 2' below).  kMinPTopK: the copy
// for min-p rows with top-k (k < kWarpList, any top-p), which searches as
// top-k rows do; CTA 0 filters the list by min-p before deciding.
template <class T, class Policy, bool kCapped, bool kMinP, bool kMinPTopK>
__global__ void __launch_bounds__(Policy::kThreads, kCapped ? Policy::kClusterMinBlocksPerSm : 1)
    cluster_topk_kernel(TS_PIVOT_KERNEL_ARGS a) {
  namespace cg = cooperative_groups;
  constexpr int kCtas = Policy::kClusterCtas;
  constexpr int kPer = Policy::kClusterItems;  // logits per thread
  constexpr int kVec = 16 / (int)sizeof(T);
  constexpr int kVecs = kPer / kVec;  // 16-byte vectors per thread
  constexpr int kSpan = Policy::kThreads * kPer;
  // The capped copy (calls of more than kClusterUncappedMaxRows rows) may
  // take the binned search (v68b: 15 pivots a round, tokens at or above the
  // lowest binned by how many they reach; B = 16 -13.5 % against three
  // pivots, B = 1 +4.7 %, so the uncapped copy keeps three).
  constexpr bool kBinned = kCapped && Policy::kClusterBinnedCapped && !kMinP;
  constexpr int kPivots = kBinned ? Policy::kClusterPivots : 3;
  constexpr int kBinWords = kPivots + 1;  // binned: bin b holds tokens reaching b pivots (b = 1..kPivots; word 0 unused)
  static_assert(!kBinned || (kBinWords % 4 == 0 && kBinWords <= 32), "bins as 16-byte messages, one lane a bin");
  constexpr int kRounds = Policy::kClusterRounds;
  constexpr int kWarps = Policy::kThreads / 32;
  constexpr float kInf = __builtin_huge_valf();
  static_assert(kPer % kVec == 0, "whole vectors per thread");
  static_assert(kSpan < 65536, "pack_stats: a CTA's counts fit 16 bits");
  __shared__ PivotSmem<Policy> smem;  // CTA 0: the list and the finish
  // Mailboxes (cluster_mailbox.cuh): every CTA's statistics, packed
  // (pack_stats), and each round's counts at the three pivots (the binned
  // search: each CTA's bins, bins_in), written by each CTA of the cluster;
  // CTA 0's list.  One mbarrier an exchange.
  __shared__ uint4 stats_in[kCtas];
  __shared__ uint4 counts_in[kRounds][kCtas];
  __shared__ __align__(16) int bins_in[kRounds][kCtas][kBinWords];  // binned search: every CTA's bins
  __shared__ uint64_t box_stats, box_rounds[kRounds], box_list;
  __shared__ ChunkStats warp_stats[kWarps];
  // One per round: threads 0..kCtas-1 read a round's while other warps may
  // already write the next one's (the mailbox wait is no CTA barrier).
  __shared__ int warp_counts[kRounds][kWarps][kPivots];
  // Binned search: this CTA's bins, the pivots and warp 0's decision (pivot,
  // -1 for none; count; this CTA's list base), one set of bins and pivots per
  // round (a round's are read while other warps may write the next one's).
  __shared__ __align__(16) int bins[kRounds][kBinWords];
  __shared__ float piv_sh[kRounds][kPivots];
  __shared__ int4 search_sh;
  __shared__ RowConfig row_cfg;
  __shared__ uint64_t tau_sh;
  __shared__ int smem_ties[kCtas + 2];  // the exact path: each CTA's ties at the k-th key; digit and rank
  __shared__ int local_n, local_base;   // this CTA's part of the list: its count, its place (exact path)
  __shared__ int finish_decided;
  __shared__ CtaFinishSmem finish_smem;  // CTA 0's finish
  MergeSmem<Policy>& sm = smem.merge;
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = (int)cluster.block_rank();
  const int64_t row_id = blockIdx.x / kCtas;
  const int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5);
  TS_CLUSTER_MARK(0);
#ifdef TOKENSIFT_CLUSTER_TRACE
  if (threadIdx.x == 0 && row_id < kClusterTraceRows) {
    atomicMin(&cluster_trace_span[row_id][0], globaltimer_ns());
    atomicMax(&cluster_trace_span[row_id][1], globaltimer_ns());
  }
#endif
  // A CTA's shared memory may be written by another only once it runs
  // (compute-sanitizer's racecheck flags the stores otherwise): every CTA
  // arrives here and waits just before its first remote store, so the wait
  // overlaps the loads.
  // The mailboxes are set up before that arrive: a CTA past the wait may
  // send to any of them.
  if (threadIdx.x == 0) {
    mailbox_init(&box_stats);
    mailbox_expect(&box_stats, kCtas * sizeof(uint4));
#pragma unroll
    for (int r = 0; r < kRounds; ++r) {
      mailbox_init(&box_rounds[r]);
      mailbox_expect(&box_rounds[r], kBinned ? kCtas * kBinWords * sizeof(int) : kCtas * sizeof(uint4));
    }
    mailbox_init(&box_list);
    mailbox_init_fence();
  }
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");

  const T* row = static_cast<const T*>(a.logits) + row_id * a.row_stride;
  const int32_t vocab = a.vocab;
  const int32_t begin = rank * kSpan;
  const bool aligned = (reinterpret_cast<uintptr_t>(row) & 15u) == 0;
  float x[kPer];
#pragma unroll
  for (int v = 0; v < kVecs; ++v) {
    const int32_t i0 = begin + (v * Policy::kThreads + (int)threadIdx.x) * kVec;
    if (aligned && i0 + kVec <= vocab) {
      float f[kVec];
      unpack_vector<T>(__ldcs(reinterpret_cast<const uint4*>(row + i0)), f);
#pragma unroll
      for (int e = 0; e < kVec; ++e) x[v * kVec + e] = f[e];
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e) x[v * kVec + e] = i0 + e < vocab ? to_float(row[i0 + e]) : -kInf;
    }
  }
  const auto index_of = [&](int j) {
    return (uint32_t)(begin + ((j / kVec) * Policy::kThreads + (int)threadIdx.x) * kVec + (j % kVec));
  };
  if (threadIdx.x == 0) {
    row_cfg = load_row_config(a.params, row_id, vocab);
    local_n = 0;
    if constexpr (kBinned) {
#pragma unroll
      for (int r = 0; r < kRounds; ++r)
#pragma unroll
        for (int b2 = 0; b2 < kBinWords; ++b2) bins[r][b2] = 0;
    }
    if (rank == 0) sm.count = 0;  // the list; other CTAs' appends come after the start's cluster barrier
  }
  __syncthreads();
  TS_CLUSTER_MARK(1);
  const RowConfig cfg = row_cfg;

  // 1. Statistics: raw max (status), eligible count, sums of z and z^2.
  ChunkStats st{-kInf, 0, 0, 0.0f, 0.0f};
  // One loop per case, so that a row runs only its own straight-line code
  // (fetched cold once per row, as v64 found for the list): at T = 1 no
  // division and no slow-path call per item.  Same values either way.
  const auto stat_item = [&](int j, float sc) {
    st.xmax = max_nan(st.xmax, x[j]);
    x[j] = sc > -kInf ? sc : -kInf;  // NaN: never listed (the row's status is NaN)
    st.eligible += x[j] > -kInf;
    add_sample(st, x[j]);
  };
  if (cfg.temperature == 1.0f) {
#pragma unroll
    for (int j = 0; j < kPer; ++j) stat_item(j, x[j]);
  } else {
#pragma unroll
    for (int j = 0; j < kPer; ++j) stat_item(j, contract::scale(x[j], cfg.temperature));
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    st.xmax = max_nan(st.xmax, __shfl_xor_sync(0xffffffffu, st.xmax, o));
    st.eligible += __shfl_xor_sync(0xffffffffu, st.eligible, o);
    st.nsample += __shfl_xor_sync(0xffffffffu, st.nsample, o);
    st.sum += __shfl_xor_sync(0xffffffffu, st.sum, o);
    st.sumsq += __shfl_xor_sync(0xffffffffu, st.sumsq, o);
  }
  if (lane == 0) warp_stats[warp] = st;
  __syncthreads();
  TS_CLUSTER_MARK(2);
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");  // every CTA of the cluster runs
  if ((int)threadIdx.x < kCtas) {  // this CTA's record, into every CTA of the cluster
    ChunkStats c = warp_stats[0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) c = ChunkStatsOp{}(c, warp_stats[w]);
    mailbox_send(&stats_in[rank], &box_stats, threadIdx.x, pack_stats(c));
  }
  mailbox_wait(&box_stats);
  ChunkStats rs = unpack_stats(stats_in[0]);
#pragma unroll
  for (int c = 1; c < kCtas; ++c) rs = ChunkStatsOp{}(rs, unpack_stats(stats_in[c]));
  TS_CLUSTER_MARK(3);

  // Statuses, in the row-CTA kernel's order (uniform over the cluster).
  const float kNan = __int_as_float(0x7fffffff);
  RowResult bad{0, -1, 0, kNan};
  bool is_bad = true;
  float zmax = 0.0f;
  if (cfg.invalid) {
    bad.status = TOKENSIFT_ROW_INVALID_PARAM;
  } else if (!(rs.xmax < kInf)) {
    bad.status = TOKENSIFT_ROW_NAN_INPUT;
  } else if (!(rs.xmax > -kInf)) {
    bad.status = TOKENSIFT_ROW_NO_VALID_TOKEN;
  } else {
    zmax = contract::scale(contract::key_to_float(contract::order_key(rs.xmax)), cfg.temperature);
    if (zmax == kInf) bad.status = TOKENSIFT_ROW_NAN_INPUT;
    else if (rs.eligible == 0) bad.status = TOKENSIFT_ROW_NO_VALID_TOKEN;
    else is_bad = false;
  }
  if (is_bad) {
    if (rank == 0 && threadIdx.x == 0) write_result(a.out, row_id, bad);
    return;  // uniform: no CTA touches another's memory after the barrier above
  }

  // 2'. Min-p rows without top-k or top-p (kMinP): no search.  Every CTA
  // holds the row's max, so each knows exactly which of its tokens pass
  // min-p; their counts are exchanged like a round's (the three-pivot
  // mailboxes) and, when all fit CTA 0's list (kMergeCap), each CTA sends
  // its survivors there.  The list is then the row's whole min-p set, the
  // list the chunked merge decides from when its candidates are complete or
  // its bounded gather fits, so decide_and_draw gives the same bits.  More survivors
  // than the list holds (flat or hot rows): raced across the CTAs without
  // log-probs, else CTA 0 alone runs decide_and_draw without a list, the
  // chunked merge's gather and fallback on the same row.  (No top-p here:
  // such a row past the list would defer to the split launches.)
  if constexpr (kMinP) {
    uint32_t mask = 0;
#pragma unroll
    for (int j = 0; j < kPer; ++j) mask |= (uint32_t)contract::passes_min_p(x[j], zmax, cfg.ln_minp) << j;
    const int my = __popc(mask);
    const int in_warp = __reduce_add_sync(0xffffffffu, my);
    if (lane == 0) warp_counts[0][warp][0] = in_warp;
    __syncthreads();
    if ((int)threadIdx.x < kCtas) {
      int c = 0;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) c += warp_counts[0][w][0];
      mailbox_send(&counts_in[0][rank], &box_rounds[0], threadIdx.x, make_uint4((uint32_t)c, 0u, 0u, 0u));
    }
    mailbox_wait(&box_rounds[0]);
    int total = 0, base = 0;
#pragma unroll
    for (int c = 0; c < kCtas; ++c) {
      const int n = (int)counts_in[0][c].x;
      total += n;
      base += c < rank ? n : 0;
    }
    TS_CLUSTER_MARK(4);
    TS_CLUSTER_INFO(1, total);
    const bool listed = total <= Policy::kMergeCap;  // uniform over the cluster
    // Past the list, with no log-probs asked for: the kept set is every
    // survivor, and the token their race's winner, which each CTA finds among
    // its own (one exact score each, Philox and the contract's logs; the max
    // of packed (score, index) is the same whatever the split), and CTA 0
    // takes the best of the 16 (a message each, round 2's mailbox).  The
    // token and kept count are the fallback's; its log-prob needs the kept
    // mass in the fallback's own order, so calls that ask for log-probs take
    // CTA 0's gather and fallback below.  Flat rows at B = 1: ~435 us there.
    if (!listed && a.out.logprobs == nullptr) {
      uint64_t best = 0;
#pragma unroll 1
      while (mask) {
        const int j = __ffs((int)mask) - 1;
        mask &= mask - 1u;
        const uint32_t i = index_of(j);
        const float s = contract::race_score(select_item(x, j), cfg.seed, cfg.offset, i);
        const uint64_t q = pack_order(contract::order_key(s), i);
        best = q > best ? q : best;
      }
      best = warp_max_u64(best);
      if (lane == 0) warp_counts[1][warp][0] = (int)(uint32_t)best, warp_counts[1][warp][1] = (int)(uint32_t)(best >> 32);
      __syncthreads();
      const auto word_pair = [](uint32_t lo, uint32_t hi) { return ((uint64_t)hi << 32) | lo; };
      if (threadIdx.x == 0) {
        uint64_t b = 0;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) {
          const uint64_t q = word_pair((uint32_t)warp_counts[1][w][0], (uint32_t)warp_counts[1][w][1]);
          b = q > b ? q : b;
        }
        mailbox_send(&counts_in[1][rank], &box_rounds[1], 0u, make_uint4((uint32_t)b, (uint32_t)(b >> 32), 0u, 0u));
      }
      if (rank != 0) return;
      mailbox_wait(&box_rounds[1]);
      if (threadIdx.x == 0) {
        uint64_t b = 0;
#pragma unroll
        for (int c = 0; c < kCtas; ++c) {
          const uint64_t q = word_pair(counts_in[1][c].x, counts_in[1][c].y);
          b = q > b ? q : b;
        }
        write_result(a.out, row_id, RowResult{TOKENSIFT_ROW_OK, (int32_t)packed_index(b), total, kNan});
      }
      TS_CLUSTER_MARK(9);
      return;
    }
    if (listed) {
      if (rank == 0 && threadIdx.x == 0) {
        sm.count = total;
        mailbox_expect(&box_list, (uint32_t)total * sizeof(uint64_t));
      }
      if (my) {
        int pos = atomicAdd(&local_n, my) + base;
#pragma unroll 1
        while (mask) {
          const int j = __ffs((int)mask) - 1;
          mask &= mask - 1u;
          mailbox_send(&sm.cand[pos++], &box_list, 0u, pack_order(contract::order_key(select_item(x, j)), index_of(j)));
        }
      }
    }
    // Only CTA 0 goes on, on its own memory (the gather reads the row).
    if (rank != 0) return;
    if (listed) mailbox_wait(&box_list);
    TS_CLUSTER_MARK(7);
    const RowResult r = rowcta_finish<T, Policy>(a, row_id, cfg, smem, listed, 0ull, zmax, -1.0);
    if (threadIdx.x == 0) write_result(a.out, row_id, r);  // no top-k or top-p: never deferred
    TS_CLUSTER_MARK(9);
    return;
  }

  // 2. The search.  Three pivots a round (the uncapped copy; the capped one
  // unless kClusterBinnedCapped): each CTA counts its tokens at or above
  // each pivot and the counts are exchanged.  Binned (the capped copy under
  // kClusterBinnedCapped): kClusterPivots pivots a round, ascending; each CTA
  // bins its tokens at or above the lowest pivot by how many pivots they
  // reach (a few dozen tokens a row: the rest cost one compare each), the
  // bins go to every CTA, and warp 0 of each reads the counts off their
  // suffix sums.
  const int need = min(cfg.top_k, rs.eligible);
  constexpr int kCap = Policy::kWarpList;
  const bool spread = sample_var(rs) > 0.0f;
  // Few eligible tokens: list them all (a pivot below every eligible z).
  const bool all = rs.eligible <= kCap || !spread;
  float g = 0.0f;
  int total = -1;  // the chosen pivot's count; -1: none yet
  int chosen_round = 0, chosen_p = 0;  // three pivots: where its per-CTA counts are (counts_in)
  int list_base = 0;  // binned: this CTA's place in the list (the chosen pivot's counts of the CTAs before it)
  if constexpr (kBinned) {
    if (all) {
      // Every eligible token is listed (a pivot below every eligible z): the
      // counts are the statistics' own.
      g = -3.4028235e38f;
      if (rs.eligible <= Policy::kMergeCap) total = rs.eligible;
      for (int c = 0; c < rank; ++c) list_base += unpack_stats(stats_in[c]).eligible;
    } else if (warp == 0) {
      const float pv = ascending_pivots(
          cluster_quantile(rs, cluster_binned_aim<kPivots>(kPivots - 1 - min(lane, kPivots - 1), need, kCap)));
      if (lane < kPivots) piv_sh[0][lane] = pv;
    }
    __syncthreads();
    TS_CLUSTER_MARK(13);
    for (int round = 0; round < kRounds && total < 0 && !all; ++round) {
      const float* piv = piv_sh[round];
      uint32_t mask = 0;
      #pragma unroll
      for (int j = 0; j < kPer; ++j) mask |= (uint32_t)(x[j] >= piv[0]) << j;
      // Whole-warp iterations so that equal bins aggregate into one atomic
      // (flat rows put every token in one bin).
      while (__any_sync(0xffffffffu, mask != 0)) {
        int b = -1;
        if (mask) {
          const int j = __ffs((int)mask) - 1;
          mask &= mask - 1u;
          const float v = select_item(x, j);
          b = 1;
          #pragma unroll
          for (int q = 1; q < kPivots; ++q) b += v >= piv[q];
        }
        const unsigned peers = __match_any_sync(0xffffffffu, b);
        if (b >= 0 && lane == __ffs((int)peers) - 1) atomicAdd(&bins[round][b], __popc(peers));
      }
      __syncthreads();
      if (round == 0) TS_CLUSTER_MARK(14);
      if ((int)threadIdx.x < kCtas) {
        const uint4* mine = reinterpret_cast<const uint4*>(bins[round]);
        #pragma unroll
        for (int q = 0; q < kBinWords / 4; ++q)
          mailbox_send(&bins_in[round][rank][4 * q], &box_rounds[round], threadIdx.x, mine[q]);
      }
      mailbox_wait(&box_rounds[round]);
      if (round == 0) TS_CLUSTER_MARK(15);
      const int hi_cap = round == kRounds - 1 ? Policy::kMergeCap : kCap;
      if (warp == 0) {
        // Lane b: bin b over the cluster; its suffix sum is the count at pivot
        // b - 1 (bins hold tokens by how many pivots they reach, 1..kPivots).
        int sfx = 0;
        if (lane < kBinWords)
          #pragma unroll
          for (int c = 0; c < kCtas; ++c) sfx += bins_in[round][c][lane];
        #pragma unroll
        for (int o = 1; o < kBinWords; o <<= 1) {
          const int y = __shfl_down_sync(0xffffffffu, sfx, o);
          if (lane + o < kBinWords) sfx += y;
        }
        const int cnt = __shfl_down_sync(0xffffffffu, sfx, 1);  // lane p: the count at pivot p
        // Pivots ascend, so counts descend: the highest pivot whose count lands.
        const unsigned lands = __ballot_sync(0xffffffffu, lane < kPivots && cnt >= need && cnt <= hi_cap);
        if (lands) {
          const int p = 31 - __clz((int)lands);
          // Each CTA's count at pivot p, and the exclusive sum over the ranks.
          int mine = 0;
          if (lane < kCtas)
            #pragma unroll
            for (int b2 = 1; b2 < kBinWords; ++b2) mine += b2 > p ? bins_in[round][lane][b2] : 0;
          int incl = mine;
          #pragma unroll
          for (int o = 1; o < kCtas; o <<= 1) {
            const int y = __shfl_up_sync(0xffffffffu, incl, o);
            if (lane >= o) incl += y;
          }
          const int base = __shfl_sync(0xffffffffu, incl - mine, rank);
          const int tot = __shfl_sync(0xffffffffu, cnt, p);
          if (lane == 0) search_sh = make_int4(p, tot, base, 0);
        } else {
          if (lane == 0) search_sh = make_int4(-1, -1, 0, 0);
          if (round + 1 < kRounds) {
            // Re-aim from the pivot whose count is nearest the window (in
            // ratio; the lowest such pivot on a tie), the next round's pivots
            // around it, closer each round.
            const float c = fmaxf((float)cnt, 0.5f);
            float d = lane < kPivots ? (c < (float)need ? (float)need / c : c / (float)kCap) : kInf;
            int best = lane;
            #pragma unroll
            for (int o = 16; o > 0; o >>= 1) {
              const float d2 = __shfl_xor_sync(0xffffffffu, d, o);
              const int b2 = __shfl_xor_sync(0xffffffffu, best, o);
              if (d2 < d || (d2 == d && b2 < best)) d = d2, best = b2;
            }
            const int cb = __shfl_sync(0xffffffffu, cnt, best);
            const float base = gaussian_reguess(rs, piv[best], cb, true, need, kCap);
            const float sd = sqrtf(fmaxf(sample_var(rs), 0.0f));
            const float step = 0.05f * sd / (float)(round + 1);
            const float pv = ascending_pivots(base + (float)(min(lane, kPivots - 1) - kPivots / 2) * step);
            if (lane < kPivots) piv_sh[round + 1][lane] = pv;
          }
        }
      }
      __syncthreads();
      TS_CLUSTER_MARK(4 + round);
      TS_CLUSTER_INFO(0, round + 1);
      const int4 sr = search_sh;
      if (sr.x >= 0) g = piv[sr.x], total = sr.y, list_base = sr.z;
    }
  } else {
    float piv[kPivots];
    #pragma unroll
    for (int j = 0; j < kPivots; ++j)
      piv[j] = all ? -3.4028235e38f : cluster_quantile(rs, cluster_aim(kPivots - 1 - j, need, kCap));
    TS_CLUSTER_MARK(13);
    for (int round = 0; round < kRounds && total < 0; ++round) {
      int my[kPivots] = {0, 0, 0};
      #pragma unroll
      for (int j = 0; j < kPer; ++j)
        #pragma unroll
        for (int p = 0; p < kPivots; ++p) my[p] += x[j] >= piv[p];
      #pragma unroll
      for (int p = 0; p < kPivots; ++p) {
        #pragma unroll
        for (int o = 16; o > 0; o >>= 1) my[p] += __shfl_xor_sync(0xffffffffu, my[p], o);
      }
      if (lane == 0)
        #pragma unroll
        for (int p = 0; p < kPivots; ++p) warp_counts[round][warp][p] = my[p];
      __syncthreads();
      if (round == 0) TS_CLUSTER_MARK(14);
      if ((int)threadIdx.x < kCtas) {
        int c[kPivots] = {0, 0, 0};
        #pragma unroll
        for (int w = 0; w < kWarps; ++w)
          #pragma unroll
          for (int p = 0; p < kPivots; ++p) c[p] += warp_counts[round][w][p];
        mailbox_send(&counts_in[round][rank], &box_rounds[round], threadIdx.x,
                     make_uint4((uint32_t)c[0], (uint32_t)c[1], (uint32_t)c[2], 0u));
      }
      mailbox_wait(&box_rounds[round]);
      if (round == 0) TS_CLUSTER_MARK(15);
      int cnt[kPivots] = {0, 0, 0};
      #pragma unroll
      for (int c = 0; c < kCtas; ++c)
        #pragma unroll
        for (int p = 0; p < kPivots; ++p) cnt[p] += count_at(counts_in[round][c], p);
      TS_CLUSTER_MARK(4 + round);
      TS_CLUSTER_INFO(0, round + 1);
      // Pivots ascend, so counts descend: the highest pivot whose count lands.
      const int hi_cap = round == kRounds - 1 || all ? Policy::kMergeCap : kCap;
      #pragma unroll
      for (int p = 0; p < kPivots; ++p)
        if (cnt[p] >= need && cnt[p] <= hi_cap) g = piv[p], total = cnt[p], chosen_round = round, chosen_p = p;
      if (total >= 0 || all) break;
      // Re-aim from the pivot whose count is nearest the window (in ratio).
      int best = 0;
      float best_d = kInf;
      #pragma unroll
      for (int p = 0; p < kPivots; ++p) {
        const float c = fmaxf((float)cnt[p], 0.5f);
        const float d = c < (float)need ? (float)need / c : c / (float)kCap;
        if (d < best_d) best_d = d, best = p;
      }
      const float base = gaussian_reguess(rs, piv[best], cnt[best], true, need, kCap);
      const float sd = sqrtf(fmaxf(sample_var(rs), 0.0f));
      const float step = 0.15f * sd / (float)(round + 1);  // the pivots close in each round
      piv[0] = base - step, piv[1] = base, piv[2] = base + step;
    }
  }
  TS_CLUSTER_INFO(2, total >= 0);
  // Not bracketed (ties at the k-th key, or a row the Gaussian fit misses):
  // the exact top `need` by a radix select across the cluster.
  const bool exact = total < 0;
  uint32_t kth = 0;    // the exact path's k-th key
  uint32_t take = 0;   // the exact path: which of this thread's ties at kth are listed (bit j)
  if (exact) {
    // Its histograms lie past the list's first kWarpList entries, the only
    // ones the appends below reach (the list is `need` < kWarpList long).
    kth = cluster_exact_select<Policy, kPer, kVec>(cluster, rank, x, need,
                                                   reinterpret_cast<int*>(sm.cand + Policy::kWarpList), smem_ties,
                                                   sm.temp.scan_int, take);
  }
  TS_CLUSTER_MARK(12);

  // 3. Every token at or above g (the exact path: above kth, and the ties
  // at kth it takes) into CTA 0's list.  A CTA's place in the list is the
  // sum of the counts of the CTAs before it at the chosen pivot (counts_in),
  // a token's place in its CTA's part a local atomic: remote atomics on one
  // word of CTA 0 serialize (~2.8 us for ~55 tokens at B = 1, v60's trace).
  // The exact path's counts were not exchanged: one remote atomic a CTA.
  {
    // Which of this thread's items are listed, as a mask first: the list's
    // code runs once per row and is fetched cold, and unrolled per item it
    // held most of CTA 0's instruction-fetch stalls (v63's profile).
    uint32_t mask = 0;
    if (!exact) {
#pragma unroll
      for (int j = 0; j < kPer; ++j) mask |= (uint32_t)(x[j] >= g) << j;
    } else {
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        const uint32_t key = contract::order_key(x[j]);
        mask |= (uint32_t)(key > kth || (key == kth && ((take >> j) & 1u))) << j;
      }
    }
    const int my = __popc(mask);
    TS_CLUSTER_MARK(10);
    int pos = my ? atomicAdd(&local_n, my) : 0;
    if (exact) {
      __syncthreads();  // local_n is this CTA's count
      if (threadIdx.x == 0) local_base = atomicAdd(cluster.map_shared_rank(&sm.count, 0u), local_n);
      __syncthreads();
      pos += local_base;
    } else {
      if constexpr (kBinned) pos += list_base;
      else
        for (int c = 0; c < rank; ++c) pos += count_at(counts_in[chosen_round][c], chosen_p);
      if (rank == 0 && threadIdx.x == 0) {
        sm.count = total;
        mailbox_expect(&box_list, (uint32_t)total * sizeof(uint64_t));
      }
    }
    if (my) {
      uint64_t* list = cluster.map_shared_rank(&sm.cand[0], 0u);
#pragma unroll 1
      while (mask) {
        const int j = __ffs((int)mask) - 1;
        mask &= mask - 1u;
        const uint64_t e = pack_order(contract::order_key(select_item(x, j)), index_of(j));
        if (exact) list[pos++] = e;
        else mailbox_send(&sm.cand[pos++], &box_list, 0u, e);
      }
    }
  }
  TS_CLUSTER_MARK(11);
#ifdef TOKENSIFT_CLUSTER_TRACE
  if (threadIdx.x == 0 && row_id < kClusterTraceRows) atomicMax(&cluster_trace_span[row_id][2], globaltimer_ns());
#endif
  // The list is complete when CTA 0's mailbox has every entry; only CTA 0
  // goes on, on its own memory.  The exact path read other CTAs' histograms
  // and appended with plain remote stores: a cluster barrier, which also
  // keeps every CTA until no other reads its memory.
  if (exact) cluster.sync();
  if (rank != 0) return;
  if (!exact) mailbox_wait(&box_list);
  TS_CLUSTER_MARK(7);
  TS_CLUSTER_INFO(1, sm.count);
  if (exact) {
    // The list is the row's top `need` (< kWarpList) exactly: every unlisted
    // token is below its last entry.
    if (threadIdx.x < 32) {
      uint64_t lo = ~0ull;
      for (int i = (int)threadIdx.x; i < sm.count; i += 32) lo = sm.cand[i] < lo ? sm.cand[i] : lo;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const uint64_t y = __shfl_xor_sync(0xffffffffu, lo, o);
        lo = y < lo ? y : lo;
      }
      if (threadIdx.x == 0) tau_sh = lo;
    }
  } else if (threadIdx.x == 0) {
    tau_sh = all ? 1ull : pack_order(contract::order_key(g), 0xffffffffu);
  }
  __syncthreads();
  if (!exact && sm.count > kCap) rowcta_compact<Policy>(sm, tau_sh, cfg.top_k, kCap);
  __syncthreads();
  TS_CLUSTER_MARK(8);
  const uint64_t next = sm.count >= rs.eligible ? 0ull : tau_sh - 1ull;  // unlisted tokens are below tau
  if constexpr (kMinPTopK) {
    // Min-p rows with top-k: the list (at most kWarpList entries now) is
    // the row's order down to tau; the entries that pass min-p against the
    // row's max are a prefix of that order, and what decide_and_draw decides
    // from is exactly those, as the chunked merge's candidates are filtered
    // (complete when `next` fails min-p: every unlisted token then fails).
    // Either k of them precede `next` or the list holds every survivor, so
    // the row is decided from the list: the same sorted top k, or the same
    // whole min-p set, and so the same bits.  (The barrier: every thread
    // has read sm.count for `next` before warp 0 rewrites it; racecheck.)
    __syncthreads();
    if (threadIdx.x < 32) {
      const int n = sm.count;
      const auto passes = [&](uint64_t e) {
        return contract::passes_min_p(contract::key_to_float(packed_key(e)), zmax, cfg.ln_minp);
      };
      const uint64_t e0 = lane < n ? sm.cand[lane] : 0ull, e1 = lane + 32 < n ? sm.cand[lane + 32] : 0ull;
      const bool k0 = lane < n && passes(e0), k1 = lane + 32 < n && passes(e1);
      const unsigned b0 = __ballot_sync(0xffffffffu, k0), b1 = __ballot_sync(0xffffffffu, k1);
      const unsigned below = (1u << lane) - 1u;
      __syncwarp();  // every lane's reads of sm.count and sm.cand before the writes (a vote orders no memory)
      if (k0) sm.cand[__popc(b0 & below)] = e0;
      if (k1) sm.cand[__popc(b0) + __popc(b1 & below)] = e1;
      if (lane == 0) sm.count = __popc(b0) + __popc(b1);
    }
    __syncthreads();
    const RowResult r = rowcta_finish<T, Policy>(a, row_id, cfg, smem, true, next, zmax, -1.0);
    if (threadIdx.x == 0) write_result(a.out, row_id, r);  // top-k rows never defer
    TS_CLUSTER_MARK(9);
    return;
  }
  // The finish: what decide_and_draw runs on a list of at most kWarpList
  // without min-p (pre-selection and its block-wide paths skipped), called
  // here directly: warp_decide_and_race's decisions with its per-position
  // work spread over the CTA (cta_topk_finish: the same bits; the one-warp
  // form took ~2.2 us at B = 1, v63's trace), then the same result and
  // log-prob.  Out of line, decide_and_draw (every path of the merge) cost
  // ~3.5 us at B = 1, mostly its cold code (v60's trace).  It still takes
  // any list the finish leaves undecided.
  {
    const bool want_mass = a.out.logprobs != nullptr;
    const WarpListResult w =
        kCapped ? cluster_cta_finish<Policy>(sm.cand, sm.count, next, cfg, zmax, want_mass, finish_smem)
                : cta_topk_finish<Policy::kThreads>(sm.cand, sm.count, next == 0, next, cfg, zmax, want_mass, finish_smem);
    if (threadIdx.x == 0) {
      finish_decided = w.decided;
      if (w.decided) write_result(a.out, row_id, finish_result(w, row, cfg, zmax, a.out.logprobs != nullptr));
    }
  }
  __syncthreads();
  if (!finish_decided) {
    const RowResult r = rowcta_finish<T, Policy>(a, row_id, cfg, smem, true, next, zmax, -1.0);
    if (threadIdx.x == 0) write_result(a.out, row_id, r);  // top-k rows with k < kWarpList never defer
  }
  TS_CLUSTER_MARK(9);
}

}  // namespace tokensift::cuda_detail
