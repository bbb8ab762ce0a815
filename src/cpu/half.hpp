// Exact widening of bf16 / fp16 logits to fp32, and row loaders that hide the dtype.
//
// Both conversions are exact (every bf16 and fp16 value is a float), so the
// contract's "widened to fp32 exactly" holds bit for bit, NaN payloads included.
#pragma once

#include <cstdint>
#include <cstring>

#include "tokensift/contract.h"

namespace tokensift::detail::cpu {

inline float bf16_to_f32(uint16_t h) { return contract::bits_float((uint32_t)h << 16); }

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return contract::bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return contract::bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  // Zero or subnormal: mant * 2^-24, both factors exact and the product exact.
  const float mag = (float)mant * 5.9604644775390625e-08f;
  return contract::bits_float(sign | contract::float_bits(mag));
}

struct F32Row {
  const float* p;
  float operator()(int64_t i) const { return p[i]; }
};
struct BF16Row {
  const uint16_t* p;
  float operator()(int64_t i) const { return bf16_to_f32(p[i]); }
};
struct F16Row {
  const uint16_t* p;
  float operator()(int64_t i) const { return f16_to_f32(p[i]); }
};

}  // namespace tokensift::detail::cpu
