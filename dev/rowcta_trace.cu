// Dev probe (not part of the library): where the row-CTA kernel's time goes
// at large batches.  At B >= 256 the top-k row-CTA calls cost ~30 us per row
// and CTA slot more than the greedy kernel that streams the same rows
// (bench/results/sampler-h200-2026-11-30.md: fp32 k50 minus greedy is 27.5 us
// at B = 256 for every V, ~120 us at B = 1024 = 4 rows per slot), a cost that
// does not grow with V.  This probe times whole batched calls (CUDA events,
// median of 9) of the anchors' rows (N(0, 2^2) + 20 tokens boosted +8..+15,
// V = 129,280) and, from one traced call, each CTA's stages (clock64 stamps
// of pivot_rowcta.cuh under TOKENSIFT_ROWCTA_TRACE, in us at the SM clock
// measured here): parameters, first iteration and tau, the stream, the row
// statistics, the final compaction, the finish (and its own stages: the
// one-warp sort, decision and race); then min / median / p90 / max
// over the CTAs, the kernel's span by %globaltimer, how many rows were
// streamed twice or compacted mid-stream, and the tokens offered per row.
//   rowcta_trace [V] [rows] [batches]
// rows: anchors (default), gaussian (N(0, 2^2), no boosted head) or dominant
// (N(0, 1) with one token at 30 per row); batches: a comma list (default
// 256,1024; the row-CTA kernel runs from its switch, kRowCtaMinRows for k50
// and kRowCtaMinPMinRows for min-p, and prints no trace below it).
// Build and run on the device (gpu-check's `rowcta_trace` step):
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Iinclude -Isrc \
//        -DTOKENSIFT_ROWCTA_TRACE dev/rowcta_trace.cu src/cuda/greedy_argmax.cu src/cuda/plain_race.cu -o /tmp/rt
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/pivot_kernels.cuh"  // the kernels, instantiated here by launch_pivot
#include "cuda/pivot_sampler.cu"
#include "probe_rows.hpp"

using namespace tokensift;
using namespace tokensift::cuda_detail;

int main(int argc, char** argv) {
  const int64_t V = argc > 1 ? atoll(argv[1]) : 129280;
  const std::string rows = argc > 2 ? argv[2] : "anchors";
  std::vector<int> batches;
  for (const char* b = argc > 3 ? argv[3] : "256,1024"; *b;) {
    batches.push_back(atoi(b));
    while (*b && *b != ',') ++b;
    if (*b == ',') ++b;
  }
  const int kMaxB = *std::max_element(batches.begin(), batches.end());
  const std::vector<float> h = rows == "dominant"   ? probe::dominant_rows(kMaxB, V)
                               : rows == "gaussian" ? probe::anchor_rows(kMaxB, V, 2.0f, 0)
                                                    : probe::anchor_rows(kMaxB, V, 2.0f, 20);
  std::vector<__nv_bfloat16> hb(h.size());
  for (size_t i = 0; i < h.size(); ++i) hb[i] = __float2bfloat16(h[i]);
  float* d32;
  __nv_bfloat16* d16;
  cudaMalloc(&d32, h.size() * 4);
  cudaMalloc(&d16, h.size() * 2);
  cudaMemcpy(d32, h.data(), h.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(d16, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice);
  const probe::BatchBuffers buf(kMaxB, V);
  const double mhz = probe::sm_clock_mhz();
  printf("SM clock %.0f MHz, V = %lld, %s rows\n", mhz, (long long)V, rows.c_str());

  struct Case {
    const char* name;
    int k;
    float min_p;
  };
  const Case cases[] = {{"k50", 50, 0.0f}, {"minp0.05", 0, 0.05f}};
  for (int dt = 0; dt < 2; ++dt) {
    for (int B : batches) {
      for (const Case& c : cases) {
        SamplingParams p;
        p.top_k.value = c.k;
        p.min_p.value = c.min_p;
        p.seed.value = 42;
        p.offset.per_row = buf.offsets;
        const SampleOutputs out = buf.outputs();
        LogitsView lv;
        lv.data = dt == 0 ? (const void*)d32 : (const void*)d16;
        lv.rows = B;
        lv.vocab = V;
        lv.row_stride = V;
        lv.dtype = dt == 0 ? DType::kF32 : DType::kBF16;
        const float us = probe::median_event_us([&] { launch_pivot(lv, p, out, buf.workspace, 0); }, 9);
        const int n = std::min(B, kRowCtaTraceRows);
        std::vector<long long> zero((size_t)kRowCtaTraceRows * 7, 0);
        cudaMemcpyToSymbol(rowcta_trace, zero.data(), sizeof(long long) * zero.size());
        std::vector<long long> zero16((size_t)kRowCtaMergeTraceRows * 16, 0);
        cudaMemcpyToSymbol(rowcta_merge_trace, zero16.data(), sizeof(long long) * zero16.size());
        launch_pivot(lv, p, out, buf.workspace, 0);
        cudaDeviceSynchronize();
        std::vector<long long> tr((size_t)kRowCtaTraceRows * 7);
        std::vector<unsigned long long> ns((size_t)kRowCtaTraceRows * 2);
        std::vector<int> info((size_t)kRowCtaTraceRows * kRowCtaTraceInfo);
        cudaMemcpyFromSymbol(tr.data(), rowcta_trace, sizeof(long long) * tr.size());
        cudaMemcpyFromSymbol(ns.data(), rowcta_ns, sizeof(unsigned long long) * ns.size());
        cudaMemcpyFromSymbol(info.data(), rowcta_info, sizeof(int) * info.size());
        printf("\n%s B=%d %s: call %.1f us (median of 9, events)\n", dt == 0 ? "fp32" : "bf16", B, c.name, us);
        if (tr[1] == 0) {
          printf("    (no trace: the row-CTA kernel did not run)\n");
          continue;
        }
        const char* names[6] = {"params", "first tau", "stream", "row stats", "final compaction",
                                "finish (decide+draw)"};
        int finished = 0;
        for (int s = 1; s <= 6; ++s) {
          std::vector<double> v;
          for (int r = 0; r < n; ++r) {
            const long long* t = &tr[(size_t)r * 7];
            if (t[s] == 0 || t[s - 1] == 0) continue;
            v.push_back((double)(t[s] - t[s - 1]) / mhz);
          }
          if (s == 6) finished = (int)v.size();
          if (!v.empty()) probe::stats_line(names[s - 1], v);
        }
        // The finish's own stages (decide_and_draw's TS_MERGE_MARK stamps):
        // entry 2, pre-selection done 3, the one-warp sort 12, its decision
        // 13, the list's decision and race done 4, the block race 5, end 6.
        {
          std::vector<long long> mt((size_t)kRowCtaMergeTraceRows * 16);
          cudaMemcpyFromSymbol(mt.data(), rowcta_merge_trace, sizeof(long long) * mt.size());
          const int seq[7] = {2, 3, 12, 13, 4, 5, 6};
          const char* fin[6] = {"  finish: pre-select", "  finish: warp sort", "  finish: warp decide",
                                "  finish: warp race", "  finish: block race", "  finish: log-prob"};
          for (int k = 0; k < 6; ++k) {
            std::vector<double> v;
            for (int r = 0; r < n; ++r) {
              const long long* t = &mt[(size_t)r * 16];
              if (t[seq[k]] == 0 || t[seq[k + 1]] == 0) continue;
              v.push_back((double)(t[seq[k + 1]] - t[seq[k]]) / mhz);
            }
            if (!v.empty()) probe::stats_line(fin[k], v);
          }
        }
        std::vector<double> span, start;
        unsigned long long t0 = ~0ull, t1 = 0;
        for (int r = 0; r < n; ++r) {
          t0 = std::min(t0, ns[(size_t)r * 2]);
          t1 = std::max(t1, ns[(size_t)r * 2 + 1]);
        }
        for (int r = 0; r < n; ++r) {
          span.push_back((double)(ns[(size_t)r * 2 + 1] - ns[(size_t)r * 2]) / 1e3);
          start.push_back((double)(ns[(size_t)r * 2] - t0) / 1e3);
        }
        probe::stats_line("CTA span (globaltimer)", span);
        probe::stats_line("CTA start after first", start);
        int twice = 0, compacted = 0;
        std::vector<double> cnt, comps, offers;
        for (int r = 0; r < n; ++r) {
          const int* in = &info[(size_t)r * kRowCtaTraceInfo];
          twice += in[0] > 1;
          compacted += in[1] > 0;
          cnt.push_back(in[2]);
          comps.push_back(in[1]);
          offers.push_back(in[4]);
        }
        // Rows streamed twice (top-k rows: the first tau overshot their
        // k-th): which, their first tau and what the first pass listed.
        {
          int shown = 0;
          for (int r = 0; r < n && shown < 8; ++r) {
            const int* in = &info[(size_t)r * kRowCtaTraceInfo];
            if (in[0] <= 1) continue;
            int bits = in[5];
            float tau0;
            std::memcpy(&tau0, &bits, sizeof tau0);
            printf("    streamed twice: row %d, first tau %.4f, listed after pass 0 %d, offers %d\n", r, tau0, in[6],
                   in[4]);
            ++shown;
          }
        }
        probe::stats_line("listed at stream end", cnt);
        probe::stats_line("compactions / filters", comps);
        probe::stats_line("tokens offered", offers);
        // Whether the slowest streams (the kernel ends with its slowest
        // CTA) are the rows that offer most: the slowest tenth against the
        // rest (mean stream, mean offers), the correlation of stream time
        // and offers, and each CTA's end.
        {
          std::vector<std::pair<double, int>> so;
          for (int r = 0; r < n; ++r) {
            const long long* t = &tr[(size_t)r * 7];
            if (t[3] != 0 && t[2] != 0) so.push_back({(double)(t[3] - t[2]) / mhz, r});
          }
          std::sort(so.begin(), so.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
          const size_t top = std::max<size_t>(1, so.size() / 10);
          double so_t = 0, so_r = 0, of_t = 0, of_r = 0, mx = 0, my = 0;
          for (size_t k = 0; k < so.size(); ++k) {
            const double o = offers[(size_t)so[k].second];
            (k < top ? so_t : so_r) += so[k].first;
            (k < top ? of_t : of_r) += o;
            mx += so[k].first, my += o;
          }
          const double m = (double)so.size();
          mx /= m, my /= m;
          double sxy = 0, sxx = 0, syy = 0;
          for (const auto& e : so) {
            const double dx = e.first - mx, dy = offers[(size_t)e.second] - my;
            sxy += dx * dy, sxx += dx * dx, syy += dy * dy;
          }
          const double rest = std::max(1.0, m - (double)top);
          printf("    slowest tenth of streams: %.2f us, %.0f offers (the rest %.2f us, %.0f offers); "
                 "r(stream, offers) %.2f\n",
                 so_t / (double)top, of_t / (double)top, so_r / rest, of_r / rest,
                 sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0.0);
          std::vector<double> end;
          for (int r = 0; r < n; ++r) end.push_back((double)(ns[(size_t)r * 2 + 1] - t0) / 1e3);
          probe::stats_line("CTA end after first start", end);
        }
        printf("    kernel span %.1f us; rows streamed twice %d, compacted mid-stream %d, finished %d of %d\n",
               (double)(t1 - t0) / 1e3, twice, compacted, finished, n);
      }
    }
  }
  printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
