//===- ContractionUtils.h - shapes of matrix products mcc lowers ----------===//
#ifndef MCC_TRANSFORMS_CONTRACTIONUTILS_H
#define MCC_TRANSFORMS_CONTRACTIONUTILS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mcc {

/// A linalg.batch_matmul whose A is one matrix shared by every batch (map
/// (b, m, n, k) -> (m, k)) and whose B and C have the default maps: what
/// mcc-conv-to-matmul emits for convolutions of several images.
inline bool isBatchMatmulWithSharedA(mlir::linalg::LinalgOp op) {
  if (!mlir::isa<mlir::linalg::BatchMatmulOp>(op))
    return false;
  mlir::MLIRContext *ctx = op.getContext();
  auto d = [&](unsigned i) { return mlir::getAffineDimExpr(i, ctx); };
  auto maps = op.getIndexingMapsArray();
  return maps.size() == 3 &&
         maps[0] == mlir::AffineMap::get(4, 0, {d(1), d(3)}, ctx) &&
         maps[1] == mlir::AffineMap::get(4, 0, {d(0), d(3), d(2)}, ctx) &&
         maps[2] == mlir::AffineMap::get(4, 0, {d(0), d(1), d(2)}, ctx);
}

} // namespace mcc

#endif // MCC_TRANSFORMS_CONTRACTIONUTILS_H
