// tokensift._ext: the nanobind module.  Errors surface as the Python class
// registered by tokensift/_errors.py (TokensiftError, a ValueError), built
// from (status name, message).
#include <nanobind/nanobind.h>

#include "sample_call.hpp"

namespace nb = nanobind;
using namespace tokensift;

namespace {

PyObject* g_error_type = nullptr;  // set once by set_error_type

const char* status_name(Status s) {
  switch (s) {
    case Status::kOk: return "OK";
    case Status::kNullPointer: return "NULL_POINTER";
    case Status::kInvalidVocab: return "INVALID_VOCAB";
    case Status::kInvalidStride: return "INVALID_STRIDE";
    case Status::kInvalidRows: return "INVALID_ROWS";
    case Status::kInvalidDtype: return "INVALID_DTYPE";
    case Status::kInvalidTemperature: return "INVALID_TEMPERATURE";
    case Status::kInvalidTopK: return "INVALID_TOP_K";
    case Status::kInvalidTopP: return "INVALID_TOP_P";
    case Status::kInvalidMinP: return "INVALID_MIN_P";
    case Status::kSizeMismatch: return "SIZE_MISMATCH";
    case Status::kWorkspaceTooSmall: return "WORKSPACE_TOO_SMALL";
    case Status::kBackendUnavailable: return "BACKEND_UNAVAILABLE";
    case Status::kInvalidAlgo: return "INVALID_ALGO";
    case Status::kUnsupported: return "UNSUPPORTED";
    case Status::kCudaError: return "CUDA";
    case Status::kInternal: return "INTERNAL";
  }
  return "UNKNOWN";
}

}  // namespace

NB_MODULE(_ext, m) {
  m.doc() = "tokensift native extension (use the tokensift package, not this module)";

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const py::CallError& e) {
      PyObject* type = g_error_type ? g_error_type : PyExc_ValueError;
      nb::object args = nb::make_tuple(status_name(e.status), e.message.c_str());
      PyErr_SetObject(type, args.ptr());
    }
  });

  m.def("set_error_type", [](nb::handle type) {
    Py_XINCREF(type.ptr());
    g_error_type = type.ptr();
  });

  m.def(
      "sample",
      [](nb::handle logits, int dtype_override, nb::handle temperature, nb::handle min_p,
         nb::handle top_k, nb::handle top_p, nb::handle seed, nb::handle offset, nb::handle tokens,
         nb::handle row_status, nb::handle logprobs, nb::handle kept_counts, int algo,
         uintptr_t stream, nb::handle workspace) {
        py::sample(py::SampleArgs{logits, dtype_override, temperature, min_p, top_k, top_p, seed,
                                  offset, tokens, row_status, logprobs, kept_counts, algo, stream,
                                  workspace});
      },
      nb::arg("logits"), nb::kw_only(), nb::arg("dtype_override"), nb::arg("temperature"),
      nb::arg("min_p"), nb::arg("top_k"), nb::arg("top_p"), nb::arg("seed"), nb::arg("offset"),
      nb::arg("tokens"), nb::arg("row_status").none(), nb::arg("logprobs").none(),
      nb::arg("kept_counts").none(), nb::arg("algo"), nb::arg("stream"),
      nb::arg("workspace").none());

  m.def("workspace_size", &py::workspace_size, nb::arg("rows"), nb::arg("vocab"), nb::arg("dtype"),
        nb::arg("device_type"), nb::arg("device_id"), nb::arg("algo"));
  m.def("init_workspace", &py::init_workspace, nb::arg("workspace"), nb::arg("algo"),
        nb::arg("stream"));
  m.def("backend_available", [](int backend) { return backend_available((Backend)backend); });
  m.def("status_name", [](int status) { return status_name((Status)status); });
  m.def("status_string", [](int status) { return status_string((Status)status); });
  m.def("version", []() { return tokensift_version_string(); });
  m.attr("cuda_compiled") =
#if defined(TOKENSIFT_PY_CUDA)
      true;
#else
      false;
#endif
}
