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

// Branch-free, so that the row scans vectorize: every case is computed and the
// right one selected.  Subnormals: m * 2^-24 is (float) m (exact, m < 1024)
// with 24 taken off its exponent, integer operations only (a float multiply
// would be kept behind a branch under -ftrapping-math).  Checked bit for bit
// against the plain case analysis for all 65536 inputs.
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t em = (uint32_t)(h & 0x7fffu) << 13;  // exponent and mantissa, fp32 places
  const uint32_t e = em & 0x0f800000u;
  const uint32_t normal = em + 0x38000000u;  // exponent bias 15 -> 127
  const uint32_t inf_nan = em + 0x70000000u;  // exponent 31 -> 255, payload kept
  const uint32_t m = h & 0x3ffu;
  const uint32_t m_bits = contract::float_bits((float)(int32_t)m);
  // Selections as masks: GCC if-converts these where it would not the ternaries.
  const uint32_t sub = (m_bits - (24u << 23)) & (0u - (uint32_t)(m != 0));
  const uint32_t is_inf_nan = 0u - (uint32_t)(e == 0x0f800000u);
  const uint32_t is_sub = 0u - (uint32_t)(e == 0);
  const uint32_t big = (inf_nan & is_inf_nan) | (normal & ~is_inf_nan);
  return contract::bits_float(sign | (sub & is_sub) | (big & ~is_sub));
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
