// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-fuse-elementwise))' --verify-each | FileCheck %s

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>

// Elementwise into elementwise: one generic, tanh evaluated once per element.
// CHECK-LABEL: func.func @chain
// CHECK: linalg.generic
// CHECK: math.tanh
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
func.func @chain(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %t = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.tanh %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// A producer feeding the A operand of a contraction is read once per column
// n: fusing it would evaluate tanh N times per element, so it stays apart.
// CHECK-LABEL: func.func @no_recompute
// CHECK: %[[T:.*]] = linalg.generic
// CHECK: math.tanh
// CHECK: linalg.generic {{.*}} ins(%[[T]], %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>)
// CHECK-NOT: math.tanh
func.func @no_recompute(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %t = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.tanh %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%t, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %m : tensor<4x16xf32>
}

// A named matmul behind a reshape stays a named matmul.
// CHECK-LABEL: func.func @named_stays_named
// CHECK: linalg.matmul
func.func @named_stays_named(%a: tensor<2x2x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>) -> tensor<2x2x16xf32> {
  %f = tensor.collapse_shape %a [[0, 1], [2]] : tensor<2x2x8xf32> into tensor<4x8xf32>
  %m = linalg.matmul ins(%f, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = tensor.expand_shape %m [[0, 1], [2]] output_shape [2, 2, 16] : tensor<4x16xf32> into tensor<2x2x16xf32>
  return %r : tensor<2x2x16xf32>
}

// A transpose becomes a generic and fuses with the bias add before it and
// the scale after it: one loop nest writing the transposed result.
// CHECK-LABEL: func.func @transpose_fuses
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<8xf32>) outs(%{{.*}} : tensor<8x4xf32>)
// CHECK: arith.addf
// CHECK: arith.mulf
// CHECK-NOT: linalg.transpose
// CHECK-NOT: linalg.generic
func.func @transpose_fuses(%a: tensor<4x8xf32>, %bias: tensor<8xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %t = linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> (d1)>, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a, %bias : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %b: f32, %o: f32):
    %y = arith.addf %x, %b : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %et = tensor.empty() : tensor<8x4xf32>
  %tr = linalg.transpose ins(%t : tensor<4x8xf32>) outs(%et : tensor<8x4xf32>) permutation = [1, 0]
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%tr : tensor<8x4xf32>) outs(%et : tensor<8x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
