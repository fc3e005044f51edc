//===- VectorKernelUtils.h - helpers of the CPU vector kernels ------------===//
//
// The buffer-level CPU kernels (mcc-register-tile-matmul,
// mcc-vectorize-depthwise-conv, mcc-vectorize-grouped-conv) emit their loops
// and vector ops with the same few builders; they live here once.
//
//===----------------------------------------------------------------------===//
#ifndef MCC_TRANSFORMS_VECTORKERNELUTILS_H
#define MCC_TRANSFORMS_VECTORKERNELUTILS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mcc {

/// An f32 memref whose rows (the last dim) are unit-stride, so that the
/// kernels can load and store them as vectors.
bool hasUnitInnerStride(mlir::Value v);

/// The buffer behind `v`'s views.
mlir::Value rootBuffer(mlir::Value v);

/// Whether anything but `ops` (and views, deallocs) touches the buffer
/// behind `v`: then a kernel that hands its result to an epilogue must
/// still store it.
bool readElsewhere(mlir::Value v, llvm::ArrayRef<mlir::Operation *> ops);

/// Whether an epilogue's body holds only scalar elementwise arith and math
/// ops, which a kernel can re-create on vectors.
bool vectorizableBody(mlir::linalg::GenericOp op);

/// The values of an integer attribute (strides, dilations).
llvm::SmallVector<int64_t> intsOf(mlir::DenseIntElementsAttr a);

/// Builds index arithmetic, loops and vector constants at one location.
/// The kernels' emitters derive from it.
class VectorKernelBuilder {
protected:
  VectorKernelBuilder(mlir::OpBuilder &b, mlir::Location loc)
      : b(b), loc(loc) {}

  mlir::Value idx(int64_t v) {
    return mlir::arith::ConstantIndexOp::create(b, loc, v);
  }
  mlir::Value dim(mlir::Value m, int64_t i) {
    return mlir::memref::DimOp::create(b, loc, m, i);
  }
  /// v rounded down to a multiple of m.
  mlir::Value roundDown(mlir::Value v, int64_t m) {
    mlir::Value rem = mlir::arith::RemUIOp::create(b, loc, v, idx(m));
    return mlir::arith::SubIOp::create(b, loc, v, rem);
  }
  /// for (iv = lo; iv < hi; iv += step) body(iv), without loop-carried values.
  void forLoop(mlir::Value lo, mlir::Value hi, int64_t step,
               llvm::function_ref<void(mlir::Value)> body);
  mlir::Value zeros(mlir::VectorType t);
  /// The mask of t's shape whose first `count` lanes are set.
  mlir::Value mask(mlir::VectorType t, mlir::Value count);
  /// `lanes` floats `stride` apart from x[at]: one load `lanes * stride`
  /// wide (masked to the `left` floats that remain in the row when `left` is
  /// set) and, for stride > 1, a shuffle that keeps every stride-th.
  mlir::Value loadStrided(mlir::Value x, mlir::ValueRange at, int64_t lanes,
                          int64_t stride, mlir::Value left);
  /// The same with the wide load's lanes masked by `wideMask` (null: no
  /// mask); masked-off lanes read as zero.
  mlir::Value loadStridedMasked(mlir::Value x, mlir::ValueRange at,
                                int64_t lanes, int64_t stride,
                                mlir::Value wideMask);

  mlir::OpBuilder &b;
  mlir::Location loc;
};

} // namespace mcc

#endif // MCC_TRANSFORMS_VECTORKERNELUTILS_H
