// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-tile-for-cpu))' --verify-each | FileCheck %s

// A matrix-vector product (a classifier at batch 1) has fewer outputs than
// the default 4096-element cut but 1M multiply-adds: it is tiled anyway,
// over columns. A product of little work (8K, 32 KB of weights) stays whole.
// CHECK-LABEL: func.func @matvec
// CHECK: scf.forall ({{.*}}) = (0) to (1024) step (128)
// CHECK:   linalg.matmul {{.*}} -> tensor<1x128xf32>
// CHECK-NOT: scf.forall (
// CHECK: linalg.matmul {{.*}} -> tensor<1x1024xf32>
func.func @matvec(%a: tensor<1x1024xf32>, %b: tensor<1024x1024xf32>,
                  %x: tensor<1x8xf32>, %y: tensor<8x1024xf32>) -> (tensor<1x1024xf32>, tensor<1x1024xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x1024xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %m = linalg.matmul ins(%a, %b : tensor<1x1024xf32>, tensor<1024x1024xf32>) outs(%f : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %n = linalg.matmul ins(%x, %y : tensor<1x8xf32>, tensor<8x1024xf32>) outs(%f : tensor<1x1024xf32>) -> tensor<1x1024xf32>
  return %m, %n : tensor<1x1024xf32>, tensor<1x1024xf32>
}

// A squeeze-excite product (960 x 240 weights times a column, 230K
// multiply-adds) is below the cut for register-blocked products but streams
// 0.9 MB of weights: as a matrix-vector product it is tiled over rows.
// CHECK-LABEL: func.func @squeeze_excite
// CHECK: scf.forall ({{.*}}) = (0) to (960) step (64)
// CHECK:   linalg.matmul {{.*}} -> tensor<64x1xf32>
func.func @squeeze_excite(%w: tensor<960x240xf32>, %x: tensor<240x1xf32>) -> tensor<960x1xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<960x1xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<960x1xf32>) -> tensor<960x1xf32>
  %m = linalg.matmul ins(%w, %x : tensor<960x240xf32>, tensor<240x1xf32>) outs(%f : tensor<960x1xf32>) -> tensor<960x1xf32>
  return %m : tensor<960x1xf32>
}
