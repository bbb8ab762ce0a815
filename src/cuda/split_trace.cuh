// The split launches' instrumentation for dev builds (dev/split_trace.cu),
// and its empty forms: what pivot_split.cuh stamps, kept out of its code.
#pragma once

#include <cstdint>

#include "cuda/cuda_utils.cuh"

namespace tokensift::cuda_detail {

// Dev builds only (dev/split_trace.cu): %globaltimer stamps of a call's
// launches and of each deferred row's way through the split launches.
// split_span[launch] = {first CTA's entry, last CTA's exit} (0 the pivot
// kernel, 1 pass A or the fused launch, 2 pass B; atomic min / max).  split_row_ns[row]: 0 the
// merge deferred the row; 1 pass A's first item began, 2 its last item
// began the boundary search, 3 the boundary was set; 4 pass B's first item
// began, 5 its last item began, 6 the bin's list was in shared memory, 7 it
// was resolved (sort, scan, race), 8 the result was written.
// split_row_info[row] = {tokens listed from the bin, the one-CTA fallback
// ran, the bin}.  The probe sets every stamp to ~0 (unset) before the call.
#ifdef TOKENSIFT_SPLIT_TRACE
constexpr int kSplitTraceRows = 1024;
__device__ unsigned long long split_span[3][2];
__device__ unsigned long long split_row_ns[kSplitTraceRows][9];
__device__ int split_row_info[kSplitTraceRows][3];
#define TS_SPLIT_ENTRY(l)                                                          \
  do {                                                                             \
    if (threadIdx.x == 0) atomicMin(&split_span[l][0], globaltimer_ns());        \
  } while (0)
#define TS_SPLIT_EXIT(l)                                                           \
  do {                                                                             \
    if (threadIdx.x == 0) atomicMax(&split_span[l][1], globaltimer_ns());        \
  } while (0)
#define TS_SPLIT_ROW(row, i)                                                                  \
  do {                                                                                        \
    if (threadIdx.x == 0 && (row) < kSplitTraceRows) split_row_ns[row][i] = globaltimer_ns(); \
  } while (0)
#define TS_SPLIT_ROW_FIRST(row, i)                                                                      \
  do {                                                                                                  \
    if (threadIdx.x == 0 && (row) < kSplitTraceRows) atomicMin(&split_row_ns[row][i], globaltimer_ns()); \
  } while (0)
#define TS_SPLIT_INFO(row, i, v)                                                       \
  do {                                                                                 \
    if (threadIdx.x == 0 && (row) < kSplitTraceRows) split_row_info[row][i] = (v);      \
  } while (0)
// Per item (item = row slot x chunks + chunk, each pass its own): pass A 0
// entry, 1 chunk binned in shared memory, 2 bins added to the row's
// histogram, 3 ticket taken; pass B 0 entry, 1 boundary seen, 2 every
// thread's token loop done (the first block reduction), 3 the row's atomics
// issued, 4 ticket taken.  split_item_where[pass][item] = {SM, CTA, row}.
constexpr int kSplitTraceItems = 4096;
__device__ unsigned long long split_item_ns[2][kSplitTraceItems][5];
__device__ int split_item_where[2][kSplitTraceItems][3];
__device__ __forceinline__ unsigned trace_smid() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}
#define TS_SPLIT_ITEM(pass, item, i, row)                                              \
  do {                                                                                 \
    if (threadIdx.x == 0 && (item) < kSplitTraceItems) {                              \
      split_item_ns[pass][item][i] = globaltimer_ns();                                 \
      if ((i) == 0) {                                                                  \
        split_item_where[pass][item][0] = (int)trace_smid();                           \
        split_item_where[pass][item][1] = (int)blockIdx.x;                             \
        split_item_where[pass][item][2] = (int)(row);                                  \
      }                                                                                \
    }                                                                                  \
  } while (0)
#else
#define TS_SPLIT_ENTRY(l) \
  do {                    \
  } while (0)
#define TS_SPLIT_EXIT(l) \
  do {                   \
  } while (0)
#define TS_SPLIT_ROW(row, i) \
  do {                       \
  } while (0)
#define TS_SPLIT_ROW_FIRST(row, i) \
  do {                             \
  } while (0)
#define TS_SPLIT_INFO(row, i, v) \
  do {                           \
  } while (0)
#define TS_SPLIT_ITEM(pass, item, i, row) \
  do {                                    \
  } while (0)
#endif

}  // namespace tokensift::cuda_detail
