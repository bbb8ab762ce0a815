// The GPU engine: a DeepSeek-V4-shaped stack (vocab 129,280) with random bf16
// weights.  Embedding lookup of the previous token on the device, then
// layers x (RMSNorm -> SwiGLU MLP through cuBLAS, fp32 accumulate -> residual),
// a final RMSNorm and the LM head to the full vocabulary.  There is no
// attention: the demo is about the decode loop around the model.
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "decode_common.hpp"

namespace decode {

// Throw std::runtime_error naming the call, file and line.
void cuda_check(cudaError_t status, const char* call, const char* file, int line);
void cublas_check(cublasStatus_t status, const char* call, const char* file, int line);
#define DECODE_CUDA(call) ::decode::cuda_check((call), #call, __FILE__, __LINE__)
#define DECODE_CUBLAS(call) ::decode::cublas_check((call), #call, __FILE__, __LINE__)
// After a kernel launch: catches bad configurations without synchronising.
#define DECODE_LAUNCHED() ::decode::cuda_check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

struct GpuModelShape {
  int64_t vocab, hidden, ffn, layers, max_batch;
  float logit_std;
  uint64_t seed;
  LogitsType logits;
};

class GpuModel {
 public:
  explicit GpuModel(const GpuModelShape& shape);
  ~GpuModel();
  GpuModel(const GpuModel&) = delete;
  GpuModel& operator=(const GpuModel&) = delete;

  // Binds cuBLAS to the stream with a fixed workspace: the same GEMM
  // algorithms then run eagerly and under graph capture, so every mode sees
  // bit-identical logits.
  void bind(cudaStream_t stream);
  // Enqueues one decode step's model on the bound stream: tokens[rows] ->
  // logits()[rows x vocab], plus eos_bias on column eos when nonzero.
  void forward(const int32_t* tokens, int64_t rows, int32_t eos, float eos_bias);

  const void* logits() const { return logits_; }
  size_t logits_bytes(int64_t rows) const {
    return (size_t)rows * shape_.vocab * (shape_.logits == LogitsType::kF32 ? 4 : 2);
  }
  const GpuModelShape& shape() const { return shape_; }

 private:
  struct Layer {
    __nv_bfloat16* norm;     // hidden
    __nv_bfloat16* gate_up;  // 2*ffn x hidden (row-major, out x in)
    __nv_bfloat16* down;     // hidden x ffn
  };
  void gemm(const __nv_bfloat16* w, int64_t out, int64_t in, const __nv_bfloat16* x, int64_t rows,
            void* y, cudaDataType y_type, float beta);
  template <class T>
  T* alloc(size_t count);
  void release();  // frees everything; safe on a partly built model

  GpuModelShape shape_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  void* blas_workspace_ = nullptr;
  size_t blas_workspace_bytes_ = 32u << 20;
  std::vector<void*> allocations_;
  __nv_bfloat16* embed_ = nullptr;       // vocab x hidden
  std::vector<Layer> layers_;
  __nv_bfloat16* final_norm_ = nullptr;  // hidden
  __nv_bfloat16* head_ = nullptr;        // vocab x hidden
  float* x_ = nullptr;                   // residual stream, rows x hidden, fp32
  __nv_bfloat16* h_ = nullptr;           // normalised, rows x hidden
  __nv_bfloat16* gu_ = nullptr;          // rows x 2*ffn
  __nv_bfloat16* act_ = nullptr;         // rows x ffn
  void* logits_ = nullptr;               // rows x vocab, f32 or bf16
};

}  // namespace decode
