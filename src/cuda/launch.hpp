// Internal entry points of the CUDA backend's algorithms (host side).
#pragma once

#include <cuda_runtime.h>

#include "tokensift/tokensift.hpp"

namespace tokensift::cuda_detail {

size_t pivot_workspace_size(int64_t rows, int64_t vocab);
cudaError_t launch_pivot(const LogitsView& logits, const SamplingParams& params,
                         const SampleOutputs& out, void* workspace, cudaStream_t stream);

size_t sort_workspace_size(int64_t rows, int64_t vocab);
cudaError_t launch_sort(const LogitsView& logits, const SamplingParams& params,
                        const SampleOutputs& out, void* workspace, size_t workspace_bytes,
                        cudaStream_t stream);

inline size_t align_up(size_t n, size_t a = 256) { return (n + a - 1) / a * a; }

}  // namespace tokensift::cuda_detail
