// Samplers and workspaces kept for the life of the process, so a Python call
// costs no allocation in steady state and none at all during CUDA-graph
// capture.
//
// Workspaces are cached per (device, stream): a call uses its workspace until
// it has finished on its stream, so two streams must never share one.  On the CUDA side a workspace grows only outside capture, with the
// stream-ordered allocator on the caller's stream (no synchronization); a
// buffer that was ever used during a capture is never freed, because a graph
// may still replay against it.  The GIL serialises access to the cache.
#pragma once

#include "array_view.hpp"

namespace tokensift::py {

// The sampler for this device and algo, created on first use.
const Sampler& sampler_for(Device device, Algo algo);

// A workspace of at least `bytes` on `stream` (cached per device and stream,
// grown only outside graph capture).  Raises WORKSPACE_TOO_SMALL when it
// would have to grow during capture.
void* cached_workspace(const Sampler& sampler, Device device, void* stream, size_t bytes);

}  // namespace tokensift::py
