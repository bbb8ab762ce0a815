// The pivot sampler's kernels for __nv_bfloat16 logits (see pivot_kernels.cuh).
#include "cuda/pivot_kernels.cuh"

namespace tokensift::cuda_detail {
template cudaError_t launch_pivot_kernels<__nv_bfloat16>(const PivotArgs&, unsigned, bool, bool, cudaStream_t);
template cudaError_t launch_rowcta_kernel<__nv_bfloat16>(const PivotArgs&, int, bool, bool, cudaStream_t);
}  // namespace tokensift::cuda_detail
