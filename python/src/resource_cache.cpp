#include "resource_cache.hpp"

#include <map>
#include <memory>
#include <tuple>
#include <vector>

#if defined(TOKENSIFT_PY_CUDA)
#include <cuda_runtime.h>
#endif

namespace tokensift::py {
namespace {

using SamplerKey = std::tuple<int, int, int>;  // place, device id, algo

std::map<SamplerKey, std::unique_ptr<Sampler>>& samplers() {
  static auto* cache = new std::map<SamplerKey, std::unique_ptr<Sampler>>();  // never destroyed:
  return *cache;  // interpreter shutdown order must not matter
}

// Round growth up to a power of two so a slowly growing batch re-allocates
// O(log) times.
size_t grown_size(size_t need) {
  size_t size = 4096;
  while (size < need) size *= 2;
  return size;
}

void* host_workspace(const Sampler& sampler, size_t bytes) {
  static auto* buffer = new std::vector<unsigned char>();
  if (buffer->size() < bytes) {
    buffer->assign(grown_size(bytes), 0);
    check(sampler.workspace_init(buffer->data(), buffer->size(), nullptr));
  }
  return buffer->data();
}

#if defined(TOKENSIFT_PY_CUDA)

struct DeviceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  bool captured = false;  // used inside a graph capture: may never be freed
};

void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state for the next call
    raise_error(Status::kCudaError, "%s failed: %s", what, cudaGetErrorString(err));
  }
}

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) check_cuda(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }

 private:
  int previous_ = 0;
};

// Any shape and algorithm may reuse the buffer without clearing it: the
// library needs no particular workspace contents (the CUDA pivot path clears
// its own per-row tickets on every call).
void* device_workspace(const Sampler& sampler, Device device, void* stream, size_t bytes) {
  using Key = std::pair<int, void*>;
  static auto* cache = new std::map<Key, DeviceBuffer>();
  DeviceBuffer& buf = (*cache)[Key{device.id, stream}];
  const auto s = static_cast<cudaStream_t>(stream);
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  check_cuda(cudaStreamIsCapturing(s, &capture), "cudaStreamIsCapturing");
  const bool capturing = capture != cudaStreamCaptureStatusNone;
  if (buf.bytes >= bytes) {
    buf.captured = buf.captured || capturing;
    return buf.ptr;
  }
  if (capturing) {
    raise_error(Status::kWorkspaceTooSmall,
                "the cached workspace for this stream needs %zu bytes but has %zu, and it cannot grow "
                "during CUDA-graph capture: make one call with the largest shape on this stream "
                "before capturing, or pass workspace= (see tokensift.workspace_size)",
                bytes, buf.bytes);
  }
  DeviceGuard guard(device.id);
  if (buf.ptr != nullptr && !buf.captured) check_cuda(cudaFreeAsync(buf.ptr, s), "cudaFreeAsync");
  // A captured buffer is deliberately leaked: a graph may replay against it.
  buf = DeviceBuffer{};
  const size_t size = grown_size(bytes);
  check_cuda(cudaMallocAsync(&buf.ptr, size, s), "cudaMallocAsync");
  buf.bytes = size;
  check(sampler.workspace_init(buf.ptr, buf.bytes, stream));
  return buf.ptr;
}

#endif

}  // namespace

const Sampler& sampler_for(Device device, Algo algo) {
  const SamplerKey key{(int)device.place, device.id, (int)algo};
  auto& cache = samplers();
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  SamplerConfig config;
  config.backend = device.place == Place::kCuda ? Backend::kCuda : Backend::kCpu;
  config.algo = algo;
  config.device = device.id;
  std::unique_ptr<Sampler> sampler;
  check(Sampler::create(config, &sampler));
  return *cache.emplace(key, std::move(sampler)).first->second;
}

void* cached_workspace(const Sampler& sampler, Device device, void* stream, size_t bytes) {
  if (bytes == 0) return nullptr;
  if (device.place == Place::kCpu) return host_workspace(sampler, bytes);
#if defined(TOKENSIFT_PY_CUDA)
  return device_workspace(sampler, device, stream, bytes);
#else
  (void)stream;
  raise_error(Status::kBackendUnavailable,
              "this build of the tokensift extension has no CUDA support (built without nvcc)");
#endif
}

}  // namespace tokensift::py
