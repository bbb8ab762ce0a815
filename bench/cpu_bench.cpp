// cpu_bench: rows/s of the CPU backend on the standard benchmark inputs.
//
// Inputs: every row is N(0, 2^2) logits with 20 tokens boosted by +8..+15 at
// random positions (a peaked head over a wide tail, like an LLM's logits).
// Cases: k50_p0.9, p0.9, k50, minp0.05, plain, greedy; fp32 and bf16; each at
// every requested thread count.  Tokens from every thread count are compared
// with the first (results must not depend on the number of threads).
//
//   cpu_bench [--rows N] [--vocab 129280,151936,262208] [--threads 1,0]
//             [--dtypes f32,bf16 (also f16)] [--cases k50_p0.9,...] [--algo auto|pivot|sort]
//             [--min-time SECONDS] [--logprobs] [--out results.json]
// --threads 0 means all hardware threads.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <time.h>
#include <vector>

#include "tokensift/tokensift.hpp"

namespace {

using namespace tokensift;

struct Case {
  const char* name;
  float temperature, min_p, top_p;
  int32_t top_k;
};
const Case kCases[] = {
    {"k50_p0.9", 1.0f, 0.0f, 0.9f, 50}, {"p0.9", 1.0f, 0.0f, 0.9f, 0},
    {"k50", 1.0f, 0.0f, 1.0f, 50},      {"minp0.05", 1.0f, 0.05f, 1.0f, 0},
    {"plain", 1.0f, 0.0f, 1.0f, 0},     {"greedy", 0.0f, 0.0f, 1.0f, 0},
};

struct Rng {
  uint64_t s;
  uint64_t next() {  // splitmix64
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return ((next() >> 11) + 0.5) * 0x1p-53; }
  double normal() {
    return std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
  }
};

uint16_t to_bf16(float f) {  // round to nearest even (inputs are finite)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

uint16_t to_f16(float f) {  // round to nearest even; the inputs are normal fp16 range
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const float a = std::fabs(f);
  if (a < 6.103515625e-05f) {  // fp16 subnormal or zero: multiples of 2^-24
    return (uint16_t)(sign | (uint32_t)std::nearbyint(a * 16777216.0f));
  }
  uint32_t m = u & 0x7fffffffu;
  m = m + 0xfffu + ((m >> 13) & 1u);  // round the 13 dropped bits to nearest even
  return (uint16_t)(sign | ((m - 0x38000000u) >> 13));
}

std::vector<float> make_logits(int64_t rows, int64_t vocab, uint64_t seed) {
  Rng rng{seed};
  std::vector<float> x((size_t)(rows * vocab));
  for (auto& v : x) v = (float)(2.0 * rng.normal());
  for (int64_t r = 0; r < rows; ++r)
    for (int j = 0; j < 20; ++j)
      x[(size_t)(r * vocab + (int64_t)(rng.next() % (uint64_t)vocab))] += (float)(8.0 + 7.0 * rng.uniform());
  return x;
}

std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::atoll(item.c_str()));
  return out;
}
std::vector<std::string> parse_names(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

// CPU time of the whole process: on a shared machine, wall time also counts the
// time other processes held our cores; CPU time per row does not.
double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void check(Status st, const char* what) {
  if (st != Status::kOk) {
    std::fprintf(stderr, "%s failed: %s (%s)\n", what, status_string(st), last_error_message());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int64_t rows = 64;
  std::vector<int64_t> vocabs{129280, 151936, 262208};
  std::vector<int64_t> threads{1, 0};
  std::vector<std::string> dtypes{"f32", "bf16"};
  std::vector<std::string> cases;
  for (const Case& c : kCases) cases.push_back(c.name);
  std::string algo_name = "auto", out_path;
  double min_time = 0.5;
  bool logprobs = false;  // also request the logprob output
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--rows") rows = std::atoll(v), ++i;
    else if (a == "--vocab") vocabs = parse_list(v), ++i;
    else if (a == "--threads") threads = parse_list(v), ++i;
    else if (a == "--dtypes") dtypes = parse_names(v), ++i;
    else if (a == "--cases") cases = parse_names(v), ++i;
    else if (a == "--algo") algo_name = v, ++i;
    else if (a == "--min-time") min_time = std::atof(v), ++i;
    else if (a == "--out") out_path = v, ++i;
    else if (a == "--logprobs") logprobs = true;
    else {
      std::fprintf(stderr, "usage: see the comment at the top of bench/cpu_bench.cpp\n");
      return 2;
    }
  }
  const Algo algo = algo_name == "sort" ? Algo::kSort : algo_name == "pivot" ? Algo::kPivot : Algo::kAuto;
  const int hw = (int)std::max(1u, std::thread::hardware_concurrency());

  std::string json = "{\n  \"bench\": \"cpu\",\n  \"algo\": \"" + algo_name +
                     "\",\n  \"rows\": " + std::to_string(rows) +
                     ",\n  \"logprobs\": " + (logprobs ? "true" : "false") +
                     ",\n  \"hardware_threads\": " + std::to_string(hw) + ",\n  \"results\": [";
  bool first_json = true;
  std::printf("| vocab | dtype | case | threads | rows/s | us/row | cpu us/row | mean kept |\n");
  std::printf("|---:|---|---|---:|---:|---:|---:|---:|\n");
  int mismatches = 0;
  for (int64_t vocab : vocabs) {
    const std::vector<float> x = make_logits(rows, vocab, 0x5eed0000u + (uint64_t)vocab);
    std::vector<uint16_t> xb(x.size()), xh(x.size());
    for (size_t i = 0; i < x.size(); ++i) xb[i] = to_bf16(x[i]), xh[i] = to_f16(x[i]);
    std::vector<uint64_t> seeds((size_t)rows);
    for (int64_t r = 0; r < rows; ++r) seeds[(size_t)r] = 1000 + (uint64_t)r;
    for (const std::string& dt : dtypes) {
      LogitsView view;
      view.rows = rows;
      view.vocab = vocab;
      view.row_stride = vocab;
      view.dtype = dt == "bf16" ? DType::kBF16 : dt == "f16" ? DType::kF16 : DType::kF32;
      view.data = dt == "bf16"  ? (const void*)xb.data()
                  : dt == "f16" ? (const void*)xh.data()
                                : (const void*)x.data();
      for (const std::string& cname : cases) {
        const Case* c = nullptr;
        for (const Case& k : kCases)
          if (cname == k.name) c = &k;
        if (!c) {
          std::fprintf(stderr, "unknown case %s\n", cname.c_str());
          return 2;
        }
        SamplingParams p;
        p.temperature.value = c->temperature;
        p.min_p.value = c->min_p;
        p.top_k.value = c->top_k;
        p.top_p.value = c->top_p;
        p.seed.per_row = seeds.data();
        std::vector<int32_t> first_tokens;
        for (int64_t t : threads) {
          SamplerConfig cfg;
          cfg.algo = algo;
          cfg.num_threads = (int)(t == 0 ? hw : t);
          std::unique_ptr<Sampler> s;
          check(Sampler::create(cfg, &s), "create");
          size_t bytes = 0;
          check(s->workspace_size(rows, vocab, view.dtype, &bytes), "workspace_size");
          std::vector<unsigned char> ws(bytes);
          check(s->workspace_init(ws.data(), bytes), "workspace_init");
          std::vector<int32_t> tokens((size_t)rows), kept((size_t)rows);
          std::vector<float> lp((size_t)rows);
          SampleOutputs o;
          o.tokens = tokens.data();
          o.kept_counts = kept.data();
          if (logprobs) o.logprobs = lp.data();
          check(s->sample(view, p, o, ws.data(), bytes), "sample");  // warm-up
          if (first_tokens.empty()) first_tokens = tokens;
          else if (tokens != first_tokens) {
            ++mismatches;
            std::fprintf(stderr, "MISMATCH: tokens differ between thread counts (V=%lld %s %s)\n",
                         (long long)vocab, dt.c_str(), c->name);
          }
          int64_t iters = 0;
          const auto t0 = std::chrono::steady_clock::now();
          const double cpu0 = process_cpu_seconds();
          double elapsed = 0.0;
          do {
            check(s->sample(view, p, o, ws.data(), bytes), "sample");
            ++iters;
            elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          } while (elapsed < min_time);
          const double rps = (double)(rows * iters) / elapsed;
          const double cpu_us = 1e6 * (process_cpu_seconds() - cpu0) / (double)(rows * iters);
          double mean_kept = 0.0;
          for (int32_t k : kept) mean_kept += k;
          mean_kept /= (double)rows;
          std::printf("| %lld | %s | %s | %d | %.0f | %.1f | %.1f | %.1f |\n", (long long)vocab,
                      dt.c_str(), c->name, cfg.num_threads, rps, 1e6 / rps, cpu_us, mean_kept);
          std::fflush(stdout);
          char rec[512];
          std::snprintf(rec, sizeof rec,
                        "%s\n    {\"vocab\": %lld, \"dtype\": \"%s\", \"case\": \"%s\", "
                        "\"threads\": %d, \"rows_per_s\": %.1f, \"us_per_row\": %.3f, "
                        "\"cpu_us_per_row\": %.3f, \"mean_kept\": %.2f, \"iters\": %lld}",
                        first_json ? "" : ",", (long long)vocab, dt.c_str(), c->name,
                        cfg.num_threads, rps, 1e6 / rps, cpu_us, mean_kept, (long long)iters);
          json += rec;
          first_json = false;
        }
      }
    }
  }
  json += "\n  ],\n  \"thread_count_mismatches\": " + std::to_string(mismatches) + "\n}\n";
  if (!out_path.empty()) {
    FILE* f = std::fopen(out_path.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", out_path.c_str());
      return 1;
    }
    std::fputs(json.c_str(), f);
    std::fclose(f);
  }
  return mismatches ? 1 : 0;
}
