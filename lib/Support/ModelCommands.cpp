//===- ModelCommands.cpp - `run` and `inspect` over the runtime C API -----===//

#include "mcc/Support/ModelCommands.h"
#include "mcc/Support/TensorIO.h"
#include "mcc/mcc.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <random>

namespace mcc {

namespace {
struct ModelDeleter {
  void operator()(mcc_model *m) const { mcc_model_free(m); }
};
using ModelPtr = std::unique_ptr<mcc_model, ModelDeleter>;

/// Order statistics of a list of run times (milliseconds).
struct Percentiles {
  std::vector<double> sorted;
  double mean = 0, min = 0;
  explicit Percentiles(std::vector<double> v) : sorted(std::move(v)) {
    std::sort(sorted.begin(), sorted.end());
    for (double x : sorted)
      mean += x;
    if (!sorted.empty()) {
      mean /= sorted.size();
      min = sorted.front();
    }
  }
  double at(double p) const {
    if (sorted.empty())
      return 0;
    size_t idx = static_cast<size_t>(std::ceil(p / 100.0 * sorted.size()));
    return sorted[std::min(idx ? idx - 1 : 0, sorted.size() - 1)];
  }
};

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

/// A bfloat16 input also takes uint16 data as its bit patterns: the form
/// `mcc run` writes bfloat16 outputs in (numpy has no bfloat16), and the
/// one ONNX's own test data used up to release 1.13. Likewise the one-byte
/// small types (float8, int4, ...) take uint8 or int8 data, and ml_dtypes'
/// arrays, which .npy stores as 1-byte voids (read as uint8).
void acceptBitPatterns(const mcc_model *model,
                       std::vector<HostTensor> &inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    mcc_tensor_info info;
    if (mcc_model_input_info(model, i, &info) != MCC_OK)
      continue;
    if (info.dtype == MCC_BFLOAT16 && inputs[i].dtype == MCC_UINT16)
      inputs[i].dtype = MCC_BFLOAT16;
    if (info.dtype >= MCC_FLOAT8E4M3FN && info.dtype <= MCC_INT2 &&
        (inputs[i].dtype == MCC_UINT8 || inputs[i].dtype == MCC_INT8))
      inputs[i].dtype = info.dtype;
  }
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
  acceptBitPatterns(model.get(), inputs);
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
      // A dynamic dim shows as its symbol (inputs) or expression (outputs).
      nlohmann::json shape = nlohmann::json::array();
      for (int d = 0; d < info.rank; ++d)
        if (info.dim_names[d])
          shape.push_back(info.dim_names[d]);
        else
          shape.push_back(info.shape[d]);
      list.push_back({{"name", info.name},
                      {"dtype", mcc_dtype_name(info.dtype)},
                      {"shape", shape}});
    }
    return list;
  };
  nlohmann::json symbols = nlohmann::json::array();
  for (size_t k = 0; k < mcc_model_num_symbols(model.get()); ++k) {
    const char *name = nullptr;
    int64_t lo = 0, hi = 0;
    mcc_model_symbol_info(model.get(), k, &name, &lo, &hi);
    nlohmann::json sym = {{"name", name}, {"min", lo}};
    // Unbounded above: null rather than INT64_MAX.
    sym["max"] = hi == INT64_MAX ? nlohmann::json() : nlohmann::json(hi);
    symbols.push_back(sym);
  }
  nlohmann::json j = {{"path", modelPath},
                      {"target", mcc_model_target(model.get())},
                      {"arch", mcc_model_arch(model.get())},
                      {"precision", mcc_model_precision(model.get())},
                      {"inputs", describe(true)},
                      {"outputs", describe(false)},
                      {"symbols", symbols}};
  std::cout << j.dump(2) << std::endl;
  return 0;
}

int benchModelCommand(const std::string &modelPath, const std::string &input,
                      const std::map<std::string, int64_t> &dims, int warmup,
                      int iterations, int numThreads, bool json,
                      bool kernels) {
  if (iterations < 1 || warmup < 0)
    return report("--iterations must be >= 1 and --warmup >= 0");
  ModelPtr model;
  if (!loadModel(modelPath, model))
    return 1;
  if (numThreads > 0 && mcc_set_num_threads(numThreads) != MCC_OK)
    return report(mcc_last_error());
  size_t nin = mcc_model_num_inputs(model.get());
  size_t nout = mcc_model_num_outputs(model.get());
  std::vector<HostTensor> inputs;
  std::vector<std::string> names;
  std::vector<mcc_tensor_info> infos(nin);
  for (size_t i = 0; i < nin; ++i) {
    mcc_model_input_info(model.get(), i, &infos[i]);
    names.push_back(infos[i].name);
  }
  std::string error;
  if (!input.empty()) {
    if (!dims.empty())
      return report("--dim sizes generated inputs; with --input the inputs' "
                    "shapes decide");
    if (!readRunInputs(input, names, inputs, error))
      return report(error);
    acceptBitPatterns(model.get(), inputs);
  } else {
    // Generated inputs take their dynamic dims from --dim SYMBOL=N.
    std::string symbolList;
    std::map<std::string, bool> known;
    for (size_t k = 0; k < mcc_model_num_symbols(model.get()); ++k) {
      const char *name = nullptr;
      mcc_model_symbol_info(model.get(), k, &name, nullptr, nullptr);
      known[name] = true;
      symbolList += (symbolList.empty() ? "" : ", ") + std::string(name);
    }
    for (const auto &[name, value] : dims) {
      if (!known.count(name))
        return report(
            "--dim " + name + ": the model has no symbol '" + name + "'" +
            (symbolList.empty() ? " (its shapes are static)"
                                : " (its symbols: " + symbolList + ")"));
      if (value < 0)
        return report("--dim " + name + "=" + std::to_string(value) +
                      ": a size cannot be negative");
    }
    std::mt19937 rng(1234);
    for (size_t i = 0; i < nin; ++i) {
      HostTensor t;
      t.name = infos[i].name;
      t.dtype = infos[i].dtype;
      t.shape.assign(infos[i].shape, infos[i].shape + infos[i].rank);
      for (int d = 0; d < infos[i].rank; ++d) {
        if (!infos[i].dim_names[d])
          continue;
        auto it = dims.find(infos[i].dim_names[d]);
        if (it == dims.end())
          return report("input '" + t.name + "' axis " + std::to_string(d) +
                        " is dynamic ('" + infos[i].dim_names[d] +
                        "'); choose its size with --dim " +
                        infos[i].dim_names[d] + "=N");
        t.shape[d] = it->second;
      }
      inputs.push_back(std::move(t));
    }
    // Bounds and agreement are checked before any memory is filled.
    std::vector<mcc_tensor> shapes(nin);
    for (size_t i = 0; i < nin; ++i) {
      shapes[i].dtype = inputs[i].dtype;
      shapes[i].rank = static_cast<int32_t>(inputs[i].shape.size());
      std::copy(inputs[i].shape.begin(), inputs[i].shape.end(),
                shapes[i].shape);
    }
    std::vector<mcc_tensor_info> outInfos(nout);
    if (mcc_model_output_shapes(model.get(), shapes.data(), nin,
                                outInfos.data(), nout) != MCC_OK)
      return report(mcc_last_error());
    for (HostTensor &t : inputs) {
      size_t n = t.numElements(), es = mcc_dtype_size(t.dtype);
      t.data.assign(n * es, 0);
      for (size_t k = 0; k < n; ++k) {
        uint8_t *p = t.data.data() + k * es;
        if (t.dtype == MCC_FLOAT32) {
          float v = std::uniform_real_distribution<float>(-1, 1)(rng);
          std::memcpy(p, &v, 4);
        } else if (t.dtype == MCC_FLOAT64) {
          double v = std::uniform_real_distribution<double>(-1, 1)(rng);
          std::memcpy(p, &v, 8);
        } else if (t.dtype == MCC_BOOL) {
          *p = 1;
        } else {
          int64_t v = std::uniform_int_distribution<int64_t>(0, 9)(rng);
          std::memcpy(p, &v, std::min<size_t>(es, 8));
        }
      }
    }
  }
  std::vector<mcc_tensor> in(nin), out(nout);
  std::vector<std::vector<uint8_t>> outStore(nout);
  for (size_t i = 0; i < nin; ++i) {
    in[i].data = inputs[i].data.data();
    in[i].dtype = inputs[i].dtype;
    in[i].rank = static_cast<int32_t>(inputs[i].shape.size());
    for (size_t d = 0; d < inputs[i].shape.size() && d < MCC_MAX_RANK; ++d)
      in[i].shape[d] = inputs[i].shape[d];
  }
  // Output shapes follow from the inputs' (and fail as a run would).
  std::vector<mcc_tensor_info> outInfos(nout);
  if (mcc_model_output_shapes(model.get(), in.data(), nin, outInfos.data(),
                              nout) != MCC_OK)
    return report(mcc_last_error());
  for (size_t i = 0; i < nout; ++i) {
    const mcc_tensor_info &info = outInfos[i];
    size_t n = 1;
    for (int d = 0; d < info.rank; ++d)
      n *= info.shape[d];
    outStore[i].assign(n * mcc_dtype_size(info.dtype) + 1, 0);
    out[i].data = outStore[i].data();
    out[i].dtype = info.dtype;
    out[i].rank = info.rank;
    for (int d = 0; d < info.rank; ++d)
      out[i].shape[d] = info.shape[d];
  }
  auto runOnce = [&]() -> bool {
    return mcc_run(model.get(), in.data(), nin, out.data(), nout) == MCC_OK;
  };
  for (int i = 0; i < warmup; ++i)
    if (!runOnce())
      return report(mcc_last_error());
  // GPU models also report the device time of each run (CUDA events).
  bool gpu = std::string(mcc_model_target(model.get())) == "cuda";
  std::vector<double> ms, deviceMs;
  ms.reserve(iterations);
  for (int i = 0; i < iterations; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    if (!runOnce())
      return report(mcc_last_error());
    ms.push_back(std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - t0)
                     .count());
    double d;
    if (gpu && mcc_model_last_run_device_ms(model.get(), &d) == MCC_OK)
      deviceMs.push_back(d);
  }
  Percentiles wall(ms), device(deviceMs);

  // The per-kernel (GPU) or per-op (CPU) profile: its own runs, after the
  // timed ones (profiling adds an event per launch, a clock read per op),
  // the first recapturing the run's graph.
  std::vector<mcc_kernel_time> kernelTimes;
  int64_t profiledRuns = 0;
  std::vector<double> profiledMs;
  if (kernels) {
    if (mcc_model_set_kernel_profiling(model.get(), 1) != MCC_OK)
      return report(mcc_last_error());
    for (int i = 0; i < 3; ++i)
      if (!runOnce())
        return report(mcc_last_error());
    mcc_model_set_kernel_profiling(model.get(), 1); // clears the warm-up
    for (int i = 0; i < iterations; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      if (!runOnce())
        return report(mcc_last_error());
      double d = std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - t0)
                     .count();
      if (!gpu || mcc_model_last_run_device_ms(model.get(), &d) == MCC_OK)
        profiledMs.push_back(d);
    }
    size_t count = 0;
    mcc_model_kernel_profile(model.get(), nullptr, 0, &count, nullptr);
    kernelTimes.resize(count);
    mcc_model_kernel_profile(model.get(), kernelTimes.data(), count, &count,
                             &profiledRuns);
    mcc_model_set_kernel_profiling(model.get(), 0);
  }
  double perRun = profiledRuns > 0 ? 1.0 / profiledRuns : 0;
  int64_t launches = 0;
  double kernelMs = 0;
  for (const mcc_kernel_time &k : kernelTimes) {
    launches += k.launches;
    kernelMs += k.total_ms;
  }

  if (json) {
    nlohmann::json j = {
        {"model", modelPath},       {"target", mcc_model_target(model.get())},
        {"iterations", iterations}, {"warmup", warmup},
        {"p50_ms", wall.at(50)},    {"p90_ms", wall.at(90)},
        {"p99_ms", wall.at(99)},    {"mean_ms", wall.mean},
        {"min_ms", wall.min}};
    if (!deviceMs.empty())
      j["device"] = {{"p50_ms", device.at(50)},
                     {"p90_ms", device.at(90)},
                     {"p99_ms", device.at(99)},
                     {"mean_ms", device.mean},
                     {"min_ms", device.min}};
    if (kernels) {
      nlohmann::json list = nlohmann::json::array();
      for (const mcc_kernel_time &k : kernelTimes)
        list.push_back({{"name", k.name},
                        {"launches_per_run", k.launches * perRun},
                        {"ms_per_run", k.total_ms * perRun}});
      j["kernels"] = {{"runs", profiledRuns},
                      {"launches_per_run", launches * perRun},
                      {"profiled_p50_ms", Percentiles(profiledMs).at(50)},
                      {"by_name", list}};
    }
    std::cout << j.dump(2) << std::endl;
    return 0;
  }
  std::printf("%s (%s): %d runs after %d warm-up\n", modelPath.c_str(),
              mcc_model_target(model.get()), iterations, warmup);
  std::printf("  wall clock (inputs and outputs in host memory):\n"
              "    p50 %.3f ms  p90 %.3f ms  p99 %.3f ms  mean %.3f ms  "
              "min %.3f ms\n",
              wall.at(50), wall.at(90), wall.at(99), wall.mean, wall.min);
  if (!deviceMs.empty())
    std::printf("  device (CUDA events around the run's kernels):\n"
                "    p50 %.3f ms  p90 %.3f ms  p99 %.3f ms  mean %.3f ms  "
                "min %.3f ms\n",
                device.at(50), device.at(90), device.at(99), device.mean,
                device.min);
  if (kernels) {
    if (gpu)
      std::printf("\nper kernel, %lld profiled runs: %.0f launches per run, "
                  "device p50 %.3f ms with one event per launch (each time "
                  "below includes its event)\n",
                  static_cast<long long>(profiledRuns), launches * perRun,
                  Percentiles(profiledMs).at(50));
    else
      std::printf("\nper op, %lld profiled runs: %.0f ops per run, wall p50 "
                  "%.3f ms while profiled (an op's time runs from its start "
                  "to the next op's: its parallel region's fork and join, "
                  "and the allocations after it)\n",
                  static_cast<long long>(profiledRuns), launches * perRun,
                  Percentiles(profiledMs).at(50));
    // Generated kernels are mcc_<n>_<what>: first the totals by <what>.
    // CPU ops are "#<n> <what> <shape> [<nodes>]": by <what>.
    std::map<std::string, std::pair<double, double>> kinds;
    for (const mcc_kernel_time &k : kernelTimes) {
      std::string kind = k.name;
      if (kind.rfind("gemm ", 0) == 0)
        kind = "gemm (cuBLAS)";
      else if (kind.rfind("mcc_", 0) == 0 &&
               kind.find('_', 4) != std::string::npos)
        kind = "generated " + kind.substr(kind.find('_', 4) + 1);
      else if (kind.rfind("#", 0) == 0 && kind.find(' ') != std::string::npos)
        kind = kind.substr(kind.find(' ') + 1,
                           kind.find(' ', kind.find(' ') + 1) -
                               kind.find(' ') - 1);
      kinds[kind].first += k.total_ms * perRun;
      kinds[kind].second += k.launches * perRun;
    }
    std::vector<std::pair<std::string, std::pair<double, double>>> byKind(
        kinds.begin(), kinds.end());
    std::sort(byKind.begin(), byKind.end(), [](const auto &a, const auto &b) {
      return a.second.first > b.second.first;
    });
    const char *times = gpu ? "launches" : "times";
    std::printf("  %9s %7s %8s  %s\n", "ms/run", "share", times, "kind");
    for (const auto &[kind, t] : byKind)
      std::printf("  %9.4f %6.1f%% %8.1f  %s\n", t.first,
                  kernelMs > 0 ? 100.0 * t.first / (kernelMs * perRun) : 0.0,
                  t.second, kind.c_str());
    std::printf("\n  %9s %7s %8s  %s\n", "ms/run", "share", times,
                gpu ? "name" : "op");
    for (const mcc_kernel_time &k : kernelTimes)
      std::printf("  %9.4f %6.1f%% %8.1f  %s\n", k.total_ms * perRun,
                  kernelMs > 0 ? 100.0 * k.total_ms / kernelMs : 0.0,
                  k.launches * perRun, k.name);
  }
  return 0;
}

} // namespace mcc
