// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-tile-for-cpu))' --verify-each | FileCheck %s

// A matrix-vector product (a classifier at batch 1) has fewer outputs than
// the default 4096-element cut but 1M multiply-adds: it is tiled anyway,
// over columns. A product of little work (16K) stays whole.
// CHECK-LABEL: func.func @matvec
// CHECK: scf.forall ({{.*}}) = (0) to (1024) step (128)
// CHECK:   linalg.matmul {{.*}} -> tensor<1x128xf32>
// CHECK-NOT: scf.forall (
// CHECK: linalg.matmul {{.*}} -> tensor<1x1024xf32>
func.func @matvec(%a: tensor<1x1024xf32>, %b: tensor<1024x1024xf32>,
                  %x: tensor<1x16xf32>, %y: tensor<16x1024xf32>) -> (tensor<1x1024xf32>, tensor<1x1024xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x1024xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %m = linalg.matmul ins(%a, %b : tensor<1x1024xf32>, tensor<1024x1024xf32>) outs(%f : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %n = linalg.matmul ins(%x, %y : tensor<1x16xf32>, tensor<16x1024xf32>) outs(%f : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  return %m, %n : tensor<1x1024xf32>, tensor<1x1024xf32>
}
