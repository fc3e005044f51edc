//===- NormalizationOps.cpp - softmax and normalization layers ------------===//
//
// Lowered to reductions plus elementwise generics; the elementwise-fusion
// pass later merges the generics that share an iteration space.
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
Value maxF(OpBuilder &b, Location l, ValueRange v) {
  return arith::MaximumFOp::create(b, l, v[0], v[1]);
}

/// The input of Softmax, LogSoftmax and Hardmax and the axis to work on:
/// before opset 13 they coerce the input to 2-D at `axis` (default 1);
/// from 13 on they work along one axis (default -1).
struct SoftmaxFamilyInput {
  Value x;
  Shape shape;
  int64_t axis;
};

FailureOr<SoftmaxFamilyInput> softmaxFamilyInput(NodeLowering &n) {
  const Shape &full = n.shape(0);
  int64_t fullRank = full.size();
  int64_t axis =
      normalizeAxis(n.attrInt("axis", n.opset() < 13 ? 1 : -1), fullRank);
  if (axis < 0 || axis >= fullRank) {
    (void)n.fail("axis out of range");
    return failure();
  }
  SoftmaxFamilyInput input{n.value(0), full, axis};
  if (n.opset() < 13) {
    input.shape = {dimsProduct(Shape(full.begin(), full.begin() + axis)),
                   dimsProduct(Shape(full.begin() + axis, full.end()))};
    input.x = emitReshape(n.builder(), n.loc(), input.x, input.shape);
    input.axis = 1;
  }
  return input;
}

LogicalResult lowerSoftmax(NodeLowering &n, bool logSoftmax) {
  if (!isFloatDType(n.dtype(0)))
    return n.fail("input must be floating point");
  const Shape &origShape = n.shape(0);
  auto input = softmaxFamilyInput(n);
  if (failed(input))
    return failure();
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(n.dtype(0));
  Value x = input->x;
  Shape in = input->shape;
  int64_t axis = input->axis;
  Value mx = emitReduction(b, loc, x, {axis}, true,
                           b.getFloatAttr(et, -INFINITY), maxF);
  Value e =
      emitElementwise(b, loc, ValueRange{x, mx}, et, in,
                      [](OpBuilder &nb, Location l, ValueRange v) {
                        return (Value)math::ExpOp::create(
                            nb, l, arith::SubFOp::create(nb, l, v[0], v[1]));
                      });
  // The sum of float16 terms accumulates in f32, rounded once; bfloat16
  // accumulates in bfloat16 (both as NumPy, the reference, does).
  int32_t dt = n.dtype(0);
  Type sumType = dt == kFloat16 ? (Type)b.getF32Type() : et;
  Value s = emitReduction(
      b, loc, e, {axis}, true, b.getFloatAttr(sumType, 0.0), addF,
      [&](OpBuilder &nb, Location l, ValueRange v) {
        return emitScalarCast(nb, l, v[0], dt, dtypeOf(sumType), sumType);
      });
  if (sumType != et)
    s = emitElementwise(b, loc, s, et, shapeOf(s),
                        [&](OpBuilder &nb, Location l, ValueRange v) {
                          return (Value)arith::TruncFOp::create(nb, l, et,
                                                                v[0]);
                        });
  Value r;
  if (logSoftmax)
    r = emitElementwise(b, loc, ValueRange{x, mx, s}, et, in,
                        [](OpBuilder &nb, Location l, ValueRange v) {
                          Value d = arith::SubFOp::create(nb, l, v[0], v[1]);
                          return (Value)arith::SubFOp::create(
                              nb, l, d, math::LogOp::create(nb, l, v[2]));
                        });
  else
    r = emitElementwise(b, loc, ValueRange{e, s}, et, in,
                        [](OpBuilder &nb, Location l, ValueRange v) {
                          return (Value)arith::DivFOp::create(nb, l, v[0],
                                                              v[1]);
                        });
  n.setOutput(0, emitReshape(b, loc, r, origShape), n.dtype(0));
  return success();
}

/// Mean and 1/sqrt(var + eps) over `axes`, kept as size-1 dims.
std::pair<Value, Value> meanAndInvStd(OpBuilder &b, Location loc, Value x,
                                      const std::vector<int64_t> &axes,
                                      double eps, Type et) {
  Shape in = shapeOf(x);
  int64_t count = 1;
  for (int64_t a : axes)
    count *= in[a];
  Value sum =
      emitReduction(b, loc, x, axes, true, b.getFloatAttr(et, 0.0), addF);
  Shape kept = shapeOf(sum);
  Value mean =
      emitElementwise(b, loc, ValueRange{sum}, et, kept,
                      [&](OpBuilder &nb, Location l, ValueRange v) {
                        return (Value)arith::DivFOp::create(
                            nb, l, v[0], scalarConstant(nb, l, et, count));
                      });
  Value centered2 =
      emitElementwise(b, loc, ValueRange{x, mean}, et, in,
                      [](OpBuilder &nb, Location l, ValueRange v) {
                        Value d = arith::SubFOp::create(nb, l, v[0], v[1]);
                        return (Value)arith::MulFOp::create(nb, l, d, d);
                      });
  Value vsum = emitReduction(b, loc, centered2, axes, true,
                             b.getFloatAttr(et, 0.0), addF);
  Value inv = emitElementwise(
      b, loc, ValueRange{vsum}, et, kept,
      [&](OpBuilder &nb, Location l, ValueRange v) {
        Value var = arith::DivFOp::create(nb, l, v[0],
                                          scalarConstant(nb, l, et, count));
        Value ve =
            arith::AddFOp::create(nb, l, var, scalarConstant(nb, l, et, eps));
        return (Value)math::RsqrtOp::create(nb, l, ve);
      });
  return {mean, inv};
}

LogicalResult lowerLayerNorm(NodeLowering &n) {
  if (!isFloatDType(n.dtype(0)))
    return n.fail("input must be floating point");
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  int64_t axis = normalizeAxis(n.attrInt("axis", -1), rank);
  if (axis < 0 || axis >= rank)
    return n.fail("axis out of range");
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d)
    axes.push_back(d);
  if (hasSymbolicDims(Shape(in.begin() + axis, in.end())))
    return n.fail("normalizing over symbolic dims " +
                  symbolicDims().describe(in) + " from axis " + Twine(axis) +
                  " is not supported; pin them with --shape");
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(n.dtype(0));
  auto [mean, inv] = meanAndInvStd(b, loc, n.value(0), axes,
                                   n.attrFloat("epsilon", 1e-5f), et);
  SmallVector<Value> ins = {n.value(0), mean, inv, n.value(1)};
  bool hasBias = n.hasInput(2);
  if (hasBias)
    ins.push_back(n.value(2));
  Value y = emitElementwise(
      b, loc, ins, et, in, [hasBias](OpBuilder &nb, Location l, ValueRange v) {
        Value d = arith::SubFOp::create(nb, l, v[0], v[1]);
        Value r = arith::MulFOp::create(
            nb, l, arith::MulFOp::create(nb, l, d, v[2]), v[3]);
        if (hasBias)
          r = arith::AddFOp::create(nb, l, r, v[4]);
        return r;
      });
  n.setOutput(0, y, n.dtype(0));
  n.setOutput(1, mean, n.dtype(0));
  n.setOutput(2, inv, n.dtype(0));
  return success();
}

LogicalResult lowerRMSNorm(NodeLowering &n) {
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  int64_t axis = normalizeAxis(n.attrInt("axis", -1), rank);
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d)
    axes.push_back(d);
  if (hasSymbolicDims(Shape(in.begin() + axis, in.end())))
    return n.fail("normalizing over symbolic dims " +
                  symbolicDims().describe(in) + " from axis " + Twine(axis) +
                  " is not supported; pin them with --shape");
  int64_t count = 1;
  for (int64_t a : axes)
    count *= in[a];
  double eps = n.attrFloat("epsilon", 1e-5f);
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(n.dtype(0));
  Value ss =
      emitReduction(b, loc, n.value(0), axes, true, b.getFloatAttr(et, 0.0),
                    addF, [](OpBuilder &nb, Location l, ValueRange v) {
                      return (Value)arith::MulFOp::create(nb, l, v[0], v[0]);
                    });
  Value y = emitElementwise(
      b, loc, ValueRange{n.value(0), ss, n.value(1)}, et, in,
      [&](OpBuilder &nb, Location l, ValueRange v) {
        Value ms = arith::DivFOp::create(nb, l, v[1],
                                         scalarConstant(nb, l, et, count));
        Value inv = math::RsqrtOp::create(
            nb, l,
            arith::AddFOp::create(nb, l, ms, scalarConstant(nb, l, et, eps)));
        return (Value)arith::MulFOp::create(
            nb, l, arith::MulFOp::create(nb, l, v[0], inv), v[2]);
      });
  n.setOutput(0, y, n.dtype(0));
  return success();
}

LogicalResult lowerBatchNorm(NodeLowering &n) {
  if (n.attrInt("training_mode", 0))
    return n.fail("training_mode=1 is not supported");
  const Shape &in = n.shape(0);
  if (in.size() < 2)
    return n.fail("input must have rank >= 2");
  int64_t C = in[1];
  double eps = n.attrFloat("epsilon", 1e-5f);
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(n.dtype(0));
  Shape chan = {C};
  for (size_t d = 2; d < in.size(); ++d)
    chan.push_back(1);
  bool literal =
      n.isLiteral(1) && n.isLiteral(2) && n.isLiteral(3) && n.isLiteral(4);
  if (literal) {
    // Fold to y = x * a + c with per-channel a, c computed now.
    Literal a(n.dtype(0), chan), c(n.dtype(0), chan);
    for (int64_t i = 0; i < C; ++i) {
      double s = n.literal(1).getAsDouble(i),
             bias = n.literal(2).getAsDouble(i),
             m = n.literal(3).getAsDouble(i), v = n.literal(4).getAsDouble(i);
      double k = s / std::sqrt(v + eps);
      a.setF(i, k);
      c.setF(i, bias - m * k);
    }
    auto dense = [&](const Literal &l) {
      std::vector<double> v(l.size());
      for (int64_t i = 0; i < l.size(); ++i)
        v[i] = l.getF(i);
      return floatConstantTensor(b, loc, chan, et, v);
    };
    Value av = dense(a), cv = dense(c);
    Value y = emitElementwise(
        b, loc, ValueRange{n.value(0), av, cv}, et, in,
        [](OpBuilder &nb, Location l, ValueRange v) {
          return (Value)arith::AddFOp::create(
              nb, l, arith::MulFOp::create(nb, l, v[0], v[1]), v[2]);
        });
    n.setOutput(0, y, n.dtype(0));
    return success();
  }
  SmallVector<Value> ins = {n.value(0)};
  for (size_t i = 1; i <= 4; ++i)
    ins.push_back(emitReshape(b, loc, n.value(i), chan));
  Value y = emitElementwise(
      b, loc, ins, et, in, [&](OpBuilder &nb, Location l, ValueRange v) {
        Value inv = math::RsqrtOp::create(
            nb, l,
            arith::AddFOp::create(nb, l, v[4], scalarConstant(nb, l, et, eps)));
        Value d = arith::SubFOp::create(nb, l, v[0], v[3]);
        return (Value)arith::AddFOp::create(
            nb, l,
            arith::MulFOp::create(nb, l, arith::MulFOp::create(nb, l, d, inv),
                                  v[1]),
            v[2]);
      });
  n.setOutput(0, y, n.dtype(0));
  return success();
}

LogicalResult lowerInstanceNorm(NodeLowering &n) {
  const Shape &in = n.shape(0);
  if (in.size() < 3)
    return n.fail("input must have rank >= 3");
  std::vector<int64_t> axes;
  for (size_t d = 2; d < in.size(); ++d)
    axes.push_back(d);
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(n.dtype(0));
  auto [mean, inv] = meanAndInvStd(b, loc, n.value(0), axes,
                                   n.attrFloat("epsilon", 1e-5f), et);
  Shape chan = {in[1]};
  for (size_t d = 2; d < in.size(); ++d)
    chan.push_back(1);
  Value s = emitReshape(b, loc, n.value(1), chan),
        bias = emitReshape(b, loc, n.value(2), chan);
  Value y =
      emitElementwise(b, loc, ValueRange{n.value(0), mean, inv, s, bias}, et,
                      in, [](OpBuilder &nb, Location l, ValueRange v) {
                        Value d = arith::SubFOp::create(nb, l, v[0], v[1]);
                        Value r = arith::MulFOp::create(
                            nb, l, arith::MulFOp::create(nb, l, d, v[2]), v[3]);
                        return (Value)arith::AddFOp::create(nb, l, r, v[4]);
                      });
  n.setOutput(0, y, n.dtype(0));
  return success();
}

/// GatherND with batch_dims: the dynamo exporter writes it for indexing.
LogicalResult lowerGatherND(NodeLowering &n) {
  const Shape &data = n.shape(0), &idx = n.shape(1);
  int64_t b = n.attrInt("batch_dims", 0);
  int64_t q = idx.size(), r = data.size();
  if (q < 1)
    return n.fail("indices must have rank >= 1");
  int64_t k = idx.back();
  if (b + k > r)
    return n.fail("index tuple longer than data rank");
  Shape out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), data.begin() + b + k, data.end());
  OpBuilder &bb = n.builder();
  Location loc = n.loc();
  Value dataV = n.value(0), idxV = n.value(1);
  int64_t outRank = out.size();
  Value empty =
      createEmpty(bb, loc, out, n.elementType(n.dtype(0)));
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(outRank, bb.getContext())};
  SmallVector<utils::IteratorType> iters(outRank,
                                         utils::IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      bb, loc, empty.getType(), ValueRange{}, ValueRange{empty}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange) {
        SmallVector<Value> idxAt;
        for (int64_t d = 0; d < q - 1; ++d)
          idxAt.push_back(linalg::IndexOp::create(nb, l, d));
        SmallVector<Value> at;
        for (int64_t d = 0; d < b; ++d)
          at.push_back(linalg::IndexOp::create(nb, l, d));
        for (int64_t j = 0; j < k; ++j) {
          SmallVector<Value> full = idxAt;
          full.push_back(arith::ConstantIndexOp::create(nb, l, j));
          Value iv = tensor::ExtractOp::create(nb, l, idxV, full);
          iv = arith::IndexCastOp::create(nb, l, nb.getIndexType(), iv);
          Value zero = arith::ConstantIndexOp::create(nb, l, 0);
          Value dim = dimValue(nb, l, data[b + j]);
          Value neg =
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, iv, zero);
          iv = arith::SelectOp::create(
              nb, l, neg, arith::AddIOp::create(nb, l, iv, dim), iv);
          iv = arith::MinSIOp::create(
              nb, l, arith::MaxSIOp::create(nb, l, iv, zero),
              arith::SubIOp::create(nb, l, dim,
                                    arith::ConstantIndexOp::create(nb, l, 1)));
          at.push_back(iv);
        }
        for (int64_t d = b + k; d < r; ++d)
          at.push_back(linalg::IndexOp::create(nb, l, q - 1 + d - b - k));
        linalg::YieldOp::create(
            nb, l, tensor::ExtractOp::create(nb, l, dataV, at).getResult());
      });
  n.setOutput(0, op.getResult(0), n.dtype(0));
  return success();
}

/// Hardmax: 1 at the first maximum along the axis, 0 elsewhere.
LogicalResult lowerHardmax(NodeLowering &n) {
  const Shape &orig = n.shape(0);
  auto input = softmaxFamilyInput(n);
  if (failed(input))
    return failure();
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(n.dtype(0));
  Value x = input->x;
  Shape in = input->shape;
  int64_t axis = input->axis;
  int64_t r = in.size();
  MLIRContext *ctx = b.getContext();
  // First index of the maximum: reduce (max, argmax), then compare indices.
  Shape red;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iters;
  for (int64_t d = 0; d < r; ++d) {
    iters.push_back(d == axis ? utils::IteratorType::reduction
                              : utils::IteratorType::parallel);
    red.push_back(d == axis ? 1 : in[d]);
    outExprs.push_back(d == axis ? getAffineConstantExpr(0, ctx)
                                 : getAffineDimExpr(d, ctx));
  }
  Value best = emitFilled(b, loc, red, b.getFloatAttr(et, -INFINITY));
  Value bestIdx = emitFilled(b, loc, red, b.getIndexAttr(0));
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(r, ctx),
                                 AffineMap::get(r, 0, outExprs, ctx),
                                 AffineMap::get(r, 0, outExprs, ctx)};
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{best.getType(), bestIdx.getType()}, ValueRange{x},
      ValueRange{best, bestIdx}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value i = linalg::IndexOp::create(nb, l, axis);
        Value gt =
            arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT, a[0], a[1]);
        Value first =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, i,
                                  arith::ConstantIndexOp::create(nb, l, 0));
        gt = arith::OrIOp::create(nb, l, gt, first);
        linalg::YieldOp::create(
            nb, l,
            ValueRange{arith::SelectOp::create(nb, l, gt, a[0], a[1]),
                       arith::SelectOp::create(nb, l, gt, i, a[2])});
      });
  Value idx = op.getResult(1);
  Value empty = createEmpty(b, loc, in, et);
  SmallVector<AffineMap> maps2 = {AffineMap::get(r, 0, outExprs, ctx),
                                  AffineMap::getMultiDimIdentityMap(r, ctx)};
  SmallVector<utils::IteratorType> par(r, utils::IteratorType::parallel);
  auto out = linalg::GenericOp::create(
      b, loc, empty.getType(), ValueRange{idx}, ValueRange{empty}, maps2, par,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value i = linalg::IndexOp::create(nb, l, axis);
        Value eq =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, i, a[0]);
        linalg::YieldOp::create(
            nb, l,
            arith::SelectOp::create(nb, l, eq, scalarConstant(nb, l, et, 1.0),
                                    scalarConstant(nb, l, et, 0.0))
                .getResult());
      });
  n.setOutput(0, emitReshape(b, loc, out.getResult(0), orig), n.dtype(0));
  return success();
}

LogicalResult lowerMeanVarianceNormalization(NodeLowering &n) {
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  std::vector<int64_t> axes = n.attrInts("axes", {0, 2, 3});
  for (int64_t &a : axes) {
    a = normalizeAxis(a, rank);
    if (a < 0 || a >= rank)
      return n.fail("axis out of range");
  }
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(n.dtype(0));
  // ONNX's function body: (x - mean) / (sqrt(var) + 1e-9).
  Shape kept = in;
  int64_t count = 1;
  for (int64_t a : axes) {
    kept[a] = 1;
    count *= in[a];
  }
  Value x = n.value(0);
  Value sum =
      emitReduction(b, loc, x, axes, true, b.getFloatAttr(et, 0.0), addF);
  Value sq =
      emitReduction(b, loc, x, axes, true, b.getFloatAttr(et, 0.0), addF,
                    [](OpBuilder &nb, Location l, ValueRange v) {
                      return (Value)arith::MulFOp::create(nb, l, v[0], v[0]);
                    });
  Value y = emitElementwise(
      b, loc, ValueRange{x, sum, sq}, et, in,
      [&](OpBuilder &nb, Location l, ValueRange v) {
        Value c = scalarConstant(nb, l, et, count);
        Value mean = arith::DivFOp::create(nb, l, v[1], c);
        Value meanSq = arith::DivFOp::create(nb, l, v[2], c);
        Value var = arith::SubFOp::create(
            nb, l, meanSq, arith::MulFOp::create(nb, l, mean, mean));
        Value den =
            arith::AddFOp::create(nb, l, math::SqrtOp::create(nb, l, var),
                                  scalarConstant(nb, l, et, 1e-9));
        return (Value)arith::DivFOp::create(
            nb, l, arith::SubFOp::create(nb, l, v[0], mean), den);
      });
  n.setOutput(0, y, n.dtype(0));
  return success();
}

/// LRN: x / (bias + alpha/size * sum of x^2 over a window of `size`
/// channels around c)^beta; the window sum is a reduction loop over the
/// zero-padded squares.
LogicalResult lowerLRN(NodeLowering &n) {
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  if (rank < 3)
    return n.fail("input must be [N, C, d...]");
  if (!isFloatDType(n.dtype(0)))
    return n.fail("LRN needs a floating-point input");
  int64_t size = n.attrInt("size", 0);
  if (size < 1)
    return n.fail("size must be a positive integer");
  double alpha = n.attrFloat("alpha", 1e-4f), beta = n.attrFloat("beta", 0.75f),
         bias = n.attrFloat("bias", 1.0f);
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Type et = n.elementType(n.dtype(0));
  Value x = n.value(0);
  Value sq = emitElementwise(
      b, loc, x, et, in, [](OpBuilder &nb, Location l, ValueRange v) {
        return (Value)arith::MulFOp::create(nb, l, v[0], v[0]);
      });
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  SmallVector<OpFoldResult> padLo(rank, b.getIndexAttr(0)), padHi = padLo;
  padLo[1] = b.getIndexAttr(lo);
  padHi[1] = b.getIndexAttr(hi);
  Shape padded = in;
  padded[1] += size - 1;
  sq = tensor::PadOp::create(b, loc, RankedTensorType::get(padded, et), sq,
                             padLo, padHi, scalarConstant(b, loc, et, 0.0));
  // Loops (n, c, d..., j) read padded[n, c + j, d...].
  SmallVector<AffineExpr> inExprs, outExprs;
  for (int64_t d = 0; d < rank; ++d) {
    outExprs.push_back(getAffineDimExpr(d, ctx));
    inExprs.push_back(d == 1 ? getAffineDimExpr(1, ctx) +
                                   getAffineDimExpr(rank, ctx)
                             : getAffineDimExpr(d, ctx));
  }
  Value window = createEmpty(b, loc, Shape{size}, et);
  SmallVector<AffineMap> maps = {
      AffineMap::get(rank + 1, 0, inExprs, ctx),
      AffineMap::get(rank + 1, 0, getAffineDimExpr(rank, ctx)),
      AffineMap::get(rank + 1, 0, outExprs, ctx)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters.push_back(utils::IteratorType::reduction);
  Value init = emitFilled(b, loc, in, b.getFloatAttr(et, 0.0));
  Value sum = linalg::GenericOp::create(
                  b, loc, TypeRange{init.getType()}, ValueRange{sq, window},
                  ValueRange{init}, maps, iters,
                  [](OpBuilder &nb, Location l, ValueRange a) {
                    linalg::YieldOp::create(
                        nb, l, (Value)arith::AddFOp::create(nb, l, a[2], a[0]));
                  })
                  .getResult(0);
  Value r = emitElementwise(
      b, loc, ValueRange{x, sum}, et, in,
      [&](OpBuilder &nb, Location l, ValueRange v) {
        Value d = arith::AddFOp::create(
            nb, l, scalarConstant(nb, l, et, bias),
            arith::MulFOp::create(
                nb, l, scalarConstant(nb, l, et, alpha / size), v[1]));
        return (Value)arith::DivFOp::create(
            nb, l, v[0],
            math::PowFOp::create(nb, l, d, scalarConstant(nb, l, et, beta)));
      });
  n.setOutput(0, r, n.dtype(0));
  return success();
}

/// LpNormalization: x / ||x||_p along one axis (p = 1 or 2); a zero norm
/// gives 0.
LogicalResult lowerLpNorm(NodeLowering &n) {
  if (!isFloatDType(n.dtype(0)))
    return n.fail("input must be floating point");
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  int64_t axis = normalizeAxis(n.attrInt("axis", -1), rank);
  if (axis < 0 || axis >= rank)
    return n.fail("axis out of range");
  int64_t p = n.attrInt("p", 2);
  if (p != 1 && p != 2)
    return n.fail("p must be 1 or 2");
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(n.dtype(0));
  Value x = n.value(0);
  Value sum = emitReduction(
      b, loc, x, {axis}, true, b.getFloatAttr(et, 0.0), addF,
      [p](OpBuilder &nb, Location l, ValueRange v) {
        return p == 1 ? (Value)math::AbsFOp::create(nb, l, v[0])
                      : (Value)arith::MulFOp::create(nb, l, v[0], v[0]);
      });
  Value y = emitElementwise(
      b, loc, ValueRange{x, sum}, et, in,
      [&](OpBuilder &nb, Location l, ValueRange v) {
        Value norm = p == 1 ? v[1] : (Value)math::SqrtOp::create(nb, l, v[1]);
        Value zero = scalarConstant(nb, l, et, 0.0);
        Value isZero =
            arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, norm, zero);
        return (Value)arith::SelectOp::create(
            nb, l, isZero, zero, arith::DivFOp::create(nb, l, v[0], norm));
      });
  n.setOutput(0, y, n.dtype(0));
  return success();
}

/// GroupNormalization: mean and variance per instance over each group of
/// C / num_groups channels (in float32 for narrower types when stash_type
/// is 1), then scale and bias per channel (opset 21) or per group (18).
LogicalResult lowerGroupNorm(NodeLowering &n) {
  int32_t dt = n.dtype(0);
  if (!isFloatDType(dt))
    return n.fail("input must be floating point");
  const Shape &in = n.shape(0);
  if (in.size() < 2)
    return n.fail("input must be [N, C, ...]");
  int64_t groups = n.attrInt("num_groups", 0);
  int64_t N = in[0], C = in[1];
  if (groups <= 0 || C % groups)
    return n.fail("num_groups must divide the channel count");
  int64_t perGroup = numElements(in) / (N * groups);
  int64_t affine = n.opset() < 21 ? groups : C;
  if (n.shape(1) != Shape{affine} || n.shape(2) != Shape{affine})
    return n.fail("scale and bias must have " + Twine(affine) + " elements");
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(dt);
  bool stash = n.attrInt("stash_type", 1) == 1 &&
               (dt == kFloat16 || dt == kBFloat16);
  Type st = stash ? b.getF32Type() : et;
  int32_t sdt = stash ? (int32_t)kFloat : dt;
  Value x = emitReshape(b, loc, n.value(0), {N, groups, perGroup});
  if (stash)
    x = emitElementwise(b, loc, x, st, shapeOf(x),
                        [&](OpBuilder &nb, Location l, ValueRange v) {
                          return emitScalarCast(nb, l, v[0], dt, sdt, st);
                        });
  auto [mean, inv] =
      meanAndInvStd(b, loc, x, {2}, n.attrFloat("epsilon", 1e-5f), st);
  Value norm = emitElementwise(
      b, loc, ValueRange{x, mean, inv}, et, shapeOf(x),
      [&](OpBuilder &nb, Location l, ValueRange v) {
        Value d = arith::MulFOp::create(
            nb, l, arith::SubFOp::create(nb, l, v[0], v[1]), v[2]);
        return emitScalarCast(nb, l, d, sdt, dt, et);
      });
  // Scale and bias per channel, or per group before opset 21.
  Shape chan = {affine};
  for (size_t d = 2; d < in.size(); ++d)
    chan.push_back(1);
  Shape view = in;
  if (affine == groups) {
    view = {N, groups, perGroup};
    chan = {groups, 1};
  }
  Value y = emitElementwise(
      b, loc,
      ValueRange{emitReshape(b, loc, norm, view),
                 emitReshape(b, loc, n.value(1), chan),
                 emitReshape(b, loc, n.value(2), chan)},
      et, view, [](OpBuilder &nb, Location l, ValueRange v) {
        return (Value)arith::AddFOp::create(
            nb, l, arith::MulFOp::create(nb, l, v[0], v[1]), v[2]);
      });
  n.setOutput(0, emitReshape(b, loc, y, in), dt);
  return success();
}

} // namespace

void registerNormalizationLowerings() {
  opLowerings()["LRN"] = lowerLRN;
  opLowerings()["MeanVarianceNormalization"] = lowerMeanVarianceNormalization;
  opLowerings()["Hardmax"] = lowerHardmax;
  auto &t = opLowerings();
  t["Softmax"] = [](NodeLowering &n) { return lowerSoftmax(n, false); };
  t["LogSoftmax"] = [](NodeLowering &n) { return lowerSoftmax(n, true); };
  t["LayerNormalization"] = lowerLayerNorm;
  t["RMSNormalization"] = lowerRMSNorm;
  t["BatchNormalization"] = lowerBatchNorm;
  t["InstanceNormalization"] = lowerInstanceNorm;
  t["GatherND"] = lowerGatherND;
  t["LpNormalization"] = lowerLpNorm;
  t["GroupNormalization"] = lowerGroupNorm;
}

} // namespace mcc
