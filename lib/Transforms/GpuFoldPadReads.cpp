//===- GpuFoldPadReads.cpp - read padded buffers from their source --------===//
//
// On the GPU every loop nest is a kernel and every buffer a trip through
// device memory. A zero- or -inf-padded input of a convolution or pooling
// costs a fill of the whole padded buffer, a copy of the source into its
// window, and then the reads. Reading the source directly, guarded by the
// window's bounds, removes two kernels and two passes over the tensor per
// pad.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mcc {
#define GEN_PASS_DEF_GPUFOLDPADREADS
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

/// The padded buffer, how it is filled, and who reads it.
struct PaddedBuffer {
  memref::AllocOp buffer;
  scf::ParallelOp fill;
  TypedAttr padValue;
  memref::SubViewOp window;
  scf::ParallelOp copy;
  Value source;
  SmallVector<int64_t> offsets;
  SmallVector<int64_t> sizes;
  SmallVector<memref::LoadOp> reads;
  SmallVector<memref::DeallocOp> deallocs;
};

/// A nest from 0 to `shape` with step 1 and no reductions.
bool coversShape(scf::ParallelOp par, ArrayRef<int64_t> shape) {
  if (par.getNumReductions() != 0 || par.getNumLoops() != shape.size())
    return false;
  for (auto [lb, ub, step, size] :
       llvm::zip(par.getLowerBound(), par.getUpperBound(), par.getStep(),
                 shape))
    if (!matchPattern(lb, m_Zero()) || !matchPattern(step, m_One()) ||
        getConstantIntValue(ub) != size)
      return false;
  return true;
}

/// The ops of a nest's body, without its terminator.
SmallVector<Operation *> bodyOps(scf::ParallelOp par) {
  return llvm::map_to_vector(par.getBody()->without_terminator(),
                             [](Operation &op) { return &op; });
}

bool indexedByIvs(ValueRange indices, scf::ParallelOp par) {
  return llvm::equal(indices, par.getInductionVars());
}

/// The top-level nest that stores `value` into all of `buffer`, if `store`
/// is that nest's only op.
scf::ParallelOp matchFill(memref::StoreOp store, Block &top,
                          TypedAttr &value) {
  auto par = dyn_cast<scf::ParallelOp>(store->getParentOp());
  if (!par || par->getBlock() != &top ||
      bodyOps(par) != SmallVector<Operation *>{store} ||
      !indexedByIvs(store.getIndices(), par) ||
      !coversShape(par, store.getMemRefType().getShape()))
    return nullptr;
  Attribute attr;
  if (!matchPattern(store.getValue(), m_Constant(&attr)))
    return nullptr;
  value = dyn_cast<TypedAttr>(attr);
  return value ? par : nullptr;
}

/// The top-level nest `load source[ivs]; store window[ivs]` that fills
/// the window.
scf::ParallelOp matchCopy(memref::SubViewOp window, Block &top,
                          Value &source) {
  if (!window->hasOneUse())
    return nullptr;
  auto store = dyn_cast<memref::StoreOp>(*window->getUsers().begin());
  if (!store || store.getMemRef() != window.getResult())
    return nullptr;
  auto par = dyn_cast<scf::ParallelOp>(store->getParentOp());
  if (!par || par->getBlock() != &top)
    return nullptr;
  auto load = store.getValue().getDefiningOp<memref::LoadOp>();
  if (!load || bodyOps(par) != SmallVector<Operation *>{load, store} ||
      !indexedByIvs(load.getIndices(), par) ||
      !indexedByIvs(store.getIndices(), par) ||
      !coversShape(par, window.getType().getShape()))
    return nullptr;
  source = load.getMemRef();
  // The source must be visible where the reads are: defined at top level.
  if (Operation *def = source.getDefiningOp(); def && def->getBlock() != &top)
    return nullptr;
  if (auto arg = dyn_cast<BlockArgument>(source); arg && arg.getOwner() != &top)
    return nullptr;
  return par;
}

/// The first top-level op after `after` that may write the memory `source`
/// views (through any view of its root buffer), or null.
Operation *firstClobberAfter(Value source, Operation *after, Block &top) {
  Value root = source;
  while (auto view = root.getDefiningOp<ViewLikeOpInterface>())
    root = view.getViewSource();
  SmallVector<Value> aliases = {root};
  Operation *first = nullptr;
  for (size_t i = 0; i < aliases.size(); ++i)
    for (Operation *user : aliases[i].getUsers()) {
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == aliases[i]) {
        aliases.push_back(view->getResult(0));
        continue;
      }
      if (isa<memref::LoadOp>(user))
        continue;
      Operation *at = top.findAncestorOpInBlock(*user);
      if (at && after->isBeforeInBlock(at) &&
          (!first || at->isBeforeInBlock(first)))
        first = at;
    }
  return first;
}

std::optional<PaddedBuffer> matchPaddedBuffer(memref::AllocOp alloc,
                                              Block &top) {
  MemRefType type = alloc.getType();
  if (!type.hasStaticShape() || !type.getLayout().isIdentity())
    return std::nullopt;
  PaddedBuffer pad;
  pad.buffer = alloc;
  for (Operation *user : alloc->getUsers()) {
    if (auto store = dyn_cast<memref::StoreOp>(user)) {
      if (pad.fill || store.getMemRef() != alloc.getResult())
        return std::nullopt;
      pad.fill = matchFill(store, top, pad.padValue);
      if (!pad.fill)
        return std::nullopt;
    } else if (auto view = dyn_cast<memref::SubViewOp>(user)) {
      if (pad.window || !view.hasUnitStride() ||
          ShapedType::isDynamicShape(view.getStaticOffsets()) ||
          ShapedType::isDynamicShape(view.getStaticSizes()) ||
          view.getType().getRank() != type.getRank())
        return std::nullopt;
      pad.window = view;
      pad.copy = matchCopy(view, top, pad.source);
      if (!pad.copy)
        return std::nullopt;
      pad.offsets = llvm::to_vector(view.getStaticOffsets());
      pad.sizes = llvm::to_vector(view.getStaticSizes());
    } else if (auto load = dyn_cast<memref::LoadOp>(user)) {
      pad.reads.push_back(load);
    } else if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
      pad.deallocs.push_back(dealloc);
    } else {
      return std::nullopt;
    }
  }
  if (!pad.fill || !pad.copy || pad.reads.empty() ||
      !pad.fill->isBeforeInBlock(pad.copy))
    return std::nullopt;
  // Every read sees the finished buffer, and the source still holds what
  // was copied.
  Operation *clobber = firstClobberAfter(pad.source, pad.copy, top);
  for (memref::LoadOp read : pad.reads) {
    Operation *at = top.findAncestorOpInBlock(*read);
    if (!at || !pad.copy->isBeforeInBlock(at) ||
        (clobber && !at->isBeforeInBlock(clobber)))
      return std::nullopt;
  }
  return pad;
}

/// buffer[idx] becomes select(idx in window, source[clamp(idx - offset)],
/// pad value).
void rewriteRead(memref::LoadOp read, PaddedBuffer &pad) {
  OpBuilder b(read);
  Location loc = read.getLoc();
  ArrayRef<int64_t> full =
      cast<MemRefType>(pad.buffer.getResult().getType()).getShape();
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value inWindow;
  SmallVector<Value> indices;
  for (auto [d, idx] : llvm::enumerate(read.getIndices())) {
    int64_t offset = pad.offsets[d], size = pad.sizes[d];
    if (offset == 0 && size == full[d]) {
      indices.push_back(idx);
      continue;
    }
    Value shifted =
        offset ? arith::SubIOp::create(b, loc, idx, index(offset)) : idx;
    Value zero = index(0), bound = index(size);
    Value above = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                        shifted, zero);
    Value below = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                        shifted, bound);
    Value inside = arith::AndIOp::create(b, loc, above, below);
    inWindow = inWindow ? arith::AndIOp::create(b, loc, inWindow, inside)
                        : inside;
    // The load runs for every index: keep it inside the source.
    Value clamped = arith::MaxSIOp::create(
        b, loc, arith::MinSIOp::create(b, loc, shifted, index(size - 1)),
        zero);
    indices.push_back(clamped);
  }
  Value value = memref::LoadOp::create(b, loc, pad.source, indices);
  if (inWindow) {
    Value padValue = arith::ConstantOp::create(b, loc, pad.padValue);
    value = arith::SelectOp::create(b, loc, inWindow, value, padValue);
  }
  read.replaceAllUsesWith(value);
  read.erase();
}

struct GpuFoldPadReadsPass
    : mcc::impl::GpuFoldPadReadsBase<GpuFoldPadReadsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &top = func.getBody().front();
    SmallVector<memref::AllocOp> allocs;
    for (auto alloc : top.getOps<memref::AllocOp>())
      allocs.push_back(alloc);
    for (memref::AllocOp alloc : allocs) {
      std::optional<PaddedBuffer> pad = matchPaddedBuffer(alloc, top);
      if (!pad)
        continue;
      for (memref::LoadOp read : pad->reads)
        rewriteRead(read, *pad);
      pad->copy.erase();
      pad->window.erase();
      pad->fill.erase();
      for (memref::DeallocOp dealloc : pad->deallocs)
        dealloc.erase();
      alloc.erase();
    }
  }
};

} // namespace
