"""A thin ctypes binding of tokensift's C ABI (include/tokensift/tokensift.h),
for the peer benchmark when the Python package is not installed.

Pointers are plain integers (torch's data_ptr(), numpy's ctypes.data), so the
same binding drives the CPU backend on host arrays and the CUDA backend on
device tensors; the stream is a cudaStream_t as an integer (0 = legacy).
"""
import ctypes
import glob
import os

STATUS_OK = 0
BACKEND_CPU, BACKEND_CUDA = 0, 1
ALGOS = {"auto": 0, "pivot": 1, "sort": 2}
DTYPES = {"fp32": 0, "bf16": 1, "fp16": 2}


class ParamF32(ctypes.Structure):
    _fields_ = [("value", ctypes.c_float), ("per_row", ctypes.c_void_p)]


class ParamI32(ctypes.Structure):
    _fields_ = [("value", ctypes.c_int32), ("per_row", ctypes.c_void_p)]


class ParamU64(ctypes.Structure):
    _fields_ = [("value", ctypes.c_uint64), ("per_row", ctypes.c_void_p)]


class Logits(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("rows", ctypes.c_int64), ("vocab", ctypes.c_int64),
                ("row_stride", ctypes.c_int64), ("dtype", ctypes.c_int)]


class Params(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("temperature", ParamF32), ("min_p", ParamF32), ("top_k", ParamI32),
                ("top_p", ParamF32), ("seed", ParamU64), ("offset", ParamU64),
                ("extensions", ctypes.c_void_p)]


class Outputs(ctypes.Structure):
    _fields_ = [("tokens", ctypes.c_void_p), ("row_status", ctypes.c_void_p),
                ("logprobs", ctypes.c_void_p), ("kept_counts", ctypes.c_void_p)]


class Config(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("backend", ctypes.c_int), ("algo", ctypes.c_int),
                ("device", ctypes.c_int32), ("num_threads", ctypes.c_int32)]


class TokensiftError(RuntimeError):
    pass


def find_library(repo_root: str) -> str:
    """build/<any>/src/libtokensift.so, newest first; $TOKENSIFT_LIB wins."""
    env = os.environ.get("TOKENSIFT_LIB")
    if env:
        return env
    hits = glob.glob(os.path.join(repo_root, "build", "*", "src", "libtokensift.so*"))
    hits += glob.glob(os.path.join(repo_root, "build", "*", "libtokensift.so*"))
    if not hits:
        raise FileNotFoundError(f"no libtokensift.so under {repo_root}/build/*/src")
    return max(hits, key=os.path.getmtime)


class Library:
    def __init__(self, path: str):
        self.path = path
        lib = self.lib = ctypes.CDLL(path)
        p = ctypes.POINTER
        lib.tokensift_config_init.argtypes = [p(Config)]
        lib.tokensift_params_init.argtypes = [p(Params)]
        lib.tokensift_create.argtypes = [p(Config), p(ctypes.c_void_p)]
        lib.tokensift_destroy.argtypes = [ctypes.c_void_p]
        lib.tokensift_workspace_size.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                                 ctypes.c_int, p(ctypes.c_size_t)]
        lib.tokensift_workspace_init.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                                 ctypes.c_void_p]
        lib.tokensift_sample.argtypes = [ctypes.c_void_p, p(Logits), p(Params), p(Outputs),
                                         ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        lib.tokensift_backend_available.argtypes = [ctypes.c_int]
        lib.tokensift_last_error.restype = ctypes.c_char_p
        lib.tokensift_status_string.restype = ctypes.c_char_p
        lib.tokensift_status_string.argtypes = [ctypes.c_int]
        lib.tokensift_version_string.restype = ctypes.c_char_p
        for name in ("tokensift_create", "tokensift_workspace_size", "tokensift_workspace_init",
                     "tokensift_sample"):
            getattr(lib, name).restype = ctypes.c_int

    def check(self, status: int, what: str) -> None:
        if status != STATUS_OK:
            name = self.lib.tokensift_status_string(status).decode()
            raise TokensiftError(f"{what}: {name}: {self.lib.tokensift_last_error().decode()}")

    def version(self) -> str:
        return self.lib.tokensift_version_string().decode()

    def backend_available(self, backend: int) -> bool:
        return bool(self.lib.tokensift_backend_available(backend))


class Sampler:
    """One tokensift_sampler; the caller owns the workspace and output memory."""

    def __init__(self, lib: Library, backend: int, algo: str = "auto", device: int = 0,
                 num_threads: int = 0):
        self.lib = lib
        cfg = Config()
        lib.lib.tokensift_config_init(ctypes.byref(cfg))
        cfg.backend, cfg.algo, cfg.device, cfg.num_threads = backend, ALGOS[algo], device, num_threads
        handle = ctypes.c_void_p()
        lib.check(lib.lib.tokensift_create(ctypes.byref(cfg), ctypes.byref(handle)), "create")
        self.handle = handle
        self.params = Params()
        lib.lib.tokensift_params_init(ctypes.byref(self.params))
        self.logits = Logits()
        self.outputs = Outputs()

    def __del__(self):
        if getattr(self, "handle", None):
            self.lib.lib.tokensift_destroy(self.handle)
            self.handle = None

    def workspace_size(self, rows: int, vocab: int, dtype: str) -> int:
        n = ctypes.c_size_t()
        self.lib.check(self.lib.lib.tokensift_workspace_size(self.handle, rows, vocab, DTYPES[dtype],
                                                             ctypes.byref(n)), "workspace_size")
        return n.value

    def workspace_init(self, ptr: int, nbytes: int, stream: int = 0) -> None:
        self.lib.check(self.lib.lib.tokensift_workspace_init(self.handle, ptr or None, nbytes,
                                                             stream or None), "workspace_init")

    def set_params(self, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=0, offset=0,
                   seed_per_row: int = 0, offset_per_row: int = 0) -> None:
        """Scalar parameters; seed/offset per row as pointers (device memory
        for CUDA, host for CPU) when given."""
        p = self.params
        p.temperature.value, p.temperature.per_row = temperature, None
        p.top_k.value, p.top_k.per_row = top_k, None
        p.top_p.value, p.top_p.per_row = top_p, None
        p.min_p.value, p.min_p.per_row = min_p, None
        p.seed.value, p.seed.per_row = seed, seed_per_row or None
        p.offset.value, p.offset.per_row = offset, offset_per_row or None

    def sample(self, data: int, rows: int, vocab: int, row_stride: int, dtype: str, tokens: int,
               workspace: int, workspace_bytes: int, stream: int = 0, row_status: int = 0,
               logprobs: int = 0, kept_counts: int = 0) -> None:
        lg, out = self.logits, self.outputs
        lg.data, lg.rows, lg.vocab, lg.row_stride, lg.dtype = data, rows, vocab, row_stride, DTYPES[dtype]
        out.tokens, out.row_status = tokens, row_status or None
        out.logprobs, out.kept_counts = logprobs or None, kept_counts or None
        status = self.lib.lib.tokensift_sample(self.handle, ctypes.byref(lg), ctypes.byref(self.params),
                                               ctypes.byref(out), workspace or None, workspace_bytes,
                                               stream or None)
        self.lib.check(status, "sample")
