// One row's parameters, read on the device (so a captured CUDA graph sees the
// values current at replay), validated there, and reduced to the handful of
// flags the kernels branch on.  Every CTA that works on a row derives the same
// RowConfig from the same memory, so all of them take the same branches.
#pragma once

#include "tokensift/contract.h"
#include "tokensift/tokensift.hpp"

namespace tokensift::cuda_detail {

struct RowConfig {
  float temperature;
  float ln_minp;  // -inf when min_p is off
  float top_p;
  int32_t top_k;
  uint64_t seed;
  uint64_t offset;
  bool invalid;   // a per-row value out of range: row status kInvalidParam
  bool greedy;
  bool k_active;  // 0 < k < V
  bool p_active;  // p < 1
  bool m_active;  // min_p > 0
  __device__ __forceinline__ bool plain() const { return !k_active && !p_active && !m_active; }
};

// The row's raw values (loads only, so a caller can issue them early and
// derive the RowConfig once other loads are in flight), and the derivation.
struct RowParamsRaw {
  float temperature, min_p, top_p;
  int32_t top_k;
  uint64_t seed, offset;
};
__device__ __forceinline__ RowParamsRaw load_row_params(const SamplingParams& p, int64_t row) {
  return {p.temperature.at(row), p.min_p.at(row), p.top_p.at(row), p.top_k.at(row), p.seed.at(row), p.offset.at(row)};
}

__device__ __forceinline__ RowConfig derive_row_config(const RowParamsRaw& r, int32_t vocab) {
  RowConfig c;
  c.temperature = r.temperature;
  const float min_p = r.min_p;
  c.top_k = r.top_k;
  c.top_p = r.top_p;
  c.seed = r.seed;
  c.offset = r.offset;
  // Same ranges as the host-side checks in src/api (NaN fails every comparison).
  c.invalid = !(c.temperature >= 0.0f && c.temperature < __builtin_huge_valf()) ||
              !(min_p >= 0.0f && min_p <= 1.0f) || c.top_k < 0 ||
              !(c.top_p > 0.0f && c.top_p <= 1.0f);
  c.greedy = contract::is_greedy_temperature(c.temperature);
  c.k_active = c.top_k > 0 && c.top_k < vocab;
  c.p_active = c.top_p < 1.0f;
  c.m_active = min_p > 0.0f;
  c.ln_minp = contract::ln_min_p(min_p);
  return c;
}

__device__ __forceinline__ RowConfig load_row_config(const SamplingParams& p, int64_t row,
                                                     int32_t vocab) {
  return derive_row_config(load_row_params(p, row), vocab);
}

}  // namespace tokensift::cuda_detail
