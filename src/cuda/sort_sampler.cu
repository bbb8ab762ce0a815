// The sorting-based baseline: the classic way, kept in the library for tests
// and for the sorting vs sorting-free comparison.
//
// Passes: (1) a key kernel writes, per logit, the order key of z (of x for
// greedy rows) and its index; (2) CUB's segmented radix sort orders every row
// descending; radix sort is stable, so equal keys keep ascending index order:
// exactly the contract's order; (3) one CTA per row walks its sorted row:
// min-p and top-k are prefix lengths, top-p a double-precision block scan,
// then the race over the kept prefix.  Costs O(B * V) workspace and several
// full passes over the keys; the pivot sampler exists to avoid both.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cuda_runtime.h>

#include "cuda/cuda_utils.cuh"
#include "cuda/launch.hpp"
#include "cuda/row_config.cuh"

namespace tokensift::cuda_detail {

struct SortPolicy {
  static constexpr int kThreads = 256;
  static constexpr int kTile = 4096;  // logits per CTA in the key kernel
};

template <class T>
__global__ void __launch_bounds__(SortPolicy::kThreads)
    sort_keys_kernel(const T* logits, int64_t stride, int32_t vocab, int32_t tiles, SamplingParams params,
                     uint32_t* keys, int32_t* values, int32_t* bad, int64_t* offsets, int64_t rows) {
  const int64_t row = blockIdx.x / tiles;
  const int32_t tile = (int32_t)(blockIdx.x % tiles);
  const RowConfig cfg = load_row_config(params, row, vocab);
  const T* x = logits + row * stride;
  __shared__ int any_bad;
  if (threadIdx.x == 0) any_bad = 0;
  __syncthreads();
  const int32_t end = min(vocab, (tile + 1) * SortPolicy::kTile);
  int my_bad = 0;
  for (int32_t i = tile * SortPolicy::kTile + threadIdx.x; i < end; i += SortPolicy::kThreads) {
    const float v = to_float(x[i]);
    uint32_t k = 0;
    if (v != v || v == __builtin_huge_valf()) {
      my_bad = 1;
    } else {
      k = contract::order_key(cfg.greedy ? v : contract::scale(v, cfg.temperature));
    }
    keys[row * vocab + i] = k;
    values[row * vocab + i] = i;
  }
  if (my_bad) any_bad = 1;
  __syncthreads();
  if (threadIdx.x == 0) bad[row * tiles + tile] = any_bad;
  if (tile == 0 && threadIdx.x == 0) {
    offsets[row] = row * vocab;
    if (row == rows - 1) offsets[rows] = rows * vocab;
  }
}

template <class T>
__global__ void __launch_bounds__(SortPolicy::kThreads)
    sort_walk_kernel(const T* logits, int64_t stride, int32_t vocab, int32_t tiles, SamplingParams params,
                     const uint32_t* keys, const int32_t* values, const int32_t* bad, SampleOutputs out) {
  using ReduceF64 = cub::BlockReduce<double, SortPolicy::kThreads>;
  using ReduceInt = cub::BlockReduce<int, SortPolicy::kThreads>;
  using ReduceU64 = cub::BlockReduce<uint64_t, SortPolicy::kThreads>;
  using ScanF64 = cub::BlockScan<double, SortPolicy::kThreads>;
  __shared__ union {
    typename ReduceF64::TempStorage f64;
    typename ReduceInt::TempStorage i32;
    typename ReduceU64::TempStorage u64;
    typename ScanF64::TempStorage scan;
  } temp;
  __shared__ double dval;
  __shared__ int ival;
  __shared__ uint64_t uval;

  const int64_t row = blockIdx.x;
  const RowConfig cfg = load_row_config(params, row, vocab);
  const uint32_t* k = keys + row * vocab;
  const int32_t* v = values + row * vocab;
  const float kNan = __int_as_float(0x7fffffff);
  const uint32_t kNegInfKey = contract::order_key(-__builtin_huge_valf());

  auto finish = [&](int32_t status, int32_t token, int32_t kept, float lp) {
    if (threadIdx.x == 0) {
      out.tokens[row] = token;
      if (out.row_status) out.row_status[row] = status;
      if (out.kept_counts) out.kept_counts[row] = kept;
      if (out.logprobs) out.logprobs[row] = lp;
    }
  };
  int b = 0;
  for (int t = threadIdx.x; t < tiles; t += SortPolicy::kThreads) b |= bad[row * tiles + t];
  b = ReduceInt(temp.i32).Reduce(b, MaxInt{});
  if (threadIdx.x == 0) ival = b;
  __syncthreads();
  if (cfg.invalid) return finish(TOKENSIFT_ROW_INVALID_PARAM, -1, 0, kNan);
  if (ival) return finish(TOKENSIFT_ROW_NAN_INPUT, -1, 0, kNan);
  const uint32_t k0 = k[0];
  if (k0 <= kNegInfKey) return finish(TOKENSIFT_ROW_NO_VALID_TOKEN, -1, 0, kNan);
  if (cfg.greedy) return finish(TOKENSIFT_ROW_OK, v[0], 1, 0.0f);
  const float zmax = contract::key_to_float(k0);
  if (zmax == __builtin_huge_valf()) return finish(TOKENSIFT_ROW_NAN_INPUT, -1, 0, kNan);

  // Survivors of min-p: a prefix; count it.
  int count = 0;
  for (int32_t j = threadIdx.x; j < vocab; j += SortPolicy::kThreads) {
    const uint32_t kj = k[j];
    count += kj > kNegInfKey && (!cfg.m_active || contract::passes_min_p(contract::key_to_float(kj), zmax, cfg.ln_minp));
  }
  __syncthreads();
  count = ReduceInt(temp.i32).Sum(count);
  if (threadIdx.x == 0) ival = count;
  __syncthreads();
  const int survivors = cfg.k_active ? min(ival, cfg.top_k) : ival;
  int m = survivors;
  auto w_at = [&](int j) { return exp((double)contract::key_to_float(k[j]) - (double)zmax); };
  if (cfg.p_active) {
    double w = 0;
    for (int j = threadIdx.x; j < survivors; j += SortPolicy::kThreads) w += w_at(j);
    __syncthreads();
    w = ReduceF64(temp.f64).Sum(w);
    if (threadIdx.x == 0) dval = w;
    __syncthreads();
    const double target = (double)cfg.top_p * dval;
    double carry = 0;
    int found = -1;
    for (int base = 0; base < survivors && found < 0; base += SortPolicy::kThreads) {
      const int j = base + threadIdx.x;
      const double wj = j < survivors ? w_at(j) : 0.0;
      double incl, total;
      __syncthreads();
      ScanF64(temp.scan).InclusiveSum(wj, incl, total);
      const int hit = (j < survivors && carry + incl >= target) ? j : 0x7fffffff;
      __syncthreads();
      const int first = ReduceInt(temp.i32).Reduce(hit, MinInt{});
      if (threadIdx.x == 0) ival = first;
      __syncthreads();
      if (ival != 0x7fffffff) found = ival + 1;
      carry += total;
    }
    if (found > 0) m = found;
  }
  uint64_t best = 0;
  double kept_mass = 0;
  for (int j = threadIdx.x; j < m; j += SortPolicy::kThreads) {
    const float z = contract::key_to_float(k[j]);
    const uint32_t idx = (uint32_t)v[j];
    const float s = contract::race_score(z, cfg.seed, cfg.offset, idx);
    const uint64_t p = pack_order(contract::order_key(s), idx);
    best = p > best ? p : best;
    kept_mass += w_at(j);
  }
  __syncthreads();
  best = ReduceU64(temp.u64).Reduce(best, MaxU64{});
  if (threadIdx.x == 0) uval = best;
  __syncthreads();
  const int32_t token = (int32_t)packed_index(uval);
  float lp = kNan;
  if (out.logprobs) {
    __syncthreads();
    kept_mass = ReduceF64(temp.f64).Sum(kept_mass);
    const float z = contract::scale(to_float(logits[row * stride + token]), cfg.temperature);
    lp = (float)(((double)z - (double)zmax) - log(kept_mass));
  }
  finish(TOKENSIFT_ROW_OK, token, m, lp);
}

struct SortLayout {
  size_t keys_in, keys_out, vals_in, vals_out, bad, offsets, temp, temp_bytes, total;
  SortLayout(int64_t rows, int64_t vocab) {
    const int64_t n = rows * vocab;
    const int64_t tiles = (vocab + SortPolicy::kTile - 1) / SortPolicy::kTile;
    keys_in = 0;
    keys_out = keys_in + align_up(4 * n);
    vals_in = keys_out + align_up(4 * n);
    vals_out = vals_in + align_up(4 * n);
    bad = vals_out + align_up(4 * n);
    offsets = bad + align_up(4 * rows * tiles);
    temp = offsets + align_up(8 * (rows + 1));
    temp_bytes = 0;
    cub::DeviceSegmentedRadixSort::SortPairsDescending(
        nullptr, temp_bytes, (const uint32_t*)nullptr, (uint32_t*)nullptr, (const int32_t*)nullptr,
        (int32_t*)nullptr, n, rows, (const int64_t*)nullptr, (const int64_t*)nullptr);
    total = temp + align_up(temp_bytes);
  }
};

size_t sort_workspace_size(int64_t rows, int64_t vocab) { return SortLayout(rows, vocab).total; }

template <class T>
static cudaError_t launch_sort_typed(const LogitsView& l, const SamplingParams& p, const SampleOutputs& o,
                                     char* ws, const SortLayout& lay, cudaStream_t stream) {
  const int32_t vocab = (int32_t)l.vocab;
  const int32_t tiles = (int32_t)((l.vocab + SortPolicy::kTile - 1) / SortPolicy::kTile);
  auto* keys_in = reinterpret_cast<uint32_t*>(ws + lay.keys_in);
  auto* keys_out = reinterpret_cast<uint32_t*>(ws + lay.keys_out);
  auto* vals_in = reinterpret_cast<int32_t*>(ws + lay.vals_in);
  auto* vals_out = reinterpret_cast<int32_t*>(ws + lay.vals_out);
  auto* bad = reinterpret_cast<int32_t*>(ws + lay.bad);
  auto* offsets = reinterpret_cast<int64_t*>(ws + lay.offsets);
  const T* x = static_cast<const T*>(l.data);
  sort_keys_kernel<T><<<(unsigned)(l.rows * tiles), SortPolicy::kThreads, 0, stream>>>(
      x, l.row_stride, vocab, tiles, p, keys_in, vals_in, bad, offsets, l.rows);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  size_t temp_bytes = lay.temp_bytes;
  e = cub::DeviceSegmentedRadixSort::SortPairsDescending(ws + lay.temp, temp_bytes, keys_in, keys_out, vals_in,
                                                         vals_out, l.rows * l.vocab, l.rows, offsets, offsets + 1,
                                                         0, 32, stream);
  if (e != cudaSuccess) return e;
  sort_walk_kernel<T><<<(unsigned)l.rows, SortPolicy::kThreads, 0, stream>>>(x, l.row_stride, vocab, tiles, p,
                                                                              keys_out, vals_out, bad, o);
  return cudaGetLastError();
}

cudaError_t launch_sort(const LogitsView& l, const SamplingParams& p, const SampleOutputs& o, void* workspace,
                        size_t, cudaStream_t stream) {
  if (l.rows == 0) return cudaSuccess;
  const SortLayout lay(l.rows, l.vocab);
  char* ws = static_cast<char*>(workspace);
  switch (l.dtype) {
    case DType::kF32: return launch_sort_typed<float>(l, p, o, ws, lay, stream);
    case DType::kBF16: return launch_sort_typed<__nv_bfloat16>(l, p, o, ws, lay, stream);
    case DType::kF16: return launch_sort_typed<__half>(l, p, o, ws, lay, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace tokensift::cuda_detail
