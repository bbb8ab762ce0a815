// The CUDA seam in a build without nvcc: every entry point reports that the
// backend is not compiled in.
#include "api/backend.hpp"

namespace tokensift::detail::cuda {

bool compiled() { return false; }

Status check_device(int) {
  return fail(Status::kBackendUnavailable,
              "the CUDA backend is not compiled into this build of tokensift (no nvcc at build time)");
}

size_t workspace_size(int64_t, int64_t, DType, Algo) { return 0; }

Status workspace_init(void*, size_t, void*) { return check_device(0); }

Status sample(const LogitsView&, const SamplingParams&, const SampleOutputs&, void*, size_t, void*,
              int, Algo) {
  return check_device(0);
}

}  // namespace tokensift::detail::cuda
