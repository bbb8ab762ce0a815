// Known answers for the portable arithmetic of include/tokensift/contract.h,
// and hand-worked rows for the oracle (so the oracle itself is pinned to
// docs/semantics.md before it judges any backend).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <vector>

#include "generators.hpp"
#include "oracle.hpp"
#include "tokensift/contract.h"

namespace ts = tokensift;
namespace c = tokensift::contract;
using ts::testing::OracleResult;
using ts::testing::oracle_sample;
using ts::testing::RowParams;
using ts::testing::Rng;

namespace {

void expect_philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1,
                   uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  const c::Philox4 r = c::philox4x32_10(c0, c1, c2, c3, k0, k1);
  EXPECT_EQ(r.v[0], r0);
  EXPECT_EQ(r.v[1], r1);
  EXPECT_EQ(r.v[2], r2);
  EXPECT_EQ(r.v[3], r3);
}

// Distance in units in the last place of `want` (rounded to float).
double ulp_error_f32(float got, double want) {
  const float w = (float)want;
  if (w == 0.0f) return got == 0.0f ? 0.0 : 1e9;
  int e;
  std::frexp(std::fabs((double)w), &e);  // |w| in [2^(e-1), 2^e)
  const double ulp = std::ldexp(1.0, e - 1 - 23);
  return std::fabs((double)got - want) / ulp;
}
double ulp_error_f64(double got, long double want) {
  if (want == 0.0L) return got == 0.0 ? 0.0 : 1e9;
  int e;
  std::frexp(std::fabs((double)want), &e);
  const long double ulp = std::ldexp(1.0L, e - 1 - 52);
  return (double)(std::fabs((long double)got - want) / ulp);
}

}  // namespace

// Random123's known-answer vectors for Philox-4x32-10 (kat_vectors).
TEST(ContractPhilox, KnownAnswers) {
  expect_philox(0, 0, 0, 0, 0, 0, 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u);
  expect_philox(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu,
                0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu);
  expect_philox(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u,
                0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u);
}

// docs/semantics.md: key = (seed lo, seed hi), counter = (i/4, off lo, off hi, 0), word i%4.
TEST(ContractPhilox, TokenBitsLayout) {
  Rng rng(11);
  for (int t = 0; t < 1000; ++t) {
    const uint64_t seed = rng.next(), offset = rng.next();
    const uint32_t i = (uint32_t)rng.range(0, 300000);
    const c::Philox4 block = c::philox4x32_10(i >> 2, (uint32_t)offset, (uint32_t)(offset >> 32), 0,
                                              (uint32_t)seed, (uint32_t)(seed >> 32));
    ASSERT_EQ(c::token_bits(seed, offset, i), block.v[i & 3]);
  }
}

// philox_row_block (the row's fixed products hoisted) gives philox_block's
// bits, also at the edges of seed, offset and group.
TEST(ContractPhilox, RowBlockEqualsBlock) {
  Rng rng(12);
  const uint64_t edges[] = {0, 1, 0xffffffffull, 0x100000000ull, ~0ull, 0x8000000000000000ull};
  const uint32_t groups[] = {0, 1, 3, 0x7fffffffu, 0xffffffffu};
  auto check = [](uint64_t seed, uint64_t offset, uint32_t g) {
    const c::PhiloxRow row = c::philox_row(seed, offset);
    const c::Philox4 a = c::philox_row_block(row, g), b = c::philox_block(seed, offset, g);
    for (int w = 0; w < 4; ++w) ASSERT_EQ(a.v[w], b.v[w]) << seed << " " << offset << " " << g;
  };
  for (uint64_t s : edges)
    for (uint64_t o : edges)
      for (uint32_t g : groups) check(s, o, g);
  for (int t = 0; t < 20000; ++t) check(rng.next(), rng.next(), (uint32_t)rng.next());
}

TEST(ContractLog, F32WithinTwoUlpOverAllExponents) {
  // Every 251st positive normal float (about 8.5 million values, all 254
  // exponents), plus a dense sweep around 1 where log(x) is tiny.
  double worst = 0.0;
  float worst_x = 0.0f;
  auto check = [&](float x) {
    const double err = ulp_error_f32(c::log_f32(x), std::log((double)x));
    if (err > worst) {
      worst = err;
      worst_x = x;
    }
  };
  for (uint32_t b = 0x00800000u; b < 0x7f800000u; b += 251) check(c::bits_float(b));
  for (uint32_t b = 0x3f700000u; b < 0x3f880000u; b += 3) check(c::bits_float(b));
  check(c::bits_float(0x7f7fffffu));
  check(5.9604644775390625e-08f);  // 2^-24, the smallest U
  EXPECT_LE(worst, 2.0) << "worst x = " << worst_x;
  EXPECT_EQ(c::log_f32(1.0f), 0.0f);
  std::printf("log_f32: worst error %.3f ulp at x = %.9g\n", worst, (double)worst_x);
}

// log_f64 against std::log in double (the criterion: at most 2 ulp apart).
// The error against the exact logarithm (long double reference) is printed
// too: it reaches about 2.003 ulp just below sqrt(1/2), where e * ln2 and
// log(m) cancel.  That is harmless where log_f64 is used (ln_min_p rounds it
// to float; ContractMinP checks the float result), but it is not "about 1 ulp".
TEST(ContractLog, F64WithinTwoUlp) {
  Rng rng(5);
  double worst = 0.0, worst_exact = 0.0;
  double worst_x = 0.0, worst_exact_x = 0.0;
  auto check = [&](double x) {
    const double got = c::log_f64(x);
    const double err = ulp_error_f64(got, (long double)std::log(x));
    if (err > worst) {
      worst = err;
      worst_x = x;
    }
    const double exact = ulp_error_f64(got, std::log((long double)x));
    if (exact > worst_exact) {
      worst_exact = exact;
      worst_exact_x = x;
    }
  };
  for (int i = 0; i < 2000000; ++i) {
    // Random normal doubles over all exponents, and values in (0, 1] as min_p takes.
    const uint64_t bits = (rng.next() & 0x000fffffffffffffull) | ((uint64_t)rng.range(1, 2046) << 52);
    check(c::bits_double(bits));
    check(rng.uniform());
  }
  for (int i = -20000; i <= 20000; ++i) check(1.0 + i * 1e-9);
  for (int i = 0; i < 200000; ++i) check(0.69 + i * 1e-7);  // the cancellation region below sqrt(1/2)
  EXPECT_LE(worst, 2.0) << "worst x = " << worst_x;
  std::printf("log_f64: worst %.3f ulp from std::log at x = %.17g; %.4f ulp from the exact log at x = %.17g\n",
              worst, worst_x, worst_exact, worst_exact_x);
}

TEST(ContractUniform, RangeAndExactness) {
  EXPECT_EQ(c::uniform_from_bits(0u), 5.9604644775390625e-08f);
  EXPECT_EQ(c::uniform_from_bits(0xffffffffu), 1.0f - 5.9604644775390625e-08f);
  Rng rng(3);
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t r = (uint32_t)rng.next();
    const float u = c::uniform_from_bits(r);
    ASSERT_GT(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    // u * 2^24 is the odd integer 2 * (r >> 9) + 1: exact, no rounding.
    ASSERT_EQ((double)u * 16777216.0, (double)(2u * (r >> 9) + 1u));
  }
  // The extremes of the race boost: finite, and bounded by kMaxRaceBoost.
  for (uint32_t r : {0u, 0x1ffu, 0x200u, 0xfffffe00u, 0xffffffffu}) {
    const float s = c::race_score_from_bits(0.0f, r);
    EXPECT_TRUE(std::isfinite(s));
    EXPECT_LE(s, c::kMaxRaceBoost);
  }
  EXPECT_EQ(c::race_score_from_bits(0.0f, 0xffffffffu), c::kMaxRaceBoost);
  EXPECT_EQ(c::race_score_from_bits(0.0f, 0u), c::kMinRaceBoost);
  for (uint32_t r : {0x1ffu, 0x200u, 0x12345678u, 0xffffffffu})
    EXPECT_GE(c::race_score_from_bits(0.0f, r), c::kMinRaceBoost);
}

// The GPU's plain-row race skips the exact score of a token when a cheap upper
// bound, z - ln(1 - U) (from -ln U >= 1 - U), cannot reach the best score so
// far (pivot_chunk.cuh).  The bound must hold for the contract's rounded
// score, with the margin the kernel allows for its approximate log.
TEST(ContractRace, CheapUpperBoundHolds) {
  Rng rng(11);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t r = (uint32_t)rng.next();
    const float z = (float)((double)(rng.next() % 2000001) / 1000.0 - 1000.0);  // |z| <= 1000
    const float u = c::uniform_from_bits(r);
    const double bound = (double)z - std::log(1.0 - (double)u);
    ASSERT_LE((double)c::race_score_from_bits(z, r), bound + 1e-3) << z << " " << r;
  }
  for (uint32_t r : {0u, 0x1ffu, 0x200u, 0xfffffe00u, 0xffffffffu}) {
    const float u = c::uniform_from_bits(r);
    ASSERT_LE((double)c::race_score_from_bits(0.0f, r), -std::log(1.0 - (double)u) + 1e-3);
  }
}

// The plain race's skip test (contract::race_skip_h / race_skip_cut,
// src/cuda/plain_race.cu): h is floor(2^23 (1 - U)) exactly for every U, and
// a token is never skipped against a bar equal to its own exact score (the
// worst case: the kernel's bar is some token's score, at most the winner's)
// with room for the GPU's approximate lg2 (error < 2^-21) to spare.
TEST(ContractRace, SkipTestInLog2IsConservative) {
  Rng rng(12);
  const float margin = 0.01f;  // PivotPolicy::kRaceSkipMargin (the GPU races' margin)
  const float zs[] = {0.0f, -999.99994f, 999.99994f, 511.99997f, -3.25f, 17.0f};
  double least = 1e30;
  for (uint32_t m = 0; m < (1u << 23); ++m) {
    const uint32_t r = (m << 9) | (uint32_t)(rng.next() & 0x1ffu);
    const float h = c::race_skip_h(r);
    const double u = (double)c::uniform_from_bits(r);
    ASSERT_EQ((double)h, std::floor(8388608.0 * (1.0 - u))) << r;
    if (h == 0.0f || (m & 7u)) continue;  // the bound on every 8th U (all of them for h)
    for (float z : zs) {
      const float bar = c::race_score_from_bits(z, r);
      const float rhs = std::fma(z, c::kLog2E, c::race_skip_cut(bar, margin));
      least = std::min(least, (double)rhs - std::log2((double)h));
    }
  }
  EXPECT_GT(least, std::ldexp(1.0, -20)) << "a winning token could be skipped";
  EXPECT_EQ(c::race_skip_cut(-std::numeric_limits<float>::infinity(), margin), std::numeric_limits<float>::infinity());
}

// f_sub_rd: a - b rounded toward -inf, against the exact difference in double
// (exact for operands within 2^29 of each other in magnitude), and at the
// edges where the nearest difference overflows.
TEST(ContractRace, SubRoundDownIsExact) {
  Rng rng(13);
  for (int i = 0; i < 2000000; ++i) {
    const int ea = (int)(rng.next() % 120) - 60, eb = ea + (int)(rng.next() % 41) - 20;
    const float a = std::ldexp((float)(rng.next() % 16777216) / 16777216.0f + 0.5f, ea) * (rng.next() & 1 ? 1 : -1);
    const float b = std::ldexp((float)(rng.next() % 16777216) / 16777216.0f + 0.5f, eb) * (rng.next() & 1 ? 1 : -1);
    const double d = (double)a - (double)b;  // exact
    const float r = c::f_sub_rd(a, b);
    ASSERT_LE((double)r, d) << a << " " << b;
    ASSERT_GT((double)std::nextafter(r, HUGE_VALF), d) << a << " " << b;
  }
  const float big = std::numeric_limits<float>::max(), inf = HUGE_VALF;
  EXPECT_EQ(c::f_sub_rd(-big, 0.01f), -inf);  // below -FLT_MAX: rounds down to -inf
  EXPECT_EQ(c::f_sub_rd(big, -big), big);     // above FLT_MAX: rounds down to FLT_MAX
  EXPECT_EQ(c::f_sub_rd(-inf, 0.01f), -inf);
}

// The plain race skips a group whose largest z is below
// race_beat_cut(bar, margin): no token there may reach the bar, not even
// tie it (a tie goes to the lower index, which a skipped token may have).
// Every bar of the first 2^14 floats above each power of two from 2^-3 to
// 2^40 (both signs; the cut's rounding matters just above a power of two)
// and 200,000 random ones, the three floats below the cut, with the largest
// boost: the score stays below the bar.  The cut rounded to nearest (v70b's)
// fails this scan (the test's teeth).
TEST(ContractRace, BeatCutNeverAdmitsATie) {
  const float margin = 0.01f;  // PivotPolicy::kRaceSkipMargin
  const float inf = HUGE_VALF;
  int64_t checked = 0, nearest_fails = 0;
  auto check = [&](float bar) {
    const float cut = c::race_beat_cut(bar, margin);
    float z = cut;
    for (int t = 0; t < 3; ++t) {
      z = std::nextafter(z, -inf);
      ASSERT_LT(c::f_add(z, c::kMaxRaceBoost), bar) << std::hexfloat << bar << " " << z;
      ASSERT_LT(c::race_score_from_bits(z, 0xffffffffu), bar) << std::hexfloat << bar << " " << z;
    }
    float zn = c::f_sub(c::f_sub(bar, margin), c::kMaxRaceBoost);
    for (int t = 0; t < 3; ++t) {
      zn = std::nextafter(zn, -inf);
      nearest_fails += !(c::f_add(zn, c::kMaxRaceBoost) < bar);
    }
    ++checked;
  };
  for (int e = -3; e <= 40; ++e)
    for (float sign : {1.0f, -1.0f}) {
      const uint32_t b0 = c::float_bits(std::ldexp(1.0f, e));
      for (uint32_t k = 0; k < (1u << 14); ++k) {
        check(sign * c::bits_float(b0 + k));
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  Rng rng(14);
  for (int i = 0; i < 200000; ++i) {
    const float bar = std::ldexp((float)(rng.next() % 16777216) / 16777216.0f + 0.5f, (int)(rng.next() % 70) - 30);
    check(rng.next() & 1 ? bar : -bar);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_EQ(c::race_beat_cut(-inf, margin), -inf);  // no bar yet: nothing skipped
  EXPECT_GT(nearest_fails, 0);
  std::printf("race_beat_cut: %lld bars, 0 ties admitted; the cut rounded to nearest admits %lld\n",
              (long long)checked, (long long)nearest_fails);
}

TEST(ContractOrder, KeyIsMonotoneAndFoldsSignedZero) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(c::order_key(-0.0f), c::order_key(0.0f));
  EXPECT_LT(c::order_key(-inf), c::order_key(-std::numeric_limits<float>::max()));
  EXPECT_LT(c::order_key(std::numeric_limits<float>::max()), c::order_key(inf));
  EXPECT_LT(c::order_key(-std::numeric_limits<float>::denorm_min()), c::order_key(0.0f));
  EXPECT_LT(c::order_key(0.0f), c::order_key(std::numeric_limits<float>::denorm_min()));
  EXPECT_EQ(c::key_to_float(c::order_key(-0.0f)), 0.0f);
  Rng rng(7);
  for (int i = 0; i < 2000000; ++i) {
    float a = c::bits_float((uint32_t)rng.next()), b = c::bits_float((uint32_t)rng.next());
    if (i % 3 == 0) b = std::nextafter(a, rng.chance(0.5) ? inf : -inf);
    if (std::isnan(a) || std::isnan(b)) continue;
    const uint32_t ka = c::order_key(a), kb = c::order_key(b);
    ASSERT_EQ(a < b, ka < kb) << a << " " << b;
    ASSERT_EQ(a == b, ka == kb) << a << " " << b;
    if (a != 0.0f) {
      ASSERT_EQ(c::float_bits(c::key_to_float(ka)), c::float_bits(a));
    }
  }
  // precedes: z descending, then index ascending; -0 == +0 falls to the index.
  EXPECT_TRUE(c::precedes(2.0f, 9, 1.0f, 0));
  EXPECT_TRUE(c::precedes(1.0f, 0, 1.0f, 9));
  EXPECT_FALSE(c::precedes(1.0f, 9, 1.0f, 0));
  EXPECT_TRUE(c::precedes(-0.0f, 3, 0.0f, 4));
  EXPECT_TRUE(c::precedes(0.0f, 3, -0.0f, 4));
}

TEST(ContractMinP, LnMinPAndTest) {
  EXPECT_EQ(c::ln_min_p(0.0f), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(c::ln_min_p(1.0f), 0.0f);
  Rng rng(9);
  for (int i = 0; i < 1000000; ++i) {
    const float mp = (float)rng.uniform();
    const float want = (float)std::log((long double)mp);  // correctly rounded in practice
    ASSERT_LE(std::fabs((double)c::ln_min_p(mp) - (double)want),
              std::fabs((double)std::nextafter(want, 0.0f) - (double)want))
        << mp;
  }
  // min_p = 1 keeps exactly the tokens equal to z_max.
  const float zmax = 3.25f;
  EXPECT_TRUE(c::passes_min_p(zmax, zmax, c::ln_min_p(1.0f)));
  EXPECT_FALSE(c::passes_min_p(std::nextafter(zmax, 0.0f), zmax, c::ln_min_p(1.0f)));
  // min_p = 0.5: z - zmax >= ln 0.5 (float), evaluated in fp32.
  const float l = c::ln_min_p(0.5f);
  EXPECT_TRUE(c::passes_min_p(zmax + l, zmax, l));
  EXPECT_FALSE(c::passes_min_p(std::nextafter(zmax + l, -100.0f), zmax, l));
}

TEST(ContractScale, TemperatureOneIsIdentity) {
  Rng rng(13);
  for (int i = 0; i < 100000; ++i) {
    const float x = (float)(100.0 * rng.normal());
    ASSERT_EQ(c::float_bits(c::scale(x, 1.0f)), c::float_bits(x));
  }
  EXPECT_TRUE(c::is_greedy_temperature(0.0f));
  EXPECT_TRUE(c::is_greedy_temperature(std::nextafter(1e-5f, 0.0f)));
  EXPECT_FALSE(c::is_greedy_temperature(1e-5f));
}

// ------------------------------------------------- the oracle, by hand ----

TEST(Oracle, FlatRowTopPCountsByIndex) {
  const std::vector<float> x = {1.5f, 1.5f, 1.5f, 1.5f};
  RowParams p;
  p.top_p = 0.5f;  // W = 4, c = 1,2,3,4: c_2 = 2 >= 2 exactly
  OracleResult r = oracle_sample(x.data(), 4, p);
  EXPECT_EQ(r.status, TOKENSIFT_ROW_OK);
  EXPECT_EQ(r.kept, 2);
  EXPECT_TRUE(r.band);  // c_2 = 2 is within 1e-6 of 0.5 * 4: m_lo = 2, m_hi = 3
  EXPECT_EQ(r.m_lo, 2);
  EXPECT_EQ(r.m_hi, 3);
  EXPECT_TRUE(r.token == 0 || r.token == 1);
  p.top_p = 0.6f;  // 2.4: c_3 = 3
  r = oracle_sample(x.data(), 4, p);
  EXPECT_EQ(r.kept, 3);
  EXPECT_FALSE(r.band);
  EXPECT_NEAR(r.logprob, -std::log(3.0), 1e-12);
}

TEST(Oracle, TopKTiesKeepLowestIndices) {
  const std::vector<float> x = {0.0f, 2.0f, 1.0f, 2.0f, 2.0f, 1.0f};
  RowParams p;
  p.top_k = 2;  // order: 1, 3, 4, 2, 5, 0 -> keeps {1, 3}
  for (uint64_t s = 0; s < 200; ++s) {
    p.seed = s;
    const OracleResult r = oracle_sample(x.data(), 6, p);
    ASSERT_EQ(r.kept, 2);
    ASSERT_TRUE(r.token == 1 || r.token == 3) << r.token;
  }
  p.top_k = 6;  // k >= V disables
  p.seed = 1;
  EXPECT_EQ(oracle_sample(x.data(), 6, p).kept, 6);
}

TEST(Oracle, MinPOneKeepsTheMaxTies) {
  const std::vector<float> x = {5.0f, 7.0f, std::nextafter(7.0f, 0.0f), 7.0f, 1.0f};
  RowParams p;
  p.min_p = 1.0f;
  const OracleResult r = oracle_sample(x.data(), 5, p);
  EXPECT_EQ(r.kept, 2);
  EXPECT_TRUE(r.token == 1 || r.token == 3);
  EXPECT_NEAR(r.logprob, -std::log(2.0), 1e-12);
}

TEST(Oracle, GreedyAndStatuses) {
  const float inf = std::numeric_limits<float>::infinity();
  RowParams greedy;
  greedy.temperature = 0.0f;
  std::vector<float> x = {-0.0f, 0.0f, -inf, -1.0f};
  OracleResult r = oracle_sample(x.data(), 4, greedy);
  EXPECT_EQ(r.token, 0);  // -0 == +0: lowest index
  EXPECT_EQ(r.kept, 1);
  EXPECT_EQ(r.logprob, 0.0);

  x = {1.0f, std::numeric_limits<float>::quiet_NaN(), -inf, 2.0f};
  EXPECT_EQ(oracle_sample(x.data(), 4, greedy).status, TOKENSIFT_ROW_NAN_INPUT);
  x = {1.0f, inf, 0.0f, 2.0f};
  EXPECT_EQ(oracle_sample(x.data(), 4, RowParams{}).status, TOKENSIFT_ROW_NAN_INPUT);
  x = {-inf, -inf};
  EXPECT_EQ(oracle_sample(x.data(), 2, RowParams{}).status, TOKENSIFT_ROW_NO_VALID_TOKEN);
  EXPECT_EQ(oracle_sample(x.data(), 2, greedy).status, TOKENSIFT_ROW_NO_VALID_TOKEN);

  // A finite x / T that overflows is NAN_INPUT for a sampling row only.
  x = {3e38f, 1.0f};
  RowParams hot;
  hot.temperature = 0.5f;
  EXPECT_EQ(oracle_sample(x.data(), 2, hot).status, TOKENSIFT_ROW_NAN_INPUT);
  r = oracle_sample(x.data(), 2, greedy);
  EXPECT_EQ(r.status, TOKENSIFT_ROW_OK);
  EXPECT_EQ(r.token, 0);
  // A finite x / T that underflows past -FLT_MAX is ineligible, never drawn.
  x = {-3e38f, 1.0f, -2e38f};
  for (uint64_t s = 0; s < 100; ++s) {
    hot.seed = s;
    r = oracle_sample(x.data(), 3, hot);
    ASSERT_EQ(r.token, 1);
    ASSERT_EQ(r.kept, 1);
  }
}

TEST(Oracle, TopPAfterTopKRenormalises) {
  // top-p measures mass over the top-k survivors, renormalised: the same p
  // keeps fewer tokens after k = 2 than over the whole row.
  const std::vector<float> x = {2.0f, 1.0f, 0.0f, -1.0f};
  RowParams p;
  p.top_k = 2;
  p.top_p = 0.7f;
  // w = 1, e^-1 over the two survivors: c_1 / W = 0.731 >= 0.7 -> m = 1.
  OracleResult r = oracle_sample(x.data(), 4, p);
  EXPECT_EQ(r.kept, 1);
  EXPECT_FALSE(r.band);
  EXPECT_EQ(r.token, 0);
  p.top_k = 0;  // over all four: c_1 / W = 0.644 < 0.7 -> m = 2
  r = oracle_sample(x.data(), 4, p);
  EXPECT_EQ(r.kept, 2);
}

TEST(Generators, DtypeRoundTripsAreExact) {
  Rng rng(17);
  for (int i = 0; i < 200000; ++i) {
    const float x = (float)(rng.normal() * std::pow(10.0, rng.range(-8, 6)));
    for (ts::DType d : {ts::DType::kBF16, ts::DType::kF16}) {
      const float r = ts::testing::round_to_dtype(x, d);
      ASSERT_EQ(c::float_bits(ts::testing::round_to_dtype(r, d)), c::float_bits(r));
      // Round to nearest: no representable value of d is strictly closer
      // (checked against the neighbours of r in d).
      const uint16_t h = d == ts::DType::kBF16 ? ts::testing::float_to_bf16_bits(r)
                                               : ts::testing::float_to_f16_bits(r);
      auto widen = [&](uint16_t v) {
        return d == ts::DType::kBF16 ? ts::testing::bf16_bits_to_float(v) : ts::testing::f16_bits_to_float(v);
      };
      if (std::isfinite(r) && (h & 0x7fff) != 0 && (h & 0x7fff) < (d == ts::DType::kBF16 ? 0x7f7f : 0x7bff)) {
        const double up = widen((uint16_t)(h + 1)), down = widen((uint16_t)(h - 1));
        ASSERT_LE(std::fabs((double)r - x), std::fabs(up - x)) << x;
        ASSERT_LE(std::fabs((double)r - x), std::fabs(down - x)) << x;
      }
    }
  }
  EXPECT_EQ(ts::testing::float_to_f16_bits(65504.0f), 0x7bffu);
  EXPECT_EQ(ts::testing::float_to_f16_bits(65520.0f), 0x7c00u);
  EXPECT_EQ(ts::testing::f16_bits_to_float(0x0001u), 5.9604644775390625e-08f);
  EXPECT_EQ(ts::testing::float_to_bf16_bits(1.0f), 0x3f80u);
}

// Every distribution delivers what it promises, exactly in its dtype, and a
// batch's storage widens to the values the oracle sees, padding NaN.
TEST(Generators, DistributionsAndBatches) {
  for (ts::DType d : {ts::DType::kF32, ts::DType::kBF16, ts::DType::kF16}) {
    for (int di = 0; di < (int)ts::testing::Dist::kCount; ++di) {
      const auto dist = (ts::testing::Dist)di;
      ts::testing::BatchOptions o;
      o.dist = dist;
      const ts::testing::HostBatch b = ts::testing::make_batch(20, 500, d, 100 + (uint64_t)di, o);
      ASSERT_GE(b.stride, b.vocab);
      int64_t nan = 0, pos_inf = 0, neg_inf = 0, finite = 0, distinct_ties = 0;
      for (int64_t r = 0; r < b.rows; ++r) {
        const unsigned char* base = b.storage.data() + (size_t)(r * b.stride) * ts::dtype_size(d);
        for (int64_t i = 0; i < b.stride; ++i) {
          float w;
          if (d == ts::DType::kF32) {
            std::memcpy(&w, base + 4 * i, 4);
          } else {
            uint16_t h;
            std::memcpy(&h, base + 2 * i, 2);
            w = d == ts::DType::kBF16 ? ts::testing::bf16_bits_to_float(h) : ts::testing::f16_bits_to_float(h);
          }
          if (i >= b.vocab) {
            ASSERT_TRUE(std::isnan(w)) << "padding must be NaN";
            continue;
          }
          const float v = b.row(r)[i];
          ASSERT_TRUE(c::float_bits(w) == c::float_bits(v) || (std::isnan(w) && std::isnan(v)));
          if (!std::isnan(v)) {
            ASSERT_EQ(c::float_bits(ts::testing::round_to_dtype(v, d)), c::float_bits(v));
          }
          nan += std::isnan(v);
          pos_inf += v == std::numeric_limits<float>::infinity();
          neg_inf += v == -std::numeric_limits<float>::infinity();
          finite += std::isfinite(v);
        }
        std::vector<float> sorted(b.row(r), b.row(r) + b.vocab);
        std::sort(sorted.begin(), sorted.end());
        distinct_ties += std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
      }
      using D = ts::testing::Dist;
      const int64_t cells = b.rows * b.vocab;
      switch (dist) {
        case D::kWithNan: EXPECT_EQ(nan, b.rows); break;
        case D::kWithPosInf: EXPECT_EQ(pos_inf, b.rows); break;
        case D::kAllNegInf: EXPECT_EQ(neg_inf, cells); break;
        case D::kHalfNegInf: EXPECT_GT(neg_inf, cells / 3); EXPECT_LT(neg_inf, 2 * cells / 3); break;
        case D::kFlat:
        case D::kBf16Ties: EXPECT_EQ(distinct_ties, b.rows) << "every row has ties"; break;
        default: EXPECT_EQ(finite, cells) << ts::testing::dist_name(dist);
      }
      if (dist != D::kWithNan) {
        EXPECT_EQ(nan, 0);
      }
    }
  }
}
