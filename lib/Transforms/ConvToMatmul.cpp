//===- ConvToMatmul.cpp - NCHW convolutions as im2col + matrix products ---===//
//
// A convolution is a matrix product once its input windows are laid out as
// columns: out[f, (n,oh,ow)] = sum_(c,kh,kw) W[f, (c,kh,kw)] *
// col[(c,kh,kw), (n,oh,ow)]. The column buffer is one affine copy (a 1x1
// convolution of one image needs none), and the product then runs through
// the same matmul code as the transformers: the CPU register-tiled kernel
// or cuBLAS on the GPU.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mcc {
#define GEN_PASS_DEF_CONVTOMATMUL
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

/// The fill value of `init` when it is a linalg.fill result, else null.
Value fillValue(Value init) {
  if (auto fill = init.getDefiningOp<linalg::FillOp>())
    return fill.value();
  return {};
}

Value filled(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> shape,
             Type et, Value value) {
  Value empty = tensor::EmptyOp::create(b, loc, shape, et);
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

/// Reassociation that groups consecutive dims by the given group sizes.
SmallVector<ReassociationIndices> groups(ArrayRef<int64_t> sizes) {
  SmallVector<ReassociationIndices> r;
  int64_t next = 0;
  for (int64_t s : sizes) {
    ReassociationIndices g;
    for (int64_t i = 0; i < s; ++i)
      g.push_back(next++);
    r.push_back(g);
  }
  return r;
}

/// Geometry shared by the plain and the grouped form. `G` is 1 for the plain
/// form (and then no group dim appears in any tensor). The batch `N` may be
/// dynamic (then `n` is its run-time value); every other size is static.
struct ConvShape {
  int64_t N, G, C, H, W, F, KH, KW, OH, OW;
  int64_t sh, sw, dh, dw;
  bool grouped;
  OpFoldResult n = {};

  /// `shape` with its dynamic entry (the batch) as `n`.
  SmallVector<OpFoldResult> sizes(OpBuilder &b,
                                  ArrayRef<int64_t> shape) const {
    SmallVector<OpFoldResult> r;
    for (int64_t d : shape)
      r.push_back(ShapedType::isDynamic(d) ? n : b.getIndexAttr(d));
    return r;
  }
};

/// A static product, or dynamic if either side is.
int64_t mulSizes(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b)
             ? ShapedType::kDynamic
             : a * b;
}

/// out[i...] = x[inMap(i...)] over a fresh tensor of `shape`: the im2col
/// gather, one parallel affine copy.
Value gather(OpBuilder &b, Location loc, Value x, AffineMap inMap,
             ArrayRef<OpFoldResult> shape) {
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  unsigned rank = shape.size();
  AffineMap outMap = AffineMap::getMultiDimIdentityMap(rank, b.getContext());
  Value empty = tensor::EmptyOp::create(b, loc, shape, et);
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{empty.getType()}, ValueRange{x},
             ValueRange{empty}, ArrayRef<AffineMap>{inMap, outMap}, iters,
             [](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, args[0]);
             })
      .getResult(0);
}

/// Several images, not grouped: col[n, c, kh, kw, oh, ow] collapsed to
/// [N, C*KH*KW, OH*OW], one column matrix per image (a reshape of the input
/// for a 1x1, stride-1 convolution).
Value im2colPerImage(OpBuilder &b, Location loc, Value x, const ConvShape &s) {
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  if (s.KH == 1 && s.KW == 1 && s.sh == 1 && s.sw == 1 && s.H == s.OH &&
      s.W == s.OW)
    return tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get({s.N, s.C, s.H * s.W}, et), x,
        groups({1, 1, 2}));
  MLIRContext *ctx = b.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  // Loop dims: n, c, kh, kw, oh, ow.
  AffineMap inMap = AffineMap::get(
      6, 0, {d(0), d(1), d(4) * s.sh + d(2) * s.dh, d(5) * s.sw + d(3) * s.dw},
      ctx);
  Value col =
      gather(b, loc, x, inMap, s.sizes(b, {s.N, s.C, s.KH, s.KW, s.OH, s.OW}));
  return tensor::CollapseShapeOp::create(
      b, loc,
      RankedTensorType::get({s.N, s.C * s.KH * s.KW, s.OH * s.OW}, et), col,
      groups({1, 3, 2}));
}

/// col[(g,) c, kh, kw, n, oh, ow] = x[n, (g,) c, oh*sh + kh*dh, ow*sw + kw*dw]
/// collapsed to [(G,) C*KH*KW, N*OH*OW]. A 1x1, stride-1 convolution of a
/// single image is a reshape of the input instead of a copy.
Value im2col(OpBuilder &b, Location loc, Value x, const ConvShape &s) {
  Type et = cast<RankedTensorType>(x.getType()).getElementType();
  int64_t g = s.grouped ? 1 : 0;
  if (s.N == 1 && s.KH == 1 && s.KW == 1 && s.sh == 1 && s.sw == 1 &&
      s.H == s.OH && s.W == s.OW) {
    // [1, (G,) C, H, W] -> [(G,) C, H*W]
    SmallVector<int64_t> shape;
    if (s.grouped)
      shape.push_back(s.G);
    shape.append({s.C, s.H * s.W});
    SmallVector<ReassociationIndices> re =
        s.grouped ? groups({2, 1, 2}) : groups({2, 2});
    return tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get(shape, et), x, re);
  }
  MLIRContext *ctx = b.getContext();
  unsigned rank = 6 + g;
  // Loop dims: (g,) c, kh, kw, n, oh, ow.
  auto d = [&](unsigned i) { return getAffineDimExpr(i + g, ctx); };
  SmallVector<AffineExpr> in = {d(3)};
  if (s.grouped)
    in.push_back(getAffineDimExpr(0, ctx));
  in.append({d(0), d(4) * s.sh + d(1) * s.dh, d(5) * s.sw + d(2) * s.dw});
  AffineMap inMap = AffineMap::get(rank, 0, in, ctx);
  SmallVector<int64_t> colShape;
  if (s.grouped)
    colShape.push_back(s.G);
  colShape.append({s.C, s.KH, s.KW, s.N, s.OH, s.OW});
  Value col = gather(b, loc, x, inMap, s.sizes(b, colShape));
  SmallVector<int64_t> flat;
  if (s.grouped)
    flat.push_back(s.G);
  flat.append({s.C * s.KH * s.KW, mulSizes(s.N, s.OH * s.OW)});
  SmallVector<ReassociationIndices> re =
      s.grouped ? groups({1, 3, 3}) : groups({3, 3});
  return tensor::CollapseShapeOp::create(
      b, loc, RankedTensorType::get(flat, et), col, re);
}

/// Rewrites one convolution; `x` is [N, (G,) C, H, W], `w` [(G,) F, C, KH,
/// KW] and the result [N, (G,) F, OH, OW].
LogicalResult rewrite(RewriterBase &rw, linalg::LinalgOp conv, Value x,
                      Value w, ConvShape s, ArrayRef<int64_t> strides,
                      ArrayRef<int64_t> dilations) {
  Value init = conv.getDpsInits()[0];
  Value fill = fillValue(init);
  auto outType = cast<RankedTensorType>(init.getType());
  Type et = outType.getElementType();
  // Only the batch (dim 0 of the input and the output) may be dynamic.
  auto staticPastBatch = [](Value v) {
    return llvm::none_of(
        cast<RankedTensorType>(v.getType()).getShape().drop_front(),
        ShapedType::isDynamic);
  };
  if (!fill || !isa<FloatType>(et) || !staticPastBatch(init) ||
      !staticPastBatch(x) ||
      !cast<RankedTensorType>(w.getType()).hasStaticShape())
    return failure();
  bool dynamicBatch = ShapedType::isDynamic(s.N);
  s.sh = strides[0];
  s.sw = strides[1];
  s.dh = dilations[0];
  s.dw = dilations[1];
  Location loc = conv.getLoc();
  rw.setInsertionPoint(conv);
  s.n = tensor::getMixedSize(rw, loc, x, 0);
  // A dynamic batch takes the per-image form too: one image at run time
  // costs a batch loop of one trip.
  if (!s.grouped && (s.N > 1 || dynamicBatch)) {
    // One product per image with the weights broadcast over the batch:
    // out[n] = W x col[n] lands in NCHW order, with no transpose.
    Value col = im2colPerImage(rw, loc, x, s);
    int64_t ckk = s.C * s.KH * s.KW, p = s.OH * s.OW;
    Value wm = tensor::CollapseShapeOp::create(
        rw, loc, RankedTensorType::get({s.F, ckk}, et), w, groups({1, 3}));
    Value acc = filled(rw, loc, s.sizes(rw, {s.N, s.F, p}), et, fill);
    MLIRContext *ctx = rw.getContext();
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    SmallVector<Attribute> maps = {
        AffineMapAttr::get(AffineMap::get(4, 0, {d(1), d(3)}, ctx)),
        AffineMapAttr::get(AffineMap::get(4, 0, {d(0), d(3), d(2)}, ctx)),
        AffineMapAttr::get(AffineMap::get(4, 0, {d(0), d(1), d(2)}, ctx))};
    Value prod = linalg::BatchMatmulOp::create(
                     rw, loc, TypeRange{acc.getType()}, ValueRange{wm, col},
                     ValueRange{acc},
                     {rw.getNamedAttr("indexing_maps", rw.getArrayAttr(maps))})
                     .getResult(0);
    rw.replaceOp(conv, tensor::ExpandShapeOp::create(
                           rw, loc, outType, prod, groups({1, 1, 2}),
                           s.sizes(rw, outType.getShape())));
    return success();
  }
  Value col = im2col(rw, loc, x, s);
  int64_t ckk = s.C * s.KH * s.KW;
  SmallVector<int64_t> wShape, prodShape;
  if (s.grouped) {
    wShape.push_back(s.G);
    prodShape.push_back(s.G);
  }
  wShape.append({s.F, ckk});
  prodShape.append({s.F, mulSizes(s.N, s.OH * s.OW)});
  Value wm = tensor::CollapseShapeOp::create(
      rw, loc, RankedTensorType::get(wShape, et), w,
      s.grouped ? groups({1, 1, 3}) : groups({1, 3}));
  // The product's columns are the column buffer's (N*OH*OW, maybe dynamic).
  SmallVector<OpFoldResult> accSizes;
  for (int64_t d : prodShape)
    accSizes.push_back(rw.getIndexAttr(d));
  accSizes.back() = tensor::getMixedSize(rw, loc, col, prodShape.size() - 1);
  Value acc = filled(rw, loc, accSizes, et, fill);
  Value prod =
      s.grouped
          ? linalg::BatchMatmulOp::create(rw, loc, ValueRange{wm, col},
                                          ValueRange{acc})
                .getResult(0)
          : linalg::MatmulOp::create(rw, loc, ValueRange{wm, col},
                                     ValueRange{acc})
                .getResult(0);
  // [(G,) F, N*OH*OW] -> [(G,) F, N, OH, OW]
  SmallVector<int64_t> split(prodShape.begin(), prodShape.end() - 1);
  split.append({s.N, s.OH, s.OW});
  Value r = tensor::ExpandShapeOp::create(
      rw, loc, RankedTensorType::get(split, et), prod,
      s.grouped ? groups({1, 1, 3}) : groups({1, 3}), s.sizes(rw, split));
  Value result;
  if (s.N == 1) {
    // A leading unit dim moves for free: collapse it away, expand it back.
    SmallVector<int64_t> noN(split);
    noN.erase(noN.end() - 3);
    Value flat = tensor::CollapseShapeOp::create(
        rw, loc, RankedTensorType::get(noN, et), r,
        s.grouped ? groups({1, 2, 1, 1}) : groups({2, 1, 1}));
    result = tensor::ExpandShapeOp::create(
        rw, loc, outType, flat,
        s.grouped ? groups({2, 1, 1, 1}) : groups({2, 1, 1}));
  } else {
    SmallVector<int64_t> perm = s.grouped ? SmallVector<int64_t>{2, 0, 1, 3, 4}
                                          : SmallVector<int64_t>{1, 0, 2, 3};
    Value empty = tensor::EmptyOp::create(
        rw, loc, s.sizes(rw, outType.getShape()), et);
    result = linalg::TransposeOp::create(rw, loc, r, empty, perm).getResult()[0];
  }
  rw.replaceOp(conv, result);
  return success();
}

SmallVector<int64_t> ints(DenseIntElementsAttr a) {
  return llvm::to_vector(a.getValues<int64_t>());
}

/// A grouped convolution that mcc-vectorize-grouped-conv runs in place on
/// the CPU: f32, a window larger than 1x1 and output rows of at least 12
/// (most of a 16-lane vector). Its column buffer would be KH*KW times the
/// input, each column used by only F/G rows of weights.
bool runsDirect(linalg::Conv2DNgchwGfchwOp op) {
  auto w = cast<ShapedType>(op.getDpsInputs()[1].getType());
  auto out = cast<ShapedType>(op.getDpsInits()[0].getType());
  return w.getElementType().isF32() && w.getDimSize(3) * w.getDimSize(4) > 1 &&
         !out.isDynamicDim(4) && out.getDimSize(4) >= 12;
}

/// An ungrouped convolution that runs in place the same way (as one group):
/// few input channels (a stem's 3, resnet's first stage's 64), where the
/// im2col copy costs about as much as the product's packing saves. Measured
/// on resnet50 at one thread: the 7x7 stem 3.35 -> 3.18 ms, a first-stage
/// 3x3 2.77 -> 2.34 ms; with 128 or 256 channels the two ran level.
constexpr int64_t kDirectMaxChannels = 64;

bool runsDirect(linalg::Conv2DNchwFchwOp op) {
  auto x = cast<ShapedType>(op.getDpsInputs()[0].getType());
  auto w = cast<ShapedType>(op.getDpsInputs()[1].getType());
  auto out = cast<ShapedType>(op.getDpsInits()[0].getType());
  return w.getElementType().isF32() && w.getDimSize(2) * w.getDimSize(3) > 1 &&
         !x.isDynamicDim(1) && x.getDimSize(1) <= kDirectMaxChannels &&
         !out.isDynamicDim(3) && out.getDimSize(3) >= 12;
}

/// conv_2d_nchw_fchw as conv_2d_ngchw_gfchw with one group: reshapes of the
/// input, weights and accumulator around it.
void asOneGroup(RewriterBase &rw, linalg::Conv2DNchwFchwOp op) {
  rw.setInsertionPoint(op);
  Location loc = op.getLoc();
  auto one = [&](Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(t.getShape());
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rw, loc, v);
    // Input and accumulator: [N, 1, C, H, W]; weights: [1, F, C, KH, KW].
    unsigned at = v == op.getDpsInputs()[1] ? 0 : 1;
    shape.insert(shape.begin() + at, 1);
    sizes.insert(sizes.begin() + at, rw.getIndexAttr(1));
    return tensor::ExpandShapeOp::create(
        rw, loc, RankedTensorType::get(shape, t.getElementType()), v,
        groups({2, 1, 1, 1}), sizes);
  };
  Value x = one(op.getDpsInputs()[0]), w = one(op.getDpsInputs()[1]),
        init = one(op.getDpsInits()[0]);
  auto grouped = linalg::Conv2DNgchwGfchwOp::create(
      rw, loc, TypeRange{init.getType()}, ValueRange{x, w}, ValueRange{init},
      op.getStrides(), op.getDilations());
  rw.replaceOpWithNewOp<tensor::CollapseShapeOp>(
      op, op.getResult(0).getType(), grouped.getResult(0), groups({2, 1, 1, 1}));
}

struct ConvToMatmulPass : mcc::impl::ConvToMatmulBase<ConvToMatmulPass> {
  using ConvToMatmulBase::ConvToMatmulBase;

  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> convs;
    SmallVector<linalg::Conv2DNchwFchwOp> direct;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (auto g = dyn_cast<linalg::Conv2DNgchwGfchwOp>(op.getOperation()))
        if (directConvs && runsDirect(g))
          return;
      if (auto c = dyn_cast<linalg::Conv2DNchwFchwOp>(op.getOperation()))
        if (directConvs && runsDirect(c)) {
          direct.push_back(c);
          return;
        }
      if (isa<linalg::Conv2DNchwFchwOp, linalg::Conv2DNgchwGfchwOp>(op))
        convs.push_back(op);
    });
    IRRewriter rw(&getContext());
    for (linalg::Conv2DNchwFchwOp op : direct)
      asOneGroup(rw, op);
    for (linalg::LinalgOp op : convs) {
      Value x = op.getDpsInputs()[0], w = op.getDpsInputs()[1];
      auto xs = cast<ShapedType>(x.getType()).getShape();
      auto ws = cast<ShapedType>(w.getType()).getShape();
      auto os = cast<ShapedType>(op.getDpsInits()[0].getType()).getShape();
      if (auto c = dyn_cast<linalg::Conv2DNchwFchwOp>(op.getOperation())) {
        ConvShape s{xs[0], 1,     xs[1], xs[2], xs[3], ws[0], ws[2],
                    ws[3], os[2], os[3], 0,     0,     0,     0,
                    false};
        (void)rewrite(rw, op, x, w, s, ints(c.getStrides()),
                      ints(c.getDilations()));
      } else {
        auto g = cast<linalg::Conv2DNgchwGfchwOp>(op.getOperation());
        ConvShape s{xs[0], xs[1], xs[2], xs[3], xs[4], ws[1], ws[3],
                    ws[4], os[3], os[4], 0,     0,     0,     0,
                    true};
        (void)rewrite(rw, op, x, w, s, ints(g.getStrides()),
                      ints(g.getDilations()));
      }
    }
  }
};

} // namespace
