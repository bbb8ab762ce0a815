// Does the CPU backend draw from the right distribution?  For each logits
// shape and each filter combination, 10^6 draws of one row (a fresh offset per
// draw, a fresh seed per batch of draws) are compared with the exact
// probabilities of the kept set: softmax(z) over the oracle's kept prefix,
// computed in double.
//
// The test: Pearson's chi-square goodness of fit at alpha = 1e-4.  Binning:
// kept tokens are sorted by expected count, each token with an expected count
// of at least 5 is its own bin, and all tokens below 5 are pooled into one bin
// (merged into the smallest single bin if the pool itself expects fewer than
// 5), so the chi-square approximation holds.  df = bins - 1; the p-value is
// the regularised upper incomplete gamma Q(df/2, X^2/2).  A token outside the
// kept set has probability 0: a single draw of one fails the test outright.
// Seeds are fixed, so the verdict is reproducible, not flaky; a last test
// checks that the same machinery rejects a slightly wrong distribution.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cpu_harness.hpp"
#include "generators.hpp"
#include "oracle.hpp"

namespace ts = tokensift;
using namespace tokensift::testing;

namespace {

constexpr double kAlpha = 1e-4;
constexpr int64_t kDraws = 1000000;
constexpr int64_t kRowsPerCall = 10000;

// Q(a, x) = Gamma(a, x) / Gamma(a): series below a + 1, Lentz's continued
// fraction above.
double gamma_q(double a, double x) {
  if (x <= 0.0) return 1.0;
  const double log_prefix = -x + a * std::log(x) - std::lgamma(a);
  if (x < a + 1.0) {
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 100000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (term < sum * 1e-16) break;
    }
    return 1.0 - sum * std::exp(log_prefix);
  }
  const double tiny = 1e-300;
  double b = x + 1.0 - a, cf = 1.0 / tiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    cf = b + an / cf;
    if (std::fabs(cf) < tiny) cf = tiny;
    d = 1.0 / d;
    const double delta = d * cf;
    h *= delta;
    if (std::fabs(delta - 1.0) < 1e-16) break;
  }
  return std::exp(log_prefix) * h;
}

struct ChiSquare {
  double statistic = 0.0;
  int df = 0;
  double p_value = 1.0;
  int64_t outside = 0;  // draws of a zero-probability token
};

ChiSquare chi_square(const std::vector<int64_t>& counts, const std::vector<double>& prob, int64_t n) {
  ChiSquare out;
  std::vector<std::pair<double, int64_t>> bins;  // (expected, observed)
  double pool_e = 0.0;
  int64_t pool_o = 0;
  for (size_t i = 0; i < prob.size(); ++i) {
    if (prob[i] == 0.0) {
      out.outside += counts[i];
      continue;
    }
    const double e = prob[i] * (double)n;
    if (e >= 5.0) bins.push_back({e, counts[i]});
    else {
      pool_e += e;
      pool_o += counts[i];
    }
  }
  if (pool_e > 0.0) {
    if (pool_e >= 5.0 || bins.empty()) bins.push_back({pool_e, pool_o});
    else {
      auto smallest = std::min_element(bins.begin(), bins.end());
      smallest->first += pool_e;
      smallest->second += pool_o;
    }
  }
  for (const auto& [e, o] : bins) out.statistic += ((double)o - e) * ((double)o - e) / e;
  out.df = (int)bins.size() - 1;
  out.p_value = out.df > 0 ? gamma_q(out.df / 2.0, out.statistic / 2.0) : 1.0;
  return out;
}

struct Shape {
  const char* name;
  Dist dist;
  int64_t vocab;
  float temperature;
};
constexpr Shape kShapes[] = {
    {"gaussian", Dist::kGaussian, 128, 1.0f},
    {"outlier_head", Dist::kOutlierHead, 96, 3.5f},  // hot enough that the head is not one token
    {"ties", Dist::kBf16Ties, 64, 1.3f},  // index-ordered boundaries inside ties
};

struct Filters {
  const char* name;
  float min_p;
  int32_t top_k;
  float top_p;
};
constexpr Filters kFilters[] = {
    {"plain", 0.0f, 0, 1.0f},     {"min_p", 0.05f, 0, 1.0f},     {"top_k", 0.0f, 13, 1.0f},
    {"top_p", 0.0f, 0, 0.9f},     {"k_and_p", 0.0f, 24, 0.9f},   {"all", 0.01f, 30, 0.9f},
};

struct Experiment {
  std::vector<float> row;
  RowParams params;
  OracleResult ref;
  std::vector<double> prob;  // exact probability of each token
  std::vector<int64_t> counts;
};

// Builds the row and its exact kept-set probabilities, then draws kDraws
// tokens through the API in batches of kRowsPerCall copies of the row.
Experiment run_experiment(const Shape& s, const Filters& f, uint64_t seed) {
  Experiment ex;
  Rng rng(seed);
  ex.row.resize((size_t)s.vocab);
  fill_row(s.dist, s.vocab, ts::DType::kF32, rng, ex.row.data());
  ex.params = RowParams{s.temperature, f.min_p, f.top_k, f.top_p, 0, 0};
  ex.ref = oracle_sample(ex.row.data(), s.vocab, ex.params);
  ex.prob.assign((size_t)s.vocab, 0.0);
  double sum = 0.0;
  const double z_max = ex.ref.z[ex.ref.order[0]];
  for (int64_t j = 0; j < ex.ref.kept; ++j) sum += std::exp((double)ex.ref.z[ex.ref.order[(size_t)j]] - z_max);
  for (int64_t j = 0; j < ex.ref.kept; ++j) {
    const uint32_t i = ex.ref.order[(size_t)j];
    ex.prob[i] = std::exp((double)ex.ref.z[i] - z_max) / sum;
  }
  ex.counts.assign((size_t)s.vocab, 0);

  HostBatch b(kRowsPerCall, s.vocab, s.vocab + 1, ts::DType::kF32);
  for (int64_t r = 0; r < kRowsPerCall; ++r) b.set_row(r, ex.row.data());
  ts::SamplingParams p;
  p.temperature.value = ex.params.temperature;
  p.min_p.value = ex.params.min_p;
  p.top_k.value = ex.params.top_k;
  p.top_p.value = ex.params.top_p;
  p.offset.per_row = b.offset.data();
  for (int64_t call = 0; call * kRowsPerCall < kDraws; ++call) {
    p.seed.value = rng.next();
    for (int64_t r = 0; r < kRowsPerCall; ++r) b.offset[(size_t)r] = (uint64_t)(call * kRowsPerCall + r);
    const BatchResult got = run_cpu(b.view(), p);
    EXPECT_EQ(got.status, ts::Status::kOk) << got.error;
    if (got.status != ts::Status::kOk) return ex;
    for (int64_t r = 0; r < kRowsPerCall; ++r) {
      const int32_t t = got.tokens[(size_t)r];
      if (t < 0 || t >= s.vocab || got.kept[(size_t)r] != ex.ref.kept) {
        ADD_FAILURE() << "draw " << r << ": token " << t << " kept " << got.kept[(size_t)r] << " expected kept "
                      << ex.ref.kept;
        return ex;
      }
      ++ex.counts[(size_t)t];
    }
  }
  return ex;
}

class Statistics : public ::testing::TestWithParam<std::tuple<int, int>> {};

}  // namespace

TEST_P(Statistics, MatchesKeptSetSoftmax) {
  const Shape& s = kShapes[std::get<0>(GetParam())];
  const Filters& f = kFilters[std::get<1>(GetParam())];
  const uint64_t seed = 1000 + 17 * (uint64_t)std::get<0>(GetParam()) + (uint64_t)std::get<1>(GetParam());
  const Experiment ex = run_experiment(s, f, seed);
  // The kept set must be unambiguous for the expected distribution to be exact.
  ASSERT_FALSE(ex.ref.band) << "choose other parameters: this row is a top-p band row";
  if (f.top_k || f.top_p < 1.0f || f.min_p > 0.0f) {
    EXPECT_LT(ex.ref.kept, s.vocab) << "the filter does not bind";
  }
  EXPECT_GE(ex.ref.kept, 3) << "too few kept tokens for a meaningful test: choose other parameters";
  const ChiSquare cs = chi_square(ex.counts, ex.prob, kDraws);
  std::printf("%s/%s: kept %lld of %lld, chi2 %.1f, df %d, p = %.4g\n", s.name, f.name, (long long)ex.ref.kept,
              (long long)s.vocab, cs.statistic, cs.df, cs.p_value);
  EXPECT_EQ(cs.outside, 0) << "draws of tokens outside the kept set";
  EXPECT_GE(cs.p_value, kAlpha) << "chi2 " << cs.statistic << " df " << cs.df;
}

INSTANTIATE_TEST_SUITE_P(AllFilters, Statistics,
                         ::testing::Combine(::testing::Range(0, (int)std::size(kShapes)),
                                            ::testing::Range(0, (int)std::size(kFilters))),
                         [](const ::testing::TestParamInfo<std::tuple<int, int>>& info) {
                           return std::string(kShapes[std::get<0>(info.param)].name) + "_" +
                                  kFilters[std::get<1>(info.param)].name;
                         });

// The same draws judged against a distribution 2% hotter, and against the kept
// set of top-k + 1: the test must reject both, or it has no power.
TEST(StatisticsPower, RejectsSlightlyWrongDistributions) {
  const Experiment ex = run_experiment(kShapes[0], kFilters[0], 4242);
  std::vector<double> hotter(ex.prob.size());
  double sum = 0.0;
  const double z_max = ex.ref.z[ex.ref.order[0]];
  for (size_t i = 0; i < hotter.size(); ++i) sum += hotter[i] = std::exp(((double)ex.ref.z[i] - z_max) / 1.02);
  for (double& h : hotter) h /= sum;
  EXPECT_LT(chi_square(ex.counts, hotter, kDraws).p_value, kAlpha);

  const Experiment k = run_experiment(kShapes[0], kFilters[2], 4243);
  ASSERT_LT(k.ref.kept, kShapes[0].vocab);
  std::vector<double> one_more(k.prob.size(), 0.0);
  sum = 0.0;
  const double k_z_max = k.ref.z[k.ref.order[0]];
  for (int64_t j = 0; j <= k.ref.kept; ++j) sum += std::exp((double)k.ref.z[k.ref.order[(size_t)j]] - k_z_max);
  for (int64_t j = 0; j <= k.ref.kept; ++j) {
    const uint32_t i = k.ref.order[(size_t)j];
    one_more[i] = std::exp((double)k.ref.z[i] - k_z_max) / sum;
  }
  const ChiSquare cs = chi_square(k.counts, one_more, kDraws);
  EXPECT_EQ(cs.outside, 0);
  EXPECT_LT(cs.p_value, kAlpha);
}

TEST(StatisticsPower, GammaQKnownValues) {
  // Q(df/2, x/2) is the chi-square survival function; for integer a it is
  // e^-y * sum_{i<a} y^i / i!, which the series / continued fraction must match.
  EXPECT_NEAR(gamma_q(0.5, 3.841458820694124 / 2), 0.05, 1e-9);  // df 1, the 5% critical value
  for (int a : {1, 2, 5, 17, 50, 200}) {
    for (double y : {0.3, 1.0, 4.0, 0.8 * a, 1.0 * a, 1.3 * a + 5, 2.0 * a + 20}) {
      double term = 1.0, sum = 1.0;
      for (int i = 1; i < a; ++i) sum += term *= y / i;
      const double want = std::exp(-y) * sum;
      EXPECT_NEAR(gamma_q(a, y), want, 1e-9 * want + 1e-15) << "a=" << a << " y=" << y;
    }
  }
}
