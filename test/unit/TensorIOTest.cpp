//===- TensorIOTest.cpp - .npz round trips and malformed files ------------===//

#include "mcc/Support/TensorIO.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sys/stat.h>

namespace {

std::string workdir() {
  const char *w = std::getenv("MCC_TEST_WORKDIR");
  return w ? w : "/tmp";
}

TEST(TensorIOTest, NpzRoundTripKeepsNamesShapesAndBytes) {
  mcc::HostTensor a{"a", MCC_FLOAT32, {2, 3}, {}};
  a.data.resize(24);
  for (size_t i = 0; i < 24; ++i)
    a.data[i] = static_cast<uint8_t>(i * 7);
  mcc::HostTensor b{"ids", MCC_INT64, {4}, std::vector<uint8_t>(32, 1)};
  mcc::HostTensor s{"scalar", MCC_BOOL, {}, {1}};
  std::string path = workdir() + "/roundtrip.npz", err;
  ASSERT_TRUE(mcc::writeNpz(path, {a, b, s}, err)) << err;
  std::vector<mcc::HostTensor> back;
  ASSERT_TRUE(mcc::readNpz(path, back, err)) << err;
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0].name, "a");
  EXPECT_EQ(back[0].shape, a.shape);
  EXPECT_EQ(back[0].data, a.data);
  EXPECT_EQ(back[1].dtype, MCC_INT64);
  EXPECT_EQ(back[2].shape.size(), 0u);
  EXPECT_EQ(back[2].dtype, MCC_BOOL);
}

TEST(TensorIOTest, WiderIntegersAndBfloat16) {
  mcc::HostTensor u{"u", MCC_UINT64, {2}, std::vector<uint8_t>(16, 0xff)};
  mcc::HostTensor i{"i", MCC_INT16, {3}, std::vector<uint8_t>(6, 0x80)};
  mcc::HostTensor h{"h", MCC_UINT16, {1}, {0x34, 0x12}};
  mcc::HostTensor w{"w", MCC_UINT32, {1}, {1, 2, 3, 4}};
  mcc::HostTensor bf{"bf", MCC_BFLOAT16, {2}, {0xc0, 0x3f, 0x00, 0x40}};
  std::string path = workdir() + "/wide.npz", err;
  ASSERT_TRUE(mcc::writeNpz(path, {u, i, h, w, bf}, err)) << err;
  std::vector<mcc::HostTensor> back;
  ASSERT_TRUE(mcc::readNpz(path, back, err)) << err;
  ASSERT_EQ(back.size(), 5u);
  EXPECT_EQ(back[0].dtype, MCC_UINT64);
  EXPECT_EQ(back[0].data, u.data);
  EXPECT_EQ(back[1].dtype, MCC_INT16);
  EXPECT_EQ(back[2].dtype, MCC_UINT16);
  EXPECT_EQ(back[3].dtype, MCC_UINT32);
  // numpy has no bfloat16: written as its uint16 bit patterns.
  EXPECT_EQ(back[4].dtype, MCC_UINT16);
  EXPECT_EQ(back[4].data, bf.data);
  EXPECT_EQ(mcc_dtype_size(MCC_BFLOAT16), 2u);
  EXPECT_STREQ(mcc_dtype_name(MCC_UINT64), "uint64");
  EXPECT_STREQ(mcc_dtype_name(MCC_BFLOAT16), "bfloat16");
}

TEST(TensorIOTest, SmallTypesAreOneBytePerElement) {
  // Written as uint8 bytes (ml_dtypes' layout, docs/design/0009).
  mcc::HostTensor f8{"f8", MCC_FLOAT8E4M3FN, {2}, {0x38, 0xfe}};
  std::string path = workdir() + "/small.npz", err;
  ASSERT_TRUE(mcc::writeNpz(path, {f8}, err)) << err;
  std::vector<mcc::HostTensor> back;
  ASSERT_TRUE(mcc::readNpz(path, back, err)) << err;
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].dtype, MCC_UINT8);
  EXPECT_EQ(back[0].data, f8.data);
  EXPECT_EQ(mcc_dtype_size(MCC_INT4), 1u);
  EXPECT_EQ(mcc_dtype_size(MCC_FLOAT8E8M0), 1u);
  EXPECT_STREQ(mcc_dtype_name(MCC_FLOAT4E2M1), "float4e2m1");
  // An ONNX TensorProto packs int4 two per byte, low nibble first:
  // dims [3], data_type 22, raw_data {-8 | 7 << 4, -1}.
  const unsigned char pb[] = {0x08, 0x03, 0x10, 22, 0x4a, 0x02, 0x78, 0x0f};
  std::string pbPath = workdir() + "/int4.pb";
  std::ofstream(pbPath, std::ios::binary)
      .write(reinterpret_cast<const char *>(pb), sizeof(pb));
  mcc::HostTensor t;
  ASSERT_TRUE(mcc::readTensorProto(pbPath, t, err)) << err;
  EXPECT_EQ(t.dtype, MCC_INT4);
  EXPECT_EQ(t.data, (std::vector<uint8_t>{0x08, 0x07, 0x0f}));
}

TEST(TensorIOTest, GarbageIsAnErrorNotACrash) {
  std::string path = workdir() + "/garbage.npz", err;
  std::ofstream(path) << "PK\x03\x04 not really a zip";
  std::vector<mcc::HostTensor> out;
  EXPECT_FALSE(mcc::readNpz(path, out, err));
  EXPECT_NE(err.find("garbage.npz"), std::string::npos) << err;
  EXPECT_FALSE(mcc::readNpz(workdir(), out, err));
  EXPECT_NE(err.find("directory"), std::string::npos) << err;
}

TEST(TensorIOTest, FailedWriteLeavesNoFile) {
  std::string path = workdir() + "/no/such/dir/out.npz", err;
  mcc::HostTensor a{"a", MCC_FLOAT32, {1}, std::vector<uint8_t>(4, 0)};
  EXPECT_FALSE(mcc::writeNpz(path, {a}, err));
  struct stat st;
  EXPECT_NE(stat(path.c_str(), &st), 0);
}

TEST(TensorIOTest, MissingInputNameIsReported) {
  std::string path = workdir() + "/one.npz", err;
  mcc::HostTensor a{"x", MCC_FLOAT32, {1}, std::vector<uint8_t>(4, 0)};
  ASSERT_TRUE(mcc::writeNpz(path, {a}, err)) << err;
  std::vector<mcc::HostTensor> in;
  EXPECT_FALSE(mcc::readRunInputs(path, {"input_ids"}, in, err));
  EXPECT_NE(err.find("no array named 'input_ids'"), std::string::npos) << err;
  EXPECT_NE(err.find("x"), std::string::npos) << err;
}

} // namespace
