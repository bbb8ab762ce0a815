#!/usr/bin/env bash
# Builds and runs the demos: the decode loop (examples/decode, docs/decode.md)
# and the sampling API demo (examples/demo).  The CPU backend everywhere; the
# CUDA backend and the GPU-resident loops too when nvcc was found at build time
# and a GPU is present.
#
#   scripts/demo.sh [tokensift_decode arguments...]
# Environment: TOKENSIFT_PRESET (default "default"), TOKENSIFT_BUILD_DIR, TOKENSIFT_JOBS.
set -euo pipefail

# shellcheck source=scripts/lib/build-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/build-env.sh"

cmake --preset "$preset" -B "$build_dir" -DTOKENSIFT_BUILD_EXAMPLES=ON >/dev/null
cmake --build "$build_dir" -j "$jobs" --target tokensift_demo tokensift_decode
find_bin() { find "$build_dir" -type f -name "$1" -perm -u+x | head -n 1; }
decode="$(find_bin tokensift_decode)"
demo="$(find_bin tokensift_demo)"
if [ -z "$decode" ] || [ -z "$demo" ]; then
  echo "demo.sh: tokensift_decode / tokensift_demo were not built" >&2
  exit 1
fi
# The main demo: a decode loop that never copies logits to the host (all three
# loops on a GPU; on a machine without one, the ds4-style loop on a small CPU
# model with the CPU backend, and it says so), checked token for token.
echo "== tokensift_decode --check $*"
"$decode" --check "$@"
# The sampling API on its own: a few parameter sets, CPU (and CUDA) backends.
echo "== tokensift_demo"
"$demo"
