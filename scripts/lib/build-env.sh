# Sourced by scripts/test.sh and scripts/demo.sh: the repo root as the working
# directory, nvcc on PATH when the toolkit sits in the usual place (so the CUDA
# code is built whenever it can be), and the preset, build folder and job count
# from TOKENSIFT_PRESET, TOKENSIFT_BUILD_DIR and TOKENSIFT_JOBS.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
preset="${TOKENSIFT_PRESET:-default}"
build_dir="${TOKENSIFT_BUILD_DIR:-build/$preset}"
jobs="${TOKENSIFT_JOBS:-$(nproc)}"
