//===- CudaRuntimeShim.cpp - the GPU runtime inside every CUDA model .so --===//
//
// MLIR's gpu-to-llvm lowering calls mgpu* functions (the ABI of MLIR's own
// CudaRuntimeWrappers). This file implements them on the CUDA driver API,
// which it opens with dlopen at first use: a model .so links no CUDA
// library, builds on a machine without a driver, and says clearly when it
// runs on one without. It also provides mcc_cuda_run, the run entry the
// generated code calls: weights uploaded once, inputs staged per run, one
// stream per run, outputs copied back.
//
//===----------------------------------------------------------------------===//

#include <cublasLt.h>
#include <cuda.h>

#include <dlfcn.h>
#include <glob.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#define SHIM_HIDDEN extern "C" __attribute__((visibility("hidden")))
#define SHIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

thread_local std::string lastError;
thread_local CUstream runStream = nullptr;
thread_local bool runFailed = false;

struct Driver {
  bool loaded = false;
  std::string error;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **,
                             void **);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemAllocAsync)(CUdeviceptr *, size_t, CUstream);
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);
  CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuStreamBeginCapture)(CUstream, CUstreamCaptureMode);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph,
                                          unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphDestroy)(CUgraph);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuStreamIsCapturing)(CUstream, CUstreamCaptureStatus *);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuPointerGetAttribute)(void *, CUpointer_attribute, CUdeviceptr);
  /// Optional (12.x drivers have it): events inside a captured graph, for
  /// the per-kernel profile; without it a profiled run launches directly.
  CUresult (*cuEventRecordWithFlags)(CUevent, CUstream, unsigned) = nullptr;
  CUcontext context = nullptr;
};

// The model's GPU modules are loaded by a global constructor that may run
// before this file's static initializers, so all state here is created on
// first use.
Driver &theDriver() {
  static Driver d;
  return d;
}
#define driver theDriver()

template <typename F> bool bind(void *lib, const char *name, F &fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

void loadDriver() {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    driver.error = "cannot load the CUDA driver (libcuda.so.1): ";
    driver.error += dlerror();
    return;
  }
  Driver &d = theDriver();
  bool ok =
      bind(lib, "cuInit", d.cuInit) &&
      bind(lib, "cuDeviceGet", d.cuDeviceGet) &&
      bind(lib, "cuDeviceGetAttribute", d.cuDeviceGetAttribute) &&
      bind(lib, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain) &&
      bind(lib, "cuCtxSetCurrent", d.cuCtxSetCurrent) &&
      bind(lib, "cuModuleLoadData", d.cuModuleLoadData) &&
      bind(lib, "cuModuleUnload", d.cuModuleUnload) &&
      bind(lib, "cuModuleGetFunction", d.cuModuleGetFunction) &&
      bind(lib, "cuLaunchKernel", d.cuLaunchKernel) &&
      bind(lib, "cuStreamCreate", d.cuStreamCreate) &&
      bind(lib, "cuStreamDestroy_v2", d.cuStreamDestroy) &&
      bind(lib, "cuStreamSynchronize", d.cuStreamSynchronize) &&
      bind(lib, "cuMemAlloc_v2", d.cuMemAlloc) &&
      bind(lib, "cuMemFree_v2", d.cuMemFree) &&
      bind(lib, "cuMemAllocAsync", d.cuMemAllocAsync) &&
      bind(lib, "cuMemFreeAsync", d.cuMemFreeAsync) &&
      bind(lib, "cuMemcpyAsync", d.cuMemcpyAsync) &&
      bind(lib, "cuMemcpyHtoDAsync_v2", d.cuMemcpyHtoDAsync) &&
      bind(lib, "cuMemcpyDtoHAsync_v2", d.cuMemcpyDtoHAsync) &&
      bind(lib, "cuMemsetD32Async", d.cuMemsetD32Async) &&
      bind(lib, "cuGetErrorString", d.cuGetErrorString) &&
      bind(lib, "cuStreamBeginCapture_v2", d.cuStreamBeginCapture) &&
      bind(lib, "cuStreamEndCapture", d.cuStreamEndCapture) &&
      bind(lib, "cuGraphInstantiateWithFlags", d.cuGraphInstantiateWithFlags) &&
      bind(lib, "cuGraphLaunch", d.cuGraphLaunch) &&
      bind(lib, "cuGraphDestroy", d.cuGraphDestroy) &&
      bind(lib, "cuGraphExecDestroy", d.cuGraphExecDestroy) &&
      bind(lib, "cuStreamIsCapturing", d.cuStreamIsCapturing) &&
      bind(lib, "cuEventCreate", d.cuEventCreate) &&
      bind(lib, "cuEventDestroy_v2", d.cuEventDestroy) &&
      bind(lib, "cuEventRecord", d.cuEventRecord) &&
      bind(lib, "cuEventSynchronize", d.cuEventSynchronize) &&
      // The _v2 entry needs a 12.8+ driver; timing needs nothing it adds.
      bind(lib, "cuEventElapsedTime", d.cuEventElapsedTime) &&
      bind(lib, "cuStreamWaitEvent", d.cuStreamWaitEvent) &&
      bind(lib, "cuPointerGetAttribute", d.cuPointerGetAttribute);
  if (!ok) {
    driver.error = "the CUDA driver lacks a required entry point";
    return;
  }
  bind(lib, "cuEventRecordWithFlags", d.cuEventRecordWithFlags);
  CUresult r = d.cuInit(0);
  CUdevice dev;
  if (r == CUDA_SUCCESS)
    r = d.cuDeviceGet(&dev, 0);
  if (r == CUDA_SUCCESS)
    r = d.cuDevicePrimaryCtxRetain(&d.context, dev);
  if (r != CUDA_SUCCESS) {
    const char *s = nullptr;
    d.cuGetErrorString(r, &s);
    driver.error =
        std::string("CUDA initialization failed: ") + (s ? s : "unknown error");
    return;
  }
  d.loaded = true;
}

bool ready() {
  static std::once_flag once;
  std::call_once(once, loadDriver);
  if (!driver.loaded) {
    lastError = driver.error;
    runFailed = true;
    return false;
  }
  driver.cuCtxSetCurrent(driver.context);
  return true;
}

bool check(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS)
    return true;
  const char *s = nullptr;
  driver.cuGetErrorString(r, &s);
  if (!runFailed) // keep the first error of a run
    lastError = std::string(what) + ": " + (s ? s : "unknown CUDA error");
  runFailed = true;
  return false;
}

// GPU modules load in a global constructor at dlopen: a failure there (no
// driver, code for another architecture) must fail every later run.
std::string &moduleLoadError() {
  static std::string e;
  return e;
}

struct Weights {
  const void *host = nullptr;
  CUdeviceptr device = 0;
};
std::mutex &weightsMutex() {
  static std::mutex m;
  return m;
}
std::vector<Weights> &uploaded() {
  static std::vector<Weights> u;
  return u;
}

/// The driver's name for each kernel the model loaded, for the profile.
std::mutex &kernelNamesMutex() {
  static std::mutex m;
  return m;
}
std::map<CUfunction, std::string> &kernelNames() {
  static std::map<CUfunction, std::string> n;
  return n;
}

//===--- Per-kernel profile (mcc bench --kernels)
//--------------------------===//
//
// While profiling is on, every launch the run makes (a generated kernel, a
// product with whatever split or bias kernels it needs, a copy) is preceded
// by an event on the run's stream, and one event closes the run: a segment
// is the time from its event to the next. In a captured run the events are
// graph nodes (CU_EVENT_RECORD_EXTERNAL), so the profile times the same
// graph replay an unprofiled run makes, plus one event node per launch.

/// One segment of a run: the event recorded before it, and what it runs.
struct Mark {
  CUevent event = nullptr;
  std::string label;
};

/// The events of one way of running a shape (its graph, or direct launches),
/// reused run after run.
struct Marks {
  std::vector<Mark> marks;
  size_t used = 0;
};

struct Profile {
  std::mutex mutex;
  bool on = false;
  /// Bumped at each switch: graphs captured the other way are recaptured.
  unsigned generation = 0;
  int64_t runs = 0;
  /// label -> (launches, milliseconds), summed over the profiled runs.
  std::map<std::string, std::pair<int64_t, double>> totals;
};
Profile &profile() {
  static Profile p;
  return p;
}

/// Set while a profiled run records its launches (direct or captured).
thread_local Marks *runMarks = nullptr;

bool profiling() {
  std::lock_guard<std::mutex> lock(profile().mutex);
  return profile().on;
}

/// Records the event that starts the segment `label` on the run's stream.
void mark(const std::string &label) {
  if (!runMarks)
    return;
  Marks &m = *runMarks;
  if (m.used == m.marks.size()) {
    Mark fresh;
    if (driver.cuEventCreate(&fresh.event, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
      return;
    m.marks.push_back(fresh);
  }
  Mark &next = m.marks[m.used];
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  driver.cuStreamIsCapturing(runStream, &status);
  CUresult r =
      status == CU_STREAM_CAPTURE_STATUS_NONE
          ? driver.cuEventRecord(next.event, runStream)
          : driver.cuEventRecordWithFlags(next.event, runStream,
                                          CU_EVENT_RECORD_EXTERNAL);
  if (r == CUDA_SUCCESS) {
    next.label = label;
    ++m.used;
  }
}

void releaseMarks(Marks &m) {
  for (Mark &k : m.marks)
    driver.cuEventDestroy(k.event);
  m.marks.clear();
  m.used = 0;
}

/// Adds a finished run's segments (the last one ends at `end`).
void addToProfile(const Marks &m, CUevent end) {
  std::vector<float> ms(m.used, 0.0f);
  for (size_t i = 0; i < m.used; ++i)
    driver.cuEventElapsedTime(&ms[i], m.marks[i].event,
                              i + 1 < m.used ? m.marks[i + 1].event : end);
  std::lock_guard<std::mutex> lock(profile().mutex);
  if (!profile().on)
    return;
  ++profile().runs;
  for (size_t i = 0; i < m.used; ++i) {
    auto &t = profile().totals[m.marks[i].label];
    ++t.first;
    t.second += ms[i];
  }
}

} // namespace

//===--- MLIR gpu-to-llvm ABI
//----------------------------------------------===//

SHIM_HIDDEN void *mgpuModuleLoad(void *data, size_t) {
  if (!ready()) {
    moduleLoadError() = lastError;
    return nullptr;
  }
  CUmodule module = nullptr;
  CUresult r = driver.cuModuleLoadData(&module, data);
  if (r != CUDA_SUCCESS && moduleLoadError().empty()) {
    CUdevice dev;
    int major = 0, minor = 0;
    driver.cuDeviceGet(&dev, 0);
    driver.cuDeviceGetAttribute(
        &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    driver.cuDeviceGetAttribute(
        &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    const char *s = nullptr;
    driver.cuGetErrorString(r, &s);
    moduleLoadError() =
        std::string("cannot load the model's GPU code on this GPU (sm_") +
        std::to_string(major * 10 + minor) + "): " + (s ? s : "unknown error") +
        "; recompile with --gpu-arch for this GPU";
  }
  return module;
}

SHIM_HIDDEN void mgpuModuleUnload(void *module) {
  if (module && driver.loaded)
    driver.cuModuleUnload(static_cast<CUmodule>(module));
}

SHIM_HIDDEN void *mgpuModuleGetFunction(void *module, const char *name) {
  if (!module || !ready())
    return nullptr;
  CUfunction fn = nullptr;
  if (check(driver.cuModuleGetFunction(&fn, static_cast<CUmodule>(module),
                                       name),
            "finding a kernel")) {
    std::lock_guard<std::mutex> lock(kernelNamesMutex());
    kernelNames()[fn] = name;
  }
  return fn;
}

// Every launch of a run goes to the run's stream, in order: creating,
// synchronizing and destroying per launch (what the lowering asks for)
// would only add gaps.
SHIM_HIDDEN void *mgpuStreamCreate() { return runStream; }
SHIM_HIDDEN void mgpuStreamDestroy(void *) {}
SHIM_HIDDEN void mgpuStreamSynchronize(void *) {}

SHIM_HIDDEN void mgpuLaunchKernel(void *function, intptr_t gridX,
                                  intptr_t gridY, intptr_t gridZ,
                                  intptr_t blockX, intptr_t blockY,
                                  intptr_t blockZ, int32_t smem, void *stream,
                                  void **params, void **extra, size_t) {
  if (runFailed)
    return;
  // A grid over an empty dynamic extent (an empty slice) has no work; the
  // driver would refuse its zero size.
  if (gridX == 0 || gridY == 0 || gridZ == 0)
    return;
  if (!function) {
    lastError = "a kernel of this model was not loaded";
    runFailed = true;
    return;
  }
  if (runMarks) {
    std::lock_guard<std::mutex> lock(kernelNamesMutex());
    mark(kernelNames()[static_cast<CUfunction>(function)]);
  }
  check(driver.cuLaunchKernel(static_cast<CUfunction>(function), gridX, gridY,
                              gridZ, blockX, blockY, blockZ, smem,
                              static_cast<CUstream>(stream), params, extra),
        "launching a kernel");
}

// Intermediate buffers come from the stream-ordered allocator: allocation
// and release are ordered with the kernels, with no synchronization.
SHIM_HIDDEN void *mgpuMemAlloc(uint64_t bytes, void *stream, bool) {
  if (runFailed || !ready())
    return nullptr;
  CUdeviceptr p = 0;
  check(driver.cuMemAllocAsync(&p, bytes ? bytes : 1,
                               static_cast<CUstream>(stream)),
        "allocating device memory");
  return reinterpret_cast<void *>(p);
}

SHIM_HIDDEN void mgpuMemFree(void *ptr, void *stream) {
  if (!ptr || !driver.loaded)
    return;
  driver.cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(ptr),
                        static_cast<CUstream>(stream));
}

// The async lowering orders work between "streams" with events; all of a
// run's streams are the one run stream, already in order.
SHIM_HIDDEN void *mgpuEventCreate() {
  static int token;
  return &token;
}
SHIM_HIDDEN void mgpuEventDestroy(void *) {}
SHIM_HIDDEN void mgpuEventSynchronize(void *) {}
SHIM_HIDDEN void mgpuEventRecord(void *, void *) {}
SHIM_HIDDEN void mgpuStreamWaitEvent(void *, void *) {}

SHIM_HIDDEN void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  if (runFailed)
    return;
  mark("copy (device to device)");
  check(driver.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                             reinterpret_cast<CUdeviceptr>(src), bytes,
                             static_cast<CUstream>(stream)),
        "copying on the device");
}

SHIM_HIDDEN void mgpuMemset32(void *dst, unsigned value, size_t count,
                              void *stream) {
  if (runFailed)
    return;
  mark("fill (memset)");
  check(driver.cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                count, static_cast<CUstream>(stream)),
        "filling device memory");
}

//===--- cuBLAS
//-------------------------------------------------------------===//
//
// Found at run time: $MCC_CUDA_LIBRARY_PATH (colon-separated folders), the
// loader path, the CUDA toolkit, then the nvidia-cublas wheel of a Python
// environment (where PyTorch keeps its copy).

namespace {

using BlasHandle = void *;
struct Blas {
  bool loaded = false;
  std::string error;
  int (*create)(BlasHandle *);
  int (*setStream)(BlasHandle, CUstream);
  int (*setMathMode)(BlasHandle, int);
  int (*sgemm)(BlasHandle, int, int, int, int, int, const float *,
               const float *, int, const float *, int, const float *, float *,
               int);
  int (*sgemmStridedBatched)(BlasHandle, int, int, int, int, int, const float *,
                             const float *, int, long long, const float *, int,
                             long long, const float *, float *, int, long long,
                             int);
};

Blas &theBlas() {
  static Blas b;
  return b;
}

void *openFirst(const std::vector<std::string> &candidates) {
  for (const std::string &c : candidates)
    if (void *h = dlopen(c.c_str(), RTLD_NOW | RTLD_GLOBAL))
      return h;
  return nullptr;
}

std::vector<std::string> libraryCandidates(const char *base) {
  std::vector<std::string> names = {std::string(base) + ".so.13",
                                    std::string(base) + ".so.12",
                                    std::string(base) + ".so"};
  std::vector<std::string> out;
  if (const char *env = std::getenv("MCC_CUDA_LIBRARY_PATH")) {
    std::string dirs = env;
    size_t start = 0;
    while (start <= dirs.size()) {
      size_t end = dirs.find(':', start);
      std::string dir = dirs.substr(start, end - start);
      if (!dir.empty())
        for (const auto &n : names)
          out.push_back(dir + "/" + n);
      if (end == std::string::npos)
        break;
      start = end + 1;
    }
  }
  for (const auto &n : names)
    out.push_back(n);
  for (const auto &n : names)
    out.push_back("/usr/local/cuda/lib64/" + n);
  const char *patterns[] = {
      "/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib",
      "/usr/local/lib/python3*/dist-packages/nvidia/*/lib",
      "/usr/local/lib/python3*/site-packages/nvidia/*/lib",
      "/usr/lib/python3/dist-packages/nvidia/*/lib"};
  for (const char *pattern : patterns) {
    glob_t g;
    if (glob(pattern, 0, nullptr, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i)
        for (const auto &n : names)
          out.push_back(std::string(g.gl_pathv[i]) + "/" + n);
    globfree(&g);
  }
  return out;
}

bool blasReady() {
  static std::once_flag once;
  std::call_once(once, [] {
    Blas &b = theBlas();
    void *lib = openFirst(libraryCandidates("libcublas"));
    if (!lib) {
      b.error = "cannot find cuBLAS (libcublas.so.13): set "
                "MCC_CUDA_LIBRARY_PATH to the folder that holds it (e.g. the "
                "nvidia/cu13/lib folder of a PyTorch environment)";
      return;
    }
    bool ok = bind(lib, "cublasCreate_v2", b.create) &&
              bind(lib, "cublasSetStream_v2", b.setStream) &&
              bind(lib, "cublasSetMathMode", b.setMathMode) &&
              bind(lib, "cublasSgemm_v2", b.sgemm) &&
              bind(lib, "cublasSgemmStridedBatched", b.sgemmStridedBatched);
    if (!ok) {
      b.error = "the cuBLAS library found lacks a required entry point";
      return;
    }
    b.loaded = true;
  });
  if (!theBlas().loaded) {
    if (!runFailed)
      lastError = theBlas().error;
    runFailed = true;
    return false;
  }
  return true;
}

/// One handle per thread, bound to the run's stream.
BlasHandle blasHandle() {
  thread_local BlasHandle handle = nullptr;
  if (!handle) {
    if (theBlas().create(&handle) != 0) {
      lastError = "cublasCreate failed";
      runFailed = true;
      return nullptr;
    }
    theBlas().setMathMode(handle, 0); // CUBLAS_DEFAULT_MATH: no TF32
  }
  theBlas().setStream(handle, runStream);
  return handle;
}

} // namespace

namespace {

//===--- cuBLASLt and the choice of GEMM algorithm ----------------------===//
//
// cuBLAS's sgemm takes the algorithm its heuristic picks for a shape. At
// fp32 (no TF32) on the H200 that choice leaves speed behind for some of
// the shapes these models use, and which candidate is fastest depends on
// the GPU, so it cannot be settled at compile time on a machine without
// one. Instead, the first time a GEMM shape runs (in the first, direct run
// of a model; never inside graph capture) the runtime times cuBLASLt's top
// heuristic candidates and plain sgemm on a scratch output, each inside a
// CUDA graph as the model will run it, and keeps the
// fastest for the process. MCC_CUDA_GEMM picks the policy: "tune" (the
// default), "heuristic" (cuBLASLt's first candidate, untimed) or "cublas"
// (sgemm only). MCC_CUDA_GEMM_VERBOSE=1 prints each choice to stderr.

struct BlasLt {
  bool loaded = false;
  cublasStatus_t (*create)(cublasLtHandle_t *);
  cublasStatus_t (*descCreate)(cublasLtMatmulDesc_t *, cublasComputeType_t,
                               cudaDataType_t);
  cublasStatus_t (*descSet)(cublasLtMatmulDesc_t,
                            cublasLtMatmulDescAttributes_t, const void *,
                            size_t);
  cublasStatus_t (*layoutCreate)(cublasLtMatrixLayout_t *, cudaDataType,
                                 uint64_t, uint64_t, int64_t);
  cublasStatus_t (*layoutSet)(cublasLtMatrixLayout_t,
                              cublasLtMatrixLayoutAttribute_t, const void *,
                              size_t);
  cublasStatus_t (*prefCreate)(cublasLtMatmulPreference_t *);
  cublasStatus_t (*prefDestroy)(cublasLtMatmulPreference_t);
  cublasStatus_t (*prefSet)(cublasLtMatmulPreference_t,
                            cublasLtMatmulPreferenceAttributes_t, const void *,
                            size_t);
  cublasStatus_t (*heuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t,
                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                              cublasLtMatmulPreference_t, int,
                              cublasLtMatmulHeuristicResult_t *, int *);
  cublasStatus_t (*matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t,
                           const void *, const void *, cublasLtMatrixLayout_t,
                           const void *, cublasLtMatrixLayout_t, const void *,
                           const void *, cublasLtMatrixLayout_t, void *,
                           cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *,
                           void *, size_t, cudaStream_t);
  // Optional (split-K variants are skipped without them).
  cublasStatus_t (*algoConfigSet)(cublasLtMatmulAlgo_t *,
                                  cublasLtMatmulAlgoConfigAttributes_t,
                                  const void *, size_t) = nullptr;
  cublasStatus_t (*algoCheck)(cublasLtHandle_t, cublasLtMatmulDesc_t,
                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                              const cublasLtMatmulAlgo_t *,
                              cublasLtMatmulHeuristicResult_t *) = nullptr;
  cublasStatus_t (*algoConfigGet)(const cublasLtMatmulAlgo_t *,
                                  cublasLtMatmulAlgoConfigAttributes_t, void *,
                                  size_t, size_t *) = nullptr;
};

BlasLt &theBlasLt() {
  static BlasLt b;
  return b;
}

enum class GemmPolicy { Tune, Heuristic, Cublas };

GemmPolicy gemmPolicy() {
  static GemmPolicy policy = [] {
    const char *v = std::getenv("MCC_CUDA_GEMM");
    std::string s = v ? v : "";
    if (s == "cublas")
      return GemmPolicy::Cublas;
    if (s == "heuristic")
      return GemmPolicy::Heuristic;
    return GemmPolicy::Tune;
  }();
  return policy;
}

bool gemmVerbose() {
  static bool verbose = [] {
    const char *v = std::getenv("MCC_CUDA_GEMM_VERBOSE");
    return v && std::string(v) == "1";
  }();
  return verbose;
}

/// cuBLASLt is optional: without it every GEMM goes to sgemm.
bool blasLtReady() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (gemmPolicy() == GemmPolicy::Cublas)
      return;
    BlasLt &b = theBlasLt();
    void *lib = openFirst(libraryCandidates("libcublasLt"));
    if (!lib)
      return;
    b.loaded = bind(lib, "cublasLtCreate", b.create) &&
               bind(lib, "cublasLtMatmulDescCreate", b.descCreate) &&
               bind(lib, "cublasLtMatmulDescSetAttribute", b.descSet) &&
               bind(lib, "cublasLtMatrixLayoutCreate", b.layoutCreate) &&
               bind(lib, "cublasLtMatrixLayoutSetAttribute", b.layoutSet) &&
               bind(lib, "cublasLtMatmulPreferenceCreate", b.prefCreate) &&
               bind(lib, "cublasLtMatmulPreferenceDestroy", b.prefDestroy) &&
               bind(lib, "cublasLtMatmulPreferenceSetAttribute", b.prefSet) &&
               bind(lib, "cublasLtMatmulAlgoGetHeuristic", b.heuristic) &&
               bind(lib, "cublasLtMatmul", b.matmul);
    if (b.loaded && !(bind(lib, "cublasLtMatmulAlgoConfigSetAttribute",
                           b.algoConfigSet) &&
                      bind(lib, "cublasLtMatmulAlgoCheck", b.algoCheck) &&
                      bind(lib, "cublasLtMatmulAlgoConfigGetAttribute",
                           b.algoConfigGet)))
      b.algoConfigSet = nullptr;
  });
  return theBlasLt().loaded;
}

/// Workspace of the split-K and stream-K candidates, one per thread (a
/// thread runs one model at a time), allocated outside any capture.
constexpr size_t kLtWorkspaceBytes = size_t(32) << 20;

struct LtThread {
  cublasLtHandle_t handle = nullptr;
  CUdeviceptr workspace = 0;
  bool failed = false;
};

LtThread *ltThread() {
  thread_local LtThread t;
  if (t.failed)
    return nullptr;
  if (!t.handle) {
    if (theBlasLt().create(&t.handle) != CUBLAS_STATUS_SUCCESS ||
        driver.cuMemAlloc(&t.workspace, kLtWorkspaceBytes) != CUDA_SUCCESS) {
      t.failed = true;
      return nullptr;
    }
  }
  return &t;
}

/// A row-major C (m x n) = alpha A (m x k) * B (k x n) (+ beta C), `batch`
/// times at the given element strides. Column-major, as cuBLAS sees it,
/// this is C^T = B^T * A^T: B is the first operand. A transposed operand
/// is stored as its transpose (A: k x m, B: n x k, row-major, at its
/// leading dimension): attention's K^T read in place.
struct GemmShape {
  int64_t m, n, k, lda, ldb, ldc, batch, aBatch, bBatch, cBatch;
  bool accumulate;
  bool transA = false, transB = false;
  /// C += a bias vector along its rows (C[i, j] += bias[j]) after the
  /// product: cuBLASLt's bias epilogue, or a kernel after sgemm.
  bool bias = false;
  /// Then C = gelu(C), GELU's tanh form (GPT-2's): cuBLASLt's GELU_BIAS
  /// epilogue, or the bias kernel's GELU variant after sgemm.
  bool gelu = false;
  bool operator<(const GemmShape &o) const {
    return std::tie(m, n, k, lda, ldb, ldc, batch, aBatch, bBatch, cBatch,
                    accumulate, transA, transB, bias, gelu) <
           std::tie(o.m, o.n, o.k, o.lda, o.ldb, o.ldc, o.batch, o.aBatch,
                    o.bBatch, o.cBatch, o.accumulate, o.transA, o.transB,
                    o.bias, o.gelu);
  }
};

/// What runs one GEMM shape: sgemm, cuBLASLt with a fixed algorithm on the
/// operands as they are (fp32 or, at --precision tf32, TF32 compute), or
/// cuBLASLt's TF32 GEMM over tf32x3-split operands (see Tf32x3Split.cu).
/// One cuBLASLt call: its problem and algorithm.
struct LtCall {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t aLayout = nullptr, bLayout = nullptr,
                         cLayout = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  /// With the bias epilogue: the bias pointer is set on `desc` per call.
  bool bias = false;
};

struct GemmPlan {
  enum Kind { Sgemm, Lt, Split } kind = Sgemm;
  /// Lt: the product. Split: hi(A) hi(B) (reduction k).
  LtCall main;
  /// Split only: lo(A) hi(B) + hi(A) lo(B) (reduction 2k), run first.
  LtCall rest;
};

std::mutex &plansMutex() {
  static std::mutex m;
  return m;
}

std::map<GemmShape, GemmPlan> &plans() {
  static std::map<GemmShape, GemmPlan> p;
  return p;
}

bool capturing() {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  driver.cuStreamIsCapturing(runStream, &status);
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

//===--- Precision
//----------------------------------------------------------===//
//
// `mcc compile --precision` writes the string mcc_precision into the model;
// MCC_CUDA_PRECISION overrides it at run time (to compare on one .so).
//   fp32   (default) every product in fp32 on the CUDA cores;
//   tf32x3 fp32-accurate products on the TF32 tensor cores, three TF32
//          products per fp32 one, where timing finds that faster per shape;
//   tf32   one TF32 product (10-bit mantissa inputs): fastest, ~1e-3.

enum class Precision { Fp32, Tf32x3, Tf32 };

} // namespace

// The model exports mcc_precision (for mcc_model_precision) and defines
// the same bytes as the hidden mcc_precision_local, which the shim reads:
// a hidden reference binds to this library's own definition at link time.
// Through the exported name it went through the GOT, and a model linked
// into the program (or loaded RTLD_GLOBAL) first would have decided this
// one's precision. Weak so that the shim links without it.
extern "C" __attribute__((weak, visibility("hidden"))) const char
    mcc_precision_local[];

namespace {

Precision precision() {
  static Precision p = [] {
    const char *env = std::getenv("MCC_CUDA_PRECISION");
    std::string s =
        env && *env ? env : (mcc_precision_local ? mcc_precision_local : "");
    if (s == "tf32x3")
      return Precision::Tf32x3;
    if (s == "tf32")
      return Precision::Tf32;
    return Precision::Fp32;
  }();
  return p;
}

//===--- tf32x3 operand splitting
//------------------------------------------===//

} // namespace

// The split kernel, built by nvcc from Tf32x3Split.cu (sm_80, sm_90 and
// compute_90 PTX).
__asm__(".pushsection .rodata.mcc_tf32x3_split, \"a\"\n"
        ".balign 64\n"
        ".globl mcc_tf32x3_split_fatbin\n"
        ".hidden mcc_tf32x3_split_fatbin\n"
        "mcc_tf32x3_split_fatbin:\n"
        ".incbin \"" MCC_TF32X3_SPLIT_FATBIN "\"\n"
        ".popsection\n");
extern "C" __attribute__((visibility("hidden"))) const char
    mcc_tf32x3_split_fatbin[];

namespace {

/// A kernel of the shim's fatbin, loaded on first use (null if it cannot).
CUfunction shimKernel(const char *name) {
  static CUmodule module = [] {
    CUmodule m = nullptr;
    return driver.cuModuleLoadData(&m, mcc_tf32x3_split_fatbin) ==
                   CUDA_SUCCESS
               ? m
               : nullptr;
  }();
  CUfunction f = nullptr;
  if (!module || driver.cuModuleGetFunction(&f, module, name) != CUDA_SUCCESS)
    return nullptr;
  return f;
}

CUfunction splitKernel() {
  static CUfunction fn = shimKernel("mcc_tf32x3_split");
  return fn;
}

/// C[r, :] += bias for every row of a product's m x n output (then
/// C = gelu(C) with `gelu`).
int launchAddBias(int64_t m, int64_t n, int64_t ldc, float *c,
                  const float *bias, bool gelu) {
  static CUfunction plain = shimKernel("mcc_add_bias_rows");
  static CUfunction withGelu = shimKernel("mcc_add_bias_gelu_rows");
  CUfunction fn = gelu ? withGelu : plain;
  if (!fn)
    return -1;
  void *params[] = {&c, &n, &ldc, &bias};
  unsigned threads = n >= 256 ? 256 : unsigned((n + 31) / 32 * 32);
  return driver.cuLaunchKernel(fn, unsigned(m), 1, 1, threads, 1, 1, 0,
                               runStream, params, nullptr) == CUDA_SUCCESS
             ? 0
             : -1;
}

/// The device weights of the run in progress: operands inside them are
/// constant, so their split copies are made once and kept.
thread_local CUdeviceptr runWeights = 0;
thread_local int64_t runWeightBytes = 0;

/// One operand as the split sees it: `batches` matrices of rows x cols at
/// the given strides, and where its two parts go in the doubled operand.
struct SplitOperand {
  const float *src;
  int64_t rows, cols, rowStride, batchStride, batches;
  int64_t dstRow, dstBatch, hi, lo;
  int64_t elements() const { return batches * dstBatch; }
  int64_t extent() const { // elements spanned in the source
    return (batches - 1) * batchStride + (rows - 1) * rowStride + cols;
  }
};

/// A' = [lo(A) | hi(A)], row-major m x 2k; stored transposed (2k x m,
/// [lo; hi]) when A is.
SplitOperand splitA(const GemmShape &s, const float *a) {
  int64_t batches = s.aBatch == 0 ? 1 : s.batch;
  if (s.transA)
    return {a, s.k, s.m, s.lda, s.aBatch, batches, s.m, 2 * s.k * s.m,
            s.k * s.m, 0};
  return {a, s.m, s.k, s.lda, s.aBatch, batches, 2 * s.k, 2 * s.k * s.m,
          s.k, 0};
}

/// B' = [hi(B); lo(B)], row-major 2k x n; stored transposed (n x 2k,
/// [hi | lo]) when B is.
SplitOperand splitB(const GemmShape &s, const float *b) {
  int64_t batches = s.bBatch == 0 ? 1 : s.batch;
  if (s.transB)
    return {b, s.n, s.k, s.ldb, s.bBatch, batches, 2 * s.k, 2 * s.k * s.n, 0,
            s.k};
  return {b, s.k, s.n, s.ldb, s.bBatch, batches, s.n,
          2 * s.k * s.n, 0, s.k * s.n};
}

/// Where hi(A) starts in A' (the main product's A).
int64_t hiOffsetA(const GemmShape &s) { return s.transA ? s.k * s.m : s.k; }

int launchSplit(const SplitOperand &o, CUdeviceptr dst) {
  CUfunction fn = splitKernel();
  if (!fn)
    return -1;
  const float *src = o.src;
  void *out = reinterpret_cast<void *>(dst);
  int64_t rows = o.rows, cols = o.cols, rowStride = o.rowStride,
          batchStride = o.batchStride, dstRow = o.dstRow,
          dstBatch = o.dstBatch, hi = o.hi, lo = o.lo;
  void *params[] = {&src,    &rows,     &cols, &rowStride, &batchStride,
                    &out,    &dstRow,   &dstBatch, &hi,   &lo};
  unsigned threads = cols >= 256 ? 256 : unsigned((cols + 31) / 32 * 32);
  return driver.cuLaunchKernel(fn, unsigned(o.batches * o.rows), 1, 1, threads,
                               1, 1, 0, runStream, params, nullptr) ==
                 CUDA_SUCCESS
             ? 0
             : -1;
}

bool insideWeights(const SplitOperand &o) {
  auto p = reinterpret_cast<CUdeviceptr>(o.src);
  return runWeights && p >= runWeights &&
         p + o.extent() * sizeof(float) <=
             runWeights + static_cast<CUdeviceptr>(runWeightBytes);
}

/// Split copies of constant operands, made outside capture and kept for the
/// process (2x the bytes of each weight matrix used in a product).
using SplitKey = std::tuple<const float *, int64_t, int64_t, int64_t, int64_t,
                            int64_t, int64_t, int64_t>;
std::map<SplitKey, CUdeviceptr> &splitCache() {
  static std::map<SplitKey, CUdeviceptr> c;
  return c;
}

/// The split copy of an operand: a kept one for weights, else a
/// stream-ordered temporary the caller frees (`temporary` set).
int splitOperand(const SplitOperand &o, CUdeviceptr &out, bool &temporary) {
  temporary = false;
  size_t bytes = size_t(o.elements()) * sizeof(float);
  if (insideWeights(o)) {
    SplitKey key{o.src, o.rows, o.cols, o.rowStride, o.batchStride,
                 o.batches, o.dstRow, o.lo};
    std::lock_guard<std::mutex> lock(plansMutex());
    auto it = splitCache().find(key);
    if (it != splitCache().end()) {
      out = it->second;
      return 0;
    }
    // No room to keep it: split per call, as for activations.
    if (!capturing() && driver.cuMemAlloc(&out, bytes) == CUDA_SUCCESS) {
      if (launchSplit(o, out) != 0) {
        driver.cuMemFree(out);
        return -1;
      }
      splitCache().emplace(key, out);
      return 0;
    }
  }
  if (driver.cuMemAllocAsync(&out, bytes, runStream) != CUDA_SUCCESS)
    return -1;
  temporary = true;
  return launchSplit(o, out);
}

//===--- Running a plan
//-----------------------------------------------------===//

int runSgemm(const GemmShape &s, float alpha, const float *a, const float *b,
             float *c, const float *bias) {
  BlasHandle h = blasHandle();
  if (!h)
    return -1;
  const float beta = s.accumulate ? 1.0f : 0.0f;
  const int opB = s.transB ? 1 : 0, opA = s.transA ? 1 : 0; // CUBLAS_OP_T: 1
  int rc =
      s.batch == 1
          ? theBlas().sgemm(h, opB, opA, s.n, s.m, s.k, &alpha, b, s.ldb, a,
                            s.lda, &beta, c, s.ldc)
          : theBlas().sgemmStridedBatched(h, opB, opA, s.n, s.m, s.k, &alpha,
                                          b, s.ldb, s.bBatch, a, s.lda,
                                          s.aBatch, &beta, c, s.ldc, s.cBatch,
                                          s.batch);
  if (rc == 0 && s.bias)
    rc = launchAddBias(s.m, s.n, s.ldc, c, bias, s.gelu);
  return rc;
}

/// Guards the bias pointer of a shared descriptor from its set to its use.
std::mutex &biasMutex() {
  static std::mutex m;
  return m;
}

int runLt(const LtCall &call, LtThread &t, float alpha, const float *a,
          const float *b, float *c, bool accumulate,
          const float *bias = nullptr) {
  const float beta = accumulate ? 1.0f : 0.0f;
  std::unique_lock<std::mutex> lock(biasMutex(), std::defer_lock);
  if (call.bias) {
    lock.lock();
    if (theBlasLt().descSet(call.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                            &bias, sizeof(bias)) != CUBLAS_STATUS_SUCCESS)
      return -1;
  }
  return theBlasLt().matmul(
      t.handle, call.desc, &alpha, b, call.bLayout, a, call.aLayout, &beta, c,
      call.cLayout, c, call.cLayout, &call.algo,
      reinterpret_cast<void *>(t.workspace), call.workspace,
      reinterpret_cast<cudaStream_t>(runStream));
}

/// The two products over split operands A' = [lo | hi], B' = [hi; lo]:
/// first A' B' = lo(A) hi(B) + hi(A) lo(B) (reduction 2k), then hi(A) hi(B)
/// (columns k..2k of A', rows 0..k of B') accumulated onto it. Not one call
/// over a tripled reduction: the tensor cores accumulate with truncation,
/// and the dominant term summed alone over k (not 3k) keeps bert-base b16
/// within 1e-4.
int runSplitProducts(const GemmShape &s, const GemmPlan &p, LtThread &t,
                     float alpha, CUdeviceptr a3, CUdeviceptr b3, float *c,
                     const float *bias) {
  auto *a = reinterpret_cast<const float *>(a3);
  auto *b = reinterpret_cast<const float *>(b3);
  int rc = runLt(p.rest, t, alpha, a, b, c, s.accumulate);
  return rc ? rc
            : runLt(p.main, t, alpha, a + hiOffsetA(s), b, c,
                    /*accumulate=*/true, bias);
}

int runSplit(const GemmShape &s, const GemmPlan &p, LtThread &t, float alpha,
             const float *a, const float *b, float *c, const float *bias) {
  CUdeviceptr a3 = 0, b3 = 0;
  bool aTemp = false, bTemp = false;
  int rc = splitOperand(splitA(s, a), a3, aTemp);
  if (rc == 0)
    rc = splitOperand(splitB(s, b), b3, bTemp);
  if (rc == 0)
    rc = runSplitProducts(s, p, t, alpha, a3, b3, c, bias);
  if (aTemp)
    driver.cuMemFreeAsync(a3, runStream);
  if (bTemp)
    driver.cuMemFreeAsync(b3, runStream);
  return rc;
}

int runPlan(const GemmShape &s, const GemmPlan &p, LtThread *t, float alpha,
            const float *a, const float *b, float *c, const float *bias) {
  if (p.kind == GemmPlan::Sgemm || !t)
    return runSgemm(s, alpha, a, b, c, bias);
  if (p.kind == GemmPlan::Split)
    return runSplit(s, p, *t, alpha, a, b, c, bias);
  return runLt(p.main, *t, alpha, a, b, c, s.accumulate, bias);
}

/// A candidate's time per call in milliseconds (infinity if it fails),
/// measured the way the model runs it: inside a CUDA graph, so that a
/// small GEMM is judged by its GPU time rather than its launch cost. The
/// best of three replays of eight back-to-back calls, after a warm-up call
/// outside the graph (which also loads the candidate's kernel).
template <typename F> float timeCandidate(F &&launch) {
  constexpr int kCalls = 8;
  float best = 1e30f;
  if (launch() != 0 ||
      driver.cuStreamSynchronize(runStream) != CUDA_SUCCESS)
    return best;
  if (driver.cuStreamBeginCapture(runStream,
                                  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) !=
      CUDA_SUCCESS)
    return best;
  int rc = 0;
  for (int i = 0; i < kCalls; ++i)
    rc |= launch();
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  bool ok = driver.cuStreamEndCapture(runStream, &graph) == CUDA_SUCCESS &&
            graph && rc == 0 &&
            driver.cuGraphInstantiateWithFlags(&exec, graph, 0) ==
                CUDA_SUCCESS;
  CUevent start = nullptr, stop = nullptr;
  ok = ok && driver.cuEventCreate(&start, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
       driver.cuEventCreate(&stop, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
       driver.cuGraphLaunch(exec, runStream) == CUDA_SUCCESS;
  for (int rep = 0; ok && rep < 3; ++rep) {
    float ms = 0;
    ok = driver.cuEventRecord(start, runStream) == CUDA_SUCCESS &&
         driver.cuGraphLaunch(exec, runStream) == CUDA_SUCCESS &&
         driver.cuEventRecord(stop, runStream) == CUDA_SUCCESS &&
         driver.cuEventSynchronize(stop) == CUDA_SUCCESS &&
         driver.cuEventElapsedTime(&ms, start, stop) == CUDA_SUCCESS;
    if (ok)
      best = std::min(best, ms / kCalls);
  }
  driver.cuStreamSynchronize(runStream);
  if (start)
    driver.cuEventDestroy(start);
  if (stop)
    driver.cuEventDestroy(stop);
  if (exec)
    driver.cuGraphExecDestroy(exec);
  if (graph)
    driver.cuGraphDestroy(graph);
  return ok ? best : 1e30f;
}

//===--- Choosing a plan
//----------------------------------------------------===//

constexpr int kCandidates = 16;

/// Which product of a shape ltProblem describes.
enum class Part {
  Whole, // the operands as they are (reduction k)
  Hi,    // hi(A) hi(B) in the split operands (reduction k)
  Rest   // lo(A) hi(B) + hi(A) lo(B) in the split operands (reduction 2k)
};

/// Split-K variants of the heuristic's first algorithms. At a transformer's
/// 128 tokens an output of 128 x 768 is a handful of tiles on the H200's 132
/// SMs, and the heuristic rarely offers a split of the reduction itself;
/// cutting it into 2-8 slices (reduced in fp32 through the workspace) fills
/// the GPU. Timing decides, as for every other candidate.
void addSplitK(LtThread &t, const LtCall &call, int64_t k,
               std::vector<cublasLtMatmulHeuristicResult_t> &found) {
  BlasLt &lt = theBlasLt();
  if (!lt.algoConfigSet || found.empty())
    return;
  constexpr size_t kBases = 3;
  constexpr int64_t kMinSlice = 128;
  size_t bases = std::min(found.size(), kBases);
  for (size_t i = 0; i < bases; ++i) {
    for (int32_t splits : {2, 3, 4, 6, 8}) {
      if (k / splits < kMinSlice)
        break;
      cublasLtMatmulAlgo_t algo = found[i].algo;
      uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      cublasLtMatmulHeuristicResult_t r{};
      if (lt.algoConfigSet(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                           sizeof(splits)) != CUBLAS_STATUS_SUCCESS ||
          lt.algoConfigSet(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                           &scheme, sizeof(scheme)) != CUBLAS_STATUS_SUCCESS ||
          lt.algoCheck(t.handle, call.desc, call.bLayout, call.aLayout,
                       call.cLayout, call.cLayout, &algo,
                       &r) != CUBLAS_STATUS_SUCCESS ||
          r.state != CUBLAS_STATUS_SUCCESS ||
          r.workspaceSize > kLtWorkspaceBytes)
        continue;
      r.algo = algo;
      found.push_back(r);
    }
  }
}

/// cuBLASLt's problem for one product of a shape and up to kCandidates
/// algorithms for it, plus their split-K variants; false if it offers none.
bool ltProblem(const GemmShape &s, LtThread &t, cublasComputeType_t compute,
               Part part, LtCall &call,
               std::vector<cublasLtMatmulHeuristicResult_t> &found) {
  BlasLt &lt = theBlasLt();
  bool split = part != Part::Whole;
  int64_t k = part == Part::Rest ? 2 * s.k : s.k;
  // Split operands: A' is m x 2k (2k x m transposed), B' 2k x n (n x 2k).
  int64_t ldb = !split ? s.ldb : s.transB ? 2 * s.k : s.n;
  int64_t lda = !split ? s.lda : s.transA ? s.m : 2 * s.k;
  int64_t bBatch = split && s.bBatch ? 2 * s.k * s.n : s.bBatch;
  int64_t aBatch = split && s.aBatch ? 2 * s.k * s.m : s.aBatch;
  // Column-major layouts of the stored matrices; the ops transpose them.
  int32_t opB = s.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  int32_t opA = s.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  bool ok =
      lt.descCreate(&call.desc, compute, CUDA_R_32F) == 0 &&
      lt.descSet(call.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opB, sizeof(opB)) ==
          0 &&
      lt.descSet(call.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opA, sizeof(opA)) ==
          0 &&
      lt.layoutCreate(&call.bLayout, CUDA_R_32F, s.transB ? k : s.n,
                      s.transB ? s.n : k, ldb) == 0 &&
      lt.layoutCreate(&call.aLayout, CUDA_R_32F, s.transA ? s.m : k,
                      s.transA ? k : s.m, lda) == 0 &&
      lt.layoutCreate(&call.cLayout, CUDA_R_32F, s.n, s.m, s.ldc) == 0;
  // The bias goes with the product that runs last (the split's hi part).
  if (ok && s.bias && part != Part::Rest) {
    uint32_t epilogue =
        s.gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    ok = lt.descSet(call.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                    sizeof(epilogue)) == 0;
    call.bias = true;
  }
  if (ok && s.batch > 1) {
    int32_t count = static_cast<int32_t>(s.batch);
    auto batched = [&](cublasLtMatrixLayout_t l, int64_t stride) {
      return lt.layoutSet(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                          sizeof(count)) == 0 &&
             lt.layoutSet(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                          &stride, sizeof(stride)) == 0;
    };
    ok = batched(call.bLayout, bBatch) && batched(call.aLayout, aBatch) &&
         batched(call.cLayout, s.cBatch);
  }
  cublasLtMatmulPreference_t pref = nullptr;
  uint64_t maxWorkspace = kLtWorkspaceBytes;
  // A plan serves every call of its shape: ask only for algorithms that
  // work on 16-byte aligned operands (gemm() sends others to sgemm).
  uint32_t alignment = 16;
  ok = ok && lt.prefCreate(&pref) == 0 &&
       lt.prefSet(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                  &maxWorkspace, sizeof(maxWorkspace)) == 0;
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    ok = ok && lt.prefSet(pref, attr, &alignment, sizeof(alignment)) == 0;
  found.resize(kCandidates);
  int numFound = 0;
  ok = ok && lt.heuristic(t.handle, call.desc, call.bLayout, call.aLayout,
                          call.cLayout, call.cLayout, pref, kCandidates,
                          found.data(), &numFound) == 0;
  if (pref)
    lt.prefDestroy(pref);
  // (Descriptors of a refused shape are leaked: a handful of bytes, once.)
  found.resize(ok ? numFound : 0);
  found.erase(std::remove_if(found.begin(), found.end(),
                             [](const cublasLtMatmulHeuristicResult_t &r) {
                               return r.state != CUBLAS_STATUS_SUCCESS;
                             }),
              found.end());
  addSplitK(t, call, k, found);
  return !found.empty();
}

/// The reduction slices of a call's algorithm (1: no split-K), for
/// MCC_CUDA_GEMM_VERBOSE.
int splitsOf(const LtCall &call) {
  int32_t splits = 1;
  size_t written = 0;
  if (theBlasLt().algoConfigGet)
    theBlasLt().algoConfigGet(&call.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                              &splits, sizeof(splits), &written);
  return splits > 1 ? splits : 1;
}

LtCall withAlgo(LtCall call, const cublasLtMatmulHeuristicResult_t &r) {
  call.algo = r.algo;
  call.workspace = r.workspaceSize;
  return call;
}

const char *kindName(GemmPlan::Kind k) {
  return k == GemmPlan::Sgemm ? "sgemm"
         : k == GemmPlan::Lt  ? "cuBLASLt"
                              : "cuBLASLt tf32x3";
}

/// A product's name in the profile: what ran it, and its shape.
std::string gemmLabel(const GemmShape &s, const GemmPlan &p) {
  std::string l = std::string("gemm ") + kindName(p.kind) +
                  " m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) +
                  " k=" + std::to_string(s.k);
  if (s.batch > 1)
    l += " batch=" + std::to_string(s.batch);
  if (s.bias)
    l += " +bias";
  if (s.gelu)
    l += " +gelu";
  return l;
}

/// The plan for a shape: made (and, outside capture, timed) the first time.
/// Every candidate meets the model's precision: at fp32, sgemm and
/// cuBLASLt's fp32 algorithms; at tf32x3 also the split TF32 products; at
/// tf32, cuBLASLt's TF32 algorithms only.
GemmPlan planFor(const GemmShape &s, const float *a, const float *b,
                 const float *bias) {
  {
    std::lock_guard<std::mutex> lock(plansMutex());
    auto it = plans().find(s);
    if (it != plans().end())
      return it->second;
  }
  GemmPlan sgemm;
  LtThread *t = blasLtReady() ? ltThread() : nullptr;
  if (!t)
    return sgemm; // not cached: cuBLASLt may come later
  Precision p = precision();
  std::vector<cublasLtMatmulHeuristicResult_t> foundWhole, foundHi, foundRest;
  GemmPlan whole, split;
  whole.kind = GemmPlan::Lt;
  split.kind = GemmPlan::Split;
  bool haveWhole =
      ltProblem(s, *t,
                p == Precision::Tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                     : CUBLAS_COMPUTE_32F,
                Part::Whole, whole.main, foundWhole);
  bool haveSplit =
      p == Precision::Tf32x3 && splitKernel() &&
      ltProblem(s, *t, CUBLAS_COMPUTE_32F_FAST_TF32, Part::Hi, split.main,
                foundHi) &&
      ltProblem(s, *t, CUBLAS_COMPUTE_32F_FAST_TF32, Part::Rest, split.rest,
                foundRest);
  GemmPlan plan = sgemm;
  if (gemmPolicy() == GemmPolicy::Heuristic || capturing()) {
    if (haveSplit) {
      plan = split;
      plan.main = withAlgo(split.main, foundHi[0]);
      plan.rest = withAlgo(split.rest, foundRest[0]);
    } else if (haveWhole) {
      plan = whole;
      plan.main = withAlgo(whole.main, foundWhole[0]);
    }
  } else if (haveWhole || haveSplit) {
    // Time every candidate into a scratch output: the real one may be
    // accumulated into (beta = 1).
    CUdeviceptr scratch = 0;
    int64_t cElems = (s.batch - 1) * s.cBatch + (s.m - 1) * s.ldc + s.n;
    driver.cuStreamSynchronize(runStream);
    if (driver.cuMemAlloc(&scratch, cElems * sizeof(float)) == CUDA_SUCCESS) {
      float *c = reinterpret_cast<float *>(scratch);
      float best = 1e30f, sgemmMs = 1e30f, splitMs = 1e30f;
      // At tf32 sgemm is not a candidate (it would be slower and more
      // precise); it stays the fallback when cuBLASLt refuses the shape.
      if (p != Precision::Tf32) {
        sgemmMs = best = timeCandidate(
            [&] { return runSgemm(s, 1.0f, a, b, c, bias); });
        // Keep sgemm unless a candidate is clearly faster (timing noise).
        best *= 0.97f;
      }
      for (const auto &r : foundWhole) {
        GemmPlan trial = whole;
        trial.main = withAlgo(whole.main, r);
        float ms = timeCandidate(
            [&] { return runPlan(s, trial, t, 1.0f, a, b, c, bias); });
        if (ms < best) {
          best = ms;
          plan = trial;
        }
      }
      // The split products: each call's fastest algorithm on split operands
      // made once here, then the whole (split kernels included) against
      // the best so far.
      CUdeviceptr a3 = 0, b3 = 0;
      bool aTemp = false, bTemp = false;
      if (haveSplit && splitOperand(splitA(s, a), a3, aTemp) == 0 &&
          splitOperand(splitB(s, b), b3, bTemp) == 0) {
        auto *sa = reinterpret_cast<const float *>(a3);
        auto *sb = reinterpret_cast<const float *>(b3);
        auto fastest = [&](const LtCall &base,
                           const std::vector<cublasLtMatmulHeuristicResult_t> &f,
                           const float *x, const float *y) {
          LtCall chosen = withAlgo(base, f[0]);
          float bestMs = 1e30f;
          for (const auto &r : f) {
            LtCall trial = withAlgo(base, r);
            float ms = timeCandidate(
                [&] { return runLt(trial, *t, 1.0f, x, y, c, false, bias); });
            if (ms < bestMs) {
              bestMs = ms;
              chosen = trial;
            }
          }
          return chosen;
        };
        GemmPlan trial = split;
        trial.main = fastest(split.main, foundHi, sa + hiOffsetA(s), sb);
        trial.rest = fastest(split.rest, foundRest, sa, sb);
        splitMs = timeCandidate(
            [&] { return runPlan(s, trial, t, 1.0f, a, b, c, bias); });
        if (splitMs < best) {
          best = splitMs;
          plan = trial;
        }
      }
      if (aTemp)
        driver.cuMemFreeAsync(a3, runStream);
      if (bTemp)
        driver.cuMemFreeAsync(b3, runStream);
      driver.cuStreamSynchronize(runStream);
      driver.cuMemFree(scratch);
      if (gemmVerbose())
        std::fprintf(stderr,
                     "mcc: GEMM m=%lld n=%lld k=%lld batch=%lld: sgemm %.4f "
                     "ms, %zu cuBLASLt candidates, tf32x3 %.4f ms, chose %s "
                     "(%.4f ms, split-K %d/%d)\n",
                     (long long)s.m, (long long)s.n, (long long)s.k,
                     (long long)s.batch, sgemmMs, foundWhole.size(),
                     haveSplit ? splitMs : -1.0f, kindName(plan.kind),
                     plan.kind == GemmPlan::Sgemm ? sgemmMs : best,
                     plan.kind == GemmPlan::Sgemm ? 1 : splitsOf(plan.main),
                     plan.kind == GemmPlan::Split ? splitsOf(plan.rest) : 1);
    }
    // else no room to time: sgemm, decided once
  }
  std::lock_guard<std::mutex> lock(plansMutex());
  return plans().emplace(s, plan).first->second;
}

void gemm(const GemmShape &s, float alpha, const float *a, const float *b,
          float *c, const float *bias = nullptr) {
  if (runFailed || !blasReady())
    return;
  auto aligned = [](const void *p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
  };
  GemmPlan plan = aligned(a) && aligned(b) && aligned(c) &&
                          (!bias || aligned(bias))
                      ? planFor(s, a, b, bias)
                      : GemmPlan();
  LtThread *t = plan.kind != GemmPlan::Sgemm ? ltThread() : nullptr;
  if (runMarks)
    mark(gemmLabel(s, plan));
  int rc = runPlan(s, plan, t, alpha, a, b, c, bias);
  if (rc != 0 && !runFailed) {
    lastError = std::string(t ? "cublasLtMatmul" : "cublasSgemm") +
                " failed with status " + std::to_string(rc);
    runFailed = true;
  }
}

/// A row-major (rows x cols) operand at strides (s0, s1) as cuBLAS takes
/// it: untransposed at leading dimension s0 when its rows are contiguous,
/// else transposed (stored cols x rows) at leading dimension s1. A single
/// row or column takes the smallest leading dimension cuBLAS accepts.
bool transposedOperand(int64_t rows, int64_t cols, int64_t s0, int64_t s1,
                       int64_t &ld) {
  if (s1 == 1 && (rows == 1 || s0 != 1 || cols == 1)) {
    ld = rows == 1 ? std::max<int64_t>(s0, cols) : s0;
    return false;
  }
  ld = cols == 1 ? std::max<int64_t>(s1, rows) : s1;
  return true;
}

GemmShape gemmShape(int64_t batch, int64_t m, int64_t n, int64_t k,
                    int64_t aS0, int64_t aS1, int64_t bS0, int64_t bS1,
                    int64_t ldc, int64_t aBatch, int64_t bBatch,
                    int64_t cBatch, float beta) {
  GemmShape s{m, n, k, 0, 0, ldc, batch, aBatch, bBatch, cBatch,
              beta != 0.0f};
  s.transA = transposedOperand(m, k, aS0, aS1, s.lda);
  s.transB = transposedOperand(k, n, bS0, bS1, s.ldb);
  if (s.m == 1)
    s.ldc = std::max<int64_t>(s.ldc, s.n);
  return s;
}

} // namespace

// The products the compiler calls (GpuLibraryCalls): C = alpha A B + beta C
// over memref descriptors (allocated, aligned, offset, sizes, strides).
SHIM_HIDDEN void mcc_gpu_sgemm(float *, float *a, int64_t aOff, int64_t m,
                               int64_t k, int64_t aS0, int64_t aS1, float *,
                               float *b, int64_t bOff, int64_t, int64_t n,
                               int64_t bS0, int64_t bS1, float *, float *c,
                               int64_t cOff, int64_t, int64_t, int64_t ldc,
                               int64_t, float alpha, float beta) {
  gemm(gemmShape(1, m, n, k, aS0, aS1, bS0, bS1, ldc, 0, 0, 0, beta), alpha,
       a + aOff, b + bOff, c + cOff);
}

/// C = alpha A B + beta C, then C[i, j] += bias[j] (a Linear layer's bias).
SHIM_HIDDEN void mcc_gpu_sgemm_bias(float *, float *a, int64_t aOff, int64_t m,
                                    int64_t k, int64_t aS0, int64_t aS1,
                                    float *, float *b, int64_t bOff, int64_t,
                                    int64_t n, int64_t bS0, int64_t bS1,
                                    float *, float *c, int64_t cOff, int64_t,
                                    int64_t, int64_t ldc, int64_t, float *,
                                    float *bias, int64_t biasOff, int64_t,
                                    int64_t, float alpha, float beta) {
  GemmShape s = gemmShape(1, m, n, k, aS0, aS1, bS0, bS1, ldc, 0, 0, 0, beta);
  s.bias = true;
  gemm(s, alpha, a + aOff, b + bOff, c + cOff, bias + biasOff);
}

/// The same, then C = gelu(C) (tanh form): a Linear layer and GPT-2's GELU.
SHIM_HIDDEN void
mcc_gpu_sgemm_bias_gelu(float *, float *a, int64_t aOff, int64_t m, int64_t k,
                        int64_t aS0, int64_t aS1, float *, float *b,
                        int64_t bOff, int64_t, int64_t n, int64_t bS0,
                        int64_t bS1, float *, float *c, int64_t cOff, int64_t,
                        int64_t, int64_t ldc, int64_t, float *, float *bias,
                        int64_t biasOff, int64_t, int64_t, float alpha,
                        float beta) {
  GemmShape s = gemmShape(1, m, n, k, aS0, aS1, bS0, bS1, ldc, 0, 0, 0, beta);
  s.bias = true;
  s.gelu = true;
  gemm(s, alpha, a + aOff, b + bOff, c + cOff, bias + biasOff);
}

SHIM_HIDDEN void
mcc_gpu_sgemm_batched(float *, float *a, int64_t aOff, int64_t batch,
                      int64_t m, int64_t k, int64_t aBatch, int64_t aS0,
                      int64_t aS1, float *, float *b, int64_t bOff, int64_t,
                      int64_t, int64_t n, int64_t bBatch, int64_t bS0,
                      int64_t bS1, float *, float *c, int64_t cOff, int64_t,
                      int64_t, int64_t, int64_t cBatch, int64_t ldc, int64_t,
                      float alpha, float beta) {
  gemm(gemmShape(batch, m, n, k, aS0, aS1, bS0, bS1, ldc, aBatch, bBatch,
                 cBatch, beta),
       alpha, a + aOff, b + bOff, c + cOff);
}

//===--- mcc run entry
//-----------------------------------------------------===//

using BodyFn = void (*)(void **deviceBuffers, void *deviceWeights,
                        const int64_t *dims);

SHIM_EXPORT const char *mcc_cuda_last_error() { return lastError.c_str(); }

namespace {

/// A run captured as a CUDA graph for one shape (the dims of every input
/// and output; empty for a static model). Kernel grids, cuBLAS sizes and
/// scratch allocations are baked into the graph, so one shape's graph
/// cannot run another.
struct ShapeGraph {
  std::vector<int64_t> dims;
  int runs = 0;
  CUgraphExec graph = nullptr;
  bool graphFailed = false;
  uint64_t lastUse = 0;
  /// The profile's events inside `graph` (when captured with profiling on).
  Marks marks;
};

/// At most this many graphs per (thread, model). A graph holds its kernel
/// nodes and its scratch memory reservation; serving every length of a
/// text model (1..512) would keep hundreds. Sixteen covers the usual few
/// batch sizes x bucketed lengths; past it the least recently used goes,
/// and a shape that comes back is captured again.
constexpr size_t kMaxShapeGraphs = 16;

/// What one thread keeps between runs of one model: its stream, device
/// buffers for the inputs and outputs (grown to the largest shape seen),
/// and the runs captured as CUDA graphs, one per shape.
struct RunContext {
  CUstream stream = nullptr;
  std::vector<CUdeviceptr> buffers;
  std::vector<int64_t> capacity;
  std::vector<ShapeGraph> graphs;
  uint64_t clock = 0;
  /// Events around each run (its device time), and the profile's events of
  /// runs launched directly.
  CUevent runStart = nullptr, runEnd = nullptr;
  Marks directMarks;
  /// The profile generation the graphs were captured under.
  unsigned profileGeneration = 0;
  /// Stream-ordered runs: the caller's work before the run, and the run.
  CUevent callerReady = nullptr, runDone = nullptr;
};

/// Set by mcc_run_on_stream for the calling thread's next run: order it on
/// this stream of the caller instead of waiting for it.
thread_local bool callerOrdered = false;
thread_local CUstream callerStream = nullptr;

/// Device milliseconds of the calling thread's last run (-1: none timed).
thread_local double lastRunMs = -1;

bool graphsEnabled() {
  const char *v = std::getenv("MCC_CUDA_GRAPHS");
  return !(v && std::string(v) == "0");
}

/// Uploads the weights once per process (models share nothing else).
bool deviceWeights(const void *blob, int64_t bytes, CUdeviceptr &out) {
  out = 0;
  if (bytes <= 0)
    return true;
  std::lock_guard<std::mutex> lock(weightsMutex());
  for (const Weights &w : uploaded())
    if (w.host == blob) {
      out = w.device;
      return true;
    }
  if (!check(driver.cuMemAlloc(&out, bytes), "allocating weights") ||
      !check(driver.cuMemcpyHtoDAsync(out, blob, bytes, nullptr),
             "uploading weights") ||
      !check(driver.cuStreamSynchronize(nullptr), "uploading weights"))
    return false;
  uploaded().push_back({blob, out});
  return true;
}

/// Records the body into a graph on the context's stream; false (and that
/// shape falls back to direct launches) if anything refused capture.
bool captureGraph(RunContext &ctx, ShapeGraph &shape, BodyFn body,
                  void **devices, CUdeviceptr weights, const int64_t *dims) {
  if (driver.cuStreamBeginCapture(
          ctx.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS)
    return false;
  body(devices, reinterpret_cast<void *>(weights), dims);
  CUgraph graph = nullptr;
  CUresult end = driver.cuStreamEndCapture(ctx.stream, &graph);
  bool ok = end == CUDA_SUCCESS && graph && !runFailed;
  if (ok)
    ok = driver.cuGraphInstantiateWithFlags(
             &shape.graph, graph,
             CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) == CUDA_SUCCESS;
  if (graph)
    driver.cuGraphDestroy(graph);
  if (!ok) {
    shape.graph = nullptr;
    runFailed = false; // a refused capture is not a failed run
    lastError.clear();
  }
  return ok;
}

void releaseGraph(ShapeGraph &g) {
  if (g.graph)
    driver.cuGraphExecDestroy(g.graph);
  g.graph = nullptr;
  releaseMarks(g.marks);
}

void dropGraphs(RunContext &ctx) {
  for (ShapeGraph &g : ctx.graphs)
    releaseGraph(g);
  ctx.graphs.clear();
}

/// The entry for this shape, made (evicting the least recently used past
/// kMaxShapeGraphs) if new. A static model has one, with empty dims.
ShapeGraph &shapeGraph(RunContext &ctx, const int64_t *dims, int64_t numDims) {
  ++ctx.clock;
  for (ShapeGraph &g : ctx.graphs)
    if (static_cast<int64_t>(g.dims.size()) == numDims &&
        std::equal(g.dims.begin(), g.dims.end(), dims)) {
      g.lastUse = ctx.clock;
      return g;
    }
  if (ctx.graphs.size() >= kMaxShapeGraphs) {
    auto oldest =
        std::min_element(ctx.graphs.begin(), ctx.graphs.end(),
                         [](const ShapeGraph &a, const ShapeGraph &b) {
                           return a.lastUse < b.lastUse;
                         });
    releaseGraph(*oldest);
    ctx.graphs.erase(oldest);
  }
  ctx.graphs.push_back({std::vector<int64_t>(dims, dims + numDims)});
  ctx.graphs.back().lastUse = ctx.clock;
  return ctx.graphs.back();
}

/// Makes every input/output buffer hold at least `bytes`. Buffers only
/// grow (to the largest shape seen), and growing moves them, so the graphs
/// captured on the old addresses go too.
bool ensureBuffers(RunContext &ctx, const int64_t *bytes, int64_t n) {
  bool grow = false;
  for (int64_t i = 0; i < n; ++i)
    grow |= bytes[i] > ctx.capacity[i];
  if (!grow)
    return true;
  if (!check(driver.cuStreamSynchronize(ctx.stream), "resizing buffers"))
    return false;
  dropGraphs(ctx);
  for (int64_t i = 0; i < n; ++i) {
    if (bytes[i] <= ctx.capacity[i])
      continue;
    if (ctx.buffers[i])
      driver.cuMemFree(ctx.buffers[i]);
    ctx.buffers[i] = 0;
    ctx.capacity[i] = 0;
    if (!check(driver.cuMemAlloc(&ctx.buffers[i], bytes[i] ? bytes[i] : 1),
               "allocating an input/output buffer"))
      return false;
    ctx.capacity[i] = bytes[i];
  }
  return true;
}

} // namespace

/// hostBuffers: inputs then outputs, in host memory or (CUDA tensors passed
/// through the C API) device memory of the primary context; bytes: the size
/// of each for this call (a constant table for a static model); dims: the
/// actual shapes, inputs then outputs, numDims of them (0 for a static
/// model), passed to the body and keying the graph cache. Per shape, the
/// first run launches directly (and warms up cuBLAS); the second captures
/// the run as a CUDA graph, which later runs of that shape replay
/// (MCC_CUDA_GRAPHS=0 turns this off).
SHIM_HIDDEN int32_t mcc_cuda_run(void **hostBuffers, int64_t numInputs,
                                 int64_t numOutputs, const int64_t *bytes,
                                 const void *weightBlob, int64_t weightBytes,
                                 BodyFn body, const int64_t *dims,
                                 int64_t numDims) {
  runFailed = false;
  lastError.clear();
  if (!ready())
    return 1;
  if (!moduleLoadError().empty()) {
    lastError = moduleLoadError();
    return 5;
  }
  CUdeviceptr weights = 0;
  if (!deviceWeights(weightBlob, weightBytes, weights))
    return 2;
  runWeights = weights;
  runWeightBytes = weightBytes;
  // One context per (thread, model): the descriptor's run entry is unique
  // per model, and so is its weight blob.
  thread_local std::vector<std::pair<const void *, RunContext>> contexts;
  RunContext *ctx = nullptr;
  const void *key = reinterpret_cast<const void *>(body);
  for (auto &c : contexts)
    if (c.first == key)
      ctx = &c.second;
  int64_t n = numInputs + numOutputs;
  if (!ctx) {
    contexts.push_back({key, RunContext()});
    ctx = &contexts.back().second;
    if (!check(driver.cuStreamCreate(&ctx->stream, CU_STREAM_NON_BLOCKING),
               "creating a stream"))
      return 3;
    ctx->buffers.assign(n, 0);
    ctx->capacity.assign(n, -1);
  }
  if (!ensureBuffers(*ctx, bytes, n))
    return 3;
  ShapeGraph &shape = shapeGraph(*ctx, dims, numDims);
  if (callerOrdered) {
    // Device buffers only: a host buffer would be read or written after the
    // call returned.
    for (int64_t i = 0; i < n; ++i) {
      unsigned type = 0;
      if (bytes[i] &&
          (driver.cuPointerGetAttribute(
               &type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
               static_cast<CUdeviceptr>(
                   reinterpret_cast<uintptr_t>(hostBuffers[i]))) !=
               CUDA_SUCCESS ||
           type != CU_MEMORYTYPE_DEVICE)) {
        lastError = std::string(i < numInputs ? "input " : "output ") +
                    std::to_string(i < numInputs ? i : i - numInputs) +
                    " is not in device memory: a stream-ordered run takes "
                    "device buffers only";
        return 6;
      }
    }
    if ((!ctx->callerReady &&
         !check(driver.cuEventCreate(&ctx->callerReady,
                                     CU_EVENT_DISABLE_TIMING),
                "creating an event")) ||
        (!ctx->runDone &&
         !check(driver.cuEventCreate(&ctx->runDone, CU_EVENT_DISABLE_TIMING),
                "creating an event")))
      return 3;
    check(driver.cuEventRecord(ctx->callerReady, callerStream),
          "ordering the run after the caller's stream");
    check(driver.cuStreamWaitEvent(ctx->stream, ctx->callerReady, 0),
          "ordering the run after the caller's stream");
  }
  runStream = ctx->stream;
  // cuMemcpyAsync infers each copy's direction from the pointer (unified
  // addressing): host arrays are uploaded, and device pointers (CUDA tensors
  // of the caller, in the same primary context) are copied device to device
  // without a trip through the host.
  auto address = [](const void *p) {
    return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
  };
  for (int64_t i = 0; i < numInputs && !runFailed; ++i)
    if (bytes[i])
      check(driver.cuMemcpyAsync(ctx->buffers[i], address(hostBuffers[i]),
                                 bytes[i], ctx->stream),
            "copying an input to the device");
  std::vector<void *> ptrs(n);
  for (int64_t i = 0; i < n; ++i)
    ptrs[i] = reinterpret_cast<void *>(ctx->buffers[i]);
  bool timed = ctx->runStart ||
               (driver.cuEventCreate(&ctx->runStart, CU_EVENT_DEFAULT) ==
                    CUDA_SUCCESS &&
                driver.cuEventCreate(&ctx->runEnd, CU_EVENT_DEFAULT) ==
                    CUDA_SUCCESS);
  Marks *profiled = nullptr;
  if (!runFailed) {
    // Graphs captured with profiling on or off run the other way no more.
    bool profileOn;
    unsigned generation;
    {
      std::lock_guard<std::mutex> lock(profile().mutex);
      profileOn = profile().on;
      generation = profile().generation;
    }
    if (ctx->profileGeneration != generation) {
      driver.cuStreamSynchronize(ctx->stream);
      for (ShapeGraph &g : ctx->graphs)
        releaseGraph(g);
      ctx->profileGeneration = generation;
    }
    // Without events inside graphs, a profiled run launches directly.
    bool graphs = graphsEnabled() &&
                  (!profileOn || driver.cuEventRecordWithFlags != nullptr);
    if (!shape.graph && shape.runs >= 1 && !shape.graphFailed && graphs) {
      runMarks = profileOn ? &shape.marks : nullptr;
      shape.graphFailed =
          !captureGraph(*ctx, shape, body, ptrs.data(), weights, dims);
      runMarks = nullptr;
    }
    if (timed)
      driver.cuEventRecord(ctx->runStart, ctx->stream);
    if (shape.graph && graphs) {
      check(driver.cuGraphLaunch(shape.graph, ctx->stream),
            "launching the run's CUDA graph");
      profiled = profileOn ? &shape.marks : nullptr;
    } else {
      if (profileOn) {
        ctx->directMarks.used = 0;
        profiled = runMarks = &ctx->directMarks;
      }
      body(ptrs.data(), reinterpret_cast<void *>(weights), dims);
      runMarks = nullptr;
    }
    if (timed)
      driver.cuEventRecord(ctx->runEnd, ctx->stream);
  }
  for (int64_t i = numInputs; i < n && !runFailed; ++i)
    if (bytes[i])
      check(driver.cuMemcpyAsync(address(hostBuffers[i]), ctx->buffers[i],
                                 bytes[i], ctx->stream),
            "copying an output out of the run");
  lastRunMs = -1;
  if (callerOrdered) {
    // The caller's later work waits for the run on the GPU, not here.
    check(driver.cuEventRecord(ctx->runDone, ctx->stream),
          "ordering the caller's stream after the run");
    check(driver.cuStreamWaitEvent(callerStream, ctx->runDone, 0),
          "ordering the caller's stream after the run");
    runStream = nullptr;
    ++shape.runs;
    return runFailed ? 4 : 0;
  }
  check(driver.cuStreamSynchronize(ctx->stream), "running the model");
  float ms = 0;
  if (!runFailed && timed &&
      driver.cuEventElapsedTime(&ms, ctx->runStart, ctx->runEnd) ==
          CUDA_SUCCESS)
    lastRunMs = ms;
  if (!runFailed && profiled && profiled->used)
    addToProfile(*profiled, ctx->runEnd);
  runStream = nullptr;
  ++shape.runs;
  return runFailed ? 4 : 0;
}

//===--- Timing and profile entry points (the runtime's C API)
//-----------===//

/// Device time of the calling thread's last run: its kernels and products,
/// from the first launch to the last, without the input and output copies.
SHIM_EXPORT double mcc_cuda_last_run_ms() { return lastRunMs; }

/// on = 1: the calling thread's next runs are ordered on `stream` (a
/// CUstream of the caller) and return without waiting; 0: synchronous.
SHIM_EXPORT void mcc_cuda_set_caller_stream(int on, void *stream) {
  callerOrdered = on != 0;
  callerStream = static_cast<CUstream>(stream);
}

/// 1: start (or restart) the per-kernel profile, clearing it; 0: stop,
/// keeping what it holds.
SHIM_EXPORT void mcc_cuda_set_profiling(int on) {
  std::lock_guard<std::mutex> lock(profile().mutex);
  if (profile().on != (on != 0))
    ++profile().generation;
  profile().on = on != 0;
  if (on) {
    profile().runs = 0;
    profile().totals.clear();
  }
}

/// The profile since it was started: "runs\n", then one line per segment
/// label, "launches\tmilliseconds\tlabel\n" (totals over the runs).
/// Writes at most `capacity` bytes (NUL included) and returns the length
/// the whole text needs.
SHIM_EXPORT int64_t mcc_cuda_profile_text(char *out, int64_t capacity) {
  std::string text;
  {
    std::lock_guard<std::mutex> lock(profile().mutex);
    text = std::to_string(profile().runs) + "\n";
    char ms[64];
    for (const auto &[label, t] : profile().totals) {
      std::snprintf(ms, sizeof(ms), "%.6f", t.second);
      text += std::to_string(t.first) + "\t" + ms + "\t" + label + "\n";
    }
  }
  if (out && capacity > 0) {
    size_t n = std::min<size_t>(text.size(), capacity - 1);
    std::memcpy(out, text.data(), n);
    out[n] = 0;
  }
  return static_cast<int64_t>(text.size());
}
