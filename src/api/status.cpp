// Error reporting (fail, last_error_message, status strings) and version calls.
#include <cstdio>
#include <cstring>

#include "api/backend.hpp"

namespace tokensift {
namespace {
// Long enough for any message we format; longer ones are truncated, not overrun.
thread_local char t_last_error[512] = "";
}  // namespace

namespace detail {
Status fail(Status status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(t_last_error, sizeof t_last_error, format, args);
  va_end(args);
  return status;
}
}  // namespace detail

const char* last_error_message() { return t_last_error; }

const char* status_string(Status status) {
  switch (status) {
    case Status::kOk: return "ok";
    case Status::kNullPointer: return "null pointer: a required pointer is NULL";
    case Status::kInvalidVocab: return "invalid vocab: vocab < 1 or > INT32_MAX";
    case Status::kInvalidStride: return "invalid layout: row_stride < vocab, or logits.data not aligned to its elements";
    case Status::kInvalidRows: return "invalid rows: rows < 0";
    case Status::kInvalidDtype: return "invalid dtype: not fp32, bf16 or fp16";
    case Status::kInvalidTemperature: return "invalid temperature: T < 0, NaN or inf";
    case Status::kInvalidTopK: return "invalid top_k: k < 0";
    case Status::kInvalidTopP: return "invalid top_p: p outside (0, 1] or NaN";
    case Status::kInvalidMinP: return "invalid min_p: min_p outside [0, 1] or NaN";
    case Status::kSizeMismatch: return "size mismatch: unknown struct_size";
    case Status::kWorkspaceTooSmall: return "workspace too small: workspace_bytes < the queried size";
    case Status::kBackendUnavailable: return "backend unavailable: not compiled in, or no device";
    case Status::kInvalidAlgo: return "invalid algo: unknown, or not offered by the backend";
    case Status::kUnsupported: return "unsupported: a reserved field is set";
    case Status::kCudaError: return "CUDA error";
    case Status::kInternal: return "internal error";
  }
  return "unknown status";
}

bool backend_available(Backend backend) {
  switch (backend) {
    case Backend::kCpu: return true;
    case Backend::kCuda: {
      if (!detail::cuda::compiled()) return false;
      // A query, not a failed call: keep the caller's last error message.
      char saved[sizeof t_last_error];
      std::memcpy(saved, t_last_error, sizeof saved);
      const bool ok = detail::cuda::check_device(0) == Status::kOk;
      std::memcpy(t_last_error, saved, sizeof saved);
      return ok;
    }
  }
  return false;
}

}  // namespace tokensift
