//===- WinogradConv.cpp - 3x3 convolutions as Winograd F(2x2, 3x3) --------===//
//
// A 3x3 stride-1 convolution computes each 2x2 block of outputs from a 4x4
// tile of its input. Winograd's minimal filtering, Y = A^T [(G g G^T) .*
// (B^T d B)] A, turns the 36 multiply-adds per input channel of that block
// into 16 elementwise products, and across channels those products are 16
// matrix products, U[xi nu] [F, C] x V[xi nu] [C, tiles]: the same product
// kernels as every other convolution, with 16/36 of the work. The filter
// transform U = G g G^T runs here, on the weight literal, so the model
// ships the transformed weights. The input and output transforms are
// emitted as reference loops (sums over a tile with constant coefficients)
// marked `mcc.winograd`; on the CPU mcc-vectorize-winograd turns them into
// vector additions along image rows (B and A hold only 0, 1 and -1).
//
// F(2x2, 3x3) and not F(4x4, 3x3): its transforms are exact in fp32 apart
// from the additions' rounding (G's halves are powers of two), so results
// stay within the direct convolution's error; F(4x4) would save another
// 44% of the products at an error several times larger.
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace mcc {
namespace {

/// Convolutions with fewer input or output channels than this keep the
/// direct form: their products are too thin for the transforms to pay.
constexpr int64_t kMinChannels = 16;
/// Nor do convolutions over fewer 2x2 output tiles than this.
constexpr int64_t kMinTiles = 32;

// Winograd F(2, 3): Y = A^T [(G g G^T) .* (B^T d B)] A.
constexpr double kBT[4][4] = {
    {1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
constexpr double kG[4][3] = {
    {1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr double kAT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};

/// U[xi * 4 + nu][f][c] = (G g[f, c] G^T)[xi][nu] for weights g [F, C, 3, 3].
Literal transformFilter(const Literal &g, int64_t F, int64_t C) {
  Literal u(kFloat, {16, F, C});
  for (int64_t f = 0; f < F; ++f)
    for (int64_t c = 0; c < C; ++c) {
      double w[3][3], gw[4][3];
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
          w[i][j] = g.getF(((f * C + c) * 3 + i) * 3 + j);
      for (int x = 0; x < 4; ++x)
        for (int j = 0; j < 3; ++j)
          gw[x][j] =
              kG[x][0] * w[0][j] + kG[x][1] * w[1][j] + kG[x][2] * w[2][j];
      for (int x = 0; x < 4; ++x)
        for (int y = 0; y < 4; ++y)
          u.setF(((x * 4 + y) * F + f) * C + c, gw[x][0] * kG[y][0] +
                                                    gw[x][1] * kG[y][1] +
                                                    gw[x][2] * kG[y][2]);
    }
  return u;
}

/// out[...] = sum over the two trailing reduction loops of coef[...] *
/// in[...]: a transform of 4x4 tiles (the input's, to the 16 products'
/// operands) or of the 16 products (to 2x2 output blocks). `loops` are
/// the extents of the parallel loops then the two reduction loops; `coef`
/// is the transform's constant matrix, `kind` ("input" or "output") marks
/// the op as a Winograd transform for mcc-vectorize-winograd, which
/// replaces these reference loops with vector code on the CPU.
Value tileTransform(OpBuilder &b, Location loc, Value in, AffineMap inMap,
                    Value coef, AffineMap coefMap, AffineMap outMap,
                    const Shape &outShape, unsigned loops, StringRef kind) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  Value init = emitFilled(b, loc, outShape, b.getFloatAttr(f32, 0.0));
  SmallVector<utils::IteratorType> iters(loops - 2,
                                         utils::IteratorType::parallel);
  iters.append(2, utils::IteratorType::reduction);
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ValueRange{in, coef}, ValueRange{init},
      ArrayRef<AffineMap>{inMap, coefMap, outMap}, iters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value term = arith::MulFOp::create(nb, l, a[0], a[1]);
        linalg::YieldOp::create(
            nb, l, arith::AddFOp::create(nb, l, a[2], term).getResult());
      });
  op->setAttr("mcc.winograd", StringAttr::get(ctx, kind));
  return op.getResult(0);
}

} // namespace

FailureOr<Value> emitWinogradConv(NodeLowering &n) {
  if (!n.importOptions().winogradConvolutions || n.dtype(0) != kFloat ||
      !n.isLiteral(1) || n.literal(1).dtype() != kFloat)
    return Value();
  Shape xs = n.shape(0), ws = n.shape(1);
  if (xs.size() != 4 || ws.size() != 4 || ws[2] != 3 || ws[3] != 3 ||
      n.attrInt("group", 1) != 1 || hasSymbolicDims(xs))
    return Value();
  std::vector<int64_t> kernel = n.attrInts("kernel_shape");
  if (!kernel.empty() && kernel != std::vector<int64_t>{3, 3})
    return Value();
  WindowGeometry g;
  if (failed(windowGeometry(n, {xs[2], xs[3]}, {3, 3}, false, g)))
    return failure();
  int64_t N = xs[0], C = xs[1], F = ws[0];
  if (g.strides != std::vector<int64_t>{1, 1} ||
      g.dilations != std::vector<int64_t>{1, 1} || ws[1] != C ||
      C < kMinChannels || F < kMinChannels)
    return Value();
  int64_t OH = g.out[0], OW = g.out[1];
  int64_t TH = (OH + 1) / 2, TW = (OW + 1) / 2, T = N * TH * TW;
  if (T < kMinTiles)
    return Value();

  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  // An odd output size gets one more row (column) of zero padding: the
  // last tile's extra outputs are computed and cut off.
  g.padHi[0] += 2 * TH - OH;
  g.padHi[1] += 2 * TW - OW;
  Value xp = padSpatial(b, loc, n.value(0), g, 0.0);

  GraphValue filter;
  filter.dtype = kFloat;
  filter.shape = {16, F, C};
  filter.literal = transformFilter(n.literal(1), F, C);
  Value u = n.materialize(filter);

  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  // The input transform's coefficients BT[xi, i] BT[nu, j] as [xi][nu][i][j],
  // the output transform's AT[a, xi] AT[b, nu] as [a][b][xi][nu].
  SmallVector<double> inCoef, outCoef;
  for (int p = 0; p < 4; ++p)
    for (int q = 0; q < 4; ++q)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          inCoef.push_back(kBT[p][i] * kBT[q][j]);
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 2; ++q)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          outCoef.push_back(kAT[p][i] * kAT[q][j]);
  // V[xi, nu, c, n, ty, tx] = sum_ij BT[xi, i] BT[nu, j] x[n, c, 2 ty + i,
  // 2 tx + j], over loops (c, n, ty, tx, xi, nu, i, j).
  Value v = tileTransform(
      b, loc, xp,
      AffineMap::get(8, 0, {d(1), d(0), d(2) * 2 + d(6), d(3) * 2 + d(7)}, ctx),
      floatConstantTensor(b, loc, {4, 4, 4, 4}, f32, inCoef),
      AffineMap::get(8, 0, {d(4), d(5), d(6), d(7)}, ctx),
      AffineMap::get(8, 0, {d(4), d(5), d(0), d(1), d(2), d(3)}, ctx),
      {4, 4, C, N, TH, TW}, 8, "input");
  v = emitReshape(b, loc, v, {16, C, T});

  // M[xi nu] = U[xi nu] V[xi nu]: 16 products [F, C] x [C, tiles].
  Value acc = emitFilled(b, loc, {16, F, T}, b.getFloatAttr(f32, 0.0));
  Value m = linalg::BatchMatmulOp::create(b, loc, TypeRange{acc.getType()},
                                          ValueRange{u, v}, ValueRange{acc})
                .getResult(0);
  m = emitReshape(b, loc, m, {4, 4, F, N, TH, TW});

  // Y[n, f, ty, a, tx, b] = sum_(xi, nu) AT[a, xi] AT[b, nu] M[xi, nu, f,
  // n, ty, tx], which is y[n, f, 2 ty + a, 2 tx + b], over loops (f, n, ty,
  // tx, a, b, xi, nu).
  Value y = tileTransform(
      b, loc, m,
      AffineMap::get(8, 0, {d(6), d(7), d(0), d(1), d(2), d(3)}, ctx),
      floatConstantTensor(b, loc, {2, 2, 4, 4}, f32, outCoef),
      AffineMap::get(8, 0, {d(4), d(5), d(6), d(7)}, ctx),
      AffineMap::get(8, 0, {d(1), d(0), d(2), d(4), d(3), d(5)}, ctx),
      {N, F, TH, 2, TW, 2}, 8, "output");
  y = emitReshape(b, loc, y, {N, F, 2 * TH, 2 * TW});
  if (2 * TH != OH || 2 * TW != OW) {
    SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0)),
        sizes = {b.getIndexAttr(N), b.getIndexAttr(F), b.getIndexAttr(OH),
                 b.getIndexAttr(OW)},
        strides(4, b.getIndexAttr(1));
    y = tensor::ExtractSliceOp::create(b, loc, y, offsets, sizes, strides);
  }
  return y;
}

} // namespace mcc
