// The three decode loops: ds4-style round trip, GPU-resident eager, GPU-resident graphed.
//
// Every call that makes the host wait for the device inside a run goes through
// sync_stream (or is counted where it happens), so host_syncs is a count, not
// an estimate.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "gpu_finalize.cuh"
#include "gpu_loops.cuh"

namespace decode {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void sync_stream(cudaStream_t s, uint64_t* count) {
  DECODE_CUDA(cudaStreamSynchronize(s));
  ++*count;
}

tokensift::Algo to_algo(const std::string& a) {
  if (a == "pivot") return tokensift::Algo::kPivot;
  if (a == "sort") return tokensift::Algo::kSort;
  return tokensift::Algo::kAuto;
}

}  // namespace

// ------------------------------------------------------------------ Arena --

Arena::~Arena() {
  for (auto it = host_.rbegin(); it != host_.rend(); ++it) cudaFreeHost(*it);
  for (auto it = device_.rbegin(); it != device_.rend(); ++it) cudaFree(*it);
}

template <class T>
T* Arena::device(size_t count) {
  void* p = nullptr;
  DECODE_CUDA(cudaMalloc(&p, count * sizeof(T) + 1));
  device_.push_back(p);
  DECODE_CUDA(cudaMemset(p, 0, count * sizeof(T) + 1));
  return static_cast<T*>(p);
}

template <class T>
T* Arena::pinned(size_t count) {
  void* p = nullptr;
  DECODE_CUDA(cudaHostAlloc(&p, count * sizeof(T) + 1, cudaHostAllocDefault));
  host_.push_back(p);
  std::memset(p, 0, count * sizeof(T) + 1);
  return static_cast<T*>(p);
}

template <class T>
T* Arena::mapped(size_t count, T** device_alias) {
  void* p = nullptr;
  DECODE_CUDA(cudaHostAlloc(&p, count * sizeof(T) + 1, cudaHostAllocMapped));
  host_.push_back(p);
  std::memset(p, 0, count * sizeof(T) + 1);
  void* d = nullptr;
  DECODE_CUDA(cudaHostGetDevicePointer(&d, p, 0));
  *device_alias = static_cast<T*>(d);
  return static_cast<T*>(p);
}

// --------------------------------------------------------------- GpuBatch --

GpuBatch::GpuBatch(const Options& opt, GpuModel* model, cudaStream_t stream, const RowSetup& setup,
                   int64_t batch)
    : opt_(opt), model_(model), stream_(stream), setup_(setup), batch_(batch) {
  const int64_t b = batch, n = opt.steps, v = model->shape().vocab;
  tokens_in_ = arena_.device<int32_t>(b);
  sampled_ = arena_.device<int32_t>(b);
  finished_ = arena_.device<int32_t>(b);
  generated_ = arena_.device<int32_t>(b);
  max_tokens_ = arena_.device<int32_t>(b);
  history_ = arena_.device<int32_t>(n * b);
  top_k_ = arena_.device<int32_t>(b);
  seeds_ = arena_.device<uint64_t>(b);
  offsets_ = arena_.device<uint64_t>(b);
  step_ = arena_.device<uint64_t>(1);
  temperature_ = arena_.device<float>(b);
  top_p_ = arena_.device<float>(b);
  min_p_ = arena_.device<float>(b);
  auto up = [](void* dst, const void* src, size_t bytes) {
    DECODE_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  };
  up(max_tokens_, setup.max_tokens.data(), b * 4);
  up(top_k_, setup.top_k.data(), b * 4);
  up(seeds_, setup.seeds.data(), b * 8);
  up(temperature_, setup.temperature.data(), b * 4);
  up(top_p_, setup.top_p.data(), b * 4);
  up(min_p_, setup.min_p.data(), b * 4);

  logits_host_ = arena_.pinned<uint8_t>(model->logits_bytes(b));
  tokens_host_ = arena_.pinned<int32_t>(b);
  history_host_ = arena_.pinned<int32_t>(n * b);
  ring_slots_ = opt.ring_slots ? opt.ring_slots : n;
  if (ring_slots_ < opt.graph_steps) ring_slots_ = opt.graph_steps;  // one graph's steps must fit
  ring_ = arena_.mapped<int32_t>(ring_slots_ * b, &ring_dev_);
  published_ = arena_.mapped<unsigned long long>(1, &published_dev_);
  error_ = arena_.mapped<int32_t>(1, &error_dev_);
  DECODE_CUDA(cudaEventCreate(&ev_a_));
  DECODE_CUDA(cudaEventCreate(&ev_b_));

  tokensift::SamplerConfig cfg;
  cfg.backend = tokensift::Backend::kCuda;
  cfg.algo = to_algo(opt.algo);
  int device = 0;
  DECODE_CUDA(cudaGetDevice(&device));
  cfg.device = device;
  check_tokensift(tokensift::Sampler::create(cfg, &sampler_), "creating the CUDA sampler");
  const auto dtype = to_tokensift(opt.logits);
  check_tokensift(sampler_->workspace_size(b, v, dtype, &workspace_bytes_), "CUDA workspace size");
  if (workspace_bytes_) {
    DECODE_CUDA(cudaMalloc(&workspace_, workspace_bytes_));
    check_tokensift(sampler_->workspace_init(workspace_, workspace_bytes_, stream_),
                    "CUDA workspace init");
  }
  // Arena's cudaMemsets ran on the legacy stream, which a non-blocking stream
  // does not wait for.
  DECODE_CUDA(cudaDeviceSynchronize());
}

GpuBatch::~GpuBatch() {
  if (graph_full_) cudaGraphExecDestroy(graph_full_);
  if (graph_tail_) cudaGraphExecDestroy(graph_tail_);
  cudaEventDestroy(ev_a_);
  cudaEventDestroy(ev_b_);
  if (workspace_) cudaFree(workspace_);
}

void GpuBatch::reset() {
  const size_t b = batch_;
  DECODE_CUDA(cudaStreamSynchronize(stream_));
  DECODE_CUDA(cudaMemcpy(tokens_in_, setup_.first_tokens.data(), b * 4, cudaMemcpyHostToDevice));
  DECODE_CUDA(cudaMemset(finished_, 0, b * 4));
  DECODE_CUDA(cudaMemset(generated_, 0, b * 4));
  DECODE_CUDA(cudaMemset(offsets_, 0, b * 8));
  DECODE_CUDA(cudaMemset(step_, 0, 8));
  DECODE_CUDA(cudaMemset(history_, 0xff, opt_.steps * b * 4));
  std::memset(ring_, 0xff, ring_slots_ * b * 4);
  *(volatile unsigned long long*)published_ = 0;
  *(volatile int32_t*)error_ = 0;
  DECODE_CUDA(cudaDeviceSynchronize());
}

RunRecord GpuBatch::new_record(const char* mode, const char* sampler) const {
  RunRecord r;
  r.mode = mode;
  r.sampler = sampler;
  r.batch = batch_;
  r.steps = opt_.steps;
  r.tokens.assign(opt_.steps * batch_, -1);
  return r;
}

void GpuBatch::sample_on_device(bool per_row_offsets, uint64_t step) {
  tokensift::LogitsView view;
  view.data = model_->logits();
  view.rows = batch_;
  view.vocab = model_->shape().vocab;
  view.row_stride = view.vocab;
  view.dtype = to_tokensift(opt_.logits);
  tokensift::SamplingParams p;
  p.temperature.per_row = temperature_;
  p.top_p.per_row = top_p_;
  p.min_p.per_row = min_p_;
  p.top_k.per_row = top_k_;
  p.seed.per_row = seeds_;
  if (per_row_offsets) {
    p.offset.per_row = offsets_;  // advanced by finalize_kernel, read at execution time
  } else {
    p.offset.value = step;
  }
  tokensift::SampleOutputs out;
  out.tokens = sampled_;
  check_tokensift(sampler_->sample(view, p, out, workspace_, workspace_bytes_, stream_),
                  "CUDA sample");
}

// Mode 1: logits to the host every step, CPU sampling, token back.
RunRecord GpuBatch::run_ds4(HostSampler* host) {
  RunRecord r = new_record(host->is_naive() ? "ds4-naive" : "ds4", host->name());
  reset();
  const size_t logits_bytes = model_->logits_bytes(batch_);
  std::vector<int32_t> sampled(batch_);
  StopState stop(batch_);
  bool rows_ok = true;
  double sampling_s = 0;
  float copy_ms_total = 0;
  const auto t_start = Clock::now();
  for (int64_t s = 0; s < opt_.steps; ++s) {
    model_->forward(tokens_in_, batch_, opt_.eos, opt_.eos_bias);
    DECODE_CUDA(cudaEventRecord(ev_a_, stream_));
    DECODE_CUDA(cudaMemcpyAsync(logits_host_, model_->logits(), logits_bytes,
                                cudaMemcpyDeviceToHost, stream_));
    DECODE_CUDA(cudaEventRecord(ev_b_, stream_));
    r.d2h_bytes += logits_bytes;
    sync_stream(stream_, &r.host_syncs_in_loop);
    float ms = 0;
    DECODE_CUDA(cudaEventElapsedTime(&ms, ev_a_, ev_b_));  // both complete: no wait
    copy_ms_total += ms;
    const auto t0 = Clock::now();
    host->sample(logits_host_, batch_, setup_, (uint64_t)s, sampled.data());
    sampling_s += seconds_since(t0);
    int32_t* emitted = &r.tokens[s * batch_];
    rows_ok &= apply_stop_rule(sampled.data(), setup_.max_tokens, opt_.eos, &stop, emitted);
    // The pinned source is rewritten only after the next step's sync, by
    // which time this copy has run.
    std::memcpy(tokens_host_, emitted, batch_ * 4);
    DECODE_CUDA(cudaMemcpyAsync(tokens_in_, tokens_host_, batch_ * 4, cudaMemcpyHostToDevice,
                                stream_));
    r.h2d_bytes += batch_ * 4;
  }
  r.elapsed_s = seconds_since(t_start);
  r.host_syncs = r.host_syncs_in_loop;
  r.sampling_us_per_step = sampling_s * 1e6 / (double)opt_.steps;
  r.copy_us_per_step = copy_ms_total * 1e3 / (double)opt_.steps;
  if (!rows_ok) throw std::runtime_error(std::string(host->name()) + " rejected a row (token -1)");
  DECODE_CUDA(cudaStreamSynchronize(stream_));  // the last H2D, outside the timed run
  return r;
}

// Mode 2: everything on the device, launched eagerly step by step.
RunRecord GpuBatch::run_eager() {
  RunRecord r = new_record("eager", "tokensift-cuda");
  reset();
  FinalizeParams f;
  f.sampled = sampled_;
  f.tokens_in = tokens_in_;
  f.finished = finished_;
  f.generated = generated_;
  f.max_tokens = max_tokens_;
  f.step = step_;
  f.history = history_;
  f.error = error_dev_;
  f.eos = opt_.eos;
  f.batch = batch_;
  const auto t_start = Clock::now();
  for (int64_t s = 0; s < opt_.steps; ++s) {
    model_->forward(tokens_in_, batch_, opt_.eos, opt_.eos_bias);
    sample_on_device(false, (uint64_t)s);
    launch_finalize(f, stream_);
  }
  const size_t bytes = opt_.steps * batch_ * 4;
  DECODE_CUDA(cudaMemcpyAsync(history_host_, history_, bytes, cudaMemcpyDeviceToHost, stream_));
  r.d2h_bytes += bytes;
  sync_stream(stream_, &r.host_syncs);
  r.elapsed_s = seconds_since(t_start);
  std::memcpy(r.tokens.data(), history_host_, bytes);
  if (*(volatile int32_t*)error_) throw std::runtime_error("eager: the CUDA sampler rejected a row");
  return r;
}

void GpuBatch::capture(int64_t steps, cudaGraphExec_t* exec) {
  FinalizeParams f;
  f.sampled = sampled_;
  f.tokens_in = tokens_in_;
  f.finished = finished_;
  f.generated = generated_;
  f.max_tokens = max_tokens_;
  f.offsets = offsets_;
  f.step = step_;
  f.ring = ring_dev_;
  f.ring_slots = ring_slots_;
  f.published = published_dev_;
  f.error = error_dev_;
  f.eos = opt_.eos;
  f.batch = batch_;
  cudaGraph_t graph = nullptr;
  DECODE_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  try {
    for (int64_t k = 0; k < steps; ++k) {
      model_->forward(tokens_in_, batch_, opt_.eos, opt_.eos_bias);
      sample_on_device(true, 0);
      launch_finalize(f, stream_);
    }
  } catch (...) {
    cudaStreamEndCapture(stream_, &graph);  // leave the stream usable
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  DECODE_CUDA(cudaStreamEndCapture(stream_, &graph));
  const cudaError_t st = cudaGraphInstantiate(exec, graph, 0);
  cudaGraphDestroy(graph);
  DECODE_CUDA(st);
  DECODE_CUDA(cudaGraphUpload(*exec, stream_));
}

// Copies every published ring slot the host has not read yet.  No CUDA call:
// the counter and the ring are pinned host memory the device writes into.
void GpuBatch::drain(int64_t* read_upto, std::vector<int32_t>* history) {
  const int64_t published =
      (int64_t)__atomic_load_n(published_, __ATOMIC_ACQUIRE);
  for (int64_t s = *read_upto; s < published; ++s)
    std::memcpy(&(*history)[s * batch_], &ring_[(s % ring_slots_) * batch_], batch_ * 4);
  if (published > *read_upto) *read_upto = published;
}

// Mode 3: K steps per graph launch, offsets and stop conditions on the
// device, tokens streamed to the pinned ring; the host only launches and reads.
RunRecord GpuBatch::run_graphed() {
  RunRecord r = new_record("graphed", "tokensift-cuda");
  const int64_t k = opt_.graph_steps, n = opt_.steps;
  if (!graph_full_ && n >= k) capture(k, &graph_full_);
  if (!graph_tail_ && n % k) capture(n % k, &graph_tail_);
  reset();
  int64_t launched = 0, read_upto = 0;
  const auto t_start = Clock::now();
  while (launched < n) {
    const int64_t chunk = n - launched >= k ? k : n - launched;
    if (launched + chunk - read_upto > ring_slots_) {
      // The ring would overwrite unread steps: wait for the device to publish.
      // Never reached when the ring holds every step (the default).
      ++r.host_syncs_in_loop;
      while (launched + chunk - read_upto > ring_slots_) drain(&read_upto, &r.tokens);
    }
    DECODE_CUDA(cudaGraphLaunch(chunk == k ? graph_full_ : graph_tail_, stream_));
    launched += chunk;
    drain(&read_upto, &r.tokens);
  }
  sync_stream(stream_, &r.host_syncs);
  drain(&read_upto, &r.tokens);
  r.elapsed_s = seconds_since(t_start);
  r.host_syncs += r.host_syncs_in_loop;
  r.d2h_bytes = (uint64_t)(n * batch_ * 4 + n * 8);  // ring tokens + the published counter
  if (read_upto != n) throw std::runtime_error("graphed: the ring published fewer steps than ran");
  if (*(volatile int32_t*)error_) throw std::runtime_error("graphed: the CUDA sampler rejected a row");
  return r;
}

double GpuBatch::time_forward_us() {
  reset();
  DECODE_CUDA(cudaEventRecord(ev_a_, stream_));
  for (int i = 0; i < opt_.timing_reps; ++i)
    model_->forward(tokens_in_, batch_, opt_.eos, opt_.eos_bias);
  DECODE_CUDA(cudaEventRecord(ev_b_, stream_));
  DECODE_CUDA(cudaEventSynchronize(ev_b_));
  float ms = 0;
  DECODE_CUDA(cudaEventElapsedTime(&ms, ev_a_, ev_b_));
  return ms * 1e3 / opt_.timing_reps;
}

double GpuBatch::time_sampler_us() {
  model_->forward(tokens_in_, batch_, opt_.eos, opt_.eos_bias);
  sample_on_device(false, 1u << 20);  // warm
  DECODE_CUDA(cudaEventRecord(ev_a_, stream_));
  for (int i = 0; i < opt_.timing_reps; ++i) sample_on_device(false, (1u << 20) + i);
  DECODE_CUDA(cudaEventRecord(ev_b_, stream_));
  DECODE_CUDA(cudaEventSynchronize(ev_b_));
  float ms = 0;
  DECODE_CUDA(cudaEventElapsedTime(&ms, ev_a_, ev_b_));
  return ms * 1e3 / opt_.timing_reps;
}

}  // namespace decode
