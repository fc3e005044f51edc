/*===- BufferCache.c - reuse of intermediate buffers between runs --------===*
 *
 * A CPU model's forward function allocates its intermediate buffers (MLIR's
 * finalize-memref-to-llvm with use-generic-functions calls these hooks) and
 * frees them before it returns. Through malloc, every large buffer is a fresh
 * mmap and every page of it a page fault, each run again: about a tenth of
 * bert-base's time. Freed blocks are kept instead in a small cache and handed
 * back for the next request of the same size, which the next run makes in
 * the same order. The cache belongs to this model library (one per loaded
 * .so, shared by the threads that run it: a run makes a few hundred
 * requests) and is released when the library is unloaded. Blocks of half a
 * MiB and more come from huge pages (HugePages.c).
 *
 * The tiles of a parallel loop allocate and free their small buffers (a C
 * tile, a padded copy) at the same moment on every thread: under one mutex,
 * two threads put each other to sleep in the kernel, and a squeeze-excite
 * product of 21 tiles ran 8 times slower at two threads than at one; under
 * one spin lock, 3 times, 40% of it spinning. Blocks up to 64 KiB are
 * therefore kept first in a cache per OpenMP thread number, each under its
 * own spin lock (threads of concurrent runs that share a number share it
 * safely). Not per thread: a thread's cache would need a destructor at
 * thread exit, which could run after the library is gone (design 0006).
 *
 *===----------------------------------------------------------------------===*/

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

/* A cache's critical sections are a scan of its few entries. */
static void lock(atomic_flag *busy) {
  while (atomic_flag_test_and_set_explicit(busy, memory_order_acquire))
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    ;
#endif
}

static void unlock(atomic_flag *busy) {
  atomic_flag_clear_explicit(busy, memory_order_release);
}

static struct {
  atomic_flag busy;
  void *block[kSlots];
  size_t size[kSlots];
  size_t count, bytes;
} cache = {ATOMIC_FLAG_INIT, {0}, {0}, 0, 0};

/* Caches of blocks of at most kLocalMax bytes, one per OpenMP thread
 * number (modulo kLocalCaches), each on its own cache lines. */
enum { kLocalCaches = 16, kLocalSlots = 16 };
static const size_t kLocalMax = (size_t)64 << 10;
typedef struct {
  _Alignas(64) atomic_flag busy;
  void *block[kLocalSlots];
  size_t size[kLocalSlots];
  size_t count;
} LocalCache;
static LocalCache locals[kLocalCaches];

/* From the OpenMP runtime when the model links it (CPU models do). */
extern int omp_get_thread_num(void) __attribute__((weak));

static LocalCache *localCache(void) {
  unsigned t = omp_get_thread_num ? (unsigned)omp_get_thread_num() : 0;
  return &locals[t % kLocalCaches];
}

/* Blocks carry their size in a 64-byte header, so the payload stays 64-byte
 * aligned and free() knows what it returns. */
void *_mlir_memref_to_llvm_alloc(size_t size) {
  if (size <= kLocalMax) {
    LocalCache *c = localCache();
    lock(&c->busy);
    for (size_t i = c->count; i-- > 0;) {
      if (c->size[i] != size)
        continue;
      char *raw = (char *)c->block[i];
      --c->count;
      c->block[i] = c->block[c->count];
      c->size[i] = c->size[c->count];
      unlock(&c->busy);
      return raw + kHeader;
    }
    unlock(&c->busy);
  }
  lock(&cache.busy);
  for (size_t i = cache.count; i-- > 0;) {
    if (cache.size[i] != size)
      continue;
    char *raw = (char *)cache.block[i];
    cache.bytes -= size;
    --cache.count;
    cache.block[i] = cache.block[cache.count];
    cache.size[i] = cache.size[cache.count];
    unlock(&cache.busy);
    return raw + kHeader;
  }
  unlock(&cache.busy);
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
  if (size <= kLocalMax) {
    LocalCache *c = localCache();
    lock(&c->busy);
    if (c->count < kLocalSlots) {
      c->block[c->count] = raw;
      c->size[c->count++] = size;
      raw = NULL;
    }
    unlock(&c->busy);
    if (!raw)
      return;
  }
  lock(&cache.busy);
  if (cache.count < kSlots && cache.bytes + size <= kMaxCachedBytes) {
    cache.block[cache.count] = raw;
    cache.size[cache.count++] = size;
    cache.bytes += size;
    raw = NULL;
  }
  unlock(&cache.busy);
  free(raw);
}

__attribute__((destructor)) static void releaseBufferCache(void) {
  for (size_t l = 0; l < kLocalCaches; ++l) {
    LocalCache *c = &locals[l];
    lock(&c->busy);
    for (size_t i = 0; i < c->count; ++i)
      free(c->block[i]);
    c->count = 0;
    unlock(&c->busy);
  }
  lock(&cache.busy);
  for (size_t i = 0; i < cache.count; ++i)
    free(cache.block[i]);
  cache.count = cache.bytes = 0;
  unlock(&cache.busy);
}
