//===- ModelCommands.cpp - `run` and `inspect` over the runtime C API -----===//

#include "mcc/Support/ModelCommands.h"
#include "mcc/Support/TensorIO.h"
#include "mcc/mcc.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>

namespace mcc {

namespace {
struct ModelDeleter {
  void operator()(mcc_model *m) const { mcc_model_free(m); }
};
using ModelPtr = std::unique_ptr<mcc_model, ModelDeleter>;

int report(const std::string &what) {
  std::fprintf(stderr, "mcc: error: %s\n", what.c_str());
  return 1;
}

bool loadModel(const std::string &path, ModelPtr &out) {
  mcc_model *m = nullptr;
  if (mcc_model_load(path.c_str(), &m) != MCC_OK) {
    report(mcc_last_error());
    return false;
  }
  out.reset(m);
  return true;
}
} // namespace

int runModelCommand(const std::string &modelPath, const std::string &input,
                    const std::string &output, int numThreads) {
  ModelPtr model;
  if (!loadModel(modelPath, model))
    return 1;
  if (numThreads > 0 && mcc_set_num_threads(numThreads) != MCC_OK)
    return report(mcc_last_error());
  size_t nin = mcc_model_num_inputs(model.get());
  size_t nout = mcc_model_num_outputs(model.get());
  std::vector<std::string> names;
  for (size_t i = 0; i < nin; ++i) {
    mcc_tensor_info info;
    mcc_model_input_info(model.get(), i, &info);
    names.push_back(info.name);
  }
  std::vector<HostTensor> inputs;
  std::string error;
  if (!readRunInputs(input, names, inputs, error))
    return report(error);
  std::vector<mcc_tensor> in(nin), out(nout);
  for (size_t i = 0; i < nin; ++i) {
    HostTensor &t = inputs[i];
    if (t.shape.size() > MCC_MAX_RANK)
      return report("input '" + t.name + "' has rank " +
                    std::to_string(t.shape.size()) + ", more than " +
                    std::to_string(MCC_MAX_RANK));
    in[i].data = t.data.data();
    in[i].dtype = t.dtype;
    in[i].rank = static_cast<int32_t>(t.shape.size());
    for (size_t d = 0; d < t.shape.size(); ++d)
      in[i].shape[d] = t.shape[d];
  }
  if (mcc_run_alloc(model.get(), in.data(), nin, out.data(), nout) != MCC_OK)
    return report(mcc_last_error());
  std::vector<HostTensor> results;
  for (size_t i = 0; i < nout; ++i) {
    mcc_tensor_info info;
    mcc_model_output_info(model.get(), i, &info);
    HostTensor t;
    t.name = info.name;
    t.dtype = out[i].dtype;
    t.shape.assign(out[i].shape, out[i].shape + out[i].rank);
    size_t bytes = t.numElements() * mcc_dtype_size(t.dtype);
    auto *p = static_cast<uint8_t *>(out[i].data);
    t.data.assign(p, p + bytes);
    mcc_tensor_free_data(&out[i]);
    results.push_back(std::move(t));
  }
  if (!writeNpz(output, results, error))
    return report(error);
  return 0;
}

int inspectModelCommand(const std::string &modelPath) {
  ModelPtr model;
  if (!loadModel(modelPath, model))
    return 1;
  auto describe = [&](bool inputs) {
    nlohmann::json list = nlohmann::json::array();
    size_t n = inputs ? mcc_model_num_inputs(model.get())
                      : mcc_model_num_outputs(model.get());
    for (size_t i = 0; i < n; ++i) {
      mcc_tensor_info info;
      if (inputs)
        mcc_model_input_info(model.get(), i, &info);
      else
        mcc_model_output_info(model.get(), i, &info);
      list.push_back({{"name", info.name},
                      {"dtype", mcc_dtype_name(info.dtype)},
                      {"shape", std::vector<int64_t>(
                                    info.shape, info.shape + info.rank)}});
    }
    return list;
  };
  nlohmann::json j = {{"path", modelPath},
                      {"target", mcc_model_target(model.get())},
                      {"arch", mcc_model_arch(model.get())},
                      {"inputs", describe(true)},
                      {"outputs", describe(false)}};
  std::cout << j.dump(2) << std::endl;
  return 0;
}

} // namespace mcc
