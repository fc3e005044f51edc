//===- ContractionOps.cpp - Einsum and ConvTranspose ---===//
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

using namespace mlir;

namespace mcc {

void registerContractionLowerings() {}

} // namespace mcc
