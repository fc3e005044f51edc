//===- DynamicExpandShape.cpp - expand_shape from its own output sizes ----===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace mcc {
#define GEN_PASS_DEF_DYNAMICEXPANDSHAPE
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

bool hasGroupWithSeveralDynamicDims(memref::ExpandShapeOp op) {
  ArrayRef<int64_t> shape = op.getResultType().getShape();
  for (const ReassociationIndices &group : op.getReassociationIndices())
    if (llvm::count_if(group, [&](int64_t d) {
          return ShapedType::isDynamic(shape[d]);
        }) > 1)
      return true;
  return false;
}

/// view = reinterpret_cast(base, offset, output sizes, strides): within a
/// group the innermost dim keeps the source dim's stride and each outer
/// dim's stride is the next one's times its size (the group is contiguous,
/// as expand_shape requires).
void rewrite(RewriterBase &rw, memref::ExpandShapeOp op) {
  Location loc = op.getLoc();
  rw.setInsertionPoint(op);
  auto meta =
      memref::ExtractStridedMetadataOp::create(rw, loc, op.getSrc());
  SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
  SmallVector<OpFoldResult> srcStrides = meta.getConstifiedMixedStrides();
  SmallVector<OpFoldResult> strides(sizes.size());
  for (auto [srcDim, group] :
       llvm::enumerate(op.getReassociationIndices())) {
    OpFoldResult stride = srcStrides[srcDim];
    for (int64_t d : llvm::reverse(group)) {
      strides[d] = stride;
      // Fold static products; the rest is an index multiplication.
      std::optional<int64_t> a = getConstantIntValue(stride),
                             b = getConstantIntValue(sizes[d]);
      if (a && b)
        stride = rw.getIndexAttr(*a * *b);
      else
        stride = arith::MulIOp::create(
                     rw, loc, getValueOrCreateConstantIndexOp(rw, loc, stride),
                     getValueOrCreateConstantIndexOp(rw, loc, sizes[d]))
                     .getResult();
    }
  }
  rw.replaceOpWithNewOp<memref::ReinterpretCastOp>(
      op, op.getResultType(), meta.getBaseBuffer(),
      meta.getConstifiedMixedOffset(), sizes, strides);
}

struct DynamicExpandShapePass
    : mcc::impl::DynamicExpandShapeBase<DynamicExpandShapePass> {
  void runOnOperation() override {
    SmallVector<memref::ExpandShapeOp> ops;
    getOperation().walk([&](memref::ExpandShapeOp op) {
      if (hasGroupWithSeveralDynamicDims(op))
        ops.push_back(op);
    });
    IRRewriter rw(&getContext());
    for (memref::ExpandShapeOp op : ops)
      rewrite(rw, op);
  }
};

} // namespace
