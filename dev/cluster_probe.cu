// Dev probe (not part of the library): can a thread-block cluster per row bring
// a B = 1 top-k call to the issue's 8 us?  perf-notes step 5 (b).
//
// The prototype handles top-k rows (k < 64, no min-p, any T, top-p on top)
// of V <= 16 x 8,192: one cluster of 16 CTAs per row, each CTA holding 8,192
// logits in registers (32 per thread, loaded once).  The CTAs agree on the
// row's threshold through distributed shared memory instead of emitting
// their own top ~80 to L2 and ticketing:
//   1. each CTA reduces its max, eligible count and a 4-per-thread sample
//      (the chunk phase's statistics) and writes them into CTA 0's shared
//      memory; cluster barrier; every CTA reads the 16 records in one fixed
//      order, so all derive the same row statistics bit for bit;
//   2. a Gaussian guess at the row's top sqrt(k x 64) (the chunk phase's
//      gaussian_guess), counted by every CTA, the 16 counts exchanged the
//      same way; a count outside [k, 64] re-aims (gaussian_reguess) up to
//      kAttempts times;
//   3. on a hit every token >= the guess goes into CTA 0's list (one remote
//      atomic per thread); cluster barrier; warp 0 of CTA 0 runs the
//      library's one-warp finish (warp_decide_and_race) on it.
// The list holds every token of the row at or above the guess, so it is
// exact down to the guess, and the finish sorts it and keeps its top k: the
// same sorted top k, so the same token, kept count and log-prob bits as the
// library's chunked path whenever that path also ends in the one-warp finish
// (perf-notes step 5 says why).  A miss (or a bad row) is reported, not
// handled: a library version would continue with the chunked path's
// arithmetic for that row.
//
// Output per row: library time (median of 7 eager calls, CUDA events), the
// cluster kernel's time (same), hit or miss and the attempts it took, the
// list size, and whether token, kept count and log-prob bits equal the
// library's.  Arguments: rows top_k top_p [graph_rows] (defaults 16 50 0.9
// 0); graph_rows > 0 also times both as the benchmark does (below).  On the device:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Iinclude -Isrc \
//        dev/cluster_probe.cu src/cuda/greedy_argmax.cu -o /tmp/cp && /tmp/cp 16 50 0.9
#include <cooperative_groups.h>
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
namespace cg = cooperative_groups;

constexpr int kClusterCtas = 16;
constexpr int kThreads = 256;
constexpr int kItems = 32;                       // logits per thread
constexpr int kCtaSpan = kThreads * kItems;      // 8,192 logits per CTA
constexpr int kAttempts = 3;                     // guesses before a miss
constexpr int kListCap = PivotPolicy::kWarpList; // the one-warp finish's list

struct CtaStats {
  float xmax;
  int32_t eligible, nsample;
  float sum, sumsq;
};

struct ClusterSmem {
  CtaStats stats[kClusterCtas];          // CTA 0's: one record per CTA
  int32_t counts[kAttempts][kClusterCtas];
  int32_t list_count;
  uint64_t list[kListCap];
  union {
    cub::BlockReduce<ChunkStats, kThreads>::TempStorage stats;
    cub::BlockReduce<int, kThreads>::TempStorage count;
  } temp;
  int32_t count;
};

struct ProbeOut {
  int32_t token, kept;
  float logprob;
  int32_t hit, attempts, listed;
};

__global__ void __launch_bounds__(kThreads) probe_cluster_kernel(const float* logits, int64_t stride, int32_t vocab,
                                                                SamplingParams params, ProbeOut* out) {
  __shared__ ClusterSmem sm;
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = (int)cluster.block_rank();
  const int64_t row_id = blockIdx.x / kClusterCtas;
  const float* row = logits + row_id * stride;
  const int32_t begin = rank * kCtaSpan;
  constexpr float kInf = __builtin_huge_valf();

  // Loads first (the same 16-byte vector mapping as load_chunk), then the row.
  float x[kItems];
#pragma unroll
  for (int i = 0; i < kItems / 4; ++i) {
    const int32_t idx = begin + (i * kThreads + (int)threadIdx.x) * 4;
    if (idx + 4 <= vocab) {
      const float4 v = __ldcs(reinterpret_cast<const float4*>(row + idx));
      x[4 * i] = v.x, x[4 * i + 1] = v.y, x[4 * i + 2] = v.z, x[4 * i + 3] = v.w;
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) x[4 * i + e] = idx + e < vocab ? row[idx + e] : -kInf;
    }
  }
  auto index_of = [&](int j) { return (uint32_t)(begin + ((j / 4) * kThreads + (int)threadIdx.x) * 4 + (j % 4)); };
  const RowConfig cfg = load_row_config(params, row_id, vocab);

  // 1. This CTA's statistics, into CTA 0's record for it.
  ChunkStats st{-kInf, 0, 0, 0.0f, 0.0f};
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const float z = cfg.temperature == 1.0f ? x[j] : contract::scale(x[j], cfg.temperature);
    x[j] = z > -kInf ? z : -kInf;
    st.xmax = max_nan(st.xmax, x[j]);
    st.eligible += x[j] > -kInf;
  }
#pragma unroll
  for (int s = 0; s < 4; ++s) add_sample(st, x[s * (kItems / 4)]);
  const ChunkStats r = cub::BlockReduce<ChunkStats, kThreads>(sm.temp.stats).Reduce(st, ChunkStatsOp{});
  if (threadIdx.x == 0) {
    const CtaStats c{r.xmax, r.eligible, r.nsample, r.sum, r.sumsq};
    *cluster.map_shared_rank(&sm.stats[rank], 0) = c;
    if (rank == 0) sm.list_count = 0;
  }
  cluster.sync();

  // Every CTA reads the 16 records in the same order: the same row statistics.
  __shared__ ChunkStats row_st;
  if (threadIdx.x == 0) {
    ChunkStats a{-kInf, 0, 0, 0.0f, 0.0f};
    for (int c = 0; c < kClusterCtas; ++c) {
      const CtaStats s = *cluster.map_shared_rank(&sm.stats[c], 0);
      a = ChunkStatsOp{}(a, ChunkStats{s.xmax, s.eligible, s.nsample, s.sum, s.sumsq});
    }
    row_st = a;
  }
  __syncthreads();
  const ChunkStats rs = row_st;
  const bool usable = cfg.k_active && !cfg.m_active && !cfg.greedy && !cfg.invalid && cfg.top_k < kListCap &&
                      rs.xmax < kInf && rs.eligible > 0;
  const int need = min(cfg.top_k, rs.eligible);
  const bool spread = sample_var(rs) > 0.0f;

  // 2. Guess, count, exchange; re-aim on a miss.
  float g = -3.4028235e38f;  // every eligible token, when the row holds few
  if (rs.eligible > kListCap && spread) g = gaussian_guess(rs, true, need, kListCap);
  int hit = 0, attempts = 0, total = 0;
  for (int t = 0; usable && t < kAttempts; ++t) {
    attempts = t + 1;
    if (!(g >= -3.4028235e38f && g < kInf)) break;
    int my = 0;
#pragma unroll
    for (int j = 0; j < kItems; ++j) my += x[j] >= g;
    const int c = cub::BlockReduce<int, kThreads>(sm.temp.count).Sum(my);
    if (threadIdx.x == 0) *cluster.map_shared_rank(&sm.counts[t][rank], 0) = c;
    cluster.sync();
    if (threadIdx.x == 0) {
      int s = 0;
      for (int q = 0; q < kClusterCtas; ++q) s += *cluster.map_shared_rank(&sm.counts[t][q], 0);
      sm.count = s;
    }
    __syncthreads();
    total = sm.count;
    if (total >= need && total <= kListCap) {
      hit = 1;
      break;
    }
    if (rs.eligible <= kListCap || !spread) break;
    g = gaussian_reguess(rs, g, total, true, need, kListCap);
  }

  // 3. Every token >= g into CTA 0's list.
  if (hit) {
    int my = 0;
#pragma unroll
    for (int j = 0; j < kItems; ++j) my += x[j] >= g;
    if (my) {
      int pos = atomicAdd(cluster.map_shared_rank(&sm.list_count, 0), my);
      uint64_t* list = cluster.map_shared_rank(&sm.list[0], 0);
#pragma unroll
      for (int j = 0; j < kItems; ++j)
        if (x[j] >= g) list[pos++] = pack_order(contract::order_key(x[j]), index_of(j));
    }
  }
  cluster.sync();  // the list is complete; CTA 0's memory stays alive past here
  if (rank != 0) return;
  if (!hit) {
    if (threadIdx.x == 0) out[row_id] = {-1, 0, 0.0f, 0, attempts, total};
    return;
  }
  if (threadIdx.x < 32) {
    const int n = sm.list_count;
    const bool complete = total == rs.eligible;
    const uint64_t next = complete ? 0ull : pack_order(contract::order_key(g) - 1u, 0u);
    const WarpListResult w =
        warp_decide_and_race<PivotPolicy>(sm.list, n, complete, next, cfg, rs.xmax, nullptr, 0, true);
    if (threadIdx.x == 0) {
      float lp = __int_as_float(0x7fffffff);
      if (w.decided) {
        const float z = contract::scale(row[w.token], cfg.temperature);
        lp = (float)(((double)z - (double)rs.xmax) - log(w.kept_mass));
      }
      out[row_id] = {w.decided ? w.token : -2, w.kept, lp, 1, attempts, n};
    }
  }
}

// A launch with nothing to do, per CTA one store: the graph-replay floor of
// a launch of this shape (cluster or plain).
__global__ void empty_kernel(int* flag) {
  if (threadIdx.x == 0) flag[blockIdx.x] = 1;
}

int main(int argc, char** argv) {
  const int64_t V = 129280;
  const int B = argc > 1 ? atoi(argv[1]) : 16;
  if (V > (int64_t)kClusterCtas * kCtaSpan) return 1;
  const probe::RowBench rows(probe::anchor_rows(B, V, 2.0f, 20), V);
  SamplingParams p;
  p.top_k.value = argc > 2 ? atoi(argv[2]) : 50;
  p.top_p.value = argc > 3 ? (float)atof(argv[3]) : 0.9f;
  p.seed.value = 42;

  cudaFuncSetAttribute(probe_cluster_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  cudaLaunchConfig_t lc{};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = kClusterCtas;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  lc.blockDim = dim3(kThreads);
  lc.attrs = attr;
  lc.numAttrs = 1;
  lc.gridDim = dim3(kClusterCtas);
  int clusters = 0;
  cudaOccupancyMaxActiveClusters(&clusters, probe_cluster_kernel, &lc);
  printf("top_k %d top_p %.3f; clusters of %d CTAs resident at once: %d (%s)\n", p.top_k.value, p.top_p.value,
         kClusterCtas, clusters, cudaGetErrorString(cudaGetLastError()));

  ProbeOut* d_out;
  cudaMalloc(&d_out, sizeof(ProbeOut) * B);
  float* lib_lp;
  int32_t* lib_status;
  cudaMalloc(&lib_lp, 4);
  cudaMalloc(&lib_status, 4);
  printf("row   lib us  cluster us  hit tries listed | lib token kept | cl token kept | same bits\n");
  int hits = 0, same = 0;
  std::vector<float> lib_t, cl_t;
  for (int r = 0; r < B; ++r) {
    const float lib_us = rows.median_us(r, p);
    SampleOutputs o = rows.outputs();
    o.logprobs = lib_lp;
    o.row_status = lib_status;
    launch_pivot(rows.row(r), p, o, rows.workspace, 0);
    int32_t lt = -1, lk = 0;
    float llp = 0;
    cudaMemcpy(&lt, rows.token, 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(&lk, rows.kept, 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(&llp, lib_lp, 4, cudaMemcpyDeviceToHost);

    const float* rowp = rows.logits + (size_t)r * V;
    const float cl_us = probe::median_event_us(
        [&] { cudaLaunchKernelEx(&lc, probe_cluster_kernel, rowp, (int64_t)V, (int32_t)V, p, d_out); });
    ProbeOut c;
    cudaMemcpy(&c, d_out, sizeof c, cudaMemcpyDeviceToHost);
    const bool eq = c.hit && c.token == lt && c.kept == lk && std::memcmp(&c.logprob, &llp, 4) == 0;
    hits += c.hit;
    same += eq;
    lib_t.push_back(lib_us);
    cl_t.push_back(cl_us);
    printf("%3d %8.1f %11.1f %4d %5d %6d | %9d %4d | %8d %4d | %s\n", r, lib_us, cl_us, c.hit, c.attempts, c.listed,
           lt, lk, c.token, c.kept, eq ? "yes" : (c.hit ? "NO" : "-"));
  }
  std::sort(lib_t.begin(), lib_t.end());
  std::sort(cl_t.begin(), cl_t.end());
  printf("median: library %.1f us, cluster %.1f us; hits %d of %d, same bits %d of the hits\n", lib_t[B / 2],
         cl_t[B / 2], hits, B, same);
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));

  // The same comparison as the benchmark times it: `graph_rows` calls of one
  // row each, every call on its own row (more than 4x the 60 MB L2 in all,
  // so the logits come from HBM), captured in one graph and replayed.
  const int graph_rows = argc > 4 ? atoi(argv[4]) : 0;
  if (graph_rows > 0) {
    const probe::RowBench many(probe::anchor_rows(graph_rows, V, 2.0f, 20), V);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    int* flags;
    cudaMalloc(&flags, 4 * 64);
    const float lib_g = probe::graph_us(
        [&](int i, cudaStream_t st) { launch_pivot(many.row(i), p, many.outputs(), many.workspace, st); }, graph_rows, s);
    cudaLaunchConfig_t gc = lc;
    const float cl_g = probe::graph_us(
        [&](int i, cudaStream_t st) {
          gc.stream = st;
          cudaLaunchKernelEx(&gc, probe_cluster_kernel, (const float*)(many.logits + (size_t)i * V), (int64_t)V,
                             (int32_t)V, p, d_out);
        },
        graph_rows, s);
    cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    const float empty_cl = probe::graph_us(
        [&](int, cudaStream_t st) {
          gc.stream = st;
          cudaLaunchKernelEx(&gc, empty_kernel, flags);
        },
        graph_rows, s);
    const int chunks = (int)((V + PivotPolicy::kChunk - 1) / PivotPolicy::kChunk);
    const float empty_plain = probe::graph_us(
        [&](int, cudaStream_t st) { empty_kernel<<<chunks, kThreads, 0, st>>>(flags); }, graph_rows, s);
    printf("graph replay, %d calls of one row each (us per call): library %.2f, cluster kernel %.2f; "
           "empty launches: cluster of %d CTAs %.2f, %d plain CTAs %.2f (%s)\n",
           graph_rows, lib_g, cl_g, kClusterCtas, empty_cl, chunks, empty_plain, cudaGetErrorString(cudaGetLastError()));
  }
  return 0;
}
