// Plain rows at large batch: one CTA streams one whole row and runs the
// contract's exponential race over it.  No chunks, no candidates, no merge.
//
// A plain row (no min-p, top-k or top-p) keeps every eligible token, so its
// result is the race winner over the whole row (the largest z - ln E, E =
// -ln U from Philox(seed, offset, i), ties to the lowest index), the count of
// eligible tokens and the row status: all exact under any split of the row
// (a max and an integer sum), so this kernel gives the chunked kernel's bits
// and the choice, made from the batch size, cannot change a row's result.
// The log-prob is not exact under a split (it needs the row's softmax mass,
// summed in the chunked kernel's order), so calls that ask for it keep the
// chunked kernel.
//
// Why a separate kernel: the chunked kernel's plain rows cost 5x the memory
// floor at B >= 256 (631 us at B = 1024, fp32, V = 129,280): each 4,096-logit
// chunk CTA pays the chunk statistics, two block reductions, its own bar and
// a summary, a ticket and a merge per row, and its bar starts from the chunk's
// own best token only.  Here one pass does, per logit: the raw NaN-propagating
// max (status), z = x / T and eligibility (kept count), and the race.
//
// The race is pruned by two bounds, as in the chunk phase (v10c-v11 in
// docs/perf-notes.md): a group of four tokens (one Philox-4x32-10 call) whose
// best z + kMaxRaceBoost is below the bar skips its Philox call, and a token
// whose upper bound z - ln(1 - U) (as -ln U >= 1 - U), taken with the fast log
// and a margin, is below the bar skips the two contract logs of its exact
// score (tested in the log2 domain on U's integer numerator: see may_win).
// The bar is always a real token's exact score, so the winner (whose bound is
// at least its score, at least the bar) is never skipped.  It starts high:
// before the pass each thread scores one token spread over the row and the
// block takes the best of those 512 scores; after every round of loads each
// warp shares its lanes' best, and (kBlockBar) posts it to the block's bar by
// one shared atomic max whose old value it takes back, so a high score found
// by any warp raises every warp's bar within a round.
//
// The group test (kGroupTest): before the four per-token skip tests, one
// test for the whole group with its largest z and its smallest h (h falls as
// the Philox word r grows, so the smallest h is the largest r's): when that
// pair passes, every token of the group passes (lg2 and the FFMA are monotone
// and only the pair's own roundings enter, the same error terms the
// per-token test's margin covers), so the group is skipped after one lg2
// instead of four.  With the bar near the row's best score almost every group
// passes it (perf-notes v69).  The group's statistics (kGroupStats) come from
// its largest and smallest logits (the row max, the eligible count, the
// largest z by one division), and each token's z is formed only when the
// group test fails.
//
// Cost: the race is issue-bound, ~29 instructions a token executed (fp32,
// B = 1024, Nsight Compute, v69b; 36.6 before the group test and the group
// statistics), a quarter of a Philox call (~11) the largest part, at 0.64
// instructions issued a cycle; so bf16 rows take about as long as fp32
// rows.  fp32 streams 3 vectors a round, bf16 / fp16 2, each round loaded
// one round ahead (PlainRacePolicy).
//
// Failure modes: a row whose vectors do not start on a Philox group (i0 % 4
// != 0: padded strides that are not a multiple of 4 logits) takes a Philox
// call per token instead of per four (correct, tested; not timed); rows with
// every token within kMaxRaceBoost of the bar (flat rows) pay the Philox call
// for every group, as the bound test needs each token's uniform.  A row is
// read exactly once.
#include <cub/block/block_reduce.cuh>

#include "cuda/block_row_stream.cuh"
#include "cuda/cuda_utils.cuh"
#include "cuda/plain_race.hpp"

namespace tokensift::cuda_detail {

// lg2.approx with denormals flushed (x is 0 or >= 1 here): one MUFU, none of
// the scaling __log2f adds for subnormal inputs.
__device__ __forceinline__ float fast_lg2(float x) {
  float r;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// The contract's exact score, out of line by default
// (TOKENSIFT_PLAIN_RACE_NOINLINE_SCORE): its two contract logs run for a few
// tokens in a thousand, and inlined they held registers across the hot loop
// that a deeper load pipeline needs (fp32 3 loads ahead at 64 registers:
// 254 -> 233 us at B = 1024, perf-notes v26).
#if TOKENSIFT_PLAIN_RACE_NOINLINE_SCORE
#define TS_EXACT_SCORE_LINKAGE __noinline__
#else
#define TS_EXACT_SCORE_LINKAGE __forceinline__
#endif
__device__ TS_EXACT_SCORE_LINKAGE float exact_race_score(float z, uint32_t bits) {
  return contract::race_score_from_bits(z, bits);
}
#undef TS_EXACT_SCORE_LINKAGE

struct PlainRaceState {
  uint64_t best;  // pack_order(order_key(score), i) of the race leader; 0 = none yet
  float xmax;     // NaN-propagating max of the raw logits (status)
  int eligible;   // tokens with z > -inf
};
struct PlainRaceStateOp {
  __device__ PlainRaceState operator()(const PlainRaceState& a, const PlainRaceState& b) const {
    return {a.best > b.best ? a.best : b.best, max_nan(a.xmax, b.xmax), a.eligible + b.eligible};
  }
};

template <class T, class Policy>
__global__ void __launch_bounds__(Policy::kThreads, Policy::kMinBlocksPerSm)
    plain_race_kernel(const void* logits, int64_t row_stride, int32_t vocab, SamplingParams p, SampleOutputs out) {
  using Reduce = cub::BlockReduce<PlainRaceState, Policy::kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  __shared__ uint32_t bar_key;
  constexpr float kInf = __builtin_huge_valf();
  constexpr int kVec = 16 / (int)sizeof(T);
  const int64_t row = blockIdx.x;
  const T* x = static_cast<const T*>(logits) + row * row_stride;
  const float temperature = p.temperature.value;
  const bool unit = temperature == 1.0f;  // x / 1 == x exactly
  const uint64_t seed = p.seed.at(row), offset = p.offset.at(row);

  // The first bar: the best exact score of one token per thread, spread over
  // the row (a real token's score, so a valid bar).
  if (threadIdx.x == 0) bar_key = 0;
  __syncthreads();
  {
    const int32_t i = (int32_t)((int64_t)threadIdx.x * vocab / Policy::kThreads);
    const float xi = to_float(x[i]);
    const float z = unit ? xi : contract::scale(xi, temperature);
    if (z > -kInf && z < kInf)
      atomicMax(&bar_key, contract::order_key(contract::race_score(z, seed, offset, (uint32_t)i)));
  }
  __syncthreads();
  float bar = bar_key ? contract::key_to_float(bar_key) : -kInf;

  PlainRaceState mine{0, -kInf, 0};
  // The skip test in the log2 domain (contract::race_skip_h and _cut): an
  // exponent trick, one fast lg2 and one FFMA a token, no conversion.  The
  // fast lg2 errs by < 2^-21 and the FFMA by < 2e-4 for |z| < kSkipMaxAbsZ,
  // far inside the margin (tests/cpu/test_contract.cpp checks the bound over
  // every U with the token's own score as the bar).
  // The bar's two derived thresholds, formed again only when the bar moves
  // (the same values as forming them at each use).
  float bar_cut = contract::race_skip_cut(bar, Policy::kSkipMargin);  // +inf while bar is -inf
  float bar_low = bar - Policy::kSkipMargin;
  auto raise_bar = [&](float s) {
    if (s > bar) {
      bar = s;
      bar_cut = contract::race_skip_cut(bar, Policy::kSkipMargin);
      bar_low = bar - Policy::kSkipMargin;
    }
  };
  auto may_win = [&](float z, uint32_t bits, float c) {  // no branches: bitwise | on bools
    return (fabsf(z) >= Policy::kSkipMaxAbsZ) | !(fast_lg2(contract::race_skip_h(bits)) > fmaf(z, contract::kLog2E, c));
  };
  // Tokens whose best z is this low cannot win, whatever their uniforms.
  auto beaten = [&](float zmax) { return zmax + contract::kMaxRaceBoost < bar_low; };
  // The exact score of a token that may win.
  auto score = [&](float z, uint32_t i, uint32_t bits) {
    const float s = exact_race_score(z, bits);
    const uint64_t q = pack_order(contract::order_key(s), i);
    if (q > mine.best) {
      mine.best = q;
      raise_bar(s);
    }
  };
  // One token with its own Philox call (head, tail, unaligned vectors).
  auto visit = [&](int32_t i, float xi) {
    mine.xmax = max_nan(mine.xmax, xi);
    const float z = unit ? xi : contract::scale(xi, temperature);
    if (!(z > -kInf)) return;  // NaN tokens never are (the row is rejected anyway)
    ++mine.eligible;
    if (beaten(z)) return;
    const uint32_t bits = contract::token_bits(seed, offset, (uint32_t)i);
    if (may_win(z, bits, bar_cut)) score(z, (uint32_t)i, bits);
  };
  auto vector = [&](int32_t i0, const uint4& raw) {
    const T* e = reinterpret_cast<const T*>(&raw);
    if ((i0 & 3) != 0) {
#pragma unroll
      for (int k = 0; k < kVec; ++k) visit(i0 + k, to_float(e[k]));
      return;
    }
#pragma unroll
    for (int g = 0; g < kVec / 4; ++g) {  // one Philox group of four tokens
      float x[4];
#pragma unroll
      for (int w = 0; w < 4; ++w) x[w] = to_float(e[4 * g + w]);
      float zm;  // the group's largest z
      if constexpr (Policy::kGroupStats) {
        // The group's statistics from its largest and smallest logits:
        // x / T is monotone, so max z = scale(max x) and the four are
        // eligible when scale(min x) > -inf (one division a group, not
        // four).  A NaN makes xm NaN (the row's status; the group is
        // skipped below, its tokens never race) and may be counted as
        // eligible by xn, whose count a rejected row never reports.
        const float xm = max_nan(max_nan(x[0], x[1]), max_nan(x[2], x[3]));
        const float xn = fminf(fminf(x[0], x[1]), fminf(x[2], x[3]));
        mine.xmax = max_nan(mine.xmax, xm);
        zm = unit ? xm : contract::scale(xm, temperature);
        const float zn = unit ? xn : contract::scale(xn, temperature);
        if (zn > -kInf) {
          mine.eligible += 4;
        } else {
#pragma unroll
          for (int w = 0; w < 4; ++w) mine.eligible += (unit ? x[w] : contract::scale(x[w], temperature)) > -kInf;
        }
      } else {
        zm = -kInf;
#pragma unroll
        for (int w = 0; w < 4; ++w) {
          mine.xmax = max_nan(mine.xmax, x[w]);
          const float zz = unit ? x[w] : contract::scale(x[w], temperature);
          mine.eligible += zz > -kInf;
          zm = fmaxf(zm, zz);
        }
      }
      if (!(zm > -kInf) || beaten(zm)) continue;
      const uint32_t i = (uint32_t)(i0 + 4 * g);
      const contract::Philox4 r = contract::philox_block(seed, offset, i >> 2);
      const float c = bar_cut;
      if constexpr (Policy::kGroupTest) {
        const uint32_t rmax = ::max(::max(r.v[0], r.v[1]), ::max(r.v[2], r.v[3]));
        if (fabsf(zm) < Policy::kSkipMaxAbsZ && fast_lg2(contract::race_skip_h(rmax)) > fmaf(zm, contract::kLog2E, c))
          continue;
      }
      // The four tests, without branches; the exact scores only when one
      // of them asks (a warp pays them when any lane does).  A NaN or -inf z
      // fails its own test (z > -inf).
      float z[4];
      bool need[4];
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        z[w] = unit ? x[w] : contract::scale(x[w], temperature);
        need[w] = (z[w] > -kInf) & may_win(z[w], r.v[w], c);
      }
      if (need[0] | need[1] | need[2] | need[3]) {
#pragma unroll
        for (int w = 0; w < 4; ++w)
          if (need[w]) score(z[w], i + w, r.v[w]);
      }
    }
  };
  auto round_done = [&] {  // each warp shares its lanes' best (and the block's, kBlockBar)
    uint32_t k = __reduce_max_sync(0xffffffffu, contract::order_key(bar));
    if constexpr (Policy::kBlockBar) {
      uint32_t old = 0;
      if ((threadIdx.x & 31) == 0) old = atomicMax(&bar_key, k);
      old = __shfl_sync(0xffffffffu, old, 0);
      k = old > k ? old : k;
    }
    raise_bar(contract::key_to_float(k));
  };
  if constexpr (Policy::kAhead)
    block_stream_row_vec_ahead<Policy::kThreads, Policy::kUnroll>(x, vocab, visit, vector, round_done);
  else
    block_stream_row_vec<Policy::kThreads, Policy::kUnroll>(x, vocab, visit, vector, round_done);

  const PlainRaceState r = Reduce(temp).Reduce(mine, PlainRaceStateOp{});
  if (threadIdx.x != 0) return;
  // The same decisions, in the same order, as the chunked kernel's merge.
  int32_t status = TOKENSIFT_ROW_OK, token = -1, kept = 0;
  if (!(r.xmax < kInf)) {
    status = TOKENSIFT_ROW_NAN_INPUT;  // NaN or +inf
  } else if (!(r.xmax > -kInf)) {
    status = TOKENSIFT_ROW_NO_VALID_TOKEN;
  } else if ((unit ? r.xmax : contract::scale(r.xmax, temperature)) == kInf) {
    status = TOKENSIFT_ROW_NAN_INPUT;  // x / T overflowed
  } else if (r.eligible == 0) {
    status = TOKENSIFT_ROW_NO_VALID_TOKEN;
  } else {
    token = (int32_t)packed_index(r.best);
    kept = r.eligible;
  }
  out.tokens[row] = token;
  if (out.row_status) out.row_status[row] = status;
  if (out.kept_counts) out.kept_counts[row] = kept;
}

bool plain_race_applies(const LogitsView& logits, const SamplingParams& p, const SampleOutputs& out) {
  if (out.logprobs != nullptr) return false;  // the mass is not split-exact (see above)
  if (p.temperature.per_row || p.min_p.per_row || p.top_k.per_row || p.top_p.per_row) return false;
  if (logits.rows < PlainRacePolicy<4>::kMinRows || logits.rows > 0x7fffffffLL) return false;
  if (contract::is_greedy_temperature(p.temperature.value)) return false;
  const bool k_active = p.top_k.value > 0 && (int64_t)p.top_k.value < logits.vocab;
  return !(p.min_p.value > 0.0f) && !k_active && !(p.top_p.value < 1.0f);
}

cudaError_t launch_plain_race(const LogitsView& logits, const SamplingParams& params, const SampleOutputs& out,
                              cudaStream_t stream) {
  const dim3 grid((unsigned)logits.rows), block(PlainRacePolicy<4>::kThreads);
  const int32_t vocab = (int32_t)logits.vocab;
  switch (logits.dtype) {
    case DType::kF32:
      plain_race_kernel<float, PlainRacePolicy<4>>
          <<<grid, block, 0, stream>>>(logits.data, logits.row_stride, vocab, params, out);
      break;
    case DType::kBF16:
      plain_race_kernel<__nv_bfloat16, PlainRacePolicy<2>>
          <<<grid, block, 0, stream>>>(logits.data, logits.row_stride, vocab, params, out);
      break;
    case DType::kF16:
      plain_race_kernel<__half, PlainRacePolicy<2>>
          <<<grid, block, 0, stream>>>(logits.data, logits.row_stride, vocab, params, out);
      break;
  }
  return cudaGetLastError();
}

}  // namespace tokensift::cuda_detail
