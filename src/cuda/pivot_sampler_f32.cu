// The pivot sampler's kernels for float logits (see pivot_kernels.cuh).
#include "cuda/pivot_kernels.cuh"

namespace tokensift::cuda_detail {
template cudaError_t launch_pivot_kernels<float>(const PivotArgs&, unsigned, bool, bool, cudaStream_t);
template cudaError_t launch_rowcta_kernel<float>(const PivotArgs&, int, bool, bool, cudaStream_t);
}  // namespace tokensift::cuda_detail
