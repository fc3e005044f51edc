/*===- HugePages.c - large buffers and the weights on 2 MiB pages ---------===*
 *
 * Linked into every model .so. A CNN's kernels read activations in rows
 * kilobytes apart (a 56 x 56 image's channel rows are 12.5 KiB apart) and
 * a model's weights stream once per run: on 4 KiB pages nearly every such
 * row or panel is a TLB miss. Large intermediate buffers and a CPU model's
 * weights live on transparent huge pages instead (docs/design/0023):
 * resnet50 ran 6% faster with both, bert-base 2%.
 *
 * Linux hands out huge pages for anonymous memory that asks for them
 * (MADV_HUGEPAGE) where transparent_hugepage is "always" or "madvise";
 * elsewhere the memory is ordinary and everything still works.
 *
 *===----------------------------------------------------------------------===*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HIDDEN __attribute__((visibility("hidden")))

static const size_t kHugePage = (size_t)2 << 20;

/* Whether the kernel grants huge pages on request: "[never]" refuses
 * them, so a copy of the weights would only cost memory. */
static int hugePagesOffered(void) {
  static int offered = -1;
  if (offered >= 0)
    return offered;
  char mode[128] = {0};
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f) {
    if (!fgets(mode, sizeof mode, f))
      mode[0] = 0;
    fclose(f);
  }
  offered = f && !strstr(mode, "[never]");
  return offered;
}

/* `bytes` (a multiple of 64) at a 2 MiB boundary, rounded up to whole huge
 * pages and advised onto them; NULL if out of memory. Free with free(). */
HIDDEN void *mcc_huge_alloc(size_t bytes) {
  size_t length = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void *p = NULL;
  if (posix_memalign(&p, kHugePage, length))
    return NULL;
  madvise(p, length, MADV_HUGEPAGE);
  return p;
}

static pthread_mutex_t residentLock = PTHREAD_MUTEX_INITIALIZER;
static const void *residentSource, *resident;

/* The weights blob `data` (mapped from the .so or from the weights file),
 * copied once onto huge pages; `data` itself where they are not offered,
 * memory is short, or MCC_MAP_WEIGHTS=1 asks to keep the mapping (whose
 * pages processes share through the page cache). `releaseSource` unmaps a
 * blob mapped from the weights file after the copy; an embedded blob's
 * pages are dropped from this process instead (they stay in the file). */
HIDDEN const void *mcc_weights_resident(const void *data, size_t bytes,
                                        int releaseSource) {
  pthread_mutex_lock(&residentLock);
  if (residentSource == data) {
    pthread_mutex_unlock(&residentLock);
    return resident;
  }
  const char *keep = getenv("MCC_MAP_WEIGHTS");
  const void *result = data;
  if (bytes >= kHugePage && !(keep && strcmp(keep, "1") == 0) &&
      hugePagesOffered()) {
    void *copy = mcc_huge_alloc(bytes);
    if (copy) {
      /* Map the source's pages in one call, not a fault per 4 KiB page
       * (a fifth of the copy's time); Linux 5.14 and later. */
#ifdef MADV_POPULATE_READ
      uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
      uintptr_t from = (uintptr_t)data / page * page;
      madvise((void *)from, (uintptr_t)data + bytes - from, MADV_POPULATE_READ);
#endif
      memcpy(copy, data, bytes);
      result = copy;
      if (releaseSource) {
        munmap((void *)data, bytes);
      } else {
        /* The whole pages inside the embedded blob. */
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        uintptr_t begin = ((uintptr_t)data + page - 1) / page * page;
        uintptr_t end = ((uintptr_t)data + bytes) / page * page;
        if (end > begin)
          madvise((void *)begin, end - begin, MADV_DONTNEED);
      }
    }
  }
  residentSource = data;
  resident = result;
  pthread_mutex_unlock(&residentLock);
  return result;
}
