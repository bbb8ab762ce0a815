// Block-wide bitonic sort of 64-bit keys in shared memory, descending.
//
// Used by the merge step on a few hundred to a few thousand packed
// (order key, index) candidates.  Keys are unique (the index is part of the
// key), so the result does not depend on the order the keys were inserted in,
// which lets the producers compact with atomics.  The first stages, whose
// partners sit inside one warp's 64-key window, could run on shuffles; at the
// sizes we see the barrier count (log2(n)(log2(n)+1)/2) is what matters.
#pragma once

#include <stdint.h>

namespace tokensift::cuda_detail {

// Sorts keys[0, n) descending; keys[n, pow2(n)) must be writable and are
// filled with 0 (the smallest key).  Call from all threads of the block.
template <int kThreads>
__device__ void block_bitonic_sort_desc(uint64_t* keys, int n) {
  int size = 1;
  while (size < n) size <<= 1;
  for (int i = n + (int)threadIdx.x; i < size; i += kThreads) keys[i] = 0;
  __syncthreads();
  for (int k = 2; k <= size; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < size; i += kThreads) {
        const int partner = i ^ j;
        if (partner > i) {
          const uint64_t a = keys[i], b = keys[partner];
          const bool descending = (i & k) == 0;
          if (descending ? (a < b) : (a > b)) {
            keys[i] = b;
            keys[partner] = a;
          }
        }
      }
      __syncthreads();
    }
  }
}

}  // namespace tokensift::cuda_detail
