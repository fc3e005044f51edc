//===- Runtime.cpp - load and run mcc model shared libraries -------------===//
//
// Loads a model .so, validates its descriptor against this runtime's ABI and
// the host, and runs it on caller buffers after checking every shape and
// dtype. Dynamic dims (docs/design/0010) are bound from the inputs on each
// run (ShapeBinding.h). Errors are reported per thread so that concurrent
// runs don't race on the message.
//
//===----------------------------------------------------------------------===//

#include "ShapeBinding.h"
#include "mcc/ModelABI.h"
#include "mcc/mcc.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#define MCC_API extern "C" __attribute__((visibility("default")))

struct mcc_model {
  void *handle = nullptr;
  const MccModelDescriptor *desc = nullptr;
  std::string path;
  /// Parsed dim expressions and the names mcc_tensor_info reports.
  mcc::rt::ShapeSignature shapes;
  /// The names mcc_model_kernel_profile last returned.
  mutable std::vector<std::string> profileNames;
  mutable std::mutex profileMutex;
};

namespace {

thread_local std::string lastError;

// Models link LLVM's OpenMP runtime, loaded privately with each model; its
// thread-count setters are found through the first model's handle so the
// runtime itself needs no OpenMP.
using SetThreadsFn = void (*)(int);
using GetProcsFn = int (*)(void);
std::atomic<SetThreadsFn> ompSetNumThreads{nullptr};
std::atomic<GetProcsFn> ompGetNumProcs{nullptr};

mcc_status fail(mcc_status status, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  lastError = buf;
  return status;
}

/// Every dtype the runtime runs has a size (mcc_dtype_size is the one list).
bool knownDType(int64_t dtype) {
  return dtype >= 0 && dtype <= INT32_MAX &&
         mcc_dtype_size(static_cast<mcc_dtype>(dtype)) != 0;
}

using mcc::rt::shapeString;

/// Elements of a shape whose dims are checked non-negative; false when the
/// count (or its bytes, for `elementSize`) overflows size_t.
bool numElements(int64_t rank, const int64_t *shape, size_t elementSize,
                 size_t &bytes) {
  size_t n = elementSize;
  for (int64_t i = 0; i < rank; ++i)
    if (__builtin_mul_overflow(n, static_cast<size_t>(shape[i]), &n))
      return false;
  bytes = n;
  return true;
}

mcc_status validateDescriptor(const MccModelDescriptor *d, const char *path,
                              mcc::rt::ShapeSignature &shapes) {
  // abi_version is the first field in every version: check it before
  // reading fields a model of another version may not have.
  if (d->abi_version != MCC_ABI_VERSION)
    return fail(MCC_ERROR_ABI,
                "%s: model ABI version %lld, this runtime supports %d; "
                "recompile the model with a matching mcc",
                path, (long long)d->abi_version, MCC_ABI_VERSION);
  if (!d->target || (std::strcmp(d->target, "cpu") != 0 &&
                     std::strcmp(d->target, "cuda") != 0))
    return fail(MCC_ERROR_ABI,
                "%s: model target '%s' is not supported by "
                "this runtime (supported: cpu, cuda)",
                path, d->target ? d->target : "(null)");
  const MccTensorDesc *lists[2] = {d->inputs, d->outputs};
  int64_t counts[2] = {d->num_inputs, d->num_outputs};
  for (int k = 0; k < 2; ++k) {
    if (counts[k] < 0 || (counts[k] > 0 && !lists[k]))
      return fail(MCC_ERROR_LOAD, "%s: malformed model descriptor", path);
    for (int64_t i = 0; i < counts[k]; ++i) {
      const MccTensorDesc &t = lists[k][i];
      if (!t.name || t.rank < 0 || t.rank > MCC_MAX_RANK ||
          !knownDType(t.dtype))
        return fail(MCC_ERROR_LOAD, "%s: malformed tensor %lld in descriptor",
                    path, (long long)i);
    }
  }
  if (!d->run)
    return fail(MCC_ERROR_LOAD, "%s: descriptor has no run function", path);
  std::string error;
  if (!mcc::rt::ShapeSignature::fromDescriptor(*d, shapes, error))
    return fail(MCC_ERROR_LOAD, "%s: %s", path, error.c_str());
  return MCC_OK;
}

void fillInfo(const MccTensorDesc &d, const mcc::rt::TensorShape &shape,
              mcc_tensor_info *info) {
  info->name = d.name;
  info->dtype = static_cast<mcc_dtype>(d.dtype);
  info->rank = static_cast<int32_t>(d.rank);
  for (int i = 0; i < MCC_MAX_RANK; ++i) {
    info->shape[i] = i < d.rank ? d.shape[i] : 0;
    info->dim_names[i] =
        i < d.rank && d.shape[i] < 0 ? shape.dimNames[i].c_str() : nullptr;
  }
}

mcc_status checkDType(const char *role, size_t index, const MccTensorDesc &d,
                      const mcc_tensor &t) {
  if (t.dtype != d.dtype)
    return fail(MCC_ERROR_DTYPE,
                "%s %zu ('%s'): dtype %s given, the model expects %s", role,
                index, d.name, mcc_dtype_name(t.dtype),
                mcc_dtype_name(static_cast<mcc_dtype>(d.dtype)));
  return MCC_OK;
}

/// An empty tensor may have no storage; any other needs its data.
mcc_status checkData(const char *role, size_t index, const MccTensorDesc &d,
                     const mcc_tensor &t) {
  size_t bytes = 0;
  if (!numElements(t.rank, t.shape, 1, bytes))
    return fail(MCC_ERROR_SHAPE, "%s %zu ('%s'): shape %s is too large", role,
                index, d.name, shapeString(t.rank, t.shape).c_str());
  if (!t.data && bytes != 0)
    return fail(MCC_ERROR_INVALID_ARGUMENT, "%s %zu ('%s'): data is null", role,
                index, d.name);
  return MCC_OK;
}

/// Checks every input's dtype and shape and binds the symbols from them.
mcc_status bindInputs(const mcc_model *m, const mcc_tensor *inputs,
                      mcc::rt::ShapeBinder &binder, bool checkDataToo) {
  const MccModelDescriptor *d = m->desc;
  std::string error;
  for (size_t i = 0; i < static_cast<size_t>(d->num_inputs); ++i) {
    if (mcc_status s = checkDType("input", i, d->inputs[i], inputs[i]))
      return s;
    if (mcc_status s =
            binder.bindInput(i, inputs[i].rank, inputs[i].shape, error))
      return fail(s, "%s", error.c_str());
    if (checkDataToo)
      if (mcc_status s = checkData("input", i, d->inputs[i], inputs[i]))
        return s;
  }
  return MCC_OK;
}

mcc_status checkCounts(const mcc_model *m, size_t numInputs,
                       size_t numOutputs) {
  if (!m)
    return fail(MCC_ERROR_INVALID_ARGUMENT, "model is null");
  if (numInputs != static_cast<size_t>(m->desc->num_inputs))
    return fail(MCC_ERROR_INVALID_ARGUMENT,
                "%zu inputs given, the model has %lld", numInputs,
                (long long)m->desc->num_inputs);
  if (numOutputs != static_cast<size_t>(m->desc->num_outputs))
    return fail(MCC_ERROR_INVALID_ARGUMENT,
                "%zu outputs given, the model has %lld", numOutputs,
                (long long)m->desc->num_outputs);
  return MCC_OK;
}

/// A CUDA model's own entry point `name`, or null (with the error set).
void *cudaEntry(const mcc_model *model, const char *name) {
  void *fn = dlsym(model->handle, name);
  if (!fn)
    fail(MCC_ERROR_INVALID_ARGUMENT,
         "%s: GPU timing and stream-ordered runs need a model compiled "
         "with --target cuda (this one's target is %s)",
         model->path.c_str(), mcc_model_target(model));
  return fn;
}

/// A per-op profile entry: the CUDA shim's, or the CPU model's (marks the
/// CPU pipeline puts around each op; models built before them have none).
void *profileEntry(const mcc_model *model, const char *cudaName,
                   const char *cpuName) {
  if (void *fn = dlsym(model->handle, cudaName))
    return fn;
  void *fn = dlsym(model->handle, cpuName);
  if (!fn)
    fail(MCC_ERROR_INVALID_ARGUMENT,
         "%s: this model has no per-op profile (it was compiled by an mcc "
         "without one; compile it again)",
         model->path.c_str());
  return fn;
}

mcc_status runModel(const mcc_model *model, const mcc_tensor *inputs,
                    size_t numInputs, mcc_tensor *outputs, size_t numOutputs);

} // namespace

MCC_API const char *mcc_last_error(void) { return lastError.c_str(); }

MCC_API const char *mcc_status_string(mcc_status status) {
  switch (status) {
  case MCC_OK:
    return "ok";
  case MCC_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case MCC_ERROR_LOAD:
    return "load error";
  case MCC_ERROR_ABI:
    return "ABI mismatch";
  case MCC_ERROR_SHAPE:
    return "shape mismatch";
  case MCC_ERROR_DTYPE:
    return "dtype mismatch";
  case MCC_ERROR_OUT_OF_MEMORY:
    return "out of memory";
  case MCC_ERROR_RUN:
    return "run error";
  }
  return "unknown status";
}

MCC_API size_t mcc_dtype_size(mcc_dtype dtype) {
  switch (dtype) {
  case MCC_FLOAT32:
  case MCC_INT32:
  case MCC_UINT32:
    return 4;
  case MCC_UINT8:
  case MCC_INT8:
  case MCC_BOOL:
  case MCC_FLOAT8E4M3FN:
  case MCC_FLOAT8E4M3FNUZ:
  case MCC_FLOAT8E5M2:
  case MCC_FLOAT8E5M2FNUZ:
  case MCC_UINT4:
  case MCC_INT4:
  case MCC_FLOAT4E2M1:
  case MCC_FLOAT8E8M0:
  case MCC_UINT2:
  case MCC_INT2:
    return 1;
  case MCC_INT64:
  case MCC_UINT64:
  case MCC_FLOAT64:
    return 8;
  case MCC_FLOAT16:
  case MCC_BFLOAT16:
  case MCC_INT16:
  case MCC_UINT16:
    return 2;
  }
  return 0;
}

MCC_API const char *mcc_dtype_name(mcc_dtype dtype) {
  switch (dtype) {
  case MCC_FLOAT32:
    return "float32";
  case MCC_UINT8:
    return "uint8";
  case MCC_INT8:
    return "int8";
  case MCC_INT32:
    return "int32";
  case MCC_INT64:
    return "int64";
  case MCC_BOOL:
    return "bool";
  case MCC_FLOAT16:
    return "float16";
  case MCC_FLOAT64:
    return "float64";
  case MCC_UINT16:
    return "uint16";
  case MCC_INT16:
    return "int16";
  case MCC_UINT32:
    return "uint32";
  case MCC_UINT64:
    return "uint64";
  case MCC_BFLOAT16:
    return "bfloat16";
  case MCC_FLOAT8E4M3FN:
    return "float8e4m3fn";
  case MCC_FLOAT8E4M3FNUZ:
    return "float8e4m3fnuz";
  case MCC_FLOAT8E5M2:
    return "float8e5m2";
  case MCC_FLOAT8E5M2FNUZ:
    return "float8e5m2fnuz";
  case MCC_UINT4:
    return "uint4";
  case MCC_INT4:
    return "int4";
  case MCC_FLOAT4E2M1:
    return "float4e2m1";
  case MCC_FLOAT8E8M0:
    return "float8e8m0";
  case MCC_UINT2:
    return "uint2";
  case MCC_INT2:
    return "int2";
  }
  return "unknown";
}

MCC_API mcc_status mcc_model_load(const char *path, mcc_model **outModel) {
  if (!path || !outModel)
    return fail(MCC_ERROR_INVALID_ARGUMENT, "path or out pointer is null");
  *outModel = nullptr;
  struct stat st;
  if (stat(path, &st) != 0)
    return fail(MCC_ERROR_LOAD, "%s: no such file", path);
  if (!S_ISREG(st.st_mode))
    return fail(MCC_ERROR_LOAD, "%s: not a regular file", path);
  // dlopen searches the library path for names without a slash; a model
  // path always means a file.
  std::string resolved = path;
  if (resolved.find('/') == std::string::npos)
    resolved = "./" + resolved;
  void *handle = dlopen(resolved.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return fail(MCC_ERROR_LOAD, "%s: cannot load: %s", path, dlerror());
  auto fn =
      reinterpret_cast<MccDescriptorFn>(dlsym(handle, MCC_DESCRIPTOR_SYMBOL));
  // A model of an earlier ABI exports that version's symbol: its descriptor
  // starts with abi_version too, so validateDescriptor names its version.
  if (!fn)
    fn = reinterpret_cast<MccDescriptorFn>(
        dlsym(handle, MCC_DESCRIPTOR_SYMBOL_V1));
  if (!fn) {
    dlclose(handle);
    return fail(MCC_ERROR_LOAD, "%s: not an mcc model (no %s symbol)", path,
                MCC_DESCRIPTOR_SYMBOL);
  }
  const MccModelDescriptor *desc = fn();
  if (!desc) {
    dlclose(handle);
    return fail(MCC_ERROR_LOAD, "%s: model descriptor is null", path);
  }
  mcc::rt::ShapeSignature shapes;
  if (mcc_status s = validateDescriptor(desc, path, shapes)) {
    dlclose(handle);
    return s;
  }
  if (!ompSetNumThreads.load()) {
    ompSetNumThreads =
        reinterpret_cast<SetThreadsFn>(dlsym(handle, "omp_set_num_threads"));
    ompGetNumProcs =
        reinterpret_cast<GetProcsFn>(dlsym(handle, "omp_get_num_procs"));
    // Pin the OpenMP library so the cached pointers outlive this model.
    Dl_info info;
    if (ompSetNumThreads.load() &&
        dladdr(reinterpret_cast<void *>(ompSetNumThreads.load()), &info) &&
        info.dli_fname)
      dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  }
  // Models with external weights check and map them now, so a missing or
  // foreign weights file is a load error.
  using InitFn = int32_t (*)();
  if (auto init = reinterpret_cast<InitFn>(dlsym(handle, "mcc_model_init"))) {
    if (init() != 0) {
      using MessageFn = const char *(*)();
      auto message =
          reinterpret_cast<MessageFn>(dlsym(handle, "mcc_model_last_error"));
      std::string text = message ? message() : "model initialization failed";
      dlclose(handle);
      return fail(MCC_ERROR_LOAD, "%s: %s", path, text.c_str());
    }
  }
  auto *m = new (std::nothrow) mcc_model;
  if (!m) {
    dlclose(handle);
    return fail(MCC_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  m->handle = handle;
  m->desc = desc;
  m->path = path;
  m->shapes = std::move(shapes);
  *outModel = m;
  return MCC_OK;
}

MCC_API void mcc_model_free(mcc_model *model) {
  if (!model)
    return;
  dlclose(model->handle);
  delete model;
}

MCC_API const char *mcc_model_target(const mcc_model *model) {
  return model ? model->desc->target : "";
}

MCC_API const char *mcc_model_arch(const mcc_model *model) {
  return model ? model->desc->arch : "";
}

MCC_API const char *mcc_model_precision(const mcc_model *model) {
  if (!model)
    return "";
  // Written by `mcc compile --precision` into CUDA models and bf16x3 CPU
  // models.
  auto *p = static_cast<const char *>(dlsym(model->handle, "mcc_precision"));
  return p ? p : "fp32";
}

MCC_API size_t mcc_model_num_inputs(const mcc_model *model) {
  return model ? static_cast<size_t>(model->desc->num_inputs) : 0;
}

MCC_API size_t mcc_model_num_outputs(const mcc_model *model) {
  return model ? static_cast<size_t>(model->desc->num_outputs) : 0;
}

MCC_API mcc_status mcc_model_input_info(const mcc_model *model, size_t index,
                                        mcc_tensor_info *info) {
  if (!model || !info)
    return fail(MCC_ERROR_INVALID_ARGUMENT, "model or info is null");
  if (index >= static_cast<size_t>(model->desc->num_inputs))
    return fail(MCC_ERROR_INVALID_ARGUMENT,
                "input index %zu out of range (model has %lld inputs)", index,
                (long long)model->desc->num_inputs);
  fillInfo(model->desc->inputs[index], model->shapes.inputs[index], info);
  return MCC_OK;
}

MCC_API mcc_status mcc_model_output_info(const mcc_model *model, size_t index,
                                         mcc_tensor_info *info) {
  if (!model || !info)
    return fail(MCC_ERROR_INVALID_ARGUMENT, "model or info is null");
  if (index >= static_cast<size_t>(model->desc->num_outputs))
    return fail(MCC_ERROR_INVALID_ARGUMENT,
                "output index %zu out of range (model has %lld outputs)", index,
                (long long)model->desc->num_outputs);
  fillInfo(model->desc->outputs[index], model->shapes.outputs[index], info);
  return MCC_OK;
}

MCC_API mcc_status mcc_set_num_threads(int numThreads) {
  if (numThreads < 0)
    return fail(MCC_ERROR_INVALID_ARGUMENT, "thread count %d is negative",
                numThreads);
  SetThreadsFn set = ompSetNumThreads.load();
  if (!set)
    return fail(MCC_ERROR_RUN,
                "no OpenMP runtime is loaded yet; load a model first");
  if (numThreads == 0) {
    GetProcsFn procs = ompGetNumProcs.load();
    numThreads = procs ? procs() : 1;
  }
  set(numThreads);
  return MCC_OK;
}

MCC_API size_t mcc_model_num_symbols(const mcc_model *model) {
  return model ? model->shapes.symbols.size() : 0;
}

MCC_API mcc_status mcc_model_symbol_info(const mcc_model *model, size_t index,
                                         const char **name, int64_t *lo,
                                         int64_t *hi) {
  if (!model)
    return fail(MCC_ERROR_INVALID_ARGUMENT, "model is null");
  if (index >= model->shapes.symbols.size())
    return fail(MCC_ERROR_INVALID_ARGUMENT,
                "symbol index %zu out of range (model has %zu symbols)", index,
                model->shapes.symbols.size());
  const mcc::rt::SymbolBounds &s = model->shapes.symbols[index];
  if (name)
    *name = s.name.c_str();
  if (lo)
    *lo = s.lo;
  if (hi)
    *hi = s.hi;
  return MCC_OK;
}

MCC_API mcc_status mcc_model_output_shapes(const mcc_model *model,
                                           const mcc_tensor *inputs,
                                           size_t numInputs,
                                           mcc_tensor_info *outputs,
                                           size_t numOutputs) {
  if (mcc_status s = checkCounts(model, numInputs, numOutputs))
    return s;
  if ((numInputs && !inputs) || (numOutputs && !outputs))
    return fail(MCC_ERROR_INVALID_ARGUMENT, "inputs or outputs array is null");
  mcc::rt::ShapeBinder binder(model->shapes);
  if (mcc_status s = bindInputs(model, inputs, binder, false))
    return s;
  std::string error;
  for (size_t i = 0; i < numOutputs; ++i) {
    fillInfo(model->desc->outputs[i], model->shapes.outputs[i], &outputs[i]);
    if (mcc_status s = binder.outputShape(i, outputs[i].shape, error))
      return fail(s, "%s", error.c_str());
  }
  return MCC_OK;
}

MCC_API mcc_status mcc_run(const mcc_model *model, const mcc_tensor *inputs,
                           size_t numInputs, mcc_tensor *outputs,
                           size_t numOutputs) {
  return runModel(model, inputs, numInputs, outputs, numOutputs);
}

MCC_API mcc_status mcc_run_on_stream(const mcc_model *model,
                                     const mcc_tensor *inputs, size_t numInputs,
                                     mcc_tensor *outputs, size_t numOutputs,
                                     void *cudaStream) {
  if (!model)
    return fail(MCC_ERROR_INVALID_ARGUMENT, "model is null");
  auto set = reinterpret_cast<void (*)(int, void *)>(
      cudaEntry(model, "mcc_cuda_set_caller_stream"));
  if (!set)
    return MCC_ERROR_INVALID_ARGUMENT;
  set(1, cudaStream);
  mcc_status s = runModel(model, inputs, numInputs, outputs, numOutputs);
  set(0, nullptr);
  return s;
}

namespace {
mcc_status runModel(const mcc_model *model, const mcc_tensor *inputs,
                    size_t numInputs, mcc_tensor *outputs, size_t numOutputs) {
  if (mcc_status s = checkCounts(model, numInputs, numOutputs))
    return s;
  if ((numInputs && !inputs) || (numOutputs && !outputs))
    return fail(MCC_ERROR_INVALID_ARGUMENT, "inputs or outputs array is null");
  const MccModelDescriptor *d = model->desc;
  mcc::rt::ShapeBinder binder(model->shapes);
  if (mcc_status s = bindInputs(model, inputs, binder, true))
    return s;
  std::vector<void *> buffers;
  buffers.reserve(numInputs + numOutputs);
  // The actual shapes of the inputs, then of the outputs (ModelABI.h).
  std::vector<int64_t> dims;
  for (size_t i = 0; i < numInputs; ++i) {
    buffers.push_back(inputs[i].data);
    dims.insert(dims.end(), inputs[i].shape, inputs[i].shape + inputs[i].rank);
  }
  std::string error;
  for (size_t i = 0; i < numOutputs; ++i) {
    const MccTensorDesc &o = d->outputs[i];
    if (mcc_status s = checkDType("output", i, o, outputs[i]))
      return s;
    int64_t expected[MCC_MAX_RANK];
    if (mcc_status s = binder.outputShape(i, expected, error))
      return fail(s, "%s", error.c_str());
    bool same = outputs[i].rank == o.rank;
    for (int64_t k = 0; same && k < o.rank; ++k)
      same = outputs[i].shape[k] == expected[k];
    if (!same) {
      if (outputs[i].rank < 0 || outputs[i].rank > MCC_MAX_RANK)
        return fail(MCC_ERROR_SHAPE, "output %zu ('%s'): rank %d is invalid", i,
                    o.name, outputs[i].rank);
      if (std::any_of(o.shape, o.shape + o.rank,
                      [](int64_t dim) { return dim < 0; }))
        return fail(
            MCC_ERROR_SHAPE,
            "output %zu ('%s'): shape %s given, the model computes "
            "%s for these inputs (%s with %s)",
            i, o.name, shapeString(outputs[i].rank, outputs[i].shape).c_str(),
            shapeString(o.rank, expected).c_str(),
            mcc::rt::ShapeSignature::shapeString(model->shapes.outputs[i])
                .c_str(),
            binder.boundSymbols().c_str());
      return fail(MCC_ERROR_SHAPE,
                  "output %zu ('%s'): shape %s given, the model expects %s", i,
                  o.name,
                  shapeString(outputs[i].rank, outputs[i].shape).c_str(),
                  shapeString(o.rank, expected).c_str());
    }
    if (mcc_status s = checkData("output", i, o, outputs[i]))
      return s;
    buffers.push_back(outputs[i].data);
    dims.insert(dims.end(), expected, expected + o.rank);
  }
  if (int32_t rc = d->run(buffers.data(), dims.data())) {
    // CUDA models say what failed (no driver, wrong architecture, ...).
    using MessageFn = const char *(*)();
    auto message = reinterpret_cast<MessageFn>(
        dlsym(model->handle, "mcc_cuda_last_error"));
    // CPU models say why they refused to run (AMX state denied).
    if (!message)
      message = reinterpret_cast<MessageFn>(
          dlsym(model->handle, "mcc_model_last_error"));
    const char *text = message ? message() : "";
    return fail(MCC_ERROR_RUN, "%s: model run failed (code %d)%s%s",
                model->path.c_str(), rc, *text ? ": " : "", text);
  }
  return MCC_OK;
}
} // namespace

MCC_API mcc_status mcc_run_alloc(const mcc_model *model,
                                 const mcc_tensor *inputs, size_t numInputs,
                                 mcc_tensor *outputs, size_t numOutputs) {
  if (mcc_status s = checkCounts(model, numInputs, numOutputs))
    return s;
  if (numOutputs && !outputs)
    return fail(MCC_ERROR_INVALID_ARGUMENT, "outputs array is null");
  if (numInputs && !inputs)
    return fail(MCC_ERROR_INVALID_ARGUMENT, "inputs array is null");
  const MccModelDescriptor *d = model->desc;
  // The output shapes follow from the inputs' (their checks come first).
  mcc::rt::ShapeBinder binder(model->shapes);
  if (mcc_status s = bindInputs(model, inputs, binder, true))
    return s;
  std::string error;
  for (size_t i = 0; i < numOutputs; ++i)
    outputs[i].data = nullptr;
  for (size_t i = 0; i < numOutputs; ++i) {
    const MccTensorDesc &o = d->outputs[i];
    outputs[i].dtype = static_cast<mcc_dtype>(o.dtype);
    outputs[i].rank = static_cast<int32_t>(o.rank);
    for (int k = 0; k < MCC_MAX_RANK; ++k)
      outputs[i].shape[k] = 0;
    mcc_status s = binder.outputShape(i, outputs[i].shape, error);
    size_t bytes = 0;
    if (s == MCC_OK && (!numElements(o.rank, outputs[i].shape,
                                     mcc_dtype_size(outputs[i].dtype), bytes) ||
                        bytes > SIZE_MAX - 128))
      s = fail(MCC_ERROR_OUT_OF_MEMORY, "output '%s' of shape %s is too large",
               o.name, shapeString(o.rank, outputs[i].shape).c_str());
    else if (s != MCC_OK)
      fail(s, "%s", error.c_str());
    if (s == MCC_OK) {
      outputs[i].data = std::aligned_alloc(64, ((bytes + 63) / 64) * 64 + 64);
      if (!outputs[i].data)
        s = fail(MCC_ERROR_OUT_OF_MEMORY, "cannot allocate output '%s'",
                 o.name);
    }
    if (s != MCC_OK) {
      for (size_t k = 0; k < i; ++k)
        mcc_tensor_free_data(&outputs[k]);
      return s;
    }
  }
  mcc_status s = mcc_run(model, inputs, numInputs, outputs, numOutputs);
  if (s != MCC_OK)
    for (size_t i = 0; i < numOutputs; ++i)
      mcc_tensor_free_data(&outputs[i]);
  return s;
}

MCC_API void mcc_tensor_free_data(mcc_tensor *tensor) {
  if (!tensor)
    return;
  std::free(tensor->data);
  tensor->data = nullptr;
}

MCC_API mcc_status mcc_model_last_run_device_ms(const mcc_model *model,
                                                double *ms) {
  if (!model || !ms)
    return fail(MCC_ERROR_INVALID_ARGUMENT, "model or ms is null");
  auto fn =
      reinterpret_cast<double (*)()>(cudaEntry(model, "mcc_cuda_last_run_ms"));
  if (!fn)
    return MCC_ERROR_INVALID_ARGUMENT;
  *ms = fn();
  if (*ms < 0)
    return fail(MCC_ERROR_INVALID_ARGUMENT,
                "%s: no run of this model on this thread was timed",
                model->path.c_str());
  return MCC_OK;
}

MCC_API mcc_status mcc_model_set_kernel_profiling(mcc_model *model,
                                                  int enable) {
  if (!model)
    return fail(MCC_ERROR_INVALID_ARGUMENT, "model is null");
  auto fn = reinterpret_cast<void (*)(int)>(
      profileEntry(model, "mcc_cuda_set_profiling", "mcc_cpu_set_profiling"));
  if (!fn)
    return MCC_ERROR_INVALID_ARGUMENT;
  fn(enable);
  return MCC_OK;
}

MCC_API mcc_status mcc_model_kernel_profile(const mcc_model *model,
                                            mcc_kernel_time *out,
                                            size_t capacity, size_t *count,
                                            int64_t *runs) {
  if (!model || (capacity && !out))
    return fail(MCC_ERROR_INVALID_ARGUMENT, "model or out is null");
  auto fn = reinterpret_cast<int64_t (*)(char *, int64_t)>(
      profileEntry(model, "mcc_cuda_profile_text", "mcc_cpu_profile_text"));
  if (!fn)
    return MCC_ERROR_INVALID_ARGUMENT;
  std::string text(static_cast<size_t>(fn(nullptr, 0)) + 1, '\0');
  text.resize(static_cast<size_t>(fn(text.data(), text.size())));
  // "runs\n" then "launches\tms\tlabel\n" per entry.
  std::vector<std::tuple<double, int64_t, std::string>> rows;
  size_t pos = text.find('\n');
  int64_t numRuns = std::strtoll(text.c_str(), nullptr, 10);
  while (pos != std::string::npos && pos + 1 < text.size()) {
    size_t end = text.find('\n', pos + 1);
    std::string line = text.substr(pos + 1, end - pos - 1);
    pos = end;
    size_t t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    if (t1 == std::string::npos || t2 == std::string::npos)
      continue;
    rows.emplace_back(std::strtod(line.c_str() + t1 + 1, nullptr),
                      std::strtoll(line.c_str(), nullptr, 10),
                      line.substr(t2 + 1));
  }
  std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return std::get<0>(a) > std::get<0>(b);
  });
  std::lock_guard<std::mutex> lock(model->profileMutex);
  model->profileNames.clear();
  for (const auto &r : rows)
    model->profileNames.push_back(std::get<2>(r));
  for (size_t i = 0; i < rows.size() && i < capacity; ++i)
    out[i] = {model->profileNames[i].c_str(), std::get<1>(rows[i]),
              std::get<0>(rows[i])};
  if (count)
    *count = rows.size();
  if (runs)
    *runs = numRuns;
  return MCC_OK;
}
