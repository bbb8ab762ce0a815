// Dev probe (not part of the library): where a B = 1 call of the pivot sampler
// spends its time.  Rows of the anchors' distribution (N(0, 2^2) + 20 tokens
// boosted +8..+15, V = 129,280, fp32) are sampled one at a time; for each the
// median of 7 timed calls (CUDA events) and, from one traced call, the merging
// CTA's stages in microseconds (clock64 stamps, converted with the SM clock
// measured here):
//   chunk  that CTA's own chunk phase and ticket      stats  summaries reduced
//   cands  candidates loaded (and reloaded)           pre    pre-selection
//   decide sort, scans, decision                      race   race over the kept set
//   lp     log-prob
// For the first two rows, also the row's chunk CTAs: when each started
// (%globaltimer, after the first) and how long each stage of its chunk phase
// took (load and parameters, stats, pivot selection, emission, ticket), as
// min / median / max over the chunks and for the CTA that merged.
// Arguments: rows top_k top_p min_p sigma boosted (defaults 16 50 0.9 0 2 20;
// sigma 0 gives flat rows).  Build and run on the device:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Iinclude -Isrc \
//        -DTOKENSIFT_MERGE_TRACE dev/merge_probe.cu src/cuda/greedy_argmax.cu src/cuda/plain_race.cu -o /tmp/mp && /tmp/mp 16 50 0.9 0
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda/pivot_kernels.cuh"  // the kernels, instantiated here by launch_pivot
#include "cuda/pivot_sampler.cu"
#include "probe_rows.hpp"

using namespace tokensift;

// The chunk CTAs of the last traced call: entry skew (globaltimer) and each
// stage's duration, min / median / max over the chunks and the merging CTA's.
void print_chunk_stages(double mhz) {
  const int n = (int)std::min<int64_t>(cuda_detail::pivot_chunks(129280), cuda_detail::kTraceChunks);
  long long tr[cuda_detail::kTraceChunks][6];
  unsigned long long ns[cuda_detail::kTraceChunks];
  int merged[cuda_detail::kTraceChunks];
  cudaMemcpyFromSymbol(tr, cuda_detail::chunk_trace, sizeof tr);
  cudaMemcpyFromSymbol(ns, cuda_detail::chunk_start_ns, sizeof ns);
  cudaMemcpyFromSymbol(merged, cuda_detail::chunk_merged, sizeof merged);
  const unsigned long long ns0 = *std::min_element(ns, ns + n);
  const char* names[6] = {"start", "load+cfg", "stats", "select", "emit", "ticket"};
  printf("      chunk CTAs (us)   min    med    max  merging\n");
  int m = 0;
  for (int c = 0; c < n; ++c)
    if (merged[c]) m = c;
  for (int s = 0; s < 6; ++s) {
    std::vector<double> v(n);
    for (int c = 0; c < n; ++c)
      v[c] = s == 0 ? (double)(ns[c] - ns0) / 1e3 : (double)(tr[c][s] - tr[c][s - 1]) / mhz;
    const double mine = v[m];
    std::sort(v.begin(), v.end());
    printf("      %-10s     %6.2f %6.2f %6.2f %6.2f\n", names[s], v[0], v[n / 2], v[n - 1], mine);
  }
}

int main(int argc, char** argv) {
  const int64_t V = 129280;
  const int B = argc > 1 ? atoi(argv[1]) : 16;
  const float top_p = argc > 3 ? (float)atof(argv[3]) : 0.9f;
  // Optional: sigma and the boosted count of the rows; sigma 0 gives flat
  // rows of zeros (std::normal_distribution needs sigma > 0).
  const float sigma = argc > 5 ? (float)atof(argv[5]) : 2.0f;
  const int boosted = argc > 6 ? atoi(argv[6]) : 20;
  const probe::RowBench rows(
      sigma > 0.0f ? probe::anchor_rows(B, V, sigma, boosted) : std::vector<float>((size_t)B * V, 0.0f), V);
  SamplingParams p;
  p.top_k.value = argc > 2 ? atoi(argv[2]) : 50;
  p.top_p.value = top_p;
  p.min_p.value = argc > 4 ? (float)atof(argv[4]) : 0.0f;
  const double mhz = probe::sm_clock_mhz();
  printf("SM clock %.0f MHz; top_k %d top_p %.3f min_p %.3f\n", mhz, p.top_k.value, top_p, p.min_p.value);
  printf("row   kept    call us | chunk  stats  cands    pre decide   race     lp  (us, merging CTA)\n");
  for (int r = 0; r < B; ++r) {
    const float call_us = rows.median_us(r, p);
    long long zero[16] = {}, tr[16];
    cudaMemcpyToSymbol(cuda_detail::merge_trace, zero, sizeof zero);
    const int32_t k = rows.call(r, p);
    cudaMemcpyFromSymbol(tr, cuda_detail::merge_trace, sizeof tr);
    auto us = [&](long long c) { return (double)c / mhz; };
    // Stages that did not run (a row decided early, or sent to the fallback)
    // keep the previous stamp's time and show 0.
    long long prev = tr[0];
    printf("%3d %6d %10.1f | %6.2f", r, k, call_us, us(tr[7]));
    for (int s = 1; s <= 6; ++s) {
      const long long cur = tr[s] ? tr[s] : prev;
      printf(" %6.2f", us(cur - prev));
      prev = cur;
    }
    // Inside "cands": the chunks' emitted counts, then the first candidate load.
    if (tr[8] && tr[9]) printf(" | counts %5.2f load %5.2f", us(tr[8] - tr[1]), us(tr[9] - tr[8]));
    // Inside "pre": the threshold select, the compaction; inside "decide" on
    // the one-warp path: the warp sort, the decision, the race and W.
    if (tr[10] && tr[11]) printf(" | pre: select %5.2f compact %5.2f max %5.2f", us(tr[10] - tr[2]),
                                 us(tr[11] - tr[10]), us(tr[3] - tr[11]));
    if (tr[12] && tr[13]) printf(" | warp: load+sort %5.2f decide %5.2f race %5.2f", us(tr[12] - tr[3]),
                                 us(tr[13] - tr[12]), us(tr[4] - tr[13]));
    // Inside "race" for min-p rows past the list: the bounded gather, the
    // fallback (stamps 14 and 15: only on branch next/s29-minp's merge).
    if (tr[14]) printf(" | gather %5.2f", us(tr[14] - tr[4]));
    if (tr[14] && tr[15]) printf(" fallback %6.2f", us(tr[15] - tr[14]));
    printf("\n");
    if (r < 2) print_chunk_stages(mhz);
  }
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
