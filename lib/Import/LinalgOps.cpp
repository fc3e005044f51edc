//===- LinalgOps.cpp - ONNX contractions, convolutions, pools, reductions -===//
//
// Matrix products and convolutions map to named linalg ops so that the
// tiling and vectorization passes see them as what they are; everything
// around them is linalg.generic.
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

TypedAttr zeroAttr(OpBuilder &b, Type et) {
  if (isa<FloatType>(et))
    return b.getFloatAttr(et, 0.0);
  return b.getIntegerAttr(et, 0);
}

/// The accumulator type of a product of `et` elements: float16 and
/// bfloat16 accumulate in f32 and round once at the end, as NumPy's matmul
/// (the reference) does for both; other types accumulate in themselves.
Type accumulatorType(OpBuilder &b, Type et) {
  return et.isF16() || et.isBF16() ? b.getF32Type() : et;
}

/// `r` (of the accumulator type) rounded back to `et`.
Value roundTo(OpBuilder &b, Location loc, Value r, Type et) {
  Type acc = cast<RankedTensorType>(r.getType()).getElementType();
  if (acc == et)
    return r;
  return emitElementwise(b, loc, r, et, shapeOf(r),
                         [&](OpBuilder &nb, Location l, ValueRange v) {
                           return (Value)arith::TruncFOp::create(nb, l, et,
                                                                 v[0]);
                         });
}

/// float16 operands are widened by the named op as it reads them (no
/// widened copy); bfloat16 ones are widened up front, since the bfloat16
/// expansion would turn an in-body extf into integer ops the contraction
/// lowering does not recognize.
Value widenForProduct(OpBuilder &b, Location loc, Value x,
                      bool halfToo = false) {
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  if (!et.isBF16() && !(halfToo && et.isF16()))
    return x;
  Type f32 = b.getF32Type();
  return emitElementwise(b, loc, x, f32, shapeOf(x),
                         [&](OpBuilder &nb, Location l, ValueRange v) {
                           return (Value)arith::ExtFOp::create(nb, l, f32,
                                                               v[0]);
                         });
}

/// a @ bm, accumulated in accumulatorType and rounded back to a's type.
Value emitMatmul2D(OpBuilder &b, Location loc, Value a, Value bm) {
  Shape as = shapeOf(a), bs = shapeOf(bm);
  Type et = cast<RankedTensorType>(a.getType()).getElementType();
  a = widenForProduct(b, loc, a);
  bm = widenForProduct(b, loc, bm);
  Value init =
      emitFilled(b, loc, {as[0], bs[1]}, zeroAttr(b, accumulatorType(b, et)));
  Value r =
      linalg::MatmulOp::create(b, loc, ValueRange{a, bm}, ValueRange{init})
          .getResult(0);
  return roundTo(b, loc, r, et);
}

Value emitBatchMatmul(OpBuilder &b, Location loc, Value a, Value bm) {
  Shape as = shapeOf(a), bs = shapeOf(bm);
  Type et = cast<RankedTensorType>(a.getType()).getElementType();
  a = widenForProduct(b, loc, a);
  bm = widenForProduct(b, loc, bm);
  Value init = emitFilled(b, loc, {as[0], as[1], bs[2]},
                          zeroAttr(b, accumulatorType(b, et)));
  Value r = linalg::BatchMatmulOp::create(b, loc, ValueRange{a, bm},
                                          ValueRange{init})
                .getResult(0);
  return roundTo(b, loc, r, et);
}

/// ONNX MatMul (NumPy matmul semantics) on SSA tensors.
FailureOr<Value> matmul(NodeLowering &n, Value a, Value bm) {
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Shape as = shapeOf(a), bs = shapeOf(bm);
  bool aVec = as.size() == 1, bVec = bs.size() == 1;
  if (as.empty() || bs.empty())
    return n.fail("matmul of a scalar");
  if (aVec) {
    as.insert(as.begin(), 1);
    a = emitReshape(b, loc, a, as);
  }
  if (bVec) {
    bs.push_back(1);
    bm = emitReshape(b, loc, bm, bs);
  }
  int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  if (bs[bs.size() - 2] != K)
    return n.fail("inner dimensions differ: " + formatShape(n.shape(0)) +
                  " x " + formatShape(n.shape(1)));
  Shape batchA(as.begin(), as.end() - 2), batchB(bs.begin(), bs.end() - 2),
      batch;
  if (!broadcastShapes({batchA, batchB}, batch))
    return n.fail("batch dims do not broadcast");
  int64_t bt = dimsProduct(batch);
  Value r;
  if (batchB.empty() || dimsProduct(batchB) == 1) {
    if (!batchB.empty())
      bm = emitReshape(b, loc, bm, {K, N});
    Shape fullA = batch;
    fullA.push_back(M);
    fullA.push_back(K);
    a = emitBroadcastTo(b, loc, a, fullA);
    a = emitReshape(b, loc, a, {dimsMul(bt, M), K});
    r = emitMatmul2D(b, loc, a, bm);
  } else {
    Shape fullA = batch, fullB = batch;
    fullA.insert(fullA.end(), {M, K});
    fullB.insert(fullB.end(), {K, N});
    a = emitReshape(b, loc, emitBroadcastTo(b, loc, a, fullA), {bt, M, K});
    bm = emitReshape(b, loc, emitBroadcastTo(b, loc, bm, fullB), {bt, K, N});
    r = emitBatchMatmul(b, loc, a, bm);
  }
  Shape out = batch;
  if (!aVec)
    out.push_back(M);
  if (!bVec)
    out.push_back(N);
  return emitReshape(b, loc, r, out);
}

} // namespace

FailureOr<Value> emitOnnxMatMul(NodeLowering &n, Value a, Value bm) {
  return matmul(n, a, bm);
}

namespace {

LogicalResult lowerMatMul(NodeLowering &n) {
  auto r = matmul(n, n.value(0), n.value(1));
  if (failed(r))
    return failure();
  n.setOutput(0, *r, n.dtype(0));
  return success();
}

/// Input `i` (2-D), transposed if asked; a literal (a weight) is transposed
/// while compiling, so it arrives in the layout the product wants instead of
/// being copied on every run.
static Value gemmOperand(NodeLowering &n, size_t i, bool transpose) {
  if (!transpose)
    return n.value(i);
  if (n.isLiteral(i)) {
    const Shape &in = n.shape(i);
    GraphValue t;
    t.dtype = n.dtype(i);
    t.shape = {in[1], in[0]};
    t.literal = n.literal(i).gather(t.shape, [&](const int64_t *idx) {
      return idx[1] * in[1] + idx[0];
    });
    return n.materialize(t);
  }
  return emitTranspose(n.builder(), n.loc(), n.value(i), {1, 0});
}

LogicalResult lowerGemm(NodeLowering &n) {
  if (n.rank(0) != 2 || n.rank(1) != 2)
    return n.fail("A and B must be 2-D");
  bool ta = n.attrInt("transA", 0), tb = n.attrInt("transB", 0);
  double alpha = n.attrFloat("alpha", 1.0f), beta = n.attrFloat("beta", 1.0f);
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Value r;
  Shape out;
  if (!ta && tb && n.shape(0)[0] == 1) {
    // One row against a transposed weight (a classifier at batch 1): the
    // product is W[N, K] . x[K] as a column, reading each row of W
    // contiguously (a matrix-vector product), where W^T[K, N] would stream
    // a few hundred floats of each of K rows per output block.
    const Shape &ws = n.shape(1);
    int64_t k = n.shape(0)[1];
    if (ws[1] != k)
      return n.fail("inner dimensions differ");
    Value column = emitReshape(b, loc, n.value(0), {k, 1});
    r = emitReshape(b, loc, emitMatmul2D(b, loc, n.value(1), column),
                    {1, ws[0]});
    out = {1, ws[0]};
  } else {
    Value a = gemmOperand(n, 0, ta), bm = gemmOperand(n, 1, tb);
    Shape as = shapeOf(a), bs = shapeOf(bm);
    if (as[1] != bs[0])
      return n.fail("inner dimensions differ");
    r = emitMatmul2D(b, loc, a, bm);
    out = {as[0], bs[1]};
  }
  Type et = n.elementType(n.dtype(0));
  bool hasC = n.hasInput(2) && beta != 0.0;
  if (alpha != 1.0 || hasC) {
    SmallVector<Value> ins = {r};
    if (hasC) {
      Shape tmp;
      if (!broadcastShapes({n.shape(2), out}, tmp) || tmp != out)
        return n.fail("C of shape " + formatShape(n.shape(2)) +
                      " does not broadcast to " + formatShape(out));
      ins.push_back(n.value(2));
    }
    r = emitElementwise(
        b, loc, ins, et, out, [&](OpBuilder &nb, Location l, ValueRange v) {
          Value x = v[0];
          if (alpha != 1.0)
            x = arith::MulFOp::create(nb, l, x,
                                      scalarConstant(nb, l, et, alpha));
          if (v.size() > 1) {
            Value c = v[1];
            if (beta != 1.0)
              c = arith::MulFOp::create(nb, l, c,
                                        scalarConstant(nb, l, et, beta));
            x = arith::AddFOp::create(nb, l, x, c);
          }
          return x;
        });
  }
  n.setOutput(0, r, n.dtype(0));
  return success();
}

} // namespace

LogicalResult windowGeometry(NodeLowering &n, const Shape &spatial,
                             const std::vector<int64_t> &kernel, bool ceilMode,
                             WindowGeometry &g) {
  size_t r = spatial.size();
  if (hasSymbolicDims(spatial))
    return n.fail("windows over symbolic spatial dims " +
                  symbolicDims().describe(spatial) +
                  " are not supported; pin them with --shape");
  g.kernel = kernel;
  g.strides = n.attrInts("strides", std::vector<int64_t>(r, 1));
  g.dilations = n.attrInts("dilations", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads =
      n.attrInts("pads", std::vector<int64_t>(2 * r, 0));
  if (g.strides.size() != r || g.dilations.size() != r || pads.size() != 2 * r)
    return n.fail("strides/dilations/pads do not match " + Twine(r) +
                  " spatial dims");
  std::string autoPad = n.attrString("auto_pad", "NOTSET");
  g.padLo.assign(pads.begin(), pads.begin() + r);
  g.padHi.assign(pads.begin() + r, pads.end());
  g.out.clear();
  for (size_t i = 0; i < r; ++i) {
    int64_t eff = g.dilations[i] * (kernel[i] - 1) + 1;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      int64_t o = (spatial[i] + g.strides[i] - 1) / g.strides[i];
      int64_t total =
          std::max<int64_t>(0, (o - 1) * g.strides[i] + eff - spatial[i]);
      int64_t small = total / 2, big = total - small;
      g.padLo[i] = autoPad == "SAME_UPPER" ? small : big;
      g.padHi[i] = autoPad == "SAME_UPPER" ? big : small;
    } else if (autoPad == "VALID") {
      g.padLo[i] = g.padHi[i] = 0;
    } else if (autoPad != "NOTSET") {
      return n.fail("unknown auto_pad '" + autoPad + "'");
    }
    int64_t span = spatial[i] + g.padLo[i] + g.padHi[i] - eff;
    if (span < 0)
      return n.fail("window larger than padded input");
    int64_t o = ceilMode ? (span + g.strides[i] - 1) / g.strides[i] + 1
                         : span / g.strides[i] + 1;
    // A window may not start in the trailing padding.
    if (ceilMode && (o - 1) * g.strides[i] >= spatial[i] + g.padLo[i])
      --o;
    g.out.push_back(o);
    g.declaredHi.push_back(g.padHi[i]);
    // Extra trailing pad so the last (ceil-mode) window is in bounds.
    int64_t need = (o - 1) * g.strides[i] + eff - (spatial[i] + g.padLo[i]);
    g.padHi[i] = std::max(g.padHi[i], need);
  }
  return success();
}

Value padSpatial(OpBuilder &b, Location loc, Value input,
                 const WindowGeometry &g, double value) {
  bool any = false;
  for (size_t i = 0; i < g.padLo.size(); ++i)
    any |= g.padLo[i] || g.padHi[i];
  if (!any)
    return input;
  Shape in = shapeOf(input);
  SmallVector<OpFoldResult> lo = {b.getIndexAttr(0), b.getIndexAttr(0)},
                            hi = lo;
  Shape out = {in[0], in[1]};
  for (size_t i = 0; i < g.padLo.size(); ++i) {
    lo.push_back(b.getIndexAttr(g.padLo[i]));
    hi.push_back(b.getIndexAttr(g.padHi[i]));
    out.push_back(in[2 + i] + g.padLo[i] + g.padHi[i]);
  }
  Type et = cast<RankedTensorType>(input.getType()).getElementType();
  Value pv = scalarConstant(b, loc, et, value);
  return tensor::PadOp::create(b, loc, tensorTypeOf(out, et), input, lo, hi,
                               pv);
}

namespace {

DenseIntElementsAttr i64Vector(OpBuilder &b, ArrayRef<int64_t> v) {
  return DenseIntElementsAttr::get(
      RankedTensorType::get({static_cast<int64_t>(v.size())}, b.getI64Type()),
      v);
}

} // namespace

Value emitConvolution(OpBuilder &b, Location loc, Value x, Value w,
                      int64_t group, ArrayRef<int64_t> strides,
                      ArrayRef<int64_t> dilations) {
  // Half-precision convolutions accumulate in f32 and round once, like the
  // reference's matrix product (im2col @ NumPy matmul).
  Type xt = cast<RankedTensorType>(x.getType()).getElementType();
  if (accumulatorType(b, xt) != xt)
    return roundTo(b, loc,
                   emitConvolution(b, loc, widenForProduct(b, loc, x, true),
                                   widenForProduct(b, loc, w, true), group,
                                   strides, dilations),
                   xt);
  Shape xs = shapeOf(x), ws = shapeOf(w);
  size_t r = xs.size() - 2;
  if (r == 1) {
    // A 1-D convolution is a 2-D one over a height of 1.
    xs.insert(xs.begin() + 2, 1);
    ws.insert(ws.begin() + 2, 1);
    Value y = emitConvolution(b, loc, emitReshape(b, loc, x, xs),
                              emitReshape(b, loc, w, ws), group,
                              {1, strides[0]}, {1, dilations[0]});
    Shape ys = shapeOf(y);
    ys.erase(ys.begin() + 2);
    return emitReshape(b, loc, y, ys);
  }
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  int64_t N = xs[0], C = xs[1], M = ws[0];
  Shape out = {N, M};
  for (size_t i = 0; i < r; ++i)
    out.push_back(
        (xs[2 + i] - dilations[i] * (ws[2 + i] - 1) - 1) / strides[i] + 1);
  auto st = i64Vector(b, strides), dil = i64Vector(b, dilations);
  Value init = emitFilled(b, loc, out, zeroAttr(b, et));
  if (group == 1) {
    if (r == 2)
      return linalg::Conv2DNchwFchwOp::create(b, loc, TypeRange{init.getType()},
                                              ValueRange{x, w},
                                              ValueRange{init}, st, dil)
          .getResult(0);
    return linalg::Conv3DNcdhwFcdhwOp::create(b, loc, TypeRange{init.getType()},
                                              ValueRange{x, w},
                                              ValueRange{init}, st, dil)
        .getResult(0);
  }
  if (r == 2 && group == C && M == C) {
    Value wd = emitReshape(b, loc, w, {C, ws[2], ws[3]});
    return linalg::DepthwiseConv2DNchwChwOp::create(
               b, loc, TypeRange{init.getType()}, ValueRange{x, wd},
               ValueRange{init}, st, dil)
        .getResult(0);
  }
  int64_t Cg = C / group, Mg = M / group;
  if (r == 2) {
    Value xg = emitReshape(b, loc, x, {N, group, Cg, xs[2], xs[3]});
    Value wg = emitReshape(b, loc, w, {group, Mg, Cg, ws[2], ws[3]});
    Shape gout = {N, group, Mg, out[2], out[3]};
    Value ginit = emitFilled(b, loc, gout, zeroAttr(b, et));
    Value y = linalg::Conv2DNgchwGfchwOp::create(
                  b, loc, TypeRange{ginit.getType()}, ValueRange{xg, wg},
                  ValueRange{ginit}, st, dil)
                  .getResult(0);
    return emitReshape(b, loc, y, out);
  }
  // 3-D grouped: linalg has no named op, so one convolution per group.
  // `dim` is the channel dim of the sliced tensor (1 for x, 0 for w).
  auto box = [&](const Shape &s, size_t dim, int64_t off, int64_t size,
                 SmallVector<OpFoldResult> &offs,
                 SmallVector<OpFoldResult> &sizes,
                 SmallVector<OpFoldResult> &ones) {
    for (size_t d = 0; d < s.size(); ++d) {
      offs.push_back(b.getIndexAttr(d == dim ? off : 0));
      sizes.push_back(d == dim ? OpFoldResult(b.getIndexAttr(size))
                               : dimFoldResult(b, loc, s[d]));
      ones.push_back(b.getIndexAttr(1));
    }
  };
  Value result = init;
  Shape gout = out;
  gout[1] = Mg;
  for (int64_t gi = 0; gi < group; ++gi) {
    SmallVector<OpFoldResult> xo, xsz, x1, wo, wsz, w1, oo, osz, o1;
    box(xs, 1, gi * Cg, Cg, xo, xsz, x1);
    box(ws, 0, gi * Mg, Mg, wo, wsz, w1);
    box(out, 1, gi * Mg, Mg, oo, osz, o1);
    Value xg = tensor::ExtractSliceOp::create(b, loc, x, xo, xsz, x1);
    Value wg = tensor::ExtractSliceOp::create(b, loc, w, wo, wsz, w1);
    Value ginit = emitFilled(b, loc, gout, zeroAttr(b, et));
    Value y = linalg::Conv3DNcdhwFcdhwOp::create(
                  b, loc, TypeRange{ginit.getType()}, ValueRange{xg, wg},
                  ValueRange{ginit}, st, dil)
                  .getResult(0);
    result = tensor::InsertSliceOp::create(b, loc, y, result, oo, osz, o1);
  }
  return result;
}

/// The [n, g, f, h, w] result of a grouped 2-D convolution that `y` is a
/// reshape of (emitConvolution's [n, g * f, h, w] view), or null.
static Value groupedConvResult(Value y) {
  Value v = y;
  while (v && v.getDefiningOp<tensor::ExpandShapeOp>())
    v = v.getDefiningOp<tensor::ExpandShapeOp>().getSrc();
  while (v && v.getDefiningOp<tensor::CollapseShapeOp>())
    v = v.getDefiningOp<tensor::CollapseShapeOp>().getSrc();
  if (!v || !v.getDefiningOp<linalg::Conv2DNgchwGfchwOp>() ||
      !cast<RankedTensorType>(v.getType()).hasStaticShape() ||
      !cast<RankedTensorType>(y.getType()).hasStaticShape())
    return Value();
  return v;
}

Value emitChannelBias(OpBuilder &b, Location loc, Value y, Value bias) {
  // A grouped convolution's bias is added to its [n, g, f, h, w] result,
  // per (g, f): the bias and the activation after it then fold into that
  // form and into the convolution's tile, which applies them before its
  // stores (mcc-vectorize-grouped-conv). Added after the reshape, the
  // bias's broadcast map kept them a separate pass over the output.
  if (Value grouped = groupedConvResult(y)) {
    Shape gs = shapeOf(grouped);
    Type et = cast<RankedTensorType>(y.getType()).getElementType();
    Value sum = emitElementwise(
        b, loc,
        ValueRange{grouped, emitReshape(b, loc, bias, {gs[1], gs[2], 1, 1})},
        et, gs, [](OpBuilder &nb, Location l, ValueRange v) {
          return (Value)arith::AddFOp::create(nb, l, v[0], v[1]);
        });
    return emitReshape(b, loc, sum, shapeOf(y));
  }
  Shape ys = shapeOf(y);
  Shape bs(ys.size() - 1, 1);
  bs[0] = ys[1];
  Type et = cast<RankedTensorType>(y.getType()).getElementType();
  return emitElementwise(b, loc, ValueRange{y, emitReshape(b, loc, bias, bs)},
                         et, ys, [](OpBuilder &nb, Location l, ValueRange v) {
                           return (Value)arith::AddFOp::create(nb, l, v[0],
                                                               v[1]);
                         });
}

FailureOr<Value> emitOnnxConv(NodeLowering &n, Value x, Value w) {
  Shape xs = shapeOf(x), ws = shapeOf(w);
  if (xs.size() < 3 || xs.size() > 5)
    return n.fail("only 1-D, 2-D and 3-D convolutions are supported (input " +
                  formatShape(xs) + ")");
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  std::vector<int64_t> kernel = n.attrInts("kernel_shape");
  if (kernel.empty())
    kernel.assign(ws.begin() + 2, ws.end());
  Shape spatial(xs.begin() + 2, xs.end());
  WindowGeometry g;
  if (failed(windowGeometry(n, spatial, kernel, false, g)))
    return failure();
  int64_t C = xs[1], M = ws[0];
  int64_t group = n.attrInt("group", 1);
  if (group < 1 || C % group || M % group || ws[1] * group != C)
    return n.fail("channels " + Twine(C) + " and weight " + formatShape(ws) +
                  " do not fit group " + Twine(group));
  x = padSpatial(b, loc, x, g, 0.0);
  return emitConvolution(b, loc, x, w, group, g.strides, g.dilations);
}

namespace {

LogicalResult lowerConv(NodeLowering &n) {
  if (!isFloatDType(n.dtype(0)))
    return n.fail("only floating-point convolutions are supported");
  FailureOr<Value> conv = emitWinogradConv(n);
  if (succeeded(conv) && !*conv)
    conv = emitOnnxConv(n, n.value(0), n.value(1));
  if (failed(conv))
    return failure();
  Value r = *conv;
  if (n.hasInput(2))
    r = emitChannelBias(n.builder(), n.loc(), r, n.value(2));
  n.setOutput(0, r, n.dtype(0));
  return success();
}

enum class PoolKind { Max, Average, Lp };

/// Pooling of any rank as one linalg.generic over (n, c, out..., window...):
/// 3-D pools, LpPool and MaxPool's Indices output, which the named NCHW
/// pooling ops do not cover.
LogicalResult lowerPoolGeneric(NodeLowering &n, PoolKind kind) {
  Shape xs = n.shape(0);
  int64_t r = (int64_t)xs.size() - 2;
  if (r < 1)
    return n.fail("needs an [N, C, spatial...] input");
  std::vector<int64_t> kernel = n.attrInts("kernel_shape");
  if ((int64_t)kernel.size() != r)
    return n.fail("kernel_shape does not match the input rank");
  Shape spatial(xs.begin() + 2, xs.end());
  WindowGeometry g;
  if (failed(windowGeometry(n, spatial, kernel, n.attrInt("ceil_mode", 0), g)))
    return failure();
  int32_t dt = n.dtype(0);
  bool isFloat = isFloatDType(dt);
  if (!isFloat && kind != PoolKind::Max)
    return n.fail("needs a floating-point input");
  bool uns = isUnsignedDType(dt);
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Type et = n.elementType(dt);
  // Max pads with its identity; the padding never wins a window.
  double lowest = 0.0;
  if (kind == PoolKind::Max)
    lowest = isFloat ? -INFINITY
             : uns   ? 0.0
                     : -std::ldexp(1.0, et.getIntOrFloatBitWidth() - 1);
  Value x = padSpatial(b, loc, n.value(0), g, lowest);
  Shape out = {xs[0], xs[1]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  int64_t loops = 2 + 2 * r;
  SmallVector<AffineExpr> inExprs = {getAffineDimExpr(0, ctx),
                                     getAffineDimExpr(1, ctx)},
                          winExprs, outExprs = inExprs;
  for (int64_t i = 0; i < r; ++i) {
    AffineExpr o = getAffineDimExpr(2 + i, ctx),
               k = getAffineDimExpr(2 + r + i, ctx);
    inExprs.push_back(o * g.strides[i] + k * g.dilations[i]);
    winExprs.push_back(k);
    outExprs.push_back(o);
  }
  // The window operand only gives the reduction loops their extents.
  Value window = createEmpty(b, loc, g.kernel, et);
  SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, inExprs, ctx),
                                 AffineMap::get(loops, 0, winExprs, ctx),
                                 AffineMap::get(loops, 0, outExprs, ctx)};
  SmallVector<utils::IteratorType> iters(2 + r, utils::IteratorType::parallel);
  iters.append(r, utils::IteratorType::reduction);
  bool withIndices = kind == PoolKind::Max && n.hasOutput(1);
  TypedAttr init =
      kind != PoolKind::Max ? (TypedAttr)b.getFloatAttr(et, 0.0)
      : isFloat             ? (TypedAttr)b.getFloatAttr(et, lowest)
                : (TypedAttr)b.getIntegerAttr(et, static_cast<int64_t>(lowest));
  SmallVector<Value> outs = {emitFilled(b, loc, out, init)};
  if (withIndices) {
    outs.push_back(emitFilled(b, loc, out, b.getI64IntegerAttr(0)));
    maps.push_back(maps.back());
  }
  int64_t p = n.attrInt("p", 2);
  bool columnMajor = n.attrInt("storage_order", 0) != 0;
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange(ValueRange(outs)), ValueRange{x, window}, outs, maps,
      iters, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value v = a[0], acc = a[2];
        if (kind == PoolKind::Average) {
          linalg::YieldOp::create(
              nb, l, arith::AddFOp::create(nb, l, acc, v).getResult());
          return;
        }
        if (kind == PoolKind::Lp) {
          Value m = math::AbsFOp::create(nb, l, v);
          Value powered =
              p == 1   ? m
              : p == 2 ? (Value)arith::MulFOp::create(nb, l, m, m)
                       : (Value)math::PowFOp::create(
                             nb, l, m, scalarConstant(nb, l, et, double(p)));
          linalg::YieldOp::create(
              nb, l, arith::AddFOp::create(nb, l, acc, powered).getResult());
          return;
        }
        Value better =
            isFloat
                ? (Value)arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT,
                                               v, acc)
                : (Value)arith::CmpIOp::create(nb, l,
                                               uns ? arith::CmpIPredicate::ugt
                                                   : arith::CmpIPredicate::sgt,
                                               v, acc);
        if (!withIndices) {
          linalg::YieldOp::create(
              nb, l,
              arith::SelectOp::create(nb, l, better, v, acc).getResult());
          return;
        }
        // The position in the unpadded input, flattened over (n, c,
        // spatial...) row-major, or with the spatial dims column-major
        // (storage_order=1); the first of equal maxima wins.
        Type i64 = nb.getI64Type();
        auto idx = [&](int64_t d) -> Value {
          return arith::IndexCastOp::create(nb, l, i64,
                                            linalg::IndexOp::create(nb, l, d));
        };
        auto c64 = [&](int64_t v) -> Value {
          return arith::ConstantIntOp::create(nb, l, i64, v);
        };
        auto mul = [&](Value x, Value y) -> Value {
          return arith::MulIOp::create(nb, l, x, y);
        };
        auto add = [&](Value x, Value y) -> Value {
          return arith::AddIOp::create(nb, l, x, y);
        };
        SmallVector<Value> pos;
        Value inside;
        for (int64_t i = 0; i < r; ++i) {
          Value q = add(mul(idx(2 + i), c64(g.strides[i])),
                        mul(idx(2 + r + i), c64(g.dilations[i])));
          q = arith::SubIOp::create(nb, l, q, c64(g.padLo[i]));
          Value ok = arith::AndIOp::create(
              nb, l,
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, q,
                                    c64(0)),
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, q,
                                    c64(spatial[i])));
          inside = inside ? arith::AndIOp::create(nb, l, inside, ok) : ok;
          pos.push_back(q);
        }
        int64_t plane = numElements(spatial);
        Value flat = mul(add(mul(idx(0), c64(xs[1])), idx(1)), c64(plane));
        int64_t stride = 1;
        for (int64_t k = 0; k < r; ++k) {
          int64_t i = columnMajor ? k : r - 1 - k;
          flat = add(flat, mul(pos[i], c64(stride)));
          stride *= spatial[i];
        }
        better = arith::AndIOp::create(nb, l, better, inside);
        linalg::YieldOp::create(
            nb, l,
            ValueRange{arith::SelectOp::create(nb, l, better, v, acc),
                       arith::SelectOp::create(nb, l, better, flat, a[3])});
      });
  Value res = op.getResult(0);
  if (kind == PoolKind::Lp) {
    res = emitElementwise(
        b, loc, res, et, out, [&](OpBuilder &nb, Location l, ValueRange v) {
          if (p == 1)
            return v[0];
          if (p == 2)
            return (Value)math::SqrtOp::create(nb, l, v[0]);
          return (Value)math::PowFOp::create(
              nb, l, v[0], scalarConstant(nb, l, et, 1.0 / p));
        });
  } else if (kind == PoolKind::Average) {
    // Static divisors: per dim, the window's elements inside the input (or
    // inside the declared padding with count_include_pad, never the extra
    // padding of ceil mode); a window's count is their product.
    bool includePad = n.attrInt("count_include_pad", 0) != 0;
    std::vector<std::vector<int64_t>> perDim(r);
    for (int64_t d = 0; d < r; ++d)
      for (int64_t o = 0; o < g.out[d]; ++o) {
        int64_t lo = includePad ? -g.padLo[d] : 0;
        int64_t hi = spatial[d] + (includePad ? g.declaredHi[d] : 0);
        int64_t c = 0;
        for (int64_t k = 0; k < g.kernel[d]; ++k) {
          int64_t q = o * g.strides[d] - g.padLo[d] + k * g.dilations[d];
          c += q >= lo && q < hi;
        }
        perDim[d].push_back(c);
      }
    Shape outSpatial(g.out.begin(), g.out.end());
    std::vector<double> divisors(numElements(outSpatial));
    for (int64_t e = 0; e < (int64_t)divisors.size(); ++e) {
      int64_t c = 1;
      for (int64_t d = r - 1, rest = e; d >= 0; --d) {
        c *= perDim[d][rest % g.out[d]];
        rest /= g.out[d];
      }
      divisors[e] = std::max<int64_t>(1, c);
    }
    Value div = floatConstantTensor(b, loc, outSpatial, et, divisors);
    res = emitElementwise(b, loc, ValueRange{res, div}, et, out,
                          [](OpBuilder &nb, Location l, ValueRange v) {
                            return (Value)arith::DivFOp::create(nb, l, v[0],
                                                                v[1]);
                          });
  }
  n.setOutput(0, res, dt);
  if (withIndices)
    n.setOutput(1, op.getResult(1), kInt64);
  return success();
}

LogicalResult lowerPool(NodeLowering &n, bool isMax) {
  Shape xs = n.shape(0);
  if (xs.size() == 5 || (isMax && n.hasOutput(1)))
    return lowerPoolGeneric(n, isMax ? PoolKind::Max : PoolKind::Average);
  if (xs.size() != 4 && xs.size() != 3)
    return n.fail("only 1-D to 3-D pooling is supported");
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Value x = n.value(0);
  std::vector<int64_t> kernel = n.attrInts("kernel_shape");
  bool is1d = xs.size() == 3;
  if (kernel.size() != xs.size() - 2)
    return n.fail("kernel_shape does not match the input rank");
  Shape spatial(xs.begin() + 2, xs.end());
  WindowGeometry g;
  if (failed(windowGeometry(n, spatial, kernel, n.attrInt("ceil_mode", 0), g)))
    return failure();
  if (is1d) {
    xs.insert(xs.begin() + 2, 1);
    spatial.insert(spatial.begin(), 1);
    x = emitReshape(b, loc, x, xs);
    g.kernel.insert(g.kernel.begin(), 1);
    g.strides.insert(g.strides.begin(), 1);
    g.dilations.insert(g.dilations.begin(), 1);
    g.padLo.insert(g.padLo.begin(), 0);
    g.padHi.insert(g.padHi.begin(), 0);
    g.declaredHi.insert(g.declaredHi.begin(), 0);
    g.out.insert(g.out.begin(), 1);
  }
  Type et = n.elementType(n.dtype(0));
  bool isFloat = isa<FloatType>(et);
  if (!isFloat && !isMax)
    return n.fail("AveragePool needs a floating-point input");
  // linalg's integer max pool compares signed: pool uint8 as int32 (ONNX
  // pools no wider unsigned type).
  if (isUnsignedDType(n.dtype(0)) && n.dtype(0) != kUInt8)
    return n.fail("pooling " + dtypeName(n.dtype(0)) +
                  " is not supported (float, int8 and uint8 are)");
  bool widenUnsigned = n.dtype(0) == kUInt8;
  if (widenUnsigned) {
    Type i32 = b.getI32Type();
    x = emitElementwise(b, loc, x, i32, shapeOf(x),
                        [&](OpBuilder &nb, Location l, ValueRange v) {
                          return (Value)arith::ExtUIOp::create(nb, l, i32,
                                                               v[0]);
                        });
    et = i32;
  }
  // The identity of max: -inf, or the smallest value of the integer type.
  double lowest = isFloat ? -INFINITY
                  : n.dtype(0) == kUInt8
                      ? 0.0
                      : -std::ldexp(1.0, et.getIntOrFloatBitWidth() - 1);
  x = padSpatial(b, loc, x, g, isMax ? lowest : 0.0);
  Shape out = {xs[0], xs[1], g.out[0], g.out[1]};
  Value window =
      createEmpty(b, loc, Shape{g.kernel[0], g.kernel[1]}, et);
  auto strides = i64Vector(b, g.strides), dil = i64Vector(b, g.dilations);
  Value r;
  if (isMax) {
    TypedAttr lowestAttr =
        isFloat ? (TypedAttr)b.getFloatAttr(et, lowest)
                : (TypedAttr)b.getIntegerAttr(et, static_cast<int64_t>(lowest));
    Value init = emitFilled(b, loc, out, lowestAttr);
    r = linalg::PoolingNchwMaxOp::create(b, loc, TypeRange{init.getType()},
                                         ValueRange{x, window},
                                         ValueRange{init}, strides, dil)
            .getResult(0);
  } else {
    Value init = emitFilled(b, loc, out, b.getFloatAttr(et, 0.0));
    r = linalg::PoolingNchwSumOp::create(b, loc, TypeRange{init.getType()},
                                         ValueRange{x, window},
                                         ValueRange{init}, strides, dil)
            .getResult(0);
    // Divisors are static: count each window's elements inside the input,
    // or inside the declared padding with count_include_pad (never the
    // extra padding ceil mode adds).
    bool includePad = n.attrInt("count_include_pad", 0) != 0;
    Literal counts(n.dtype(0), {g.out[0], g.out[1]});
    for (int64_t oh = 0; oh < g.out[0]; ++oh)
      for (int64_t ow = 0; ow < g.out[1]; ++ow) {
        int64_t cnt[2];
        for (int d = 0; d < 2; ++d) {
          int64_t o = d == 0 ? oh : ow;
          int64_t lo = includePad ? -g.padLo[d] : 0;
          int64_t hi = spatial[d] + (includePad ? g.declaredHi[d] : 0);
          int64_t c = 0;
          for (int64_t k = 0; k < g.kernel[d]; ++k) {
            int64_t pos = o * g.strides[d] - g.padLo[d] + k * g.dilations[d];
            c += pos >= lo && pos < hi;
          }
          cnt[d] = c;
        }
        counts.setF(oh * g.out[1] + ow, std::max<int64_t>(1, cnt[0] * cnt[1]));
      }
    std::vector<double> divisors(counts.size());
    for (int64_t i = 0; i < counts.size(); ++i)
      divisors[i] = counts.getF(i);
    Value div = floatConstantTensor(b, loc, counts.shape(), et, divisors);
    r = emitElementwise(b, loc, ValueRange{r, div}, et, out,
                        [](OpBuilder &nb, Location l, ValueRange v) {
                          return (Value)arith::DivFOp::create(nb, l, v[0],
                                                              v[1]);
                        });
  }
  if (widenUnsigned) {
    Type i8 = b.getI8Type();
    r = emitElementwise(b, loc, r, i8, shapeOf(r),
                        [&](OpBuilder &nb, Location l, ValueRange v) {
                          return (Value)arith::TruncIOp::create(nb, l, i8,
                                                                v[0]);
                        });
  }
  if (is1d)
    r = emitReshape(b, loc, r, {out[0], out[1], out[3]});
  n.setOutput(0, r, n.dtype(0));
  return success();
}

enum class ReduceKind {
  Sum,
  Mean,
  Max,
  Min,
  Prod,
  L1,
  L2,
  LogSum,
  LogSumExp,
  SumSquare
};

LogicalResult lowerReduce(NodeLowering &n, ReduceKind kind) {
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  // Axes moved from attribute to input in opset 13 (ReduceSum) / 18 (rest).
  auto axesOr = n.intsFromInputOrAttr(1, "axes");
  if (failed(axesOr))
    return failure();
  std::vector<int64_t> axes;
  if (*axesOr && !(*axesOr)->empty()) {
    for (int64_t a : **axesOr) {
      a = normalizeAxis(a, rank);
      if (a < 0 || a >= rank)
        return n.fail("axis out of range");
      if (std::find(axes.begin(), axes.end(), a) == axes.end())
        axes.push_back(a);
    }
  } else if (n.attrInt("noop_with_empty_axes", 0)) {
    if (n.isLiteral(0))
      n.setOutput(0, n.literal(0));
    else
      n.setOutput(0, n.value(0), n.dtype(0));
    return success();
  } else {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  std::sort(axes.begin(), axes.end());
  bool keep = n.attrInt("keepdims", 1) != 0;
  Shape reducedDims;
  for (int64_t a : axes)
    reducedDims.push_back(in[a]);
  int64_t count = dimsProduct(reducedDims);
  int32_t dt = n.dtype(0);
  bool fl = isFloatDType(dt);
  // bool reduces unsigned too: max is "any", min is "all".
  bool uns = isUnsignedDType(dt) || dt == kBool;
  if (n.isLiteral(0)) {
    Shape out = in;
    for (int64_t a : axes)
      out[a] = 1;
    const Literal &l = n.literal(0);
    std::vector<double> acc(numElements(out));
    double init = (kind == ReduceKind::Max)    ? -INFINITY
                  : (kind == ReduceKind::Min)  ? INFINITY
                  : (kind == ReduceKind::Prod) ? 1.0
                                               : 0.0;
    std::fill(acc.begin(), acc.end(), init);
    std::vector<int64_t> ost = stridesOf(out), idx(rank, 0);
    for (int64_t e = 0; e < l.size(); ++e) {
      int64_t o = 0;
      for (int64_t d = 0; d < rank; ++d)
        o += (out[d] == 1 ? 0 : idx[d]) * ost[d];
      double x = l.getAsDouble(e);
      double &a = acc[o];
      switch (kind) {
      case ReduceKind::Max:
        a = std::max(a, x);
        break;
      case ReduceKind::Min:
        a = std::min(a, x);
        break;
      case ReduceKind::Prod:
        a *= x;
        break;
      case ReduceKind::L1:
        a += std::fabs(x);
        break;
      case ReduceKind::L2:
      case ReduceKind::SumSquare:
        a += x * x;
        break;
      case ReduceKind::LogSumExp:
        a += std::exp(x);
        break;
      default:
        a += x;
      }
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++idx[d] < in[d])
          break;
        idx[d] = 0;
      }
    }
    Shape finalShape;
    for (int64_t d = 0; d < rank; ++d)
      if (keep || std::find(axes.begin(), axes.end(), d) == axes.end())
        finalShape.push_back(out[d]);
    Literal r(dt, finalShape);
    for (size_t i = 0; i < acc.size(); ++i) {
      double v = acc[i];
      if (kind == ReduceKind::Mean)
        v /= count;
      if (kind == ReduceKind::L2)
        v = std::sqrt(v);
      if (kind == ReduceKind::LogSum || kind == ReduceKind::LogSumExp)
        v = std::log(v);
      r.setFromDouble(i, v);
    }
    n.setOutput(0, std::move(r));
    return success();
  }
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(dt);
  TypedAttr init;
  ScalarBody combine, map;
  auto addB = [fl](OpBuilder &nb, Location l, ValueRange v) -> Value {
    if (fl)
      return arith::AddFOp::create(nb, l, v[0], v[1]);
    return arith::AddIOp::create(nb, l, v[0], v[1]);
  };
  switch (kind) {
  case ReduceKind::Max:
    init = fl ? (TypedAttr)b.getFloatAttr(et, -INFINITY)
              : (TypedAttr)b.getIntegerAttr(
                    et,
                    uns ? APInt::getMinValue(et.getIntOrFloatBitWidth())
                        : APInt::getSignedMinValue(et.getIntOrFloatBitWidth()));
    combine = [fl, uns](OpBuilder &nb, Location l, ValueRange v) -> Value {
      if (fl)
        return arith::MaximumFOp::create(nb, l, v[0], v[1]);
      if (uns)
        return arith::MaxUIOp::create(nb, l, v[0], v[1]);
      return arith::MaxSIOp::create(nb, l, v[0], v[1]);
    };
    break;
  case ReduceKind::Min:
    init = fl ? (TypedAttr)b.getFloatAttr(et, INFINITY)
              : (TypedAttr)b.getIntegerAttr(
                    et,
                    uns ? APInt::getMaxValue(et.getIntOrFloatBitWidth())
                        : APInt::getSignedMaxValue(et.getIntOrFloatBitWidth()));
    combine = [fl, uns](OpBuilder &nb, Location l, ValueRange v) -> Value {
      if (fl)
        return arith::MinimumFOp::create(nb, l, v[0], v[1]);
      if (uns)
        return arith::MinUIOp::create(nb, l, v[0], v[1]);
      return arith::MinSIOp::create(nb, l, v[0], v[1]);
    };
    break;
  case ReduceKind::Prod:
    init = fl ? (TypedAttr)b.getFloatAttr(et, 1.0)
              : (TypedAttr)b.getIntegerAttr(et, 1);
    combine = [fl](OpBuilder &nb, Location l, ValueRange v) -> Value {
      if (fl)
        return arith::MulFOp::create(nb, l, v[0], v[1]);
      return arith::MulIOp::create(nb, l, v[0], v[1]);
    };
    break;
  default:
    init = fl ? (TypedAttr)b.getFloatAttr(et, 0.0)
              : (TypedAttr)b.getIntegerAttr(et, 0);
    combine = addB;
  }
  if (kind == ReduceKind::L1)
    map = [fl, uns](OpBuilder &nb, Location l, ValueRange v) -> Value {
      if (fl)
        return math::AbsFOp::create(nb, l, v[0]);
      if (uns)
        return v[0];
      return math::AbsIOp::create(nb, l, v[0]);
    };
  if (kind == ReduceKind::L2 || kind == ReduceKind::SumSquare)
    map = [fl](OpBuilder &nb, Location l, ValueRange v) -> Value {
      if (fl)
        return arith::MulFOp::create(nb, l, v[0], v[0]);
      return arith::MulIOp::create(nb, l, v[0], v[0]);
    };
  if (kind == ReduceKind::LogSumExp) {
    // log(sum(exp(x - max))) + max keeps large inputs finite.
    Value mx = emitReduction(
        b, loc, n.value(0), axes, true, b.getFloatAttr(et, -INFINITY),
        [](OpBuilder &nb, Location l, ValueRange v) {
          return (Value)arith::MaximumFOp::create(nb, l, v[0], v[1]);
        });
    Value shifted =
        emitElementwise(b, loc, ValueRange{n.value(0), mx}, et, in,
                        [](OpBuilder &nb, Location l, ValueRange v) {
                          return (Value)math::ExpOp::create(
                              nb, l, arith::SubFOp::create(nb, l, v[0], v[1]));
                        });
    Value s = emitReduction(b, loc, shifted, axes, true, init, addB);
    Shape kept = shapeOf(s);
    Value r =
        emitElementwise(b, loc, ValueRange{s, mx}, et, kept,
                        [](OpBuilder &nb, Location l, ValueRange v) {
                          return (Value)arith::AddFOp::create(
                              nb, l, math::LogOp::create(nb, l, v[0]), v[1]);
                        });
    if (!keep) {
      Shape sq;
      for (int64_t d = 0; d < rank; ++d)
        if (std::find(axes.begin(), axes.end(), d) == axes.end())
          sq.push_back(in[d]);
      r = emitReshape(b, loc, r, sq);
    }
    n.setOutput(0, r, dt);
    return success();
  }
  Value r = emitReduction(b, loc, n.value(0), axes, keep, init, combine, map);
  if (kind == ReduceKind::Mean || kind == ReduceKind::L2 ||
      kind == ReduceKind::LogSum) {
    r = emitElementwise(
        b, loc, ValueRange{r}, et, shapeOf(r),
        [&](OpBuilder &nb, Location l, ValueRange v) -> Value {
          if (kind == ReduceKind::Mean) {
            // The element count, known at run time over symbolic axes.
            Value c;
            if (!isSymbolicDim(count)) {
              c = scalarConstant(nb, l, et, count);
            } else {
              Value i = arith::IndexCastOp::create(
                  nb, l, nb.getI64Type(), dimValue(nb, l, count));
              c = fl ? (Value)arith::SIToFPOp::create(nb, l, et, i)
                     : emitScalarCast(nb, l, i, kInt64, dt, et);
            }
            if (fl)
              return arith::DivFOp::create(nb, l, v[0], c);
            if (uns)
              return arith::DivUIOp::create(nb, l, v[0], c);
            return arith::DivSIOp::create(nb, l, v[0], c);
          }
          if (kind == ReduceKind::L2)
            return math::SqrtOp::create(nb, l, v[0]);
          return math::LogOp::create(nb, l, v[0]);
        });
  }
  n.setOutput(0, r, dt);
  return success();
}

LogicalResult lowerGlobalPool(NodeLowering &n, bool isMax) {
  const Shape &in = n.shape(0);
  std::vector<int64_t> axes;
  for (size_t d = 2; d < in.size(); ++d)
    axes.push_back(d);
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(n.dtype(0));
  int64_t count = 1;
  for (int64_t a : axes)
    count *= in[a];
  Value r;
  if (isMax) {
    r = emitReduction(
        b, loc, n.value(0), axes, true, b.getFloatAttr(et, -INFINITY),
        [](OpBuilder &nb, Location l, ValueRange v) {
          return (Value)arith::MaximumFOp::create(nb, l, v[0], v[1]);
        });
  } else {
    r = emitReduction(b, loc, n.value(0), axes, true, b.getFloatAttr(et, 0.0),
                      [](OpBuilder &nb, Location l, ValueRange v) {
                        return (Value)arith::AddFOp::create(nb, l, v[0], v[1]);
                      });
    r = emitElementwise(b, loc, ValueRange{r}, et, shapeOf(r),
                        [&](OpBuilder &nb, Location l, ValueRange v) {
                          return (Value)arith::DivFOp::create(
                              nb, l, v[0], scalarConstant(nb, l, et, count));
                        });
  }
  n.setOutput(0, r, n.dtype(0));
  return success();
}

/// ArgMax/ArgMin: one reduction producing (best value, its index).
LogicalResult lowerArgExtreme(NodeLowering &n, bool isMax) {
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  int64_t axis = normalizeAxis(n.attrInt("axis", 0), rank);
  if (axis < 0 || axis >= rank)
    return n.fail("axis out of range");
  bool keep = n.attrInt("keepdims", 1) != 0;
  bool last = n.attrInt("select_last_index", 0) != 0;
  int32_t dt = n.dtype(0);
  bool fl = isFloatDType(dt);
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Type et = n.elementType(dt);
  Shape outShape;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iters;
  for (int64_t d = 0; d < rank; ++d) {
    iters.push_back(d == axis ? utils::IteratorType::reduction
                              : utils::IteratorType::parallel);
    if (d != axis) {
      outShape.push_back(in[d]);
      outExprs.push_back(getAffineDimExpr(d, ctx));
    }
  }
  TypedAttr worst;
  if (fl)
    worst = b.getFloatAttr(et, isMax ? -INFINITY : INFINITY);
  else if (isUnsignedDType(dt))
    worst = b.getIntegerAttr(
        et, isMax ? APInt::getMinValue(et.getIntOrFloatBitWidth())
                  : APInt::getMaxValue(et.getIntOrFloatBitWidth()));
  else
    worst = b.getIntegerAttr(
        et, isMax ? APInt::getSignedMinValue(et.getIntOrFloatBitWidth())
                  : APInt::getSignedMaxValue(et.getIntOrFloatBitWidth()));
  Value bestInit = emitFilled(b, loc, outShape, worst);
  Value idxInit = emitFilled(b, loc, outShape, b.getI64IntegerAttr(0));
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                 AffineMap::get(rank, 0, outExprs, ctx),
                                 AffineMap::get(rank, 0, outExprs, ctx)};
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{bestInit.getType(), idxInit.getType()},
      ValueRange{n.value(0)}, ValueRange{bestInit, idxInit}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value x = a[0], best = a[1], bestIdx = a[2];
        Value i = arith::IndexCastOp::create(
            nb, l, nb.getI64Type(), linalg::IndexOp::create(nb, l, axis));
        Value better;
        if (fl) {
          auto pred = isMax ? (last ? arith::CmpFPredicate::OGE
                                    : arith::CmpFPredicate::OGT)
                            : (last ? arith::CmpFPredicate::OLE
                                    : arith::CmpFPredicate::OLT);
          better = arith::CmpFOp::create(nb, l, pred, x, best);
        } else {
          auto pred = isMax ? (last ? arith::CmpIPredicate::sge
                                    : arith::CmpIPredicate::sgt)
                            : (last ? arith::CmpIPredicate::sle
                                    : arith::CmpIPredicate::slt);
          if (isUnsignedDType(dt))
            pred = isMax ? (last ? arith::CmpIPredicate::uge
                                 : arith::CmpIPredicate::ugt)
                         : (last ? arith::CmpIPredicate::ule
                                 : arith::CmpIPredicate::ult);
          better = arith::CmpIOp::create(nb, l, pred, x, best);
        }
        // The first element always wins, so an all-NaN or all-extreme
        // row still yields a valid index.
        Value first = arith::CmpIOp::create(
            nb, l, arith::CmpIPredicate::eq, i,
            arith::ConstantIntOp::create(nb, l, nb.getI64Type(), 0));
        better = arith::OrIOp::create(nb, l, better, first);
        linalg::YieldOp::create(
            nb, l,
            ValueRange{arith::SelectOp::create(nb, l, better, x, best),
                       arith::SelectOp::create(nb, l, better, i, bestIdx)});
      });
  Value r = op.getResult(1);
  if (keep) {
    Shape kept = in;
    kept[axis] = 1;
    r = emitReshape(b, loc, r, kept);
  }
  n.setOutput(0, r, kInt64);
  return success();
}

/// CumSum / CumProd as a masked reduction over a second copy of the axis:
/// O(n^2) in the axis length, which the models this serves keep short.
LogicalResult lowerCumulative(NodeLowering &n, bool product) {
  if (failed(n.requireLiterals({1}, "axis")))
    return failure();
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  int64_t axis = normalizeAxis(n.literal(1).getI(0), rank);
  if (axis < 0 || axis >= rank)
    return n.fail("axis out of range");
  bool exclusive = n.attrInt("exclusive", 0) != 0;
  bool reverse = n.attrInt("reverse", 0) != 0;
  int32_t dt = n.dtype(0);
  bool fl = isFloatDType(dt);
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Type et = n.elementType(dt);
  SmallVector<AffineExpr> inExprs, outExprs;
  for (int64_t d = 0; d < rank; ++d) {
    outExprs.push_back(getAffineDimExpr(d, ctx));
    inExprs.push_back(getAffineDimExpr(d == axis ? rank : d, ctx));
  }
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters.push_back(utils::IteratorType::reduction);
  TypedAttr identity = !product ? zeroAttr(b, et)
                       : fl     ? (TypedAttr)b.getFloatAttr(et, 1.0)
                                : (TypedAttr)b.getIntegerAttr(et, 1);
  Value init = emitFilled(b, loc, in, identity);
  SmallVector<AffineMap> maps = {AffineMap::get(rank + 1, 0, inExprs, ctx),
                                 AffineMap::get(rank + 1, 0, outExprs, ctx)};
  auto op = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{n.value(0)}, ValueRange{init}, maps,
      iters, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value i = linalg::IndexOp::create(nb, l, axis);
        Value j = linalg::IndexOp::create(nb, l, rank);
        arith::CmpIPredicate pred =
            reverse ? (exclusive ? arith::CmpIPredicate::ugt
                                 : arith::CmpIPredicate::uge)
                    : (exclusive ? arith::CmpIPredicate::ult
                                 : arith::CmpIPredicate::ule);
        Value take = arith::CmpIOp::create(nb, l, pred, j, i);
        Value acc;
        if (product)
          acc = fl ? (Value)arith::MulFOp::create(nb, l, a[1], a[0])
                   : (Value)arith::MulIOp::create(nb, l, a[1], a[0]);
        else
          acc = fl ? (Value)arith::AddFOp::create(nb, l, a[1], a[0])
                   : (Value)arith::AddIOp::create(nb, l, a[1], a[0]);
        linalg::YieldOp::create(
            nb, l, arith::SelectOp::create(nb, l, take, acc, a[1]).getResult());
      });
  n.setOutput(0, op.getResult(0), dt);
  return success();
}

} // namespace

void registerLinalgLowerings() {
  opLowerings()["ArgMax"] = [](NodeLowering &n) {
    return lowerArgExtreme(n, true);
  };
  opLowerings()["ArgMin"] = [](NodeLowering &n) {
    return lowerArgExtreme(n, false);
  };
  opLowerings()["CumSum"] = [](NodeLowering &n) {
    return lowerCumulative(n, false);
  };
  opLowerings()["CumProd"] = [](NodeLowering &n) {
    return lowerCumulative(n, true);
  };
  auto &t = opLowerings();
  t["MatMul"] = lowerMatMul;
  t["Gemm"] = lowerGemm;
  t["Conv"] = lowerConv;
  t["MaxPool"] = [](NodeLowering &n) { return lowerPool(n, true); };
  t["AveragePool"] = [](NodeLowering &n) { return lowerPool(n, false); };
  t["LpPool"] = [](NodeLowering &n) {
    return lowerPoolGeneric(n, PoolKind::Lp);
  };
  t["GlobalAveragePool"] = [](NodeLowering &n) {
    return lowerGlobalPool(n, false);
  };
  t["GlobalMaxPool"] = [](NodeLowering &n) { return lowerGlobalPool(n, true); };
  t["ReduceSum"] = [](NodeLowering &n) {
    return lowerReduce(n, ReduceKind::Sum);
  };
  t["ReduceMean"] = [](NodeLowering &n) {
    return lowerReduce(n, ReduceKind::Mean);
  };
  t["ReduceMax"] = [](NodeLowering &n) {
    return lowerReduce(n, ReduceKind::Max);
  };
  t["ReduceMin"] = [](NodeLowering &n) {
    return lowerReduce(n, ReduceKind::Min);
  };
  t["ReduceProd"] = [](NodeLowering &n) {
    return lowerReduce(n, ReduceKind::Prod);
  };
  t["ReduceL1"] = [](NodeLowering &n) {
    return lowerReduce(n, ReduceKind::L1);
  };
  t["ReduceL2"] = [](NodeLowering &n) {
    return lowerReduce(n, ReduceKind::L2);
  };
  t["ReduceLogSum"] = [](NodeLowering &n) {
    return lowerReduce(n, ReduceKind::LogSum);
  };
  t["ReduceLogSumExp"] = [](NodeLowering &n) {
    return lowerReduce(n, ReduceKind::LogSumExp);
  };
  t["ReduceSumSquare"] = [](NodeLowering &n) {
    return lowerReduce(n, ReduceKind::SumSquare);
  };
}

} // namespace mcc
