//===- Pipelines.cpp - tensor-level MLIR to the LLVM dialect, per target -===//
//
// Stages are textual pipelines over upstream passes plus mcc's own, so the
// same strings run in `mcc compile`, `mcc-opt` and the lit tests.
//
//===----------------------------------------------------------------------===//

#include "mcc/Pipelines/Pipelines.h"
#include "mcc/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace mcc {

namespace {
struct StageText {
  const char *name, *summary, *pipeline;
};

// Grouped and few-channel convolutions stay convolutions on the CPU (run in
// place by mcc-vectorize-grouped-conv); on the GPU they become cuBLAS
// products.
#define MCC_FUSE_STAGE(CONV_TO_MATMUL, FUSE_ELEMENTWISE)                       \
  "canonicalize,cse,func.func(" CONV_TO_MATMUL "),canonicalize,"               \
  "func.func(" FUSE_ELEMENTWISE "),canonicalize,cse"

const StageText kCpuStages[] = {
    {"mcc-cpu-fuse", "canonicalize and fuse elementwise producers/consumers",
     MCC_FUSE_STAGE(
         "mcc-conv-to-matmul{direct-convs}",
         "mcc-fuse-elementwise{keep-conv-epilogues}") ",func.func(mcc-fold-"
                                                      "channel-scale),"
                                                      "canonicalize,"
                                                      "func.func(mcc-collapse-"
                                                      "product-epilogues),"
                                                      "canonicalize,cse"},
    {"mcc-cpu-tile",
     "tile ops into parallel scf.forall tiles; reorder contraction loops",
     "func.func(mcc-pad-into-producer),func.func(mcc-tile-for-cpu),"
     "canonicalize,cse,"
     "func.func(mcc-interchange-contraction-loops)"},
    {"mcc-cpu-bufferize",
     "one-shot bufferization; results become caller-owned out-params",
     "func.func(mcc-distinct-results),"
     "one-shot-bufferize{bufferize-function-boundaries "
     "function-boundary-type-conversion=identity-layout-map},"
     "buffer-results-to-out-params{modify-public-functions "
     "hoist-static-allocs "
     "hoist-dynamic-allocs},canonicalize,buffer-deallocation-pipeline,"
     "canonicalize"},
    {"mcc-cpu-loops",
     "linalg to loops; tile loops become OpenMP worksharing loops",
     // Per-op profile marks first, while each op at the top of forward is
     // still one unit of the run. bf16 computes in f32; only its two
     // conversions stay, as integer ops.
     "func.func(mcc-dealloc-after-last-use),"
     "mcc-cpu-profile-marks,math-extend-to-supported-types{extra-types=f16 "
     "target-type=f32},"
     "arith-emulate-unsupported-floats{source-types=bf16 target-type=f32},"
     "func.func(mcc-expand-bf16),"
     "func.func(mcc-strided-copy-to-linalg),func.func(mcc-register-tile-"
     "matmul),func.func(mcc-vectorize-depthwise-conv),"
     "func.func(mcc-vectorize-grouped-conv),func.func(mcc-vectorize-winograd),"
     "func.func(mcc-approximate-math),func.func(mcc-collapse-contiguous-loops),"
     "func.func(mcc-reduction-loops),"
     "convert-linalg-to-loops,"
     "scf-forall-"
     "to-parallel,convert-scf-to-openmp,"
     "canonicalize,cse"},
    {"mcc-cpu-to-llvm", "lower every remaining dialect to LLVM",
     "func.func(mcc-dynamic-expand-shape),expand-strided-metadata,lower-"
     "affine,convert-vector-to-llvm,"
     "finalize-memref-to-llvm{use-generic-functions},"
     "convert-math-to-funcs{convert-ctlz=false},convert-math-to-llvm,"
     "convert-math-to-libm,convert-scf-to-cf,convert-openmp-to-llvm,"
     "convert-func-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,"
     "convert-cf-to-llvm,convert-to-llvm,reconcile-unrealized-casts,"
     "canonicalize"},
};

// The CUDA target shares import, fusion and bufferization with the CPU;
// every loop nest then becomes a kernel.
const StageText kCudaStages[] = {
    {"mcc-cpu-fuse", "canonicalize and fuse elementwise producers/consumers",
     MCC_FUSE_STAGE("mcc-conv-to-matmul", "mcc-fuse-elementwise")},
    {"mcc-cuda-bufferize", "one-shot bufferization, as for the CPU",
     kCpuStages[2].pipeline},
    {"mcc-cuda-kernels",
     "loop nests onto blocks and threads; host buffers in device memory; "
     "kernels outlined",
     "mcc-gpu-library-calls,func.func(mcc-gpu-row-reductions),"
     "func.func(mcc-strided-copy-to-linalg{all-copies}),"
     "convert-linalg-to-parallel-loops,"
     "canonicalize,func.func(mcc-gpu-fold-pad-reads),func.func(mcc-gpu-device-"
     "memory),func.func(mcc-gpu-"
     "distribute{coarsen-factor=4}),convert-parallel-loops-to-gpu,canonicalize,"
     "convert-math-to-funcs{convert-ctlz=false},"
     "func.func(gpu-launch-sink-index-computations),gpu-kernel-outlining,mcc-"
     "gpu-gather-kernels,mcc-gpu-libdevice-calls,"
     // Index math in 32-bit unsigned where integer range analysis proves it
     // fits (known_block_size/known_grid_size bound the thread ids): the
     // div/rem chains that turn a flat thread index into an im2col or
     // broadcast position are 64-bit signed otherwise, several times the
     // instructions, and made resnet50's im2col kernels ALU-bound.
     "gpu.module(lower-affine,canonicalize,arith-unsigned-when-equivalent,"
     "int-range-optimizations,arith-int-range-narrowing{int-bitwidths-"
     "supported=32},arith-unsigned-when-equivalent,canonicalize,cse),"
     "func.func(gpu-async-region),"
     // Host views of dynamic shapes, before gpu-to-llvm's
     // expand-strided-metadata (as on the CPU).
     "func.func(mcc-dynamic-expand-shape),canonicalize,cse"},
};
} // namespace

/// A stage that runs a built-in textual pipeline (a typo in one is a bug
/// in mcc, not in the user's input).
static PipelineStage textStage(std::string name, std::string summary,
                               std::string text) {
  return {std::move(name), std::move(summary), [text](OpPassManager &pm) {
            if (failed(parsePassPipeline(text, pm)))
              llvm::report_fatal_error("mcc: invalid built-in pipeline: " +
                                       llvm::Twine(text));
          }};
}

std::vector<PipelineStage> cudaPipelineStages(const CompileOptions &options) {
  std::vector<PipelineStage> stages;
  for (const StageText &s : kCudaStages)
    stages.push_back(textStage(s.name, s.summary, s.pipeline));
  // Kernels to NVVM and a fatbin (ptxas from CUDA) for the chosen arch;
  // host code to LLVM with gpu.launch_func calls into the runtime shim.
  stages.push_back(
      textStage("mcc-cuda-to-llvm", "kernels to a fatbin, host to LLVM",
                "gpu-lower-to-nvvm-pipeline{cubin-chip=" + options.gpuArch +
                    " cubin-features=+ptx80 opt-level=3 cubin-format=fatbin}"));
  return stages;
}

std::vector<PipelineStage> cpuPipelineStages(const CompileOptions &options) {
  std::vector<PipelineStage> stages;
  for (const StageText &s : kCpuStages) {
    std::string text = s.pipeline;
    // Register blocks for the target's vector width: 8x32 floats in 16 of
    // AVX-512's 32 zmm registers, 12x32 (24) for linear layers, whose B
    // streams from pre-packed weights (bert-base and gpt2 4-5% faster;
    // the CNNs were level with 12 rows everywhere and compiled 70% longer:
    // a 128-row product then needs a 12- and an 8-row kernel), 6x16 in 12
    // of AVX2's 16 ymm registers.
    auto setOptions = [&](llvm::StringRef pass, llvm::StringRef passOptions) {
      size_t at = text.find(pass.str());
      if (at != std::string::npos)
        text.insert(at + pass.size(), passOptions.str());
    };
    if (options.precision == "bf16x3") {
      // Products on AMX tiles first; what they leave runs as before.
      auto replace = [&](llvm::StringRef from, llvm::StringRef to) {
        size_t at = text.find(from.str());
        if (at != std::string::npos)
          text.replace(at, from.size(), to.str());
      };
      replace("func.func(mcc-register-tile-matmul)",
              "func.func(mcc-amx-matmul),func.func(mcc-register-tile-matmul)");
      replace("convert-vector-to-llvm,", "convert-vector-to-llvm{enable-amx},");
      setOptions("mcc-tile-for-cpu", "{amx-tiles}");
    }
    if (options.cpuVectorBits >= 512) {
      setOptions("mcc-register-tile-matmul",
                 "{weight-rows=12 weight-a-vectors=3}");
    } else {
      bool avx2 = options.cpuVectorBits == 256;
      // No prefetch of A's next rows on AVX2: on Zen 3 its address
      // arithmetic, every other K step of a 6 x 16 block, cost more than
      // the fetch saved (a 1024 x 1024 x 196 product 5.9 -> 5.0 ms;
      // resnet50 and resnext101 8-13% faster).
      setOptions("mcc-register-tile-matmul",
                 avx2 ? "{rows=6 lanes=8 prefetch-a=false}"
                      : "{rows=4 lanes=4}");
      // Grouped convolutions in blocks of 8 output channels by one vector:
      // 8 divides the 8-64 channels of a group that ResNeXt has, where 6
      // left 2-4 rows to a smaller block (Zen 3: resnext101's 3 x 3
      // groups 1.3-1.6x faster, level at 64 channels a group).
      setOptions("mcc-vectorize-grouped-conv",
                 avx2 ? "{rows=8 vectors=1 lanes=8}" : "{rows=4 lanes=4}");
      setOptions("mcc-vectorize-winograd", avx2 ? "{lanes=8}" : "{lanes=4}");
      setOptions("mcc-vectorize-depthwise-conv",
                 avx2 ? "{lanes=8}" : "{lanes=4}");
    }
    stages.push_back(textStage(s.name, s.summary, text));
  }
  return stages;
}

void buildCpuPipeline(OpPassManager &pm, const CompileOptions &options) {
  for (const PipelineStage &stage : cpuPipelineStages(options))
    stage.build(pm);
}

void registerMccPipelines() {
  static bool done = [] {
    registerMccPasses();
    for (const StageText &s : kCpuStages) {
      std::string text = s.pipeline;
      PassPipelineRegistration<>(s.name, s.summary, [text](OpPassManager &pm) {
        (void)parsePassPipeline(text, pm);
      });
    }
    for (const StageText &s : kCudaStages) {
      if (std::string(s.name).rfind("mcc-cuda", 0) != 0 ||
          std::string(s.name) == "mcc-cuda-bufferize")
        continue;
      std::string text = s.pipeline;
      PassPipelineRegistration<>(s.name, s.summary, [text](OpPassManager &pm) {
        (void)parsePassPipeline(text, pm);
      });
    }
    PassPipelineRegistration<>(
        "mcc-cpu-pipeline", "the whole CPU pipeline, tensors to LLVM",
        [](OpPassManager &pm) { buildCpuPipeline(pm, CompileOptions()); });
    return true;
  }();
  (void)done;
}

} // namespace mcc
