// One row of the CPU backend: the shared pieces of the selection path
// (row_select.cpp) and the full-sort path (row_sort.cpp).
//
// Both paths compute z, the min-p test, the order and the race only through
// include/tokensift/contract.h; what they may compute their own way is the
// top-p mass (double, inside the band of docs/semantics.md) and the logprob.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "tokensift/contract.h"
#include "tokensift/tokensift.hpp"

namespace tokensift::detail::cpu {

struct RowParams {
  float temperature;
  float min_p;
  int32_t top_k;
  float top_p;
  uint64_t seed;
  uint64_t offset;
};

struct RowResult {
  int32_t token = -1;
  RowStatus status = RowStatus::kOk;
  float logprob = std::numeric_limits<float>::quiet_NaN();
  int32_t kept = 0;
};

// Histogram of d = z_max - z over the min-p survivors (row_select.cpp):
// kBinsPerUnit bins per unit of z up to kHistRange, then one overflow bin.
constexpr int kBinsPerUnit = 16;
constexpr int kHistRange = 40;
constexpr int kNumBins = kBinsPerUnit * kHistRange + 1;

// Per-worker scratch carved out of the caller's workspace.
struct Scratch {
  uint64_t* cand;       // vocab entries: packed (order key, index), see pack()
  uint32_t* bin_count;  // kNumBins
  double* bin_mass;     // kNumBins
};

inline size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
inline size_t scratch_bytes(int64_t vocab) {
  return align_up((size_t)vocab * 8, 64) + align_up(kNumBins * 4, 64) + align_up(kNumBins * 8, 64);
}

// A token as one u64 whose descending unsigned order is the contract's order:
// high word the order key of z (z descending), low word ~index (index ascending).
inline uint64_t pack(float z, uint32_t i) {
  return ((uint64_t)contract::order_key(z) << 32) | (uint32_t)~i;
}
inline float packed_z(uint64_t c) { return contract::key_to_float((uint32_t)(c >> 32)); }
inline uint32_t packed_index(uint64_t c) { return ~(uint32_t)c; }

// Row status and z_max of a sampling row (status checks of docs/semantics.md).
struct RowScan {
  RowStatus status;
  float z_max;
  int64_t i_max;  // lowest index holding z_max
};

template <class Load>
RowScan scan_row(const Load& x, int64_t vocab, float t) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  float z_max = -kInf;
  int64_t i_max = -1;
  for (int64_t i = 0; i < vocab; ++i) {
    const float xi = x(i);
    if (!(xi < kInf)) return {RowStatus::kNanInput, 0.0f, -1};  // NaN or +inf
    const float z = contract::scale(xi, t);
    if (z == kInf) return {RowStatus::kNanInput, 0.0f, -1};
    if (z > z_max) {
      z_max = z;
      i_max = i;
    }
  }
  // No eligible token: every x is -inf (or, only when T < 1, every finite x / T
  // underflows to -inf; the contract leaves that row undefined, we call it empty).
  if (i_max < 0) return {RowStatus::kNoValidToken, 0.0f, -1};
  return {RowStatus::kOk, z_max, i_max};
}

template <class Load>
RowResult greedy_row(const Load& x, int64_t vocab) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  float best = -kInf;
  int64_t best_i = -1;
  RowResult r;
  for (int64_t i = 0; i < vocab; ++i) {
    const float xi = x(i);
    if (!(xi < kInf)) {
      r.status = RowStatus::kNanInput;
      return r;
    }
    if (xi > best) {
      best = xi;
      best_i = i;
    }
  }
  if (best_i < 0) {
    r.status = RowStatus::kNoValidToken;
    return r;
  }
  r.token = (int32_t)best_i;
  r.logprob = 0.0f;
  r.kept = 1;
  return r;
}

// The race winner so far: largest score, ties to the lowest index.
struct RaceBest {
  float score = -std::numeric_limits<float>::infinity();
  uint32_t index = 0xffffffffu;
  float z = 0.0f;
  void offer(float s, uint32_t i, float zi) {
    if (s > score || (s == score && i < index)) {
      score = s;
      index = i;
      z = zi;
    }
  }
  // True when a token with this z cannot win: its score is at most
  // fl(z + kMaxRaceBoost) (rounding is monotone), strictly below the best.
  bool beats_bound(float zi) const {
    return !(contract::f_add(zi, contract::kMaxRaceBoost) < score);
  }
};

// Race over packed candidates.  When sorted (in the order), the scan stops at the
// first token that can no longer win: every later one has z no larger.
inline RaceBest race_packed(const uint64_t* c, int64_t n, uint64_t seed, uint64_t offset,
                            bool sorted) {
  RaceBest best;
  for (int64_t j = 0; j < n; ++j) {
    const float z = packed_z(c[j]);
    if (!best.beats_bound(z)) {
      if (sorted) break;
      continue;
    }
    const uint32_t i = packed_index(c[j]);
    best.offer(contract::race_score(z, seed, offset, i), i, z);
  }
  return best;
}

// exp(y) for y <= 0 in double, relative error ~1e-11: range reduction by ln 2
// and a degree-9 Taylor polynomial.  Used for the top-p tail mass, where a
// float argument (z - z_max rounded to fp32) would cost ~d * 6e-8 relative.
inline double exp_neg(double y) {
  if (y < -700.0) return 0.0;
  const double kLog2e = 1.4426950408889634, kLn2Hi = 6.93147180369123816490e-01,
               kLn2Lo = 1.90821492927058770002e-10;
  const double n = std::floor(y * kLog2e + 0.5);
  const double r = (y - n * kLn2Hi) - n * kLn2Lo;
  double p = 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // 2^n built from its bits: n >= -1010 here, so it is a normal double.
  return p * contract::bits_double((uint64_t)((int64_t)n + 1023) << 52);
}

inline double weight(float z, float z_max) { return std::exp((double)z - (double)z_max); }

inline float logprob_of(float z_tok, float z_max, double kept_mass) {
  return (float)(((double)z_tok - (double)z_max) - std::log(kept_mass));
}

template <class Load>
RowResult select_row(const Load& x, int64_t vocab, const RowParams& p, const Scratch& s,
                     bool want_logprob);
template <class Load>
RowResult sort_row(const Load& x, int64_t vocab, const RowParams& p, const Scratch& s,
                   bool want_logprob);

}  // namespace tokensift::detail::cpu
