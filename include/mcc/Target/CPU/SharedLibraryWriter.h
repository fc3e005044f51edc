//===- SharedLibraryWriter.h - LLVM dialect module to a model .so ---------===//
#ifndef MCC_TARGET_CPU_SHAREDLIBRARYWRITER_H
#define MCC_TARGET_CPU_SHAREDLIBRARYWRITER_H

#include "mcc/Import/OnnxImporter.h"
#include "mcc/Support/StepTimer.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mcc {

struct CpuTargetOptions {
  std::string cpu;            // empty: the host CPU and its features
  std::string dumpLlvmIrPath; // optional: write the optimized LLVM IR here
  /// The host side of a CUDA model: runs through the CUDA runtime shim.
  bool cuda = false;
  std::string gpuArch; // recorded in the descriptor
  /// CUDA only: written as `mcc_precision` for the runtime shim.
  std::string precision = "fp32";
  /// Keep the weights in "<output>.weights" beside the .so (mapped at load)
  /// instead of inside it.
  bool externalWeights = false;
  /// Optional: records the library-writing steps (`mcc compile --timing`).
  StepTimer *timer = nullptr;
};

/// Translates `module` (LLVM dialect, holding @forward) to LLVM IR, adds the
/// model descriptor, run entry point and weight blob, compiles for the CPU
/// and links `outputPath`, which appears only if every step succeeded.
mlir::LogicalResult writeCpuSharedLibrary(mlir::ModuleOp module,
                                          const ImportedModel &model,
                                          const CpuTargetOptions &options,
                                          llvm::StringRef outputPath);

/// Checks the imported signature's dynamic dims (docs/design/0010) before
/// anything is compiled: each dim expression parses with the runtime's own
/// parser, an input's dynamic dim is one symbol, and shape says -1 exactly
/// where there is an expression.
mlir::LogicalResult checkModelSignature(const ImportedModel &model,
                                        mlir::Location loc);

/// Fails with a message listing examples if LLVM does not know `cpu` for
/// the host's target (LLVM would otherwise abort later).
mlir::LogicalResult checkCpuName(llvm::StringRef cpu, mlir::Location loc);

/// Widest vector registers (bits) of `cpu` (empty: this host): 512 with
/// AVX-512F, 256 with AVX2, else 128.
unsigned cpuVectorBits(llvm::StringRef cpu);

/// Whether that CPU (empty: this host) has AMX tiles with bf16 products.
bool cpuHasAmxBf16(llvm::StringRef cpu);

/// Registers the translations the writer needs (LLVM, OpenMP).
void registerCpuTranslations(mlir::DialectRegistry &registry);

} // namespace mcc

#endif
