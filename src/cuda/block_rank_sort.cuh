// Block-wide rank sort of unique 64-bit keys in shared memory, descending,
// and the block sort the pivot kernels call (block_sort_desc): the rank
// sort up to a policy's size, the bitonic sort above.
//
// A key's place in a descending order of unique keys is the number of keys
// larger than it, so each thread counts that for its keys by reading the
// whole list (every lane reads the same entry: a shared-memory broadcast)
// and writes them there: two barriers and O(n^2 / threads) compares, where
// the bitonic sort takes log2(n)(log2(n)+1)/2 barriers (36 at 256 keys).
// Which wins up to which n is measured by dev/sort_probe.cu; the pivot
// kernels' lists are packed (order key, index) entries, unique by their
// index.  Failure mode: equal keys would take the same place (the callers'
// keys never are).
#pragma once

#include <stdint.h>

#include "cuda/block_bitonic_sort.cuh"

namespace tokensift::cuda_detail {

// Sorts keys[0, n) descending, n <= kThreads * kPerThread; keys[n, pow2(n))
// are zeroed as block_bitonic_sort_desc does.  Call from all threads.
template <int kThreads, int kPerThread>
__device__ void block_rank_sort_desc(uint64_t* keys, int n) {
  uint64_t mine[kPerThread];
  int rank[kPerThread];
  __syncthreads();  // the caller's writes of the list, as the bitonic sort's first barrier
#pragma unroll
  for (int s = 0; s < kPerThread; ++s) {
    const int i = s * kThreads + (int)threadIdx.x;
    mine[s] = i < n ? keys[i] : 0ull;
    rank[s] = 0;
  }
  for (int j = 0; j < n; ++j) {
    const uint64_t k = keys[j];
#pragma unroll
    for (int s = 0; s < kPerThread; ++s) rank[s] += k > mine[s];
  }
  __syncthreads();
#pragma unroll
  for (int s = 0; s < kPerThread; ++s)
    if (s * kThreads + (int)threadIdx.x < n) keys[rank[s]] = mine[s];
  int size = 1;
  while (size < n) size <<= 1;
  for (int i = n + (int)threadIdx.x; i < size; i += kThreads) keys[i] = 0;
  __syncthreads();
}

// The pivot kernels' block sort: lists of at most kRankMax keys by rank,
// longer ones (and all when kRankMax is 0) by the bitonic network.
template <int kThreads, int kRankMax>
__device__ __forceinline__ void block_sort_desc(uint64_t* keys, int n) {
  if constexpr (kRankMax > 0) {
    if (n <= kRankMax) {
      block_rank_sort_desc<kThreads, (kRankMax + kThreads - 1) / kThreads>(keys, n);
      return;
    }
  }
  block_bitonic_sort_desc<kThreads>(keys, n);
}

}  // namespace tokensift::cuda_detail
