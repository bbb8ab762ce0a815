// Deterministic test data: logits rows of every adversarial shape, exact in
// their dtype, random per-row parameters with the edge values the contract
// singles out, and batches with padded row strides in host memory.
//
// Shared by the CPU tests and the GPU tests (plain C++20, no gtest, no CUDA),
// so a seed names the same rows on every backend.  The random source is our
// own (splitmix64 + Box-Muller) rather than <random>'s distributions, whose
// output is implementation-defined.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tokensift/tokensift.hpp"

namespace tokensift::testing {

// ------------------------------------------------------------------ random --

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed ^ 0x6a09e667f3bcc908ull) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1]: never 0, so log() below is finite.
  double uniform() { return (double)((next() >> 11) + 1) * 0x1p-53; }
  // Uniform integer in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) {
    return lo + (int64_t)(next() % (uint64_t)(hi - lo + 1));
  }
  bool chance(double p) { return uniform() <= p; }
  double normal() {
    const double r = std::sqrt(-2.0 * std::log(uniform()));
    return r * std::cos(6.283185307179586 * uniform());
  }
  // Student-t with `dof` degrees of freedom (dof = 1 is Cauchy).
  double student_t(int dof) {
    double chi2 = 0.0;
    for (int i = 0; i < dof; ++i) {
      const double g = normal();
      chi2 += g * g;
    }
    return normal() / std::sqrt(chi2 / dof);
  }

 private:
  uint64_t state_;
};

// ------------------------------------------------------ dtype round trips --
// Round to nearest even, like a framework's .to(bfloat16/float16).

inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
inline float bf16_bits_to_float(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t float_to_f16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {                                     // below 2^-14: subnormal half
    if (ax <= 0x33000000u) return (uint16_t)sign;             // <= 2^-25 ties to zero
    const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    const int shift = 126 - (int)(ax >> 23);
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return (uint16_t)(sign | q);
  }
  const uint32_t r = ax - 0x38000000u;
  uint32_t q = r >> 13;
  const uint32_t rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;
  return (uint16_t)(sign | q);
}
inline float f16_bits_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t u;
  if (e == 0) {
    float f = (float)m * 5.9604644775390625e-08f;  // m * 2^-24, exact
    std::memcpy(&u, &f, 4);
    u |= sign;
  } else if (e == 31) {
    u = sign | 0x7f800000u | (m << 13);
  } else {
    u = sign | ((e + 112u) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The value a backend sees after widening x stored in dtype d.
inline float round_to_dtype(float x, DType d) {
  switch (d) {
    case DType::kBF16: return bf16_bits_to_float(float_to_bf16_bits(x));
    case DType::kF16: return f16_bits_to_float(float_to_f16_bits(x));
    default: return x;
  }
}

// Stores `n` widened values into dtype storage (they must already be exact).
inline void store_values(DType d, const float* src, int64_t n, void* dst) {
  if (d == DType::kF32) {
    std::memcpy(dst, src, (size_t)n * 4);
    return;
  }
  auto* out = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i)
    out[i] = d == DType::kBF16 ? float_to_bf16_bits(src[i]) : float_to_f16_bits(src[i]);
}

inline const char* dtype_name(DType d) {
  return d == DType::kF32 ? "f32" : d == DType::kBF16 ? "bf16" : "f16";
}

// ------------------------------------------------------------ distributions --

enum class Dist : int {
  kGaussian,      // N(0, 2^2)
  kOutlierHead,   // N(0, 2^2) bulk, 20 tokens boosted by +8..+15 (an LLM-like head)
  kFlat,          // every logit equal: top-k / top-p boundaries are pure index ties
  kDominant,      // N(0, 1) and one token far above the rest
  kHeavyTail,     // Student-t(1) (Cauchy) and t(2) rows: huge spread
  kBf16Ties,      // N(0, 2^2) on a coarse grid (bf16, 4 mantissa bits): many ties
  kHalfNegInf,    // N(0, 2^2) with about half of the tokens at -inf (masked)
  kHuge,          // N(0, 2^2) with a few +-1e30..3e38 tokens: x/T overflows (+) or underflows (-)
  kWithNan,       // Gaussian with one NaN: NAN_INPUT
  kWithPosInf,    // Gaussian with one +inf: NAN_INPUT
  kAllNegInf,     // every logit -inf: NO_VALID_TOKEN
  kCount
};

inline const char* dist_name(Dist d) {
  static const char* const kNames[] = {"gaussian", "outlier_head", "flat",     "dominant",
                                       "heavy_tail", "bf16_ties",  "half_neginf", "huge",
                                       "with_nan", "with_posinf", "all_neginf"};
  return kNames[(int)d];
}

// Fills out[0..V) with a row of distribution `dist`, every value exactly
// representable in `dtype` (generated, rounded to the dtype, widened).
inline void fill_row(Dist dist, int64_t vocab, DType dtype, Rng& rng, float* out) {
  const float kInf = std::numeric_limits<float>::infinity();
  // fp16 tops out at 65504: keep finite distributions finite in it.
  const double max_finite = dtype == DType::kF16 ? 60000.0 : 3.0e38;
  auto clamp = [&](double v) { return v > max_finite ? max_finite : v < -max_finite ? -max_finite : v; };
  switch (dist) {
    case Dist::kGaussian:
    case Dist::kWithNan:
    case Dist::kWithPosInf:
    case Dist::kHalfNegInf:
    case Dist::kHuge:
      for (int64_t i = 0; i < vocab; ++i) out[i] = (float)(2.0 * rng.normal());
      break;
    case Dist::kOutlierHead: {
      for (int64_t i = 0; i < vocab; ++i) out[i] = (float)(2.0 * rng.normal());
      const int64_t heads = vocab < 20 ? vocab : 20;
      for (int64_t h = 0; h < heads; ++h) out[rng.range(0, vocab - 1)] += (float)(8.0 + 7.0 * rng.uniform());
      break;
    }
    case Dist::kFlat: {
      const float c = (float)(4.0 * rng.normal());
      for (int64_t i = 0; i < vocab; ++i) out[i] = c;
      break;
    }
    case Dist::kDominant: {
      for (int64_t i = 0; i < vocab; ++i) out[i] = (float)rng.normal();
      out[rng.range(0, vocab - 1)] = (float)(25.0 + 10.0 * rng.uniform());
      break;
    }
    case Dist::kHeavyTail: {
      const int dof = rng.chance(0.5) ? 1 : 2;
      for (int64_t i = 0; i < vocab; ++i) out[i] = (float)clamp(rng.student_t(dof));
      break;
    }
    case Dist::kBf16Ties:
      // 4 mantissa bits: far coarser than bf16's 8, so even fp32 rows tie a lot.
      for (int64_t i = 0; i < vocab; ++i) {
        float v = (float)(2.0 * rng.normal());
        uint32_t u;
        std::memcpy(&u, &v, 4);
        u = (u + 0x0003ffffu) & 0xfffc0000u;
        std::memcpy(&v, &u, 4);
        out[i] = v;
      }
      break;
    case Dist::kAllNegInf:
      for (int64_t i = 0; i < vocab; ++i) out[i] = -kInf;
      break;
    case Dist::kCount: break;
  }
  if (dist == Dist::kHalfNegInf) {
    for (int64_t i = 0; i < vocab; ++i)
      if (rng.chance(0.5)) out[i] = -kInf;
    if (rng.chance(0.5)) out[rng.range(0, vocab - 1)] = 0.5f;  // keep at least one finite
  }
  if (dist == Dist::kHuge) {
    // Half of the rows get only negative giants (tokens that become ineligible
    // when x/T underflows past -FLT_MAX), the rest any sign (+ overflows: NAN_INPUT).
    const bool negative_only = rng.chance(0.5);
    const int64_t n = 1 + rng.range(0, 3);
    for (int64_t h = 0; h < n && h < vocab - 1; ++h) {
      const double mag = std::pow(10.0, 30.0 + 8.5 * rng.uniform());
      const double sign = negative_only || rng.chance(0.5) ? -1.0 : 1.0;
      out[rng.range(0, vocab - 1)] = (float)clamp(sign * mag);
    }
  }
  if (dist == Dist::kWithNan) out[rng.range(0, vocab - 1)] = std::numeric_limits<float>::quiet_NaN();
  if (dist == Dist::kWithPosInf) out[rng.range(0, vocab - 1)] = kInf;
  for (int64_t i = 0; i < vocab; ++i) out[i] = round_to_dtype(out[i], dtype);
}

// ---------------------------------------------------------------- params ----

struct RowParams {
  float temperature = 1.0f;
  float min_p = 0.0f;
  int32_t top_k = 0;
  float top_p = 1.0f;
  uint64_t seed = 0;
  uint64_t offset = 0;
};

inline std::string describe(const RowParams& p) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "T=%.9g min_p=%.9g top_k=%d top_p=%.9g seed=%llu offset=%llu",
                (double)p.temperature, (double)p.min_p, p.top_k, (double)p.top_p,
                (unsigned long long)p.seed, (unsigned long long)p.offset);
  return buf;
}

// Random valid parameters for a row of `vocab` tokens, edges included:
// T = 0, just below / at / just above the greedy floor, tiny, 1, random;
// k = 0, 1, V-1, V, > V, random; p = 1, 1e-6, near 1, random; min_p = 0, 1,
// tiny, random.  Each filter is off often enough that every combination of
// filters appears.
inline RowParams random_params(Rng& rng, int64_t vocab) {
  RowParams p;
  const float floor = contract::kGreedyTemperatureFloor;
  const double t = rng.uniform();
  if (t < 0.04) p.temperature = 0.0f;
  else if (t < 0.06) p.temperature = std::nextafter(floor, 0.0f);
  else if (t < 0.08) p.temperature = floor;
  else if (t < 0.10) p.temperature = std::nextafter(floor, 1.0f);
  else if (t < 0.12) p.temperature = 1.1e-5f;
  else if (t < 0.15) p.temperature = (float)(1e-3 + 0.05 * rng.uniform());
  else if (t < 0.40) p.temperature = 1.0f;
  else p.temperature = (float)(0.05 + 2.5 * rng.uniform());

  const double m = rng.uniform();
  if (m < 0.55) p.min_p = 0.0f;
  else if (m < 0.60) p.min_p = 1.0f;
  else if (m < 0.65) p.min_p = 1e-6f;
  else p.min_p = (float)(0.3 * rng.uniform() * rng.uniform());

  const int64_t v = vocab;
  const double k = rng.uniform();
  if (k < 0.40) p.top_k = 0;
  else if (k < 0.48) p.top_k = 1;
  else if (k < 0.54) p.top_k = (int32_t)std::max<int64_t>(0, v - 1);
  else if (k < 0.58) p.top_k = (int32_t)v;
  else if (k < 0.62) p.top_k = (int32_t)std::min<int64_t>(v + 1 + rng.range(0, 100), INT32_MAX);
  else if (k < 0.80) p.top_k = (int32_t)rng.range(1, std::min<int64_t>(v, 64));
  else p.top_k = (int32_t)rng.range(1, v);

  const double q = rng.uniform();
  if (q < 0.40) p.top_p = 1.0f;
  else if (q < 0.45) p.top_p = 1e-6f;
  else if (q < 0.50) p.top_p = 0.999999f;
  else if (q < 0.55) p.top_p = std::nextafter(1.0f, 0.0f);
  else p.top_p = (float)(0.02 + 0.97 * rng.uniform());
  if (p.top_p <= 0.0f) p.top_p = 1e-6f;

  p.seed = rng.next();
  p.offset = rng.chance(0.2) ? (uint64_t)rng.range(0, 4096) : rng.next();
  return p;
}

// ----------------------------------------------------------------- batches --

// A batch in host memory: rows x vocab logits in `dtype`, row stride >= vocab
// (the padding holds NaN, which no backend may read), the widened values the
// oracle sees, and one parameter value per row.
struct HostBatch {
  DType dtype = DType::kF32;
  int64_t rows = 0, vocab = 0, stride = 0;
  std::vector<unsigned char> storage;  // rows * stride elements of dtype
  std::vector<float> values;           // rows * vocab, widened
  std::vector<Dist> dist;
  std::vector<float> temperature, min_p, top_p;
  std::vector<int32_t> top_k;
  std::vector<uint64_t> seed, offset;

  HostBatch() = default;
  HostBatch(int64_t r, int64_t v, int64_t s, DType d)
      : dtype(d), rows(r), vocab(v), stride(s), storage((size_t)(r * s) * dtype_size(d)),
        values((size_t)(r * v)), dist((size_t)r, Dist::kGaussian), temperature((size_t)r, 1.0f),
        min_p((size_t)r, 0.0f), top_p((size_t)r, 1.0f), top_k((size_t)r, 0), seed((size_t)r, 0),
        offset((size_t)r, 0) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> pad((size_t)s, nan);
    for (int64_t i = 0; i < r; ++i) store_values(d, pad.data(), s, row_storage(i));
  }

  const float* row(int64_t r) const { return values.data() + r * vocab; }
  void* row_storage(int64_t r) { return storage.data() + (size_t)(r * stride) * dtype_size(dtype); }

  // Sets row r from values that are already exact in dtype (see fill_row).
  void set_row(int64_t r, const float* src) {
    std::memcpy(values.data() + r * vocab, src, (size_t)vocab * 4);
    store_values(dtype, src, vocab, row_storage(r));
  }
  void set_params(int64_t r, const RowParams& p) {
    temperature[r] = p.temperature;
    min_p[r] = p.min_p;
    top_k[r] = p.top_k;
    top_p[r] = p.top_p;
    seed[r] = p.seed;
    offset[r] = p.offset;
  }
  RowParams params(int64_t r) const {
    return RowParams{temperature[r], min_p[r], top_k[r], top_p[r], seed[r], offset[r]};
  }

  LogitsView view() const { return LogitsView{storage.data(), rows, vocab, stride, dtype}; }
  // Per-row pointers into this batch's host vectors.
  SamplingParams sampling_params() const {
    SamplingParams p;
    p.temperature.per_row = temperature.data();
    p.min_p.per_row = min_p.data();
    p.top_k.per_row = top_k.data();
    p.top_p.per_row = top_p.data();
    p.seed.per_row = seed.data();
    p.offset.per_row = offset.data();
    return p;
  }
};

struct BatchOptions {
  // Distribution of every row; kCount draws one per row from `mix`.
  Dist dist = Dist::kCount;
  // Relative weights of each distribution when drawing (finite-row shapes dominate).
  double mix[(int)Dist::kCount] = {4, 4, 1, 1.5, 2, 2, 1.5, 0.7, 0.4, 0.4, 0.3};
  int64_t max_pad = 17;  // stride = vocab + uniform [0, max_pad]
  bool random_params = true;
  RowParams fixed;  // used when random_params is false
};

inline Dist pick_dist(Rng& rng, const BatchOptions& o) {
  double total = 0.0;
  for (double w : o.mix) total += w;
  double u = rng.uniform() * total;
  for (int i = 0; i < (int)Dist::kCount; ++i) {
    if (u <= o.mix[i]) return (Dist)i;
    u -= o.mix[i];
  }
  return Dist::kGaussian;
}

inline HostBatch make_batch(int64_t rows, int64_t vocab, DType dtype, uint64_t seed,
                            const BatchOptions& options = {}) {
  Rng rng(seed);
  const int64_t stride = vocab + (options.max_pad > 0 ? rng.range(0, options.max_pad) : 0);
  HostBatch b(rows, vocab, stride, dtype);
  std::vector<float> row((size_t)vocab);
  for (int64_t r = 0; r < rows; ++r) {
    const Dist d = options.dist == Dist::kCount ? pick_dist(rng, options) : options.dist;
    b.dist[r] = d;
    fill_row(d, vocab, dtype, rng, row.data());
    b.set_row(r, row.data());
    b.set_params(r, options.random_params ? random_params(rng, vocab) : options.fixed);
  }
  return b;
}

}  // namespace tokensift::testing
