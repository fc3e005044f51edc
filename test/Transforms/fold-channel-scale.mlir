// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-fold-channel-scale),canonicalize)' --verify-each | FileCheck %s

#id4 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#nc = affine_map<(n, c, h, w) -> (n, c, 0, 0)>

// Squeeze-excite's scale (a hard sigmoid of a per-channel gate) before a
// 1x1 convolution: the product reads the activation as it is and its
// weights are scaled per column, W[m, c] * hardsigmoid(g[c]).
// CHECK-LABEL: func.func @squeeze_excite
// CHECK-SAME: (%[[X:[^:]*]]: tensor<1x8x6x6xf32>, %[[G:[^:]*]]: tensor<1x8x1x1xf32>, %[[W:[^:]*]]: tensor<4x8xf32>)
// CHECK: %[[XC:.*]] = tensor.collapse_shape %[[X]]
// CHECK: %[[WS:.*]] = linalg.generic {{.*}} ins(%[[W]], %[[G]] : tensor<4x8xf32>, tensor<1x8x1x1xf32>)
// CHECK: arith.minimumf
// CHECK: arith.mulf
// CHECK: linalg.matmul ins(%[[WS]], %[[XC]] : tensor<4x8xf32>, tensor<8x36xf32>)
func.func @squeeze_excite(%x: tensor<1x8x6x6xf32>, %g: tensor<1x8x1x1xf32>, %w: tensor<4x8xf32>) -> tensor<4x36xf32> {
  %z = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<1x8x6x6xf32>
  %s = linalg.generic {indexing_maps = [#id4, #nc, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %g : tensor<1x8x6x6xf32>, tensor<1x8x1x1xf32>) outs(%e : tensor<1x8x6x6xf32>) {
  ^bb0(%v: f32, %gv: f32, %out: f32):
    %0 = arith.maximumf %gv, %z : f32
    %1 = arith.minimumf %0, %one : f32
    %2 = arith.mulf %v, %1 : f32
    linalg.yield %2 : f32
  } -> tensor<1x8x6x6xf32>
  %c = tensor.collapse_shape %s [[0, 1], [2, 3]] : tensor<1x8x6x6xf32> into tensor<8x36xf32>
  %pe = tensor.empty() : tensor<4x36xf32>
  %pf = linalg.fill ins(%z : f32) outs(%pe : tensor<4x36xf32>) -> tensor<4x36xf32>
  %p = linalg.matmul ins(%w, %c : tensor<4x8xf32>, tensor<8x36xf32>) outs(%pf : tensor<4x36xf32>) -> tensor<4x36xf32>
  return %p : tensor<4x36xf32>
}

// Left alone: more output channels than pixels (scaling the weights would
// cost more than the pass over the activation), and a factor that varies
// along the image.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-2: arith.mulf {{.*}} : f32
// CHECK-NOT: tensor<64x8xf32>, tensor<1x8x1x1xf32>
func.func @left_alone(%x: tensor<1x8x6x6xf32>, %g: tensor<1x8x1x1xf32>, %w: tensor<64x8xf32>, %y: tensor<1x8x6x6xf32>) -> (tensor<64x36xf32>, tensor<64x36xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x6x6xf32>
  %s = linalg.generic {indexing_maps = [#id4, #nc, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %g : tensor<1x8x6x6xf32>, tensor<1x8x1x1xf32>) outs(%e : tensor<1x8x6x6xf32>) {
  ^bb0(%v: f32, %gv: f32, %out: f32):
    %0 = arith.mulf %v, %gv : f32
    linalg.yield %0 : f32
  } -> tensor<1x8x6x6xf32>
  %c = tensor.collapse_shape %s [[0, 1], [2, 3]] : tensor<1x8x6x6xf32> into tensor<8x36xf32>
  %pe = tensor.empty() : tensor<64x36xf32>
  %pf = linalg.fill ins(%z : f32) outs(%pe : tensor<64x36xf32>) -> tensor<64x36xf32>
  %p = linalg.matmul ins(%w, %c : tensor<64x8xf32>, tensor<8x36xf32>) outs(%pf : tensor<64x36xf32>) -> tensor<64x36xf32>
  %t = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %y : tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) outs(%e : tensor<1x8x6x6xf32>) {
  ^bb0(%v: f32, %yv: f32, %out: f32):
    %0 = arith.mulf %v, %yv : f32
    linalg.yield %0 : f32
  } -> tensor<1x8x6x6xf32>
  %tc = tensor.collapse_shape %t [[0, 1], [2, 3]] : tensor<1x8x6x6xf32> into tensor<8x36xf32>
  %q = linalg.matmul ins(%w, %tc : tensor<64x8xf32>, tensor<8x36xf32>) outs(%pf : tensor<64x36xf32>) -> tensor<64x36xf32>
  return %p, %q : tensor<64x36xf32>, tensor<64x36xf32>
}
