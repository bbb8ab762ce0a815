// Internal seam between the API layer (validation, dispatch) and the backends.
// The API layer has validated shapes, pointers and scalar parameters before a
// backend is called; per-row parameter arrays are checked by the backend (on
// the host for CPU, in the kernel for CUDA, where they yield
// RowStatus::kInvalidParam).
#pragma once

#include <cstdarg>

#include "tokensift/tokensift.hpp"

namespace tokensift::detail {

// Records the message for last_error_message() and returns status.
Status fail(Status status, const char* format, ...) __attribute__((format(printf, 2, 3)));

// Range checks shared by the API layer and the backends (true when valid).
inline bool valid_temperature(float t) { return t >= 0.0f && t < __builtin_huge_valf(); }
inline bool valid_top_k(int32_t k) { return k >= 0; }
inline bool valid_top_p(float p) { return p > 0.0f && p <= 1.0f; }
inline bool valid_min_p(float m) { return m >= 0.0f && m <= 1.0f; }

namespace cpu {
size_t workspace_size(int64_t rows, int64_t vocab, DType dtype, int num_threads, Algo algo);
Status sample(const LogitsView& logits, const SamplingParams& params, const SampleOutputs& out,
              void* workspace, size_t workspace_bytes, int num_threads, Algo algo);
}  // namespace cpu

namespace cuda {
bool compiled();  // false in a CPU-only build
Status check_device(int device);
size_t workspace_size(int64_t rows, int64_t vocab, DType dtype, Algo algo);
Status workspace_init(void* workspace, size_t bytes, void* stream);
Status sample(const LogitsView& logits, const SamplingParams& params, const SampleOutputs& out,
              void* workspace, size_t workspace_bytes, void* stream, int device, Algo algo);
}  // namespace cuda

}  // namespace tokensift::detail
