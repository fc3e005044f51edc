//===- RuntimeTest.cpp - the runtime C API against a real model .so -------===//

#include "mcc/Support/TensorIO.h"
#include "mcc/mcc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string env(const char *name) {
  const char *v = std::getenv(name);
  return v ? v : "";
}

class RuntimeTest : public ::testing::Test {
protected:
  void SetUp() override {
    path = env("MCC_TEST_MODEL");
    ASSERT_FALSE(path.empty()) << "MCC_TEST_MODEL is not set";
    ASSERT_EQ(mcc_model_load(path.c_str(), &model), MCC_OK) << mcc_last_error();
    std::string err;
    std::vector<mcc::HostTensor> all;
    ASSERT_TRUE(mcc::readNpz(env("MCC_TEST_INPUTS"), inputs, err)) << err;
    ASSERT_TRUE(mcc::readNpz(env("MCC_TEST_REFERENCE"), reference, err)) << err;
  }
  void TearDown() override { mcc_model_free(model); }

  mcc_tensor tensorOf(mcc::HostTensor &t) {
    mcc_tensor r{};
    r.data = t.data.data();
    r.dtype = t.dtype;
    r.rank = static_cast<int32_t>(t.shape.size());
    for (size_t i = 0; i < t.shape.size(); ++i)
      r.shape[i] = t.shape[i];
    return r;
  }

  /// max|out - ref| / max|ref| for the first output.
  double relError(const float *out) {
    const auto *ref = reinterpret_cast<const float *>(reference[0].data.data());
    double diff = 0, scale = 0;
    for (size_t i = 0; i < reference[0].numElements(); ++i) {
      diff = std::max(diff, (double)std::fabs(out[i] - ref[i]));
      scale = std::max(scale, (double)std::fabs(ref[i]));
    }
    return diff / scale;
  }

  std::string path;
  mcc_model *model = nullptr;
  std::vector<mcc::HostTensor> inputs, reference;
};

TEST_F(RuntimeTest, DescribesSignature) {
  EXPECT_STREQ(mcc_model_target(model), "cpu");
  EXPECT_STRNE(mcc_model_arch(model), "");
  EXPECT_STREQ(mcc_model_precision(model), "fp32"); // cpu models: fp32 only
  EXPECT_STREQ(mcc_model_precision(nullptr), "");
  ASSERT_EQ(mcc_model_num_inputs(model), 1u);
  ASSERT_EQ(mcc_model_num_outputs(model), 1u);
  mcc_tensor_info info;
  ASSERT_EQ(mcc_model_input_info(model, 0, &info), MCC_OK);
  EXPECT_STREQ(info.name, "pixel_values");
  EXPECT_EQ(info.dtype, MCC_FLOAT32);
  ASSERT_EQ(info.rank, 4);
  EXPECT_EQ(info.shape[0], 2);
  EXPECT_EQ(info.shape[1], 3);
  ASSERT_EQ(mcc_model_output_info(model, 0, &info), MCC_OK);
  EXPECT_STREQ(info.name, "logits");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(mcc_model_input_info(model, 1, &info), MCC_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mcc_last_error()).find("out of range"),
            std::string::npos);
}

TEST_F(RuntimeTest, RunsWithCallerBuffersAndMatchesReference) {
  mcc_tensor in = tensorOf(inputs[0]);
  std::vector<float> out(reference[0].numElements(), NAN);
  mcc_tensor o{};
  o.data = out.data();
  o.dtype = MCC_FLOAT32;
  o.rank = 2;
  o.shape[0] = reference[0].shape[0];
  o.shape[1] = reference[0].shape[1];
  ASSERT_EQ(mcc_run(model, &in, 1, &o, 1), MCC_OK) << mcc_last_error();
  EXPECT_LE(relError(out.data()), 1e-4);
}

TEST_F(RuntimeTest, RunAllocAllocatesOutputs) {
  mcc_tensor in = tensorOf(inputs[0]);
  mcc_tensor o{};
  ASSERT_EQ(mcc_run_alloc(model, &in, 1, &o, 1), MCC_OK) << mcc_last_error();
  ASSERT_NE(o.data, nullptr);
  EXPECT_EQ(o.dtype, MCC_FLOAT32);
  EXPECT_EQ(o.rank, 2);
  EXPECT_LE(relError(static_cast<float *>(o.data)), 1e-4);
  mcc_tensor_free_data(&o);
  EXPECT_EQ(o.data, nullptr);
}

TEST_F(RuntimeTest, ConcurrentRunsFromManyThreadsAgree) {
  constexpr int kThreads = 4, kRuns = 3;
  std::vector<std::vector<float>> outs(kThreads);
  std::vector<int> status(kThreads, -1);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      mcc_tensor in = tensorOf(inputs[0]);
      outs[t].assign(reference[0].numElements(), NAN);
      mcc_tensor o{};
      o.data = outs[t].data();
      o.dtype = MCC_FLOAT32;
      o.rank = 2;
      o.shape[0] = reference[0].shape[0];
      o.shape[1] = reference[0].shape[1];
      int s = MCC_OK;
      for (int r = 0; r < kRuns && s == MCC_OK; ++r)
        s = mcc_run(model, &in, 1, &o, 1);
      status[t] = s;
    });
  for (auto &th : pool)
    th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(status[t], MCC_OK);
    EXPECT_LE(relError(outs[t].data()), 1e-4);
    EXPECT_EQ(outs[t], outs[0]);
  }
}

TEST_F(RuntimeTest, ThreadCountCanBeSetAndResultsDoNotChange) {
  mcc_tensor in = tensorOf(inputs[0]);
  std::vector<float> one(reference[0].numElements()),
      two(reference[0].numElements());
  mcc_tensor o{one.data(), MCC_FLOAT32, 2, {2, 10}};
  ASSERT_EQ(mcc_set_num_threads(1), MCC_OK) << mcc_last_error();
  ASSERT_EQ(mcc_run(model, &in, 1, &o, 1), MCC_OK) << mcc_last_error();
  ASSERT_EQ(mcc_set_num_threads(2), MCC_OK) << mcc_last_error();
  o.data = two.data();
  ASSERT_EQ(mcc_run(model, &in, 1, &o, 1), MCC_OK) << mcc_last_error();
  EXPECT_LE(relError(one.data()), 1e-4);
  EXPECT_LE(relError(two.data()), 1e-4);
  EXPECT_EQ(mcc_set_num_threads(-1), MCC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(mcc_set_num_threads(0), MCC_OK);
}

TEST_F(RuntimeTest, RejectsWrongShape) {
  mcc_tensor in = tensorOf(inputs[0]);
  in.shape[2] = 32;
  std::vector<float> out(reference[0].numElements());
  mcc_tensor o{out.data(), MCC_FLOAT32, 2, {2, 10}};
  EXPECT_EQ(mcc_run(model, &in, 1, &o, 1), MCC_ERROR_SHAPE);
  std::string msg = mcc_last_error();
  EXPECT_NE(msg.find("'pixel_values'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2,3,32,64]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2,3,64,64]"), std::string::npos) << msg;
}

TEST_F(RuntimeTest, GpuTimingAndStreamRunsAreRefusedForCpuModels) {
  double ms = 0;
  EXPECT_EQ(mcc_model_last_run_device_ms(model, &ms),
            MCC_ERROR_INVALID_ARGUMENT);
  std::string msg = mcc_last_error();
  EXPECT_NE(msg.find("--target cuda"), std::string::npos) << msg;
  EXPECT_NE(msg.find("target is cpu"), std::string::npos) << msg;
  mcc_tensor in = tensorOf(inputs[0]);
  std::vector<float> out(reference[0].numElements());
  mcc_tensor o{out.data(), MCC_FLOAT32, 2, {2, 10}};
  EXPECT_EQ(mcc_run_on_stream(model, &in, 1, &o, 1, nullptr),
            MCC_ERROR_INVALID_ARGUMENT);
  msg = mcc_last_error();
  EXPECT_NE(msg.find("--target cuda"), std::string::npos) << msg;
  EXPECT_EQ(mcc_model_last_run_device_ms(nullptr, &ms),
            MCC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(mcc_model_last_run_device_ms(model, nullptr),
            MCC_ERROR_INVALID_ARGUMENT);
}

// A CPU model's per-op profile: every op of forward once per run, with its
// label, and nothing counted while profiling is off.
TEST_F(RuntimeTest, CpuOpProfile) {
  mcc_tensor in = tensorOf(inputs[0]);
  std::vector<float> out(reference[0].numElements());
  mcc_tensor o{out.data(), MCC_FLOAT32, 2, {2, 10}};
  ASSERT_EQ(mcc_model_set_kernel_profiling(model, 1), MCC_OK)
      << mcc_last_error();
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(mcc_run(model, &in, 1, &o, 1), MCC_OK) << mcc_last_error();
  ASSERT_EQ(mcc_model_set_kernel_profiling(model, 0), MCC_OK);
  ASSERT_EQ(mcc_run(model, &in, 1, &o, 1), MCC_OK); // not counted
  size_t count = 0;
  int64_t runs = 0;
  ASSERT_EQ(mcc_model_kernel_profile(model, nullptr, 0, &count, &runs), MCC_OK);
  EXPECT_EQ(runs, 3);
  ASSERT_GT(count, 5u);
  std::vector<mcc_kernel_time> ops(count);
  ASSERT_EQ(mcc_model_kernel_profile(model, ops.data(), count, &count, &runs),
            MCC_OK);
  double total = 0;
  for (size_t i = 0; i < count; ++i) {
    EXPECT_EQ(ops[i].launches, 3) << ops[i].name;
    EXPECT_EQ(ops[i].name[0], '#') << ops[i].name;
    EXPECT_GE(ops[i].total_ms, 0.0);
    if (i)
      EXPECT_GE(ops[i - 1].total_ms, ops[i].total_ms);
    total += ops[i].total_ms;
  }
  EXPECT_GT(total, 0.0);
  // Restarting clears it.
  ASSERT_EQ(mcc_model_set_kernel_profiling(model, 1), MCC_OK);
  ASSERT_EQ(mcc_model_kernel_profile(model, nullptr, 0, &count, &runs), MCC_OK);
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(runs, 0);
  ASSERT_EQ(mcc_model_set_kernel_profiling(model, 0), MCC_OK);
}

TEST_F(RuntimeTest, RejectsWrongDtypeCountsAndNulls) {
  mcc_tensor in = tensorOf(inputs[0]);
  std::vector<float> out(reference[0].numElements());
  mcc_tensor o{out.data(), MCC_FLOAT32, 2, {2, 10}};
  mcc_tensor bad = in;
  bad.dtype = MCC_FLOAT64;
  EXPECT_EQ(mcc_run(model, &bad, 1, &o, 1), MCC_ERROR_DTYPE);
  EXPECT_NE(std::string(mcc_last_error()).find("float64"), std::string::npos);
  EXPECT_EQ(mcc_run(model, &in, 2, &o, 1), MCC_ERROR_INVALID_ARGUMENT);
  bad = in;
  bad.data = nullptr;
  EXPECT_EQ(mcc_run(model, &bad, 1, &o, 1), MCC_ERROR_INVALID_ARGUMENT);
  mcc_tensor badOut = o;
  badOut.shape[1] = 11;
  EXPECT_EQ(mcc_run(model, &in, 1, &badOut, 1), MCC_ERROR_SHAPE);
  EXPECT_EQ(mcc_run(nullptr, &in, 1, &o, 1), MCC_ERROR_INVALID_ARGUMENT);
}

TEST(RuntimeLoadTest, MissingFileDirectoryAndForeignLibrary) {
  mcc_model *m = reinterpret_cast<mcc_model *>(0x1);
  EXPECT_EQ(mcc_model_load("/nonexistent/model.so", &m), MCC_ERROR_LOAD);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::string(mcc_last_error()).find("no such file"),
            std::string::npos);
  EXPECT_EQ(mcc_model_load("/tmp", &m), MCC_ERROR_LOAD);
  EXPECT_NE(std::string(mcc_last_error()).find("not a regular file"),
            std::string::npos);
  std::string garbage = env("MCC_TEST_WORKDIR") + "/garbage.so";
  std::ofstream(garbage) << "this is not an ELF file";
  EXPECT_EQ(mcc_model_load(garbage.c_str(), &m), MCC_ERROR_LOAD);
  EXPECT_NE(std::string(mcc_last_error()).find("cannot load"),
            std::string::npos);
  // A real shared library that is not an mcc model.
  const char *libm = "/lib/x86_64-linux-gnu/libm.so.6";
  EXPECT_EQ(mcc_model_load(libm, &m), MCC_ERROR_LOAD);
  EXPECT_NE(std::string(mcc_last_error()).find("not an mcc model"),
            std::string::npos);
  EXPECT_EQ(mcc_model_load(nullptr, &m), MCC_ERROR_INVALID_ARGUMENT);
}

} // namespace
