"""tokensift.sample on torch tensors: CPU tensors here and in CI when torch is
installed, CUDA tensors on a GPU machine.  CUDA results must equal the NumPy /
CPU backend on the same inputs, token for token (top-p band rows excepted, where
both must be within the contract's band)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import contract_oracle as O
import tokensift as ts

PARAMS = O.PARAM_GRID
DTYPES = ["float32", "float16", "bfloat16"]


def torch_dtype(name):
    return getattr(torch, name)


def assert_same_tokens(got, logits_f32, want, params_of_row):
    """got == want row by row, except top-p band rows, where got must be allowed."""
    got = got.cpu().numpy()
    for r in range(got.shape[0]):
        if got[r] == want[r]:
            continue
        ref = O.sample_row(logits_f32[r], **params_of_row(r))
        assert ref.kept_lo != ref.kept_hi and int(got[r]) in ref.band_tokens, (r, got[r], want[r], ref)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vocab", [3, 1000, 32000])
def test_equals_numpy_cpu_backend(device, dtype, vocab):
    rng = np.random.default_rng(vocab)
    x32 = (rng.standard_normal((16, vocab)) * 4).astype(np.float32)
    xt = torch.from_numpy(x32).to(torch_dtype(dtype)).to(device)
    xw = xt.float().cpu().numpy()  # the exactly widened values
    seeds = np.arange(16, dtype=np.int64) * 7919
    for params in PARAMS:
        want = ts.sample(xw, seed=seeds, offset=5, **params)
        got = ts.sample(xt, seed=torch.from_numpy(seeds).to(device), offset=5, **params)
        assert got.dtype == torch.int32 and got.device == xt.device
        assert_same_tokens(got, xw, want, lambda r: dict(params, seed=int(seeds[r]), offset=5))


def test_large_vocab_equals_cpu(device):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((8, 128256)) * 3).astype(np.float32)
    xt = torch.from_numpy(x).to(device)
    for params in PARAMS:
        want = ts.sample(x, seed=77, offset=np.arange(8, dtype=np.int64), **params)
        got = ts.sample(xt, seed=77, offset=torch.arange(8, device=device), **params)
        np.testing.assert_array_equal(got.cpu().numpy(), want)


def test_per_row_arrays_and_outputs(device):
    rng = np.random.default_rng(9)
    rows, vocab = 64, 5000
    x = (rng.standard_normal((rows, vocab)) * 3).astype(np.float32)
    arrays = dict(
        temperature=rng.choice([0.0, 0.6, 1.0, 1.7], rows).astype(np.float32),
        top_k=rng.choice([0, 1, 10, 100], rows).astype(np.int32),
        top_p=rng.choice([1.0, 0.9, 0.4], rows).astype(np.float32),
        min_p=rng.choice([0.0, 0.02, 0.2], rows).astype(np.float32),
        seed=rng.integers(0, 2**62, rows).astype(np.int64),
        offset=rng.integers(0, 2**40, rows).astype(np.int64),
    )
    want, want_lp, want_st = ts.sample(x, return_logprobs=True, return_status=True, **arrays)
    on_dev = {k: torch.from_numpy(v).to(device) for k, v in arrays.items()}
    got, lp, st = ts.sample(torch.from_numpy(x).to(device), return_logprobs=True, return_status=True, **on_dev)
    assert_same_tokens(got, x, want, lambda r: {k: v[r].item() for k, v in arrays.items()})
    np.testing.assert_array_equal(st.cpu().numpy(), want_st)
    same = got.cpu().numpy() == want
    np.testing.assert_allclose(lp.cpu().numpy()[same], want_lp[same], atol=1e-5, rtol=0)
    # Parameters given in other dtypes are converted on the device.
    converted = dict(on_dev, top_k=on_dev["top_k"].long(), temperature=on_dev["temperature"].double())
    assert torch.equal(ts.sample(torch.from_numpy(x).to(device), **converted), got)
    # out= is written in place.
    out = torch.empty(rows, dtype=torch.int32, device=device)
    assert ts.sample(torch.from_numpy(x).to(device), out=out, **on_dev) is out
    assert torch.equal(out, got)


def test_strided_and_one_dimensional(device):
    wide = torch.randn(6, 3000, device=device)
    view = wide[:, 500:2500]
    assert torch.equal(ts.sample(view, seed=3), ts.sample(view.contiguous(), seed=3))
    assert torch.equal(ts.sample(wide[::2], seed=3), ts.sample(wide[::2].contiguous(), seed=3))
    one = ts.sample(wide[1], seed=3)
    assert one.shape == () and int(one) == int(ts.sample(wide[1:2], seed=3)[0])
    with pytest.raises(ts.TokensiftError) as err:
        ts.sample(wide.t())
    assert err.value.status == "INVALID_STRIDE"


SCALAR_ERRORS = [
    (dict(temperature=-1.0), "INVALID_TEMPERATURE"),
    (dict(temperature=float("inf")), "INVALID_TEMPERATURE"),
    (dict(top_k=-1), "INVALID_TOP_K"),
    (dict(top_p=0.0), "INVALID_TOP_P"),
    (dict(top_p=float("nan")), "INVALID_TOP_P"),
    (dict(min_p=1.5), "INVALID_MIN_P"),
    (dict(algo="quantum"), "INVALID_ALGO"),
]


@pytest.mark.parametrize("kwargs,status", SCALAR_ERRORS)
def test_scalar_argument_errors(device, kwargs, status):
    with pytest.raises(ts.TokensiftError) as err:
        ts.sample(torch.randn(4, 50, device=device), **kwargs)
    assert err.value.status == status and err.value.message


@pytest.mark.parametrize(
    "name,bad",
    [("temperature", -1.0), ("temperature", float("nan")), ("top_k", -3), ("top_p", 0.0),
     ("top_p", 1.5), ("min_p", -0.5), ("min_p", 2.0)],
)
def test_per_row_argument_errors(device, name, bad):
    """CPU: the call fails before any work.  CUDA: the kernel reads the array,
    so only the bad row fails, with ROW_INVALID_PARAM and token -1."""
    x = torch.randn(4, 50, device=device)
    dtype = torch.int32 if name == "top_k" else torch.float32
    good = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0}[name]
    values = torch.tensor([good, bad, good, good], dtype=dtype, device=device)
    if device == "cpu":
        with pytest.raises(ts.TokensiftError) as err:
            ts.sample(x, **{name: values})
        assert err.value.status.startswith("INVALID_")
    else:
        tokens, status = ts.sample(x, return_status=True, **{name: values})
        assert status.tolist() == [0, ts.ROW_INVALID_PARAM, 0, 0]
        assert int(tokens[1]) == -1


def test_shape_and_dtype_errors(device):
    x = torch.randn(4, 50, device=device)
    cases = [
        (dict(top_k=torch.zeros(3, dtype=torch.int32, device=device)), "SIZE_MISMATCH"),
        (dict(out=torch.zeros(4, dtype=torch.int64, device=device)), "INVALID_DTYPE"),
        (dict(out=torch.zeros(5, dtype=torch.int32, device=device)), "SIZE_MISMATCH"),
    ]
    for kwargs, status in cases:
        with pytest.raises(ts.TokensiftError) as err:
            ts.sample(x, **kwargs)
        assert err.value.status == status
    for bad in (x.double(), x.to(torch.int32), x[None]):
        with pytest.raises(ts.TokensiftError):
            ts.sample(bad)
    with pytest.raises(ts.TokensiftError) as err:
        ts.sample(torch.zeros(2, 0, device=device))
    assert err.value.status == "INVALID_VOCAB"


def test_row_status(device):
    x = torch.randn(3, 40, device=device)
    x[1, 7] = float("nan")
    x[2] = float("-inf")
    tokens, status = ts.sample(x, return_status=True)
    assert status.tolist() == [0, ts.ROW_NAN_INPUT, ts.ROW_NO_VALID_TOKEN]
    assert tokens[1:].tolist() == [-1, -1]
