//===- GpuLibraryCalls.cpp - matrix products through cuBLAS ---------------===//

#include "mcc/Transforms/BufferUtils.h"
#include "mcc/Transforms/ContractionUtils.h"
#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

namespace mcc {
#define GEN_PASS_DEF_GPULIBRARYCALLS
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

/// f32, and the last dimension contiguous: what cuBLAS takes with a
/// leading dimension. Sizes may be dynamic: the shim reads sizes and
/// leading dimensions from the descriptors at run time.
bool blasCompatible(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || !type.getElementType().isF32())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return !strides.empty() && strides.back() == 1;
}

/// True if `v` views a memref.global: host memory, which cuBLAS cannot
/// read (kernels can: outlining moves the global to the GPU module).
bool viewsGlobal(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<memref::GetGlobalOp>(def))
      return true;
    if (isa<memref::SubViewOp, memref::CastOp, memref::ExpandShapeOp,
            memref::CollapseShapeOp, memref::ReinterpretCastOp>(def))
      v = def->getOperand(0);
    else
      return false;
  }
  return false;
}

/// A as a [batch, m, k] view with batch stride 0 (`batch` and A's sizes
/// static or dynamic).
Value broadcastView(OpBuilder &b, Location loc, Value a, OpFoldResult batch) {
  auto type = cast<MemRefType>(a.getType());
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, a);
  SmallVector<OpFoldResult> sizes = {batch, meta.getConstifiedMixedSizes()[0],
                                     meta.getConstifiedMixedSizes()[1]};
  SmallVector<OpFoldResult> strides = {b.getIndexAttr(0),
                                       meta.getStrides()[0],
                                       meta.getStrides()[1]};
  auto layout = StridedLayoutAttr::get(
      b.getContext(), ShapedType::kDynamic,
      {0, ShapedType::kDynamic, ShapedType::kDynamic});
  std::optional<int64_t> staticBatch = getConstantIntValue(batch);
  auto viewType =
      MemRefType::get({staticBatch ? *staticBatch : ShapedType::kDynamic,
                       type.getDimSize(0), type.getDimSize(1)},
                      type.getElementType(), layout);
  return memref::ReinterpretCastOp::create(b, loc, viewType,
                                           meta.getBaseBuffer(),
                                           meta.getOffset(), sizes, strides);
}

MemRefType dynamicStrided(MLIRContext *ctx, int64_t rank) {
  SmallVector<int64_t> shape(rank, ShapedType::kDynamic);
  SmallVector<int64_t> strides(rank, ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(ctx, ShapedType::kDynamic, strides);
  return MemRefType::get(shape, Float32Type::get(ctx), layout);
}

struct GpuLibraryCallsPass
    : mcc::impl::GpuLibraryCallsBase<GpuLibraryCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<linalg::LinalgOp> products;
    module.walk([&](linalg::LinalgOp op) {
      if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) ||
          !op.hasPureBufferSemantics())
        return;
      // A matmul with a transposing or broadcasting indexing_maps
      // attribute is not a plain product, except a batch_matmul whose A is
      // shared by the whole batch: cuBLAS takes that as batch stride 0.
      if (op.hasUserDefinedMaps() && !mcc::isBatchMatmulWithSharedA(op))
        return;
      for (Value v : op->getOperands())
        if (!blasCompatible(v) || viewsGlobal(v))
          return;
      products.push_back(op);
    });
    OpBuilder builder(ctx);
    auto declare = [&](StringRef name, int64_t rank) {
      if (module.lookupSymbol<func::FuncOp>(name))
        return;
      builder.setInsertionPointToStart(module.getBody());
      MemRefType t = dynamicStrided(ctx, rank);
      // A, B, C and beta: C = A B + beta C.
      auto fn = func::FuncOp::create(
          builder, module.getLoc(), name,
          builder.getFunctionType({t, t, t, builder.getF32Type()}, {}));
      fn.setPrivate();
    };
    IRRewriter rewriter(ctx);
    for (linalg::LinalgOp op : products) {
      bool batched = isa<linalg::BatchMatmulOp>(op);
      StringRef name = batched ? "mcc_gpu_sgemm_batched" : "mcc_gpu_sgemm";
      int64_t rank = batched ? 3 : 2;
      declare(name, rank);
      rewriter.setInsertionPoint(op);
      SmallVector<Value> args;
      for (Value v : op->getOperands()) {
        if (batched && cast<MemRefType>(v.getType()).getRank() == 2)
          v = broadcastView(rewriter, op.getLoc(), v,
                            memref::getMixedSize(rewriter, op.getLoc(),
                                                 op.getDpsInits()[0], 0));
        args.push_back(memref::CastOp::create(rewriter, op.getLoc(),
                                              dynamicStrided(ctx, rank), v));
      }
      // An output zeroed right before the product is overwritten instead
      // (beta = 0), and the zeroing goes.
      Attribute init;
      Operation *zeroing = mcc::constantInitOf(op, op.getDpsInits()[0], init);
      float beta = 1.0f;
      if (zeroing && matchPattern(init, m_PosZeroFloat())) {
        beta = 0.0f;
        rewriter.eraseOp(zeroing);
      }
      args.push_back(arith::ConstantOp::create(
          rewriter, op.getLoc(), rewriter.getF32FloatAttr(beta)));
      func::CallOp::create(rewriter, op.getLoc(), name, TypeRange{}, args);
      rewriter.eraseOp(op);
    }
    mcc::eraseDeadFills(module);
  }
};

} // namespace
