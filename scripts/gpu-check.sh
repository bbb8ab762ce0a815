#!/usr/bin/env bash
# One device call: build for the H200, run the GPU tests against the CPU
# backend, the sanitizers on a reduced matrix, and the sampler benchmark.
# Results land under $OUT (the device tool's output folder) or ./gpu-out.
# The device tool returns at most 8 files (16 MiB each): for more, point OUT
# at a scratch folder and pack it into the tool's folder after the call,
#   W=/tmp/w; mkdir -p $W; OUT=$W bash scripts/gpu-check.sh ...; tar -C $W -czf $OUT/results.tgz .
# (Nsight Compute's per-line pages alone pass 16 MiB; packed they do not).
#
#   scripts/gpu-check.sh [steps]    steps: comma list of build,test,sanitize,bench,benchquick,
#                                   benchflat,profile,profileprobe,kernels,variant,probe,rowctatrace,splittrace,sortprobe,
#                                   clustertrace (default build,test,sanitize,bench)
# clustertrace: dev/cluster_trace.cu (a B = 1 call on the cluster path: graph
# timings, then CTA 0's stages), CLUSTER_TRACE_ARGS (default "32 50 0.9 480").
# rowctatrace: TRACE_VOCABS, TRACE_ROWS (anchors, gaussian or dominant),
# TRACE_BATCHES (comma list), and TRACE_VARIANT_FLAGS for more traces built
# with other knobs ('|'-separated sets: rowcta-trace-variant{,1,2,...}.log).
# splittrace: likewise SPLIT_TRACE_VARIANT_FLAGS (split-trace-variant<i>.log).
# profile: Nsight Compute, every section and per-line stall samples (clocks
# left alone), of the pivot kernel for PROFILE_SPECS (batch:case[:dtype] ...).
# test: GTEST_FILTER (gtest's own variable) runs part of the suite,
# TEST_TIMEOUT (default 420 s) bounds it, and a timeout stops the script (a
# hung kernel would hang every later step).  TEST_SHARDS (default 1) runs the
# suite as that many gtest shards at once (the CPU backend's oracle, not the
# GPU, bounds the suite, which outgrew 420 s in one process), each
# with its log (gpu-tests-<i>.log) and report, merged by
# scripts/gpu_tests_report.py into gpu-report.json.  sanitize: SAN_FILTER (default:
# the random matrix, bad parameters, the row-CTA and plain-race graph tests),
# SAN_TIMEOUT; SAN_TOOLS (default "memcheck racecheck initcheck") picks the tools.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
STEPS=${1:-build,test,sanitize,bench}
BUILD=build/h200
export TOKENSIFT_COMMIT=${TOKENSIFT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
has() { [[ ",$STEPS," == *",$1,"* ]]; }
log() { echo "== $(date +%T) $*"; }
# An Nsight Compute report ($1.ncu-rep) as CSV pages for reading here (the
# details and the per-line source page), its headline metrics, then dropped.
ncu_export() {
  ncu -i "$1.ncu-rep" --page details --csv >"$1-details.csv" 2>&1
  ncu -i "$1.ncu-rep" --page source --csv --print-source cuda,sass >"$1-source.csv" 2>&1 ||
    ncu -i "$1.ncu-rep" --page source --csv >"$1-source.csv" 2>&1
  grep -E "Duration|Issue Slots Busy|Memory Throughput|Achieved Occupancy|Registers Per|No Eligible|Warp Cycles Per Issued" \
    "$1-details.csv" | head -12
  rm -f "$1.ncu-rep"
}
# A dev/ probe built against the library's headers: $1 the probe's name,
# then extra nvcc flags (after BUILD_CUDA_FLAGS, so the probe sees the
# library's knobs); the compiler's output appends to probe-build.log; the
# binary is /tmp/$name unless PROBE_OUT names another path.
build_probe() {
  local name=$1; shift
  # shellcheck disable=SC2086  # BUILD_CUDA_FLAGS is a list of flags
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Iinclude -Isrc ${BUILD_CUDA_FLAGS:-} "$@" \
    dev/$name.cu src/cuda/greedy_argmax.cu src/cuda/plain_race.cu -o "${PROBE_OUT:-/tmp/$name}" 2>>"$OUT/probe-build.log"
}
# The sampler benchmark alone, built in $1 with CUDA flags $2 (policy knobs),
# its build log in $3.
build_bench_variant() {
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
        "-DCMAKE_CUDA_FLAGS=$2" >"$3" 2>&1 &&
  cmake --build "$1" -j16 --target sampler_bench >>"$3" 2>&1 || tail -20 "$3"
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"

# PREBUILT: a folder of binaries built on another x86-64 machine with the same
# flags (scripts/prebuild.sh; carried, e.g. dev/build/prebuilt): the library,
# the GPU tests, the benchmark and any trace probes are put in place and not
# rebuilt, so a call spends its time on the GPU (skip the build step).
if [ -n "${PREBUILT:-}" ]; then
  mkdir -p $BUILD/src $BUILD/tests/gpu $BUILD/bench
  cp -P "$PREBUILT"/libtokensift.so* $BUILD/src/ && cp "$PREBUILT"/tokensift_test_gpu $BUILD/tests/gpu/ &&
    cp "$PREBUILT"/sampler_bench $BUILD/bench/ || { echo "PREBUILT=$PREBUILT lacks a binary"; exit 1; }
  for p in "$PREBUILT"/split_trace* "$PREBUILT"/rowcta_trace* "$PREBUILT"/cluster_trace*; do [ -x "$p" ] && cp "$p" /tmp/; done
  export LD_LIBRARY_PATH=$PWD/$BUILD/src:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  cat "$PREBUILT/commit.txt" 2>/dev/null | sed 's/^/prebuilt at /'
  # Another machine's binaries may want a newer libstdc++ or glibc than this one has.
  if ! $BUILD/tests/gpu/tokensift_test_gpu --gtest_list_tests >/dev/null 2>"$OUT/prebuilt.err"; then
    echo "the prebuilt binaries do not run here ($(head -c 300 "$OUT/prebuilt.err")): building"
    rm -rf $BUILD; unset PREBUILT
    has build || STEPS="build,$STEPS"
  fi
fi
probe_fresh() { [ -z "${PREBUILT:-}" ]; }  # probes are built here unless carried

# The trace probe compiles on the CPU while the GPU runs the tests.
if has rowctatrace && probe_fresh; then rm -f /tmp/rowcta_trace; build_probe rowcta_trace -DTOKENSIFT_ROWCTA_TRACE & fi
# TRACE_VARIANT_FLAGS: the same trace built with other policy knobs too (the
# same-run baseline of a knob), run after the main one; sets of flags are
# separated by '|', the i-th (from 0) built as /tmp/rowcta_trace_v<i>.
IFS='|' read -r -a trace_vsets <<<"${TRACE_VARIANT_FLAGS:-}"
build_trace_variant() {  # $1: the set's number
  # shellcheck disable=SC2086  # a flag list
  PROBE_OUT=/tmp/rowcta_trace_v$1 build_probe rowcta_trace -DTOKENSIFT_ROWCTA_TRACE ${trace_vsets[$1]}
}
if has rowctatrace && probe_fresh; then
  for vi in "${!trace_vsets[@]}"; do rm -f "/tmp/rowcta_trace_v$vi"; build_trace_variant "$vi" & done
fi
if has splittrace && probe_fresh; then rm -f /tmp/split_trace; build_probe split_trace -DTOKENSIFT_SPLIT_TRACE & fi
# SPLIT_TRACE_VARIANT_FLAGS: the split trace built with other policy knobs
# too ('|'-separated sets, the i-th as /tmp/split_trace_v<i>), run after the
# main one: a knob's same-run baseline (split-trace-variant<i>.log).
IFS='|' read -r -a split_vsets <<<"${SPLIT_TRACE_VARIANT_FLAGS:-}"
if has splittrace && probe_fresh; then
  for vi in "${!split_vsets[@]}"; do
    rm -f "/tmp/split_trace_v$vi"
    # shellcheck disable=SC2086  # a flag list
    PROBE_OUT=/tmp/split_trace_v$vi build_probe split_trace -DTOKENSIFT_SPLIT_TRACE ${split_vsets[$vi]} &
  done
fi

if has build; then
  log build
  # BUILD_CUDA_FLAGS: policy knobs for the whole build (tests included),
  # e.g. to validate a knob's setting before it becomes the default.
  cmake -S . -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
        "-DCMAKE_CUDA_FLAGS=${BUILD_CUDA_FLAGS:-}" \
        -DTOKENSIFT_BUILD_EXAMPLES=${TOKENSIFT_BUILD_EXAMPLES:-OFF} >"$OUT/build.log" 2>&1 &&
  cmake --build $BUILD -j16 >>"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  grep -E "registers|spill" "$OUT/build.log" | sort | uniq -c | head -20
fi

# A reduced matrix (three rows per shape: every code path, all vocab sizes)
# under each tool; the full matrix runs in the test step without
# instrumentation.  SAN_PARALLEL=1 runs the tools side by side.
san_tool() {
  TOKENSIFT_GPU_ROW_SCALE=0.00002 timeout ${SAN_TIMEOUT:-150} compute-sanitizer --tool "$1" --error-exitcode 9 \
    $BUILD/tests/gpu/tokensift_test_gpu --gtest_filter="${SAN_FILTER:-*PivotMatches*:*Invalid*:*GraphCaptureAndReplayRowCta*:*GraphCaptureAndReplayPlain*}" >"$OUT/san-$1.log" 2>&1
  local rc=$?
  echo "$1 rc=$rc"; tail -4 "$OUT/san-$1.log"
  echo "$1 $rc" >>"$OUT/sanitizers.txt"
}
run_sanitizers() {
  for tool in ${SAN_TOOLS:-memcheck racecheck initcheck}; do
    log "compute-sanitizer $tool"
    if [ "${SAN_PARALLEL:-0}" = 1 ]; then san_tool "$tool" & else san_tool "$tool"; fi
  done
  wait
}
# SAN_BESIDE_TESTS=1: the sanitizers start before the test step and run
# beside it (separate processes; the step waits for them after the tests).
san_pid=
if has sanitize && has test && [ "${SAN_BESIDE_TESTS:-0}" = 1 ]; then run_sanitizers & san_pid=$!; fi

if has test; then
  log gpu tests
  # The whole log, line-buffered (stdbuf where the machine has it), so that
  # a run cut by TEST_TIMEOUT keeps the tests that finished; its tail here.
  linebuf=$(command -v stdbuf >/dev/null && echo "stdbuf -oL -eL")
  # One run of the test binary: its log $1, its report $2, and for a shard
  # $3 = its index of $4 shards.
  gpu_test_run() {
    local shard=()
    [ $# -ge 4 ] && shard=(GTEST_SHARD_INDEX="$3" GTEST_TOTAL_SHARDS="$4")
    # shellcheck disable=SC2086  # linebuf is a command prefix or nothing
    env "${shard[@]}" TOKENSIFT_GPU_REPORT="$2" TOKENSIFT_GPU_ROW_SCALE="${ROW_SCALE:-1}" timeout ${TEST_TIMEOUT:-420} \
      $linebuf $BUILD/tests/gpu/tokensift_test_gpu --gtest_brief=1 >"$1" 2>&1
  }
  shards=${TEST_SHARDS:-1}
  if [ "$shards" -le 1 ]; then
    gpu_test_run "$OUT/gpu-tests.log" "$OUT/gpu-report.json"
    rc=$?
    tail -60 "$OUT/gpu-tests.log"
  else
    # Shards of the suite side by side; rc is the worst shard's (124 if any timed out).
    pids=()
    for ((i = 0; i < shards; ++i)); do
      gpu_test_run "$OUT/gpu-tests-$i.log" "$OUT/gpu-report-$i.json" "$i" "$shards" &
      pids+=($!)
    done
    rc=0
    for pid in "${pids[@]}"; do
      wait "$pid"; r=$?
      if [ "$r" = 124 ]; then rc=124; elif [ "$r" != 0 ] && [ "$rc" = 0 ]; then rc=$r; fi
    done
    for ((i = 0; i < shards; ++i)); do echo "-- shard $i"; tail -25 "$OUT/gpu-tests-$i.log"; done
    python3 scripts/gpu_tests_report.py merge "$OUT"/gpu-report-*.json >"$OUT/gpu-report.json"
  fi
  echo "gpu tests rc=$rc" | tee "$OUT/gpu-tests-rc.txt"
  cat "$OUT/gpu-report.json" 2>/dev/null
  # A kernel that hangs would hang every later step too: stop (device time is scarce).
  if [ "$rc" = 124 ]; then echo "gpu tests timed out (TEST_TIMEOUT ${TEST_TIMEOUT:-420} s): later steps skipped"; exit 1; fi
fi

if has sanitize; then
  if [ -n "$san_pid" ]; then wait "$san_pid"; else run_sanitizers; fi
  cat "$OUT/sanitizers.txt" 2>/dev/null
fi

if has benchquick; then
  log bench quick
  # QUICK_VOCABS / QUICK_CASES / QUICK_DISTS (comma lists) narrow or widen it.
  $BUILD/bench/sampler_bench --out "$OUT/bench-quick.json" --vocabs ${QUICK_VOCABS:-129280} --batches ${QUICK_BATCHES:-1,64,1024} \
    --dists ${QUICK_DISTS:-outlier_head} --algos ${QUICK_ALGOS:-pivot,sort} --sort-max-batch 64 --reps 10 \
    ${QUICK_CASES:+--cases $QUICK_CASES} 2>&1 | tail -80
fi

if has rowctatrace; then
  # The row-CTA kernel's stages per CTA at B = 256 and 1024 (dev/rowcta_trace.cu),
  # built beside the library (in the background since the build step).
  log rowcta trace
  wait
  [ -x /tmp/rowcta_trace ] || build_probe rowcta_trace -DTOKENSIFT_ROWCTA_TRACE || tail -20 "$OUT/probe-build.log"
  for v in ${TRACE_VOCABS:-129280}; do /tmp/rowcta_trace $v ${TRACE_ROWS:-anchors} ${TRACE_BATCHES:-256,1024} 2>&1; done | tee "$OUT/rowcta-trace.log"
  for vi in "${!trace_vsets[@]}"; do
    log "rowcta trace variant $vi: ${trace_vsets[$vi]}"
    [ -x /tmp/rowcta_trace_v$vi ] || build_trace_variant $vi || tail -20 "$OUT/probe-build.log"
    sfx=$([ "$vi" = 0 ] && echo "" || echo "$vi")  # the first keeps its old name
    for v in ${TRACE_VOCABS:-129280}; do /tmp/rowcta_trace_v$vi $v ${TRACE_ROWS:-anchors} ${TRACE_BATCHES:-256,1024} 2>&1; done | tee "$OUT/rowcta-trace-variant$sfx.log"
  done
fi

if has splittrace; then
  # A top-p call's launches and each deferred row's stages through the split
  # fallback (dev/split_trace.cu), built beside the library since the build step.
  log split trace
  wait
  [ -x /tmp/split_trace ] || build_probe split_trace -DTOKENSIFT_SPLIT_TRACE || tail -20 "$OUT/probe-build.log"
  /tmp/split_trace ${TRACE_VOCABS:-129280} 2>&1 | tee "$OUT/split-trace.log"
  for vi in "${!split_vsets[@]}"; do
    log "split trace variant $vi: ${split_vsets[$vi]}"
    [ -x /tmp/split_trace_v$vi ] && /tmp/split_trace_v$vi ${TRACE_VOCABS:-129280} 2>&1 | tee "$OUT/split-trace-variant$vi.log"
  done
fi

if has sortprobe; then
  # The block bitonic sort against a rank sort on 32..4,096 keys
  # (dev/sort_probe.cu: the merge's and the split resolve's sorts).
  log sort probe
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc dev/sort_probe.cu -o /tmp/sort_probe \
    2>>"$OUT/probe-build.log" && /tmp/sort_probe 2>&1 | tee "$OUT/sort-probe.log"
fi

if has clustertrace; then
  log cluster trace
  if probe_fresh; then
    build_probe cluster_trace &
    PROBE_OUT=/tmp/cluster_trace_v0 build_probe cluster_trace -DTOKENSIFT_CLUSTER_TRACE &
    wait
  fi
  { echo "-- untraced"; /tmp/cluster_trace ${CLUSTER_TRACE_ARGS:-32 50 0.9 480} 2>&1
    echo "-- traced"; /tmp/cluster_trace_v0 ${CLUSTER_TRACE_ARGS:-32 50 0.9 480} 2>&1
    echo "-- traced, warm"; CLUSTER_TRACE_WARM=1 /tmp/cluster_trace_v0 32 50 0.9 0 2>&1
    echo "-- traced, flat rows"; /tmp/cluster_trace_v0 32 50 0.9 0 flat 2>&1; } | tee "$OUT/cluster-trace.log"
fi

if has probe; then
  # Row-by-row probes (dev/): the merging CTA's stages at B = 1, and the
  # fallback rows of top-p alone.
  log probe
  build_probe merge_probe -DTOKENSIFT_MERGE_TRACE &
  build_probe fallback_probe -DTOKENSIFT_FB_TRACE &
  build_probe cluster_probe &
  build_probe rowcta_probe &
  wait
  for args in "8 50 0.9 0" "8 50 1 0" "8 0 0.9 0" "8 0 1 0.05"; do
    echo "-- merge_probe $args"; /tmp/merge_probe $args 2>&1 | tail -11
  done | tee "$OUT/merge-probe.log"
  /tmp/fallback_probe 32 0.9 2 20 2>&1 | tail -34 | tee "$OUT/fallback-probe.log"
  # A cluster of 16 CTAs per row agreeing on the row's threshold in DSMEM
  # (perf-notes step 5 b): its B = 1 time and whether it gives the library's bits.
  for args in "16 50 0.9" "16 50 1" "16 8 1"; do
    echo "-- cluster_probe $args"; /tmp/cluster_probe $args 2>&1 | tail -20
  done | tee "$OUT/cluster-probe.log"
  # One CTA per row streaming against a rising threshold (perf-notes step 3).
  for args in "1024 50 1" "1024 50 0.9" "256 50 1" "1024 8 1"; do
    echo "-- rowcta_probe $args"; /tmp/rowcta_probe $args 2>&1 | tail -8
  done | tee "$OUT/rowcta-probe.log"
fi

if has variant; then
  # The same benchmark built with other policy knobs (pivot_policy.cuh), e.g.
  # VARIANT_FLAGS=-DTOKENSIFT_PIVOT_ITEMS=32, or
  # VARIANT_FLAGS=-DTOKENSIFT_PIVOT_GROUPS_MIN_WAVES=1000000 (per-chunk kernel only).
  # Several builds in one call: separate the flag sets with '|', e.g.
  # VARIANT_FLAGS='-DTOKENSIFT_PIVOT_GUESS_ONCE=0|-DTOKENSIFT_PIVOT_GUESS_RETRIES=0'.
  IFS='|' read -r -a vsets <<<"${VARIANT_FLAGS:--DTOKENSIFT_PIVOT_ITEMS=${VARIANT_ITEMS:-32}}"
  vi=0
  for vflags in "${vsets[@]}"; do
    log "variant $vi: $vflags"
    vb=build/h200-v$vi
    vlib=
    if [ -n "${PREBUILT:-}" ] && [ -x "$PREBUILT/variant$vi/sampler_bench" ]; then
      # Carried (scripts/prebuild.sh with the same VARIANT_FLAGS): its own library first.
      [ "$(cat "$PREBUILT/variant$vi/flags.txt")" = "$vflags" ] || { echo "variant $vi: prebuilt with other flags"; exit 1; }
      mkdir -p $vb/bench && cp "$PREBUILT/variant$vi/sampler_bench" $vb/bench/
      vlib=$(cd "$PREBUILT/variant$vi" && pwd)
    else
      build_bench_variant $vb "$vflags" "$OUT/build-variant$vi.log"
    fi
    LD_LIBRARY_PATH=${vlib:+$vlib:}${LD_LIBRARY_PATH:-} $vb/bench/sampler_bench --out "$OUT/bench-variant$vi.json" --vocabs ${VARIANT_VOCABS:-129280} --batches ${VARIANT_BATCHES:-1,64,256,1024} \
      --dists ${VARIANT_DISTS:-outlier_head} --algos pivot --reps 10 ${VARIANT_CASES:+--cases $VARIANT_CASES} 2>&1 | tail -40
    vi=$((vi + 1))
  done
fi

if has benchflat; then
  log bench flat
  $BUILD/bench/sampler_bench --out "$OUT/bench-flat-quick.json" --vocabs 129280 --batches 1,256,1024 \
    --dists flat,dominant --algos pivot --cases p0.9,k50_p0.9,minp0.05 --reps 5 2>&1 | tail -40
fi

if has profile; then
  # One launch of the main kernel per setting, every section, then the
  # details and the per-line (source) pages as CSV for reading here.
  log profile
  # A spec is B:case or B:case:dtype (fp32 when left out); PROFILE_DISTS the
  # rows (outlier_head: the anchors'; gaussian defers every p0.9 row).
  for spec in ${PROFILE_SPECS:-1:k50 1024:k50 1024:plain}; do
    b=${spec%%:*}; c=${spec#*:}; dt=fp32
    if [[ $c == *:* ]]; then dt=${c#*:}; c=${c%%:*}; fi
    rep="$OUT/ncu-b$b-$c$([ "$dt" = fp32 ] || echo "-$dt")"
    timeout 200 ncu --clock-control none --set full --import-source yes -k regex:${PROFILE_KERNEL:-pivot_sample} \
      --launch-skip 2 --launch-count 1 -o "$rep" -f \
      $BUILD/bench/sampler_bench --out /dev/null --vocabs 129280 --batches $b --dists ${PROFILE_DISTS:-outlier_head} --algos pivot \
      --dtypes "$dt" --cases "$c" --reps 3 >"$rep.log" 2>&1
    echo "ncu B=$b $c $dt rc=$?"
    ncu_export "$rep"
  done
fi

if has profileprobe; then
  # dev/rowcta_probe's kernel beside the library's row-CTA kernel, one launch
  # each at B = 1024, k50 (the probe ran 160 us where a library build of the
  # same shape, 16 logits per thread at 4 CTAs per SM, ran 229: perf-notes
  # next step 3).  Build the library first (`build`); set VARIANT_FLAGS-like
  # knobs for the library side with PROBE_LIB_FLAGS (a separate build).
  log profile probe
  build_probe rowcta_probe || tail -5 "$OUT/probe-build.log"
  lib=$BUILD
  if [ -n "${PROBE_LIB_FLAGS:-}" ]; then
    lib=build/h200-probe-lib
    build_bench_variant $lib "$PROBE_LIB_FLAGS" "$OUT/build-probe-lib.log"
  fi
  for who in probe lib; do
    rep="$OUT/ncu-$who-b1024-k50"
    if [ $who = probe ]; then
      timeout 200 ncu --clock-control none --set full --import-source yes -k regex:probe_rowcta_kernel \
        --launch-skip 3 --launch-count 1 -o "$rep" -f /tmp/rowcta_probe 1024 50 1 >"$rep.log" 2>&1
    else
      timeout 200 ncu --clock-control none --set full --import-source yes -k regex:rowcta_topk \
        --launch-skip 2 --launch-count 1 -o "$rep" -f \
        $lib/bench/sampler_bench --out /dev/null --vocabs 129280 --batches 1024 --dists outlier_head --algos pivot \
        --dtypes fp32 --cases k50 --reps 3 >"$rep.log" 2>&1
    fi
    echo "ncu $who rc=$?"
    ncu_export "$rep"
  done
fi

if has kernels; then
  # The sampler's kernels (pivot, split, greedy) of a few calls with their
  # durations (Nsight Compute serializes launches and flushes caches, so
  # these are cold, one-at-a-time times): which launch of a call costs what,
  # e.g. the split launches of p0.9 calls.
  log kernels
  for spec in ${KERNEL_SPECS:-1:k50 64:p0.9 256:p0.9}; do
    b=${spec%%:*}; c=${spec#*:}
    timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum -k 'regex:pivot_|split_|greedy_' \
      --launch-skip 6 --launch-count 12 \
      $BUILD/bench/sampler_bench --out /dev/null --vocabs 129280 --batches $b --dists outlier_head --algos pivot \
      --dtypes fp32 --cases $c --reps 3 >"$OUT/kernels-b$b-$c.log" 2>&1
    echo "-- B=$b $c (rc=$?)"
    awk '/\)x\(/ {name=$0; sub(/^ +/, "", name); sub(/^void /, "", name); sub(/[<(].*/, "", name)}
         /gpu__time_duration.sum/ {print name, $(NF-1), $NF}' "$OUT/kernels-b$b-$c.log"
  done
fi

if has bench; then
  log bench
  # Main table: the anchors' distribution, the issue's whole grid.
  timeout 330 $BUILD/bench/sampler_bench --out "$OUT/sampler-bench.json" --algos pivot,sort --sort-max-batch 16 \
    --dists outlier_head --reps ${BENCH_REPS:-9} 2>&1 | tee "$OUT/bench.log" | tail -12
  # Second table: flat and one-dominant-token rows (V = 129280).
  timeout 150 $BUILD/bench/sampler_bench --out "$OUT/sampler-bench-flat.json" --algos pivot --vocabs 129280 \
    --dists flat,dominant --reps ${BENCH_REPS:-9} 2>&1 | tee "$OUT/bench-flat.log" | tail -6
fi
log done
