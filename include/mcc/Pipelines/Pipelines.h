//===- Pipelines.h - the compile pipelines, shared by mcc and mcc-opt -----===//
#ifndef MCC_PIPELINES_PIPELINES_H
#define MCC_PIPELINES_PIPELINES_H

#include "mcc/Import/OnnxImporter.h"
#include "mcc/Support/StepTimer.h"

#include "mlir/Pass/PassManager.h"

#include <functional>
#include <string>
#include <vector>

namespace mcc {

struct CompileOptions {
  std::string target = "cpu";
  /// CPU name for codegen (e.g. "x86-64-v3", "skylake-avx512"); empty: host.
  std::string cpu;
  /// Vector register width of that CPU in bits; picks the matmul kernel.
  unsigned cpuVectorBits = 512;
  /// NVIDIA architecture for --target cuda (sm_90 for H100/H200).
  std::string gpuArch = "sm_90";
  /// Matrix products: "fp32"; at --target cuda "tf32x3" (fp32-accurate on
  /// TF32 tensor cores) or "tf32"; at --target cpu "bf16x3" (AMX tiles).
  std::string precision = "fp32";
  /// 3x3 stride-1 convolutions at --target cpu: "f4" (Winograd F(4x4, 3x3)
  /// where a convolution has enough 4x4 tiles, F(2x2, 3x3) elsewhere), "f2"
  /// (F(2x2, 3x3) only: the direct form's error) or "off" (direct).
  std::string winograd = "f4";
  /// "embedded", "external" or "auto" (external past 512 MiB of weights).
  std::string weights = "auto";
  /// Folder that receives the IR after every stage; empty: none.
  std::string dumpIrDir;
  ImportOptions import;
  /// Optional: records each step's wall time (`mcc compile --timing`).
  StepTimer *timer = nullptr;
};

/// One named stage of a pipeline; `mcc compile --dump-ir` writes the IR
/// after each, and `mcc-opt --<name>` runs it.
struct PipelineStage {
  std::string name;
  std::string summary;
  std::function<void(mlir::OpPassManager &)> build;
};

std::vector<PipelineStage> cpuPipelineStages(const CompileOptions &options);

std::vector<PipelineStage> cudaPipelineStages(const CompileOptions &options);

/// Every CPU stage in order: tensor-level MLIR to the LLVM dialect.
void buildCpuPipeline(mlir::OpPassManager &pm, const CompileOptions &options);

/// Registers mcc-cpu-pipeline and each stage as textual pass pipelines.
void registerMccPipelines();

/// The whole `mcc compile`: import, run the stages, write the .so at
/// `outputPath` (atomically). Errors go to the context's diagnostics.
mlir::LogicalResult compileOnnxModel(mlir::MLIRContext &context,
                                     llvm::StringRef inputPath,
                                     llvm::StringRef outputPath,
                                     const CompileOptions &options);

} // namespace mcc

#endif // MCC_PIPELINES_PIPELINES_H
