//===- PaddedInput.cpp - padded convolution inputs read in place ----------===//

#include "mcc/Transforms/PaddedInput.h"
#include "mcc/Transforms/VectorKernelUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace mcc {

namespace {

bool sourceSurvives(const PaddedInput &p, Operation *copy);

bool isZeroFill(Operation *op, Value target) {
  auto fill = dyn_cast<linalg::FillOp>(op);
  return fill && fill.hasPureBufferSemantics() &&
         fill.getDpsInits()[0] == target &&
         matchPattern(fill.value(), m_AnyZeroFloat());
}

/// The copy's source if `op` copies a whole buffer into `target`.
Value copiedInto(Operation *op, Value target) {
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    return copy.getTarget() == target ? copy.getSource() : Value();
  if (auto copy = dyn_cast<linalg::CopyOp>(op))
    if (copy.hasPureBufferSemantics() && copy.getDpsInits()[0] == target)
      return copy.getDpsInputs()[0];
  return {};
}

} // namespace

std::optional<PaddedInput>
findPaddedInput(memref::AllocOp alloc,
                const llvm::DenseSet<Operation *> &convs) {
  auto type = alloc.getType();
  if ((type.getRank() != 4 && type.getRank() != 5) || !type.hasStaticShape() ||
      !type.getElementType().isF32())
    return std::nullopt;
  PaddedInput p;
  p.alloc = alloc;
  Block *block = alloc->getBlock();
  Operation *copy = nullptr;
  for (Operation *user : alloc->getUsers()) {
    if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
      if (p.dealloc || dealloc->getBlock() != block)
        return std::nullopt;
      p.dealloc = dealloc;
      continue;
    }
    auto view = dyn_cast<memref::SubViewOp>(user);
    if (!view || !view.hasUnitStride() ||
        view.getType().getRank() != type.getRank())
      return std::nullopt;
    Value viewed = view.getResult();
    if (llvm::all_of(viewed.getUsers(), [&](Operation *op) {
          return convs.contains(op) && op->getOperand(0) == viewed;
        })) {
      p.reads.push_back(view);
      continue;
    }
    if (!viewed.hasOneUse())
      return std::nullopt;
    Operation *write = *viewed.getUsers().begin();
    if (write->getBlock() != block)
      return std::nullopt;
    if (isZeroFill(write, viewed)) {
      p.writes.push_back(write);
      continue;
    }
    Value source = copiedInto(write, viewed);
    if (!source || copy || !hasUnitInnerStride(source) ||
        cast<MemRefType>(source.getType()).getShape() !=
            view.getType().getShape() ||
        ShapedType::isDynamicShape(view.getStaticOffsets()))
      return std::nullopt;
    copy = write;
    p.source = source;
    p.low = llvm::to_vector(view.getStaticOffsets());
    p.writes.push_back(write);
  }
  if (!copy || p.reads.empty() || !p.dealloc)
    return std::nullopt;
  // Padding in H and W only: the kernels index the leading dims as given.
  auto sourceShape = cast<MemRefType>(p.source.getType()).getShape();
  for (int64_t d = 0, e = type.getRank() - 2; d < e; ++d)
    if (p.low[d] != 0 || sourceShape[d] != type.getDimSize(d))
      return std::nullopt;
  // Zeros first, then the interior, then the readers.
  for (Operation *write : p.writes)
    if (write != copy && !write->isBeforeInBlock(copy))
      return std::nullopt;
  for (memref::SubViewOp view : p.reads)
    for (Operation *conv : view->getUsers()) {
      Operation *top = block->findAncestorOpInBlock(*conv);
      if (!top || !copy->isBeforeInBlock(top))
        return std::nullopt;
    }
  if (!sourceSurvives(p, copy))
    return std::nullopt;
  return p;
}

namespace {

/// Whether `op` may write `v` (one of the buffer's views): a linalg op
/// reading it only as an input, a copy out of it, a view or a dealloc do
/// not; anything else might.
bool mayWrite(Operation *op, Value v) {
  if (isa<ViewLikeOpInterface, memref::DeallocOp>(op))
    return false;
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    return copy.getTarget() == v;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return llvm::is_contained(linalgOp.getDpsInits(), v);
  if (isa<memref::LoadOp>(op))
    return false;
  return true;
}

/// Whether the source keeps its values from the copy to the last read:
/// bufferization may hand a dead buffer to a later op (even to the
/// convolution's own output), and the source is dead after the copy as far
/// as it knows.
bool sourceSurvives(const PaddedInput &p, Operation *copy) {
  Block *block = p.alloc->getBlock();
  Operation *last = copy;
  for (memref::SubViewOp view : p.reads)
    for (Operation *conv : view->getUsers())
      if (Operation *top = block->findAncestorOpInBlock(*conv);
          top && last->isBeforeInBlock(top))
        last = top;
  Value root = rootBuffer(p.source);
  SmallVector<Value> aliases = {root};
  for (size_t i = 0; i < aliases.size(); ++i)
    for (Operation *user : aliases[i].getUsers()) {
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        if (view.getViewSource() == aliases[i])
          llvm::append_range(aliases, user->getResults());
      if (user == copy || !mayWrite(user, aliases[i]))
        continue;
      Operation *top = block->findAncestorOpInBlock(*user);
      if (!top)
        return false;
      if (top == last ||
          (copy->isBeforeInBlock(top) && top->isBeforeInBlock(last)))
        return false;
    }
  return true;
}

} // namespace

void erasePaddedInput(PaddedInput &p) {
  Value root = rootBuffer(p.source);
  for (Operation *user : root.getUsers())
    if (auto dealloc = dyn_cast<memref::DeallocOp>(user);
        dealloc && dealloc->getBlock() == p.dealloc->getBlock() &&
        dealloc->isBeforeInBlock(p.dealloc))
      dealloc->moveBefore(p.dealloc);
  for (Operation *write : p.writes) {
    Value view = write->getOperand(write->getNumOperands() - 1);
    if (auto mark = dyn_cast_or_null<func::CallOp>(write->getPrevNode());
        mark && mark.getCallee() == "mcc_profile_mark")
      mark->erase();
    write->erase();
    if (Operation *def = view.getDefiningOp(); def && def->use_empty())
      def->erase();
  }
  for (memref::SubViewOp view : p.reads)
    if (view->use_empty())
      view->erase();
  p.dealloc->erase();
  if (p.alloc->use_empty())
    p.alloc->erase();
}

Value sourceTileOf(OpBuilder &b, Location loc, const PaddedInput &p,
                   memref::SubViewOp view, Value &rowOffset,
                   std::optional<int64_t> &colOffset) {
  unsigned rank = p.low.size(), h = rank - 2, w = rank - 1;
  SmallVector<OpFoldResult> offsets = view.getMixedOffsets(),
                            sizes = view.getMixedSizes();
  offsets[h] = offsets[w] = b.getIndexAttr(0);
  sizes[h] = memref::getMixedSize(b, loc, p.source, h);
  sizes[w] = memref::getMixedSize(b, loc, p.source, w);
  // Folded, so that a static window's row offset is a constant.
  rowOffset = b.createOrFold<arith::SubIOp>(
      loc, getValueOrCreateConstantIndexOp(b, loc, view.getMixedOffsets()[h]),
      arith::ConstantIndexOp::create(b, loc, p.low[h]));
  colOffset = getConstantIntValue(view.getMixedOffsets()[w]);
  if (colOffset)
    *colOffset -= p.low[w];
  return memref::SubViewOp::create(
      b, loc, p.source, offsets, sizes,
      SmallVector<OpFoldResult>(rank, b.getIndexAttr(1)));
}

} // namespace mcc
