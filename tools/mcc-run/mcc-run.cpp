//===- mcc-run.cpp - run, time and inspect a model .so with the runtime ---===//
//
// `mcc run`, `mcc bench` and `mcc inspect` for the machine that runs models:
// built from the runtime alone, no MLIR or LLVM.
//
//   mcc-run [run] MODEL.so --input IN(.npz|dir) --output OUT.npz
//   mcc-run bench MODEL.so [--iterations N] [--kernels] ...
//   mcc-run inspect MODEL.so
//
//===----------------------------------------------------------------------===//

#include "../common/RuntimeCommands.h"

#include <algorithm>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  CLI::App app{"mcc-run: run, time and inspect models compiled by mcc"};
  app.require_subcommand(1);
  mcc::RuntimeCommands runtime;
  mcc::addRuntimeCommands(app, runtime);
  // `mcc-run MODEL.so --input ...` (no subcommand) is `run`.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] != "run" && args[0] != "bench" &&
      args[0] != "inspect" && args[0][0] != '-')
    args.insert(args.begin(), "run");
  std::reverse(args.begin(), args.end()); // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }
  return runRuntimeCommand(runtime).value_or(2);
}
