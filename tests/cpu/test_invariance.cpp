// A row's result depends only on its own logits, parameters, seed and offset
// (docs/semantics.md, "Rows are independent"): not on repetition, batch size,
// position in the batch, neighbouring rows, thread count, how parameters are
// passed, or workspace reuse.  Everything is compared bit for bit, logprob
// included.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cpu_harness.hpp"
#include "generators.hpp"

namespace ts = tokensift;
using namespace tokensift::testing;

namespace {

const ts::Algo kAlgos[] = {ts::Algo::kAuto, ts::Algo::kPivot, ts::Algo::kSort};

// Row r of a against row s of b, every output bit for bit.
void expect_same_row(const BatchResult& a, int64_t r, const BatchResult& b, int64_t s, const std::string& what) {
  EXPECT_EQ(a.row_status[(size_t)r], b.row_status[(size_t)s]) << what;
  EXPECT_EQ(a.tokens[(size_t)r], b.tokens[(size_t)s]) << what;
  EXPECT_EQ(a.kept[(size_t)r], b.kept[(size_t)s]) << what;
  uint32_t la, lb;
  std::memcpy(&la, &a.logprobs[(size_t)r], 4);
  std::memcpy(&lb, &b.logprobs[(size_t)s], 4);
  EXPECT_EQ(la, lb) << what << " logprob " << a.logprobs[(size_t)r] << " vs " << b.logprobs[(size_t)s];
}

void expect_same_batch(const BatchResult& a, const BatchResult& b, const std::string& what) {
  ASSERT_EQ(a.status, ts::Status::kOk) << a.error;
  ASSERT_EQ(b.status, ts::Status::kOk) << b.error;
  ASSERT_EQ(a.tokens.size(), b.tokens.size());
  for (size_t r = 0; r < a.tokens.size(); ++r) expect_same_row(a, (int64_t)r, b, (int64_t)r, what + " row " + std::to_string(r));
}

// Copies row `src_row` of `src` (values and parameters) into row `dst_row` of `dst`.
void copy_row(const HostBatch& src, int64_t src_row, HostBatch& dst, int64_t dst_row) {
  dst.set_row(dst_row, src.row(src_row));
  dst.set_params(dst_row, src.params(src_row));
  dst.dist[(size_t)dst_row] = src.dist[(size_t)src_row];
}

}  // namespace

TEST(Invariance, SameInputsSameOutputs) {
  for (int64_t v : {7, 1000, 151936}) {
    for (ts::DType d : {ts::DType::kF32, ts::DType::kBF16, ts::DType::kF16}) {
      const HostBatch b = make_batch(v > 10000 ? 6 : 300, v, d, 77 + (uint64_t)v + (uint64_t)d);
      for (ts::Algo algo : kAlgos) {
        expect_same_batch(run_cpu(b, algo), run_cpu(b, algo), "repeat V=" + std::to_string(v));
      }
    }
  }
}

TEST(Invariance, RowAloneEqualsRowInAnyBatch) {
  for (int64_t v : {3, 1000, 32000}) {
    for (ts::DType d : {ts::DType::kF32, ts::DType::kBF16, ts::DType::kF16}) {
      // Targets: the rows of a small batch, each alone, then inside batches of
      // other sizes at the front, the middle and the back.
      const HostBatch targets = make_batch(v > 10000 ? 4 : 40, v, d, 500 + (uint64_t)v * 3 + (uint64_t)d);
      for (ts::Algo algo : kAlgos) {
        for (int64_t t = 0; t < targets.rows; ++t) {
          HostBatch alone(1, v, v, d);
          copy_row(targets, t, alone, 0);
          const BatchResult ref = run_cpu(alone, algo);
          ASSERT_EQ(ref.status, ts::Status::kOk) << ref.error;
          for (int64_t size : {2, 7, 64}) {
            if (v > 10000 && size > 7) continue;
            HostBatch batch = make_batch(size, v, d, 900 + (uint64_t)(t * 131 + size));
            for (int64_t pos : {(int64_t)0, size / 2, size - 1}) {
              HostBatch trial = batch;
              copy_row(targets, t, trial, pos);
              const BatchResult got = run_cpu(trial, algo);
              ASSERT_EQ(got.status, ts::Status::kOk) << got.error;
              expect_same_row(ref, 0, got, pos,
                              "V=" + std::to_string(v) + " target " + std::to_string(t) + " in batch of " +
                                  std::to_string(size) + " at " + std::to_string(pos));
            }
          }
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
  }
}

TEST(Invariance, ThreadCountDoesNotMatter) {
  for (int64_t v : {2, 1000, 129280}) {
    const HostBatch b = make_batch(v > 10000 ? 9 : 500, v, ts::DType::kBF16, 31 + (uint64_t)v);
    for (ts::Algo algo : kAlgos) {
      const BatchResult one = run_cpu(b, algo, 1);
      for (int threads : {2, 3, 8, 0}) {
        expect_same_batch(one, run_cpu(b, algo, threads),
                          "V=" + std::to_string(v) + " threads=" + std::to_string(threads));
      }
    }
  }
}

// Scalar parameters (one value for all rows) and per-row arrays holding the
// same values give the same rows.
TEST(Invariance, ScalarParamsEqualPerRowArrays) {
  BatchOptions o;
  o.random_params = false;
  o.fixed = RowParams{0.7f, 0.02f, 40, 0.9f, 123456789ull, 42};
  const HostBatch b = make_batch(200, 1000, ts::DType::kF32, 8, o);
  ts::SamplingParams scalar;
  scalar.temperature.value = o.fixed.temperature;
  scalar.min_p.value = o.fixed.min_p;
  scalar.top_k.value = o.fixed.top_k;
  scalar.top_p.value = o.fixed.top_p;
  scalar.seed.value = o.fixed.seed;
  scalar.offset.value = o.fixed.offset;
  for (ts::Algo algo : kAlgos) expect_same_batch(run_cpu(b, algo), run_cpu(b.view(), scalar, algo), "scalar params");
}

// "Every call leaves the workspace in the state it found it": one workspace,
// initialised once, serves many calls of different shapes.
TEST(Invariance, WorkspaceReuse) {
  std::unique_ptr<ts::Sampler> sampler;
  ASSERT_EQ(ts::Sampler::create(ts::SamplerConfig{}, &sampler), ts::Status::kOk);
  size_t bytes = 0;
  ASSERT_EQ(sampler->workspace_size(64, 32000, ts::DType::kF32, &bytes), ts::Status::kOk);
  std::vector<unsigned char> ws(bytes + 1);
  ASSERT_EQ(sampler->workspace_init(ws.data(), bytes), ts::Status::kOk);
  for (int round = 0; round < 3; ++round) {
    for (int64_t v : {32000, 1000, 7}) {
      const HostBatch b = make_batch(v == 32000 ? 64 : 64, v, ts::DType::kF32, 64 + (uint64_t)v);
      size_t need = 0;
      ASSERT_EQ(sampler->workspace_size(b.rows, v, b.dtype, &need), ts::Status::kOk);
      ASSERT_LE(need, bytes) << "a smaller shape must not need more workspace";
      BatchResult got;
      got.tokens.assign(64, -1);
      got.row_status.assign(64, -1);
      got.kept.assign(64, -1);
      got.logprobs.assign(64, 0.0f);
      ts::SampleOutputs o{got.tokens.data(), got.row_status.data(), got.logprobs.data(), got.kept.data()};
      got.status = sampler->sample(b.view(), b.sampling_params(), o, bytes ? ws.data() : nullptr, bytes);
      expect_same_batch(run_cpu(b), got, "reused workspace round " + std::to_string(round));
    }
  }
}

// Outputs that are not requested are not needed: tokens alone give the same tokens.
TEST(Invariance, OptionalOutputsDoNotChangeTokens) {
  const HostBatch b = make_batch(300, 1000, ts::DType::kF16, 99);
  const BatchResult full = run_cpu(b);
  ASSERT_EQ(full.status, ts::Status::kOk) << full.error;
  std::unique_ptr<ts::Sampler> sampler;
  ASSERT_EQ(ts::Sampler::create(ts::SamplerConfig{}, &sampler), ts::Status::kOk);
  size_t bytes = 0;
  ASSERT_EQ(sampler->workspace_size(b.rows, b.vocab, b.dtype, &bytes), ts::Status::kOk);
  std::vector<unsigned char> ws(bytes + 1);
  ASSERT_EQ(sampler->workspace_init(ws.data(), bytes), ts::Status::kOk);
  std::vector<int32_t> tokens((size_t)b.rows, -5);
  ts::SampleOutputs o;
  o.tokens = tokens.data();
  ASSERT_EQ(sampler->sample(b.view(), b.sampling_params(), o, bytes ? ws.data() : nullptr, bytes), ts::Status::kOk);
  for (size_t r = 0; r < tokens.size(); ++r) EXPECT_EQ(tokens[r], full.tokens[r]) << "row " << r;
}

// The C ABI and the C++ API are two doors to the same rows.
TEST(Invariance, CAbiEqualsCppApi) {
  for (ts::DType d : {ts::DType::kF32, ts::DType::kBF16, ts::DType::kF16}) {
    const HostBatch b = make_batch(400, 1000, d, 2024 + (uint64_t)d);
    const BatchResult cpp = run_cpu(b);
    ASSERT_EQ(cpp.status, ts::Status::kOk) << cpp.error;

    tokensift_config config;
    tokensift_config_init(&config);
    tokensift_sampler* sampler = nullptr;
    ASSERT_EQ(tokensift_create(&config, &sampler), TOKENSIFT_OK) << tokensift_last_error();
    size_t bytes = 0;
    ASSERT_EQ(tokensift_workspace_size(sampler, b.rows, b.vocab, (tokensift_dtype)b.dtype, &bytes), TOKENSIFT_OK);
    std::vector<unsigned char> ws(bytes + 1);
    ASSERT_EQ(tokensift_workspace_init(sampler, ws.data(), bytes, nullptr), TOKENSIFT_OK);
    const tokensift_logits logits{b.storage.data(), b.rows, b.vocab, b.stride, (tokensift_dtype)b.dtype};
    tokensift_params params;
    tokensift_params_init(&params);
    params.temperature.per_row = b.temperature.data();
    params.min_p.per_row = b.min_p.data();
    params.top_k.per_row = b.top_k.data();
    params.top_p.per_row = b.top_p.data();
    params.seed.per_row = b.seed.data();
    params.offset.per_row = b.offset.data();
    BatchResult c;
    c.tokens.assign((size_t)b.rows, -3);
    c.row_status.assign((size_t)b.rows, -3);
    c.kept.assign((size_t)b.rows, -3);
    c.logprobs.assign((size_t)b.rows, -3.0f);
    const tokensift_outputs outputs{c.tokens.data(), c.row_status.data(), c.logprobs.data(), c.kept.data()};
    c.status = (ts::Status)tokensift_sample(sampler, &logits, &params, &outputs, ws.data(), bytes, nullptr);
    tokensift_destroy(sampler);
    expect_same_batch(cpp, c, std::string("C ABI vs C++ API, ") + dtype_name(d));
  }
}
