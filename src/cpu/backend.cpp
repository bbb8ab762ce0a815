// The CPU backend's entry points: workspace sizing, per-row parameter checks,
// and the spread of rows over the thread pool.
//
// Rows are handed out one at a time from an atomic counter; a row's result
// depends only on its inputs, and each worker writes only its own rows, so the
// outputs are the same for any number of threads.
#include <algorithm>
#include <atomic>
#include <cinttypes>

#include "api/backend.hpp"
#include "cpu/half.hpp"
#include "cpu/row_kernel.hpp"
#include "cpu/thread_pool.hpp"

namespace tokensift::detail::cpu {
namespace {

// Below this many logits per worker, waking another thread costs more than it saves.
constexpr int64_t kMinElementsPerWorker = 1 << 15;

int worker_count(int64_t rows, int64_t vocab, int num_threads) {
  const double work = (double)rows * (double)vocab / (double)kMinElementsPerWorker;
  const int64_t by_work = work < 1.0 ? 1 : work > 1e9 ? (int64_t)1e9 : (int64_t)work;
  return (int)std::max<int64_t>(1, std::min<int64_t>({(int64_t)num_threads, rows, by_work}));
}

struct Job {
  LogitsView logits;
  const SamplingParams* params;
  const SampleOutputs* out;
  unsigned char* base;  // 64-byte aligned
  size_t per_worker;
  Algo algo;
  std::atomic<int64_t> next_row{0};
};

template <class Load>
RowResult run_row(const Load& x, int64_t vocab, const RowParams& p, const Scratch& s, Algo algo,
                  bool want_logprob) {
  return algo == Algo::kSort ? sort_row(x, vocab, p, s, want_logprob)
                             : select_row(x, vocab, p, s, want_logprob);
}

void work(void* context, int worker) {
  Job& job = *static_cast<Job*>(context);
  unsigned char* mine = job.base + (size_t)worker * job.per_worker;
  const int64_t vocab = job.logits.vocab;
  Scratch s;
  s.key = reinterpret_cast<uint32_t*>(mine);
  s.cand = reinterpret_cast<uint64_t*>(mine + align_up(((size_t)vocab + 4) * 4, 64));

  const SamplingParams& sp = *job.params;
  const SampleOutputs& out = *job.out;
  const bool want_logprob = out.logprobs != nullptr;
  const size_t elem = dtype_size(job.logits.dtype);
  for (;;) {
    const int64_t r = job.next_row.fetch_add(1, std::memory_order_relaxed);
    if (r >= job.logits.rows) break;
    const RowParams p{sp.temperature.at(r), sp.min_p.at(r), sp.top_k.at(r),
                      sp.top_p.at(r),       sp.seed.at(r),  sp.offset.at(r)};
    const void* row = static_cast<const unsigned char*>(job.logits.data) +
                      (size_t)r * (size_t)job.logits.row_stride * elem;
    RowResult res;
    switch (job.logits.dtype) {
      case DType::kF32:
        res = run_row(F32Row{static_cast<const float*>(row)}, vocab, p, s, job.algo, want_logprob);
        break;
      case DType::kBF16:
        res = run_row(BF16Row{static_cast<const uint16_t*>(row)}, vocab, p, s, job.algo,
                      want_logprob);
        break;
      case DType::kF16:
        res = run_row(F16Row{static_cast<const uint16_t*>(row)}, vocab, p, s, job.algo,
                      want_logprob);
        break;
    }
    out.tokens[r] = res.token;
    if (out.row_status) out.row_status[r] = (int32_t)res.status;
    if (out.logprobs) out.logprobs[r] = res.logprob;
    if (out.kept_counts) out.kept_counts[r] = res.kept;
  }
}

// Per-row arrays live in host memory here, so they are checked before any
// work, in the order of the argument-error table, and fail the whole call.
Status check_per_row(const SamplingParams& sp, int64_t rows) {
  if (const float* t = sp.temperature.per_row)
    for (int64_t r = 0; r < rows; ++r)
      if (!valid_temperature(t[r]))
        return fail(Status::kInvalidTemperature,
                    "params.temperature.per_row[%" PRId64 "] = %g: must be finite and >= 0", r,
                    (double)t[r]);
  if (const int32_t* k = sp.top_k.per_row)
    for (int64_t r = 0; r < rows; ++r)
      if (!valid_top_k(k[r]))
        return fail(Status::kInvalidTopK, "params.top_k.per_row[%" PRId64 "] = %d: must be >= 0",
                    r, (int)k[r]);
  if (const float* p = sp.top_p.per_row)
    for (int64_t r = 0; r < rows; ++r)
      if (!valid_top_p(p[r]))
        return fail(Status::kInvalidTopP,
                    "params.top_p.per_row[%" PRId64 "] = %g: must be in (0, 1]", r, (double)p[r]);
  if (const float* m = sp.min_p.per_row)
    for (int64_t r = 0; r < rows; ++r)
      if (!valid_min_p(m[r]))
        return fail(Status::kInvalidMinP,
                    "params.min_p.per_row[%" PRId64 "] = %g: must be in [0, 1]", r, (double)m[r]);
  return Status::kOk;
}

}  // namespace

size_t workspace_size(int64_t rows, int64_t vocab, DType, int num_threads, Algo) {
  if (rows <= 0) return 0;
  return (size_t)worker_count(rows, vocab, num_threads) * scratch_bytes(vocab) + 64;
}

Status sample(const LogitsView& logits, const SamplingParams& params, const SampleOutputs& out,
              void* workspace, size_t workspace_bytes, int num_threads, Algo algo) {
  if (logits.rows == 0) return Status::kOk;
  if (Status st = check_per_row(params, logits.rows); st != Status::kOk) return st;
  const int workers = worker_count(logits.rows, logits.vocab, num_threads);
  const size_t need = (size_t)workers * scratch_bytes(logits.vocab) + 64;
  if (workspace_bytes < need)
    return fail(Status::kWorkspaceTooSmall, "workspace_bytes = %zu, the CPU backend needs %zu",
                workspace_bytes, need);
  Job job;
  job.logits = logits;
  job.params = &params;
  job.out = &out;
  job.base = reinterpret_cast<unsigned char*>(
      align_up(reinterpret_cast<uintptr_t>(workspace), 64));
  job.per_worker = scratch_bytes(logits.vocab);
  job.algo = algo;
  ThreadPool::instance().run(workers, work, &job);
  return Status::kOk;
}

}  // namespace tokensift::detail::cpu
