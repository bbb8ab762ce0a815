#!/usr/bin/env python3
"""The GPU test suite's reports: shards merged, and the issue's record written.

  gpu_tests_report.py merge SHARD.json ...            > gpu-report.json
  gpu_tests_report.py record --out F.json --gpu G --commit C --command CMD \\
      --report gpu-report.json --logs 'gpu-tests*.log' --sanitizers sanitizers.txt \\
      [--sanitizer-scope TEXT]

`merge` sums each tally over the shards (a test runs in exactly one shard, so
a name's counts add) and keeps a flag's worst value ("fail" over "pass").
`record` writes the schema of bench/results/gpu-tests-h200-<date>.json: the
suite's totals over every tally, graph capture, each sanitizer's result, the
tests that ran and passed (from the gtest logs), and the tallies themselves.
"""
import argparse
import glob
import json
import re
import sys

COUNTS = ("rows_checked", "token_mismatches", "status_mismatches", "kept_mismatches", "logprob_mismatches",
          "band_rows", "band_differences", "oracle_checked")


def merge(paths):
    tallies, flags = {}, {}
    for path in paths:
        with open(path) as f:
            shard = json.load(f)
        for name, value in shard.items():
            if isinstance(value, dict):
                t = tallies.setdefault(name, {k: 0 for k in COUNTS})
                for k in COUNTS:
                    t[k] += int(value.get(k, 0))
            else:
                flags[name] = "fail" if "fail" in (flags.get(name), value) else value
    return {**dict(sorted(tallies.items())), **flags}


def gtest_summary(log_paths):
    """Tests run / passed / failed over gtest logs (brief or not)."""
    ran = passed = 0
    failed = []
    for path in log_paths:
        with open(path, errors="replace") as f:
            text = f.read()
        for m in re.finditer(r"\[=+\] (\d+) tests? from \d+ test suites? ran", text):
            ran += int(m.group(1))
        for m in re.finditer(r"\[  PASSED  \] (\d+) tests?", text):
            passed += int(m.group(1))
        failed += re.findall(r"\[  FAILED  \] (\w+\.\w+)", text)
    return ran, passed, sorted(set(failed))


def record(args):
    with open(args.report) as f:
        rep = json.load(f)
    tallies = {k: v for k, v in rep.items() if isinstance(v, dict)}
    totals = {k: sum(int(t.get(k, 0)) for t in tallies.values()) for k in COUNTS}
    sanitizer = {}
    if args.sanitizers:
        with open(args.sanitizers) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    sanitizer[parts[0]] = "pass" if parts[1] == "0" else f"fail (rc {parts[1]})"
    for tool in ("memcheck", "racecheck", "initcheck"):
        sanitizer.setdefault(tool, "not run")
    logs = sorted(p for pattern in args.logs for p in glob.glob(pattern))
    ran, passed, failed = gtest_summary(logs)
    out = {
        "gpu": args.gpu,
        "commit": args.commit,
        "command": args.command,
        "rows_checked": totals["rows_checked"],
        "token_mismatches": totals["token_mismatches"],
        "status_mismatches": totals["status_mismatches"],
        "kept_mismatches": totals["kept_mismatches"],
        "logprob_mismatches": totals["logprob_mismatches"],
        "band_rows": totals["band_rows"],
        "band_differences": totals["band_differences"],
        "graph_capture": rep.get("graph_capture", "not run"),
        "sanitizer": sanitizer,
        "sanitizer_scope": args.sanitizer_scope,
        "tests": {"ran": ran, "passed": passed, "failed": failed},
        "tallies": tallies,
    }
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("merge")
    m.add_argument("reports", nargs="+")
    r = sub.add_parser("record")
    r.add_argument("--out", required=True)
    r.add_argument("--gpu", required=True)
    r.add_argument("--commit", required=True)
    r.add_argument("--command", required=True)
    r.add_argument("--report", required=True)
    r.add_argument("--logs", nargs="+", default=[])
    r.add_argument("--sanitizers")
    r.add_argument("--sanitizer-scope", default="")
    args = ap.parse_args()
    if args.cmd == "merge":
        json.dump(merge(args.reports), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        record(args)


if __name__ == "__main__":
    main()
