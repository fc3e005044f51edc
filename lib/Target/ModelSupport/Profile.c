/*===- Profile.c - per-op time of a CPU model's runs (mcc bench --kernels) -===*
 *
 * The CPU pipeline (mcc-cpu-profile-marks) calls mcc_profile_mark(i) before
 * the i-th op of forward (a tiled loop nest, a product, a copy) and
 * mcc_profile_end() before it returns; it also writes the ops' labels into
 * the model as one string table, mcc_profile_labels ("label\0label\0...\0").
 * While profiling is off a mark is one relaxed load and a return. While it
 * is on, the time from one mark to the next is added to the earlier mark's
 * op (so an op's time includes the fork and join of its parallel region and
 * the allocations up to the next op), and each end counts one run.
 *
 * The marks of one run come from the thread that called forward, so the
 * open segment is thread-local; the totals are shared and added atomically,
 * so concurrent runs of one model profile together.
 *
 *===----------------------------------------------------------------------===*/

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

/* Written by the compiler; weak so that the support library links alone,
 * hidden so that it binds to this model's table even where another model
 * linked into the same program exports one of the same name. */
extern const char mcc_profile_labels[]
    __attribute__((weak, visibility("hidden")));

static int profiling;     /* atomic */
static int64_t runs;      /* atomic */
static int64_t numLabels; /* set once, under the first enable */
static int64_t *totalNs;  /* numLabels entries, atomic adds */
static int64_t *counts;
static __thread int64_t openOp = -1;
static __thread int64_t openSince;

static int64_t nowNs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static const char *labelAt(int64_t i) {
  const char *p = mcc_profile_labels;
  for (int64_t k = 0; p && *p && k < i; ++k)
    p += strlen(p) + 1;
  return p && *p ? p : "?";
}

static void closeOpen(int64_t now) {
  if (openOp >= 0 && openOp < numLabels) {
    __atomic_fetch_add(&totalNs[openOp], now - openSince, __ATOMIC_RELAXED);
    __atomic_fetch_add(&counts[openOp], 1, __ATOMIC_RELAXED);
  }
  openOp = -1;
}

void mcc_profile_mark(int64_t op) {
  if (!__atomic_load_n(&profiling, __ATOMIC_RELAXED)) {
    openOp = -1;
    return;
  }
  int64_t now = nowNs();
  closeOpen(now);
  openOp = op;
  openSince = now;
}

void mcc_profile_end(void) {
  if (!__atomic_load_n(&profiling, __ATOMIC_RELAXED)) {
    openOp = -1;
    return;
  }
  closeOpen(nowNs());
  __atomic_fetch_add(&runs, 1, __ATOMIC_RELAXED);
}

/* 1: start (or restart) the profile, clearing it; 0: stop, keeping what it
 * holds. Not to be called while the model runs. */
EXPORT void mcc_cpu_set_profiling(int on) {
  __atomic_store_n(&profiling, 0, __ATOMIC_SEQ_CST);
  if (!on)
    return;
  if (!totalNs && mcc_profile_labels) {
    int64_t n = 0;
    for (const char *p = mcc_profile_labels; *p; p += strlen(p) + 1)
      ++n;
    totalNs = (int64_t *)calloc((size_t)n + 1, sizeof(int64_t));
    counts = (int64_t *)calloc((size_t)n + 1, sizeof(int64_t));
    if (totalNs && counts)
      numLabels = n;
  }
  for (int64_t i = 0; i < numLabels; ++i)
    totalNs[i] = counts[i] = 0;
  runs = 0;
  __atomic_store_n(&profiling, numLabels > 0, __ATOMIC_SEQ_CST);
}

/* The profile since it was started, in the CUDA shim's format: "runs\n",
 * then "times\tmilliseconds\tlabel\n" per op that ran (totals over the
 * runs; the label starts with the op's position, "#12 ", since two ops
 * may do the same thing). Writes at most `capacity` bytes (NUL included)
 * and returns the length of the whole text. */
EXPORT int64_t mcc_cpu_profile_text(char *out, int64_t capacity) {
  size_t size = 64, length = 0;
  char *text = (char *)malloc(size);
  if (!text)
    return 0;
  length =
      (size_t)snprintf(text, size, "%lld\n",
                       (long long)__atomic_load_n(&runs, __ATOMIC_RELAXED));
  for (int64_t i = 0; i < numLabels; ++i) {
    int64_t n = __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
    if (!n)
      continue;
    const char *label = labelAt(i);
    size_t need = strlen(label) + 80;
    if (length + need > size) {
      size = (length + need) * 2;
      char *grown = (char *)realloc(text, size);
      if (!grown)
        break;
      text = grown;
    }
    length += (size_t)snprintf(
        text + length, size - length, "%lld\t%.6f\t#%lld %s\n", (long long)n,
        (double)__atomic_load_n(&totalNs[i], __ATOMIC_RELAXED) / 1e6,
        (long long)i, label);
  }
  if (out && capacity > 0) {
    size_t n = length < (size_t)capacity - 1 ? length : (size_t)capacity - 1;
    memcpy(out, text, n);
    out[n] = 0;
  }
  free(text);
  return (int64_t)length;
}
