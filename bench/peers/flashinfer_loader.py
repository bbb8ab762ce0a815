"""Imports FlashInfer's sampling module without running the package's
__init__, which imports every kernel family (attention, GEMM, MoE, CuTe-DSL
kernels that need nvidia-cutlass-dsl, ...) and so needs wheels the sampling
path never uses.  The sampling and top-k modules only need torch and
apache-tvm-ffi; their CUDA code is JIT-compiled on first use.

Usage (also as a script, to compile the JIT modules ahead of the benchmark):
    python3 bench/peers/flashinfer_loader.py [sampling] [topk]
"""
import importlib
import importlib.util
import os
import sys
import time
import types


def _setup_env() -> None:
    # JIT output under /tmp, for sm_90a only, all cores of the device.
    os.environ.setdefault("FLASHINFER_WORKSPACE_BASE", "/tmp/tokensift-flashinfer")
    os.environ.setdefault("FLASHINFER_CUDA_ARCH_LIST", "9.0a")
    os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 8))
    os.environ.setdefault("FLASHINFER_DISABLE_VERSION_CHECK", "1")


def load_sampling():
    """Returns the flashinfer.sampling module (and flashinfer.topk loaded beside it)."""
    _setup_env()
    if "flashinfer.sampling" in sys.modules:
        return sys.modules["flashinfer.sampling"]
    spec = importlib.util.find_spec("flashinfer")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("flashinfer is not installed (run scripts/prep-peers.sh, carry .whl)")
    if "flashinfer" not in sys.modules:
        pkg = types.ModuleType("flashinfer")
        pkg.__path__ = list(spec.submodule_search_locations)
        pkg.__file__ = spec.origin
        pkg.__spec__ = spec
        sys.modules["flashinfer"] = pkg
        try:
            pkg.__version__ = importlib.import_module("flashinfer.version").__version__
        except Exception:  # noqa: BLE001 - the version is informational
            pkg.__version__ = "unknown"
    sampling = importlib.import_module("flashinfer.sampling")
    importlib.import_module("flashinfer.topk")
    return sampling


def version() -> str:
    return getattr(sys.modules.get("flashinfer"), "__version__", "unknown")


def build(which=("sampling", "topk")) -> None:
    sampling = load_sampling()
    topk = sys.modules["flashinfer.topk"]
    for name in which:
        t0 = time.time()
        if name == "sampling":
            sampling.get_sampling_module()
        elif name == "topk":
            topk.get_topk_module()
        print(f"flashinfer {version()}: JIT module {name} ready in {time.time() - t0:.1f} s",
              flush=True)


if __name__ == "__main__":
    build(tuple(sys.argv[1:]) or ("sampling", "topk"))
