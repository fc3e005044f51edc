//===- ResizeOps.cpp - ONNX Resize as separable 1-D interpolations --------===//
//
// With static shapes, every Resize coordinate is known while compiling. Each
// resized axis becomes a table of (input index, weight) taps per output
// index, applied as one linalg.generic that sums its taps; axes are applied
// one after another, which is how ONNX defines N-d linear and cubic
// interpolation.
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

struct Taps {
  int64_t count = 1;
  std::vector<int64_t> index; // [out * count + t]
  std::vector<double> weight;
  std::vector<bool> outside; // per output: use extrapolation_value
};

double cubicWeight(double x, double a) {
  x = std::fabs(x);
  if (x <= 1)
    return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2)
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

FailureOr<Taps> axisTaps(NodeLowering &n, int64_t in, int64_t out, double scale,
                         double roiStart, double roiEnd) {
  std::string coord =
      n.attrString("coordinate_transformation_mode", "half_pixel");
  std::string mode = n.attrString("mode", "nearest");
  std::string nearest = n.attrString("nearest_mode", "round_prefer_floor");
  double a = n.attrFloat("cubic_coeff_a", -0.75f);
  bool excludeOutside = n.attrInt("exclude_outside", 0) != 0;
  Taps taps;
  taps.count = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  if (mode != "nearest" && mode != "linear" && mode != "cubic") {
    (void)n.fail("unsupported mode '" + mode + "'");
    return failure();
  }
  // Antialiased downsampling stretches the filter by 1/scale: more taps,
  // positions floor-ish(x) + k for k in [start, start + count).
  bool antialias =
      n.attrInt("antialias", 0) != 0 && mode != "nearest" && scale < 1;
  int64_t aaStart = 0;
  if (antialias) {
    aaStart = (int64_t)std::floor((mode == "linear" ? -1 : -2) / scale) + 1;
    taps.count = 2 - 2 * aaStart;
  }
  for (int64_t o = 0; o < out; ++o) {
    double x;
    if (coord == "half_pixel")
      x = (o + 0.5) / scale - 0.5;
    else if (coord == "half_pixel_symmetric") {
      double adj = out / (scale * in);
      double center = in / 2.0;
      double offset = center * (1 - adj);
      x = offset + (o + 0.5) / scale - 0.5;
    } else if (coord == "pytorch_half_pixel")
      x = out > 1 ? (o + 0.5) / scale - 0.5 : 0;
    else if (coord == "align_corners") {
      // The resized length is in * scale unrounded, as in the ONNX reference
      // (it differs from `out` when scales, not sizes, were given).
      double length = in * scale;
      x = length == 1 ? 0 : o * (in - 1) / (length - 1);
    } else if (coord == "tf_half_pixel_for_nn")
      x = (o + 0.5) / scale;
    else if (coord == "asymmetric")
      x = o / scale;
    else if (coord == "tf_crop_and_resize")
      x = out > 1 ? roiStart * (in - 1) +
                        o * (roiEnd - roiStart) * (in - 1) / (out - 1)
                  : 0.5 * (roiStart + roiEnd) * (in - 1);
    else {
      (void)n.fail("unsupported coordinate_transformation_mode '" + coord +
                   "'");
      return failure();
    }
    bool outside = coord == "tf_crop_and_resize" && (x < 0 || x > in - 1);
    taps.outside.push_back(outside);
    if (mode == "nearest") {
      int64_t i;
      if (nearest == "round_prefer_floor")
        i = (x - std::floor(x) == 0.5) ? (int64_t)std::floor(x)
                                       : (int64_t)std::round(x);
      else if (nearest == "round_prefer_ceil")
        i = (int64_t)std::round(x);
      else if (nearest == "floor")
        i = (int64_t)std::floor(x);
      else if (nearest == "ceil")
        i = (int64_t)std::ceil(x);
      else {
        (void)n.fail("unsupported nearest_mode '" + nearest + "'");
        return failure();
      }
      taps.index.push_back(std::clamp<int64_t>(i, 0, in - 1));
      taps.weight.push_back(1.0);
      continue;
    }
    if (antialias) {
      // As the ONNX reference: the fraction is in (0, 1] (an integer x
      // counts from the sample to its left), samples past the edges repeat
      // the edge, weights are normalized.
      int64_t base = (int64_t)std::floor(x);
      double ratio = x - base;
      if (ratio == 0) {
        ratio = 1;
        base -= 1;
      }
      std::vector<double> ws;
      double total = 0;
      for (int64_t k = aaStart; k < aaStart + taps.count; ++k) {
        double t = std::fabs(scale * (k - ratio));
        double w =
            mode == "linear" ? std::clamp(1 - t, 0.0, 1.0) : cubicWeight(t, a);
        ws.push_back(w);
        total += w;
      }
      double kept = 0;
      for (int64_t k = 0; k < taps.count; ++k) {
        ws[k] /= total;
        int64_t i = base + aaStart + k;
        if (excludeOutside && (i < 0 || i >= in))
          ws[k] = 0;
        kept += ws[k];
      }
      for (int64_t k = 0; k < taps.count; ++k) {
        taps.index.push_back(
            std::clamp<int64_t>(base + aaStart + k, 0, in - 1));
        taps.weight.push_back(excludeOutside && kept != 0 ? ws[k] / kept
                                                          : ws[k]);
      }
      continue;
    }
    if (mode == "linear") {
      double xc = std::clamp(x, 0.0, double(in - 1));
      int64_t i0 = (int64_t)std::floor(xc);
      int64_t i1 = std::min<int64_t>(i0 + 1, in - 1);
      double f = xc - i0;
      taps.index.insert(taps.index.end(), {i0, i1});
      taps.weight.insert(taps.weight.end(), {1 - f, f});
      continue;
    }
    int64_t base = (int64_t)std::floor(x);
    double f = x - base;
    double ws[4] = {cubicWeight(1 + f, a), cubicWeight(f, a),
                    cubicWeight(1 - f, a), cubicWeight(2 - f, a)};
    double total = 0;
    for (int t = 0; t < 4; ++t) {
      int64_t i = base - 1 + t;
      if (excludeOutside && (i < 0 || i >= in))
        ws[t] = 0;
      total += ws[t];
    }
    for (int t = 0; t < 4; ++t) {
      taps.index.push_back(std::clamp<int64_t>(base - 1 + t, 0, in - 1));
      taps.weight.push_back(excludeOutside && total != 0 ? ws[t] / total
                                                         : ws[t]);
    }
  }
  return taps;
}

Value resizeAxis(NodeLowering &n, Value x, int64_t axis, int64_t out,
                 const Taps &taps, double extrapolation) {
  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Shape in = shapeOf(x);
  int64_t rank = in.size();
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  Shape outShape = in;
  outShape[axis] = out;
  auto idxType = RankedTensorType::get({out, taps.count}, b.getIndexType());
  Value idx = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(idxType, ArrayRef<int64_t>(taps.index)));
  bool isFloat = isa<FloatType>(et);
  bool uns = isUnsignedDType(n.dtype(0));
  Type wt = isFloat ? et : b.getF64Type();
  Value w = floatConstantTensor(b, loc, {out, taps.count}, wt, taps.weight);
  SmallVector<bool> outsideV(taps.outside.begin(), taps.outside.end());
  Value outside = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(RankedTensorType::get({out}, b.getI1Type()),
                             ArrayRef<bool>(outsideV)));
  // Loops: the output dims, then the tap (a reduction).
  SmallVector<AffineExpr> outExprs;
  for (int64_t d = 0; d < rank; ++d)
    outExprs.push_back(getAffineDimExpr(d, ctx));
  AffineExpr o = getAffineDimExpr(axis, ctx), t = getAffineDimExpr(rank, ctx);
  SmallVector<AffineMap> maps = {AffineMap::get(rank + 1, 0, {o, t}, ctx),
                                 AffineMap::get(rank + 1, 0, {o, t}, ctx),
                                 AffineMap::get(rank + 1, 0, {o}, ctx),
                                 AffineMap::get(rank + 1, 0, outExprs, ctx)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters.push_back(utils::IteratorType::reduction);
  Value init = emitFilled(b, loc, outShape, b.getZeroAttr(wt));
  auto op = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{idx, w, outside}, ValueRange{init},
      maps, iters, [&](OpBuilder &nb, Location l, ValueRange a) {
        SmallVector<Value> at;
        for (int64_t d = 0; d < rank; ++d)
          at.push_back(d == axis ? a[0]
                                 : (Value)linalg::IndexOp::create(nb, l, d));
        Value v = tensor::ExtractOp::create(nb, l, x, at);
        if (!isFloat)
          v = uns ? (Value)arith::UIToFPOp::create(nb, l, wt, v)
                  : (Value)arith::SIToFPOp::create(nb, l, wt, v);
        Value contrib = arith::MulFOp::create(nb, l, v, a[1]);
        Value sum = arith::AddFOp::create(nb, l, a[3], contrib);
        // Outside the crop box the output is extrapolation_value, written
        // by the first tap alone.
        Value t0 =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                  linalg::IndexOp::create(nb, l, rank),
                                  arith::ConstantIndexOp::create(nb, l, 0));
        Value ext = scalarConstant(nb, l, wt, extrapolation);
        Value outVal = arith::SelectOp::create(nb, l, t0, ext, a[3]);
        linalg::YieldOp::create(
            nb, l,
            arith::SelectOp::create(nb, l, a[2], outVal, sum).getResult());
      });
  Value r = op.getResult(0);
  if (!isFloat)
    r = emitElementwise(b, loc, r, et, outShape,
                        [&](OpBuilder &nb, Location l, ValueRange v) -> Value {
                          Value rounded =
                              math::RoundEvenOp::create(nb, l, v[0]);
                          if (uns)
                            return arith::FPToUIOp::create(nb, l, et, rounded);
                          return arith::FPToSIOp::create(nb, l, et, rounded);
                        });
  return r;
}

LogicalResult lowerResize(NodeLowering &n) {
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  std::string policy = n.attrString("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    return n.fail("unsupported keep_aspect_ratio_policy '" + policy + "'");
  // Opset 10 Resize / Upsample: scales is input 1; later: roi, scales, sizes.
  size_t scalesIdx = n.opset() < 11 ? 1 : 2, sizesIdx = 3, roiIdx = 1;
  std::vector<int64_t> axes = n.attrInts("axes");
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  for (int64_t &a : axes)
    a = normalizeAxis(a, rank);
  std::vector<double> scales(rank, 1.0), roiS(rank, 0.0), roiE(rank, 1.0);
  Shape out = in;
  if (failed(n.opset() < 11
                 ? n.requireLiterals({scalesIdx}, "scales")
                 : n.requireLiterals({roiIdx, scalesIdx, sizesIdx},
                                     "roi/scales/sizes")))
    return failure();
  bool haveSizes =
      n.opset() >= 11 && n.hasInput(sizesIdx) && n.literal(sizesIdx).size() > 0;
  if (haveSizes) {
    std::vector<int64_t> sizes = n.literal(sizesIdx).toInts();
    if (sizes.size() != axes.size())
      return n.fail("sizes has the wrong length");
    for (size_t k = 0; k < axes.size(); ++k) {
      out[axes[k]] = sizes[k];
      scales[axes[k]] = double(sizes[k]) / in[axes[k]];
    }
    // One scale for all resized axes, the smallest or largest that sizes
    // ask for; the output rounds half up.
    if (policy != "stretch") {
      double scale = scales[axes[0]];
      for (int64_t a : axes)
        scale = policy == "not_larger" ? std::min(scale, scales[a])
                                       : std::max(scale, scales[a]);
      for (int64_t a : axes) {
        scales[a] = scale;
        out[a] = (int64_t)(scale * in[a] + 0.5);
      }
    }
  } else if (n.hasInput(scalesIdx) && n.literal(scalesIdx).size() > 0) {
    const Literal &s = n.literal(scalesIdx);
    if (s.size() != static_cast<int64_t>(axes.size()))
      return n.fail("scales has the wrong length");
    for (size_t k = 0; k < axes.size(); ++k) {
      scales[axes[k]] = s.getAsDouble(k);
      out[axes[k]] = (int64_t)std::floor(in[axes[k]] * scales[axes[k]]);
    }
  } else if (n.hasAttr("scales")) { // Upsample-7
    std::vector<float> s = n.attrFloats("scales");
    for (int64_t d = 0; d < rank; ++d) {
      scales[d] = s[d];
      out[d] = (int64_t)std::floor(in[d] * s[d]);
    }
  } else {
    return n.fail("needs scales or sizes");
  }
  if (n.opset() >= 11 && n.hasInput(roiIdx) && n.literal(roiIdx).size() > 0) {
    const Literal &r = n.literal(roiIdx);
    size_t k = axes.size();
    if (r.size() != static_cast<int64_t>(2 * k))
      return n.fail("roi has the wrong length");
    for (size_t i = 0; i < k; ++i) {
      roiS[axes[i]] = r.getAsDouble(i);
      roiE[axes[i]] = r.getAsDouble(i + k);
    }
  }
  double extrapolation = n.attrFloat("extrapolation_value", 0.0f);
  Value x = n.value(0);
  for (int64_t d = 0; d < rank; ++d) {
    bool crop = n.attrString("coordinate_transformation_mode", "half_pixel") ==
                "tf_crop_and_resize";
    if (out[d] == in[d] && scales[d] == 1.0 && !crop)
      continue;
    auto taps = axisTaps(n, in[d], out[d], scales[d], roiS[d], roiE[d]);
    if (failed(taps))
      return failure();
    x = resizeAxis(n, x, d, out[d], *taps, extrapolation);
  }
  n.setOutput(0, x, n.dtype(0));
  return success();
}

} // namespace

void registerResizeLowerings() {
  opLowerings()["Resize"] = lowerResize;
  opLowerings()["Upsample"] = lowerResize;
}

} // namespace mcc
