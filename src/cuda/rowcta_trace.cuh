// The row-CTA kernel's instrumentation for dev builds (dev/rowcta_trace.cu),
// and its empty forms: what pivot_rowcta.cuh stamps, kept out of its code.
#pragma once

#include "cuda/cuda_utils.cuh"

namespace tokensift::cuda_detail {

// Dev builds only (dev/rowcta_trace.cu): thread 0 of each row's CTA stamps
// clock64() at the row's stages into rowcta_trace[row] (0 entry, 1 row
// parameters in, 2 first tau set, 3 stream done, 4 row
// statistics reduced, 5 final compaction done, 6 finish done), its entry and
// exit %globaltimer, and per row: passes, compactions, the buffer's count when
// the stream ended, the SM, and the tokens offered to the buffer (the count's
// growth between compactions, summed; a token that found the buffer full and
// was offered again counts twice), the first tau (float bits) and the count
// after the first pass (a row streamed twice: what its first tau listed).
#ifdef TOKENSIFT_ROWCTA_TRACE
constexpr int kRowCtaTraceRows = 4096;
constexpr int kRowCtaTraceInfo = 7;
__device__ long long rowcta_trace[kRowCtaTraceRows][7];
__device__ unsigned long long rowcta_ns[kRowCtaTraceRows][2];
__device__ int rowcta_info[kRowCtaTraceRows][kRowCtaTraceInfo];
#define TS_ROWCTA_MARK(i)                                                                      \
  do {                                                                                         \
    if (threadIdx.x == 0 && blockIdx.x < kRowCtaTraceRows) rowcta_trace[blockIdx.x][i] = clock64(); \
  } while (0)
#define TS_ROWCTA_INFO(i, v)                                                                 \
  do {                                                                                       \
    if (threadIdx.x == 0 && blockIdx.x < kRowCtaTraceRows) rowcta_info[blockIdx.x][i] = (v); \
  } while (0)
#define TS_ROWCTA_NS(i)                                                                                    \
  do {                                                                                                     \
    if (threadIdx.x == 0 && blockIdx.x < kRowCtaTraceRows) rowcta_ns[blockIdx.x][i] = globaltimer_ns(); \
  } while (0)
#else
#define TS_ROWCTA_MARK(i) \
  do {                    \
  } while (0)
#define TS_ROWCTA_INFO(i, v) \
  do {                       \
  } while (0)
#define TS_ROWCTA_NS(i) \
  do {                  \
  } while (0)
#endif

}  // namespace tokensift::cuda_detail
