//===- DynamicModelTest.cpp - the C API on models with dynamic dims -------===//
//
// Loads hand-written ABI v2 libraries (fake/dynamic_model.c) so that symbol
// binding, output shapes and the dims handed to run() are tested without
// the compiler, and an ABI v1 library to check that it is refused.
//
//===----------------------------------------------------------------------===//

#include "mcc/mcc.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

class DynamicModelTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(mcc_model_load(MCC_FAKE_DYNAMIC_MODEL, &model), MCC_OK)
        << mcc_last_error();
  }
  void TearDown() override { mcc_model_free(model); }

  /// Inputs a [batch, 4] and b [batch, seq] with distinct values.
  void makeInputs(int64_t batch, int64_t seq) {
    a.resize(batch * 4);
    b.resize(batch * seq);
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = 1000.0f + i;
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = static_cast<float>(i);
    in[0] = mcc_tensor{a.data(), MCC_FLOAT32, 2, {batch, 4}};
    in[1] = mcc_tensor{b.data(), MCC_FLOAT32, 2, {batch, seq}};
  }

  mcc_model *model = nullptr;
  std::vector<float> a, b;
  mcc_tensor in[2] = {};
};

TEST_F(DynamicModelTest, DescribesDynamicDimsAndSymbols) {
  mcc_tensor_info info;
  ASSERT_EQ(mcc_model_input_info(model, 0, &info), MCC_OK);
  EXPECT_EQ(info.shape[0], -1);
  EXPECT_STREQ(info.dim_names[0], "batch");
  EXPECT_EQ(info.shape[1], 4);
  EXPECT_EQ(info.dim_names[1], nullptr);
  ASSERT_EQ(mcc_model_output_info(model, 0, &info), MCC_OK);
  EXPECT_STREQ(info.dim_names[1], "seq + 4");
  ASSERT_EQ(mcc_model_output_info(model, 1, &info), MCC_OK);
  EXPECT_STREQ(info.dim_names[0], "(seq + 1) floordiv 2");

  ASSERT_EQ(mcc_model_num_symbols(model), 2u);
  const char *name = nullptr;
  int64_t lo = 0, hi = 0;
  ASSERT_EQ(mcc_model_symbol_info(model, 0, &name, &lo, &hi), MCC_OK);
  EXPECT_STREQ(name, "batch");
  EXPECT_EQ(lo, 1);
  EXPECT_EQ(hi, 16);
  ASSERT_EQ(mcc_model_symbol_info(model, 1, &name, nullptr, &hi), MCC_OK);
  EXPECT_EQ(hi, INT64_MAX);
  EXPECT_EQ(mcc_model_symbol_info(model, 2, &name, &lo, &hi),
            MCC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(mcc_model_symbol_info(nullptr, 0, &name, &lo, &hi),
            MCC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(mcc_model_num_symbols(nullptr), 0u);
}

TEST_F(DynamicModelTest, RunsAtSeveralSizes) {
  for (int64_t batch : {1, 3, 16}) {
    for (int64_t seq : {1, 6, 33}) {
      makeInputs(batch, seq);
      mcc_tensor_info shapes[2];
      ASSERT_EQ(mcc_model_output_shapes(model, in, 2, shapes, 2), MCC_OK)
          << mcc_last_error();
      EXPECT_EQ(shapes[0].shape[0], batch);
      EXPECT_EQ(shapes[0].shape[1], seq + 4);
      EXPECT_EQ(shapes[1].shape[0], (seq + 1) / 2);
      EXPECT_STREQ(shapes[0].dim_names[1], "seq + 4");

      // Caller buffers.
      std::vector<float> cat(batch * (seq + 4), -1);
      std::vector<int64_t> half((seq + 1) / 2, -1);
      mcc_tensor out[2] = {
          {cat.data(), MCC_FLOAT32, 2, {batch, seq + 4}},
          {half.data(), MCC_INT64, 1, {(seq + 1) / 2}},
      };
      ASSERT_EQ(mcc_run(model, in, 2, out, 2), MCC_OK) << mcc_last_error();
      EXPECT_EQ(cat[seq], 1000.0f);
      EXPECT_EQ(cat[batch * (seq + 4) - 1], 1000.0f + batch * 4 - 1);
      EXPECT_EQ(half.back(), (seq + 1) / 2 - 1);

      // Allocated outputs.
      mcc_tensor alloc[2] = {};
      ASSERT_EQ(mcc_run_alloc(model, in, 2, alloc, 2), MCC_OK)
          << mcc_last_error();
      EXPECT_EQ(alloc[0].shape[1], seq + 4);
      EXPECT_EQ(alloc[1].rank, 1);
      EXPECT_EQ(static_cast<float *>(alloc[0].data)[seq], 1000.0f);
      mcc_tensor_free_data(&alloc[0]);
      mcc_tensor_free_data(&alloc[1]);
    }
  }
}

TEST_F(DynamicModelTest, RejectsInconsistentOutOfBoundsAndWrongOutputs) {
  makeInputs(2, 5);
  in[1].shape[0] = 3;
  mcc_tensor alloc[2] = {};
  EXPECT_EQ(mcc_run_alloc(model, in, 2, alloc, 2), MCC_ERROR_SHAPE);
  EXPECT_STREQ(mcc_last_error(),
               "input 'b' axis 0 ('batch') is 3, but input 'a' set 'batch' "
               "to 2");
  EXPECT_EQ(alloc[0].data, nullptr);

  std::vector<float> big(17 * 4);
  in[0] = mcc_tensor{big.data(), MCC_FLOAT32, 2, {17, 4}};
  in[1] = mcc_tensor{big.data(), MCC_FLOAT32, 2, {17, 4}};
  mcc_tensor_info shapes[2];
  EXPECT_EQ(mcc_model_output_shapes(model, in, 2, shapes, 2), MCC_ERROR_SHAPE);
  EXPECT_STREQ(mcc_last_error(),
               "input 'a' axis 0 ('batch') is 17, above its bound 16");

  makeInputs(2, 5);
  in[0].shape[1] = 5; // a static dim
  EXPECT_EQ(mcc_run_alloc(model, in, 2, alloc, 2), MCC_ERROR_SHAPE);
  EXPECT_NE(std::string(mcc_last_error())
                .find("input 0 ('a'): shape [2,5] given, the model expects "
                      "[batch,4]"),
            std::string::npos)
      << mcc_last_error();

  makeInputs(2, 5);
  std::vector<float> cat(2 * 9);
  std::vector<int64_t> half(3);
  mcc_tensor out[2] = {{cat.data(), MCC_FLOAT32, 2, {2, 8}},
                       {half.data(), MCC_INT64, 1, {3}}};
  EXPECT_EQ(mcc_run(model, in, 2, out, 2), MCC_ERROR_SHAPE);
  EXPECT_NE(std::string(mcc_last_error())
                .find("output 0 ('cat'): shape [2,8] given, the model "
                      "computes [2,9] for these inputs ([batch,seq + 4] with "
                      "batch=2, seq=5)"),
            std::string::npos)
      << mcc_last_error();
  out[0].shape[1] = 9;
  EXPECT_EQ(mcc_run(model, in, 2, out, 2), MCC_OK) << mcc_last_error();

  // Null data is refused for a non-empty input, whatever its shape.
  in[1].data = nullptr;
  EXPECT_EQ(mcc_run(model, in, 2, out, 2), MCC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(mcc_model_output_shapes(model, in, 2, nullptr, 2),
            MCC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(mcc_model_output_shapes(model, in, 1, shapes, 2),
            MCC_ERROR_INVALID_ARGUMENT);
}

// A library without the per-op profile entries (the hand-written one here;
// a model from an mcc before them) says so, names the file and keeps
// running.
TEST_F(DynamicModelTest, ModelWithoutOpProfileSaysSo) {
  EXPECT_EQ(mcc_model_set_kernel_profiling(model, 1),
            MCC_ERROR_INVALID_ARGUMENT);
  std::string message = mcc_last_error();
  EXPECT_NE(message.find("has no per-op profile"), std::string::npos)
      << message;
  EXPECT_NE(message.find(MCC_FAKE_DYNAMIC_MODEL), std::string::npos)
      << message;
  size_t count = 7;
  int64_t runs = 7;
  EXPECT_EQ(mcc_model_kernel_profile(model, nullptr, 0, &count, &runs),
            MCC_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mcc_last_error()).find("has no per-op profile"),
            std::string::npos);
  makeInputs(2, 3);
  std::vector<float> cat(2 * 7, -1);
  std::vector<int64_t> half(2, -1);
  mcc_tensor out[2] = {{cat.data(), MCC_FLOAT32, 2, {2, 7}},
                       {half.data(), MCC_INT64, 1, {2}}};
  EXPECT_EQ(mcc_run(model, in, 2, out, 2), MCC_OK) << mcc_last_error();
  EXPECT_EQ(cat[3], 1000.0f);
}

TEST(DynamicModelLoadTest, MalformedExpressionIsALoadError) {
  mcc_model *m = nullptr;
  EXPECT_EQ(mcc_model_load(MCC_FAKE_BAD_EXPR_MODEL, &m), MCC_ERROR_LOAD);
  EXPECT_EQ(m, nullptr);
  std::string msg = mcc_last_error();
  EXPECT_NE(msg.find("output 'cat' axis 1: malformed dim expression "
                     "'s1 + * 4'"),
            std::string::npos)
      << msg;
}

TEST(DynamicModelLoadTest, AbiV1ModelIsRefusedByVersion) {
  mcc_model *m = nullptr;
  EXPECT_EQ(mcc_model_load(MCC_FAKE_V1_MODEL, &m), MCC_ERROR_ABI);
  EXPECT_EQ(m, nullptr);
  std::string msg = mcc_last_error();
  EXPECT_NE(msg.find("model ABI version 1, this runtime supports 2; "
                     "recompile the model"),
            std::string::npos)
      << msg;
}

} // namespace
