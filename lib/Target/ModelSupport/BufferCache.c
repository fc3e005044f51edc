/*===- BufferCache.c - reuse of intermediate buffers between runs --------===*
 *
 * A CPU model's forward function allocates its intermediate buffers (MLIR's
 * finalize-memref-to-llvm with use-generic-functions calls these hooks) and
 * frees them before it returns. Through malloc, every large buffer is a fresh
 * mmap and every page of it a page fault, each run again: about a tenth of
 * bert-base's time. Freed blocks are kept instead in a small per-thread cache
 * and handed back for the next request of the same size, which the next run
 * makes in the same order. A thread's cache is released when it exits.
 *
 *===----------------------------------------------------------------------===*/

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

enum { kSlots = 64, kHeader = 64 };
/* Cache at most this much per thread; bigger surpluses go back to malloc. */
static const size_t kMaxCachedBytes = (size_t)2 << 30;

typedef struct {
  void *block[kSlots];
  size_t size[kSlots];
  size_t count, bytes;
} BufferCache;

static pthread_key_t cacheKey;
static pthread_once_t cacheOnce = PTHREAD_ONCE_INIT;

static void releaseCache(void *p) {
  BufferCache *c = (BufferCache *)p;
  for (size_t i = 0; i < c->count; ++i)
    free(c->block[i]);
  free(c);
}

static void makeKey(void) { pthread_key_create(&cacheKey, releaseCache); }

static BufferCache *threadCache(void) {
  pthread_once(&cacheOnce, makeKey);
  BufferCache *c = (BufferCache *)pthread_getspecific(cacheKey);
  if (!c) {
    c = (BufferCache *)calloc(1, sizeof(BufferCache));
    if (c && pthread_setspecific(cacheKey, c) != 0) {
      free(c);
      c = NULL;
    }
  }
  return c;
}

/* Blocks carry their size in a 64-byte header, so the payload stays 64-byte
 * aligned and free() knows what it returns. */
void *_mlir_memref_to_llvm_alloc(size_t size) {
  BufferCache *c = threadCache();
  if (c) {
    for (size_t i = c->count; i-- > 0;) {
      if (c->size[i] != size)
        continue;
      char *raw = (char *)c->block[i];
      c->bytes -= size;
      c->block[i] = c->block[--c->count];
      c->size[i] = c->size[c->count];
      return raw + kHeader;
    }
  }
  char *raw = (char *)aligned_alloc(kHeader, (size + 2 * kHeader - 1) /
                                                 kHeader * kHeader);
  if (!raw)
    return NULL;
  *(size_t *)raw = size;
  return raw + kHeader;
}

void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size) {
  /* Payloads are 64-byte aligned; larger alignments are not requested by
   * mcc's pipelines, but stay correct through over-allocation. */
  if (alignment <= kHeader)
    return _mlir_memref_to_llvm_alloc(size);
  char *p = (char *)_mlir_memref_to_llvm_alloc(size + alignment);
  return p ? (void *)(((uintptr_t)p + alignment - 1) & ~(uintptr_t)(alignment - 1))
           : NULL;
}

void _mlir_memref_to_llvm_free(void *p) {
  if (!p)
    return;
  char *raw = (char *)p - kHeader;
  size_t size = *(size_t *)raw;
  BufferCache *c = threadCache();
  if (c && c->count < kSlots && c->bytes + size <= kMaxCachedBytes) {
    c->block[c->count] = raw;
    c->size[c->count++] = size;
    c->bytes += size;
    return;
  }
  free(raw);
}
