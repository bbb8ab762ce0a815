"""The samplers the peer benchmark runs, each behind one small adapter.

An adapter's prepare(cell) returns a Runner: run(i) samples one token per
row of input buffer i (everything a caller would do from those logits to the
tokens is inside, conversions included); mask(x) returns the kept set as a
bool [rows, vocab] tensor where the peer exposes it (else None); kept(x)
returns kept counts for samplers that report them (tokensift).  prepare raises
NotApplicable when the peer has no path for the case or dtype.
"""
import os
import sys
from dataclasses import dataclass, field
from typing import Callable, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEVICE = "cuda"  # "cpu" for a dry run of the harness without a GPU (torch peers only)


class NotApplicable(Exception):
    pass


@dataclass
class Cell:
    dtype: str  # "fp32" | "bf16"
    vocab: int
    batch: int
    case: str
    temperature: float
    top_k: int  # 0 = off
    top_p: float  # 1 = off
    min_p: float  # 0 = off
    bufs: List = field(default_factory=list)  # rotated input tensors, native dtype

    @property
    def greedy(self):
        return self.temperature < 1e-5

    @property
    def k_on(self):
        return 0 < self.top_k < self.vocab

    @property
    def p_on(self):
        return self.top_p < 1.0


@dataclass
class Runner:
    run: Callable
    mask: Optional[Callable] = None
    kept: Optional[Callable] = None
    workspace_bytes: int = 0
    note: str = ""
    graph: bool = True


def _torch():
    import torch

    return torch


def _as_fp32(x):
    return x if x.dtype == _torch().float32 else x.float()


def _race(torch, probs):
    # The exponential race vLLM draws with: argmax p_i / E_i, E_i ~ Exp(1).
    q = torch.empty_like(probs).exponential_()
    return probs.div(q).argmax(dim=-1)


# ------------------------------------------------------------ tokensift --
def tokensift_package():
    """The tokensift Python package when importable with a usable CUDA backend, else None."""
    try:
        import tokensift

        return tokensift if hasattr(tokensift, "sample") and tokensift.cuda_available() else None
    except Exception:  # noqa: BLE001 - not installed / not built: use the C ABI
        return None


class TokensiftGpu:
    """tokensift's CUDA backend: through the Python package (via="package"),
    or the C ABI through ctypes (via="ctypes", which also reads kept counts
    for the correctness check in either case)."""

    def __init__(self, algo, via="ctypes"):
        self.algo = algo
        self.via = via
        self.impl = f"tokensift-{algo}"
        self._lib = None

    def lib(self):
        if self._lib is None:
            sys.path.insert(0, HERE)
            import tokensift_ctypes as tc

            self.tc = tc
            self._lib = tc.Library(tc.find_library(REPO))
            # A CPU dry run drives the CPU backend through the same adapter.
            self.backend = tc.BACKEND_CUDA if DEVICE == "cuda" else tc.BACKEND_CPU
            if not self._lib.backend_available(self.backend):
                raise RuntimeError(f"{self._lib.path}: {'CUDA' if DEVICE == 'cuda' else 'CPU'} "
                                   "backend not available")
        return self._lib

    def prepare(self, cell: Cell, seeds=None):
        r = self._prepare_ctypes(cell, seeds) if self.via == "ctypes" else None
        if self.via == "package":
            r = self._prepare_package(cell, seeds)
            try:
                r.kept = self._prepare_ctypes(cell, seeds).kept
            except Exception:  # noqa: BLE001 - no library beside the package: no kept counts
                r.kept = None
        return r

    def _prepare_package(self, cell: Cell, seeds):
        torch = _torch()
        ts = tokensift_package()
        tokens = torch.empty(cell.batch, dtype=torch.int32, device=DEVICE)
        seed = seeds if seeds is not None else 20261129
        kw = dict(temperature=cell.temperature, top_k=cell.top_k, top_p=cell.top_p, min_p=cell.min_p,
                  seed=seed, offset=0, out=tokens, algo=self.algo)
        try:
            ws = ts.workspace_size(cell.batch, cell.vocab, "float32" if cell.dtype == "fp32" else "bfloat16",
                                   device=cell.bufs[0].device, algo=self.algo)
        except Exception:  # noqa: BLE001 - informational only
            ws = 0
        return Runner(run=lambda i: ts.sample(cell.bufs[i], **kw), workspace_bytes=ws,
                      note="Python package")

    def _prepare_ctypes(self, cell: Cell, seeds):
        torch = _torch()
        lib = self.lib()
        s = self.tc.Sampler(lib, self.backend, self.algo)

        def stream():
            return torch.cuda.current_stream().cuda_stream if DEVICE == "cuda" else 0

        ws_bytes = s.workspace_size(cell.batch, cell.vocab, cell.dtype)
        ws = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device=DEVICE)
        s.workspace_init(ws.data_ptr(), ws_bytes, stream())
        tokens = torch.empty(cell.batch, dtype=torch.int32, device=DEVICE)
        kept = torch.empty(cell.batch, dtype=torch.int32, device=DEVICE)
        status = torch.empty(cell.batch, dtype=torch.int32, device=DEVICE)
        s.set_params(cell.temperature, cell.top_k, cell.top_p, cell.min_p, seed=20261129, offset=0,
                     seed_per_row=seeds.data_ptr() if seeds is not None else 0)

        def call(x, kept_ptr=0):
            s.sample(x.data_ptr(), cell.batch, cell.vocab, x.stride(0), cell.dtype, tokens.data_ptr(),
                     ws.data_ptr(), ws_bytes, stream(),
                     row_status=status.data_ptr(), kept_counts=kept_ptr)
            return tokens

        def run(i):
            return call(cell.bufs[i])

        def kept_counts(x):
            call(x, kept.data_ptr())
            if DEVICE == "cuda":
                torch.cuda.synchronize()
            return kept.clone()

        r = Runner(run=run, kept=kept_counts, workspace_bytes=ws_bytes, note="C ABI via ctypes")
        r._keep = (s, ws, seeds)  # keep alive
        return r


# ------------------------------------------------------------ FlashInfer --
class FlashInfer:
    """path: 'top_k_first' / 'joint' = top_k_top_p_sampling_from_logits with that
    filter_apply_order; 'probs' = FlashInfer softmax, then the matching
    *_sampling_from_probs."""

    def __init__(self, path):
        self.path = path
        self.impl = f"flashinfer-{path}"
        self._fi = None

    def fi(self):
        if self._fi is None:
            sys.path.insert(0, HERE)
            import flashinfer_loader

            self._fi = flashinfer_loader.load_sampling()
        return self._fi

    def prepare(self, cell: Cell, seeds=None):
        torch = _torch()
        fi = self.fi()
        if cell.greedy:
            raise NotApplicable("no greedy path (torch-argmax is the reference)")
        if cell.temperature != 1.0 and self.path != "probs":
            raise NotApplicable("temperature is applied only by the probs path")
        k = cell.top_k if cell.k_on else cell.vocab
        p = cell.top_p
        note = ""
        # Seed/offset as device tensors keep the calls capturable; the
        # frequency test (seeds given) draws from the default generator instead.
        rng = {} if seeds is not None else dict(
            seed=torch.tensor([20261129], dtype=torch.int64, device=DEVICE),
            offset=torch.tensor([0], dtype=torch.int64, device=DEVICE))
        if self.path in ("top_k_first", "joint"):
            # Without top-k, vLLM (and this benchmark) take the probs path: a k
            # outside (0, V) is not a documented input of these kernels.
            if not cell.k_on or cell.min_p > 0:
                raise NotApplicable("top-k cases only (p-only: flashinfer-probs)")

            def sample(x):
                return fi.top_k_top_p_sampling_from_logits(x, k, p, filter_apply_order=self.path,
                                                           **rng)
        else:
            def probs_of(x):
                return fi.softmax(x, temperature=cell.temperature if cell.temperature != 1.0 else None)

            if cell.k_on and cell.p_on:
                def sample(x):
                    return fi.top_k_top_p_sampling_from_probs(probs_of(x), k, p,
                                                              filter_apply_order="top_k_first", **rng)
            elif cell.p_on:
                def sample(x):
                    return fi.top_p_sampling_from_probs(probs_of(x), p, **rng)
            elif cell.k_on:
                def sample(x):
                    return fi.top_k_sampling_from_probs(probs_of(x), k, **rng)
            elif cell.min_p > 0:
                def sample(x):
                    return fi.min_p_sampling_from_probs(probs_of(x), cell.min_p, **rng)
            else:
                def sample(x):
                    return fi.sampling_from_probs(probs_of(x), **rng)

        convert = False
        if cell.dtype != "fp32":
            # Native bf16 where FlashInfer takes it; else convert, inside the timed call.
            try:
                sample(cell.bufs[0])
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                convert = True
                note = f"bf16->fp32 conversion counted ({type(e).__name__})"

        def run(i):
            x = cell.bufs[i]
            return sample(x.float() if convert else x)

        def mask(x):
            x = _as_fp32(x)
            if self.path == "joint":
                # Joint: both filters against the full softmax (by design, not the contract).
                probs = torch.softmax(x, dim=-1)
                keep = torch.ones_like(x, dtype=torch.bool)
                if cell.k_on:
                    keep &= fi.top_k_renorm_probs(probs, k) > 0
                if cell.p_on:
                    keep &= fi.top_p_renorm_probs(probs, p) > 0
                return keep
            if cell.min_p > 0 or not (cell.k_on or cell.p_on):
                return None  # min-p / plain: no mask exposed
            z = x / cell.temperature if cell.temperature != 1.0 else x
            if cell.k_on:
                z = fi.top_k_mask_logits(z, k)
            probs = torch.softmax(z, dim=-1)
            if cell.p_on:
                probs = fi.top_p_renorm_probs(probs, p)
            return probs > 0

        return Runner(run=run, mask=mask, note=note)


# ------------------------------------------------------------ vLLM Qrita --
class Qrita:
    impl = "qrita"

    def __init__(self):
        self._mod = None

    def mod(self):
        if self._mod is None:
            peers = os.path.join(REPO, ".peers")
            if peers not in sys.path:
                sys.path.insert(0, peers)
            import importlib

            self._mod = importlib.import_module("vllm.v1.sample.ops.topk_topp_triton")
        return self._mod

    def prepare(self, cell: Cell, seeds=None):
        torch = _torch()
        m = self.mod()
        if not (cell.k_on or cell.p_on) or cell.min_p > 0:
            raise NotApplicable("Qrita masks top-k/top-p only")
        b = cell.batch
        k = torch.full((b,), cell.top_k, dtype=torch.int32, device=DEVICE) if cell.k_on else None
        p = torch.full((b,), cell.top_p, dtype=torch.float32, device=DEVICE) if cell.p_on else None
        topp_only = cell.p_on and not cell.k_on

        def masked(x):
            # Qrita masks in place: work on a copy (it stands in for the
            # temperature pass vLLM makes over its own logits buffer).
            z = x.to(torch.float32, copy=True)
            if cell.temperature != 1.0:
                z.div_(cell.temperature)
            return m.apply_top_k_top_p_triton(z, k, p, has_topp_only_rows=topp_only)

        def run(i):
            z = masked(cell.bufs[i])
            return _race(torch, z.softmax(dim=-1, dtype=torch.float32))

        note = "fp32 copy of the logits counted" + (" (from bf16)" if cell.dtype != "fp32" else "")
        return Runner(run=run, mask=lambda x: torch.isfinite(masked(x)), note=note)


# --------------------------------------------------------- torch natives --
class TorchSort:
    """Sort-based top-k/top-p/min-p as vLLM's PyTorch path does it: sort
    ascending, mask, scatter back, softmax, exponential race."""

    impl = "torch-sort"

    def prepare(self, cell: Cell, seeds=None):
        torch = _torch()
        if cell.greedy:
            raise NotApplicable("greedy: torch-argmax")

        def masked(x):
            z = x.float()
            if cell.temperature != 1.0:
                z = z / cell.temperature
            if cell.min_p > 0:
                probs = z.softmax(dim=-1)
                top = probs.amax(dim=-1, keepdim=True)
                z = z.masked_fill(probs < cell.min_p * top, float("-inf"))
            if not (cell.k_on or cell.p_on):
                return z
            vals, idx = z.sort(dim=-1, descending=False)
            v = z.shape[-1]
            if cell.k_on:
                kth = vals[:, v - cell.top_k:v - cell.top_k + 1]
                vals = vals.masked_fill(vals < kth, float("-inf"))
            if cell.p_on:
                cum = vals.softmax(dim=-1).cumsum(dim=-1)
                drop = cum <= 1 - cell.top_p
                drop[:, -1] = False  # the top token always stays
                vals = vals.masked_fill(drop, float("-inf"))
            return torch.empty_like(vals).scatter_(-1, idx, vals)

        def run(i):
            return _race(torch, masked(cell.bufs[i]).softmax(dim=-1))

        return Runner(run=run, mask=lambda x: torch.isfinite(masked(x)))


class TorchTopk:
    """torch.topk, then top-p on the k sorted survivors and the race: a lower
    reference for the top-k cases."""

    impl = "torch-topk"

    def prepare(self, cell: Cell, seeds=None):
        torch = _torch()
        if not cell.k_on or cell.min_p > 0:
            raise NotApplicable("top-k cases only")

        def kept(x):
            z = x.float()
            if cell.temperature != 1.0:
                z = z / cell.temperature
            vals, ids = torch.topk(z, cell.top_k, dim=-1)
            if cell.p_on:
                probs = vals.softmax(dim=-1)
                before = probs.cumsum(dim=-1) - probs
                vals = vals.masked_fill(before >= cell.top_p, float("-inf"))
            return vals, ids

        def run(i):
            vals, ids = kept(cell.bufs[i])
            return ids.gather(1, _race(torch, vals.softmax(dim=-1)).unsqueeze(1)).squeeze(1)

        def mask(x):
            vals, ids = kept(x)
            out = torch.zeros(x.shape, dtype=torch.bool, device=x.device)
            return out.scatter_(1, ids, torch.isfinite(vals))

        return Runner(run=run, mask=mask)


class TorchArgmax:
    impl = "torch-argmax"

    def prepare(self, cell: Cell, seeds=None):
        return Runner(run=lambda i: cell.bufs[i].argmax(dim=-1),
                      note="greedy lower reference, timed once per shape")


def all_gpu_impls(algos=("pivot", "sort", "auto"), tokensift_via="ctypes"):
    return ([TokensiftGpu(a, tokensift_via) for a in algos]
            + [FlashInfer("top_k_first"), FlashInfer("joint"), FlashInfer("probs"),
               Qrita(), TorchSort(), TorchTopk()])
