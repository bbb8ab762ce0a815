"""Imports FlashInfer's sampling module without running the package's
__init__, which imports every kernel family (attention, GEMM, MoE, CuTe-DSL
kernels that need nvidia-cutlass-dsl, ...) and so needs wheels the sampling
path never uses.  The sampling and top-k modules only need torch and
apache-tvm-ffi; their CUDA code is JIT-compiled on first use, unless a
prebuilt copy is found (below).

Prebuilt modules.  FlashInfer loads `<aot dir>/<name>/<name>.so` as is,
without compiling, when that file exists (flashinfer/jit/env.py,
get_aot_artifacts: the path is checked, nothing is hashed).  The aot dir is
the package's data/aot; this loader points it at the folder named by
TOKENSIFT_FLASHINFER_AOT, default <repo>/.peers/flashinfer-aot/aot, when that
folder's manifest.json says it was built for this FlashInfer version and
FLASHINFER_CUDA_ARCH_LIST.  scripts/prep-flashinfer-jit.sh builds it on a
machine without a GPU (`--prebuild`, below).  The modules' code includes only
tvm-ffi's and CUDA's headers (no Python.h, no torch), so the .so files depend
on tvm-ffi's C ABI and libcudart/libcuda, not on the Python or torch version.

Usage:
    python3 bench/peers/flashinfer_loader.py [sampling] [topk]
        loads the modules (compiling them if there is no prebuilt copy) and
        says for each where it came from
    python3 bench/peers/flashinfer_loader.py --prebuild DIR [sampling] [topk]
        compiles the modules (no GPU needed, no load) into DIR/aot/<name>/,
        strips them (--strip-unneeded) and writes DIR/aot/manifest.json
    python3 bench/peers/flashinfer_loader.py --check DIR [sampling] [topk]
        loads each prebuilt .so through tvm-ffi (no GPU needed) and checks it
        has every function FlashInfer's Python wrapper uses
"""
import hashlib
import importlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
import types

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_AOT = os.path.join(REPO, ".peers", "flashinfer-aot", "aot")
MODULES = ("sampling", "topk")

# Why the prebuilt modules are not used (None when they are, or not looked at yet).
aot_status = {"dir": None, "why_not": "not looked at"}


def _setup_env() -> None:
    # JIT output under /tmp, for sm_90a only, all cores of the device.
    os.environ.setdefault("FLASHINFER_WORKSPACE_BASE", "/tmp/tokensift-flashinfer")
    os.environ.setdefault("FLASHINFER_CUDA_ARCH_LIST", "9.0a")
    os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 8))
    os.environ.setdefault("FLASHINFER_DISABLE_VERSION_CHECK", "1")


def _stub_package(name: str):
    """Registers package `name` without running its __init__."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"{name} is not installed (run scripts/prep-peers.sh, carry .whl)")
    pkg = types.ModuleType(name)
    pkg.__path__ = list(spec.submodule_search_locations)
    pkg.__file__ = spec.origin
    pkg.__spec__ = spec
    sys.modules[name] = pkg
    return pkg


def _stub_flashinfer():
    pkg = _stub_package("flashinfer")
    if not hasattr(pkg, "__version__"):
        try:
            pkg.__version__ = importlib.import_module("flashinfer.version").__version__
        except Exception:  # noqa: BLE001 - the version is informational
            pkg.__version__ = "unknown"
    return pkg


def read_manifest(aot_dir: str, flashinfer_version: str, arch_list: str):
    """The manifest of a prebuilt folder and, if it does not fit a run of
    that FlashInfer version for that FLASHINFER_CUDA_ARCH_LIST, why."""
    path = os.path.join(aot_dir, "manifest.json")
    if not os.path.isfile(path):
        return None, f"no {path}"
    with open(path) as f:
        manifest = json.load(f)
    if manifest.get("cuda_arch_list") != arch_list:
        return manifest, (f"built for FLASHINFER_CUDA_ARCH_LIST={manifest.get('cuda_arch_list')},"
                          f" this run wants {arch_list}")
    if manifest.get("flashinfer") != flashinfer_version:
        return manifest, (f"built from flashinfer {manifest.get('flashinfer')},"
                          f" {flashinfer_version} is installed")
    missing = [m for m in manifest.get("modules", {})
               if not os.path.isfile(os.path.join(aot_dir, m, f"{m}.so"))]
    if missing:
        return manifest, f"{', '.join(missing)} missing in {aot_dir}"
    # A truncated .so can crash dlopen (SIGBUS) instead of raising.
    for m, entry in manifest["modules"].items():
        if "sha256" in entry and _sha256(os.path.join(aot_dir, m, f"{m}.so")) != entry["sha256"]:
            return manifest, f"{m}.so is not the file manifest.json describes (copied whole?)"
    return manifest, None


def _use_prebuilt(jit_env) -> None:
    aot_dir = os.path.abspath(os.environ.get("TOKENSIFT_FLASHINFER_AOT", DEFAULT_AOT))
    manifest, why_not = read_manifest(aot_dir, version(), os.environ["FLASHINFER_CUDA_ARCH_LIST"])
    aot_status["why_not"] = why_not
    if why_not is None:
        # get_aot_artifacts reads this module attribute at every lookup.
        jit_env.FLASHINFER_AOT_DIR = __import__("pathlib").Path(aot_dir)
        aot_status["dir"] = aot_dir
    # Prebuilt modules were meant to be used: one that does not fit or does
    # not load would send FlashInfer to a JIT compile of minutes of device
    # time; fail in seconds instead, unless asked.  (Without any prebuilt
    # folder FlashInfer compiles, as it always did.)
    if manifest is not None and os.environ.get("TOKENSIFT_FLASHINFER_JIT_FALLBACK") != "1":
        os.environ["FLASHINFER_DISABLE_JIT"] = "1"
        if why_not is not None:
            aot_status["why_not"] += " (JIT disabled: TOKENSIFT_FLASHINFER_JIT_FALLBACK=1 allows it)"


def load_sampling():
    """Returns the flashinfer.sampling module (and flashinfer.topk loaded beside it)."""
    _setup_env()
    if "flashinfer.sampling" in sys.modules:
        return sys.modules["flashinfer.sampling"]
    _stub_flashinfer()
    sampling = importlib.import_module("flashinfer.sampling")
    importlib.import_module("flashinfer.topk")
    _use_prebuilt(importlib.import_module("flashinfer.jit.env"))
    return sampling


def version() -> str:
    return getattr(sys.modules.get("flashinfer"), "__version__", "unknown")


def build(which=MODULES) -> None:
    """Loads the modules (the prebuilt copy when usable, else a JIT compile)."""
    sampling = load_sampling()
    topk = sys.modules["flashinfer.topk"]
    if aot_status["dir"]:
        print(f"flashinfer {version()}: prebuilt modules in {aot_status['dir']}", flush=True)
    else:
        print(f"flashinfer {version()}: no prebuilt modules ({aot_status['why_not']})", flush=True)
    specs = {"sampling": "gen_sampling_module", "topk": "gen_topk_module"}
    for name in which:
        t0 = time.time()
        if name == "sampling":
            sampling.get_sampling_module()
        elif name == "topk":
            topk.get_topk_module()
        spec = getattr(importlib.import_module(f"flashinfer.jit.{name}"), specs[name])()
        # With TOKENSIFT_FLASHINFER_JIT_FALLBACK=1 a prebuilt .so that fails
        # to load is replaced by a JIT build (FlashInfer warns); its output
        # then exists.
        jit_so = spec.jit_library_path
        how = (f"JIT, {jit_so}" if jit_so.exists() and os.path.getmtime(jit_so) >= t0 - 1
               else f"prebuilt {spec.aot_path}" if aot_status["dir"] else f"JIT cache, {jit_so}")
        print(f"flashinfer {version()}: module {name} ready in {time.time() - t0:.1f} s ({how})",
              flush=True)


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _elf_needs(path: str) -> dict:
    """The shared libraries and newest glibc / libstdc++ symbol versions a
    .so needs: what the device's system must provide for it to load."""
    dyn = subprocess.run(["readelf", "-d", "-W", path], capture_output=True, text=True).stdout
    syms = subprocess.run(["readelf", "--dyn-syms", "-W", path],
                          capture_output=True, text=True).stdout
    newest = {}
    for lib, ver in re.findall(r"@(GLIBC|GLIBCXX|CXXABI)_([0-9.]+)", syms):
        key = tuple(int(x) for x in ver.split("."))
        if lib not in newest or key > newest[lib][0]:
            newest[lib] = (key, ver)
    return {"needed": re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn),
            "newest_symbol_versions": {lib: v for lib, (_, v) in sorted(newest.items())}}


def prebuild(out_dir: str, which=MODULES) -> None:
    """Compiles the modules with FlashInfer's own build rules (flags, ninja
    file) and copies the results to out_dir/aot/.  Needs nvcc and ninja, no
    GPU: FLASHINFER_CUDA_ARCH_LIST names the target, so nothing probes a
    device.  flashinfer.jit's __init__ (every kernel family) is skipped."""
    _setup_env()
    _stub_flashinfer()
    _stub_package("flashinfer.jit")
    tvm_ffi = importlib.import_module("tvm_ffi")
    from flashinfer.jit import cpp_ext  # noqa: E402 - after the stubs
    aot = os.path.join(out_dir, "aot")
    manifest = {
        "flashinfer": version(),
        "apache_tvm_ffi": getattr(tvm_ffi, "__version__", "unknown"),
        "cuda_arch_list": os.environ["FLASHINFER_CUDA_ARCH_LIST"],
        "nvcc": str(cpp_ext.get_cuda_version()),
        "built_with_python": sys.version.split()[0],
        "modules": {},
    }
    gens = {"sampling": ("flashinfer.jit.sampling", "gen_sampling_module"),
            "topk": ("flashinfer.jit.topk", "gen_topk_module")}
    for name in which:
        mod, fn = gens[name]
        spec = getattr(importlib.import_module(mod), fn)()
        t0 = time.time()
        spec.build(verbose=False)
        seconds = time.time() - t0
        dst_dir = os.path.join(aot, name)
        os.makedirs(dst_dir, exist_ok=True)
        dst = os.path.join(dst_dir, f"{name}.so")
        shutil.copyfile(spec.jit_library_path, dst)
        built = os.path.getsize(dst)
        # Drops debug sections and the static symbol table (topk: 14.9 ->
        # 11.5 MiB); the dynamic symbols tvm-ffi looks up stay.  Device code
        # is in .nv_fatbin, already compressed.
        subprocess.run(["strip", "--strip-unneeded", dst], check=True)
        manifest["modules"][name] = {
            "bytes": os.path.getsize(dst), "bytes_unstripped": built,
            "sha256": _sha256(dst), "ninja_s": round(seconds, 1),  # ~0: up to date
            "ninja": str(spec.ninja_path), **_elf_needs(dst),
        }
        print(f"  {name}: {seconds:6.1f} s, {built / 2**20:.2f} MiB,"
              f" {os.path.getsize(dst) / 2**20:.2f} MiB stripped -> {dst}", flush=True)
    with open(os.path.join(aot, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


def wrapper_calls(name: str):
    """The module functions FlashInfer's Python wrapper uses: every
    `module.<fn>` in the body of get_<name>_module() in flashinfer/<name>.py
    (read as text: no import), where `module` is the loaded .so."""
    spec = importlib.util.find_spec("flashinfer")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("flashinfer is not installed")
    with open(os.path.join(spec.submodule_search_locations[0], f"{name}.py")) as f:
        text = f.read()
    body = re.search(rf"^def get_{name}_module\(\):\n(.*?)(?=^\S)", text, re.M | re.S)
    if body is None:
        raise SystemExit(f"!! no get_{name}_module() in flashinfer/{name}.py")
    return sorted(set(re.findall(r"\bmodule\.([A-Za-z_]\w*)", body.group(1))))


def check(out_dir: str, which=MODULES) -> None:
    """Loads each prebuilt .so through tvm-ffi (no GPU needed: loading runs
    no CUDA call) and checks that it has every function its wrapper uses.
    Needs libcudart.so.13 where the loader looks (the CUDA toolkit's)."""
    tvm_ffi = importlib.import_module("tvm_ffi")
    aot = os.path.join(out_dir, "aot")
    with open(os.path.join(aot, "manifest.json")) as f:
        manifest = json.load(f)
    for name in which:
        path = os.path.join(aot, name, f"{name}.so")
        module = tvm_ffi.load_module(path)
        wanted = wrapper_calls(name)
        missing = [fn for fn in wanted if not _has_function(module, fn)]
        if missing or not wanted:
            raise SystemExit(f"!! {path}: lacks {missing or 'everything'}")
        if manifest["modules"][name]["sha256"] != _sha256(path):
            raise SystemExit(f"!! {path}: not the file manifest.json describes")
        print(f"  {name}: loads (tvm-ffi {tvm_ffi.__version__}, Python {sys.version.split()[0]}),"
              f" has all {len(wanted)} functions flashinfer/{name}.py uses", flush=True)


def _has_function(module, fn: str) -> bool:
    try:
        getattr(module, fn)
    except AttributeError:
        return False
    return True


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] in (["--prebuild"], ["--check"]):
        if len(args) < 2:
            raise SystemExit(f"usage: flashinfer_loader.py {args[0]} DIR [sampling] [topk]")
        (prebuild if args[0] == "--prebuild" else check)(args[1], tuple(args[2:]) or MODULES)
    else:
        build(tuple(args) or MODULES)
