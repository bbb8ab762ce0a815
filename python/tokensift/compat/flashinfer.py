"""``flashinfer.sampling``'s API on top of tokensift.

Swap the import and keep the call sites::

    # from flashinfer.sampling import top_k_top_p_sampling_from_logits
    from tokensift.compat.flashinfer import top_k_top_p_sampling_from_logits

Names, positional order, keyword names and return conventions follow
FlashInfer's documentation (``docs.flashinfer.ai``, ``flashinfer.sampling``).
Every filter here has FlashInfer's documented meaning, which differs from
tokensift's own contract (docs/semantics.md) in three places:

* **top-k keeps every token equal to the k-th largest value** (the contract
  keeps exactly k, ties by index);
* **filter_apply_order="joint"** keeps a token when it passes top-k *and* top-p
  measured on the same, full distribution (the contract, like
  ``"top_k_first"``, measures top-p over the renormalised top-k survivors);
* **probabilities in**: ``*_from_probs`` functions sample from ``probs``
  renormalised, i.e. from ``log(probs)`` as logits (zero-probability tokens are
  never drawn).

The filters are applied as torch masks; the draw is tokensift's exponential
race, so results are reproducible from (seed, offset) and do not depend on the
batch.  Differences from FlashInfer's kernels that callers may notice:

* ``seed`` and ``offset`` work as FlashInfer documents them (an int, or an
  int64/uint64 tensor of length 1 or batch_size; when either is None both come
  from ``generator``, which is then advanced), **and a length-batch_size seed
  tensor really is per row**.  A single seed is spread over the rows
  (``seed + row * 0x9E3779B97F4A7C15``) so that rows stay independent.
* ``deterministic`` is accepted and ignored: tokensift is always deterministic.
* ``check_nan=True`` scans the input on the host (a synchronization), as
  FlashInfer does, and raises ``ValueError``.
* Rows whose filtered distribution is empty or contains NaN/+inf get token -1
  and, with ``return_valid=True``, ``valid=False``.
* The same random numbers are not FlashInfer's: tokens agree in distribution,
  not bit for bit.
"""

from __future__ import annotations

from typing import Optional, Tuple, Union

import torch

from .. import _sample
from . import _masks, _rng

Scalar = Union[int, float]
SampleResult = Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]

__all__ = [
    "softmax",
    "sampling_from_logits",
    "sampling_from_probs",
    "top_p_sampling_from_probs",
    "top_k_sampling_from_probs",
    "min_p_sampling_from_probs",
    "top_k_top_p_sampling_from_logits",
    "top_k_top_p_sampling_from_probs",
    "top_k_mask_logits",
    "top_k_renorm_probs",
    "top_p_renorm_probs",
]

_NEG_INF = float("-inf")


def _check_nan(x: torch.Tensor, check_nan: bool, what: str) -> None:
    if check_nan and bool(torch.isnan(x).any()):
        raise ValueError(f"Input {what} contains NaN.")


def _rows(x: torch.Tensor, indices: Optional[torch.Tensor]) -> torch.Tensor:
    if x.dim() != 2:
        raise ValueError(f"expected a 2-D (batch_size, num_classes) tensor, got shape {tuple(x.shape)}")
    return x if indices is None else x.index_select(0, indices.to(device=x.device, dtype=torch.int64))


def _probs_as_logits(probs: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return torch.log(probs.float())


def _draw(
    logits: torch.Tensor,
    indices: Optional[torch.Tensor],
    generator: Optional[torch.Generator],
    seed,
    offset,
    return_valid: bool,
) -> SampleResult:
    rows = logits.shape[0]
    seeds, offsets = _rng.row_seeds_offsets(seed, offset, generator, rows, logits.device, 4 * rows)
    tokens, status = _sample.sample(logits, seed=seeds, offset=offsets, return_status=True)
    if indices is not None and indices.dtype != torch.int32:
        tokens = tokens.to(indices.dtype)
    if return_valid:
        return tokens, status == 0
    return tokens


def _draw_filtered(probs, indices, check_nan, keep_of, generator, seed, offset, return_valid):
    """The *_from_probs filters: rows of ``probs`` (selected by ``indices``),
    masked by ``keep_of(p)``, drawn by the contract's race over log(probs)."""
    _check_nan(probs, check_nan, "probs")
    p = _rows(probs, indices).float()
    return _draw(_masked(_probs_as_logits(p), keep_of(p)), indices, generator, seed, offset, return_valid)


def _masked(logits: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    return logits.float().masked_fill(~keep, _NEG_INF)


def _renormalised(probs: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    kept = probs.float().masked_fill(~keep, 0.0)
    return kept / kept.sum(dim=1, keepdim=True)


# ------------------------------------------------------------------ softmax --
def softmax(
    logits: torch.Tensor,
    temperature: Optional[Union[torch.Tensor, float]] = None,
    enable_pdl: Optional[bool] = None,
) -> torch.Tensor:
    """Softmax of ``logits / temperature`` over the last dimension, as float32.

    ``temperature``: None (1), a float, or a ``(batch_size,)`` tensor.
    ``enable_pdl`` is accepted for compatibility and has no effect.
    """
    x = logits.float()
    if temperature is not None:
        if isinstance(temperature, torch.Tensor):
            x = x / temperature.to(device=x.device, dtype=torch.float32).reshape(-1, 1)
        else:
            x = x / float(temperature)
    return torch.softmax(x, dim=-1)


# ------------------------------------------------------------------- draws --
def sampling_from_logits(
    logits: torch.Tensor,
    indices: Optional[torch.Tensor] = None,
    deterministic: bool = True,
    generator: Optional[torch.Generator] = None,
    check_nan: bool = False,
    seed: Optional[Union[int, torch.Tensor]] = None,
    offset: Optional[Union[int, torch.Tensor]] = None,
    return_valid: bool = False,
) -> SampleResult:
    """One token per row from ``softmax(logits)`` (no filters).

    ``indices[i] = j`` samples output i from row j (output dtype = indices'
    dtype, else int32).  Returns ``samples`` or, with ``return_valid``,
    ``(samples, valid)``.
    """
    _check_nan(logits, check_nan, "logits")
    return _draw(_rows(logits, indices), indices, generator, seed, offset, return_valid)


def sampling_from_probs(
    probs: torch.Tensor,
    indices: Optional[torch.Tensor] = None,
    deterministic: bool = True,
    generator: Optional[torch.Generator] = None,
    check_nan: bool = False,
    seed: Optional[Union[int, torch.Tensor]] = None,
    offset: Optional[Union[int, torch.Tensor]] = None,
    return_valid: bool = False,
) -> SampleResult:
    """One token per row from the (renormalised) probabilities ``probs``."""
    _check_nan(probs, check_nan, "probs")
    x = _probs_as_logits(_rows(probs, indices))
    return _draw(x, indices, generator, seed, offset, return_valid)


def top_p_sampling_from_probs(
    probs: torch.Tensor,
    top_p: Union[torch.Tensor, float],
    indices: Optional[torch.Tensor] = None,
    deterministic: bool = True,
    generator: Optional[torch.Generator] = None,
    check_nan: bool = False,
    seed: Optional[Union[int, torch.Tensor]] = None,
    offset: Optional[Union[int, torch.Tensor]] = None,
    return_valid: bool = False,
) -> SampleResult:
    """Nucleus sampling: keep the smallest set of largest probabilities whose
    mass reaches ``top_p`` (ties at the threshold kept), renormalise, draw.
    ``top_p``: float or ``(batch_size,)`` tensor (indexed by output row)."""
    return _draw_filtered(probs, indices, check_nan, lambda p: _masks.top_p_keep(p, top_p),
                          generator, seed, offset, return_valid)


def top_k_sampling_from_probs(
    probs: torch.Tensor,
    top_k: Union[torch.Tensor, int],
    indices: Optional[torch.Tensor] = None,
    deterministic: bool = True,
    generator: Optional[torch.Generator] = None,
    check_nan: bool = False,
    seed: Optional[Union[int, torch.Tensor]] = None,
    offset: Optional[Union[int, torch.Tensor]] = None,
    return_valid: bool = False,
) -> SampleResult:
    """Top-k sampling: keep the probabilities >= the k-th largest (**all ties at
    the k-th value kept**, FlashInfer's rule), renormalise, draw."""
    return _draw_filtered(probs, indices, check_nan, lambda p: _masks.top_k_keep(p, top_k),
                          generator, seed, offset, return_valid)


def min_p_sampling_from_probs(
    probs: torch.Tensor,
    min_p: Union[torch.Tensor, float],
    indices: Optional[torch.Tensor] = None,
    deterministic: bool = True,
    generator: Optional[torch.Generator] = None,
    check_nan: bool = False,
    seed: Optional[Union[int, torch.Tensor]] = None,
    offset: Optional[Union[int, torch.Tensor]] = None,
    return_valid: bool = False,
) -> SampleResult:
    """Min-p sampling: keep probabilities >= ``min_p * max(probs)``, renormalise, draw."""
    return _draw_filtered(probs, indices, check_nan, lambda p: _masks.min_p_keep(p, min_p),
                          generator, seed, offset, return_valid)


def _top_k_top_p_keep(probs: torch.Tensor, top_k, top_p, filter_apply_order: str) -> torch.Tensor:
    keep_k = _masks.top_k_keep(probs, top_k)
    if filter_apply_order == "top_k_first":
        return keep_k & _masks.top_p_keep(_renormalised(probs, keep_k), top_p)
    if filter_apply_order == "joint":
        return keep_k & _masks.top_p_keep(probs, top_p)
    raise ValueError(f"Invalid filter_apply_order {filter_apply_order!r}: use 'top_k_first' or 'joint'")


def top_k_top_p_sampling_from_probs(
    probs: torch.Tensor,
    top_k: Union[torch.Tensor, int],
    top_p: Union[torch.Tensor, float],
    indices: Optional[torch.Tensor] = None,
    filter_apply_order: str = "top_k_first",
    deterministic: bool = True,
    generator: Optional[torch.Generator] = None,
    check_nan: bool = False,
    seed: Optional[Union[int, torch.Tensor]] = None,
    offset: Optional[Union[int, torch.Tensor]] = None,
    return_valid: bool = False,
) -> SampleResult:
    """Top-k and top-p from probabilities.

    ``filter_apply_order="top_k_first"``: top-k (ties kept), renormalise, then
    top-p on the survivors.  ``"joint"``: a token is kept when it is in the
    top-k *and* in the top-p set of the full distribution (FlashInfer's joint
    mode; a superset of top_k_first's set when both filters bind).
    """
    return _draw_filtered(probs, indices, check_nan, lambda p: _top_k_top_p_keep(p, top_k, top_p, filter_apply_order),
                          generator, seed, offset, return_valid)


def top_k_top_p_sampling_from_logits(
    logits: torch.Tensor,
    top_k: Union[torch.Tensor, int],
    top_p: Union[torch.Tensor, float],
    indices: Optional[torch.Tensor] = None,
    filter_apply_order: str = "top_k_first",
    deterministic: bool = True,
    generator: Optional[torch.Generator] = None,
    check_nan: bool = False,
    seed: Optional[Union[int, torch.Tensor]] = None,
    offset: Optional[Union[int, torch.Tensor]] = None,
    return_valid: bool = False,
) -> SampleResult:
    """Top-k and top-p from pre-softmax logits: the filters of
    :func:`top_k_top_p_sampling_from_probs` applied to ``softmax(logits)``
    (same ``filter_apply_order`` meanings), then a draw from the kept logits."""
    _check_nan(logits, check_nan, "logits")
    x = _rows(logits, indices)
    keep = _top_k_top_p_keep(torch.softmax(x.float(), dim=-1), top_k, top_p, filter_apply_order)
    return _draw(_masked(x, keep), indices, generator, seed, offset, return_valid)


# ------------------------------------------------------------- transforms --
def top_k_mask_logits(logits: torch.Tensor, top_k: Union[torch.Tensor, int]) -> torch.Tensor:
    """Logits with everything below the k-th largest value set to -inf (ties at
    the k-th value kept); same dtype as ``logits``."""
    return logits.masked_fill(~_masks.top_k_keep(logits, top_k), _NEG_INF)


def top_k_renorm_probs(probs: torch.Tensor, top_k: Union[torch.Tensor, int]) -> torch.Tensor:
    """Probabilities below the k-th largest zeroed (ties kept), rows renormalised."""
    return _renormalised(probs, _masks.top_k_keep(probs, top_k))


def top_p_renorm_probs(probs: torch.Tensor, top_p: Union[torch.Tensor, float]) -> torch.Tensor:
    """Probabilities outside the top-p set zeroed (ties at the threshold kept),
    rows renormalised."""
    return _renormalised(probs, _masks.top_p_keep(probs, top_p))
