// The CPU backend against the oracle, row by row: more than 100,000 random
// rows per run over every vocabulary size of interest, all three dtypes, every
// distribution of generators.hpp, random parameters with their edges and
// padded strides, through each CPU algorithm.  Non-band rows must agree
// exactly (status, kept count, token, logprob within 1e-5); band rows must
// report a kept count inside the band and the race winner of that kept set.
//
// TOKENSIFT_TEST_SCALE=10 multiplies the row budget for a longer soak.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <cstdio>
#include <string>
#include <vector>

#include "cpu_harness.hpp"
#include "generators.hpp"
#include "oracle.hpp"

namespace ts = tokensift;
using namespace tokensift::testing;

namespace {

struct VocabBudget {
  int64_t vocab;
  int64_t rows;  // per algorithm, split over the three dtypes
};

// Small vocabularies carry most rows (they are where index ties, k = V - 1 and
// p edges bite hardest and they are cheap); every LLM-sized vocabulary still
// gets whole batches.
constexpr VocabBudget kBudgets[] = {
    {1, 15000},    {2, 21000},    {3, 21000},   {7, 30000},  {1000, 15000},
    {32000, 240},  {129280, 27},  {151936, 27}, {262208, 21},
};

struct Tally {
  int64_t rows = 0, band = 0, bad_rows = 0, greedy = 0, mismatches = 0;
  int64_t by_dist[(int)Dist::kCount] = {};
};

}  // namespace

TEST(CpuVsOracle, RandomRowsAllShapes) {
  const auto start = std::chrono::steady_clock::now();
  const ts::Algo algos[] = {ts::Algo::kAuto, ts::Algo::kPivot, ts::Algo::kSort};
  const ts::DType dtypes[] = {ts::DType::kF32, ts::DType::kBF16, ts::DType::kF16};
  Tally t;
  int printed = 0;
  uint64_t batch_seed = 0x5eed0001;
  for (const VocabBudget& vb : kBudgets) {
    const int64_t rows_per_dtype = (scaled(vb.rows) + 2) / 3;
    // Keep batches around 32 MB of widened values.
    const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(rows_per_dtype, (8 << 20) / vb.vocab));
    for (ts::DType dtype : dtypes) {
      for (int64_t done = 0; done < rows_per_dtype; done += chunk) {
        const int64_t n = std::min(chunk, rows_per_dtype - done);
        const HostBatch b = make_batch(n, vb.vocab, dtype, ++batch_seed);
        std::vector<BatchResult> results;
        for (ts::Algo algo : algos) {
          results.push_back(run_cpu(b, algo));
          ASSERT_EQ(results.back().status, ts::Status::kOk)
              << "V=" << vb.vocab << " algo=" << (int)algo << ": " << results.back().error;
        }
        for (int64_t r = 0; r < n; ++r) {
          const OracleResult ref = oracle_sample(b.row(r), vb.vocab, b.params(r));
          ++t.rows;
          ++t.by_dist[(int)b.dist[r]];
          t.band += ref.band;
          t.greedy += ref.greedy;
          t.bad_rows += ref.status != TOKENSIFT_ROW_OK;
          for (size_t a = 0; a < results.size(); ++a) {
            const BatchResult& got = results[a];
            const std::string why =
                check_row(ref, got.row_status[r], got.tokens[r], got.kept[r], &got.logprobs[r]);
            if (why.empty()) continue;
            ++t.mismatches;
            if (printed++ < 25)
              ADD_FAILURE() << "V=" << vb.vocab << " dtype=" << dtype_name(dtype) << " algo=" << (int)algos[a]
                            << " row=" << r << " dist=" << dist_name(b.dist[r]) << " "
                            << describe(b.params(r)) << ": " << why << " [oracle m=" << ref.kept
                            << " band=[" << ref.m_lo << "," << ref.m_hi << "] token=" << ref.token << "]";
          }
        }
      }
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("oracle agreement: %lld rows x %zu CPU algos, %lld band rows (checked against the band), "
              "%lld greedy, %lld bad-input rows, %lld mismatches, %.1f s\n",
              (long long)t.rows, std::size(algos), (long long)t.band, (long long)t.greedy,
              (long long)t.bad_rows, (long long)t.mismatches, secs);
  std::printf("rows per distribution:");
  for (int d = 0; d < (int)Dist::kCount; ++d) std::printf(" %s=%lld", dist_name((Dist)d), (long long)t.by_dist[d]);
  std::printf("\n");
  EXPECT_GE(t.rows, scaled(100000));
  EXPECT_EQ(t.mismatches, 0);
}

// Rows built by hand around each boundary: exact ties at the k-th value, the
// top-p boundary landing exactly on a cumulative sum, min-p = 1 with ties,
// -0 against +0, the greedy floor, overflow and underflow of x / T.
TEST(CpuVsOracle, HandBuiltBoundaries) {
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    std::vector<float> x;
    RowParams p;
  };
  std::vector<Case> cases;
  auto add = [&](std::vector<float> x, float t, float min_p, int32_t k, float top_p) {
    for (uint64_t s = 0; s < 64; ++s) cases.push_back({x, RowParams{t, min_p, k, top_p, s * 7919, s}});
  };
  add({1.0f, 1.0f, 1.0f, 1.0f}, 1.0f, 0.0f, 0, 0.5f);              // c_2 = p W exactly: band
  add({1.0f, 1.0f, 1.0f, 1.0f}, 1.0f, 0.0f, 0, 0.6f);
  add({0.0f, 2.0f, 1.0f, 2.0f, 2.0f, 1.0f}, 1.0f, 0.0f, 2, 1.0f);  // k cuts a tie
  add({0.0f, 2.0f, 1.0f, 2.0f, 2.0f, 1.0f}, 1.0f, 1.0f, 0, 1.0f);  // min_p = 1 with ties
  add({-0.0f, 0.0f, -0.0f, 0.0f}, 1.0f, 0.0f, 1, 1.0f);           // signed zeros tie
  add({-0.0f, 0.0f, -0.0f, 0.0f}, 0.0f, 0.0f, 0, 1.0f);
  add({3.0f, 1.0f, 2.0f}, std::nextafter(1e-5f, 0.0f), 0.0f, 0, 1.0f);  // greedy
  add({3.0f, 1.0f, 2.9999f}, 1e-5f, 0.0f, 0, 1.0f);                      // sampling at the floor
  add({3e38f, 1.0f}, 0.5f, 0.0f, 0, 1.0f);                              // x / T overflows
  add({3e38f, 1.0f}, 0.0f, 0.0f, 0, 1.0f);                              // ... but greedy is fine
  add({-3e38f, 1.0f, -2e38f, 0.5f}, 0.5f, 0.0f, 0, 1.0f);               // x / T underflows
  add({-inf, -inf, 2.0f, -inf}, 1.0f, 0.5f, 3, 0.9f);
  // Every finite x / T underflows to -inf: no eligible token.  The contract
  // assumes z_max exists; the oracle (and the CPU backend) say NO_VALID_TOKEN.
  add({-3e38f, -2e38f, -inf}, 0.1f, 0.0f, 0, 1.0f);
  add({2.0f, 1.0f, 0.0f, -1.0f}, 1.0f, 0.0f, 2, 0.7f);
  add({5.0f, 5.0f, 5.0f}, 2.0f, 0.0f, 0, 1e-6f);
  add({1.0f, 0.0f, -1.0f, -2.0f, -3.0f}, 1.0f, std::exp(-2.0f), 4, 0.999999f);
  // min-p exactly at its threshold: z - z_max == L, one ulp either side, with
  // z_max = 0 (exact difference) and z_max = 3 (a rounded fp32 difference).
  for (float mp : {0.5f, 0.1f, 0.05f, 1e-3f, 0.3f, 0.999f}) {
    const float l = tokensift::contract::ln_min_p(mp);
    for (float zmax : {0.0f, 3.0f}) {
      add({zmax + l, std::nextafter(zmax + l, -inf), zmax, std::nextafter(zmax + l, inf), zmax + l - 1.0f, zmax + l},
          1.0f, mp, 0, 1.0f);
    }
  }

  int64_t failures = 0;
  for (ts::Algo algo : {ts::Algo::kAuto, ts::Algo::kPivot, ts::Algo::kSort}) {
    for (const Case& c : cases) {
      const int64_t v = (int64_t)c.x.size();
      HostBatch b(1, v, v + 3, ts::DType::kF32);
      b.set_row(0, c.x.data());
      b.set_params(0, c.p);
      const BatchResult got = run_cpu(b, algo);
      ASSERT_EQ(got.status, ts::Status::kOk) << got.error;
      const OracleResult ref = oracle_sample(c.x.data(), v, c.p);
      const std::string why = check_row(ref, got.row_status[0], got.tokens[0], got.kept[0], &got.logprobs[0]);
      if (!why.empty() && failures++ < 20) ADD_FAILURE() << "algo " << (int)algo << " V=" << v << " " << describe(c.p) << ": " << why;
    }
  }
  EXPECT_EQ(failures, 0);
}
