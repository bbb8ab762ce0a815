// Chunk phase of the pivot sampler: one CTA reads one 4096-logit chunk of a
// row once from HBM, keeps it in registers, and hands the row's merging CTA a
// summary plus a small candidate set.
//
// What a chunk must emit so that the merge can decide the row exactly:
// an *upper set* of the chunk in the contract's order (every emitted token
// precedes every active non-emitted one), and the best non-emitted token
// ("next").  The merge then knows the order exactly down to the best "next"
// over all chunks, and falls back to a full-row search only when a filter's
// boundary lies below it.  How many to emit:
//   top-k rows   min(k, kCap) (the chunk's own top-k contains every global
//                top-k token of the chunk), plus a lower bound for the k-th key;
//   min-p rows   every token passing min-p against the chunk's own max (a
//                superset of the row's min-p set in this chunk) when that fits,
//                else between kTopPEmit and kTopPEmitMax from the top;
//   top-p rows   kTopPEmit..kTopPEmitMax, a guess: the band of mass that matters is usually
//                a few dozen tokens; the merge verifies it.
// Selection is Qrita's pivot idea: one threshold guessed from a Gaussian fit
// of the chunk (sigma truncation), verified by a count; a radix select over
// the order keys when the guess misses (block_threshold_select.cuh).  Exact
// ties at the boundary (flat rows, bf16) end in an index-ordered scan that
// keeps the lowest indices.
// Plain rows (no filter) run the exponential race on the chunk directly;
// greedy rows only reduce the argmax.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "cuda/block_threshold_select.cuh"
#include "cuda/cuda_utils.cuh"
#include "cuda/pivot_types.cuh"
#include "cuda/row_config.cuh"

namespace tokensift::cuda_detail {

struct ChunkStats {
  uint64_t xmax;
  int32_t bad;
  int32_t eligible;
  float sum, sumsq;  // of eligible z: the Gaussian pivot guess (heuristic only)
};
struct ChunkStatsOp {
  __device__ ChunkStats operator()(const ChunkStats& a, const ChunkStats& b) const {
    return {a.xmax > b.xmax ? a.xmax : b.xmax, a.bad | b.bad, a.eligible + b.eligible, a.sum + b.sum,
            a.sumsq + b.sumsq};
  }
};

template <class Policy>
struct ChunkSmem {
  using Reduce = cub::BlockReduce<ChunkStats, Policy::kThreads>;
  using ReduceU64 = cub::BlockReduce<uint64_t, Policy::kThreads>;
  using ReduceInt = cub::BlockReduce<int, Policy::kThreads>;
  using ReduceF64 = cub::BlockReduce<double, Policy::kThreads>;
  using Scan = cub::BlockScan<int, Policy::kThreads>;
  union {
    typename Reduce::TempStorage reduce;
    typename ReduceU64::TempStorage reduce_u64;
    typename ReduceInt::TempStorage reduce_int;
    typename ReduceF64::TempStorage reduce_f64;
    typename Scan::TempStorage scan;
  } temp;
  ThresholdSmem<Policy::kThreads> thresh;
  ChunkStats stats;
  int count;
};

// Loads this thread's kItems logits.  Item j = i * kVec + v sits at
// begin + (i * kThreads + tid) * kVec + v: 16-byte vectors, coalesced.
template <class T, class Policy>
__device__ __forceinline__ void load_chunk(const T* row, int32_t vocab, int32_t begin,
                                           float (&x)[Policy::kItems], bool (&valid)[Policy::kItems]) {
  constexpr int kVec = 16 / sizeof(T);
  constexpr int kVectors = Policy::kItems / kVec;
  const T* base = row + begin;
  const bool full = begin + Policy::kChunk <= vocab &&
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

template <class Policy, class T>
__device__ __forceinline__ int32_t item_index(int32_t begin, int j) {
  constexpr int kVec = 16 / sizeof(T);
  return begin + ((j / kVec) * Policy::kThreads + (int)threadIdx.x) * kVec + (j % kVec);
}

template <class T, class Policy>
__device__ void pivot_chunk_phase(const PivotArgs& a, int64_t row_id, int32_t chunk,
                                  const RowConfig& cfg, bool want_logprob,
                                  ChunkSmem<Policy>& sm) {
  constexpr int kItems = Policy::kItems;
  const T* row = static_cast<const T*>(a.logits) + row_id * a.row_stride;
  const int32_t begin = chunk * Policy::kChunk;
  ChunkSummary* summary = a.summaries + row_id * a.chunks + chunk;
  uint64_t* cand = a.candidates + (row_id * a.chunks + chunk) * Policy::kCap;

  float x[kItems];
  bool valid[kItems];
  load_chunk<T, Policy>(row, a.vocab, begin, x, valid);

  // Pass 1 over registers: argmax of x, NaN/+inf, then z and eligibility.
  ChunkStats st{0, 0, 0, 0.0f, 0.0f};
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    if (!valid[j]) continue;
    const float v = x[j];
    if (v != v || v == __builtin_huge_valf()) {
      st.bad = 1;
      continue;
    }
    const uint64_t p = pack_order(contract::order_key(v), item_index<Policy, T>(begin, j));
    st.xmax = p > st.xmax ? p : st.xmax;
  }
  const bool sampling = !cfg.greedy && !cfg.invalid;
  if (sampling) {
    const bool unit = cfg.temperature == 1.0f;  // x / 1 == x exactly
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      float z = unit ? x[j] : contract::scale(x[j], cfg.temperature);
      // NaN tokens are never eligible (the row is rejected anyway).
      const bool elig = valid[j] && z > -__builtin_huge_valf() && z == z;
      x[j] = elig ? z : -__builtin_huge_valf();
      st.eligible += elig;
      if (elig && z < 3e18f && z > -3e18f) {  // keep the heuristic sums finite
        st.sum += z;
        st.sumsq += z * z;
      }
    }
  }
  {
    ChunkStats r = typename ChunkSmem<Policy>::Reduce(sm.temp.reduce).Reduce(st, ChunkStatsOp{});
    if (threadIdx.x == 0) sm.stats = r;
    __syncthreads();
  }
  const ChunkStats stats = sm.stats;
  ChunkSummary out{};
  out.xmax = stats.xmax;
  out.bad = stats.bad;
  out.eligible = stats.eligible;
  const float xloc = stats.xmax ? contract::key_to_float(packed_key(stats.xmax)) : -__builtin_huge_valf();
  out.zloc = sampling ? contract::scale(xloc, cfg.temperature) : xloc;

  if (!sampling || stats.bad || stats.eligible == 0) {
    if (threadIdx.x == 0) *summary = out;
    return;
  }
  const float zloc = out.zloc;
  const bool need_mass = (cfg.p_active && !cfg.k_active && !cfg.m_active) ||
                         (cfg.plain() && want_logprob);

  if (need_mass) {
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < kItems; ++j)
      if (x[j] > -__builtin_huge_valf()) s += expf(x[j] - zloc);
    __syncthreads();
    const double total =
        typename ChunkSmem<Policy>::ReduceF64(sm.temp.reduce_f64).Sum((double)s);
    out.mass = total;  // valid in thread 0
  }

  if (cfg.plain()) {
    // Exponential race over every eligible token of the chunk.  A token whose
    // z + kMaxRaceBoost cannot beat this thread's best skips its Philox call.
    uint64_t best = 0;
    float best_score = -__builtin_huge_valf();
    constexpr int kVec = 16 / sizeof(T);
#pragma unroll
    for (int g = 0; g < kItems / 4; ++g) {
      float zmax4 = fmaxf(fmaxf(x[4 * g], x[4 * g + 1]), fmaxf(x[4 * g + 2], x[4 * g + 3]));
      if (!(zmax4 > -__builtin_huge_valf()) || zmax4 + contract::kMaxRaceBoost < best_score) continue;
      const uint32_t idx0 = (uint32_t)item_index<Policy, T>(begin, 4 * g);
      const contract::Philox4 r = contract::philox_block(cfg.seed, cfg.offset, idx0 >> 2);
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const float z = x[4 * g + w];
        if (!(z > -__builtin_huge_valf())) continue;
        const float s = contract::race_score_from_bits(z, r.v[w]);
        const uint64_t p = pack_order(contract::order_key(s), idx0 + w);
        if (p > best) {
          best = p;
          best_score = s;
        }
      }
    }
    (void)kVec;
    __syncthreads();
    const uint64_t b = typename ChunkSmem<Policy>::ReduceU64(sm.temp.reduce_u64).Reduce(best, MaxU64{});
    if (threadIdx.x == 0) {
      out.race = b;
      *summary = out;
    }
    return;
  }

  // ---- candidate selection ----
  uint32_t key[kItems];
  int active_count = 0;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const bool act = x[j] > -__builtin_huge_valf() &&
                     (!cfg.m_active || contract::passes_min_p(x[j], zloc, cfg.ln_minp));
    key[j] = act ? contract::order_key(x[j]) : 0u;
    active_count += act;
  }
  int cnt = stats.eligible;
  if (cfg.m_active) {
    __syncthreads();
    const int c = typename ChunkSmem<Policy>::ReduceInt(sm.temp.reduce_int).Sum(active_count);
    if (threadIdx.x == 0) sm.count = c;
    __syncthreads();
    cnt = sm.count;
  }
  int n = cfg.k_active ? min(cfg.top_k, Policy::kCap) : Policy::kTopPEmit;
  const int cap = cfg.k_active ? Policy::kCap : Policy::kTopPEmitMax;  // emit between n and cap
  if (cfg.m_active && cnt <= cap) n = cnt;  // the whole local min-p set fits
  n = min(n, cnt);

  // Threshold: one pivot guessed from a Gaussian fit of the chunk (Qrita's
  // sigma truncation), then a radix
  // select when the guess misses [n, cap] (block_threshold_select.cuh).
  uint32_t prefix = 0;
  bool ties_mode = false;
  int take = 0;
  if (n < cnt) {
    uint32_t guess = 0;
    const float inv = 1.0f / (float)max(stats.eligible, 1);
    const float mean = stats.sum * inv;
    const float sigma = sqrtf(fmaxf(stats.sumsq * inv - mean * mean, 0.0f));
    if (sigma > 0.0f && cnt == stats.eligible) {
      // Top-k rows aim just above n (fewer candidates for the merge); the
      // others mid-window.
      const float e = cfg.k_active ? fminf((float)cap, 1.15f * n + 2.0f) : 0.5f * (float)(n + cap);
      guess = contract::order_key(mean + sigma * normcdfinvf(1.0f - e * inv));
    }
    const ThresholdResult t = block_threshold_select<Policy::kThreads, kItems, uint32_t>(key, n, cap, guess, sm.thresh);
    prefix = t.key;
    ties_mode = t.exact;
    take = n - t.count_gt;
  }

  // Emission flags; ties at the boundary go to the lowest indices, found by an
  // index-ordered scan (vector i of every thread, then vector i + 1, ...).
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
    if (emit[j]) cand[pos++] = pack_order(key[j], item_index<Policy, T>(begin, j));
  __syncthreads();
  const uint64_t next_all = typename ChunkSmem<Policy>::ReduceU64(sm.temp.reduce_u64).Reduce(next, MaxU64{});
  if (threadIdx.x == 0) {
    out.next = next_all;
    out.emitted = emitted;
    // {key >= prefix} holds at least n = k tokens of this chunk, so the row's
    // k-th key is at least prefix (valid without min-p, which the merge checks).
    out.lb_key = (cfg.k_active && cfg.top_k <= Policy::kCap && emitted >= cfg.top_k) ? prefix : 0u;
    *summary = out;
  }
}

}  // namespace tokensift::cuda_detail
