// Block-wide threshold selection over 32-bit order keys held in registers.
//
// Given each thread's kItems keys (0 = not a candidate), finds a key T such
// that the number of keys >= T lies in [need, cap], or, when ties make that
// impossible, the exact need-th largest key with the counts around it.  The
// caller then keeps {key >= T}, or {key > T} plus some ties.
//
// First one guessed pivot is counted (a register pass and one reduction):
// callers guess from a Gaussian fit of the values (Qrita's sigma truncation),
// and on typical rows the guess lands in the window.  Otherwise a most-
// significant-digit radix select runs: 8 bits a pass, a 256-bin histogram in
// shared memory, and it stops at the first digit boundary that keeps between
// need and cap keys (usually after two passes); four passes pin the exact key.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "cuda/cuda_utils.cuh"

namespace tokensift::cuda_detail {

struct ThresholdResult {
  uint32_t key;     // the threshold
  bool exact;       // true: `key` is the exact need-th key; keep > key plus ties
  int count_ge;     // keys >= key
  int count_gt;     // keys > key (meaningful when exact)
};

template <int kThreads>
struct ThresholdSmem {
  using ReduceInt = cub::BlockReduce<int, kThreads>;
  using ScanInt = cub::BlockScan<int, kThreads>;
  union {
    typename ReduceInt::TempStorage reduce;
    typename ScanInt::TempStorage scan;
  } temp;
  int hist[256];
  int ival;
  int sel_bin, sel_above, sel_count;
};

template <int kThreads>
__device__ __forceinline__ int block_sum_int(int v, ThresholdSmem<kThreads>& sm) {
  return block_allreduce(sm.ival, [&] { return typename ThresholdSmem<kThreads>::ReduceInt(sm.temp.reduce).Sum(v); });
}

// The 32-bit order key of an item: the key itself, or the high half of a
// packed (key, index) word.
__device__ __forceinline__ uint32_t select_key(uint32_t k) { return k; }
__device__ __forceinline__ uint32_t select_key(uint64_t p) { return (uint32_t)(p >> 32); }

// need <= (number of nonzero keys); cap >= need.  guess == 0: no guess.
template <int kThreads, int kItems, class KeyT>
__device__ ThresholdResult block_threshold_select(const KeyT (&item)[kItems], int need, int cap,
                                                  uint32_t guess, ThresholdSmem<kThreads>& sm) {
  uint32_t key[kItems];
#pragma unroll
  for (int j = 0; j < kItems; ++j) key[j] = select_key(item[j]);
  static_assert(kThreads == 256, "one histogram bin per thread");
  if (guess != 0) {
    int c = 0;
#pragma unroll
    for (int j = 0; j < kItems; ++j) c += key[j] != 0 && key[j] >= guess;
    c = block_sum_int<kThreads>(c, sm);
    if (c >= need && c <= cap) return {guess, false, c, 0};
  }
  uint32_t prefix = 0;
  int remaining = need, above_total = 0;
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 24 - 8 * pass;
    __syncthreads();
    sm.hist[threadIdx.x] = 0;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      if (key[j] != 0 && (pass == 0 || (key[j] >> (shift + 8)) == (prefix >> (shift + 8))))
        atomicAdd(&sm.hist[(key[j] >> shift) & 255u], 1);
    }
    __syncthreads();
    const int h = sm.hist[255 - threadIdx.x];  // bins from the top
    int incl;
    typename ThresholdSmem<kThreads>::ScanInt(sm.temp.scan).InclusiveSum(h, incl);
    const int excl = incl - h;
    if (excl < remaining && remaining <= incl) {
      sm.sel_bin = 255 - threadIdx.x;
      sm.sel_above = excl;
      sm.sel_count = h;
    }
    __syncthreads();
    const uint32_t bin = (uint32_t)sm.sel_bin;
    const int above = sm.sel_above, in_bin = sm.sel_count;
    prefix |= bin << shift;
    above_total += above;
    remaining -= above;
    if (above_total + in_bin <= cap) return {prefix, false, above_total + in_bin, above_total};
    if (pass == 3) return {prefix, true, above_total + in_bin, above_total};
  }
  return {prefix, true, 0, 0};  // not reached
}

}  // namespace tokensift::cuda_detail
