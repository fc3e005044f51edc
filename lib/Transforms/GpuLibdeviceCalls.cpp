//===- GpuLibdeviceCalls.cpp - float remainders in kernels call libdevice -===//
//
// gpu-lower-to-nvvm-pipeline converts arith to LLVM before its GPU-to-NVVM
// step, so arith.remf reaches NVVM as llvm.frem, which NVPTX cannot select.
// Kernels call libdevice's fmod instead (linked like every other __nv_*
// function the NVVM lowering emits); f16 and bf16 go through f32.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/PatternMatch.h"

namespace mcc {
#define GEN_PASS_DEF_GPULIBDEVICECALLS
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

func::FuncOp declareFmod(OpBuilder &b, gpu::GPUModuleOp module,
                         FloatType type) {
  StringRef name = type.isF64() ? "__nv_fmod" : "__nv_fmodf";
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto fn = func::FuncOp::create(b, module.getLoc(), name,
                                 b.getFunctionType({type, type}, {type}));
  fn.setPrivate();
  return fn;
}

struct GpuLibdeviceCallsPass
    : mcc::impl::GpuLibdeviceCallsBase<GpuLibdeviceCallsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    getOperation().walk([&](gpu::GPUModuleOp module) {
      SmallVector<arith::RemFOp> rems;
      module.walk([&](arith::RemFOp op) { rems.push_back(op); });
      for (arith::RemFOp rem : rems) {
        auto type = dyn_cast<FloatType>(rem.getType());
        if (!type) // vectors do not occur in mcc's kernels
          continue;
        FloatType callType =
            type.isF64() ? type : FloatType(rewriter.getF32Type());
        func::FuncOp fmod = declareFmod(rewriter, module, callType);
        rewriter.setInsertionPoint(rem);
        Location loc = rem.getLoc();
        Value lhs = rem.getLhs(), rhs = rem.getRhs();
        if (callType != type) {
          lhs = arith::ExtFOp::create(rewriter, loc, callType, lhs);
          rhs = arith::ExtFOp::create(rewriter, loc, callType, rhs);
        }
        Value result = func::CallOp::create(rewriter, loc, fmod,
                                            ValueRange{lhs, rhs})
                           .getResult(0);
        if (callType != type)
          result = arith::TruncFOp::create(rewriter, loc, type, result);
        rewriter.replaceOp(rem, result);
      }
    });
  }
};

} // namespace
