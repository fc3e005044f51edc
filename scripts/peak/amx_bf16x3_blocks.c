// A C model of the loop orders and C block shapes of bf16x3 tile products
// (design 0024, "Where the tiles' time goes"): C[M x N] += A * B with A and
// B already laid out as tiles (A: row tiles [M/16][K/32][2][16][32] bf16, B:
// column tiles [N/16][K/32][2][16][32]), K walked in blocks of KB. Not part
// of mcc; for measuring the hardware.
// gcc -O2 -mamx-tile -mamx-bf16 -mavx512f -mavx512bf16 amx_bf16x3_blocks.c
// ./a.out M K N MODE KB [NW [WA]]   NW: weights to rotate through (NW > 1
// streams them from L3); WA: 1 if the weights are A (a convolution), 0 B.
// MODE 0: 32 x 16 blocks (mcc's), 1: 32 x 32, 2: 16 x 64, 3: 64 x 16,
// 4/5: 0 + next row block prefetched to L1/L2, 6: 0 with A laid out K block
// major, 7/8/9: 0 + A prefetched 1/2/4 steps ahead.
// A: [M/16][K/32][2][16][32] bf16 (rows), B: [N/16][K/32][2][16][32] bf16 (pairs)
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
int M,K,N,KB,NW; 
#define AT(a,mb,s,p) ((a)+((((long)(mb)*(K/32)+(s))*2+(p))*512))
#define BT(b,nb,s,p) ((b)+((((long)(nb)*(K/32)+(s))*2+(p))*512))
static void run(int mode, uint16_t*A, uint16_t*B, float*C){
  for(int k0=0;k0<K;k0+=KB){ int S=KB/32, s0=k0/32;
   if(mode==0){
    for(int m0=0;m0<M;m0+=32) for(int n0=0;n0<N;n0+=16){
      float*c0=C+(long)m0*N+n0,*c1=C+(long)(m0+16)*N+n0;
      _tile_loadd(0,c0,N*4); _tile_loadd(1,c1,N*4);
      for(int s=s0;s<s0+S;s++){
        _tile_loadd(2,AT(A,m0/16,s,0),64); _tile_loadd(3,AT(A,m0/16+1,s,0),64);
        _tile_loadd(4,BT(B,n0/16,s,0),64); _tile_loadd(5,BT(B,n0/16,s,1),64);
        _tile_dpbf16ps(0,2,4); _tile_dpbf16ps(1,3,4); _tile_dpbf16ps(0,2,5); _tile_dpbf16ps(1,3,5);
        _tile_loadd(6,AT(A,m0/16,s,1),64); _tile_loadd(7,AT(A,m0/16+1,s,1),64);
        _tile_dpbf16ps(0,6,4); _tile_dpbf16ps(1,7,4);
      }
      _tile_stored(0,c0,N*4); _tile_stored(1,c1,N*4);
    }
   } else if(mode==4||mode==5){ // mode 0 + prefetch of the next row block's A (this K block)
    int nb=N/16;
    for(int m0=0;m0<M;m0+=32) for(int n0=0;n0<N;n0+=16){
      float*c0=C+(long)m0*N+n0,*c1=C+(long)(m0+16)*N+n0;
      { // next row block: tiles (m0/16+2, m0/16+3) x steps s0..s0+S x 2 parts; lines split over nb iterations
        int mn=m0+32; if(mn>=M){mn=0;} // (wrap: next K block's first rows)
        int sn = (m0+32>=M)? s0+S : s0; if(sn+S>K/32) sn=s0;
        int lines=2*S*2*16, per=lines/nb, first=(n0/16)*per;
        for(int l=first;l<first+per;l++){ int t=l/(S*32), rest=l%(S*32); int s=rest/32, p=(rest/16)%2, r=rest%16;
          const char*ptr=(const char*)AT(A,mn/16+t,sn+s,p)+r*64;
          if(mode==4) _mm_prefetch(ptr,_MM_HINT_T0); else _mm_prefetch(ptr,_MM_HINT_T1); }
      }
      _tile_loadd(0,c0,N*4); _tile_loadd(1,c1,N*4);
      for(int s=s0;s<s0+S;s++){
        _tile_loadd(2,AT(A,m0/16,s,0),64); _tile_loadd(3,AT(A,m0/16+1,s,0),64);
        _tile_loadd(4,BT(B,n0/16,s,0),64); _tile_loadd(5,BT(B,n0/16,s,1),64);
        _tile_dpbf16ps(0,2,4); _tile_dpbf16ps(1,3,4); _tile_dpbf16ps(0,2,5); _tile_dpbf16ps(1,3,5);
        _tile_loadd(6,AT(A,m0/16,s,1),64); _tile_loadd(7,AT(A,m0/16+1,s,1),64);
        _tile_dpbf16ps(0,6,4); _tile_dpbf16ps(1,7,4);
      }
      _tile_stored(0,c0,N*4); _tile_stored(1,c1,N*4);
    }
   } else if(mode==6){ // mode 0 with A laid out K block major: [K/KB][M/16][S][2][16][32]
#define AK(a,mb,s,p) ((a)+(((((long)(k0/KB)*(M/16)+(mb))*S+((s)-s0))*2+(p))*512))
    for(int m0=0;m0<M;m0+=32) for(int n0=0;n0<N;n0+=16){
      float*c0=C+(long)m0*N+n0,*c1=C+(long)(m0+16)*N+n0;
      _tile_loadd(0,c0,N*4); _tile_loadd(1,c1,N*4);
      for(int s=s0;s<s0+S;s++){
        _tile_loadd(2,AK(A,m0/16,s,0),64); _tile_loadd(3,AK(A,m0/16+1,s,0),64);
        _tile_loadd(4,BT(B,n0/16,s,0),64); _tile_loadd(5,BT(B,n0/16,s,1),64);
        _tile_dpbf16ps(0,2,4); _tile_dpbf16ps(1,3,4); _tile_dpbf16ps(0,2,5); _tile_dpbf16ps(1,3,5);
        _tile_loadd(6,AK(A,m0/16,s,1),64); _tile_loadd(7,AK(A,m0/16+1,s,1),64);
        _tile_dpbf16ps(0,6,4); _tile_dpbf16ps(1,7,4);
      }
      _tile_stored(0,c0,N*4); _tile_stored(1,c1,N*4);
    }
   } else if(mode==7||mode==8||mode==9){ // mode 0 + prefetch A (first column block) PD steps ahead
    int PD = mode==7?1:mode==8?2:4;
    for(int m0=0;m0<M;m0+=32) for(int n0=0;n0<N;n0+=16){
      float*c0=C+(long)m0*N+n0,*c1=C+(long)(m0+16)*N+n0;
      _tile_loadd(0,c0,N*4); _tile_loadd(1,c1,N*4);
      for(int s=s0;s<s0+S;s++){
        if(n0==0){ int sp=s+PD; if(sp<K/32) for(int t=0;t<2;t++) for(int p=0;p<2;p++){ const char*q=(const char*)AT(A,m0/16+t,sp,p); for(int l=0;l<16;l++) _mm_prefetch(q+l*64,_MM_HINT_T0);} }
        _tile_loadd(2,AT(A,m0/16,s,0),64); _tile_loadd(3,AT(A,m0/16+1,s,0),64);
        _tile_loadd(4,BT(B,n0/16,s,0),64); _tile_loadd(5,BT(B,n0/16,s,1),64);
        _tile_dpbf16ps(0,2,4); _tile_dpbf16ps(1,3,4); _tile_dpbf16ps(0,2,5); _tile_dpbf16ps(1,3,5);
        _tile_loadd(6,AT(A,m0/16,s,1),64); _tile_loadd(7,AT(A,m0/16+1,s,1),64);
        _tile_dpbf16ps(0,6,4); _tile_dpbf16ps(1,7,4);
      }
      _tile_stored(0,c0,N*4); _tile_stored(1,c1,N*4);
    }
   } else if(mode==1){ // 32x32
    for(int m0=0;m0<M;m0+=32) for(int n0=0;n0<N;n0+=32){
      float*c0=C+(long)m0*N+n0,*c2=C+(long)(m0+16)*N+n0;
      _tile_loadd(0,c0,N*4); _tile_loadd(1,c0+16,N*4); _tile_loadd(2,c2,N*4); _tile_loadd(3,c2+16,N*4);
      for(int s=s0;s<s0+S;s++){
        _tile_loadd(4,AT(A,m0/16,s,0),64); _tile_loadd(5,AT(A,m0/16+1,s,0),64);
        _tile_loadd(6,BT(B,n0/16,s,0),64); _tile_loadd(7,BT(B,n0/16+1,s,0),64);
        _tile_dpbf16ps(0,4,6); _tile_dpbf16ps(1,4,7); _tile_dpbf16ps(2,5,6); _tile_dpbf16ps(3,5,7);
        _tile_loadd(6,BT(B,n0/16,s,1),64); _tile_loadd(7,BT(B,n0/16+1,s,1),64);
        _tile_dpbf16ps(0,4,6); _tile_dpbf16ps(1,4,7); _tile_dpbf16ps(2,5,6); _tile_dpbf16ps(3,5,7);
        _tile_loadd(4,AT(A,m0/16,s,1),64); _tile_loadd(5,AT(A,m0/16+1,s,1),64);
        _tile_loadd(6,BT(B,n0/16,s,0),64); _tile_loadd(7,BT(B,n0/16+1,s,0),64);
        _tile_dpbf16ps(0,4,6); _tile_dpbf16ps(1,4,7); _tile_dpbf16ps(2,5,6); _tile_dpbf16ps(3,5,7);
      }
      _tile_stored(0,c0,N*4); _tile_stored(1,c0+16,N*4); _tile_stored(2,c2,N*4); _tile_stored(3,c2+16,N*4);
    }
   } else if(mode==2){ // 16x64
    for(int m0=0;m0<M;m0+=16) for(int n0=0;n0<N;n0+=64){
      float*c0=C+(long)m0*N+n0;
      _tile_loadd(0,c0,N*4); _tile_loadd(1,c0+16,N*4); _tile_loadd(2,c0+32,N*4); _tile_loadd(3,c0+48,N*4);
      for(int s=s0;s<s0+S;s++){
        _tile_loadd(4,AT(A,m0/16,s,0),64); _tile_loadd(5,AT(A,m0/16,s,1),64);
#define COL(j) _tile_loadd(6,BT(B,n0/16+j,s,0),64); _tile_loadd(7,BT(B,n0/16+j,s,1),64); _tile_dpbf16ps(j,4,6); _tile_dpbf16ps(j,5,6); _tile_dpbf16ps(j,4,7);
        COL(0) COL(1) COL(2) COL(3)
      }
      _tile_stored(0,c0,N*4); _tile_stored(1,c0+16,N*4); _tile_stored(2,c0+32,N*4); _tile_stored(3,c0+48,N*4);
    }
   } else if(mode==3){ // 64x16: B resident, 4 row tiles
    for(int n0=0;n0<N;n0+=16) for(int m0=0;m0<M;m0+=64){
      float*c0=C+(long)m0*N+n0;
      for(int j=0;j<4;j++) ; 
      _tile_loadd(0,c0,N*4); _tile_loadd(1,c0+16L*N,N*4); _tile_loadd(2,c0+32L*N,N*4); _tile_loadd(3,c0+48L*N,N*4);
      for(int s=s0;s<s0+S;s++){
        _tile_loadd(4,BT(B,n0/16,s,0),64); _tile_loadd(5,BT(B,n0/16,s,1),64);
#define ROW(j) _tile_loadd(6,AT(A,m0/16+j,s,0),64); _tile_loadd(7,AT(A,m0/16+j,s,1),64); _tile_dpbf16ps(j,6,4); _tile_dpbf16ps(j,6,5); _tile_dpbf16ps(j,7,4);
        ROW(0) ROW(1) ROW(2) ROW(3)
      }
      _tile_stored(0,c0,N*4); _tile_stored(1,c0+16L*N,N*4); _tile_stored(2,c0+32L*N,N*4); _tile_stored(3,c0+48L*N,N*4);
    }
   }
  }
}
int main(int argc,char**argv){
  M=atoi(argv[1]);K=atoi(argv[2]);N=atoi(argv[3]);int mode=atoi(argv[4]);KB=atoi(argv[5]);NW=argc>6?atoi(argv[6]):1; int wa=argc>7?atoi(argv[7]):1; // wa: weights are A (1) or B (0)
  syscall(SYS_arch_prctl, 0x1023, 18);
  cfg_t cfg; memset(&cfg,0,sizeof cfg); cfg.palette=1; for(int i=0;i<8;i++){cfg.rows[i]=16; cfg.colsb[i]=64;} _tile_loadconfig(&cfg);
  long asz=(long)M*K*2, bsz=(long)K*N*2; // elements (2 parts)
  uint16_t*As=aligned_alloc(4096,asz*2*(wa?NW:1)),*Bs=aligned_alloc(4096,bsz*2*(wa?1:NW)); float*C=aligned_alloc(4096,(long)M*N*4);
  for(long i=0;i<asz*(wa?NW:1);i++)As[i]=0x3f80; for(long i=0;i<bsz*(wa?1:NW);i++)Bs[i]=0x3f80;
  long flops=2L*M*N*K; long reps=2000000000L/flops+1; double best=1e9;
  for(int round=0;round<5;round++){ double t0=now();
   for(long r=0;r<reps;r++){ memset(C,0,(long)M*N*4); int w=r%NW;
     run(mode, wa? As+asz*w: As, wa? Bs: Bs+bsz*w, C); }
   double t=(now()-t0)/reps; if(t<best)best=t; }
  long prods=(long)(M/16)*(N/16)*(K/32)*3;
  printf("%dx%dx%d mode %d KB %d: %.3f ms, %.0f GFLOPS fp32-eq, %.0f%% of tile peak\n",M,K,N,mode,KB,best*1e3,flops/best*1e-9, prods*5.26e-9/best*100);
}
