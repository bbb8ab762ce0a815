"""tokensift.sample: one token per row, on the logits' device."""

from __future__ import annotations

from typing import Any, Optional, Tuple, Union

from . import _arrays, _ext
from ._errors import TokensiftError

ALGOS = {"auto": 0, "pivot": 1, "sort": 2}

Param = Union[float, int, Any]  # a number, or a 1-D array with one value per row


def algo_code(algo: str) -> int:
    try:
        return ALGOS[algo]
    except (KeyError, TypeError):
        raise TokensiftError(
            "INVALID_ALGO", f"unknown algo {algo!r}; expected one of {sorted(ALGOS)}"
        ) from None


def _jax_view(x: Any) -> Any:
    """A zero-copy torch (else CuPy) view of a JAX array, after JAX has produced it.

    JAX exposes no current stream, so its array is waited for on the host
    (block_until_ready): the one synchronizing path of this package.
    """
    x.block_until_ready()
    try:
        import torch.utils.dlpack as tdl

        return tdl.from_dlpack(x)
    except ImportError:
        import cupy

        return cupy.from_dlpack(x)


def sample(
    logits: Any,
    *,
    temperature: Param = 1.0,
    top_k: Param = 0,
    top_p: Param = 1.0,
    min_p: Param = 0.0,
    seed: Param = 0,
    offset: Param = 0,
    out: Optional[Any] = None,
    return_logprobs: bool = False,
    return_status: bool = False,
    algo: str = "auto",
    stream: Optional[Any] = None,
    workspace: Optional[Any] = None,
) -> Union[Any, Tuple[Any, ...]]:
    """Sample one token per row of ``logits`` (docs/semantics.md).

    Per row: temperature -> min_p -> top_k -> top_p -> an exponential-race draw
    keyed by Philox(seed, offset).  The result of a row depends only on its own
    logits, parameters, seed and offset, never on the batch or the backend.

    Args:
        logits: ``(B, V)`` or ``(V,)`` array of float32, float16 or bfloat16 from
            NumPy (CPU backend), torch, CuPy or JAX (CUDA backend when the array
            is on a CUDA device, CPU backend for torch CPU tensors).  Rows may
            have any stride; elements within a row must be contiguous.
        temperature: ``T >= 0``; ``T < 1e-5`` is greedy (argmax, lowest index).
        top_k: keep the first k tokens in (logit desc, index asc) order; 0
            disables.  Exactly k: ties at the boundary keep their lowest indices.
        top_p: ``0 < p <= 1``; 1 disables.
        min_p: ``0 <= min_p <= 1``; 0 disables.
        seed, offset: the Philox key and counter (e.g. request seed and decode
            step); 64-bit, given as int64 or uint64 arrays per row.
            Each of the six parameters is a number or a 1-D array of B values on
            the logits' device (converted there to float32 / int32 / int64).
        out: optional int32 array of B elements to write the tokens into.
        return_logprobs: also return the float32 log-probability of each token
            under the filtered, renormalised distribution.
        return_status: also return the int32 row status (0 OK, 1 NaN input,
            2 no valid token, 3 invalid per-row parameter read on the device);
            rows that are not OK get token -1.
        algo: ``"auto"``, ``"pivot"`` or ``"sort"``.
        stream: CUDA stream to run on: an int handle or an object with
            ``cuda_stream``, ``ptr`` or ``__cuda_stream__``.  Default: torch's
            (or CuPy's) current stream.  The call never synchronizes.
        workspace: optional device (or host) byte buffer of at least
            :func:`workspace_size` bytes, initialised once with
            :func:`init_workspace`.  By default a workspace cached per (device,
            stream) is used; it grows only outside CUDA-graph capture.

    Returns:
        ``tokens`` (int32, shape ``(B,)``, or ``()`` for 1-D logits, on the
        logits' device, in the caller's array library); with
        ``return_logprobs`` / ``return_status`` a tuple
        ``(tokens[, logprobs][, status])``.

    Raises:
        TokensiftError: an argument error, with the library's status name in
            ``.status`` and its message (before any work is launched).
    """
    kit = _arrays.kit_of(logits)
    if kit == "jax":
        import jax.dlpack

        def to_view(v: Any) -> Any:
            return _jax_view(v) if _arrays.kit_of_or_none(v) == "jax" else v

        result = sample(
            _jax_view(logits), temperature=to_view(temperature), top_k=to_view(top_k),
            top_p=to_view(top_p), min_p=to_view(min_p), seed=to_view(seed),
            offset=to_view(offset), out=out, return_logprobs=return_logprobs,
            return_status=return_status, algo=algo, stream=stream, workspace=workspace,
        )
        if isinstance(result, tuple):
            return tuple(jax.dlpack.from_dlpack(r) for r in result)
        return jax.dlpack.from_dlpack(result)

    code = algo_code(algo)
    if kit == "torch" and logits.requires_grad:
        logits = logits.detach()  # DLPack cannot export a tensor that tracks gradients
    one_row = getattr(logits, "ndim", 2) == 1
    x = _arrays.add_row_axis(logits, kit) if one_row else logits
    dtype_override = -1
    if kit == "numpy" and _arrays.bf16_numpy(x):
        import numpy as np

        x, dtype_override = x.view(np.uint16), _arrays.DTYPE_BF16
    rows = int(x.shape[0]) if getattr(x, "ndim", 0) == 2 else 0

    tokens = out if out is not None else _arrays.empty(rows, "int32", x, kit)
    if one_row and out is not None:
        tokens = out.reshape(1)
    logprobs = _arrays.empty(rows, "float32", x, kit) if return_logprobs else None
    status = _arrays.empty(rows, "int32", x, kit) if return_status else None

    def give(v: Any) -> Any:
        return _arrays.export(v, kit)

    _ext.sample(
        give(x),
        dtype_override=dtype_override,
        temperature=give(_arrays.row_param(temperature, "float32", rows, x, kit)),
        min_p=give(_arrays.row_param(min_p, "float32", rows, x, kit)),
        top_k=give(_arrays.row_param(top_k, "int32", rows, x, kit)),
        top_p=give(_arrays.row_param(top_p, "float32", rows, x, kit)),
        seed=give(_arrays.row_param(seed, "int64", rows, x, kit)),
        offset=give(_arrays.row_param(offset, "int64", rows, x, kit)),
        tokens=give(tokens),
        row_status=give(status),
        logprobs=give(logprobs),
        kept_counts=None,
        algo=code,
        stream=_arrays.stream_handle(stream, x, kit),
        workspace=give(workspace),
    )

    if one_row:
        tokens = tokens.reshape(())
        logprobs = logprobs.reshape(()) if logprobs is not None else None
        status = status.reshape(()) if status is not None else None
    if not (return_logprobs or return_status):
        return tokens
    result = (tokens,)
    if return_logprobs:
        result += (logprobs,)
    if return_status:
        result += (status,)
    return result
