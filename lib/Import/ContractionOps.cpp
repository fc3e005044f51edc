//===- ContractionOps.cpp - Einsum and ConvTranspose ----------------------===//
//
// ConvTranspose becomes an ordinary stride-1 convolution (the Conv
// lowering's emitConvolution) over an input spread out by the stride and
// padded so that every output sees its whole kernel. Einsum is one
// linalg.generic whose indexing maps come from the equation.
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace mcc {
namespace {

int64_t floorDiv(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

/// The ConvTranspose weight [C, M/group, k...] as a Conv weight
/// [M, C/group, k...]: channels swapped within each group, kernel flipped.
Value convWeightOfTransposed(OpBuilder &b, Location loc, Value w,
                             int64_t group) {
  MLIRContext *ctx = b.getContext();
  Shape ws = shapeOf(w);
  size_t r = ws.size() - 2;
  int64_t Cg = ws[0] / group, Mg = ws[1];
  Shape in = {group, Cg, Mg}, out = {group, Mg, Cg};
  in.insert(in.end(), ws.begin() + 2, ws.end());
  out.insert(out.end(), ws.begin() + 2, ws.end());
  // Loops (g, m, c, k...) read w[g, c, m, K-1-k...].
  SmallVector<AffineExpr> inExprs = {getAffineDimExpr(0, ctx),
                                     getAffineDimExpr(2, ctx),
                                     getAffineDimExpr(1, ctx)};
  for (size_t i = 0; i < r; ++i)
    inExprs.push_back(ws[2 + i] - 1 - getAffineDimExpr(3 + i, ctx));
  unsigned rank = out.size();
  SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, inExprs, ctx),
                                 AffineMap::getMultiDimIdentityMap(rank, ctx)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  Type et = cast<RankedTensorType>(w.getType()).getElementType();
  Value empty = tensor::EmptyOp::create(b, loc, out, et);
  Value t =
      linalg::GenericOp::create(b, loc, TypeRange{empty.getType()},
                                ValueRange{emitReshape(b, loc, w, in)},
                                ValueRange{empty}, maps, iters,
                                [](OpBuilder &nb, Location l, ValueRange a) {
                                  linalg::YieldOp::create(nb, l, a[0]);
                                })
          .getResult(0);
  Shape conv = {group * Mg, Cg};
  conv.insert(conv.end(), ws.begin() + 2, ws.end());
  return emitReshape(b, loc, t, conv);
}

LogicalResult lowerConvTranspose(NodeLowering &n) {
  Shape xs = n.shape(0), ws = n.shape(1);
  if (xs.size() < 3 || xs.size() > 5 || ws.size() != xs.size())
    return n.fail("only 1-D, 2-D and 3-D transposed convolutions are "
                  "supported (input " +
                  formatShape(xs) + ", weight " + formatShape(ws) + ")");
  if (!isFloatDType(n.dtype(0)))
    return n.fail("only floating-point transposed convolutions are supported");
  size_t r = xs.size() - 2;
  int64_t N = xs[0], C = xs[1];
  int64_t group = n.attrInt("group", 1);
  if (group < 1 || ws[0] != C || C % group)
    return n.fail("channels " + Twine(C) + " and weight " + formatShape(ws) +
                  " do not fit group " + Twine(group));
  int64_t M = ws[1] * group;
  Shape kernel(ws.begin() + 2, ws.end());
  if (n.hasAttr("kernel_shape") && n.attrInts("kernel_shape") != kernel)
    return n.fail("kernel_shape differs from the weight's spatial dims " +
                  formatShape(kernel));
  auto strides = n.attrInts("strides", std::vector<int64_t>(r, 1));
  auto dilations = n.attrInts("dilations", std::vector<int64_t>(r, 1));
  auto outPad = n.attrInts("output_padding", std::vector<int64_t>(r, 0));
  auto pads = n.attrInts("pads", std::vector<int64_t>(2 * r, 0));
  auto outShape = n.attrInts("output_shape");
  if (outShape.size() == r + 2) // some exporters give N and M too
    outShape.erase(outShape.begin(), outShape.begin() + 2);
  if (strides.size() != r || dilations.size() != r || outPad.size() != r ||
      pads.size() != 2 * r || (!outShape.empty() && outShape.size() != r))
    return n.fail("strides/dilations/output_padding/pads/output_shape do not "
                  "match " +
                  Twine(r) + " spatial dims");
  std::string autoPad = n.attrString("auto_pad", "NOTSET");
  bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  if (!same && autoPad != "NOTSET" && autoPad != "VALID")
    return n.fail("unknown auto_pad '" + autoPad + "'");
  if (autoPad == "VALID")
    pads.assign(2 * r, 0);

  // Per spatial dim: output size, and the leading pad it crops.
  Shape out = {N, M}, padLo;
  for (size_t i = 0; i < r; ++i) {
    if (strides[i] < 1 || dilations[i] < 1)
      return n.fail("strides and dilations must be positive");
    int64_t full = strides[i] * (xs[2 + i] - 1) + outPad[i] +
                   (kernel[i] - 1) * dilations[i] + 1;
    int64_t o, lo;
    if (same && !n.hasAttr("pads")) {
      // As the ONNX reference: the output defaults to input * stride and
      // the padding it implies splits with floor division.
      o = outShape.empty() ? xs[2 + i] * strides[i] : outShape[i];
      int64_t total = full - o;
      lo = autoPad == "SAME_UPPER" ? floorDiv(total, 2)
                                   : total - floorDiv(total, 2);
    } else {
      lo = pads[i];
      o = outShape.empty() ? full - pads[i] - pads[r + i] : outShape[i];
    }
    if (o <= 0)
      return n.fail("output size " + Twine(o) + " in spatial dim " + Twine(i));
    out.push_back(o);
    padLo.push_back(lo);
  }

  OpBuilder &b = n.builder();
  Location loc = n.loc();
  Type et = n.elementType(n.dtype(0));
  // out[o] = sum_k spread[o + k*d] * flipped[k], where `spread` holds x[i]
  // at (K - lo) + i*s with K = (k-1)*d, and zeros elsewhere. Inputs that
  // land outside it (negative pads, cropped outputs) are dropped first.
  Shape spreadShape = {N, C};
  SmallVector<OpFoldResult> srcOff = {b.getIndexAttr(0), b.getIndexAttr(0)},
                            srcSize = {b.getIndexAttr(N), b.getIndexAttr(C)},
                            ones(2, b.getIndexAttr(1)), dstOff = srcOff,
                            dstStride = ones;
  bool anyInput = true, cropped = false;
  for (size_t i = 0; i < r; ++i) {
    int64_t K = (kernel[i] - 1) * dilations[i], s = strides[i];
    int64_t len = out[2 + i] + K, left = K - padLo[i];
    int64_t first = left < 0 ? floorDiv(-left + s - 1, s) : 0;
    int64_t last = std::min(xs[2 + i] - 1, floorDiv(len - 1 - left, s));
    anyInput &= last >= first;
    cropped |= first != 0 || last != xs[2 + i] - 1;
    spreadShape.push_back(len);
    srcOff.push_back(b.getIndexAttr(first));
    srcSize.push_back(b.getIndexAttr(last - first + 1));
    ones.push_back(b.getIndexAttr(1));
    dstOff.push_back(b.getIndexAttr(left + first * s));
    dstStride.push_back(b.getIndexAttr(s));
  }
  Value spread = emitFilled(b, loc, spreadShape, b.getFloatAttr(et, 0.0));
  if (anyInput) {
    Value x = n.value(0);
    if (cropped)
      x = tensor::ExtractSliceOp::create(b, loc, x, srcOff, srcSize, ones);
    spread = tensor::InsertSliceOp::create(b, loc, x, spread, dstOff, srcSize,
                                           dstStride);
  }
  Value w = convWeightOfTransposed(b, loc, n.value(1), group);
  Value y = emitConvolution(b, loc, spread, w, group,
                            std::vector<int64_t>(r, 1), dilations);
  if (n.hasInput(2))
    y = emitChannelBias(b, loc, y, n.value(2));
  n.setOutput(0, y, n.dtype(0));
  return success();
}

} // namespace

void registerContractionLowerings() {
  opLowerings()["ConvTranspose"] = lowerConvTranspose;
}

} // namespace mcc
