// Small device helpers shared by the CUDA kernels: logits widening, cache-
// bypassing loads for data another CTA of the same launch wrote, and the
// composite (key, index) packing the kernels use to order tokens.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "tokensift/contract.h"

namespace tokensift::cuda_detail {

// Widening is exact for bf16 and fp16, so every backend sees the same floats.
__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }

// One thread's arrival, counting `n`, on a per-row ticket that counts CTAs
// (or the units of a row that its items cover).  Release: the
// arriving CTA's global writes, ordered before this by the caller's
// __syncthreads, are visible before the count moves; acquire: the CTA that
// sees the last count sees every earlier arriver's writes (its other threads
// after the next __syncthreads).  CUTLASS's generic barrier uses the same
// pattern; it replaces __threadfence (fence.sc) plus a relaxed atomic, whose
// wait was the kernel's largest stall at B = 1024 (perf-notes v13).
__device__ __forceinline__ uint32_t ticket_arrive_n(uint32_t* ticket, uint32_t n) {
  uint32_t old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(ticket), "r"(n) : "memory");
  return old;
}
// One CTA's arrival.
__device__ __forceinline__ uint32_t ticket_arrive(uint32_t* ticket) { return ticket_arrive_n(ticket, 1u); }

// A flag another CTA of the same launch waits for: the release orders this
// thread's earlier global writes before it; the acquire orders the reader's
// later loads after it (its other threads after the next __syncthreads).
__device__ __forceinline__ void store_release(uint32_t* p, uint32_t v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t load_acquire(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// A peek at a counter other CTAs move (no ordering: a claim follows by atomic).
__device__ __forceinline__ uint32_t load_relaxed(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Programmatic dependent launch (sm_90): the primary kernel lets its
// dependent start once every CTA has triggered or exited; the dependent
// waits for the primary's end and its memory.  Both are no-ops on a launch
// without the dependency, and compiled out below sm_90.
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}
__device__ __forceinline__ void pdl_wait_primary() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// 2^v by one MUFU (relative error ~2^-22; subnormal results flush to 0).
__device__ __forceinline__ float ex2_approx(float v) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}

// Every thread gets the block-wide result of `reduce` (a CUB block
// collective that every thread calls; its value is valid in thread 0), passed
// on through the shared `slot`.  The barriers before and after make the
// collective's temp storage and the slot safe to reuse.
template <class T, class F>
__device__ __forceinline__ T block_allreduce(T& slot, F&& reduce) {
  __syncthreads();
  const T r = reduce();
  if (threadIdx.x == 0) slot = r;
  __syncthreads();
  return slot;
}

// A token's place in the contract's order as one 64-bit number: larger means
// earlier (z descending, then index ascending).  Zero is never a real token
// (the key of -inf is 0x007fffff and ineligible tokens are never packed), so it
// serves as "none".
__device__ __forceinline__ uint64_t pack_order(uint32_t key, uint32_t index) {
  return ((uint64_t)key << 32) | (uint64_t)(0xffffffffu - index);
}
__device__ __forceinline__ uint32_t packed_key(uint64_t p) { return (uint32_t)(p >> 32); }
__device__ __forceinline__ uint32_t packed_index(uint64_t p) {
  return 0xffffffffu - (uint32_t)(p & 0xffffffffu);
}

// Reads data written earlier in the same launch by another CTA: skip L1,
// which is not coherent across multiprocessors.
template <class T>
__device__ __forceinline__ T load_cg(const T* p) {
  return __ldcg(p);
}

// The global nanosecond timer, for the dev builds' stage traces (comparable
// across SMs, unlike clock64).
__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// max() that propagates NaN (PTX max.NaN): one instruction gives a chunk both
// its largest logit and whether it saw a NaN.
__device__ __forceinline__ float max_nan(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return (a != a || b != b) ? __int_as_float(0x7fffffff) : fmaxf(a, b);
#endif
}

struct MaxU64 {
  __device__ __forceinline__ uint64_t operator()(uint64_t a, uint64_t b) const {
    return a > b ? a : b;
  }
};

struct MinInt {
  __device__ __forceinline__ int operator()(int a, int b) const { return a < b ? a : b; }
};
struct MaxInt {
  __device__ __forceinline__ int operator()(int a, int b) const { return a > b ? a : b; }
};

}  // namespace tokensift::cuda_detail
