// tokensift.hpp: the C++ API.
//
// Same capability as the C ABI (tokensift.h), with C++ types: a logits view, a
// params struct whose every field is "one value, or one value per row", an
// outputs struct, and a Sampler with CUB's two-phase workspace pattern.
// Errors are returned as Status; the message is in last_error_message().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "tokensift/contract.h"
#include "tokensift/tokensift.h"

namespace tokensift {

enum class Status : int32_t {
  kOk = TOKENSIFT_OK,
  kNullPointer = TOKENSIFT_ERROR_NULL_POINTER,
  kInvalidVocab = TOKENSIFT_ERROR_INVALID_VOCAB,
  kInvalidStride = TOKENSIFT_ERROR_INVALID_STRIDE,
  kInvalidRows = TOKENSIFT_ERROR_INVALID_ROWS,
  kInvalidDtype = TOKENSIFT_ERROR_INVALID_DTYPE,
  kInvalidTemperature = TOKENSIFT_ERROR_INVALID_TEMPERATURE,
  kInvalidTopK = TOKENSIFT_ERROR_INVALID_TOP_K,
  kInvalidTopP = TOKENSIFT_ERROR_INVALID_TOP_P,
  kInvalidMinP = TOKENSIFT_ERROR_INVALID_MIN_P,
  kSizeMismatch = TOKENSIFT_ERROR_SIZE_MISMATCH,
  kWorkspaceTooSmall = TOKENSIFT_ERROR_WORKSPACE_TOO_SMALL,
  kBackendUnavailable = TOKENSIFT_ERROR_BACKEND_UNAVAILABLE,
  kInvalidAlgo = TOKENSIFT_ERROR_INVALID_ALGO,
  kUnsupported = TOKENSIFT_ERROR_UNSUPPORTED,
  kCudaError = TOKENSIFT_ERROR_CUDA,
  kInternal = TOKENSIFT_ERROR_INTERNAL,
};

enum class RowStatus : int32_t {
  kOk = TOKENSIFT_ROW_OK,
  kNanInput = TOKENSIFT_ROW_NAN_INPUT,
  kNoValidToken = TOKENSIFT_ROW_NO_VALID_TOKEN,
  kInvalidParam = TOKENSIFT_ROW_INVALID_PARAM,
};

enum class DType : int32_t {
  kF32 = TOKENSIFT_DTYPE_F32,
  kBF16 = TOKENSIFT_DTYPE_BF16,
  kF16 = TOKENSIFT_DTYPE_F16,
};

enum class Backend : int32_t { kCpu = TOKENSIFT_BACKEND_CPU, kCuda = TOKENSIFT_BACKEND_CUDA };

enum class Algo : int32_t {
  kAuto = TOKENSIFT_ALGO_AUTO,
  kPivot = TOKENSIFT_ALGO_PIVOT,
  kSort = TOKENSIFT_ALGO_SORT,
};

inline constexpr size_t dtype_size(DType d) { return d == DType::kF32 ? 4 : 2; }

// rows x vocab logits; row r starts at data + r * row_stride elements.
struct LogitsView {
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t vocab = 0;
  int64_t row_stride = 0;  // elements, >= vocab
  DType dtype = DType::kF32;
};

// One value for all rows, or per_row[r] for row r when per_row is set.
template <class T>
struct RowParam {
  T value{};
  const T* per_row = nullptr;
  TS_HD T at(int64_t row) const { return per_row ? per_row[row] : value; }
};

// temperature -> min_p -> top_k -> top_p -> draw; docs/semantics.md.
struct SamplingParams {
  RowParam<float> temperature{1.0f, nullptr};
  RowParam<float> min_p{0.0f, nullptr};
  RowParam<int32_t> top_k{0, nullptr};
  RowParam<float> top_p{1.0f, nullptr};
  RowParam<uint64_t> seed{0, nullptr};
  RowParam<uint64_t> offset{0, nullptr};
  const void* extensions = nullptr;  // reserved for later filters; must be null
};

struct SampleOutputs {
  int32_t* tokens = nullptr;       // required
  int32_t* row_status = nullptr;   // RowStatus values
  float* logprobs = nullptr;       // log-prob of the token under the processed distribution
  int32_t* kept_counts = nullptr;  // kept-set size after all filters
};

struct SamplerConfig {
  Backend backend = Backend::kCpu;
  Algo algo = Algo::kAuto;
  int device = 0;       // CUDA device ordinal
  int num_threads = 0;  // CPU threads; 0 = hardware concurrency
};

class Sampler {
 public:
  // Validates the configuration (and, for CUDA, that a device is present).
  static Status create(const SamplerConfig& config, std::unique_ptr<Sampler>* out);

  Status workspace_size(int64_t rows, int64_t vocab, DType dtype, size_t* bytes) const;
  // Optional zero-fill; calls need no particular workspace contents.
  Status workspace_init(void* workspace, size_t bytes, void* stream = nullptr) const;
  // No allocation, no synchronization (CUDA), graph-capturable.
  Status sample(const LogitsView& logits, const SamplingParams& params,
                const SampleOutputs& outputs, void* workspace, size_t workspace_bytes,
                void* stream = nullptr) const;

  const SamplerConfig& config() const { return config_; }

 private:
  explicit Sampler(const SamplerConfig& c) : config_(c) {}
  SamplerConfig config_;
};

const char* status_string(Status status);
// Message of the last failed call on this thread ("" if none).
const char* last_error_message();
bool backend_available(Backend backend);

}  // namespace tokensift
