#!/usr/bin/env bash
# Prepares the peer samplers for bench/peers/run_peers.py, on a machine with
# PyPI access (the GPU machine has none).  Nothing written here is committed:
#   .whl/    wheels that scripts/gpu-peers.sh installs on the device
#            (a trimmed flashinfer-python + apache-tvm-ffi)
#   .peers/  vLLM's Qrita Triton module, taken out of the vllm wheel, with
#            small stand-ins for the vLLM internals it imports, and in
#            .peers/flashinfer-aot/ FlashInfer's sampling and top-k modules
#            compiled here for sm_90a (scripts/prep-flashinfer-jit.sh: nvcc
#            13 and ninja, no GPU; about 5 min on 2 cores, skipped when they
#            are up to date; PREP_FLASHINFER_JIT=0 leaves them out)
# Downloads are cached in $TOKENSIFT_PREP_CACHE (default /tmp/tokensift-prep).
#
# Usage: scripts/prep-peers.sh            (from anywhere inside the repo)
# Env:   FLASHINFER_VERSION (0.7.4), TVM_FFI_VERSION (0.1.15.post2),
#        VLLM_VERSION (0.33.0)
set -euo pipefail

root="$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
cd "$root"
cache="${TOKENSIFT_PREP_CACHE:-/tmp/tokensift-prep}"
fi_version="${FLASHINFER_VERSION:-0.7.4}"
tvm_ffi_version="${TVM_FFI_VERSION:-0.1.15.post2}"
vllm_version="${VLLM_VERSION:-0.33.0}"
mkdir -p "$cache" .whl .peers

# Both folders are in .gitignore; the exclude entries keep them out of git even
# in a checkout whose .gitignore is older.
for p in /.whl/ /.peers/; do
  grep -qxF "$p" .git/info/exclude 2>/dev/null || echo "$p" >> .git/info/exclude
done

# The device runs CPython 3.12 on x86-64 (see /work/.library/device/KINDS.md).
pip_download() {
  python3 -m pip download -q --no-deps --only-binary=:all: \
    --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux_2_31_x86_64 \
    --platform manylinux_2_34_x86_64 --platform manylinux_2_35_x86_64 \
    -d "$cache" "$1"
}

echo "== downloading into $cache"
pip_download "flashinfer-python==$fi_version"
pip_download "apache-tvm-ffi==$tvm_ffi_version"
pip_download "vllm==$vllm_version"

fi_whl="$(ls "$cache"/flashinfer_python-"$fi_version"-*.whl | head -1)"
tvm_whl="$(ls "$cache"/apache_tvm_ffi-"$tvm_ffi_version"-*.whl | head -1)"
vllm_whl="$(ls "$cache"/vllm-"$vllm_version"-*.whl | head -1)"

# One version of each package in .whl/: pip refuses two.
rm -f .whl/flashinfer_python-*.whl .whl/apache_tvm_ffi-*.whl
cp "$tvm_whl" .whl/

# Trimmed for the JIT build (sources kept) into the cache, where
# prep-flashinfer-jit.sh takes it; .whl/ gets a copy, replaced below by the
# smaller --aot-only trim once the prebuilt modules are there.
echo "== trimming $(basename "$fi_whl")"
jit_whl="$cache/jit-wheel/$(basename "$fi_whl")"
mkdir -p "$cache/jit-wheel" && rm -f "$cache"/jit-wheel/flashinfer_python-*.whl
python3 "$root/bench/peers/trim_flashinfer_wheel.py" "$fi_whl" "$jit_whl"
cp "$jit_whl" .whl/

echo "== extracting vLLM's Qrita module into .peers/"
python3 "$root/bench/peers/extract_qrita.py" "$vllm_whl" .peers

if [ "${PREP_FLASHINFER_JIT:-1}" != 0 ]; then
  echo "== FlashInfer's sampling and top-k modules, compiled here for the device"
  FI_WHL="$jit_whl" bash "$root/scripts/prep-flashinfer-jit.sh"
fi
# With the modules prebuilt, the device never compiles: the wheel it gets
# can leave out FlashInfer's sources and the kernel families sampling does
# not import (the whole carry must stay under 64 MiB).
if [ -f .peers/flashinfer-aot/aot/manifest.json ]; then
  echo "== the device's wheel without sources (prebuilt modules present)"
  python3 "$root/bench/peers/trim_flashinfer_wheel.py" --aot-only "$jit_whl" ".whl/$(basename "$fi_whl")"
fi

echo "== what travels to the device (limit 64 MiB per call)"
python3 - <<'EOF'
import os, subprocess
tracked = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"],
                         capture_output=True, check=True).stdout.split(b"\0")
repo = sum(os.path.getsize(p) for p in tracked if p and os.path.isfile(p))
def tree(d):
    return sum(os.path.getsize(os.path.join(a, f)) for a, _, fs in os.walk(d) for f in fs)
whl, peers = tree(".whl"), tree(".peers")
aot = tree(".peers/flashinfer-aot")
mib = 1 << 20
print(f"  working tree (tracked + untracked, not ignored): {repo / mib:7.2f} MiB")
print(f"  .whl/   (carry it):                              {whl / mib:7.2f} MiB")
print(f"  .peers/ (carry it):                              {peers / mib:7.2f} MiB")
print(f"    of which flashinfer-aot/ (prebuilt modules):   {aot / mib:7.2f} MiB")
total = repo + whl + peers
print(f"  total:                                           {total / mib:7.2f} MiB")
if total > 56 * mib:
    raise SystemExit("too close to the 64 MiB limit: trim more before the device call")
EOF
echo "== done. Device call: bash scripts/gpu-peers.sh with carry [.whl, .peers] (docs/peers.md)"
