// The flat split: a batch's rows laid end to end and cut into equal ranges,
// one a CTA, over the CTAs that run at once.
//
// For per-row results that combine exactly under any cut of a row (a maximum,
// an integer count), one CTA per row leaves SMs idle wherever the batch is
// not a multiple of the resident CTAs (264 slots on the H200 at 2 CTAs an SM:
// at B = 256, 8 idle; at B = 64, 200), and a chunked split pays a merge per
// row.  Here each row is row_units units (16-byte vectors of its body), unit
// u of row r is r * row_units + u, and CTA b takes the b-th of gridDim.x
// ranges that differ by at most one unit.  A CTA reduces each row segment of
// its range in turn: a row it holds whole it writes itself; a partial row it
// adds to the row's accumulators in the workspace (atomic max / add) and
// then arrives on the row's ticket with its unit count, so the segment that
// completes the row's units (the acq_rel ticket orders every other
// segment's atomics before its reads) writes the row.
//
// The accumulators must start at zero: flat_clear_kernel zeroes them and
// the reducing kernel is launched as its programmatic dependent (sm_90), so
// it streams its logits meanwhile and waits for the clearing
// (griddepcontrol.wait, pdl_wait_primary) only before its first atomic.
// What it costs: each segment is a reduction's fixed work (for the plain
// race ~6-10 us on a loaded H200: its first loads' DRAM trip, its first bar,
// the block reduction, the atomics' trips to L2), so the split pays where one
// CTA per row leaves most SMs idle (B = 32-96: -21..-66 % against the chunked
// kernel) and loses where it only fills a few (B = 256: +13 %; perf-notes
// v77).  Failure modes: none of its own; a kernel that did not run to its
// end leaves accumulators the next call clears anyway.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda/cuda_utils.cuh"

namespace tokensift::cuda_detail {

// A CTA's range of the batch's units and the row segments it holds.
struct FlatRange {
  int64_t g, g_end;   // units [g, g_end) of the batch
  int32_t row_units;  // units a row
  __device__ __forceinline__ FlatRange(int64_t rows, int32_t units) : row_units(units) {
    const int64_t total = rows * units, q = total / gridDim.x, rem = total % gridDim.x;
    const int64_t b = blockIdx.x;
    g = b * q + (b < rem ? b : rem);
    g_end = g + q + (b < rem ? 1 : 0);
  }
  // The next segment, units [u0, u1) of `row`; false when the range is done.
  __device__ __forceinline__ bool next(int64_t& row, int32_t& u0, int32_t& u1) {
    if (g >= g_end) return false;
    row = g / row_units;
    u0 = (int32_t)(g - row * row_units);
    u1 = g_end - g < (int64_t)(row_units - u0) ? (int32_t)(u0 + (g_end - g)) : row_units;
    g += u1 - u0;
    return true;
  }
};

// Arrives on a row's ticket with a segment's n units once its atomics are
// issued (this thread's, ordered before by the release); true for the
// segment that completes the row (its later loads ordered after every
// other segment's atomics by the acquire).  The caller waited for the
// clearing (pdl_wait_primary) before its first atomic.
__device__ __forceinline__ bool flat_completes_row(uint32_t* ticket, uint32_t n, uint32_t row_units) {
  return ticket_arrive_n(ticket, n) + n == row_units;
}

// Zeroes n words.  It lets its dependent (the reducing kernel) start at once:
// that kernel waits for this grid's end before it touches them.  (A template
// so that every translation unit may hold it.)
template <int kThreads = 256>
__global__ void __launch_bounds__(kThreads) flat_clear_kernel(uint32_t* words, int64_t n) {
  pdl_launch_dependents();
  for (int64_t i = blockIdx.x * (int64_t)kThreads + threadIdx.x; i < n; i += (int64_t)gridDim.x * kThreads)
    words[i] = 0u;
}

// The flat split's CTAs for rows x row_units units, at least min_units each,
// at most ctas_per_sm a multiprocessor of the current device; 0 when the
// device cannot be queried.
inline unsigned flat_split_ctas(int64_t rows, int64_t row_units, int64_t min_units, int ctas_per_sm) {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0)
    return 0;
  const int64_t slots = (int64_t)sms * ctas_per_sm, by_work = rows * row_units / min_units;
  return (unsigned)(by_work < slots ? (by_work > 1 ? by_work : 1) : slots);
}

// The clearing launch for `bytes` (a multiple of 4) of accumulators at
// `words`; the reducing kernel follows as its programmatic dependent
// (launch_programmatic, pivot_launch.hpp; where the device has none, a plain
// launch after it, which stream order serialises).
inline cudaError_t launch_flat_clear(void* words, size_t bytes, cudaStream_t stream) {
  const int64_t n = (int64_t)(bytes / sizeof(uint32_t)), ctas = (n + 4095) / 4096;
  const unsigned grid = (unsigned)(ctas < 64 ? (ctas > 0 ? ctas : 1) : 64);
  flat_clear_kernel<<<grid, 256, 0, stream>>>(static_cast<uint32_t*>(words), n);
  return cudaGetLastError();
}

}  // namespace tokensift::cuda_detail
