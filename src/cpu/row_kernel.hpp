// One row of the CPU backend: the shared pieces of the selection path
// (row_select.cpp) and the full-sort path (row_sort.cpp).
//
// Both paths compute z, the min-p test, the order and the race only through
// include/tokensift/contract.h; what they may compute their own way is the
// top-p mass (double, inside the band of docs/semantics.md) and the logprob.
#pragma once

#include <bit>
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

// Per-worker scratch carved out of the caller's workspace.
struct Scratch {
  uint32_t* key;   // vocab + 4 entries: order_key(z_i), zero-padded to whole Philox groups
  uint64_t* cand;  // vocab entries: packed (order key, index), see pack()
};

inline size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
inline size_t scratch_bytes(int64_t vocab) {
  return align_up(((size_t)vocab + 4) * 4, 64) + align_up((size_t)vocab * 8, 64);
}

// A token as one u64 whose descending unsigned order is the contract's order:
// high word the order key of z (z descending), low word ~index (index ascending).
inline uint64_t pack_key(uint32_t key, uint32_t i) { return ((uint64_t)key << 32) | (uint32_t)~i; }
inline float packed_z(uint64_t c) { return contract::key_to_float((uint32_t)(c >> 32)); }
inline uint32_t packed_index(uint64_t c) { return ~(uint32_t)c; }

constexpr uint32_t kKeyNegInf = 0x007fffffu;  // order_key(-inf): ineligible tokens

// Status, z_max and the order keys of one row (docs/semantics.md, "Status of
// a row").  kScale: z = x / T (sampling rows); greedy rows order x itself.
// Written as chunked branch-free loops so that the compiler vectorizes them.
struct RowScan {
  RowStatus status;
  float z_max;
  uint32_t k_max;
  int64_t i_max;  // lowest index holding z_max
};

template <bool kScale, class Load>
RowScan scan_keys(const Load& x, int64_t vocab, float t, uint32_t* key) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr int64_t kChunk = 512;
  uint32_t k_max = 0;
  int64_t chunk_of_max = 0;
  for (int64_t c0 = 0; c0 < vocab; c0 += kChunk) {
    const int64_t c1 = c0 + kChunk < vocab ? c0 + kChunk : vocab;
    uint32_t bad = 0, km = 0;
    for (int64_t i = c0; i < c1; ++i) {
      const float z = kScale ? contract::scale(x(i), t) : x(i);
      bad |= (uint32_t)!(z < kInf);  // NaN, +inf, or x / T overflowing to +inf
      const uint32_t k = contract::order_key(z);
      key[i] = k;
      km = km > k ? km : k;
    }
    if (bad) return {RowStatus::kNanInput, 0.0f, 0, -1};
    if (km > k_max) {
      k_max = km;
      chunk_of_max = c0;
    }
  }
  for (int j = 0; j < 4; ++j) key[vocab + j] = 0;  // below every real key
  // No eligible token: every x is -inf, or (T < 1) every finite x / T
  // underflows to -inf (docs/semantics.md, NO_VALID_TOKEN).
  if (k_max <= kKeyNegInf) return {RowStatus::kNoValidToken, 0.0f, 0, -1};
  int64_t i = chunk_of_max;
  while (key[i] != k_max) ++i;
  return {RowStatus::kOk, contract::key_to_float(k_max), k_max, i};
}

// Smallest key in [lo, hi] whose z satisfies the monotone predicate `pass`
// (hi must pass).  Filters that are monotone in z become key thresholds.
template <class Pred>
uint32_t lowest_passing_key(uint32_t lo, uint32_t hi, Pred pass) {
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (pass(contract::key_to_float(mid))) hi = mid;
    else lo = mid + 1;
  }
  return hi;
}

// The min-p survivors are exactly the tokens with key >= this.
inline uint32_t min_p_key(float min_p, float z_max, uint32_t k_max) {
  if (!(min_p > 0.0f)) return kKeyNegInf + 1;
  const float ln_minp = contract::ln_min_p(min_p);
  return lowest_passing_key(kKeyNegInf + 1, k_max, [&](float z) {
    return contract::passes_min_p(z, z_max, ln_minp);
  });
}

inline RowResult greedy_result(const RowScan& sc) {
  RowResult r;
  r.status = sc.status;
  if (sc.status == RowStatus::kOk) {
    r.token = (int32_t)sc.i_max;
    r.logprob = 0.0f;
    r.kept = 1;
  }
  return r;
}

// What every row path starts with.  Greedy rows and rows with a bad status
// are finished here (true, *done holds the result); otherwise *sc holds the
// sampling row's keys and z_max and the caller selects.
template <class Load>
bool scan_or_finish(const Load& x, int64_t vocab, const RowParams& p, const Scratch& s, RowScan* sc,
                    RowResult* done) {
  if (contract::is_greedy_temperature(p.temperature)) {
    *done = greedy_result(scan_keys<false>(x, vocab, p.temperature, s.key));
    return true;
  }
  *sc = scan_keys<true>(x, vocab, p.temperature, s.key);
  if (sc->status == RowStatus::kOk) return false;
  *done = RowResult{};
  done->status = sc->status;
  return true;
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
// and a degree-9 Taylor polynomial, branch-free so that loops over it
// vectorize.  Used for the top-p tail mass and plain-row logprobs, where a
// float argument (z - z_max rounded to fp32) would cost ~d * 6e-8 relative.
// y below -700 (ineligible tokens: -inf) is clamped; callers mask those out.
// The clamp is an integer min on the bits (y <= 0): a float compare would
// keep the loop from vectorizing under -ftrapping-math.
inline double exp_neg(double y) {
  const uint64_t kLimit = std::bit_cast<uint64_t>(-700.0);
  const uint64_t yb = std::bit_cast<uint64_t>(y);
  y = std::bit_cast<double>(yb < kLimit ? yb : kLimit);
  const double kLog2e = 1.4426950408889634, kLn2Hi = 6.93147180369123816490e-01,
               kLn2Lo = 1.90821492927058770002e-10, kRound = 6755399441055744.0;  // 1.5 * 2^52
  const double nr = y * kLog2e + kRound;  // round to the nearest integer n
  const double n = nr - kRound;
  const double r = std::fma(-n, kLn2Lo, std::fma(-n, kLn2Hi, y));
  // Explicit fma (not contract arithmetic, so free to use): half the
  // operations and half the latency of separate multiplies and adds.
  double p = 1.0 / 362880.0;
  p = std::fma(p, r, 1.0 / 40320.0);
  p = std::fma(p, r, 1.0 / 5040.0);
  p = std::fma(p, r, 1.0 / 720.0);
  p = std::fma(p, r, 1.0 / 120.0);
  p = std::fma(p, r, 1.0 / 24.0);
  p = std::fma(p, r, 1.0 / 6.0);
  p = std::fma(p, r, 0.5);
  p = std::fma(p, r, 1.0);
  p = std::fma(p, r, 1.0);
  // 2^n from its bits: n sits in the low mantissa bits of nr; n >= -1010 here.
  const uint64_t two_n = (std::bit_cast<uint64_t>(nr) - std::bit_cast<uint64_t>(kRound) + 1023) << 52;
  return p * std::bit_cast<double>(two_n);
}

// v when keep, else +0.0, without a branch.
inline double masked(double v, bool keep) {
  return std::bit_cast<double>(std::bit_cast<uint64_t>(v) & (0 - (uint64_t)keep));
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
