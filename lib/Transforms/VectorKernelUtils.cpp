//===- VectorKernelUtils.cpp - helpers of the CPU vector kernels ----------===//

#include "mcc/Transforms/VectorKernelUtils.h"

#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace mcc {

bool hasUnitInnerStride(Value v) {
  auto t = dyn_cast<MemRefType>(v.getType());
  if (!t || !t.getElementType().isF32())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(t.getStridesAndOffset(strides, offset)))
    return false;
  return !strides.empty() && strides.back() == 1;
}

Value rootBuffer(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

bool readElsewhere(Value v, ArrayRef<Operation *> ops) {
  Value root = rootBuffer(v);
  if (!root.getDefiningOp<memref::AllocOp>() &&
      !root.getDefiningOp<memref::AllocaOp>())
    return true;
  SmallVector<Value> aliases = {root};
  for (size_t i = 0; i < aliases.size(); ++i)
    for (Operation *user : aliases[i].getUsers()) {
      if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
        if (view.getViewSource() == aliases[i])
          llvm::append_range(aliases, user->getResults());
        continue;
      }
      if (isa<memref::DeallocOp>(user) || llvm::is_contained(ops, user))
        continue;
      return true;
    }
  return false;
}

bool vectorizableBody(linalg::GenericOp op) {
  for (Operation &inner : op.getBody()->without_terminator()) {
    if (inner.getNumRegions() || !OpTrait::hasElementwiseMappableTraits(&inner))
      return false;
    for (Type t : llvm::concat<const Type>(inner.getOperandTypes(),
                                           inner.getResultTypes()))
      if (!t.isIntOrFloat())
        return false;
  }
  return true;
}

SmallVector<int64_t> intsOf(DenseIntElementsAttr a) {
  return llvm::to_vector(a.getValues<int64_t>());
}

void VectorKernelBuilder::forLoop(Value lo, Value hi, int64_t step,
                                  llvm::function_ref<void(Value)> body) {
  scf::ForOp::create(b, loc, lo, hi, idx(step), ValueRange{},
                     [&](OpBuilder &, Location, Value iv, ValueRange) {
                       body(iv);
                       scf::YieldOp::create(b, loc);
                     });
}

Value VectorKernelBuilder::zeros(VectorType t) {
  return arith::ConstantOp::create(b, loc, t, DenseElementsAttr::get(t, 0.0f));
}

Value VectorKernelBuilder::mask(VectorType t, Value count) {
  return vector::CreateMaskOp::create(
      b, loc, VectorType::get(t.getShape(), b.getI1Type()), ValueRange{count});
}

Value VectorKernelBuilder::loadStrided(Value x, ValueRange at, int64_t lanes,
                                       int64_t stride, Value left) {
  auto wideType = VectorType::get({lanes * stride}, b.getF32Type());
  return loadStridedMasked(x, at, lanes, stride,
                           left ? mask(wideType, left) : Value());
}

Value VectorKernelBuilder::loadStridedMasked(Value x, ValueRange at,
                                             int64_t lanes, int64_t stride,
                                             Value wideMask) {
  auto wideType = VectorType::get({lanes * stride}, b.getF32Type());
  Value wide =
      wideMask ? vector::MaskedLoadOp::create(b, loc, wideType, x, at, wideMask,
                                              zeros(wideType))
                     .getResult()
               : vector::LoadOp::create(b, loc, wideType, x, at).getResult();
  if (stride == 1)
    return wide;
  SmallVector<int64_t> every;
  for (int64_t i = 0; i < lanes; ++i)
    every.push_back(i * stride);
  return vector::ShuffleOp::create(b, loc, wide, wide, every);
}

} // namespace mcc
