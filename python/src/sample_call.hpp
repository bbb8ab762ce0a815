// The one sampling entry point of the extension: DLPack arrays in, outputs
// written in place.  tokensift/_sample.py prepares the arguments (dtypes,
// outputs, stream) with the caller's own array library.
#pragma once

#include "array_view.hpp"

namespace tokensift::py {

struct SampleArgs {
  nb::handle logits;
  int dtype_override = -1;  // tokensift_dtype, or -1: from the DLPack dtype
  nb::handle temperature, min_p, top_k, top_p, seed, offset;  // number or 1-D array
  nb::handle tokens, row_status, logprobs, kept_counts;      // outputs (None: not wanted)
  int algo = 0;
  uintptr_t stream = 0;  // cudaStream_t of the caller; ignored on the CPU
  nb::handle workspace;  // None: the per-(device, stream) cached one
};

void sample(const SampleArgs& args);

// Bytes of workspace for this shape on (device type, id) with this algo.
size_t workspace_size(int64_t rows, int64_t vocab, int dtype, int device_type, int device_id,
                      int algo);

// Initialises a caller-provided workspace (once per allocation), on `stream`.
void init_workspace(nb::handle workspace, int algo, uintptr_t stream);

}  // namespace tokensift::py
