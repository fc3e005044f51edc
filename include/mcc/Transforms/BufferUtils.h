//===- BufferUtils.h - facts about buffers after bufferization ------------===//
#ifndef MCC_TRANSFORMS_BUFFERUTILS_H
#define MCC_TRANSFORMS_BUFFERUTILS_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

namespace mcc {

/// The op that sets the whole buffer `out` to one constant right before
/// `consumer` reads it as its accumulator: a linalg.fill of `out`, or a
/// memref.copy into `out` from a buffer that a linalg.fill set and nothing
/// else writes. Nothing between it and `consumer` may use `out` or a view
/// of it. Returns the op and sets `value` to the constant, else nullptr.
/// Bufferization leaves this pattern before every matmul and reduction; a
/// consumer that starts from the constant instead lets the op go, and on
/// the GPU a kernel with it.
mlir::Operation *constantInitOf(mlir::Operation *consumer, mlir::Value out,
                                mlir::Attribute &value);

/// Erases linalg.fill ops on buffers that nothing reads any more (only the
/// fill, deallocs and views without users remain).
void eraseDeadFills(mlir::Operation *root);

} // namespace mcc

#endif // MCC_TRANSFORMS_BUFFERUTILS_H
