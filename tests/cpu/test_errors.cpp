// Every argument error of docs/semantics.md ("Argument errors"), through the C
// ABI and through the C++ API: the status, a message from
// tokensift_last_error() that names the offending argument, and untouched
// outputs (errors are found before any work).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "tokensift/tokensift.h"
#include "tokensift/tokensift.hpp"

namespace ts = tokensift;

namespace {

constexpr int64_t kRows = 4, kVocab = 10, kStride = 12;
const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return (char)std::tolower(c); });
  return s;
}

// The message names the argument under any of its usual spellings.
::testing::AssertionResult mentions(const char* message, std::initializer_list<const char*> words) {
  const std::string m = lower(message ? message : "");
  for (const char* w : words)
    if (m.find(lower(w)) != std::string::npos) return ::testing::AssertionSuccess();
  std::string list;
  for (const char* w : words) list += std::string(" '") + w + "'";
  return ::testing::AssertionFailure() << "last error \"" << (message ? message : "(null)") << "\" names none of" << list;
}

// A valid C call; each test breaks one thing.
struct CCall {
  tokensift_config config;
  tokensift_sampler* sampler = nullptr;
  std::vector<float> logit_storage = std::vector<float>(kRows * kStride, 0.5f);
  tokensift_logits logits{};
  tokensift_params params;
  std::vector<int32_t> tokens = std::vector<int32_t>(kRows, -9), status = std::vector<int32_t>(kRows, -9);
  tokensift_outputs outputs{};
  std::vector<unsigned char> workspace;
  size_t bytes = 0;
  // Per-row arrays, valid until a test breaks one value.
  std::vector<float> temperature = std::vector<float>(kRows, 1.0f), top_p = std::vector<float>(kRows, 0.9f),
                     min_p = std::vector<float>(kRows, 0.1f);
  std::vector<int32_t> top_k = std::vector<int32_t>(kRows, 3);

  CCall() {
    tokensift_config_init(&config);
    EXPECT_EQ(tokensift_create(&config, &sampler), TOKENSIFT_OK) << tokensift_last_error();
    logits = tokensift_logits{logit_storage.data(), kRows, kVocab, kStride, TOKENSIFT_DTYPE_F32};
    tokensift_params_init(&params);
    outputs.tokens = tokens.data();
    outputs.row_status = status.data();
    EXPECT_EQ(tokensift_workspace_size(sampler, kRows, kVocab, TOKENSIFT_DTYPE_F32, &bytes), TOKENSIFT_OK);
    workspace.resize(bytes + 1);
    EXPECT_EQ(tokensift_workspace_init(sampler, workspace.data(), bytes, nullptr), TOKENSIFT_OK);
  }
  ~CCall() { tokensift_destroy(sampler); }
  CCall(const CCall&) = delete;
  CCall& operator=(const CCall&) = delete;

  tokensift_status sample() { return tokensift_sample(sampler, &logits, &params, &outputs, workspace.data(), bytes, nullptr); }
  bool outputs_untouched() const {
    return std::all_of(tokens.begin(), tokens.end(), [](int32_t t) { return t == -9; }) &&
           std::all_of(status.begin(), status.end(), [](int32_t t) { return t == -9; });
  }
};

#define EXPECT_C_ERROR(call, expr, want, ...)                              \
  do {                                                                     \
    EXPECT_EQ((expr), (want));                                             \
    EXPECT_TRUE(mentions(tokensift_last_error(), {__VA_ARGS__}));          \
    EXPECT_TRUE((call).outputs_untouched()) << "a failed call wrote outputs"; \
  } while (0)

}  // namespace

// ------------------------------------------------------------------ C ABI --

TEST(CErrors, ValidCallSucceeds) {
  CCall c;
  ASSERT_EQ(c.sample(), TOKENSIFT_OK) << tokensift_last_error();
  for (int64_t r = 0; r < kRows; ++r) {
    EXPECT_EQ(c.status[(size_t)r], TOKENSIFT_ROW_OK);
    EXPECT_TRUE(c.tokens[(size_t)r] >= 0 && c.tokens[(size_t)r] < kVocab);
  }
  // rows = 0 with data = NULL is a valid empty call.
  CCall e;
  e.logits.rows = 0;
  e.logits.data = nullptr;
  EXPECT_EQ(e.sample(), TOKENSIFT_OK) << tokensift_last_error();
}

TEST(CErrors, NullPointer) {
  {
    CCall c;
    EXPECT_C_ERROR(c, tokensift_sample(nullptr, &c.logits, &c.params, &c.outputs, c.workspace.data(), c.bytes, nullptr),
                   TOKENSIFT_ERROR_NULL_POINTER, "sampler");
  }
  {
    CCall c;
    EXPECT_C_ERROR(c, tokensift_sample(c.sampler, nullptr, &c.params, &c.outputs, c.workspace.data(), c.bytes, nullptr),
                   TOKENSIFT_ERROR_NULL_POINTER, "logits");
  }
  {
    CCall c;
    EXPECT_C_ERROR(c, tokensift_sample(c.sampler, &c.logits, nullptr, &c.outputs, c.workspace.data(), c.bytes, nullptr),
                   TOKENSIFT_ERROR_NULL_POINTER, "params");
  }
  {
    CCall c;
    EXPECT_EQ(tokensift_sample(c.sampler, &c.logits, &c.params, nullptr, c.workspace.data(), c.bytes, nullptr),
              TOKENSIFT_ERROR_NULL_POINTER);
    EXPECT_TRUE(mentions(tokensift_last_error(), {"outputs"}));
  }
  {
    CCall c;
    c.logits.data = nullptr;
    EXPECT_C_ERROR(c, c.sample(), TOKENSIFT_ERROR_NULL_POINTER, "data", "logits");
  }
  {
    CCall c;
    c.outputs.tokens = nullptr;
    EXPECT_EQ(c.sample(), TOKENSIFT_ERROR_NULL_POINTER);
    EXPECT_TRUE(mentions(tokensift_last_error(), {"tokens"}));
    EXPECT_TRUE(std::all_of(c.status.begin(), c.status.end(), [](int32_t s) { return s == -9; }));
  }
  {
    CCall c;
    if (c.bytes > 0) {
      EXPECT_C_ERROR(c, tokensift_sample(c.sampler, &c.logits, &c.params, &c.outputs, nullptr, c.bytes, nullptr),
                     TOKENSIFT_ERROR_NULL_POINTER, "workspace");
    } else {
      // A zero-byte workspace may be NULL.
      EXPECT_EQ(tokensift_sample(c.sampler, &c.logits, &c.params, &c.outputs, nullptr, 0, nullptr), TOKENSIFT_OK);
    }
  }
  tokensift_config config;
  tokensift_config_init(&config);
  EXPECT_EQ(tokensift_create(&config, nullptr), TOKENSIFT_ERROR_NULL_POINTER);
  tokensift_sampler* s = nullptr;
  EXPECT_EQ(tokensift_create(nullptr, &s), TOKENSIFT_ERROR_NULL_POINTER);
  EXPECT_TRUE(mentions(tokensift_last_error(), {"config"}));
  CCall c;
  if (c.bytes > 0) {
    EXPECT_EQ(tokensift_workspace_init(c.sampler, nullptr, c.bytes, nullptr), TOKENSIFT_ERROR_NULL_POINTER);
    EXPECT_TRUE(mentions(tokensift_last_error(), {"workspace"}));
  }
  EXPECT_EQ(tokensift_workspace_size(c.sampler, kRows, kVocab, TOKENSIFT_DTYPE_F32, nullptr), TOKENSIFT_ERROR_NULL_POINTER);
  EXPECT_EQ(tokensift_workspace_size(nullptr, kRows, kVocab, TOKENSIFT_DTYPE_F32, &c.bytes), TOKENSIFT_ERROR_NULL_POINTER);
}

TEST(CErrors, InvalidVocab) {
  for (int64_t v : {(int64_t)0, (int64_t)-3, (int64_t)INT32_MAX + 1}) {
    CCall c;
    c.logits.vocab = v;
    c.logits.row_stride = std::max<int64_t>(v, kStride);
    EXPECT_C_ERROR(c, c.sample(), TOKENSIFT_ERROR_INVALID_VOCAB, "vocab");
    size_t bytes = 0;
    EXPECT_EQ(tokensift_workspace_size(c.sampler, kRows, v, TOKENSIFT_DTYPE_F32, &bytes), TOKENSIFT_ERROR_INVALID_VOCAB);
  }
}

TEST(CErrors, InvalidRows) {
  CCall c;
  c.logits.rows = -1;
  EXPECT_C_ERROR(c, c.sample(), TOKENSIFT_ERROR_INVALID_ROWS, "rows");
  size_t bytes = 0;
  EXPECT_EQ(tokensift_workspace_size(c.sampler, -1, kVocab, TOKENSIFT_DTYPE_F32, &bytes), TOKENSIFT_ERROR_INVALID_ROWS);
}

TEST(CErrors, InvalidStride) {
  CCall c;
  c.logits.row_stride = kVocab - 1;
  EXPECT_C_ERROR(c, c.sample(), TOKENSIFT_ERROR_INVALID_STRIDE, "stride");
}

// A logits pointer off its element size: a clear error, never a fault.
TEST(CErrors, MisalignedLogits) {
  CCall c;
  const char* base = reinterpret_cast<const char*>(c.logits.data);
  c.logits.data = base + 2;  // fp32 rows: half an element off
  EXPECT_C_ERROR(c, c.sample(), TOKENSIFT_ERROR_INVALID_STRIDE, "aligned");
  c.logits.dtype = TOKENSIFT_DTYPE_BF16;
  c.logits.data = base + 1;
  EXPECT_C_ERROR(c, c.sample(), TOKENSIFT_ERROR_INVALID_STRIDE, "aligned");
}

TEST(CErrors, InvalidDtype) {
  CCall c;
  c.logits.dtype = (tokensift_dtype)7;
  EXPECT_C_ERROR(c, c.sample(), TOKENSIFT_ERROR_INVALID_DTYPE, "dtype");
  size_t bytes = 0;
  EXPECT_EQ(tokensift_workspace_size(c.sampler, kRows, kVocab, (tokensift_dtype)-1, &bytes), TOKENSIFT_ERROR_INVALID_DTYPE);
}

TEST(CErrors, InvalidTemperature) {
  for (float t : {-1.0f, -1e-30f, kNan, kInf}) {
    CCall c;
    c.params.temperature.value = t;
    EXPECT_C_ERROR(c, c.sample(), TOKENSIFT_ERROR_INVALID_TEMPERATURE, "temperature");
    CCall r;  // per-row, checked on the host by the CPU backend
    r.temperature[2] = t;
    r.params.temperature.per_row = r.temperature.data();
    EXPECT_C_ERROR(r, r.sample(), TOKENSIFT_ERROR_INVALID_TEMPERATURE, "temperature");
  }
}

TEST(CErrors, InvalidTopK) {
  for (int32_t k : {-1, INT32_MIN}) {
    CCall c;
    c.params.top_k.value = k;
    EXPECT_C_ERROR(c, c.sample(), TOKENSIFT_ERROR_INVALID_TOP_K, "top_k", "top-k", "topk");
    CCall r;
    r.top_k[3] = k;
    r.params.top_k.per_row = r.top_k.data();
    EXPECT_C_ERROR(r, r.sample(), TOKENSIFT_ERROR_INVALID_TOP_K, "top_k", "top-k", "topk");
  }
}

TEST(CErrors, InvalidTopP) {
  for (float p : {0.0f, -0.0f, -0.5f, std::nextafter(1.0f, 2.0f), 1.5f, kNan, kInf}) {
    CCall c;
    c.params.top_p.value = p;
    EXPECT_C_ERROR(c, c.sample(), TOKENSIFT_ERROR_INVALID_TOP_P, "top_p", "top-p", "topp");
    CCall r;
    r.top_p[0] = p;
    r.params.top_p.per_row = r.top_p.data();
    EXPECT_C_ERROR(r, r.sample(), TOKENSIFT_ERROR_INVALID_TOP_P, "top_p", "top-p", "topp");
  }
}

TEST(CErrors, InvalidMinP) {
  for (float m : {-0.1f, -1e-30f, std::nextafter(1.0f, 2.0f), 1.5f, kNan, kInf}) {
    CCall c;
    c.params.min_p.value = m;
    EXPECT_C_ERROR(c, c.sample(), TOKENSIFT_ERROR_INVALID_MIN_P, "min_p", "min-p", "minp");
    CCall r;
    r.min_p[1] = m;
    r.params.min_p.per_row = r.min_p.data();
    EXPECT_C_ERROR(r, r.sample(), TOKENSIFT_ERROR_INVALID_MIN_P, "min_p", "min-p", "minp");
  }
}

TEST(CErrors, SizeMismatch) {
  {
    CCall c;
    c.params.struct_size = 3;
    EXPECT_C_ERROR(c, c.sample(), TOKENSIFT_ERROR_SIZE_MISMATCH, "struct_size", "size");
  }
  {
    CCall c;
    c.params.struct_size = (uint32_t)sizeof(tokensift_params) + 64;
    EXPECT_C_ERROR(c, c.sample(), TOKENSIFT_ERROR_SIZE_MISMATCH, "struct_size", "size");
  }
  tokensift_config config;
  tokensift_config_init(&config);
  config.struct_size = 1;
  tokensift_sampler* s = nullptr;
  EXPECT_EQ(tokensift_create(&config, &s), TOKENSIFT_ERROR_SIZE_MISMATCH);
  EXPECT_TRUE(mentions(tokensift_last_error(), {"struct_size", "size"}));
  EXPECT_EQ(s, nullptr);
}

TEST(CErrors, WorkspaceTooSmall) {
  CCall c;
  if (c.bytes == 0) GTEST_SKIP() << "the CPU backend needs no workspace for this shape; nothing can be too small";
  EXPECT_C_ERROR(c, tokensift_sample(c.sampler, &c.logits, &c.params, &c.outputs, c.workspace.data(), c.bytes - 1, nullptr),
                 TOKENSIFT_ERROR_WORKSPACE_TOO_SMALL, "workspace");
}

TEST(CErrors, BackendUnavailable) {
  if (tokensift_backend_available(TOKENSIFT_BACKEND_CUDA))
    GTEST_SKIP() << "a CUDA device is present: the backend is available";
  tokensift_config config;
  tokensift_config_init(&config);
  config.backend = TOKENSIFT_BACKEND_CUDA;
  tokensift_sampler* s = nullptr;
  EXPECT_EQ(tokensift_create(&config, &s), TOKENSIFT_ERROR_BACKEND_UNAVAILABLE);
  EXPECT_TRUE(mentions(tokensift_last_error(), {"cuda"}));
  EXPECT_EQ(s, nullptr);
  EXPECT_EQ(tokensift_backend_available(TOKENSIFT_BACKEND_CPU), 1);
}

TEST(CErrors, InvalidAlgo) {
  tokensift_config config;
  tokensift_config_init(&config);
  config.algo = (tokensift_algo)99;
  tokensift_sampler* s = nullptr;
  const tokensift_status st = tokensift_create(&config, &s);
  if (st == TOKENSIFT_OK) {
    // Accepted at creation: then the call must refuse it.
    CCall c;
    tokensift_destroy(c.sampler);
    c.sampler = s;
    EXPECT_C_ERROR(c, c.sample(), TOKENSIFT_ERROR_INVALID_ALGO, "algo");
  } else {
    EXPECT_EQ(st, TOKENSIFT_ERROR_INVALID_ALGO);
    EXPECT_TRUE(mentions(tokensift_last_error(), {"algo"}));
  }
}

TEST(CErrors, Unsupported) {
  int dummy = 0;
  {
    CCall c;
    c.params.extensions = &dummy;
    EXPECT_C_ERROR(c, c.sample(), TOKENSIFT_ERROR_UNSUPPORTED, "extensions");
  }
  {
    CCall c;
    c.params.flags = 1;
    EXPECT_C_ERROR(c, c.sample(), TOKENSIFT_ERROR_UNSUPPORTED, "flags");
  }
}

TEST(CErrors, StatusStringsAndVersion) {
  for (int s = TOKENSIFT_OK; s <= TOKENSIFT_ERROR_INTERNAL; ++s) {
    const char* str = tokensift_status_string((tokensift_status)s);
    ASSERT_NE(str, nullptr);
    EXPECT_GT(std::string(str).size(), 0u) << s;
  }
  int major = -1, minor = -1, patch = -1;
  tokensift_version(&major, &minor, &patch);
  EXPECT_EQ(major, TOKENSIFT_VERSION_MAJOR);
  EXPECT_EQ(minor, TOKENSIFT_VERSION_MINOR);
  EXPECT_EQ(patch, TOKENSIFT_VERSION_PATCH);
  EXPECT_NE(tokensift_version_string(), nullptr);
}

// ---------------------------------------------------------------- C++ API --

namespace {

// A valid C++ call; each test breaks one thing.
struct CppCall {
  std::unique_ptr<ts::Sampler> sampler;
  std::vector<float> storage = std::vector<float>(kRows * kStride, 0.25f);
  ts::LogitsView logits{storage.data(), kRows, kVocab, kStride, ts::DType::kF32};
  ts::SamplingParams params;
  std::vector<int32_t> tokens = std::vector<int32_t>(kRows, -9), status = std::vector<int32_t>(kRows, -9);
  ts::SampleOutputs outputs{tokens.data(), status.data(), nullptr, nullptr};
  std::vector<unsigned char> workspace;
  size_t bytes = 0;
  std::vector<float> temperature = std::vector<float>(kRows, 1.0f), top_p = std::vector<float>(kRows, 0.9f),
                     min_p = std::vector<float>(kRows, 0.1f);
  std::vector<int32_t> top_k = std::vector<int32_t>(kRows, 3);

  CppCall() {
    EXPECT_EQ(ts::Sampler::create(ts::SamplerConfig{}, &sampler), ts::Status::kOk) << ts::last_error_message();
    EXPECT_EQ(sampler->workspace_size(kRows, kVocab, ts::DType::kF32, &bytes), ts::Status::kOk);
    workspace.resize(bytes + 1);
    EXPECT_EQ(sampler->workspace_init(workspace.data(), bytes), ts::Status::kOk);
  }
  ts::Status sample() { return sampler->sample(logits, params, outputs, workspace.data(), bytes); }
  bool outputs_untouched() const {
    return std::all_of(tokens.begin(), tokens.end(), [](int32_t t) { return t == -9; }) &&
           std::all_of(status.begin(), status.end(), [](int32_t t) { return t == -9; });
  }
};

#define EXPECT_CPP_ERROR(call, expr, want, ...)                             \
  do {                                                                      \
    EXPECT_EQ((expr), (want));                                              \
    EXPECT_TRUE(mentions(ts::last_error_message(), {__VA_ARGS__}));         \
    EXPECT_TRUE(mentions(tokensift_last_error(), {__VA_ARGS__}));           \
    EXPECT_TRUE((call).outputs_untouched()) << "a failed call wrote outputs"; \
  } while (0)

}  // namespace

TEST(CppErrors, ValidCallSucceeds) {
  CppCall c;
  ASSERT_EQ(c.sample(), ts::Status::kOk) << ts::last_error_message();
  for (int32_t t : c.tokens) EXPECT_TRUE(t >= 0 && t < kVocab);
}

TEST(CppErrors, NullPointer) {
  {
    CppCall c;
    c.logits.data = nullptr;
    EXPECT_CPP_ERROR(c, c.sample(), ts::Status::kNullPointer, "data", "logits");
  }
  {
    CppCall c;
    c.outputs.tokens = nullptr;
    EXPECT_EQ(c.sample(), ts::Status::kNullPointer);
    EXPECT_TRUE(mentions(ts::last_error_message(), {"tokens"}));
  }
  {
    CppCall c;
    if (c.bytes > 0) {
      EXPECT_CPP_ERROR(c, c.sampler->sample(c.logits, c.params, c.outputs, nullptr, c.bytes), ts::Status::kNullPointer,
                       "workspace");
    }
  }
  EXPECT_EQ(ts::Sampler::create(ts::SamplerConfig{}, nullptr), ts::Status::kNullPointer);
}

TEST(CppErrors, ShapeAndDtype) {
  {
    CppCall c;
    c.logits.vocab = 0;
    EXPECT_CPP_ERROR(c, c.sample(), ts::Status::kInvalidVocab, "vocab");
  }
  {
    CppCall c;
    c.logits.vocab = (int64_t)INT32_MAX + 1;
    c.logits.row_stride = c.logits.vocab;
    EXPECT_CPP_ERROR(c, c.sample(), ts::Status::kInvalidVocab, "vocab");
  }
  {
    CppCall c;
    c.logits.rows = -2;
    EXPECT_CPP_ERROR(c, c.sample(), ts::Status::kInvalidRows, "rows");
  }
  {
    CppCall c;
    c.logits.row_stride = kVocab - 1;
    EXPECT_CPP_ERROR(c, c.sample(), ts::Status::kInvalidStride, "stride");
  }
  {
    CppCall c;
    c.logits.dtype = (ts::DType)9;
    EXPECT_CPP_ERROR(c, c.sample(), ts::Status::kInvalidDtype, "dtype");
  }
}

TEST(CppErrors, Parameters) {
  for (float t : {-2.0f, kNan, kInf}) {
    CppCall c;
    c.params.temperature.value = t;
    EXPECT_CPP_ERROR(c, c.sample(), ts::Status::kInvalidTemperature, "temperature");
    CppCall r;
    r.temperature[1] = t;
    r.params.temperature.per_row = r.temperature.data();
    EXPECT_CPP_ERROR(r, r.sample(), ts::Status::kInvalidTemperature, "temperature");
  }
  {
    CppCall c;
    c.params.top_k.value = -5;
    EXPECT_CPP_ERROR(c, c.sample(), ts::Status::kInvalidTopK, "top_k", "top-k", "topk");
    CppCall r;
    r.top_k[0] = -1;
    r.params.top_k.per_row = r.top_k.data();
    EXPECT_CPP_ERROR(r, r.sample(), ts::Status::kInvalidTopK, "top_k", "top-k", "topk");
  }
  for (float p : {0.0f, 1.0001f, kNan}) {
    CppCall c;
    c.params.top_p.value = p;
    EXPECT_CPP_ERROR(c, c.sample(), ts::Status::kInvalidTopP, "top_p", "top-p", "topp");
    CppCall r;
    r.top_p[3] = p;
    r.params.top_p.per_row = r.top_p.data();
    EXPECT_CPP_ERROR(r, r.sample(), ts::Status::kInvalidTopP, "top_p", "top-p", "topp");
  }
  for (float m : {-0.5f, 1.0001f, kNan}) {
    CppCall c;
    c.params.min_p.value = m;
    EXPECT_CPP_ERROR(c, c.sample(), ts::Status::kInvalidMinP, "min_p", "min-p", "minp");
    CppCall r;
    r.min_p[2] = m;
    r.params.min_p.per_row = r.min_p.data();
    EXPECT_CPP_ERROR(r, r.sample(), ts::Status::kInvalidMinP, "min_p", "min-p", "minp");
  }
  {
    int dummy = 0;
    CppCall c;
    c.params.extensions = &dummy;
    EXPECT_CPP_ERROR(c, c.sample(), ts::Status::kUnsupported, "extensions");
  }
  // Edge values that are valid: T = 0, k = 0 and k huge, p = 1, min_p = 0 and 1.
  CppCall ok;
  ok.params.temperature.value = 0.0f;
  ok.params.top_k.value = INT32_MAX;
  ok.params.top_p.value = 1.0f;
  ok.params.min_p.value = 1.0f;
  EXPECT_EQ(ok.sample(), ts::Status::kOk) << ts::last_error_message();
}

TEST(CppErrors, WorkspaceTooSmall) {
  CppCall c;
  if (c.bytes == 0) GTEST_SKIP() << "the CPU backend needs no workspace for this shape; nothing can be too small";
  EXPECT_CPP_ERROR(c, c.sampler->sample(c.logits, c.params, c.outputs, c.workspace.data(), c.bytes - 1),
                   ts::Status::kWorkspaceTooSmall, "workspace");
}

TEST(CppErrors, BackendAndAlgo) {
  std::unique_ptr<ts::Sampler> s;
  if (!ts::backend_available(ts::Backend::kCuda)) {
    ts::SamplerConfig config;
    config.backend = ts::Backend::kCuda;
    EXPECT_EQ(ts::Sampler::create(config, &s), ts::Status::kBackendUnavailable);
    EXPECT_TRUE(mentions(ts::last_error_message(), {"cuda"}));
    EXPECT_EQ(s, nullptr);
  }
  ts::SamplerConfig config;
  config.algo = (ts::Algo)42;
  const ts::Status st = ts::Sampler::create(config, &s);
  if (st == ts::Status::kOk) {
    CppCall c;
    c.sampler = std::move(s);
    EXPECT_CPP_ERROR(c, c.sample(), ts::Status::kInvalidAlgo, "algo");
  } else {
    EXPECT_EQ(st, ts::Status::kInvalidAlgo);
    EXPECT_TRUE(mentions(ts::last_error_message(), {"algo"}));
  }
  EXPECT_STREQ(ts::status_string(ts::Status::kInvalidTopP), tokensift_status_string(TOKENSIFT_ERROR_INVALID_TOP_P));
}
