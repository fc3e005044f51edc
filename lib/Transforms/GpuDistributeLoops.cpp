//===- GpuDistributeLoops.cpp - loop nests onto GPU blocks and threads ----===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mcc {
#define GEN_PASS_DEF_GPUDISTRIBUTELOOPS
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

bool touchesMemory(Operation *op) {
  bool touches = false;
  op->walk([&](Operation *inner) {
    if (isa<memref::LoadOp, memref::StoreOp>(inner))
      touches = true;
  });
  return touches;
}

gpu::ParallelLoopDimMappingAttr dimMap(MLIRContext *ctx,
                                       gpu::Processor processor) {
  AffineMap id = AffineMap::getMultiDimIdentityMap(1, ctx);
  return gpu::ParallelLoopDimMappingAttr::get(ctx, processor, id, id);
}

/// `first` and the top-level ops after it that must run in the same kernel
/// because they use values it (or they) define. Allocations and constants
/// in between, which use nothing of the group, move before `first` instead.
FailureOr<SmallVector<Operation *>> sequentialGroup(Operation *first) {
  Block *body = first->getBlock();
  SmallVector<Operation *> group = {first};
  llvm::SmallPtrSet<Operation *, 16> inGroup = {first};
  auto usesGroup = [&](Operation *op) {
    bool uses = false;
    op->walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (Operation *def = v.getDefiningOp())
          if (Operation *top = body->findAncestorOpInBlock(*def))
            uses |= inGroup.contains(top);
    });
    return uses;
  };
  Operation *last = first;
  while (true) {
    Operation *furthest = last;
    for (Operation *op : group)
      for (Operation *user : op->getUsers()) {
        Operation *top = body->findAncestorOpInBlock(*user);
        if (top && furthest->isBeforeInBlock(top))
          furthest = top;
      }
    if (furthest == last)
      return group;
    if (furthest->hasTrait<OpTrait::IsTerminator>())
      return first->emitError(
          "mcc-gpu-distribute: a value computed on the GPU is returned");
    for (Operation *op = last->getNextNode(); op != furthest->getNextNode();) {
      Operation *next = op->getNextNode();
      if (op->getNumRegions() == 0 && !usesGroup(op) &&
          (isa<memref::AllocOp, arith::ConstantOp>(op) ||
           isMemoryEffectFree(op))) {
        op->moveBefore(first);
      } else {
        group.push_back(op);
        inGroup.insert(op);
      }
      op = next;
    }
    last = furthest;
  }
}

/// Reorders the dimensions of `par` so that the one indexing the innermost
/// dimension of the nest's (first) store comes last: collapsing then gives
/// consecutive threads consecutive addresses. linalg emits parallel loops in
/// iterator order, which for a depthwise convolution over NCHW data is
/// (n, oh, ow, c): threads 0, 1, 2 would write 112 x 112 floats apart.
scf::ParallelOp orderForCoalescing(RewriterBase &rewriter,
                                   scf::ParallelOp par) {
  if (par.getNumLoops() < 2 || par.getNumReductions() != 0)
    return par;
  memref::StoreOp store;
  par.walk([&](memref::StoreOp s) {
    if (!store)
      store = s;
  });
  if (!store)
    return par;
  SmallVector<Value> ivs = llvm::to_vector_of<Value>(par.getInductionVars());
  SmallVector<int64_t> position(ivs.size(), -1);
  for (auto [d, index] : llvm::enumerate(store.getIndices()))
    for (auto [i, iv] : llvm::enumerate(ivs))
      if (index == iv)
        position[i] = d;
  SmallVector<unsigned> order = llvm::to_vector(llvm::seq<unsigned>(0, ivs.size()));
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    return position[a] < position[b];
  });
  if (llvm::is_sorted(order))
    return par;
  auto permuted = [&](ValueRange values) {
    return llvm::map_to_vector(order, [&](unsigned i) { return values[i]; });
  };
  rewriter.setInsertionPoint(par);
  auto reordered = scf::ParallelOp::create(
      rewriter, par.getLoc(), permuted(par.getLowerBound()),
      permuted(par.getUpperBound()), permuted(par.getStep()),
      [&](OpBuilder &b, Location, ValueRange newIvs) {
        IRMapping mapping;
        for (auto [newPos, oldPos] : llvm::enumerate(order))
          mapping.map(ivs[oldPos], newIvs[newPos]);
        for (Operation &op : par.getBody()->without_terminator())
          b.clone(op, mapping);
      });
  rewriter.eraseOp(par);
  return reordered;
}

/// The root buffer a view looks into.
Value rootBuffer(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// The value of a constant or of a product of constants (the trip count
/// collapsing leaves as arith.muli).
std::optional<int64_t> foldedProduct(Value v) {
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return c;
  auto mul = v.getDefiningOp<arith::MulIOp>();
  if (!mul)
    return std::nullopt;
  std::optional<int64_t> l = foldedProduct(mul.getLhs());
  std::optional<int64_t> r = foldedProduct(mul.getRhs());
  if (!l || !r)
    return std::nullopt;
  return *l * *r;
}

/// True if `par`'s body is loads, pure ops and one store (returned, with
/// the other ops in `body`), where a load of the stored buffer reads the
/// stored element itself: then moving loads of one element above the store
/// of another changes nothing.
bool loadsThenOneStore(scf::ParallelOp par, memref::StoreOp &store,
                       SmallVector<Operation *> &body) {
  for (Operation &op : par.getBody()->without_terminator()) {
    if (op.getNumRegions() != 0)
      return false;
    if (auto s = dyn_cast<memref::StoreOp>(op)) {
      if (store)
        return false;
      store = s;
      continue;
    }
    if (!isa<memref::LoadOp>(op) && !isMemoryEffectFree(&op))
      return false;
    body.push_back(&op);
  }
  if (!store)
    return false;
  Value stored = rootBuffer(store.getMemRef());
  for (Operation *op : body)
    if (auto load = dyn_cast<memref::LoadOp>(op))
      if (rootBuffer(load.getMemRef()) == stored &&
          !llvm::equal(load.getIndices(), store.getIndices()))
        return false;
  return true;
}

/// A nest of two or more dimensions from 0 with step 1 whose innermost
/// dimension has a static extent E that `factor` divides gets `factor`
/// elements per thread that differ in that index alone: j, j + E/factor,
/// j + 2E/factor, ... (loads first, then stores, as in coarsen). The index
/// arithmetic that turns a thread id into the outer indices then runs once
/// per thread, not once per element: spread over the elements, those
/// div/rem chains made resnet50's im2col copies ALU-bound.
scf::ParallelOp coarsenInnermost(RewriterBase &rewriter, scf::ParallelOp par,
                                 int64_t factor, int64_t minIterations) {
  unsigned rank = par.getNumLoops();
  if (factor < 2 || rank < 2 || par.getNumReductions() != 0)
    return {};
  int64_t total = 1;
  for (unsigned d = 0; d < rank; ++d) {
    std::optional<int64_t> n = getConstantIntValue(par.getUpperBound()[d]);
    if (!n || !matchPattern(par.getLowerBound()[d], m_Zero()) ||
        !matchPattern(par.getStep()[d], m_One()))
      return {};
    total *= *n;
  }
  int64_t extent = *getConstantIntValue(par.getUpperBound()[rank - 1]);
  if (extent % factor != 0 || total < minIterations)
    return {};
  memref::StoreOp store;
  SmallVector<Operation *> body;
  if (!loadsThenOneStore(par, store, body))
    return {};
  Location loc = par.getLoc();
  int64_t part = extent / factor;
  rewriter.setInsertionPoint(par);
  SmallVector<Value> upper(par.getUpperBound());
  upper.back() = arith::ConstantIndexOp::create(rewriter, loc, part);
  auto coarse = scf::ParallelOp::create(
      rewriter, loc, par.getLowerBound(), upper, par.getStep(),
      [&](OpBuilder &b, Location, ValueRange ivs) {
        SmallVector<IRMapping> mappings(factor);
        for (int64_t u = 0; u < factor; ++u) {
          IRMapping &mapping = mappings[u];
          for (unsigned d = 0; d + 1 < rank; ++d)
            mapping.map(par.getInductionVars()[d], ivs[d]);
          Value inner =
              u == 0 ? ivs.back()
                     : arith::AddIOp::create(
                           b, loc, ivs.back(),
                           arith::ConstantIndexOp::create(b, loc, u * part))
                           .getResult();
          mapping.map(par.getInductionVars().back(), inner);
          for (Operation *op : body)
            b.clone(*op, mapping);
        }
        for (IRMapping &mapping : mappings)
          b.clone(*store, mapping);
      });
  rewriter.eraseOp(par);
  return coarse;
}

/// A one-dimensional nest from 0 to a static N with step 1 gets `factor`
/// elements per thread, t, t + T, t + 2T, ... (T = ceil(N / factor)): all
/// loads of all of them first, then the stores. A thread with a single
/// 4-byte load in flight leaves most of the memory bandwidth unused
/// (resnet50's im2col copies ran at about a fifth of it). Only bodies of
/// loads, pure ops and one store, where a load of the stored buffer reads
/// the stored element itself: then moving loads of one element above the
/// store of another changes nothing.
scf::ParallelOp coarsen(RewriterBase &rewriter, scf::ParallelOp par,
                        int64_t factor, int64_t minIterations) {
  if (factor < 2 || par.getNumLoops() != 1 || par.getNumReductions() != 0 ||
      !matchPattern(par.getLowerBound()[0], m_Zero()) ||
      !matchPattern(par.getStep()[0], m_One()))
    return par;
  std::optional<int64_t> n = foldedProduct(par.getUpperBound()[0]);
  if (!n || *n < minIterations)
    return par;
  memref::StoreOp store;
  SmallVector<Operation *> body;
  if (!loadsThenOneStore(par, store, body))
    return par;

  Location loc = par.getLoc();
  int64_t perThread = llvm::divideCeil(*n, factor);
  rewriter.setInsertionPoint(par);
  auto index = [&](OpBuilder &b, int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value zero = index(rewriter, 0), one = index(rewriter, 1);
  auto coarse = scf::ParallelOp::create(
      rewriter, loc, ValueRange{zero}, ValueRange{index(rewriter, perThread)},
      ValueRange{one},
      [&](OpBuilder &b, Location, ValueRange ivs) {
        Value iv = par.getInductionVars()[0];
        SmallVector<std::pair<Value, IRMapping>> elements;
        for (int64_t u = 0; u < factor; ++u) {
          // Past the end (the last element of the last threads) the loads
          // read element N - 1 and the store is skipped.
          Value i = u == 0 ? ivs[0]
                           : arith::AddIOp::create(b, loc, ivs[0],
                                                   index(b, u * perThread))
                                 .getResult();
          bool mayPass = (u + 1) * perThread > *n;
          Value at = mayPass ? arith::MinUIOp::create(b, loc, i,
                                                      index(b, *n - 1))
                                   .getResult()
                             : i;
          IRMapping mapping;
          mapping.map(iv, at);
          for (Operation *op : body)
            b.clone(*op, mapping);
          elements.push_back(
              {mayPass ? arith::CmpIOp::create(b, loc,
                                               arith::CmpIPredicate::ult, i,
                                               index(b, *n))
                             .getResult()
                       : Value(),
               mapping});
        }
        for (auto &[inside, mapping] : elements) {
          auto emitStore = [&](OpBuilder &sb) {
            sb.clone(*store, mapping);
          };
          if (!inside) {
            emitStore(b);
            continue;
          }
          scf::IfOp::create(b, loc, inside, [&](OpBuilder &ib, Location) {
            emitStore(ib);
            scf::YieldOp::create(ib, loc);
          });
        }
      });
  rewriter.eraseOp(par);
  return coarse;
}

struct GpuDistributeLoopsPass
    : mcc::impl::GpuDistributeLoopsBase<GpuDistributeLoopsPass> {
  using GpuDistributeLoopsBase::GpuDistributeLoopsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *ctx = &getContext();
    if (func.isExternal())
      return;
    IRRewriter rewriter(ctx);
    Block &body = func.getBody().front();

    // Sequential top-level work becomes a one-iteration parallel loop. Work
    // that yields values (a full reduction's scf.for, a scalar load) takes
    // every later op that uses them along, up to where nothing it defines is
    // used outside: host code cannot read device memory.
    SmallVector<Operation *> topLevel =
        llvm::map_to_vector(body, [](Operation &op) { return &op; });
    for (Operation *op : topLevel) {
      Operation &first = *op;
      if (first.getBlock() != &body || isa<scf::ParallelOp>(first) ||
          first.hasTrait<OpTrait::IsTerminator>())
        continue;
      if (!isa<scf::ForOp, memref::LoadOp, memref::StoreOp>(first) ||
          !touchesMemory(&first))
        continue;
      FailureOr<SmallVector<Operation *>> group = sequentialGroup(&first);
      if (failed(group))
        return signalPassFailure();
      rewriter.setInsertionPoint(&first);
      Location loc = first.getLoc();
      Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
      Value c1 = arith::ConstantIndexOp::create(rewriter, loc, 1);
      auto par = scf::ParallelOp::create(rewriter, loc, ValueRange{c0},
                                         ValueRange{c1}, ValueRange{c1});
      for (Operation *op : *group)
        op->moveBefore(par.getBody()->getTerminator());
    }

    SmallVector<scf::ParallelOp> loops;
    for (Operation &op : body)
      if (auto par = dyn_cast<scf::ParallelOp>(op))
        loops.push_back(par);
    for (scf::ParallelOp par : loops) {
      par = orderForCoalescing(rewriter, par);
      scf::ParallelOp alongRows =
          coarsenInnermost(rewriter, par, coarsenFactor, coarsenMinIterations);
      bool coarsened = static_cast<bool>(alongRows);
      if (coarsened)
        par = alongRows;
      // Collapse to one dimension so that any rank fills whole blocks.
      if (par.getNumLoops() > 1) {
        std::vector<unsigned> all;
        for (unsigned i = 0; i < par.getNumLoops(); ++i)
          all.push_back(i);
        Operation *next = par->getNextNode();
        rewriter.setInsertionPoint(par);
        collapseParallelLoops(rewriter, par, {all});
        par = dyn_cast_or_null<scf::ParallelOp>(next->getPrevNode());
        if (!par || par.getNumLoops() != 1) {
          func.emitError("mcc-gpu-distribute: cannot collapse a loop nest");
          return signalPassFailure();
        }
      }
      if (!coarsened)
        par = coarsen(rewriter, par, coarsenFactor, coarsenMinIterations);
      auto [outer, inner] = scf::tileParallelLoop(
          par, ArrayRef<int64_t>{blockSize}, /*noMinMaxBounds=*/true);
      if (failed(gpu::setMappingAttr(outer,
                                     {dimMap(ctx, gpu::Processor::BlockX)})) ||
          failed(gpu::setMappingAttr(inner,
                                     {dimMap(ctx, gpu::Processor::ThreadX)}))) {
        par.emitError("mcc-gpu-distribute: cannot set the loop mapping");
        return signalPassFailure();
      }
      // Nested parallel loops inside run sequentially in the thread: as
      // scf.for, since convert-parallel-loops-to-gpu leaves a whole nest on
      // the host when one sits under an scf.for (a middle-axis reduction).
      SmallVector<scf::ParallelOp> nestedLoops;
      inner.walk([&](scf::ParallelOp nested) {
        if (nested != inner)
          nestedLoops.push_back(nested);
      });
      for (scf::ParallelOp nested : nestedLoops) {
        rewriter.setInsertionPoint(nested);
        if (nested.getNumReductions() == 0 &&
            succeeded(scf::parallelForToNestedFors(rewriter, nested)))
          continue;
        (void)gpu::setMappingAttr(
            nested, SmallVector<gpu::ParallelLoopDimMappingAttr>(
                        nested.getNumLoops(),
                        dimMap(ctx, gpu::Processor::Sequential)));
      }
    }
  }
};

} // namespace
