//===- VectorKernelUtils.cpp - helpers of the CPU vector kernels ----------===//

#include "mcc/Transforms/VectorKernelUtils.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace mcc {

// Padding K costs the most: a product of few steps is bound by moving C
// through the tiles, and K = 16 (mobilenetv3's first expansion) ran 1.4
// times slower, K = 24 and 72 (padded to 32 and 96) 1.2-2 times; K = 112
// (128) ran 1.5 times faster, K = 80 (96) no faster. Padding rows and
// columns costs only the multiplies: N = 49 (a 7 x 7 image, 64 columns)
// runs 1.5 times faster on the tiles than on the AVX-512 kernels, once its
// B is packed once per tile loop (or its A, Winograd's weights, laid out at
// compile time), and so do column tiles of 98 (112).
bool amxTileable(int64_t m, int64_t n, int64_t k) {
  constexpr int64_t tileRows = 16, tileK = 32, tileCols = 16;
  auto roundUp = [](int64_t v, int64_t to) { return (v + to - 1) / to * to; };
  if (m < tileRows || n < tileRows || k <= 0)
    return false;
  int64_t paddedMN = roundUp(m, tileRows) * roundUp(n, tileCols);
  return roundUp(k, tileK) * 6 <= k * 7 && paddedMN * 3 <= m * n * 4;
}

bool hasUnitInnerStride(Value v) {
  auto t = dyn_cast<MemRefType>(v.getType());
  if (!t || !t.getElementType().isF32())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(t.getStridesAndOffset(strides, offset)))
    return false;
  return !strides.empty() && strides.back() == 1;
}

bool knownMultiple(OpFoldResult offset, int64_t m) {
  if (std::optional<int64_t> c = getConstantIntValue(offset))
    return *c % m == 0;
  auto arg = dyn_cast<BlockArgument>(cast<Value>(offset));
  if (!arg)
    return false;
  auto forall = dyn_cast<scf::ForallOp>(arg.getOwner()->getParentOp());
  if (!forall || arg.getArgNumber() >= forall.getRank())
    return false;
  std::optional<int64_t> lb =
      getConstantIntValue(forall.getMixedLowerBound()[arg.getArgNumber()]);
  std::optional<int64_t> step =
      getConstantIntValue(forall.getMixedStep()[arg.getArgNumber()]);
  return lb && step && *lb % m == 0 && *step % m == 0;
}

Value rootBuffer(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

bool readElsewhere(Value v, ArrayRef<Operation *> ops) {
  Value root = rootBuffer(v);
  if (!root.getDefiningOp<memref::AllocOp>() &&
      !root.getDefiningOp<memref::AllocaOp>())
    return true;
  SmallVector<Value> aliases = {root};
  for (size_t i = 0; i < aliases.size(); ++i)
    for (Operation *user : aliases[i].getUsers()) {
      if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
        if (view.getViewSource() == aliases[i])
          llvm::append_range(aliases, user->getResults());
        continue;
      }
      if (isa<memref::DeallocOp>(user) || llvm::is_contained(ops, user))
        continue;
      return true;
    }
  return false;
}

bool vectorizableBody(linalg::GenericOp op) {
  for (Operation &inner : op.getBody()->without_terminator()) {
    if (inner.getNumRegions() || !OpTrait::hasElementwiseMappableTraits(&inner))
      return false;
    for (Type t : llvm::concat<const Type>(inner.getOperandTypes(),
                                           inner.getResultTypes()))
      if (!t.isIntOrFloat())
        return false;
  }
  return true;
}

SmallVector<int64_t> intsOf(DenseIntElementsAttr a) {
  return llvm::to_vector(a.getValues<int64_t>());
}

Value beginParallelLoop(OpBuilder &b, Location loc, int64_t count) {
  auto loop = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(count)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)}, ValueRange{}, std::nullopt);
  Block *body = loop.getBody();
  if (body->empty() || !isa<scf::InParallelOp>(body->back())) {
    b.setInsertionPointToEnd(body);
    scf::InParallelOp::create(b, loc);
  }
  b.setInsertionPoint(body->getTerminator());
  return loop.getInductionVar(0);
}

void VectorKernelBuilder::forLoop(Value lo, Value hi, int64_t step,
                                  llvm::function_ref<void(Value)> body) {
  scf::ForOp::create(b, loc, lo, hi, idx(step), ValueRange{},
                     [&](OpBuilder &, Location, Value iv, ValueRange) {
                       body(iv);
                       scf::YieldOp::create(b, loc);
                     });
}

Value VectorKernelBuilder::zeros(VectorType t) {
  return arith::ConstantOp::create(b, loc, t, DenseElementsAttr::get(t, 0.0f));
}

Value VectorKernelBuilder::mask(VectorType t, Value count) {
  return vector::CreateMaskOp::create(
      b, loc, VectorType::get(t.getShape(), b.getI1Type()), ValueRange{count});
}

Value VectorKernelBuilder::loadStrided(Value x, ValueRange at, int64_t lanes,
                                       int64_t stride, Value left) {
  auto wideType = VectorType::get({lanes * stride}, b.getF32Type());
  return loadStridedMasked(x, at, lanes, stride,
                           left ? mask(wideType, left) : Value());
}

Value VectorKernelBuilder::loadStridedMasked(Value x, ValueRange at,
                                             int64_t lanes, int64_t stride,
                                             Value wideMask) {
  auto wideType = VectorType::get({lanes * stride}, b.getF32Type());
  Value wide =
      wideMask ? vector::MaskedLoadOp::create(b, loc, wideType, x, at, wideMask,
                                              zeros(wideType))
                     .getResult()
               : vector::LoadOp::create(b, loc, wideType, x, at).getResult();
  if (stride == 1)
    return wide;
  SmallVector<int64_t> every;
  for (int64_t i = 0; i < lanes; ++i)
    every.push_back(i * stride);
  return vector::ShuffleOp::create(b, loc, wide, wide, every);
}

VectorKernelBuilder::RowSpans
VectorKernelBuilder::rowSpans(Value inWidth, Value outWidth, int64_t kw,
                              int64_t dw, int64_t sw, int64_t colOffset,
                              int64_t lanes, int64_t vectors) {
  // Outputs whose `sw`-float input blocks all lie inside the row: their
  // wide loads need no mask.
  Value span =
      arith::SubIOp::create(b, loc, inWidth, idx((kw - 1) * dw + colOffset));
  Value safe = arith::MaxSIOp::create(
      b, loc, arith::DivSIOp::create(b, loc, span, idx(sw)), idx(0));
  safe = arith::MinSIOp::create(b, loc, safe, outWidth);
  // With padding on the left the first vector of each row is the edge one;
  // the blocks start after it.
  Value start =
      arith::MinSIOp::create(b, loc, idx(colOffset < 0 ? lanes : 0), outWidth);
  Value room = arith::MaxSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, safe, start), idx(0));
  Value blockEnd =
      arith::AddIOp::create(b, loc, start, roundDown(room, lanes * vectors));
  Value vecEnd = arith::AddIOp::create(
      b, loc, blockEnd,
      roundDown(
          arith::MaxSIOp::create(
              b, loc, arith::SubIOp::create(b, loc, safe, blockEnd), idx(0)),
          lanes));
  return {start, blockEnd, vecEnd};
}

std::pair<Value, Value> VectorKernelBuilder::rowsInside(Value inHeight,
                                                        Value outHeight,
                                                        Value rowOffset,
                                                        int64_t kh, int64_t dh,
                                                        int64_t sh) {
  Value top = arith::CeilDivSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, idx(0), rowOffset), idx(sh));
  top = arith::MinSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, top, idx(0)), outHeight);
  Value lastStart = arith::SubIOp::create(
      b, loc, arith::SubIOp::create(b, loc, inHeight, idx(1 + (kh - 1) * dh)),
      rowOffset);
  Value bottom = arith::AddIOp::create(
      b, loc, arith::FloorDivSIOp::create(b, loc, lastStart, idx(sh)), idx(1));
  bottom = arith::MinSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, bottom, top), outHeight);
  return {top, bottom};
}

Value VectorKernelBuilder::loadLeftEdge(Value x, ValueRange at, Value inWidth,
                                        int64_t iw, int64_t lanes,
                                        int64_t stride) {
  auto wideType = VectorType::get({lanes * stride}, b.getF32Type());
  Value inside = arith::AndIOp::create(
      b, loc, mask(wideType, arith::SubIOp::create(b, loc, inWidth, idx(iw))),
      arith::XOrIOp::create(
          b, loc, mask(wideType, idx(-iw)),
          arith::ConstantOp::create(
              b, loc,
              DenseElementsAttr::get(
                  VectorType::get({lanes * stride}, b.getI1Type()), true))));
  SmallVector<Value, 5> indices(at.begin(), at.end());
  indices.push_back(idx(iw));
  return loadStridedMasked(x, indices, lanes, stride, inside);
}

scf::IfOp VectorKernelBuilder::ifRowInside(Value row, Value height,
                                           ValueRange values) {
  Value inside = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, row, idx(0)),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, row, height));
  auto op = scf::IfOp::create(b, loc, TypeRange(values), inside,
                              /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(op.elseBlock());
  scf::YieldOp::create(b, loc, values);
  return op;
}

} // namespace mcc
