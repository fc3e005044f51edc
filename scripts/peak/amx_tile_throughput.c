// How fast tdpbf16ps runs on this machine (design 0024): one dependent
// chain of accumulations against 2 and 4 independent ones, and the step
// patterns of 32 x 16, 32 x 32 and 16 x 64 bf16x3 blocks with their tile
// loads from L1. Prints ns per tile product. Not part of mcc.
// gcc -O2 -mamx-tile -mamx-bf16 amx_tile_throughput.c && ./a.out
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>
typedef struct { uint8_t palette, start; uint8_t res[14]; uint16_t colsb[16]; uint8_t rows[16]; } __attribute__((packed)) cfg_t;
static double now(){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+1e-9*t.tv_nsec;}
static uint16_t buf[64*1024] __attribute__((aligned(64)));
static float cb[8*256] __attribute__((aligned(64)));
int main(){
  syscall(SYS_arch_prctl, 0x1023, 18);
  cfg_t cfg; memset(&cfg,0,sizeof cfg); cfg.palette=1; for(int i=0;i<8;i++){cfg.rows[i]=16; cfg.colsb[i]=64;} _tile_loadconfig(&cfg);
  long N=2000000; double t;
  _tile_zero(0);_tile_zero(1);_tile_zero(2);_tile_zero(3);_tile_loadd(4,buf,64);_tile_loadd(5,buf+512,64);_tile_loadd(6,buf+1024,64);_tile_loadd(7,buf+1536,64);
  // 1 chain
  t=now(); for(long i=0;i<N;i++){ _tile_dpbf16ps(0,4,5); } t=now()-t; printf("1 chain: %.1f ns/op\n", t/N*1e9);
  t=now(); for(long i=0;i<N;i++){ _tile_dpbf16ps(0,4,5); _tile_dpbf16ps(1,4,6);} t=now()-t; printf("2 chains: %.2f ns/op\n", t/N/2*1e9);
  t=now(); for(long i=0;i<N;i++){ _tile_dpbf16ps(0,4,5); _tile_dpbf16ps(1,4,6); _tile_dpbf16ps(2,7,5); _tile_dpbf16ps(3,7,6);} t=now()-t; printf("4 chains: %.2f ns/op\n", t/N/4*1e9);
  // mcc 32x16 step pattern with loads from L1: 6 loads, 6 muls, 2 acc
  t=now(); for(long i=0;i<N;i++){ int o=(i&7)*2048;
    _tile_loadd(2,buf+o,64); _tile_loadd(3,buf+o+512,64); _tile_loadd(4,buf+o+1024,64); _tile_loadd(5,buf+o+1536,64);
    _tile_dpbf16ps(0,2,4); _tile_dpbf16ps(1,3,4); _tile_dpbf16ps(0,2,5); _tile_dpbf16ps(1,3,5);
    _tile_loadd(6,buf+o+256,64); _tile_loadd(7,buf+o+768,64);
    _tile_dpbf16ps(0,6,4); _tile_dpbf16ps(1,7,4);} t=now()-t; printf("32x16 step (6 ld, 6 mul): %.2f ns/mul\n", t/N/6*1e9);
  // 32x32: 4 acc (0..3), A tiles 4,5, B tiles 6,7: hi*hi, hi*Blo, Alo*Bhi = 10 loads, 12 muls
  t=now(); for(long i=0;i<N;i++){ int o=(i&7)*2048;
    _tile_loadd(4,buf+o,64); _tile_loadd(5,buf+o+512,64); _tile_loadd(6,buf+o+1024,64); _tile_loadd(7,buf+o+1536,64);
    _tile_dpbf16ps(0,4,6); _tile_dpbf16ps(1,4,7); _tile_dpbf16ps(2,5,6); _tile_dpbf16ps(3,5,7);
    _tile_loadd(6,buf+o+256,64); _tile_loadd(7,buf+o+768,64);
    _tile_dpbf16ps(0,4,6); _tile_dpbf16ps(1,4,7); _tile_dpbf16ps(2,5,6); _tile_dpbf16ps(3,5,7);
    _tile_loadd(4,buf+o+1280,64); _tile_loadd(5,buf+o+1792,64); _tile_loadd(6,buf+o+1024,64); _tile_loadd(7,buf+o+1536,64);
    _tile_dpbf16ps(0,4,6); _tile_dpbf16ps(1,4,7); _tile_dpbf16ps(2,5,6); _tile_dpbf16ps(3,5,7);
  } t=now()-t; printf("32x32 step (10 ld, 12 mul): %.2f ns/mul\n", t/N/12*1e9);
  // 16x64: 4 acc in 1 row: A hi,lo (4,5), B through 6,7: per col j: load Bhi->6, mul(j,4,6), mul(j,5,6), load Blo->7, mul(j,4,7)
  t=now(); for(long i=0;i<N;i++){ int o=(i&7)*2048;
    _tile_loadd(4,buf+o,64); _tile_loadd(5,buf+o+512,64);
    _tile_loadd(6,buf+o+1024,64); _tile_loadd(7,buf+o+1536,64); _tile_dpbf16ps(0,4,6); _tile_dpbf16ps(0,5,6); _tile_dpbf16ps(0,4,7);
    _tile_loadd(6,buf+o+256,64); _tile_loadd(7,buf+o+768,64); _tile_dpbf16ps(1,4,6); _tile_dpbf16ps(1,5,6); _tile_dpbf16ps(1,4,7);
    _tile_loadd(6,buf+o+1280,64); _tile_loadd(7,buf+o+1792,64); _tile_dpbf16ps(2,4,6); _tile_dpbf16ps(2,5,6); _tile_dpbf16ps(2,4,7);
    _tile_loadd(6,buf+o+384,64); _tile_loadd(7,buf+o+896,64); _tile_dpbf16ps(3,4,6); _tile_dpbf16ps(3,5,6); _tile_dpbf16ps(3,4,7);
  } t=now()-t; printf("16x64 step (10 ld, 12 mul): %.2f ns/mul\n", t/N/12*1e9);
  _tile_stored(0,cb,64); printf("%f\n", cb[0]);
}
