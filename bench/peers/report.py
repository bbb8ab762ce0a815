"""Markdown tables from a peers JSON (bench/peers/run_peers.py).

Usage: python3 bench/peers/report.py RESULT.json > RESULT.md
       python3 bench/peers/report.py A.json B.json --merged AB.json > AB.md
"""
import json
import re
import sys

IMPL_ORDER = ("tokensift-pivot", "tokensift-sort", "tokensift-auto", "flashinfer-top_k_first",
              "flashinfer-joint", "flashinfer-probs", "qrita", "torch-sort", "torch-topk", "torch-argmax")


def gpu_tag(name):
    m = re.search(r"([A-Z]\d{2,4}[A-Z]?)", name or "")
    return (m.group(1) if m else re.sub(r"[^A-Za-z0-9]+", "-", name or "gpu")).lower()


def latency(rec):
    """(value, eager_only) of a record: graph replay when there is one."""
    if rec.get("us_graph") is not None:
        return rec["us_graph"], False
    if rec.get("us_eager") is not None:
        return rec["us_eager"], True
    return None, False


def is_tokensift(impl):
    return impl.startswith("tokensift-")


def is_peer(impl):
    return not is_tokensift(impl) and not impl.startswith("cpu-roundtrip")


def fmt(v, eager=False):
    if v is None:
        return "n/a"
    s = f"{v:.1f}" if v >= 10 else f"{v:.2f}"
    return s + ("*" if eager else "")


def cells(records, kind="gauss_head"):
    """{(dtype, vocab, case, batch): {impl: rec}} for one input kind."""
    out = {}
    for r in records:
        if r.get("input", "gauss_head") != kind:
            continue
        out.setdefault((r["dtype"], r["vocab"], r["case"], r["batch"]), {})[r["impl"]] = r
    return out


def best(recs, pick):
    vals = [(latency(r)[0], name) for name, r in recs.items() if pick(name) and latency(r)[0] is not None]
    return min(vals) if vals else (None, None)


def speedups(records, kind="gauss_head"):
    """[(key, best tokensift (us, impl), best peer (us, impl), peer/tokensift)] per cell."""
    rows = []
    for key, recs in sorted(cells(records, kind).items()):
        ts, peer = best(recs, is_tokensift), best(recs, is_peer)
        ratio = peer[0] / ts[0] if ts[0] and peer[0] else None
        rows.append((key, ts, peer, ratio))
    return rows


def latency_table(records, kind="gauss_head"):
    table = cells(records, kind)
    if not table:
        return "(no records)\n"
    present = [i for i in IMPL_ORDER if any(i in recs for recs in table.values())]
    head = ["dtype", "V", "case", "B", "floor"] + present + ["best tokensift", "best peer", "peer / tokensift"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (key, ts, peer, ratio) in speedups(records, kind):
        recs = table[key]
        dtype, vocab, case, batch = key
        floor = next(iter(recs.values())).get("floor_us")
        row = [dtype, str(vocab), case, str(batch), fmt(floor)]
        for impl in present:
            r = recs.get(impl)
            if r is None:
                row.append("n/a")
            elif r.get("error"):
                row.append("error")
            else:
                row.append(fmt(*latency(r)))
        row.append(f"{ts[1]} {fmt(ts[0])}" if ts[0] else "n/a")
        row.append(f"{peer[1]} {fmt(peer[0])}" if peer[0] else "n/a")
        row.append(f"{ratio:.2f}x" if ratio else "n/a")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def summary(records):
    rows = [s for s in speedups(records) if s[3]]
    if not rows:
        return "No cell has both a tokensift and a peer timing.\n"
    wins = [s for s in rows if s[3] > 1]
    ratios = sorted(s[3] for s in rows)
    med = ratios[len(ratios) // 2]
    lo, hi = min(rows, key=lambda s: s[3]), max(rows, key=lambda s: s[3])
    return (f"tokensift is faster than the best peer in {len(wins)} of {len(rows)} cells; "
            f"median peer/tokensift {med:.2f}x, from {lo[3]:.2f}x ({'/'.join(map(str, lo[0]))}, "
            f"best peer {lo[2][1]}) to {hi[3]:.2f}x ({'/'.join(map(str, hi[0]))}, best peer {hi[2][1]}).\n")


def markdown(res):
    out = [f"# Peer samplers on {res.get('gpu')} ({res.get('date_utc', '')})", ""]
    out += [f"- command: `{res.get('command')}`", f"- commit: `{res.get('commit')}`",
            f"- torch {res.get('torch')}, CUDA {res.get('cuda')}, "
            f"FlashInfer {res.get('peers', {}).get('flashinfer_version', 'n/a')}",
            f"- copy bandwidth: {res.get('copy_bandwidth_GBps')} GB/s (read + write)",
            f"- method: {res.get('method')}", f"- run time: {res.get('elapsed_s')} s", ""]
    out += ["## Summary", "", summary(res.get("records", [])), ""]
    out += ["## Latency, µs per call (inputs: gauss_head)", "",
            "Graph replay; `*` = eager only (capture refused, see notes). floor = logits bytes / copy "
            "bandwidth. 'peer / tokensift' > 1 means tokensift is faster.", "",
            latency_table(res.get("records", []))]
    for kind in ("flat", "one_hot"):
        if any(r.get("input") == kind for r in res.get("records", [])):
            out += [f"## Latency on {kind} rows ({res.get('inputs', {}).get(kind, '')})", "",
                    latency_table(res["records"], kind)]
    corr = res.get("correctness", [])
    if corr:
        out += ["## Kept sets against the contract", "",
                "match = fraction of rows whose kept set is the contract's (band rows: a prefix of allowed "
                "length); symdiff = kept-set symmetric difference (tokensift reports counts: |count - m|); "
                "'by_design_joint' = FlashInfer's joint order, which differs from the contract by design; "
                "tokens in kept = drawn tokens inside the contract's kept set.", "",
                "| impl | dtype | V | case | input | check | match | band rows | mean symdiff | max symdiff "
                "| kept (peer / contract) | tokens in kept |", "|" + "---|" * 12]
        for c in corr:
            if "match_fraction" not in c and "tokens_in_kept" not in c:
                continue
            out.append("| " + " | ".join([
                c["impl"], c["dtype"], str(c["vocab"]), c["case"], c["input"], c.get("kind", "tokens only"),
                f"{c['match_fraction']:.3f}" if "match_fraction" in c else "n/a",
                str(c.get("band_rows", "")),
                f"{c['mean_symdiff']:.2f}" if "mean_symdiff" in c else "",
                str(c.get("max_symdiff", "")),
                f"{c['mean_kept_peer']:.1f} / {c['mean_kept_contract']:.1f}" if "mean_kept_peer" in c else "",
                f"{c['tokens_in_kept']:.4f}" if "tokens_in_kept" in c else c.get("error", "")]) + " |")
        out.append("")
    freq = res.get("frequency", [])
    if freq:
        out += ["## Frequency test", "",
                "TVD of the drawn tokens against the contract's exact distribution; floor = mean TVD of an "
                "exact multinomial sample of the same size (p99 beside it); p = fraction of 200 exact samples "
                "at least as far off (a correct sampler gives p spread over (0, 1]; p < 0.01 is suspect).", "",
                "| impl | case | row | draws | TVD | floor (p99) | TVD / floor | p | mass outside kept set |",
                "|---|---|---|---|---|---|---|---|---|"]
        for f in freq:
            pv = f.get("p_value")
            out.append(f"| {f['impl']} | {f['case']} | {f['row']} | {f['draws']} | {f['tvd']:.5f} | "
                       f"{f['floor_mean']:.5f} ({f['floor_p99']:.5f}) | {f['tvd_over_floor']:.2f} | "
                       f"{'n/a' if pv is None else f'{pv:.3f}'} | {f['mass_outside_contract']:.2e} |")
        out.append("")
    crt = res.get("cpu_roundtrip", [])
    if crt:
        out += ["## CPU round trip, µs (median, each part synchronized)", "",
                "| sampler | dtype | V | B | case | logits to host | CPU sampling | token back | total |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in crt:
            p = r.get("parts_us", {})
            out.append(f"| {r['impl']} | {r['dtype']} | {r['vocab']} | {r['batch']} | {r['case']} | "
                       f"{fmt(p.get('d2h'))} | {fmt(p.get('cpu'))} | {fmt(p.get('h2d'))} | "
                       f"{fmt(p.get('total'))} |")
        out.append("")
    out += ["## Peers and notes", ""]
    for name, st in res.get("peers", {}).items():
        if isinstance(st, dict):
            out.append(f"- {name}: " + ("ok" if st.get("ok") else f"unavailable: {st.get('error')}")
                       + (f" ({st['note']})" if st.get("note") else ""))
    notes = {}
    for r in res.get("records", []):
        if r.get("note") or r.get("timing") == "eager":
            notes.setdefault(r["impl"], set()).add(f"{r.get('timing')}: {r.get('note')}")
    for impl, ns in notes.items():
        for n in sorted(ns)[:3]:
            out.append(f"- {impl}: {n}")
    errs = res.get("errors", [])
    if errs:
        out += ["", f"Errors ({len(errs)}):", ""] + [f"- {e['where']}: {e['error']}" for e in errs[:30]]
    skipped = res.get("skipped", [])
    if skipped:
        out += ["", f"Skipped when the time box ran out ({len(skipped)}):", ""] + [f"- {s}" for s in skipped[:30]]
        if len(skipped) > 30:
            out.append(f"- ... and {len(skipped) - 30} more")
    return "\n".join(out) + "\n"


LISTS = ("records", "correctness", "frequency", "cpu_roundtrip", "skipped", "errors")


def merge(results):
    """One result from several runs (e.g. a second call for the other vocabs):
    the first run's metadata, every run's lists; a later run's timing of the
    same (impl, dtype, vocab, batch, case, input) replaces an earlier one."""
    out = dict(results[0])
    out["command"] = " ; ".join(r.get("command", "") for r in results)
    out["elapsed_s"] = sum(r.get("elapsed_s") or 0 for r in results)
    for key in LISTS:
        out[key] = [x for r in results for x in r.get(key, [])]
    seen = {}
    for rec in out["records"]:
        seen[(rec["impl"], rec["dtype"], rec["vocab"], rec["batch"], rec["case"], rec.get("input"))] = rec
    out["records"] = list(seen.values())
    return out


if __name__ == "__main__":
    # report.py RESULT.json [MORE.json ...] [--merged OUT.json]: markdown on stdout.
    args = sys.argv[1:]
    merged_path = None
    if "--merged" in args:
        i = args.index("--merged")
        merged_path = args[i + 1]
        del args[i:i + 2]
    runs = []
    for path in args:
        with open(path) as f:
            runs.append(json.load(f))
    res = merge(runs) if len(runs) > 1 else runs[0]
    if merged_path:
        with open(merged_path, "w") as f:
            json.dump(res, f, indent=1)
    sys.stdout.write(markdown(res))
