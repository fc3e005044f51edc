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

/// Iterations of a linalg op with static ranges (0 if any is dynamic).
int64_t iterationCount(linalg::LinalgOp op) {
  int64_t n = 1;
  for (int64_t r : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(r))
      return 0;
    n *= r;
  }
  return n;
}

/// An elementwise producer of at most four scalar ops.
bool isCheapElementwise(linalg::GenericOp producer) {
  if (producer.getNumReductionLoops() != 0 || producer.getNumDpsInits() != 1)
    return false;
  int64_t ops = 0;
  for (Operation &op : producer.getRegion().front().without_terminator()) {
    if (op.getNumRegions() != 0 || isa<linalg::IndexOp>(op))
      return false;
    ++ops;
  }
  return ops <= 4;
}

/// Inputs the producer reads element for element (not broadcast).
int64_t fullSizeInputs(linalg::GenericOp producer) {
  return llvm::count_if(producer.getDpsInputOperands(), [&](OpOperand *in) {
    return producer.getMatchingIndexingMap(in).isPermutation();
  });
}

/// True if some user of the producer's result will not fuse it (a matrix
/// product, a reshape feeding one): its result is written to memory anyway.
bool keptAnyway(linalg::GenericOp producer) {
  return llvm::any_of(producer->getUsers(), [](Operation *user) {
    return !isa<linalg::GenericOp>(user);
  });
}

/// An elementwise generic that reads a depthwise convolution's result (its
/// bias and activation), which the CPU kernel applies before its store
/// (mcc-vectorize-depthwise-conv): written once there, its result is
/// cheaper to read than to recompute from the convolution's in each
/// consumer (squeeze-excite's mean and scaling both did).
bool convEpilogue(linalg::GenericOp producer) {
  return llvm::any_of(producer.getDpsInputs(), [](Value v) {
    return v.getDefiningOp<linalg::DepthwiseConv2DNchwChwOp>();
  });
}

/// A producer worth recomputing wherever a consumer reads it: a cheap
/// elementwise op either over a space at least 64 times smaller than the
/// consumer's (a row's mean divided by its length, a variance's rsqrt, read
/// once per row element), or read element for element by each of several
/// consumers (a bias + residual add feeding layer norm's two reductions
/// and its normalization; softmax's exp feeding its sum and its division).
/// Recomputing costs a few ops per consumer element and saves a loop nest
/// (a kernel launch on the GPU) and a round trip through memory. Not where
/// the result is written anyway and the producer reads several full-size
/// tensors: reading them again costs more than reading its result (a
/// ResNet block's output, kept for the next convolution, recomputed from
/// two convolution outputs in the next residual add).
bool isRecomputable(linalg::GenericOp producer, linalg::LinalgOp consumer,
                    OpOperand *operand, bool keepConvEpilogues) {
  if (!isCheapElementwise(producer))
    return false;
  if (keepConvEpilogues && !producer->hasOneUse() && convEpilogue(producer))
    return false;
  if (consumer.getMatchingIndexingMap(operand).isPermutation())
    return !keptAnyway(producer) || fullSizeInputs(producer) <= 1;
  int64_t small = iterationCount(producer), large = iterationCount(consumer);
  return small > 0 && large >= 64 * small;
}

/// True if fusing the producer of `operand` into its consumer evaluates
/// each producer element exactly once (the consumer reads the operand
/// through a permutation of all of its loops), or recomputes only cheap
/// elementwise values.
bool fusesWithoutRecompute(OpOperand *operand, bool keepConvEpilogues) {
  Operation *producer = operand->get().getDefiningOp();
  auto consumer = dyn_cast<linalg::LinalgOp>(operand->getOwner());
  if (!producer || !consumer)
    return false;
  if (auto generic = dyn_cast<linalg::GenericOp>(producer);
      generic && isRecomputable(generic, consumer, operand, keepConvEpilogues))
    return true;
  if (!producer->hasOneUse())
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
  using FuseElementwiseWithoutRecomputeBase::
      FuseElementwiseWithoutRecomputeBase;

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
    bool keep = keepConvEpilogues;
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [keep](OpOperand *operand) {
          return fusesWithoutRecompute(operand, keep);
        });
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
