// The CUDA backend against the CPU backend (and the oracle where they differ)
// over the foundation's adversarial matrix, plus determinism, batch
// invariance, graph capture and per-row parameter errors.
//
// Environment:
//   TOKENSIFT_GPU_ROW_SCALE  scales the random-matrix row counts (default 1:
//                            1,009,500 rows for the pivot path, a tenth for sort)
//   TOKENSIFT_GPU_REPORT     path of a JSON summary written at the end
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gpu_harness.hpp"
#include "oracle.hpp"

namespace tokensift::testing {
namespace {

double row_scale() {
  const char* s = std::getenv("TOKENSIFT_GPU_ROW_SCALE");
  return s ? std::max(0.0, std::atof(s)) : 1.0;
}

struct Tally {
  int64_t rows = 0, token_mismatch = 0, status_mismatch = 0, kept_mismatch = 0, band_rows = 0,
          band_differences = 0, logprob_mismatch = 0, oracle_checked = 0;
};
std::map<std::string, Tally>& tallies() {
  static std::map<std::string, Tally> t;
  return t;
}
std::map<std::string, std::string>& flags() {
  static std::map<std::string, std::string> f;
  return f;
}

// Compares one batch's GPU results with the CPU backend's; rows that differ
// are judged by the oracle (a band row may differ in its boundary token).
// Without `logprobs` (the GPU call asked for none) log-probs are not compared.
void compare_batch(const HostBatch& b, const Results& gpu, const Results& cpu, Tally& t, int& reported,
                   bool logprobs = true) {
  for (int64_t r = 0; r < b.rows; ++r) {
    ++t.rows;
    const bool same = gpu.status[r] == cpu.status[r] && gpu.token[r] == cpu.token[r] && gpu.kept[r] == cpu.kept[r];
    const bool small = b.vocab <= 1000;
    if (same && !small) {
      if (logprobs && cpu.status[r] == TOKENSIFT_ROW_OK) {
        const double d = std::fabs((double)gpu.logprob[r] - (double)cpu.logprob[r]);
        if (!(d <= 2e-5)) ++t.logprob_mismatch;
      }
      continue;
    }
    const OracleResult ref = oracle_sample(b.row(r), b.vocab, b.params(r));
    ++t.oracle_checked;
    t.band_rows += ref.band;
    const std::string why =
        check_row(ref, gpu.status[r], gpu.token[r], gpu.kept[r], logprobs ? &gpu.logprob[r] : nullptr);
    std::string problem = why;
    if (why.empty()) {
      if (same) continue;
      if (ref.band) {  // a band row may differ in its boundary token
        ++t.band_differences;
        continue;
      }
      problem = "GPU agrees with the oracle but the CPU backend does not";
    }
    if (gpu.status[r] != cpu.status[r] || gpu.status[r] != ref.status) ++t.status_mismatch;
    else if (gpu.token[r] != cpu.token[r] || !why.empty()) ++t.token_mismatch;
    else if (gpu.kept[r] != cpu.kept[r]) ++t.kept_mismatch;
    else ++t.logprob_mismatch;
    const std::string& why2 = problem;
    if (reported++ < 12)
      ADD_FAILURE() << "V=" << b.vocab << " dtype=" << dtype_name(b.dtype) << " dist=" << dist_name(b.dist[r])
                    << " row=" << r << " " << describe(b.params(r)) << ": " << why2 << " (gpu token "
                    << gpu.token[r] << " kept " << gpu.kept[r] << " status " << gpu.status[r] << "; cpu token "
                    << cpu.token[r] << " kept " << cpu.kept[r] << " status " << cpu.status[r] << ")";
  }
}

// One kAuto call on d (poisoned first), matched against the CPU backend on b.
void sample_and_compare(const HostBatch& b, DeviceBatch& d, Tally& t, int& reported) {
  GpuSampler g;
  ASSERT_EQ(g.init(Algo::kAuto, b.rows, b.vocab, b.dtype), Status::kOk);
  d.poison();
  ASSERT_EQ(g.run(d), Status::kOk) << last_error_message();
  TS_CUDA_OK(cudaDeviceSynchronize());
  compare_batch(b, d.fetch(), run_cpu(b), t, reported);
}

struct Shape {
  int64_t vocab;
  int64_t rows;
};

// Batches of the kernel-choice tests (greedy argmax, row-CTA).
struct BatchShape {
  int64_t rows, vocab;
};

void run_matrix(Algo algo, const char* name, double scale) {
  const Shape shapes[] = {{1, 60000},     {2, 100000},    {3, 100000},    {7, 100000},   {17, 100000},
                          {33, 100000},   {100, 100000},  {1000, 150000}, {4095, 50000}, {4096, 50000},
                          {4097, 40000},  {8193, 40000},  {32000, 15000}, {129280, 2000}, {151936, 1500},
                          {262208, 1000}};
  const DType dtypes[] = {DType::kF32, DType::kBF16, DType::kF16};
  Tally& t = tallies()[name];
  int reported = 0;
  uint64_t seed = 0x5eed0000;
  for (const Shape& s : shapes) {
    const int64_t total = std::max<int64_t>(3, (int64_t)(s.rows * scale));
    const int64_t per = std::max<int64_t>(1, std::min<int64_t>(8192, (int64_t)(1 << 25) / s.vocab));
    std::vector<std::pair<int64_t, uint64_t>> jobs;  // (rows, seed)
    int64_t done = 0, j = 0;
    while (done < total) {
      const int64_t n = std::min(per, total - done);
      jobs.push_back({n, seed + (uint64_t)j * 7919});
      done += n;
      ++j;
    }
    seed += 1000003;
    // Generate several batches ahead on host threads while the GPU and the CPU backend work.
    const unsigned par = std::max(2u, std::min(8u, std::thread::hardware_concurrency() / 2));
    for (size_t first = 0; first < jobs.size(); first += par) {
      std::vector<std::future<HostBatch>> gen;
      for (size_t k = first; k < std::min(jobs.size(), first + par); ++k) {
        const DType dt = dtypes[k % 3];
        gen.push_back(std::async(std::launch::async, [=] { return make_batch(jobs[k].first, s.vocab, dt, jobs[k].second); }));
      }
      for (auto& f : gen) {
        HostBatch b = f.get();
        DeviceBatch d(b);
        GpuSampler g;
        ASSERT_EQ(g.init(algo, b.rows, b.vocab, b.dtype), Status::kOk) << last_error_message();
        d.poison();
        ASSERT_EQ(g.run(d), Status::kOk) << last_error_message();
        TS_CUDA_OK(cudaDeviceSynchronize());
        const Results gpu = d.fetch();
        const Results cpu = run_cpu(b);
        compare_batch(b, gpu, cpu, t, reported);
      }
    }
  }
  std::printf("[%s] rows %lld, token mismatches %lld, status mismatches %lld, kept mismatches %lld, "
              "logprob mismatches %lld, band rows seen %lld (of %lld oracle-checked), band differences %lld\n",
              name, (long long)t.rows, (long long)t.token_mismatch, (long long)t.status_mismatch,
              (long long)t.kept_mismatch, (long long)t.logprob_mismatch, (long long)t.band_rows,
              (long long)t.oracle_checked, (long long)t.band_differences);
  EXPECT_EQ(t.token_mismatch + t.status_mismatch + t.kept_mismatch + t.logprob_mismatch, 0);
}

TEST(GpuSampler, PivotMatchesCpuOnRandomMatrix) {
  TS_REQUIRE_GPU();
  run_matrix(Algo::kAuto, "pivot", row_scale());
}

TEST(GpuSampler, SortMatchesCpuOnRandomMatrix) {
  TS_REQUIRE_GPU();
  run_matrix(Algo::kSort, "sort", row_scale() * 0.1);
}

// Benchmark-shaped rows: every case of the benchmark, both dtypes, the three
// vocabularies, plus flat and one-dominant rows.
TEST(GpuSampler, BenchmarkCasesMatchCpu) {
  TS_REQUIRE_GPU();
  struct Case {
    const char* name;
    RowParams p;
  };
  const Case cases[] = {{"k50_p0.9", {1.0f, 0.0f, 50, 0.9f, 1, 0}}, {"p0.9", {1.0f, 0.0f, 0, 0.9f, 2, 0}},
                        {"k50", {1.0f, 0.0f, 50, 1.0f, 3, 0}},      {"minp0.05", {1.0f, 0.05f, 0, 1.0f, 4, 0}},
                        {"plain", {1.0f, 0.0f, 0, 1.0f, 5, 0}},     {"greedy", {0.0f, 0.0f, 0, 1.0f, 6, 0}}};
  Tally& t = tallies()["bench_cases"];
  int reported = 0;
  for (int64_t vocab : {129280, 151936, 262208})
    for (DType dt : {DType::kF32, DType::kBF16})
      for (Dist dist : {Dist::kOutlierHead, Dist::kFlat, Dist::kDominant})
        for (const Case& c : cases) {
          BatchOptions o;
          o.dist = dist;
          o.random_params = false;
          o.fixed = c.p;
          o.max_pad = 0;
          HostBatch b = make_batch(dist == Dist::kOutlierHead ? 24 : 4, vocab, dt, 77 + vocab, o);
          for (int64_t r = 0; r < b.rows; ++r) b.offset[r] = (uint64_t)r * 1000003u;
          DeviceBatch d(b);
          sample_and_compare(b, d, t, reported);
        }
  EXPECT_EQ(t.token_mismatch + t.status_mismatch + t.kept_mismatch + t.logprob_mismatch, 0);
}

bool same_results(const Results& a, const Results& b) {
  return a.token == b.token && a.status == b.status && a.kept == b.kept &&
         std::memcmp(a.logprob.data(), b.logprob.data(), a.logprob.size() * 4) == 0;
}

TEST(GpuSampler, DeterministicAcrossRuns) {
  TS_REQUIRE_GPU();
  for (int64_t vocab : {1000, 129280}) {
    HostBatch b = make_batch(64, vocab, DType::kF32, 4242 + vocab);
    DeviceBatch d(b);
    GpuSampler g;
    ASSERT_EQ(g.init(Algo::kAuto, b.rows, b.vocab, b.dtype), Status::kOk);
    ASSERT_EQ(g.run(d), Status::kOk);
    const Results first = d.fetch();
    for (int i = 0; i < 5; ++i) {
      d.poison();
      ASSERT_EQ(g.run(d), Status::kOk);
      EXPECT_TRUE(same_results(first, d.fetch())) << "run " << i << " differs at V=" << vocab;
    }
  }
}

// A row's result does not depend on the batch around it or its position.
TEST(GpuSampler, BatchInvariant) {
  TS_REQUIRE_GPU();
  for (int64_t vocab : {777, 129280}) {
    HostBatch big = make_batch(48, vocab, DType::kBF16, 99 + vocab);
    DeviceBatch dbig(big);
    GpuSampler g;
    ASSERT_EQ(g.init(Algo::kAuto, big.rows, vocab, big.dtype), Status::kOk);
    ASSERT_EQ(g.run(dbig), Status::kOk);
    const Results all = dbig.fetch();
    for (int64_t r : {0, 5, 47}) {
      HostBatch one(1, vocab, vocab, big.dtype);
      one.set_row(0, big.row(r));
      one.set_params(0, big.params(r));
      one.dist[0] = big.dist[r];
      DeviceBatch d1(one);
      ASSERT_EQ(g.run(d1), Status::kOk);
      const Results alone = d1.fetch();
      EXPECT_EQ(alone.token[0], all.token[r]) << "row " << r;
      EXPECT_EQ(alone.status[0], all.status[r]) << "row " << r;
      EXPECT_EQ(alone.kept[0], all.kept[r]) << "row " << r;
    }
  }
}

__global__ void advance_offsets_kernel(uint64_t* offsets, int64_t n) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) offsets[i] += 1;
}

// Scalar filter parameters for a whole batch (batches of them from 256 rows
// take the row-CTA kernel): set_rows gives the host batch's rows (the CPU
// reference) the same filter, keeping their seeds and offsets; apply gives
// them to a device batch as scalars.
struct ScalarFilter {
  float temperature;
  int32_t top_k;
  float top_p;
  float min_p;
  void set_rows(HostBatch& b) const {
    for (int64_t r = 0; r < b.rows; ++r) {
      b.temperature[r] = temperature, b.min_p[r] = min_p;
      b.top_k[r] = top_k, b.top_p[r] = top_p;
    }
  }
  void apply(DeviceBatch& d) const {
    d.params.temperature = {temperature, nullptr};
    d.params.min_p = {min_p, nullptr};
    d.params.top_k = {top_k, nullptr};
    d.params.top_p = {top_p, nullptr};
  }
};

// Captures one call on batch b (plus an offset bump) in a graph and replays
// it `steps` times: every replay must equal an eager call with the offsets
// the replay saw (100 + step), and, with `with_cpu`, the CPU backend too.
// With `scalar` the device batches take its parameters as scalars (else
// b's per-row arrays); without `logprobs` the calls ask for none.  `ok` ends
// false on any difference.
void check_graph_replay(const HostBatch& b, const ScalarFilter* scalar, int steps, bool with_cpu, bool& ok,
                        bool logprobs = true) {
  ok = false;
  DeviceBatch d(b);
  if (scalar) scalar->apply(d);
  if (!logprobs) d.out.logprobs = nullptr;
  GpuSampler g;
  ASSERT_EQ(g.init(Algo::kAuto, b.rows, b.vocab, b.dtype), Status::kOk);
  cudaStream_t s;
  TS_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  TS_CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  ASSERT_EQ(g.run(d, s), Status::kOk) << last_error_message();
  advance_offsets_kernel<<<(unsigned)((b.rows + 255) / 256), 256, 0, s>>>(d.offset->as<uint64_t>(), b.rows);
  TS_CUDA_OK(cudaStreamEndCapture(s, &graph));
  TS_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  bool same = true;
  for (int step = 0; step < steps; ++step) {
    d.poison();
    TS_CUDA_OK(cudaGraphLaunch(exec, s));
    TS_CUDA_OK(cudaStreamSynchronize(s));
    const Results replay = d.fetch();
    HostBatch e = b;
    for (int64_t r = 0; r < e.rows; ++r) e.offset[r] = 100 + (uint64_t)step;
    DeviceBatch de(e);
    if (scalar) scalar->apply(de);
    if (!logprobs) de.out.logprobs = nullptr;
    de.poison();
    ASSERT_EQ(g.run(de, s), Status::kOk);
    TS_CUDA_OK(cudaStreamSynchronize(s));
    const Results eager = de.fetch();
    same = same && replay.token == eager.token && replay.status == eager.status && replay.kept == eager.kept;
    EXPECT_EQ(replay.token, eager.token) << "replay " << step;
    EXPECT_EQ(replay.kept, eager.kept) << "replay " << step;
    if (with_cpu) {
      Tally t;
      int reported = 0;
      compare_batch(e, eager, run_cpu(e), t, reported, logprobs);
      const int64_t differ = t.token_mismatch + t.status_mismatch + t.kept_mismatch + t.logprob_mismatch;
      same = same && differ == 0;
      EXPECT_EQ(differ, 0) << "replay " << step;
    }
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
  ok = same;
}

// A chunked-kernel batch with per-row parameters (every other row top-k and
// top-p, the rest random).
TEST(GpuSampler, GraphCaptureAndReplay) {
  TS_REQUIRE_GPU();
  flags()["graph_capture"] = "fail";
  HostBatch b = make_batch(32, 129280, DType::kF32, 2024);
  for (int64_t r = 0; r < b.rows; ++r) {
    RowParams p = b.params(r);
    if (r % 2) p = RowParams{1.0f, 0.0f, 50, 0.9f, (uint64_t)r, 0};
    p.offset = 100;
    b.set_params(r, p);
  }
  bool ok = false;
  check_graph_replay(b, nullptr, 4, false, ok);
  if (ok) flags()["graph_capture"] = "pass";
}

// A 256-row batch (fp32 unless `dt` says) at V = 129,280 with scalar
// parameters `f` (so one of the large-batch kernels takes it), captured and
// replayed three times, each replay also checked against the CPU backend;
// runs after the test above and marks graph_capture failed on any difference.
void check_scalar_graph_replay(uint64_t seed, const ScalarFilter& f, bool logprobs, DType dt = DType::kF32) {
  HostBatch b = make_batch(256, 129280, dt, seed);
  f.set_rows(b);
  for (int64_t r = 0; r < b.rows; ++r) b.offset[r] = 100;
  bool ok = false;
  check_graph_replay(b, &f, 3, true, ok, logprobs);
  if (!ok) flags()["graph_capture"] = "fail";
}

// The row-CTA kernel (scalar top-k with top-p, B >= 256, a temperature).
TEST(GpuSampler, GraphCaptureAndReplayRowCta) {
  TS_REQUIRE_GPU();
  check_scalar_graph_replay(2025, ScalarFilter{0.8f, 50, 0.9f, 0.0f}, true);
}

// The same for bf16 rows, top-k and min-p (each dtype and filter has its own
// row-CTA kernel instance, with its own way of loading ahead).
TEST(GpuSampler, GraphCaptureAndReplayRowCtaBf16) {
  TS_REQUIRE_GPU();
  check_scalar_graph_replay(2027, ScalarFilter{1.0f, 50, 1.0f, 0.0f}, true, DType::kBF16);
  check_scalar_graph_replay(2028, ScalarFilter{1.0f, 0, 1.0f, 0.05f}, false, DType::kBF16);
}

// The row-CTA top-p kernel (scalar top-p only, B >= 256, no log-probs asked
// for), fp32 and bf16 (each dtype has its own instance); at p = 0.1 the
// mixed rows' kept sets run past the first list more often (the split
// launches behind the kernel).
TEST(GpuSampler, GraphCaptureAndReplayRowCtaTopP) {
  TS_REQUIRE_GPU();
  check_scalar_graph_replay(2029, ScalarFilter{1.0f, 0, 0.9f, 0.0f}, false);
  check_scalar_graph_replay(2030, ScalarFilter{0.8f, 0, 0.9f, 0.0f}, false, DType::kBF16);
  check_scalar_graph_replay(2031, ScalarFilter{1.0f, 0, 0.1f, 0.0f}, false);
}

// The plain-race kernel (scalar plain rows, B >= 128, no log-probs asked for).
TEST(GpuSampler, GraphCaptureAndReplayPlain) {
  TS_REQUIRE_GPU();
  check_scalar_graph_replay(2026, ScalarFilter{0.9f, 0, 1.0f, 0.0f}, false);
}

// The plain race's flat split (unpadded rows: two launches, the clearing
// kernel and the race as its programmatic dependent), fp32 and bf16, at 100
// rows (each row in two or three CTAs) and 64.
TEST(GpuSampler, GraphCaptureAndReplayPlainFlat) {
  TS_REQUIRE_GPU();
  const ScalarFilter f{1.0f, 0, 1.0f, 0.0f};
  for (DType dt : {DType::kF32, DType::kBF16})
    for (int64_t rows : {100, 64}) {
      BatchOptions o;
      o.max_pad = 0;
      HostBatch b = make_batch(rows, 129280, dt, 2040 + (uint64_t)rows + (uint64_t)dt, o);
      f.set_rows(b);
      for (int64_t r = 0; r < b.rows; ++r) b.offset[r] = 100;
      bool ok = false;
      check_graph_replay(b, &f, 3, true, ok, /*logprobs=*/false);
      if (!ok) flags()["graph_capture"] = "fail";
    }
}

// The split launch streaming behind the kernel that defers min-p rows:
// Gaussian rows with scalar min-p 0.001 and top-p 0.9, so that each row's
// min-p survivors (z within 6.9 of the row's max: ~9,000 of 32,768 and
// ~20,000 of 129,280 tokens of N(0, 2^2)) overflow the merge's list and the
// row defers to the split launch, which takes it as it is published.
//   256 rows at V = 32,768: the row-CTA kernel (min-p from
//     kRowCtaMinPMinRows rows; 256 x 8 chunks = 2,048 split items, one
//     launch, streaming behind it);
//   64 rows at V = 129,280: the chunked kernel (the row-CTA kernel at
//     6b78ae9, whose switch for min-p was 64 rows then).
// Each replay must equal an eager call and the CPU backend.
TEST(GpuSampler, GraphCaptureAndReplayRowCtaSplitStream) {
  TS_REQUIRE_GPU();
  const ScalarFilter f{1.0f, 0, 0.9f, 0.001f};
  const BatchShape shapes[] = {{256, 32768}, {64, 129280}};
  for (const BatchShape& sh : shapes) {
    BatchOptions o;
    o.dist = Dist::kGaussian;
    o.random_params = false;
    o.max_pad = 0;
    HostBatch b = make_batch(sh.rows, sh.vocab, DType::kF32, 2031, o);
    f.set_rows(b);
    for (int64_t r = 0; r < b.rows; ++r) b.offset[r] = 100;
    bool ok = false;
    check_graph_replay(b, &f, 3, true, ok);
    if (!ok) flags()["graph_capture"] = "fail";
  }
}

// One workspace serves calls of any shape and either algorithm in any order:
// a smaller call's scratch must not be mistaken for a larger call's tickets.
// The split fallback streaming behind the chunked kernel (its launch is the
// pivot kernel's programmatic dependent: an edge of that kind in the graph).
// 16 Gaussian rows at top-p 0.9, each kept set tens of thousands deep, so
// every row defers to it; then 64 anchors'-style rows, of which some defer
// while the others finish in the pivot kernel.  Each replay must equal an
// eager call and the CPU backend.
TEST(GpuSampler, GraphCaptureAndReplaySplitStream) {
  TS_REQUIRE_GPU();
  for (const Dist dist : {Dist::kGaussian, Dist::kOutlierHead}) {
    BatchOptions o;
    o.dist = dist;
    o.random_params = false;
    o.fixed = RowParams{1.0f, 0.0f, 0, 0.9f, 31, 0};
    o.max_pad = 0;
    HostBatch b = make_batch(dist == Dist::kGaussian ? 16 : 64, 129280, DType::kF32, 2029, o);
    for (int64_t r = 0; r < b.rows; ++r) b.offset[r] = 100;
    bool ok = false;
    check_graph_replay(b, nullptr, 3, true, ok);
    if (!ok) flags()["graph_capture"] = "fail";
  }
}

// A CUDA sampler of each algorithm, for tests that share one workspace.
void make_pivot_and_sort(std::unique_ptr<Sampler>& pivot, std::unique_ptr<Sampler>& sort) {
  SamplerConfig c;
  c.backend = Backend::kCuda;
  c.algo = Algo::kPivot;
  ASSERT_EQ(Sampler::create(c, &pivot), Status::kOk);
  c.algo = Algo::kSort;
  ASSERT_EQ(Sampler::create(c, &sort), Status::kOk);
}

TEST(GpuSampler, WorkspaceReusedAcrossShapesAndAlgos) {
  TS_REQUIRE_GPU();
  std::unique_ptr<Sampler> pivot, sort;
  ASSERT_NO_FATAL_FAILURE(make_pivot_and_sort(pivot, sort));
  size_t need = 0, b1 = 0, b2 = 0;
  pivot->workspace_size(4000, 64, DType::kF32, &b1);
  sort->workspace_size(4000, 64, DType::kF32, &b2);
  need = std::max(b1, b2);
  DeviceMem ws(need);
  ASSERT_EQ(pivot->workspace_init(ws.p, need, nullptr), Status::kOk);
  BatchOptions o;
  o.random_params = false;
  o.fixed = RowParams{1.0f, 0.0f, 10, 0.6f, 7, 0};
  for (int64_t rows : {5, 300, 4000, 7, 4000}) {
    for (Sampler* s : {sort.get(), pivot.get()}) {
      HostBatch b = make_batch(rows, 64, DType::kF32, 1000 + rows, o);
      for (int64_t r = 0; r < rows; ++r) b.offset[r] = (uint64_t)r;
      DeviceBatch d(b);
      d.poison();
      ASSERT_EQ(s->sample(d.view, d.params, d.out, ws.p, need, nullptr), Status::kOk) << last_error_message();
      TS_CUDA_OK(cudaDeviceSynchronize());
      const Results gpu = d.fetch();
      const Results cpu = run_cpu(b);
      EXPECT_EQ(gpu.token, cpu.token) << "rows " << rows;
      EXPECT_EQ(gpu.status, cpu.status) << "rows " << rows;
    }
  }
}

// A call's counters (tickets, deferred list, item counters) are cleared by
// the call itself, by a kernel its first kernel waits for as a programmatic
// dependent (PivotPolicy::kClearKernel), and only by calls that read them:
// a row-CTA call with no split launch behind it clears nothing and leaves
// its merged-row count where it was.  Seven calls of every kind, enqueued
// back to back on one stream and one workspace with no host wait between
// them (row-CTA min-p without and with the split launch, row-CTA top-p with
// deferred rows, chunked top-p calls whose rows defer to the streaming split
// launch, the sort path writing over the whole workspace, a chunked top-k
// call), must each match the CPU backend.
TEST(GpuSampler, WorkspaceCountersAcrossCallKindsBackToBack) {
  TS_REQUIRE_GPU();
  const int64_t vocab = 129280;
  struct Step {
    int64_t rows;
    Dist dist;
    ScalarFilter f;
    Algo algo;
  } steps[] = {
      {256, Dist::kOutlierHead, {1.0f, 50, 1.0f, 0.05f}, Algo::kPivot},  // row-CTA min-p, no split launch
      {8, Dist::kGaussian, {1.0f, 0, 0.9f, 0.0f}, Algo::kPivot},         // chunked, rows defer (streaming)
      {256, Dist::kGaussian, {1.0f, 0, 0.9f, 0.0f}, Algo::kPivot},       // row-CTA top-p, rows defer
      {4, Dist::kGaussian, {1.0f, 0, 0.9f, 0.0f}, Algo::kSort},          // sort: scratch over the counters
      {3, Dist::kGaussian, {0.8f, 0, 0.95f, 0.0f}, Algo::kPivot},        // chunked, rows defer
      {256, Dist::kOutlierHead, {1.0f, 0, 0.9f, 0.02f}, Algo::kPivot},   // row-CTA min-p with the split launch
      {2, Dist::kOutlierHead, {1.0f, 50, 0.9f, 0.0f}, Algo::kPivot},     // chunked top-k
  };
  std::unique_ptr<Sampler> pivot, sort;
  ASSERT_NO_FATAL_FAILURE(make_pivot_and_sort(pivot, sort));
  size_t need = 0;
  for (const Step& st : steps) {
    size_t bytes = 0;
    (st.algo == Algo::kSort ? sort : pivot)->workspace_size(st.rows, vocab, DType::kF32, &bytes);
    need = std::max(need, bytes);
  }
  DeviceMem ws(need);
  ASSERT_EQ(pivot->workspace_init(ws.p, need, nullptr), Status::kOk);
  std::vector<HostBatch> hosts;
  std::vector<std::unique_ptr<DeviceBatch>> devs;
  uint64_t seed = 9100;
  for (const Step& st : steps) {
    BatchOptions o;
    o.dist = st.dist;
    o.random_params = false;
    o.max_pad = 0;
    HostBatch b = make_batch(st.rows, vocab, DType::kF32, seed++, o);
    st.f.set_rows(b);
    for (int64_t r = 0; r < b.rows; ++r) b.offset[r] = (uint64_t)r * 7919u + seed;
    auto d = std::make_unique<DeviceBatch>(b);
    st.f.apply(*d);
    d->out.logprobs = nullptr;  // row-CTA top-p calls take none
    d->poison();
    hosts.push_back(std::move(b));
    devs.push_back(std::move(d));
  }
  for (size_t i = 0; i < devs.size(); ++i) {
    Sampler* s = steps[i].algo == Algo::kSort ? sort.get() : pivot.get();
    ASSERT_EQ(s->sample(devs[i]->view, devs[i]->params, devs[i]->out, ws.p, need, nullptr), Status::kOk)
        << last_error_message();
  }
  TS_CUDA_OK(cudaDeviceSynchronize());
  int64_t rows = 0, deep = 0;
  for (size_t i = 0; i < devs.size(); ++i) {
    const Results gpu = devs[i]->fetch();
    const Results cpu = run_cpu(hosts[i]);
    EXPECT_EQ(gpu.token, cpu.token) << "step " << i;
    EXPECT_EQ(gpu.status, cpu.status) << "step " << i;
    EXPECT_EQ(gpu.kept, cpu.kept) << "step " << i;
    rows += hosts[i].rows;
    for (int32_t k : gpu.kept) deep += k > (vocab + 4095) / 4096 * 64;
  }
  std::printf("[workspace_counters] rows %lld, rows past the candidates %lld\n", (long long)rows, (long long)deep);
  EXPECT_GE(deep, 100) << "too few rows reached the split fallback for this test to mean anything";
}

// Rows the random matrix rarely or never draws: every finite x / T underflows
// to -inf (NO_VALID_TOKEN), one finite token among -inf, V = 1, x / T
// overflowing to +inf (NAN_INPUT).
TEST(GpuSampler, EdgeRowsMatchCpu) {
  TS_REQUIRE_GPU();
  const float kInf = std::numeric_limits<float>::infinity();
  struct Row {
    std::vector<float> x;
    RowParams p;
  };
  const std::vector<Row> rows = {
      {{-3e38f, -2e38f}, {0.1f, 0.0f, 0, 1.0f, 1, 0}},
      {{-3e38f, -2e38f, -1e38f}, {0.1f, 0.0f, 2, 0.5f, 1, 0}},
      {{-kInf, -kInf, 4.0f, -kInf}, {1.0f, 0.0f, 0, 0.9f, 2, 0}},
      {{1.5f}, {0.7f, 0.1f, 1, 0.3f, 3, 0}},
      {{3e38f, 1.0f}, {0.5f, 0.0f, 0, 1.0f, 4, 0}},
      {{3e38f, 1.0f}, {0.0f, 0.0f, 0, 1.0f, 4, 0}},
  };
  for (const Row& r : rows) {
    const int64_t v = (int64_t)r.x.size();
    HostBatch b(1, v, v, DType::kF32);
    b.set_row(0, r.x.data());
    b.set_params(0, r.p);
    DeviceBatch d(b);
    GpuSampler g;
    ASSERT_EQ(g.init(Algo::kAuto, 1, v, DType::kF32), Status::kOk);
    d.poison();
    ASSERT_EQ(g.run(d), Status::kOk);
    TS_CUDA_OK(cudaDeviceSynchronize());
    const Results gpu = d.fetch();
    const OracleResult ref = oracle_sample(b.row(0), v, r.p);
    EXPECT_EQ(check_row(ref, gpu.status[0], gpu.token[0], gpu.kept[0], &gpu.logprob[0]), "")
        << "V=" << v << " " << describe(r.p);
  }
}

// Vocabularies past the histogram path (kFbMaxVocabBits): the one-CTA
// fallback's generic searches in double (generic_top_p_double) and its tie
// cut, by tile counts at V = 2^20 + 1 (4,097 tiles of 256 tokens) and
// step-wise past 8,192 tiles (V = 2,100,003, also not a multiple of 4).
// Flat rows put the top-k and top-p boundaries inside one run of ties (the
// kept set is an index prefix of the run); bf16-tied rows put them in short
// runs; outlier rows reach the same searches without ties at the cut.
TEST(GpuSampler, HugeVocabTieRowsMatchCpu) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["huge_vocab"];
  int reported = 0;
  const Dist dists[] = {Dist::kFlat, Dist::kBf16Ties, Dist::kOutlierHead};
  for (const int64_t v : {(int64_t)(1 << 20) + 1, (int64_t)2100003}) {
    const RowParams params[] = {
        {1.0f, 0.0f, 0, 0.9f, 11, 0},                 // p0.9
        {1.0f, 0.0f, 50, 0.9f, 12, 1},                // k50_p0.9
        {1.0f, 0.0f, (int32_t)(v - 1), 1.0f, 13, 2},  // k = V - 1
        {0.7f, 0.0f, 1000, 0.5f, 14, 3},
        {1.0f, 0.0f, 0, 1e-6f, 15, 4},                // tiny p
        {1.0f, 0.05f, 0, 0.95f, 16, 5},               // min-p with top-p
    };
    for (DType dt : {DType::kF32, DType::kBF16}) {
      const int64_t rows = (int64_t)(std::size(dists) * std::size(params));
      HostBatch b(rows, v, v, dt);
      Rng rng(0x4a11 + (uint64_t)v + (uint64_t)dt);
      std::vector<float> x((size_t)v);
      int64_t r = 0;
      for (Dist dist : dists)
        for (const RowParams& p : params) {
          fill_row(dist, v, dt, rng, x.data());
          b.dist[r] = dist;
          b.set_row(r, x.data());
          b.set_params(r, p);
          ++r;
        }
      DeviceBatch d(b);
      sample_and_compare(b, d, t, reported);
    }
  }
  std::printf("[huge_vocab] rows %lld, token mismatches %lld, status mismatches %lld, kept mismatches %lld, "
              "logprob mismatches %lld\n",
              (long long)t.rows, (long long)t.token_mismatch, (long long)t.status_mismatch,
              (long long)t.kept_mismatch, (long long)t.logprob_mismatch);
  EXPECT_EQ(t.rows, 72);
  EXPECT_EQ(t.token_mismatch + t.status_mismatch + t.kept_mismatch + t.logprob_mismatch, 0);
}

// A handful of rows whose cut lies inside a run of ties, small enough for
// the sanitizers: the fallback's tie cut by tile counts at V = 129,280
// (fixed-point search) and at V = 2^20 + 1 (double search), flat and
// bf16-tied rows, top-k and top-p cuts.
TEST(GpuSampler, FlatRowTieCutsMatchCpu) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["tie_cuts"];
  int reported = 0;
  struct Case {
    Dist dist;
    RowParams p;
  };
  for (const int64_t v : {(int64_t)129280, (int64_t)(1 << 20) + 1}) {
    const Case cases[] = {
        {Dist::kFlat, {1.0f, 0.0f, 0, 0.9f, 21, 0}},
        {Dist::kFlat, {1.0f, 0.0f, (int32_t)(v - 1), 1.0f, 22, 1}},
        {Dist::kFlat, {1.0f, 0.0f, 50, 0.9f, 23, 2}},
        {Dist::kBf16Ties, {1.0f, 0.0f, 0, 0.9f, 24, 3}},
        {Dist::kBf16Ties, {1.0f, 0.0f, 50, 1.0f, 25, 4}},
    };
    for (DType dt : {DType::kF32, DType::kBF16}) {
      if (v > 200000 && dt == DType::kBF16) continue;
      const int64_t rows = (int64_t)std::size(cases);
      HostBatch b(rows, v, v, dt);
      Rng rng(0x71e5 + (uint64_t)v + (uint64_t)dt);
      std::vector<float> x((size_t)v);
      for (int64_t r = 0; r < rows; ++r) {
        fill_row(cases[r].dist, v, dt, rng, x.data());
        b.dist[r] = cases[r].dist;
        b.set_row(r, x.data());
        b.set_params(r, cases[r].p);
      }
      DeviceBatch d(b);
      sample_and_compare(b, d, t, reported);
    }
  }
  EXPECT_EQ(t.rows, 15);
  EXPECT_EQ(t.token_mismatch + t.status_mismatch + t.kept_mismatch + t.logprob_mismatch, 0);
}

TEST(GpuSampler, InvalidPerRowParamsGetRowStatus) {
  TS_REQUIRE_GPU();
  HostBatch b = make_batch(6, 5000, DType::kF32, 5, BatchOptions{Dist::kGaussian});
  for (int64_t r = 0; r < 6; ++r) b.set_params(r, RowParams{1.0f, 0.0f, 10, 0.9f, 1, 2});
  b.temperature[1] = -1.0f;
  b.temperature[2] = std::numeric_limits<float>::quiet_NaN();
  b.top_k[3] = -5;
  b.top_p[4] = 0.0f;
  b.min_p[5] = 1.5f;
  DeviceBatch d(b);
  GpuSampler g;
  ASSERT_EQ(g.init(Algo::kAuto, b.rows, b.vocab, b.dtype), Status::kOk);
  d.poison();
  ASSERT_EQ(g.run(d), Status::kOk);
  const Results r = d.fetch();
  EXPECT_EQ(r.status[0], TOKENSIFT_ROW_OK);
  EXPECT_GE(r.token[0], 0);
  for (int i = 1; i < 6; ++i) {
    EXPECT_EQ(r.status[i], TOKENSIFT_ROW_INVALID_PARAM) << "row " << i;
    EXPECT_EQ(r.token[i], -1) << "row " << i;
  }
}

TEST(GpuSampler, NonDefaultStreamAndScalarParams) {
  TS_REQUIRE_GPU();
  HostBatch b = make_batch(16, 151936, DType::kF16, 31337, BatchOptions{Dist::kOutlierHead});
  DeviceBatch d(b);
  d.params = SamplingParams{};
  d.params.temperature.value = 0.8f;
  d.params.top_k.value = 40;
  d.params.top_p.value = 0.95f;
  d.params.seed.value = 12345;
  d.params.offset.value = 9;
  for (int64_t r = 0; r < b.rows; ++r) b.set_params(r, RowParams{0.8f, 0.0f, 40, 0.95f, 12345, 9});
  GpuSampler g;
  ASSERT_EQ(g.init(Algo::kAuto, b.rows, b.vocab, b.dtype), Status::kOk);
  cudaStream_t s;
  TS_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  d.poison();
  ASSERT_EQ(g.run(d, s), Status::kOk);
  TS_CUDA_OK(cudaStreamSynchronize(s));
  const Results gpu = d.fetch();
  const Results cpu = run_cpu(b);
  EXPECT_EQ(gpu.token, cpu.token);
  cudaStreamDestroy(s);
}

// All-greedy batches with scalar parameters take the one-CTA-per-row argmax
// kernel from GreedyPolicy::kMinRows rows (src/cuda/greedy_argmax.cu): every
// adversarial row shape (ties, NaN, +inf, all -inf, half -inf, huge values),
// every dtype, padded (unaligned) strides, V not a multiple of 4 or 8, and
// both sides of the row-count threshold.
TEST(GpuSampler, GreedyScalarBatchesMatchCpu) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["greedy_scalar"];
  int reported = 0;
  const BatchShape shapes[] = {{127, 4099}, {128, 1}, {130, 3}, {200, 4099}, {257, 129280}, {128, 262208}};
  uint64_t seed = 900;
  for (const BatchShape& sh : shapes)
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16})
      for (float temp : {0.0f, 5e-6f}) {
        BatchOptions o;  // the mixed distribution (every row shape), padded strides
        o.random_params = false;
        o.fixed = RowParams{temp, 0.0f, 0, 1.0f, 1, 0};
        HostBatch b = make_batch(sh.rows, sh.vocab, dt, ++seed, o);
        DeviceBatch d(b);
        d.params = SamplingParams{};
        d.params.temperature.value = temp;
        d.params.top_k.value = 7;    // ignored by greedy rows
        d.params.top_p.value = 0.5f;
        for (int64_t r = 0; r < b.rows; ++r) b.set_params(r, RowParams{temp, 0.0f, 7, 0.5f, 1, 0});
        sample_and_compare(b, d, t, reported);
      }
  EXPECT_EQ(t.token_mismatch + t.status_mismatch + t.kept_mismatch + t.logprob_mismatch, 0);
}

// Every shape x dtype (bf16 only at V = 262,208) x filter: a batch of the
// mixed distribution (every row shape, padded strides) whose rows take the
// filter and keep their random seeds and offsets, passed to fn(batch, filter).
template <size_t kShapes, size_t kFilters, class F>
void for_each_scalar_batch(const BatchShape (&shapes)[kShapes], const ScalarFilter (&filters)[kFilters],
                           uint64_t& seed, F&& fn) {
  for (const BatchShape& sh : shapes)
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
      if (sh.vocab == 262208 && dt != DType::kBF16) continue;  // one dtype at the largest V
      for (const ScalarFilter& f : filters) {
        BatchOptions o;
        HostBatch b = make_batch(sh.rows, sh.vocab, dt, ++seed, o);
        f.set_rows(b);
        fn(b, f);
      }
    }
}

// Rows sampled alone against the same rows in a batch.
struct AloneTally {
  int64_t checked = 0, differ = 0;
};

// Row r of batch b sampled alone (one row: the chunked kernel, and the
// split fallback in one launch), with the scalar parameters *f when given,
// must give what it gave in the batch (`all`), log-prob bits included when
// asked for.
void check_row_alone(GpuSampler& g, const HostBatch& b, int64_t r, const Results& all, const ScalarFilter* f,
                     bool logprobs, AloneTally& alone_t) {
  HostBatch one(1, b.vocab, b.vocab, b.dtype);
  one.set_row(0, b.row(r));
  one.set_params(0, b.params(r));
  one.dist[0] = b.dist[r];
  DeviceBatch d1(one);
  if (f) f->apply(d1);
  if (!logprobs) d1.out.logprobs = nullptr;
  d1.poison();
  ASSERT_EQ(g.run(d1), Status::kOk) << last_error_message();
  const Results alone = d1.fetch();
  ++alone_t.checked;
  const bool same = alone.token[0] == all.token[r] && alone.status[0] == all.status[r] &&
                    alone.kept[0] == all.kept[r] &&
                    (!logprobs || std::memcmp(&alone.logprob[0], &all.logprob[r], sizeof(float)) == 0);
  if (!same && ++alone_t.differ <= 10) {
    std::string filter;
    if (f)
      filter = " T " + std::to_string(f->temperature) + " k " + std::to_string(f->top_k) + " p " +
               std::to_string(f->top_p) + " min_p " + std::to_string(f->min_p);
    ADD_FAILURE() << "row " << r << " V " << b.vocab << " dtype " << dtype_name(b.dtype) << filter << ": alone "
                  << alone.token[0] << "/" << alone.status[0] << "/" << alone.kept[0] << "/" << alone.logprob[0]
                  << ", in the batch " << all.token[r] << "/" << all.status[r] << "/" << all.kept[r] << "/"
                  << all.logprob[r];
  }
}

// One kAuto call on batch b with the scalar parameters f (asking for
// log-probs when `logprobs`), matched against the CPU backend; then rows 0,
// 1, 17 and the last, each sampled alone (one row: the chunked kernel), must
// give the batch's token, status and kept count, and with `logprobs` the same
// log-prob bits.  With `no_workspace` the batch call must leave the
// workspace as it found it past the plain race's accumulators (its flat
// split's kPlainRaceAccBytes a row from the start; the one-row kernel uses
// none), where the chunked kernel writes its summaries and candidates, so
// this proves which kernel took the batch; *flat (when given) says whether
// the accumulators were written (the flat split took it).  With
// `alone_stride` every alone_stride-th row (0, s, 2s, ...) is sampled alone
// too.
constexpr size_t kPlainRaceAccBytes = 24;  // sizeof(cuda_detail::PlainRaceAcc)
void check_batch_and_rows_alone(const HostBatch& b, const ScalarFilter& f, bool logprobs, Tally& t, int& reported,
                                AloneTally& alone_t, bool no_workspace = false, int64_t alone_stride = 0,
                                bool* flat = nullptr, Results* cpu_out = nullptr) {
  GpuSampler g;
  ASSERT_EQ(g.init(Algo::kAuto, b.rows, b.vocab, b.dtype), Status::kOk);
  DeviceBatch d(b);
  f.apply(d);
  if (!logprobs) d.out.logprobs = nullptr;
  if (no_workspace) TS_CUDA_OK(cudaMemset(g.ws->p, 0x5A, g.ws_bytes));
  d.poison();
  ASSERT_EQ(g.run(d), Status::kOk) << last_error_message();
  TS_CUDA_OK(cudaDeviceSynchronize());
  const Results all = d.fetch();
  if (no_workspace) {
    std::vector<unsigned char> ws(g.ws_bytes);
    TS_CUDA_OK(cudaMemcpy(ws.data(), g.ws->p, g.ws_bytes, cudaMemcpyDeviceToHost));
    const size_t acc = std::min(ws.size(), kPlainRaceAccBytes * (size_t)b.rows);
    EXPECT_TRUE(std::all_of(ws.begin() + acc, ws.end(), [](unsigned char c) { return c == 0x5A; }))
        << "V " << b.vocab << " rows " << b.rows << ": the call wrote its workspace (not the plain race)";
    if (flat) *flat = !std::all_of(ws.begin(), ws.begin() + acc, [](unsigned char c) { return c == 0x5A; });
  }
  const Results cpu = run_cpu(b);
  compare_batch(b, all, cpu, t, reported, logprobs);
  if (cpu_out) *cpu_out = cpu;
  std::vector<int64_t> alone_rows = {0, 1, 17, b.rows - 1};
  for (int64_t r = alone_stride; alone_stride > 0 && r < b.rows; r += alone_stride)
    if (std::find(alone_rows.begin(), alone_rows.end(), r) == alone_rows.end()) alone_rows.push_back(r);
  for (int64_t r : alone_rows) check_row_alone(g, b, r, all, &f, logprobs, alone_t);
}

// One kernel's tally and rows-alone count, printed as [name], and the
// expectation that nothing differed.
void expect_path_clean(const char* name, const Tally& t, const AloneTally& alone) {
  std::printf("[%s] rows %lld, rows alone checked %lld, differing %lld\n", name, (long long)t.rows,
              (long long)alone.checked, (long long)alone.differ);
  EXPECT_EQ(t.token_mismatch + t.status_mismatch + t.kept_mismatch + t.logprob_mismatch, 0);
  EXPECT_EQ(alone.differ, 0);
}

// Top-p rows that defer to the split fallback give the same bits whether
// the fallback runs as one launch (a row alone: rows x chunks within
// PivotPolicy::kSplitFusedMaxItems, 2,560) or two (the first two batches:
// 128 x 32 and 96 x 64 items), and the CPU backend's.  A row that keeps more
// tokens than its chunks can emit as candidates (64 each, PivotPolicy::
// kTopPEmitMax, in chunks of 4,096) cannot be decided from them and goes
// through the split fallback: the first two batches hold 3 and 13 such rows
// (CPU backend, the same seeds).  The last two are Gaussian rows whose every
// row keeps thousands (2,048 and 1,824 items, one fused launch): more items
// than the launch has resident CTAs, so pass-B items wait on boundaries while
// other rows' pass-A items still run; each row must give its row-alone bits.
// The fifth, 64 Gaussian rows at V = 262,208, all deep: 4,160 chunks, so the
// two launches' items take two chunks each (split_chunks_per_item: at least
// two chunks for each CTA that runs at once), and each row's 65th chunk is
// an item alone; the rows alone run the one fused launch, a chunk an item.
// The test asks for at least 8 deep rows in all.
TEST(GpuSampler, SplitFallbackOneOrTwoLaunchesAgree) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["split_launches"];
  int reported = 0;
  AloneTally alone_t;
  int64_t deep_rows = 0;  // rows that kept more than their chunks can emit
  const struct {
    int64_t rows, vocab;
    DType dt;
    Dist dist;
  } cases[] = {{128, 129280, DType::kF32, Dist::kOutlierHead},
               {96, 262208, DType::kBF16, Dist::kOutlierHead},
               {64, 129280, DType::kF32, Dist::kGaussian},
               {48, 151936, DType::kBF16, Dist::kGaussian},
               {64, 262208, DType::kF32, Dist::kGaussian}};
  for (const auto& c : cases) {
    BatchOptions o;
    o.dist = c.dist;
    o.random_params = false;
    o.fixed = RowParams{1.0f, 0.0f, 0, 0.9f, 31, 0};
    o.max_pad = 0;
    HostBatch b = make_batch(c.rows, c.vocab, c.dt, 4711 + c.vocab, o);
    for (int64_t r = 0; r < b.rows; ++r) b.offset[r] = (uint64_t)r * 1000003u;
    GpuSampler g;
    ASSERT_EQ(g.init(Algo::kAuto, b.rows, b.vocab, b.dtype), Status::kOk);
    DeviceBatch d(b);
    d.poison();
    ASSERT_EQ(g.run(d), Status::kOk) << last_error_message();
    TS_CUDA_OK(cudaDeviceSynchronize());
    const Results all = d.fetch();
    compare_batch(b, all, run_cpu(b), t, reported);
    for (int64_t r = 0; r < b.rows; ++r) {
      deep_rows += all.kept[r] > (b.vocab + 4095) / 4096 * 64;
      check_row_alone(g, b, r, all, nullptr, true, alone_t);
    }
  }
  std::printf("[split_launches] rows %lld, rows alone checked %lld, differing %lld, rows past the candidates %lld\n",
              (long long)t.rows, (long long)alone_t.checked, (long long)alone_t.differ, (long long)deep_rows);
  EXPECT_EQ(t.token_mismatch + t.status_mismatch + t.kept_mismatch + t.logprob_mismatch, 0);
  EXPECT_EQ(alone_t.differ, 0);
  EXPECT_GE(deep_rows, 8) << "too few rows reached the split fallback for this test to mean anything";
}

// Early deferral (PivotPolicy::kEarlyDefer, calls of at most
// kEarlyDeferMaxRows rows): the chunked merge sends a top-p-only row to the
// split fallback before reading its candidates when their mass is below
// p W, and decides the others from the list.  Batches above that size defer
// after the list, so a row alone (early) against its batch (late) checks
// that both give the same bits; the 32- and 21-row batches defer early
// together.  Per-row p (so the chunked kernel, not the row-CTA one) swept from 0.05
// to 0.999 over the anchors' rows (20 boosted tokens over a Gaussian bulk),
// bf16-tied rows and half-masked rows puts boundaries among the candidates, just past them
// (the band where the bound and the list path meet) and deep in the bulk.
// Every row must match the CPU backend and its row-alone bits; the test asks
// for rows on both sides of the candidates' reach.
TEST(GpuSampler, EarlyDeferralSweepOfTopPMatchesCpu) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["early_defer"];
  int reported = 0;
  AloneTally alone_t;
  int64_t deep_rows = 0, shallow_rows = 0;
  const float ps[] = {0.05f, 0.2f, 0.4f, 0.5f, 0.6f, 0.7f, 0.75f, 0.8f, 0.85f, 0.88f, 0.9f, 0.92f,
                      0.94f, 0.95f, 0.96f, 0.97f, 0.98f, 0.985f, 0.99f, 0.995f, 0.999f};
  const int nps = (int)(sizeof(ps) / sizeof(ps[0]));
  const struct {
    int64_t rows, vocab;
    DType dt;
    Dist dist;
  } cases[] = {{128, 129280, DType::kF32, Dist::kOutlierHead},
               {128, 151936, DType::kBF16, Dist::kOutlierHead},
               {64, 4099, DType::kF32, Dist::kOutlierHead},
               {64, 129280, DType::kBF16, Dist::kBf16Ties},
               {64, 65536, DType::kF16, Dist::kHalfNegInf},
               {32, 129280, DType::kF32, Dist::kOutlierHead},
               {21, 151936, DType::kBF16, Dist::kGaussian}};
  for (const auto& c : cases) {
    BatchOptions o;
    o.dist = c.dist;
    o.random_params = false;
    o.fixed = RowParams{1.0f, 0.0f, 0, 0.9f, 17, 0};
    o.max_pad = 0;
    HostBatch b = make_batch(c.rows, c.vocab, c.dt, 9001 + c.vocab, o);
    for (int64_t r = 0; r < b.rows; ++r) {
      b.top_p[r] = ps[(r * 7) % nps];
      b.offset[r] = (uint64_t)r * 7919u;
    }
    GpuSampler g;
    ASSERT_EQ(g.init(Algo::kAuto, b.rows, b.vocab, b.dtype), Status::kOk);
    DeviceBatch d(b);
    d.poison();
    ASSERT_EQ(g.run(d), Status::kOk) << last_error_message();
    TS_CUDA_OK(cudaDeviceSynchronize());
    const Results all = d.fetch();
    compare_batch(b, all, run_cpu(b), t, reported);
    const int64_t reach = (b.vocab + 4095) / 4096 * 64;  // what the chunks can emit
    for (int64_t r = 0; r < b.rows; ++r) {
      deep_rows += all.kept[r] > reach;
      shallow_rows += all.kept[r] > 0 && all.kept[r] <= 32;
      check_row_alone(g, b, r, all, nullptr, true, alone_t);
    }
  }
  std::printf("[early_defer] rows %lld, rows alone checked %lld, differing %lld, past the candidates %lld, within 32 %lld\n",
              (long long)t.rows, (long long)alone_t.checked, (long long)alone_t.differ, (long long)deep_rows,
              (long long)shallow_rows);
  EXPECT_EQ(t.token_mismatch + t.status_mismatch + t.kept_mismatch + t.logprob_mismatch, 0);
  EXPECT_EQ(alone_t.differ, 0);
  EXPECT_GE(deep_rows, 16) << "too few rows past the candidates";
  EXPECT_GE(shallow_rows, 16) << "too few rows decided among the candidates";
}

// Batches of min-p rows, or of top-k rows (k < 64) without min-p, with
// scalar filter parameters take the row-CTA kernel from
// PivotPolicy::kRowCtaMinRows rows (src/cuda/pivot_rowcta.cuh): every
// adversarial row shape, every dtype, padded strides, V not a multiple of 4
// or 8, per-row seeds and offsets.  Each batch matches the CPU backend, and
// rows sampled alone (the chunked kernel) give the same token, status, kept
// count and log-prob bits.
TEST(GpuSampler, RowCtaScalarBatchesMatchCpuAndRowsAlone) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["rowcta_scalar"];
  int reported = 0;
  // 64 and 128 rows: the row-CTA kernel's switch for top-k rows
  // (kRowCtaMinRows) and for min-p rows (kRowCtaMinPMinRows, 128); min-p
  // filters at 64 rows take the chunked kernel, which must give the same
  // results.
  const BatchShape shapes[] = {{256, 129280}, {300, 4099}, {260, 65}, {256, 262208}, {64, 129280}, {128, 151936}};
  const ScalarFilter filters[] = {{1.0f, 50, 0.9f, 0.0f},  {0.7f, 8, 1.0f, 0.0f},   {1.5f, 63, 0.5f, 0.0f},
                                  {1.0f, 1, 1.0f, 0.0f},   {1.0f, 0, 1.0f, 0.05f},  {0.8f, 20, 0.9f, 0.1f},
                                  {1.0f, 100, 1.0f, 0.02f}, {1.2f, 0, 0.95f, 0.3f}};
  uint64_t seed = 1700;
  AloneTally alone;
  for_each_scalar_batch(shapes, filters, seed, [&](const HostBatch& b, const ScalarFilter& f) {
    check_batch_and_rows_alone(b, f, true, t, reported, alone);
  });
  expect_path_clean("rowcta_scalar", t, alone);
}

// Rows built to reach the large-batch kernels' rare paths, 256 of them (or
// `rows`) at V = 129,280 (kind = row % 9), with per-row seeds and offsets:
//   0: the first 8,192 logits N(0, 10^2), the rest -50: the row-CTA kernel's
//      first tau (aimed at the row's top 256 from a sample of that first
//      iteration) leaves fewer than k = 50 tokens above it, so it streams
//      the row a second time;
//   1: every logit -3e38 but one -2.9e38: at temperature 0.5 every z is -inf;
//   2: N(0, 1) with a NaN at 50,000 (inside a whole iteration);
//   3: N(0, 1) with +inf at 70,001;
//   4: flat (every logit 0.5);
//   5: N(0, 2^2) with 20 tokens boosted by +8..+15 (the benchmark's rows);
//   6: 3,000 + N(0, 1): |z| past the race's fast-bound range;
//   7: N(0, 2^2) with every other token -inf (a mask);
//   8: N(0, 1) with one token at 30 (one dominant token).
HostBatch edge_rows_batch(DType dt, uint64_t seed, int64_t rows = 256) {
  const int64_t vocab = 129280;
  HostBatch b(rows, vocab, vocab, dt);
  Rng rng(seed);
  std::vector<float> x((size_t)vocab);
  const float kInf = std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    const int kind = (int)(r % 9);
    for (int64_t i = 0; i < vocab; ++i) {
      switch (kind) {
        case 0: x[i] = i < 8192 ? (float)(10.0 * rng.normal()) : -50.0f; break;
        case 1: x[i] = i == 777 ? -2.9e38f : -3e38f; break;
        case 2:
        case 3:
        case 8: x[i] = (float)rng.normal(); break;
        case 4: x[i] = 0.5f; break;
        case 6: x[i] = (float)(3000.0 + rng.normal()); break;
        case 7: x[i] = i % 2 ? -kInf : (float)(2.0 * rng.normal()); break;
        default: x[i] = (float)(2.0 * rng.normal()); break;
      }
    }
    if (kind == 2) x[50000] = std::numeric_limits<float>::quiet_NaN();
    if (kind == 3) x[70001] = kInf;
    if (kind == 5)
      for (int j = 0; j < 20; ++j) x[(size_t)((j * 6151 + 13) % vocab)] += (float)(8.0 + 7.0 * j / 19.0);
    if (kind == 8) x[(size_t)(r * 131 % vocab)] = 30.0f;
    for (int64_t i = 0; i < vocab; ++i) x[i] = round_to_dtype(x[i], dt);
    b.set_row(r, x.data());
    b.seed[r] = 4000 + (uint64_t)r, b.offset[r] = (uint64_t)r * 3;
  }
  return b;
}

// The edge rows in row-CTA batches (scalar top-k or min-p parameters), fp32
// and bf16, each matched against the CPU backend.
TEST(GpuSampler, RowCtaEdgeRowsMatchCpu) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["rowcta_scalar"];
  int reported = 0;
  const ScalarFilter filters[] = {{1.0f, 50, 1.0f, 0.0f}, {0.7f, 20, 0.9f, 0.0f}, {0.5f, 0, 1.0f, 0.05f}, {1.0f, 0, 1.0f, 0.1f}};
  // 256 rows, and 144: fp32 top-k calls of fewer than
  // PivotPolicy::kRowCtaFineSampleMaxRows (256) rows take the larger
  // first-tau sample's kernel (kRowCtaTopKFine); min-p calls of 144 rows
  // still take the row-CTA kernel (kRowCtaMinPMinRows, 128).
  for (int64_t rows : {256, 144})
  for (DType dt : {DType::kF32, DType::kBF16})
    for (const ScalarFilter& f : filters) {
      HostBatch b = edge_rows_batch(dt, 9000 + (uint64_t)dt * 17 + (uint64_t)f.top_k + (uint64_t)rows, rows);
      f.set_rows(b);
      DeviceBatch d(b);
      f.apply(d);
      sample_and_compare(b, d, t, reported);
    }
  EXPECT_EQ(t.token_mismatch + t.status_mismatch + t.kept_mismatch + t.logprob_mismatch, 0);
}

// The row-CTA top-k finish (pivot_rowcta.cuh, cta_list_finish.cuh): the
// list compacted to 64 when longer, then ranked four threads a key
// (PivotPolicy::kRowCtaCtaFinish 1, the default), or, built with
// TOKENSIFT_PIVOT_ROWCTA_CTA_FINISH=2, ranked as it stands up to 256 entries
// (two threads a key up to 128, one up to 256) and compacted only when
// longer; either way its top 64 must decide as the one-warp finish's list
// did.  The list at the finish holds every eligible token while V is at
// most the first tau's aim (PivotPolicy::kRowCtaAim, 256, for fp32 calls of
// 256 rows; kRowCtaFineAim, 144, for 16-bit rows), so V sets its length:
// 40 .. 256 reach each ranking form and its edges (64 / 65, 128 / 129, 256),
// and V = 257, 300 and 4,099 lists of about the aim, above 256 in part.
// 256 rows a batch, kind = row % 3: N(0, 1); N(0, 1) rounded to halves
// (runs of ties across the k-th and the 64th place); N(0, 2^2) with five
// tokens boosted by +6..+10 (the kept set's mass at one end).  Every batch
// matches the CPU backend (log-probs included) and its rows sampled alone
// (the cluster kernel, which compacts to 64 and ranks four threads a key)
// give the same bits.
TEST(GpuSampler, RowCtaTopKFinishListLengthsMatchCpuAndRowsAlone) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["rowcta_finish_lengths"];
  int reported = 0;
  AloneTally alone;
  const ScalarFilter filters[] = {{1.0f, 50, 0.9f, 0.0f}, {0.7f, 63, 1.0f, 0.0f}, {1.0f, 1, 1.0f, 0.0f},
                                  {1.3f, 20, 0.5f, 0.0f}};
  for (DType dt : {DType::kF32, DType::kBF16})
    for (int64_t vocab : {40, 64, 65, 100, 128, 129, 200, 256, 257, 300, 4099}) {
      HostBatch b(256, vocab, vocab, dt);
      Rng rng(8800 + (uint64_t)dt * 131 + (uint64_t)vocab);
      std::vector<float> x((size_t)vocab);
      for (int64_t r = 0; r < b.rows; ++r) {
        const int kind = (int)(r % 3);
        for (int64_t i = 0; i < vocab; ++i) {
          const double g = rng.normal();
          x[i] = kind == 0 ? (float)g : kind == 1 ? (float)(std::round(2.0 * g) / 2.0) : (float)(2.0 * g);
        }
        if (kind == 2)
          for (int j = 0; j < 5; ++j) x[(size_t)((j * 37 + r * 11) % vocab)] += (float)(6.0 + j);
        for (float& v : x) v = round_to_dtype(v, dt);
        b.set_row(r, x.data());
        b.seed[r] = 7100 + (uint64_t)r, b.offset[r] = (uint64_t)r * 7;
      }
      for (const ScalarFilter& f : filters) {
        f.set_rows(b);  // k >= V (V = 40): not top-k rows; the plain race takes them
        check_batch_and_rows_alone(b, f, /*logprobs=*/true, t, reported, alone, false, /*alone_stride=*/32);
      }
    }
  expect_path_clean("rowcta_finish_lengths", t, alone);
}

// Rows that reach the row-CTA min-p kernel's gate (pivot_rowcta.cuh; set
// the first time a row's list passes half full) and its second pass, 256
// per batch at V = 129,280 (kind = row % 4), per-row seeds and offsets:
//   0: N(0, 1): until the CTA has streamed the row's max, ~2-4 % of the
//      logits pass min-p against the running max, so the list passes half
//      full and the gate's tau (the row's top PivotPolicy::kRowCtaMinPAim)
//      is set; at min-p 0.13 the row keeps ~700-3,000 tokens, so the gate
//      overshoots in most rows and the row is streamed a second time from
//      its max (the list holds when the survivors fit);
//   1: N(0, 1) with one token at 30 late in the row: the gate holds (the
//      key at tau fails min-p against 30) and the list is exact;
//   2: N(0, 1) with one token at 6 late in the row: a handful of survivors;
//   3: N(0, 0.5^2): tens of thousands survive, the list overflows and the
//      merge's gather or its fallback takes the row.
// Which rows took which path is predicted from the kernel's logic, not
// counted (dev/rowcta_trace counts passes).  Each batch matches the CPU
// backend and every 16th row sampled alone (the chunked kernel) gives the
// same token, status, kept count and log-prob bits.
TEST(GpuSampler, RowCtaMinPGateRowsMatchCpuAndRowsAlone) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["rowcta_min_p_gate"];
  int reported = 0;
  AloneTally alone;
  const int64_t rows = 256, vocab = 129280;
  const ScalarFilter filters[] = {{1.0f, 0, 1.0f, 0.13f}, {1.0f, 0, 1.0f, 0.05f}, {1.5f, 0, 1.0f, 0.1f},
                                  {1.0f, 40, 0.9f, 0.13f}};
  std::vector<float> x((size_t)vocab);
  for (DType dt : {DType::kF32, DType::kBF16})
    for (const ScalarFilter& f : filters) {
      HostBatch b(rows, vocab, vocab, dt);
      Rng rng(7300 + (uint64_t)dt * 31 + (uint64_t)(f.min_p * 1000.0f) + (uint64_t)f.top_k);
      for (int64_t r = 0; r < rows; ++r) {
        const int kind = (int)(r % 4);
        for (int64_t i = 0; i < vocab; ++i) x[i] = (float)((kind == 3 ? 0.5 : 1.0) * rng.normal());
        if (kind == 1 || kind == 2) x[(size_t)(vocab - 1 - r * 37)] = kind == 1 ? 30.0f : 6.0f;
        for (int64_t i = 0; i < vocab; ++i) x[i] = round_to_dtype(x[i], dt);
        b.set_row(r, x.data());
        b.seed[r] = 8100 + (uint64_t)r, b.offset[r] = (uint64_t)r * 5;
      }
      f.set_rows(b);
      check_batch_and_rows_alone(b, f, true, t, reported, alone, false, 16);
    }
  expect_path_clean("rowcta_min_p_gate", t, alone);
}

// The edge rows (edge_rows_batch), fp32 and bf16, under each of `filters`,
// seeded by seed_of(dtype, filter), through check(batch, filter).
template <size_t kFilters, class Seed, class F>
void for_each_edge_batch(const ScalarFilter (&filters)[kFilters], Seed seed_of, F&& check) {
  for (DType dt : {DType::kF32, DType::kBF16})
    for (const ScalarFilter& f : filters) {
      HostBatch b = edge_rows_batch(dt, seed_of(dt, f));
      f.set_rows(b);
      check(b, f);
    }
}

// Rows [r0, r0 + n) of b as a batch of their own, parameters, seeds and
// offsets included.
HostBatch sub_batch(const HostBatch& b, int64_t r0, int64_t n) {
  HostBatch s(n, b.vocab, b.vocab, b.dtype);
  for (int64_t r = 0; r < n; ++r) {
    s.set_row(r, b.row(r0 + r));
    s.set_params(r, b.params(r0 + r));
    s.dist[r] = b.dist[r0 + r];
  }
  return s;
}

// One kAuto call on b with the scalar filter f (log-probs asked for unless
// `logprobs` is false).  With `no_workspace` the call must leave its
// workspace as it found it (the cluster kernel's calls: every other path of
// these batches writes it).
Results run_scalar(const HostBatch& b, const ScalarFilter& f, bool no_workspace = false, bool logprobs = true) {
  GpuSampler g;
  EXPECT_EQ(g.init(Algo::kAuto, b.rows, b.vocab, b.dtype), Status::kOk);
  DeviceBatch d(b);
  f.apply(d);
  if (!logprobs) d.out.logprobs = nullptr;
  d.poison();
  if (no_workspace) EXPECT_EQ(cudaMemset(g.ws->p, 0x5A, g.ws_bytes), cudaSuccess);
  EXPECT_EQ(g.run(d), Status::kOk) << last_error_message();
  if (no_workspace) {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<unsigned char> ws(g.ws_bytes);
    EXPECT_EQ(cudaMemcpy(ws.data(), g.ws->p, g.ws_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_TRUE(std::all_of(ws.begin(), ws.end(), [](unsigned char c) { return c == 0x5A; }))
        << "V " << b.vocab << " rows " << b.rows << ": the call wrote its workspace (not the cluster kernel)";
  }
  return d.fetch();
}

// Small batch `small` (the cluster kernel's) against the CPU backend, and
// each of its rows against row `at[r]` of `big_res`, a larger batch's
// results (another kernel's): token, status, kept count and log-prob bits.
void check_small_batch(const HostBatch& small, const ScalarFilter& f, const Results& big_res,
                       const std::vector<int64_t>& at, Tally& t, int& reported, AloneTally& same,
                       bool no_workspace = false, bool logprobs = true) {
  const Results res = run_scalar(small, f, no_workspace, logprobs);
  compare_batch(small, res, run_cpu(small), t, reported, logprobs);
  for (int64_t r = 0; r < small.rows; ++r) {
    const int64_t q = at[(size_t)r];
    ++same.checked;
    const bool eq = res.token[r] == big_res.token[q] && res.status[r] == big_res.status[q] &&
                    res.kept[r] == big_res.kept[q] &&
                    (!logprobs || std::memcmp(&res.logprob[r], &big_res.logprob[q], 4) == 0);
    if (!eq && ++same.differ <= 10)
      ADD_FAILURE() << "row " << r << " of " << small.rows << ", V " << small.vocab << " " << dtype_name(small.dtype)
                    << " T " << f.temperature << " k " << f.top_k << " p " << f.top_p << ": " << res.token[r] << "/"
                    << res.status[r] << "/" << res.kept[r] << "/" << res.logprob[r] << ", in the larger batch "
                    << big_res.token[q] << "/" << big_res.status[q] << "/" << big_res.kept[q] << "/"
                    << big_res.logprob[q];
  }
}

// Small batch b (the cluster kernel's) against the CPU backend and against
// the same rows repeated to 64 (the row-CTA kernel's batch), bits included.
void check_against_rowcta_repeat(const HostBatch& b, const ScalarFilter& f, Tally& t, int& reported,
                                 AloneTally& same, bool no_workspace = false, bool logprobs = true) {
  HostBatch big(64, b.vocab, b.vocab, b.dtype);
  for (int64_t r = 0; r < big.rows; ++r) {
    big.set_row(r, b.row(r % b.rows));
    big.set_params(r, b.params(r % b.rows));
    big.dist[r] = b.dist[r % b.rows];
  }
  const Results big_res = run_scalar(big, f, false, logprobs);
  std::vector<int64_t> at((size_t)b.rows);
  for (int64_t r = 0; r < b.rows; ++r) at[(size_t)r] = r;
  check_small_batch(b, f, big_res, at, t, reported, same, no_workspace, logprobs);
}

// Batches of at most PivotPolicy::kClusterMaxRows rows with scalar top-k
// parameters (k < 64, no min-p) and V <= 131,072 take the cluster kernel on
// sm_90 (src/cuda/pivot_cluster.cuh); the rows its search cannot bracket
// take the chunked kernel launched behind it.  Each small batch matches the
// CPU backend, and each of its rows gives the bits it gets in a batch of 64
// (the row-CTA kernel): the mixed distribution's adversarial rows in every
// dtype, V not a multiple of 4 or 8, padded strides, temperatures, top-p on
// top; and the edge rows (flat rows, which no pivot brackets, NaN, +inf,
// -inf masks, one dominant token, 3,000 + N(0, 1), a row whose mass sits in
// its first 8,192 logits), mixed with rows the search decides, in batches of
// 8 (the flat rows take the cluster kernel's exact select); and plateau rows
// (below) that only the exact select decides.
TEST(GpuSampler, ClusterTopKBatchesMatchCpuAndRowCta) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["cluster_topk"];
  int reported = 0;
  AloneTally same;
  const ScalarFilter filters[] = {{1.0f, 50, 0.9f, 0.0f}, {0.7f, 8, 1.0f, 0.0f}, {1.5f, 63, 0.5f, 0.0f},
                                  {1.0f, 1, 1.0f, 0.0f}, {1.2f, 20, 0.95f, 0.0f}};
  const BatchShape shapes[] = {{16, 129280}, {5, 4099}, {1, 65}, {3, 131072}, {8, 77777}};
  uint64_t seed = 3300;
  for_each_scalar_batch(shapes, filters, seed, [&](const HostBatch& b, const ScalarFilter& f) {
    check_against_rowcta_repeat(b, f, t, reported, same);
  });
  const ScalarFilter edge_filters[] = {{1.0f, 50, 1.0f, 0.0f}, {0.7f, 20, 0.9f, 0.0f}, {1.0f, 1, 1.0f, 0.0f}};
  for_each_edge_batch(edge_filters, [](DType dt, const ScalarFilter& f) { return 9300 + (uint64_t)dt * 17 + (uint64_t)f.top_k; },
                      [&](const HostBatch& b, const ScalarFilter& f) {
                        const Results big_res = run_scalar(b, f);  // 256 rows: the row-CTA kernel
                        for (int64_t r0 = 0; r0 + 8 <= 32; r0 += 8) {
                          std::vector<int64_t> at;
                          for (int64_t r = r0; r < r0 + 8; ++r) at.push_back(r);
                          check_small_batch(sub_batch(b, r0, 8), f, big_res, at, t, reported, same);
                        }
                      });
  // Plateaus: rows whose k-th key is shared by more tokens than the list
  // holds (kMergeCap), so no pivot brackets them and the exact select lists
  // the row's top k, its ties cut by index within a CTA's vectors and across
  // CTAs.  Values are multiples of 1/32 (exact in bf16 and fp16, and many
  // repeated).  Batches of 8 against the CPU backend and the same rows in a
  // row-CTA batch of 64.
  const ScalarFilter plateau_filters[] = {{1.0f, 50, 0.9f, 0.0f}, {0.7f, 20, 0.9f, 0.0f}, {1.0f, 1, 1.0f, 0.0f},
                                          {1.3f, 63, 0.5f, 0.0f}};
  for (int64_t vocab : {(int64_t)129280, (int64_t)77777})
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16})
      for (const ScalarFilter& f : plateau_filters) {
        std::mt19937_64 gen(7700 + (uint64_t)vocab + 31 * (uint64_t)dt + (uint64_t)f.top_k);
        const auto noise = [&] { return (float)((int)(gen() % 129) - 64) / 32.0f; };  // [-2, 2]
        HostBatch b(8, vocab, vocab, dt);
        std::vector<float> row((size_t)vocab);
        for (int64_t r = 0; r < b.rows; ++r) {
          for (auto& v : row) v = noise();
          if (r == 0) {  // 5,000 tokens at 4 anywhere, 10 above
            for (int i = 0; i < 5000; ++i) row[gen() % (uint64_t)vocab] = 4.0f;
            for (int i = 0; i < 10; ++i) row[gen() % (uint64_t)vocab] = 6.0f + (float)(i % 4) * 0.5f;
          } else if (r == 1) {  // a run of ties across the first CTA boundary, 5 above it
            for (int64_t i = 8192 - 20; i < 8192 + 5000 && i < vocab; ++i) row[(size_t)i] = 3.0f;
            for (int i = 0; i < 5; ++i) row[(size_t)(20000 + 7 * i)] = 5.0f;
          } else if (r == 2) {  // flat but for the last token
            std::fill(row.begin(), row.end(), 0.0f);
            row[(size_t)vocab - 1] = 1.0f;
          } else if (r == 3) {  // two plateaus, the rest masked
            std::fill(row.begin(), row.end(), -std::numeric_limits<float>::infinity());
            for (int i = 0; i < 4500; ++i) row[(size_t)(i * 13 % vocab)] = 2.0f;
            for (int i = 0; i < 4500; ++i) row[(size_t)((i * 13 + 5) % vocab)] = 1.0f;
          } else if (r == 4) {  // only 5,000 tokens eligible, all tied
            std::fill(row.begin(), row.end(), -std::numeric_limits<float>::infinity());
            for (int i = 0; i < 5000; ++i) row[(size_t)(vocab - 1 - i * 11)] = 7.0f;
          } else if (r == 5) {  // ties at the k-th spread over every CTA, 40 above them
            for (int64_t i = 3; i < vocab; i += 17) row[(size_t)i] = 2.5f;
            for (int i = 0; i < 40; ++i) row[gen() % (uint64_t)vocab] = 3.0f + (float)i / 32.0f;
          } else if (r == 6) {  // the row's last 6,000 tokens tie above the rest
            for (int64_t i = vocab - 6000; i < vocab; ++i) row[(size_t)i] = 3.5f;
          }  // r == 7: the noise alone (duplicates everywhere; the search may bracket it)
          b.set_row(r, row.data());
        }
        f.set_rows(b);
        for (int64_t r = 0; r < b.rows; ++r) b.seed[r] = 500 + (uint64_t)r, b.offset[r] = 3;
        check_against_rowcta_repeat(b, f, t, reported, same);
      }
  expect_path_clean("cluster_topk", t, same);
}

// The cluster kernel captured in a graph and replayed (a batch of 4 with one
// flat row, which its exact select decides).
TEST(GpuSampler, GraphCaptureAndReplayCluster) {
  TS_REQUIRE_GPU();
  const ScalarFilter f{0.8f, 50, 0.9f, 0.0f};
  HostBatch b = make_batch(4, 129280, DType::kF32, 2031);
  std::vector<float> flat((size_t)b.vocab, 0.25f);
  b.set_row(2, flat.data());
  f.set_rows(b);
  for (int64_t r = 0; r < b.rows; ++r) b.offset[r] = 100;
  bool ok = false;
  check_graph_replay(b, &f, 3, true, ok, true);
  if (!ok) flags()["graph_capture"] = "fail";
}

// One row of kind r % 6 for the min-p tests below, rounded to the dtype:
//   0: flat (every logit c): every token survives min-p;
//   1: flat with every third token -inf;
//   2: N(0, 0.3^2): every token within ln(1 / min_p) of the max at min_p 0.05;
//   3: N(0, 0.5^2) on a grid of 1/8 (runs of equal logits, bf16 duplicates);
//   4: N(0, 1) with one token at 4: ~9,000 survivors at min_p 0.05 (past the
//      merge's 4,096 and the gather's list, but a tenth of the row);
//   5: N(0, 2^2): a few hundred survivors (the list decides: a control).
void fill_min_p_row(int64_t r, int64_t v, DType dt, Rng& rng, std::vector<float>& x) {
  const float kInf = std::numeric_limits<float>::infinity();
  const int kind = (int)(r % 6);
  const float c = (float)(4.0 * rng.normal());
  const double scale[] = {0.0, 0.0, 0.3, 0.5, 1.0, 2.0};
  for (int64_t i = 0; i < v; ++i) {
    x[i] = kind <= 1 ? c : (float)(scale[kind] * rng.normal());
    if (kind == 3) x[i] = std::round(x[i] * 8.0f) / 8.0f;
    if (kind == 1 && i % 3 == 2) x[i] = -kInf;
  }
  if (kind == 4) x[(size_t)rng.range(0, v - 1)] = 4.0f;
  for (float& y : x) y = round_to_dtype(y, dt);
}

// Batches of at most PivotPolicy::kClusterMaxRows min-p rows with V <=
// 131,072 take the cluster kernel too: rows without top-k or top-p (v102)
// list their min-p survivors into CTA 0, which decides from the row's whole
// min-p set with the merge's decide_and_draw, or, past kMergeCap survivors,
// races them across its CTAs (no log-probs asked for) or runs the merge's
// gather and fallback (log-probs); rows with top-k (k < 64, any top-p:
// v102c) search as top-k rows and CTA 0 filters its list by min-p.  Each small
// batch must leave its workspace untouched (the cluster kernel took it),
// match the CPU backend, and give each row the bits (token, status, kept
// count, log-prob) it gets in a batch of 64 (the chunked kernel) or, for the
// edge rows, of 256 (the row-CTA kernel): the mixed distribution's
// adversarial rows in every dtype, V not a multiple of 4 or 8, padded
// strides; temperatures 0.5 to 2.5, min_p from 0.002 to 1, k >= V (no
// top-k), k 10 to 63 with top-p 0.5 to 1 (llama.cpp's default chain: T
// 0.8, k 40, p 0.95, min_p 0.05); the edge rows (flat, NaN, +inf, every z
// -inf, masks, one dominant token, 3,000 + N(0, 1)); and the min-p rows of
// fill_min_p_row (flat, hot and tied rows whose survivors pass the list's
// 4,096), these and the edge rows both with log-probs and without (the
// cross-CTA race).
TEST(GpuSampler, ClusterMinPBatchesMatchCpuAndOtherKernels) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["cluster_min_p"];
  int reported = 0;
  AloneTally same;
  const ScalarFilter filters[] = {{1.0f, 0, 1.0f, 0.05f},         {0.7f, 0, 1.0f, 0.1f},  {2.5f, 0, 1.0f, 0.05f},
                                  {1.0f, 0x7fffffff, 1.0f, 1.0f}, {1.3f, 0, 1.0f, 0.002f}, {0.8f, 40, 0.95f, 0.05f},
                                  {1.0f, 20, 1.0f, 0.1f},         {2.5f, 10, 0.9f, 0.05f}, {1.5f, 63, 0.5f, 0.02f}};
  const BatchShape shapes[] = {{16, 129280}, {5, 4099}, {1, 65}, {3, 131072}, {8, 77777}};
  uint64_t seed = 16100;
  for_each_scalar_batch(shapes, filters, seed, [&](const HostBatch& b, const ScalarFilter& f) {
    check_against_rowcta_repeat(b, f, t, reported, same, /*no_workspace=*/true);
  });
  const ScalarFilter edge_filters[] = {{1.0f, 0, 1.0f, 0.05f}, {0.5f, 0, 1.0f, 0.1f}, {0.8f, 40, 0.95f, 0.05f}};
  for_each_edge_batch(edge_filters, [](DType dt, const ScalarFilter& f) { return 16300 + (uint64_t)dt * 17 + (uint64_t)(f.min_p * 100) + (uint64_t)f.top_k; },
                      [&](const HostBatch& b, const ScalarFilter& f) {
                        for (bool lp : {true, false}) {
                          const Results big_res = run_scalar(b, f, false, lp);  // 256 rows: the row-CTA kernel
                          for (int64_t r0 = 0; r0 + 9 <= 27; r0 += 9) {
                            std::vector<int64_t> at;
                            for (int64_t r = r0; r < r0 + 9; ++r) at.push_back(r);
                            check_small_batch(sub_batch(b, r0, 9), f, big_res, at, t, reported, same, true, lp);
                          }
                        }
                      });
  const ScalarFilter many_filters[] = {{1.0f, 0, 1.0f, 0.05f}, {2.5f, 0, 1.0f, 0.1f}, {1.0f, 0, 1.0f, 1.0f},
                                       {1.0f, 40, 0.95f, 0.05f}, {2.5f, 5, 1.0f, 0.1f}};
  for (const BatchShape& sh : {BatchShape{6, 129280}, BatchShape{12, 6151}})
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16})
      for (const ScalarFilter& f : many_filters) {
        HostBatch b(sh.rows, sh.vocab, sh.vocab, dt);
        Rng rng(++seed);
        std::vector<float> x((size_t)sh.vocab);
        for (int64_t r = 0; r < b.rows; ++r) {
          fill_min_p_row(r, sh.vocab, dt, rng, x);
          b.set_row(r, x.data());
          b.seed[r] = 800 + (uint64_t)r, b.offset[r] = (uint64_t)r * 5;
        }
        f.set_rows(b);
        for (bool lp : {true, false}) check_against_rowcta_repeat(b, f, t, reported, same, /*no_workspace=*/true, lp);
      }
  expect_path_clean("cluster_min_p", t, same);
}

// The cluster kernel's min-p copy captured in a graph and replayed (a batch
// of 4 with one flat row): min-p alone (the flat row past the list: with
// log-probs CTA 0's gather and fallback, without them the race across the
// CTAs) and llama.cpp's chain (T 0.8, k 40, p 0.95, min_p 0.05: the top-k
// search, CTA 0's list filtered by min-p).
TEST(GpuSampler, GraphCaptureAndReplayClusterMinP) {
  TS_REQUIRE_GPU();
  for (const ScalarFilter& f : {ScalarFilter{0.8f, 0, 1.0f, 0.05f}, ScalarFilter{0.8f, 40, 0.95f, 0.05f}}) {
    HostBatch b = make_batch(4, 129280, DType::kBF16, 2032);
    std::vector<float> flat((size_t)b.vocab, 0.25f);
    b.set_row(1, flat.data());
    f.set_rows(b);
    for (int64_t r = 0; r < b.rows; ++r) b.offset[r] = 100;
    for (bool lp : {true, false}) {
      bool ok = false;
      check_graph_replay(b, &f, 3, true, ok, lp);
      EXPECT_TRUE(ok) << "k " << f.top_k << " log-probs " << lp;
      if (!ok) flags()["graph_capture"] = "fail";
    }
  }
}

// Batches of plain rows (no min-p, top-k or top-p; k >= V counts as none)
// with scalar parameters and no log-probs asked for take the plain-race
// kernel from PlainRacePolicy::kMinRows rows (src/cuda/plain_race.cu): every
// adversarial row shape of the mixed distribution, every dtype, padded
// strides (rows not aligned to their Philox groups), V not a multiple of 4,
// per-row seeds and offsets, and the edge rows above.  Each batch matches the
// CPU backend (token, status, kept count), and rows sampled alone (the
// chunked kernel) give the same token, status and kept count.  Rows of one
// to three rounds of the kernel's loads (a round is 6,144 fp32 or 8,192
// 16-bit logits) end in every way a round can: the round loaded ahead lying
// past the row, the row ending exactly at a round's end, and inside one.
TEST(GpuSampler, PlainRaceBatchesMatchCpuAndRowsAlone) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["plain_race"];
  int reported = 0;
  const BatchShape shapes[] = {{256, 129280}, {300, 4099}, {130, 65},   {128, 1},     {129, 7},
                               {256, 262208}, {128, 6144}, {130, 8000}, {128, 8192},  {128, 12288},
                               {129, 16390},  {128, 20000}};
  const ScalarFilter filters[] = {{1.0f, 0, 1.0f, 0.0f}, {0.7f, 0, 1.0f, 0.0f}, {1.3f, 0x7fffffff, 1.0f, 0.0f}};
  uint64_t seed = 2600;
  AloneTally alone;
  auto check = [&](const HostBatch& b, const ScalarFilter& f) {
    check_batch_and_rows_alone(b, f, /*logprobs=*/false, t, reported, alone, /*no_workspace=*/true);
  };
  for_each_scalar_batch(shapes, filters, seed, check);
  const ScalarFilter edge_filters[] = {{1.0f, 0, 1.0f, 0.0f}, {0.5f, 0, 1.0f, 0.0f}};
  for_each_edge_batch(edge_filters, [](DType dt, const ScalarFilter&) { return 9100 + (uint64_t)dt * 17; }, check);
  expect_path_clean("plain_race", t, alone);
}

// The plain race's flat split (v77): calls of 32 to 127 rows whose layout
// allows it (16-byte aligned, on their Philox groups, at least a round of
// vectors) are cut into equal ranges of vectors over the CTAs that run at
// once, so a row's segments sit in two or more CTAs (100 rows of 129,280,
// 120 of 32,771, 32 of 262,208 over 264 CTAs), or a CTA holds the end of one
// row and the start of the next, with cuts near a row's tail (V = 6,150:
// not a multiple of 4, 100 CTAs of one round; 16-bit rows of 6,150 are less
// than a round, so the chunked kernel takes them).
// Rows of every kind of the mixed distribution, every dtype, three
// temperatures: each batch must be taken by the flat split (its
// accumulators written, nothing past them; rows padded to a multiple of 8
// logits, NaN in the padding), match the CPU backend, and give
// rows 0, 1, 17 and the last (and every 97th) their tokens alone (the
// chunked kernel).
TEST(GpuSampler, PlainRaceFlatSplitMatchesCpuAndRowsAlone) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["plain_race_flat"];
  int reported = 0, batches = 0, flat_batches = 0;
  const BatchShape shapes[] = {{100, 129280}, {120, 32771}, {100, 6150}, {64, 151936}, {32, 262208}};
  const ScalarFilter filters[] = {{1.0f, 0, 1.0f, 0.0f}, {0.7f, 0, 1.0f, 0.0f}, {1.3f, 0x7fffffff, 1.0f, 0.0f}};
  uint64_t seed = 7700;
  AloneTally alone;
  for (const BatchShape& sh : shapes)
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
      // bf16 / fp16 rows of 6,150 hold 768 vectors, less than a round: the one-row kernel.
      const bool expect_flat = !(sh.vocab == 6150 && dt != DType::kF32);
      for (const ScalarFilter& f : filters) {
        BatchOptions o;
        o.max_pad = 0;
        const HostBatch made = make_batch(sh.rows, sh.vocab, dt, ++seed, o);
        HostBatch b(made.rows, made.vocab, (made.vocab + 7) / 8 * 8, dt);
        for (int64_t r = 0; r < b.rows; ++r) {
          b.set_row(r, made.row(r));
          b.set_params(r, made.params(r));
          b.dist[r] = made.dist[r];
        }
        f.set_rows(b);
        bool flat = false;
        check_batch_and_rows_alone(b, f, /*logprobs=*/false, t, reported, alone, /*no_workspace=*/expect_flat,
                                   /*alone_stride=*/97, &flat);
        ++batches;
        flat_batches += flat;
        EXPECT_EQ(flat, expect_flat) << "V " << sh.vocab << " rows " << sh.rows << " dtype " << (int)dt;
      }
    }
  std::printf("[plain_race_flat] batches %d, taken by the flat split %d\n", batches, flat_batches);
  expect_path_clean("plain_race_flat", t, alone);
}

// Rows with logits near -FLT_MAX at temperatures below 1, where x / T
// becomes -inf and the token leaves the kept set (the CPU backend's
// eligibility) although its logit is finite: each row puts one giant in a
// group of ordinary N(0, 2^2) logits (kind 0), two in one group of four (1:
// their sum is -inf), one that stays finite after the division (2), and one
// positive giant (3: x / T overflows to +inf, NAN_INPUT); 128 rows with
// per-row seeds and offsets.
HostBatch overflowing_logits_batch(DType dt, int64_t vocab, float temperature) {
  HostBatch b(128, vocab, vocab, dt);
  Rng rng(8800 + (uint64_t)vocab + (uint64_t)(temperature * 10) + (uint64_t)dt * 3);
  std::vector<float> x((size_t)vocab);
  for (int64_t r = 0; r < b.rows; ++r) {
    for (int64_t i = 0; i < vocab; ++i) x[i] = round_to_dtype((float)(2.0 * rng.normal()), dt);
    const int64_t a = (r * 37) % (vocab - 1);
    switch (r % 4) {
      case 0: x[a] = round_to_dtype(-3.0e38f, dt); break;
      case 1: x[a] = round_to_dtype(-3.0e38f, dt), x[a + 1] = round_to_dtype(-2.9e38f, dt); break;
      case 2: x[a] = round_to_dtype(-1.0e38f, dt); break;
      default: x[a] = round_to_dtype(3.0e38f, dt); break;
    }
    b.set_row(r, x.data());
    b.seed[r] = 100 + (uint64_t)r, b.offset[r] = (uint64_t)r * 3;
  }
  return b;
}

// The plain race counts a group of four finite logits as eligible in one
// step, so at T < 1 it must catch the giants above: fp32 and bf16, V =
// 4,099 and 129,280, T = 0.5 and 0.7, 128 rows (the plain race's switch):
// every row matches the CPU backend (token, status, kept count) and sampled
// alone.
TEST(GpuSampler, PlainRaceOverflowingLogitsMatchCpu) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["plain_race_overflow"];
  int reported = 0;
  AloneTally alone;
  for (DType dt : {DType::kF32, DType::kBF16})
    for (int64_t vocab : {4099, 129280})
      for (float temperature : {0.5f, 0.7f}) {
        HostBatch b = overflowing_logits_batch(dt, vocab, temperature);
        const ScalarFilter f{temperature, 0, 1.0f, 0.0f};
        f.set_rows(b);
        check_batch_and_rows_alone(b, f, /*logprobs=*/false, t, reported, alone, /*no_workspace=*/true);
      }
  expect_path_clean("plain_race_overflow", t, alone);
}

// The same rows through every other path at T < 1, 128 rows a batch (the
// row-CTA kernel's switch for top-k, min-p and top-p): top-k, min-p, top-p,
// top-k with top-p, and plain rows with log-probs asked for (the chunked
// kernel).  Each batch matches the CPU backend (token, status, kept count,
// log-prob), and every tenth row sampled alone (the cluster or chunked
// kernel: each kind of row) gives the same.
TEST(GpuSampler, OverflowingLogitsAtSmallTMatchCpuOnEveryPath) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["overflow_every_path"];
  int reported = 0;
  AloneTally alone;
  struct Case {
    ScalarFilter f;
    bool logprobs;
  };
  const Case cases[] = {{{0.5f, 50, 1.0f, 0.0f}, false},
                        {{0.7f, 0, 1.0f, 0.05f}, false},
                        {{0.5f, 0, 0.9f, 0.0f}, false},
                        {{0.7f, 50, 0.9f, 0.0f}, false},
                        {{0.5f, 0, 1.0f, 0.0f}, true}};
  for (DType dt : {DType::kF32, DType::kBF16})
    for (int64_t vocab : {4099, 129280})
      for (const Case& c : cases) {
        HostBatch b = overflowing_logits_batch(dt, vocab, c.f.temperature);
        c.f.set_rows(b);
        check_batch_and_rows_alone(b, c.f, c.logprobs, t, reported, alone, /*no_workspace=*/false,
                                   /*alone_stride=*/10);
      }
  expect_path_clean("overflow_every_path", t, alone);
}

// Plain rows whose race is decided at scores just above a power of two
// (2^19 to 2^23), where a float's ulp passes the race's skip margin: each
// row's token i has the largest boost (its uniform's top 23 bits all set:
// found by search over seeds, 1 in 2^23 tokens) and a z chosen so that z +
// kMaxRaceBoost rounds up to a bar B while z sits just below the bar's
// whole-group cut rounded to nearest (v70b's cut, which skipped its
// group).  Half the rows add a later token j whose own score is B exactly:
// a tie, which i wins by its lower index.  The background is N(0, 1)
// (scores below 20).  fp32, V = 4,099 and 129,280, T
// = 1 and 0.5 (the two kernel instantiations; x = z T exactly), 128 rows
// (the plain race's switch): every row matches the CPU backend (token,
// status, kept count) and sampled alone, and the CPU backend draws i.
TEST(GpuSampler, PlainRaceTiesAboveTwoTo19MatchCpu) {
  TS_REQUIRE_GPU();
  namespace c = contract;
  Tally& t = tallies()["plain_race_ties_2e19"];
  int reported = 0;
  AloneTally alone;
  const float margin = 0.01f;  // PivotPolicy::kRaceSkipMargin
  // Bars B just above 2^e whose nearest-rounded cut admits a z with fl(z +
  // kMaxRaceBoost) == B below it.
  struct Bar {
    float bar, z;
  };
  std::vector<Bar> bars;
  for (int e : {19, 20, 21, 23}) {
    const uint32_t b0 = c::float_bits(std::ldexp(1.0f, e));
    bool found = false;
    for (uint32_t k = 1; k < (1u << 16) && !found; ++k) {
      const float bar = c::bits_float(b0 + k);
      float z = c::f_sub(c::f_sub(bar, margin), c::kMaxRaceBoost);
      for (int s = 0; s < 3 && !found; ++s) {
        z = std::nextafter(z, -HUGE_VALF);
        if (c::f_add(z, c::kMaxRaceBoost) == bar) bars.push_back({bar, z}), found = true;
      }
    }
    ASSERT_TRUE(found) << "no bar above 2^" << e;
  }
  // (seed, offset, i) with the largest boost, i in the first 4,000 tokens
  // (the first round of the fp32 plain race: its own first bar).
  struct Hit {
    uint64_t seed, offset;
    uint32_t i;
  };
  std::vector<Hit> hits;
  for (uint64_t seed = 7000; hits.size() < 16; ++seed) {
    const uint64_t offset = seed % 5;
    const c::PhiloxRow row = c::philox_row(seed, offset);
    for (uint32_t g = 0; g < 1000; ++g) {
      const c::Philox4 r = c::philox_row_block(row, g);
      for (uint32_t w = 0; w < 4; ++w)
        if ((r.v[w] >> 9) == 0x7fffffu) hits.push_back({seed, offset, 4 * g + w});
    }
  }
  for (int64_t vocab : {4099, 129280})
    for (float temperature : {1.0f, 0.5f}) {
      HostBatch b(128, vocab, vocab, DType::kF32);
      Rng rng(9900 + (uint64_t)vocab + (uint64_t)(temperature * 10));
      std::vector<float> x((size_t)vocab);
      std::vector<int32_t> expect((size_t)b.rows);
      for (int64_t r = 0; r < b.rows; ++r) {
        const Hit h = hits[(size_t)r % hits.size()];
        const Bar bar = bars[(size_t)(r / 16) % bars.size()];
        for (int64_t k = 0; k < vocab; ++k) x[k] = (float)rng.normal();
        ASSERT_EQ(c::race_score_from_bits(bar.z, c::token_bits(h.seed, h.offset, h.i)), bar.bar);
        x[h.i] = bar.z;
        if ((r / 64) % 2) {  // a tie: j > i scores B exactly
          bool tied = false;
          for (uint32_t j = h.i + 4 + (uint32_t)(r % 7) * 4; j + 1 < (uint32_t)vocab && !tied; j += 4) {
            const uint32_t bits = c::token_bits(h.seed, h.offset, j);
            float z = c::f_sub(bar.bar, c::race_score_from_bits(0.0f, bits));
            for (int s = 0; s < 8; ++s) z = std::nextafter(z, -HUGE_VALF);
            for (int s = 0; s < 16 && !tied; ++s, z = std::nextafter(z, HUGE_VALF))
              if (c::race_score_from_bits(z, bits) == bar.bar) x[j] = z, tied = true;
          }
          ASSERT_TRUE(tied) << "row " << r;
        }
        expect[(size_t)r] = (int32_t)h.i;
        for (int64_t k = 0; k < vocab; ++k) x[k] = c::f_mul(x[k], temperature);  // x / T == z exactly
        b.set_row(r, x.data());
        b.seed[r] = h.seed, b.offset[r] = h.offset;
      }
      const ScalarFilter f{temperature, 0, 1.0f, 0.0f};
      f.set_rows(b);
      const Results cpu = run_cpu(b);
      for (int64_t r = 0; r < b.rows; ++r) ASSERT_EQ(cpu.token[(size_t)r], expect[(size_t)r]) << "row " << r;
      check_batch_and_rows_alone(b, f, /*logprobs=*/false, t, reported, alone, /*no_workspace=*/true,
                                 /*alone_stride=*/9);
    }
  expect_path_clean("plain_race_ties_2e19", t, alone);
}

// Batches of top-p-only rows (0 < p < 1; no min-p; no top-k, k >= V counting
// as none) with scalar filter parameters and no log-probs asked for take the
// row-CTA top-p kernel from PivotPolicy::kRowCtaMinRows rows
// (src/cuda/pivot_sampler.cu): every adversarial row shape of the mixed
// distribution, every dtype, padded strides, V not a multiple of 4 (V = 1
// and 7 too), p from 0.05 to 0.999, per-row seeds and offsets, and the edge
// rows above.  Each batch matches the CPU backend (token, status, kept count;
// band rows: kept count within the band), and rows sampled alone (the
// chunked kernel) give the same token, status and kept count.
TEST(GpuSampler, RowCtaTopPBatchesMatchCpuAndRowsAlone) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["rowcta_top_p"];
  int reported = 0;
  // 128 rows: the top-p switch (kRowCtaTopPMinRows); 64 rows at V = 262,208:
  // the row-CTA kernel where the chunked kernel's split launch cannot stream.
  const BatchShape shapes[] = {{256, 129280}, {300, 4099}, {260, 65}, {256, 262208}, {257, 1},
                               {256, 7},      {128, 129280}, {64, 262208}};
  const ScalarFilter filters[] = {{1.0f, 0, 0.9f, 0.0f},          {0.7f, 0, 0.5f, 0.0f},  {1.5f, 0, 0.95f, 0.0f},
                                  {1.0f, 0x7fffffff, 0.8f, 0.0f}, {1.0f, 0, 0.05f, 0.0f}, {0.9f, 0, 0.999f, 0.0f}};
  uint64_t seed = 3100;
  AloneTally alone;
  auto check = [&](const HostBatch& b, const ScalarFilter& f) {
    check_batch_and_rows_alone(b, f, /*logprobs=*/false, t, reported, alone);
  };
  for_each_scalar_batch(shapes, filters, seed, check);
  const ScalarFilter edge_filters[] = {{1.0f, 0, 0.9f, 0.0f}, {0.5f, 0, 0.7f, 0.0f}};
  for_each_edge_batch(
      edge_filters, [](DType dt, const ScalarFilter& f) { return 9200 + (uint64_t)dt * 17 + (uint64_t)(f.top_p * 10); },
      check);
  expect_path_clean("rowcta_top_p", t, alone);
}

// Row-CTA top-p rows whose kept set runs past their first list (its top
// 256, kPreselect), fp32 and bf16, V = 129,280, 256 rows a batch (the
// row-CTA kernel), each batch one p, per-row seeds and offsets.  Rows r %
// 4: 0 the benchmark's (N(0, 2^2) plus 20 tokens boosted by +8..+15), 1
// N(0, 1), 2 N(0, 1) with every other token -inf (half the row eligible),
// 3 N(0, 2^2) with one token at 12.  At p = 0.05 / 0.1 the N(0, 1) rows
// keep ~530 / ~1,460, at 0.2 ~4,250; at 0.9 / 0.95 the benchmark's rows
// keep 256-3,000 now and then, the others tens of thousands.  These rows
// leave the row-CTA kernel for the split launches (v84, a second stream of
// such rows on the row-CTA kernel, passed this test but was slower:
// perf-notes); each batch matches the CPU backend, and every 16th row
// sampled alone (the chunked kernel and its split fallback) gives the
// same token, status and kept count.  The test asks for at least 200 rows
// whose CPU kept count lies past the first list and within 2,688, and 100
// past 3,584.
TEST(GpuSampler, RowCtaTopPDeepRowsMatchCpuAndRowsAlone) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["rowcta_top_p_deep"];
  int reported = 0;
  AloneTally alone;
  int64_t in_range = 0, past = 0;
  const int64_t vocab = 129280;
  const float kInf = std::numeric_limits<float>::infinity();
  for (DType dt : {DType::kF32, DType::kBF16})
    for (float p : {0.05f, 0.1f, 0.2f, 0.9f, 0.95f}) {
      HostBatch b(256, vocab, vocab, dt);
      Rng rng(8100 + (uint64_t)dt * 31 + (uint64_t)(p * 100));
      std::vector<float> x((size_t)vocab);
      for (int64_t r = 0; r < b.rows; ++r) {
        const int kind = (int)(r % 4);
        for (int64_t i = 0; i < vocab; ++i) {
          const double g = rng.normal();
          x[i] = kind == 1 || kind == 2 ? (float)g : (float)(2.0 * g);
          if (kind == 2 && i % 2) x[i] = -kInf;
        }
        if (kind == 0)
          for (int j = 0; j < 20; ++j)
            x[(size_t)((j * 6151 + 13 + r * 101) % vocab)] += (float)(8.0 + 7.0 * rng.uniform());
        if (kind == 3) x[(size_t)(r * 131 % vocab)] = 12.0f;
        for (float& v : x) v = round_to_dtype(v, dt);
        b.set_row(r, x.data());
        b.seed[r] = 6000 + (uint64_t)r, b.offset[r] = (uint64_t)r * 5;
      }
      const ScalarFilter f{1.0f, 0, p, 0.0f};
      f.set_rows(b);
      Results cpu(b.rows);  // every row's status stays -7 (not counted) if the call fails its assertions
      check_batch_and_rows_alone(b, f, /*logprobs=*/false, t, reported, alone, false, /*alone_stride=*/16, nullptr,
                                 &cpu);
      for (int64_t r = 0; r < b.rows; ++r) {
        if (cpu.status[r] != TOKENSIFT_ROW_OK) continue;
        in_range += cpu.kept[r] > 256 && cpu.kept[r] <= 2688;
        past += cpu.kept[r] > 3584;
      }
    }
  std::printf("[rowcta_top_p_deep] rows kept past the first list within 2,688 %lld, past 3,584 %lld\n",
              (long long)in_range, (long long)past);
  expect_path_clean("rowcta_top_p_deep", t, alone);
  EXPECT_GE(in_range, 200) << "too few rows past the first list: the test proves little about them";
  EXPECT_GE(past, 100) << "too few rows that keep thousands";
}

// Rows at or near the top-p boundary in row-CTA top-p batches, fp32, V =
// 4,099 (not a multiple of 4) and 129,280.  The kernel needs scalar
// parameters, so each kind below is its own 256-row batch with its own p
// (temperature 1), its tokens placed from a = 37 r mod V over a background
// of -40 + N(0, 1) (mass far below the band's 1e-6), per-row seeds and
// offsets:
//   0: two tokens at 10, p = 0.5: prefix mass exactly p (a band row);
//   1: three tokens at 10, p = 1/3: a band row;
//   2: 10 and 6 ulp below it, p = 0.5: mass ~2.9e-6 relative past p, not
//      in the band but decided only by fine arithmetic;
//   3: 10 and 10 - 1e-3, p = 0.5: clearly decided;
//   4: flat (every logit 0.25, no background), p = 0.5: a band row at even V;
//   5: 64 tokens at 10, p = 0.5: ties across the boundary (kept 32, or in the band);
//   6: 300 tokens at 10, p = 0.9: the same;
//   7: the benchmark's rows (edge_rows_batch kind 5: N(0, 2^2), not the
//      background above), p = 0.9.
// Each batch matches the CPU backend (band rows: kept count within the
// band), and every 16th row sampled alone (the chunked kernel) gives the
// same token, status and kept count, band rows included: both kernels
// resolve rows near the band with the same fixed-point arithmetic.
// compare_batch asks the oracle only about rows that differ from the CPU
// backend, so the band rows are counted here, by the oracle, among the rows
// sampled every 16th.
TEST(GpuSampler, RowCtaTopPBandRowsAgreeAlone) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["rowcta_top_p_band"];
  int reported = 0;
  AloneTally alone;
  int64_t band_alone = 0;  // band rows among those sampled alone every 16th
  const float p_of_kind[8] = {0.5f, 1 / 3.0f, 0.5f, 0.5f, 0.5f, 0.5f, 0.9f, 0.9f};
  const float near10 = 10.0f - 6e-6f;  // 10 - 6 ulp (an ulp of 10 is 9.5e-7)
  for (int64_t vocab : {4099, 129280})
    for (int kind = 0; kind < 8; ++kind) {
      HostBatch b(256, vocab, vocab, DType::kF32);
      Rng rng(7000 + (uint64_t)vocab + (uint64_t)kind);
      std::vector<float> x((size_t)vocab);
      for (int64_t r = 0; r < b.rows; ++r) {
        const int64_t a = r * 37 % vocab, a2 = (a + vocab / 2) % vocab;
        auto spread = [&](int n, float v) {  // n distinct tokens: j * (V / n) < V
          for (int j = 0; j < n; ++j) x[(size_t)((a + j * (vocab / n)) % vocab)] = v;
        };
        for (int64_t i = 0; i < vocab; ++i)
          x[i] = kind == 4 ? 0.25f : kind == 7 ? (float)(2.0 * rng.normal()) : (float)(-40.0 + rng.normal());
        switch (kind) {
          case 0: spread(2, 10.0f); break;
          case 1: spread(3, 10.0f); break;
          case 2: x[a] = 10.0f, x[a2] = near10; break;
          case 3: x[a] = 10.0f, x[a2] = 10.0f - 1e-3f; break;
          case 5: spread(64, 10.0f); break;
          case 6: spread(300, 10.0f); break;
          case 7:
            for (int j = 0; j < 20; ++j) x[(size_t)((j * 6151 + 13 + a) % vocab)] += (float)(8.0 + 7.0 * j / 19.0);
            break;
          default: break;
        }
        b.set_row(r, x.data());
        b.seed[r] = 5000 + (uint64_t)r, b.offset[r] = (uint64_t)r * 7;
      }
      const ScalarFilter f{1.0f, 0, p_of_kind[kind], 0.0f};
      f.set_rows(b);
      check_batch_and_rows_alone(b, f, /*logprobs=*/false, t, reported, alone, false, /*alone_stride=*/16);
      for (int64_t r = 0; r < b.rows; r += 16) band_alone += oracle_sample(b.row(r), b.vocab, b.params(r)).band;
    }
  std::printf("[rowcta_top_p_band] rows %lld, band rows %lld (of those sampled alone every 16th; %lld differing "
              "from the CPU backend within the band), rows alone checked %lld, differing %lld\n",
              (long long)t.rows, (long long)band_alone, (long long)t.band_differences, (long long)alone.checked,
              (long long)alone.differ);
  EXPECT_EQ(t.token_mismatch + t.status_mismatch + t.kept_mismatch + t.logprob_mismatch, 0);
  EXPECT_EQ(alone.differ, 0);
  EXPECT_GT(band_alone, 0) << "no band rows: the test proves nothing about them";
}

// One row of kind r % 5 for the tie-run tests below, rounded to the dtype;
// returns its ties at the max.
int fill_tie_run_row(int64_t r, int64_t v, DType dt, Rng& rng, std::vector<float>& x) {
  const float kInf = std::numeric_limits<float>::infinity();
  const int kind = (int)(r % 5);
  const float c = (float)(4.0 * rng.normal());
  for (int64_t i = 0; i < v; ++i) {
    x[i] = kind <= 1 ? c : (float)rng.normal();
    if ((kind == 1 && i % 3 == 2) || (kind == 3 && i % 2)) x[i] = -kInf;
  }
  if (kind == 2 || kind == 3)
    for (int j = 0; j < 6000 && j < v; ++j) {
      int64_t i = (int64_t)rng.range(0, v - 1);
      if (kind == 3) i -= i % 2;
      x[i] = 5.0f;
    }
  if (kind == 4) {
    const int64_t at = (int64_t)rng.range(0, v > 600 ? v - 600 : 0);
    for (int64_t i = at; i < at + 600 && i < v; ++i) x[i] = 5.0f;
  }
  for (float& y : x) y = round_to_dtype(y, dt);
  float xmax = -kInf;
  for (float y : x) xmax = std::max(xmax, y);
  int ties = 0;
  for (float y : x) ties += y == xmax;
  return ties;
}

// Top-p rows holding a run of ties at their max longer than their chunks
// emit (the merge's tie_run_at_max) defer to the split launches in tie mode
// (v100): pass A counts and races each chunk's ties, and when the boundary
// lies inside the run its last item cuts the run by index and finishes the
// race; otherwise the row keeps the bins.  Row kinds (r % 5), each rounded
// to the dtype, per-row seeds and offsets:
//   0: flat (every logit c);
//   1: flat with every third token -inf;
//   2: 6,000 ties at 5 scattered over N(0, 1) (~80 % of the mass): p = 0.5
//      cuts inside the run, 0.9 below it (the bins take it);
//   3: kind 2 with every other token -inf;
//   4: 600 consecutive ties at 5 over N(0, 1) (~30 % of the mass).
// Batches of 300 rows (the row-CTA top-p kernel, scalar parameters) and 24
// (the chunked kernel), V = 129,280, 6,150 (not a multiple of 4) and
// 262,208, fp32 and bf16, p from 1e-6 to 0.999, one with T = 0.7, one with
// min-p on top.  Each batch matches the CPU backend, and every 7th row
// sampled alone (the chunked kernel, the one-launch split) gives the same
// token, status and kept count.  The test asks for at least 300 rows whose
// CPU kept count lies inside a run longer than 64 ties, past what the chunks
// emit.
TEST(GpuSampler, TieRunAtMaxRowsMatchCpuAndRowsAlone) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["tie_run_split"];
  int reported = 0;
  AloneTally alone;
  int64_t inside = 0;  // rows whose kept set is a prefix of a run of > 64 ties at the max
  const ScalarFilter filters[] = {{1.0f, 0, 0.9f, 0.0f},  {1.0f, 0, 0.5f, 0.0f},   {0.7f, 0, 0.2f, 0.0f},
                                  {1.0f, 0, 1e-6f, 0.0f}, {1.0f, 0, 0.999f, 0.0f}, {1.0f, 0, 0.5f, 0.05f}};
  const struct {
    int64_t rows, vocab;
  } shapes[] = {{300, 129280}, {24, 129280}, {300, 6150}, {24, 262208}, {260, 262208}};
  uint64_t seed = 12000;
  for (const auto& sh : shapes)
    for (DType dt : {DType::kF32, DType::kBF16})
      for (const ScalarFilter& f : filters) {
        if (sh.vocab == 262208 && f.top_p > 1e-3f && f.top_p < 0.9f && f.min_p == 0.0f && sh.rows > 100) continue;
        const int64_t v = sh.vocab;
        HostBatch b(sh.rows, v, v, dt);
        Rng rng(++seed);
        std::vector<float> x((size_t)v);
        std::vector<int> ties((size_t)sh.rows, 0);
        for (int64_t r = 0; r < b.rows; ++r) {
          ties[r] = fill_tie_run_row(r, v, dt, rng, x);
          b.set_row(r, x.data());
          b.seed[r] = 777 + (uint64_t)r * 3, b.offset[r] = (uint64_t)r * 11;
        }
        f.set_rows(b);
        Results cpu(b.rows);
        check_batch_and_rows_alone(b, f, /*logprobs=*/sh.rows < 100, t, reported, alone, false, /*alone_stride=*/7,
                                   nullptr, &cpu);
        for (int64_t r = 0; r < b.rows; ++r)
          inside += cpu.status[r] == TOKENSIFT_ROW_OK && ties[r] > 64 && cpu.kept[r] <= ties[r] && cpu.kept[r] > 64;
      }
  std::printf("[tie_run_split] rows kept inside a run of ties at the max %lld\n", (long long)inside);
  expect_path_clean("tie_run_split", t, alone);
  EXPECT_GE(inside, 300) << "too few rows cut inside a tie run: the test proves little about tie mode";
}

// The tie-run rows above, few enough for the sanitizers: eight rows at V =
// 129,280, fp32 and bf16, per-row p: one of each kind at 0.5 (inside the
// runs of kinds 0-3, below kind 4's), a flat row at 0.9, a masked flat row
// at 1e-6 (one tie kept) and kind 2 at 0.9 (below its run: the bins); the
// chunked kernel and the one-launch split.  Each must match the CPU backend.
TEST(GpuSampler, TieRunAtMaxRowsSmall) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["tie_run_small"];
  int reported = 0;
  const int64_t v = 129280;
  for (DType dt : {DType::kF32, DType::kBF16}) {
    HostBatch b(8, v, v, dt);
    Rng rng(13000 + (uint64_t)dt);
    std::vector<float> x((size_t)v);
    for (int64_t r = 0; r < b.rows; ++r) {
      fill_tie_run_row(r, v, dt, rng, x);
      b.set_row(r, x.data());
      const float p = r == 5 || r == 7 ? 0.9f : r == 6 ? 1e-6f : 0.5f;
      b.set_params(r, RowParams{1.0f, 0.0f, 0, p, 40 + (uint64_t)r, (uint64_t)r});
    }
    DeviceBatch d(b);
    sample_and_compare(b, d, t, reported);
  }
  EXPECT_EQ(t.rows, 16);
  EXPECT_EQ(t.token_mismatch + t.status_mismatch + t.kept_mismatch + t.logprob_mismatch, 0);
}

// Min-p rows whose survivors overflow the merge (more than kMergeCap: flat
// and high-temperature rows) go from the merge's bounded gather to the
// one-CTA fallback, whose race pass decides them (a faster form of both,
// v101, is on branch next/s29-minp): token, status, kept count and log-prob
// must be the CPU backend's.  Batches of 300 rows (the
// row-CTA min-p kernel, scalar parameters) and 24 (the chunked kernel), V =
// 129,280, 6,151 (not a multiple of 4; a padded stride) and 262,208, fp32
// and bf16 (fp16 at 6,151), min_p 0.05 to 1 (min_p 1 keeps a flat row
// whole), one at T = 2.5, one with top-k 5,000 on top (the generic top-k
// search, then the race over its cut), one with top-p 0.95 on top (the
// split launches).  Every 7th row is sampled alone (pure min-p rows at V <=
// 131,072 alone take the cluster kernel, v102).  The test asks for at
// least 500 rows whose CPU kept count passes 4,096.
TEST(GpuSampler, MinPManySurvivorsMatchCpuAndRowsAlone) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["min_p_many_survivors"];
  int reported = 0;
  AloneTally alone;
  int64_t overflow = 0;  // rows whose kept set passes the merge's capacity
  const ScalarFilter filters[] = {{1.0f, 0, 1.0f, 0.05f}, {1.0f, 0, 1.0f, 1.0f},     {2.5f, 0, 1.0f, 0.1f},
                                  {1.0f, 0, 1.0f, 0.5f},  {1.0f, 5000, 1.0f, 0.05f}, {1.0f, 0, 0.95f, 0.05f}};
  const struct {
    int64_t rows, vocab, stride;
    bool f16;
  } shapes[] = {{300, 129280, 129280, false}, {24, 129280, 129280, false}, {36, 6151, 6157, true},
                {24, 262208, 262208, false}};
  uint64_t seed = 14000;
  for (const auto& sh : shapes)
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16})
      for (const ScalarFilter& f : filters) {
        if (dt == DType::kF16 && !sh.f16) continue;
        const int64_t v = sh.vocab;
        HostBatch b(sh.rows, v, sh.stride, dt);
        Rng rng(++seed);
        std::vector<float> x((size_t)v);
        for (int64_t r = 0; r < b.rows; ++r) {
          fill_min_p_row(r, v, dt, rng, x);
          b.set_row(r, x.data());
          b.seed[r] = 555 + (uint64_t)r * 7, b.offset[r] = (uint64_t)r * 13;
        }
        f.set_rows(b);
        Results cpu(b.rows);
        check_batch_and_rows_alone(b, f, /*logprobs=*/sh.rows < 100, t, reported, alone, false, /*alone_stride=*/7,
                                   nullptr, &cpu);
        for (int64_t r = 0; r < b.rows; ++r) overflow += cpu.status[r] == TOKENSIFT_ROW_OK && cpu.kept[r] > 4096;
      }
  std::printf("[min_p_many_survivors] rows keeping more than 4,096 tokens %lld\n", (long long)overflow);
  expect_path_clean("min_p_many_survivors", t, alone);
  EXPECT_GE(overflow, 500) << "too few rows past the merge: the test proves little about the fallback's race";
}

// The min-p rows above, few enough for the sanitizers: six rows (one of each
// kind) at V = 129,280, fp32 and bf16, min_p 0.05, log-probs asked for; the
// chunked kernel, its gather and the fallback's race pass.
TEST(GpuSampler, MinPManySurvivorsSmall) {
  TS_REQUIRE_GPU();
  Tally& t = tallies()["min_p_many_small"];
  int reported = 0;
  const int64_t v = 129280;
  for (DType dt : {DType::kF32, DType::kBF16}) {
    HostBatch b(6, v, v, dt);
    Rng rng(15000 + (uint64_t)dt);
    std::vector<float> x((size_t)v);
    for (int64_t r = 0; r < b.rows; ++r) {
      fill_min_p_row(r, v, dt, rng, x);
      b.set_row(r, x.data());
      b.set_params(r, RowParams{1.0f, 0.05f, 0, 1.0f, 60 + (uint64_t)r, (uint64_t)r});
    }
    DeviceBatch d(b);
    sample_and_compare(b, d, t, reported);
  }
  EXPECT_EQ(t.rows, 12);
  EXPECT_EQ(t.token_mismatch + t.status_mismatch + t.kept_mismatch + t.logprob_mismatch, 0);
}

// Writes the JSON summary after all tests ran.
class ReportEnv : public ::testing::Environment {
 public:
  void TearDown() override {
    const char* path = std::getenv("TOKENSIFT_GPU_REPORT");
    if (!path) return;
    std::ofstream f(path);
    f << "{\n";
    bool first = true;
    for (const auto& [name, t] : tallies()) {
      f << (first ? "" : ",\n") << "  \"" << name << "\": {\"rows_checked\": " << t.rows
        << ", \"token_mismatches\": " << t.token_mismatch << ", \"status_mismatches\": " << t.status_mismatch
        << ", \"kept_mismatches\": " << t.kept_mismatch << ", \"logprob_mismatches\": " << t.logprob_mismatch
        << ", \"band_rows\": " << t.band_rows << ", \"band_differences\": " << t.band_differences
        << ", \"oracle_checked\": " << t.oracle_checked << "}";
      first = false;
    }
    for (const auto& [k, v] : flags()) f << (first ? "" : ",\n") << "  \"" << k << "\": \"" << v << "\"", first = false;
    f << "\n}\n";
  }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new ReportEnv);

}  // namespace
}  // namespace tokensift::testing
