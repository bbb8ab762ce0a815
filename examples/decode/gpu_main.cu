// GPU entry: builds the engine once, runs every mode per batch size, checks
// that the modes agree token for token, and writes the report.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <stdexcept>

#include "gpu_entry.hpp"
#include "gpu_loops.cuh"

namespace decode {
namespace {

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { DECODE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s) cudaStreamDestroy(s);
  }
};

bool is_sampler_mode(const std::string& m) { return m == "ds4" || m == "eager" || m == "graphed"; }

// Compares every contract-bound mode with the first one; the naive sampler is
// only reported (it does not promise the contract's ties and top-p bands).
bool compare_modes(const std::vector<RunRecord>& rs, int64_t batch) {
  const RunRecord* ref = nullptr;
  for (const auto& r : rs)
    if (is_sampler_mode(r.mode)) {
      ref = &r;
      break;
    }
  if (!ref) return true;
  bool ok = true;
  for (const auto& r : rs) {
    if (&r == ref) continue;
    if (!is_sampler_mode(r.mode)) {
      int64_t same = 0;
      for (size_t i = 0; i < r.tokens.size(); ++i) same += r.tokens[i] == ref->tokens[i];
      std::printf("  B=%lld: %s agrees with %s on %lld of %lld tokens (cost reference, not checked)\n",
                  (long long)batch, r.sampler.c_str(), ref->mode.c_str(), (long long)same,
                  (long long)r.tokens.size());
      continue;
    }
    const int64_t i = first_mismatch(ref->tokens, r.tokens);
    if (i < 0) {
      std::printf("  B=%lld: %s == %s on all %lld tokens\n", (long long)batch, r.mode.c_str(),
                  ref->mode.c_str(), (long long)r.tokens.size());
    } else {
      ok = false;
      std::printf("  B=%lld: MISMATCH %s vs %s at step %lld row %lld: %d vs %d\n", (long long)batch,
                  r.mode.c_str(), ref->mode.c_str(), (long long)(i / batch),
                  (long long)(i % batch), r.tokens[i], ref->tokens[i]);
    }
  }
  return ok;
}

}  // namespace

int gpu_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

int run_gpu_variant(const Options& opt) {
  try {
    if (!tokensift::backend_available(tokensift::Backend::kCuda)) {
      std::fprintf(stderr,
                   "tokensift_decode: a CUDA device is present but tokensift's CUDA backend is not "
                   "available (%s)\n",
                   tokensift::last_error_message());
      return 1;
    }
    DECODE_CUDA(cudaSetDevice(0));
    cudaDeviceProp prop;
    DECODE_CUDA(cudaGetDeviceProperties(&prop, 0));
    const int64_t ffn = opt.ffn ? opt.ffn : 2 * opt.hidden;
    if (opt.eos < 0 || opt.eos >= opt.vocab) throw std::runtime_error("--eos is outside the vocabulary");
    const int64_t max_batch = *std::max_element(opt.batches.begin(), opt.batches.end());
    std::printf(
        "tokensift_decode on %s: vocab %lld, hidden %lld, ffn %lld, %lld layers, %s logits, "
        "%lld steps, graphs of %lld steps\n",
        prop.name, (long long)opt.vocab, (long long)opt.hidden, (long long)ffn,
        (long long)opt.layers, opt.logits == LogitsType::kF32 ? "f32" : "bf16",
        (long long)opt.steps, (long long)opt.graph_steps);
    std::fflush(stdout);

    Stream stream;
    GpuModel model({opt.vocab, opt.hidden, ffn, opt.layers, max_batch, opt.logit_std, opt.seed,
                    opt.logits});
    model.bind(stream.s);

    std::vector<RunRecord> records;
    bool ok = true, failed = false;
    for (int64_t batch : opt.batches) {
      const RowSetup rows = make_rows(opt, batch);
      GpuBatch gb(opt, &model, stream.s, rows, batch);
      // These loops also warm cuBLAS and the sampler before any timed run.
      const double forward_us = gb.time_forward_us();
      double sampler_us = -1;
      try {
        sampler_us = gb.time_sampler_us();
      } catch (const std::exception& e) {
        std::printf("  B=%lld: timing the CUDA sampler FAILED: %s\n", (long long)batch, e.what());
        failed = true;
      }
      std::vector<RunRecord> these;
      for (const auto& mode : opt.modes) {
        RunRecord r;
        // A mode that fails is reported and the others still run, so one
        // broken path does not hide the rest of the measurement.
        try {
          if (mode == "eager" || mode == "graphed") {
            r = mode == "eager" ? gb.run_eager() : gb.run_graphed();
            r.sampling_us_per_step = sampler_us;
          } else {
            HostSampler host(mode == "ds4" ? HostSampler::Kind::kTokensift
                                           : HostSampler::Kind::kNaive,
                             opt.cpu_threads, batch, opt.vocab, opt.logits);
            r = gb.run_ds4(&host);
          }
        } catch (const std::exception& e) {
          std::printf("  %-9s B=%-4lld FAILED: %s\n", mode.c_str(), (long long)batch, e.what());
          std::fflush(stdout);
          failed = true;
          continue;
        }
        r.forward_us_per_step = forward_us;
        tally_stops(opt, rows, &r);
        print_record(r);
        these.push_back(std::move(r));
      }
      ok &= compare_modes(these, batch);
      for (auto& r : these) records.push_back(std::move(r));
    }

    std::printf("summary:\n");
    for (const std::string& line : savings_summary(records)) std::printf("  %s\n", line.c_str());
    ReportHeader h;
    h.gpu = prop.name;
    h.commit = opt.commit;
    h.command = opt.command;
    h.model = "gpu";
    h.vocab = opt.vocab;
    h.hidden = opt.hidden;
    h.ffn = ffn;
    h.layers = opt.layers;
    h.logits_dtype = opt.logits == LogitsType::kF32 ? "f32" : "bf16";
    if (!opt.json_path.empty()) write_json(opt.json_path, h, records);
    if (!opt.md_path.empty()) write_markdown(opt.md_path, h, records);
    if (failed) std::printf("FAILED: at least one mode did not run (see above)\n");
    if (opt.check) std::printf(ok && !failed ? "CHECK PASSED\n" : "CHECK FAILED\n");
    else if (!ok) std::printf("WARNING: the modes disagree (run with --check to fail on this)\n");
    if (failed) return 1;
    return ok || !opt.check ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tokensift_decode: %s\n", e.what());
    return 1;
  }
}

}  // namespace decode
