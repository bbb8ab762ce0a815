// The selection path (Algo::kAuto / kPivot): one row without sorting the vocab.
//
//   1. scan: status, z_max (scan_row).
//   2. no top-k, no top-p: one pass that races every min-p survivor; groups of
//      four tokens that cannot beat the best score so far skip Philox entirely.
//   3. otherwise: a histogram of d = z_max - z over the min-p survivors (counts,
//      and masses when top-p is on) picks a bin limit that must contain the kept
//      set; only tokens up to that bin are gathered.  top-k takes the first k
//      with nth_element; top-p sorts a growing head of the candidates (each
//      round nth_element + sort of twice as many) until the prefix mass reaches
//      p * W.  If the histogram's estimate proves short, everything is gathered.
#include <algorithm>
#include <cstring>
#include <functional>

#include "cpu/half.hpp"
#include "cpu/row_kernel.hpp"

namespace tokensift::detail::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

inline int bin_of(float z, float z_max) {
  const float d = z_max - z;  // bucketing only, not contract arithmetic
  return d < (float)kHistRange ? (int)(d * (float)kBinsPerUnit) : kNumBins - 1;
}

inline bool survives(float z, float z_max, float ln_minp) {
  return z > -kInf && contract::passes_min_p(z, z_max, ln_minp);
}

template <class Load>
RowResult race_all(const Load& x, int64_t vocab, const RowParams& p, const RowScan& sc,
                   float ln_minp, bool want_logprob) {
  RaceBest best;
  // Seeding with the argmax makes the bound bite from the first token on.
  best.offer(contract::race_score(sc.z_max, p.seed, p.offset, (uint32_t)sc.i_max),
             (uint32_t)sc.i_max, sc.z_max);
  int64_t kept = 0;
  double mass = 0.0;
  for (int64_t g = 0; g < vocab; g += 4) {
    float z[4];
    bool keep[4], race = false;
    const int n = (int)std::min<int64_t>(4, vocab - g);
    for (int j = 0; j < n; ++j) {
      z[j] = contract::scale(x(g + j), p.temperature);
      keep[j] = survives(z[j], sc.z_max, ln_minp);
      kept += keep[j];
      if (want_logprob && keep[j]) mass += exp_neg((double)z[j] - (double)sc.z_max);
      keep[j] = keep[j] && best.beats_bound(z[j]);
      race = race || keep[j];
    }
    if (!race) continue;
    const contract::Philox4 bits = contract::philox_block(p.seed, p.offset, (uint32_t)(g >> 2));
    for (int j = 0; j < n; ++j)
      if (keep[j])
        best.offer(contract::race_score_from_bits(z[j], bits.v[j]), (uint32_t)(g + j), z[j]);
  }
  RowResult r;
  r.token = (int32_t)best.index;
  r.kept = (int32_t)kept;
  r.logprob = want_logprob ? logprob_of(best.z, sc.z_max, mass) : 0.0f;
  return r;
}

// Sorts cand[0, n) in the order just far enough that the first m tokens, the
// smallest m with prefix mass >= target, are in order.  Returns m, or 0 when the
// whole range falls short; *prefix receives the mass of the first m (or all n).
inline int64_t top_p_head(uint64_t* cand, int64_t n, float z_max, double target, double* prefix) {
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
  if (contract::is_greedy_temperature(p.temperature)) return greedy_row(x, vocab);
  const RowScan sc = scan_row(x, vocab, p.temperature);
  if (sc.status != RowStatus::kOk) {
    RowResult r;
    r.status = sc.status;
    return r;
  }
  const float ln_minp = contract::ln_min_p(p.min_p);
  const bool use_k = p.top_k > 0 && (int64_t)p.top_k < vocab;
  const bool use_p = p.top_p < 1.0f;
  if (!use_k && !use_p) return race_all(x, vocab, p, sc, ln_minp, want_logprob);

  // Histogram of the min-p survivors.
  const bool want_mass = use_p && !use_k;
  std::memset(s.bin_count, 0, kNumBins * sizeof(uint32_t));
  if (want_mass) std::memset(s.bin_mass, 0, kNumBins * sizeof(double));
  for (int64_t i = 0; i < vocab; ++i) {
    const float z = contract::scale(x(i), p.temperature);
    if (!survives(z, sc.z_max, ln_minp)) continue;
    const int b = bin_of(z, sc.z_max);
    ++s.bin_count[b];
    if (want_mass) s.bin_mass[b] += exp_neg((double)z - (double)sc.z_max);
  }
  int last = kNumBins - 1;
  while (last > 0 && s.bin_count[last] == 0) --last;
  int lim = last;
  if (use_k) {
    int64_t cum = 0;
    for (int b = 0; b <= last; ++b) {
      cum += s.bin_count[b];
      if (cum >= p.top_k) {
        lim = b;
        break;
      }
    }
  } else {
    double total = 0.0, cum = 0.0;
    for (int b = 0; b <= last; ++b) total += s.bin_mass[b];
    // A little above p * W, so that the gathered set holds the boundary token.
    const double goal = (double)p.top_p * total * (1.0 + 1e-4);
    for (int b = 0; b <= last; ++b) {
      cum += s.bin_mass[b];
      if (cum >= goal) {
        lim = b;
        break;
      }
    }
  }

  for (;;) {
    int64_t n = 0;
    for (int64_t i = 0; i < vocab; ++i) {
      const float z = contract::scale(x(i), p.temperature);
      if (survives(z, sc.z_max, ln_minp) && bin_of(z, sc.z_max) <= lim)
        s.cand[n++] = pack(z, (uint32_t)i);
    }
    int64_t n_s = n;  // survivors of min-p and top-k, all gathered when use_k
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
      } else {
        r.logprob = 0.0f;
      }
      return r;
    }
    // W: exact over the gathered tokens, histogram masses for the bins beyond.
    double w = 0.0;
    for (int64_t j = 0; j < n_s; ++j) w += weight(packed_z(s.cand[j]), sc.z_max);
    if (!use_k)
      for (int b = lim + 1; b <= last; ++b) w += s.bin_mass[b];
    double kept_mass = 0.0;
    int64_t m = top_p_head(s.cand, n_s, sc.z_max, (double)p.top_p * w, &kept_mass);
    if (m == 0) {
      if (!use_k && lim < last) {  // the estimate fell short: gather everything
        lim = last;
        continue;
      }
      m = n_s;  // all of S: p * W rounds above W's own in-order sum
    }
    const RaceBest best = race_packed(s.cand, m, p.seed, p.offset, true);
    r.token = (int32_t)best.index;
    r.kept = (int32_t)m;
    r.logprob = want_logprob ? logprob_of(best.z, sc.z_max, kept_mass) : 0.0f;
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
