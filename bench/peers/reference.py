"""What the peer benchmark checks samplers against: the cases, the inputs, the
contract's kept set (docs/semantics.md) and the frequency test.

NumPy versions (one row at a time, the contract's reference arithmetic,
unit-tested in test_reference.py) and torch versions (a whole batch on the
GPU, used by run_peers.py).  torch is imported only inside the torch functions,
so this module loads on a machine without it.
"""
import math

import numpy as np

TOP_P_BAND_EPSILON = 1e-6  # kTopPBandEpsilon in include/tokensift/contract.h
GREEDY_TEMPERATURE_FLOOR = 1e-5  # kGreedyTemperatureFloor

# name -> (temperature, top_k, top_p, min_p); 0 / 1 / 0 disable k / p / min_p.
CASES = {
    "k50_p0.9": (1.0, 50, 0.9, 0.0),
    "p0.9": (1.0, 0, 0.9, 0.0),
    "k50": (1.0, 50, 1.0, 0.0),
    "minp0.05": (1.0, 0, 1.0, 0.05),
    "plain": (1.0, 0, 1.0, 0.0),
    "greedy": (0.0, 0, 1.0, 0.0),
}

# Input kinds.  gauss_head is the anchors' distribution (per row N(0, 2^2)
# plus 20 tokens boosted by +8..+15); flat is close to uniform (top-p keeps
# most of the vocabulary, the hard case for pivot searches); one_hot has one
# token 40 above a N(0, 2^2) bulk (top-p keeps a single token).
INPUTS = ("gauss_head", "flat", "one_hot")
HEAD_TOKENS, HEAD_BOOST = 20, (8.0, 15.0)


def case_params(case):
    t, k, p, min_p = CASES[case]
    return dict(temperature=t, top_k=k, top_p=p, min_p=min_p)


# ----------------------------------------------------------------- inputs --
def make_logits_np(rng, rows, vocab, kind="gauss_head"):
    """float32 [rows, vocab] logits of the given kind."""
    if kind == "flat":
        return rng.normal(0.0, 0.25, (rows, vocab)).astype(np.float32)
    x = rng.normal(0.0, 2.0, (rows, vocab)).astype(np.float32)
    if kind == "gauss_head":
        for r in range(rows):
            idx = rng.choice(vocab, size=min(HEAD_TOKENS, vocab), replace=False)
            x[r, idx] += rng.uniform(*HEAD_BOOST, size=idx.size).astype(np.float32)
    elif kind == "one_hot":
        x[np.arange(rows), rng.integers(0, vocab, rows)] += np.float32(40.0)
    else:
        raise ValueError(kind)
    return x


def make_logits_torch(gen, rows, vocab, kind, device):
    """The same distributions, generated on the GPU (fp32)."""
    import torch

    if kind == "flat":
        return torch.randn(rows, vocab, generator=gen, device=device).mul_(0.25)
    x = torch.randn(rows, vocab, generator=gen, device=device).mul_(2.0)
    if kind == "gauss_head":
        # Duplicate indices (rare) collapse to one boosted token.
        idx = torch.randint(0, vocab, (rows, HEAD_TOKENS), generator=gen, device=device)
        lo, hi = HEAD_BOOST
        boost = torch.rand(rows, HEAD_TOKENS, generator=gen, device=device) * (hi - lo) + lo
        x.scatter_(1, idx, x.gather(1, idx) + boost)
    elif kind == "one_hot":
        idx = torch.randint(0, vocab, (rows, 1), generator=gen, device=device)
        x.scatter_(1, idx, x.gather(1, idx) + 40.0)
    else:
        raise ValueError(kind)
    return x


# ------------------------------------------------ the contract, one row --
def ln_min_p(min_p):
    # contract::ln_min_p: ln in double, rounded once to fp32.
    return np.float32(math.log(min_p))


def contract_row(x, temperature, top_k, top_p, min_p):
    """The contract's kept set for one row (float32 or bfloat16-widened x).

    Returns (order, m, m_lo, m_hi): order = eligible token ids by (z desc,
    index asc); the kept set is order[:m]; a band row has m_lo < m_hi and any
    count in [m_lo, m_hi] is allowed.
    """
    x = np.asarray(x, dtype=np.float32)
    if temperature < GREEDY_TEMPERATURE_FLOOR:
        order = np.argsort(-x, kind="stable")
        return order, 1, 1, 1
    z = (x / np.float32(temperature)).astype(np.float32)
    order = np.argsort(-z, kind="stable")
    order = order[np.isfinite(z[order])]
    zs = z[order]
    zmax = zs[0]
    n = zs.size
    if min_p > 0:
        n = int(np.count_nonzero((zs - zmax).astype(np.float32) >= ln_min_p(min_p)))
    if 0 < top_k < x.size:
        n = min(n, top_k)
    if top_p >= 1.0:
        return order, n, n, n
    w = np.exp(zs[:n].astype(np.float64) - np.float64(zmax))
    c = np.cumsum(w)
    target = np.float64(np.float32(top_p)) * c[-1]

    def first_at_least(t):
        return min(int(np.searchsorted(c, t, side="left")) + 1, n)

    return (order, first_at_least(target), first_at_least(target * (1 - TOP_P_BAND_EPSILON)),
            first_at_least(target * (1 + TOP_P_BAND_EPSILON)))


def exact_distribution(x, temperature, top_k, top_p, min_p):
    """The contract's sampling distribution over the vocabulary (float64),
    for a row that is not a band row."""
    order, m, m_lo, m_hi = contract_row(x, temperature, top_k, top_p, min_p)
    if m_lo != m_hi:
        raise ValueError("band row: the distribution is not unique")
    p = np.zeros(len(x), dtype=np.float64)
    kept = order[:m]
    if temperature < GREEDY_TEMPERATURE_FLOOR:
        p[kept] = 1.0
        return p
    z = (np.asarray(x, dtype=np.float32) / np.float32(temperature)).astype(np.float64)
    w = np.exp(z[kept] - z[kept].max())
    p[kept] = w / w.sum()
    return p


# ----------------------------------------------------- frequency test --
def tvd(counts, p):
    counts = np.asarray(counts, dtype=np.float64)
    return 0.5 * float(np.abs(counts / counts.sum() - p).sum())


def tvd_null(p, n, trials=200, seed=0):
    """TVDs of exact multinomial samples of size n: what a perfect sampler scores."""
    rng = np.random.default_rng(seed)
    return np.array([tvd(rng.multinomial(n, p), p) for _ in range(trials)])


def tvd_noise_floor(p, n, trials=64, seed=0):
    """(mean, p99) of tvd_null."""
    vals = tvd_null(p, n, trials, seed)
    return float(vals.mean()), float(np.quantile(vals, 0.99))


def tvd_p_value(observed, null):
    """Fraction of exact samples at least as far from p as the observed one
    (with the usual +1 so it is never 0): small = the sampler is off."""
    return (1 + int(np.count_nonzero(null >= observed))) / (1 + len(null))


# ------------------------------------------------ the contract, a batch --
def contract_batch_torch(x, temperature, top_k, top_p, min_p):
    """The contract's kept set for every row of x (fp32 or bf16 CUDA tensor).

    Returns (idx, m, m_lo, m_hi): idx = token ids sorted by (z desc, index asc)
    per row, and int64 [rows] counts as in contract_row.  Assumes finite x.
    """
    import torch

    rows, vocab = x.shape
    z = x.float()
    if temperature < GREEDY_TEMPERATURE_FLOOR:
        # argmax with ties to the lowest index is the head of the stable order.
        _, idx = torch.sort(z, dim=-1, descending=True, stable=True)
        one = torch.ones(rows, dtype=torch.int64, device=x.device)
        return idx, one, one, one
    if temperature != 1.0:
        z = z / temperature
    vals, idx = torch.sort(z, dim=-1, descending=True, stable=True)
    zmax = vals[:, :1]
    n = torch.full((rows,), vocab, dtype=torch.int64, device=x.device)
    if min_p > 0:
        n = ((vals - zmax) >= float(ln_min_p(min_p))).sum(-1)
    if 0 < top_k < vocab:
        n = n.clamp(max=top_k)
    if top_p >= 1.0:
        return idx, n, n, n
    pos = torch.arange(vocab, device=x.device)
    w = torch.exp(vals.double() - zmax.double())
    w = torch.where(pos[None, :] < n[:, None], w, torch.zeros_like(w))
    c = torch.cumsum(w, dim=-1)
    target = float(np.float32(top_p)) * c[:, -1:]

    def first_at_least(t):
        return torch.minimum((c < t).sum(-1) + 1, n)

    return (idx, first_at_least(target), first_at_least(target * (1 - TOP_P_BAND_EPSILON)),
            first_at_least(target * (1 + TOP_P_BAND_EPSILON)))


def compare_masks_torch(peer_mask, idx, m, m_lo, m_hi):
    """Compares a peer's kept-set mask (bool [rows, vocab]) with the contract.

    A row matches when its kept set is exactly the contract's, or, on a band
    row, a prefix of the order of an allowed length.
    """
    import torch

    rows, vocab = peer_mask.shape
    peer_sorted = peer_mask.gather(1, idx)
    count = peer_sorted.sum(-1)
    pos = torch.arange(vocab, device=idx.device)
    contract_sorted = pos[None, :] < m[:, None]
    symdiff = (peer_sorted ^ contract_sorted).sum(-1)
    # A prefix has no kept token after its first dropped one.
    first_gap = torch.where(~peer_sorted, pos[None, :], vocab).min(-1).values
    is_prefix = first_gap == count
    band = m_lo != m_hi
    ok = torch.where(band, is_prefix & (count >= m_lo) & (count <= m_hi), symdiff == 0)
    return summarize(ok, band, symdiff, count, m)


def compare_counts_torch(kept, m, m_lo, m_hi):
    """For samplers that report only the kept count of a prefix (tokensift)."""
    import torch

    kept = kept.to(torch.int64)
    band = m_lo != m_hi
    ok = torch.where(band, (kept >= m_lo) & (kept <= m_hi), kept == m)
    return summarize(ok, band, (kept - m).abs(), kept, m)


def summarize(ok, band, symdiff, count, m):
    return {
        "rows": int(ok.numel()),
        "match_fraction": float(ok.float().mean()),
        "band_rows": int(band.sum()),
        "mean_symdiff": float(symdiff.float().mean()),
        "max_symdiff": int(symdiff.max()),
        "mean_kept_peer": float(count.float().mean()),
        "mean_kept_contract": float(m.float().mean()),
    }


def tokens_in_kept_torch(tokens, idx, m_hi):
    """Fraction of drawn tokens inside the contract's kept set (widest band)."""
    import torch

    tokens = tokens.to(torch.int64).view(-1, 1)
    rank = (idx == tokens).to(torch.int64).argmax(-1)
    valid = (tokens.view(-1) >= 0) & (tokens.view(-1) < idx.shape[1])
    return float(((rank < m_hi) & valid).float().mean())
