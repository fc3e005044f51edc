//===- CpuProfileMarks.cpp - per-op profile marks in a CPU model ----------===//
//
// `mcc bench --kernels` on a CPU model times each op of its forward function:
// a mark before every op that does work and one before the return (see
// lib/Target/ModelSupport/Profile.c), with a label per op written into the
// model. The pass runs after bufferization and CPU tiling, when each such op
// at the top of the body is one unit of the run: a tiled loop nest (later an
// OpenMP parallel region), a product, a copy.
//
//===----------------------------------------------------------------------===//

#include "mcc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"

#include <set>

namespace mcc {
#define GEN_PASS_DEF_CPUPROFILEMARKS
#include "mcc/Transforms/Passes.h.inc"
} // namespace mcc

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kMark = "mcc_profile_mark";
constexpr llvm::StringLiteral kEnd = "mcc_profile_end";
constexpr llvm::StringLiteral kLabels = "mcc_profile_labels";

/// Ops that only allocate, free or describe memory, or move one scalar, are
/// bookkeeping: their time goes to the op before them.
bool doesWork(Operation *op) {
  if (op->hasTrait<OpTrait::IsTerminator>() ||
      isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp, memref::LoadOp,
          memref::StoreOp, ViewLikeOpInterface>(op))
    return false;
  return op->getNumRegions() > 0 || !isMemoryEffectFree(op);
}

/// The ONNX node names in a location (the importer names each op's location
/// after its node; fusion merges them).
void collectNames(Location loc, llvm::SetVector<StringRef> &names) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    names.insert(name.getName().getValue());
    collectNames(name.getChildLoc(), names);
  } else if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      collectNames(inner, names);
  } else if (auto callSite = dyn_cast<CallSiteLoc>(loc)) {
    collectNames(callSite.getCallee(), names);
  }
}

/// The buffer a view looks into (through subviews and reshapes).
Value rootOf(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

std::string shapeOf(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type)
    return "";
  std::string s;
  for (int64_t d : type.getShape())
    s += (s.empty() ? "" : "x") +
         (ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d));
  return s.empty() ? "scalar" : s;
}

/// The op a tiled op runs in its tile loops (not the fill of its
/// accumulator, fused into the same tiles); `op` itself otherwise.
Operation *coreOf(Operation *op) {
  Operation *core = op, *fill = nullptr;
  if (op->getNumRegions() > 0)
    op->walk([&](Operation *inner) {
      if (isa<linalg::FillOp>(inner))
        fill = fill ? fill : inner;
      else if (core == op &&
               (isa<linalg::LinalgOp>(inner) || isa<memref::CopyOp>(inner)))
        core = inner;
    });
  return core == op && fill ? fill : core;
}

/// What an op does, in a few words: the product's reduction size, or a
/// loop nest's kind and the math it calls, then its output's shape.
std::string describe(Operation *op) {
  Operation *core = coreOf(op);
  std::string s;
  if (auto copy = dyn_cast<memref::CopyOp>(core))
    return "copy " + shapeOf(rootOf(copy.getTarget()));
  auto linalgOp = dyn_cast<linalg::LinalgOp>(core);
  if (!linalgOp)
    return op->getName().getStringRef().str();
  Value out =
      linalgOp.getNumDpsInits() ? rootOf(linalgOp.getDpsInits()[0]) : Value();
  if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(core)) {
    s = isa<linalg::MatmulOp>(core) ? "matmul" : "batch_matmul";
    // A tile's rows of A are whole: its last dimension is the reduction.
    auto a = dyn_cast<MemRefType>(linalgOp->getOperand(0).getType());
    if (a && a.getRank() >= 2 && !ShapedType::isDynamic(a.getShape().back()))
      s += " k=" + std::to_string(a.getShape().back());
  } else if (auto generic = dyn_cast<linalg::GenericOp>(core)) {
    auto winograd = generic->getAttrOfType<StringAttr>("mcc.winograd");
    s = winograd ? "winograd_" + winograd.getValue().str()
        : generic.getNumReductionLoops() ? "reduce"
                                         : "map";
    std::set<std::string> math;
    generic.getRegion().walk([&](Operation *inner) {
      if (inner->getDialect() && inner->getDialect()->getNamespace() == "math")
        math.insert(inner->getName().stripDialect().str());
    });
    for (const std::string &m : math)
      s += "_" + m;
  } else {
    s = core->getName().stripDialect().str();
  }
  if (out)
    s += " " + shapeOf(out);
  return s;
}

std::string label(Operation *op) {
  std::string s = describe(op);
  llvm::SetVector<StringRef> names;
  collectNames(op->getLoc(), names);
  collectNames(coreOf(op)->getLoc(), names);
  if (!names.empty()) {
    s += " [" + names[0].str();
    if (names.size() > 1)
      s += ", " + names[1].str();
    if (names.size() > 2)
      s += " +" + std::to_string(names.size() - 2);
    s += "]";
  }
  // One line of the profile's text, one string of the table.
  for (char &c : s)
    if (c == '\t' || c == '\n' || c == '\0')
      c = ' ';
  return s;
}

struct CpuProfileMarksPass
    : mcc::impl::CpuProfileMarksBase<CpuProfileMarksPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward || forward.isExternal() || module.lookupSymbol(kLabels) ||
        !forward.getBody().hasOneBlock())
      return;
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    Block &body = forward.getBody().front();
    std::string table;
    SmallVector<Attribute> labels;
    int64_t next = 0;
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (!doesWork(&op))
        continue;
      b.setInsertionPoint(&op);
      Value id = arith::ConstantIntOp::create(b, op.getLoc(), next++, 64);
      func::CallOp::create(b, op.getLoc(), kMark, TypeRange{}, id);
      labels.push_back(b.getStringAttr(label(&op)));
      table += cast<StringAttr>(labels.back()).getValue();
      table.push_back('\0');
    }
    if (next == 0)
      return;
    body.walk([&](func::ReturnOp ret) {
      b.setInsertionPoint(ret);
      func::CallOp::create(b, ret.getLoc(), kEnd, TypeRange{}, ValueRange{});
    });
    table.push_back('\0');
    // Readable in dumps and tests; the global is what the model carries.
    forward->setAttr("mcc.profile_labels", b.getArrayAttr(labels));
    b.setInsertionPointToStart(module.getBody());
    auto declare = [&](StringRef name, TypeRange args) {
      auto fn = func::FuncOp::create(b, module.getLoc(), name,
                                     b.getFunctionType(args, {}));
      fn.setPrivate();
    };
    declare(kMark, b.getI64Type());
    declare(kEnd, {});
    auto type =
        MemRefType::get({static_cast<int64_t>(table.size())}, b.getI8Type());
    auto tensorType =
        RankedTensorType::get(type.getShape(), type.getElementType());
    SmallVector<int8_t> bytes(table.begin(), table.end());
    memref::GlobalOp::create(
        b, module.getLoc(), kLabels, b.getStringAttr("public"), type,
        DenseElementsAttr::get(tensorType, ArrayRef<int8_t>(bytes)),
        /*constant=*/true, /*alignment=*/IntegerAttr());
  }
};

} // namespace
