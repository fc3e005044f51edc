//===- DeallocAfterLastUse.cpp - free each buffer once it is dead ---------===//
//
// Ownership-based buffer deallocation frees a buffer at the end of the block
// that allocates it: every intermediate of a CPU model's forward function
// stayed allocated until the function returned, tens of megabytes for a CNN
// whose live set at any point is a few. Here each such dealloc moves to just
// after the last op (in the allocating block) that uses the buffer or a
// view of it, so the runtime's buffer cache hands the same, still cached,
// memory to the next allocation of that size.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mcc {
#define GEN_PASS_DEF_DEALLOCAFTERLASTUSE
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

/// The last op of `block` that uses `alloc` or a view of it (other than
/// `dealloc`), or null when the buffer may escape: a use through an op that
/// returns a memref without being a view of it, or in another block's ops.
Operation *lastUse(Value alloc, Operation *dealloc, Block *block) {
  Operation *last = alloc.getDefiningOp();
  SmallVector<Value> aliases = {alloc};
  for (size_t i = 0; i < aliases.size(); ++i)
    for (Operation *user : aliases[i].getUsers()) {
      if (user == dealloc)
        continue;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == aliases[i]) {
        llvm::append_range(aliases, user->getResults());
      } else if (llvm::any_of(user->getResultTypes(),
                              llvm::IsaPred<BaseMemRefType>) ||
                 user->hasTrait<OpTrait::ReturnLike>() ||
                 isa<memref::DeallocOp>(user)) {
        return nullptr;
      }
      Operation *top = block->findAncestorOpInBlock(*user);
      if (!top)
        return nullptr;
      if (last->isBeforeInBlock(top))
        last = top;
    }
  return last;
}

struct DeallocAfterLastUsePass
    : mcc::impl::DeallocAfterLastUseBase<DeallocAfterLastUsePass> {
  void runOnOperation() override {
    SmallVector<memref::DeallocOp> deallocs;
    getOperation().walk([&](memref::DeallocOp op) { deallocs.push_back(op); });
    for (memref::DeallocOp dealloc : deallocs) {
      auto alloc = dealloc.getMemref().getDefiningOp<memref::AllocOp>();
      Block *block = dealloc->getBlock();
      if (!alloc || alloc->getBlock() != block)
        continue;
      Operation *last = lastUse(alloc, dealloc, block);
      if (last && last->isBeforeInBlock(dealloc))
        dealloc->moveAfter(last);
    }
  }
};

} // namespace
