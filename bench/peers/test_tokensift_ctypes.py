"""The ctypes shim against tokensift's CPU backend: kept counts are the
contract's, tokens lie in the kept set, seeds per row work, errors surface.
Skipped when no libtokensift.so is built (TOKENSIFT_LIB, or build/*/src).

Build: cmake -S . -B build/d -G Ninja -DTOKENSIFT_ENABLE_CUDA=OFF -DTOKENSIFT_BUILD_TESTS=OFF
       && cmake --build build/d -j2 --target tokensift
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as ref  # noqa: E402
import tokensift_ctypes as tc  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def lib():
    try:
        path = tc.find_library(REPO)
    except FileNotFoundError:
        pytest.skip("libtokensift.so not built")
    lib = tc.Library(path)
    if not lib.backend_available(tc.BACKEND_CPU):
        pytest.skip("CPU backend not available")
    return lib


def sample(lib, x, algo, case, seeds=None):
    rows, vocab = x.shape
    s = tc.Sampler(lib, tc.BACKEND_CPU, algo, num_threads=1)
    n = s.workspace_size(rows, vocab, "fp32")
    ws = np.zeros(max(n, 1), dtype=np.uint8)
    s.workspace_init(ws.ctypes.data, n)
    tokens = np.empty(rows, dtype=np.int32)
    kept = np.empty(rows, dtype=np.int32)
    status = np.empty(rows, dtype=np.int32)
    t, k, p, mp = ref.CASES[case]
    s.set_params(t, k, p, mp, seed=99, seed_per_row=seeds.ctypes.data if seeds is not None else 0)
    s.sample(x.ctypes.data, rows, vocab, vocab, "fp32", tokens.ctypes.data, ws.ctypes.data, n,
             row_status=status.ctypes.data, kept_counts=kept.ctypes.data)
    return tokens, kept, status


@pytest.mark.parametrize("algo", ["pivot", "sort", "auto"])
@pytest.mark.parametrize("case", list(ref.CASES))
def test_kept_counts_and_tokens_follow_the_contract(lib, algo, case):
    rng = np.random.default_rng(21)
    x = ref.make_logits_np(rng, 12, 5000, "gauss_head")
    x[:4] = np.round(x[:4])  # ties
    tokens, kept, status = sample(lib, x, algo, case)
    assert np.all(status == 0)
    for r in range(x.shape[0]):
        order, m, m_lo, m_hi = ref.contract_row(x[r], *ref.CASES[case])
        assert m_lo <= kept[r] <= m_hi
        if m_lo == m_hi:
            assert kept[r] == m
        assert tokens[r] in set(order[:kept[r]].tolist())


def test_per_row_seeds_draw_the_contract_distribution(lib):
    rng = np.random.default_rng(22)
    x1 = ref.make_logits_np(rng, 1, 300, "flat")
    n = 40000
    x = np.ascontiguousarray(np.repeat(x1, n, axis=0))
    seeds = np.arange(n, dtype=np.uint64)
    tokens, _, _ = sample(lib, x, "auto", "p0.9", seeds)
    exact = ref.exact_distribution(x1[0], *ref.CASES["p0.9"])
    _, q99 = ref.tvd_noise_floor(exact, n, trials=16)
    counts = np.bincount(tokens, minlength=300)
    assert ref.tvd(counts, exact) < 1.5 * q99
    assert counts[exact == 0].sum() == 0


def test_errors_surface_with_the_library_message(lib):
    s = tc.Sampler(lib, tc.BACKEND_CPU, "auto")
    x = np.zeros((1, 10), dtype=np.float32)
    tokens = np.empty(1, dtype=np.int32)
    s.set_params(top_p=1.5)
    with pytest.raises(tc.TokensiftError, match="TOP_P|top_p|top-p"):
        s.sample(x.ctypes.data, 1, 10, 10, "fp32", tokens.ctypes.data, 0, 0)
