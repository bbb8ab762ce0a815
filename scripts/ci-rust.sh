#!/usr/bin/env bash
# CI for the Rust crate (rust/tokensift, CPU only): cargo test and the
# examples, offline (the crate has no dependencies), against the
# libtokensift.so that scripts/test.sh built in build/default/src, or one
# built here (preset cpu, build/rust-cpu) when that is absent.  Skipped, with
# a message and exit status 0, when cargo is not installed.
#
# Environment: TOKENSIFT_LIB_DIR (use this libtokensift.so directory instead),
# CARGO (the cargo binary), TOKENSIFT_JOBS.  Nothing is written outside
# build/: CARGO_TARGET_DIR is build/rust-target.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

cargo="${CARGO:-}"
if [ -z "$cargo" ]; then
  if command -v cargo >/dev/null 2>&1; then
    cargo="$(command -v cargo)"
  elif [ -x "${HOME:-/root}/.cargo/bin/cargo" ]; then
    cargo="${HOME:-/root}/.cargo/bin/cargo"
  fi
fi
if [ -z "$cargo" ]; then
  echo "== rust crate: cargo not found (PATH, \$HOME/.cargo/bin): Rust checks skipped"
  exit 0
fi
# rustc and rustdoc next to cargo (a rustup install not on PATH).
export PATH="$(dirname "$cargo"):$PATH"
echo "== rust crate: $("$cargo" --version), $(rustc --version)"

if [ -n "${TOKENSIFT_LIB_DIR:-}" ]; then
  lib_dir="$TOKENSIFT_LIB_DIR"
elif [ -e build/default/src/libtokensift.so ]; then
  lib_dir="$root/build/default/src"
else
  echo "== rust crate: build/default/src/libtokensift.so absent: building the library (preset cpu, build/rust-cpu)"
  cmake --preset cpu -B build/rust-cpu -DTOKENSIFT_BUILD_TESTS=OFF -DTOKENSIFT_BUILD_BENCH=OFF \
    -DTOKENSIFT_BUILD_EXAMPLES=OFF > build/rust-cpu-configure.log 2>&1 || {
    tail -n 40 build/rust-cpu-configure.log
    echo "ci-rust: cmake configure failed" >&2
    exit 1
  }
  cmake --build build/rust-cpu -j "${TOKENSIFT_JOBS:-$(nproc)}" --target tokensift
  lib_dir="$root/build/rust-cpu/src"
fi
if [ ! -e "$lib_dir/libtokensift.so" ]; then
  echo "ci-rust: no libtokensift.so in $lib_dir" >&2
  exit 1
fi
echo "== rust crate: linking $lib_dir/libtokensift.so"

export TOKENSIFT_LIB_DIR="$lib_dir"
export CARGO_TARGET_DIR="$root/build/rust-target"
export CARGO_NET_OFFLINE=true
export RUSTFLAGS="${RUSTFLAGS:--D warnings}"  # the crate builds without warnings
manifest=(--manifest-path rust/tokensift/Cargo.toml --offline --locked)

echo "== rust crate: cargo test"
"$cargo" test "${manifest[@]}"
echo "== rust crate: cargo build --examples"
"$cargo" build "${manifest[@]}" --examples
"$CARGO_TARGET_DIR/debug/examples/sample"
