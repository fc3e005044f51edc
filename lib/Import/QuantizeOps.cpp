//===- QuantizeOps.cpp - QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
// and the integer matmul/conv ops ---===//
//
// Linear (de)quantization to and from 8-, 16-, 4- and 2-bit integers and
// the float8/float4 types, per tensor, per axis or blocked, rounding half to
// even and saturating like the ONNX reference.
// The integer matmul/conv ops subtract zero points in int32 and reuse the
// MatMul/Conv lowerings with int32 accumulation.
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

bool isQuantDType(int32_t d) { return d == kUInt8 || d == kInt8; }

/// The map from an element of x to its scale / zero point `p`: one value
/// for all, one per index along `axis` (1-D p), or one per block of
/// `block` consecutive indices along `axis` (p of x's rank).
FailureOr<AffineMap> paramMap(NodeLowering &n, const Shape &p, const Shape &x,
                              int64_t axis, int64_t block) {
  MLIRContext *ctx = n.builder().getContext();
  int64_t rank = x.size();
  if (numElements(p) == 1) {
    SmallVector<AffineExpr> zeros(p.size(), getAffineConstantExpr(0, ctx));
    return AffineMap::get(rank, 0, zeros, ctx);
  }
  if (axis < 0 || axis >= rank)
    return n.fail("axis out of range");
  if (block <= 0) {
    if (p.size() != 1 || p[0] != x[axis])
      return n.fail("scale/zero point " + formatShape(p) +
                    " must be a scalar or 1-D of size " + Twine(x[axis]) +
                    " (axis " + Twine(axis) + ")");
    return AffineMap::get(rank, 0, {getAffineDimExpr(axis, ctx)}, ctx);
  }
  SmallVector<AffineExpr> exprs;
  bool ok = (int64_t)p.size() == rank;
  for (int64_t d = 0; ok && d < rank; ++d) {
    if (d == axis) {
      ok = p[d] == (x[d] + block - 1) / block;
      exprs.push_back(getAffineDimExpr(d, ctx).floorDiv(block));
    } else {
      ok = p[d] == x[d];
      exprs.push_back(getAffineDimExpr(d, ctx));
    }
  }
  if (!ok)
    return n.fail("blocked scale/zero point " + formatShape(p) +
                  " does not match input " + formatShape(x) +
                  " with block_size " + Twine(block));
  return AffineMap::get(rank, 0, exprs, ctx);
}

/// out[i] = body(x[i], scale[map(i)], zp[map(i)]) over x's shape; zp is
/// absent (null in the body) without input 2.
FailureOr<Value> emitQuantGeneric(NodeLowering &n, Type outElem,
                                  const ScalarBody &body) {
  OpBuilder &b = n.builder();
  MLIRContext *ctx = b.getContext();
  Shape x = n.shape(0);
  int64_t rank = x.size();
  int64_t axis = normalizeAxis(n.attrInt("axis", 1), rank);
  int64_t block = n.attrInt("block_size", 0);
  if (block < 0)
    return n.fail("block_size must not be negative");
  SmallVector<Value> ins = {n.value(0)};
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx)};
  for (size_t i = 1; i < 3 && n.hasInput(i); ++i) {
    auto m = paramMap(n, n.shape(i), x, axis, block);
    if (failed(m))
      return failure();
    ins.push_back(n.value(i));
    maps.push_back(*m);
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  Value empty = createEmpty(b, n.loc(), x, outElem);
  return linalg::GenericOp::create(
             b, n.loc(), empty.getType(), ins, ValueRange{empty}, maps, iters,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               SmallVector<Value> args(a.drop_back());
               if (args.size() < 3)
                 args.push_back(Value());
               linalg::YieldOp::create(nb, l, body(nb, l, args));
             })
      .getResult(0);
}

/// Integer types QuantizeLinear produces (opset 21 on: 16-bit, 4-bit,
/// 2-bit; sub-byte ones are extended i8 in IR).
bool isIntQuantDType(int32_t d) {
  return isQuantDType(d) || d == kUInt16 || d == kInt16 || isSubByteIntDType(d);
}

/// Float types QuantizeLinear produces: x / scale converted (saturating
/// unless `saturate` is 0; float4e2m1 always saturates).
bool isFloatQuantDType(int32_t d) {
  return (d >= kFloat8E4M3FN && d <= kFloat8E5M2FNUZ) || d == kFloat4E2M1;
}

/// v + zp (v already rounded, both floats) saturated to the range of `to`
/// (an integer quantized type) and converted. NaN saturates to the low end
/// (the number variants of max/min drop NaN).
Value saturateToQuant(OpBuilder &b, Location l, Value v, Value zpF,
                      int32_t to) {
  Type ft = v.getType();
  if (zpF)
    v = arith::AddFOp::create(b, l, v, zpF);
  int64_t lo, hi;
  if (isSubByteIntDType(to)) {
    subByteIntRange(to, lo, hi);
  } else {
    unsigned bits = 8 * dtypeSize(to);
    lo = isUnsignedDType(to) ? 0 : -(int64_t(1) << (bits - 1));
    hi = isUnsignedDType(to) ? (int64_t(1) << bits) - 1
                             : (int64_t(1) << (bits - 1)) - 1;
  }
  v = arith::MaxNumFOp::create(b, l, v, scalarConstant(b, l, ft, lo));
  v = arith::MinNumFOp::create(b, l, v, scalarConstant(b, l, ft, hi));
  Type it = dtypeSize(to) == 2 ? b.getI16Type() : b.getI8Type();
  if (lo == 0)
    return arith::FPToUIOp::create(b, l, it, v);
  return arith::FPToSIOp::create(b, l, it, v);
}

Type wider(Type a, Type c) {
  return a.getIntOrFloatBitWidth() >= c.getIntOrFloatBitWidth() ? a : c;
}

LogicalResult lowerQuantizeLinear(NodeLowering &n) {
  int32_t to = n.hasInput(2) ? n.dtype(2) : n.attrInt("output_dtype", 0);
  if (!to)
    to = kUInt8;
  if (!isIntQuantDType(to) && !isFloatQuantDType(to))
    return n.fail("quantizing to " +
                  onnx::TensorProto_DataType_Name(
                      static_cast<onnx::TensorProto_DataType>(to)) +
                  " is not supported");
  if (!isFloatDType(n.dtype(1)))
    return n.fail("scale must be floating point");
  OpBuilder &b = n.builder();
  // x / scale in x's float type (the reference's NumPy arithmetic), or in
  // the `precision` type when given; the rounded quotient and the zero
  // point are added in at least f32, where both are exact.
  int32_t xd = n.dtype(0);
  Type ct = isFloatDType(xd) ? n.elementType(xd) : b.getF64Type();
  if (int64_t p = n.attrInt("precision", 0)) {
    if (!isFloatDType(p))
      return n.fail("unsupported precision " + dtypeName(p));
    ct = n.elementType(p);
  }
  Type acc = wider(ct, b.getF32Type());
  int32_t sd = n.dtype(1);
  bool saturate = n.attrInt("saturate", 1) != 0;
  auto r = emitQuantGeneric(
      n, n.elementType(to),
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value x = emitScalarCast(nb, l, a[0], xd, dtypeOf(ct), ct);
        Value s = emitScalarCast(nb, l, a[1], sd, dtypeOf(ct), ct);
        Value q = arith::DivFOp::create(nb, l, x, s);
        if (isFloatQuantDType(to)) {
          // The reference adds no zero point to float8 (it must be 0);
          // float4's is added before the conversion.
          Type f32 = nb.getF32Type();
          q = emitScalarCast(nb, l, q, dtypeOf(ct), kFloat, f32);
          if (a[2] && to == kFloat4E2M1)
            q = arith::AddFOp::create(
                nb, l, q, emitScalarCast(nb, l, a[2], to, kFloat, f32));
          return emitFloatToSmallFloat(nb, l, q, to, saturate, RoundMode::Up);
        }
        q = math::RoundEvenOp::create(nb, l, q);
        q = emitScalarCast(nb, l, q, dtypeOf(ct), dtypeOf(acc), acc);
        Value zp;
        if (a[2])
          zp = emitScalarCast(nb, l, a[2], to, dtypeOf(acc), acc);
        return saturateToQuant(nb, l, q, zp, to);
      });
  if (failed(r))
    return failure();
  n.setOutput(0, *r, to);
  return success();
}

LogicalResult lowerDequantizeLinear(NodeLowering &n) {
  int32_t xd = n.dtype(0);
  if (!isIntQuantDType(xd) && !isFloatQuantDType(xd) && xd != kInt32)
    return n.fail("dequantizing " + dtypeName(xd) + " is not supported");
  if (n.hasInput(2) && n.dtype(2) != xd)
    return n.fail("zero point type differs from the input type");
  int32_t sd = n.dtype(1);
  if (!isFloatDType(sd))
    return n.fail("scale must be floating point");
  int32_t to = n.attrInt("output_dtype", 0);
  if (!to)
    to = sd;
  if (!isFloatDType(to))
    return n.fail("unsupported output_dtype " + dtypeName(to));
  OpBuilder &b = n.builder();
  // (x - zp) in f32 as the reference does, times the scale in the wider of
  // f32 and the scale's type.
  Type f32 = b.getF32Type();
  Type acc = wider(f32, n.elementType(sd));
  Type outT = n.elementType(to);
  auto r = emitQuantGeneric(
      n, outT, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value x = emitScalarCast(nb, l, a[0], xd, kFloat, f32);
        // Float zero points are 0 (float8) or ignored (float4) by the
        // reference.
        if (a[2] && !isFloatQuantDType(xd))
          x = arith::SubFOp::create(
              nb, l, x, emitScalarCast(nb, l, a[2], xd, kFloat, f32));
        x = emitScalarCast(nb, l, x, kFloat, dtypeOf(acc), acc);
        Value s = emitScalarCast(nb, l, a[1], sd, dtypeOf(acc), acc);
        return emitScalarCast(nb, l, arith::MulFOp::create(nb, l, x, s),
                              dtypeOf(acc), to, outT);
      });
  if (failed(r))
    return failure();
  n.setOutput(0, *r, to);
  return success();
}

/// DynamicQuantizeLinear: uint8 over the range [min(x, 0), max(x, 0)].
LogicalResult lowerDynamicQuantizeLinear(NodeLowering &n) {
  if (n.dtype(0) != kFloat)
    return n.fail("input must be float32");
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type f32 = b.getF32Type();
  Value x = n.value(0);
  std::vector<int64_t> all;
  for (size_t d = 0; d < n.rank(0); ++d)
    all.push_back(d);
  auto fmax = [](OpBuilder &nb, Location l, ValueRange v) -> Value {
    return arith::MaximumFOp::create(nb, l, v[0], v[1]);
  };
  auto fmin = [](OpBuilder &nb, Location l, ValueRange v) -> Value {
    return arith::MinimumFOp::create(nb, l, v[0], v[1]);
  };
  // Starting the reductions at 0 includes 0 in the range.
  Value mx = emitReduction(b, loc, x, all, false, b.getF32FloatAttr(0), fmax);
  Value mn = emitReduction(b, loc, x, all, false, b.getF32FloatAttr(0), fmin);
  Value scale = emitElementwise(
      b, loc, ValueRange{mx, mn}, f32, {},
      [](OpBuilder &nb, Location l, ValueRange v) -> Value {
        Value same =
            arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, v[0], v[1]);
        Value range = arith::SelectOp::create(
            nb, l, same, scalarConstant(nb, l, v[0].getType(), 1.0),
            arith::SubFOp::create(nb, l, v[0], v[1]));
        return arith::DivFOp::create(
            nb, l, range, scalarConstant(nb, l, v[0].getType(), 255.0));
      });
  // zp = rint(clamp(0 - min / scale, 0, 255)), kept as f32 for y.
  Value zpF = emitElementwise(
      b, loc, ValueRange{mn, scale}, f32, {},
      [](OpBuilder &nb, Location l, ValueRange v) -> Value {
        Type t = v[0].getType();
        Value z = arith::NegFOp::create(
            nb, l, arith::DivFOp::create(nb, l, v[0], v[1]));
        z = arith::MaxNumFOp::create(nb, l, z, scalarConstant(nb, l, t, 0));
        z = arith::MinNumFOp::create(nb, l, z, scalarConstant(nb, l, t, 255));
        return math::RoundEvenOp::create(nb, l, z);
      });
  Value y = emitElementwise(
      b, loc, ValueRange{x, scale, zpF}, b.getI8Type(), n.shape(0),
      [](OpBuilder &nb, Location l, ValueRange v) -> Value {
        Value q = math::RoundEvenOp::create(
            nb, l, arith::DivFOp::create(nb, l, v[0], v[1]));
        return saturateToQuant(nb, l, q, v[2], kUInt8);
      });
  Value zp = emitElementwise(
      b, loc, ValueRange{zpF}, b.getI8Type(), {},
      [](OpBuilder &nb, Location l, ValueRange v) -> Value {
        return arith::FPToUIOp::create(nb, l, nb.getI8Type(), v[0]);
      });
  n.setOutput(0, y, kUInt8);
  n.setOutput(1, scale, kFloat);
  n.setOutput(2, zp, kUInt8);
  return success();
}

/// v (uint8/int8) minus its zero point, as int32. A zero point is a scalar
/// or 1-D; a 1-D one the size of dim `perDim` of v applies along that dim
/// (rows of A, output channels of W), else along the last dim.
FailureOr<Value> minusZeroPoint(NodeLowering &n, size_t vi, size_t zi,
                                int64_t perDim) {
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  int32_t vd = n.dtype(vi);
  if (!isQuantDType(vd))
    return n.fail("input " + Twine(vi) + " is " + dtypeName(vd) +
                  "; uint8 or int8 expected");
  Shape vs = n.shape(vi);
  Type i32 = b.getI32Type();
  SmallVector<Value> ins = {n.value(vi)};
  int32_t zd = vd;
  if (n.hasInput(zi)) {
    zd = n.dtype(zi);
    if (!isQuantDType(zd))
      return n.fail("zero point " + Twine(zi) + " must be uint8 or int8");
    Shape zs = n.shape(zi);
    Value z = n.value(zi);
    if (numElements(zs) == 1) {
      z = emitReshape(b, loc, z, {});
    } else if (zs.size() == 1 && perDim >= 0 && perDim < (int64_t)vs.size() &&
               zs[0] == vs[perDim]) {
      Shape bs(vs.size() - perDim, 1);
      bs[0] = zs[0];
      z = emitReshape(b, loc, z, bs);
    } else if (!(zs.size() == 1 && !vs.empty() && zs[0] == vs.back())) {
      return n.fail("zero point " + formatShape(zs) + " does not fit input " +
                    formatShape(vs));
    }
    ins.push_back(z);
  }
  return emitElementwise(
      b, loc, ins, i32, vs, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value v = emitScalarCast(nb, l, a[0], vd, kInt32, nb.getI32Type());
        if (a.size() < 2)
          return v;
        return (Value)arith::SubIOp::create(
            nb, l, v, emitScalarCast(nb, l, a[1], zd, kInt32, nb.getI32Type()));
      });
}

LogicalResult lowerMatMulInteger(NodeLowering &n) {
  int64_t ra = n.rank(0);
  auto a = minusZeroPoint(n, 0, 2, ra >= 2 ? ra - 2 : -1);
  auto bm = minusZeroPoint(n, 1, 3, -1);
  if (failed(a) || failed(bm))
    return failure();
  auto r = emitOnnxMatMul(n, *a, *bm);
  if (failed(r))
    return failure();
  n.setOutput(0, *r, kInt32);
  return success();
}

LogicalResult lowerConvInteger(NodeLowering &n) {
  auto x = minusZeroPoint(n, 0, 2, -1);
  auto w = minusZeroPoint(n, 1, 3, 0);
  if (failed(x) || failed(w))
    return failure();
  auto r = emitOnnxConv(n, *x, *w);
  if (failed(r))
    return failure();
  n.setOutput(0, *r, kInt32);
  return success();
}

/// A scale (scalar or 1-D) reshaped to broadcast along dim `dim` of a
/// result of rank `rank`.
FailureOr<Value> scaleAlong(NodeLowering &n, size_t i, int64_t dim,
                            int64_t rank, int64_t size) {
  Shape s = n.shape(i);
  Value v = n.value(i);
  if (numElements(s) == 1)
    return emitReshape(n.builder(), n.loc(), v, {});
  if (s.size() != 1 || s[0] != size || dim < 0)
    return n.fail("scale " + Twine(i) + " " + formatShape(s) +
                  " must be a scalar or 1-D of size " + Twine(size));
  Shape bs(rank - dim, 1);
  bs[0] = size;
  return emitReshape(n.builder(), n.loc(), v, bs);
}

/// round-half-even(acc * (s1 * s2 / sy)) + zy saturated to the output type
/// (the zero point's, else `fallback`). The scale product is formed in the
/// scales' type, the rest in f64 as the reference's NumPy promotion of
/// int32 with float does.
LogicalResult requantize(NodeLowering &n, Value acc, Value s1, Value s2,
                         size_t syIdx, size_t zyIdx, int32_t fallback) {
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  int32_t sd = n.dtype(syIdx);
  if (!isFloatDType(sd))
    return n.fail("scales must be floating point");
  int32_t to = n.hasInput(zyIdx) ? n.dtype(zyIdx) : fallback;
  if (!isQuantDType(to))
    return n.fail("output type " + dtypeName(to) + " is not uint8 or int8");
  Shape out = shapeOf(acc);
  Type f64 = b.getF64Type();
  // One elementwise op: the scale product is formed per element rather
  // than as a separate small tensor.
  SmallVector<Value> ins = {acc, s1, s2,
                            emitReshape(b, loc, n.value(syIdx), {})};
  if (n.hasInput(zyIdx)) {
    if (numElements(n.shape(zyIdx)) != 1)
      return n.fail("output zero point must be a scalar");
    ins.push_back(emitReshape(b, loc, n.value(zyIdx), {}));
  }
  Value r = emitElementwise(
      b, loc, ins, b.getI8Type(), out,
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value m = arith::DivFOp::create(
            nb, l, arith::MulFOp::create(nb, l, a[1], a[2]), a[3]);
        m = emitScalarCast(nb, l, m, sd, kDouble, f64);
        Value v = arith::SIToFPOp::create(nb, l, f64, a[0]);
        v = math::RoundEvenOp::create(nb, l,
                                      arith::MulFOp::create(nb, l, v, m));
        Value zp;
        if (a.size() > 4)
          zp = emitScalarCast(nb, l, a[4], to, kDouble, f64);
        return saturateToQuant(nb, l, v, zp, to);
      });
  n.setOutput(0, r, to);
  return success();
}

/// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp).
LogicalResult lowerQLinearMatMul(NodeLowering &n) {
  int64_t ra = n.rank(0), rb = n.rank(3);
  if (ra < 2 || rb < 2)
    return n.fail("inputs must have rank >= 2");
  auto a = minusZeroPoint(n, 0, 2, ra - 2);
  auto bm = minusZeroPoint(n, 3, 5, -1);
  if (failed(a) || failed(bm))
    return failure();
  auto acc = emitOnnxMatMul(n, *a, *bm);
  if (failed(acc))
    return failure();
  int64_t rank = shapeOf(*acc).size();
  auto sa = scaleAlong(n, 1, rank - 2, rank, n.shape(0)[ra - 2]);
  auto sb = scaleAlong(n, 4, rank - 1, rank, n.shape(3)[rb - 1]);
  if (failed(sa) || failed(sb))
    return failure();
  return requantize(n, *acc, *sa, *sb, 6, 7, n.dtype(0));
}

/// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B).
LogicalResult lowerQLinearConv(NodeLowering &n) {
  auto x = minusZeroPoint(n, 0, 2, -1);
  auto w = minusZeroPoint(n, 3, 5, 0);
  if (failed(x) || failed(w))
    return failure();
  auto conv = emitOnnxConv(n, *x, *w);
  if (failed(conv))
    return failure();
  Value acc = *conv;
  Shape out = shapeOf(acc);
  int64_t rank = out.size();
  OpBuilder &b = n.builder();
  if (n.hasInput(8)) {
    if (n.dtype(8) != kInt32 || n.shape(8) != Shape{out[1]})
      return n.fail("bias must be int32 of size " + Twine(out[1]));
    Shape bs(rank - 1, 1);
    bs[0] = out[1];
    Value bias = emitReshape(b, n.loc(), n.value(8), bs);
    acc = emitElementwise(b, n.loc(), ValueRange{acc, bias}, b.getI32Type(),
                          out, [](OpBuilder &nb, Location l, ValueRange v) {
                            return (Value)arith::AddIOp::create(nb, l, v[0],
                                                                v[1]);
                          });
  }
  auto sx = scaleAlong(n, 1, -1, rank, 1);
  auto sw = scaleAlong(n, 4, 1, rank, out[1]);
  if (failed(sx) || failed(sw))
    return failure();
  return requantize(n, acc, *sx, *sw, 6, 7, n.dtype(0));
}

} // namespace

void registerQuantizeLowerings() {
  auto &t = opLowerings();
  t["QuantizeLinear"] = lowerQuantizeLinear;
  t["DequantizeLinear"] = lowerDequantizeLinear;
  t["DynamicQuantizeLinear"] = lowerDynamicQuantizeLinear;
  t["MatMulInteger"] = lowerMatMulInteger;
  t["ConvInteger"] = lowerConvInteger;
  t["QLinearMatMul"] = lowerQLinearMatMul;
  t["QLinearConv"] = lowerQLinearConv;
}

} // namespace mcc
