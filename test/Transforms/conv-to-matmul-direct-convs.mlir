// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-conv-to-matmul{direct-convs}))' --verify-each | FileCheck %s

// With direct-convs (the CPU pipeline), a grouped 3x3 convolution with
// output rows of at least 12 stays a convolution for
// mcc-vectorize-grouped-conv: no im2col, no batch_matmul.
// CHECK-LABEL: func.func @wide_rows
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.conv_2d_ngchw_gfchw
// CHECK-NOT: linalg.batch_matmul
func.func @wide_rows(%x: tensor<1x2x4x16x16xf32>, %w: tensor<2x4x4x3x3xf32>) -> tensor<1x2x4x14x14xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x14x14xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x2x4x14x14xf32>) -> tensor<1x2x4x14x14xf32>
  %r = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x2x4x16x16xf32>, tensor<2x4x4x3x3xf32>) outs(%f : tensor<1x2x4x14x14xf32>) -> tensor<1x2x4x14x14xf32>
  return %r : tensor<1x2x4x14x14xf32>
}

// Rows narrower than 12 (a 7x7 stage) and 1x1 windows still become
// products.
// CHECK-LABEL: func.func @narrow_rows
// CHECK: linalg.batch_matmul
// CHECK-NOT: linalg.conv_2d_ngchw_gfchw
func.func @narrow_rows(%x: tensor<1x2x4x9x9xf32>, %w: tensor<2x4x4x3x3xf32>) -> tensor<1x2x4x7x7xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x7x7xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x2x4x7x7xf32>) -> tensor<1x2x4x7x7xf32>
  %r = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x2x4x9x9xf32>, tensor<2x4x4x3x3xf32>) outs(%f : tensor<1x2x4x7x7xf32>) -> tensor<1x2x4x7x7xf32>
  return %r : tensor<1x2x4x7x7xf32>
}

// CHECK-LABEL: func.func @pointwise
// CHECK: linalg.batch_matmul
// CHECK-NOT: linalg.conv_2d_ngchw_gfchw
func.func @pointwise(%x: tensor<1x2x4x16x16xf32>, %w: tensor<2x4x4x1x1xf32>) -> tensor<1x2x4x16x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x16x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x2x4x16x16xf32>) -> tensor<1x2x4x16x16xf32>
  %r = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x2x4x16x16xf32>, tensor<2x4x4x1x1xf32>) outs(%f : tensor<1x2x4x16x16xf32>) -> tensor<1x2x4x16x16xf32>
  return %r : tensor<1x2x4x16x16xf32>
}

// An ungrouped convolution of few input channels (a stem's 3, up to 64)
// runs in place too, as one group: the input, weights and accumulator get
// a unit group dim and the result drops it again.
// CHECK-LABEL: func.func @stem
// CHECK-DAG: tensor.expand_shape %arg0 {{\[\[}}0, 1], [2], [3], [4]] output_shape [1, 1, 3, 38, 38] : tensor<1x3x38x38xf32> into tensor<1x1x3x38x38xf32>
// CHECK-DAG: tensor.expand_shape %arg1 {{\[\[}}0, 1], [2], [3], [4]] output_shape [1, 8, 3, 7, 7] : tensor<8x3x7x7xf32> into tensor<1x8x3x7x7xf32>
// CHECK: %[[G:.*]] = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} {{.*}} -> tensor<1x1x8x16x16xf32>
// CHECK: tensor.collapse_shape %[[G]] {{\[\[}}0, 1], [2], [3], [4]] : tensor<1x1x8x16x16xf32> into tensor<1x8x16x16xf32>
// CHECK-NOT: linalg.matmul
func.func @stem(%x: tensor<1x3x38x38xf32>, %w: tensor<8x3x7x7xf32>) -> tensor<1x8x16x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x16x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<1x3x38x38xf32>, tensor<8x3x7x7xf32>) outs(%f : tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  return %r : tensor<1x8x16x16xf32>
}

// 128 input channels: im2col and a product, whose packed panels win there.
// CHECK-LABEL: func.func @many_channels
// CHECK: linalg.matmul
// CHECK-NOT: linalg.conv_2d_ngchw_gfchw
func.func @many_channels(%x: tensor<1x128x16x16xf32>, %w: tensor<8x128x3x3xf32>) -> tensor<1x8x14x14xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x14x14xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x8x14x14xf32>) -> tensor<1x8x14x14xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x128x16x16xf32>, tensor<8x128x3x3xf32>) outs(%f : tensor<1x8x14x14xf32>) -> tensor<1x8x14x14xf32>
  return %r : tensor<1x8x14x14xf32>
}
