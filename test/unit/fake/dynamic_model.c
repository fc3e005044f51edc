/* A hand-written ABI v2 model with dynamic dims, so the runtime's symbol
 * binding is tested end to end without the compiler:
 *   a: float32 [batch, 4], b: float32 [batch, seq]
 *   cat = concat(b, a, axis 1): float32 [batch, seq + 4]
 *   half = 0, 1, 2, ...: int64 [(seq + 1) floordiv 2]
 * batch is bounded to 1..16. run() checks that dims says what the
 * descriptor implies. FAKE_BAD_EXPR makes cat's expression malformed. */
#include "mcc/ModelABI.h"

#include <stddef.h>

static const int64_t aShape[] = {-1, 4}, bShape[] = {-1, -1};
static const int64_t catShape[] = {-1, -1}, halfShape[] = {-1};
static const char *const aDims[] = {"s0", NULL};
static const char *const bDims[] = {"s0", "s1"};
#ifdef FAKE_BAD_EXPR
static const char *const catDims[] = {"s0", "s1 + * 4"};
#else
static const char *const catDims[] = {"s0", "s1 + 4"};
#endif
static const char *const halfDims[] = {"(s1 + 1) floordiv 2"};

static const MccTensorDesc inputs[] = {
    {"a", 1, 2, aShape, aDims},
    {"b", 1, 2, bShape, bDims},
};
static const MccTensorDesc outputs[] = {
    {"cat", 1, 2, catShape, catDims},
    {"half", 7, 1, halfShape, halfDims},
};
static const MccSymbolDesc symbols[] = {
    {"batch", 1, 16},
    {"seq", 1, INT64_MAX},
};

static int32_t run(void **buffers, const int64_t *dims) {
  int64_t batch = dims[0], seq = dims[3];
  if (dims[1] != 4 || dims[2] != batch || dims[4] != batch ||
      dims[5] != seq + 4 || dims[6] != (seq + 1) / 2)
    return 9;
  const float *a = buffers[0], *b = buffers[1];
  float *cat = buffers[2];
  int64_t *half = buffers[3];
  for (int64_t r = 0; r < batch; ++r) {
    for (int64_t c = 0; c < seq; ++c)
      cat[r * (seq + 4) + c] = b[r * seq + c];
    for (int64_t c = 0; c < 4; ++c)
      cat[r * (seq + 4) + seq + c] = a[r * 4 + c];
  }
  for (int64_t i = 0; i < dims[6]; ++i)
    half[i] = i;
  return 0;
}

static const MccModelDescriptor descriptor = {
    MCC_ABI_VERSION, "cpu", "fake", 2, inputs, 2, outputs, 0, run, 2, symbols};

__attribute__((visibility("default"))) const MccModelDescriptor *
mcc_model_descriptor_v2(void) {
  return &descriptor;
}
