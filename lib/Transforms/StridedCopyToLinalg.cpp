//===- StridedCopyToLinalg.cpp - keep memref.copy off the runner library --===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace mcc {
#define GEN_PASS_DEF_STRIDEDCOPYTOLINALG
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

bool isContiguous(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.getLayout().isIdentity();
}

struct StridedCopyToLinalgPass
    : mcc::impl::StridedCopyToLinalgBase<StridedCopyToLinalgPass> {
  using StridedCopyToLinalgBase::StridedCopyToLinalgBase;

  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp op) {
      if (allCopies || !isContiguous(op.getSource()) ||
          !isContiguous(op.getTarget()))
        copies.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp op : copies) {
      rewriter.setInsertionPoint(op);
      linalg::CopyOp::create(rewriter, op.getLoc(), op.getSource(),
                             op.getTarget());
      rewriter.eraseOp(op);
    }
  }
};

} // namespace
