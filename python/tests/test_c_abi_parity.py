"""The extension against a direct C ABI call on the same inputs: NumPy on the
CPU backend always; torch CUDA tensors on the CUDA backend on a GPU machine."""

import numpy as np
import pytest

import tokensift as ts
from c_abi import Sampler

DTYPE_CODES = {"float32": 0, "bfloat16": 1, "float16": 2}
CASES = [
    dict(temperature=1.0),
    dict(temperature=0.0),
    dict(temperature=0.8, top_k=40),
    dict(temperature=1.2, top_p=0.85),
    dict(min_p=0.05, top_k=100, top_p=0.9, temperature=0.6),
]


def per_row_arrays(rng, rows):
    return dict(
        temperature=rng.choice([0.0, 0.7, 1.0, 1.5], rows).astype(np.float32),
        min_p=rng.choice([0.0, 0.01, 0.1], rows).astype(np.float32),
        top_k=rng.choice([0, 1, 20, 500], rows).astype(np.int32),
        top_p=rng.choice([1.0, 0.95, 0.6], rows).astype(np.float32),
        seed=rng.integers(0, 2**63, rows, dtype=np.int64).view(np.uint64),
        offset=rng.integers(0, 2**40, rows, dtype=np.int64).view(np.uint64),
    )


def c_call_numpy(sampler, x, params, per_row=None):
    rows, vocab = x.shape
    tokens = np.full(rows, -7, np.int32)
    status = np.full(rows, -7, np.int32)
    logprobs = np.zeros(rows, np.float32)
    size = sampler.workspace_size(rows, vocab, 0)
    ws = np.zeros(max(size, 1), np.uint8)
    args = {k: (v, None) for k, v in params.items()}
    for k, v in (per_row or {}).items():
        args[k] = (0, v.ctypes.data)
    rc = sampler.sample(x.ctypes.data, rows, vocab, x.strides[0] // 4, 0, args,
                        dict(tokens=tokens.ctypes.data, row_status=status.ctypes.data,
                             logprobs=logprobs.ctypes.data), ws.ctypes.data, size)
    assert rc == 0
    return tokens, status, logprobs


@pytest.mark.parametrize("case", CASES)
def test_numpy_equals_c_abi(case):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((12, 3000)) * 3).astype(np.float32)
    sampler = Sampler(backend=0)
    want_tokens, want_status, want_lp = c_call_numpy(sampler, x, dict(case, seed=5, offset=9))
    tokens, lp, status = ts.sample(x, seed=5, offset=9, return_logprobs=True, return_status=True, **case)
    np.testing.assert_array_equal(tokens, want_tokens)
    np.testing.assert_array_equal(status, want_status)
    np.testing.assert_array_equal(lp, want_lp)


def test_numpy_per_row_equals_c_abi():
    rng = np.random.default_rng(4)
    rows = 40
    x = (rng.standard_normal((rows, 2000)) * 3).astype(np.float32)
    arrays = per_row_arrays(rng, rows)
    want, want_status, want_lp = c_call_numpy(Sampler(backend=0), x, {}, arrays)
    tokens, lp, status = ts.sample(x, return_logprobs=True, return_status=True, **arrays)
    np.testing.assert_array_equal(tokens, want)
    np.testing.assert_array_equal(status, want_status)
    np.testing.assert_array_equal(lp, want_lp)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_torch_cuda_equals_c_abi(torch_cuda, dtype):
    torch = torch_cuda
    rng = np.random.default_rng(5)
    rows, vocab = 32, 32000
    host = (rng.standard_normal((rows, vocab + 64)) * 3).astype(np.float32)
    x = torch.from_numpy(host).to(getattr(torch, dtype)).cuda()[:, :vocab]  # strided rows
    arrays = per_row_arrays(rng, rows)
    dev = {k: torch.from_numpy(v.view(np.int64) if v.dtype == np.uint64 else v).cuda()
           for k, v in arrays.items()}
    sampler = Sampler(backend=1, device=0)
    size = sampler.workspace_size(rows, vocab, DTYPE_CODES[dtype])
    ws = torch.zeros(max(size, 1), dtype=torch.uint8, device="cuda")
    tokens_c = torch.full((rows,), -7, dtype=torch.int32, device="cuda")
    status_c = torch.full((rows,), -7, dtype=torch.int32, device="cuda")
    lp_c = torch.zeros(rows, dtype=torch.float32, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    rc = sampler.sample(x.data_ptr(), rows, vocab, x.stride(0), DTYPE_CODES[dtype],
                        {k: (0, t.data_ptr()) for k, t in dev.items()},
                        dict(tokens=tokens_c.data_ptr(), row_status=status_c.data_ptr(),
                             logprobs=lp_c.data_ptr()), ws.data_ptr(), size, stream)
    assert rc == 0
    tokens, lp, status = ts.sample(x, return_logprobs=True, return_status=True, **dev)
    torch.cuda.synchronize()
    assert torch.equal(tokens, tokens_c)
    assert torch.equal(status, status_c)
    assert torch.equal(lp, lp_c)
