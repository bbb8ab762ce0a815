// Probe: what the cluster kernel's stage shapes cost on their own: (1)
// straight-line code that runs once per launch, (2) a cluster barrier, (3)
// a mailbox exchange (cluster_mailbox.cuh) among 16 CTAs.
//
// Why: the cluster kernel's stages at B = 1 take 0.6-0.9 us each even where
// they do almost no work (perf-notes v63's trace: the first round's count,
// 96 compares a thread, 0.89 us), Nsight Compute puts 24 % of its stall
// samples on instruction fetch, and v64's rewrite of the list phase from
// 32 unrolled items into a loop over set bits took 1.9 us off.  If a
// launch's code is fetched cold at some bytes per cycle, a stage's time is
// its unrolled code's size over that rate, whatever its arithmetic.
//
// Kernels: N FFMAs a thread on 8 independent chains (no chain waits on
// another), either straight-line (N instructions of code, fetched once) or
// as a rolled loop of N / 64 trips over a 64-FFMA body (the same work from
// ~1 KiB of code).  clock64 around the block, thread 0 of each CTA; 16
// CTAs of 256 threads (the cluster kernel's shape, no cluster).  Each
// kernel is timed cold (after a launch of another kernel that runs 256 KiB
// of its own code) and warm (right after itself), median of 50 launches.
//
// (2) and (3): a cluster of 16 CTAs of 256 threads runs 32 exchanges in a
// row, each either cluster.sync after thread t < 16 stores a 16-byte word
// into CTA t (the kernel's form up to v65) or a mailbox exchange of the
// same words (v66's form); cycles per exchange of CTA 0.
//
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc dev/stage_cost_probe.cu -o /tmp/stage_cost_probe
//   /tmp/stage_cost_probe
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cuda/cluster_mailbox.cuh"

namespace {
using namespace tokensift::cuda_detail;

constexpr int kThreads = 256, kCtas = 16, kLaunches = 50;

template <int N>
__device__ __forceinline__ void ffma_straight(float (&a)[8], float c, float d) {
#pragma unroll
  for (int i = 0; i < N; ++i) a[i % 8] = fmaf(a[i % 8], c, d);
}

template <int N, bool kRolled, int kTag = 0>
__global__ void __launch_bounds__(kThreads) ifetch_kernel(const float* in, float* out, long long* cycles) {
  float a[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) a[i] = in[i] + (float)threadIdx.x;
  const float c = in[8], d = in[9];
  __syncthreads();
  const long long t0 = clock64();
  if constexpr (kRolled) {
#pragma unroll 1
    for (int t = 0; t < N / 64; ++t) ffma_straight<64>(a, c, d);
  } else {
    ffma_straight<N>(a, c, d);
  }
  __syncthreads();
  const long long t1 = clock64();
  float s = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) s += a[i];
  out[blockIdx.x * kThreads + threadIdx.x] = s;
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

template <int N, bool kRolled>
void measure(const float* in, float* out, long long* cyc) {
  std::vector<long long> cold, warm, h(kCtas);
  for (int l = 0; l < kLaunches; ++l) {
    ifetch_kernel<16384, false, 1><<<kCtas, kThreads>>>(in, out, cyc);  // another kernel's 256 KiB of code
    ifetch_kernel<N, kRolled><<<kCtas, kThreads>>>(in, out, cyc);
    cudaMemcpy(h.data(), cyc, sizeof(long long) * kCtas, cudaMemcpyDeviceToHost);
    cold.push_back(*std::max_element(h.begin(), h.end()));
    ifetch_kernel<N, kRolled><<<kCtas, kThreads>>>(in, out, cyc);
    cudaMemcpy(h.data(), cyc, sizeof(long long) * kCtas, cudaMemcpyDeviceToHost);
    warm.push_back(*std::max_element(h.begin(), h.end()));
  }
  std::sort(cold.begin(), cold.end());
  std::sort(warm.begin(), warm.end());
  const double c = (double)cold[kLaunches / 2], w = (double)warm[kLaunches / 2];
  std::printf("%-9s N %6d  code %7.1f KiB  cold %8.0f cyc (%5.2f cyc/instr)  warm %8.0f cyc (%5.2f cyc/instr)\n",
              kRolled ? "rolled" : "straight", N, kRolled ? 1.0 : N * 16.0 / 1024.0, c, c / N, w, w / N);
}

constexpr int kExchanges = 32;

template <bool kMailbox>
__global__ void __cluster_dims__(kCtas, 1, 1) __launch_bounds__(kThreads) exchange_kernel(long long* cycles, int* out) {
  namespace cg = cooperative_groups;
  __shared__ uint4 words[kExchanges][kCtas];
  __shared__ uint64_t box[kExchanges];
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  if (threadIdx.x == 0) {
    for (int e = 0; e < kExchanges; ++e) {
      mailbox_init(&box[e]);
      mailbox_expect(&box[e], kCtas * sizeof(uint4));
    }
    mailbox_init_fence();
  }
  cluster.sync();
  int acc = 0;
  const long long t0 = clock64();
#pragma unroll 1
  for (int e = 0; e < kExchanges; ++e) {
    const uint4 v = make_uint4(rank, (unsigned)e, (unsigned)acc, 0u);
    if (kMailbox) {
      if (threadIdx.x < kCtas) mailbox_send(&words[e][rank], &box[e], threadIdx.x, v);
      mailbox_wait(&box[e]);
    } else {
      if (threadIdx.x < kCtas) *cluster.map_shared_rank(&words[e][rank], threadIdx.x) = v;
      cluster.sync();
    }
    acc += (int)words[e][(e + 1) % kCtas].x;  // the next exchange depends on this one
  }
  const long long t1 = clock64();
  cluster.sync();  // no CTA leaves while another may still write to it
  if (threadIdx.x == 0) {
    out[blockIdx.x] = acc;
    if (rank == 0) cycles[blockIdx.x / kCtas] = t1 - t0;
  }
}

template <bool kMailbox>
void measure_exchange(long long* cyc, int* out) {
  std::vector<long long> c;
  long long h = 0;
  // 16 CTAs a cluster is past the portable 8.
  cudaFuncSetAttribute(exchange_kernel<kMailbox>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  for (int l = 0; l < kLaunches; ++l) {
    cudaMemset(cyc, 0, sizeof(long long));
    exchange_kernel<kMailbox><<<kCtas, kThreads>>>(cyc, out);
    if (cudaGetLastError() != cudaSuccess) {
      std::printf("%s: launch failed\n", kMailbox ? "mailbox" : "cluster.sync");
      return;
    }
    cudaMemcpy(&h, cyc, sizeof(long long), cudaMemcpyDeviceToHost);
    c.push_back(h);
  }
  std::sort(c.begin(), c.end());
  std::printf("%-14s %d exchanges among 16 CTAs: %8.0f cyc, %6.0f cyc an exchange\n",
              kMailbox ? "mailbox" : "cluster.sync", kExchanges, (double)c[kLaunches / 2],
              (double)c[kLaunches / 2] / kExchanges);
}

}  // namespace

int main() {
  float *in, *out;
  long long* cyc;
  cudaMalloc(&in, 64 * sizeof(float));
  cudaMalloc(&out, kCtas * kThreads * sizeof(float));
  cudaMalloc(&cyc, kCtas * sizeof(long long));
  std::vector<float> h(64, 0.999f);
  cudaMemcpy(in, h.data(), 64 * sizeof(float), cudaMemcpyHostToDevice);
  std::printf("16 CTAs x 256 threads; FFMAs a thread on 8 chains; cycles of the slowest CTA, median of %d\n",
              kLaunches);
  measure<256, false>(in, out, cyc);
  measure<256, true>(in, out, cyc);
  measure<1024, false>(in, out, cyc);
  measure<1024, true>(in, out, cyc);
  measure<4096, false>(in, out, cyc);
  measure<4096, true>(in, out, cyc);
  measure<16384, false>(in, out, cyc);
  measure<16384, true>(in, out, cyc);
  int* iout;
  cudaMalloc(&iout, kCtas * sizeof(int));
  measure_exchange<false>(cyc, iout);
  measure_exchange<true>(cyc, iout);
  measure_exchange<false>(cyc, iout);
  measure_exchange<true>(cyc, iout);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("err %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
