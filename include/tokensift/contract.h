// tokensift/contract.h: the arithmetic that docs/semantics.md pins, written once for host and device.
//
// Everything in this header is part of the sampling contract: two backends that
// call these functions with the same inputs produce the same bits.  That is why
// every floating-point operation below goes through f_add / f_sub / f_mul /
// f_div / f_fma: on the device they are the _rn intrinsics, which the compiler
// never contracts or reorders; on the host they are plain IEEE operations and
// the project compiles with -ffp-contract=off (see CMakeLists.txt).  Do not
// "simplify" an expression here: a fused multiply-add that appears or
// disappears changes the token a seed draws.
#pragma once

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define TS_HD __host__ __device__ __forceinline__
#else
#define TS_HD inline
#include <cmath>
#endif

namespace tokensift {
namespace contract {

// ---------------------------------------------------------------- constants --

// A row whose temperature is below this floor (T == 0 included) is greedy.
// Chosen as vLLM's _SAMPLING_EPS: below it z = x / T overflows for ordinary
// logit magnitudes and the distribution is a point mass for every practical
// purpose.
constexpr float kGreedyTemperatureFloor = 1e-5f;

// Relative half-width of the top-p tolerance band (docs/semantics.md, "top-p").
constexpr double kTopPBandEpsilon = 1e-6;

// ----------------------------------------------------- uncontracted float ops --

TS_HD float f_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
TS_HD float f_sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
TS_HD float f_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
TS_HD float f_div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
TS_HD float f_fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
// a - b rounded toward -inf: the kernels' pruning cuts, which must err low
// (race_beat_cut).  The host has no portable rounding-mode switch that the
// optimizer respects, so it takes the nearest difference and steps one ulp
// down when the exact error (TwoSum) says that rounded up, or from +inf
// (finite a - b overflowing) to the largest float.
TS_HD float f_sub_rd(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rd(a, b);
#else
  const float s = a - b;
  if (std::isnan(s)) return s;
  if (std::isinf(s)) return (s > 0.0f && std::isfinite(a) && std::isfinite(b)) ? 3.40282347e38f : s;
  const float bv = s - a;
  const float err = (a - (s - bv)) + (-b - bv);  // exact: s + err == a - b
  return err < 0.0f ? std::nextafter(s, -HUGE_VALF) : s;
#endif
}
TS_HD double d_add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
TS_HD double d_mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
TS_HD double d_div(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
TS_HD double d_fma(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

TS_HD uint32_t float_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
TS_HD float bits_float(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}
TS_HD uint64_t double_bits(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
TS_HD double bits_double(uint64_t u) {
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
}

// ------------------------------------------------------------ the order ------

// Maps z to an unsigned key whose unsigned order is z's numeric order.  -0.0 is
// folded onto +0.0 first (they compare equal, so they must tie and fall to the
// index rule).  NaN never reaches this: NaN rows are rejected before ordering.
TS_HD uint32_t order_key(float z) {
  uint32_t u = float_bits(f_add(z, 0.0f));  // -0 + 0 == +0 under round-to-nearest
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
TS_HD float key_to_float(uint32_t k) {
  return bits_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

// True when token (za, ia) comes before token (zb, ib) in the contract's total
// order: z descending, index ascending.
TS_HD bool precedes(float za, uint32_t ia, float zb, uint32_t ib) {
  return za > zb || (za == zb && ia < ib);
}

// ------------------------------------------------------------- logarithms ----

// Natural log of a positive, normal, finite float.  x = m * 2^e with
// m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh(s), s = (m-1)/(m+1), evaluated as
// an odd series in s (|s| <= 0.1716, so s^2 <= 0.0295 and five terms reach
// float precision).  About 1 ulp; what matters is that it is the same
// sequence of correctly rounded operations everywhere.
TS_HD float log_f32(float x) {
  uint32_t b = float_bits(x);
  int32_t e = (int32_t)(b >> 23) - 127;
  uint32_t mb = (b & 0x007fffffu) | 0x3f800000u;
  if (mb > 0x3fb504f3u) {  // m > sqrt(2): halve it
    mb -= 0x00800000u;
    e += 1;
  }
  const float m = bits_float(mb);
  const float f = f_sub(m, 1.0f);  // exact (Sterbenz)
  const float s = f_div(f, f_add(2.0f, f));
  const float z = f_mul(s, s);
  float poly = f_fma(z, 0.0909090936f /* 1/11 */, 0.111111112f /* 1/9 */);
  poly = f_fma(z, poly, 0.142857149f /* 1/7 */);
  poly = f_fma(z, poly, 0.200000003f /* 1/5 */);
  poly = f_fma(z, poly, 0.333333343f /* 1/3 */);
  const float two_s = f_add(s, s);
  const float l = f_fma(f_mul(two_s, z), poly, two_s);
  const float ef = (float)e;
  return f_fma(ef, 0.693138123f /* ln2_hi 0x3f317180 */,
               f_fma(ef, 9.05800061e-06f /* ln2_lo 0x3717f7d1 */, l));
}

// The same construction in double, with enough series terms for double
// precision.  Used once per row for ln(min_p).
TS_HD double log_f64(double x) {
  uint64_t b = double_bits(x);
  int32_t e = (int32_t)(b >> 52) - 1023;
  uint64_t mb = (b & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
  if (mb > 0x3ff6a09e667f3bcdull) {
    mb -= 0x0010000000000000ull;
    e += 1;
  }
  const double m = bits_double(mb);
  const double f = m - 1.0;  // exact; plain ops are fine in double (no fusion partner)
  const double s = d_div(f, d_add(2.0, f));
  const double z = d_mul(s, s);
  double poly = 1.0 / 25.0;
  poly = d_fma(z, poly, 1.0 / 23.0);
  poly = d_fma(z, poly, 1.0 / 21.0);
  poly = d_fma(z, poly, 1.0 / 19.0);
  poly = d_fma(z, poly, 1.0 / 17.0);
  poly = d_fma(z, poly, 1.0 / 15.0);
  poly = d_fma(z, poly, 1.0 / 13.0);
  poly = d_fma(z, poly, 1.0 / 11.0);
  poly = d_fma(z, poly, 1.0 / 9.0);
  poly = d_fma(z, poly, 1.0 / 7.0);
  poly = d_fma(z, poly, 1.0 / 5.0);
  poly = d_fma(z, poly, 1.0 / 3.0);
  const double two_s = d_add(s, s);
  const double l = d_fma(d_mul(two_s, z), poly, two_s);
  const double ed = (double)e;
  return d_fma(ed, 6.93147180369123816490e-01 /* ln2_hi */,
               d_fma(ed, 1.90821492927058770002e-10 /* ln2_lo */, l));
}

// ln(min_p) as the min-p filter uses it: computed in double, rounded once to
// float.  min_p == 0 disables the filter and maps to -inf.
TS_HD float ln_min_p(float min_p) {
  if (!(min_p > 0.0f)) return -__builtin_huge_valf();
  return (float)log_f64((double)min_p);
}

// The min-p test for one token, exactly as both backends evaluate it.
TS_HD bool passes_min_p(float z, float z_max, float ln_minp) {
  return f_sub(z, z_max) >= ln_minp;
}

// Temperature scaling: z = x / T, one IEEE division.
TS_HD float scale(float x, float temperature) { return f_div(x, temperature); }

TS_HD bool is_greedy_temperature(float t) { return t < kGreedyTemperatureFloor; }

// ------------------------------------------------------ Philox-4x32-10 -------

struct Philox4 {
  uint32_t v[4];
};

TS_HD uint32_t mulhi32(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return (uint32_t)(((uint64_t)a * (uint64_t)b) >> 32);
#endif
}

// The full 64-bit product a * b as its high and low words (one IMAD.WIDE on
// the GPU: ptxas may otherwise split a multiply pair into two instructions).
TS_HD void mul_wide32(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
#if defined(__CUDA_ARCH__)
  uint64_t p;
  asm("mul.wide.u32 %0, %1, %2;" : "=l"(p) : "r"(a), "r"(b));
  hi = (uint32_t)(p >> 32);
  lo = (uint32_t)p;
#else
  const uint64_t p = (uint64_t)a * (uint64_t)b;
  hi = (uint32_t)(p >> 32);
  lo = (uint32_t)p;
#endif
}

// Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (SC'11); the
// same rounds and constants as Random123 and cuRAND.
TS_HD Philox4 philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                            uint32_t k0, uint32_t k1) {
  const uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  const uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    const uint32_t hi0 = mulhi32(kM0, c0), lo0 = kM0 * c0;
    const uint32_t hi1 = mulhi32(kM1, c2), lo1 = kM1 * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// The 32 random bits of token i for a row with this seed and offset:
// key = (seed low, seed high), counter = (i / 4, offset low, offset high, 0),
// word i % 4 of the output.  Four consecutive tokens share one Philox call.
TS_HD Philox4 philox_block(uint64_t seed, uint64_t offset, uint32_t group) {
  return philox4x32_10(group, (uint32_t)offset, (uint32_t)(offset >> 32), 0u,
                       (uint32_t)seed, (uint32_t)(seed >> 32));
}
TS_HD uint32_t token_bits(uint64_t seed, uint64_t offset, uint32_t i) {
  return philox_block(seed, offset, i >> 2).v[i & 3u];
}

// philox_block for many groups of one row: the same bits, with the products
// that depend on the row only (counter words 1-3 are the offset and 0) formed
// once.  Round 0 multiplies the constant offset_high, round 1 the constant
// word round 0 made from it, so a group pays 18 of the 20 multiplies and 19
// of the 20 xors (the GPU's plain race calls it for every group of a row).
struct PhiloxRow {
  uint32_t k0, k1;  // the key (seed)
  uint32_t b;       // round 1: c0 = mulhi(M1, c2) ^ b
  uint32_t c;       // round 1: c2 = (round 0's low product) ^ c
  uint32_t d;       // round 2: c2 = mulhi(M0, c0) ^ d
};
TS_HD PhiloxRow philox_row(uint64_t seed, uint64_t offset) {
  const uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  const uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  const uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  const uint32_t off_lo = (uint32_t)offset, off_hi = (uint32_t)(offset >> 32);
  // Round 0: c0 = mulhi(M1, off_hi) ^ off_lo ^ k0 and c1 = M1 * off_hi, for every group.
  const uint32_t a = mulhi32(kM1, off_hi) ^ off_lo ^ k0, l1 = kM1 * off_hi;
  // Round 1 multiplies that c0: its high word enters c2, its low word is c3.
  return PhiloxRow{k0, k1, l1 ^ (k0 + kW0), mulhi32(kM0, a) ^ (k1 + kW1), (kM0 * a) ^ (k1 + 2u * kW1)};
}
TS_HD Philox4 philox_row_block(const PhiloxRow& row, uint32_t group) {
  const uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  const uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  // Round 0: the group's product (c0 and c1 are the row's).
  uint32_t hi_g, lo_g;
  mul_wide32(kM0, group, hi_g, lo_g);
  const uint32_t c2_1 = hi_g ^ row.k1;
  // Round 1.
  uint32_t hi1, lo1;
  mul_wide32(kM1, c2_1, hi1, lo1);
  uint32_t c0 = hi1 ^ row.b, c1 = lo1, c2 = lo_g ^ row.c, c3;
  // Round 2 (its c3 input is the row's constant, folded into d).
  {
    uint32_t hi0, lo0;
    mul_wide32(kM0, c0, hi0, lo0);
    mul_wide32(kM1, c2, hi1, lo1);
    c0 = hi1 ^ c1 ^ (row.k0 + 2u * kW0);
    c1 = lo1;
    c2 = hi0 ^ row.d;
    c3 = lo0;
  }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (uint32_t round = 3; round < 10; ++round) {
    uint32_t hi0, lo0;
    mul_wide32(kM0, c0, hi0, lo0);
    mul_wide32(kM1, c2, hi1, lo1);
    c0 = hi1 ^ c1 ^ (row.k0 + round * kW0);
    c1 = lo1;
    c2 = hi0 ^ c3 ^ (row.k1 + round * kW1);
    c3 = lo0;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// U = (2 * (r >> 9) + 1) * 2^-24: 23 random bits, exactly representable,
// strictly inside (0, 1) (smallest 2^-24, largest 1 - 2^-24), so that neither
// E = -ln U nor ln E is ever infinite.
TS_HD float uniform_from_bits(uint32_t r) {
  return f_mul((float)((r >> 9) * 2u + 1u), 5.9604644775390625e-08f /* 2^-24 */);
}

// Race score of a kept token: z - ln(E), E = -ln(U).  The winner is the kept
// token with the largest score, ties to the lowest index; it is distributed as
// softmax(z) over the kept set (the exponential race / Gumbel-max identity).
TS_HD float race_score_from_bits(float z, uint32_t r) {
  const float u = uniform_from_bits(r);
  const float e = -log_f32(u);
  return f_sub(z, log_f32(e));
}
TS_HD float race_score(float z, uint64_t seed, uint64_t offset, uint32_t i) {
  return race_score_from_bits(z, token_bits(seed, offset, i));
}

// A cheap test that a token cannot win, in the log2 domain (the GPU's plain
// race, src/cuda/plain_race.cu).  2^24 (1 - U) is the odd integer 2^24 - 1 -
// 2 (r >> 9), so h = (~r >> 9) & (2^23 - 1) = floor(2^23 (1 - U)), formed as a
// float by the exponent trick (exact), and lg2(h) - 23 <= log2(1 - U).  With
// -ln E <= -ln(1 - U), a token whose z gives lg2(h) > z log2(e) +
// race_skip_cut(bar, margin) scores below bar - margin.  h = 0 (U's largest
// values) gives lg2 = -inf: never skipped; bar = -inf gives a cut of +inf.
TS_HD float race_skip_h(uint32_t r) {
  return bits_float(0x4b000000u | ((~r >> 9) & 0x7fffffu)) - 8388608.0f;
}
constexpr float kLog2E = 1.44269504088896341f;
TS_HD float race_skip_cut(float bar, float margin) { return 23.0f - (bar - margin) * kLog2E; }

// Largest possible -ln(E) (U = 1 - 2^-24 gives E ~ 2^-24): a token whose
// z + kMaxRaceBoost is below a score already seen can never win the race.
constexpr float kMaxRaceBoost = 16.6355324f;

// Smallest -ln(E) (U = 2^-24 gives E = 24 ln 2): every token's score is at
// least z + kMinRaceBoost, so the best z of a set bounds its winner from below.
constexpr float kMinRaceBoost = -2.81154084f;

// A cut below which no z can reach the bar whatever its uniform: z <
// race_beat_cut(bar, margin) gives z + kMaxRaceBoost < rd(bar - margin)
// exactly, so the score fl(z - ln E) <= fl(z + kMaxRaceBoost) <= rd(bar -
// margin) < bar (rounding is monotone; -ln E <= kMaxRaceBoost).  Both
// subtractions round down: rounded to nearest, the cut can sit an ulp too
// high above |bar| = 2^19, where ulp(bar) / 2 passes the margin, and a
// skipped token could tie the bar and win it by its lower index.
TS_HD float race_beat_cut(float bar, float margin) {
  return f_sub_rd(f_sub_rd(bar, margin), kMaxRaceBoost);
}

}  // namespace contract
}  // namespace tokensift
