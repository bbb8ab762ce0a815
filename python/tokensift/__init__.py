"""tokensift: LLM token sampling on the GPU with exact, defined semantics.

``tokensift.sample(logits, temperature=..., top_k=..., top_p=..., min_p=...,
seed=..., offset=...)`` draws one token per row.  Drop-in layers for engines:
``tokensift.compat.flashinfer`` (flashinfer.sampling's functions) and
``tokensift.compat.vllm`` (vLLM's TopKTopPSampler).  See docs/python.md.
"""

from __future__ import annotations

from . import _ext
from ._errors import TokensiftError
from ._sample import sample
from ._workspace import init_workspace, workspace_size

_ext.set_error_type(TokensiftError)

__version__ = "0.1.0"

ROW_OK, ROW_NAN_INPUT, ROW_NO_VALID_TOKEN, ROW_INVALID_PARAM = 0, 1, 2, 3


def cuda_available() -> bool:
    """True when the CUDA backend is compiled in and a device is usable."""
    return bool(_ext.backend_available(1))


def library_version() -> str:
    """Version string of the linked libtokensift."""
    return _ext.version()


__all__ = [
    "TokensiftError",
    "sample",
    "workspace_size",
    "init_workspace",
    "cuda_available",
    "library_version",
    "ROW_OK",
    "ROW_NAN_INPUT",
    "ROW_NO_VALID_TOKEN",
    "ROW_INVALID_PARAM",
]
