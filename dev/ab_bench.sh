#!/usr/bin/env bash
# A / B of two prebuilt libraries (scripts/prebuild.sh folders) in one device
# call: ROUNDS rounds, each running A's then B's sampler_bench on the same
# cells (the bench's own arguments after the two folders), the JSON of each
# under $OUT, then dev/ab_summary.py's per-cell medians and geomeans.
#
#   dev/ab_bench.sh A_DIR B_DIR [sampler_bench args ...]     (ROUNDS=3, TAG=ab)
set -uo pipefail
cd "$(dirname "$0")/.."
A=$1 B=$2; shift 2
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
ROUNDS=${ROUNDS:-3}
TAG=${TAG:-ab}
for r in $(seq 1 "$ROUNDS"); do
  for side in a b; do
    dir=$A; [ $side = b ] && dir=$B
    LD_LIBRARY_PATH=$PWD/$dir:/usr/local/cuda/lib64 "$dir/sampler_bench" "$@" \
      --out "$OUT/$TAG-r$r-$side.json" >"$OUT/$TAG-r$r-$side.log" 2>&1 || tail -5 "$OUT/$TAG-r$r-$side.log"
  done
done
python3 dev/ab_summary.py "$OUT" "$TAG" | tee "$OUT/$TAG-summary.txt"
