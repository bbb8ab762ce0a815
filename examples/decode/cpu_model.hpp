// The CPU-only variant: the same engine shape computed in float on the host,
// decoded ds4-style (mode 1) with tokensift's CPU backend.  It is what runs on
// a machine without a GPU and in CI.
#pragma once

#include <cstdint>
#include <vector>

#include "decode_common.hpp"

namespace decode {

// Embedding -> layers x (RMSNorm, SwiGLU MLP, residual) -> RMSNorm -> LM head,
// float weights from a counter-based hash, so every run builds the same model.
class CpuModel {
 public:
  CpuModel(int64_t vocab, int64_t hidden, int64_t ffn, int64_t layers, float logit_std,
           uint64_t seed);
  // logits: rows x vocab floats.
  void forward(const int32_t* tokens, int64_t rows, float* logits) const;
  // Adds bias to column `token` of every row (the demo's EOS nudge).
  void bias_token(float* logits, int64_t rows, int32_t token, float bias) const;

 private:
  struct Layer {
    std::vector<float> gate_up;  // 2*ffn x hidden: gate rows, then up rows
    std::vector<float> down;     // hidden x ffn
  };
  int64_t vocab_, hidden_, ffn_;
  std::vector<float> embed_;  // vocab x hidden
  std::vector<Layer> layers_;
  std::vector<float> head_;   // vocab x hidden
};

// Runs the CPU variant for every batch size in opt; returns the exit code.
int run_cpu_variant(const Options& opt);

}  // namespace decode
