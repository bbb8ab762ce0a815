#!/usr/bin/env bash
# Builds tokensift and runs every test.
#
#   scripts/test.sh                 # configure (preset "default"), build, ctest
#   TOKENSIFT_PRESET=cpu scripts/test.sh     # CPU-only build
#   TOKENSIFT_TEST_LABEL=cpu scripts/test.sh # only the tests labelled cpu
#
# The CUDA backend and the GPU tests are compiled whenever nvcc is present
# (sm_90); GPU tests (ctest label gpu) report "skipped" on a machine without a
# device.  Environment: TOKENSIFT_PRESET, TOKENSIFT_BUILD_DIR, TOKENSIFT_JOBS,
# TOKENSIFT_CMAKE_ARGS (extra configure arguments), TOKENSIFT_TEST_LABEL,
# TOKENSIFT_TEST_SCALE (multiplies the randomized test budgets).
set -euo pipefail

# shellcheck source=scripts/lib/build-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/build-env.sh"

t0=$(date +%s)
# shellcheck disable=SC2086
cmake --preset "$preset" -B "$build_dir" -DTOKENSIFT_BUILD_TESTS=ON ${TOKENSIFT_CMAKE_ARGS:-}
t1=$(date +%s)
cmake --build "$build_dir" -j "$jobs"
t2=$(date +%s)

ctest_args=(--test-dir "$build_dir" --output-on-failure --timeout 1500)
if [ -n "${TOKENSIFT_TEST_LABEL:-}" ]; then
  ctest_args+=(-L "$TOKENSIFT_TEST_LABEL")
fi
status=0
ctest "${ctest_args[@]}" || status=$?
t3=$(date +%s)

# The headline numbers of the randomized suites (ctest keeps test output to itself).
log="$build_dir/Testing/Temporary/LastTest.log"
if [ -f "$log" ]; then
  echo "---- test summaries"
  grep -hE "^(oracle agreement|log_f32|log_f64):|^[a-z_]+/[a-z_]+: kept|^\\[[A-Za-z0-9_.-]+\\] rows [0-9]" "$log" || true
fi
echo "---- times: configure $((t1 - t0)) s, build $((t2 - t1)) s, tests $((t3 - t2)) s"
exit "$status"
