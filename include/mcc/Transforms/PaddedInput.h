//===- PaddedInput.h - padded convolution inputs read in place ------------===//
//
// A zero-padded convolution input that bufferization built as a buffer of
// its own (zero fills of the border, one copy of the unpadded source into
// the interior) costs a write and a read of the whole activation. The CPU
// convolution kernels (mcc-vectorize-depthwise-conv, -grouped-conv) can
// read the source instead and treat what lies outside it as zeros; these
// helpers find such buffers and remove them once every reader reads the
// source.
//
//===----------------------------------------------------------------------===//
#ifndef MCC_TRANSFORMS_PADDEDINPUT_H
#define MCC_TRANSFORMS_PADDEDINPUT_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>

namespace mcc {

/// A buffer that holds a convolution's zero-padded input and nothing else:
/// zero fills of parts of it, then one copy of the unpadded source into its
/// interior, then reads of views of it (operand 0 of the convolutions the
/// caller vectorizes) only. The padding is in the last two dims (H, W).
struct PaddedInput {
  mlir::memref::AllocOp alloc;
  mlir::Value source;
  /// The padding before the source, per dim.
  llvm::SmallVector<int64_t> low;
  /// The fills and the copy, in the alloc's block.
  llvm::SmallVector<mlir::Operation *> writes;
  /// The views the convolutions read (each feeds only them).
  llvm::SmallVector<mlir::memref::SubViewOp> reads;
  mlir::memref::DeallocOp dealloc;
};

/// `alloc` (a static f32 buffer of rank 4 or 5) as a padded input whose
/// readers are all in `convs`, or nothing. It also requires that nothing
/// writes any view of the source between the copy and the last read:
/// bufferization may hand the source's buffer to a later op once the copy
/// has read it.
std::optional<PaddedInput>
findPaddedInput(mlir::memref::AllocOp alloc,
                const llvm::DenseSet<mlir::Operation *> &convs);

/// The part of the source that `view` (one of p.reads) covers, with every
/// row and column: same offsets and sizes in the leading dims, the source's
/// whole H and W. `rowOffset` and `colOffset` get the position of the
/// view's first row and column in the source (negative inside the top and
/// left padding); colOffset is null when the view's column is not static.
mlir::Value sourceTileOf(mlir::OpBuilder &b, mlir::Location loc,
                         const PaddedInput &p, mlir::memref::SubViewOp view,
                         mlir::Value &rowOffset,
                         std::optional<int64_t> &colOffset);

/// Removes the padded buffer once its readers read the source: the fills,
/// the copy and their profile marks go, and the source's own dealloc (after
/// the copy, its last reader until now) moves to where the buffer's was.
void erasePaddedInput(PaddedInput &p);

} // namespace mcc

#endif // MCC_TRANSFORMS_PADDEDINPUT_H
