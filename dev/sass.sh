#!/usr/bin/env bash
# SASS of the library's kernels on a machine without a GPU: the nearest thing
# to a profile between device calls.  Compiles one translation unit for
# sm_90a, prints ptxas' registers and spills per kernel, and for each
# streaming loop (a group of 16-byte evict-first loads, __ldcs) the
# instruction mix of the window that follows it.
#
#   dev/sass.sh [TU] [kernel-regex] [window]
#   dev/sass.sh src/cuda/pivot_sampler_bf16.cu rowcta_topk_kernel 400
#
# cuobjdump is not in the CUDA toolkit here; NVIDIA ships it on PyPI
# (nvidia-cuda-cuobjdump), fetched once into .tools/ (ignored by git).  A
# development aid only: nothing in the build or the tests depends on it.
set -euo pipefail
cd "$(dirname "$0")/.."
TU=${1:-src/cuda/pivot_sampler_f32.cu}
KERNEL=${2:-rowcta_topk_kernel}
WINDOW=${3:-300}
TOOLS=$PWD/.tools
# cuobjdump calls nvdisasm: both wheels.
CUOBJDUMP=$(command -v cuobjdump || true)
if [ -z "$CUOBJDUMP" ] || ! command -v nvdisasm >/dev/null; then
  for tool in cuobjdump nvdisasm; do
    if [ -z "$(find "$TOOLS" -name $tool -type f 2>/dev/null | head -1)" ]; then
      mkdir -p "$TOOLS"
      python3 -m pip download --no-deps -q nvidia-cuda-$tool -d "$TOOLS"
      python3 -m zipfile -e "$TOOLS"/nvidia_cuda_$tool-*.whl "$TOOLS/$tool"
    fi
    chmod +x "$(find "$TOOLS" -name $tool -type f | head -1)"
  done
  CUOBJDUMP=$(find "$TOOLS" -name cuobjdump -type f | head -1)
  export PATH="$(dirname "$(find "$TOOLS" -name nvdisasm -type f | head -1)"):$PATH"
fi
OBJ=$(mktemp /tmp/tokensift-sass.XXXX.o)
trap 'rm -f "$OBJ" "$OBJ.sass"' EXIT
nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Iinclude -Isrc \
  ${NVCC_FLAGS:-} -Xptxas -v -c "$TU" -o "$OBJ" 2>&1 |
  grep -A2 "Compiling entry function.*$KERNEL" | grep -E "entry|spill|registers" |
  sed -E 's/.*entry function .(_Z[^ ]*). for.*/\1/' || true
"$CUOBJDUMP" -sass "$OBJ" >"$OBJ.sass"
python3 - "$OBJ.sass" "$KERNEL" "$WINDOW" <<'PY'
import collections, re, sys
path, kernel, window = sys.argv[1], sys.argv[2], int(sys.argv[3])
funcs, name = {}, None
for line in open(path):
    m = re.search(r"Function : (\S+)", line)
    if m:
        name = m.group(1)
        funcs[name] = []
        continue
    m = re.match(r"\s+/\*[0-9a-f]+\*/\s+(.*?);", line)
    if name and m:
        funcs[name].append(m.group(1).strip())
for fname, ins in funcs.items():
    if not re.search(kernel, fname):
        continue
    print(f"== {fname}: {len(ins)} instructions, {sum('STL' in i for i in ins)} STL, {sum('LDL' in i for i in ins)} LDL")
    # A group: evict-first 16-byte loads with no other such load in the 16 before.
    starts = [i for i, s in enumerate(ins)
              if "LDG.E.EF.128" in s and not any("LDG.E.EF.128" in p for p in ins[max(0, i - 16):i])]
    for st in starts:
        win = ins[st:st + window]
        ops = collections.Counter(s.split()[1] if s.startswith("@") else s.split()[0] for s in win)
        print(f"  loads at {st}: next {len(win)}: " + ", ".join(f"{k} {v}" for k, v in ops.most_common(10)))
PY
