#include "sample_call.hpp"

#include "resource_cache.hpp"

namespace tokensift::py {
namespace {

Algo algo_of(int algo) {
  // Out-of-range values go to the library, which names them INVALID_ALGO.
  return (Algo)algo;
}

}  // namespace

void sample(const SampleArgs& args) {
  nb::ndarray<nb::ro> logits_array;
  if (!nb::try_cast(args.logits, logits_array, /*convert=*/false)) {
    raise_error(Status::kInvalidDtype, "logits must be a DLPack array (NumPy, torch, CuPy, JAX)");
  }
  Device device;
  const LogitsView logits = logits_view(logits_array, args.dtype_override, &device);
  const int64_t rows = logits.rows;

  SamplingParams params;
  params.temperature = f32_param(args.temperature, "temperature", rows, device);
  params.min_p = f32_param(args.min_p, "min_p", rows, device);
  params.top_k = i32_param(args.top_k, "top_k", rows, device);
  params.top_p = f32_param(args.top_p, "top_p", rows, device);
  params.seed = u64_param(args.seed, "seed", rows, device);
  params.offset = u64_param(args.offset, "offset", rows, device);

  SampleOutputs outputs;
  outputs.tokens = i32_output(args.tokens, "out", rows, device);
  outputs.row_status = i32_output(args.row_status, "row_status", rows, device);
  outputs.logprobs = f32_output(args.logprobs, "logprobs", rows, device);
  outputs.kept_counts = i32_output(args.kept_counts, "kept_counts", rows, device);

  const Sampler& sampler = sampler_for(device, algo_of(args.algo));
  void* stream = reinterpret_cast<void*>(args.stream);
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  if (!args.workspace.is_none()) {
    workspace = workspace_view(args.workspace, &device, &workspace_bytes);
  } else {
    size_t need = 0;
    check(sampler.workspace_size(rows, logits.vocab, logits.dtype, &need));
    workspace = cached_workspace(sampler, device, stream, need);
    workspace_bytes = need;
  }
  check(sampler.sample(logits, params, outputs, workspace, workspace_bytes, stream));
}

size_t workspace_size(int64_t rows, int64_t vocab, int dtype, int device_type, int device_id,
                      int algo) {
  const Sampler& sampler = sampler_for(device_of(device_type, device_id), algo_of(algo));
  size_t bytes = 0;
  check(sampler.workspace_size(rows, vocab, (DType)dtype, &bytes));
  return bytes;
}

void init_workspace(nb::handle workspace, int algo, uintptr_t stream) {
  // One cast only: a second one of the same DLPack capsule fails.
  Device device;
  size_t bytes = 0;
  void* data = workspace_view(workspace, nullptr, &bytes, &device);
  check(sampler_for(device, algo_of(algo)).workspace_init(data, bytes, reinterpret_cast<void*>(stream)));
}

}  // namespace tokensift::py
