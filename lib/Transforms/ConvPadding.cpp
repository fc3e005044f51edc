//===- ConvPadding.cpp - zero padding that a CPU kernel reads in place ----===//

#include "mcc/Transforms/ConvPadding.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace mcc {

bool isDepthwisePadReadInPlace(tensor::PadOp pad) {
  auto type = pad.getResultType();
  if (type.getRank() != 4 || !type.getElementType().isF32() ||
      !type.hasStaticShape() || !pad.getSourceType().hasStaticShape() ||
      !pad->hasOneUse())
    return false;
  ArrayRef<int64_t> low = pad.getStaticLow(), high = pad.getStaticHigh();
  if (ShapedType::isDynamicShape(low) || ShapedType::isDynamicShape(high) ||
      low[0] || low[1] || high[0] || high[1] || low[3] > kMaxImplicitLeftPad ||
      llvm::any_of(low, [](int64_t v) { return v < 0; }) ||
      llvm::any_of(high, [](int64_t v) { return v < 0; }))
    return false;
  Value value = pad.getConstantPaddingValue();
  if (!value || !matchPattern(value, m_PosZeroFloat()))
    return false;
  OpOperand &use = *pad->use_begin();
  auto conv = dyn_cast<linalg::DepthwiseConv2DNchwChwOp>(use.getOwner());
  return conv && use.getOperandNumber() == 0 &&
         cast<ShapedType>(conv.getDpsInputs()[1].getType())
             .getElementType()
             .isF32();
}

} // namespace mcc
