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

#include <optional>
#include <utility>

namespace mcc {

/// An f32 memref whose rows (the last dim) are unit-stride, so that the
/// kernels can load and store them as vectors.
bool hasUnitInnerStride(mlir::Value v);

/// Whether a view's `offset` is a multiple of `m`: a constant, or an
/// induction variable of an scf.forall (a tile loop) whose lower bound and
/// step are.
bool knownMultiple(mlir::OpFoldResult offset, int64_t m);

/// The buffer behind `v`'s views.
mlir::Value rootBuffer(mlir::Value v);

/// Whether `v` is an argument of its function past `mcc.num_inputs`: a
/// model weight, known at compile time.
bool isModelWeight(mlir::Value v);

/// Whether anything but `ops` (and views, deallocs) touches the buffer
/// behind `v`: then a kernel that hands its result to an epilogue must
/// still store it.
bool readElsewhere(mlir::Value v, llvm::ArrayRef<mlir::Operation *> ops);

/// Whether an epilogue's body holds only scalar elementwise arith and math
/// ops, which a kernel can re-create on vectors.
bool vectorizableBody(mlir::linalg::GenericOp op);

/// An elementwise linalg.generic that reads a 2-D product's C at the same
/// indices right after the product (a bias, a normalization, an activation,
/// a residual add: mcc-collapse-product-epilogues puts them on the
/// product's 2-D space and mcc-tile-for-cpu into its tile). The product
/// kernels (mcc-register-tile-matmul, mcc-amx-matmul) apply it to C's
/// values while they hold them and store its results; C itself is stored
/// only when something reads it later.
struct ProductEpilogue {
  mlir::linalg::GenericOp op;
  unsigned cInput; // the input that is C
  bool storeC;
};

/// How an epilogue reads an input: at C's index, per row, or per column.
enum class EpilogueRead { Full, Row, Column };
EpilogueRead readOf(mlir::AffineMap map);

/// The epilogue of `op` (a 2-D f32 product writing `c`, after the zero
/// `fill` of C if there is one), if the op after it is one. Between the two
/// there may only be views, which move before the product (or the fill),
/// and profile marks.
std::optional<ProductEpilogue> matchProductEpilogue(mlir::linalg::MatmulOp op,
                                                    mlir::Value c,
                                                    mlir::Operation *fill);

/// The epilogue's results at C[row, col...] given C's `value` there: a
/// vector of columns from col (its lanes past `mask`'s masked off, when
/// set), or, for a scalar `value`, the one element.
llvm::SmallVector<mlir::Value>
applyProductEpilogue(mlir::OpBuilder &b, mlir::Location loc,
                     const ProductEpilogue &epilogue, mlir::Value value,
                     mlir::Value row, mlir::Value col, mlir::Value mask);

/// The elementwise generic after a depthwise or grouped convolution in the
/// same tile (its bias and activation: mcc-tile-for-cpu fuses the
/// convolution into the generic's tiles). The convolution kernels apply it
/// to each output vector before the store, and store the convolution's own
/// output only when something else reads it.
struct ConvEpilogue {
  mlir::linalg::GenericOp op;
  /// The generic's input that is the convolution's output.
  unsigned outInput;
  bool storeOut;
};

/// The epilogue of `conv` (writing its init, reading the buffer `input`,
/// after the `fill` of its output if there is one), if the op after it is
/// one over the output's dims. Inputs other than the output are read at the
/// output's index or once per value of the leading `channelDims` dims (a
/// bias, a squeeze-excite scale: (n, c) of a depthwise convolution, (n, g,
/// f) of a grouped one). Between the two there may only be views, which
/// move before the convolution (and its fill).
std::optional<ConvEpilogue> matchConvEpilogue(mlir::linalg::LinalgOp conv,
                                              mlir::Value input,
                                              mlir::Operation *fill,
                                              unsigned channelDims);

/// The epilogue's results for the output vector at `at` (the output's
/// indices, the last one a vector's first column) whose value is `acc`;
/// `valid` (null: all) masks a partial vector's loads.
llvm::SmallVector<mlir::Value>
applyConvEpilogue(mlir::OpBuilder &b, mlir::Location loc,
                  const ConvEpilogue &epilogue, mlir::Value acc,
                  mlir::ValueRange at, mlir::Value valid);

/// Starts a 1-D scf.forall over [0, count) (a parallel loop once the
/// pipeline lowers it) at `b`'s insertion point and leaves `b` inside its
/// body, before the terminator; returns the induction variable.
mlir::Value beginParallelLoop(mlir::OpBuilder &b, mlir::Location loc,
                              int64_t count);

/// Whether a product of these static 2-D shapes (per batch element) is
/// worth AMX tiles (mcc-amx-matmul's rule, which mcc-tile-for-cpu follows
/// when it chooses tiles for them): at least a tile of rows and columns (a
/// matrix-vector product gains nothing from tiles), K padded to whole
/// 32-step tiles by at most a sixth, and M x N padded to whole 16 x 16
/// tiles by at most a third.
bool amxTileable(int64_t m, int64_t n, int64_t k);

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

  // A convolution window over rows of x read in place, with its zero
  // padding implicit: input column iw of an output row is x's column
  // iw + colOffset (colOffset <= 0), input row ih is x's ih + rowOffset.

  /// A row's outputs by how their loads are masked: [start, blockEnd) in
  /// blocks of `lanes * vectors`, [blockEnd, vecEnd) single vectors, both
  /// with every tap inside the row; before `start` (when colOffset < 0) the
  /// row's first, left-edge vector; from vecEnd on, masked vectors.
  struct RowSpans {
    mlir::Value start, blockEnd, vecEnd;
  };
  RowSpans rowSpans(mlir::Value inWidth, mlir::Value outWidth, int64_t kw,
                    int64_t dw, int64_t sw, int64_t colOffset, int64_t lanes,
                    int64_t vectors);
  /// The output rows [top, bottom) whose window rows all lie inside x's
  /// `inHeight` rows.
  std::pair<mlir::Value, mlir::Value>
  rowsInside(mlir::Value inHeight, mlir::Value outHeight, mlir::Value rowOffset,
             int64_t kh, int64_t dh, int64_t sh);
  /// The first vector of a row when its window column `iw` (static) lies
  /// left of the row: one load `lanes * stride` wide from x[at..., iw] whose
  /// lanes left of the row (and past its end, `inWidth`) are masked off, so
  /// they read as zeros and their memory is not touched. A load from the
  /// row's start and a shuffle that shifted zeros in ran 2.5x slower
  /// (vexpandps on Zen 4).
  mlir::Value loadLeftEdge(mlir::Value x, mlir::ValueRange at,
                           mlir::Value inWidth, int64_t iw, int64_t lanes,
                           int64_t stride);
  /// An scf.if on 0 <= row < height whose else branch yields `values`
  /// unchanged (a window row above or below the source adds nothing); the
  /// caller fills the then block and yields there.
  mlir::scf::IfOp ifRowInside(mlir::Value row, mlir::Value height,
                              mlir::ValueRange values);

  mlir::OpBuilder &b;
  mlir::Location loc;
};

} // namespace mcc

#endif // MCC_TRANSFORMS_VECTORKERNELUTILS_H
