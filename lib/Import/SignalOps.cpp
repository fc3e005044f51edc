//===- SignalOps.cpp - window functions, DFT and related signal ops -------===//
//
// Window functions and MelWeightMatrix only depend on compile-time sizes, so
// they fold to literals. DFT and STFT are contractions with a compile-time
// matrix of cosines and sines: one linalg.generic each, O(n^2) per signal,
// which is what the (short) signals of the models this serves want.
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;

namespace mcc {
namespace {

enum class WindowKind { Hann, Hamming, Blackman };

LogicalResult lowerWindow(NodeLowering &n, WindowKind kind) {
  if (failed(n.requireLiterals({0}, "size")))
    return failure();
  int64_t size = n.literal(0).getI(0);
  int32_t dt = n.attrInt("output_datatype", kFloat);
  if (!isSupportedDType(dt) || dt == kBool)
    return n.fail("unsupported output_datatype " + Twine(dt));
  if (size < 0)
    return n.fail("negative window size " + Twine(size));
  bool periodic = n.attrInt("periodic", 1) != 0;
  // As the ONNX reference: the denominator is size (periodic) or size - 1.
  double denom = periodic ? size : size - 1;
  Literal out(dt, {size});
  for (int64_t i = 0; i < size; ++i) {
    double a = 2 * M_PI * i / denom, v;
    switch (kind) {
    case WindowKind::Hann:
      v = std::pow(std::sin(M_PI * i / denom), 2);
      break;
    case WindowKind::Hamming:
      v = 25.0 / 46.0 - (1 - 25.0 / 46.0) * std::cos(a);
      break;
    case WindowKind::Blackman:
      v = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
      break;
    }
    out.setFromDouble(i, v);
  }
  n.setOutput(0, std::move(out));
  return success();
}

/// MelWeightMatrix, following the ONNX reference (bins rounded down).
LogicalResult lowerMelWeightMatrix(NodeLowering &n) {
  if (failed(n.requireLiterals({0, 1, 2, 3, 4},
                               "MelWeightMatrix's sizes and frequencies")))
    return failure();
  int64_t mels = n.literal(0).getI(0), dftLen = n.literal(1).getI(0);
  double rate = n.literal(2).getAsDouble(0);
  double lowHz = n.literal(3).getAsDouble(0),
         highHz = n.literal(4).getAsDouble(0);
  int32_t dt = n.attrInt("output_datatype", kFloat);
  if (!isSupportedDType(dt) || dt == kBool)
    return n.fail("unsupported output_datatype " + Twine(dt));
  if (mels < 1 || dftLen < 1 || rate <= 0)
    return n.fail("num_mel_bins, dft_length and sample_rate must be positive");
  int64_t bins = dftLen / 2 + 1;
  auto toMel = [](double hz) {
    return 2595 * std::log1p(hz / 700) / std::log(10.0);
  };
  double lowMel = toMel(lowHz), step = (toMel(highHz) - lowMel) / (mels + 2);
  std::vector<int64_t> edge;
  for (int64_t i = 0; i < mels + 2; ++i) {
    double hz = 700 * std::expm1((i * step + lowMel) / 2595 * std::log(10.0));
    edge.push_back(static_cast<int64_t>(std::floor((dftLen + 1) * hz / rate)));
  }
  std::vector<double> w(bins * mels, 0.0);
  auto at = [&](int64_t j, int64_t i) -> double & { return w[j * mels + i]; };
  for (int64_t i = 0; i < mels; ++i) {
    int64_t lo = edge[i], mid = edge[i + 1], hi = edge[i + 2];
    if (lo < 0 || mid >= bins || hi > bins)
      return n.fail("mel band " + Twine(i) + " falls outside the " +
                    Twine(bins) + " spectrogram bins");
    if (mid == lo)
      at(mid, i) = 1;
    else
      for (int64_t j = lo; j <= mid; ++j)
        at(j, i) = double(j - lo) / double(mid - lo);
    for (int64_t j = mid; j < hi; ++j)
      at(j, i) = double(hi - j) / double(hi - mid);
  }
  Literal out(dt, {bins, mels});
  for (size_t i = 0; i < w.size(); ++i)
    out.setFromDouble(i, w[i]);
  n.setOutput(0, std::move(out));
  return success();
}

/// W[c', c, n, k]: how part c' (real, imag) of input sample n adds to part c
/// of output k, for a length-`len` DFT (inverse: conjugate and 1/len). With
/// `halfIn` the input is a one-sided spectrum whose mirrored half counts
/// too (irfft): bins other than 0 and len/2 count twice; only the real
/// output is produced then.
Value dftMatrix(OpBuilder &b, Location loc, Type et, int64_t cin, int64_t cout,
                int64_t nIn, int64_t nOut, int64_t len, bool inverse,
                bool halfIn) {
  std::vector<double> w(cin * cout * nIn * nOut);
  double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / len : 1.0;
  for (int64_t i = 0; i < nIn; ++i) {
    double mult = scale;
    if (halfIn && i != 0 && 2 * i != len)
      mult *= 2;
    for (int64_t k = 0; k < nOut; ++k) {
      // i*k mod len keeps the angle small, hence exact for large i*k.
      double phi = sign * 2 * M_PI * double((i * k) % len) / len;
      double c = std::cos(phi) * mult, s = std::sin(phi) * mult;
      // (xr + i xi)(c + i s) = (xr c - xi s) + i (xr s + xi c)
      double f[2][2] = {{c, s}, {-s, c}};
      for (int64_t a = 0; a < cin; ++a)
        for (int64_t o = 0; o < cout; ++o)
          w[((a * cout + o) * nIn + i) * nOut + k] = f[a][o];
    }
  }
  return floatConstantTensor(b, loc, {cin, cout, nIn, nOut}, et, w);
}

LogicalResult lowerDFT(NodeLowering &n) {
  const Shape &in = n.shape(0);
  int64_t rank = in.size();
  if (rank < 2 || (in.back() != 1 && in.back() != 2))
    return n.fail("input must be [..., signal, 1 or 2]");
  if (!isFloatDType(n.dtype(0)))
    return n.fail("DFT needs a floating-point input");
  int64_t axis;
  if (n.opset() >= 20) {
    axis = -2;
    if (n.hasInput(2)) {
      if (failed(n.requireLiterals({2}, "axis")))
        return failure();
      axis = n.literal(2).getI(0);
    }
  } else {
    axis = n.attrInt("axis", 1);
  }
  axis = normalizeAxis(axis, rank);
  if (axis < 0 || axis >= rank - 1)
    return n.fail("axis " + Twine(axis) + " is not a signal dimension");
  bool inverse = n.attrInt("inverse", 0) != 0;
  bool onesided = n.attrInt("onesided", 0) != 0;
  bool irfft = inverse && onesided;
  int64_t cin = in.back(), N = in[axis];
  if (irfft && cin != 2)
    return n.fail("an inverse one-sided DFT needs a complex input");
  int64_t len = irfft ? 2 * (N - 1) : N;
  if (n.hasInput(1)) {
    if (failed(n.requireLiterals({1}, "dft_length")))
      return failure();
    len = n.literal(1).getI(0);
  }
  if (len < 1)
    return n.fail("dft_length must be positive");
  // Input samples used (the rest would be truncated; missing ones are
  // zero padding and add nothing), output bins and parts.
  int64_t nIn = std::min(N, irfft ? len / 2 + 1 : len);
  int64_t nOut = onesided && !inverse ? len / 2 + 1 : len;
  int64_t cout = irfft ? 1 : 2;

  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Type et = n.elementType(n.dtype(0));
  Value x = n.value(0);
  if (nIn < N) {
    SmallVector<OpFoldResult> offs(rank, b.getIndexAttr(0)), sizes,
        ones(rank, b.getIndexAttr(1));
    for (int64_t d = 0; d < rank; ++d)
      sizes.push_back(b.getIndexAttr(d == axis ? nIn : in[d]));
    x = tensor::ExtractSliceOp::create(b, loc, x, offs, sizes, ones);
  }
  Value w = dftMatrix(b, loc, et, cin, cout, nIn, nOut, len, inverse, irfft);
  // Loops: the output dims (axis = bin k, last = part c), then the sample
  // n and the input part c'.
  Shape out = in;
  out[axis] = nOut;
  out.back() = cout;
  int64_t loopN = rank, loopC = rank + 1;
  SmallVector<AffineExpr> xExprs;
  for (int64_t d = 0; d < rank; ++d)
    xExprs.push_back(getAffineDimExpr(d == axis       ? loopN
                                      : d == rank - 1 ? loopC
                                                      : d,
                                      ctx));
  SmallVector<AffineExpr> wExprs = {
      getAffineDimExpr(loopC, ctx), getAffineDimExpr(rank - 1, ctx),
      getAffineDimExpr(loopN, ctx), getAffineDimExpr(axis, ctx)};
  SmallVector<AffineMap> maps = {
      AffineMap::get(rank + 2, 0, xExprs, ctx),
      AffineMap::get(rank + 2, 0, wExprs, ctx),
      AffineMap::getMultiDimIdentityMap(rank + 2, ctx).getMajorSubMap(rank)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters.append(2, utils::IteratorType::reduction);
  Value init = emitFilled(b, loc, out, b.getFloatAttr(et, 0.0));
  Value r = linalg::GenericOp::create(
                b, loc, TypeRange{init.getType()}, ValueRange{x, w},
                ValueRange{init}, maps, iters,
                [](OpBuilder &nb, Location l, ValueRange a) {
                  Value p = arith::MulFOp::create(nb, l, a[0], a[1]);
                  linalg::YieldOp::create(
                      nb, l, (Value)arith::AddFOp::create(nb, l, a[2], p));
                })
                .getResult(0);
  n.setOutput(0, r, n.dtype(0));
  return success();
}

/// STFT: out[b, f, k, c] = sum_(n, c') x[b, f*step + n, c'] * window[n] *
/// W[c', c, n, k], one generic.
LogicalResult lowerSTFT(NodeLowering &n) {
  const Shape &in = n.shape(0);
  if (in.size() != 3 || (in[2] != 1 && in[2] != 2))
    return n.fail("signal must be [batch, length, 1 or 2]");
  if (!isFloatDType(n.dtype(0)))
    return n.fail("STFT needs a floating-point signal");
  if (failed(n.requireLiterals({1, 3}, "frame_step and frame_length")))
    return failure();
  int64_t step = n.literal(1).getI(0);
  int64_t len = in[1];
  if (n.hasInput(3))
    len = n.literal(3).getI(0);
  else if (n.hasInput(2))
    len = n.shape(2)[0];
  if (n.hasInput(2) && (n.rank(2) != 1 || n.shape(2)[0] != len))
    return n.fail("window of shape " + formatShape(n.shape(2)) +
                  " for frame_length " + Twine(len));
  if (step < 1 || len < 1 || len > in[1])
    return n.fail("frame_step " + Twine(step) + " and frame_length " +
                  Twine(len) + " do not fit a signal of " + Twine(in[1]));
  bool onesided = n.attrInt("onesided", 1) != 0;
  int64_t frames = (in[1] - len) / step + 1, cin = in[2];
  int64_t bins = onesided ? len / 2 + 1 : len;

  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Type et = n.elementType(n.dtype(0));
  Value w = dftMatrix(b, loc, et, cin, 2, len, bins, len, false, false);
  Value window = n.hasInput(2)
                     ? n.value(2)
                     : emitFilled(b, loc, {len}, b.getFloatAttr(et, 1.0));
  // Loops (b, f, k, c, n, c').
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineMap> maps = {
      AffineMap::get(6, 0, {d(0), d(1) * step + d(4), d(5)}, ctx),
      AffineMap::get(6, 0, {d(4)}, ctx),
      AffineMap::get(6, 0, {d(5), d(3), d(4), d(2)}, ctx),
      AffineMap::get(6, 0, {d(0), d(1), d(2), d(3)}, ctx)};
  SmallVector<utils::IteratorType> iters(4, utils::IteratorType::parallel);
  iters.append(2, utils::IteratorType::reduction);
  Value init =
      emitFilled(b, loc, {in[0], frames, bins, 2}, b.getFloatAttr(et, 0.0));
  Value r =
      linalg::GenericOp::create(
          b, loc, TypeRange{init.getType()}, ValueRange{n.value(0), window, w},
          ValueRange{init}, maps, iters,
          [](OpBuilder &nb, Location l, ValueRange a) {
            Value p = arith::MulFOp::create(
                nb, l, arith::MulFOp::create(nb, l, a[0], a[1]), a[2]);
            linalg::YieldOp::create(
                nb, l, (Value)arith::AddFOp::create(nb, l, a[3], p));
          })
          .getResult(0);
  n.setOutput(0, r, n.dtype(0));
  return success();
}

} // namespace

void registerSignalLowerings() {
  auto &t = opLowerings();
  t["HannWindow"] = [](NodeLowering &n) {
    return lowerWindow(n, WindowKind::Hann);
  };
  t["HammingWindow"] = [](NodeLowering &n) {
    return lowerWindow(n, WindowKind::Hamming);
  };
  t["BlackmanWindow"] = [](NodeLowering &n) {
    return lowerWindow(n, WindowKind::Blackman);
  };
  t["MelWeightMatrix"] = lowerMelWeightMatrix;
  t["DFT"] = lowerDFT;
  t["STFT"] = lowerSTFT;
}

} // namespace mcc
