//===- GpuDistributeLoops.cpp - loop nests onto GPU blocks and threads ----===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mcc {
#define GEN_PASS_DEF_GPUDISTRIBUTELOOPS
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

bool touchesMemory(Operation *op) {
  bool touches = false;
  op->walk([&](Operation *inner) {
    if (isa<memref::LoadOp, memref::StoreOp>(inner))
      touches = true;
  });
  return touches;
}

gpu::ParallelLoopDimMappingAttr dimMap(MLIRContext *ctx,
                                       gpu::Processor processor) {
  AffineMap id = AffineMap::getMultiDimIdentityMap(1, ctx);
  return gpu::ParallelLoopDimMappingAttr::get(ctx, processor, id, id);
}

/// `first` and the top-level ops after it that must run in the same kernel
/// because they use values it (or they) define. Allocations and constants
/// in between, which use nothing of the group, move before `first` instead.
FailureOr<SmallVector<Operation *>> sequentialGroup(Operation *first) {
  Block *body = first->getBlock();
  SmallVector<Operation *> group = {first};
  llvm::SmallPtrSet<Operation *, 16> inGroup = {first};
  auto usesGroup = [&](Operation *op) {
    bool uses = false;
    op->walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (Operation *def = v.getDefiningOp())
          if (Operation *top = body->findAncestorOpInBlock(*def))
            uses |= inGroup.contains(top);
    });
    return uses;
  };
  Operation *last = first;
  while (true) {
    Operation *furthest = last;
    for (Operation *op : group)
      for (Operation *user : op->getUsers()) {
        Operation *top = body->findAncestorOpInBlock(*user);
        if (top && furthest->isBeforeInBlock(top))
          furthest = top;
      }
    if (furthest == last)
      return group;
    if (furthest->hasTrait<OpTrait::IsTerminator>())
      return first->emitError(
          "mcc-gpu-distribute: a value computed on the GPU is returned");
    for (Operation *op = last->getNextNode(); op != furthest->getNextNode();) {
      Operation *next = op->getNextNode();
      if (op->getNumRegions() == 0 && !usesGroup(op) &&
          (isa<memref::AllocOp, arith::ConstantOp>(op) ||
           isMemoryEffectFree(op))) {
        op->moveBefore(first);
      } else {
        group.push_back(op);
        inGroup.insert(op);
      }
      op = next;
    }
    last = furthest;
  }
}

/// Reorders the dimensions of `par` so that the one indexing the innermost
/// dimension of the nest's (first) store comes last: collapsing then gives
/// consecutive threads consecutive addresses. linalg emits parallel loops in
/// iterator order, which for a depthwise convolution over NCHW data is
/// (n, oh, ow, c): threads 0, 1, 2 would write 112 x 112 floats apart.
scf::ParallelOp orderForCoalescing(RewriterBase &rewriter,
                                   scf::ParallelOp par) {
  if (par.getNumLoops() < 2 || par.getNumReductions() != 0)
    return par;
  memref::StoreOp store;
  par.walk([&](memref::StoreOp s) {
    if (!store)
      store = s;
  });
  if (!store)
    return par;
  SmallVector<Value> ivs = llvm::to_vector_of<Value>(par.getInductionVars());
  SmallVector<int64_t> position(ivs.size(), -1);
  for (auto [d, index] : llvm::enumerate(store.getIndices()))
    for (auto [i, iv] : llvm::enumerate(ivs))
      if (index == iv)
        position[i] = d;
  SmallVector<unsigned> order = llvm::to_vector(llvm::seq<unsigned>(0, ivs.size()));
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    return position[a] < position[b];
  });
  if (llvm::is_sorted(order))
    return par;
  auto permuted = [&](ValueRange values) {
    return llvm::map_to_vector(order, [&](unsigned i) { return values[i]; });
  };
  rewriter.setInsertionPoint(par);
  auto reordered = scf::ParallelOp::create(
      rewriter, par.getLoc(), permuted(par.getLowerBound()),
      permuted(par.getUpperBound()), permuted(par.getStep()),
      [&](OpBuilder &b, Location, ValueRange newIvs) {
        IRMapping mapping;
        for (auto [newPos, oldPos] : llvm::enumerate(order))
          mapping.map(ivs[oldPos], newIvs[newPos]);
        for (Operation &op : par.getBody()->without_terminator())
          b.clone(op, mapping);
      });
  rewriter.eraseOp(par);
  return reordered;
}

struct GpuDistributeLoopsPass
    : mcc::impl::GpuDistributeLoopsBase<GpuDistributeLoopsPass> {
  using GpuDistributeLoopsBase::GpuDistributeLoopsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *ctx = &getContext();
    if (func.isExternal())
      return;
    IRRewriter rewriter(ctx);
    Block &body = func.getBody().front();

    // Sequential top-level work becomes a one-iteration parallel loop. Work
    // that yields values (a full reduction's scf.for, a scalar load) takes
    // every later op that uses them along, up to where nothing it defines is
    // used outside: host code cannot read device memory.
    SmallVector<Operation *> topLevel =
        llvm::map_to_vector(body, [](Operation &op) { return &op; });
    for (Operation *op : topLevel) {
      Operation &first = *op;
      if (first.getBlock() != &body || isa<scf::ParallelOp>(first) ||
          first.hasTrait<OpTrait::IsTerminator>())
        continue;
      if (!isa<scf::ForOp, memref::LoadOp, memref::StoreOp>(first) ||
          !touchesMemory(&first))
        continue;
      FailureOr<SmallVector<Operation *>> group = sequentialGroup(&first);
      if (failed(group))
        return signalPassFailure();
      rewriter.setInsertionPoint(&first);
      Location loc = first.getLoc();
      Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
      Value c1 = arith::ConstantIndexOp::create(rewriter, loc, 1);
      auto par = scf::ParallelOp::create(rewriter, loc, ValueRange{c0},
                                         ValueRange{c1}, ValueRange{c1});
      for (Operation *op : *group)
        op->moveBefore(par.getBody()->getTerminator());
    }

    SmallVector<scf::ParallelOp> loops;
    for (Operation &op : body)
      if (auto par = dyn_cast<scf::ParallelOp>(op))
        loops.push_back(par);
    for (scf::ParallelOp par : loops) {
      par = orderForCoalescing(rewriter, par);
      // Collapse to one dimension so that any rank fills whole blocks.
      if (par.getNumLoops() > 1) {
        std::vector<unsigned> all;
        for (unsigned i = 0; i < par.getNumLoops(); ++i)
          all.push_back(i);
        Operation *next = par->getNextNode();
        rewriter.setInsertionPoint(par);
        collapseParallelLoops(rewriter, par, {all});
        par = dyn_cast_or_null<scf::ParallelOp>(next->getPrevNode());
        if (!par || par.getNumLoops() != 1) {
          func.emitError("mcc-gpu-distribute: cannot collapse a loop nest");
          return signalPassFailure();
        }
      }
      auto [outer, inner] = scf::tileParallelLoop(
          par, ArrayRef<int64_t>{blockSize}, /*noMinMaxBounds=*/true);
      if (failed(gpu::setMappingAttr(outer,
                                     {dimMap(ctx, gpu::Processor::BlockX)})) ||
          failed(gpu::setMappingAttr(inner,
                                     {dimMap(ctx, gpu::Processor::ThreadX)}))) {
        par.emitError("mcc-gpu-distribute: cannot set the loop mapping");
        return signalPassFailure();
      }
      // Nested parallel loops inside run sequentially in the thread: as
      // scf.for, since convert-parallel-loops-to-gpu leaves a whole nest on
      // the host when one sits under an scf.for (a middle-axis reduction).
      SmallVector<scf::ParallelOp> nestedLoops;
      inner.walk([&](scf::ParallelOp nested) {
        if (nested != inner)
          nestedLoops.push_back(nested);
      });
      for (scf::ParallelOp nested : nestedLoops) {
        rewriter.setInsertionPoint(nested);
        if (nested.getNumReductions() == 0 &&
            succeeded(scf::parallelForToNestedFors(rewriter, nested)))
          continue;
        (void)gpu::setMappingAttr(
            nested, SmallVector<gpu::ParallelLoopDimMappingAttr>(
                        nested.getNumLoops(),
                        dimMap(ctx, gpu::Processor::Sequential)));
      }
    }
  }
};

} // namespace
