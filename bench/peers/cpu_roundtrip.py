"""The CPU round trip that GPU-resident sampling removes (ds4's way): copy the
logits to pinned host memory, sample on the CPU, copy the tokens back; every
step synchronized and timed on its own with the wall clock.

Samplers: tokensift's CPU backend (C ABI via ctypes, on the pinned buffer)
and a naive NumPy sampler that sorts the whole row.
"""
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference as ref  # noqa: E402


def widen_bf16(u16):
    """bfloat16 bits (uint16) -> float32, exactly."""
    return (u16.astype(np.uint32) << 16).view(np.float32)


def numpy_sample(x, temperature, top_k, top_p, min_p, rng):
    """Naive full-sort sampler, one row at a time, the contract's filters."""
    rows, vocab = x.shape
    out = np.empty(rows, dtype=np.int32)
    for r in range(rows):
        row = x[r]
        if temperature < ref.GREEDY_TEMPERATURE_FLOOR:
            out[r] = int(np.argmax(row))
            continue
        order, m, _, _ = ref.contract_row(row, temperature, top_k, top_p, min_p)
        kept = order[:m]
        z = row[kept].astype(np.float64) / temperature
        w = np.exp(z - z[0])
        c = np.cumsum(w)
        out[r] = kept[min(int(np.searchsorted(c, rng.random() * c[-1], side="right")), m - 1)]
    return out


class NumpySampler:
    name = "numpy-sort"

    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __call__(self, host, dtype, cell):
        if dtype == "bf16":  # NumPy has no bfloat16: widen the bits
            import torch

            x = widen_bf16(host.view(torch.int16).numpy().view(np.uint16))
        else:
            x = host.numpy()
        return numpy_sample(x, cell.temperature, cell.top_k, cell.top_p, cell.min_p, self.rng)


class TokensiftCpuSampler:
    name = "tokensift-cpu"

    def __init__(self, lib, num_threads=0):
        import tokensift_ctypes as tc

        self.tc = tc
        self.sampler = tc.Sampler(lib, tc.BACKEND_CPU, "auto", num_threads=num_threads)
        self.ws = None

    def __call__(self, host, dtype, cell):
        rows, vocab = host.shape
        n = self.sampler.workspace_size(rows, vocab, dtype)
        if self.ws is None or self.ws.nbytes < n:
            self.ws = np.zeros(max(n, 1), dtype=np.uint8)
            self.sampler.workspace_init(self.ws.ctypes.data, n)
        tokens = np.empty(rows, dtype=np.int32)
        self.sampler.set_params(cell.temperature, cell.top_k, cell.top_p, cell.min_p, seed=7)
        self.sampler.sample(host.data_ptr(), rows, vocab, vocab, dtype, tokens.ctypes.data,
                            self.ws.ctypes.data, n)
        return tokens


def roundtrip(torch, sampler, cell, reps, max_s):
    """Median µs of each part: d2h (copy + sync), cpu (sampling), h2d (tokens
    back + sync), and of their sum."""
    from timing import on_gpu, sync

    x = cell.bufs[0]
    pin = on_gpu(torch)  # False only in a CPU dry run of the harness
    host = torch.empty(x.shape, dtype=x.dtype, pin_memory=pin)
    tok_host = torch.empty(cell.batch, dtype=torch.int32, pin_memory=pin)
    tok_dev = torch.empty(cell.batch, dtype=torch.int32, device=x.device)
    parts = {"d2h": [], "cpu": [], "h2d": [], "total": []}
    t_end = time.perf_counter() + max_s
    for i in range(reps):
        src = cell.bufs[i % len(cell.bufs)]
        sync(torch)
        t0 = time.perf_counter()
        host.copy_(src, non_blocking=True)
        sync(torch)
        t1 = time.perf_counter()
        tokens = sampler(host, cell.dtype, cell)
        t2 = time.perf_counter()
        tok_host.numpy()[:] = tokens
        tok_dev.copy_(tok_host, non_blocking=True)
        sync(torch)
        t3 = time.perf_counter()
        for key, v in (("d2h", t1 - t0), ("cpu", t2 - t1), ("h2d", t3 - t2), ("total", t3 - t0)):
            parts[key].append(v * 1e6)
        if time.perf_counter() > t_end and i >= 1:
            break
    return {k: statistics.median(v) for k, v in parts.items()}, len(parts["total"])
