"""tokensift.sample on NumPy arrays (the CPU backend): runs everywhere, in CI."""

import numpy as np
import pytest

import contract_oracle as O
import tokensift as ts

PARAM_GRID = O.PARAM_GRID


def random_logits(rng, rows, vocab, scale=3.0):
    return (rng.standard_normal((rows, vocab)) * scale).astype(np.float32)


def assert_matches_oracle(x, tokens, params_per_row, logprobs=None):
    for r in range(x.shape[0]):
        ref = O.sample_row(x[r], **params_per_row(r))
        assert ref.status == 0
        assert int(tokens[r]) in ref.band_tokens, (r, params_per_row(r), int(tokens[r]), ref)
        if logprobs is not None and ref.kept_lo == ref.kept_hi:
            assert abs(float(logprobs[r]) - ref.logprob) <= 1e-5


@pytest.mark.parametrize("params", PARAM_GRID)
@pytest.mark.parametrize("vocab", [1, 7, 64, 257, 1000])
def test_tokens_match_contract_oracle(rng, params, vocab):
    x = random_logits(rng, 6, vocab)
    tokens, logprobs = ts.sample(x, seed=99, offset=5, return_logprobs=True, **params)
    assert tokens.dtype == np.int32 and tokens.shape == (6,)
    assert_matches_oracle(x, tokens, lambda r: dict(params, seed=99, offset=5), logprobs)


def test_per_row_arrays_match_oracle_and_single_rows(rng):
    rows, vocab = 24, 300
    x = random_logits(rng, rows, vocab)
    per_row = dict(
        temperature=rng.choice([0.0, 0.5, 1.0, 2.0], rows).astype(np.float32),
        top_k=rng.choice([0, 1, 3, 50, 400], rows).astype(np.int32),
        top_p=rng.choice([1.0, 0.95, 0.5], rows).astype(np.float32),
        min_p=rng.choice([0.0, 0.01, 0.3], rows).astype(np.float32),
        seed=rng.integers(0, 2**63, rows, dtype=np.int64),
        offset=rng.integers(0, 2**40, rows, dtype=np.int64),
    )
    tokens = ts.sample(x, **per_row)

    def row_params(r):
        return {k: v[r].item() for k, v in per_row.items()}

    assert_matches_oracle(x, tokens, row_params)
    for r in range(rows):  # a row's result never depends on the batch
        assert ts.sample(x[r], **row_params(r)) == tokens[r]
        assert ts.sample(x[r : r + 1], **row_params(r))[0] == tokens[r]


def test_per_row_arrays_are_converted(rng):
    x = random_logits(rng, 5, 50)
    want = ts.sample(x, top_k=np.full(5, 3, np.int32), temperature=np.full(5, 0.8, np.float32),
                     seed=np.arange(5, dtype=np.int64))
    got = ts.sample(x, top_k=[3] * 5, temperature=np.full(5, 0.8), seed=np.arange(5, dtype=np.int32))
    np.testing.assert_array_equal(want, got)


def test_seed_and_offset_are_64_bit(rng):
    x = random_logits(rng, 1, 500)
    big = 2**64 - 1
    a = ts.sample(x, seed=big, offset=big)
    np.testing.assert_array_equal(a, ts.sample(x, seed=-1, offset=-1))
    np.testing.assert_array_equal(a, ts.sample(x, seed=np.array([big], np.uint64), offset=np.array([-1], np.int64)))
    ref = O.sample_row(x[0], seed=big, offset=big)
    assert int(a[0]) in ref.band_tokens
    # The high words matter.
    draws = {int(ts.sample(x, seed=s << 32)[0]) for s in range(1, 40)}
    assert len(draws) > 5


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_offsets_draw_from_the_softmax(seed):
    x = np.log(np.array([0.5, 0.25, 0.125, 0.125], np.float32))
    n = 40000
    batch = np.broadcast_to(x, (n, 4))  # row stride 0 is not allowed: copy
    tokens = ts.sample(np.ascontiguousarray(batch), seed=seed, offset=np.arange(n, dtype=np.int64))
    freq = np.bincount(tokens, minlength=4) / n
    sigma = np.sqrt(np.array([0.5, 0.25, 0.125, 0.125]) * 0.75 / n)
    assert np.all(np.abs(freq - [0.5, 0.25, 0.125, 0.125]) < 5 * sigma + 1e-3)


def test_ties_keep_lowest_indices():
    x = np.zeros((200, 10), np.float32)
    tokens = ts.sample(x, top_k=3, seed=7, offset=np.arange(200, dtype=np.int64))
    assert set(tokens.tolist()) == {0, 1, 2}
    x[:, 6] = x[:, 8] = 1.0
    greedy = ts.sample(x, temperature=0.0)
    assert np.all(greedy == 6)
    kept = ts.sample(x, min_p=1.0, seed=3, offset=np.arange(200, dtype=np.int64))
    assert set(kept.tolist()) == {6, 8}


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_half_precision_equals_widened_float32(rng, half):
    if half == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        dtype = ml_dtypes.bfloat16
    else:
        dtype = np.float16
    x = random_logits(rng, 8, 333).astype(dtype)
    wide = x.astype(np.float32)
    for params in PARAM_GRID:
        a = ts.sample(x, seed=11, offset=np.arange(8, dtype=np.int64), **params)
        b = ts.sample(wide, seed=11, offset=np.arange(8, dtype=np.int64), **params)
        np.testing.assert_array_equal(a, b)


def test_one_dimensional_input_is_one_row(rng):
    x = random_logits(rng, 1, 100)
    tok, lp, st = ts.sample(x[0], seed=4, return_logprobs=True, return_status=True)
    assert tok.shape == () and lp.shape == () and st.shape == ()
    assert tok == ts.sample(x, seed=4)[0]
    assert st == ts.ROW_OK


def test_strided_rows(rng):
    wide = random_logits(rng, 9, 700)
    view = wide[:, 100:400]  # row stride 700, vocab 300
    assert not view.flags.c_contiguous
    np.testing.assert_array_equal(
        ts.sample(view, seed=8, top_p=0.9), ts.sample(np.ascontiguousarray(view), seed=8, top_p=0.9)
    )
    every_other = wide[::2]
    np.testing.assert_array_equal(
        ts.sample(every_other, seed=8), ts.sample(np.ascontiguousarray(every_other), seed=8)
    )


def test_inner_stride_is_rejected(rng):
    x = random_logits(rng, 4, 100)
    with pytest.raises(ts.TokensiftError) as err:
        ts.sample(x[:, ::2])
    assert err.value.status == "INVALID_STRIDE"
    with pytest.raises(ts.TokensiftError) as err:
        ts.sample(x.T)
    assert err.value.status == "INVALID_STRIDE"


def test_out_and_row_status(rng):
    x = random_logits(rng, 4, 64)
    x[1, 5] = np.nan
    x[2, :] = -np.inf
    x[3, 9] = np.inf
    out = np.full(4, 77, np.int32)
    tokens, status = ts.sample(x, out=out, return_status=True)
    assert tokens is out
    assert status.tolist() == [ts.ROW_OK, ts.ROW_NAN_INPUT, ts.ROW_NO_VALID_TOKEN, ts.ROW_NAN_INPUT]
    assert tokens[1:].tolist() == [-1, -1, -1] and 0 <= tokens[0] < 64
    _, lp = ts.sample(x, return_logprobs=True)
    assert np.isnan(lp[1:]).all()


def test_temperature_overflow_is_nan_input():
    x = np.float32([[3e38, 1.0]])
    tokens, status = ts.sample(x, temperature=0.5, return_status=True)
    assert status[0] == ts.ROW_NAN_INPUT and tokens[0] == -1
    assert ts.sample(x, temperature=0.0)[0] == 0  # greedy rows never divide


def test_empty_batch():
    tokens = ts.sample(np.zeros((0, 10), np.float32))
    assert tokens.shape == (0,)


def test_user_workspace(rng):
    x = random_logits(rng, 3, 128)
    size = ts.workspace_size(3, 128, "float32", "cpu")
    ws = np.empty(max(size, 1), np.uint8)
    ts.init_workspace(ws)
    np.testing.assert_array_equal(ts.sample(x, seed=2, workspace=ws), ts.sample(x, seed=2))
    if size > 0:
        with pytest.raises(ts.TokensiftError) as err:
            ts.sample(x, workspace=np.zeros(size - 1, np.uint8))
        assert err.value.status == "WORKSPACE_TOO_SMALL"


def test_workspace_given_as_a_dlpack_capsule(rng):
    # CUDA arrays reach the extension as DLPack capsules (_arrays.export), which
    # can be consumed only once: init_workspace must cast its argument once.
    from tokensift import _ext

    x = random_logits(rng, 3, 128)
    ws = np.empty(max(ts.workspace_size(3, 128, "float32", "cpu"), 1), np.uint8)
    _ext.init_workspace(ws.__dlpack__(), 0, 0)
    np.testing.assert_array_equal(ts.sample(x, seed=2, workspace=ws), ts.sample(x, seed=2))


@pytest.mark.parametrize("algo", ["auto", "pivot", "sort"])
def test_algos_agree(rng, algo):
    x = random_logits(rng, 10, 400)
    for params in PARAM_GRID:
        np.testing.assert_array_equal(
            ts.sample(x, algo=algo, seed=5, **params), ts.sample(x, seed=5, **params)
        )


ERRORS = [
    (dict(temperature=-1.0), "INVALID_TEMPERATURE"),
    (dict(temperature=float("nan")), "INVALID_TEMPERATURE"),
    (dict(temperature=float("inf")), "INVALID_TEMPERATURE"),
    (dict(temperature=np.float32([1, -1, 1])), "INVALID_TEMPERATURE"),
    (dict(top_k=-1), "INVALID_TOP_K"),
    (dict(top_k=np.int32([0, 0, -2])), "INVALID_TOP_K"),
    (dict(top_p=0.0), "INVALID_TOP_P"),
    (dict(top_p=1.5), "INVALID_TOP_P"),
    (dict(top_p=float("nan")), "INVALID_TOP_P"),
    (dict(top_p=np.float32([0.5, 0.0, 1])), "INVALID_TOP_P"),
    (dict(min_p=-0.1), "INVALID_MIN_P"),
    (dict(min_p=1.1), "INVALID_MIN_P"),
    (dict(min_p=float("nan")), "INVALID_MIN_P"),
    (dict(min_p=np.float32([0, 2, 0])), "INVALID_MIN_P"),
    (dict(algo="fastest"), "INVALID_ALGO"),
    (dict(top_k=np.int32([1, 2])), "SIZE_MISMATCH"),
    (dict(seed=np.zeros((3, 1), np.int64)), "SIZE_MISMATCH"),
    (dict(out=np.zeros(2, np.int32)), "SIZE_MISMATCH"),
    (dict(out=np.zeros(3, np.int64)), "INVALID_DTYPE"),
]


@pytest.mark.parametrize("kwargs,status", ERRORS, ids=[s + str(i) for i, (_, s) in enumerate(ERRORS)])
def test_argument_errors(rng, kwargs, status):
    x = random_logits(rng, 3, 16)
    with pytest.raises(ts.TokensiftError) as err:
        ts.sample(x, **kwargs)
    assert err.value.status == status
    assert isinstance(err.value, ValueError)
    assert err.value.message  # the library's (or binding's) message, not empty


@pytest.mark.parametrize(
    "logits,status",
    [
        (np.zeros((2, 0), np.float32), "INVALID_VOCAB"),
        (np.zeros((2, 4), np.float64), "INVALID_DTYPE"),
        (np.zeros((2, 4), np.int32), "INVALID_DTYPE"),
        (np.zeros((2, 2, 4), np.float32), "INVALID_ROWS"),
    ],
)
def test_logits_errors(logits, status):
    with pytest.raises(ts.TokensiftError) as err:
        ts.sample(logits)
    assert err.value.status == status and err.value.message


def test_cuda_backend_reported_honestly():
    assert isinstance(ts.cuda_available(), bool)
    assert ts.library_version()
