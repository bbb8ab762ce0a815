// The selection path (Algo::kAuto / kPivot): one row without sorting the vocab.
//
//   1. scan_keys: status, z_max and every token's order key, in one pass.
//      min-p becomes a key threshold (its test is monotone in z).
//   2. no top-k, no top-p: race every survivor.  Groups of four tokens whose
//      keys all lie below the race bound (z + kMaxRaceBoost < best score so far,
//      also a key threshold) skip Philox; the rest are scored in batches.
//   3. top-k: counting passes, a binary search over a ladder of thresholds
//      z_max - delta, find the tightest one that at least k tokens clear;
//      top-p: one vectorized pass for W, then sparse gathers at growing
//      distances below z_max until the candidates carry more than p * W.
//      Only those candidates are kept.  top-k takes the first k with
//      nth_element; top-p sorts a growing head of the candidates
//      (nth_element + sort of twice as many each round) until the prefix mass
//      reaches p * W.  If the estimate proves short, everything is gathered.
#include <algorithm>
#include <cstring>
#include <functional>

#include "cpu/half.hpp"
#include "cpu/row_kernel.hpp"

namespace tokensift::detail::cpu {
namespace {

// Distances below z_max of the threshold ladder (selection heuristics only).
constexpr int kLadder = 16;
constexpr float kLadderDelta[kLadder] = {0.25f, 0.5f, 1, 1.5f, 2, 3, 4, 5,
                                         6,     8,    10, 12, 16, 20, 28, 40};
constexpr int kLanes = 4;  // independent partial sums, so that sums vectorize

int64_t count_at_least(const uint32_t* key, int64_t n, uint32_t thr) {
  uint32_t c = 0;  // 32-bit, like the compare results, so the loop vectorizes cleanly
  for (int64_t i = 0; i < n; ++i) c += key[i] >= thr;
  return c;
}

// w[i] = exp(z_i - z_max) for tokens with key >= kmin, else 0 (each ~1e-11 relative).
void weights(const uint32_t* key, int64_t n, uint32_t kmin, float z_max, double* w) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = exp_neg((double)contract::key_to_float(key[i]) - (double)z_max);
    w[i] = masked(v, key[i] >= kmin);
  }
}

constexpr int64_t kBlock = 256;

double mass_at_least(const uint32_t* key, int64_t n, uint32_t kmin, float z_max) {
  double w[kBlock];
  double acc[kLanes] = {};
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t len = std::min(n - b, kBlock);
    if (count_at_least(key + b, len, kmin) == 0) continue;  // min-p rows: mostly empty
    weights(key + b, len, kmin, z_max, w);
    for (int64_t i = len; i < kBlock; ++i) w[i] = 0.0;
    for (int64_t i = 0; i < kBlock; i += kLanes)
      for (int l = 0; l < kLanes; ++l) acc[l] += w[i + l];
  }
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

struct Ladder {
  uint32_t thr[kLadder];
  Ladder(float z_max, uint32_t kmin) {
    for (int j = 0; j < kLadder; ++j)
      thr[j] = std::max(kmin, contract::order_key(z_max - kLadderDelta[j]));
  }
};

// Tightest ladder threshold that at least k tokens clear, or kmin if none:
// counts are monotone along the ladder, so a binary search needs 4 passes.
uint32_t top_k_threshold(const uint32_t* key, int64_t n, const Ladder& lad, int64_t k,
                         uint32_t kmin) {
  int lo = 0, hi = kLadder;  // answer in [lo, hi]; hi means "none"
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (count_at_least(key, n, lad.thr[mid]) >= k) hi = mid;
    else lo = mid + 1;
  }
  return hi < kLadder ? lad.thr[hi] : kmin;
}

// Fast-exp mass of packed candidates (the estimate that accepts a gather).
double packed_mass(const uint64_t* cand, int64_t n, float z_max) {
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      acc[l] += exp_neg((double)packed_z(cand[i + l]) - (double)z_max);
  for (; i < n; ++i) acc[0] += exp_neg((double)packed_z(cand[i]) - (double)z_max);
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

// Distances below z_max tried in turn by top-p: each gather is a cheap sparse
// pass, and the first whose candidates carry enough mass is kept.
constexpr float kTopPDelta[] = {2, 6, 12, 20, 40};

// Packs the tokens with key >= thr into cand.  Candidates are usually sparse,
// so blocks of 16 keys are first tested with a vectorized max.
int64_t gather(const uint32_t* key, int64_t n, uint32_t thr, uint64_t* cand) {
  int64_t m = 0, i = 0;
  for (; i + 16 <= n; i += 16) {
    uint32_t mx = 0;
    for (int l = 0; l < 16; ++l) mx = std::max(mx, key[i + l]);
    if (mx < thr) continue;
    for (int l = 0; l < 16; ++l) {
      cand[m] = pack_key(key[i + l], (uint32_t)(i + l));
      m += key[i + l] >= thr;
    }
  }
  for (; i < n; ++i) {
    cand[m] = pack_key(key[i], (uint32_t)i);
    m += key[i] >= thr;
  }
  return m;
}

// Every survivor races.  The bound only skips work: a token below it scores
// strictly less than the best so far, so the winner is the plain argmax.
RowResult race_all(const uint32_t* key, int64_t vocab, const RowParams& p, const RowScan& sc,
                   uint32_t kmin, bool want_logprob) {
  RaceBest best;
  best.offer(contract::race_score(sc.z_max, p.seed, p.offset, (uint32_t)sc.i_max),
             (uint32_t)sc.i_max, sc.z_max);
  auto bound_key = [&] {
    return lowest_passing_key(kmin, sc.k_max, [&](float z) { return best.beats_bound(z); });
  };
  uint32_t thr = bound_key();
  constexpr int64_t kGroupsPerBatch = 256;
  uint32_t groups[kGroupsPerBatch];
  float score[kGroupsPerBatch * 4], zs[kGroupsPerBatch * 4];
  uint32_t bits[kGroupsPerBatch * 4];
  const int64_t n_groups = (vocab + 3) / 4;
  for (int64_t g0 = 0; g0 < n_groups; g0 += kGroupsPerBatch) {
    const int64_t g1 = std::min(n_groups, g0 + kGroupsPerBatch);
    int n = 0;
    for (int64_t g = g0; g < g1; ++g) {
      const uint32_t* k = key + 4 * g;  // the key array is zero-padded to whole groups
      const uint32_t m = std::max(std::max(k[0], k[1]), std::max(k[2], k[3]));
      groups[n] = (uint32_t)g;
      n += m >= thr;
    }
    if (n == 0) continue;
    // Flat arrays, so that Philox and the race scores vectorize across groups.
    for (int j = 0; j < n; ++j) {
      const contract::Philox4 b = contract::philox_block(p.seed, p.offset, groups[j]);
      for (int l = 0; l < 4; ++l) bits[4 * j + l] = b.v[l];
    }
    for (int j = 0; j < n; ++j)
      for (int l = 0; l < 4; ++l) zs[4 * j + l] = contract::key_to_float(key[4 * groups[j] + l]);
    for (int t = 0; t < 4 * n; ++t) score[t] = contract::race_score_from_bits(zs[t], bits[t]);
    const float before = best.score;
    for (int j = 0; j < n; ++j)
      for (int l = 0; l < 4; ++l) {
        const uint32_t i = 4 * groups[j] + l;
        if (key[i] >= kmin) best.offer(score[4 * j + l], i, contract::key_to_float(key[i]));
      }
    if (best.score != before) thr = bound_key();
  }
  RowResult r;
  r.token = (int32_t)best.index;
  r.kept = (int32_t)count_at_least(key, vocab, kmin);
  r.logprob = want_logprob ? logprob_of(best.z, sc.z_max, mass_at_least(key, vocab, kmin, sc.z_max))
                           : 0.0f;
  return r;
}

// Sorts cand[0, n) in the order just far enough that the first m tokens, the
// smallest m with prefix mass >= target, are in order.  Returns m, or 0 when the
// whole range falls short; *prefix receives the mass of the first m (or all n).
int64_t top_p_head(uint64_t* cand, int64_t n, float z_max, double target, double* prefix) {
  const auto desc = std::greater<uint64_t>();
  double c = 0.0;
  int64_t done = 0, head = 64;
  while (done < n) {
    const int64_t end = std::min(n, done + head);
    if (end < n) std::nth_element(cand + done, cand + end, cand + n, desc);
    std::sort(cand + done, cand + end, desc);
    for (int64_t j = done; j < end; ++j) {
      c += weight(packed_z(cand[j]), z_max);
      if (c >= target) {
        *prefix = c;
        return j + 1;
      }
    }
    done = end;
    head *= 2;
  }
  *prefix = c;
  return 0;
}

}  // namespace

template <class Load>
RowResult select_row(const Load& x, int64_t vocab, const RowParams& p, const Scratch& s,
                     bool want_logprob) {
  RowScan sc;
  RowResult done;
  if (scan_or_finish(x, vocab, p, s, &sc, &done)) return done;
  const uint32_t kmin = min_p_key(p.min_p, sc.z_max, sc.k_max);
  const bool use_k = p.top_k > 0 && (int64_t)p.top_k < vocab;
  const bool use_p = p.top_p < 1.0f;
  if (!use_k && !use_p) return race_all(s.key, vocab, p, sc, kmin, want_logprob);

  uint32_t thr = kmin;
  double tail_mass = 0.0;  // top-p only: mass of the survivors below thr
  int64_t n = -1;          // candidates already gathered into s.cand, if >= 0
  if (use_k) {
    thr = top_k_threshold(s.key, vocab, Ladder(sc.z_max, kmin), p.top_k, kmin);
  } else {
    const double total = mass_at_least(s.key, vocab, kmin, sc.z_max);
    // A little above p * W, so that the gathered set holds the boundary token.
    const double goal = (double)p.top_p * total * (1.0 + 1e-4);
    for (float delta : kTopPDelta) {
      const uint32_t t = std::max(kmin, contract::order_key(sc.z_max - delta));
      const int64_t got = gather(s.key, vocab, t, s.cand);
      const double mass = packed_mass(s.cand, got, sc.z_max);
      if (mass >= goal) {
        thr = t;
        n = got;
        tail_mass = total - mass;
        break;
      }
      if (t == kmin) break;  // everything is gathered already; the loop below finishes
    }
  }

  for (;;) {
    if (n < 0) n = gather(s.key, vocab, thr, s.cand);
    int64_t n_s = n;  // survivors of min-p and top-k; with top-k all are gathered
    if (use_k && n > p.top_k) {
      std::nth_element(s.cand, s.cand + p.top_k, s.cand + n, std::greater<uint64_t>());
      n_s = p.top_k;
    }
    RowResult r;
    if (!use_p) {
      const RaceBest best = race_packed(s.cand, n_s, p.seed, p.offset, false);
      r.token = (int32_t)best.index;
      r.kept = (int32_t)n_s;
      if (want_logprob) {
        double mass = 0.0;
        for (int64_t j = 0; j < n_s; ++j) mass += weight(packed_z(s.cand[j]), sc.z_max);
        r.logprob = logprob_of(best.z, sc.z_max, mass);
      }
      return r;
    }
    // W: exact over the gathered tokens, plus the fast-exp mass of the rest.
    double w = tail_mass;
    for (int64_t j = 0; j < n_s; ++j) w += weight(packed_z(s.cand[j]), sc.z_max);
    double kept_mass = 0.0;
    int64_t m = top_p_head(s.cand, n_s, sc.z_max, (double)p.top_p * w, &kept_mass);
    if (m == 0) {
      if (thr != kmin && !use_k) {  // the estimate fell short: gather everything
        thr = kmin;
        tail_mass = 0.0;
        n = -1;
        continue;
      }
      m = n_s;  // all of S: p * W rounded above W's own in-order sum
    }
    const RaceBest best = race_packed(s.cand, m, p.seed, p.offset, true);
    r.token = (int32_t)best.index;
    r.kept = (int32_t)m;
    if (want_logprob) r.logprob = logprob_of(best.z, sc.z_max, kept_mass);
    return r;
  }
}

template RowResult select_row<F32Row>(const F32Row&, int64_t, const RowParams&, const Scratch&,
                                      bool);
template RowResult select_row<BF16Row>(const BF16Row&, int64_t, const RowParams&,
                                       const Scratch&, bool);
template RowResult select_row<F16Row>(const F16Row&, int64_t, const RowParams&, const Scratch&,
                                      bool);

}  // namespace tokensift::detail::cpu
