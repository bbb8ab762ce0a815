import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))  # contract_oracle


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def torch_cuda():
    """torch with a CUDA device and a CUDA build of tokensift, else skip."""
    torch = _torch_cuda()
    if torch is None:
        pytest.skip("needs torch with a CUDA device")
    import tokensift

    if not tokensift.cuda_available():
        pytest.skip("tokensift was built without the CUDA backend, or no device")
    return torch


def _devices():
    devices = ["cpu"]
    torch = _torch_cuda()
    if torch is not None:
        import tokensift

        if tokensift.cuda_available():
            devices.append("cuda")
    return devices


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    """Torch device for the compat tests: always cpu, cuda when usable."""
    pytest.importorskip("torch")
    if request.param not in _devices():
        pytest.skip("needs torch with a CUDA device and a CUDA build of tokensift")
    return request.param
