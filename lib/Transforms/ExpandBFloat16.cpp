//===- ExpandBFloat16.cpp - bf16 conversions as integer ops ---------------===//
//
// Only upstream's bf16 extf/truncf patterns: arith-expand would also
// rewrite maximumf, ceildivsi, ... in every model.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mcc {
#define GEN_PASS_DEF_EXPANDBFLOAT16
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

struct ExpandBFloat16Pass : mcc::impl::ExpandBFloat16Base<ExpandBFloat16Pass> {
  void runOnOperation() override {
    // The emulation of bf16 (and the f32 math on f16) marks its conversions
    // `contract`, which lets extf(truncf(x)) fold to x: a chain of ops would
    // then round once at its end. Each ONNX op rounds its result (as NumPy
    // does, the reference), so the conversions must stay.
    getOperation().walk([](Operation *op) {
      if (!isa<arith::ExtFOp, arith::TruncFOp>(op))
        return;
      auto fmf = cast<arith::ArithFastMathInterface>(op);
      arith::FastMathFlagsAttr attr = fmf.getFastMathFlagsAttr();
      if (!attr ||
          !bitEnumContainsAny(attr.getValue(), arith::FastMathFlags::contract))
        return;
      op->setAttr(fmf.getFastMathAttrName(),
                  arith::FastMathFlagsAttr::get(
                      op->getContext(),
                      attr.getValue() & ~arith::FastMathFlags::contract));
    });
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
