#!/usr/bin/env bash
# The peer benchmark in ONE device call (<= 10 minutes), after
# scripts/prep-peers.sh on a machine with PyPI access:
#
#   device run, carry [".whl", ".peers"], timeout_s 600:
#     bash scripts/gpu-peers.sh            (add --quick for a short run)
#
# 1. installs the carried wheels (.whl/: trimmed FlashInfer, apache-tvm-ffi)
# 2. loads FlashInfer's sampling and top-k modules, prebuilt for sm_90a by
#    scripts/prep-flashinfer-jit.sh (.peers/flashinfer-aot/, seconds; no
#    compile: a prebuilt module that does not load skips FlashInfer unless
#    TOKENSIFT_FLASHINFER_JIT_FALLBACK=1), or, without them, JIT-compiles
#    them (minutes) -- in the background while
#    3. tokensift builds (build/peers, sm_90a, library only; skipped
#    when TOKENSIFT_LIB names a built libtokensift.so)
# 4. runs bench/peers/run_peers.py, time-boxed to what is left of the limit
# 5. plots; everything lands in $OUT (5 files: json, md, 2 png, log).
# Arguments are passed to run_peers.py.  Env: PEERS_LIMIT_S (default 570),
# PEERS_JIT_MAX_S (default 300: FlashInfer is skipped if its JIT is not done).
set -uo pipefail
t0=$(date +%s)
limit="${PEERS_LIMIT_S:-570}"
jit_max="${PEERS_JIT_MAX_S:-300}"
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/bench/results}"
mkdir -p "$OUT"
log="$OUT/peers-log.txt"
exec > >(tee -a "$log") 2>&1
export PYTHONUNBUFFERED=1
elapsed() { echo $(( $(date +%s) - t0 )); }
echo "== gpu-peers.sh at $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
echo "$(ldd --version 2>/dev/null | head -1); $(python3 --version 2>&1)"

skip=()
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}" \
    || echo "!! wheel install failed: FlashInfer will be missing"
else
  echo "!! no .whl/ (run scripts/prep-peers.sh and carry .whl): FlashInfer will be missing"
fi
[ -d .peers/vllm ] || echo "!! no .peers/ (run scripts/prep-peers.sh and carry .peers): Qrita will be missing"
[ -f .peers/flashinfer-aot/aot/manifest.json ] \
  || echo "!! no prebuilt FlashInfer modules (scripts/prep-flashinfer-jit.sh): JIT-compiling them (minutes)"

if [ -z "${CUDA_HOME:-}" ] && command -v nvcc > /dev/null; then
  export CUDA_HOME="$(dirname "$(dirname "$(command -v nvcc)")")"
fi
export FLASHINFER_WORKSPACE_BASE=/tmp/tokensift-flashinfer FLASHINFER_CUDA_ARCH_LIST=9.0a
export MAX_JOBS=8 FLASHINFER_DISABLE_VERSION_CHECK=1
python3 bench/peers/flashinfer_loader.py sampling topk > /tmp/flashinfer-jit.log 2>&1 &
jit_pid=$!

# Own build folder (library only), so the options of build/h200 stay as the
# lead's scripts set them; a library given in TOKENSIFT_LIB is used as is.
if [ -n "${TOKENSIFT_LIB:-}" ] && [ -e "$TOKENSIFT_LIB" ]; then
  echo "== using TOKENSIFT_LIB=$TOKENSIFT_LIB"
else
  echo "== building tokensift (build/peers, sm_90a, library only) at $(elapsed) s"
  cmake -S . -B build/peers -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DTOKENSIFT_BUILD_TESTS=OFF -DTOKENSIFT_BUILD_BENCH=OFF -DTOKENSIFT_BUILD_EXAMPLES=OFF \
    > /tmp/tokensift-cmake.log 2>&1 \
    && cmake --build build/peers -j 8 --target tokensift > /tmp/tokensift-build.log 2>&1
  build_rc=$?
  tail -n 3 /tmp/tokensift-build.log 2>/dev/null
  if [ $build_rc -ne 0 ]; then
    echo "!! tokensift build failed (rc $build_rc): tokensift rows will be missing"
    tail -n 40 /tmp/tokensift-cmake.log /tmp/tokensift-build.log 2>/dev/null
  else
    export TOKENSIFT_LIB="$PWD/build/peers/src/libtokensift.so"
  fi
fi
echo "== tokensift build done at $(elapsed) s"

while kill -0 $jit_pid 2> /dev/null && [ "$(elapsed)" -lt "$jit_max" ]; do sleep 2; done
if kill -0 $jit_pid 2> /dev/null; then
  echo "!! FlashInfer modules not ready after ${jit_max} s: FlashInfer skipped"
  kill $jit_pid; skip+=(flashinfer)
elif ! wait $jit_pid; then
  echo "!! FlashInfer modules failed to load or build: FlashInfer skipped"; skip+=(flashinfer)
fi
tail -n 30 /tmp/flashinfer-jit.log
echo "== FlashInfer modules done at $(elapsed) s"

budget=$(( limit - $(elapsed) - 40 ))
[ $budget -lt 60 ] && budget=60
echo "== run_peers.py, budget ${budget} s"
python3 bench/peers/run_peers.py --budget-s "$budget" --out "$OUT" \
  ${skip[@]:+--skip "${skip[@]}"} "$@"
rc=$?
for f in "$OUT"/peers-*.json; do
  [ -e "$f" ] && python3 bench/peers/plot.py "$f" --every-vocab --out-dir "$OUT"
done
echo "== done at $(elapsed) s (run_peers rc $rc); files in $OUT:"
ls -la "$OUT"
sleep 1  # let tee flush the log
exit $rc
