// A C model of bf16xT products on AMX tiles (design 0024): C = A * B in
// fp32, each operand split into bf16 parts; prints GFLOPS (fp32-equivalent)
// and the error against a float64 product. Not part of mcc; for measuring
// the hardware. gcc -O2 -march=sapphirerapids amx_bf16x3_gemm.c -lm
// ./a.out M K N TERMS [pack]   (TERMS 1, 3 or 6; M, N multiples of 32,
// K of 32; "pack" splits and packs A on every run, as an activation is).
// bf16xT GEMM on AMX: C[M][N] = A[M][K] * B[K][N], fp32 in/out, split into bf16 parts.
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
typedef struct { uint8_t palette, start; uint8_t res[14]; uint16_t colsb[16]; uint8_t rows[16]; } __attribute__((packed)) cfg_t;
static double now(){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+1e-9*t.tv_nsec;}
static uint16_t bf(float x){ uint32_t u; memcpy(&u,&x,4); uint32_t r=((u>>16)&1)+0x7fff; return (uint16_t)((u+r)>>16);} // RNE
static float fb(uint16_t h){ uint32_t u=(uint32_t)h<<16; float x; memcpy(&x,&u,4); return x;}
static void split(float x, uint16_t*p, int parts){ for(int i=0;i<parts;i++){ p[i]=bf(x); x-=fb(p[i]); } }
int main(int argc,char**argv){
  int M=atoi(argv[1]),K=atoi(argv[2]),N=atoi(argv[3]),terms=atoi(argv[4]);
  int parts = terms==1?1: terms==3?2: 3;
  static const int TA[6]={0,0,1,1,0,2}, TB[6]={0,1,0,1,2,0}; // hh hm mh mm hl lh
  syscall(SYS_arch_prctl, 0x1023, 18);
  cfg_t cfg; memset(&cfg,0,sizeof cfg); cfg.palette=1; for(int i=0;i<8;i++){cfg.rows[i]=16; cfg.colsb[i]=64;} _tile_loadconfig(&cfg);
  float*A=malloc((long)M*K*4),*B=malloc((long)K*N*4),*C=aligned_alloc(64,(long)M*N*4); double*R=malloc((long)M*N*8);
  srand(1); for(long i=0;i<(long)M*K;i++)A[i]=(rand()/(float)RAND_MAX-0.5f); for(long i=0;i<(long)K*N;i++)B[i]=(rand()/(float)RAND_MAX-0.5f)*0.1f;
  // A packed: [part][M/16 rowtile][K/32 kstep][16 rows][32 k] bf16 ; B packed VNNI: [part][N/16][K/32][16 krow pairs][16 cols][2]
  long asz=(long)M*K, bsz=(long)K*N;
  uint16_t*AP=aligned_alloc(64,asz*2*parts), *BP=aligned_alloc(64,bsz*2*parts);
  for(int m=0;m<M;m++)for(int k=0;k<K;k++){ uint16_t p[3]; split(A[(long)m*K+k],p,parts); for(int q=0;q<parts;q++)
     AP[q*asz + ((long)(m/16)*(K/32)+k/32)*512 + (m%16)*32 + k%32]=p[q]; }
  for(int k=0;k<K;k++)for(int n=0;n<N;n++){ uint16_t p[3]; split(B[(long)k*N+n],p,parts); for(int q=0;q<parts;q++)
     BP[q*bsz + ((long)(n/16)*(K/32)+k/32)*512 + ((k%32)/2)*32 + (n%16)*2 + k%2]=p[q]; }
  long flops=2L*M*N*K; long reps=2000000000L/flops+1; double best=1e9;
  for(int round=0;round<5;round++){ double t0=now();
   for(long r=0;r<reps;r++){
    if(argc>5) { // split and pack A each run (an activation), vectorized: hi = RNE bf16, lo = bf16(a - hi)
      for(int m=0;m<M;m++) for(int k=0;k<K;k+=16){
        __m512 x=_mm512_loadu_ps(A+(long)m*K+k);
        __m256bh h=_mm512_cvtneps_pbh(x);
        __m512 hf=_mm512_cvtpbh_ps(h);
        __m256bh l=_mm512_cvtneps_pbh(_mm512_sub_ps(x,hf));
        long at=((long)(m/16)*(K/32)+k/32)*512 + (m%16)*32 + k%32;
        _mm256_storeu_si256((__m256i*)(AP+at),(__m256i)h);
        if(parts>1) _mm256_storeu_si256((__m256i*)(AP+asz+at),(__m256i)l);
      }
    }
    for(int n=0;n<N;n+=32) for(int m=0;m<M;m+=32){
      _tile_zero(0);_tile_zero(1);_tile_zero(2);_tile_zero(3);
      for(int k=0;k<K/32;k++) for(int t=0;t<terms;t++){
        const uint16_t*a0=AP+TA[t]*asz+((long)(m/16)*(K/32)+k)*512, *a1=a0+(long)(K/32)*512;
        const uint16_t*b0=BP+TB[t]*bsz+((long)(n/16)*(K/32)+k)*512, *b1=b0+(long)(K/32)*512;
        _tile_loadd(4,a0,64); _tile_loadd(5,a1,64); _tile_loadd(6,b0,64); _tile_loadd(7,b1,64);
        _tile_dpbf16ps(0,4,6); _tile_dpbf16ps(1,4,7); _tile_dpbf16ps(2,5,6); _tile_dpbf16ps(3,5,7);
      }
      _tile_stored(0,C+(long)m*N+n,N*4); _tile_stored(1,C+(long)m*N+n+16,N*4); _tile_stored(2,C+(long)(m+16)*N+n,N*4); _tile_stored(3,C+(long)(m+16)*N+n+16,N*4);
    }}
   double s=now()-t0; if(s<best)best=s; }
  // accuracy vs double, and fp32 naive for reference
  double maxe=0,maxr=0,maxe32=0; for(int m=0;m<M;m+=7)for(int n=0;n<N;n+=5){ double d=0; float f=0; for(int k=0;k<K;k++){d+=(double)A[(long)m*K+k]*B[(long)k*N+n]; f+=A[(long)m*K+k]*B[(long)k*N+n];}
     double e=fabs(C[(long)m*N+n]-d); if(e>maxe)maxe=e; if(fabs(d)>maxr)maxr=fabs(d); if(fabs(f-d)>maxe32)maxe32=fabs(f-d);}
  printf("M=%d K=%d N=%d terms=%d: %.1f GFLOPS (fp32-equivalent) %.3f ms; rel.err %.2e (fp32 serial sum %.2e)\n",M,K,N,terms,flops*reps/best/1e9,best/reps*1e3,maxe/maxr,maxe32/maxr);
  _tile_release(); return 0; }
