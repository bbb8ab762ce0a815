// The test oracle: docs/semantics.md for one row, written as plainly as
// possible and independently of every backend.  It widens nothing (rows come
// widened from generators.hpp), scales with contract::scale, sorts the whole
// row with std::sort on (z desc, index asc), applies min-p / top-k / top-p in
// double exactly as the "Reference arithmetic" of the contract, and runs the
// race over the kept prefix with contract::race_score.  Slow on purpose: one
// full sort per row, no pruning, no selection tricks, so that a bug shared
// with a backend's clever path is unlikely.
//
// check_row() then judges one row an implementation returned (CPU or GPU) and
// returns "" when it is consistent with the contract, else a description.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "generators.hpp"
#include "tokensift/contract.h"
#include "tokensift/tokensift.h"

namespace tokensift::testing {

struct OracleResult {
  int32_t status = TOKENSIFT_ROW_OK;  // tokensift_row_status
  int32_t token = -1;
  int64_t kept = 0;                   // m: the reference kept count
  int64_t m_lo = 0, m_hi = 0;         // the top-p band; m_lo == m_hi unless band
  bool band = false;
  bool greedy = false;
  double logprob = std::numeric_limits<double>::quiet_NaN();

  // Kept for judging band rows: the order of the eligible tokens and z.
  std::vector<uint32_t> order;
  std::vector<float> z;
  uint64_t seed = 0, offset = 0;
};

// Winner of the race among the first `count` tokens of the order (ties to the
// lowest index).
inline int32_t oracle_race_winner(const OracleResult& r, int64_t count) {
  int32_t best = -1;
  float best_score = 0.0f;
  for (int64_t j = 0; j < count; ++j) {
    const uint32_t i = r.order[(size_t)j];
    const float s = contract::race_score(r.z[i], r.seed, r.offset, i);
    if (best < 0 || s > best_score || (s == best_score && (int32_t)i < best)) {
      best = (int32_t)i;
      best_score = s;
    }
  }
  return best;
}

// log-probability of `token` under softmax(z) restricted to the first
// `count` tokens of the order.
inline double oracle_logprob(const OracleResult& r, int32_t token, int64_t count) {
  const double z_max = (double)r.z[r.order[0]];
  double sum = 0.0;
  for (int64_t j = 0; j < count; ++j) sum += std::exp((double)r.z[r.order[(size_t)j]] - z_max);
  return ((double)r.z[(size_t)token] - z_max) - std::log(sum);
}

inline OracleResult oracle_sample(const float* x, int64_t vocab, const RowParams& p) {
  OracleResult r;
  r.seed = p.seed;
  r.offset = p.offset;
  const bool greedy = contract::is_greedy_temperature(p.temperature);

  // ---- status: NaN / +inf, then overflow of x / T, then all -inf.
  bool any_finite = false;
  for (int64_t i = 0; i < vocab; ++i) {
    const float v = x[i];
    if (std::isnan(v) || v == std::numeric_limits<float>::infinity()) {
      r.status = TOKENSIFT_ROW_NAN_INPUT;
      return r;
    }
    if (std::isfinite(v)) any_finite = true;
  }
  if (!greedy) {
    for (int64_t i = 0; i < vocab; ++i)
      if (std::isfinite(x[i]) && contract::scale(x[i], p.temperature) == std::numeric_limits<float>::infinity()) {
        r.status = TOKENSIFT_ROW_NAN_INPUT;
        return r;
      }
  }
  if (!any_finite) {
    r.status = TOKENSIFT_ROW_NO_VALID_TOKEN;
    return r;
  }

  // ---- greedy: argmax x, lowest index on ties.
  if (greedy) {
    int64_t best = 0;
    for (int64_t i = 1; i < vocab; ++i)
      if (x[i] > x[best]) best = i;
    r.greedy = true;
    r.token = (int32_t)best;
    r.kept = r.m_lo = r.m_hi = 1;
    r.logprob = 0.0;
    return r;
  }

  // ---- z and the full order of the eligible tokens.
  r.z.resize((size_t)vocab);
  for (int64_t i = 0; i < vocab; ++i) {
    r.z[(size_t)i] = contract::scale(x[i], p.temperature);
    if (r.z[(size_t)i] != -std::numeric_limits<float>::infinity()) r.order.push_back((uint32_t)i);
  }
  if (r.order.empty()) {
    // Every finite logit underflowed to -inf under 1/T.  The contract assumes
    // this cannot happen ("z_max exists"); we call it NO_VALID_TOKEN and the
    // generators never produce it (see the report on the contract).
    r.status = TOKENSIFT_ROW_NO_VALID_TOKEN;
    return r;
  }
  std::sort(r.order.begin(), r.order.end(), [&](uint32_t a, uint32_t b) {
    return contract::precedes(r.z[a], a, r.z[b], b);
  });
  const float z_max = r.z[r.order[0]];
  int64_t n = (int64_t)r.order.size();

  // ---- min-p: a prefix of the order.
  if (p.min_p > 0.0f) {
    const float ln_min_p = contract::ln_min_p(p.min_p);
    int64_t keep = 0;
    while (keep < n && contract::passes_min_p(r.z[r.order[(size_t)keep]], z_max, ln_min_p)) ++keep;
    for (int64_t j = keep; j < n; ++j)  // the prefix property, checked rather than assumed
      if (contract::passes_min_p(r.z[r.order[(size_t)j]], z_max, ln_min_p)) std::abort();
    n = keep;
  }

  // ---- top-k.
  if (p.top_k > 0 && (int64_t)p.top_k < vocab && n > (int64_t)p.top_k) n = p.top_k;

  // ---- top-p, reference arithmetic in double.
  int64_t m = n, m_lo = n, m_hi = n;
  if (p.top_p < 1.0f) {
    std::vector<double> c((size_t)n);
    double acc = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      acc += std::exp((double)r.z[r.order[(size_t)j]] - (double)z_max);
      c[(size_t)j] = acc;
    }
    const double w_total = acc;
    const double target = (double)p.top_p * w_total;
    const double lo = target * (1.0 - contract::kTopPBandEpsilon);
    const double hi = target * (1.0 + contract::kTopPBandEpsilon);
    auto first_reaching = [&](double t) {
      for (int64_t j = 0; j < n; ++j)
        if (c[(size_t)j] >= t) return j + 1;
      return n;
    };
    m = first_reaching(target);
    m_lo = first_reaching(lo);
    m_hi = first_reaching(hi);
  }
  r.kept = m;
  r.m_lo = m_lo;
  r.m_hi = m_hi;
  r.band = m_lo != m_hi;

  // ---- the race over the kept prefix.
  r.token = oracle_race_winner(r, m);
  r.logprob = oracle_logprob(r, r.token, m);
  return r;
}

// Judges one row returned by an implementation.  kept_count < 0 and
// logprob == nullptr mean "not requested".  Returns "" when consistent.
inline std::string check_row(const OracleResult& ref, int32_t status, int32_t token,
                             int32_t kept_count, const float* logprob) {
  char buf[320];
  if (status != ref.status) {
    std::snprintf(buf, sizeof buf, "status %d, expected %d", status, ref.status);
    return buf;
  }
  if (ref.status != TOKENSIFT_ROW_OK) {
    if (token != -1) return "bad row must return token -1, got " + std::to_string(token);
    if (kept_count >= 0 && kept_count != 0) return "bad row must report kept_count 0, got " + std::to_string(kept_count);
    if (logprob && !std::isnan(*logprob)) return "bad row must report logprob NaN";
    return "";
  }
  if (kept_count >= 0) {
    if (!ref.band && kept_count != ref.kept) {
      std::snprintf(buf, sizeof buf, "kept_count %d, expected %lld", kept_count, (long long)ref.kept);
      return buf;
    }
    if (ref.band && (kept_count < ref.m_lo || kept_count > ref.m_hi)) {
      std::snprintf(buf, sizeof buf, "band row: kept_count %d outside [%lld, %lld]", kept_count,
                    (long long)ref.m_lo, (long long)ref.m_hi);
      return buf;
    }
  }
  // The token of a band row is the race winner of the kept set it reports.
  const int64_t count = ref.band && kept_count >= 0 ? kept_count : ref.kept;
  const int32_t expected = ref.band && kept_count >= 0 && !ref.greedy ? oracle_race_winner(ref, count) : ref.token;
  if (ref.band && kept_count < 0) {
    // Without kept_count the token must win the race for some count in the band.
    bool any = false;
    for (int64_t c = ref.m_lo; c <= ref.m_hi && !any; ++c) any = oracle_race_winner(ref, c) == token;
    if (!any) return "band row: token " + std::to_string(token) + " wins no kept set of the band";
    return "";
  }
  if (token != expected) {
    std::snprintf(buf, sizeof buf, "token %d, expected %d%s", token, expected, ref.band ? " (band row)" : "");
    return buf;
  }
  if (logprob) {
    const double want = ref.band ? oracle_logprob(ref, token, count) : ref.logprob;
    if (!(std::fabs((double)*logprob - want) <= 1e-5)) {
      std::snprintf(buf, sizeof buf, "logprob %.9g, expected %.9g (|diff| > 1e-5)", (double)*logprob, want);
      return buf;
    }
  }
  return "";
}

}  // namespace tokensift::testing
