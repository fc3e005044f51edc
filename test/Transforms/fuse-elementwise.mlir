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

// A cheap op over a much smaller space (a row sum divided by the row
// length) is recomputed inside each consumer that reads it broadcast: no
// loop nest of its own, even with two consumers.
// CHECK-LABEL: func.func @cheap_broadcast
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%arg0, %[[SUM]] :
// CHECK: arith.divf
// CHECK: arith.subf
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}} ins(%arg0, %[[SUM]] :
// CHECK: arith.divf
// CHECK: arith.subf
// CHECK-NOT: linalg.generic
func.func @cheap_broadcast(%x: tensor<4x768xf32>) -> (tensor<4xf32>, tensor<4x768xf32>) {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 768.0 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x768xf32>) outs(%z4 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %mean = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%sum : tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.divf %a, %n : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %var = linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %mean : tensor<4x768xf32>, tensor<4xf32>) outs(%z4 : tensor<4xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %s = arith.mulf %d, %d : f32
    %r = arith.addf %o, %s : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x768xf32>
  %y = linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> (d0)>, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mean : tensor<4x768xf32>, tensor<4xf32>) outs(%e : tensor<4x768xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    linalg.yield %d : f32
  } -> tensor<4x768xf32>
  return %var, %y : tensor<4xf32>, tensor<4x768xf32>
}

// A cheap elementwise producer read element for element by several
// consumers (a residual add feeding a row sum and a normalization) is
// recomputed in each: it disappears as a loop nest of its own.
// CHECK-LABEL: func.func @cheap_multi_use
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%arg0, %arg1 :
// CHECK: arith.addf
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}} ins(%arg0, %arg1, %{{.*}} :
// CHECK: arith.addf
// CHECK: arith.subf
// CHECK-NOT: linalg.generic
func.func @cheap_multi_use(%x: tensor<4x768xf32>, %res: tensor<4x768xf32>) -> tensor<4x768xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x768xf32>
  %sum = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %res : tensor<4x768xf32>, tensor<4x768xf32>) outs(%e : tensor<4x768xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x768xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %rows = linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%sum : tensor<4x768xf32>) outs(%z4 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %y = linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> (d0)>, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%sum, %rows : tensor<4x768xf32>, tensor<4xf32>) outs(%e : tensor<4x768xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    linalg.yield %d : f32
  } -> tensor<4x768xf32>
  return %y : tensor<4x768xf32>
}
