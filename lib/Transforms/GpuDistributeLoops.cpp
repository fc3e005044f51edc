//===- GpuDistributeLoops.cpp - loop nests onto GPU blocks and threads ----===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
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
