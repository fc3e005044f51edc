//===- TensorIO.h - host tensors from and to .npz and ONNX .pb files ------===//
//
// Used by the CLI runners; links no MLIR or LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef MCC_SUPPORT_TENSORIO_H
#define MCC_SUPPORT_TENSORIO_H

#include "mcc/mcc.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mcc {

struct HostTensor {
  std::string name;
  mcc_dtype dtype = MCC_FLOAT32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  size_t numElements() const;
};

std::string shapeToString(const std::vector<int64_t> &shape);

/// Reads every array of a .npz archive (numpy.savez or savez_compressed).
bool readNpz(const std::string &path, std::vector<HostTensor> &tensors,
             std::string &error);

/// Writes a .npz archive atomically: a temporary file renamed into place, so
/// a failure leaves no file at `path`.
bool writeNpz(const std::string &path, const std::vector<HostTensor> &tensors,
              std::string &error);

/// Reads one onnx.TensorProto file (ONNX test-data layout: input_0.pb ...).
bool readTensorProto(const std::string &path, HostTensor &tensor,
                     std::string &error);

/// Reads one tensor from a .npy file or an onnx.TensorProto (.pb) file,
/// chosen by the extension.
bool readTensorFile(const std::string &path, HostTensor &tensor,
                    std::string &error);

/// Reads the inputs of a run from a .npz keyed by input names or from a
/// folder in ONNX test-data layout (input_<i>.pb in graph-input order).
/// `names` are the model's input names, in order; the result follows them.
bool readRunInputs(const std::string &path,
                   const std::vector<std::string> &names,
                   std::vector<HostTensor> &inputs, std::string &error);

} // namespace mcc

#endif // MCC_SUPPORT_TENSORIO_H
