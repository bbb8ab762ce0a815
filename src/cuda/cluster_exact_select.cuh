// The cluster kernel's exact select (pivot_cluster.cuh): the top `need` of a
// row across the CTAs of a cluster by an MSB-first radix select, for the
// rows its pivot search cannot bracket.
#pragma once

#include <cooperative_groups.h>

#include <cub/block/block_scan.cuh>

#include "cuda/cuda_utils.cuh"

namespace tokensift::cuda_detail {

// The exact top `need` of a row the search could not bracket (ties at the
// k-th key, a flat row, a row the Gaussian fit misses): an MSB-first radix
// select of the k-th key over the cluster, 8 bits a pass.  Each CTA counts
// its tokens under the prefix so far into a 256-bin histogram (one shared
// atomic per distinct digit of a warp: __match_any_sync, so a flat row's
// warps do not serialize on one bin); after a cluster barrier every CTA sums
// each bin over the 16 CTAs in rank order and scans, so all pick the same
// digit.  Two histogram buffers alternate: a CTA clears one only after the
// next barrier, which every CTA passes after reading it.  Then the ties at
// the k-th key are cut by index: the CTAs hold the row in rank order, so CTA
// c takes the first (remaining - ties of CTAs before c) of its own, found by
// one block scan per 16-byte vector (a thread's vectors are the row's in
// (vector, thread, element) order).  Returns the k-th key; `take` marks the
// thread's listed ties.  hist: 512 ints of this CTA's shared memory that no
// other CTA touches before the list's barrier.
template <class Policy, int kPer, int kVec, class ScanTemp>
__device__ __forceinline__ uint32_t cluster_exact_select(cooperative_groups::cluster_group& cluster, int rank,
                                                         const float (&x)[kPer], int need, int* hist, int* ties,
                                                         ScanTemp& temp, uint32_t& take) {
  constexpr int kCtas = Policy::kClusterCtas;
  constexpr int kBins = 256;
  static_assert(Policy::kThreads == kBins, "one bin per thread");
  static_assert(kPer <= 32, "take is a 32-bit mask");
  using Scan = cub::BlockScan<int, Policy::kThreads>;
  const int tid = (int)threadIdx.x, lane = tid & 31;
  uint32_t prefix = 0, pmask = 0;
  int remaining = need;  // tokens still to take at or below the prefix
#pragma unroll 1
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 24 - 8 * pass;
    int* h = hist + (pass & 1) * kBins;
    h[tid] = 0;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const uint32_t key = contract::order_key(x[j]);
      const bool in = (key & pmask) == prefix;
      const uint32_t d = (key >> shift) & 255u;
      const unsigned peers = __match_any_sync(0xffffffffu, in ? d : 256u);
      if (in && lane == __ffs((int)peers) - 1) atomicAdd(&h[d], __popc(peers));
    }
    cluster.sync();  // every CTA's histogram of this pass is complete
    const int bin = kBins - 1 - tid;  // thread 0 holds the highest digit
    int c = 0;
#pragma unroll
    for (int r = 0; r < kCtas; ++r) c += *cluster.map_shared_rank(&h[bin], (unsigned)r);
    int incl;
    Scan(temp).InclusiveSum(c, incl);
    if (incl - c < remaining && remaining <= incl) {
      ties[kCtas] = bin;
      ties[kCtas + 1] = remaining - (incl - c);
    }
    __syncthreads();
    prefix |= (uint32_t)ties[kCtas] << shift;
    pmask |= 255u << shift;
    remaining = ties[kCtas + 1];
    __syncthreads();  // temp and ties[kCtas..] are written again
  }
  // Each CTA's count at the k-th key is its last histogram's bin (buffer 1).
  if (tid < kCtas) ties[tid] = *cluster.map_shared_rank(hist + kBins + (int)(prefix & 255u), (unsigned)tid);
  __syncthreads();
  int before = 0;
  for (int r = 0; r < rank; ++r) before += ties[r];
  const int mine = ties[rank];
  const int q = min(max(remaining - before, 0), mine);  // uniform in the CTA
  take = 0;
  if (q == mine) {
#pragma unroll
    for (int j = 0; j < kPer; ++j) take |= (uint32_t)(contract::order_key(x[j]) == prefix) << j;
  } else if (q > 0) {
    int base = 0;
#pragma unroll
    for (int v = 0; v < kPer / kVec; ++v) {
      int c = 0;
#pragma unroll
      for (int e = 0; e < kVec; ++e) c += contract::order_key(x[v * kVec + e]) == prefix;
      int pre, tot;
      Scan(temp).ExclusiveSum(c, pre, tot);
      int pos = base + pre;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        if (contract::order_key(x[v * kVec + e]) == prefix) {
          if (pos < q) take |= 1u << (v * kVec + e);
          ++pos;
        }
      }
      base += tot;
      __syncthreads();  // temp is reused
    }
  }
  return prefix;
}

}  // namespace tokensift::cuda_detail
