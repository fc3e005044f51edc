//===- ShapeBindingTest.cpp - dim expressions and symbol binding ----------===//

#include "ShapeBinding.h"

#include <gtest/gtest.h>

#include <climits>
#include <string>

namespace {

using mcc::rt::DimExpr;
using mcc::rt::ShapeBinder;
using mcc::rt::ShapeSignature;

/// The value of `text` with symbols s0.. bound to `symbols`.
int64_t eval(const std::string &text, std::vector<int64_t> symbols = {}) {
  DimExpr e;
  std::string error;
  EXPECT_TRUE(DimExpr::parse(text, symbols.size(), e, error))
      << text << ": " << error;
  int64_t v = INT64_MIN;
  EXPECT_TRUE(e.evaluate(symbols.data(), v, error)) << text << ": " << error;
  return v;
}

std::string parseError(const std::string &text, size_t numSymbols = 2) {
  DimExpr e;
  std::string error;
  EXPECT_FALSE(DimExpr::parse(text, numSymbols, e, error)) << text;
  return error;
}

TEST(DimExprTest, ArithmeticAndPrecedence) {
  EXPECT_EQ(eval("42"), 42);
  EXPECT_EQ(eval("s0", {7}), 7);
  EXPECT_EQ(eval("s0 * 128", {3}), 384);
  EXPECT_EQ(eval("s0 * s1", {3, 5}), 15);
  EXPECT_EQ(eval("s0 + s1 * 2", {3, 5}), 13);
  EXPECT_EQ(eval("(s0 + s1) * 2", {3, 5}), 16);
  EXPECT_EQ(eval("s0 - s1 - 1", {10, 3}), 6);   // left-associative
  EXPECT_EQ(eval("s0 * 2 floordiv 3", {4}), 2); // (4 * 2) floordiv 3
  EXPECT_EQ(eval("(s1 + 1) floordiv 2", {0, 7}), 4);
  EXPECT_EQ(eval("-s0 + 10", {3}), 7);
  EXPECT_EQ(eval("s0 * -2", {3}), -6);
  EXPECT_EQ(eval("--s0", {3}), 3);
  EXPECT_EQ(eval("  s0   *   ( 2+1 ) ", {3}), 9);
}

TEST(DimExprTest, FloorSemanticsForNegativeOperands) {
  // As MLIR folds them: floordiv rounds down, ceildiv up, and mod takes the
  // divisor's sign.
  EXPECT_EQ(eval("7 floordiv 2"), 3);
  EXPECT_EQ(eval("-7 floordiv 2"), -4);
  EXPECT_EQ(eval("7 floordiv -2"), -4);
  EXPECT_EQ(eval("-7 floordiv -2"), 3);
  EXPECT_EQ(eval("-8 floordiv 2"), -4);
  EXPECT_EQ(eval("7 ceildiv 2"), 4);
  EXPECT_EQ(eval("-7 ceildiv 2"), -3);
  EXPECT_EQ(eval("7 ceildiv -2"), -3);
  EXPECT_EQ(eval("-7 ceildiv -2"), 4);
  EXPECT_EQ(eval("8 ceildiv 2"), 4);
  EXPECT_EQ(eval("7 mod 3"), 1);
  EXPECT_EQ(eval("-7 mod 3"), 2);
  EXPECT_EQ(eval("7 mod -3"), -2);
  EXPECT_EQ(eval("-7 mod -3"), -1);
  EXPECT_EQ(eval("-6 mod 3"), 0);
  EXPECT_EQ(eval("s0 mod s1", {-1, 5}), 4);
}

TEST(DimExprTest, DivisionByZeroAndOverflowAreErrors) {
  DimExpr e;
  std::string error;
  ASSERT_TRUE(DimExpr::parse("10 floordiv s0", 1, e, error)) << error;
  int64_t zero = 0, v = 0;
  EXPECT_FALSE(e.evaluate(&zero, v, error));
  EXPECT_NE(error.find("divides by zero"), std::string::npos) << error;
  ASSERT_TRUE(DimExpr::parse("s0 * s0", 1, e, error)) << error;
  int64_t big = INT64_C(1) << 40;
  EXPECT_FALSE(e.evaluate(&big, v, error));
  EXPECT_NE(error.find("overflows"), std::string::npos) << error;
  ASSERT_TRUE(DimExpr::parse("s0 floordiv -1", 1, e, error)) << error;
  int64_t min = INT64_MIN;
  EXPECT_FALSE(e.evaluate(&min, v, error));
  ASSERT_TRUE(DimExpr::parse("-s0", 1, e, error)) << error;
  EXPECT_FALSE(e.evaluate(&min, v, error));
}

TEST(DimExprTest, MalformedExpressionsSayWhere) {
  EXPECT_NE(parseError("").find("ends early"), std::string::npos);
  EXPECT_NE(parseError("s0 +").find("ends early"), std::string::npos);
  EXPECT_NE(parseError("s0 + * 4").find("column 6"), std::string::npos)
      << parseError("s0 + * 4");
  EXPECT_NE(parseError("(s0 + 1").find("expected ')'"), std::string::npos);
  EXPECT_NE(parseError("s0 + 1)").find("expected the end"), std::string::npos);
  EXPECT_NE(parseError("s2 + 1").find("out of range"), std::string::npos);
  EXPECT_NE(parseError("d0").find("unknown name 'd0'"), std::string::npos);
  EXPECT_NE(parseError("s0 div 2").find("unknown name 'div'"),
            std::string::npos);
  EXPECT_NE(parseError("s0 / 2").find("unexpected character '/'"),
            std::string::npos);
  EXPECT_NE(parseError("99999999999999999999").find("too large"),
            std::string::npos);
  EXPECT_NE(parseError("s0 s1").find("expected the end"), std::string::npos);
  // The message quotes the expression.
  EXPECT_NE(parseError("s0 + 1", 0).find("'s0 + 1'"), std::string::npos);
  // Deep nesting is refused, not a stack overflow.
  std::string deep(100000, '(');
  EXPECT_NE(parseError(deep + "1").find("nested too deeply"),
            std::string::npos);
  EXPECT_NE(
      parseError(std::string(100000, '-') + "1").find("nested too deeply"),
      std::string::npos);
}

TEST(DimExprTest, RendersWithSymbolNames) {
  DimExpr e;
  std::string error;
  ASSERT_TRUE(DimExpr::parse("(s1 + 1) floordiv 2 + s0 * s10", 11, e, error));
  std::vector<std::string> names = {"batch", "sequence", "c", "d", "e", "f",
                                    "g",     "h",        "i", "j", "k"};
  EXPECT_EQ(e.render(names), "(sequence + 1) floordiv 2 + batch * k");
  EXPECT_EQ(e.singleSymbol(), -1);
  ASSERT_TRUE(DimExpr::parse(" s1 ", 2, e, error));
  EXPECT_EQ(e.singleSymbol(), 1);
}

/// A descriptor for input_ids/attention_mask [batch, sequence] and an
/// output [batch, sequence * 2] (batch 1..4, sequence 1..512).
struct BertLike {
  int64_t inShape[2] = {-1, -1}, outShape[3] = {-1, -1, 8};
  const char *inDims[2] = {"s0", "s1"};
  const char *outDims[3] = {"s0", "s1 * 2", nullptr};
  MccTensorDesc inputs[2] = {{"input_ids", 7, 2, inShape, inDims},
                             {"attention_mask", 7, 2, inShape, inDims}};
  MccTensorDesc outputs[1] = {{"hidden", 1, 3, outShape, outDims}};
  MccSymbolDesc symbols[2] = {{"batch", 1, 4}, {"sequence", 1, 512}};
  MccModelDescriptor desc = {2,       "cpu", "x",     2, inputs, 1,
                             outputs, 0,     nullptr, 2, symbols};
};

TEST(ShapeSignatureTest, ReadsNamesAndRejectsMalformedDescriptors) {
  BertLike m;
  ShapeSignature sig;
  std::string error;
  ASSERT_TRUE(ShapeSignature::fromDescriptor(m.desc, sig, error)) << error;
  EXPECT_TRUE(sig.dynamic);
  EXPECT_EQ(ShapeSignature::shapeString(sig.inputs[0]), "[batch,sequence]");
  EXPECT_EQ(ShapeSignature::shapeString(sig.outputs[0]),
            "[batch,sequence * 2,8]");
  EXPECT_EQ(sig.outputs[0].dimNames[2], "");

  m.outDims[1] = "s1 *";
  EXPECT_FALSE(ShapeSignature::fromDescriptor(m.desc, sig, error));
  EXPECT_NE(error.find("output 'hidden' axis 1"), std::string::npos) << error;
  m.outDims[1] = "s1 * 2";

  m.inDims[1] = "s1 + 1"; // input dims are single symbols
  EXPECT_FALSE(ShapeSignature::fromDescriptor(m.desc, sig, error));
  EXPECT_NE(error.find("not a single symbol"), std::string::npos) << error;
  m.inDims[1] = "s1";

  m.outDims[2] = "s0"; // an expression where the shape is static
  EXPECT_FALSE(ShapeSignature::fromDescriptor(m.desc, sig, error));
  m.outDims[2] = nullptr;

  m.symbols[0].hi = 0; // empty bounds
  EXPECT_FALSE(ShapeSignature::fromDescriptor(m.desc, sig, error));
  m.symbols[0].hi = 4;

  m.inDims[1] = "s0"; // 'sequence' is no input's dim
  EXPECT_FALSE(ShapeSignature::fromDescriptor(m.desc, sig, error));
  EXPECT_NE(error.find("'sequence'"), std::string::npos) << error;
}

TEST(ShapeBinderTest, BindsChecksAgreementAndBounds) {
  BertLike m;
  ShapeSignature sig;
  std::string error;
  ASSERT_TRUE(ShapeSignature::fromDescriptor(m.desc, sig, error)) << error;
  {
    ShapeBinder b(sig);
    int64_t ids[2] = {2, 8}, mask[2] = {2, 8}, out[3];
    ASSERT_EQ(b.bindInput(0, 2, ids, error), MCC_OK) << error;
    ASSERT_EQ(b.bindInput(1, 2, mask, error), MCC_OK) << error;
    ASSERT_EQ(b.outputShape(0, out, error), MCC_OK) << error;
    EXPECT_EQ(out[0], 2);
    EXPECT_EQ(out[1], 16);
    EXPECT_EQ(out[2], 8);
    EXPECT_EQ(b.boundSymbols(), "batch=2, sequence=8");
  }
  {
    ShapeBinder b(sig);
    int64_t ids[2] = {2, 8}, mask[2] = {2, 7};
    ASSERT_EQ(b.bindInput(0, 2, ids, error), MCC_OK) << error;
    EXPECT_EQ(b.bindInput(1, 2, mask, error), MCC_ERROR_SHAPE);
    EXPECT_EQ(error, "input 'attention_mask' axis 1 ('sequence') is 7, but "
                     "input 'input_ids' set 'sequence' to 8");
  }
  {
    ShapeBinder b(sig);
    int64_t ids[2] = {2, 600};
    EXPECT_EQ(b.bindInput(0, 2, ids, error), MCC_ERROR_SHAPE);
    EXPECT_EQ(error,
              "input 'input_ids' axis 1 ('sequence') is 600, above its bound "
              "512");
    ShapeBinder fresh(sig); // b bound batch before failing
    int64_t zero[2] = {0, 8};
    EXPECT_EQ(fresh.bindInput(0, 2, zero, error), MCC_ERROR_SHAPE);
    EXPECT_EQ(error,
              "input 'input_ids' axis 0 ('batch') is 0, below its bound 1");
  }
  {
    ShapeBinder b(sig);
    int64_t rank3[3] = {2, 8, 1}, negative[2] = {-1, 8};
    EXPECT_EQ(b.bindInput(0, 3, rank3, error), MCC_ERROR_SHAPE);
    EXPECT_NE(error.find("shape [2,8,1] given, the model expects "
                         "[batch,sequence]"),
              std::string::npos)
        << error;
    EXPECT_EQ(b.bindInput(0, 2, negative, error), MCC_ERROR_SHAPE);
    EXPECT_NE(error.find("[-1,8]"), std::string::npos) << error;
    EXPECT_EQ(b.bindInput(0, 99, rank3, error), MCC_ERROR_SHAPE);
    EXPECT_NE(error.find("rank 99 is invalid"), std::string::npos) << error;
    int64_t out[3];
    EXPECT_EQ(b.outputShape(0, out, error), MCC_ERROR_INVALID_ARGUMENT);
  }
}

TEST(ShapeBinderTest, OneInputRepeatingASymbol) {
  // x: [n, n] (a square matrix).
  int64_t shape[2] = {-1, -1};
  const char *dims[2] = {"s0", "s0"};
  MccTensorDesc x = {"x", 1, 2, shape, dims};
  int64_t outShape[1] = {-1};
  const char *outDims[1] = {"s0 - 5"};
  MccTensorDesc y = {"y", 1, 1, outShape, outDims};
  MccSymbolDesc n = {"n", 1, INT64_MAX};
  MccModelDescriptor d = {2, "cpu", "x", 1, &x, 1, &y, 0, nullptr, 1, &n};
  ShapeSignature sig;
  std::string error;
  ASSERT_TRUE(ShapeSignature::fromDescriptor(d, sig, error)) << error;
  ShapeBinder b(sig);
  int64_t bad[2] = {3, 4};
  EXPECT_EQ(b.bindInput(0, 2, bad, error), MCC_ERROR_SHAPE);
  EXPECT_EQ(error, "input 'x' axis 1 ('n') is 4, but input 'x' axis 0 set "
                   "'n' to 3");
  ShapeBinder ok(sig);
  int64_t good[2] = {3, 3}, out[1];
  ASSERT_EQ(ok.bindInput(0, 2, good, error), MCC_OK) << error;
  // A negative output dim is an error, not an allocation.
  EXPECT_EQ(ok.outputShape(0, out, error), MCC_ERROR_SHAPE);
  EXPECT_NE(error.find("output 'y' axis 0 ('n - 5') is -2 for n=3"),
            std::string::npos)
      << error;
}

} // namespace
