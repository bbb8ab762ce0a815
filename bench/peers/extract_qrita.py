"""Takes vLLM's Qrita Triton module (vllm/v1/sample/ops/topk_topp_triton.py)
out of a vllm wheel into DEST/vllm/..., and writes stand-ins for the vLLM
internals it imports.  The stand-ins only launch the kernels the way vLLM's
dispatcher does (bind the dispatch function's arguments to the kernel's
parameters by name, derive *_STRIDE_<d> arguments) and answer the platform
questions (CUDA, SM count); they change no kernel and no launch parameter.
vLLM's warm-up machinery (compile-ahead of every shape) is not reproduced:
Triton compiles on first call, which the benchmark excludes from timing.

Usage: python3 extract_qrita.py VLLM.whl DEST
"""
import os
import sys
import zipfile

MODULE = "vllm/v1/sample/ops/topk_topp_triton.py"

STANDINS = {
    "vllm/__init__.py": '"""Stand-in package: only the Qrita module is real."""\n',
    "vllm/v1/__init__.py": "",
    "vllm/v1/sample/__init__.py": "",
    "vllm/v1/sample/ops/__init__.py": "",
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/warmup/__init__.py": "",
    "vllm/model_executor/warmup/jit_warmup.py": '''\
"""Stand-in: the warm-up descriptions are only read by vLLM's compile-ahead pass."""


class WarmupChoices(tuple):
    def __new__(cls, *choices):
        return super().__new__(cls, choices)


class WarmupIntRange:
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi


def _when(condition):
    return condition
''',
    "vllm/model_executor/warmup/jit_warmup_triton_helper.py": '''\
"""Stand-in for vLLM's dispatcher: same argument binding, no warm-up."""
import functools
import inspect
from typing import Any

DispatchSpec = Any


class TritonWarmupTensor:
    def __init__(self, dtype, shape=(1,), strides=None, aligned=True):
        self.dtype, self.shape, self.strides, self.aligned = dtype, shape, strides, aligned


def _bind(kernel_args, inputs, launch):
    """Dispatch inputs go to the kernel parameter called name, name_ptr, NAME
    or NAME_PTR unless the dispatch function set it; X_STRIDE_d (or
    x_stride_d) is the d-th stride of the tensor bound to X."""
    kwargs = dict(launch)
    names = set(kernel_args)
    for name, value in inputs.items():
        for cand in (name, name + "_ptr", name.upper(), name.upper() + "_PTR"):
            if cand in names:
                kwargs.setdefault(cand, value)
                break
    for arg in kernel_args:
        if arg in kwargs:
            continue
        for sep in ("_STRIDE", "_stride"):
            base, found, dim = arg.rpartition(sep)
            if not found:
                continue
            dim = dim.lstrip("_") or "0"
            src = base if base in kwargs else base + ("_PTR" if sep == "_STRIDE" else "_ptr")
            if dim.isdigit() and src in kwargs:
                kwargs[arg] = kwargs[src].stride(int(dim))
                break
    missing = [a for a in kernel_args if a not in kwargs]
    if missing:
        raise TypeError(f"stand-in dispatcher left kernel arguments unbound: {missing}")
    return kwargs


def triton_kernel_dispatcher_with_warmup(*, warmup_inputs, kernel=None):
    def decorate(dispatch):
        params = list(inspect.signature(dispatch).parameters.values())

        @functools.wraps(dispatch)
        def launch(*args, **kw):
            spec = dispatch(*args, **kw)
            grid, launch_kwargs = spec[0], spec[1]
            bound = inspect.signature(dispatch).bind(*args, **kw)
            bound.apply_defaults()
            kwargs = _bind(tuple(kernel.arg_names), dict(bound.arguments), launch_kwargs)
            kernel[grid](**kwargs)
            return spec[2] if len(spec) > 2 else None

        launch.kernel = kernel
        launch.params = params
        return launch

    return decorate
''',
    "vllm/platforms/__init__.py": '''\
"""Stand-in: a CUDA platform."""
import functools

import torch


class _CudaPlatform:
    device_type = "cuda"

    def is_cuda_alike(self):
        return True

    def is_cuda(self):
        return True

    @functools.lru_cache(maxsize=None)
    def num_compute_units(self, device_id=0):
        return torch.cuda.get_device_properties(device_id or 0).multi_processor_count


current_platform = _CudaPlatform()
''',
    "vllm/triton_utils/__init__.py": "import triton\nimport triton.language as tl\n",
    "vllm/utils/__init__.py": "",
    "vllm/utils/gpu_sync_debug.py": '''\
import contextlib


def gpu_sync_allowed(first_only=False):
    return contextlib.nullcontext()
''',
    "vllm/utils/math_utils.py": '''\
def next_power_of_2(n):
    return 1 if n < 1 else 1 << (n - 1).bit_length()
''',
    "vllm/utils/platform_utils.py": '''\
def num_compute_units(device_id=0):
    from vllm.platforms import current_platform

    return current_platform.num_compute_units(device_id)
''',
}


def main(wheel: str, dest: str) -> None:
    with zipfile.ZipFile(wheel) as z:
        source = z.read(MODULE).decode()
        version = next((n.split("/")[0] for n in z.namelist() if n.endswith(".dist-info/METADATA")), "?")
    target = os.path.join(dest, "vllm")
    if os.path.isdir(target):
        import shutil
        shutil.rmtree(target)
    for rel, text in STANDINS.items():
        path = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    with open(os.path.join(dest, MODULE), "w") as f:
        f.write(source)
    with open(os.path.join(dest, "SOURCE.txt"), "w") as f:
        f.write(f"{MODULE} from {os.path.basename(wheel)} ({version}); the rest are stand-ins\n")
    print(f"  {MODULE}: {len(source.splitlines())} lines from {os.path.basename(wheel)}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
