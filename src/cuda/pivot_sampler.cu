// The pivot sampler: sorting-free, one launch per call (three when a call's
// parameters allow top-p rows without top-k).
//
// Algorithm (see pivot_chunk.cuh, pivot_merge.cuh, pivot_fallback.cuh and
// pivot_split.cuh for each phase):
//   1. A row of V logits is split into ceil(V / 4096) chunks; each chunk is one
//      CTA, so even a batch of one fills the GPU with V / 4096 CTAs (32 for
//      DeepSeek's 129,280).  The split depends on V only, never on the batch.
//   2. Each chunk CTA reads its logits once (16-byte streaming loads), reduces
//      argmax / NaN / counts, and emits a small upper set of its tokens in the
//      contract's order, chosen by a radix-select pivot (or runs the
//      exponential race directly for unfiltered rows).
//   3. The last chunk CTA of a row to finish (an atomic ticket; no host round
//      trip) merges: it decides min-p, top-k and top-p from the candidates
//      when they provably contain the boundary and races the kept set with
//      the contract's Philox stream.
//   4. Rows the candidates cannot decide (kept sets of hundreds of tokens or
//      more) search the row with fixed-point depth histograms: top-p rows
//      without top-k in one more launch (two for large calls) that spreads
//      the two passes over the row's chunks (pivot_split.cuh), others in the merging CTA
//      (pivot_fallback.cuh); Qrita's quaternary pivot search is the last
//      resort when one bin holds too many tokens (long runs of equal logits).
//   Large batches take one CTA per row (pivot_rowcta.cuh, plain_race.cu);
//   small batches of top-k rows one thread-block cluster per row
//   (pivot_cluster.cuh).
// HBM traffic is the logits once plus O(candidates), twice more for deferred
// rows; no sort, no allocation, no synchronisation; graph capture works
// because every parameter is read on the device.  Failure modes: rows of
// equal logits under top-p or huge k reach the last resort, which re-reads
// the row ~20-40 times with one CTA: correct, but milliseconds.
#include <cuda_runtime.h>

#include "cuda/cuda_utils.cuh"
#include "cuda/greedy_argmax.hpp"
#include "cuda/launch.hpp"
#include "cuda/pivot_launch.hpp"
#include "cuda/pivot_merge.cuh"
#include "cuda/pivot_policy.cuh"
#include "cuda/plain_race.hpp"

namespace tokensift::cuda_detail {

struct PivotLayout {
  size_t tickets, deferred_count, split_next, rows_done, deferred_rows, split, split_hist, split_list, summaries,
      candidates, total;
  // What every call starts from zero sits in front: [0, cleared) is one memset.
  size_t cleared;
  PivotLayout(int64_t rows, int64_t vocab) {
    const int64_t chunks = pivot_chunks(vocab);
    tickets = 0;
    deferred_count = sizeof(uint32_t) * rows;  // right after the tickets, then the two item
    split_next = deferred_count + sizeof(uint32_t);  // counters, the merged-row count and the
    rows_done = split_next + 2 * sizeof(uint32_t);   // deferred list: one memset clears them all
    deferred_rows = rows_done + sizeof(uint32_t);
    cleared = deferred_rows + sizeof(uint32_t) * rows;
    split = align_up(cleared);
    split_hist = split + align_up(sizeof(SplitRow) * rows);
    split_list = split_hist + align_up(sizeof(unsigned long long) * rows * PivotPolicy::kFbBins);
    summaries = split_list + align_up(sizeof(uint64_t) * rows * PivotPolicy::kFbListCap);
    candidates = summaries + align_up(sizeof(ChunkSummary) * rows * chunks);
    total = candidates + sizeof(uint64_t) * rows * chunks * PivotPolicy::kCap;
  }
};

// The plain race's flat split uses the workspace's first bytes (its
// accumulators); the pivot layout is always larger, the max says so.
size_t pivot_workspace_size(int64_t rows, int64_t vocab) {
  const size_t pivot = PivotLayout(rows, vocab).total, plain = plain_race_workspace_size(rows);
  return pivot > plain ? pivot : plain;
}

// Zeroes a call's counters, makes the zeros visible, then lets its dependent
// (the call's first kernel) start.  That kernel waits for this one only where
// it first touches them (griddepcontrol.wait before its ticket, or before a
// row-CTA kernel's finish); the split launch streaming behind it reads the
// deferred list without such a wait, which the fence before the trigger
// covers: it starts only once every CTA of the first kernel has started.
__global__ void clear_counters_kernel(uint32_t* words, uint32_t n) {
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) words[i] = 0u;
  __threadfence();
  __syncthreads();
  pdl_launch_dependents();
}

// Clears [words, words + bytes) before the call's first kernel: a clearing
// kernel (PivotPolicy::kClearKernel 1: that kernel its programmatic
// dependent, `dependent` set; 2: a plain launch) or a memset node (0; ~1.8
// us more per call in a graph on the H200, dev/memset_probe.cu).
static cudaError_t clear_counters(uint32_t* words, size_t bytes, cudaStream_t stream, bool& dependent) {
  dependent = PivotPolicy::kClearKernel == 1;
  if (PivotPolicy::kClearKernel == 0) return cudaMemsetAsync(words, 0, bytes, stream);
  clear_counters_kernel<<<1, 256, 0, stream>>>(words, (uint32_t)(bytes / sizeof(uint32_t)));
  return cudaGetLastError();
}

// Batches whose every row is a top-k row with k < kWarpList and no min-p
// (from kRowCtaMinRows rows), a min-p row (from kRowCtaMinPMinRows), or
// (without log-probs, V < 2^kFbMaxVocabBits; from kRowCtaTopPMinRows rows,
// or kRowCtaMinRows where the chunked kernel's split launch could not
// stream) a top-p row without top-k or min-p, by scalar parameters: one CTA
// streams each row (pivot_rowcta.cuh).  Top-k and min-p rows end in the same
// decision on the same sorted list on either path (the row's top k; its
// min-p survivors); top-p rows keep the same count because both paths decide
// from their list only when the boundary is clear of the band and send every
// other row to the fixed-point arithmetic of the split fallback
// (pivot_merge.cuh, top_p_clear), so the token, status and kept count do not
// depend on the path.  Their log-probs would (W summed in another order), so
// calls that ask for them keep the chunked kernel.  Per-row filter arrays
// keep the chunked kernel too (seeds and offsets may be per row: they do not
// change a row's path).  Returns the kind, or -1.
static int rowcta_kind(const LogitsView& logits, const SamplingParams& p, const SampleOutputs& out) {
  if (logits.rows < PivotPolicy::kRowCtaMinRows) return -1;
  if (p.temperature.per_row || p.min_p.per_row || p.top_k.per_row || p.top_p.per_row) return -1;
  if (contract::is_greedy_temperature(p.temperature.value)) return -1;
  if (p.min_p.value > 0.0f)  // min-p rows, with any top-k and top-p
    return logits.rows >= PivotPolicy::kRowCtaMinPMinRows ? kRowCtaMinP : -1;
  const bool k_on = p.top_k.value > 0 && (int64_t)p.top_k.value < logits.vocab;
  if (k_on) return p.top_k.value < PivotPolicy::kWarpList ? kRowCtaTopK : -1;
  if (PivotPolicy::kRowCtaTopP && p.top_p.value < 1.0f && out.logprobs == nullptr &&
      split_vocab_ok<PivotPolicy>(logits.vocab)) {
    const bool chunked_streams = PivotPolicy::kSplitStream && split_fused(logits.rows, pivot_chunks(logits.vocab));
    if (logits.rows >= PivotPolicy::kRowCtaTopPMinRows || !chunked_streams) return kRowCtaTopP;
  }
  return -1;
}

// Calls of at most kClusterMaxRows rows with V <= kClusterCtas x kThreads x
// kClusterItems, on sm_90 or later, whose every row is, by scalar
// parameters, a top-k row with k < kWarpList and no min-p
// (kClusterKernelTopK), or a min-p row either without top-k and top-p
// (kClusterKernelMinP; ds4's default sampling) or with top-k, k <
// kWarpList, and any top-p (kClusterKernelMinPTopK; llama.cpp's default):
// one thread-block cluster per row (pivot_cluster.cuh).  Top-k rows end in
// the row-CTA kernel's decision on the same list (the row's top k; the rows
// its search cannot bracket by an exact select), min-p rows in the merge's
// on the list it would decide from (the row's whole min-p set, or its
// survivors down to the top k), so the choice cannot change a row's result.
// Why small batches only: a cluster holds kClusterCtas SMs for one row,
// which pays while the batch leaves SMs idle (docs/perf-notes.md v59: the
// anchors' k50_p0.9 B = 1 / 16 -17 / -10 %, same run).  Why no top-p on
// min-p rows without top-k: such a row past the list defers to the split
// launches, which need the workspace this path does without.
// Returns the ClusterKernelKind, or -1 for calls the cluster does not take.
static int cluster_kind(const LogitsView& logits, const SamplingParams& p) {
  if (PivotPolicy::kClusterMaxRows <= 0 || logits.rows > PivotPolicy::kClusterMaxRows) return -1;
  if (logits.vocab > (int64_t)PivotPolicy::kClusterCtas * PivotPolicy::kThreads * PivotPolicy::kClusterItems)
    return -1;
  if (p.temperature.per_row || p.min_p.per_row || p.top_k.per_row || p.top_p.per_row) return -1;
  if (contract::is_greedy_temperature(p.temperature.value)) return -1;
  const bool k_active = p.top_k.value > 0 && (int64_t)p.top_k.value < logits.vocab;
  const bool small_k = k_active && p.top_k.value < PivotPolicy::kWarpList;
  int kind = -1;
  if (p.min_p.value > 0.0f) {
    if (PivotPolicy::kClusterMinP && !k_active && !(p.top_p.value < 1.0f)) kind = kClusterKernelMinP;
    if (PivotPolicy::kClusterMinPTopK && small_k) kind = kClusterKernelMinPTopK;
  } else if (small_k) {
    kind = kClusterKernelTopK;
  }
  return kind >= 0 && device_is_sm90_or_later() ? kind : -1;
}

cudaError_t launch_pivot(const LogitsView& logits, const SamplingParams& params,
                         const SampleOutputs& out, void* workspace, cudaStream_t stream) {
  if (logits.rows == 0) return cudaSuccess;
  // All-greedy batches from GreedyPolicy::kMinRows rows: one argmax pass, no
  // chunks (exact, so the choice cannot change a row's result).
  if (greedy_argmax_applies(logits, params)) return launch_greedy_argmax(logits, out, stream);
  // All-plain batches without log-probs, from PlainRacePolicy::kFlatMinRows
  // rows (the flat split, where the rows' layout allows it) or kMinRows (one
  // CTA per row): one race pass over the batch (exact under any split, so the
  // choice cannot change a row's result).
  if (plain_race_applies(logits, params, out, workspace))
    return launch_plain_race(logits, params, out, workspace, stream);
  const PivotLayout lay(logits.rows, logits.vocab);
  char* ws = static_cast<char*>(workspace);
  PivotArgs a;
  a.logits = logits.data;
  a.row_stride = logits.row_stride;
  a.rows = logits.rows;
  a.vocab = (int32_t)logits.vocab;
  a.chunks = (int32_t)pivot_chunks(logits.vocab);
  a.params = params;
  a.out = out;
  a.tickets = reinterpret_cast<uint32_t*>(ws + lay.tickets);
  a.summaries = reinterpret_cast<ChunkSummary*>(ws + lay.summaries);
  a.candidates = reinterpret_cast<uint64_t*>(ws + lay.candidates);
  a.deferred_count = reinterpret_cast<uint32_t*>(ws + lay.deferred_count);
  a.split_next = reinterpret_cast<uint32_t*>(ws + lay.split_next);
  a.rows_done = reinterpret_cast<uint32_t*>(ws + lay.rows_done);
  a.deferred_rows = reinterpret_cast<uint32_t*>(ws + lay.deferred_rows);
  a.split = reinterpret_cast<SplitRow*>(ws + lay.split);
  a.split_hist = reinterpret_cast<unsigned long long*>(ws + lay.split_hist);
  a.split_list = reinterpret_cast<uint64_t*>(ws + lay.split_list);
  const int64_t blocks = logits.rows * a.chunks;
  if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
  // The split fallback takes only top-p rows without top-k (pivot_merge.cuh);
  // when the parameters rule those out for every row, its launches are skipped.
  const SamplingParams& p = params;
  const bool may_split = split_vocab_ok<PivotPolicy>(logits.vocab) &&
                         (p.top_p.per_row != nullptr || p.top_p.value < 1.0f) &&
                         (p.top_k.per_row != nullptr || p.top_k.value <= 0 || p.top_k.value >= logits.vocab);
  // Early deferral (the pivot kernel's kEarly instantiation) pays where the
  // deferred rows' split chains have idle SMs to start on; with more rows
  // their items overlap the pivot kernel's last wave and slow it (v46,
  // docs/perf-notes.md).  Only calls whose rows may defer take it.  Either
  // way a row gets the same bits: the early test defers exactly the rows the
  // list would.
  a.early_defer = PivotPolicy::kEarlyDefer && may_split && logits.rows <= PivotPolicy::kEarlyDeferMaxRows;
  // The cluster path uses no workspace: one launch decides every row.
  if (const int ck = cluster_kind(logits, params); ck >= 0) {
    switch (logits.dtype) {
      case DType::kF32:
        return launch_cluster<float>(a, ck, stream);
      case DType::kBF16:
        return launch_cluster<__nv_bfloat16>(a, ck, stream);
      case DType::kF16:
        return launch_cluster<__half>(a, ck, stream);
    }
  }
  const int kind = rowcta_kind(logits, params, out);
  // The tickets, counters and deferred list must start at zero.  Other calls
  // on this workspace (another shape, or the sort path) may have left scratch
  // data where this call's live, so they are cleared by the call itself,
  // which also keeps a captured graph self-contained.  A row-CTA call reads
  // them only when a split launch follows it (it has no tickets; without
  // that launch no row can defer, and the merged-row count it adds to is
  // never read), so it clears nothing otherwise.
  bool dependent = false;
  if (kind < 0 || may_split) {
    const cudaError_t ce = clear_counters(a.tickets, lay.cleared, stream, dependent);
    if (ce != cudaSuccess) return ce;
  }
  if (kind >= 0) {
    switch (logits.dtype) {
      case DType::kF32:
        return launch_rowcta_kernel<float>(a, kind, may_split, dependent, stream);
      case DType::kBF16:
        return launch_rowcta_kernel<__nv_bfloat16>(a, kind, may_split, dependent, stream);
      case DType::kF16:
        return launch_rowcta_kernel<__half>(a, kind, may_split, dependent, stream);
    }
  }
  switch (logits.dtype) {
    case DType::kF32:
      return launch_pivot_kernels<float>(a, (unsigned)blocks, may_split, dependent, stream);
    case DType::kBF16:
      return launch_pivot_kernels<__nv_bfloat16>(a, (unsigned)blocks, may_split, dependent, stream);
    case DType::kF16:
      return launch_pivot_kernels<__half>(a, (unsigned)blocks, may_split, dependent, stream);
  }
  return cudaGetLastError();
}

}  // namespace tokensift::cuda_detail
