// Plain rows from 32 rows on: each row streamed once and raced with the
// contract's exponential race, by one CTA per row from 128 rows and by the
// flat split below.  No chunks, no candidates, no merge.
//
// The flat split (v77), for calls of 32 to 127 rows: every row's body
// vectors, laid end to end over the batch, are cut into gridDim.x equal
// ranges, one a CTA (2 an SM; flat_split.cuh).  A CTA races each row
// segment of its range in turn; a row it holds whole it writes, a partial
// row it adds to the row's accumulators in the workspace (atomic max of the
// leader and of the raw max, atomic add of the count), and the segment that
// completes the row's vectors, by an acq_rel ticket, writes it.  Why: at
// 64 rows one CTA per row leaves 200 of 264 CTA slots idle, and the chunked
// kernel, which took these calls, pays a merge per row: the flat split takes
// 47-63 % off it at 64 rows (21-66 % at 32-96).  From 128 rows one CTA per
// row is faster (a segment costs ~6-10 us of fixed work: its first round's
// DRAM trip and first bar, the block reduction, the accumulators' atomic
// round trips), so larger calls keep it.  Rows off their 16-byte alignment or
// their Philox groups (padded strides), rows of less than a round and calls
// without a workspace keep the chunked kernel below 128 rows.
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
// each thread scores its largest z among its tokens of the first round
// (loaded before the bar, so the bar costs no DRAM round trip of its own;
// v74) and the block takes the best of those 512 scores (rows off the Philox
// groups: one token a thread spread over the row); after every round each
// warp shares its lanes' best, and (kBlockBar) posts it to the block's bar by
// one shared atomic max whose old value it takes back, so a high score found
// by any warp raises every warp's bar within a round.
//
// The group test: before the four per-token skip tests, one test for the
// whole group with its largest z and its smallest h (h falls as the Philox
// word r grows, so the smallest h is the largest r's): when that pair
// passes, every token of the group passes (lg2 and the FFMA are monotone and
// only the pair's own roundings enter, the same error terms the per-token
// test's margin covers), so the group is skipped after one lg2 instead of
// four.  With the bar near the row's best score almost every group passes
// it (perf-notes v69).
//
// A round (v70b): each thread holds kUnroll 16-byte vectors, the next
// round's already loading into the other of two register buffers.  First
// every group's statistics (the row max, the eligible count and the largest
// z, from its largest logit and the sum of its four: finite only when all
// four are), then, when any group can still reach the bar, every group's
// Philox call together, so the three or four chains of a thread interleave,
// with the products that depend only on the row's offset formed once a row
// (contract::philox_row); then the group tests, and the per-token tests only
// for groups that fail theirs, whose logits are reread from memory (held in
// registers across the Philox calls, ptxas spilled them).  The last round's
// vectors past the row read as -inf, so the work needs no bounds.
//
// Cost (fp32, B = 1024, V = 129,280, Nsight Compute, v70b): 98M warp
// instructions (~24 a token; Philox ~37 of a group's ~95), 0.58 issued a
// cycle; the largest stall is now the round's first use of its loads (one
// round ahead no longer hides them: a ring of shared memory filled by
// cp.async hid them but cost more, v71).  bf16 rows take about as long as
// fp32 rows (the same instructions a token).  fp32 streams 3 vectors a
// round, bf16 / fp16 2 (PlainRacePolicy).
//
// Failure modes: a row whose vectors do not start on a Philox group (i0 % 4
// != 0: padded strides that are not a multiple of 4 logits) goes token by
// token, a Philox call each (correct, tested; not timed); rows with every
// token within kMaxRaceBoost of the bar (flat rows) pay the Philox call for
// every group, as the bound test needs each token's uniform.  A row is read
// exactly once.
#include <cub/block/block_reduce.cuh>

#include <type_traits>

#include "cuda/block_row_stream.cuh"
#include "cuda/cuda_utils.cuh"
#include "cuda/flat_split.cuh"
#include "cuda/pivot_launch.hpp"
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

// -inf in every lane of a 16-byte vector of T: what the last round reads past
// the row's vectors (no statistics, no count, never in the race).
template <class T>
__device__ __forceinline__ uint4 neg_inf_vector() {
  if constexpr (sizeof(T) == 4) return make_uint4(0xff800000u, 0xff800000u, 0xff800000u, 0xff800000u);
  else if constexpr (std::is_same_v<T, __half>) return make_uint4(0xfc00fc00u, 0xfc00fc00u, 0xfc00fc00u, 0xfc00fc00u);
  else return make_uint4(0xff80ff80u, 0xff80ff80u, 0xff80ff80u, 0xff80ff80u);
}

// The flat split's per-row accumulators in the workspace (flat_split.cuh).
// Every field combines by a max or an integer sum, so the result does not
// depend on which CTA published which segment or in what order.
struct PlainRaceAcc {
  unsigned long long best;  // pack_order of the race leader (atomic max)
  uint32_t xmax_key;        // xmax_key of the raw max (atomic max)
  uint32_t eligible;        // tokens with z > -inf (atomic add)
  uint32_t done;            // body vectors published: the ticket
  uint32_t pad;
};

// The raw max as an unsigned key for an atomic max that keeps max_nan's
// meaning: the float order for numbers, NaN above everything.
__device__ __forceinline__ uint32_t xmax_key(float x) { return x != x ? 0xffffffffu : contract::order_key(x); }
__device__ __forceinline__ float key_xmax(uint32_t k) {
  return k == 0xffffffffu ? __int_as_float(0x7fffffff) : contract::key_to_float(k);
}

// A row's token, status and kept count from its reduced state: the same
// decisions, in the same order, as the chunked kernel's merge.
__device__ __forceinline__ void write_plain_row(const SampleOutputs& out, int64_t row, const PlainRaceState& r,
                                                float temperature) {
  constexpr float kInf = __builtin_huge_valf();
  int32_t status = TOKENSIFT_ROW_OK, token = -1, kept = 0;
  if (!(r.xmax < kInf)) {
    status = TOKENSIFT_ROW_NAN_INPUT;  // NaN or +inf
  } else if (!(r.xmax > -kInf)) {
    status = TOKENSIFT_ROW_NO_VALID_TOKEN;
  } else if ((temperature == 1.0f ? r.xmax : contract::scale(r.xmax, temperature)) == kInf) {
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

// kSmallT: the call's temperature is below 1, where a finite logit's x / T
// can be -inf (below -FLT_MAX T); a separate instantiation, so that calls at
// T >= 1 run code without the check.
// kFlat: the batch's body vectors (rows x row_nvec, every row with the same
// head, on its Philox groups) are cut into gridDim.x equal ranges, one a CTA
// (the flat split, v77): a CTA races each row segment of its range as the
// one-row kernel races a row, writes a row it covers whole, and adds a
// partial row to the row's accumulators; the segment that completes the
// row's vectors (the ticket) writes it.  Otherwise one CTA races row
// blockIdx.x (rows off their Philox groups, short rows, no workspace).
template <class T, class Policy, bool kSmallT, bool kFlat>
__global__ void __launch_bounds__(Policy::kThreads, Policy::kMinBlocksPerSm)
    plain_race_kernel(const void* logits, int64_t rows, int64_t row_stride, int32_t vocab, SamplingParams p,
                      SampleOutputs out, PlainRaceAcc* acc) {
  using Reduce = cub::BlockReduce<PlainRaceState, Policy::kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  __shared__ uint32_t bar_key;
  constexpr float kInf = __builtin_huge_valf();
  constexpr int kVec = 16 / (int)sizeof(T);
  constexpr int kThreads = Policy::kThreads, kUnroll = Policy::kUnroll, kStep = kThreads * kUnroll;
  const float temperature = p.temperature.value;
  const bool unit = temperature == 1.0f;  // x / 1 == x exactly
  // kFlat: this CTA's range of the batch's body vectors (a row's units).
  // (Loading a segment's first round before the previous segment's
  // reduction, v77b, was 3-9 % slower: the round spilled around it.)
  const int32_t row_nvec = kFlat ? (vocab - row_head(static_cast<const T*>(logits), vocab)) / kVec : 0;
  FlatRange range(kFlat ? rows : 0, row_nvec);
  for (;;) {
    int64_t row;
    int32_t v0 = 0, v1 = 0;  // kFlat: the segment, body vectors [v0, v1) of the row
    if constexpr (kFlat) {
      if (!range.next(row, v0, v1)) break;
    } else {
      row = blockIdx.x;
    }
    const T* x = static_cast<const T*>(logits) + row * row_stride;
    const uint64_t seed = p.seed.at(row), offset = p.offset.at(row);
    const contract::PhiloxRow philox = contract::philox_row(seed, offset);
    // contract::token_bits by selects (its indexed word would go to local memory).
    auto token_bits = [&](int32_t i) {
      const contract::Philox4 r = contract::philox_row_block(philox, (uint32_t)i >> 2);
      const uint32_t w = (uint32_t)i & 3u;
      return w == 0 ? r.v[0] : w == 1 ? r.v[1] : w == 2 ? r.v[2] : r.v[3];
    };

    // The first bar (below, once the row's layout is known) is the best of the
    // block's candidates: a real token's exact score, so a valid bar.
    if (threadIdx.x == 0) bar_key = 0;
    __syncthreads();
    // One token per thread spread over the row (rows whose vectors are off
    // the Philox groups; the others take the first round's best tokens).
    auto sample_bar = [&] {
      const int32_t i = (int32_t)((int64_t)threadIdx.x * vocab / kThreads);
      const float xi = to_float(x[i]);
      const float z = unit ? xi : contract::scale(xi, temperature);
      if (z > -kInf && z < kInf) atomicMax(&bar_key, contract::order_key(exact_race_score(z, token_bits(i))));
    };
    float bar = -kInf;

    PlainRaceState mine{0, -kInf, 0};
    // The skip test in the log2 domain (contract::race_skip_h and _cut): an
    // exponent trick, one fast lg2 and one FFMA a token, no conversion.  The
    // fast lg2 errs by < 2^-21 and the FFMA by < 2e-4 for |z| < kSkipMaxAbsZ,
    // far inside the margin (tests/cpu/test_contract.cpp checks the bound over
    // every U with the token's own score as the bar).
    // The bar's two derived thresholds, formed again only when the bar moves.
    // beat_cut: a z below it cannot reach the bar whatever its uniform
    // (contract::race_beat_cut: its subtractions round down, as rounded to
    // nearest the cut sat an ulp too high above |bar| = 2^19 and a skipped
    // token could tie the bar; v74c, test PlainRaceTiesAboveTwoTo19MatchCpu).
    float bar_cut = contract::race_skip_cut(bar, Policy::kSkipMargin);  // +inf while bar is -inf
    float beat_cut = contract::race_beat_cut(bar, Policy::kSkipMargin);
    auto raise_bar = [&](float s) {
      if (s > bar) {
        bar = s;
        bar_cut = contract::race_skip_cut(bar, Policy::kSkipMargin);
        beat_cut = contract::race_beat_cut(bar, Policy::kSkipMargin);
      }
    };
    auto may_win = [&](float z, uint32_t bits, float c) {  // no branches: bitwise | on bools
      return (fabsf(z) >= Policy::kSkipMaxAbsZ) |
             !(fast_lg2(contract::race_skip_h(bits)) > fmaf(z, contract::kLog2E, c));
    };
    // The exact score of a token that may win.
    auto score = [&](float z, uint32_t i, uint32_t bits) {
      const float s = exact_race_score(z, bits);
      const uint64_t q = pack_order(contract::order_key(s), i);
      if (q > mine.best) {
        mine.best = q;
        raise_bar(s);
      }
    };
    auto scaled = [&](float v) { return unit ? v : contract::scale(v, temperature); };
    // One token with its own Philox call (head, tail, rows off the groups).
    auto visit = [&](int32_t i, float xi) {
      mine.xmax = max_nan(mine.xmax, xi);
      const float z = scaled(xi);
      if (!(z > -kInf)) return;  // NaN tokens never are (the row is rejected anyway)
      ++mine.eligible;
      if (z < beat_cut) return;
      const uint32_t bits = token_bits(i);
      if (may_win(z, bits, bar_cut)) score(z, (uint32_t)i, bits);
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

    // The block's first bar, once every thread has posted its candidate.
    auto first_bar = [&] {
      __syncthreads();
      if (bar_key) raise_bar(contract::key_to_float(bar_key));
    };
    const int32_t head = row_head(x, vocab);
    bool off_groups = false;  // the flat split takes only rows on their groups
    if constexpr (!kFlat) off_groups = (head & 3) != 0;
    if (off_groups) {
      sample_bar();
      first_bar();
      // The row's vectors do not start on a Philox group (a padded stride that
      // is not a multiple of four logits): token by token (correct, tested; not
      // timed).
      block_stream_row_vec<kThreads, 1>(
          x, vocab, visit,
          [&](int32_t i0, const uint4& raw) {
            const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
            for (int k = 0; k < kVec; ++k) visit(i0 + k, to_float(e[k]));
          },
          round_done);
    } else {
      const int32_t row_vectors = (vocab - head) / kVec;
      if constexpr (!kFlat) v1 = row_vectors;
      // The segment: its vectors from `body`, nvec of them, its first token
      // shead (the whole row's body outside the flat split).
      const uint4* body = reinterpret_cast<const uint4*>(x + head) + v0;
      const int32_t nvec = v1 - v0;
      const int32_t shead = head + v0 * kVec;
      uint4 first[kUnroll];
      {
        // The first round's vectors, loaded now, give the first bar: each
        // thread's largest eligible z among its tokens of the round, scored
        // exactly; no separate sample of the row (one DRAM round trip fewer
        // before the stream), and the best of the first kStep * kVec tokens.
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int32_t v = u * kThreads + (int32_t)threadIdx.x;
          first[u] = v < nvec ? __ldg(body + v) : neg_inf_vector<T>();
        }
        float zb = -kInf;
        int32_t ib = -1;
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const T* e = reinterpret_cast<const T*>(&first[u]);
#pragma unroll
          for (int k = 0; k < kVec; ++k) {
            const float z = scaled(to_float(e[k]));
            if (z > zb && z < kInf) zb = z, ib = shead + (u * kThreads + (int32_t)threadIdx.x) * kVec + k;
          }
        }
        if (ib >= 0) atomicMax(&bar_key, contract::order_key(exact_race_score(zb, token_bits(ib))));
      }
      first_bar();
      if (v0 == 0)
        for (int32_t i = threadIdx.x; i < head; i += kThreads) visit(i, to_float(x[i]));
      // Rounds of kUnroll vectors a thread, each round's loads issued before
      // the previous round is worked; the last round's vectors past the row
      // read as -inf, so the work needs no bounds.
      const int32_t full_end = nvec / kStep * kStep;  // the vectors of the rounds wholly inside the row
      // A round is named by its first vector (base, the same in every thread).
      auto load = [&](uint4(&raw)[kUnroll], int32_t base) {
        const uint4* q = body + base + (int32_t)threadIdx.x;
        if (base < full_end) {
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) raw[u] = __ldg(q + u * kThreads);
        } else {
#pragma unroll
          for (int u = 0; u < kUnroll; ++u)
            raw[u] = base + u * kThreads + (int32_t)threadIdx.x < nvec ? __ldg(q + u * kThreads) : neg_inf_vector<T>();
        }
      };
      // The four logits of group g of a round (vector g / (kVec / 4), its
      // (g % (kVec / 4))-th four).
      auto four = [&](const uint4(&raw)[kUnroll], int g, float(&v)[4]) {
        const T* e = reinterpret_cast<const T*>(&raw[g / (kVec / 4)]) + 4 * (g % (kVec / 4));
#pragma unroll
        for (int w = 0; w < 4; ++w) v[w] = to_float(e[w]);
      };
      // One round: every group's statistics, then (when any group of the
      // thread may hold the winner) every group's Philox call together (their
      // chains interleave), the group tests, and the per-token tests only for
      // groups that fail theirs.
      auto work = [&](const uint4(&raw)[kUnroll], int32_t base) {
        constexpr int kGroups = kUnroll * kVec / 4;
        float zm[kGroups];
        bool finite[kGroups];
        bool all_finite = true;
#pragma unroll
        for (int g = 0; g < kGroups; ++g) {
          float v[4];
          four(raw, g, v);
          // The sum of the four is finite only when all four are (or, rarely,
          // not when finite logits overflow it: the slow count below is exact
          // for any group): then the group has no NaN and its plain max is
          // its largest logit.  The sum's adds run on the FMA pipe, where the
          // ALU pipe, the busier one, would take a min's.  The group is
          // eligible as a whole when its x / T are finite too: always at T >=
          // 1 (|x / T| <= |x|), but below 1 a logit under -FLT_MAX T becomes
          // -inf, so there its smallest z is checked.
          finite[g] = fabsf((v[0] + v[1]) + (v[2] + v[3])) < kInf;
          if constexpr (kSmallT) {
            if (!unit && temperature < 1.0f) finite[g] &= scaled(fminf(fminf(v[0], v[1]), fminf(v[2], v[3]))) > -kInf;
          }
          all_finite &= finite[g];
          const float xm = fmaxf(fmaxf(v[0], v[1]), fmaxf(v[2], v[3]));
          mine.xmax = max_nan(mine.xmax, xm);
          zm[g] = scaled(xm);
        }
        if (all_finite) {
          mine.eligible += 4 * kGroups;
        } else {  // -inf logits (masks), NaN, +inf, or the last round's fill
#pragma unroll
          for (int g = 0; g < kGroups; ++g) {
            if (finite[g]) {
              mine.eligible += 4;
              continue;
            }
            float v[4];
            four(raw, g, v);
            // A NaN makes xm NaN (the row's status; the group is not live,
            // its tokens never race).
            const float xm = max_nan(max_nan(v[0], v[1]), max_nan(v[2], v[3]));
            mine.xmax = max_nan(mine.xmax, xm);
            zm[g] = scaled(xm);
#pragma unroll
            for (int w = 0; w < 4; ++w) mine.eligible += scaled(v[w]) > -kInf;
          }
        }
        bool live[kGroups];
        bool any = false;
#pragma unroll
        for (int g = 0; g < kGroups; ++g) {
          live[g] = (zm[g] > -kInf) & (zm[g] >= beat_cut);
          any |= live[g];
        }
        if (!any) return;
        const int32_t i00 = shead + (base + (int32_t)threadIdx.x) * kVec;
        auto group_start = [&](int g) {
          return (uint32_t)(i00 + (g / (kVec / 4)) * kThreads * kVec + 4 * (g % (kVec / 4)));
        };
        contract::Philox4 bits[kGroups];
#pragma unroll
        for (int g = 0; g < kGroups; ++g) bits[g] = contract::philox_row_block(philox, group_start(g) >> 2);
        // The group test: its largest z against its smallest h (h falls as
        // the Philox word grows); when that pair passes, every token passes.
        const float c = bar_cut;
        bool pass[kGroups];
        bool all = true;
#pragma unroll
        for (int g = 0; g < kGroups; ++g) {
          const uint32_t rmax = ::max(::max(bits[g].v[0], bits[g].v[1]), ::max(bits[g].v[2], bits[g].v[3]));
          pass[g] = !live[g] | ((fabsf(zm[g]) < Policy::kSkipMaxAbsZ) &
                                (fast_lg2(contract::race_skip_h(rmax)) > fmaf(zm[g], contract::kLog2E, c)));
          all &= pass[g];
        }
        if (all) return;
#pragma unroll
        for (int g = 0; g < kGroups; ++g) {
          if (pass[g]) continue;
          const uint32_t i = group_start(g);
          // The group's logits again, from memory (L1 most of the time): the
          // round's registers are then free for the Philox calls (kept, they
          // spilled: ptxas at 64 registers).
          using Four = std::conditional_t<sizeof(T) == 4, uint4, uint2>;
          const Four f = __ldg(reinterpret_cast<const Four*>(x + i));
          const T* e = reinterpret_cast<const T*>(&f);
          float v[4];
#pragma unroll
          for (int w = 0; w < 4; ++w) v[w] = to_float(e[w]);
          // The four tests, without branches; the exact scores only when one
          // of them asks.  A NaN or -inf z fails its own test (z > -inf).
          float z[4];
          bool need[4];
#pragma unroll
          for (int w = 0; w < 4; ++w) {
            z[w] = scaled(v[w]);
            need[w] = (z[w] > -kInf) & may_win(z[w], bits[g].v[w], bar_cut);
          }
          if (need[0] | need[1] | need[2] | need[3]) {
#pragma unroll
            for (int w = 0; w < 4; ++w)
              if (need[w]) score(z[w], i + w, bits[g].v[w]);
          }
        }
      };
      // Two buffers in turn, each round's loads issued before the previous
      // round is worked: no copy of the next round's vectors.
      uint4 a[kUnroll], b[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) a[u] = first[u];
      for (int32_t base = 0; base < nvec;) {
        load(b, base + kStep);
        work(a, base);
        round_done();
        base += kStep;
        if (base >= nvec) break;
        load(a, base + kStep);
        work(b, base);
        round_done();
        base += kStep;
      }
      if (v1 == row_vectors)
        for (int32_t i = head + row_vectors * kVec + (int32_t)threadIdx.x; i < vocab; i += kThreads)
          visit(i, to_float(x[i]));
    }

    const PlainRaceState r = Reduce(temp).Reduce(mine, PlainRaceStateOp{});
    if (threadIdx.x == 0) {
      if (!kFlat || (v0 == 0 && v1 == row_nvec)) {
        write_plain_row(out, row, r, temperature);
      } else {
        // Wait for the clearing kernel (a no-op when launched plainly), add
        // this segment, and let the segment that completes the row write it.
        pdl_wait_primary();
        PlainRaceAcc* s = acc + row;
        atomicMax(&s->best, (unsigned long long)r.best);
        atomicMax(&s->xmax_key, xmax_key(r.xmax));
        atomicAdd(&s->eligible, (uint32_t)r.eligible);
        if (flat_completes_row(&s->done, (uint32_t)(v1 - v0), (uint32_t)row_nvec)) {
          const PlainRaceState all{load_cg(&s->best), key_xmax(load_cg(&s->xmax_key)), (int)load_cg(&s->eligible)};
          write_plain_row(out, row, all, temperature);
        }
      }
    }
    if constexpr (!kFlat) break;
  }
}

namespace {

// The flat split's CTAs for a call; 0 when it does not qualify (no
// workspace; rows off their 16-byte alignment or their Philox groups, which
// the one-row kernel takes token by token; rows of less than a round).
template <class Policy>
unsigned flat_ctas(const LogitsView& logits, const void* workspace, int elem_bytes) {
  if (workspace == nullptr || !Policy::kFlat) return 0;
  constexpr int64_t kStep = (int64_t)Policy::kThreads * Policy::kUnroll;
  const uintptr_t addr = reinterpret_cast<uintptr_t>(logits.data);
  if (addr % (uintptr_t)elem_bytes != 0 || (logits.row_stride * elem_bytes) % 16 != 0) return 0;
  const int64_t head = (int64_t)((16u - (addr & 15u)) & 15u) / elem_bytes;  // row_head, the same for every row
  if (head % 4 != 0 || head >= logits.vocab) return 0;
  const int64_t row_nvec = (logits.vocab - head) / (16 / elem_bytes);
  if (row_nvec < kStep) return 0;
  return flat_split_ctas(logits.rows, row_nvec, kStep * Policy::kFlatMinRounds, Policy::kMinBlocksPerSm);
}

// flat_ctas for the call's dtype.
unsigned flat_ctas_for(const LogitsView& logits, const void* workspace) {
  return logits.dtype == DType::kF32 ? flat_ctas<PlainRacePolicy<4>>(logits, workspace, 4)
                                     : flat_ctas<PlainRacePolicy<2>>(logits, workspace, 2);
}

}  // namespace

bool plain_race_applies(const LogitsView& logits, const SamplingParams& p, const SampleOutputs& out,
                        const void* workspace) {
  using Policy = PlainRacePolicy<4>;  // the row thresholds are the same for every width
  if (out.logprobs != nullptr) return false;  // the mass is not split-exact (see above)
  if (p.temperature.per_row || p.min_p.per_row || p.top_k.per_row || p.top_p.per_row) return false;
  if (logits.rows > 0x7fffffffLL || contract::is_greedy_temperature(p.temperature.value)) return false;
  const bool k_active = p.top_k.value > 0 && (int64_t)p.top_k.value < logits.vocab;
  if (p.min_p.value > 0.0f || k_active || p.top_p.value < 1.0f) return false;
  if (logits.rows >= Policy::kMinRows) return true;
  return logits.rows >= Policy::kFlatMinRows && flat_ctas_for(logits, workspace) > 0;
}

size_t plain_race_workspace_size(int64_t rows) { return sizeof(PlainRaceAcc) * (size_t)rows; }

namespace {

template <class T, int kBytes>
cudaError_t launch_typed(const LogitsView& logits, const SamplingParams& params, const SampleOutputs& out,
                         void* workspace, cudaStream_t stream) {
  using Policy = PlainRacePolicy<kBytes>;
  const int32_t vocab = (int32_t)logits.vocab;
  const bool small_t = params.temperature.value < 1.0f;
  // The flat split below kFlatMaxRows rows, one CTA per row from there
  // (docs/perf-notes.md v77).
  const unsigned flat = logits.rows < Policy::kFlatMaxRows ? flat_ctas<Policy>(logits, workspace, kBytes) : 0u;
  if (flat == 0) {
    auto kernel = small_t ? plain_race_kernel<T, Policy, true, false> : plain_race_kernel<T, Policy, false, false>;
    kernel<<<(unsigned)logits.rows, Policy::kThreads, 0, stream>>>(logits.data, logits.rows, logits.row_stride, vocab,
                                                                    params, out, nullptr);
    return cudaGetLastError();
  }
  PlainRaceAcc* acc = static_cast<PlainRaceAcc*>(workspace);
  const cudaError_t e = launch_flat_clear(acc, plain_race_workspace_size(logits.rows), stream);
  if (e != cudaSuccess) return e;
  auto kernel = small_t ? plain_race_kernel<T, Policy, true, true> : plain_race_kernel<T, Policy, false, true>;
  return launch_programmatic(kernel, dim3(flat), dim3(Policy::kThreads), /*dependent=*/true, stream, logits.data,
                             logits.rows, logits.row_stride, vocab, params, out, acc);
}

}  // namespace

cudaError_t launch_plain_race(const LogitsView& logits, const SamplingParams& params, const SampleOutputs& out,
                              void* workspace, cudaStream_t stream) {
  switch (logits.dtype) {
    case DType::kF32:
      return launch_typed<float, 4>(logits, params, out, workspace, stream);
    case DType::kBF16:
      return launch_typed<__nv_bfloat16, 2>(logits, params, out, workspace, stream);
    case DType::kF16:
      return launch_typed<__half, 2>(logits, params, out, workspace, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace tokensift::cuda_detail
