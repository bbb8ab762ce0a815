// Tuning numbers of the pivot sampler, in one place.  Kernels take the policy
// as a template parameter and never hard-code these.
#pragma once

#include <stdint.h>

// Logits per thread of the chunk phase; a build-time knob only so that dev/
// experiments can time other chunk sizes.  Kept sets and tokens follow the
// contract at any chunk size; the chunking changes only the rounding of the
// partial sums (band rows, the last bits of log-probs).
#ifndef TOKENSIFT_PIVOT_ITEMS
#define TOKENSIFT_PIVOT_ITEMS 16
#endif

// Build-time knobs of the chunk's pivot guess, so that a `variant` build can
// time the alternatives (perf-notes step 0): re-aims before the radix select,
// and whether thread 0 derives the guess once (1) or every thread does (0).
#ifndef TOKENSIFT_PIVOT_GUESS_RETRIES
#define TOKENSIFT_PIVOT_GUESS_RETRIES 1
#endif
#ifndef TOKENSIFT_PIVOT_GUESS_ONCE
#define TOKENSIFT_PIVOT_GUESS_ONCE 1
#endif

// Batches of scalar top-k rows from this many rows run the row-CTA kernel
// (pivot_rowcta.cuh); a build-time knob so that a `variant` build can time
// the chunked kernel on the same shapes (a huge value: never).  64 since
// v39: at B = 64 the row-CTA kernel beat the chunked one by 12-31 % for k50,
// k50_p0.9 and min-p and 4-8 % for p0.9 (f53c303, variant 16), with the
// streaming split behind it for the rows it defers; at B = 16 it lost
// 31-64 % (a CTA per row leaves most SMs idle).
#ifndef TOKENSIFT_PIVOT_ROWCTA_MIN_ROWS
#define TOKENSIFT_PIVOT_ROWCTA_MIN_ROWS 64
#endif
// Top-p-only batches (kRowCtaTopP) from this many rows, or from
// kRowCtaMinRows when the chunked kernel's split launch could not stream
// (rows x chunks above kSplitFusedMaxItems).  At B = 64 the chunked kernel
// with its streaming split beat the row-CTA kernel for p0.9 by 1-5 % at
// V <= 151,936 (the row-CTA rows end together and defer their rows last);
// where it cannot stream (V = 262,208) the row-CTA kernel won by 7-8 %, and
// at B = 128 by 25-32 % at every V (v39, d331823).
#ifndef TOKENSIFT_PIVOT_ROWCTA_TOP_P_MIN_ROWS
#define TOKENSIFT_PIVOT_ROWCTA_TOP_P_MIN_ROWS 128
#endif
// Min-p batches (kRowCtaMinP) from this many rows.  Same-run bench against
// bb3c9b7 (min-p from 256, no gate; bench/results/probes/
// sampler-minp-h200-2026-12-01-cb20b20-*.json, perf-notes v41c): at B = 128
// the row-CTA kernel (with its min-p gate) took the anchors' rows 40-57 %
// faster, dominant-token rows 0-26 %, Gaussian rows 22-60 % (fp32 V =
// 262,208: +9 %); at B = 64 the anchors' rows 11-25 % faster but
// dominant-token rows 30-61 % slower and Gaussian rows up to 22 % at V >=
// 151,936 (64 CTAs on 132 SMs: the chunked kernel spreads a row's dense
// phase over its chunks).
#ifndef TOKENSIFT_PIVOT_ROWCTA_MIN_P_MIN_ROWS
#define TOKENSIFT_PIVOT_ROWCTA_MIN_P_MIN_ROWS 128
#endif
// The row-CTA kernel's logits per thread per iteration (in 16-byte loads in
// flight) and its CTAs per SM (the register cap), knobs so that a `variant`
// build can time others.
#ifndef TOKENSIFT_PIVOT_ROWCTA_ITEMS
#define TOKENSIFT_PIVOT_ROWCTA_ITEMS 32
#endif
#ifndef TOKENSIFT_PIVOT_ROWCTA_MIN_BLOCKS
#define TOKENSIFT_PIVOT_ROWCTA_MIN_BLOCKS 2
#endif
// The row rank its first threshold aims at (top-k rows): fewer aimed means
// fewer offers per row, a guess that overshoots the k-th means a second pass.
#ifndef TOKENSIFT_PIVOT_ROWCTA_AIM
#define TOKENSIFT_PIVOT_ROWCTA_AIM 256
#endif
// The same for top-k rows whose fit samples 2,048 logits (16-bit rows:
// every logit of their 256 vectors; fp32 rows: two vectors a thread under
// calls of fewer than TOKENSIFT_PIVOT_ROWCTA_FINE_SAMPLE_MAX_ROWS rows,
// perf-notes v83).  At the top 144
// the fit of 2,048 overshoots the 50th logit of N(0, 1) rows (then the row
// is streamed twice) about once in 250,000 rows at V = 262,208 (rarer at
// smaller V), by dev/rowcta_aim_model.py, which puts 1,024 samples at the
// top 128 at ~1 in 700, as v79's trace measured (perf-notes v81).
#ifndef TOKENSIFT_PIVOT_ROWCTA_FINE_AIM
#define TOKENSIFT_PIVOT_ROWCTA_FINE_AIM 144
#endif
// fp32 top-k calls of fewer rows than this sample two vectors a thread
// (kRowCtaTopKFine): v83's same-run A/B, two vectors against one at every
// batch, fp32 k50 / k50_p0.9 -7..-11 % at B = 64 / 128 (a CTA's offers are
// on its row's path when the memory system is not full), +0.2..+3.6 % at B
// = 256 / 1024 (the larger sample's load and registers: 8 B spilled).
#ifndef TOKENSIFT_PIVOT_ROWCTA_FINE_SAMPLE_MAX_ROWS
#define TOKENSIFT_PIVOT_ROWCTA_FINE_SAMPLE_MAX_ROWS 256
#endif
// Min-p rows: the row rank of the tau set the first time a row's list
// passes half full (0: no gate; pivot_rowcta.cuh).  A row whose min-p
// survivors reach below it (a guess that overshot) streams the row again,
// so it must sit well above the survivors of common rows.  Measured
// (dev/rowcta_trace, perf-notes v41-v41c): dominant-token rows at B = 256
// 121 -> 69 us (512: 65), the anchors' and Gaussian rows unchanged (the
// anchors' rows never fill half the list).
#ifndef TOKENSIFT_PIVOT_ROWCTA_MIN_P_AIM
#define TOKENSIFT_PIVOT_ROWCTA_MIN_P_AIM 1024
#endif
// Whether its whole iterations load one iteration ahead (1) or not (0).
#ifndef TOKENSIFT_PIVOT_ROWCTA_AHEAD
#define TOKENSIFT_PIVOT_ROWCTA_AHEAD 1
#endif
// Whether decide_and_draw races a min-p row's complete list (no top-k, no
// top-p, no log-prob asked for) without sorting it first (1) or sorts it (0).
#ifndef TOKENSIFT_PIVOT_MIN_P_UNSORTED_RACE
#define TOKENSIFT_PIVOT_MIN_P_UNSORTED_RACE 1
#endif
// Calls whose rows x chunks (the split fallback's most items per pass) are
// at most this run its two passes in one launch, larger calls in two (0:
// always two).
#ifndef TOKENSIFT_PIVOT_SPLIT_FUSED_MAX_ITEMS
#define TOKENSIFT_PIVOT_SPLIT_FUSED_MAX_ITEMS 2560
#endif
// Whether its first whole iteration's loads go out before the first tau (1).
#ifndef TOKENSIFT_PIVOT_ROWCTA_EARLY_LOAD
#define TOKENSIFT_PIVOT_ROWCTA_EARLY_LOAD 1
#endif
// Lists of at most this many keys are sorted by rank (block_rank_sort.cuh),
// longer ones by the bitonic network (0: always bitonic).
#ifndef TOKENSIFT_PIVOT_RANK_SORT_MAX
#define TOKENSIFT_PIVOT_RANK_SORT_MAX 256
#endif
// Whether once-per-row stages (the one-warp race, the row-CTA kernel's
// compactions and min-p filter) run in compact code (1) or fully unrolled
// (0, v31's SASS).  Same arithmetic in the same order either way.
#ifndef TOKENSIFT_PIVOT_COMPACT_CODE
#define TOKENSIFT_PIVOT_COMPACT_CODE 1
#endif

// Whether the row-CTA kernel's last, partial iteration runs the whole
// iterations' code with the vectors past the row read as -inf (1), or the
// generic per-logit form (0, v33's); and whether an iteration's offers are a
// loop over its flagged vectors (1) or unrolled vector by vector (0, v33's
// form; both 0 gave v33's SASS until the unrolled form called the shared
// per-vector helper after v35, which moved register allocation only).
#ifndef TOKENSIFT_PIVOT_ROWCTA_WHOLE_TAIL
#define TOKENSIFT_PIVOT_ROWCTA_WHOLE_TAIL 1
#endif
#ifndef TOKENSIFT_PIVOT_ROWCTA_OFFER_LOOP
#define TOKENSIFT_PIVOT_ROWCTA_OFFER_LOOP 1
#endif
// How the row-CTA kernel's top-k rows end (perf-notes v96, v96b): 0 a
// compaction to kWarpList and the one-warp finish (v94's); 1 the same
// compaction and the CTA-wide finish (cta_topk_finish); 2 the CTA-wide
// finish ranking lists of up to kThreads itself, compacting only longer ones.
#ifndef TOKENSIFT_PIVOT_ROWCTA_CTA_FINISH
#define TOKENSIFT_PIVOT_ROWCTA_CTA_FINISH 1
#endif
// Whether fp32 min-p rows load one iteration ahead too (1; 0: v34's SASS).
#ifndef TOKENSIFT_PIVOT_ROWCTA_AHEAD_MINP32
#define TOKENSIFT_PIVOT_ROWCTA_AHEAD_MINP32 1
#endif

// Calls of at most this many rows of scalar top-k parameters (k < kWarpList,
// no min-p), or of min-p ones (kClusterMinP), with V <= kClusterCtas x
// kThreads x kClusterItems take the cluster kernel on sm_90
// (pivot_cluster.cuh); 0 turns it off.
#ifndef TOKENSIFT_PIVOT_CLUSTER_MAX_ROWS
#define TOKENSIFT_PIVOT_CLUSTER_MAX_ROWS 16
#endif
// Whether the cluster kernel's capped copy (calls of more than 4 rows)
// searches with kClusterPivots binned pivots a round instead of three
// (v68b: B = 16 -13.5 % same run; the uncapped copy keeps three, B = 1 +4.7 %).
#ifndef TOKENSIFT_PIVOT_CLUSTER_BINNED_CAPPED
#define TOKENSIFT_PIVOT_CLUSTER_BINNED_CAPPED 1
#endif
// Whether calls of min-p rows (scalar parameters) take the cluster kernel
// too, under the same row and vocabulary limits (1), or the chunked kernel
// (0): rows without top-k and top-p (CLUSTER_MIN_P, v102b), rows with top-k,
// k < kWarpList, and any top-p (CLUSTER_MIN_P_TOP_K, v102d).
#ifndef TOKENSIFT_PIVOT_CLUSTER_MIN_P
#define TOKENSIFT_PIVOT_CLUSTER_MIN_P 1
#endif
#ifndef TOKENSIFT_PIVOT_CLUSTER_MIN_P_TOP_K
#define TOKENSIFT_PIVOT_CLUSTER_MIN_P_TOP_K 1
#endif
// CTAs an SM must hold for the cluster kernel (its register cap).
#ifndef TOKENSIFT_PIVOT_CLUSTER_MIN_BLOCKS
#define TOKENSIFT_PIVOT_CLUSTER_MIN_BLOCKS 3
#endif

// Whether scalar top-p-only calls without log-probs take the row-CTA kernel
// from kRowCtaMinRows rows (1), or the chunked kernel (0, v35's choice).
#ifndef TOKENSIFT_PIVOT_ROWCTA_TOP_P
#define TOKENSIFT_PIVOT_ROWCTA_TOP_P 1
#endif

// Whether the split kernels call the one-CTA fallback out of line (1) or
// inline it (0).  v36's larger fallback, inlined, slowed the split kernels'
// item loops (p0.9 B = 64 +6..+8 %, same rows deferred, same registers); the
// call restored them (B <= 64 within 1 % of v35, B = 256 -2 %; v36b).
#ifndef TOKENSIFT_PIVOT_SPLIT_RUN_CALL
#define TOKENSIFT_PIVOT_SPLIT_RUN_CALL 1
#endif

// How a call's counters (tickets, deferred list, item counters) start at
// zero: 1, a one-CTA clearing kernel whose stores the call's first kernel
// waits for (griddepcontrol.wait) only where it first touches them, as its
// programmatic dependent, so the logits' loads and the chunk phase overlap
// the clearing; 2, the same kernel launched plainly before the first
// kernel; 0, a cudaMemsetAsync node before the first kernel (~1.8 us per
// call on the H200 in a graph: dev/memset_probe.cu).
#ifndef TOKENSIFT_PIVOT_CLEAR_KERNEL
#define TOKENSIFT_PIVOT_CLEAR_KERNEL 1
#endif

// Whether the chunked kernel's fused split launch streams behind it (1: a
// programmatic dependent launch that takes each deferred row as the merge
// publishes it, v38) or starts after it ends (0: split_fused_kernel).
#ifndef TOKENSIFT_PIVOT_SPLIT_STREAM
#define TOKENSIFT_PIVOT_SPLIT_STREAM 1
#endif

// Whether the split fallback's pass B races its tokens a Philox group of
// four at a time, with the chunk phase's skip test before each exact score
// (1, v42), or computes every token's score with its own Philox call (0).
#ifndef TOKENSIFT_PIVOT_SPLIT_RACE_GROUPS
#define TOKENSIFT_PIVOT_SPLIT_RACE_GROUPS 1
#endif

// Whether pass B gathers the tokens above the boundary bin into shared memory
// and races them there, a thread a token (1, v86), instead of racing them in
// each thread's token loop (0: kSplitRaceGroups' loop).  In the loop a warp
// runs a Philox group and two contract logs whenever any of its lanes holds
// a token above the bin: on deep rows (2 % of a row kept, ~11 tokens a warp
// an item) nearly every group of every warp, 35 % of split_gather_kernel's
// instructions at V = 262,208 B = 1024 (Nsight Compute, session 23).
#ifndef TOKENSIFT_PIVOT_SPLIT_RACE_QUEUE
#define TOKENSIFT_PIVOT_SPLIT_RACE_QUEUE 1
#endif

// Whether top-p rows with a run of ties at their max longer than their chunks
// emit defer to the split launches in tie mode (1, v100; split_tie.cuh) or
// keep the in-kernel one-CTA fallback (0): a flat row there took 1.1 ms at
// V = 129,280 (session 27, Nsight Compute: one CTA's latency-bound passes).
#ifndef TOKENSIFT_PIVOT_SPLIT_TIE_MODE
#define TOKENSIFT_PIVOT_SPLIT_TIE_MODE 1
#endif

// Whether pass B's items add their count above the bin and their best race
// key to the row a warp at a time (1, v88) or after two block reductions (0):
// the reductions' barriers sat between every item's token loop and its ticket
// (7.8 % of split_gather_kernel's stall samples at V = 262,208 B = 1024).
#ifndef TOKENSIFT_PIVOT_SPLIT_WARP_ATOMICS
#define TOKENSIFT_PIVOT_SPLIT_WARP_ATOMICS 1
#endif

// Whether the split passes' token loops drop the per-token tests a row
// without min-p does not need (1, v90): `valid` (padding already reads as
// -inf) and eligibility (for such a row only -inf is ineligible: deferred
// rows hold no NaN or +inf, and a -inf token has fixed-point weight 0 in
// pass A and falls in the catch-all bin, below any boundary bin pass B
// gathers, in pass B).  In main's profile at V = 262,208 B = 1024 the two
// tests were ~13 % of split_hist_kernel's and ~15 % of split_gather_kernel's
// instructions; v90 took 17 % / 21 % of them off (the anchors' p0.9 -2.2 /
// -2.4 % geomean, -5..-7 % at V = 262,208 B = 1024).
#ifndef TOKENSIFT_PIVOT_SPLIT_LEAN_TOKENS
#define TOKENSIFT_PIVOT_SPLIT_LEAN_TOKENS 1
#endif

// Whether pass A on rows without min-p bins every token, weight 0 included,
// from a run open on the catch-all bin (1, v92; FallbackRow::
// hist_token<true, true>) instead of testing each token's weight and whether
// a run is open (0).  Adding 0 changes no bin, so the histogram has the same
// bits.
#ifndef TOKENSIFT_PIVOT_SPLIT_LEAN_HIST
#define TOKENSIFT_PIVOT_SPLIT_LEAN_HIST 1
#endif

// Chunks a pass-A item of the hist launch covers (1 or 2; v94): as
// kSplitGatherChunks for pass A, where a pair also flushes its shared
// histogram (2,048 bins) to the row's once instead of twice.
#ifndef TOKENSIFT_PIVOT_SPLIT_HIST_CHUNKS
#define TOKENSIFT_PIVOT_SPLIT_HIST_CHUNKS 2
#endif

// Whether the split items read the row's temperature, min-p, seed, offset
// and bin range from its SplitRow, where defer_row derived them once (1,
// v93), or each item loads and derives the six per-row values (0).  In
// v90's profile of split_gather_kernel those loads, their derivation and the
// bin-width division were ~17 % of its instructions.
#ifndef TOKENSIFT_PIVOT_SPLIT_ROW_FIELDS
#define TOKENSIFT_PIVOT_SPLIT_ROW_FIELDS 1
#endif

// Chunks a pass-B item of the gather launch covers (1 or 2).  2 (v91): an
// item streams two consecutive chunks of its row, one after the other, and
// pays once what an item costs besides its tokens (the claim and the
// ticket, each a round trip to L2 behind a barrier; the row's parameters;
// the warp atomics).  After v90 a chunk's tokens cost pass B ~10
// instructions a thread each, so those costs were a large share of an item.
// v91-v94 together: split_gather -24 %, split_hist -21 %, p0.9 -13.8 % at
// fp32 V = 262,208 B = 1024 (docs/perf-notes.md).
#ifndef TOKENSIFT_PIVOT_SPLIT_GATHER_CHUNKS
#define TOKENSIFT_PIVOT_SPLIT_GATHER_CHUNKS 2
#endif

// CTAs per SM the gather launch (pass B, calls of more than
// kSplitFusedMaxItems items, where every SM runs items) is compiled for: 3
// caps it at 85 registers.  Left to ptxas it took 80 registers for fp32 at
// a928c40 but 120-128 for bf16, and 120 for fp32 too after v48's changes to
// the split items and the resolve: two CTAs per SM, +12-17 % on rows that
// all defer (v48 in docs/perf-notes.md).  After v86 / v88 made pass B's
// work a token smaller, 4 (64 registers; bf16 / f16 spill 4 B) measured
// -1.1 / -1.4 % on the anchors' p0.9, -5.6 % at V = 262,208 B >= 256 (v89).
#ifndef TOKENSIFT_PIVOT_SPLIT_GATHER_MIN_BLOCKS
#define TOKENSIFT_PIVOT_SPLIT_GATHER_MIN_BLOCKS 4
#endif
// The streaming split launch counts pass B in half chunks: 1 (default) a
// claim takes one half (8 logits a thread) while the halves of every row
// deferred so far fit the CTAs that run at once (the grid, at most two a
// SM), else two (a whole chunk's worth); 0 whole items only (main's form
// before v51); 2 halves only (v49's streaming form).  A deferred row's
// pass B on idle CTAs, latency-bound at one CTA per SM, then ends about
// twice as soon, while items that queue stay whole.
#ifndef TOKENSIFT_PIVOT_SPLIT_HALVES
#define TOKENSIFT_PIVOT_SPLIT_HALVES 1
#endif
// The streaming launch's grid has a CTA for every half (twice the chunks)
// only up to this many CTAs (H200: 132 SMs hold 264 at two a SM), else one
// for every chunk as the other split launches: CTAs beyond what the device
// holds start only as others leave, each paying a claim at the launch's
// end.  (v49 and v51 doubled it at B = 16 too, and lost 5-12 % there; v53's
// halves-only build without the doubling lost as much, so the queued
// halves cost that, and the doubling's own cost past 256 is unmeasured.)
#ifndef TOKENSIFT_PIVOT_SPLIT_STREAM_HALF_GRID
#define TOKENSIFT_PIVOT_SPLIT_STREAM_HALF_GRID 256
#endif
// The same for the fused and streaming launches (both passes in one
// launch); 0 leaves their registers to ptxas (126-128, two CTAs per SM).
#ifndef TOKENSIFT_PIVOT_SPLIT_FUSED_MIN_BLOCKS
#define TOKENSIFT_PIVOT_SPLIT_FUSED_MIN_BLOCKS 0
#endif

// How a chunk weighs a token in its softmax mass exp(z - zloc): one ex2.approx
// of (z - zloc) log2 e (1, v56), or the accurate expf (0, v55's SASS).  The
// masses feed only decisions top_p_clear guards (pivot_merge.cuh) and plain
// rows' log-probs; the error budget is under chunk_weight (pivot_chunk.cuh).
#ifndef TOKENSIFT_PIVOT_CHUNK_EX2
#define TOKENSIFT_PIVOT_CHUNK_EX2 1
#endif
// Whether the chunked merge defers a top-p-only row before loading its
// candidates when the chunks' emitted mass already says the list cannot reach
// p W (1, v46), or only after deciding from the list (0).
#ifndef TOKENSIFT_PIVOT_EARLY_DEFER
#define TOKENSIFT_PIVOT_EARLY_DEFER 1
#endif
#ifndef TOKENSIFT_PIVOT_EARLY_DEFER_MAX_ROWS
#define TOKENSIFT_PIVOT_EARLY_DEFER_MAX_ROWS 32
#endif

namespace tokensift::cuda_detail {

struct PivotPolicy {
  static constexpr int kThreads = 256;        // per CTA, chunk and merge phases
  static constexpr int kMinBlocksPerSm = 4;   // caps registers at 64 so 4 CTAs (64 KB of loads) fit per SM
  static constexpr int kItems = TOKENSIFT_PIVOT_ITEMS;  // logits per thread in the chunk phase
  static constexpr int kChunk = kThreads * kItems;      // 4096 logits per CTA by default
  static constexpr int kStatSample = 4;       // items per thread in the Gaussian guess's sample
  // Plain rows' race: a token's exact score is skipped when its cheap bound is
  // this far below the bar (the fast log errs by < 1e-5 here), for |z| below
  // kRaceSkipMaxAbsZ (where float rounding of z - ln stays < 1e-4).
  static constexpr float kRaceSkipMargin = 0.01f;
  static constexpr float kRaceSkipMaxAbsZ = 1000.0f;
  static constexpr int kGuessRetries = TOKENSIFT_PIVOT_GUESS_RETRIES;  // re-aimed guesses before a chunk's radix select
  static constexpr bool kGuessOnce = TOKENSIFT_PIVOT_GUESS_ONCE != 0;  // thread 0 derives the guess (rows without min-p)
  static constexpr int kCap = 128;            // most candidates a chunk emits (top-k rows)
  static constexpr int kTopPEmit = 32;        // top-p / min-p rows: emit between kTopPEmit
  static constexpr int kTopPEmitMax = 64;     //   and kTopPEmitMax candidates
  static constexpr int kMergeCap = 4096;      // most candidates the merge holds in shared memory
  static constexpr int kMergeLoadUnroll = 8;  // candidate loads in flight per thread in the merge's slot walk
  static constexpr int kPreselect = 256;      // above this many, the merge keeps only the top ones before sorting
  static constexpr int kWarpList = 64;        // lists this short are decided and raced by one warp (top-k < this)
  // Cluster kernel (pivot_cluster.cuh): CTAs per row (16: sm_90's
  // non-portable maximum), logits per thread held in registers, rounds of
  // three pivots before a row takes the exact select, and, for calls of
  // more than kClusterUncappedMaxRows rows, CTAs an SM must hold (the
  // register cap: uncapped, 128 registers, fp32 calls of 8 and 16 rows ran
  // 15-24 % slower than the chunked kernel; capped, B = 1 lost ~1 us to
  // spills; perf-notes v61 / v62 / v63).
  static constexpr int64_t kClusterMaxRows = TOKENSIFT_PIVOT_CLUSTER_MAX_ROWS;
  static constexpr int kClusterCtas = 16;
  static constexpr int kClusterItems = 32;
  static constexpr int kClusterRounds = 3;
  static constexpr int kClusterPivots = 15;  // pivots a round of the binned search (bins: kClusterPivots + 1 words)
  static constexpr bool kClusterBinnedCapped = TOKENSIFT_PIVOT_CLUSTER_BINNED_CAPPED != 0;
  static constexpr int kClusterMinBlocksPerSm = TOKENSIFT_PIVOT_CLUSTER_MIN_BLOCKS;
  static constexpr int64_t kClusterUncappedMaxRows = 4;
  static constexpr bool kClusterMinP = TOKENSIFT_PIVOT_CLUSTER_MIN_P != 0;
  static constexpr bool kClusterMinPTopK = TOKENSIFT_PIVOT_CLUSTER_MIN_P_TOP_K != 0;
  static constexpr int kMaxMergeChunks = 256; // chunks' emitted counts cached in shared memory (V <= 1M); one per thread
  // Full-row fallback (pivot_fallback.cuh).
  static constexpr int kFbBins = 2048;        // depth bins below the row max; the last catches the rest
  static constexpr int kFbBinsPerUnit = 64;   //   each 1/64 of a logit unit wide (grid depth ~32)
  static constexpr int kFbDepthBins = 512;    //   split path: bins per ln(V / W) of depth (grid ~4x that)
  static constexpr int kFbListCap = 4096;     // most tokens of the boundary bin sorted on chip
  static constexpr int kFbUnroll = 4;         // 16-byte loads in flight per thread per pass
  static constexpr int kFbStridedUnroll = 16; // scalar loads in flight per thread (generic path's fixed-order passes)
  // The merge's, the fallback's and the row-CTA compaction's sorts: lists
  // of at most this many keys by rank (two barriers, O(n^2 / threads)
  // compares) instead of the bitonic network (36 barriers at 256 keys).
  // dev/sort_probe.cu (H200, 4a49f72): rank 957 / 4,096 cycles at 32 / 256
  // keys against bitonic 4,292 / 10,489; at 512 rank 28,686 against 19,126.
  // Variant build: p0.9 -4..-7 % (B = 1 fp32 25.3 -> 23.4 us).
  static constexpr int kRankSortMax = TOKENSIFT_PIVOT_RANK_SORT_MAX;
  // Code run once per row is fetched cold (Nsight Compute, row-CTA kernel
  // at fp32 k50 B = 256: 31 % of warp stall samples are "no instruction").
  // Under kCompactCode the one-warp race is a rolled loop (the second
  // position runs the first one's fetched code; trace 1.28 -> 0.99 us), the
  // top-p weights are formed once, and row-CTA lists of at most 2 x
  // kThreads entries are compacted and min-p-filtered with 2 slots a thread
  // instead of kMergeCap / kThreads (final compaction 2.65 -> 1.75 us).
  // Rolled forms of the one-warp sort (1.46 -> 1.83 us) and of the first
  // tau's two fits (1.66 -> 1.88) were slower and are not used (perf-notes v33).
  static constexpr bool kCompactCode = TOKENSIFT_PIVOT_COMPACT_CODE != 0;
  static constexpr int kFbMaxVocabBits = 20;  // fixed-point masses stay within 1.2e-7 of W up to V < 2^20
  static constexpr int kSplitCtas = 1024;     // persistent grid of the split fallback's launches
  // Both split passes in one launch, a row's pass B waiting for its own pass
  // A, for calls of at most this many rows x chunks; two launches above.
  // Fitted on p0.9 (d1eb551 against 08fd409, which ran two launches): one
  // launch saved 2-7 % up to 2,432 (V = 151,936, B = 64) and lost 3 % at
  // 4,096 (V = 262,208, B = 64), 2 % at 9,728, 9 % at 16,384; even at
  // 8,192.  The choice depends on B and V only and both give the same bits.
  static constexpr int64_t kSplitFusedMaxItems = TOKENSIFT_PIVOT_SPLIT_FUSED_MAX_ITEMS;
  // Row-CTA kernel (pivot_rowcta.cuh): scalar top-k calls (k < kWarpList, no
  // min-p) from this many rows (v39: 64; the kernel's per-row time has
  // fallen since v19's fit, fp32 k50 B = 64 40.1 -> 32.6 us against the
  // chunked kernel), scalar top-p-only calls from kRowCtaTopPMinRows, scalar
  // min-p calls from kRowCtaMinPMinRows; its first threshold aims at the
  // row's top kRowCtaAim.
  static constexpr int64_t kRowCtaMinRows = TOKENSIFT_PIVOT_ROWCTA_MIN_ROWS;
  static constexpr int64_t kRowCtaTopPMinRows = TOKENSIFT_PIVOT_ROWCTA_TOP_P_MIN_ROWS;
  static constexpr int64_t kRowCtaMinPMinRows = TOKENSIFT_PIVOT_ROWCTA_MIN_P_MIN_ROWS;
  static constexpr int kRowCtaAim = TOKENSIFT_PIVOT_ROWCTA_AIM;
  static constexpr int kRowCtaFineAim = TOKENSIFT_PIVOT_ROWCTA_FINE_AIM;  // top-k rows fitted on 2,048 samples
  static constexpr int64_t kRowCtaFineSampleMaxRows = TOKENSIFT_PIVOT_ROWCTA_FINE_SAMPLE_MAX_ROWS;
  static constexpr int kRowCtaMinPAim = TOKENSIFT_PIVOT_ROWCTA_MIN_P_AIM;
  // Logits per thread per iteration (8 fp32 or 4 bf16 loads of 16 bytes),
  // loaded one iteration ahead (twice that in flight), at 2 CTAs per SM (128
  // registers).  Measured, fp32 / bf16 k50 at B = 1024 (perf-notes
  // v19b-v22): 246 / 190 us (v21b 246 / 202); not ahead at 3 CTAs per SM
  // (80 registers) 263 / 211, at 2 CTAs 249 / 222; ahead with 16 logits at
  // 3 CTAs 309 / 227; 4 CTAs per SM spill in the loop.  fp32 min-p rows
  // loaded ahead only from v35 (kRowCtaAheadMinP32: they spilled before v34).
  static constexpr int kRowCtaItems = TOKENSIFT_PIVOT_ROWCTA_ITEMS;
  static constexpr int kRowCtaMinBlocksPerSm = TOKENSIFT_PIVOT_ROWCTA_MIN_BLOCKS;
  static constexpr bool kRowCtaAhead = TOKENSIFT_PIVOT_ROWCTA_AHEAD != 0;  // loads one iteration ahead
  // decide_and_draw: a min-p row's complete list without top-k, top-p or a
  // log-prob is raced as it stands, its block sort skipped (v105).
  static constexpr bool kMinPUnsortedRace = TOKENSIFT_PIVOT_MIN_P_UNSORTED_RACE != 0;
  // Top-k rows' finish (pivot_rowcta.cuh): the whole CTA ranks the list and
  // forms each position's mass and race score at once, where the one-warp
  // finish (2.9 us a row: sort 1.0, race 0.9) ran them one after the other
  // (dev/rowcta_trace, fp32 k50 B = 128).  The list is compacted to
  // kWarpList first (kRowCtaCtaFinishCap; 1.6 us): ranking the ~165 entries
  // of a 16-bit row's list at one thread a key took the finish 2.97 ->
  // 3.84 us at bf16 k50 B = 256 (v96's trace), ~5,000 warp instructions a
  // CTA beside the co-resident CTA's stream.
  static constexpr bool kRowCtaCtaFinish = TOKENSIFT_PIVOT_ROWCTA_CTA_FINISH != 0;
  static constexpr int kRowCtaCtaFinishCap = TOKENSIFT_PIVOT_ROWCTA_CTA_FINISH == 2 ? kThreads : kWarpList;
  static constexpr float kRowCtaTrimSigmas = 5.0f;  // the first tau's fit drops samples beyond this
  static constexpr int kRowCtaMinPCompactions = 8;  // min-p rows: list compactions before the gather takes over
  // The first whole iteration's loads issued with the sample, ahead of the
  // parameters' barrier and the first tau (held in registers across them).
  // Measured (variant of af60da4): bf16 k50 / min-p -1..-2 % at B = 256 and
  // 1024, fp32 even (within 1 %).
  static constexpr bool kRowCtaEarlyFirstLoad = TOKENSIFT_PIVOT_ROWCTA_EARLY_LOAD != 0;
  // The row's last iteration (V = 129,280 fp32: 1,600 of its 2,048 vectors)
  // ran the generic form, 32 per-logit tests and offers unrolled once per
  // row, fetched cold (~30 % of the kernel's "no instruction" stall
  // samples, Nsight Compute at efae2eb): under kRowCtaWholeTail it runs the
  // whole form on -inf past the row, and only the scalar head and tail (one
  // logit a thread each) stay per-logit.  Under kRowCtaOfferLoop the offers
  // walk the flagged vectors in a loop (one copy of the 4- or 8-logit test).
  static constexpr bool kRowCtaWholeTail = TOKENSIFT_PIVOT_ROWCTA_WHOLE_TAIL != 0;
  static constexpr bool kRowCtaOfferLoop = TOKENSIFT_PIVOT_ROWCTA_OFFER_LOOP != 0;
  // fp32 min-p rows load ahead as well: with v34's loop their kernel holds
  // the second vector set without spilling (106 -> 128 registers, 0 B);
  // v21 left them out when it spilled.
  static constexpr bool kRowCtaAheadMinP32 = TOKENSIFT_PIVOT_ROWCTA_AHEAD_MINP32 != 0;
  // Top-p rows without top-k or min-p (no log-probs) on the row-CTA kernel
  // (v36): one stream per row that also sums W, instead of 32 chunk CTAs
  // with their statistics, guess, summary and ticket each (p0.9 at B = 256
  // was 4.3-13x the floor there).
  static constexpr bool kRowCtaTopP = TOKENSIFT_PIVOT_ROWCTA_TOP_P != 0;
  static constexpr bool kSplitRunCall = TOKENSIFT_PIVOT_SPLIT_RUN_CALL != 0;
  static constexpr bool kSplitStream = TOKENSIFT_PIVOT_SPLIT_STREAM != 0;
  static constexpr int kClearKernel = TOKENSIFT_PIVOT_CLEAR_KERNEL;
  static constexpr bool kSplitRaceGroups = TOKENSIFT_PIVOT_SPLIT_RACE_GROUPS != 0;
  static constexpr bool kSplitRaceQueue = TOKENSIFT_PIVOT_SPLIT_RACE_QUEUE != 0;
  static constexpr bool kSplitWarpAtomics = TOKENSIFT_PIVOT_SPLIT_WARP_ATOMICS != 0;
  static constexpr bool kSplitTieMode = TOKENSIFT_PIVOT_SPLIT_TIE_MODE != 0;
  static constexpr bool kSplitLeanTokens = TOKENSIFT_PIVOT_SPLIT_LEAN_TOKENS != 0;
  static constexpr int kSplitGatherChunks = TOKENSIFT_PIVOT_SPLIT_GATHER_CHUNKS;
  static constexpr int kSplitHistChunks = TOKENSIFT_PIVOT_SPLIT_HIST_CHUNKS;
  static_assert(kSplitHistChunks == 1 || kSplitHistChunks == 2, "a hist item is one chunk or two");
  // CTAs a SM runs at once in either two-launch pass (the gather's launch
  // bound; split_hist_kernel's 60 registers give 4 too): the two-chunk
  // items' rule counts the call's chunks against the CTAs that run at once.
  static constexpr int kSplitPairCtasPerSm = 4;
  static constexpr bool kSplitLeanHist = TOKENSIFT_PIVOT_SPLIT_LEAN_HIST != 0;
  static constexpr bool kSplitRowFields = TOKENSIFT_PIVOT_SPLIT_ROW_FIELDS != 0;
  static_assert(kSplitGatherChunks == 1 || kSplitGatherChunks == 2, "a gather item is one chunk or two");
  static constexpr int kSplitGatherMinBlocksPerSm = TOKENSIFT_PIVOT_SPLIT_GATHER_MIN_BLOCKS;
  static constexpr int kSplitHalves = TOKENSIFT_PIVOT_SPLIT_HALVES;
  static constexpr int kSplitStreamHalfGrid = TOKENSIFT_PIVOT_SPLIT_STREAM_HALF_GRID;
  // Early deferral (v46): each chunk of a top-p-only row reports its
  // candidates' mass (ChunkSummary::emit_mass); when their sum is
  // below p W (1 - kEarlyDeferMargin) no decision from the list can keep the
  // row, so the merge defers it before loading, pre-selecting and sorting the
  // candidates.  The margin is far above the fp32 sums' error (~1e-5
  // relative), so exactly the rows the list path would defer are deferred,
  // only sooner, and with the same arguments: the results keep their bits.
  static constexpr bool kEarlyDefer = TOKENSIFT_PIVOT_EARLY_DEFER != 0;
  static constexpr double kEarlyDeferMargin = 1e-3;
  // ... in calls of at most this many rows (they run the pivot kernel's
  // kEarly instantiation; the others keep the plain one).  Fitted on p0.9
  // (v46-v46e, same-run benches against v45): deferring rows -15 / -15 /
  // -9 / -5 % at B = 1 / 4 / 16 / 32, but at B = 64 +6..+10 %: rows
  // deferred early wait for the split launch, whose items then overlap the
  // pivot kernel's last wave (its span 46.9 -> 54.3 us).  Rows the list
  // decides pay ~1 us at B = 1 in that instantiation.
  static constexpr int64_t kEarlyDeferMaxRows = TOKENSIFT_PIVOT_EARLY_DEFER_MAX_ROWS;
  // No L2 prefetch anywhere in this kernel: the first iterations' lines
  // before the parameters (v26; at 08fd409 0 iterations beat 2 by 1-2 %, 4
  // and 6 lost 4-18 %), the next row's (v27e, +3..+5 %) and the lines one
  // iteration past the registers' (v28c, +2..+10 %) all queued ahead of
  // demand loads; their knobs were removed after v28 (perf-notes).
};

// Chunks per row depend on V only (never on the batch), so a row's result and
// its arithmetic are the same at any batch size.
inline int64_t pivot_chunks(int64_t vocab) {
  return (vocab + PivotPolicy::kChunk - 1) / PivotPolicy::kChunk;
}

// Whether a call's split fallback runs as one launch (both passes), which
// streams behind the kernel before it when PivotPolicy::kSplitStream.
inline bool split_fused(int64_t rows, int64_t chunks) { return rows * chunks <= PivotPolicy::kSplitFusedMaxItems; }

}  // namespace tokensift::cuda_detail
