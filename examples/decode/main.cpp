// tokensift_decode: a DeepSeek-V4-shaped decode loop run three ways (see docs/decode.md).
//
//   ds4      logits to pinned host memory every step, CPU sampling, token back
//   eager    tokensift's CUDA sampler; the token goes straight into the next
//            step's input; the host only launches
//   graphed  K steps per CUDA graph, offsets and stop conditions on the device,
//            tokens streamed to a pinned ring; the host never waits per token
//
// Without a GPU (or in a CPU-only build) it runs the ds4 loop on a smaller
// CPU-computed model and says so.
#include <cstdio>

#include "cpu_model.hpp"
#include "decode_common.hpp"
#if defined(TOKENSIFT_DECODE_GPU)
#include "gpu_entry.hpp"
#endif

namespace {
constexpr int kSkip = 77;  // ctest SKIP_RETURN_CODE
}

int main(int argc, char** argv) {
  const decode::Options opt = decode::parse_options(argc, argv);
#if defined(TOKENSIFT_DECODE_GPU)
  const int devices = decode::gpu_device_count();
  if (opt.device != "cpu" && devices > 0) return decode::run_gpu_variant(opt);
  if (opt.device == "gpu") {
    std::printf("SKIP: --device gpu, but no CUDA device is visible\n");
    return kSkip;
  }
#else
  if (opt.device == "gpu") {
    std::printf("SKIP: --device gpu, but this build has no CUDA (TOKENSIFT_ENABLE_CUDA=OFF or no nvcc)\n");
    return kSkip;
  }
#endif
  return decode::run_cpu_variant(opt);
}
