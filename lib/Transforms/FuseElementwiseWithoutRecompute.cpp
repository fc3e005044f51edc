//===- FuseElementwiseWithoutRecompute.cpp - fusion that never recomputes -===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mcc {
#define GEN_PASS_DEF_FUSEELEMENTWISEWITHOUTRECOMPUTE
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

/// True if fusing the producer of `operand` into its consumer evaluates
/// each producer element exactly once: the consumer reads the operand
/// through a permutation of all of its loops.
bool fusesWithoutRecompute(OpOperand *operand) {
  Operation *producer = operand->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  auto consumer = dyn_cast<linalg::LinalgOp>(operand->getOwner());
  if (!consumer)
    return false;
  return consumer.getMatchingIndexingMap(operand).isPermutation();
}

/// Reshape folding by expansion may only touch linalg.generic: a named op
/// would be rewritten into a generic and lose its identity.
bool reshapeTouchesOnlyGenerics(OpOperand *operand) {
  Operation *owner = operand->getOwner();
  Operation *producer = operand->get().getDefiningOp();
  for (Operation *op : {owner, producer})
    if (op && isa<linalg::LinalgOp>(op) && !isa<linalg::GenericOp>(op))
      return false;
  return producer && producer->hasOneUse();
}

struct FuseElementwiseWithoutRecomputePass
    : mcc::impl::FuseElementwiseWithoutRecomputeBase<
          FuseElementwiseWithoutRecomputePass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // Transposes as generics, so that they fuse with the elementwise ops
    // around them (a bias add, a scale) instead of being a copy of their
    // own: one loop nest, one kernel on the GPU.
    SmallVector<linalg::TransposeOp> transposes;
    getOperation()->walk(
        [&](linalg::TransposeOp op) { transposes.push_back(op); });
    IRRewriter rewriter(ctx);
    for (linalg::TransposeOp op : transposes) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::generalizeNamedOp(rewriter, op)))
        return signalPassFailure();
    }
    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(patterns,
                                                 fusesWithoutRecompute);
    linalg::populateFoldReshapeOpsByExpansionPatterns(
        patterns, reshapeTouchesOnlyGenerics);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(
        patterns);
    if (failed(applyPatternsGreedily(
            getOperation(), std::move(patterns),
            GreedyRewriteConfig().setUseTopDownTraversal())))
      return signalPassFailure();
  }
};

} // namespace
