// Dev tool (not part of the library): the row-CTA kernel's first tau
// replayed on the CPU, for one row of dev/probe_rows.hpp's dominant rows
// (N(0, 1), one token at 30; std::mt19937_64 seeded 4321, as the traces
// draw them), so that a row the trace shows streamed twice can be checked
// without the GPU (perf-notes v79 / v80).  The fit as rowcta_first_tau
// takes it: one 16-byte vector per thread (fp32: 4 logits) at vector
// t * nvec / threads, mean and variance of the sample, again without the
// samples beyond 5 sigma, then tau = mean + sigma * Phi^-1(1 - aim / V).
//   g++ -O2 dev/rowcta_fit_replay.cpp -o /tmp/replay
//   /tmp/replay V row aim [threads=256]     e.g. /tmp/replay 262208 115 128
// prints the fits, tau, how many logits reach it (fewer than k = 50: the
// kernel streams the row twice) and the row's 50th and aim-th logits.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

// The standard normal quantile by bisection on erfc (the kernel uses
// normcdfinvf; both agree far below the fit's own error).
static double normal_quantile(double p) {
  double lo = -12, hi = 12;
  for (int i = 0; i < 200; ++i) {
    const double m = 0.5 * (lo + hi);
    if (0.5 * std::erfc(-m / std::sqrt(2.0)) < p) lo = m;
    else hi = m;
  }
  return 0.5 * (lo + hi);
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s V row aim [threads]\n", argv[0]);
    return 2;
  }
  const int64_t V = std::atoll(argv[1]);
  const int row = std::atoi(argv[2]), aim = std::atoi(argv[3]);
  const int threads = argc > 4 ? std::atoi(argv[4]) : 256;
  std::mt19937_64 gen(4321);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x((size_t)V);
  for (int r = 0; r <= row; ++r) {
    for (int64_t i = 0; i < V; ++i) x[(size_t)i] = nd(gen);
    x[(size_t)(gen() % (uint64_t)V)] = 30.0f;
  }
  const int64_t nvec = V / 4;
  std::vector<float> s;
  for (int t = 0; t < threads && t < nvec; ++t) {
    const int64_t v = (int64_t)t * nvec / threads;
    for (int q = 0; q < 4; ++q) s.push_back(x[(size_t)(v * 4 + q)]);
  }
  float bound = INFINITY, mean = 0, var = 0;
  for (int fit = 0; fit < 2; ++fit) {
    int n = 0;
    float sum = 0, sq = 0;
    for (float z : s)
      if (z <= bound) ++n, sum += z, sq += z * z;
    mean = sum / (float)n;
    var = sq / (float)n - mean * mean;
    bound = mean + 5.0f * std::sqrt(std::max(var, 0.0f));
    std::printf("fit %d: %d samples, mean %.4f, sigma %.4f, next bound %.3f\n", fit, n, mean, std::sqrt(var), bound);
  }
  const double tau = mean + std::sqrt(var) * normal_quantile(1.0 - (double)aim / (double)V);
  int64_t reach = 0;
  for (float z : x) reach += z >= tau;
  std::vector<float> sorted(x);
  std::sort(sorted.begin(), sorted.end(), std::greater<float>());
  std::printf("tau %.4f: %lld logits at or above it; the row's 50th %.4f, %d-th %.4f\n", tau, (long long)reach,
              sorted[49], aim, sorted[(size_t)std::min<int64_t>(aim, V) - 1]);
  return 0;
}
