#!/usr/bin/env bash
# Builds and runs the tokensift demo: the CPU backend everywhere, and the CUDA
# backend too when nvcc was found at build time and a GPU is present.
#
#   scripts/demo.sh [demo arguments...]
# Environment: TOKENSIFT_PRESET (default "default"), TOKENSIFT_BUILD_DIR, TOKENSIFT_JOBS.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

preset="${TOKENSIFT_PRESET:-default}"
build_dir="${TOKENSIFT_BUILD_DIR:-build/$preset}"
jobs="${TOKENSIFT_JOBS:-$(nproc)}"

cmake --preset "$preset" -B "$build_dir" -DTOKENSIFT_BUILD_EXAMPLES=ON >/dev/null
cmake --build "$build_dir" -j "$jobs" --target tokensift_demo
demo="$(find "$build_dir" -type f -name tokensift_demo -perm -u+x | head -n 1)"
if [ -z "$demo" ]; then
  echo "demo.sh: tokensift_demo was not built" >&2
  exit 1
fi
exec "$demo" "$@"
