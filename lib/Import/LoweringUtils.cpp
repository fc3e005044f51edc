//===- LoweringUtils.cpp - IR builders shared by ONNX op lowerings --------===//

#include "mcc/Import/NodeLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;

namespace mcc {

int32_t dtypeOf(Type t) {
  if (t.isF32())
    return kFloat;
  if (t.isF64())
    return kDouble;
  if (t.isF16())
    return kFloat16;
  if (t.isBF16())
    return kBFloat16;
  if (t.isInteger(64))
    return kInt64;
  if (t.isInteger(32))
    return kInt32;
  if (t.isInteger(16))
    return kInt16;
  if (t.isInteger(8))
    return kInt8;
  if (t.isInteger(1))
    return kBool;
  return 0;
}

Shape shapeOf(Value tensor) {
  auto t = cast<RankedTensorType>(tensor.getType());
  if (!t.hasStaticShape())
    if (SymbolicDims *dims = activeSymbolicDims())
      return dims->shapeOf(tensor);
  return Shape(t.getShape().begin(), t.getShape().end());
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// Indexing map that reads an input of `shape` broadcast into `rank` dims.
static AffineMap broadcastMap(MLIRContext *ctx, const Shape &shape,
                              const Shape &resultShape) {
  size_t rank = resultShape.size(), off = rank - shape.size();
  SmallVector<AffineExpr> exprs;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1 && resultShape[off + i] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(off + i, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

Value emitElementwise(OpBuilder &b, Location loc, ValueRange inputs,
                      Type resultElement, const Shape &resultShape,
                      const ScalarBody &body) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value in : inputs)
    maps.push_back(broadcastMap(ctx, shapeOf(in), resultShape));
  maps.push_back(AffineMap::getMultiDimIdentityMap(resultShape.size(), ctx));
  SmallVector<utils::IteratorType> iters(resultShape.size(),
                                         utils::IteratorType::parallel);
  Value empty = createEmpty(b, loc, resultShape, resultElement);
  auto op = linalg::GenericOp::create(
      b, loc, empty.getType(), inputs, ValueRange{empty}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value r = body(nb, nloc, args.drop_back());
        linalg::YieldOp::create(nb, nloc, r);
      });
  return op.getResult(0);
}

Value emitFilled(OpBuilder &b, Location loc, const Shape &shape,
                 TypedAttr value) {
  Value empty = createEmpty(b, loc, shape, value.getType());
  Value scalar = arith::ConstantOp::create(b, loc, value);
  return linalg::FillOp::create(b, loc, scalar, empty).getResult(0);
}

Value emitReduction(OpBuilder &b, Location loc, Value input,
                    const std::vector<int64_t> &axes, bool keepDims,
                    TypedAttr init, const ScalarBody &combine,
                    const ScalarBody &mapInput) {
  MLIRContext *ctx = b.getContext();
  Shape inShape = shapeOf(input);
  size_t rank = inShape.size();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes)
    reduced[a] = true;
  Shape outShape;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iters;
  for (size_t i = 0; i < rank; ++i) {
    iters.push_back(reduced[i] ? utils::IteratorType::reduction
                               : utils::IteratorType::parallel);
    if (!reduced[i]) {
      outShape.push_back(inShape[i]);
      outExprs.push_back(getAffineDimExpr(i, ctx));
    }
  }
  Value acc = emitFilled(b, loc, outShape, init);
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                 AffineMap::get(rank, 0, outExprs, ctx)};
  auto op = linalg::GenericOp::create(
      b, loc, acc.getType(), ValueRange{input}, ValueRange{acc}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value x = args[0];
        if (mapInput)
          x = mapInput(nb, nloc, ValueRange{x});
        linalg::YieldOp::create(nb, nloc,
                                combine(nb, nloc, ValueRange{args[1], x}));
      });
  Value r = op.getResult(0);
  if (keepDims) {
    Shape kept = inShape;
    for (int64_t a : axes)
      kept[a] = 1;
    r = emitReshape(b, loc, r, kept);
  }
  return r;
}

/// Splits `from` and `to` into consecutive groups of equal size (symbolic
/// dims matched by identity), so a reshape between them is a collapse of
/// each `from` group and an expand into each `to` group; false if the
/// symbolic factors do not line up.
static bool matchReshapeGroups(SymbolicDims &dims, const Shape &from,
                               const Shape &to,
                               SmallVector<ReassociationIndices> &fromGroups,
                               SmallVector<ReassociationIndices> &toGroups) {
  size_t i = 0, j = 0;
  while (i < from.size() && j < to.size()) {
    ReassociationIndices gf = {static_cast<int64_t>(i)},
                         gt = {static_cast<int64_t>(j)};
    Shape pf = {from[i++]}, pt = {to[j++]};
    while (dims.quotient(pf, pt) != 1) {
      if (dims.quotient(pt, pf) && i < from.size()) {
        gf.push_back(i);
        pf.push_back(from[i++]);
      } else if (dims.quotient(pf, pt) && j < to.size()) {
        gt.push_back(j);
        pt.push_back(to[j++]);
      } else {
        return false;
      }
    }
    fromGroups.push_back(gf);
    toGroups.push_back(gt);
  }
  // Trailing size-1 dims join the last group.
  for (; i < from.size(); ++i) {
    if (from[i] != 1 || fromGroups.empty())
      return false;
    fromGroups.back().push_back(i);
  }
  for (; j < to.size(); ++j) {
    if (to[j] != 1 || toGroups.empty())
      return false;
    toGroups.back().push_back(j);
  }
  return !fromGroups.empty();
}

/// Reshape of a tensor with symbolic dims: collapse and expand group by
/// group where the dims line up (so fusion sees through it), else through
/// one flat dim.
static Value emitSymbolicReshape(OpBuilder &b, Location loc, Value input,
                                 const Shape &shape) {
  SymbolicDims &dims = *activeSymbolicDims();
  Shape in = shapeOf(input);
  Type et = cast<RankedTensorType>(input.getType()).getElementType();
  SmallVector<ReassociationIndices> fromGroups, toGroups;
  Shape mid;
  if (matchReshapeGroups(dims, in, shape, fromGroups, toGroups)) {
    for (const auto &g : fromGroups) {
      Shape part;
      for (int64_t i : g)
        part.push_back(in[i]);
      mid.push_back(dims.product(part));
    }
  } else {
    fromGroups.clear();
    toGroups.clear();
    mid = {dims.product(in)};
    ReassociationIndices all, allOut;
    for (size_t i = 0; i < in.size(); ++i)
      all.push_back(i);
    for (size_t i = 0; i < shape.size(); ++i)
      allOut.push_back(i);
    fromGroups.push_back(all);
    toGroups.push_back(allOut);
  }
  Value v = input;
  if (mid != in) {
    v = tensor::CollapseShapeOp::create(b, loc, tensorTypeOf(mid, et), v,
                                        fromGroups);
    dims.setShape(v, mid);
  }
  if (mid != shape) {
    SmallVector<OpFoldResult> sizes;
    for (int64_t d : shape)
      sizes.push_back(isSymbolicDim(d) ? OpFoldResult(dims.materialize(b, loc, d))
                                       : OpFoldResult(b.getIndexAttr(d)));
    v = tensor::ExpandShapeOp::create(b, loc, tensorTypeOf(shape, et), v,
                                      toGroups, sizes);
    dims.setShape(v, shape);
  }
  return v;
}

Value emitReshape(OpBuilder &b, Location loc, Value input, const Shape &shape) {
  auto type = cast<RankedTensorType>(input.getType());
  if (shapeOf(input) == shape)
    return input;
  if (!type.hasStaticShape() || hasSymbolicDims(shape))
    return emitSymbolicReshape(b, loc, input, shape);
  auto resultType = RankedTensorType::get(shape, type.getElementType());
  // Collapse to 1-D, then expand: both are views, so the reshape costs
  // nothing after bufferization, unlike tensor.reshape which may copy.
  Value flat = input;
  int64_t n = numElements(shape);
  if (type.getRank() != 1) {
    SmallVector<ReassociationIndices> all;
    if (type.getRank() > 0) {
      ReassociationIndices group;
      for (int64_t i = 0; i < type.getRank(); ++i)
        group.push_back(i);
      all.push_back(group);
    }
    auto flatType = RankedTensorType::get({n}, type.getElementType());
    if (type.getRank() == 0)
      flat = tensor::ExpandShapeOp::create(b, loc, flatType, input, all);
    else
      flat = tensor::CollapseShapeOp::create(b, loc, flatType, input, all);
  }
  if (shape.size() == 1)
    return flat;
  SmallVector<ReassociationIndices> all;
  if (!shape.empty()) {
    ReassociationIndices group;
    for (size_t i = 0; i < shape.size(); ++i)
      group.push_back(i);
    all.push_back(group);
    return tensor::ExpandShapeOp::create(b, loc, resultType, flat, all);
  }
  return tensor::CollapseShapeOp::create(b, loc, resultType, flat, all);
}

Value emitTranspose(OpBuilder &b, Location loc, Value input,
                    const std::vector<int64_t> &perm) {
  Shape in = shapeOf(input), out;
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) {
    out.push_back(in[perm[i]]);
    identity &= perm[i] == static_cast<int64_t>(i);
  }
  if (identity)
    return input;
  auto et = cast<RankedTensorType>(input.getType()).getElementType();
  Value empty = createEmpty(b, loc, out, et);
  return linalg::TransposeOp::create(b, loc, input, empty, perm)->getResult(0);
}

Value emitBroadcastTo(OpBuilder &b, Location loc, Value input,
                      const Shape &shape) {
  if (shapeOf(input) == shape)
    return input;
  Type et = cast<RankedTensorType>(input.getType()).getElementType();
  return emitElementwise(
      b, loc, input, et, shape,
      [](OpBuilder &, Location, ValueRange a) { return a[0]; });
}

Value floatConstantTensor(OpBuilder &b, Location loc, const Shape &shape,
                          Type elementType, ArrayRef<double> values) {
  SmallVector<APFloat> vals;
  for (double v : values) {
    APFloat f(v);
    bool lost;
    f.convert(cast<FloatType>(elementType).getFloatSemantics(),
              APFloat::rmNearestTiesToEven, &lost);
    vals.push_back(f);
  }
  auto type = RankedTensorType::get(shape, elementType);
  return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, vals));
}

Value scalarConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (isa<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
  // Values from 2^63 up are uint64 constants; the attribute keeps the bits.
  int64_t bits = value >= 0x1p63
                     ? static_cast<int64_t>(static_cast<uint64_t>(value))
                     : static_cast<int64_t>(value);
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, bits));
}

Value emitScalarCast(OpBuilder &b, Location loc, Value v, int32_t from,
                     int32_t to, Type toType, const CastOptions &opts) {
  Type fromType = v.getType();
  if (fromType == toType && from == to)
    return v;
  if (isSmallDType(from) || isSmallDType(to))
    return emitSmallCast(b, loc, v, from, to, toType, opts);
  bool fromFloat = isa<FloatType>(fromType), toFloat = isa<FloatType>(toType);
  if (to == kBool) {
    if (fromFloat) {
      Value zero = scalarConstant(b, loc, fromType, 0.0);
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v, zero);
    }
    Value zero = scalarConstant(b, loc, fromType, 0);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v, zero);
  }
  // bfloat16 converts only to and from f32 (the CPU pipeline expands those
  // two with integer ops); everything else goes through f32. f64 -> bf16
  // thus rounds twice, as numpy's ml_dtypes does.
  Type f32 = b.getF32Type();
  if (from == kBFloat16 && to != kFloat) {
    Value wide = arith::ExtFOp::create(b, loc, f32, v);
    return emitScalarCast(b, loc, wide, kFloat, to, toType);
  }
  if (to == kBFloat16 && from != kFloat) {
    Value wide = emitScalarCast(b, loc, v, from, kFloat, f32);
    return arith::TruncFOp::create(b, loc, toType, wide);
  }
  if (fromFloat && toFloat) {
    unsigned fw = fromType.getIntOrFloatBitWidth(),
             tw = toType.getIntOrFloatBitWidth();
    if (fw < tw)
      return arith::ExtFOp::create(b, loc, toType, v);
    return arith::TruncFOp::create(b, loc, toType, v);
  }
  bool fromUnsigned = isUnsignedDType(from) || from == kBool;
  if (!fromFloat && toFloat) {
    if (fromUnsigned)
      return arith::UIToFPOp::create(b, loc, toType, v);
    return arith::SIToFPOp::create(b, loc, toType, v);
  }
  if (fromFloat && !toFloat) {
    if (isUnsignedDType(to))
      return arith::FPToUIOp::create(b, loc, toType, v);
    return arith::FPToSIOp::create(b, loc, toType, v);
  }
  unsigned fw = fromType.getIntOrFloatBitWidth(),
           tw = toType.getIntOrFloatBitWidth();
  if (fw == tw)
    return v;
  if (fw > tw)
    return arith::TruncIOp::create(b, loc, toType, v);
  if (fromUnsigned)
    return arith::ExtUIOp::create(b, loc, toType, v);
  return arith::ExtSIOp::create(b, loc, toType, v);
}

} // namespace mcc
