//===- mcc.cpp - the mcc command line -------------------------------------===//
//
//   mcc compile M.onnx -o M.so --target cpu [--shape NAME=2x16]... [--dump-ir
//   D] mcc run M.so --input IN(.npz|dir) --output OUT.npz mcc inspect M.so mcc
//   import M.onnx [--shape ...]     (tensor-level MLIR, for debugging)
//
//===----------------------------------------------------------------------===//

#include "mcc/Import/OnnxImporter.h"
#include "mcc/Pipelines/Pipelines.h"
#include "mcc/Support/ModelCommands.h"
#include "mcc/Support/TensorIO.h"
#include "mcc/Target/CPU/SharedLibraryWriter.h"

#include "../common/RuntimeCommands.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>
#include <regex>
#include <sstream>

namespace {

/// Parses NAME=2x16 (dims separated by 'x' or ','): each dim a size, '?'
/// (symbolic, free) or LO..HI (symbolic, bounded); symbolic dims are -1 in
/// `dims` with their bounds in `bounds`.
bool parseShape(const std::string &spec, std::string &name,
                std::vector<int64_t> &dims,
                std::map<int, std::pair<int64_t, int64_t>> &bounds,
                std::string &error) {
  size_t eq = spec.rfind('=');
  if (eq == std::string::npos || eq == 0) {
    error = "--shape '" + spec + "': expected NAME=DIMxDIM...";
    return false;
  }
  name = spec.substr(0, eq);
  std::string rest = spec.substr(eq + 1);
  dims.clear();
  bounds.clear();
  if (rest.empty() || rest == "scalar")
    return true;
  auto number = [](const std::string &t, int64_t &v) {
    if (t.empty() || t.size() > 18 ||
        t.find_first_not_of("0123456789") != std::string::npos)
      return false;
    v = std::stoll(t);
    return true;
  };
  std::regex sep("[x,]");
  for (std::sregex_token_iterator it(rest.begin(), rest.end(), sep, -1), end;
       it != end; ++it) {
    std::string d = *it;
    int64_t v = 0, lo = 0, hi = 0;
    size_t range = d.find("..");
    if (d == "?") {
      bounds[dims.size()] = {1, INT64_MAX};
      dims.push_back(-1);
    } else if (range != std::string::npos && number(d.substr(0, range), lo) &&
               number(d.substr(range + 2), hi)) {
      if (lo < 1 || hi < lo) {
        error = "--shape '" + spec + "': bounds '" + d +
                "' must satisfy 1 <= LO <= HI";
        return false;
      }
      bounds[dims.size()] = {lo, hi};
      dims.push_back(-1);
    } else if (number(d, v)) {
      dims.push_back(v);
    } else {
      error = "--shape '" + spec + "': dim '" + d +
              "' is not a number, '?' or LO..HI";
      return false;
    }
  }
  return true;
}

/// --const-input NAME=VALUE: VALUE is a .npy or .pb file, or a
/// comma-separated list of integers (an int64 vector; one element also
/// fills a rank-0 input).
bool parseConstantInput(const std::string &spec, std::string &name,
                        mcc::ConstantInput &value, std::string &error) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    error = "--const-input '" + spec +
            "': expected NAME=FILE.npy|FILE.pb or "
            "NAME=INT,INT,...";
    return false;
  }
  name = spec.substr(0, eq);
  std::string rest = spec.substr(eq + 1);
  static const std::regex ints("-?[0-9]+(,-?[0-9]+)*");
  if (std::regex_match(rest, ints)) {
    std::vector<int64_t> v;
    std::stringstream ss(rest);
    for (std::string item; std::getline(ss, item, ',');)
      v.push_back(std::stoll(item));
    value.dtype = MCC_INT64;
    value.shape = {static_cast<int64_t>(v.size())};
    value.bytes.resize(v.size() * sizeof(int64_t));
    std::memcpy(value.bytes.data(), v.data(), value.bytes.size());
    return true;
  }
  mcc::HostTensor t;
  if (!mcc::readTensorFile(rest, t, error)) {
    error = "--const-input " + name + ": " + error;
    return false;
  }
  value.dtype = t.dtype;
  value.shape = t.shape;
  value.bytes = std::move(t.data);
  return true;
}

void setupContext(mlir::MLIRContext &context) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mcc::registerCpuTranslations(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
}

/// Prints MLIR diagnostics as "mcc: error: LOCATION: message".
struct DiagnosticPrinter {
  explicit DiagnosticPrinter(mlir::MLIRContext &context)
      : handler(&context, [](mlir::Diagnostic &diag) {
          std::string loc;
          llvm::raw_string_ostream ls(loc);
          diag.getLocation().print(ls);
          if (loc == "loc(unknown)")
            loc.clear();
          std::string msg = diag.str();
          for (auto &note : diag.getNotes())
            msg += "\n  note: " + note.str();
          if (diag.getSeverity() == mlir::DiagnosticSeverity::Error)
            spdlog::error("{}{}", loc.empty() ? "" : loc + ": ", msg);
          else if (diag.getSeverity() == mlir::DiagnosticSeverity::Warning)
            spdlog::warn("{}{}", loc.empty() ? "" : loc + ": ", msg);
          else
            spdlog::info("{}{}", loc.empty() ? "" : loc + ": ", msg);
          return mlir::success();
        }) {}
  mlir::ScopedDiagnosticHandler handler;
};

} // namespace

int main(int argc, char **argv) {
  auto logger = spdlog::stderr_color_st("mcc");
  logger->set_pattern("mcc: %l: %v");
  spdlog::set_default_logger(logger);
  mlir::registerAllPasses();
  mcc::registerMccPipelines();

  CLI::App app{"mcc: an ahead-of-time compiler from ONNX to shared libraries"};
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Log each step");

  std::string input, output, target = "cpu", dumpDir, cpu;
  std::vector<std::string> shapes, constInputs;
  bool text = false;
  std::string winograd = "off", compileWinograd = "f4";
  auto *compile =
      app.add_subcommand("compile", "Compile an ONNX model to a .so");
  compile->add_option("model", input, "The .onnx file")->required();
  compile->add_option("-o,--output", output, "The .so to write")->required();
  compile->add_option("--target", target, "cpu")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  compile->add_option("--shape", shapes,
                      "An input's shape: NAME=2x16 pins it, NAME=1..64x? "
                      "leaves dims dynamic (bounded, free) (repeatable)");
  compile->add_option("--const-input", constInputs,
                      "Freeze an input to a value: NAME=FILE.npy|FILE.pb or "
                      "NAME=INT,INT,... (repeatable)");
  std::string weightsMode = "auto";
  compile
      ->add_option("--weights", weightsMode,
                   "embedded | external (<output>.weights beside the .so) | "
                   "auto (external past 512 MiB; default)")
      ->check(CLI::IsMember({"embedded", "external", "auto"}));
  std::string gpuArch = "sm_90";
  compile->add_option("--gpu-arch", gpuArch,
                      "NVIDIA architecture for --target cuda (default sm_90)");
  std::string precision = "fp32";
  compile
      ->add_option("--precision", precision,
                   "Matrix products: fp32 (default); --target cuda: "
                   "tf32x3 (fp32-accurate on TF32 tensor cores), tf32; "
                   "--target cpu: bf16x3 (AMX tiles, error ~5e-6)")
      ->check(CLI::IsMember({"fp32", "tf32x3", "tf32", "bf16x3"}));
  compile
      ->add_option("--winograd", compileWinograd,
                   "3x3 stride-1 convolutions on the CPU: f4 (Winograd "
                   "F(4x4, 3x3) where there are enough 4x4 tiles, F(2x2, "
                   "3x3) elsewhere; default), f2 (F(2x2, 3x3) only, error as "
                   "the direct form), off (direct)")
      ->check(CLI::IsMember({"f4", "f2", "off"}));
  compile->add_option("--dump-ir", dumpDir,
                      "Write the IR after every stage into this folder");
  bool timing = false;
  compile->add_flag("--timing", timing,
                    "Print each step's wall time (import, every pipeline "
                    "stage, LLVM, link) to stderr");
  compile->add_option("--cpu", cpu,
                      "CPU to generate code for (e.g. x86-64-v3, "
                      "skylake-avx512); default: this host");

  auto *import = app.add_subcommand("import", "Print the tensor-level MLIR");
  import->add_option("model", input, "The .onnx file")->required();
  import->add_option("--shape", shapes, "Pin an input's shape (repeatable)");
  import->add_option("--const-input", constInputs,
                     "Freeze an input to a value (repeatable)");
  import->add_flag("--text", text, "The input is ONNX textual syntax");
  import
      ->add_option("--winograd", winograd,
                   "3x3 stride-1 convolutions as Winograd products, as "
                   "compile --target cpu does: f4, f2 or off (default)")
      ->check(CLI::IsMember({"f4", "f2", "off"}));

  mcc::RuntimeCommands runtime;
  mcc::addRuntimeCommands(app, runtime);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }
  if (verbose)
    spdlog::set_level(spdlog::level::debug);

  if (auto rc = mcc::runRuntimeCommand(runtime))
    return *rc;

  mcc::CompileOptions options;
  options.target = target;
  // `import` shows the form its --winograd asks for; `compile` decides
  // per target from its own --winograd.
  options.import.winogradConvolutions = winograd != "off";
  options.import.winogradTile = winograd == "f2" ? 2 : 4;
  options.winograd = compileWinograd;
  options.cpu = cpu;
  options.gpuArch = gpuArch;
  options.precision = precision;
  options.weights = weightsMode;
  options.dumpIrDir = dumpDir;
  for (const std::string &s : shapes) {
    std::string name, error;
    std::vector<int64_t> dims;
    std::map<int, std::pair<int64_t, int64_t>> bounds;
    if (!parseShape(s, name, dims, bounds, error)) {
      spdlog::error("{}", error);
      return 1;
    }
    options.import.inputShapes[name] = dims;
    if (!bounds.empty())
      options.import.inputDimBounds[name] = bounds;
  }
  for (const std::string &s : constInputs) {
    std::string name, error;
    mcc::ConstantInput value;
    if (!parseConstantInput(s, name, value, error)) {
      spdlog::error("{}", error);
      return 1;
    }
    options.import.constantInputs[name] = std::move(value);
  }

  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  setupContext(context);
  DiagnosticPrinter printer(context);

  if (import->parsed()) {
    mlir::FailureOr<mcc::ImportedModel> model;
    if (text) {
      auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(input);
      if (!buffer) {
        spdlog::error("{}: cannot open", input);
        return 1;
      }
      model =
          mcc::importOnnxText(context, (*buffer)->getBuffer(), options.import);
    } else {
      model = mcc::importOnnxFile(context, input, options.import);
    }
    if (mlir::failed(model))
      return 1;
    model->module->print(llvm::outs());
    return 0;
  }

  auto start = std::chrono::steady_clock::now();
  mcc::StepTimer timer;
  if (timing)
    options.timer = &timer;
  bool compiled =
      mlir::succeeded(mcc::compileOnnxModel(context, input, output, options));
  if (timing)
    timer.print(llvm::errs());
  if (!compiled)
    return 1;
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  spdlog::debug("compiled {} -> {} in {:.2f} s", input, output, secs);
  return 0;
}
