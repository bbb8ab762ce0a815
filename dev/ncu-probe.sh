#!/usr/bin/env bash
# Dev probe: Nsight Compute source-level hot spots of the pivot kernel.
#   SPECS="1024 k50" OUT=... dev/ncu-probe.sh
set -uo pipefail
cd "$(dirname "$0")/.."
B=build/h200
O=${OUT:-/tmp}
[ -f $B/CMakeCache.txt ] || cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DTOKENSIFT_BUILD_TESTS=OFF -DTOKENSIFT_BUILD_EXAMPLES=OFF >/tmp/cfg.log 2>&1
cmake --build $B -j16 --target sampler_bench >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
for spec in ${SPECS:-"1024 k50" "1 k50"}; do
  set -- $spec
  tag=$1-$2
  echo "################ B=$1 case=$2"
  ncu --clock-control none --kernel-name regex:pivot_sample_kernel --launch-skip 8 --launch-count 1 \
    --set full --import-source yes -o $O/ncu-$tag -f \
    $B/bench/sampler_bench --vocabs 129280 --batches $1 --dtypes fp32 --dists outlier_head --algos pivot \
    --cases $2 --reps 1 --out /tmp/x.json > $O/ncu-run-$tag.txt 2>&1
  ncu --import $O/ncu-$tag.ncu-rep --page details > $O/ncu-details-$tag.txt 2>&1
  grep -E "Duration|Warp Cycles Per Issued|Achieved Occupancy|Registers Per" $O/ncu-details-$tag.txt
  ncu --import $O/ncu-$tag.ncu-rep --page source --print-source cuda --csv > $O/ncu-src-$tag.csv 2>&1 ||
    ncu --import $O/ncu-$tag.ncu-rep --page source --csv > $O/ncu-src-$tag.csv 2>&1
  python3 - "$O/ncu-src-$tag.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hdr_i = next((i for i, r in enumerate(rows) if any("Stall Sampling (All" in c for c in r)), None)
if hdr_i is None:
    print("no stall column; head:", rows[:3]); sys.exit()
hdr = rows[hdr_i]
col = next(i for i, c in enumerate(hdr) if "Stall Sampling (All" in c)
src = next((i for i, c in enumerate(hdr) if c in ("Source", "# Source")), 1)
line = next((i for i, c in enumerate(hdr) if c in ("Line", "#", "Address")), 0)
data = []
for r in rows[hdr_i + 1:]:
    try:
        data.append((float(r[col].replace(",", "")), r[line], r[src][:110]))
    except (ValueError, IndexError):
        pass
tot = sum(d[0] for d in data) or 1
for v, l, s in sorted(data, reverse=True)[:45]:
    print(f"{100*v/tot:5.1f}% {l:>6} {s}")
PY
  rm -f $O/ncu-$tag.ncu-rep
done
