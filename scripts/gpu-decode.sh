#!/usr/bin/env bash
# The decode-loop demo on a GPU (docs/decode.md): builds tokensift_decode if it
# is not built, runs the cross-mode token check, then the measurement, and
# writes decode-h200-<date>.{json,md} plus logs under $OUT.
#
#   OUT=/some/dir scripts/gpu-decode.sh            # the lead's H200 run
#   BUILD_DIR=build/h200 COMMIT=<sha> STEPS=64 BATCHES=1,8,64,256 LOGITS=f32 scripts/gpu-decode.sh
#
# Budget: a cold build of the library plus ~1 minute of runs; the longest run
# is the naive full-sort CPU sampler at B=256.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT="${OUT:-$ROOT/build/decode-out}"
mkdir -p "$OUT"
STEPS="${STEPS:-64}"
BATCHES="${BATCHES:-1,8,64,256}"
DATE="$(date -u +%Y-%m-%d)"
COMMIT="${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"

if [ ! -f examples/CMakeLists.txt ]; then
  echo "gpu-decode.sh: examples/CMakeLists.txt is missing, so CMake never sees examples/decode" >&2
  exit 1
fi
LOGITS="${LOGITS:-f32}"

# Reuse a configured h200 build tree when there is one; otherwise configure a
# lean one (no tests / benchmarks: nothing to download on an offline machine).
if [ -z "${BUILD_DIR:-}" ]; then
  if [ -f build/h200/CMakeCache.txt ]; then BUILD_DIR=build/h200; else BUILD_DIR=build/decode-h200; fi
fi
BIN="$BUILD_DIR/examples/decode/tokensift_decode"
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  echo "== configure $BUILD_DIR"
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DTOKENSIFT_BUILD_TESTS=OFF -DTOKENSIFT_BUILD_BENCH=OFF -DTOKENSIFT_BUILD_EXAMPLES=ON \
    >"$OUT/decode-configure.log" 2>&1 || { tail -30 "$OUT/decode-configure.log"; exit 1; }
fi
echo "== build tokensift_decode in $BUILD_DIR"
cmake --build "$BUILD_DIR" -j"$(nproc)" --target tokensift_decode >"$OUT/decode-build.log" 2>&1 \
  || { tail -40 "$OUT/decode-build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$OUT/decode-gpu.txt" 2>&1 || true

rc=0
echo "== check: ds4 (CPU sampler) == eager == graphed, mixed per-row params, device stop conditions"
timeout 120 "$BIN" --device gpu --check --batch 1,8,64 --steps 24 --hidden 1024 --layers 2 \
  --params mixed --eos-bias 8 --max-tokens-spread 8 --graph-steps 4 --modes ds4,eager,graphed \
  2>&1 | tee "$OUT/decode-check.log"
r=${PIPESTATUS[0]}; [ "$r" -ne 0 ] && rc=$r
echo "== check: bf16 logits, a ring smaller than the run (host back-pressure), a tail graph"
timeout 120 "$BIN" --device gpu --check --batch 8,64 --steps 16 --hidden 1024 --layers 2 \
  --params mixed --eos-bias 8 --max-tokens-spread 5 --logits bf16 --ring-slots 6 --graph-steps 3 \
  --modes ds4,eager,graphed 2>&1 | tee -a "$OUT/decode-check.log"
r=${PIPESTATUS[0]}; [ "$r" -ne 0 ] && rc=$r

echo "== measure: B in {$BATCHES}, $STEPS steps, all modes"
timeout 300 "$BIN" --device gpu --check --batch "$BATCHES" --steps "$STEPS" --logits "$LOGITS" \
  --commit "$COMMIT" \
  --json "$OUT/decode-h200-$DATE.json" --out "$OUT/decode-h200-$DATE.md" \
  2>&1 | tee "$OUT/decode-bench.log"
r=${PIPESTATUS[0]}; [ "$r" -ne 0 ] && rc=$r

[ -f "$OUT/decode-h200-$DATE.md" ] && cat "$OUT/decode-h200-$DATE.md"
echo "== gpu-decode.sh exit $rc; results in $OUT"
exit $rc
