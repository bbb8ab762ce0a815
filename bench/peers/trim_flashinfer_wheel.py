"""Rewrites a flashinfer-python wheel keeping only what its sampling and top-k
JIT modules need, so it fits the 64 MiB that one device call may carry.

Kept: every Python file of the package (bench/peers/flashinfer_loader.py
imports flashinfer.sampling without the package __init__, but the modules it
reaches import others by name), the headers under data/include, data/cccl and
data/spdlog, and from data/csrc the top-level headers plus the translation
units of the sampling, renorm and top-k modules.  Dropped: the other kernels'
sources (attention, GEMM, MoE, ...) and CUTLASS, which those modules do not
include.  RECORD is rewritten to list only what is kept.

With --aot-only, data/ goes as well (headers and sources, ~5 MiB of the
trimmed wheel), and the Python of three kernel families that the sampling
and top-k modules never import (experimental/, fused_moe/, moe_ep/: ~16 MiB;
checked by importing flashinfer.sampling and flashinfer.topk through
bench/peers/flashinfer_loader.py from such a wheel): for a device run that
loads those modules prebuilt by scripts/prep-flashinfer-jit.sh and never
compiles (FlashInfer cannot JIT-compile from this wheel).  The JIT build
itself uses the wheel trimmed without --aot-only.

Usage: python3 trim_flashinfer_wheel.py [--aot-only] IN.whl OUT.whl
"""
import base64
import hashlib
import os
import sys
import zipfile

# data/csrc translation units of the JIT modules flashinfer.sampling and
# flashinfer.topk build (flashinfer/jit/sampling.py, flashinfer/jit/topk.py).
_CSRC_WORDS = ("sampling", "renorm", "topk")
_HEADER_EXTS = (".h", ".cuh", ".hpp", ".inc", ".inl")
_DATA_TREES = ("flashinfer/data/include/", "flashinfer/data/cccl/", "flashinfer/data/spdlog/")
_AOT_DROPPED = ("flashinfer/data/", "flashinfer/experimental/", "flashinfer/fused_moe/", "flashinfer/moe_ep/")


def keep(name: str, aot_only: bool = False) -> bool:
    if ".dist-info/" in name:
        return True
    if not name.startswith("flashinfer/"):
        return False
    if aot_only and name.startswith(_AOT_DROPPED):
        return False
    if name.startswith("flashinfer/data/"):
        if name.startswith(_DATA_TREES):
            return True
        if name.startswith("flashinfer/data/csrc/"):
            rest = name[len("flashinfer/data/csrc/"):]
            if "/" in rest:
                return False
            return rest.endswith(_HEADER_EXTS) or any(w in rest for w in _CSRC_WORDS)
        return False
    # Outside data/: Python and small metadata; the CUDA sources there belong
    # to CuTe-DSL / NVRTC kernels the sampler never builds.
    return not name.endswith(".cu")


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def main(src: str, dst: str, aot_only: bool = False) -> None:
    kept_bytes = dropped = 0
    tmp = dst + ".tmp"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED,
                                                        compresslevel=9) as zout:
        record_name = next(n for n in zin.namelist() if n.endswith(".dist-info/RECORD"))
        lines = []
        for info in zin.infolist():
            if info.filename == record_name or info.is_dir():
                continue
            if not keep(info.filename, aot_only):
                dropped += 1
                continue
            data = zin.read(info)
            zout.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
            lines.append(record_line(info.filename, data))
            kept_bytes += len(data)
        lines.append(f"{record_name},,")
        zout.writestr(record_name, "\n".join(lines) + "\n")
    os.replace(tmp, dst)
    print(f"  kept {len(lines) - 1} files ({kept_bytes / 2**20:.1f} MiB unpacked), "
          f"dropped {dropped}; {os.path.getsize(src) / 2**20:.1f} MiB -> "
          f"{os.path.getsize(dst) / 2**20:.1f} MiB")


if __name__ == "__main__":
    argv = sys.argv[1:]
    aot = argv[:1] == ["--aot-only"]
    if aot:
        argv = argv[1:]
    if len(argv) != 2:
        raise SystemExit(__doc__)
    main(argv[0], argv[1], aot)
