#!/usr/bin/env python3
"""Warp-stall samples from an Nsight Compute source page (gpu-check's
ncu-*-source.csv, `--print-source cuda,sass`): totals per stall reason and
the source lines with the most samples, with their top reasons.

  python3 dev/ncu_stalls.py ncu-b1-p0.9-source.csv [--top 25]
      [--span resolve=pivot_fallback.cuh:254-300 ...]

--span NAME=FILE:FIRST-LAST (repeatable) also sums the samples of a line
range, e.g. one phase's function.  Where the page has the warp-level
executed-instruction column (Nsight's "Instructions Executed" /
inst_executed), each file, top line and span also gets its share of the
kernel's executed warp instructions.  Samples land on the source line of the
code that ran, so an inlined helper (bin_of, the contract's log) counts on
its own lines, whichever phase called it: a span holds what its lines
themselves cost.
"""
import argparse
import csv
import os
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--span", action="append", default=[], metavar="NAME=FILE:FIRST-LAST")
    args = ap.parse_args()
    spans = []
    for sp in args.span:
        name, _, where = sp.partition("=")
        f, _, rng = where.rpartition(":")
        a, _, b = rng.partition("-")
        if not (name and f and a.isdigit() and b.isdigit()):
            raise SystemExit(f"--span {sp!r}: want NAME=FILE:FIRST-LAST")
        spans.append((name, os.path.basename(f), int(a), int(b)))
    path = None
    header = None
    per_line = defaultdict(lambda: defaultdict(float))
    text = {}
    totals = defaultdict(float)
    instr = defaultdict(float)  # (file, line) -> warp instructions executed
    instr_col = None
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
            instr_col = next((c for c in header if c in ("Instructions Executed", "inst_executed")), None)
            continue
        if header is None or not row[0].isdigit():
            continue
        rec = dict(zip(header, row))
        if instr_col and rec.get(instr_col):
            try:
                instr[(os.path.basename(path), int(row[0]))] += float(rec[instr_col].replace(",", ""))
                text.setdefault((os.path.basename(path), int(row[0])), row[1].strip()[:90])
            except ValueError:
                pass
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
    itotal = sum(instr.values())
    if itotal:
        print(f"{itotal / 1e6:.2f}M warp instructions executed; by file:")
        by_file = defaultdict(float)
        for (f, _), v in instr.items():
            by_file[f] += v
        for f, v in sorted(by_file.items(), key=lambda kv: -kv[1])[:15]:
            print(f"  {f:<36} {100 * v / itotal:5.1f} %")
        print(f"top {args.top} source lines by instructions:")
        for (f, ln), v in sorted(instr.items(), key=lambda kv: -kv[1])[: args.top]:
            print(f"  {100 * v / itotal:5.1f} %  {f}:{ln:<5} {text.get((f, ln), '')}")
    for name, f, a, b in spans:
        st = defaultdict(float)
        for (pf, ln), d in per_line.items():
            if pf == f and a <= ln <= b:
                for k, v in d.items():
                    st[k] += v
        s = sum(st.values())
        reasons = ", ".join(f"{k} {100 * v / s:.0f}%" for k, v in sorted(st.items(), key=lambda kv: -kv[1])[:3]) if s else ""
        ins = sum(v for (pf, ln), v in instr.items() if pf == f and a <= ln <= b)
        share = f", instructions {100 * ins / itotal:5.1f} %" if itotal else ""
        print(f"span {name} ({f}:{a}-{b}): stalls {100 * s / grand:5.1f} % [{reasons}]{share}")


if __name__ == "__main__":
    main()
