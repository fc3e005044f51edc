/* A model as ABI v1 wrote it (no dims, no symbols): the runtime must refuse
 * it by version, not crash reading fields v1 did not have. */
#include <stdint.h>

typedef struct {
  const char *name;
  int64_t dtype, rank;
  const int64_t *shape;
} V1TensorDesc;

typedef struct {
  int64_t abi_version;
  const char *target, *arch;
  int64_t num_inputs;
  const V1TensorDesc *inputs;
  int64_t num_outputs;
  const V1TensorDesc *outputs;
  int64_t weight_bytes;
  int32_t (*run)(void **);
} V1Descriptor;

static const int64_t shape[] = {2};
static const V1TensorDesc x = {"x", 1, 1, shape};
static int32_t run(void **buffers) { return buffers ? 0 : 1; }
static const V1Descriptor descriptor = {1, "cpu", "fake", 1, &x, 1, &x, 0, run};

__attribute__((visibility("default"))) const V1Descriptor *
mcc_model_descriptor_v1(void) {
  return &descriptor;
}
