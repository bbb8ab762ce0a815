// Declaration of the pivot sampler's per-dtype launches (pivot_kernels.cuh),
// explicitly instantiated in pivot_sampler_{f32,bf16,f16}.cu.
#pragma once

#include <cuda_runtime.h>

#include "cuda/pivot_types.cuh"

namespace tokensift::cuda_detail {

// The chunk kernel over `blocks` = rows * chunks CTAs, then the split
// fallback's two launches when may_split.  The caller cleared the tickets.
template <class T>
cudaError_t launch_pivot_kernels(const PivotArgs& a, unsigned blocks, bool may_split, cudaStream_t stream);

// The row-CTA kernel, one CTA per row (pivot_rowcta.cuh): only for calls
// whose rows are all min-p rows (min_p) or all top-k rows with k <
// kWarpList and no min-p.
template <class T>
cudaError_t launch_rowcta_kernel(const PivotArgs& a, bool min_p, bool may_split, cudaStream_t stream);

}  // namespace tokensift::cuda_detail
