//===- InterchangeContractionLoops.cpp - reductions out of inner loops ----===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mcc {
#define GEN_PASS_DEF_INTERCHANGECONTRACTIONLOOPS
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

/// New loop order (old loop indices) that ends on a unit-stride output dim.
std::optional<SmallVector<unsigned>> innerParallelOrder(Operation *op) {
  // f32 matmuls stay named for mcc-register-tile-matmul.
  auto lop = cast<linalg::LinalgOp>(op);
  bool f32 = getElementTypeOrSelf(lop.getDpsInits()[0].getType()).isF32();
  // matmul (m, n, k) -> (m, k, n)
  if (isa<linalg::MatmulOp>(op) && !f32)
    return SmallVector<unsigned>{0, 2, 1};
  // batch_matmul (b, m, n, k) -> (b, m, k, n)
  if (isa<linalg::BatchMatmulOp>(op) && !f32)
    return SmallVector<unsigned>{0, 1, 3, 2};
  // conv nchw_fchw (n, f, oh, ow, c, kh, kw) -> (n, f, c, kh, kw, oh, ow)
  if (isa<linalg::Conv2DNchwFchwOp>(op))
    return SmallVector<unsigned>{0, 1, 4, 5, 6, 2, 3};
  // depthwise nchw_chw (n, oh, ow, c, kh, kw) -> (n, c, kh, kw, oh, ow);
  // f32 ones stay named for mcc-vectorize-depthwise-conv.
  if (isa<linalg::DepthwiseConv2DNchwChwOp>(op) && !f32)
    return SmallVector<unsigned>{0, 3, 4, 5, 1, 2};
  // ngchw_gfchw (n, g, f, oh, ow, c, kh, kw) -> (n, g, f, c, kh, kw, oh, ow);
  // f32 ones stay named for mcc-vectorize-grouped-conv.
  if (isa<linalg::Conv2DNgchwGfchwOp>(op) && !f32)
    return SmallVector<unsigned>{0, 1, 2, 5, 6, 7, 3, 4};
  return std::nullopt;
}

struct InterchangeContractionLoopsPass
    : mcc::impl::InterchangeContractionLoopsBase<
          InterchangeContractionLoopsPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (innerParallelOrder(op))
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      SmallVector<unsigned> order = *innerParallelOrder(op);
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::GenericOp> generic =
          linalg::generalizeNamedOp(rewriter, op);
      if (failed(generic)) {
        op->emitError("cannot generalize");
        return signalPassFailure();
      }
      if (failed(linalg::interchangeGenericOp(rewriter, *generic, order))) {
        generic->emitError("cannot interchange loops");
        return signalPassFailure();
      }
    }
  }
};

} // namespace
