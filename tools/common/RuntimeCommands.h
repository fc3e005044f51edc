//===- RuntimeCommands.h - run, bench, inspect: the CLI over the runtime --===//
//
// The subcommands that load a compiled model, shared by `mcc` and by
// `mcc-rt`, the runtime-only tool for machines that run models but do not
// compile them (it links no MLIR or LLVM).
//
//===----------------------------------------------------------------------===//

#ifndef MCC_TOOLS_RUNTIMECOMMANDS_H
#define MCC_TOOLS_RUNTIMECOMMANDS_H

#include "mcc/Support/ModelCommands.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace mcc {

struct RuntimeCommands {
  CLI::App *run = nullptr, *bench = nullptr, *inspect = nullptr;
  std::string model, runInput, runOutput, benchInput;
  int threads = 0, warmup = 10, iterations = 100;
  bool benchJson = false, benchKernels = false;
  std::vector<std::string> benchDims;
};

inline void addRuntimeCommands(CLI::App &app, RuntimeCommands &c) {
  c.run = app.add_subcommand("run", "Run a compiled model");
  c.run->add_option("model", c.model, "The model .so")->required();
  c.run
      ->add_option("--input", c.runInput,
                   ".npz keyed by input names, or a folder of input_<i>.pb")
      ->required();
  c.run
      ->add_option("--output", c.runOutput,
                   ".npz to write, keyed by output names")
      ->required();
  c.run->add_option("--threads", c.threads,
                    "Threads per run (default: all cores)");

  c.bench = app.add_subcommand("bench", "Time runs of a compiled model");
  c.bench->add_option("model", c.model, "The model .so")->required();
  c.bench->add_option(
      "--input", c.benchInput,
      "Inputs (.npz or test-data folder); default: seeded random");
  c.bench->add_option("--warmup", c.warmup, "Warm-up runs (default 10)");
  c.bench->add_option("--iterations", c.iterations,
                      "Timed runs (default 100)");
  c.bench->add_option("--threads", c.threads, "Threads per run (cpu)");
  c.bench->add_flag("--json", c.benchJson, "Print the result as JSON");
  c.bench->add_flag("--kernels", c.benchKernels,
                    "Also time each kernel and product (GPU) or each op "
                    "(CPU): a profile of --iterations more runs");
  c.bench->add_option("--dim", c.benchDims,
                      "Size of a dynamic dim of the generated inputs: "
                      "SYMBOL=N (repeatable; see inspect's symbols)");

  c.inspect =
      app.add_subcommand("inspect", "Print a model's signature as JSON");
  c.inspect->add_option("model", c.model, "The model .so")->required();
}

/// The exit code of the runtime subcommand that was parsed, if one was.
inline std::optional<int> runRuntimeCommand(const RuntimeCommands &c) {
  if (c.run->parsed())
    return runModelCommand(c.model, c.runInput, c.runOutput, c.threads);
  if (c.inspect->parsed())
    return inspectModelCommand(c.model);
  if (!c.bench->parsed())
    return std::nullopt;
  std::map<std::string, int64_t> dims;
  static const std::regex dimSpec("(.+)=([0-9]{1,18})");
  for (const std::string &spec : c.benchDims) {
    std::smatch m;
    if (!std::regex_match(spec, m, dimSpec)) {
      std::fprintf(stderr, "mcc: error: --dim '%s': expected SYMBOL=N\n",
                   spec.c_str());
      return 1;
    }
    dims[m[1]] = std::stoll(m[2]);
  }
  return benchModelCommand(c.model, c.benchInput, dims, c.warmup,
                           c.iterations, c.threads, c.benchJson,
                           c.benchKernels);
}

} // namespace mcc

#endif
