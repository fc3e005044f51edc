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

/// One op of a row kernel: a row reduction (with its combiner) or an
/// elementwise map over the same rows and columns.
struct RowMember {
  linalg::GenericOp op;
  std::optional<Combiner> combiner;
  /// The leading loops that index the row (the rest index its columns).
  unsigned rowLoops;
};

/// Loop ranges without the unit ones (a reshape may add or drop them).
SmallVector<int64_t> nonUnit(ArrayRef<int64_t> ranges) {
  return llvm::filter_to_vector(ranges, [](int64_t r) { return r != 1; });
}

/// The buffer a view looks into.
Value rootOf(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// Element offsets of an access as coefficients of the loop indices (the
/// last entry is the constant), with the buffer it lands in. None where the
/// layout is not static or the map not linear.
struct LinearAccess {
  Value root;
  SmallVector<int64_t> coefficients;
  bool operator==(const LinearAccess &o) const {
    return root == o.root && coefficients == o.coefficients;
  }
};

std::optional<LinearAccess> linearAccess(linalg::GenericOp g,
                                         OpOperand &operand) {
  auto type = dyn_cast<MemRefType>(operand.get().getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!type || failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return std::nullopt;
  AffineMap map = g.getMatchingIndexingMap(&operand);
  for (AffineExpr e : map.getResults()) {
    bool linear = true;
    e.walk([&](AffineExpr sub) {
      if (isa<AffineBinaryOpExpr>(sub) &&
          sub.getKind() != AffineExprKind::Add &&
          sub.getKind() != AffineExprKind::Mul)
        linear = false;
    });
    if (!linear || map.getNumSymbols() != 0)
      return std::nullopt;
  }
  unsigned dims = map.getNumDims();
  auto at = [&](int64_t unitDim) {
    SmallVector<int64_t> point(dims, 0);
    if (unitDim >= 0)
      point[unitDim] = 1;
    SmallVector<int64_t> indices = map.compose(point);
    int64_t linear = offset;
    for (auto [index, stride] : llvm::zip(indices, strides))
      linear += index * stride;
    return linear;
  };
  LinearAccess access;
  access.root = rootOf(operand.get());
  int64_t base = at(-1);
  // Unit loops only ever take index 0: leaving them out makes accesses of
  // members whose loops differ by unit dims comparable.
  SmallVector<int64_t> loopRanges = g.getStaticLoopRanges();
  for (unsigned d = 0; d < dims; ++d)
    if (loopRanges[d] != 1)
      access.coefficients.push_back(at(d) - base);
  access.coefficients.push_back(base);
  return access;
}

/// True if every block of a row kernel made of `members` touches only its
/// own row of each buffer the members write: all accesses to such a buffer
/// land on the same element for the same loop indices.
bool rowLocal(ArrayRef<RowMember> members) {
  DenseMap<Value, LinearAccess> written;
  for (RowMember m : members) {
    OpOperand &out = m.op.getDpsInitsMutable()[0];
    std::optional<LinearAccess> access = linearAccess(m.op, out);
    if (!access)
      return false;
    auto [it, inserted] = written.try_emplace(access->root, *access);
    if (!inserted && !(it->second == *access))
      return false;
  }
  for (RowMember m : members)
    for (OpOperand &operand : m.op->getOpOperands()) {
      std::optional<LinearAccess> access = linearAccess(m.op, operand);
      auto it = written.find(rootOf(operand.get()));
      if (it == written.end())
        continue;
      if (!access || !(it->second == *access))
        return false;
    }
  return true;
}

/// Lowers `members` (same loop ranges, rows first) to one gpu.launch with a
/// block per row, placed where the last member was. Each member runs in
/// turn, its threads striding over the row; a barrier between members makes
/// one's stores visible to the next (reductions store from thread 0).
void lower(ArrayRef<RowMember> members, int64_t maxThreads) {
  linalg::GenericOp last = members.back().op;
  OpBuilder b(last);
  Location loc = last.getLoc();
  // An accumulator set to a constant right before (softmax's -inf, a sum's
  // 0) is that constant: no fill or copy kernel, no load.
  SmallVector<std::optional<FloatAttr>> initValues;
  for (RowMember m : members) {
    Attribute initValue;
    Operation *init =
        m.combiner ? mcc::constantInitOf(m.op, m.op.getDpsInits()[0], initValue)
                   : nullptr;
    if (init && isa<FloatAttr>(initValue)) {
      init->erase();
      initValues.push_back(cast<FloatAttr>(initValue));
    } else {
      initValues.push_back(std::nullopt);
    }
  }
  linalg::GenericOp first = members.front().op;
  // Loop sizes as values (constants where static, memref.dim of the
  // operands where dynamic), taken on the host before the launch.
  SmallVector<OpFoldResult> ranges = llvm::map_to_vector(
      cast<linalg::LinalgOp>(first.getOperation()).createLoopRanges(b, loc),
      [](const Range &r) { return r.size; });
  size_t numParallel = first.getNumParallelLoops();
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
  Value tid = launch.getThreadIds().x;
  Type f32 = b.getF32Type();
  // Indices of a member's loops for the block's row and the row position
  // j: the row's delinearized over its row loops, j's over the others.
  auto delinearize = [&](Value linear, ArrayRef<OpFoldResult> sizes) {
    SmallVector<Value> ivs(sizes.size());
    for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
      if (i == 0) {
        ivs[i] = linear;
        break;
      }
      ivs[i] = arith::RemUIOp::create(b, loc, linear, value(sizes[i]));
      linear = arith::DivUIOp::create(b, loc, linear, value(sizes[i]));
    }
    return ivs;
  };
  Value blockRow = launch.getBlockIds().x;
  for (auto [n, member] : llvm::enumerate(members)) {
    linalg::GenericOp g = member.op;
    SmallVector<OpFoldResult> memberRanges =
        n == 0 ? ranges
               : llvm::map_to_vector(g.getStaticLoopRanges(),
                                     [&](int64_t r) -> OpFoldResult {
                                       return b.getIndexAttr(r);
                                     });
    ArrayRef<OpFoldResult> rowSizes =
        ArrayRef(memberRanges).take_front(member.rowLoops);
    ArrayRef<OpFoldResult> columnSizes =
        ArrayRef(memberRanges).drop_front(member.rowLoops);
    // The row index of a block is below the product of the row sizes:
    // the outermost row loop takes what is left after the others.
    SmallVector<Value> ivs = rowSizes.empty() ? SmallVector<Value>{}
                                              : delinearize(blockRow, rowSizes);
    auto loopIvsAt = [&](Value j) {
      SmallVector<Value> loopIvs(ivs);
      if (!columnSizes.empty())
        llvm::append_range(loopIvs, delinearize(j, columnSizes));
      return loopIvs;
    };
    auto indices = [&](OpOperand &operand, ValueRange loopIvs) {
      AffineMap map = g.getMatchingIndexingMap(&operand);
      SmallVector<Value> r;
      for (unsigned i = 0; i < map.getNumResults(); ++i)
        r.push_back(affine::AffineApplyOp::create(b, loc, map.getSubMap({i}),
                                                  loopIvs));
      return r;
    };
    Block &body = g.getRegion().front();
    OpOperand &outOperand = g.getDpsInitsMutable()[0];
    BlockArgument outArg = body.getArgument(body.getNumArguments() - 1);
    auto mapInputs = [&](IRMapping &map, ValueRange loopIvs) {
      for (OpOperand *in : g.getDpsInputOperands())
        map.map(body.getArgument(in->getOperandNumber()),
                memref::LoadOp::create(b, loc, in->get(),
                                       indices(*in, loopIvs)));
    };
    if (!member.combiner) {
      // An elementwise map: each thread its share of the row's columns.
      scf::ForOp::create(
          b, loc, tid, reduced, idx(threads), ValueRange{},
          [&](OpBuilder &, Location, Value j, ValueRange) {
            SmallVector<Value> loopIvs = loopIvsAt(j);
            IRMapping map;
            mapInputs(map, loopIvs);
            SmallVector<Value> at = indices(outOperand, loopIvs);
            if (!outArg.use_empty())
              map.map(outArg, memref::LoadOp::create(b, loc, outOperand.get(),
                                                     at));
            for (Operation &op : body.without_terminator())
              b.clone(op, map);
            Value result = map.lookupOrDefault(
                body.getTerminator()->getOperand(0));
            memref::StoreOp::create(b, loc, result, outOperand.get(), at);
            scf::YieldOp::create(b, loc);
          });
    } else {
      const Combiner &comb = *member.combiner;
      Value identity = arith::ConstantOp::create(
          b, loc, f32, b.getFloatAttr(f32, comb.identity));
      auto loop = scf::ForOp::create(
          b, loc, tid, reduced, idx(threads), ValueRange{identity},
          [&](OpBuilder &, Location, Value j, ValueRange acc) {
            SmallVector<Value> loopIvs = loopIvsAt(j);
            IRMapping map;
            mapInputs(map, loopIvs);
            map.map(outArg, acc[0]);
            for (Operation &op : body.without_terminator())
              b.clone(op, map);
            scf::YieldOp::create(b, loc, map.lookup(comb.op->getResult(0)));
          });
      Value total =
          gpu::AllReduceOp::create(
              b, loc, f32, loop.getResult(0),
              gpu::AllReduceOperationAttr::get(b.getContext(), comb.kind),
              /*uniform=*/true)
              .getResult();
      Value isFirst = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            tid, idx(0));
      std::optional<FloatAttr> initValue = initValues[n];
      scf::IfOp::create(b, loc, isFirst, [&](OpBuilder &, Location) {
        SmallVector<Value> loopIvs(ivs);
        loopIvs.append(columnSizes.size(), idx(0));
        SmallVector<Value> at = indices(outOperand, loopIvs);
        Value old =
            initValue
                ? arith::ConstantOp::create(b, loc, *initValue).getResult()
                : memref::LoadOp::create(b, loc, outOperand.get(), at)
                      .getResult();
        IRMapping map;
        map.map(comb.op->getOperand(0), old);
        map.map(comb.op->getOperand(1), total);
        Value merged = b.clone(*comb.op, map)->getResult(0);
        memref::StoreOp::create(b, loc, merged, outOperand.get(), at);
        scf::YieldOp::create(b, loc);
      });
    }
    if (n + 1 != members.size())
      gpu::BarrierOp::create(b, loc);
  }
  gpu::TerminatorOp::create(b, loc);
  for (RowMember m : members)
    m.op->erase();
}

/// Elementwise f32 generics on buffers with one output and no index ops.
bool isRowMap(linalg::GenericOp g) {
  if (!g.hasPureBufferSemantics() || g.getNumDpsInits() != 1 ||
      g.getNumReductionLoops() != 0)
    return false;
  auto outType = dyn_cast<MemRefType>(g.getDpsInits()[0].getType());
  if (!outType || !outType.getElementType().isF32())
    return false;
  for (Operation &op : g.getRegion().front())
    if (isa<linalg::IndexOp>(op) || op.getNumRegions() != 0)
      return false;
  return true;
}

/// Ops that may sit between the members of a row kernel: they compute
/// nothing the kernel reads and need no device work of their own.
bool passive(Operation *op) {
  return isa<memref::AllocOp, arith::ConstantOp, ViewLikeOpInterface>(op);
}

/// Grows a row kernel from its first reduction over the ops that follow
/// it: reductions and elementwise maps over the same static loop ranges
/// (layer norm's mean, variance and normalization; softmax's max, sum and
/// division), as long as each block stays on its own row. Between members
/// only allocations, constants, views, and fills and copies of buffers no
/// member so far touches (the kernel runs after them) may stand.
void extend(SmallVector<RowMember> &members,
            const DenseMap<Operation *, Combiner> &reductions) {
  linalg::GenericOp first = members.front().op;
  SmallVector<int64_t> ranges = first.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return;
  unsigned numParallel = first.getNumParallelLoops();
  SmallVector<int64_t> rowKey = nonUnit(ArrayRef(ranges).take_front(numParallel));
  SmallVector<int64_t> columnKey =
      nonUnit(ArrayRef(ranges).drop_front(numParallel));
  // The split of `g`'s loops into row and column loops, if its ranges are
  // the group's up to unit loops.
  auto split = [&](linalg::GenericOp g,
                   std::optional<unsigned> fixed) -> std::optional<unsigned> {
    SmallVector<int64_t> r = g.getStaticLoopRanges();
    for (unsigned p = 0; p <= r.size(); ++p) {
      if (fixed && p != *fixed)
        continue;
      if (nonUnit(ArrayRef(r).take_front(p)) == rowKey &&
          nonUnit(ArrayRef(r).drop_front(p)) == columnKey)
        return p;
    }
    return std::nullopt;
  };
  llvm::SmallPtrSet<Value, 8> touched;
  auto touch = [&](linalg::GenericOp g) {
    for (Value v : g->getOperands())
      touched.insert(rootOf(v));
  };
  touch(first);
  for (Operation *op = first->getNextNode(); op; op = op->getNextNode()) {
    if (passive(op))
      continue;
    if (isa<linalg::FillOp, memref::CopyOp>(op)) {
      // It will run before the kernel: only if no member so far touches
      // what it reads or writes (the start of a later member's
      // accumulator, typically).
      if (llvm::any_of(op->getOperands(), [&](Value v) {
            return touched.contains(rootOf(v));
          }))
        return;
      continue;
    }
    auto g = dyn_cast<linalg::GenericOp>(op);
    if (!g || llvm::any_of(g.getStaticLoopRanges(), ShapedType::isDynamic))
      return;
    auto reduction = reductions.find(g);
    if (reduction != reductions.end()) {
      std::optional<unsigned> rowLoops = split(g, g.getNumParallelLoops());
      if (!rowLoops)
        return;
      members.push_back({g, reduction->second, *rowLoops});
    } else if (isRowMap(g)) {
      std::optional<unsigned> rowLoops = split(g, std::nullopt);
      if (!rowLoops)
        return;
      members.push_back({g, std::nullopt, *rowLoops});
    } else {
      return;
    }
    if (!rowLocal(members)) {
      members.pop_back();
      return;
    }
    touch(g);
  }
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
    DenseMap<Operation *, Combiner> reductions;
    for (auto &[g, comb] : work)
      reductions.try_emplace(g, comb);
    llvm::SmallPtrSet<Operation *, 16> lowered;
    for (auto &[g, comb] : work) {
      if (lowered.contains(g))
        continue;
      SmallVector<RowMember> members = {{g, comb, g.getNumParallelLoops()}};
      if (fuseRows)
        extend(members, reductions);
      for (RowMember m : members)
        lowered.insert(m.op);
      lower(members, maxThreads);
    }
    mcc::eraseDeadFills(getOperation());
  }
};

} // namespace
