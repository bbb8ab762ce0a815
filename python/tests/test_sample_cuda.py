"""What only a GPU can show: CUDA graphs, streams, no synchronization, the
workspace cache, CuPy and JAX arrays.  Skipped without torch + CUDA."""

import numpy as np
import pytest

import tokensift as ts


@pytest.fixture
def x(torch_cuda):
    torch = torch_cuda
    gen = torch.Generator(device="cuda").manual_seed(0)
    return torch.randn(32, 50000, device="cuda", generator=gen) * 3


def test_graph_capture_and_replay_with_device_offsets(torch_cuda, x):
    torch = torch_cuda
    stream = torch.cuda.Stream()
    offset = torch.zeros(32, dtype=torch.int64, device="cuda")
    seeds = torch.arange(32, dtype=torch.int64, device="cuda")
    out = torch.empty(32, dtype=torch.int32, device="cuda")
    kw = dict(temperature=0.8, top_k=50, top_p=0.9, seed=seeds)
    with torch.cuda.stream(stream):  # warm-up on the capture stream sizes the workspace
        ts.sample(x, offset=offset, out=out, **kw)
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        ts.sample(x, offset=offset, out=out, **kw)
        offset.add_(1)  # the decode step advances on the device
    offset.zero_()
    for step in range(5):
        graph.replay()
        torch.cuda.synchronize()
        eager = ts.sample(x, offset=step, **kw)
        assert torch.equal(out, eager), step
    assert int(offset[0]) == 5


def test_capture_cannot_grow_the_workspace(torch_cuda, x):
    torch = torch_cuda
    if ts.workspace_size(32, 50000, "float32", "cuda") == 0:
        pytest.skip("this backend needs no workspace")
    fresh = torch.cuda.Stream()  # no workspace cached for this stream yet
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(ts.TokensiftError) as err:
        with torch.cuda.graph(graph, stream=fresh):
            ts.sample(x)
    assert err.value.status == "WORKSPACE_TOO_SMALL"


def test_cached_workspace_serves_a_growing_batch(torch_cuda):
    # The cached workspace is sized by the largest call so far; a smaller call's
    # scratch must not leak into a later, larger call's state.
    torch = torch_cuda
    stream = torch.cuda.Stream()
    vocab = 64
    row = torch.randn(vocab, device="cuda")
    top10 = set(torch.argsort(row, descending=True)[:10].tolist())
    with torch.cuda.stream(stream):
        ts.sample(row.repeat(4000, 1), seed=1)  # sizes the workspace for 4000 rows
        for rows in (5, 300, 4000):
            ts.sample(torch.randn(rows, 300, device="cuda"), seed=2)  # another layout
            out = torch.full((rows,), -7, dtype=torch.int32, device="cuda")
            ts.sample(row.repeat(rows, 1), top_k=10, top_p=0.6, seed=3, out=out)
            assert set(out.tolist()) <= top10, rows
    stream.synchronize()


def test_user_workspace_in_a_graph(torch_cuda, x):
    torch = torch_cuda
    size = ts.workspace_size(32, 50000, "float32", "cuda")
    ws = torch.empty(max(size, 1), dtype=torch.uint8, device="cuda")
    ts.init_workspace(ws)
    stream = torch.cuda.Stream()
    out = torch.empty(32, dtype=torch.int32, device="cuda")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        ts.sample(x, seed=9, out=out, workspace=ws)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, ts.sample(x, seed=9))


def test_non_default_streams(torch_cuda, x):
    torch = torch_cuda
    want = ts.sample(x, seed=4, top_p=0.9)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        got_current = ts.sample(x, seed=4, top_p=0.9)
    got_obj = ts.sample(x, seed=4, top_p=0.9, stream=s)
    got_int = ts.sample(x, seed=4, top_p=0.9, stream=s.cuda_stream)
    s.synchronize()
    for got in (got_current, got_obj, got_int):
        assert torch.equal(got, want)


def test_runs_on_the_callers_stream(torch_cuda):
    """Work queued behind a long kernel on stream s must not have run before it."""
    torch = torch_cuda
    s = torch.cuda.Stream()
    x = torch.zeros(4, 1000, device="cuda")
    x[:, 123] = 100.0
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.cuda._sleep(200_000_000)  # ~0.1 s of spinning on s
        x[:, 123] = -100.0
        x[:, 456] = 100.0  # only visible if sampling waits for s's earlier work
        tokens = ts.sample(x, temperature=0.0)
    s.synchronize()
    assert tokens.tolist() == [456] * 4


def test_no_synchronization_in_the_python_layer(torch_cuda, x):
    torch = torch_cuda
    seeds = torch.arange(32, device="cuda")
    k = torch.full((32,), 40, device="cuda")  # int64: converted on the device
    top_p = torch.full((32,), 0.9, device="cuda")
    temperature = torch.full((), 0.7, device="cuda")  # 0-d: broadcast on the device, no .item()
    ts.sample(x, seed=seeds, top_k=k)  # warm caches
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        ts.sample(x, seed=seeds, top_k=k, top_p=top_p, temperature=temperature,
                  return_logprobs=True, return_status=True)
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_cupy_arrays(torch_cuda):
    cupy = pytest.importorskip("cupy")
    try:
        cupy.cuda.runtime.getDeviceCount()
        cupy.arange(1).sum()  # CuPy's own kernels work with this driver
    except Exception as err:  # an environment problem, not a tokensift one
        pytest.skip(f"CuPy is installed but unusable here: {err}")
    rng = np.random.default_rng(1)
    host = (rng.standard_normal((8, 3000)) * 3).astype(np.float32)
    want = ts.sample(host, seed=np.arange(8, dtype=np.int64), top_k=30)
    got = ts.sample(cupy.asarray(host), seed=cupy.arange(8, dtype=cupy.int64), top_k=30)
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_array_equal(cupy.asnumpy(got), want)


def test_jax_arrays(torch_cuda):
    jax = pytest.importorskip("jax")
    try:
        gpus = [d for d in jax.devices() if d.platform == "gpu"]
    except Exception as err:
        pytest.skip(f"JAX is installed but unusable here: {err}")
    if not gpus:
        pytest.skip("JAX has no GPU here")
    rng = np.random.default_rng(2)
    host = (rng.standard_normal((4, 2000)) * 3).astype(np.float32)
    want = ts.sample(host, seed=11, top_p=0.8)
    got = ts.sample(jax.device_put(host, jax.devices("gpu")[0]), seed=11, top_p=0.8)
    np.testing.assert_array_equal(np.asarray(got), want)


def test_host_overhead_per_call(torch_cuda, record_property):
    """Host time of one call (argument handling + launch), no synchronization:
    recorded in the junit report, and bounded so a regression that syncs or
    allocates per call shows."""
    import time

    torch = torch_cuda
    x = torch.randn(64, 128256, device="cuda", dtype=torch.bfloat16)
    seeds = torch.arange(64, device="cuda")
    offsets = torch.zeros(64, dtype=torch.int64, device="cuda")
    out = torch.empty(64, dtype=torch.int32, device="cuda")
    for _ in range(20):
        ts.sample(x, seed=seeds, offset=offsets, top_k=50, top_p=0.9, out=out)
    torch.cuda.synchronize()
    calls = 300
    start = time.perf_counter()
    for _ in range(calls):
        ts.sample(x, seed=seeds, offset=offsets, top_k=50, top_p=0.9, out=out)
    host_us = (time.perf_counter() - start) / calls * 1e6
    torch.cuda.synchronize()
    record_property("host_us_per_call", round(host_us, 2))
    print(f"host time per call: {host_us:.1f} us")
    assert host_us < 1000
