//===- Compile.cpp - the `mcc compile` driver -----------------------------===//

#include "mcc/Pipelines/Pipelines.h"
#include "mcc/Target/CPU/SharedLibraryWriter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace mcc {

static LogicalResult dump(ModuleOp module, StringRef dir, int index,
                          StringRef name) {
  SmallString<256> path(dir);
  llvm::sys::path::append(path,
                          llvm::formatv("{0:02}-{1}.mlir", index, name).str());
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    emitError(module.getLoc())
        << "cannot write IR dump " << path << ": " << ec.message();
    return failure();
  }
  module.print(os, OpPrintingFlags().elideLargeElementsAttrs(64));
  return success();
}

/// Lays out the weight records that mcc-register-tile-matmul reads as
/// panels (`marks` = [weight index, nr, ...]) as [N / nr][K][nr]: the
/// product kernels read each panel's K rows contiguously instead of copying
/// them on every run. The blob applies the layout as it is written; the
/// external-weights plan names the initializer and the panel width.
static LogicalResult packWeightPanels(ImportedModel &model,
                                      ArrayRef<int64_t> marks, Location loc) {
  for (size_t i = 0; i + 1 < marks.size(); i += 2) {
    int64_t w = marks[i], nr = marks[i + 1];
    if (w < 0 || static_cast<size_t>(w) >= model.weights.size() || nr <= 0)
      return emitError(loc) << "internal error: mcc.packed_weights names "
                               "weight "
                            << w << " of " << model.weights.size();
    WeightRecord &record = model.weights[w];
    const Literal &raw = model.weightBlob.record(w);
    if (raw.dtype() != 1 || raw.shape().size() != 2 ||
        raw.shape() != record.shape || raw.shape()[1] % nr != 0)
      return emitError(loc) << "internal error: weight '" << record.name
                            << "' (" << formatShape(raw.shape())
                            << ") cannot be laid out in panels of " << nr;
    model.weightBlob.setPanels(w, nr);
    record.panels = nr;
  }
  return success();
}

/// Lays out the weight records that mcc-amx-matmul reads as AMX tiles
/// (`marks` = [weight index, 1 (as B), 2 (as A) or 3 (as A of a batch of
/// products), ...]) in bf16x3 tiles
/// (WeightBlob::setAmxTiles).
static LogicalResult packAmxTiles(ImportedModel &model, ArrayRef<int64_t> marks,
                                  Location loc) {
  for (size_t i = 0; i + 1 < marks.size(); i += 2) {
    int64_t w = marks[i], layout = marks[i + 1];
    if (w < 0 || static_cast<size_t>(w) >= model.weights.size() || layout < 1 ||
        layout > 3)
      return emitError(loc) << "internal error: mcc.amx_weights names weight "
                            << w << " of " << model.weights.size();
    WeightRecord &record = model.weights[w];
    const Literal &raw = model.weightBlob.record(w);
    bool asB = layout == 1;
    int64_t dim0 = raw.shape().empty() ? 0 : raw.shape()[0];
    int64_t rest = dim0 ? static_cast<int64_t>(raw.size()) / dim0 : 0;
    bool fits =
        layout == 3 ? raw.shape().size() == 3 && raw.shape()[1] % 16 == 0 &&
                          raw.shape()[2] % 32 == 0
        : asB ? raw.shape().size() == 2 && dim0 % 32 == 0 && rest % 16 == 0
              : dim0 && dim0 % 16 == 0 && rest % 32 == 0;
    if (raw.dtype() != 1 || raw.shape() != record.shape || !fits)
      return emitError(loc)
             << "internal error: weight '" << record.name << "' ("
             << formatShape(raw.shape()) << ") cannot be laid out in AMX tiles";
    AmxTiles tiles = layout == 3 ? AmxTiles::BatchRows
                     : asB       ? AmxTiles::KPairs
                                 : AmxTiles::Rows;
    model.weightBlob.setAmxTiles(w, tiles);
    record.amxTiles = tiles;
  }
  return success();
}

/// MLIR's NVVM target finds libdevice (and ptxas) under $CUDA_ROOT,
/// $CUDA_HOME or $CUDA_PATH (the first set), else under a path fixed when
/// MLIR was built, which Debian leaves empty: without one of them set,
/// every kernel that calls a math function would fail in ptxas. Point it at
/// the toolkit of the ptxas on PATH, else /usr/local/cuda; and say so
/// before compiling when the toolkit found has no libdevice.
static LogicalResult findCudaToolkit(Location loc) {
  std::string root, from;
  for (const char *var : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
    if (const char *v = std::getenv(var); v && *v && root.empty()) {
      root = v;
      from = std::string(" (from $") + var + ")";
    }
  if (root.empty()) {
    root = "/usr/local/cuda";
    if (llvm::ErrorOr<std::string> ptxas =
            llvm::sys::findProgramByName("ptxas"))
      root = llvm::sys::path::parent_path(llvm::sys::path::parent_path(*ptxas))
                 .str();
  }
  SmallString<256> libdevice(root);
  llvm::sys::path::append(libdevice, "nvvm", "libdevice", "libdevice.10.bc");
  if (!llvm::sys::fs::exists(libdevice))
    return emitError(loc) << "--target cuda needs the CUDA toolkit (ptxas "
                             "and nvvm/libdevice); none found at "
                          << root << from
                          << ": set CUDA_HOME to the toolkit's folder";
  if (from.empty())
    setenv("CUDA_HOME", root.c_str(), /*overwrite=*/0);
  return success();
}

LogicalResult compileOnnxModel(MLIRContext &context, StringRef inputPath,
                               StringRef outputPath,
                               const CompileOptions &options) {
  if (options.target != "cpu" && options.target != "cuda") {
    emitError(UnknownLoc::get(&context))
        << "target '" << options.target << "' is not supported (cpu, cuda)";
    return failure();
  }
  bool cuda = options.target == "cuda";
  Location optionsLoc = UnknownLoc::get(&context);
  if (failed(checkCpuName(options.cpu, optionsLoc)))
    return failure();
  CompileOptions resolved = options;
  if (!cuda)
    resolved.cpuVectorBits = cpuVectorBits(options.cpu);
  if (!cuda && options.precision != "fp32" && options.precision != "bf16x3") {
    emitError(optionsLoc) << "--precision " << options.precision
                          << " needs --target cuda (the cpu target takes "
                             "fp32 or bf16x3)";
    return failure();
  }
  if (cuda && options.precision == "bf16x3") {
    emitError(optionsLoc) << "--precision bf16x3 is for --target cpu (AMX); "
                             "cuda takes fp32, tf32x3 or tf32";
    return failure();
  }
  if (!cuda && options.precision == "bf16x3" && !cpuHasAmxBf16(options.cpu)) {
    emitError(optionsLoc)
        << "--precision bf16x3 needs a CPU with AMX-BF16 (Intel Xeon 4th "
           "generation, Sapphire Rapids, or later); "
        << (options.cpu.empty() ? std::string("this host")
                                : "--cpu " + options.cpu)
        << " has none";
    return failure();
  }
  if (cuda && failed(findCudaToolkit(optionsLoc)))
    return failure();
  if (cuda) {
    llvm::StringRef arch = options.gpuArch;
    unsigned sm = 0;
    if (!arch.consume_front("sm_") || arch.consumeInteger(10, sm) ||
        !(arch.empty() || arch == "a") || sm < 50) {
      emitError(optionsLoc) << "--gpu-arch '" << options.gpuArch
                            << "' is not an NVIDIA architecture of the form "
                               "sm_NN (sm_80 for A100, sm_90 for H100/H200)";
      return failure();
    }
  }
  if (!options.dumpIrDir.empty()) {
    if (auto ec = llvm::sys::fs::create_directories(options.dumpIrDir)) {
      emitError(UnknownLoc::get(&context))
          << "cannot create --dump-ir folder " << options.dumpIrDir << ": "
          << ec.message();
      return failure();
    }
  }
  // The CPU runs 3x3 convolutions as Winograd products (designs 0019,
  // 0026); the GPU keeps the direct products, which cuBLAS runs near its
  // peak.
  ImportOptions importOptions = options.import;
  importOptions.winogradConvolutions = !cuda && options.winograd != "off";
  importOptions.winogradTile = options.winograd == "f2" ? 2 : 4;
  FailureOr<ImportedModel> model =
      importOnnxFile(context, inputPath, importOptions);
  if (failed(model))
    return failure();
  markStep(options.timer, "import");
  if (failed(checkModelSignature(*model, model->module->getLoc())))
    return failure();
  ModuleOp module = *model->module;
  // Symbols the user left free or bounded, named when a stage fails: a
  // dynamic dim some pass does not handle yet is the likely cause.
  std::string dynamicNames;
  for (const SymbolInfo &s : model->symbols)
    dynamicNames += (dynamicNames.empty() ? "" : ", ") + s.name;
  int index = 0;
  SmallVector<int64_t> packedWeights, amxWeights;
  if (!options.dumpIrDir.empty() &&
      failed(dump(module, options.dumpIrDir, index, "import")))
    return failure();
  for (const PipelineStage &stage :
       cuda ? cudaPipelineStages(resolved) : cpuPipelineStages(resolved)) {
    ++index;
    PassManager pm(&context);
    pm.enableVerifier(true);
    stage.build(pm);
    if (failed(pm.run(module))) {
      InFlightDiagnostic diag = emitError(module.getLoc())
                                << "compilation failed in stage '" << stage.name
                                << "'";
      if (!dynamicNames.empty())
        diag.attachNote() << "the model has dynamic dims (" << dynamicNames
                          << "); if a pass does not support them yet, pin "
                             "them with --shape NAME=...";
      return failure();
    }
    markStep(options.timer, "stage " + stage.name);
    if (auto forward = module.lookupSymbol<func::FuncOp>("forward"))
      if (auto marks =
              forward->getAttrOfType<DenseI64ArrayAttr>("mcc.packed_weights"))
        packedWeights.assign(marks.asArrayRef().begin(),
                             marks.asArrayRef().end());
    if (auto forward = module.lookupSymbol<func::FuncOp>("forward"))
      if (auto marks =
              forward->getAttrOfType<DenseI64ArrayAttr>("mcc.amx_weights"))
        amxWeights.assign(marks.asArrayRef().begin(), marks.asArrayRef().end());
    if (!options.dumpIrDir.empty()) {
      if (failed(dump(module, options.dumpIrDir, index, stage.name)))
        return failure();
      markStep(options.timer, "IR dump");
    }
  }
  if (failed(packWeightPanels(*model, packedWeights, module.getLoc())) ||
      failed(packAmxTiles(*model, amxWeights, module.getLoc())))
    return failure();
  CpuTargetOptions target;
  target.cpu = options.cpu;
  target.cuda = cuda;
  target.gpuArch = options.gpuArch;
  target.precision = options.precision;
  target.timer = options.timer;
  target.externalWeights =
      options.weights == "external" ||
      (options.weights == "auto" && model->weightBlob.size() > (512u << 20));
  if (!options.dumpIrDir.empty()) {
    SmallString<256> ll(options.dumpIrDir);
    llvm::sys::path::append(
        ll, llvm::formatv("{0:02}-llvm-ir.ll", index + 1).str());
    target.dumpLlvmIrPath = std::string(ll);
  }
  return writeCpuSharedLibrary(module, *model, target, outputPath);
}

} // namespace mcc
