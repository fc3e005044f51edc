//===- Passes.h - mcc transformation passes -------------------------------===//
#ifndef MCC_TRANSFORMS_PASSES_H
#define MCC_TRANSFORMS_PASSES_H

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mcc {

#define GEN_PASS_DECL
#include "mcc/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mcc/Transforms/Passes.h.inc"

} // namespace mcc

#endif // MCC_TRANSFORMS_PASSES_H
