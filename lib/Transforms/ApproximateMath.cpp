//===- ApproximateMath.cpp - vectorizable f32 exp, erf and tanh -----------===//
//
// math.erf, math.exp and math.tanh otherwise become scalar libm calls, which
// keep GELU, softmax and SiLU loops from vectorizing (erff alone was 4% of
// bert-base on the CPU). Upstream's polynomial approximations are plain
// arith, so LLVM vectorizes them with the rest of the loop body; they are
// accurate to a few ulp in f32.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mcc {
#define GEN_PASS_DEF_APPROXIMATEMATH
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

struct ApproximateMathPass
    : mcc::impl::ApproximateMathBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    auto wanted = [](StringRef name) {
      name.consume_front("math.");
      return name == "erf" || name == "exp" || name == "tanh";
    };
    populateMathPolynomialApproximationPatterns(patterns, wanted);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
