// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-register-tile-matmul{rows=8 vectors=2 lanes=16 weight-a-vectors=3 fuse-packs=false}))' --verify-each | FileCheck %s

// A weight (an argument past mcc.num_inputs) as A and an activation as B:
// the AVX-512 pipeline's convolution products run 8 rows x 3 vectors (24
// accumulators), one B vector more per broadcast of A.
// CHECK-LABEL: func.func @weight_a
// CHECK: memref.alloca() : memref<{{[0-9]+}}x256x48xf32>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>{{(, vector<16xf32>){23} *}}) {
// CHECK-COUNT-24: vector.fma
func.func @weight_a(%x: memref<256x96xf32>, %w: memref<64x256xf32>, %c: memref<64x96xf32>) attributes {mcc.num_inputs = 1 : i64} {
  linalg.matmul ins(%w, %x : memref<64x256xf32>, memref<256x96xf32>) outs(%c : memref<64x96xf32>)
  return
}

// The same product with A an input keeps 8 x 2.
// CHECK-LABEL: func.func @input_a
// CHECK: memref.alloca() : memref<{{[0-9]+}}x256x32xf32>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>{{(, vector<16xf32>){15} *}}) {
func.func @input_a(%a: memref<64x256xf32>, %x: memref<256x96xf32>, %c: memref<64x96xf32>) attributes {mcc.num_inputs = 2 : i64} {
  linalg.matmul ins(%a, %x : memref<64x256xf32>, memref<256x96xf32>) outs(%c : memref<64x96xf32>)
  return
}

// A short K (mobilenetv3's K = 40 products ran slower wide) keeps 8 x 2.
// CHECK-LABEL: func.func @short_k
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>{{(, vector<16xf32>){15} *}}) {
func.func @short_k(%x: memref<64x96xf32>, %w: memref<64x64xf32>, %c: memref<64x96xf32>) attributes {mcc.num_inputs = 1 : i64} {
  linalg.matmul ins(%w, %x : memref<64x64xf32>, memref<64x96xf32>) outs(%c : memref<64x96xf32>)
  return
}
