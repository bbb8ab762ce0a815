// Greedy rows at large batch: one CTA streams one whole row and reduces its
// argmax.  Nothing else.
//
// Why a separate kernel: greedy asks for the largest logit (ties to the lowest
// index) and the row's status, which is exact under any split of the row, so
// the result cannot depend on how the work is cut.  The pivot kernel's chunk
// CTAs (4,096 logits each, a summary, a ticket and a merging CTA per row) pay
// a fixed cost per 16 KB (fp32) or 8 KB (bf16) of logits that dominates at
// large batch: 2.2x the memory floor in fp32 and 4x in bf16 at B >= 256
// (bench/results/sampler-h200-2026-11-29.md).  Here each thread keeps
// kUnroll 16-byte loads in flight (block_row_stream.cuh) and reduces each
// vector to its NaN-propagating max with packed instructions (bf16x2 / half2
// max: three per 8 logits), keeping the first vector that raised its running
// max; only at the end does it look for the max's position inside that one
// vector.  A per-logit packed (key, index) maximum cost ~12 instructions a
// logit, which at 2 bytes a logit made the bf16 loop issue-bound (1.9-2.3x the
// floor, perf-notes v9).  One block reduction ends the row: no workspace, no
// atomics, no second phase.
//
// Used by launch_pivot only when every row is greedy by a scalar temperature
// and no per-row parameter array is given (so no row can carry an invalid
// per-row value that must come back as INVALID_PARAM), from
// GreedyPolicy::kMinRows rows: below that, one CTA per row leaves SMs idle
// and the chunked kernel is faster.  Failure modes: none beyond the pivot
// path's; a row is read exactly once.
#include <cub/block/block_reduce.cuh>

#include "cuda/block_row_stream.cuh"
#include "cuda/cuda_utils.cuh"
#include "cuda/greedy_argmax.hpp"

namespace tokensift::cuda_detail {

struct GreedyBest {
  uint64_t best;  // pack_order(order_key(x), i) of the best non-NaN, > -inf logit; 0 = none
  int bad;        // saw a NaN or +inf
};
struct GreedyBestOp {
  __device__ GreedyBest operator()(const GreedyBest& a, const GreedyBest& b) const {
    return {a.best > b.best ? a.best : b.best, a.bad | b.bad};
  }
};

// NaN-propagating max of one 16-byte vector of logits, as a float (widening
// is exact and monotone, so the max of the floats is the float of the max).
__device__ __forceinline__ float vec_max_nan(const uint4& raw, float) {
  return max_nan(max_nan(__uint_as_float(raw.x), __uint_as_float(raw.y)),
                 max_nan(__uint_as_float(raw.z), __uint_as_float(raw.w)));
}
__device__ __forceinline__ float vec_max_nan(const uint4& raw, __nv_bfloat16) {
  const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&raw);
  const __nv_bfloat162 h = __hmax2_nan(__hmax2_nan(p[0], p[1]), __hmax2_nan(p[2], p[3]));
  return max_nan(__low2float(h), __high2float(h));
}
__device__ __forceinline__ float vec_max_nan(const uint4& raw, __half) {
  const __half2* p = reinterpret_cast<const __half2*>(&raw);
  const __half2 h = __hmax2_nan(__hmax2_nan(p[0], p[1]), __hmax2_nan(p[2], p[3]));
  return max_nan(__low2float(h), __high2float(h));
}

template <class T, class Policy>
__global__ void __launch_bounds__(Policy::kThreads) greedy_argmax_kernel(const void* logits, int64_t row_stride,
                                                                         int32_t vocab, SampleOutputs out) {
  using Reduce = cub::BlockReduce<GreedyBest, Policy::kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const int64_t row = blockIdx.x;
  const T* x = static_cast<const T*>(logits) + row * row_stride;
  constexpr int kVec = 16 / (int)sizeof(T);
  GreedyBest mine{0, 0};
  // Head and tail, element by element.
  auto scalar = [&](int32_t i, float v) {
    mine.bad |= !(v < __builtin_huge_valf()) ? 1 : 0;  // NaN or +inf
    if (v > -__builtin_huge_valf()) {
      const uint64_t p = pack_order(contract::order_key(v), (uint32_t)i);
      mine.best = p > mine.best ? p : mine.best;
    }
  };
  // Whole vectors: the running max and the first vector that reached it (a
  // thread's vectors come in increasing index, so strict > keeps the first).
  float vmax = -__builtin_huge_valf();
  uint4 vbest = make_uint4(0u, 0u, 0u, 0u);
  int32_t vbest_i0 = -1;
  int vnan = 0;
  block_stream_row_vec<Policy::kThreads, Policy::kUnroll>(x, vocab, scalar, [&](int32_t i0, const uint4& raw) {
    const float m = vec_max_nan(raw, T{});
    vnan |= m != m;
    if (m > vmax) {
      vmax = m;
      vbest = raw;
      vbest_i0 = i0;
    }
  });
  mine.bad |= vnan | (vmax == __builtin_huge_valf());
  if (vbest_i0 >= 0) {  // the max's first position in its vector (keys fold -0 onto +0, as == does)
    const T* e = reinterpret_cast<const T*>(&vbest);
    int k0 = kVec - 1;
#pragma unroll
    for (int k = kVec - 1; k >= 0; --k)
      if (to_float(e[k]) == vmax) k0 = k;
    const uint64_t p = pack_order(contract::order_key(vmax), (uint32_t)(vbest_i0 + k0));
    mine.best = p > mine.best ? p : mine.best;
  }
  const GreedyBest r = Reduce(temp).Reduce(mine, GreedyBestOp{});
  if (threadIdx.x != 0) return;
  const float kNan = __int_as_float(0x7fffffff);
  int32_t status = TOKENSIFT_ROW_OK, token = -1, kept = 0;
  float logprob = kNan;
  if (r.bad) {
    status = TOKENSIFT_ROW_NAN_INPUT;
  } else if (r.best == 0) {
    status = TOKENSIFT_ROW_NO_VALID_TOKEN;
  } else {
    token = (int32_t)packed_index(r.best);
    kept = 1;
    logprob = 0.0f;
  }
  out.tokens[row] = token;
  if (out.row_status) out.row_status[row] = status;
  if (out.logprobs) out.logprobs[row] = logprob;
  if (out.kept_counts) out.kept_counts[row] = kept;
}

bool greedy_argmax_applies(const LogitsView& logits, const SamplingParams& p) {
  const bool scalar_only = p.temperature.per_row == nullptr && p.min_p.per_row == nullptr &&
                           p.top_k.per_row == nullptr && p.top_p.per_row == nullptr;
  return scalar_only && contract::is_greedy_temperature(p.temperature.value) &&
         logits.rows >= GreedyPolicy::kMinRows && logits.rows <= 0x7fffffffLL;
}

cudaError_t launch_greedy_argmax(const LogitsView& logits, const SampleOutputs& out, cudaStream_t stream) {
  const dim3 grid((unsigned)logits.rows), block(GreedyPolicy::kThreads);
  const int32_t vocab = (int32_t)logits.vocab;
  switch (logits.dtype) {
    case DType::kF32:
      greedy_argmax_kernel<float, GreedyPolicy><<<grid, block, 0, stream>>>(logits.data, logits.row_stride, vocab, out);
      break;
    case DType::kBF16:
      greedy_argmax_kernel<__nv_bfloat16, GreedyPolicy>
          <<<grid, block, 0, stream>>>(logits.data, logits.row_stride, vocab, out);
      break;
    case DType::kF16:
      greedy_argmax_kernel<__half, GreedyPolicy><<<grid, block, 0, stream>>>(logits.data, logits.row_stride, vocab, out);
      break;
  }
  return cudaGetLastError();
}

}  // namespace tokensift::cuda_detail
