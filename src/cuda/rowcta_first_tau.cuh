// The row-CTA kernel's first tau (pivot_rowcta.cuh): a Gaussian fit of a
// sample of the row, aimed at its top kAim.
#pragma once

#include "cuda/pivot_chunk.cuh"

namespace tokensift::cuda_detail {

// The first tau from a sample of the row (a 16-byte vector per thread: 4
// fp32 or 8 16-bit logits): the row's top kAim by a Gaussian fit (a guess;
// the compactions correct it).  The fit is taken twice, the second time
// without the samples beyond kRowCtaTrimSigmas of the first: one sampled
// outlier (a dominant token of 30 among N(0, 1) logits) inflates sigma
// enough that tau overshoots the row's k-th and the row is streamed again
// (measured: B = 256 dominant rows 156 us against 105 on the chunked
// kernel).  Each fit is one warp
// butterfly per sum (every lane ends with the same bits: a + b == b + a)
// and one barrier, after which every thread adds the warps' partials in the
// same order and derives the same bound and guess itself: a CUB reduction
// per fit and a thread-0 section per result cost ~1.7 us of the row's
// stages (dev/rowcta_trace.cu, perf-notes v26).  tau is a heuristic: its
// bits never reach a result.
template <class Policy, int kAim, int kS>
__device__ __forceinline__ void rowcta_first_tau_impl(const float (&s)[kS], int32_t vocab, uint64_t& tau_sh) {
  constexpr int kWarps = Policy::kThreads / 32;
  __shared__ ChunkStats part[2][kWarps];
  const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31u);
  float bound = __builtin_huge_valf();
  ChunkStats r{};
  for (int fit = 0; fit < 2; ++fit) {
    ChunkStats st{-__builtin_huge_valf(), 0, 0, 0.0f, 0.0f};
#pragma unroll
    for (int q = 0; q < kS; ++q)
      if (s[q] <= bound) add_sample(st, s[q]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      st.nsample += __shfl_xor_sync(0xffffffffu, st.nsample, o);
      st.sum += __shfl_xor_sync(0xffffffffu, st.sum, o);
      st.sumsq += __shfl_xor_sync(0xffffffffu, st.sumsq, o);
    }
    if (lane == 0) part[fit][warp] = st;
    __syncthreads();
    r = ChunkStats{-__builtin_huge_valf(), vocab, 0, 0.0f, 0.0f};
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      r.nsample += part[fit][w].nsample;
      r.sum += part[fit][w].sum;
      r.sumsq += part[fit][w].sumsq;
    }
    bound = r.nsample > 1 ? sample_mean(r) + Policy::kRowCtaTrimSigmas * sqrtf(fmaxf(sample_var(r), 0.0f))
                          : __builtin_huge_valf();
  }
  if (threadIdx.x == 0) {
    const bool spread = r.nsample > 1 && sample_var(r) > 0.0f;
    const float t = spread && vocab > kAim ? gaussian_guess(r, false, kAim, kAim)
                        : -__builtin_huge_valf();
    tau_sh = t > -3.4028235e38f && t < __builtin_huge_valf() ? pack_order(contract::order_key(t), 0xffffffffu) : 1ull;
  }
}
// A 16-byte vector's logits per thread: 4 (fp32) or 8 (16-bit types), passed
// by value so that they stay in registers across the call.
template <class Policy, int kAim>
__device__ __noinline__ void rowcta_first_tau(float s0, float s1, float s2, float s3, int32_t vocab,
                                              uint64_t& tau_sh) {
  const float s[4] = {s0, s1, s2, s3};
  rowcta_first_tau_impl<Policy, kAim, 4>(s, vocab, tau_sh);
}
template <class Policy, int kAim>
__device__ __noinline__ void rowcta_first_tau(float s0, float s1, float s2, float s3, float s4, float s5, float s6,
                                              float s7, int32_t vocab, uint64_t& tau_sh) {
  const float s[8] = {s0, s1, s2, s3, s4, s5, s6, s7};
  rowcta_first_tau_impl<Policy, kAim, 8>(s, vocab, tau_sh);
}

}  // namespace tokensift::cuda_detail
