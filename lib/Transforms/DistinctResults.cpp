//===- DistinctResults.cpp - every returned tensor its own value ----------===//
//
// Each graph output is written into its own caller buffer, but after CSE two
// outputs can be one SSA value (two identical Relu nodes, an output listed
// twice, several empty outputs), and buffer-results-to-out-params cannot
// return one buffer twice. Repeats become copies into fresh allocations,
// which bufferization keeps apart.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mcc {
#define GEN_PASS_DEF_DISTINCTRESULTS
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

struct DistinctResultsPass
    : mcc::impl::DistinctResultsBase<DistinctResultsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    func.walk([&](func::ReturnOp ret) {
      llvm::SmallPtrSet<Value, 8> seen;
      OpBuilder b(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Value v = operand.get();
        auto type = dyn_cast<RankedTensorType>(v.getType());
        if (!type || seen.insert(v).second)
          continue;
        auto copy = bufferization::AllocTensorOp::create(
            b, ret.getLoc(), type, /*dynamicSizes=*/ValueRange{}, /*copy=*/v);
        operand.set(copy);
      }
    });
  }
};

} // namespace
