// Device-side stop conditions and token streaming (see gpu_finalize.cuh).
#include "gpu_finalize.cuh"
#include "gpu_model.cuh"

namespace decode {
namespace {

constexpr int kFinalizeThreads = 256;

__global__ void finalize_kernel(FinalizeParams p) {
  // Every thread reads the counter before thread 0 advances it (after the barrier).
  const uint64_t step = *p.step;
  for (int64_t b = threadIdx.x; b < p.batch; b += kFinalizeThreads) {
    int32_t tok = p.eos;
    if (!p.finished[b]) {
      const int32_t s = p.sampled[b];
      if (s < 0) {
        *(volatile int32_t*)p.error = 1;
        p.finished[b] = 1;
      } else {
        tok = s;
        const int32_t gen = p.generated[b] + 1;
        p.generated[b] = gen;
        if (tok == p.eos || gen >= p.max_tokens[b]) p.finished[b] = 1;
      }
    }
    p.tokens_in[b] = tok;
    if (p.offsets) p.offsets[b] = step + 1;
    if (p.history) p.history[step * p.batch + b] = tok;
    if (p.ring) p.ring[(int64_t)(step % (uint64_t)p.ring_slots) * p.batch + b] = tok;
  }
  // The ring writes must be visible to the host before the counter that
  // announces them.
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();  // cumulative: covers the writes the barrier made visible to us
    *p.step = step + 1;
    if (p.published) *(volatile unsigned long long*)p.published = step + 1;
  }
}

}  // namespace

void launch_finalize(const FinalizeParams& p, cudaStream_t stream) {
  finalize_kernel<<<1, kFinalizeThreads, 0, stream>>>(p);
  DECODE_LAUNCHED();
}

}  // namespace decode
