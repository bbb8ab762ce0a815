// Dev probe (not part of the library): the plain-race kernel alone, built
// from one source tree with one set of its knobs, so that variants can be
// timed in one device call without a library each (a probe binary is ~1 MB,
// the library ~33).  For each dtype, V, B and row kind it prints the median
// of 15 event-timed calls (inputs alternating between two copies, each beyond
// L2 at B >= 256), a checksum of every row's token, status and kept count
// (equal checksums across variants: equal results on every row), and a check
// of 4 rows against the contract's race computed on the host.
//   plain_probe [dtypes fp32,bf16] [vocabs] [batches] [rows anchors,flat,dominant]
// PROBE_T=<temperature> (default 1): below 1 the kernel's T < 1 instantiation.
// PROBE_GRAPH=1: each call captured in a CUDA graph and replayed (the
// table's us_graph).  Inputs rotate over copies of >= 200 MB in all.
// Build (the knobs as -D flags):
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Iinclude -Isrc \
//        dev/plain_probe.cu src/cuda/plain_race.cu -o plain_probe
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "cuda/plain_race.hpp"
#include "tokensift/contract.h"

using namespace tokensift;
using namespace tokensift::cuda_detail;
namespace c = tokensift::contract;

namespace {

std::vector<std::string> split(const char* s) {
  std::vector<std::string> out;
  std::string cur;
  for (; *s; ++s) {
    if (*s == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += *s;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// 64 distinct rows, repeated to B (each row still has its own memory and its
// own Philox offset, so the races differ; the host draws 64 rows, not B).
std::vector<float> make_rows(const std::string& kind, int B, int64_t V) {
  std::mt19937_64 gen(77);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ud(8.0f, 15.0f);
  std::vector<float> h((size_t)B * V);
  for (int r = 0; r < std::min(B, 64); ++r) {
    float* row = &h[(size_t)r * V];
    if (kind == "flat") {
      const float v = 4.0f * nd(gen);
      for (int64_t i = 0; i < V; ++i) row[i] = v;
    } else if (kind == "dominant") {
      for (int64_t i = 0; i < V; ++i) row[i] = nd(gen);
      row[gen() % V] = 30.0f;
    } else {  // the anchors' rows
      for (int64_t i = 0; i < V; ++i) row[i] = 2.0f * nd(gen);
      for (int j = 0; j < 20; ++j) row[gen() % V] += ud(gen);
    }
  }
  for (int r = 64; r < B; ++r) std::copy_n(&h[(size_t)(r % 64) * V], V, &h[(size_t)r * V]);
  return h;
}

// The contract's plain row on the host: the race winner over every eligible
// token, and the eligible count.
void host_race(const float* row, int64_t V, float temperature, uint64_t seed, uint64_t offset, int32_t& token,
               int32_t& kept) {
  float best = -INFINITY;
  token = -1;
  kept = 0;
  for (int64_t i = 0; i < V; ++i) {
    const float z = c::scale(row[i], temperature);
    if (!(z > -INFINITY)) continue;
    ++kept;
    const float s = c::race_score(z, seed, offset, (uint32_t)i);
    if (s > best) {  // ties to the lowest index
      best = s;
      token = (int32_t)i;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const auto dtypes = split(argc > 1 ? argv[1] : "fp32,bf16");
  const auto vocabs = split(argc > 2 ? argv[2] : "129280,151936,262208");
  const auto batches = split(argc > 3 ? argv[3] : "256,1024");
  const auto kinds = split(argc > 4 ? argv[4] : "anchors,flat,dominant");
  const float temperature = getenv("PROBE_T") ? (float)atof(getenv("PROBE_T")) : 1.0f;
  int32_t *tokens, *status, *kept;
  uint64_t* offsets;
  const int kMaxB = 1024;
  cudaMalloc(&tokens, 4 * kMaxB);
  cudaMalloc(&status, 4 * kMaxB);
  cudaMalloc(&kept, 4 * kMaxB);
  cudaMalloc(&offsets, 8 * kMaxB);
  std::vector<uint64_t> hoff(kMaxB);
  for (int i = 0; i < kMaxB; ++i) hoff[i] = 1000003ull * i;
  cudaMemcpy(offsets, hoff.data(), 8 * kMaxB, cudaMemcpyHostToDevice);
  const bool graph = getenv("PROBE_GRAPH") && atoi(getenv("PROBE_GRAPH")) != 0;
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  void* workspace = nullptr;
#ifdef TOKENSIFT_PLAIN_RACE_FLAT
  cudaMalloc(&workspace, plain_race_workspace_size(kMaxB));
#endif
  (void)workspace;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  int failures = 0;
  for (const auto& vs : vocabs) {
    const int64_t V = atoll(vs.c_str());
    for (const auto& kind : kinds) {
      for (const auto& bs : batches) {
        const int B = atoi(bs.c_str());
        const std::vector<float> h = make_rows(kind, B, V);
        for (const auto& dt : dtypes) {
          const bool bf = dt == "bf16";
          const size_t bytes = h.size() * (bf ? 2 : 4);
          // Copies enough to rotate past L2 (>= 200 MB in all, at least two).
          const int ncopy = (int)std::max<size_t>(2, (200u << 20) / bytes + 1);
          std::vector<void*> d(ncopy);
          std::vector<float> hq = h;  // the values the kernel sees (bf16-rounded)
          std::vector<__nv_bfloat16> hb;
          if (bf) {
            hb.resize(h.size());
            for (size_t i = 0; i < h.size(); ++i) {
              hb[i] = __float2bfloat16(h[i]);
              hq[i] = __bfloat162float(hb[i]);
            }
          }
          for (auto& p : d) {
            cudaMalloc(&p, bytes);
            cudaMemcpy(p, bf ? (const void*)hb.data() : (const void*)h.data(), bytes, cudaMemcpyHostToDevice);
          }
          SamplingParams p;
          p.seed.value = 0x5eedull;
          p.temperature.value = temperature;
          p.offset.per_row = offsets;
          SampleOutputs out;
          out.tokens = tokens;
          out.row_status = status;
          out.kept_counts = kept;
          LogitsView lv;
          lv.rows = B;
          lv.vocab = V;
          lv.row_stride = V;
          lv.dtype = bf ? DType::kBF16 : DType::kF32;
          auto call = [&](cudaStream_t st) {
#ifdef TOKENSIFT_PLAIN_RACE_FLAT
            launch_plain_race(lv, p, out, workspace, st);
#else
            launch_plain_race(lv, p, out, st);
#endif
          };
          // PROBE_GRAPH=1: each copy's call captured in a graph, replays timed
          // one by one (the table's us_graph); else eager launches.
          std::vector<cudaGraphExec_t> execs;
          if (graph) {
            for (int c = 0; c < ncopy; ++c) {
              lv.data = d[c];
              cudaGraph_t gr;
              cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
              call(stream);
              cudaStreamEndCapture(stream, &gr);
              cudaGraphExec_t ex;
              cudaGraphInstantiate(&ex, gr, 0);
              cudaGraphDestroy(gr);
              execs.push_back(ex);
            }
          }
          std::vector<float> t;
          const int reps = std::max(16, 2 * ncopy + 1);
          for (int rep = 0; rep < reps; ++rep) {
            lv.data = d[rep % ncopy];
            cudaEventRecord(e0, stream);
            if (graph) cudaGraphLaunch(execs[rep % ncopy], stream);
            else call(stream);
            cudaEventRecord(e1, stream);
            cudaEventSynchronize(e1);
            float ms;
            cudaEventElapsedTime(&ms, e0, e1);
            if (rep > 0) t.push_back(ms * 1000.0f);
          }
          for (auto& ex : execs) cudaGraphExecDestroy(ex);
          std::sort(t.begin(), t.end());
          std::vector<int32_t> ht(B), hs(B), hk(B);
          cudaMemcpy(ht.data(), tokens, 4 * B, cudaMemcpyDeviceToHost);
          cudaMemcpy(hs.data(), status, 4 * B, cudaMemcpyDeviceToHost);
          cudaMemcpy(hk.data(), kept, 4 * B, cudaMemcpyDeviceToHost);
          uint64_t sum = 1469598103934665603ull;
          for (int r = 0; r < B; ++r)
            for (int32_t v : {ht[r], hs[r], hk[r]}) sum = (sum ^ (uint32_t)v) * 1099511628211ull;
          int bad = 0;
          for (int r : {0, 1, B / 2, B - 1}) {
            int32_t tok, kc;
            host_race(&hq[(size_t)r * V], V, temperature, p.seed.value, hoff[r], tok, kc);
            bad += tok != ht[r] || kc != hk[r] || hs[r] != TOKENSIFT_ROW_OK;
          }
          failures += bad;
          const double floor_us = (double)bytes / 4245e3;  // the table's copy bandwidth, read + write
          printf("%s T=%.2f %-4s V=%-6lld B=%-4d %-8s %8.1f us (min %.1f) %5.2fx floor  sum %016llx  host check %s\n",
                 graph ? "graph" : "eager", temperature, dt.c_str(), (long long)V, B, kind.c_str(), t[t.size() / 2], t[0], t[t.size() / 2] / floor_us,
                 (unsigned long long)sum, bad ? "FAIL" : "ok");
          fflush(stdout);
          for (auto& q : d) cudaFree(q);
        }
      }
    }
  }
  const cudaError_t err = cudaGetLastError();
  printf("err %s, host-check failures %d\n", cudaGetErrorString(err), failures);
  return failures != 0 || err != cudaSuccess;
}
