//===- IndexingOps.cpp - scatter, top-k, compress and other index-driven ops ---===//
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

using namespace mlir;

namespace mcc {

void registerIndexingLowerings() {}

} // namespace mcc
