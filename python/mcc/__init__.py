"""Python bindings for the mcc loader runtime (libmccrt, include/mcc/mcc.h).

Pure Python: ctypes + numpy; torch is optional.

    import mcc
    model = mcc.load("model.so")              # a library written by `mcc compile`
    print(model.inputs, model.outputs)        # [TensorInfo(name, dtype, shape), ...]
    print(model.symbols)                      # [Symbol(name, min, max), ...] of dynamic dims
    out = model(pixel_values=x)               # or model(x), or model.run({"pixel_values": x})
    logits = out["logits"]                    # always a dict: output name -> array

Inputs may be numpy arrays (or anything np.asarray accepts) or torch
tensors. An array is made C-contiguous (and native byte order) when it is
not, but it is never cast to another dtype: a float64 array given for a
float32 input is passed as float64, and the runtime rejects it with a dtype
error. Names, shapes and dtypes are checked by the C runtime; its message
(mcc_last_error) is the text of the MccError raised.

A model compiled with dynamic dims (docs/design/0010) shows each dynamic
dim in TensorInfo.shape by name: the symbol for an input dim ('batch'), the
expression for an output dim ('batch * 128'). Runs take any input shapes
the symbols' bounds allow; the runtime checks that inputs agree on each
symbol, and model.output_shapes(feeds) says what the outputs will be.

Outputs are numpy arrays allocated before the call (for the shapes these
inputs give) and filled by mcc_run.
When any input was a torch tensor the outputs are torch tensors sharing that
memory (torch.from_numpy), on the CPU. For a cuda model whose inputs are all
CUDA tensors on one device, inputs and outputs stay on the GPU: the run
copies them device to device and the outputs are CUDA tensors. Otherwise
CUDA tensors given as inputs are copied to the host with .cpu() first.

The runtime library is found, in order: the `runtime` argument of load(),
the MCC_RUNTIME environment variable, <repo>/build/lib/Runtime/libmccrt.so
next to this package's source tree, then libmccrt.so on the loader path.
"""
import ctypes
import os
from collections import namedtuple
from collections.abc import Mapping

import numpy as np

__all__ = ["MccError", "TensorInfo", "Symbol", "Model", "Runtime", "load", "set_num_threads", "find_runtime"]

MCC_MAX_RANK = 8

# onnx.TensorProto.DataType codes, as in mcc_dtype (the ones the runtime runs).
DTYPES = {
    1: np.dtype(np.float32),
    2: np.dtype(np.uint8),
    3: np.dtype(np.int8),
    6: np.dtype(np.int32),
    7: np.dtype(np.int64),
    9: np.dtype(np.bool_),
    10: np.dtype(np.float16),
    11: np.dtype(np.float64),
    4: np.dtype(np.uint16),
    5: np.dtype(np.int16),
    12: np.dtype(np.uint32),
    13: np.dtype(np.uint64),
}
try:  # numpy has no bfloat16; ml_dtypes' (as onnx uses) is the common one
    import ml_dtypes
    DTYPES[16] = np.dtype(ml_dtypes.bfloat16)
    # One byte per element, as ml_dtypes stores them (docs/design/0009).
    for _code, _name in ((17, "float8_e4m3fn"), (18, "float8_e4m3fnuz"),
                         (19, "float8_e5m2"), (20, "float8_e5m2fnuz"),
                         (21, "uint4"), (22, "int4"), (23, "float4_e2m1fn"),
                         (24, "float8_e8m0fnu"), (25, "uint2"), (26, "int2")):
        if hasattr(ml_dtypes, _name):  # older ml_dtypes lack some
            DTYPES[_code] = np.dtype(getattr(ml_dtypes, _name))
except ImportError:  # pragma: no cover  (bfloat16 models then need it)
    ml_dtypes = None
# numpy dtype -> ONNX code for every dtype ONNX names, so that an input of a
# dtype the runtime does not run still reaches it and gets its dtype error.
_ONNX_CODES = {dt: code for code, dt in DTYPES.items()}
_ONNX_CODES.update({
    np.dtype(np.complex64): 14,
    np.dtype(np.complex128): 15,
})


class MccError(RuntimeError):
    """A failed runtime call; the message is mcc_last_error()'s. `status` is
    the mcc_status code (None for errors raised before reaching the C API)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


TensorInfo = namedtuple("TensorInfo", ["name", "dtype", "shape"])
TensorInfo.__doc__ = ("An input or output of a model: name (str), dtype (numpy dtype), shape (tuple: an int "
                      "per static dim, the symbol or expression (str) per dynamic dim).")

Symbol = namedtuple("Symbol", ["name", "min", "max"])
Symbol.__doc__ = "A symbol of a model's dynamic dims with its bounds: name, min, max (None when unbounded)."

INT64_MAX = 2**63 - 1


class CTensorInfo(ctypes.Structure):
    # const char* name; mcc_dtype (C int) dtype; int32 rank; int64 shape[8];
    # const char* dim_names[8]
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.c_int64 * MCC_MAX_RANK),
        ("dim_names", ctypes.c_char_p * MCC_MAX_RANK),
    ]


class CTensor(ctypes.Structure):
    # void* data; mcc_dtype (C int) dtype; int32 rank; int64 shape[8]
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.c_int64 * MCC_MAX_RANK),
    ]


assert ctypes.sizeof(CTensorInfo) == 144 and CTensorInfo.shape.offset == 16 and CTensorInfo.dim_names.offset == 80
assert ctypes.sizeof(CTensor) == 80 and CTensor.shape.offset == 16


class CKernelTime(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("launches", ctypes.c_int64), ("total_ms", ctypes.c_double)]


KernelTime = namedtuple("KernelTime", "name launches_per_run ms_per_run")


class Runtime:
    """The loaded libmccrt with its function signatures declared."""

    def __init__(self, path):
        try:
            lib = ctypes.CDLL(path)
        except OSError as ex:
            raise MccError(f"cannot load the mcc runtime {path}: {ex}") from None
        self.path = path
        P = ctypes.c_void_p
        lib.mcc_last_error.restype = ctypes.c_char_p
        lib.mcc_last_error.argtypes = []
        lib.mcc_status_string.restype = ctypes.c_char_p
        lib.mcc_status_string.argtypes = [ctypes.c_int]
        lib.mcc_dtype_name.restype = ctypes.c_char_p
        lib.mcc_dtype_name.argtypes = [ctypes.c_int]
        lib.mcc_model_load.restype = ctypes.c_int
        lib.mcc_model_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(P)]
        lib.mcc_model_free.restype = None
        lib.mcc_model_free.argtypes = [P]
        lib.mcc_model_target.restype = ctypes.c_char_p
        lib.mcc_model_target.argtypes = [P]
        lib.mcc_model_arch.restype = ctypes.c_char_p
        lib.mcc_model_arch.argtypes = [P]
        lib.mcc_model_precision.restype = ctypes.c_char_p
        lib.mcc_model_precision.argtypes = [P]
        lib.mcc_model_num_inputs.restype = ctypes.c_size_t
        lib.mcc_model_num_inputs.argtypes = [P]
        lib.mcc_model_num_outputs.restype = ctypes.c_size_t
        lib.mcc_model_num_outputs.argtypes = [P]
        for fn in (lib.mcc_model_input_info, lib.mcc_model_output_info):
            fn.restype = ctypes.c_int
            fn.argtypes = [P, ctypes.c_size_t, ctypes.POINTER(CTensorInfo)]
        lib.mcc_model_num_symbols.restype = ctypes.c_size_t
        lib.mcc_model_num_symbols.argtypes = [P]
        lib.mcc_model_symbol_info.restype = ctypes.c_int
        lib.mcc_model_symbol_info.argtypes = [P, ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p),
                                              ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64)]
        lib.mcc_model_output_shapes.restype = ctypes.c_int
        lib.mcc_model_output_shapes.argtypes = [P, ctypes.POINTER(CTensor), ctypes.c_size_t,
                                                ctypes.POINTER(CTensorInfo), ctypes.c_size_t]
        lib.mcc_set_num_threads.restype = ctypes.c_int
        lib.mcc_set_num_threads.argtypes = [ctypes.c_int]
        for fn in (lib.mcc_run, lib.mcc_run_alloc):
            fn.restype = ctypes.c_int
            fn.argtypes = [P, ctypes.POINTER(CTensor), ctypes.c_size_t,
                           ctypes.POINTER(CTensor), ctypes.c_size_t]
        # Stream-ordered runs on CUDA tensors (a runtime older than this
        # binding lacks it: runs then synchronize).
        self.run_on_stream = getattr(lib, "mcc_run_on_stream", None)
        if self.run_on_stream is not None:
            self.run_on_stream.restype = ctypes.c_int
            self.run_on_stream.argtypes = [P, ctypes.POINTER(CTensor), ctypes.c_size_t,
                                           ctypes.POINTER(CTensor), ctypes.c_size_t,
                                           ctypes.c_void_p]
        # GPU timing (absent from runtimes older than this binding).
        self.has_gpu_timing = hasattr(lib, "mcc_model_kernel_profile")
        if self.has_gpu_timing:
            lib.mcc_model_last_run_device_ms.restype = ctypes.c_int
            lib.mcc_model_last_run_device_ms.argtypes = [P, ctypes.POINTER(ctypes.c_double)]
            lib.mcc_model_set_kernel_profiling.restype = ctypes.c_int
            lib.mcc_model_set_kernel_profiling.argtypes = [P, ctypes.c_int]
            lib.mcc_model_kernel_profile.restype = ctypes.c_int
            lib.mcc_model_kernel_profile.argtypes = [P, ctypes.POINTER(CKernelTime), ctypes.c_size_t,
                                                     ctypes.POINTER(ctypes.c_size_t),
                                                     ctypes.POINTER(ctypes.c_int64)]
        lib.mcc_tensor_free_data.restype = None
        lib.mcc_tensor_free_data.argtypes = [ctypes.POINTER(CTensor)]
        self.lib = lib

    def check(self, status, what=None):
        """Raises MccError with mcc_last_error()'s text when status != 0."""
        if status != 0:
            msg = (self.lib.mcc_last_error() or b"").decode(errors="replace")
            if not msg:
                name = (self.lib.mcc_status_string(status) or b"?").decode()
                msg = f"{name} ({status})"
            raise MccError(f"{what}: {msg}" if what else msg, status)

    def dtype_name(self, code):
        return (self.lib.mcc_dtype_name(code) or b"?").decode()


_runtimes = {}  # path -> Runtime
_default_runtime = None  # the last one load() used


def find_runtime(runtime=None):
    """The path of libmccrt that load() would use (see the module doc)."""
    if runtime:
        return os.fspath(runtime)
    env = os.environ.get("MCC_RUNTIME")
    if env:
        return env
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    built = os.path.join(repo, "build", "lib", "Runtime", "libmccrt.so")
    if os.path.exists(built):
        return built
    return "libmccrt.so"  # the dynamic loader's search path


def _runtime(runtime=None):
    global _default_runtime
    if isinstance(runtime, Runtime):
        rt = runtime
    else:
        path = find_runtime(runtime)
        key = os.path.realpath(path) if os.path.sep in path else path
        rt = _runtimes.get(key)
        if rt is None:
            rt = _runtimes[key] = Runtime(path)
    _default_runtime = rt
    return rt


def set_num_threads(n, runtime=None):
    """Threads used by the calling thread's later runs (0: all cores). The
    runtime needs a loaded model first (it takes OpenMP from the model)."""
    rt = runtime if isinstance(runtime, Runtime) else (
        _default_runtime if runtime is None and _default_runtime else _runtime(runtime))
    rt.check(rt.lib.mcc_set_num_threads(int(n)), "mcc_set_num_threads")


def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "numpy") and hasattr(x, "device")


def _to_numpy(x):
    """(array, was_torch) without a dtype cast."""
    if _is_torch(x):
        t = x.detach()
        if t.device.type != "cpu":
            t = t.cpu()  # host copy; zero-copy CUDA is future work
        if not t.is_contiguous():
            t = t.contiguous()
        try:
            return t.numpy(), True  # zero-copy
        except TypeError as ex:  # e.g. bfloat16, which numpy lacks
            raise MccError(f"torch tensor of dtype {t.dtype} cannot be passed: {ex}") from None
    return np.asarray(x), False


def _torch_dtype_code(t):
    """ONNX dtype code of a torch tensor's dtype (None if mcc has none)."""
    import torch
    codes = {torch.float32: 1, torch.uint8: 2, torch.int8: 3, torch.int16: 5,
             torch.int32: 6, torch.int64: 7, torch.bool: 9, torch.float16: 10,
             torch.float64: 11, torch.bfloat16: 16}
    for name, code in (("uint16", 4), ("uint32", 12), ("uint64", 13)):
        if hasattr(torch, name):  # torch 2.3 on
            codes[getattr(torch, name)] = code
    return codes.get(t.dtype)


def _fill_device(t, tensor, code, what):
    """A CTensor over a CUDA tensor's memory (a cuda model copies it device
    to device)."""
    if tensor.dim() > MCC_MAX_RANK:
        raise MccError(f"{what}: rank {tensor.dim()} is more than the runtime's maximum {MCC_MAX_RANK}")
    t.data = tensor.data_ptr() if tensor.numel() else None
    t.dtype = code
    t.rank = tensor.dim()
    for d, n in enumerate(tensor.shape):
        t.shape[d] = n


def _fill(t, arr, code, what):
    if arr.ndim > MCC_MAX_RANK:
        raise MccError(f"{what}: rank {arr.ndim} is more than the runtime's maximum {MCC_MAX_RANK}")
    t.data = arr.ctypes.data if arr.size else None
    t.dtype = code
    t.rank = arr.ndim
    for d, n in enumerate(arr.shape):
        t.shape[d] = n


class Model:
    """A model .so loaded by the runtime. Use mcc.load() to make one."""

    def __init__(self, path, runtime=None):
        self._handle = None
        self.path = os.fspath(path)
        self.runtime = rt = _runtime(runtime)
        lib = rt.lib
        handle = ctypes.c_void_p()
        rt.check(lib.mcc_model_load(self.path.encode(), ctypes.byref(handle)))
        self._handle = handle
        self.target = (lib.mcc_model_target(handle) or b"").decode()
        self.arch = (lib.mcc_model_arch(handle) or b"").decode()
        self.precision = (lib.mcc_model_precision(handle) or b"").decode()
        self._in = [self._info(lib.mcc_model_input_info, i)
                    for i in range(lib.mcc_model_num_inputs(handle))]
        self._out = [self._info(lib.mcc_model_output_info, i)
                     for i in range(lib.mcc_model_num_outputs(handle))]
        names = [self._dim_names(lib.mcc_model_input_info, i) for i in range(len(self._in))]
        self.inputs = [TensorInfo(n, DTYPES.get(c), k) for (n, c, _), k in zip(self._in, names)]
        names = [self._dim_names(lib.mcc_model_output_info, i) for i in range(len(self._out))]
        self.outputs = [TensorInfo(n, DTYPES.get(c), k) for (n, c, _), k in zip(self._out, names)]
        self.symbols = []
        for k in range(lib.mcc_model_num_symbols(handle)):
            name, lo, hi = ctypes.c_char_p(), ctypes.c_int64(), ctypes.c_int64()
            rt.check(lib.mcc_model_symbol_info(handle, k, ctypes.byref(name), ctypes.byref(lo), ctypes.byref(hi)))
            self.symbols.append(Symbol(name.value.decode(), lo.value, None if hi.value == INT64_MAX else hi.value))
        # Outputs are sized per call from the inputs when any dim is dynamic.
        self._dynamic = any(d < 0 for _, _, shape in self._out for d in shape)

    def _info(self, fn, i):
        info = CTensorInfo()
        self.runtime.check(fn(self._handle, i, ctypes.byref(info)))
        return (info.name.decode(), info.dtype, tuple(info.shape[d] for d in range(info.rank)))

    def _dim_names(self, fn, i):
        """The shape with each dynamic dim as its symbol or expression."""
        info = CTensorInfo()
        self.runtime.check(fn(self._handle, i, ctypes.byref(info)))
        return tuple(info.dim_names[d].decode() if info.dim_names[d] else info.shape[d]
                     for d in range(info.rank))

    # -- lifetime ---------------------------------------------------------
    def close(self):
        """Frees the model; later runs raise MccError."""
        h, self._handle = getattr(self, "_handle", None), None
        if h:
            self.runtime.lib.mcc_model_free(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        dims = lambda shape: "[" + ", ".join(str(d) for d in shape) + "]"
        sig = lambda ts: ", ".join(f"{t.name}: {t.dtype}{dims(t.shape)}" for t in ts)
        return f"<mcc.Model {self.path!r} {self.target}/{self.arch} ({sig(self.inputs)}) -> ({sig(self.outputs)})>"

    def _live(self):
        if not self._handle:
            raise MccError(f"{self.path}: the model is closed")
        return self._handle

    # -- GPU timing (cuda models) -------------------------------------------
    def _gpu_timing(self):
        if not self.runtime.has_gpu_timing:
            raise MccError(f"{self.runtime.path}: this runtime has no GPU timing (rebuild libmccrt)")
        return self.runtime.lib

    def last_run_device_ms(self):
        """Device time in ms (CUDA events) of this thread's last run of a
        cuda model that waited for the GPU (host arrays, or mcc_run); a
        stream-ordered run on CUDA tensors is not timed."""
        ms = ctypes.c_double()
        self.runtime.check(self._gpu_timing().mcc_model_last_run_device_ms(self._live(), ctypes.byref(ms)))
        return ms.value

    def kernel_profile(self, feeds, runs=20):
        """Profiles `runs` runs on `feeds` (after 3 warm-up runs; CUDA
        tensors are read to the host first, so the runs wait for the GPU).
        Returns [KernelTime(name, launches_per_run, ms_per_run)], longest
        first: per kernel for a cuda model (each time includes the event
        recorded before its launch), per op of the forward function for a
        cpu model ("#<n> <what> <shape> [<ONNX nodes>]", wall time from the
        op's start to the next op's). See `mcc bench --kernels`."""
        lib, handle = self._gpu_timing(), self._live()
        feeds = {k: (v.detach().cpu().numpy() if _is_torch(v) else v) for k, v in dict(feeds).items()}
        self.runtime.check(lib.mcc_model_set_kernel_profiling(handle, 1))
        try:
            for _ in range(3):
                self.run(feeds)
            lib.mcc_model_set_kernel_profiling(handle, 1)  # clears the warm-up
            for _ in range(runs):
                self.run(feeds)
            count, n = ctypes.c_size_t(), ctypes.c_int64()
            self.runtime.check(lib.mcc_model_kernel_profile(handle, None, 0, ctypes.byref(count), None))
            entries = (CKernelTime * max(1, count.value))()
            self.runtime.check(lib.mcc_model_kernel_profile(handle, entries, count.value,
                                                            ctypes.byref(count), ctypes.byref(n)))
            per = 1.0 / max(1, n.value)
            return [KernelTime(e.name.decode(), e.launches * per, e.total_ms * per)
                    for e in entries[:count.value]]
        finally:
            lib.mcc_model_set_kernel_profiling(handle, 0)

    # -- running ----------------------------------------------------------
    def _feeds(self, args, named):
        """Orders positional and named inputs by the model's inputs."""
        names = [n for n, _, _ in self._in]
        if len(args) > len(names):
            raise MccError(f"{len(args)} positional inputs given, the model has {len(names)} ({names})")
        feeds = dict(zip(names, args))
        for k, v in named.items():
            if k not in names:
                raise MccError(f"no model input named '{k}'; the model's inputs are {names}")
            if k in feeds:
                raise MccError(f"input '{k}' given twice")
            feeds[k] = v
        missing = [n for n in names if n not in feeds]
        if missing:
            raise MccError(f"missing input{'s' if len(missing) > 1 else ''} "
                           + ", ".join(f"'{n}'" for n in missing) + f"; the model's inputs are {names}")
        return [feeds[n] for n in names]

    def _on_device(self, values):
        """The CUDA device of the inputs when this is a cuda model and every
        tensor input is a CUDA tensor: then inputs and outputs stay on the
        GPU (device-to-device copies, no host round trip)."""
        if self.target != "cuda":
            return None
        devices = {v.device for v in values if _is_torch(v)}
        if len(devices) == 1 and next(iter(devices)).type == "cuda" and \
                all(_is_torch(v) for v in values):
            return next(iter(devices))
        return None

    def _input_structs(self, values, device=None):
        keep, any_torch = [], False
        ins = (CTensor * max(1, len(values)))()
        for i, ((name, _, _), v) in enumerate(zip(self._in, values)):
            if device is not None:
                t = v.detach().contiguous()
                code = _torch_dtype_code(t)
                if code is None:
                    raise MccError(f"input {i} ('{name}'): torch dtype {t.dtype} is not supported", 5)
                keep.append(t)
                _fill_device(ins[i], t, code, f"input {i} ('{name}')")
                any_torch = True
                continue
            arr, was_torch = _to_numpy(v)
            any_torch |= was_torch
            if not arr.dtype.isnative:
                arr = arr.astype(arr.dtype.newbyteorder("="))  # same values, native order
            arr = np.require(arr, requirements="C")  # keeps the dtype and a 0-d shape
            code = _ONNX_CODES.get(arr.dtype)
            if code is None:
                raise MccError(f"input {i} ('{name}'): dtype {arr.dtype} given, the model expects "
                               f"{self.runtime.dtype_name(self._in[i][1])}", 5)
            keep.append(arr)
            _fill(ins[i], arr, code, f"input {i} ('{name}')")
        return ins, keep, any_torch

    def prepare(self, feeds, out_shapes=None):
        """Binds inputs and preallocated outputs once for repeated runs.

        feeds: a mapping name -> array. out_shapes: optional name -> shape
        for dynamic outputs (default: the shapes these feeds give). Returns
        (call, outputs): call() runs the model into the arrays of the dict
        `outputs` (raising MccError on failure); the bound input arrays and
        outputs are kept alive by call."""
        handle = self._live()
        values = self._feeds((), dict(feeds))
        device = self._on_device(values)
        ins, keep, _ = self._input_structs(values, device)
        if self._dynamic and out_shapes is None:
            out_shapes = self._output_shapes(ins)
        outs, out_arrays = self._output_structs(out_shapes, device)
        if outs is None:
            raise MccError("an output has a dynamic shape; pass its shape in out_shapes")
        keep += list(out_arrays.values()) + [ins, outs]
        run, rt, ni, no = self.runtime.lib.mcc_run, self.runtime, len(self._in), len(self._out)
        stream = _torch_stream(device, rt)
        if stream is not None:
            on_stream = rt.run_on_stream

            def call(_keep=keep):
                s = on_stream(handle, ins, ni, outs, no, stream())
                if s:
                    rt.check(s, "mcc_run_on_stream")

            return call, out_arrays
        sync = _stream_sync(device)

        def call(_keep=keep):
            sync()
            s = run(handle, ins, ni, outs, no)
            if s:
                rt.check(s, "mcc_run")

        return call, out_arrays

    def _output_structs(self, out_shapes=None, device=None):
        outs = (CTensor * max(1, len(self._out)))()
        arrays = {}
        for i, (name, code, shape) in enumerate(self._out):
            if any(d < 0 for d in shape):
                if not out_shapes or name not in out_shapes:
                    return None, None
                shape = tuple(out_shapes[name])
            dt = DTYPES.get(code)
            if dt is None:
                hint = (" (bfloat16, float8, int4 and the other small types need the ml_dtypes package)"
                        if code == 16 or 17 <= code <= 26 else "")
                raise MccError(f"output {i} ('{name}'): dtype code {code} is not supported by this binding{hint}")
            if device is not None:
                import torch
                t = torch.empty(shape, dtype=torch.from_numpy(np.empty(0, dt)).dtype, device=device)
                arrays[name] = t
                _fill_device(outs[i], t, code, f"output {i} ('{name}')")
                continue
            arr = np.empty(shape, dtype=dt)
            arrays[name] = arr
            _fill(outs[i], arr, code, f"output {i} ('{name}')")
        return outs, arrays

    def _output_shapes(self, ins):
        """{output name: shape} for the input structs `ins` (checked as a run
        would check them)."""
        n = len(self._out)
        infos = (CTensorInfo * max(1, n))()
        self.runtime.check(self.runtime.lib.mcc_model_output_shapes(
            self._live(), ins, len(self._in), infos, n))
        return {name: tuple(infos[i].shape[d] for d in range(infos[i].rank))
                for i, (name, _, _) in enumerate(self._out)}

    def output_shapes(self, feeds):
        """The output shapes a run on `feeds` (name -> array, or anything
        with .shape and .dtype) would give: {output name: tuple of int}.
        Raises MccError for inputs a run would refuse (inconsistent or out
        of bounds dynamic dims, wrong ranks or dtypes)."""
        values = self._feeds((), dict(feeds))
        ins, keep, _ = self._input_structs(values)
        shapes = self._output_shapes(ins)
        del keep
        return shapes

    def run(self, feeds):
        """Runs on a mapping input name -> array; returns {output name: array}."""
        if not isinstance(feeds, Mapping):
            raise TypeError("Model.run takes a dict of input name -> array")
        return self._run(self._feeds((), dict(feeds)))

    def __call__(self, *args, **named):
        """model(x, ...) or model(name=x, ...); returns {output name: array}."""
        return self._run(self._feeds(args, named))

    def _run(self, values):
        handle = self._live()
        lib, rt = self.runtime.lib, self.runtime
        device = self._on_device(values)
        ins, keep, any_torch = self._input_structs(values, device)
        # Dynamic outputs: sized for these inputs (a bad input fails here,
        # with the same message the run would give).
        shapes = self._output_shapes(ins) if self._dynamic else None
        outs, arrays = self._output_structs(shapes, device=device)
        if device is not None and outs is None:
            raise MccError("CUDA tensors in and out need static output shapes")
        if outs is not None:
            stream = _torch_stream(device, rt)
            if stream is not None:
                rt.check(rt.run_on_stream(handle, ins, len(self._in), outs, len(self._out),
                                          stream()))
                return arrays
            _stream_sync(device)()
            rt.check(lib.mcc_run(handle, ins, len(self._in), outs, len(self._out)))
            if device is not None:
                return arrays
        else:  # a dynamic output shape: let the runtime allocate, then copy
            outs = (CTensor * max(1, len(self._out)))()
            rt.check(lib.mcc_run_alloc(handle, ins, len(self._in), outs, len(self._out)))
            arrays = {}
            try:
                for i, (name, code, _) in enumerate(self._out):
                    t = outs[i]
                    shape = tuple(t.shape[d] for d in range(t.rank))
                    dt = DTYPES.get(t.dtype)
                    if dt is None:
                        raise MccError(f"output {i} ('{name}'): dtype code {t.dtype} is not supported "
                                       "by this binding")
                    arr = np.empty(shape, dtype=dt)
                    if arr.nbytes:
                        ctypes.memmove(arr.ctypes.data, t.data, arr.nbytes)
                    arrays[name] = arr
            finally:
                for i in range(len(self._out)):
                    lib.mcc_tensor_free_data(ctypes.byref(outs[i]))
        del keep  # the inputs stayed alive through the call
        if any_torch:
            import torch
            return {k: torch.from_numpy(v) for k, v in arrays.items()}
        return arrays


def _torch_stream(device, rt):
    """For CUDA tensors: a function giving torch's current stream (as a
    CUstream handle), on which the run is ordered like a torch op: it
    starts after the work queued there and torch's later work sees its
    outputs, with no wait on the host. None where the runtime cannot."""
    if device is None or rt.run_on_stream is None:
        return None
    import torch
    return lambda: torch.cuda.current_stream(device).cuda_stream


def _stream_sync(device):
    """The run reads its inputs on its own CUDA stream: work torch queued on
    the current stream (what produced the inputs) must finish first. The
    run itself ends synchronized, so its outputs are ready for torch."""
    if device is None:
        return lambda: None
    import torch
    stream = torch.cuda.current_stream(device)
    return stream.synchronize


def load(path, runtime=None):
    """Loads a model .so written by `mcc compile`. runtime: the path of
    libmccrt.so (default: $MCC_RUNTIME, the repo's build tree, then the
    loader path). Raises MccError when the runtime or the model cannot be
    loaded."""
    return Model(path, runtime)
