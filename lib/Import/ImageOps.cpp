//===- ImageOps.cpp - GridSample, AffineGrid, CenterCropPad ---------------===//
//
// GridSample reads its input at coordinates that are data (the grid), so each
// output element computes its taps and gathers them with tensor.extract
// inside one linalg.generic; the taps of N-d linear and cubic interpolation
// are the tensor product of the 1-D ones. AffineGrid's base grid is static,
// so it is a constant contracted with theta.
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cstring>

using namespace mlir;

namespace mcc {
namespace {

/// Scalar float helpers for the GridSample body.
struct FloatOps {
  OpBuilder &b;
  Location l;
  Type t;
  Value c(double v) { return scalarConstant(b, l, t, v); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, l, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, l, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, l, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, l, x, y); }
  Value lt(Value x, Value y) {
    return arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, x, y);
  }
  Value gt(Value x, Value y) {
    return arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, x, y);
  }
  Value sel(Value p, Value x, Value y) {
    return arith::SelectOp::create(b, l, p, x, y);
  }
  Value clamp(Value x, double lo, double hi) {
    return arith::MinimumFOp::create(
        b, l, arith::MaximumFOp::create(b, l, x, c(lo)), c(hi));
  }
  /// Reflects x into [lo, hi] by the nearer border until it is inside (the
  /// ONNX reference's _gs_reflect).
  Value reflect(Value x, double lo, double hi) {
    double range = hi - lo;
    if (range <= 0)
      return c(lo);
    Value below = lt(x, c(lo)), above = gt(x, c(hi));
    Value dx = sel(below, sub(c(lo), x), sub(x, c(hi)));
    Value folds = math::FloorOp::create(b, l, div(dx, c(range)));
    Value r = sub(dx, mul(folds, c(range)));
    Value foldsI = arith::FPToSIOp::create(b, l, b.getI64Type(), folds);
    Value odd = arith::TruncIOp::create(b, l, b.getI1Type(), foldsI);
    Value fromLo = add(c(lo), r), fromHi = sub(c(hi), r);
    Value belowV = sel(odd, fromHi, fromLo), aboveV = sel(odd, fromLo, fromHi);
    return sel(below, belowV, sel(above, aboveV, x));
  }
};

/// Keys' cubic convolution weights (a = -0.75) of the four taps at
/// floor(x) - 1 .. floor(x) + 2 for the fraction t = x - floor(x).
std::array<Value, 4> cubicCoeffs(FloatOps &f, Value t) {
  const double a = -0.75;
  auto far = [&](Value x) { // 1 < x < 2
    return f.sub(
        f.mul(f.add(f.mul(f.sub(f.mul(f.c(a), x), f.c(5 * a)), x), f.c(8 * a)),
              x),
        f.c(4 * a));
  };
  auto near = [&](Value x) { // x <= 1
    return f.add(
        f.mul(f.mul(f.sub(f.mul(f.c(a + 2), x), f.c(a + 3)), x), x), f.c(1));
  };
  Value oneMinus = f.sub(f.c(1), t);
  return {far(f.add(t, f.c(1))), near(t), near(oneMinus),
          far(f.sub(f.c(2), t))};
}

LogicalResult lowerGridSample(NodeLowering &n) {
  const Shape &xs = n.shape(0), &gs = n.shape(1);
  int64_t r = (int64_t)xs.size() - 2;
  if (r < 1 || (int64_t)gs.size() != r + 2 || gs[0] != xs[0] || gs[r + 1] != r)
    return n.fail("input " + formatShape(xs) + " and grid " + formatShape(gs) +
                  " do not fit");
  if (!isFloatDType(n.dtype(0)) || !isFloatDType(n.dtype(1)))
    return n.fail("needs floating-point input and grid");
  std::string mode = n.attrString("mode", n.opset() < 20 ? "bilinear" : "linear");
  if (mode == "bilinear")
    mode = "linear";
  if (mode == "bicubic")
    mode = "cubic";
  if (mode != "linear" && mode != "nearest" && mode != "cubic")
    return n.fail("unsupported mode '" + mode + "'");
  std::string padding = n.attrString("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return n.fail("unsupported padding_mode '" + padding + "'");
  bool align = n.attrInt("align_corners", 0) != 0;
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Type et = n.elementType(n.dtype(0)), gt = n.elementType(n.dtype(1));
  Type ct = n.dtype(0) == kDouble ? b.getF64Type() : b.getF32Type();
  Value x = n.value(0), grid = n.value(1);
  Shape out = {xs[0], xs[1]};
  out.insert(out.end(), gs.begin() + 1, gs.begin() + 1 + r);
  int64_t rank = out.size();
  Value init = tensor::EmptyOp::create(b, loc, out, et);
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{}, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange) {
        FloatOps f{nb, l, ct};
        SmallVector<Value> idx;
        for (int64_t d = 0; d < rank; ++d)
          idx.push_back(linalg::IndexOp::create(nb, l, d));
        // Coordinates along spatial dim i (the grid lists them last dim
        // first), in input pixels, with border/reflection applied.
        SmallVector<Value> coord;
        for (int64_t i = 0; i < r; ++i) {
          SmallVector<Value> at = {idx[0]};
          at.append(idx.begin() + 2, idx.end());
          at.push_back(arith::ConstantIndexOp::create(nb, l, r - 1 - i));
          Value g = tensor::ExtractOp::create(nb, l, grid, at);
          if (gt != ct)
            g = emitScalarCast(nb, l, g, n.dtype(1),
                               ct.isF64() ? kDouble : kFloat, ct);
          double len = xs[2 + i];
          Value c = align ? f.mul(f.div(f.add(g, f.c(1)), f.c(2)), f.c(len - 1))
                          : f.div(f.sub(f.mul(f.add(g, f.c(1)), f.c(len)),
                                        f.c(1)),
                                  f.c(2));
          if (mode == "nearest")
            c = math::RoundEvenOp::create(nb, l, c);
          double lo = align ? 0 : -0.5, hi = align ? len - 1 : len - 0.5;
          if (padding == "border")
            c = f.sel(f.lt(c, f.c(lo)), f.clamp(c, 0, len - 1),
                      f.sel(f.gt(c, f.c(hi)), f.clamp(c, 0, len - 1), c));
          else if (padding == "reflection")
            c = f.reflect(c, lo, hi);
          coord.push_back(c);
        }
        // Per dim: the integer tap positions and their weights.
        SmallVector<SmallVector<Value>> tapPos(r), tapW(r);
        Type i64 = nb.getI64Type();
        for (int64_t i = 0; i < r; ++i) {
          if (mode == "nearest") {
            tapPos[i].push_back(arith::FPToSIOp::create(nb, l, i64, coord[i]));
            tapW[i].push_back(f.c(1));
            continue;
          }
          Value fl = math::FloorOp::create(nb, l, coord[i]);
          Value t = f.sub(coord[i], fl);
          Value base = arith::FPToSIOp::create(nb, l, i64, fl);
          auto at = [&](int64_t k) -> Value {
            return arith::AddIOp::create(
                nb, l, base, arith::ConstantIntOp::create(nb, l, i64, k));
          };
          if (mode == "linear") {
            tapPos[i] = {base, at(1)};
            tapW[i] = {f.sub(f.c(1), t), t};
          } else {
            tapPos[i] = {at(-1), base, at(1), at(2)};
            auto w = cubicCoeffs(f, t);
            tapW[i].assign(w.begin(), w.end());
          }
        }
        // A tap's value: zero outside the input ("zeros"), else the pixel
        // at the clamped or reflected position.
        auto pixel = [&](ArrayRef<Value> pos) -> Value {
          SmallVector<Value> at = {idx[0], idx[1]};
          Value inside;
          for (int64_t i = 0; i < r; ++i) {
            int64_t len = xs[2 + i];
            Value p = pos[i];
            Value lo = arith::ConstantIntOp::create(nb, l, i64, 0);
            Value hi = arith::ConstantIntOp::create(nb, l, i64, len - 1);
            if (padding == "zeros") {
              Value ok = arith::AndIOp::create(
                  nb, l,
                  arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, p,
                                        lo),
                  arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sle, p,
                                        hi));
              inside = inside ? arith::AndIOp::create(nb, l, inside, ok) : ok;
            } else if (padding == "reflection") {
              double rlo = align ? 0 : -0.5, rhi = align ? len - 1 : len - 0.5;
              Value pf = arith::SIToFPOp::create(nb, l, ct, p);
              p = arith::FPToSIOp::create(nb, l, i64, f.reflect(pf, rlo, rhi));
            }
            p = arith::MinSIOp::create(nb, l, arith::MaxSIOp::create(nb, l, p, lo),
                                       hi);
            at.push_back(
                arith::IndexCastOp::create(nb, l, nb.getIndexType(), p));
          }
          Value v = tensor::ExtractOp::create(nb, l, x, at);
          if (et != ct)
            v = emitScalarCast(nb, l, v, n.dtype(0),
                               ct.isF64() ? kDouble : kFloat, ct);
          return inside ? f.sel(inside, v, f.c(0)) : v;
        };
        // Sum over the tensor product of the per-dim taps.
        Value sum = f.c(0);
        SmallVector<size_t> k(r, 0);
        while (true) {
          SmallVector<Value> pos;
          Value w;
          for (int64_t i = 0; i < r; ++i) {
            pos.push_back(tapPos[i][k[i]]);
            w = w ? f.mul(w, tapW[i][k[i]]) : tapW[i][k[i]];
          }
          sum = f.add(sum, f.mul(w, pixel(pos)));
          int64_t d = r - 1;
          for (; d >= 0; --d) {
            if (++k[d] < tapPos[d].size())
              break;
            k[d] = 0;
          }
          if (d < 0)
            break;
        }
        if (et != ct)
          sum = emitScalarCast(nb, l, sum, ct.isF64() ? kDouble : kFloat,
                               n.dtype(0), et);
        linalg::YieldOp::create(nb, l, sum);
      });
  n.setOutput(0, op.getResult(0), n.dtype(0));
  return success();
}

/// grid[n, s..., k] = sum_j theta[n, k, j] * base[s..., j], with base the
/// normalized coordinates (x, y[, z], 1) of every output position.
LogicalResult lowerAffineGrid(NodeLowering &n) {
  if (failed(n.requireLiterals({1}, "size")))
    return failure();
  std::vector<int64_t> size = n.literal(1).toInts();
  const Shape &ts = n.shape(0);
  int64_t r = (int64_t)size.size() - 2;
  if ((r != 2 && r != 3) || ts.size() != 3 || ts[1] != r || ts[2] != r + 1 ||
      ts[0] != size[0])
    return n.fail("theta " + formatShape(ts) + " does not fit size");
  if (!isFloatDType(n.dtype(0)))
    return n.fail("needs a floating-point theta");
  bool align = n.attrInt("align_corners", 0) != 0;
  Shape spatial(size.begin() + 2, size.end());
  Shape baseShape = spatial;
  baseShape.push_back(r + 1);
  std::vector<double> base;
  int64_t count = numElements(spatial);
  for (int64_t e = 0; e < count; ++e) {
    std::vector<int64_t> pos(r);
    for (int64_t d = r - 1, rest = e; d >= 0; --d) {
      pos[d] = rest % spatial[d];
      rest /= spatial[d];
    }
    for (int64_t j = 0; j < r; ++j) { // x first: the last spatial dim
      int64_t d = r - 1 - j, len = spatial[d];
      double step = align ? 2.0 / (len - 1) : 2.0 / len;
      base.push_back(align ? (len == 1 ? -1.0 : -1 + pos[d] * step)
                           : -1 + step / 2 + pos[d] * step);
    }
    base.push_back(1.0);
  }
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Type et = n.elementType(n.dtype(0));
  Value baseT = floatConstantTensor(b, loc, baseShape, et, base);
  Shape out = {size[0]};
  out.insert(out.end(), spatial.begin(), spatial.end());
  out.push_back(r);
  // Loops: n, s..., k, then j (reduction).
  int64_t loops = r + 3;
  auto dim = [&](int64_t d) { return getAffineDimExpr(d, ctx); };
  AffineExpr nD = dim(0), kD = dim(r + 1), jD = dim(r + 2);
  SmallVector<AffineExpr> baseExprs, outExprs = {nD};
  for (int64_t d = 0; d < r; ++d) {
    baseExprs.push_back(dim(1 + d));
    outExprs.push_back(dim(1 + d));
  }
  baseExprs.push_back(jD);
  outExprs.push_back(kD);
  SmallVector<AffineMap> maps = {
      AffineMap::get(loops, 0, {nD, kD, jD}, ctx),
      AffineMap::get(loops, 0, baseExprs, ctx),
      AffineMap::get(loops, 0, outExprs, ctx)};
  SmallVector<utils::IteratorType> iters(loops - 1,
                                         utils::IteratorType::parallel);
  iters.push_back(utils::IteratorType::reduction);
  Value init = emitFilled(b, loc, out, b.getFloatAttr(et, 0.0));
  auto op = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{n.value(0), baseT}, ValueRange{init},
      maps, iters, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value p = arith::MulFOp::create(nb, l, a[0], a[1]);
        linalg::YieldOp::create(
            nb, l, arith::AddFOp::create(nb, l, a[2], p).getResult());
      });
  n.setOutput(0, op.getResult(0), n.dtype(0));
  return success();
}

/// Crops or zero-pads each listed axis to its target length, centered (an
/// odd difference leaves the extra element at the end).
LogicalResult lowerCenterCropPad(NodeLowering &n) {
  if (failed(n.requireLiterals({1}, "shape")))
    return failure();
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  std::vector<int64_t> target = n.literal(1).toInts();
  std::vector<int64_t> axes = n.attrInts("axes");
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  if (axes.size() != target.size())
    return n.fail("shape and axes differ in length");
  Shape cropOff(rank, 0), cropLen = in, padLo(rank, 0), padHi(rank, 0);
  Shape out = in;
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t a = normalizeAxis(axes[k], rank);
    if (a < 0 || a >= rank || target[k] < 0)
      return n.fail("axis or length out of range");
    out[a] = target[k];
    if (target[k] < in[a]) {
      cropOff[a] = (in[a] - target[k]) / 2;
      cropLen[a] = target[k];
    } else {
      padLo[a] = (target[k] - in[a]) / 2;
      padHi[a] = target[k] - in[a] - padLo[a];
    }
  }
  if (n.isLiteral(0)) {
    Literal r(n.dtype(0), out);
    const Literal &x = n.literal(0);
    std::vector<int64_t> strides = stridesOf(in);
    int64_t total = numElements(out);
    std::vector<int64_t> idx(rank, 0);
    int64_t size = dtypeSize(n.dtype(0));
    for (int64_t e = 0; e < total; ++e) {
      int64_t src = 0;
      bool inside = true;
      for (int64_t d = 0; d < rank; ++d) {
        int64_t i = idx[d] - padLo[d] + cropOff[d];
        inside &= i >= 0 && i < in[d];
        src += i * strides[d];
      }
      if (inside)
        std::memcpy(r.mutableData() + e * size, x.data() + src * size, size);
      else
        std::memset(r.mutableData() + e * size, 0, size);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++idx[d] < out[d])
          break;
        idx[d] = 0;
      }
    }
    n.setOutput(0, std::move(r));
    return success();
  }
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Value x = n.value(0);
  if (cropLen != in) {
    SmallVector<OpFoldResult> offs, sizes, ones;
    for (int64_t d = 0; d < rank; ++d) {
      offs.push_back(b.getIndexAttr(cropOff[d]));
      sizes.push_back(b.getIndexAttr(cropLen[d]));
      ones.push_back(b.getIndexAttr(1));
    }
    x = tensor::ExtractSliceOp::create(b, loc, x, offs, sizes, ones);
  }
  if (out != cropLen) {
    SmallVector<OpFoldResult> lo, hi;
    for (int64_t d = 0; d < rank; ++d) {
      lo.push_back(b.getIndexAttr(padLo[d]));
      hi.push_back(b.getIndexAttr(padHi[d]));
    }
    Type et = n.elementType(n.dtype(0));
    x = tensor::PadOp::create(b, loc, RankedTensorType::get(out, et), x, lo,
                              hi, scalarConstant(b, loc, et, 0.0));
  }
  n.setOutput(0, x, n.dtype(0));
  return success();
}

/// Col2Im in gather form: each image element sums, over the kernel offsets
/// (reduction loops), the column entry of the block that covers it with
/// that offset, if the block exists (stride divides the distance).
LogicalResult lowerCol2Im(NodeLowering &n) {
  if (failed(n.requireLiterals({1, 2}, "image_shape/block_shape")))
    return failure();
  std::vector<int64_t> image = n.literal(1).toInts(),
                       block = n.literal(2).toInts();
  int64_t r = image.size();
  const Shape &xs = n.shape(0);
  if (r < 1 || (int64_t)block.size() != r || xs.size() != 3)
    return n.fail("needs a [N, C*prod(block), L] input and " + Twine(r) +
                  "-d shapes");
  if (!isFloatDType(n.dtype(0)))
    return n.fail("needs a floating-point input");
  std::vector<int64_t> dil = n.attrInts("dilations",
                                        std::vector<int64_t>(r, 1)),
                       pads = n.attrInts("pads",
                                         std::vector<int64_t>(2 * r, 0)),
                       strides = n.attrInts("strides",
                                            std::vector<int64_t>(r, 1));
  if ((int64_t)dil.size() != r || (int64_t)pads.size() != 2 * r ||
      (int64_t)strides.size() != r)
    return n.fail("dilations/pads/strides do not match the image rank");
  int64_t kernelSize = numElements(block);
  Shape blocks;
  for (int64_t i = 0; i < r; ++i)
    blocks.push_back((image[i] + pads[i] + pads[r + i] -
                      dil[i] * (block[i] - 1) - 1) /
                         strides[i] +
                     1);
  if (xs[1] % kernelSize || numElements(blocks) != xs[2])
    return n.fail("input " + formatShape(xs) + " does not match the blocks");
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Type et = n.elementType(n.dtype(0));
  Value x = n.value(0);
  Shape out = {xs[0], xs[1] / kernelSize};
  out.insert(out.end(), image.begin(), image.end());
  int64_t loops = 2 + 2 * r;
  SmallVector<AffineExpr> winExprs, outExprs;
  for (int64_t d = 0; d < 2 + r; ++d)
    outExprs.push_back(getAffineDimExpr(d, ctx));
  for (int64_t i = 0; i < r; ++i)
    winExprs.push_back(getAffineDimExpr(2 + r + i, ctx));
  Value window = tensor::EmptyOp::create(b, loc, Shape(block), et);
  Value init = emitFilled(b, loc, out, b.getFloatAttr(et, 0.0));
  SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, winExprs, ctx),
                                 AffineMap::get(loops, 0, outExprs, ctx)};
  SmallVector<utils::IteratorType> iters(2 + r, utils::IteratorType::parallel);
  iters.append(r, utils::IteratorType::reduction);
  auto op = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{window}, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        auto c = [&](int64_t v) -> Value {
          return arith::ConstantIndexOp::create(nb, l, v);
        };
        auto idx = [&](int64_t d) -> Value {
          return linalg::IndexOp::create(nb, l, d);
        };
        Value ok, kFlat = c(0), lFlat = c(0);
        for (int64_t i = 0; i < r; ++i) {
          // distance = p + pad - k * dilation = block index * stride.
          Value dist = arith::SubIOp::create(
              nb, l, arith::AddIOp::create(nb, l, idx(2 + i), c(pads[i])),
              arith::MulIOp::create(nb, l, idx(2 + r + i), c(dil[i])));
          Value nonNeg = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::sge, dist, c(0));
          Value safe = arith::MaxSIOp::create(nb, l, dist, c(0));
          Value q = arith::DivUIOp::create(nb, l, safe, c(strides[i]));
          Value exact = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::eq,
              arith::RemUIOp::create(nb, l, safe, c(strides[i])), c(0));
          Value inRange = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::ult, q, c(blocks[i]));
          Value okI = arith::AndIOp::create(
              nb, l, nonNeg, arith::AndIOp::create(nb, l, exact, inRange));
          ok = ok ? arith::AndIOp::create(nb, l, ok, okI) : okI;
          q = arith::MinUIOp::create(nb, l, q, c(blocks[i] - 1));
          kFlat = arith::AddIOp::create(
              nb, l, arith::MulIOp::create(nb, l, kFlat, c(block[i])),
              idx(2 + r + i));
          lFlat = arith::AddIOp::create(
              nb, l, arith::MulIOp::create(nb, l, lFlat, c(blocks[i])), q);
        }
        Value ch = arith::AddIOp::create(
            nb, l, arith::MulIOp::create(nb, l, idx(1), c(kernelSize)), kFlat);
        Value v = tensor::ExtractOp::create(nb, l, x,
                                            ValueRange{idx(0), ch, lFlat});
        Value contrib =
            arith::SelectOp::create(nb, l, ok, v, scalarConstant(nb, l, et, 0));
        linalg::YieldOp::create(
            nb, l, arith::AddFOp::create(nb, l, a[1], contrib).getResult());
      });
  n.setOutput(0, op.getResult(0), n.dtype(0));
  return success();
}

} // namespace

void registerImageLowerings() {
  opLowerings()["Col2Im"] = lowerCol2Im;
  opLowerings()["CenterCropPad"] = lowerCenterCropPad;
  opLowerings()["GridSample"] = lowerGridSample;
  opLowerings()["AffineGrid"] = lowerAffineGrid;
}

} // namespace mcc
