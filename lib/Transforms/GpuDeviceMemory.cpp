//===- GpuDeviceMemory.cpp - host code of a CUDA model uses device memory -===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace mcc {
#define GEN_PASS_DEF_GPUDEVICEMEMORY
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

struct GpuDeviceMemoryPass
    : mcc::impl::GpuDeviceMemoryBase<GpuDeviceMemoryPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    IRRewriter rewriter(&getContext());
    SmallVector<Operation *> work;
    func.walk([&](Operation *op) {
      if (isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp,
              memref::GetGlobalOp>(op))
        work.push_back(op);
    });
    for (Operation *op : work) {
      rewriter.setInsertionPoint(op);
      Location loc = op->getLoc();
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        auto g = gpu::AllocOp::create(
            rewriter, loc, alloc.getType(), /*asyncToken=*/Type(),
            /*asyncDependencies=*/ValueRange{}, alloc.getDynamicSizes(),
            alloc.getSymbolOperands(), /*hostShared=*/false);
        rewriter.replaceOp(alloc, g.getMemref());
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        gpu::DeallocOp::create(rewriter, loc, /*asyncToken=*/Type(),
                               ValueRange{}, dealloc.getMemref());
        rewriter.eraseOp(dealloc);
      } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        gpu::MemcpyOp::create(rewriter, loc, /*asyncToken=*/Type(),
                              ValueRange{}, copy.getTarget(), copy.getSource());
        rewriter.eraseOp(copy);
      } else if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
        // One get_global per user, placed right before it: inside the
        // loops that will become kernels.
        for (OpOperand &use : llvm::make_early_inc_range(global->getUses())) {
          rewriter.setInsertionPoint(use.getOwner());
          Operation *clone = rewriter.clone(*global);
          use.set(clone->getResult(0));
        }
        if (global->use_empty())
          rewriter.eraseOp(global);
      }
    }
  }
};

} // namespace
