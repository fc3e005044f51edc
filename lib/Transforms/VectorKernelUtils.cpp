//===- VectorKernelUtils.cpp - helpers of the CPU vector kernels ----------===//

#include "mcc/Transforms/VectorKernelUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
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

bool isModelWeight(Value v) {
  auto arg = dyn_cast_or_null<BlockArgument>(v);
  if (!arg)
    return false;
  auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  auto numInputs =
      fn ? fn->getAttrOfType<IntegerAttr>("mcc.num_inputs") : IntegerAttr();
  return numInputs && arg.getArgNumber() >= numInputs.getInt();
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

EpilogueRead readOf(AffineMap map) {
  if (map.isIdentity())
    return EpilogueRead::Full;
  return cast<AffineDimExpr>(map.getResult(0)).getPosition() == 0
             ? EpilogueRead::Row
             : EpilogueRead::Column;
}

/// What the product and convolution epilogue matchers share once they have
/// found `generic` after `kernel` (which writes `out` while reading the
/// buffers `readRoots`), with only `views` between them: none of the views
/// may use a value defined after the kernel; each of the generic's outputs
/// is written at its index without being read, unit-stride, and is `out`
/// itself or a buffer the kernel neither reads nor writes. On success the
/// views move before the kernel (or its `fill`); returns whether the
/// kernel must still store `out` (something else reads it).
static std::optional<bool> claimEpilogue(Operation *kernel, Operation *fill,
                                         linalg::GenericOp generic,
                                         ArrayRef<Operation *> views, Value out,
                                         ArrayRef<Value> readRoots) {
  for (Operation *view : views)
    for (Value v : view->getOperands())
      if (Operation *def = v.getDefiningOp();
          def && def->getBlock() == kernel->getBlock() &&
          kernel->isBeforeInBlock(def))
        return std::nullopt;
  Value outRoot = rootBuffer(out);
  bool writesOut = false;
  for (OpOperand &init : generic.getDpsInitsMutable()) {
    Value root = rootBuffer(init.get());
    if (!generic.getMatchingIndexingMap(&init).isIdentity() ||
        generic.payloadUsesValueFromOperand(&init) ||
        !hasUnitInnerStride(init.get()) ||
        llvm::is_contained(readRoots, root) ||
        (root == outRoot && init.get() != out))
      return std::nullopt;
    writesOut |= init.get() == out;
  }
  for (Operation *view : views)
    view->moveBefore(fill ? fill : kernel);
  SmallVector<Operation *> ops = {kernel, generic};
  if (fill)
    ops.push_back(fill);
  return !writesOut && readElsewhere(out, ops);
}

std::optional<ProductEpilogue> matchProductEpilogue(linalg::MatmulOp op,
                                                    Value c, Operation *fill) {
  SmallVector<Operation *> views;
  Operation *next = op->getNextNode();
  for (; next; next = next->getNextNode()) {
    if (isa<ViewLikeOpInterface>(next) && isPure(next)) {
      views.push_back(next);
      continue;
    }
    auto call = dyn_cast<func::CallOp>(next);
    if (call && call.getCallee() == "mcc_profile_mark")
      continue;
    break;
  }
  auto generic = dyn_cast_or_null<linalg::GenericOp>(next);
  if (!generic || !generic.hasPureBufferSemantics() ||
      generic.getNumLoops() != 2 || generic.getNumReductionLoops() != 0 ||
      generic.hasIndexSemantics() || !vectorizableBody(generic))
    return std::nullopt;
  std::optional<unsigned> cInput;
  for (OpOperand *in : generic.getDpsInputOperands()) {
    AffineMap map = generic.getMatchingIndexingMap(in);
    if (in->get() == c && map.isIdentity() && !cInput) {
      cInput = in->getOperandNumber();
      continue;
    }
    // C's other elements are not in memory yet in the last K block.
    if (rootBuffer(in->get()) == rootBuffer(c))
      return std::nullopt;
    auto type = dyn_cast<MemRefType>(in->get().getType());
    if (!type || !type.getElementType().isF32() ||
        !map.isProjectedPermutation())
      return std::nullopt;
    bool full = map.isIdentity();
    bool oneDim = map.getNumResults() == 1;
    if (!full && !oneDim)
      return std::nullopt;
    // Full and per-column inputs are read as vectors along the columns.
    if ((full || readOf(map) == EpilogueRead::Column) &&
        !hasUnitInnerStride(in->get()))
      return std::nullopt;
  }
  if (!cInput)
    return std::nullopt;
  // The epilogue writes its outputs while the product still reads A and B
  // (and C, for the K blocks of later column blocks).
  std::optional<bool> storeC = claimEpilogue(
      op, fill, generic, views, c,
      {rootBuffer(op.getDpsInputs()[0]), rootBuffer(op.getDpsInputs()[1])});
  if (!storeC)
    return std::nullopt;
  return ProductEpilogue{generic, *cInput, *storeC};
}

std::optional<ConvEpilogue> matchConvEpilogue(linalg::LinalgOp conv,
                                              Value input, Operation *fill,
                                              unsigned channelDims) {
  Value out = conv.getDpsInits()[0];
  auto outType = dyn_cast<MemRefType>(out.getType());
  if (!outType)
    return std::nullopt;
  SmallVector<Operation *> views;
  Operation *next = conv->getNextNode();
  for (; next && isa<ViewLikeOpInterface>(next) && isPure(next);
       next = next->getNextNode())
    views.push_back(next);
  auto generic = dyn_cast_or_null<linalg::GenericOp>(next);
  if (!generic || !generic.hasPureBufferSemantics() ||
      generic.getNumLoops() != outType.getRank() ||
      generic.getNumReductionLoops() != 0 || generic.hasIndexSemantics() ||
      !vectorizableBody(generic))
    return std::nullopt;
  Value inRoot = rootBuffer(input), wRoot = rootBuffer(conv.getDpsInputs()[1]),
        outRoot = rootBuffer(out);
  std::optional<unsigned> outInput;
  for (OpOperand *in : generic.getDpsInputOperands()) {
    AffineMap map = generic.getMatchingIndexingMap(in);
    if (in->get() == out && map.isIdentity() && !outInput) {
      outInput = in->getOperandNumber();
      continue;
    }
    // The rest of the output is not in memory yet.
    auto type = dyn_cast<MemRefType>(in->get().getType());
    if (rootBuffer(in->get()) == outRoot || !type ||
        !type.getElementType().isF32())
      return std::nullopt;
    if (map.isIdentity()) {
      if (!hasUnitInnerStride(in->get()))
        return std::nullopt;
      continue;
    }
    // Otherwise one value per channel: a bias, a squeeze-excite scale.
    for (AffineExpr e : map.getResults()) {
      auto d = dyn_cast<AffineDimExpr>(e);
      if (d ? d.getPosition() >= channelDims : !isa<AffineConstantExpr>(e))
        return std::nullopt;
    }
  }
  if (!outInput)
    return std::nullopt;
  // The generic writes while the convolution still reads its input.
  std::optional<bool> storeOut =
      claimEpilogue(conv, fill, generic, views, out, {inRoot, wRoot});
  if (!storeOut)
    return std::nullopt;
  return ConvEpilogue{generic, *outInput, *storeOut};
}

SmallVector<Value> applyConvEpilogue(OpBuilder &b, Location loc,
                                     const ConvEpilogue &epilogue, Value acc,
                                     ValueRange at, Value valid) {
  auto vecType = cast<VectorType>(acc.getType());
  auto vectorOf = [&](Value v) -> Value {
    if (isa<VectorType>(v.getType()))
      return v;
    return vector::BroadcastOp::create(
        b, loc, VectorType::get(vecType.getShape(), v.getType()), v);
  };
  linalg::GenericOp op = epilogue.op;
  Block *body = op.getBody();
  IRMapping map;
  for (OpOperand *in : op.getDpsInputOperands()) {
    Value v, mem = in->get();
    AffineMap indexing = op.getMatchingIndexingMap(in);
    if (in->getOperandNumber() == epilogue.outInput) {
      v = acc;
    } else if (indexing.isIdentity()) {
      v = valid
              ? vector::MaskedLoadOp::create(
                    b, loc, vecType, mem, at, valid,
                    arith::ConstantOp::create(
                        b, loc, vecType, DenseElementsAttr::get(vecType, 0.0f)))
                    .getResult()
              : vector::LoadOp::create(b, loc, vecType, mem, at).getResult();
    } else {
      SmallVector<Value, 5> indices;
      for (AffineExpr e : indexing.getResults())
        indices.push_back(
            isa<AffineDimExpr>(e)
                ? at[cast<AffineDimExpr>(e).getPosition()]
                : arith::ConstantIndexOp::create(
                      b, loc, cast<AffineConstantExpr>(e).getValue())
                      .getResult());
      v = memref::LoadOp::create(b, loc, mem, indices);
    }
    map.map(body->getArgument(in->getOperandNumber()), vectorOf(v));
  }
  for (Operation &inner : body->without_terminator()) {
    for (Value operand : inner.getOperands())
      if (!map.contains(operand))
        map.map(operand, vectorOf(operand));
    Operation *copy = b.clone(inner, map);
    for (OpResult r : copy->getResults())
      r.setType(VectorType::get(vecType.getShape(), r.getType()));
  }
  SmallVector<Value> results;
  for (Value y : body->getTerminator()->getOperands())
    results.push_back(vectorOf(map.lookupOrDefault(y)));
  return results;
}

SmallVector<Value> applyProductEpilogue(OpBuilder &b, Location loc,
                                        const ProductEpilogue &epilogue,
                                        Value value, Value row, Value col,
                                        Value mask) {
  auto vecType = dyn_cast<VectorType>(value.getType());
  auto vectorOf = [&](Value v) -> Value {
    if (!vecType || isa<VectorType>(v.getType()))
      return v;
    return vector::BroadcastOp::create(
        b, loc, VectorType::get(vecType.getShape(), v.getType()), v);
  };
  auto load = [&](Value mem, ValueRange at) -> Value {
    if (!vecType)
      return memref::LoadOp::create(b, loc, mem, at);
    if (!mask)
      return vector::LoadOp::create(b, loc, vecType, mem, at);
    Value zeros = arith::ConstantOp::create(
        b, loc, vecType, DenseElementsAttr::get(vecType, 0.0f));
    return vector::MaskedLoadOp::create(b, loc, vecType, mem, at, mask, zeros);
  };
  linalg::GenericOp op = epilogue.op;
  Block *body = op.getBody();
  IRMapping map;
  for (OpOperand *in : op.getDpsInputOperands()) {
    Value v, mem = in->get();
    if (in->getOperandNumber() == epilogue.cInput) {
      v = value;
    } else {
      switch (readOf(op.getMatchingIndexingMap(in))) {
      case EpilogueRead::Full:
        v = load(mem, ValueRange{row, col});
        break;
      case EpilogueRead::Row:
        v = memref::LoadOp::create(b, loc, mem, ValueRange{row});
        break;
      case EpilogueRead::Column:
        v = load(mem, ValueRange{col});
        break;
      }
    }
    map.map(body->getArgument(in->getOperandNumber()), vectorOf(v));
  }
  for (Operation &inner : body->without_terminator()) {
    if (vecType)
      for (Value operand : inner.getOperands())
        if (!map.contains(operand))
          map.map(operand, vectorOf(operand));
    Operation *copy = b.clone(inner, map);
    if (vecType)
      for (OpResult r : copy->getResults())
        r.setType(VectorType::get(vecType.getShape(), r.getType()));
  }
  SmallVector<Value> results;
  for (Value y : body->getTerminator()->getOperands())
    results.push_back(vectorOf(map.lookupOrDefault(y)));
  return results;
}

} // namespace mcc
