// Row-CTA kernel of the pivot sampler: one CTA streams one row once against
// a rising threshold (large batches of top-k or min-p rows, perf-notes step 3).
//
// Why: at B >= 256 the chunked kernel is issue-bound, and most of what it
// issues is fixed work per 4,096 logits (two block reductions, the guess, a
// summary, a ticket) plus ~2,500 candidates per row for the merge; the
// greedy kernel, one CTA streaming a row, runs at the memory floor.  Here a
// logit costs a load and a max and a min (one of each per two logits on
// packed bf16 / fp16 pairs): the offers to the candidate buffer and the
// eligibility count are tested once per iteration of 32 logits per thread,
// against the iteration's scaled max and min (scaling is monotone); an
// iteration with a token at or above the threshold tau tests its vectors'
// maxima and forms z one by one only in the vectors that reach it (a warp
// pays for a vector when any lane flags it: with ~280 offers per row,
// nearly every warp-iteration has one), and one with a -inf counts one by
// one.  The loop runs in three forms: whole iterations at
// temperature 1, whole iterations with a scale (the row's last one too,
// its vectors past the row read as -inf), and a per-logit step of two
// logits a thread for the row's unaligned head and tail.  Code that runs
// once per row is fetched cold: the last iteration in a per-logit form of
// its own held ~30 % of the kernel's "no instruction" stalls (v34).
//
// The passes: a sample of one vector per thread spread over the row, loaded
// first, gives a Gaussian first tau aimed at the row's top kRowCtaAim (the
// chunk phase's gaussian_guess, fitted twice so that a sampled outlier does
// not inflate sigma) before the stream starts; 16-bit top-k rows fit every
// logit of their vectors, fp32 top-k calls of fewer than
// kRowCtaFineSampleMaxRows rows two vectors a thread (kRowCtaTopKFine), and
// both aim at the top kRowCtaFineAim (v81, v83b).  Whenever the buffer passes
// half of kMergeCap, a radix select over it (block_threshold_select) keeps
// its top k..kWarpList and tau rises to that key; when ties at the k-th key
// make that impossible, the buffer is sorted and cut at exactly k in the
// contract's order (tau is a packed (key, index) threshold, so ties resolve
// by index like everywhere else).  A token that finds the buffer full is
// remembered by its thread and offered again after the compaction, so
// nothing is lost.  If tau overshot (fewer than k tokens at or above it), the
// row is streamed again from the bottom.  At the end the buffer holds exactly
// the row's tokens at or above tau, at most kWarpList of them, and the
// one-warp finish's decisions take over, with its per-position work (the
// sort, the masses, the race) spread over the CTA (cta_topk_finish,
// kRowCtaCtaFinish: the same bits, ~1 us a row less, v96b); the merge's
// decide_and_draw takes any list that finish leaves undecided.
//
// Min-p rows (kMinP; any top-k and top-p on top) keep instead every token
// that passes min-p against the block's largest z so far (a lower bound on
// the row's max, exchanged through one shared atomic max per thread and
// iteration, so the test is tight from the first iteration); a half-full
// buffer drops what fails against the current max.  At the end the list is
// filtered against the row's max: exactly the row's min-p survivors, which
// is the list the chunked merge decides from (from its candidates when they
// are complete, from its bounded gather otherwise), so decide_and_draw gives
// the same bits.  A buffer that fills against a running max still below the
// row's (a dominant token not yet streamed) is compacted to its top and tau
// rises, up to kRowCtaMinPCompactions times; the list is used at the end
// only if the key at tau fails min-p against the row's max (then nothing cut
// could survive).  Otherwise the list is abandoned and decide_and_draw's own
// gather (and, past kMergeCap, its fallback, which for top-p rows runs in
// the split launches after this kernel) takes the row, as on the chunked
// path.  The dense phase before a dominant token is streamed (N(0, 1) rows
// with one token at 30: ~4,800 offers and 2-5 compactions per row, 121 us at
// B = 256 where k50 takes 46) is cut by a gate: the first time the list
// passes half full, a tau aimed at the row's top kRowCtaMinPAim by the
// top-k rows' Gaussian fit of a sample (loaded then: rows that never fill
// half the list, the anchors' ~50 offers, pay nothing) filters the list and
// every later offer.  A gate that overshot (the key at tau passes min-p
// against the row's max at the end) streams the row a second time with the
// row's max known from the start, which offers exactly the survivors: one
// more stream, where the merge's scalar gather took a row 224 us (v41b,
// dev/rowcta_trace).  Set from the start instead (v41), the gate cost the
// anchors' rows the fit and Gaussian rows a second stream now and then.
//
// Top-p rows without top-k or min-p (kRowCtaTopP; calls that ask for no
// log-probs) list like top-k rows, the row's top kPreselect / 4 ..
// kPreselect (what the chunked merge keeps after its pre-selection), and the
// stream also sums W = sum exp(z - zmax) (RowCtaMass: one ex2 per logit
// against the thread's running max).  decide_and_draw decides from the list
// with that W only when the boundary is clear of the contract's band by more
// than W's error (top_p_clear, pivot_merge.cuh); the chunked merge applies
// the same rule to its own W, and every other row, band rows included, goes
// to the split fallback's integer fixed-point sums, which give one kept
// count whatever path or split sent the row there.  So token, status and
// kept count equal the chunked path's; the log-prob would not (another W),
// hence no log-probs here.  A row whose boundary lies past the list (a
// kept set of thousands) is deferred to the split launches as on the
// chunked path.
//
// Loads: whole iterations read their 16-byte vectors one iteration ahead
// into registers (the first with the sample, kRowCtaEarlyFirstLoad), two
// iterations in flight per CTA at 2 CTAs an SM (fp32 min-p rows too since
// v35; before v34's smaller loop a second set spilled there).  The kernel's
// arguments are a __grid_constant__ parameter: the out-of-line helpers take
// them by reference, and without it every thread first copied the ~240-byte
// block to local memory, whose traffic shared the L1 and the load queue with
// the stream (v28: -16 % on fp32 top-k).  What did not pay, measured: lines
// sent to L2 ahead of the stream (v26, v27e, v28c), a cp.async ring of
// shared memory for 16-bit rows (v29, branch next/rowcta-ring-async), and
// 16-bit rows at 64 logits a thread without loads ahead (v30, +19-42 %): a
// bf16 iteration waits on its own loads and barrier (perf-notes).
//
// Why the bits equal the chunked path's (BatchInvariant checks it): for a
// top-k row with k < kWarpList and no min-p, every token at or above the
// row's k-th is a chunk candidate preceding every chunk's bound, and the
// chunked merge ends in the one-warp finish on its first kWarpList
// candidates in order (pivot_merge.cuh); that finish reads only the first k
// in sorted order, which are the row's top k here too.  So this kernel runs
// only for such rows, chosen on the host from scalar parameters (per-row
// parameter arrays keep the chunked kernel: their row kinds are known only
// on the device).  Failure modes: a row of NaN / +inf or with no eligible
// token gets the chunked path's status; every compaction leaves at most
// kWarpList entries (an exact cut on ties), so the buffer always makes room
// and no row needs the fallback.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <type_traits>

#include "cuda/cta_list_finish.cuh"
#include "cuda/pivot_chunk.cuh"
#include "cuda/pivot_launch.hpp"
#include "cuda/pivot_merge.cuh"
#include "cuda/rowcta_first_tau.cuh"
#include "cuda/rowcta_list.cuh"
#include "cuda/rowcta_trace.cuh"
#include "cuda/vector_logits.cuh"

namespace tokensift::cuda_detail {

// The shared memory of the pivot kernels: a chunk CTA's phase, then, in the
// row's last CTA, the merge and (when it cannot decide) the fallback.
template <class Policy>
union PivotSmem {
  ChunkSmem<Policy> chunk;
  MergeSmem<Policy> merge;
  FallbackSmem<Policy> fallback;
};

// The merge's decision and draw behind a call, so that its registers (it is
// most of the kernel's code) do not crowd the streaming loop's.
template <class T, class Policy>
__device__ __noinline__ RowResult rowcta_finish(const PivotArgs& a, int64_t row_id, const RowConfig& cfg,
                                                PivotSmem<Policy>& smem, bool use_list, uint64_t next, float zmax,
                                                double row_mass) {
  return decide_and_draw<T, Policy>(a, row_id, cfg, smem.merge, smem.fallback, use_list, next, zmax, row_mass);
}

// Top-k rows' finish by the whole CTA (kRowCtaCtaFinish): the list (at most
// kThreads entries) ranked and its top 64 decided and raced as the one-warp
// finish would on the same top 64 (cta_list_finish.cuh: the same bits).
// Out of line for the streaming loop's registers, like rowcta_finish.
template <class Policy>
__device__ __noinline__ WarpListResult rowcta_cta_finish(const uint64_t* cand, int n, uint64_t next,
                                                         const RowConfig& cfg, float zmax, bool want_mass) {
  __shared__ CtaFinishSmem fs;
  return cta_topk_finish<Policy::kThreads>(cand, n, next == 0, next, cfg, zmax, want_mass, fs);
}

// Streams, for top-p rows (kRowCtaTopP), each thread's share of W = the sum
// of exp(z - zmax): relative to the thread's running raw max m (acc rescaled
// in double when m rises), exp((x - m) / T) as one ex2 of (x - m) *
// (log2 e / T), an iteration's terms summed in fp32 and added in double.
// Error (relative to W): ex2.approx 2^-22, the argument's two roundings times
// its size (at most ~1.3e-7 x log2 V summed over the row, since
// sum w |log2 w| <= W log2 V), 31 fp32 additions 1.9e-6, and at T != 1 the
// distance between (x - m) / T and z - zmax (each z rounded on its own),
// 6e-8 (2 |zmax| + ln V): inside top_p_clear's margin (pivot_merge.cuh).
struct RowCtaMass {
  double acc = 0.0;
  float m = -__builtin_huge_valf();  // raw reference of acc
  __device__ __forceinline__ void rebase(float mx, double inv_t) {
    if (mx > m && mx < __builtin_huge_valf()) {
      if (m > -__builtin_huge_valf()) acc *= exp(((double)m - (double)mx) * inv_t);
      m = mx;
    }
  }
  __device__ __forceinline__ bool ready() const { return m > -__builtin_huge_valf() && m < __builtin_huge_valf(); }
  __device__ __forceinline__ float term(float x, float c) const { return ex2_approx(__fmul_rn(__fsub_rn(x, m), c)); }
  // The thread's W relative to the row's raw max (block-summed by the caller).
  __device__ __forceinline__ double relative_to(float xmax, double inv_t) const {
    return ready() ? acc * exp(((double)m - (double)xmax) * inv_t) : 0.0;
  }
};

// kKind: a RowCtaKind (pivot_launch.hpp).
template <class T, class Policy, int kKind>
__global__ void __launch_bounds__(Policy::kThreads, Policy::kRowCtaMinBlocksPerSm) rowcta_topk_kernel(TS_PIVOT_KERNEL_ARGS a) {
  // kRowCtaTopKFine is the top-k kind with a larger first-tau sample.
  constexpr bool kTopKKind = kKind == kRowCtaTopK || kKind == kRowCtaTopKFine;
  constexpr bool kMinP = kKind == kRowCtaMinP;
  constexpr bool kTopP = kKind == kRowCtaTopP;
  // Min-p rows gated by a tau once their list first passes half full
  // (kRowCtaMinPAim > 0).
  constexpr bool kMinPTau = kMinP && Policy::kRowCtaMinPAim > 0;
  static_assert(Policy::kRowCtaMinPAim <= Policy::kMergeCap / 2, "the min-p gate aims within half the list");
  constexpr int kVec = 16 / (int)sizeof(T);
  constexpr int kPer = Policy::kRowCtaItems;  // logits per thread per iteration (one bit each in `dropped`)
  // The first tau's sample: one 16-byte vector a thread, two for fp32 rows
  // of kRowCtaTopKFine, so that those and 16-bit top-k rows fit 2,048
  // logits; its row rank: top-k rows on 2,048 aim closer to k
  // (kRowCtaFineAim); top-p rows keep kRowCtaAim (their list starts at
  // kPreselect / 4).
  constexpr int kSampleVectors = sizeof(T) == 4 && kKind == kRowCtaTopKFine ? 2 : 1;
  constexpr int kSample = (sizeof(T) == 2 ? 8 : 4) * kSampleVectors;
  static_assert(kSample == 4 || kSample == 8, "the fit takes 4 or 8 samples a thread");
  constexpr int kAim = kTopKKind && kSample == 8 ? Policy::kRowCtaFineAim : Policy::kRowCtaAim;
  constexpr int kUnroll = kPer / kVec;        // 16-byte loads in flight per thread
  static_assert(kPer <= 32 && kPer % 8 == 0, "one bit per logit in a 32-bit mask; whole vectors of every dtype");
  constexpr float kInf = __builtin_huge_valf();
  __shared__ PivotSmem<Policy> smem;
  __shared__ RowConfig row_cfg;
  __shared__ uint64_t tau_sh;
  __shared__ ChunkStats stats_sh;
  __shared__ typename ChunkSmem<Policy>::Reduce::TempStorage stats_temp;
  __shared__ uint32_t max_key_sh;  // min-p rows: order key of the largest z so far
  __shared__ int overflow_sh;      // min-p rows: more survivors than the buffer holds
  __shared__ int finish_decided_sh;  // top-k rows: the CTA finish decided the row
  // Top-k rows end in the CTA-wide rank finish (kRowCtaCtaFinish).
  constexpr bool kCtaFinishTopK = kTopKKind && Policy::kRowCtaCtaFinish;
  static_assert(!kCtaFinishTopK || Policy::kWarpList == kCtaFinishList, "the finish decides from the top 64");
  MergeSmem<Policy>& sm = smem.merge;
  const int64_t row_id = blockIdx.x;
  TS_ROWCTA_NS(0);
  TS_ROWCTA_MARK(0);
  // Kinds that may defer a row: the streaming split launch behind this
  // kernel may start once every CTA has started (it takes only the slots
  // these CTAs leave free, and each deferred row as it is published).
  if constexpr (!kTopKKind) pdl_launch_dependents();
  const T* row = static_cast<const T*>(a.logits) + row_id * a.row_stride;
  const int32_t vocab = a.vocab;
  // The row's 16-byte-aligned body in vectors; the head and tail (each
  // shorter than a vector) go one element per thread in a last step.
  const uintptr_t addr = reinterpret_cast<uintptr_t>(row);
  int32_t head = (int32_t)(((16u - (addr & 15u)) & 15u) / sizeof(T));
  if (addr % sizeof(T) != 0) head = vocab;
  head = head < vocab ? head : vocab;
  const int32_t nvec = (vocab - head) / kVec;
  const int32_t tail = head + nvec * kVec;
  const uint4* body = reinterpret_cast<const uint4*>(row + head);
  const int32_t hi = (int32_t)threadIdx.x, ti = tail + (int32_t)threadIdx.x;

  constexpr int32_t kStep = Policy::kThreads * kUnroll;  // vectors per iteration
  // Whole iterations read their vectors one iteration ahead (kRowCtaAhead):
  // without it a CTA has one iteration's loads in flight and none during
  // its work and barrier (Nsight: 2.2 TB/s, warps mostly waiting on loads
  // or the barrier, perf-notes v21).  fp32 min-p rows too since v35
  // (kRowCtaAheadMinP32): until v34's smaller loop their extra 32
  // registers spilled at the 2-CTA cap (v21: 26-40 % slower there).
  constexpr bool kAhead = Policy::kRowCtaAhead && (!kMinP || sizeof(T) != 4 || Policy::kRowCtaAheadMinP32);
  // The first whole iteration's loads go out with the sample, before the
  // parameters' barrier and the first tau's fits, when the policy asks
  // (kRowCtaEarlyFirstLoad): its DRAM round trip then overlaps theirs
  // instead of following them.  The registers are held across the fits.
  constexpr bool kEarly = kAhead && Policy::kRowCtaEarlyFirstLoad;
  // Under kRowCtaWholeTail the whole iterations run to the row's last
  // vector: the last one's vectors past nvec read as -inf (no max, no
  // eligible token, no offer), so that it runs the loop's code, not a
  // per-logit form fetched once per row; the branch is uniform, and taken
  // once per row.  A whole iteration's loads at b need b < nvec then, all
  // of it in the row otherwise.
  constexpr bool kWholeTail = Policy::kRowCtaWholeTail;
  constexpr int32_t kAheadMin = kWholeTail ? 1 : kStep;  // vectors of the row from b for an iteration at b
  const auto load_vectors = [&](uint4(&dst)[kUnroll], int32_t b) {
    if (!kWholeTail || b + kStep <= nvec) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) dst[u] = __ldcs(body + b + u * Policy::kThreads + (int32_t)threadIdx.x);
    } else {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int32_t v = b + u * Policy::kThreads + (int32_t)threadIdx.x;
        dst[u] = v < nvec ? __ldcs(body + v) : neg_inf_vector<T>();
      }
    }
  };
  uint4 ahead[kUnroll];
  const auto load_ahead = [&](int32_t b) { load_vectors(ahead, b); };

  // The first tau's sample (top-k rows): one 16-byte vector per thread,
  // the vectors spread evenly over the row, loaded before anything else, so
  // that the fit waits for no iteration of the stream (it waited for the
  // first iteration's 32 KB, the generic form's work on them and 5
  // barriers: ~8.5 us of a row's ~55 at B = 256, dev/rowcta_trace.cu), and
  // a row ordered by token id is sampled everywhere, not in its first 8,192
  // logits.  Whole vectors: 4 logits per thread from 256 lines (v27's
  // 1,024 scattered scalar loads per row cost the row ~5 us more than they
  // saved).
  // Thread 0's loads of the row's parameters go out first, ahead of the
  // sample and the first iteration in the memory queue (behind v26's L2
  // prefetches the parameters took 3.0 us, 1.9 without them); it derives
  // the RowConfig after issuing its own share of those.
  RowParamsRaw raw_params;
  if (threadIdx.x == 0) raw_params = load_row_params(a.params, row_id);
  // Every logit of the sampled vectors is fitted: 16-bit rows get 2,048 at
  // no extra load (v81), fp32 top-k rows two vectors a thread (v83); the
  // fit's error falls by sqrt 2, which lets top-k rows aim closer to k.
  float sample[kSample];
#pragma unroll
  for (int q = 0; q < kSample; ++q) sample[q] = -kInf;
  const auto load_sample = [&] {
#pragma unroll
    for (int j = 0; j < kSampleVectors; ++j) {
      const int32_t w = (int32_t)threadIdx.x * kSampleVectors + j;  // of kThreads x kSampleVectors vectors
      if (w < nvec) {
        const int32_t v = (int32_t)(((int64_t)w * nvec) / (Policy::kThreads * kSampleVectors));
        float f[kVec];
        unpack_vector<T>(__ldcs(body + v), f);
#pragma unroll
        for (int q = 0; q < kVec; ++q) sample[j * kVec + q] = f[q];
      }
    }
  };
  if (!kMinP) load_sample();
  if (kEarly && kAheadMin <= nvec) load_ahead(0);
  if (threadIdx.x == 0) row_cfg = derive_row_config(raw_params, vocab);
  __syncthreads();
  TS_ROWCTA_MARK(1);
#ifdef TOKENSIFT_ROWCTA_TRACE
  int trace_compactions = 0;
  int trace_offers = 0, trace_base = 0;  // thread 0: tokens offered, the count after the last compaction
  {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    TS_ROWCTA_INFO(3, (int)smid);
  }
#endif
  const RowConfig cfg = row_cfg;
  // Top-p rows keep the list the chunked merge decides from after its
  // pre-selection: the top kPreselect / 4 .. kPreselect tokens.
  const int need = kTopP ? Policy::kPreselect / 4 : cfg.top_k;
  constexpr int kCap = kTopP ? Policy::kPreselect : Policy::kWarpList;
  const bool unit = cfg.temperature == 1.0f;
  [[maybe_unused]] const double inv_t = 1.0 / (double)cfg.temperature;
  [[maybe_unused]] const float mass_c = (float)(1.4426950408889634 * inv_t);  // log2 e / T
  __shared__ double row_mass_sh;

  // The sample's Gaussian tau aimed at the row's top kAim, into dst (block
  // shared; every thread reads it after the barrier): top-k and top-p rows'
  // first tau, min-p rows' gate.
  const auto sample_tau = [&](auto aim, uint64_t& dst) {
    float zs[kSample];
#pragma unroll
    for (int q = 0; q < kSample; ++q) {
      const float sc = contract::scale(sample[q], cfg.temperature);
      zs[q] = sc > -kInf ? sc : -kInf;  // NaN: not sampled (its row's status is NaN)
    }
    if constexpr (kSample == 8)
      rowcta_first_tau<Policy, decltype(aim)::value>(zs[0], zs[1], zs[2], zs[3], zs[4], zs[5], zs[6], zs[7], vocab,
                                                     dst);
    else
      rowcta_first_tau<Policy, decltype(aim)::value>(zs[0], zs[1], zs[2], zs[3], vocab, dst);
    __syncthreads();
  };
  // A float at or below every key at or above tau (-inf for "none set").
  const auto key_floor = [](uint64_t t) { return t > 1ull ? contract::key_to_float(packed_key(t)) : -kInf; };
  [[maybe_unused]] float again_max = -kInf;  // min-p rows: the row's max z for a second pass
  [[maybe_unused]] bool min_p_gated = false;  // min-p rows: the gate's tau was set (block-uniform)
  [[maybe_unused]] __shared__ uint64_t gate_sh;
  for (int pass = 0; pass < 2; ++pass) {
    // Pass 1 (rare) restarts from the bottom when tau overshot; every thread
    // has read pass 0's count (the test below the loop) before it is reset.
    if (pass == 1) __syncthreads();
    if (threadIdx.x == 0) {
      sm.count = 0;
      // 0: not set yet; 1: every eligible token (min-p rows filter by min-p instead).
      tau_sh = pass == 0 && !kMinP ? 0ull : 1ull;
      // Min-p rows streamed again start from the row's max (below).
      max_key_sh = kMinPTau && pass == 1 ? contract::order_key(again_max) : 0u;
      overflow_sh = 0;
    }
    __syncthreads();
    float raw_max = -kInf;
    int eligible = 0;
    uint64_t tau = tau_sh;
    float tau_f = -kInf;
    if (!kMinP && pass == 0) {
      sample_tau(std::integral_constant<int, kAim>{}, tau_sh);
      tau = tau_sh;
      tau_f = key_floor(tau);
      TS_ROWCTA_INFO(5, __float_as_int(tau_f));  // the trace's first tau
    }
    float my_zmax = -kInf, cur_max = -kInf;
    int minp_compactions = 0;  // block-uniform
    [[maybe_unused]] RowCtaMass mass;  // top-p rows: this thread's share of W
    // One iteration: kFull for the whole form (no per-logit mask: under
    // kWholeTail every iteration, the last one's vectors past the row -inf;
    // else the iterations wholly in the row), kUnit when the temperature is
    // 1 (no scale).  The generic form takes the rest: the head and tail (one
    // logit per thread each) last of all, and without kWholeTail the row's
    // partial last iteration before them.  Returns false after the scalar
    // step.
    auto iterate = [&](int32_t base, auto full_tag, auto unit_tag) {
      constexpr bool kFull = decltype(full_tag)::value;
      constexpr bool kUnit = decltype(unit_tag)::value;
      // Under kWholeTail the generic form is the scalar step alone: two
      // logits a thread (the head's and the tail's).
      constexpr int kN = kFull || !kWholeTail ? kPer : 2;
      const bool scalar = !kFull && (kWholeTail || base >= nvec);
      // Whole iterations keep the raw logits and take their max and min (on
      // packed pairs for 16-bit types, two logits per instruction); z is
      // formed logit by logit only in an iteration that offers or holds a
      // -inf.  Scaling is monotone (a correctly rounded division by T > 0),
      // so the iteration's largest and smallest z are its scaled max and
      // min: two divisions per iteration instead of one per logit.
      float z[kN];
      uint32_t mask = kFull ? 0xffffffffu : 0u;
      uint4 raw[kUnroll];
      const auto widen = [&] {
        if constexpr (kN == kPer) {
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            const int32_t v = base + u * Policy::kThreads + (int32_t)threadIdx.x;
            float f[kVec];
            unpack_vector<T>(raw[u], f);
#pragma unroll
            for (int k = 0; k < kVec; ++k) z[u * kVec + k] = f[k];
            if (!kFull) mask |= (v < nvec ? (1u << kVec) - 1u : 0u) << (u * kVec);
          }
        }
      };
      const auto to_z = [&] {  // whole iterations: widen and scale
        if constexpr (kN == kPer) {
          widen();
          if (!kUnit) {
#pragma unroll
            for (int j = 0; j < kPer; ++j) {
              const float sc = contract::scale(z[j], cfg.temperature);
              z[j] = sc > -kInf ? sc : -kInf;
            }
          }
        }
      };
      if (kFull && kAhead) {
        // This iteration's vectors came one iteration ahead; the next
        // one's go out now, so that they are in flight across this
        // iteration's work and its barrier.
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) raw[u] = ahead[u];
        if (base + kStep + kAheadMin <= nvec) load_ahead(base + kStep);
      } else if (kFull && kWholeTail) {
        load_vectors(raw, base);
      } else if (kFull || !scalar) {
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int32_t v = base + u * Policy::kThreads + (int32_t)threadIdx.x;
          raw[u] = kFull || v < nvec ? __ldcs(body + v) : make_uint4(0u, 0u, 0u, 0u);
        }
        if (!kFull) widen();
      } else {
#pragma unroll
        for (int j = 0; j < kN; ++j) z[j] = -kInf;
        if (hi < head) z[0] = to_float(row[hi]), mask |= 1u;
        if (ti < vocab) z[1] = to_float(row[ti]), mask |= 2u;
      }
      // it_max (NaN-propagating) and it_min over this iteration's z: one
      // test per iteration instead of per logit for the offers (rare: only
      // a few hundred of a row's logits reach tau) and for the eligibility
      // count (an iteration without -inf counts kPer).  A NaN makes the
      // row's status NaN whatever the counts and candidates say.
      float it_max = -kInf, it_min = kInf;
      // Each vector's raw max, for the offers' per-vector test.
      [[maybe_unused]] float vmax32[sizeof(T) == 4 ? kUnroll : 1] = {};  // set by whole iterations only
      [[maybe_unused]] PackedMaxMin<T, sizeof(T) == 2 ? kUnroll : 1> packed;
      const auto vmax = [&](int u) {
        if constexpr (sizeof(T) == 4) return vmax32[u];
        else return packed.vmax(u);
      };
      if constexpr (kFull) {
        if constexpr (sizeof(T) == 2) {
          packed.run(raw, it_max, it_min);
        } else {
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            const float f[4] = {__uint_as_float(raw[u].x), __uint_as_float(raw[u].y), __uint_as_float(raw[u].z),
                                __uint_as_float(raw[u].w)};
            vmax32[u] = max_nan(max_nan(f[0], f[1]), max_nan(f[2], f[3]));
            it_max = max_nan(it_max, vmax32[u]);
#pragma unroll
            for (int k = 0; k < 4; ++k) it_min = fminf(it_min, f[k]);
          }
        }
        raw_max = max_nan(raw_max, it_max);
        if constexpr (kTopP) {
          mass.rebase(it_max, inv_t);
          if (mass.ready()) {
            float s = 0.0f;
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
              float f[kVec];
              unpack_vector<T>(raw[u], f);
#pragma unroll
              for (int k = 0; k < kVec; ++k) s += mass.term(f[k], mass_c);
            }
            mass.acc += (double)s;
          }
        }
        if (!kUnit) {
          it_max = contract::scale(it_max, cfg.temperature);
          it_min = contract::scale(it_min, cfg.temperature);
        }
        if (it_min > -kInf) {
          eligible += kPer;
        } else if constexpr (kUnit && sizeof(T) == 2) {
          eligible += packed_count_finite_below<T, kUnroll>(raw);
        } else {
          to_z();
#pragma unroll
          for (int j = 0; j < kPer; ++j) eligible += z[j] > -kInf;
        }
      } else {
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          if (!(mask >> j & 1u)) {
            z[j] = -kInf;
            continue;
          }
          raw_max = max_nan(raw_max, z[j]);
          if constexpr (kTopP) {
            mass.rebase(z[j], inv_t);
            if (mass.ready() && z[j] > -kInf) mass.acc += (double)mass.term(z[j], mass_c);
          }
          const float sc = contract::scale(z[j], cfg.temperature);
          z[j] = sc > -kInf ? sc : -kInf;
          it_max = max_nan(it_max, z[j]);
          eligible += z[j] > -kInf;
        }
      }
      if (kMinP) {
        // The block's largest z so far, this iteration's included, so that
        // the min-p test below is already tight on the first iteration.
        const float m = fmaxf(my_zmax, it_max);
        if (m > my_zmax) {
          my_zmax = m;
          atomicMax(&max_key_sh, contract::order_key(m));
        }
        __syncthreads();
        cur_max = max_key_sh ? contract::key_to_float(max_key_sh) : -kInf;
        if (overflow_sh) mask = 0;  // the merge's gather will find the survivors
      }
      const int32_t i0 = head + base * kVec;
      // Whole iterations also bound the thread's best packed (key, index):
      // its largest key at its smallest index.  After a cut inside a run of
      // ties (a flat row) the rest of the run packs below tau, so later
      // iterations skip it instead of testing each logit (v19c offered
      // every logit of a flat min-p row after its first compaction).
      bool any = kMinP ? contract::passes_min_p(it_max, cur_max, cfg.ln_minp) && (!kMinPTau || it_max >= tau_f)
                       : it_max >= tau_f;
      if (kFull)
        any = any && pack_order(contract::order_key(it_max), (uint32_t)(i0 + (int32_t)threadIdx.x * kVec)) >= tau;
      uint32_t dropped = 0;
      if (any) {  // (a NaN row lists nothing: its status is NaN input)
        if constexpr (kFull) {
          uint32_t vflags = 0;
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            const float vm = kUnit ? vmax(u) : contract::scale(vmax(u), cfg.temperature);
            const bool want = kMinP ? contract::passes_min_p(vm, cur_max, cfg.ln_minp) && (!kMinPTau || vm >= tau_f)
                                    : vm >= tau_f;
            vflags |= want ? 1u << u : 0u;
          }
          if (mask == 0u) vflags = 0u;  // min-p rows past overflow
          dropped = rowcta_offer_vectors<T, Policy, kMinP, kUnit, kPer, kVec>(sm, raw, vflags, i0, tau, tau_f,
                                                                              cur_max, cfg.ln_minp, cfg.temperature);
        } else {
          dropped = rowcta_offer<Policy, kMinP, kN, kVec>(sm, z, mask, i0, scalar, hi, ti, tau, tau_f, cur_max,
                                                            cfg.ln_minp);
        }
      }
      // Over half full, or tokens that found no slot: compact, then offer
      // those again, read back from the row (L2) so that z need not live
      // across the compaction (it did, and spilled).
      while (__syncthreads_or((!kMinP || !overflow_sh) &&
                              (dropped != 0 || (threadIdx.x == 0 && sm.count > Policy::kMergeCap / 2)))) {
#ifdef TOKENSIFT_ROWCTA_TRACE
        if (threadIdx.x == 0) trace_offers += sm.count - trace_base;
#endif
        if (kMinP) {
          if constexpr (kMinPTau) {
            // The first time the list passes half full (a row whose max is
            // not streamed yet, or a dense one): a tau aimed at the row's
            // top kRowCtaMinPAim by a Gaussian fit of a sample (as top-k
            // rows' first tau), so that the rest of the row offers only
            // tokens above it.  Rows that never fill half the list (the
            // anchors' rows: ~50 offers) never pay for the sample and fit.
            // A tau that overshot the row's min-p threshold is caught at
            // the end (a second pass).
            if (pass == 0 && !min_p_gated) {
              min_p_gated = true;
              load_sample();
              sample_tau(std::integral_constant<int, Policy::kRowCtaMinPAim>{}, gate_sh);
              if (gate_sh > tau) tau = gate_sh;
              tau_f = key_floor(tau);
              if (threadIdx.x == 0) tau_sh = tau;  // read after the filter's barrier
            }
          }
          const bool room = kMinPTau ? rowcta_filter_minp_tau<Policy>(sm, cur_max, cfg.ln_minp, tau)
                                     : rowcta_filter_minp<Policy>(sm, cur_max, cfg.ln_minp);
          if (!room) {
            // More survivors than the buffer holds against the max so far
            // (which may still rise: a dominant token not yet streamed).
            // Keep the top ones and raise tau; the list stays usable if
            // tau ends below the row's min-p threshold.  After
            // kRowCtaMinPCompactions (a flat row: each is a sort of ties),
            // stop listing; the merge's bounded gather or its fallback
            // takes the row, as on the chunked path.
            if (minp_compactions == Policy::kRowCtaMinPCompactions) {
              if (threadIdx.x == 0) overflow_sh = 1;
              __syncthreads();
              break;
            }
            ++minp_compactions;
            rowcta_compact<Policy>(sm, tau_sh, Policy::kMergeCap / 4, Policy::kMergeCap / 2);
            tau = tau_sh;
            if constexpr (kMinPTau) tau_f = contract::key_to_float(packed_key(tau));
          }
        } else {
          rowcta_compact<Policy>(sm, tau_sh, need, kCap);
          tau = tau_sh;
          tau_f = contract::key_to_float(packed_key(tau));
        }
#ifdef TOKENSIFT_ROWCTA_TRACE
        ++trace_compactions;
        if (threadIdx.x == 0) trace_base = sm.count;
#endif
        uint32_t again = dropped;
        dropped = 0;
        while (again) {
          const int j = __ffs((int)again) - 1;
          again &= again - 1u;
          const int32_t idx = scalar ? (j == 0 ? hi : ti)
                                     : i0 + ((j / kVec) * Policy::kThreads + (int)threadIdx.x) * kVec + (j % kVec);
          const float sc = contract::scale(to_float(row[idx]), cfg.temperature);
          const bool want = kMinP ? contract::passes_min_p(sc, cur_max, cfg.ln_minp) : sc >= tau_f;
          if (!want || !(sc > -kInf)) continue;
          const uint64_t p = pack_order(contract::order_key(sc), (uint32_t)idx);
          if (p < tau) continue;
          const int at = atomicAdd(&sm.count, 1);
          if (at < Policy::kMergeCap) sm.cand[at] = p;
          else dropped |= 1u << j;
        }
      }
      return !scalar;
    };
    // The whole iterations from the first (tau is set before the stream),
    // then the generic form until the scalar step (only the scalar step
    // under kWholeTail).
    if (pass == 0) TS_ROWCTA_MARK(2);
    int32_t base = 0;
    if (kAhead && kAheadMin <= nvec && !(kEarly && pass == 0)) load_ahead(0);
    if (unit) {
      for (; base + kAheadMin <= nvec; base += kStep) iterate(base, std::true_type{}, std::true_type{});
    } else {
      for (; base + kAheadMin <= nvec; base += kStep) iterate(base, std::true_type{}, std::false_type{});
    }
    while (iterate(base, std::false_type{}, std::false_type{})) base += kStep;
    TS_ROWCTA_MARK(3);
    TS_ROWCTA_INFO(2, sm.count);
    TS_ROWCTA_INFO(0, pass + 1);
    if (pass == 0) TS_ROWCTA_INFO(6, sm.count);  // what the first pass listed
#ifdef TOKENSIFT_ROWCTA_TRACE
    if (threadIdx.x == 0) trace_offers += sm.count - trace_base;
    trace_base = 0;  // the next pass starts from an empty buffer
    TS_ROWCTA_INFO(4, trace_offers);
#endif
    {
      ChunkStats st{raw_max, eligible, 0, 0.0f, 0.0f};
      __syncthreads();
      const ChunkStats r = typename ChunkSmem<Policy>::Reduce(stats_temp).Reduce(st, ChunkStatsOp{});
      if (threadIdx.x == 0) stats_sh = r;
      __syncthreads();
      if constexpr (kTopP) {
        // W relative to the row's raw max (a bad row's W is never read).
        const float xmax = stats_sh.xmax;
        const double w = xmax > -kInf && xmax < kInf ? mass.relative_to(xmax, inv_t) : 0.0;
        const double t = typename MergeSmem<Policy>::ReduceF64(sm.temp.f64).Sum(w);
        if (threadIdx.x == 0) row_mass_sh = t;
        __syncthreads();
      }
    }
    // Enough listed (at least k, or every eligible token), or a bad row: done.
    if constexpr (kMinPTau) {
      // A gate that overshot (the key at tau passes min-p against the
      // row's max: survivors may lie below it) streams the row again with
      // the row's max known from the start, so that exactly the survivors
      // are offered: a second stream instead of the merge's scalar gather
      // (a 224 us row at B = 256, dev/rowcta_trace on Gaussian rows).
      bool again = false;
      if (pass == 0 && !overflow_sh && tau_sh > 1ull && stats_sh.xmax < kInf && stats_sh.xmax > -kInf) {
        again_max = contract::scale(contract::key_to_float(contract::order_key(stats_sh.xmax)), cfg.temperature);
        again = again_max < kInf && contract::passes_min_p(contract::key_to_float(packed_key(tau_sh)), again_max,
                                                           cfg.ln_minp);
      }
      if (!again) break;
    } else {
      if (kMinP || !(stats_sh.xmax < kInf) || sm.count >= min(need, stats_sh.eligible) || pass == 1) break;
    }
  }

  TS_ROWCTA_MARK(4);
#ifdef TOKENSIFT_ROWCTA_TRACE
  TS_ROWCTA_INFO(1, trace_compactions);
#endif
  // Kinds that may defer a row touch the call's counters from here on (the
  // deferred list, the merged-row count), which the kernel before this one
  // cleared (a programmatic dependent launch, PivotPolicy::kClearKernel).
  if constexpr (!kTopKKind) pdl_wait_primary();
  // The merge's statuses, in its order.
  const ChunkStats rs = stats_sh;
  const float kNan = __int_as_float(0x7fffffff);
  RowResult r;
  if (cfg.invalid) {
    r = {TOKENSIFT_ROW_INVALID_PARAM, -1, 0, kNan};
  } else if (!(rs.xmax < kInf)) {  // NaN or +inf
    r = {TOKENSIFT_ROW_NAN_INPUT, -1, 0, kNan};
  } else if (!(rs.xmax > -kInf)) {
    r = {TOKENSIFT_ROW_NO_VALID_TOKEN, -1, 0, kNan};
  } else {
    // Through the order key like the merge (which folds -0 onto +0).
    const float zmax = contract::scale(contract::key_to_float(contract::order_key(rs.xmax)), cfg.temperature);
    if (zmax == kInf) {
      r = {TOKENSIFT_ROW_NAN_INPUT, -1, 0, kNan};
    } else if (rs.eligible == 0) {
      r = {TOKENSIFT_ROW_NO_VALID_TOKEN, -1, 0, kNan};
    } else {
      bool use_list = true;
      uint64_t next;
      if (kMinP) {
        // Exactly the row's min-p survivors (the chunked merge's list when
        // its candidates are complete, and its bounded gather's otherwise).
        // A raised tau cut tokens below it; none of them survives when the
        // key at tau fails min-p against the row's max (the test is
        // monotone in z), else the list is incomplete.
        use_list = !overflow_sh;
        if (use_list && tau_sh > 1ull)
          use_list = !contract::passes_min_p(contract::key_to_float(packed_key(tau_sh)), zmax, cfg.ln_minp);
        if (use_list) rowcta_filter_minp<Policy>(sm, zmax, cfg.ln_minp);
        next = 0ull;
      } else {
        // Top-p rows leave a list over kPreselect to decide_and_draw's own
        // pre-selection, as the chunked merge does; under kRowCtaCtaFinish
        // == 2 the CTA finish ranks lists of up to kThreads as they are.
        constexpr int kFinishCap = kCtaFinishTopK ? Policy::kRowCtaCtaFinishCap : Policy::kWarpList;
        if (!kTopP && sm.count > kFinishCap) rowcta_compact<Policy>(sm, tau_sh, need, Policy::kWarpList);
        __syncthreads();
        next = sm.count >= rs.eligible ? 0ull : tau_sh - 1ull;  // unlisted tokens are below tau
      }
      TS_ROWCTA_MARK(5);
      bool decided = false;
      if constexpr (kCtaFinishTopK) {
        const WarpListResult w = rowcta_cta_finish<Policy>(sm.cand, sm.count, next, cfg, zmax, a.out.logprobs != nullptr);
        if (threadIdx.x == 0) {
          finish_decided_sh = w.decided;
          if (w.decided) r = finish_result(w, row, cfg, zmax, a.out.logprobs != nullptr);
        }
        __syncthreads();
        decided = finish_decided_sh != 0;
      }
      // Any list the CTA finish leaves undecided (none is expected: the
      // list holds the row's top k, or every eligible token) takes the merge.
      if (!decided)
        r = rowcta_finish<T, Policy>(a, row_id, cfg, smem, use_list, next, zmax, kTopP ? row_mass_sh : -1.0);
      TS_ROWCTA_MARK(6);
    }
  }
  if (threadIdx.x == 0) {
    if (r.status != kRowDeferred) write_result(a.out, row_id, r);
    // After the deferral's release (defer_row, same thread): the streaming
    // split launch ends once every row is counted here.
    if constexpr (!kTopKKind) row_merged(a);
  }
  TS_ROWCTA_NS(1);
}

}  // namespace tokensift::cuda_detail
