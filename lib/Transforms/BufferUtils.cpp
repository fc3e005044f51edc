//===- BufferUtils.cpp - facts about buffers after bufferization ----------===//

#include "mcc/Transforms/BufferUtils.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace mcc {

/// The constant a linalg.fill writes, if it is one.
static Attribute fillConstant(linalg::FillOp fill) {
  Attribute value;
  if (!matchPattern(fill.getInputs()[0], m_Constant(&value)))
    return {};
  return value;
}

/// The constant in `v` when `reader` (a copy out of `v`) runs: one
/// linalg.fill before it in the block set it, and everything else that
/// touches `v` or a view of it only reads it with copies, frees it, or
/// comes after `reader` (bufferization may reuse the zero buffer in place
/// once its last copy is made).
static Attribute constantBuffer(Value v, Operation *reader) {
  Attribute value;
  SmallVector<Value> aliases = {v};
  for (size_t i = 0; i < aliases.size(); ++i) {
    for (Operation *user : aliases[i].getUsers()) {
      if (isa<ViewLikeOpInterface>(user)) {
        llvm::append_range(aliases, user->getResults());
        continue;
      }
      if (auto fill = dyn_cast<linalg::FillOp>(user);
          fill && i == 0 && fill->getBlock() == reader->getBlock() &&
          fill->isBeforeInBlock(reader)) {
        if (value)
          return {};
        value = fillConstant(fill);
        if (!value)
          return {};
        continue;
      }
      if (auto copy = dyn_cast<memref::CopyOp>(user);
          copy && copy.getSource() == aliases[i])
        continue;
      if (isa<memref::DeallocOp>(user))
        continue;
      if (user->getBlock() == reader->getBlock() &&
          reader->isBeforeInBlock(user))
        continue;
      return {};
    }
  }
  return value;
}

Operation *constantInitOf(Operation *consumer, Value out, Attribute &value) {
  SmallVector<Value> aliases = {out};
  for (size_t i = 0; i < aliases.size(); ++i)
    for (Operation *user : aliases[i].getUsers())
      if (isa<ViewLikeOpInterface>(user))
        llvm::append_range(aliases, user->getResults());
  for (Operation *prev = consumer->getPrevNode(); prev;
       prev = prev->getPrevNode()) {
    if (isa<ViewLikeOpInterface>(prev) ||
        llvm::none_of(prev->getOperands(), [&](Value v) {
          return llvm::is_contained(aliases, v);
        }))
      continue;
    if (auto fill = dyn_cast<linalg::FillOp>(prev)) {
      if (fill.getOutputs()[0] != out || !(value = fillConstant(fill)))
        return nullptr;
      return prev;
    }
    if (auto copy = dyn_cast<memref::CopyOp>(prev)) {
      if (copy.getTarget() != out ||
          !(value = constantBuffer(copy.getSource(), copy)))
        return nullptr;
      return prev;
    }
    return nullptr;
  }
  return nullptr;
}

void eraseDeadFills(Operation *root) {
  SmallVector<linalg::FillOp> fills;
  root->walk([&](linalg::FillOp fill) {
    if (fill.hasPureBufferSemantics())
      fills.push_back(fill);
  });
  for (linalg::FillOp fill : fills) {
    Value buffer = fill.getOutputs()[0];
    if (!buffer.getDefiningOp<memref::AllocOp>())
      continue; // a function argument or a view: someone may read it
    bool read = llvm::any_of(buffer.getUsers(), [&](Operation *user) {
      if (user == fill.getOperation() || isa<memref::DeallocOp>(user))
        return false;
      return !(isa<ViewLikeOpInterface>(user) && user->use_empty());
    });
    if (!read)
      fill->erase();
  }
}

} // namespace mcc
