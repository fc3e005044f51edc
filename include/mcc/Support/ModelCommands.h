//===- ModelCommands.h - `run` and `inspect` over the runtime C API -------===//
//
// Shared by `mcc` and the MLIR-free `mcc-run`. Each returns a process exit
// code and prints failures to stderr.
//
//===----------------------------------------------------------------------===//
#ifndef MCC_SUPPORT_MODELCOMMANDS_H
#define MCC_SUPPORT_MODELCOMMANDS_H

#include <string>

namespace mcc {

int runModelCommand(const std::string &modelPath, const std::string &input,
                    const std::string &output, int numThreads);
int inspectModelCommand(const std::string &modelPath);

} // namespace mcc

#endif
