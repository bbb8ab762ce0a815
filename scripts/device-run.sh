#!/usr/bin/env bash
# The one device call: runs the named parts, each into its own folder, and
# packs everything into $OUT/results.tgz (the device returns at most 8 files).
#
#   scripts/device-run.sh check:build,test,benchquick python decode peers
#
# Parts: check:<steps> (scripts/gpu-check.sh), python (scripts/gpu-python.sh),
# decode (scripts/gpu-decode.sh), peers (scripts/gpu-peers.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL_OUT=${OUT:-$PWD/gpu-out}
WORK=$(mktemp -d /tmp/tokensift-run.XXXX)
# The device copy's git metadata need not match the tree that was sent: name
# the commit in the run command (TOKENSIFT_COMMIT=abc1234 bash scripts/...).
# A .commit file is read as a fallback; it is git-ignored (a tracked one went
# stale and named the wrong commit in a result), so it travels only when the
# caller's tool carries it.
export TOKENSIFT_COMMIT=${TOKENSIFT_COMMIT:-$(cat .commit 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
export COMMIT=$TOKENSIFT_COMMIT
for part in "$@"; do
  name=${part%%:*}
  args=${part#*:}
  [ "$args" = "$part" ] && args=""
  mkdir -p "$WORK/$name"
  echo "######## $name $args ($(date +%T))"
  case $name in
    check) OUT=$WORK/check bash scripts/gpu-check.sh "$args" ;;
    python) OUT=$WORK/python bash scripts/gpu-python.sh 2>&1 | tail -25 ;;
    decode) OUT=$WORK/decode bash scripts/gpu-decode.sh 2>&1 | tail -40 ;;
    peers) OUT=$WORK/peers bash scripts/gpu-peers.sh ${args//,/ } 2>&1 | tail -40 ;;
  esac
  echo "######## $name rc=$? ($(date +%T))"
done
tar -C "$WORK" -czf "$FINAL_OUT/results.tgz" .
ls -la "$FINAL_OUT"
