// Sampler: configuration checks, call-level argument validation (the table at
// the end of docs/semantics.md, in its order), and dispatch to a backend.
//
// Everything a backend may assume is established here, before any work:
// pointers, shape, dtype and scalar parameters.  Per-row arrays are the
// backends' business (host arrays on the CPU, device arrays on CUDA).
#include <cinttypes>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <new>
#include <thread>

#include "api/backend.hpp"

namespace tokensift {
namespace {

using detail::fail;

bool known_dtype(DType d) { return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16; }
bool known_algo(Algo a) { return a == Algo::kAuto || a == Algo::kPivot || a == Algo::kSort; }

Status check_shape(int64_t rows, int64_t vocab, DType dtype) {
  if (vocab < 1 || vocab > INT32_MAX)
    return fail(Status::kInvalidVocab, "vocab = %" PRId64 ": must be in [1, 2^31 - 1]", vocab);
  if (rows < 0) return fail(Status::kInvalidRows, "rows = %" PRId64 ": must be >= 0", rows);
  if (!known_dtype(dtype))
    return fail(Status::kInvalidDtype, "dtype = %d: not a tokensift dtype (fp32, bf16, fp16)",
                (int)dtype);
  return Status::kOk;
}

// Scalar values are checked only when no per-row array overrides them.
Status check_scalars(const SamplingParams& p) {
  if (!p.temperature.per_row && !detail::valid_temperature(p.temperature.value))
    return fail(Status::kInvalidTemperature, "params.temperature = %g: must be finite and >= 0",
                (double)p.temperature.value);
  if (!p.top_k.per_row && !detail::valid_top_k(p.top_k.value))
    return fail(Status::kInvalidTopK, "params.top_k = %d: must be >= 0 (0 disables)",
                (int)p.top_k.value);
  if (!p.top_p.per_row && !detail::valid_top_p(p.top_p.value))
    return fail(Status::kInvalidTopP, "params.top_p = %g: must be in (0, 1] (1 disables)",
                (double)p.top_p.value);
  if (!p.min_p.per_row && !detail::valid_min_p(p.min_p.value))
    return fail(Status::kInvalidMinP, "params.min_p = %g: must be in [0, 1] (0 disables)",
                (double)p.min_p.value);
  return Status::kOk;
}

Status internal_error(const char* where) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return fail(Status::kInternal, "%s: out of memory", where);
  } catch (const std::exception& e) {
    return fail(Status::kInternal, "%s: %s", where, e.what());
  } catch (...) {
    return fail(Status::kInternal, "%s: unknown exception", where);
  }
}

}  // namespace

Status Sampler::create(const SamplerConfig& config, std::unique_ptr<Sampler>* out) {
  try {
    if (!out) return fail(Status::kNullPointer, "Sampler::create: out is null");
    out->reset();
    if (!known_algo(config.algo))
      return fail(Status::kInvalidAlgo, "config.algo = %d: not a tokensift algo", (int)config.algo);
    if (config.num_threads < 0)
      return fail(Status::kUnsupported, "config.num_threads = %d: must be >= 0 (0 = all cores)",
                  config.num_threads);
    SamplerConfig c = config;
    if (c.backend == Backend::kCpu) {
      // Resolved once, so workspace_size and sample agree on the worker count.
      if (c.num_threads == 0) c.num_threads = (int)std::max(1u, std::thread::hardware_concurrency());
    } else if (c.backend == Backend::kCuda) {
      if (Status st = detail::cuda::check_device(c.device); st != Status::kOk) return st;
    } else {
      return fail(Status::kBackendUnavailable, "config.backend = %d: not a tokensift backend",
                  (int)c.backend);
    }
    out->reset(new Sampler(c));
    return Status::kOk;
  } catch (...) {
    return internal_error("Sampler::create");
  }
}

Status Sampler::workspace_size(int64_t rows, int64_t vocab, DType dtype, size_t* bytes) const {
  if (!bytes) return fail(Status::kNullPointer, "workspace_size: bytes is null");
  if (Status st = check_shape(rows, vocab, dtype); st != Status::kOk) return st;
  if (config_.backend == Backend::kCpu)
    *bytes = detail::cpu::workspace_size(rows, vocab, dtype, config_.num_threads, config_.algo);
  else
    *bytes = detail::cuda::workspace_size(rows, vocab, dtype, config_.algo);
  return Status::kOk;
}

Status Sampler::workspace_init(void* workspace, size_t bytes, void* stream) const {
  if (bytes == 0) return Status::kOk;
  if (!workspace) return fail(Status::kNullPointer, "workspace_init: workspace is null");
  if (config_.backend == Backend::kCuda) return detail::cuda::workspace_init(workspace, bytes, stream);
  // The CPU backend uses its workspace as scratch and needs no particular
  // contents; zeroing keeps the documented two-phase pattern uniform.
  std::memset(workspace, 0, bytes);
  return Status::kOk;
}

Status Sampler::sample(const LogitsView& logits, const SamplingParams& params,
                       const SampleOutputs& outputs, void* workspace, size_t workspace_bytes,
                       void* stream) const {
  try {
    if (!outputs.tokens) return fail(Status::kNullPointer, "outputs.tokens is null");
    if (!logits.data && logits.rows > 0)
      return fail(Status::kNullPointer, "logits.data is null with rows = %" PRId64, logits.rows);
    if (Status st = check_shape(logits.rows, logits.vocab, logits.dtype); st != Status::kOk)
      return st;
    if (logits.row_stride < logits.vocab)
      return fail(Status::kInvalidStride,
                  "logits.row_stride = %" PRId64 ": must be >= vocab = %" PRId64,
                  logits.row_stride, logits.vocab);
    // Typed loads of a misaligned pointer fault on the GPU and are undefined
    // on the CPU; the row-CTA kernel would read only its first 256 logits.
    if (logits.rows > 0 && reinterpret_cast<uintptr_t>(logits.data) % dtype_size(logits.dtype) != 0)
      return fail(Status::kInvalidStride, "logits.data = %p: not aligned to its %zu-byte elements", logits.data,
                  dtype_size(logits.dtype));
    if (Status st = check_scalars(params); st != Status::kOk) return st;
    size_t need = 0;
    if (Status st = workspace_size(logits.rows, logits.vocab, logits.dtype, &need);
        st != Status::kOk)
      return st;
    if (need > 0 && !workspace)
      return fail(Status::kNullPointer, "workspace is null (%zu bytes needed)", need);
    if (workspace_bytes < need)
      return fail(Status::kWorkspaceTooSmall,
                  "workspace_bytes = %zu: this call needs %zu (ask workspace_size)",
                  workspace_bytes, need);
    if (params.extensions)
      return fail(Status::kUnsupported,
                  "params.extensions must be null in tokensift 0.1 (reserved for later filters)");
    if (logits.rows == 0) return Status::kOk;
    if (config_.backend == Backend::kCpu)
      return detail::cpu::sample(logits, params, outputs, workspace, workspace_bytes,
                                 config_.num_threads, config_.algo);
    return detail::cuda::sample(logits, params, outputs, workspace, workspace_bytes, stream,
                                config_.device, config_.algo);
  } catch (...) {
    return internal_error("Sampler::sample");
  }
}

}  // namespace tokensift
