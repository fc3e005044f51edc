//===- ReductionLoops.cpp - innermost reductions with a register sum ------===//
//
// convert-linalg-to-loops turns a reduction into a loop that loads and
// stores its accumulator in memory on every iteration; LLVM cannot prove
// the store does not alias the inputs, so the sum stays a serial chain
// through memory and never vectorizes (softmax's exp-sum over a sequence
// was 45% of a dynamic bert run). A generic on buffers whose only
// reduction is its innermost loop becomes loops here instead: the
// accumulator is an scf.for iter_arg, loaded once and stored once per
// output element (through every trailing reduction loop: a global average
// pool has two), and a floating-point sum may be reassociated so that
// LLVM vectorizes it (the result then differs from a serial sum by
// rounding only, as ONNX Runtime's vectorized sums do). (Trailing
// reduction loops over contiguous memory are collapsed into one before,
// by mcc-collapse-contiguous-loops.)
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mcc {
#define GEN_PASS_DEF_REDUCTIONLOOPS
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

/// Indices of `map` applied to the loop induction variables.
SmallVector<Value> applyMap(OpBuilder &b, Location loc, AffineMap map,
                            ValueRange ivs) {
  SmallVector<Value> idx;
  for (unsigned r = 0; r < map.getNumResults(); ++r) {
    AffineExpr e = map.getResult(r);
    if (auto d = dyn_cast<AffineDimExpr>(e)) {
      idx.push_back(ivs[d.getPosition()]);
      continue;
    }
    idx.push_back(
        affine::AffineApplyOp::create(b, loc, map.getSubMap({r}), ivs));
  }
  return idx;
}

struct InnermostReductionToLoops : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1)
      return failure();
    SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
    unsigned n = iters.size();
    if (n == 0 || iters.back() != utils::IteratorType::reduction)
      return failure();
    // The trailing reduction loops (a global average pool reduces two).
    unsigned first = n;
    while (first > 0 && iters[first - 1] == utils::IteratorType::reduction)
      --first;
    for (unsigned i = 0; i < first; ++i)
      if (iters[i] != utils::IteratorType::parallel)
        return failure();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    AffineMap outMap = maps.back();
    for (unsigned i = first; i < n; ++i)
      if (outMap.isFunctionOfDim(i))
        return failure();
    // The accumulator must be what the body combines into the output.
    Block &body = op.getRegion().front();
    if (!llvm::all_of(op.getDpsInputOperands(), [](OpOperand *o) {
          return isa<MemRefType>(o->get().getType());
        }))
      return failure();

    Location loc = op.getLoc();
    SmallVector<Range> ranges = cast<linalg::LinalgOp>(op.getOperation())
                                    .createLoopRanges(rewriter, loc);
    auto toValue = [&](OpFoldResult f) {
      return getValueOrCreateConstantIndexOp(rewriter, loc, f);
    };
    SmallVector<Value> ivs(n);
    Value out = op.getDpsInitOperand(0)->get();
    // Parallel loops outermost, in order.
    OpBuilder::InsertionGuard guard(rewriter);
    for (unsigned i = 0; i < first; ++i) {
      auto loop = scf::ForOp::create(rewriter, loc, toValue(ranges[i].offset),
                                     toValue(ranges[i].size),
                                     toValue(ranges[i].stride));
      ivs[i] = loop.getInductionVar();
      rewriter.setInsertionPointToStart(loop.getBody());
    }
    // The output index does not depend on the reduction dims: any value
    // stands in for them.
    for (unsigned i = first; i < n; ++i)
      ivs[i] = toValue(ranges[i].offset);
    SmallVector<Value> outIdx = applyMap(rewriter, loc, outMap, ivs);
    Value init = memref::LoadOp::create(rewriter, loc, out, outIdx);
    // The outer reduction loops carry the sum to the innermost one.
    Value acc0 = init;
    SmallVector<scf::ForOp> outer;
    for (unsigned i = first; i + 1 < n; ++i) {
      auto loop = scf::ForOp::create(
          rewriter, loc, toValue(ranges[i].offset), toValue(ranges[i].size),
          toValue(ranges[i].stride), ValueRange{acc0});
      ivs[i] = loop.getInductionVar();
      acc0 = loop.getRegionIterArg(0);
      outer.push_back(loop);
      rewriter.setInsertionPointToStart(loop.getBody());
    }
    auto red = scf::ForOp::create(
        rewriter, loc, toValue(ranges[n - 1].offset),
        toValue(ranges[n - 1].size), toValue(ranges[n - 1].stride),
        ValueRange{acc0},
        [&](OpBuilder &b, Location l, Value k, ValueRange acc) {
          SmallVector<Value> all = ivs;
          all[n - 1] = k;
          IRMapping map;
          for (OpOperand *in : op.getDpsInputOperands()) {
            AffineMap m = op.getMatchingIndexingMap(in);
            Value v =
                memref::LoadOp::create(b, l, in->get(), applyMap(b, l, m, all));
            map.map(body.getArgument(in->getOperandNumber()), v);
          }
          map.map(body.getArguments().back(), acc[0]);
          for (Operation &inner : body.without_terminator()) {
            if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
              map.map(index.getResult(), all[index.getDim()]);
              continue;
            }
            b.clone(inner, map);
          }
          Value next = map.lookup(
              cast<linalg::YieldOp>(body.getTerminator()).getOperand(0));
          // A float sum into the accumulator may be reassociated.
          if (auto add = next.getDefiningOp<arith::AddFOp>())
            if (add.getLhs() == acc[0] || add.getRhs() == acc[0])
              add.setFastmath(add.getFastmath() |
                              arith::FastMathFlags::reassoc);
          scf::YieldOp::create(b, l, next);
        });
    Value total = red.getResult(0);
    for (scf::ForOp loop : llvm::reverse(outer)) {
      rewriter.setInsertionPointToEnd(loop.getBody());
      scf::YieldOp::create(rewriter, loc, total);
      total = loop.getResult(0);
      rewriter.setInsertionPointAfter(loop);
    }
    memref::StoreOp::create(rewriter, loc, total, out, outIdx);
    rewriter.eraseOp(op);
    return success();
  }
};

struct ReductionLoopsPass : mcc::impl::ReductionLoopsBase<ReductionLoopsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<InnermostReductionToLoops>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
