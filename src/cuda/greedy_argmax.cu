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
// kUnroll 16-byte loads in flight (block_row_stream.cuh), folds every logit
// into one packed (order key, index) maximum and a NaN / +inf flag, and one
// block reduction ends the row: no workspace, no atomics, no second phase.
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

template <class T, class Policy>
__global__ void __launch_bounds__(Policy::kThreads) greedy_argmax_kernel(const void* logits, int64_t row_stride,
                                                                         int32_t vocab, SampleOutputs out) {
  using Reduce = cub::BlockReduce<GreedyBest, Policy::kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const int64_t row = blockIdx.x;
  const T* x = static_cast<const T*>(logits) + row * row_stride;
  GreedyBest mine{0, 0};
  block_stream_row<Policy::kThreads, Policy::kUnroll>(x, vocab, [&](int32_t i, float v) {
    mine.bad |= !(v < __builtin_huge_valf()) ? 1 : 0;  // NaN or +inf
    if (v > -__builtin_huge_valf()) {
      const uint64_t p = pack_order(contract::order_key(v), (uint32_t)i);
      mine.best = p > mine.best ? p : mine.best;
    }
  });
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
