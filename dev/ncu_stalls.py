#!/usr/bin/env python3
"""Warp-stall samples from an Nsight Compute source page (gpu-check's
ncu-*-source.csv, `--print-source cuda,sass`): totals per stall reason and
the source lines with the most samples, with their top reasons.

  python3 dev/ncu_stalls.py ncu-b1-p0.9-source.csv [--top 25]
"""
import argparse
import csv
import os
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    path = None
    header = None
    per_line = defaultdict(lambda: defaultdict(float))
    text = {}
    totals = defaultdict(float)
    for row in csv.reader(open(args.csv, newline="")):
        if not row:
            continue
        if row[0] == "File Path":
            path, header = row[1], None
            continue
        if row[0] == "Function Name":
            continue
        if row[0] == "Line No":
            header = row
            continue
        if header is None or not row[0].isdigit():
            continue
        rec = dict(zip(header, row))
        for k, v in rec.items():
            # Only the all-samples columns (the "(Not Issued)" ones repeat a subset).
            if k.startswith("stall_") and "Not Issued" not in k and v:
                try:
                    x = float(v.replace(",", ""))
                except ValueError:
                    continue
                key = (os.path.basename(path), int(row[0]))
                per_line[key][k[6:]] += x
                totals[k[6:]] += x
                text[key] = row[1].strip()[:90]
    grand = sum(totals.values()) or 1.0
    print(f"{args.csv}: {grand:.0f} stall samples")
    for k, v in sorted(totals.items(), key=lambda kv: -kv[1])[:12]:
        print(f"  {k:<18} {v:8.0f}  {100 * v / grand:5.1f} %")
    print(f"top {args.top} source lines:")
    ranked = sorted(per_line.items(), key=lambda kv: -sum(kv[1].values()))[: args.top]
    for (f, ln), st in ranked:
        s = sum(st.values())
        reasons = ", ".join(f"{k} {100 * v / s:.0f}%" for k, v in sorted(st.items(), key=lambda kv: -kv[1])[:3])
        print(f"  {100 * s / grand:5.1f} %  {f}:{ln:<5} [{reasons}]  {text[(f, ln)]}")


if __name__ == "__main__":
    main()
