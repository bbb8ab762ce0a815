"""Rewrites a flashinfer-python wheel keeping only what its sampling and top-k
JIT modules need, so it fits the 64 MiB that one device call may carry.

Kept: every Python file of the package (bench/peers/flashinfer_loader.py
imports flashinfer.sampling without the package __init__, but the modules it
reaches import others by name), the headers under data/include, data/cccl and
data/spdlog, and from data/csrc the top-level headers plus the translation
units of the sampling, renorm and top-k modules.  Dropped: the other kernels'
sources (attention, GEMM, MoE, ...) and CUTLASS, which those modules do not
include.  RECORD is rewritten to list only what is kept.

Usage: python3 trim_flashinfer_wheel.py IN.whl OUT.whl
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


def keep(name: str) -> bool:
    if ".dist-info/" in name:
        return True
    if not name.startswith("flashinfer/"):
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


def main(src: str, dst: str) -> None:
    kept_bytes = dropped = 0
    tmp = dst + ".tmp"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED,
                                                        compresslevel=9) as zout:
        record_name = next(n for n in zin.namelist() if n.endswith(".dist-info/RECORD"))
        lines = []
        for info in zin.infolist():
            if info.filename == record_name or info.is_dir():
                continue
            if not keep(info.filename):
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
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
