//===- RecurrentOps.cpp - RNN, GRU and LSTM unrolled over the static sequence length ---===//
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/NodeLowering.h"

using namespace mlir;

namespace mcc {

void registerRecurrentLowerings() {}

} // namespace mcc
