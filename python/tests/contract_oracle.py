"""A small NumPy port of docs/semantics.md for checking tokens bit for bit.

Written from the contract (include/tokensift/contract.h), independently of the
library's sources: Philox-4x32-10, log_f32 with exact fp32 fma, the race, and
the sort-based filters with the reference (double) top-p arithmetic.  Meant
for small vocabularies; it sorts every row.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import List

import numpy as np

f32, f64, u32, u64 = np.float32, np.float64, np.uint32, np.uint64
GREEDY_FLOOR = f32(1e-5)
TOP_P_BAND_EPS = 1e-6
MASK32 = 0xFFFFFFFF


# ------------------------------------------------------------------ Philox --
def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Vectorised Philox-4x32-10 over uint32 arrays (broadcasting)."""
    c = [np.asarray(v, dtype=u64) & u64(MASK32) for v in (c0, c1, c2, c3)]
    k0 = np.asarray(k0, dtype=u64) & u64(MASK32)
    k1 = np.asarray(k1, dtype=u64) & u64(MASK32)
    m0, m1, w0, w1 = u64(0xD2511F53), u64(0xCD9E8D57), u64(0x9E3779B9), u64(0xBB67AE85)
    for _ in range(10):
        p0 = m0 * c[0]
        p1 = m1 * c[2]
        hi0, lo0 = p0 >> u64(32), p0 & u64(MASK32)
        hi1, lo1 = p1 >> u64(32), p1 & u64(MASK32)
        c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
        k0 = (k0 + w0) & u64(MASK32)
        k1 = (k1 + w1) & u64(MASK32)
    return [v.astype(u32) for v in c]


def token_bits(seed: int, offset: int, idx: np.ndarray) -> np.ndarray:
    idx = np.asarray(idx, dtype=u64)
    words = philox4x32_10(idx >> u64(2), offset & MASK32, (offset >> 32) & MASK32, 0,
                          seed & MASK32, (seed >> 32) & MASK32)
    stacked = np.stack(words, axis=0)
    return stacked[(idx & u64(3)).astype(np.intp), np.arange(idx.size)]


# ------------------------------------------------------- exact fp32 fma -----
def fma32(a, b, c):
    """Correctly rounded fp32 fma: a*b is exact in double, the sum is exact as
    double + error (TwoSum), and the one double-rounding case (the double sum
    lands on an fp32 midpoint) is settled by the error's sign."""
    a, b, c = (np.asarray(v, dtype=f32) for v in (a, b, c))
    p = a.astype(f64) * b.astype(f64)
    c64 = c.astype(f64)
    s = p + c64
    bb = s - p
    err = (p - (s - bb)) + (c64 - bb)
    r = s.astype(f32)
    r64 = r.astype(f64)
    diff = s - r64
    toward = np.where(diff > 0, f32(np.inf), f32(-np.inf))
    n = np.nextafter(r, toward)
    mid = (r64 + n.astype(f64)) / 2
    at_mid = (diff != 0) & (s == mid) & (err != 0)
    return np.where(at_mid & (np.sign(err) == np.sign(diff)), n, r).astype(f32)


def log_f32(x):
    x = np.asarray(x, dtype=f32)
    b = x.view(u32)
    e = (b >> u32(23)).astype(np.int32) - 127
    mb = (b & u32(0x007FFFFF)) | u32(0x3F800000)
    big = mb > u32(0x3FB504F3)
    mb = np.where(big, mb - u32(0x00800000), mb).astype(u32)
    e = np.where(big, e + 1, e)
    m = mb.view(f32)
    f = m - f32(1.0)
    s = f / (f32(2.0) + f)
    z = s * s
    poly = fma32(z, f32(0.0909090936), f32(0.111111112))
    poly = fma32(z, poly, f32(0.142857149))
    poly = fma32(z, poly, f32(0.200000003))
    poly = fma32(z, poly, f32(0.333333343))
    two_s = s + s
    l = fma32(two_s * z, poly, two_s)
    ef = e.astype(f32)
    return fma32(ef, np.uint32(0x3F317180).view(f32), fma32(ef, np.uint32(0x3717F7D1).view(f32), l))


def _fma64(a: float, b: float, c: float) -> float:
    return float(Fraction(a) * Fraction(b) + Fraction(c))  # correctly rounded


def log_f64(x: float) -> float:
    bits = int(np.float64(x).view(u64))
    e = (bits >> 52) - 1023
    mb = (bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000
    if mb > 0x3FF6A09E667F3BCD:
        mb -= 0x0010000000000000
        e += 1
    m = float(np.uint64(mb).view(f64))
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    poly = 1.0 / 25.0
    for d in (23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3):
        poly = _fma64(z, poly, 1.0 / d)
    two_s = s + s
    l = _fma64(two_s * z, poly, two_s)
    return _fma64(float(e), 6.93147180369123816490e-01, _fma64(float(e), 1.90821492927058770002e-10, l))


def ln_min_p(min_p: float) -> np.float32:
    if not min_p > 0:
        return f32(-np.inf)
    return f32(log_f64(float(f32(min_p))))


def race_scores(z: np.ndarray, seed: int, offset: int, idx: np.ndarray) -> np.ndarray:
    r = token_bits(seed, offset, idx)
    u = ((r >> u32(9)) * u32(2) + u32(1)).astype(f32) * f32(2.0 ** -24)
    e = -log_f32(u)
    return (z - log_f32(e)).astype(f32)


# ---------------------------------------------------------------- one row --
@dataclass
class RowResult:
    status: int            # 0 OK, 1 NaN input, 2 no valid token
    token: int             # for the reference kept count
    kept: int              # reference kept count m
    kept_lo: int           # top-p band: any kept count in [kept_lo, kept_hi] is allowed
    kept_hi: int
    band_tokens: List[int]  # race winner for each allowed kept count
    logprob: float


def sample_row(x, temperature=1.0, min_p=0.0, top_k=0, top_p=1.0, seed=0, offset=0) -> RowResult:
    x = np.asarray(x, dtype=f32)
    v = x.size
    t = f32(temperature)
    if np.isnan(x).any() or (x == np.inf).any():
        return RowResult(1, -1, 0, 0, 0, [], float("nan"))
    if (x == -np.inf).all():
        return RowResult(2, -1, 0, 0, 0, [], float("nan"))
    if t < GREEDY_FLOOR:
        tok = int(np.argmax(x))  # first maximum
        return RowResult(0, tok, 1, 1, 1, [tok], 0.0)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        z = (x / t).astype(f32)
    if (z == np.inf).any():
        return RowResult(1, -1, 0, 0, 0, [], float("nan"))
    idx = np.nonzero(z != -np.inf)[0]
    zk = (z[idx] + f32(0.0)).astype(f32)  # -0 == +0
    order = idx[np.lexsort((idx, -zk.astype(f64)))]
    zs = z[order]
    z_max = zs[0]
    n = order.size
    if min_p > 0:
        lm = ln_min_p(min_p)
        n = int(np.count_nonzero((zs - z_max).astype(f32) >= lm))
    if 0 < top_k < n:
        n = top_k
    lo = hi = m = n
    if f32(top_p) < 1:
        w = np.exp(zs[:n].astype(f64) - f64(z_max))
        c = np.cumsum(w)  # sequential, in order
        total = c[-1]
        p = float(f32(top_p))

        def first(th):
            hits = np.nonzero(c >= th)[0]
            return int(hits[0]) + 1 if hits.size else n

        m, lo, hi = first(p * total), first(p * total * (1 - TOP_P_BAND_EPS)), first(p * total * (1 + TOP_P_BAND_EPS))
    scores = race_scores(zs, seed, offset, order)

    def winner(k):
        s = scores[:k]
        best = np.nonzero(s == s.max())[0]
        return int(order[best].min())

    tokens = [winner(k) for k in range(lo, hi + 1)]
    tok = winner(m)
    w = np.exp(zs[:m].astype(f64) - f64(z_max))
    logprob = (float(z[tok]) - float(z_max)) - float(np.log(w.sum()))
    return RowResult(0, tok, m, lo, hi, tokens, logprob)


# The parameter grid the sampling tests sweep (CPU arrays and torch tensors
# alike): defaults, greedy, each filter alone, all of them, and edges.
PARAM_GRID = [
    dict(),
    dict(temperature=0.0),
    dict(temperature=0.7, top_k=5),
    dict(temperature=1.3, top_p=0.8),
    dict(min_p=0.1),
    dict(temperature=0.5, min_p=0.05, top_k=20, top_p=0.9),
    dict(top_k=1),
    dict(top_p=0.3, min_p=1.0),
]
