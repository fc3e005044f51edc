/* mcc runtime C API: load a model .so written by `mcc compile` and run it.
 *
 * Every call returns an mcc_status; on failure, mcc_last_error() returns a
 * message for the calling thread that says what went wrong and where. A
 * loaded model is immutable, so one mcc_model may be run from several
 * threads at once; each run uses its own scratch memory.
 */
#ifndef MCC_MCC_H
#define MCC_MCC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mcc_status {
  MCC_OK = 0,
  MCC_ERROR_INVALID_ARGUMENT = 1, /* null pointer, bad index, bad name */
  MCC_ERROR_LOAD = 2,             /* dlopen failed or not an mcc model */
  MCC_ERROR_ABI = 3,              /* model built for another ABI/target */
  MCC_ERROR_SHAPE = 4,            /* input shape differs from the model's */
  MCC_ERROR_DTYPE = 5,            /* input dtype differs from the model's */
  MCC_ERROR_OUT_OF_MEMORY = 6,
  MCC_ERROR_RUN = 7,
} mcc_status;

typedef enum mcc_dtype {
  MCC_FLOAT32 = 1,
  MCC_UINT8 = 2,
  MCC_INT8 = 3,
  MCC_UINT16 = 4,
  MCC_INT16 = 5,
  MCC_INT32 = 6,
  MCC_INT64 = 7,
  MCC_BOOL = 9,
  MCC_FLOAT16 = 10,
  MCC_FLOAT64 = 11,
  MCC_UINT32 = 12,
  MCC_UINT64 = 13,
  /* 2 bytes: the upper half of a float32 */
  MCC_BFLOAT16 = 16,
  /* The small types take one byte per element, as numpy's ml_dtypes has
   * them: float8 bit patterns; 4- and 2-bit types in the low bits (written
   * with the upper bits zero, read ignoring them). See docs/design/0009. */
  MCC_FLOAT8E4M3FN = 17,
  MCC_FLOAT8E4M3FNUZ = 18,
  MCC_FLOAT8E5M2 = 19,
  MCC_FLOAT8E5M2FNUZ = 20,
  MCC_UINT4 = 21,
  MCC_INT4 = 22,
  MCC_FLOAT4E2M1 = 23,
  MCC_FLOAT8E8M0 = 24,
  MCC_UINT2 = 25,
  MCC_INT2 = 26,
} mcc_dtype; /* values follow onnx.TensorProto.DataType */

#define MCC_MAX_RANK 8

/* A model input or output. A dynamic dim (docs/design/0010) has shape -1
 * and a name in dim_names: the symbol for an input dim ("batch"), the
 * expression over symbols for an output dim ("batch * 128"). dim_names is
 * NULL for a static dim; the strings live as long as the model. */
typedef struct mcc_tensor_info {
  const char *name;
  mcc_dtype dtype;
  int32_t rank;
  int64_t shape[MCC_MAX_RANK];
  const char *dim_names[MCC_MAX_RANK];
} mcc_tensor_info;

/* A tensor the caller owns (or one mcc allocated; see mcc_run_alloc). */
typedef struct mcc_tensor {
  void *data;
  mcc_dtype dtype;
  int32_t rank;
  int64_t shape[MCC_MAX_RANK];
} mcc_tensor;

typedef struct mcc_model mcc_model;

/* Message for the last failed call on this thread ("" if none). */
const char *mcc_last_error(void);
const char *mcc_status_string(mcc_status status);
size_t mcc_dtype_size(mcc_dtype dtype);
const char *mcc_dtype_name(mcc_dtype dtype);

mcc_status mcc_model_load(const char *path, mcc_model **out_model);
void mcc_model_free(mcc_model *model);

/* "cpu" or "cuda", and the architecture the code was built for. */
const char *mcc_model_target(const mcc_model *model);
const char *mcc_model_arch(const mcc_model *model);
/* Precision of matrix products: "fp32", or for cuda models compiled with
 * --precision, "tf32x3" or "tf32". */
const char *mcc_model_precision(const mcc_model *model);

size_t mcc_model_num_inputs(const mcc_model *model);
size_t mcc_model_num_outputs(const mcc_model *model);
mcc_status mcc_model_input_info(const mcc_model *model, size_t index,
                                mcc_tensor_info *out_info);
mcc_status mcc_model_output_info(const mcc_model *model, size_t index,
                                 mcc_tensor_info *out_info);

/* The symbols dynamic dims are made of, with the bounds every run is
 * checked against (lo <= value <= hi; hi is INT64_MAX when unbounded). A
 * static model has none. name lives as long as the model; any out pointer
 * may be NULL. */
size_t mcc_model_num_symbols(const mcc_model *model);
mcc_status mcc_model_symbol_info(const mcc_model *model, size_t index,
                                 const char **name, int64_t *lo, int64_t *hi);

/* The output shapes a run on `inputs` (their dtypes and shapes; data is not
 * read) would have: outputs[i] is filled like mcc_model_output_info, with
 * the dynamic dims evaluated. Fails as mcc_run would on the inputs. */
mcc_status mcc_model_output_shapes(const mcc_model *model,
                                   const mcc_tensor *inputs, size_t num_inputs,
                                   mcc_tensor_info *outputs,
                                   size_t num_outputs);

/* Threads used by one run (0: the OpenMP default, all cores). Affects the
 * calling thread's later runs. */
mcc_status mcc_set_num_threads(int num_threads);

/* Runs with caller-provided buffers: inputs[i] and outputs[i] in the order
 * of mcc_model_input_info / mcc_model_output_info. Shapes and dtypes are
 * checked against the model's signature: each symbol takes its value from
 * the inputs, which must agree on it and keep it within its bounds, and
 * the outputs must have the shapes that follow (mcc_model_output_shapes). */
mcc_status mcc_run(const mcc_model *model, const mcc_tensor *inputs,
                   size_t num_inputs, mcc_tensor *outputs, size_t num_outputs);

/* Like mcc_run, but allocates the outputs; release each output's data with
 * mcc_tensor_free_data. */
mcc_status mcc_run_alloc(const mcc_model *model, const mcc_tensor *inputs,
                         size_t num_inputs, mcc_tensor *outputs,
                         size_t num_outputs);
void mcc_tensor_free_data(mcc_tensor *tensor);

/* Like mcc_run, stream-ordered, for a CUDA model whose inputs and outputs
 * are all in device memory (of the primary context, such as PyTorch's
 * CUDA tensors): the run starts after the work already queued on
 * `cuda_stream` (a CUstream / cudaStream_t; NULL is the legacy default
 * stream), the work queued there afterwards sees its outputs, and the call
 * returns without waiting for the GPU. A failure of the GPU work itself
 * shows at the caller's next synchronization. Host buffers are refused
 * (MCC_ERROR_INVALID_ARGUMENT), as are models of other targets. */
mcc_status mcc_run_on_stream(const mcc_model *model, const mcc_tensor *inputs,
                             size_t num_inputs, mcc_tensor *outputs,
                             size_t num_outputs, void *cuda_stream);

/* GPU timing (models compiled with --target cuda; other targets return
 * MCC_ERROR_INVALID_ARGUMENT). The device time of the calling thread's last
 * mcc_run of this model, in milliseconds, measured by CUDA events around
 * its kernels and library calls (the input and output copies excluded). */
mcc_status mcc_model_last_run_device_ms(const mcc_model *model, double *ms);

/* Per-kernel (GPU) or per-op (CPU) profile: enable = 1 starts it (clearing
 * what it holds), 0 stops it (keeping what it holds); not while the model
 * runs. On the GPU every
 * launch of a run is then preceded by a CUDA event (a node in the run's
 * CUDA graph), so runs take slightly longer; the graphs are recaptured at
 * each switch. On the CPU each op of the model's forward function (a
 * parallel loop nest, a product, a copy) is timed by the wall clock from
 * its start to the next op's. */
mcc_status mcc_model_set_kernel_profiling(mcc_model *model, int enable);

/* What ran, by name. GPU: a generated kernel, a product ("gemm <how> m= n=
 * k=") or a copy, with its launches and total device time over the
 * profiled runs. CPU: "#<position> <what> <output shape> [<ONNX nodes>]"
 * (what: matmul, map or reduce with the math it calls, copy, ...), with
 * the times it ran and its total wall time. */
typedef struct mcc_kernel_time {
  const char *name; /* valid until the next call on this model */
  int64_t launches;
  double total_ms;
} mcc_kernel_time;

/* Fills at most `capacity` entries, longest total first; *count receives
 * the number of entries there are and *runs the number of profiled runs. */
mcc_status mcc_model_kernel_profile(const mcc_model *model,
                                    mcc_kernel_time *out, size_t capacity,
                                    size_t *count, int64_t *runs);

#ifdef __cplusplus
}
#endif

#endif /* MCC_MCC_H */
