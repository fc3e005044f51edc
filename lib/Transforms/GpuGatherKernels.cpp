//===- GpuGatherKernels.cpp - one kernel module, kernels a profiler tells apart
//
// gpu-kernel-outlining puts every kernel in a gpu.module of its own, each
// function named after the host function ("forward_kernel"). Two costs
// follow: ptxas runs once per module (about 680 times for bert-base, most
// of its CUDA compile time) and the runtime loads as many CUDA modules; and
// a profile shows hundreds of launches under one name. Here every kernel
// moves into one gpu.module, renamed mcc_<n>_<what>: its first launch's
// order in the host code and a summary of its body (a row reduction, the
// math it calls, or a copy).
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <set>

namespace mcc {
#define GEN_PASS_DEF_GPUGATHERKERNELS
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

std::string summarize(gpu::GPUFuncOp func) {
  bool reduce = false, loop = false;
  std::set<std::string> math;
  unsigned arith = 0;
  func.walk([&](Operation *op) {
    if (isa<gpu::AllReduceOp>(op))
      reduce = true;
    else if (isa<scf::ForOp>(op))
      loop = true;
    else if (op->getDialect() &&
             op->getDialect()->getNamespace() == "math")
      math.insert(op->getName().stripDialect().str());
    else if (op->getDialect() &&
             op->getDialect()->getNamespace() == "arith" &&
             !isa<arith::ConstantOp, arith::IndexCastOp>(op) &&
             !op->getResultTypes().empty() &&
             !op->getResultTypes()[0].isIndex())
      ++arith;
  });
  std::string s = reduce ? "rowreduce" : loop ? "loop" : "map";
  for (const std::string &m : math)
    s += "_" + m;
  if (!reduce && math.empty() && arith == 0)
    s = loop ? "loopcopy" : "copy";
  return s;
}

struct GpuGatherKernelsPass
    : mcc::impl::GpuGatherKernelsBase<GpuGatherKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    // Host code must not touch device memory: a loop nest the GPU mapping
    // left behind would read device pointers on the CPU (a crash at run
    // time), so it is an error here.
    WalkResult hostAccess = module.walk([&](Operation *op) {
      if (op->getParentOfType<gpu::GPUModuleOp>() ||
          op->getParentOfType<gpu::LaunchOp>())
        return WalkResult::advance();
      if (isa<scf::ParallelOp, memref::LoadOp, memref::StoreOp>(op)) {
        op->emitError("mcc-gpu-gather-kernels: '")
            << op->getName()
            << "' left in host code of a cuda model (it would read device "
               "memory on the CPU); this is an mcc bug";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (hostAccess.wasInterrupted())
      return signalPassFailure();
    SymbolTable symbols(module);
    // Resolve every launch before renaming anything.
    SmallVector<std::pair<gpu::LaunchFuncOp, gpu::GPUFuncOp>> launches;
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto gpuModule =
          symbols.lookup<gpu::GPUModuleOp>(launch.getKernelModuleName());
      if (auto func = gpuModule ? gpuModule.lookupSymbol<gpu::GPUFuncOp>(
                                      launch.getKernelName())
                                : nullptr)
        launches.push_back({launch, func});
    });
    // Numbers follow the first launch of each kernel in the host code.
    llvm::DenseMap<Operation *, StringAttr> names;
    for (auto &[launch, func] : launches)
      if (!names.count(func))
        names[func] = StringAttr::get(
            ctx, "mcc_" + std::to_string(names.size()) + "_" + summarize(func));
    SmallVector<gpu::GPUModuleOp> sources(module.getOps<gpu::GPUModuleOp>());
    if (sources.empty())
      return;
    OpBuilder b(sources.front());
    auto target = gpu::GPUModuleOp::create(b, sources.front().getLoc(),
                                           "mcc_kernels");
    SymbolTable targetSymbols(target);
    unsigned renamed = 0;
    for (gpu::GPUModuleOp source : sources) {
      // Helpers (globals, device functions) that collide with one already
      // gathered are dropped when identical, else renamed within `source`.
      for (Operation &op : llvm::make_early_inc_range(source.getBody()->getOperations())) {
        auto symbol = dyn_cast<SymbolOpInterface>(&op);
        if (!symbol || isa<gpu::GPUFuncOp>(op))
          continue;
        Operation *existing = targetSymbols.lookup(symbol.getName());
        if (!existing)
          continue;
        if (OperationEquivalence::isEquivalentTo(
                &op, existing, OperationEquivalence::IgnoreLocations)) {
          op.erase();
          continue;
        }
        auto fresh = StringAttr::get(ctx, symbol.getName().str() + "_" +
                                              std::to_string(renamed++));
        if (failed(SymbolTable::replaceAllSymbolUses(&op, fresh, source))) {
          op.emitError("mcc-gpu-gather-kernels: cannot rename");
          return signalPassFailure();
        }
        symbol.setName(fresh);
      }
      for (Operation &op : llvm::make_early_inc_range(source.getBody()->getOperations())) {
        if (auto func = dyn_cast<gpu::GPUFuncOp>(op)) {
          auto it = names.find(func);
          func.setName(it != names.end()
                           ? it->second
                           : StringAttr::get(ctx, "mcc_unlaunched_" +
                                                      std::to_string(renamed++)));
        }
        op.moveBefore(target.getBody(), target.getBody()->end());
        targetSymbols.insert(&op);
      }
      source.erase();
    }
    for (auto &[launch, func] : launches)
      launch.setKernelAttr(SymbolRefAttr::get(
          target.getNameAttr(), {FlatSymbolRefAttr::get(names[func])}));
  }
};

} // namespace
