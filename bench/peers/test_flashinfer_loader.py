"""flashinfer_loader's choice between prebuilt FlashInfer modules and a JIT
compile (no GPU, no FlashInfer needed), and, when scripts/prep-flashinfer-jit.sh
has built them and tvm-ffi is importable, the prebuilt modules themselves."""
import json
import os
import sys
import types

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flashinfer_loader as fl  # noqa: E402


def write_prebuilt(tmp_path, modules=("sampling", "topk"), arch="9.0a", version="0.7.4"):
    aot = tmp_path / "aot"
    for name in modules:
        (aot / name).mkdir(parents=True)
        (aot / name / f"{name}.so").write_bytes(b"\x7fELF")
    manifest = {"flashinfer": version, "cuda_arch_list": arch,
                "modules": {m: {} for m in ("sampling", "topk")}}
    (aot / "manifest.json").write_text(json.dumps(manifest))
    return str(aot)


def test_manifest_that_fits(tmp_path):
    aot = write_prebuilt(tmp_path)
    manifest, why_not = fl.read_manifest(aot, "0.7.4", "9.0a")
    assert why_not is None and manifest["flashinfer"] == "0.7.4"


@pytest.mark.parametrize("version,arch,word", [("0.7.5", "9.0a", "0.7.4"),
                                               ("0.7.4", "10.0a", "9.0a")])
def test_manifest_for_another_version_or_arch(tmp_path, version, arch, word):
    _, why_not = fl.read_manifest(write_prebuilt(tmp_path), version, arch)
    assert why_not is not None and word in why_not


def test_manifest_with_a_module_missing(tmp_path):
    _, why_not = fl.read_manifest(write_prebuilt(tmp_path, modules=("sampling",)), "0.7.4", "9.0a")
    assert why_not is not None and "topk" in why_not


def test_no_manifest(tmp_path):
    manifest, why_not = fl.read_manifest(str(tmp_path), "0.7.4", "9.0a")
    assert manifest is None and "manifest.json" in why_not


def run_use_prebuilt(monkeypatch, aot, arch="9.0a", fallback=None):
    jit_env = types.SimpleNamespace(FLASHINFER_AOT_DIR="package data/aot")
    monkeypatch.setenv("TOKENSIFT_FLASHINFER_AOT", aot)
    monkeypatch.setenv("FLASHINFER_CUDA_ARCH_LIST", arch)
    monkeypatch.delenv("FLASHINFER_DISABLE_JIT", raising=False)
    if fallback is None:
        monkeypatch.delenv("TOKENSIFT_FLASHINFER_JIT_FALLBACK", raising=False)
    else:
        monkeypatch.setenv("TOKENSIFT_FLASHINFER_JIT_FALLBACK", fallback)
    monkeypatch.setattr(fl, "version", lambda: "0.7.4")
    monkeypatch.setattr(fl, "aot_status", {"dir": None, "why_not": "not looked at"})
    fl._use_prebuilt(jit_env)
    return jit_env


def test_prebuilt_redirects_flashinfer_and_disables_its_jit(tmp_path, monkeypatch):
    aot = write_prebuilt(tmp_path)
    jit_env = run_use_prebuilt(monkeypatch, aot)
    assert str(jit_env.FLASHINFER_AOT_DIR) == aot
    assert fl.aot_status == {"dir": aot, "why_not": None}
    assert os.environ.get("FLASHINFER_DISABLE_JIT") == "1"


def test_prebuilt_with_jit_fallback_allowed(tmp_path, monkeypatch):
    jit_env = run_use_prebuilt(monkeypatch, write_prebuilt(tmp_path), fallback="1")
    assert str(jit_env.FLASHINFER_AOT_DIR) != "package data/aot"
    assert "FLASHINFER_DISABLE_JIT" not in os.environ


def test_unfit_prebuilt_is_not_used_and_no_jit_either(tmp_path, monkeypatch):
    jit_env = run_use_prebuilt(monkeypatch, write_prebuilt(tmp_path), arch="10.0a")
    assert jit_env.FLASHINFER_AOT_DIR == "package data/aot"
    assert fl.aot_status["dir"] is None and "10.0a" in fl.aot_status["why_not"]
    assert os.environ.get("FLASHINFER_DISABLE_JIT") == "1"


def test_unfit_prebuilt_with_jit_fallback_allowed(tmp_path, monkeypatch):
    jit_env = run_use_prebuilt(monkeypatch, write_prebuilt(tmp_path), arch="10.0a", fallback="1")
    assert jit_env.FLASHINFER_AOT_DIR == "package data/aot"
    assert "FLASHINFER_DISABLE_JIT" not in os.environ


def test_no_prebuilt_folder_leaves_flashinfer_alone(tmp_path, monkeypatch):
    jit_env = run_use_prebuilt(monkeypatch, str(tmp_path / "none"))
    assert jit_env.FLASHINFER_AOT_DIR == "package data/aot"
    assert "FLASHINFER_DISABLE_JIT" not in os.environ


def test_damaged_module_is_caught_by_its_hash(tmp_path):
    aot = write_prebuilt(tmp_path)
    path = os.path.join(aot, "manifest.json")
    manifest = json.load(open(path))
    manifest["modules"]["topk"]["sha256"] = "0" * 64
    json.dump(manifest, open(path, "w"))
    _, why_not = fl.read_manifest(aot, "0.7.4", "9.0a")
    assert why_not is not None and "topk.so" in why_not


def test_the_prebuilt_modules_load(monkeypatch):
    """The real prebuilt modules, when present: each loads through tvm-ffi and
    has every function FlashInfer's wrapper calls (what prep runs, again)."""
    out = os.path.join(fl.REPO, ".peers", "flashinfer-aot")
    if not os.path.isfile(os.path.join(out, "aot", "manifest.json")):
        pytest.skip("no .peers/flashinfer-aot (run scripts/prep-flashinfer-jit.sh)")
    pytest.importorskip("tvm_ffi")
    if not fl.importlib.util.find_spec("flashinfer"):
        pytest.skip("flashinfer not importable")
    fl.check(out)
