// Full-row fallback of the pivot sampler, run by a row's merging CTA when the
// chunks' candidates do not decide the row (a kept set larger than what the
// chunks emitted: flat rows under top-p or min-p, large k, ...).
//
// It never materialises or sorts the row.  Each boundary (top-k, then top-p)
// is found by a quaternary pivot search over the 32-bit order-key space, the
// multi-pivot search of Qrita: three pivots a pass, each thread accumulating
// count (top-k) or mass (top-p) above every pivot for the logits it owns, a
// fixed-shape block reduction (so the result is bit-identical run to run), and
// the key interval shrinks four-fold; ~16 passes pin the boundary key.  Ties at
// the boundary key are cut by index with one index-ordered scan.  A final pass
// runs the exponential race over the kept set.  Every pass re-reads the row
// (from L2 when the batch is small); this path trades speed for generality.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "cuda/cuda_utils.cuh"
#include "cuda/row_config.cuh"

namespace tokensift::cuda_detail {

template <class Policy>
struct FallbackSmem {
  using ReduceF64 = cub::BlockReduce<double, Policy::kThreads>;
  using ReduceU64 = cub::BlockReduce<uint64_t, Policy::kThreads>;
  using Scan = cub::BlockScan<int, Policy::kThreads>;
  union {
    typename ReduceF64::TempStorage f64;
    typename ReduceU64::TempStorage u64;
    typename Scan::TempStorage scan;
  } temp;
  double bcast[4];
  uint32_t found;
};

struct FallbackResult {
  int32_t token;
  int32_t kept;
  double kept_mass;  // sum of exp(z - zmax) over the kept set
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

  __device__ float z_at(int32_t i) const {
    const float x = to_float(row[i]);
    return temperature == 1.0f ? x : contract::scale(x, temperature);
  }
  __device__ bool eligible(float z) const {
    return z > -__builtin_huge_valf() && (!m_active || contract::passes_min_p(z, zmax, ln_minp));
  }
  // fp32 exp, summed in double per thread: ~1e-7 relative per term, far
  // inside the top-p band (1e-6), and 5x cheaper than a double exp.
  __device__ double weight(float z) const { return (double)expf(z - zmax); }

  __device__ double block_sum(double v) {
    __syncthreads();
    const double s = typename FallbackSmem<Policy>::ReduceF64(sm.temp.f64).Sum(v);
    if (threadIdx.x == 0) sm.bcast[0] = s;
    __syncthreads();
    return sm.bcast[0];
  }

  // Per pivot, the count or mass of eligible tokens with packed order >= cut
  // whose key is >= pivot[q].
  template <bool kMass>
  __device__ void above(const uint32_t (&pivot)[3], uint64_t cut, double (&res)[3]) {
    double acc[3] = {0, 0, 0};
    for (int32_t i = threadIdx.x; i < vocab; i += Policy::kThreads) {
      const float z = z_at(i);
      if (!eligible(z)) continue;
      const uint32_t k = contract::order_key(z);
      if (pack_order(k, i) < cut) continue;
      const double w = kMass ? weight(z) : 1.0;
#pragma unroll
      for (int q = 0; q < 3; ++q)
        if (k >= pivot[q]) acc[q] += w;
    }
#pragma unroll
    for (int q = 0; q < 3; ++q) res[q] = block_sum(acc[q]);
  }

  // Largest key kappa with measure(key >= kappa) >= target, searched in
  // [lo, hi] where measure(>= lo) >= target is known.
  template <bool kMass>
  __device__ uint32_t search(uint32_t lo, uint32_t hi, uint64_t cut, double target) {
    while (lo < hi) {
      const uint64_t span = (uint64_t)hi - lo;
      uint32_t pivot[3];
#pragma unroll
      for (int q = 0; q < 3; ++q) pivot[q] = lo + (uint32_t)((span * (q + 1) + 3) / 4);
      double m[3];
      above<kMass>(pivot, cut, m);
      uint32_t new_lo = lo, new_hi = hi;
#pragma unroll
      for (int q = 0; q < 3; ++q) {
        if (m[q] >= target) new_lo = max(new_lo, pivot[q]);
        else new_hi = min(new_hi, pivot[q] - 1);
      }
      lo = new_lo;
      hi = max(new_hi, lo);
    }
    return lo;
  }

  // Index of the `take`-th (1-based) eligible token with key == kappa and
  // packed order >= cut, scanning in index order.
  __device__ uint32_t tie_cut(uint32_t kappa, uint64_t cut, int take) {
    int carry = 0;
    if (threadIdx.x == 0) sm.found = 0xffffffffu;
    for (int32_t base = 0; base < vocab; base += Policy::kThreads) {
      const int32_t i = base + threadIdx.x;
      int flag = 0;
      if (i < vocab) {
        const float z = z_at(i);
        flag = eligible(z) && contract::order_key(z) == kappa && pack_order(kappa, i) >= cut;
      }
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

  __device__ FallbackResult run(const RowConfig& cfg) {
    const uint32_t lo_key = 0x00800000u;  // just above the key of -inf
    const uint32_t hi_key = contract::order_key(zmax);
    uint64_t cut = 0;  // kept tokens have packed order >= cut
    if (cfg.k_active) {
      const uint32_t all[3] = {lo_key, lo_key, lo_key};
      double n[3];
      above<false>(all, 0, n);
      if (n[0] > (double)cfg.top_k) {
        const uint32_t kappa = search<false>(lo_key, hi_key, 0, (double)cfg.top_k);
        const uint32_t piv[3] = {kappa + 1, kappa + 1, kappa + 1};
        double above_n[3];
        above<false>(piv, 0, above_n);
        const int take = cfg.top_k - (int)above_n[0];
        cut = pack_order(kappa, tie_cut(kappa, 0, take));
      }
    }
    if (cfg.p_active) {
      double wsum = 0;
      for (int32_t i = threadIdx.x; i < vocab; i += Policy::kThreads) {
        const float z = z_at(i);
        if (eligible(z) && pack_order(contract::order_key(z), i) >= cut) wsum += weight(z);
      }
      const double total = block_sum(wsum);
      const double target = (double)cfg.top_p * total;
      const uint32_t kappa = search<true>(lo_key, hi_key, cut, target);
      const uint32_t piv[3] = {kappa + 1, kappa, kappa};
      double m[3], c[3];
      above<true>(piv, cut, m);
      above<false>(piv, cut, c);
      const double w_tie = weight(contract::key_to_float(kappa));
      const int ties = (int)(c[1] - c[0]);
      double need = (target - m[0]) / w_tie;
      int take = (int)ceil(need);
      take = max(1, min(take, ties));
      cut = pack_order(kappa, tie_cut(kappa, cut, take));
    }
    // The race over the kept set.
    uint64_t best = 0;
    double kept_mass = 0;
    double kept = 0;
    for (int32_t i = threadIdx.x; i < vocab; i += Policy::kThreads) {
      const float z = z_at(i);
      if (!eligible(z)) continue;
      if (pack_order(contract::order_key(z), i) < cut) continue;
      const float s = contract::race_score(z, cfg.seed, cfg.offset, (uint32_t)i);
      const uint64_t p = pack_order(contract::order_key(s), i);
      best = p > best ? p : best;
      kept_mass += weight(z);
      kept += 1;
    }
    __syncthreads();
    const uint64_t b = typename FallbackSmem<Policy>::ReduceU64(sm.temp.u64).Reduce(best, MaxU64{});
    if (threadIdx.x == 0) sm.bcast[1] = __longlong_as_double((long long)b);
    __syncthreads();
    const uint64_t winner = (uint64_t)__double_as_longlong(sm.bcast[1]);
    FallbackResult r;
    r.token = (int32_t)packed_index(winner);
    r.kept_mass = block_sum(kept_mass);
    r.kept = (int32_t)block_sum(kept);
    return r;
  }
};

}  // namespace tokensift::cuda_detail
