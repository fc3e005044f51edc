//===- PadIntoProducer.cpp - padded tensors written in place --------------===//
//
// A tensor.pad (the input of a padded convolution) bufferizes into a fresh
// buffer, filled whole with the padding value, and a copy of its source into
// the interior: two extra passes over the activation, both single-threaded.
// Here the pad becomes fills of its border strips only, and the source's
// producer (an op that writes a fresh tensor.empty) writes its result
// straight into the interior: bufferization then keeps one buffer and no
// copy. Other sources are inserted into the interior (one copy, no fill).
// So is the input of a depthwise convolution that the CPU kernel reads in
// place (ConvPadding.h): mcc-vectorize-depthwise-conv drops the buffer, its
// fills and the copy, and the source stays a tensor of its own, which its
// producer (a product's epilogue) writes without padding.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/ConvPadding.h"
#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mcc {
#define GEN_PASS_DEF_PADINTOPRODUCER
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

/// Fills `box` (offsets, sizes) of `dest` with `value`, in place.
Value fillBox(OpBuilder &b, Location loc, Value dest, ArrayRef<int64_t> offsets,
              ArrayRef<int64_t> sizes, Value value) {
  SmallVector<OpFoldResult> off =
                                getAsIndexOpFoldResult(b.getContext(), offsets),
                            sz = getAsIndexOpFoldResult(b.getContext(), sizes),
                            one(offsets.size(), b.getIndexAttr(1));
  Value slice = tensor::ExtractSliceOp::create(b, loc, dest, off, sz, one);
  Value filled = linalg::FillOp::create(b, loc, value, slice).getResult(0);
  return tensor::InsertSliceOp::create(b, loc, filled, dest, off, sz, one);
}

/// The linalg op that produces `v` into a tensor.empty and whose payload
/// does not read that init, so it may write anywhere; else null. A value
/// with other readers (a residual connection) is copied instead: one-shot
/// bufferization would copy it out of the padded buffer and back.
linalg::LinalgOp freshProducer(Value v) {
  auto op = v.getDefiningOp<linalg::LinalgOp>();
  if (!op || op->getNumResults() != 1 || !v.hasOneUse() ||
      !op.hasPureTensorSemantics())
    return {};
  OpOperand *init = op.getDpsInitOperand(0);
  if (!init->get().getDefiningOp<tensor::EmptyOp>() ||
      op.payloadUsesValueFromOperand(init))
    return {};
  return op;
}

LogicalResult rewritePad(RewriterBase &rw, tensor::PadOp pad) {
  Value value = pad.getConstantPaddingValue();
  auto type = pad.getResultType();
  auto srcType = pad.getSourceType();
  if (!value || !type.hasStaticShape() || !srcType.hasStaticShape() ||
      ShapedType::isDynamicShape(pad.getStaticLow()) ||
      ShapedType::isDynamicShape(pad.getStaticHigh()))
    return failure();
  ArrayRef<int64_t> low = pad.getStaticLow(), src = srcType.getShape(),
                    full = type.getShape();
  Location loc = pad.getLoc();
  // The padded tensor is built before the producer that will write into it;
  // the padding value must be a constant to be rebuilt there.
  auto cst = value.getDefiningOp<arith::ConstantOp>();
  if (!cst)
    return failure();
  Value source = pad.getSource();
  bool readInPlace = mcc::isDepthwisePadReadInPlace(pad);
  linalg::LinalgOp producer =
      readInPlace ? linalg::LinalgOp() : freshProducer(source);
  // The producer may sit behind a reshape that only adds unit dims (a
  // convolution run as one group pads [N, 1, C, H, W]): it then writes a
  // rank-reduced interior slice.
  RankedTensorType producedType;
  if (!producer && !readInPlace)
    if (auto expand = source.getDefiningOp<tensor::ExpandShapeOp>())
      if (expand->hasOneUse() &&
          llvm::all_of(expand.getReassociationIndices(),
                       [&](const ReassociationIndices &group) {
                         return llvm::count_if(group, [&](int64_t d) {
                                  return srcType.getDimSize(d) != 1;
                                }) <= 1;
                       }))
        if ((producer = freshProducer(expand.getSrc())))
          producedType = expand.getSrcType();
  if (producer)
    rw.setInsertionPoint(producer);
  else
    rw.setInsertionPoint(pad);
  value = arith::ConstantOp::create(rw, loc, cst.getValue());
  // An allocation, not a tensor.empty: CSE would merge two pads of one
  // shape into one tensor that both producers write (and bufferization
  // would then copy to keep them apart).
  Value dest =
      bufferization::AllocTensorOp::create(rw, loc, type, ValueRange{});
  // Border strips: along dim d, the low and high slabs span the interior
  // in the dims before d and everything in the dims after it, so the
  // strips are disjoint and cover exactly the border.
  unsigned rank = full.size();
  for (unsigned d = 0; d < rank; ++d) {
    int64_t hi = full[d] - low[d] - src[d];
    for (auto [start, len] :
         {std::pair{int64_t(0), low[d]}, std::pair{low[d] + src[d], hi}}) {
      if (len == 0)
        continue;
      SmallVector<int64_t> off(rank), sz(rank);
      for (unsigned j = 0; j < rank; ++j) {
        off[j] = j < d ? low[j] : 0;
        sz[j] = j < d ? src[j] : full[j];
      }
      off[d] = start;
      sz[d] = len;
      dest = fillBox(rw, loc, dest, off, sz, value);
    }
  }
  SmallVector<OpFoldResult> off = getAsIndexOpFoldResult(rw.getContext(), low),
                            sz = getAsIndexOpFoldResult(rw.getContext(), src),
                            one(rank, rw.getIndexAttr(1));
  if (producer) {
    // The producer writes into the interior slice of the padded tensor.
    Value interior =
        producedType
            ? tensor::ExtractSliceOp::create(rw, loc, producedType, dest, off,
                                             sz, one)
            : tensor::ExtractSliceOp::create(rw, loc, dest, off, sz, one);
    rw.modifyOpInPlace(producer,
                       [&] { producer.getDpsInitOperand(0)->set(interior); });
    rw.setInsertionPoint(pad);
  }
  // Behind a unit-dim reshape, the producer's own result goes back in
  // (rank-reduced, like the slice it wrote), so that bufferization sees
  // the same slice and copies nothing.
  if (producedType)
    source = producer->getResult(0);
  rw.replaceOpWithNewOp<tensor::InsertSliceOp>(pad, source, dest, off, sz, one);
  return success();
}

struct PadIntoProducerPass
    : mcc::impl::PadIntoProducerBase<PadIntoProducerPass> {
  void runOnOperation() override {
    SmallVector<tensor::PadOp> pads;
    getOperation().walk([&](tensor::PadOp pad) { pads.push_back(pad); });
    IRRewriter rw(&getContext());
    for (tensor::PadOp pad : pads)
      (void)rewritePad(rw, pad);
  }
};

} // namespace
