// Declaration of the pivot sampler's per-dtype launches (pivot_kernels.cuh),
// explicitly instantiated in pivot_sampler_{f32,bf16,f16}.cu.
#pragma once

#include <cuda_runtime.h>

#include "cuda/pivot_types.cuh"

namespace tokensift::cuda_detail {

// Whether the current device is sm_90 or later: programmatic dependent
// launches and thread-block clusters.  An attribute query, no stream work:
// allowed during graph capture.
inline bool device_is_sm90_or_later() {
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
  return major >= 9;
}

// A launch of `kernel` over (grid, block) with `args`, as the programmatic
// dependent of the kernel before it when `dependent` and the device has it
// (sm_90 and later); elsewhere a plain launch.  The kernel then runs
// griddepcontrol.wait before anything that needs the previous kernel's
// writes (a no-op when it was launched plainly).
template <class Kernel, class... Args>
cudaError_t launch_programmatic(Kernel kernel, dim3 grid, dim3 block, bool dependent, cudaStream_t stream,
                                const Args&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  if (dependent && device_is_sm90_or_later()) {
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, args...);
  return e != cudaSuccess ? e : cudaGetLastError();  // and the previous launch's
}

// The chunk kernel over `blocks` = rows * chunks CTAs, then the split
// fallback's launches when may_split.  The caller cleared the counters: with
// a kernel when `dependent` (the chunk kernel is launched as its programmatic
// dependent), else with a memset.
template <class T>
cudaError_t launch_pivot_kernels(const PivotArgs& a, unsigned blocks, bool may_split, bool dependent,
                                 cudaStream_t stream);

// The row kinds of a row-CTA call (scalar parameters: every row of the call
// is of one kind).
enum RowCtaKind : int {
  kRowCtaTopK = 0,  // top-k rows, k < kWarpList, no min-p (any top-p)
  kRowCtaMinP = 1,  // min-p rows (any top-k and top-p)
  kRowCtaTopP = 2,  // top-p rows without top-k or min-p, no log-probs asked for
  // kRowCtaTopK's kernel for fp32 calls of fewer than
  // kRowCtaFineSampleMaxRows rows (a larger first-tau sample; chosen at
  // launch, the same bits).
  kRowCtaTopKFine = 3,
};

// The cluster kernel's copies (pivot_cluster.cuh), by the calls' rows.
enum ClusterKernelKind {
  kClusterKernelTopK = 0,      // top-k rows, k < kWarpList, no min-p (any top-p)
  kClusterKernelMinP = 1,      // min-p rows without top-k or top-p
  kClusterKernelMinPTopK = 2,  // min-p rows with top-k, k < kWarpList (any top-p)
};

// Small batches of rows of one ClusterKernelKind, scalar parameters: one
// thread-block cluster per row, one launch (pivot_cluster.cuh).
template <class T>
cudaError_t launch_cluster(const PivotArgs& a, int kind, cudaStream_t stream);

// The row-CTA kernel, one CTA per row (pivot_rowcta.cuh), for calls whose
// rows are all of one RowCtaKind; then the split fallback when may_split.
template <class T>
cudaError_t launch_rowcta_kernel(const PivotArgs& a, int kind, bool may_split, bool dependent, cudaStream_t stream);

}  // namespace tokensift::cuda_detail
