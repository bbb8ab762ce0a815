#!/usr/bin/env bash
# Builds what scripts/gpu-check.sh runs, on this machine (no GPU needed, same
# nvcc and flags as its build step), into dev/build/prebuilt/ for a device call
# to carry: the call then skips its ~145 s build (PREBUILT=dev/build/prebuilt).
#
#   scripts/prebuild.sh [probe ...]      probes from dev/, e.g. split_trace
#
# BUILD_CUDA_FLAGS as in gpu-check (policy knobs for everything);
# PROBE_FLAGS: the probes' own defines (e.g. -DTOKENSIFT_SPLIT_TRACE);
# PROBE_VARIANT_FLAGS: '|'-separated extra flag sets, each probe's i-th set
# built as <probe>_v<i> (gpu-check's SPLIT_TRACE_VARIANT_FLAGS / TRACE_VARIANT_FLAGS twins);
# VARIANT_FLAGS: benchmark variants (below).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build/h200
DST=dev/build/prebuilt
JOBS=${JOBS:-$(nproc)}
rm -rf "$DST" && mkdir -p "$DST"
cmake -S . -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
      "-DCMAKE_CUDA_FLAGS=${BUILD_CUDA_FLAGS:-}" -DTOKENSIFT_BUILD_EXAMPLES=OFF >/dev/null
cmake --build $BUILD -j"$JOBS" --target tokensift_test_gpu sampler_bench
# The library under its soname alone, as a plain file (links may not travel).
soname=$(objdump -p $BUILD/src/libtokensift.so | awk '/SONAME/ {print $2}')
cp -L "$BUILD/src/$soname" "$DST"/
cp $BUILD/tests/gpu/tokensift_test_gpu $BUILD/bench/sampler_bench "$DST"/
IFS='|' read -r -a vsets <<<"${PROBE_VARIANT_FLAGS:-}"
for name in "$@"; do
  build() {  # $1: output name, then extra flags
    local out=$1; shift
    # shellcheck disable=SC2086  # flag lists
    nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Iinclude -Isrc \
      ${BUILD_CUDA_FLAGS:-} ${PROBE_FLAGS:-} "$@" dev/$name.cu src/cuda/greedy_argmax.cu src/cuda/plain_race.cu -o "$DST/$out"
  }
  build "$name" &
  for vi in "${!vsets[@]}"; do
    # shellcheck disable=SC2086
    build "${name}_v$vi" ${vsets[$vi]} &
  done
done
# VARIANT_FLAGS ('|'-separated, as gpu-check's variant step): the benchmark
# and library built with each set, into variant<i>/ (gpu-check runs them
# instead of building).
IFS='|' read -r -a bvsets <<<"${VARIANT_FLAGS:-}"
for vi in "${!bvsets[@]}"; do
  vb=build/h200-v$vi
  cmake -S . -B $vb -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
        "-DCMAKE_CUDA_FLAGS=${bvsets[$vi]}" -DTOKENSIFT_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build $vb -j"$JOBS" --target sampler_bench
  mkdir -p "$DST/variant$vi"
  cp -L "$vb/src/$(objdump -p $vb/src/libtokensift.so | awk '/SONAME/ {print $2}')" $vb/bench/sampler_bench "$DST/variant$vi"/
  echo "${bvsets[$vi]}" >"$DST/variant$vi/flags.txt"
done
wait
echo "$(git rev-parse HEAD)$(git diff --quiet HEAD -- src include dev tests bench || echo ' +local changes')" >"$DST/commit.txt"
du -sh "$DST"; ls -lR "$DST"
