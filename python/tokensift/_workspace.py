"""Caller-managed workspaces, for those who pass ``workspace=`` themselves."""

from __future__ import annotations

from typing import Any, Optional, Union

from . import _arrays, _ext
from ._sample import algo_code

_DTYPES = {"float32": _arrays.DTYPE_F32, "bfloat16": _arrays.DTYPE_BF16, "float16": _arrays.DTYPE_F16}


def _device(device: Any) -> tuple:
    """(DLPack device type, ordinal) from "cpu", "cuda", "cuda:1", an int or a torch.device."""
    if isinstance(device, int):
        return 2, device
    text = str(device)
    if text == "cpu":
        return 1, 0
    if text.startswith("cuda"):
        return 2, int(text.split(":")[1]) if ":" in text else 0
    raise ValueError(f"unknown device {device!r}")


def workspace_size(
    rows: int,
    vocab: int,
    dtype: Union[str, Any] = "float32",
    device: Any = "cpu",
    algo: str = "auto",
) -> int:
    """Bytes of workspace a call with this shape needs on ``device`` (may be 0)."""
    name = str(dtype).split(".")[-1]
    if name not in _DTYPES:
        raise ValueError(f"dtype must be float32, float16 or bfloat16, got {dtype!r}")
    dev_type, dev_id = _device(device)
    return _ext.workspace_size(rows, vocab, _DTYPES[name], dev_type, dev_id, algo_code(algo))


def init_workspace(workspace: Any, *, stream: Optional[Any] = None, algo: str = "auto") -> None:
    """Zero-fills a workspace on ``stream``.  Optional: calls need no
    particular workspace contents, so one buffer serves calls of any shape and
    algorithm on one stream.

    ``workspace`` is any contiguous 1-D array (uint8 is natural) on the device
    the calls will run on.
    """
    kit = _arrays.kit_of(workspace)
    handle = _arrays.stream_handle(stream, workspace, kit)
    _ext.init_workspace(_arrays.export(workspace, kit), algo_code(algo), handle)
