// Options, per-row setup and the host stop rule of the decode demo.
#include "decode_common.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace decode {
namespace {

void usage(const char* argv0) {
  std::printf(
      "usage: %s [flags]\n"
      "  --device auto|cpu|gpu     auto: the GPU engine when a device is present, else the CPU model\n"
      "  --modes LIST              comma list of ds4,ds4-naive,eager,graphed (default all)\n"
      "  --batch LIST              batch sizes (GPU default 1,8,64,256; CPU model 1,4)\n"
      "  --steps N                 decode steps per run (GPU default 64; CPU model 16)\n"
      "  --vocab N --hidden N --ffn N --layers N   model shape (GPU default 129280/4096/8192/4;\n"
      "                            CPU model default 32000/256/512/2)\n"
      "  --logit-std X             LM head output scale (default 3)\n"
      "  --logits f32|bf16         logits dtype (default f32)\n"
      "  --params uniform|mixed    one parameter set, or four presets cycled over the rows\n"
      "  --temperature X --top-p X --top-k N --min-p X   uniform parameters\n"
      "  --algo auto|pivot|sort    CUDA sampler algorithm\n"
      "  --cpu-threads N           threads of the CPU samplers (0 = all cores)\n"
      "  --seed N                  base seed (row r uses seed + r)\n"
      "  --eos N --eos-bias X      end token and a bias added to its logit\n"
      "  --max-tokens-spread N     row r stops after steps - (13 r mod (N+1)) tokens\n"
      "  --graph-steps K           decode steps per CUDA graph in mode graphed (default 4)\n"
      "  --ring-slots N            pinned ring size in steps (default: steps)\n"
      "  --timing-reps N           repetitions of the forward / sampler timing loops\n"
      "  --check                   assert identical tokens across modes (exit 1 on mismatch)\n"
      "  --json PATH --out PATH    write the records as JSON and as a markdown table\n"
      "  --commit SHA              recorded in the JSON\n",
      argv0);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

[[noreturn]] void bad(const char* argv0, const std::string& msg) {
  std::fprintf(stderr, "tokensift_decode: %s\n", msg.c_str());
  usage(argv0);
  std::exit(2);
}

int64_t to_i64(const char* argv0, const std::string& flag, const std::string& v) {
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end) bad(argv0, "bad integer for " + flag + ": " + v);
  return x;
}
float to_f32(const char* argv0, const std::string& flag, const std::string& v) {
  char* end = nullptr;
  float x = std::strtof(v.c_str(), &end);
  if (v.empty() || *end) bad(argv0, "bad number for " + flag + ": " + v);
  return x;
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 0; i < argc; ++i) {
    if (i) o.command += ' ';
    o.command += argv[i];
  }
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    const size_t eq = flag.find('=');
    if (eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    if (flag == "--help" || flag == "-h") {
      usage(argv[0]);
      std::exit(0);
    }
    if (flag == "--check") {
      o.check = true;
      continue;
    }
    if (eq == std::string::npos) {
      if (i + 1 >= argc) bad(argv[0], "missing value for " + flag);
      value = argv[++i];
    }
    const char* a0 = argv[0];
    if (flag == "--device") o.device = value;
    else if (flag == "--modes") o.modes = split(value);
    else if (flag == "--batch") {
      o.batches.clear();
      o.batches_set = true;
      for (const auto& b : split(value)) o.batches.push_back(to_i64(a0, flag, b));
    } else if (flag == "--steps") o.steps = to_i64(a0, flag, value), o.steps_set = true;
    else if (flag == "--vocab") o.vocab = to_i64(a0, flag, value), o.vocab_set = true;
    else if (flag == "--hidden") o.hidden = to_i64(a0, flag, value), o.hidden_set = true;
    else if (flag == "--ffn") o.ffn = to_i64(a0, flag, value);
    else if (flag == "--layers") o.layers = to_i64(a0, flag, value), o.layers_set = true;
    else if (flag == "--logit-std") o.logit_std = to_f32(a0, flag, value);
    else if (flag == "--logits") {
      if (value == "f32") o.logits = LogitsType::kF32;
      else if (value == "bf16") o.logits = LogitsType::kBF16;
      else bad(a0, "--logits must be f32 or bf16");
    } else if (flag == "--params") {
      if (value == "uniform") o.row_params = RowParams::kUniform;
      else if (value == "mixed") o.row_params = RowParams::kMixed;
      else bad(a0, "--params must be uniform or mixed");
    } else if (flag == "--temperature") o.temperature = to_f32(a0, flag, value);
    else if (flag == "--top-p") o.top_p = to_f32(a0, flag, value);
    else if (flag == "--min-p") o.min_p = to_f32(a0, flag, value);
    else if (flag == "--top-k") o.top_k = (int32_t)to_i64(a0, flag, value);
    else if (flag == "--algo") o.algo = value;
    else if (flag == "--cpu-threads") o.cpu_threads = (int)to_i64(a0, flag, value);
    else if (flag == "--seed") o.seed = (uint64_t)to_i64(a0, flag, value);
    else if (flag == "--eos") o.eos = (int32_t)to_i64(a0, flag, value);
    else if (flag == "--eos-bias") o.eos_bias = to_f32(a0, flag, value);
    else if (flag == "--max-tokens-spread") o.max_tokens_spread = (int32_t)to_i64(a0, flag, value);
    else if (flag == "--graph-steps") o.graph_steps = to_i64(a0, flag, value);
    else if (flag == "--ring-slots") o.ring_slots = to_i64(a0, flag, value);
    else if (flag == "--timing-reps") o.timing_reps = (int)to_i64(a0, flag, value);
    else if (flag == "--json") o.json_path = value;
    else if (flag == "--out") o.md_path = value;
    else if (flag == "--commit") o.commit = value;
    else bad(a0, "unknown flag " + flag);
  }
  if (o.device != "auto" && o.device != "cpu" && o.device != "gpu") bad(argv[0], "bad --device");
  for (const auto& m : o.modes)
    if (m != "ds4" && m != "ds4-naive" && m != "eager" && m != "graphed")
      bad(argv[0], "unknown mode " + m);
  if (o.algo != "auto" && o.algo != "pivot" && o.algo != "sort") bad(argv[0], "bad --algo");
  if (o.batches.empty() || o.steps < 1 || o.graph_steps < 1 || o.timing_reps < 1)
    bad(argv[0], "batch, steps, graph-steps and timing-reps must be positive");
  for (int64_t b : o.batches)
    if (b < 1) bad(argv[0], "batch sizes must be positive");
  if (o.ffn < 0 || o.max_tokens_spread < 0 || o.ring_slots < 0) bad(argv[0], "negative size");
  return o;
}

RowSetup make_rows(const Options& opt, int64_t batch) {
  RowSetup r;
  r.first_tokens.resize(batch);
  r.seeds.resize(batch);
  r.max_tokens.resize(batch);
  r.temperature.resize(batch);
  r.top_p.resize(batch);
  r.min_p.resize(batch);
  r.top_k.resize(batch);
  for (int64_t b = 0; b < batch; ++b) {
    // Any in-vocabulary token other than eos; spread over the vocabulary.
    int64_t t = (b * 7919 + 17) % opt.vocab;
    if (t == opt.eos) t = (t + 1) % opt.vocab;
    r.first_tokens[b] = (int32_t)t;
    r.seeds[b] = opt.seed + (uint64_t)b;
    r.max_tokens[b] =
        (int32_t)(opt.steps - (opt.max_tokens_spread ? (b * 13) % (opt.max_tokens_spread + 1) : 0));
    if (r.max_tokens[b] < 1) r.max_tokens[b] = 1;
    if (opt.row_params == RowParams::kUniform) {
      r.temperature[b] = opt.temperature;
      r.top_p[b] = opt.top_p;
      r.min_p[b] = opt.min_p;
      r.top_k[b] = opt.top_k;
    } else {
      // Four request types an engine batches together: nucleus, top-k, min-p
      // with nucleus, and greedy.
      switch (b % 4) {
        case 0: r.temperature[b] = 0.8f, r.top_p[b] = 0.95f, r.min_p[b] = 0.0f, r.top_k[b] = 0; break;
        case 1: r.temperature[b] = 1.0f, r.top_p[b] = 1.0f, r.min_p[b] = 0.0f, r.top_k[b] = 50; break;
        case 2: r.temperature[b] = 0.6f, r.top_p[b] = 0.9f, r.min_p[b] = 0.05f, r.top_k[b] = 0; break;
        default: r.temperature[b] = 0.0f, r.top_p[b] = 1.0f, r.min_p[b] = 0.0f, r.top_k[b] = 0; break;
      }
    }
  }
  return r;
}

bool apply_stop_rule(const int32_t* sampled, const std::vector<int32_t>& max_tokens, int32_t eos,
                     StopState* state, int32_t* emitted) {
  bool ok = true;
  const size_t batch = max_tokens.size();
  for (size_t b = 0; b < batch; ++b) {
    int32_t tok = eos;
    if (!state->finished[b]) {
      if (sampled[b] < 0) {
        ok = false;
        state->finished[b] = 1;
      } else {
        tok = sampled[b];
        const int32_t gen = ++state->generated[b];
        if (tok == eos || gen >= max_tokens[b]) state->finished[b] = 1;
      }
    }
    emitted[b] = tok;
  }
  return ok;
}

void tally_stops(const Options& opt, const RowSetup& rows, RunRecord* r) {
  r->rows_finished_eos = r->rows_finished_max = 0;
  for (int64_t b = 0; b < r->batch; ++b) {
    int64_t first_eos = -1;
    for (int64_t s = 0; s < r->steps && first_eos < 0; ++s)
      if (r->tokens[s * r->batch + b] == opt.eos) first_eos = s;
    if (first_eos >= 0 && first_eos + 1 <= rows.max_tokens[b]) ++r->rows_finished_eos;
    else if (r->steps >= rows.max_tokens[b]) ++r->rows_finished_max;
  }
}

int64_t first_mismatch(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return (int64_t)i;
  return -1;
}

}  // namespace decode
