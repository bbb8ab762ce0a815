// The device half of the decode loop's bookkeeping: stop conditions, the next
// step's input, the sampler offsets and the token stream to the host, all in
// one tiny kernel so the host never has to look at a token to keep going.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace decode {

struct FinalizeParams {
  const int32_t* sampled = nullptr;     // sampler output, -1 for a rejected row
  int32_t* tokens_in = nullptr;         // next step's input (embedding lookup)
  int32_t* finished = nullptr;          // per row, 0/1
  int32_t* generated = nullptr;         // per row, tokens emitted while live
  const int32_t* max_tokens = nullptr;  // per row
  uint64_t* offsets = nullptr;          // per-row sampler offsets, set to step + 1 (may be null)
  uint64_t* step = nullptr;             // device step counter, advanced by one
  int32_t* history = nullptr;           // device steps x batch record (may be null)
  int32_t* ring = nullptr;              // mapped pinned ring, ring_slots x batch (may be null)
  int64_t ring_slots = 0;
  unsigned long long* published = nullptr;  // mapped pinned: steps whose ring slot is readable
  int32_t* error = nullptr;             // mapped pinned: set when the sampler rejected a row
  int32_t eos = 0;
  int64_t batch = 0;
};

// One block; mirrors decode::apply_stop_rule exactly.
void launch_finalize(const FinalizeParams& p, cudaStream_t stream);

}  // namespace decode
