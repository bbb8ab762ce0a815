// Warp-level building blocks over a list of up to 64 packed (order key,
// index) words held two per lane: position p = lane + 32 r lives in v[r].
//
// The merge ends most top-k rows on such a list.  One warp sorts, scans and
// races it with shuffles and no block barriers; the block-wide versions
// (block_bitonic_sort.cuh, CUB scans) pay ~40 barriers for the same list,
// which is what a B = 1 call waits on (perf-notes, next steps).
#pragma once

#include <stdint.h>

namespace tokensift::cuda_detail {

constexpr unsigned kFullMask = 0xffffffffu;

// Bitonic sort, descending, of v[0..1] over the warp (64 positions; empty
// slots hold 0 and end up last).  Keys are unique, so the order is total.
__device__ __forceinline__ void warp_sort_desc64(uint64_t (&v)[2]) {
  const int lane = (int)(threadIdx.x & 31u);
#pragma unroll
  for (int k = 2; k <= 64; k <<= 1) {
#pragma unroll
    for (int j = k >> 1; j > 0; j >>= 1) {
      if (j == 32) {  // partners in the same lane: position lane (lower) and lane + 32
        const uint64_t hi = v[0] > v[1] ? v[0] : v[1], lo = v[0] > v[1] ? v[1] : v[0];
        v[0] = hi;  // (lane & 64) == 0: a descending block, the lower position takes the max
        v[1] = lo;
      } else {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int p = lane + 32 * r;
          const uint64_t other = __shfl_xor_sync(kFullMask, v[r], j);
          const bool lower = (p & j) == 0;
          const bool desc_block = (p & k) == 0;
          const bool take_max = lower == desc_block;
          v[r] = take_max ? (v[r] > other ? v[r] : other) : (v[r] < other ? v[r] : other);
        }
      }
    }
  }
}

__device__ __forceinline__ double warp_sum(double x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(kFullMask, x, o);
  return x;
}

__device__ __forceinline__ uint64_t warp_max_u64(uint64_t x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const uint64_t y = __shfl_xor_sync(kFullMask, x, o);
    x = y > x ? y : x;
  }
  return x;
}

// Inclusive prefix sum over the lanes (Kogge-Stone).
__device__ __forceinline__ double warp_inclusive_sum(double x) {
  const int lane = (int)(threadIdx.x & 31u);
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const double y = __shfl_up_sync(kFullMask, x, o);
    if (lane >= o) x += y;
  }
  return x;
}

}  // namespace tokensift::cuda_detail
