//===- WinogradConv.cpp - 3x3 convolutions as Winograd products -----------===//
//
// A 3x3 stride-1 convolution computes each m x m block of outputs from an
// (m + 2) x (m + 2) tile of its input. Winograd's minimal filtering, Y =
// A^T [(G g G^T) .* (B^T d B)] A, turns the 9 m^2 multiply-adds per input
// channel of that block into (m + 2)^2 elementwise products, and across
// channels those products are (m + 2)^2 matrix products, U[xi nu] [F, C] x
// V[xi nu] [C, tiles]: the same product kernels as every other
// convolution. F(4x4, 3x3) does 36/144 of the direct form's work, F(2x2,
// 3x3) 64/144. The filter transform U = G g G^T runs here, on the weight
// literal, so the model ships the transformed weights. The input and
// output transforms are emitted as reference loops (sums over a tile with
// constant coefficients) marked `mcc.winograd`; on the CPU
// mcc-vectorize-winograd turns them into vector code along image rows.
//
// F(4x4, 3x3) is taken where the convolution has enough 4x4 tiles (the
// default; its error is 5-10x F(2x2)'s, ~1e-5 of the output's range for a
// layer) and F(2x2, 3x3) elsewhere, whose transforms are exact in fp32 but
// for the additions' rounding; `--winograd f2` keeps F(2x2) throughout
// (docs/design/0019, 0026).
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
/// Nor do convolutions over fewer output tiles than this: the products'
/// columns are the tiles, and the product kernel needs a few vectors of them.
constexpr int64_t kMinTiles = 32;

/// Winograd F(m x m, 3 x 3): Y = A^T [(G g G^T) .* (B^T d B)] A over input
/// tiles of alpha = m + 2 rows and columns.
struct WinogradScheme {
  int64_t m, alpha;
  /// B^T (alpha x alpha), G (alpha x 3) and A^T (m x alpha).
  std::vector<std::vector<double>> bt, g, at;
};

/// F(2x2, 3x3): transforms exact in fp32 but for the additions' rounding
/// (G's halves are powers of two).
const WinogradScheme &schemeF2() {
  static const WinogradScheme s{
      2,
      4,
      {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
      {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
      {{1, 1, 1, 0}, {0, 1, -1, -1}}};
  return s;
}

/// F(4x4, 3x3) on the points 0, +-1, +-2 (Lavin and Gray): 36 products
/// per 16 outputs where F(2x2) needs 64 and the direct form 144, at an
/// error a few times F(2x2)'s (the transforms scale by up to 8).
const WinogradScheme &schemeF4() {
  static const WinogradScheme s{4,
                                6,
                                {{4, 0, -5, 0, 1, 0},
                                 {0, -4, -4, 1, 1, 0},
                                 {0, 4, -4, -1, 1, 0},
                                 {0, -2, -1, 2, 1, 0},
                                 {0, 2, -1, -2, 1, 0},
                                 {0, 4, 0, -5, 0, 1}},
                                {{1.0 / 4, 0, 0},
                                 {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                 {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                 {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                 {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                 {0, 0, 1}},
                                {{1, 1, 1, 1, 1, 0},
                                 {0, 1, -1, 2, -2, 0},
                                 {0, 1, 1, 4, 4, 0},
                                 {0, 1, -1, 8, -8, 1}}};
  return s;
}

/// U[xi * alpha + nu][f][c] = (G g[f, c] G^T)[xi][nu] for weights g [F, C,
/// 3, 3], in double and rounded once.
Literal transformFilter(const Literal &g, int64_t F, int64_t C,
                        const WinogradScheme &s) {
  int64_t a = s.alpha;
  Literal u(kFloat, {a * a, F, C});
  std::vector<double> gw(a * 3);
  for (int64_t f = 0; f < F; ++f)
    for (int64_t c = 0; c < C; ++c) {
      double w[3][3];
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
          w[i][j] = g.getF(((f * C + c) * 3 + i) * 3 + j);
      for (int64_t x = 0; x < a; ++x)
        for (int j = 0; j < 3; ++j)
          gw[x * 3 + j] =
              s.g[x][0] * w[0][j] + s.g[x][1] * w[1][j] + s.g[x][2] * w[2][j];
      for (int64_t x = 0; x < a; ++x)
        for (int64_t y = 0; y < a; ++y)
          u.setF(((x * a + y) * F + f) * C + c, gw[x * 3] * s.g[y][0] +
                                                    gw[x * 3 + 1] * s.g[y][1] +
                                                    gw[x * 3 + 2] * s.g[y][2]);
    }
  return u;
}

/// out[...] = sum over the two trailing reduction loops of coef[...] *
/// in[...]: a transform of alpha x alpha tiles (the input's, to the
/// products' operands) or of the alpha^2 products (to m x m output
/// blocks). `loops` are
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
  auto tilesOf = [&](int64_t m) {
    return N * ((OH + m - 1) / m) * ((OW + m - 1) / m);
  };
  // F(4x4) where its tiles still give the products enough columns, F(2x2)
  // otherwise (resnet50: 56x56 and 28x28 in F(4x4), 14x14 in F(2x2), 7x7
  // direct).
  const WinogradScheme &s =
      n.importOptions().winogradTile >= 4 && tilesOf(4) >= kMinTiles
          ? schemeF4()
          : schemeF2();
  int64_t mt = s.m, a = s.alpha;
  int64_t TH = (OH + mt - 1) / mt, TW = (OW + mt - 1) / mt, T = N * TH * TW;
  if (T < kMinTiles)
    return Value();

  OpBuilder &b = n.builder();
  Location loc = n.loc();
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  // An output size that m does not divide gets more rows (columns) of zero
  // padding: the last tiles' extra outputs are computed and cut off.
  g.padHi[0] += mt * TH - OH;
  g.padHi[1] += mt * TW - OW;
  Value xp = padSpatial(b, loc, n.value(0), g, 0.0);

  GraphValue filter;
  filter.dtype = kFloat;
  filter.shape = {a * a, F, C};
  filter.literal = transformFilter(n.literal(1), F, C, s);
  Value u = n.materialize(filter);

  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  // The input transform's coefficients BT[xi, i] BT[nu, j] as [xi][nu][i][j],
  // the output transform's AT[a, xi] AT[b, nu] as [a][b][xi][nu].
  SmallVector<double> inCoef, outCoef;
  for (int64_t p = 0; p < a; ++p)
    for (int64_t q = 0; q < a; ++q)
      for (int64_t i = 0; i < a; ++i)
        for (int64_t j = 0; j < a; ++j)
          inCoef.push_back(s.bt[p][i] * s.bt[q][j]);
  for (int64_t p = 0; p < mt; ++p)
    for (int64_t q = 0; q < mt; ++q)
      for (int64_t i = 0; i < a; ++i)
        for (int64_t j = 0; j < a; ++j)
          outCoef.push_back(s.at[p][i] * s.at[q][j]);
  // V[xi, nu, c, n, ty, tx] = sum_ij BT[xi, i] BT[nu, j] x[n, c, m ty + i,
  // m tx + j], over loops (c, n, ty, tx, xi, nu, i, j).
  Value v = tileTransform(
      b, loc, xp,
      AffineMap::get(8, 0, {d(1), d(0), d(2) * mt + d(6), d(3) * mt + d(7)},
                     ctx),
      floatConstantTensor(b, loc, {a, a, a, a}, f32, inCoef),
      AffineMap::get(8, 0, {d(4), d(5), d(6), d(7)}, ctx),
      AffineMap::get(8, 0, {d(4), d(5), d(0), d(1), d(2), d(3)}, ctx),
      {a, a, C, N, TH, TW}, 8, "input");
  v = emitReshape(b, loc, v, {a * a, C, T});

  // M[xi nu] = U[xi nu] V[xi nu]: alpha^2 products [F, C] x [C, tiles].
  Value acc = emitFilled(b, loc, {a * a, F, T}, b.getFloatAttr(f32, 0.0));
  Value m = linalg::BatchMatmulOp::create(b, loc, TypeRange{acc.getType()},
                                          ValueRange{u, v}, ValueRange{acc})
                .getResult(0);
  m = emitReshape(b, loc, m, {a, a, F, N, TH, TW});

  // Y[n, f, ty, a, tx, b] = sum_(xi, nu) AT[a, xi] AT[b, nu] M[xi, nu, f,
  // n, ty, tx], which is y[n, f, m ty + a, m tx + b], over loops (f, n, ty,
  // tx, a, b, xi, nu).
  Value y = tileTransform(
      b, loc, m,
      AffineMap::get(8, 0, {d(6), d(7), d(0), d(1), d(2), d(3)}, ctx),
      floatConstantTensor(b, loc, {mt, mt, a, a}, f32, outCoef),
      AffineMap::get(8, 0, {d(4), d(5), d(6), d(7)}, ctx),
      AffineMap::get(8, 0, {d(1), d(0), d(2), d(4), d(3), d(5)}, ctx),
      {N, F, TH, mt, TW, mt}, 8, "output");
  y = emitReshape(b, loc, y, {N, F, mt * TH, mt * TW});
  if (mt * TH != OH || mt * TW != OW) {
    SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0)),
        sizes = {b.getIndexAttr(N), b.getIndexAttr(F), b.getIndexAttr(OH),
                 b.getIndexAttr(OW)},
        strides(4, b.getIndexAttr(1));
    y = tensor::ExtractSliceOp::create(b, loc, y, offsets, sizes, strides);
  }
  return y;
}

} // namespace mcc
