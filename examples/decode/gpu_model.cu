// GPU engine of the decode demo: kernels and cuBLAS calls of one forward step.
#include <cstdio>
#include <stdexcept>
#include <string>

#include "gpu_model.cuh"

namespace decode {

void cuda_check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s failed at %s:%d: %s (%s)", call, file, line,
                cudaGetErrorString(status), cudaGetErrorName(status));
  throw std::runtime_error(buf);
}

void cublas_check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s failed at %s:%d: cuBLAS status %d (%s)", call, file, line,
                (int)status, cublasGetStatusString(status));
  throw std::runtime_error(buf);
}

namespace {

__device__ __forceinline__ uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform(-scale, scale) weights, a pure function of (stream, index).
__global__ void init_uniform_kernel(__nv_bfloat16* w, size_t n, uint64_t stream, float scale) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    const uint64_t r = mix64(stream * 0x100000001B3ull ^ i);
    const float u = (float)(r >> 40) * (1.0f / 16777216.0f);
    w[i] = __float2bfloat16((2.0f * u - 1.0f) * scale);
  }
}

__global__ void fill_kernel(__nv_bfloat16* w, size_t n, float value) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    w[i] = __float2bfloat16(value);
}

__global__ void embed_kernel(const int32_t* tokens, const __nv_bfloat16* table, int64_t vocab,
                             int64_t hidden, float* x) {
  int32_t t = tokens[blockIdx.x];
  if (t < 0 || t >= vocab) t = 0;  // never happens: finished rows emit eos, not -1
  const __nv_bfloat16* src = table + (size_t)t * hidden;
  float* dst = x + (size_t)blockIdx.x * hidden;
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = __bfloat162float(src[i]);
}

constexpr int kNormThreads = 256;

// One block per row; a fixed reduction tree, so the result is reproducible.
__global__ void rms_norm_kernel(const float* x, const __nv_bfloat16* gamma, int64_t hidden,
                                __nv_bfloat16* out) {
  const float* row = x + (size_t)blockIdx.x * hidden;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < hidden; i += kNormThreads) ss = fmaf(row[i], row[i], ss);
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  __shared__ float warp_sums[kNormThreads / 32];
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = ss;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kNormThreads / 32; ++w) total += warp_sums[w];
  const float inv = rsqrtf(total / (float)hidden + 1e-6f);
  __nv_bfloat16* dst = out + (size_t)blockIdx.x * hidden;
  for (int64_t i = threadIdx.x; i < hidden; i += kNormThreads)
    dst[i] = __float2bfloat16(row[i] * inv * __bfloat162float(gamma[i]));
}

// gu = [gate | up] per row; act = silu(gate) * up.
__global__ void swiglu_kernel(const __nv_bfloat16* gu, int64_t rows, int64_t ffn,
                              __nv_bfloat16* act) {
  const size_t n = (size_t)rows * ffn;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    const size_t r = i / ffn, f = i % ffn;
    const float g = __bfloat162float(gu[r * 2 * ffn + f]);
    const float u = __bfloat162float(gu[r * 2 * ffn + ffn + f]);
    act[i] = __float2bfloat16(g / (1.0f + __expf(-g)) * u);
  }
}

template <class T>
__global__ void bias_column_kernel(T* logits, int64_t rows, int64_t vocab, int32_t column,
                                   float bias) {
  const int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (r >= rows) return;
  T* p = logits + r * vocab + column;
  if constexpr (sizeof(T) == 4) {
    *p = *p + bias;
  } else {
    *p = __float2bfloat16(__bfloat162float(*p) + bias);
  }
}

int grid_for(size_t n) {
  const size_t blocks = (n + 255) / 256;
  return (int)(blocks < 4096 ? (blocks ? blocks : 1) : 4096);
}

}  // namespace

template <class T>
T* GpuModel::alloc(size_t count) {
  void* p = nullptr;
  DECODE_CUDA(cudaMalloc(&p, count * sizeof(T)));
  allocations_.push_back(p);
  return static_cast<T*>(p);
}

GpuModel::GpuModel(const GpuModelShape& s) : shape_(s) {
  try {
    const int64_t v = s.vocab, h = s.hidden, f = s.ffn, b = s.max_batch;
    embed_ = alloc<__nv_bfloat16>(v * h);
    head_ = alloc<__nv_bfloat16>(v * h);
    final_norm_ = alloc<__nv_bfloat16>(h);
    layers_.resize(s.layers);
    for (auto& l : layers_) {
      l.norm = alloc<__nv_bfloat16>(h);
      l.gate_up = alloc<__nv_bfloat16>(2 * f * h);
      l.down = alloc<__nv_bfloat16>(h * f);
    }
    x_ = alloc<float>(b * h);
    h_ = alloc<__nv_bfloat16>(b * h);
    gu_ = alloc<__nv_bfloat16>(b * 2 * f);
    act_ = alloc<__nv_bfloat16>(b * f);
    logits_ = alloc<uint8_t>(logits_bytes(b));
    DECODE_CUDA(cudaMalloc(&blas_workspace_, blas_workspace_bytes_));

    const float unit = sqrtf(3.0f);  // uniform(-a, a) has variance a^2 / 3
    auto init = [](__nv_bfloat16* w, size_t n, uint64_t stream, float scale) {
      init_uniform_kernel<<<grid_for(n), 256>>>(w, n, stream, scale);
      DECODE_LAUNCHED();
    };
    auto ones = [](__nv_bfloat16* w, size_t n) {
      fill_kernel<<<grid_for(n), 256>>>(w, n, 1.0f);
      DECODE_LAUNCHED();
    };
    init(embed_, v * h, s.seed ^ 1, unit);
    init(head_, v * h, s.seed ^ 2, s.logit_std * unit / sqrtf((float)h));
    ones(final_norm_, h);
    for (int64_t l = 0; l < s.layers; ++l) {
      ones(layers_[l].norm, h);
      init(layers_[l].gate_up, 2 * f * h, s.seed ^ (100 + 2 * l), unit / sqrtf((float)h));
      init(layers_[l].down, h * f, s.seed ^ (101 + 2 * l), 0.5f * unit / sqrtf((float)f));
    }
    DECODE_CUDA(cudaDeviceSynchronize());  // setup, outside any measured loop
    DECODE_CUBLAS(cublasCreate(&blas_));
  } catch (...) {
    release();
    throw;
  }
}

GpuModel::~GpuModel() { release(); }

void GpuModel::release() {
  if (blas_) cublasDestroy(blas_);
  blas_ = nullptr;
  if (blas_workspace_) cudaFree(blas_workspace_);
  blas_workspace_ = nullptr;
  for (void* p : allocations_) cudaFree(p);
  allocations_.clear();
}

void GpuModel::bind(cudaStream_t stream) {
  stream_ = stream;
  // cublasSetStream resets the workspace to cuBLAS's default pool, so the
  // fixed workspace is set after it (and is what keeps capture allocation-free).
  DECODE_CUBLAS(cublasSetStream(blas_, stream));
  DECODE_CUBLAS(cublasSetWorkspace(blas_, blas_workspace_, blas_workspace_bytes_));
  DECODE_CUBLAS(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH));
}

// y (rows x out, row-major) = x (rows x in) * w^T, w being out x in row-major.
// In cuBLAS's column-major terms: y^T (out x rows) = op_T(w) * x^T.
void GpuModel::gemm(const __nv_bfloat16* w, int64_t out, int64_t in, const __nv_bfloat16* x,
                    int64_t rows, void* y, cudaDataType y_type, float beta) {
  const float alpha = 1.0f;
  DECODE_CUBLAS(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, (int)out, (int)rows, (int)in, &alpha,
                             w, CUDA_R_16BF, (int)in, x, CUDA_R_16BF, (int)in, &beta, y, y_type,
                             (int)out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void GpuModel::forward(const int32_t* tokens, int64_t rows, int32_t eos, float eos_bias) {
  const GpuModelShape& s = shape_;
  if (rows < 1 || rows > s.max_batch) throw std::runtime_error("forward: bad row count");
  embed_kernel<<<(unsigned)rows, 256, 0, stream_>>>(tokens, embed_, s.vocab, s.hidden, x_);
  DECODE_LAUNCHED();
  for (const Layer& l : layers_) {
    rms_norm_kernel<<<(unsigned)rows, kNormThreads, 0, stream_>>>(x_, l.norm, s.hidden, h_);
    DECODE_LAUNCHED();
    gemm(l.gate_up, 2 * s.ffn, s.hidden, h_, rows, gu_, CUDA_R_16BF, 0.0f);
    swiglu_kernel<<<grid_for(rows * s.ffn), 256, 0, stream_>>>(gu_, rows, s.ffn, act_);
    DECODE_LAUNCHED();
    gemm(l.down, s.hidden, s.ffn, act_, rows, x_, CUDA_R_32F, 1.0f);  // residual add via beta
  }
  rms_norm_kernel<<<(unsigned)rows, kNormThreads, 0, stream_>>>(x_, final_norm_, s.hidden, h_);
  DECODE_LAUNCHED();
  const bool f32 = s.logits == LogitsType::kF32;
  gemm(head_, s.vocab, s.hidden, h_, rows, logits_, f32 ? CUDA_R_32F : CUDA_R_16BF, 0.0f);
  if (eos_bias != 0.0f) {
    const unsigned blocks = (unsigned)((rows + 127) / 128);
    if (f32)
      bias_column_kernel<<<blocks, 128, 0, stream_>>>(static_cast<float*>(logits_), rows, s.vocab,
                                                      eos, eos_bias);
    else
      bias_column_kernel<<<blocks, 128, 0, stream_>>>(static_cast<__nv_bfloat16*>(logits_), rows,
                                                      s.vocab, eos, eos_bias);
    DECODE_LAUNCHED();
  }
}

}  // namespace decode
