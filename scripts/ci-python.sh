#!/usr/bin/env bash
# CI for the Python package (CPU only): build tokensift with pip into a fresh
# virtual environment and run the pytest suite (python/tests).  Tests that need
# torch or a CUDA device skip themselves here; scripts/gpu-python.sh runs them
# on a GPU machine.  Exit status: pytest's (0 = all selected tests passed).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
venv="${TOKENSIFT_CI_VENV:-$root/build/ci-python-venv}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

mkdir -p "$root/build"
echo "== python package: venv $venv"
"$python" -m venv "$venv"
# shellcheck disable=SC1091
source "$venv/bin/activate"
python -m pip install --quiet --upgrade pip
python -m pip install --quiet numpy pytest nanobind scikit-build-core ml_dtypes

echo "== python package: pip install . (CPU-only build)"
python -m pip install --no-build-isolation -v "$root" \
  -Ccmake.define.TOKENSIFT_ENABLE_CUDA=OFF \
  -Cbuild-dir="$root/build/python-ci" > "$root/build/ci-python-build.log" 2>&1 || {
  tail -n 80 "$root/build/ci-python-build.log"
  echo "pip install . failed" >&2
  exit 1
}

echo "== python package: pytest"
# Run from outside the source tree so `import tokensift` is the installed
# package, not python/tokensift.
cd "$root/build"
python -c "import tokensift, sys; print('tokensift', tokensift.__version__, 'from', tokensift.__file__, 'cuda', tokensift.cuda_available())"
python -m pytest -q -rs "$root/python/tests" -p no:cacheprovider
