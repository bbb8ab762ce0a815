"""A direct call of the C ABI (tokensift.h) through ctypes, on the
libtokensift that the package ships: the reference the extension's results
must equal on the same inputs."""

from __future__ import annotations

import ctypes as C
import os

import tokensift


class Logits(C.Structure):
    _fields_ = [("data", C.c_void_p), ("rows", C.c_int64), ("vocab", C.c_int64),
                ("row_stride", C.c_int64), ("dtype", C.c_int)]


class ParamF32(C.Structure):
    _fields_ = [("value", C.c_float), ("per_row", C.c_void_p)]


class ParamI32(C.Structure):
    _fields_ = [("value", C.c_int32), ("per_row", C.c_void_p)]


class ParamU64(C.Structure):
    _fields_ = [("value", C.c_uint64), ("per_row", C.c_void_p)]


class Params(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("flags", C.c_uint32), ("temperature", ParamF32),
                ("min_p", ParamF32), ("top_k", ParamI32), ("top_p", ParamF32), ("seed", ParamU64),
                ("offset", ParamU64), ("extensions", C.c_void_p)]


class Outputs(C.Structure):
    _fields_ = [("tokens", C.c_void_p), ("row_status", C.c_void_p), ("logprobs", C.c_void_p),
                ("kept_counts", C.c_void_p)]


class Config(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("backend", C.c_int), ("algo", C.c_int),
                ("device", C.c_int32), ("num_threads", C.c_int32)]


def library() -> C.CDLL:
    lib = C.CDLL(os.path.join(os.path.dirname(tokensift.__file__), "libtokensift.so.0"))
    lib.tokensift_create.argtypes = [C.POINTER(Config), C.POINTER(C.c_void_p)]
    lib.tokensift_destroy.argtypes = [C.c_void_p]
    lib.tokensift_workspace_size.argtypes = [C.c_void_p, C.c_int64, C.c_int64, C.c_int, C.POINTER(C.c_size_t)]
    lib.tokensift_workspace_init.argtypes = [C.c_void_p, C.c_void_p, C.c_size_t, C.c_void_p]
    lib.tokensift_sample.argtypes = [C.c_void_p, C.POINTER(Logits), C.POINTER(Params), C.POINTER(Outputs),
                                     C.c_void_p, C.c_size_t, C.c_void_p]
    lib.tokensift_config_init.argtypes = [C.POINTER(Config)]
    lib.tokensift_params_init.argtypes = [C.POINTER(Params)]
    return lib


class Sampler:
    """tokensift_sampler on the CPU (backend 0) or a CUDA device (backend 1)."""

    def __init__(self, backend: int = 0, device: int = 0):
        self.lib = library()
        config = Config()
        self.lib.tokensift_config_init(C.byref(config))
        config.backend, config.device = backend, device
        self.handle = C.c_void_p()
        status = self.lib.tokensift_create(C.byref(config), C.byref(self.handle))
        if status != 0:
            raise RuntimeError(f"tokensift_create failed with status {status}")

    def __del__(self):
        if getattr(self, "handle", None):
            self.lib.tokensift_destroy(self.handle)

    def workspace_size(self, rows: int, vocab: int, dtype: int) -> int:
        size = C.c_size_t()
        assert self.lib.tokensift_workspace_size(self.handle, rows, vocab, dtype, C.byref(size)) == 0
        return size.value

    def sample(self, logits_ptr, rows, vocab, row_stride, dtype, params: dict, outputs: dict,
               workspace_ptr, workspace_bytes, stream=0) -> int:
        """params: name -> (scalar, per_row_ptr or None); outputs: name -> ptr."""
        lg = Logits(logits_ptr, rows, vocab, row_stride, dtype)
        p = Params()
        self.lib.tokensift_params_init(C.byref(p))
        for name, (value, ptr) in params.items():
            field = getattr(p, name)
            field.value = value
            field.per_row = ptr
        out = Outputs(outputs.get("tokens"), outputs.get("row_status"), outputs.get("logprobs"),
                      outputs.get("kept_counts"))
        if workspace_bytes:
            self.lib.tokensift_workspace_init(self.handle, workspace_ptr, workspace_bytes, stream)
        return self.lib.tokensift_sample(self.handle, C.byref(lg), C.byref(p), C.byref(out),
                                         workspace_ptr, workspace_bytes, stream)
