/* The contract between a model .so written by mcc and the runtime.
 *
 * A model exports one symbol, mcc_model_descriptor_v<MCC_ABI_VERSION>,
 * returning a pointer to a static MccModelDescriptor. The codegen writes
 * this struct as LLVM IR constants, so its layout is fixed: every field is 8
 * bytes wide and the order never changes within an ABI version.
 * abi_version stays the first field in every version, so a runtime can name
 * the version of a model it refuses.
 *
 * Version 2 (docs/design/0010) adds dynamic dims: dim_exprs, the symbols
 * they are expressions of, and the run function's dims argument.
 */
#ifndef MCC_MODELABI_H
#define MCC_MODELABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MCC_ABI_VERSION 2
#define MCC_DESCRIPTOR_SYMBOL "mcc_model_descriptor_v2"
/* The symbols of earlier versions, looked up only to say why a model is
 * refused. */
#define MCC_DESCRIPTOR_SYMBOL_V1 "mcc_model_descriptor_v1"

typedef struct MccTensorDesc {
  const char *name;
  int64_t dtype; /* onnx.TensorProto.DataType */
  int64_t rank;
  const int64_t *shape; /* -1 for a dynamic dim */
  /* NULL for a fully static tensor; else `rank` strings, NULL where the dim
   * is static and otherwise the dim as an affine expression over the
   * symbols in MLIR syntax ("s0", "s0 * 128", "(s1 + 1) floordiv 2"; sK is
   * symbols[K]). An input's dynamic dim is always one symbol. */
  const char *const *dim_exprs;
} MccTensorDesc;

typedef struct MccSymbolDesc {
  const char *name; /* the dim_param, or "<input>.<axis>" */
  int64_t lo;
  int64_t hi; /* INT64_MAX when unbounded */
} MccSymbolDesc;

/* buffers: inputs then outputs, in descriptor order. dims: the actual shapes
 * of all inputs, then of all outputs, concatenated (rank values each).
 * Returns 0 on success. */
typedef int32_t (*MccRunFn)(void **buffers, const int64_t *dims);

typedef struct MccModelDescriptor {
  int64_t abi_version;
  const char *target; /* "cpu" or "cuda" */
  const char *arch;   /* e.g. "x86-64-v3" or the host CPU name */
  int64_t num_inputs;
  const MccTensorDesc *inputs;
  int64_t num_outputs;
  const MccTensorDesc *outputs;
  int64_t weight_bytes;
  MccRunFn run;
  int64_t num_symbols;
  const MccSymbolDesc *symbols;
} MccModelDescriptor;

typedef const MccModelDescriptor *(*MccDescriptorFn)(void);

#ifdef __cplusplus
}
#endif

#endif /* MCC_MODELABI_H */
