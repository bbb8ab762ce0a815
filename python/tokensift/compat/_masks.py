"""FlashInfer's filter semantics as torch masks, where they differ from the contract.

The contract (docs/semantics.md) keeps exactly k tokens (ties by index) and
measures top-p over the top-k survivors.  FlashInfer keeps every token equal to
the k-th value, and its "joint" order tests top-k and top-p against the same
full distribution.  These helpers build those masks; the draw itself is always
tokensift's.
"""

from __future__ import annotations

from typing import Any

import torch


def _per_row(value: Any, rows: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.reshape(-1).to(device=device, dtype=dtype).expand(rows) if value.numel() == 1 \
            else value.reshape(rows).to(device=device, dtype=dtype)
    return torch.full((rows,), value, dtype=dtype, device=device)


def top_k_keep(x: torch.Tensor, top_k: Any) -> torch.Tensor:
    """True where x is >= the k-th largest value of its row (all ties kept).

    k <= 0 or k >= V keeps the whole row.  Works on logits or probabilities
    (any monotone transform of them).
    """
    rows, vocab = x.shape
    k = _per_row(top_k, rows, x.device, torch.int64)
    disabled = (k <= 0) | (k >= vocab)
    kth_index = (k.clamp(1, vocab) - 1).unsqueeze(1)
    ordered = torch.sort(x, dim=1, descending=True).values
    kth = ordered.gather(1, kth_index)
    return (x >= kth) | disabled.unsqueeze(1)


def top_p_keep(probs: torch.Tensor, top_p: Any) -> torch.Tensor:
    """True for the smallest set of largest probabilities whose mass reaches p
    (ties at the threshold value kept, as FlashInfer's thresholding does)."""
    rows, _ = probs.shape
    p = _per_row(top_p, rows, probs.device, torch.float32).unsqueeze(1)
    ordered = torch.sort(probs.float(), dim=1, descending=True).values
    before = torch.cumsum(ordered.double(), dim=1) - ordered.double()
    inside = before < p.double()
    # The threshold is the smallest probability still inside the set.
    count = inside.sum(dim=1, keepdim=True).clamp(min=1)
    threshold = ordered.gather(1, count - 1)
    return (probs.float() >= threshold) | (p >= 1.0)


def min_p_keep(probs: torch.Tensor, min_p: Any) -> torch.Tensor:
    rows, _ = probs.shape
    m = _per_row(min_p, rows, probs.device, torch.float32).unsqueeze(1)
    pmax = probs.float().max(dim=1, keepdim=True).values
    return probs.float() >= m * pmax
