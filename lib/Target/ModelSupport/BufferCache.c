/*===- BufferCache.c - reuse of intermediate buffers between runs --------===*
 *
 * A CPU model's forward function allocates its intermediate buffers (MLIR's
 * finalize-memref-to-llvm with use-generic-functions calls these hooks) and
 * frees them before it returns. Through malloc, every large buffer is a fresh
 * mmap and every page of it a page fault, each run again: about a tenth of
 * bert-base's time. Freed blocks are kept instead in a small cache and handed
 * back for the next request of the same size, which the next run makes in
 * the same order. The cache belongs to this model library (one per loaded
 * .so, shared by the threads that run it, under a spin lock: a run makes a
 * few hundred requests) and is released when the library is unloaded.
 * Blocks of half a MiB and more come from huge pages (HugePages.c).
 *
 * The tiles of a parallel loop allocate and free their small buffers (a C
 * tile, a padded copy) at the same moment on every thread: under one mutex,
 * two threads put each other to sleep in the kernel, and a squeeze-excite
 * product of 21 tiles ran 8 times slower at two threads than at one; under
 * the spin lock, 3 times, 40% of it spinning. Blocks up to 64 KiB are
 * therefore kept per thread first (a few, freed when the thread exits).
 *
 *===----------------------------------------------------------------------===*/

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

enum { kSlots = 128, kHeader = 64 };
/* From this size on a block is rounded up to whole 2 MiB pages: a 56 x 56
 * image of 64 channels (784 KiB) is read in rows 12.5 KiB apart. */
static const size_t kHugeMin = (size_t)512 << 10;

void *mcc_huge_alloc(size_t bytes);
/* At most this much is kept; bigger surpluses go back to malloc. */
static const size_t kMaxCachedBytes = (size_t)2 << 30;

static struct {
  atomic_flag busy;
  void *block[kSlots];
  size_t size[kSlots];
  size_t count, bytes;
} cache = {ATOMIC_FLAG_INIT, {0}, {0}, 0, 0};

/* The cache's critical sections are a scan of at most kSlots entries. */
static void lock(void) {
  while (atomic_flag_test_and_set_explicit(&cache.busy, memory_order_acquire))
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    ;
#endif
}

static void unlock(void) {
  atomic_flag_clear_explicit(&cache.busy, memory_order_release);
}

/* The calling thread's own blocks of at most kLocalMax bytes. */
enum { kLocalSlots = 16 };
static const size_t kLocalMax = (size_t)64 << 10;
typedef struct {
  void *block[kLocalSlots];
  size_t size[kLocalSlots];
  size_t count;
} LocalCache;
static __thread LocalCache *local;
static pthread_key_t localKey; /* frees a thread's blocks when it exits */
static pthread_once_t localOnce = PTHREAD_ONCE_INIT;
static int localReady;

static void releaseLocal(void *p) {
  LocalCache *c = (LocalCache *)p;
  for (size_t i = 0; i < c->count; ++i)
    free(c->block[i]);
  free(c);
}

static void makeLocalKey(void) {
  localReady = pthread_key_create(&localKey, releaseLocal) == 0;
}

/* The thread's cache, made on first use (NULL if that fails). */
static LocalCache *localCache(void) {
  if (local)
    return local;
  pthread_once(&localOnce, makeLocalKey);
  if (!localReady)
    return NULL;
  LocalCache *c = (LocalCache *)calloc(1, sizeof(LocalCache));
  if (c && pthread_setspecific(localKey, c) != 0) {
    free(c);
    c = NULL;
  }
  return local = c;
}

/* Blocks carry their size in a 64-byte header, so the payload stays 64-byte
 * aligned and free() knows what it returns. */
void *_mlir_memref_to_llvm_alloc(size_t size) {
  LocalCache *c = size <= kLocalMax ? localCache() : NULL;
  for (size_t i = c ? c->count : 0; i-- > 0;) {
    if (c->size[i] != size)
      continue;
    char *raw = (char *)c->block[i];
    --c->count;
    c->block[i] = c->block[c->count];
    c->size[i] = c->size[c->count];
    return raw + kHeader;
  }
  lock();
  for (size_t i = cache.count; i-- > 0;) {
    if (cache.size[i] != size)
      continue;
    char *raw = (char *)cache.block[i];
    cache.bytes -= size;
    --cache.count;
    cache.block[i] = cache.block[cache.count];
    cache.size[i] = cache.size[cache.count];
    unlock();
    return raw + kHeader;
  }
  unlock();
  size_t bytes = (size + 2 * kHeader - 1) / kHeader * kHeader;
  char *raw = bytes >= kHugeMin ? (char *)mcc_huge_alloc(bytes)
                                : (char *)aligned_alloc(kHeader, bytes);
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
  return p ? (void *)(((uintptr_t)p + alignment - 1) &
                      ~(uintptr_t)(alignment - 1))
           : NULL;
}

void _mlir_memref_to_llvm_free(void *p) {
  if (!p)
    return;
  char *raw = (char *)p - kHeader;
  size_t size = *(size_t *)raw;
  LocalCache *c = size <= kLocalMax ? localCache() : NULL;
  if (c && c->count < kLocalSlots) {
    c->block[c->count] = raw;
    c->size[c->count++] = size;
    return;
  }
  lock();
  if (cache.count < kSlots && cache.bytes + size <= kMaxCachedBytes) {
    cache.block[cache.count] = raw;
    cache.size[cache.count++] = size;
    cache.bytes += size;
    raw = NULL;
  }
  unlock();
  free(raw);
}

__attribute__((destructor)) static void releaseBufferCache(void) {
  /* Other threads' own blocks are lost with the library: at most
   * kLocalSlots blocks of kLocalMax bytes each. */
  if (localReady)
    pthread_key_delete(localKey);
  if (local) {
    releaseLocal(local);
    local = NULL;
  }
  lock();
  for (size_t i = 0; i < cache.count; ++i)
    free(cache.block[i]);
  cache.count = cache.bytes = 0;
  unlock();
}
