// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-tile-for-cpu{target-tiles=8 min-tile-elements=16}))' --verify-each | FileCheck %s

// A matmul's rows are split into 8 parallel tiles; the accumulator's fill
// moves into the tile, the reduction (k) stays whole.
// CHECK-LABEL: func.func @matmul
// CHECK: scf.forall (%[[I:.*]]) = (0) to (64) step (8)
// CHECK:   linalg.fill {{.*}} -> tensor<8x48xf32>
// CHECK:   linalg.matmul {{.*}} tensor<8x32xf32>, tensor<32x48xf32>
// CHECK:   scf.forall.in_parallel
func.func @matmul(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>) -> tensor<64x48xf32> {
  %e = tensor.empty() : tensor<64x48xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x48xf32>) -> tensor<64x48xf32>
  %m = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x48xf32>) outs(%f : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %m : tensor<64x48xf32>
}

// A small leading dim (2) is not enough: the next parallel dim is tiled too.
// CHECK-LABEL: func.func @elementwise
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (2, 40) step (1, 10)
// CHECK:   linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @elementwise(%a: tensor<2x40xf32>) -> tensor<2x40xf32> {
  %e = tensor.empty() : tensor<2x40xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<2x40xf32>) outs(%e : tensor<2x40xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<2x40xf32>
  return %r : tensor<2x40xf32>
}

// Ops below min-tile-elements stay whole.
// CHECK-LABEL: func.func @tiny
// CHECK-NOT: scf.forall
func.func @tiny(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %e = tensor.empty() : tensor<2x2xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<2x2xf32>) outs(%e : tensor<2x2xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}
