// Full-sort CPU sampler (the status quo the demo measures against).
#include "naive_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "tokensift/contract.h"

namespace decode {
namespace {

float widen(const void* data, LogitsType dtype, int64_t i) {
  if (dtype == LogitsType::kF32) return static_cast<const float*>(data)[i];
  uint32_t bits = (uint32_t) static_cast<const uint16_t*>(data)[i] << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

int32_t sample_row(const NaiveSampleArgs& a, int64_t row, std::vector<std::pair<float, int32_t>>* buf,
                   std::vector<double>* cum) {
  const int64_t v = a.vocab;
  const char* base = static_cast<const char*>(a.logits) +
                     row * v * (a.dtype == LogitsType::kF32 ? 4 : 2);
  const float t = a.temperature[row];
  const bool greedy = tokensift::contract::is_greedy_temperature(t);
  auto& z = *buf;
  z.resize(v);
  for (int64_t i = 0; i < v; ++i) {
    const float x = widen(base, a.dtype, i);
    if (std::isnan(x) || x == INFINITY) return -1;
    z[i] = {greedy ? x : x / t, (int32_t)i};
  }
  // The whole point of this sampler: sort everything, every step.
  std::sort(z.begin(), z.end(), [](const auto& p, const auto& q) {
    return p.first > q.first || (p.first == q.first && p.second < q.second);
  });
  if (z[0].first == -INFINITY) return -1;
  if (greedy) return z[0].second;
  int64_t kept = v;
  while (kept > 0 && z[kept - 1].first == -INFINITY) --kept;
  const float z_max = z[0].first;
  if (a.min_p[row] > 0.0f) {
    const double ln_min_p = std::log((double)a.min_p[row]);
    int64_t m = 0;
    while (m < kept && (double)(z[m].first - z_max) >= ln_min_p) ++m;
    kept = std::max<int64_t>(m, 1);
  }
  if (a.top_k[row] > 0 && a.top_k[row] < kept) kept = a.top_k[row];
  if (a.top_p[row] < 1.0f) {
    cum->resize(kept);
    double total = 0;
    for (int64_t j = 0; j < kept; ++j) {
      total += std::exp((double)z[j].first - (double)z_max);
      (*cum)[j] = total;
    }
    const double target = (double)a.top_p[row] * total;
    int64_t m = 0;
    while (m < kept - 1 && (*cum)[m] < target) ++m;
    kept = m + 1;
  }
  // Exponential race over the kept prefix with the contract's random bits.
  int32_t best = z[0].second;
  float best_score = -INFINITY;
  for (int64_t j = 0; j < kept; ++j) {
    const float s = tokensift::contract::race_score(z[j].first, a.seeds[row], a.offset,
                                                    (uint32_t)z[j].second);
    if (s > best_score || (s == best_score && z[j].second < best)) {
      best_score = s;
      best = z[j].second;
    }
  }
  return best;
}

}  // namespace

void naive_sample(const NaiveSampleArgs& a) {
  int threads = a.threads > 0 ? a.threads : (int)std::thread::hardware_concurrency();
  threads = (int)std::max<int64_t>(1, std::min<int64_t>(threads, a.rows));
  auto work = [&a, threads](int tid) {
    std::vector<std::pair<float, int32_t>> buf;
    std::vector<double> cum;
    for (int64_t r = tid; r < a.rows; r += threads) a.tokens[r] = sample_row(a, r, &buf, &cum);
  };
  if (threads == 1) {
    work(0);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& th : pool) th.join();
}

}  // namespace decode
