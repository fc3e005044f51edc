// One core's f32 FMA peak, for the CPU benchmark's "how far from the
// limit": twelve independent accumulators per width (enough to cover the
// FMA latency on two pipes), no memory traffic. Not a test.
//
//   gcc -O2 -march=native -o /tmp/cpu_fma_peak scripts/cpu_fma_peak.c
//   /tmp/cpu_fma_peak
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// Twelve accumulators as named locals: an array of them was spilled to the
// stack every iteration by GCC 12, which measured stores, not FMAs.
#define DECLARE(T, SET)                                                        \
  T a0 = SET(1e-3f), a1 = SET(2e-3f), a2 = SET(3e-3f), a3 = SET(4e-3f),        \
    a4 = SET(5e-3f), a5 = SET(6e-3f), a6 = SET(7e-3f), a7 = SET(8e-3f),        \
    a8 = SET(9e-3f), a9 = SET(1e-2f), a10 = SET(2e-2f), a11 = SET(3e-2f);
#define STEP(FMA)                                                              \
  a0 = FMA(a0, m, c); a1 = FMA(a1, m, c); a2 = FMA(a2, m, c);                  \
  a3 = FMA(a3, m, c); a4 = FMA(a4, m, c); a5 = FMA(a5, m, c);                  \
  a6 = FMA(a6, m, c); a7 = FMA(a7, m, c); a8 = FMA(a8, m, c);                  \
  a9 = FMA(a9, m, c); a10 = FMA(a10, m, c); a11 = FMA(a11, m, c);
#define SUM (a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11)

int main(void) {
  const long iters = 300000000;
  {
    DECLARE(__m256, _mm256_set1_ps)
    __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    double t0 = now();
    for (long i = 0; i < iters; ++i) {
      STEP(_mm256_fmadd_ps)
    }
    double t = now() - t0;
    float out[8];
    _mm256_storeu_ps(out, SUM);
    printf("256-bit FMA: %.1f GFLOPS (checksum %g)\n", iters * 12.0 * 16 / t / 1e9,
           out[0]);
  }
#ifdef __AVX512F__
  {
    DECLARE(__m512, _mm512_set1_ps)
    __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    double t0 = now();
    for (long i = 0; i < iters; ++i) {
      STEP(_mm512_fmadd_ps)
    }
    double t = now() - t0;
    printf("512-bit FMA: %.1f GFLOPS (checksum %g)\n", iters * 12.0 * 32 / t / 1e9,
           _mm512_reduce_add_ps(SUM));
  }
#endif
  return 0;
}
