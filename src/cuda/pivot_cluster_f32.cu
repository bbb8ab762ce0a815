// The cluster path's kernels for float logits (pivot_cluster.cuh): the cluster
// kernel and the chunked kernel's kSkipDone instantiation behind it.  In a
// translation unit of their own: instantiated beside the pivot kernel's
// other forms (pivot_sampler_f32.cu), the second copy of the chunked kernel
// moved ptxas's register allocation in the first (475 of its 59,080
// instructions in the f32 build), whose SASS the GPU validation is of.
#include "cuda/pivot_kernels.cuh"

namespace tokensift::cuda_detail {
template cudaError_t launch_cluster<float>(const PivotArgs&, int, cudaStream_t);
}  // namespace tokensift::cuda_detail
