//===- GpuDistributeLoops.cpp - loop nests onto GPU blocks and threads ----===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

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

    // Sequential top-level work becomes a one-iteration parallel loop.
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (isa<scf::ParallelOp>(op) || op.hasTrait<OpTrait::IsTerminator>())
        continue;
      if (!isa<scf::ForOp, memref::LoadOp, memref::StoreOp>(op) ||
          !touchesMemory(&op))
        continue;
      rewriter.setInsertionPoint(&op);
      Location loc = op.getLoc();
      Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
      Value c1 = arith::ConstantIndexOp::create(rewriter, loc, 1);
      auto par = scf::ParallelOp::create(rewriter, loc, ValueRange{c0},
                                         ValueRange{c1}, ValueRange{c1});
      if (op.getNumResults() != 0) {
        op.emitError("mcc-gpu-distribute: top-level op with results");
        return signalPassFailure();
      }
      op.moveBefore(par.getBody()->getTerminator());
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
      // Nested parallel loops inside run sequentially in the thread.
      inner.walk([&](scf::ParallelOp nested) {
        if (nested != inner)
          (void)gpu::setMappingAttr(
              nested, SmallVector<gpu::ParallelLoopDimMappingAttr>(
                          nested.getNumLoops(),
                          dimMap(ctx, gpu::Processor::Sequential)));
      });
    }
  }
};

} // namespace
