//===- FoldChannelScale.cpp - per-channel scales into a product's weights -===//
//
// Squeeze-excite multiplies each channel of an activation by a scale, and a
// 1x1 convolution (a product W[M, C] . X[C, H*W]) reads the result: one
// more pass over the activation, reading it and writing it. Scaling the
// weights' columns instead, (W . diag(s)) . X, costs M x C multiplies on a
// small matrix and leaves the activation as it was written.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"

namespace mcc {
#define GEN_PASS_DEF_FOLDCHANNELSCALE
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

/// Whether `map` (over n, c, h, w) reads one value per channel: its results
/// are d0 (n, of extent 1 here), d1 (c) or constants.
bool perChannel(AffineMap map) {
  return llvm::all_of(map.getResults(), [](AffineExpr e) {
    if (auto d = dyn_cast<AffineDimExpr>(e))
      return d.getPosition() <= 1;
    return isa<AffineConstantExpr>(e);
  });
}

/// The ops of `body` that compute `v` from per-channel inputs and values
/// from outside, in order; false if `v` depends on anything else.
bool channelSlice(linalg::GenericOp op, Value v,
                  llvm::SetVector<Operation *> &slice) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner() != op.getBody())
      return true;
    OpOperand *operand = op.getMatchingOpOperand(arg);
    return op.isDpsInput(operand) &&
           perChannel(op.getMatchingIndexingMap(operand));
  }
  Operation *def = v.getDefiningOp();
  if (def->getBlock() != op.getBody())
    return true;
  if (slice.contains(def))
    return true;
  if (def->getNumRegions() || !isPure(def))
    return false;
  for (Value operand : def->getOperands())
    if (!channelSlice(op, operand, slice))
      return false;
  slice.insert(def);
  return true;
}

/// Rewrites product = W . collapse(G) when G's result is x * s(c).
bool fold(IRRewriter &rw, linalg::MatmulOp product) {
  auto collapse =
      product.getDpsInputs()[1].getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || !collapse->hasOneUse())
    return false;
  auto g = collapse.getSrc().getDefiningOp<linalg::GenericOp>();
  auto type = dyn_cast<RankedTensorType>(collapse.getSrcType());
  if (!g || g->getNumResults() != 1 || !g->hasOneUse() ||
      !g.hasPureTensorSemantics() || g.getNumLoops() != 4 ||
      g.getNumReductionLoops() != 0 || g.hasIndexSemantics() || !type ||
      !type.hasStaticShape() || type.getDimSize(0) != 1 ||
      collapse.getReassociationIndices() !=
          SmallVector<ReassociationIndices>{{0, 1}, {2, 3}} ||
      !g.getIndexingMapsArray().back().isIdentity())
    return false;
  auto yield = cast<linalg::YieldOp>(g.getBody()->getTerminator());
  auto mul = yield.getOperand(0).getDefiningOp<arith::MulFOp>();
  if (!mul || mul->getBlock() != g.getBody() || !mul->hasOneUse())
    return false;
  // Which factor is the channel's scale.
  llvm::SetVector<Operation *> slice;
  Value scale, value;
  for (unsigned i = 0; i < 2 && !scale; ++i) {
    slice.clear();
    if (channelSlice(g, mul->getOperand(i), slice)) {
      scale = mul->getOperand(i);
      value = mul->getOperand(1 - i);
    }
  }
  // A factor that is itself per channel only would leave G a broadcast.
  if (!scale || !isa<BlockArgument>(value) && value.getDefiningOp() &&
                    value.getDefiningOp()->getBlock() != g.getBody())
    return false;
  llvm::SetVector<Operation *> valueSlice;
  if (channelSlice(g, value, valueSlice))
    return false;
  // Scaling the weights reads and writes M x C floats per run, the pass
  // over the activation C x H x W: late stages (7 x 7 images under 160
  // or more output channels) are better left as they are.
  auto wType = cast<RankedTensorType>(product.getDpsInputs()[0].getType());
  if (!wType.hasStaticShape() ||
      wType.getDimSize(0) > type.getDimSize(2) * type.getDimSize(3))
    return false;

  // W'[m, k] = W[m, k] * s(k): the per-channel inputs read at (0, k, ...).
  Location loc = product.getLoc();
  MLIRContext *ctx = rw.getContext();
  Value w = product.getDpsInputs()[0];
  AffineExpr m = getAffineDimExpr(0, ctx), k = getAffineDimExpr(1, ctx);
  SmallVector<Value> inputs = {w};
  SmallVector<AffineMap> maps = {AffineMap::get(2, 0, {m, k}, ctx)};
  SmallVector<BlockArgument> used;
  for (OpOperand *in : g.getDpsInputOperands()) {
    BlockArgument arg = g.getMatchingBlockArgument(in);
    bool read = arg == scale || llvm::any_of(slice, [&](Operation *op) {
                  return llvm::is_contained(op->getOperands(), arg);
                });
    if (!read)
      continue;
    SmallVector<AffineExpr> results;
    for (AffineExpr e : g.getMatchingIndexingMap(in).getResults()) {
      auto d = dyn_cast<AffineDimExpr>(e);
      results.push_back(!d                     ? e
                        : d.getPosition() == 1 ? k
                                               : getAffineConstantExpr(0, ctx));
    }
    inputs.push_back(in->get());
    maps.push_back(AffineMap::get(2, 0, results, ctx));
    used.push_back(arg);
  }
  maps.push_back(AffineMap::get(2, 0, {m, k}, ctx));
  rw.setInsertionPoint(product);
  Value init = tensor::EmptyOp::create(rw, loc, wType.getShape(),
                                       wType.getElementType());
  auto scaled = linalg::GenericOp::create(
      rw, loc, TypeRange{wType}, inputs, ValueRange{init}, maps,
      SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel),
      [&](OpBuilder &b, Location l, ValueRange args) {
        IRMapping map;
        for (auto [arg, now] : llvm::zip(used, args.drop_front()))
          map.map(arg, now);
        for (Operation *op : slice)
          b.clone(*op, map);
        Value s = map.lookupOrDefault(scale);
        linalg::YieldOp::create(
            b, l, ValueRange{arith::MulFOp::create(b, l, args[0], s)});
      });
  rw.modifyOpInPlace(product, [&] {
    product.getDpsInputOperand(0)->set(scaled.getResult(0));
  });
  // G now yields the unscaled value; the multiply and what only it used
  // are dead. When that value is an input read at G's own indices, G is a
  // copy and the product reads the input.
  if (auto arg = dyn_cast<BlockArgument>(value);
      arg && arg.getOwner() == g.getBody()) {
    OpOperand *in = g.getMatchingOpOperand(arg);
    if (g.getMatchingIndexingMap(in).isIdentity() &&
        in->get().getType() == g->getResult(0).getType()) {
      rw.replaceOp(g, in->get());
      return true;
    }
  }
  rw.modifyOpInPlace(yield, [&] { yield->setOperand(0, value); });
  rw.eraseOp(mul);
  return true;
}

struct FoldChannelScalePass
    : mcc::impl::FoldChannelScaleBase<FoldChannelScalePass> {
  void runOnOperation() override {
    SmallVector<linalg::MatmulOp> products;
    getOperation()->walk([&](linalg::MatmulOp op) { products.push_back(op); });
    IRRewriter rw(&getContext());
    for (linalg::MatmulOp product : products)
      (void)fold(rw, product);
  }
};

} // namespace
