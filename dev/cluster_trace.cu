// Dev probe (not part of the library): where a B = 1 call on the cluster path
// spends its time (perf-notes step 11, item 1).
//
// Two measurements of the anchors' rows (N(0, 2^2) + 20 tokens boosted
// +8..+15, fp32):
//   - per call, as the benchmark times it (graph_rows calls of one row each,
//     every call on its own row, captured in one graph and replayed; median
//     of 9): the library's call, the same on flat rows (every logit 1.5:
//     the exact select), greedy, and an empty launch of the cluster's shape;
//   - per row, from one eager call each (built with TOKENSIFT_CLUSTER_TRACE):
//     CTA 0's stages by clock64 (us at the SM clock measured here) and the
//     spread of the CTAs' entries by %globaltimer.
// Without TOKENSIFT_CLUSTER_TRACE only the timings print.  CLUSTER_TRACE_WARM
// set: each traced call follows the same call on the same row (code and row
// warm in the caches), to tell instruction-fetch and load latency from work.
//   cluster_trace [rows] [top_k] [top_p] [graph_rows] [anchors|flat]   (defaults 32 50 0.9 480 anchors)
// Build (gpu-check's `clustertrace` step builds both forms):
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Iinclude -Isrc \
//        [-DTOKENSIFT_CLUSTER_TRACE] dev/cluster_trace.cu src/cuda/greedy_argmax.cu src/cuda/plain_race.cu -o /tmp/ct
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/pivot_kernels.cuh"  // the kernels, instantiated here by launch_pivot
#include "cuda/pivot_sampler.cu"
#include "probe_rows.hpp"

using namespace tokensift;
using namespace tokensift::cuda_detail;

__global__ void empty_kernel(int* flag) {
  if (threadIdx.x == 0) flag[blockIdx.x] = 1;
}

int main(int argc, char** argv) {
  const int64_t V = 129280;
  const int rows = argc > 1 ? atoi(argv[1]) : 32;
  SamplingParams p;
  p.top_k.value = argc > 2 ? atoi(argv[2]) : 50;
  p.top_p.value = argc > 3 ? (float)atof(argv[3]) : 0.9f;
  p.seed.value = 42;
  const int graph_rows = argc > 4 ? atoi(argv[4]) : 480;
  printf("V = %lld, k = %d, p = %.2f, fp32 anchors' rows\n", (long long)V, p.top_k.value, p.top_p.value);

  if (graph_rows > 0) {  // per call, as the benchmark times it
    const probe::RowBench many(probe::anchor_rows(graph_rows, V, 2.0f, 20), V);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    int* flags;
    cudaMalloc(&flags, 4 * 64);
    const auto lib = [&](const SamplingParams& q) {
      return probe::graph_us([&](int i, cudaStream_t st) { launch_pivot(many.row(i), q, many.outputs(), many.workspace, st); },
                      graph_rows, s);
    };
    const float t_lib = lib(p);
    const probe::RowBench flat(std::vector<float>((size_t)graph_rows * V, 1.5f), V);
    const float t_flat = probe::graph_us(
        [&](int i, cudaStream_t st) { launch_pivot(flat.row(i), p, flat.outputs(), flat.workspace, st); }, graph_rows, s);
    SamplingParams gp;
    gp.temperature.value = 0.0f;
    const float t_greedy = lib(gp);
    cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    cudaLaunchConfig_t lc{};
    lc.gridDim = dim3(PivotPolicy::kClusterCtas);
    lc.blockDim = dim3(PivotPolicy::kThreads);
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = PivotPolicy::kClusterCtas;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    lc.attrs = attr;
    lc.numAttrs = 1;
    const float t_empty = probe::graph_us(
        [&](int, cudaStream_t st) {
          lc.stream = st;
          cudaLaunchKernelEx(&lc, empty_kernel, flags);
        },
        graph_rows, s);
    printf("graph replay, %d calls of one row each (us per call): library %.2f, flat rows %.2f, "
           "greedy %.2f, empty cluster launch %.2f (%s)\n",
           graph_rows, t_lib, t_flat, t_greedy, t_empty, cudaGetErrorString(cudaGetLastError()));
  }

#ifdef TOKENSIFT_CLUSTER_TRACE
  const double mhz = probe::sm_clock_mhz();
  printf("SM clock %.0f MHz; per row, one eager call each (%d rows):\n", mhz, rows);
  const bool flat_rows = argc > 5 && std::string(argv[5]) == "flat";
  const bool warm = getenv("CLUSTER_TRACE_WARM") != nullptr;  // trace the second of two calls on a row
  if (warm) printf("warm: each traced call follows the same call\n");
  const probe::RowBench rb(flat_rows ? std::vector<float>((size_t)rows * V, 1.5f) : probe::anchor_rows(rows, V, 2.0f, 20), V);
  std::vector<double> st[17], spread, cta0_late, listed, last_at_list;
  int rounds_hist[4] = {0, 0, 0, 0}, missed = 0;
  for (int r = 0; r < rows; ++r) {
    unsigned long long ns[kClusterTraceRows][16] = {};
    long long clk[kClusterTraceRows][16] = {};
    int info[kClusterTraceRows][3] = {};
    unsigned long long span[kClusterTraceRows][3] = {};
    span[0][0] = ~0ull;
    if (warm) rb.call(r, p);  // the same call first: code and row warm in the caches
    cudaMemcpyToSymbol(cluster_trace_ns, ns, sizeof ns);
    cudaMemcpyToSymbol(cluster_trace_span, span, sizeof span);
    cudaMemcpyToSymbol(cluster_trace_clk, clk, sizeof clk);
    cudaMemcpyToSymbol(cluster_trace_info, info, sizeof info);
    rb.call(r, p);
    cudaMemcpyFromSymbol(ns, cluster_trace_ns, sizeof ns);
    cudaMemcpyFromSymbol(span, cluster_trace_span, sizeof span);
    cudaMemcpyFromSymbol(clk, cluster_trace_clk, sizeof clk);
    cudaMemcpyFromSymbol(info, cluster_trace_info, sizeof info);
    const auto us = [&](int a, int b) { return (double)(clk[0][b] - clk[0][a]) / mhz; };
    const int rounds = info[0][0];
    rounds_hist[std::min(rounds, 3)]++;
    const bool exact = !info[0][2];
    missed += exact;
    st[0].push_back(us(0, 1));
    st[1].push_back(us(1, 2));
    st[2].push_back(us(2, 3));
    for (int k = 0; k < rounds; ++k) st[3 + k].push_back(us(3 + k, 4 + k));
    if (exact) st[10].push_back(us(3 + rounds, 12));
    st[11].push_back(us(3, 13));
    st[12].push_back(us(13, 14));
    st[13].push_back(us(14, 15));
    st[6].push_back(us(exact ? 12 : 3 + rounds, 7));
    st[7].push_back(us(7, 8));
    st[8].push_back(us(8, 9));
    st[9].push_back(us(0, 9));
    spread.push_back((double)(span[0][1] - span[0][0]) / 1e3);
    cta0_late.push_back(((double)ns[0][0] - (double)span[0][0]) / 1e3);
    if (!exact) {
      st[14].push_back(us(3 + rounds, 10));
      st[15].push_back(us(10, 11));
      st[16].push_back(us(11, 7));
      last_at_list.push_back(((double)span[0][2] - (double)ns[0][11]) / 1e3);
    }
    listed.push_back(info[0][1]);
  }
  printf("  rounds: 1 %d, 2 %d, 3 %d; not bracketed (exact select) %d\n", rounds_hist[1], rounds_hist[2], rounds_hist[3], missed);
  const char* names[17] = {"parameters in (0-1)", "loads consumed (1-2)", "statistics exchanged (2-3)",
                           "round 1 (3-4)", "round 2 (4-5)", "round 3 (5-6)", "list (search-7)",
                           "compaction (7-8)", "finish (8-9)", "CTA 0 entry to finish (0-9)",
                           "exact select (last round-12)", "  first pivots (3-13)",
                           "  round 1 count (13-14)", "  round 1 exchange (14-15)",
                           "  list: decision (search-10)", "  list: count, stores (10-11)",
                           "  list: barrier (11-7)"};
  for (int k = 0; k < 17; ++k) probe::stats_line(names[k], st[k]);
  probe::stats_line("CTA entries' spread", spread);
  probe::stats_line("CTA 0 after first entry", cta0_late);
  probe::stats_line("last CTA at list barrier - 11", last_at_list);
  probe::stats_line("list size (tokens)", listed);
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
#endif
  return 0;
}
