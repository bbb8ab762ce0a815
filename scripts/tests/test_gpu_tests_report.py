"""scripts/gpu_tests_report.py: shard reports merge by sums, flags by their worst value, and the
record carries the suite's totals, sanitizers and gtest counts."""
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "gpu_tests_report.py"


def tally(rows, token=0, band=0):
    return {"rows_checked": rows, "token_mismatches": token, "status_mismatches": 0, "kept_mismatches": 0,
            "logprob_mismatches": 0, "band_rows": band, "band_differences": 0, "oracle_checked": rows // 2}


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], check=True, capture_output=True,
                          text=True).stdout


def test_merge_sums_tallies_and_keeps_worst_flag(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"pivot": tally(10, band=3), "graph_capture": "pass"}))
    b.write_text(json.dumps({"pivot": tally(7, token=1), "plain": tally(4), "graph_capture": "fail"}))
    m = json.loads(run("merge", a, b))
    assert m["pivot"]["rows_checked"] == 17 and m["pivot"]["token_mismatches"] == 1
    assert m["pivot"]["band_rows"] == 3 and m["pivot"]["oracle_checked"] == 5 + 3
    assert m["plain"]["rows_checked"] == 4
    assert m["graph_capture"] == "fail"
    # Order does not matter for the flag.
    assert json.loads(run("merge", b, a))["graph_capture"] == "fail"


def test_record_totals_sanitizers_and_test_counts(tmp_path):
    rep = tmp_path / "gpu-report.json"
    rep.write_text(json.dumps({"pivot": tally(10, band=2), "plain": tally(5, token=1), "graph_capture": "pass"}))
    san = tmp_path / "sanitizers.txt"
    san.write_text("memcheck 0\nracecheck 9\n")
    (tmp_path / "gpu-tests-0.log").write_text(
        "[==========] 5 tests from 1 test suite ran. (10 ms total)\n[  PASSED  ] 4 tests.\n"
        "[  FAILED  ] GpuSampler.Foo (4 ms)\n[  FAILED  ] GpuSampler.Foo\n")
    (tmp_path / "gpu-tests-1.log").write_text("[==========] 1 test from 1 test suite ran. (3 ms total)\n"
                                              "[  PASSED  ] 1 test.\n")
    out = tmp_path / "record.json"
    run("record", "--out", out, "--gpu", "H200", "--commit", "abc", "--command", "cmd", "--report", rep,
        "--logs", str(tmp_path / "gpu-tests-*.log"), "--sanitizers", san)
    r = json.loads(out.read_text())
    assert r["rows_checked"] == 15 and r["token_mismatches"] == 1 and r["band_rows"] == 2
    assert r["graph_capture"] == "pass"
    assert r["sanitizer"] == {"memcheck": "pass", "racecheck": "fail (rc 9)", "initcheck": "not run"}
    assert r["tests"] == {"ran": 6, "passed": 5, "failed": ["GpuSampler.Foo"]}
    assert set(r["tallies"]) == {"pivot", "plain"}
