//===- ApproximateMath.cpp - vectorizable f32 exp, erf and tanh -----------===//
//
// math.erf, math.exp and math.tanh otherwise become scalar libm calls, which
// keep GELU, softmax and SiLU loops from vectorizing (erff alone was 4% of
// bert-base on the CPU). Upstream's polynomial approximations are plain
// arith, so LLVM vectorizes them with the rest of the loop body; they are
// accurate to a few ulp in f32.
//
// math.powf by a small positive whole constant (GPT-2's GELU cubes its input)
// becomes multiplications: libm's powf was 10% of a GPT-2 run.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mcc {
#define GEN_PASS_DEF_APPROXIMATEMATH
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

/// powf(x, n) for n in 1..4 as a chain of multiplications. Exact for n <= 2
/// and within a few ulp above (each product rounds once); negative, NaN and
/// infinite x give what powf gives for a whole exponent.
struct PowfByWholeConstant : OpRewritePattern<math::PowFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::PowFOp op,
                                PatternRewriter &rewriter) const override {
    APFloat exponent(0.0f);
    if (!matchPattern(op.getRhs(), m_ConstantFloat(&exponent)))
      return failure();
    double n = exponent.convertToDouble();
    if (n != 1.0 && n != 2.0 && n != 3.0 && n != 4.0)
      return failure();
    Value x = op.getLhs();
    Location loc = op.getLoc();
    auto fmf = op.getFastmath();
    Value result = x;
    if (n == 4.0) {
      Value square = arith::MulFOp::create(rewriter, loc, x, x, fmf);
      result = arith::MulFOp::create(rewriter, loc, square, square, fmf);
    } else {
      for (int i = 1; i < static_cast<int>(n); ++i)
        result = arith::MulFOp::create(rewriter, loc, result, x, fmf);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ApproximateMathPass
    : mcc::impl::ApproximateMathBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    auto wanted = [](StringRef name) {
      name.consume_front("math.");
      return name == "erf" || name == "exp" || name == "tanh";
    };
    populateMathPolynomialApproximationPatterns(patterns, wanted);
    patterns.add<PowfByWholeConstant>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
