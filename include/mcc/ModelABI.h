/* The contract between a model .so written by mcc and the runtime.
 *
 * A model exports one symbol, mcc_model_descriptor_v1, returning a pointer to
 * a static MccModelDescriptor. The codegen writes this struct as LLVM IR
 * constants, so its layout is fixed: every field is 8 bytes wide and the
 * order never changes within an ABI version.
 */
#ifndef MCC_MODELABI_H
#define MCC_MODELABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MCC_ABI_VERSION 1
#define MCC_DESCRIPTOR_SYMBOL "mcc_model_descriptor_v1"

typedef struct MccTensorDesc {
  const char *name;
  int64_t dtype; /* onnx.TensorProto.DataType */
  int64_t rank;
  const int64_t *shape;
} MccTensorDesc;

/* buffers: inputs then outputs, in descriptor order. Returns 0 on success. */
typedef int32_t (*MccRunFn)(void **buffers);

typedef struct MccModelDescriptor {
  int64_t abi_version;
  const char *target; /* "cpu" */
  const char *arch;   /* e.g. "x86-64-v3" or the host CPU name */
  int64_t num_inputs;
  const MccTensorDesc *inputs;
  int64_t num_outputs;
  const MccTensorDesc *outputs;
  int64_t weight_bytes;
  MccRunFn run;
} MccModelDescriptor;

typedef const MccModelDescriptor *(*MccDescriptorFn)(void);

#ifdef __cplusplus
}
#endif

#endif /* MCC_MODELABI_H */
