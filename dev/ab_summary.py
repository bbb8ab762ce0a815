"""Summary of dev/ab_bench.sh: per cell the median over rounds of A's and B's
us_graph and B's change, and per (dist, case, dtype) the geomean change.

    python3 dev/ab_summary.py DIR TAG
"""
import glob, json, math, statistics, sys, collections

d, tag = sys.argv[1], sys.argv[2]
runs = collections.defaultdict(lambda: {"a": [], "b": []})
for path in sorted(glob.glob(f"{d}/{tag}-r*-[ab].json")):
    side = path[-6]
    for rec in json.load(open(path))["records"]:
        key = (rec["dtype"], rec.get("dist", "outlier_head"), rec["vocab"], rec["batch"], rec["case"])
        runs[key][side].append(rec["us_graph"])
groups = collections.defaultdict(list)
for key in sorted(runs):
    a, b = runs[key]["a"], runs[key]["b"]
    if not a or not b:
        continue
    ma, mb = statistics.median(a), statistics.median(b)
    change = 100.0 * (mb / ma - 1.0)
    groups[(key[1], key[4], key[0])].append(math.log(mb / ma))
    print(f"{key}  A {ma:9.1f}  B {mb:9.1f}  {change:+6.1f} %   (A {' '.join(f'{x:.1f}' for x in a)} | B {' '.join(f'{x:.1f}' for x in b)})")
for g, logs in sorted(groups.items()):
    print(f"{g} geomean {100.0 * (math.exp(sum(logs) / len(logs)) - 1.0):+.2f} % over {len(logs)} cells")
