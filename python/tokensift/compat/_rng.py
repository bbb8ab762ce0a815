"""Seeds and offsets for the compat layers, from torch generators or the caller.

tokensift draws row r from Philox keyed by (seed[r], offset[r]); two rows with
the same key, offset and logits draw the same token.  Engines that pass one
seed for a whole batch expect independent rows, so a batch-wide seed is spread
over the rows as ``seed + r * GOLDEN`` (mod 2^64, computed on the device): a
distinct Philox key per row.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import torch

GOLDEN = 0x9E3779B97F4A7C15  # odd: r -> seed + r * GOLDEN is a bijection mod 2^64
_MASK = (1 << 64) - 1


def _signed(x: int) -> int:
    x &= _MASK
    return x - (1 << 64) if x >= 1 << 63 else x


def _spread(seed: Any, rows: int, device: torch.device) -> torch.Tensor:
    """int64 per-row keys ``seed + r * GOLDEN``; seed is an int or a 0-d/1-element tensor."""
    r = torch.arange(rows, dtype=torch.int64, device=device)
    # int64 arithmetic wraps modulo 2^64 on both CPU and CUDA.
    spread = r * _signed(GOLDEN)
    if isinstance(seed, torch.Tensor):
        return spread + seed.reshape(-1)[:1].to(device=device, dtype=torch.int64)
    return spread + _signed(int(seed))


def generator_seed_offset(
    generator: Optional[torch.Generator], device: torch.device, increment: int
) -> Tuple[int, int]:
    """(seed, offset) taken from a torch generator, which is then advanced.

    A CUDA generator's state is its (seed, Philox offset): read on the host
    and advanced by ``increment`` rounded up to 4, as FlashInfer does.  A CPU
    generator (Mersenne Twister) gives a fresh 63-bit key per call instead.
    """
    if generator is None:
        if device.type == "cuda":
            index = device.index if device.index is not None else torch.cuda.current_device()
            generator = torch.cuda.default_generators[index]
        else:
            generator = torch.default_generator
    if generator.device.type == "cuda":
        state = generator.get_state()
        seed, offset = (int(v) for v in state.view(torch.int64)[:2].tolist())
        advanced = torch.tensor([seed, offset + (increment + 3) // 4 * 4], dtype=torch.int64)
        generator.set_state(advanced.view(torch.uint8))
        return seed & _MASK, offset & _MASK
    key = int(torch.randint(0, 2**62, (1,), generator=generator).item())
    return key, 0


def row_seeds_offsets(
    seed: Any,
    offset: Any,
    generator: Optional[torch.Generator],
    rows: int,
    device: torch.device,
    increment: int,
) -> Tuple[torch.Tensor, Any]:
    """Per-row int64 keys and the offset (a number or a per-row tensor).

    FlashInfer's conventions: seed and offset each an int or a 1-D int64/uint64
    tensor of length 1 or ``rows``; if either is None both come from
    ``generator`` (default: the device's default generator).  A length-``rows``
    seed tensor is used row by row; a single seed is spread over the rows.
    """
    if seed is None or offset is None:
        seed, offset = generator_seed_offset(generator, device, increment)
    if isinstance(seed, torch.Tensor) and seed.numel() == rows and rows != 1:
        seeds = seed.reshape(rows).to(device=device)
        if seeds.dtype != torch.int64 and not (hasattr(torch, "uint64") and seeds.dtype == torch.uint64):
            seeds = seeds.to(torch.int64)
    else:
        seeds = _spread(seed, rows, device)
    if isinstance(offset, torch.Tensor):
        offset = offset.reshape(-1).to(device=device)
        if offset.numel() == 1:
            offset = offset.expand(rows)
        if offset.dtype != torch.int64 and not (hasattr(torch, "uint64") and offset.dtype == torch.uint64):
            offset = offset.to(torch.int64)
        offset = offset.contiguous()
    else:
        offset = int(offset) & _MASK
    return seeds, offset
