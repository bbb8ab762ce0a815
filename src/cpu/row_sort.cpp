// The full-sort path (Algo::kSort): every eligible token is sorted in the
// contract's order, then min-p, top-k and top-p cut prefixes.  It is the
// straightforward reading of docs/semantics.md and the in-library sorting
// baseline the selection path is measured against.
#include <algorithm>
#include <functional>

#include "cpu/half.hpp"
#include "cpu/row_kernel.hpp"

namespace tokensift::detail::cpu {

template <class Load>
RowResult sort_row(const Load& x, int64_t vocab, const RowParams& p, const Scratch& s,
                   bool want_logprob) {
  RowScan sc;
  RowResult done;
  if (scan_or_finish(x, vocab, p, s, &sc, &done)) return done;
  int64_t n = 0;
  for (int64_t i = 0; i < vocab; ++i)
    if (s.key[i] > kKeyNegInf) s.cand[n++] = pack_key(s.key[i], (uint32_t)i);
  std::sort(s.cand, s.cand + n, std::greater<uint64_t>());

  const float ln_minp = contract::ln_min_p(p.min_p);
  int64_t kept = 0;
  while (kept < n && contract::passes_min_p(packed_z(s.cand[kept]), sc.z_max, ln_minp)) ++kept;
  if (p.top_k > 0 && p.top_k < kept) kept = p.top_k;

  double kept_mass = 0.0;
  if (p.top_p < 1.0f) {
    double w = 0.0;
    for (int64_t j = 0; j < kept; ++j) w += weight(packed_z(s.cand[j]), sc.z_max);
    const double target = (double)p.top_p * w;
    int64_t m = 0;
    while (m < kept) {
      kept_mass += weight(packed_z(s.cand[m]), sc.z_max);
      ++m;
      if (kept_mass >= target) break;
    }
    kept = m;
  } else if (want_logprob) {
    for (int64_t j = 0; j < kept; ++j) kept_mass += weight(packed_z(s.cand[j]), sc.z_max);
  }
  const RaceBest best = race_packed(s.cand, kept, p.seed, p.offset, true);
  RowResult r;
  r.token = (int32_t)best.index;
  r.kept = (int32_t)kept;
  r.logprob = want_logprob ? logprob_of(best.z, sc.z_max, kept_mass) : 0.0f;
  return r;
}

template RowResult sort_row<F32Row>(const F32Row&, int64_t, const RowParams&, const Scratch&,
                                    bool);
template RowResult sort_row<BF16Row>(const BF16Row&, int64_t, const RowParams&, const Scratch&,
                                     bool);
template RowResult sort_row<F16Row>(const F16Row&, int64_t, const RowParams&, const Scratch&,
                                    bool);

}  // namespace tokensift::detail::cpu
