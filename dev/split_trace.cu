// Dev probe (not part of the library): where a top-p call's time goes when
// rows defer to the split fallback.  fp32 p0.9 calls on the anchors' rows
// (N(0, 2^2) + 20 tokens boosted +8..+15) cost 79 us at B = 64 and 171 at
// B = 256 (bench/results/sampler-h200-2026-11-30.md) where k50 calls cost 40
// and 61; Nsight Compute puts 11-19 us on pass A and 18-33 on pass B
// (bench/results/probes/kernels-p0.9-h200-2026-11-30-08fd409.txt) for the
// ~1 row in 6 that defers.  This probe times whole calls (CUDA events, median
// of 9) and, from one traced call, the launches' spans and gaps and each
// deferred row's stages (%globaltimer stamps of pivot_split.cuh and
// pivot_kernels.cuh under TOKENSIFT_SPLIT_TRACE): when the merge deferred it,
// pass A's items and boundary search, pass B's items, the last item's list
// load, its resolution (sort, scan, race) and the write; also how many
// tokens the boundary bin listed and whether the one-CTA fallback ran.
// Arguments: V (129280), top_p (0.9).  Build and run on the device (gpu-check's
// `splittrace` step):
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Iinclude -Isrc \
//        -DTOKENSIFT_SPLIT_TRACE dev/split_trace.cu src/cuda/greedy_argmax.cu src/cuda/plain_race.cu -o /tmp/st
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

namespace {

constexpr unsigned long long kUnset = ~0ull;

void reset_trace() {
  unsigned long long span[3][2];
  for (auto& s : span) s[0] = kUnset, s[1] = 0;
  cudaMemcpyToSymbol(split_span, span, sizeof(span));
  std::vector<unsigned long long> ns((size_t)kSplitTraceRows * 9, kUnset);
  cudaMemcpyToSymbol(split_row_ns, ns.data(), sizeof(unsigned long long) * ns.size());
  std::vector<int> info((size_t)kSplitTraceRows * 3, -1);
  cudaMemcpyToSymbol(split_row_info, info.data(), sizeof(int) * info.size());
  std::vector<unsigned long long> items((size_t)2 * kSplitTraceItems * 5, kUnset);
  cudaMemcpyToSymbol(split_item_ns, items.data(), sizeof(unsigned long long) * items.size());
}

// Item stages (pivot_split.cuh's split_item_ns), each pass's items pooled
// over the call, and pass B's items against their row's boundary (row stamp
// 3); at B = 1 every item of the row is listed.
void item_report(int B, const std::vector<unsigned long long>& ns) {
  std::vector<unsigned long long> it((size_t)2 * kSplitTraceItems * 5);
  std::vector<int> where((size_t)2 * kSplitTraceItems * 3);
  cudaMemcpyFromSymbol(it.data(), split_item_ns, sizeof(unsigned long long) * it.size());
  cudaMemcpyFromSymbol(where.data(), split_item_where, sizeof(int) * where.size());
  auto t = [&](int pass, int item, int k) { return it[((size_t)pass * kSplitTraceItems + item) * 5 + k]; };
  auto w = [&](int pass, int item, int k) { return where[((size_t)pass * kSplitTraceItems + item) * 3 + k]; };
  auto stage = [&](const char* name, int pass, int from, int to) {
    std::vector<double> v;
    for (int i = 0; i < kSplitTraceItems; ++i)
      if (t(pass, i, from) != kUnset && t(pass, i, to) != kUnset)
        v.push_back(((double)t(pass, i, to) - (double)t(pass, i, from)) / 1e3);
    probe::stats_line(name, v);
  };
  stage("A item: bin the chunk", 0, 0, 1);
  stage("A item: add to row hist", 0, 1, 2);
  stage("A item: ticket", 0, 2, 3);
  stage("B item: wait for boundary", 1, 0, 1);
  stage("B item: token loop", 1, 1, 2);
  stage("B item: reduce + atomics", 1, 2, 3);
  stage("B item: ticket", 1, 3, 4);
  // Against the row's boundary (set by pass A's last item).
  auto from_boundary = [&](const char* name, int k) {
    std::vector<double> v;
    for (int i = 0; i < kSplitTraceItems; ++i) {
      if (t(1, i, k) == kUnset) continue;
      const int row = w(1, i, 2);
      if (row < 0 || row >= kSplitTraceRows || ns[(size_t)row * 9 + 3] == kUnset) continue;
      v.push_back(((double)t(1, i, k) - (double)ns[(size_t)row * 9 + 3]) / 1e3);
    }
    probe::stats_line(name, v);
  };
  from_boundary("boundary -> B item entry", 0);
  from_boundary("boundary -> B item sees it", 1);
  from_boundary("boundary -> B item loop done", 2);
  from_boundary("boundary -> B item ticket", 4);
  if (B != 1) return;
  const unsigned long long b = ns[3];
  printf("    B = 1 items, us from the boundary (A: entry binned added ticket | B: entry seen loop atomics ticket)\n");
  for (int i = 0; i < kSplitTraceItems && t(0, i, 0) != kUnset; ++i) {
    auto rel = [&](int pass, int k) { return t(pass, i, k) == kUnset ? -999.0 : ((double)t(pass, i, k) - (double)b) / 1e3; };
    printf("    %3d  A sm %3d cta %3d %7.2f %7.2f %7.2f %7.2f", i, w(0, i, 0), w(0, i, 1), rel(0, 0), rel(0, 1),
           rel(0, 2), rel(0, 3));
    if (t(1, i, 0) != kUnset)
      printf(" | B sm %3d cta %3d %7.2f %7.2f %7.2f %7.2f %7.2f", w(1, i, 0), w(1, i, 1), rel(1, 0), rel(1, 1),
             rel(1, 2), rel(1, 3), rel(1, 4));
    printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t V = argc > 1 ? atoll(argv[1]) : 129280;
  const float top_p = argc > 2 ? (float)atof(argv[2]) : 0.9f;
  const int kMaxB = 256;
  const std::vector<float> h = probe::anchor_rows(kMaxB, V, 2.0f, 20);
  float* d32;
  cudaMalloc(&d32, h.size() * 4);
  cudaMemcpy(d32, h.data(), h.size() * 4, cudaMemcpyHostToDevice);
  const probe::BatchBuffers buf(kMaxB, V);
  printf("V = %lld, fp32, top_p %.3g, anchors' rows\n", (long long)V, top_p);

  for (int B : {1, 16, 64, 256}) {
    SamplingParams p;
    p.top_p.value = top_p;
    p.seed.value = 42;
    p.offset.per_row = buf.offsets;
    const SampleOutputs out = buf.outputs();
    LogitsView lv;
    lv.data = d32;
    lv.rows = B;
    lv.vocab = V;
    lv.row_stride = V;
    lv.dtype = DType::kF32;
    const float us = probe::median_event_us([&] { launch_pivot(lv, p, out, buf.workspace, 0); }, 9);
    reset_trace();
    launch_pivot(lv, p, out, buf.workspace, 0);
    cudaDeviceSynchronize();
    unsigned long long span[3][2];
    cudaMemcpyFromSymbol(span, split_span, sizeof(span));
    std::vector<unsigned long long> ns((size_t)kSplitTraceRows * 9);
    std::vector<int> info((size_t)kSplitTraceRows * 3);
    cudaMemcpyFromSymbol(ns.data(), split_row_ns, sizeof(unsigned long long) * ns.size());
    cudaMemcpyFromSymbol(info.data(), split_row_info, sizeof(int) * info.size());

    printf("\nB=%d p%.3g: call %.1f us (median of 9, events)\n", B, top_p, us);
    const unsigned long long t0 = span[0][0];
    const bool fused = B * pivot_chunks(V) <= PivotPolicy::kSplitFusedMaxItems;
    const char* names[3] = {"pivot kernel", fused ? "split (A and B fused)" : "pass A (split_hist)",
                            "pass B (split_gather)"};
    for (int l = 0; l < 3; ++l) {
      if (span[l][0] == kUnset) {
        printf("    %-22s not run\n", names[l]);
        continue;
      }
      printf("    %-22s from %7.2f to %7.2f us (span %6.2f)\n", names[l], (span[l][0] - t0) / 1e3,
             (span[l][1] - t0) / 1e3, (span[l][1] - span[l][0]) / 1e3);
    }
    // Per deferred row: the stages between consecutive stamps.
    const int stamps[9][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}, {7, 8}, {0, 8}};
    const char* stage[9] = {"deferred -> A's first item",  "A: items (first -> last)", "A: boundary search",
                            "A's boundary -> B's first",   "B: items (first -> last)", "B: list load",
                            "B: resolve (sort scan race)", "B: write",                 "deferred -> written"};
    int deferred = 0, fallback = 0;
    std::vector<double> listed;
    for (int r = 0; r < std::min(B, kSplitTraceRows); ++r) {
      if (ns[(size_t)r * 9] == kUnset) continue;
      ++deferred;
      if (info[(size_t)r * 3 + 1] == 1) ++fallback;
      if (info[(size_t)r * 3] >= 0) listed.push_back(info[(size_t)r * 3]);
    }
    printf("    rows deferred %d of %d; the one-CTA fallback ran for %d\n", deferred, B, fallback);
    for (int k = 0; k < 9; ++k) {
      std::vector<double> v;
      for (int r = 0; r < std::min(B, kSplitTraceRows); ++r) {
        const unsigned long long* t = &ns[(size_t)r * 9];
        if (t[0] == kUnset || t[stamps[k][0]] == kUnset || t[stamps[k][1]] == kUnset) continue;
        v.push_back(((double)t[stamps[k][1]] - (double)t[stamps[k][0]]) / 1e3);
      }
      probe::stats_line(stage[k], v);
    }
    probe::stats_line("tokens listed from the bin", listed);
    item_report(B, ns);
  }
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
