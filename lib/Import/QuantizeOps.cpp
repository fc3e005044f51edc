//===- QuantizeOps.cpp - QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear and the integer matmul/conv ops ---===//
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

using namespace mlir;

namespace mcc {

void registerQuantizeLowerings() {}

} // namespace mcc
