"""CPU tests of the torch side of the peer benchmark: the batched contract
reference, the mask comparison and the PyTorch peers' kept sets.  Skipped
where torch is not installed.

Run: python3 -m pytest -q bench/peers
"""
import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_roundtrip as crt  # noqa: E402
import impls  # noqa: E402
import reference as ref  # noqa: E402


def rows_with_ties(rng, rows, vocab):
    x = ref.make_logits_np(rng, rows, vocab, "gauss_head")
    x[: rows // 2] = np.round(x[: rows // 2])  # many exact ties
    return x


@pytest.mark.parametrize("case", list(ref.CASES))
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_batched_contract_matches_row_reference(case, dtype):
    rng = np.random.default_rng(11)
    x = torch.from_numpy(rows_with_ties(rng, 16, 3000))
    if dtype == "bf16":
        x = x.to(torch.bfloat16)
    params = ref.CASES[case]
    idx, m, m_lo, m_hi = ref.contract_batch_torch(x, *params)
    xf = x.float().numpy()
    for r in range(x.shape[0]):
        order, m1, lo1, hi1 = ref.contract_row(xf[r], *params)
        assert (int(m[r]), int(m_lo[r]), int(m_hi[r])) == (m1, lo1, hi1), (case, r)
        assert np.array_equal(idx[r, :m1].numpy(), order[:m1])


def contract_mask(x, params):
    idx, m, m_lo, m_hi = ref.contract_batch_torch(x, *params)
    pos = torch.arange(x.shape[1])
    keep = torch.zeros(x.shape, dtype=torch.bool).scatter_(1, idx, pos[None, :] < m[:, None])
    return keep, (idx, m, m_lo, m_hi)


def test_compare_masks():
    rng = np.random.default_rng(12)
    x = torch.from_numpy(ref.make_logits_np(rng, 8, 500, "gauss_head"))
    keep, c = contract_mask(x, ref.CASES["k50_p0.9"])
    s = ref.compare_masks_torch(keep, *c)
    assert s["match_fraction"] == 1.0 and s["mean_symdiff"] == 0
    bad = keep.clone()
    bad[0, c[0][0, 0]] = False  # drop row 0's top token: not a prefix, one off
    bad[1, c[0][1, 499]] = True  # keep row 1's last token as well
    s = ref.compare_masks_torch(bad, *c)
    assert s["match_fraction"] == 0.75 and s["max_symdiff"] == 1
    counts = ref.compare_counts_torch(c[1].clone(), c[1], c[2], c[3])
    assert counts["match_fraction"] == 1.0
    assert ref.compare_counts_torch(c[1] + 1, c[1], c[2], c[3])["match_fraction"] == 0.0


def make_cell(x, case):
    t, k, p, mp = ref.CASES[case]
    return impls.Cell("fp32", x.shape[1], x.shape[0], case, t, k, p, mp, [x])


@pytest.mark.parametrize("case", ["k50_p0.9", "p0.9", "k50", "minp0.05", "plain"])
def test_torch_sort_kept_set_is_the_contract_without_ties(case):
    rng = np.random.default_rng(13)
    x = torch.from_numpy(ref.make_logits_np(rng, 32, 4000, "gauss_head"))
    cell = make_cell(x, case)
    r = impls.TorchSort().prepare(cell)
    _, c = contract_mask(x, ref.CASES[case])
    s = ref.compare_masks_torch(r.mask(x), *c)
    # fp32 softmax/cumsum near the top-p boundary may move a row by one token.
    assert s["match_fraction"] >= 0.9 and s["max_symdiff"] <= 1, s
    assert ref.tokens_in_kept_torch(r.run(0), c[0], c[3]) == 1.0


@pytest.mark.parametrize("case", ["k50_p0.9", "k50"])
def test_torch_topk_kept_set(case):
    rng = np.random.default_rng(14)
    x = torch.from_numpy(ref.make_logits_np(rng, 32, 4000, "gauss_head"))
    r = impls.TorchTopk().prepare(make_cell(x, case))
    _, c = contract_mask(x, ref.CASES[case])
    s = ref.compare_masks_torch(r.mask(x), *c)
    assert s["match_fraction"] >= 0.9 and s["max_symdiff"] <= 1, s
    assert ref.tokens_in_kept_torch(r.run(0), c[0], c[3]) == 1.0


def test_torch_sort_top_k_keeps_ties_unlike_the_contract():
    x = torch.tensor([[0.0, 3.0, 2.0, 2.0, 2.0, 1.0]])
    t, k, p, mp = 1.0, 2, 1.0, 0.0
    cell = impls.Cell("fp32", 6, 1, "k2", t, k, p, mp, [x])
    mask = impls.TorchSort().prepare(cell).mask(x)
    idx, m, m_lo, m_hi = ref.contract_batch_torch(x, t, k, p, mp)
    s = ref.compare_masks_torch(mask, idx, m, m_lo, m_hi)
    assert s["match_fraction"] == 0.0 and s["mean_kept_peer"] == 4 and s["mean_kept_contract"] == 2


def test_numpy_roundtrip_sampler_draws_the_contract_distribution():
    rng = np.random.default_rng(15)
    x = ref.make_logits_np(rng, 1, 200, "flat")
    case = ref.CASES["p0.9"]
    exact = ref.exact_distribution(x[0], *case)
    draws = crt.numpy_sample(np.repeat(x, 20000, axis=0), *case, rng=np.random.default_rng(1))
    counts = np.bincount(draws, minlength=200)
    mean, q99 = ref.tvd_noise_floor(exact, len(draws), trials=16)
    assert ref.tvd(counts, exact) < 1.5 * q99
    assert counts[exact == 0].sum() == 0


def test_widen_bf16():
    v = torch.tensor([1.5, -2.25, 3.0e38, 1e-30]).to(torch.bfloat16)
    bits = v.view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(crt.widen_bf16(bits), v.float().numpy())
