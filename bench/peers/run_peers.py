"""tokensift and its peers side by side on one GPU, in one run (issue 4).

Measures, on the same inputs and the same clock: tokensift (every algo),
FlashInfer (top_k_top_p_sampling_from_logits "top_k_first" / "joint", and
softmax + *_sampling_from_probs), vLLM's Qrita Triton kernel + softmax +
exponential race, PyTorch sort-based sampling, torch.topk and torch.argmax,
and the CPU round trip.  Beside the timings: kept-set agreement with the
contract (docs/semantics.md) and a frequency test per sampler.

Writes OUT/peers-<gpu>-<date>.json and .md (OUT = --out, else $OUT, else
bench/results).  Every peer runs in its own try/except: a failure is recorded,
the run goes on.  The run is time-boxed (--budget-s): cells left when a
section's time is spent are listed under "skipped".

Usage: python3 bench/peers/run_peers.py [--quick] [--budget-s 420]
"""
import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import reference as ref  # noqa: E402

VOCABS = (129280, 151936, 262208)
BATCHES = (1, 4, 16, 64, 256, 1024)
DTYPES = ("fp32", "bf16")
ELEM_BYTES = {"fp32": 4, "bf16": 2}

# Fractions of --budget-s; a section's end is cumulative, so time one leaves
# passes to the next.
SECTIONS = (("correctness", 0.08), ("frequency", 0.08), ("cpu_roundtrip", 0.06),
            ("grid", 0.68), ("inputs", 0.08))


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="V 129280 only, B 1/64/1024, no second inputs table")
    ap.add_argument("--budget-s", type=float, default=420.0, help="wall-clock budget of the whole run")
    ap.add_argument("--measure-s", type=float, default=0.15, help="time spent per measurement (about)")
    ap.add_argument("--vocabs", type=int, nargs="+", default=list(VOCABS))
    ap.add_argument("--batches", type=int, nargs="+", default=list(BATCHES))
    ap.add_argument("--cases", nargs="+", default=list(ref.CASES))
    ap.add_argument("--dtypes", nargs="+", default=list(DTYPES))
    ap.add_argument("--algos", nargs="+", default=["pivot", "sort", "auto"])
    ap.add_argument("--tokensift-via", choices=("auto", "package", "ctypes"), default="auto",
                    help="auto: the Python package when importable, else the C ABI via ctypes")
    ap.add_argument("--skip", nargs="*", default=[], help="impl names (or prefixes) to leave out")
    ap.add_argument("--draws", type=int, default=1 << 20, help="frequency test draws per row")
    ap.add_argument("--freq-vocab", type=int, default=1000)
    ap.add_argument("--check-batch", type=int, default=64, help="rows per correctness check")
    ap.add_argument("--cpu-batches", type=int, nargs="+", default=[1, 4, 16, 64])
    ap.add_argument("--out", default=None)
    ap.add_argument("--tag", default=None, help="file name tag (default: gpu name)")
    ap.add_argument("--dry-run-cpu", action="store_true",
                    help="exercise the harness on the CPU (torch peers, wall clock; numbers mean nothing)")
    args = ap.parse_args(argv)
    if args.quick:
        args.vocabs = args.vocabs[:1]
        args.batches = [b for b in args.batches if b in (1, 64, 1024)] or args.batches
        args.cpu_batches = [1, 16]
        args.draws = min(args.draws, 1 << 20)
    return args


def git_commit():
    # The caller's label first: the device copy's .git can be stale (a run
    # labelled c6e6c30-dirty was of b5a0e7d), so scripts/device-run.sh and
    # the lead pass the commit in TOKENSIFT_COMMIT or .commit.
    if os.environ.get("TOKENSIFT_COMMIT"):
        return os.environ["TOKENSIFT_COMMIT"]
    label = os.path.join(REPO, ".commit")
    if os.path.exists(label):
        return open(label).read().strip() or "unknown"
    try:
        sha = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except Exception:  # noqa: BLE001 - the device copy may have no .git
        return os.environ.get("TOKENSIFT_COMMIT", "unknown")


class Clock:
    def __init__(self, budget_s):
        self.t0 = time.time()
        self.ends = {}
        acc = 0.0
        for name, frac in SECTIONS:
            acc += frac
            self.ends[name] = self.t0 + acc * budget_s

    def left(self, section):
        return self.ends[section] - time.time()

    def elapsed(self):
        return time.time() - self.t0


def log(*a):
    print(f"[{datetime.datetime.now():%H:%M:%S}]", *a, flush=True)


def short_error(e):
    return f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"


class Bench:
    def __init__(self, args):
        import torch

        self.torch = torch
        self.args = args
        self.clock = Clock(args.budget_s)
        import impls
        import timing

        self.impls_mod, self.timing = impls, timing
        via = args.tokensift_via
        if via == "auto":
            via = "package" if impls.tokensift_package() is not None else "ctypes"
        self.impls = [i for i in impls.all_gpu_impls(tuple(args.algos), via)
                      if not any(i.impl.startswith(s) for s in args.skip)]
        self.argmax = impls.TorchArgmax()
        if args.dry_run_cpu:
            impls.DEVICE = "cpu"
        self.device = impls.DEVICE
        gpu = torch.cuda.is_available() and self.device == "cuda"
        props = torch.cuda.get_device_properties(0) if gpu else None
        self.result = {
            "gpu": props.name if gpu else "cpu (dry run)",
            "commit": git_commit(),
            "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": platform.node(),
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "sm_count": props.multi_processor_count if gpu else 0,
            "copy_bandwidth_GBps": None,
            "tokensift_via": via,
            "method": ("median per call; 'us_graph' = CUDA-graph replay of one call per rotated input "
                       f"buffer (buffers together > {timing.ROTATION_BYTES / 1e6:.0f} MB, > 2x L2), "
                       "'us_eager' = single calls timed with CUDA events on the same rotation; "
                       "floor_us = logits bytes / copy bandwidth (read + write counted)"),
            "inputs": {"gauss_head": "N(0, 2^2) + 20 tokens boosted +8..+15",
                       "flat": "N(0, 0.25^2)", "one_hot": "N(0, 2^2) + one token +40"},
            "cases": {k: dict(zip(("temperature", "top_k", "top_p", "min_p"), v))
                      for k, v in ref.CASES.items()},
            "peers": {},
            "records": [],
            "correctness": [],
            "frequency": [],
            "cpu_roundtrip": [],
            "skipped": [],
            "errors": [],
        }
        self.gen = torch.Generator(device=self.device)
        self.gen.manual_seed(20261129)

    # -------------------------------------------------------------- helpers --
    def cell(self, dtype, vocab, batch, case, nbuf, kind="gauss_head"):
        torch = self.torch
        t, k, p, mp = ref.CASES[case]
        bufs = []
        for _ in range(nbuf):
            x = ref.make_logits_torch(self.gen, batch, vocab, kind, self.device)
            bufs.append(x.to(torch.bfloat16) if dtype == "bf16" else x)
        return self.impls_mod.Cell(dtype, vocab, batch, case, t, k, p, mp, bufs)

    def with_case(self, cell, case):
        t, k, p, mp = ref.CASES[case]
        return self.impls_mod.Cell(cell.dtype, cell.vocab, cell.batch, case, t, k, p, mp, cell.bufs)

    def floor_us(self, dtype, vocab, batch):
        bw = self.result["copy_bandwidth_GBps"]
        return batch * vocab * ELEM_BYTES[dtype] / (bw * 1e3) if bw else None

    def error(self, where, e):
        msg = short_error(e)
        self.result["errors"].append({"where": where, "error": msg})
        log("ERROR", where, msg)
        if "CUDA error" in msg or "illegal" in msg.lower():
            log(traceback.format_exc())

    # ------------------------------------------------------------ sections --
    def bandwidth(self):
        big = self.device == "cuda"
        bw = self.timing.copy_bandwidth(self.torch, nbytes=2 * 2**30 if big else 2**26, device=self.device)
        self.result["copy_bandwidth_GBps"] = round(bw, 1)
        log(f"copy bandwidth {bw:.0f} GB/s (read + write)")

    def load_peers(self):
        torch = self.torch
        probe = self.cell("fp32", 4096, 2, "k50_p0.9", 1)
        for impl in self.impls:
            try:
                t0 = time.time()
                r = impl.prepare(probe)
                r.run(0)
                self.timing.sync(torch)
                self.result["peers"][impl.impl] = {"ok": True, "first_call_s": round(time.time() - t0, 1),
                                                   "note": r.note}
            except Exception as e:  # noqa: BLE001
                self.result["peers"][impl.impl] = {"ok": False, "error": short_error(e)}
                log(f"peer {impl.impl} unavailable: {short_error(e)}")
                if os.environ.get("PEERS_DEBUG"):
                    traceback.print_exc()
        try:
            import flashinfer_loader

            self.result["peers"]["flashinfer_version"] = flashinfer_loader.version()
        except Exception:  # noqa: BLE001
            pass
        self.impls = [i for i in self.impls if self.result["peers"][i.impl]["ok"]]
        log("peers:", ", ".join(i.impl for i in self.impls))

    def correctness(self):
        torch = self.torch
        b = self.args.check_batch
        plan = [(d, v, "gauss_head") for v in self.args.vocabs for d in self.args.dtypes]
        if not self.args.quick:
            plan += [("fp32", self.args.vocabs[0], kind) for kind in ("flat", "one_hot")]
        for dtype, vocab, kind in plan:
            base = self.cell(dtype, vocab, b, "plain", 1, kind)
            for case in self.args.cases:
                if self.clock.left("correctness") < 0:
                    self.result["skipped"].append(f"correctness {dtype} V={vocab} {kind} {case}")
                    continue
                cell = self.with_case(base, case)
                x = cell.bufs[0]
                idx, m, m_lo, m_hi = ref.contract_batch_torch(x, cell.temperature, cell.top_k,
                                                              cell.top_p, cell.min_p)
                for impl in self.impls:
                    where = f"correctness {impl.impl} {dtype} V={vocab} B={b} {case} {kind}"
                    try:
                        r = impl.prepare(cell)
                    except self.impls_mod.NotApplicable:
                        continue
                    except Exception as e:  # noqa: BLE001
                        self.error(where, e)
                        continue
                    rec = {"impl": impl.impl, "dtype": dtype, "vocab": vocab, "batch": b, "case": case,
                           "input": kind}
                    try:
                        if r.kept is not None:
                            rec.update(kind="kept_count", **ref.compare_counts_torch(r.kept(x), m, m_lo, m_hi))
                        elif r.mask is not None:
                            mask = r.mask(x)
                            if mask is not None:
                                by = "by_design_joint" if impl.impl == "flashinfer-joint" else "mask"
                                rec.update(kind=by, **ref.compare_masks_torch(mask, idx, m, m_lo, m_hi))
                        rec["tokens_in_kept"] = ref.tokens_in_kept_torch(r.run(0), idx, m_hi)
                    except Exception as e:  # noqa: BLE001
                        rec["error"] = short_error(e)
                        self.error(where, e)
                    self.result["correctness"].append(rec)
                del idx, m, m_lo, m_hi
            del base
        log(f"correctness: {len(self.result['correctness'])} checks")

    def frequency(self):
        torch = self.torch
        vocab, draws = self.args.freq_vocab, self.args.draws
        chunk = min(draws, 1 << 16)
        rng = np.random.default_rng(5)
        # Two rows of the anchors' kind (a few head tokens carry the mass) and
        # one flat row (top-p keeps most of the vocabulary); no band rows.
        rows = []
        for kind in ("gauss_head", "gauss_head", "flat"):
            while True:
                x = ref.make_logits_np(rng, 1, vocab, kind)[0]
                if all(len(set(ref.contract_row(x, *ref.CASES[c])[1:])) == 1
                       for c in ("k50_p0.9", "p0.9")):
                    rows.append(x)
                    break
        cases = [c for c in ("k50_p0.9", "p0.9", "minp0.05") if c in self.args.cases]
        for case in cases:
            for ri, x in enumerate(rows):
                exact = ref.exact_distribution(x, *ref.CASES[case])
                null = ref.tvd_null(exact, draws, trials=200, seed=ri)
                floor_mean, floor_p99 = float(null.mean()), float(np.quantile(null, 0.99))
                dev = torch.from_numpy(np.ascontiguousarray(np.broadcast_to(x, (chunk, vocab)))).to(self.device)
                for impl in self.impls:
                    if self.clock.left("frequency") < 0:
                        self.result["skipped"].append(f"frequency {impl.impl} {case} row{ri}")
                        continue
                    where = f"frequency {impl.impl} {case} row{ri}"
                    t, k, p, mp = ref.CASES[case]
                    seeds = torch.empty(chunk, dtype=torch.int64, device=self.device)
                    cell = self.impls_mod.Cell("fp32", vocab, chunk, case, t, k, p, mp, [dev])
                    try:
                        r = impl.prepare(cell, seeds=seeds)
                    except self.impls_mod.NotApplicable:
                        continue
                    except Exception as e:  # noqa: BLE001
                        self.error(where, e)
                        continue
                    try:
                        counts = torch.zeros(vocab, dtype=torch.int64, device=self.device)
                        done = 0
                        while done < draws:
                            # Distinct per-row seeds per chunk (tokensift's draw depends on
                            # the row's seed, not its position); the others use their RNG.
                            torch.arange(done, done + chunk, device=self.device, out=seeds)
                            seeds.add_(ri << 40)
                            tok = r.run(0).to(torch.int64)
                            counts += torch.bincount(tok.clamp(0, vocab - 1), minlength=vocab)
                            done += chunk
                        c = counts.cpu().numpy()
                        tv = ref.tvd(c, exact)
                        self.result["frequency"].append({
                            "impl": impl.impl, "case": case, "row": ri, "vocab": vocab, "draws": int(c.sum()),
                            "tvd": tv, "floor_mean": floor_mean, "floor_p99": floor_p99,
                            "tvd_over_floor": tv / floor_mean, "p_value": ref.tvd_p_value(tv, null),
                            "mass_outside_contract": float(c[exact == 0].sum() / c.sum()),
                            "note": "joint order differs by design" if impl.impl == "flashinfer-joint" else ""})
                    except Exception as e:  # noqa: BLE001
                        self.error(where, e)
                del dev
        log(f"frequency: {len(self.result['frequency'])} tests")

    def cpu_roundtrip(self):
        import cpu_roundtrip as crt

        samplers = [crt.NumpySampler()]
        try:
            import tokensift_ctypes as tc

            samplers.insert(0, crt.TokensiftCpuSampler(tc.Library(tc.find_library(REPO))))
        except Exception as e:  # noqa: BLE001
            self.error("cpu_roundtrip tokensift-cpu", e)
        vocab = self.args.vocabs[0]
        for dtype in self.args.dtypes:
            for case in [c for c in ("k50_p0.9", "p0.9", "greedy") if c in self.args.cases]:
                for b in self.args.cpu_batches:
                    cell = self.cell(dtype, vocab, b, case, 2)
                    for s in samplers:
                        where = f"cpu_roundtrip {s.name} {dtype} V={vocab} B={b} {case}"
                        left = self.clock.left("cpu_roundtrip")
                        # The naive sorter costs ~20 ms a row; keep it to small batches.
                        if left < 0 or (s.name == "numpy-sort" and b > 16):
                            self.result["skipped"].append(where)
                            continue
                        try:
                            parts, reps = crt.roundtrip(self.torch, s, cell, reps=7, max_s=min(1.0, left))
                            rec = self.record(f"cpu-roundtrip-{s.name}", "-", cell, parts["total"], None,
                                              timing="wall clock, synchronized", note=f"{reps} reps")
                            rec["parts_us"] = {k: round(v, 2) for k, v in parts.items()}
                            self.result["cpu_roundtrip"].append(rec)
                            self.result["records"].append(rec)
                        except Exception as e:  # noqa: BLE001
                            self.error(where, e)
                    del cell
        log(f"cpu round trip: {len(self.result['cpu_roundtrip'])} records")

    def record(self, impl, algo, cell, us_eager, us_graph, workspace_bytes=0, timing="", note="",
               kind="gauss_head", error=None):
        floor = self.floor_us(cell.dtype, cell.vocab, cell.batch)
        rec = {"impl": impl, "algo": algo, "dtype": cell.dtype, "vocab": cell.vocab, "batch": cell.batch,
               "case": cell.case, "input": kind,
               "us_graph": None if us_graph is None else round(us_graph, 2),
               "us_eager": None if us_eager is None else round(us_eager, 2),
               "floor_us": None if floor is None else round(floor, 3),
               "workspace_bytes": int(workspace_bytes), "timing": timing, "note": note}
        if error:
            rec["error"] = error
        return rec

    def measure_cell(self, cell, section, kind="gauss_head", impls=None):
        torch = self.torch
        nbuf = len(cell.bufs)
        for impl in impls if impls is not None else self.impls:
            where = f"{section} {impl.impl} {cell.dtype} V={cell.vocab} B={cell.batch} {cell.case} {kind}"
            if self.clock.left(section) < 0:
                self.result["skipped"].append(where)
                continue
            try:
                r = impl.prepare(cell)
            except self.impls_mod.NotApplicable:
                continue
            except Exception as e:  # noqa: BLE001
                self.error(where, e)
                continue
            algo = getattr(impl, "algo", None) or getattr(impl, "path", None) or "-"
            try:
                m = self.timing.measure(torch, r.run, nbuf, self.args.measure_s, graph=r.graph)
                note = "; ".join(x for x in (r.note, m.get("graph_error", "")) if x)
                self.result["records"].append(self.record(
                    impl.impl, algo, cell, m["us_eager"], m["us_graph"], r.workspace_bytes,
                    m["timing"], note, kind))
            except Exception as e:  # noqa: BLE001
                self.error(where, e)
                self.result["records"].append(self.record(impl.impl, algo, cell, None, None,
                                                          r.workspace_bytes, "", r.note, kind,
                                                          short_error(e)))
            del r

    def grid_plan(self):
        """(vocab, cases) passes: the first vocab completely, then the anchors'
        cases on the other vocabs, then their remaining cases; so a time box
        that runs out cuts the least important cells."""
        a = self.args
        first, rest = a.vocabs[:1], a.vocabs[1:]
        main_cases = [c for c in a.cases if c in ("k50_p0.9", "p0.9", "k50")]
        other_cases = [c for c in a.cases if c not in main_cases]
        plan = [(v, list(a.cases)) for v in first]
        plan += [(v, main_cases) for v in rest if main_cases]
        plan += [(v, other_cases) for v in rest if other_cases]
        return plan

    def grid(self):
        a = self.args
        for vocab, cases in self.grid_plan():
            for dtype in a.dtypes:
                for b in a.batches:
                    if self.clock.left("grid") < 0:
                        self.result["skipped"].append(f"grid {dtype} V={vocab} B={b} {','.join(cases)}")
                        continue
                    nbuf = self.timing.rotation_count(b * vocab * ELEM_BYTES[dtype])
                    base = self.cell(dtype, vocab, b, "plain", nbuf)
                    for case in cases:
                        if case == "greedy":
                            self.measure_cell(self.with_case(base, "greedy"), "grid", impls=[self.argmax])
                        self.measure_cell(self.with_case(base, case), "grid")
                    del base
                    log(f"grid {dtype} V={vocab} B={b} {','.join(cases)} done, {self.clock.elapsed():.0f} s")

    def other_inputs(self):
        if self.args.quick:
            return
        vocab = self.args.vocabs[0]
        for kind in ("flat", "one_hot"):
            for b in (1, 64, 1024):
                if b not in self.args.batches:
                    continue
                nbuf = self.timing.rotation_count(b * vocab * 4)
                base = self.cell("fp32", vocab, b, "plain", nbuf, kind)
                for case in [c for c in ("k50_p0.9", "p0.9") if c in self.args.cases]:
                    self.measure_cell(self.with_case(base, case), "inputs", kind)
                del base
        log("second inputs table done")

    def run(self):
        steps = (("bandwidth", self.bandwidth), ("load_peers", self.load_peers),
                 ("correctness", self.correctness), ("frequency", self.frequency),
                 ("cpu_roundtrip", self.cpu_roundtrip), ("grid", self.grid),
                 ("inputs", self.other_inputs))
        for name, fn in steps:
            log(f"== {name} ({self.clock.elapsed():.0f} s elapsed)")
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                self.error(name, e)
                traceback.print_exc()
            if self.device == "cuda":
                self.torch.cuda.empty_cache()
        self.result["elapsed_s"] = round(self.clock.elapsed(), 1)
        return self.result


def main(argv=None):
    args = parse_args(argv)
    out = args.out or os.environ.get("OUT") or os.path.join(REPO, "bench", "results")
    os.makedirs(out, exist_ok=True)
    bench = Bench(args)
    result = bench.run()
    import report

    tag = args.tag or report.gpu_tag(result["gpu"])
    stem = os.path.join(out, f"peers-{tag}-{datetime.date.today():%Y-%m-%d}")
    with open(stem + ".json", "w") as f:
        json.dump(result, f, indent=1, default=lambda o: None if isinstance(o, float) and math.isnan(o) else str(o))
    with open(stem + ".md", "w") as f:
        f.write(report.markdown(result))
    log(f"wrote {stem}.json and .md ({len(result['records'])} records, "
        f"{len(result['skipped'])} skipped, {len(result['errors'])} errors)")
    return stem


if __name__ == "__main__":
    main()
