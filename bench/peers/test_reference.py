"""CPU tests of the peer benchmark's reference code (NumPy only).

Run: python3 -m pytest -q bench/peers   (or python3 bench/peers/test_reference.py)
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as ref  # noqa: E402


def literal_kept_count(x, temperature, top_k, top_p, min_p, p_scale=1.0):
    """docs/semantics.md read literally, with Python floats and a key sort."""
    if temperature < 1e-5:
        return 1
    z = [float(np.float32(np.float32(v) / np.float32(temperature))) for v in x]
    order = sorted((i for i in range(len(z)) if z[i] != -math.inf), key=lambda i: (-z[i], i))
    zmax = z[order[0]]
    s = order
    if min_p > 0:
        lim = float(np.float32(math.log(min_p)))
        s = [i for i in s if float(np.float32(np.float32(z[i]) - np.float32(zmax))) >= lim]
    if 0 < top_k < len(x):
        s = s[:top_k]
    if top_p >= 1:
        return len(s)
    w = [math.exp(z[i] - zmax) for i in s]
    total = 0.0
    for v in w:
        total += v
    target = float(np.float32(top_p)) * total * p_scale
    c = 0.0
    for j, v in enumerate(w):
        c += v
        if c >= target:
            return j + 1
    return len(s)


def test_contract_row_matches_literal_reading():
    rng = np.random.default_rng(1)
    for trial in range(300):
        vocab = int(rng.integers(1, 60))
        # Small integers make ties common; the tie rule must hold.
        if trial % 2:
            x = rng.integers(-3, 4, vocab).astype(np.float32)
        else:
            x = ref.make_logits_np(rng, 1, vocab, "gauss_head")[0]
        for case in ref.CASES:
            t, k, p, mp = ref.CASES[case]
            order, m, m_lo, m_hi = ref.contract_row(x, t, k, p, mp)
            assert m_lo <= m <= m_hi
            want = literal_kept_count(x, t, k, p, mp)
            if m_lo == m_hi:
                assert m == want, (case, x, m, want)
            else:
                lo = literal_kept_count(x, t, k, p, mp, 1 - ref.TOP_P_BAND_EPSILON)
                hi = literal_kept_count(x, t, k, p, mp, 1 + ref.TOP_P_BAND_EPSILON)
                assert (m_lo, m_hi) == (lo, hi)
            # The order: z descending, ties by lower index first.
            zs = x[order]
            assert np.all(np.diff(zs) <= 0)
            for a, b in zip(order[:-1], order[1:]):
                if x[a] == x[b]:
                    assert a < b


def test_top_k_is_exact_at_ties():
    x = np.array([1, 5, 5, 5, 0], dtype=np.float32)
    order, m, _, _ = ref.contract_row(x, 1.0, 2, 1.0, 0.0)
    assert m == 2 and list(order[:2]) == [1, 2]


def test_min_p_one_keeps_the_maximum_only():
    x = np.array([0.5, 2.0, 2.0, 1.9], dtype=np.float32)
    _, m, _, _ = ref.contract_row(x, 1.0, 0, 1.0, 1.0)
    assert m == 2


def test_band_row_is_flagged():
    # Two equal tokens, p = 0.5: the prefix mass hits p exactly at j = 1.
    x = np.array([0.0, 0.0], dtype=np.float32)
    _, m, m_lo, m_hi = ref.contract_row(x, 1.0, 0, 0.5, 0.0)
    assert (m, m_lo, m_hi) == (1, 1, 2)


def test_exact_distribution():
    rng = np.random.default_rng(2)
    x = ref.make_logits_np(rng, 1, 1000, "gauss_head")[0]
    for case in ("k50_p0.9", "p0.9", "k50", "minp0.05", "plain", "greedy"):
        t, k, p, mp = ref.CASES[case]
        dist = ref.exact_distribution(x, t, k, p, mp)
        order, m, _, _ = ref.contract_row(x, t, k, p, mp)
        assert abs(dist.sum() - 1) < 1e-12
        assert np.count_nonzero(dist) == m
        assert set(np.flatnonzero(dist)) == set(order[:m].tolist())
    g = ref.exact_distribution(x, 0.0, 0, 1.0, 0.0)
    assert g[np.argmax(x)] == 1.0


def test_tvd_and_noise_floor():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(200))
    n = 10**6
    mean, q99 = ref.tvd_noise_floor(p, n, trials=32)
    # For many cells the expected TVD is about sum sqrt(p(1-p)/(2 pi n)).
    approx = float(np.sum(np.sqrt(p * (1 - p) / (2 * math.pi * n))))
    assert 0.8 * approx < mean < 1.2 * approx
    assert q99 >= mean
    # An exact sampler scores at the floor; a biased one far above it.
    assert ref.tvd(rng.multinomial(n, p), p) < 2 * q99
    biased = p.copy()
    biased[0] += 0.05
    biased /= biased.sum()
    assert ref.tvd(rng.multinomial(n, biased), p) > 5 * q99
    assert ref.tvd(p * n, p) < 1e-12
    null = ref.tvd_null(p, n, trials=100)
    assert ref.tvd_p_value(ref.tvd(rng.multinomial(n, biased), p), null) < 0.02
    assert ref.tvd_p_value(0.0, null) == 1.0


def test_inputs():
    rng = np.random.default_rng(4)
    x = ref.make_logits_np(rng, 3, 5000, "gauss_head")
    assert x.dtype == np.float32 and x.shape == (3, 5000)
    # 20 boosted tokens stand well above a N(0, 4) bulk.
    assert all(np.count_nonzero(row > 9.0) >= 15 for row in x)
    f = ref.make_logits_np(rng, 2, 5000, "flat")
    assert f.std() < 0.3
    o = ref.make_logits_np(rng, 2, 5000, "one_hot")
    _, m, _, _ = ref.contract_row(o[0], 1.0, 0, 0.9, 0.0)
    assert m == 1
    _, m, _, _ = ref.contract_row(f[0], 1.0, 0, 0.9, 0.0)
    assert m > 3000


if __name__ == "__main__":
    for name, fn in list(globals().items()):
        if name.startswith("test_"):
            fn()
            print("ok", name)
