//===- GpuRowReductions.cpp - one thread block per reduced row ------------===//
//
// Lowered generically, a reduction (softmax's max and sum, layer norm's mean
// and variance) runs one GPU thread per output element, each walking its
// whole row serially with loads that no neighbour shares. Here each output
// element gets a thread block instead: its threads stride over the row
// together (adjacent threads, adjacent elements), each folds a partial
// result, gpu.all_reduce combines the partials through warp shuffles and
// shared memory, and one thread stores the result.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/BufferUtils.h"
#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

#include <limits>

namespace mcc {
#define GEN_PASS_DEF_GPUROWREDUCTIONS
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

/// The combiner `out = op(out, term)` ending a reduction body, with the
/// all_reduce kind and the identity that match it.
struct Combiner {
  Operation *op;
  gpu::AllReduceOperation kind;
  double identity;
};

std::optional<Combiner> matchCombiner(linalg::GenericOp g) {
  Block &body = g.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1)
    return std::nullopt;
  Operation *op = yield.getOperand(0).getDefiningOp();
  if (!op || op->getBlock() != &body || op->getNumOperands() != 2)
    return std::nullopt;
  BlockArgument out = body.getArgument(body.getNumArguments() - 1);
  // The accumulator may feed the combiner only.
  if (!out.hasOneUse() || (op->getOperand(0) != out && op->getOperand(1) != out))
    return std::nullopt;
  double inf = std::numeric_limits<double>::infinity();
  using K = gpu::AllReduceOperation;
  if (isa<arith::AddFOp>(op))
    return Combiner{op, K::ADD, 0.0};
  if (isa<arith::MulFOp>(op))
    return Combiner{op, K::MUL, 1.0};
  if (isa<arith::MaximumFOp>(op))
    return Combiner{op, K::MAXIMUMF, -inf};
  if (isa<arith::MinimumFOp>(op))
    return Combiner{op, K::MINIMUMF, inf};
  if (isa<arith::MaxNumFOp>(op))
    return Combiner{op, K::MAXNUMF, -inf};
  if (isa<arith::MinNumFOp>(op))
    return Combiner{op, K::MINNUMF, inf};
  return std::nullopt;
}

/// f32 generics on buffers whose reduction loops are the last loops (one,
/// or several taken together as one row: a global average pool's H and W),
/// with a single output. Loop ranges may be dynamic (rows over a symbolic
/// batch and sequence, softmax over a symbolic length).
bool isRowReduction(linalg::GenericOp g) {
  if (!g.hasPureBufferSemantics() || g.getNumDpsInits() != 1 ||
      g.getNumReductionLoops() == 0)
    return false;
  auto iters = g.getIteratorTypesArray();
  unsigned parallel = g.getNumParallelLoops();
  for (unsigned i = 0; i < iters.size(); ++i)
    if ((iters[i] == utils::IteratorType::reduction) != (i >= parallel))
      return false;
  auto outType = dyn_cast<MemRefType>(g.getDpsInits()[0].getType());
  if (!outType || !outType.getElementType().isF32())
    return false;
  for (Operation &op : g.getRegion().front())
    if (isa<linalg::IndexOp>(op))
      return false;
  return true;
}

void lower(linalg::GenericOp g, const Combiner &comb, int64_t maxThreads) {
  OpBuilder b(g);
  Location loc = g.getLoc();
  // An accumulator set to a constant right before (softmax's -inf, a sum's
  // 0) is that constant: no fill or copy kernel, no load.
  Attribute initValue;
  Operation *init = mcc::constantInitOf(g, g.getDpsInits()[0], initValue);
  if (init && !isa<FloatAttr>(initValue))
    init = nullptr;
  if (init)
    init->erase();
  // Loop sizes as values (constants where static, memref.dim of the
  // operands where dynamic), taken on the host before the launch.
  SmallVector<OpFoldResult> ranges = llvm::map_to_vector(
      cast<linalg::LinalgOp>(g.getOperation()).createLoopRanges(b, loc),
      [](const Range &r) { return r.size; });
  size_t numParallel = g.getNumParallelLoops();
  auto idx = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto value = [&](OpFoldResult v) {
    return getValueOrCreateConstantIndexOp(b, loc, v);
  };
  // A product of sizes, folded to a constant when all are static.
  auto product = [&](ArrayRef<OpFoldResult> sizes) -> Value {
    int64_t known = 1;
    Value dynamic;
    for (OpFoldResult size : sizes) {
      if (std::optional<int64_t> c = getConstantIntValue(size)) {
        known *= *c;
        continue;
      }
      Value v = cast<Value>(size);
      dynamic = dynamic ? arith::MulIOp::create(b, loc, dynamic, v) : v;
    }
    if (!dynamic)
      return idx(known);
    return known == 1 ? dynamic
                      : arith::MulIOp::create(b, loc, dynamic, idx(known));
  };
  Value rows = product(ArrayRef(ranges).take_front(numParallel));
  Value reduced = product(ArrayRef(ranges).drop_front(numParallel));
  // The smallest power of two covering a static row; a dynamic row gets
  // the most threads (a short one leaves threads idle, which is correct).
  std::optional<int64_t> length = getConstantIntValue(reduced);
  int64_t threads = 32;
  while (threads < maxThreads && (!length || threads < *length))
    threads *= 2;
  Value one = idx(1);
  auto launch =
      gpu::LaunchOp::create(b, loc, rows, one, one, idx(threads), one, one);
  b.setInsertionPointToStart(&launch.getBody().front());
  // The block's row, as indices of the parallel loops.
  Value row = launch.getBlockIds().x;
  SmallVector<Value> ivs(numParallel);
  for (int64_t i = static_cast<int64_t>(numParallel) - 1; i >= 0; --i) {
    ivs[i] = arith::RemUIOp::create(b, loc, row, value(ranges[i]));
    row = arith::DivUIOp::create(b, loc, row, value(ranges[i]));
  }
  auto indices = [&](OpOperand &operand, ValueRange loopIvs) {
    AffineMap map = g.getMatchingIndexingMap(&operand);
    SmallVector<Value> r;
    for (unsigned i = 0; i < map.getNumResults(); ++i)
      r.push_back(affine::AffineApplyOp::create(b, loc, map.getSubMap({i}),
                                                loopIvs));
    return r;
  };
  Block &body = g.getRegion().front();
  Type f32 = b.getF32Type();
  Value identity = arith::ConstantOp::create(
      b, loc, f32, b.getFloatAttr(f32, comb.identity));
  Value tid = launch.getThreadIds().x;
  auto loop = scf::ForOp::create(
      b, loc, tid, reduced, idx(threads), ValueRange{identity},
      [&](OpBuilder &, Location, Value j, ValueRange acc) {
        SmallVector<Value> loopIvs(ivs);
        // The row position j as indices of the reduction loops.
        SmallVector<Value> reductionIvs(ranges.size() - numParallel);
        for (int64_t i = static_cast<int64_t>(ranges.size()) - 1;
             i >= static_cast<int64_t>(numParallel); --i) {
          reductionIvs[i - numParallel] =
              i == static_cast<int64_t>(numParallel)
                  ? j
                  : arith::RemUIOp::create(b, loc, j, value(ranges[i]));
          if (i != static_cast<int64_t>(numParallel))
            j = arith::DivUIOp::create(b, loc, j, value(ranges[i]));
        }
        llvm::append_range(loopIvs, reductionIvs);
        IRMapping map;
        for (OpOperand *in : g.getDpsInputOperands())
          map.map(body.getArgument(in->getOperandNumber()),
                  memref::LoadOp::create(b, loc, in->get(),
                                         indices(*in, loopIvs)));
        map.map(body.getArgument(body.getNumArguments() - 1), acc[0]);
        for (Operation &op : body.without_terminator())
          b.clone(op, map);
        scf::YieldOp::create(b, loc, map.lookup(comb.op->getResult(0)));
      });
  Value total = gpu::AllReduceOp::create(
                    b, loc, f32, loop.getResult(0),
                    gpu::AllReduceOperationAttr::get(b.getContext(), comb.kind),
                    /*uniform=*/true)
                    .getResult();
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                      idx(0));
  scf::IfOp::create(b, loc, first, [&](OpBuilder &, Location) {
    OpOperand &outOperand = g.getDpsInitsMutable()[0];
    SmallVector<Value> loopIvs(ivs);
    loopIvs.append(ranges.size() - numParallel, idx(0));
    SmallVector<Value> at = indices(outOperand, loopIvs);
    Value old =
        init ? arith::ConstantOp::create(b, loc, cast<FloatAttr>(initValue))
                   .getResult()
             : memref::LoadOp::create(b, loc, outOperand.get(), at)
                   .getResult();
    IRMapping map;
    map.map(comb.op->getOperand(0), old);
    map.map(comb.op->getOperand(1), total);
    Value merged = b.clone(*comb.op, map)->getResult(0);
    memref::StoreOp::create(b, loc, merged, outOperand.get(), at);
    scf::YieldOp::create(b, loc);
  });
  gpu::TerminatorOp::create(b, loc);
  g->erase();
}

struct GpuRowReductionsPass
    : mcc::impl::GpuRowReductionsBase<GpuRowReductionsPass> {
  using GpuRowReductionsBase::GpuRowReductionsBase;

  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, Combiner>> work;
    getOperation().walk([&](linalg::GenericOp g) {
      if (!isRowReduction(g))
        return;
      // Short rows are cheaper one per thread than one per block. A
      // dynamic row (a softmax over the sequence) counts as long.
      int64_t length = 1;
      SmallVector<int64_t> ranges = g.getStaticLoopRanges();
      for (size_t i = g.getNumParallelLoops(); i < ranges.size(); ++i)
        if (!ShapedType::isDynamic(ranges[i]))
          length *= ranges[i];
        else
          length = std::max(length, minRowLength.getValue());
      if (length < minRowLength)
        return;
      if (auto comb = matchCombiner(g))
        work.push_back({g, *comb});
    });
    for (auto &[g, comb] : work)
      lower(g, comb, maxThreads);
    mcc::eraseDeadFills(getOperation());
  }
};

} // namespace
