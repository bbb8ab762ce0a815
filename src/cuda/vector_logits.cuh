// 16-byte vectors of logits (4 fp32, or 8 bf16 / fp16): widened to floats
// without taking their address, and, for the 16-bit types, their max, min
// and finite count on the packed pairs, two logits per instruction.  The
// streaming loops of the row-CTA kernel (pivot_rowcta.cuh) are built on
// these: a logit there costs a load and a max and a min.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>
#include <type_traits>

#include "cuda/cuda_utils.cuh"

namespace tokensift::cuda_detail {

// One 16-byte vector of logits as floats, without taking its address (which
// would put the loads' registers in local memory).
template <class T>
__device__ __forceinline__ void unpack_vector(const uint4& r, float (&f)[16 / sizeof(T)]);
template <>
__device__ __forceinline__ void unpack_vector<float>(const uint4& r, float (&f)[4]) {
  f[0] = __uint_as_float(r.x), f[1] = __uint_as_float(r.y), f[2] = __uint_as_float(r.z), f[3] = __uint_as_float(r.w);
}
template <>
__device__ __forceinline__ void unpack_vector<__nv_bfloat16>(const uint4& r, float (&f)[8]) {
  const uint32_t w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {  // a bf16 is the high half of its float
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}
template <>
__device__ __forceinline__ void unpack_vector<__half>(const uint4& r, float (&f)[8]) {
  const uint32_t w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __half2float(__ushort_as_half((unsigned short)(w[i] & 0xffffu)));
    f[2 * i + 1] = __half2float(__ushort_as_half((unsigned short)(w[i] >> 16)));
  }
}

// A vector of -inf logits: what the row-CTA kernel's last whole iteration
// reads past the row's body (-inf raises no max, counts as no eligible token
// and is never offered).
template <class T>
__device__ __forceinline__ uint4 neg_inf_vector() {
  constexpr uint32_t w = sizeof(T) == 4 ? 0xff800000u : std::is_same<T, __half>::value ? 0xfc00fc00u : 0xff80ff80u;
  return make_uint4(w, w, w, w);
}

// The NaN-propagating max and the min of kUnroll vectors of 16-bit logits,
// two at a time on the packed pairs (the max and min of the widened floats:
// widening is exact), and each vector's max as a float (vmax): the offers
// test vector by vector.  The same number of packed instructions as one
// chain over all pairs; the vectors' floats are formed only when asked.
template <class T, int kUnroll>
struct PackedMaxMin {
  using Pair = typename std::conditional<std::is_same<T, __half>::value, __half2, __nv_bfloat162>::type;
  Pair vhi[kUnroll];  // each vector's max pair

  static __device__ __forceinline__ Pair pair(uint32_t w) {
    Pair p;
    memcpy(&p, &w, sizeof(p));
    return p;
  }
  __device__ __forceinline__ void run(const uint4 (&raw)[kUnroll], float& mx, float& mn) {
    Pair lo = pair(raw[0].x), hi;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const uint32_t w[4] = {raw[u].x, raw[u].y, raw[u].z, raw[u].w};
      vhi[u] = __hmax2_nan(__hmax2_nan(pair(w[0]), pair(w[1])), __hmax2_nan(pair(w[2]), pair(w[3])));
      hi = u == 0 ? vhi[0] : __hmax2_nan(hi, vhi[u]);
#pragma unroll
      for (int i = 0; i < 4; ++i) lo = __hmin2(lo, pair(w[i]));
    }
    mx = max_nan(to_float(hi.x), to_float(hi.y));
    mn = fminf(to_float(lo.x), to_float(lo.y));
  }
  __device__ __forceinline__ float vmax(int u) const { return max_nan(to_float(vhi[u].x), to_float(vhi[u].y)); }
};

// How many of kUnroll vectors of 16-bit logits are not -inf (a NaN counts:
// its row's status is NaN whatever the count), on the bits.
template <class T, int kUnroll>
__device__ __forceinline__ int packed_count_finite_below(const uint4 (&raw)[kUnroll]) {
  constexpr uint32_t kNegInf = std::is_same<T, __half>::value ? 0xfc00u : 0xff80u;
  int n = 0;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const uint32_t w[4] = {raw[u].x, raw[u].y, raw[u].z, raw[u].w};
#pragma unroll
    for (int i = 0; i < 4; ++i) n += ((w[i] & 0xffffu) != kNegInf) + ((w[i] >> 16) != kNegInf);
  }
  return n;
}

}  // namespace tokensift::cuda_detail
