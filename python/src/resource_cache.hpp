// Samplers and workspaces kept for the life of the process, so a Python call
// costs no allocation in steady state and none at all during CUDA-graph
// capture.
//
// Workspaces are cached per (device, stream): the library leaves a workspace
// as it found it only after the call has finished, so two streams must never
// share one.  On the CUDA side a workspace grows only outside capture, with the
// stream-ordered allocator on the caller's stream (no synchronization); a
// buffer that was ever used during a capture is never freed, because a graph
// may still replay against it.  The GIL serialises access to the cache.
#pragma once

#include "array_view.hpp"

namespace tokensift::py {

// The sampler for this device and algo, created on first use.
const Sampler& sampler_for(Device device, Algo algo);

// The shape a call lays its workspace out for.
struct CallShape {
  int64_t rows = 0;
  int64_t vocab = 0;
  DType dtype = DType::kF32;
};

// A workspace of at least `bytes` for a call of `shape` on `stream`, in the
// state the call needs.  Raises WORKSPACE_TOO_SMALL when it would have to grow
// during capture.
void* cached_workspace(const Sampler& sampler, Device device, void* stream, CallShape shape,
                       size_t bytes);

}  // namespace tokensift::py
