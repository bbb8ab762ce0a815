// Probe: the block bitonic sort (block_bitonic_sort.cuh) against the rank
// sort (block_rank_sort.cuh), on the list sizes the merge and the split fallback's resolve sort
// (a few dozen to a few thousand packed (key, index) entries, unique).
//
// Why: the split trace (perf-notes, af60da4) has a deferred top-p row's
// resolve (sort, scan, race of the boundary bin's tokens, up to ~230 here)
// at 5-10 us, and the merge sorts up to 256 candidates for rows decided
// from them.  A bitonic sort of n keys takes log2(n)(log2(n)+1)/2 barriers
// (36 at 256); a rank sort takes two: each thread counts, for its keys, how
// many keys are larger (keys are unique, so the count is the position) by
// reading the whole list from shared memory, O(n^2 / threads) compares.
// Which wins up to which n is what this measures (and so what
// PivotPolicy::kRankSortMax should be): cycles per CTA (clock64
// around the sort, the median over CTAs), both results checked against
// std::sort.  One CTA of 256 threads per list, 132 lists per size.
//
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc dev/sort_probe.cu -o /tmp/sort_probe
//   /tmp/sort_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "cuda/block_rank_sort.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kCap = 4096;

template <int kAlgo, int kMaxPerThread>
__global__ void sort_kernel(const uint64_t* in, uint64_t* out, long long* cycles, int n) {
  __shared__ uint64_t keys[kCap];
  const uint64_t* src = in + (size_t)blockIdx.x * kCap;
  for (int i = threadIdx.x; i < n; i += kThreads) keys[i] = src[i];
  __syncthreads();
  const long long t0 = clock64();
  if (kAlgo == 0) tokensift::cuda_detail::block_bitonic_sort_desc<kThreads>(keys, n);
  else tokensift::cuda_detail::block_rank_sort_desc<kThreads, kMaxPerThread>(keys, n);
  __syncthreads();
  const long long t1 = clock64();
  for (int i = threadIdx.x; i < n; i += kThreads) out[(size_t)blockIdx.x * kCap + i] = keys[i];
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

template <int kAlgo, int kMaxPerThread>
long long run(const uint64_t* d_in, uint64_t* d_out, long long* d_cyc, int lists, int n,
              const std::vector<uint64_t>& want, bool& ok) {
  sort_kernel<kAlgo, kMaxPerThread><<<lists, kThreads>>>(d_in, d_out, d_cyc, n);  // warm-up
  sort_kernel<kAlgo, kMaxPerThread><<<lists, kThreads>>>(d_in, d_out, d_cyc, n);
  std::vector<long long> cyc(lists);
  std::vector<uint64_t> got((size_t)lists * kCap);
  cudaMemcpy(cyc.data(), d_cyc, sizeof(long long) * lists, cudaMemcpyDeviceToHost);
  cudaMemcpy(got.data(), d_out, sizeof(uint64_t) * got.size(), cudaMemcpyDeviceToHost);
  for (int l = 0; l < lists && ok; ++l)
    for (int i = 0; i < n && ok; ++i) ok = got[(size_t)l * kCap + i] == want[(size_t)l * kCap + i];
  std::nth_element(cyc.begin(), cyc.begin() + lists / 2, cyc.end());
  return cyc[lists / 2];
}

}  // namespace

int main() {
  const int lists = 132;
  std::mt19937_64 gen(7);
  std::vector<uint64_t> in((size_t)lists * kCap), want(in.size());
  uint64_t *d_in, *d_out;
  long long* d_cyc;
  cudaMalloc(&d_in, sizeof(uint64_t) * in.size());
  cudaMalloc(&d_out, sizeof(uint64_t) * in.size());
  cudaMalloc(&d_cyc, sizeof(long long) * lists);
  std::printf("%6s %14s %14s %8s\n", "n", "bitonic cyc", "rank cyc", "ok");
  for (int n : {32, 64, 128, 230, 256, 512, 1024, 2048, 4096}) {
    for (int l = 0; l < lists; ++l) {
      // Packed (order key, index) entries: distinct indices make them unique.
      for (int i = 0; i < n; ++i) in[(size_t)l * kCap + i] = (gen() & 0xffffffff00000000ull) | (uint32_t)i;
      std::copy(in.begin() + (size_t)l * kCap, in.begin() + (size_t)l * kCap + n, want.begin() + (size_t)l * kCap);
      std::sort(want.begin() + (size_t)l * kCap, want.begin() + (size_t)l * kCap + n, std::greater<uint64_t>());
    }
    cudaMemcpy(d_in, in.data(), sizeof(uint64_t) * in.size(), cudaMemcpyHostToDevice);
    bool ok_b = true, ok_r = true;
    const long long b = run<0, 1>(d_in, d_out, d_cyc, lists, n, want, ok_b);
    long long r;
    if (n <= 256) r = run<1, 1>(d_in, d_out, d_cyc, lists, n, want, ok_r);
    else if (n <= 1024) r = run<1, 4>(d_in, d_out, d_cyc, lists, n, want, ok_r);
    else r = run<1, 16>(d_in, d_out, d_cyc, lists, n, want, ok_r);
    std::printf("%6d %14lld %14lld %8s\n", n, b, r, ok_b && ok_r ? "yes" : "NO");
  }
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("err %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
