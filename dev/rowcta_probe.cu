// Dev probe (not part of the library): can one CTA per row, streaming the row
// once against a rising threshold, bring top-k rows at B >= 256 to the
// issue's 1.5x floor?  perf-notes step 3.
//
// Why it might: the chunked kernel pays a fixed cost per 4,096 logits (two
// block reductions, the guess, a summary, a ticket, ~2,500 candidates per row
// for the merge), which Nsight Compute puts at most of its ~65 instructions a
// logit; the greedy kernel, one CTA streaming a row, runs at the floor.  Here
// a top-k row costs per logit a load, a scale, a max, an eligibility count and
// one compare against the threshold tau; the rare token at or above tau goes
// into a shared buffer.  tau starts at a Gaussian guess for the row's top
// ~kGuessAim (from a sample of the first iteration) and rises whenever the
// buffer passes half full: a radix select over the buffer (the library's
// block_threshold_select) keeps its top k..64 and tau becomes that key.  A
// buffer that overflows mid-iteration loses nothing: each thread remembers
// which of its tokens found no slot and re-offers them after the compaction.
// At the end the buffer holds exactly the row's tokens >= tau, and the
// library's one-warp finish (warp_decide_and_race) sorts it and keeps the
// top k: the same sorted top k as the chunked path, so the same token, kept
// count and log-prob bits whenever that path also ends in the one-warp finish
// (perf-notes step 5 says why).  Rows whose ties keep more than 64 at the
// final select, and bad rows, are reported, not handled: a library version
// would run the chunked path's arithmetic for them.
//
// Prototype limits: fp32, rows 16-byte aligned with V % 4 == 0 (V = 129,280),
// top-k rows (k < 64, no min-p; top-p on top).  Output: the library's and the
// prototype's time for B rows (median of 9, CUDA events; the logits exceed
// L2), the fraction of rows decided, and how many give the library's bits.
// Arguments: B top_k top_p (defaults 1024 50 1).  On the device:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Iinclude -Isrc \
//        dev/rowcta_probe.cu src/cuda/greedy_argmax.cu -o /tmp/rp && /tmp/rp 1024 50 1
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda/pivot_kernels.cuh"  // the kernels, instantiated here by launch_pivot
#include "cuda/pivot_sampler.cu"
#include "probe_rows.hpp"

using namespace tokensift;
using namespace tokensift::cuda_detail;

constexpr int kThreads = 256;  // block_threshold_select's one bin per thread
constexpr int kBuf = 2048;                   // shared candidate buffer
constexpr int kSlots = kBuf / kThreads;
constexpr int kGuessAim = 256;               // the first tau aims at the row's top this many
constexpr int kListCap = PivotPolicy::kWarpList;

struct RowOut {
  int32_t token, kept;
  float logprob;
  int32_t decided, compactions, appended;
};

struct RowSmem {
  uint64_t buf[kBuf];
  int count;
  uint32_t tau;  // order key; the buffer holds every token seen with key >= tau
  ThresholdSmem<kThreads> th;
  union {
    cub::BlockReduce<ChunkStats, kThreads>::TempStorage stats;
    cub::BlockScan<int, kThreads>::TempStorage scan;
  } temp;
  ChunkStats st;
};

// Keeps the buffer's top need..cap (ties at the boundary all stay) and raises
// tau to the boundary key.  Returns false when ties keep the buffer too full.
__device__ bool compact(RowSmem& sm, int need, int cap) {
  __syncthreads();
  const int n = sm.count < kBuf ? sm.count : kBuf;
  uint64_t v[kSlots];
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int i = s * kThreads + (int)threadIdx.x;
    v[s] = i < n ? sm.buf[i] : 0ull;
  }
  if (n <= cap || n < need) return true;  // nothing to select (uniform: n is shared)
  const ThresholdResult t = block_threshold_select<kThreads, kSlots, uint64_t>(v, need, cap, 0u, sm.th);
  int mine = 0;
#pragma unroll
  for (int s = 0; s < kSlots; ++s) mine += v[s] != 0 && packed_key(v[s]) >= t.key;
  int pos, kept;
  __syncthreads();
  cub::BlockScan<int, kThreads>(sm.temp.scan).ExclusiveSum(mine, pos, kept);
  __syncthreads();
#pragma unroll
  for (int s = 0; s < kSlots; ++s)
    if (v[s] != 0 && packed_key(v[s]) >= t.key) sm.buf[pos++] = v[s];
  if (threadIdx.x == 0) {
    sm.count = kept;
    if (t.key > sm.tau) sm.tau = t.key;
  }
  __syncthreads();
  return kept < kBuf / 2;
}

// kUnroll: 16-byte loads in flight per thread (timed at 4 and 8).
template <int kUnroll>
__global__ void __launch_bounds__(kThreads, 4) probe_rowcta_kernel(const float* logits, int64_t stride, int32_t vocab,
                                                                 SamplingParams params, RowOut* out) {
  constexpr int kPer = kUnroll * 4;  // logits per thread per iteration
  static_assert(kPer <= 32, "one bit per logit in the dropped mask");
  __shared__ RowSmem sm;
  constexpr float kInf = __builtin_huge_valf();
  const int64_t row_id = blockIdx.x;
  const float* row = logits + row_id * stride;
  const uint4* body = reinterpret_cast<const uint4*>(row);
  const int32_t nvec = vocab / 4;
  const RowConfig cfg = load_row_config(params, row_id, vocab);
  if (threadIdx.x == 0) {
    sm.count = 0;
    sm.tau = 0;
  }
  float run_max = -kInf;
  int eligible = 0, compactions = 0;
  bool ok = cfg.k_active && !cfg.m_active && !cfg.greedy && !cfg.invalid && cfg.top_k < kListCap;
  const int need = cfg.top_k;
  float tau_f = kInf;  // set after the first iteration's sample

  for (int32_t base = 0; base < nvec; base += kThreads * kUnroll) {
    float z[kPer];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int32_t v = base + u * kThreads + (int32_t)threadIdx.x;
      if (v < nvec) {
        const uint4 raw = __ldcs(body + v);
        z[4 * u] = __uint_as_float(raw.x), z[4 * u + 1] = __uint_as_float(raw.y);
        z[4 * u + 2] = __uint_as_float(raw.z), z[4 * u + 3] = __uint_as_float(raw.w);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) z[4 * u + e] = -kInf;
      }
    }
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const float s = cfg.temperature == 1.0f ? z[j] : contract::scale(z[j], cfg.temperature);
      run_max = max_nan(run_max, s);
      z[j] = s > -kInf ? s : -kInf;
      eligible += z[j] > -kInf;
    }
    if (base == 0) {
      // tau0 from a sample of this first iteration (4 logits per thread).
      ChunkStats st{-kInf, 0, 0, 0.0f, 0.0f};
#pragma unroll
      for (int q = 0; q < 4; ++q) add_sample(st, z[q * (kPer / 4)]);
      const ChunkStats r = cub::BlockReduce<ChunkStats, kThreads>(sm.temp.stats).Reduce(st, ChunkStatsOp{});
      if (threadIdx.x == 0) {
        ChunkStats g = r;
        g.eligible = vocab;  // aim at the row's top kGuessAim
        const bool spread = r.nsample > 1 && sample_var(r) > 0.0f;
        const float t = spread && vocab > kGuessAim ? gaussian_guess(g, false, kGuessAim, kGuessAim) : -3.4028235e38f;
        sm.tau = t > -3.4028235e38f && t < kInf ? contract::order_key(t) : contract::order_key(-3.4028235e38f);
      }
      __syncthreads();
    }
    tau_f = contract::key_to_float(sm.tau);
    uint32_t dropped = 0;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      if (z[j] >= tau_f) {
        const int at = atomicAdd(&sm.count, 1);
        const uint32_t idx = (uint32_t)(4 * (base + (j / 4) * kThreads + (int)threadIdx.x) + (j % 4));
        if (at < kBuf) sm.buf[at] = pack_order(contract::order_key(z[j]), idx);
        else dropped |= 1u << j;
      }
    }
    // Over half full (or lost tokens): compact, then re-offer what was lost.
    while (__syncthreads_or(dropped != 0 || (threadIdx.x == 0 && sm.count > kBuf / 2))) {
      ++compactions;
      if (threadIdx.x == 0 && sm.count > kBuf) sm.count = kBuf;
      if (!compact(sm, need, kListCap)) ok = false;
      if (!ok) break;  // uniform: compact's result is the same in every thread
      tau_f = contract::key_to_float(sm.tau);
      const uint32_t again = dropped;
      dropped = 0;
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        if ((again >> j & 1u) && z[j] >= tau_f) {
          const int at = atomicAdd(&sm.count, 1);
          const uint32_t idx = (uint32_t)(4 * (base + (j / 4) * kThreads + (int)threadIdx.x) + (j % 4));
          if (at < kBuf) sm.buf[at] = pack_order(contract::order_key(z[j]), idx);
          else dropped |= 1u << j;
        }
      }
    }
    if (!ok) break;
  }

  // Row max and eligible count, then the final list.
  {
    ChunkStats st{run_max, eligible, 0, 0.0f, 0.0f};
    __syncthreads();
    const ChunkStats r = cub::BlockReduce<ChunkStats, kThreads>(sm.temp.stats).Reduce(st, ChunkStatsOp{});
    if (threadIdx.x == 0) sm.st = r;
    __syncthreads();
  }
  const ChunkStats rs = sm.st;
  const int appended = sm.count;
  ok = ok && rs.xmax < kInf && rs.eligible > need && sm.count >= need;
  if (ok && sm.count > kListCap) {
    compact(sm, need, kListCap);
    ok = sm.count <= kListCap;
  }
  if (!ok) {
    if (threadIdx.x == 0) out[row_id] = {-1, 0, 0.0f, 0, compactions, appended};
    return;
  }
  if (threadIdx.x < 32) {
    const int n = sm.count;
    const uint64_t next = pack_order(sm.tau - 1u, 0u);  // every token not listed is below tau
    const WarpListResult w = warp_decide_and_race<PivotPolicy>(sm.buf, n, false, next, cfg, rs.xmax, nullptr, 0, true);
    if (threadIdx.x == 0) {
      float lp = __int_as_float(0x7fffffff);
      if (w.decided) {
        const float zt = contract::scale(row[w.token], cfg.temperature);
        lp = (float)(((double)zt - (double)rs.xmax) - log(w.kept_mass));
      }
      out[row_id] = {w.decided ? w.token : -2, w.kept, lp, w.decided, compactions, appended};
    }
  }
}

int main(int argc, char** argv) {
  const int64_t V = 129280;
  const int B = argc > 1 ? atoi(argv[1]) : 1024;
  SamplingParams p;
  p.top_k.value = argc > 2 ? atoi(argv[2]) : 50;
  p.top_p.value = argc > 3 ? (float)atof(argv[3]) : 1.0f;
  p.seed.value = 42;
  const std::vector<float> h = probe::anchor_rows(B, V, 2.0f, 20);
  float* d_logits;
  cudaMalloc(&d_logits, h.size() * 4);
  cudaMemcpy(d_logits, h.data(), h.size() * 4, cudaMemcpyHostToDevice);
  const size_t ws_bytes = pivot_workspace_size(B, V);
  void* ws;
  cudaMalloc(&ws, ws_bytes);
  cudaMemset(ws, 0, ws_bytes);
  int32_t *tok, *kept;
  float* lp;
  cudaMalloc(&tok, 4 * B);
  cudaMalloc(&kept, 4 * B);
  cudaMalloc(&lp, 4 * B);
  RowOut* d_out;
  cudaMalloc(&d_out, sizeof(RowOut) * B);
  LogitsView lv;
  lv.data = d_logits;
  lv.rows = B;
  lv.vocab = V;
  lv.row_stride = V;
  SampleOutputs o;
  o.tokens = tok;
  o.kept_counts = kept;
  o.logprobs = lp;

  auto time = [&](auto&& launch) { return probe::median_event_us(launch, 9); };
  const float lib_us = time([&] { launch_pivot(lv, p, o, ws, 0); });
  const double floor_us = (double)B * V * 4 / 4.2e6;  // bytes / (~4.2 TB/s copy bandwidth, read + write, in bytes per us)
  const float row4_us = time([&] { probe_rowcta_kernel<4><<<B, kThreads>>>(d_logits, V, (int32_t)V, p, d_out); });
  const float row_us = time([&] { probe_rowcta_kernel<8><<<B, kThreads>>>(d_logits, V, (int32_t)V, p, d_out); });
  printf("row-CTA with 4 loads in flight per thread: %.1f us (%.2fx floor)\n", row4_us, row4_us / floor_us);

  std::vector<int32_t> lt(B), lk(B);
  std::vector<float> ll(B);
  std::vector<RowOut> ro(B);
  cudaMemcpy(lt.data(), tok, 4 * B, cudaMemcpyDeviceToHost);
  cudaMemcpy(lk.data(), kept, 4 * B, cudaMemcpyDeviceToHost);
  cudaMemcpy(ll.data(), lp, 4 * B, cudaMemcpyDeviceToHost);
  cudaMemcpy(ro.data(), d_out, sizeof(RowOut) * B, cudaMemcpyDeviceToHost);
  int decided = 0, same = 0, comp = 0, app = 0;
  for (int r = 0; r < B; ++r) {
    decided += ro[r].decided;
    const bool eq = ro[r].decided && ro[r].token == lt[r] && ro[r].kept == lk[r] &&
                    std::memcmp(&ro[r].logprob, &ll[r], 4) == 0;
    same += eq;
    comp += ro[r].compactions;
    app += ro[r].appended;
    if (ro[r].decided && !eq && r < 2000)
      printf("row %d differs: lib %d/%d/%.9g  row-CTA %d/%d/%.9g\n", r, lt[r], lk[r], ll[r], ro[r].token, ro[r].kept,
             ro[r].logprob);
  }
  printf("B %d top_k %d top_p %.3f: library %.1f us, row-CTA %.1f us (floor ~%.1f us: %.2fx / %.2fx); decided %d of %d, "
         "same bits %d; compactions %.2f per row, final buffer %.1f\n",
         B, p.top_k.value, p.top_p.value, lib_us, row_us, floor_us, lib_us / floor_us, row_us / floor_us, decided, B,
         same, (double)comp / B, (double)app / B);
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
