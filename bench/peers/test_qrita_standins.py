"""The stand-in dispatcher binds every parameter of vLLM's Qrita kernels, with
the values vLLM's own dispatcher would pass (no GPU: the launch is not made).
Skipped unless scripts/prep-peers.sh has filled .peers/ and torch + triton
are installed."""
import inspect
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEERS = os.path.join(REPO, ".peers")
if not os.path.isdir(os.path.join(PEERS, "vllm")):
    pytest.skip("no .peers/vllm (run scripts/prep-peers.sh)", allow_module_level=True)
torch = pytest.importorskip("torch")
pytest.importorskip("triton")
sys.path.insert(0, PEERS)
qrita = pytest.importorskip("vllm.v1.sample.ops.topk_topp_triton")
helper = sys.modules["vllm.model_executor.warmup.jit_warmup_triton_helper"]


def bind(dispatcher, *args):
    dispatch = dispatcher.__wrapped__
    spec = dispatch(*args)
    bound = inspect.signature(dispatch).bind(*args)
    bound.apply_defaults()
    names = tuple(dispatcher.kernel.arg_names)
    return names, helper._bind(names, dict(bound.arguments), spec[1])


def test_monolithic_kernel_arguments():
    logits = torch.randn(8, 3000)[:, :2000]  # a row stride that is not the vocab
    buf = torch.empty(8, 2000)
    tables = torch.empty(200), torch.empty(200)
    k = torch.full((8,), 50, dtype=torch.int32)
    p = torch.full((8,), 0.9)
    names, kw = bind(qrita._topk_topp, logits, buf, tables[0], tables[1], k, p, float("-inf"), 132)
    assert set(names) <= set(kw)
    assert kw["LOGITS"] is logits and kw["BUFFER"] is buf and kw["K"] is k and kw["P"] is p
    assert kw["LOGITS_STRIDE_0"] == 3000
    assert kw["PERCENTILE_TO_STD_TABLE"] is tables[0] and kw["NORMAL_CDF_TO_SIGMA_TABLE"] is tables[1]
    assert kw["MASK_VALUE"] == float("-inf") and kw["VOCAB_SIZE"] == 2000 and kw["BATCH_SIZE"] == 8


def test_split_pipeline_kernel_arguments():
    logits = torch.randn(4, 2000)
    stats = torch.empty(64 * 32, 4)
    parts = torch.empty(64, 5, 32, 8, 3)
    p = torch.full((4,), 0.9)
    names, kw = bind(qrita._topp_split_stats, logits, stats, None, p, 132)
    assert set(names) <= set(kw) and kw["STATS"] is stats and kw["LOGITS_STRIDE_0"] == 2000
    names, kw = bind(qrita._topp_split_step, logits, stats, parts, None, p, 3, 132)
    assert set(names) <= set(kw) and kw["ROUND"] == 3 and kw["PARTS"] is parts
    names, kw = bind(qrita._topp_split_mask, logits, stats, parts, None, p, float("-inf"), 132)
    assert set(names) <= set(kw) and kw["MASK_VALUE"] == float("-inf")


def test_unbound_arguments_are_an_error():
    with pytest.raises(TypeError, match="unbound"):
        helper._bind(("A", "B_STRIDE_0"), {"a": 1}, {})
