// Full-row fallback of the pivot sampler, run by a row's merging CTA when the
// chunks' candidates do not decide the row (a kept set larger than what the
// chunks emitted: top-p over a flat-ish row, large k, ...).
//
// Histogram path (the usual one), two passes per filter.  Pass A drops every
// surviving token into one of kFbBins bins by its depth below the row max,
// d = zmax - z, in steps of 1/bins_per_unit (the last bin catches d beyond the
// grid; the split path scales the step to the row, see pivot_split.cuh), and adds up per bin the tokens (top-k) or their mass (top-p) in
// shared memory.  The mass is fixed point, exp(z - zmax) * 2^shift as a u64
// held in two 32-bit words (shared memory's 64-bit atomic add is a CAS loop:
// with it, pass A cost ~300 us instead of ~10), so the atomics add integers
// in any order and give the same bits every time, and the bin where the
// prefix reaches k or p W is exact for those integers.  Pass B gathers the
// tokens of that one bin (a few hundred on Gaussian-like rows) into shared
// memory, sorts them by the contract's order and scans to the boundary; in
// the same pass the tokens of the bins above are counted and run the
// exponential race, so a top-p-only row costs two reads of the row.
// Binning is by a monotone function of z, so every token of a better bin
// precedes every token of a worse one in the contract's order.  The fixed
// point rounds each weight by at most 2^-(shift+1), shift = 62 - bits(V): for
// V < 2^20 the mass error is below 1.2e-7 of W (W >= 1, the max weighs 1),
// inside the top-p band of 1e-6; larger V skips this path.
// Each pass keeps 16-byte loads in flight (block_row_stream.cuh); a single
// CTA reads a 0.5 MB row from L2 in a few microseconds.
//
// Generic path, when the boundary bin is the catch-all or holds more than
// kFbListCap tokens (flat rows, long runs of ties): each boundary is found by
// a quaternary pivot search over the 32-bit order-key space, the multi-pivot
// search of Qrita: three pivots a pass, each thread accumulating count (top-k)
// or mass (top-p, double) above each pivot in a fixed per-thread order, a
// fixed-shape block reduction, and the key interval shrinks four-fold; about
// 16 passes pin the boundary key.  Ties at the boundary key are cut by index
// with one index-ordered scan, and a last pass runs the race.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <type_traits>

#include "cuda/block_rank_sort.cuh"
#include "cuda/block_row_stream.cuh"
#include "cuda/cuda_utils.cuh"
#include "cuda/row_config.cuh"

namespace tokensift::cuda_detail {

template <class Policy>
struct FallbackSmem {
  using ReduceF64 = cub::BlockReduce<double, Policy::kThreads>;
  using ReduceU64 = cub::BlockReduce<uint64_t, Policy::kThreads>;
  using ScanU64 = cub::BlockScan<uint64_t, Policy::kThreads>;
  using Scan = cub::BlockScan<int, Policy::kThreads>;
  union {
    typename ReduceF64::TempStorage f64;
    typename ReduceU64::TempStorage u64;
    typename ScanU64::TempStorage scan_u64;
    typename Scan::TempStorage scan;
  } temp;
  union {
    struct {
      unsigned int lo[Policy::kFbBins];  // a u64 per bin as two words (hist_add)
      unsigned int hi[Policy::kFbBins];
    } hist;
    uint64_t list[Policy::kFbListCap];
    int tiles[2 * Policy::kFbListCap];  // tie_cut: ties per tile of kThreads tokens
  } data;
  double bcast[4];
  uint64_t ubcast[4];
  int ibcast[6];
  uint32_t found;
  int queue_n;  // split pass B: tokens above the boundary bin queued in data.list (v86)
  unsigned int tie_span[2];  // split pass A in tie mode: the item's ties at the max, per chunk,
  unsigned long long tie_best[2];  //   and their race winner
};

struct FallbackResult {
  int32_t token;
  int32_t kept;
  double kept_mass;  // sum of exp(z - zmax) over the kept set
};

// What one histogram stage decided.
struct HistStage {
  bool binding;   // false: the filter keeps every survivor (top-k with k >= count)
  uint64_t cut;   // packed order of the last kept token
  int32_t kept;
  uint64_t mass;  // fixed-point mass of the kept set
  uint64_t race;  // packed (score key, index) of the kept set's winner (when asked)
};

template <class T, class Policy>
struct FallbackRow {
  const T* row;
  int32_t vocab;
  float temperature;
  float zmax;
  float ln_minp;
  bool m_active;
  FallbackSmem<Policy>& sm;
  float bins_per_unit = (float)Policy::kFbBinsPerUnit;  // bin width: 1 / bins_per_unit logit units
  // The depth where the catch-all bin begins, (kBins - 1) / bins_per_unit:
  // kept beside bins_per_unit (set_bins_per_unit) because bin_of runs per
  // token and the compiler did not hoist the IEEE division out of the token
  // loops (a MUFU.RCP and a slow-path call a token in split_hist_kernel's
  // SASS, v45).  The same division, so the same bits.
  float depth_cap = (float)(Policy::kFbBins - 1) / (float)Policy::kFbBinsPerUnit;

  static constexpr int kThreads = Policy::kThreads;
  static constexpr int kBins = Policy::kFbBins;

  __device__ float z_of(float x) const {
    return temperature == 1.0f ? x : contract::scale(x, temperature);
  }
  __device__ bool eligible(float z) const {
    return z > -__builtin_huge_valf() && (!m_active || contract::passes_min_p(z, zmax, ln_minp));
  }
  // fp32 exp summed in double per thread (generic path): ~1e-7 relative per
  // term, far inside the top-p band (1e-6), and 5x cheaper than a double exp.
  __device__ double weight(float z) const { return (double)expf(z - zmax); }

  static __device__ int bits_of(int32_t v) { return 32 - __clz(v); }
  __device__ int fixed_shift() const { return 62 - bits_of(vocab); }
  __device__ uint64_t fixed_weight(float z, float scale) const {
    return (uint64_t)__float2ull_rn(expf(z - zmax) * scale);
  }
  // Monotone in z (non-increasing): a better token never lands in a worse bin.
  // (A d just under the range may round into the catch-all bin; the map
  // stays monotone, and a boundary there only sends the row to the generic
  // path.)
  __device__ int bin_of(float z) const {
    const float d = zmax - z;
    return d < depth_cap ? (int)(d * bins_per_unit) : kBins - 1;
  }
  __device__ void set_bins_per_unit(float b) {
    bins_per_unit = b;
    depth_cap = (float)(kBins - 1) / b;
  }
  // The same from a depth_cap divided once for the row (SplitRow, v93).
  __device__ void set_bins(float b, float cap) {
    bins_per_unit = b;
    depth_cap = cap;
  }

  __device__ double block_sum(double v) {
    return block_allreduce(sm.bcast[0], [&] { return typename FallbackSmem<Policy>::ReduceF64(sm.temp.f64).Sum(v); });
  }
  __device__ uint64_t block_sum_u64(uint64_t v) {
    return block_allreduce(sm.ubcast[3], [&] { return typename FallbackSmem<Policy>::ReduceU64(sm.temp.u64).Sum(v); });
  }
  __device__ uint64_t block_max(uint64_t v) {
    return block_allreduce(sm.ubcast[0],
                           [&] { return typename FallbackSmem<Policy>::ReduceU64(sm.temp.u64).Reduce(v, MaxU64{}); });
  }
  __device__ uint64_t race_key(float z, const RowConfig& cfg, uint32_t i) const {
    return pack_order(contract::order_key(contract::race_score(z, cfg.seed, cfg.offset, i)), i);
  }

  template <class F>
  __device__ void stream(F&& f) {
    block_stream_row<kThreads, Policy::kFbUnroll>(row, vocab, f);
  }
  template <class F>
  __device__ void stream_strided(F&& f) {
    block_stream_row_strided<kThreads, Policy::kFbStridedUnroll>(row, vocab, f);
  }

  // ---- histogram path ----

  // Adds m to bin b of a 64-bit histogram kept as two 32-bit words: shared
  // memory has native 32-bit atomics only (a 64-bit add is a CAS loop).  Every
  // carry out of the low word is added to the high word exactly once, so the
  // pair sums exactly, in any order.
  __device__ void hist_add(int b, uint64_t m) {
    const unsigned int lo = (unsigned int)m;
    unsigned int hi = (unsigned int)(m >> 32);
    const unsigned int old = atomicAdd(&sm.data.hist.lo[b], lo);
    hi += (old + lo < old);
    if (hi) atomicAdd(&sm.data.hist.hi[b], hi);
  }
  __device__ uint64_t hist_value(int b) const {
    return ((uint64_t)sm.data.hist.hi[b] << 32) + sm.data.hist.lo[b];
  }
  __device__ void hist_clear() {
    __syncthreads();
    for (int b = threadIdx.x; b < kBins; b += kThreads) {
      sm.data.hist.lo[b] = 0;
      sm.data.hist.hi[b] = 0;
    }
    __syncthreads();
  }
  __device__ float fixed_scale() const { return __int_as_float((127 + fixed_shift()) << 23); }

  // Pass A's per-token step: runs of one bin are flushed at once (flat rows
  // and ties would otherwise hammer one address).  Tokens whose fixed-point
  // weight rounds to 0 cannot move a mass prefix and are skipped.
  struct BinRun {
    int bin = -1;
    uint64_t sum = 0;
  };
  // kAnyWeight (the split's pass A on rows without min-p, v92): every token
  // is binned, weight 0 included (adding 0 changes no bin: -inf tokens add 0
  // to the catch-all bin, where the default step skips them), and the
  // caller opens the run on the catch-all bin with sum 0, so the step tests
  // neither the weight nor whether a run is open: in split_hist_kernel's
  // SASS those were a 64-bit compare, two branches and their convergence
  // barriers a token.
  template <bool kTopP, bool kAnyWeight = false>
  __device__ void hist_token(BinRun& run, float z, float scale) {
    static_assert(kTopP || !kAnyWeight, "any-weight binning is the top-p mass histogram's");
    const uint64_t w = kTopP ? fixed_weight(z, scale) : 1u;
    if (!kAnyWeight && w == 0) return;
    const int b = bin_of(z);
    if (b != run.bin) {
      if (kAnyWeight || run.bin >= 0) hist_add(run.bin, run.sum);
      run.bin = b;
      run.sum = 0;
    }
    run.sum += w;
  }
  __device__ void hist_flush(const BinRun& run) {
    if (run.bin >= 0) hist_add(run.bin, run.sum);
  }

  // Where the prefix of the binned measure (value(b), bin 0 first) reaches k
  // (top-k) or p W (top-p).  All threads; uniform result.
  struct Boundary {
    bool binding;    // top-k: more than k tokens (else nothing to cut)
    int bin;         // -1 or the catch-all bin: the grid cannot pin it
    uint64_t above;  // measure of the bins before `bin`
    double target;   // p W (top-p)
  };
  template <bool kTopP, class Value>
  __device__ Boundary find_boundary(Value value, const RowConfig& cfg) {
    constexpr int kPer = kBins / kThreads;
    static_assert(kBins % kThreads == 0, "bins split evenly over the threads");
    uint64_t v[kPer];
    uint64_t mine = 0;
#pragma unroll
    for (int q = 0; q < kPer; ++q) {
      v[q] = value(threadIdx.x * kPer + q);
      mine += v[q];
    }
    uint64_t ex, total;
    __syncthreads();
    typename FallbackSmem<Policy>::ScanU64(sm.temp.scan_u64).ExclusiveSum(mine, ex, total);
    Boundary r;
    r.binding = kTopP || total > (uint64_t)cfg.top_k;
    r.target = kTopP ? (double)cfg.top_p * (double)total : 0.0;
    r.bin = -1;
    r.above = 0;
    if (!r.binding) return r;  // uniform: total is block-wide
    if (threadIdx.x == 0) sm.ibcast[0] = -1;
    __syncthreads();
    uint64_t c = ex;
#pragma unroll
    for (int q = 0; q < kPer; ++q) {
      if (crosses<kTopP>(c, c + v[q], r.target, cfg)) {  // exactly one bin: the prefix is monotone
        sm.ibcast[0] = threadIdx.x * kPer + q;
        sm.ubcast[1] = c;
      }
      c += v[q];
    }
    __syncthreads();
    r.bin = sm.ibcast[0];
    r.above = sm.ubcast[1];
    if (r.bin == kBins - 1) r.bin = -1;
    return r;
  }
  template <bool kTopP>
  __device__ static bool crosses(uint64_t before, uint64_t after, double target, const RowConfig& cfg) {
    return kTopP ? ((double)after >= target && (double)before < target)
                 : (after >= (uint64_t)cfg.top_k && before < (uint64_t)cfg.top_k);
  }

  // Decides the boundary inside the gathered bin, sm.data.list[0, nbin):
  // sorts it, scans fixed-point weights from base_m (the mass above the bin)
  // and, when asked, finishes the race (best: this thread's race over the
  // bins above).  Returns false only if no crossing is found (cannot happen
  // for a bin chosen by find_boundary; kept as a guard).
  template <bool kTopP>
  __device__ bool resolve_list(int nbin, uint64_t base_m, int above_n, double target, const RowConfig& cfg,
                               bool do_race, uint64_t best, HistStage& st) {
    const float scale = fixed_scale();
    block_sort_desc<kThreads, Policy::kRankSortMax>(sm.data.list, nbin);
    // Each thread weighs a run of ceil(nbin / kThreads) consecutive entries
    // (one for lists of up to kThreads): with a fixed run of kFbListCap /
    // kThreads, a 43-entry list was weighed by three threads, 16 exps each
    // in sequence, twice.  The weights are integers, so the prefix does not
    // depend on how the runs are cut.
    const int run_len = (nbin + kThreads - 1) / kThreads;
    const int lo = threadIdx.x * run_len;
    uint64_t seg = 0;
    for (int j = lo; j < lo + run_len && j < nbin; ++j)
      seg += fixed_weight(contract::key_to_float(packed_key(sm.data.list[j])), scale);
    uint64_t seg_ex;
    __syncthreads();
    typename FallbackSmem<Policy>::ScanU64(sm.temp.scan_u64).ExclusiveSum(seg, seg_ex);
    if (threadIdx.x == 0) sm.ibcast[4] = -1;
    __syncthreads();
    uint64_t c = base_m + seg_ex;
    for (int j = lo; j < lo + run_len && j < nbin; ++j) {
      const uint64_t w = fixed_weight(contract::key_to_float(packed_key(sm.data.list[j])), scale);
      const bool hit = kTopP ? crosses<true>(c, c + w, target, cfg) : (above_n + j + 1 == cfg.top_k);
      if (hit) {
        sm.ibcast[4] = j;
        sm.ubcast[2] = c + w;
      }
      c += w;
    }
    __syncthreads();
    const int jstar = sm.ibcast[4];
    if (jstar < 0) return false;  // uniform
    st.binding = true;
    st.cut = sm.data.list[jstar];
    st.kept = above_n + jstar + 1;
    st.mass = sm.ubcast[2];
    if (do_race) {
      for (int j = threadIdx.x; j <= jstar; j += kThreads) {
        const uint64_t p = sm.data.list[j];
        const uint64_t r = race_key(contract::key_to_float(packed_key(p)), cfg, packed_index(p));
        best = r > best ? r : best;
      }
      st.race = block_max(best);
    }
    __syncthreads();
    return true;
  }

  // One filter on the histogram path, over the whole row by this CTA.
  // Returns false when the histogram cannot pin the boundary; st is valid
  // otherwise.  kTopP: the mass boundary p W; else the count boundary k.
  template <bool kTopP>
  __device__ bool hist_stage(uint64_t cut_in, const RowConfig& cfg, bool do_race, HistStage& st) {
    const float scale = fixed_scale();
    hist_clear();
    BinRun run;
    stream([&](int32_t i, float x) {
      const float z = z_of(x);
      if (!eligible(z)) return;
      if (cut_in && pack_order(contract::order_key(z), (uint32_t)i) < cut_in) return;
      hist_token<kTopP>(run, z, scale);
    });
    hist_flush(run);
    __syncthreads();
    const Boundary bd = find_boundary<kTopP>([&](int b) { return hist_value(b); }, cfg);
    if (!bd.binding) {
      st.binding = false;
      return true;
    }
    if (bd.bin < 0) return trace_miss(bd.bin, 0);
    // Pass B: gather the boundary bin; count, weigh and race the bins above.
    __syncthreads();  // the list overlays the histogram
    if (threadIdx.x == 0) sm.ibcast[3] = 0;
    __syncthreads();
    uint64_t best = 0, above_m = 0;
    int above_n = 0;
    stream([&](int32_t i, float x) {
      const float z = z_of(x);
      if (!eligible(z)) return;
      const uint64_t p = pack_order(contract::order_key(z), (uint32_t)i);
      if (p < cut_in) return;
      const int b = bin_of(z);
      if (b == bd.bin) {
        const int at = atomicAdd(&sm.ibcast[3], 1);
        if (at < Policy::kFbListCap) sm.data.list[at] = p;
      } else if (b < bd.bin) {
        above_n += 1;
        if (!kTopP) above_m += fixed_weight(z, scale);
        if (do_race) {
          const uint64_t r = race_key(z, cfg, (uint32_t)i);
          best = r > best ? r : best;
        }
      }
    });
    __syncthreads();
    const int nbin = sm.ibcast[3];
    if (nbin > Policy::kFbListCap) return trace_miss(bd.bin, nbin);  // uniform
    uint64_t base_m = bd.above;
    if (kTopP) {
      above_n = (int)block_sum_u64((uint64_t)above_n);
    } else {
      above_n = (int)bd.above;
      base_m = block_sum_u64(above_m);
    }
    if (!resolve_list<kTopP>(nbin, base_m, above_n, bd.target, cfg, do_race, best, st)) return trace_miss(bd.bin, nbin);
    return true;
  }
  __device__ static bool trace_miss(int bin, int n) {
#ifdef TOKENSIFT_FB_TRACE
    if (threadIdx.x == 0) printf("fallback: histogram miss, bin %d holds %d\n", bin, n);
#endif
    return false;
  }

  // ---- generic path ----

  // What the generic searches measure above a key: a count, the mass in
  // double (weight), or the histogram path's fixed-point mass (integer sums).
  enum class Measure { kCount, kMass, kFixed };
  template <Measure M>
  using MeasureSum = std::conditional_t<M == Measure::kFixed, uint64_t, double>;

  // Per pivot, the measure of eligible tokens with packed order >= cut whose
  // key is >= pivot[q] (scale: fixed_scale(), kFixed only).
  template <Measure M>
  __device__ void above(const uint32_t (&pivot)[3], uint64_t cut, float scale, MeasureSum<M> (&res)[3]) {
    MeasureSum<M> acc[3] = {0, 0, 0};
    stream_strided([&](int32_t i, float x) {
      const float z = z_of(x);
      if (!eligible(z)) return;
      const uint32_t k = contract::order_key(z);
      if (pack_order(k, (uint32_t)i) < cut) return;
      MeasureSum<M> w;
      if constexpr (M == Measure::kCount) w = 1.0;
      else if constexpr (M == Measure::kMass) w = weight(z);
      else w = fixed_weight(z, scale);
#pragma unroll
      for (int q = 0; q < 3; ++q)
        if (k >= pivot[q]) acc[q] += w;
    });
#pragma unroll
    for (int q = 0; q < 3; ++q) {
      if constexpr (M == Measure::kFixed) res[q] = block_sum_u64(acc[q]);
      else res[q] = block_sum(acc[q]);
    }
  }

  // The block's smallest eligible key (from each thread's kmin; a row with
  // none keeps the search's old start, just above the key of -inf).
  __device__ uint32_t smallest_key(uint32_t kmin) {
    const uint64_t m = block_max((uint64_t)(~kmin));
    const uint32_t k = ~(uint32_t)m;
    return max(k == 0xffffffffu ? 0u : k, 0x00800000u);
  }

  // Largest key kappa with measure(key >= kappa) >= target (the measure
  // compared as a double), searched in [lo, hi] where measure(>= lo) >=
  // target is known.  Quaternary: three pivots per pass over the row.
  template <Measure M>
  __device__ uint32_t search(uint32_t lo, uint32_t hi, uint64_t cut, double target, float scale) {
    while (lo < hi) {
      const uint64_t span = (uint64_t)hi - lo;
      uint32_t pivot[3];
#pragma unroll
      for (int q = 0; q < 3; ++q) pivot[q] = lo + (uint32_t)((span * (q + 1) + 3) / 4);
      MeasureSum<M> m[3];
      above<M>(pivot, cut, scale, m);
      uint32_t new_lo = lo, new_hi = hi;
#pragma unroll
      for (int q = 0; q < 3; ++q) {
        if ((double)m[q] >= target) new_lo = max(new_lo, pivot[q]);
        else new_hi = min(new_hi, pivot[q] - 1);
      }
      lo = new_lo;
      hi = max(new_hi, lo);
    }
    return lo;
  }

  // Index of the `take`-th (1-based) eligible token with key == kappa and
  // packed order >= cut, in index order (0xffffffff when there are fewer).
  // A flat row's top-p cut is ~0.9 V ties deep: a scan of kThreads tokens
  // per block-wide step took V / kThreads steps, each a block scan and two
  // barriers (~0.5 ms at V = 129,280).  So: one coalesced pass counts the
  // ties of every tile of kThreads tokens (a warp per tile), one block scan
  // over the tiles' counts finds the tile, and one scan inside it the token.
  // Rows with more tiles than shared memory holds keep the step-wise scan.
  __device__ bool is_tie(int32_t i, uint32_t kappa, uint64_t cut) const {
    const float z = z_of(to_float(row[i]));
    return eligible(z) && contract::order_key(z) == kappa && pack_order(kappa, (uint32_t)i) >= cut;
  }
  __device__ uint32_t tie_cut(uint32_t kappa, uint64_t cut, int take) {
    constexpr int kWarps = kThreads / 32;
    constexpr int kMaxTiles = 2 * Policy::kFbListCap;
    const int32_t tiles = (vocab + kThreads - 1) / kThreads;
    if (tiles > kMaxTiles) return tie_cut_stepwise(kappa, cut, take);
    const int warp = (int)(threadIdx.x / 32), lane = (int)(threadIdx.x % 32);
    __syncthreads();  // sm.data may still hold a histogram or list being read
    if (threadIdx.x == 0) sm.found = 0xffffffffu;
    for (int32_t t = warp; t < tiles; t += kWarps) {
      int c = 0;
#pragma unroll
      for (int e = lane; e < kThreads; e += 32) {
        const int32_t i = t * kThreads + e;
        c += i < vocab && is_tie(i, kappa, cut);
      }
      c = __reduce_add_sync(0xffffffffu, c);
      if (lane == 0) sm.data.tiles[t] = c;
    }
    __syncthreads();
    // Each thread sums a run of consecutive tiles; the scan places the runs.
    const int per = (tiles + kThreads - 1) / kThreads;
    const int t0 = min((int)threadIdx.x * per, tiles), t1 = min(t0 + per, tiles);
    int mine = 0;
    for (int t = t0; t < t1; ++t) mine += sm.data.tiles[t];
    int before, total;
    typename FallbackSmem<Policy>::Scan(sm.temp.scan).ExclusiveSum(mine, before, total);
    if (before < take && take <= before + mine) {  // one thread: its run holds the take-th tie
      int acc = before;
      for (int t = t0; t < t1; ++t) {
        if (acc + sm.data.tiles[t] >= take) {
          sm.ibcast[4] = t;
          sm.ibcast[5] = take - acc;
          break;
        }
        acc += sm.data.tiles[t];
      }
    }
    __syncthreads();
    if (take < 1 || take > total) return 0xffffffffu;  // uniform: total is block-wide
    const int32_t i = sm.ibcast[4] * kThreads + (int32_t)threadIdx.x;
    const int flag = i < vocab && is_tie(i, kappa, cut);
    int incl, n;
    typename FallbackSmem<Policy>::Scan(sm.temp.scan).InclusiveSum(flag, incl, n);
    if (flag && incl == sm.ibcast[5]) sm.found = (uint32_t)i;
    __syncthreads();
    return sm.found;
  }
  // The step-wise form: kThreads tokens a block-wide step, in index order.
  __device__ __noinline__ uint32_t tie_cut_stepwise(uint32_t kappa, uint64_t cut, int take) {
    int carry = 0;
    if (threadIdx.x == 0) sm.found = 0xffffffffu;
    for (int32_t base = 0; base < vocab; base += kThreads) {
      const int32_t i = base + threadIdx.x;
      const int flag = i < vocab && is_tie(i, kappa, cut);
      int incl, total;
      __syncthreads();
      typename FallbackSmem<Policy>::Scan(sm.temp.scan).InclusiveSum(flag, incl, total);
      if (flag && carry + incl == take) sm.found = (uint32_t)i;
      carry += total;
      if (carry >= take) break;  // uniform: total is block-wide
    }
    __syncthreads();
    return sm.found;
  }

  __device__ uint64_t generic_top_k(const RowConfig& cfg) {
    const uint32_t lo_key = 0x00800000u;  // just above the key of -inf
    const uint32_t all[3] = {lo_key, lo_key, lo_key};
    double n[3];
    above<Measure::kCount>(all, 0, 0.0f, n);
    if (n[0] <= (double)cfg.top_k) return 0;
    const uint32_t kappa = search<Measure::kCount>(lo_key, contract::order_key(zmax), 0, (double)cfg.top_k, 0.0f);
    const uint32_t piv[3] = {kappa + 1, kappa + 1, kappa + 1};
    double above_n[3];
    above<Measure::kCount>(piv, 0, 0.0f, above_n);
    const int take = cfg.top_k - (int)above_n[0];
    return pack_order(kappa, tie_cut(kappa, 0, take));
  }

  // The generic top-p search in the histogram path's arithmetic (V below
  // 2^kFbMaxVocabBits): fixed-point weights summed as integers, and the kept
  // count is the first in the contract's order whose prefix, as a double,
  // reaches p W, W the integer total; exactly what the histogram path
  // (find_boundary, resolve_list) and the split fallback compute.  So a row
  // gets one kept count from any of them, whichever grid or bin overflow
  // sent it here (pivot_merge.cuh, top_p_clear, relies on it).
  __device__ uint64_t generic_top_p_fixed(uint64_t cut, const RowConfig& cfg) {
    const float scale = fixed_scale();
    uint64_t wsum = 0;
    uint32_t kmin = 0xffffffffu;
    stream_strided([&](int32_t i, float x) {
      const float z = z_of(x);
      const uint32_t k = contract::order_key(z);
      if (eligible(z) && pack_order(k, (uint32_t)i) >= cut) {
        wsum += fixed_weight(z, scale);
        kmin = min(kmin, k);
      }
    });
    const double target = (double)cfg.top_p * (double)block_sum_u64(wsum);
    // Largest key kappa whose mass at or above it reaches the target.  At
    // the smallest key present the mass is the whole W >= target, so the
    // search starts there (a flat row: no pass at all; the unbounded start
    // took 16 passes over the row).
    const uint32_t kappa =
        search<Measure::kFixed>(smallest_key(kmin), contract::order_key(zmax), cut, target, scale);
    const uint32_t piv[3] = {kappa + 1, kappa, kappa};
    uint64_t m[3];
    double c[3];
    above<Measure::kFixed>(piv, cut, scale, m);
    above<Measure::kCount>(piv, cut, 0.0f, c);
    const uint64_t above_m = m[0];
    const uint64_t q = fixed_weight(contract::key_to_float(kappa), scale);
    const int ties = (int)(c[1] - c[0]);
    // The fewest ties (index order) whose prefix reaches the target.
    int take = q > 0 ? (int)ceil((target - (double)above_m) / (double)q) : ties;
    take = max(1, min(take, ties));
    while (take > 1 && (double)(above_m + (uint64_t)(take - 1) * q) >= target) --take;
    while (take < ties && (double)(above_m + (uint64_t)take * q) < target) ++take;
    return pack_order(kappa, tie_cut(kappa, cut, take));
  }

  __device__ uint64_t generic_top_p(uint64_t cut, const RowConfig& cfg) {
#ifdef TOKENSIFT_FB_TRACE
    if (threadIdx.x == 0) printf("fallback: generic top-p\n");
#endif
    return bits_of(vocab) <= Policy::kFbMaxVocabBits ? generic_top_p_fixed(cut, cfg) : generic_top_p_double(cut, cfg);
  }

  // Rows of 2^kFbMaxVocabBits tokens or more (fixed-point sums could
  // overflow): weights in double.  Out of line: a rare path, kept out of
  // run()'s body.  (v36 had both searches inline in run(), and run() inline
  // in the split kernels: their item loops slowed on rows that never come
  // here, pass B's items 15 -> 21 us at B = 64.  The split kernels now call
  // run() instead, PivotPolicy::kSplitRunCall; this was measured with it.)
  __device__ __noinline__ uint64_t generic_top_p_double(uint64_t cut, const RowConfig& cfg) {
    double wsum = 0;
    uint32_t kmin = 0xffffffffu;
    stream_strided([&](int32_t i, float x) {
      const float z = z_of(x);
      const uint32_t k = contract::order_key(z);
      if (eligible(z) && pack_order(k, (uint32_t)i) >= cut) {
        wsum += weight(z);
        kmin = min(kmin, k);
      }
    });
    const double total = block_sum(wsum);
    const double target = (double)cfg.top_p * total;
    const uint32_t kappa =
        search<Measure::kMass>(smallest_key(kmin), contract::order_key(zmax), cut, target, 0.0f);
    const uint32_t piv[3] = {kappa + 1, kappa, kappa};
    double m[3], c[3];
    above<Measure::kMass>(piv, cut, 0.0f, m);
    above<Measure::kCount>(piv, cut, 0.0f, c);
    const double w_tie = weight(contract::key_to_float(kappa));
    const int ties = (int)(c[1] - c[0]);
    const double need = (target - m[0]) / w_tie;
    int take = (int)ceil(need);
    take = max(1, min(take, ties));
    return pack_order(kappa, tie_cut(kappa, cut, take));
  }

  // The race over the kept set (tokens with packed order >= cut).
  __device__ FallbackResult race_pass(uint64_t cut, const RowConfig& cfg) {
    uint64_t best = 0;
    double kept_mass = 0;
    double kept = 0;
    stream_strided([&](int32_t i, float x) {
      const float z = z_of(x);
      if (!eligible(z)) return;
      if (pack_order(contract::order_key(z), (uint32_t)i) < cut) return;
      const uint64_t r = race_key(z, cfg, (uint32_t)i);
      best = r > best ? r : best;
      kept_mass += weight(z);
      kept += 1;
    });
    FallbackResult r;
    r.token = (int32_t)packed_index(block_max(best));
    r.kept_mass = block_sum(kept_mass);
    r.kept = (int32_t)block_sum(kept);
    return r;
  }

  __device__ FallbackResult from_stage(const HistStage& st) const {
    const int shift = fixed_shift();
    return {(int32_t)packed_index(st.race), st.kept, ldexp((double)st.mass, -shift)};
  }

  __device__ FallbackResult run(const RowConfig& cfg) {
#ifdef TOKENSIFT_FB_TRACE
    if (threadIdx.x == 0) printf("fallback: enter (k %d, p %d)\n", (int)cfg.k_active, (int)cfg.p_active);
#endif
    const bool hist_ok = bits_of(vocab) <= Policy::kFbMaxVocabBits;
    uint64_t cut = 0;  // kept tokens have packed order >= cut
    if (cfg.k_active) {
      HistStage st;
      const bool last = !cfg.p_active;
      if (hist_ok && hist_stage<false>(0, cfg, last, st)) {
        if (st.binding) {
          if (last) return from_stage(st);
          cut = st.cut;
        }
      } else {
        cut = generic_top_k(cfg);
      }
    }
    if (cfg.p_active) {
      HistStage st;
      if (hist_ok && hist_stage<true>(cut, cfg, true, st)) return from_stage(st);
      cut = generic_top_p(cut, cfg);
    }
    return race_pass(cut, cfg);
  }
};

}  // namespace tokensift::cuda_detail
