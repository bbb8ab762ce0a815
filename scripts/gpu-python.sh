#!/usr/bin/env bash
# GPU run of the Python package tests (for the lead, on the GPU machine).
#
#   bash scripts/gpu-python.sh            # reports into $OUT (or build/gpu-python-out)
#
# Offline: builds with the machine's own nanobind / scikit-build-core / torch
# (pip --no-build-isolation --no-deps) into a venv that sees the system site
# packages, with the CUDA backend, then runs all of python/tests (CPU, torch
# CPU + CUDA, CuPy, JAX, compat layers).  Writes python-gpu.log,
# python-gpu-junit.xml and python-gpu-summary.json into the output folder; the
# summary is what goes under bench/results/.  Exit status: pytest's.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$root/build/gpu-python-out}"
mkdir -p "$out"
log="$out/python-gpu.log"
venv="$root/build/gpu-python-venv"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INDEX=1
# JAX would otherwise take 75% of the GPU at its first use, starving torch.
export XLA_PYTHON_CLIENT_PREALLOCATE=false
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

{
  echo "== $(date -u +%FT%TZ) tokensift python GPU run"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  command -v nvcc && nvcc --version | tail -n 2
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"
} > "$log" 2>&1

# A --target folder on PYTHONPATH: python3 there is itself a venv
# (/opt/torch/.venv), and a venv made from it with --system-site-packages
# would see the base interpreter's packages, not torch / scikit-build-core.
pip_target=(--target "$root/build/gpu-python-site")
rm -rf "$root/build/gpu-python-site"
export PYTHONPATH="$root/build/gpu-python-site${PYTHONPATH:+:$PYTHONPATH}"
python() { python3 "$@"; }

echo "== pip install . (CUDA build)" >> "$log"
start=$(date +%s)
if ! python -m pip install --no-build-isolation --no-deps -v ${pip_target[@]+"${pip_target[@]}"} "$root" \
    -Ccmake.define.TOKENSIFT_ENABLE_CUDA=ON \
    -Ccmake.define.CMAKE_CUDA_ARCHITECTURES="${TOKENSIFT_CUDA_ARCHS:-90a}" \
    -Cbuild-dir="$root/build/python-gpu" >> "$log" 2>&1; then
  echo "pip install failed; see $log" >&2
  tail -n 60 "$log" >&2
  exit 1
fi
echo "== build took $(( $(date +%s) - start )) s" >> "$log"

cd "$root/build"
python -c "import tokensift as t; print('tokensift', t.__version__, t.__file__, 'cuda_available', t.cuda_available())" >> "$log" 2>&1
python -m pytest -rs -q "$root/python/tests" -p no:cacheprovider \
  -o junit_family=xunit1 --junitxml="$out/python-gpu-junit.xml" >> "$log" 2>&1
rc=$?

python - "$out" "$rc" <<'PY' >> "$log" 2>&1
import json, platform, sys, xml.etree.ElementTree as ET
out, rc = sys.argv[1], int(sys.argv[2])
suite = ET.parse(f"{out}/python-gpu-junit.xml").getroot()
suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
cases = []
for case in suite.iter("testcase"):
    outcome = "passed"
    for tag in ("failure", "error", "skipped"):
        node = case.find(tag)
        if node is not None:
            outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
            detail = (node.get("message") or "")[:300]
            break
    else:
        detail = ""
    entry = {"test": f"{case.get('classname')}::{case.get('name')}", "outcome": outcome,
             "seconds": float(case.get("time", 0)), "detail": detail}
    props = case.find("properties")
    if props is not None:
        entry["properties"] = {p.get("name"): p.get("value") for p in props.iter("property")}
    cases.append(entry)
counts = {k: sum(c["outcome"] == k for c in cases) for k in ("passed", "failed", "error", "skipped")}
try:
    import torch
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    torch_version = torch.__version__
except Exception:
    gpu = torch_version = None
import tokensift
summary = {"suite": "python", "exit_code": rc, "counts": counts, "gpu": gpu, "torch": torch_version,
           "python": platform.python_version(), "tokensift_cuda": tokensift.cuda_available(),
           "tests": cases}
json.dump(summary, open(f"{out}/python-gpu-summary.json", "w"), indent=1)
print("summary:", counts)
PY
tail -n 25 "$log"
exit $rc
