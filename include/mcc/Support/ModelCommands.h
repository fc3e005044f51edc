//===- ModelCommands.h - `run` and `inspect` over the runtime C API -------===//
//
// Shared by `mcc` and the MLIR-free `mcc-run`. Each returns a process exit
// code and prints failures to stderr.
//
//===----------------------------------------------------------------------===//
#ifndef MCC_SUPPORT_MODELCOMMANDS_H
#define MCC_SUPPORT_MODELCOMMANDS_H

#include <cstdint>
#include <map>
#include <string>

namespace mcc {

int runModelCommand(const std::string &modelPath, const std::string &input,
                    const std::string &output, int numThreads);
int inspectModelCommand(const std::string &modelPath);

/// Times `iterations` runs after `warmup` and prints p50/p90/p99/mean.
/// Inputs come from `input` (.npz or test-data folder) or, if empty, are
/// generated from a fixed seed (floats in [-1, 1), integers in [0, 10)),
/// their dynamic dims sized by `dims` (symbol name -> value, from --dim).
/// GPU models also report device time (CUDA events). With `kernels`, a
/// profile of `iterations` further runs: per kernel on the GPU, per op of
/// the forward function on the CPU.
int benchModelCommand(const std::string &modelPath, const std::string &input,
                      const std::map<std::string, int64_t> &dims, int warmup,
                      int iterations, int numThreads, bool json,
                      bool kernels);

} // namespace mcc

#endif
