#!/usr/bin/env bash
# Compiles FlashInfer's sampling and top-k JIT modules HERE (nvcc + ninja, no
# GPU needed) for the device's sm_90a, so that scripts/gpu-peers.sh loads them
# instead of spending minutes of device time compiling them.  Called by
# scripts/prep-peers.sh after it has filled .whl/; runs on its own too.
#
# Output (git-ignored, travels with `carry: [".whl", ".peers"]`):
#   .peers/flashinfer-aot/aot/{sampling,topk}/<name>.so, aot/manifest.json,
#   STAMP (what they were built from; a rerun with the same inputs is a no-op)
#
# How FlashInfer uses them: it loads <aot dir>/<name>/<name>.so without
# compiling when the file exists; bench/peers/flashinfer_loader.py points the
# aot dir there when manifest.json matches the installed FlashInfer and
# FLASHINFER_CUDA_ARCH_LIST.  The modules include only tvm-ffi's and CUDA's
# headers (no Python.h, no torch headers), so they are built with this
# machine's Python against the same apache-tvm-ffi version as the device's;
# torch is imported only because FlashInfer's build code imports it.
#
# Needs: nvcc 13.x (the device's libcudart.so.13), ninja, strip, and torch,
# filelock, packaging importable by python3 (else a venv with them is made
# in the cache).
# Env:   FLASHINFER_CUDA_ARCH_LIST (9.0a), MAX_JOBS (2: shared machine),
#        TVM_FFI_VERSION (0.1.15.post2), FIJIT_FORCE=1 (redo the copy and checks;
#        removing $TOKENSIFT_PREP_CACHE/fijit-ws forces a full recompile),
#        TOKENSIFT_PREP_CACHE (/tmp/tokensift-prep: build tree and site),
#        FI_WHL (the trimmed wheel; default: the cache's jit-wheel/, else .whl/).
set -euo pipefail

root="$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
cd "$root"
cache="${TOKENSIFT_PREP_CACHE:-/tmp/tokensift-prep}"
tvm_ffi_version="${TVM_FFI_VERSION:-0.1.15.post2}"
export FLASHINFER_CUDA_ARCH_LIST="${FLASHINFER_CUDA_ARCH_LIST:-9.0a}"
export MAX_JOBS="${MAX_JOBS:-2}" FLASHINFER_DISABLE_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
out=.peers/flashinfer-aot

# The wheel trimmed for the JIT build (sources kept): prep-peers.sh leaves it
# in the cache (.whl/ may hold the --aot-only trim, which cannot compile).
fi_whl="${FI_WHL:-}"
for cand in "$cache"/jit-wheel/flashinfer_python-*.whl .whl/flashinfer_python-*.whl; do
  [ -n "$fi_whl" ] || [ ! -f "$cand" ] || fi_whl="$cand"
done
[ -n "$fi_whl" ] || { echo "!! no trimmed flashinfer_python wheel: run scripts/prep-peers.sh" >&2; exit 1; }
if [ -z "${CUDA_HOME:-}" ]; then
  if command -v nvcc > /dev/null; then CUDA_HOME="$(dirname "$(dirname "$(command -v nvcc)")")"
  else CUDA_HOME=/usr/local/cuda; fi
fi
export CUDA_HOME
nvcc="$CUDA_HOME/bin/nvcc"
[ -x "$nvcc" ] || { echo "!! no nvcc at $nvcc (set CUDA_HOME)" >&2; exit 1; }
command -v ninja > /dev/null || { echo "!! ninja not found" >&2; exit 1; }
nvcc_release="$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')"
case "$nvcc_release" in
  13.*) ;;
  *) echo "!! nvcc $nvcc_release: the device has CUDA 13 (libcudart.so.13); the modules would not load there" >&2
     exit 1 ;;
esac
# torch, filelock and packaging from this Python, or else from a venv in the
# cache (PyPI's torch wheel with its nvidia-* CUDA libraries, ~4 GB, once):
# PyPI has no CPU-only torch and download.pytorch.org is not reachable here.
PY=python3
if ! $PY -c "import torch, filelock, packaging" 2> /dev/null; then
  venv="$cache/torch-venv"
  if ! "$venv/bin/python" -c "import torch, filelock, packaging" 2> /dev/null; then
    echo "== torch for FlashInfer's build code: a venv in $venv (PyPI, ~4 GB, once)"
    python3 -m venv "$venv" && "$venv/bin/python" -m pip install -q torch==2.11.0 filelock packaging \
      && "$venv/bin/python" -c "import torch, filelock, packaging" || {
        echo "!! no torch for FlashInfer's build code (python3 lacks it and the venv install failed)" >&2
        exit 1; }
  fi
  PY="$venv/bin/python"
fi

py="$($PY -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
# The trimmed wheel's RECORD (every kept file's hash) names its content; the
# wheel's own bytes change with each trim (zip timestamps).
record_sha="$(python3 -c '
import hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
record = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
print(hashlib.sha256(z.read(record)).hexdigest()[:16])' "$fi_whl")"
stamp="flashinfer wheel RECORD $record_sha $(basename "$fi_whl")
apache-tvm-ffi $tvm_ffi_version
FLASHINFER_CUDA_ARCH_LIST=$FLASHINFER_CUDA_ARCH_LIST
nvcc $nvcc_release
loader $(sha256sum bench/peers/flashinfer_loader.py | cut -c1-16)"
if [ "${FIJIT_FORCE:-0}" != 1 ] && [ -f "$out/STAMP" ] && [ "$(cat "$out/STAMP")" = "$stamp" ] \
   && [ -f "$out/aot/sampling/sampling.so" ] && [ -f "$out/aot/topk/topk.so" ]; then
  echo "== FlashInfer modules in $out are up to date (FIJIT_FORCE=1 redoes them)"
  exit 0
fi

# A private site: the trimmed wheel (the same sources the device gets) and
# tvm-ffi for this machine's Python, at the device's tvm-ffi version.
# Reinstalled only when its inputs change, and the build tree is kept: ninja
# then recompiles only what changed (flags included), nothing on a rerun.
site="$cache/fijit-site-py$py"
site_stamp="$record_sha apache-tvm-ffi $tvm_ffi_version"
if [ "$(cat "$site/.tokensift-stamp" 2> /dev/null)" != "$site_stamp" ]; then
  rm -rf "$site"
  $PY -m pip install -q --no-deps --no-compile --target "$site" "apache-tvm-ffi==$tvm_ffi_version"
  $PY -m pip install -q --no-deps --no-index --no-compile --target "$site" "$fi_whl"
  echo "$site_stamp" > "$site/.tokensift-stamp"
fi

export FLASHINFER_WORKSPACE_BASE="$cache/fijit-ws"
# Built and checked in $part, moved to $out only when all passed: the device
# uses any $out whose manifest fits.
part="$out.partial"
rm -rf "$out" "$part"
echo "== compiling FlashInfer sampling + topk for $FLASHINFER_CUDA_ARCH_LIST (nvcc $nvcc_release, -j$MAX_JOBS; about 15 min on 2 cores: topk.cu and cub_topk.cu are long)"
t0=$(date +%s)
PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" \
  $PY bench/peers/flashinfer_loader.py --prebuild "$part" sampling topk
echo "== FlashInfer modules built in $(( $(date +%s) - t0 )) s:"
du -b "$part"/aot/*/*.so | awk '{printf "  %6.2f MiB  %s\n", $1 / 1048576, $2}'

# Load check (no GPU needed): here, then, when a Python 3.12 is found, with
# the device's own tvm-ffi wheel (.whl/, cp312) under Python 3.12.
echo "== loading them through tvm-ffi"
PYTHONPATH="$site" $PY bench/peers/flashinfer_loader.py --check "$part"
py312=""
for cand in python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12; do
  if "$cand" -c "import sys" > /dev/null 2>&1; then py312="$cand"; break; fi
done
tvm_whl="$(ls .whl/apache_tvm_ffi-*-cp312-*.whl 2>/dev/null | head -1 || true)"
if [ -n "$py312" ] && [ -n "$tvm_whl" ]; then
  site312="$cache/fijit-check-py312"
  rm -rf "$site312"
  "$py312" -m pip install -q --no-compile --target "$site312" "$tvm_whl" typing_extensions
  PYTHONPATH="$site312:$site" "$py312" bench/peers/flashinfer_loader.py --check "$part"
else
  echo "  (no python3.12 or no cp312 tvm-ffi wheel in .whl/: checked under Python $py only)"
fi
echo "$stamp" > "$part/STAMP"
mv "$part" "$out"
echo "== FlashInfer modules ready in $out"
