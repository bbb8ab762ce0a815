// What the per-call memset node costs at small batch (perf-notes 1(h)).
//
// Every pivot call is a cudaMemsetAsync of its counters (a few hundred bytes)
// then the chunked kernel.  In a graph the memset is its own node and the
// kernel waits for it.  This probe times, per call, R calls captured in one
// graph (inputs rotated past L2, as sampler_bench does) of:
//   A. a memset of 1 KiB + a 32-CTA kernel that reads one 129,280-float row
//      (argmax per CTA, ticket, last CTA reduces: the chunked kernel's shape);
//   B. the same kernel alone, its ticket reset by the last CTA;
//   C. an empty 32-CTA kernel, with and without the memset;
//   D. A with a 1-CTA clearing kernel in place of the memset, launched
//      plainly, and as the primary of a programmatic dependent launch (the
//      argmax kernel then waits for it, griddepcontrol.wait, only before its
//      ticket: the loads and the reduction overlap the clearing).
// The difference A - B is what a self-cleaning workspace would save; D is
// what a clearing kernel keeps of it.
//
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a dev/memset_probe.cu -o memset_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#define CK(x)                                                                       \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      std::printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      return 2;                                                                     \
    }                                                                               \
  } while (0)

constexpr int kThreads = 256;
constexpr int kChunk = 4096;

__global__ void __launch_bounds__(kThreads) argmax_kernel(const float* row, int vocab, unsigned* ticket,
                                                         unsigned long long* part, int* out) {
  __shared__ unsigned long long best_s[kThreads / 32];
  __shared__ bool last;
  const int base = blockIdx.x * kChunk;
  unsigned long long best = 0;
#pragma unroll
  for (int i = 0; i < kChunk / kThreads / 4; ++i) {
    const int idx = base + (i * kThreads + threadIdx.x) * 4;
    if (idx + 3 < vocab) {
      const float4 v = __ldcs(reinterpret_cast<const float4*>(row + idx));
      const float e[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const unsigned b = __float_as_uint(e[j]);
        const unsigned key = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
        const unsigned long long k = ((unsigned long long)key << 32) | (unsigned)~(idx + j);
        best = k > best ? k : best;
      }
    }
  }
  for (int o = 16; o; o >>= 1) {
    const unsigned long long t = __shfl_xor_sync(~0u, best, o);
    best = t > best ? t : best;
  }
  if ((threadIdx.x & 31) == 0) best_s[threadIdx.x >> 5] = best;
  __syncthreads();
  asm volatile("griddepcontrol.wait;" ::: "memory");  // no-op unless a programmatic dependent
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; ++w) best = best_s[w] > best ? best_s[w] : best;
    part[blockIdx.x] = best;
    __threadfence();
    last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  if (threadIdx.x < 32) {
    unsigned long long b = 0;
    for (int c = threadIdx.x; c < (int)gridDim.x; c += 32) {
      const unsigned long long t = __ldcg(part + c);
      b = t > b ? t : b;
    }
    for (int o = 16; o; o >>= 1) {
      const unsigned long long t = __shfl_xor_sync(~0u, b, o);
      b = t > b ? t : b;
    }
    if (threadIdx.x == 0) {
      *out = (int)~(unsigned)b;
      *ticket = 0;  // self-cleaning
    }
  }
}

// Zeroes n words, makes them visible, then lets the dependent start.
__global__ void clear_kernel(unsigned* p, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) p[i] = 0;
  __threadfence();
  __syncthreads();
  asm volatile("griddepcontrol.launch_dependents;");
}

__global__ void empty_kernel(int* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *out = 1;
}

int main() {
  const int vocab = 129280, chunks = (vocab + kChunk - 1) / kChunk;
  const size_t row_bytes = (size_t)vocab * sizeof(float);
  const int copies = 512;  // 264 MB: > 4x the 60 MB L2
  float* data;
  CK(cudaMalloc(&data, row_bytes * copies));
  CK(cudaMemset(data, 0x3c, row_bytes * copies));
  unsigned* ticket;
  unsigned long long* part;
  int* out;
  void* scratch;
  CK(cudaMalloc(&ticket, 4096));
  CK(cudaMemset(ticket, 0, 4096));
  CK(cudaMalloc(&part, 8 * chunks));
  CK(cudaMalloc(&out, 4));
  CK(cudaMalloc(&scratch, 1024));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  struct Variant {
    const char* name;
    bool memset, read;
    int clear;  // 0 none, 1 clearing kernel, 2 clearing kernel as a PDL primary
  } vs[] = {{"memset + argmax", true, true, 0},
            {"argmax alone", false, true, 0},
            {"memset + empty", true, false, 0},
            {"empty alone", false, false, 0},
            {"clear + argmax", false, true, 1},
            {"clear + argmax PDL", false, true, 2}};
  for (const Variant& v : vs) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < copies; ++i) {
      if (v.memset) CK(cudaMemsetAsync(scratch, 0, 1024, s));
      if (v.clear) clear_kernel<<<1, 256, 0, s>>>(static_cast<unsigned*>(scratch), 256);
      if (v.clear == 2) {
        cudaLaunchConfig_t cfg{};
        cfg.gridDim = dim3(chunks);
        cfg.blockDim = dim3(kThreads);
        cfg.stream = s;
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        CK(cudaLaunchKernelEx(&cfg, argmax_kernel, (const float*)(data + (size_t)i * vocab), vocab, ticket, part,
                              out));
      } else if (v.read)
        argmax_kernel<<<chunks, kThreads, 0, s>>>(data + (size_t)i * vocab, vocab, ticket, part, out);
      else
        empty_kernel<<<chunks, kThreads, 0, s>>>(out);
    }
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    std::vector<float> t;
    for (int r = 0; r < 15; ++r) {
      cudaEventRecord(e0, s);
      CK(cudaGraphLaunch(ge, s));
      cudaEventRecord(e1, s);
      CK(cudaEventSynchronize(e1));
      float ms;
      cudaEventElapsedTime(&ms, e0, e1);
      t.push_back(ms * 1e3f / copies);
    }
    std::sort(t.begin(), t.end());
    std::printf("%-20s %6.2f us per call (graph of %d calls, median of 15)\n", v.name, t[t.size() / 2], copies);
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
  }
  int h;
  CK(cudaMemcpy(&h, out, 4, cudaMemcpyDeviceToHost));
  std::printf("argmax of the last row: %d\n", h);
  return 0;
}
