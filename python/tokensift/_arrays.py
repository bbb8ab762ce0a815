"""What tokensift needs from the caller's array library, for each library.

Arrays cross into the extension through DLPack; this module only allocates the
outputs, converts per-row parameters to the dtypes the library reads (with the
array's own library, on the array's own device), and finds the caller's CUDA
stream.  Nothing here copies logits or synchronizes a device.
"""

from __future__ import annotations

import numbers
from typing import Any, Optional

import numpy as np

# tokensift_dtype values (tokensift.h)
DTYPE_F32, DTYPE_BF16, DTYPE_F16 = 0, 1, 2

_NP_DTYPES = {"int32": np.int32, "float32": np.float32, "int64": np.int64, "uint64": np.uint64}


def kit_of(x: Any) -> str:
    """Which array library `x` belongs to: numpy, torch, cupy or jax."""
    module = type(x).__module__ or ""
    if isinstance(x, np.ndarray):
        return "numpy"
    if module.startswith("torch"):
        return "torch"
    if module.startswith("cupy"):
        return "cupy"
    if module.startswith(("jax", "jaxlib")):
        return "jax"  # run through torch or CuPy views of the same memory (_sample.py)
    raise TypeError(
        f"unsupported array type {type(x).__name__}: pass a NumPy, torch, CuPy or JAX array"
    )


_PLAIN = (int, float, bool)


def is_scalar(x: Any) -> bool:
    if type(x) in _PLAIN:  # the common case, without the ABC machinery
        return True
    return isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, complex)


def on_cuda(x: Any, kit: str) -> bool:
    if kit == "numpy":
        return False
    if kit == "torch":
        return x.device.type == "cuda"
    return kit == "cupy"


def bf16_numpy(x: np.ndarray) -> bool:
    dtype = x.dtype  # ml_dtypes' bfloat16 is a user-defined ('V') dtype NumPy cannot export
    return dtype.kind == "V" and dtype.name == "bfloat16"


def add_row_axis(x: Any, kit: str) -> Any:
    return x.unsqueeze(0) if kit == "torch" else x[None, :]


def empty(n: int, dtype: str, like: Any, kit: str) -> Any:
    """A 1-D array of `n` elements of `dtype` on `like`'s device."""
    if kit == "numpy":
        return np.empty(n, dtype=_NP_DTYPES[dtype])
    if kit == "torch":
        import torch

        return torch.empty(n, dtype=getattr(torch, dtype), device=like.device)
    if kit == "cupy":
        import cupy

        with cupy.cuda.Device(like.device.id):
            return cupy.empty(n, dtype=_NP_DTYPES[dtype])
    raise TypeError(f"cannot allocate outputs for {kit} arrays")


def row_param(value: Any, dtype: str, rows: int, like: Any, kit: str) -> Any:
    """A Python number, or a contiguous 1-D array of `dtype` on `like`'s device.

    dtype "int64" means the 64 seed/offset bits: int64 and uint64 arrays pass
    unchanged (read as uint64), other integer arrays are widened.
    """
    if type(value) is float and dtype == "float32":
        return value
    if is_scalar(value):
        if dtype in ("int64", "uint64"):
            return int(value) & 0xFFFFFFFFFFFFFFFF
        if dtype == "int32":
            return int(value)
        return float(value)
    if kit == "torch":
        return _torch_param(value, dtype, rows, like)
    if kit == "cupy":
        import cupy

        arr = cupy.asarray(value)
        arr = _numpy_like_cast(arr, dtype)
        return cupy.ascontiguousarray(arr.reshape(rows) if arr.ndim == 0 else arr)
    arr = np.asarray(value)
    if arr.ndim == 0:
        return row_param(arr.item(), dtype, rows, like, kit)
    return np.ascontiguousarray(_numpy_like_cast(arr, dtype))


def _numpy_like_cast(arr: Any, dtype: str) -> Any:
    if dtype == "int64":
        if arr.dtype.kind in "iu" and arr.dtype.itemsize == 8:
            return arr
        return arr.astype(np.int64)
    return arr if arr.dtype == _NP_DTYPES[dtype] else arr.astype(_NP_DTYPES[dtype])


def _torch_param(value: Any, dtype: str, rows: int, like: Any) -> Any:
    import torch

    if not isinstance(value, torch.Tensor):
        # Lists and NumPy arrays: one host-to-device copy of B values.
        value = torch.as_tensor(np.asarray(value), device=like.device)
    if dtype == "int64":
        keep = (torch.int64,) + ((torch.uint64,) if hasattr(torch, "uint64") else ())
        if value.dtype not in keep:
            value = value.to(torch.int64)
    else:
        value = value.to(getattr(torch, dtype))
    if value.dim() == 0:
        value = value.reshape(1).expand(rows)  # a 0-d device tensor: no .item(), no sync
    return value.contiguous()


def stream_handle(stream: Any, like: Any, kit: str) -> int:
    """The cudaStream_t to run on, as an integer (0: the legacy default stream)."""
    if stream is not None:
        if isinstance(stream, int):
            return stream
        if hasattr(stream, "__cuda_stream__"):
            return int(stream.__cuda_stream__()[1])
        if hasattr(stream, "cuda_stream"):  # torch.cuda.Stream
            return int(stream.cuda_stream)
        if hasattr(stream, "ptr"):  # cupy.cuda.Stream
            return int(stream.ptr)
        raise TypeError(f"stream must be an int handle or a CUDA stream object, got {type(stream)}")
    if kit == "torch" and like.device.type == "cuda":
        import torch

        return int(torch.cuda.current_stream(like.device).cuda_stream)
    if kit == "cupy":
        import cupy

        with cupy.cuda.Device(like.device.id):
            return int(cupy.cuda.get_current_stream().ptr)
    return 0


def kit_of_or_none(x: Any) -> Optional[str]:
    try:
        return kit_of(x)
    except TypeError:
        return None


def export(x: Any, kit: str) -> Any:
    """What to hand to the extension for array `x`.

    CUDA arrays go as DLPack capsules made with ``stream=-1``: without it,
    torch and CuPy assume the consumer runs on the legacy default stream and
    make that stream wait on their current one, an extra dependency that also
    breaks CUDA-graph capture on a side stream.  tokensift runs on the stream
    it is given (the current one by default), so no producer-side ordering is
    needed; with an explicit ``stream=``, ordering the inputs before it is the
    caller's job, as for any CUDA library call.
    """
    if kit == "numpy" or x is None or type(x) in _PLAIN:
        return x
    if not on_cuda(x, kit) or not hasattr(x, "__dlpack__"):
        return x
    try:
        return x.__dlpack__(stream=-1)
    except (TypeError, ValueError, BufferError):
        return x
