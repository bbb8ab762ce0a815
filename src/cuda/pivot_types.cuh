// Workspace records of the pivot sampler: what each chunk CTA hands to the
// row's merging CTA.
#pragma once

#include <stdint.h>

#include "tokensift/tokensift.hpp"

// The pivot kernels take PivotArgs by value and hand it by reference to
// out-of-line helpers (the merge's decision and draw, the fallback).  A
// plain kernel parameter whose address escapes is first copied into every
// thread's local memory: ~240 bytes per thread at each row-CTA start (a
// 360-408 byte stack frame, STL / LDL round trips before the row's first
// load, and the fp32 top-k instance's 52 bytes of spills).  __grid_constant__
// (sm_70+) lets the address point at the parameter itself (120-byte frames,
// no spills).  0 restores the copy, for A/B timing.
#ifndef TOKENSIFT_PIVOT_GRID_CONSTANT
#define TOKENSIFT_PIVOT_GRID_CONSTANT 1
#endif
#if TOKENSIFT_PIVOT_GRID_CONSTANT
#define TS_PIVOT_KERNEL_ARGS const __grid_constant__ PivotArgs
#else
#define TS_PIVOT_KERNEL_ARGS const PivotArgs
#endif

namespace tokensift::cuda_detail {

struct ChunkSummary {
  uint64_t xmax;     // pack_order(order_key(x), index) of the chunk's largest non-NaN logit
  uint64_t next;     // packed (z key, index) of the best active token NOT emitted; 0 = none
  uint64_t race;     // plain rows: packed (score key, index) of the chunk's race winner
  double mass;       // sum of exp(z - zloc) over eligible tokens (when the row needs it)
  float zloc;        // z of the chunk's largest logit
  uint32_t lb_key;   // a lower bound on the row's k-th key (0 = none)
  int32_t emitted;   // candidates written for this chunk
  int32_t eligible;  // tokens with z > -inf
  int32_t bad;       // saw a NaN or +inf logit
  float emit_mass;   // top-p-only rows under PivotArgs::early_defer: sum of exp(z - zloc) over
                     //   the emitted tokens (fp32)
};

// A row whose top-p boundary the merging CTA could not decide is deferred to
// one more launch (two for large calls) that spreads the fallback's two
// histogram passes over many CTAs (pivot_split.cuh).  What those launches share about the row:
struct SplitRow {
  float zmax;
  int32_t bin;                // boundary bin; -1: the grid cannot pin it
  int32_t nlist;              // tokens gathered from the boundary bin
  uint32_t above_n;           // tokens in the bins above it
  uint32_t ticket_a, ticket_b;
  float bins_per_unit;        // histogram resolution chosen for this row
  uint32_t ready;             // pass A set bin / above_m / target (fused launch)
  unsigned long long race;    // best race key over the bins above
  uint64_t above_m;           // their fixed-point mass
  double target;              // p W in fixed-point units
  // What every item of the row needs of its parameters, derived once by
  // defer_row (v93, PivotPolicy::kSplitRowFields): each item read and
  // derived the six per-row values itself, and divided for depth_cap.
  float temperature;
  float ln_minp;
  float depth_cap;            // FallbackRow::depth_cap for bins_per_unit
  uint32_t m_active;
  uint64_t seed, offset;
  // Tie mode (pivot_split.cuh; the deferred list tags the row, kDeferredTie):
  // the row holds a run of ties at its max longer than its chunks emit.  Pass
  // A also counts and races each chunk's ties (into the row's list space,
  // free until pass B); when the top-p boundary lies inside the run, its last
  // item publishes the kept count and the race's winner (`race`), and pass
  // B's items skip the row.
  int32_t take;               // tie mode's kept count
};

struct PivotArgs {
  const void* logits;
  int64_t row_stride;
  int64_t rows;
  int32_t vocab;
  int32_t chunks;
  SamplingParams params;
  SampleOutputs out;
  uint32_t* tickets;         // [rows], zero between calls
  ChunkSummary* summaries;   // [rows * chunks]
  uint64_t* candidates;      // [rows * chunks * kCap]
  uint32_t* deferred_count;  // rows deferred to the split fallback (zero between calls)
  uint32_t* split_next;      // [2]: next (row, chunk) item of each split launch (zero between calls)
  uint32_t* rows_done;       // rows the pivot kernel has merged, deferred or not (zero between calls)
  uint32_t* deferred_rows;   // [rows]: 1 + their ids in the order they were deferred, 0 until
                             // published (zero between calls; the streaming split waits on them)
  SplitRow* split;           // [rows]
  unsigned long long* split_hist;  // [rows * kFbBins]
  uint64_t* split_list;      // [rows * kFbListCap]
  int32_t early_defer;       // the call runs the pivot kernel's kEarly instantiation (last: the
                             //   other instantiation keeps its parameter offsets, and its SASS)
};

}  // namespace tokensift::cuda_detail
