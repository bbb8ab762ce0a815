// Chunk phase of the pivot sampler: one CTA reads one chunk of a row (kItems
// logits per thread) once from HBM, keeps it in registers, and hands the row's
// merging CTA a summary plus a small candidate set.
//
// What a chunk must emit so that the merge can decide the row exactly:
// an *upper set* of the chunk in the contract's order (every emitted token
// precedes every active non-emitted one), and an upper bound on the best
// non-emitted token ("next").  The merge then knows the order exactly down to
// the largest "next" over all chunks, and falls back to a full-row search only
// when a filter's boundary lies below it.  How many to emit:
//   top-k rows   min(k, kCap) (the chunk's own top-k contains every global
//                top-k token of the chunk), plus a lower bound for the k-th key;
//   min-p rows   every token passing min-p against the chunk's own max (a
//                superset of the row's min-p set in this chunk) when that fits,
//                else between kTopPEmit and kTopPEmitMax from the top;
//   top-p rows   kTopPEmit..kTopPEmitMax, a guess: the band of mass that matters is usually
//                a few dozen tokens; the merge verifies it.
// Selection is Qrita's pivot idea: one threshold guessed from a Gaussian fit
// of a sample of the chunk (sigma truncation), verified by one count.  The
// common path works on floats, which order exactly as the contract's keys do
// (order_key folds -0 onto +0), so a logit costs a handful of instructions:
// a NaN-propagating max, an eligibility count, one compare for the count and
// one for the emission; keys, indices and atomics are paid only by the few
// emitted tokens, and "next" is the bound just below the pivot.  The phase is
// issue-bound at large batches (Nsight Compute, perf-notes v10), so what a
// logit costs is what the kernel costs.  When the guess misses the window, or
// the chunk has no spread (flat rows, bf16 runs), a radix select over the
// order keys decides (block_threshold_select.cuh); exact ties at the boundary
// end in an index-ordered scan that keeps the lowest indices, and that path
// reports the exact "next".
// Plain rows (no filter) run the exponential race on the chunk directly;
// greedy rows only reduce the argmax.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "cuda/block_threshold_select.cuh"
#include "cuda/cuda_utils.cuh"
#include "cuda/pivot_policy.cuh"
#include "cuda/pivot_types.cuh"
#include "cuda/row_config.cuh"

namespace tokensift::cuda_detail {

struct ChunkStats {
  float xmax;        // largest raw logit; NaN when the chunk holds one
  int32_t eligible;  // tokens with z > -inf
  int32_t nsample;   // sampled eligible tokens, and the sums of their z and z^2:
  float sum, sumsq;  //   the Gaussian pivot guess (heuristic only)
};
struct ChunkStatsOp {
  __device__ ChunkStats operator()(const ChunkStats& a, const ChunkStats& b) const {
    return {max_nan(a.xmax, b.xmax), a.eligible + b.eligible, a.nsample + b.nsample, a.sum + b.sum,
            a.sumsq + b.sumsq};
  }
};

// One sampled z into the Gaussian guess's sums; only values whose squares
// stay finite count (ineligible tokens are -inf).
__device__ __forceinline__ void add_sample(ChunkStats& st, float z) {
  if (z > -3e18f && z < 3e18f) {
    st.nsample += 1;
    st.sum += z;
    st.sumsq += z * z;
  }
}

template <class Policy>
struct ChunkSmem {
  using Reduce = cub::BlockReduce<ChunkStats, Policy::kThreads>;
  using ReduceU64 = cub::BlockReduce<uint64_t, Policy::kThreads>;
  using ReduceF64 = cub::BlockReduce<double, Policy::kThreads>;
  using Scan = cub::BlockScan<int, Policy::kThreads>;
  union {
    typename Reduce::TempStorage reduce;
    typename ReduceU64::TempStorage reduce_u64;
    typename ReduceF64::TempStorage reduce_f64;
    typename Scan::TempStorage scan;
  } temp;
  ThresholdSmem<Policy::kThreads> thresh;
  ChunkStats stats;
  unsigned long long best;
  uint32_t bar_key;  // plain rows: order key of the chunk max's race score
  int emit_count;  // slots of the fast emission
  float guess;     // the Gaussian pivot guess, derived once (rows without min-p)
  float emit_part[Policy::kThreads / 32];  // early deferral: per warp, the emitted tokens' mass
};

// Thread 0, after the barrier that ends the chunk phase of the pivot kernel's
// kEarly instantiation: the mass of the chunk's emitted tokens, the warps'
// parts summed in a fixed order.
template <class Policy>
__device__ __forceinline__ float chunk_emit_mass(const ChunkSmem<Policy>& sm) {
  float e = 0.0f;
#pragma unroll
  for (int w = 0; w < Policy::kThreads / 32; ++w) e += sm.emit_part[w];
  return e;
}

// The sample's mean and variance (0 without a sample): the Gaussian fit's mu
// and sigma^2, and whether the chunk has spread enough for a guess at all.
__device__ __forceinline__ float sample_mean(const ChunkStats& st) {
  return st.nsample ? st.sum / (float)st.nsample : 0.0f;
}
__device__ __forceinline__ float sample_var(const ChunkStats& st) {
  const float mean = sample_mean(st);
  return st.nsample ? st.sumsq / (float)st.nsample - mean * mean : 0.0f;
}

// The Gaussian pivot guess for an emission window [n, cap] of the chunk's
// eligible tokens.  It aims at the window's middle: geometric for top-k rows
// (whose window [k, kCap] spans a wide ratio), arithmetic for the others.  A
// count has a Poisson spread of sqrt(e) plus the sample's error in mean and
// sigma; aiming low (at 1.15 k) missed about one chunk in five, each miss a
// radix select (Nsight Compute, perf-notes v10).
__device__ __forceinline__ float guess_aim(bool top_k, int n, int cap) {
  return top_k ? sqrtf((float)n * (float)cap) : 0.5f * (float)(n + cap);
}
__device__ __forceinline__ float gaussian_guess(const ChunkStats& st, bool top_k, int n, int cap) {
  return sample_mean(st) + sqrtf(sample_var(st)) * normcdfinvf(1.0f - guess_aim(top_k, n, cap) / (float)st.eligible);
}

// A second aim after a guess g counted c tokens outside the window: the
// Gaussian quantile that c says g sits at, moved to the window's quantile
// (the fit's sigma is the local scale).  A miss is mostly the sample's error
// in the mean and sigma, which this corrects, so one retry usually lands; it
// costs a count and a block sum (~0.2 us at B = 1) where the radix select
// costs ~2.5 (merge probe, perf-notes v17).  Block-uniform inputs, so every
// thread gets the same bits.
__device__ __forceinline__ float gaussian_reguess(const ChunkStats& st, float g, int c, bool top_k, int n,
                                                  int cap) {
  const float var = sample_var(st);
  const float elig = (float)st.eligible;
  const float q = fminf(fmaxf((float)c, 0.5f), elig - 0.5f) / elig;
  return g + sqrtf(var) * (normcdfinvf(1.0f - guess_aim(top_k, n, cap) / elig) - normcdfinvf(1.0f - q));
}

// A token's weight in the chunk's softmax mass, exp(z - zloc) for z <= zloc.
// The mass is never part of the contract's arithmetic: the merge decides a
// top-p row from it only when the boundary clears the band by top_p_clear's
// margin (1e-5 + 2e-7 |zmax| relative), and plain rows' log-probs carry it
// (tests allow 2e-5).  Under TOKENSIFT_PIVOT_CHUNK_EX2 it is one ex2.approx
// of fl(fl(z - zloc) log2 e) where expf took ~9 instructions a logit (the
// sum's line held 11 % of the target cell's stall samples, perf-notes v42).
// Relative error of a term with d = z - zloc: ex2.approx ~2^-22, the two
// roundings of its argument |d| (2^-24 + 2^-24 ln 2 log2 e) ~1.2e-7 |d|
// (expf's was the first of them, 6e-8 |d|).  Summed with weights e^d, the
// second part is 1.2e-7 times the weighted mean of |d|, at most ln V + 1
// (14 at V = 262,208): under 2e-6 of W, as the row-CTA kernel's streamed W
// (RowCtaMass), plus the fp32 partial sums' error that expf had too.
__device__ __forceinline__ float chunk_weight(float z, float zloc) {
#if TOKENSIFT_PIVOT_CHUNK_EX2
  return ex2_approx(__fmul_rn(__fsub_rn(z, zloc), contract::kLog2E));
#else
  return expf(z - zloc);
#endif
}

// Emission window [n, cap] of a row without min-p (min-p rows narrow n once
// their local min-p count is known).
template <class Policy>
__device__ __forceinline__ int emit_floor(const RowConfig& cfg) {
  return cfg.k_active ? min(cfg.top_k, Policy::kCap) : Policy::kTopPEmit;
}
template <class Policy>
__device__ __forceinline__ int emit_cap(const RowConfig& cfg) {
  return cfg.k_active ? Policy::kCap : Policy::kTopPEmitMax;
}

// Loads this thread's kN logits of the span [begin, begin + kN * kThreads)
// (-inf past the end of the row).  Item j = i * kVec + v sits at
// begin + (i * kThreads + tid) * kVec + v: 16-byte vectors, coalesced.
template <class T, class Policy, int kN>
__device__ __forceinline__ void load_items(const T* row, int32_t vocab, int32_t begin, float (&x)[kN],
                                           bool (&valid)[kN]) {
  constexpr int kVec = 16 / sizeof(T);
  static_assert(kN % kVec == 0, "whole 16-byte vectors");
  constexpr int kVectors = kN / kVec;
  const T* base = row + begin;
  const bool full = begin + kN * Policy::kThreads <= vocab &&
                    (reinterpret_cast<uintptr_t>(base) & 15u) == 0;
  if (full) {
    uint4 raw[kVectors];
#pragma unroll
    for (int i = 0; i < kVectors; ++i)
      raw[i] = __ldcs(reinterpret_cast<const uint4*>(base) + i * Policy::kThreads + threadIdx.x);
#pragma unroll
    for (int i = 0; i < kVectors; ++i) {
      const T* v = reinterpret_cast<const T*>(&raw[i]);
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        x[i * kVec + e] = to_float(v[e]);
        valid[i * kVec + e] = true;
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < kVectors; ++i) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const int32_t idx = begin + (i * Policy::kThreads + (int)threadIdx.x) * kVec + e;
        const bool ok = idx < vocab;
        x[i * kVec + e] = ok ? to_float(row[idx]) : -__builtin_huge_valf();
        valid[i * kVec + e] = ok;
      }
    }
  }
}

// A whole chunk: kItems logits a thread.
template <class T, class Policy>
__device__ __forceinline__ void load_chunk(const T* row, int32_t vocab, int32_t begin,
                                           float (&x)[Policy::kItems], bool (&valid)[Policy::kItems]) {
  static_assert(Policy::kItems * Policy::kThreads == Policy::kChunk, "a chunk is kItems a thread");
  load_items<T, Policy, Policy::kItems>(row, vocab, begin, x, valid);
}

template <class T, class Policy>
__device__ __forceinline__ void load_chunk(const T* row, int32_t vocab, int32_t begin, float (&x)[Policy::kItems]) {
  bool valid[Policy::kItems];  // unused: padding reads as -inf
  load_chunk<T, Policy>(row, vocab, begin, x, valid);
}

template <class Policy, class T>
__device__ __forceinline__ int32_t item_index(int32_t begin, int j) {
  constexpr int kVec = 16 / sizeof(T);
  return begin + ((j / kVec) * Policy::kThreads + (int)threadIdx.x) * kVec + (j % kVec);
}

// Dev builds only (dev/merge_probe.cu): thread 0 of each chunk CTA of a
// one-row call stamps clock64() at the chunk's stages into chunk_trace[chunk]
// (0 entry, 1 loads and parameters in, 2 stats reduced, 3 pivot chosen,
// 4 chunk phase done, 5 ticket taken), its entry %globaltimer into
// chunk_start_ns (SM clocks are not aligned) and whether it merged.
#ifdef TOKENSIFT_MERGE_TRACE
constexpr int kTraceChunks = 128;
__device__ long long chunk_trace[kTraceChunks][6];
__device__ unsigned long long chunk_start_ns[kTraceChunks];
__device__ int chunk_merged[kTraceChunks];
#define TS_CHUNK_MARK(i)                                                      \
  do {                                                                        \
    if (threadIdx.x == 0 && blockIdx.x < kTraceChunks) chunk_trace[blockIdx.x][i] = clock64(); \
  } while (0)
#else
#define TS_CHUNK_MARK(i) \
  do {                   \
  } while (0)
#endif

struct ChunkEmission {
  uint32_t prefix;  // {key >= prefix} holds the emitted tokens (0: all active ones)
  int emitted;
  uint64_t next;    // upper bound on the best active token not emitted; 0 = none
};

// The slow selection: a radix select over the order keys finds a threshold
// keeping between n and cap tokens, or the exact n-th key when ties at it make
// that impossible; the ties then go to the lowest indices by an index-ordered
// scan (vector i of every thread, then vector i + 1, ...).  Reports the exact
// best non-emitted token.
// n < the chunk's active count (otherwise every active token is emitted on
// the fast path).
// kEarly: also sums exp(z - zloc) over the emitted tokens into `mass`
// (early deferral, top-p-only rows when want_mass).
template <class T, class Policy, bool kEarly>
__device__ ChunkEmission emit_by_radix(const float (&x)[Policy::kItems], int32_t begin, int n, int cap,
                                       uint64_t* cand, ChunkSmem<Policy>& sm, bool want_mass, float zloc,
                                       float& mass) {
  constexpr int kItems = Policy::kItems;
  uint32_t key[kItems];
#pragma unroll
  for (int j = 0; j < kItems; ++j) key[j] = x[j] > -__builtin_huge_valf() ? contract::order_key(x[j]) : 0u;
  const ThresholdResult t = block_threshold_select<Policy::kThreads, kItems, uint32_t>(key, n, cap, 0u, sm.thresh);
  const uint32_t prefix = t.key;
  const bool ties_mode = t.exact;
  const int take = n - t.count_gt;
  bool emit[kItems];
#pragma unroll
  for (int j = 0; j < kItems; ++j) emit[j] = key[j] != 0 && key[j] > prefix;
  if (!ties_mode) {
#pragma unroll
    for (int j = 0; j < kItems; ++j) emit[j] = emit[j] || (key[j] != 0 && key[j] == prefix);
  } else {
    constexpr int kVec = 16 / sizeof(T);
    int carry = 0;
#pragma unroll
    for (int i = 0; i < kItems / kVec; ++i) {
      int c = 0;
#pragma unroll
      for (int e = 0; e < kVec; ++e) c += key[i * kVec + e] != 0 && key[i * kVec + e] == prefix;
      int base, total;
      __syncthreads();
      typename ChunkSmem<Policy>::Scan(sm.temp.scan).ExclusiveSum(c, base, total);
      int r = carry + base;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const int j = i * kVec + e;
        if (key[j] != 0 && key[j] == prefix) {
          emit[j] = r < take;
          ++r;
        }
      }
      carry += total;
    }
  }
  int mine = 0;
  uint64_t next = 0;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    mine += emit[j];
    if (key[j] && !emit[j]) {
      const uint64_t p = pack_order(key[j], item_index<Policy, T>(begin, j));
      next = p > next ? p : next;
    }
  }
  int pos, emitted;
  __syncthreads();
  typename ChunkSmem<Policy>::Scan(sm.temp.scan).ExclusiveSum(mine, pos, emitted);
#pragma unroll
  for (int j = 0; j < kItems; ++j)
    if (emit[j]) {
      cand[pos++] = pack_order(key[j], item_index<Policy, T>(begin, j));
      if constexpr (kEarly) {
        if (want_mass) mass += chunk_weight(contract::key_to_float(key[j]), zloc);
      }
    }
  __syncthreads();
  const uint64_t next_all = typename ChunkSmem<Policy>::ReduceU64(sm.temp.reduce_u64).Reduce(next, MaxU64{});
  if (threadIdx.x == 0) sm.best = next_all;
  __syncthreads();
  return {prefix, emitted, sm.best};
}

// x: this thread's logits as load_chunk left them; overwritten with z (-inf
// for ineligible or filtered tokens).  kEarly (the pivot kernel's early-
// deferral instantiation): top-p-only rows also leave their emitted tokens'
// mass in sm.emit_part, summed as the tokens are stored (few per thread).
template <class T, class Policy, bool kEarly>
__device__ void pivot_chunk_phase(const PivotArgs& a, int64_t row_id, int32_t chunk,
                                  const RowConfig& cfg, bool want_logprob,
                                  float (&x)[Policy::kItems], ChunkSmem<Policy>& sm) {
  constexpr int kItems = Policy::kItems;
  constexpr float kInf = __builtin_huge_valf();
  const int32_t begin = chunk * Policy::kChunk;
  ChunkSummary* summary = a.summaries + row_id * a.chunks + chunk;
  uint64_t* cand = a.candidates + (row_id * a.chunks + chunk) * Policy::kCap;

  // One register pass: the raw max (NaN-propagating: it also flags NaN and
  // +inf), then z, eligibility and a sample for the Gaussian guess.
  ChunkStats st{-kInf, 0, 0, 0.0f, 0.0f};
#pragma unroll
  for (int j = 0; j < kItems; ++j) st.xmax = max_nan(st.xmax, x[j]);
  const float my_xmax = st.xmax;
  const bool sampling = !cfg.greedy && !cfg.invalid;
  if (sampling) {
    const bool unit = cfg.temperature == 1.0f;  // x / 1 == x exactly
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const float z = unit ? x[j] : contract::scale(x[j], cfg.temperature);
      const bool elig = z > -kInf;  // NaN tokens never are (the row is rejected anyway)
      x[j] = elig ? z : -kInf;
      st.eligible += elig;
    }
    constexpr int kStride = kItems / Policy::kStatSample;
#pragma unroll
    for (int s = 0; s < Policy::kStatSample; ++s) add_sample(st, x[s * kStride]);
  }
  if (threadIdx.x == 0) {
    sm.best = 0;
    sm.bar_key = 0;
    sm.emit_count = 0;
  }
  if constexpr (kEarly) {
    if (threadIdx.x < Policy::kThreads / 32) sm.emit_part[threadIdx.x] = 0.0f;  // chunks that emit nothing
  }
  {
    ChunkStats r = typename ChunkSmem<Policy>::Reduce(sm.temp.reduce).Reduce(st, ChunkStatsOp{});
    if (threadIdx.x == 0) {
      sm.stats = r;
      // Rows without min-p know their window now, so one thread derives the
      // guess: when every warp repeated normcdfinvf it was ~4 % of the
      // phase's instructions (Nsight Compute at B = 1024, perf-notes v15b).
      const int n0 = min(emit_floor<Policy>(cfg), r.eligible);
      if (Policy::kGuessOnce && sampling && !cfg.m_active && (cfg.k_active || cfg.p_active) && n0 < r.eligible)
        sm.guess = gaussian_guess(r, cfg.k_active, n0, emit_cap<Policy>(cfg));
    }
    __syncthreads();
  }
  const ChunkStats stats = sm.stats;
  TS_CHUNK_MARK(2);
  const bool bad = !(stats.xmax < kInf);  // NaN or +inf
  ChunkSummary out{};
  out.bad = bad;
  out.eligible = stats.eligible;
  if (!bad) {
    // Greedy rows need the argmax's index: only threads holding the max look
    // for it (lowest index first).  The others need only its value.
    if (cfg.greedy && !cfg.invalid) {
      if (my_xmax == stats.xmax) {
        uint64_t best = 0;
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
          const int32_t idx = item_index<Policy, T>(begin, j);
          if (x[j] == stats.xmax && idx < a.vocab) {
            const uint64_t p = pack_order(contract::order_key(x[j]), (uint32_t)idx);
            best = p > best ? p : best;
          }
        }
        atomicMax(&sm.best, (unsigned long long)best);
      }
      __syncthreads();
      out.xmax = sm.best;
    } else {
      out.xmax = pack_order(contract::order_key(stats.xmax), (uint32_t)begin);
    }
  }
  const float xloc = stats.xmax;
  out.zloc = sampling ? contract::scale(xloc, cfg.temperature) : xloc;

  if (!sampling || bad || stats.eligible == 0) {
    if (threadIdx.x == 0) *summary = out;
    return;
  }
  const float zloc = out.zloc;
  const bool need_mass = (cfg.p_active && !cfg.k_active && !cfg.m_active) ||
                         (cfg.plain() && want_logprob);

  if (need_mass) {
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
#if TOKENSIFT_PIVOT_CHUNK_EX2
      s += chunk_weight(x[j], zloc);  // +0 for -inf: ex2.approx(-inf) is +0
#else
      if (x[j] > -kInf) s += chunk_weight(x[j], zloc);
#endif
    }
    __syncthreads();
    const double total =
        typename ChunkSmem<Policy>::ReduceF64(sm.temp.reduce_f64).Sum((double)s);
    out.mass = total;  // valid in thread 0
  }

  if (cfg.plain()) {
    // Exponential race over every eligible token of the chunk.  The exact
    // score (two contract logs and a Philox call) is paid only by tokens
    // that can still win.  The bar: the exact score of the chunk's largest z,
    // computed first by the thread(s) holding it; it is a real token's score,
    // so the winner scores at least that.  A group of four whose best
    // z + kMaxRaceBoost is below the bar skips its Philox call, and a token
    // whose upper bound z - ln(1 - U) (as -ln U >= 1 - U), taken with the
    // fast log and a margin, is below it skips the logs.  A warp pays the
    // exact score when any lane needs it, so the bar must be high from the
    // first token (v10c used the thread's running best and zloc +
    // kMinRaceBoost: most warps still paid, perf-notes).  Skips never change
    // the result.
    if (my_xmax == stats.xmax) {  // this thread holds the max (z == zloc there)
#pragma unroll
      for (int j = 0; j < kItems; ++j) {
        if (x[j] == zloc) {
          const uint32_t idx = (uint32_t)item_index<Policy, T>(begin, j);
          const float sc = contract::race_score(x[j], cfg.seed, cfg.offset, idx);
          atomicMax(&sm.bar_key, contract::order_key(sc));
        }
      }
    }
    __syncthreads();
    const float bar_score = sm.bar_key ? contract::key_to_float(sm.bar_key) : -kInf;
    const float floor_score = fmaxf(bar_score, zloc + contract::kMinRaceBoost);
    uint64_t best = 0;
    float best_score = -kInf;
#pragma unroll
    for (int g = 0; g < kItems / 4; ++g) {
      float zmax4 = fmaxf(fmaxf(x[4 * g], x[4 * g + 1]), fmaxf(x[4 * g + 2], x[4 * g + 3]));
      if (!(zmax4 > -kInf) ||
          zmax4 + contract::kMaxRaceBoost < fmaxf(best_score, floor_score - Policy::kRaceSkipMargin))
        continue;
      const uint32_t idx0 = (uint32_t)item_index<Policy, T>(begin, 4 * g);
      const contract::Philox4 r = contract::philox_block(cfg.seed, cfg.offset, idx0 >> 2);
      const float bar = fmaxf(best_score, floor_score) - Policy::kRaceSkipMargin;
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const float z = x[4 * g + w];
        if (!(z > -kInf)) continue;
        if (fabsf(z) < Policy::kRaceSkipMaxAbsZ &&
            z - __logf(1.0f - contract::uniform_from_bits(r.v[w])) < bar)
          continue;
        const float s = contract::race_score_from_bits(z, r.v[w]);
        const uint64_t p = pack_order(contract::order_key(s), idx0 + w);
        if (p > best) {
          best = p;
          best_score = s;
        }
      }
    }
    __syncthreads();
    const uint64_t b = typename ChunkSmem<Policy>::ReduceU64(sm.temp.reduce_u64).Reduce(best, MaxU64{});
    if (threadIdx.x == 0) {
      out.race = b;
      *summary = out;
    }
    return;
  }

  // ---- candidate selection ----
  int cnt = stats.eligible;
  if (cfg.m_active) {  // min-p against the chunk's own max: a superset of the row's
    int active = 0;
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const bool keep = contract::passes_min_p(x[j], zloc, cfg.ln_minp);  // false for -inf
      x[j] = keep ? x[j] : -kInf;
      active += keep;
    }
    cnt = block_sum_int<Policy::kThreads>(active, sm.thresh);
  }
  int n = emit_floor<Policy>(cfg);
  const int cap = emit_cap<Policy>(cfg);  // emit between n and cap
  if (cfg.m_active && cnt <= cap) n = cnt;  // the whole local min-p set fits
  n = min(n, cnt);

  // The pivot: every active token (n >= cnt), else the Gaussian guess when
  // its count lands in [n, cap].
  float pivot = -3.4028235e38f;  // lowest finite: x >= pivot <=> active
  int count = cnt;
  bool fast = n >= cnt;
  int mine = -1;  // this thread's tokens >= pivot, once counted
  if (!fast && sample_var(stats) > 0.0f) {
    // Without min-p, n and cap are the window thread 0 used (fast <=> n >= cnt).
    // With min-p (cnt > cap here) the window's tokens are the top of the
    // eligible ones, so the guess over all of them applies; a guess below the
    // local min-p cut counts all cnt and misses.
    float g = (cfg.m_active || !Policy::kGuessOnce) ? gaussian_guess(stats, cfg.k_active, n, cap) : sm.guess;
    for (int attempt = 0; attempt <= Policy::kGuessRetries; ++attempt) {
      if (!(g > -3.4028235e38f && g < kInf)) break;
      int my = 0;
#pragma unroll
      for (int j = 0; j < kItems; ++j) my += x[j] >= g;
      const int c = block_sum_int<Policy::kThreads>(my, sm.thresh);
      if (c >= n && c <= cap) {
        fast = true;
        pivot = g;
        count = c;
        mine = my;
        break;
      }
      if (attempt < Policy::kGuessRetries) g = gaussian_reguess(stats, g, c, cfg.k_active, n, cap);
    }
  }
  TS_CHUNK_MARK(3);
  const bool want_mass = kEarly && cfg.p_active && !cfg.k_active && !cfg.m_active;
  float emit_mass = 0.0f;
  ChunkEmission em;
  if (fast) {
    // {x >= pivot} is {key >= order_key(pivot)}: an upper set.  One slot
    // reservation per thread from a shared counter (the merge sorts
    // candidates, so their order is free), then predicated stores.
    if (mine < 0) {
      mine = 0;
#pragma unroll
      for (int j = 0; j < kItems; ++j) mine += x[j] >= pivot;
    }
    int pos = mine ? atomicAdd(&sm.emit_count, mine) : 0;
#pragma unroll
    for (int j = 0; j < kItems; ++j)
      if (x[j] >= pivot) {
        cand[pos++] = pack_order(contract::order_key(x[j]), (uint32_t)item_index<Policy, T>(begin, j));
        if constexpr (kEarly) {
          if (want_mass) emit_mass += chunk_weight(x[j], zloc);
        }
      }
    const bool all = count == cnt;
    const uint32_t pk = all ? 0u : contract::order_key(pivot);
    em = {pk, count, all ? 0ull : pack_order(pk - 1u, 0u)};
  } else {
    em = emit_by_radix<T, Policy, kEarly>(x, begin, n, cap, cand, sm, want_mass, zloc, emit_mass);
  }
  if constexpr (kEarly) {
    if (want_mass) {
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) emit_mass += __shfl_xor_sync(0xffffffffu, emit_mass, o);
      if ((threadIdx.x & 31u) == 0) sm.emit_part[threadIdx.x / 32] = emit_mass;
    }
  }
  if (threadIdx.x == 0) {
    out.next = em.next;
    out.emitted = em.emitted;
    // {key >= prefix} holds at least n = k tokens of this chunk, so the row's
    // k-th key is at least prefix (valid without min-p, which the merge checks).
    out.lb_key = (cfg.k_active && cfg.top_k <= Policy::kCap && em.emitted >= cfg.top_k) ? em.prefix : 0u;
    *summary = out;
  }
}

}  // namespace tokensift::cuda_detail
