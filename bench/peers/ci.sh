#!/usr/bin/env bash
# CPU checks of the peer benchmark harness, for .ci/run:
#   bash bench/peers/ci.sh [path/to/libtokensift.so]
# Installs NumPy, pytest and matplotlib when missing (PyPI), then runs
# bench/peers' tests: the contract reference, the report and plots, and,
# when available, the torch peers (torch installed), the ctypes shim against
# the CPU backend (a built libtokensift.so) and the Qrita stand-ins (.peers/).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if [ $# -ge 1 ]; then export TOKENSIFT_LIB="$1"; fi
need=()
python3 -c "import numpy" 2>/dev/null || need+=(numpy)
python3 -c "import pytest" 2>/dev/null || need+=(pytest)
python3 -c "import matplotlib" 2>/dev/null || need+=(matplotlib)
if [ "${#need[@]}" -gt 0 ]; then
  echo "peers ci: installing ${need[*]}"
  python3 -m pip install -q "${need[@]}" 2>/dev/null \
    || python3 -m pip install -q --break-system-packages "${need[@]}"
fi
python3 -m pytest -q -p no:cacheprovider bench/peers
