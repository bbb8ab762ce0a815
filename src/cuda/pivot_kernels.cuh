// The pivot sampler's kernels for one logits type and the launches of one call
// (the algorithm is described in pivot_sampler.cu).  Each dtype is
// instantiated in its own translation unit (pivot_sampler_{f32,bf16,f16}.cu),
// so the three, the library's longest compiles, build in parallel.
#pragma once

#include <cuda_runtime.h>

#include "cuda/pivot_chunk.cuh"
#include "cuda/pivot_cluster.cuh"
#include "cuda/pivot_launch.hpp"
#include "cuda/pivot_merge.cuh"
#include "cuda/pivot_policy.cuh"
#include "cuda/pivot_rowcta.cuh"
#include "cuda/pivot_split.cuh"

namespace tokensift::cuda_detail {

// kEarly: the instantiation with early deferral (PivotPolicy::kEarlyDefer),
// launched for calls where PivotArgs::early_defer is set.  A separate
// instantiation because the pivot kernel runs at the 64-register cap and the
// early code, inlined or called, changed the register allocation of the whole
// kernel: every call got 2-12 % slower (v46b); the other calls keep v45's code.
template <class T, class Policy, bool kEarly>
__global__ void __launch_bounds__(Policy::kThreads, Policy::kMinBlocksPerSm) pivot_sample_kernel(TS_PIVOT_KERNEL_ARGS a) {
  __shared__ PivotSmem<Policy> smem;
  __shared__ RowConfig row_cfg;
  __shared__ bool is_last;
  const int64_t row = blockIdx.x / a.chunks;
  const int32_t chunk = (int32_t)(blockIdx.x % a.chunks);
  TS_SPLIT_ENTRY(0);
  // The streaming split launch may start once every CTA has started: it only
  // takes slots this kernel leaves free.
  pdl_launch_dependents();
#ifdef TOKENSIFT_MERGE_TRACE
  const long long t_start = clock64();
  TS_CHUNK_MARK(0);
  if (threadIdx.x == 0 && blockIdx.x < kTraceChunks) chunk_start_ns[blockIdx.x] = globaltimer_ns();
#endif
  // The logits' loads go out first.  One thread derives the row's parameters
  // under them: the phase is issue-bound at large batches, and work every
  // warp repeats is paid once per warp.
  float x[Policy::kItems];
  load_chunk<T, Policy>(static_cast<const T*>(a.logits) + row * a.row_stride, a.vocab, chunk * Policy::kChunk, x);
  if (threadIdx.x == 0) row_cfg = load_row_config(a.params, row, a.vocab);
  __syncthreads();
  TS_CHUNK_MARK(1);
  const RowConfig cfg = row_cfg;

  pivot_chunk_phase<T, Policy, kEarly>(a, row, chunk, cfg, a.out.logprobs != nullptr, x, smem.chunk);
  TS_CHUNK_MARK(4);

  // Last-CTA-done: the barrier orders every thread's stores before thread 0's
  // release-acquire arrival; the last CTA's threads read after the next one.
  // The tickets were cleared by the kernel before this one (a programmatic
  // dependent launch, PivotPolicy::kClearKernel): wait for it only here,
  // after the chunk phase, so the loads above overlap it.
  __syncthreads();
  if (threadIdx.x == 0) {
    if constexpr (kEarly) {  // before the ticket's release, as the rest of the summary
      if (cfg.p_active && !cfg.k_active && !cfg.m_active)
        a.summaries[row * a.chunks + chunk].emit_mass = chunk_emit_mass<Policy>(smem.chunk);
    }
    pdl_wait_primary();
    is_last = ticket_arrive(&a.tickets[row]) == (uint32_t)(a.chunks - 1);
  }
  __syncthreads();
  TS_CHUNK_MARK(5);
#ifdef TOKENSIFT_MERGE_TRACE
  if (threadIdx.x == 0 && blockIdx.x < kTraceChunks) chunk_merged[blockIdx.x] = is_last;
#endif
  if (!is_last) {
    TS_SPLIT_EXIT(0);
    return;
  }
#ifdef TOKENSIFT_MERGE_TRACE
  if (threadIdx.x == 0) merge_trace[7] = clock64() - t_start;  // this CTA's chunk phase and ticket
#endif

  const RowResult r = pivot_merge_phase<T, Policy, kEarly>(a, row, cfg, smem.merge, smem.fallback);
  if (threadIdx.x == 0) {
    if (r.status != kRowDeferred) write_result(a.out, row, r);
    a.tickets[row] = 0;
    row_merged(a);
  }
  if (r.status == kRowDeferred) TS_SPLIT_ROW(row, 0);
  TS_SPLIT_EXIT(0);
}

// Grid of the split fallback's launches: never larger than the call has
// chunks, so a small batch gets a small grid (1,024 CTAs that find no item
// still cost a launch's worth of scheduling and one contended atomic each).
inline dim3 split_grid(const PivotArgs& a, int parts = 1) {
  const int64_t items = a.rows * a.chunks * parts;  // pass B's items, the most of either pass
  return dim3((unsigned)(items < PivotPolicy::kSplitCtas ? items : PivotPolicy::kSplitCtas));
}

// A pivot kernel over `grid` with the call's arguments (launch_programmatic).
template <class Kernel>
cudaError_t launch_maybe_dependent(Kernel kernel, dim3 grid, bool dependent, const PivotArgs& a,
                                   cudaStream_t stream) {
  return launch_programmatic(kernel, grid, dim3(PivotPolicy::kThreads), dependent, stream, a);
}

// The fused split launch as the previous kernel's programmatic dependent
// (split_stream_kernel), where the device has it; elsewhere a plain launch of
// the same kernel, which then finds every row deferred.
template <class T>
cudaError_t launch_split_stream(const PivotArgs& a, cudaStream_t stream) {
  // Pass B in halves: a CTA for each while that many fit at once.
  const dim3 halves = split_grid(a, 2);
  const bool room = PivotPolicy::kSplitHalves != 0 && halves.x <= (unsigned)PivotPolicy::kSplitStreamHalfGrid;
  return launch_maybe_dependent(split_stream_kernel<T, PivotPolicy>, room ? halves : split_grid(a), true, a, stream);
}

// The split fallback's launch (two above PivotPolicy::kSplitFusedMaxItems
// items), after a kernel that may defer rows to it.  `streams`: that kernel
// triggers its dependents and counts its merged rows (row_merged), so the one
// launch may stream behind it (PivotPolicy::kSplitStream).
template <class T>
cudaError_t launch_split_fallback(const PivotArgs& a, bool streams, cudaStream_t stream) {
  const bool fused = split_fused(a.rows, a.chunks);
  if (fused && streams && PivotPolicy::kSplitStream) return launch_split_stream<T>(a, stream);
  const dim3 grid = split_grid(a);
  const dim3 block(PivotPolicy::kThreads);
  if (fused) {
    split_fused_kernel<T, PivotPolicy><<<grid, block, 0, stream>>>(a);
  } else {
    split_hist_kernel<T, PivotPolicy><<<grid, block, 0, stream>>>(a);
    split_gather_kernel<T, PivotPolicy><<<grid, block, 0, stream>>>(a);
  }
  return cudaGetLastError();
}

template <class T>
cudaError_t launch_pivot_kernels(const PivotArgs& a, unsigned blocks, bool may_split, bool dependent,
                                 cudaStream_t stream) {
  const cudaError_t e =
      a.early_defer ? launch_maybe_dependent(pivot_sample_kernel<T, PivotPolicy, true>, dim3(blocks), dependent, a, stream)
                    : launch_maybe_dependent(pivot_sample_kernel<T, PivotPolicy, false>, dim3(blocks), dependent, a, stream);
  if (e != cudaSuccess) return e;
  if (may_split) return launch_split_fallback<T>(a, /*streams=*/true, stream);
  return cudaSuccess;
}

template <class T>
cudaError_t launch_rowcta_kernel(const PivotArgs& a, int kind, bool may_split, bool dependent, cudaStream_t stream) {
  const dim3 grid((unsigned)a.rows);
  cudaError_t e;
  switch (kind) {
    case kRowCtaTopK:
      if constexpr (sizeof(T) == 4) {
        if (a.rows < PivotPolicy::kRowCtaFineSampleMaxRows)
          return launch_maybe_dependent(rowcta_topk_kernel<T, PivotPolicy, kRowCtaTopKFine>, grid, dependent, a,
                                        stream);
      }
      return launch_maybe_dependent(rowcta_topk_kernel<T, PivotPolicy, kRowCtaTopK>, grid, dependent, a, stream);
    case kRowCtaMinP:
      e = launch_maybe_dependent(rowcta_topk_kernel<T, PivotPolicy, kRowCtaMinP>, grid, dependent, a, stream);
      break;
    default:
      e = launch_maybe_dependent(rowcta_topk_kernel<T, PivotPolicy, kRowCtaTopP>, grid, dependent, a, stream);
      break;
  }
  if (e != cudaSuccess) return e;
  // Min-p rows with top-p and no top-k whose survivors overflow the merge's
  // buffer, and top-p rows whose boundary the list misses or does not clear
  // of the band, are deferred to the split fallback, as on the chunked path.
  // The min-p and top-p kinds trigger their dependents and count their rows
  // (row_merged), so the fused split launch streams behind them too.
  if (may_split) return launch_split_fallback<T>(a, /*streams=*/true, stream);
  return cudaGetLastError();
}

// The cluster kernel (one cluster of kClusterCtas CTAs per row) alone: it
// decides every row itself (top-k rows its search cannot bracket by its exact
// radix select, min-p rows past its list by the merge's gather and
// fallback), so nothing follows it and it uses no workspace.
template <class T>
cudaError_t launch_cluster(const PivotArgs& a, int kind, cudaStream_t stream) {
  const bool capped = a.rows > PivotPolicy::kClusterUncappedMaxRows;
  using Kernel = void (*)(PivotArgs);
  const Kernel kernels[3][2] = {
      {cluster_topk_kernel<T, PivotPolicy, false, false, false>, cluster_topk_kernel<T, PivotPolicy, true, false, false>},
      {cluster_topk_kernel<T, PivotPolicy, false, true, false>, cluster_topk_kernel<T, PivotPolicy, true, true, false>},
      {cluster_topk_kernel<T, PivotPolicy, false, false, true>, cluster_topk_kernel<T, PivotPolicy, true, false, true>}};
  const Kernel kernel = kernels[kind][capped ? 1 : 0];
  // Clusters of 16 CTAs are past the portable 8 (sm_90 allows 16 on request).
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  if (e != cudaSuccess) return e;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3((unsigned)(a.rows * PivotPolicy::kClusterCtas));
  cfg.blockDim = dim3(PivotPolicy::kThreads);
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = PivotPolicy::kClusterCtas;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, a);
}

}  // namespace tokensift::cuda_detail
