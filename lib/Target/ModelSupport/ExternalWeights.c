/*===- ExternalWeights.c - weights kept beside a model .so ----------------===//
 *
 * Linked into every model .so. A model compiled with --weights external
 * keeps its packed weights in "<model>.so.weights" next to the library; this
 * maps that file read-only, once, after checking its size and a checksum
 * of its first and last 64 KiB, so a missing, truncated or foreign file is
 * a load error with a message rather than garbage results; then copies it
 * onto huge pages (HugePages.c).
 *
 *===----------------------------------------------------------------------===*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define HIDDEN __attribute__((visibility("hidden")))
#define MCC_CHECKSUM_WINDOW 65536u
#define EXPORT __attribute__((visibility("default")))

const void *mcc_weights_resident(const void *data, size_t bytes,
                                 int releaseSource);

static pthread_mutex_t weightsLock = PTHREAD_MUTEX_INITIALIZER;
static const void *mapped;
static char modelError[1024];

EXPORT const char *mcc_model_last_error(void) { return modelError; }

/* "message: detail" becomes mcc_model_last_error (for other support code). */
HIDDEN void mcc_model_set_error(const char *message, const char *detail) {
  snprintf(modelError, sizeof modelError, "%s: %s", message, detail);
}

/* FNV-1a over the first and last 64 KiB and the size: cheap at load.
 * `head` and `tail` are the blob's first and last min(size, 64 KiB) bytes
 * (they overlap in a small blob), so a writer that streams the blob never
 * needs it whole. */
HIDDEN uint64_t mcc_weights_checksum_ends(const unsigned char *head,
                                          const unsigned char *tail,
                                          uint64_t size) {
  uint64_t h = 1469598103934665603ull;
  uint64_t n = size < MCC_CHECKSUM_WINDOW ? size : MCC_CHECKSUM_WINDOW;
  for (uint64_t i = 0; i < n; ++i)
    h = (h ^ head[i]) * 1099511628211ull;
  for (uint64_t i = 0; i < n; ++i)
    h = (h ^ tail[i]) * 1099511628211ull;
  for (int i = 0; i < 8; ++i)
    h = (h ^ ((size >> (8 * i)) & 0xff)) * 1099511628211ull;
  return h;
}

HIDDEN uint64_t mcc_weights_checksum(const unsigned char *data, uint64_t size) {
  uint64_t n = size < MCC_CHECKSUM_WINDOW ? size : MCC_CHECKSUM_WINDOW;
  return mcc_weights_checksum_ends(data, data + size - n, size);
}

/* Maps <folder of this .so>/<file>; returns the data or NULL (see
 * mcc_model_last_error). Thread-safe; maps once. */
HIDDEN const void *mcc_weights_open(const char *file, int64_t bytes,
                                    uint64_t checksum) {
  pthread_mutex_lock(&weightsLock);
  if (mapped) {
    pthread_mutex_unlock(&weightsLock);
    return mapped;
  }
  Dl_info info;
  char path[4096];
  if (!dladdr((void *)&mcc_weights_open, &info) || !info.dli_fname) {
    snprintf(modelError, sizeof modelError,
             "cannot find the model library's own path");
    goto fail;
  }
  {
    const char *slash = strrchr(info.dli_fname, '/');
    size_t dirLen = slash ? (size_t)(slash - info.dli_fname) : 0;
    if (dirLen)
      snprintf(path, sizeof path, "%.*s/%s", (int)dirLen, info.dli_fname, file);
    else
      snprintf(path, sizeof path, "%s", file);
  }
  {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      snprintf(modelError, sizeof modelError,
               "weights file %s is missing: a model compiled with --weights "
               "external needs it next to the .so",
               path);
      goto fail;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (int64_t)st.st_size != bytes) {
      snprintf(modelError, sizeof modelError,
               "weights file %s has %lld bytes, the model expects %lld", path,
               (long long)st.st_size, (long long)bytes);
      close(fd);
      goto fail;
    }
    void *data = mmap(NULL, (size_t)bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (data == MAP_FAILED) {
      snprintf(modelError, sizeof modelError, "cannot map weights file %s",
               path);
      goto fail;
    }
    if (mcc_weights_checksum((const unsigned char *)data, (uint64_t)bytes) !=
        checksum) {
      munmap(data, (size_t)bytes);
      snprintf(modelError, sizeof modelError,
               "weights file %s does not belong to this model (checksum "
               "mismatch): recompile, or copy the matching file",
               path);
      goto fail;
    }
    mapped = mcc_weights_resident(data, (size_t)bytes, /*releaseSource=*/1);
  }
  pthread_mutex_unlock(&weightsLock);
  return mapped;
fail:
  pthread_mutex_unlock(&weightsLock);
  return NULL;
}
