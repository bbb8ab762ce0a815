"""Plots from a peers JSON (bench/peers/run_peers.py):

  <stem>-latency.png   latency against batch size, log-log, one line per
                       implementation, one panel per case and dtype (one vocab)
  <stem>-speedup.png   best peer / best tokensift per cell (> 1: tokensift
                       faster), one panel per dtype, one line per case

Usage: python3 bench/peers/plot.py RESULT.json [--vocab 129280] [--every-vocab] [--out-dir DIR]

--every-vocab also writes <stem>-latency-v<V>.png and <stem>-speedup-v<V>.png
for every other vocabulary in the result.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

STYLE = {
    "tokensift-pivot": dict(color="#d62728", lw=2.4, marker="o"),
    "tokensift-sort": dict(color="#ff7f0e", lw=1.8, marker="o"),
    "tokensift-auto": dict(color="#8c1515", lw=1.2, marker=".", ls=":"),
    "flashinfer-top_k_first": dict(color="#1f77b4", marker="s"),
    "flashinfer-joint": dict(color="#17becf", marker="s"),
    "flashinfer-probs": dict(color="#9467bd", marker="s"),
    "qrita": dict(color="#2ca02c", marker="^"),
    "torch-sort": dict(color="#7f7f7f", marker="v"),
    "torch-topk": dict(color="#bcbd22", marker="v"),
    "torch-argmax": dict(color="black", ls="--", lw=1),
    "floor": dict(color="black", ls=":", lw=1),
}


def series(records, vocab, dtype, case, kind="gauss_head"):
    """{impl: [(batch, us)]} plus the floor, for one panel.  torch-argmax (timed
    under 'greedy') is drawn in every panel as the lower reference."""
    out, floor = {}, {}
    for r in records:
        if r["vocab"] != vocab or r["dtype"] != dtype or r.get("input", "gauss_head") != kind:
            continue
        if r["case"] != case and r["impl"] != "torch-argmax":
            continue
        us, _ = report.latency(r)
        if us is None or r.get("error") or r["impl"].startswith("cpu-roundtrip"):
            continue
        out.setdefault(r["impl"], {})[r["batch"]] = us
        if r.get("floor_us"):
            floor[r["batch"]] = r["floor_us"]
    if floor:
        out["floor"] = floor
    return {k: sorted(v.items()) for k, v in out.items()}


def plot_latency(res, vocab, path):
    recs = res["records"]
    dtypes = [d for d in ("fp32", "bf16") if any(r["dtype"] == d for r in recs)]
    cases = [c for c in res.get("cases", {}) if any(r["case"] == c for r in recs)]
    if not dtypes or not cases:
        return None
    fig, axes = plt.subplots(len(dtypes), len(cases), figsize=(4.2 * len(cases), 3.6 * len(dtypes)),
                             squeeze=False, sharex=True)
    for i, dtype in enumerate(dtypes):
        for j, case in enumerate(cases):
            ax = axes[i][j]
            for impl, pts in series(recs, vocab, dtype, case).items():
                if not pts:
                    continue
                xs, ys = zip(*pts)
                ax.plot(xs, ys, label=impl, **STYLE.get(impl, {}))
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{case}, {dtype}, V={vocab}", fontsize=9)
            ax.grid(True, which="both", alpha=0.25)
            if i == len(dtypes) - 1:
                ax.set_xlabel("batch (rows)")
            if j == 0:
                ax.set_ylabel("µs per call")
    handles = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=min(6, len(handles)), fontsize=8)
    fig.suptitle(f"Sampler latency on {res.get('gpu')} (CUDA-graph replay, cold L2; median)", fontsize=11)
    fig.tight_layout(rect=(0, 0.07, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_speedup(res, vocab, path):
    rows = [s for s in report.speedups(res["records"]) if s[3] and s[0][1] == vocab]
    dtypes = sorted({s[0][0] for s in rows}, key=lambda d: (d != "fp32", d))
    if not dtypes:
        return None
    fig, axes = plt.subplots(1, len(dtypes), figsize=(6 * len(dtypes), 4), squeeze=False)
    for ax, dtype in zip(axes[0], dtypes):
        by_case = {}
        for (d, v, case, b), ts, peer, ratio in rows:
            if d == dtype:
                by_case.setdefault(case, []).append((b, ratio))
        for case, pts in by_case.items():
            xs, ys = zip(*sorted(pts))
            ax.plot(xs, ys, marker="o", label=case)
        ax.axhline(1.0, color="black", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch (rows)")
        ax.set_ylabel("best peer / best tokensift")
        ax.set_title(f"{dtype}, V={vocab}: above 1 = tokensift faster", fontsize=10)
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("result")
    ap.add_argument("--vocab", type=int, default=None, help="default: 129280 if measured, else the first")
    ap.add_argument("--every-vocab", action="store_true", help="also plot every other measured vocab")
    ap.add_argument("--out-dir", default=None)
    args = ap.parse_args(argv)
    with open(args.result) as f:
        res = json.load(f)
    vocabs = sorted({r["vocab"] for r in res["records"]})
    if not vocabs:
        print("no records to plot")
        return []
    vocab = args.vocab or (129280 if 129280 in vocabs else vocabs[0])
    stem = os.path.splitext(os.path.basename(args.result))[0]
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.result))
    made = [plot_latency(res, vocab, os.path.join(out_dir, f"{stem}-latency.png")),
            plot_speedup(res, vocab, os.path.join(out_dir, f"{stem}-speedup.png"))]
    if args.every_vocab:
        for v in vocabs:
            if v != vocab:
                made += [plot_latency(res, v, os.path.join(out_dir, f"{stem}-latency-v{v}.png")),
                         plot_speedup(res, v, os.path.join(out_dir, f"{stem}-speedup-v{v}.png"))]
    made = [m for m in made if m]
    for m in made:
        print("wrote", m)
    return made


if __name__ == "__main__":
    main()
