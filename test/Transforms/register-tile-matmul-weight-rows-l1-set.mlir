// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-register-tile-matmul{weight-rows=12}))' --verify-each | FileCheck %s

// weight-rows=12 gives products that read a pre-packed weight 12-row blocks
// (24 accumulators), except where A's rows are a multiple of 4 KiB apart
// (K = 1024 floats here, 3072 in bert-base's FFN down): 12 such rows fall in
// one set of the 8-way L1 and evict each other, so those keep 8-row blocks
// (16 accumulators). K = 768 (3 KiB rows) still takes 12.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: mcc.packed_weights = array<i64: 0, 32, 1, 32>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>{{(, vector<16xf32>){23} *}}) {
// CHECK-COUNT-24: vector.fma
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>{{(, vector<16xf32>){15} *}}) {
// CHECK-COUNT-16: vector.fma
// CHECK-NOT: vector<16xf32>{{(, vector<16xf32>){23} *}}) {
func.func @forward(%x768: memref<24x768xf32>, %x1024: memref<24x1024xf32>,
                   %w768: memref<768x32xf32>, %w1024: memref<1024x32xf32>,
                   %y768: memref<24x32xf32>, %y1024: memref<24x32xf32>)
    attributes {mcc.num_inputs = 2 : i64} {
  linalg.matmul ins(%x768, %w768 : memref<24x768xf32>, memref<768x32xf32>)
                outs(%y768 : memref<24x32xf32>)
  linalg.matmul ins(%x1024, %w1024 : memref<24x1024xf32>, memref<1024x32xf32>)
                outs(%y1024 : memref<24x32xf32>)
  return
}
