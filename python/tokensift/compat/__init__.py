"""Drop-in layers for engines that call other samplers.

- :mod:`tokensift.compat.flashinfer`: the functions of ``flashinfer.sampling``
  that engines call, with FlashInfer's names, signatures and return
  conventions.
- :mod:`tokensift.compat.vllm`: vLLM's ``TopKTopPSampler`` forward.

Both need torch; they are imported on first use.
"""
