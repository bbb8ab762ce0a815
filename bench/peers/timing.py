"""One timing method for every sampler: CUDA events, rotated inputs, median.

Graph mode captures one CUDA graph that calls the sampler once on each of the
rotated input buffers (together more than twice the L2, so every call reads
its logits from HBM) and times whole replays; eager mode times single calls
on the rotated buffers, launch overhead included.  Both report the median
per call in microseconds.
"""
import math
import statistics
import time

L2_BYTES = 60 * 10**6  # H200; torch reports 60 MB
ROTATION_BYTES = 2 * L2_BYTES + 8 * 2**20
MAX_BUFFERS = 256


def rotation_count(bytes_per_input: int) -> int:
    return max(2, min(MAX_BUFFERS, math.ceil(ROTATION_BYTES / max(1, bytes_per_input))))


def on_gpu(torch):
    return torch.cuda.is_available()


def sync(torch):
    if on_gpu(torch):
        torch.cuda.synchronize()


class _WallEvent:
    """CPU dry runs (no GPU): an event that reads the wall clock."""

    def record(self):
        self.t = time.perf_counter()

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


def _events(torch, n):
    if not on_gpu(torch):
        return [(_WallEvent(), _WallEvent()) for _ in range(n)]
    return [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            for _ in range(n)]


def time_eager(torch, fn, n_buf, max_s):
    """Median µs of single calls; returns (median_us, calls)."""
    fn(0)  # first call: compilation, caches
    sync(torch)
    t0 = time.perf_counter()
    fn(1 % n_buf)
    sync(torch)
    est = max(time.perf_counter() - t0, 1e-6)
    calls = int(min(50, max(3, 0.5 * max_s / est)))
    ev = _events(torch, calls)
    for i, (a, b) in enumerate(ev):
        a.record()
        fn(i % n_buf)
        b.record()
    sync(torch)
    return statistics.median(a.elapsed_time(b) for a, b in ev) * 1e3, calls


def time_graph(torch, fn, n_buf, max_s, est_us):
    """Median µs per call over graph replays; raises if capture fails."""
    if not on_gpu(torch):
        raise RuntimeError("CUDA graphs need a GPU")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up off the default stream, as torch asks
        for i in range(min(3, n_buf)):
            fn(i)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            for i in range(n_buf):
                fn(i)
        graph.replay()
        torch.cuda.synchronize()
        per_replay_s = max(n_buf * est_us * 1e-6, 1e-6)
        replays = int(min(30, max(3, 0.5 * max_s / per_replay_s)))
        ev = _events(torch, replays)
        for a, b in ev:
            a.record()
            graph.replay()
            b.record()
        torch.cuda.synchronize()
        return statistics.median(a.elapsed_time(b) for a, b in ev) * 1e3 / n_buf, replays
    finally:
        del graph


def measure(torch, fn, n_buf, max_s, graph=True):
    """{'us_eager', 'us_graph', 'timing', 'graph_error'}: graph replay when the
    sampler allows capture, else eager only (and 'timing' says so)."""
    us_eager, _ = time_eager(torch, fn, n_buf, 0.4 * max_s)
    out = {"us_eager": us_eager, "us_graph": None, "timing": "eager"}
    if graph:
        try:
            out["us_graph"], _ = time_graph(torch, fn, n_buf, 0.6 * max_s, us_eager)
            out["timing"] = "graph"
        except Exception as e:  # noqa: BLE001 - capture refused: eager it is
            sync(torch)
            out["graph_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    return out


def copy_bandwidth(torch, nbytes=2 * 2**30, reps=10, device="cuda"):
    """Device-to-device copy bandwidth in GB/s, bytes read + written."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)
    sync(torch)
    ev = _events(torch, reps)
    for a, b in ev:
        a.record()
        dst.copy_(src)
        b.record()
    sync(torch)
    ms = statistics.median(a.elapsed_time(b) for a, b in ev)
    del src, dst
    return 2 * nbytes / (ms * 1e-3) / 1e9
