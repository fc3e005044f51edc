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
 * few hundred requests, and the tiles of a parallel loop make theirs at the
 * same moment; under a mutex, two threads' tiles put each other to sleep in
 * the kernel, and a squeeze-excite product of 21 small tiles ran 8 times
 * slower at two threads than at one) and is released when the library is
 * unloaded. Blocks of half a MiB and more come from huge pages
 * (HugePages.c).
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

/* Blocks carry their size in a 64-byte header, so the payload stays 64-byte
 * aligned and free() knows what it returns. */
void *_mlir_memref_to_llvm_alloc(size_t size) {
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
  lock();
  for (size_t i = 0; i < cache.count; ++i)
    free(cache.block[i]);
  cache.count = cache.bytes = 0;
  unlock();
}
