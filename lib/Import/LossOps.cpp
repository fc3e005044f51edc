//===- LossOps.cpp - NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ---===//
//
// One generic gathers -input[n, target, d...] * weight[target] and the
// weight itself (both 0 at ignore_index); the reductions then follow ONNX:
// 'none' keeps the per-element loss, 'sum' adds it up, 'mean' divides the
// sum by the total weight of the counted elements.
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;

namespace mcc {
namespace {

Value addF(OpBuilder &b, Location l, ValueRange v) {
  return arith::AddFOp::create(b, l, v[0], v[1]);
}

/// NLL over log-probabilities `logp` [N, C, d...] and `target` [N, d...].
FailureOr<Value> negativeLogLikelihood(NodeLowering &n, Value logp,
                                       Value target,
                                       std::optional<Value> weight) {
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Shape in = shapeOf(logp), ts = shapeOf(target);
  if (in.size() < 2 || ts.size() != in.size() - 1)
    return n.fail("input must be [N, C, d...] and target [N, d...]");
  int64_t C = in[1];
  std::optional<int64_t> ignore;
  if (n.hasAttr("ignore_index"))
    ignore = n.attrInt("ignore_index", 0);
  std::string reduction = n.attrString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return n.fail("unknown reduction '" + reduction + "'");
  Type et = cast<RankedTensorType>(logp.getType()).getElementType();
  int64_t r = ts.size();
  Value lossInit = emitFilled(b, loc, ts, b.getFloatAttr(et, 0.0));
  Value wInit = emitFilled(b, loc, ts, b.getFloatAttr(et, 0.0));
  SmallVector<AffineMap> maps(3, AffineMap::getMultiDimIdentityMap(r, ctx));
  SmallVector<utils::IteratorType> iters(r, utils::IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{lossInit.getType(), wInit.getType()},
      ValueRange{target}, ValueRange{lossInit, wInit}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value t = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
        Value keep = arith::ConstantOp::create(nb, l, nb.getBoolAttr(true));
        if (ignore)
          keep = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::ne, a[0],
              arith::ConstantOp::create(
                  nb, l, nb.getIntegerAttr(a[0].getType(), *ignore)));
        // Clamp so an ignored (or bad) label never reads out of bounds.
        Value zero = arith::ConstantIndexOp::create(nb, l, 0);
        Value safe = arith::MinSIOp::create(
            nb, l, arith::MaxSIOp::create(nb, l, t, zero),
            arith::ConstantIndexOp::create(nb, l, C - 1));
        SmallVector<Value> at = {linalg::IndexOp::create(nb, l, 0), safe};
        for (int64_t d = 1; d < r; ++d)
          at.push_back(linalg::IndexOp::create(nb, l, d));
        Value x = tensor::ExtractOp::create(nb, l, logp, at);
        Value w = scalarConstant(nb, l, et, 1.0);
        if (weight)
          w = tensor::ExtractOp::create(nb, l, *weight, ValueRange{safe});
        Value fz = scalarConstant(nb, l, et, 0.0);
        Value loss =
            arith::NegFOp::create(nb, l, arith::MulFOp::create(nb, l, x, w));
        linalg::YieldOp::create(
            nb, l,
            ValueRange{arith::SelectOp::create(nb, l, keep, loss, fz),
                       arith::SelectOp::create(nb, l, keep, w, fz)});
      });
  Value loss = op.getResult(0), wsum = op.getResult(1);
  if (reduction == "none")
    return loss;
  std::vector<int64_t> all;
  for (int64_t d = 0; d < r; ++d)
    all.push_back(d);
  Value total =
      emitReduction(b, loc, loss, all, false, b.getFloatAttr(et, 0.0), addF);
  if (reduction == "sum")
    return total;
  Value denom =
      emitReduction(b, loc, wsum, all, false, b.getFloatAttr(et, 0.0), addF);
  return emitElementwise(b, loc, ValueRange{total, denom}, et, {},
                         [](OpBuilder &nb, Location l, ValueRange v) {
                           return (Value)arith::DivFOp::create(nb, l, v[0],
                                                               v[1]);
                         });
}

LogicalResult lowerNLL(NodeLowering &n) {
  std::optional<Value> weight;
  if (n.hasInput(2))
    weight = n.value(2);
  auto r = negativeLogLikelihood(n, n.value(0), n.value(1), weight);
  if (failed(r))
    return failure();
  n.setOutput(0, *r, n.dtype(0));
  return success();
}

LogicalResult lowerSoftmaxCrossEntropy(NodeLowering &n) {
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Value x = n.value(0);
  Shape in = shapeOf(x);
  if (in.size() < 2)
    return n.fail("scores must be [N, C, d...]");
  Type et = n.elementType(n.dtype(0));
  // log_softmax over the class axis (1), max-shifted.
  Value mx = emitReduction(b, loc, x, {1}, true, b.getFloatAttr(et, -INFINITY),
                           [](OpBuilder &nb, Location l, ValueRange v) {
                             return (Value)arith::MaximumFOp::create(
                                 nb, l, v[0], v[1]);
                           });
  Value e =
      emitElementwise(b, loc, ValueRange{x, mx}, et, in,
                      [](OpBuilder &nb, Location l, ValueRange v) {
                        return (Value)math::ExpOp::create(
                            nb, l, arith::SubFOp::create(nb, l, v[0], v[1]));
                      });
  Value s = emitReduction(b, loc, e, {1}, true, b.getFloatAttr(et, 0.0), addF);
  Value logp =
      emitElementwise(b, loc, ValueRange{x, mx, s}, et, in,
                      [](OpBuilder &nb, Location l, ValueRange v) {
                        Value d = arith::SubFOp::create(nb, l, v[0], v[1]);
                        return (Value)arith::SubFOp::create(
                            nb, l, d, math::LogOp::create(nb, l, v[2]));
                      });
  std::optional<Value> weight;
  if (n.hasInput(2))
    weight = n.value(2);
  auto r = negativeLogLikelihood(n, logp, n.value(1), weight);
  if (failed(r))
    return failure();
  n.setOutput(0, *r, n.dtype(0));
  n.setOutput(1, logp, n.dtype(0));
  return success();
}

} // namespace

void registerLossLowerings() {
  opLowerings()["NegativeLogLikelihoodLoss"] = lowerNLL;
  opLowerings()["SoftmaxCrossEntropyLoss"] = lowerSoftmaxCrossEntropy;
}

} // namespace mcc
