// The CUDA backend behind src/api/backend.hpp: device checks, workspace
// sizing, and the algorithm choice.
//
// Algo::kAuto picks the pivot sampler for every shape: on the H200 it beats
// the sorting baseline by 16-191x in every benchmark cell where both ran
// (docs/api.md, docs/perf-notes.md), and it needs O(B) workspace instead of
// O(B * V), which a per-call switch to the sort path would give up.  The sort
// path stays selectable as the baseline.
#include <cuda_runtime.h>

#include "api/backend.hpp"
#include "cuda/launch.hpp"

namespace tokensift::detail::cuda {

namespace cd = tokensift::cuda_detail;

bool compiled() { return true; }

Status check_device(int device) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    cudaGetLastError();
    return fail(Status::kBackendUnavailable, "no CUDA device is available (%s)",
                e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
  }
  if (device < 0 || device >= count)
    return fail(Status::kBackendUnavailable, "CUDA device %d does not exist (this machine has %d)", device,
                count);
  return Status::kOk;
}

static Algo resolve(Algo algo) { return algo == Algo::kAuto ? Algo::kPivot : algo; }

size_t workspace_size(int64_t rows, int64_t vocab, DType, Algo algo) {
  return resolve(algo) == Algo::kSort ? cd::sort_workspace_size(rows, vocab)
                                      : cd::pivot_workspace_size(rows, vocab);
}

Status workspace_init(void* workspace, size_t bytes, void* stream) {
  if (bytes == 0) return Status::kOk;
  const cudaError_t e = cudaMemsetAsync(workspace, 0, bytes, static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess) return fail(Status::kCudaError, "cudaMemsetAsync(workspace): %s", cudaGetErrorString(e));
  return Status::kOk;
}

Status sample(const LogitsView& logits, const SamplingParams& params, const SampleOutputs& out,
              void* workspace, size_t, void* stream, int device, Algo algo) {
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != device)
    return fail(Status::kCudaError,
                "the calling thread's current CUDA device (%d) is not the sampler's device (%d); "
                "call cudaSetDevice(%d) first",
                current, device, device);
  const auto s = static_cast<cudaStream_t>(stream);
  const cudaError_t e = resolve(algo) == Algo::kSort
                            ? cd::launch_sort(logits, params, out, workspace, 0, s)
                            : cd::launch_pivot(logits, params, out, workspace, s);
  if (e != cudaSuccess) return fail(Status::kCudaError, "kernel launch failed: %s", cudaGetErrorString(e));
  return Status::kOk;
}

}  // namespace tokensift::detail::cuda
