//===- SignalOps.cpp - window functions, DFT and related signal ops ---===//
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

using namespace mlir;

namespace mcc {

void registerSignalLowerings() {}

} // namespace mcc
