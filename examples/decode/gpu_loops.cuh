// The three decode loops on the GPU engine, for one batch size.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "decode_common.hpp"
#include "gpu_model.cuh"
#include "host_sampler.hpp"
#include "tokensift/tokensift.hpp"

namespace decode {

// Owns device, pinned and mapped allocations; frees them in reverse order.
class Arena {
 public:
  ~Arena();
  template <class T>
  T* device(size_t count);
  template <class T>
  T* pinned(size_t count);  // page-locked host memory (async copies)
  template <class T>
  T* mapped(size_t count, T** device_alias);  // pinned, also addressable by kernels

 private:
  std::vector<void*> device_, host_;
};

// Everything one batch size needs, allocated once before any timed loop.
class GpuBatch {
 public:
  GpuBatch(const Options& opt, GpuModel* model, cudaStream_t stream, const RowSetup& setup,
           int64_t batch);
  ~GpuBatch();

  RunRecord run_ds4(HostSampler* sampler);
  RunRecord run_eager();
  RunRecord run_graphed();
  // Event-timed loops of the model alone and of the CUDA sampler alone.
  double time_forward_us();
  double time_sampler_us();

 private:
  void reset();  // every row back to its first token, step 0 (setup, synchronous)
  void sample_on_device(bool per_row_offsets, uint64_t step);
  void capture(int64_t steps, cudaGraphExec_t* exec);
  void drain(int64_t* read_upto, std::vector<int32_t>* history);
  RunRecord new_record(const char* mode, const char* sampler) const;

  const Options& opt_;
  GpuModel* model_;
  cudaStream_t stream_;
  const RowSetup& setup_;
  int64_t batch_;
  Arena arena_;
  std::unique_ptr<tokensift::Sampler> sampler_;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  // Device per-row state.
  int32_t *tokens_in_, *sampled_, *finished_, *generated_, *max_tokens_, *history_, *top_k_;
  uint64_t *seeds_, *offsets_, *step_;
  float *temperature_, *top_p_, *min_p_;
  // Host side.
  void* logits_host_;            // pinned, ds4 copies
  int32_t* tokens_host_;         // pinned, ds4 H2D source
  int32_t* history_host_;        // pinned, eager's end-of-run copy
  int32_t *ring_, *ring_dev_;    // mapped ring (host view, device view)
  unsigned long long *published_, *published_dev_;
  int32_t *error_, *error_dev_;
  int64_t ring_slots_;
  cudaEvent_t ev_a_, ev_b_;
  cudaGraphExec_t graph_full_ = nullptr, graph_tail_ = nullptr;
};

}  // namespace decode
