// Shared pieces of the decode demo: options, per-row state, stop rule, run records.
//
// Everything here is host-only C++ so that the CPU-only build compiles it; the
// CUDA side (gpu_*.cu) mirrors the stop rule in finalize_kernel and must stay
// in step with apply_stop_rule below.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace decode {

enum class RowParams : int32_t { kUniform, kMixed };
enum class LogitsType : int32_t { kF32, kBF16 };

struct Options {
  std::string device = "auto";  // auto | cpu | gpu
  std::vector<std::string> modes = {"ds4", "ds4-naive", "eager", "graphed"};
  std::vector<int64_t> batches = {1, 8, 64, 256};
  int64_t steps = 64;
  // Model shape; the defaults are the GPU model, the CPU variant overrides
  // hidden / vocab / layers unless they were given on the command line.
  int64_t vocab = 129280;
  int64_t hidden = 4096;
  int64_t ffn = 0;  // 0: 2 * hidden (SwiGLU, gate and up projections)
  int64_t layers = 4;
  bool vocab_set = false, hidden_set = false, layers_set = false, batches_set = false,
       steps_set = false;
  float logit_std = 3.0f;  // scale of the LM head's output on unit-RMS inputs
  LogitsType logits = LogitsType::kF32;
  // Sampling.
  RowParams row_params = RowParams::kUniform;
  float temperature = 0.8f;
  float top_p = 0.95f;
  float min_p = 0.0f;
  int32_t top_k = 0;
  std::string algo = "auto";  // CUDA sampler algo: auto | pivot | sort
  int cpu_threads = 0;        // tokensift CPU backend and the naive sampler; 0 = all cores
  uint64_t seed = 20261129;
  // Stop conditions.
  int32_t eos = 1;             // DeepSeek's end-of-sentence id; finished rows keep emitting it
  float eos_bias = 0.0f;       // added to the EOS logit so that rows actually stop in a demo
  int32_t max_tokens_spread = 0;  // row r stops after steps - (r*13 % (spread+1)) tokens
  // Mode 3.
  int64_t graph_steps = 4;  // decode steps captured per CUDA graph
  int64_t ring_slots = 0;   // 0: one slot per step (the host never has to wait)
  // Measurement / output.
  int timing_reps = 20;
  bool check = false;
  std::string json_path, md_path, commit, command;
};

// Parses argv; prints usage and exits on --help or a bad flag.
Options parse_options(int argc, char** argv);

// The per-row inputs every mode starts from.
struct RowSetup {
  std::vector<int32_t> first_tokens;  // the "prompt": one token per row
  std::vector<uint64_t> seeds;
  std::vector<int32_t> max_tokens;
  std::vector<float> temperature, top_p, min_p;
  std::vector<int32_t> top_k;
};
RowSetup make_rows(const Options& opt, int64_t batch);

// Stop state of every row, the host twin of the device finalize kernel.
struct StopState {
  std::vector<int32_t> finished, generated;
  explicit StopState(int64_t batch) : finished(batch, 0), generated(batch, 0) {}
};

// Turns sampled tokens into emitted tokens: a finished row emits eos; a live
// row emits its sample and finishes on eos or when it reaches max_tokens.
// Returns false when a sampled token is negative (a row the sampler rejected);
// that row then emits eos and finishes.
bool apply_stop_rule(const int32_t* sampled, const std::vector<int32_t>& max_tokens, int32_t eos,
                     StopState* state, int32_t* emitted);

// One measured run of one mode at one batch size.
struct RunRecord {
  std::string mode, sampler;
  int64_t batch = 0, steps = 0;
  double elapsed_s = 0;             // first launch to the last token readable on the host
  double forward_us_per_step = -1;  // the model alone (events), -1 when not measured
  double sampling_us_per_step = -1;
  double copy_us_per_step = -1;     // ds4 only: the logits D2H copy
  uint64_t d2h_bytes = 0, h2d_bytes = 0;
  uint64_t host_syncs = 0;          // every synchronising call in the run
  uint64_t host_syncs_in_loop = 0;  // those inside the decode loop (steady state)
  std::vector<int32_t> tokens;      // steps x batch, emitted tokens
  int64_t rows_finished_eos = 0, rows_finished_max = 0;
};

struct ReportHeader {
  std::string gpu, commit, command, model;
  int64_t vocab = 0, hidden = 0, ffn = 0, layers = 0;
  std::string logits_dtype;
};

void write_json(const std::string& path, const ReportHeader& header,
                const std::vector<RunRecord>& records);
void write_markdown(const std::string& path, const ReportHeader& header,
                    const std::vector<RunRecord>& records);
void print_record(const RunRecord& r);
// One line per batch size: what the graphed loop saves against each ds4 loop.
std::vector<std::string> savings_summary(const std::vector<RunRecord>& records);

// Counts rows that stopped on eos vs max tokens, from the emitted tokens.
void tally_stops(const Options& opt, const RowSetup& rows, RunRecord* r);

// First difference between two token histories, or -1 when equal.
int64_t first_mismatch(const std::vector<int32_t>& a, const std::vector<int32_t>& b);

}  // namespace decode
