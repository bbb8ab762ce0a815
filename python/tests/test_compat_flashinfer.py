"""tokensift.compat.flashinfer against the behaviour FlashInfer's documentation
promises (docs.flashinfer.ai, flashinfer.sampling), on torch CPU and CUDA."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
fi = pytest.importorskip("tokensift.compat.flashinfer")

N = 20000  # rows per frequency test: one launch, independent rows


def frequencies(tokens, vocab):
    return np.bincount(tokens.cpu().numpy().astype(np.int64), minlength=vocab)[:vocab] / tokens.numel()


def assert_distribution(tokens, expected):
    expected = np.asarray(expected, np.float64)
    freq = frequencies(tokens, expected.size)
    sigma = np.sqrt(expected * (1 - expected) / tokens.numel())
    assert np.all(np.abs(freq - expected) <= 5 * sigma + 1e-3), (freq, expected)
    assert np.all(freq[expected == 0] == 0)


def batch(row, device, n=N):
    return torch.tensor(row, dtype=torch.float32, device=device).repeat(n, 1)


def test_softmax(device):
    x = torch.randn(4, 33, device=device)
    torch.testing.assert_close(fi.softmax(x), torch.softmax(x, -1))
    torch.testing.assert_close(fi.softmax(x, temperature=0.5), torch.softmax(x / 0.5, -1))
    t = torch.tensor([0.5, 1.0, 2.0, 4.0], device=device)
    torch.testing.assert_close(fi.softmax(x, t), torch.softmax(x / t[:, None], -1))
    assert fi.softmax(x.to(torch.bfloat16)).dtype == torch.float32


def test_top_k_mask_logits_keeps_ties(device):
    x = torch.tensor([[1.0, 2.0, 2.0, 2.0, 0.0], [5.0, 4.0, 3.0, 2.0, 1.0]], device=device)
    m = fi.top_k_mask_logits(x, 2)
    inf = float("-inf")
    expected = torch.tensor([[inf, 2.0, 2.0, 2.0, inf], [5.0, 4.0, inf, inf, inf]], device=device)
    assert torch.equal(m, expected)
    per_row = fi.top_k_mask_logits(x, torch.tensor([1, 4], device=device, dtype=torch.int32))
    assert torch.isinf(per_row[0]).tolist() == [True, False, False, False, True]
    assert torch.isinf(per_row[1]).tolist() == [False, False, False, False, True]
    assert fi.top_k_mask_logits(x.half(), 2).dtype == torch.float16


def test_renorm_probs(device):
    p = torch.tensor([[0.1, 0.4, 0.3, 0.2], [0.25, 0.25, 0.25, 0.25]], device=device)
    k = fi.top_k_renorm_probs(p, 2)
    torch.testing.assert_close(k[0], torch.tensor([0.0, 4 / 7, 3 / 7, 0.0], device=device))
    torch.testing.assert_close(k[1], torch.full((4,), 0.25, device=device))  # all tied: all kept
    q = fi.top_p_renorm_probs(p[:1], 0.6)  # 0.4 + 0.3 reaches 0.6
    torch.testing.assert_close(q[0], torch.tensor([0.0, 4 / 7, 3 / 7, 0.0], device=device))
    torch.testing.assert_close(fi.top_p_renorm_probs(p[:1], 0.35)[0], torch.tensor([0.0, 1.0, 0.0, 0.0], device=device))


def test_sampling_from_probs_distribution(device):
    probs = [0.5, 0.25, 0.15, 0.1, 0.0]
    tokens = fi.sampling_from_probs(batch(probs, device), seed=1, offset=0)
    assert tokens.dtype == torch.int32 and tokens.device.type == device
    assert_distribution(tokens, probs)


def test_sampling_from_logits_distribution(device):
    logits = [0.0, math.log(2.0), math.log(5.0), float("-inf")]
    tokens = fi.sampling_from_logits(batch(logits, device), seed=7, offset=3)
    assert_distribution(tokens, [1 / 8, 2 / 8, 5 / 8, 0])


def test_top_k_sampling_keeps_all_ties_at_kth(device):
    probs = [0.3, 0.2, 0.2, 0.2, 0.1]
    tokens = fi.top_k_sampling_from_probs(batch(probs, device), 2, seed=3, offset=0)
    assert_distribution(tokens, [0.3 / 0.9, 0.2 / 0.9, 0.2 / 0.9, 0.2 / 0.9, 0.0])


def test_top_p_sampling(device):
    tokens = fi.top_p_sampling_from_probs(batch([0.4, 0.3, 0.2, 0.1], device), 0.6, seed=5, offset=1)
    assert_distribution(tokens, [4 / 7, 3 / 7, 0, 0])


def test_min_p_sampling(device):
    tokens = fi.min_p_sampling_from_probs(batch([0.5, 0.3, 0.15, 0.05], device), 0.2, seed=9, offset=0)
    assert_distribution(tokens, [0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0])


@pytest.mark.parametrize("from_logits", [False, True])
def test_filter_apply_order(device, from_logits):
    probs = [0.4, 0.3, 0.2, 0.1]
    x = batch(probs, device)
    fn = fi.top_k_top_p_sampling_from_probs
    if from_logits:
        x, fn = torch.log(x), fi.top_k_top_p_sampling_from_logits
    # top_k_first: top-2 renormalised is (4/7, 3/7); p=0.5 is reached by the first.
    first = fn(x, 2, 0.5, filter_apply_order="top_k_first", seed=11, offset=0)
    assert_distribution(first, [1, 0, 0, 0])
    # joint: against the full distribution 0.4 < 0.5, so 0.3 is kept too.
    joint = fn(x, 2, 0.5, filter_apply_order="joint", seed=11, offset=0)
    assert_distribution(joint, [4 / 7, 3 / 7, 0, 0])
    with pytest.raises(ValueError):
        fn(x, 2, 0.5, filter_apply_order="sideways")


def test_per_row_parameters(device):
    probs = batch([0.4, 0.3, 0.2, 0.1], device, n=4)
    k = torch.tensor([1, 2, 3, 4], dtype=torch.int32, device=device)
    for offset in range(50):
        t = fi.top_k_sampling_from_probs(probs, k, seed=offset, offset=offset)
        assert torch.all(t.long() < k.long())


def test_seed_offset_and_generator(device):
    x = torch.randn(64, 1000, device=device)
    a = fi.sampling_from_logits(x, seed=123, offset=4)
    assert torch.equal(a, fi.sampling_from_logits(x, seed=123, offset=4))
    assert not torch.equal(a, fi.sampling_from_logits(x, seed=123, offset=8))
    assert not torch.equal(a, fi.sampling_from_logits(x, seed=124, offset=4))
    as_tensors = fi.sampling_from_logits(
        x, seed=torch.tensor([123], device=device), offset=torch.tensor([4], device=device)
    )
    assert torch.equal(a, as_tensors)
    g1 = torch.Generator(device=device).manual_seed(42)
    g2 = torch.Generator(device=device).manual_seed(42)
    first = fi.sampling_from_logits(x, generator=g1)
    assert torch.equal(first, fi.sampling_from_logits(x, generator=g2))
    # The generator advances: the next call draws fresh numbers.
    assert not torch.equal(first, fi.sampling_from_logits(x, generator=g1))


def test_per_row_seeds_are_per_row(device):
    x = torch.randn(8, 500, device=device)
    seeds = torch.arange(100, 108, dtype=torch.int64, device=device)
    batched = fi.sampling_from_logits(x, seed=seeds, offset=0)
    for r in range(8):
        single = fi.sampling_from_logits(x[r : r + 1], seed=int(seeds[r]), offset=0)
        assert int(single[0]) == int(batched[r])
    # A scalar seed still gives independent rows: identical rows draw differently.
    same = torch.zeros(200, 50, device=device)
    assert fi.sampling_from_logits(same, seed=5, offset=0).unique().numel() > 20


def test_indices(device):
    x = torch.randn(3, 100, device=device)
    idx = torch.tensor([2, 0, 2, 1], dtype=torch.int64, device=device)
    seeds = torch.tensor([1, 2, 3, 4], dtype=torch.int64, device=device)
    out = fi.sampling_from_logits(x, indices=idx, seed=seeds, offset=0)
    assert out.dtype == torch.int64 and out.shape == (4,)
    for i in range(4):
        row = x[int(idx[i])].unsqueeze(0)
        assert int(out[i]) == int(fi.sampling_from_logits(row, seed=int(seeds[i]), offset=0)[0])


def test_check_nan_and_return_valid(device):
    probs = torch.tensor([[0.5, 0.5], [float("nan"), 0.5], [0.0, 0.0]], device=device)
    with pytest.raises(ValueError):
        fi.sampling_from_probs(probs, check_nan=True, seed=0, offset=0)
    tokens, valid = fi.sampling_from_probs(probs, seed=0, offset=0, return_valid=True)
    assert valid.dtype == torch.bool
    assert valid.tolist() == [True, False, False]
    assert tokens[1:].tolist() == [-1, -1]
    tokens, valid = fi.top_k_top_p_sampling_from_logits(
        torch.randn(2, 10, device=device), 3, 0.9, seed=0, offset=0, return_valid=True
    )
    assert valid.all() and tokens.shape == (2,)
