"""A drop-in for vLLM's ``TopKTopPSampler`` (``vllm.v1.sample.ops.topk_topp_sampler``).

vLLM calls ``sampler(logits, generators, k, p)`` with temperature already
applied, ``generators`` a dict {row: torch.Generator} for the requests that
have their own seed, and ``k`` / ``p`` per-request tensors (or None).  It
returns ``(token_ids, processed_logits)``; this sampler returns int64 token ids
and ``None`` (it does not materialise filtered logits).

Every row, seeded or not, is drawn in one tokensift launch: the generators only
supply per-row Philox keys, gathered on the host (no device work per request).

Semantics are tokensift's contract, in vLLM's own order (top-k, then top-p
over the renormalised top-k survivors).  One difference from vLLM's native
path: a top-k boundary that falls inside a run of equal logits keeps exactly k
tokens, the lowest indices first, where vLLM keeps every token equal to the
k-th value.  ``k <= 0`` or ``k >= vocab`` disables top-k for a row; ``p = 1``
disables top-p.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np
import torch

from .. import _sample
from . import _rng

_MASK = (1 << 64) - 1


def _generator_key(generator: torch.Generator) -> int:
    seed, offset = _rng.generator_seed_offset(generator, generator.device, 4)
    # Fold the generator's position into the key so that every call of a
    # seeded request draws fresh numbers, reproducibly from its seed.
    return (seed * 0x9E3779B97F4A7C15 + offset + 1) & _MASK


def row_seeds(
    rows: int,
    generators: Dict[int, torch.Generator],
    device: torch.device,
    default_generator: Optional[torch.Generator] = None,
) -> torch.Tensor:
    """int64 Philox keys, one per row: from ``generators[row]`` where present,
    else spread from one key drawn from ``default_generator`` (torch's default
    generator of ``device`` when None).  One host-to-device copy."""
    base, offset = _rng.generator_seed_offset(default_generator, device, 4 * rows)
    keys = (np.arange(rows, dtype=np.uint64) * np.uint64(_rng.GOLDEN)
            + np.uint64((base * 0x2545F4914F6CDD1D + offset) & _MASK))
    for row, generator in generators.items():
        keys[row] = np.uint64(_generator_key(generator))
    host = torch.from_numpy(keys.view(np.int64))
    if device.type == "cuda":
        host = host.pin_memory()
    return host.to(device, non_blocking=True)


def sample(
    logits: torch.Tensor,
    generators: Dict[int, torch.Generator],
    k: Optional[torch.Tensor],
    p: Optional[torch.Tensor],
    *,
    seeds: Optional[torch.Tensor] = None,
    offsets: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Token ids (int64, shape ``(batch,)``) for ``logits`` filtered by top-k
    ``k`` then top-p ``p``.

    Per-row randomness comes either from ``generators`` (vLLM's convention) or,
    when ``seeds`` is given, from per-request int64 ``seeds`` and ``offsets``
    tensors on the logits' device (e.g. the request seed and its decode step):
    the CUDA-graph-friendly form, with no host work at all.
    """
    rows = logits.shape[0]
    if seeds is None:
        seeds = row_seeds(rows, generators, logits.device)
        offsets = 0
    elif offsets is None:
        offsets = 0
    top_k = 0 if k is None else k.to(torch.int32).clamp(min=0)
    top_p = 1.0 if p is None else p.to(torch.float32)
    tokens = _sample.sample(logits, top_k=top_k, top_p=top_p, seed=seeds, offset=offsets)
    return tokens.to(torch.int64)


class TopKTopPSampler(torch.nn.Module):
    """vLLM's ``TopKTopPSampler`` interface: ``forward(logits, generators, k, p)``
    returns ``(sampled_token_ids, None)``."""

    def __init__(self, logprobs_mode: str = "raw_logprobs") -> None:
        super().__init__()
        if logprobs_mode in ("processed_logits", "processed_logprobs"):
            raise ValueError(
                "tokensift does not materialise processed logits; use raw_logits or raw_logprobs"
            )
        self.logprobs_mode = logprobs_mode

    def forward(
        self,
        logits: torch.Tensor,
        generators: Dict[int, torch.Generator],
        k: Optional[torch.Tensor],
        p: Optional[torch.Tensor],
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        return sample(logits, generators, k, p), None
