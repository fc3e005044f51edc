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
    return f.add(f.mul(f.mul(f.sub(f.mul(f.c(a + 2), x), f.c(a + 3)), x), x),
                 f.c(1));
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
  std::string mode =
      n.attrString("mode", n.opset() < 20 ? "bilinear" : "linear");
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
  Value init = createEmpty(b, loc, out, et);
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
          Value c =
              align ? f.mul(f.div(f.add(g, f.c(1)), f.c(2)), f.c(len - 1))
                    : f.div(f.sub(f.mul(f.add(g, f.c(1)), f.c(len)), f.c(1)),
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
            p = arith::MinSIOp::create(
                nb, l, arith::MaxSIOp::create(nb, l, p, lo), hi);
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
  SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, {nD, kD, jD}, ctx),
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
    x = tensor::PadOp::create(b, loc, RankedTensorType::get(out, et), x, lo, hi,
                              scalarConstant(b, loc, et, 0.0));
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
  std::vector<int64_t> dil =
                           n.attrInts("dilations", std::vector<int64_t>(r, 1)),
                       pads =
                           n.attrInts("pads", std::vector<int64_t>(2 * r, 0)),
                       strides =
                           n.attrInts("strides", std::vector<int64_t>(r, 1));
  if ((int64_t)dil.size() != r || (int64_t)pads.size() != 2 * r ||
      (int64_t)strides.size() != r)
    return n.fail("dilations/pads/strides do not match the image rank");
  int64_t kernelSize = numElements(block);
  Shape blocks;
  for (int64_t i = 0; i < r; ++i)
    blocks.push_back(
        (image[i] + pads[i] + pads[r + i] - dil[i] * (block[i] - 1) - 1) /
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
  Value window = createEmpty(b, loc, Shape(block), et);
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
          Value nonNeg = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge,
                                               dist, c(0));
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
        Value v =
            tensor::ExtractOp::create(nb, l, x, ValueRange{idx(0), ch, lFlat});
        Value contrib =
            arith::SelectOp::create(nb, l, ok, v, scalarConstant(nb, l, et, 0));
        linalg::YieldOp::create(
            nb, l, arith::AddFOp::create(nb, l, a[1], contrib).getResult());
      });
  n.setOutput(0, op.getResult(0), n.dtype(0));
  return success();
}

/// Bilinear sample of x[n, c] at (h, w) in pixels, 0 outside the input:
/// the four neighbours with their weights, each read only when inside.
Value bilinearZeros(FloatOps &f, Value x, Value n, Value c, Value h, Value w,
                    int64_t height, int64_t width) {
  OpBuilder &b = f.b;
  Location l = f.l;
  Type i64 = b.getI64Type();
  Value h0f = math::FloorOp::create(b, l, h),
        w0f = math::FloorOp::create(b, l, w);
  Value lh = f.sub(h, h0f), lw = f.sub(w, w0f);
  Value h0 = arith::FPToSIOp::create(b, l, i64, h0f);
  Value w0 = arith::FPToSIOp::create(b, l, i64, w0f);
  Value one = arith::ConstantIntOp::create(b, l, i64, 1);
  Value zero = arith::ConstantIntOp::create(b, l, i64, 0);
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  Value sum = f.c(0);
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      Value y = dy ? (Value)arith::AddIOp::create(b, l, h0, one) : h0;
      Value xx = dx ? (Value)arith::AddIOp::create(b, l, w0, one) : w0;
      auto inRange = [&](Value v, int64_t len) -> Value {
        return arith::AndIOp::create(
            b, l,
            arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, v, zero),
            arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::slt, v,
                arith::ConstantIntOp::create(b, l, i64, len)));
      };
      Value ok =
          arith::AndIOp::create(b, l, inRange(y, height), inRange(xx, width));
      auto clampIdx = [&](Value v, int64_t len) -> Value {
        v = arith::MaxSIOp::create(b, l, v, zero);
        v = arith::MinSIOp::create(
            b, l, v, arith::ConstantIntOp::create(b, l, i64, len - 1));
        return arith::IndexCastOp::create(b, l, b.getIndexType(), v);
      };
      Value v = tensor::ExtractOp::create(
          b, l, x, ValueRange{n, c, clampIdx(y, height), clampIdx(xx, width)});
      if (et != f.t)
        v = arith::ExtFOp::create(b, l, f.t, v);
      Value wy = dy ? lh : f.sub(f.c(1), lh), wx = dx ? lw : f.sub(f.c(1), lw);
      sum = f.add(sum, f.sel(ok, f.mul(f.mul(wy, wx), v), f.c(0)));
    }
  return sum;
}

/// DeformConv (2-D): a convolution whose taps sample the input bilinearly
/// at positions moved by `offset` (zero outside) and scaled by `mask`; one
/// generic over (n, oc, oh, ow) reducing over (ic in group, kh, kw).
LogicalResult lowerDeformConv(NodeLowering &n) {
  const Shape &xs = n.shape(0), &ws = n.shape(1), &os = n.shape(2);
  if (xs.size() != 4 || ws.size() != 4 || os.size() != 4)
    return n.fail("only 2-D DeformConv is supported");
  if (!isFloatDType(n.dtype(0)))
    return n.fail("needs a floating-point input");
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], M = ws[0];
  std::vector<int64_t> kernel = n.attrInts("kernel_shape");
  if (kernel.empty())
    kernel = {ws[2], ws[3]};
  std::vector<int64_t> dil = n.attrInts("dilations", {1, 1}),
                       pads = n.attrInts("pads", {0, 0, 0, 0}),
                       strides = n.attrInts("strides", {1, 1});
  int64_t group = n.attrInt("group", 1),
          offGroup = n.attrInt("offset_group", 1);
  int64_t KH = kernel[0], KW = kernel[1];
  if (kernel.size() != 2 || dil.size() != 2 || pads.size() != 4 ||
      strides.size() != 2 || group < 1 || offGroup < 1 || C % group ||
      M % group || ws[1] * group != C || C % offGroup ||
      os[1] != offGroup * KH * KW * 2)
    return n.fail("attributes and shapes do not fit");
  int64_t OH = os[2], OW = os[3];
  int64_t icPerGroup = ws[1], ocPerGroup = M / group, icPerOff = C / offGroup;
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Type et = n.elementType(n.dtype(0));
  Type ct = et.isF64() ? et : b.getF32Type();
  Value x = n.value(0), w = n.value(1), off = n.value(2);
  Value mask = n.hasInput(4) ? n.value(4) : Value();
  Shape out = {N, M, OH, OW};
  Value init;
  if (n.hasInput(3)) {
    init = emitBroadcastTo(b, loc, emitReshape(b, loc, n.value(3), {M, 1, 1}),
                           out);
  } else {
    init = emitFilled(b, loc, out, b.getFloatAttr(et, 0.0));
  }
  // Loops: n, oc, i, j | icg, kh, kw.
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  Value window = createEmpty(b, loc, Shape{icPerGroup, KH, KW}, et);
  SmallVector<AffineMap> maps = {
      AffineMap::get(7, 0, {d(4), d(5), d(6)}, ctx),
      AffineMap::get(7, 0, {d(0), d(1), d(2), d(3)}, ctx)};
  SmallVector<utils::IteratorType> iters(4, utils::IteratorType::parallel);
  iters.append(3, utils::IteratorType::reduction);
  auto op = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{window}, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        FloatOps f{nb, l, ct};
        auto idx = [&](int64_t i) -> Value {
          return linalg::IndexOp::create(nb, l, i);
        };
        auto c = [&](int64_t v) -> Value {
          return arith::ConstantIndexOp::create(nb, l, v);
        };
        auto mul = [&](Value x, Value y) -> Value {
          return arith::MulIOp::create(nb, l, x, y);
        };
        auto add = [&](Value x, Value y) -> Value {
          return arith::AddIOp::create(nb, l, x, y);
        };
        Value bn = idx(0), oc = idx(1), i = idx(2), j = idx(3), icg = idx(4),
              kh = idx(5), kw = idx(6);
        Value ic = add(mul(arith::DivUIOp::create(nb, l, oc, c(ocPerGroup)),
                           c(icPerGroup)),
                       icg);
        Value g = arith::DivUIOp::create(nb, l, ic, c(icPerOff));
        Value k = add(mul(add(mul(g, c(KH)), kh), c(KW)), kw);
        auto read = [&](Value t, Value ch) -> Value {
          Value v =
              tensor::ExtractOp::create(nb, l, t, ValueRange{bn, ch, i, j});
          return et != ct ? (Value)arith::ExtFOp::create(nb, l, ct, v) : v;
        };
        Value offH = read(off, mul(k, c(2)));
        Value offW = read(off, add(mul(k, c(2)), c(1)));
        auto toF = [&](Value v) -> Value {
          return arith::SIToFPOp::create(
              nb, l, ct, arith::IndexCastOp::create(nb, l, nb.getI64Type(), v));
        };
        // Tap position: window start + kernel offset + learned offset.
        Value h = f.add(toF(add(mul(i, c(strides[0])), mul(kh, c(dil[0])))),
                        f.add(f.c(-pads[0]), offH));
        Value wpos = f.add(toF(add(mul(j, c(strides[1])), mul(kw, c(dil[1])))),
                           f.add(f.c(-pads[1]), offW));
        Value v = bilinearZeros(f, x, bn, ic, h, wpos, H, W);
        if (mask)
          v = f.mul(v, read(mask, k));
        Value wv =
            tensor::ExtractOp::create(nb, l, w, ValueRange{oc, icg, kh, kw});
        if (et != ct)
          wv = arith::ExtFOp::create(nb, l, ct, wv);
        Value acc = a[1];
        if (et != ct)
          acc = arith::ExtFOp::create(nb, l, ct, acc);
        Value r = f.add(acc, f.mul(wv, v));
        if (et != ct)
          r = arith::TruncFOp::create(nb, l, et, r);
        linalg::YieldOp::create(nb, l, r);
      });
  n.setOutput(0, op.getResult(0), n.dtype(0));
  return success();
}

/// RoiAlign: each output bin averages (or maxes) a grid of bilinear samples
/// of its roi. The grid is sampling_ratio^2, or ceil(roi size / bins) per
/// roi: then its largest size must be known, so rois must be literal, and
/// the loops run to that size with smaller grids masked.
LogicalResult lowerRoiAlign(NodeLowering &n) {
  const Shape &xs = n.shape(0), &rs = n.shape(1);
  if (xs.size() != 4 || rs.size() != 2 || rs[1] != 4 ||
      n.shape(2) != Shape{rs[0]})
    return n.fail("needs X [N, C, H, W], rois [R, 4], batch_indices [R]");
  if (!isFloatDType(n.dtype(0)) || !isFloatDType(n.dtype(1)))
    return n.fail("needs floating-point X and rois");
  std::string mode = n.attrString("mode", "avg");
  if (mode != "avg" && mode != "max")
    return n.fail("unsupported mode '" + mode + "'");
  bool halfPixel =
      n.opset() >= 16 && n.attrString("coordinate_transformation_mode",
                                      "half_pixel") == "half_pixel";
  int64_t OH = n.attrInt("output_height", 1), OW = n.attrInt("output_width", 1);
  int64_t ratio = n.attrInt("sampling_ratio", 0);
  double scale = n.attrFloat("spatial_scale", 1.0f);
  int64_t R = rs[0], C = xs[1], H = xs[2], W = xs[3];
  double offset = halfPixel ? 0.5 : 0.0;
  // Sample grid extents per bin (static upper bounds).
  int64_t gridH = ratio, gridW = ratio;
  if (ratio <= 0) {
    if (failed(n.requireLiterals(
            {1}, "RoiAlign with sampling_ratio=0 (the sample count depends "
                 "on the rois)")))
      return failure();
    gridH = gridW = 0;
    const Literal &rois = n.literal(1);
    for (int64_t r = 0; r < R; ++r) {
      double h = (rois.getAsDouble(r * 4 + 3) - rois.getAsDouble(r * 4 + 1)) *
                 scale,
             w = (rois.getAsDouble(r * 4 + 2) - rois.getAsDouble(r * 4)) *
                 scale;
      if (!halfPixel)
        h = std::max(h, 1.0), w = std::max(w, 1.0);
      gridH = std::max<int64_t>(gridH, (int64_t)std::ceil(h / OH));
      gridW = std::max<int64_t>(gridW, (int64_t)std::ceil(w / OW));
    }
    gridH = std::max<int64_t>(gridH, 1);
    gridW = std::max<int64_t>(gridW, 1);
  }
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Type et = n.elementType(n.dtype(0));
  Type ct = et.isF64() ? et : b.getF32Type();
  Value x = n.value(0), rois = n.value(1), batch = n.value(2);
  Shape out = {R, C, OH, OW};
  bool isMax = mode == "max";
  Value init =
      emitFilled(b, loc, out, b.getFloatAttr(ct, isMax ? -INFINITY : 0.0));
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  Value window = createEmpty(b, loc, Shape{gridH, gridW}, ct);
  SmallVector<AffineMap> maps = {
      AffineMap::get(6, 0, {d(4), d(5)}, ctx),
      AffineMap::get(6, 0, {d(0), d(1), d(2), d(3)}, ctx)};
  SmallVector<utils::IteratorType> iters(4, utils::IteratorType::parallel);
  iters.append(2, utils::IteratorType::reduction);
  auto op = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{window}, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        FloatOps f{nb, l, ct};
        Type i64 = nb.getI64Type();
        auto idx = [&](int64_t i) -> Value {
          return linalg::IndexOp::create(nb, l, i);
        };
        auto toF = [&](Value v) -> Value {
          return arith::SIToFPOp::create(
              nb, l, ct, arith::IndexCastOp::create(nb, l, i64, v));
        };
        Value r = idx(0), c = idx(1), ph = idx(2), pw = idx(3), iy = idx(4),
              ix = idx(5);
        auto roi = [&](int64_t k) -> Value {
          Value v = tensor::ExtractOp::create(
              nb, l, rois,
              ValueRange{r, arith::ConstantIndexOp::create(nb, l, k)});
          if (v.getType() != ct)
            v = emitScalarCast(nb, l, v, n.dtype(1),
                               ct.isF64() ? kDouble : kFloat, ct);
          return f.sub(f.mul(v, f.c(scale)), f.c(offset));
        };
        Value x0 = roi(0), y0 = roi(1), x1 = roi(2), y1 = roi(3);
        Value rw = f.sub(x1, x0), rh = f.sub(y1, y0);
        if (!halfPixel) {
          rw = arith::MaximumFOp::create(nb, l, rw, f.c(1));
          rh = arith::MaximumFOp::create(nb, l, rh, f.c(1));
        }
        Value binH = f.div(rh, f.c(OH)), binW = f.div(rw, f.c(OW));
        // This roi's grid, and whether (iy, ix) is in it.
        Value gh =
            ratio > 0 ? f.c(ratio) : (Value)math::CeilOp::create(nb, l, binH);
        Value gw =
            ratio > 0 ? f.c(ratio) : (Value)math::CeilOp::create(nb, l, binW);
        Value iyF = toF(iy), ixF = toF(ix);
        Value inGrid =
            arith::AndIOp::create(nb, l, f.lt(iyF, gh), f.lt(ixF, gw));
        Value y = f.add(f.add(y0, f.mul(toF(ph), binH)),
                        f.div(f.mul(f.add(iyF, f.c(0.5)), binH), gh));
        Value xx = f.add(f.add(x0, f.mul(toF(pw), binW)),
                         f.div(f.mul(f.add(ixF, f.c(0.5)), binW), gw));
        // Outside [-1, size] a sample is 0; inside, clamped to the edges.
        Value outside = arith::OrIOp::create(
            nb, l,
            arith::OrIOp::create(nb, l, f.lt(y, f.c(-1)), f.gt(y, f.c(H))),
            arith::OrIOp::create(nb, l, f.lt(xx, f.c(-1)), f.gt(xx, f.c(W))));
        y = f.clamp(y, 0, H - 1);
        xx = f.clamp(xx, 0, W - 1);
        Value yl = math::FloorOp::create(nb, l, y),
              xl = math::FloorOp::create(nb, l, xx);
        Value ly = f.sub(y, yl), lx = f.sub(xx, xl);
        Value yh = f.clamp(f.add(yl, f.c(1)), 0, H - 1),
              xh = f.clamp(f.add(xl, f.c(1)), 0, W - 1);
        Value bi = tensor::ExtractOp::create(nb, l, batch, ValueRange{r});
        bi = arith::IndexCastOp::create(
            nb, l, nb.getIndexType(),
            arith::MinSIOp::create(
                nb, l,
                arith::MaxSIOp::create(
                    nb, l, bi,
                    arith::ConstantIntOp::create(nb, l, bi.getType(), 0)),
                arith::ConstantIntOp::create(nb, l, bi.getType(), xs[0] - 1)));
        auto at = [&](Value yy, Value xv) -> Value {
          auto ix = [&](Value v) -> Value {
            return arith::IndexCastOp::create(
                nb, l, nb.getIndexType(),
                arith::FPToSIOp::create(nb, l, i64, v));
          };
          Value v = tensor::ExtractOp::create(
              nb, l, x, ValueRange{bi, c, ix(yy), ix(xv)});
          return et != ct ? (Value)arith::ExtFOp::create(nb, l, ct, v) : v;
        };
        Value hy = f.sub(f.c(1), ly), hx = f.sub(f.c(1), lx);
        Value t1 = f.mul(f.mul(hy, hx), at(yl, xl));
        Value t2 = f.mul(f.mul(hy, lx), at(yl, xh));
        Value t3 = f.mul(f.mul(ly, hx), at(yh, xl));
        Value t4 = f.mul(f.mul(ly, lx), at(yh, xh));
        Value acc = a[1], res;
        if (isMax) {
          Value m = arith::MaximumFOp::create(
              nb, l, arith::MaximumFOp::create(nb, l, t1, t2),
              arith::MaximumFOp::create(nb, l, t3, t4));
          m = f.sel(outside, f.c(0), m);
          res = f.sel(inGrid, arith::MaximumFOp::create(nb, l, acc, m), acc);
        } else {
          Value count = arith::MaximumFOp::create(nb, l, f.mul(gh, gw), f.c(1));
          Value sum = f.add(f.add(t1, t2), f.add(t3, t4));
          sum = f.sel(outside, f.c(0), sum);
          res = f.sel(inGrid, f.add(acc, f.div(sum, count)), acc);
        }
        linalg::YieldOp::create(nb, l, res);
      });
  Value y = op.getResult(0);
  // Empty grids leave max at -inf where the reference gives 0; f32 back to
  // the input type.
  y = emitElementwise(
      b, loc, y, et, out,
      [&](OpBuilder &nb, Location l, ValueRange v) -> Value {
        Value r = v[0];
        if (isMax) {
          Value none =
              arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, r,
                                    scalarConstant(nb, l, ct, -INFINITY));
          r = arith::SelectOp::create(nb, l, none, scalarConstant(nb, l, ct, 0),
                                      r);
        }
        return et != ct ? (Value)arith::TruncFOp::create(nb, l, et, r) : r;
      });
  n.setOutput(0, y, n.dtype(0));
  return success();
}

} // namespace

void registerImageLowerings() {
  opLowerings()["RoiAlign"] = lowerRoiAlign;
  opLowerings()["DeformConv"] = lowerDeformConv;
  opLowerings()["Col2Im"] = lowerCol2Im;
  opLowerings()["CenterCropPad"] = lowerCenterCropPad;
  opLowerings()["GridSample"] = lowerGridSample;
  opLowerings()["AffineGrid"] = lowerAffineGrid;
}

} // namespace mcc
