// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-register-tile-matmul{rows=12 vectors=2 lanes=16 fuse-packs=false}))' --verify-each | FileCheck %s

// The AVX-512 pipeline's block: 12 rows x 2 vectors of 16 lanes, 24
// accumulators of the 32 zmm registers.
// CHECK-LABEL: func.func @twelve_rows
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>{{(, vector<16xf32>){23} *}}) {
// CHECK-COUNT-24: vector.fma
// CHECK-NOT: linalg.matmul
func.func @twelve_rows(%a: memref<24x64xf32>, %b: memref<64x32xf32>, %c: memref<24x32xf32>) {
  linalg.matmul ins(%a, %b : memref<24x64xf32>, memref<64x32xf32>) outs(%c : memref<24x32xf32>)
  return
}

// N = 49 = 3 vectors + 1 column: the three-vector block keeps 8 rows (24
// accumulators); 12 rows x 3 vectors would need 36 registers and spill.
// CHECK-LABEL: func.func @three_vectors_eight_rows
// CHECK: memref.alloca() : memref<2x256x48xf32>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>{{(, vector<16xf32>){23} *}}) {
// CHECK: vector.reduction <add>, {{.*}} fastmath<reassoc>
func.func @three_vectors_eight_rows(%a: memref<32x64xf32>, %b: memref<64x49xf32>, %c: memref<32x49xf32>) {
  linalg.matmul ins(%a, %b : memref<32x64xf32>, memref<64x49xf32>) outs(%c : memref<32x49xf32>)
  return
}
