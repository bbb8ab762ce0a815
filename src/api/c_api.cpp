// The C ABI: struct-size checks, conversion to the C++ types, and an exception
// barrier (nothing may unwind through a C caller).
#include <exception>
#include <new>

#include "api/backend.hpp"

using tokensift::Status;
using tokensift::detail::fail;

struct tokensift_sampler {
  std::unique_ptr<tokensift::Sampler> impl;
};

namespace {

tokensift_status to_c(Status s) { return static_cast<tokensift_status>(s); }

tokensift_status boundary_error(const char* where) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return to_c(fail(Status::kInternal, "%s: out of memory", where));
  } catch (const std::exception& e) {
    return to_c(fail(Status::kInternal, "%s: %s", where, e.what()));
  } catch (...) {
    return to_c(fail(Status::kInternal, "%s: unknown exception", where));
  }
}

template <class T, class C>
tokensift::RowParam<T> row_param(const C& c) {
  return tokensift::RowParam<T>{c.value, c.per_row};
}

}  // namespace

extern "C" {

void tokensift_config_init(tokensift_config* config) {
  if (!config) return;
  *config = tokensift_config{};
  config->struct_size = sizeof(tokensift_config);
  config->backend = TOKENSIFT_BACKEND_CPU;
  config->algo = TOKENSIFT_ALGO_AUTO;
  config->device = 0;
  config->num_threads = 0;
}

void tokensift_params_init(tokensift_params* params) {
  if (!params) return;
  *params = tokensift_params{};
  params->struct_size = sizeof(tokensift_params);
  params->flags = 0;
  params->temperature = {1.0f, nullptr};
  params->min_p = {0.0f, nullptr};
  params->top_k = {0, nullptr};
  params->top_p = {1.0f, nullptr};
  params->seed = {0, nullptr};
  params->offset = {0, nullptr};
  params->extensions = nullptr;
}

tokensift_status tokensift_create(const tokensift_config* config, tokensift_sampler** out) {
  try {
    if (!out) return to_c(fail(Status::kNullPointer, "tokensift_create: out is null"));
    *out = nullptr;
    if (!config) return to_c(fail(Status::kNullPointer, "tokensift_create: config is null"));
    if (config->struct_size != sizeof(tokensift_config))
      return to_c(fail(Status::kSizeMismatch,
                       "config->struct_size = %u: this library knows %zu (call "
                       "tokensift_config_init)",
                       config->struct_size, sizeof(tokensift_config)));
    tokensift::SamplerConfig c;
    c.backend = static_cast<tokensift::Backend>(config->backend);
    c.algo = static_cast<tokensift::Algo>(config->algo);
    c.device = config->device;
    c.num_threads = config->num_threads;
    auto handle = std::make_unique<tokensift_sampler>();
    if (Status st = tokensift::Sampler::create(c, &handle->impl); st != Status::kOk)
      return to_c(st);
    *out = handle.release();
    return TOKENSIFT_OK;
  } catch (...) {
    return boundary_error("tokensift_create");
  }
}

void tokensift_destroy(tokensift_sampler* sampler) { delete sampler; }

tokensift_status tokensift_workspace_size(const tokensift_sampler* sampler, int64_t rows,
                                          int64_t vocab, tokensift_dtype dtype, size_t* bytes) {
  try {
    if (!sampler) return to_c(fail(Status::kNullPointer, "tokensift_workspace_size: sampler is null"));
    return to_c(sampler->impl->workspace_size(rows, vocab, static_cast<tokensift::DType>(dtype),
                                              bytes));
  } catch (...) {
    return boundary_error("tokensift_workspace_size");
  }
}

tokensift_status tokensift_workspace_init(const tokensift_sampler* sampler, void* workspace,
                                          size_t workspace_bytes, void* stream) {
  try {
    if (!sampler) return to_c(fail(Status::kNullPointer, "tokensift_workspace_init: sampler is null"));
    return to_c(sampler->impl->workspace_init(workspace, workspace_bytes, stream));
  } catch (...) {
    return boundary_error("tokensift_workspace_init");
  }
}

tokensift_status tokensift_sample(tokensift_sampler* sampler, const tokensift_logits* logits,
                                  const tokensift_params* params,
                                  const tokensift_outputs* outputs, void* workspace,
                                  size_t workspace_bytes, void* stream) {
  try {
    if (!sampler) return to_c(fail(Status::kNullPointer, "tokensift_sample: sampler is null"));
    if (!logits) return to_c(fail(Status::kNullPointer, "tokensift_sample: logits is null"));
    if (!params) return to_c(fail(Status::kNullPointer, "tokensift_sample: params is null"));
    if (!outputs) return to_c(fail(Status::kNullPointer, "tokensift_sample: outputs is null"));
    if (params->struct_size != sizeof(tokensift_params))
      return to_c(fail(Status::kSizeMismatch,
                       "params->struct_size = %u: this library knows %zu (call "
                       "tokensift_params_init)",
                       params->struct_size, sizeof(tokensift_params)));
    if (params->flags != 0)
      return to_c(fail(Status::kUnsupported, "params->flags = 0x%x: must be 0 in tokensift 0.1",
                       params->flags));
    tokensift::LogitsView view;
    view.data = logits->data;
    view.rows = logits->rows;
    view.vocab = logits->vocab;
    view.row_stride = logits->row_stride;
    view.dtype = static_cast<tokensift::DType>(logits->dtype);
    tokensift::SamplingParams p;
    p.temperature = row_param<float>(params->temperature);
    p.min_p = row_param<float>(params->min_p);
    p.top_k = row_param<int32_t>(params->top_k);
    p.top_p = row_param<float>(params->top_p);
    p.seed = row_param<uint64_t>(params->seed);
    p.offset = row_param<uint64_t>(params->offset);
    p.extensions = params->extensions;
    tokensift::SampleOutputs o;
    o.tokens = outputs->tokens;
    o.row_status = outputs->row_status;
    o.logprobs = outputs->logprobs;
    o.kept_counts = outputs->kept_counts;
    return to_c(sampler->impl->sample(view, p, o, workspace, workspace_bytes, stream));
  } catch (...) {
    return boundary_error("tokensift_sample");
  }
}

int tokensift_backend_available(tokensift_backend backend) {
  try {
    return tokensift::backend_available(static_cast<tokensift::Backend>(backend)) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

const char* tokensift_status_string(tokensift_status status) {
  return tokensift::status_string(static_cast<Status>(status));
}

const char* tokensift_last_error(void) { return tokensift::last_error_message(); }

const char* tokensift_version_string(void) {
#define TOKENSIFT_STR2(x) #x
#define TOKENSIFT_STR(x) TOKENSIFT_STR2(x)
  return TOKENSIFT_STR(TOKENSIFT_VERSION_MAJOR) "." TOKENSIFT_STR(
      TOKENSIFT_VERSION_MINOR) "." TOKENSIFT_STR(TOKENSIFT_VERSION_PATCH);
}

void tokensift_version(int* major, int* minor, int* patch) {
  if (major) *major = TOKENSIFT_VERSION_MAJOR;
  if (minor) *minor = TOKENSIFT_VERSION_MINOR;
  if (patch) *patch = TOKENSIFT_VERSION_PATCH;
}

}  // extern "C"
