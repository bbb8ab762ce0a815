// CPU model and the CPU-only decode loop (mode 1 without a device).
#include "cpu_model.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>

#include "host_sampler.hpp"
#include "tokensift/tokensift.hpp"

namespace decode {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [-scale, scale), a pure function of (stream, i).
void fill(std::vector<float>* w, size_t n, uint64_t stream, float scale) {
  w->resize(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = splitmix64(stream * 0x100000001B3ull ^ i);
    const float u = (float)(r >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    (*w)[i] = (2.0f * u - 1.0f) * scale;
  }
}

// Eight independent partial sums: vectorisable without -ffast-math, which the
// project does not allow (-ffp-contract=off and no reassociation).
float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float s = 0;
  for (; i < n; ++i) s += a[i] * b[i];
  for (int j = 0; j < 8; ++j) s += acc[j];
  return s;
}

void rms_norm(const float* x, int64_t n, float* out) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += (double)x[i] * x[i];
  const float inv = (float)(1.0 / std::sqrt(ss / (double)n + 1e-6));
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv;
}

float silu(float g) { return g / (1.0f + std::exp(-g)); }

uint16_t to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even (inputs are finite)
  return (uint16_t)(u >> 16);
}

}  // namespace

CpuModel::CpuModel(int64_t vocab, int64_t hidden, int64_t ffn, int64_t layers, float logit_std,
                   uint64_t seed)
    : vocab_(vocab), hidden_(hidden), ffn_(ffn) {
  const float unit = std::sqrt(3.0f);  // uniform(-a, a) has variance a^2 / 3
  fill(&embed_, (size_t)(vocab * hidden), seed ^ 1, unit);
  layers_.resize(layers);
  for (int64_t l = 0; l < layers; ++l) {
    fill(&layers_[l].gate_up, (size_t)(2 * ffn * hidden), seed ^ (100 + 2 * l),
         unit / std::sqrt((float)hidden));
    // Keep the residual stream's scale roughly constant over the layers.
    fill(&layers_[l].down, (size_t)(hidden * ffn), seed ^ (101 + 2 * l),
         0.5f * unit / std::sqrt((float)ffn));
  }
  fill(&head_, (size_t)(vocab * hidden), seed ^ 2, logit_std * unit / std::sqrt((float)hidden));
}

void CpuModel::forward(const int32_t* tokens, int64_t rows, float* logits) const {
  std::vector<float> x(hidden_), h(hidden_), gu(2 * ffn_), act(ffn_);
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(x.data(), &embed_[(size_t)tokens[r] * hidden_], hidden_ * sizeof(float));
    for (const Layer& layer : layers_) {
      rms_norm(x.data(), hidden_, h.data());
      for (int64_t o = 0; o < 2 * ffn_; ++o)
        gu[o] = dot(&layer.gate_up[(size_t)o * hidden_], h.data(), hidden_);
      for (int64_t f = 0; f < ffn_; ++f) act[f] = silu(gu[f]) * gu[ffn_ + f];
      for (int64_t o = 0; o < hidden_; ++o) x[o] += dot(&layer.down[(size_t)o * ffn_], act.data(), ffn_);
    }
    rms_norm(x.data(), hidden_, h.data());
    float* out = logits + r * vocab_;
    for (int64_t v = 0; v < vocab_; ++v) out[v] = dot(&head_[(size_t)v * hidden_], h.data(), hidden_);
  }
}

void CpuModel::bias_token(float* logits, int64_t rows, int32_t token, float bias) const {
  if (bias == 0.0f || token < 0 || token >= vocab_) return;
  for (int64_t r = 0; r < rows; ++r) logits[r * vocab_ + token] += bias;
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

RunRecord run_cpu_loop(const Options& opt, const CpuModel& model, const RowSetup& rows,
                       int64_t batch, HostSampler* sampler) {
  RunRecord r;
  r.mode = "ds4";
  r.sampler = sampler->name();
  r.batch = batch;
  r.steps = opt.steps;
  r.tokens.assign((size_t)(opt.steps * batch), 0);
  std::vector<float> logits((size_t)(batch * opt.vocab));
  std::vector<uint16_t> logits_bf16;
  std::vector<int32_t> input = rows.first_tokens, sampled(batch);
  StopState stop(batch);
  double forward_s = 0, sampling_s = 0;
  const auto t_start = Clock::now();
  for (int64_t s = 0; s < opt.steps; ++s) {
    auto t0 = Clock::now();
    model.forward(input.data(), batch, logits.data());
    model.bias_token(logits.data(), batch, opt.eos, opt.eos_bias);
    forward_s += seconds_since(t0);
    t0 = Clock::now();
    const void* data = logits.data();
    if (opt.logits == LogitsType::kBF16) {
      logits_bf16.resize(logits.size());
      for (size_t i = 0; i < logits.size(); ++i) logits_bf16[i] = to_bf16(logits[i]);
      data = logits_bf16.data();
    }
    sampler->sample(data, batch, rows, (uint64_t)s, sampled.data());
    sampling_s += seconds_since(t0);
    if (!apply_stop_rule(sampled.data(), rows.max_tokens, opt.eos, &stop, &r.tokens[s * batch]))
      throw std::runtime_error("the sampler rejected a row (token -1)");
    input.assign(&r.tokens[s * batch], &r.tokens[s * batch] + batch);
  }
  r.elapsed_s = seconds_since(t_start);
  r.forward_us_per_step = forward_s * 1e6 / (double)opt.steps;
  r.sampling_us_per_step = sampling_s * 1e6 / (double)opt.steps;
  tally_stops(opt, rows, &r);
  return r;
}

}  // namespace

int run_cpu_variant(const Options& in) {
  Options opt = in;
  if (!opt.vocab_set) opt.vocab = 32000;
  if (!opt.hidden_set) opt.hidden = 256;
  if (!opt.layers_set) opt.layers = 2;
  if (!opt.batches_set) opt.batches = {1, 4};
  if (!opt.steps_set) opt.steps = 16;
  const int64_t ffn = opt.ffn ? opt.ffn : 2 * opt.hidden;
  if (opt.eos < 0 || opt.eos >= opt.vocab) {
    std::fprintf(stderr, "tokensift_decode: --eos %d is outside the vocabulary\n", opt.eos);
    return 2;
  }
  std::printf(
      "tokensift_decode: no GPU in use: running mode 1 (ds4 style) with a CPU-computed model "
      "(vocab %lld, hidden %lld, ffn %lld, %lld layers) and tokensift's CPU backend.\n"
      "  On a GPU the same program runs the %lld-token engine in all three modes.\n",
      (long long)opt.vocab, (long long)opt.hidden, (long long)ffn, (long long)opt.layers,
      129280LL);
  try {
    const CpuModel model(opt.vocab, opt.hidden, ffn, opt.layers, opt.logit_std, opt.seed);
    std::vector<RunRecord> records;
    bool ok = true;
    for (int64_t batch : opt.batches) {
      const RowSetup rows = make_rows(opt, batch);
      HostSampler ts(HostSampler::Kind::kTokensift, opt.cpu_threads, batch, opt.vocab, opt.logits);
      RunRecord a = run_cpu_loop(opt, model, rows, batch, &ts);
      print_record(a);
      if (opt.check) {
        // Same seeds, different thread count: the contract says the tokens
        // cannot change.
        const int other_threads = ts.threads() == 1 ? 2 : 1;
        HostSampler ts2(HostSampler::Kind::kTokensift, other_threads, batch, opt.vocab, opt.logits);
        RunRecord b = run_cpu_loop(opt, model, rows, batch, &ts2);
        const int64_t i = first_mismatch(a.tokens, b.tokens);
        if (i >= 0) {
          std::printf("  MISMATCH B=%lld step %lld row %lld: %d (threads %d) vs %d (threads %d)\n",
                      (long long)batch, (long long)(i / batch), (long long)(i % batch), a.tokens[i],
                      ts.threads(), b.tokens[i], other_threads);
          ok = false;
        } else {
          std::printf("  check B=%lld: %lld tokens identical across two runs (threads %d vs %d)\n",
                      (long long)batch, (long long)a.tokens.size(), ts.threads(), other_threads);
        }
      }
      records.push_back(a);
      bool want_naive = false;
      for (const auto& m : opt.modes) want_naive |= m == "ds4-naive";
      if (want_naive) {
        HostSampler naive(HostSampler::Kind::kNaive, opt.cpu_threads, batch, opt.vocab, opt.logits);
        RunRecord n = run_cpu_loop(opt, model, rows, batch, &naive);
        n.mode = "ds4-naive";
        print_record(n);
        int64_t same = 0;
        for (size_t i = 0; i < n.tokens.size(); ++i) same += n.tokens[i] == a.tokens[i];
        std::printf("  (naive full-sort sampler agrees with tokensift on %lld of %lld tokens; "
                    "it is a cost reference, not an oracle)\n",
                    (long long)same, (long long)n.tokens.size());
        records.push_back(std::move(n));
      }
    }
    ReportHeader h;
    h.gpu = "none (CPU model)";
    h.commit = opt.commit;
    h.command = opt.command;
    h.model = "cpu";
    h.vocab = opt.vocab;
    h.hidden = opt.hidden;
    h.ffn = ffn;
    h.layers = opt.layers;
    h.logits_dtype = opt.logits == LogitsType::kF32 ? "f32" : "bf16";
    if (!opt.json_path.empty()) write_json(opt.json_path, h, records);
    if (!opt.md_path.empty()) write_markdown(opt.md_path, h, records);
    if (opt.check) std::printf(ok ? "CHECK PASSED\n" : "CHECK FAILED\n");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tokensift_decode: %s\n", e.what());
    return 1;
  }
}

}  // namespace decode
