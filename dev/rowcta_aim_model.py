#!/usr/bin/env python3
"""Dev tool (not part of the library): how often the row-CTA kernel's first
tau overshoots a top-k row's k-th logit, and how many tokens it offers, for
a sample of n logits and an aim (perf-notes v79-v81).

The kernel fits mean and sigma to n sampled logits and sets tau at the
Gaussian quantile of the row's top `aim` (rowcta_first_tau).  For N(0, 1)
logits the sample mean is N(0, 1/n) and the sample variance chi2(n-1)/(n-1),
independent; the tokens at or above tau are Binomial(V, Q(tau)).  A row
overshoots when fewer than `need` tokens reach tau: need = 49 for the
benchmark's dominant rows (one token at 30 above N(0, 1)), 30 for its
anchors' rows (20 boosted tokens above the Gaussian bulk), at k = 50.
The kernel's trimmed second fit is left out (it matters only when the
sample holds an outlier).

  python3 dev/rowcta_aim_model.py [rows=10000000]     (needs numpy and scipy)
"""
import sys

import numpy as np
from scipy.stats import norm

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
rng = np.random.default_rng(2)
print("V n aim P(overshoot, dominant rows) P(overshoot, anchors' rows) mean offers (anchors)")
for V in (129280, 151936, 262208):
    for n, aims in ((1024, (128, 256)), (2048, (128, 144, 160))):
        mu = rng.normal(0.0, 1.0 / np.sqrt(n), rows)
        sd = np.sqrt(rng.chisquare(n - 1, rows) / (n - 1))
        for aim in aims:
            tau = mu + sd * norm.isf(aim / V)
            count = rng.binomial(V, norm.sf(tau))
            print(f"{V} {n} {aim} {(count < 49).mean():.1e} {(count < 30).mean():.1e} {count.mean() + 20:.0f}")
