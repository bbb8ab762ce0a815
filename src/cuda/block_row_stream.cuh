// Block-wide streaming read of one row with many loads in flight.
//
// A full-row pass by a single CTA is latency-bound unless each thread has
// several independent loads outstanding: a loop of one scalar load per
// iteration waits ~600 cycles per step.  Here each thread issues kUnroll
// 16-byte loads (kUnroll * 16 / sizeof(T) logits) before it touches any of
// them.  The row's unaligned head and its tail go element by element.
//
// block_stream_row: which thread sees which logit depends on the row's
// address, so callers may only combine what they see with order-independent
// operations (integer sums, max, integer atomics); results then do not depend
// on the row's position in the batch.
// block_stream_row_strided: thread t sees i = t, t + kThreads, ... in that
// order whatever the address (scalar loads, kUnroll at a time), for callers
// that sum floating point per thread and need the same order everywhere.
#pragma once

#include <stdint.h>

#include "cuda/cuda_utils.cuh"

namespace tokensift::cuda_detail {

// How many of the row's first logits come before its first 16-byte boundary
// (all of them when the row is not even aligned to its element size).
template <class T>
__device__ __forceinline__ int32_t row_head(const T* row, int32_t vocab) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(row);
  int32_t head = (int32_t)(((16u - (addr & 15u)) & 15u) / sizeof(T));
  if (addr % sizeof(T) != 0) head = vocab;  // cannot vectorise at all
  return head < vocab ? head : vocab;
}

// Streams the row: whole 16-byte vectors go to fv(i0, raw) (raw holds
// row[i0 .. i0 + 16 / sizeof(T)) as loaded) so callers can reduce them with
// packed instructions; the unaligned head and the tail still go to f(i, x).
// A thread's vectors come in increasing i0.  Every thread of the block calls
// batch_done() after each round of kUnroll loads (the same number of times
// in every thread), so it may hold warp collectives.
template <int kThreads, int kUnroll, class T, class F, class FV, class FB>
__device__ __forceinline__ void block_stream_row_vec(const T* row, int32_t vocab, F&& f, FV&& fv, FB&& batch_done) {
  constexpr int kVec = 16 / (int)sizeof(T);
  const int32_t head = row_head(row, vocab);
  for (int32_t i = threadIdx.x; i < head; i += kThreads) f(i, to_float(row[i]));
  const uint4* body = reinterpret_cast<const uint4*>(row + head);
  const int32_t nvec = (vocab - head) / kVec;
  for (int32_t base = 0; base < nvec; base += kThreads * kUnroll) {
    uint4 raw[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int32_t v = base + u * kThreads + (int32_t)threadIdx.x;
      if (v < nvec) raw[u] = __ldg(body + v);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int32_t v = base + u * kThreads + (int32_t)threadIdx.x;
      if (v < nvec) fv(head + v * kVec, raw[u]);
    }
    batch_done();
  }
  for (int32_t i = head + nvec * kVec + (int32_t)threadIdx.x; i < vocab; i += kThreads) f(i, to_float(row[i]));
}

template <int kThreads, int kUnroll, class T, class F, class FV>
__device__ __forceinline__ void block_stream_row_vec(const T* row, int32_t vocab, F&& f, FV&& fv) {
  block_stream_row_vec<kThreads, kUnroll>(row, vocab, f, fv, [] {});
}

// Calls f(i, x) once for every i in [0, vocab), x = row[i] widened to float.
template <int kThreads, int kUnroll, class T, class F>
__device__ __forceinline__ void block_stream_row(const T* row, int32_t vocab, F&& f) {
  constexpr int kVec = 16 / (int)sizeof(T);
  block_stream_row_vec<kThreads, kUnroll>(row, vocab, f, [&](int32_t i0, const uint4& raw) {
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int k = 0; k < kVec; ++k) f(i0 + k, to_float(e[k]));
  });
}

// Calls f(i, x) for i = threadIdx.x, threadIdx.x + kThreads, ... < vocab, in
// increasing i.
template <int kThreads, int kUnroll, class T, class F>
__device__ __forceinline__ void block_stream_row_strided(const T* row, int32_t vocab, F&& f) {
  for (int32_t base = 0; base < vocab; base += kThreads * kUnroll) {
    float x[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int32_t i = base + u * kThreads + (int32_t)threadIdx.x;
      x[u] = i < vocab ? to_float(__ldg(row + i)) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int32_t i = base + u * kThreads + (int32_t)threadIdx.x;
      if (i < vocab) f(i, x[u]);
    }
  }
}

}  // namespace tokensift::cuda_detail
