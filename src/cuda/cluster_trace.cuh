// The cluster kernel's instrumentation for dev builds (dev/cluster_trace.cu),
// and its empty forms: what pivot_cluster.cuh stamps, kept out of its code.
#pragma once

#include <cstdint>

#include "cuda/cuda_utils.cuh"

namespace tokensift::cuda_detail {

// Dev builds only (dev/cluster_trace.cu): per traced row, CTA 0's thread 0
// stamps each stage (%globaltimer and clock64): 0 entry, 1 parameters in,
// 2 loads consumed (statistics' block barrier), 3 statistics exchanged, 4-6
// search rounds' counts exchanged, 7 list complete, 8 compaction done, 9
// finish done, 10 the list's own count begins (the search decided), 11 the
// list's remote stores issued, 12 the exact select done (rows the search did
// not bracket), 13 the first pivots set, 14 / 15 round 1's counts in shared
// memory / exchanged.  cluster_trace_span[row] (globaltimer, over every
// CTA): the first / last CTA's entry, the last CTA at the list's barrier.
// cluster_trace_info[row] = {rounds run, list size, bracketed}.
#ifdef TOKENSIFT_CLUSTER_TRACE
constexpr int kClusterTraceRows = 64;
__device__ unsigned long long cluster_trace_ns[kClusterTraceRows][16];
__device__ long long cluster_trace_clk[kClusterTraceRows][16];
__device__ unsigned long long cluster_trace_span[kClusterTraceRows][3];
__device__ int cluster_trace_info[kClusterTraceRows][3];
#define TS_CLUSTER_MARK(i)                                                           \
  do {                                                                               \
    if (rank == 0 && threadIdx.x == 0 && row_id < kClusterTraceRows) {               \
      cluster_trace_ns[row_id][i] = globaltimer_ns();                                \
      cluster_trace_clk[row_id][i] = clock64();                                      \
    }                                                                                \
  } while (0)
#define TS_CLUSTER_INFO(i, v)                                                                  \
  do {                                                                                         \
    if (rank == 0 && threadIdx.x == 0 && row_id < kClusterTraceRows) cluster_trace_info[row_id][i] = (v); \
  } while (0)
#else
#define TS_CLUSTER_MARK(i) \
  do {                     \
  } while (0)
#define TS_CLUSTER_INFO(i, v) \
  do {                        \
  } while (0)
#endif

}  // namespace tokensift::cuda_detail
