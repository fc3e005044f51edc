//===- CollapseContiguousLoops.cpp - trailing loops over contiguous memory
//-===//
//
// A generic on buffers whose trailing loops walk memory that is contiguous
// in every operand (a 7 x 7 or 14 x 14 image plane) has them collapsed into
// one loop before it becomes loops: LLVM vectorizes an innermost loop of
// 49, but a loop of 7 inside a loop of 7 stays mostly scalar. A global
// average pool over 960 x 7 x 7 took 0.016 ms that way (0.004 collapsed),
// squeeze-excite's per-channel scale of 960 x 7 x 7 0.016 ms.
// Collapsed: two or more trailing reduction loops, or trailing parallel
// loops of a generic without reductions; an operand that does not read a
// collapsed loop (a per-channel gate) is left as it is.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/SmallBitVector.h"

namespace mcc {
#define GEN_PASS_DEF_COLLAPSECONTIGUOUSLOOPS
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

/// Whether collapsing loops [first, n) into one keeps every operand a valid
/// memref.collapse_shape: the loops appear together (or not at all) in
/// each indexing map, and the memory they index is contiguous.
bool collapsible(linalg::GenericOp op, unsigned first, unsigned n) {
  SmallVector<ReassociationIndices> loops;
  for (unsigned i = 0; i < first; ++i)
    loops.push_back({static_cast<int64_t>(i)});
  ReassociationIndices trailing;
  for (unsigned i = first; i < n; ++i)
    trailing.push_back(i);
  loops.push_back(trailing);
  // (collapseOpIterationDims takes only maps of loop dims.)
  if (!llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isProjectedPermutation(); }) ||
      !linalg::areDimSequencesPreserved(op.getIndexingMapsArray(), loops))
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      return false;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    // The operand's dims that the collapsed loops index, as one group.
    SmallVector<ReassociationIndices> dims;
    for (unsigned r = 0; r < map.getNumResults(); ++r) {
      auto d = dyn_cast<AffineDimExpr>(map.getResult(r));
      if (d && d.getPosition() > first && !dims.empty())
        dims.back().push_back(r);
      else
        dims.push_back({static_cast<int64_t>(r)});
    }
    if (!memref::CollapseShapeOp::isGuaranteedCollapsible(type, dims))
      return false;
  }
  return true;
}

/// `op` with each input that a map reads at constant 0 in unit dims (a
/// per-channel gate of 1 x C x 1 x 1 read at (n, c, 0, 0)) replaced by a
/// rank-reduced view without those dims, read by the map's other results.
linalg::GenericOp dropUnitConstantReads(linalg::GenericOp op,
                                        RewriterBase &rewriter) {
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  bool changed = false;
  for (OpOperand *in : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(in);
    auto type = dyn_cast<MemRefType>(in->get().getType());
    SmallVector<AffineExpr> kept;
    llvm::SmallBitVector dropped(map.getNumResults());
    for (unsigned r = 0; r < map.getNumResults(); ++r) {
      auto c = dyn_cast<AffineConstantExpr>(map.getResult(r));
      if (c && c.getValue() == 0 && type && type.getDimSize(r) == 1)
        dropped.set(r);
      else
        kept.push_back(map.getResult(r));
    }
    if (dropped.none() || !type) {
      inputs.push_back(in->get());
      maps.push_back(map);
      continue;
    }
    changed = true;
    rewriter.setInsertionPoint(op);
    int64_t rank = type.getRank();
    SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0)),
        strides(rank, rewriter.getIndexAttr(1));
    SmallVector<OpFoldResult> sizes =
        memref::getMixedSizes(rewriter, op.getLoc(), in->get());
    SmallVector<int64_t> shape;
    for (unsigned r = 0; r < rank; ++r)
      if (!dropped.test(r))
        shape.push_back(type.getDimSize(r));
    auto reduced = memref::SubViewOp::inferRankReducedResultType(
        shape, type, offsets, sizes, strides);
    inputs.push_back(memref::SubViewOp::create(
        rewriter, op.getLoc(), cast<MemRefType>(reduced), in->get(), offsets,
        sizes, strides));
    maps.push_back(AffineMap::get(map.getNumDims(), 0, kept, op.getContext()));
  }
  if (!changed)
    return op;
  SmallVector<Value> outputs(op.getDpsInits());
  for (OpOperand &out : op.getDpsInitsMutable())
    maps.push_back(op.getMatchingIndexingMap(&out));
  auto replacement =
      linalg::GenericOp::create(rewriter, op.getLoc(), TypeRange{}, inputs,
                                outputs, maps, op.getIteratorTypesArray());
  rewriter.inlineRegionBefore(op.getRegion(), replacement.getRegion(),
                              replacement.getRegion().begin());
  rewriter.eraseOp(op);
  return replacement;
}

void collapseTrailingLoops(linalg::GenericOp op, RewriterBase &rewriter) {
  if (!op.hasPureBufferSemantics() || op.hasIndexSemantics())
    return;
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  unsigned n = iters.size(), first = n;
  bool reduction = n > 0 && iters.back() == utils::IteratorType::reduction;
  if (!reduction && op.getNumReductionLoops() != 0)
    return;
  while (first > 0 && iters[first - 1] == iters.back())
    --first;
  if (first + 1 >= n)
    return;
  op = dropUnitConstantReads(op, rewriter);
  // The longest collapsible run of trailing loops.
  while (first + 1 < n && !collapsible(op, first, n))
    ++first;
  if (first + 1 >= n)
    return;
  SmallVector<ReassociationIndices> loops;
  for (unsigned i = 0; i < first; ++i)
    loops.push_back({static_cast<int64_t>(i)});
  ReassociationIndices trailing;
  for (unsigned i = first; i < n; ++i)
    trailing.push_back(i);
  loops.push_back(trailing);
  rewriter.setInsertionPoint(op);
  if (succeeded(linalg::collapseOpIterationDims(op, loops, rewriter)))
    rewriter.eraseOp(op);
}

struct CollapseContiguousLoopsPass
    : mcc::impl::CollapseContiguousLoopsBase<CollapseContiguousLoopsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp op : generics)
      collapseTrailingLoops(op, rewriter);
  }
};

} // namespace
